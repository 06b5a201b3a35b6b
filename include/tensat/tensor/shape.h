// Shape inference: what each operator of the tensor dialect denotes given what its children
// denote (`infer`), the shape rules in one place, and ShapeError for an ill-typed program.
#ifndef TENSAT_TENSOR_SHAPE_H
#define TENSAT_TENSOR_SHAPE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/tensor_info.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Tile rows per block of a Winograd convolution: the block's transformed input, 16 x C x T
/// floats, and its products, 16 x O x T, stay near 4 MiB each, at least one tile row: smaller
/// blocks leave Eigen's products too few columns, larger ones leave the cache (shape.md).
inline std::int64_t wino_block_rows(std::int64_t C, std::int64_t O, std::int64_t tile_cols) {
  const std::int64_t per_row = 16 * std::max(C, O) * tile_cols;
  return std::max<std::int64_t>(1, 1048576 / std::max<std::int64_t>(per_row, 1));
}

namespace detail {

/// Shape inference for one operator; `fail` records the reason (formatted only if wanted).
class Inferrer {
 public:
  Inferrer(const TensorNode& node, Span<const TensorInfo* const> children, TensorInfo& out,
           std::string* why)
      : node_(node), c_(children), out_(out), why_(why) {}

  bool run() {
    if (!run_op()) return false;
    // A term over `arg`s is part of a fused body; `fused` binds the args.
    if (node_.op() == Op::Arg) {
      out_.symbolic = true;
    } else if (node_.op() != Op::Fused) {
      for (const TensorInfo* c : c_) out_.symbolic = out_.symbolic || c->symbolic;
      if (out_.symbolic) {
        out_.weight_only = false;
        out_.value = 0;
        for (const TensorInfo* c : c_)
          if (c->symbolic) out_.value = std::max(out_.value, c->value);
      }
    }
    return true;
  }

