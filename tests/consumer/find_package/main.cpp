// Installed-package consumer: commutativity puts (+ a b) and (+ b a) in one e-class.
#include <tensat/tensat.h>

#include <cstdio>

int main() {
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(+ a b)"));
  runner.run({tensat::rewrite<L>("comm", "(+ ?a ?b)", "(+ ?b ?a)")});

  const auto ab = runner.egraph().lookup_expr(tensat::parse_expr<L>("(+ a b)"));
  const auto ba = runner.egraph().lookup_expr(tensat::parse_expr<L>("(+ b a)"));
  if (!ab || !ba || *ab != *ba) {
    std::fprintf(stderr, "FAIL: (+ a b) and (+ b a) are not in the same e-class\n");
    return 1;
  }
  std::printf("ok: tensat %d, (+ a b) == (+ b a)\n", TENSAT_VERSION);
  return 0;
}
