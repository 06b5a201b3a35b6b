// GraphViz dot export (tensat/io/dot.h): the structure of the output is parsed back and checked
// against the e-graph, extraction view or term it came from.
#include <catch2/catch.hpp>

#include "gym_oracles.h"
#include "support/skip.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <tensat/io/dot.h>
#include <tensat/io/json.h>
#include <tensat/tensat.h>

#include "math/math_language.h"

namespace fs = std::filesystem;
using tensat::DotOptions;
using tensat::ExtractionGraph;
using tensat::Id;
using tensat::SymbolLang;

namespace {

/// What the tests read back from a cluster-layout export.
struct Parsed {
  std::vector<std::uint32_t> clusters;                  // cluster ids, in order
  std::map<std::uint32_t, std::uint32_t> node_cluster;  // dot node n<i> -> enclosing cluster
  std::map<std::uint32_t, std::string> node_attrs;      // n<i> -> its attribute list
  struct Edge {
    std::uint32_t from, to;
    std::string attrs;
  };
  std::vector<Edge> edges;
  std::size_t lines = 0;
};

// The line shapes of the export, matched by hand rather than with <regex>: GCC 12 under the
// sanitizers warns (-Wmaybe-uninitialized) inside libstdc++'s regex automaton.

/// Whether `line` continues with `literal` at `at`; if so, moves `at` past it.
bool eat(const std::string& line, std::size_t& at, std::string_view literal) {
  if (line.compare(at, literal.size(), literal) != 0) return false;
  at += literal.size();
  return true;
}

/// Reads a decimal number at `at` (one digit at least) into `value`, moving `at` past it.
bool eat_number(const std::string& line, std::size_t& at, std::uint32_t& value) {
  const std::size_t start = at;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9') ++at;
  if (at == start) return false;
  value = static_cast<std::uint32_t>(std::stoul(line.substr(start, at - start)));
  return true;
}

/// `  subgraph cluster_<id> {`
bool match_cluster(const std::string& line, std::uint32_t& id) {
  std::size_t at = 0;
  return eat(line, at, "  subgraph cluster_") && eat_number(line, at, id) &&
         line.substr(at) == " {";
}

/// `  <p><from> -> <p><to>;` or `  <p><from> -> <p><to> [<attrs>];`
bool match_edge(const std::string& line, char prefix, std::uint32_t& from, std::uint32_t& to,
                std::string& attrs) {
  const std::string p(1, prefix);
  std::size_t at = 0;
  if (!(eat(line, at, "  " + p) && eat_number(line, at, from) && eat(line, at, " -> " + p) &&
        eat_number(line, at, to)))
    return false;
  attrs.clear();
  if (line.substr(at) == ";") return true;
  if (!eat(line, at, " [") || line.size() < at + 2 || line.compare(line.size() - 2, 2, "];") != 0)
    return false;
  attrs = line.substr(at, line.size() - 2 - at);
  return true;
}

/// `<one or more spaces><p><id> [<attrs>];`
bool match_node(const std::string& line, char prefix, std::uint32_t& id, std::string& attrs) {
  std::size_t at = line.find_first_not_of(' ');
  if (at == 0 || at == std::string::npos || line[at] != prefix) return false;
  ++at;
  if (!eat_number(line, at, id) || !eat(line, at, " [") || line.size() < at + 2 ||
      line.compare(line.size() - 2, 2, "];") != 0)
    return false;
  attrs = line.substr(at, line.size() - 2 - at);
  return true;
}

Parsed parse(const std::string& dot, char prefix = 'n') {
  Parsed p;
  std::istringstream in(dot);
  std::string line, attrs;
  long current = -1;
  std::uint32_t a = 0, b = 0;
  while (std::getline(in, line)) {
    ++p.lines;
    if (match_cluster(line, a)) {
      current = a;
      p.clusters.push_back(a);
    } else if (line == "  }") {
      current = -1;
    } else if (match_edge(line, prefix, a, b, attrs)) {
      p.edges.push_back({a, b, attrs});
    } else if (match_node(line, prefix, a, attrs)) {
      p.node_attrs[a] = attrs;
      if (current >= 0) p.node_cluster[a] = static_cast<std::uint32_t>(current);
    }
  }
  return p;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

/// Checks the cluster layout of an EGraph export against the e-graph itself.
template <class L, class A>
void check_egraph_export(const tensat::EGraph<L, A>& egraph, const std::string& dot) {
  const Parsed p = parse(dot);
  CHECK(p.clusters.size() == egraph.number_of_classes());
  CHECK(std::set<std::uint32_t>(p.clusters.begin(), p.clusters.end()).size() == p.clusters.size());
  CHECK(p.node_cluster.size() == egraph.total_number_of_nodes());
  for (const auto& cls : egraph.classes())
    for (Id nid : cls.nodes) {
      INFO("node " << nid.value);
      REQUIRE(p.node_cluster.count(nid.value) == 1);
      CHECK(p.node_cluster.at(nid.value) == cls.id.value);
    }
  // Edges come per node, in child order: match them against the children.
  std::size_t expected_edges = 0;
  std::map<std::uint32_t, std::vector<const Parsed::Edge*>> by_source;
  for (const auto& e : p.edges) by_source[e.from].push_back(&e);
  for (const auto& cls : egraph.classes())
    for (Id nid : cls.nodes) {
      const auto kids = egraph.node(nid).children();
      expected_edges += kids.size();
      const auto& edges = by_source[nid.value];
      REQUIRE(edges.size() == kids.size());
      for (std::size_t i = 0; i < kids.size(); ++i) {
        const Id child = egraph.find(kids[i]);
        INFO("node " << nid.value << " child " << i);
        // The edge points at a node of the child class, clipped at its cluster.
        REQUIRE(p.node_cluster.count(edges[i]->to) == 1);
        CHECK(p.node_cluster.at(edges[i]->to) == child.value);
        if (child != cls.id)
          CHECK(edges[i]->attrs.find("lhead=cluster_" + std::to_string(child.value)) !=
                std::string::npos);
        else
          CHECK(edges[i]->attrs.find("lhead") == std::string::npos);
        if (kids.size() > 1)
          CHECK(edges[i]->attrs.find("label=\"" + std::to_string(i) + "\"") != std::string::npos);
      }
    }
  CHECK(p.edges.size() == expected_edges);
  CHECK(count(dot, "compound=true;") == 1);
}

/// Classes reachable from the roots through the chosen nodes, computed independently.
std::set<std::uint32_t> reachable(const ExtractionGraph& g,
                                  const std::vector<std::uint32_t>& choice) {
  std::set<std::uint32_t> seen;
  std::vector<std::uint32_t> todo(g.roots().begin(), g.roots().end());
  while (!todo.empty()) {
    const std::uint32_t c = todo.back();
    todo.pop_back();
    if (!seen.insert(c).second) continue;
    for (std::uint32_t child : g.children(choice[c])) todo.push_back(child);
  }
  return seen;
}

/// Validates with GraphViz when it is installed; a no-op otherwise.
void check_with_graphviz(const std::string& dot, const std::string& name) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) return;
  const fs::path file = fs::temp_directory_path() / ("tensat_dot_test_" + name + ".dot");
  std::ofstream(file) << dot;
  const std::string command = "dot -Tsvg '" + file.string() + "' -o /dev/null";
  CHECK(std::system(command.c_str()) == 0);
  fs::remove(file);
}

