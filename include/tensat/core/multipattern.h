// Multi-patterns: several patterns matched together, `?x = pat1 = pat2, ?y = pat3`.
#ifndef TENSAT_CORE_MULTIPATTERN_H
#define TENSAT_CORE_MULTIPATTERN_H

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensat/core/pattern.h"
#include "tensat/core/rewrite.h"

namespace tensat {
inline namespace v0 {

/// A conjunction of (variable, pattern) clauses. As a searcher, each pattern must match in its
/// variable's class; a variable bound by an earlier clause constrains later ones, an unbound one
/// ranges over all classes. As an applier, each pattern is instantiated in order and united with
/// its variable's class, or binds the variable if it is still unbound.
///
/// Text form: clauses separated by `,`, each `?var = pattern [= pattern ...]`; `;` starts a
/// comment to the end of the line, as in s-expressions (a `,` or `=` in it separates nothing).
template <class L>
class MultiPattern {
 public:
  using Clause = std::pair<Var, PatternAst<L>>;

  /// Parses `text`; throws `ParseError` with the offset of the faulty clause or pattern.
  explicit MultiPattern(std::string_view text) : MultiPattern(parse(text)) {}
  explicit MultiPattern(std::vector<Clause> clauses) : clauses_(std::move(clauses)) {
    if (clauses_.empty()) throw Error("a multi-pattern needs at least one clause");
    std::vector<std::pair<std::optional<Var>, const PatternAst<L>*>> program_input;
    for (const auto& [var, ast] : clauses_) program_input.emplace_back(var, &ast);
    program_ = detail::Program<L>::compile(program_input);
  }

  [[nodiscard]] const std::vector<Clause>& clauses() const noexcept { return clauses_; }

  /// Every variable a match binds: the clause variables and the patterns' variables.
  [[nodiscard]] std::vector<Var> vars() const {
    std::vector<Var> vars;
    auto add = [&](Var v) {
      if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
    };
    for (const auto& [var, ast] : clauses_) {
      add(var);
      for (Var v : pattern_vars<L>(ast)) add(v);
    }
    return vars;
  }

  /// Variables read (not bound) when applying: used before an earlier clause binds them.
  [[nodiscard]] std::vector<Var> used_vars() const {
    std::vector<Var> bound;
    std::vector<Var> used;
    for (const auto& [var, ast] : clauses_) {
      for (Var v : pattern_vars<L>(ast))
        if (std::find(bound.begin(), bound.end(), v) == bound.end() &&
            std::find(used.begin(), used.end(), v) == used.end())
          used.push_back(v);
      bound.push_back(var);
    }
    return used;
  }

  /// The clauses as `?a = (f ?x), ?b = (g ?a)`: text that reads back to the same clauses.
  [[nodiscard]] std::string to_string() const {
    std::string out;
    for (const auto& [var, ast] : clauses_) {
      if (!out.empty()) out += ", ";
      // A leaf prints bare, and one holding ',' or '=' would read back split at them: a
      // parenthesized leaf is the same leaf.
      const std::string pattern = ast.to_string();
      const bool bare = !pattern.empty() && pattern.front() != '(' &&
                        pattern.find_first_of(",=") != std::string::npos;
      out += fmt::format(bare ? "{} = ({})" : "{} = {}", var.name(), pattern);
    }
    return out;
  }

  template <class A>
  [[nodiscard]] std::optional<SearchMatches> search_eclass_with_limit(const EGraph<L, A>& egraph,
                                                                      Id id,
                                                                      std::size_t limit) const {
    return program_.search_eclass(egraph, id, limit);
  }
  /// Matches with the first clause's pattern rooted in any class (prefiltered by its root
  /// operator), at most `limit` substitutions in all.
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                                             std::size_t limit) const {
    return program_.search(egraph, limit);
  }
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search(const EGraph<L, A>& egraph) const {
    return search_with_limit(egraph, static_cast<std::size_t>(-1));
  }
  /// The classes `search_with_limit` visits in order (those with the first clause's root operator),
  /// or nothing for a variable root; `search_classes_with_limit` on consecutive ranges of them
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
  template <class A>
  [[nodiscard]] std::size_t n_matches(const EGraph<L, A>& egraph) const {
    std::size_t n = 0;
    for (const auto& m : search(egraph)) n += m.substs.size();
    return n;
  }

  /// Instantiates every clause under `subst` (extended as clauses bind variables); returns the
  /// ids whose class changed.
  template <class A>
  std::vector<Id> apply(EGraph<L, A>& egraph, Subst subst) const {
    std::vector<Id> changed;
    for (const auto& [var, ast] : clauses_) {
      const Id id = instantiate(egraph, ast, ast.root(), subst);
      if (auto existing = subst.get(var)) {
        if (egraph.unite(*existing, id)) changed.push_back(id);
      } else {
        subst.insert(var, id);
      }
    }
    return changed;
  }

 private:
  static std::vector<Clause> parse(std::string_view text) {
    // Split at top-level ',' into clauses and '=' into parts, remembering offsets. Comments are
    // skipped with the s-expression reader's own lexer, so a ',' or '=' in one splits nothing.
    struct Part {
      std::size_t offset;
      std::string_view text;
    };
    std::vector<std::vector<Part>> clauses(1);
    std::size_t depth = 0;
    std::size_t start = 0;
    auto close_part = [&](std::size_t end) {
      clauses.back().push_back(Part{start, text.substr(start, end - start)});
      start = end + 1;
    };
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t next = skip_sexpr_blank(text, i);
      if (next != i) {
        i = next;
        continue;
      }
      const char c = text[i];
      if (c == '(') ++depth;
      if (c == ')' && depth > 0) --depth;
      if (depth == 0 && c == '=') close_part(i);
      if (depth == 0 && c == ',') {
        close_part(i);
        clauses.emplace_back();
      }
      ++i;
    }
    close_part(text.size());

    // A part without its leading blanks, and without trailing whitespace (for messages).
    auto trim = [](Part p) {
      const std::size_t skip = skip_sexpr_blank(p.text, 0);
      p.text.remove_prefix(skip);
      p.offset += skip;
      while (!p.text.empty() && std::isspace(static_cast<unsigned char>(p.text.back())))
        p.text.remove_suffix(1);
      return p;
    };
    // The variable of a clause: one atom, then only blanks.
    auto clause_var = [](std::string_view part) -> std::optional<Var> {
      std::size_t end = 0;
      while (end < part.size() && is_sexpr_atom_char(part[end])) ++end;
      const std::string_view atom = part.substr(0, end);
      if (!Var::is_var_name(atom) || skip_sexpr_blank(part, end) != part.size())
        return std::nullopt;
      return Var(atom);
    };
    std::vector<Clause> result;
    for (auto& parts : clauses) {
      const Part head = trim(parts[0]);
      if (parts.size() < 2)
        throw ParseError(head.offset, "expected '?var = pattern' in multi-pattern clause");
      const std::optional<Var> var = clause_var(head.text);
      if (!var)
        throw ParseError(
            head.offset,
            fmt::format("a multi-pattern clause must start with a variable, found '{}'",
                        head.text));
      for (std::size_t k = 1; k < parts.size(); ++k) {
        const Part part = trim(parts[k]);
        if (part.text.empty()) throw ParseError(part.offset, "empty pattern in multi-pattern");
        try {
          result.emplace_back(*var, parse_pattern_ast<L>(part.text));
        } catch (const ParseError& e) {
          throw ParseError(part.offset + e.offset(), e.reason());
        }
      }
    }
    return result;
  }