  bool run_op() {
    out_ = TensorInfo{};
    const Op op = node_.op();
    if (!reads_any_layout(op))
      for (std::size_t i = 0; i < c_.size(); ++i)
        if ((c_[i]->kind == Kind::Tensor || c_[i]->kind == Kind::Pair) &&
            c_[i]->layout != Layout::Contiguous)
          return fail(
              fmt::format("{}: operand {} is stored channels_last; relayout it to contiguous first",
                          op_name(op), i));
    switch (op) {
      case Op::Num:
        out_.kind = Kind::Int;
        out_.value = node_.value();
        out_.weight_only = true;
        return true;
      case Op::Sym:
        out_.kind = Kind::Name;
        out_.value = node_.symbol().index();
        out_.weight_only = true;
        return true;
      case Op::Ints:
        out_.kind = Kind::Ints;
        out_.weight_only = true;
        for (std::size_t i = 0; i < c_.size(); ++i) {
          if (c_[i]->kind != Kind::Int)
            return fail(fmt::format("ints: child {} is not an integer", i));
          out_.dims.push_back(c_[i]->value);
        }
        return true;
      case Op::Input:
      case Op::Weight:
        return source(op == Op::Weight);
      case Op::Scalar:
        if (!scalar_of_info(*c_[0]))
          return fail(fmt::format("scalar: {} is not a number", describe(*c_[0])));
        out_.kind = Kind::Tensor;
        out_.dims = Dims{1};
        out_.weight_only = true;
        return true;
      case Op::EwAdd:
      case Op::EwMul:
      case Op::EwSub:
      case Op::EwDiv:
      case Op::EwPow:
        return binary_same_shape();
      case Op::SMul: {
        if (!tensor(0) || !tensor(1)) return false;
        if (c_[1]->elements() != 1)
          return fail(fmt::format("smul: scalar operand has shape {}, want one element",
                                  dims_to_string(c_[1]->dims)));
        if (!same_dtype(0, 1)) return false;
        return like(0, both_weight_only(0, 1));
      }
      case Op::Relu:
      case Op::Tanh:
      case Op::Sigmoid:
      case Op::Gelu:
      case Op::GeluErf:
      case Op::Silu:
      case Op::HardSwish:
      case Op::Exp:
      case Op::Sqrt:
      case Op::Erf:
        if (!tensor(0)) return false;
        return like(0, c_[0]->weight_only);
      case Op::MatMul:
        return matmul();
      case Op::Conv2d:
        return conv2d();
      case Op::PoolMax:
      case Op::PoolAvg:
        return pool();
      case Op::Concat:
        return concat();
      case Op::Split:
        return split();
      case Op::Split0:
      case Op::Split1: {
        if (c_[0]->kind != Kind::Pair)
          return fail(fmt::format("{}: operand is not a split", op_name(op)));
        out_.kind = Kind::Tensor;
        out_.dtype = c_[0]->dtype;
        out_.weight_only = c_[0]->weight_only;
        out_.dims = op == Op::Split0 ? c_[0]->dims : c_[0]->dims2;
        out_.layout = c_[0]->layout;
        return true;
      }
      case Op::Transpose:
        return transpose();
      case Op::Reshape:
        return reshape();
      case Op::BatchNorm:
        return batchnorm();
      case Op::Enlarge:
        return enlarge();
      case Op::Merge:
        return merge();
      case Op::WinoWeight:
        return wino_weight();
      case Op::WinoConv2d:
        return wino_conv2d();
      case Op::Noop:
        for (std::size_t i = 0; i < c_.size(); ++i)
          if (c_[i]->kind != Kind::Tensor && c_[i]->kind != Kind::Outputs)
            return fail(fmt::format("noop: child {} is a {}, not a tensor", i, describe(*c_[i])));
        out_.kind = Kind::Outputs;
        return true;
      case Op::Softmax: {
        std::int64_t axis = 0;
        if (!integer(0, axis) || !tensor(1) || !check_axis(axis, c_[1]->rank())) return false;
        return like(1, c_[1]->weight_only);
      }
      case Op::LayerNorm: {
        if (!tensor(0) || !tensor(1) || !tensor(2) || !same_dtype(0, 1) || !same_dtype(0, 2))
          return false;
        if (c_.size() == 4) {
          if (!tensor(3)) return false;
          if (c_[3]->elements() != 1)
            return fail(fmt::format("layernorm: eps has shape {}, want one element",
                                    dims_to_string(c_[3]->dims)));
          if (!c_[3]->weight_only) return fail("layernorm: eps must be known before the run");
        }
        if (c_[0]->rank() == 0) return fail("layernorm: a scalar has no last axis");
        const Dims want{c_[0]->dims.back()};
        if (c_[1]->dims != want || c_[2]->dims != want)
          return fail(fmt::format("layernorm: gamma {} and beta {} must be {}",
                                  dims_to_string(c_[1]->dims), dims_to_string(c_[2]->dims),
                                  dims_to_string(want)));
        return like(0, all_weight_only());
      }
      case Op::Broadcast:
        return broadcast();
      case Op::ReduceSum:
      case Op::ReduceMax:
      case Op::ReduceMean: {
        std::int64_t axis = 0;
        if (!integer(0, axis) || !tensor(1) || !check_axis(axis, c_[1]->rank())) return false;
        like(1, c_[1]->weight_only);
        Dims dims;
        for (std::size_t i = 0; i < c_[1]->rank(); ++i)
          if (static_cast<std::int64_t>(i) != axis) dims.push_back(c_[1]->dims[i]);
        out_.dims = dims;
        return true;
      }
      case Op::Slice: {
        std::int64_t axis = 0, start = 0, end = 0;
        if (!integer(0, axis) || !integer(1, start) || !integer(2, end) || !tensor(3)) return false;
        if (!check_axis(axis, c_[3]->rank())) return false;
        const std::int64_t extent = c_[3]->dims[static_cast<std::size_t>(axis)];
        if (start < 0 || end <= start || end > extent)
          return fail(fmt::format("slice: [{}, {}) is not a non-empty range of [0, {})", start, end,
                                  extent));
        like(3, c_[3]->weight_only);
        out_.dims[static_cast<std::size_t>(axis)] = end - start;
        return true;
      }
      case Op::Arg: {
        std::int64_t index = 0;
        if (!integer(0, index)) return false;
        if (index < 0) return fail("arg: negative index");
        if (!source(false)) return false;
        out_.value = index + 1;  // a symbolic tensor's value: how many args its term reads
        return true;
      }
      case Op::Fused: {
        const TensorInfo& body = *c_[0];
        if (body.kind != Kind::Tensor || !body.symbolic)
          return fail("fused: the body is not a term over args");
        if (static_cast<std::int64_t>(c_.size()) - 1 < body.value)
          return fail(
              fmt::format("fused: the body reads {} args, {} given", body.value, c_.size() - 1));
        bool weight_only = true;
        for (std::size_t i = 1; i < c_.size(); ++i) {
          if (!tensor(i)) return false;
          if (c_[i]->symbolic) return fail("fused: an input is itself symbolic");
          weight_only = weight_only && c_[i]->weight_only;
        }
        like(0, weight_only);
        out_.symbolic = false;
        out_.value = 0;
        return true;
      }
      case Op::Clip: {
        if (!tensor(0) || !tensor(1) || !tensor(2) || !same_dtype(0, 1) || !same_dtype(0, 2))
          return false;
        if (c_[1]->elements() != 1 || c_[2]->elements() != 1)
          return fail(fmt::format("clip: bounds have shapes {} and {}, want one element each",
                                  dims_to_string(c_[1]->dims), dims_to_string(c_[2]->dims)));
        return like(0, all_weight_only());
      }
      case Op::Resize:
        return resize();
      case Op::ConvTranspose:
        return conv_transpose();
      case Op::Opaque:
        return opaque();
      case Op::Relayout:
        return relayout();
      case Op::Pad: {
        std::int64_t axis = 0, before = 0, after = 0;
        if (!integer(0, axis) || !integer(1, before) || !integer(2, after) || !tensor(3))
          return false;
        if (!check_axis(axis, c_[3]->rank())) return false;
        if (before < 0 || after < 0) return fail("pad: negative padding");
        like(3, c_[3]->weight_only);
        out_.dims[static_cast<std::size_t>(axis)] += before + after;
        return true;
      }
    }
    return fail("unknown operator");
  }

