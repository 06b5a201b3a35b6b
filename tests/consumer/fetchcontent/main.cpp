// FetchContent consumer: (* ?a 1) => ?a, then the smallest term of (* (+ a b) 1) is (+ a b).
#include <tensat/tensat.h>

#include <cstdio>
#include <string>

int main() {
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(* (+ a b) 1)"));
  runner.run({tensat::rewrite<L>("mul-one", "(* ?a 1)", "?a")});

  const auto root = runner.egraph().lookup_expr(tensat::parse_expr<L>("(* (+ a b) 1)"));
  const auto sum = runner.egraph().lookup_expr(tensat::parse_expr<L>("(+ a b)"));
  if (!root || !sum || *root != *sum) {
    std::fprintf(stderr, "FAIL: (* (+ a b) 1) and (+ a b) are not in the same e-class\n");
    return 1;
  }
  tensat::TreeExtractor extractor(runner.egraph(), tensat::AstSize{});
  const auto [cost, best] = extractor.find_best(*root);
  if (best.to_string() != "(+ a b)") {
    std::fprintf(stderr, "FAIL: extracted %s (cost %zu), expected (+ a b)\n",
                 best.to_string().c_str(), static_cast<std::size_t>(cost));
    return 1;
  }
  std::printf("ok: (* (+ a b) 1) -> %s\n", best.to_string().c_str());
  return 0;
}
