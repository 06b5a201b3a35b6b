// The analytical cost model of the tensor dialect: per-op flops and bytes, a roofline kernel time
// with launch overhead, memory latency, derates and compute/memory overlap, the time of a fused
// group of ops, the extraction cost `RooflineCost`, and the time of a program with a per-op-kind
// breakdown. Times are in microseconds.
#ifndef TENSAT_COST_COST_MODEL_H
#define TENSAT_COST_COST_MODEL_H

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/tensor/analysis.h"
#include "tensat/cost/device_profile.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"
#include "tensat/cost/simple_cost.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The data-movement ops a fused body can read through (pad, transpose, slice, concat,
/// broadcast): an executor's fused loop gathers their elements by index.
[[nodiscard]] constexpr bool is_gather(Op op) noexcept {
  return op == Op::Pad || op == Op::Transpose || op == Op::Slice || op == Op::Concat ||
         op == Op::Broadcast;
}

/// Whether a body term of op `op` reads through a gather, given whether its data operand is an
/// `arg`: a broadcast of a kernel input (a bias, a per-channel scale) is a fill, run by run.
[[nodiscard]] constexpr bool body_gathers(Op op, bool operand_is_arg) noexcept {
  return is_gather(op) && !(op == Op::Broadcast && operand_is_arg);
}

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

/// Flops per element of a fused activation (TASO's numbering: 0 none, 1 sigmoid, 2 relu, 3 tanh).
inline double activation_weight(std::int64_t act, const OpWeights& w) noexcept {
  switch (act) {
    case 1:
      return w.sigmoid;
    case 2:
      return w.max;
    case 3:
      return w.tanh;
    default:
      return 0;
  }
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
      work.flops = 2 * n * k + n * detail::activation_weight(children[0]->value, w);
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
                   n * detail::activation_weight(children[3]->value, w);
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
          n * detail::activation_weight(children[1]->value, w);
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
        // executor's matrix-vector rate even where the weights fit in cache (measured 10-20 GB/s
        // on 2x2 planes of 128-512 channels; priced as products at the peak, 2-4x too fast).
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
      work.flops += n * detail::activation_weight(children[5]->value, w);
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

// ----------------------------------------------------------------------------- fused groups

/// A group of ops executed as one kernel: the members' work (only `kernel`, `flops`, `dtype`,
/// `unit`, `compute_rate` and the primary member's `bandwidth` are used; their own bytes are not,
/// since intermediates stay on chip), plus the bytes of
/// the group's external inputs (each read once) and of its outputs used outside it (each written
/// once).
struct FusedGroup {
  std::vector<OpWork> members;
  double bytes_read = 0;     ///< R(G): tensors produced outside the group (or sources), once each
  double bytes_written = 0;  ///< W(G): tensors produced in the group and used outside it
  /// The member whose peak the group runs at; by default the first member on the matrix unit
  /// (a GEMM/conv root), else the member with the most flops (the first on ties).
  std::optional<std::size_t> primary;
  /// Part of R(G) + W(G) that is a phase of its own: operands computed in the group and stored
  /// for a contraction, then read back by it (`prologue_bytes`). The contraction starts only
  /// once its operand is complete, so this traffic does not overlap the group's compute.
  double staged_bytes = 0;
  /// A member is a contraction (its time takes `DeviceProfile::time_scale`'s
  /// "fused_contraction" factor rather than "fused").
  bool has_contraction = false;
  /// How many members are contractions (with `DeviceProfile::epilogue_kernel`, a launch each).
  std::size_t contractions = 0;
  /// A member is a data-movement op (pad, transpose, slice, concat, broadcast): the body reads
  /// through it ("fused_gather").
  bool has_gather = false;
  /// Each member's own `DeviceProfile::time_scale` (its kind's, as if it ran alone), applied to
  /// its compute: a sigmoid or a square root costs what it costs unfused whether or not a
  /// loop fuses it. Empty, or shorter than `members`: 1.
  std::vector<double> member_scales{};
  /// The contraction members' own times, each as the kernel it would be alone (its time scale
  /// included): a kernel runs its product as the library call it is, so it costs no less. Without
  /// it a matrix-vector product fused with its bias and ReLU was priced at the group's roofline,
  /// 30 % below the product alone (which streams its matrix at `gemv_bandwidth`, scaled x1.4).
  double floor_us = 0;
};

/// Index of the group's primary member (see `FusedGroup::primary`); `members.size()` when no
/// member is a kernel.
[[nodiscard]] inline std::size_t primary_member(const FusedGroup& g) noexcept {
  if (g.primary && *g.primary < g.members.size()) return *g.primary;
  std::size_t best = g.members.size();
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    const OpWork& m = g.members[i];
    if (!m.kernel) continue;
    if (m.unit == Unit::Matrix) return i;
    if (best == g.members.size() || m.flops > g.members[best].flops) best = i;
  }
  return best;
}

