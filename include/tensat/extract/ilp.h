// Exact DAG extraction: pre-simplification, a heuristic warm start, then a built-in
// branch-and-bound or CBC's integer programming, anytime under a time limit.
#ifndef TENSAT_EXTRACT_ILP_H
#define TENSAT_EXTRACT_ILP_H

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/extract/branch_and_bound.h"
#include "tensat/extract/cbc.h"
#include "tensat/extract/dag_problem.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/greedy_dag.h"

namespace tensat {
inline namespace v0 {

/// Which solver proves the DAG optimum.
enum class IlpBackend {
  /// The built-in branch-and-bound for a tenth of the time limit (it proves many e-graphs in
  /// milliseconds after pre-simplification), then CBC from its best solution when this build has
  /// CBC (`kHaveCbc`); without CBC, the built-in for the whole time limit.
  Auto,
  BuiltIn,  ///< `detail::DagBranchAndBound`: no dependency; strong on small or tight e-graphs
  Cbc,      ///< COIN-OR CBC (needs `coinor-libcbc-dev` at configure time; `Error` otherwise)
};

/// Knobs of `extract_ilp`.
struct IlpOptions {
  /// Wall-clock budget for the whole extraction, heuristic included (it gets at most half).
  /// On expiry the best solution found is returned with status Feasible and stop TimeLimit
  /// (never worse than the heuristic).
  double time_limit_seconds = 30;
  IlpBackend backend = IlpBackend::Auto;
  /// CBC: rounds of lazy cycle cuts before level variables rule out all cycles at once.
  int cycle_cut_rounds = 10;
  /// CBC: solver threads; 0 = one per hardware thread. (CBC with several threads is not
  /// deterministic in the solution it returns among equal-cost optima, only in the cost.)
  int threads = 0;
  /// The warm start's heuristic (`extract_greedy_dag`).
  GreedyDagOptions heuristic = {};
};

/// The name of a backend, as the CLI and reports spell it.
inline const char* to_string(IlpBackend backend) {
  switch (backend) {
    case IlpBackend::Auto: return "auto";
    case IlpBackend::BuiltIn: return "builtin";
    case IlpBackend::Cbc: return "cbc";
  }
  return "?";
}

/// The DAG-cost-optimal extraction of `graph`: each class reachable from the roots is paid once.
///
/// Steps: the greedy DAG heuristic gives an incumbent; `DagProblem::reduce` pre-simplifies
/// (unusable, unreachable, too expensive and dominated nodes removed); the backend searches for
/// a cheaper acyclic solution starting from the incumbent. Status Optimal when the backend
/// proved it; otherwise Feasible with `lower_bound` the best proven bound. The result is never
/// worse than the heuristic's. Throws `Error` when a root has no finite term, or when CBC is
/// asked for but absent.
inline Extraction extract_ilp(const ExtractionGraph& graph, const IlpOptions& options = {}) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (std::isnan(options.time_limit_seconds) || options.time_limit_seconds < 0)
    throw Error("extract_ilp: the time limit must be a non-negative number of seconds");
  const IlpBackend backend = options.backend;
  if (backend == IlpBackend::Cbc && !kHaveCbc)
    throw Error("extract_ilp: this build has no CBC (install coinor-libcbc-dev and re-configure)");
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                  std::min(options.time_limit_seconds, 1e9)));

  // The limit covers the whole extraction: the warm start gets at most half of it (cut short,
  // it still gives a valid incumbent), the rest is for the reduction, whose work is not
  // interruptible, and the backend.
  GreedyDagOptions warm_start = options.heuristic;
  warm_start.time_limit_seconds =
      std::min(warm_start.time_limit_seconds,
               std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count() / 2));
  Extraction heuristic = extract_greedy_dag(graph, warm_start);
  const DagProblem problem = DagProblem::reduce(graph, heuristic);
  DagSolution solution;
  solution.choice = problem.incumbent;
  solution.cost = problem.incumbent.empty() ? heuristic.dag_cost : problem.incumbent_cost;
  if (backend != IlpBackend::Cbc) {
    auto until = deadline;
    if (backend == IlpBackend::Auto && kHaveCbc) until = Clock::now() + (deadline - Clock::now()) / 10;
    solution = detail::DagBranchAndBound(problem, until).solve();
  }
  if (backend != IlpBackend::BuiltIn && !solution.optimal) {
#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
    const int threads = options.threads > 0 ? options.threads
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const double bound = solution.lower_bound;
    solution = detail::solve_cbc(problem, solution, deadline, options.cycle_cut_rounds, threads);
    solution.lower_bound = std::max(solution.lower_bound, bound);
#endif
  }
  solution.lower_bound = std::max(solution.lower_bound, problem.mandatory_lower_bound());
  const double proof_slack = 1e-9 * std::max(1.0, std::abs(solution.cost));
  if (solution.lower_bound >= solution.cost - proof_slack) solution.optimal = true;

  Extraction result = heuristic;
  const double slack = 1e-9 * std::max(1.0, std::abs(heuristic.dag_cost));
  if (!solution.choice.empty() && solution.cost < heuristic.dag_cost - slack) {
    Extraction candidate;
    candidate.choice = problem.expand(graph, solution.choice);
    if (!check_extraction(graph, candidate.choice)) {  // re-checked on the original graph
      candidate.dag_cost = dag_cost(graph, candidate.choice);
      candidate.tree_cost = tree_cost(graph, candidate.choice);
      if (candidate.dag_cost < result.dag_cost) result = std::move(candidate);
    }
  }
  result.lower_bound = std::min(solution.lower_bound, result.dag_cost);
  const double gap_slack = 1e-9 * std::max(1.0, std::abs(result.dag_cost));
  result.status = solution.optimal && result.dag_cost <= solution.cost + gap_slack ? ExtractionStatus::Optimal
                                                                                  : ExtractionStatus::Feasible;
  if (result.status == ExtractionStatus::Optimal) result.lower_bound = result.dag_cost;
  // Unproven, the first budget that cut the search short: the warm start's, or the deadline.
  result.stop = heuristic.stop;
  if (result.status == ExtractionStatus::Optimal) result.stop = ExtractionStop::Finished;
  else if (result.stop == ExtractionStop::Finished && Clock::now() >= deadline)
    result.stop = ExtractionStop::TimeLimit;
  result.micros = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  return result;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_ILP_H
