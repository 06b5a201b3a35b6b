// Pattern ASTs: terms with variables (ENodeOrVar), their parser, and instantiation.
#ifndef TENSAT_CORE_PATTERN_AST_H
#define TENSAT_CORE_PATTERN_AST_H

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/subst.h"
#include "tensat/detail/id_buffer.h"
#include "tensat/core/sexpr.h"

namespace tensat {
inline namespace v0 {

/// A node of a pattern: either an e-node of `L` (children index the pattern) or a variable.
template <class L>
class ENodeOrVar {
 public:
  explicit ENodeOrVar(L node) : node_(std::move(node)) {}
  explicit ENodeOrVar(Var var) : node_(std::nullopt), var_(var) {}

  [[nodiscard]] bool is_var() const noexcept { return !node_.has_value(); }
  [[nodiscard]] Var var() const { return *var_; }
  [[nodiscard]] const L& node() const { return *node_; }
  [[nodiscard]] L& node() { return *node_; }
  [[nodiscard]] Span<Id> children() noexcept { return node_ ? node_->children() : Span<Id>{}; }
  [[nodiscard]] Span<const Id> children() const noexcept {
    return node_ ? Span<const Id>(node_->children()) : Span<const Id>{};
  }
  [[nodiscard]] std::string op_name() const {
    return node_ ? node_->op_name() : std::string(var_->name());
  }
  friend bool operator==(const ENodeOrVar& a, const ENodeOrVar& b) {
    if (a.is_var() != b.is_var()) return false;
    return a.is_var() ? a.var() == b.var() : a.node() == b.node();
  }

 private:
  std::optional<L> node_;
  std::optional<Var> var_;
};

template <class L>
using PatternAst = RecExpr<ENodeOrVar<L>>;

/// Parses a pattern: like `parse_expr`, but atoms `?name` are variables. A variable with
/// children (`(?f x)`) is an error.
template <class L>
PatternAst<L> parse_pattern_ast(std::string_view text) {
  return read_sexpr<ENodeOrVar<L>>(
      text, [](std::string_view op, Span<const Id> children, std::size_t offset) {
        if (Var::is_var_name(op)) {
          if (!children.empty())
            throw ParseError(offset, fmt::format("variable {} cannot have children", op));
          return ENodeOrVar<L>(Var(op));
        }
        return ENodeOrVar<L>(L::from_op(op, children));
      });
}

/// The variables of a pattern, in order of first appearance.
template <class L>
std::vector<Var> pattern_vars(const PatternAst<L>& ast) {
  std::vector<Var> vars;
  std::set<Var> seen;  // a pattern may have thousands of variables: no linear search per node
  for (const auto& n : ast)
    if (n.is_var() && seen.insert(n.var()).second) vars.push_back(n.var());
  return vars;
}

/// Adds the instantiation of the subpattern of `ast` rooted at `root` under `subst` and returns
/// its class (egg's `add_instantiation`). Throws `Error` if a variable is unbound.
template <class L, class A>
Id instantiate(EGraph<L, A>& egraph, const PatternAst<L>& ast, Id root, const Subst& subst) {
  // Uninitialized stack storage for the usual small pattern (an `Id` array would be zeroed).
  constexpr std::size_t kStack = 64;
  detail::IdBuffer<kStack> buffer(root.index() + 1);
  Id* ids = buffer.data();
  for (std::size_t i = 0; i <= root.index(); ++i) {
    const auto& n = ast[Id(i)];
    if (n.is_var()) {
      ids[i] = subst[n.var()];
    } else {
      ids[i] = egraph.add(map_children(n.node(), [&](Id c) { return ids[c.index()]; }));
    }
  }
  return ids[root.index()];
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_PATTERN_AST_H
