// EGraph: the e-graph — hashcons, union-find, e-classes with analysis data, deferred rebuild.
#ifndef TENSAT_CORE_EGRAPH_H
#define TENSAT_CORE_EGRAPH_H

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/fwd.h"
#include "tensat/core/analysis.h"
#include "tensat/core/config.h"
#include "tensat/core/error.h"
#include "tensat/core/explain.h"
#include "tensat/core/id.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/core/subst.h"
#include "tensat/core/union_find.h"
#include "tensat/detail/node_table.h"
#include "tensat/detail/page_allocator.h"

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
template <class L, class A>
class EGraph {
  static_assert(is_language_v<L>,
                "L does not meet the Language requirements (see tensat/core/language.h)");

 public:
  using Language = L;
  using Analysis = A;
  using Data = typename A::Data;

  /// A list of ids that stores up to two inline (most classes are small).
  using IdList = SmallVector<Id, 2>;

  /// An equivalence class of e-nodes.
  struct EClass {
    // Field order keeps the record small: the two lists, then the id beside a small `Data`
    // (48 bytes with NoAnalysis in the other order, 40 in this one).

    /// Ids of the member e-nodes; `EGraph::node(nid)` gives the node. Sorted by `op_key` after
    /// `rebuild()` when the class is large. `modify` may shrink it (`EGraph::retain_nodes`), e.g.
    /// to prune folded terms.
    IdList nodes;
    /// Ids of e-nodes that have this class as a child (deduplicated by `rebuild()`).
    IdList parents;
    /// The canonical id of this class.
    Id id;
    /// The analysis data.
    Data data;

    [[nodiscard]] std::size_t size() const noexcept { return nodes.size(); }
    [[nodiscard]] bool empty() const noexcept { return nodes.empty(); }
  };

  /// The live classes, dense (what `classes()` returns): a `std::vector` whose large buffers are
  /// mapped pages, returned to the system as soon as the array grows past them.
  using ClassVector = std::vector<EClass, detail::PageAllocator<EClass>>;

 private:
  // The other id-indexed arrays, allocated the same way.
  using NodeVector = std::vector<L, detail::PageAllocator<L>>;
  using BitVector = std::vector<bool, detail::PageAllocator<bool>>;
  using IdVector = std::vector<Id, detail::PageAllocator<Id>>;

 public:
  explicit EGraph(A analysis = A{}) : analysis_(std::move(analysis)) {}

  // ------------------------------------------------------------------ building

