#!/usr/bin/python3
"""Optimizes and measures every ONNX model of a folder with tensat-opt; prints a markdown table.

    /usr/bin/python3 bench/corpus/run_corpus.py MODELS_DIR --profile host.json \\
        [--runs 11] [--opt build/examples/opt/tensat-opt] [--json OUT.json] [--band 1.0] \\
        [-- EXTRA TENSAT-OPT FLAGS, e.g. --no-fusion --layouts off]

For each MODELS_DIR/*.onnx (sorted by name) it runs
`tensat-opt MODEL --profile PROFILE --verify --measure RUNS --json EXTRA...` and reads its JSON
line: the predicted gain (the cost model's, `gain_percent`), the paired measured gain on the Eigen
executor (1 - the median of the optimized / original ratios of RUNS back-to-back pairs), the
ratios' quartiles and the sign test over the pairs (`measured_faster_pairs`,
`measured_paired_sign`).

Verdict per model: "slower" when the optimized program lost beyond noise (the sign test over the
pairs at p < 0.05 one-sided, or the ratios' interquartile range entirely above 1), "faster" the
other way round, else "noise"; "unchanged" when tensat-opt kept the original program (the pair
is then A/A: its sign test's verdict, kept as `aa_verdict`, measures the test's false
positives, not the optimizer). A prediction has the wrong sign when the predicted gain is above
--band percent and the verdict is "slower", or below -band and the verdict is "faster". The
summary gives the geometric means of the predicted and the measured ratios, as gains.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


def parse_args(argv):
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", help="folder of .onnx models (bench/corpus/make_corpus.py writes one)")
    p.add_argument("--profile", required=True, help="device profile (calibrate_host's JSON or a name)")
    p.add_argument("--runs", type=int, default=11, help="measured pairs per model (default 11)")
    p.add_argument("--opt", default="build/examples/opt/tensat-opt", help="the tensat-opt binary")
    p.add_argument("--json", dest="json_out", help="also write the rows and the summary here")
    p.add_argument("--band", type=float, default=1.0,
                   help="predicted gains within +-BAND percent are not counted for the sign check")
    p.add_argument("--timeout", type=float, default=600, help="seconds per model")
    args = p.parse_args(argv)
    args.extra = extra
    return args


def verdict(line):
    if line.get("kept_original", False):
        return "unchanged"  # the same program twice: an A/A pair, whatever the sign test says
    sign, q1, q3 = line["measured_paired_sign"], line["measured_ratio_q1"], line["measured_ratio_q3"]
    if sign < 0 or q1 > 1.0:
        return "slower"
    if sign > 0 or q3 < 1.0:
        return "faster"
    return "noise"


def run_model(args, path):
    cmd = [args.opt, path, "--profile", args.profile, "--verify", "--measure", str(args.runs), "--json"] + args.extra
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %g s" % args.timeout}
    row = {"seconds": round(time.monotonic() - start, 2)}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode not in (0, 1) or not lines:
        row["error"] = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[0]
        return row
    line = json.loads(lines[-1])
    if "measured_paired_sign" not in line:
        row["error"] = "no measured_paired_sign in the JSON line (a tensat-opt older than this script)"
        return row
    if not line.get("verify_ok", False):
        row["error"] = "verify failed: " + line.get("verify_message", "")
    row.update({
        "ops_before": line["ops_before"], "ops_after": line["ops_after"],
        "cost_before_us": line["cost_before"], "cost_after_us": line["cost_after"],
        "predicted_gain_percent": line["gain_percent"],
        "measured_gain_percent": line["measured_paired_speedup_percent"],
        "ratio_q1": line["measured_ratio_q1"], "ratio_q3": line["measured_ratio_q3"],
        "faster_pairs": line["measured_faster_pairs"], "runs": line["measure_runs"],
        "original_ms": line["measured_original_ms"], "optimized_ms": line["measured_optimized_ms"],
        "verdict": verdict(line),
        "aa_verdict": verdict(dict(line, kept_original=False)) if line.get("kept_original", False) else None,
        "ops_by_type_before": line["ops_by_type_before"], "ops_by_type_after": line["ops_by_type_after"],
    })
    pred = row["predicted_gain_percent"]
    row["wrong_sign"] = (pred > args.band and row["verdict"] == "slower") or \
                        (pred < -args.band and row["verdict"] == "faster")
    return row


def geo_gain(ratios):
    """1 - the geometric mean of `ratios`, in percent."""
    return 100.0 * (1.0 - math.exp(sum(math.log(r) for r in ratios) / len(ratios))) if ratios else float("nan")


def table(rows, summary):
    out = ["| model | ops before → after | predicted gain % | measured gain % (paired) | ratio q1–q3 | "
           "faster pairs | original ms | verdict |",
           "|---|---|---:|---:|---|---:|---:|---|"]
    for name, r in rows:
        if "ops_before" not in r:
            out.append("| %s | — | — | — | — | — | — | error: %s |" % (name, r.get("error", "?")))
            continue
        mark = " (wrong sign)" if r["wrong_sign"] else ""
        err = " (%s)" % r["error"] if "error" in r else ""
        aa = " (A/A: %s)" % r["aa_verdict"] if r.get("aa_verdict") else ""
        out.append("| %s | %d → %d | %+.1f | %+.1f | %.3f–%.3f | %d/%d | %.2f | %s%s%s%s |" % (
            name, r["ops_before"], r["ops_after"], r["predicted_gain_percent"], r["measured_gain_percent"],
            r["ratio_q1"], r["ratio_q3"], r["faster_pairs"], r["runs"], r["original_ms"], r["verdict"], aa, mark, err))
    out.append("")
    out.append("models: %d measured and verified, %d failed; slower beyond noise: %d, within noise: %d, faster: %d, "
               "unchanged: %d (A/A pairs the sign test called different: %d); "
               "predictions with the wrong sign (|predicted| > %g %%): %d" % (
                   summary["measured"], summary["failed"], summary["slower"], summary["noise"], summary["faster"],
                   summary["unchanged"], summary["aa_false_positives"], summary["band_percent"], summary["wrong_sign"]))
    out.append("geo-mean gain: predicted %+.1f %%, measured %+.1f %% (paired medians)" % (
        summary["geomean_predicted_gain_percent"], summary["geomean_measured_gain_percent"]))
    return "\n".join(out)


def main():
    args = parse_args(sys.argv[1:])
    if not os.path.isdir(args.models):
        sys.exit("run_corpus.py: %s is not a folder" % args.models)
    names = sorted(f for f in os.listdir(args.models) if f.endswith(".onnx"))
    if not names:
        sys.exit("run_corpus.py: no .onnx models in %s" % args.models)
    rows = []
    for f in names:
        print("%s ..." % f, file=sys.stderr, flush=True)
        rows.append((f[:-5], run_model(args, os.path.join(args.models, f))))
    ok = [r for _, r in rows if "ops_before" in r and "error" not in r]  # measured and verified
    summary = {
        "measured": len(ok), "failed": len(rows) - len(ok),
        "slower": sum(r["verdict"] == "slower" for r in ok), "noise": sum(r["verdict"] == "noise" for r in ok),
        "faster": sum(r["verdict"] == "faster" for r in ok), "wrong_sign": sum(r["wrong_sign"] for r in ok),
        "unchanged": sum(r["verdict"] == "unchanged" for r in ok),
        "aa_false_positives": sum(r.get("aa_verdict") in ("slower", "faster") for r in ok),
        "band_percent": args.band,
        "geomean_predicted_gain_percent": geo_gain([r["cost_after_us"] / r["cost_before_us"] for r in ok
                                                    if r["cost_before_us"] > 0]),
        "geomean_measured_gain_percent": geo_gain([1.0 - r["measured_gain_percent"] / 100.0 for r in ok]),
        "runs": args.runs, "profile": args.profile, "extra_flags": args.extra,
    }
    print(table(rows, summary))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"summary": summary, "models": {n: r for n, r in rows}}, f, indent=1)
            f.write("\n")
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
