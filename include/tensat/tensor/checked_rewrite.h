// Rewrites of the tensor dialect that check before they add: a right-hand side is shape-checked
// bottom-up (TENSAT's CheckApply) and screened for cycles before any node enters the e-graph.
#ifndef TENSAT_TENSOR_CHECKED_REWRITE_H
#define TENSAT_TENSOR_CHECKED_REWRITE_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensat/core/multipattern.h"
#include "tensat/core/pattern.h"
#include "tensat/core/rewrite.h"
#include "tensat/core/small_vector.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

using TensorRewrite = Rewrite<TensorNode, TensorAnalysis>;

/// True if `target`'s class is reachable from one of `from` through children (any member
/// node), looking at no more than `budget` classes. A new node in `target` with such a child
/// closes a cycle. Past the budget the answer is "no": this is the cheap pre-filter of TENSAT's
/// efficient cycle filtering; the filter run after each iteration (cycle_filter.h) removes
/// whatever it lets through.
[[nodiscard]] inline bool reaches(const TensorEGraph& egraph, Span<const Id> from, Id target,
                                  std::size_t budget = 256) {
  target = egraph.find(target);
  // Visited marks by class id, reset in O(1) by bumping the epoch (one scratch per thread).
  thread_local std::vector<std::uint32_t> mark;
  thread_local std::uint32_t epoch = 0;
  thread_local std::vector<Id> stack;
  if (mark.size() < egraph.number_of_node_ids()) mark.resize(egraph.number_of_node_ids(), 0);
  if (++epoch == 0) {
    std::fill(mark.begin(), mark.end(), 0);
    epoch = 1;
  }
  stack.clear();
  for (Id f : from) stack.push_back(egraph.find(f));
  std::size_t visited = 0;
  while (!stack.empty()) {
    const Id c = stack.back();
    stack.pop_back();
    if (c == target) return true;
    if (mark[c.index()] == epoch) continue;
    if (++visited > budget) return false;
    mark[c.index()] = epoch;
    for (Id nid : egraph[c].nodes)
      for (Id child : egraph.node(nid).children()) {
        const Id cc = egraph.find(child);
        if (mark[cc.index()] != epoch) stack.push_back(cc);
      }
  }
  return false;
}

/// A right-hand side built term by term and checked before anything is added: each `op` runs
/// shape inference on the infos of its operands, and `commit` adds the nodes only if all of them
/// were valid. Operands are existing classes (`cls`), attributes (`num`, `ints`) or earlier terms.
class RightHandSide {
 public:
  /// A term of the right-hand side (an index into it).
  struct Ref {
    std::uint32_t index;
  };

  explicit RightHandSide(const TensorEGraph& egraph) : egraph_(egraph) {}

  /// An existing class.
  Ref cls(Id id) {
    Term t;
    t.existing = egraph_.find(id);
    t.info = &egraph_[t.existing].data;
    if (t.info->kind == Kind::Invalid) ok_ = false;
    return push(std::move(t));
  }
  Ref num(std::int64_t value) { return op_node(TensorNode::num(value), {}); }
  /// A childless node (`num`, `sym`, empty `ints`).
  Ref leaf(const TensorNode& node) { return op_node(node, {}); }
  Ref ints(const Dims& values) {
    SmallVector<Ref, 4> refs;
    for (std::int64_t v : values) refs.push_back(num(v));
    return op(Op::Ints, Span<const Ref>(refs));
  }
  /// A new node `op` over `operands`; marks the whole right-hand side invalid if ill-typed.
  Ref op(Op op, Span<const Ref> operands) {
    SmallVector<Id, 8> children;
    for (Ref r : operands) children.push_back(Id(r.index));
    return op_node(TensorNode(op, Span<const Id>(children)), operands);
  }
  Ref op(Op o, std::initializer_list<Ref> operands) {
    return op(o, Span<const Ref>(operands.begin(), operands.size()));
  }

