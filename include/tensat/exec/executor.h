// A reference executor of the tensor dialect on the CPU (Eigen): evaluates programs on concrete
// tensors, generates deterministic random inputs and weights, precomputes weight-only subgraphs,
// and checks numerically that an optimized program computes what the original did.
#ifndef TENSAT_EXEC_EXECUTOR_H
#define TENSAT_EXEC_EXECUTOR_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// A tensor on the host: row-major f32 data (f16/bf16 values are stored rounded to their type).
struct HostTensor {
  DType dtype = DType::F32;
  Dims dims;
  std::vector<float> data;

  HostTensor() = default;
  HostTensor(Dims d, DType t = DType::F32)
      : dtype(t), dims(std::move(d)), data(static_cast<std::size_t>(count(dims)), 0.0f) {}
  HostTensor(Dims d, std::vector<float> values, DType t = DType::F32)
      : dtype(t), dims(std::move(d)), data(std::move(values)) {}

  [[nodiscard]] static std::int64_t count(const Dims& d) noexcept {
    std::int64_t n = 1;
    for (std::int64_t x : d) n *= x;
    return n;
  }
  [[nodiscard]] std::int64_t elements() const noexcept { return count(dims); }
  [[nodiscard]] std::size_t rank() const noexcept { return dims.size(); }
};

/// Inputs and weights by name.
using Bindings = std::map<std::string, HostTensor>;

/// An execution failure.
class ExecutionError : public Error {
 public:
  using Error::Error;
};
/// An `input` or `weight` with no binding of its name.
class MissingBindingError : public ExecutionError {
 public:
  explicit MissingBindingError(std::string name)
      : ExecutionError(fmt::format("execute: no binding for '{}'", name)), name_(std::move(name)) {}
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};
/// A binding whose shape differs from its declaration.
class BindingShapeError : public ExecutionError {
 public:
  BindingShapeError(std::string name, const Dims& want, const Dims& got)
      : ExecutionError(fmt::format("execute: '{}' is declared {} but bound to {}", name,
                                   dims_to_string(want), dims_to_string(got))),
        name_(std::move(name)) {}
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

/// An `opaque` node: an operator the dialect does not know, which no executor can run.
class OpaqueOpError : public ExecutionError {
 public:
  OpaqueOpError(std::size_t node, std::string op_type)
      : ExecutionError(fmt::format(
            "execute: node {} is the opaque operator '{}', which the executor cannot run", node,
            op_type)),
        op_type_(std::move(op_type)) {}
  [[nodiscard]] const std::string& op_type() const noexcept { return op_type_; }

 private:
  std::string op_type_;
};

/// f32 rounded to bf16 (round to nearest even on the upper 16 bits; NaN kept).
[[nodiscard]] inline float round_bf16(float x) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float out;
  std::memcpy(&out, &u, 4);
  return out;
}
/// f32 rounded to IEEE f16 (round to nearest even; overflow to infinity; subnormals kept).
[[nodiscard]] inline float round_f16(float x) noexcept {
  if (std::isnan(x) || std::isinf(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  if (a < std::ldexp(1.0f, -25))
    return std::copysign(0.0f, x);  // below half the smallest subnormal
  int e = 0;
  std::frexp(a, &e);                     // a = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, -14);  // f16 exponent (subnormals share -14)
  const float quantum = std::ldexp(1.0f, exp - 10);
  return std::copysign(std::nearbyint(a / quantum) * quantum, x);  // default rounding: to even
}
[[nodiscard]] inline float round_to(float x, DType t) noexcept {
  return t == DType::F32 ? x : t == DType::BF16 ? round_bf16(x) : round_f16(x);
}
inline void round_tensor(HostTensor& t) {
  if (t.dtype == DType::F32) return;
  for (float& v : t.data) v = round_to(v, t.dtype);
}

namespace detail {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

inline constexpr float kNormEps = 1e-5f;

/// A value of a node: an integer, a list, a name, a tensor, a pair or outputs.
struct Value {
  std::int64_t value = 0;
  Dims ints;
  std::string name;
  std::shared_ptr<const HostTensor> t, t2;
  std::vector<std::shared_ptr<const HostTensor>> outs;
};

inline void activate(float* p, std::int64_t n, std::int64_t act) {
  ArrayMap a(p, n);
  switch (act) {
    case 1:
      a = 1.0f / (1.0f + (-a).exp());
      break;
    case 2:
      a = a.max(0.0f);
      break;
    case 3:
      a = a.tanh();
      break;
    default:
      break;
  }
}

/// `activate` from `x` into `out` (which may be `x`).
inline void activate_to(float* out, const float* x, std::int64_t n, std::int64_t act) {
  if (out != x) std::copy_n(x, n, out);
  activate(out, n, act);
}
inline void exp_to(float* out, const float* x, std::int64_t n) {
  ArrayMap(out, n) = ConstArrayMap(x, n).exp();
}

/// GELU's tanh form with Eigen's vectorized tanh (a scalar std::tanh per element ran 25x the
/// roofline's price).
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
                           std::int64_t act) {
  if (act == 0) return;
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

/// A depthwise convolution's input channel rearranged so that every tap is one contiguous run:
/// the zero-padded channel split by stride phase, plane (a, b) holding padded rows a, a + sh, ...
/// and columns b, b + sw, ... (one plane at stride 1). Tap (i, j) of output row r, column c reads
/// plane (i % sh, j % sw) at row r + i / sh, column c + j / sw; with the planes `wide` columns
/// wide and the output computed `wide` columns wide too (the columns past Wo discarded), the
/// tap's reads for all output positions are one run starting at (i / sh) * wide + j / sw.
class DepthwisePlanes {
 public:
  DepthwisePlanes(std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw,
                  std::int64_t Ho, std::int64_t Wo)
      : kw_(kw),
        sh_(sh),
        sw_(sw),
        rows_(Ho + (kh - 1) / sh + 1),
        wide_(Wo + (kw - 1) / sw),
        data_(static_cast<std::size_t>(sh * sw * rows_ * wide_)) {}

  /// Fills the planes from one input channel (H x W; `ph`, `pw` the padding before).
  void load(const float* xin, std::int64_t H, std::int64_t W, std::int64_t ph, std::int64_t pw) {
    std::fill(data_.begin(), data_.end(), 0.0f);
    for (std::int64_t a = 0; a < sh_; ++a)
      for (std::int64_t b = 0; b < sw_; ++b) {
        float* plane = data_.data() + (a * sw_ + b) * rows_ * wide_;
        std::int64_t c0, c1;  // the columns c whose input column c * sw + b - pw lies in [0, W)
        valid_columns(W, wide_, sw_, pw, b, c0, c1);
        for (std::int64_t r = 0; r < rows_; ++r) {
          const std::int64_t ih = r * sh_ + a - ph;
          if (ih < 0 || ih >= H) continue;
          const float* row = xin + ih * W;
          float* dst = plane + r * wide_;
          if (sw_ == 1)
            std::copy_n(row + (c0 - pw), c1 - c0, dst + c0);
          else
            for (std::int64_t c = c0; c < c1; ++c) dst[c] = row[c * sw_ + b - pw];
        }
      }
  }

  /// The run tap `t` (row-major over the kernel) reads, `length` floats.
  [[nodiscard]] ConstArrayMap tap(std::int64_t t, std::int64_t length) const {
    const std::int64_t i = t / kw_, j = t % kw_;
    return ConstArrayMap(
        data_.data() + ((i % sh_) * sw_ + j % sw_) * rows_ * wide_ + (i / sh_) * wide_ + j / sw_,
        length);
  }
  [[nodiscard]] std::int64_t wide() const noexcept { return wide_; }

 private:
  std::int64_t kw_, sh_, sw_, rows_, wide_;
  std::vector<float> data_;
};

/// The `Og` output channels of one input channel of a depthwise convolution (one input channel
/// per group; `Og` > 1 with a channel multiplier), from `planes` loaded with that channel: each
/// output computed `planes.wide()` columns wide, taps three at a time in one pass over it (a
/// pass per tap would read and write the accumulator kh * kw times), then its Wo columns copied
/// out. `wk`: the Og filters, kh * kw taps each; `acc`: scratch of Ho * planes.wide() floats.
inline void depthwise_outputs(const DepthwisePlanes& planes, const float* wk, std::int64_t Og,
                              std::int64_t taps, std::int64_t Ho, std::int64_t Wo, float* acc,
                              float* out) {
  const std::int64_t wide = planes.wide(), n = Ho * wide;
  ArrayMap sum(acc, n);
  for (std::int64_t o = 0; o < Og; ++o) {
    const float* v = wk + o * taps;
    const auto tap = [&](std::int64_t t) { return planes.tap(t, n); };
    sum.setZero();
    std::int64_t t = 0;
    for (; t + 3 <= taps; t += 3)
      sum += v[t] * tap(t) + v[t + 1] * tap(t + 1) + v[t + 2] * tap(t + 2);
    if (taps - t == 2)
      sum += v[t] * tap(t) + v[t + 1] * tap(t + 1);
    else if (taps - t == 1)
      sum += v[t] * tap(t);
    float* y = out + o * Ho * Wo;
    for (std::int64_t r = 0; r < Ho; ++r) std::copy_n(acc + r * wide, Wo, y + r * Wo);
  }
}

/// Called on a contraction's result part by part, right after the part is computed (still in
/// cache): `(start, length)`, a contiguous range of flat output positions. A fused kernel's
/// elementwise epilogue runs here (XLA's kOutput fusion).
using Epilogue = std::function<void(std::int64_t start, std::int64_t length)>;

/// The output shape of conv2d.
inline Dims conv2d_dims(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                        std::int64_t pad) {
  return Dims{x.dims[0], w.dims[0], window_out(x.dims[2], w.dims[2], sh, pad),
              window_out(x.dims[3], w.dims[3], sw, pad)};
}

/// conv2d into `out` (shape `conv2d_dims`), calling `epilogue` (if any) on each finished part of
/// the output: a group's channels (all their positions, one contiguous range), or a depthwise
/// convolution's outputs of one input channel. `by_block`: on each column block's rows instead,
/// as the block is computed (still in cache), for an epilogue whose other operands are per-channel
/// views or scalars (a full-size operand read in per-channel segments costs more than it saves).
inline void conv2d_into(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                        std::int64_t pad, std::int64_t act, HostTensor& out,
                        const Epilogue* epilogue = nullptr, bool by_block = false) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t O = w.dims[0], Cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const std::int64_t G = C / Cg, Og = O / G;
  const std::int64_t Ho = window_out(H, kh, sh, pad), Wo = window_out(W, kw, sw, pad);
  const std::int64_t ph = pad_before(H, kh, sh, pad, Ho), pw = pad_before(W, kw, sw, pad, Wo);
  const std::int64_t K = Cg * kh * kw, P = Ho * Wo;
  if (Cg == 1 &&
      G > 1) {  // depthwise (with a channel multiplier when Og > 1): no product to lower to
    DepthwisePlanes planes(kh, kw, sh, sw, Ho, Wo);
    std::vector<float> acc(static_cast<std::size_t>(Ho * planes.wide()));
    for (std::int64_t nc = 0; nc < N * C; ++nc) {
      planes.load(x.data.data() + nc * H * W, H, W, ph, pw);
      float* o = out.data.data() + nc * Og * P;
      depthwise_outputs(planes, w.data.data() + (nc % C) * Og * K, Og, K, Ho, Wo, acc.data(), o);
      activate(o, Og * P, act);
      if (epilogue) (*epilogue)(nc * Og * P, Og * P);
    }
    return;
  }
  // A 1x1, stride-1 convolution reads its input as the product's operand, in column blocks whose
  // output (about 1 MiB) stays in cache for the activation; otherwise im2col block by block.
  const bool direct =
      kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && Ho == H && Wo == W;
  const std::int64_t T = direct ? conv_tile_columns(Og, P) : conv_tile_columns(K, P);
  std::vector<float> col(direct ? 0 : static_cast<std::size_t>(K * T));
  using Strided = Eigen::OuterStride<>;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < G; ++g) {
      const float* xin = x.data.data() + (n * C + g * Cg) * H * W;
      Eigen::Map<const RowMatrix> Wm(w.data.data() + g * Og * K, Og, K);
      float* y = out.data.data() + (n * O + g * Og) * P;
      for (std::int64_t p0 = 0; p0 < P; p0 += T) {
        const std::int64_t t = std::min(T, P - p0);
        Eigen::Map<RowMatrix, 0, Strided> Ym(y + p0, Og, t, Strided(P));
        if (direct) {
          Ym.noalias() = Wm * Eigen::Map<const RowMatrix, 0, Strided>(xin + p0, K, t, Strided(P));
        } else {
          im2col_tile(xin, Cg, H, W, kh, kw, sh, sw, ph, pw, Wo, p0, t, col.data());
          Ym.noalias() = Wm * Eigen::Map<const RowMatrix>(col.data(), K, t);
        }
        activate_block(y + p0, Og, t, P, act);  // the activation, while the block is in cache
        if (epilogue && by_block)
          for (std::int64_t o = 0; o < Og; ++o) (*epilogue)((n * O + g * Og + o) * P + p0, t);
      }
      // Otherwise the epilogue runs once per group, on its whole rows: one contiguous range.
      // With a full-size operand, per-block calls read it in Og strided segments between the
      // products, which is slower (bench/conv_epilogue_bench); the group's output, just
      // written, is then read from the last-level cache where it fits there.
      if (epilogue && !by_block) (*epilogue)((n * O + g * Og) * P, Og * P);
    }
}

inline HostTensor conv2d(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                         std::int64_t pad, std::int64_t act) {
  HostTensor out(conv2d_dims(x, w, sh, sw, pad), x.dtype);
  conv2d_into(x, w, sh, sw, pad, act, out);
  return out;
}

// Winograd F(2x2, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
// CVPR 2016): a 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A of the 4x4 input tile d at twice
// its position, g the 3x3 filter, with
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// Summed over input channels, position k of the 4x4 transformed tile is one product
// U_k [C_out x C_in] . V_k [C_in x tiles]: 16 GEMMs of 16 multiplies per tile where direct
// convolution spends 36 (4 outputs x 9 taps).

/// `wino_weight`: U [16, O, C], U[k][o][c] = (G w[o][c] G^T) at k = 4 * row + column.
inline HostTensor wino_weight(const HostTensor& w) {
  const std::int64_t O = w.dims[0], C = w.dims[1];
  HostTensor u(Dims{16, O, C}, w.dtype);
  static constexpr float G[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t c = 0; c < C; ++c) {
      const float* g = w.data.data() + (o * C + c) * 9;
      float gg[4][3];  // G g
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
          gg[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          u.data[static_cast<std::size_t>(((i * 4 + j) * O + o) * C + c)] =
              gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
    }
  return u;
}

/// `wino_conv2d`: conv2d(x, w, 1, 1, pad, act) with u = wino_weight(w), image by image in blocks
/// of whole tile rows. Each transform runs on arrays over a tile row's tiles (vectorized; a
/// row's even and odd columns split once), the output's last row and column clipped when odd.
inline HostTensor wino_conv2d(const HostTensor& x, const HostTensor& u, std::int64_t pad,
                              std::int64_t act) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3], O = u.dims[1];
  const std::int64_t Ho = window_out(H, 3, 1, pad), Wo = window_out(W, 3, 1, pad);
  const std::int64_t ph = pad_before(H, 3, 1, pad, Ho), pw = pad_before(W, 3, 1, pad, Wo);
  const std::int64_t th = (Ho + 1) / 2, tw = (Wo + 1) / 2;
  const std::int64_t rows = std::min(th, wino_block_rows(C, O, tw)), T = rows * tw;
  HostTensor out(Dims{N, O, Ho, Wo}, x.dtype);
  std::vector<float> V(static_cast<std::size_t>(16 * C * T)),
      M(static_cast<std::size_t>(16 * O * T));
  // One input row's columns 2q - pw and 2q + 1 - pw, q in [0, tw], zero outside the input.
  std::vector<float> even(static_cast<std::size_t>(4 * (tw + 1))), odd(even.size());
  Eigen::ArrayXf t(tw * 16), s(tw * 8);  // per tile row: the row transform, then the column one
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t r0 = 0; r0 < th; r0 += rows) {
      const std::int64_t nr = std::min(rows, th - r0), nt = nr * tw;
      for (std::int64_t c = 0; c < C; ++c) {
        const float* xc = x.data.data() + (n * C + c) * H * W;
        for (std::int64_t r = 0; r < nr; ++r) {
          for (std::int64_t i = 0; i < 4;
               ++i) {  // input row 2 (r0 + r) - ph + i, split by column parity
            const std::int64_t ih = 2 * (r0 + r) - ph + i;
            float* e = even.data() + i * (tw + 1);
            float* o = odd.data() + i * (tw + 1);
            for (std::int64_t q = 0; q <= tw; ++q) {
              const std::int64_t c0 = 2 * q - pw, c1 = c0 + 1;
              const bool in_row = ih >= 0 && ih < H;
              e[q] = in_row && c0 >= 0 && c0 < W ? xc[ih * W + c0] : 0.0f;
              o[q] = in_row && c1 >= 0 && c1 < W ? xc[ih * W + c1] : 0.0f;
            }
          }
          // d B for each row i of the tiles: columns (2q, 2q+1, 2q+2, 2q+3) = (e[q], o[q], e[q+1],
          // o[q+1]).
          for (std::int64_t i = 0; i < 4; ++i) {
            const Eigen::Map<const Eigen::ArrayXf> e0(even.data() + i * (tw + 1), tw),
                e1(even.data() + i * (tw + 1) + 1, tw);
            const Eigen::Map<const Eigen::ArrayXf> o0(odd.data() + i * (tw + 1), tw),
                o1(odd.data() + i * (tw + 1) + 1, tw);
            t.segment((i * 4 + 0) * tw, tw) = e0 - e1;
            t.segment((i * 4 + 1) * tw, tw) = o0 + e1;
            t.segment((i * 4 + 2) * tw, tw) = e1 - o0;
            t.segment((i * 4 + 3) * tw, tw) = o0 - o1;
          }
          // B^T (d B): rows combined the same way, into V[k][c][tile].
          for (std::int64_t b = 0; b < 4; ++b) {
            const auto row = [&](std::int64_t i) { return t.segment((i * 4 + b) * tw, tw); };
            const auto v = [&](std::int64_t a) {
              return Eigen::Map<Eigen::ArrayXf>(V.data() + ((a * 4 + b) * C + c) * T + r * tw, tw);
            };
            v(0) = row(0) - row(2);
            v(1) = row(1) + row(2);
            v(2) = row(2) - row(1);
            v(3) = row(1) - row(3);
          }
        }
      }
      using Strided = Eigen::OuterStride<>;
      for (std::int64_t k = 0; k < 16; ++k) {
        Eigen::Map<const RowMatrix> Uk(u.data.data() + k * O * C, O, C);
        Eigen::Map<const RowMatrix, 0, Strided> Vk(V.data() + k * C * T, C, nt, Strided(T));
        Eigen::Map<RowMatrix, 0, Strided> Mk(M.data() + k * O * T, O, nt, Strided(T));
        Mk.noalias() = Uk * Vk;
      }
      for (std::int64_t o = 0; o < O; ++o) {
        float* y = out.data.data() + (n * O + o) * Ho * Wo;
        for (std::int64_t r = 0; r < nr; ++r) {
          const auto m = [&](std::int64_t a, std::int64_t b) {
            return Eigen::Map<const Eigen::ArrayXf>(M.data() + ((a * 4 + b) * O + o) * T + r * tw,
                                                    tw);
          };
          for (std::int64_t b = 0; b < 4; ++b) {  // A^T m: two rows
            s.segment((0 * 4 + b) * tw, tw) = m(0, b) + m(1, b) + m(2, b);
            s.segment((1 * 4 + b) * tw, tw) = m(1, b) - m(2, b) - m(3, b);
          }
          for (std::int64_t a = 0; a < 2;
               ++a) {  // (A^T m) A: two columns, interleaved into the row
            const std::int64_t oh = 2 * (r0 + r) + a;
            if (oh >= Ho) break;
            const auto col = [&](std::int64_t b) { return s.segment((a * 4 + b) * tw, tw); };
            const Eigen::ArrayXf left = col(0) + col(1) + col(2), right = col(1) - col(2) - col(3);
            float* yr = y + oh * Wo;
            for (std::int64_t q = 0; q < tw; ++q) {
              yr[2 * q] = left[q];
              if (2 * q + 1 < Wo) yr[2 * q + 1] = right[q];
            }
            activate(yr, Wo, act);
          }
        }
      }
    }
  return out;
}

