// The ONNX importer's converters of contractions and windows: MatMul, Gemm, Conv, ConvTranspose,
// MaxPool/AveragePool, global pools.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_CONTRACTIONS_H
#define TENSAT_ONNX_DETAIL_CONVERT_CONTRACTIONS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

inline void Importer::matmul(const NodeContext& c) {
  Tensor a = c.tensor(0), b = c.tensor(1);
  const Dims da = g_.shape(a), db = g_.shape(b);
  if (da.size() < 2 || db.size() < 2) c.unsupported("MatMul of a vector is not supported");
  if (da.size() > 2 && db.size() == 2) {
    // [..., M, K] x [K, N]: one product over the flattened leading dimensions.
    const std::int64_t k = da.back(), rows = std::accumulate(da.begin(), da.end() - 1,
                                                             std::int64_t{1}, std::multiplies<>());
    Dims out = da;
    out.back() = db.back();
    return set_tensor(c, g_.reshape(g_.matmul(g_.reshape(a, {rows, k}), b), out));
  }
  // Batch dimensions broadcast (numpy's matmul).
  const Dims batch =
      broadcast_dims(Dims(da.begin(), da.size() - 2), Dims(db.begin(), db.size() - 2), c.where);
  const auto full = [&](Tensor t, const Dims& d) {
    Dims want = batch;
    want.push_back(d[d.size() - 2]);
    want.push_back(d.back());
    return want == d ? t : g_.broadcast(t, want);
  };
  set_tensor(c, g_.matmul(full(a, da), full(b, db)));
}

inline void Importer::gemm(const NodeContext& c) {
  const double alpha = c.float_attr("alpha", 1.0), beta = c.float_attr("beta", 1.0);
  Value av = c.in(0), bv = c.in(1);
  if (alpha != 1.0) {
    if (!bv.is_constant()) c.unsupported("alpha other than 1 needs a constant B");
    for (double& d : bv.data) d *= alpha;
  }
  Tensor a = weight_of(av, c.input_name(0));
  Tensor b = weight_of(bv, alpha != 1.0 ? derived_key(c.input_name(1), "scaled") : c.input_name(1));
  if (g_.shape(a).size() != 2 || g_.shape(b).size() != 2) c.fail("Gemm operands must be matrices");
  if (c.int_attr("transA", 0)) a = g_.transpose(a, {1, 0});
  if (c.int_attr("transB", 0)) b = g_.transpose(b, {1, 0});
  Tensor y = g_.matmul(a, b);
  if (c.has_input(2)) {
    Value cv = c.in(2);
    if (beta != 1.0) {
      if (!cv.is_constant()) c.unsupported("beta other than 1 needs a constant C");
      for (double& d : cv.data) d *= beta;
    }
    if (beta != 0.0)
      y = g_.add(
          y, weight_of(cv, beta != 1.0 ? derived_key(c.input_name(2), "scaled") : c.input_name(2)));
  }
  set_tensor(c, y);
}

/// `y + bias` for a per-channel bias [C] of an NCHW tensor (input `i`, optional).
inline Tensor Importer::add_bias(const NodeContext& c, Tensor y, std::size_t i,
                                 std::int64_t channels) {
  if (!c.has_input(i)) return y;
  Value bias = c.in(i);
  if (bias.dims != Dims{channels}) c.fail("the bias must have one value per output channel");
  if (bias.is_constant()) {
    bias.dims = {channels, 1, 1};
    return g_.add(y, weight_of(bias, c.input_name(i)));
  }
  return g_.add(y, g_.reshape(*bias.tensor, {channels, 1, 1}));
}

inline void Importer::conv(const NodeContext& c) {
  Tensor x = c.tensor(0);
  const Value& wv = c.in(1);
  if (wv.dims.size() != 4 || g_.shape(x).size() != 4)
    c.unsupported("only 2-D convolutions (NCHW) are supported");
  require_unit(c, "dilations");
  const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
  if (const auto k = c.ints_attr("kernel_shape"); k && *k != Dims{wv.dims[2], wv.dims[3]})
    c.fail("kernel_shape disagrees with the weight");
  const std::int64_t group = c.int_attr("group", 1);
  if (group < 1 || g_.shape(x)[1] != wv.dims[1] * group)
    c.fail(fmt::format("weight {} with group {} does not fit input {}",
                       tensor::dims_to_string(wv.dims), group,
                       tensor::dims_to_string(g_.shape(x))));
  const tensor::Padding pad =
      window_padding(c, x, wv.dims[2], wv.dims[3], sh, sw, ExplicitPads::Zeros);
  const Tensor y = g_.conv2d(x, c.tensor(1), sh, sw, pad);
  set_tensor(c, add_bias(c, y, 2, wv.dims[0]));
}

