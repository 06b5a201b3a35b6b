// DagProblem: the DAG-extraction problem of an ExtractionGraph after pre-simplification, the
// common input of the exact extractors (built-in branch-and-bound and the CBC ILP).
#ifndef TENSAT_EXTRACT_DAG_PROBLEM_H
#define TENSAT_EXTRACT_DAG_PROBLEM_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "tensat/core/error.h"
#include "tensat/core/span.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/greedy_dag.h"

namespace tensat {
inline namespace v0 {

/// The DAG-extraction problem reduced to what can matter, with classes and nodes renumbered
/// densely and maps back to the ExtractionGraph. Built by `DagProblem::reduce`, which removes, to
/// a fixpoint:
/// - nodes that can never be extracted: subsumed ones, those with their own class as a child,
///   and those costing +infinity (no extraction with them has a finite cost);
/// - nodes with a child class that has no node left, and then classes with no node left;
/// - classes unreachable from the roots through the remaining nodes;
/// - with non-negative costs only: nodes whose own cost exceeds the incumbent's total (they
///   cannot be part of a better solution), and dominated nodes: a node is dropped if another
///   node of its class costs no more and needs a subset of its child classes (ties keep the
///   lower index). Dominance is unsound with negative costs, where needing a class can pay.
/// None of the removals loses every optimal solution, and the incumbent is carried over (a
/// dominated choice replaced by its dominator, which is no worse and still acyclic).
struct DagProblem {
  static constexpr std::uint32_t kNone = ExtractionGraph::kNone;

  std::vector<std::uint32_t> original_class;  ///< reduced class → ExtractionGraph class
  std::vector<std::uint32_t> original_node;   ///< reduced node → ExtractionGraph node
  std::vector<std::uint32_t> node_class;      ///< reduced node → reduced class
  std::vector<double> cost;                   ///< reduced node → cost
  std::vector<std::uint32_t> child_offsets, child_classes;  ///< distinct child classes (CSR)
  std::vector<std::uint32_t> class_offsets, class_members;  ///< nodes of each class (CSR)
  std::vector<std::uint32_t> roots;                         ///< distinct reduced root classes
  bool nonnegative = true;                                  ///< no node costs less than zero
  std::vector<std::uint32_t> incumbent;  ///< reduced class → reduced node, kNone if not used
  double incumbent_cost = 0;             ///< DAG cost of `incumbent`

  [[nodiscard]] std::size_t num_classes() const noexcept { return original_class.size(); }
  [[nodiscard]] std::size_t num_nodes() const noexcept { return original_node.size(); }
  [[nodiscard]] Span<const std::uint32_t> children(std::uint32_t n) const {
    return {child_classes.data() + child_offsets[n], child_offsets[n + 1] - child_offsets[n]};
  }
  [[nodiscard]] Span<const std::uint32_t> nodes(std::uint32_t c) const {
    return {class_members.data() + class_offsets[c], class_offsets[c + 1] - class_offsets[c]};
  }

  /// The reduced problem of `graph`; `incumbent` must be a valid extraction of it (a heuristic's).
  /// Past `deadline` the optional removals (dominated and too expensive nodes, the quadratic
  /// part) stop where they are: the problem is then larger, never wrong. Throws `CostError` when
  /// an extractable node costs -infinity (the DAG cost has no minimum), `Error` when a root
  /// class has no extractable node left.
  static DagProblem reduce(const ExtractionGraph& graph, const Extraction& incumbent,
                           std::chrono::steady_clock::time_point deadline =
                               std::chrono::steady_clock::time_point::max());

  /// A lower bound on the DAG cost of every extraction, found without search: the classes that
  /// every extraction contains (the roots, and to a fixpoint each class that is a child of every
  /// node of such a class) each pay at least their cheapest node. Exact solvers start from it,
  /// so a bound is proven even when they are stopped before their first relaxation. With
  /// negative costs, where a class can pay for itself, there is no such bound: minus infinity.
  [[nodiscard]] double mandatory_lower_bound() const;

  /// The reduced choice `choice` (reduced class → reduced node) as an ExtractionGraph choice.
  [[nodiscard]] std::vector<std::uint32_t> expand(const ExtractionGraph& graph,
                                                  const std::vector<std::uint32_t>& choice) const {
    std::vector<std::uint32_t> full(graph.num_classes(), kNone);
    for (std::uint32_t c = 0; c < num_classes(); ++c)
      if (choice[c] != kNone) full[original_class[c]] = original_node[choice[c]];
    return detail::reachable_choice(graph, full);
  }

  /// The classes chosen by `choice` that lie on a cycle reachable from the roots, as one cycle
  /// c1 → c2 → … → ck → c1 (reduced classes), or empty if the chosen graph is acyclic.
  [[nodiscard]] std::vector<std::uint32_t> find_cycle(
      const std::vector<std::uint32_t>& choice) const {
    std::vector<std::uint8_t> colour(num_classes(), 0);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;  // class, next child position
    for (std::uint32_t root : roots) {
      if (colour[root] != 0) continue;
      stack.emplace_back(root, 0);
      colour[root] = 1;
      while (!stack.empty()) {
        auto& [c, next] = stack.back();
        const auto kids = children(choice[c]);
        if (next == kids.size()) {
          colour[c] = 2;
          stack.pop_back();
          continue;
        }
        const std::uint32_t k = kids[next++];
        if (colour[k] == 1) {
          std::vector<std::uint32_t> cycle;
          auto it =
              std::find_if(stack.begin(), stack.end(), [&](const auto& e) { return e.first == k; });
          for (; it != stack.end(); ++it) cycle.push_back(it->first);
          return cycle;
        }
        if (colour[k] == 0) {
          colour[k] = 1;
          stack.emplace_back(k, 0);
        }
      }
    }
    return {};
  }
};

/// What an exact solver of a DagProblem returns.
struct DagSolution {
  std::vector<std::uint32_t> choice;  ///< reduced class → reduced node; empty if none found
  double cost = std::numeric_limits<double>::infinity();
  double lower_bound = -std::numeric_limits<double>::infinity();  ///< proven
  bool optimal = false;
};

inline double DagProblem::mandatory_lower_bound() const {
  if (!nonnegative) return -std::numeric_limits<double>::infinity();
  std::vector<bool> mandatory(num_classes(), false);
  std::vector<std::uint32_t> work;
  for (std::uint32_t root : roots)
    if (!mandatory[root]) {
      mandatory[root] = true;
      work.push_back(root);
    }
  std::vector<std::uint32_t> shared;  // child classes common to every node of a class
  while (!work.empty()) {
    const std::uint32_t c = work.back();
    work.pop_back();
    const auto members = nodes(c);
    if (members.empty()) continue;
    const auto first = children(members[0]);  // distinct and sorted, as built by reduce()
    shared.assign(first.begin(), first.end());
    for (std::size_t i = 1; i < members.size() && !shared.empty(); ++i) {
      const auto kids = children(members[i]);
      shared.erase(std::remove_if(shared.begin(), shared.end(),
                                  [&](std::uint32_t k) {
                                    return !std::binary_search(kids.begin(), kids.end(), k);
                                  }),
                   shared.end());
    }
    for (std::uint32_t k : shared)
      if (!mandatory[k]) {
        mandatory[k] = true;
        work.push_back(k);
      }
  }
  double bound = 0;
  for (std::uint32_t c = 0; c < num_classes(); ++c) {
    if (!mandatory[c]) continue;
    double cheapest = std::numeric_limits<double>::infinity();
    for (std::uint32_t n : nodes(c)) cheapest = std::min(cheapest, cost[n]);
    bound += cheapest;
  }
  return bound;
}

inline DagProblem DagProblem::reduce(const ExtractionGraph& graph, const Extraction& incumbent,
                                     std::chrono::steady_clock::time_point deadline) {
  const std::size_t n_nodes = graph.num_nodes(), n_classes = graph.num_classes();
  const detail::DistinctChildren dc(graph);
  bool nonnegative = true;
  for (std::uint32_t n = 0; n < n_nodes; ++n) nonnegative = nonnegative && graph.node_cost(n) >= 0;
  const double bound = incumbent.dag_cost + 1e-9 * std::max(1.0, std::abs(incumbent.dag_cost));

  std::vector<bool> alive(dc.usable);
  for (std::uint32_t n = 0; n < n_nodes; ++n) {
    if (!alive[n]) continue;
    if (graph.node_cost(n) == -std::numeric_limits<double>::infinity())
      throw CostError(n, "the cost is -infinity: the DAG cost has no minimum");
    if (graph.node_cost(n) == std::numeric_limits<double>::infinity()) alive[n] = false;
  }
  std::vector<std::uint32_t> dominator(n_nodes, kNone);
  std::vector<std::uint32_t> live_nodes(n_classes, 0);
  std::vector<bool> reachable(n_classes, false);
  bool out_of_time = false;
  for (bool changed = true; changed;) {
    changed = false;
    // Nodes whose children all have a node left, to a fixpoint (a class emptied empties users).
    for (bool again = true; again;) {
      again = false;
      std::fill(live_nodes.begin(), live_nodes.end(), 0);
      for (std::uint32_t n = 0; n < n_nodes; ++n)
        if (alive[n]) ++live_nodes[graph.node_class(n)];
      for (std::uint32_t n = 0; n < n_nodes; ++n)
        if (alive[n])
          for (std::uint32_t k : dc.of(n))
            if (live_nodes[k] == 0) {
              alive[n] = false;
              again = changed = true;
              break;
            }
    }
    // Reachability from the roots through live nodes.
    std::fill(reachable.begin(), reachable.end(), false);
    std::vector<std::uint32_t> stack(graph.roots().begin(), graph.roots().end());
    while (!stack.empty()) {
      const std::uint32_t c = stack.back();
      stack.pop_back();
      if (reachable[c]) continue;
      reachable[c] = true;
      for (std::uint32_t n : graph.class_nodes(c))
        if (alive[n])
          for (std::uint32_t k : dc.of(n))
            if (!reachable[k]) stack.push_back(k);
    }
    for (std::uint32_t n = 0; n < n_nodes; ++n)
      if (alive[n] && !reachable[graph.node_class(n)]) {
        alive[n] = false;
        changed = true;
      }
    if (!nonnegative || out_of_time) continue;
    // The clock is read every 16 nodes (a node costs O(class size) here); past the deadline the
    // pass stops, and the passes above run once more if it removed nodes.
    std::uint32_t until_clock = 15;  // read at the first node, then every 16th
    for (std::uint32_t c = 0; c < n_classes && !out_of_time; ++c) {
      if (!reachable[c]) continue;
      const auto members = graph.class_nodes(c);
      for (std::uint32_t n : members) {
        if (++until_clock == 16) {
          until_clock = 0;
          if (std::chrono::steady_clock::now() >= deadline) {
            out_of_time = true;
            break;
          }
        }
        if (!alive[n]) continue;
        if (graph.node_cost(n) > bound) {
          alive[n] = false;
          changed = true;
          continue;
        }
        for (std::uint32_t m : members) {
          if (m == n || !alive[m] || graph.node_cost(m) > graph.node_cost(n)) continue;
          const auto mk = dc.of(m), nk = dc.of(n);
          if (!std::includes(nk.begin(), nk.end(), mk.begin(), mk.end())) continue;
          const bool strictly = graph.node_cost(m) < graph.node_cost(n) || mk.size() < nk.size();
          if (!strictly && m > n) continue;  // identical: keep the lower index
          alive[n] = false;
          dominator[n] = m;
          changed = true;
          break;
        }
      }
    }
  }
  for (std::uint32_t root : graph.roots())
    if (std::none_of(graph.class_nodes(root).begin(), graph.class_nodes(root).end(),
                     [&](std::uint32_t n) { return bool(alive[n]); }))
      throw Error("DagProblem: a root class has no extractable node of finite cost");

  DagProblem p;
  p.nonnegative = nonnegative;
  std::vector<std::uint32_t> class_index(n_classes, kNone), node_index(n_nodes, kNone);
  for (std::uint32_t c = 0; c < n_classes; ++c)
    if (reachable[c]) {
      class_index[c] = static_cast<std::uint32_t>(p.original_class.size());
      p.original_class.push_back(c);
    }
  p.child_offsets.push_back(0);
  p.class_offsets.push_back(0);
  for (std::uint32_t c : p.original_class) {
    for (std::uint32_t n : graph.class_nodes(c)) {
      if (!alive[n]) continue;
      node_index[n] = static_cast<std::uint32_t>(p.original_node.size());
      p.class_members.push_back(node_index[n]);
      p.original_node.push_back(n);
      p.node_class.push_back(class_index[c]);
      p.cost.push_back(graph.node_cost(n));
      for (std::uint32_t k : dc.of(n)) p.child_classes.push_back(class_index[k]);
      p.child_offsets.push_back(static_cast<std::uint32_t>(p.child_classes.size()));
    }
    p.class_offsets.push_back(static_cast<std::uint32_t>(p.class_members.size()));
  }
  for (std::uint32_t root : graph.roots()) p.roots.push_back(class_index[root]);
  std::sort(p.roots.begin(), p.roots.end());
  p.roots.erase(std::unique(p.roots.begin(), p.roots.end()), p.roots.end());

  // Carry the incumbent over: dominated choices follow their dominators, then the reachable part.
  std::vector<std::uint32_t> carried(n_classes, kNone);
  for (std::uint32_t c = 0; c < n_classes; ++c) {
    std::uint32_t n = incumbent.choice[c];
    while (n != kNone && !alive[n]) n = dominator[n];
    carried[c] = n;
  }
  carried = detail::reachable_choice(graph, carried);
  p.incumbent.assign(p.num_classes(), kNone);
  bool complete = true;
  for (std::uint32_t c = 0; c < n_classes; ++c)
    if (carried[c] != kNone) {
      if (class_index[c] == kNone || node_index[carried[c]] == kNone)
        complete = false;
      else
        p.incumbent[class_index[c]] = node_index[carried[c]];
    }
  const auto full = complete ? p.expand(graph, p.incumbent) : std::vector<std::uint32_t>{};
  if (!complete || check_extraction(graph, full)) {
    // Cannot happen for a valid incumbent; keep its cost as the bound to beat all the same.
    p.incumbent.clear();
    p.incumbent_cost = incumbent.dag_cost;
  } else {
    p.incumbent_cost = std::min(incumbent.dag_cost, dag_cost(graph, full));
  }
  return p;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_DAG_PROBLEM_H
