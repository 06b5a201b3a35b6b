// egraph-serialize JSON: every e-graph of extraction-gym (shared/data) read, checked against the
// counts in oracles.csv, written and read back unchanged; malformed input; export from an EGraph.
#include <catch2/catch.hpp>

#include "gym_oracles.h"
#include "support/skip.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <tensat/io/json.h>
#include <tensat/tensat.h>

namespace fs = std::filesystem;
using tensat::JsonError;
using tensat::SerializedEGraph;
using tensat::UnknownRoots;

namespace {

struct OracleRow {
  std::string path;
  std::size_t nodes = 0, classes = 0, roots = 0;
};

std::vector<OracleRow> oracle_rows() {
  std::vector<OracleRow> rows;
  std::ifstream in(gym::kDir / "oracles.csv");
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
  if (!fs::exists(gym::kDir / "oracles.csv")) {
    TENSAT_SKIP(gym::kDir << " is absent (shared/ is not beside the checkout)");
  }
  const auto rows = oracle_rows();
  REQUIRE(rows.size() >= 100);
  std::size_t dropped_files = 0;
  for (const auto& row : rows) {
    INFO(row.path);
    const std::string path = (gym::kDir / row.path).string();
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

namespace {

/// The JsonError that parsing `text` as "in.json" throws (a test failure if none).
JsonError json_error(const std::string& text) {
  try {
    (void)tensat::parse_egraph_json(text, "in.json");
  } catch (const JsonError& e) {
    return e;
  }
  FAIL("expected JsonError for " << text);
  return JsonError("", std::nullopt, "");
}

}  // namespace

TEST_CASE("json: malformed input gives JsonError with source, offset and reason") {
  const JsonError syntax = json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1",}}})");
  CHECK(syntax.source() == "in.json");
  CHECK(syntax.offset() == 42);
  CHECK_THAT(syntax.what(), Catch::Contains("in.json: offset 42"));
  CHECK_FALSE(
      json_error(R"({"nodes": {"a": {"op": "f", "children": ["zz"], "eclass": "1"}}})").offset());
  CHECK_THAT(
      json_error(R"({"nodes": {"a": {"op": "f", "children": ["zz"], "eclass": "1"}}})").reason(),
      Catch::Contains("dangling child 'zz'"));
  CHECK_THAT(
      json_error(R"({"nodes": {"a": {"op": "f", "children": ["1"], "eclass": "2"}}})").reason(),
      Catch::Contains("dangling child '1'"));  // names neither a node nor a class
  CHECK_THAT(json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "root_eclasses": ["9"]})")
                 .reason(),
             Catch::Contains("root '9' names no class"));
  CHECK_THAT(json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1", "cost": "NaN"}}})").reason(),
             Catch::Contains("must be a number"));
  CHECK(json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1", "cost": NaN}}})").offset() ==
        51u);  // at the N: not JSON
  CHECK_THAT(json_error(R"({"nodes": {"a": {"op": "x"}}})").reason(),
             Catch::Contains("no \"eclass\""));
  CHECK_THAT(json_error(R"({"nodes": {"a": {"eclass": "1"}}})").reason(),
             Catch::Contains("no string \"op\""));
  CHECK_THAT(json_error(R"([1, 2])").reason(), Catch::Contains("top level"));
  CHECK_THAT(json_error(R"({"roots": []})").reason(), Catch::Contains("missing \"nodes\""));
  CHECK_THAT(json_error("").what(), Catch::Contains("in.json"));
  CHECK_THROWS_AS(tensat::read_egraph_json("/nonexistent/file.json"), JsonError);
  // Drop keeps the known roots and reports the others.
  const auto dropped = tensat::parse_egraph_json(
      R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "root_eclasses": ["1", "9"]})", "in.json",
      UnknownRoots::Drop);
  CHECK(dropped.root_eclasses == std::vector<std::string>{"1"});
  CHECK(dropped.dropped_roots == std::vector<std::string>{"9"});
}

