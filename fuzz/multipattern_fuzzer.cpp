// libFuzzer harness of multi-patterns (`?x = p1 = p2, ?y = p3`): the input is parsed as a
// MultiPattern over SymbolLang, matched against the fixed e-graph of fuzz_support.h, and each
// match applied to a copy of the e-graph.
//
// Oracles beyond "no crash": every match binds each clause's variable to a class that holds the
// clause's pattern instantiated (by lookup only) under the match; the printed multi-pattern reads
// back to the same clauses; applying a match of a multi-pattern to the e-graph it matched changes
// no class (everything it would add is there already and united). Inputs holding ';' are skipped
// (comments inside multi-patterns are a known defect, fixed apart), and so are inputs nested
// deeper than 500.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"

namespace {

constexpr std::size_t kMaxMatches = 2000;

void check_round_trip(const tensat::MultiPattern<fuzz::L>& mp) {
  const tensat::MultiPattern<fuzz::L> reread(mp.to_string());
  const auto& a = mp.clauses();
  const auto& b = reread.clauses();
  bool same = a.size() == b.size();
  for (std::size_t i = 0; same && i < a.size(); ++i)
    same = a[i].first == b[i].first && a[i].second == b[i].second;
  if (!same) fuzz::fuzz_fail("multi-pattern does not read back: " + mp.to_string());
}

void check_multipattern(std::string_view text) {
  const auto& egraph = fuzz::fixed_egraph();
  const tensat::MultiPattern<fuzz::L> mp(text);
  check_round_trip(mp);

  std::size_t applied = 0;
  for (const auto& m : mp.search_with_limit(egraph, kMaxMatches))
    for (const auto& subst : m.substs) {
      for (const auto& [var, ast] : mp.clauses()) {
        const auto id = fuzz::lookup_instance(egraph, ast, ast.root(), subst);
        if (!id || *id != egraph.find(subst[var]))
          fuzz::fuzz_fail("a match of " + mp.to_string() + " does not hold clause " +
                          std::string(var.name()));
      }
      if (applied++ < 20) {  // applying copies the e-graph: a few per input
        tensat::EGraph<fuzz::L> copy = egraph;
        const std::size_t classes = copy.number_of_classes();
        const std::size_t nodes = copy.total_size();
        if (!mp.apply(copy, subst).empty())
          fuzz::fuzz_fail("applying a match of its own searcher united classes");
        copy.rebuild();
        if (copy.number_of_classes() != classes || copy.total_size() != nodes)
          fuzz::fuzz_fail("applying a match of its own searcher changed the e-graph");
      }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > 1u << 16 || text.find(';') != std::string_view::npos ||
      fuzz::nesting_depth(text) > 500)
    return 0;
  try {
    check_multipattern(text);
  } catch (const tensat::Error&) {
  }
  return 0;
}