  /// Whether every term so far is well-typed.
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  /// What `r` denotes (valid only while `ok()`).
  [[nodiscard]] const TensorInfo& info(Ref r) const { return *terms_[r.index].info; }
  /// For each term, its class if it is already in `egraph` (member lookups, bottom-up), else
  /// `kInvalidId`.
  [[nodiscard]] std::vector<Id> lookup(const TensorEGraph& egraph) const {
    std::vector<Id> ids(terms_.size(), kInvalidId);
    for (std::size_t i = 0; i < terms_.size(); ++i) {
      const Term& t = terms_[i];
      if (!t.node) {
        ids[i] = t.existing;
        continue;
      }
      bool known = true;
      for (Id c : t.node->children()) known = known && ids[c.index()] != kInvalidId;
      if (known)
        ids[i] =
            egraph.lookup_member_id(map_children(*t.node, [&](Id c) { return ids[c.index()]; }));
    }
    return ids;
  }
  /// The existing classes that new terms (those not in `existing`, from `lookup`) take as
  /// operands: the edges a commit would add (for the cycle pre-filter).
  [[nodiscard]] std::vector<Id> operand_classes(const std::vector<Id>& existing) const {
    std::vector<Id> out;
    for (std::size_t i = 0; i < terms_.size(); ++i) {
      const Term& t = terms_[i];
      if (!t.node || existing[i] != kInvalidId) continue;
      for (Id c : t.node->children())
        if (existing[c.index()] != kInvalidId) out.push_back(existing[c.index()]);
    }
    return out;
  }
  /// Adds the terms needed for `root` and returns its class. Precondition: `ok()`.
  Id commit(TensorEGraph& egraph, Ref root) const {
    std::vector<Id> ids(terms_.size(), kInvalidId);
    for (std::size_t i = 0; i <= root.index; ++i) {
      const Term& t = terms_[i];
      if (!t.node) {
        ids[i] = t.existing;
        continue;
      }
      ids[i] = egraph.add(map_children(*t.node, [&](Id c) { return ids[c.index()]; }));
    }
    return ids[root.index];
  }

 private:
  struct Term {
    Id existing = kInvalidId;        // an existing class, or
    std::optional<TensorNode> node;  // a new node over earlier terms
    const TensorInfo* info = nullptr;
    std::unique_ptr<TensorInfo> owned;  // the inferred info of a new node
  };

  Ref push(Term t) {
    terms_.push_back(std::move(t));
    return Ref{static_cast<std::uint32_t>(terms_.size() - 1)};
  }
  Ref op_node(TensorNode node, Span<const Ref> operands) {
    Term t;
    t.owned = std::make_unique<TensorInfo>();
    if (ok_) {
      SmallVector<const TensorInfo*, 8> children;
      for (Ref r : operands) children.push_back(terms_[r.index].info);
      if (!infer(node, children, *t.owned)) ok_ = false;
    }
    t.info = t.owned.get();
    t.node = std::move(node);
    return push(std::move(t));
  }

  const TensorEGraph& egraph_;
  std::vector<Term> terms_;
  bool ok_ = true;
};

/// Unites each class with its right-hand side term if every term is valid, denotes the same
/// kind of value as its class (same shape and dtype: a rule may not change a shape) and passes
/// the cycle pre-filter; otherwise adds nothing. Returns the changed ids.
/// With `rhs_ast` and `subst` (a pattern rule's right side and match) and explanations on, the
/// union is made by `unite_instantiations`, so that the explanation names the rule's patterns.
inline std::vector<Id> apply_checked(TensorEGraph& egraph, const RightHandSide& rhs,
                                     Span<const std::pair<Id, RightHandSide::Ref>> targets,
                                     const PatternAst<TensorNode>* rhs_ast = nullptr,
                                     const Subst* subst = nullptr) {
  if (!rhs.ok()) return {};
  for (const auto& [eclass, root] : targets) {
    const TensorInfo& want = egraph[eclass].data;
    const TensorInfo& got = rhs.info(root);
    if (!got.same_type(want) || got.symbolic != want.symbolic) return {};
  }
  // Terms already in the e-graph add no edge; if every target is already in its class there is
  // nothing to do (the common case once the e-graph nears saturation).
  const std::vector<Id> existing = rhs.lookup(egraph);
  bool all_there = true;
  for (const auto& [eclass, root] : targets)
    all_there = all_there && existing[root.index] != kInvalidId &&
                egraph.find(existing[root.index]) == egraph.find(eclass);
  if (all_there) return {};
  const std::vector<Id> operands = rhs.operand_classes(existing);
  if (!operands.empty())
    for (const auto& [eclass, root] : targets)
      if (reaches(egraph, Span<const Id>(operands.data(), operands.size()), eclass)) return {};
  std::vector<Id> changed;
  if (rhs_ast && subst && egraph.explanations_enabled() && targets.size() == 1) {
    // Committed first, so that the e-graph gets the same nodes in the same order as without
    // explanations; the instantiation then finds them, and the union is the same.
    rhs.commit(egraph, targets[0].second);
    if (egraph.unite_instantiations(targets[0].first, *rhs_ast, *subst, false) != kInvalidId)
      changed.push_back(targets[0].first);
    return changed;
  }
  for (const auto& [eclass, root] : targets) {
    const Id id = rhs.commit(egraph, root);
    if (egraph.unite(eclass, id)) changed.push_back(eclass);
  }
  return changed;
}

