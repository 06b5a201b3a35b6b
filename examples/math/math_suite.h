// egg's math test cases (tests/math.rs) as data, shared by the acceptance tests and benchmarks,
// and the harness that runs one the way egg's `test_fn!` does.
#ifndef TENSAT_EXAMPLES_MATH_SUITE_H
#define TENSAT_EXAMPLES_MATH_SUITE_H

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "math/math_language.h"

namespace math {

struct SuiteCase {
  std::string name;
  std::string start;
  std::vector<std::string> goals;
  std::size_t iter_limit = 30;
  std::size_t node_limit = 10'000;
  double time_limit_seconds = 5.0;
  std::optional<std::string> extra_root;  // diff_power_harder "sees" its goal
  bool expect_failure = false;            // math_fail
};

/// The test_fn! cases of tests/math.rs that use `rules()` and the default Backoff scheduler.
inline std::vector<SuiteCase> suite_cases() {
  auto make = [](std::string name, std::string start, std::vector<std::string> goals) {
    SuiteCase c;
    c.name = std::move(name);
    c.start = std::move(start);
    c.goals = std::move(goals);
    return c;
  };
  std::vector<SuiteCase> cases = {
      make("math_fail", "(+ x y)", {"(/ x y)"}),
      make("math_simplify_add", "(+ x (+ x (+ x x)))", {"(* 4 x)"}),
      make("math_powers", "(* (pow 2 x) (pow 2 y))", {"(pow 2 (+ x y))"}),
      make("math_simplify_const", "(+ 1 (- a (* (- 2 1) a)))", {"1"}),
      make("math_simplify_root",
           "(/ 1\n   (- (/ (+ 1 (sqrt five))\n         2)\n      (/ (- 1 (sqrt five))\n         "
           "2)))",
           {"(/ 1 (sqrt five))"}),
      make("math_simplify_factor", "(* (+ x 3) (+ x 1))", {"(+ (+ (* x x) (* 4 x)) 3)"}),
      make("math_diff_same", "(d x x)", {"1"}),
      make("math_diff_different", "(d x y)", {"0"}),
      make("math_diff_simple1", "(d x (+ 1 (* 2 x)))", {"2"}),
      make("math_diff_simple2", "(d x (+ 1 (* y x)))", {"y"}),
      make("math_diff_ln", "(d x (ln x))", {"(/ 1 x)"}),
      make("diff_power_simple", "(d x (pow x 3))", {"(* 3 (pow x 2))"}),
      make("diff_power_harder", "(d x (- (pow x 3) (* 7 (pow x 2))))", {"(* x (- (* 3 x) 14))"}),
      make("integ_one", "(i 1 x)", {"x"}),
      make("integ_sin", "(i (cos x) x)", {"(sin x)"}),
      make("integ_x", "(i (pow x 1) x)", {"(/ (pow x 2) 2)"}),
      make("integ_part1", "(i (* x (cos x)) x)", {"(+ (* x (sin x)) (cos x))"}),
      make("integ_part2", "(i (* (cos x) x) x)", {"(+ (* x (sin x)) (cos x))"}),
      make("integ_part3", "(i (ln x) x)", {"(- (* x (ln x)) x)"}),
  };
  for (auto& c : cases) {
    if (c.name == "math_fail") c.expect_failure = true;
    if (c.name == "math_simplify_root") c.node_limit = 75'000;
    if (c.name == "diff_power_harder") {
      c.iter_limit = 60;
      c.node_limit = 100'000;
      c.time_limit_seconds = 10.0;
      c.extra_root = "(* x (- (* 3 x) 14))";
    }
  }
  return cases;
}

/// The outcome of running one case.
struct SuiteResult {
  tensat::Report report;
  std::size_t failed_goal = 0;  // index of the first unproved goal, if !proved
  bool proved = false;
  // With explanations: why the start equals each goal (egg's `test-explanations` feature).
  std::vector<tensat::Explanation<Math>> explanations;
  std::vector<tensat::TreeExplanation<Math>> trees;  // the same, as tree explanations
};

/// Runs `c` like egg's `test_fn!`: the runner limits of the case, a hook that stops as soon as
/// every goal matches in the start expression's class, then checks the goals.
/// With `explain`, the e-graph records explanations and the result holds one for each goal
/// proved. `threads` is the runner's (`Runner::with_threads`).
inline SuiteResult run_case(const SuiteCase& c, const std::vector<Rewrite>& rules,
                            bool explain = false, std::size_t threads = 1) {
  using Runner = tensat::Runner<Math, ConstantFold>;
  Runner runner;
  if (explain) runner.with_explanations_enabled();
  runner.with_threads(threads, 0);  // every iteration on the threads: the tests compare
  runner.with_iter_limit(c.iter_limit)
      .with_node_limit(c.node_limit)
      .with_time_limit(std::chrono::duration<double>(c.time_limit_seconds));
  if (c.extra_root) runner.with_expr(tensat::parse_expr<Math>(*c.extra_root));
  runner.with_expr(tensat::parse_expr<Math>(c.start));
  const Id root = runner.egraph().find(runner.roots().back());
  std::vector<tensat::Pattern<Math>> goals;
  for (const auto& g : c.goals) goals.emplace_back(g);
  runner.with_hook([&goals, root](Runner& r) -> std::optional<std::string> {
    for (const auto& goal : goals)
      if (!goal.search_eclass(r.egraph(), root)) return std::nullopt;
    return std::string("Proved all goals");
  });
  runner.run(rules);
  SuiteResult result{runner.report(), 0, true, {}, {}};
  for (std::size_t i = 0; i < goals.size(); ++i)
    if (!goals[i].search_eclass(runner.egraph(), root)) {
      result.proved = false;
      result.failed_goal = i;
      break;
    }
  if (explain && result.proved)
    for (const auto& g : c.goals) {
      const auto start = tensat::parse_expr<Math>(c.start), goal = tensat::parse_expr<Math>(g);
      result.explanations.push_back(runner.explain_equivalence(start, goal));
      result.trees.push_back(runner.egraph().explain_equivalence_tree(start, goal));
    }
  return result;
}

/// math_associate_adds: comm-add and assoc-add only, no analysis, SimpleScheduler, 7 iterations.
struct AssociateAddsResult {
  tensat::Report report;
  bool proved = false;
};
inline AssociateAddsResult run_associate_adds() {
  using L = Math;
  using A = tensat::NoAnalysis;
  std::vector<tensat::Rewrite<L, A>> rules = {
      tensat::rewrite<L, A>("comm-add", "(+ ?a ?b)", "(+ ?b ?a)"),
      tensat::rewrite<L, A>("assoc-add", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"),
  };
  tensat::Runner<L, A> runner;
  runner.with_iter_limit(7).with_scheduler(tensat::SimpleScheduler<L, A>{});
  runner.with_expr(tensat::parse_expr<L>("(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 (+ 6 7))))))"));
  const Id root = runner.roots().back();
  tensat::Pattern<L> goal("(+ 7 (+ 6 (+ 5 (+ 4 (+ 3 (+ 2 1))))))");
  // egg's @check form: no goal hook, the runner goes to its limit.
  runner.run(rules);
  return {runner.report(), goal.search_eclass(runner.egraph(), root).has_value()};
}

/// The expressions and extra patterns of egg's `math_ematching_bench`.
inline std::vector<std::string> ematching_bench_exprs() {
  return {"(i (ln x) x)",
          "(i (+ x (cos x)) x)",
          "(i (* (cos x) x) x)",
          "(d x (+ 1 (* 2 x)))",
          "(d x (- (pow x 3) (* 7 (pow x 2))))",
          "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))",
          "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))"};
}
inline std::vector<std::string> ematching_bench_extra_patterns() {
  return {"(+ ?a (+ ?b ?c))",
          "(+ (+ ?a ?b) ?c)",
          "(* ?a (* ?b ?c))",
          "(* (* ?a ?b) ?c)",
          "(+ ?a (* -1 ?b))",
          "(* ?a (pow ?b -1))",
          "(* ?a (+ ?b ?c))",
          "(pow ?a (+ ?b ?c))",
          "(+ (* ?a ?b) (* ?a ?c))",
          "(* (pow ?a ?b) (pow ?a ?c))",
          "(* ?x (/ 1 ?x))",
          "(d ?x (+ ?a ?b))",
          "(+ (d ?x ?a) (d ?x ?b))",
          "(d ?x (* ?a ?b))",
          "(+ (* ?a (d ?x ?b)) (* ?b (d ?x ?a)))",
          "(d ?x (sin ?x))",
          "(d ?x (cos ?x))",
          "(* -1 (sin ?x))",
          "(* -1 (cos ?x))",
          "(i (cos ?x) ?x)",
          "(i (sin ?x) ?x)",
          "(d ?x (ln ?x))",
          "(d ?x (pow ?f ?g))",
          "(* (pow ?f ?g) (+ (* (d ?x ?f) (/ ?g ?f)) (* (d ?x ?g) (ln ?f))))",
          "(i (pow ?x ?c) ?x)",
          "(/ (pow ?x (+ ?c 1)) (+ ?c 1))",
          "(i (+ ?f ?g) ?x)",
          "(i (- ?f ?g) ?x)",
          "(+ (i ?f ?x) (i ?g ?x))",
          "(- (i ?f ?x) (i ?g ?x))",
          "(i (* ?a ?b) ?x)",
          "(- (* ?a (i ?b ?x)) (i (* (d ?x ?a) (i ?b ?x)) ?x))"};
}

}  // namespace math

#endif  // TENSAT_EXAMPLES_MATH_SUITE_H
