#include <catch2/catch.hpp>

#include <map>
#include <random>

#include <tensat/tensat.h>

using tensat::AstDepth;
using tensat::AstSize;
using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using tensat::TreeExtractor;
using L = tensat::SymbolLang;
using A = tensat::NoAnalysis;

TEST_CASE("cost: AstSize and AstDepth of (do_it foo bar baz) (egg extract.rs doc)") {
  const auto expr = parse_expr<L>("(do_it foo bar baz)");
  CHECK(tensat::cost_rec(AstSize{}, expr) == 4);
  CHECK(tensat::cost_rec(AstDepth{}, expr) == 2);
}

TEST_CASE("tree: ast_size_overflow (egg extract.rs)") {
  std::vector<tensat::Rewrite<L, A>> rules = {
      tensat::rewrite<L>("explode", "(meow ?a)", "(meow (meow ?a ?a))")};
  tensat::Runner<L> runner;
  runner.with_iter_limit(100).with_expr(parse_expr<L>("(meow 42)")).run(rules);
  TreeExtractor extractor(runner.egraph(), AstSize{});
  const auto [cost, best] = extractor.find_best(runner.roots()[0]);
  CHECK(best.to_string() == "(meow 42)");
  CHECK(cost == 2);
}

TEST_CASE("tree: picks the cheapest node, shares subterms in the RecExpr, skips cycles") {
  EGraph<L> egraph;
  const Id big = egraph.add_expr(parse_expr<L>("(f (g (h a)) (g (h a)))"));
  const Id small = egraph.add_expr(parse_expr<L>("(k b)"));
  egraph.unite(big, small);
  // A cycle: class c = (loop c) ∪ {c}.
  const Id c = egraph.add(L::leaf("c"));
  const Id loop = egraph.add(L("loop", {c}));
  egraph.unite(c, loop);
  egraph.rebuild();
  TreeExtractor extractor(egraph, AstSize{});
  CHECK(extractor.find_best(big).second.to_string() == "(k b)");
  CHECK(extractor.find_best_cost(c) == 1);
  CHECK(extractor.find_best_node(c).op_name() == "c");
  // Shared subterm stored once.
  EGraph<L> shared;
  const Id root = shared.add_expr(parse_expr<L>("(f (g (h a)) (g (h a)))"));
  shared.rebuild();
  TreeExtractor shared_extractor(shared, AstSize{});
  const auto [cost, expr] = shared_extractor.find_best(root);
  CHECK(cost == 7);
  CHECK(expr.size() == 4);  // a, (h a), (g ..), (f ..)
  CHECK(expr.to_string() == "(f (g (h a)) (g (h a)))");
}

TEST_CASE("tree: a class with only cyclic terms has no cost") {
  EGraph<L> egraph;
  const Id x = egraph.add(L::leaf("x"));
  const Id fx = egraph.add(L("f", {x}));
  egraph.unite(x, fx);
  egraph.retain_nodes(x, [](const L& n) { return !n.children().empty(); });  // drop the leaf
  egraph.rebuild();
  TreeExtractor extractor(egraph, AstSize{});
  CHECK_FALSE(extractor.best_cost(x).has_value());
  CHECK_THROWS_AS(extractor.find_best(x), tensat::Error);
}

// Independent oracle: Bellman-Ford style fixpoint over all classes (egg's algorithm).
TEST_CASE("tree: agrees with a fixpoint extractor on random e-graphs") {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    EGraph<L> egraph;
    std::vector<Id> ids;
    for (const char* leaf : {"a", "b", "c"}) ids.push_back(egraph.add(L::leaf(leaf)));
    for (int i = 0; i < 60; ++i) {
      const char* ops[] = {"f", "g", "h"};
      const std::size_t arity = 1 + rng() % 2;
      L::Children kids;
      for (std::size_t k = 0; k < arity; ++k) kids.push_back(ids[rng() % ids.size()]);
      ids.push_back(egraph.add(L(ops[rng() % 3], kids)));
    }
    for (int u = 0; u < 15; ++u) egraph.unite(ids[rng() % ids.size()], ids[rng() % ids.size()]);
    egraph.rebuild();
    for (auto cost_kind : {0, 1}) {
      std::map<Id, std::size_t> best;
      for (bool changed = true; changed;) {
        changed = false;
        for (const auto& cls : egraph.classes())
          for (Id nid : cls.nodes) {
            const L& n = egraph.node(nid);
            std::size_t total = cost_kind == 0 ? 1 : 0;
            bool ok = true;
            for (Id child : n.children()) {
              auto it = best.find(egraph.find(child));
              if (it == best.end()) {
                ok = false;
                break;
              }
              total = cost_kind == 0 ? total + it->second : std::max(total, it->second);
            }
            if (cost_kind == 1) total += 1;
            if (!ok) continue;
            auto it = best.find(cls.id);
            if (it == best.end() || total < it->second) {
              best[cls.id] = total;
              changed = true;
            }
          }
      }
      for (const auto& cls : egraph.classes()) {
        std::optional<std::size_t> ours = cost_kind == 0
                                              ? TreeExtractor(egraph, AstSize{}).best_cost(cls.id)
                                              : TreeExtractor(egraph, AstDepth{}).best_cost(cls.id);
        auto it = best.find(cls.id);
        REQUIRE(ours.has_value() == (it != best.end()));
        if (ours) {
          REQUIRE(*ours == it->second);
          // The extracted term really has that cost.
          if (cost_kind == 0)
            CHECK(tensat::cost_rec(AstSize{},
                                   TreeExtractor(egraph, AstSize{}).find_best(cls.id).second) ==
                  *ours);
        }
      }
    }
  }
}
