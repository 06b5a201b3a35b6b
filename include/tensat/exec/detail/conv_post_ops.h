// The convolution post-ops runner: a fused kernel that `conv_post_ops` accepts (a convolution and
// per-channel steps after it) run as one convolution whose epilogue applies the steps to each
// finished part of its output, in cache.
#ifndef TENSAT_EXEC_DETAIL_CONV_POST_OPS_H
#define TENSAT_EXEC_DETAIL_CONV_POST_OPS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "tensat/exec/detail/conv.h"
#include "tensat/exec/detail/elementwise.h"
#include "tensat/exec/detail/fused_term.h"
#include "tensat/exec/detail/onnx_ops.h"
#include "tensat/tensor/post_ops.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// One per-channel post-op (oneDNN's post-ops) of a convolution's epilogue: `op` on a run of
/// one output channel c, with the constant `data[c * stride]` (stride 0: one scalar) as the
/// operand `constant_first` says for a binary op, or a clip's bounds `lo`, `hi`.
struct ChannelStep {
  Op op = Op::Relu;
  const float* data = nullptr;
  std::int64_t stride = 0;
  bool constant_first = false;
  float lo = 0, hi = 0;
  const float* full = nullptr;  ///< a residual add: the input read at the output's positions
};

/// A fused body as `conv_post_ops` reads it: terms by index, leaves as the kernel's inputs.
struct PostOpsView {
  using Term = std::size_t;
  const std::vector<FusedTerm>* terms;
  [[nodiscard]] Op op(Term t) const { return (*terms)[t].op; }
  [[nodiscard]] bool input(Term t) const { return (*terms)[t].leaf != nullptr; }
  [[nodiscard]] std::size_t operands(Term t) const { return (*terms)[t].operands.size(); }
  [[nodiscard]] Term operand(Term t, std::size_t k) const { return (*terms)[t].operands[k]; }
  [[nodiscard]] const Dims& dims(Term t) const { return (*terms)[t].dims; }
  [[nodiscard]] DType dtype(Term t) const { return (*terms)[t].dtype; }
  [[nodiscard]] bool pad(Term t, std::int64_t& axis, std::int64_t& before,
                         std::int64_t& after) const {
    const auto& term = (*terms)[t];
    if (term.op != Op::Pad || term.attrs.size() != 3) return false;
    axis = term.attrs[0];
    before = term.attrs[1];
    after = term.attrs[2];
    return true;
  }
  [[nodiscard]] bool per_channel(Term t, const Dims& dims) const {
    const auto& term = (*terms)[t];
    return term.dims == dims && term.strides.size() == 4 && term.strides[2] == 0 &&
           term.strides[3] == 0 && (dims[0] == 1 || term.strides[0] == 0);
  }
};

/// Term `t` as a per-channel constant over `dims` ([N, C, H, W]): a one-element leaf, or a
/// broadcast of a leaf that varies along the channel axis only.
[[nodiscard]] inline std::optional<std::pair<const float*, std::int64_t>> channel_constant(
    const std::vector<FusedTerm>& terms, std::size_t t, const Dims& dims) {
  const FusedTerm& term = terms[t];
  if (term.leaf) {
    if (term.elements != 1) return std::nullopt;
    return std::pair<const float*, std::int64_t>{term.leaf->data.data(), 0};
  }
  if (term.op != Op::Broadcast || term.dims != dims || term.strides.size() != 4)
    return std::nullopt;
  const FusedTerm& x = terms[term.operands[0]];
  if (!x.leaf || term.strides[2] != 0 || term.strides[3] != 0 ||
      (dims[0] != 1 && term.strides[0] != 0))
    return std::nullopt;
  return std::pair<const float*, std::int64_t>{x.leaf->data.data() + term.offset, term.strides[1]};
}

