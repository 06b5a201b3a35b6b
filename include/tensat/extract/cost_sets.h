// Cost sets for greedy DAG extraction: a class's set is the classes its chosen term uses, each
// once, with the sum of their costs. Kept as flat lists while small, as shared tries once large.
#ifndef TENSAT_EXTRACT_COST_SETS_H
#define TENSAT_EXTRACT_COST_SETS_H

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "tensat/core/span.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/tree.h"

namespace tensat {
inline namespace v0 {
namespace detail {

using GreedyClock = std::chrono::steady_clock;

/// Distinct child classes of every node (CSR), and whether a node may be extracted at all: not
/// subsumed and not its own child (a node that needs its own class can never be in an acyclic
/// extraction).
struct DistinctChildren {
  std::vector<std::uint32_t> offsets, classes;
  std::vector<bool> usable;

  explicit DistinctChildren(const ExtractionGraph& g) : offsets{0}, usable(g.num_nodes(), false) {
    std::vector<std::uint32_t> buf;
    for (std::uint32_t n = 0; n < g.num_nodes(); ++n) {
      buf.assign(g.children(n).begin(), g.children(n).end());
      std::sort(buf.begin(), buf.end());
      buf.erase(std::unique(buf.begin(), buf.end()), buf.end());
      usable[n] = !g.subsumed(n) && !std::binary_search(buf.begin(), buf.end(), g.node_class(n));
      classes.insert(classes.end(), buf.begin(), buf.end());
      offsets.push_back(static_cast<std::uint32_t>(classes.size()));
    }
  }
  [[nodiscard]] Span<const std::uint32_t> of(std::uint32_t n) const {
    return {classes.data() + offsets[n], offsets[n + 1] - offsets[n]};
  }
};

/// Per class, the usable nodes that have it as a child, and each node's count of distinct child
/// classes: the candidates' bookkeeping of the greedy and of the local search, built once.
inline ChildUsers usable_child_users(const ExtractionGraph& g, const DistinctChildren& dc) {
  return ChildUsers(g.num_classes(), g.num_nodes(),
                    [&](std::size_t n, std::vector<std::uint32_t>& out) {
                      const auto n32 = static_cast<std::uint32_t>(n);
                      if (!dc.usable[n32]) return false;
                      out.assign(dc.of(n32).begin(), dc.of(n32).end());
                      return true;
                    });
}

/// Cost sets as flat lists of class ids, merged through epoch stamps: fastest while the sets
/// are small, classes² entries on a deep e-graph. Work: entries merged (4 bytes each at most).
class FlatCostSets {
 public:
  FlatCostSets(const ExtractionGraph& g, const DistinctChildren& dc)
      : g_(g), dc_(dc), sets_(g.num_classes()), stamp_(g.num_classes(), 0) {}
  [[nodiscard]] std::uint64_t work() const noexcept { return work_; }
  /// The DAG total of candidate `n`: its cost plus the union of its children's sets.
  double total(std::uint32_t n, const std::vector<std::uint32_t>& choice) {
    ++epoch_;
    merged_.clear();
    double total = g_.node_cost(n);
    for (std::uint32_t child : dc_.of(n)) {
      work_ += sets_[child].size();
      for (std::uint32_t k : sets_[child])
        if (stamp_[k] != epoch_) {
          stamp_[k] = epoch_;
          merged_.push_back(k);
          total += g_.node_cost(choice[k]);
        }
    }
    return total;
  }
  /// Makes `n` the choice of its class `c`: the class's set is `n`'s union plus `c`.
  void finalize(std::uint32_t n, std::uint32_t c, const std::vector<std::uint32_t>& choice) {
    total(n, choice);
    merged_.push_back(c);
    sets_[c] = merged_;
  }

 private:
  const ExtractionGraph& g_;
  const DistinctChildren& dc_;
  std::vector<std::vector<std::uint32_t>> sets_;
  std::vector<std::uint32_t> stamp_, merged_;
  std::uint32_t epoch_ = 0;
  std::uint64_t work_ = 0;
};

/// Sets of classes with the sum of their costs, as persistent 16-way tries over class ids
/// (4 bits a level) that share structure: a new set copies only the paths it changes, and a
/// union returns an operand unchanged wherever the other holds nothing more. The cost sets of
/// a deep e-graph are its prefixes, which overlap almost entirely: as flat lists they take
/// classes² entries, as tries a union costs about the number of classes in which its operands
/// differ, times the depth. A trie's shape depends only on its contents, so a set's sum (added
/// up the trie in a fixed order) does too.
class ClassSetForest {
 public:
  using Set = std::uint32_t;  ///< 0 is the empty set
  /// Bytes of one trie node, for work budgets that stand for memory.
  static constexpr std::size_t kNodeBytes = sizeof(double) + 16 * sizeof(std::uint32_t);

  explicit ClassSetForest(std::size_t n_classes) : cost_(n_classes, 0.0) {
    std::size_t bits = 1;
    while (bits < 32 && (std::size_t{1} << bits) < n_classes) ++bits;
    levels_ = static_cast<int>((bits + 3) / 4);
    nodes_.push_back(Node{});  // the empty set
  }

  /// The sum of the costs of the classes in `s`.
  [[nodiscard]] double sum(Set s) const noexcept { return nodes_[s].sum; }
  /// Trie nodes made so far (each `kNodeBytes`).
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }

  /// `s` with class `c` of cost `cost` added (`c`'s cost is fixed by its first insertion).
  Set insert(Set s, std::uint32_t c, double cost) {
    cost_[c] = cost;
    return insert_at(s, c, 0);
  }

  /// The union of `a` and `b`; `visits` counts the trie nodes visited.
  Set unite(Set a, Set b, std::uint64_t& visits) { return unite_at(a, b, 0, 0, visits); }

 private:
  struct Node {
    double sum = 0;
    std::array<std::uint32_t, 16> kid{};  // child tries; at the last level, 1 = class present
  };

  [[nodiscard]] unsigned digit(std::uint32_t c, int level) const noexcept {
    return (c >> (4 * (levels_ - 1 - level))) & 15u;
  }

  Set make(const Node& node) {
    nodes_.push_back(node);
    return static_cast<Set>(nodes_.size() - 1);
  }

  Set insert_at(Set s, std::uint32_t c, int level) {
    Node node = nodes_[s];
    const unsigned d = digit(c, level);
    if (level == levels_ - 1) {
      if (node.kid[d] != 0) return s;
      node.kid[d] = 1;
      node.sum = leaf_sum(node, c & ~15u);
    } else {
      const Set kid = insert_at(node.kid[d], c, level + 1);
      if (kid == node.kid[d]) return s;
      node.kid[d] = kid;
      node.sum = inner_sum(node);
    }
    return make(node);
  }

  // `prefix`: the digits above `level`, so a last-level node covers classes prefix·16 + 0..15.
  Set unite_at(Set a, Set b, int level, std::uint32_t prefix, std::uint64_t& visits) {
    if (a == b || b == 0) return a;
    if (a == 0) return b;
    ++visits;
    const Node na = nodes_[a], nb = nodes_[b];  // copies: `make` below may move the nodes
    Node out;
    const bool last = level == levels_ - 1;
    for (unsigned i = 0; i < 16; ++i)
      out.kid[i] = last ? (na.kid[i] | nb.kid[i])
                        : unite_at(na.kid[i], nb.kid[i], level + 1, prefix * 16 + i, visits);
    if (out.kid == na.kid) return a;
    if (out.kid == nb.kid) return b;
    out.sum = last ? leaf_sum(out, prefix * 16) : inner_sum(out);
    return make(out);
  }

  [[nodiscard]] double leaf_sum(const Node& node, std::uint32_t base) const {
    double sum = 0;
    for (unsigned i = 0; i < 16; ++i)
      if (node.kid[i] != 0) sum += cost_[base + i];
    return sum;
  }
  [[nodiscard]] double inner_sum(const Node& node) const {
    double sum = 0;
    for (std::uint32_t kid : node.kid) sum += nodes_[kid].sum;
    return sum;
  }

  std::vector<Node> nodes_;
  std::vector<double> cost_;  // class -> cost, once inserted
  int levels_ = 1;
};

/// Cost sets as `ClassSetForest` tries. Work: trie nodes visited in unions (1 each) and made
/// (`kNodeBytes / 4` each), so a budget bounds memory as it does for `FlatCostSets`.
class TrieCostSets {
 public:
  TrieCostSets(const ExtractionGraph& g, const DistinctChildren& dc)
      : g_(g),
        dc_(dc),
        forest_(g.num_classes()),
        sets_(g.num_classes(), 0),
        unions_(g.num_nodes(), 0) {}
  [[nodiscard]] std::uint64_t work() const noexcept {
    return visits_ + forest_.size() * (ClassSetForest::kNodeBytes / 4);
  }
  double total(std::uint32_t n, const std::vector<std::uint32_t>&) {
    ClassSetForest::Set merged = 0;
    for (std::uint32_t child : dc_.of(n)) merged = forest_.unite(merged, sets_[child], visits_);
    unions_[n] = merged;  // kept for `finalize`
    return g_.node_cost(n) + forest_.sum(merged);
  }
  void finalize(std::uint32_t n, std::uint32_t c, const std::vector<std::uint32_t>&) {
    sets_[c] = forest_.insert(unions_[n], c, g_.node_cost(n));
  }

 private:
  const ExtractionGraph& g_;
  const DistinctChildren& dc_;
  ClassSetForest forest_;
  std::vector<ClassSetForest::Set> sets_;    // of the final classes
  std::vector<ClassSetForest::Set> unions_;  // of a candidate's children's sets
  std::uint64_t visits_ = 0;
};

/// Greedy over cost sets, in Dijkstra order: a node becomes a candidate once all its child
/// classes are final; its DAG total is its own cost plus the costs of the union of its children's
/// class sets (each shared class once); the cheapest candidate finalizes its class, whose set is
/// that union plus itself. With non-negative costs a class's total is at least each child's, so
/// a class is final at its first pop and never revisited (the FIFO variant of extraction-gym
/// re-evaluates long chains over and over). Classes never finalized keep kNone. It stops once
/// `sets.work()` passes `max_work` (returning true) or at `deadline`, leaving the rest kNone.
template <class Sets>
bool cost_set_greedy_with(const ExtractionGraph& g, const DistinctChildren& dc,
                          const ChildUsers& users, std::uint64_t max_work,
                          GreedyClock::time_point deadline, std::vector<std::uint32_t>& choice) {
  const auto n_nodes = static_cast<std::uint32_t>(g.num_nodes());
  const std::size_t n_classes = g.num_classes();
  std::vector<std::uint32_t> remaining = users.remaining;  // counted down as children become final
  choice.assign(n_classes, ExtractionGraph::kNone);
  Sets sets(g, dc);
  using Entry = std::pair<double, std::uint32_t>;  // DAG total, node
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  for (std::uint32_t n = 0; n < n_nodes; ++n)
    if (dc.usable[n] && remaining[n] == 0) queue.emplace(g.node_cost(n), n);
  std::uint64_t pops = 0, next_clock = 0;  // the clock is read every kClockSteps pops + work
  constexpr std::uint64_t kClockSteps = 65'536;
  while (!queue.empty()) {
    if (sets.work() > max_work) return true;
    if (++pops + sets.work() >= next_clock) {
      if (GreedyClock::now() >= deadline) break;
      next_clock = pops + sets.work() + kClockSteps;
    }
    const std::uint32_t n = queue.top().second;
    queue.pop();
    const std::uint32_t c = g.node_class(n);
    if (choice[c] != ExtractionGraph::kNone) continue;
    sets.finalize(n, c, choice);
    choice[c] = n;
    for (std::uint32_t k = users.offsets[c]; k < users.offsets[c + 1]; ++k) {
      const std::uint32_t user = users.users[k];
      if (--remaining[user] == 0) queue.emplace(sets.total(user, choice), user);
    }
  }
  return false;
}

/// The cost-set greedy with flat sets, which are fastest while they stay small; when they
/// outgrow `kFlatWork` entries (a deep e-graph) it starts over with tries, whose unions cost
/// what the sets differ by. Both give the same choice; `max_work` bounds each.
inline std::vector<std::uint32_t> cost_set_greedy(const ExtractionGraph& g,
                                                  const DistinctChildren& dc,
                                                  const ChildUsers& users, std::uint64_t max_work,
                                                  GreedyClock::time_point deadline) {
  constexpr std::uint64_t kFlatWork = 16'000'000;
  std::vector<std::uint32_t> choice;
  if (cost_set_greedy_with<FlatCostSets>(g, dc, users, std::min(max_work, kFlatWork), deadline,
                                         choice))
    cost_set_greedy_with<TrieCostSets>(g, dc, users, max_work, deadline, choice);
  return choice;
}

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_COST_SETS_H
