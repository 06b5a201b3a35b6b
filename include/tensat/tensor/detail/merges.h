// The n-way merges of the multi-pattern rules (TASO's operator merging, every sibling at once):
// concatenated operands, the merged op, and its result split back part by part.
#ifndef TENSAT_TENSOR_DETAIL_MERGES_H
#define TENSAT_TENSOR_DETAIL_MERGES_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "tensat/core/multipattern.h"
#include "tensat/tensor/checked_rewrite.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

using Ref = RightHandSide::Ref;

/// Extent of the tensor bound to `var` along `axis`, or -1 if out of range.
inline std::int64_t dim(const TensorInfo& info, std::int64_t axis) {
  if (axis < 0 || axis >= static_cast<std::int64_t>(info.dims.size())) return -1;
  return info.dims[static_cast<std::size_t>(axis)];
}

/// `operand` concatenated with `other` along `axis`, the op on it, then split back at
/// `operand`'s extent: the shared right-hand side of the two-output rules.
inline bool merged_pair(RightHandSide& rhs, Ref merged, std::int64_t axis,
                        std::int64_t first_extent, Ref& first, Ref& second) {
  if (!rhs.ok() || first_extent <= 0) return false;
  const Ref pair = rhs.op(Op::Split, {rhs.num(axis), rhs.num(first_extent), merged});
  first = rhs.op(Op::Split0, {pair});
  second = rhs.op(Op::Split1, {pair});
  return rhs.ok();
}

/// `parts` concatenated along `axis`, right-nested: (concat axis p0 (concat axis p1 (... pn))).
inline Ref concat_chain(RightHandSide& rhs, std::int64_t axis, const std::vector<Ref>& parts) {
  Ref cat = parts.back();
  for (std::size_t i = parts.size() - 1; i-- > 0;)
    cat = rhs.op(Op::Concat, {rhs.num(axis), parts[i], cat});
  return cat;
}

/// `merged` split back along `axis` into parts of `extents` (in order): part i is split_0 of the
/// i-th split of the rest, the last part the rest. Pairs each part with its class in `targets`;
/// empty when a term is invalid.
inline std::vector<std::pair<Id, Ref>> split_chain(RightHandSide& rhs, Ref merged,
                                                   std::int64_t axis,
                                                   const std::vector<std::int64_t>& extents,
                                                   const std::vector<Id>& targets) {
  std::vector<std::pair<Id, Ref>> out;
  Ref rest = merged;
  for (std::size_t i = 0; i + 1 < targets.size(); ++i) {
    Ref part{0}, remainder{0};
    if (!merged_pair(rhs, rest, axis, extents[i], part, remainder)) return {};
    out.emplace_back(targets[i], part);
    rest = remainder;
  }
  out.emplace_back(targets.back(), rest);
  if (!rhs.ok()) return {};
  return out;
}

/// Whether e-class `operand` holds a concatenation along its last axis, as every merged
/// product's right operand does; a concatenation by rows (`matmul-concat-inner`'s [W; U]) is
/// not a merge.
inline bool concatenated_by_columns(const TensorEGraph& egraph, Id operand) {
  const auto last = static_cast<std::int64_t>(egraph[operand].data.rank()) - 1;
  bool found = false;
  egraph.for_each_node(operand, [&](const TensorNode& n) {
    found = found || (n.op() == Op::Concat && egraph[n.children()[0]].data.value == last);
  });
  return found;
}

/// The base of the n-way merges: a two-clause multi-pattern's matches (`?m1`, `?m2` the merged
/// terms) grouped by the classes of the `key` variables, each term with its `parts` (the
/// operands concatenated in the merged term), first seen first. A term whose first part is
/// already a concatenation by columns (a merge's own product) is left out, so a later round
/// does not merge a merge again. Groups of two or more go to `merge`, in class-id order.
class GroupedMerge : public Applier<TensorNode, TensorAnalysis> {
 public:
  struct Member {
    Id term;
    std::vector<Id> parts;
    bool operator<(const Member& other) const { return term < other.term; }
  };

  std::vector<Id> apply_one(TensorEGraph& egraph, Id eclass, const Subst& subst,
                            std::string_view name) const override {
    return apply_matches(egraph, {SearchMatches{eclass, {subst}}}, name);
  }

  std::vector<Id> apply_matches(TensorEGraph& egraph, const std::vector<SearchMatches>& matches,
                                std::string_view) const override {
    std::map<std::vector<Id>, std::vector<Member>> groups;
    const auto add = [&](const Subst& s, const Var& term, const std::vector<Var>& parts) {
      std::vector<Id> key;
      for (const Var& v : key_) key.push_back(egraph.find(s[v]));
      auto& group = groups[key];
      Member m{egraph.find(s[term]), {}};
      for (const auto& member : group)
        if (member.term == m.term) return;
      for (const Var& v : parts) m.parts.push_back(egraph.find(s[v]));
      if (concatenated_by_columns(egraph, m.parts.front())) return;
      group.push_back(std::move(m));
    };
    for (const SearchMatches& m : matches)
      for (const Subst& s : m.substs) {
        add(s, m1_, first_parts_);
        add(s, m2_, second_parts_);
      }
    std::vector<Id> changed;
    for (auto& [key, group] : groups) {
      if (group.size() < 2) continue;
      std::sort(group.begin(), group.end());
      RightHandSide rhs(egraph);
      const std::vector<std::pair<Id, Ref>> targets = merge(rhs, egraph, key, group);
      if (!rhs.ok() || targets.size() != group.size()) continue;
      for (Id id : apply_checked(egraph, rhs, Span<const std::pair<Id, Ref>>(targets)))
        changed.push_back(id);
    }
    return changed;
  }

