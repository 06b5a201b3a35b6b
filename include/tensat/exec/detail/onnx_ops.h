// The Eigen executor's operators of the ONNX extension: conv_transpose, resize, clip, and the
// correctly rounded sqrt and pow.
#ifndef TENSAT_EXEC_DETAIL_ONNX_OPS_H
#define TENSAT_EXEC_DETAIL_ONNX_OPS_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "tensat/exec/detail/elementwise.h"
#include "tensat/exec/detail/layout.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

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
  // product: the element-by-element branch is several times the cost model's price.
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

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_ONNX_OPS_H
