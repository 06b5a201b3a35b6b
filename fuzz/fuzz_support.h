// Shared by the libFuzzer harnesses: the fixed e-graph patterns are matched against, the check
// that a match is sound, and the abort that turns a failed oracle into a crash libFuzzer reports.
//
// Outcome policy of every harness: an input gives a result or a `tensat::Error` (caught by the
// harness); any other exception escapes `LLVMFuzzerTestOneInput`, std::terminate aborts, and
// libFuzzer saves the input. A wrong result calls `fuzz_fail`, which aborts too.
#ifndef TENSAT_FUZZ_SUPPORT_H
#define TENSAT_FUZZ_SUPPORT_H

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <tensat/tensat.h>

namespace fuzz {

using L = tensat::SymbolLang;

[[noreturn]] inline void fuzz_fail(const std::string& what) {
  std::fprintf(stderr, "fuzz oracle failed: %s\n", what.c_str());
  std::abort();
}

/// Deepest '(' nesting of `text`. Inputs nested deeper than a harness's bound are skipped: deep
/// recursion is a known defect (patterns > 10k deep) handled elsewhere, not what these find.
inline std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  for (char c : text) {
    if (c == '(') deepest = std::max(deepest, ++depth);
    if (c == ')' && depth > 0) --depth;
  }
  return deepest;
}

/// A small e-graph with shared subterms, a merged class, a cycle (`a = (h a)`), several arities
/// and a leaf reachable only through a cycle, so that patterns over the operators below match
/// in more than one way.
inline const tensat::EGraph<L>& fixed_egraph() {
  static const tensat::EGraph<L> egraph = [] {
    tensat::EGraph<L> g;
    auto add = [&](const char* text) { return g.add_expr(tensat::parse_expr<L>(text)); };
    add("(f a a)");
    const tensat::Id fab = add("(f a b)");
    const tensat::Id fac = add("(f a c)");
    g.unite(fab, fac);
    add("(g (f a b) c)");
    const tensat::Id sum = add("(+ x (* y 0))");
    g.unite(sum, add("x"));
    const tensat::Id ha = add("(h a)");
    g.unite(ha, add("a"));
    add("(k 1 2 3 (h (h b)))");
    add("(- (+ x y) (+ y x))");
    g.rebuild();
    return g;
  }();
  return egraph;
}

/// The class of `ast`'s subterm at `root` under `subst`, found by lookup only (nothing added), or
/// nothing if some node of the instantiation is absent from `egraph`.
inline std::optional<tensat::Id> lookup_instance(const tensat::EGraph<L>& egraph,
                                                 const tensat::PatternAst<L>& ast, tensat::Id root,
                                                 const tensat::Subst& subst) {
  std::vector<tensat::Id> ids(root.index() + 1);
  for (std::size_t i = 0; i <= root.index(); ++i) {
    const auto& n = ast[tensat::Id(i)];
    if (n.is_var()) {
      ids[i] = egraph.find(subst[n.var()]);
      continue;
    }
    L node = tensat::map_children(n.node(), [&](tensat::Id c) { return ids[c.index()]; });
    const auto found = egraph.lookup(node);
    if (!found) return std::nullopt;
    ids[i] = egraph.find(*found);
  }
  return ids[root.index()];
}

/// Every substitution of `matches` instantiates `ast` to a term already in the matched class.
inline void check_sound(const tensat::EGraph<L>& egraph, const tensat::PatternAst<L>& ast,
                        const tensat::SearchMatches& m, const tensat::Subst& subst,
                        std::string_view what) {
  const auto id = lookup_instance(egraph, ast, ast.root(), subst);
  if (!id || *id != egraph.find(m.eclass))
    fuzz_fail(std::string(what) + ": a match of " + ast.to_string() +
              " does not instantiate to its class");
}

}  // namespace fuzz

#endif  // TENSAT_FUZZ_SUPPORT_H
