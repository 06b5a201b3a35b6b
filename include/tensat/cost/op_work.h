// The work of one operator as a kernel (OpWork: flops, bytes, unit, dtype) and its roofline time
// (KernelTime: launch overhead, memory latency, derates, compute/memory overlap) on a
// DeviceProfile. Times are in microseconds.
#ifndef TENSAT_COST_OP_WORK_H
#define TENSAT_COST_OP_WORK_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/cost/device_profile.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The work of one kernel: flops, bytes read and written, and the unit and dtype it runs on.
struct OpWork {
  /// False for free nodes (views, sources, attributes, weight-only results): no launch, no time.
  bool kernel = false;
  double flops = 0;          ///< F, in "add" units (transcendentals weighted, see OpWeights)
  double bytes_read = 0;     ///< R: each distinct input tensor once
  double bytes_written = 0;  ///< W: the result
  /// Bytes moved to bring the operands into the layout the device's kernel reads natively and
  /// its result back (a conv2d whose input is not in `DeviceProfile::conv_layout`: its input and
  /// result each read and written once more). A phase of its own: libraries run the transposes as
  /// separate kernels, so this traffic never overlaps the compute.
  double relayout_bytes = 0;
  /// Bytes of a Winograd convolution's transformed tiles (`wino_conv2d`): the transformed input
  /// and the products, 16 values per tile and channel, each written by one phase and read by the
  /// next in f32 (16 bytes a value: fitted on the reference executor, whose transforms scatter
  /// a tile's 16 values into 16 arrays). Phases of their own, at `mem_bandwidth`, like
  /// `relayout_bytes`.
  double transform_bytes = 0;
  DType dtype = DType::F32;
  Unit unit = Unit::Vector;
  /// Bytes/s of this kernel's memory traffic when not the profile's `mem_bandwidth`: a
  /// matrix-vector product's (`DeviceProfile::gemv_rate`). 0: the profile's.
  double bandwidth = 0;
  /// FLOP/s of this kernel's compute when not the peak of its unit: a windowed kernel's
  /// (`DeviceProfile::window_rate`: depthwise convolutions, pooling), or a contraction's at its
  /// size (`DeviceProfile::contraction_fill`, `conv_flops`). 0: the unit's peak.
  double compute_rate = 0;
  /// A convolution that slides its window without a product (depthwise): a `Window` kernel of
  /// the depthwise kind (`kernel_kind`), whatever its rate.
  bool depthwise = false;
  /// A matmul of one row priced as a matrix-vector product (`DeviceProfile::gemv_bandwidth`):
  /// the gemv kind (`kernel_kind`).
  bool gemv = false;
  /// Whether the kernel has a `kernel_kind` of its own form (depthwise, gemv).
  [[nodiscard]] bool own_form() const noexcept { return depthwise || gemv; }

  [[nodiscard]] double bytes() const noexcept { return bytes_read + bytes_written; }
  /// Every byte the kernel moves: R + W and the layout transposes around it.
  [[nodiscard]] double bytes_moved() const noexcept {
    return bytes() + relayout_bytes + transform_bytes;
  }
  /// Arithmetic intensity, flops per byte (infinite with no bytes).
  [[nodiscard]] double intensity() const noexcept {
    return bytes() > 0 ? flops / bytes() : std::numeric_limits<double>::infinity();
  }
};

/// What limits a kernel: its compute time or its memory time (`None` for free nodes).
enum class Bound : std::uint8_t { None, Compute, Memory };

[[nodiscard]] constexpr std::string_view bound_name(Bound b) noexcept {
  return b == Bound::Compute ? "compute" : b == Bound::Memory ? "memory" : "none";
}

/// The time of one kernel, in microseconds.
struct KernelTime {
  double compute_us = 0;      ///< t_c = F / (P · eta_c)
  double memory_us = 0;       ///< t_m = (R + W) / (BW · eta_m) + lat_m
  double launch_us = 0;       ///< t_launch (0 for a free node)
  double total_us = 0;        ///< t_launch + t_c + t_m − alpha · min(t_c, t_m)
  Bound bound = Bound::None;  ///< Compute when t_c > t_m, else Memory
};

