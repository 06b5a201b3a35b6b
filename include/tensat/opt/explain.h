// explain_program: why each operator of an optimized program equals what the original computed,
// as checked chains of rules (OptimizeOptions::explain, tensat-opt --explain).
#ifndef TENSAT_OPT_EXPLAIN_H
#define TENSAT_OPT_EXPLAIN_H

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/explain.h"
#include "tensat/core/proof_check.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/checked_rewrite.h"
#include "tensat/tensor/node.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// An operator of the optimized program that the original program does not have.
struct NewOperator {
  Id node;  ///< its index in the optimized program
  /// The original program's node it equals (same e-class), if the original computed that
  /// value; its chain says how one became the other.
  std::optional<Id> original;
  /// Otherwise, the optimized node (a consumer of this one, transitively) whose chain brought
  /// it in: a rule's right side built it as a new subterm.
  std::optional<Id> inside;
  /// Its goal in `ProgramExplanation::proof` (with `original`), else `TreeExplanation::kNone`.
  std::size_t goal = TreeExplanation<TensorNode>::kNone;
};

/// Why an optimized program computes what the original did: one tree explanation with a goal
/// per new operator (original node = new node), and its check.
struct ProgramExplanation {
  TreeExplanation<TensorNode> proof;
  std::vector<NewOperator> operators;
  /// `check_tree_proof` of `proof` against the rules: pattern rules replayed from their
  /// patterns; the steps of rules with a C++ applier or a multi-pattern are accepted as the
  /// rule's own checked application (`trusted_steps`), and any other step fails.
  ProofCheck check;
  /// The names of the rules whose steps were accepted that way, each once.
  std::vector<std::string> trusted_rules;

  /// The chain of operator `k` (`operators[k]`): the rules that rewrote the operator itself,
  /// with `=>` or `<=`, in proof order, then how many more rewrote its operands ("+ 9 steps
  /// in the operands"; those operands' own lines say which).
  [[nodiscard]] std::string chain_string(std::size_t k) const {
    const NewOperator& op = operators.at(k);
    if (op.goal == TreeExplanation<TensorNode>::kNone) return {};
    std::string s;
    const auto local = proof.local_chain(op.goal);
    for (const auto& [rule, forward] : local) {
      if (!s.empty()) s += ", ";
      s += fmt::format("{} {}", rule, forward ? "=>" : "<=");
    }
    const std::size_t inner = proof.chain(op.goal).size() - local.size();
    if (inner > 0) s += fmt::format("{}+ {} in the operands", s.empty() ? "" : "; ", inner);
    return s;
  }
};

/// The judge `explain_program` checks with: a trusted step is accepted when its reason names
/// one of `rules` (a step of a rule whose applier is C++ or whose left side is a multi-pattern,
/// which the rule checked when it applied), and recorded in `used`.
[[nodiscard]] inline TreeTrustedStep<TensorNode> rule_steps_judge(
    const std::vector<TensorRewrite>& rules, std::vector<std::string>* used = nullptr) {
  return [&rules, used](std::string_view reason, const TreeExplanation<TensorNode>&, Id, Id) {
    for (const TensorRewrite& rule : rules)
      if (rule.name() == reason) {
        if (used && std::find(used->begin(), used->end(), reason) == used->end())
          used->emplace_back(reason);
        return true;
      }
    return false;
  };
}

/// Explains `optimized` against `original`, both in `egraph` (explanations on, the e-graph
/// that saturation and extraction used), with `rules` the rules it ran. Throws `Error` when
/// explanations are off or a program is not in the e-graph.
inline ProgramExplanation explain_program(TensorEGraph& egraph, const RecExpr<TensorNode>& original,
                                          const RecExpr<TensorNode>& optimized,
                                          const std::vector<TensorRewrite>& rules) {
  if (!egraph.explanations_enabled()) throw Error("explain_program: explanations are off");
  egraph.rebuild();
  // Each node's class, bottom-up; and the original's nodes as the e-graph holds them.
  const auto classes = [&](const RecExpr<TensorNode>& p) {
    std::vector<Id> ids;
    for (const TensorNode& n : p) {
      const auto found = egraph.lookup(map_children(n, [&](Id c) { return ids[c.index()]; }));
      if (!found) throw Error("explain_program: a program is not in the e-graph");
      ids.push_back(egraph.find(*found));
    }
    return ids;
  };
  const std::vector<Id> before = classes(original), after = classes(optimized);
  std::unordered_set<TensorNode, NodeHash> original_nodes;
  std::unordered_map<std::uint32_t, Id> original_of_class;
  for (std::size_t j = 0; j < original.size(); ++j) {
    original_nodes.insert(map_children(original[Id(j)], [&](Id c) { return before[c.index()]; }));
    original_of_class.emplace(before[j].index(), Id(j));
  }

  ProgramExplanation out;
  std::vector<std::pair<Id, Id>> pairs;
  std::vector<std::vector<Id>> consumers(optimized.size());
  for (std::size_t i = 0; i < optimized.size(); ++i)
    for (Id c : optimized[Id(i)].children()) consumers[c.index()].push_back(Id(i));
  for (std::size_t i = 0; i < optimized.size(); ++i) {
    const TensorNode& n = optimized[Id(i)];
    if (!is_operator(n.op())) continue;
    if (original_nodes.count(map_children(n, [&](Id c) { return after[c.index()]; }))) continue;
    NewOperator op;
    op.node = Id(i);
    if (auto it = original_of_class.find(after[i].index()); it != original_of_class.end()) {
      op.original = it->second;
      op.goal = pairs.size();
      pairs.emplace_back(it->second, Id(i));
    }
    out.operators.push_back(op);
  }
  // A new value: the nearest consumer (breadth first) that equals an original node.
  for (NewOperator& op : out.operators) {
    if (op.original) continue;
    std::vector<Id> frontier{op.node};
    std::unordered_set<std::size_t> seen{op.node.index()};
    for (std::size_t k = 0; k < frontier.size() && !op.inside; ++k)
      for (Id c : consumers[frontier[k].index()]) {
        if (!seen.insert(c.index()).second) continue;
        if (original_of_class.count(after[c.index()].index())) {
          op.inside = c;
          break;
        }
        frontier.push_back(c);
      }
  }
  out.proof = egraph.explain_equivalences_tree(original, optimized, pairs);
  out.check = check_tree_proof(out.proof, rules, rule_steps_judge(rules, &out.trusted_rules));
  std::sort(out.trusted_rules.begin(), out.trusted_rules.end());
  return out;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_OPT_EXPLAIN_H
