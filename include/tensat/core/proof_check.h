// check_proof: replays a flat explanation step by step against the rules it names.
#ifndef TENSAT_CORE_PROOF_CHECK_H
#define TENSAT_CORE_PROOF_CHECK_H

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/explain.h"
#include "tensat/core/pattern_ast.h"
#include "tensat/core/rewrite.h"

namespace tensat {
inline namespace v0 {

/// The verdict of `check_proof`.
struct ProofCheck {
  bool ok = true;
  std::size_t steps = 0;          ///< rewrite steps checked
  std::size_t rule_steps = 0;     ///< steps replayed by a pattern rule
  std::size_t trusted_steps = 0;  ///< steps accepted by the `trusted` callback
  std::size_t failed_step = 0;    ///< the first step that failed (1-based), if !ok
  std::string error;              ///< why it failed
  explicit operator bool() const noexcept { return ok; }
};

/// Decides a step that no pattern rule of the given set names (an analysis's or a custom
/// applier's `unite_trusted` reason): whether `reason` makes `from` equal to `to`, the two terms
/// in the order `unite_trusted` was given them.
template <class L>
using TrustedStep =
    std::function<bool(std::string_view reason, const FlatTerm<L>& from, const FlatTerm<L>& to)>;

namespace detail {

// Matches pattern node `i` of `ast` against `term`, extending `binds`.
template <class L>
bool match_flat(const PatternAst<L>& ast, Id i, const FlatTerm<L>& term,
                std::vector<std::pair<Var, const FlatTerm<L>*>>& binds) {
  const auto& n = ast[i];
  if (n.is_var()) {
    for (const auto& [var, bound] : binds)
      if (var == n.var()) return bound->same_term(term);
    binds.emplace_back(n.var(), &term);
    return true;
  }
  if (!n.node().matches(term.node) || n.node().children().size() != term.children.size())
    return false;
  for (std::size_t k = 0; k < term.children.size(); ++k)
    if (!match_flat(ast, n.node().children()[k], term.children[k], binds)) return false;
  return true;
}

// The path to the one marked subterm of `t`; false if there is none or more than one.
template <class L>
bool marked_path(const FlatTerm<L>& t, std::vector<std::size_t>& path, std::size_t& marks,
                 std::vector<std::size_t>& found) {
  if (t.is_marked()) {
    ++marks;
    found = path;
  }
  for (std::size_t k = 0; k < t.children.size(); ++k) {
    path.push_back(k);
    marked_path(t.children[k], path, marks, found);
    path.pop_back();
  }
  return marks == 1;
}

}  // namespace detail

/// Checks `proof` independently of the e-graph that produced it: for every step, the term before
/// and the term after must differ only at the marked subterm, and there the named rule must
/// rewrite one into the other: its left side matching the subterm before and its right side the
/// subterm after, under one substitution (`Rewrite<=`: the other way round). Rules are looked up
/// by name in `rules` (pattern rules only; their conditions are not re-checked); a name no
/// pattern rule has goes to `trusted`, and fails the proof without one. A proof of one term
/// (no steps) is valid.
template <class L, class A>
ProofCheck check_proof(const Explanation<L>& proof, const std::vector<Rewrite<L, A>>& rules,
                       const typename detail::TypeIdentity<TrustedStep<L>>::type& trusted = {}) {
  ProofCheck r;
  auto fail = [&](std::size_t step, std::string why) {
    r.ok = false;
    r.failed_step = step;
    r.error = fmt::format("step {}: {}", step, why);
    return r;
  };
  for (std::size_t s = 1; s < proof.flat.size(); ++s) {
    const FlatTerm<L> before = proof.flat[s - 1].unmarked();
    const FlatTerm<L>& after = proof.flat[s];
    std::vector<std::size_t> path, at;
    std::size_t marks = 0;
    if (!detail::marked_path(after, path, marks, at))
      return fail(s, fmt::format("{} marked subterms (one expected)", marks));
    // Outside the marked subterm the two terms must agree.
    const FlatTerm<L>* x = &before;
    const FlatTerm<L>* y = &after;
    for (std::size_t k : at) {
      if (!x->node.matches(y->node) || x->children.size() != y->children.size() ||
          k >= x->children.size())
        return fail(s, "the terms differ outside the rewritten subterm");
      for (std::size_t j = 0; j < x->children.size(); ++j)
        if (j != k && !x->children[j].same_term(y->children[j]))
          return fail(s, "the terms differ outside the rewritten subterm");
      x = &x->children[k];
      y = &y->children[k];
    }
    const bool forward = !y->forward_rule.empty();
    const std::string& name = forward ? y->forward_rule : y->backward_rule;
    const FlatTerm<L> sub_after = y->unmarked();
    const Rewrite<L, A>* rule = nullptr;
    for (const auto& candidate : rules)
      if (candidate.name() == name) rule = &candidate;
    const PatternAst<L>* lhs = rule ? rule->searcher().pattern_ast() : nullptr;
    const PatternAst<L>* rhs = rule ? rule->applier().pattern_ast() : nullptr;
    ++r.steps;
    if (!lhs || !rhs) {
      if (!trusted) return fail(s, fmt::format("no pattern rule named '{}'", name));
      if (!trusted(name, forward ? *x : sub_after, forward ? sub_after : *x))
        return fail(s, fmt::format("'{}' does not justify {} = {}", name, x->to_string(),
                                   sub_after.to_string()));
      ++r.trusted_steps;
      continue;
    }
    std::vector<std::pair<Var, const FlatTerm<L>*>> binds;
    const FlatTerm<L>& from = forward ? *x : sub_after;
    const FlatTerm<L>& to = forward ? sub_after : *x;
    if (!detail::match_flat(*lhs, lhs->root(), from, binds) ||
        !detail::match_flat(*rhs, rhs->root(), to, binds))
      return fail(s, fmt::format("rule '{}' does not rewrite {} to {}", name, from.to_string(),
                                 to.to_string()));
    ++r.rule_steps;
  }
  return r;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_PROOF_CHECK_H