/// The roofline time of a kernel doing `flops` at `peak` FLOP/s and moving `bytes` bytes:
/// t_c = flops / (peak · eta_c), t_m = bytes / (BW · eta_m) + lat_m,
/// total = t_launch + t_c + t_m − alpha · min(t_c, t_m). With lat_m = 0 the kernel is
/// compute-bound exactly when flops / bytes exceeds the ridge point peak · eta_c / (BW · eta_m).
/// `bandwidth` > 0 replaces the profile's `mem_bandwidth` (a matrix-vector product's rate);
/// otherwise BW is the profile's two tiers (`DeviceProfile::memory_seconds`: the first
/// `cache_resident_bytes` at `cache_bandwidth`, where the profile models a cache).
[[nodiscard]] inline KernelTime roofline_time(double flops, double bytes, double peak,
                                              const DeviceProfile& p, double bandwidth = 0) {
  KernelTime t;
  t.compute_us = flops / (peak * p.eta_c) * 1e6;
  const double seconds = bandwidth > 0 ? bytes / bandwidth : p.memory_seconds(bytes);
  t.memory_us = (seconds / p.eta_m + p.mem_latency) * 1e6;
  t.launch_us = p.launch_overhead * 1e6;
  t.total_us =
      t.launch_us + t.compute_us + t.memory_us - p.alpha * std::min(t.compute_us, t.memory_us);
  t.bound = t.compute_us > t.memory_us ? Bound::Compute : Bound::Memory;
  return t;
}

/// `t` with every part multiplied by `factor` (a `DeviceProfile::time_scale` correction).
[[nodiscard]] inline KernelTime scaled(KernelTime t, double factor) noexcept {
  t.compute_us *= factor;
  t.memory_us *= factor;
  t.launch_us *= factor;
  t.total_us *= factor;
  return t;
}

/// The time of one kernel (`OpWork::kernel` false: all zero, `Bound::None`).
[[nodiscard]] inline KernelTime kernel_time(const OpWork& work, const DeviceProfile& p) {
  if (!work.kernel) return KernelTime{};
  const double peak = work.compute_rate > 0 ? work.compute_rate : p.peak(work.dtype, work.unit);
  KernelTime t = roofline_time(work.flops, work.bytes(), peak, p, work.bandwidth);
  if (work.relayout_bytes + work.transform_bytes > 0) {
    const double staged_us =
        (work.relayout_bytes + work.transform_bytes) / (p.mem_bandwidth * p.eta_m) * 1e6;
    t.memory_us += staged_us;
    t.total_us += staged_us;
    t.bound = t.compute_us > t.memory_us ? Bound::Compute : Bound::Memory;
  }
  return t;
}

namespace detail {

/// Flops per element of a fused activation.
inline double activation_weight(Activation act, const OpWeights& w) noexcept {
  switch (act) {
    case Activation::Sigmoid:
      return w.sigmoid;
    case Activation::Relu:
      return w.max;
    case Activation::Tanh:
      return w.tanh;
    case Activation::None:
      break;
  }
  return 0;
}

}  // namespace detail