TEST_CASE("json: a number out of a double's range, anywhere, is a JsonError at its offset") {
  // nlohmann throws its own out_of_range for these; the CLI would call that an internal error.
  for (const std::string text :
       {R"({"nodes": {"a": {"op": "x", "eclass": "1", "cost": 1e999}}})",
        R"({"nodes": {"a": {"op": "x", "eclass": -1e999}}})",
        R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "class_data": {"1": {"w": [2, 1E+999]}}})",
        R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "unknown": 1e999})"}) {
    INFO(text);
    const JsonError e = json_error(text);
    const auto at = text.find("e999") != std::string::npos ? text.find("e999") : text.find("E+999");
    REQUIRE(e.offset());
    CHECK(*e.offset() == text.find_last_of(" [", at) + 1);  // the number's first byte
    CHECK_THAT(e.reason(), Catch::Contains("number overflow"));
    CHECK_THAT(e.what(), Catch::StartsWith("in.json: offset "));
  }
}

TEST_CASE("json: integer ids are read exactly; other numbers as ids are rejected") {
  // 2^64 - 1 used to go through long long and become "-1", merging it with class "-1": the
  // root's only node (cost 5) was then extracted as the cheaper node of the other class.
  const auto g = tensat::parse_egraph_json(R"({"nodes": {
      "a": {"op": "big", "eclass": 18446744073709551615, "cost": 5},
      "b": {"op": "neg", "eclass": "-1", "cost": 1},
      "c": {"op": "min", "eclass": -9223372036854775808, "children": [9223372036854775808]},
      "9223372036854775808": {"op": "leaf", "eclass": 3}},
      "root_eclasses": [18446744073709551615, -9223372036854775808]})");
  CHECK(g.nodes[g.find_node("a")].eclass == "18446744073709551615");
  CHECK(g.nodes[g.find_node("b")].eclass == "-1");
  CHECK(g.nodes[g.find_node("c")].eclass == "-9223372036854775808");
  CHECK(g.nodes[g.find_node("c")].children == std::vector<std::string>{"9223372036854775808"});
  CHECK(g.classes().size() == 4);
  CHECK(g.root_eclasses ==
        std::vector<std::string>{"18446744073709551615", "-9223372036854775808"});
  const auto graph = tensat::to_extraction_graph(g);
  const auto tree = tensat::extract_tree(graph);
  CHECK(tree.tree_cost == 5 + 1 + 1);  // big; min(leaf)
  CHECK(g.nodes[tree.choice[graph.roots()[0]]].op == "big");
  // A fraction, an exponent or an integer beyond 64 bits would not be the id written.
  for (const char* id : {"1.5", "1e3", "18446744073709551616", "-9223372036854775809"}) {
    INFO(id);
    const JsonError e =
        json_error(fmt::format(R"({{"nodes": {{"a": {{"op": "x", "eclass": {}}}}}}})", id));
    CHECK_THAT(
        e.reason(),
        Catch::Contains("\"eclass\" of node 'a' must be a string or an integer id within 64 bits"));
  }
  CHECK_THAT(json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "root_eclasses": [1.0]})")
                 .reason(),
             Catch::Contains("a root must be a string or an integer id"));
  CHECK_THAT(
      json_error(R"({"nodes": {"a": {"op": "x", "eclass": "1", "children": [true]}}})").reason(),
      Catch::Contains("a child of node 'a' must be a string or an integer id, got boolean"));
}