/// The body from `root` down to the convolution `contraction` as per-channel steps, in the
/// order they apply: a chain of elementwise terms over the product's shape, each with one
/// operand on the chain and the others per-channel constants, or the `residual` input of an
/// `ewadd` (`conv_post_ops`). Nothing otherwise.
[[nodiscard]] inline std::optional<std::vector<ChannelStep>> channel_steps(
    const std::vector<FusedTerm>& terms, std::size_t root, std::size_t contraction,
    std::optional<std::size_t> residual) {
  const Dims& dims = terms[contraction].dims;
  if (dims.size() != 4) return std::nullopt;
  std::vector<ChannelStep> steps;
  for (std::size_t t = root; t != contraction;) {
    const FusedTerm& term = terms[t];
    if (term.leaf || term.dims != dims || term.dtype != DType::F32) return std::nullopt;
    ChannelStep s;
    s.op = term.op;
    switch (term.op) {
      case Op::Relu:
      case Op::Sigmoid:
      case Op::Tanh:
      case Op::Silu:
      case Op::HardSwish:
      case Op::GeluErf:
        t = term.operands[0];
        break;
      case Op::Clip: {
        const auto lo = channel_constant(terms, term.operands[1], dims);
        const auto hi = channel_constant(terms, term.operands[2], dims);
        if (!lo || !hi || lo->second != 0 || hi->second != 0) return std::nullopt;
        s.lo = *lo->first;
        s.hi = *hi->first;
        t = term.operands[0];
        break;
      }
      case Op::SMul:
      case Op::EwAdd:
      case Op::EwMul:
      case Op::EwSub:
      case Op::EwDiv: {
        const auto k1 = channel_constant(terms, term.operands[1], dims);
        const auto k0 =
            term.op == Op::SMul ? std::nullopt : channel_constant(terms, term.operands[0], dims);
        if (!k0 && !k1 && term.op == Op::EwAdd && residual) {  // the residual add
          const bool first = term.operands[0] == *residual;
          if (!first && term.operands[1] != *residual) return std::nullopt;
          s.full = terms[*residual].leaf->data.data();
          t = term.operands[first ? 1 : 0];
          break;
        }
        if (k1.has_value() == k0.has_value()) return std::nullopt;
        s.op = term.op == Op::SMul ? Op::EwMul : term.op;
        s.constant_first = k0.has_value();
        std::tie(s.data, s.stride) = k1 ? *k1 : *k0;
        t = term.operands[k1 ? 0 : 1];
        break;
      }
      default:
        return std::nullopt;
    }
    steps.push_back(s);
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

/// Applies `steps` in place to the output `y` over its flat positions [at, at + n), rows of
/// `P` positions, one output channel of `C` a row: step by step over the whole range (one call
/// of an activation, a per-channel constant row by row), so that a small map's many short rows
/// cost what their elements do.
inline void apply_channel_steps(const std::vector<ChannelStep>& steps, float* y, std::int64_t at,
                                std::int64_t n, std::int64_t P, std::int64_t C) {
  float* const part = y + at;
  ArrayMap whole(part, n);
  // f(run, constant) on each row's run of the range, with the row's constant of `s`.
  const auto by_row = [&](const ChannelStep& s, auto&& f) {
    for (std::int64_t p = at, end = at + n; p < end;) {
      const std::int64_t row = p / P, stop = std::min(end, (row + 1) * P);
      f(ArrayMap(y + p, stop - p), s.data[(row % C) * s.stride]);
      p = stop;
    }
  };
  for (const ChannelStep& s : steps) {
    const bool uniform = s.data && s.stride == 0;  // one scalar for every channel
    const float k = uniform ? s.data[0] : 0.0f;
    switch (s.op) {
      case Op::EwAdd:
        if (s.full)
          whole += ConstArrayMap(s.full + at, n);
        else if (uniform)
          whole += k;
        else
          by_row(s, [](ArrayMap a, float c) { a += c; });
        break;
      case Op::EwMul:
        if (uniform)
          whole *= k;
        else
          by_row(s, [](ArrayMap a, float c) { a *= c; });
        break;
      case Op::EwSub:
        if (uniform && s.constant_first)
          whole = k - whole;
        else if (uniform)
          whole -= k;
        else if (s.constant_first)
          by_row(s, [](ArrayMap a, float c) { a = c - a; });
        else
          by_row(s, [](ArrayMap a, float c) { a -= c; });
        break;
      case Op::EwDiv:
        if (uniform && s.constant_first)
          whole = k / whole;
        else if (uniform)
          whole /= k;
        else if (s.constant_first)
          by_row(s, [](ArrayMap a, float c) { a = c / a; });
        else
          by_row(s, [](ArrayMap a, float c) { a /= c; });
        break;
      case Op::Relu:
        whole = whole.max(0.0f);
        break;
      case Op::Clip:
        clip(part, n, s.lo, s.hi);
        break;
      case Op::Sigmoid:
        activate_to(part, part, n, Activation::Sigmoid);
        break;
      case Op::Tanh:
        activate_to(part, part, n, Activation::Tanh);
        break;
      case Op::Silu:
        silu(part, part, n);
        break;
      case Op::HardSwish:
        hard_swish(part, part, n);
        break;
      case Op::GeluErf:
        gelu_erf(part, part, n);
        break;
      default:
        break;
    }
  }
}

/// A fused kernel (`terms`, rooted at `root`) that `conv_post_ops` accepts, run as it says: the
/// convolution (of its input with the body's pads folded in, never materialized) writes the output
/// and the post-ops run on each part of it (a column block's rows, one output channel a row) as the
/// convolution finishes the part, in cache. Nothing for any other kernel.
inline std::optional<HostTensor> run_post_ops(const std::vector<FusedTerm>& terms, std::size_t root,
                                              std::size_t contraction) {
  const auto post = conv_post_ops(PostOpsView{&terms}, root);
  if (!post || post->conv != contraction) return std::nullopt;
  const std::optional<std::vector<ChannelStep>> steps =
      channel_steps(terms, root, contraction, post->residual);
  if (!steps) return std::nullopt;
  const FusedTerm& c = terms[contraction];
  HostTensor out(terms[root].dims, DType::F32);
  const std::int64_t C = c.dims[1], P = c.dims[2] * c.dims[3];
  const Epilogue channel = [&](std::int64_t start, std::int64_t length) {
    apply_channel_steps(*steps, out.data.data(), start, length, P, C);
  };
  conv2d_into(*terms[post->input].leaf, *terms[c.operands[1]].leaf, c.attrs[0], c.attrs[1],
              c.attrs[2], activation_of(c.attrs[3]), out, steps->empty() ? nullptr : &channel, true,
              post->pads);
  return out;
}

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_CONV_POST_OPS_H
