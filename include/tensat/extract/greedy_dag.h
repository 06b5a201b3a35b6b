// Greedy DAG extraction: a sharing-aware heuristic for the DAG cost (each class paid once),
// polished by a local search over one-class node swaps.
#ifndef TENSAT_EXTRACT_GREEDY_DAG_H
#define TENSAT_EXTRACT_GREEDY_DAG_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/extract/cost_sets.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/tree.h"

namespace tensat {
inline namespace v0 {

/// Knobs of `extract_greedy_dag`.
struct GreedyDagOptions {
  /// Polish the better of the two starting points by one-class node swaps until no swap lowers
  /// the DAG cost (or `local_search_work` is spent).
  bool local_search = true;
  /// Budget of the local search, in class visits (each visit is a few nanoseconds). The search
  /// stops with the best choice so far when it is spent; the result stays valid.
  std::uint64_t local_search_work = 200'000'000;
  /// Budget of the cost-set greedy, in units of 4 bytes of memory or a few nanoseconds: a trie
  /// node of the class sets visited in a union is one, a node made is 18 (72 bytes; see
  /// `detail::ClassSetForest`). When it is spent the greedy gives up and the local search starts
  /// from the tree-optimal choice alone.
  std::uint64_t cost_set_work = 64'000'000;
  /// Wall-clock budget in seconds (infinity: none). On expiry the greedy and the local search
  /// stop where they are and the best valid choice so far is returned (`ExtractionStop::
  /// TimeLimit`); the tree-optimal start, O(E log E), is always computed. `extract_ilp` passes
  /// what is left of its own limit here.
  double time_limit_seconds = std::numeric_limits<double>::infinity();
};

namespace detail {

/// A change of the DAG cost summed from node costs, with what bounds its rounding error: a sum
/// of k terms is off by at most about k·ε·Σ|term|. A move is taken only if it lowers the cost
/// by more than that (and by more than 1e-9 of the magnitudes: too little to be worth a move).
/// A margin relative to the total would not do: huge costs of opposite signs cancel in the
/// total, not in the rounding, and a move taken on rounding noise can be followed by another
/// on noise, for ever. With this margin every move taken lowers the exact cost, so no state
/// comes back and the search ends.
struct CostChange {
  double value = 0;
  double magnitude = 0;  // Σ |term|
  std::uint64_t terms = 0;

  void add(double cost) {
    value += cost;
    magnitude += std::abs(cost);
    ++terms;
  }
  CostChange& operator+=(const CostChange& o) {
    value += o.value;
    magnitude += o.magnitude;
    terms += o.terms + 1;
    return *this;
  }
  CostChange& operator-=(const CostChange& o) {
    value -= o.value;
    magnitude += o.magnitude;
    terms += o.terms + 1;
    return *this;
  }
  [[nodiscard]] double margin() const {
    return magnitude * (1e-9 + static_cast<double>(terms) * std::numeric_limits<double>::epsilon());
  }
  /// Whether the exact change is certainly negative, and not negligibly so.
  [[nodiscard]] bool lowers() const { return value < -margin(); }
};

/// Local search over one-class swaps. The state is a choice for every class that has a finite
/// term, acyclic over all classes (not only the reachable ones), with reference counts: ref[c]
/// = number of live classes whose chosen node has c as a child, plus one for a root; a class is
/// live (part of the extraction, paid) iff ref[c] > 0. Swapping the node of a live class adds the
/// new node's children (classes going 0 → 1 come alive with their whole chosen subgraph) and
/// removes the old node's (classes going 1 → 0 die likewise), so the cost change of a move is
/// computed in time proportional to the part of the DAG that changes, not to the DAG.
class DagLocalSearch {
 public:
  DagLocalSearch(const ExtractionGraph& g, const DistinctChildren& dc, const ChildUsers& users,
                 std::vector<std::uint32_t> choice)
      : g_(g),
        dc_(dc),
        users_(users),
        choice_(std::move(choice)),
        ref_(g.num_classes(), 0),
        seen_(g.num_classes(), 0),
        offered_(g.num_classes(), 0) {
    for (std::uint32_t root : g_.roots())
      if (ref_[root] == 0) {
        ref_[root] = 1;  // the root's own reference, never removed
        total_ += enliven(root).value;
      }
  }

  [[nodiscard]] double total() const noexcept { return total_; }
  [[nodiscard]] const std::vector<std::uint32_t>& choice() const noexcept { return choice_; }

  /// Descends until no move improves, `work` class visits are spent or `deadline` passes, and
  /// says which (`Finished` at a local optimum). Three kinds of move, each tried when the ones
  /// before are exhausted: a single swap; a compound one, a swap that makes new classes live
  /// (paying for them, so it may cost more than it saves on its own) followed by every
  /// improving swap of a class that has a node using those newly live classes, kept only if the
  /// sum improves (choosing `f(x, S)` over `g(x)` everywhere, where S is expensive but shared);
  /// and a shared one, a dead class brought to life with one of its nodes and offered upward
  /// through chains of dead classes to every live class that could use it (`shared_moves`: an
  /// n-way merged product that n classes reach only through a chain of splits). A move is taken
  /// only if it `lowers` the cost (see `CostChange`).
  ExtractionStop run(std::uint64_t work,
                     GreedyClock::time_point deadline = GreedyClock::time_point::max()) {
    deadline_ = deadline;
    timed_out_ = GreedyClock::now() >= deadline_;
    work_left_ = timed_out_ ? 0 : work;
    for (;;) {
      recount();
      bool improved = false;
      for (std::uint32_t c = 0; c < g_.num_classes() && work_left_ > 0; ++c)
        if (ref_[c] > 0 && improve_class(c)) improved = true;
      if (work_left_ == 0) return stopped();
      if (improved) continue;
      for (std::uint32_t c = 0; c < g_.num_classes() && work_left_ > 0; ++c)
        if (ref_[c] > 0 && compound_move(c)) improved = true;
      if (work_left_ == 0) return stopped();
      if (improved) continue;
      if (!shared_moves()) return work_left_ > 0 ? ExtractionStop::Finished : stopped();
    }
  }

 private:
  // Tries every alternative node of live class c; keeps the best improving acyclic one.
  bool improve_class(std::uint32_t c) {
    const std::uint32_t original = choice_[c];
    std::uint32_t best = original;
    double best_delta = 0;
    for (std::uint32_t m : g_.class_nodes(c)) {
      if (m == original || !dc_.usable[m] || !has_terms(m)) continue;
      const CostChange delta = swap(c, m);
      swap(c, original);
      if (delta.lowers() && delta.value < best_delta && !reaches(m, c)) {
        best_delta = delta.value;
        best = m;
      }
      if (work_left_ == 0) break;
    }
    if (best == original) return false;
    total_ += swap(c, best).value;
    return true;
  }

  // Swaps live class c to m even at a loss, then offers the classes that came alive to the
  // classes that could use them (`adopt`); undoes everything unless the total improves.
  bool compound_move(std::uint32_t c) {
    const std::uint32_t original = choice_[c];
    for (std::uint32_t m : g_.class_nodes(c)) {
      if (m == original || !dc_.usable[m] || !has_terms(m) || reaches(m, c)) continue;
      born_.clear();
      log_.assign(1, {c, original, true});
      recording_ = true;
      CostChange delta = swap(c, m);
      recording_ = false;
      delta += adopt(c, born_, false);
      if (delta.lowers()) {
        total_ += delta.value;
        return true;
      }
      undo_log();
      if (work_left_ == 0) return false;
    }
    return false;
  }

  // Brings dead class b to life with node m and offers it (and the classes under it) to every
  // class that could use it (`adopt`). Returns the change of the DAG cost; keeps the changes
  // only if `keep` and the cost goes down. A product shared by n classes pays off only once
  // most of them take it, and no single class can start that (each alone pays the whole
  // product). Every node of b is a candidate, not only its current choice: a dead class's
  // choice is whatever was cheapest alone, often a term over the very classes that should use
  // b (a concatenation of the parts a split would give back).
  CostChange shared_move(std::uint32_t b, std::uint32_t m, bool keep) {
    const std::uint32_t original = choice_[b];
    choice_[b] = m;
    born_.clear();
    log_.clear();
    ref_[b] = 1;  // held while it is offered
    recording_ = true;
    CostChange delta = enliven(b);
    recording_ = false;
    delta += adopt(b, {b}, true);
    if (--ref_[b] == 0) delta -= kill(b);
    if (keep && delta.lowers()) {
      total_ += delta.value;
      return delta;
    }
    // Undone under the hold again: a logged swap may be of a class that only the hold kept
    // alive, and a swap is undone only on a live class.
    if (ref_[b]++ == 0) enliven(b);
    undo_log();
    if (--ref_[b] == 0) kill(b);
    choice_[b] = original;
    return delta;
  }

  // Evaluates a shared move for every dead class and node, then applies the improving ones,
  // best first, each re-evaluated on the state the earlier ones left (kept only if it still
  // improves). One scan serves many moves: the scan is the expensive part.
  bool shared_moves() {
    struct Candidate {
      double delta;
      std::uint32_t cls, node;
    };
    std::vector<Candidate> candidates;
    for (std::uint32_t b = 0; b < g_.num_classes() && work_left_ > 0; ++b) {
      if (ref_[b] > 0 || choice_[b] == ExtractionGraph::kNone ||
          users_.offsets[b] == users_.offsets[b + 1])
        continue;
      for (std::uint32_t m : g_.class_nodes(b)) {
        if (!dc_.usable[m] || !(g_.node_cost(m) >= kSharedMinShare * total_) || !can_offer(b, m))
          continue;
        // Each evaluation gets its own slice of the budget: offered to many classes, a move can
        // cost far more than it is worth to find out.
        const std::uint64_t left = work_left_;
        work_left_ = std::min<std::uint64_t>(left, kSharedMoveWork);
        const CostChange delta = shared_move(b, m, false);
        work_left_ =
            timed_out_ ? 0 : left - (std::min<std::uint64_t>(left, kSharedMoveWork) - work_left_);
        if (delta.lowers()) candidates.push_back({delta.value, b, m});
        if (work_left_ == 0) break;
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.delta < b.delta; });
    bool improved = false;
    for (const Candidate& c : candidates) {
      if (work_left_ == 0) break;
      if (!can_offer(c.cls, c.node)) continue;
      if (shared_move(c.cls, c.node, true).lowers()) improved = true;
    }
    return improved;
  }

  // Offers the classes of `frontier`, just made live, to their users, level by level: a live
  // class with a node over one of them takes that node if the swap improves; a dead class is
  // re-pointed at such a node if that makes it cheaper to bring to life (free: a dead class is
  // not paid), and is then offered to its own users in turn. The climb through dead classes is
  // what lets a shared product reach the classes that use it through a chain of intermediate
  // classes (an n-way merged matmul, split column block by column block); one level would only
  // reach its direct users. Logs every change; returns the change of the DAG cost.
  CostChange adopt(std::uint32_t c, std::vector<std::uint32_t> frontier, bool shared) {
    CostChange delta;
    ++offer_epoch_;
    std::vector<std::uint32_t> next;
    for (int level = 0; level < kMaxClimb && !frontier.empty() && work_left_ > 0; ++level) {
      next.clear();
      for (std::uint32_t b : frontier)
        for (std::uint32_t k = users_.offsets[b]; k < users_.offsets[b + 1] && work_left_ > 0;
             ++k) {
          const std::uint32_t user = users_.users[k];
          const std::uint32_t p = g_.node_class(user);
          const std::uint32_t before = choice_[p];
          spend(1);
          if (p == c) continue;
          if (ref_[p] > 0) {
            if (user == before || !has_terms(user) || (shared && !small_dead_subgraph(user)))
              continue;
            born_.clear();
            recording_ = true;
            const CostChange step = swap(p, user);
            recording_ = false;
            // The offered classes this swap brings to life are paid by the move as a whole
            // (the parts of a split that the other users take too), not by this swap.
            CostChange own = step;
            if (shared)
              for (std::uint32_t born : born_)
                if (offered_[born] == offer_epoch_) own.add(-g_.node_cost(choice_[born]));
            if (own.lowers() && !reaches(user, p)) {
              delta += step;
              log_.push_back({p, before, true});
            } else {
              swap(p, before);
            }
            continue;
          }
          if (!shared || offered_[p] == offer_epoch_) continue;
          if (user != before) {
            // Re-pointed only at a node all of whose children are live, offered, or leaves (so
            // it costs about its own cost to bring to life), and only if that is cheaper than
            // the current choice (at least its own cost, more with children to bring along).
            if (!has_terms(user) || !ready(user)) continue;
            if (!cheaper(user, node_cost(before)) &&
                !(small_dead_subgraph(before) && cheaper(user, bring_to_life_cost(p))))
              continue;
            if (!can_offer(p, user)) continue;
            choice_[p] = user;
            log_.push_back({p, before, false});
          }
          offered_[p] = offer_epoch_;
          next.push_back(p);
        }
      std::swap(frontier, next);
    }
    return delta;
  }

  // Undoes the changes in `log_`, last first.
  void undo_log() {
    for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
      if (it->live)
        swap(it->cls, it->node);
      else
        choice_[it->cls] = it->node;
    }
  }

  // Whether every child class of node m is live, offered in this `adopt`, or chosen as a leaf.
  [[nodiscard]] bool ready(std::uint32_t m) const {
    for (std::uint32_t k : dc_.of(m))
      if (ref_[k] == 0 && offered_[k] != offer_epoch_ && !dc_.of(choice_[k]).empty()) return false;
    return true;
  }

  // What making dead class p live would cost now (its chosen node and every dead class under it).
  CostChange bring_to_life_cost(std::uint32_t p) {
    ref_[p] = 1;
    const CostChange cost = enliven(p);
    kill(p);
    ref_[p] = 0;
    return cost;
  }

  [[nodiscard]] CostChange node_cost(std::uint32_t m) const {
    CostChange cost;
    cost.add(g_.node_cost(m));
    return cost;
  }
  // Whether node m alone costs certainly less than `than`.
  [[nodiscard]] bool cheaper(std::uint32_t m, const CostChange& than) const {
    CostChange difference = node_cost(m);
    difference -= than;
    return difference.lowers();
  }

  // The DAG cost summed afresh: the running total drifts by the rounding of every move.
  void recount() {
    total_ = 0;
    for (std::uint32_t c = 0; c < g_.num_classes(); ++c)
      if (ref_[c] > 0) total_ += g_.node_cost(choice_[c]);
  }

  [[nodiscard]] ExtractionStop stopped() const {
    return timed_out_ ? ExtractionStop::TimeLimit : ExtractionStop::WorkLimit;
  }

  [[nodiscard]] bool has_terms(std::uint32_t m) const {
    for (std::uint32_t k : dc_.of(m))
      if (choice_[k] == ExtractionGraph::kNone) return false;
    return true;
  }

  // Spends class visits; the clock is read every kClockEvery of them, and the deadline ends the
  // search as a spent budget does.
  void spend(std::uint64_t amount) {
    work_left_ = work_left_ > amount ? work_left_ - amount : 0;
    if ((spent_ += amount) >= next_clock_) read_clock();
  }
  void read_clock() {
    next_clock_ = spent_ + kClockEvery;
    if (GreedyClock::now() >= deadline_) timed_out_ = true;
    if (timed_out_) work_left_ = 0;
  }

  // Sets choice[c] = m for a live class c; returns the change of the DAG cost.
  CostChange swap(std::uint32_t c, std::uint32_t m) {
    const std::uint32_t old = choice_[c];
    choice_[c] = m;
    CostChange delta;
    delta.add(g_.node_cost(m));
    delta.add(-g_.node_cost(old));
    for (std::uint32_t k : dc_.of(m))
      if (ref_[k]++ == 0) delta += enliven(k);
    for (std::uint32_t k : dc_.of(old))
      if (--ref_[k] == 0) delta -= kill(k);
    return delta;
  }

  // Class c just became live (`birth`) or dead: pays for it, or refunds it, and passes the change
  // on to the children of its chosen node whose count crosses zero. Returns the cost paid or
  // refunded.
  CostChange cascade(std::uint32_t c, bool birth) {
    CostChange total;
    stack_.assign(1, c);
    while (!stack_.empty()) {
      const std::uint32_t k = stack_.back();
      stack_.pop_back();
      const std::uint32_t n = choice_[k];
      total.add(g_.node_cost(n));
      if (birth && recording_) born_.push_back(k);
      for (std::uint32_t child : dc_.of(n))
        if (birth ? ref_[child]++ == 0 : --ref_[child] == 0) stack_.push_back(child);
    }
    spend(total.terms);  // a visit per class
    return total;
  }
  CostChange enliven(std::uint32_t c) { return cascade(c, true); }
  CostChange kill(std::uint32_t c) { return cascade(c, false); }

  // Whether class `target` is reachable from node m's children through chosen nodes (the swap
  // to m would close a cycle).
  bool reaches(std::uint32_t m, std::uint32_t target) {
    return walk_under(m, target, ref_[target] == 0, kNoLimit) == Walk::Reaches;
  }

  // Whether dead class b could be brought to life with node m, for a shared move or an `adopt`
  // re-pointing: m has terms, does not reach b through chosen nodes, and brings at most
  // kSharedScope dead classes to life with it.
  bool can_offer(std::uint32_t b, std::uint32_t m) {
    return ref_[b] == 0 && has_terms(m) && walk_under(m, b, true, kSharedScope) == Walk::Clear;
  }

  // Whether at most kSharedScope dead classes lie under node m.
  bool small_dead_subgraph(std::uint32_t m) {
    return walk_under(m, kNoClass, true, kSharedScope) != Walk::TooBig;
  }

  enum class Walk { Reaches, Clear, TooBig };
  // Walks the classes under node m's children through chosen nodes, looking for `target`:
  // TooBig once more than `limit` classes are visited. A live class's chosen subgraph holds only
  // live classes, so a walk looking for a dead class (`dead_only`) need not enter live ones.
  Walk walk_under(std::uint32_t m, std::uint32_t target, bool dead_only, std::uint32_t limit) {
    ++epoch_;
    std::uint32_t visited = 0;
    Walk result = Walk::Clear;
    stack_.assign(dc_.of(m).begin(), dc_.of(m).end());
    while (!stack_.empty()) {
      const std::uint32_t k = stack_.back();
      stack_.pop_back();
      if (k == target) {
        result = Walk::Reaches;
        break;
      }
      if (seen_[k] == epoch_ || (dead_only && ref_[k] > 0)) continue;
      seen_[k] = epoch_;
      if (++visited > limit) {
        result = Walk::TooBig;
        break;
      }
      for (std::uint32_t child : dc_.of(choice_[k])) stack_.push_back(child);
    }
    spend(visited);
    return result;
  }

  const ExtractionGraph& g_;
  const DistinctChildren& dc_;
  const ChildUsers& users_;
  std::vector<std::uint32_t> choice_;
  std::vector<std::uint32_t> ref_;
  std::vector<std::uint32_t> seen_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> stack_;
  double total_ = 0;
  std::uint64_t work_left_ = 0;
  GreedyClock::time_point deadline_ = GreedyClock::time_point::max();
  bool timed_out_ = false;
  std::uint64_t spent_ = 0, next_clock_ = 0;
  static constexpr std::uint64_t kClockEvery =
      16'384;  // class visits between clock reads (~0.1 ms)
  bool recording_ = false;
  static constexpr std::uint32_t kNoClass = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t kNoLimit = std::numeric_limits<std::uint32_t>::max();
  // How many levels of dead classes `adopt` climbs: an n-way merge split back by a chain of
  // column splits needs n - 1.
  static constexpr int kMaxClimb = 64;
  // The most dead classes a shared move brings to life under its node, or under a node a dead
  // class is re-pointed at: bigger subgraphs are left alone (they are seldom worth their cost,
  // and each evaluation would cost as much as they hold).
  static constexpr std::uint32_t kSharedScope = 256;
  // A shared move is tried only on nodes that cost at least 1 % of the current total:
  // a cheap node needs no move of its own (a single swap of a user pays little for it).
  static constexpr double kSharedMinShare = 1e-2;
  // The most class visits one shared move's evaluation may spend.
  static constexpr std::uint64_t kSharedMoveWork = 20'000;
  struct Change {
    std::uint32_t cls, node;  // the class and its previous node
    bool live;  // a swap of a live class (undone by a swap) or a dead class re-pointed
  };
  std::vector<std::uint32_t> born_;  // classes made live by a recorded swap
  std::vector<Change> log_;          // what a compound move changed, to undo
  std::vector<std::uint32_t>
      offered_;  // offer_epoch_ when adopt last re-pointed or offered a class
  std::uint32_t offer_epoch_ = 0;
};

}  // namespace detail

/// A sharing-aware heuristic for the DAG cost. Computes two starting points, the cost-set greedy
/// (see `detail::cost_set_greedy`) and the tree-optimal choice (each wins on some inputs), and
/// polishes the better one with one-class node swaps (`GreedyDagOptions::local_search`), each
/// accepted only if it lowers the DAG cost beyond rounding and closes no cycle; the result is
/// never dearer than either start (the DAG costs compared afresh at the end). Status
/// Feasible: the DAG optimum is NP-hard (use `extract_ilp` for a proof); `stop` says whether
/// the search reached a local optimum or a budget stopped it. Throws `Error` if a root has no
/// finite term or the time limit is negative or NaN. Handles zero and negative costs (a class
/// is paid only if a chosen node uses it).
inline Extraction extract_greedy_dag(const ExtractionGraph& graph,
                                     const GreedyDagOptions& options = {}) {
  using Clock = detail::GreedyClock;
  const auto start = Clock::now();
  if (std::isnan(options.time_limit_seconds) || options.time_limit_seconds < 0)
    throw Error("extract_greedy_dag: the time limit must be a non-negative number of seconds");
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::min(options.time_limit_seconds, 1e9)));
  if (graph.roots().empty()) throw Error("extract_greedy_dag: the e-graph has no root");
  const detail::DistinctChildren dc(graph);
  std::vector<double> best;
  std::vector<std::uint32_t> tree_choice;
  detail::knuth_tree(graph, best, tree_choice);
  for (std::uint32_t root : graph.roots())
    if (tree_choice[root] == ExtractionGraph::kNone)
      throw Error(fmt::format("extract_greedy_dag: root class {} has no finite term", root));
  const detail::ChildUsers users = detail::usable_child_users(graph, dc);
  std::vector<std::uint32_t> greedy_choice =
      detail::cost_set_greedy(graph, dc, users, options.cost_set_work, deadline);
  // Classes the greedy left out keep their tree choice, so every class with a term has one and
  // the combined choice stays acyclic (a greedy node's children are all greedy-finalized).
  bool greedy_complete = true;
  for (std::uint32_t root : graph.roots())
    greedy_complete = greedy_complete && greedy_choice[root] != ExtractionGraph::kNone;
  for (std::size_t c = 0; c < greedy_choice.size(); ++c)
    if (greedy_choice[c] == ExtractionGraph::kNone) greedy_choice[c] = tree_choice[c];
  detail::DagLocalSearch from_tree(graph, dc, users, tree_choice);
  detail::DagLocalSearch from_greedy(graph, dc, users, greedy_choice);
  detail::DagLocalSearch& search =
      greedy_complete && from_greedy.total() <= from_tree.total() ? from_greedy : from_tree;
  Extraction result;
  if (options.local_search)
    result.stop = search.run(options.local_search_work, deadline);
  else if (Clock::now() >= deadline)
    result.stop = ExtractionStop::TimeLimit;  // the greedy was cut
  result.choice = detail::reachable_choice(graph, search.choice());
  result.dag_cost = dag_cost(graph, result.choice);
  // Never worse than a start, by the DAG cost computed afresh: the search's own running total
  // decides its moves, and a fuzzed e-graph once ended above the tree choice it could have
  // kept (docs/fuzzing.md; the drift not found since).
  for (const std::vector<std::uint32_t>* start : {&tree_choice, &greedy_choice}) {
    if (start == &greedy_choice && !greedy_complete) continue;
    std::vector<std::uint32_t> kept = detail::reachable_choice(graph, *start);
    const double cost = dag_cost(graph, kept);
    if (cost < result.dag_cost) {
      result.choice = std::move(kept);
      result.dag_cost = cost;
    }
  }
  result.tree_cost = tree_cost(graph, result.choice);
  result.status = ExtractionStatus::Feasible;
  result.micros =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  return result;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_GREEDY_DAG_H