 private:
  /// Operators defined for operands in any physical layout (elementwise, windows, normalization
  /// per channel, data movement along a logical axis); every other one reads contiguous tensors.
  static constexpr bool reads_any_layout(Op op) noexcept {
    if (is_elementwise(op)) return true;
    switch (op) {
      case Op::Conv2d:
      case Op::PoolMax:
      case Op::PoolAvg:
      case Op::BatchNorm:
      case Op::Concat:
      case Op::Split:
      case Op::Split0:
      case Op::Split1:
      case Op::Slice:
      case Op::Pad:
      case Op::Relayout:
      case Op::Noop:
      case Op::Fused:
        return true;
      default:
        return false;
    }
  }
  bool same_layout(std::size_t i, std::size_t j) {
    if (c_[i]->layout == c_[j]->layout) return true;
    return fail(fmt::format("{}: layouts differ ({} and {})", op_name(node_.op()),
                            layout_name(c_[i]->layout), layout_name(c_[j]->layout)));
  }
  bool fail(std::string reason) {
    if (why_) *why_ = std::move(reason);
    out_ = TensorInfo{};
    return false;
  }
  bool tensor(std::size_t i) {
    if (c_[i]->kind == Kind::Tensor) return true;
    return fail(fmt::format("{}: operand {} is a {}, not a tensor", op_name(node_.op()), i,
                            describe(*c_[i])));
  }
  bool integer(std::size_t i, std::int64_t& value) {
    if (c_[i]->kind != Kind::Int)
      return fail(fmt::format("{}: child {} is a {}, not an integer", op_name(node_.op()), i,
                              describe(*c_[i])));
    value = c_[i]->value;
    return true;
  }
  bool ints(std::size_t i, const Dims*& values) {
    if (c_[i]->kind != Kind::Ints)
      return fail(fmt::format("{}: child {} is a {}, not an ints list", op_name(node_.op()), i,
                              describe(*c_[i])));
    values = &c_[i]->dims;
    return true;
  }
  bool check_axis(std::int64_t axis, std::size_t rank) {
    if (axis >= 0 && axis < static_cast<std::int64_t>(rank)) return true;
    return fail(
        fmt::format("{}: axis {} out of range for rank {}", op_name(node_.op()), axis, rank));
  }
  bool same_dtype(std::size_t i, std::size_t j) {
    if (c_[i]->dtype == c_[j]->dtype) return true;
    return fail(fmt::format("{}: dtypes differ ({} and {})", op_name(node_.op()),
                            dtype_name(c_[i]->dtype), dtype_name(c_[j]->dtype)));
  }
  bool both_weight_only(std::size_t i, std::size_t j) const {
    return c_[i]->weight_only && c_[j]->weight_only;
  }
  bool all_weight_only() const {
    for (const TensorInfo* c : c_)
      if (!c->weight_only) return false;
    return true;
  }
  /// Output = a tensor shaped like child `i`.
  bool like(std::size_t i, bool weight_only) {
    out_.kind = Kind::Tensor;
    out_.dtype = c_[i]->dtype;
    out_.dims = c_[i]->dims;
    out_.layout = c_[i]->layout;
    out_.weight_only = weight_only;
    return true;
  }
  bool activation(std::size_t i) {
    std::int64_t act = 0;
    if (!integer(i, act)) return false;
    if (act < 0 || act > 3)
      return fail(fmt::format("{}: activation {} is not 0..3", op_name(node_.op()), act));
    return true;
  }

