// Pattern: a term with `?variables`, compiled once into an e-matching program.
#ifndef TENSAT_CORE_PATTERN_H
#define TENSAT_CORE_PATTERN_H

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/pattern_ast.h"
#include "tensat/core/subst.h"
#include "tensat/detail/ematch_program.h"

namespace tensat {
inline namespace v0 {

/// A pattern: a term over `L` with `?variables`, compiled once for e-matching.
///
/// ```
/// Pattern<SymbolLang> p("(+ ?a (* ?b 0))");
/// for (const SearchMatches& m : p.search(egraph)) ...
/// ```
template <class L>
class Pattern {
 public:
  /// Parses and compiles `text`; throws `ParseError` on malformed text.
  explicit Pattern(std::string_view text) : Pattern(parse_pattern_ast<L>(text)) {}
  explicit Pattern(PatternAst<L> ast) : ast_(std::move(ast)), vars_(pattern_vars<L>(ast_)) {
    if (ast_.empty()) throw Error("empty pattern");
    program_ = detail::Program<L>::compile({{std::nullopt, &ast_}});
  }
  Pattern(const Pattern& other) : ast_(other.ast_), vars_(other.vars_) {
    program_ = detail::Program<L>::compile({{std::nullopt, &ast_}});
  }
  Pattern& operator=(const Pattern& other) {
    if (this != &other) *this = Pattern(other);
    return *this;
  }
  Pattern(Pattern&&) noexcept = default;
  Pattern& operator=(Pattern&&) noexcept = default;

  [[nodiscard]] const PatternAst<L>& ast() const noexcept { return ast_; }
  /// The variables, in order of first appearance.
  [[nodiscard]] const std::vector<Var>& vars() const noexcept { return vars_; }
  [[nodiscard]] std::string to_string() const { return ast_.to_string(); }
  [[nodiscard]] const detail::Program<L>& program() const noexcept { return program_; }

  /// Matches in class `id`, at most `limit` substitutions. Throws if the e-graph is dirty.
  template <class A>
  [[nodiscard]] std::optional<SearchMatches> search_eclass_with_limit(const EGraph<L, A>& egraph,
                                                                      Id id,
                                                                      std::size_t limit) const {
    return program_.search_eclass(egraph, id, limit);
  }
  template <class A>
  [[nodiscard]] std::optional<SearchMatches> search_eclass(const EGraph<L, A>& egraph,
                                                           Id id) const {
    return search_eclass_with_limit(egraph, id, static_cast<std::size_t>(-1));
  }

  /// Matches in every class (only classes having the root operator are visited), at most
  /// `limit` substitutions in all.
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                                             std::size_t limit) const {
    return program_.search(egraph, limit);
  }
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search(const EGraph<L, A>& egraph) const {
    return search_with_limit(egraph, static_cast<std::size_t>(-1));
  }
  /// The classes `search_with_limit` visits in order (those with the root operator), or
  /// nothing for a variable root; `search_classes_with_limit` on consecutive ranges of them
  /// finds what `search_with_limit` does.
  template <class A>
  [[nodiscard]] std::optional<Span<const Id>> candidate_classes(const EGraph<L, A>& egraph) const {
    return program_.candidate_classes(egraph);
  }
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search_classes_with_limit(const EGraph<L, A>& egraph,
                                                                     Span<const Id> classes,
                                                                     std::size_t limit) const {
    return program_.search_classes(egraph, classes, limit);
  }
  /// Number of substitutions in all matches (convenience for tests and reports).
  template <class A>
  [[nodiscard]] std::size_t n_matches(const EGraph<L, A>& egraph) const {
    std::size_t n = 0;
    for (const auto& m : search(egraph)) n += m.substs.size();
    return n;
  }

  /// Adds the instantiation of this pattern under `subst`; returns its class.
  template <class A>
  Id instantiate(EGraph<L, A>& egraph, const Subst& subst) const {
    return tensat::instantiate(egraph, ast_, ast_.root(), subst);
  }

 private:
  PatternAst<L> ast_;
  std::vector<Var> vars_;
  detail::Program<L> program_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_PATTERN_H
