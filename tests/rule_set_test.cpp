#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using L = tensat::SymbolLang;
using A = tensat::NoAnalysis;

namespace {

struct DoubleNegation : tensat::RewriteRule<L, A> {
  std::string name() const override { return "double-neg"; }
  std::string pattern() const override { return "(neg (neg ?x))"; }
  std::vector<Id> apply(EGraph<L>& g, Id eclass, const tensat::Subst& s) const override {
    return g.unite(eclass, s["?x"]) ? std::vector<Id>{eclass} : std::vector<Id>{};
  }
  int priority() const override { return 10; }
  std::vector<std::string> labels() const override { return {"canonicalize"}; }
  std::vector<tensat::Var> vars() const override { return {tensat::Var("?x")}; }
};

struct AddZero : tensat::RewriteRule<L, A> {
  explicit AddZero(std::string zero) : zero_(std::move(zero)) {}
  std::string name() const override { return "add-" + zero_; }
  std::string pattern() const override { return "(+ ?x " + zero_ + ")"; }
  std::vector<Id> apply(EGraph<L>& g, Id eclass, const tensat::Subst& s) const override {
    return g.unite(eclass, s["?x"]) ? std::vector<Id>{eclass} : std::vector<Id>{};
  }
  std::string zero_;
};

// A declarative rule object: a Rewrite built in the constructor.
struct Commute : tensat::Rewrite<L, A> {
  Commute() : Rewrite(tensat::rewrite<L>("commute", "(+ ?a ?b)", "(+ ?b ?a)").with_label("ac")) {}
};

struct BadRule : tensat::RewriteRule<L, A> {
  std::string name() const override { return "bad"; }
  std::string pattern() const override { return "(f ?x)"; }
  std::vector<Id> apply(EGraph<L>&, Id, const tensat::Subst&) const override { return {}; }
  std::vector<tensat::Var> vars() const override { return {tensat::Var("?y")}; }
};

}  // namespace

TEST_CASE("rule_set: add<Rules...> collects rule objects, ordered by priority") {
  tensat::RuleSet<L, A> rules;
  rules.add<Commute>().add<AddZero>(std::string("0")).add<DoubleNegation>();
  REQUIRE(rules.size() == 3);
  const auto ordered = rules.rewrites();
  CHECK(ordered[0].name() == "double-neg");  // priority 10 first
  CHECK(ordered[1].name() == "commute");     // then insertion order
  CHECK(ordered[2].name() == "add-0");
  CHECK(rules.with_label("canonicalize").size() == 1);
  CHECK(rules.with_label("ac").size() == 1);
  CHECK(rules.find("add-0") != nullptr);
  CHECK(rules.find("nope") == nullptr);

  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(+ (neg (neg y)) 0)")).run(rules);
  const auto& g = runner.egraph();
  CHECK(g.find(runner.roots()[0]) == *g.lookup(L::leaf("y")));
}

TEST_CASE("rule_set: a rule object reading an unbound variable is rejected") {
  tensat::RuleSet<L, A> rules;
  CHECK_THROWS_AS(rules.add<BadRule>(), tensat::RuleError);
}
