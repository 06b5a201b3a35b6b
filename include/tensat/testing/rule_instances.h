// Concrete instances of a rule: programs that its left-hand side matches, found by a seeded
// search over small tensors and attributes, with whether the rule applied (its checked
// right-hand side was valid) or was rejected. Tests use it to show every rule fires; the
// reference executor checks each rule numerically on such instances.
#ifndef TENSAT_TESTING_RULE_INSTANCES_H
#define TENSAT_TESTING_RULE_INSTANCES_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/multipattern.h"
#include "tensat/core/pattern.h"
#include "tensat/tensor/checked_rewrite.h"
#include "tensat/core/sexpr.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// One instance: the left-hand side as a program (a `noop` of the clauses for a multi-pattern
/// rule), the text each variable stood for, and whether applying the rule changed the e-graph.
struct RuleInstance {
  RecExpr<TensorNode> program;
  std::map<std::string, std::string> bindings;
  bool applied = false;
};

struct RuleInstanceSearch {
  std::size_t wanted = 3;           ///< stop after this many applied instances...
  std::size_t wanted_rejected = 3;  ///< ...and this many rejected ones (or at max_tries)
  std::size_t max_tries = 5'000;
  std::uint64_t seed = 1;
};

namespace detail {

/// What kind of value a child position takes, with plausible values for attributes.
inline std::vector<std::string> candidates_for(Op parent, std::size_t child) {
  auto ints = [](std::initializer_list<int> v) {
    std::vector<std::string> out;
    for (int x : v) out.push_back(std::to_string(x));
    return out;
  };
  switch (parent) {
    case Op::MatMul:
      if (child == 0) return ints({0, 1, 2, 3});
      break;
    case Op::Conv2d:
      if (child <= 1) return ints({1, 2});
      if (child == 2) return ints({0, 1});
      if (child == 3) return ints({0, 1, 2, 3});
      break;
    case Op::PoolMax:
    case Op::PoolAvg:
      if (child <= 1) return ints({1, 2, 3});
      if (child <= 3) return ints({1, 2});
      if (child == 4) return ints({0, 1});
      if (child == 5) return ints({0, 2});
      break;
    case Op::Concat:
    case Op::Softmax:
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMean:
      if (child == 0) return ints({0, 1, 2, 3});
      break;
    case Op::Split:
      if (child == 0) return ints({0, 1, 2, 3});
      if (child == 1) return ints({1, 2, 4});
      break;
    case Op::Slice:
    case Op::Pad:
      if (child == 0) return ints({0, 1});
      if (child <= 2) return ints({0, 1, 2, 4});
      break;
    case Op::Merge:
      if (child == 0) return ints({2, 4});
      if (child == 1) return ints({2});
      break;
    case Op::Relayout:
      if (child == 0) return {"contiguous", "channels_last"};
      break;
    case Op::BatchNorm:  // per-channel parameters, for the channel counts of the image worlds
      if (child >= 1) {
        // One name per parameter, so that an instance tells scale, bias, mean and var apart; 4
        // channels (the most tensors of the worlds have) thrice as often, so that the four agree
        // with the normalized tensor often enough.
        const char* const role[] = {"", "scale", "bias", "mean", "var"};
        std::vector<std::string> out;
        for (int c : {4, 4, 4, 8, 32})
          out.push_back(fmt::format("(weight bn_{}{} f32 (ints {}))", role[child], c, c));
        return out;
      }
      break;
    case Op::Transpose:
    case Op::Reshape:
    case Op::Broadcast:  // permutations (identities too) and shapes, of the worlds' ranks
      if (child == 0)
        return {"(ints 1 0)", "(ints 0 2 1)", "(ints 1 0 2)", "(ints 16)",   "(ints 2 8)",
                "(ints 4 4)", "(ints 2 4 4)", "(ints 0 1)",   "(ints 0 1 2)"};
      break;
    default:
      break;
  }
  return {};  // a tensor: drawn from the try's world (see `tensor_worlds`)
}

/// Tensors to bind, in "worlds" of compatible shapes (matrices, batched matrices, images with
/// their kernels), several of each shape, so that "same shape" constraints hold often. Each try
/// draws all its tensors from one world.
inline const std::vector<std::vector<std::string>>& tensor_worlds() {
  static const std::vector<std::vector<std::string>> worlds{
      {"(input a f32 (ints 4 4))", "(input b f32 (ints 4 4))", "(weight c f32 (ints 4 4))",
       "(input d f32 (ints 4 8))", "(weight e f32 (ints 8 4))", "(weight s f32 (ints 1))",
       "(input u f32 (ints 4))"},
      {"(input f f32 (ints 2 4 4))", "(input g f32 (ints 2 4 4))", "(weight p f32 (ints 2 4 4))",
       "(input q f32 (ints 2 4 8))", "(input r f32 (ints 2 8 4))", "(input t f32 (ints 1))"},
      {"(input h f32 (ints 1 4 8 8))", "(input i f32 (ints 1 4 8 8))",
       "(input j f32 (ints 1 8 8 8))", "(weight k f32 (ints 4 4 3 3))",
       "(weight l f32 (ints 4 4 3 3))", "(weight m f32 (ints 4 4 1 1))",
       "(weight n f32 (ints 8 4 3 3))", "(weight o f32 (ints 4 2 3 3))", "(weight s f32 (ints 1))",
       "(input z f32 (ints 1 4 8 8) channels_last)", "(input zc f32 (ints 1 8 8 8) channels_last)"},
      {"(input v f32 (ints 1 32 4 4))", "(weight w f32 (ints 32 1 3 3))",
       "(weight x f32 (ints 32 2 3 3))", "(input y f32 (ints 1 32 4 4))",
       "(input yc f32 (ints 1 32 4 4) channels_last)"},
  };
  return worlds;
}

/// Whether every node of `program` is well-typed (no exceptions: most tries are not).
inline bool well_typed(const RecExpr<TensorNode>& program) {
  std::vector<TensorInfo> infos(program.size());
  std::vector<const TensorInfo*> children;
  for (std::size_t i = 0; i < program.size(); ++i) {
    children.clear();
    for (Id c : program[Id(i)].children()) children.push_back(&infos[c.index()]);
    if (!infer(program[Id(i)], Span<const TensorInfo* const>(children.data(), children.size()),
               infos[i]))
      return false;
  }
  return true;
}

/// The clauses of a searcher's text: one pattern, or `?v = pattern` clauses.
inline std::vector<PatternAst<TensorNode>> lhs_patterns(const std::string& text) {
  std::vector<PatternAst<TensorNode>> out;
  if (text.find('=') == std::string::npos) {
    out.push_back(Pattern<TensorNode>(text).ast());
    return out;
  }
  const MultiPattern<TensorNode> multi(text);
  for (const auto& clause : multi.clauses()) out.push_back(clause.second);
  return out;
}

inline std::string print_with(const PatternAst<TensorNode>& ast, Id id,
                              const std::map<std::string, std::string>& bind) {
  const auto& n = ast[id];
  if (n.is_var()) return bind.at(std::string(n.var().name()));
  if (n.children().size() == 0) return n.node().op_name();
  std::string out = "(" + n.node().op_name();
  for (Id c : n.children()) out += " " + print_with(ast, c, bind);
  return out + ")";
}

}  // namespace detail

