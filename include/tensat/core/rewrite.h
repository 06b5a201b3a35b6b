// Rewrites: a searcher (what to match), an applier (what to do), conditions; builders.
#ifndef TENSAT_CORE_REWRITE_H
#define TENSAT_CORE_REWRITE_H

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/pattern.h"

namespace tensat {
inline namespace v0 {

/// Finds matches in an e-graph (egg's `Searcher`). `Pattern` and `MultiPattern` are searchers;
/// implement this interface for anything else (e.g. matching on analysis data alone).
template <class L, class A>
class Searcher {
 public:
  virtual ~Searcher() = default;
  /// Matches in class `id`, at most `limit` substitutions.
  [[nodiscard]] virtual std::optional<SearchMatches> search_eclass_with_limit(
      const EGraph<L, A>& egraph, Id id, std::size_t limit) const = 0;
  /// Matches in the whole e-graph, at most `limit` substitutions in all. The default visits every
  /// class; override it to prefilter (patterns use the root operator).
  [[nodiscard]] virtual std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                                                     std::size_t limit) const {
    std::vector<SearchMatches> result;
    for (const auto& c : egraph.classes()) {
      if (limit == 0) break;
      if (auto m = search_eclass_with_limit(egraph, c.id, limit)) {
        limit -= m->substs.size();
        result.push_back(std::move(*m));
      }
    }
    return result;
  }
  /// The classes `search_with_limit` visits, in its order, if it searches a list of classes one
  /// at a time: then `search_classes_with_limit` on consecutive ranges of the list finds, in
  /// order, what `search_with_limit` does, and a runner with several threads may split the
  /// search (`Runner::with_threads`). Nothing by default: the search is not split.
  [[nodiscard]] virtual std::optional<Span<const Id>> candidate_classes(
      const EGraph<L, A>& /*egraph*/) const {
    return std::nullopt;
  }
  /// The matches in `classes`, in order, at most `limit` substitutions in all.
  [[nodiscard]] virtual std::vector<SearchMatches> search_classes_with_limit(
      const EGraph<L, A>& egraph, Span<const Id> classes, std::size_t limit) const {
    std::vector<SearchMatches> result;
    for (Id c : classes) {
      if (limit == 0) break;
      if (auto m = search_eclass_with_limit(egraph, c, limit)) {
        limit -= m->substs.size();
        result.push_back(std::move(*m));
      }
    }
    return result;
  }
  /// The variables every match binds.
  [[nodiscard]] virtual std::vector<Var> vars() const = 0;
  /// Text for reports and errors.
  [[nodiscard]] virtual std::string to_string() const { return "<searcher>"; }
  /// The pattern every match is an instance of, if this searcher is one pattern: what
  /// explanations instantiate as the term a rule rewrote, and `check_proof` replays.
  [[nodiscard]] virtual const PatternAst<L>* pattern_ast() const { return nullptr; }

  [[nodiscard]] std::vector<SearchMatches> search(const EGraph<L, A>& egraph) const {
    return search_with_limit(egraph, static_cast<std::size_t>(-1));
  }
};

/// Acts on matches (egg's `Applier`): adds terms, unites classes. Must report the ids it
/// changed: an empty result means "did nothing", which is how the runner detects saturation.
template <class L, class A>
class Applier {
 public:
  virtual ~Applier() = default;
  /// Applies to one match in class `eclass`; returns the ids whose class changed.
  virtual std::vector<Id> apply_one(EGraph<L, A>& egraph, Id eclass, const Subst& subst,
                                    std::string_view rule_name) const = 0;
  /// Applies to all matches; the default calls `apply_one` for each substitution.
  virtual std::vector<Id> apply_matches(EGraph<L, A>& egraph,
                                        const std::vector<SearchMatches>& matches,
                                        std::string_view rule_name) const {
    std::vector<Id> changed;
    for (const auto& m : matches)
      for (const Subst& s : m.substs) {
        auto ids = apply_one(egraph, m.eclass, s, rule_name);
        changed.insert(changed.end(), ids.begin(), ids.end());
      }
    return changed;
  }
  /// Variables this applier reads from the substitution (checked against the searcher).
  [[nodiscard]] virtual std::vector<Var> vars() const { return {}; }
  [[nodiscard]] virtual std::string to_string() const { return "<applier>"; }
  /// The pattern this applier instantiates and unites with the match, if it is one pattern
  /// (through conditions): what `check_proof` replays.
  [[nodiscard]] virtual const PatternAst<L>* pattern_ast() const { return nullptr; }
};

/// A condition on a match, checked at apply time against the current e-graph (egg's
/// `Condition`). It may add to the e-graph (as `ConditionEqual` does).
template <class L, class A>
class Condition {
 public:
  virtual ~Condition() = default;
  [[nodiscard]] virtual bool check(EGraph<L, A>& egraph, Id eclass, const Subst& subst) const = 0;
  /// Variables the condition reads (checked against the searcher).
  [[nodiscard]] virtual std::vector<Var> vars() const { return {}; }
};

/// The signature of conditions written as callables.
template <class L, class A>
using ConditionFn = std::function<bool(EGraph<L, A>&, Id, const Subst&)>;
/// The signature of appliers written as callables: return the changed ids.
template <class L, class A>
using ApplierFn = std::function<std::vector<Id>(EGraph<L, A>&, Id, const Subst&)>;

/// A condition from a callable, optionally declaring the variables it reads.
template <class L, class A>
class FnCondition final : public Condition<L, A> {
 public:
  explicit FnCondition(ConditionFn<L, A> fn, std::vector<Var> vars = {})
      : fn_(std::move(fn)), vars_(std::move(vars)) {}
  bool check(EGraph<L, A>& egraph, Id eclass, const Subst& subst) const override {
    return fn_(egraph, eclass, subst);
  }
  std::vector<Var> vars() const override { return vars_; }

