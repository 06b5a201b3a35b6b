#!/usr/bin/env python3
"""Prints bench/RESULTS.md's comparison tables from the Google Benchmark JSON files in a results
folder (math_suite.json, ematching.json, memory.json, extraction.json, extraction_ilp.json) and egg's figures, read from
../shared/data/egg/egg-baseline.md beside the checkout (egg columns are left out if it is absent).

Usage: bench/summarize.py [results-dir] [egg-baseline.md]
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results")
BASELINE = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "shared", "data", "egg", "egg-baseline.md")

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(name):
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return None, {}
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data["benchmarks"]:
        run = b.get("run_name", b["name"])
        agg = b.get("aggregate_name", "single")
        runs.setdefault(run, {})[agg] = b
    return data["context"], runs


def seconds(b, key="real_time"):
    return b[key] * UNIT[b["time_unit"]]


def parse_baseline():
    tests, patterns = {}, {}
    if not os.path.exists(BASELINE):
        return tests, patterns
    section = None
    with open(BASELINE) as f:
        for line in f:
            if line.startswith("## Per-test"):
                section = "tests"
            elif line.startswith("## E-matching"):
                section = "patterns"
            if not line.startswith("|") or line.startswith("|---") or line.startswith("| test") or line.startswith("| pattern"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if section == "tests" and len(cells) >= 10 and cells[1] != "–":
                name = re.sub(r" \(.*\)$", "", cells[0])
                lo, med = cells[2].split(" / ")
                tests[name] = {
                    "total": float(cells[1]), "min": float(lo), "iterations": int(cells[4]), "nodes": int(cells[5]),
                    "classes": int(cells[6]), "memo": int(cells[7]), "rebuilds": int(cells[8]), "stop": cells[9],
                }
            elif section == "patterns" and cells[0].startswith("`"):
                patterns[cells[0].strip("`")] = {"iter1": float(cells[1]), "iter6": float(cells[4])}
            elif section == "patterns" and "sum over patterns" in cells[0]:
                patterns["__sum__"] = {"iter1": float(cells[1]), "iter6": float(cells[4])}
    return tests, patterns


def fmt_time(s):
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} µs"
    return f"{s * 1e9:.0f} ns"


def ratio(egg, ours):
    return f"{egg / ours:.2f}×" if egg and ours else "–"


def same(a, b):
    if b is None:
        return "–"
    if a == b:
        return "="
    return f"{100.0 * (a - b) / b:+.1f} %"


def context_line(ctx):
    return (f"date {ctx['date']}, host {ctx['host_name']}, {ctx['num_cpus']} CPUs @ {ctx['mhz_per_cpu']} MHz, "
            f"load average {' / '.join(f'{x:.2f}' for x in ctx['load_avg'])}")


def suite(egg_tests):
    ctx, runs = load("math_suite.json")
    if ctx is None:
        return
    print("### Math suite\n")
    print(context_line(ctx) + "\n")
    print("Times are the runner's report total_time (search + apply + rebuild + hooks). tensat: median over 5 "
          "repetitions of the mean per repetition, and the fastest single run in all repetitions; egg: median "
          "of 3 official runs and min over 16 runs (egg-baseline.md). `speed-up` = egg median / tensat median. "
          "Structure: tensat value, then `=` or the difference from egg.\n")
    print("| test | tensat median | tensat min run | egg median | egg min | speed-up | iterations | nodes | classes | memo (egg counts stale entries) | rebuilds | stop reason |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    total_t = total_e = 0.0
    for run, aggs in runs.items():
        name = run.split("/")[1]
        if name == "suite_total":
            continue
        med = aggs["median"]
        mn = aggs.get("min", med)
        t = seconds(med)
        e = egg_tests.get(name)
        if name != "math_fail":
            total_t += t
            total_e += e["total"] if e else 0
        cells = [name, fmt_time(t), fmt_time(mn["min_s"]),
                 fmt_time(e["total"]) if e else "–", fmt_time(e["min"]) if e else "–", ratio(e["total"] if e else 0, t)]
        for key in ["iterations", "nodes", "classes"]:
            cells.append(f"{int(med[key])} ({same(int(med[key]), e[key] if e else None)})")
        cells.append(f"{int(med['memo'])} (egg {e['memo']})" if e else str(int(med["memo"])))
        cells.append(f"{int(med['rebuilds'])} (egg {e['rebuilds']})" if e else str(int(med["rebuilds"])))
        stop = med.get("label", "")
        cells.append(stop + ("" if not e else (" (=)" if stop.replace(" ", "") == e["stop"].replace('"', "").replace(" ", "") else f" (egg {e['stop']})")))
        print("| " + " | ".join(cells) + " |")
    tot = runs.get("math/suite_total/min_time:0.500/manual_time")
    if tot:
        med, mn = tot["median"], tot.get("min", tot["median"])
        print(f"\n**Suite total (19 timed tests, math_fail excluded as in egg's CSV):** tensat median "
              f"{fmt_time(seconds(med))} (fastest single sweep {fmt_time(mn['min_s'])}; with math_fail "
              f"{fmt_time(med['all20_s'])}; {int(med['ok'])}/{int(med['cases'])} cases as expected) vs egg "
              f"**11.700 ms** → {ratio(0.0117, seconds(med))}. Sum of the per-test medians above: "
              f"{fmt_time(total_t)} (egg {fmt_time(total_e)}).\n")


def ematching(egg_patterns):
    ctx, runs = load("ematching.json")
    if ctx is None:
        return
    print("### E-matching bench and stress e-graph\n")
    print(context_line(ctx) + "\n")
    for tag, egg_total, egg_nodes, egg_classes, egg_memo in [("iter1", 0.000064, 137, 53, 145), ("iter6", 0.022, 10397, 3939, 25550)]:
        b = next((v for k, v in runs.items() if k.startswith(f"build/{tag}/")), None)
        if not b:
            continue
        med, mn = b["median"], b.get("min", b["median"])
        print(f"* build/{tag}: report total_time median {fmt_time(seconds(med))} (fastest run {fmt_time(mn['min_s'])}; "
              f"search {fmt_time(med['search_s'])}, apply {fmt_time(med['apply_s'])}, rebuild {fmt_time(med['rebuild_s'])}) "
              f"vs egg {fmt_time(egg_total)} → {ratio(egg_total, seconds(med))}; iterations {int(med['iterations'])}, "
              f"nodes {int(med['nodes'])} (egg {egg_nodes}), classes {int(med['classes'])} (egg {egg_classes}), "
              f"memo {int(med['memo'])} (egg {egg_memo}, stale entries included), stop {med.get('label', '')}")
    for tag in ["iter1", "iter6"]:
        s = next((v for k, v in runs.items() if k.startswith(f"ematch_sum/{tag}")), None)
        if not s:
            continue
        med = s["median"]
        egg = egg_patterns.get("__sum__", {}).get(tag)
        print(f"* ematch_sum/{tag}: sum over the {int(med['patterns'])} patterns of the per-pattern 5th percentile "
              f"(egg's statistic) {fmt_time(med['sum_p05_ns'] * 1e-9)} vs egg {fmt_time(egg * 1e-9) if egg else '–'} → "
              f"{ratio(egg or 0, med['sum_p05_ns'])}; mean sweep {fmt_time(seconds(med))}; {int(med['matches'])} matches "
              f"on {int(med['nodes'])} nodes / {int(med['classes'])} classes")
    print("\nPer pattern: 5th percentile of individually timed `pattern.search(egraph)` calls (egg's statistic), "
          "median over 5 repetitions; egg: the baseline's columns (default limits = 1 iteration; EGG_ITER_LIMIT=6).\n")
    print("| pattern | matches (1 it) | tensat 1 it | egg 1 it | speed-up | matches (6 it) | tensat 6 it | egg 6 it | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    for run, aggs in runs.items():
        m = re.match(r"ematch/(iter\d)/p\d+/(.*)/min_time", run)
        if m:
            rows.setdefault(m.group(2), {})[m.group(1)] = aggs["median"]
    slower = []
    for pat, r in rows.items():
        e = egg_patterns.get(pat, {})
        cells = [f"`{pat}`"]
        for tag in ["iter1", "iter6"]:
            b = r.get(tag)
            if not b:
                cells += ["–"] * 4
                continue
            t = b["p05_ns"]
            cells += [str(int(b["matches"])), f"{t:.0f} ns", f"{e[tag]:.0f} ns" if tag in e else "–", ratio(e.get(tag, 0), t)]
            if tag in e and t > e[tag]:
                slower.append(f"`{pat}` at {tag} ({t:.0f} ns vs {e[tag]:.0f} ns)")
        print("| " + " | ".join(cells) + " |")
    print("\nPatterns slower than egg: " + ("; ".join(slower) if slower else "none") + ".\n")


def memory():
    ctx, runs = load("memory.json")
    if ctx is None:
        return
    print("### Memory\n")
    print("`bytes / node` = memory_usage() / total_number_of_nodes() on the e-graph as saturation leaves it; "
          "`after compact()`: the same e-graph after `EGraph::compact()` (ids of merged-away congruent "
          "duplicates collected, spare capacity released), divided by the same live-node count.\n")
    print("| e-graph | iterations | stop | nodes | classes | node ids | bytes / node (memory_usage) | bytes / node id | "
          "malloc'd bytes / node | node ids after compact() | bytes / node after compact() | sizeof node | sizeof EClass |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def opt(b, key, spec):  # counters added later are absent from older JSON
        return format(b[key], spec) if key in b else "–"

    for run, aggs in runs.items():
        b = aggs.get("single") or next(iter(aggs.values()))
        print(f"| {run.replace('/iterations:1', '')} | {int(b['iterations'])} | {b.get('label', '')} | {int(b['nodes'])} | "
              f"{int(b['classes'])} | {int(b['node_ids'])} | {b['bytes_per_node']:.1f} | {b['bytes_per_node_id']:.1f} | "
              f"{b['heap_bytes_per_node']:.1f} | {opt(b, 'node_ids_compacted', '.0f')} | "
              f"{opt(b, 'bytes_per_node_compacted', '.1f')} | {int(b['sizeof_node'])} | {int(b['sizeof_eclass'])} |")
    print("\nBreakdown of memory_usage() per live node (bytes), before compact(), from memory_bench's b_* counters: "
          "arena_min = node ids × sizeof node; union_find = union-find parents only; class lists = capacities, "
          "inline slots included; other = the rest of memory_usage() (arena spare capacity, "
          "hashcons, by-op index, flag bits, work lists; the inline list slots counted twice are taken off here).\n")
    keys = ["b_arena_min", "b_union_find", "b_eclass_structs", "b_class_node_lists", "b_class_parent_lists", "b_other"]
    print("| e-graph | " + " | ".join(k[2:] for k in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for run, aggs in runs.items():
        b = aggs.get("single") or next(iter(aggs.values()))
        if b["nodes"] > 100:
            print(f"| {run.replace('/iterations:1', '')} | " + " | ".join(f"{b[k]:.1f}" for k in keys) + " |")
    print()


def extraction():
    ctx, runs = load("extraction.json")
    if ctx is not None:
        print("### Extraction heuristics (extraction-gym)\n")
        print(context_line(ctx) + "\n")
        print("Time of one pass over all files (median over the repetitions); gaps are to the proven "
              "optimum (`ilp_best` on `proven` rows), `= opt` counts those rows reached within 1e-6.\n")
        print("| extractor | pass time | files | DAG cost sum | gap geo-mean | = opt (of proven) | worst gap | worst file | below opt |")
        print("|---|---|---|---|---|---|---|---|---|")
        for run, aggs in runs.items():
            b = aggs.get("median") or aggs.get("single") or next(iter(aggs.values()))
            if "error_occurred" in b and b["error_occurred"]:
                print(f"| {run.split('/')[0]} | error: {b.get('error_message', '')} |||||||")
                continue
            print(f"| {run.split('/')[0]} | {fmt_time(seconds(b))} | {int(b['files'])} | {b['dag_cost_sum']:.6g} | "
                  f"{b['gap_geomean_pct']:.3f} % | {int(b['equal_opt'])} of {int(b['proven_files'])} | "
                  f"{b['worst_gap_pct']:.2f} % | `{b.get('label', '').replace('worst: ', '')}` | {int(b['below_opt'])} |")
        print()
    ctx, runs = load("extraction_ilp.json")
    if ctx is not None:
        print("### Exact extraction (extract_ilp) sweeps\n")
        print(context_line(ctx) + "\n")
        print("One run per backend and time limit, each file once; `seconds` = sum of the per-file wall times. "
              "`wrong` must be 0. Per-file rows: extraction_ilp.csv beside the JSON.\n")
        print("| backend / limit | files | proven | proven (oracle proven) | proven, nodes ≥ 500 | wrong | at oracle best | improves a feasible row | seconds | DAG cost sum |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for run, aggs in runs.items():
            b = aggs.get("single") or aggs.get("median") or next(iter(aggs.values()))
            name = "/".join(run.split("/")[1:3])
            if b.get("error_occurred"):
                print(f"| {name} | error: {b.get('error_message', '')} |||||||||")
                continue
            print(f"| {name}{' (' + b['label'] + ')' if b.get('label') else ''} | {int(b['files'])} | {int(b['proven'])} | "
                  f"{int(b['proven_and_oracle_proven'])} of {int(b['oracle_proven'])} | "
                  f"{int(b['proven_large'])} of {int(b['large_files'])} | {int(b['wrong'])} | {int(b['at_oracle_best'])} | "
                  f"{int(b['improved'])} | {b['seconds']:.2f} | {b['dag_cost_sum']:.6g} |")
        print()


def main():
    egg_tests, egg_patterns = parse_baseline()
    suite(egg_tests)
    ematching(egg_patterns)
    memory()
    extraction()


if __name__ == "__main__":
    main()
