#!/usr/bin/python3
"""Writes the micro-graphs that bench/ort/measure.js times to calibrate an onnxruntime profile:

    /usr/bin/python3 bench/ort/make_micro.py OUTDIR

For every kernel of calibrate_device.h's DeviceMeasurements (a small Add (onnxruntime drops chained Relus), a large Add, a
depthwise and a grouped 3x3 convolution, products at several sizes, 3x3 convolutions at several
sizes) two models: a chain of N and of 2N equal kernels (OUTDIR/<key>.n.onnx, <key>.2n.onnx);
measure.js takes (t(2N) - t(N)) / N as one kernel's time, so that the run's fixed costs
cancel. OUTDIR/manifest.json lists each kernel: its key, role, description, flops as tensat's
cost model counts them (2 per multiply-add), N and its input shape. Deterministic (fixed seed).
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def chain(path, x_shape, links, n):
    """A model applying `links(k, x) -> (nodes, inits, y)` n times to input x."""
    nodes, inits, y = [], [], "x"
    for k in range(n):
        more, more_inits, y = links(k, y)
        nodes += more
        inits += more_inits
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    g = helper.make_graph(nodes, os.path.basename(path), [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(onnx.shape_inference.infer_shapes(m, strict_mode=True))
    onnx.save(m, path)


def weight(name, shape):
    return numpy_helper.from_array((RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)


def add(k, x):
    return [helper.make_node("Add", [x, "x"], [f"a{k}"])], [], f"a{k}"


def matmul(size):
    def link(k, x):
        return [helper.make_node("MatMul", [x, f"w{k}"], [f"m{k}"])], [weight(f"w{k}", [size, size])], f"m{k}"
    return link


def conv(c, kernel, group):
    def link(k, x):
        w = weight(f"w{k}", [c, c // group, kernel, kernel])
        node = helper.make_node("Conv", [x, f"w{k}"], [f"c{k}"], kernel_shape=[kernel, kernel],
                                pads=[kernel // 2] * 4, group=group)
        return [node], [w], f"c{k}"
    return link


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    kernels = [("kernel", "add256", "ewadd of 256 floats", 0, [256], add, 64)]
    kernels.append(("bandwidth", "add8m", "ewadd of 2^23 floats", 0, [1 << 23], add, 4))
    kernels.append(("depthwise", "dw64", "conv2d 3x3 C=64 56x56 in groups of 1", 2 * 64 * 9 * 56 * 56,
                    [1, 64, 56, 56], conv(64, 3, 64), 4))
    kernels.append(("grouped", "gr128", "conv2d 3x3 C=128 28x28 in groups of 16", 2 * 128 * 16 * 9 * 28 * 28,
                    [1, 128, 28, 28], conv(128, 3, 8), 4))
    for m, k in [(16, 256), (64, 512), (256, 512), (512, 1024)]:
        kernels.append(("products", f"mm{m}x{k}", f"matmul {m}x{k}x{k}", 2 * m * k * k, [m, k], matmul(k), 4))
    kernels.append(("products", "pw256", "conv2d 1x1 C=256 14x14", 2 * 256 * 256 * 14 * 14, [1, 256, 14, 14],
                    conv(256, 1, 1), 4))
    for c, hw in [(32, 56), (64, 28), (128, 14), (256, 14)]:
        kernels.append(("convolutions", f"conv{c}", f"conv2d 3x3 C={c} {hw}x{hw}", 2 * c * c * 9 * hw * hw,
                        [1, c, hw, hw], conv(c, 3, 1), 4))
    manifest = []
    for role, key, what, flops, shape, link, n in kernels:
        chain(os.path.join(out, f"{key}.n.onnx"), shape, link, n)
        chain(os.path.join(out, f"{key}.2n.onnx"), shape, link, 2 * n)
        manifest.append({"role": role, "key": key, "what": what, "flops": flops, "n": n, "shape": shape})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"grouped_rows": 16, "kernels": manifest}, f, indent=1)


if __name__ == "__main__":
    main()