inline void Importer::conv_transpose(const NodeContext& c) {
  const Tensor x = c.tensor(0);
  const Value& wv = c.in(1);
  const Dims xd = g_.shape(x);
  if (wv.dims.size() != 4 || xd.size() != 4)
    c.unsupported("only 2-D transposed convolutions (NCHW) are supported");
  require_unit(c, "dilations");
  const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
  const std::int64_t group = c.int_attr("group", 1);
  if (group < 1 || xd[1] != wv.dims[0] || wv.dims[0] % group != 0)
    c.fail(fmt::format("weight {} with group {} does not fit input {}",
                       tensor::dims_to_string(wv.dims), group, tensor::dims_to_string(xd)));
  const Dims output_padding = c.ints_attr("output_padding").value_or(Dims{0, 0});
  if (output_padding.size() != 2) c.unsupported("output_padding must have 2 values");
  const std::int64_t k[2] = {wv.dims[2], wv.dims[3]}, s[2] = {sh, sw}, in[2] = {xd[2], xd[3]};
  for (int a = 0; a < 2; ++a)
    if (output_padding[static_cast<std::size_t>(a)] < 0 ||
        output_padding[static_cast<std::size_t>(a)] >= s[a])
      c.fail("output_padding must be in [0, stride)");
  std::int64_t begin[2] = {0, 0}, end[2] = {0, 0};
  const std::string auto_pad = c.string_attr("auto_pad", "NOTSET");
  const auto output_shape = c.ints_attr("output_shape");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // ONNX: total padding from the wanted output size; SAME_UPPER puts the odd one at the end.
    if (output_shape && output_shape->size() != 2 && output_shape->size() != 4)
      c.fail("output_shape must have 2 or 4 values");
    for (int a = 0; a < 2; ++a) {
      const std::int64_t want =
          output_shape ? (*output_shape)[output_shape->size() - 2 + static_cast<std::size_t>(a)]
                       : in[a] * s[a];
      const std::int64_t total =
          s[a] * (in[a] - 1) + output_padding[static_cast<std::size_t>(a)] + k[a] - want;
      if (total < 0) c.unsupported("an output_shape larger than the full transposed convolution");
      const bool upper = auto_pad != "SAME_LOWER";
      begin[a] = upper ? total / 2 : total - total / 2;
      end[a] = total - begin[a];
    }
  } else if (auto_pad == "NOTSET") {
    const Dims pads = c.ints_attr("pads").value_or(Dims{0, 0, 0, 0});
    if (pads.size() != 4) c.fail("pads must have 4 values");
    for (std::int64_t p : pads)
      if (p < 0 || p > (std::int64_t{1} << 20)) c.fail(fmt::format("pad {} is out of range", p));
    begin[0] = pads[0], begin[1] = pads[1], end[0] = pads[2], end[1] = pads[3];
  } else if (auto_pad != "VALID") {
    c.fail(
        fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad));
  }
  // The dialect's end pads absorb output_padding (a negative end pad appends rows).
  const std::array<std::int64_t, 4> pads{begin[0], begin[1], end[0] - output_padding[0],
                                         end[1] - output_padding[1]};
  for (int a = 0; a < 2; ++a)
    if (in[a] - 1 > max_tensor_ / s[a]) c.fail("the output is too large");
  const Tensor y = g_.conv_transpose(x, c.tensor(1), sh, sw, pads, group);
  set_tensor(c, add_bias(c, y, 2, wv.dims[1] * group));
}

inline void Importer::pool(const NodeContext& c, bool is_max) {
  Tensor x = c.tensor(0);
  if (g_.shape(x).size() != 4) c.unsupported("only 2-D pooling (NCHW) is supported");
  const auto [kh, kw] = pair_of(c, c.ints_attr("kernel_shape").value_or(Dims{}), "kernel_shape");
  const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
  if (c.int_attr("ceil_mode", 0) != 0) c.unsupported_checked("ceil_mode is not supported");
  require_unit(c, "dilations");
  if (c.node.output_size() > 1 && !c.node.output(1).empty())
    c.unsupported("MaxPool's Indices output is not supported");
  if (c.int_attr("storage_order", 0) != 0) c.unsupported_checked("storage_order is not supported");
  // The dialect's windows exclude padding from a max and from an average's divisor (ONNX's
  // count_include_pad = 0): SAME or VALID fit. With count_include_pad = 1 an average counts
  // the padding zeros, which is an average over the explicitly zero-padded input. A max with
  // other pads (torchvision ResNet's 3x3 stride-2 pads-1 MaxPool) takes the edge-padded input.
  const bool include_pad = !is_max && c.int_attr("count_include_pad", 0) != 0;
  const tensor::Padding pad = window_padding(c, x, kh, kw, sh, sw,
                                             is_max        ? ExplicitPads::Edge
                                             : include_pad ? ExplicitPads::Zeros
                                                           : ExplicitPads::Reject);
  if (include_pad && pad == tensor::Padding::Same) {
    const Dims d = g_.shape(x);  // a copy: adding nodes may move the builder's infos
    const auto [th, bh] = same_pads(d[2], kh, sh);
    const auto [tw, bw] = same_pads(d[3], kw, sw);
    if (th || bh) x = g_.pad(x, 2, th, bh);
    if (tw || bw) x = g_.pad(x, 3, tw, bw);
    return set_tensor(c, g_.poolavg(x, kh, kw, sh, sw, tensor::Padding::Valid));
  }
  set_tensor(c, is_max ? g_.poolmax(x, kh, kw, sh, sw, pad) : g_.poolavg(x, kh, kw, sh, sw, pad));
}

inline void Importer::global_pool(const NodeContext& c, bool is_max) {
  Tensor x = c.tensor(0);
  const Dims d = g_.shape(x);  // a copy: adding nodes may move the builder's infos
  if (d.size() != 4) c.unsupported("only NCHW inputs are supported");
  set_tensor(c, is_max ? g_.poolmax(x, d[2], d[3], 1, 1, tensor::Padding::Valid)
                       : g_.poolavg(x, d[2], d[3], 1, 1, tensor::Padding::Valid));
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_CONTRACTIONS_H
