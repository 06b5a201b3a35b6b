// Runner: equality saturation with limits, hooks, a scheduler and a per-iteration report.
#ifndef TENSAT_CORE_RUNNER_H
#define TENSAT_CORE_RUNNER_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/rewrite.h"
#include "tensat/core/scheduler.h"
#include "tensat/detail/thread_pool.h"

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
  /// Searches on `threads` threads (the calling one included; 0 means one per hardware
  /// thread) in the iterations that start with at least `min_nodes` e-nodes (below, waking the
  /// threads costs more than it saves). Each such iteration the scheduler plans every rule, the
  /// rules' searches run on the threads (a rule with many candidate classes split in ranges),
  /// and the runner then takes their matches, applies and rebuilds in rule order on its own
  /// thread, so the e-graph, the report's counts and any extraction are the same for every
  /// thread count. Searchers must only read the e-graph (the library's all do); a scheduler
  /// that does not search in steps (`Scheduler::searches_in_steps`) is searched one rule at a
  /// time. Default 1: no threads are started. See docs/threading.md.
  Runner& with_threads(std::size_t threads, std::size_t min_nodes = 1024) {
    threads_ = threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads;
    parallel_min_nodes_ = min_nodes;
    return *this;
  }
  [[nodiscard]] std::size_t threads() const noexcept { return threads_; }

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
    std::unique_ptr<detail::ThreadPool> pool;
    if (threads_ > 1 && scheduler_->searches_in_steps())
      pool = std::make_unique<detail::ThreadPool>(threads_);
    pool_ = pool.get();
    struct Release {
      detail::ThreadPool*& pool;
      ~Release() { pool = nullptr; }
    } release{pool_};
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
      std::vector<Ahead> ahead;
      if (pool_) ahead = search_ahead(i, rules, graph_bytes);
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
        if (ahead.empty() || ahead[r].state == Ahead::Left) {
          matches[r] = search_within(i, rules[r], budget);
        } else if (ahead[r].state == Ahead::Late) {
          result = check_clock();  // the time limit passed before the search started
          if (result) break;
          matches[r] = search_within(i, rules[r], budget);
        } else if (ahead[r].state == Ahead::Failed) {
          std::rethrow_exception(ahead[r].error);
        } else if (ahead[r].state == Ahead::Skipped) {
          matches[r] = {};
        } else if (ahead[r].same_as_within(budget)) {
          matches[r] = scheduler_->finish_search(i, rules[r], std::move(ahead[r].matches));
        } else {
          std::vector<SearchMatches>().swap(ahead[r].matches);
          matches[r] = search_within(i, rules[r], budget);
        }
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

  /// A rule's search done on the pool before the runner takes the matches in rule order.
  struct Ahead {
    enum State { Left, Late, Skipped, Found, Failed };
    /// Left: to search in order; Late: the time limit had passed; Skipped: not planned;
    /// Failed: the searcher threw `error`.
    State state = Left;
    std::vector<SearchMatches> matches;
    std::size_t planned = kUnlimited;  ///< the scheduler's limit
    std::size_t limit = kUnlimited;    ///< the limit searched with (at most `planned`)
    std::exception_ptr error;

    /// Whether `matches` are what `search_within(budget)` finds: fewer than `budget` (it would
    /// not search again), and either all there are under the plan, or searched with the same
    /// limit.
    [[nodiscard]] bool same_as_within(std::size_t budget) const {
      const std::size_t n = count_substs(matches);
      if (budget == kUnlimited) return limit == planned;
      return n < budget && (n < limit || limit == std::min(planned, budget));
    }
  };

  /// One task of a parallel search: a rule's whole search, or one range of its candidate classes.
  struct Piece {
    std::size_t rule = 0;
    bool whole = true;
    Span<const Id> classes;
    std::vector<SearchMatches> found;
    bool late = false;
    std::exception_ptr error;
    double seconds = 0;
  };

  /// Plans every rule that runs in iteration `i` and searches the planned ones on the pool,
  /// longest (by their last search) first; a rule with many candidate classes
  /// (`Searcher::candidate_classes`) is split into ranges searched as tasks of their own, whose
  /// matches are joined in order and cut at the rule's limit (a range is skipped once the ranges
  /// before it reached the limit). A rule is left to the ordered pass when its name repeats an
  /// earlier rule's (the scheduler's plan for it may depend on the earlier one's outcome).
  /// Under a memory limit the searches share the room for matches evenly; the ordered pass
  /// redoes, in order, those that reach their share or their ordered budget. Returns nothing
  /// (all to the ordered pass) on an e-graph too small for threads to pay.
  std::vector<Ahead> search_ahead(std::size_t i, const std::vector<Rewrite<L, A>>& rules,
                                  std::size_t graph_bytes) {
    if (egraph_.total_size() < parallel_min_nodes_) return {};
    std::size_t most = kUnlimited;
    if (memory_limit_ != kUnlimited)
      most = graph_bytes < memory_limit_ ? (memory_limit_ - graph_bytes) / kBytesPerMatch : 0;
    if (most == 0) return {};  // the ordered pass stops at once
    std::vector<Ahead> ahead(rules.size());
    std::vector<SearchPlan> plans(rules.size());
    std::vector<std::size_t> order;
    std::vector<const std::string*> names;
    search_seconds_.resize(rules.size(), 0.0);
    for (std::size_t r = 0; r < rules.size(); ++r) {
      if (held_back(rules[r], i)) continue;
      const std::string& name = rules[r].name();
      const bool repeated =
          std::any_of(names.begin(), names.end(), [&](const std::string* n) { return *n == name; });
      names.push_back(&name);
      if (repeated) continue;
      plans[r] = scheduler_->plan_search(i, rules[r]);
      if (!plans[r].search) {
        ahead[r].state = Ahead::Skipped;
        continue;
      }
      order.push_back(r);
    }
    // Lists found at once share the room one list would have had in order.
    const std::size_t share = order.empty() ? most : std::max<std::size_t>(1, most / order.size());
    for (std::size_t r : order) {
      ahead[r].planned = plans[r].limit;
      ahead[r].limit = most == kUnlimited ? plans[r].limit : std::min(plans[r].limit, share);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return search_seconds_[a] > search_seconds_[b];
    });

    // The tasks: each rule's pieces are consecutive, in class order. Only a rule that would
    // keep one thread busy while the others run out of rules is split (more than 1/(2 x
    // threads) of the last search, or of the candidate classes the first time), and only when
    // it is not expected to reach its limit (each range searches up to the whole limit).
    const std::size_t most_pieces = 4 * pool_->size();
    search_found_.resize(rules.size(), 0);
    std::vector<std::optional<Span<const Id>>> candidates(rules.size());
    double total_seconds = 0;
    std::size_t total_candidates = 0;
    for (std::size_t r : order) {
      candidates[r] = rules[r].searcher().candidate_classes(egraph_);
      total_seconds += search_seconds_[r];
      total_candidates += candidates[r] ? candidates[r]->size() : 0;
    }
    std::vector<Piece> pieces;
    std::vector<std::size_t> first_piece(rules.size(), 0);
    for (std::size_t r : order) {
      first_piece[r] = pieces.size();
      const std::size_t n = candidates[r] ? candidates[r]->size() : 0;
      const double share = total_seconds > 0 ? search_seconds_[r] / total_seconds
                           : total_candidates > 0
                               ? static_cast<double>(n) / static_cast<double>(total_candidates)
                               : 0.0;
      const bool dominant = share * 2.0 * static_cast<double>(pool_->size()) > 1.0;
      const bool short_of_limit =
          ahead[r].limit == kUnlimited || search_found_[r] <= ahead[r].limit / 4;
      const std::size_t parts =
          dominant && short_of_limit ? std::min(most_pieces, n / kPieceClasses) : 1;
      if (parts < 2) {
        pieces.push_back(Piece{r, true, {}, {}, false, nullptr, 0});
        continue;
      }
      for (std::size_t p = 0; p < parts; ++p) {
        const std::size_t begin = n * p / parts, end = n * (p + 1) / parts;
        pieces.push_back(
            Piece{r, false, {candidates[r]->data() + begin, end - begin}, {}, false, nullptr, 0});
      }
    }
    constexpr std::size_t kUnknown = kUnlimited;
    std::unique_ptr<std::atomic<std::size_t>[]> found(new std::atomic<std::size_t>[pieces.size()]);
    for (std::size_t k = 0; k < pieces.size(); ++k) found[k].store(kUnknown);

    const std::function<void(std::size_t)> task = [&](std::size_t k) {
      Piece& piece = pieces[k];
      const Ahead& rule = ahead[piece.rule];
      const auto task_start = Clock::now();
      if (task_start - start_ > time_limit_) {
        piece.late = true;
        return;
      }
      try {
        if (piece.whole) {
          piece.found = rules[piece.rule].search_with_limit(egraph_, rule.limit);
        } else {
          std::size_t before = 0;  // matches known in the ranges before this one
          for (std::size_t j = first_piece[piece.rule]; j < k; ++j) {
            const std::size_t n = found[j].load(std::memory_order_acquire);
            if (n != kUnknown) before += n;
          }
          if (before >= rule.limit) {
            found[k].store(0, std::memory_order_release);  // the join stops before this range
            return;
          }
          // The join takes at most limit - before of this range's matches.
          piece.found = rules[piece.rule].searcher().search_classes_with_limit(
              egraph_, piece.classes, rule.limit - before);
        }
      } catch (...) {
        piece.error = std::current_exception();
      }
      found[k].store(count_substs(piece.found), std::memory_order_release);
      piece.seconds = seconds_since(task_start);
    };
    pool_->run(pieces.size(), task);

    // Join each rule's pieces, in class order, cut at the rule's limit.
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      Piece& piece = pieces[k];
      Ahead& rule = ahead[piece.rule];
      if (k == first_piece[piece.rule]) {
        rule.state = Ahead::Found;
        search_seconds_[piece.rule] = 0;
      }
      search_seconds_[piece.rule] += piece.seconds;
      if (rule.state != Ahead::Found) continue;  // late or failed already
      if (piece.error) {
        rule.state = Ahead::Failed;
        rule.error = piece.error;
        continue;
      }
      if (piece.late) {
        rule.state = Ahead::Late;
        continue;
      }
      if (piece.whole) {
        rule.matches = std::move(piece.found);
        continue;
      }
      std::size_t room = rule.limit - count_substs(rule.matches);
      for (SearchMatches& m : piece.found) {
        if (room == 0) break;
        if (m.substs.size() <= room) {
          room -= m.substs.size();
          rule.matches.push_back(std::move(m));
          continue;
        }
        // Cut inside a class: rebuilt element by element, so that the list and its capacity
        // are those of a search stopped there.
        std::vector<Subst> first;
        for (std::size_t s = 0; s < room; ++s) first.push_back(std::move(m.substs[s]));
        rule.matches.push_back(SearchMatches{m.eclass, std::move(first)});
        room = 0;
      }
    }
    for (std::size_t r : order)
      if (ahead[r].state == Ahead::Found) search_found_[r] = count_substs(ahead[r].matches);
    return ahead;
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
  /// A rule's search is split into ranges of at least this many candidate classes.
  static constexpr std::size_t kPieceClasses = 128;

  EGraph<L, A> egraph_;
  std::unique_ptr<Scheduler<L, A>> scheduler_;
  std::vector<Hook> hooks_;
  std::vector<Id> roots_;
  std::vector<std::pair<std::string, std::size_t>> label_limits_;
  std::vector<Iteration> iterations_;
  std::optional<StopReason> stop_reason_;
  std::size_t threads_ = 1;
  std::size_t parallel_min_nodes_ = 1024;
  detail::ThreadPool* pool_ = nullptr;     // during run() with more than one thread
  std::vector<double> search_seconds_;     // by rule index: its last search on the pool
  std::vector<std::size_t> search_found_;  // by rule index: the matches it found then
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
