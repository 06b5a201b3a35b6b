// egg's math test suite (tests/math.rs) as benchmarks: one per test case, plus the suite total.
//
// Timing: manual. Each iteration runs the whole case (`math::run_case`: runner set-up, parsing,
// goal hook, run, goal check) but reports only the runner's `Report::total_time` (search + apply
// + rebuild + hooks) to Google Benchmark, which is the figure egg writes with EGG_BENCH_CSV.
// The wall time of the whole case is the `wall_s` counter; `min_s`/`median_s` are the min and
// median of the runs' total_time. Default --benchmark_min_time is 0.1 s (suite_total: 0.5 s,
// fixed); a run with --benchmark_repetitions=5 takes about half a minute.
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_common.h"
#include "math/math_suite.h"

namespace {

using Clock = std::chrono::steady_clock;

const std::vector<math::Rewrite>& suite_rules() {
  static const std::vector<math::Rewrite> rules = math::rules();
  return rules;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void set_time_counters(benchmark::State& state, double search, double apply, double rebuild,
                       double wall) {
  using benchmark::Counter;
  state.counters["search_s"] = Counter(search, Counter::kAvgIterations);
  state.counters["apply_s"] = Counter(apply, Counter::kAvgIterations);
  state.counters["rebuild_s"] = Counter(rebuild, Counter::kAvgIterations);
  state.counters["wall_s"] = Counter(wall, Counter::kAvgIterations);
}

// Times `run()` (a case returning a result with `report` and `proved`): manual time = the
// report's total_time; `as_expected(result)` says whether the outcome is egg's.
template <class Run, class AsExpected>
void time_case(benchmark::State& state, Run&& run, AsExpected&& as_expected) {
  decltype(run()) last{};
  double search = 0, apply = 0, rebuild = 0, wall = 0;
  std::vector<double> samples;
  for (auto _ : state) {
    const auto start = Clock::now();
    auto r = run();
    wall += seconds_since(start);
    state.SetIterationTime(r.report.total_time);
    samples.push_back(r.report.total_time);
    search += r.report.search_time;
    apply += r.report.apply_time;
    rebuild += r.report.rebuild_time;
    last = std::move(r);
  }
  bench::set_report_counters(state, last.report);
  state.counters["proved"] = last.proved ? 1 : 0;
  state.counters["as_expected"] = as_expected(last) ? 1 : 0;
  set_time_counters(state, search, apply, rebuild, wall);
  bench::set_sample_counters(state, samples);
  state.SetLabel(last.report.stop_reason.to_string());
}

void BM_case(benchmark::State& state, const math::SuiteCase& c) {
  time_case(
      state, [&] { return math::run_case(c, suite_rules()); },
      [&](const math::SuiteResult& r) { return r.proved != c.expect_failure; });
}

void BM_associate_adds(benchmark::State& state) {
  // egg's @check: number_of_classes() == 127.
  time_case(
      state, [] { return math::run_associate_adds(); },
      [](const math::AssociateAddsResult& r) { return r.report.egraph_classes == 127; });
}

// All 20 cases once per iteration. The reported (manual) time is the sum of report total_time
// over the 19 cases egg times (every case but math_fail, which panics before egg writes its CSV
// row); `all20_s` adds math_fail; `ok` counts cases whose outcome is the expected one. With
// `explain` (suite_total_explain) the e-graphs record explanations, and each proved case also
// explains its goals (`explain_s`: the cases' time outside the runner's, mostly explaining).
void BM_suite_total(benchmark::State& state, bool explain) {
  const auto& rules = suite_rules();
  const auto cases = math::suite_cases();
  double all20 = 0, wall = 0, explaining = 0;
  std::size_t ok = 0;
  std::vector<double> samples;
  for (auto _ : state) {
    const auto start = Clock::now();
    double timed = 0, failing = 0;
    ok = 0;
    for (const auto& c : cases) {
      const auto case_start = Clock::now();
      const math::SuiteResult r = math::run_case(c, rules, explain);
      if (explain) explaining += seconds_since(case_start) - r.report.total_time;
      (c.expect_failure ? failing : timed) += r.report.total_time;
      ok += r.proved != c.expect_failure ? 1 : 0;
    }
    const math::AssociateAddsResult adds = math::run_associate_adds();
    timed += adds.report.total_time;
    ok += adds.report.egraph_classes == 127 ? 1 : 0;
    wall += seconds_since(start);
    all20 += timed + failing;
    state.SetIterationTime(timed);
    samples.push_back(timed);
  }
  bench::set_sample_counters(state, samples);
  using benchmark::Counter;
  state.counters["all20_s"] = Counter(all20, Counter::kAvgIterations);
  state.counters["wall_s"] = Counter(wall, Counter::kAvgIterations);
  if (explain) state.counters["explain_s"] = Counter(explaining, Counter::kAvgIterations);
  state.counters["ok"] = static_cast<double>(ok);
  state.counters["cases"] = static_cast<double>(cases.size() + 1);
}

}  // namespace

int main(int argc, char** argv) {
  static const std::vector<math::SuiteCase> cases = math::suite_cases();
  for (const auto& c : cases)
    benchmark::RegisterBenchmark(("math/" + c.name).c_str(), BM_case, c)
        ->UseManualTime()
        ->ComputeStatistics("min", bench::min_of)
        ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("math/math_associate_adds", BM_associate_adds)
      ->UseManualTime()
      ->ComputeStatistics("min", bench::min_of)
      ->Unit(benchmark::kMicrosecond);
  for (const bool explain : {false, true})
    benchmark::RegisterBenchmark(explain ? "math/suite_total_explain" : "math/suite_total",
                                 BM_suite_total, explain)
        ->UseManualTime()
        ->ComputeStatistics("min", bench::min_of)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
  return bench::run_benchmarks(argc, argv, {"--benchmark_min_time=0.1"});
}
