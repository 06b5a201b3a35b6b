// Private: the e-matching virtual machine that patterns and multi-patterns compile to.
#ifndef TENSAT_DETAIL_EMATCH_PROGRAM_H
#define TENSAT_DETAIL_EMATCH_PROGRAM_H

#if !defined(TENSAT_CORE_PATTERN_H) && !defined(TENSAT_CORE_MULTIPATTERN_H)
#error "tensat/detail/ematch_program.h is private: include tensat/core/pattern.h"
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
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
  static Program compile(
      const std::vector<std::pair<std::optional<Var>, const PatternAst<L>*>>& patterns) {
    Program program;
    Compiler compiler(program);
    program.num_regs_ = 1;
    for (std::size_t k = 0; k < patterns.size(); ++k) {
      const auto& [var, ast] = patterns[k];
      std::uint32_t reg = 0;
      std::optional<std::uint32_t> bound = var ? compiler.reg_of(*var) : std::nullopt;
      if (k == 0) {
        if (var) compiler.bind(*var, 0);
        if (!ast->empty() && !(*ast)[ast->root()].is_var())
          program.root_op_key_ = (*ast)[ast->root()].node().op_key();
      } else if (bound) {
        reg = *bound;
      } else {
        reg = program.num_regs_++;
        program.instructions_.push_back({OpCode::Scan, 0, 0, reg});
        ++program.num_choices_;
        if (var) compiler.bind(*var, reg);
      }
      compiler.compile_pattern(*ast, reg);
    }
    return program;
  }

  /// Runs the program with register 0 = `root` until it has produced `limit` matches; for each,
  /// `yield()` returns an empty `Subst&` (e.g. a new vector element) that the match fills.
  /// Returns the number produced.
  ///
  /// Backtracking uses an explicit stack of choice points (one per open `Bind` or `Scan`), not
  /// the call stack, so a pattern of any depth is matched without exhausting the stack; the
  /// order of the matches is that of a depth-first search over the instructions.
  template <class A, class Yield>
  std::size_t run(const EGraph<L, A>& egraph, Id root, std::size_t limit, Yield&& yield) const {
    Scratch scratch(*this);
    return run(scratch, egraph, root, limit, yield);
  }

 private:
  struct Choice;
  /// Registers and choice points (at most one per Bind or Scan instruction is open at a time):
  /// on the stack for all but huge patterns, made once per search, not per visited class.
  class Scratch {
   public:
    explicit Scratch(const Program& program)
        : regs_(program.num_regs_), choices_(program.num_choices_) {}
    [[nodiscard]] Id* regs() noexcept { return regs_.data(); }
    [[nodiscard]] Choice* choices() noexcept { return choices_.data(); }

   private:
    IdBuffer<32> regs_;
    ScratchBuffer<Choice, 16> choices_;
  };

  template <class A, class Yield>
  std::size_t run(Scratch& scratch, const EGraph<L, A>& egraph, Id root, std::size_t limit,
                  Yield&& yield) const {
    if (limit == 0) return 0;
    Id* const regs = scratch.regs();
    Choice* const choices = scratch.choices();
    Choice* top = choices;  // one past the innermost open choice point
    regs[0] = root;
    std::size_t produced = 0;
    std::size_t pc = 0;
    const std::size_t end = instructions_.size();
    for (;;) {
      // Forward: run instructions until one fails or the program ends.
      for (; pc < end; ++pc) {
        const Instruction& ins = instructions_[pc];
        bool ok = true;
        switch (ins.op) {
          case OpCode::Bind: {
            const Span<const Id> nodes =
                egraph.nodes_with_op(regs[ins.reg], bind_nodes_[ins.arg].op_key());
            *top = {nodes.data(), nodes.data() + nodes.size(), 0, static_cast<std::uint32_t>(pc)};
            ok = next_choice(egraph, regs, *top);
            top += ok;
            break;
          }
          case OpCode::Scan:
            *top = {nullptr, nullptr, 0, static_cast<std::uint32_t>(pc)};
            ok = next_choice(egraph, regs, *top);
            top += ok;
            break;
          case OpCode::Compare:
            ok = egraph.find(regs[ins.reg]) == egraph.find(regs[ins.arg]);
            break;
          case OpCode::Lookup: {
            const Id found = lookup(egraph, regs, terms_[ins.arg]);
            ok = found != kInvalidId && found == egraph.find(regs[ins.reg]);
            break;
          }
        }
        if (!ok) break;
      }
      if (pc == end) {
        Subst& subst = yield();
        for (const auto& [var, reg] : var_regs_) subst.push(var, egraph.find(regs[reg]));
        if (++produced >= limit) return produced;
      }
      // Backtrack to the innermost choice point with a candidate left.
      while (top != choices && !next_choice(egraph, regs, top[-1])) --top;
      if (top == choices) return produced;
      pc = top[-1].pc + 1;
    }
  }

 public:
  /// The matches in class `id`, at most `limit`, or nothing. Throws `Error` if `egraph` is dirty.
  template <class A>
  std::optional<SearchMatches> search_eclass(const EGraph<L, A>& egraph, Id id,
                                             std::size_t limit) const {
    require_clean(egraph);
    SearchMatches matches{egraph.find(id), {}};
    Scratch scratch(*this);
    run(scratch, egraph, matches.eclass, limit,
        [&]() -> Subst& { return matches.substs.emplace_back(); });
    if (matches.substs.empty()) return std::nullopt;
    return matches;
  }

  /// The matches in every candidate class (those with the root operator, or all classes for a
  /// variable root), at most `limit` substitutions in all. Throws `Error` if `egraph` is dirty.
  template <class A>
  std::vector<SearchMatches> search(const EGraph<L, A>& egraph, std::size_t limit) const {
    if (root_op_key_) return search_classes(egraph, egraph.classes_by_op(*root_op_key_), limit);
    require_clean(egraph);
    std::vector<SearchMatches> result;
    Scratch scratch(*this);
    for (const auto& c : egraph.classes())
      if (!visit(scratch, egraph, c.id, limit, result)) break;
    return result;
  }

  /// The classes `search` visits, in its order, when the root is an e-node (`classes_by_op`);
  /// nothing for a variable root.
  template <class A>
  [[nodiscard]] std::optional<Span<const Id>> candidate_classes(const EGraph<L, A>& egraph) const {
    if (!root_op_key_) return std::nullopt;
    return egraph.classes_by_op(*root_op_key_);
  }

  /// The matches in `classes`, visited in order, at most `limit` substitutions in all: on a
  /// range of `candidate_classes`, what `search` finds there. Throws `Error` if `egraph` is dirty.
  template <class A>
  std::vector<SearchMatches> search_classes(const EGraph<L, A>& egraph, Span<const Id> classes,
                                            std::size_t limit) const {
    require_clean(egraph);
    std::vector<SearchMatches> result;
    Scratch scratch(*this);
    for (Id cls : classes)
      if (!visit(scratch, egraph, cls, limit, result)) break;
    return result;
  }

  /// The operator key of the first pattern's root if it is an e-node (classes to visit can be
  /// taken from `classes_by_op`), else nothing (a variable root: every class is a candidate).
  [[nodiscard]] std::optional<std::uint32_t> root_op_key() const noexcept { return root_op_key_; }
  [[nodiscard]] std::size_t num_instructions() const noexcept { return instructions_.size(); }

 private:
  /// Searches class `cls` for at most `limit` matches, appending them to `result`; false once
  /// the limit is used up.
  template <class A>
  bool visit(Scratch& scratch, const EGraph<L, A>& egraph, Id cls, std::size_t& limit,
             std::vector<SearchMatches>& result) const {
    if (limit == 0) return false;
    SearchMatches matches{cls, {}};
    limit -=
        run(scratch, egraph, cls, limit, [&]() -> Subst& { return matches.substs.emplace_back(); });
    if (!matches.substs.empty()) result.push_back(std::move(matches));
    return limit > 0;
  }

  template <class A>
  static void require_clean(const EGraph<L, A>& egraph) {
    if (!egraph.is_clean()) throw Error("cannot search a dirty e-graph: call rebuild() first");
  }

  /// An open `Bind` (candidates: the member ids `[it, end)`) or `Scan` (`it` null, candidates:
  /// the classes from index `cls` on).
  struct Choice {
    const Id* it;
    const Id* end;
    std::size_t cls;
    std::uint32_t pc;
  };

  /// Takes the next candidate of `choice` that fits, writing its registers; false if none is left.
  template <class A>
  bool next_choice(const EGraph<L, A>& egraph, Id* regs, Choice& choice) const {
    const Instruction& ins = instructions_[choice.pc];
    if (!choice.it) {
      if (choice.cls == egraph.classes().size()) return false;
      regs[ins.out] = egraph.classes()[choice.cls++].id;
      return true;
    }
    const L& pattern = bind_nodes_[ins.arg];
    while (choice.it != choice.end) {
      const L& node = egraph.node(*choice.it++);
      if (!pattern.matches(node)) continue;
      std::uint32_t out = ins.out;
      for (Id child : node.children()) regs[out++] = child;
      return true;
    }
    return false;
  }

  template <class A>
  static Id lookup(const EGraph<L, A>& egraph, const Id* regs, const std::vector<TermEntry>& term) {
    SmallVector<Id, 8> ids;
    for (const TermEntry& entry : term) {
      if (!entry.node) {
        ids.push_back(egraph.find(regs[entry.reg]));
        continue;
      }
      const Id found =
          egraph.lookup_member_id(map_children(*entry.node, [&](Id c) { return ids[c.index()]; }));
      if (found == kInvalidId) return kInvalidId;
      ids.push_back(found);
    }
    return ids.back();
  }

  class Compiler;

  std::vector<Instruction> instructions_;
  std::vector<L> bind_nodes_;
  std::vector<std::vector<TermEntry>> terms_;
  std::vector<std::pair<Var, std::uint32_t>> var_regs_;
  std::uint32_t num_regs_ = 1;
  std::uint32_t num_choices_ = 0;  // Bind and Scan instructions
  std::optional<std::uint32_t> root_op_key_;
};

