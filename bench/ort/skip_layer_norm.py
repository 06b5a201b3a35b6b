#!/usr/bin/python3
"""Times onnxruntime's SkipLayerNormalization against the two kernels it replaces:

    NODE_PATH=/work/ort/node_modules /usr/bin/python3 bench/ort/skip_layer_norm.py OUTDIR [--runs N]

For each shape, a chain of 16 residual blocks y = LayerNormalization(y + r) (opset 17) is written
twice: with the residual as Add, which onnxruntime's SkipLayerNormFusion turns into one
SkipLayerNormalization, and as a two-input Sum, which it leaves as Sum + LayerNormalization
(what tensat-opt's `--skip-layer-norm split` writes). time_model.js times the pair at
ORT_ENABLE_ALL (one thread); a speedup above 1 means the fused kernel is the slower one. Prints
a markdown table. Deterministic models (fixed seed).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPES = [[1, 32, 128], [1, 65, 128], [1, 128, 768], [1, 197, 384]]


def chain(path, shape, residual, n=16):
    rng = np.random.default_rng(3)
    hidden = shape[-1]
    nodes, inits, y = [], [], "x"
    for k in range(n):
        for name in (f"gamma{k}", f"beta{k}"):
            inits.append(numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), name))
        nodes.append(helper.make_node(residual, [y, "r"], [f"s{k}"]))
        nodes.append(helper.make_node("LayerNormalization", [f"s{k}", f"gamma{k}", f"beta{k}"], [f"y{k}"],
                                      axis=-1, epsilon=1e-5))
        y = f"y{k}"
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    inputs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape) for v in ("x", "r")]
    g = helper.make_graph(nodes, os.path.basename(path), inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=41)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    print("| shape | Add + LayerNormalization (fused) us | Sum + LayerNormalization us | speedup of Sum | verdict |")
    print("|---|---|---|---|---|")
    for shape in SHAPES:
        tag = "x".join(map(str, shape))
        fused, split = (os.path.join(args.out, f"{kind}_{tag}.onnx") for kind in ("add", "sum"))
        chain(fused, shape, "Add")
        chain(split, shape, "Sum")
        run = subprocess.run(["node", os.path.join(here, "time_model.js"), fused, split, "--runs", str(args.runs),
                              "--levels", "all"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr)
            sys.exit(run.returncode)
        level = json.loads(run.stdout)["levels"][0]
        a, b = level["median_us"]
        print(f"| {shape} | {a:.0f} | {b:.0f} | {level['speedup']:.2f} | {level['verdict']} |")


if __name__ == "__main__":
    main()