/// The time of a fused group as one kernel: one launch (with `DeviceProfile::epilogue_kernel`,
/// one more for each product beyond the first and one for the elementwise region), the members'
/// flops at the primary member's peak P_G (a member with a rate of its own, `OpWork::compute_rate`,
/// at that rate), R(G) + W(G) bytes, of which the staged bytes S(G) come after: cost(G) = t_launch
/// + n_G · t_term + combine(sum_i s_i · F_i / (P_i · eta_c), (R(G) + W(G) − S(G)) / (BW_G · eta_m)
/// + lat_m)
///           + S(G) / (BW · eta_m),
/// n_G = the kernel members, t_term = `DeviceProfile::fused_term_overhead`,
/// s_i = the member's own time scale (`FusedGroup::member_scales`), P_i = the member's
/// `compute_rate` or P_G; BW_G the primary member's bandwidth
/// (`OpWork::bandwidth`: a matrix-vector product's) or the profile's. A group without a kernel
/// member is free.
[[nodiscard]] inline KernelTime fused_time(const FusedGroup& g, const DeviceProfile& p) {
  const std::size_t primary = primary_member(g);
  if (primary >= g.members.size() || !g.members[primary].kernel) return KernelTime{};
  const OpWork& root = g.members[primary];
  const double peak = p.peak(root.dtype, root.unit);
  double flops =
      0;  // at `peak`: a member with a rate of its own counts as many flops as take it as long
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    const OpWork& m = g.members[i];
    const double scale = i < g.member_scales.size() ? g.member_scales[i] : 1.0;
    if (m.kernel)
      flops += scale * (m.compute_rate > 0 ? m.flops * (peak / m.compute_rate) : m.flops);
  }
  const double staged = std::clamp(g.staged_bytes, 0.0, g.bytes_read + g.bytes_written);
  KernelTime t =
      roofline_time(flops, g.bytes_read + g.bytes_written - staged, peak, p, root.bandwidth);
  if (p.fused_term_overhead > 0) {  // an interpreted body: each term's own setup and dispatch
    std::size_t terms = 0;
    for (const OpWork& m : g.members) terms += m.kernel ? 1 : 0;
    const double us = static_cast<double>(terms) * p.fused_term_overhead * 1e6;
    t.launch_us += us;
    t.total_us += us;
  }
  if (p.epilogue_kernel && g.contractions > 0) {
    // The products are library calls and the rest one kernel after them: launches of their own.
    std::size_t kernels = 0;
    for (const OpWork& m : g.members) kernels += m.kernel ? 1 : 0;
    const double extra =
        static_cast<double>(g.contractions - 1) + (kernels > g.contractions ? 1.0 : 0.0);
    t.launch_us += extra * p.launch_overhead * 1e6;
    t.total_us += extra * p.launch_overhead * 1e6;
  }
  if (staged > 0) {
    const double staged_us = staged / (p.mem_bandwidth * p.eta_m) * 1e6;
    t.memory_us += staged_us;
    t.total_us += staged_us;
    t.bound = t.compute_us > t.memory_us ? Bound::Compute : Bound::Memory;
  }
  if (t.total_us < g.floor_us) {  // never below its products alone
    const double extra = g.floor_us - t.total_us;
    (t.bound == Bound::Compute ? t.compute_us : t.memory_us) += extra;
    t.total_us = g.floor_us;
  }
  return t;
}

