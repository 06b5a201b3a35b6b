// egg's math_ematching_bench (tests/math.rs, src/test.rs `bench_egraph`): saturate the 7 bench
// expressions with all 36 math rules and SimpleScheduler for 1 iteration (egg's default) and 6
// iterations (the "stress" e-graph), then time `pattern.search(egraph)` for each of the 52
// patterns of egg's table, and all of them in one sweep.
//
// Timing:
// * `ematch/...` per pattern: Google Benchmark's time is the mean per search (loop overhead,
//   two clock reads and freeing the result included); the `p05_ns` counter is egg's figure: the
//   5th percentile of individually timed searches (clock started right before `search`, stopped
//   right after, result freed outside the timed span), `median_ns` the median of those.
// * `ematch_sum/...`: one sweep over the 52 patterns per iteration; GB's time is the mean sweep;
//   `sum_p05_ns` is the sum over patterns of each pattern's 5th percentile (egg's "sum over
//   patterns" row), `sum_median_ns` the same with medians.
// * `deep/compile/N`, `deep/match/N`: compiling the N-deep pattern (f (f ... (f ?x))), and
//   matching it in the one class of x = (f x): both should grow linearly with N (issue 31).
// * `build/...`: manual time = the runner's report total_time (search+apply+rebuild+hooks, no
//   parsing), what egg prints in its report; `min_s`/`median_s` are the min/median of the runs'
//   total_time, `wall_s` the mean wall time of the whole set-up (parsing and teardown included).
// Minimum times are set per benchmark in main() (flags cannot override them); a full run with
// --benchmark_repetitions=5 takes about a minute.
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_common.h"

namespace {

using Clock = std::chrono::steady_clock;
using MathBench = bench::BenchEGraph<math::Math, math::ConstantFold>;

const std::vector<math::Rewrite>& all_rules() {
  static const std::vector<math::Rewrite> rules = math::rules();
  return rules;
}

const MathBench& bench_egraph(std::size_t iterations) {
  static const MathBench one = bench::build_bench_egraph(all_rules(), 1);
  static const MathBench stress = bench::build_bench_egraph(all_rules(), bench::kStressIterations);
  return iterations == 1 ? one : stress;
}

const std::vector<tensat::Pattern<math::Math>>& patterns() {
  static const std::vector<tensat::Pattern<math::Math>> compiled = [] {
    std::vector<tensat::Pattern<math::Math>> v;
    for (const std::string& p : bench::egg_table_patterns()) v.emplace_back(bench::pattern_text(p));
    return v;
  }();
  return compiled;
}

std::size_t count_matches(const std::vector<tensat::SearchMatches>& matches) {
  std::size_t n = 0;
  for (const auto& m : matches) n += m.substs.size();
  return n;
}

void set_egraph_counters(benchmark::State& state, const MathBench& b) {
  state.counters["nodes"] = static_cast<double>(b.egraph.total_number_of_nodes());
  state.counters["classes"] = static_cast<double>(b.egraph.number_of_classes());
  state.counters["memo"] = static_cast<double>(b.egraph.total_size());
}

void BM_search(benchmark::State& state, std::size_t iterations, std::size_t index) {
  const auto& egraph = bench_egraph(iterations).egraph;
  const auto& pattern = patterns()[index];
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto matches = pattern.search(egraph);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(matches.data());
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  state.counters["p05_ns"] = bench::percentile(samples, 0.05);
  state.counters["median_ns"] = bench::percentile(samples, 0.5);
  state.counters["matches"] = static_cast<double>(count_matches(pattern.search(egraph)));
}

void BM_search_sum(benchmark::State& state, std::size_t iterations) {
  const auto& b = bench_egraph(iterations);
  const auto& pats = patterns();
  std::vector<std::vector<double>> samples(pats.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < pats.size(); ++i) {
      const auto t0 = Clock::now();
      auto matches = pats[i].search(b.egraph);
      const auto t1 = Clock::now();
      benchmark::DoNotOptimize(matches.data());
      samples[i].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
  }
  double sum_p05 = 0, sum_median = 0;
  std::size_t total_matches = 0;
  for (std::size_t i = 0; i < pats.size(); ++i) {
    sum_p05 += bench::percentile(samples[i], 0.05);
    sum_median += bench::percentile(samples[i], 0.5);
    total_matches += count_matches(pats[i].search(b.egraph));
  }
  state.counters["sum_p05_ns"] = sum_p05;
  state.counters["sum_median_ns"] = sum_median;
  state.counters["matches"] = static_cast<double>(total_matches);
  state.counters["patterns"] = static_cast<double>(pats.size());
  set_egraph_counters(state, b);
}

void BM_build(benchmark::State& state, std::size_t iterations) {
  const auto& rules = all_rules();
  tensat::Report last;
  double search = 0, apply = 0, rebuild = 0, wall = 0;
  std::vector<double> samples;
  for (auto _ : state) {
    const auto start = Clock::now();
    MathBench b = bench::build_bench_egraph(rules, iterations);
    wall += std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(b.report.total_time);
    samples.push_back(b.report.total_time);
    search += b.report.search_time;
    apply += b.report.apply_time;
    rebuild += b.report.rebuild_time;
    last = b.report;
  }
  bench::set_report_counters(state, last);
  using benchmark::Counter;
  state.counters["search_s"] = Counter(search, Counter::kAvgIterations);
  state.counters["apply_s"] = Counter(apply, Counter::kAvgIterations);
  state.counters["rebuild_s"] = Counter(rebuild, Counter::kAvgIterations);
  state.counters["wall_s"] = Counter(wall, Counter::kAvgIterations);
  bench::set_sample_counters(state, samples);
  state.SetLabel(last.stop_reason.to_string());
}

// (f (f ... (f ?x))), `depth` f's.
std::string deep_chain(std::size_t depth) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += "(f ";
  text += "?x";
  text.append(depth, ')');
  return text;
}

