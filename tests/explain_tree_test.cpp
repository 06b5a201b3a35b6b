// Tree explanations (core/explain.h's TreeExplanation, EGraph::explain_equivalence_tree) and
// their checker (core/proof_check.h's check_tree_proof): exact proofs of small cases, shared
// subproofs that keep a term with shared subterms small, egg's math suite explained and
// checked, and tampered proofs rejected.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <tensat/tensat.h>

#include "math/math_suite.h"

// Named, not anonymous: the core test files are compiled as one translation unit.
namespace explain_tree_test {

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using L = tensat::SymbolLang;

// Accepts a trusted step whose reason is the pair of leaves it joined ("ac": a = c).
bool pairs(std::string_view reason, const tensat::TreeExplanation<L>& proof, Id from, Id to) {
  return reason.size() == 2 && proof.term_string(from) == reason.substr(0, 1) &&
         proof.term_string(to) == reason.substr(1, 1);
}

TEST_CASE("tree explanation: congruence over trusted unions, proved once, checked") {
  EGraph<L> g;
  g.with_explanations_enabled();
  g.add_expr(parse_expr<L>("(f a a)"));
  g.add_expr(parse_expr<L>("(f b b)"));
  g.unite_trusted(parse_expr<L>("a"), parse_expr<L>("c"), "ac");
  g.unite_trusted(parse_expr<L>("c"), parse_expr<L>("b"), "cb");
  g.rebuild();
  const auto e = g.explain_equivalence_tree(parse_expr<L>("(f a a)"), parse_expr<L>("(f b b)"));
  // Both children need the proof a = b: it is there once.
  CHECK(e.to_string() ==
        "p0: a\n  = c  [trusted ac]\n  = b  [trusted cb]\n"
        "p1: (f a a)\n  = (f b b)  [congruence p0 p0]\n"
        "goal: p1\n");
  CHECK(e.size() == 2);
  const auto chain = e.chain(0);
  REQUIRE(chain.size() == 2);
  CHECK(chain[0].first == "ac");
  CHECK(chain[1].first == "cb");
  const std::vector<tensat::Rewrite<L>> none;
  const auto r = tensat::check_tree_proof(e, none, pairs);
  CHECK(r.ok);
  CHECK(r.trusted_steps == 2);
  CHECK(r.steps == 3);
  const auto unjudged = tensat::check_tree_proof(e, none);
  CHECK_FALSE(unjudged.ok);
  CHECK_THAT(unjudged.error, Catch::Contains("no pattern rule named 'ac'"));
  // The other way round, and a term with itself.
  CHECK(tensat::check_tree_proof(
            g.explain_equivalence_tree(parse_expr<L>("(f b b)"), parse_expr<L>("(f a a)")), none,
            pairs)
            .ok);
  const auto same = g.explain_equivalence_tree(parse_expr<L>("(f a a)"), parse_expr<L>("(f a a)"));
  CHECK(same.size() == 0);
  CHECK(tensat::check_tree_proof(same, none).ok);
}

TEST_CASE("tree explanation: a rewrite under a shared subterm stays linear") {
  // x0 = a, x(i+1) = (g x(i) x(i)): a DAG of 41 nodes whose tree has 2^41 leaves. Rewriting a
  // to b at the bottom makes x40 equal its copy over b; the flat explanation would rewrite 2^40
  // leaves one by one, the tree explanation has one rule step and a congruence per level.
  const std::vector<tensat::Rewrite<L>> rules = {tensat::rewrite<L>("a-b", "a", "b")};
  tensat::RecExpr<L> over_a, over_b;
  Id xa = over_a.add(L::leaf("a")), xb = over_b.add(L::leaf("b"));
  for (int i = 0; i < 40; ++i) {
    xa = over_a.add(L::from_op("g", std::vector<Id>{xa, xa}));
    xb = over_b.add(L::from_op("g", std::vector<Id>{xb, xb}));
  }
  tensat::Runner<L> runner;
  runner.with_explanations_enabled().with_expr(over_a).with_iter_limit(3).run(rules);
  const auto e = runner.egraph().explain_equivalence_tree(over_a, over_b);
  CHECK(e.size() == 1);
  CHECK(e.proofs.size() == 41);
  CHECK(e.terms.size() == 82);
  const auto r = tensat::check_tree_proof(e, rules);
  CHECK(r.ok);
  CHECK(r.rule_steps == 1);
  REQUIRE(e.chain(0).size() == 1);
  CHECK(e.chain(0)[0] == std::make_pair(std::string("a-b"), true));
}

TEST_CASE("tree explanation: pairs of nodes of two programs, in one table") {
  const std::vector<tensat::Rewrite<L>> rules = {
      tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
      tensat::rewrite<L>("double", "(+ ?x ?x)", "(* 2 ?x)")};
  const auto before = parse_expr<L>("(h (+ a b) (+ c c))");
  const auto after = parse_expr<L>("(h (+ b a) (* 2 c))");
  tensat::Runner<L> runner;
  runner.with_explanations_enabled().with_expr(before).run(rules);
  auto at = [](const tensat::RecExpr<L>& p, const std::string& term) {
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p.to_string(Id(i)) == term) return Id(i);
    throw std::logic_error("no node " + term);
  };
  const auto e =
      runner.egraph().explain_equivalences_tree(before, after,
                                                {{at(before, "(+ a b)"), at(after, "(+ b a)")},
                                                 {at(before, "(+ c c)"), at(after, "(* 2 c)")},
                                                 {before.root(), after.root()}});
  REQUIRE(e.goals.size() == 3);
  CHECK(e.chain(0) == std::vector<std::pair<std::string, bool>>{{"comm", true}});
  CHECK(e.chain(1) == std::vector<std::pair<std::string, bool>>{{"double", true}});
  CHECK(e.chain(2).size() == 2);  // the root: both children's proofs
  CHECK(tensat::check_tree_proof(e, rules).ok);
  CHECK_THROWS_WITH(
      runner.egraph().explain_equivalences_tree(before, after, {{at(before, "a"), at(after, "b")}}),
      Catch::Contains("not equivalent"));
}

