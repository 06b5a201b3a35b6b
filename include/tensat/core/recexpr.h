// RecExpr: a term (or a DAG of terms) stored as a flat vector of nodes in topological order.
#ifndef TENSAT_CORE_RECEXPR_H
#define TENSAT_CORE_RECEXPR_H

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/span.h"

namespace tensat {
inline namespace v0 {

/// A recursive expression: nodes whose children are indices of earlier nodes of the same vector.
/// The last node is the root. Shared subterms may be stored once (it is then a DAG), exactly as
/// egg's `RecExpr`; `to_string()` prints the tree it denotes.
///
/// `N` is a language node type or `ENodeOrVar<L>` (patterns).
template <class N>
class RecExpr {
 public:
  RecExpr() = default;
  explicit RecExpr(std::vector<N> nodes) : nodes_(std::move(nodes)) { check_order(); }

  /// Appends `node`, whose children must name earlier nodes, and returns its index.
  Id add(N node) {
    for (Id child : node.children())
      if (child.index() >= nodes_.size())
        throw Error("RecExpr::add: a child must refer to an earlier node");
    nodes_.push_back(std::move(node));
    return Id(nodes_.size() - 1);
  }

  [[nodiscard]] const N& operator[](Id id) const { return nodes_[id.index()]; }
  [[nodiscard]] N& operator[](Id id) { return nodes_[id.index()]; }
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] bool empty() const noexcept { return nodes_.empty(); }
  /// Index of the root (the last node). Precondition: not empty.
  [[nodiscard]] Id root() const {
    assert(!nodes_.empty());
    return Id(nodes_.size() - 1);
  }
  [[nodiscard]] const std::vector<N>& nodes() const noexcept { return nodes_; }
  [[nodiscard]] auto begin() const noexcept { return nodes_.begin(); }
  [[nodiscard]] auto end() const noexcept { return nodes_.end(); }

  /// The s-expression of the subterm rooted at `root` (the whole expression by default).
  /// Iterative, so deep terms do not exhaust the stack.
  [[nodiscard]] std::string to_string() const {
    return empty() ? std::string() : to_string(root());
  }
  [[nodiscard]] std::string to_string(Id root) const {
    std::string out;
    // (node, next child to print) frames.
    std::vector<std::pair<Id, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const N& node = nodes_[id.index()];
      const auto children = node.children();
      if (children.size() == 0) {
        out += node.op_name();
        stack.pop_back();
        continue;
      }
      if (next == 0) {
        out += '(';
        out += node.op_name();
      }
      if (next == children.size()) {
        out += ')';
        stack.pop_back();
        continue;
      }
      out += ' ';
      const Id child = children[next++];
      stack.emplace_back(child, 0);
    }
    return out;
  }

  /// The DAG rooted at `root` with each node printed once: a node with children that the DAG
  /// uses more than once gets a line `%i = (op ...)` (i its index) before its first use and is
  /// written `%i` where used; everything else is inline, and the last line is the root's term.
  /// For a tree it is `to_string(root)`. Linear in the nodes reachable from `root`, where
  /// `to_string` is linear in the tree they denote (exponential in the DAG's depth when every
  /// level shares).
  [[nodiscard]] std::string to_dag_string() const {
    return empty() ? std::string() : to_dag_string(root());
  }
  [[nodiscard]] std::string to_dag_string(Id root) const {
    const std::size_t n = root.index() + 1;
    std::vector<std::uint32_t> uses(n, 0);
    uses[root.index()] = 1;
    for (std::size_t i = n; i-- > 0;)  // parents come after their children
      if (uses[i] != 0)
        for (Id child : nodes_[i].children()) ++uses[child.index()];
    std::vector<std::string> term(n);  // the inline text of a node used once, until its parent
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
      if (uses[i] == 0) continue;
      const N& node = nodes_[i];
      const auto children = node.children();
      if (children.size() == 0) continue;  // leaves are written by name where used
      std::string text = "(";
      text += node.op_name();
      for (Id child : children) {
        text += ' ';
        const N& c = nodes_[child.index()];
        if (c.children().size() == 0)
          text += c.op_name();
        else if (uses[child.index()] > 1)
          text += "%" + std::to_string(child.index());
        else
          text += std::move(term[child.index()]);
      }
      text += ')';
      if (i == root.index()) {
        out += text;
      } else if (uses[i] > 1) {
        out += "%" + std::to_string(i) + " = " + text + "\n";
      } else {
        term[i] = std::move(text);
      }
    }
    if (nodes_[root.index()].children().size() == 0) out += nodes_[root.index()].op_name();
    return out;
  }

  friend bool operator==(const RecExpr& a, const RecExpr& b) { return a.nodes_ == b.nodes_; }
  friend bool operator!=(const RecExpr& a, const RecExpr& b) { return !(a == b); }

 private:
  void check_order() const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      for (Id child : nodes_[i].children())
        if (child.index() >= i) throw Error("RecExpr: a child must refer to an earlier node");
  }

  std::vector<N> nodes_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_RECEXPR_H