/// The output shape of matmul.
inline Dims matmul_dims(const HostTensor& a, const HostTensor& b) {
  Dims dims = a.dims;
  dims.back() = b.dims.back();
  return dims;
}

/// matmul into `out` (shape `matmul_dims`), calling `epilogue` (if any) on each batch entry's
/// product once computed and activated.
inline void matmul_into(const HostTensor& a, const HostTensor& b, std::int64_t act, HostTensor& out,
                        const Epilogue* epilogue = nullptr) {
  const std::size_t r = a.rank();
  const std::int64_t M = a.dims[r - 2], K = a.dims[r - 1], Nn = b.dims[r - 1];
  std::int64_t batch = 1;
  for (std::size_t i = 0; i + 2 < r; ++i) batch *= a.dims[i];
  for (std::int64_t i = 0; i < batch; ++i) {
    Eigen::Map<const RowMatrix> A(a.data.data() + i * M * K, M, K);
    Eigen::Map<const RowMatrix> B(b.data.data() + i * K * Nn, K, Nn);
    Eigen::Map<RowMatrix> Cm(out.data.data() + i * M * Nn, M, Nn);
    Cm.noalias() = A * B;
    activate(out.data.data() + i * M * Nn, M * Nn, act);
    if (epilogue) (*epilogue)(i * M * Nn, M * Nn);
  }
}

inline HostTensor matmul(const HostTensor& a, const HostTensor& b, std::int64_t act) {
  HostTensor out(matmul_dims(a, b), a.dtype);
  matmul_into(a, b, act, out);
  return out;
}

/// The output positions along one axis whose window lies wholly inside the input (no padding in
/// it): [begin, end), those valid for the window's first tap and for its last (`valid_columns`);
/// empty when the window is wider than the input.
struct InnerWindows {
  std::int64_t begin = 0, end = 0;
  InnerWindows(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s,
               std::int64_t pad) {
    std::int64_t first_tap_end = 0, last_tap_begin = 0;
    valid_columns(in, out, s, pad, 0, begin, first_tap_end);
    valid_columns(in, out, s, pad, k - 1, last_tap_begin, end);
    end = std::max(end, begin);
  }
};

/// The input positions [first, last) along one axis in the window of output position `o`
/// (stride `s`, `pad` before the first element, window `k`, input extent `in`): the window
/// clipped to the input.
struct WindowSpan {
  std::int64_t first = 0, last = 0;
  WindowSpan(std::int64_t o, std::int64_t s, std::int64_t pad, std::int64_t k, std::int64_t in)
      : first(std::max<std::int64_t>(o * s - pad, 0)), last(std::min(o * s - pad + k, in)) {}
  [[nodiscard]] std::int64_t size() const noexcept { return last - first; }
};

/// A pool's reduction. A max starts from -inf and keeps its running value when a tap is NaN
/// (std::max keeps its first operand), so NaNs are passed over and a window of NaNs gives -inf.
template <bool IsMax>
struct PoolReduce {
  static constexpr float init() noexcept {
    return IsMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  }
  static float combine(float acc, float v) noexcept { return IsMax ? std::max(acc, v) : acc + v; }
};

/// Pass 1 of a pool, over `rows` input rows of width W at once: each row's part of every window,
/// out[r * pitch + ow] = the reduction of row r's columns in output column ow's window.
/// With a unit stride (pitch = W) the windows inside the rows are one flat pass over all rows,
/// so that a small plane costs no per-row loop set-up; the columns whose windows reach the
/// padding (computed across a row boundary there) are then recomputed from their own columns.
template <bool IsMax>
void pool_rows(const float* in, std::int64_t rows, std::int64_t W, std::int64_t Wo, std::int64_t kw,
               std::int64_t sw, std::int64_t pw, float* out, std::int64_t pitch) {
  using R = PoolReduce<IsMax>;
  const InnerWindows inner(W, Wo, kw, sw, pw);
  if (inner.end > inner.begin) {
    if (sw == 1) {
      const std::int64_t first = inner.begin, last = (rows - 1) * W + inner.end;
      const float* x = in - pw;  // the window of flat position i starts at x[i]
      if (kw == 3) {
        for (std::int64_t i = first; i < last; ++i)
          out[i] = R::combine(R::combine(R::combine(R::init(), x[i]), x[i + 1]), x[i + 2]);
      } else {
        for (std::int64_t i = first; i < last; ++i) out[i] = R::combine(R::init(), x[i]);
        for (std::int64_t j = 1; j < kw; ++j)
          for (std::int64_t i = first; i < last; ++i) out[i] = R::combine(out[i], x[i + j]);
      }
    } else {
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = in + r * W - pw;
        float* o = out + r * pitch;
        if (kw == 3 && sw == 2) {  // the common strided window, its stride a constant (vectorized)
          for (std::int64_t ow = inner.begin; ow < inner.end; ++ow)
            o[ow] = R::combine(R::combine(R::combine(R::init(), row[2 * ow]), row[2 * ow + 1]),
                               row[2 * ow + 2]);
          continue;
        }
        for (std::int64_t ow = inner.begin; ow < inner.end; ++ow) {
          const float* t = row + ow * sw;
          float acc = R::init();
          for (std::int64_t j = 0; j < kw; ++j) acc = R::combine(acc, t[j]);
          o[ow] = acc;
        }
      }
    }
  }
  // The edge columns, each from the part of its window inside the row.
  for (std::int64_t ow = 0; ow < Wo; ++ow) {
    if (ow == inner.begin) ow = std::max(inner.end, ow);
    if (ow >= Wo) break;
    const WindowSpan cols(ow, sw, pw, kw, W);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * W;
      float acc = R::init();
      for (std::int64_t c = cols.first; c < cols.last; ++c) acc = R::combine(acc, row[c]);
      out[r * pitch + ow] = acc;
    }
  }
}

/// Pass 2 of a pool: each output row of `planes` planes from the kh rows of pass 1 in its window
/// (`rows`: H rows of `pitch` per plane; `out`: Ho rows of Wo). When the output rows have the
/// rows' pitch and count (a unit stride along both axes, SAME), the rows inside their planes are
/// one flat pass over all planes; the rows whose windows reach the padding are then recomputed.
template <bool IsMax>
void pool_columns(const float* rows, std::int64_t planes, std::int64_t H, std::int64_t pitch,
                  std::int64_t Ho, std::int64_t Wo, std::int64_t kh, std::int64_t sh,
                  std::int64_t ph, float* out) {
  using R = PoolReduce<IsMax>;
  const InnerWindows inner(H, Ho, kh, sh, ph);
  const auto output_row = [&](const float* plane_rows, float* o, std::int64_t oh) {
    const WindowSpan window(oh, sh, ph, kh, H);
    const float* r = plane_rows + window.first * pitch;
    if (window.size() == 3) {
      const float *r1 = r + pitch, *r2 = r1 + pitch;
      for (std::int64_t ow = 0; ow < Wo; ++ow)
        o[ow] = R::combine(R::combine(R::combine(R::init(), r[ow]), r1[ow]), r2[ow]);
      return;
    }
    for (std::int64_t ow = 0; ow < Wo; ++ow) o[ow] = R::combine(R::init(), r[ow]);
    for (std::int64_t ih = window.first + 1; ih < window.last; ++ih) {
      r += pitch;
      for (std::int64_t ow = 0; ow < Wo; ++ow) o[ow] = R::combine(o[ow], r[ow]);
    }
  };
  const bool flat = sh == 1 && pitch == Wo && Ho == H && inner.end > inner.begin;
  if (flat) {
    const std::int64_t first = inner.begin * Wo, last = ((planes - 1) * H + inner.end) * Wo;
    const float* x = rows - ph * Wo;  // the window of flat position j starts at x[j]
    if (kh == 3) {
      const float *x1 = x + Wo, *x2 = x1 + Wo;
      for (std::int64_t j = first; j < last; ++j)
        out[j] = R::combine(R::combine(R::combine(R::init(), x[j]), x1[j]), x2[j]);
    } else {
      for (std::int64_t j = first; j < last; ++j) out[j] = R::combine(R::init(), x[j]);
      for (std::int64_t i = 1; i < kh; ++i)
        for (std::int64_t j = first; j < last; ++j) out[j] = R::combine(out[j], x[j + i * Wo]);
    }
  }
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* plane_rows = rows + p * H * pitch;
    float* plane_out = out + p * Ho * Wo;
    for (std::int64_t oh = 0; oh < Ho; ++oh) {
      if (flat && oh == inner.begin) oh = inner.end;  // done above
      if (oh >= Ho) break;
      output_row(plane_rows, plane_out + oh * Wo, oh);
    }
  }
}