/// Compiles patterns into a `Program`, in time O(n log n) for patterns of n nodes (counted as a
/// tree: a shared subterm counts once per occurrence).
///
/// The sub-patterns still to match (the "todo" list) are taken in this order: variables (free),
/// then ground subterms (one `Lookup`, no search), then the subterm with the fewest variables not
/// bound yet (the most constrained search), then the smaller one, then the one listed first.
/// Distinct variables are counted up to `kTrackedVars`; a subterm with more ranks as having
/// `kTrackedVars + 1` free ones, which only affects the order of large patterns, never the matches.
template <class L>
class Program<L>::Compiler {
 public:
  static constexpr std::size_t kTrackedVars = 16;

  explicit Compiler(Program& program) : program_(program) {}

  [[nodiscard]] std::optional<std::uint32_t> reg_of(Var var) const {
    const auto it = regs_.find(var);
    if (it == regs_.end()) return std::nullopt;
    return it->second;
  }
  void bind(Var var, std::uint32_t reg) {
    program_.var_regs_.emplace_back(var, reg);
    regs_.emplace(var, reg);
  }

  void compile_pattern(const PatternAst<L>& ast, std::uint32_t root_reg) {
    if (ast.empty()) throw Error("empty pattern");
    summarize(ast);
    items_.clear();
    queue_.clear();
    watchers_.assign(vars_.size(), {});
    push(ast, ast.root(), root_reg);
    while (!queue_.empty()) {
      const auto [score, size, seq] = *queue_.begin();
      queue_.erase(queue_.begin());
      items_[seq].queued = false;
      const Id id = items_[seq].id;
      const std::uint32_t reg = items_[seq].reg;
      const auto& n = ast[id];
      if (n.is_var()) {
        if (auto bound = reg_of(n.var())) {
          program_.instructions_.push_back({OpCode::Compare, reg, *bound, 0});
        } else {
          bind(n.var(), reg);
          now_bound(local_var_[id.index()]);
        }
      } else if (score == 1) {
        program_.instructions_.push_back(
            {OpCode::Lookup, reg, static_cast<std::uint32_t>(program_.terms_.size()), 0});
        program_.terms_.push_back(ground_term(ast, id));
      } else {
        const auto out = program_.num_regs_;
        program_.num_regs_ += static_cast<std::uint32_t>(n.children().size());
        program_.instructions_.push_back(
            {OpCode::Bind, reg, static_cast<std::uint32_t>(program_.bind_nodes_.size()), out});
        program_.bind_nodes_.push_back(n.node());
        ++program_.num_choices_;
        for (std::size_t c = 0; c < n.children().size(); ++c)
          push(ast, n.children()[c], out + static_cast<std::uint32_t>(c));
      }
    }
  }