/// The bytes a body term of op `op` needs in memory for its computed (non-`arg`) operand
/// `operand`: the operand's size for a contraction (`matmul`, `conv2d`: library kernels read
/// their operands from memory), 0 for every other op (loop-fused).
[[nodiscard]] inline double prologue_bytes(Op op, const TensorInfo& operand) noexcept {
  return is_contraction(op) && operand.kind == Kind::Tensor ? static_cast<double>(operand.bytes())
                                                            : 0.0;
}

/// The bytes of a body term's own result that a kernel keeps in memory: on a profile without
/// `fusion_overlap` (one CPU thread, the Eigen executor), a contraction below the body's root
/// writes its whole product (a convolution's group, a matmul's batch entry) before the loop that
/// follows reads it back, so the product is staged like a prologue's operand; 0 for every other
/// term, and on a GPU profile, where an epilogue runs on the product's registers.
[[nodiscard]] inline double epilogue_operand_bytes(Op op, const TensorInfo& result, bool is_root,
                                                   const DeviceProfile& profile) noexcept {
  return is_contraction(op) && !is_root && !profile.fusion_overlap && result.kind == Kind::Tensor
             ? static_cast<double>(result.bytes())
             : 0.0;
}

/// The group of a `fused` node: its body's ops (`visit_body(f)` calls
/// `f(node, out, children, materialized)` once for each distinct body term other than `arg`s),
/// the external inputs' bytes (each distinct input once) and the result's bytes. `materialized`:
/// the bytes of the term's operands that are computed in the body but must exist in memory for
/// it — a `matmul`'s or `conv2d`'s operands other than `arg`s (see `prologue_bytes`). A
/// GEMM or convolution library (cuBLAS, cuDNN, Eigen, oneDNN) reads its operands from memory, so
/// a producer inlined into a contraction is written and read back, as XLA materializes the
/// operands of its library calls; they are charged to the group twice (written, then read),
/// as staged bytes (`FusedGroup::staged_bytes`): time that the contraction cannot hide. The
/// same holds for a contraction's own product where the epilogue after it is a pass of its own
/// (`epilogue_operand_bytes`): the callers add those bytes to the contraction's `materialized`.
template <class VisitBody>
[[nodiscard]] FusedGroup fused_group(const TensorInfo& out, double bytes_read,
                                     const DeviceProfile& profile, VisitBody&& visit_body) {
  FusedGroup g;
  g.bytes_read = bytes_read;
  g.bytes_written = static_cast<double>(out.bytes());
  visit_body([&](const TensorNode& node, const TensorInfo& info,
                 Span<const TensorInfo* const> children, double materialized) {
    TensorInfo concrete = info;  // the body term, costed as if computed (its bytes are not used)
    concrete.symbolic = false;
    g.members.push_back(op_work(node, concrete, children, profile));
    g.member_scales.push_back(profile.time_scale_of(node.op(), g.members.back().own_form(), false));
    if (is_contraction(node.op()))
      g.floor_us += scaled(kernel_time(g.members.back(), profile), g.member_scales.back()).total_us;
    g.bytes_written += materialized;
    g.bytes_read += materialized;
    g.staged_bytes += 2 * materialized;
    // A contraction's layout transposes stay phases of their own inside the kernel too.
    g.bytes_read += g.members.back().relayout_bytes / 2;
    g.bytes_written += g.members.back().relayout_bytes / 2;
    g.staged_bytes += g.members.back().relayout_bytes;
  });
  return g;
}

// ----------------------------------------------------------------------------- extraction cost

