#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::MultiPattern;
using tensat::parse_expr;
using L = tensat::SymbolLang;

TEST_CASE("multipattern: multi_patterns counts (egg multipattern.rs)") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(f a a)"));
  const Id ab = egraph.add_expr(parse_expr<L>("(f a b)"));
  const Id ac = egraph.add_expr(parse_expr<L>("(f a c)"));
  egraph.unite(ab, ac);
  egraph.rebuild();
  auto n = [&](const char* text) { return MultiPattern<L>(text).n_matches(egraph); };
  CHECK(n("?x = (f a a),   ?y = (f ?c b)") == 1);
  CHECK(n("?x = (f a a),   ?y = (f a b)") == 1);
  CHECK(n("?x = (f a a),   ?y = (f a a)") == 1);
  CHECK(n("?x = (f ?a ?b), ?y = (f ?c ?d)") == 9);
  CHECK(n("?x = (f ?a a),  ?y = (f ?a b)") == 1);
  CHECK(n("?x = (f a a), ?x = (f a c)") == 0);
  CHECK(n("?x = (f a b), ?x = (f a c)") == 1);
  // Chained form: ?x = p1 = p2 is ?x = p1, ?x = p2.
  CHECK(n("?x = (f a b) = (f a c)") == 1);
}

TEST_CASE("multipattern: bad_unbound_var (egg multipattern.rs)") {
  try {
    (void)tensat::multi_rewrite<L>("foo", "?x = (foo ?y)", "?x = ?z");
    FAIL("expected RuleError");
  } catch (const tensat::RuleError& e) {
    CHECK(e.rule() == "foo");
    CHECK_THAT(e.what(), Catch::Contains("unbound var ?z"));
  }
}

TEST_CASE("multipattern: unbound_rhs (egg multipattern.rs)") {
  EGraph<L> egraph;
  egraph.add(L::leaf("x"));
  std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::multi_rewrite<L>("foo", "?x = (x)", "?y = (y), ?y = (z)"),
      tensat::multi_rewrite<L>("foo2", "?x = (x), ?y = (y), ?z = (z)", "?y = (y), ?y = (z)"),
  };
  tensat::Runner<L> runner;
  runner.with_egraph(std::move(egraph)).run(rules);
  const auto& g = runner.egraph();
  CHECK(g.lookup(L::leaf("y")) == g.lookup(L::leaf("z")));
}

TEST_CASE("multipattern: ctx_transfer (egg multipattern.rs)") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(lte ctx1 ctx2)"));
  egraph.add_expr(parse_expr<L>("(lte ctx2 ctx2)"));
  egraph.add_expr(parse_expr<L>("(lte ctx1 ctx1)"));
  const Id x2 = egraph.add_expr(parse_expr<L>("(tag x ctx2)"));
  const Id y2 = egraph.add_expr(parse_expr<L>("(tag y ctx2)"));
  const Id z2 = egraph.add_expr(parse_expr<L>("(tag z ctx2)"));
  const Id x1 = egraph.add_expr(parse_expr<L>("(tag x ctx1)"));
  const Id y1 = egraph.add_expr(parse_expr<L>("(tag y ctx1)"));
  const Id z1 = egraph.add_expr(parse_expr<L>("(tag z ctx1)"));
  egraph.unite(x1, y1);
  egraph.unite(y2, z2);
  std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::multi_rewrite<L>("context-transfer",
                               "?x = (tag ?a ?ctx1) = (tag ?b ?ctx1), ?t = (lte ?ctx1 ?ctx2), ?a1 "
                               "= (tag ?a ?ctx2), ?b1 = (tag ?b ?ctx2)",
                               "?a1 = ?b1")};
  tensat::Runner<L> runner;
  runner.with_egraph(std::move(egraph)).run(rules);
  const auto& g = runner.egraph();
  CHECK(g.find(x1) == g.find(y1));
  CHECK(g.find(y2) == g.find(z2));
  CHECK(g.find(x2) == g.find(y2));
  CHECK(g.find(x2) == g.find(z2));
  CHECK(g.find(y1) != g.find(z1));
  CHECK(g.find(x1) != g.find(z1));
}

