// E-class analyses: data attached to every e-class, made per e-node and merged on union.
#ifndef TENSAT_CORE_ANALYSIS_H
#define TENSAT_CORE_ANALYSIS_H

#include <optional>
#include <type_traits>
#include <utility>

#include "tensat/fwd.h"
#include "tensat/core/id.h"

namespace tensat {
inline namespace v0 {

/// What `Analysis::merge(a, b)` did: `a_changed` if `a` was modified, `b_changed` if the result
/// differs from `b`. Both drive re-analysis of parents; answering `true` when unsure is safe.
struct DidMerge {
  bool a_changed = false;
  bool b_changed = false;

  friend constexpr DidMerge operator|(DidMerge x, DidMerge y) noexcept {
    return {x.a_changed || y.a_changed, x.b_changed || y.b_changed};
  }
  friend constexpr bool operator==(DidMerge x, DidMerge y) noexcept {
    return x.a_changed == y.a_changed && x.b_changed == y.b_changed;
  }
};

/// \page analysis The Analysis requirements (egg's `Analysis` trait)
///
/// ```
/// struct MyAnalysis {
///   using Data = ...;                                        // per e-class value
///   Data make(const EGraph<L, MyAnalysis>& g, const L& node, Id id);   // required
///   DidMerge merge(Data& a, Data b);                         // required, a := a ⊔ b
///   void modify(EGraph<L, MyAnalysis>& g, Id id);            // optional
/// };
/// ```
/// * `make` sees a node whose children are canonical and may read `g[child].data`; it may not
///   change the e-graph (it runs in the middle of `add`).
/// * `merge` must be a join: commutative, associative, idempotent, otherwise saturation and
///   rebuilding order leak into the results. It may throw (an `Error`) to report data that
///   cannot be joined, a contradiction; the exception leaves `unite`/`rebuild` and the e-graph
///   is then only destructible.
/// * `modify` runs after a class is created and after every merge into it; it may add nodes,
///   unite classes and prune the class's node list (`EGraph::retain_nodes`).

/// Keeps the larger value in `a`.
template <class T>
DidMerge merge_max(T& a, T b) {
  if (a < b) {
    a = std::move(b);
    return {true, false};
  }
  return {false, b < a};
}

/// Keeps the smaller value in `a`.
template <class T>
DidMerge merge_min(T& a, T b) {
  if (b < a) {
    a = std::move(b);
    return {true, false};
  }
  return {false, a < b};
}

namespace detail {
/// `T` in a non-deduced context (C++20's std::type_identity); rewrite.h uses it too.
template <class T>
struct TypeIdentity {
  using type = T;
};
}  // namespace detail

/// Merges optional values: an empty side takes the other; two values go through
/// `merge_values(T& a_value, T b_value) -> DidMerge`. `T` is deduced from `a` alone, so `b` may
/// be a plain value or `std::nullopt`.
template <class T, class F>
DidMerge merge_option(std::optional<T>& a, typename detail::TypeIdentity<std::optional<T>>::type b,
                      F&& merge_values) {
  if (!a) {
    if (!b) return {false, false};
    a = std::move(b);
    return {true, false};
  }
  if (!b) return {false, true};
  return merge_values(*a, std::move(*b));
}

/// The trivial analysis (egg's `()`): no data, nothing to merge.
struct NoAnalysis {
  struct Data {
    friend constexpr bool operator==(Data, Data) noexcept { return true; }
  };
  template <class EGraph, class L>
  Data make(const EGraph&, const L&, Id) const noexcept {
    return {};
  }
  DidMerge merge(Data&, Data) const noexcept { return {false, false}; }
};

namespace detail {
template <class A, class G, class = void>
struct HasModify : std::false_type {};
template <class A, class G>
struct HasModify<A, G, std::void_t<decltype(std::declval<A&>().modify(std::declval<G&>(), Id{}))>>
    : std::true_type {};
}  // namespace detail

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_ANALYSIS_H
