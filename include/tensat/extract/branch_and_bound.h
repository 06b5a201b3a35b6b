// The built-in exact DAG extractor: depth-first branch-and-bound over class decisions, so that
// exact extraction works with no solver installed.
#ifndef TENSAT_EXTRACT_BRANCH_AND_BOUND_H
#define TENSAT_EXTRACT_BRANCH_AND_BOUND_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "tensat/extract/dag_problem.h"

namespace tensat {
inline namespace v0 {
namespace detail {

/// Exact DAG extraction of a DagProblem by branch-and-bound.
///
/// A search state is a set of *decided* classes (each with its chosen node) and the set of
/// *required* classes: the roots and every child class of a decided node. The search picks a
/// required undecided class (the one with the fewest nodes: fail first) and branches on its
/// nodes, cheapest bound first, skipping a node whose children reach the class through decided
/// nodes (it would close a cycle, so the decided graph stays acyclic and every complete state is
/// a valid extraction). The bound of a state is
///   Σ decided costs + Σ_{required undecided} min node cost + Σ_{other classes} min(0, min cost):
/// a required class pays at least its cheapest node, and any other class can only lower the
/// total if its cheapest node is negative. It starts from the incumbent (a heuristic's
/// solution) and prunes every branch whose bound cannot beat it. On the deadline it returns the
/// incumbent with the smallest bound of the unexplored branches as the proven lower bound.
class DagBranchAndBound {
 public:
  using Clock = std::chrono::steady_clock;

  DagBranchAndBound(const DagProblem& problem, Clock::time_point deadline)
      : p_(problem),
        deadline_(deadline),
        choice_(problem.num_classes(), DagProblem::kNone),
        refs_(problem.num_classes(), 0),
        min_cost_(problem.num_classes(), std::numeric_limits<double>::infinity()),
        open_pos_(problem.num_classes(), DagProblem::kNone),
        seen_(problem.num_classes(), 0),
        candidates_(problem.num_classes() + 1) {  // one per depth, never reallocated mid-search
    for (std::uint32_t c = 0; c < p_.num_classes(); ++c) {
      for (std::uint32_t n : p_.nodes(c)) min_cost_[c] = std::min(min_cost_[c], p_.cost[n]);
      free_negative_ += std::min(0.0, min_cost_[c]);
    }
    for (std::uint32_t root : p_.roots) require(root);
    best_ = p_.incumbent;
    best_cost_ = p_.incumbent.empty() ? std::numeric_limits<double>::infinity() : p_.incumbent_cost;
  }

  DagSolution solve() {
    const double unexplored = search(0);
    DagSolution result;
    result.choice = best_;
    result.cost = best_cost_;
    result.optimal = !aborted_;
    result.lower_bound = aborted_ ? std::min(unexplored, best_cost_) : best_cost_;
    return result;
  }

  /// Search states visited (for reports and benchmarks).
  [[nodiscard]] std::uint64_t visits() const noexcept { return visits_; }

 private:
  [[nodiscard]] double bound() const { return decided_ + open_min_ + free_negative_; }
  [[nodiscard]] double slack() const { return 1e-9 * std::max(1.0, std::abs(best_cost_)); }

  void require(std::uint32_t c) {
    if (refs_[c]++ != 0) return;
    open_pos_[c] = static_cast<std::uint32_t>(open_.size());
    open_.push_back(c);
    open_min_ += min_cost_[c];
    free_negative_ -= std::min(0.0, min_cost_[c]);
  }
  void release(std::uint32_t c) {
    if (--refs_[c] != 0) return;
    remove_open(c);
    open_min_ -= min_cost_[c];
    free_negative_ += std::min(0.0, min_cost_[c]);
  }
  void remove_open(std::uint32_t c) {
    const std::uint32_t pos = open_pos_[c], last = open_.back();
    open_[pos] = last;
    open_pos_[last] = pos;
    open_.pop_back();
    open_pos_[c] = DagProblem::kNone;
  }
  void decide(std::uint32_t c, std::uint32_t n) {
    remove_open(c);
    open_min_ -= min_cost_[c];
    decided_ += p_.cost[n];
    choice_[c] = n;
    for (std::uint32_t k : p_.children(n)) require(k);
  }
  void undo(std::uint32_t c, std::uint32_t n) {
    for (std::uint32_t k : p_.children(n)) release(k);
    choice_[c] = DagProblem::kNone;
    decided_ -= p_.cost[n];
    open_min_ += min_cost_[c];
    open_pos_[c] = static_cast<std::uint32_t>(open_.size());
    open_.push_back(c);
  }

  // Whether class c is reachable from node n's children through decided nodes.
  bool closes_cycle(std::uint32_t n, std::uint32_t c) {
    ++epoch_;
    stack_.assign(p_.children(n).begin(), p_.children(n).end());
    while (!stack_.empty()) {
      const std::uint32_t k = stack_.back();
      stack_.pop_back();
      if (k == c) return true;
      if (seen_[k] == epoch_ || choice_[k] == DagProblem::kNone) continue;
      seen_[k] = epoch_;
      for (std::uint32_t child : p_.children(choice_[k])) stack_.push_back(child);
    }
    return false;
  }

  // Explores the current state; returns the smallest bound of what it left unexplored when the
  // deadline struck (+infinity when it finished).
  double search(std::size_t depth) {
    constexpr double kDone = std::numeric_limits<double>::infinity();
    if ((++visits_ & 1023) == 0 && Clock::now() >= deadline_) aborted_ = true;
    if (aborted_) return bound();
    if (open_.empty()) {
      double total = 0;  // summed afresh: the running sums drift over a long search
      for (std::uint32_t c = 0; c < p_.num_classes(); ++c)
        if (choice_[c] != DagProblem::kNone) total += p_.cost[choice_[c]];
      if (total < best_cost_ - slack()) {
        best_cost_ = total;
        best_ = choice_;
      }
      return kDone;
    }
    // Fail first: the open class with the fewest nodes.
    std::uint32_t c = open_.front();
    for (std::uint32_t k : open_)
      if (p_.nodes(k).size() < p_.nodes(c).size()) c = k;
    auto& candidates = candidates_[depth];
    candidates.clear();
    for (std::uint32_t n : p_.nodes(c)) {
      if (closes_cycle(n, c)) continue;
      double increase = p_.cost[n] - min_cost_[c];
      for (std::uint32_t k : p_.children(n))
        if (refs_[k] == 0) increase += min_cost_[k] - std::min(0.0, min_cost_[k]);
      candidates.emplace_back(increase, n);
    }
    std::sort(candidates.begin(), candidates.end());
    const double base = bound();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto [increase, n] = candidates[i];
      if (base + increase >= best_cost_ - slack()) break;  // sorted: the rest cannot win either
      decide(c, n);
      const double left = search(depth + 1);
      undo(c, n);
      if (aborted_) {
        double unexplored = left;
        if (i + 1 < candidates.size()) unexplored = std::min(unexplored, base + candidates[i + 1].first);
        return unexplored;
      }
    }
    return kDone;
  }

  const DagProblem& p_;
  Clock::time_point deadline_;
  std::vector<std::uint32_t> choice_, refs_;
  std::vector<double> min_cost_;
  std::vector<std::uint32_t> open_, open_pos_;
  double decided_ = 0, open_min_ = 0, free_negative_ = 0;
  std::vector<std::uint32_t> best_;
  double best_cost_ = std::numeric_limits<double>::infinity();
  bool aborted_ = false;
  std::uint64_t visits_ = 0;
  std::vector<std::uint32_t> seen_, stack_;
  std::uint32_t epoch_ = 0;
  std::vector<std::vector<std::pair<double, std::uint32_t>>> candidates_;  // branches, per depth
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_BRANCH_AND_BOUND_H
