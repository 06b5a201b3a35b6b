// conv_post_ops: whether a fused kernel's body is a convolution followed by per-channel post-ops
// (oneDNN's post-ops: a bias, a scale, an activation, one residual add), the one kernel shape
// the reference executor runs on each block of the product while it is in cache. The executor
// and the cost model both ask it, so a kernel is priced as it runs.
#ifndef TENSAT_TENSOR_POST_OPS_H
#define TENSAT_TENSOR_POST_OPS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/tensor_info.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Whether `op` is a post-op applied to each element alone: relu, sigmoid, tanh, silu,
/// hard_swish, gelu_erf (and clip with scalar bounds, see `conv_post_ops`).
[[nodiscard]] constexpr bool is_post_activation(Op op) noexcept {
  return has_trait(op, kPostActivation);
}

/// Zero rows and columns around a convolution's input, beyond its own padding mode's: the input
/// convolved is the data padded so (`pad`s folded into the convolution, never materialized).
struct ConvInputPads {
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;
  friend constexpr bool operator==(const ConvInputPads& a, const ConvInputPads& b) noexcept {
    return a.top == b.top && a.bottom == b.bottom && a.left == b.left && a.right == b.right;
  }
};

/// What `conv_post_ops` found: the body's convolution, how many post-ops follow it, the
/// full-size kernel input a residual add reads (if any), and the convolution's data input with
/// the zero padding the body's `pad`s put around it (folded into the convolution's own: oneDNN
/// and onnxruntime fold a Pad into the Conv after it the same way).
template <class Term>
struct ConvPostOps {
  Term conv{};
  std::size_t steps = 0;
  std::optional<Term> residual{};
  /// The kernel input the convolution reads, under its `pad`s if any.
  Term input{};
  /// Zero rows and columns around `input`.
  ConvInputPads pads{};
};

