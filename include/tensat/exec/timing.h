// compare_times: two programs timed against each other in ABBA pairs (run_abba_pairs and
// friends), with their medians and the paired ratio, as tensat-opt --measure reports them.
#ifndef TENSAT_EXEC_TIMING_H
#define TENSAT_EXEC_TIMING_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensat/exec/execute.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Measured times of two programs, from `compare_times`, in milliseconds.
struct TimeComparison {
  struct Times {
    double median_ms = 0, min_ms = 0, max_ms = 0;
  };
  Times original, optimized;
  std::size_t runs = 0;  ///< timed runs of each program
  /// The paired ratios optimized / original of the runs (run r of each program is timed back to
  /// back, so a slowdown of the machine that lasts longer than the pair cancels out): the
  /// median, and the first and third quartiles (interpolated) over the runs.
  double ratio_median = 0, ratio_q1 = 0, ratio_q3 = 0;
  /// Pairs in which the optimized program was faster (ratio below 1).
  std::size_t faster_pairs = 0;
  /// (original - optimized) / original of the medians, in percent: positive when faster.
  [[nodiscard]] double speedup_percent() const noexcept {
    return original.median_ms > 0
               ? 100.0 * (original.median_ms - optimized.median_ms) / original.median_ms
               : 0.0;
  }
  /// 1 - the median paired ratio, in percent: positive when faster. More robust on a shared
  /// machine than `speedup_percent`.
  [[nodiscard]] double paired_speedup_percent() const noexcept {
    return 100.0 * (1.0 - ratio_median);
  }
  /// The sign test on the pairs: +1 when the optimized program was faster in so many pairs that
  /// a fair coin would do as well with probability below 5 % (one-sided), -1 when it was slower
  /// in so many, 0 otherwise: the difference is within the run-to-run noise. Unlike the
  /// quartiles, it sharpens with more runs (at 5 runs only 5 of 5 count; at 41, 27 of 41).
  [[nodiscard]] int paired_sign() const noexcept { return sign_test(faster_pairs, runs); }

  /// The sign test's verdict for `faster` pairs out of `pairs` (see `paired_sign`).
  [[nodiscard]] static int sign_test(std::size_t faster, std::size_t pairs) noexcept {
    const auto tail = [pairs](std::size_t k) {  // P(X >= k), X ~ Binomial(pairs, 1/2)
      const auto n = static_cast<double>(pairs);
      double p = 0;
      for (std::size_t i = k; i <= pairs; ++i) {
        const auto x = static_cast<double>(i);
        p += std::exp(std::lgamma(n + 1) - std::lgamma(x + 1) - std::lgamma(n - x + 1) -
                      n * std::log(2.0));
      }
      return p;
    };
    if (2 * faster > pairs && tail(faster) < 0.05) return 1;
    if (2 * faster < pairs && tail(pairs - faster) < 0.05) return -1;
    return 0;
  }
};