/// Windowed pooling of all N * C planes separably (each input row's part of every window once,
/// then each output row from its window's rows), both passes over every plane at once where the
/// windows allow, so that small planes (Inception's 8x8) cost no per-plane loop set-up.
template <bool IsMax>
void pool_windows(const HostTensor& x, std::int64_t kh, std::int64_t kw, std::int64_t sh,
                  std::int64_t sw, std::int64_t ph, std::int64_t pw, HostTensor& out) {
  const std::int64_t planes = x.dims[0] * x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t Ho = out.dims[2], Wo = out.dims[3];
  // A unit stride keeps the input's row pitch, so that pass 1 runs flat over all rows.
  const std::int64_t pitch = sw == 1 ? W : Wo;
  // Not zero-filled: pass 2 reads only the Wo columns of each row, all written by pass 1.
  const std::unique_ptr<float[]> rows(new float[static_cast<std::size_t>(planes * H * pitch)]);
  pool_rows<IsMax>(x.data.data(), planes * H, W, Wo, kw, sw, pw, rows.get(), pitch);
  pool_columns<IsMax>(rows.get(), planes, H, pitch, Ho, Wo, kh, sh, ph, out.data.data());
}

inline HostTensor pool(const HostTensor& x, bool is_max, std::int64_t kh, std::int64_t kw,
                       std::int64_t sh, std::int64_t sw, std::int64_t pad, std::int64_t act) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t Ho = window_out(H, kh, sh, pad), Wo = window_out(W, kw, sw, pad);
  const std::int64_t ph = pad_before(H, kh, sh, pad, Ho), pw = pad_before(W, kw, sw, pad, Wo);
  HostTensor out(Dims{N, C, Ho, Wo}, x.dtype);
  // A window's max or sum is the same whichever way its taps are grouped (the sum up to
  // rounding), and a 3x3 stride-1 pool reads each input element 3 times instead of 9. poolavg
  // divides by the positions inside the input (TensorFlow: padding excluded).
  if (Ho == 1 && Wo == 1 && kh >= H && kw >= W && ph == 0 && pw == 0) {
    // A global pool (the classifier heads'): one reduction per plane.
    for (std::int64_t nc = 0; nc < N * C; ++nc) {
      const ConstArrayMap plane(x.data.data() + nc * H * W, H * W);
      float value;
      if (is_max) {
        // NaNs passed over as the windowed path passes them (a plane of NaNs gives -inf there too).
        value = plane.maxCoeff<Eigen::PropagateNumbers>();
        if (std::isnan(value)) value = -std::numeric_limits<float>::infinity();
      } else {
        value = plane.sum() / static_cast<float>(H * W);
      }
      out.data[static_cast<std::size_t>(nc)] = value;
    }
    activate(out.data.data(), out.elements(), act);
    return out;
  }
  if (is_max) {
    pool_windows<true>(x, kh, kw, sh, sw, ph, pw, out);
  } else {
    pool_windows<false>(x, kh, kw, sh, sw, ph, pw, out);
    // Each output's divisor, the positions of its window inside the input: the same map for
    // every plane.
    std::vector<float> divisor(static_cast<std::size_t>(Ho * Wo));
    for (std::int64_t oh = 0; oh < Ho; ++oh) {
      const auto taps = static_cast<float>(WindowSpan(oh, sh, ph, kh, H).size());
      for (std::int64_t ow = 0; ow < Wo; ++ow)
        divisor[static_cast<std::size_t>(oh * Wo + ow)] =
            taps * static_cast<float>(WindowSpan(ow, sw, pw, kw, W).size());
    }
    const ConstArrayMap d(divisor.data(), Ho * Wo);
    for (std::int64_t nc = 0; nc < N * C; ++nc)
      ArrayMap(out.data.data() + nc * Ho * Wo, Ho * Wo) /= d;
  }
  activate(out.data.data(), out.elements(), act);
  return out;
}

/// outer (dims before axis), extent, inner (dims after axis).
inline void split_dims(const Dims& d, std::int64_t axis, std::int64_t& outer, std::int64_t& extent,
                       std::int64_t& inner) {
  outer = 1;
  inner = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= d[static_cast<std::size_t>(i)];
  extent = d[static_cast<std::size_t>(axis)];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
}

/// Entries [start, end) of x along axis.
inline HostTensor slice(const HostTensor& x, std::int64_t axis, std::int64_t start,
                        std::int64_t end) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d = x.dims;
  d[static_cast<std::size_t>(axis)] = end - start;
  HostTensor out(d, x.dtype);
  const std::int64_t len = (end - start) * inner;
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data.data() + (o * extent + start) * inner, len, out.data.data() + o * len);
  return out;
}

inline HostTensor pad_axis(const HostTensor& x, std::int64_t axis, std::int64_t before,
                           std::int64_t after) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d = x.dims;
  const std::int64_t total = extent + before + after;
  d[static_cast<std::size_t>(axis)] = total;
  HostTensor out(d, x.dtype);
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data.data() + o * extent * inner, extent * inner,
                out.data.data() + (o * total + before) * inner);
  return out;
}

inline HostTensor concat(std::int64_t axis, const std::vector<const HostTensor*>& xs) {
  Dims d = xs[0]->dims;
  std::int64_t total = 0;
  for (const HostTensor* x : xs) total += x->dims[static_cast<std::size_t>(axis)];
  d[static_cast<std::size_t>(axis)] = total;
  HostTensor out(d, xs[0]->dtype);
  std::int64_t outer, extent, inner;
  split_dims(d, axis, outer, extent, inner);
  std::int64_t offset = 0;
  for (const HostTensor* x : xs) {
    const std::int64_t len = x->dims[static_cast<std::size_t>(axis)] * inner;
    for (std::int64_t o = 0; o < outer; ++o)
      std::copy_n(x->data.data() + o * len, len, out.data.data() + o * total * inner + offset);
    offset += len;
  }
  return out;
}

/// out[i] = x[sum_k idx_k * in_stride_k] for output index idx (strides may be 0 for broadcast).
inline void strided_gather(const float* in, const Dims& out_dims,
                           const std::vector<std::int64_t>& in_strides, float* out) {
  const std::size_t r = out_dims.size();
  const std::int64_t n = HostTensor::count(out_dims);
  if (r == 0) {
    if (n) out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t src = 0;
  const std::int64_t last = out_dims[r - 1], last_stride = in_strides[r - 1];
  for (std::int64_t i = 0; i < n; i += last) {
    for (std::int64_t j = 0; j < last; ++j) out[i + j] = in[src + j * last_stride];
    for (std::size_t k = r - 1; k-- > 0;) {  // advance the index over all but the last axis
      src += in_strides[k];
      if (++idx[k] < out_dims[k]) break;
      src -= in_strides[k] * out_dims[k];
      idx[k] = 0;
    }
  }
}

inline std::vector<std::int64_t> strides_of(const Dims& d) {
  std::vector<std::int64_t> s(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

inline HostTensor transpose(const HostTensor& x, const Dims& perm) {
  Dims d;
  const auto in_strides = strides_of(x.dims);
  std::vector<std::int64_t> s;
  for (std::int64_t p : perm) {
    d.push_back(x.dims[static_cast<std::size_t>(p)]);
    s.push_back(in_strides[static_cast<std::size_t>(p)]);
  }
  HostTensor out(d, x.dtype);
  strided_gather(x.data.data(), d, s, out.data.data());
  return out;
}

inline HostTensor broadcast(const HostTensor& x, const Dims& d) {
  const auto in_strides = strides_of(x.dims);
  std::vector<std::int64_t> s(d.size(), 0);
  const std::size_t offset = d.size() - x.rank();
  for (std::size_t i = 0; i < x.rank(); ++i) s[offset + i] = x.dims[i] == 1 ? 0 : in_strides[i];
  HostTensor out(d, x.dtype);
  strided_gather(x.data.data(), d, s, out.data.data());
  return out;
}

inline HostTensor reduce(const HostTensor& x, std::int64_t axis, Op op) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d;
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (static_cast<std::int64_t>(i) != axis) d.push_back(x.dims[i]);
  HostTensor out(d, x.dtype);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      const float* p = x.data.data() + o * extent * inner + in;
      float acc = op == Op::ReduceMax ? -std::numeric_limits<float>::infinity() : 0.0f;
      for (std::int64_t e = 0; e < extent; ++e)
        acc = op == Op::ReduceMax ? std::max(acc, p[e * inner]) : acc + p[e * inner];
      if (op == Op::ReduceMean) acc /= static_cast<float>(extent);
      out.data[static_cast<std::size_t>(o * inner + in)] = acc;
    }
  return out;
}

inline HostTensor softmax(const HostTensor& x, std::int64_t axis) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  HostTensor out = x;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      float* p = out.data.data() + o * extent * inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t e = 0; e < extent; ++e) m = std::max(m, p[e * inner]);
      float sum = 0;
      for (std::int64_t e = 0; e < extent; ++e) sum += (p[e * inner] = std::exp(p[e * inner] - m));
      for (std::int64_t e = 0; e < extent; ++e) p[e * inner] /= sum;
    }
  return out;
}

inline HostTensor layernorm(const HostTensor& x, const HostTensor& gamma, const HostTensor& beta,
                            float eps = kNormEps) {
  const std::int64_t n = x.dims.back(), rows = x.elements() / n;
  HostTensor out = x;
  for (std::int64_t r = 0; r < rows; ++r) {
    ArrayMap v(out.data.data() + r * n, n);
    const float mean = v.mean();
    v -= mean;
    const float var = v.square().mean();
    v = v / std::sqrt(var + eps) * ConstArrayMap(gamma.data.data(), n) +
        ConstArrayMap(beta.data.data(), n);
  }
  return out;
}

inline HostTensor batchnorm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                            const HostTensor& mean, const HostTensor& var) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, 1, outer, extent, inner);
  HostTensor out = x;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < extent; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const float k = scale.data[i] / std::sqrt(var.data[i] + kNormEps);
      ArrayMap v(out.data.data() + (o * extent + c) * inner, inner);
      v = (v - mean.data[i]) * k + bias.data[i];
    }
  return out;
}

inline HostTensor enlarge(const HostTensor& w, const Dims& ref) {
  const std::int64_t O = w.dims[0], I = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const std::int64_t KH = ref[2], KW = ref[3], dh = (KH - kh) / 2, dw = (KW - kw) / 2;
  HostTensor out(Dims{O, I, KH, KW}, w.dtype);
  for (std::int64_t oi = 0; oi < O * I; ++oi)
    for (std::int64_t i = 0; i < kh; ++i)
      std::copy_n(w.data.data() + (oi * kh + i) * kw, kw,
                  out.data.data() + (oi * KH + i + dh) * KW + dw);
  return out;
}

inline HostTensor merge(const HostTensor& w, std::int64_t groups, std::int64_t count) {
  const std::int64_t O = w.dims[0], c = w.dims[1], k = w.dims[2] * w.dims[3], m = O / groups;
  HostTensor out(Dims{O, c * count, w.dims[2], w.dims[3]}, w.dtype);
  for (std::int64_t o = 0; o < O; ++o) {
    const std::int64_t block = (o / m) % count;
    std::copy_n(w.data.data() + o * c * k, c * k,
                out.data.data() + (o * c * count + block * c) * k);
  }
  return out;
}

// ----- Operators of the ONNX extension (conv_transpose, resize, clip).

/// Transposed convolution (ONNX ConvTranspose without dilations): every input pixel scatters
/// `w`'s kernel, scaled, into the full output of (H - 1) * sh + kh rows (likewise columns), from
/// which rows [pt, pt + Ho) are kept; rows past the full output (a negative end pad) are zero.
/// One GEMM per image and group (W_g^T · X_g), then a col2im scatter-add.
inline HostTensor conv_transpose(const HostTensor& x, const HostTensor& w, std::int64_t sh,
                                 std::int64_t sw, std::int64_t pt, std::int64_t pl, std::int64_t pb,
                                 std::int64_t pr, std::int64_t groups) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t Og = w.dims[1], kh = w.dims[2], kw = w.dims[3], Cg = C / groups,
                     O = Og * groups;
  const std::int64_t Ho = (H - 1) * sh + kh - pt - pb, Wo = (W - 1) * sw + kw - pl - pr;
  HostTensor out(Dims{N, O, Ho, Wo}, x.dtype);
  const std::int64_t K = Og * kh * kw, P = H * W;
  RowMatrix cols(K, P);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < groups; ++g) {
      Eigen::Map<const RowMatrix> Wm(w.data.data() + g * Cg * K, Cg, K);
      Eigen::Map<const RowMatrix> Xm(x.data.data() + (n * C + g * Cg) * P, Cg, P);
      cols.noalias() = Wm.transpose() * Xm;
      for (std::int64_t o = 0; o < Og; ++o) {
        float* plane = out.data.data() + (n * O + g * Og + o) * Ho * Wo;
        for (std::int64_t i = 0; i < kh; ++i)
          for (std::int64_t j = 0; j < kw; ++j) {
            const float* col = cols.data() + ((o * kh + i) * kw + j) * P;
            for (std::int64_t ih = 0; ih < H; ++ih) {
              const std::int64_t oh = ih * sh + i - pt;
              if (oh < 0 || oh >= Ho) continue;
              for (std::int64_t iw = 0; iw < W; ++iw) {
                const std::int64_t ow = iw * sw + j - pl;
                if (ow >= 0 && ow < Wo) plane[oh * Wo + ow] += col[ih * W + iw];
              }
            }
          }
      }
    }
  return out;
}

