// Acceptance: egg's tests/simple.rs on a small typed language with integer constants.
#include <catch2/catch.hpp>

#include <tensat/tensat.h>

namespace {

// egg's SimpleLanguage: Num(i32), "+"(2), "*"(2), Symbol — here with SymbolLang for operators
// and symbols, which parses the same text.
using L = tensat::SymbolLang;

std::string simplify(const std::string& text) {
  std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::rewrite<L>("commute-add", "(+ ?a ?b)", "(+ ?b ?a)"),
      tensat::rewrite<L>("commute-mul", "(* ?a ?b)", "(* ?b ?a)"),
      tensat::rewrite<L>("add-0", "(+ ?a 0)", "?a"),
      tensat::rewrite<L>("mul-0", "(* ?a 0)", "0"),
      tensat::rewrite<L>("mul-1", "(* ?a 1)", "?a"),
  };
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>(text)).run(rules);
  tensat::TreeExtractor extractor(runner.egraph(), tensat::AstSize{});
  return extractor.find_best(runner.roots()[0]).second.to_string();
}

}  // namespace

TEST_CASE("simple.rs: simplify") {
  CHECK(simplify("(* 0 42)") == "0");
  CHECK(simplify("(+ 0 (* 1 foo))") == "foo");
}
