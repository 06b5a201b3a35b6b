// Var, Subst, SearchMatches: pattern variables and what a match binds them to.
#ifndef TENSAT_CORE_SUBST_H
#define TENSAT_CORE_SUBST_H

#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/symbol.h"

namespace tensat {
inline namespace v0 {

/// A pattern variable such as `?x`. The name includes the `?`.
class Var {
 public:
  /// Throws `Error` unless `name` is `?` followed by at least one character.
  explicit Var(std::string_view name) : symbol_(checked(name)) {}
  [[nodiscard]] std::string_view name() const { return symbol_.str(); }
  [[nodiscard]] Symbol symbol() const noexcept { return symbol_; }
  /// True for atoms that read as variables: `?` followed by at least one character.
  [[nodiscard]] static bool is_var_name(std::string_view text) noexcept {
    return text.size() > 1 && text[0] == '?';
  }
  friend bool operator==(Var a, Var b) noexcept { return a.symbol_ == b.symbol_; }
  friend bool operator!=(Var a, Var b) noexcept { return a.symbol_ != b.symbol_; }
  friend bool operator<(Var a, Var b) noexcept { return a.symbol_ < b.symbol_; }

 private:
  static Symbol checked(std::string_view name) {
    if (!is_var_name(name))
      throw Error(fmt::format("'{}' is not a pattern variable (expected ?name)", name));
    return Symbol(name);
  }
  Symbol symbol_;
};

/// A substitution: the e-class bound to each pattern variable of a match.
class Subst {
 public:
  struct Binding {
    Var var;
    Id id;
  };

  /// The class bound to `var`, or `kInvalidId`. O(number of variables).
  [[nodiscard]] Id find(Var var) const noexcept {
    for (const Binding& b : bindings_)
      if (b.var == var) return b.id;
    return kInvalidId;
  }
  /// The class bound to `var`, if any. O(number of variables).
  [[nodiscard]] std::optional<Id> get(Var var) const noexcept {
    const Id id = find(var);
    if (id == kInvalidId) return std::nullopt;
    return id;
  }
  /// The class bound to `var`; throws `Error` if it is unbound.
  [[nodiscard]] Id operator[](Var var) const {
    const Id id = find(var);
    if (id == kInvalidId) unbound(var);
    return id;
  }
  [[nodiscard]] Id operator[](std::string_view var) const { return (*this)[Var(var)]; }
  /// Binds `var`, which must not be bound yet, to `id` (no search: for building substitutions).
  void push(Var var, Id id) { bindings_.push_back(Binding{var, id}); }
  /// Binds `var` to `id`, replacing an earlier binding.
  void insert(Var var, Id id) {
    for (Binding& b : bindings_)
      if (b.var == var) {
        b.id = id;
        return;
      }
    bindings_.push_back(Binding{var, id});
  }
  [[nodiscard]] std::size_t size() const noexcept { return bindings_.size(); }
  [[nodiscard]] const Binding* begin() const noexcept { return bindings_.begin(); }
  [[nodiscard]] const Binding* end() const noexcept { return bindings_.end(); }

 private:
  [[noreturn]] static void unbound(Var var) {
    throw Error(fmt::format("variable {} is not bound in this substitution", var.name()));
  }
  SmallVector<Binding, 4> bindings_;
};

/// The matches of a searcher in one e-class.
struct SearchMatches {
  Id eclass;
  std::vector<Subst> substs;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_SUBST_H
