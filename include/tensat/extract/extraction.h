// Extraction: a choice of one node per class, its tree and DAG costs, and its validity.
#ifndef TENSAT_EXTRACT_EXTRACTION_H
#define TENSAT_EXTRACT_EXTRACTION_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/extract/graph.h"

namespace tensat {
inline namespace v0 {

/// Whether an extractor proved its result optimal for its objective.
enum class ExtractionStatus { Optimal, Feasible };

/// Why an extractor stopped: it ran to its end (`Finished`: a proof, or a heuristic's local
/// optimum), or a budget cut it short (`WorkLimit`, `TimeLimit`), leaving its best valid result
/// so far.
enum class ExtractionStop { Finished, WorkLimit, TimeLimit };

/// An extraction: `choice[c]` is the chosen node of class `c`, or `ExtractionGraph::kNone` for
/// classes that need none (unreachable from the roots).
struct Extraction {
  std::vector<std::uint32_t> choice;
  double tree_cost =
      0;  ///< Σ over the listed roots of the chosen term's cost (shared terms repaid)
  double dag_cost = 0;  ///< Σ over classes reachable from the roots of the chosen node's cost
  ExtractionStatus status = ExtractionStatus::Feasible;
  std::int64_t micros = 0;  ///< time the extractor took
  /// A proven lower bound on the optimum of the extractor's objective (equal to the cost when
  /// Optimal; -infinity when the extractor proves nothing, as heuristics do).
  double lower_bound = -std::numeric_limits<double>::infinity();
  ExtractionStop stop =
      ExtractionStop::Finished;  ///< the first budget that cut the search short, if any
  /// Empty, or what the caller should know about how the result came about, in one line: e.g.
  /// that an exact extractor's solver backend failed and another one took over (`extract_ilp`).
  std::string note;
};

/// Node costs an extractor cannot work with: `node()` is the offending node of the
/// ExtractionGraph (`ExtractionGraph::kNone` when no single node is to blame, e.g. a total that
/// overflows a double), `reason()` the message without the position.
class CostError : public Error {
 public:
  CostError(std::uint32_t node, std::string reason)
      : Error(node == ExtractionGraph::kNone ? reason : fmt::format("node {}: {}", node, reason)),
        node_(node),
        reason_(std::move(reason)) {}

  [[nodiscard]] std::uint32_t node() const noexcept { return node_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::uint32_t node_;
  std::string reason_;
};

/// Why `choice` is not a valid extraction of `graph`, or nothing if it is: every root and every
/// class reachable from the roots through chosen nodes has a chosen node, that node belongs to
/// the class and is not subsumed, and no chosen cycle is reachable. O(nodes + edges).
inline std::optional<std::string> check_extraction(const ExtractionGraph& graph,
                                                   const std::vector<std::uint32_t>& choice) {
  if (choice.size() != graph.num_classes())
    return fmt::format("choice has {} entries for {} classes", choice.size(), graph.num_classes());
  if (graph.roots().empty()) return std::string("no root");
  // Iterative DFS with colours: 0 unvisited, 1 on the stack, 2 done.
  std::vector<std::uint8_t> colour(graph.num_classes(), 0);
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;
  for (std::uint32_t root : graph.roots()) {
    if (colour[root] != 0) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      const std::uint32_t n = choice[c];
      if (next == 0) {
        colour[c] = 1;
        if (n == ExtractionGraph::kNone)
          return fmt::format("class {} is reachable but has no chosen node", c);
        if (n >= graph.num_nodes() || graph.node_class(n) != c)
          return fmt::format("the node chosen for class {} is not one of its nodes", c);
        if (graph.subsumed(n)) return fmt::format("the node chosen for class {} is subsumed", c);
      }
      const auto kids = graph.children(n);
      if (next == kids.size()) {
        colour[c] = 2;
        stack.pop_back();
        continue;
      }
      const std::uint32_t child = kids[next++];
      if (colour[child] == 1)
        return fmt::format("the chosen nodes form a cycle through class {}", child);
      if (colour[child] == 0) stack.emplace_back(child, 0);
    }
  }
  return std::nullopt;
}

namespace detail {

/// Keeps only the choices reachable from the roots through chosen nodes (the rest is not part
/// of an extraction); classes without a choice stay kNone.
inline std::vector<std::uint32_t> reachable_choice(const ExtractionGraph& g,
                                                   const std::vector<std::uint32_t>& choice) {
  std::vector<std::uint32_t> result(g.num_classes(), ExtractionGraph::kNone);
  std::vector<std::uint32_t> stack(g.roots().begin(), g.roots().end());
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (result[c] != ExtractionGraph::kNone || choice[c] == ExtractionGraph::kNone) continue;
    result[c] = choice[c];
    for (std::uint32_t child : g.children(choice[c])) stack.push_back(child);
  }
  return result;
}

}  // namespace detail

/// DAG cost of a valid choice: each class reachable from the roots is paid once. O(reachable).
inline double dag_cost(const ExtractionGraph& graph, const std::vector<std::uint32_t>& choice) {
  std::vector<bool> seen(graph.num_classes(), false);
  std::vector<std::uint32_t> stack(graph.roots().begin(), graph.roots().end());
  double total = 0;
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    total += graph.node_cost(choice[c]);
    for (std::uint32_t child : graph.children(choice[c]))
      if (!seen[child]) stack.push_back(child);
  }
  return total;
}

