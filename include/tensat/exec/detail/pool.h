// The Eigen executor's max and average pooling, computed separably.
#ifndef TENSAT_EXEC_DETAIL_POOL_H
#define TENSAT_EXEC_DETAIL_POOL_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "tensat/exec/detail/elementwise.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

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
                       std::int64_t sh, std::int64_t sw, std::int64_t pad, Activation act) {
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

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_POOL_H