/// The input coordinate of output index `o` along an axis resized from `in` to `out` (ONNX
/// Resize's coordinate transformation, scale = out / in).
inline double resize_coordinate(std::int64_t o, std::int64_t in, std::int64_t out,
                                std::int64_t coord) {
  const double scale = static_cast<double>(out) / static_cast<double>(in);
  switch (static_cast<ResizeCoord>(coord)) {
    case ResizeCoord::HalfPixel:
      return (static_cast<double>(o) + 0.5) / scale - 0.5;
    case ResizeCoord::Asymmetric:
      return static_cast<double>(o) / scale;
    case ResizeCoord::AlignCorners:
      return out == 1 ? 0.0
                      : static_cast<double>(o) * static_cast<double>(in - 1) /
                            static_cast<double>(out - 1);
  }
  return 0.0;
}

/// ONNX Resize of `x` to `dims`, one axis at a time (nearest: each output reads the input at its
/// rounded coordinate, clamped; linear: the two neighbours of the clamped coordinate, weighted).
inline HostTensor resize(const HostTensor& x, const Dims& dims, std::int64_t interp,
                         std::int64_t coord, std::int64_t nearest) {
  HostTensor cur = x;
  for (std::size_t axis = 0; axis < dims.size(); ++axis) {
    const std::int64_t in = cur.dims[axis], out_extent = dims[axis];
    if (in == out_extent) continue;  // every coordinate transformation is the identity then
    std::int64_t outer, extent, inner;
    split_dims(cur.dims, static_cast<std::int64_t>(axis), outer, extent, inner);
    Dims d = cur.dims;
    d[axis] = out_extent;
    HostTensor next(d, cur.dtype);
    std::vector<std::int64_t> lo(static_cast<std::size_t>(out_extent)), hi(lo.size());
    std::vector<float> frac(lo.size(), 0.0f);
    for (std::int64_t o = 0; o < out_extent; ++o) {
      const double c = resize_coordinate(o, in, out_extent, coord);
      const auto k = static_cast<std::size_t>(o);
      if (interp == static_cast<std::int64_t>(ResizeInterp::Nearest)) {
        double r = 0;
        switch (static_cast<ResizeNearest>(nearest)) {
          case ResizeNearest::RoundPreferFloor:
            r = c == std::floor(c) + 0.5 ? std::floor(c) : std::round(c);
            break;
          case ResizeNearest::Floor:
            r = std::floor(c);
            break;
          case ResizeNearest::RoundPreferCeil:
            r = c == std::floor(c) + 0.5 ? std::ceil(c) : std::round(c);
            break;
          case ResizeNearest::Ceil:
            r = std::ceil(c);
            break;
        }
        lo[k] = hi[k] = std::clamp<std::int64_t>(static_cast<std::int64_t>(r), 0, in - 1);
      } else {
        const double cc = std::clamp(c, 0.0, static_cast<double>(in - 1));
        lo[k] = static_cast<std::int64_t>(std::floor(cc));
        hi[k] = std::min(lo[k] + 1, in - 1);
        frac[k] = static_cast<float>(cc - static_cast<double>(lo[k]));
      }
    }
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t e = 0; e < out_extent; ++e) {
        const auto k = static_cast<std::size_t>(e);
        const float* a = cur.data.data() + (o * in + lo[k]) * inner;
        const float* b = cur.data.data() + (o * in + hi[k]) * inner;
        float* y = next.data.data() + (o * out_extent + e) * inner;
        const float f = frac[k];
        for (std::int64_t i = 0; i < inner; ++i) y[i] = f == 0.0f ? a[i] : a[i] + f * (b[i] - a[i]);
      }
    cur = std::move(next);
  }
  return cur;
}

/// Square roots and powers element by element with the C library's correctly rounded `sqrt`
/// and `pow` (Eigen's vectorized forms may differ from them in the last bit).
inline void sqrt_inplace(float* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::sqrt(p[i]);
}
inline void pow_inplace(float* p, const float* e, std::int64_t n) {
  // A square (LayerNorm's variance) as a product: the correctly rounded value `pow` gives too.
  // An exponent of 2 throughout (a broadcast constant, as exporters write it) is one vectorized
  // product: the element-by-element branch ran at 4 ns an element, 3.8x the cost model's price.
  if (std::all_of(e, e + n, [](float v) { return v == 2.0f; })) {
    ArrayMap a(p, n);
    a = a.square();
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) p[i] = e[i] == 2.0f ? p[i] * p[i] : std::pow(p[i], e[i]);
}

/// `min(max(x, lo), hi)` element by element (ONNX Clip: when lo > hi every element is hi).
inline void clip(float* p, std::int64_t n, float lo, float hi) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], lo), hi);
}

/// A fused kernel compiled into one loop over its output (XLA's loop emitter, on the CPU): the
/// body's elementwise, broadcast, injective and reshape terms are evaluated chunk by chunk
/// (`kChunk` elements at a time, in cache), each term reading its operands at the positions its
/// index map gives, so no intermediate of the loop is materialized as a tensor. A contraction in
/// the body runs first as one GEMM over its loop-evaluated operands (its epilogue then reads it
/// chunk by chunk); a reduction root accumulates its operand's chunks as they are produced.
class FusedLoop {
 public:
  /// Elements per chunk: small enough that a body's chunks stay in L1/L2, large enough that the
  /// per-chunk dispatch is amortized and Eigen vectorizes each term.
  static constexpr std::int64_t kChunk = 2048;

  /// Chunk-sized scratch blocks: a loop's own, or shared by the loops an evaluator runs one
  /// after another (a kernel then allocates none).
  struct Scratch {
    std::vector<std::unique_ptr<float[]>> values;
    std::vector<std::unique_ptr<std::int64_t[]>> indices;
  };

  FusedLoop() = default;
  explicit FusedLoop(Scratch& scratch) : scratch_(&scratch) {}
  FusedLoop(const FusedLoop&) = delete;
  FusedLoop& operator=(const FusedLoop&) = delete;

  /// Room for `n` terms.
  void reserve(std::size_t n) {
    terms_.reserve(n);
    memo_.reserve(n);
  }

  /// One term of the body. Leaves (`arg`s, and a contraction once computed) hold a tensor.
  struct Term {
    Op op = Op::Arg;
    DType dtype = DType::F32;
    Dims dims;
    std::int64_t elements = 0;
    std::vector<std::size_t> operands;  ///< tensor operands, as term indices, in order
    std::vector<std::int64_t> attrs;    ///< integer attributes (axis, start, act, ...)
    std::vector<std::int64_t>
        strides;  ///< transpose/broadcast/slice: the operand's stride per output axis
    std::vector<std::int64_t> part_extents;  ///< concat: each part's extent along the axis
    std::int64_t offset = 0;                 ///< slice: the flat offset of the first element
    std::shared_ptr<const HostTensor> leaf;
  };

  /// Adds a term; returns its index. Operands must have been added before.
  std::size_t add(Term t) {
    t.elements = HostTensor::count(t.dims);
    if (t.op == Op::Concat) {  // each part's extent along the axis, once (not per chunk)
      t.part_extents.clear();
      for (std::size_t part : t.operands)
        t.part_extents.push_back(terms_[part].dims[static_cast<std::size_t>(t.attrs[0])]);
    }
    terms_.push_back(std::move(t));
    memo_.push_back({});
    return terms_.size() - 1;
  }
  [[nodiscard]] Term& term(std::size_t t) { return terms_[t]; }

  /// Whether a body op has a loop form here (elementwise, broadcast, injective, reshape).
  [[nodiscard]] static bool loop_op(Op op) noexcept {
    if (is_elementwise(op)) return true;
    switch (op) {
      case Op::Transpose:
      case Op::Broadcast:
      case Op::Slice:
      case Op::Pad:
      case Op::Concat:
      case Op::Reshape:
        return true;
      default:
        return false;
    }
  }

