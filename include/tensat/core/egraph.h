// EGraph: the e-graph — hashcons, union-find, e-classes with analysis data, deferred rebuild.
#ifndef TENSAT_CORE_EGRAPH_H
#define TENSAT_CORE_EGRAPH_H

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/analysis.h"
#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/span.h"
#include "tensat/core/union_find.h"
#include "tensat/detail/node_table.h"

namespace tensat {
inline namespace v0 {

/// An e-graph over the language `L` with the e-class analysis `A` (see analysis.h).
///
/// Storage (what makes it compact and fast):
/// * every e-node lives once, in an arena indexed by its id; the node added with id `i` created
///   class `i`, so node ids and class ids share one union-find;
/// * the hashcons is an open-addressing table of node ids (8 bytes a slot) keyed by the node's
///   canonical form, which `rebuild()` keeps current by re-canonicalizing nodes *in place*;
/// * an e-class lists its member node ids (sorted by operator after a rebuild, so e-matching can
///   binary-search large classes) and the ids of its parent nodes.
///
/// Invariants after `rebuild()` (egg's): every member node's children are canonical; no two live
/// nodes are equal (congruence closure); every class's data is the merge of `make` over its nodes
/// (up to `modify`'s changes). Between `add`/`unite` and `rebuild()` the e-graph is "dirty":
/// unions are visible through `find` but congruence and analysis may lag, and searching is refused.
template <class L, class A = NoAnalysis>
class EGraph {
  static_assert(is_language_v<L>,
                "L does not meet the Language requirements (see tensat/core/language.h)");

 public:
  using Language = L;
  using Analysis = A;
  using Data = typename A::Data;

  /// An equivalence class of e-nodes.
  struct EClass {
    /// The canonical id of this class.
    Id id;
    /// Ids of the member e-nodes; `EGraph::node(nid)` gives the node. Sorted by `op_key` after
    /// `rebuild()`. `modify` may shrink it (`EGraph::retain_nodes`), e.g. to prune folded terms.
    std::vector<Id> nodes;
    /// Ids of e-nodes that have this class as a child (possibly repeated or stale).
    std::vector<Id> parents;
    /// The analysis data.
    Data data;

    [[nodiscard]] std::size_t size() const noexcept { return nodes.size(); }
    [[nodiscard]] bool empty() const noexcept { return nodes.empty(); }
  };

  explicit EGraph(A analysis = A{}) : analysis_(std::move(analysis)) {}

  // ------------------------------------------------------------------ building

  /// Adds `node` (children are canonicalized first) and returns the canonical id of its class:
  /// the existing class if an equal node is present, else a new class. O(arity) expected.
  Id add(L node) {
    canonicalize(node);
    const std::uint32_t hash = detail::mix_hash(node.hash());
    const Id existing = memo_.find(hash, [&](Id other) { return nodes_[other.index()] == node; });
    if (existing != kInvalidId) return uf_.find(existing);

    const Id id = uf_.make_set();
    nodes_.push_back(std::move(node));
    dead_.push_back(false);
    node_heap_bytes_ += detail::NodeHeapBytes<L>::of(nodes_.back());
    memo_.insert(hash, id);
    Data data = analysis_.make(static_cast<const EGraph&>(*this), nodes_[id.index()], id);
    class_slot_.push_back(static_cast<std::uint32_t>(classes_.size()));
    classes_.push_back(EClass{id, {id}, {}, std::move(data)});
    Id previous = kInvalidId;
    for (Id child : nodes_[id.index()].children()) {
      if (child != previous) eclass_mut(child).parents.push_back(id);
      previous = child;
    }
    by_op(nodes_[id.index()].op_key()).push_back(id);
    clean_ = false;
    call_modify(id);
    return uf_.find(id);
  }

  /// Adds every node of `expr` and returns the canonical id of its root.
  Id add_expr(const RecExpr<L>& expr) {
    if (expr.empty()) throw Error("EGraph::add_expr: empty expression");
    std::vector<Id> ids;
    ids.reserve(expr.size());
    for (const L& node : expr)
      ids.push_back(add(map_children(node, [&](Id c) { return ids[c.index()]; })));
    return find(ids.back());
  }

  /// The class containing a node equal to `node` (children canonicalized first), if any.
  [[nodiscard]] std::optional<Id> lookup(L node) const {
    canonicalize(node);
    const std::uint32_t hash = detail::mix_hash(node.hash());
    const Id found = memo_.find(hash, [&](Id other) { return nodes_[other.index()] == node; });
    if (found == kInvalidId) return std::nullopt;
    return uf_.find(found);
  }

  /// The class of `expr`'s root if every node of `expr` is present, else nothing.
  [[nodiscard]] std::optional<Id> lookup_expr(const RecExpr<L>& expr) const {
    if (expr.empty()) return std::nullopt;
    std::vector<Id> ids;
    ids.reserve(expr.size());
    for (const L& node : expr) {
      auto found = lookup(map_children(node, [&](Id c) { return ids[c.index()]; }));
      if (!found) return std::nullopt;
      ids.push_back(*found);
    }
    return ids.back();
  }

  /// Merges the classes of `a` and `b`; returns false if they were already one class.
  /// The class with more parents survives (fewer parents to re-canonicalize). Congruence is
  /// restored by the next `rebuild()`; `modify` runs on the merged class at once.
  bool unite(Id a, Id b) {
    Id root = uf_.find_mut(a);
    Id other = uf_.find_mut(b);
    if (root == other) return false;
    if (eclass(root).parents.size() < eclass(other).parents.size()) std::swap(root, other);

    uf_.union_roots(root, other);
    const std::size_t root_slot = class_slot_[root.index()];
    const std::size_t other_slot = class_slot_[other.index()];
    EClass& kept = classes_[root_slot];
    EClass& gone = classes_[other_slot];
    pending_.insert(pending_.end(), gone.parents.begin(), gone.parents.end());

    const DidMerge did = analysis_.merge(kept.data, std::move(gone.data));
    if (did.a_changed) enqueue_analysis(kept.parents);
    if (did.b_changed) enqueue_analysis(gone.parents);
    append(kept.nodes, gone.nodes);
    append(kept.parents, gone.parents);
    remove_class(other_slot);

    dirty_classes_.push_back(root);
    by_op_dirty_ = true;
    clean_ = false;
    ++unions_since_rebuild_;
    call_modify(root);
    return true;
  }

  /// Restores the invariants after `add`/`unite`: re-canonicalizes the parents of merged classes,
  /// merges congruent classes, propagates analysis data, cleans and sorts touched classes.
  /// Returns the number of unions done for congruence (and by `modify`) while rebuilding.
  /// Cost: proportional to the parents of merged classes, not to the e-graph.
  std::size_t rebuild() {
    const std::size_t unions_before = unions_since_rebuild_;
    while (!pending_.empty() || !analysis_pending_.empty()) {
      while (!pending_.empty()) {
        const Id p = pending_.back();
        pending_.pop_back();
        repair_node(p);
      }
      while (!analysis_pending_.empty()) {
        const Id p = analysis_pending_.back();
        analysis_pending_.pop_back();
        in_analysis_queue_[p.index()] = false;
        if (dead_[p.index()]) continue;
        const Id cls = uf_.find(p);
        L node = nodes_[p.index()];
        canonicalize(node);
        Data data = analysis_.make(static_cast<const EGraph&>(*this), node, cls);
        EClass& c = eclass_mut(cls);
        if (analysis_.merge(c.data, std::move(data)).a_changed) {
          enqueue_analysis(c.parents);
          call_modify(cls);
        }
      }
    }
    clean_classes();
    if (by_op_dirty_) normalize_by_op();
    clean_ = true;
    const std::size_t n = unions_since_rebuild_ - unions_before;
    unions_since_rebuild_ = 0;
    return n;
  }

  /// True when no `add`/`unite` happened since the last `rebuild()`.
  [[nodiscard]] bool is_clean() const noexcept { return clean_; }

  /// Keeps only the member nodes of class `id` for which `keep(node)` holds (egg's
  /// `egraph[id].nodes.retain(..)`). Pruned nodes stay in the hashcons, as in egg, so `lookup`
  /// and `add` still find the class through them; e-matching and extraction no longer see them.
  template <class Pred>
  void retain_nodes(Id id, Pred&& keep) {
    auto& members = eclass_mut(id).nodes;
    members.erase(std::remove_if(members.begin(), members.end(),
                                 [&](Id nid) { return !keep(nodes_[nid.index()]); }),
                  members.end());
  }

  // ------------------------------------------------------------------ queries

  /// The canonical id of `id`'s class.
  [[nodiscard]] Id find(Id id) const noexcept { return uf_.find(id); }
  /// The class of `id` (any id of it). O(path length).
  [[nodiscard]] const EClass& operator[](Id id) const { return eclass(id); }
  /// Mutable access to the class of `id`, for analyses that edit data or prune nodes; keep the
  /// class's invariants (see the class comment).
  [[nodiscard]] EClass& operator[](Id id) { return eclass_mut(id); }
  /// The e-node with node id `node_id` (canonical as of the last rebuild).
  [[nodiscard]] const L& node(Id node_id) const { return nodes_[node_id.index()]; }

  /// Calls `f(const L&)` for every member node of class `id`.
  template <class F>
  void for_each_node(Id id, F&& f) const {
    for (Id nid : eclass(id).nodes) f(nodes_[nid.index()]);
  }

  /// The member node ids of class `id` whose operator key is `op_key` (by binary search in large
  /// classes, which `rebuild()` sorts by operator). Precondition: the e-graph is clean.
  [[nodiscard]] Span<const Id> nodes_with_op(Id id, std::uint32_t op_key) const {
    const auto& members = eclass(id).nodes;
    const Id* first = members.data();
    const Id* last = first + members.size();
    if (members.size() < kBinarySearchThreshold) return {first, members.size()};
    first = std::lower_bound(first, last, op_key, [&](Id nid, std::uint32_t k) {
      return nodes_[nid.index()].op_key() < k;
    });
    last = std::upper_bound(first, last, op_key, [&](std::uint32_t k, Id nid) {
      return k < nodes_[nid.index()].op_key();
    });
    return {first, static_cast<std::size_t>(last - first)};
  }

  /// Calls `f(node_id, const L&)` for each member node of class `id` that `matches(pattern)`.
  template <class F>
  void for_each_matching_node(Id id, const L& pattern, F&& f) const {
    for (Id nid : nodes_with_op(id, pattern.op_key())) {
      const L& candidate = nodes_[nid.index()];
      if (pattern.matches(candidate)) f(nid, candidate);
    }
  }

  /// The live classes, in no particular order.
  [[nodiscard]] const std::vector<EClass>& classes() const noexcept { return classes_; }
  [[nodiscard]] std::size_t number_of_classes() const noexcept { return classes_.size(); }
  /// Sum of the classes' node counts (egg's `total_number_of_nodes`). O(classes).
  [[nodiscard]] std::size_t total_number_of_nodes() const noexcept {
    std::size_t n = 0;
    for (const EClass& c : classes_) n += c.nodes.size();
    return n;
  }
  /// Distinct canonical e-nodes in the hashcons, pruned ones included (what node limits count;
  /// unlike egg's memo, stale spellings are not kept, so this never over-counts).
  [[nodiscard]] std::size_t total_size() const noexcept { return memo_.size(); }
  /// Node ids handed out so far (live, pruned and merged duplicates).
  [[nodiscard]] std::size_t number_of_node_ids() const noexcept { return nodes_.size(); }

  /// Canonical ids of the classes having a node with operator key `op_key`, sorted. Exact after
  /// `rebuild()`; may include classes whose matching nodes were pruned.
  [[nodiscard]] Span<const Id> classes_by_op(std::uint32_t op_key) const noexcept {
    if (op_key >= by_op_.size()) return {};
    return {by_op_[op_key].data(), by_op_[op_key].size()};
  }

  /// egg's `equivs`: the class shared by two ground terms, if both are present and equivalent.
  [[nodiscard]] std::vector<Id> equivs(const RecExpr<L>& a, const RecExpr<L>& b) const {
    auto ia = lookup_expr(a);
    auto ib = lookup_expr(b);
    if (ia && ib && *ia == *ib) return {*ia};
    return {};
  }

  [[nodiscard]] A& analysis() noexcept { return analysis_; }
  [[nodiscard]] const A& analysis() const noexcept { return analysis_; }

  /// Bytes held by the e-graph's structures, by part (capacities, not sizes).
  struct MemoryUsage {
    std::size_t nodes = 0;       ///< node arena (+ heap children) and dead flags
    std::size_t union_find = 0;  ///< union-find parents and class slots
    std::size_t hashcons = 0;    ///< hashcons slots
    std::size_t classes = 0;     ///< class records (with inline analysis data)
    std::size_t class_lists = 0; ///< member and parent lists of the classes
    std::size_t by_op = 0;       ///< classes_by_op index
    std::size_t work = 0;        ///< rebuild work lists
    [[nodiscard]] std::size_t total() const noexcept {
      return nodes + union_find + hashcons + classes + class_lists + by_op + work;
    }
  };

  /// Bytes held by the e-graph's structures, by part. Analysis data that allocates is counted
  /// by its inline size only. O(classes).
  [[nodiscard]] MemoryUsage memory_breakdown() const noexcept {
    MemoryUsage m;
    m.nodes = nodes_.capacity() * sizeof(L) + node_heap_bytes_ + dead_.capacity() / 8;
    m.union_find = uf_.memory_bytes() + class_slot_.capacity() * sizeof(std::uint32_t);
    m.hashcons = memo_.memory_bytes();
    m.classes = classes_.capacity() * sizeof(EClass);
    for (const EClass& c : classes_)
      m.class_lists += (c.nodes.capacity() + c.parents.capacity()) * sizeof(Id);
    for (const auto& list : by_op_) m.by_op += list.capacity() * sizeof(Id);
    m.by_op += by_op_.capacity() * sizeof(by_op_[0]);
    m.work = (pending_.capacity() + analysis_pending_.capacity() + dirty_classes_.capacity()) * sizeof(Id) +
             in_analysis_queue_.capacity() / 8;
    return m;
  }

  /// Total bytes held by the e-graph's structures: what the runner's memory limit checks.
  [[nodiscard]] std::size_t memory_usage() const noexcept { return memory_breakdown().total(); }

  /// A human-readable listing of every class and its nodes, sorted by class id.
  [[nodiscard]] std::string dump() const {
    std::vector<const EClass*> sorted;
    for (const EClass& c : classes_) sorted.push_back(&c);
    std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->id < y->id; });
    std::string out;
    for (const EClass* c : sorted) {
      out += fmt::format("{} ({} nodes):", c->id, c->nodes.size());
      for (Id nid : c->nodes) {
        const L& n = nodes_[nid.index()];
        out += fmt::format(" {}{}", n.children().size() ? "(" : "", n.op_name());
        for (Id child : n.children()) out += fmt::format(" {}", child);
        if (n.children().size()) out += ")";
      }
      out += '\n';
    }
    return out;
  }

