// Squeezing a unit batch axis: the same program with its [1, a, b] activations computed as
// [a, b], so that the products between them are plain two-dimensional ones.
#ifndef TENSAT_TENSOR_SQUEEZE_BATCH_H
#define TENSAT_TENSOR_SQUEEZE_BATCH_H

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tensat/core/id.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/segment.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// `squeeze_unit_batch`'s result: the program, and what changed.
struct SqueezedProgram {
  RecExpr<TensorNode> program;
  std::size_t squeezed = 0;  ///< activations computed without their unit batch axis
  std::size_t removed = 0;   ///< the program's reshapes gone (flattenings around products)
  std::size_t boundary = 0;  ///< reshapes added where squeezed and unsqueezed values meet
  [[nodiscard]] bool changed() const noexcept { return squeezed > 0; }
};

/// `program` with each activation of shape [1, a, b] computed as [a, b] where the operators
/// allow it, the way a program written for one sample would be: elementwise operators, layer
/// norms, softmax over a non-batch axis and reshapes. A batch-1 transformer imported from ONNX
/// flattens its activations [1, S, H] to [S, H] around every product and reshapes them back;
/// squeezed, those reshapes vanish, and a runtime sees two-dimensional products with their bias
/// adds (onnxruntime joins those into Gemm without the Reshapes it inserts around a 3-d
/// MatMul). Values meet their other operands through reshapes: a broadcast of a bias is
/// broadcast to [a, b] instead, a weight [1, a, b] is reshaped (a weight-only node), and an
/// operator that needs the batch axis (a gather, a concat, an output) gets a reshape back. The
/// outputs keep their shapes; the values computed are the same.
///
/// Applied only when the result has fewer reshapes of activations than `program` (`removed >
/// boundary`); otherwise the program comes back unchanged (`changed()` false) and the counts are
/// 0. Throws `ShapeError` for an ill-typed program.
[[nodiscard]] inline SqueezedProgram squeeze_unit_batch(const RecExpr<TensorNode>& program) {
  SqueezedProgram result;
  if (program.empty()) {
    result.program = program;
    return result;
  }
  const std::vector<TensorInfo> infos = check_program(program);
  const std::size_t n = program.size();
  RecExpr<TensorNode> out;
  std::unordered_map<TensorNode, Id, NodeHash> seen;
  bool inserted = false;  // whether the last `add` made a new node
  const auto add = [&](TensorNode node) {
    auto [it, fresh] = seen.emplace(node, kInvalidId);
    if (fresh) it->second = out.add(std::move(node));
    inserted = fresh;
    return it->second;
  };
  const auto ints = [&](const Dims& dims) {
    std::vector<Id> children;
    for (std::int64_t d : dims) children.push_back(add(TensorNode::num(d)));
    return add(TensorNode(Op::Ints, Span<const Id>(children.data(), children.size())));
  };
  const auto reshape = [&](const Dims& dims, Id x) {
    const Id shape = ints(dims);
    return add(TensorNode(Op::Reshape, {shape, x}));
  };

  // full[i]: node i at its own shape; squeezed[i]: at [a, b] (members only). `full` of a member
  // is a reshape back, made when something needs it.
  std::vector<Id> full(n, kInvalidId), squeezed(n, kInvalidId), entry(n, kInvalidId);
  std::vector<bool> member(n, false);
  const auto candidate = [&](std::size_t i) {
    const TensorInfo& info = infos[i];
    return info.kind == Kind::Tensor && !info.symbolic && !info.weight_only &&
           info.layout == Layout::Contiguous && info.dims.size() == 3 && info.dims[0] == 1;
  };
  const auto tail = [&](std::size_t i) { return Dims{infos[i].dims[1], infos[i].dims[2]}; };
  const auto own = [&](std::size_t c) {
    if (member[c] && full[c] == kInvalidId) {
      full[c] = reshape(infos[c].dims, squeezed[c]);
      if (inserted) ++result.boundary;
    }
    return full[c];
  };
  // Operand c of a member at [a, b]: its squeezed value, a broadcast to [a, b], or a reshape.
  const auto operand = [&](std::size_t c, const Dims& want) -> Id {
    if (member[c]) return squeezed[c];
    const TensorNode& node = program[Id(c)];
    if (node.op() == Op::Broadcast) {
      const std::size_t src = node.children()[1].index();
      const Dims& from = infos[src].dims;
      if (from.size() <= 2 || (from.size() == 3 && from[0] == 1)) {
        Id x = own(src);
        if (from.size() == 3) x = reshape(Dims{from[1], from[2]}, x);
        const Id shape = ints(want);
        return add(TensorNode(Op::Broadcast, {shape, x}));
      }
    }
    if (entry[c] == kInvalidId) {
      entry[c] = reshape(want, own(c));
      if (inserted && !infos[c].weight_only) ++result.boundary;
    }
    return entry[c];
  };

  for (std::size_t i = 0; i < n; ++i) {
    const TensorNode& node = program[Id(i)];
    const Op op = node.op();
    const auto ch = node.children();
    const auto in = [&](std::size_t k) { return member[ch[k].index()]; };
    bool join = false;
    if (candidate(i)) {
      if (op == Op::Reshape) {
        join = true;
      } else if (is_unary_elementwise(op) || op == Op::SMul || op == Op::Clip ||
                 op == Op::LayerNorm) {
        join = in(0);
      } else if (is_binary_elementwise(op)) {
        join = in(0) || in(1);
      } else if (op == Op::Softmax) {
        join = in(1) && program[ch[0]].value() >= 1;
      }
    }
    if (join) {
      member[i] = true;
      ++result.squeezed;
      const Dims want = tail(i);
      if (op == Op::Reshape) {
        const std::size_t src = ch[1].index();
        const bool src_member = member[src];
        const Id x = src_member ? squeezed[src] : own(src);
        const Dims& from = src_member ? tail(src) : infos[src].dims;
        if (from == want) {
          squeezed[i] = x;
        } else {
          squeezed[i] = reshape(want, x);
        }
        continue;
      }
      TensorNode copy = node;
      auto kids = copy.children();
      if (is_binary_elementwise(op)) {
        kids[0] = operand(ch[0].index(), want);
        kids[1] = operand(ch[1].index(), want);
      } else if (op == Op::Softmax) {
        kids[0] = add(TensorNode::num(program[ch[0]].value() - 1));
        kids[1] = squeezed[ch[1].index()];
      } else {  // x first, one-element or per-column operands after it
        kids[0] = squeezed[ch[0].index()];
        for (std::size_t k = 1; k < kids.size(); ++k) kids[k] = own(ch[k].index());
      }
      squeezed[i] = add(std::move(copy));
      continue;
    }
    // Not a member: its operands at their own shapes, but a reshape reads a member directly (a
    // flattening [1, a, b] -> [a, b] of one is the member itself).
    if (op == Op::Reshape && member[ch[1].index()]) {
      const std::size_t src = ch[1].index();
      if (tail(src) == infos[i].dims) {
        full[i] = squeezed[src];
      } else {
        full[i] = add(TensorNode(Op::Reshape, {own(ch[0].index()), squeezed[src]}));
      }
      continue;
    }
    TensorNode copy = node;
    auto kids = copy.children();
    for (std::size_t k = 0; k < kids.size(); ++k) {
      const std::size_t c = ch[k].index();
      kids[k] = own(c);
    }
    full[i] = add(std::move(copy));
  }
  const Id new_root = own(program.root().index());
  // Renumbered from the root: nodes no longer read (the flattenings) are dropped.
  RecExpr<TensorNode> squeezed_program = detail::compact(out, new_root);
  // Reshapes of activations (those of weights are computed once), before and after.
  const auto reshapes = [](const RecExpr<TensorNode>& p, const std::vector<TensorInfo>& info) {
    const std::vector<bool> live = reachable_nodes(p, p.root());
    std::size_t count = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      count += live[i] && p[Id(i)].op() == Op::Reshape && !info[i].weight_only;
    return count;
  };
  const std::size_t before = reshapes(program, infos);
  const std::size_t after = reshapes(squeezed_program, check_program(squeezed_program));
  if (result.squeezed == 0 || after >= before) {
    result = SqueezedProgram{};
    result.program = program;
    return result;
  }
  result.removed = before + result.boundary - after;  // every added reshape is in `after`
  result.program = std::move(squeezed_program);
  return result;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_SQUEEZE_BATCH_H
