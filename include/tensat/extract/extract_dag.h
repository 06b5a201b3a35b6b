// extract_dag: the best term of an e-class under a DAG cost, from an e-graph in one call.
#ifndef TENSAT_EXTRACT_EXTRACT_DAG_H
#define TENSAT_EXTRACT_EXTRACT_DAG_H

#include <utility>
#include <vector>

#include "tensat/core/egraph.h"
#include "tensat/core/recexpr.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/greedy_dag.h"
#include "tensat/extract/ilp.h"

namespace tensat {
inline namespace v0 {

/// A term extracted under a DAG cost (each shared class paid once) and the extraction behind
/// it (costs, status, lower bound, stop reason, note).
template <class L>
struct DagTerm {
  RecExpr<L> expr;        ///< the chosen term; a class used twice appears once
  Extraction extraction;  ///< over `ExtractionGraph::from_egraph(egraph, {root}, cost)`
};

namespace detail {
template <class L, class A, class NodeCost, class Extract>
DagTerm<L> extract_dag_with(const EGraph<L, A>& egraph, Id root, NodeCost&& cost,
                            Extract&& extract) {
  std::vector<Id> node_ids;
  const ExtractionGraph view =
      ExtractionGraph::from_egraph(egraph, {root}, std::forward<NodeCost>(cost), &node_ids);
  Extraction extraction = extract(view);
  RecExpr<L> expr = to_recexpr(egraph, view, node_ids, extraction);
  return DagTerm<L>{std::move(expr), std::move(extraction)};
}
}  // namespace detail

/// The best term of `root`'s class under the DAG cost given by `cost` (a node's additive cost,
/// called as for `ExtractionGraph::from_egraph`: `cost(node)` or `cost(node, eclass)`), found
/// by `extract_greedy_dag` with `options`. The e-graph must be clean (rebuilt). Throws what the
/// view and the extractor throw (`Error`, `CostError`).
template <class L, class A, class NodeCost>
DagTerm<L> extract_dag(const EGraph<L, A>& egraph, Id root, NodeCost&& cost,
                       const GreedyDagOptions& options = {}) {
  return detail::extract_dag_with(
      egraph, root, std::forward<NodeCost>(cost),
      [&](const ExtractionGraph& g) { return extract_greedy_dag(g, options); });
}

/// As above, exactly: `extract_ilp` with `options` (its status says whether it proved the
/// optimum within the time limit).
template <class L, class A, class NodeCost>
DagTerm<L> extract_dag(const EGraph<L, A>& egraph, Id root, NodeCost&& cost,
                       const IlpOptions& options) {
  return detail::extract_dag_with(
      egraph, root, std::forward<NodeCost>(cost),
      [&](const ExtractionGraph& g) { return extract_ilp(g, options); });
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_EXTRACT_DAG_H