  bool source(bool is_weight) {
    if (node_.op() != Op::Arg && c_[0]->kind != Kind::Name && c_[0]->kind != Kind::Int)
      return fail(fmt::format("{}: the name is a {}", op_name(node_.op()), describe(*c_[0])));
    if (c_[1]->kind != Kind::Name)
      return fail(fmt::format("{}: the dtype is a {}, not f32, f16 or bf16", op_name(node_.op()),
                              describe(*c_[1])));
    const auto dtype =
        dtype_from_name(Symbol::from_index(static_cast<std::uint32_t>(c_[1]->value)).str());
    if (!dtype)
      return fail(fmt::format("{}: unknown dtype '{}'", op_name(node_.op()),
                              Symbol::from_index(static_cast<std::uint32_t>(c_[1]->value)).str()));
    const Dims* dims = nullptr;
    if (!ints(2, dims)) return false;
    for (std::int64_t d : *dims)
      if (d <= 0)
        return fail(fmt::format("{}: dimension {} in {} is not positive", op_name(node_.op()), d,
                                dims_to_string(*dims)));
    out_.kind = Kind::Tensor;
    out_.dtype = *dtype;
    out_.dims = *dims;
    out_.weight_only = is_weight;
    // input, weight and arg may name their layout as a fourth child (opaque's are operands).
    if (node_.op() != Op::Opaque && c_.size() == 4) {
      std::optional<Layout> layout;
      if (!layout_child(3, layout)) return false;
      out_.layout = *layout;
    }
    return true;
  }

  /// Child `i` names a layout valid for the output's rank.
  bool layout_child(std::size_t i, std::optional<Layout>& layout) {
    if (c_[i]->kind == Kind::Name)
      layout = layout_from_name(Symbol::from_index(static_cast<std::uint32_t>(c_[i]->value)).str());
    if (!layout)
      return fail(fmt::format("{}: child {} is a {}, not a layout (contiguous or channels_last)",
                              op_name(node_.op()), i, describe(*c_[i])));
    if (*layout == Layout::ChannelsLast && out_.dims.size() != 4)
      return fail(fmt::format("{}: channels_last needs a rank-4 shape, not {}", op_name(node_.op()),
                              dims_to_string(out_.dims)));
    return true;
  }

  bool relayout() {
    if (!tensor(1)) return false;
    like(1, c_[1]->weight_only);
    std::optional<Layout> layout;
    if (!layout_child(0, layout)) return false;
    out_.layout = *layout;
    return true;
  }

  bool binary_same_shape() {
    if (!tensor(0) || !tensor(1) || !same_dtype(0, 1) || !same_layout(0, 1)) return false;
    if (c_[0]->dims != c_[1]->dims)
      return fail(fmt::format("{}: shapes {} and {} differ", op_name(node_.op()),
                              dims_to_string(c_[0]->dims), dims_to_string(c_[1]->dims)));
    return like(0, both_weight_only(0, 1));
  }

