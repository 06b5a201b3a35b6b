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
/// solution, or `start` when that is cheaper: another solver's best so far) and prunes every
/// branch whose bound cannot beat it. On the deadline it returns the incumbent with the
/// smallest bound of the unexplored branches as the proven lower bound.
class DagBranchAndBound {
 public:
  using Clock = std::chrono::steady_clock;

  DagBranchAndBound(const DagProblem& problem, Clock::time_point deadline,
                    const DagSolution& start = {})
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
    if (!start.choice.empty() && start.cost < best_cost_) {
      best_ = start.choice;
      best_cost_ = start.cost;
    }
  }

  DagSolution solve() {
    const double unexplored = search();
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
  // Relative tolerance of "cheaper"; none while there is no finite incumbent (inf - inf is NaN).
  [[nodiscard]] double slack() const {
    return std::isfinite(best_cost_) ? 1e-9 * std::max(1.0, std::abs(best_cost_)) : 0.0;
  }

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

  // One level of the depth-first search (kept on an explicit stack: the depth can reach the
  // number of classes, too deep for the call stack on large e-graphs). Its branches are
  // `candidates_[depth]`; `next` is the first one not yet tried; `applied` says whether branch
  // next - 1 is decided at the moment.
  struct Frame {
    std::uint32_t c;
    std::size_t next;
    double base;  // the bound before deciding c
    bool applied;
  };

  // Opens a level for the current state: a leaf (no required class left) updates the incumbent;
  // otherwise the fail-first class and its acyclic branches, cheapest bound first.
  void open_level() {
    if (open_.empty()) {
      double total = 0;  // summed afresh: the running sums drift over a long search
      for (std::uint32_t c = 0; c < p_.num_classes(); ++c)
        if (choice_[c] != DagProblem::kNone) total += p_.cost[choice_[c]];
      if (total < best_cost_ - slack()) {
        best_cost_ = total;
        best_ = choice_;
      }
      return;
    }
    std::uint32_t c = open_.front();
    for (std::uint32_t k : open_)
      if (p_.nodes(k).size() < p_.nodes(c).size()) c = k;
    auto& candidates = candidates_[frames_.size()];
    candidates.clear();
    for (std::uint32_t n : p_.nodes(c)) {
      if (closes_cycle(n, c)) continue;
      double increase = p_.cost[n] - min_cost_[c];
      for (std::uint32_t k : p_.children(n))
        if (refs_[k] == 0) increase += min_cost_[k] - std::min(0.0, min_cost_[k]);
      candidates.emplace_back(increase, n);
    }
    std::sort(candidates.begin(), candidates.end());
    frames_.push_back({c, 0, bound(), false});
  }

  // Runs the search to its end or the deadline; returns the smallest bound of the branches left
  // unexplored (+infinity when it finished).
  double search() {
    open_level();
    while (!frames_.empty()) {
      const std::size_t depth = frames_.size() - 1;
      Frame& frame = frames_.back();
      const auto& candidates = candidates_[depth];
      if (frame.applied) {
        undo(frame.c, candidates[frame.next - 1].second);
        frame.applied = false;
      }
      // A visit can cost O(classes) on a wide problem: the clock is read every 64.
      if ((++visits_ & 63) == 0 && Clock::now() >= deadline_) {
        aborted_ = true;
        break;
      }
      // Sorted by bound: once one cannot beat the incumbent, neither can the rest.
      if (frame.next == candidates.size() ||
          frame.base + candidates[frame.next].first >= best_cost_ - slack()) {
        frames_.pop_back();
        continue;
      }
      decide(frame.c, candidates[frame.next++].second);
      frame.applied = true;
      open_level();  // may push a frame: `frame` is not used after this
    }
    double unexplored = std::numeric_limits<double>::infinity();
    for (std::size_t depth = 0; depth < frames_.size(); ++depth) {
      const Frame& frame = frames_[depth];
      if (frame.next < candidates_[depth].size())
        unexplored = std::min(unexplored, frame.base + candidates_[depth][frame.next].first);
    }
    frames_.clear();
    return unexplored;
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
  std::vector<Frame> frames_;
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_BRANCH_AND_BOUND_H
