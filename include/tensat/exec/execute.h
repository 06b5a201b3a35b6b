// execute: a program evaluated on concrete tensors by the Eigen reference executor; deterministic
// random inputs and weights (random_bindings); weight-only subgraphs evaluated ahead of time
// (precompute_weights, precompute_pair, on weight_values.h).
#ifndef TENSAT_EXEC_EXECUTE_H
#define TENSAT_EXEC_EXECUTE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/exec/detail/evaluator.h"
#include "tensat/exec/weight_values.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

namespace detail {

inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline std::string source_name(const RecExpr<TensorNode>& p, const TensorNode& node) {
  const TensorNode& n = p[node.children()[0]];
  return n.op() == Op::Num ? std::to_string(n.value()) : std::string(n.symbol().str());
}

}  // namespace detail

/// How `execute` runs a program.
struct ExecuteOptions {
  ExecuteOptions() = default;
  /// `ExecuteOptions{false}`: every fused body op by op.
  explicit ExecuteOptions(bool fused_loops_) : fused_loops(fused_loops_) {}

  /// Run each `fused` node as one loop over its output, chunk by chunk, with no intermediate
  /// materialized (a contraction in the body as one GEMM first); bodies with a term that has no
  /// loop form fall back to op-by-op evaluation. false: every body op by op, each intermediate a
  /// full tensor (the reference the loops are tested against).
  bool fused_loops = true;
  /// When set, called after each evaluated node (attributes and sources too) with the node's
  /// index in the program and the seconds its evaluation took, the allocation of its result
  /// included (freeing its operands after their last use is not). Two clock reads per node
  /// (tens of nanoseconds). `profile_program` builds on it.
  std::function<void(std::size_t node, double seconds)> on_node;
};

/// Evaluates `program` on `inputs` (every `input` and `weight` bound by name): each node once,
/// in order. Returns the root's value, or the values of a root `noop`'s children (nested
/// `noop`s flattened). Throws `MissingBindingError`, `BindingShapeError`, `ShapeError` (an
/// ill-typed program).
[[nodiscard]] inline std::vector<HostTensor> execute(const RecExpr<TensorNode>& program,
                                                     const Bindings& inputs,
                                                     const ExecuteOptions& options = {}) {
  if (program.size() == 0) throw ExecutionError("execute: empty program");
  detail::Evaluator ev(program, inputs, options.fused_loops, options.on_node);
  ev.run(false);
  return ev.outputs();
}

/// Deterministic random values for every `input` and `weight` of `program`, a function of the
/// seed and the name only (so two programs sharing names get the same values). Inputs are
/// uniform in [-1, 1]; weights of rank >= 2 are scaled by sqrt(3 / fan_in) (fan_in: dims[0] for
/// rank 2, the product of dims[1..] otherwise) so that deep models keep values of order one;
/// tensors feeding a `batchnorm` variance are made positive (|v| + 0.5).
[[nodiscard]] inline Bindings random_bindings(const RecExpr<TensorNode>& program,
                                              std::uint64_t seed = 1) {
  Bindings out;
  std::vector<bool> positive(program.size(), false);
  for (std::size_t i = 0; i < program.size(); ++i)
    if (program[Id(i)].op() == Op::BatchNorm) positive[program[Id(i)].children()[4].index()] = true;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& node = program[Id(i)];
    if (node.op() != Op::Input && node.op() != Op::Weight) continue;
    const std::string name = detail::source_name(program, node);
    if (out.count(name)) continue;
    const TensorNode& dtype_node = program[node.children()[1]];
    const DType dtype = dtype_from_name(dtype_node.symbol().str()).value_or(DType::F32);
    Dims dims;
    for (Id c : program[node.children()[2]].children()) dims.push_back(program[c].value());
    HostTensor t(dims, dtype);
    std::uint64_t state = seed * 0x2545f4914f6cdd1dull;
    for (char ch : name) state = (state ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
    float scale = 1.0f;
    if (node.op() == Op::Weight && dims.size() >= 2) {
      std::int64_t fan_in = dims[0];
      if (dims.size() > 2) {
        fan_in = 1;
        for (std::size_t k = 1; k < dims.size(); ++k) fan_in *= dims[k];
      }
      scale = std::sqrt(3.0f / static_cast<float>(fan_in));
    }
    for (float& v : t.data) {
      const double u = static_cast<double>(detail::splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
      v = static_cast<float>(2 * u - 1) * scale;
      if (positive[i]) v = std::fabs(v) + 0.5f;
    }
    round_tensor(t);
    out.emplace(name, std::move(t));
  }
  return out;
}

/// A program whose weight-only computed tensors (TASO's precomputable subgraphs) are replaced by
/// new weights `__pre<i>`, with the bindings holding their values.
struct PrecomputedProgram {
  RecExpr<TensorNode> program;
  Bindings bindings;
};

/// Evaluates the weight-only subgraphs of `program` once: every weight-only, computed tensor
/// read by a node that is not weight-only (or that is the root) becomes a `weight` leaf bound to
/// its value, stored in the layout of the node it replaces. Executing the result computes the
/// same outputs without the weight transforms.
[[nodiscard]] inline PrecomputedProgram precompute_weights(const RecExpr<TensorNode>& program,
                                                           const Bindings& bindings) {
  const std::vector<TensorInfo> infos = check_program(program);
  const std::size_t n = program.size();
  auto computed = [&](std::size_t i) {
    const Op op = program[Id(i)].op();
    return infos[i].is_tensor() && infos[i].weight_only && !infos[i].symbolic && !is_source(op);
  };
  std::vector<bool> frontier(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (infos[i].weight_only) continue;
    for (Id c : program[Id(i)].children())
      if (computed(c.index())) frontier[c.index()] = true;
  }
  if (computed(n - 1)) frontier[n - 1] = true;
  // Values of the frontier nodes (every weight-only node is evaluated once here, and nothing
  // else: the rest may read inputs that are not bound, or be opaque).
  const WeightValues values(program, bindings);
  PrecomputedProgram out;
  std::vector<Id> map(n, kInvalidId);
  std::vector<bool> needed(n, false);
  needed[n - 1] = true;
  for (std::size_t i = n; i-- > 0;)
    if (needed[i] && !frontier[i])
      for (Id c : program[Id(i)].children()) needed[c.index()] = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    if (frontier[i]) {
      const std::string name = fmt::format("__pre{}", i);
      const Id name_id = out.program.add(TensorNode::sym(name));
      const Id dtype_id = out.program.add(TensorNode::sym(dtype_name(infos[i].dtype)));
      std::vector<Id> dims;
      for (std::int64_t d : infos[i].dims) dims.push_back(out.program.add(TensorNode::num(d)));
      const Id ints =
          out.program.add(TensorNode(Op::Ints, Span<const Id>(dims.data(), dims.size())));
      // The new weight is stored as the node it replaces is (a channels_last relayout of a
      // weight stays channels_last: its readers require their operands' layouts to agree).
      map[i] =
          infos[i].layout == Layout::Contiguous
              ? out.program.add(TensorNode(Op::Weight, {name_id, dtype_id, ints}))
              : out.program.add(TensorNode(
                    Op::Weight, {name_id, dtype_id, ints,
                                 out.program.add(TensorNode::sym(layout_name(infos[i].layout)))}));
      out.bindings.emplace(name, *values.value(i));
      continue;
    }
    const TensorNode& node = program[Id(i)];
    if (node.op() == Op::Input || node.op() == Op::Weight) {
      const std::string name = detail::source_name(program, node);
      if (auto it = bindings.find(name); it != bindings.end())
        out.bindings.emplace(name, it->second);
    }
    map[i] = out.program.add(map_children(node, [&](Id c) { return map[c.index()]; }));
  }
  return out;
}

