#!/usr/bin/env python3
"""Optimizes every ONNX model of a folder with tensat-opt and times the original against the
export in onnxruntime (bench/ort/time_model.js: one thread, levels 'all' and 'disabled').

    NODE_PATH=/work/ort/node_modules bench/ort/compare.py MODELS_DIR \
        --tensat-opt build/examples/opt/tensat-opt --out-dir /tmp/ort-compare \
        [--runs 21] [--json results.json] [-- TENSAT-OPT FLAGS...]

Flags after `--` go to tensat-opt (default: --profile onnxruntime-cpu). A model's input shapes come
from MODEL.inputs beside it when there is one (one NAME=d0,d1,... per line; passed to tensat-opt
and time_model.js as --input). Files named *.opt.onnx are skipped. Prints a markdown table (one
row per model: median microseconds of the original and the export, speedup, IQR of the per-pair
ratios and the sign-test verdict, at each level) and the geometric mean of the speedups; writes
every record to --json. A model tensat-opt refuses gets a row saying why.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def shapes_of(model):
    path = model[:-len(".onnx")] + ".inputs"
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [a for line in f if line.strip() for a in ("--input", line.strip())]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models")
    ap.add_argument("--tensat-opt", default="build/examples/opt/tensat-opt")
    ap.add_argument("--out-dir", default="/tmp/ort-compare")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--json")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:split])
    opt_flags = argv[split + 1:] or ["--profile", "onnxruntime-cpu"]
    os.makedirs(args.out_dir, exist_ok=True)
    records = []
    for f in sorted(os.listdir(args.models)):
        if not f.endswith(".onnx") or f.endswith(".opt.onnx"):
            continue
        model = os.path.join(args.models, f)
        out = os.path.join(args.out_dir, f[:-5] + ".opt.onnx")
        shapes = shapes_of(model)
        rec = {"model": f, "tensat_opt_flags": opt_flags}
        opt = subprocess.run([args.tensat_opt, model, *shapes, "--out", out, "--json", *opt_flags],
                             capture_output=True, text=True)
        if opt.returncode != 0:
            rec["error"] = (opt.stderr.strip().splitlines() or ["exit %d" % opt.returncode])[0]
            records.append(rec)
            continue
        o = json.loads(opt.stdout)
        rec.update({k: o.get(k) for k in ("ops_before", "ops_after", "cost_before", "cost_after", "layout_rules")})
        t = subprocess.run(["node", os.path.join(HERE, "time_model.js"), "--runs", str(args.runs), *shapes, model, out],
                           capture_output=True, text=True)
        if t.returncode != 0:
            rec["error"] = (t.stderr.strip().splitlines() or ["exit %d" % t.returncode])[0]
        else:
            rec["ort"] = json.loads(t.stdout)
        records.append(rec)
        print(f"{f}: done", file=sys.stderr)

    levels = ["all", "disabled"]
    head = "| model | ops | " + " | ".join(
        f"{lv}: orig us | {lv}: opt us | {lv}: speedup | {lv}: IQR | {lv}: verdict" for lv in levels) + " |"
    print(head)
    print("|" + "---|" * (2 + 5 * len(levels)))
    logs = {lv: [] for lv in levels}
    for r in records:
        if "ort" not in r:
            print(f"| {r['model']} | {r.get('error', '')} |")
            continue
        cells = [r["model"], f"{r['ops_before']}→{r['ops_after']}"]
        for lv in levels:
            x = next(v for v in r["ort"]["levels"] if v["level"] == lv)
            logs[lv].append(math.log(x["speedup"]))
            cells += [f"{x['median_us'][0]:.0f}", f"{x['median_us'][1]:.0f}", f"{x['speedup']:.3f}",
                      f"{x['pair_ratio_iqr'][0]:.3f}–{x['pair_ratio_iqr'][1]:.3f}", x["verdict"]]
        print("| " + " | ".join(cells) + " |")
    geo = {lv: math.exp(sum(v) / len(v)) if v else None for lv, v in logs.items()}
    print("\ngeo-mean speedup: " + ", ".join(f"{lv} {g:.3f}" for lv, g in geo.items() if g))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"records": records, "geo_mean_speedup": geo}, f, indent=1)


if __name__ == "__main__":
    main()
