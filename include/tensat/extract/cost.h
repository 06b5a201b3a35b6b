// Cost functions for extraction: the CostFunction requirements, AstSize and AstDepth.
#ifndef TENSAT_EXTRACT_COST_H
#define TENSAT_EXTRACT_COST_H

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "tensat/core/id.h"

namespace tensat {
inline namespace v0 {

/// \page cost_function The CostFunction requirements (egg's `CostFunction`)
///
/// ```
/// struct MyCost {
///   using Cost = ...;   // totally ordered by operator<
///   template <class ChildCost>   // ChildCost: Id -> Cost of that child's best term
///   Cost cost(const L& node, ChildCost&& child_cost) const;
/// };
/// ```
/// The tree extractor is exact when costs are monotone: a node never costs less than any of its
/// children (true of every sum or max of non-negative parts).

/// Saturating addition, so that huge terms (e.g. exponential trees) do not wrap around.
[[nodiscard]] constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max()
                                                         : a + b;
}

/// Number of nodes of the term: 1 + the children's sizes (saturating).
struct AstSize {
  using Cost = std::size_t;
  template <class L, class ChildCost>
  Cost cost(const L& node, ChildCost&& child_cost) const {
    Cost total = 1;
    for (Id child : node.children()) total = saturating_add(total, child_cost(child));
    return total;
  }
};

/// Depth of the term: 1 + the deepest child.
struct AstDepth {
  using Cost = std::size_t;
  template <class L, class ChildCost>
  Cost cost(const L& node, ChildCost&& child_cost) const {
    Cost deepest = 0;
    for (Id child : node.children()) deepest = std::max(deepest, child_cost(child));
    return saturating_add(deepest, 1);
  }
};

/// Cost of a whole term under `cf` (egg's `cost_rec`).
template <class CF, class Expr>
typename CF::Cost cost_rec(const CF& cf, const Expr& expr) {
  std::vector<typename CF::Cost> costs;
  costs.reserve(expr.size());
  for (const auto& node : expr)
    costs.push_back(cf.cost(node, [&](Id child) { return costs[child.index()]; }));
  return costs.back();
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_COST_H