  /// The value of the last term added (the body's root).
  [[nodiscard]] HostTensor run() {
    if (std::optional<HostTensor> out = run_epilogue_in_place()) return std::move(*out);
    // Contractions (at most one in kernels built by fusion_rules; any number works) become leaves.
    for (std::size_t t = 0; t < terms_.size(); ++t) {
      Term& term = terms_[t];
      if (!is_contraction(term.op)) continue;
      const auto a = materialize(term.operands[0]);
      const auto b = materialize(term.operands[1]);
      HostTensor r = term.op == Op::MatMul ? matmul(*a, *b, term.attrs[0])
                                           : conv2d(*a, *b, term.attrs[0], term.attrs[1],
                                                    term.attrs[2], term.attrs[3]);
      r.dtype = term.dtype;
      round_tensor(r);
      term.leaf = std::make_shared<const HostTensor>(std::move(r));
    }
    const std::size_t root = terms_.size() - 1;
    const Term& r = terms_[root];
    if (r.op == Op::ReduceSum || r.op == Op::ReduceMax || r.op == Op::ReduceMean)
      return reduce_root(r);
    if (r.leaf) return *r.leaf;
    HostTensor out(r.dims, r.dtype);
    // An elementwise root writes its chunk straight into the output (no scratch block, no copy):
    // the output is a fresh tensor, so no operand reads it.
    root_output_ = &r;
    for (std::int64_t start = 0; start < r.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, r.elements - start);
      begin_chunk();
      root_output_at_ = out.data.data() + start;
      const float* p = eval(root, Indices{start, n, nullptr});
      if (p != root_output_at_) std::copy_n(p, n, out.data.data() + start);
    }
    root_output_ = nullptr;
    return out;
  }

 private:
  /// Positions in a term's output: the range [start, start + size), or `list[0..size)`.
  struct Indices {
    std::int64_t start = 0, size = 0;
    const std::int64_t* list = nullptr;
    [[nodiscard]] std::int64_t at(std::int64_t k) const noexcept {
      return list ? list[k] : start + k;
    }
  };
  struct Memo {
    std::uint64_t chunk = 0;
    std::int64_t start = 0, size = 0;
    const float* values = nullptr;
  };

  /// Whether an in-place epilogue evaluates `op`: an elementwise op whose operands are read at
  /// the output's positions (smul's scalar and a clip's two bounds aside: tensors from outside
  /// the kernel, read at position 0).
  static bool epilogue_op(Op op) noexcept { return is_elementwise(op); }
  /// Whether operand `k` of `op` is one read at position 0 only (a scalar, not a map).
  static bool scalar_operand(Op op, std::size_t k) noexcept {
    return (op == Op::SMul && k == 1) || (op == Op::Clip && k >= 1);
  }

  /// A kernel whose root is an elementwise epilogue of its one contraction, every term between
  /// them elementwise (or a reshape, or a broadcast of a tensor from outside the kernel) over the
  /// same positions, all f32: the contraction writes straight into the output and the epilogue
  /// runs on each part as the contraction finishes it (`Epilogue`: still in cache), overwriting
  /// it with the kernel's values. Nothing otherwise.
  std::optional<HostTensor> run_epilogue_in_place() {
    const std::size_t root = terms_.size() - 1;
    std::size_t contraction = terms_.size();
    for (std::size_t t = 0; t < terms_.size(); ++t) {
      if (terms_[t].leaf) continue;
      if (terms_[t].dtype != DType::F32) return std::nullopt;
      if (is_contraction(terms_[t].op)) {
        if (contraction != terms_.size()) return std::nullopt;
        contraction = t;
      }
    }
    if (contraction == terms_.size() || !epilogue_op(terms_[root].op)) return std::nullopt;
    const std::int64_t n = terms_[root].elements;
    if (terms_[contraction].elements != n) return std::nullopt;
    // The terms the epilogue evaluates: from the root down to the contraction and the leaves.
    std::vector<bool> seen(terms_.size(), false);
    std::vector<std::size_t> stack{root};
    bool by_block = true;  // no full-size operand besides the product: run on each column block
    while (!stack.empty()) {
      const std::size_t t = stack.back();
      stack.pop_back();
      if (seen[t] || t == contraction) continue;
      seen[t] = true;
      const Term& term = terms_[t];
      if (term.leaf) {
        if (term.elements != n) return std::nullopt;  // read at the output's positions
        by_block = false;
        continue;
      }
      if (term.elements != n) return std::nullopt;
      if (term.op == Op::Broadcast && terms_[term.operands[0]].leaf)
        continue;  // a bias or scale, read as a view
      if (!epilogue_op(term.op) && term.op != Op::Reshape) return std::nullopt;
      for (std::size_t k = 0; k < term.operands.size(); ++k) {
        if (scalar_operand(term.op, k)) {  // read at position 0: a tensor from outside
          if (!terms_[term.operands[k]].leaf) return std::nullopt;
          continue;
        }
        stack.push_back(term.operands[k]);
      }
    }
    Term& c = terms_[contraction];
    const auto a = materialize(c.operands[0]);
    const auto b = materialize(c.operands[1]);
    HostTensor out(terms_[root].dims, DType::F32);
    if (c.op == Op::Conv2d)
      if (const std::optional<std::vector<ChannelStep>> steps = channel_steps(root, contraction)) {
        // Per-channel post-ops: each row of the product, as the convolution finishes it.
        const std::int64_t C = c.dims[1], P = c.dims[2] * c.dims[3];
        const Epilogue channel = [&](std::int64_t start, std::int64_t length) {
          for (std::int64_t at = start, end = start + length; at < end;) {
            const std::int64_t row = at / P, stop = std::min(end, (row + 1) * P);
            apply_channel_steps(*steps, out.data.data() + at, stop - at, row % C);
            at = stop;
          }
        };
        conv2d_into(*a, *b, c.attrs[0], c.attrs[1], c.attrs[2], c.attrs[3], out, &channel, true);
        return out;
      }
    // The contraction's leaf is the output itself: the epilogue reads a part, then overwrites it.
    c.leaf = std::shared_ptr<const HostTensor>(&out, [](const HostTensor*) {});
    // The root writes each chunk straight over the output's part it was computed from (an
    // elementwise term reads its operands at the positions it writes, and nothing reads the
    // root), so the chunk needs no scratch block and no copy.
    root_output_ = &terms_[root];
    const Epilogue epilogue = [&](std::int64_t start, std::int64_t length) {
      for (std::int64_t at = start; at < start + length; at += kChunk) {
        const std::int64_t size = std::min(kChunk, start + length - at);
        begin_chunk();
        root_output_at_ = out.data.data() + at;
        const float* values = eval(root, Indices{at, size, nullptr});
        if (values != root_output_at_) std::copy_n(values, size, out.data.data() + at);
      }
    };
    if (c.op == Op::MatMul)
      matmul_into(*a, *b, c.attrs[0], out, &epilogue);
    else
      conv2d_into(*a, *b, c.attrs[0], c.attrs[1], c.attrs[2], c.attrs[3], out, &epilogue, by_block);
    root_output_ = nullptr;
    c.leaf.reset();
    return out;
  }

  /// One per-channel post-op (oneDNN's post-ops) of a convolution's epilogue: `op` on a run of
  /// one output channel c, with the constant `data[c * stride]` (stride 0: one scalar) as the
  /// operand `constant_first` says for a binary op, or a clip's bounds `lo`, `hi`.
  struct ChannelStep {
    Op op = Op::Relu;
    const float* data = nullptr;
    std::int64_t stride = 0;
    bool constant_first = false;
    float lo = 0, hi = 0;
  };

  /// Term `t` as a per-channel constant over `dims` ([N, C, H, W]): a one-element leaf, or a
  /// broadcast of a leaf that varies along the channel axis only.
  [[nodiscard]] std::optional<std::pair<const float*, std::int64_t>> channel_constant(
      std::size_t t, const Dims& dims) const {
    const Term& term = terms_[t];
    if (term.leaf) {
      if (term.elements != 1) return std::nullopt;
      return std::pair<const float*, std::int64_t>{term.leaf->data.data(), 0};
    }
    if (term.op != Op::Broadcast || term.dims != dims || term.strides.size() != 4)
      return std::nullopt;
    const Term& x = terms_[term.operands[0]];
    if (!x.leaf || term.strides[2] != 0 || term.strides[3] != 0 ||
        (dims[0] != 1 && term.strides[0] != 0))
      return std::nullopt;
    return std::pair<const float*, std::int64_t>{x.leaf->data.data() + term.offset,
                                                 term.strides[1]};
  }

  /// The body from `root` down to the convolution `contraction` as per-channel steps, in the
  /// order they apply: a chain of elementwise terms over the product's shape, each with one
  /// operand on the chain and the others per-channel constants. Nothing otherwise.
  [[nodiscard]] std::optional<std::vector<ChannelStep>> channel_steps(
      std::size_t root, std::size_t contraction) const {
    const Dims& dims = terms_[contraction].dims;
    if (dims.size() != 4) return std::nullopt;
    std::vector<ChannelStep> steps;
    for (std::size_t t = root; t != contraction;) {
      const Term& term = terms_[t];
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
          const auto lo = channel_constant(term.operands[1], dims);
          const auto hi = channel_constant(term.operands[2], dims);
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
          const auto k1 = channel_constant(term.operands[1], dims);
          const auto k0 =
              term.op == Op::SMul ? std::nullopt : channel_constant(term.operands[0], dims);
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

  /// Applies `steps` to the run `y[0, n)` of output channel `c`, in place.
  static void apply_channel_steps(const std::vector<ChannelStep>& steps, float* y, std::int64_t n,
                                  std::int64_t c) {
    ArrayMap a(y, n);
    for (const ChannelStep& s : steps) {
      const float k = s.data ? s.data[c * s.stride] : 0.0f;
      switch (s.op) {
        case Op::EwAdd:
          a += k;
          break;
        case Op::EwMul:
          a *= k;
          break;
        case Op::EwSub:
          if (s.constant_first)
            a = k - a;
          else
            a -= k;
          break;
        case Op::EwDiv:
          if (s.constant_first)
            a = k / a;
          else
            a /= k;
          break;
        case Op::Relu:
          a = a.max(0.0f);
          break;
        case Op::Clip:
          clip(y, n, s.lo, s.hi);
          break;
        case Op::Sigmoid:
          activate_to(y, y, n, 1);
          break;
        case Op::Tanh:
          activate_to(y, y, n, 3);
          break;
        case Op::Silu:
          silu(y, y, n);
          break;
        case Op::HardSwish:
          hard_swish(y, y, n);
          break;
        case Op::GeluErf:
          gelu_erf(y, y, n);
          break;
        default:
          break;
      }
    }
  }

  void begin_chunk() noexcept {
    ++chunk_;
    next_values_ = 0;
    next_indices_ = 0;
  }
  // Chunk-sized scratch blocks, handed out in order and all released at the next chunk: a
  // block's address stays valid while the chunk is evaluated.
  float* values_block() {
    auto& blocks = scratch_->values;
    if (next_values_ == blocks.size()) blocks.emplace_back(new float[kChunk]);
    return blocks[next_values_++].get();
  }
  std::int64_t* indices_block() {
    auto& blocks = scratch_->indices;
    if (next_indices_ == blocks.size()) blocks.emplace_back(new std::int64_t[kChunk]);
    return blocks[next_indices_++].get();
  }

  /// The whole value of term `t` (a leaf's tensor, else evaluated chunk by chunk).
  std::shared_ptr<const HostTensor> materialize(std::size_t t) {
    const Term& term = terms_[t];
    if (term.leaf) return term.leaf;
    HostTensor out(term.dims, term.dtype);
    for (std::int64_t start = 0; start < term.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, term.elements - start);
      begin_chunk();
      std::copy_n(eval(t, Indices{start, n, nullptr}), n, out.data.data() + start);
    }
    return std::make_shared<const HostTensor>(std::move(out));
  }

  /// A reduction root: its operand's chunks accumulated into the output in the order the
  /// unfused `reduce` adds them (so the sums are bit-identical).
  HostTensor reduce_root(const Term& r) {
    const Term& x = terms_[r.operands[0]];
    std::int64_t outer, extent, inner;
    split_dims(x.dims, r.attrs[0], outer, extent, inner);
    HostTensor out(r.dims, r.dtype);
    const bool is_max = r.op == Op::ReduceMax;
    std::fill(out.data.begin(), out.data.end(),
              is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
    float* acc = out.data.data();
    std::int64_t o = 0, e = 0, in = 0;  // the position of the next operand element
    for (std::int64_t start = 0; start < x.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, x.elements - start);
      begin_chunk();
      const float* p = eval(r.operands[0], Indices{start, n, nullptr});
      if (inner == 1) {  // runs along the reduced axis, each into one output element
        for (std::int64_t k = 0; k < n;) {
          const std::int64_t len = std::min(n - k, extent - e);
          float a = acc[o];
          if (is_max)
            for (std::int64_t j = 0; j < len; ++j) a = std::max(a, p[k + j]);
          else
            for (std::int64_t j = 0; j < len; ++j) a += p[k + j];
          acc[o] = a;
          k += len;
          e += len;
          if (e == extent) {
            e = 0;
            ++o;
          }
        }
        continue;
      }
      for (std::int64_t k = 0; k < n;) {  // runs along the inner axes: one add per output element
        const std::int64_t len = std::min(n - k, inner - in);
        float* a = acc + o * inner + in;
        if (is_max)
          for (std::int64_t j = 0; j < len; ++j) a[j] = std::max(a[j], p[k + j]);
        else
          for (std::int64_t j = 0; j < len; ++j) a[j] += p[k + j];
        k += len;
        in += len;
        if (in == inner) {
          in = 0;
          if (++e == extent) {
            e = 0;
            ++o;
          }
        }
      }
    }
    if (r.op == Op::ReduceMean)
      for (float& v : out.data) v /= static_cast<float>(extent);
    round_tensor(out);
    return out;
  }

  /// Output positions `ix` of a term with output `dims` mapped to its operand's flat positions
  /// `offset + sum_k m_k * strides_k` (m: the multi-index), into an index block.
  const std::int64_t* map_strided(const Indices& ix, const Dims& dims,
                                  const std::vector<std::int64_t>& strides, std::int64_t offset) {
    std::int64_t* out = indices_block();
    const std::size_t r = dims.size();
    if (r == 0) {
      std::fill_n(out, ix.size, offset);
      return out;
    }
    std::int64_t m[16];
    auto decompose = [&](std::int64_t f) {
      std::int64_t src = offset;
      for (std::size_t a = r; a-- > 0;) {
        m[a] = f % dims[a];
        f /= dims[a];
        src += m[a] * strides[a];
      }
      return src;
    };
    if (ix.list || r > 16) {
      for (std::int64_t k = 0; k < ix.size; ++k) out[k] = decompose(ix.at(k));
      return out;
    }
    std::int64_t src = decompose(ix.start);  // contiguous: runs along the last axis
    for_each_run(dims, strides, m, src, ix.size,
                 [&](std::int64_t k, std::int64_t from, std::int64_t len, std::int64_t step) {
                   for (std::int64_t j = 0; j < len; ++j) out[k + j] = from + j * step;
                 });
    return out;
  }

  /// Walks `n` positions of an odometer over `dims` (multi-index `m`, operand position `src`,
  /// both advanced) in runs along the last axis: `run(k, from, len, step)` for output positions
  /// [k, k + len) reading the operand at from, from + step, ...
  template <class Run>
  static void for_each_run(const Dims& dims, const std::vector<std::int64_t>& strides,
                           std::int64_t* m, std::int64_t& src, std::int64_t n, const Run& run) {
    const std::size_t r = dims.size();
    const std::int64_t last = dims[r - 1], step = strides[r - 1];
    for (std::int64_t k = 0; k < n;) {
      const std::int64_t len = std::min(n - k, last - m[r - 1]);
      run(k, src, len, step);
      k += len;
      src += len * step;
      m[r - 1] += len;
      if (m[r - 1] < last) break;  // only the last run can end inside the axis
      src -= step * last;
      m[r - 1] = 0;
      for (std::size_t a = r - 1; a-- > 0;) {
        src += strides[a];
        if (++m[a] < dims[a]) break;
        src -= strides[a] * dims[a];
        m[a] = 0;
      }
    }
  }

  /// A transpose, broadcast or slice at positions `ix`: a leaf operand is read directly, run by
  /// run along the last axis (a broadcast run is a fill); another operand is evaluated once over
  /// the contiguous range its reads span when that fits a chunk (so it is vectorized and shared
  /// with other readers of the same range), else at the mapped positions one by one.
  const float* strided(const Term& term, const Indices& ix) {
    const Term& x = terms_[term.operands[0]];
    const std::size_t r = term.dims.size();
    if (x.leaf && !ix.list && r > 0 && r <= 16) {
      const float* data = x.leaf->data.data();
      float* out = values_block();
      std::int64_t m[16];
      std::int64_t f = ix.start, src = term.offset;
      for (std::size_t a = r; a-- > 0;) {
        m[a] = f % term.dims[a];
        f /= term.dims[a];
        src += m[a] * term.strides[a];
      }
      for_each_run(term.dims, term.strides, m, src, ix.size,
                   [&](std::int64_t k, std::int64_t from, std::int64_t len, std::int64_t step) {
                     if (step == 0)
                       std::fill_n(out + k, len, data[from]);
                     else if (step == 1)
                       std::copy_n(data + from, len, out + k);
                     else
                       for (std::int64_t j = 0; j < len; ++j) out[k + j] = data[from + j * step];
                   });
      return out;
    }
    const std::int64_t* at = map_strided(ix, term.dims, term.strides, term.offset);
    if (x.leaf) return eval(term.operands[0], Indices{0, ix.size, at});
    std::int64_t lo = at[0], hi = at[0];
    for (std::int64_t k = 1; k < ix.size; ++k) {
      lo = std::min(lo, at[k]);
      hi = std::max(hi, at[k]);
    }
    if (hi - lo >= kChunk) return eval(term.operands[0], Indices{0, ix.size, at});
    const float* v = eval(term.operands[0], Indices{lo, hi - lo + 1, nullptr});
    float* out = values_block();
    for (std::int64_t k = 0; k < ix.size; ++k) out[k] = v[at[k] - lo];
    return out;
  }

  /// Term `t`'s values at positions `ix` (at most kChunk of them).
  const float* eval(std::size_t t, const Indices& ix) {
    const Term& term = terms_[t];
    Memo& memo = memo_[t];
    if (!ix.list && memo.chunk == chunk_ && memo.start == ix.start && memo.size == ix.size)
      return memo.values;
    const float* result = compute(term, ix);
    if (!ix.list) memo = Memo{chunk_, ix.start, ix.size, result};
    return result;
  }

  const float* compute(const Term& term, const Indices& ix) {
    const std::int64_t n = ix.size;
    if (term.leaf) {
      const float* data = term.leaf->data.data();
      if (!ix.list) return data + ix.start;
      float* out = values_block();
      for (std::int64_t k = 0; k < n; ++k) out[k] = data[ix.list[k]];
      return out;
    }
    switch (term.op) {
      case Op::Reshape:
        return eval(term.operands[0], ix);  // the same flat positions
      case Op::Transpose:
      case Op::Broadcast:
      case Op::Slice:
        return strided(term, ix);
      case Op::Pad:
        return pad(term, ix);
      case Op::Concat:
        return concat(term, ix);
      default:
        break;
    }
    float* out = &term == root_output_ && !ix.list ? root_output_at_ : values_block();
    ArrayMap o(out, n);
    const ConstArrayMap a(eval(term.operands[0], ix), n);
    switch (term.op) {
      case Op::EwAdd:
        o = a + ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwMul:
        o = a * ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::SMul:
        o = a * eval(term.operands[1], Indices{0, 1, nullptr})[0];
        break;
      // Transcendental ops through the unfused kernels' helpers: small functions in which the
      // compiler inlines Eigen's vectorized exp and tanh (in this one it calls them per packet).
      case Op::Relu:
        o = a.max(0.0f);
        break;
      case Op::Tanh:
        activate_to(out, a.data(), n, 3);
        break;
      case Op::Sigmoid:
        activate_to(out, a.data(), n, 1);
        break;
      case Op::Exp:
        exp_to(out, a.data(), n);
        break;
      case Op::Gelu:
        o = a;
        gelu(out, n);
        break;
      case Op::GeluErf:
        gelu_erf(out, a.data(), n);
        break;
      case Op::Silu:
        silu(out, a.data(), n);
        break;
      case Op::HardSwish:
        hard_swish(out, a.data(), n);
        break;
      case Op::EwSub:
        o = a - ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwDiv:
        o = a / ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwPow: {
        const float* e = eval(term.operands[1], ix);
        if (e == out) {  // an epilogue root over its contraction's output: keep the exponents
          float* kept = values_block();
          std::copy_n(e, n, kept);
          e = kept;
        }
        o = a;
        pow_inplace(out, e, n);
        break;
      }
      case Op::Sqrt:
        o = a;
        sqrt_inplace(out, n);
        break;
      case Op::Erf:
        o = a.erf();
        break;
      case Op::Clip: {
        const float lo = eval(term.operands[1], Indices{0, 1, nullptr})[0];
        const float hi = eval(term.operands[2], Indices{0, 1, nullptr})[0];
        o = a;
        clip(out, n, lo, hi);
        break;
      }
      default:
        throw ExecutionError(
            fmt::format("execute: '{}' has no loop form in a fused kernel", op_name(term.op)));
    }
    if (term.dtype != DType::F32)
      for (std::int64_t k = 0; k < n; ++k) out[k] = round_to(out[k], term.dtype);
    return out;
  }

  /// Output positions `ix` of a `pad` or `concat` along `axis` (output `dims`), gathered from
  /// `parts`: part k covers `extents[k]` positions of the axis, in order; a part of `kZeros` is
  /// padding (zeros). A contiguous request splits into runs that are contiguous in their part
  /// (no per-element arithmetic); a list request maps each position.
  static constexpr std::size_t kZeros = static_cast<std::size_t>(-1);
  const float* gather_parts(const Dims& dims, std::int64_t axis,
                            const std::vector<std::size_t>& parts,
                            const std::vector<std::int64_t>& extents, const Indices& ix,
                            float* dest) {
    std::int64_t outer, extent, inner;
    split_dims(dims, axis, outer, extent, inner);
    if (!ix.list) {
      // Output positions increase with a part's positions, so the positions of part k that the
      // request covers are one contiguous range of it: each part is evaluated once, over that
      // range, and copied run by run (a part read run by run would be dispatched per run).
      const std::int64_t end = ix.start + ix.size;
      const auto walk =
          [&](const auto& visit) {  // visit(part, output position, part position, length)
            // The position as (outer o, axis a, inner i), in part k whose first axis position is
            // `first`; advanced run by run without dividing.
            std::int64_t o = ix.start / (extent * inner), a = (ix.start / inner) % extent,
                         i = ix.start % inner;
            std::size_t k = 0;
            std::int64_t first = 0;
            while (a >= first + extents[k]) first += extents[k++];
            for (std::int64_t p = ix.start; p < end;) {
              const std::int64_t left =
                  (first + extents[k] - a) * inner - i;  // positions of part k in this row
              const std::int64_t len = std::min(end - p, left);
              visit(k, p, (o * extents[k] + (a - first)) * inner + i, len);
              p += len;
              if (len < left) break;  // the request ends inside the part
              a = first += extents[k];
              i = 0;
              for (++k; k == parts.size() || extents[k] == 0;
                   ++k) {  // the next part with positions
                if (k == parts.size()) {
                  k = 0;
                  a = first = 0;
                  ++o;
                  if (extents[0] > 0) break;
                }
              }
            }
          };
      // The first position of part k (from axis position `first`) at or after output position p.
      const auto part_position = [&](std::int64_t p, std::size_t k, std::int64_t first) {
        const std::int64_t o = p / (extent * inner), a = (p / inner) % extent;
        if (a < first) return o * extents[k] * inner;
        if (a >= first + extents[k]) return (o + 1) * extents[k] * inner;
        return (o * extents[k] + a - first) * inner + p % inner;
      };
      std::vector<std::int64_t> lo(parts.size(), 0);
      std::vector<const float*> values(parts.size(), nullptr);
      std::int64_t first = 0;
      for (std::size_t k = 0; k < parts.size(); first += extents[k++]) {
        if (parts[k] == kZeros) continue;
        lo[k] = part_position(ix.start, k, first);
        const std::int64_t hi = part_position(end, k, first);
        if (hi <= lo[k]) continue;
        values[k] = eval(parts[k], Indices{lo[k], hi - lo[k], nullptr});
        if (hi - lo[k] == ix.size) return values[k];  // the whole request is this part's
      }
      float* out = dest ? dest : values_block();
      walk([&](std::size_t k, std::int64_t p, std::int64_t src, std::int64_t len) {
        float* to = out + (p - ix.start);
        const float* from = parts[k] == kZeros ? nullptr : values[k] + (src - lo[k]);
        if (len >= 64) {
          if (from)
            std::copy_n(from, len, to);
          else
            std::fill_n(to, len, 0.0f);
          return;
        }
        for (std::int64_t j = 0; j < len; ++j)
          to[j] = from ? from[j] : 0.0f;  // short rows: no library call
      });
      return out;
    }
    float* out = values_block();
    std::int64_t* src = indices_block();
    std::int64_t* where = indices_block();
    std::int64_t first = 0;
    for (std::size_t k = 0; k < parts.size(); first += extents[k++]) {
      std::int64_t m = 0;
      for (std::int64_t j = 0; j < ix.size; ++j) {
        const std::int64_t f = ix.list[j], a = (f / inner) % extent - first;
        if (a < 0 || a >= extents[k]) continue;
        if (parts[k] == kZeros) {
          out[j] = 0.0f;
          continue;
        }
        src[m] = ((f / (inner * extent)) * extents[k] + a) * inner + f % inner;
        where[m++] = j;
      }
      if (m) {
        const float* v = eval(parts[k], Indices{0, m, src});
        for (std::int64_t j = 0; j < m; ++j) out[where[j]] = v[j];
      }
    }
    return out;
  }

  /// pad: positions inside the operand read it, the others are zero.
  const float* pad(const Term& term, const Indices& ix) {
    const std::int64_t axis = term.attrs[0];
    const std::int64_t x_extent = terms_[term.operands[0]].dims[static_cast<std::size_t>(axis)];
    return gather_parts(term.dims, axis, {kZeros, term.operands[0], kZeros},
                        {term.attrs[1], x_extent, term.attrs[2]}, ix, output_of(term, ix));
  }

  /// concat: each position reads the operand whose part of the axis holds it.
  const float* concat(const Term& term, const Indices& ix) {
    return gather_parts(term.dims, term.attrs[0], term.operands, term.part_extents, ix,
                        output_of(term, ix));
  }

  /// Where term `t`'s values at `ix` go: the kernel's output for the root's chunk, else nowhere
  /// yet.
  float* output_of(const Term& t, const Indices& ix) const noexcept {
    return &t == root_output_ && !ix.list ? root_output_at_ : nullptr;
  }

  std::vector<Term> terms_;
  std::vector<Memo> memo_;
  std::uint64_t chunk_ = 0;
  const Term* root_output_ = nullptr;  // the root whose chunks `run` has written in place
  float* root_output_at_ = nullptr;    // where the current chunk of the root goes
  Scratch own_scratch_;
  Scratch* scratch_ = &own_scratch_;
  std::size_t next_values_ = 0, next_indices_ = 0;
};