/// The post-ops structure of the body rooted at `root`, or nothing. A `View` answers, for a term
/// `t` of the body: `op(t)`; `input(t)` (a kernel input: an `arg`, a leaf); `operands(t)` and
/// `operand(t, k)` (tensor operands only, in order); `dims(t)` and `dtype(t)`; and
/// `per_channel(t, dims)` (t is a `broadcast` of an input over `dims` = [N, C, H, W] that varies
/// along C at most, or along N as well only where N is 1); and `pad(t, axis, before, after)`
/// (t is a `pad`: its attributes).
///
/// The body qualifies when, from the root down, every term is an f32 term of the root's shape
/// that is one of: an activation (`is_post_activation`) of the term below; a `clip` of it with
/// one-element inputs as bounds; an `smul` of it by a one-element input; an `ewadd`, `ewmul`,
/// `ewsub` or `ewdiv` of it and a per-channel constant (a one-element input, or a broadcast that
/// `per_channel` accepts) on either side; or, once, an `ewadd` of it and a kernel input of the
/// same shape (the residual). The chain ends at a rank-4 `conv2d` of the root's shape whose
/// operands are kernel inputs, its data operand possibly through `pad`s of the spatial axes
/// (2 and 3), after at least one post-op or `pad` (a convolution alone, neither, is no kernel
/// of its own).
template <class View>
[[nodiscard]] std::optional<ConvPostOps<typename View::Term>> conv_post_ops(
    const View& body, typename View::Term root) {
  using Term = typename View::Term;
  const Dims dims = body.dims(root);
  if (dims.size() != 4) return std::nullopt;
  const auto count = [](const Dims& d) {
    std::int64_t n = 1;
    for (std::int64_t e : d) n *= e;
    return n;
  };
  enum class Operand { Chain, Constant, Full };
  const auto classify = [&](Term x) {
    if (body.input(x)) {
      if (count(body.dims(x)) == 1) return Operand::Constant;
      return body.dims(x) == dims && body.dtype(x) == DType::F32 ? Operand::Full : Operand::Chain;
    }
    if (body.op(x) == Op::Broadcast && body.operands(x) == 1 && body.input(body.operand(x, 0)) &&
        body.per_channel(x, dims))
      return Operand::Constant;
    return Operand::Chain;
  };
  const auto scalar = [&](Term x) { return body.input(x) && count(body.dims(x)) == 1; };
  ConvPostOps<Term> found;
  for (Term t = root;;) {
    if (body.input(t) || body.dims(t) != dims || body.dtype(t) != DType::F32) return std::nullopt;
    const Op op = body.op(t);
    if (op == Op::Conv2d) {
      if (body.operands(t) != 2 || !body.input(body.operand(t, 1))) return std::nullopt;
      Term x = body.operand(t, 0);
      bool padded = false;
      while (!body.input(x) && body.op(x) == Op::Pad && body.operands(x) == 1) {
        std::int64_t axis = 0, before = 0, after = 0;
        if (!body.pad(x, axis, before, after) || (axis != 2 && axis != 3) || before < 0 ||
            after < 0 || body.dtype(x) != DType::F32)
          return std::nullopt;
        (axis == 2 ? found.pads.top : found.pads.left) += before;
        (axis == 2 ? found.pads.bottom : found.pads.right) += after;
        padded = true;
        x = body.operand(x, 0);
      }
      if (!body.input(x) || body.dims(x).size() != 4 || body.dtype(x) != DType::F32 ||
          (found.steps == 0 && !padded))
        return std::nullopt;
      found.conv = t;
      found.input = x;
      return found;
    }
    ++found.steps;
    if (is_post_activation(op) && body.operands(t) == 1) {
      t = body.operand(t, 0);
    } else if (op == Op::Clip && body.operands(t) == 3) {
      if (!scalar(body.operand(t, 1)) || !scalar(body.operand(t, 2))) return std::nullopt;
      t = body.operand(t, 0);
    } else if (op == Op::SMul && body.operands(t) == 2) {
      if (!scalar(body.operand(t, 1))) return std::nullopt;
      t = body.operand(t, 0);
    } else if ((op == Op::EwAdd || op == Op::EwMul || op == Op::EwSub || op == Op::EwDiv) &&
               body.operands(t) == 2) {
      const Term a = body.operand(t, 0), b = body.operand(t, 1);
      const Operand ka = classify(a), kb = classify(b);
      if (ka == Operand::Chain && kb == Operand::Constant) {
        t = a;
      } else if (ka == Operand::Constant && kb == Operand::Chain) {
        t = b;
      } else if (op == Op::EwAdd && !found.residual &&
                 (ka == Operand::Full) != (kb == Operand::Full) &&
                 (ka == Operand::Chain || kb == Operand::Chain)) {
        found.residual = ka == Operand::Full ? a : b;
        t = ka == Operand::Full ? b : a;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
}

/// The `View` of `conv_post_ops` over a body of dialect nodes: `node_of(id)` gives a term's node
/// (a program's node, an e-class's first member; nullptr if none) and `info_of(id)` its
/// analysis data. Inputs are `arg`s; tensor operands are the children of kind tensor.
template <class NodeOf, class InfoOf>
struct NodeBodyView {
  using Term = Id;
  NodeOf node_of;
  InfoOf info_of;

  [[nodiscard]] Op op(Id t) const {
    const TensorNode* n = node_of(t);
    return n ? n->op() : Op::Num;
  }
  [[nodiscard]] bool input(Id t) const { return op(t) == Op::Arg; }
  [[nodiscard]] std::size_t operands(Id t) const {
    const TensorNode* n = node_of(t);
    std::size_t k = 0;
    if (n)
      for (Id c : n->children()) k += info_of(c).kind == Kind::Tensor ? 1 : 0;
    return k;
  }
  [[nodiscard]] Id operand(Id t, std::size_t k) const {
    for (Id c : node_of(t)->children())
      if (info_of(c).kind == Kind::Tensor && k-- == 0) return c;
    return Id{};
  }
  [[nodiscard]] const Dims& dims(Id t) const { return info_of(t).dims; }
  /// A `pad`'s attributes (children 0 to 2, integers).
  [[nodiscard]] bool pad(Id t, std::int64_t& axis, std::int64_t& before,
                         std::int64_t& after) const {
    const TensorNode* n = node_of(t);
    if (!n || n->op() != Op::Pad || n->children().size() != 4) return false;
    const auto attr = [&](std::size_t k, std::int64_t& v) {
      const TensorInfo& info = info_of(n->children()[k]);
      v = info.value;
      return info.kind == Kind::Int;
    };
    return attr(0, axis) && attr(1, before) && attr(2, after);
  }
  [[nodiscard]] DType dtype(Id t) const { return info_of(t).dtype; }
  /// A broadcast (numpy's right-aligned rule) of a source whose H and W extents are 1, and whose
  /// N extent is 1 unless the output's is.
  [[nodiscard]] bool per_channel(Id t, const Dims& out) const {
    if (op(t) != Op::Broadcast || operands(t) != 1 || out.size() != 4 || dims(t) != out)
      return false;
    const Dims& src = dims(operand(t, 0));
    if (src.size() > 4) return false;
    const std::size_t lead = 4 - src.size();
    const auto extent = [&](std::size_t axis) { return axis < lead ? 1 : src[axis - lead]; };
    return extent(2) == 1 && extent(3) == 1 && (out[0] == 1 || extent(0) == 1);
  }
};

/// A `NodeBodyView` over the two accessors.
template <class NodeOf, class InfoOf>
[[nodiscard]] NodeBodyView<NodeOf, InfoOf> node_body_view(NodeOf node_of, InfoOf info_of) {
  return NodeBodyView<NodeOf, InfoOf>{std::move(node_of), std::move(info_of)};
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_POST_OPS_H
