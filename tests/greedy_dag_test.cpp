// The greedy DAG extractor: validity and quality over extraction-gym, the inputs where plain
// greedy is known to miss (shared subterms worth paying for once), and random e-graphs against
// a brute-force optimum.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <cmath>
#include <random>

#include "gym_oracles.h"

#include <tensat/extract/cost_sets.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/json.h>

using tensat::ExtractionGraph;

namespace {

tensat::Extraction greedy_of(const std::string& path, bool local_search = true) {
  const auto graph =
      tensat::to_extraction_graph(tensat::read_egraph_json((gym::kDir / path).string()));
  tensat::GreedyDagOptions options;
  options.local_search = local_search;
  return tensat::extract_greedy_dag(graph, options);
}

}  // namespace

TEST_CASE(
    "greedy_dag: on every extraction-gym file, valid, no worse than the tree choice's DAG cost, "
    "never below the optimum") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent (shared/ is not beside the checkout)");
  }
  std::size_t checked = 0, optimal = 0, proven = 0;
  double log_gap = 0;
  for (const auto& row : gym::rows()) {
    if (row.status == "none") continue;
    INFO(row.path);
    const auto graph =
        tensat::to_extraction_graph(tensat::read_egraph_json((gym::kDir / row.path).string()));
    const auto greedy = tensat::extract_greedy_dag(graph);
    const auto tree = tensat::extract_tree(graph);
    const auto problem = tensat::check_extraction(graph, greedy.choice);
    REQUIRE_FALSE(problem.has_value());
    CHECK(gym::approx(tensat::dag_cost(graph, greedy.choice), greedy.dag_cost));
    CHECK(gym::approx(tensat::tree_cost(graph, greedy.choice), greedy.tree_cost));
    CHECK(greedy.dag_cost <= tree.dag_cost + 1e-9 * std::max(1.0, std::abs(tree.dag_cost)));
    CHECK(greedy.status == tensat::ExtractionStatus::Feasible);
    if (row.status == "proven") {
      CHECK(gym::at_least(greedy.dag_cost, row.ilp_best));
      ++proven;
      optimal += gym::approx(greedy.dag_cost, row.ilp_best);
      log_gap +=
          std::log1p((greedy.dag_cost - row.ilp_best) / std::max(1.0, std::abs(row.ilp_best)));
    }
    ++checked;
  }
  CHECK(checked >= 100);
  // Quality is measured in bench/ (bench/RESULTS.md); this only guards against a collapse of it.
  const double geomean_gap = std::expm1(log_gap / static_cast<double>(proven));
  INFO("optimal on " << optimal << " of " << proven << " proven files, geo-mean gap "
                     << geomean_gap * 100 << " %");
  CHECK(geomean_gap <= 0.005);
}

TEST_CASE(
    "greedy_dag: the local search finds shared subterms that pay off only when several classes use "
    "them") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent");
  }
  // choice.json: every list element is g(x_i) (2) or f(i, S, B) (1) with S, B shared: 52 vs 37.
  CHECK(greedy_of("data/dummy_examples/choice.json", false).dag_cost == 52.0);
  CHECK(greedy_of("data/dummy_examples/choice.json").dag_cost == 37.0);
  // A 14-node set cover (optimum 2 of 4 sets) and sharing across two roots (10, not 15).
  CHECK(greedy_of("data/set_covering/test.json").dag_cost == 2.0);
  CHECK(greedy_of("test_data/crafted/multi_root.json").dag_cost == 10.0);
}

TEST_CASE("greedy_dag: a shared product reaches its users through a chain of dead classes") {
  // An n-way merge in miniature: P (9) computed once and split back into G1, G2, G3 through a
  // chain of tuple and remainder classes (each step 0.1), against a leaf of 4 for each G. R1,
  // the remainder after G1, also has a leaf of its own (8), so a dead class's choice does not
  // lead to P. No single class can start the sharing (it would pay 9 for a saving of 4), and a
  // compound move from one G reaches the others only through dead R1 and T2.
  //   G1 = { leaf 4, first(T1) }   T1 = { split(P) }    P = { leaf 9 }
  //   G2 = { leaf 4, first(T2) }   R1 = { second(T1), leaf 8 }
  //   G3 = { leaf 4, second(T2) }  T2 = { split(R1) }
  const ExtractionGraph graph(7, {0, 0, 1, 1, 2, 2, 3, 4, 5, 5, 6},
                              {4, 0.1, 4, 0.1, 4, 0.1, 9, 0.1, 0.1, 8, 0.1},
                              {0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6}, {4, 6, 6, 3, 4, 5}, {0, 1, 2});
  const auto exact = tensat::extract_ilp(graph);
  REQUIRE(exact.status == tensat::ExtractionStatus::Optimal);
  CHECK(exact.dag_cost == Approx(9.6));
  tensat::GreedyDagOptions plain;
  plain.local_search = false;
  CHECK(tensat::extract_greedy_dag(graph, plain).dag_cost == Approx(12.0));
  const auto greedy = tensat::extract_greedy_dag(graph);
  REQUIRE_FALSE(tensat::check_extraction(graph, greedy.choice).has_value());
  CHECK(greedy.dag_cost == Approx(exact.dag_cost));
  CHECK(greedy.choice[0] == 1u);
  CHECK(greedy.choice[5] == 8u);  // R1 re-pointed from its leaf to the split's second part
}

