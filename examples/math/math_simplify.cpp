// math-simplify: simplifies a Math expression (egg's math language) by equality saturation and
// prints the smallest equivalent term with the runner's report.
//
//   math-simplify "(d x (+ 1 (* 2 x)))"      prints 2
//
// Exit status: 0 on success, 2 on bad input (a parse error), 1 on an internal error: the rules
// proved two clearly different constants equal (constants that differ only by floating-point
// rounding, 0.6 and 0.6000000000000001, are one constant).
#include <cstdio>
#include <string>

#include "math/math_language.h"

int main(int argc, char** argv) {
  const std::string text = argc > 1 ? argv[1] : "(+ 1 (- a (* (- 2 1) a)))";
  try {
    tensat::Runner<math::Math, math::ConstantFold> runner;
    runner.with_iter_limit(30).with_node_limit(10'000);
    runner.with_expr(tensat::parse_expr<math::Math>(text));
    runner.run(math::rules());
    tensat::TreeExtractor extractor(runner.egraph(), tensat::AstSize{});
    const auto [cost, best] = extractor.find_best(runner.roots().front());
    std::printf("input:  %s\nbest:   %s\ncost:   %zu (AstSize)\n\n%s", text.c_str(),
                best.to_string().c_str(), cost, runner.report().to_string().c_str());
    return 0;
  } catch (const math::ContradictionError& e) {
    // Not the input's fault: the rule set proved two different constants equal.
    std::fprintf(stderr, "math-simplify: internal error: %s\n", e.what());
    return 1;
  } catch (const tensat::Error& e) {
    std::fprintf(stderr, "math-simplify: %s\n", e.what());
    return 2;
  }
}
