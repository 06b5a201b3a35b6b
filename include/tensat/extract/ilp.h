// Exact DAG extraction: pre-simplification, a heuristic warm start, then a built-in
// branch-and-bound or CBC's integer programming, anytime under a time limit.
#ifndef TENSAT_EXTRACT_ILP_H
#define TENSAT_EXTRACT_ILP_H

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <utility>

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
    case IlpBackend::Auto:
      return "auto";
    case IlpBackend::BuiltIn:
      return "builtin";
    case IlpBackend::Cbc:
      return "cbc";
  }
  return "?";
}

namespace detail {

/// 1e-9 of |x| (at least 1e-9): "cheaper" means cheaper by more than this. None for a
/// non-finite x, where inf - inf would be NaN.
inline double cost_slack(double x) {
  return std::isfinite(x) ? 1e-9 * std::max(1.0, std::abs(x)) : 0.0;
}

/// The exact solvers work on costs below 2^50: CBC's LP aborts on an objective coefficient of
/// 1e25 or more, and sums of costs near the largest double overflow. The shift k ≥ 0 that
/// brings the largest finite |cost| of `graph` below 2^50 when multiplied by 2^-k (exact: a
/// power of two), and `graph` with its costs so multiplied.
inline int cost_shift(const ExtractionGraph& graph) {
  double largest = 0;
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n)
    if (std::isfinite(graph.node_cost(n)))
      largest = std::max(largest, std::abs(graph.node_cost(n)));
  const int exponent = largest > 0 ? std::ilogb(largest) : 0;
  return exponent >= 50 ? exponent - 49 : 0;
}

inline ExtractionGraph with_shifted_costs(const ExtractionGraph& graph, int shift) {
  std::vector<std::uint32_t> node_class(graph.num_nodes()), offsets{0}, children;
  std::vector<double> cost(graph.num_nodes());
  std::vector<bool> subsumed(graph.num_nodes());
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n) {
    node_class[n] = graph.node_class(n);
    cost[n] = std::ldexp(graph.node_cost(n), -shift);
    subsumed[n] = graph.subsumed(n);
    children.insert(children.end(), graph.children(n).begin(), graph.children(n).end());
    offsets.push_back(static_cast<std::uint32_t>(children.size()));
  }
  return ExtractionGraph(graph.num_classes(), std::move(node_class), std::move(cost),
                         std::move(offsets), std::move(children), graph.roots(),
                         std::move(subsumed));
}

/// `extract_ilp` until `deadline`, on costs below 2^50 (`cost_shift(graph) == 0`); CBC is
/// killed at `kill_at` if it has not stopped by then.
inline Extraction extract_ilp_until(const ExtractionGraph& graph, const IlpOptions& options,
                                    std::chrono::steady_clock::time_point deadline,
                                    std::chrono::steady_clock::time_point kill_at) {
  using Clock = std::chrono::steady_clock;
  const IlpBackend backend = options.backend;
  // The limit covers the whole extraction: the warm start gets at most half of it (cut short,
  // it still gives a valid incumbent), the rest is for the reduction (its quadratic part stops
  // at the deadline) and the backend.
  GreedyDagOptions warm_start = options.heuristic;
  warm_start.time_limit_seconds =
      std::min(warm_start.time_limit_seconds,
               std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count() / 2));
  Extraction heuristic = extract_greedy_dag(graph, warm_start);
  const DagProblem problem = DagProblem::reduce(graph, heuristic, deadline);
  DagSolution solution;
  solution.choice = problem.incumbent;
  solution.cost = problem.incumbent.empty() ? heuristic.dag_cost : problem.incumbent_cost;
  std::string note;
  if (backend != IlpBackend::Cbc) {
    auto until = deadline;
    if (backend == IlpBackend::Auto && kHaveCbc)
      until = Clock::now() + (deadline - Clock::now()) / 10;
    if (Clock::now() < until) solution = DagBranchAndBound(problem, until).solve();
  }
  if (backend != IlpBackend::BuiltIn && !solution.optimal) {
#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const double bound = solution.lower_bound;
    // CBC's own limit falls before the kill, so that a run it stops in time ends cleanly.
    const auto now = Clock::now();
    const auto cbc_deadline = kill_at > now ? now + (kill_at - now) * 9 / 10 : now;
    CbcRun run = solve_cbc_contained(problem, solution, cbc_deadline, kill_at,
                                     options.cycle_cut_rounds, threads);
    solution = std::move(run.solution);
    solution.lower_bound = std::max(solution.lower_bound, bound);
    if (!run.failure.empty()) {
      // The built-in search takes over for the time left, from CBC's best so far, unless CBC
      // was killed at the limit: what is left then is the reserve for the final check.
      if (Clock::now() < kill_at) {
        const double cbc_bound = solution.lower_bound;
        solution = DagBranchAndBound(problem, deadline, solution).solve();
        solution.lower_bound = std::max(solution.lower_bound, cbc_bound);
        note = "CBC failed (" + run.failure +
               "); the built-in branch-and-bound took over from its best solution";
      } else {
        note = "CBC failed (" + run.failure + "); its best solution is kept";
      }
    }
#else
    (void)kill_at;
#endif
  }
  solution.lower_bound = std::max(solution.lower_bound, problem.mandatory_lower_bound());
  if (solution.lower_bound >= solution.cost - cost_slack(solution.cost)) solution.optimal = true;

  Extraction result = heuristic;
  if (!solution.choice.empty() &&
      solution.cost < heuristic.dag_cost - cost_slack(heuristic.dag_cost)) {
    Extraction candidate;
    candidate.choice = problem.expand(graph, solution.choice);
    if (!check_extraction(graph, candidate.choice)) {  // re-checked on the original graph
      candidate.dag_cost = dag_cost(graph, candidate.choice);
      candidate.tree_cost = tree_cost(graph, candidate.choice);
      if (candidate.dag_cost < result.dag_cost) result = std::move(candidate);
    }
  }
  result.lower_bound = std::min(solution.lower_bound, result.dag_cost);
  result.status = solution.optimal && result.dag_cost <= solution.cost + cost_slack(result.dag_cost)
                      ? ExtractionStatus::Optimal
                      : ExtractionStatus::Feasible;
  if (result.status == ExtractionStatus::Optimal) result.lower_bound = result.dag_cost;
  // Unproven, the first budget that cut the search short: the warm start's, or the deadline.
  result.stop = heuristic.stop;
  if (result.status == ExtractionStatus::Optimal)
    result.stop = ExtractionStop::Finished;
  else if (result.stop == ExtractionStop::Finished && Clock::now() >= deadline)
    result.stop = ExtractionStop::TimeLimit;
  result.note = std::move(note);
  return result;
}

}  // namespace detail

