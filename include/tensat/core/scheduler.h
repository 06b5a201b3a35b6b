// Schedulers: which rules the runner searches each iteration (egg's RewriteScheduler).
#ifndef TENSAT_CORE_SCHEDULER_H
#define TENSAT_CORE_SCHEDULER_H

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/rewrite.h"

namespace tensat {
inline namespace v0 {

/// A scheduler's decision for one rule in one iteration (`Scheduler::plan_search`).
struct SearchPlan {
  bool search = true;  ///< false: the rule is not searched (and applies nothing)
  std::size_t limit = std::numeric_limits<std::size_t>::max();  ///< most substitutions wanted
};

/// Decides, per iteration, how each rule is searched and applied, and whether the runner may
/// stop when nothing changed. The default searches and applies everything.
template <class L, class A>
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  /// May the runner report saturation at `iteration`? Return false to get another iteration
  /// (a scheduler that held rules back must let them run before the e-graph counts as saturated).
  virtual bool can_stop(std::size_t /*iteration*/) { return true; }
  /// The matches of `rule` this iteration, at most `match_budget()` substitutions. The default
  /// is `plan_search`, the search, then `finish_search`.
  virtual std::vector<SearchMatches> search_rewrite(std::size_t iteration,
                                                    const EGraph<L, A>& egraph,
                                                    const Rewrite<L, A>& rule) {
    const SearchPlan plan = plan_search(iteration, rule);
    if (!plan.search) return {};
    return finish_search(iteration, rule,
                         rule.search_with_limit(egraph, std::min(plan.limit, match_budget_)));
  }

  /// Whether to search `rule` this iteration, and for at most how many substitutions. Only
  /// reads the scheduler's state: the runner may ask again before `finish_search`.
  virtual SearchPlan plan_search(std::size_t /*iteration*/, const Rewrite<L, A>& /*rule*/) {
    return {};
  }
  /// What the runner applies of the matches a planned search found (the scheduler records them).
  virtual std::vector<SearchMatches> finish_search(std::size_t /*iteration*/,
                                                   const Rewrite<L, A>& /*rule*/,
                                                   std::vector<SearchMatches> matches) {
    return matches;
  }
  /// Whether a runner with several threads (`Runner::with_threads`) may search in three steps:
  /// `plan_search` for every rule in order, the searches on its threads, then `finish_search` in
  /// rule order. True for the schedulers here, whose `search_rewrite` is exactly those steps; a
  /// subclass that overrides `search_rewrite` keeps the default, false, and is searched one rule
  /// at a time on the runner's thread.
  [[nodiscard]] virtual bool searches_in_steps() const { return false; }
  /// Applies `matches`; returns how many applications changed the e-graph.
  virtual std::size_t apply_rewrite(std::size_t /*iteration*/, EGraph<L, A>& egraph,
                                    const Rewrite<L, A>& rule,
                                    const std::vector<SearchMatches>& matches) {
    return rule.apply(egraph, matches).size();
  }

  /// The most substitutions the runner can hold for the search it is about to ask for (set
  /// from its memory limit, unlimited otherwise). A `search_rewrite` override should search
  /// with `rule.search_with_limit(egraph, match_budget())`; the runner stops with
  /// `MemoryLimit` when a search returns that many.
  [[nodiscard]] std::size_t match_budget() const noexcept { return match_budget_; }
  void set_match_budget(std::size_t budget) noexcept { match_budget_ = budget; }

 private:
  std::size_t match_budget_ = std::numeric_limits<std::size_t>::max();
};

/// `SimpleScheduler<>` and `BackoffScheduler<>`: a scheduler's settings without its language
/// and analysis, which `Runner::with_scheduler` completes with the runner's own
/// (`runner.with_scheduler(BackoffScheduler<>().with_ban_length(3))`), so a caller need not spell
/// `BackoffScheduler<MyLanguage, MyAnalysis>`. `For<L, A>` names the scheduler they make.
template <>
class SimpleScheduler<void, NoAnalysis> {
 public:
  template <class L, class A>
  using For = SimpleScheduler<L, A>;
};

template <>
class BackoffScheduler<void, NoAnalysis> {
 public:
  /// egg's defaults: match limit 1,000 and ban length 5.
  explicit BackoffScheduler(std::size_t match_limit = 1000, std::size_t ban_length = 5)
      : match_limit_(match_limit), ban_length_(ban_length) {}
  BackoffScheduler& with_initial_match_limit(std::size_t limit) {
    steps_.push_back({std::string(), Setting::InitialMatchLimit, limit});
    return *this;
  }
  BackoffScheduler& with_ban_length(std::size_t length) {
    steps_.push_back({std::string(), Setting::DefaultBanLength, length});
    return *this;
  }
  BackoffScheduler& do_not_ban(const std::string& name) {
    steps_.push_back({name, Setting::NeverBan, 0});
    return *this;
  }
  BackoffScheduler& rule_match_limit(const std::string& name, std::size_t limit) {
    steps_.push_back({name, Setting::MatchLimit, limit});
    return *this;
  }
  BackoffScheduler& rule_ban_length(const std::string& name, std::size_t length) {
    steps_.push_back({name, Setting::BanLength, length});
    return *this;
  }

