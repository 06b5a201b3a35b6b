#!/bin/bash
# Packs the GPU programs and their non-CUDA shared libraries into build-gpu/ (ignored by git),
# for a machine that has the CUDA runtime, cuBLAS and cuDNN but not this machine's other
# libraries. Run from the repository root after building in build/:
#   cmake --build build --target calibrate_device cuda_executor_bench tensor_cuda_executor_test
#   bash bench/gpu/bundle.sh
# then, on the GPU machine, from the root of the same tree: bash bench/gpu/run.sh
set -euo pipefail
out=build-gpu
rm -rf "$out" && mkdir -p "$out/lib"
for p in build/bench/calibrate_device build/bench/cuda_executor_bench build/tests/tensor_cuda_executor_test; do
  cp "$p" "$out/"
  ldd "$p" | awk '{print $3}' | grep -v '^$' | grep -v -E '/cuda|libc\.so|libm\.so|libdl\.so|libpthread|librt\.so|ld-linux' |
    xargs -r -I{} cp -L {} "$out/lib/"
done
du -sh "$out"
