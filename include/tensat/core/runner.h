// Runner: equality saturation with limits, hooks, a scheduler and a per-iteration report.
#ifndef TENSAT_CORE_RUNNER_H
#define TENSAT_CORE_RUNNER_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/rewrite.h"
#include "tensat/core/scheduler.h"

namespace tensat {
inline namespace v0 {

/// Why a run stopped.
struct StopReason {
  enum class Kind { Saturated, IterationLimit, NodeLimit, TimeLimit, MemoryLimit, Other };
  Kind kind = Kind::Saturated;
  /// IterationLimit: iterations; NodeLimit: hashcons size; MemoryLimit: bytes; TimeLimit:
  /// microseconds elapsed.
  std::size_t value = 0;
  /// Other: the hook's message.
  std::string message;

  static StopReason saturated() { return {Kind::Saturated, 0, {}}; }
  static StopReason other(std::string message) { return {Kind::Other, 0, std::move(message)}; }

  [[nodiscard]] std::string to_string() const {
    switch (kind) {
      case Kind::Saturated:
        return "Saturated";
      case Kind::IterationLimit:
        return fmt::format("IterationLimit({})", value);
      case Kind::NodeLimit:
        return fmt::format("NodeLimit({})", value);
      case Kind::TimeLimit:
        return fmt::format("TimeLimit({:.6f})", double(value) / 1e6);
      case Kind::MemoryLimit:
        return fmt::format("MemoryLimit({})", value);
      case Kind::Other:
        return fmt::format("Other({})", message);
    }
    return "?";
  }
  friend bool operator==(const StopReason& a, const StopReason& b) {
    return a.kind == b.kind && a.value == b.value && a.message == b.message;
  }
};

/// What happened in one iteration (egg's `Iteration`). Times in seconds.
struct Iteration {
  std::size_t egraph_nodes = 0;    ///< total_number_of_nodes() after the rebuild
  std::size_t egraph_classes = 0;  ///< number_of_classes() after the rebuild
  std::size_t memo_size = 0;       ///< total_size() after the rebuild
  std::size_t memory_bytes =
      0;  ///< memory_usage() after the rebuild (0 unless a memory limit is set)
  std::vector<std::pair<std::string, std::size_t>> applied;  ///< rule -> changing applications
  double hook_time = 0, search_time = 0, apply_time = 0, rebuild_time = 0, total_time = 0;
  std::size_t n_rebuilds = 0;  ///< unions done while rebuilding
  std::optional<StopReason> stop_reason;
};

/// A summary of a run: sums over iterations and the final sizes.
struct Report {
  std::size_t iterations = 0;
  StopReason stop_reason;
  std::size_t egraph_nodes = 0, egraph_classes = 0, memo_size = 0, rebuilds = 0;
  double total_time = 0, search_time = 0, apply_time = 0, rebuild_time = 0, hook_time = 0;
  std::map<std::string, std::size_t> applied;  ///< rule -> changing applications in all

  [[nodiscard]] std::string to_string() const {
    std::string out = "Runner report\n=============\n";
    out +=
        fmt::format("  Stop reason: {}\n  Iterations: {}\n", stop_reason.to_string(), iterations);
    out += fmt::format("  Egraph size: {} nodes, {} classes, {} memo\n", egraph_nodes,
                       egraph_classes, memo_size);
    out += fmt::format("  Rebuilds: {}\n  Total time: {:.6f}\n", rebuilds, total_time);
    auto pct = [&](double t) { return total_time > 0 ? 100.0 * t / total_time : 0.0; };
    out += fmt::format("    Search:  ({:.2f}) {:.6f}\n", pct(search_time), search_time);
    out += fmt::format("    Apply:   ({:.2f}) {:.6f}\n", pct(apply_time), apply_time);
    out += fmt::format("    Rebuild: ({:.2f}) {:.6f}\n", pct(rebuild_time), rebuild_time);
    for (const auto& [rule, n] : applied) out += fmt::format("  {}: {}\n", rule, n);
    return out;
  }
};

/// Runs equality saturation (egg's `Runner`).
///
/// Each iteration: check limits, run hooks (then rebuild if a hook changed the e-graph), search
/// every rule (through the scheduler), apply all matches, rebuild, record an `Iteration`. The
/// run stops at saturation (nothing applied, the scheduler agrees, the e-graph's size unchanged
/// from before the hooks to after the rebuild),
/// at a limit, or when a hook returns a message.
/// Limits are also checked after each rule's search and apply (the node limit after every rule;
/// the clock and the memory limit after every 8th rule, or sooner once 256 matches were handled);
/// whatever stops the run, the e-graph is rebuilt, so it is always valid and holds everything
/// found so far.
///
/// Defaults are egg's: 30 iterations, 10,000 nodes, 5 seconds, `BackoffScheduler(1000, 5)`,
/// plus a memory limit (off by default) on `EGraph::memory_usage()`.
template <class L, class A>
class Runner {
 public:
  using Hook = std::function<std::optional<std::string>(Runner&)>;
  using Clock = std::chrono::steady_clock;

  explicit Runner(A analysis = A{})
      : egraph_(std::move(analysis)), scheduler_(std::make_unique<BackoffScheduler<L, A>>()) {}

  Runner& with_iter_limit(std::size_t limit) {
    iter_limit_ = limit;
    return *this;
  }
  /// Stop when the hashcons holds more than `limit` e-nodes.
  Runner& with_node_limit(std::size_t limit) {
    node_limit_ = limit;
    return *this;
  }
  Runner& with_time_limit(std::chrono::duration<double> limit) {
    time_limit_ = limit;
    return *this;
  }
  /// Stop when `EGraph::memory_usage()` exceeds `bytes` (egg has no such limit; egg#171).
  Runner& with_memory_limit(std::size_t bytes) {
    memory_limit_ = bytes;
    return *this;
  }
  /// Searches the rules labelled `label` only in the first `iterations` iterations (TENSAT's
  /// `k_multi`: its multi-pattern rules run in the first one or two iterations only). Later
  /// iterations skip them; saturation is then judged on the other rules.
  Runner& with_label_iteration_limit(std::string label, std::size_t iterations) {
    label_limits_.emplace_back(std::move(label), iterations);
    return *this;
  }
  /// Uses `scheduler` (taken by value): any `Scheduler<L, A>` subclass, or the settings of one
  /// without its language (`SimpleScheduler<>`, `BackoffScheduler<>`: `S::For<L, A>` is made
  /// from them).
  template <class S>
  Runner& with_scheduler(S scheduler) {
    if constexpr (std::is_base_of_v<Scheduler<L, A>, S>) {
      scheduler_ = std::make_unique<S>(std::move(scheduler));
    } else {
      using Made = typename S::template For<L, A>;
      static_assert(std::is_base_of_v<Scheduler<L, A>, Made>,
                    "with_scheduler: S is neither a Scheduler<L, A> nor scheduler settings");
      scheduler_ = std::make_unique<Made>(scheduler);
    }
    return *this;
  }
  /// Adds a hook run at the start of every iteration; returning a message stops the run with
  /// `StopReason::Kind::Other`.
  Runner& with_hook(Hook hook) {
    hooks_.push_back(std::move(hook));
    return *this;
  }
  /// Turns explanations on (egg's `Runner::with_explanations_enabled`); call it before
  /// `with_expr`. See `EGraph::with_explanations_enabled`.
  Runner& with_explanations_enabled() {
    egraph_.with_explanations_enabled();
    return *this;
  }
  /// Why `a` and `b` are equal (`EGraph::explain_equivalence`).
  Explanation<L> explain_equivalence(const RecExpr<L>& a, const RecExpr<L>& b) {
    return egraph_.explain_equivalence(a, b);
  }
  /// Adds `expr` to the e-graph and records its class as a root.
  Runner& with_expr(const RecExpr<L>& expr) {
    roots_.push_back(egraph_.add_expr(expr));
    return *this;
  }
  /// Replaces the e-graph.
  Runner& with_egraph(EGraph<L, A> egraph) {
    egraph_ = std::move(egraph);
    return *this;
  }

  /// Runs `rules` to a stop. A runner runs once; run a fresh one (`with_egraph`) to continue.
  Runner& run(const std::vector<Rewrite<L, A>>& rules) {
    if (stop_reason_) throw Error("Runner::run: this runner has already run");
    start_ = Clock::now();
    egraph_.rebuild();
    // Under a memory limit, full arrays grow by small steps rather than doubling past it.
    const bool bounded = egraph_.bounded_growth();
    if (memory_limit_ != kUnlimited) egraph_.set_bounded_growth(true);
    struct Restore {
      EGraph<L, A>& egraph;
      bool bounded;
      ~Restore() { egraph.set_bounded_growth(bounded); }
    } restore{egraph_, bounded};
    while (true) {
      iterations_.push_back(run_one(rules));
      std::optional<StopReason> stop = iterations_.back().stop_reason;
      if (!stop) stop = check_limits();
      if (stop) {
        stop_reason_ = std::move(stop);
        break;
      }
    }
    return *this;
  }

  [[nodiscard]] EGraph<L, A>& egraph() noexcept { return egraph_; }
  [[nodiscard]] const EGraph<L, A>& egraph() const noexcept { return egraph_; }
  [[nodiscard]] const std::vector<Id>& roots() const noexcept { return roots_; }
  [[nodiscard]] const std::vector<Iteration>& iterations() const noexcept { return iterations_; }
  /// Why the run stopped (empty before `run`).
  [[nodiscard]] const std::optional<StopReason>& stop_reason() const noexcept {
    return stop_reason_;
  }
  [[nodiscard]] Scheduler<L, A>& scheduler() noexcept { return *scheduler_; }
  /// The scheduler as its concrete type `S`, or nullptr if it is another type.
  template <class S>
  [[nodiscard]] S* scheduler_as() noexcept {
    return dynamic_cast<S*>(scheduler_.get());
  }

  [[nodiscard]] Report report() const {
    Report r;
    r.iterations = iterations_.size();
    if (stop_reason_) r.stop_reason = *stop_reason_;
    r.egraph_nodes = egraph_.total_number_of_nodes();
    r.egraph_classes = egraph_.number_of_classes();
    r.memo_size = egraph_.total_size();
    for (const Iteration& it : iterations_) {
      r.rebuilds += it.n_rebuilds;
      r.total_time += it.total_time;
      r.search_time += it.search_time;
      r.apply_time += it.apply_time;
      r.rebuild_time += it.rebuild_time;
      r.hook_time += it.hook_time;
      for (const auto& [rule, n] : it.applied) r.applied[rule] += n;
    }
    return r;
  }

 private:
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  /// The limits checked between iterations (all of them).
  std::optional<StopReason> check_limits() {
    if (auto stop = check_clock()) return stop;
    if (auto stop = check_nodes()) return stop;
    if (memory_limit_ != kUnlimited) {
      const std::size_t bytes = egraph_.memory_usage();
      if (bytes > memory_limit_) return StopReason{StopReason::Kind::MemoryLimit, bytes, {}};
    }
    if (iterations_.size() >= iter_limit_)
      return StopReason{StopReason::Kind::IterationLimit, iterations_.size(), {}};
    return std::nullopt;
  }

  std::optional<StopReason> check_nodes() const {
    if (egraph_.total_size() > node_limit_)
      return StopReason{StopReason::Kind::NodeLimit, egraph_.total_size(), {}};
    return std::nullopt;
  }

  /// Reads the clock (and restarts the count of work done since).
  std::optional<StopReason> check_clock() {
    unclocked_work_ = 0;
    unclocked_rules_ = 0;
    const auto elapsed = Clock::now() - start_;
    if (elapsed > time_limit_) {
      const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
      return StopReason{StopReason::Kind::TimeLimit, static_cast<std::size_t>(micros), {}};
    }
    return std::nullopt;
  }

  /// Whether `work` more matches or applications, after those done since the clock was last
  /// read, call for reading it first: every 8th rule, or every 256 matches or applications
  /// (a clock read per rule would cost the small runs of the math suite several percent).
  [[nodiscard]] bool clock_due(std::size_t work) const noexcept {
    return unclocked_rules_ >= 8 || unclocked_work_ + work >= 256;
  }

  Iteration run_one(const std::vector<Rewrite<L, A>>& rules) {
    Iteration it;
    const auto iteration_start = Clock::now();
    const std::size_t i = iterations_.size();
    std::optional<StopReason> result = check_limits();

    // Saturation needs the e-graph unchanged from before the hooks to after the rebuild (as in
    // egg 0.11): neither hooks nor applications that added nodes without a union count as quiet.
    const std::size_t nodes_before_hooks = egraph_.total_size();
    const std::size_t classes_before_hooks = egraph_.number_of_classes();
    const auto hook_start = Clock::now();
    if (!result)
      for (auto& hook : hooks_)
        if (auto message = hook(*this)) {
          result = StopReason::other(std::move(*message));
          break;
        }
    if (!egraph_.is_clean()) egraph_.rebuild();  // a hook may add or unite; search needs clean
    it.hook_time = seconds_since(hook_start);

    const auto search_start = Clock::now();
    rates_.resize(rules.size());
    std::vector<std::vector<SearchMatches>> matches(rules.size());
    match_bytes_.assign(rules.size(), 0);
    std::size_t held = 0;  // bytes of the match lists held
    if (!result) {
      // Searching does not change the e-graph, so its size is read once.
      const std::size_t graph_bytes = memory_limit_ != kUnlimited ? egraph_.memory_usage() : 0;
      for (std::size_t r = 0; r < rules.size() && !result; ++r) {
        if (held_back(rules[r], i)) continue;
        std::size_t budget = kUnlimited;
        if (memory_limit_ != kUnlimited) {
          const std::size_t used = graph_bytes + held;
          budget = used < memory_limit_ ? (memory_limit_ - used) / kBytesPerMatch : 0;
          if (budget == 0) {
            result = StopReason{StopReason::Kind::MemoryLimit, used, {}};
            break;
          }
        }
        matches[r] = search_within(i, rules[r], budget);
        const std::size_t found = count_substs(matches[r]);
        if (budget != kUnlimited) {
          match_bytes_[r] = bytes_of(matches[r]);
          held += match_bytes_[r];
          if (found >= budget || graph_bytes + held > memory_limit_) {
            result = StopReason{StopReason::Kind::MemoryLimit, graph_bytes + held, {}};
            break;
          }
        }
        ++unclocked_rules_;
        if (clock_due(found))
          result = check_clock();
        else
          unclocked_work_ += found;
      }
    }
    it.search_time = seconds_since(search_start);

    const auto apply_start = Clock::now();
    if (!result) {
      room_ = 0;  // the rebuild since the last iteration changed the e-graph's size
      for (std::size_t r = 0; r < rules.size() && !result; ++r) {
        const std::size_t n = apply_bounded(i, rules[r], rates_[r], matches[r], held, result);
        if (n > 0) add_applied(it.applied, rules[r].name(), n);
        held -= match_bytes_[r];
        std::vector<SearchMatches>().swap(matches[r]);
      }
    }
    it.apply_time = seconds_since(apply_start);

    const auto rebuild_start = Clock::now();
    it.n_rebuilds = egraph_.rebuild();
    it.rebuild_time = seconds_since(rebuild_start);

    const bool unchanged = nodes_before_hooks == egraph_.total_size() &&
                           classes_before_hooks == egraph_.number_of_classes();
    if (!result && it.applied.empty() && scheduler_->can_stop(i) && unchanged)
      result = StopReason::saturated();

    it.egraph_nodes = egraph_.total_number_of_nodes();
    it.egraph_classes = egraph_.number_of_classes();
    it.memo_size = egraph_.total_size();
    if (memory_limit_ != kUnlimited) it.memory_bytes = egraph_.memory_usage();
    it.total_time = seconds_since(iteration_start);
    it.stop_reason = std::move(result);
    return it;
  }

  /// Searches `rule` for at most `budget` matches (the bytes left over `kBytesPerMatch`, a
  /// bound). When that many are found, the bytes they actually take (usually well under the
  /// bound) tell a `budget` that fits the same bytes with a quarter to spare: the search is
  /// redone once with it, so the budget is used rather than stopped at half. Sets `budget` to
  /// the one searched with last.
  std::vector<SearchMatches> search_within(std::size_t i, const Rewrite<L, A>& rule,
                                           std::size_t& budget) {
    scheduler_->set_match_budget(budget);
    std::vector<SearchMatches> found = scheduler_->search_rewrite(i, egraph_, rule);
    const std::size_t n = count_substs(found);
    if (budget != kUnlimited && n >= budget) {
      const double per_match = static_cast<double>(bytes_of(found)) / static_cast<double>(n);
      const double wider = static_cast<double>(budget) * kBytesPerMatch / (1.25 * per_match);
      if (wider > 1.25 * static_cast<double>(budget)) {
        found = {};
        budget = static_cast<std::size_t>(wider);
        scheduler_->set_match_budget(budget);
        found = scheduler_->search_rewrite(i, egraph_, rule);
      }
    }
    scheduler_->set_match_budget(kUnlimited);
    return found;
  }

  /// What one application of a rule was seen to cost at most (per chunk, averaged over it).
  struct ApplyRate {
    double ids = 0;      ///< node ids added
    double seconds = 0;  ///< time taken
    bool known = false;
  };

  /// Applies `matches` of `rule` (through the scheduler) in chunks small enough that no limit
  /// is overshot by much: before each chunk the limits are checked, and the chunk is sized from
  /// the rule's observed cost per application so that it uses at most half the node room, half
  /// the memory room (`EGraph::reserve_within`, the match lists still `held` counted) and
  /// 1/20 of the time limit. A rule's first chunk is a probe of at most `kProbe` applications.
  /// Applies everything in one call when everything fits. Returns the changing applications;
  /// sets `stop` when a limit was hit.
  std::size_t apply_bounded(std::size_t i, const Rewrite<L, A>& rule, ApplyRate& rate,
                            std::vector<SearchMatches>& matches, std::size_t held,
                            std::optional<StopReason>& stop) {
    std::size_t remaining = count_substs(matches);
    if (remaining == 0) return scheduler_->apply_rewrite(i, egraph_, rule, matches);
    ++unclocked_rules_;
    std::size_t applied = 0;
    std::size_t at = 0, offset = 0;  // next match: matches[at].substs[offset]
    while (remaining > 0) {
      if ((stop = check_nodes())) break;
      // The applications that fit half of `room`, each costing `cost`.
      auto fit = [&](double room, double cost) {
        const double n = room / (2 * cost);
        if (!(n >= 1)) return std::size_t{1};  // also a room gone negative (time)
        return n >= static_cast<double>(remaining) ? remaining : static_cast<std::size_t>(n);
      };
      const double per_app = std::max(rate.ids, 1.0);
      std::size_t k = fit(static_cast<double>(node_limit_ - egraph_.total_size()) + 1, per_app);
      if (memory_limit_ != kUnlimited) {
        const std::size_t room = memory_room(held);
        if (room == 0) {
          stop = StopReason{StopReason::Kind::MemoryLimit, egraph_.memory_usage() + held, {}};
          break;
        }
        k = std::min(k, fit(static_cast<double>(room), per_app));
      }
      if (!rate.known) k = std::min(k, kProbe);
      // Large or slow chunks, and a rule's first chunk when more follow, are timed (and sized
      // by the time left); small quick ones share clock reads.
      const bool clocked = clock_due(k) || (rate.seconds == 0 && k < remaining) ||
                           rate.seconds * static_cast<double>(k) > 1e-3;
      Clock::time_point chunk_start{};
      if (clocked) {
        if ((stop = check_clock())) break;
        if (rate.seconds > 0) {
          const double left = time_limit_.count() - seconds_since(start_);
          k = std::min(k, fit(std::min(left, 0.1 * time_limit_.count()), rate.seconds));
        }
        chunk_start = Clock::now();
      }

      const std::size_t ids_before = egraph_.number_of_node_ids();
      if (k == remaining && at == 0 && offset == 0) {
        applied += scheduler_->apply_rewrite(i, egraph_, rule, matches);
      } else {
        const std::vector<SearchMatches> chunk = take(matches, at, offset, k);
        applied += scheduler_->apply_rewrite(i, egraph_, rule, chunk);
      }
      remaining -= k;
      const double n = static_cast<double>(k);
      rate.ids =
          std::max(rate.ids, static_cast<double>(egraph_.number_of_node_ids() - ids_before) / n);
      rate.known = true;
      if (clocked)
        rate.seconds = std::max(rate.seconds, seconds_since(chunk_start) / n);
      else
        unclocked_work_ += k;
    }
    return applied;
  }

  /// New node ids that fit the memory limit, `held` bytes of match lists counted. Computed by
  /// `EGraph::reserve_within` (O(classes)) and reused until half of it is used up.
  std::size_t memory_room(std::size_t held) {
    const std::size_t ids = egraph_.number_of_node_ids();
    const std::size_t used = ids - room_ids_;
    if (room_ == 0 || held > room_held_ || used * 2 > room_) {
      room_ = memory_limit_ > held ? egraph_.reserve_within(memory_limit_ - held) : 0;
      room_ids_ = ids;
      room_held_ = held;
      return room_;
    }
    return room_ - used;
  }

  /// Moves the next `k` substitutions of `matches` (from `matches[at].substs[offset]`) into a
  /// list of their own, copying only where a class's substitutions are split.
  static std::vector<SearchMatches> take(std::vector<SearchMatches>& matches, std::size_t& at,
                                         std::size_t& offset, std::size_t k) {
    std::vector<SearchMatches> chunk;
    while (k > 0 && at < matches.size()) {
      SearchMatches& m = matches[at];
      const std::size_t available = m.substs.size() - offset;
      if (offset == 0 && available <= k) {
        chunk.push_back(std::move(m));
      } else {
        const std::size_t n = std::min(available, k);
        const auto first = m.substs.begin() + static_cast<std::ptrdiff_t>(offset);
        chunk.push_back(SearchMatches{
            m.eclass, std::vector<Subst>(first, first + static_cast<std::ptrdiff_t>(n))});
        offset += n;
        if (offset < m.substs.size()) return chunk;  // k is used up inside this class
      }
      k -= std::min(available, k);
      ++at;
      offset = 0;
    }
    return chunk;
  }

  static std::size_t count_substs(const std::vector<SearchMatches>& matches) {
    std::size_t n = 0;
    for (const auto& m : matches) n += m.substs.size();
    return n;
  }
  static std::size_t bytes_of(const std::vector<SearchMatches>& matches) {
    // Heap blocks as malloc takes them, as the e-graph counts its own.
    std::size_t bytes = detail::heap_array_bytes(matches.capacity(), sizeof(SearchMatches));
    for (const auto& m : matches)
      bytes += detail::heap_array_bytes(m.substs.capacity(), sizeof(Subst));
    return bytes;
  }

  /// Whether a label iteration limit keeps `rule` out of iteration `i`.
  bool held_back(const Rewrite<L, A>& rule, std::size_t i) const {
    for (const auto& [label, limit] : label_limits_)
      if (i >= limit && rule.has_label(label)) return true;
    return false;
  }

  static void add_applied(std::vector<std::pair<std::string, std::size_t>>& applied,
                          const std::string& name, std::size_t n) {
    for (auto& [rule, count] : applied)
      if (rule == name) {
        count += n;
        return;
      }
    applied.emplace_back(name, n);
  }

  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();
  /// Bytes a held substitution may take: its record and its class's, each at most doubled by
  /// vector growth.
  static constexpr std::size_t kBytesPerMatch = 2 * (sizeof(Subst) + sizeof(SearchMatches));
  /// Applications in a rule's first chunk, before its cost per application is known.
  static constexpr std::size_t kProbe = 64;

  EGraph<L, A> egraph_;
  std::unique_ptr<Scheduler<L, A>> scheduler_;
  std::vector<Hook> hooks_;
  std::vector<Id> roots_;
  std::vector<std::pair<std::string, std::size_t>> label_limits_;
  std::vector<Iteration> iterations_;
  std::optional<StopReason> stop_reason_;
  std::size_t iter_limit_ = 30;
  std::size_t node_limit_ = 10'000;
  std::chrono::duration<double> time_limit_{5.0};
  std::size_t memory_limit_ = kUnlimited;
  Clock::time_point start_{};
  std::vector<ApplyRate> rates_;          // by rule index
  std::vector<std::size_t> match_bytes_;  // by rule index: bytes of its held match list
  std::size_t unclocked_work_ = 0, unclocked_rules_ = 0;  // since the clock was last read
  std::size_t room_ = 0, room_ids_ = 0, room_held_ = 0;   // memory_room's cache
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_RUNNER_H