/// Evaluates programs node by node.
class Evaluator {
 public:
  /// Called after each evaluated node with its index and the seconds its evaluation took.
  using NodeTimer = std::function<void(std::size_t node, double seconds)>;

  Evaluator(const RecExpr<TensorNode>& program, const Bindings& bindings, bool fused_loops = true,
            NodeTimer on_node = nullptr)
      : p_(program),
        bindings_(bindings),
        infos_(check_program(program)),
        values_(program.size()),
        fused_loops_(fused_loops),
        on_node_(std::move(on_node)) {}

  /// Evaluates every non-symbolic node (only the weight-only ones when `weight_only`); frees
  /// tensors after their last use unless `keep`.
  void run(bool keep, bool weight_only = false) {
    const std::size_t n = p_.size();
    std::vector<std::size_t> last_use(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      last_use[i] = std::max(last_use[i], i);
      for (Id c : p_[Id(i)].children())
        last_use[c.index()] = infos_[i].symbolic ? n : std::max(last_use[c.index()], i);
    }
    last_use[n - 1] = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (infos_[i].symbolic || (weight_only && !infos_[i].weight_only)) continue;
      if (on_node_) {
        const auto start = std::chrono::steady_clock::now();
        values_[i] = eval(i, nullptr);
        on_node_(i,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      } else {
        values_[i] = eval(i, nullptr);
      }
      if (!keep)
        for (Id c : p_[Id(i)].children())
          if (last_use[c.index()] == i) {
            values_[c.index()].t.reset();
            values_[c.index()].t2.reset();
          }
    }
  }

  [[nodiscard]] std::vector<HostTensor> outputs() const {
    std::vector<HostTensor> out;
    const Value& root = values_.back();
    if (p_[Id(p_.size() - 1)].op() == Op::Noop) {
      for (const auto& t : root.outs) out.push_back(*t);
    } else {
      out.push_back(*root.t);
    }
    return out;
  }
  [[nodiscard]] const std::vector<TensorInfo>& infos() const noexcept { return infos_; }
  [[nodiscard]] const Value& value(std::size_t i) const { return values_[i]; }