/// Searches programs matched by `rule`'s left-hand side (a `Pattern` or `MultiPattern`
/// searcher) by binding its variables to small tensors and attributes at random (seeded), and
/// applies the rule to each well-typed one. Returns the instances found, applied ones first.
inline std::vector<RuleInstance> find_rule_instances(const TensorRewrite& rule,
                                                     const RuleInstanceSearch& search = {}) {
  const std::vector<PatternAst<TensorNode>> clauses =
      detail::lhs_patterns(rule.searcher().to_string());
  // Candidate texts per variable, from the first position it appears in.
  std::map<std::string, std::vector<std::string>> pools;
  for (const auto& ast : clauses)
    for (const auto& n : ast) {
      if (n.is_var()) continue;
      const auto children = n.children();
      for (std::size_t i = 0; i < children.size(); ++i) {
        const auto& child = ast[children[i]];
        if (child.is_var())
          pools.emplace(std::string(child.var().name()), detail::candidates_for(n.node().op(), i));
      }
    }
  for (const auto& ast : clauses)  // a bare-variable pattern (never in practice) gets tensors
    for (const auto& n : ast)
      if (n.is_var())
        pools.emplace(std::string(n.var().name()), detail::candidates_for(Op::Noop, 0));

  std::mt19937_64 rng(search.seed);
  std::vector<RuleInstance> applied, rejected;
  for (std::size_t attempt = 0; attempt < search.max_tries; ++attempt) {
    if (applied.size() >= search.wanted && rejected.size() >= search.wanted_rejected) break;
    std::map<std::string, std::string> bind;
    const auto& world = detail::tensor_worlds()[rng() % detail::tensor_worlds().size()];
    for (const auto& [var, pool] : pools)
      bind[var] = pool.empty() ? world[rng() % world.size()] : pool[rng() % pool.size()];
    std::string text;
    if (clauses.size() == 1) {
      text = detail::print_with(clauses[0], clauses[0].root(), bind);
    } else {
      text = "(noop";
      for (const auto& ast : clauses) text += " " + detail::print_with(ast, ast.root(), bind);
      text += ")";
    }
    RuleInstance instance;
    instance.program = parse_expr<TensorNode>(text);
    if (!detail::well_typed(instance.program)) continue;
    TensorEGraph egraph;
    egraph.add_expr(instance.program);
    egraph.rebuild();
    const auto matches = rule.search(egraph);
    if (matches.empty()) continue;
    instance.applied = !rule.apply(egraph, matches).empty();
    egraph.rebuild();
    instance.bindings = std::move(bind);
    auto& bucket = instance.applied ? applied : rejected;
    const bool duplicate =
        std::any_of(bucket.begin(), bucket.end(),
                    [&](const RuleInstance& other) { return other.program == instance.program; });
    if (duplicate) continue;
    if (bucket.size() < (instance.applied ? search.wanted : search.wanted_rejected))
      bucket.push_back(std::move(instance));
  }
  for (auto& r : rejected) applied.push_back(std::move(r));
  return applied;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TESTING_RULE_INSTANCES_H