/// The roofline model as an extraction cost `(node, eclass) -> microseconds` over a
/// `TensorEGraph`, for `ExtractionGraph::from_egraph` (like `SimpleCost`). Shapes come from the
/// analysis data; a child class holding a `broadcast` e-node is read at its source's size.
class RooflineCost {
 public:
  /// Throws `ProfileError` if the profile is not valid.
  RooflineCost(const TensorEGraph& egraph, const DeviceProfile& profile)
      : egraph_(&egraph), profile_(profile) {
    validate(profile_);
  }

  /// The work of `node` in class `cls`.
  [[nodiscard]] OpWork work(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    SmallVector<const TensorInfo*, 8> children;
    SmallVector<double, 8> reads;
    for (Id c : node.children()) {
      const auto& child = (*egraph_)[c];
      children.push_back(&child.data);
      reads.push_back(read_bytes(child));
    }
    return op_work(node, cls.data, Span<const TensorInfo* const>(children.data(), children.size()),
                   profile_, Span<const double>(reads.data(), reads.size()));
  }
  /// The kernel time of `node` in class `cls` (for a `fused` node: its group's time, the body
  /// read through each body class's first member).
  [[nodiscard]] KernelTime time(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    if (node.op() == Op::Fused && !cls.data.weight_only) {
      const FusedGroup g = group(node, cls);
      return scaled(fused_time(g, profile_),
                    profile_.time_scale_of(Op::Fused, false, g.has_contraction, g.has_gather));
    }
    const OpWork w = work(node, cls);
    return scaled(kernel_time(w, profile_), profile_.time_scale_of(node.op(), w.own_form(), false));
  }
  /// The group of a `fused` node.
  [[nodiscard]] FusedGroup group(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    double reads = 0;
    std::vector<Id> inputs;
    std::vector<double> input_bytes;
    for (std::size_t i = 1; i < node.children().size(); ++i) {
      const Id c = egraph_->find(node.children()[i]);
      if (std::find(inputs.begin(), inputs.end(), c) != inputs.end()) continue;
      inputs.push_back(c);
      input_bytes.push_back(read_bytes((*egraph_)[c]));
      reads += input_bytes.back();
    }
    bool has_contraction = false, has_gather = false;
    std::size_t contractions = 0;
    std::vector<bool> contraction_reads(inputs.size(),
                                        false);  // input read directly by a contraction
    const Id root = egraph_->find(node.children()[0]);
    FusedGroup g = fused_group(cls.data, reads, profile_, [&](auto&& f) {
      std::vector<Id> stack{root}, seen;
      while (!stack.empty()) {
        const Id c = stack.back();
        stack.pop_back();
        if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        seen.push_back(c);
        const auto& body = (*egraph_)[c];
        if (body.nodes.empty()) continue;
        const TensorNode& n = egraph_->node(body.nodes[0]);
        if (n.op() == Op::Arg) continue;
        SmallVector<const TensorInfo*, 8> children;
        double materialized = epilogue_operand_bytes(n.op(), body.data, c == root, profile_);
        const bool contraction = is_contraction(n.op());
        has_contraction = has_contraction || contraction;
        contractions += contraction ? 1 : 0;
        has_gather = has_gather ||
                     body_gathers(n.op(), n.op() == Op::Broadcast && n.children().size() == 2 &&
                                              is_arg_class((*egraph_)[n.children()[1]]));
        for (Id child : n.children()) {
          const auto& child_class = (*egraph_)[child];
          children.push_back(&child_class.data);
          if (!child_class.data.symbolic) continue;
          stack.push_back(egraph_->find(child));
          const TensorNode* arg =
              child_class.nodes.empty() ? nullptr : &egraph_->node(child_class.nodes[0]);
          if (arg && arg->op() == Op::Arg) {
            const std::int64_t k =
                (*egraph_)[arg->children()[0]].data.value;  // input k + 1 of the fused node
            if (contraction && k >= 0 && static_cast<std::size_t>(k) + 1 < node.children().size()) {
              const Id input = egraph_->find(node.children()[static_cast<std::size_t>(k) + 1]);
              const auto at = std::find(inputs.begin(), inputs.end(), input);
              if (at != inputs.end())
                contraction_reads[static_cast<std::size_t>(at - inputs.begin())] = true;
            }
          } else {
            materialized += prologue_bytes(n.op(), child_class.data);
          }
        }
        f(n, body.data, Span<const TensorInfo* const>(children.data(), children.size()),
          materialized);
      }
    });
    if (has_contraction && !profile_.fusion_overlap)
      for (std::size_t k = 0; k < inputs.size(); ++k)
        if (!contraction_reads[k]) g.staged_bytes += input_bytes[k];
    g.has_contraction = has_contraction;
    g.contractions = contractions;
    g.has_gather = has_gather;
    return g;
  }
  /// The cost: `time(node, cls).total_us`.
  double operator()(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    return time(node, cls).total_us;
  }
  [[nodiscard]] const DeviceProfile& profile() const noexcept { return profile_; }