 private:
  ConditionFn<L, A> fn_;
  std::vector<Var> vars_;
};

/// Holds when the instantiations of two patterns are in the same class. Like egg's, it adds
/// the instantiations to the e-graph (so a later union can make it hold).
template <class L, class A>
class ConditionEqual final : public Condition<L, A> {
 public:
  ConditionEqual(Pattern<L> lhs, Pattern<L> rhs) : lhs_(std::move(lhs)), rhs_(std::move(rhs)) {}
  ConditionEqual(std::string_view lhs, std::string_view rhs) : lhs_(lhs), rhs_(rhs) {}
  bool check(EGraph<L, A>& egraph, Id, const Subst& subst) const override {
    const Id a = lhs_.instantiate(egraph, subst);
    const Id b = rhs_.instantiate(egraph, subst);
    return egraph.find(a) == egraph.find(b);
  }
  std::vector<Var> vars() const override {
    auto vars = lhs_.vars();
    for (Var v : rhs_.vars())
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
    return vars;
  }

 private:
  Pattern<L> lhs_;
  Pattern<L> rhs_;
};

/// Adapts a pattern-like type `P` (`Pattern<L>`, `MultiPattern<L>`: anything with
/// `search_eclass_with_limit`, `search_with_limit`, `candidate_classes`,
/// `search_classes_with_limit`, `vars` and `to_string`) to `Searcher`.
template <class L, class A, class P>
class PatternLikeSearcher final : public Searcher<L, A> {
 public:
  explicit PatternLikeSearcher(P pattern) : pattern_(std::move(pattern)) {}
  std::optional<SearchMatches> search_eclass_with_limit(const EGraph<L, A>& egraph, Id id,
                                                        std::size_t limit) const override {
    return pattern_.search_eclass_with_limit(egraph, id, limit);
  }
  std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                               std::size_t limit) const override {
    return pattern_.search_with_limit(egraph, limit);
  }
  std::optional<Span<const Id>> candidate_classes(const EGraph<L, A>& egraph) const override {
    return pattern_.candidate_classes(egraph);
  }
  std::vector<SearchMatches> search_classes_with_limit(const EGraph<L, A>& egraph,
                                                       Span<const Id> classes,
                                                       std::size_t limit) const override {
    return pattern_.search_classes_with_limit(egraph, classes, limit);
  }
  std::vector<Var> vars() const override { return pattern_.vars(); }
  std::string to_string() const override { return pattern_.to_string(); }
  const PatternAst<L>* pattern_ast() const override {
    if constexpr (std::is_same_v<P, Pattern<L>>)
      return &pattern_.ast();
    else
      return nullptr;
  }
  [[nodiscard]] const P& pattern() const noexcept { return pattern_; }

 private:
  P pattern_;
};

/// Searches with a `Pattern`: only classes with the root operator are visited.
template <class L, class A>
using PatternSearcher = PatternLikeSearcher<L, A, Pattern<L>>;

