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

/// A tree explanation (egg's `TreeExplanation`, with shared subproofs): proofs over a table of
/// hash-consed terms, so that programs with shared subterms (a tensor graph's DAG) are
/// explained in space linear in what was rewritten rather than in the trees they denote. Each
/// proof is a chain of terms from `start`; a step reaches its term by a rule (the term before
/// rewritten as a whole), a trusted reason, or congruence (same operator, and for each child
/// that differs a proof between the two children, shared by every step that needs it).
/// `check_tree_proof` (core/proof_check.h) replays it.
template <class L>
struct TreeExplanation {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Step {
    Id term;  ///< the term after the step
    Justification::Kind kind = Justification::Kind::Congruence;
    std::string rule;     ///< Rule or Trusted: the rule's or the reason's name
    bool forward = true;  ///< Rule: its left side matched the term before, its right this one
    std::vector<std::size_t> child_proofs;  ///< Congruence: per child, a proof or kNone
  };
  struct Proof {
    Id start;
    std::vector<Step> steps;
    [[nodiscard]] Id end() const noexcept { return steps.empty() ? start : steps.back().term; }
  };
  /// One equality asked for: `left` = `right`, proved by `proofs[proof]`.
  struct Goal {
    Id left, right;
    std::size_t proof = kNone;
  };

  std::vector<L> terms;  ///< children are indices into `terms`; equal terms have one index
  std::vector<Proof> proofs;
  std::vector<Goal> goals;