 private:
  /// Whether body class `c` is a kernel input (its first member an `arg`).
  [[nodiscard]] bool is_arg_class(const TensorEGraph::EClass& c) const {
    return !c.nodes.empty() && egraph_->node(c.nodes[0]).op() == Op::Arg;
  }
  /// Bytes a consumer reads for `cls`: its size, or the smallest source of a `broadcast` in it.
  double read_bytes(const TensorEGraph::EClass& cls) const {
    return profile_.broadcast_copies ? static_cast<double>(cls.data.bytes())
                                     : class_read_bytes(*egraph_, cls);
  }

  const TensorEGraph* egraph_;
  DeviceProfile profile_;
};

// ----------------------------------------------------------------------------- programs

/// One kernel of a program.
struct KernelReport {
  std::size_t node = 0;  ///< index in the program
  Op op = Op::Num;
  OpWork work;
  KernelTime time;
  /// `kernel_kind`: which `DeviceProfile::time_scale` (and `kind_scatter`) applies.
  std::size_t kind = 0;
};

/// The kernels of one op kind in a program.
struct OpKindTime {
  Op op = Op::Num;
  std::size_t kernels = 0;
  std::size_t compute_bound = 0;
  std::size_t memory_bound = 0;
  double time_us = 0;
  double flops = 0;
  double bytes = 0;
};

/// The time of a program and where it goes.
struct ProgramTime {
  double total_us = 0;
  std::vector<KernelReport> kernels;  ///< every distinct kernel node, in program order
  std::vector<OpKindTime> by_op;  ///< op kinds with kernels, by decreasing time (ties: `Op` order)
};