 private:
  /// `args`: the fused kernel's inputs when evaluating a body term (symbolic nodes), else null.
  Value eval(std::size_t i, const std::vector<std::shared_ptr<const HostTensor>>* args) {
    const TensorNode& node = p_[Id(i)];
    const auto ch = node.children();
    const TensorInfo& info = infos_[i];
    auto val = [&](std::size_t k) -> const Value& { return values_[ch[k].index()]; };
    auto num = [&](std::size_t k) { return val(k).value; };
    auto ten = [&](std::size_t k) -> const HostTensor& {
      const Value& v = val(k);
      if (!v.t)
        throw ExecutionError(fmt::format("execute: node {} ({}) reads a freed or missing tensor", i,
                                         node.op_name()));
      return *v.t;
    };
    Value out;
    auto tensor_result = [&](HostTensor t) {
      t.dtype = info.dtype;
      round_tensor(t);
      out.t = std::make_shared<const HostTensor>(std::move(t));
      return out;
    };
    switch (node.op()) {
      case Op::Num:
        out.value = node.value();
        return out;
      case Op::Sym:
        out.name = std::string(node.symbol().str());
        return out;
      case Op::Ints:
        for (std::size_t k = 0; k < ch.size(); ++k) out.ints.push_back(num(k));
        return out;
      case Op::Input:
      case Op::Weight: {
        const Value& nv = val(0);
        const std::string name = p_[ch[0]].op() == Op::Num ? std::to_string(nv.value) : nv.name;
        auto it = bindings_.find(name);
        if (it == bindings_.end()) throw MissingBindingError(name);
        if (it->second.dims != info.dims) throw BindingShapeError(name, info.dims, it->second.dims);
        if (static_cast<std::int64_t>(it->second.data.size()) != info.elements())
          throw ExecutionError(fmt::format("execute: '{}' holds {} values for shape {}", name,
                                           it->second.data.size(), dims_to_string(info.dims)));
        if (it->second.dtype == DType::F32 && info.dtype == DType::F32) {
          // Read in place (the bindings outlive the run): no copy of the model's weights per run.
          out.t = std::shared_ptr<const HostTensor>(&it->second, [](const HostTensor*) {});
          return out;
        }
        return tensor_result(it->second);
      }
      case Op::Scalar: {
        HostTensor t(Dims{1});
        t.data[0] = TensorNode::scalar_of_atom(p_[ch[0]]).value_or(0.0f);
        return tensor_result(std::move(t));
      }
      case Op::Arg: {
        const auto k = static_cast<std::size_t>(num(0));
        if (!args || k >= args->size())
          throw ExecutionError(fmt::format("execute: arg {} outside a fused kernel", k));
        return tensor_result(*(*args)[k]);
      }
      case Op::EwAdd:
      case Op::EwMul:
      case Op::EwSub:
      case Op::EwDiv:
      case Op::EwPow: {
        HostTensor r = ten(0);
        ArrayMap a(r.data.data(), r.elements());
        ConstArrayMap b(ten(1).data.data(), r.elements());
        switch (node.op()) {
          case Op::EwAdd:
            a += b;
            break;
          case Op::EwMul:
            a *= b;
            break;
          case Op::EwSub:
            a -= b;
            break;
          case Op::EwDiv:
            a /= b;
            break;
          default:
            pow_inplace(r.data.data(), ten(1).data.data(), r.elements());
            break;
        }
        return tensor_result(std::move(r));
      }
      case Op::SMul: {
        HostTensor r = ten(0);
        ArrayMap(r.data.data(), r.elements()) *= ten(1).data[0];
        return tensor_result(std::move(r));
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
      case Op::Erf: {
        HostTensor r = ten(0);
        ArrayMap a(r.data.data(), r.elements());
        if (node.op() == Op::Relu)
          activate(r.data.data(), r.elements(), 2);
        else if (node.op() == Op::Tanh)
          activate(r.data.data(), r.elements(), 3);
        else if (node.op() == Op::Sigmoid)
          activate(r.data.data(), r.elements(), 1);
        else if (node.op() == Op::Gelu)
          gelu(r.data.data(), r.elements());
        else if (node.op() == Op::GeluErf)
          gelu_erf(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::Silu)
          silu(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::HardSwish)
          hard_swish(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::Sqrt)
          sqrt_inplace(r.data.data(), r.elements());
        else if (node.op() == Op::Erf)
          erf_inplace(r.data.data(), r.elements());
        else
          a = a.exp();
        return tensor_result(std::move(r));
      }
      case Op::MatMul:
        return tensor_result(matmul(ten(1), ten(2), num(0)));
      case Op::Conv2d:
        return tensor_result(conv2d(ten(4), ten(5), num(0), num(1), num(2), num(3)));
      case Op::PoolMax:
      case Op::PoolAvg:
        return tensor_result(
            pool(ten(6), node.op() == Op::PoolMax, num(0), num(1), num(2), num(3), num(4), num(5)));
      case Op::Concat: {
        std::vector<const HostTensor*> xs;
        for (std::size_t k = 1; k < ch.size(); ++k) xs.push_back(&ten(k));
        return tensor_result(concat(num(0), xs));
      }
      case Op::Split: {
        const HostTensor& x = ten(2);
        const std::int64_t axis = num(0), size = num(1);
        out.t = std::make_shared<const HostTensor>(slice(x, axis, 0, size));
        out.t2 = std::make_shared<const HostTensor>(
            slice(x, axis, size, x.dims[static_cast<std::size_t>(axis)]));
        return out;
      }
      case Op::Split0:
      case Op::Split1: {
        const Value& pair = val(0);
        const auto& src = node.op() == Op::Split0 ? pair.t : pair.t2;
        if (!src) throw ExecutionError(fmt::format("execute: node {} reads a freed split", i));
        out.t = src;
        return out;
      }
      case Op::Transpose:
        return tensor_result(transpose(ten(1), val(0).ints));
      case Op::Reshape: {
        HostTensor r = ten(1);
        r.dims = val(0).ints;
        return tensor_result(std::move(r));
      }
      case Op::BatchNorm:
        return tensor_result(batchnorm(ten(0), ten(1), ten(2), ten(3), ten(4)));
      case Op::Enlarge:
        return tensor_result(enlarge(ten(0), ten(1).dims));
      case Op::Merge:
        return tensor_result(merge(ten(2), num(0), num(1)));
      case Op::WinoWeight:
        return tensor_result(wino_weight(ten(0)));
      case Op::WinoConv2d:
        return tensor_result(wino_conv2d(ten(2), ten(3), num(0), num(1)));
      case Op::Noop:
        for (std::size_t k = 0; k < ch.size(); ++k) {
          const Value& v = val(k);
          if (v.t)
            out.outs.push_back(v.t);
          else
            out.outs.insert(out.outs.end(), v.outs.begin(), v.outs.end());
        }
        return out;
      case Op::Softmax:
        return tensor_result(softmax(ten(1), num(0)));
      case Op::LayerNorm:
        return tensor_result(
            layernorm(ten(0), ten(1), ten(2), ch.size() == 4 ? ten(3).data.at(0) : kNormEps));
      case Op::Broadcast:
        return tensor_result(broadcast(ten(1), val(0).ints));
      case Op::ReduceSum:
      case Op::ReduceMax:
      case Op::ReduceMean:
        return tensor_result(reduce(ten(1), num(0), node.op()));
      case Op::Slice:
        return tensor_result(slice(ten(3), num(0), num(1), num(2)));
      case Op::Pad:
        return tensor_result(pad_axis(ten(3), num(0), num(1), num(2)));
      case Op::Clip: {
        HostTensor r = ten(0);
        clip(r.data.data(), r.elements(), ten(1).data[0], ten(2).data[0]);
        return tensor_result(std::move(r));
      }
      case Op::Resize:
        return tensor_result(resize(ten(4), val(3).ints, num(0), num(1), num(2)));
      case Op::ConvTranspose:
        return tensor_result(
            conv_transpose(ten(7), ten(8), num(0), num(1), num(2), num(3), num(4), num(5), num(6)));
      case Op::Opaque:
        throw OpaqueOpError(i, val(0).name);
      // Host tensors are kept in their logical order whatever the layout they are said to be
      // stored in: a layout changes what a kernel costs, never what it computes.
      case Op::Relayout:
        out.t = val(1).t;
        return out;
      case Op::Fused: {
        std::vector<std::shared_ptr<const HostTensor>> inputs;
        for (std::size_t k = 1; k < ch.size(); ++k) {
          if (!val(k).t)
            throw ExecutionError(fmt::format("execute: fused node {} reads a freed tensor", i));
          inputs.push_back(val(k).t);
        }
        if (fused_loops_)
          if (std::optional<HostTensor> r = eval_loop(ch[0].index(), inputs))
            return tensor_result(std::move(*r));
        return tensor_result(*eval_body(ch[0].index(), inputs));
      }
    }
    throw ExecutionError(fmt::format("execute: unknown operator at node {}", i));
  }

  /// The body's nodes (symbolic nodes reachable from `body` through symbolic children), in
  /// program order: found from the body's root, in time proportional to the body's size.
  std::vector<std::size_t> body_order(std::size_t body) {
    if (stamp_.size() != p_.size()) stamp_.assign(p_.size(), 0);
    ++generation_;
    std::vector<std::size_t> order{body};
    stamp_[body] = generation_;
    for (std::size_t k = 0; k < order.size(); ++k)
      for (Id c : p_[Id(order[k])].children())
        if (infos_[c.index()].symbolic && stamp_[c.index()] != generation_) {
          stamp_[c.index()] = generation_;
          order.push_back(c.index());
        }
    std::sort(order.begin(), order.end());
    return order;
  }

  /// The kernel's value computed by one `FusedLoop`, or nothing when a body term has no loop form
  /// (pooling, normalizations, softmax, a reduction below the root, rank above 16): then
  /// `eval_body` evaluates it op by op.
  std::optional<HostTensor> eval_loop(
      std::size_t body, const std::vector<std::shared_ptr<const HostTensor>>& inputs) {
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    const std::vector<std::size_t> order = body_order(body);
    if (term_of_.size() != p_.size()) term_of_.assign(p_.size(), kNone);
    std::vector<std::size_t>& term_of = term_of_;  // entries of body nodes only, reset below
    struct Reset {
      std::vector<std::size_t>& term_of;
      const std::vector<std::size_t>& order;
      ~Reset() {
        for (std::size_t j : order) term_of[j] = kNone;
      }
    } reset{term_of, order};
    FusedLoop loop(fused_scratch_);
    loop.reserve(2 * order.size());  // the body's terms and, at most, a leaf for each
    for (std::size_t j : order) {
      const TensorNode& node = p_[Id(j)];
      const auto ch = node.children();
      if (infos_[j].dims.size() > 16) return std::nullopt;
      auto attr = [&](std::size_t k) { return values_[ch[k].index()].value; };
      // The term of tensor child k: a body term, or a leaf for a tensor computed outside the body.
      auto operand = [&](std::size_t k) -> std::size_t {
        const std::size_t c = ch[k].index();
        if (infos_[c].symbolic) return term_of[c];
        if (!values_[c].t)
          throw ExecutionError(fmt::format("execute: fused body node {} reads a freed tensor", j));
        if (infos_[c].dims.size() > 16) return kNone;
        FusedLoop::Term leaf;
        leaf.dtype = infos_[c].dtype;
        leaf.dims = infos_[c].dims;
        leaf.leaf = values_[c].t;
        return loop.add(std::move(leaf));
      };
      FusedLoop::Term t;
      t.op = node.op();
      t.dtype = infos_[j].dtype;
      t.dims = infos_[j].dims;
      std::vector<std::size_t> tensor_children;  // indices into ch of the tensor operands
      if (is_unary_elementwise(node.op()))
        tensor_children = {0};
      else if (is_binary_elementwise(node.op()) || node.op() == Op::SMul)
        tensor_children = {0, 1};
      else
        switch (node.op()) {
          case Op::Arg: {
            const auto k = static_cast<std::size_t>(attr(0));
            if (k >= inputs.size())
              throw ExecutionError(fmt::format("execute: arg {} outside a fused kernel", k));
            t.leaf = inputs[k];
            break;
          }
          case Op::Clip:
            tensor_children = {0, 1, 2};
            break;
          case Op::Reshape:
            tensor_children = {1};
            break;
          case Op::Transpose: {
            const auto in_strides = strides_of(infos_[ch[1].index()].dims);
            for (std::int64_t axis : values_[ch[0].index()].ints)
              t.strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
            tensor_children = {1};
            break;
          }
          case Op::Broadcast: {
            const Dims& x = infos_[ch[1].index()].dims;
            const auto in_strides = strides_of(x);
            t.strides.assign(t.dims.size(), 0);
            const std::size_t offset = t.dims.size() - x.size();
            for (std::size_t a = 0; a < x.size(); ++a)
              t.strides[offset + a] = x[a] == 1 ? 0 : in_strides[a];
            tensor_children = {1};
            break;
          }
          case Op::Slice:
            t.strides = strides_of(infos_[ch[3].index()].dims);
            t.offset = attr(1) * t.strides[static_cast<std::size_t>(attr(0))];
            tensor_children = {3};
            break;
          case Op::Pad:
            t.attrs = {attr(0), attr(1), attr(2)};
            tensor_children = {3};
            break;
          case Op::Concat:
            t.attrs = {attr(0)};
            for (std::size_t k = 1; k < ch.size(); ++k) tensor_children.push_back(k);
            break;
          case Op::MatMul:
            t.attrs = {attr(0)};
            tensor_children = {1, 2};
            break;
          case Op::Conv2d:
            t.attrs = {attr(0), attr(1), attr(2), attr(3)};
            tensor_children = {4, 5};
            break;
          case Op::ReduceSum:
          case Op::ReduceMax:
          case Op::ReduceMean:
            if (j != body) return std::nullopt;
            t.attrs = {attr(0)};
            tensor_children = {1};
            break;
          default:
            return std::nullopt;
        }
      for (std::size_t k : tensor_children) {
        const std::size_t term = operand(k);
        if (term == kNone) return std::nullopt;
        t.operands.push_back(term);
      }
      term_of[j] = loop.add(std::move(t));
    }
    return loop.run();
  }

  /// The body's value with its args bound to `inputs`: the body's symbolic nodes evaluated
  /// tensor by tensor in program order (each intermediate materialized; the reference the fused
  /// loop is tested against, and the path for bodies with no loop form).
  std::shared_ptr<const HostTensor> eval_body(
      std::size_t body, const std::vector<std::shared_ptr<const HostTensor>>& inputs) {
    const std::vector<std::size_t> order = body_order(body);
    std::vector<Value> saved;
    for (std::size_t j : order) saved.push_back(std::move(values_[j]));
    for (std::size_t j : order) values_[j] = eval(j, &inputs);
    auto result = values_[body].t;
    for (std::size_t k = 0; k < order.size(); ++k) values_[order[k]] = std::move(saved[k]);
    return result;
  }

  const RecExpr<TensorNode>& p_;
  const Bindings& bindings_;
  std::vector<TensorInfo> infos_;
  std::vector<Value> values_;
  bool fused_loops_;
  NodeTimer on_node_;
  std::vector<std::size_t> stamp_;  // body_order: the generation that last reached each node
  std::size_t generation_ = 0;
  std::vector<std::size_t> term_of_;  // eval_loop: each body node's term (kNone elsewhere)
  FusedLoop::Scratch fused_scratch_;  // eval_loop: blocks shared by the kernels' loops
};

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
  detail::Evaluator ev(program, bindings);
  ev.run(true, true);
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
      out.bindings.emplace(name, *ev.value(i).t);
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
/// same memory: given a copy each, the fully connected layers of VGG-19, which stream its 411 MB
/// fc6 weight, ran 11 % slower on one copy than on the other in 57 of 61 pairs of a process
/// (bench/history/executor-runs.md), a bias as large as the change being measured.
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

/// The outcome of `verify`: `ok`, and the worst element (the largest error relative to the
/// tolerance `atol + rtol * |expected|`).
struct VerifyResult {
  bool ok = true;
  std::size_t output = 0;  ///< output index of the worst element
  std::size_t index = 0;   ///< its flat (row-major) index
  double expected = 0;     ///< the original program's value
  double actual = 0;       ///< the optimized program's value
  double abs_error = 0;    ///< |actual - expected|
  double rel_error = 0;    ///< abs_error / |expected| (infinity when expected is 0 and they differ)
  std::size_t compared = 0;  ///< elements compared
  /// Elements whose expected value is not finite (NaN or infinity; they pass when the actual
  /// value is the same): when this equals `compared`, the check says nothing.
  std::size_t nonfinite = 0;
  std::string message;
};

/// Compares `got` with `want` element by element: an element fails when
/// `|actual - expected| > atol + rtol * |expected|` or exactly one is NaN (infinities must be
/// equal). A different number of outputs or a different output shape fails with a message.
[[nodiscard]] inline VerifyResult compare_outputs(const std::vector<HostTensor>& want,
                                                  const std::vector<HostTensor>& got,
                                                  double rtol = 1e-4, double atol = 1e-5) {
  VerifyResult r;
  if (want.size() != got.size()) {
    r.ok = false;
    r.message = fmt::format("the original has {} outputs, the optimized program {}", want.size(),
                            got.size());
    return r;
  }
  double worst = -1;
  for (std::size_t o = 0; o < want.size(); ++o) {
    if (want[o].dims != got[o].dims) {
      r.ok = false;
      r.output = o;
      r.message = fmt::format("output {}: shape {} expected, {} computed", o,
                              dims_to_string(want[o].dims), dims_to_string(got[o].dims));
      return r;
    }
    for (std::size_t k = 0; k < want[o].data.size(); ++k) {
      const double e = want[o].data[k], a = got[o].data[k];
      ++r.compared;
      if (!std::isfinite(e)) ++r.nonfinite;
      double score;
      if (std::isnan(e) || std::isnan(a))
        score = std::isnan(e) && std::isnan(a) ? 0 : std::numeric_limits<double>::infinity();
      else if (e == a)
        score = 0;
      else if (std::isinf(e) || std::isinf(a))
        score = std::numeric_limits<double>::infinity();
      else
        score = std::fabs(a - e) / (atol + rtol * std::fabs(e));
      if (score > worst) {
        worst = score;
        r.output = o;
        r.index = k;
        r.expected = e;
        r.actual = a;
        r.abs_error = std::fabs(a - e);
        r.rel_error = e != 0 ? r.abs_error / std::fabs(e)
                             : (r.abs_error == 0 ? 0 : std::numeric_limits<double>::infinity());
      }
    }
  }
  r.ok = !(worst > 1);
  r.message = fmt::format(
      "{}: worst element output {} index {}: expected {}, actual {} (abs error {:.3g}, rel error "
      "{:.3g})",
      r.ok ? "ok" : "mismatch", r.output, r.index, r.expected, r.actual, r.abs_error, r.rel_error);
  if (r.nonfinite)
    r.message += fmt::format("; {} of {} expected values not finite", r.nonfinite, r.compared);
  return r;
}

/// Runs `original` and `optimized` on `bindings` (every input and weight of both, by name) and
/// compares their outputs (`compare_outputs`).
[[nodiscard]] inline VerifyResult verify(const RecExpr<TensorNode>& original,
                                         const RecExpr<TensorNode>& optimized,
                                         const Bindings& bindings, double rtol = 1e-4,
                                         double atol = 1e-5) {
  return compare_outputs(execute(original, bindings), execute(optimized, bindings), rtol, atol);
}

/// Runs `original` and `optimized` on the same deterministic random inputs and weights (matched
/// by name: `random_bindings` of both programs with `seed`) and compares every output element:
/// an element fails when `|actual - expected| > atol + rtol * |expected|` or exactly one is NaN.
/// A different number of outputs or a different output shape fails with a message.
[[nodiscard]] inline VerifyResult verify(const RecExpr<TensorNode>& original,
                                         const RecExpr<TensorNode>& optimized,
                                         std::uint64_t seed = 1, double rtol = 1e-4,
                                         double atol = 1e-5) {
  Bindings bindings = random_bindings(original, seed);
  for (auto& [name, t] : random_bindings(optimized, seed)) bindings.emplace(name, std::move(t));
  return verify(original, optimized, bindings, rtol, atol);
}

/// Measured times of two programs, from `compare_times`, in milliseconds.
struct TimeComparison {
  struct Times {
    double median_ms = 0, min_ms = 0, max_ms = 0;
  };
  Times original, optimized;
  std::size_t runs = 0;  ///< timed runs of each program
  /// The paired ratios optimized / original of the runs (run r of each program is timed back to
  /// back, so a slowdown of the machine that lasts longer than the pair cancels out): the
  /// median, and the first and third quartiles (interpolated) over the runs.
  double ratio_median = 0, ratio_q1 = 0, ratio_q3 = 0;
  /// Pairs in which the optimized program was faster (ratio below 1).
  std::size_t faster_pairs = 0;
  /// (original - optimized) / original of the medians, in percent: positive when faster.
  [[nodiscard]] double speedup_percent() const noexcept {
    return original.median_ms > 0
               ? 100.0 * (original.median_ms - optimized.median_ms) / original.median_ms
               : 0.0;
  }
  /// 1 - the median paired ratio, in percent: positive when faster. More robust on a shared
  /// machine than `speedup_percent`.
  [[nodiscard]] double paired_speedup_percent() const noexcept {
    return 100.0 * (1.0 - ratio_median);
  }
  /// The sign test on the pairs: +1 when the optimized program was faster in so many pairs that
  /// a fair coin would do as well with probability below 5 % (one-sided), -1 when it was slower
  /// in so many, 0 otherwise: the difference is within the run-to-run noise. Unlike the
  /// quartiles, it sharpens with more runs (at 5 runs only 5 of 5 count; at 41, 27 of 41).
  [[nodiscard]] int paired_sign() const noexcept { return sign_test(faster_pairs, runs); }

