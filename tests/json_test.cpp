// egraph-serialize JSON: every e-graph of extraction-gym (shared/data) read, checked against the
// counts in oracles.csv, written and read back unchanged; malformed input; export from an EGraph.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <tensat/io/json.h>
#include <tensat/tensat.h>

namespace fs = std::filesystem;
using tensat::JsonError;
using tensat::SerializedEGraph;
using tensat::UnknownRoots;

namespace {

const fs::path kGym = fs::path(TENSAT_SHARED_DATA_DIR) / "extraction-gym";

struct OracleRow {
  std::string path;
  std::size_t nodes = 0, classes = 0, roots = 0;
};

std::vector<OracleRow> oracle_rows() {
  std::vector<OracleRow> rows;
  std::ifstream in(kGym / "oracles.csv");
  std::string line;
  std::getline(in, line);  // header: path,family,nodes,classes,roots,...
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (cells.size() < 5) continue;
    rows.push_back({cells[0], std::stoul(cells[2]), std::stoul(cells[3]), std::stoul(cells[4])});
  }
  return rows;
}

void require_same(const SerializedEGraph& a, const SerializedEGraph& b) {
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (const auto& n : a.nodes) {
    const auto i = b.find_node(n.id);
    REQUIRE(i != SerializedEGraph::npos);
    const auto& m = b.nodes[i];
    REQUIRE(m.op == n.op);
    REQUIRE(m.children == n.children);
    REQUIRE(m.eclass == n.eclass);
    REQUIRE(m.cost == n.cost);
    REQUIRE(m.subsumed == n.subsumed);
  }
  REQUIRE(a.root_eclasses == b.root_eclasses);
  REQUIRE(a.class_data == b.class_data);
}

}  // namespace

TEST_CASE("json: every extraction-gym file reads with oracles.csv's counts and round-trips") {
  if (!fs::exists(kGym / "oracles.csv")) {
    TENSAT_SKIP(kGym << " is absent (shared/ is not beside the checkout)");
  }
  const auto rows = oracle_rows();
  REQUIRE(rows.size() >= 100);
  std::size_t dropped_files = 0;
  for (const auto& row : rows) {
    INFO(row.path);
    const std::string path = (kGym / row.path).string();
    const SerializedEGraph g = tensat::read_egraph_json(path, UnknownRoots::Drop);
    CHECK(g.nodes.size() == row.nodes);
    CHECK(g.classes().size() == row.classes);
    CHECK(g.root_eclasses.size() + g.dropped_roots.size() == row.roots);
    if (!g.dropped_roots.empty()) {
      ++dropped_files;
      CHECK_THROWS_AS(tensat::read_egraph_json(path, UnknownRoots::Reject), JsonError);
    }
    require_same(g, tensat::parse_egraph_json(tensat::to_egraph_json(g)));
  }
  CHECK(dropped_files == 1);  // lean-egg's "Activations #3.json" (README: non-canonical roots)
}

TEST_CASE("json: lenient defaults and integer ids") {
  const auto g = tensat::parse_egraph_json(
      R"({"nodes": {"a": {"op": "x", "eclass": 1}, "b": {"op": "f", "children": ["a"], "eclass": "2", "cost": 2.5,
          "extra": true}}, "root_eclasses": [2]})");
  REQUIRE(g.nodes.size() == 2);
  const auto& a = g.nodes[g.find_node("a")];
  CHECK(a.cost == 1.0);
  CHECK(a.children.empty());
  CHECK(a.eclass == "1");
  CHECK_FALSE(a.subsumed);
  CHECK(g.nodes[g.find_node("b")].cost == 2.5);
  CHECK(g.root_eclasses == std::vector<std::string>{"2"});
  CHECK(g.class_data.empty());
}

TEST_CASE("json: children named by class id are read as that class (lenient input)") {
  // Integer ids, and children that name classes (10, "20") instead of nodes.
  const auto g = tensat::parse_egraph_json(R"({"nodes": {
      "1": {"op": "a", "eclass": 10, "cost": 2}, "4": {"op": "b", "eclass": 10, "cost": 3},
      "2": {"op": "f", "children": [10, "1"], "eclass": "20"},
      "3": {"op": "g", "children": ["20"], "eclass": 30}}, "root_eclasses": [30]})");
  const auto& f = g.nodes[g.find_node("2")];
  REQUIRE(f.children.size() == 2);
  CHECK(g.nodes[g.find_node(f.children[0])].eclass == "10");  // class 10, via one of its nodes
  CHECK(f.children[1] == "1");                                // a node id stays as it is
  CHECK(g.nodes[g.find_node("3")].children == std::vector<std::string>{"2"});
  const auto graph = tensat::to_extraction_graph(g);
  CHECK(tensat::extract_tree(graph).tree_cost == 1 + 1 + 2 + 2);  // g(f(a, a))
  // And it round-trips in the strict form (children as node ids).
  const auto back = tensat::parse_egraph_json(tensat::to_egraph_json(g));
  CHECK(back.nodes[back.find_node("2")].children == f.children);
}