void BM_deep_compile(benchmark::State& state, std::size_t depth) {
  const auto ast = tensat::parse_pattern_ast<tensat::SymbolLang>(deep_chain(depth));
  for (auto _ : state) {
    tensat::Pattern<tensat::SymbolLang> pattern(ast);
    benchmark::DoNotOptimize(pattern.program().num_instructions());
  }
}

void BM_deep_match(benchmark::State& state, std::size_t depth) {
  using L = tensat::SymbolLang;
  tensat::EGraph<L> egraph;
  const tensat::Id x = egraph.add(L::leaf("x"));
  egraph.unite(x, egraph.add(L("f", {x})));
  egraph.rebuild();
  const tensat::Pattern<L> pattern(deep_chain(depth));
  for (auto _ : state) {
    auto matches = pattern.search(egraph);
    benchmark::DoNotOptimize(matches.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto& printed = bench::egg_table_patterns();
  for (std::size_t iterations : {std::size_t{1}, bench::kStressIterations}) {
    const std::string tag = "iter" + std::to_string(iterations);
    benchmark::RegisterBenchmark(("build/" + tag).c_str(), BM_build, iterations)
        ->UseManualTime()
        ->ComputeStatistics("min", bench::min_of)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(iterations == 1 ? 0.05 : 0.3);
    benchmark::RegisterBenchmark(("ematch_sum/" + tag).c_str(), BM_search_sum, iterations)
        ->ComputeStatistics("min", bench::min_of)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(iterations == 1 ? 0.1 : 0.5);
    for (std::size_t i = 0; i < printed.size(); ++i) {
      const std::string index = (i < 10 ? "p0" : "p") + std::to_string(i);
      benchmark::RegisterBenchmark(("ematch/" + tag + "/" + index + "/" + printed[i]).c_str(),
                                   BM_search, iterations, i)
          ->ComputeStatistics("min", bench::min_of)
          ->Unit(benchmark::kNanosecond)
          ->MinTime(iterations == 1 ? 0.03 : 0.1);
    }
  }
  for (std::size_t depth : {1'000, 4'000, 16'000, 64'000}) {
    benchmark::RegisterBenchmark(("deep/compile/" + std::to_string(depth)).c_str(), BM_deep_compile,
                                 depth)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("deep/match/" + std::to_string(depth)).c_str(), BM_deep_match,
                                 depth)
        ->Unit(benchmark::kMicrosecond);
  }
  return bench::run_benchmarks(argc, argv, {});
}
