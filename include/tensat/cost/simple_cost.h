// SimpleCost: a per-op cost of flops plus bytes moved, the placeholder the analytical cost
// model (cost_model.h's RooflineCost) replaces. Weight-only and view ops are free.
#ifndef TENSAT_COST_SIMPLE_COST_H
#define TENSAT_COST_SIMPLE_COST_H

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Floating-point operations of `node` (multiply-adds count two).
[[nodiscard]] inline double node_flops(const TensorNode& node, const TensorInfo& out,
                                       Span<const TensorInfo* const> children) {
  const double n = static_cast<double>(out.elements());
  switch (node.op()) {
    case Op::EwAdd:
    case Op::EwMul:
    case Op::SMul:
    case Op::Relu:
      return n;
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::GeluErf:
    case Op::Silu:
    case Op::HardSwish:
    case Op::Exp:
      return 4 * n;
    case Op::BatchNorm:
      return 2 * n;
    case Op::Softmax:
      return 5 * n;
    case Op::LayerNorm:
      return 8 * n;
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMean:
      return static_cast<double>(children[1]->elements());
    case Op::MatMul: {
      const double k = static_cast<double>(children[1]->dims.back());
      return 2 * n * k + (children[0]->value != 0 ? n : 0);
    }
    case Op::Conv2d: {
      const Dims& w = children[5]->dims;
      return 2 * n * static_cast<double>(w[1] * w[2] * w[3]) + (children[3]->value != 0 ? n : 0);
    }
    case Op::WinoConv2d: {
      const Dims& u = children[3]->dims;
      const double tiles =
          static_cast<double>(out.dims[0] * ((out.dims[2] + 1) / 2) * ((out.dims[3] + 1) / 2));
      return 2 * 16 * tiles * static_cast<double>(u[1] * u[2]) +
             tiles * static_cast<double>(32 * u[2] + 24 * u[1]) + (children[1]->value != 0 ? n : 0);
    }
    case Op::PoolMax:
    case Op::PoolAvg:
      return n * static_cast<double>(children[0]->value * children[1]->value);
    case Op::EwSub:
    case Op::EwDiv:
      return n;
    case Op::EwPow:
    case Op::Sqrt:
    case Op::Erf:
      return 4 * n;
    case Op::Clip:
      return 2 * n;
    case Op::Resize:
      return children[0]->value == static_cast<std::int64_t>(ResizeInterp::Linear) ? 3 * n : 0;
    case Op::ConvTranspose: {
      const Dims& w = children[8]->dims;
      return 2 * static_cast<double>(children[7]->elements()) *
             static_cast<double>(w[1] * w[2] * w[3]);
    }
    default:
      return 0;
  }
}

/// True for ops that move no data at run time: `is_view_op` (op.h), the one list of them that
/// both cost models read.
[[nodiscard]] constexpr bool is_free_op(Op op) noexcept { return is_view_op(op); }

/// Cost of one node: flops + bytes read and written, in millions; zero for free ops, for
/// weight-only nodes (precomputed once, as TASO does) and for the terms of fused bodies. A
/// `fused` node costs its inputs' and output's bytes only: this placeholder cost does not look
/// into bodies (the roofline model, cost_model.h, does). `read_bytes`, when not empty, gives per
/// child the bytes reading it costs (a broadcast child: its source's), as in `op_work`.
[[nodiscard]] inline double simple_node_cost(const TensorNode& node, const TensorInfo& out,
                                             Span<const TensorInfo* const> children,
                                             Span<const double> read_bytes = {}) {
  if (is_free_op(node.op()) || out.weight_only || out.symbolic || out.kind != Kind::Tensor)
    return 0;
  double bytes = static_cast<double>(out.bytes());
  for (std::size_t i = 0; i < children.size(); ++i)
    if (children[i]->kind == Kind::Tensor && !children[i]->symbolic)
      bytes += read_bytes.empty() ? static_cast<double>(children[i]->bytes()) : read_bytes[i];
  return (node_flops(node, out, children) + bytes) * 1e-6;
}

/// Bytes a consumer reads for e-class `cls`: its size, or the smallest source of a `broadcast`
/// in it (a stride-0 view reads its source).
[[nodiscard]] inline double class_read_bytes(const TensorEGraph& egraph,
                                             const TensorEGraph::EClass& cls) {
  double bytes = static_cast<double>(cls.data.bytes());
  if (cls.data.kind != Kind::Tensor) return bytes;
  for (Id nid : cls.nodes) {
    const TensorNode& n = egraph.node(nid);
    if (n.op() == Op::Broadcast)
      bytes = std::min(bytes, static_cast<double>(egraph[n.children()[1]].data.bytes()));
  }
  return bytes;
}

/// `simple_node_cost` as an extraction cost `(node, eclass)` over a `TensorEGraph`.
class SimpleCost {
 public:
  explicit SimpleCost(const TensorEGraph& egraph) : egraph_(&egraph) {}
  double operator()(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    SmallVector<const TensorInfo*, 8> children;
    SmallVector<double, 8> reads;
    for (Id c : node.children()) {
      children.push_back(&(*egraph_)[c].data);
      reads.push_back(class_read_bytes(*egraph_, (*egraph_)[c]));
    }
    return simple_node_cost(node, cls.data, children, reads);
  }

 private:
  const TensorEGraph* egraph_;
};

/// The cost of a program: `node_cost(node, info, children)` summed over its nodes, each shared
/// node once (the DAG cost); a `node_cost` that also takes a `Span<const double>` gets per child
/// the bytes reading it costs (a broadcast's: its source's). Throws `ShapeError` for an
/// ill-typed program.
template <class NodeCost>
[[nodiscard]] double program_cost(const RecExpr<TensorNode>& program, NodeCost&& node_cost) {
  const std::vector<TensorInfo> infos = check_program(program);
  // A program read as a tree repeats shared subterms; pay for each distinct node once.
  std::unordered_map<TensorNode, Id, NodeHash> seen;
  std::vector<Id> canonical(program.size());
  std::vector<double> read_cost(program.size());  // what reading node i costs a consumer
  double total = 0;
  std::vector<const TensorInfo*> children;
  std::vector<double> reads;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& original = program[Id(i)];
    const TensorNode node = map_children(original, [&](Id c) { return canonical[c.index()]; });
    auto [it, inserted] = seen.emplace(node, Id(i));
    canonical[i] = it->second;
    read_cost[i] = original.op() == Op::Broadcast
                       ? read_cost[canonical[original.children()[1].index()].index()]
                       : static_cast<double>(infos[i].bytes());
    if (!inserted) continue;
    children.clear();
    reads.clear();
    for (Id c : original.children()) {
      children.push_back(&infos[c.index()]);
      reads.push_back(read_cost[c.index()]);
    }
    const Span<const TensorInfo* const> kids(children.data(), children.size());
    if constexpr (std::is_invocable_v<NodeCost&, const TensorNode&, const TensorInfo&,
                                      Span<const TensorInfo* const>, Span<const double>>)
      total += node_cost(original, infos[i], kids, Span<const double>(reads.data(), reads.size()));
    else
      total += node_cost(original, infos[i], kids);
  }
  return total;
}

/// `program_cost` with `simple_node_cost`.
[[nodiscard]] inline double simple_program_cost(const RecExpr<TensorNode>& program) {
  return program_cost(program, simple_node_cost);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_SIMPLE_COST_H