  template <class L, class A>
  using For = BackoffScheduler<L, A>;

 private:
  template <class L, class A>
  friend class BackoffScheduler;
  enum class Setting { InitialMatchLimit, DefaultBanLength, NeverBan, MatchLimit, BanLength };
  struct Step {
    std::string rule;  // empty for the defaults' setters
    Setting setting;
    std::size_t value;
  };
  std::size_t match_limit_;
  std::size_t ban_length_;
  std::vector<Step> steps_;  // every setting, in the order given
};

/// Searches every rule fully every iteration (egg's `SimpleScheduler`).
template <class L, class A>
class SimpleScheduler final : public Scheduler<L, A> {
 public:
  SimpleScheduler() = default;
  explicit SimpleScheduler(const SimpleScheduler<>& /*settings*/) {}
  [[nodiscard]] bool searches_in_steps() const override { return true; }
};

/// egg's `BackoffScheduler`: a rule whose matches exceed its limit is banned for a while, and
/// both its limit and its ban length double each time. Keeps explosive rules (associativity,
/// commutativity) from drowning the others.
///
/// Per rule: threshold = match_limit << times_banned; the search stops at threshold + 1 matches;
/// over the threshold the rule is banned for ban_length << times_banned iterations and applies
/// nothing. `can_stop` refuses while any rule is banned and fast-forwards the bans so that the
/// earliest-banned rule runs next iteration (a banned rule is never silently skipped at
/// saturation).
template <class L, class A>
class BackoffScheduler final : public Scheduler<L, A> {
 public:
  /// egg's defaults: match limit 1,000 and ban length 5.
  explicit BackoffScheduler(std::size_t match_limit = 1000, std::size_t ban_length = 5)
      : default_match_limit_(match_limit), default_ban_length_(ban_length) {}
  /// The scheduler `settings` describe (see `BackoffScheduler<>`).
  explicit BackoffScheduler(const BackoffScheduler<>& settings)
      : default_match_limit_(settings.match_limit_), default_ban_length_(settings.ban_length_) {
    // Replayed in order, so that the scheduler is the one the same calls on it would make (a
    // rule's limits are fixed from the defaults when the rule is first configured).
    for (const auto& r : settings.steps_) {
      using S = typename std::decay_t<decltype(settings)>::Setting;
      if (r.setting == S::InitialMatchLimit) with_initial_match_limit(r.value);
      if (r.setting == S::DefaultBanLength) with_ban_length(r.value);
      if (r.setting == S::NeverBan) do_not_ban(r.rule);
      if (r.setting == S::MatchLimit) rule_match_limit(r.rule, r.value);
      if (r.setting == S::BanLength) rule_ban_length(r.rule, r.value);
    }
  }