  [[nodiscard]] std::vector<Var> vars() const override {
    std::vector<Var> out{m1_, m2_};
    out.insert(out.end(), key_.begin(), key_.end());
    out.insert(out.end(), first_parts_.begin(), first_parts_.end());
    out.insert(out.end(), second_parts_.begin(), second_parts_.end());
    return out;
  }

 protected:
  GroupedMerge(std::vector<Var> key, std::vector<Var> first_parts, std::vector<Var> second_parts)
      : key_(std::move(key)),
        first_parts_(std::move(first_parts)),
        second_parts_(std::move(second_parts)) {}

  /// The merged term and its split, one (term class, part) per member; empty to skip the group.
  virtual std::vector<std::pair<Id, Ref>> merge(RightHandSide& rhs, const TensorEGraph& egraph,
                                                const std::vector<Id>& key,
                                                const std::vector<Member>& group) const = 0;

 private:
  Var m1_{"?m1"}, m2_{"?m2"};
  std::vector<Var> key_, first_parts_, second_parts_;
};

/// The applier of `matmul-share-lhs-all`: every product of one left operand (and activation)
/// that a search found, merged at once into a single product of the right operands
/// concatenated by columns, then split back part by part. The pairwise `matmul-share-lhs`
/// reaches n products only through n - 1 rounds whose pair, triple ... merges of every
/// subset explode the e-graph (NasRNN: 58,000 nodes in two rounds); one n-way merge adds n + 2
/// terms per shared operand.
class SharedLhsMatMulMerge final : public GroupedMerge {
 public:
  SharedLhsMatMulMerge() : GroupedMerge({Var("?a"), Var("?x")}, {Var("?y")}, {Var("?z")}) {}
  [[nodiscard]] std::string to_string() const override {
    return "<merge every product of the shared operand>";
  }

 private:
  std::vector<std::pair<Id, Ref>> merge(RightHandSide& rhs, const TensorEGraph& egraph,
                                        const std::vector<Id>& key,
                                        const std::vector<Member>& group) const override {
    const auto axis = static_cast<std::int64_t>(egraph[group.front().parts[0]].data.rank()) - 1;
    std::vector<Ref> operands;
    std::vector<std::int64_t> extents;
    std::vector<Id> terms;
    for (const Member& m : group) {
      operands.push_back(rhs.cls(m.parts[0]));
      extents.push_back(dim(egraph[m.parts[0]].data, axis));
      terms.push_back(m.term);
    }
    const Ref product =
        rhs.op(Op::MatMul, {rhs.cls(key[0]), rhs.cls(key[1]), concat_chain(rhs, axis, operands)});
    return split_chain(rhs, product, axis, extents, terms);
  }
};

/// The applier of `matmul-sum-share-all`: every sum x W_i + h U_i of the same two left
/// operands that a search found (an RNN cell's gates, NasRNN's eight combinations, an LSTM's
/// four), merged at once into one product [x h] [W_1 ... W_n; U_1 ... U_n], split back by
/// columns. The weight operand is weight-only in a model (precomputed once); the products
/// stream it in one pass where the pairwise rules reach it only through `matmul-share-lhs-all`
/// on x and on h, then a sum of two splits that no rule turns into one product.
class SharedOperandsSumMerge final : public GroupedMerge {
 public:
  SharedOperandsSumMerge()
      : GroupedMerge({Var("?x"), Var("?h")}, {Var("?w1"), Var("?u1")}, {Var("?w2"), Var("?u2")}) {}
  [[nodiscard]] std::string to_string() const override {
    return "<merge every sum of products of the two operands>";
  }

 private:
  std::vector<std::pair<Id, Ref>> merge(RightHandSide& rhs, const TensorEGraph& egraph,
                                        const std::vector<Id>& key,
                                        const std::vector<Member>& group) const override {
    const TensorInfo& x = egraph[key[0]].data;
    if (x.rank() < 2 || x.rank() != egraph[key[1]].data.rank()) return {};
    const auto cols = static_cast<std::int64_t>(x.rank()) - 1;
    std::vector<Ref> ws, us;
    std::vector<std::int64_t> extents;
    std::vector<Id> terms;
    for (const Member& m : group) {
      ws.push_back(rhs.cls(m.parts[0]));
      us.push_back(rhs.cls(m.parts[1]));
      extents.push_back(dim(egraph[m.parts[0]].data, cols));
      terms.push_back(m.term);
    }
    const Ref lhs = rhs.op(Op::Concat, {rhs.num(cols), rhs.cls(key[0]), rhs.cls(key[1])});
    const Ref weights = rhs.op(
        Op::Concat, {rhs.num(cols - 1), concat_chain(rhs, cols, ws), concat_chain(rhs, cols, us)});
    return split_chain(rhs, rhs.op(Op::MatMul, {rhs.num(0), lhs, weights}), cols, extents, terms);
  }
};

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_DETAIL_MERGES_H