TEST_CASE("tree explanation: a tampered proof fails check_tree_proof") {
  const std::vector<tensat::Rewrite<L>> rules = {
      tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
      tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)")};
  tensat::Runner<L> runner;
  runner.with_explanations_enabled().with_expr(parse_expr<L>("(f (+ a (+ b c)))")).run(rules);
  const auto e = runner.egraph().explain_equivalence_tree(parse_expr<L>("(f (+ a (+ b c)))"),
                                                          parse_expr<L>("(f (+ c (+ a b)))"));
  REQUIRE(tensat::check_tree_proof(e, rules).ok);
  REQUIRE(e.size() >= 2);
  auto first_rule_step = [](tensat::TreeExplanation<L>& t) -> tensat::TreeExplanation<L>::Step& {
    for (auto& p : t.proofs)
      for (auto& s : p.steps)
        if (s.kind == tensat::Justification::Kind::Rule) return s;
    throw std::logic_error("no rule step");
  };
  SECTION("a step credited to the other rule") {
    auto t = e;
    auto& s = first_rule_step(t);
    s.rule = s.rule == "comm" ? "assoc" : "comm";
    const auto r = tensat::check_tree_proof(t, rules);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::Contains("does not rewrite"));
  }
  SECTION("a step's direction reversed") {
    auto t = e;
    auto& s = first_rule_step(t);
    s.forward = !s.forward;
    CHECK_FALSE(tensat::check_tree_proof(t, rules).ok);
  }
  SECTION("a step dropped") {
    auto t = e;
    for (auto& p : t.proofs)
      if (p.steps.size() >= 2) {
        p.steps.erase(p.steps.begin());
        break;
      }
    CHECK_FALSE(tensat::check_tree_proof(t, rules).ok);
  }
  SECTION("a child's proof taken away") {
    auto t = e;
    bool cut = false;
    for (auto& p : t.proofs)
      for (auto& s : p.steps)
        for (auto& c : s.child_proofs)
          if (!cut && c != tensat::TreeExplanation<L>::kNone) {
            c = tensat::TreeExplanation<L>::kNone;
            cut = true;
          }
    REQUIRE(cut);
    const auto r = tensat::check_tree_proof(t, rules);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::Contains("has no proof"));
  }
  SECTION("a step's result replaced by another term") {
    auto t = e;
    auto& s = first_rule_step(t);
    s.term = Id(s.term.index() == 0 ? 1 : 0);
    CHECK_FALSE(tensat::check_tree_proof(t, rules).ok);
  }
  SECTION("a term's operator changed") {
    auto t = e;
    for (auto& term : t.terms)
      if (term.op_name() == "+") {
        term = L::from_op("-", std::vector<Id>(term.children().begin(), term.children().end()));
        break;
      }
    CHECK_FALSE(tensat::check_tree_proof(t, rules).ok);
  }
}

TEST_CASE("tree explanation: egg's math suite, every goal explained and checked") {
  const auto rules = math::rules();
  const auto judge = tensat::trusted_flat<math::Math>(math::ConstantFold::check_fold);
  for (const auto& c : math::suite_cases()) {
    if (c.expect_failure) continue;
    SECTION(c.name) {
      const auto result = math::run_case(c, rules, true);
      REQUIRE(result.proved);
      // Recording explanations adds no e-node: the hashcons is the same as without.
      CHECK(result.report.memo_size == math::run_case(c, rules).report.memo_size);
      REQUIRE(result.trees.size() == c.goals.size());
      for (std::size_t g = 0; g < c.goals.size(); ++g) {
        const auto& tree = result.trees[g];
        INFO(tree.to_string());
        const auto r = tensat::check_tree_proof(tree, rules, judge);
        CHECK(r.ok);
        CHECK(r.error == "");
        CHECK(tree.size() > 0);
        // Shared subproofs: never more rewrite steps than the flat explanation.
        CHECK(tree.size() <= result.explanations[g].size());
        CHECK(tree.chain(0).size() <= result.explanations[g].size());
      }
    }
  }
}

}  // namespace explain_tree_test
