// Extraction over the ExtractionGraph view: the tree-optimal extractor against extraction-gym's
// oracles (shared/data/extraction-gym/oracles.csv), validity checks, tree and DAG costs.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gym_oracles.h"

#include <tensat/extract/extraction.h>
#include <tensat/extract/ilp.h>
#include <tensat/io/json.h>
#include <tensat/tensat.h>

using tensat::ExtractionGraph;

namespace {

// A small view: classes 0 (root) = {f(1, 1) cost 1, g(2) cost 10}, 1 = {a cost 3}, 2 = {b cost 1}.
ExtractionGraph small() {
  return ExtractionGraph(3, {0, 0, 1, 2}, {1, 10, 3, 1}, {0, 2, 3, 3, 3}, {1, 1, 2}, {0});
}

}  // namespace

TEST_CASE(
    "extraction: tree-optimal equals tree_opt on every extraction-gym file, valid and never below "
    "the DAG optimum") {
  if (!gym::available()) {
    TENSAT_SKIP(gym::kDir << " is absent (shared/ is not beside the checkout)");
  }
  std::size_t checked = 0;
  for (const auto& row : gym::rows()) {
    if (row.status == "none") continue;  // no usable root (tests the reader, see json_test)
    INFO(row.path);
    const auto serialized = tensat::read_egraph_json((gym::kDir / row.path).string());
    const ExtractionGraph graph = tensat::to_extraction_graph(serialized);
    const auto result = tensat::extract_tree(graph);
    CHECK(gym::approx(result.tree_cost, row.tree_opt));
    CHECK(result.status == tensat::ExtractionStatus::Optimal);
    const auto problem = tensat::check_extraction(graph, result.choice);
    CHECK_FALSE(problem.has_value());
    if (!problem) {
      CHECK(gym::approx(tensat::tree_cost(graph, result.choice), result.tree_cost));
      CHECK(gym::approx(tensat::dag_cost(graph, result.choice), result.dag_cost));
      if (row.status == "proven") CHECK(gym::at_least(result.dag_cost, row.ilp_best));
    }
    ++checked;
  }
  CHECK(checked >= 100);
}

TEST_CASE("extraction: tree vs DAG cost on a small graph, and the checker's complaints") {
  const ExtractionGraph g = small();
  const auto result = tensat::extract_tree(g);
  CHECK(result.choice[0] == 0u);  // f(a, a): 1 + 3 + 3 = 7 < g(b) = 11
  CHECK(result.tree_cost == 7.0);
  CHECK(result.dag_cost == 4.0);                      // a paid once
  CHECK(result.choice[2] == ExtractionGraph::kNone);  // b is not reachable
  CHECK(tensat::check_extraction(g, {1, ExtractionGraph::kNone, 3}) == std::nullopt);
  CHECK(tensat::dag_cost(g, {1, ExtractionGraph::kNone, 3}) == 11.0);
  CHECK_THAT(*tensat::check_extraction(g, {0, ExtractionGraph::kNone, 3}),
             Catch::Contains("no chosen node"));
  CHECK_THAT(*tensat::check_extraction(g, {2, 2, 3}), Catch::Contains("not one of its nodes"));
  CHECK_THAT(*tensat::check_extraction(g, {0, 2}), Catch::Contains("entries"));
  // A cycle: class 0 = {h(0)}, plus a leaf.
  const ExtractionGraph cyclic(1, {0, 0}, {1, 5}, {0, 1, 1}, {0}, {0});
  CHECK_THAT(*tensat::check_extraction(cyclic, {0}), Catch::Contains("cycle"));
  CHECK(tensat::extract_tree(cyclic).choice[0] == 1u);
  // A class with no finite term.
  const ExtractionGraph hopeless(1, {0}, {1}, {0, 1}, {0}, {0});
  CHECK_THROWS_AS(tensat::extract_tree(hopeless), tensat::Error);
  CHECK_THROWS_AS(ExtractionGraph(1, {0}, {std::nan("")}, {0, 0}, {}, {0}), tensat::Error);
}