TEST_CASE("multipattern: mistakes give typed errors with positions") {
  auto offset_of = [](const char* text) -> long {
    try {
      MultiPattern<L> p(text);
    } catch (const tensat::ParseError& e) {
      return long(e.offset());
    }
    return -1;
  };
  CHECK(offset_of("(f a)") == 0);               // no '?var ='
  CHECK(offset_of("x = (f a)") == 0);           // clause must start with a variable
  CHECK(offset_of("?x = (f a), ?y") == 12);     // second clause lacks '='
  CHECK(offset_of("?x = (f a), ?y = ") == 17);  // empty pattern
  CHECK(offset_of("?x = (f (?a b))") == 9);     // error inside a pattern, offset in the whole text
  CHECK(offset_of("?x = (f a b") > 0);          // unclosed list
  try {
    (void)tensat::multi_rewrite<L>("r", "?x = (f a", "?x = (g a)");
    FAIL("expected ParseError");
  } catch (const tensat::ParseError& e) {
    CHECK_THAT(e.reason(), Catch::Contains("rule 'r'"));
  }
}

TEST_CASE("multipattern: a leaf holding ',' or '=' reads back from to_string as itself") {
  // Found by the multi-pattern fuzzer: a parenthesized leaf printed bare and read back split.
  for (const char* text : {"?x = (abc?y=_)", "?x = (a,b), ?z = (f ?x)", "?x = (?y=_)"}) {
    INFO(text);
    const MultiPattern<L> mp(text);
    const MultiPattern<L> reread(mp.to_string());
    REQUIRE(reread.clauses().size() == mp.clauses().size());
    for (std::size_t i = 0; i < mp.clauses().size(); ++i) {
      CHECK(reread.clauses()[i].first == mp.clauses()[i].first);
      CHECK(reread.clauses()[i].second == mp.clauses()[i].second);
    }
  }
  CHECK(MultiPattern<L>("?x = (abc?y=_)").to_string() == "?x = (abc?y=_)");
}

TEST_CASE("multipattern: ',' and '=' inside ';' comments separate nothing") {
  // The comment after the pattern holds '=' and ','; split naively it adds clauses.
  const MultiPattern<L> one("?a = (f ?x) ; was: = (g ?y), ?b = (h ?y)");
  REQUIRE(one.clauses().size() == 1);
  CHECK(one.to_string() == "?a = (f ?x)");

  // A comment ends at the end of its line: the ',' on the next line separates two clauses.
  const MultiPattern<L> two("?a = (f ?x) ; the root, = (k ?x)\n, ?b ; second = ?\n = (g ?a)");
  REQUIRE(two.clauses().size() == 2);
  CHECK(two.to_string() == "?a = (f ?x), ?b = (g ?a)");

  // A comment inside a pattern, and one right after '='; the matches are the same.
  const MultiPattern<L> commented("?a = ; first = second\n (f ; ?x, = ?y\n ?x), ?b = (g ?a)");
  CHECK(commented.to_string() == "?a = (f ?x), ?b = (g ?a)");
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(g (f 1))"));
  egraph.add_expr(parse_expr<L>("(g (f 2))"));
  egraph.rebuild();
  CHECK(commented.n_matches(egraph) == 2);
  CHECK(two.n_matches(egraph) == 2);

  // Offsets of errors after a comment are offsets in the whole text.
  try {
    MultiPattern<L> bad("?a = (f ?x) ; a comment, = \n, ?b = (g");
    FAIL("expected ParseError");
  } catch (const tensat::ParseError& e) {
    CHECK(e.offset() == 37);  // the end of the text: the list opened at 35 is unclosed
  }
}