  /// The union-find, for inspection.
  [[nodiscard]] const UnionFind& union_find() const noexcept { return uf_; }

 private:
  static constexpr std::size_t kBinarySearchThreshold = 32;

  [[nodiscard]] const EClass& eclass(Id id) const {
    const Id root = uf_.find(id);
    return classes_[class_slot_[root.index()]];
  }
  [[nodiscard]] EClass& eclass_mut(Id id) {
    const Id root = uf_.find(id);
    return classes_[class_slot_[root.index()]];
  }

  void canonicalize(L& node) const {
    for (Id& child : node.children()) child = uf_.find(child);
  }

  std::vector<Id>& by_op(std::uint32_t key) {
    if (key >= by_op_.size()) by_op_.resize(key + 1);
    return by_op_[key];
  }

  static void append(std::vector<Id>& into, std::vector<Id>& from) {
    if (into.size() < from.size()) std::swap(into, from);
    into.insert(into.end(), from.begin(), from.end());
    std::vector<Id>().swap(from);
  }

  void enqueue_analysis(const std::vector<Id>& parents) {
    if (in_analysis_queue_.size() < nodes_.size()) in_analysis_queue_.resize(nodes_.size(), false);
    for (Id p : parents) {
      if (in_analysis_queue_[p.index()]) continue;
      in_analysis_queue_[p.index()] = true;
      analysis_pending_.push_back(p);
    }
  }

