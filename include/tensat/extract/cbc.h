// The CBC backend of the exact DAG extractor: the integer program of the design note solved by
// COIN-OR CBC through its C interface, with lazy cycle cuts and a level-variable fallback.
// Compiled only when CMake found CBC (it then defines TENSAT_HAS_CBC=1 on tensat::tensat).
#ifndef TENSAT_EXTRACT_CBC_H
#define TENSAT_EXTRACT_CBC_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensat/extract/dag_problem.h"

#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
#include <Cbc_C_Interface.h>
#endif

namespace tensat {
inline namespace v0 {

/// Whether this build can use CBC (`IlpBackend::Cbc`).
#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
inline constexpr bool kHaveCbc = true;
#else
inline constexpr bool kHaveCbc = false;
#endif

namespace detail {

/// The rows and columns of the DAG-extraction integer program over a DagProblem, kept apart
/// from the solver so that the cycle cuts of one round carry over to the next:
///   columns: x_n ∈ {0,1} per node (objective: its cost), a_c ∈ [0,1] per class (integral
///            because a_c = Σ x_n), and t_c ∈ [0, M−1] per class of a cyclic strongly connected
///            component once level variables are switched on;
///   (1) Σ_{n∈c} x_n − a_c = 0            one node per used class
///   (2) Σ_{n∈c, k∈ch(n)} x_n − a_k ≤ 0    a chosen node needs each of its child classes
///   (3) a_r = 1                          roots are used (column bounds)
///   (4) a_c − Σ_{n: c∈ch(n)} x_n ≤ 0     a non-root class needs a user (negative costs only:
///                                        otherwise leaving a class out never costs more)
///   (5) Σ_i Σ_{n∈c_i, c_{i+1}∈ch(n)} x_n ≤ k−1   per cycle found in a solution (lazy)
///   (6) t_c − t_k − M·x_n ≥ 1 − M         levels: for n∈c, k∈ch(n) in c's component
struct DagIlpRows {
  struct Row {
    std::vector<int> columns;
    std::vector<double> values;
    double lower, upper;
  };
  std::vector<Row> rows;
};

#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC

/// Strongly connected components of the class graph of `p` (Tarjan, iterative); returns the
/// component of each class and, through `cyclic`, whether each component has a cycle.
inline std::vector<std::uint32_t> class_components(const DagProblem& p, std::vector<bool>& cyclic) {
  const auto n = static_cast<std::uint32_t>(p.num_classes());
  constexpr std::uint32_t kUnset = DagProblem::kNone;
  std::vector<std::uint32_t> index(n, kUnset), low(n, 0), component(n, kUnset), stack;
  std::vector<bool> on_stack(n, false);
  // Successors of a class: the child classes of its nodes, visited through (node, child) cursors.
  struct Frame {
    std::uint32_t c, node_pos, child_pos;
  };
  std::vector<Frame> frames;
  std::uint32_t counter = 0, components = 0;
  for (std::uint32_t start = 0; start < n; ++start) {
    if (index[start] != kUnset) continue;
    frames.push_back({start, 0, 0});
    index[start] = low[start] = counter++;
    stack.push_back(start);
    on_stack[start] = true;
    while (!frames.empty()) {
      Frame& f = frames.back();
      const auto members = p.nodes(f.c);
      if (f.node_pos < members.size()) {
        const auto kids = p.children(members[f.node_pos]);
        if (f.child_pos == kids.size()) {
          ++f.node_pos;
          f.child_pos = 0;
          continue;
        }
        const std::uint32_t k = kids[f.child_pos++];
        if (index[k] == kUnset) {
          index[k] = low[k] = counter++;
          stack.push_back(k);
          on_stack[k] = true;
          frames.push_back({k, 0, 0});
        } else if (on_stack[k]) {
          low[f.c] = std::min(low[f.c], index[k]);
        }
        continue;
      }
      const std::uint32_t c = f.c;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().c] = std::min(low[frames.back().c], low[c]);
      if (low[c] != index[c]) continue;
      std::uint32_t size = 0, k;
      do {
        k = stack.back();
        stack.pop_back();
        on_stack[k] = false;
        component[k] = components;
        ++size;
      } while (k != c);
      cyclic.push_back(size > 1);
      ++components;
    }
  }
  return component;
}

/// Solves `p` with CBC: solve, look for cycles among the chosen classes, add a cut per cycle,
/// solve again; after `cycle_cut_rounds` rounds, level variables rule out every cycle at once.
/// Each round starts from the best acyclic solution so far (MIP start), initially `start` (a
/// reduced choice, or empty). Returns the best acyclic solution, optimal when CBC proved the
/// final model optimal and its solution is acyclic.
inline DagSolution solve_cbc(const DagProblem& p, const DagSolution& start,
                             std::chrono::steady_clock::time_point deadline, int cycle_cut_rounds, int threads) {
  using Clock = std::chrono::steady_clock;
  const int n_nodes = static_cast<int>(p.num_nodes()), n_classes = static_cast<int>(p.num_classes());
  auto x = [](std::uint32_t node) { return static_cast<int>(node); };
  auto a = [&](std::uint32_t c) { return n_nodes + static_cast<int>(c); };
  std::vector<bool> is_root(p.num_classes(), false);
  for (std::uint32_t r : p.roots) is_root[r] = true;

  DagIlpRows base, cuts;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    DagIlpRows::Row row{{}, {}, 0.0, 0.0};
    for (std::uint32_t node : p.nodes(c)) {
      row.columns.push_back(x(node));
      row.values.push_back(1.0);
    }
    row.columns.push_back(a(c));
    row.values.push_back(-1.0);
    base.rows.push_back(std::move(row));
  }
  // (2), aggregated per (class, child class): Σ_{n∈c, k∈ch(n)} x_n ≤ a_k. At most one node of c
  // is chosen, so this is the same set of integer solutions as one row per (node, child) with a
  // quarter to a half of the rows; its LP is weaker, but CBC proves the gym's hard files faster.
  std::vector<int> row_of(p.num_classes(), -1);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    std::vector<std::uint32_t> touched;
    for (std::uint32_t node : p.nodes(c))
      for (std::uint32_t k : p.children(node)) {
        if (row_of[k] < 0) {
          row_of[k] = static_cast<int>(base.rows.size());
          base.rows.push_back({{a(k)}, {-1.0}, -1e30, 0.0});
          touched.push_back(k);
        }
        base.rows[row_of[k]].columns.push_back(x(node));
        base.rows[row_of[k]].values.push_back(1.0);
      }
    for (std::uint32_t k : touched) row_of[k] = -1;
  }
  if (!p.nonnegative) {
    std::vector<DagIlpRows::Row> needs_user(p.num_classes(), DagIlpRows::Row{{}, {}, -1e30, 0.0});
    for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
      needs_user[c].columns.push_back(a(c));
      needs_user[c].values.push_back(1.0);
    }
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      for (std::uint32_t k : p.children(node)) {
        needs_user[k].columns.push_back(x(node));
        needs_user[k].values.push_back(-1.0);
      }
    for (std::uint32_t c = 0; c < p.num_classes(); ++c)
      if (!is_root[c]) base.rows.push_back(std::move(needs_user[c]));
  }

  std::vector<std::uint32_t> best = start.choice;
  double best_cost = start.choice.empty() ? std::numeric_limits<double>::infinity() : start.cost;
  DagSolution result;
  result.lower_bound = start.lower_bound;
  for (int round = 0;; ++round) {
    const bool levels = round >= cycle_cut_rounds;
    const double seconds = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (seconds <= 0) break;
    std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
    Cbc_Model* m = model.get();
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      Cbc_addCol(m, "", 0.0, 1.0, p.cost[node], 1, 0, nullptr, nullptr);
    for (std::uint32_t c = 0; c < p.num_classes(); ++c)
      Cbc_addCol(m, "", is_root[c] ? 1.0 : 0.0, 1.0, 0.0, 0, 0, nullptr, nullptr);
    auto add_rows = [&](const DagIlpRows& rows) {
      for (const auto& row : rows.rows)
        Cbc_addRow(m, "", static_cast<int>(row.columns.size()), row.columns.data(), row.values.data(),
                   row.lower <= -1e30 ? 'L' : (row.upper >= 1e30 ? 'G' : (row.lower == row.upper ? 'E' : 'L')),
                   row.lower <= -1e30 ? row.upper : row.lower);
    };
    add_rows(base);
    add_rows(cuts);
    if (levels) {
      std::vector<bool> cyclic;
      const auto component = class_components(p, cyclic);
      std::vector<std::uint32_t> size(cyclic.size(), 0);
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) ++size[component[c]];
      std::vector<int> level(p.num_classes(), -1);
      for (std::uint32_t c = 0; c < p.num_classes(); ++c)
        if (cyclic[component[c]]) {
          level[c] = n_nodes + n_classes + static_cast<int>(c);
        }
      // Level columns exist for every class (unused ones fixed at 0) so indices stay simple.
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
        const double top = level[c] >= 0 ? static_cast<double>(size[component[c]]) : 0.0;
        Cbc_addCol(m, "", 0.0, top, 0.0, 0, 0, nullptr, nullptr);
      }
      for (std::uint32_t node = 0; node < p.num_nodes(); ++node) {
        const std::uint32_t c = p.node_class[node];
        if (level[c] < 0) continue;
        const double big = static_cast<double>(size[component[c]]) + 1.0;
        for (std::uint32_t k : p.children(node)) {
          if (component[k] != component[c]) continue;
          const int columns[3] = {level[c], level[static_cast<std::size_t>(k)], x(node)};
          const double values[3] = {1.0, -1.0, -big};
          Cbc_addRow(m, "", 3, columns, values, 'G', 1.0 - big);
        }
      }
    }
    Cbc_setLogLevel(m, 0);
    Cbc_setParameter(m, "timeMode", "elapsed");
    if (threads > 1) Cbc_setParameter(m, "threads", std::to_string(threads).c_str());
    Cbc_setMaximumSeconds(m, seconds);
    Cbc_setAllowableGap(m, 1e-9);
    Cbc_setAllowableFractionGap(m, 1e-9);
    if (!best.empty()) {
      std::vector<int> columns;
      std::vector<double> values;
      for (std::uint32_t node = 0; node < p.num_nodes(); ++node) {
        columns.push_back(x(node));
        values.push_back(best[p.node_class[node]] == node ? 1.0 : 0.0);
      }
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
        columns.push_back(a(c));
        values.push_back(best[c] != DagProblem::kNone ? 1.0 : 0.0);
      }
      Cbc_setMIPStartI(m, static_cast<int>(columns.size()), columns.data(), values.data());
    }
    Cbc_solve(m);
    // A bound from an abandoned or infeasible run is meaningless (the model always has the
    // incumbent or a relaxation of it as a solution, so neither should happen).
    if (!Cbc_isAbandoned(m) && !Cbc_isProvenInfeasible(m))
      result.lower_bound = std::max(result.lower_bound, Cbc_getBestPossibleObjValue(m));
    const double* solution = Cbc_bestSolution(m);
    if (solution == nullptr) break;  // no solution and no start: give up with the bound alone
    if (!best.empty() && result.lower_bound >= best_cost - 1e-9 * std::max(1.0, std::abs(best_cost))) {
      result.optimal = true;  // the relaxation cannot beat the incumbent, whatever it chose
      break;
    }
    std::vector<std::uint32_t> choice(p.num_classes(), DagProblem::kNone);
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      if (solution[x(node)] > 0.5) choice[p.node_class[node]] = node;
    // One walk from the roots: the DAG cost of the solution, and whether it is usable at all —
    // CBC 2.10 can hand back an infeasible iterate after a time-limited stop (coin-or/Cbc#353),
    // so a solution counts only if every class it needs has a node.
    bool complete = true;
    double cost = 0;
    {
      std::vector<bool> seen(p.num_classes(), false);
      std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
      while (!stack.empty() && complete) {
        const std::uint32_t c = stack.back();
        stack.pop_back();
        if (seen[c]) continue;
        seen[c] = true;
        if (choice[c] == DagProblem::kNone) {
          complete = false;
          continue;
        }
        cost += p.cost[choice[c]];
        for (std::uint32_t k : p.children(choice[c])) stack.push_back(k);
      }
    }
    if (!complete) break;
    // Cycles among the chosen classes, one per pass: a found cycle's classes are set aside for
    // the next pass so that disjoint cycles are all cut in this round.
    bool acyclic = true;
    std::vector<std::uint32_t> trimmed = choice;
    for (int found = 0; found < 64; ++found) {
      const auto cycle = p.find_cycle(trimmed);
      if (cycle.empty()) break;
      acyclic = false;
      DagIlpRows::Row cut{{}, {}, -1e30, static_cast<double>(cycle.size()) - 1.0};
      for (std::size_t i = 0; i < cycle.size(); ++i) {
        const std::uint32_t from = cycle[i], to = cycle[(i + 1) % cycle.size()];
        for (std::uint32_t node : p.nodes(from)) {
          const auto kids = p.children(node);
          if (std::find(kids.begin(), kids.end(), to) != kids.end()) {
            cut.columns.push_back(x(node));
            cut.values.push_back(1.0);
          }
        }
      }
      cuts.rows.push_back(std::move(cut));
      // Cut the cycle out of the search for further ones: its first class gets no children.
      const std::uint32_t leaf = cycle.front();
      std::uint32_t childless = DagProblem::kNone;
      for (std::uint32_t node : p.nodes(leaf))
        if (p.children(node).empty()) childless = node;
      if (childless == DagProblem::kNone) break;  // no way to cut it out: one cut per round
      trimmed[leaf] = childless;
    }
    if (acyclic) {
      if (cost < best_cost) {
        best_cost = cost;
        best = choice;
      }
      if (Cbc_isProvenOptimal(m)) {
        result.optimal = true;
        result.lower_bound = best_cost;
        break;
      }
      if (levels) break;  // out of time with the complete model
    }
    if (Clock::now() >= deadline) break;
  }
  result.choice = std::move(best);
  result.cost = best_cost;
  if (!result.optimal) result.lower_bound = std::min(result.lower_bound, best_cost);
  return result;
}

#endif  // TENSAT_HAS_CBC

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_CBC_H