/// Instantiates a `Pattern` and unites it with the matched class.
template <class L, class A>
class PatternApplier final : public Applier<L, A> {
 public:
  explicit PatternApplier(Pattern<L> pattern) : pattern_(std::move(pattern)) {}
  std::vector<Id> apply_one(EGraph<L, A>& egraph, Id eclass, const Subst& subst,
                            std::string_view) const override {
    if (egraph.explanations_enabled()) {
      if (egraph.unite_instantiations(eclass, pattern_.ast(), subst, false) != kInvalidId)
        return {eclass};
      return {};
    }
    const Id id = pattern_.instantiate(egraph, subst);
    if (egraph.unite(eclass, id)) return {eclass};
    return {};
  }
  std::vector<Id> apply_matches(EGraph<L, A>& egraph, const std::vector<SearchMatches>& matches,
                                std::string_view) const override {
    std::vector<Id> changed;
    const bool explain = egraph.explanations_enabled();
    for (const auto& m : matches)
      for (const Subst& s : m.substs) {
        if (explain) {
          const Id id = egraph.unite_instantiations(m.eclass, pattern_.ast(), s);
          if (id != kInvalidId) changed.push_back(id);
          continue;
        }
        const Id id = pattern_.instantiate(egraph, s);
        if (egraph.unite(id, m.eclass)) changed.push_back(id);
      }
    return changed;
  }
  std::vector<Var> vars() const override { return pattern_.vars(); }
  std::string to_string() const override { return pattern_.to_string(); }
  const PatternAst<L>* pattern_ast() const override { return &pattern_.ast(); }

 private:
  Pattern<L> pattern_;
};

/// Applies `applier` only to matches where `condition` holds (egg's `ConditionalApplier`).
template <class L, class A>
class ConditionalApplier final : public Applier<L, A> {
 public:
  ConditionalApplier(std::shared_ptr<const Condition<L, A>> condition,
                     std::shared_ptr<const Applier<L, A>> applier)
      : condition_(std::move(condition)), applier_(std::move(applier)) {}
  std::vector<Id> apply_one(EGraph<L, A>& egraph, Id eclass, const Subst& subst,
                            std::string_view rule_name) const override {
    if (!condition_->check(egraph, eclass, subst)) return {};
    return applier_->apply_one(egraph, eclass, subst, rule_name);
  }
  std::vector<Var> vars() const override {
    auto vars = applier_->vars();
    for (Var v : condition_->vars())
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
    return vars;
  }
  std::string to_string() const override { return applier_->to_string() + " if <condition>"; }
  const PatternAst<L>* pattern_ast() const override { return applier_->pattern_ast(); }

 private:
  std::shared_ptr<const Condition<L, A>> condition_;
  std::shared_ptr<const Applier<L, A>> applier_;
};

/// An applier from a callable `(EGraph&, Id eclass, const Subst&) -> std::vector<Id>` (the ids
/// it changed), optionally declaring the variables it reads.
template <class L, class A>
class FnApplier final : public Applier<L, A> {
 public:
  explicit FnApplier(ApplierFn<L, A> fn, std::vector<Var> vars = {})
      : fn_(std::move(fn)), vars_(std::move(vars)) {}
  std::vector<Id> apply_one(EGraph<L, A>& egraph, Id eclass, const Subst& subst,
                            std::string_view) const override {
    return fn_(egraph, eclass, subst);
  }
  std::vector<Var> vars() const override { return vars_; }
  std::string to_string() const override { return "<custom applier>"; }

 private:
  ApplierFn<L, A> fn_;
  std::vector<Var> vars_;
};

/// A named rewrite rule: a searcher and an applier, plus a priority (MLIR's "benefit": higher
/// runs earlier in a `RuleSet`) and labels for selecting groups of rules.
///
/// Construction checks that every variable the applier (and its conditions) reads is bound by
/// the searcher, and throws `RuleError` naming the rule and the variable otherwise.
template <class L, class A>
class Rewrite {
 public:
  Rewrite(std::string name, std::shared_ptr<const Searcher<L, A>> searcher,
          std::shared_ptr<const Applier<L, A>> applier)
      : name_(std::move(name)), searcher_(std::move(searcher)), applier_(std::move(applier)) {
    if (!searcher_ || !applier_) throw RuleError(name_, "searcher and applier must not be null");
    check_vars(applier_->vars());
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const Searcher<L, A>& searcher() const noexcept { return *searcher_; }
  [[nodiscard]] const Applier<L, A>& applier() const noexcept { return *applier_; }
  [[nodiscard]] int priority() const noexcept { return priority_; }
  [[nodiscard]] const std::vector<std::string>& labels() const noexcept { return labels_; }
  [[nodiscard]] bool has_label(std::string_view label) const {
    return std::find(labels_.begin(), labels_.end(), label) != labels_.end();
  }

  /// Returns this rule with the applier guarded by `condition` (all conditions must hold).
  [[nodiscard]] Rewrite when(std::shared_ptr<const Condition<L, A>> condition) const {
    if (!condition) throw RuleError(name_, "condition must not be null");
    Rewrite guarded = *this;
    guarded.applier_ = std::make_shared<ConditionalApplier<L, A>>(std::move(condition), applier_);
    guarded.check_vars(guarded.applier_->vars());
    return guarded;
  }
  /// Returns this rule guarded by a callable condition reading `vars`.
  [[nodiscard]] Rewrite when(ConditionFn<L, A> condition, std::vector<Var> vars = {}) const {
    return when(std::make_shared<FnCondition<L, A>>(std::move(condition), std::move(vars)));
  }
  /// Returns this rule with priority `priority`.
  [[nodiscard]] Rewrite with_priority(int priority) const {
    Rewrite r = *this;
    r.priority_ = priority;
    return r;
  }
  /// Returns this rule with `label` added.
  [[nodiscard]] Rewrite with_label(std::string label) const {
    Rewrite r = *this;
    r.labels_.push_back(std::move(label));
    return r;
  }

  [[nodiscard]] std::vector<SearchMatches> search(const EGraph<L, A>& egraph) const {
    return searcher_->search(egraph);
  }
  [[nodiscard]] std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                                             std::size_t limit) const {
    return searcher_->search_with_limit(egraph, limit);
  }
  /// Applies `matches`; returns the ids whose class changed.
  /// With explanations on, the unions are attributed to this rule.
  std::vector<Id> apply(EGraph<L, A>& egraph, const std::vector<SearchMatches>& matches) const {
    if (!egraph.explanations_enabled()) return applier_->apply_matches(egraph, matches, name_);
    typename EGraph<L, A>::RuleScope scope(egraph, name_, searcher_->pattern_ast());
    return applier_->apply_matches(egraph, matches, name_);
  }
  /// Searches then applies (no rebuild). The e-graph must be clean.
  std::vector<Id> run(EGraph<L, A>& egraph) const { return apply(egraph, search(egraph)); }