  /// Removes the class in `slot` by moving the last class into it.
  void remove_class(std::size_t slot) {
    const Id removed = classes_[slot].id;
    if (slot + 1 != classes_.size()) {
      classes_[slot] = std::move(classes_.back());
      class_slot_[classes_[slot].id.index()] = static_cast<std::uint32_t>(slot);
    }
    classes_.pop_back();
    class_slot_[removed.index()] = kNoSlot;
  }

  /// Re-canonicalizes node `p` in place; if it now equals another live node, that is a
  /// congruence: `p` becomes a dead duplicate and the two classes are united.
  void repair_node(Id p) {
    if (dead_[p.index()]) return;
    L& node = nodes_[p.index()];
    memo_.erase(detail::mix_hash(node.hash()), p);
    for (Id& child : node.children()) child = uf_.find_mut(child);
    const std::uint32_t hash = detail::mix_hash(node.hash());
    const Id twin = memo_.find(hash, [&](Id other) { return nodes_[other.index()] == node; });
    if (twin == kInvalidId) {
      memo_.insert(hash, p);
      return;
    }
    dead_[p.index()] = true;
    dirty_classes_.push_back(p);
    unite(p, twin);
  }

  /// Drops dead duplicates from touched classes and sorts their nodes by operator.
  void clean_classes() {
    for (Id& id : dirty_classes_) id = uf_.find_mut(id);
    std::sort(dirty_classes_.begin(), dirty_classes_.end());
    dirty_classes_.erase(std::unique(dirty_classes_.begin(), dirty_classes_.end()),
                         dirty_classes_.end());
    for (Id id : dirty_classes_) {
      auto& members = classes_[class_slot_[id.index()]].nodes;
      members.erase(std::remove_if(members.begin(), members.end(),
                                   [&](Id nid) { return bool(dead_[nid.index()]); }),
                    members.end());
      std::sort(members.begin(), members.end(), [&](Id x, Id y) {
        const auto kx = nodes_[x.index()].op_key();
        const auto ky = nodes_[y.index()].op_key();
        return kx != ky ? kx < ky : x < y;
      });
    }
    dirty_classes_.clear();
  }