TEST_CASE(
    "greedy_dag: random e-graphs, never below the brute-force optimum and valid, and local search "
    "never hurts") {
  std::mt19937 rng(7);
  std::size_t solvable = 0, optimal = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const bool negative = trial % 4 == 3;
    const auto g = gym::random_graph(rng, 2 + trial % 6, negative ? -6 : 0, 10, trial % 3 == 0);
    const double best = gym::brute_force_dag(g);
    if (!std::isfinite(best)) {
      CHECK_THROWS_AS(tensat::extract_greedy_dag(g), tensat::Error);  // a root without a term
      continue;
    }
    ++solvable;
    INFO("trial " << trial);
    tensat::GreedyDagOptions plain;
    plain.local_search = false;
    const auto without = tensat::extract_greedy_dag(g, plain);
    const auto with = tensat::extract_greedy_dag(g);
    REQUIRE_FALSE(tensat::check_extraction(g, with.choice).has_value());
    REQUIRE_FALSE(tensat::check_extraction(g, without.choice).has_value());
    CHECK(gym::at_least(with.dag_cost, best));
    CHECK(with.dag_cost <= without.dag_cost + 1e-9);
    optimal += gym::approx(with.dag_cost, best);
  }
  CHECK(solvable > 200);
  CHECK(optimal * 10 >= solvable * 9);  // a heuristic, but one that is usually right on tiny graphs
}

TEST_CASE("greedy_dag: bad input") {
  const ExtractionGraph rootless(1, {0}, {1}, {0, 0}, {}, {});
  CHECK_THROWS_AS(tensat::extract_greedy_dag(rootless), tensat::Error);
  const ExtractionGraph hopeless(1, {0}, {1}, {0, 1}, {0}, {0});  // only a self-loop
  CHECK_THROWS_AS(tensat::extract_greedy_dag(hopeless), tensat::Error);
  // A subsumed node is never chosen, even when it is the cheapest.
  const ExtractionGraph subsumed(1, {0, 0}, {1, 5}, {0, 0, 0}, {}, {0}, {true, false});
  CHECK(tensat::extract_greedy_dag(subsumed).choice[0] == 1u);
}

TEST_CASE(
    "greedy_dag: a spent cost-set budget falls back to the tree choice, still valid and polished") {
  // A chain of 300 classes, class i = {leaf of cost 100 + i, node(i - 1) of cost 1}: the sets
  // grow to 300 entries, 45,000 merged in all.
  const std::uint32_t n = 300;
  const ExtractionGraph chain = gym::chain_graph(n);
  tensat::GreedyDagOptions starved;
  starved.cost_set_work = 1000;
  const auto full = tensat::extract_greedy_dag(chain);
  const auto fallback = tensat::extract_greedy_dag(chain, starved);
  REQUIRE_FALSE(tensat::check_extraction(chain, fallback.choice).has_value());
  CHECK(full.dag_cost == 100.0 + (n - 1));  // the leaf of class 0 and n - 1 links
  CHECK(fallback.dag_cost == full.dag_cost);
}

TEST_CASE("greedy_dag: cost sets as tries choose what flat cost sets choose") {
  // Issue 30: the flat sets of a deep e-graph take classes² entries; the tries share their
  // common prefixes. Integer costs: both sum exactly, so their choices must be identical.
  namespace d = tensat::detail;
  const auto never = d::GreedyClock::time_point::max();
  std::mt19937 rng(11);
  const auto same = [&](const ExtractionGraph& g) {
    const d::DistinctChildren dc(g);
    const d::ChildUsers users = d::usable_child_users(g, dc);
    std::vector<std::uint32_t> flat, trie;
    CHECK_FALSE(
        d::cost_set_greedy_with<d::FlatCostSets>(g, dc, users, ~std::uint64_t{0}, never, flat));
    CHECK_FALSE(
        d::cost_set_greedy_with<d::TrieCostSets>(g, dc, users, ~std::uint64_t{0}, never, trie));
    CHECK(flat == trie);
  };
  for (std::uint32_t classes : {3u, 17u, 300u, 5000u})
    for (int trial = 0; trial < 20; ++trial) {
      CAPTURE(classes, trial);
      same(gym::random_graph(rng, classes, trial % 2 == 0 ? 0 : -3, 50, trial % 3 == 0));
    }
  same(gym::chain_graph(4000, 2));
}

