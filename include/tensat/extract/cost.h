// Cost functions for extraction: the CostFunction requirements, AstSize and AstDepth.
#ifndef TENSAT_EXTRACT_COST_H
#define TENSAT_EXTRACT_COST_H

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>
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

/// A callable as a CostFunction with `double` costs, so that a lambda serves where a cost
/// struct would: `f(node, child_cost)` gives the node's whole cost (`child_cost(id)` is the
/// best cost of a child class), or `f(node)` its own cost, to which the children's are added.
/// `TreeExtractor` wraps a callable without a `Cost` member in one of these by itself.
template <class F>
struct CostFn {
  using Cost = double;
  F f;

  CostFn(F fn) : f(std::move(fn)) {}  // NOLINT: implicit, so a lambda converts

  template <class L, class ChildCost>
  Cost cost(const L& node, ChildCost&& child_cost) const {
    if constexpr (std::is_invocable_v<const F&, const L&, ChildCost&>) {
      return static_cast<double>(f(node, child_cost));
    } else {
      static_assert(std::is_invocable_v<const F&, const L&>,
                    "a cost callable is called as f(node, child_cost) or f(node)");
      double total = static_cast<double>(f(node));
      for (Id child : node.children()) total += child_cost(child);
      return total;
    }
  }
};

namespace detail {
template <class CF, class = void>
struct HasCostType : std::false_type {};
template <class CF>
struct HasCostType<CF, std::void_t<typename CF::Cost>> : std::true_type {};
}  // namespace detail

/// `CF` itself when it meets the CostFunction requirements (has a `Cost` type), else `CostFn<CF>`.
template <class CF>
using AsCostFunction = std::conditional_t<detail::HasCostType<CF>::value, CF, CostFn<CF>>;

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