namespace detail {

/// The q-quantile of sorted values, linearly interpolated between order statistics.
inline double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace detail

/// Which program (0 or 1) runs `j`-th (0 or 1) in pair `pair` of an ABBA sequence: 0 first in
/// even pairs, 1 first in odd ones. For harnesses that drive one pair at a time (Google
/// Benchmark's iterations); `run_abba_pairs` runs a whole sequence.
[[nodiscard]] constexpr int abba_order(std::size_t pair, int j) noexcept {
  return pair % 2 == 0 ? j : 1 - j;
}

/// Pair `pair` of `run_warm_abba_pairs`' sequence alone, for a harness that is handed one pair
/// at a time (Google Benchmark's iterations, `bench/executor_bench`).
template <class RunProgram>
void run_warm_abba_pair(std::size_t pair, std::size_t warm_runs, RunProgram&& run) {
  for (int j = 0; j < 2; ++j) {
    const int k = abba_order(pair, j);
    for (std::size_t w = 0; w < warm_runs; ++w) run(k, false);
    run(k, true);
  }
}

/// Calls `run(k, timed)` for the two programs k = 0 and k = 1 as `run_abba_pairs` does, each
/// timed call (`timed` true) preceded by `warm_runs` untimed calls of the same program (`timed`
/// false). Without them a program runs in the cache state the other one leaves: a model whose
/// weights fit in the last-level cache (NasRNN's 72 MB in a server part's hundreds of MB) finds
/// them evicted by the other program, as on a CPU whose cache they exceed; with them it finds
/// them where its own previous run left them, as in TASO's back-to-back runs of one graph.
template <class RunProgram>
void run_warm_abba_pairs(std::size_t pairs, std::size_t warm_runs, RunProgram&& run) {
  for (std::size_t r = 0; r < pairs; ++r) run_warm_abba_pair(r, warm_runs, run);
}

/// Calls `run(k)` for the two programs k = 0 and k = 1, `pairs` times each, back to back and
/// alternating which goes first (ABBA: 0 1, 1 0, 0 1, ...), so that a drift of the machine's
/// speed slows both alike and neither always runs in the cache state the other leaves.
/// `compare_times` and `bench/executor_profile --paired` time their pairs with it (or with
/// `run_warm_abba_pairs`).
template <class RunProgram>
void run_abba_pairs(std::size_t pairs, RunProgram&& run) {
  run_warm_abba_pairs(pairs, 0, [&](int k, bool) { run(k); });
}

/// Times `original` and `optimized` on the executor as TASO times a graph: `random_bindings`
/// (`seed`) of each with its weight-only subgraphs precomputed outside the timing, the tensors
/// they share bound once (`precompute_pair`), one untimed
/// warm-up run each, then `runs` timed `execute` calls of each, **alternating** the two
/// programs so that a machine whose speed drifts (frequency, a neighbour on a shared host) slows
/// both alike; which program goes first alternates from pair to pair (ABBA), so that neither
/// always runs after the other. Reports the medians, min and max of each and the paired ratios.
/// With `warm_runs` > 0, each timed run follows that many untimed runs of the same program
/// (`run_warm_abba_pairs`): its data cached as its own last run left it, not as the other
/// program's did. Throws `ExecutionError` when `runs` is 0, and whatever `execute` throws. On
/// glibc, large freed buffers go back to the OS and are page-faulted in again on the next run,
/// which can cost more than the arithmetic: harnesses raise `M_MMAP_THRESHOLD` (see
/// docs/executor.md) before timing.
[[nodiscard]] inline TimeComparison compare_times(const RecExpr<TensorNode>& original,
                                                  const RecExpr<TensorNode>& optimized,
                                                  std::size_t runs, std::uint64_t seed = 1,
                                                  std::size_t warm_runs = 0) {
  if (runs == 0) throw ExecutionError("compare_times: runs must be positive");
  const PrecomputedPair pair = precompute_pair(original, optimized, seed);
  std::vector<double> ms[2];
  std::size_t sink = 0;
  for (const RecExpr<TensorNode>& p : pair.program)
    sink += execute(p, pair.bindings).size();  // warm-up
  run_warm_abba_pairs(runs, warm_runs, [&](int k, bool timed) {
    const auto start = std::chrono::steady_clock::now();
    sink += execute(pair.program[k], pair.bindings).size();
    if (timed)
      ms[k].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
  });
  if (sink == 0) throw ExecutionError("compare_times: the programs have no outputs");
  TimeComparison out;
  out.runs = runs;
  std::vector<double> ratios;
  for (std::size_t r = 0; r < runs; ++r) {
    ratios.push_back(ms[0][r] > 0 ? ms[1][r] / ms[0][r] : 1.0);
    if (ratios.back() < 1.0) ++out.faster_pairs;
  }
  std::sort(ratios.begin(), ratios.end());
  out.ratio_median = detail::quantile(ratios, 0.5);
  out.ratio_q1 = detail::quantile(ratios, 0.25);
  out.ratio_q3 = detail::quantile(ratios, 0.75);
  for (int k = 0; k < 2; ++k) {
    std::sort(ms[k].begin(), ms[k].end());
    TimeComparison::Times& t = k == 0 ? out.original : out.optimized;
    t.median_ms = detail::quantile(ms[k], 0.5);
    t.min_ms = ms[k].front();
    t.max_ms = ms[k].back();
  }
  return out;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_TIMING_H
