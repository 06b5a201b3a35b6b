// Exact DAG extraction (extract_ilp): the built-in branch-and-bound and, when this build has
// it, CBC, against brute force on random e-graphs and against extraction-gym's proven optima.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <cmath>
#include <limits>
#include <random>

#include "gym_oracles.h"
#include "math/math_language.h"
#include "math/math_suite.h"

#include <tensat/extract/dag_problem.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/io/json.h>
#include <tensat/tensat.h>

using tensat::ExtractionGraph;
using tensat::IlpBackend;

namespace {

tensat::Extraction exact(const ExtractionGraph& g, IlpBackend backend, double seconds = 30) {
  tensat::IlpOptions options;
  options.backend = backend;
  options.time_limit_seconds = seconds;
  return tensat::extract_ilp(g, options);
}

ExtractionGraph load(const std::string& path) {
  return tensat::to_extraction_graph(tensat::read_egraph_json((gym::kDir / path).string()));
}

std::vector<IlpBackend> backends() {
  if (tensat::kHaveCbc) return {IlpBackend::BuiltIn, IlpBackend::Cbc, IlpBackend::Auto};
  return {IlpBackend::BuiltIn, IlpBackend::Auto};
}

}  // namespace

TEST_CASE("ilp: every backend equals the brute-force DAG optimum on random e-graphs, negative costs included") {
  for (const IlpBackend backend : backends()) {
    std::mt19937 rng(11);
    INFO("backend " << tensat::to_string(backend));
    std::size_t solvable = 0;
    for (int trial = 0; trial < (backend == IlpBackend::BuiltIn ? 600 : 120); ++trial) {
      const bool negative = trial % 3 == 2;
      const auto g = gym::random_graph(rng, 2 + trial % 7, negative ? -6 : 0, 10, trial % 4 == 0);
      const double best = gym::brute_force_dag(g);
      INFO("trial " << trial);
      if (!std::isfinite(best)) {
        CHECK_THROWS_AS(exact(g, backend), tensat::Error);
        continue;
      }
      ++solvable;
      const auto result = exact(g, backend);
      REQUIRE_FALSE(tensat::check_extraction(g, result.choice).has_value());
      CHECK(result.status == tensat::ExtractionStatus::Optimal);
      CHECK(gym::approx(result.dag_cost, best));
      CHECK(result.lower_bound == result.dag_cost);
      CHECK(gym::approx(tensat::dag_cost(g, result.choice), result.dag_cost));
    }
    CHECK(solvable > 60);
  }
}

TEST_CASE("ilp: the built-in backend alone proves the optimum of every proven extraction-gym file under 500 nodes") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent");
  }
  std::size_t proven = 0;
  for (const auto& row : gym::rows()) {
    if (row.status != "proven" || row.nodes >= 500) continue;
    INFO(row.path);
    const auto graph = load(row.path);
    const auto result = exact(graph, IlpBackend::BuiltIn);
    REQUIRE_FALSE(tensat::check_extraction(graph, result.choice).has_value());
    CHECK(result.status == tensat::ExtractionStatus::Optimal);
    CHECK(gym::approx(result.dag_cost, row.ilp_best));
    ++proven;
  }
  CHECK(proven >= 79);
}

TEST_CASE("ilp: the shared examples where heuristics miss") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent");
  }
  for (const IlpBackend backend : backends()) {
    INFO("backend " << tensat::to_string(backend));
    CHECK(exact(load("data/dummy_examples/choice.json"), backend).dag_cost == 37.0);
    CHECK(exact(load("data/set_covering/test.json"), backend).dag_cost == 2.0);
    CHECK(exact(load("test_data/crafted/multi_root.json"), backend).dag_cost == 10.0);
  }
}

