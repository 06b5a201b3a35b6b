// The executor's convolutions under glibc's default heap policy (the timing programs of this
// project set their own, examples/common/heap.h; a user's harness may not): four 3x3
// convolutions in a chain, im2col (`conv2d`) and Winograd (`wino_conv2d`), in
// BM_staging/<winograd>/C/H on [1, C, H, H]. Counters: us_per_kernel (the median run over four)
// and faults_per_kernel (minor page faults a kernel call takes, from getrusage). The kernels'
// staging buffers (im2col blocks, Winograd tiles) are kept per thread (exec/detail/scratch.h);
// allocated on every call, as before 2026-12-07, their pages were faulted in again on every call
// wherever the allocator handed them back to the system (bench/RESULTS.md, "Staging buffers").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <sys/resource.h>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <tensat/exec/executor.h>
#include <tensat/tensor/graph.h>

namespace {

using namespace tensat::tensor;

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

void BM_staging(benchmark::State& state) {
  const bool winograd = state.range(0) != 0;
  const std::int64_t c = state.range(1), size = state.range(2);
  Graph g;
  Tensor x = g.input("x", {1, c, size, size});
  for (int i = 0; i < 4; ++i) {
    const Tensor w = g.weight(fmt::format("w{}", i), {c, c, 3, 3});
    x = winograd ? g.wino_conv2d(x, g.wino_weight(w)) : g.conv2d(x, w, 1, 1, Padding::Same);
  }
  g.output(x);
  const tensat::RecExpr<TensorNode> program = g.program();
  const PrecomputedProgram pre = precompute_weights(program, random_bindings(program, 1));
  std::vector<double> us;
  long faults = 0, calls = 0;
  for (auto _ : state) {
    const long before = minor_faults();
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(execute(pre.program, pre.bindings));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count() /
                 4);
    faults += minor_faults() - before;
    calls += 4;
  }
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  state.counters["us_per_kernel"] = us[us.size() / 2];
  state.counters["faults_per_kernel"] = static_cast<double>(faults) / static_cast<double>(calls);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int winograd : {0, 1})
    for (auto [c, size] :
         {std::pair<int, int>{16, 15}, {16, 16}, {16, 17}, {32, 16}, {32, 56}, {64, 56}, {128, 14}})
      b->Args({winograd, c, size});
}

}  // namespace

BENCHMARK(BM_staging)->Apply(shapes)->Iterations(200)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
