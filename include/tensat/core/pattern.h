// Patterns: terms with `?variables`, compiled once into an e-matching program; substitutions.
#ifndef TENSAT_CORE_PATTERN_H
#define TENSAT_CORE_PATTERN_H

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensat/fwd.h"
#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/symbol.h"
#include "tensat/io/sexpr.h"

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
  for (const auto& n : ast)
    if (n.is_var() && std::find(vars.begin(), vars.end(), n.var()) == vars.end())
      vars.push_back(n.var());
  return vars;
}

/// Adds the instantiation of the subpattern of `ast` rooted at `root` under `subst` and returns
/// its class (egg's `add_instantiation`). Throws `Error` if a variable is unbound.
template <class L, class A>
Id instantiate(EGraph<L, A>& egraph, const PatternAst<L>& ast, Id root, const Subst& subst) {
  constexpr std::size_t kStack = 64;
  Id stack_ids[kStack];
  std::vector<Id> heap_ids;
  Id* ids = stack_ids;
  if (root.index() >= kStack) {
    heap_ids.resize(root.index() + 1);
    ids = heap_ids.data();
  }
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

namespace detail {

/// An e-matching program: a sequence of instructions over registers holding e-class ids.
///
/// * `Bind{reg, node, out}`: for each node of class `reg` matching `bind_nodes[node]`, write its
///   children to registers `out, out+1, ...` and continue;
/// * `Compare{reg, other}`: continue if both registers name one class (a repeated variable);
/// * `Lookup{reg, term}`: build the ground term `terms[term]` (bound variables as leaves)
///   through the hashcons, without searching, and continue if it exists in class `reg`;
/// * `Scan{out}`: for each class, write it to `out` and continue (multi-patterns).
/// Reaching the end yields a substitution read from `var_regs`.
template <class L>
class Program {
 public:
  enum class OpCode : std::uint8_t { Bind, Compare, Lookup, Scan };
  struct Instruction {
    OpCode op;
    std::uint32_t reg;
    std::uint32_t arg;  // Bind: index in bind_nodes; Compare: other reg; Lookup: term index
    std::uint32_t out;  // Bind, Scan: first output register
  };
  /// A ground term to look up: entries in post-order; an entry is a node (children index
  /// earlier entries) or a register (a bound variable).
  struct TermEntry {
    std::optional<L> node;
    std::uint32_t reg = 0;
  };

  /// Compiles `patterns` (variable, pattern) in order into one program. The first pattern's
  /// root is register 0 (the class being searched), and its variable (if any) names it. Each
  /// later pattern matches in its variable's class if already bound, else in every class.
  static Program compile(const std::vector<std::pair<std::optional<Var>, const PatternAst<L>*>>& patterns) {
    Program program;
    program.num_regs_ = 1;
    for (std::size_t k = 0; k < patterns.size(); ++k) {
      const auto& [var, ast] = patterns[k];
      std::uint32_t reg = 0;
      std::optional<std::uint32_t> bound = var ? program.reg_of(*var) : std::nullopt;
      if (k == 0) {
        if (var) program.var_regs_.emplace_back(*var, 0);
        if (!ast->empty() && !(*ast)[ast->root()].is_var())
          program.root_op_key_ = (*ast)[ast->root()].node().op_key();
      } else if (bound) {
        reg = *bound;
      } else {
        reg = program.num_regs_++;
        program.instructions_.push_back({OpCode::Scan, 0, 0, reg});
        if (var) program.var_regs_.emplace_back(*var, reg);
      }
      program.compile_pattern(*ast, reg);
    }
    return program;
  }

  /// Runs the program with register 0 = `root` until it has produced `limit` matches; for each,
  /// `yield()` returns an empty `Subst&` (e.g. a new vector element) that the match fills.
  /// Returns the number produced.
  template <class A, class Yield>
  std::size_t run(const EGraph<L, A>& egraph, Id root, std::size_t limit, Yield&& yield) const {
    if (limit == 0) return 0;
    Machine<A, Yield> machine{*this, egraph, std::vector<Id>(num_regs_), limit, 0, yield};
    machine.regs[0] = root;
    machine.step(0);
    return machine.produced;
  }

  /// The operator key of the first pattern's root if it is an e-node (classes to visit can be
  /// taken from `classes_by_op`), else nothing (a variable root: every class is a candidate).
  [[nodiscard]] std::optional<std::uint32_t> root_op_key() const noexcept { return root_op_key_; }
  [[nodiscard]] std::size_t num_instructions() const noexcept { return instructions_.size(); }

 private:
  template <class A, class Yield>
  struct Machine {
    const Program& program;
    const EGraph<L, A>& egraph;
    std::vector<Id> regs;
    std::size_t limit;
    std::size_t produced;
    Yield& yield;

    // Returns false once the limit is reached, to unwind.
    bool step(std::size_t pc) {
      if (pc == program.instructions_.size()) {
        Subst& subst = yield();
        for (const auto& [var, reg] : program.var_regs_) subst.push(var, egraph.find(regs[reg]));
        return ++produced < limit;
      }
      const Instruction& ins = program.instructions_[pc];
      switch (ins.op) {
        case OpCode::Bind: {
          const L& pattern = program.bind_nodes_[ins.arg];
          for (Id nid : egraph.nodes_with_op(regs[ins.reg], pattern.op_key())) {
            const L& node = egraph.node(nid);
            if (!pattern.matches(node)) continue;
            std::uint32_t out = ins.out;
            for (Id child : node.children()) regs[out++] = child;
            if (!step(pc + 1)) return false;
          }
          return true;
        }
        case OpCode::Compare:
          if (egraph.find(regs[ins.reg]) != egraph.find(regs[ins.arg])) return true;
          return step(pc + 1);
        case OpCode::Lookup: {
          const Id found = lookup(program.terms_[ins.arg]);
          if (found == kInvalidId || found != egraph.find(regs[ins.reg])) return true;
          return step(pc + 1);
        }
        case OpCode::Scan:
          for (std::size_t i = 0; i < egraph.classes().size(); ++i) {
            regs[ins.out] = egraph.classes()[i].id;
            if (!step(pc + 1)) return false;
          }
          return true;
      }
      return true;
    }

    Id lookup(const std::vector<TermEntry>& term) const {
      SmallVector<Id, 8> ids;
      for (const TermEntry& entry : term) {
        if (!entry.node) {
          ids.push_back(egraph.find(regs[entry.reg]));
          continue;
        }
        const Id found = egraph.lookup_id(map_children(*entry.node, [&](Id c) { return ids[c.index()]; }));
        if (found == kInvalidId) return kInvalidId;
        ids.push_back(found);
      }
      return ids.back();
    }
  };

  std::optional<std::uint32_t> reg_of(Var var) const {
    for (const auto& [v, r] : var_regs_)
      if (v == var) return r;
    return std::nullopt;
  }

  /// Free variables of the subpattern at `id` that are not bound yet.
  std::size_t count_free(const PatternAst<L>& ast, Id id) const {
    std::size_t free = 0;
    std::vector<Id> stack{id};
    std::vector<Var> seen;
    while (!stack.empty()) {
      const auto& n = ast[stack.back()];
      stack.pop_back();
      if (n.is_var()) {
        if (!reg_of(n.var()) && std::find(seen.begin(), seen.end(), n.var()) == seen.end()) {
          seen.push_back(n.var());
          ++free;
        }
      } else {
        for (Id c : n.children()) stack.push_back(c);
      }
    }
    return free;
  }

  void compile_pattern(const PatternAst<L>& ast, std::uint32_t root_reg) {
    if (ast.empty()) throw Error("empty pattern");
    std::vector<std::pair<Id, std::uint32_t>> todo{{ast.root(), root_reg}};
    while (!todo.empty()) {
      // Variables first (free), then ground subterms (a lookup, no search), then the subterm
      // with the fewest unbound variables (the most constrained search).
      std::size_t pick = 0;
      std::size_t best = static_cast<std::size_t>(-1);
      for (std::size_t i = 0; i < todo.size(); ++i) {
        const auto& n = ast[todo[i].first];
        const std::size_t score = n.is_var() ? 0 : count_free(ast, todo[i].first) + 1;
        if (score < best) {
          best = score;
          pick = i;
        }
      }
      const auto [id, reg] = todo[pick];
      todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(pick));
      const auto& n = ast[id];
      if (n.is_var()) {
        if (auto bound = reg_of(n.var())) {
          instructions_.push_back({OpCode::Compare, reg, *bound, 0});
        } else {
          var_regs_.emplace_back(n.var(), reg);
        }
      } else if (best == 1) {
        instructions_.push_back({OpCode::Lookup, reg, static_cast<std::uint32_t>(terms_.size()), 0});
        terms_.push_back(ground_term(ast, id));
      } else {
        const auto out = num_regs_;
        num_regs_ += static_cast<std::uint32_t>(n.children().size());
        instructions_.push_back({OpCode::Bind, reg, static_cast<std::uint32_t>(bind_nodes_.size()), out});
        bind_nodes_.push_back(n.node());
        for (std::size_t c = 0; c < n.children().size(); ++c)
          todo.emplace_back(n.children()[c], out + static_cast<std::uint32_t>(c));
      }
    }
  }

  std::vector<TermEntry> ground_term(const PatternAst<L>& ast, Id root) const {
    std::vector<TermEntry> term;
    // Post-order walk with an explicit stack; entries reference earlier entries.
    std::vector<std::pair<Id, std::size_t>> stack{{root, 0}};
    std::vector<std::vector<Id>> child_entries(2);  // a sentinel for the root's parent, then the root
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const auto& n = ast[id];
      if (!n.is_var() && next < n.children().size()) {
        const Id child = n.children()[next++];
        stack.emplace_back(child, 0);
        child_entries.emplace_back();
        continue;
      }
      TermEntry entry;
      if (n.is_var()) {
        entry.reg = *reg_of(n.var());
      } else {
        L node = n.node();
        std::size_t i = 0;
        for (Id& c : node.children()) c = child_entries.back()[i++];
        entry.node = std::move(node);
      }
      term.push_back(std::move(entry));
      stack.pop_back();
      child_entries.pop_back();
      child_entries.back().push_back(Id(term.size() - 1));
    }
    return term;
  }

  std::vector<Instruction> instructions_;
  std::vector<L> bind_nodes_;
  std::vector<std::vector<TermEntry>> terms_;
  std::vector<std::pair<Var, std::uint32_t>> var_regs_;
  std::uint32_t num_regs_ = 1;
  std::optional<std::uint32_t> root_op_key_;
};

}  // namespace detail

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
  [[nodiscard]] std::optional<SearchMatches> search_eclass_with_limit(const EGraph<L, A>& egraph, Id id,
                                                                      std::size_t limit) const {
    require_clean(egraph);
    SearchMatches matches{egraph.find(id), {}};
    program_.run(egraph, matches.eclass, limit, [&]() -> Subst& { return matches.substs.emplace_back(); });
    if (matches.substs.empty()) return std::nullopt;
    return matches;
  }
  template <class A>
  [[nodiscard]] std::optional<SearchMatches> search_eclass(const EGraph<L, A>& egraph, Id id) const {
    return search_eclass_with_limit(egraph, id, static_cast<std::size_t>(-1));
  }

  /// Matches in every class (only classes having the root operator are visited), at most
  /// `limit` substitutions in all.
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search_with_limit(const EGraph<L, A>& egraph,
                                                             std::size_t limit) const {
    require_clean(egraph);
    std::vector<SearchMatches> result;
    auto visit = [&](Id cls) {
      SearchMatches matches{cls, {}};
      limit -= program_.run(egraph, cls, limit, [&]() -> Subst& { return matches.substs.emplace_back(); });
      if (!matches.substs.empty()) result.push_back(std::move(matches));
      return limit > 0;
    };
    if (auto key = program_.root_op_key()) {
      for (Id cls : egraph.classes_by_op(*key))
        if (!visit(cls)) break;
    } else {
      for (const auto& c : egraph.classes())
        if (!visit(c.id)) break;
    }
    return result;
  }
  template <class A>
  [[nodiscard]] std::vector<SearchMatches> search(const EGraph<L, A>& egraph) const {
    return search_with_limit(egraph, static_cast<std::size_t>(-1));
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
  template <class A>
  static void require_clean(const EGraph<L, A>& egraph) {
    if (!egraph.is_clean()) throw Error("cannot search a dirty e-graph: call rebuild() first");
  }

  PatternAst<L> ast_;
  std::vector<Var> vars_;
  detail::Program<L> program_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_PATTERN_H