 private:
  void check_vars(const std::vector<Var>& needed) const {
    const auto bound = searcher_->vars();
    for (Var v : needed)
      if (std::find(bound.begin(), bound.end(), v) == bound.end())
        throw RuleError(name_, fmt::format("right-hand side refers to unbound var {}", v.name()));
  }

  std::string name_;
  std::shared_ptr<const Searcher<L, A>> searcher_;
  std::shared_ptr<const Applier<L, A>> applier_;
  int priority_ = 0;
  std::vector<std::string> labels_;
};

/// The pattern `text` of rule `rule`'s `side` ("lhs", "rhs"): what the builders below parse, for
/// a rule type of one's own. Throws `ParseError` naming the side and the rule.
template <class L>
Pattern<L> rule_pattern(const std::string& rule, const char* side, std::string_view text) {
  try {
    return Pattern<L>(text);
  } catch (const ParseError& e) {
    throw ParseError(e.offset(), fmt::format("in {} of rule '{}': {}", side, rule, e.reason()));
  }
}

/// `lhs => rhs`, both pattern texts (egg's `rewrite!(name; lhs => rhs)`).
/// Throws `ParseError` (offset, side and rule named) or `RuleError` (unbound variable).
template <class L, class A = NoAnalysis>
Rewrite<L, A> rewrite(std::string name, std::string_view lhs, std::string_view rhs) {
  auto searcher = std::make_shared<PatternSearcher<L, A>>(rule_pattern<L>(name, "lhs", lhs));
  auto applier = std::make_shared<PatternApplier<L, A>>(rule_pattern<L>(name, "rhs", rhs));
  return Rewrite<L, A>(std::move(name), std::move(searcher), std::move(applier));
}

/// `lhs => custom applier`.
template <class L, class A = NoAnalysis>
Rewrite<L, A> rewrite(std::string name, std::string_view lhs,
                      std::shared_ptr<const Applier<L, A>> applier) {
  auto searcher = std::make_shared<PatternSearcher<L, A>>(rule_pattern<L>(name, "lhs", lhs));
  return Rewrite<L, A>(std::move(name), std::move(searcher), std::move(applier));
}

/// `lhs => callable applier` reading `vars`. The callable takes `(EGraph<L, A>&, Id eclass,
/// const Subst&)` and returns the ids it changed; `A` is not deduced from it.
template <class L, class A = NoAnalysis>
Rewrite<L, A> rewrite(std::string name, std::string_view lhs,
                      typename detail::TypeIdentity<ApplierFn<L, A>>::type applier,
                      std::vector<Var> vars = {}) {
  return rewrite<L, A>(std::move(name), lhs,
                       std::make_shared<FnApplier<L, A>>(std::move(applier), std::move(vars)));
}

/// `lhs <=> rhs`: the rules `name` (lhs => rhs) and `name-rev` (rhs => lhs).
template <class L, class A = NoAnalysis>
std::vector<Rewrite<L, A>> bidirectional_rewrite(const std::string& name, std::string_view lhs,
                                                 std::string_view rhs) {
  return {rewrite<L, A>(name, lhs, rhs), rewrite<L, A>(name + "-rev", rhs, lhs)};
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_REWRITE_H
