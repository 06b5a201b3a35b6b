// Reading s-expressions into RecExprs, with errors that name the byte offset and the reason.
#ifndef TENSAT_CORE_SEXPR_H
#define TENSAT_CORE_SEXPR_H

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "tensat/core/error.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"

namespace tensat {
inline namespace v0 {

/// The s-expression lexer's blanks: whitespace, and `;` comments running to the end of the line.
/// Returns the offset of the first character at or after `pos` that is not blank (or the size).
/// Shared by every reader of s-expression text (`read_sexpr`, `MultiPattern`), so that they agree
/// on what is a comment.
inline std::size_t skip_sexpr_blank(std::string_view text, std::size_t pos) noexcept {
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ';') {
      while (pos < text.size() && text[pos] != '\n') ++pos;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos;
    } else {
      break;
    }
  }
  return pos;
}

/// Whether `c` may be part of an atom: anything but whitespace, parentheses and `;`.
inline bool is_sexpr_atom_char(char c) noexcept {
  return c != '(' && c != ')' && c != ';' && !std::isspace(static_cast<unsigned char>(c));
}

/// Reads one s-expression from `text` and builds a `RecExpr<N>` bottom-up, calling
/// `build(op, children, offset)` for each atom (no children) and each list (head atom + children).
/// `build` returns an `N` or throws `LanguageError`, which is rethrown as `ParseError` at `offset`.
///
/// Grammar: `expr := atom | '(' atom expr* ')'`; atoms are runs of characters other than
/// whitespace, parentheses and `;`; `;` starts a comment to the end of the line. After the
/// expression only whitespace, comments and stray `)` may follow: egg's reader ignores the rest of
/// the input and egg's own test data has trailing `)`, so those are accepted; anything else is an
/// error rather than silently dropped. Errors: empty input, `()`, a list whose head is a list,
/// an unclosed list, trailing text.
template <class N, class Build>
RecExpr<N> read_sexpr(std::string_view text, Build&& build) {
  std::vector<N> nodes;
  struct Frame {
    std::size_t open_offset;
    std::size_t head_offset = 0;
    std::string_view head;
    std::vector<Id> children;
  };
  std::vector<Frame> stack;
  std::size_t pos = 0;
  bool done = false;

  auto skip_space = [&] { pos = skip_sexpr_blank(text, pos); };
  auto is_atom_char = is_sexpr_atom_char;
  auto make = [&](std::string_view op, const std::vector<Id>& children, std::size_t offset) {
    try {
      nodes.push_back(build(op, Span<const Id>(children.data(), children.size()), offset));
    } catch (const LanguageError& e) {
      throw ParseError(offset, e.what());
    }
    return Id(nodes.size() - 1);
  };
  // Hands a finished subterm to the enclosing list, or ends the parse.
  auto finish = [&](Id id) {
    if (stack.empty()) {
      done = true;
    } else {
      stack.back().children.push_back(id);
    }
  };

  skip_space();
  if (pos == text.size()) throw ParseError(pos, "expected an expression, found end of input");
  while (!done) {
    skip_space();
    if (pos == text.size())
      throw ParseError(pos,
                       fmt::format("unclosed '(' opened at offset {}", stack.back().open_offset));
    const char c = text[pos];
    if (c == '(') {
      Frame frame{pos, 0, {}, {}};
      ++pos;
      skip_space();
      if (pos == text.size())
        throw ParseError(pos, fmt::format("unclosed '(' opened at offset {}", frame.open_offset));
      if (text[pos] == ')') throw ParseError(frame.open_offset, "empty list '()'");
      if (text[pos] == '(') throw ParseError(pos, "the head of a list must be an atom, found '('");
      frame.head_offset = pos;
      while (pos < text.size() && is_atom_char(text[pos])) ++pos;
      frame.head = text.substr(frame.head_offset, pos - frame.head_offset);
      stack.push_back(std::move(frame));
    } else if (c == ')') {
      if (stack.empty()) throw ParseError(pos, "unexpected ')'");
      ++pos;
      Frame frame = std::move(stack.back());
      stack.pop_back();
      finish(make(frame.head, frame.children, frame.head_offset));
    } else {
      const std::size_t start = pos;
      while (pos < text.size() && is_atom_char(text[pos])) ++pos;
      finish(make(text.substr(start, pos - start), {}, start));
    }
  }
  // Trailing input: whitespace, comments and stray ')' (egg compatibility) only.
  for (skip_space(); pos < text.size(); skip_space()) {
    if (text[pos] != ')') throw ParseError(pos, "unexpected text after the end of the expression");
    ++pos;
  }
  return RecExpr<N>(std::move(nodes));
}

/// Parses a ground term of language `L`: each operator goes through `L::from_op`.
/// Throws `ParseError` (with offset) on malformed text, unknown operators or wrong arity.
template <class L>
RecExpr<L> parse_expr(std::string_view text) {
  return read_sexpr<L>(text, [](std::string_view op, Span<const Id> children, std::size_t) {
    return L::from_op(op, children);
  });
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_SEXPR_H
