// The Eigen executor's shared kernel vocabulary (Eigen maps, a node's Value) and its elementwise
// kernels: activations and GELU/SiLU/hard-swish, applied to a whole tensor or to a block of rows.
#ifndef TENSAT_EXEC_DETAIL_ELEMENTWISE_H
#define TENSAT_EXEC_DETAIL_ELEMENTWISE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include "tensat/exec/host_tensor.h"
#include "tensat/tensor/node.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

/// A value of a node: an integer, a list, a name, a tensor, a pair or outputs.
struct Value {
  std::int64_t value = 0;
  Dims ints;
  std::string name;
  std::shared_ptr<const HostTensor> t, t2;
  std::vector<std::shared_ptr<const HostTensor>> outs;
};

inline void activate(float* p, std::int64_t n, Activation act) {
  ArrayMap a(p, n);
  switch (act) {
    case Activation::Sigmoid:
      a = 1.0f / (1.0f + (-a).exp());
      break;
    case Activation::Relu:
      a = a.max(0.0f);
      break;
    case Activation::Tanh:
      a = a.tanh();
      break;
    case Activation::None:
      break;
  }
}

/// `activate` from `x` into `out` (which may be `x`).
inline void activate_to(float* out, const float* x, std::int64_t n, Activation act) {
  if (out != x) std::copy_n(x, n, out);
  activate(out, n, act);
}
inline void exp_to(float* out, const float* x, std::int64_t n) {
  ArrayMap(out, n) = ConstArrayMap(x, n).exp();
}

/// GELU's tanh form with Eigen's vectorized tanh (a scalar std::tanh per element costs far more
/// than the roofline prices it at).
inline void gelu(float* p, std::int64_t n) {
  const float c = 0.7978845608028654f;  // sqrt(2 / pi)
  ArrayMap a(p, n);
  a = 0.5f * a * (1.0f + (c * (a + 0.044715f * a.cube())).tanh());
}

/// Eigen's vectorized erf (within 4.3e-7 of std::erf in double over [-6, 6]): vectorized like
/// tanh, whose weight the cost model charges it, where std::erf is a scalar call per element.
inline void erf_inplace(float* p, std::int64_t n) {
  ArrayMap a(p, n);
  a = a.erf();
}
/// Swish, x·sigmoid(x), as x / (1 + exp(−x)).
inline void silu(float* out, const float* x, std::int64_t n) {
  ConstArrayMap a(x, n);
  ArrayMap(out, n) = a / (1.0f + (-a).exp());
}
/// ONNX HardSwish, x·clip(x/6 + 1/2, 0, 1).
inline void hard_swish(float* out, const float* x, std::int64_t n) {
  ConstArrayMap a(x, n);
  ArrayMap(out, n) = a * (a * (1.0f / 6.0f) + 0.5f).max(0.0f).min(1.0f);
}
/// The exact GELU, x·(1 + erf(x·(1/√2)))·0.5, in the order PyTorch's export spells it (with the
/// importer's product by 1/√2 for its division by √2).
inline void gelu_erf(float* out, const float* x, std::int64_t n) {
  const float r = 0.70710678118654752f;
  ConstArrayMap a(x, n);
  ArrayMap(out, n) = a * ((a * r).erf() + 1.0f) * 0.5f;
}

/// SAME padding before the first element along one axis (TensorFlow's convention).
inline std::int64_t pad_before(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pad,
                               std::int64_t out) {
  if (pad != 0) return 0;
  return std::max<std::int64_t>((out - 1) * s + k - in, 0) / 2;
}
inline std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pad) {
  return pad == 0 ? (in + s - 1) / s : (in - k) / s + 1;
}

/// The output positions ow in [0, Wo) whose input column ow * s - p + j lies in [0, W): [lo, hi).
inline void valid_columns(std::int64_t W, std::int64_t Wo, std::int64_t s, std::int64_t p,
                          std::int64_t j, std::int64_t& lo, std::int64_t& hi) {
  const std::int64_t first = p - j;  // ow * s >= first
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  const std::int64_t last = W - 1 + p - j;  // ow * s <= last
  hi = last < 0 ? 0 : last / s + 1;
  lo = std::min(lo, Wo);
  hi = std::clamp(hi, lo, Wo);
}

/// Applies activation `act` to the `rows` x `cols` block at `p` whose rows are `stride` apart.
inline void activate_block(float* p, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                           Activation act) {
  if (act == Activation::None) return;
  for (std::int64_t r = 0; r < rows; ++r) activate(p + r * stride, cols, act);
}

/// Columns [p0, p0 + t) of the im2col matrix of one image and group (`xin`: its Cg channels of
/// H x W) into `dst`, row-major [Cg * kh * kw, t]: row (c, i, j) holds input (c, oh * sh - ph + i,
/// ow * sw - pw + j) for output positions p = oh * Wo + ow, zeros outside the input.
inline void im2col_tile(const float* xin, std::int64_t Cg, std::int64_t H, std::int64_t W,
                        std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw,
                        std::int64_t ph, std::int64_t pw, std::int64_t Wo, std::int64_t p0,
                        std::int64_t t, float* dst) {
  for (std::int64_t c = 0; c < Cg; ++c)
    for (std::int64_t i = 0; i < kh; ++i)
      for (std::int64_t j = 0; j < kw; ++j) {
        std::int64_t lo, hi;
        valid_columns(W, Wo, sw, pw, j, lo, hi);
        std::int64_t p = p0;
        const std::int64_t end = p0 + t;
        while (p < end) {  // one output row (or the part of it in the tile) at a time
          const std::int64_t oh = p / Wo, ow0 = p % Wo, len = std::min(Wo - ow0, end - p);
          const std::int64_t ih = oh * sh - ph + i;
          if (ih < 0 || ih >= H) {
            std::fill_n(dst, len, 0.0f);
          } else {
            const float* row = xin + (c * H + ih) * W;
            const std::int64_t a = std::clamp(lo, ow0, ow0 + len), b = std::clamp(hi, a, ow0 + len);
            std::fill_n(dst, a - ow0, 0.0f);
            if (sw == 1)
              std::copy_n(row + a - pw + j, b - a, dst + (a - ow0));
            else
              for (std::int64_t ow = a; ow < b; ++ow) dst[ow - ow0] = row[ow * sw - pw + j];
            std::fill_n(dst + (b - ow0), ow0 + len - b, 0.0f);
          }
          dst += len;
          p += len;
        }
      }
}

/// Output positions per GEMM of a convolution whose column block has `rows` rows: the block
/// [rows, T] is kept near 1 MiB (at least 256 columns). For a convolution lowered to im2col the
/// rows are the im2col rows (K): the block stays in the L2 cache between the copy and the product
/// (Eigen runs a product whose operand is tens of megabytes, as VGG-19's first layers' 115 MB
/// im2col matrices, at about half the rate of one that fits). For a 1x1 convolution they are the
/// output rows: the output block is still in cache when the activation runs.
inline std::int64_t conv_tile_columns(std::int64_t rows, std::int64_t P) {
  const std::int64_t target = std::max<std::int64_t>(262144 / std::max<std::int64_t>(rows, 1), 256);
  return std::min(P, target);
}

/// Called on a contraction's result part by part, right after the part is computed (still in
/// cache): `(start, length)`, a contiguous range of flat output positions. A fused kernel's
/// elementwise epilogue runs here (XLA's kOutput fusion).
using Epilogue = std::function<void(std::int64_t start, std::int64_t length)>;

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_ELEMENTWISE_H
