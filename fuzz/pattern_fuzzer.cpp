// libFuzzer harness of the s-expression reader and the pattern compiler: the input is read as a
// pattern over SymbolLang (every atom is an operator, so the reader's grammar is what is tested)
// and over the tensor language (unknown operators, arities, integer payloads), compiled, and
// matched against a small fixed e-graph with a cycle (fuzz_support.h).
//
// Oracles beyond "no crash": the printed pattern reads back to the same AST; every match
// instantiates (by lookup only) to a term of the matched class; searching each class alone finds
// the same number of substitutions as searching all; a ground pattern added to the e-graph
// matches its own class. Inputs nested deeper than 500 are skipped (deep recursion is a known
// defect, fixed apart).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <tensat/tensor.h>

#include "fuzz_support.h"

namespace {

constexpr std::size_t kMaxMatches = 5000;

void check_pattern(std::string_view text) {
  const auto& egraph = fuzz::fixed_egraph();
  const tensat::Pattern<fuzz::L> pattern(text);
  const tensat::Pattern<fuzz::L> reread(pattern.to_string());
  if (!(reread.ast() == pattern.ast()))
    fuzz::fuzz_fail("pattern does not read back: " + pattern.to_string());

  std::size_t total = 0;
  for (const auto& m : pattern.search_with_limit(egraph, kMaxMatches))
    for (const auto& subst : m.substs) {
      fuzz::check_sound(egraph, pattern.ast(), m, subst, "search");
      ++total;
    }
  if (total < kMaxMatches) {  // the limit cuts both searches at different places
    std::size_t per_class = 0;
    for (const auto& cls : egraph.classes())
      if (auto m = pattern.search_eclass(egraph, cls.id)) {
        if (egraph.find(m->eclass) != cls.id)
          fuzz::fuzz_fail("search_eclass reports another class");
        per_class += m->substs.size();
      }
    if (per_class != total)
      fuzz::fuzz_fail("search and search_eclass disagree on " + pattern.to_string());
  }

  if (pattern.vars().empty()) {  // a ground term: added, it must match its own class
    tensat::EGraph<fuzz::L> copy = egraph;
    const tensat::Id id = copy.add_expr(tensat::parse_expr<fuzz::L>(text));
    copy.rebuild();
    const auto m = pattern.search_eclass(copy, copy.find(id));
    if (!m || m->substs.empty())
      fuzz::fuzz_fail("a ground pattern does not match the term it denotes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > 1u << 16 || fuzz::nesting_depth(text) > 500) return 0;
  try {
    check_pattern(text);
  } catch (const tensat::Error&) {
  }
  try {
    const tensat::Pattern<tensat::tensor::TensorNode> tensor_pattern(text);
    (void)tensor_pattern.to_string();
  } catch (const tensat::Error&) {
  }
  return 0;
}