inline std::vector<Id> apply_checked(
    TensorEGraph& egraph, const RightHandSide& rhs,
    std::initializer_list<std::pair<Id, RightHandSide::Ref>> targets) {
  return apply_checked(
      egraph, rhs, Span<const std::pair<Id, RightHandSide::Ref>>(targets.begin(), targets.size()));
}

/// Instantiates a pattern through `RightHandSide` (checked), then `apply_checked`.
class CheckedPatternApplier final : public Applier<TensorNode, TensorAnalysis> {
 public:
  explicit CheckedPatternApplier(Pattern<TensorNode> pattern) : pattern_(std::move(pattern)) {}

  std::vector<Id> apply_one(TensorEGraph& egraph, Id eclass, const Subst& subst,
                            std::string_view) const override {
    RightHandSide rhs(egraph);
    const auto& ast = pattern_.ast();
    std::vector<RightHandSide::Ref> refs;
    refs.reserve(ast.size());
    for (const auto& n : ast) {
      if (n.is_var()) {
        refs.push_back(rhs.cls(subst[n.var()]));
        continue;
      }
      SmallVector<RightHandSide::Ref, 8> operands;
      for (Id c : n.node().children()) operands.push_back(refs[c.index()]);
      if (n.node().children().empty())
        refs.push_back(rhs.leaf(n.node()));
      else
        refs.push_back(rhs.op(n.node().op(), Span<const RightHandSide::Ref>(operands)));
      if (!rhs.ok()) return {};
    }
    const std::pair<Id, RightHandSide::Ref> target{eclass, refs.back()};
    return apply_checked(egraph, rhs, Span<const std::pair<Id, RightHandSide::Ref>>(&target, 1),
                         &pattern_.ast(), &subst);
  }
  std::vector<Var> vars() const override { return pattern_.vars(); }
  std::string to_string() const override { return pattern_.to_string(); }
  const PatternAst<TensorNode>* pattern_ast() const override { return &pattern_.ast(); }

 private:
  Pattern<TensorNode> pattern_;
};

/// A condition on a match: the substitution's classes carry their `TensorInfo`.
using TensorCondition = std::function<bool(const TensorEGraph&, const Subst&)>;

/// A right-hand side written in C++: build it with `RightHandSide` from the match and return
/// the root, or nothing to decline.
using RhsBuilder = std::function<std::optional<RightHandSide::Ref>(
    RightHandSide&, const TensorEGraph&, const Subst&)>;

/// `lhs => rhs` for the tensor dialect: checked application, named, labelled with its family.
inline TensorRewrite tensor_rewrite(std::string name, std::string_view family, std::string_view lhs,
                                    std::string_view rhs, TensorCondition condition = {}) {
  auto searcher = std::make_shared<PatternSearcher<TensorNode, TensorAnalysis>>(
      tensat::rule_pattern<TensorNode>(name, "lhs", lhs));
  std::shared_ptr<const Applier<TensorNode, TensorAnalysis>> applier =
      std::make_shared<CheckedPatternApplier>(tensat::rule_pattern<TensorNode>(name, "rhs", rhs));
  TensorRewrite rule(std::move(name), std::move(searcher), std::move(applier));
  if (condition)
    rule = rule.when([condition](TensorEGraph& g, Id, const Subst& s) { return condition(g, s); });
  return rule.with_label(std::string(family));
}

/// `lhs => C++ right-hand side` for the tensor dialect.
inline TensorRewrite tensor_rewrite(std::string name, std::string_view family, std::string_view lhs,
                                    RhsBuilder build, std::vector<Var> reads) {
  auto fn = [build = std::move(build)](TensorEGraph& egraph, Id eclass,
                                       const Subst& subst) -> std::vector<Id> {
    RightHandSide rhs(egraph);
    auto root = build(rhs, egraph, subst);
    if (!root) return {};
    return apply_checked(egraph, rhs, {{eclass, *root}});
  };
  return rewrite<TensorNode, TensorAnalysis>(std::move(name), lhs, std::move(fn), std::move(reads))
      .with_label(std::string(family));
}

/// The `TensorInfo` of the class bound to `var`.
[[nodiscard]] inline const TensorInfo& info_of(const TensorEGraph& egraph, const Subst& subst,
                                               const Var& var) {
  return egraph[subst[var]].data;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_CHECKED_REWRITE_H
