// ExtractionGraph: a compact read-only view of an e-graph for extraction, built from a tensat
// EGraph or from egraph-serialize JSON, so that the same extractors serve both.
#ifndef TENSAT_EXTRACT_GRAPH_H
#define TENSAT_EXTRACT_GRAPH_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/span.h"

namespace tensat {
inline namespace v0 {

/// Classes and nodes numbered densely (0..num_classes()-1, 0..num_nodes()-1), each node with its
/// class, its additive cost and its child classes (in order, with repeats), stored as flat arrays
/// (CSR). Subsumed nodes are kept (for sizes) but flagged: extractors must not choose them.
class ExtractionGraph {
 public:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  /// Builds the view from parts: `node_class[n]`, `node_cost[n]`, children (class indices) in
  /// CSR form (`child_offsets` has num_nodes + 1 entries). Throws `Error` on NaN costs,
  /// out-of-range classes or roots.
  ExtractionGraph(std::size_t num_classes, std::vector<std::uint32_t> node_class,
                  std::vector<double> node_cost, std::vector<std::uint32_t> child_offsets,
                  std::vector<std::uint32_t> children, std::vector<std::uint32_t> roots,
                  std::vector<bool> subsumed = {})
      : num_classes_(num_classes),
        node_class_(std::move(node_class)),
        node_cost_(std::move(node_cost)),
        child_offsets_(std::move(child_offsets)),
        children_(std::move(children)),
        roots_(std::move(roots)),
        subsumed_(std::move(subsumed)) {
    const std::size_t n = node_class_.size();
    if (subsumed_.empty()) subsumed_.assign(n, false);
    if (node_cost_.size() != n || child_offsets_.size() != n + 1 || subsumed_.size() != n ||
        child_offsets_.back() != children_.size())
      throw Error("ExtractionGraph: inconsistent array sizes");
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(node_cost_[i]))
        throw Error(fmt::format("ExtractionGraph: node {} has a NaN cost", i));
      if (node_class_[i] >= num_classes_)
        throw Error(fmt::format("ExtractionGraph: node {} has no valid class", i));
    }
    for (std::uint32_t c : children_)
      if (c >= num_classes_) throw Error("ExtractionGraph: a child names no class");
    for (std::uint32_t r : roots_)
      if (r >= num_classes_) throw Error("ExtractionGraph: a root names no class");
    // Members of each class, in node order (CSR).
    class_offsets_.assign(num_classes_ + 1, 0);
    for (std::uint32_t c : node_class_) ++class_offsets_[c + 1];
    for (std::size_t c = 0; c < num_classes_; ++c) class_offsets_[c + 1] += class_offsets_[c];
    class_nodes_.resize(n);
    std::vector<std::uint32_t> fill(class_offsets_.begin(), class_offsets_.end() - 1);
    for (std::size_t i = 0; i < n; ++i)
      class_nodes_[fill[node_class_[i]]++] = static_cast<std::uint32_t>(i);
  }

  /// The view of a clean tensat e-graph: classes numbered in `classes()` order, nodes in member
  /// order; `cost` gives each node's additive cost (a double), called as `cost(node, eclass)`
  /// when it accepts the class too (to read the analysis data, e.g. tensor shapes), else as
  /// `cost(node)`. `node_ids`, if given, receives the e-graph id of each view node (for
  /// `to_recexpr`). Throws `Error` on a NaN cost.
  template <class L, class A, class NodeCost>
  static ExtractionGraph from_egraph(const EGraph<L, A>& egraph, const std::vector<Id>& roots,
                                     NodeCost&& cost, std::vector<Id>* node_ids = nullptr) {
    using EClass = typename EGraph<L, A>::EClass;
    constexpr bool kWithClass = std::is_invocable_v<NodeCost&, const L&, const EClass&>;
    static_assert(kWithClass || std::is_invocable_v<NodeCost&, const L&>,
                  "ExtractionGraph::from_egraph: `cost` must be callable as cost(const L& node) or "
                  "cost(const L& node, const EGraph<L, A>::EClass& eclass), returning a number");
    if (!egraph.is_clean()) throw Error("ExtractionGraph: rebuild() the e-graph first");
    std::unordered_map<std::uint32_t, std::uint32_t> class_index;
    for (const auto& cls : egraph.classes())
      class_index.emplace(cls.id.value, static_cast<std::uint32_t>(class_index.size()));
    std::vector<std::uint32_t> node_class, offsets{0}, children, root_classes;
    std::vector<double> costs;
    if (node_ids) node_ids->clear();
    for (const auto& cls : egraph.classes())
      for (Id nid : cls.nodes) {
        const L& node = egraph.node(nid);
        node_class.push_back(class_index.at(cls.id.value));
        if constexpr (kWithClass)
          costs.push_back(static_cast<double>(cost(node, cls)));
        else
          costs.push_back(static_cast<double>(cost(node)));
        for (Id child : node.children())
          children.push_back(class_index.at(egraph.find(child).value));
        offsets.push_back(static_cast<std::uint32_t>(children.size()));
        if (node_ids) node_ids->push_back(nid);
      }
    for (Id root : roots) root_classes.push_back(class_index.at(egraph.find(root).value));
    return ExtractionGraph(class_index.size(), std::move(node_class), std::move(costs),
                           std::move(offsets), std::move(children), std::move(root_classes));
  }

  [[nodiscard]] std::size_t num_classes() const noexcept { return num_classes_; }
  [[nodiscard]] std::size_t num_nodes() const noexcept { return node_class_.size(); }
  [[nodiscard]] std::uint32_t node_class(std::uint32_t n) const { return node_class_[n]; }
  [[nodiscard]] double node_cost(std::uint32_t n) const { return node_cost_[n]; }
  [[nodiscard]] bool subsumed(std::uint32_t n) const { return subsumed_[n]; }
  /// Child classes of node `n`, in order, with repeats.
  [[nodiscard]] Span<const std::uint32_t> children(std::uint32_t n) const {
    return {children_.data() + child_offsets_[n], child_offsets_[n + 1] - child_offsets_[n]};
  }
  /// Member nodes of class `c`.
  [[nodiscard]] Span<const std::uint32_t> class_nodes(std::uint32_t c) const {
    return {class_nodes_.data() + class_offsets_[c], class_offsets_[c + 1] - class_offsets_[c]};
  }
  /// The root classes, as listed (repeats kept).
  [[nodiscard]] const std::vector<std::uint32_t>& roots() const noexcept { return roots_; }

 private:
  std::size_t num_classes_;
  std::vector<std::uint32_t> node_class_;
  std::vector<double> node_cost_;
  std::vector<std::uint32_t> child_offsets_;
  std::vector<std::uint32_t> children_;
  std::vector<std::uint32_t> roots_;
  std::vector<bool> subsumed_;
  std::vector<std::uint32_t> class_offsets_;
  std::vector<std::uint32_t> class_nodes_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_GRAPH_H
