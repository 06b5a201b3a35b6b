// Exact DAG extraction (extract_ilp): the built-in branch-and-bound and, when this build has
// it, CBC, against brute force on random e-graphs and against extraction-gym's proven optima.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE(
    "ilp: every backend equals the brute-force DAG optimum on random e-graphs, negative costs "
    "included") {
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

TEST_CASE(
    "ilp: the built-in backend alone proves the optimum of every proven extraction-gym file under "
    "500 nodes") {
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

TEST_CASE(
    "ilp: a pre-simplification stopped by its deadline keeps every optimum, only a larger "
    "problem") {
  // Past the deadline the dominance and cost-bound removals are skipped; the unusable and
  // unreachable nodes still go, so the problem stays exact.
  using Clock = std::chrono::steady_clock;
  std::mt19937 rng(11);
  std::size_t larger = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto g = gym::random_graph(rng, 2 + trial % 7, 0, 10, trial % 3 == 0);
    const double best = gym::brute_force_dag(g);
    if (!std::isfinite(best)) continue;
    INFO("trial " << trial);
    const auto incumbent = tensat::extract_greedy_dag(g);
    const auto full = tensat::DagProblem::reduce(g, incumbent);
    const auto cut = tensat::DagProblem::reduce(g, incumbent, Clock::time_point::min());
    CHECK(cut.num_nodes() >= full.num_nodes());
    larger += cut.num_nodes() > full.num_nodes() ? 1 : 0;
    const auto solved =
        tensat::detail::DagBranchAndBound(cut, Clock::now() + std::chrono::seconds(20)).solve();
    REQUIRE(solved.optimal);
    CHECK(gym::approx(solved.cost, best));
    CHECK(gym::at_least(best, cut.mandatory_lower_bound()));
  }
  CHECK(larger > 0);
  // Root r = {f(a) 1, g(a, b) 5}, a = {x 2}, b = {y 3}: f dominates g (no dearer, a subset of its
  // children), and without g, b is unreachable. Cut short, both stay.
  const ExtractionGraph g(3, {0, 0, 1, 2}, {1, 5, 2, 3}, {0, 1, 3, 3, 3}, {1, 1, 2}, {0});
  const auto incumbent = tensat::extract_greedy_dag(g);
  CHECK(tensat::DagProblem::reduce(g, incumbent).num_nodes() == 2);
  CHECK(tensat::DagProblem::reduce(g, incumbent, Clock::time_point::min()).num_nodes() == 4);
}

TEST_CASE(
    "ilp: the mandatory-class bound never exceeds the optimum, and counts exactly the classes "
    "every extraction needs") {
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
  const ExtractionGraph g(3, {0, 0, 1, 1, 2, 2}, {1, 4, 2, 3, 7, 4}, {0, 2, 3, 3, 4, 4, 4},
                          {1, 2, 1, 2}, {0});
  const auto problem = tensat::DagProblem::reduce(g, tensat::extract_greedy_dag(g));
  CHECK(problem.mandatory_lower_bound() == 3.0);
  CHECK(gym::brute_force_dag(g) == 6.0);  // g(x) = 4 + 2; f(x, z) = 1 + 2 + 4 = 7

  // With a negative cost there is no such bound.
  const ExtractionGraph negative(2, {0, 1}, {1, -3}, {0, 1, 1}, {1}, {0});
  CHECK(tensat::DagProblem::reduce(negative, tensat::extract_greedy_dag(negative))
            .mandatory_lower_bound() == -std::numeric_limits<double>::infinity());
}

TEST_CASE(
    "ilp: on a time limit, a valid extraction no worse than the heuristic and a bound below it") {
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
    if (result.status == tensat::ExtractionStatus::Feasible)
      CHECK(result.lower_bound < result.dag_cost);
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

TEST_CASE(
    "ilp: the time limit covers the warm start: cut at once, a valid extraction that says so") {
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

TEST_CASE(
    "ilp: on saturated math e-graphs, the two exact backends agree, and the DAG extracted is a "
    "term of the root class") {
  // E-graphs the gym has not seen: egg's e-matching bench expressions after 5 iterations of the
  // math rules, with uneven costs per operator so that ties are rare.
  auto cost = [](const math::Math& node) {
    return tensat::is_leaf(node) ? 1.0
                                 : 2.0 + static_cast<double>(static_cast<int>(node.kind()) % 3);
  };
  for (const auto& text : math::ematching_bench_exprs()) {
    INFO(text);
    tensat::Runner<math::Math, math::ConstantFold> runner;
    runner.with_iter_limit(5).with_scheduler(
        tensat::SimpleScheduler<math::Math, math::ConstantFold>{});
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
      if (builtin.status == tensat::ExtractionStatus::Optimal &&
          cbc.status == tensat::ExtractionStatus::Optimal)
        CHECK(gym::approx(cbc.dag_cost, builtin.dag_cost));
      CHECK(cbc.lower_bound <=
            builtin.dag_cost + 1e-9);  // neither proves more than the other finds
      CHECK(builtin.lower_bound <= cbc.dag_cost + 1e-9);
    }
    const auto expr = tensat::to_recexpr(egraph, graph, node_ids, builtin);
    const auto found = egraph.lookup_expr(expr);
    REQUIRE(found.has_value());
    CHECK(egraph.find(*found) == egraph.find(runner.roots().front()));
  }
}

TEST_CASE(
    "ilp: CBC stopped by its time limit never takes the process down; a failure is reported in the "
    "note") {
  // CBC 2.10 segfaulted in CglPreProcess::postProcess on this file when its time limit stopped
  // it (a few milliseconds to a few tens of them, depending on the machine): every limit in
  // that range, with the backends that run CBC.
  if (!tensat::kHaveCbc) {
    TENSAT_SKIP("this build has no CBC");
  }
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent");
  }
  const auto graph = load("test_data/crafted/lots_of_paths_through_cycle.json");
  const auto optimum = exact(graph, IlpBackend::BuiltIn);
  REQUIRE(optimum.status == tensat::ExtractionStatus::Optimal);
  for (const IlpBackend backend : {IlpBackend::Cbc, IlpBackend::Auto})
    for (const double seconds : {0.0, 0.001, 0.002, 0.005, 0.008, 0.01, 0.015, 0.02, 0.05}) {
      INFO("backend " << tensat::to_string(backend) << ", " << seconds << " s");
      const auto result = exact(graph, backend, seconds);
      REQUIRE_FALSE(tensat::check_extraction(graph, result.choice).has_value());
      CHECK(gym::at_least(result.dag_cost, optimum.dag_cost));
      CHECK(gym::at_least(optimum.dag_cost, result.lower_bound));
      if (!result.note.empty()) CHECK(result.note.rfind("CBC failed (", 0) == 0);
    }
}

#if TENSAT_HAS_FORK
TEST_CASE(
    "ilp: run_in_child passes messages back and contains a child that crashes, aborts, throws or "
    "hangs") {
  using Clock = std::chrono::steady_clock;
  const auto soon = [] { return Clock::now() + std::chrono::seconds(20); };
  auto run = tensat::detail::run_in_child(
      [](const auto& send) {
        send("first", false);
        send(std::string(100'000, 'x'), false);  // more than a pipe holds at once
        send("done", true);
      },
      soon());
  CHECK(run.finished);
  CHECK(run.failure.empty());
  CHECK(run.message == "done");

  run = tensat::detail::run_in_child(
      [](const auto& send) {
        send("best so far", false);
        std::abort();
      },
      soon());
  CHECK_FALSE(run.finished);
  CHECK(run.message == "best so far");
  CHECK(run.failure.find("SIGABRT") != std::string::npos);

  // A segfault: under AddressSanitizer its handler ends the child with status 1 instead.
  run = tensat::detail::run_in_child([](const auto&) { std::raise(SIGSEGV); }, soon());
  CHECK_FALSE(run.finished);
  CHECK(run.message.empty());
  CHECK_FALSE(run.failure.empty());

  run = tensat::detail::run_in_child([](const auto&) { throw tensat::Error("no model"); }, soon());
  CHECK_FALSE(run.finished);
  CHECK(run.failure.find("no model") != std::string::npos);

  run = tensat::detail::run_in_child(
      [](const auto& send) {
        send("partial", false);
        for (;;) ::pause();
      },
      Clock::now() + std::chrono::milliseconds(100));
  CHECK_FALSE(run.finished);
  CHECK(run.message == "partial");
  CHECK(run.failure.find("killed") != std::string::npos);

  run = tensat::detail::run_in_child([](const auto&) {}, soon());  // exits, says nothing
  CHECK_FALSE(run.finished);
  CHECK_FALSE(run.failure.empty());

  // The killed child, if its teardown was not over when run_in_child returned, is reaped by a
  // later call: no zombie stays behind.
  auto& killed = tensat::detail::killed_children();
  for (int wait = 0; wait < 200 && killed.size() > 0; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    killed.reap();
  }
  CHECK(killed.size() == 0);
}
#endif

#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
TEST_CASE("ilp: when CBC aborts, the contained solver returns the start and why") {
  // Clp asserts |objective coefficient| < 1e25 and aborts: the model handed to solve_cbc as is
  // (extract_ilp scales such costs down first; see the next test).
  //   root = {b(x) 1, c 5e30}, x = {a 1e30, d(x) 1}
  const ExtractionGraph g(2, {0, 0, 1, 1}, {1, 5e30, 1e30, 1}, {0, 1, 1, 1, 2}, {1, 1}, {0});
  const auto problem = tensat::DagProblem::reduce(g, tensat::extract_greedy_dag(g));
  tensat::DagSolution start;
  start.choice = problem.incumbent;
  start.cost = problem.incumbent_cost;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto run = tensat::detail::solve_cbc_contained(problem, start, deadline, deadline, 10, 1);
  INFO(run.failure);
  CHECK(run.failure.find("crashed (SIGABRT)") != std::string::npos);
  CHECK(run.failure.find("1.0e25") != std::string::npos);  // Clp's assertion, quoted
  CHECK(run.solution.choice == start.choice);
  CHECK_FALSE(run.solution.optimal);
}
#endif

TEST_CASE(
    "ilp: costs of any finite magnitude, 1e25 and up, positive or negative, give the exact "
    "optimum") {
  // Random e-graphs with their costs multiplied by 2^k (exact), so that the brute-force optimum
  // scales exactly: CBC's LP aborted on coefficients of 1e25 or more, and sums near the largest
  // double overflowed.
  for (const IlpBackend backend : backends())
    for (const int k : {80, 300, 1000}) {
      std::mt19937 rng(23);
      std::size_t solved = 0;
      for (int trial = 0; trial < 30; ++trial) {
        const bool negative = trial % 3 == 2;
        const auto g = tensat::detail::with_shifted_costs(
            gym::random_graph(rng, 2 + trial % 6, negative ? -6 : 1, 10, trial % 4 == 0), -k);
        const double best = gym::brute_force_dag(g);
        if (!std::isfinite(best)) continue;
        INFO("backend " << tensat::to_string(backend) << ", 2^" << k << ", trial " << trial);
        const auto result = exact(g, backend);
        REQUIRE_FALSE(tensat::check_extraction(g, result.choice).has_value());
        CHECK(result.status == tensat::ExtractionStatus::Optimal);
        CHECK(result.dag_cost == best);
        CHECK(result.lower_bound == result.dag_cost);
        CHECK(result.note.empty());
        ++solved;
      }
      CHECK(solved > 15);
    }

  // Nodes costing +infinity are never chosen; -infinity has no minimum.
  constexpr double inf = std::numeric_limits<double>::infinity();
  //   root = {f(x) 1, g inf}, x = {a inf, b 1e30}
  const ExtractionGraph with_inf(2, {0, 0, 1, 1}, {1, inf, inf, 1e30}, {0, 1, 1, 1, 1}, {1}, {0});
  const ExtractionGraph with_minus_inf(2, {0, 0, 1, 1}, {1, 2, -inf, 3}, {0, 1, 1, 1, 1}, {1}, {0});
  for (const IlpBackend backend : backends()) {
    INFO("backend " << tensat::to_string(backend));
    const auto result = exact(with_inf, backend);
    CHECK(result.status == tensat::ExtractionStatus::Optimal);
    CHECK(result.dag_cost == 1 + 1e30);
    CHECK(result.choice == std::vector<std::uint32_t>{0, 3});
    try {
      exact(with_minus_inf, backend);
      FAIL("no CostError");
    } catch (const tensat::CostError& e) {
      CHECK(e.node() == 2);
    }
  }
}

TEST_CASE("ilp: a DAG cost that overflows a double is a CostError, never an optimal infinity") {
  // root = f(x, y), x = a, y = b, each costing 1e308: every extraction's DAG cost is 3e308.
  const ExtractionGraph g(3, {0, 1, 2}, {1e308, 1e308, 1e308}, {0, 2, 2, 2}, {1, 2}, {0});
  for (const IlpBackend backend : backends()) {
    INFO("backend " << tensat::to_string(backend));
    CHECK_THROWS_AS(exact(g, backend), tensat::Error);
    try {
      exact(g, backend);
    } catch (const tensat::CostError& e) {
      CHECK(e.node() == ExtractionGraph::kNone);
      CHECK(std::string(e.what()).find("overflows a double") != std::string::npos);
    }
  }
  // Where one extraction overflows and another does not, the one that does not.
  //   root = {f(x, y) 1e308, g 1}, as above
  const ExtractionGraph either(3, {0, 0, 1, 2}, {1e308, 1, 1e308, 1e308}, {0, 2, 2, 2, 2}, {1, 2},
                               {0});
  for (const IlpBackend backend : backends()) {
    const auto result = exact(either, backend);
    CHECK(result.status == tensat::ExtractionStatus::Optimal);
    CHECK(result.dag_cost == 1.0);
  }
}