  void normalize_by_op() {
    for (auto& list : by_op_) {
      for (Id& id : list) id = uf_.find(id);
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    by_op_dirty_ = false;
  }

  void call_modify(Id id) {
    if constexpr (detail::HasModify<A, EGraph>::value) analysis_.modify(*this, uf_.find(id));
  }

  static constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;

  A analysis_;
  UnionFind uf_;
  std::vector<L> nodes_;          // node arena, by node id
  std::vector<bool> dead_;        // node id -> merged away as a congruent duplicate
  std::size_t node_heap_bytes_ = 0;
  detail::NodeTable memo_;        // hashcons: canonical node -> node id
  std::vector<EClass> classes_;   // live classes, dense
  std::vector<std::uint32_t> class_slot_;  // class id -> index in classes_ (kNoSlot if merged)
  std::vector<std::vector<Id>> by_op_;     // op key -> classes having that operator
  bool by_op_dirty_ = false;
  std::vector<Id> pending_;                // node ids to re-canonicalize
  std::vector<Id> analysis_pending_;       // node ids whose class data must be re-made
  std::vector<bool> in_analysis_queue_;
  std::vector<Id> dirty_classes_;          // classes whose node lists need cleaning/sorting
  std::size_t unions_since_rebuild_ = 0;
  bool clean_ = true;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_EGRAPH_H