TEST_CASE("json: a key named twice in an object is a JsonError naming it, at the second one") {
  // Two nodes "a": the DOM kept the last, and the first's class vanished ("root names no class").
  const std::string nodes =
      R"({"nodes": {"a": {"op": "x", "eclass": "1"}, "a": {"op": "y", "eclass": "2"}},
                               "root_eclasses": ["1"]})";
  const JsonError e = json_error(nodes);
  CHECK(e.offset() == nodes.rfind("\"a\""));
  CHECK_THAT(e.reason(), Catch::Contains("duplicate key 'a'"));
  // Anywhere: a node's field, the top level; a key with escaped quotes and backslashes.
  const std::string op = R"({"nodes": {"a": {"op": "x", "eclass": "1", "op": "y"}}})";
  CHECK(json_error(op).offset() == op.rfind("\"op\""));
  const std::string top = R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "nodes": {}})";
  CHECK(json_error(top).offset() == top.rfind("\"nodes\""));
  const std::string escaped =
      R"({"nodes": {"\"a\\": {"op": "x", "eclass": "1"}, "\"a\\" : {"op": "x", "eclass": "1"}}})";
  const JsonError esc = json_error(escaped);
  CHECK(esc.offset() == escaped.rfind(R"("\"a\\")"));
  CHECK_THAT(esc.reason(), Catch::Contains(R"(duplicate key '"a\')"));
  // Equal keys in different objects are fine.
  CHECK(tensat::parse_egraph_json(
            R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "class_data": {"a": {"a": 1}}})")
            .nodes.size() == 1);
}

TEST_CASE("json: nesting deeper than kMaxJsonDepth is a JsonError, not a stack overflow") {
  // Copying or dumping an nlohmann value recurses once per level: 10^5 levels crashed the reader.
  auto with_class_data = [](std::size_t depth) {
    return R"({"nodes": {"a": {"op": "x", "eclass": "1"}}, "class_data": {"1": )" +
           std::string(depth, '[') + std::string(depth, ']') + "}}";
  };
  const std::size_t deepest = tensat::kMaxJsonDepth - 2;  // the top level and class_data are two
  const auto ok = tensat::parse_egraph_json(with_class_data(deepest));
  CHECK(ok.class_data.at("1").dump() == std::string(deepest, '[') + std::string(deepest, ']'));
  const std::string too_deep = with_class_data(deepest + 1);
  const JsonError e = json_error(too_deep);
  CHECK(e.offset() == too_deep.rfind('['));
  CHECK_THAT(e.reason(), Catch::Contains("deeper than 128 levels"));
  CHECK(json_error(with_class_data(100000)).offset() == too_deep.rfind('['));
  // Also as an id, where the error message used to dump the value.
  const std::string id =
      R"({"nodes": {"a": {"op": "x", "eclass": )" + std::string(100000, '[') + "}}}";
  CHECK_THAT(json_error(id).reason(), Catch::Contains("deeper than"));
}

TEST_CASE("json: a file that cannot be read is a JsonError saying why, without an offset") {
  // A directory used to be read as empty text: "offset 0: parse error".
  const fs::path dir = fs::temp_directory_path() / "tensat_json_test_dir.json";
  fs::create_directories(dir);
  try {
    (void)tensat::read_egraph_json(dir.string());
    FAIL("a directory was read");
  } catch (const JsonError& e) {
    CHECK(e.source() == dir.string());
    CHECK_FALSE(e.offset());
    CHECK_THAT(e.reason(), Catch::Contains("is a directory"));
  }
  fs::remove(dir);
  try {
    (void)tensat::read_egraph_json("/nonexistent/file.json");
    FAIL("a missing file was read");
  } catch (const JsonError& e) {
    CHECK_FALSE(e.offset());
    CHECK_THAT(e.reason(), Catch::Contains("cannot open the file"));
  }
}

TEST_CASE("json: what JSON cannot hold is a JsonError when writing, not an nlohmann exception") {
  SerializedEGraph g;
  g.add_node({"a", "x", {}, "1", 1.0, false});
  g.root_eclasses = {"1"};
  CHECK(tensat::parse_egraph_json(tensat::to_egraph_json(g)).nodes.size() == 1);
  // A symbol read from arbitrary bytes (parse_expr accepts any atom) is not UTF-8.
  using L = tensat::SymbolLang;
  tensat::EGraph<L> egraph;
  const tensat::Id root = egraph.add_expr(tensat::parse_expr<L>("(f \xff)"));
  egraph.rebuild();
  try {
    (void)tensat::to_egraph_json(tensat::serialize(egraph, {root}));
    FAIL("invalid UTF-8 was written");
  } catch (const JsonError& e) {
    CHECK(e.source() == "to_egraph_json");
    CHECK_THAT(e.reason(), Catch::Contains("not valid UTF-8"));
  }
  // An infinite cost would be written as null, which the reader rejects.
  g.nodes[0].cost = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(tensat::to_egraph_json(g),
                    Catch::Contains("node 'a' has a cost that is not finite"));
}

TEST_CASE("json: export of an EGraph reads back with its classes, children and costs") {
  using L = tensat::SymbolLang;
  tensat::EGraph<L> egraph;
  const tensat::Id root = egraph.add_expr(tensat::parse_expr<L>("(+ (* a 2) (* a 2))"));
  const tensat::Id shift = egraph.add_expr(tensat::parse_expr<L>("(<< a 1)"));
  egraph.unite(*egraph.lookup_expr(tensat::parse_expr<L>("(* a 2)")), shift);
  egraph.rebuild();
  const auto g =
      tensat::serialize(egraph, {root}, [](const L& n) { return n.op_name() == "*" ? 4.0 : 1.0; });
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
