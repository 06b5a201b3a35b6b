// RuleSet: rules collected MLIR-style, as objects with a name, a priority and labels.
#ifndef TENSAT_CORE_RULE_SET_H
#define TENSAT_CORE_RULE_SET_H

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/rewrite.h"

namespace tensat {
inline namespace v0 {

/// A rule written as a class (MLIR's `RewritePattern`): override `name`, `pattern` (the
/// left-hand side) and `apply`; optionally `priority` (MLIR's benefit) and `labels`.
///
/// ```
/// struct FoldDoubleNeg : RewriteRule<SymbolLang, NoAnalysis> {
///   std::string name() const override { return "double-neg"; }
///   std::string pattern() const override { return "(- (- ?x))"; }
///   std::vector<Id> apply(EGraph<SymbolLang>& g, Id cls, const Subst& s) const override {
///     return g.unite(cls, s["?x"]) ? std::vector<Id>{cls} : std::vector<Id>{};
///   }
/// };
/// ```
template <class L, class A>
class RewriteRule {
 public:
  virtual ~RewriteRule() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// The left-hand side as pattern text.
  [[nodiscard]] virtual std::string pattern() const = 0;
  /// Acts on one match in class `eclass`; returns the ids whose class changed.
  virtual std::vector<Id> apply(EGraph<L, A>& egraph, Id eclass, const Subst& subst) const = 0;
  /// Higher runs earlier within a `RuleSet`.
  [[nodiscard]] virtual int priority() const { return 0; }
  [[nodiscard]] virtual std::vector<std::string> labels() const { return {}; }
  /// Variables `apply` reads (checked against the pattern); default: none declared.
  [[nodiscard]] virtual std::vector<Var> vars() const { return {}; }
};

namespace detail {
template <class L, class A>
class RuleObjectApplier final : public Applier<L, A> {
 public:
  explicit RuleObjectApplier(std::shared_ptr<const RewriteRule<L, A>> rule)
      : rule_(std::move(rule)) {}
  std::vector<Id> apply_one(EGraph<L, A>& egraph, Id eclass, const Subst& subst,
                            std::string_view) const override {
    return rule_->apply(egraph, eclass, subst);
  }
  std::vector<Var> vars() const override { return rule_->vars(); }
  std::string to_string() const override { return rule_->name(); }

 private:
  std::shared_ptr<const RewriteRule<L, A>> rule_;
};
}  // namespace detail

/// An ordered collection of rewrites. `add<R1, R2, ...>(args...)` constructs each rule class
/// from `args`; a class may derive from `RewriteRule<L, A>` or be convertible to `Rewrite<L, A>`.
/// `rewrites()` lists rules by descending priority, ties in insertion order.
template <class L, class A>
class RuleSet {
 public:
  RuleSet& add(Rewrite<L, A> rule) {
    rules_.push_back(std::move(rule));
    return *this;
  }
  RuleSet& add(std::vector<Rewrite<L, A>> rules) {
    for (auto& r : rules) rules_.push_back(std::move(r));
    return *this;
  }
  template <class... Rules, class... Args, std::enable_if_t<(sizeof...(Rules) > 0), int> = 0>
  RuleSet& add(const Args&... args) {
    (add_object<Rules>(args...), ...);
    return *this;
  }
  /// Adds `lhs => rhs` (see `rewrite`).
  RuleSet& rewrite(std::string name, std::string_view lhs, std::string_view rhs) {
    return add(tensat::rewrite<L, A>(std::move(name), lhs, rhs));
  }

  /// The rules by descending priority (stable).
  [[nodiscard]] std::vector<Rewrite<L, A>> rewrites() const {
    std::vector<Rewrite<L, A>> sorted = rules_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.priority() > b.priority(); });
    return sorted;
  }
  /// The rules carrying `label`, by descending priority.
  [[nodiscard]] std::vector<Rewrite<L, A>> with_label(std::string_view label) const {
    std::vector<Rewrite<L, A>> selected;
    for (const auto& r : rewrites())
      if (r.has_label(label)) selected.push_back(r);
    return selected;
  }
  /// The rule named `name`, or nullptr.
  [[nodiscard]] const Rewrite<L, A>* find(std::string_view name) const {
    for (const auto& r : rules_)
      if (r.name() == name) return &r;
    return nullptr;
  }
  [[nodiscard]] std::size_t size() const noexcept { return rules_.size(); }
  operator std::vector<Rewrite<L, A>>() const { return rewrites(); }

 private:
  template <class R, class... Args>
  void add_object(const Args&... args) {
    if constexpr (std::is_base_of_v<RewriteRule<L, A>, R>) {
      auto rule = std::make_shared<const R>(args...);
      auto searcher = std::make_shared<PatternSearcher<L, A>>(
          rule_pattern<L>(rule->name(), "pattern", rule->pattern()));
      Rewrite<L, A> rw(rule->name(), std::move(searcher),
                       std::make_shared<detail::RuleObjectApplier<L, A>>(rule));
      rw = rw.with_priority(rule->priority());
      for (auto& label : rule->labels()) rw = rw.with_label(label);
      rules_.push_back(std::move(rw));
    } else {
      static_assert(std::is_convertible_v<R, Rewrite<L, A>>,
                    "a rule class must derive from RewriteRule<L, A> or convert to Rewrite<L, A>");
      rules_.push_back(Rewrite<L, A>(R(args...)));
    }
  }

  std::vector<Rewrite<L, A>> rules_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_RULE_SET_H