/// Two programs prepared to be timed against each other: each with its weight-only subgraphs
/// precomputed (`precompute_weights` of its `random_bindings`), and one `Bindings` for both. A
/// tensor both read under one name with the same value (every input, every weight the optimized
/// program reads unchanged) is then one buffer, so the kernels the two programs share read the
/// same memory: with a copy each, where the copies lie can favour one program for a whole
/// process, by as much as the change being measured (execute.md, `precompute_pair`).
struct PrecomputedPair {
  RecExpr<TensorNode> program[2];  ///< the original and the optimized program, precomputed
  Bindings bindings;               ///< the bindings of both
};

/// `PrecomputedPair` of `original` and `optimized` with `random_bindings(·, seed)`. A tensor of
/// the optimized program whose name the original's bindings hold with another value (a
/// precomputed weight `__pre<i>` of another node, or a name declared with another shape) is
/// renamed `<name>.1` (then `.2`, ...) in its program.
[[nodiscard]] inline PrecomputedPair precompute_pair(const RecExpr<TensorNode>& original,
                                                     const RecExpr<TensorNode>& optimized,
                                                     std::uint64_t seed = 1) {
  PrecomputedProgram pre[2] = {precompute_weights(original, random_bindings(original, seed)),
                               precompute_weights(optimized, random_bindings(optimized, seed))};
  PrecomputedPair out;
  out.bindings = std::move(pre[0].bindings);
  std::map<std::string, std::string> renamed;
  for (auto& [name, tensor] : pre[1].bindings) {
    auto it = out.bindings.find(name);
    if (it == out.bindings.end()) {
      out.bindings.emplace(name, std::move(tensor));
      continue;
    }
    const HostTensor& mine = it->second;
    if (mine.dtype == tensor.dtype && mine.dims == tensor.dims && mine.data == tensor.data)
      continue;  // shared
    std::string fresh;
    for (int k = 1; fresh.empty() || out.bindings.count(fresh) || pre[1].bindings.count(fresh); ++k)
      fresh = fmt::format("{}.{}", name, k);
    renamed.emplace(name, fresh);
    out.bindings.emplace(fresh, std::move(tensor));
  }
  out.program[0] = std::move(pre[0].program);
  for (std::size_t i = 0; i < pre[1].program.size(); ++i) {
    const TensorNode& node = pre[1].program[Id(i)];
    auto it = node.op() == Op::Sym ? renamed.find(std::string(node.symbol().str())) : renamed.end();
    out.program[1].add(it == renamed.end() ? node : TensorNode::sym(it->second));
  }
  return out;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_EXECUTE_H
