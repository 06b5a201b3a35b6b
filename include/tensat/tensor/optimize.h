// optimize(): the tensor superoptimizer end to end: saturate with the dialect's rules under
// TENSAT's limits and cycle filtering, then extract the cheapest program (DAG cost).
#ifndef TENSAT_TENSOR_OPTIMIZE_H
#define TENSAT_TENSOR_OPTIMIZE_H

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensat/core/runner.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/greedy_dag.h"
#include "tensat/extract/ilp.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/cycle_filter.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/rules.h"
#include "tensat/tensor/simple_cost.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

enum class TensorExtractor { GreedyDag, Ilp };

/// TENSAT's settings by default: 50,000 nodes, 15 iterations, multi-pattern rules in the first
/// iteration only, cycle filtering on.
struct OptimizeOptions {
  std::size_t node_limit = 50'000;
  std::size_t iter_limit = 15;
  /// Iterations in which the `multi`-labelled rules run (TENSAT's k_multi).
  std::size_t k_multi = 1;
  double time_limit_seconds = 3600;
  TensorExtractor extractor = TensorExtractor::GreedyDag;
  IlpOptions ilp = {};
  /// TENSAT's efficient cycle filtering after every iteration (the per-match pre-filter is
  /// part of every checked rule).
  bool filter_cycles = true;
  /// Called after each iteration with its index and record (for progress lines).
  std::function<void(std::size_t, const Iteration&)> on_iteration;
};

/// What `optimize` found.
struct OptimizeResult {
  RecExpr<TensorNode> optimized;
  double cost_before = 0;
  double cost_after = 0;
  StopReason stop_reason;
  Report report;
  std::size_t cycle_nodes_pruned = 0;
  ExtractionStatus extraction_status = ExtractionStatus::Feasible;
  double saturation_seconds = 0;
  double extraction_seconds = 0;
  [[nodiscard]] double optimize_seconds() const noexcept { return saturation_seconds + extraction_seconds; }
};

/// Optimizes `program` with `rules` (default: `all_rules()`), costing nodes with
/// `simple_node_cost`. The optimized program is checked (`check_program`) before it is returned.
inline OptimizeResult optimize(const RecExpr<TensorNode>& program, const OptimizeOptions& options = {},
                               const std::vector<TensorRewrite>& rules = all_rules()) {
  using Clock = std::chrono::steady_clock;
  OptimizeResult result;
  result.cost_before = simple_program_cost(program);

  const auto start = Clock::now();
  Runner<TensorNode, TensorAnalysis> runner;
  runner.with_node_limit(options.node_limit)
      .with_iter_limit(options.iter_limit)
      .with_time_limit(std::chrono::duration<double>(options.time_limit_seconds))
      .with_label_iteration_limit(std::string(kMultiLabel), options.k_multi)
      .with_expr(program);
  if (options.filter_cycles) runner.with_hook(cycle_filter_hook<TensorNode, TensorAnalysis>(&result.cycle_nodes_pruned));
  if (options.on_iteration)
    runner.with_hook([&options](Runner<TensorNode, TensorAnalysis>& r) -> std::optional<std::string> {
      if (!r.iterations().empty()) options.on_iteration(r.iterations().size() - 1, r.iterations().back());
      return std::nullopt;
    });
  runner.run(rules);
  if (options.on_iteration) options.on_iteration(runner.iterations().size() - 1, runner.iterations().back());
  TensorEGraph& egraph = runner.egraph();
  if (options.filter_cycles)
    result.cycle_nodes_pruned += remove_cycles(egraph, Span<const Id>(runner.roots().data(), runner.roots().size()));
  egraph.rebuild();
  result.saturation_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.stop_reason = *runner.stop_reason();
  result.report = runner.report();

  const auto extract_start = Clock::now();
  std::vector<Id> node_ids;
  const std::vector<Id> roots{runner.roots().front()};
  const ExtractionGraph graph = ExtractionGraph::from_egraph(egraph, roots, SimpleCost(egraph), &node_ids);
  Extraction extraction = options.extractor == TensorExtractor::Ilp ? extract_ilp(graph, options.ilp)
                                                                     : extract_greedy_dag(graph);
  result.optimized = to_recexpr(egraph, graph, node_ids, extraction);
  result.extraction_status = extraction.status;
  result.extraction_seconds = std::chrono::duration<double>(Clock::now() - extract_start).count();
  result.cost_after = simple_program_cost(result.optimized);
  return result;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_OPTIMIZE_H
