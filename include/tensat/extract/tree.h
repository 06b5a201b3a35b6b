// TreeExtractor: the cheapest term of every e-class under a tree cost (Knuth's algorithm).
#ifndef TENSAT_EXTRACT_TREE_H
#define TENSAT_EXTRACT_TREE_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/extract/cost.h"

namespace tensat {
inline namespace v0 {

/// Finds, for every e-class, a cheapest term under the tree cost `CF` (a shared subterm is paid
/// at every use, as in egg's `Extractor`).
///
/// Knuth's generalization of Dijkstra's algorithm: a node becomes a candidate once all its
/// distinct child classes are finalized; the cheapest candidate finalizes its class. O(E log E)
/// over the e-graph's edges, where egg's fixpoint iteration is quadratic on long chains. Exact
/// for monotone costs (see cost.h). Nodes on cycles only are never chosen; a class with no
/// acyclic term has no cost. Ties go to the lower node id.
template <class L, class A, class CF>
class TreeExtractor {
 public:
  using Cost = typename CF::Cost;

  TreeExtractor(const EGraph<L, A>& egraph, CF cost_function)
      : egraph_(egraph), cf_(std::move(cost_function)) {
    compute();
  }

  /// The best cost and term for class `id`. Throws `Error` if the class has no acyclic term.
  [[nodiscard]] std::pair<Cost, RecExpr<L>> find_best(Id id) const {
    return {find_best_cost(id), build(id)};
  }
  /// The best cost of class `id`, or nothing if it has no acyclic term.
  [[nodiscard]] std::optional<Cost> best_cost(Id id) const {
    const auto& b = best_[dense(id)];
    if (!b) return std::nullopt;
    return b->first;
  }
  [[nodiscard]] Cost find_best_cost(Id id) const {
    const auto& b = best_[dense(id)];
    if (!b) throw Error(fmt::format("e-class {} has no acyclic term to extract", egraph_.find(id)));
    return b->first;
  }
  /// The chosen node of class `id`.
  [[nodiscard]] const L& find_best_node(Id id) const {
    const auto& b = best_[dense(id)];
    if (!b) throw Error(fmt::format("e-class {} has no acyclic term to extract", egraph_.find(id)));
    return egraph_.node(b->second);
  }

 private:
  std::size_t dense(Id id) const { return dense_of_[egraph_.find(id).index()]; }

  void compute() {
    const auto& classes = egraph_.classes();
    dense_of_.assign(egraph_.number_of_node_ids(), 0);
    for (std::size_t i = 0; i < classes.size(); ++i) dense_of_[classes[i].id.index()] = static_cast<std::uint32_t>(i);
    best_.assign(classes.size(), std::nullopt);

    // Members: (class, node id) pairs; remaining[m] = distinct child classes not yet final.
    // users: CSR from a class to the members that have it as a child.
    std::vector<std::pair<std::uint32_t, Id>> members;
    std::vector<std::uint32_t> remaining;
    std::vector<std::uint32_t> user_count(classes.size() + 1, 0);
    std::vector<std::uint32_t> child_buf;
    auto distinct_children = [&](const L& node) {
      child_buf.clear();
      for (Id c : node.children()) child_buf.push_back(static_cast<std::uint32_t>(dense(c)));
      std::sort(child_buf.begin(), child_buf.end());
      child_buf.erase(std::unique(child_buf.begin(), child_buf.end()), child_buf.end());
    };
    for (std::size_t i = 0; i < classes.size(); ++i)
      for (Id nid : classes[i].nodes) {
        distinct_children(egraph_.node(nid));
        members.emplace_back(static_cast<std::uint32_t>(i), nid);
        remaining.push_back(static_cast<std::uint32_t>(child_buf.size()));
        for (auto c : child_buf) ++user_count[c + 1];
      }
    for (std::size_t i = 1; i < user_count.size(); ++i) user_count[i] += user_count[i - 1];
    std::vector<std::uint32_t> users(user_count.back());
    std::vector<std::uint32_t> fill(user_count.begin(), user_count.end() - 1);
    for (std::size_t m = 0; m < members.size(); ++m) {
      distinct_children(egraph_.node(members[m].second));
      for (auto c : child_buf) users[fill[c]++] = static_cast<std::uint32_t>(m);
    }

    using Entry = std::tuple<Cost, std::uint32_t, std::uint32_t>;  // cost, node id, member
    auto greater = [](const Entry& a, const Entry& b) {
      if (std::get<0>(b) < std::get<0>(a)) return true;
      if (std::get<0>(a) < std::get<0>(b)) return false;
      return std::get<1>(a) > std::get<1>(b);
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(greater)> queue(greater);
    auto push = [&](std::uint32_t m) {
      const L& node = egraph_.node(members[m].second);
      Cost c = cf_.cost(node, [&](Id child) { return best_[dense(child)]->first; });
      queue.emplace(std::move(c), members[m].second.value, m);
    };
    for (std::size_t m = 0; m < members.size(); ++m)
      if (remaining[m] == 0) push(static_cast<std::uint32_t>(m));
    while (!queue.empty()) {
      auto [cost, nid, m] = queue.top();
      queue.pop();
      const std::uint32_t cls = members[m].first;
      if (best_[cls]) continue;
      best_[cls] = std::make_pair(std::move(cost), Id(nid));
      for (std::uint32_t k = user_count[cls]; k < user_count[cls + 1]; ++k)
        if (--remaining[users[k]] == 0) push(users[k]);
    }
  }

  /// The chosen term of class `root` as a RecExpr, each class stored once (a DAG).
  RecExpr<L> build(Id root) const {
    RecExpr<L> expr;
    std::vector<std::uint32_t> index(best_.size(), kUnset);
    std::vector<std::pair<std::size_t, bool>> stack{{dense(root), false}};
    while (!stack.empty()) {
      auto [cls, expanded] = stack.back();
      stack.pop_back();
      if (index[cls] != kUnset) continue;
      if (!best_[cls]) throw Error("class has no acyclic term to extract");
      const L& node = egraph_.node(best_[cls]->second);
      if (!expanded) {
        stack.emplace_back(cls, true);
        for (Id child : node.children())
          if (index[dense(child)] == kUnset) stack.emplace_back(dense(child), false);
        continue;
      }
      L copy = map_children(node, [&](Id child) { return Id(index[dense(child)]); });
      index[cls] = static_cast<std::uint32_t>(expr.add(std::move(copy)).value);
    }
    return expr;
  }

  static constexpr std::uint32_t kUnset = 0xFFFFFFFFu;

  const EGraph<L, A>& egraph_;
  CF cf_;
  std::vector<std::uint32_t> dense_of_;
  std::vector<std::optional<std::pair<Cost, Id>>> best_;
};

/// Deduction guide: `TreeExtractor extractor(egraph, AstSize{});`.
template <class L, class A, class CF>
TreeExtractor(const EGraph<L, A>&, CF) -> TreeExtractor<L, A, CF>;

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_TREE_H
