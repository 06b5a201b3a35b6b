// Vendored consumer: commutativity and associativity join (+ a (+ b c)) and (+ (+ c b) a).
#include <tensat/tensat.h>

#include <cstdio>
#include <vector>

int main() {
  using L = tensat::SymbolLang;
  const std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::rewrite<L>("comm", "(+ ?a ?b)", "(+ ?b ?a)"),
      tensat::rewrite<L>("assoc", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"),
  };
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(+ a (+ b c))"));
  runner.run(rules);

  const auto lhs = runner.egraph().lookup_expr(tensat::parse_expr<L>("(+ a (+ b c))"));
  const auto rhs = runner.egraph().lookup_expr(tensat::parse_expr<L>("(+ (+ c b) a)"));
  if (!lhs || !rhs || *lhs != *rhs) {
    std::fprintf(stderr, "FAIL: (+ a (+ b c)) and (+ (+ c b) a) are not in the same e-class\n");
    return 1;
  }
  std::printf("ok: (+ a (+ b c)) == (+ (+ c b) a)\n");
  return 0;
}