 private:
  static constexpr std::uint8_t kSaturated = kTrackedVars + 1;

  struct Item {
    Id id;
    std::uint32_t reg;
    std::size_t score;
    bool queued;
  };
  using Key = std::tuple<std::size_t, std::size_t, std::size_t>;  // (score, size, seq)

  // Per node, bottom-up (children precede parents in a RecExpr): the tree size (saturating) and
  // the sorted local indices of its distinct variables, at most kTrackedVars of them.
  void summarize(const PatternAst<L>& ast) {
    const std::size_t n = ast.size();
    vars_.clear();
    local_var_.assign(n, 0);
    sizes_.assign(n, 0);
    var_counts_.assign(n, 0);
    var_lists_.assign(n * kTrackedVars, 0);
    std::map<Var, std::uint32_t> local;
    std::vector<std::uint32_t> merged;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& node = ast[Id(i)];
      if (node.is_var()) {
        const auto [it, fresh] =
            local.emplace(node.var(), static_cast<std::uint32_t>(vars_.size()));
        if (fresh) vars_.push_back(node.var());
        local_var_[i] = it->second;
        sizes_[i] = 1;
        var_counts_[i] = 1;
        var_lists_[i * kTrackedVars] = it->second;
        continue;
      }
      std::size_t size = 1;
      bool saturated = false;
      merged.clear();
      for (Id c : node.children()) {
        const std::size_t k = c.index();
        size = sizes_[k] > std::numeric_limits<std::size_t>::max() - size
                   ? std::numeric_limits<std::size_t>::max()
                   : size + sizes_[k];
        if (var_counts_[k] == kSaturated) saturated = true;
        if (saturated) continue;
        merged.insert(
            merged.end(), var_lists_.begin() + static_cast<std::ptrdiff_t>(k * kTrackedVars),
            var_lists_.begin() + static_cast<std::ptrdiff_t>(k * kTrackedVars + var_counts_[k]));
      }
      sizes_[i] = size;
      std::sort(merged.begin(), merged.end());
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      if (saturated || merged.size() > kTrackedVars) {
        var_counts_[i] = kSaturated;
      } else {
        var_counts_[i] = static_cast<std::uint8_t>(merged.size());
        std::copy(merged.begin(), merged.end(),
                  var_lists_.begin() + static_cast<std::ptrdiff_t>(i * kTrackedVars));
      }
    }
    bound_.assign(vars_.size(), false);
    for (std::size_t v = 0; v < vars_.size(); ++v) bound_[v] = reg_of(vars_[v]).has_value();
  }

  void push(const PatternAst<L>& ast, Id id, std::uint32_t reg) {
    const std::size_t i = id.index();
    const std::size_t seq = items_.size();
    std::size_t score = 0;
    if (!ast[id].is_var()) {
      if (var_counts_[i] == kSaturated) {
        score = kTrackedVars + 2;
      } else {
        score = 1;
        for (std::size_t k = 0; k < var_counts_[i]; ++k) {
          const std::uint32_t v = var_lists_[i * kTrackedVars + k];
          if (bound_[v]) continue;
          ++score;
          watchers_[v].push_back(seq);
        }
      }
    }
    items_.push_back({id, reg, score, true});
    queue_.insert({score, sizes_[i], seq});
  }

  // Local variable `v` was just bound: every queued subterm containing it has one free less.
  void now_bound(std::uint32_t v) {
    bound_[v] = true;
    for (std::size_t seq : watchers_[v]) {
      Item& item = items_[seq];
      if (!item.queued) continue;
      const std::size_t size = sizes_[item.id.index()];
      queue_.erase({item.score, size, seq});
      --item.score;
      queue_.insert({item.score, size, seq});
    }
    watchers_[v].clear();
    watchers_[v].shrink_to_fit();
  }

  // The ground subterm at `root` as post-order entries (an explicit stack: no recursion).
  std::vector<TermEntry> ground_term(const PatternAst<L>& ast, Id root) const {
    std::vector<TermEntry> term;
    std::vector<std::pair<Id, std::size_t>> stack{{root, 0}};
    std::vector<std::vector<Id>> child_entries(
        2);  // a sentinel for the root's parent, then the root
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

  Program& program_;
  std::map<Var, std::uint32_t> regs_;  // every variable bound so far, all patterns
  // Per compile_pattern call:
  std::vector<Var> vars_;                 // local index -> variable
  std::vector<bool> bound_;               // by local index
  std::vector<std::uint32_t> local_var_;  // by node: its local index (variables only)
  std::vector<std::size_t> sizes_;
  std::vector<std::uint8_t> var_counts_;  // by node: distinct variables, or kSaturated
  std::vector<std::uint32_t> var_lists_;  // by node: kTrackedVars slots
  std::vector<Item> items_;               // by seq
  std::set<Key> queue_;
  std::vector<std::vector<std::size_t>>
      watchers_;  // by local index: seqs of queued items containing it
};

}  // namespace detail

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_EMATCH_PROGRAM_H