/// The work of `node` whose result is `out` and whose children are `children` (as in
/// `simple_node_cost`). Reads count each distinct tensor child once (children are the same
/// tensor when the pointers are equal); `read_bytes`, when not empty, gives per child what
/// reading it costs (a broadcast child costs its source's bytes) and overrides the child's size.
///
/// | op | F (n = elements of the result, w = profile weights) | R | unit |
/// |---|---|---|---|
/// | ewadd / ewmul / smul / relu | n·w.add / n·w.mul / n·w.mul / n·w.max | inputs | vector |
/// | exp / tanh / sigmoid / gelu | n·w.exp / w.tanh / w.sigmoid / w.gelu | input | vector |
/// | matmul [.., M, K] x [.., K, N] | 2·B·M·N·K + n·w(act) | both | matrix if the profile has one
/// for the dtype; M = 1: bytes at `gemv_rate(N)`, no `gemm_half_flops` fill | | conv2d, weight
/// [C_out, C_in/g, kh, kw] | 2·n·(C_in/g)·kh·kw + n·w(act) | x, weight | as matmul; depthwise
/// (C_in/g = 1, g > 1): vector at `window_rate` | | wino_conv2d, u [16, C_out, C_in], t tiles of
/// 2x2 outputs | 2·16·t·C_out·C_in + t·(32·C_in + 24·C_out)·w.add·(GEMM peak / vector peak) +
/// n·w(act) | x, u; and 16·16·t·(C_in + C_out) bytes of transformed tiles, staged
/// (`transform_bytes`) | as matmul | | poolmax / poolavg | n·kh·kw·w.max / n·(kh·kw·w.add + w.mul),
/// + act | input | vector at `window_rate` (a window over the whole plane, none of it padding
/// before: the vector peak) | | reduce_sum / reduce_max / reduce_mean | \|X\|·w.add / \|X\|·w.max /
/// \|X\|·w.add + n·w.mul | input | vector | | softmax (rows r) | n·(w.max + 2·w.add + w.exp +
/// w.mul) + r·w.div | input | vector | | layernorm (rows r) | n·(4·w.add + 3·w.mul) + r·(2·w.mul +
/// w.add + w.rsqrt) | x, gamma, beta | vector | | batchnorm (channels C) | n·(w.mul + w.add) +
/// C·(w.rsqrt + 4) | all five | vector | | ewsub / ewdiv / ewpow / sqrt / clip | n·w.add / n·w.div
/// / n·(2·w.exp + w.mul) / n·w.rsqrt / 2n·w.max | inputs | vector | | erf | n·w.tanh (a rational
/// approximation of the same order; the profile has no erf weight) | input | vector | |
/// conv_transpose, x [N, C_in, H, W], weight [C_in, C_out/g, kh, kw] | 2·N·C_in·H·W·(C_out/g)·kh·kw
/// | x, weight | as matmul | | resize (k axes resized) | nearest 0; linear n·k·(2·w.mul + w.add) |
/// input | vector | | opaque (an unknown ONNX operator) | 0: memory-bound, one launch | inputs |
/// vector | | concat / transpose / pad / enlarge / merge | 0 | inputs | — | | slice | 0 | the slice
/// only (n elements) | — | | split, when the profile's `split_copies` | 0 | the input | — | | views
/// (`is_view_op`), weight-only results, non-tensors | free | | |
///
/// W is the result's bytes for every kernel. Where the profile has `gemm_half_flops`, a
/// contraction (matmul, conv2d but a depthwise one, conv_transpose) of F flops computes at its
/// rate · F / (F + gemm_half_flops) (`DeviceProfile::contraction_fill`); where it has
/// `conv_flops`, a conv2d of one group with a window larger than 1x1 computes at
/// conv_flops · F / (F + conv_half_flops) instead, and a grouped one at conv_flops · Og / (Og +
/// gemm_half_rows). Where it has `gemm_half_rows` and neither of those (`columns_curve`), a
/// conv2d (not depthwise) of P output positions an image also computes at P / (P +
/// gemm_half_rows) of its rate, and a wino_conv2d's products at T / (T + gemm_half_rows) for
/// the T tiles of its block (`DeviceProfile::gemm_columns_fill`); a conv2d of one position is a
/// matrix-vector product (the gemv kind, streamed at `gemv_rate(C_out)`). Where it has
/// `window_plane_overhead` o, a depthwise conv2d of P planes computes at F / (F·w / window_rate
/// + P·o), w = (W_o + (k_w − 1) / s_w) / W_o the width of the rows it computes over the output's.
[[nodiscard]] inline OpWork op_work(const TensorNode& node, const TensorInfo& out,
                                    Span<const TensorInfo* const> children,
                                    const DeviceProfile& profile,
                                    Span<const double> read_bytes = {}) {
  OpWork work;
  const Op op = node.op();
  if (op == Op::Split && profile.split_copies && out.kind == Kind::Pair && !out.weight_only &&
      !out.symbolic && children.size() == 3 && children[2]->kind == Kind::Tensor) {
    // An executor that copies both parts: the input read once, the same bytes written.
    work.kernel = true;
    work.dtype = out.dtype;
    work.bytes_read =
        read_bytes.empty() ? static_cast<double>(children[2]->bytes()) : read_bytes[2];
    work.bytes_written = static_cast<double>(children[2]->bytes());
    return work;
  }
  if (op == Op::Broadcast && profile.broadcast_copies && out.kind == Kind::Tensor &&
      !out.weight_only && !out.symbolic && children.size() == 2 &&
      children[1]->kind == Kind::Tensor) {
    // An executor that materializes it: the source read, the whole broadcast shape written.
    work.kernel = true;
    work.dtype = out.dtype;
    work.bytes_read =
        read_bytes.empty() ? static_cast<double>(children[1]->bytes()) : read_bytes[1];
    work.bytes_written = static_cast<double>(out.bytes());
    return work;
  }
  if (is_view_op(op) || out.weight_only || out.symbolic || out.kind != Kind::Tensor) return work;
  work.kernel = true;
  work.dtype = out.dtype;
  work.bytes_written = static_cast<double>(out.bytes());
  const auto child_bytes = [&](std::size_t i) {
    return read_bytes.empty() ? static_cast<double>(children[i]->bytes()) : read_bytes[i];
  };
  // R: each distinct tensor child once.
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (children[i]->kind != Kind::Tensor) continue;
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = children[j] == children[i];
    if (!seen) work.bytes_read += child_bytes(i);
  }
  const OpWeights& w = profile.weights;
  const double n = static_cast<double>(out.elements());
  switch (op) {
    case Op::EwAdd:
      work.flops = n * w.add;
      break;
    case Op::EwMul:
    case Op::SMul:
      work.flops = n * w.mul;
      break;
    case Op::Relu:
      work.flops = n * w.max;
      break;
    case Op::Exp:
      work.flops = n * w.exp;
      break;
    case Op::Tanh:
      work.flops = n * w.tanh;
      break;
    case Op::Sigmoid:
      work.flops = n * w.sigmoid;
      break;
    case Op::Gelu:
      work.flops = n * w.gelu;
      break;
    case Op::GeluErf:
      work.flops = n * (w.tanh + 3 * w.mul + w.add);  // erf priced as tanh (see Erf)
      break;
    case Op::Silu:
      work.flops = n * (w.sigmoid + w.mul);
      break;
    case Op::HardSwish:
      work.flops = n * (2 * w.mul + w.add + 2 * w.max);
      break;
    case Op::MatMul: {
      const double k = static_cast<double>(children[1]->dims.back());
      work.flops = 2 * n * k + n * detail::activation_weight(activation_of(children[0]->value), w);
      work.unit = profile.gemm_unit(out.dtype);
      // A matrix-vector product streams its matrix (no tiled GEMM, so no fill), at the profile's
      // matrix-vector rate unless its weights stay in cache.
      const bool gemv =
          profile.gemv_bandwidth > 0 && out.dims.size() >= 2 && out.dims[out.dims.size() - 2] == 1;
      work.gemv = gemv;
      if (gemv && !profile.weights_cached)
        work.bandwidth = profile.gemv_rate(static_cast<double>(out.dims.back()));
      if (profile.gemm_half_flops > 0 && !gemv)
        work.compute_rate =
            profile.peak(out.dtype, work.unit) * profile.contraction_fill(work.flops);
      break;
    }
    case Op::Conv2d: {
      const Dims& wd = children[5]->dims;
      work.flops = 2 * n * static_cast<double>(wd[1] * wd[2] * wd[3]) +
                   n * detail::activation_weight(activation_of(children[3]->value), w);
      work.unit = profile.gemm_unit(out.dtype);
      const Dims& x = children[4]->dims;
      const bool depthwise = wd[1] == 1 && x.size() == 4 && x[1] > 1;
      const bool grouped = x.size() == 4 && wd[1] > 0 && x[1] / wd[1] > 1;
      if (depthwise) {
        // Depthwise: no reduction over channels, so no product for a GEMM or a matrix unit to run.
        work.depthwise = true;
        work.unit = Unit::Vector;
        work.compute_rate = profile.window_rate(out.dtype);
        if (profile.window_plane_overhead > 0 && out.dims.size() == 4 && out.dims[3] > 0 &&
            work.flops > 0) {
          // Rows computed (W_o + k_w - 1) / s_w wide, and a fixed cost a plane.
          const std::int64_t wo = out.dims[3], sw = std::max<std::int64_t>(children[1]->value, 1);
          const double wide = static_cast<double>(wo + (wd[3] - 1) / sw) / static_cast<double>(wo);
          const double planes = static_cast<double>(out.dims[0] * out.dims[1]);
          work.compute_rate = work.flops / (work.flops * wide / work.compute_rate +
                                            planes * profile.window_plane_overhead);
        }
      } else if (profile.gemm_half_rows > 0 && grouped) {
        // Grouped: one product per group, of Og = C_out / groups rows (see
        // DeviceProfile::gemm_half_rows for why one group keeps the peak).
        const double rows = static_cast<double>(wd[0]) / static_cast<double>(x[1] / wd[1]);
        work.compute_rate = profile.gemm_rows_rate(out.dtype, work.unit, rows);
      }
      if (!depthwise && (profile.gemm_half_flops > 0 || profile.conv_flops > 0)) {
        // A product's rate at this size (gemm_half_flops); a windowed convolution on its own curve,
        // and a windowed grouped one on conv_flops and the rows curve alone (gemm_half_rows is
        // fitted so; the fill, fitted to one-group convolutions, does not carry over to them).
        const bool windowed = wd[2] * wd[3] > 1 && profile.conv_flops > 0;
        const double peak = profile.peak(out.dtype, work.unit);
        double rate = work.compute_rate > 0 ? work.compute_rate : peak;
        if (windowed) rate *= profile.conv_flops / peak;
        if (!(windowed && grouped))
          rate *= windowed ? profile.convolution_fill(work.flops)
                           : profile.contraction_fill(work.flops);
        work.compute_rate = rate;
      }
      if (!depthwise && profile.columns_curve() && out.dims.size() == 4) {
        // The product's other side: one column per output position of an image. A plane of a
        // few positions (a late stage's 2x2 map) is as narrow as a group of few channels.
        const double columns = static_cast<double>(out.dims[2] * out.dims[3]);
        const double rate =
            work.compute_rate > 0 ? work.compute_rate : profile.peak(out.dtype, work.unit);
        work.compute_rate = rate * profile.gemm_columns_fill(columns);
        if (columns == 1 && !grouped && profile.gemv_bandwidth > 0) {
          // One output position (a squeeze-excite's 1x1 convolutions): a matrix-vector product.
          work.gemv = true;
          if (!profile.weights_cached)
            work.bandwidth = profile.gemv_rate(static_cast<double>(out.dims[1]));
        }
      }
      if (grouped && !depthwise && profile.group_overhead > 0 && out.dims.size() == 4 &&
          work.flops > 0) {
        // One im2col and one product call a group and image: a fixed cost each.
        const double calls = static_cast<double>(out.dims[0] * (x[1] / wd[1]));
        const double rate =
            work.compute_rate > 0 ? work.compute_rate : profile.peak(out.dtype, work.unit);
        work.compute_rate = work.flops / (work.flops / rate + calls * profile.group_overhead);
      }
      if (children[4]->layout != profile.native_conv_layout(out.dtype))
        work.relayout_bytes = 2.0 * static_cast<double>(children[4]->bytes() + out.bytes());
      break;
    }
    case Op::WinoConv2d: {
      // 16 products over the tiles, on the GEMM's unit, and the two transforms on the vector
      // unit (per tile: 32 adds of an input channel, 24 of an output channel) counted at the
      // GEMM unit's rate by the ratio of the peaks, so that one roofline term prices both; the
      // transformed tiles' round trips through memory are phases of their own (transform_bytes).
      const Dims& x = children[2]->dims;
      const Dims& u = children[3]->dims;
      const double tiles =
          static_cast<double>(out.dims[0] * ((out.dims[2] + 1) / 2) * ((out.dims[3] + 1) / 2));
      work.unit = profile.gemm_unit(out.dtype);
      const double transforms =
          tiles * (32 * static_cast<double>(x[1]) + 24 * static_cast<double>(u[1])) * w.add;
      work.flops =
          2 * 16 * tiles * static_cast<double>(u[1] * u[2]) +
          transforms * profile.peak(out.dtype, work.unit) / profile.peak(out.dtype, Unit::Vector) +
          n * detail::activation_weight(activation_of(children[1]->value), w);
      work.transform_bytes = 16.0 * 16 * tiles * static_cast<double>(x[1] + u[1]);
      if (profile.columns_curve()) {
        // The products have a column per tile of a block (`wino_block_rows`): few on a small
        // plane. Only the products' share of the flops slows down.
        const double block = static_cast<double>(
            ((out.dims[3] + 1) / 2) *
            std::min<std::int64_t>((out.dims[2] + 1) / 2,
                                   wino_block_rows(x[1], u[1], (out.dims[3] + 1) / 2)));
        const double products = 2 * 16 * tiles * static_cast<double>(u[1] * u[2]);
        const double peak = profile.peak(out.dtype, work.unit);
        work.compute_rate = work.flops / ((work.flops - products) / peak +
                                          products / (peak * profile.gemm_columns_fill(block)));
        // One tile a block: 16 matrix-vector products over u (16/9 of the filter's bytes), at the
        // executor's matrix-vector rate even where the weights fit in cache: priced as products
        // at the peak they came out several times too fast (op_work.md).
        if (block == 1 && profile.gemv_bandwidth > 0) work.bandwidth = profile.gemv_bandwidth;
      }
      if (children[2]->layout != profile.native_conv_layout(out.dtype))
        work.relayout_bytes = 2.0 * static_cast<double>(children[2]->bytes() + out.bytes());
      break;
    }
    case Op::PoolMax:
    case Op::PoolAvg: {
      const double window = static_cast<double>(children[0]->value * children[1]->value);
      work.flops = op == Op::PoolMax ? n * window * w.max : n * (window * w.add + w.mul);
      work.flops += n * detail::activation_weight(activation_of(children[5]->value), w);
      // A window over the whole plane, with no padding before it, is one reduction per channel
      // (the executor's classifier heads, `detail::pool`): vectorized like reduce_*, at the
      // vector peak. SAME pads (k - H) / 2 before a window of k >= H.
      const TensorInfo& x = *children[6];
      const auto covers = [](std::int64_t k, std::int64_t in) {
        return k >= in && (k - in) / 2 == 0;
      };
      const bool global = x.dims.size() == 4 && out.dims.size() == 4 && out.dims[2] == 1 &&
                          out.dims[3] == 1 && covers(children[0]->value, x.dims[2]) &&
                          covers(children[1]->value, x.dims[3]);
      if (!global) work.compute_rate = profile.window_rate(out.dtype);
      break;
    }
    case Op::ReduceSum:
      work.flops = static_cast<double>(children[1]->elements()) * w.add;
      break;
    case Op::ReduceMax:
      work.flops = static_cast<double>(children[1]->elements()) * w.max;
      break;
    case Op::ReduceMean:
      work.flops = static_cast<double>(children[1]->elements()) * w.add + n * w.mul;
      break;
    case Op::Softmax: {
      const auto axis = static_cast<std::size_t>(children[0]->value);
      const double rows = n / static_cast<double>(out.dims[axis]);
      work.flops = n * (w.max + 2 * w.add + w.exp + w.mul) + rows * w.div;
      break;
    }
    case Op::LayerNorm: {
      const double rows = n / static_cast<double>(out.dims.back());
      work.flops = n * (4 * w.add + 3 * w.mul) + rows * (2 * w.mul + w.add + w.rsqrt);
      break;
    }
    case Op::BatchNorm: {
      const double channels = static_cast<double>(out.dims[1]);
      work.flops = n * (w.mul + w.add) + channels * (w.rsqrt + 4);
      break;
    }
    case Op::Slice: {
      // Only the slice is read.
      work.bytes_read = work.bytes_written;
      break;
    }
    case Op::EwSub:
      work.flops = n * w.add;
      break;
    case Op::EwDiv:
      work.flops = n * w.div;
      break;
    case Op::EwPow:
      work.flops = n * (2 * w.exp + w.mul);
      break;  // exp(b · log a)
    case Op::Sqrt:
      work.flops = n * w.rsqrt;
      break;
    case Op::Erf:
      work.flops = n * w.tanh;
      break;  // a rational approximation like tanh's (no weight of its own)
    case Op::Clip:
      work.flops = n * 2 * w.max;
      break;
    case Op::ConvTranspose: {
      const Dims& wd = children[8]->dims;
      work.flops = 2 * static_cast<double>(children[7]->elements()) *
                   static_cast<double>(wd[1] * wd[2] * wd[3]);
      work.unit = profile.gemm_unit(out.dtype);
      if (profile.gemm_half_flops > 0)
        work.compute_rate =
            profile.peak(out.dtype, work.unit) * profile.contraction_fill(work.flops);
      break;
    }
    case Op::Resize: {
      if (children[0]->value != static_cast<std::int64_t>(ResizeInterp::Linear)) break;
      double axes = 0;
      for (std::size_t a = 0; a < out.dims.size(); ++a) axes += out.dims[a] != children[4]->dims[a];
      work.flops = n * axes * (2 * w.mul + w.add);
      break;
    }
    // opaque: nothing is known of its arithmetic; as a memory-bound kernel it costs one launch
    // and its bytes, which no rewrite can change (only what surrounds it).
    default:
      break;  // concat, transpose, pad, enlarge, merge, opaque: bytes only
  }
  return work;
}

/// `kernel_time(op_work(...)).total_us`: the cost of one node in microseconds.
[[nodiscard]] inline double roofline_node_time(const TensorNode& node, const TensorInfo& out,
                                               Span<const TensorInfo* const> children,
                                               const DeviceProfile& profile,
                                               Span<const double> read_bytes = {}) {
  return kernel_time(op_work(node, out, children, profile, read_bytes), profile).total_us;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_OP_WORK_H