TEST_CASE("ilp: the mandatory-class bound never exceeds the optimum, and counts exactly the classes every extraction needs") {
  std::mt19937 rng(5);
  std::size_t positive = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto g = gym::random_graph(rng, 2 + trial % 7, 0, 10, trial % 4 == 0);
    const double best = gym::brute_force_dag(g);
    if (!std::isfinite(best)) continue;
    const auto problem = tensat::DagProblem::reduce(g, tensat::extract_greedy_dag(g));
    const double bound = problem.mandatory_lower_bound();
    INFO("trial " << trial);
    CHECK(gym::at_least(best, bound));
    CHECK(bound >= 0);
    positive += bound > 0 ? 1 : 0;
  }
  CHECK(positive > 100);  // the bound is not vacuous on these graphs

  // Root r = {f(a, b) 1, g(a) 4}; a = {x 2, h(b) 3}; b = {y 7, z 4}: every extraction needs r
  // and a (a child of both root nodes), not b (g(a) with a = x avoids it). Bound 1 + 2.
  const ExtractionGraph g(3, {0, 0, 1, 1, 2, 2}, {1, 4, 2, 3, 7, 4}, {0, 2, 3, 3, 4, 4, 4}, {1, 2, 1, 2}, {0});
  const auto problem = tensat::DagProblem::reduce(g, tensat::extract_greedy_dag(g));
  CHECK(problem.mandatory_lower_bound() == 3.0);
  CHECK(gym::brute_force_dag(g) == 6.0);  // g(x) = 4 + 2; f(x, z) = 1 + 2 + 4 = 7

  // With a negative cost there is no such bound.
  const ExtractionGraph negative(2, {0, 1}, {1, -3}, {0, 1, 1}, {1}, {0});
  CHECK(tensat::DagProblem::reduce(negative, tensat::extract_greedy_dag(negative)).mandatory_lower_bound() ==
        -std::numeric_limits<double>::infinity());
}

TEST_CASE("ilp: on a time limit, a valid extraction no worse than the heuristic and a bound below it") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent");
  }
  // fir_8_tap: the LP bound is far below the optimum (5936), hard for every backend.
  const auto graph = load("data/rover/fir_8_tap_5iteration_egraph.json");
  const auto greedy = tensat::extract_greedy_dag(graph);
  for (const IlpBackend backend : backends()) {
    INFO("backend " << tensat::to_string(backend));
    const auto result = exact(graph, backend, 1.0);
    REQUIRE_FALSE(tensat::check_extraction(graph, result.choice).has_value());
    CHECK(result.dag_cost <= greedy.dag_cost);
    CHECK(result.lower_bound <= result.dag_cost);
    CHECK(result.lower_bound > 0);  // something was proven
    if (result.status == tensat::ExtractionStatus::Feasible) CHECK(result.lower_bound < result.dag_cost);
    // With no time at all, however slow the machine: still valid, and the mandatory classes'
    // bound, which needs no search, is proven.
    const auto instant = exact(graph, backend, 0.0);
    REQUIRE_FALSE(tensat::check_extraction(graph, instant.choice).has_value());
    CHECK(instant.dag_cost <= greedy.dag_cost);
    CHECK(instant.lower_bound <= 5936.0);  // the proven optimum (oracles.csv)
    CHECK(instant.lower_bound > 0);
  }
  CHECK_THROWS_AS(exact(graph, IlpBackend::BuiltIn, -1), tensat::Error);
  CHECK_THROWS_AS(exact(graph, IlpBackend::BuiltIn, std::nan("")), tensat::Error);
  if (!tensat::kHaveCbc) CHECK_THROWS_AS(exact(graph, IlpBackend::Cbc), tensat::Error);
}

