// The Eigen executor's convolutions: im2col column blocks with their epilogue, depthwise planes,
// and Winograd F(2x2, 3x3) with its weight transform.
#ifndef TENSAT_EXEC_DETAIL_CONV_H
#define TENSAT_EXEC_DETAIL_CONV_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "tensat/exec/detail/elementwise.h"
#include "tensat/exec/detail/scratch.h"
#include "tensat/tensor/post_ops.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

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

/// The output shape of conv2d.
inline Dims conv2d_dims(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                        std::int64_t pad) {
  return Dims{x.dims[0], w.dims[0], window_out(x.dims[2], w.dims[2], sh, pad),
              window_out(x.dims[3], w.dims[3], sw, pad)};
}

/// conv2d into `out` (shape `conv2d_dims` of x padded by `pads`), calling `epilogue` (if any) on
/// each finished part of the output: a group's channels (all their positions, one contiguous
/// range), or a depthwise convolution's outputs of one input channel. `by_block`: on each column
/// block's rows instead, as the block is computed (still in cache), for an epilogue whose other
/// operands are per-channel views or scalars (a full-size operand read in per-channel segments
/// costs more than it saves). `pads`: the convolution of x zero-padded so, read from x (every path
/// takes a padding offset).
inline void conv2d_into(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                        std::int64_t pad, Activation act, HostTensor& out,
                        const Epilogue* epilogue = nullptr, bool by_block = false,
                        const ConvInputPads& pads = {}) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t O = w.dims[0], Cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const std::int64_t G = C / Cg, Og = O / G;
  const std::int64_t Hp = H + pads.top + pads.bottom, Wp = W + pads.left + pads.right;
  const std::int64_t Ho = window_out(Hp, kh, sh, pad), Wo = window_out(Wp, kw, sw, pad);
  const std::int64_t ph = pad_before(Hp, kh, sh, pad, Ho) + pads.top,
                     pw = pad_before(Wp, kw, sw, pad, Wo) + pads.left;
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
  float* const col =
      direct ? nullptr : scratch(ScratchSlot::Columns, static_cast<std::size_t>(K * T));
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
          im2col_tile(xin, Cg, H, W, kh, kw, sh, sw, ph, pw, Wo, p0, t, col);
          Ym.noalias() = Wm * Eigen::Map<const RowMatrix>(col, K, t);
        }
        activate_block(y + p0, Og, t, P, act);  // the activation, while the block is in cache
        if (epilogue && by_block) {
          if (t == P)  // the block is whole rows: one contiguous range
            (*epilogue)((n * O + g * Og) * P, Og * P);
          else
            for (std::int64_t o = 0; o < Og; ++o) (*epilogue)((n * O + g * Og + o) * P + p0, t);
        }
      }
      // Otherwise the epilogue runs once per group, on its whole rows: one contiguous range.
      // With a full-size operand, per-block calls read it in Og strided segments between the
      // products, which is slower; the group's output, just
      // written, is then read from the last-level cache where it fits there.
      if (epilogue && !by_block) (*epilogue)((n * O + g * Og) * P, Og * P);
    }
}

inline HostTensor conv2d(const HostTensor& x, const HostTensor& w, std::int64_t sh, std::int64_t sw,
                         std::int64_t pad, Activation act) {
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
                              Activation act) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3], O = u.dims[1];
  const std::int64_t Ho = window_out(H, 3, 1, pad), Wo = window_out(W, 3, 1, pad);
  const std::int64_t ph = pad_before(H, 3, 1, pad, Ho), pw = pad_before(W, 3, 1, pad, Wo);
  const std::int64_t th = (Ho + 1) / 2, tw = (Wo + 1) / 2;
  const std::int64_t rows = std::min(th, wino_block_rows(C, O, tw)), T = rows * tw;
  HostTensor out(Dims{N, O, Ho, Wo}, x.dtype);
  float* const V = scratch(ScratchSlot::WinoInput, static_cast<std::size_t>(16 * C * T));
  float* const M = scratch(ScratchSlot::WinoOutput, static_cast<std::size_t>(16 * O * T));
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
              return Eigen::Map<Eigen::ArrayXf>(V + ((a * 4 + b) * C + c) * T + r * tw, tw);
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
        Eigen::Map<const RowMatrix, 0, Strided> Vk(V + k * C * T, C, nt, Strided(T));
        Eigen::Map<RowMatrix, 0, Strided> Mk(M + k * O * T, O, nt, Strided(T));
        Mk.noalias() = Uk * Vk;
      }
      for (std::int64_t o = 0; o < O; ++o) {
        float* y = out.data.data() + (n * O + o) * Ho * Wo;
        for (std::int64_t r = 0; r < nr; ++r) {
          const auto m = [&](std::int64_t a, std::int64_t b) {
            return Eigen::Map<const Eigen::ArrayXf>(M + ((a * 4 + b) * O + o) * T + r * tw, tw);
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

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_CONV_H