  BackoffScheduler& with_initial_match_limit(std::size_t limit) {
    default_match_limit_ = limit;
    return *this;
  }
  BackoffScheduler& with_ban_length(std::size_t length) {
    default_ban_length_ = length;
    return *this;
  }
  /// Never ban rule `name`.
  BackoffScheduler& do_not_ban(const std::string& name) {
    stats(name).match_limit = kNeverBan;
    return *this;
  }
  BackoffScheduler& rule_match_limit(const std::string& name, std::size_t limit) {
    stats(name).match_limit = limit;
    return *this;
  }
  BackoffScheduler& rule_ban_length(const std::string& name, std::size_t length) {
    stats(name).ban_length = length;
    return *this;
  }

  bool can_stop(std::size_t iteration) override {
    std::size_t earliest = std::numeric_limits<std::size_t>::max();
    for (auto& [name, s] : stats_)
      if (s.banned_until > iteration) earliest = std::min(earliest, s.banned_until);
    if (earliest == std::numeric_limits<std::size_t>::max()) return true;
    const std::size_t delta = earliest - iteration;
    for (auto& [name, s] : stats_)
      if (s.banned_until > iteration) s.banned_until -= delta;
    return false;
  }

  [[nodiscard]] bool searches_in_steps() const override { return true; }

  SearchPlan plan_search(std::size_t iteration, const Rewrite<L, A>& rule) override {
    const RuleStats* s = find_stats(rule.name());
    const std::size_t limit = s ? s->match_limit : default_match_limit_;
    if (s && iteration < s->banned_until) return {false, 0};
    const std::size_t threshold = shifted(limit, s ? s->times_banned : 0);
    return {true, threshold == kNeverBan ? threshold : threshold + 1};
  }

  std::vector<SearchMatches> finish_search(std::size_t iteration, const Rewrite<L, A>& rule,
                                           std::vector<SearchMatches> matches) override {
    RuleStats& s = stats(rule.name());
    const std::size_t threshold = shifted(s.match_limit, s.times_banned);
    std::size_t total = 0;
    for (const auto& m : matches) total += m.substs.size();
    if (total > threshold) {
      s.banned_until = iteration + shifted(s.ban_length, s.times_banned);
      ++s.times_banned;
      return {};
    }
    ++s.times_applied;
    return matches;
  }

  /// How often `name` has been banned so far.
  [[nodiscard]] std::size_t times_banned(const std::string& name) const {
    auto it = stats_.find(name);
    return it == stats_.end() ? 0 : it->second.times_banned;
  }

 private:
  static constexpr std::size_t kNeverBan = std::numeric_limits<std::size_t>::max() / 2;
  struct RuleStats {
    std::size_t times_applied = 0;
    std::size_t banned_until = 0;
    std::size_t times_banned = 0;
    std::size_t match_limit;
    std::size_t ban_length;
  };

  /// value << shift, saturating at kNeverBan.
  static std::size_t shifted(std::size_t value, std::size_t shift) {
    if (value >= kNeverBan) return kNeverBan;
    for (std::size_t i = 0; i < shift; ++i) {
      value <<= 1;
      if (value >= kNeverBan) return kNeverBan;
    }
    return value;
  }

  const RuleStats* find_stats(const std::string& name) const {
    auto it = stats_.find(name);
    return it == stats_.end() ? nullptr : &it->second;
  }

  RuleStats& stats(const std::string& name) {
    auto it = stats_.find(name);
    if (it == stats_.end())
      it =
          stats_.emplace(name, RuleStats{0, 0, 0, default_match_limit_, default_ban_length_}).first;
    return it->second;
  }

  std::size_t default_match_limit_;
  std::size_t default_ban_length_;
  std::unordered_map<std::string, RuleStats> stats_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_SCHEDULER_H
