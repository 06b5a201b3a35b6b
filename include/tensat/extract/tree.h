// TreeExtractor: the cheapest term of every e-class under a tree cost (Knuth's algorithm).
#ifndef TENSAT_EXTRACT_TREE_H
#define TENSAT_EXTRACT_TREE_H

#include <algorithm>
#include <chrono>
#include <limits>
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
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"

namespace tensat {
inline namespace v0 {

namespace detail {

/// For Knuth's algorithm: `remaining[i]` = number of distinct child classes of item (node) `i`,
/// and, per class, the items that have it as a child (CSR: `users[offsets[c] .. offsets[c+1])`).
/// `child_classes(i, out)` fills `out` with item i's child classes (repeats allowed) and returns
/// false for items to leave out (they keep remaining = 0 and are never users).
struct ChildUsers {
  std::vector<std::uint32_t> remaining, offsets, users;

  template <class ChildClasses>
  ChildUsers(std::size_t num_classes, std::size_t num_items, ChildClasses&& child_classes)
      : remaining(num_items, 0), offsets(num_classes + 1, 0) {
    std::vector<std::uint32_t> buf;
    auto distinct = [&](std::size_t i) {
      buf.clear();
      if (!child_classes(i, buf)) return false;
      std::sort(buf.begin(), buf.end());
      buf.erase(std::unique(buf.begin(), buf.end()), buf.end());
      return true;
    };
    for (std::size_t i = 0; i < num_items; ++i) {
      if (!distinct(i)) continue;
      remaining[i] = static_cast<std::uint32_t>(buf.size());
      for (std::uint32_t c : buf) ++offsets[c + 1];
    }
    for (std::size_t c = 0; c < num_classes; ++c) offsets[c + 1] += offsets[c];
    users.resize(offsets.back());
    std::vector<std::uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (std::size_t i = 0; i < num_items; ++i)
      if (distinct(i))
        for (std::uint32_t c : buf) users[fill[c]++] = static_cast<std::uint32_t>(i);
  }
};

}  // namespace detail

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
    for (std::size_t i = 0; i < classes.size(); ++i)
      dense_of_[classes[i].id.index()] = static_cast<std::uint32_t>(i);
    best_.assign(classes.size(), std::nullopt);

    // Members: (class, node id) pairs, numbered densely for the user lists.
    std::vector<std::pair<std::uint32_t, Id>> members;
    for (std::size_t i = 0; i < classes.size(); ++i)
      for (Id nid : classes[i].nodes) members.emplace_back(static_cast<std::uint32_t>(i), nid);
    detail::ChildUsers users(classes.size(), members.size(),
                             [&](std::size_t m, std::vector<std::uint32_t>& out) {
                               for (Id c : egraph_.node(members[m].second).children())
                                 out.push_back(static_cast<std::uint32_t>(dense(c)));
                               return true;
                             });
    auto& remaining = users.remaining;

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
      for (std::uint32_t k = users.offsets[cls]; k < users.offsets[cls + 1]; ++k)
        if (--remaining[users.users[k]] == 0) push(users.users[k]);
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

/// Deduction guide: `TreeExtractor extractor(egraph, AstSize{});`, and with a lambda
/// `TreeExtractor extractor(egraph, [](const L& node) { return 1.0; });` (see `CostFn`).
template <class L, class A, class CF>
TreeExtractor(const EGraph<L, A>&, CF) -> TreeExtractor<L, A, AsCostFunction<CF>>;

namespace detail {

/// Knuth's algorithm on an ExtractionGraph with additive costs: best[c] and the chosen node.
/// Exact when no cost is negative. Ties go to the lower node index.
inline void knuth_tree(const ExtractionGraph& g, std::vector<double>& best,
                       std::vector<std::uint32_t>& choice) {
  const auto n_nodes = static_cast<std::uint32_t>(g.num_nodes());
  ChildUsers users(g.num_classes(), n_nodes, [&](std::size_t n, std::vector<std::uint32_t>& out) {
    const auto n32 = static_cast<std::uint32_t>(n);
    if (g.subsumed(n32)) return false;
    out.assign(g.children(n32).begin(), g.children(n32).end());
    return true;
  });
  auto& remaining = users.remaining;
  using Entry = std::pair<double, std::uint32_t>;  // cost, node
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push = [&](std::uint32_t n) {
    double cost = g.node_cost(n);
    for (std::uint32_t c : g.children(n)) cost += best[c];
    queue.emplace(cost, n);
  };
  best.assign(g.num_classes(), std::numeric_limits<double>::infinity());
  choice.assign(g.num_classes(), ExtractionGraph::kNone);
  for (std::uint32_t n = 0; n < n_nodes; ++n)
    if (!g.subsumed(n) && remaining[n] == 0) push(n);
  while (!queue.empty()) {
    const auto [cost, n] = queue.top();
    queue.pop();
    const std::uint32_t c = g.node_class(n);
    if (choice[c] != ExtractionGraph::kNone) continue;
    best[c] = cost;
    choice[c] = n;
    for (std::uint32_t k = users.offsets[c]; k < users.offsets[c + 1]; ++k)
      if (--remaining[users.users[k]] == 0) push(users.users[k]);
  }
}

/// Exact tree costs by dynamic programming in topological order, if the class graph (over
/// non-subsumed nodes) is acyclic; returns false otherwise. Handles negative costs.
inline bool topological_tree(const ExtractionGraph& g, std::vector<double>& best,
                             std::vector<std::uint32_t>& choice) {
  // Kahn on the reversed class graph: a class is ready once every child class of every one of
  // its nodes is done.
  const std::size_t n_classes = g.num_classes();
  std::vector<std::uint32_t> pending(n_classes, 0);
  std::vector<std::vector<std::uint32_t>> parents(n_classes);
  for (std::uint32_t c = 0; c < n_classes; ++c)
    for (std::uint32_t n : g.class_nodes(c)) {
      if (g.subsumed(n)) continue;
      for (std::uint32_t child : g.children(n)) {
        ++pending[c];
        parents[child].push_back(c);
      }
    }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t c = 0; c < n_classes; ++c)
    if (pending[c] == 0) ready.push_back(c);
  best.assign(n_classes, std::numeric_limits<double>::infinity());
  choice.assign(n_classes, ExtractionGraph::kNone);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::uint32_t c = ready.back();
    ready.pop_back();
    ++done;
    for (std::uint32_t n : g.class_nodes(c)) {
      if (g.subsumed(n)) continue;
      double cost = g.node_cost(n);
      for (std::uint32_t child : g.children(n)) cost += best[child];
      if (cost < best[c]) {
        best[c] = cost;
        choice[c] = n;
      }
    }
    for (std::uint32_t p : parents[c])
      if (--pending[p] == 0) ready.push_back(p);
  }
  return done == n_classes;
}

}  // namespace detail