// (* (+ a b) 2) with (+ a b) = (+ b a), and a class whose node has itself as child: x = (f x).
tensat::EGraph<SymbolLang> small_egraph(Id* root = nullptr) {
  tensat::EGraph<SymbolLang> egraph;
  const Id r = egraph.add_expr(tensat::parse_expr<SymbolLang>("(* (+ a b) (f x))"));
  const Id sum = *egraph.lookup_expr(tensat::parse_expr<SymbolLang>("(+ a b)"));
  egraph.unite(sum, egraph.add_expr(tensat::parse_expr<SymbolLang>("(+ b a)")));
  const Id x = *egraph.lookup(SymbolLang::leaf("x"));
  egraph.unite(x, *egraph.lookup_expr(tensat::parse_expr<SymbolLang>("(f x)")));
  egraph.rebuild();
  if (root) *root = r;
  return egraph;
}

// Classes 0 (root) = {f(1, 1) cost 1, g(2) cost 10}, 1 = {a cost 3}, 2 = {b cost 1}.
ExtractionGraph small_view() {
  return ExtractionGraph(3, {0, 0, 1, 2}, {1, 10, 3, 1}, {0, 2, 3, 3, 3}, {1, 1, 2}, {0});
}

}  // namespace

TEST_CASE(
    "dot: an EGraph export has one cluster per class, one node per e-node, edges to child "
    "classes") {
  const auto egraph = small_egraph();
  const std::string dot = tensat::to_dot(egraph);
  check_egraph_export(egraph, dot);
  CHECK(dot.rfind("digraph \"egraph\" {\n", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  CHECK(count(dot, "style=dashed;") == egraph.number_of_classes());
  CHECK(count(dot, "label=\"+\"") == 2);
  check_with_graphviz(dot, "egraph");
}

TEST_CASE("dot: an EGraph export after saturation with pruned classes (Math, constant folding)") {
  tensat::Runner<math::Math, math::ConstantFold> runner;
  runner.with_expr(tensat::parse_expr<math::Math>("(+ (* x (+ 1 1)) (- (* 2 y) (* 3 0)))"))
      .with_iter_limit(3)
      .run(math::rules());
  const auto& egraph = runner.egraph();
  REQUIRE(egraph.is_clean());
  const std::string dot = tensat::to_dot(egraph);
  check_egraph_export(egraph, dot);
  CHECK(dot.find("label=\"2\"") != std::string::npos);  // the folded constant
}

TEST_CASE("dot: options change the header, labels and edge indices") {
  const auto egraph = small_egraph();
  DotOptions options;
  options.graph_name = "my \"graph\"";
  options.show_class_ids = false;
  options.child_indices = false;
  options.rankdir = "LR";
  const std::string dot = tensat::to_dot(egraph, options);
  CHECK(dot.rfind("digraph \"my \\\"graph\\\"\" {\n", 0) == 0);
  CHECK(dot.find("rankdir=\"LR\";") != std::string::npos);
  CHECK(dot.find("    label=") == std::string::npos);
  CHECK(dot.find(", label=\"") == std::string::npos);
  CHECK(dot.find("-> n") != std::string::npos);
  const Parsed p = parse(dot);
  CHECK(p.clusters.size() == egraph.number_of_classes());
}

TEST_CASE("dot: labels are escaped for dot") {
  tensat::EGraph<SymbolLang> egraph;
  const Id q = egraph.add(SymbolLang::leaf("a\"b\\c"));
  const Id nl = egraph.add(SymbolLang::leaf("x\ny"));
  const Id tab = egraph.add(SymbolLang::leaf("t\tu"));
  egraph.add(SymbolLang("{<|>}", {q, nl, tab}));
  egraph.rebuild();
  const std::string dot = tensat::to_dot(egraph);
  CHECK(dot.find(R"(label="a\"b\\c")") != std::string::npos);
  CHECK(dot.find(R"(label="x\ny")") != std::string::npos);
  CHECK(dot.find(R"(label="t\\x09u")") != std::string::npos);
  CHECK(dot.find(R"(label="{<|>}")") != std::string::npos);
  CHECK(dot.find('\t') == std::string::npos);
  // No raw newline inside a label: every line is a statement or a brace.
  const Parsed p = parse(dot);
  CHECK(p.node_cluster.size() == 4);
  check_with_graphviz(dot, "escape");
}

TEST_CASE("dot: exports are deterministic") {
  const auto a = small_egraph();
  const auto b = small_egraph();
  CHECK(tensat::to_dot(a) == tensat::to_dot(a));
  CHECK(tensat::to_dot(a) == tensat::to_dot(b));
  std::ostringstream out;
  tensat::write_dot(out, a);
  CHECK(out.str() == tensat::to_dot(a));

  const ExtractionGraph g = small_view();
  const auto best = tensat::extract_tree(g);
  CHECK(tensat::to_dot(g, {"f", "g", "a", "b"}, best) ==
        tensat::to_dot(g, {"f", "g", "a", "b"}, best));
  CHECK(tensat::extraction_to_dot(g, best) == tensat::extraction_to_dot(g, best));
}

TEST_CASE("dot: an ExtractionGraph export, plain and with an extraction highlighted") {
  const ExtractionGraph g = small_view();
  const std::vector<std::string> labels{"f", "g", "a", "b"};

  const std::string plain = tensat::to_dot(g, labels);
  Parsed p = parse(plain);
  CHECK(p.clusters.size() == 3);
  CHECK(p.node_cluster.size() == 4);
  for (std::uint32_t n = 0; n < 4; ++n) CHECK(p.node_cluster.at(n) == g.node_class(n));
  CHECK(p.edges.size() == 3);
  for (const auto& e : p.edges)
    CHECK(e.attrs.find("lhead=cluster_" + std::to_string(g.node_class(e.to))) != std::string::npos);
  CHECK(plain.find(R"(n0 [label="f\ncost 1"];)") != std::string::npos);
  CHECK(plain.find("style=\"filled") == std::string::npos);
  CHECK(count(plain, "penwidth=2;") == 1);  // the root class
  CHECK(tensat::to_dot(g).find(R"(n3 [label="n3\ncost 1"];)") != std::string::npos);  // no labels

  const tensat::Extraction best = tensat::extract_tree(g);
  REQUIRE(best.choice[0] == 0);
  const std::string lit = tensat::to_dot(g, labels, best);
  p = parse(lit);
  CHECK(p.clusters.size() == 3);
  const auto live = reachable(g, best.choice);
  std::size_t chosen = 0;
  for (const auto& [n, attrs] : p.node_attrs) {
    const bool expect = live.count(g.node_class(n)) && best.choice[g.node_class(n)] == n;
    INFO("node " << n << ": " << attrs);
    CHECK((attrs.find("style=\"filled,bold\"") != std::string::npos) == expect);
    CHECK((attrs.find("color=gray60") != std::string::npos) == !expect);
    chosen += expect;
  }
  CHECK(chosen == live.size());
  // Class 2 (only under g) is unreachable: greyed as a whole.
  CHECK(lit.find("subgraph cluster_2 {\n    style=dashed;\n    label=\"2\";\n    color=gray60;") !=
        std::string::npos);
  for (const auto& e : p.edges)
    CHECK((e.attrs.find("penwidth=2") != std::string::npos) == (e.from == 0));

  CHECK_THROWS_AS(tensat::to_dot(g, {"f"}), tensat::Error);
  tensat::Extraction wrong;
  wrong.choice = {0};
  CHECK_THROWS_AS(tensat::to_dot(g, labels, wrong), tensat::Error);
  CHECK_THROWS_AS(tensat::extraction_to_dot(g, wrong), tensat::Error);
}

TEST_CASE("dot: the extracted DAG has one node per reachable class, roots doubled") {
  const ExtractionGraph g = small_view();
  const tensat::Extraction best = tensat::extract_tree(g);
  const std::string dot = tensat::extraction_to_dot(g, best, {"f", "g", "a", "b"});
  const Parsed p = parse(dot, 'c');
  CHECK(p.clusters.empty());
  CHECK(p.node_attrs.size() == reachable(g, best.choice).size());
  CHECK(p.node_attrs.at(0) == R"(label="f\ncost 1", peripheries=2)");
  CHECK(p.node_attrs.at(1) == R"(label="a\ncost 3")");
  REQUIRE(p.edges.size() == 2);  // f(1, 1): the repeated child keeps both edges
  CHECK(p.edges[0].attrs == "label=\"0\"");
  CHECK(p.edges[1].attrs == "label=\"1\"");

  // A broken choice (a reachable class without a node) is still drawn, in red.
  tensat::Extraction broken = best;
  broken.choice[1] = ExtractionGraph::kNone;
  const std::string red = tensat::extraction_to_dot(g, broken);
  CHECK(red.find(R"(c1 [label="no choice", color=red, fontcolor=red];)") != std::string::npos);
}

TEST_CASE("dot: a RecExpr is drawn as its DAG, root doubled") {
  using tensat::RecExpr;
  const RecExpr<SymbolLang> expr = tensat::parse_expr<SymbolLang>("(+ (* x y) (g x))");
  const std::string dot = tensat::to_dot(expr);
  const Parsed p = parse(dot, 'e');
  CHECK(p.node_attrs.size() == expr.size());
  std::size_t edges = 0;
  for (const auto& node : expr) edges += node.children().size();
  CHECK(p.edges.size() == edges);
  for (const auto& e : p.edges) CHECK(e.to < e.from);
  CHECK(count(dot, "peripheries=2") == 1);
  CHECK(p.node_attrs.at(static_cast<std::uint32_t>(expr.size() - 1)) ==
        "label=\"+\", peripheries=2");

  // A term extracted from an e-graph shares its subterms: each class appears once.
  Id root;
  const auto egraph = small_egraph(&root);
  tensat::TreeExtractor extractor(egraph, tensat::AstSize{});
  const auto best = extractor.find_best(root).second;
  const Parsed q = parse(tensat::to_dot(best), 'e');
  CHECK(q.node_attrs.size() == best.size());
}

TEST_CASE("dot: a real extraction-gym e-graph and its tree-optimal extraction") {
  const fs::path file = gym::kDir / "data" / "egg" / "math_simplify_add.json";
  if (!fs::exists(file)) {
    TENSAT_SKIP(file << " is absent (shared/ is not beside the checkout)");
  }
  const auto serialized = tensat::read_egraph_json(file.string());
  const ExtractionGraph graph = tensat::to_extraction_graph(serialized);
  std::vector<std::string> labels;
  for (const auto& node : serialized.nodes) labels.push_back(node.op);
  const auto best = tensat::extract_tree(graph);

  const std::string dot = tensat::to_dot(graph, labels, best);
  const Parsed p = parse(dot);
  CHECK(p.clusters.size() == serialized.classes().size());
  CHECK(p.clusters.size() == graph.num_classes());
  CHECK(p.node_cluster.size() == graph.num_nodes());
  std::size_t edges = 0;
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n) edges += graph.children(n).size();
  CHECK(p.edges.size() == edges);
  const auto live = reachable(graph, best.choice);
  CHECK(count(dot, "style=\"filled,bold\"") == live.size());

  const Parsed dag = parse(tensat::extraction_to_dot(graph, best, labels), 'c');
  CHECK(dag.node_attrs.size() == live.size());
  std::size_t dag_edges = 0;
  for (std::uint32_t c : live) dag_edges += graph.children(best.choice[c]).size();
  CHECK(dag.edges.size() == dag_edges);
  check_with_graphviz(dot, "gym");
}