TEST_CASE("greedy_dag: a deep e-graph's cost sets fit a budget its flat sets overrun") {
  // A chain of 3,000 classes: flat sets merge 4.5 million entries; tries make ~3 nodes a class.
  namespace d = tensat::detail;
  const ExtractionGraph chain = gym::chain_graph(3000, 2);  // links beat leaves: the sets grow
  const d::DistinctChildren dc(chain);
  const d::ChildUsers users = d::usable_child_users(chain, dc);
  const auto never = d::GreedyClock::time_point::max();
  std::vector<std::uint32_t> flat;
  CHECK(
      d::cost_set_greedy_with<d::FlatCostSets>(chain, dc, users, 1'000'000, never, flat));  // spent
  const std::vector<std::uint32_t> choice = d::cost_set_greedy(chain, dc, users, 1'000'000, never);
  REQUIRE(choice[chain.roots().front()] != ExtractionGraph::kNone);  // the greedy completed
  CHECK_FALSE(tensat::check_extraction(chain, d::reachable_choice(chain, choice)).has_value());
  CHECK(tensat::dag_cost(chain, d::reachable_choice(chain, choice)) == 100.0 + 2999);
}

TEST_CASE(
    "greedy_dag: the local search converges when costs span 18 orders of magnitude around a huge "
    "negative one") {
  // Costs 10^u, u uniform in [-6, 12], and one node of -1e12. A move's cost change is a sum in
  // which terms of 1e12 cancel: its rounding (~1e-4) dwarfs the small costs, and a move taken
  // on that noise alone can be followed by another for ever. Measured in class visits: the
  // search must reach a local optimum within a budget ~100 times what it needs.
  std::mt19937 rng(44);
  std::uniform_real_distribution<double> exponent(-6, 12);
  std::uniform_int_distribution<int> negative_node(0, 120);
  tensat::GreedyDagOptions options;
  options.local_search_work = 5'000'000;
  std::size_t solvable = 0;
  for (int trial = 0; trial < 200; ++trial) {
    INFO("trial " << trial);
    int node = 0;
    const int negative = negative_node(rng);
    const auto g = gym::random_graph_costed(
        rng, 80, [&] { return node++ == negative ? -1e12 : std::pow(10.0, exponent(rng)); });
    tensat::Extraction result;
    try {
      result = tensat::extract_greedy_dag(g, options);
    } catch (const tensat::Error&) {
      continue;  // a root without a finite term
    }
    ++solvable;
    REQUIRE_FALSE(tensat::check_extraction(g, result.choice).has_value());
    CHECK(result.stop == tensat::ExtractionStop::Finished);
  }
  CHECK(solvable > 100);
}

TEST_CASE("greedy_dag: a time limit stops the greedy and the local search with a valid choice") {
  // A chain of 75,000 classes whose tree choice takes every link: one pass of the local search
  // would visit ~n² classes (each class's leaf swap drops the chain under it), far beyond its
  // default budget. With no time at all, the result is the tree-optimal start.
  const std::uint32_t n = 75'000;
  const ExtractionGraph chain = gym::chain_graph(n, 2);
  tensat::GreedyDagOptions options;
  options.time_limit_seconds = 0;
  const auto result = tensat::extract_greedy_dag(chain, options);
  REQUIRE_FALSE(tensat::check_extraction(chain, result.choice).has_value());
  CHECK(result.stop == tensat::ExtractionStop::TimeLimit);
  CHECK(result.dag_cost == 100.0 + (n - 1));
  options.local_search = false;
  CHECK(tensat::extract_greedy_dag(chain, options).stop == tensat::ExtractionStop::TimeLimit);
  // Without a limit the search ends on its work budget instead, and says so.
  tensat::GreedyDagOptions budget;
  budget.local_search_work = 1'000'000;
  CHECK(tensat::extract_greedy_dag(chain, budget).stop == tensat::ExtractionStop::WorkLimit);
  options.time_limit_seconds = -1;
  CHECK_THROWS_AS(tensat::extract_greedy_dag(chain, options), tensat::Error);
  options.time_limit_seconds = std::nan("");
  CHECK_THROWS_AS(tensat::extract_greedy_dag(chain, options), tensat::Error);
}
