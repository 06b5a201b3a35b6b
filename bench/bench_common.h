// Shared set-up for tensat's Google Benchmark programs: egg's math_ematching_bench e-graph, the
// 52 patterns of egg's e-matching table, the math rules as pattern text (for other languages and
// analyses), and a main() that supplies default flags.
#ifndef TENSAT_BENCH_BENCH_COMMON_H
#define TENSAT_BENCH_BENCH_COMMON_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include <tensat/tensat.h>

#include "math/math_language.h"
#include "math/math_suite.h"

namespace bench {

/// egg's bench_egraph limits (tests/math.rs `math_ematching_bench`, src/test.rs): SimpleScheduler,
/// node limit 1,000,000, and here a 30 s time limit; the iteration limit is 1 by default
/// (EGG_ITER_LIMIT), 6 for the "stress" e-graph.
inline constexpr std::size_t kBenchNodeLimit = 1'000'000;
inline constexpr double kBenchTimeLimitSeconds = 30.0;
inline constexpr std::size_t kStressIterations = 6;

/// The 52 patterns of egg's e-matching table (egg-baseline.md), exactly as printed there (`_`
/// for spaces), in the table's order: egg's rule lhs/rhs plus the extra patterns, alpha-renamed,
/// deduplicated, leaves dropped, sorted by length.
inline const std::vector<std::string>& egg_table_patterns() {
  static const std::vector<std::string> patterns = {
      "(*_?x_?x)",
      "(-_?x_?x)",
      "(/_?x_?x)",
      "(cos_?x)",
      "(d_?x_?x)",
      "(sin_?x)",
      "(*_?x_0)",
      "(*_?x_1)",
      "(*_?x_?y)",
      "(+_?x_0)",
      "(+_?x_?y)",
      "(-_?x_?y)",
      "(/_1_?x)",
      "(/_?x_?y)",
      "(d_?x_(cos_?x))",
      "(d_?x_(ln_?x))",
      "(d_?x_(sin_?x))",
      "(d_?x_?y)",
      "(i_(cos_?x)_?x)",
      "(i_(sin_?x)_?x)",
      "(i_1_?x)",
      "(pow_?x_-1)",
      "(pow_?x_0)",
      "(pow_?x_1)",
      "(pow_?x_2)",
      "(*_-1_(cos_?x))",
      "(*_-1_(sin_?x))",
      "(*_?x_(/_1_?x))",
      "(i_(pow_?x_?y)_?x)",
      "(*_(*_?x_?y)_?z)",
      "(*_?x_(*_?y_?z))",
      "(*_?x_(+_?y_?z))",
      "(*_?x_(pow_?y_-1))",
      "(+_(+_?x_?y)_?z)",
      "(+_?x_(*_-1_?y))",
      "(+_?x_(+_?y_?z))",
      "(d_?x_(*_?y_?z))",
      "(d_?x_(+_?y_?z))",
      "(d_?x_(pow_?y_?z))",
      "(i_(*_?x_?y)_?z)",
      "(i_(+_?x_?y)_?z)",
      "(i_(-_?x_?y)_?z)",
      "(pow_?x_(+_?y_?z))",
      "(*_(pow_?x_?y)_(pow_?x_?z))",
      "(+_(*_?x_?y)_(*_?x_?z))",
      "(+_(d_?x_?y)_(d_?x_?z))",
      "(+_(i_?x_?y)_(i_?z_?y))",
      "(-_(i_?x_?y)_(i_?z_?y))",
      "(/_(pow_?x_(+_?y_1))_(+_?y_1))",
      "(+_(*_?x_(d_?y_?z))_(*_?z_(d_?y_?x)))",
      "(-_(*_?x_(i_?y_?z))_(i_(*_(d_?z_?x)_(i_?y_?z))_?z))",
      "(*_(pow_?x_?y)_(+_(*_(d_?z_?x)_(/_?y_?x))_(*_(d_?z_?y)_(ln_?x))))",
  };
  return patterns;
}

/// `(*_?x_?x)` -> `(* ?x ?x)`.
inline std::string pattern_text(std::string printed) {
  std::replace(printed.begin(), printed.end(), '_', ' ');
  return printed;
}

/// The 36 rules of egg's tests/math.rs as (name, lhs, rhs) text, conditions left out (they
/// only exist for ConstantFold); used to run the same rule text over other languages/analyses.
struct RuleText {
  const char* name;
  const char* lhs;
  const char* rhs;
};
inline const std::vector<RuleText>& math_rule_text() {
  static const std::vector<RuleText> rules = {
      {"comm-add", "(+ ?a ?b)", "(+ ?b ?a)"},
      {"comm-mul", "(* ?a ?b)", "(* ?b ?a)"},
      {"assoc-add", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"},
      {"assoc-mul", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"},
      {"sub-canon", "(- ?a ?b)", "(+ ?a (* -1 ?b))"},
      {"div-canon", "(/ ?a ?b)", "(* ?a (pow ?b -1))"},
      {"zero-add", "(+ ?a 0)", "?a"},
      {"zero-mul", "(* ?a 0)", "0"},
      {"one-mul", "(* ?a 1)", "?a"},
      {"add-zero", "?a", "(+ ?a 0)"},
      {"mul-one", "?a", "(* ?a 1)"},
      {"cancel-sub", "(- ?a ?a)", "0"},
      {"cancel-div", "(/ ?a ?a)", "1"},
      {"distribute", "(* ?a (+ ?b ?c))", "(+ (* ?a ?b) (* ?a ?c))"},
      {"factor", "(+ (* ?a ?b) (* ?a ?c))", "(* ?a (+ ?b ?c))"},
      {"pow-mul", "(* (pow ?a ?b) (pow ?a ?c))", "(pow ?a (+ ?b ?c))"},
      {"pow0", "(pow ?x 0)", "1"},
      {"pow1", "(pow ?x 1)", "?x"},
      {"pow2", "(pow ?x 2)", "(* ?x ?x)"},
      {"pow-recip", "(pow ?x -1)", "(/ 1 ?x)"},
      {"recip-mul-div", "(* ?x (/ 1 ?x))", "1"},
      {"d-variable", "(d ?x ?x)", "1"},
      {"d-constant", "(d ?x ?c)", "0"},
      {"d-add", "(d ?x (+ ?a ?b))", "(+ (d ?x ?a) (d ?x ?b))"},
      {"d-mul", "(d ?x (* ?a ?b))", "(+ (* ?a (d ?x ?b)) (* ?b (d ?x ?a)))"},
      {"d-sin", "(d ?x (sin ?x))", "(cos ?x)"},
      {"d-cos", "(d ?x (cos ?x))", "(* -1 (sin ?x))"},
      {"d-ln", "(d ?x (ln ?x))", "(/ 1 ?x)"},
      {"d-power", "(d ?x (pow ?f ?g))",
       "(* (pow ?f ?g) (+ (* (d ?x ?f) (/ ?g ?f)) (* (d ?x ?g) (ln ?f))))"},
      {"i-one", "(i 1 ?x)", "?x"},
      {"i-power-const", "(i (pow ?x ?c) ?x)", "(/ (pow ?x (+ ?c 1)) (+ ?c 1))"},
      {"i-cos", "(i (cos ?x) ?x)", "(sin ?x)"},
      {"i-sin", "(i (sin ?x) ?x)", "(* -1 (cos ?x))"},
      {"i-sum", "(i (+ ?f ?g) ?x)", "(+ (i ?f ?x) (i ?g ?x))"},
      {"i-dif", "(i (- ?f ?g) ?x)", "(- (i ?f ?x) (i ?g ?x))"},
      {"i-parts", "(i (* ?a ?b) ?x)", "(- (* ?a (i ?b ?x)) (i (* (d ?x ?a) (i ?b ?x)) ?x))"},
  };
  return rules;
}

/// The names of the 9 math rules that carry conditions in egg.
inline bool is_conditional_math_rule(std::string_view name) {
  for (const char* c : {"div-canon", "cancel-div", "pow0", "pow-recip", "recip-mul-div",
                        "d-variable", "d-constant", "d-ln", "d-power"})
    if (name == c) return true;
  return false;
}

/// The math rules over language `L` with analysis `A`: all 36 with their conditions dropped, or
/// (`keep_conditional` false) only the 27 rules that have no condition in egg.
template <class L, class A>
std::vector<tensat::Rewrite<L, A>> unconditional_math_rules(bool keep_conditional = true) {
  std::vector<tensat::Rewrite<L, A>> rules;
  for (const RuleText& r : math_rule_text())
    if (keep_conditional || !is_conditional_math_rule(r.name))
      rules.push_back(tensat::rewrite<L, A>(r.name, r.lhs, r.rhs));
  return rules;
}

/// The e-graph of egg's math_ematching_bench after `iterations` iterations, and the report.
template <class L, class A>
struct BenchEGraph {
  tensat::EGraph<L, A> egraph;
  tensat::Report report;
};

/// Runs egg's bench_egraph set-up: the 7 expressions, `rules`, SimpleScheduler, the bench
/// limits, and egg's hook (stop when total_number_of_nodes exceeds the node limit; it also
/// reads the size every iteration, as egg's does to print it).
template <class L, class A>
BenchEGraph<L, A> build_bench_egraph(const std::vector<tensat::Rewrite<L, A>>& rules,
                                     std::size_t iterations) {
  tensat::Runner<L, A> runner;
  runner.with_scheduler(tensat::SimpleScheduler<L, A>{})
      .with_iter_limit(iterations)
      .with_node_limit(kBenchNodeLimit)
      .with_time_limit(std::chrono::duration<double>(kBenchTimeLimitSeconds))
      .with_hook([](tensat::Runner<L, A>& r) -> std::optional<std::string> {
        if (r.egraph().total_number_of_nodes() > kBenchNodeLimit)
          return std::string("Bench stopped");
        return std::nullopt;
      });
  for (const std::string& e : math::ematching_bench_exprs())
    runner.with_expr(tensat::parse_expr<L>(e));
  runner.run(rules);
  tensat::Report report = runner.report();
  return {std::move(runner.egraph()), std::move(report)};
}

/// Report counters shared by the saturation benchmarks (values of the last run).
inline void set_report_counters(benchmark::State& state, const tensat::Report& r) {
  state.counters["iterations"] = static_cast<double>(r.iterations);
  state.counters["nodes"] = static_cast<double>(r.egraph_nodes);
  state.counters["classes"] = static_cast<double>(r.egraph_classes);
  state.counters["memo"] = static_cast<double>(r.memo_size);
  state.counters["rebuilds"] = static_cast<double>(r.rebuilds);
}

/// The k-th quantile (0..1) of `samples`, egg's `percentile` (index floor(n*k) of the sorted
/// samples, clamped). O(n).
inline double percentile(std::vector<double> samples, double k) {
  if (samples.empty()) return 0;
  std::size_t i = static_cast<std::size_t>(static_cast<double>(samples.size()) * k);
  if (i >= samples.size()) i = samples.size() - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(i),
                   samples.end());
  return samples[i];
}

/// Per-run distribution counters for manually timed benchmarks: `min_s` and `median_s` of the
/// runs' report total_time (robust to the preemption a loaded 2-core machine adds to the mean).
inline void set_sample_counters(benchmark::State& state, const std::vector<double>& seconds) {
  state.counters["min_s"] = seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
  state.counters["median_s"] = percentile(seconds, 0.5);
}

/// The "min" statistic over repetitions (of times and counters), next to GB's mean/median.
inline double min_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

/// main(): `defaults` go before the user's arguments, so the user's flags win.
inline int run_benchmarks(int argc, char** argv, std::vector<std::string> defaults) {
  std::vector<char*> args;
  args.push_back(argv[0]);
  for (std::string& d : defaults) args.push_back(d.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace bench

#endif  // TENSAT_BENCH_BENCH_COMMON_H
