#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::parse_expr;
using tensat::ParseError;
using L = tensat::SymbolLang;

namespace {
std::size_t error_offset(const char* text) {
  try {
    (void)parse_expr<L>(text);
  } catch (const ParseError& e) {
    return e.offset();
  }
  FAIL("expected a ParseError for: " << text);
  return 0;
}
}  // namespace

TEST_CASE("sexpr: parse and print round trip") {
  for (const char* text : {"x", "(f x)", "(+ 1 (* 2 (pow x -1)))", "(h (foo a b) 0 0)"})
    CHECK(parse_expr<L>(text).to_string() == text);
  // Whitespace, newlines and comments are layout only.
  CHECK(parse_expr<L>("  (f\n   x ; a comment\n   y)  ").to_string() == "(f x y)");
  const auto expr = parse_expr<L>("(f (g a) b)");
  CHECK(expr.size() == 4);
  CHECK(expr[expr.root()].op_name() == "f");
}

TEST_CASE("sexpr: egg's trailing ')' is tolerated, other trailing text is not") {
  CHECK(parse_expr<L>("(lam x 8))").to_string() == "(lam x 8)");
  CHECK(parse_expr<L>("(f a (g a))))").to_string() == "(f a (g a))");
  CHECK(error_offset("(f a) b") == 6);
  CHECK(error_offset("x y") == 2);
}

TEST_CASE("sexpr: malformed input gives ParseError with the offset and reason") {
  CHECK(error_offset("") == 0);
  CHECK(error_offset("   ") == 3);
  CHECK(error_offset("()") == 0);
  CHECK(error_offset("(f ())") == 3);
  CHECK(error_offset("((f) x)") == 1);
  CHECK(error_offset("(f x") == 4);
  CHECK(error_offset(")") == 0);
  try {
    (void)parse_expr<L>("(f (g x)");
  } catch (const ParseError& e) {
    CHECK_THAT(e.reason(), Catch::Contains("unclosed '(' opened at offset 0"));
    CHECK_THAT(e.what(), Catch::Contains("offset 8"));
  }
}

TEST_CASE("sexpr: deep terms neither overflow the stack when read nor when printed") {
  std::string text;
  const int depth = 100'000;
  for (int i = 0; i < depth; ++i) text += "(s ";
  text += "z";
  text += std::string(depth, ')');
  const auto expr = parse_expr<L>(text);
  CHECK(expr.size() == depth + 1);
  CHECK(expr.to_string() == text);
}

TEST_CASE("recexpr: children must refer to earlier nodes") {
  tensat::RecExpr<L> expr;
  const auto a = expr.add(L::leaf("a"));
  CHECK_NOTHROW(expr.add(L("f", {a})));
  CHECK_THROWS_AS(expr.add(L("g", {tensat::Id(7)})), tensat::Error);
  CHECK_THROWS_AS(tensat::RecExpr<L>(std::vector<L>{L("f", {tensat::Id(0)})}), tensat::Error);
}

TEST_CASE("recexpr: to_dag_string prints each node once, a tree as to_string") {
  const auto tree = parse_expr<L>("(+ (* x y) (f (g z) 2))");
  CHECK(tree.to_dag_string() == tree.to_string());
  // 40 levels, each the sum of the level below with itself: a tree of 2^41 - 1 nodes.
  tensat::RecExpr<L> dag;
  tensat::Id level = dag.add(L::leaf("x"));
  for (int i = 0; i < 40; ++i) level = dag.add(L("+", {level, level}));
  const std::string text = dag.to_dag_string();
  CHECK(text.size() < 40 * 24);
  CHECK(text.substr(0, 12) == "%1 = (+ x x)");
  CHECK(text.find("%2 = (+ %1 %1)\n") != std::string::npos);
  CHECK(text.substr(text.rfind('\n') + 1) == "(+ %39 %39)");
  // A node used once stays inline even under a shared one; unreachable nodes are not printed.
  tensat::RecExpr<L> mixed;
  const tensat::Id a = mixed.add(L::leaf("a"));
  const tensat::Id neg = mixed.add(L("neg", {a}));
  mixed.add(L("unused", {neg}));
  const tensat::Id sq = mixed.add(L("*", {neg, neg}));
  const tensat::Id f = mixed.add(L("f", {sq}));
  mixed.add(L("+", {f, sq}));
  CHECK(mixed.to_dag_string() == "%1 = (neg a)\n%3 = (* %1 %1)\n(+ (f %3) %3)");
  CHECK(tensat::RecExpr<L>().to_dag_string().empty());
  CHECK(parse_expr<L>("x").to_dag_string() == "x");
}
