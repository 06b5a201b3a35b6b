// order_like: lay out a program's nodes in the order of a reference program (usually the one it
// was optimized from), so that an executor running both in index order computes the values they
// have in common in the same sequence.
#ifndef TENSAT_EXTRACT_ORDER_H
#define TENSAT_EXTRACT_ORDER_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"

namespace tensat {
inline namespace v0 {

namespace detail {

/// Numbers nodes by structure: two nodes get the same number when they are equal once their
/// children are replaced by their own numbers (hash-consing over programs rather than e-classes).
template <class L>
class StructuralNumbering {
 public:
  /// The number of `node`, whose children are already numbers; a new number if unseen.
  std::uint64_t intern(L node) {
    return numbers_.try_emplace(std::move(node), static_cast<std::uint64_t>(numbers_.size()))
        .first->second;
  }
  /// The numbers of `program`'s nodes, in index order.
  std::vector<std::uint64_t> number(const RecExpr<L>& program) {
    std::vector<std::uint64_t> out;
    out.reserve(program.size());
    for (const L& node : program)
      out.push_back(intern(map_children(
          node, [&](Id c) { return Id(static_cast<std::uint32_t>(out[c.index()])); })));
    return out;
  }
  [[nodiscard]] std::size_t size() const noexcept { return numbers_.size(); }

 private:
  std::unordered_map<L, std::uint64_t, NodeHash> numbers_;
};

}  // namespace detail

/// A key no node matches (`order_like` ranks such a node by its readers alone).
inline constexpr std::uint64_t kNoOrderKey = std::numeric_limits<std::uint64_t>::max();

/// `program` with its nodes reordered (a topological order still: children before parents, the
/// root last) to follow the reference order that `reference_keys` describes.
///
/// `program_keys[i]` names the value node `i` of `program` computes and `reference_keys[j]` the
/// value the reference computes at position `j` (e-class ids, say; `kNoOrderKey` for none). A
/// node whose key the reference has is ranked at the key's first position there; the others
/// have no rank of their own. Every node then takes the lowest of its own rank and its readers'
/// ranks (a value is needed no later than its first reader), so a node the reference lacks runs
/// as late as it can, just before the node that reads it; a node with neither ranks last. The
/// nodes are emitted by list scheduling: of the nodes whose operands are all emitted, the lowest
/// rank first, ties in `program`'s own order.
///
/// O(n log n) in the nodes of both programs. Throws `Error` when a key vector's length differs
/// from its program's.
template <class L>
[[nodiscard]] RecExpr<L> order_like(const RecExpr<L>& program,
                                    const std::vector<std::uint64_t>& program_keys,
                                    const std::vector<std::uint64_t>& reference_keys) {
  const std::size_t n = program.size();
  if (program_keys.size() != n) throw Error("order_like: program_keys does not match the program");
  if (n == 0) return program;

  constexpr std::size_t kUnranked = std::numeric_limits<std::size_t>::max();
  std::unordered_map<std::uint64_t, std::size_t> first_position;
  first_position.reserve(reference_keys.size());
  for (std::size_t j = 0; j < reference_keys.size(); ++j)
    if (reference_keys[j] != kNoOrderKey) first_position.emplace(reference_keys[j], j);

  // Readers come later than their operands, so one backward pass settles every rank.
  std::vector<std::size_t> rank(n, kUnranked);
  for (std::size_t i = n; i-- > 0;) {
    const auto found = first_position.find(program_keys[i]);
    if (found != first_position.end()) rank[i] = std::min(rank[i], found->second);
    for (Id child : program[Id(i)].children())
      rank[child.index()] = std::min(rank[child.index()], rank[i]);
  }

  std::vector<std::uint32_t> waiting(n, 0);  // operands not yet emitted
  std::vector<std::vector<std::uint32_t>> readers(n);
  for (std::size_t i = 0; i < n; ++i)
    for (Id child : program[Id(i)].children()) {
      ++waiting[i];
      readers[child.index()].push_back(static_cast<std::uint32_t>(i));
    }
  using Entry = std::pair<std::size_t, std::uint32_t>;  // (rank, index in program)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  const std::size_t root = n - 1;
  for (std::size_t i = 0; i < root; ++i)
    if (waiting[i] == 0) ready.emplace(rank[i], static_cast<std::uint32_t>(i));

  std::vector<Id> new_index(n);
  RecExpr<L> out;
  const auto emit = [&](std::size_t i) {
    new_index[i] =
        out.add(map_children(program[Id(i)], [&](Id c) { return new_index[c.index()]; }));
  };
  while (!ready.empty()) {
    const std::uint32_t i = ready.top().second;
    ready.pop();
    emit(i);
    for (std::uint32_t reader : readers[i])
      if (--waiting[reader] == 0 && reader != root) ready.emplace(rank[reader], reader);
  }
  emit(root);  // every other node is out, and none reads the root, which is last
  return out;
}

/// `order_like` with structure as the key: a node of `program` matches when `reference` has the
/// same subterm (an equal node over matching operands). Shared nodes then keep `reference`'s
/// relative order exactly, and the same DAG in any order comes back in `reference`'s order. A
/// node over a changed operand is a different subterm, so after an optimization that changed
/// something early this matches little: given the e-graph, the overload below matches values.
template <class L>
[[nodiscard]] RecExpr<L> order_like(const RecExpr<L>& program, const RecExpr<L>& reference) {
  detail::StructuralNumbering<L> numbering;
  const std::vector<std::uint64_t> reference_keys = numbering.number(reference);
  const std::vector<std::uint64_t> program_keys = numbering.number(program);
  return order_like(program, program_keys, reference_keys);
}

/// The e-class of each node of `program` in `egraph` (canonical ids), `kNoOrderKey` for a node
/// the e-graph lacks (and for every node above it).
template <class L, class A>
[[nodiscard]] std::vector<std::uint64_t> eclass_keys(const EGraph<L, A>& egraph,
                                                     const RecExpr<L>& program) {
  std::vector<std::uint64_t> keys;
  keys.reserve(program.size());
  for (const L& node : program) {
    bool complete = true;
    const L canonical = map_children(node, [&](Id c) {
      const std::uint64_t key = keys[c.index()];
      if (key == kNoOrderKey) complete = false;
      return complete ? Id(static_cast<std::uint32_t>(key)) : Id(0);
    });
    const Id found = complete ? egraph.lookup_id(canonical) : kInvalidId;
    keys.push_back(found == kInvalidId ? kNoOrderKey
                                       : static_cast<std::uint64_t>(egraph.find(found).value));
  }
  return keys;
}

/// `order_like` with e-classes as the key: both programs' nodes are looked up in `egraph`, and a
/// node of `program` is ranked where `reference` first computes a value of its class, whatever
/// node computed it there. So a rewritten node takes the place of the node it replaced (a fused
/// kernel that of the last op it absorbed) and nodes downstream of a change stay where they
/// were. This is how `tensor::optimize` lays out what it extracts.
template <class L, class A>
[[nodiscard]] RecExpr<L> order_like(const EGraph<L, A>& egraph, const RecExpr<L>& program,
                                    const RecExpr<L>& reference) {
  return order_like(program, eclass_keys(egraph, program), eclass_keys(egraph, reference));
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_ORDER_H
