#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using L = tensat::SymbolLang;
using A = tensat::NoAnalysis;

TEST_CASE("rewrite: conditional_rewrite with ConditionEqual (egg rewrite.rs)") {
  EGraph<L> egraph;
  const Id x = egraph.add(L::leaf("x"));
  const Id two = egraph.add(L::leaf("2"));
  const Id mul = egraph.add(L("*", {x, two}));
  const Id true_id = egraph.add(L::leaf("TRUE"));
  const auto mul_to_shift =
      tensat::rewrite<L>("mul_to_shift", "(* ?a ?b)", "(>> ?a (log2 ?b))")
          .when(std::make_shared<tensat::ConditionEqual<L, A>>("(is-power2 ?b)", "TRUE"));
  egraph.rebuild();
  CHECK(mul_to_shift.run(egraph).empty());  // nothing yet
  const Id two_ispow2 = egraph.add(L("is-power2", {two}));
  egraph.unite(two_ispow2, true_id);
  egraph.rebuild();
  const auto applied = mul_to_shift.run(egraph);
  REQUIRE(applied.size() == 1);
  CHECK(egraph.find(applied[0]) == egraph.find(mul));
}

TEST_CASE("rewrite: a right-hand side with an unbound variable is rejected (egg macros.rs)") {
  try {
    (void)tensat::rewrite<L>("bad", "?a", "?x");
    FAIL("expected RuleError");
  } catch (const tensat::RuleError& e) {
    CHECK(e.rule() == "bad");
    CHECK_THAT(e.what(), Catch::Contains("refers to unbound var ?x"));
  }
  // Conditions declaring a variable the searcher does not bind are rejected too.
  auto ok = tensat::rewrite<L>("ok", "(f ?a)", "?a");
  CHECK_THROWS_AS(
      ok.when([](EGraph<L>&, Id, const tensat::Subst&) { return true; }, {tensat::Var("?q")}),
      tensat::RuleError);
}

TEST_CASE("rewrite: malformed sides name the rule, the side and the offset") {
  try {
    (void)tensat::rewrite<L>("broken", "(f ?a", "?a");
    FAIL("expected ParseError");
  } catch (const tensat::ParseError& e) {
    CHECK_THAT(e.reason(), Catch::Contains("lhs of rule 'broken'"));
    CHECK(e.offset() == 5);
  }
  CHECK_THROWS_AS(tensat::rewrite<L>("broken", "(f ?a)", "()"), tensat::ParseError);
}

TEST_CASE("rewrite: bidirectional rules and callable conditions") {
  const auto rules =
      tensat::bidirectional_rewrite<L>("assoc", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)");
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].name() == "assoc");
  CHECK(rules[1].name() == "assoc-rev");

  EGraph<L> egraph;
  const Id fa = egraph.add_expr(parse_expr<L>("(f a)"));
  const Id fb = egraph.add_expr(parse_expr<L>("(f b)"));
  egraph.rebuild();
  // Only fire where ?x is the leaf "a".
  const auto rule =
      tensat::rewrite<L>("f-to-g", "(f ?x)", "(g ?x)")
          .when([](EGraph<L>& g, Id,
                   const tensat::Subst& s) { return g.lookup(L::leaf("a")) == g.find(s["?x"]); },
                {tensat::Var("?x")});
  CHECK(rule.run(egraph).size() == 1);
  egraph.rebuild();
  CHECK(egraph.lookup_expr(parse_expr<L>("(g a)")) == egraph.find(fa));
  CHECK_FALSE(egraph.lookup_expr(parse_expr<L>("(g b)")).has_value());
  CHECK(egraph.find(fb) != egraph.find(fa));
}

TEST_CASE("rewrite: custom appliers report what they changed") {
  EGraph<L> egraph;
  const Id root = egraph.add_expr(parse_expr<L>("(double 21)"));
  egraph.rebuild();
  // A custom applier that computes (double n) = 2n on numeric leaves.
  const auto fold =
      tensat::rewrite<L, A>("fold-double", "(double ?n)",
                            [](EGraph<L>& g, Id eclass, const tensat::Subst& s) -> std::vector<Id> {
                              const L& n = g.node(g[s["?n"]].nodes[0]);
                              const int value = std::stoi(std::string(n.op().str()));
                              const Id result = g.add(L::leaf(std::to_string(2 * value)));
                              if (g.unite(eclass, result)) return {eclass};
                              return {};
                            },
                            {tensat::Var("?n")});
  CHECK(fold.run(egraph).size() == 1);
  egraph.rebuild();
  CHECK(egraph.find(root) == *egraph.lookup(L::leaf("42")));
  CHECK(fold.run(egraph).empty());  // already equal: did nothing
}

TEST_CASE("rewrite: a lambda applier needs no explicit analysis type") {
  const auto rule = tensat::rewrite<L>(
      "to-g", "(f ?x)",
      [](EGraph<L>& g, Id eclass, const tensat::Subst& s) -> std::vector<Id> {
        return g.unite(eclass, g.add(L("g", {s["?x"]}))) ? std::vector<Id>{eclass}
                                                         : std::vector<Id>{};
      },
      {tensat::Var("?x")});
  EGraph<L> egraph;
  const Id f = egraph.add_expr(parse_expr<L>("(f a)"));
  egraph.rebuild();
  CHECK(rule.run(egraph).size() == 1);
  egraph.rebuild();
  CHECK(egraph.lookup_expr(parse_expr<L>("(g a)")) == egraph.find(f));
}