  bool matmul() {
    if (!activation(0) || !tensor(1) || !tensor(2) || !same_dtype(1, 2)) return false;
    const Dims& a = c_[1]->dims;
    const Dims& b = c_[2]->dims;
    if (a.size() < 2 || a.size() != b.size())
      return fail(fmt::format("matmul: ranks of {} and {} must be equal and at least 2",
                              dims_to_string(a), dims_to_string(b)));
    const std::size_t r = a.size();
    for (std::size_t i = 0; i + 2 < r; ++i)
      if (a[i] != b[i])
        return fail(fmt::format("matmul: batch dimensions of {} and {} differ", dims_to_string(a),
                                dims_to_string(b)));
    if (a[r - 1] != b[r - 2])
      return fail(fmt::format("matmul: contraction dimensions differ ({} by {})", dims_to_string(a),
                              dims_to_string(b)));
    like(1, both_weight_only(1, 2));
    out_.dims[r - 1] = b[r - 1];
    return true;
  }

  /// Output extent of a window along one axis (TASO/TensorFlow SAME and VALID).
  bool window(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
              std::int64_t& out) {
    if (k <= 0 || stride <= 0)
      return fail(fmt::format("{}: kernel {} and stride {} must be positive", op_name(node_.op()),
                              k, stride));
    if (pad == static_cast<std::int64_t>(Padding::Same)) {
      out = (in + stride - 1) / stride;
      return true;
    }
    if (pad != static_cast<std::int64_t>(Padding::Valid))
      return fail(fmt::format("{}: padding {} is neither 0 (same) nor 1 (valid)",
                              op_name(node_.op()), pad));
    if (in < k)
      return fail(fmt::format("{}: kernel {} larger than input {} with valid padding",
                              op_name(node_.op()), k, in));
    out = (in - k) / stride + 1;
    return true;
  }

  bool conv2d() {
    std::int64_t sh = 0, sw = 0, pad = 0;
    if (!integer(0, sh) || !integer(1, sw) || !integer(2, pad) || !activation(3) || !tensor(4) ||
        !tensor(5) || !same_dtype(4, 5))
      return false;
    const Dims& x = c_[4]->dims;
    const Dims& w = c_[5]->dims;
    if (x.size() != 4 || w.size() != 4)
      return fail(fmt::format("conv2d: input {} and weight {} must have rank 4", dims_to_string(x),
                              dims_to_string(w)));
    if (c_[5]->layout != Layout::Contiguous)
      return fail(
          "conv2d: the weight is stored channels_last; weights are contiguous [C_out, C_in/groups, "
          "kh, kw]");
    if (x[1] % w[1] != 0)
      return fail(
          fmt::format("conv2d: input channels {} not a multiple of weight's {}", x[1], w[1]));
    const std::int64_t groups = x[1] / w[1];
    if (w[0] % groups != 0)
      return fail(
          fmt::format("conv2d: output channels {} not a multiple of the {} groups", w[0], groups));
    std::int64_t h = 0, wd = 0;
    if (!window(x[2], w[2], sh, pad, h) || !window(x[3], w[3], sw, pad, wd)) return false;
    like(4, both_weight_only(4, 5));
    out_.dims = Dims{x[0], w[0], h, wd};
    return true;
  }

  bool pool() {
    std::int64_t kh = 0, kw = 0, sh = 0, sw = 0, pad = 0;
    if (!integer(0, kh) || !integer(1, kw) || !integer(2, sh) || !integer(3, sw) ||
        !integer(4, pad) || !activation(5) || !tensor(6))
      return false;
    const Dims& x = c_[6]->dims;
    if (x.size() != 4)
      return fail(
          fmt::format("{}: input {} must have rank 4", op_name(node_.op()), dims_to_string(x)));
    std::int64_t h = 0, w = 0;
    if (!window(x[2], kh, sh, pad, h) || !window(x[3], kw, sw, pad, w)) return false;
    like(6, c_[6]->weight_only);
    out_.dims[2] = h;
    out_.dims[3] = w;
    return true;
  }

