// Explanations (core/explain.h) and their checker (core/proof_check.h): exact flat explanations
// of small cases, egg's math suite explained and checked, and tampered proofs rejected.
#include <catch2/catch.hpp>

#include <tensat/tensat.h>

#include "math/math_suite.h"

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using L = tensat::SymbolLang;

namespace {

EGraph<L> chain_egraph() {
  EGraph<L> g;
  g.with_explanations_enabled();
  g.add_expr(parse_expr<L>("(f a)"));
  g.add_expr(parse_expr<L>("(f b)"));
  g.add_expr(parse_expr<L>("c"));
  g.add_expr(parse_expr<L>("d"));
  g.unite_trusted(parse_expr<L>("a"), parse_expr<L>("c"), "ac");
  g.unite_trusted(parse_expr<L>("c"), parse_expr<L>("d"), "cd");
  g.unite_trusted(parse_expr<L>("d"), parse_expr<L>("b"), "db");
  g.rebuild();
  return g;
}

// Accepts the steps of chain_egraph: every reason is the pair it joined.
bool trusted_pairs(std::string_view reason, const tensat::FlatTerm<L>& from,
                   const tensat::FlatTerm<L>& to) {
  return reason.size() == 2 && from.to_string() == reason.substr(0, 1) &&
         to.to_string() == reason.substr(1, 1);
}

std::vector<tensat::Rewrite<L>> comm_assoc() {
  std::vector<tensat::Rewrite<L>> rules;
  rules.push_back(tensat::rewrite<L>("comm-add", "(+ ?a ?b)", "(+ ?b ?a)"));
  rules.push_back(tensat::rewrite<L>("assoc-add", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"));
  return rules;
}

}  // namespace

TEST_CASE("explain: congruence over a chain of trusted unions, both ways") {
  EGraph<L> g = chain_egraph();
  const auto fa = parse_expr<L>("(f a)");
  const auto fb = parse_expr<L>("(f b)");
  REQUIRE(g.lookup_expr(fa) == g.lookup_expr(fb));
  const auto e = g.explain_equivalence(fa, fb);
  CHECK(e.to_string() == "(f a)\n(f (Rewrite=> ac c))\n(f (Rewrite=> cd d))\n(f (Rewrite=> db b))");
  CHECK(e.size() == 3);
  const auto back = g.explain_equivalence(fb, fa);
  CHECK(back.to_string() ==
        "(f b)\n(f (Rewrite<= db d))\n(f (Rewrite<= cd c))\n(f (Rewrite<= ac a))");
  const std::vector<tensat::Rewrite<L>> none;
  const auto checked = tensat::check_proof(e, none, trusted_pairs);
  CHECK(checked.ok);
  CHECK(checked.trusted_steps == 3);
  CHECK(tensat::check_proof(back, none, trusted_pairs).ok);
  // Without a judge for trusted steps the proof does not check.
  const auto unjudged = tensat::check_proof(e, none);
  CHECK_FALSE(unjudged.ok);
  CHECK(unjudged.failed_step == 1);
  CHECK_THAT(unjudged.error, Catch::Contains("no pattern rule named 'ac'"));
  // A term explained with itself takes no step.
  CHECK(g.explain_equivalence(fa, fa).to_string() == "(f a)");
}

TEST_CASE("explain: errors for terms absent, not equivalent, or explanations off") {
  EGraph<L> g = chain_egraph();
  CHECK_THROWS_WITH(g.explain_equivalence(parse_expr<L>("(f a)"), parse_expr<L>("(g a)")),
                    Catch::Contains("(g a) is not in the e-graph"));
  g.add_expr(parse_expr<L>("e"));
  CHECK_THROWS_WITH(g.explain_equivalence(parse_expr<L>("a"), parse_expr<L>("e")),
                    Catch::Contains("not equivalent"));
  EGraph<L> off;
  off.add_expr(parse_expr<L>("a"));
  CHECK_THROWS_WITH(off.explain_equivalence(parse_expr<L>("a"), parse_expr<L>("a")),
                    Catch::Contains("explanations are off"));
  CHECK_THROWS_AS(off.with_explanations_enabled(), tensat::Error);
}

TEST_CASE("explain: a rule's step names the rule, and check_proof replays it") {
  tensat::Runner<L> runner;
  runner.with_explanations_enabled().with_expr(parse_expr<L>("(+ a b)")).with_iter_limit(3);
  const auto rules = comm_assoc();
  runner.run(rules);
  const auto e = runner.explain_equivalence(parse_expr<L>("(+ a b)"), parse_expr<L>("(+ b a)"));
  CHECK(e.to_string() == "(+ a b)\n(Rewrite=> comm-add (+ b a))");
  const auto r = tensat::check_proof(e, rules);
  CHECK(r.ok);
  CHECK(r.rule_steps == 1);
}

TEST_CASE("explain: a rewrite inside a term, and a proof that changes one step fails") {
  tensat::Runner<L> runner;
  runner.with_explanations_enabled()
      .with_expr(parse_expr<L>("(* x (+ a (+ b c)))"))
      .with_iter_limit(4);
  const auto rules = comm_assoc();
  runner.run(rules);
  const auto e = runner.explain_equivalence(parse_expr<L>("(* x (+ a (+ b c)))"),
                                            parse_expr<L>("(* x (+ c (+ b a)))"));
  REQUIRE(e.size() >= 2);
  for (std::size_t i = 1; i < e.flat.size(); ++i) CHECK(e.flat[i].children[0].to_string() == "x");
  REQUIRE(tensat::check_proof(e, rules).ok);

  SECTION("a subterm of a step replaced") {
    auto bad = e;
    bad.flat[1].children[0] = bad.flat[1].children[0].unmarked();
    bad.flat[1].children[0].node = L::leaf("y");
    const auto r = tensat::check_proof(bad, rules);
    CHECK_FALSE(r.ok);
    CHECK(r.failed_step == 1);
    CHECK_THAT(r.error, Catch::Contains("differ outside the rewritten subterm"));
  }
  SECTION("a step credited to the wrong rule") {
    auto bad = e;
    std::function<void(tensat::FlatTerm<L>&)> swap = [&](tensat::FlatTerm<L>& t) {
      if (t.is_marked()) {
        std::string& name = t.forward_rule.empty() ? t.backward_rule : t.forward_rule;
        name = name == "comm-add" ? "assoc-add" : "comm-add";
      }
      for (auto& c : t.children) swap(c);
    };
    swap(bad.flat[1]);
    const auto r = tensat::check_proof(bad, rules);
    CHECK_FALSE(r.ok);
    CHECK(r.failed_step == 1);
    CHECK_THAT(r.error, Catch::Contains("does not rewrite"));
  }
  SECTION("a step dropped") {
    auto bad = e;
    bad.flat.erase(bad.flat.begin() + 1);
    CHECK_FALSE(tensat::check_proof(bad, rules).ok);
  }
}

TEST_CASE("explain: explanations survive compact()") {
  tensat::Runner<L> runner;
  runner.with_explanations_enabled().with_expr(parse_expr<L>("(+ a (+ b c))")).with_iter_limit(3);
  const auto rules = comm_assoc();
  runner.run(rules);
  const auto a = parse_expr<L>("(+ a (+ b c))");
  const auto b = parse_expr<L>("(+ (+ b a) c)");
  const std::string before = runner.explain_equivalence(a, b).to_string();
  runner.egraph().compact();
  const auto after = runner.explain_equivalence(a, b);
  CHECK(after.to_string() == before);
  CHECK(tensat::check_proof(after, rules).ok);
}

TEST_CASE("explain: egg's math suite with explanations, every goal explained and checked") {
  const auto rules = math::rules();
  for (const auto& c : math::suite_cases()) {
    if (c.expect_failure) continue;
    SECTION(c.name) {
      const auto plain = math::run_case(c, rules);
      const auto result = math::run_case(c, rules, true);
      REQUIRE(result.proved);
      // Explanations change nothing the runner does.
      CHECK(result.report.iterations == plain.report.iterations);
      CHECK(result.report.egraph_nodes == plain.report.egraph_nodes);
      CHECK(result.report.egraph_classes == plain.report.egraph_classes);
      REQUIRE(result.explanations.size() == c.goals.size());
      for (const auto& e : result.explanations) {
        INFO(e.to_string());
        CHECK(e.flat.front().to_string() == parse_expr<math::Math>(c.start).to_string());
        const auto r = tensat::check_proof(e, rules, math::ConstantFold::check_fold);
        CHECK(r.ok);
        CHECK(r.error == "");
        CHECK(r.steps == e.size());
        CHECK(r.steps > 0);
        // Without its detours the proof is no longer, still checks, and ends at the goal.
        const auto short_proof = e.shortened();
        CHECK(short_proof.size() <= e.size());
        CHECK(short_proof.flat.back().unmarked().to_string() ==
              e.flat.back().unmarked().to_string());
        CHECK(tensat::check_proof(short_proof, rules, math::ConstantFold::check_fold).ok);
      }
    }
  }
}

TEST_CASE("explain: shortened() drops a detour and keeps a chain") {
  tensat::Explanation<L> e;
  auto leaf = [](const char* name, const char* rule) {
    tensat::FlatTerm<L> t{L::leaf(name), {}, rule, {}};
    return t;
  };
  e.flat = {leaf("a", ""), leaf("b", "r1"), leaf("c", "r2"), leaf("b", "r3"), leaf("d", "r4")};
  const auto s = e.shortened();
  CHECK(s.to_string() == "a\n(Rewrite=> r1 b)\n(Rewrite=> r4 d)");
  e.flat = {leaf("a", ""), leaf("b", "r1"), leaf("a", "r2")};
  CHECK(e.shortened().to_string() == "a");
}
