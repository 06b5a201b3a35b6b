// check_proof: replays a flat explanation step by step against the rules it names.
#ifndef TENSAT_CORE_PROOF_CHECK_H
#define TENSAT_CORE_PROOF_CHECK_H

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
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

/// Decides a trusted step of a tree explanation: whether `reason` makes term `from` of
/// `proof.terms` equal to term `to` (in the order `unite_trusted` was given them).
/// `trusted_flat` adapts a `TrustedStep` (it unfolds both terms into trees).
template <class L>
using TreeTrustedStep =
    std::function<bool(std::string_view reason, const TreeExplanation<L>& proof, Id from, Id to)>;

template <class L>
TreeTrustedStep<L> trusted_flat(TrustedStep<L> judge) {
  return [judge = std::move(judge)](std::string_view reason, const TreeExplanation<L>& proof,
                                    Id from, Id to) {
    return judge(reason, proof.flat_term(from), proof.flat_term(to));
  };
}

namespace detail {
// Matches pattern node `i` of `ast` against term `t` of `terms` (hash-consed: equal terms are
// one index), extending `binds`.
template <class L>
bool match_term(const PatternAst<L>& ast, Id i, const std::vector<L>& terms, Id t,
                std::vector<std::pair<Var, Id>>& binds) {
  const auto& n = ast[i];
  if (n.is_var()) {
    for (const auto& [var, bound] : binds)
      if (var == n.var()) return bound == t;
    binds.emplace_back(n.var(), t);
    return true;
  }
  const L& term = terms[t.index()];
  if (!n.node().matches(term) || n.node().children().size() != term.children().size()) return false;
  for (std::size_t k = 0; k < term.children().size(); ++k)
    if (!match_term(ast, n.node().children()[k], terms, term.children()[k], binds)) return false;
  return true;
}
}  // namespace detail

/// Checks a tree explanation independently of the e-graph: every goal's proof goes from its
/// left term to its right; every step of every proof holds: a rule step's named pattern rule
/// rewrites the term before into the term after (left side matching one, right side the
/// other, under one substitution, as `check_proof`), a congruence step keeps the operator and
/// has, for every child that differs, a proof from the child before to the child after, and a
/// trusted step is accepted by `trusted` (without one, it fails). The terms must be
/// hash-consed (no two entries equal) and every child index must come before its parent.
/// `steps` counts the steps checked, shared proofs once; `failed_step` is 1-based in the order
/// the proofs are stored.
template <class L, class A>
ProofCheck check_tree_proof(
    const TreeExplanation<L>& proof, const std::vector<Rewrite<L, A>>& rules,
    const typename detail::TypeIdentity<TreeTrustedStep<L>>::type& trusted = {}) {
  using Kind = Justification::Kind;
  using Proof = typename TreeExplanation<L>::Proof;
  ProofCheck r;
  std::size_t at = 0;  // steps seen, for failed_step
  auto fail = [&](std::string why) {
    r.ok = false;
    r.failed_step = at;
    r.error = at ? fmt::format("step {}: {}", at, why) : why;
    return r;
  };
  const std::vector<L>& terms = proof.terms;
  const auto valid = [&](Id t) { return t.index() < terms.size(); };
  {
    std::unordered_map<L, std::size_t, NodeHash> seen;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      for (Id c : terms[i].children())
        if (c.index() >= i) return fail(fmt::format("term {} has a child after it", i));
      if (!seen.emplace(terms[i], i).second)
        return fail(fmt::format("terms {} and {} are equal", seen[terms[i]], i));
    }
  }
  const auto proof_from_to = [&](std::size_t p, Id from, Id to) {
    return p < proof.proofs.size() && proof.proofs[p].start == from && proof.proofs[p].end() == to;
  };
  for (const auto& g : proof.goals)
    if (!valid(g.left) || !valid(g.right) || !proof_from_to(g.proof, g.left, g.right))
      return fail("a goal's proof does not go from its left term to its right");
  for (const Proof& p : proof.proofs) {
    if (!valid(p.start)) return fail("a proof starts at no term");
    Id before = p.start;
    for (const auto& step : p.steps) {
      ++at;
      ++r.steps;
      if (!valid(step.term)) return fail("the step reaches no term");
      const Id after = step.term;
      if (step.kind == Kind::Congruence) {
        const L& x = terms[before.index()];
        const L& y = terms[after.index()];
        if (!x.matches(y) || x.children().size() != y.children().size() ||
            step.child_proofs.size() != x.children().size())
          return fail(fmt::format("congruence between different operators: {} and {}",
                                  proof.term_string(before), proof.term_string(after)));
        for (std::size_t k = 0; k < x.children().size(); ++k) {
          const Id cx = x.children()[k], cy = y.children()[k];
          const std::size_t sub = step.child_proofs[k];
          if (cx == cy && sub == TreeExplanation<L>::kNone) continue;
          if (!proof_from_to(sub, cx, cy))
            return fail(fmt::format("child {} of {} has no proof to {}", k,
                                    proof.term_string(before), proof.term_string(after)));
        }
      } else {
        const Rewrite<L, A>* rule = nullptr;
        for (const auto& candidate : rules)
          if (candidate.name() == step.rule) rule = &candidate;
        const PatternAst<L>* lhs = rule ? rule->searcher().pattern_ast() : nullptr;
        const PatternAst<L>* rhs = rule ? rule->applier().pattern_ast() : nullptr;
        const bool forward = step.forward;
        const Id from = forward ? before : after, to = forward ? after : before;
        if (step.kind == Kind::Trusted || !lhs || !rhs) {
          if (!trusted) return fail(fmt::format("no pattern rule named '{}'", step.rule));
          if (!trusted(step.rule, proof, from, to))
            return fail(fmt::format("'{}' does not justify {} = {}", step.rule,
                                    proof.term_string(from), proof.term_string(to)));
          ++r.trusted_steps;
        } else {
          std::vector<std::pair<Var, Id>> binds;
          if (!detail::match_term(*lhs, lhs->root(), terms, from, binds) ||
              !detail::match_term(*rhs, rhs->root(), terms, to, binds))
            return fail(fmt::format("rule '{}' does not rewrite {} to {}", step.rule,
                                    proof.term_string(from), proof.term_string(to)));
          ++r.rule_steps;
        }
      }
      before = after;
    }
  }
  return r;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_PROOF_CHECK_H