/// The tree-optimal extraction of `graph` (additive node costs, shared terms paid per use).
/// Knuth's algorithm, exact when no cost is negative (status Optimal). With negative costs the
/// tree optimum of a cyclic e-graph can be unbounded (a cycle of negative cost unrolled), so:
/// an acyclic class graph is solved exactly by dynamic programming in topological order; a
/// cyclic one gets Knuth's answer with status Feasible. Throws `Error` if a root has no finite
/// term.
inline Extraction extract_tree(const ExtractionGraph& graph) {
  const auto start = std::chrono::steady_clock::now();
  bool negative = false;
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n)
    negative = negative || graph.node_cost(n) < 0;
  std::vector<double> best;
  Extraction result;
  result.status = ExtractionStatus::Optimal;
  if (!negative || !detail::topological_tree(graph, best, result.choice)) {
    detail::knuth_tree(graph, best, result.choice);
    if (negative) result.status = ExtractionStatus::Feasible;
  }
  for (std::uint32_t root : graph.roots())
    if (result.choice[root] == ExtractionGraph::kNone)
      throw Error(fmt::format("extract_tree: root class {} has no finite term", root));
  result.choice = detail::reachable_choice(graph, result.choice);
  result.tree_cost = 0;
  for (std::uint32_t root : graph.roots()) result.tree_cost += best[root];
  if (result.status == ExtractionStatus::Optimal) result.lower_bound = result.tree_cost;
  result.dag_cost = dag_cost(graph, result.choice);
  result.micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  return result;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_TREE_H