/// The time of `program` on `profile` with its breakdown: each distinct node once (as
/// `program_cost`), a `broadcast` operand read at its source's size. Throws `ShapeError` for an
/// ill-typed program and `ProfileError` for an invalid profile. O(nodes).
[[nodiscard]] inline ProgramTime program_breakdown(const RecExpr<TensorNode>& program,
                                                   const DeviceProfile& profile) {
  validate(profile);
  const std::vector<TensorInfo> infos = check_program(program);
  std::unordered_map<TensorNode, Id, NodeHash> seen;
  std::vector<Id> canonical(program.size());
  std::vector<double> read_cost(program.size());  // what reading node i costs a consumer
  ProgramTime result;
  std::array<OpKindTime, kNumOps> kinds{};
  std::vector<const TensorInfo*> children;
  std::vector<double> reads;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& original = program[Id(i)];
    const TensorNode node = map_children(original, [&](Id c) { return canonical[c.index()]; });
    auto [it, inserted] = seen.emplace(node, Id(i));
    canonical[i] = it->second;
    read_cost[i] = original.op() == Op::Broadcast && !profile.broadcast_copies
                       ? read_cost[canonical[original.children()[1].index()].index()]
                       : static_cast<double>(infos[i].bytes());
    if (!inserted) continue;
    children.clear();
    reads.clear();
    for (Id c : node.children()) {
      children.push_back(&infos[c.index()]);
      reads.push_back(read_cost[c.index()]);
    }
    OpWork work =
        op_work(original, infos[i], Span<const TensorInfo* const>(children.data(), children.size()),
                profile, Span<const double>(reads.data(), reads.size()));
    KernelTime time;
    std::size_t scale_kind = 0;
    if (original.op() == Op::Fused && !infos[i].weight_only) {
      double bytes_read = 0;
      std::vector<Id> inputs;
      for (std::size_t k = 1; k < node.children().size(); ++k) {
        const Id c = node.children()[k];
        if (std::find(inputs.begin(), inputs.end(), c) != inputs.end()) continue;
        inputs.push_back(c);
        bytes_read += read_cost[c.index()];
      }
      bool has_contraction = false, has_gather = false;
      std::size_t contractions = 0;
      std::vector<bool> contraction_reads(inputs.size(),
                                          false);  // input read directly by a contraction
      FusedGroup group = fused_group(infos[i], bytes_read, profile, [&](auto&& f) {
        std::vector<Id> stack{node.children()[0]}, seen;
        while (!stack.empty()) {
          const Id b = stack.back();
          stack.pop_back();
          if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
          seen.push_back(b);
          const TensorNode& n = program[b];
          if (n.op() == Op::Arg) continue;
          std::vector<const TensorInfo*> body_children;
          double materialized =
              epilogue_operand_bytes(n.op(), infos[b.index()], b == node.children()[0], profile);
          const bool contraction = is_contraction(n.op());
          has_contraction = has_contraction || contraction;
          contractions += contraction ? 1 : 0;
          has_gather = has_gather ||
                       body_gathers(n.op(), n.op() == Op::Broadcast && n.children().size() == 2 &&
                                                program[n.children()[1]].op() == Op::Arg);
          for (Id child : n.children()) {
            body_children.push_back(&infos[child.index()]);
            if (!infos[child.index()].symbolic) continue;
            stack.push_back(canonical[child.index()]);
            if (program[child].op() != Op::Arg) {
              materialized += prologue_bytes(n.op(), infos[child.index()]);
            } else if (contraction) {
              const std::int64_t k = program[program[child].children()[0]].value();  // input k + 1
              if (k >= 0 && static_cast<std::size_t>(k) + 1 < node.children().size()) {
                const auto at = std::find(inputs.begin(), inputs.end(),
                                          node.children()[static_cast<std::size_t>(k) + 1]);
                if (at != inputs.end())
                  contraction_reads[static_cast<std::size_t>(at - inputs.begin())] = true;
              }
            }
          }
          f(n, infos[b.index()],
            Span<const TensorInfo* const>(body_children.data(), body_children.size()),
            materialized);
        }
      });
      if (has_contraction && !profile.fusion_overlap)
        for (std::size_t k = 0; k < inputs.size(); ++k)
          if (!contraction_reads[k]) group.staged_bytes += read_cost[inputs[k].index()];
      group.has_contraction = has_contraction;
      group.contractions = contractions;
      group.has_gather = has_gather;
      scale_kind = kernel_kind(Op::Fused, false, has_contraction, has_gather);
      time = scaled(fused_time(group, profile), profile.time_scale[scale_kind]);
      work = OpWork{};
      work.kernel = time.total_us > 0;
      work.bytes_read = group.bytes_read;
      work.bytes_written = group.bytes_written;
      for (const OpWork& m : group.members) work.flops += m.flops;
      const std::size_t primary = primary_member(group);
      if (primary < group.members.size()) {
        work.dtype = group.members[primary].dtype;
        work.unit = group.members[primary].unit;
      }
    } else {
      scale_kind = kernel_kind(original.op(), work.own_form(), false);
      time = scaled(kernel_time(work, profile), profile.time_scale[scale_kind]);
    }
    if (!work.kernel) continue;
    result.total_us += time.total_us;
    result.kernels.push_back(KernelReport{i, original.op(), work, time, scale_kind});
    OpKindTime& kind = kinds[static_cast<std::size_t>(original.op())];
    kind.op = original.op();
    kind.kernels++;
    (time.bound == Bound::Compute ? kind.compute_bound : kind.memory_bound)++;
    kind.time_us += time.total_us;
    kind.flops += work.flops;
    kind.bytes += work.bytes();
  }
  for (const OpKindTime& k : kinds)
    if (k.kernels > 0) result.by_op.push_back(k);
  std::stable_sort(result.by_op.begin(), result.by_op.end(),
                   [](const OpKindTime& a, const OpKindTime& b) { return a.time_us > b.time_us; });
  return result;
}