TEST_CASE("ilp: the time limit covers the warm start: cut at once, a valid extraction that says so") {
  // A chain of 75,000 classes whose tree choice takes every link: one pass of the warm start's
  // local search would visit ~n² classes (each class's leaf swap drops the chain under it), so
  // without the deadline it stops on its own work budget (WorkLimit), long after the limit.
  const std::uint32_t n = 75'000;
  const ExtractionGraph chain = gym::chain_graph(n, 2);
  for (const IlpBackend backend : backends()) {
    INFO("backend " << tensat::to_string(backend));
    const auto result = exact(chain, backend, 0.0);
    REQUIRE_FALSE(tensat::check_extraction(chain, result.choice).has_value());
    CHECK(result.status == tensat::ExtractionStatus::Feasible);
    CHECK(result.stop == tensat::ExtractionStop::TimeLimit);
    CHECK(result.dag_cost == 100.0 + (n - 1));  // the tree-optimal start is optimal here
    CHECK(result.lower_bound <= result.dag_cost);
  }
  // With time enough, a proof, and nothing cut short.
  const auto proven = exact(gym::chain_graph(300), IlpBackend::BuiltIn, 60);
  CHECK(proven.status == tensat::ExtractionStatus::Optimal);
  CHECK(proven.stop == tensat::ExtractionStop::Finished);
}

TEST_CASE("ilp: the built-in search runs as deep as the e-graph, without the call stack") {
  // A chain of 50,000 classes, class i = {leaf of cost 100 + i, link(i - 1) of cost 1}: every
  // class is decided on the way down, one level each.
  const std::uint32_t n = 50'000;
  const ExtractionGraph chain = gym::chain_graph(n);
  const auto result = exact(chain, IlpBackend::BuiltIn, 60);
  CHECK(result.status == tensat::ExtractionStatus::Optimal);
  CHECK(result.dag_cost == 100.0 + (n - 1));
}

TEST_CASE("ilp: on saturated math e-graphs, the two exact backends agree, and the DAG extracted is a term of the root class") {
  // E-graphs the gym has not seen: egg's e-matching bench expressions after 5 iterations of the
  // math rules, with uneven costs per operator so that ties are rare.
  auto cost = [](const math::Math& node) {
    return tensat::is_leaf(node) ? 1.0 : 2.0 + static_cast<double>(static_cast<int>(node.kind()) % 3);
  };
  for (const auto& text : math::ematching_bench_exprs()) {
    INFO(text);
    tensat::Runner<math::Math, math::ConstantFold> runner;
    runner.with_iter_limit(5).with_scheduler(tensat::SimpleScheduler<math::Math, math::ConstantFold>{});
    runner.with_expr(tensat::parse_expr<math::Math>(text)).run(math::rules());
    const auto& egraph = runner.egraph();
    std::vector<tensat::Id> node_ids;
    const auto graph = ExtractionGraph::from_egraph(egraph, runner.roots(), cost, &node_ids);
    const auto greedy = tensat::extract_greedy_dag(graph);
    const auto builtin = exact(graph, IlpBackend::BuiltIn, 20);
    REQUIRE_FALSE(tensat::check_extraction(graph, builtin.choice).has_value());
    CHECK(builtin.dag_cost <= greedy.dag_cost);
    CHECK(builtin.lower_bound <= builtin.dag_cost);
    if (tensat::kHaveCbc) {
      const auto cbc = exact(graph, IlpBackend::Cbc, 20);
      REQUIRE_FALSE(tensat::check_extraction(graph, cbc.choice).has_value());
      if (builtin.status == tensat::ExtractionStatus::Optimal && cbc.status == tensat::ExtractionStatus::Optimal)
        CHECK(gym::approx(cbc.dag_cost, builtin.dag_cost));
      CHECK(cbc.lower_bound <= builtin.dag_cost + 1e-9);  // neither proves more than the other finds
      CHECK(builtin.lower_bound <= cbc.dag_cost + 1e-9);
    }
    const auto expr = tensat::to_recexpr(egraph, graph, node_ids, builtin);
    const auto found = egraph.lookup_expr(expr);
    REQUIRE(found.has_value());
    CHECK(egraph.find(*found) == egraph.find(runner.roots().front()));
  }
}