  /// The sign test's verdict for `faster` pairs out of `pairs` (see `paired_sign`).
  [[nodiscard]] static int sign_test(std::size_t faster, std::size_t pairs) noexcept {
    const auto tail = [pairs](std::size_t k) {  // P(X >= k), X ~ Binomial(pairs, 1/2)
      const auto n = static_cast<double>(pairs);
      double p = 0;
      for (std::size_t i = k; i <= pairs; ++i) {
        const auto x = static_cast<double>(i);
        p += std::exp(std::lgamma(n + 1) - std::lgamma(x + 1) - std::lgamma(n - x + 1) -
                      n * std::log(2.0));
      }
      return p;
    };
    if (2 * faster > pairs && tail(faster) < 0.05) return 1;
    if (2 * faster < pairs && tail(pairs - faster) < 0.05) return -1;
    return 0;
  }
};

namespace detail {

/// The q-quantile of sorted values, linearly interpolated between order statistics.
inline double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace detail

/// Which program (0 or 1) runs `j`-th (0 or 1) in pair `pair` of an ABBA sequence: 0 first in
/// even pairs, 1 first in odd ones. For harnesses that drive one pair at a time (Google
/// Benchmark's iterations); `run_abba_pairs` runs a whole sequence.
[[nodiscard]] constexpr int abba_order(std::size_t pair, int j) noexcept {
  return pair % 2 == 0 ? j : 1 - j;
}

/// Pair `pair` of `run_warm_abba_pairs`' sequence alone, for a harness that is handed one pair
/// at a time (Google Benchmark's iterations, `bench/executor_bench`).
template <class RunProgram>
void run_warm_abba_pair(std::size_t pair, std::size_t warm_runs, RunProgram&& run) {
  for (int j = 0; j < 2; ++j) {
    const int k = abba_order(pair, j);
    for (std::size_t w = 0; w < warm_runs; ++w) run(k, false);
    run(k, true);
  }
}

/// Calls `run(k, timed)` for the two programs k = 0 and k = 1 as `run_abba_pairs` does, each
/// timed call (`timed` true) preceded by `warm_runs` untimed calls of the same program (`timed`
/// false). Without them a program runs in the cache state the other one leaves: a model whose
/// weights fit in the last-level cache (NasRNN's 72 MB in a server part's hundreds of MB) finds
/// them evicted by the other program, as on a CPU whose cache they exceed; with them it finds
/// them where its own previous run left them, as in TASO's back-to-back runs of one graph.
template <class RunProgram>
void run_warm_abba_pairs(std::size_t pairs, std::size_t warm_runs, RunProgram&& run) {
  for (std::size_t r = 0; r < pairs; ++r) run_warm_abba_pair(r, warm_runs, run);
}

/// Calls `run(k)` for the two programs k = 0 and k = 1, `pairs` times each, back to back and
/// alternating which goes first (ABBA: 0 1, 1 0, 0 1, ...), so that a drift of the machine's
/// speed slows both alike and neither always runs in the cache state the other leaves.
/// `compare_times` and `bench/executor_profile --paired` time their pairs with it (or with
/// `run_warm_abba_pairs`).
template <class RunProgram>
void run_abba_pairs(std::size_t pairs, RunProgram&& run) {
  run_warm_abba_pairs(pairs, 0, [&](int k, bool) { run(k); });
}

/// Times `original` and `optimized` on the executor as TASO times a graph: `random_bindings`
/// (`seed`) of each with its weight-only subgraphs precomputed outside the timing, the tensors
/// they share bound once (`precompute_pair`), one untimed
/// warm-up run each, then `runs` timed `execute` calls of each, **alternating** the two
/// programs so that a machine whose speed drifts (frequency, a neighbour on a shared host) slows
/// both alike; which program goes first alternates from pair to pair (ABBA), so that neither
/// always runs after the other. Reports the medians, min and max of each and the paired ratios.
/// With `warm_runs` > 0, each timed run follows that many untimed runs of the same program
/// (`run_warm_abba_pairs`): its data cached as its own last run left it, not as the other
/// program's did. Throws `ExecutionError` when `runs` is 0, and whatever `execute` throws. On
/// glibc, large freed buffers go back to the OS and are page-faulted in again on the next run,
/// which can cost more than the arithmetic: harnesses raise `M_MMAP_THRESHOLD` (see
/// docs/executor.md) before timing.
[[nodiscard]] inline TimeComparison compare_times(const RecExpr<TensorNode>& original,
                                                  const RecExpr<TensorNode>& optimized,
                                                  std::size_t runs, std::uint64_t seed = 1,
                                                  std::size_t warm_runs = 0) {
  if (runs == 0) throw ExecutionError("compare_times: runs must be positive");
  const PrecomputedPair pair = precompute_pair(original, optimized, seed);
  std::vector<double> ms[2];
  std::size_t sink = 0;
  for (const RecExpr<TensorNode>& p : pair.program)
    sink += execute(p, pair.bindings).size();  // warm-up
  run_warm_abba_pairs(runs, warm_runs, [&](int k, bool timed) {
    const auto start = std::chrono::steady_clock::now();
    sink += execute(pair.program[k], pair.bindings).size();
    if (timed)
      ms[k].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
  });
  if (sink == 0) throw ExecutionError("compare_times: the programs have no outputs");
  TimeComparison out;
  out.runs = runs;
  std::vector<double> ratios;
  for (std::size_t r = 0; r < runs; ++r) {
    ratios.push_back(ms[0][r] > 0 ? ms[1][r] / ms[0][r] : 1.0);
    if (ratios.back() < 1.0) ++out.faster_pairs;
  }
  std::sort(ratios.begin(), ratios.end());
  out.ratio_median = detail::quantile(ratios, 0.5);
  out.ratio_q1 = detail::quantile(ratios, 0.25);
  out.ratio_q3 = detail::quantile(ratios, 0.75);
  for (int k = 0; k < 2; ++k) {
    std::sort(ms[k].begin(), ms[k].end());
    TimeComparison::Times& t = k == 0 ? out.original : out.optimized;
    t.median_ms = detail::quantile(ms[k], 0.5);
    t.min_ms = ms[k].front();
    t.max_ms = ms[k].back();
  }
  return out;
}

/// The measured time of one node of a program (`profile_program`).
struct NodeProfile {
  std::size_t node = 0;  ///< index in the program
  Op op = Op::Num;
  double median_ms = 0;  ///< median over the runs
  double min_ms = 0;
};

/// The measured time of the nodes of one op kind (`profile_program`).
struct OpKindProfile {
  Op op = Op::Num;
  std::size_t nodes = 0;
  double ms = 0;  ///< the sum of the nodes' median times
};

/// Where a program's time goes on the executor, node by node (`profile_program`).
struct ProgramProfile {
  std::size_t runs = 0;
  double median_ms =
      0;  ///< median time of a whole `execute` call (timed separately from the nodes)
  double min_ms = 0;
  /// Every evaluated node other than an attribute (`num`, `sym`, `ints`), in program order: the
  /// sources (`input`, `weight`: a lookup, or a copy when the dtype is not f32), views and
  /// kernels. A body term of a `fused` node is part of the `fused` node's time.
  std::vector<NodeProfile> nodes;
  /// The op kinds among `nodes`, by decreasing time (ties: `Op` order).
  std::vector<OpKindProfile> by_op;
  /// The sum of the nodes' medians (what `execute` spends outside the nodes: the program check,
  /// freeing tensors, collecting the outputs, is `median_ms` minus about this).
  [[nodiscard]] double nodes_ms() const noexcept {
    double total = 0;
    for (const NodeProfile& n : nodes) total += n.median_ms;
    return total;
  }
};

namespace detail {

/// The profile of `program` from its timed runs, in milliseconds: `node_ms[i]` node i's time in
/// each run (empty: not evaluated), `total_ms` each whole run's. Sorts both. Shared by
/// `profile_program` and the CUDA executor's `profile_cuda`.
[[nodiscard]] inline ProgramProfile summarize_profile(const RecExpr<TensorNode>& program,
                                                      std::vector<std::vector<double>>& node_ms,
                                                      std::vector<double>& total_ms) {
  const auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return quantile(v, 0.5);
  };
  ProgramProfile profile;
  profile.runs = total_ms.size();
  profile.median_ms = median(total_ms);
  profile.min_ms = total_ms.front();
  std::vector<OpKindProfile> kinds(kNumOps);
  for (std::size_t i = 0; i < node_ms.size(); ++i) {
    const Op op = program[Id(i)].op();
    if (node_ms[i].empty() || is_attribute(op)) continue;
    const NodeProfile node{i, op, median(node_ms[i]), node_ms[i].front()};
    profile.nodes.push_back(node);
    OpKindProfile& kind = kinds[static_cast<std::size_t>(op)];
    kind.op = op;
    kind.nodes++;
    kind.ms += node.median_ms;
  }
  for (const OpKindProfile& k : kinds)
    if (k.nodes > 0) profile.by_op.push_back(k);
  std::stable_sort(profile.by_op.begin(), profile.by_op.end(),
                   [](const OpKindProfile& a, const OpKindProfile& b) { return a.ms > b.ms; });
  return profile;
}

}  // namespace detail

/// Times `program` node by node on the executor: one untimed warm-up run, then `runs` runs,
/// each an `execute` with `ExecuteOptions::on_node` set (so the whole call and each node are
/// timed in the same run); per node, the median and minimum over the runs. Bind the weights with
/// `precompute_weights` first to leave the weight-only subgraphs out, as `compare_times` does.
/// Throws `ExecutionError` when `runs` is 0, and whatever `execute` throws.
[[nodiscard]] inline ProgramProfile profile_program(const RecExpr<TensorNode>& program,
                                                    const Bindings& bindings, std::size_t runs,
                                                    ExecuteOptions options = {}) {
  if (runs == 0) throw ExecutionError("profile_program: runs must be positive");
  const std::size_t n = program.size();
  std::vector<std::vector<double>> seconds(n);
  std::vector<double> totals;
  options.on_node = [&](std::size_t node, double s) { seconds[node].push_back(s); };
  (void)execute(program, bindings, options);  // warm-up
  for (auto& s : seconds) s.clear();
  for (std::size_t r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<HostTensor> out = execute(program, bindings, options);
    totals.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (out.empty()) throw ExecutionError("profile_program: the program has no outputs");
  }
  for (double& t : totals) t *= 1e3;
  for (auto& s : seconds)
    for (double& t : s) t *= 1e3;
  return detail::summarize_profile(program, seconds, totals);
}

/// The profile as a text table: one line per op kind (nodes, median time in milliseconds summed
/// over its nodes, share of the nodes' total), then the nodes' total and the whole run's median.
[[nodiscard]] inline std::string format_profile(const ProgramProfile& p) {
  const double total = p.nodes_ms();
  std::string s = fmt::format("{:<12} {:>7} {:>12} {:>6}\n", "op", "nodes", "time (ms)", "share");
  for (const OpKindProfile& k : p.by_op)
    s += fmt::format("{:<12} {:>7} {:>12.3f} {:>5.1f}%\n", op_name(k.op), k.nodes, k.ms,
                     total > 0 ? 100 * k.ms / total : 0.0);
  s += fmt::format("{:<12} {:>7} {:>12.3f}\n", "nodes", p.nodes.size(), total);
  s += fmt::format("{:<12} {:>7} {:>12.3f}  (median of {} runs)\n", "execute", "", p.median_ms,
                   p.runs);
  return s;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_EXECUTOR_H