TEST_CASE("extraction: negative costs on an acyclic class graph are solved exactly") {
  // Root = {r(1) cost 0, leaf cost 0}; class 1 = {s(2) cost -5, leaf cost 0}; class 2 = {leaf 1}.
  // Knuth would finalize class 0 with its leaf (0) before seeing r(s(leaf)) = 0 - 5 + 1 = -4.
  const ExtractionGraph g(3, {0, 0, 1, 1, 2}, {0, 0, -5, 0, 1}, {0, 1, 1, 2, 2, 2}, {1, 2}, {0});
  const auto result = tensat::extract_tree(g);
  CHECK(result.status == tensat::ExtractionStatus::Optimal);
  CHECK(result.tree_cost == -4.0);
}

TEST_CASE("extraction: the view of an EGraph extracts what TreeExtractor finds") {
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(* (+ a 0) 1)"))
      .run({tensat::rewrite<L>("add-0", "(+ ?x 0)", "?x"),
            tensat::rewrite<L>("mul-1", "(* ?x 1)", "?x")});
  const auto& egraph = runner.egraph();
  const auto graph =
      ExtractionGraph::from_egraph(egraph, runner.roots(), [](const L&) { return 1.0; });
  const auto result = tensat::extract_tree(graph);
  const auto [cost, best] =
      tensat::TreeExtractor(egraph, tensat::AstSize{}).find_best(runner.roots()[0]);
  CHECK(result.tree_cost == static_cast<double>(cost));
  CHECK(best.to_string() == "a");
}

TEST_CASE(
    "extraction: a DAG extraction of an EGraph back as a RecExpr, shared subterms stored once") {
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(* (f a) 2)"))
      .run({tensat::rewrite<L>("double", "(* ?x 2)", "(+ ?x ?x)")});
  const auto& egraph = runner.egraph();
  std::size_t calls = 0;
  // The two-argument form sees the class (here only to count calls; a tensor cost reads shapes).
  auto cost = [&](const L& node, const tensat::EGraph<L>::EClass& eclass) {
    ++calls;
    CHECK(egraph.find(eclass.id) == eclass.id);
    const std::string op = node.op_name();
    return op == "*" ? 10.0 : op == "+" ? 1.0 : op == "f" ? 20.0 : 1.0;
  };
  std::vector<tensat::Id> node_ids;
  const auto graph = ExtractionGraph::from_egraph(egraph, runner.roots(), cost, &node_ids);
  CHECK(calls == egraph.total_number_of_nodes());
  // Tree cost: (* (f a) 2) = 32 < (+ (f a) (f a)) = 43. DAG cost: 22 (f a paid once) < 32.
  const auto tree = tensat::extract_tree(graph);
  CHECK(tree.tree_cost == 32.0);
  CHECK(tensat::to_recexpr(egraph, graph, node_ids, tree).to_string() == "(* (f a) 2)");
  const auto dag = tensat::extract_ilp(graph);
  CHECK(dag.dag_cost == 22.0);
  CHECK(dag.status == tensat::ExtractionStatus::Optimal);
  const auto expr = tensat::to_recexpr(egraph, graph, node_ids, dag);
  CHECK(expr.to_string() == "(+ (f a) (f a))");
  CHECK(expr.size() == 3);  // a, (f a), + : the shared (f a) once
  CHECK_THROWS_AS(tensat::to_recexpr(egraph, graph, node_ids, dag, 1), tensat::Error);
  CHECK_THROWS_AS(tensat::to_recexpr(egraph, graph, {}, dag), tensat::Error);
}

TEST_CASE("extraction: to_recexpr emits depth first, a node's first child's subgraph first") {
  // (h (g (f a) b) (k c d)): every node of the first operand's subgraph comes before the second's,
  // in the order the program is written; the reverse order would start with (k c d).
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(h (g (f a) b) (k c d))")).run({});
  const auto& egraph = runner.egraph();
  std::vector<tensat::Id> node_ids;
  const auto graph = ExtractionGraph::from_egraph(
      egraph, runner.roots(), [](const L&) { return 1.0; }, &node_ids);
  const auto expr = tensat::to_recexpr(egraph, graph, node_ids, tensat::extract_tree(graph));
  std::string order;
  for (std::size_t i = 0; i < expr.size(); ++i)
    order += std::string(expr[tensat::Id(i)].op_name()) + " ";
  CHECK(order == "a f b g c d k h ");
  CHECK(expr.to_string() == "(h (g (f a) b) (k c d))");
}
