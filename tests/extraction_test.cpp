// Extraction over the ExtractionGraph view: the tree-optimal extractor against extraction-gym's
// oracles (shared/data/extraction-gym/oracles.csv), validity checks, tree and DAG costs.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <tensat/extract/extraction.h>
#include <tensat/io/json.h>
#include <tensat/tensat.h>

namespace fs = std::filesystem;
using tensat::ExtractionGraph;

namespace {

const fs::path kGym = fs::path(TENSAT_SHARED_DATA_DIR) / "extraction-gym";

struct Row {
  std::string path, status;
  double tree_opt = 0, ilp_best = 0;
};

std::vector<Row> rows() {
  std::vector<Row> result;
  std::ifstream in(kGym / "oracles.csv");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    cells.resize(14);
    Row r{cells[0], cells[11]};
    if (!cells[7].empty()) r.tree_opt = std::stod(cells[7]);
    if (!cells[10].empty()) r.ilp_best = std::stod(cells[10]);
    result.push_back(r);
  }
  return result;
}

bool approx(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }

// A small view: classes 0 (root) = {f(1, 1) cost 1, g(2) cost 10}, 1 = {a cost 3}, 2 = {b cost 1}.
ExtractionGraph small() {
  return ExtractionGraph(3, {0, 0, 1, 2}, {1, 10, 3, 1}, {0, 2, 3, 3, 3}, {1, 1, 2}, {0});
}

}  // namespace

TEST_CASE("extraction: tree-optimal equals tree_opt on every extraction-gym file, valid and never below the DAG optimum") {
  if (!fs::exists(kGym / "oracles.csv")) {
    WARN("skipped: " << kGym << " is absent (shared/ is not beside the checkout)");
    return;
  }
  std::size_t checked = 0;
  for (const auto& row : rows()) {
    if (row.status == "none") continue;  // no usable root (tests the reader, see json_test)
    INFO(row.path);
    const auto serialized = tensat::read_egraph_json((kGym / row.path).string());
    const ExtractionGraph graph = tensat::to_extraction_graph(serialized);
    const auto result = tensat::extract_tree(graph);
    CHECK(approx(result.tree_cost, row.tree_opt));
    CHECK(result.status == tensat::ExtractionStatus::Optimal);
    const auto problem = tensat::check_extraction(graph, result.choice);
    CHECK_FALSE(problem.has_value());
    if (!problem) {
      CHECK(approx(tensat::tree_cost(graph, result.choice), result.tree_cost));
      CHECK(approx(tensat::dag_cost(graph, result.choice), result.dag_cost));
      if (row.status == "proven")
        CHECK(result.dag_cost >= row.ilp_best - 1e-6 * std::max(1.0, std::abs(row.ilp_best)));
    }
    ++checked;
  }
  CHECK(checked >= 100);
}

TEST_CASE("extraction: tree vs DAG cost on a small graph, and the checker's complaints") {
  const ExtractionGraph g = small();
  const auto result = tensat::extract_tree(g);
  CHECK(result.choice[0] == 0u);         // f(a, a): 1 + 3 + 3 = 7 < g(b) = 11
  CHECK(result.tree_cost == 7.0);
  CHECK(result.dag_cost == 4.0);         // a paid once
  CHECK(result.choice[2] == ExtractionGraph::kNone);  // b is not reachable
  CHECK(tensat::check_extraction(g, {1, ExtractionGraph::kNone, 3}) == std::nullopt);
  CHECK(tensat::dag_cost(g, {1, ExtractionGraph::kNone, 3}) == 11.0);
  CHECK_THAT(*tensat::check_extraction(g, {0, ExtractionGraph::kNone, 3}), Catch::Contains("no chosen node"));
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
      .run({tensat::rewrite<L>("add-0", "(+ ?x 0)", "?x"), tensat::rewrite<L>("mul-1", "(* ?x 1)", "?x")});
  const auto& egraph = runner.egraph();
  const auto graph = ExtractionGraph::from_egraph(egraph, runner.roots(), [](const L&) { return 1.0; });
  const auto result = tensat::extract_tree(graph);
  const auto [cost, best] = tensat::TreeExtractor(egraph, tensat::AstSize{}).find_best(runner.roots()[0]);
  CHECK(result.tree_cost == static_cast<double>(cost));
  CHECK(best.to_string() == "a");
}
