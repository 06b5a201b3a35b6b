// Cycle filtering: remove_cycles leaves the part of the e-graph reachable from the roots
// acyclic, pruning the newest node of each cycle (preferring classes that keep a member), and
// a pruned node stays pruned when a rule derives it again. After saturation with the tensor
// rules, the extracted program never contains a cycle.
#include <catch2/catch.hpp>

#include <functional>

#include <tensat/tensor.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// Whether the member nodes reachable from `root` form a cycle (class level).
template <class L, class A>
bool has_cycle(const EGraph<L, A>& egraph, Id root) {
  std::map<std::uint32_t, int> color;  // 1 on path, 2 done
  std::function<bool(Id)> visit = [&](Id c) {
    c = egraph.find(c);
    int& state = color[c.value];
    if (state == 1) return true;
    if (state == 2) return false;
    state = 1;
    for (Id nid : egraph[c].nodes)
      for (Id child : egraph.node(nid).children())
        if (visit(child)) return true;
    color[egraph.find(c).value] = 2;
    return false;
  };
  return visit(root);
}

}  // namespace

TEST_CASE(
    "cycle filter: prunes the newest node of a cycle, preferring a class that keeps a member") {
  EGraph<SymbolLang> egraph;
  const Id x = egraph.add(SymbolLang::leaf("x"));
  const Id f = egraph.add(SymbolLang("f", {x}));  // f(x)
  const Id g = egraph.add(SymbolLang("g", {f}));  // g(f(x))
  egraph.unite(x, g);                             // x = g(f(x)): x -> g -> f -> x
  egraph.rebuild();
  REQUIRE(has_cycle(egraph, f));
  const std::vector<Id> roots{f};
  CHECK(remove_cycles(egraph, Span<const Id>(roots.data(), roots.size())) == 1);
  CHECK_FALSE(has_cycle(egraph, f));
  // The g node (newest) went, from the class that still holds the leaf x.
  CHECK(egraph[x].nodes.size() == 1);
  CHECK(egraph.node(egraph[x].nodes[0]).op() == Symbol("x"));
  CHECK(egraph[f].nodes.size() == 1);
  // Deriving g(f(x)) again finds it pruned: the class does not regain it.
  egraph.add(SymbolLang("g", {f}));
  egraph.rebuild();
  CHECK_FALSE(has_cycle(egraph, f));
  CHECK(remove_cycles(egraph, Span<const Id>(roots.data(), roots.size())) == 0);
}

TEST_CASE("cycle filter: several cycles through shared classes are all broken") {
  EGraph<SymbolLang> egraph;
  const Id a = egraph.add(SymbolLang::leaf("a"));
  const Id b = egraph.add(SymbolLang::leaf("b"));
  const Id p = egraph.add(SymbolLang("p", {a, b}));
  const Id q = egraph.add(SymbolLang("q", {p}));
  const Id r = egraph.add(SymbolLang("r", {p, q}));
  egraph.unite(a, q);  // a -> q -> p -> a
  egraph.unite(b, r);  // b -> r -> p -> b, and r -> q -> p -> b
  egraph.rebuild();
  const Id root = egraph.add(SymbolLang("top", {p, q}));
  egraph.rebuild();
  REQUIRE(has_cycle(egraph, root));
  const std::vector<Id> roots{root};
  CHECK(remove_cycles(egraph, Span<const Id>(roots.data(), roots.size())) >= 2);
  CHECK_FALSE(has_cycle(egraph, root));
  for (const auto& cls : egraph.classes()) CHECK_FALSE(cls.nodes.size() == 0);
}

TEST_CASE("cycle filter: after saturation the extracted program never contains a cycle") {
  // Split/concat rules close cycles (split_0(split(concat(a, b))) = a): a program that concats,
  // splits and recombines.
  Graph g;
  const Tensor a = g.input("a", {4, 8});
  const Tensor b = g.input("b", {4, 8});
  const Tensor w = g.weight("w", {8, 8});
  const Tensor cat = g.concat(0, {g.relu(g.matmul(a, w)), g.relu(g.matmul(b, w))});
  const auto [lo, hi] = g.split(cat, 0, 4);
  g.output(g.ewadd(g.tanh(lo), g.tanh(hi)));
  const RecExpr<TensorNode> program = g.program();

  Runner<TensorNode, TensorAnalysis> runner;
  std::size_t pruned = 0;
  runner.with_iter_limit(8)
      .with_node_limit(20'000)
      .with_label_iteration_limit(std::string(kMultiLabel), 1)
      .with_hook(cycle_filter_hook<TensorNode, TensorAnalysis>(&pruned))
      .with_expr(program)
      .run(all_rules());
  TensorEGraph& egraph = runner.egraph();
  const Id root = runner.roots().front();
  pruned += remove_cycles(egraph, Span<const Id>(runner.roots().data(), runner.roots().size()));
  egraph.rebuild();
  CHECK(pruned > 0);  // the rules did close cycles
  CHECK_FALSE(has_cycle(egraph, root));

  std::vector<Id> node_ids;
  const auto graph = ExtractionGraph::from_egraph(egraph, {root}, SimpleCost(egraph), &node_ids);
  const Extraction extraction = extract_greedy_dag(graph);
  REQUIRE_FALSE(check_extraction(graph, extraction.choice));
  const RecExpr<TensorNode> optimized = to_recexpr(egraph, graph, node_ids, extraction);
  CHECK_NOTHROW(check_program(optimized));
  CHECK(simple_program_cost(optimized) <= simple_program_cost(program) + 1e-9);
}