/// Tree cost of a valid choice: Σ over the listed roots (repeats counted) of the chosen term's
/// cost, each use of a shared subterm paid again. Computed per class once (memoized). O(reachable).
inline double tree_cost(const ExtractionGraph& graph, const std::vector<std::uint32_t>& choice) {
  constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> value(graph.num_classes(), kUnset);
  std::vector<std::pair<std::uint32_t, bool>> stack;
  auto term = [&](std::uint32_t root) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      const auto [c, expanded] = stack.back();
      stack.pop_back();
      if (!std::isnan(value[c])) continue;
      const auto kids = graph.children(choice[c]);
      if (!expanded) {
        stack.emplace_back(c, true);
        for (std::uint32_t child : kids)
          if (std::isnan(value[child])) stack.emplace_back(child, false);
        continue;
      }
      double v = graph.node_cost(choice[c]);
      for (std::uint32_t child : kids) v += value[child];
      value[c] = v;
    }
    return value[root];
  };
  double total = 0;
  for (std::uint32_t root : graph.roots()) total += term(root);
  return total;
}

/// The term `extraction` chose for the root at `root_position` in `graph.roots()`, as a RecExpr
/// of the e-graph's nodes in which a shared class appears once (the DAG the DAG cost pays for),
/// children before parents, depth first, a node's first child's subgraph first. `graph` must be
/// `ExtractionGraph::from_egraph(egraph, …, &node_ids)`. Throws `Error` if the extraction is not
/// valid for `graph`.
template <class L, class A>
RecExpr<L> to_recexpr(const EGraph<L, A>& egraph, const ExtractionGraph& graph,
                      const std::vector<Id>& node_ids, const Extraction& extraction,
                      std::size_t root_position = 0) {
  if (node_ids.size() != graph.num_nodes())
    throw Error("to_recexpr: node_ids does not match the view");
  if (root_position >= graph.roots().size()) throw Error("to_recexpr: no such root");
  if (auto problem = check_extraction(graph, extraction.choice))
    throw Error("to_recexpr: " + *problem);
  RecExpr<L> expr;
  constexpr std::uint32_t kUnset = ExtractionGraph::kNone;
  std::vector<std::uint32_t> index(graph.num_classes(), kUnset);
  std::vector<std::pair<std::uint32_t, bool>> stack{{graph.roots()[root_position], false}};
  while (!stack.empty()) {
    const auto [c, expanded] = stack.back();
    stack.pop_back();
    if (index[c] != kUnset) continue;
    const std::uint32_t n = extraction.choice[c];
    if (!expanded) {
      // Children pushed last first, so the first child's subgraph is emitted first: the order a
      // program is written in, in which an executor that runs the nodes in index order finds a
      // producer's result still in cache more often (extraction.md).
      stack.emplace_back(c, true);
      const auto kids = graph.children(n);
      for (std::size_t i = kids.size(); i-- > 0;)
        if (index[kids[i]] == kUnset) stack.emplace_back(kids[i], false);
      continue;
    }
    // The e-graph node's children are class ids in its own order; the view's children of n
    // are the same classes in the same order, so position i maps to the view's child i.
    const auto kids = graph.children(n);
    std::size_t i = 0;
    L node = map_children(egraph.node(node_ids[n]), [&](Id) { return Id(index[kids[i++]]); });
    index[c] = expr.add(std::move(node)).value;
  }
  return expr;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_EXTRACTION_H
