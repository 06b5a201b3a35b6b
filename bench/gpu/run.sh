#!/bin/bash
# One device call (bench/RESULTS.md, issue 34): calibrate the GPU (kernels, matrix-vector
# products, error probes), then the seven models with and without fusion on that profile, graph
# timing, 15 ABBA pairs, with the guard (and --ops) and without it. Reads build-gpu/ (bundle.sh);
# writes to $OUT (default out/): at most 8 files.
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT"
cd build-gpu
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
date -u +%FT%TZ >> "$OUT/device.txt"
base=h200-sxm; grep -q H100 "$OUT/device.txt" && base=h100-sxm
echo "base $base" >> "$OUT/device.txt"
timeout 170 ./calibrate_device --base $base --measurements "$OUT/measurements.json" "$OUT/calibrated.json" 2> "$OUT/calibrate.txt"
echo "calibrate rc $?" >> "$OUT/device.txt"; date -u +%FT%TZ >> "$OUT/device.txt"
[ -s "$OUT/calibrated.json" ] || exit 3
for guard in guard noguard; do
  flags="--ops"; [ $guard = noguard ] && flags="--no-guard"
  timeout ${BENCH_S:-200} ./cuda_executor_bench --profile="$OUT/calibrated.json" --runs=15 --per-run=10 --timing=graph $flags \
    --benchmark_out_format=json --benchmark_out="$OUT/graph_$guard.json" > "$OUT/bench_$guard.txt" 2>&1
  echo "bench $guard rc $?" >> "$OUT/device.txt"; date -u +%FT%TZ >> "$OUT/device.txt"
done
cat "$OUT/device.txt"
grep -hE "^BM_" "$OUT/bench_guard.txt" "$OUT/bench_noguard.txt" |
  sed -E 's/ (faster_pairs=[0-9.]+).*(measured_speedup_percent=[^ ]+).*(predicted_gain_percent=[^ ]+).*/ \1 \2 \3/'