  /// Adds `node` (children are canonicalized first) and returns the canonical id of its class:
  /// the existing class if an equal node is present, else a new class. O(arity) expected.
  Id add(const L& node) {
    if (is_canonical(node)) return add_canonical(node);
    return add_copy(node);
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
  [[nodiscard]] std::optional<Id> lookup(const L& node) const {
    const Id found = lookup_id(node);
    if (found == kInvalidId) return std::nullopt;
    return found;
  }

  /// `lookup` without the optional: the canonical class id, or `kInvalidId`.
  [[nodiscard]] Id lookup_id(const L& node) const {
    if (is_canonical(node)) return find_canonical(node, false);
    return find_copy(node, false);
  }

  /// Like `lookup_id`, but a node pruned from its class (`retain_nodes`) counts as absent:
  /// what e-matching sees.
  [[nodiscard]] Id lookup_member_id(const L& node) const {
    if (is_canonical(node)) return find_canonical(node, true);
    return find_copy(node, true);
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
    if (!explain_) return unite_with(a, b, kInvalidId, kInvalidId, {}, true);
    const std::string_view why = explain_->in_modify      ? std::string_view("analysis")
                                 : explain_->rule.empty() ? std::string_view("unite")
                                                          : explain_->rule;
    return unite_with(a, b, explain_->node_term(a), explain_->node_term(b),
                      {Justification::Kind::Trusted, explain_->name(why)}, true);
  }

  // ------------------------------------------------------------------ explanations

  /// Turns explanations on (egg's `with_explanations_enabled`): from now on every union is
  /// recorded with what justified it, so that `explain_equivalence` can say why two terms are
  /// equal. Only on an empty e-graph (throws `Error` otherwise). Off, nothing is recorded and
  /// nothing is paid but a test per `add` and `unite`. See docs/headers/explain.md.
  EGraph& with_explanations_enabled() {
    if (!nodes_.empty())
      throw Error("EGraph::with_explanations_enabled: the e-graph must be empty");
    explain_.emplace();
    return *this;
  }
  [[nodiscard]] bool explanations_enabled() const noexcept { return explain_.has_value(); }

  /// Why `a` and `b` are equal: a flat explanation from `a` to `b` (egg's
  /// `explain_equivalence`). Rebuilds first if dirty. Throws `Error` if explanations are off,
  /// if either term is not in the e-graph, or if they are not equivalent.
  Explanation<L> explain_equivalence(const RecExpr<L>& a, const RecExpr<L>& b) {
    if (!explain_) throw Error("explain_equivalence: explanations are off");
    rebuild();
    const auto [ia, ta] = term_of_expr(a);
    const auto [ib, tb] = term_of_expr(b);
    if (find(ia) != find(ib))
      throw Error(fmt::format("explain_equivalence: {} and {} are not equivalent",
                              a.to_dag_string(), b.to_dag_string()));
    return explain_->explain(ta, tb);
  }

  /// Why `a` and `b` are equal, as a tree explanation with shared subproofs (linear in the
  /// terms, where a flat explanation of terms with shared subterms can be exponential). Errors
  /// as `explain_equivalence`.
  TreeExplanation<L> explain_equivalence_tree(const RecExpr<L>& a, const RecExpr<L>& b) {
    return explain_equivalences_tree(a, b, {{a.root(), b.root()}});
  }
  /// Tree explanations of `a`'s node `x_i` = `b`'s node `y_i` for every pair, in one table of
  /// terms and proofs (a proof that several need is there once): for instance, why each
  /// operator of an optimized program equals the original one it replaced. Errors as
  /// `explain_equivalence`.
  TreeExplanation<L> explain_equivalences_tree(const RecExpr<L>& a, const RecExpr<L>& b,
                                               const std::vector<std::pair<Id, Id>>& pairs) {
    if (!explain_) throw Error("explain_equivalence: explanations are off");
    rebuild();
    const auto [ia, ta] = terms_of_expr(a);
    const auto [ib, tb] = terms_of_expr(b);
    std::vector<std::pair<Id, Id>> terms;
    for (const auto& [x, y] : pairs) {
      if (x.index() >= ia.size() || y.index() >= ib.size())
        throw Error("explain_equivalence: a node index past the expression");
      if (find(ia[x.index()]) != find(ib[y.index()]))
        throw Error(fmt::format("explain_equivalence: {} and {} are not equivalent",
                                a.to_dag_string(x), b.to_dag_string(y)));
      terms.emplace_back(ta[x.index()], tb[y.index()]);
    }
    return explain_->explain_tree(terms);
  }

  /// Adds `from` and `to` and unites them, justified by `reason` (egg's `union_trusted` /
  /// `union_instantiations` of ground terms): what an analysis or a custom applier calls so that
  /// its unions read as steps of an explanation. Without explanations: `unite(add_expr(from),
  /// add_expr(to))`. Returns whether two classes were merged.
  bool unite_trusted(const RecExpr<L>& from, const RecExpr<L>& to, std::string_view reason) {
    if (!explain_) return unite(add_expr(from), add_expr(to));
    const auto [ia, ta] = add_expr_explained(from);
    const auto [ib, tb] = add_expr_explained(to);
    return unite_with(ia, ib, ta, tb, {Justification::Kind::Trusted, explain_->name(reason)}, true);
  }

  /// For appliers: instantiates `rhs` (a `PatternAst<L>`) under `subst` and unites it with the
  /// class `eclass` a rule matched. With explanations on and a pattern rule being applied
  /// (`Rewrite::apply` sets the rule), the union is justified by the rule: its left side
  /// instantiated under `subst` rewrites to the instantiated right side. Returns the id of the
  /// instantiation if the classes were distinct (and are now one), else `kInvalidId`.
  template <class Ast>
  Id unite_instantiations(Id eclass, const Ast& rhs, const Subst& subst, bool rhs_first = true) {
    const Id id = instantiate_ast(rhs, subst);
    if (!explain_ || explain_->rule.empty() || !explain_->rule_lhs)
      return (rhs_first ? unite(id, eclass) : unite(eclass, id)) ? id : kInvalidId;
    // The same nodes and the same union as without explanations; the terms are those of the
    // instantiations, found in the classes (`matched_term`).
    const Ast& lhs = *static_cast<const Ast*>(explain_->rule_lhs);
    const Id tr = matched_term(rhs, subst, id);
    const Id tl = matched_term(lhs, subst, eclass);
    const Justification just{Justification::Kind::Rule, explain_->name(explain_->rule)};
    if (tr == kInvalidId || tl == kInvalidId) {  // not expected: match by instantiation
      const auto [ir, tir] = instantiate_explained(rhs, subst);
      const auto [il, til] = instantiate_explained(lhs, subst);
      const bool distinct = find(eclass) != find(ir);
      unite_with(il, ir, til, tir, just, true);
      return distinct ? ir : kInvalidId;
    }
    const bool united = rhs_first ? unite_with(id, eclass, tr, tl, just, false)
                                  : unite_with(eclass, id, tl, tr, just, true);
    return united ? id : kInvalidId;
  }

  /// While alive, unions are attributed to rule `name` whose left side is `lhs` (a
  /// `PatternAst<L>`, or null for other searchers). `Rewrite::apply` opens one.
  class RuleScope {
   public:
    RuleScope(EGraph& egraph, std::string_view name, const void* lhs) : egraph_(egraph) {
      if (!egraph_.explain_) return;
      saved_rule_ = egraph_.explain_->rule;
      saved_lhs_ = egraph_.explain_->rule_lhs;
      egraph_.explain_->rule = name;
      egraph_.explain_->rule_lhs = lhs;
    }
    ~RuleScope() {
      if (!egraph_.explain_) return;
      egraph_.explain_->rule = saved_rule_;
      egraph_.explain_->rule_lhs = saved_lhs_;
    }
    RuleScope(const RuleScope&) = delete;
    RuleScope& operator=(const RuleScope&) = delete;

   private:
    EGraph& egraph_;
    std::string_view saved_rule_;
    const void* saved_lhs_ = nullptr;
  };

  /// The terms the proof forest holds (0 with explanations off).
  [[nodiscard]] std::size_t number_of_explained_terms() const noexcept {
    return explain_ ? explain_->number_of_terms() : 0;
  }

 private:
  bool unite_with(Id a, Id b, Id ta, Id tb, Justification just, bool forward) {
    Id root = uf_.find_mut(a);
    Id other = uf_.find_mut(b);
    if (root == other) return false;
    if (explain_) explain_->link(ta, tb, just, forward);
    if (eclass(root).parents.size() < eclass(other).parents.size()) std::swap(root, other);

    const std::size_t root_slot = uf_.root_value(root);
    const std::size_t other_slot = uf_.root_value(other);
    uf_.union_roots(root, other);  // drops other's slot from the union-find
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

  // Adds `node` whose term is `term` (children are term ids); returns its class and term.
  std::pair<Id, Id> add_explained(const L& node, const L& term) {
    const auto [t, created] = explain_->intern(term);
    if (!created) return {find(explain_->term_class(t)), t};
    explain_->pending = t;
    const Id id = add(node);
    explain_->pending = kInvalidId;
    return {id, t};
  }
  std::pair<Id, Id> add_expr_explained(const RecExpr<L>& expr) {
    if (expr.empty()) throw Error("EGraph::add_expr: empty expression");
    std::vector<Id> ids, terms;
    for (const L& node : expr) {
      const auto [id, t] =
          add_explained(map_children(node, [&](Id c) { return ids[c.index()]; }),
                        map_children(node, [&](Id c) { return terms[c.index()]; }));
      ids.push_back(id);
      terms.push_back(t);
    }
    return {ids.back(), terms.back()};
  }
  template <class Ast>
  Id instantiate_ast(const Ast& ast, const Subst& subst) {
    std::vector<Id> ids(ast.size());
    for (std::size_t i = 0; i < ast.size(); ++i) {
      const auto& n = ast[Id(i)];
      ids[i] = n.is_var() ? subst[n.var()]
                          : add(map_children(n.node(), [&](Id c) { return ids[c.index()]; }));
    }
    return ids.back();
  }
  // The term of `lhs` under `subst`, matched in class `eclass` without adding to the e-graph:
  // e-nodes that witness each pattern node are found by matching again in the classes, and a
  // term not seen before is linked by congruence to its witness's term (the instantiation
  // would add the e-node again wherever unions since the search left its hashcons entry
  // stale, which changes ids that ties in extraction depend on). kInvalidId if no witness.
  template <class Ast>
  Id matched_term(const Ast& lhs, const Subst& subst, Id eclass) {
    std::vector<Id> witness(lhs.size(), kInvalidId);  // an e-node per pattern node
    auto match = [&](auto& self, Id p, Id cls) -> bool {
      const auto& n = lhs[p];
      if (n.is_var()) return find(subst[n.var()]) == find(cls);
      for (Id nid : classes_[uf_.root_value(find(cls))].nodes) {
        const L& node = nodes_[nid.index()];
        if (!n.node().matches(node) || node.children().size() != n.node().children().size())
          continue;
        bool all = true;
        for (std::size_t k = 0; k < node.children().size() && all; ++k)
          all = self(self, n.node().children()[k], node.children()[k]);
        if (all) {
          witness[p.index()] = nid;
          return true;
        }
      }
      return false;
    };
    if (!match(match, lhs.root(), eclass)) return kInvalidId;
    std::vector<Id> terms(lhs.size(), kInvalidId);
    for (std::size_t i = 0; i < lhs.size(); ++i) {
      const auto& n = lhs[Id(i)];
      if (n.is_var()) {
        terms[i] = explain_->node_term(find(subst[n.var()]));
        continue;
      }
      if (witness[i] == kInvalidId) return kInvalidId;  // a subpattern matched in no class
      const L term = map_children(n.node(), [&](Id c) { return terms[c.index()]; });
      auto [t, created] = explain_->intern(term);
      // An equal term in a class not yet merged with this one (congruence pending): a term of
      // its own here, so that the forest stays one tree per class.
      if (!created && find(explain_->term_class(t)) != find(witness[i])) {
        t = explain_->fresh(term);
        created = true;
      }
      if (created) {
        explain_->set_term_class(t, witness[i]);
        explain_->link(t, explain_->node_term(witness[i]), {Justification::Kind::Congruence, 0},
                       true);
      }
      terms[i] = t;
    }
    return terms.back();
  }

  template <class Ast>
  std::pair<Id, Id> instantiate_explained(const Ast& ast, const Subst& subst) {
    std::vector<Id> ids(ast.size()), terms(ast.size());
    for (std::size_t i = 0; i < ast.size(); ++i) {
      const auto& n = ast[Id(i)];
      if (n.is_var()) {
        ids[i] = subst[n.var()];
        terms[i] = explain_->node_term(find(ids[i]));
      } else {
        std::tie(ids[i], terms[i]) =
            add_explained(map_children(n.node(), [&](Id c) { return ids[c.index()]; }),
                          map_children(n.node(), [&](Id c) { return terms[c.index()]; }));
      }
    }
    return {ids.back(), terms.back()};
  }
  // The class and term of a ground term already in the (clean) e-graph; throws if absent.
  std::pair<Id, Id> term_of_expr(const RecExpr<L>& expr) {
    const auto [ids, terms] = terms_of_expr(expr);
    return {ids.back(), terms.back()};
  }
  // The class and term of every node of `expr` (each already in the clean e-graph).
  std::pair<std::vector<Id>, std::vector<Id>> terms_of_expr(const RecExpr<L>& expr) {
    if (expr.empty()) throw Error("explain_equivalence: empty expression");
    std::vector<Id> ids, terms;
    for (const L& n : expr) {
      L node = map_children(n, [&](Id c) { return ids[c.index()]; });
      canonicalize(node);
      const Id m = memo_.find(detail::mix_hash(node.hash()),
                              [&](Id other) { return nodes_[other.index()] == node; });
      if (m == kInvalidId)
        throw Error(fmt::format("explain_equivalence: {} is not in the e-graph",
                                expr.to_dag_string(Id(static_cast<std::uint32_t>(ids.size())))));
      const auto [t, created] =
          explain_->intern(map_children(n, [&](Id c) { return terms[c.index()]; }));
      if (created) {
        explain_->set_term_class(t, m);
        explain_->link(t, explain_->node_term(m), {Justification::Kind::Congruence, 0}, true);
      }
      ids.push_back(find(m));
      terms.push_back(t);
    }
    return {std::move(ids), std::move(terms)};
  }

 public:
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
    release_work_lists();
    clean_ = true;
    const std::size_t n = unions_since_rebuild_ - unions_before;
    unions_since_rebuild_ = 0;
    return n;
  }

  /// Garbage-collects the e-graph: renumbers e-nodes and classes densely, dropping the ids of
  /// congruent duplicates merged away by `rebuild()` (in a saturated e-graph typically as many
  /// as live nodes) and releasing spare capacity. Classes, nodes (pruned ones included, so
  /// `lookup` behaves as before), analysis data and `classes_by_op` are preserved; ids change.
  /// Returns, for every old id, its class's new canonical id (kInvalidId for none), so callers
  /// can translate the ids they hold. Rebuilds first if dirty. O(nodes).
  std::vector<Id> compact() {
    rebuild();
    const std::size_t old_count = nodes_.size();
    // New node ids, members first so that a class's first member becomes its id.
    std::vector<Id> new_node(old_count, kInvalidId);
    std::vector<Id> keep;  // old node ids in new order
    keep.reserve(memo_.size());
    for (const EClass& c : classes_)
      for (Id nid : c.nodes) {
        new_node[nid.index()] = Id(keep.size());
        keep.push_back(nid);
      }
    const std::size_t members = keep.size();
    for (std::size_t i = 0; i < old_count; ++i)      // pruned nodes: still in the hashcons
      if (!dead_[i] && new_node[i] == kInvalidId) {  // then pruned_[i]
        new_node[i] = Id(keep.size());
        keep.push_back(Id(i));
      }
    // A class's new id: its first member, else (all pruned) its first pruned node.
    std::vector<Id> new_class(old_count, kInvalidId);
    for (Id old : keep) {
      const Id cls = uf_.find(old);
      if (new_class[cls.index()] == kInvalidId) new_class[cls.index()] = new_node[old.index()];
    }
    std::vector<Id> mapping(old_count, kInvalidId);
    for (std::size_t i = 0; i < old_count; ++i) mapping[i] = new_class[uf_.find(Id(i)).index()];

    NodeVector nodes;
    nodes.reserve(keep.size());
    UnionFind uf;
    uf.reserve(keep.size());
    for (Id old : keep) {
      nodes.push_back(map_children(nodes_[old.index()], [&](Id c) { return mapping[c.index()]; }));
      uf.make_set();
    }
    for (std::size_t i = 0; i < keep.size(); ++i) {
      const Id cls = mapping[keep[i].index()];
      if (cls != Id(i)) uf.union_roots(cls, Id(i));
    }
    detail::NodeTable memo;
    memo.reserve(keep.size());
    for (std::size_t i = 0; i < nodes.size(); ++i)
      memo.insert(detail::mix_hash(nodes[i].hash()), Id(i));
    memo.fit();  // at rest: about 7/8 full

    ClassVector classes;
    classes.reserve(classes_.size());
    auto remap_list = [&](const IdList& list, bool drop_dead) {
      IdList out;
      out.reserve(list.size());
      for (Id nid : list)
        if (!(drop_dead && dead_[nid.index()])) out.push_back(new_node[nid.index()]);
      return out;
    };
    for (EClass& c : classes_) {
      const Id id = mapping[c.id.index()];
      uf.set_root_value(id, static_cast<std::uint32_t>(classes.size()));
      classes.push_back(
          EClass{remap_list(c.nodes, false), remap_list(c.parents, true), id, std::move(c.data)});
    }
    for (auto& list : by_op_) {
      for (Id& id : list) id = mapping[id.index()];
      list.shrink_to_fit();
    }

    nodes_ = std::move(nodes);
    uf_ = std::move(uf);
    memo_ = std::move(memo);
    classes_ = std::move(classes);
    dead_.assign(nodes_.size(), false);
    pruned_.assign(nodes_.size(), false);
    for (std::size_t i = members; i < nodes_.size(); ++i) pruned_[i] = true;
    node_heap_bytes_ = 0;
    for (const L& n : nodes_) node_heap_bytes_ += detail::NodeHeapBytes<L>::of(n);
    BitVector().swap(in_analysis_queue_);
    BitVector().swap(seen_);
    if (explain_) explain_->renumber(keep, mapping);
    // Member lists keep their order, so large classes stay sorted by operator.
    return mapping;
  }

  /// True when no `add`/`unite` happened since the last `rebuild()`.
  [[nodiscard]] bool is_clean() const noexcept { return clean_; }

  /// Keeps only the member nodes of class `id` for which `keep(node)` holds (egg's
  /// `egraph[id].nodes.retain(..)`). Pruned nodes stay in the hashcons, as in egg, so `lookup`
  /// and `add` still find the class through them. E-matching and extraction no longer see them
  /// at all: unlike egg, whose ground-term lookups still match pruned nodes (so that its match
  /// sets depend on the order its pattern compiler picks), `lookup_member_id` skips them.
  template <class Pred>
  void retain_nodes(Id id, Pred&& keep) {
    eclass_mut(id).nodes.erase_if([&](Id nid) {
      if (keep(nodes_[nid.index()])) return false;
      pruned_[nid.index()] = true;
      return true;
    });
  }

  /// Like `retain_nodes`, but `keep(node_id)` decides by node id (for filters that track
  /// nodes by id, such as the tensor dialect's cycle filter).
  template <class Pred>
  void retain_node_ids(Id id, Pred&& keep) {
    eclass_mut(id).nodes.erase_if([&](Id nid) {
      if (keep(nid)) return false;
      pruned_[nid.index()] = true;
      return true;
    });
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
  /// classes, which `rebuild()` sorts by operator). On a dirty e-graph: all member ids.
  [[nodiscard]] Span<const Id> nodes_with_op(Id id, std::uint32_t op_key) const {
    const auto& members = eclass(id).nodes;
    const Id* first = members.data();
    const Id* last = first + members.size();
    if (members.size() < kBinarySearchThreshold || !clean_) return {first, members.size()};
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
  [[nodiscard]] const ClassVector& classes() const noexcept { return classes_; }
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

  /// Canonical ids of the classes having a node with operator key `op_key`, each once, in no
  /// particular order. Exact after `rebuild()`, except that it may include classes whose nodes
  /// with that operator were pruned.
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
    std::size_t nodes = 0;        ///< node arena (+ heap children) and dead flags
    std::size_t union_find = 0;   ///< union-find parents and class slots
    std::size_t hashcons = 0;     ///< hashcons slots
    std::size_t classes = 0;      ///< class records (with inline analysis data)
    std::size_t class_lists = 0;  ///< member and parent lists of the classes
    std::size_t by_op = 0;        ///< classes_by_op index
    std::size_t work = 0;         ///< rebuild work lists
    [[nodiscard]] std::size_t total() const noexcept {
      return nodes + union_find + hashcons + classes + class_lists + by_op + work;
    }
  };

  /// Bytes held by the e-graph's structures, by part. Analysis data that allocates is counted
  /// by its inline size only. O(classes).
  [[nodiscard]] MemoryUsage memory_breakdown() const noexcept {
    MemoryUsage m;
    m.nodes = nodes_.capacity() * sizeof(L) + node_heap_bytes_ +
              (dead_.capacity() + pruned_.capacity()) / 8;
    m.union_find = uf_.memory_bytes();
    m.hashcons = memo_.memory_bytes();
    m.classes = classes_.capacity() * sizeof(EClass);
    for (const EClass& c : classes_) m.class_lists += c.nodes.heap_bytes() + c.parents.heap_bytes();
    for (const auto& list : by_op_)
      m.by_op += detail::PageAllocator<Id>::held_bytes(list.capacity());
    m.by_op += by_op_.capacity() * sizeof(by_op_[0]);
    m.work = (pending_.capacity() + analysis_pending_.capacity() + dirty_classes_.capacity()) *
                 sizeof(Id) +
             (in_analysis_queue_.capacity() + seen_.capacity()) / 8;
    return m;
  }

  /// Total bytes held by the e-graph's structures: what the runner's memory limit checks.
  [[nodiscard]] std::size_t memory_usage() const noexcept { return memory_breakdown().total(); }

  /// Makes room for new e-nodes within a byte budget and returns how many: adding up to that
  /// many nodes keeps `memory_usage()` within `budget` (up to the estimate below), with no array
  /// growing by doubling on the way. Spare capacity is used first; when the arrays indexed by
  /// node or class id are full, they grow to twice their size if that fits the budget, else by
  /// exactly what fits, or not at all (returns 0) when what fits is under 1/16 of the nodes held
  /// (so the caller stops within about 5 % of the budget instead of creeping towards it).
  /// Exact for those arrays; a new node's entries in class lists and the by-operator index are
  /// estimated at twice the current average (lists grow by doubling). O(classes).
  std::size_t reserve_within(std::size_t budget) {
    const MemoryUsage m = memory_breakdown();
    const std::size_t used = m.total();
    if (used >= budget) return 0;
    const std::size_t free_bytes = budget - used;
    const std::size_t ids = nodes_.size();
    const std::size_t list_bytes = std::max<std::size_t>(
        16, 2 * (m.class_lists + m.by_op + node_heap_bytes_) / std::max<std::size_t>(ids, 1));
    const std::size_t memo_cap = memo_.capacity_for_entries();
    const std::size_t memo_room = memo_cap > memo_.size() ? memo_cap - memo_.size() : 0;
    const std::size_t spare = std::min({nodes_.capacity() - ids, uf_.capacity() - ids, memo_room,
                                        classes_.capacity() - classes_.size()});
    if (spare > 0) return std::min(spare, free_bytes / list_bytes);
    // Per new id: arena slot, union-find entry, class record, hashcons slots at 3/4 load, the
    // four flag/scratch bit vectors (a byte covers them even as they double), its list entries.
    const std::size_t per_id =
        sizeof(L) + sizeof(std::uint32_t) + sizeof(EClass) + 11 + 1 + list_bytes;
    const std::size_t grow = std::min(std::max<std::size_t>(ids, 64), free_bytes / per_id);
    if (grow == 0 || grow < ids / 16) return 0;
    nodes_.reserve(ids + grow);
    dead_.reserve(ids + grow);
    pruned_.reserve(ids + grow);
    uf_.reserve(ids + grow);
    memo_.reserve_exact(memo_.size() + grow);
    classes_.reserve(classes_.size() + grow);
    return grow;
  }

  /// Bounded growth: once on, an array indexed by node or class id that is full grows by 1/16
  /// of its size (at least 64) instead of doubling, so adding nodes past the room
  /// `reserve_within` made overshoots a byte budget by what those nodes take, not by a doubled
  /// array. Still amortized O(1) per node, with more copying; the runner turns it on for a run
  /// under a memory limit. Off by default.
  void set_bounded_growth(bool on) noexcept { bounded_growth_ = on; }
  [[nodiscard]] bool bounded_growth() const noexcept { return bounded_growth_; }

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

  [[nodiscard]] const EClass& eclass(Id id) const { return classes_[uf_.root_value(uf_.find(id))]; }
  [[nodiscard]] EClass& eclass_mut(Id id) { return classes_[uf_.root_value(uf_.find(id))]; }

  void canonicalize(L& node) const {
    for (Id& child : node.children()) child = uf_.find(child);
  }

  // Nodes are usually canonical already (instantiation builds them from canonical ids), so the
  // check below spares a copy. A copy right after the caller wrote the children one by one
  // would also be a wide load over narrow stores, which stalls store-to-load forwarding.
  [[nodiscard]] bool is_canonical(const L& node) const noexcept {
    for (Id child : node.children())
      if (uf_.find(child) != child) return false;
    return true;
  }

  // The copying paths stay out of line: inlined, the compiler would copy the node on the common
  // canonical path too (one copy serving both), as a wide load right after the caller stored
  // the children, which stalls store-to-load forwarding.
  TENSAT_NOINLINE Id add_copy(const L& node) {
    L copy = node;
    canonicalize(copy);
    return add_canonical(copy);
  }
  TENSAT_NOINLINE Id find_copy(const L& node, bool members_only) const {
    L copy = node;
    canonicalize(copy);
    return find_canonical(copy, members_only);
  }

  [[nodiscard]] Id find_canonical(const L& node, bool members_only) const {
    const std::uint32_t hash = detail::mix_hash(node.hash());
    const Id found = memo_.find(hash, [&](Id other) { return nodes_[other.index()] == node; });
    if (found == kInvalidId || (members_only && pruned_[found.index()])) return kInvalidId;
    return uf_.find(found);
  }

  Id add_canonical(const L& node) {
    const std::uint32_t hash = detail::mix_hash(node.hash());
    const Id existing = memo_.find(hash, [&](Id other) { return nodes_[other.index()] == node; });
    if (existing != kInvalidId) {
      if (explain_ && explain_->pending != kInvalidId) {  // a new term congruent to `existing`
        const Id t = std::exchange(explain_->pending, kInvalidId);
        explain_->set_term_class(t, existing);
        explain_->link(t, explain_->node_term(existing), {Justification::Kind::Congruence, 0},
                       true);
      }
      return uf_.find(existing);
    }

    if (bounded_growth_) grow_bounded();
    const Id id = uf_.make_set();
    nodes_.push_back(node);
    dead_.push_back(false);
    pruned_.push_back(false);
    node_heap_bytes_ += detail::NodeHeapBytes<L>::of(nodes_.back());
    memo_.insert(hash, id);
    Data data = analysis_.make(static_cast<const EGraph&>(*this), nodes_[id.index()], id);
    if (classes_.size() > UnionFind::kMaxRootValue) throw Error("EGraph: too many classes");
    uf_.set_root_value(id, static_cast<std::uint32_t>(classes_.size()));
    classes_.push_back(EClass{IdList{id}, IdList{}, id, std::move(data)});
    Id previous = kInvalidId;
    for (Id child : nodes_[id.index()].children()) {
      if (child != previous) eclass_mut(child).parents.push_back(id);
      previous = child;
    }
    by_op(nodes_[id.index()].op_key()).push_back(id);
    clean_ = false;
    if (explain_) record_new_node(id);
    call_modify(id);
    return uf_.find(id);
  }

  // The term of a node just created: the one `add_explained` is adding, else the node with its
  // children's terms.
  void record_new_node(Id id) {
    Id t = std::exchange(explain_->pending, kInvalidId);
    if (t == kInvalidId)
      t = explain_->fresh(
          map_children(nodes_[id.index()], [&](Id c) { return explain_->node_term(c); }));
    explain_->set_term_class(t, id);
    explain_->set_node_term(id, t);
  }

  // Room for one more node id (and class) in every id-indexed array, by 1/16 steps.
  void grow_bounded() {
    const std::size_t ids = nodes_.size();
    const std::size_t step = std::max<std::size_t>(64, ids / 16);
    if (ids == nodes_.capacity()) nodes_.reserve(ids + step);
    if (ids == dead_.capacity()) dead_.reserve(ids + step);
    if (ids == pruned_.capacity()) pruned_.reserve(ids + step);
    if (ids == uf_.capacity()) uf_.reserve(ids + step);
    if (memo_.size() + 1 > memo_.capacity_for_entries()) memo_.reserve_exact(memo_.size() + step);
    if (classes_.size() == classes_.capacity()) classes_.reserve(classes_.size() + step);
  }

  IdVector& by_op(std::uint32_t key) {
    if (key >= by_op_.size()) {
      if (bounded_growth_ && key >= by_op_.capacity()) by_op_.reserve(key + 1 + key / 16);
      by_op_.resize(key + 1);
    }
    return by_op_[key];
  }

  static void append(IdList& into, IdList& from) {
    if (into.size() < from.size()) std::swap(into, from);
    into.append(from.data(), from.size());
    from = IdList();
  }

  void enqueue_analysis(const IdList& parents) {
    if (in_analysis_queue_.size() < nodes_.size()) in_analysis_queue_.resize(nodes_.size(), false);
    for (Id p : parents) {
      if (in_analysis_queue_[p.index()]) continue;
      in_analysis_queue_[p.index()] = true;
      analysis_pending_.push_back(p);
    }
  }

  /// Removes the class in `slot` by moving the last class into it.
  void remove_class(std::size_t slot) {
    if (slot + 1 != classes_.size()) {
      classes_[slot] = std::move(classes_.back());
      uf_.set_root_value(classes_[slot].id, static_cast<std::uint32_t>(slot));
    }
    classes_.pop_back();
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
    if (explain_)
      unite_with(p, twin, explain_->node_term(p), explain_->node_term(twin),
                 {Justification::Kind::Congruence, 0}, true);
    else
      unite(p, twin);
  }

  /// Drops dead duplicates from the node and parent lists of touched classes, dedups their
  /// parents, and sorts the nodes of large ones by operator (for `nodes_with_op`).
  void clean_classes() {
    seen_.resize(nodes_.size(), false);
    std::size_t kept = 0;
    for (Id id : dirty_classes_) {  // dedup the canonical ids with the scratch bitset
      const Id root = uf_.find_mut(id);
      if (seen_[root.index()]) continue;
      seen_[root.index()] = true;
      dirty_classes_[kept++] = root;
    }
    dirty_classes_.resize(kept);
    for (Id id : dirty_classes_) seen_[id.index()] = false;

    for (Id id : dirty_classes_) {
      EClass& c = classes_[uf_.root_value(id)];
      c.nodes.erase_if([&](Id nid) { return bool(dead_[nid.index()]); });
      if (c.nodes.size() >= kBinarySearchThreshold)
        std::sort(c.nodes.begin(), c.nodes.end(), [&](Id x, Id y) {
          const auto kx = nodes_[x.index()].op_key();
          const auto ky = nodes_[y.index()].op_key();
          return kx != ky ? kx < ky : x < y;
        });
      c.parents.erase_if([&](Id p) {
        if (dead_[p.index()] || seen_[p.index()]) return true;
        seen_[p.index()] = true;
        return false;
      });
      for (Id p : c.parents) seen_[p.index()] = false;
      if (c.parents.capacity() > 2 * c.parents.size() + 8) c.parents.shrink_to_fit();
      if (c.nodes.capacity() > 2 * c.nodes.size() + 8) c.nodes.shrink_to_fit();
    }
    dirty_classes_.clear();
    if (classes_.capacity() > 2 * classes_.size() + 64) classes_.shrink_to_fit();
  }

  /// Canonicalizes and dedups the per-operator class lists after unions. O(entries), with no
  /// sorting: entries are deduplicated with the scratch bitset.
  void normalize_by_op() {
    seen_.resize(nodes_.size(), false);
    for (auto& list : by_op_) {
      std::size_t kept = 0;
      for (Id id : list) {
        const Id root = uf_.find_mut(id);
        if (seen_[root.index()]) continue;
        seen_[root.index()] = true;
        list[kept++] = root;
      }
      list.resize(kept);
      for (Id id : list) seen_[id.index()] = false;
      if (list.capacity() > 2 * list.size() + 16) list.shrink_to_fit();
    }
    by_op_dirty_ = false;
  }

  /// Work lists can grow large during a rebuild; give the memory back once done.
  void release_work_lists() {
    constexpr std::size_t kKeep = 1024;
    if (pending_.capacity() > kKeep) std::vector<Id>().swap(pending_);
    if (analysis_pending_.capacity() > kKeep) std::vector<Id>().swap(analysis_pending_);
    if (dirty_classes_.capacity() > kKeep) std::vector<Id>().swap(dirty_classes_);
  }

  void call_modify(Id id) {
    if constexpr (detail::HasModify<A, EGraph>::value) {
      if (!explain_) return analysis_.modify(*this, uf_.find(id));
      struct InModify {  // unions inside `modify` are the analysis's, even if it throws
        detail::Explainer<L>& e;
        ~InModify() { --e.in_modify; }
      } scope{*explain_};
      ++explain_->in_modify;
      analysis_.modify(*this, uf_.find(id));
    }
  }

  A analysis_;
  UnionFind uf_;
  NodeVector nodes_;  // node arena, by node id
  BitVector dead_;    // node id -> merged away as a congruent duplicate
  BitVector pruned_;  // node id -> removed from its class by retain_nodes
  std::size_t node_heap_bytes_ = 0;
  detail::NodeTable memo_;            // hashcons: canonical node -> node id
  ClassVector classes_;               // live classes, dense
  std::vector<IdVector> by_op_;       // op key -> classes having that operator
  bool by_op_dirty_ = false;          // by_op_ may hold merged-away class ids
  BitVector seen_;                    // scratch bitset over ids, all false between uses
  std::vector<Id> pending_;           // node ids to re-canonicalize
  std::vector<Id> analysis_pending_;  // node ids whose class data must be re-made
  BitVector in_analysis_queue_;
  std::vector<Id> dirty_classes_;  // classes whose node lists need cleaning/sorting
  std::size_t unions_since_rebuild_ = 0;
  bool clean_ = true;
  bool bounded_growth_ = false;                  // see set_bounded_growth
  std::optional<detail::Explainer<L>> explain_;  // the proof forest, when explanations are on
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_EGRAPH_H