  std::vector<Clause> clauses_;
  detail::Program<L> program_;
};

/// A `MultiPattern` as a rewrite searcher.
template <class L, class A>
using MultiPatternSearcher = PatternLikeSearcher<L, A, MultiPattern<L>>;

/// A `MultiPattern` as a rewrite applier.
template <class L, class A>
class MultiPatternApplier final : public Applier<L, A> {
 public:
  explicit MultiPatternApplier(MultiPattern<L> pattern) : pattern_(std::move(pattern)) {}
  std::vector<Id> apply_one(EGraph<L, A>& egraph, Id, const Subst& subst,
                            std::string_view) const override {
    return pattern_.apply(egraph, subst);
  }
  std::vector<Var> vars() const override { return pattern_.used_vars(); }
  std::string to_string() const override { return pattern_.to_string(); }

 private:
  MultiPattern<L> pattern_;
};

/// `lhs => rhs` with multi-patterns on both sides (egg's `multi_rewrite!`).
/// Throws `ParseError` (offset; side and rule named) or `RuleError` (unbound variable).
template <class L, class A = NoAnalysis>
Rewrite<L, A> multi_rewrite(std::string name, std::string_view lhs, std::string_view rhs) {
  auto parse = [&](const char* side, std::string_view text) {
    try {
      return MultiPattern<L>(text);
    } catch (const ParseError& e) {
      throw ParseError(e.offset(), fmt::format("in {} of rule '{}': {}", side, name, e.reason()));
    }
  };
  auto searcher = std::make_shared<MultiPatternSearcher<L, A>>(parse("lhs", lhs));
  auto applier = std::make_shared<MultiPatternApplier<L, A>>(parse("rhs", rhs));
  return Rewrite<L, A>(std::move(name), std::move(searcher), std::move(applier));
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_MULTIPATTERN_H
