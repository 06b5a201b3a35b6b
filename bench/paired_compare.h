// The original-against-optimized comparison that executor_bench (Eigen executor) and
// cuda_executor_bench (CUDA executor) share: both programs with their weights precomputed, the
// times of ABBA pairs, and the Google Benchmark counters they report.
#ifndef TENSAT_BENCH_PAIRED_COMPARE_H
#define TENSAT_BENCH_PAIRED_COMPARE_H

#include <algorithm>
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

namespace tensat_bench {

namespace tt = tensat::tensor;

/// A model's original and optimized programs (index 0 and 1), with random_bindings(seed 1),
/// their weight-only subgraphs precomputed (TASO's timing) and the tensors they share bound once
/// (tt::precompute_pair).
struct PreparedPair {
  tensat::RecExpr<tt::TensorNode> program[2];
  tt::PrecomputedPair precomputed;

  void precompute() { precomputed = tt::precompute_pair(program[0], program[1], 1); }
};

/// The q-quantile of `v`, interpolated between order statistics.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return tt::detail::quantile(v, q);
}

/// The times of the pairs, in milliseconds.
struct PairedTimes {
  std::vector<double> ms[2];   // original, optimized: one per pair
  std::vector<double> ratios;  // optimized / original within each pair

  void add(const double run_ms[2]) {
    for (int k = 0; k < 2; ++k) ms[k].push_back(run_ms[k]);
    ratios.push_back(run_ms[1] / run_ms[0]);
  }
};

/// Counters: original_ms, optimized_ms (medians over the pairs) and their min and max,
/// measured_speedup_percent (of the medians), paired_speedup_percent (1 - the median ratio),
/// ratio_q1, ratio_q3, faster_pairs, measured_sign (TimeComparison::sign_test: +1 faster, -1
/// slower, 0 within noise), predicted_original_us, predicted_optimized_us and
/// predicted_gain_percent (program_time on `profile`), ops_original, ops_optimized (a fused
/// kernel counted once).
inline void set_comparison_counters(benchmark::State& state, const PairedTimes& t,
                                    const PreparedPair& p, const tt::DeviceProfile& profile) {
  const double original = quantile(t.ms[0], 0.5), optimized = quantile(t.ms[1], 0.5);
  state.counters["original_ms"] = original;
  state.counters["optimized_ms"] = optimized;
  state.counters["original_min_ms"] = *std::min_element(t.ms[0].begin(), t.ms[0].end());
  state.counters["original_max_ms"] = *std::max_element(t.ms[0].begin(), t.ms[0].end());
  state.counters["optimized_min_ms"] = *std::min_element(t.ms[1].begin(), t.ms[1].end());
  state.counters["optimized_max_ms"] = *std::max_element(t.ms[1].begin(), t.ms[1].end());
  state.counters["measured_speedup_percent"] = 100.0 * (original - optimized) / original;
  state.counters["paired_speedup_percent"] = 100.0 * (1.0 - quantile(t.ratios, 0.5));
  state.counters["ratio_q1"] = quantile(t.ratios, 0.25);
  state.counters["ratio_q3"] = quantile(t.ratios, 0.75);
  const auto faster = static_cast<std::size_t>(
      std::count_if(t.ratios.begin(), t.ratios.end(), [](double r) { return r < 1.0; }));
  state.counters["faster_pairs"] = static_cast<double>(faster);
  state.counters["measured_sign"] = tt::TimeComparison::sign_test(faster, t.ratios.size());
  const double before = tt::program_time(p.program[0], profile),
               after = tt::program_time(p.program[1], profile);
  state.counters["predicted_original_us"] = before;
  state.counters["predicted_optimized_us"] = after;
  state.counters["predicted_gain_percent"] = 100.0 * (before - after) / before;
  state.counters["ops_original"] = static_cast<double>(tt::count_ops(p.program[0]));
  state.counters["ops_optimized"] = static_cast<double>(tt::count_ops(p.program[1]));
}

}  // namespace tensat_bench

#endif  // TENSAT_BENCH_PAIRED_COMPARE_H
