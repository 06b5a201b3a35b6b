// math-simplify: simplifies a Math expression (egg's math language) by equality saturation and
// prints the smallest equivalent term with the runner's report.
//
//   math-simplify "(d x (+ 1 (* 2 x)))"            prints 2
//   math-simplify --explain "(d x (+ 1 (* 2 x)))"  also prints why, one rewrite a line, checked
//
// Exit status: 0 on success, 2 on bad input (a parse error, an unknown option), 1 on an internal
// error: the rules proved two clearly different constants equal (constants that differ only by
// floating-point rounding, 0.6 and 0.6000000000000001, are one constant), or an explanation
// failed its check.
#include <cstdio>
#include <cstring>
#include <string>

#include "math/math_language.h"

int main(int argc, char** argv) {
  bool explain = false;
  std::string text = "(+ 1 (- a (* (- 2 1) a)))";
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--explain") == 0) {
      explain = true;
    } else if (argv[i][0] == '-' && argv[i][1] == '-') {
      std::fprintf(stderr,
                   "math-simplify: unknown option %s (usage: math-simplify [--explain] EXPR)\n",
                   argv[i]);
      return 2;
    } else if (positional++ == 0) {
      text = argv[i];
    } else {
      std::fprintf(stderr, "math-simplify: one expression expected, got another: %s\n", argv[i]);
      return 2;
    }
  }
  try {
    tensat::Runner<math::Math, math::ConstantFold> runner;
    if (explain) runner.with_explanations_enabled();
    const auto input = tensat::parse_expr<math::Math>(text);
    runner.with_iter_limit(30).with_node_limit(10'000);
    runner.with_expr(input);
    const auto rules = math::rules();
    runner.run(rules);
    tensat::TreeExtractor extractor(runner.egraph(), tensat::AstSize{});
    const auto [cost, best] = extractor.find_best(runner.roots().front());
    std::printf("input:  %s\nbest:   %s\ncost:   %zu (AstSize)\n\n%s", text.c_str(),
                best.to_string().c_str(), cost, runner.report().to_string().c_str());
    if (explain) {
      const auto why = runner.explain_equivalence(input, best).shortened();
      const auto check = tensat::check_proof(why, rules, math::ConstantFold::check_fold);
      std::printf("\nexplanation (%zu steps):\n%s\nchecked: %s\n", why.size(),
                  why.to_string().c_str(), check ? "yes" : check.error.c_str());
      if (!check) return 1;
    }
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
