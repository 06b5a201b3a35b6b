#include <catch2/catch.hpp>

#include <memory>
#include <thread>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using tensat::Pattern;
using L = tensat::SymbolLang;

namespace {
// egg's pattern.rs search_with_limit set-up: (+ 1 (+ 2 ... 6)) under comm and assoc, default
// runner.
std::unique_ptr<tensat::Runner<L>> saturated_sum_of_six() {
  std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
      tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)"),
  };
  auto runner = std::make_unique<tensat::Runner<L>>();
  runner->with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 6)))))")).run(rules);
  return runner;
}
}  // namespace

TEST_CASE("pattern: simple_match (egg pattern.rs)") {
  EGraph<L> egraph;
  const Id x = egraph.add_expr(parse_expr<L>("(+ x y)"));
  const Id z = egraph.add_expr(parse_expr<L>("(+ z w)"));
  egraph.unite(x, z);
  egraph.rebuild();
  auto commute = tensat::rewrite<L>("commute_plus", "(+ ?a ?b)", "(+ ?b ?a)");
  const auto matches = commute.search(egraph);
  std::size_t n = 0;
  for (const auto& m : matches) n += m.substs.size();
  CHECK(n == 2);
  const auto applied = commute.apply(egraph, matches);
  CHECK(applied.size() == 2);
  egraph.rebuild();
  CHECK(egraph.lookup_expr(parse_expr<L>("(+ w z)")) == egraph.find(x));
}

TEST_CASE("pattern: nonlinear_patterns (egg pattern.rs)") {
  EGraph<L> egraph;
  // egg's data has trailing ')' that its reader ignores.
  for (const char* e : {"(f a a)", "(f a (g a))))", "(f a (g b))))", "(h (foo a b) 0 1)",
                        "(h (foo a b) 1 0)", "(h (foo a b) 0 0)"})
    egraph.add_expr(parse_expr<L>(e));
  egraph.rebuild();
  CHECK(Pattern<L>("(f ?x ?y)").n_matches(egraph) == 3);
  CHECK(Pattern<L>("(f ?x ?x)").n_matches(egraph) == 1);
  CHECK(Pattern<L>("(f ?x (g ?y))))").n_matches(egraph) == 2);
  CHECK(Pattern<L>("(f ?x (g ?x))))").n_matches(egraph) == 1);
  CHECK(Pattern<L>("(h ?x 0 0)").n_matches(egraph) == 1);
}

TEST_CASE("pattern: search_with_limit (egg pattern.rs): 2100 and 540 matches") {
  const auto runner = saturated_sum_of_six();
  const auto& egraph = runner->egraph();
  const Id root = runner->roots()[0];
  const Pattern<L> pattern("(+ ?x (+ ?y ?z))");
  auto count = [](const std::vector<tensat::SearchMatches>& ms) {
    std::size_t n = 0;
    for (const auto& m : ms) n += m.substs.size();
    return n;
  };
  CHECK(count(pattern.search(egraph)) == 2100);
  CHECK(pattern.search_eclass(egraph, root)->substs.size() == 540);
  for (std::size_t limit : {1, 10, 100, 1000, 10000}) {
    CHECK(count(pattern.search_with_limit(egraph, limit)) == std::min<std::size_t>(limit, 2100));
    CHECK(pattern.search_eclass_with_limit(egraph, root, limit)->substs.size() ==
          std::min<std::size_t>(limit, 540));
  }
}

TEST_CASE("pattern: variables, ground subterms and a variable root") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(* x (/ 1 x))"));
  egraph.add_expr(parse_expr<L>("(* y (/ 1 x))"));
  egraph.rebuild();
  const Pattern<L> p("(* ?x (/ 1 ?x))");
  REQUIRE(p.vars().size() == 1);
  CHECK(p.vars()[0].name() == "?x");
  const auto matches = p.search(egraph);
  REQUIRE(matches.size() == 1);
  CHECK(matches[0].substs[0]["?x"] == *egraph.lookup(L::leaf("x")));
  // A ground pattern matches the class containing the term.
  CHECK(Pattern<L>("(/ 1 x)").n_matches(egraph) == 1);
  CHECK(Pattern<L>("(/ 1 y)").n_matches(egraph) == 0);
  // A bare variable matches every class once.
  CHECK(Pattern<L>("?a").n_matches(egraph) == egraph.number_of_classes());
  CHECK(p.to_string() == "(* ?x (/ 1 ?x))");
}

TEST_CASE("pattern: instantiation adds the term under a substitution") {
  EGraph<L> egraph;
  const Id a = egraph.add(L::leaf("a"));
  tensat::Subst subst;
  subst.insert(tensat::Var("?x"), a);
  const Id id = Pattern<L>("(f ?x (g ?x))").instantiate(egraph, subst);
  CHECK(egraph.lookup_expr(parse_expr<L>("(f a (g a))")) == id);
  CHECK_THROWS_AS(Pattern<L>("(f ?y)").instantiate(egraph, subst), tensat::Error);
}

TEST_CASE("pattern: searching a dirty e-graph is refused") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(f a)"));
  CHECK_THROWS_WITH(Pattern<L>("(f ?x)").search(egraph), Catch::Contains("rebuild"));
}

TEST_CASE("pattern: malformed patterns give ParseError with the offset") {
  try {
    Pattern<L> p("(f (?x y))");
    FAIL("expected ParseError");
  } catch (const tensat::ParseError& e) {
    CHECK(e.offset() == 4);
    CHECK_THAT(e.reason(), Catch::Contains("cannot have children"));
  }
  CHECK_THROWS_AS(Pattern<L>("(f ?x"), tensat::ParseError);
  CHECK_THROWS_AS(tensat::Var("x"), tensat::Error);
}

TEST_CASE("pattern: concurrent searches of one clean e-graph agree (search is read-only)") {
  const auto runner = saturated_sum_of_six();
  const auto& egraph = runner->egraph();
  const std::vector<Pattern<L>> patterns = {Pattern<L>("(+ ?x (+ ?y ?z))"),
                                            Pattern<L>("(+ (+ ?x ?y) ?z)"), Pattern<L>("(+ ?x ?x)"),
                                            Pattern<L>("(+ 1 ?x)")};
  std::vector<std::size_t> expected;
  for (const auto& p : patterns) expected.push_back(p.n_matches(egraph));
  CHECK(expected[0] == 2100);
  std::vector<std::vector<std::size_t>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        for (const auto& p : patterns) got[t].push_back(p.n_matches(egraph));
    });
  for (auto& th : threads) th.join();
  for (const auto& counts : got)
    for (std::size_t k = 0; k < counts.size(); ++k)
      REQUIRE(counts[k] == expected[k % patterns.size()]);
}
