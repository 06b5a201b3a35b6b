// Explanations: why two terms are equal, as a chain of rewrites (egg's explanations, after
// "Proof-producing congruence closure", Flatt et al. 2022).
#ifndef TENSAT_CORE_EXPLAIN_H
#define TENSAT_CORE_EXPLAIN_H

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/language.h"

namespace tensat {
inline namespace v0 {

/// What justifies one union of the proof forest.
struct Justification {
  enum class Kind : std::uint8_t {
    Rule,        ///< a rule rewrote one term into the other (the rule is named)
    Congruence,  ///< same operator, children equal pairwise
    Trusted,     ///< asserted by the caller or an analysis, with a reason (`unite_trusted`)
  };
  Kind kind = Kind::Trusted;
  std::uint32_t name = 0;  ///< the rule's or the reason's index in the explainer's names
};

/// One term of a flat explanation (egg's `FlatTerm`): a tree, in which at most one subterm is
/// marked as the result of a rewrite, forward (`Rewrite=>`) or backward (`Rewrite<=`).
template <class L>
struct FlatTerm {
  L node;  ///< operator and payload; its child ids are not used, `children` are
  std::vector<FlatTerm> children;
  std::string forward_rule;   ///< the rule whose left side matched the subterm before
  std::string backward_rule;  ///< the rule whose right side matched the subterm before

  [[nodiscard]] bool is_marked() const noexcept {
    return !forward_rule.empty() || !backward_rule.empty();
  }
  /// The same tree with every mark removed.
  [[nodiscard]] FlatTerm unmarked() const {
    FlatTerm t{node, {}, {}, {}};
    t.children.reserve(children.size());
    for (const FlatTerm& c : children) t.children.push_back(c.unmarked());
    return t;
  }
  /// Equal as terms (marks ignored).
  [[nodiscard]] bool same_term(const FlatTerm& other) const {
    if (!node.matches(other.node) || children.size() != other.children.size()) return false;
    for (std::size_t i = 0; i < children.size(); ++i)
      if (!children[i].same_term(other.children[i])) return false;
    return true;
  }
  /// The s-expression, marks written as egg writes them: `(Rewrite=> rule term)`.
  [[nodiscard]] std::string to_string() const {
    std::string s;
    if (children.empty()) {
      s = node.op_name();
    } else {
      s = "(" + node.op_name();
      for (const FlatTerm& c : children) s += " " + c.to_string();
      s += ")";
    }
    if (!forward_rule.empty()) return fmt::format("(Rewrite=> {} {})", forward_rule, s);
    if (!backward_rule.empty()) return fmt::format("(Rewrite<= {} {})", backward_rule, s);
    return s;
  }
};

/// A flat explanation of `a = b` (egg's `Explanation::make_flat_explanation`): the first term is
/// `a`, the last `b`, and each other term is the one before with exactly one subterm rewritten by
/// one rule, that subterm marked. `check_proof` (core/proof_check.h) replays it.
template <class L>
struct Explanation {
  std::vector<FlatTerm<L>> flat;

  /// The number of rewrite steps.
  [[nodiscard]] std::size_t size() const noexcept { return flat.empty() ? 0 : flat.size() - 1; }
  /// The explanation without detours: wherever a term comes back later in the chain, the steps
  /// between are dropped (each remaining step still rewrites the term before it). A proof path
  /// through the forest is unique, but the explanations of congruent children may wander (a
  /// subterm rewritten and back); this is a cheap subset of egg's proof-length optimization.
  [[nodiscard]] Explanation shortened() const {
    Explanation out;
    std::unordered_map<std::string, std::size_t> at;  // unmarked term -> index in out
    for (const FlatTerm<L>& t : flat) {
      std::string key = t.unmarked().to_string();
      auto it = at.find(key);
      if (it == at.end()) {
        at.emplace(std::move(key), out.flat.size());
        out.flat.push_back(t);
        continue;
      }
      for (std::size_t i = it->second + 1; i < out.flat.size(); ++i)
        at.erase(out.flat[i].unmarked().to_string());
      out.flat.resize(it->second + 1);
    }
    return out;
  }
  /// One term a line (egg's `get_flat_string`).
  [[nodiscard]] std::string to_string() const {
    std::string s;
    for (std::size_t i = 0; i < flat.size(); ++i) {
      if (i) s += '\n';
      s += flat[i].to_string();
    }
    return s;
  }
};

namespace detail {

/// The proof forest of an e-graph with explanations on. It holds every term the e-graph was
/// given (its own arena: children are term ids, never re-canonicalized, so it survives the
/// e-graph's `compact()`), and a spanning forest over them with one edge per union, each edge
/// with its justification. Terms connected in the forest are exactly the terms of one e-class.
template <class L>
class Explainer {
 public:
  /// The term id of `node` (children are term ids), and whether it was created now.
  std::pair<Id, bool> intern(const L& node) {
    auto [it, created] = table_.emplace(node, Id(terms_.size()));
    if (created) {
      terms_.push_back(node);
      parent_.push_back(it->second);
      just_.push_back({});
      forward_.push_back(true);
      term_class_.push_back(kInvalidId);
    }
    return {it->second, created};
  }
  /// A new term for `node`, even if an equal one exists (a node the e-graph created while an
  /// equal term sat in another class, its congruence not yet found by `rebuild`).
  Id fresh(const L& node) {
    const Id t(terms_.size());
    table_.emplace(node, t);  // keeps an existing entry
    terms_.push_back(node);
    parent_.push_back(t);
    just_.push_back({});
    forward_.push_back(true);
    term_class_.push_back(kInvalidId);
    return t;
  }
  [[nodiscard]] Id lookup(const L& node) const {
    auto it = table_.find(node);
    return it == table_.end() ? kInvalidId : it->second;
  }

  /// An e-graph id in the class of term `t`.
  [[nodiscard]] Id term_class(Id t) const { return term_class_[t.index()]; }
  void set_term_class(Id t, Id node) { term_class_[t.index()] = node; }
  /// The term of e-graph node `node`.
  [[nodiscard]] Id node_term(Id node) const { return node_term_[node.index()]; }
  void set_node_term(Id node, Id t) {
    if (node_term_.size() <= node.index()) node_term_.resize(node.index() + 1, kInvalidId);
    node_term_[node.index()] = t;
  }
  /// After the e-graph's `compact()`: `kept[i]` is the old id of new node `i`, `mapping[old]`
  /// the new class of old id `old`.
  void renumber(const std::vector<Id>& kept, const std::vector<Id>& mapping) {
    std::vector<Id> node_term(kept.size(), kInvalidId);
    for (std::size_t i = 0; i < kept.size(); ++i) node_term[i] = node_term_[kept[i].index()];
    node_term_ = std::move(node_term);
    for (Id& c : term_class_)
      if (c != kInvalidId) c = mapping[c.index()];
  }

  /// The index of a rule's or reason's name.
  std::uint32_t name(std::string_view text) {
    auto it = name_ids_.find(std::string(text));
    if (it != name_ids_.end()) return it->second;
    names_.emplace_back(text);
    const auto id = static_cast<std::uint32_t>(names_.size() - 1);
    name_ids_.emplace(names_.back(), id);
    return id;
  }
  [[nodiscard]] const std::string& name_of(std::uint32_t id) const { return names_[id]; }

  /// Records the union of the trees of `a` and `b` (distinct trees): `a` becomes the root of its
  /// tree, then a child of `b`. `forward`: a rule's left side matched `a`, its right side `b`.
  void link(Id a, Id b, Justification j, bool forward) {
    make_root(a);
    parent_[a.index()] = b;
    just_[a.index()] = j;
    forward_[a.index()] = forward;
  }

  /// The flat explanation of `a = b`; both must be in one tree.
  [[nodiscard]] Explanation<L> explain(Id a, Id b) const {
    Explanation<L> e;
    e.flat.push_back(tree(a));
    append_flat(a, b, e.flat);
    return e;
  }

  [[nodiscard]] std::size_t number_of_terms() const noexcept { return terms_.size(); }
  [[nodiscard]] const L& term(Id t) const { return terms_[t.index()]; }

  // What the e-graph is doing, so that a union is justified by what caused it.
  std::string_view rule;           // the rule being applied, empty outside `Rewrite::apply`
  const void* rule_lhs = nullptr;  // its left side (a PatternAst), when it is a pattern
  int in_modify = 0;               // inside the analysis's `modify`
  Id pending = kInvalidId;         // the term of the node `add` is adding

 private:
  struct Step {
    Id from, to;
    Justification just;
    bool forward;
  };

  void make_root(Id a) {
    Id child = a;
    Id node = parent_[a.index()];
    Justification j = just_[a.index()];
    bool fwd = forward_[a.index()];
    parent_[a.index()] = a;
    while (node != child) {
      const Id next = parent_[node.index()];
      const Justification nj = just_[node.index()];
      const bool nf = forward_[node.index()];
      parent_[node.index()] = child;
      just_[node.index()] = j;
      forward_[node.index()] = !fwd;
      if (next == node) break;
      child = node;
      node = next;
      j = nj;
      fwd = nf;
    }
  }

  // The forest path from a to b, as steps from one term to the next.
  [[nodiscard]] std::vector<Step> path(Id a, Id b) const {
    std::unordered_set<std::uint32_t> above_a;
    for (Id x = a;; x = parent_[x.index()]) {
      above_a.insert(x.index());
      if (parent_[x.index()] == x) break;
    }
    std::vector<Step> down;  // from b up to the common ancestor, reversed below
    Id y = b;
    while (!above_a.count(y.index())) {
      const Id p = parent_[y.index()];
      if (p == y) throw Error("explain: the terms are not equivalent");
      down.push_back({p, y, just_[y.index()], !forward_[y.index()]});
      y = p;
    }
    std::vector<Step> steps;
    for (Id x = a; x != y; x = parent_[x.index()])
      steps.push_back({x, parent_[x.index()], just_[x.index()], forward_[x.index()]});
    steps.insert(steps.end(), down.rbegin(), down.rend());
    return steps;
  }

  [[nodiscard]] FlatTerm<L> tree(Id t) const {
    FlatTerm<L> f{terms_[t.index()], {}, {}, {}};
    for (Id c : terms_[t.index()].children()) f.children.push_back(tree(c));
    return f;
  }

  // Appends the terms after `a` on the way to `b`; out.back() is `a`'s tree, unmarked.
  void append_flat(Id a, Id b, std::vector<FlatTerm<L>>& out) const {
    for (const Step& s : path(a, b)) {
      if (s.just.kind == Justification::Kind::Congruence) {
        FlatTerm<L> current = out.back().unmarked();
        const auto from = terms_[s.from.index()].children();
        const auto to = terms_[s.to.index()].children();
        for (std::size_t i = 0; i < from.size(); ++i) {
          if (from[i] == to[i]) continue;
          std::vector<FlatTerm<L>> sub{current.children[i]};
          append_flat(from[i], to[i], sub);
          for (std::size_t k = 1; k < sub.size(); ++k) {
            FlatTerm<L> next = current;
            next.children[i] = sub[k];
            out.push_back(std::move(next));
            current.children[i] = sub[k].unmarked();
          }
        }
      } else {
        FlatTerm<L> next = tree(s.to);
        (s.forward ? next.forward_rule : next.backward_rule) = names_[s.just.name];
        out.push_back(std::move(next));
      }
    }
  }

  std::vector<L> terms_;
  std::unordered_map<L, Id, NodeHash> table_;
  std::vector<Id> term_class_;
  std::vector<Id> parent_;
  std::vector<Justification> just_;
  std::vector<bool> forward_;
  std::vector<Id> node_term_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_EXPLAIN_H