/// `profile` as `program` runs on it: `weights_cached` set when the program's weights (each
/// distinct `weight` source once) fit in half of the profile's `cache_bytes`. Throws
/// `ShapeError` for an ill-typed program.
[[nodiscard]] inline DeviceProfile profile_for(DeviceProfile profile,
                                               const RecExpr<TensorNode>& program) {
  const std::vector<TensorInfo> infos = check_program(program);
  std::unordered_set<TensorNode, NodeHash>
      names;  // a weight's name node (a `sym`): each weight once
  double bytes = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& n = program[Id(i)];
    if (n.op() == Op::Weight && names.insert(program[n.children()[0]]).second)
      bytes += static_cast<double>(infos[i].bytes());
  }
  profile.weights_cached = profile.cache_bytes > 0 && bytes <= profile.cache_bytes / 2;
  return profile;
}

/// The time of `program` on `profile` in microseconds (`program_breakdown(...).total_us`).
[[nodiscard]] inline double program_time(const RecExpr<TensorNode>& program,
                                         const DeviceProfile& profile) {
  return program_breakdown(program, profile).total_us;
}

/// The breakdown as a text table: one line per op kind (kernels, how many are compute- and
/// memory-bound, time in microseconds, share of the total), then the total.
[[nodiscard]] inline std::string format_breakdown(const ProgramTime& t) {
  std::string s = fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12} {:>6}\n", "op", "kernels", "compute",
                              "memory", "time (us)", "share");
  for (const OpKindTime& k : t.by_op)
    s += fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12.2f} {:>5.1f}%\n", op_name(k.op), k.kernels,
                     k.compute_bound, k.memory_bound, k.time_us,
                     t.total_us > 0 ? 100 * k.time_us / t.total_us : 0.0);
  s += fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12.2f}\n", "total", t.kernels.size(), "", "",
                   t.total_us);
  return s;
}

/// `t`'s kernels one per line, in program order: the node index, op, bound, work (MFLOP, MB)
/// and the roofline terms (compute, memory, launch and total microseconds), then the total.
/// What XLA's per-HLO cost analysis prints; a `fused` kernel's line is the whole group.
[[nodiscard]] inline std::string format_kernels(const ProgramTime& t) {
  std::string s =
      fmt::format("{:>6} {:<14} {:<7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}\n", "node", "op",
                  "bound", "MFLOP", "MB", "compute", "memory", "launch", "time (us)");
  for (const KernelReport& k : t.kernels)
    s += fmt::format(
        "{:>6} {:<14} {:<7} {:>10.3f} {:>10.3f} {:>10.2f} {:>10.2f} {:>8.2f} {:>10.2f}\n", k.node,
        op_name(k.op), bound_name(k.time.bound), k.work.flops / 1e6, k.work.bytes_moved() / 1e6,
        k.time.compute_us, k.time.memory_us, k.time.launch_us, k.time.total_us);
  s += fmt::format("{:>6} {:<14} {:<7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10.2f}\n", "", "total",
                   "", "", "", "", "", "", t.total_us);
  return s;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_COST_MODEL_H
