// Private: the e-matching virtual machine that patterns and multi-patterns compile to.
#ifndef TENSAT_DETAIL_EMATCH_PROGRAM_H
#define TENSAT_DETAIL_EMATCH_PROGRAM_H

#if !defined(TENSAT_CORE_PATTERN_H) && !defined(TENSAT_CORE_MULTIPATTERN_H)
#error "tensat/detail/ematch_program.h is private: include tensat/core/pattern.h"
#endif

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/pattern_ast.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/subst.h"
#include "tensat/detail/id_buffer.h"

namespace tensat {
inline namespace v0 {
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
    // Registers on the stack for all but huge patterns: no allocation per visited class.
    IdBuffer<32> regs(num_regs_);
    Machine<A, Yield> machine{*this, egraph, regs.data(), limit, 0, yield};
    machine.regs[0] = root;
    machine.step(0);
    return machine.produced;
  }

  /// The matches in class `id`, at most `limit`, or nothing. Throws `Error` if `egraph` is dirty.
  template <class A>
  std::optional<SearchMatches> search_eclass(const EGraph<L, A>& egraph, Id id, std::size_t limit) const {
    require_clean(egraph);
    SearchMatches matches{egraph.find(id), {}};
    run(egraph, matches.eclass, limit, [&]() -> Subst& { return matches.substs.emplace_back(); });
    if (matches.substs.empty()) return std::nullopt;
    return matches;
  }

  /// The matches in every candidate class (those with the root operator, or all classes for a
  /// variable root), at most `limit` substitutions in all. Throws `Error` if `egraph` is dirty.
  template <class A>
  std::vector<SearchMatches> search(const EGraph<L, A>& egraph, std::size_t limit) const {
    require_clean(egraph);
    std::vector<SearchMatches> result;
    auto visit = [&](Id cls) {
      SearchMatches matches{cls, {}};
      limit -= run(egraph, cls, limit, [&]() -> Subst& { return matches.substs.emplace_back(); });
      if (!matches.substs.empty()) result.push_back(std::move(matches));
      return limit > 0;
    };
    if (root_op_key_) {
      for (Id cls : egraph.classes_by_op(*root_op_key_))
        if (!visit(cls)) break;
    } else {
      for (const auto& c : egraph.classes())
        if (!visit(c.id)) break;
    }
    return result;
  }

  /// The operator key of the first pattern's root if it is an e-node (classes to visit can be
  /// taken from `classes_by_op`), else nothing (a variable root: every class is a candidate).
  [[nodiscard]] std::optional<std::uint32_t> root_op_key() const noexcept { return root_op_key_; }
  [[nodiscard]] std::size_t num_instructions() const noexcept { return instructions_.size(); }

 private:
  template <class A>
  static void require_clean(const EGraph<L, A>& egraph) {
    if (!egraph.is_clean()) throw Error("cannot search a dirty e-graph: call rebuild() first");
  }

  template <class A, class Yield>
  struct Machine {
    const Program& program;
    const EGraph<L, A>& egraph;
    Id* regs;
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
        const Id found = egraph.lookup_member_id(map_children(*entry.node, [&](Id c) { return ids[c.index()]; }));
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

  static std::size_t subterm_size(const PatternAst<L>& ast, Id id) {
    std::size_t size = 0;
    std::vector<Id> stack{id};
    while (!stack.empty()) {
      const auto& n = ast[stack.back()];
      stack.pop_back();
      ++size;
      for (Id c : n.children()) stack.push_back(c);
    }
    return size;
  }

  void compile_pattern(const PatternAst<L>& ast, std::uint32_t root_reg) {
    if (ast.empty()) throw Error("empty pattern");
    std::vector<std::pair<Id, std::uint32_t>> todo{{ast.root(), root_reg}};
    while (!todo.empty()) {
      // Variables first (free), then ground subterms (a lookup, no search), then the subterm
      // with the fewest unbound variables (the most constrained search), smaller ones first.
      std::size_t pick = 0;
      std::size_t best = static_cast<std::size_t>(-1);
      std::size_t best_size = 0;
      for (std::size_t i = 0; i < todo.size(); ++i) {
        const auto& n = ast[todo[i].first];
        const std::size_t score = n.is_var() ? 0 : count_free(ast, todo[i].first) + 1;
        const std::size_t size = subterm_size(ast, todo[i].first);
        if (score < best || (score == best && size < best_size)) {
          best = score;
          best_size = size;
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

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_EMATCH_PROGRAM_H