  bool concat() {
    std::int64_t axis = 0;
    if (!integer(0, axis)) return false;
    for (std::size_t i = 1; i < c_.size(); ++i)
      if (!tensor(i) || !same_dtype(1, i) || !same_layout(1, i)) return false;
    const Dims& first = c_[1]->dims;
    if (!check_axis(axis, first.size())) return false;
    std::int64_t total = 0;
    bool weight_only = true;
    for (std::size_t i = 1; i < c_.size(); ++i) {
      const Dims& d = c_[i]->dims;
      bool ok = d.size() == first.size();
      for (std::size_t k = 0; ok && k < d.size(); ++k)
        if (static_cast<std::int64_t>(k) != axis && d[k] != first[k]) ok = false;
      if (!ok)
        return fail(
            fmt::format("concat: operand {} has shape {}, incompatible with {} along axis {}",
                        i - 1, dims_to_string(d), dims_to_string(first), axis));
      total += d[static_cast<std::size_t>(axis)];
      weight_only = weight_only && c_[i]->weight_only;
    }
    like(1, weight_only);
    out_.dims[static_cast<std::size_t>(axis)] = total;
    return true;
  }

  bool split() {
    std::int64_t axis = 0, size = 0;
    if (!integer(0, axis) || !integer(1, size) || !tensor(2) || !check_axis(axis, c_[2]->rank()))
      return false;
    const std::int64_t extent = c_[2]->dims[static_cast<std::size_t>(axis)];
    if (size <= 0 || size >= extent)
      return fail(
          fmt::format("split: size {} must be in (0, {}) along axis {}", size, extent, axis));
    like(2, c_[2]->weight_only);
    out_.kind = Kind::Pair;
    out_.dims2 = out_.dims;
    out_.dims[static_cast<std::size_t>(axis)] = size;
    out_.dims2[static_cast<std::size_t>(axis)] = extent - size;
    return true;
  }

  bool transpose() {
    const Dims* perm = nullptr;
    if (!ints(0, perm) || !tensor(1)) return false;
    const Dims& x = c_[1]->dims;
    if (perm->size() != x.size())
      return fail(fmt::format("transpose: permutation {} does not fit rank {}",
                              dims_to_string(*perm), x.size()));
    Dims out;
    std::uint64_t seen = 0;
    for (std::int64_t p : *perm) {
      if (p < 0 || p >= static_cast<std::int64_t>(x.size()) || p >= 64 || (seen >> p & 1))
        return fail(fmt::format("transpose: {} is not a permutation", dims_to_string(*perm)));
      seen |= std::uint64_t{1} << p;
      out.push_back(x[static_cast<std::size_t>(p)]);
    }
    like(1, c_[1]->weight_only);
    out_.dims = out;
    return true;
  }

  bool reshape() {
    const Dims* dims = nullptr;
    if (!ints(0, dims) || !tensor(1)) return false;
    std::int64_t n = 1;
    for (std::int64_t d : *dims) {
      if (d <= 0)
        return fail(
            fmt::format("reshape: dimension {} in {} is not positive", d, dims_to_string(*dims)));
      n *= d;
    }
    if (n != c_[1]->elements())
      return fail(fmt::format("reshape: {} has {} elements, {} has {}", dims_to_string(c_[1]->dims),
                              c_[1]->elements(), dims_to_string(*dims), n));
    like(1, c_[1]->weight_only);
    out_.dims = *dims;
    return true;
  }

  bool batchnorm() {
    for (std::size_t i = 0; i < 5; ++i)
      if (!tensor(i) || !same_dtype(0, i)) return false;
    const Dims& x = c_[0]->dims;
    if (x.size() < 2)
      return fail(fmt::format("batchnorm: input {} has no channel axis", dims_to_string(x)));
    const Dims want{x[1]};
    for (std::size_t i = 1; i < 5; ++i)
      if (c_[i]->dims != want)
        return fail(fmt::format("batchnorm: parameter {} has shape {}, want {}", i,
                                dims_to_string(c_[i]->dims), dims_to_string(want)));
    return like(0, all_weight_only());
  }

  bool wino_weight() {
    if (!tensor(0)) return false;
    const Dims& w = c_[0]->dims;
    if (w.size() != 4 || w[2] != 3 || w[3] != 3)
      return fail(
          fmt::format("wino_weight: kernel {} is not [C_out, C_in, 3, 3]", dims_to_string(w)));
    if (c_[0]->layout != Layout::Contiguous)
      return fail("wino_weight: the kernel is stored channels_last");
    like(0, c_[0]->weight_only);
    out_.dims = Dims{16, w[0], w[1]};
    return true;
  }