  /// Rule and trusted steps in all, each shared proof counted once.
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 0;
    for (const Proof& p : proofs)
      for (const Step& s : p.steps) n += s.kind != Justification::Kind::Congruence;
    return n;
  }

  /// The rule and trusted steps that prove goal `g`, in proof order (a child's proof where its
  /// congruence step needs it), each shared proof once: the chain a reader follows. Pairs of
  /// the name and whether the rule applied left to right.
  [[nodiscard]] std::vector<std::pair<std::string, bool>> chain(std::size_t g) const {
    std::vector<std::pair<std::string, bool>> out;
    std::vector<bool> seen(proofs.size(), false);
    collect(goals.at(g).proof, seen, out);
    return out;
  }

  /// The rule and trusted steps of goal `g`'s own proof, without those inside the proofs of
  /// children its congruence steps use: what rewrote the goal's term itself.
  [[nodiscard]] std::vector<std::pair<std::string, bool>> local_chain(std::size_t g) const {
    std::vector<std::pair<std::string, bool>> out;
    const std::size_t p = goals.at(g).proof;
    if (p == kNone) return out;
    for (const Step& st : proofs[p].steps)
      if (st.kind != Justification::Kind::Congruence) out.emplace_back(st.rule, st.forward);
    return out;
  }

  /// Term `t` as an s-expression; below `depth` levels a subterm is written `t<index>`.
  [[nodiscard]] std::string term_string(Id t, std::size_t depth = 3) const {
    const L& n = terms[t.index()];
    if (n.children().empty()) return n.op_name();
    if (depth == 0) return fmt::format("t{}", t.index());
    std::string s = "(" + n.op_name();
    for (Id c : n.children()) s += " " + term_string(c, depth - 1);
    return s + ")";
  }

  /// The tree of term `t` (a flat term without marks), for a trusted step's judge; the tree
  /// can be exponentially larger than the table when subterms are shared.
  [[nodiscard]] FlatTerm<L> flat_term(Id t) const {
    FlatTerm<L> f{terms[t.index()], {}, {}, {}};
    for (Id c : terms[t.index()].children()) f.children.push_back(flat_term(c));
    return f;
  }

  /// Every proof, a step a line: `p<i>: t<start> -> t<term> [rule =>]`, congruence steps with
  /// the proofs of their children (`cong p<j> p<k>`), then the goals.
  [[nodiscard]] std::string to_string() const {
    std::string s;
    for (std::size_t i = 0; i < proofs.size(); ++i) {
      const Proof& p = proofs[i];
      s += fmt::format("p{}: {}", i, term_string(p.start));
      for (const Step& st : p.steps) {
        s += fmt::format("\n  = {}  ", term_string(st.term));
        if (st.kind == Justification::Kind::Congruence) {
          s += "[congruence";
          for (std::size_t c : st.child_proofs)
            if (c != kNone) s += fmt::format(" p{}", c);
          s += "]";
        } else if (st.kind == Justification::Kind::Rule) {
          s += fmt::format("[{} {}]", st.rule, st.forward ? "=>" : "<=");
        } else {
          s += fmt::format("[trusted {}]", st.rule);
        }
      }
      s += "\n";
    }
    for (const Goal& g : goals) s += fmt::format("goal: p{}\n", g.proof);
    return s;
  }

 private:
  void collect(std::size_t p, std::vector<bool>& seen,
               std::vector<std::pair<std::string, bool>>& out) const {
    if (p == kNone || seen[p]) return;
    seen[p] = true;
    for (const Step& st : proofs[p].steps) {
      if (st.kind == Justification::Kind::Congruence) {
        for (std::size_t c : st.child_proofs) collect(c, seen, out);
      } else {
        out.emplace_back(st.rule, st.forward);
      }
    }
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

  /// The tree explanation of `a_i = b_i` for every pair; each pair's terms in one tree.
  [[nodiscard]] TreeExplanation<L> explain_tree(const std::vector<std::pair<Id, Id>>& pairs) const {
    TreeBuilder b{*this, {}, {}, {}, {}, {}};
    for (const auto& [x, y] : pairs) {
      typename TreeExplanation<L>::Goal g;
      g.left = b.term(x);
      g.right = b.term(y);
      g.proof = b.proof(x, y);
      b.out.goals.push_back(g);
    }
    return std::move(b.out);
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

  // Builds a tree explanation: terms copied into a hash-consed table (a fresh duplicate of a
  // term becomes the same entry), proofs memoized by their two ends.
  struct TreeBuilder {
    const Explainer& x;
    TreeExplanation<L> out;
    std::unordered_map<L, Id, NodeHash> table;
    std::unordered_map<std::uint32_t, Id> copied;         // explainer term -> out's term
    std::unordered_map<std::uint64_t, std::size_t> memo;  // (from, to) -> proof
    std::unordered_set<std::uint64_t> open;               // proofs being built
    Id term(Id t) {
      if (auto it = copied.find(t.index()); it != copied.end()) return it->second;
      const L node = map_children(x.terms_[t.index()], [&](Id c) { return term(c); });
      auto [it, added] = table.emplace(node, Id(static_cast<std::uint32_t>(out.terms.size())));
      if (added) out.terms.push_back(node);
      copied.emplace(t.index(), it->second);
      return it->second;
    }
    std::size_t proof(Id a, Id b) {
      const std::uint64_t key = (std::uint64_t{a.index()} << 32) | b.index();
      if (auto it = memo.find(key); it != memo.end()) return it->second;
      if (!open.insert(key).second) throw Error("explain: the proof forest has a cycle");
      typename TreeExplanation<L>::Proof p;
      p.start = term(a);
      for (const Step& st : x.path(a, b)) {
        typename TreeExplanation<L>::Step step;
        step.term = term(st.to);
        step.kind = st.just.kind;
        if (st.just.kind == Justification::Kind::Congruence) {
          const auto from = x.terms_[st.from.index()].children();
          const auto to = x.terms_[st.to.index()].children();
          for (std::size_t i = 0; i < from.size(); ++i)
            step.child_proofs.push_back(term(from[i]) == term(to[i]) ? TreeExplanation<L>::kNone
                                                                     : proof(from[i], to[i]));
        } else {
          step.rule = x.names_[st.just.name];
          step.forward = st.forward;
        }
        if (step.term == (p.steps.empty() ? p.start : p.steps.back().term)) continue;
        p.steps.push_back(std::move(step));
      }
      open.erase(key);
      out.proofs.push_back(std::move(p));
      memo.emplace(key, out.proofs.size() - 1);
      return out.proofs.size() - 1;
    }
  };

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
