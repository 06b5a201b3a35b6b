#!/usr/bin/env bash
# Builds the benchmarks (Release, own build dir) and runs each program with 5 repetitions,
# writing JSON to bench/results/, then prints the comparison tables (bench/summarize.py).
# Usage: bench/run_all.sh [build-dir]     (default: <repo>/build-bench)
# On a shared machine, run it as `chrt -f 10 bench/run_all.sh` (as root): the saturation figures
# are wall clock (egg's report total_time is too), and a compile job sharing the core shows up in
# them directly; SCHED_FIFO keeps one core for the benchmark (the other stays with the rest).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build-bench}"
out="$repo/bench/results"
mkdir -p "$out"

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSAT_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" math_suite_bench ematching_bench memory_bench extraction_bench tensor_opt_bench

# Which engine was measured (no git here: a digest of the headers and examples the programs include).
( cd "$repo" && find include examples/math -type f \( -name '*.h' -o -name '*.hpp' \) | sort | xargs sha256sum | sha256sum | cut -c1-16 ) > "$out/headers.sha256"
echo "headers digest: $(cat "$out/headers.sha256")"

common=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
"$build/bench/math_suite_bench" "${common[@]}" --benchmark_out="$out/math_suite.json"
"$build/bench/ematching_bench" "${common[@]}" --benchmark_out="$out/ematching.json"
# Memory figures are deterministic: one run each, at normal priority (chrt -o 0) even when this
# script runs under chrt -f: they are not timings. Set TENSAT_BENCH_LARGE=1 to add the 3.4M-node
# e-graphs.
chrt -o 0 "$build/bench/memory_bench" --benchmark_out_format=json --benchmark_out="$out/memory.json"
# Extraction over extraction-gym (issue 4): the heuristics' passes are timings (5 repetitions,
# like the rest); the ILP sweeps run once (each file once per backend and time limit; the limit is
# TENSAT_ILP_LIMIT, default 30 s, so this takes tens of minutes; set TENSAT_BENCH_SKIP_ILP=1 to
# leave them out). They run at normal priority (chrt -o 0): CBC uses a thread per core, and
# SCHED_FIFO threads on both cores would starve the machine for that long. Per-file rows go to
# extraction_ilp.csv beside the JSON.
"$build/bench/extraction_bench" "${common[@]}" --benchmark_filter='^BM_(tree|greedy)' --benchmark_out="$out/extraction.json"
if [[ "${TENSAT_BENCH_SKIP_ILP:-0}" != 1 ]]; then
  chrt -o 0 "$build/bench/extraction_bench" --benchmark_filter='^BM_ilp/' --benchmark_out_format=json \
    --benchmark_out="$out/extraction_ilp.json"
fi

# The tensor optimizer on the seven benchmark models (issue 5), TENSAT's settings.
"$build/bench/tensor_opt_bench" "${common[@]}" --benchmark_out="$out/tensor_opt.json"

python3 "$repo/bench/summarize.py" "$out"