  /// (wino_conv2d pad act x u): x [N, C, H, W], u [16, O, C] -> [N, O, Ho, Wo], a 3x3 window of
  /// stride 1.
  bool wino_conv2d() {
    std::int64_t pad = 0;
    if (!integer(0, pad) || !activation(1) || !tensor(2) || !tensor(3) || !same_dtype(2, 3))
      return false;
    const Dims& x = c_[2]->dims;
    const Dims& u = c_[3]->dims;
    if (x.size() != 4 || u.size() != 3 || u[0] != 16)
      return fail(
          fmt::format("wino_conv2d: input {} must have rank 4 and weight {} be [16, C_out, C_in]",
                      dims_to_string(x), dims_to_string(u)));
    if (u[2] != x[1])
      return fail(
          fmt::format("wino_conv2d: input channels {} differ from the weight's {}", x[1], u[2]));
    std::int64_t h = 0, wd = 0;
    if (!window(x[2], 3, 1, pad, h) || !window(x[3], 3, 1, pad, wd)) return false;
    like(2, both_weight_only(2, 3));
    out_.dims = Dims{x[0], u[1], h, wd};
    return true;
  }

  bool enlarge() {
    if (!tensor(0) || !tensor(1)) return false;
    const Dims& w = c_[0]->dims;
    const Dims& ref = c_[1]->dims;
    if (w.size() != 4 || ref.size() != 4)
      return fail(fmt::format("enlarge: kernel {} and reference {} must have rank 4",
                              dims_to_string(w), dims_to_string(ref)));
    for (std::size_t i = 2; i < 4; ++i)
      if (ref[i] < w[i] || (ref[i] - w[i]) % 2 != 0)
        return fail(fmt::format("enlarge: kernel {} cannot be centred in {}", dims_to_string(w),
                                dims_to_string(ref)));
    like(0, c_[0]->weight_only);
    out_.dims[2] = ref[2];
    out_.dims[3] = ref[3];
    return true;
  }

  bool merge() {
    std::int64_t groups = 0, count = 0;
    if (!integer(0, groups) || !integer(1, count) || !tensor(2)) return false;
    const Dims& w = c_[2]->dims;
    if (w.size() != 4)
      return fail(fmt::format("merge: weight {} must have rank 4", dims_to_string(w)));
    if (groups <= 0 || count <= 1 || groups % count != 0 || w[0] % groups != 0)
      return fail(fmt::format("merge: cannot merge {} groups of weight {} by {}", groups,
                              dims_to_string(w), count));
    like(2, c_[2]->weight_only);
    out_.dims[1] = w[1] * count;
    return true;
  }