TEST_CASE("json: malformed input gives JsonError with source, offset and reason") {
  auto error = [](const std::string& text) -> JsonError {
    try {
      (void)tensat::parse_egraph_json(text, "in.json");
    } catch (const JsonError& e) {
      return e;
    }
    FAIL("expected JsonError for " << text);
    return JsonError("", std::nullopt, "");
  };
  const JsonError syntax = error(R"({"nodes": {"a": {"op": "x", "eclass": "1",}}})");
  CHECK(syntax.source() == "in.json");
  CHECK(syntax.offset() == 42);
  CHECK_THAT(syntax.what(), Catch::Contains("in.json: offset 42"));
  CHECK_FALSE(error(R"({"nodes": {"a": {"op": "f", "children": ["zz"], "eclass": "1"}}})").offset());
  CHECK_THAT(error(R"({"nodes": {"a": {"op": "f", "children": ["zz"], "eclass": "1"}}})").reason(),
             Catch::Contains("dangling child 'zz'"));
  CHECK_THAT(error(R"({"nodes": {"a": {"op": "f", "children": ["1"], "eclass": "2"}}})").reason(),
             Catch::Contains("dangling child '1'"));  // names neither a node nor a class
  CHECK_THAT(error(R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "root_eclasses": ["9"]})").reason(),
             Catch::Contains("root '9' names no class"));
  CHECK_THAT(error(R"({"nodes": {"a": {"op": "x", "eclass": "1", "cost": "NaN"}}})").reason(),
             Catch::Contains("must be a number"));
  CHECK(error(R"({"nodes": {"a": {"op": "x", "eclass": "1", "cost": NaN}}})").offset() == 51u);  // at the N: not JSON
  CHECK_THAT(error(R"({"nodes": {"a": {"op": "x"}}})").reason(), Catch::Contains("no \"eclass\""));
  CHECK_THAT(error(R"({"nodes": {"a": {"eclass": "1"}}})").reason(), Catch::Contains("no string \"op\""));
  CHECK_THAT(error(R"([1, 2])").reason(), Catch::Contains("top level"));
  CHECK_THAT(error(R"({"roots": []})").reason(), Catch::Contains("missing \"nodes\""));
  CHECK_THAT(error("").what(), Catch::Contains("in.json"));
  CHECK_THROWS_AS(tensat::read_egraph_json("/nonexistent/file.json"), JsonError);
  // Drop keeps the known roots and reports the others.
  const auto dropped = tensat::parse_egraph_json(
      R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "root_eclasses": ["1", "9"]})", "in.json", UnknownRoots::Drop);
  CHECK(dropped.root_eclasses == std::vector<std::string>{"1"});
  CHECK(dropped.dropped_roots == std::vector<std::string>{"9"});
}

TEST_CASE("json: export of an EGraph reads back with its classes, children and costs") {
  using L = tensat::SymbolLang;
  tensat::EGraph<L> egraph;
  const tensat::Id root = egraph.add_expr(tensat::parse_expr<L>("(+ (* a 2) (* a 2))"));
  const tensat::Id shift = egraph.add_expr(tensat::parse_expr<L>("(<< a 1)"));
  egraph.unite(*egraph.lookup_expr(tensat::parse_expr<L>("(* a 2)")), shift);
  egraph.rebuild();
  const auto g = tensat::serialize(egraph, {root}, [](const L& n) { return n.op_name() == "*" ? 4.0 : 1.0; });
  CHECK(g.nodes.size() == egraph.total_number_of_nodes());
  CHECK(g.classes().size() == egraph.number_of_classes());
  const auto back = tensat::parse_egraph_json(tensat::to_egraph_json(g, -1));
  require_same(g, back);
  REQUIRE(back.root_eclasses.size() == 1);
  double mul_cost = 0;
  std::set<std::string> classes_of_mul_and_shift;
  for (const auto& n : back.nodes) {
    if (n.op == "*") mul_cost = n.cost;
    if (n.op == "*" || n.op == "<<") classes_of_mul_and_shift.insert(n.eclass);
    for (const auto& child : n.children) CHECK(back.find_node(child) != SerializedEGraph::npos);
  }
  CHECK(mul_cost == 4.0);
  CHECK(classes_of_mul_and_shift.size() == 1);  // united
}

TEST_CASE("json: export writes names that are not UTF-8 with U+FFFD instead of throwing") {
  // Op names can come from files that hold any bytes (an ONNX model's tensor names).
  using L = tensat::SymbolLang;
  tensat::EGraph<L> egraph;
  const tensat::Id root = egraph.add_expr(tensat::parse_expr<L>("(+ a b\xff)"));
  egraph.rebuild();
  const auto g = tensat::serialize(egraph, {root}, [](const L&) { return 1.0; });
  std::string text;
  REQUIRE_NOTHROW(text = tensat::to_egraph_json(g, -1));
  const auto back = tensat::parse_egraph_json(text);
  std::set<std::string> ops;
  for (const auto& n : back.nodes) ops.insert(n.op);
  CHECK(ops.count("b\xEF\xBF\xBD") == 1);
}