/// The DAG-cost-optimal extraction of `graph`: each class reachable from the roots is paid once.
///
/// Steps: the greedy DAG heuristic gives an incumbent; `DagProblem::reduce` pre-simplifies
/// (unusable, unreachable, too expensive and dominated nodes removed); the backend searches for
/// a cheaper acyclic solution starting from the incumbent. Status Optimal when the backend
/// proved it; otherwise Feasible with `lower_bound` the best proven bound. The result is never
/// worse than the heuristic's. Costs of 2^50 or more are scaled down by a power of two for the
/// search (exactly), and the result's costs computed on `graph`.
///
/// CBC runs in a child process where fork() exists: when it crashes, aborts or overruns the
/// time limit, the built-in branch-and-bound continues from its best solution for the time
/// left, and `note` says so. Throws `Error` when a root has no finite term or the time limit is
/// negative or NaN, or when CBC is asked for but absent; `CostError` when a node costs
/// -infinity or the DAG cost of the extraction found overflows a double. Nodes costing
/// +infinity are never chosen.
inline Extraction extract_ilp(const ExtractionGraph& graph, const IlpOptions& options = {}) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (std::isnan(options.time_limit_seconds) || options.time_limit_seconds < 0)
    throw Error("extract_ilp: the time limit must be a non-negative number of seconds");
  if (options.backend == IlpBackend::Cbc && !kHaveCbc)
    throw Error("extract_ilp: this build has no CBC (install coinor-libcbc-dev and re-configure)");
  const double seconds = std::min(options.time_limit_seconds, 1e9);
  const auto after = [&](double s) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  // The search ends 2 % and a reserve before the limit: expanding and re-checking its solution
  // takes time linear in the graph. CBC is killed, if still running, 2 % and a fixed reserve
  // (reaping the child, reading its last solution) before that; it reports each better
  // solution as it goes, so a kill loses at most a bound.
  const double reserve = 0.001 + 1e-7 * static_cast<double>(graph.num_nodes());
  const auto deadline = after(std::max(0.0, seconds * 0.98 - reserve)),
             kill_at = after(std::max(0.0, seconds * 0.96 - reserve - 0.0015));

  const int shift = detail::cost_shift(graph);
  Extraction result = shift == 0
                          ? detail::extract_ilp_until(graph, options, deadline, kill_at)
                          : detail::extract_ilp_until(detail::with_shifted_costs(graph, shift),
                                                      options, deadline, kill_at);
  if (!std::isfinite(result.dag_cost))  // the heuristic's, with a node costing +infinity
    throw CostError(ExtractionGraph::kNone,
                    "extract_ilp: no extraction of finite DAG cost found within the time limit");
  if (shift != 0) {
    const double shifted_cost = result.dag_cost;
    result.dag_cost = dag_cost(graph, result.choice);
    result.tree_cost = tree_cost(graph, result.choice);
    result.lower_bound = result.status == ExtractionStatus::Optimal
                             ? result.dag_cost
                             : std::ldexp(result.lower_bound, shift);
    if (!std::isfinite(result.dag_cost))
      throw CostError(
          ExtractionGraph::kNone,
          fmt::format(
              "extract_ilp: the DAG cost of the {} extraction, {:g} × 2^{}, overflows a double",
              result.status == ExtractionStatus::Optimal ? "cheapest" : "best found", shifted_cost,
              shift));
  }
  result.micros =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  return result;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_ILP_H