  bool broadcast() {
    const Dims* dims = nullptr;
    if (!ints(0, dims) || !tensor(1)) return false;
    const Dims& x = c_[1]->dims;
    if (x.size() > dims->size())
      return fail(fmt::format("broadcast: cannot broadcast {} to lower rank {}", dims_to_string(x),
                              dims_to_string(*dims)));
    const std::size_t offset = dims->size() - x.size();
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] != 1 && x[i] != (*dims)[offset + i])
        return fail(fmt::format("broadcast: {} does not broadcast to {}", dims_to_string(x),
                                dims_to_string(*dims)));
    for (std::int64_t d : *dims)
      if (d <= 0) return fail(fmt::format("broadcast: dimension {} is not positive", d));
    like(1, c_[1]->weight_only);
    out_.dims = *dims;
    return true;
  }

  bool resize() {
    std::int64_t interp = 0, coord = 0, nearest = 0;
    const Dims* dims = nullptr;
    if (!integer(0, interp) || !integer(1, coord) || !integer(2, nearest) || !ints(3, dims) ||
        !tensor(4))
      return false;
    if (interp < 0 || interp > 1)
      return fail(fmt::format("resize: interpolation {} is not 0 (nearest) or 1 (linear)", interp));
    if (coord < 0 || coord > 2)
      return fail(fmt::format(
          "resize: coordinate mode {} is not 0 (half_pixel), 1 (asymmetric) or 2 (align_corners)",
          coord));
    if (nearest < 0 || nearest > 3)
      return fail(fmt::format("resize: nearest mode {} is not 0..3", nearest));
    const Dims& x = c_[4]->dims;
    if (dims->size() != x.size())
      return fail(fmt::format("resize: output shape {} does not have the rank of {}",
                              dims_to_string(*dims), dims_to_string(x)));
    for (std::int64_t d : *dims)
      if (d <= 0)
        return fail(
            fmt::format("resize: dimension {} in {} is not positive", d, dims_to_string(*dims)));
    like(4, c_[4]->weight_only);
    out_.dims = *dims;
    return true;
  }

  bool conv_transpose() {
    std::int64_t a[7] = {};
    for (std::size_t i = 0; i < 7; ++i)
      if (!integer(i, a[i])) return false;
    if (!tensor(7) || !tensor(8) || !same_dtype(7, 8)) return false;
    const std::int64_t sh = a[0], sw = a[1], pt = a[2], pl = a[3], pb = a[4], pr = a[5],
                       groups = a[6];
    const Dims& x = c_[7]->dims;
    const Dims& w = c_[8]->dims;
    if (x.size() != 4 || w.size() != 4)
      return fail(fmt::format("conv_transpose: input {} and weight {} must have rank 4",
                              dims_to_string(x), dims_to_string(w)));
    if (sh <= 0 || sw <= 0)
      return fail(fmt::format("conv_transpose: strides {} and {} must be positive", sh, sw));
    if (groups <= 0 || x[1] != w[0] || w[0] % groups != 0)
      return fail(fmt::format("conv_transpose: weight {} with {} groups does not fit input {}",
                              dims_to_string(w), groups, dims_to_string(x)));
    // Padding at the start removes outputs; at the end it may be negative (ONNX's output_padding:
    // zeros appended), but by less than a stride.
    if (pt < 0 || pl < 0 || pb <= -sh || pr <= -sw)
      return fail(
          fmt::format("conv_transpose: pads ({}, {}, {}, {}) out of range for strides ({}, {})", pt,
                      pl, pb, pr, sh, sw));
    const std::int64_t h = (x[2] - 1) * sh + w[2] - pt - pb, wd = (x[3] - 1) * sw + w[3] - pl - pr;
    if (h <= 0 || wd <= 0)
      return fail(fmt::format("conv_transpose: the pads leave an empty output ({} x {})", h, wd));
    like(7, both_weight_only(7, 8));
    out_.dims = Dims{x[0], w[1] * groups, h, wd};
    return true;
  }

  bool opaque() {
    if (c_[0]->kind != Kind::Name)
      return fail(fmt::format("opaque: the operator type is a {}, not a name", describe(*c_[0])));
    if (!source(false)) return false;
    for (std::size_t i = 3; i < c_.size(); ++i) {
      if (!tensor(i)) return false;
      if (c_[i]->symbolic)
        return fail("opaque: an operand is a term of a fused body (opaque ops never fuse)");
    }
    // Never weight-only: nothing can compute it ahead of the run (or at all, on the executors).
    out_.weight_only = false;
    return true;
  }

  const TensorNode& node_;
  Span<const TensorInfo* const> c_;
  TensorInfo& out_;
  std::string* why_;
};

}  // namespace detail

/// Infers what `node` denotes from what its children denote (`children[i]` for child `i`).
/// Returns false, with `out.kind == Kind::Invalid` and the reason in `*why` (when given), if the
/// node is ill-typed. No exceptions and no allocation on failure unless `why` is set, so rules
/// can try many candidate right-hand sides cheaply.
inline bool infer(const TensorNode& node, Span<const TensorInfo* const> children, TensorInfo& out,
                  std::string* why = nullptr) {
  return detail::Inferrer(node, children, out, why).run();
}

/// An ill-typed tensor program: `node()` is the index of the offending node (in the builder or
/// the RecExpr), `op()` its operator, `reason()` what is wrong.
class ShapeError : public Error {
 public:
  ShapeError(std::size_t node, std::string op, std::string reason)
      : Error(fmt::format("node {} ({}): {}", node, op, reason)),
        node_(node),
        op_(std::move(op)),
        reason_(std::move(reason)) {}

  [[nodiscard]] std::size_t node() const noexcept { return node_; }
  [[nodiscard]] const std::string& op() const noexcept { return op_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::size_t node_;
  std::string op_;
  std::string reason_;
};

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_SHAPE_H
