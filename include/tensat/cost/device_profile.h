// DeviceProfile: what the roofline cost model knows about a machine (peaks per dtype and unit,
// memory bandwidth, launch overhead, latency, derates, transcendental weights), its op-kind
// scales and error factors, and `validate`. JSON: profile_json.h; the built-in profiles:
// profiles.h.
#ifndef TENSAT_COST_DEVICE_PROFILE_H
#define TENSAT_COST_DEVICE_PROFILE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/tensor/op.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The execution unit an operator runs on: the vector/SIMD unit (CUDA cores, AVX) or a matrix
/// unit (tensor cores, AMX). Matmul and conv2d use the matrix unit when the profile has one for
/// their dtype; everything else uses the vector unit.
enum class Unit : std::uint8_t { Vector = 0, Matrix = 1 };

[[nodiscard]] constexpr std::string_view unit_name(Unit u) noexcept {
  return u == Unit::Vector ? "vector" : "matrix";
}

/// A device profile that cannot be used: malformed JSON (`offset()` is the 0-based byte offset of
/// the syntax error), a missing, unknown, negative or non-finite field (`field()` is its JSON path,
/// e.g. "peak_flops.matrix.bf16"), an unknown built-in name, or an unreadable file.
class ProfileError : public Error {
 public:
  ProfileError(std::string field, std::string reason,
               std::optional<std::size_t> offset = std::nullopt)
      : Error(fmt::format(
            "device profile: {}{}{}", offset ? fmt::format("offset {}: ", *offset) : std::string(),
            field.empty() ? std::string() : fmt::format("field '{}': ", field), reason)),
        field_(std::move(field)),
        reason_(std::move(reason)),
        offset_(offset) {}

  /// The JSON path of the offending field ("" for syntax and file errors).
  [[nodiscard]] const std::string& field() const noexcept { return field_; }
  /// What is wrong, without the position.
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// The byte offset of a JSON syntax error.
  [[nodiscard]] std::optional<std::size_t> offset() const noexcept { return offset_; }

 private:
  std::string field_;
  std::string reason_;
  std::optional<std::size_t> offset_;
};

/// Relative cost of one element of an elementwise operation, in "add" units: an operator
/// computing `n` elements counts `n * weight` flops. Defaults: XLA's measured H100 (sm_90) f32
/// clock cycles per element (`hlo_op_profiles_data.h`), divided by add's 7: exp 79, divide 19,
/// rsqrt 75, tanh 467. `sigmoid` is 1 / (1 + exp(-x)) = exp + add + divide = (79+7+19)/7 = 15;
/// `gelu` is the tanh approximation 0.5·x·(1 + tanh(√(2/π)(x + 0.044715·x³))) = tanh + 6
/// multiplies + 2 adds = (467 + 8·7)/7 ≈ 74.7. relu is a max (1).
struct OpWeights {
  double add = 1.0;              ///< add, subtract (ewadd, sums in reductions)
  double mul = 1.0;              ///< multiply (ewmul, smul, scaling)
  double max = 1.0;              ///< max (relu, reduce_max, poolmax)
  double div = 19.0 / 7.0;       ///< divide
  double exp = 79.0 / 7.0;       ///< exp (≈ 11.3)
  double tanh = 467.0 / 7.0;     ///< tanh (≈ 66.7)
  double sigmoid = 105.0 / 7.0;  ///< exp + add + divide (= 15)
  double gelu = 523.0 / 7.0;     ///< tanh + 8 simple ops (≈ 74.7)
  double rsqrt = 75.0 / 7.0;     ///< rsqrt (≈ 10.7), in batchnorm and layernorm

  friend bool operator==(const OpWeights& a, const OpWeights& b) noexcept {
    return a.add == b.add && a.mul == b.mul && a.max == b.max && a.div == b.div && a.exp == b.exp &&
           a.tanh == b.tanh && a.sigmoid == b.sigmoid && a.gelu == b.gelu && a.rsqrt == b.rsqrt;
  }
  friend bool operator!=(const OpWeights& a, const OpWeights& b) noexcept { return !(a == b); }
};

/// The kinds of kernel whose predicted times share an error (`DeviceProfile::uncertainty`):
/// products and convolutions with a product (`Contraction`), kernels sliding a window without one
/// (depthwise convolutions, pooling: `Window`), elementwise ops and batchnorm (`Elementwise`),
/// copies and layout changes (`Movement`: transpose, concat, split, slice, pad, resize,
/// relayout, ...), reductions and normalizations (`Reduction`: softmax, layernorm, reduce_*), and
/// the fusion phase's kernels (`Fused`).
enum class CostClass : std::uint8_t {
  Contraction,
  Window,
  Elementwise,
  Movement,
  Reduction,
  Fused
};

inline constexpr std::size_t kNumCostClasses = 6;

/// The JSON key of each `CostClass`, in enum order.
inline constexpr std::array<std::string_view, kNumCostClasses> kCostClassNames{
    "contraction", "window", "elementwise", "movement", "reduction", "fused"};

[[nodiscard]] constexpr std::string_view cost_class_name(CostClass c) noexcept {
  return kCostClassNames[static_cast<std::size_t>(c)];
}

/// Indices of `DeviceProfile::time_scale`: one per `Op` (the op's index), then a depthwise
/// convolution (computed at the window rate), a fused kernel with a contraction in it, one
/// without whose body reads through a data-movement op (pad, transpose, slice, concat,
/// broadcast: a gather), a matrix-vector product (a matmul of one row priced on the
/// profile's `gemv_bandwidth` curve), and a fused convolution with per-channel post-ops run as
/// the product is written (`conv_post_ops`, on a profile without `fusion_overlap`);
/// `Op::Fused`'s own index is a plain elementwise fused kernel.
inline constexpr std::size_t kDepthwiseScale = kNumOps;
inline constexpr std::size_t kFusedContractionScale = kNumOps + 1;
inline constexpr std::size_t kFusedGatherScale = kNumOps + 2;
inline constexpr std::size_t kGemvScale = kNumOps + 3;
inline constexpr std::size_t kConvPostOpsScale = kNumOps + 4;
inline constexpr std::size_t kNumTimeScales = kNumOps + 5;

/// The JSON key of a `time_scale` index: the op's name, "depthwise_conv2d", "fused_contraction",
/// "fused_gather", "gemv" or "conv_post_ops".
[[nodiscard]] constexpr std::string_view time_scale_name(std::size_t i) noexcept {
  return i == kDepthwiseScale          ? std::string_view("depthwise_conv2d")
         : i == kFusedContractionScale ? std::string_view("fused_contraction")
         : i == kFusedGatherScale      ? std::string_view("fused_gather")
         : i == kGemvScale             ? std::string_view("gemv")
         : i == kConvPostOpsScale      ? std::string_view("conv_post_ops")
                                       : op_name(static_cast<Op>(i));
}

/// The `time_scale` index (the kind) of a kernel of `op`: `own_form` for a convolution without
/// a product (`OpWork::depthwise`) or a matrix-vector product (`OpWork::gemv`),
/// `with_contraction` / `with_gather` for a fused kernel with a product in it / whose body reads
/// through a data-movement op.
[[nodiscard]] constexpr std::size_t kernel_kind(Op op, bool own_form, bool with_contraction,
                                                bool with_gather = false) noexcept {
  if (op == Op::Conv2d && own_form) return kDepthwiseScale;
  if (op == Op::MatMul && own_form) return kGemvScale;
  if (op == Op::Fused && with_contraction) return kFusedContractionScale;
  if (op == Op::Fused && with_gather) return kFusedGatherScale;
  return static_cast<std::size_t>(op);
}

/// What the roofline model knows about a machine. Units are SI: FLOP/s, bytes/s, bytes, seconds.
/// Peaks are dense (datasheets' "with sparsity" figures are twice these).
struct DeviceProfile {
  std::string name;         ///< "h100-sxm", "host", ...
  std::string kind;         ///< "gpu" or "cpu" (informational)
  std::string description;  ///< free text: the part, where the numbers come from
  /// Peak FLOP/s of the vector unit, indexed by `DType` (f32, f16, bf16). Must be positive.
  std::array<double, 3> vector_flops{};
  /// Peak FLOP/s of the matrix unit, indexed by `DType`; 0 = no matrix unit for that dtype, and
  /// matmul/conv2d of that dtype run on the vector unit. TF32 is not modelled: the built-in GPU
  /// profiles leave `matrix_flops[f32]` at 0, so f32 matmul uses the vector FP32 peak; set it
  /// (494.7e12 on H100) to model TF32 tensor cores.
  std::array<double, 3> matrix_flops{};
  double mem_bandwidth = 0;    ///< DRAM/HBM bytes/s. Must be positive.
  double cache_bytes = 0;      ///< last-level cache (L2 on GPUs); informational, not in the formula
  double launch_overhead = 0;  ///< t_launch, seconds per kernel (XLA: 1 us on GPU; 0 on CPU)
  double mem_latency = 0;      ///< lat_m, seconds added to every kernel's memory time
  double eta_c = 1.0;          ///< compute efficiency derate, (0, 1]
  double eta_m = 1.0;          ///< memory efficiency derate, (0, 1]
  double alpha = 1.0;          ///< compute/memory overlap, [0, 1]: 1 = max (roofline), 0 = sum
  OpWeights weights;           ///< transcendental weights
  /// Whether a fused kernel's prologue and epilogue memory traffic overlaps its contraction's
  /// compute. true (GPUs): thread blocks interleave them. false (one CPU thread, as the reference
  /// executor runs a fused kernel): the operands of the non-contraction ops are read in phases
  /// of their own, before the product (a prologue) or after each of its parts (an epilogue), and
  /// are charged as staged bytes (`FusedGroup::staged_bytes`). JSON "fusion_overlap", optional
  /// (true when absent).
  bool fusion_overlap = true;
  /// Whether a `split` copies its two parts (the reference executors, whose tensors own their
  /// storage) rather than pointing into its input (TASO's runtime: a free view). true: a split
  /// reads its input and writes both parts. JSON "split_copies", optional (false when absent).
  bool split_copies = false;
  /// Whether a fused kernel's product and its elementwise region are launches of their own (the
  /// CUDA executor: cuBLAS's or cuDNN's call, then one kernel over the region) rather than one
  /// kernel (a code generator's, or the reference executor's one node). true: one launch more for
  /// each product beyond the first and one for the region. JSON "epilogue_kernel", optional
  /// (false when absent).
  bool epilogue_kernel = false;
  /// Seconds a fused kernel spends per body term beyond its arithmetic and its one launch (an
  /// interpreter's setup and per-chunk dispatch of each term: the reference executor's
  /// `FusedLoop`); 0 where a code generator compiles the body (the GPUs). JSON
  /// "fused_term_overhead", optional (0 when absent).
  double fused_term_overhead = 0;
  /// Whether a `broadcast` is materialized (the reference executor: an unfused broadcast writes
  /// the whole broadcast shape, and its consumers read that) rather than a stride-0 view whose
  /// consumers read the small source (a library's broadcasting kernels). Inside a fused kernel
  /// it is a view either way. JSON "broadcast_copies", optional (false when absent).
  bool broadcast_copies = false;
  /// Whether the device's convolutions run directly (the reference CPU executor: im2col and a
  /// product), so that `optimize` offers the Winograd rule (`winograd_rules()`), which turns a
  /// 3x3 stride-1 convolution into `wino_conv2d`. false where the convolution library chooses
  /// Winograd itself (cuDNN). JSON "winograd", optional (false when absent).
  bool winograd = false;
  /// Whether the runtime that runs the optimized program fuses kernels itself (onnxruntime's
  /// graph optimizer: Conv+BN+activation, MatMul+Add, LayerNorm, GELU): `optimize` then skips
  /// its fusion phase and keeps to the rule families that leave those patterns as they were
  /// (`kRuntimeFusionFamilies`, optimize.h). JSON "runtime_fusion", optional (false when absent).
  bool runtime_fusion = false;
  /// A matrix-vector product (`matmul` whose result has one row, [1, K] x [K, N]) streams its
  /// matrix at gemv_bandwidth · N / (N + gemv_half_width) bytes/s instead of `mem_bandwidth`:
  /// measured on a CPU, the rate grows with the output width N (each of the K rows of the matrix
  /// costs a fixed startup besides its bytes). 0: not modelled. JSON "gemv_bandwidth" and
  /// "gemv_half_width", optional (0 when absent).
  double gemv_bandwidth = 0;
  double gemv_half_width =
      0;  ///< N at which a matrix-vector product streams at half gemv_bandwidth
  /// A kernel's first `cache_resident_bytes` of memory traffic (R + W) move at `cache_bandwidth`
  /// bytes/s, the rest at `mem_bandwidth`: on a CPU a kernel reads what its producer has just
  /// written, and as much of it as the cache still holds comes from the cache
  /// (device_profile.md, "Measured rates"). 0: every byte at `mem_bandwidth`.
  /// JSON "cache_bandwidth" and "cache_resident_bytes", optional (0 when absent).
  double cache_bandwidth = 0;
  double cache_resident_bytes = 0;
  /// FLOP/s of the windowed kernels that have no product to lower to: depthwise convolutions
  /// (one input channel per group) and pooling, which slide a small window over each channel
  /// with no reduction over channels, so a GEMM's register and cache blocking does not apply.
  /// On a CPU these are direct loops well below the GEMM rate (device_profile.md, "Measured
  /// rates"). 0: the vector peak. JSON "window_flops", optional (0 when absent).
  double window_flops = 0;
  /// Seconds a depthwise convolution spends on each plane (an image's channel) beyond its
  /// arithmetic: the reference executor lays each input channel out padded and computes rows
  /// (W_o + k_w - 1) / s_w wide, so a small plane (7x7 in MobileNet's last stages) runs at a
  /// fraction of the rate a 56x56 one does. The cost model charges
  /// it per plane and the rows' extra width (`op_work`). 0: not modelled. JSON
  /// "window_plane_overhead", optional (0 when absent).
  double window_plane_overhead = 0;
  /// A grouped convolution's product runs per group as a GEMM whose rows are the group's output
  /// channels (Og = C_out / groups); with few rows it cannot fill the register blocks of the GEMM
  /// kernel, and runs at peak · Og / (Og + gemm_half_rows) (`gemm_rows_rate`), the curve the
  /// reference executor's grouped products follow (device_profile.md, "Measured rates"). It
  /// prices ResNeXt's groups, and a depthwise convolution merged into groups of two (TASO's
  /// merge_gconv), as they run. A convolution of one group keeps the peak: its rows are its
  /// output channels, and pricing them on the curve makes every convolution sharing an input
  /// worth merging into one wider product and a split, which runs no faster on this executor
  /// (the split copies its parts). 0: not modelled. JSON "gemm_half_rows", optional (0 when
  /// absent).
  double gemm_half_rows = 0;
  /// Seconds a grouped convolution (not a depthwise one) spends on each group beyond its
  /// arithmetic: the reference executor runs one im2col and one GEMM call a group, so many small
  /// groups on a small map (a depthwise convolution merged into groups of two on a 4x4 map) cost
  /// what the calls cost, twice the rows curve's price. The cost model charges it per image and
  /// group (`op_work`). 0: not modelled. JSON "group_overhead", optional (0 when absent).
  double group_overhead = 0;
  /// A contraction (matmul, conv2d, conv_transpose; not a depthwise convolution) of F flops
  /// computes at peak · F / (F + gemm_half_flops): a small problem cannot fill the device (a
  /// batch-1 convolution leaves most of a GPU's multiprocessors idle, and a library call has a
  /// fixed cost of its own), so its time is (F + gemm_half_flops) / peak, a fixed cost of
  /// gemm_half_flops / peak seconds beyond the roofline's. Fitted by `calibrate_cuda` from timed
  /// products and convolutions of several sizes (`fit_contraction_curve`). 0: not modelled.
  /// JSON "gemm_half_flops", optional (0 when absent).
  double gemm_half_flops = 0;
  /// FLOP/s of a convolution of one group whose window is larger than 1x1, when not its unit's
  /// peak, and the flops at which such a convolution reaches half of it (the curve of
  /// `gemm_half_flops`, for these convolutions alone). A GPU's convolution library runs them with
  /// kernels of their own (implicit GEMM, Winograd, FFT), far from its GEMM's rate at batch 1;
  /// 1x1 convolutions are products and stay on the GEMM's curve. Fitted by `calibrate_cuda`.
  /// 0: the unit's peak and `gemm_half_flops`. JSON "conv_flops" and "conv_half_flops",
  /// optional (0 when absent).
  double conv_flops = 0;
  double conv_half_flops = 0;
  /// The layout the device's convolution kernels read and write natively, indexed by `DType`.
  /// A conv2d whose input is stored otherwise is run as the libraries run it: its input
  /// transposed into the native layout and its result back, in kernels of their own
  /// (`OpWork::relayout_bytes`). Tensor-core convolutions (cuDNN, f16/bf16) and oneDNN's are
  /// channels_last; NVIDIA's "Convolutional Layers User's Guide" recommends NHWC to avoid the
  /// transposes, and XLA's CPU backend makes the feature dimension minor-most for its Eigen
  /// convolutions. JSON "conv_layout" {"f32": ..., "f16": ..., "bf16": ...}, optional (all
  /// contiguous when absent).
  std::array<Layout, 3> conv_layout{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous};
  /// The model's own error, by `CostClass`, as two factors (each >= 1): `systematic`, one factor
  /// common to every kernel of the class (the class priced too high or too low on the whole:
  /// the geometric mean of calibration's residuals), and `scatter`, each kernel's own error
  /// beyond it (the residuals' spread about that mean). A kernel predicted at t takes between
  /// t / (s · k) and t · s · k. Measured by `calibrate_host` from probe kernels; `optimize` keeps
  /// only the changes whose gain survives them (`gain_band`, `OptimizeOptions::do_no_harm`).
  /// 1: exact (what a datasheet profile claims). JSON "uncertainty" {"systematic": {"contraction":
  /// s, ...}, "scatter": {...}}, optional (every factor 1 when absent).
  std::array<double, kNumCostClasses> systematic_error{1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  std::array<double, kNumCostClasses> scatter_error{1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  /// A kind's own scatter (indexed like `time_scale`: `kernel_kind`), where calibration probed
  /// it: the class's scatter is its worst kind's, and a kind the model prices well (products)
  /// should not pay for one it prices badly (small-map Winograd). 0: not probed, the class's
  /// `scatter_error`. JSON "uncertainty" {"kind_scatter": {"matmul": k, ...}}, optional.
  std::array<double, kNumTimeScales> kind_scatter{};
  /// Measured corrections: a kernel's roofline time is multiplied by the factor of its kind
  /// (indexed as `kDepthwiseScale` and `kFusedContractionScale` say). The roofline counts
  /// flops and bytes; how a particular runtime computes an op can be far from that count (the
  /// reference executor's softmax loops over each row three times in scalar code, its sigmoid
  /// calls std::exp per element): `measure_uncertainty` sets the factor of each kind whose probe
  /// kernels agree on one, so that the model prices ops as the runtime runs them. 1: the
  /// roofline alone. JSON "time_scale" {"softmax": 8.8, ...}, optional (1 for any kind absent).
  std::array<double, kNumTimeScales> time_scale = [] {
    std::array<double, kNumTimeScales> ones{};
    ones.fill(1.0);
    return ones;
  }();

  /// Whether the program being priced finds its weights in the cache (`profile_for` sets it when
  /// they fit in half of `cache_bytes`: after the first run, each run finds them where the last
  /// one left them). Then a matrix-vector product reads its matrix through the cache tiers
  /// (`memory_seconds`) instead of streaming it at `gemv_rate`, which is measured from memory.
  /// A property of a program on the device, not of the device: not in JSON, not compared.
  bool weights_cached = false;

  /// The factor of a kernel of `op` (`time_scale`): `windowed` for a convolution computed at the
  /// window rate, `with_contraction` for a fused kernel with a product in it, `with_gather` for
  /// one whose body reads through a data-movement op.
  [[nodiscard]] double time_scale_of(Op op, bool own_form, bool with_contraction,
                                     bool with_gather = false) const noexcept {
    return time_scale[kernel_kind(op, own_form, with_contraction, with_gather)];
  }

  /// The scatter of a kernel of class `c` and kind `kind`: the kind's own if probed, else the
  /// class's.
  [[nodiscard]] double scatter_of(CostClass c, std::size_t kind) const noexcept {
    return kind < kNumTimeScales && kind_scatter[kind] >= 1.0
               ? kind_scatter[kind]
               : scatter_error[static_cast<std::size_t>(c)];
  }
  /// Both error factors of a kernel of class `c` (and kind `kind`), multiplied: the bound on one
  /// kernel's error.
  [[nodiscard]] double uncertainty_of(CostClass c,
                                      std::size_t kind = kNumTimeScales) const noexcept {
    return systematic_error[static_cast<std::size_t>(c)] * scatter_of(c, kind);
  }
  /// Whether some class has an error factor above 1.
  [[nodiscard]] bool knows_its_error() const noexcept {
    const auto above = [](double f) { return f > 1.0; };
    return std::any_of(systematic_error.begin(), systematic_error.end(), above) ||
           std::any_of(scatter_error.begin(), scatter_error.end(), above);
  }
  /// The layout conv2d of `dtype` reads natively (`conv_layout`).
  [[nodiscard]] Layout native_conv_layout(DType dtype) const noexcept {
    return conv_layout[static_cast<std::size_t>(dtype)];
  }
  /// The unit matmul/conv2d of `dtype` run on: the matrix unit if the profile has one for it.
  [[nodiscard]] Unit gemm_unit(DType dtype) const noexcept {
    return matrix_flops[static_cast<std::size_t>(dtype)] > 0 ? Unit::Matrix : Unit::Vector;
  }
  /// Peak FLOP/s of `unit` for `dtype` (the vector peak when the matrix unit is absent).
  [[nodiscard]] double peak(DType dtype, Unit unit) const noexcept {
    const auto i = static_cast<std::size_t>(dtype);
    return unit == Unit::Matrix && matrix_flops[i] > 0 ? matrix_flops[i] : vector_flops[i];
  }
  /// FLOP/s of a windowed kernel (depthwise convolution, pooling) of `dtype`: `window_flops`, or
  /// the vector peak when that is 0.
  [[nodiscard]] double window_rate(DType dtype) const noexcept {
    return window_flops > 0 ? window_flops : vector_flops[static_cast<std::size_t>(dtype)];
  }
  /// FLOP/s of a convolution's per-group product of `rows` output channels on `unit`:
  /// peak · rows / (rows + gemm_half_rows), the peak when gemm_half_rows is 0.
  [[nodiscard]] double gemm_rows_rate(DType dtype, Unit unit, double rows) const noexcept {
    const double p = peak(dtype, unit);
    return gemm_half_rows > 0 && rows > 0 ? p * rows / (rows + gemm_half_rows) : p;
  }
  /// The fraction of its rate a product reaches with `columns` columns (a convolution's output
  /// positions per image, a Winograd block's tiles): columns / (columns + gemm_half_rows), the
  /// rows curve on the other side, since the GEMM kernel's register blocks and packing are
  /// short of work either way (small planes run well below the peak). 1 when gemm_half_rows is 0,
  /// and for one column: a matrix-vector product, which runs without the GEMM kernel.
  [[nodiscard]] double gemm_columns_fill(double columns) const noexcept {
    return gemm_half_rows > 0 && columns > 1 ? columns / (columns + gemm_half_rows) : 1.0;
  }
  /// Whether the cost model prices a convolution's columns on that curve: a profile with
  /// gemm_half_rows that does not price small contractions by their flops instead
  /// (`gemm_half_flops`, `conv_flops`: a GPU's calibration, whose library is no CPU GEMM kernel).
  [[nodiscard]] bool columns_curve() const noexcept {
    return gemm_half_rows > 0 && gemm_half_flops == 0 && conv_flops == 0;
  }
  /// The fraction of its rate a contraction of `flops` reaches: flops / (flops + gemm_half_flops),
  /// 1 when gemm_half_flops is 0.
  [[nodiscard]] double contraction_fill(double flops) const noexcept {
    return gemm_half_flops > 0 && flops > 0 ? flops / (flops + gemm_half_flops) : 1.0;
  }
  /// The same for a windowed convolution on its own curve (`conv_flops` set): flops / (flops +
  /// conv_half_flops); `contraction_fill` when `conv_flops` is 0.
  [[nodiscard]] double convolution_fill(double flops) const noexcept {
    if (conv_flops <= 0) return contraction_fill(flops);
    return conv_half_flops > 0 && flops > 0 ? flops / (flops + conv_half_flops) : 1.0;
  }
  /// Bytes/s at which a matrix-vector product with an output of `width` elements streams its
  /// matrix: gemv_bandwidth · width / (width + gemv_half_width), or `mem_bandwidth` when
  /// gemv_bandwidth is 0.
  [[nodiscard]] double gemv_rate(double width) const noexcept {
    return gemv_bandwidth > 0 ? gemv_bandwidth * width / (width + gemv_half_width) : mem_bandwidth;
  }
  /// Seconds to move `bytes` of a kernel's traffic (before `eta_m`): the first
  /// `cache_resident_bytes` at `cache_bandwidth`, the rest at `mem_bandwidth`; all at
  /// `mem_bandwidth` when the cache tier is not modelled (either field 0).
  [[nodiscard]] double memory_seconds(double bytes) const noexcept {
    if (cache_bandwidth <= 0 || cache_resident_bytes <= 0) return bytes / mem_bandwidth;
    const double cached = std::min(bytes, cache_resident_bytes);
    return cached / cache_bandwidth + (bytes - cached) / mem_bandwidth;
  }
  /// Ridge point in FLOP per byte, P·eta_c / (BW·eta_m): kernels with a higher arithmetic
  /// intensity are compute-bound (with lat_m = 0).
  [[nodiscard]] double ridge(DType dtype, Unit unit) const noexcept {
    return peak(dtype, unit) * eta_c / (mem_bandwidth * eta_m);
  }

  friend bool operator==(const DeviceProfile& a, const DeviceProfile& b) noexcept {
    return a.name == b.name && a.kind == b.kind && a.description == b.description &&
           a.vector_flops == b.vector_flops && a.matrix_flops == b.matrix_flops &&
           a.mem_bandwidth == b.mem_bandwidth && a.cache_bytes == b.cache_bytes &&
           a.launch_overhead == b.launch_overhead && a.mem_latency == b.mem_latency &&
           a.eta_c == b.eta_c && a.eta_m == b.eta_m && a.alpha == b.alpha &&
           a.weights == b.weights && a.fusion_overlap == b.fusion_overlap &&
           a.split_copies == b.split_copies && a.epilogue_kernel == b.epilogue_kernel &&
           a.fused_term_overhead == b.fused_term_overhead &&
           a.broadcast_copies == b.broadcast_copies && a.winograd == b.winograd &&
           a.runtime_fusion == b.runtime_fusion && a.gemv_bandwidth == b.gemv_bandwidth &&
           a.gemv_half_width == b.gemv_half_width && a.cache_bandwidth == b.cache_bandwidth &&
           a.cache_resident_bytes == b.cache_resident_bytes && a.window_flops == b.window_flops &&
           a.window_plane_overhead == b.window_plane_overhead &&
           a.gemm_half_rows == b.gemm_half_rows && a.group_overhead == b.group_overhead &&
           a.gemm_half_flops == b.gemm_half_flops && a.conv_flops == b.conv_flops &&
           a.conv_half_flops == b.conv_half_flops && a.conv_layout == b.conv_layout &&
           a.systematic_error == b.systematic_error && a.scatter_error == b.scatter_error &&
           a.kind_scatter == b.kind_scatter && a.time_scale == b.time_scale;
  }
  friend bool operator!=(const DeviceProfile& a, const DeviceProfile& b) noexcept {
    return !(a == b);
  }
};

/// Checks one number of a profile (or of measurements a profile is fitted from): finite, not
/// negative, not 0 when `positive`, at most `max`. Throws `ProfileError` naming `field`.
inline void check_profile_number(const std::string& field, double v, bool positive,
                                 double max = HUGE_VAL) {
  if (!std::isfinite(v))
    throw ProfileError(field, fmt::format("must be a finite number, got {}", v));
  if (v < 0) throw ProfileError(field, fmt::format("must not be negative, got {}", v));
  if (positive && v == 0) throw ProfileError(field, "must be positive, got 0");
  if (v > max) throw ProfileError(field, fmt::format("must be at most {}, got {}", max, v));
}

namespace detail {

inline constexpr std::array<std::string_view, 3> kProfileDtypes{"f32", "f16", "bf16"};

/// The weights by JSON key, in the order they are written.
template <class W, class F>
void for_each_weight(W& w, F&& f) {
  f("add", w.add);
  f("mul", w.mul);
  f("max", w.max);
  f("div", w.div);
  f("exp", w.exp);
  f("tanh", w.tanh);
  f("sigmoid", w.sigmoid);
  f("gelu", w.gelu);
  f("rsqrt", w.rsqrt);
}

}  // namespace detail

/// Checks that `p` is usable: vector peaks and bandwidth positive, matrix peaks, cache, launch,
/// latency and weights non-negative, everything finite, eta in (0, 1], alpha in [0, 1], a name.
/// Throws `ProfileError` naming the field (with its JSON path).
inline void validate(const DeviceProfile& p) {
  if (p.name.empty()) throw ProfileError("name", "must not be empty");
  for (std::size_t i = 0; i < 3; ++i) {
    check_profile_number(fmt::format("peak_flops.vector.{}", detail::kProfileDtypes[i]),
                         p.vector_flops[i], true);
    check_profile_number(fmt::format("peak_flops.matrix.{}", detail::kProfileDtypes[i]),
                         p.matrix_flops[i], false);
  }
  check_profile_number("mem_bandwidth", p.mem_bandwidth, true);
  check_profile_number("cache_bytes", p.cache_bytes, false);
  check_profile_number("launch_overhead", p.launch_overhead, false);
  check_profile_number("mem_latency", p.mem_latency, false);
  check_profile_number("eta_c", p.eta_c, true, 1.0);
  check_profile_number("eta_m", p.eta_m, true, 1.0);
  check_profile_number("alpha", p.alpha, false, 1.0);
  check_profile_number("gemv_bandwidth", p.gemv_bandwidth, false);
  check_profile_number("gemv_half_width", p.gemv_half_width, false);
  check_profile_number("cache_bandwidth", p.cache_bandwidth, false);
  check_profile_number("cache_resident_bytes", p.cache_resident_bytes, false);
  check_profile_number("window_flops", p.window_flops, false);
  check_profile_number("window_plane_overhead", p.window_plane_overhead, false);
  check_profile_number("gemm_half_rows", p.gemm_half_rows, false);
  check_profile_number("group_overhead", p.group_overhead, false);
  check_profile_number("gemm_half_flops", p.gemm_half_flops, false);
  check_profile_number("conv_flops", p.conv_flops, false);
  check_profile_number("conv_half_flops", p.conv_half_flops, false);
  check_profile_number("fused_term_overhead", p.fused_term_overhead, false);
  detail::for_each_weight(p.weights, [](std::string_view key, double v) {
    check_profile_number(fmt::format("op_weights.{}", key), v, false);
  });
  for (std::size_t i = 0; i < kNumTimeScales; ++i) {
    check_profile_number(fmt::format("time_scale.{}", time_scale_name(i)), p.time_scale[i], true);
    const std::string field = fmt::format("uncertainty.kind_scatter.{}", time_scale_name(i));
    check_profile_number(field, p.kind_scatter[i], false);
    if (p.kind_scatter[i] != 0 && p.kind_scatter[i] < 1.0)
      throw ProfileError(
          field, fmt::format("must be 0 (not probed) or at least 1, got {}", p.kind_scatter[i]));
  }
  for (const auto& [kind, factors] :
       {std::pair{"systematic", &p.systematic_error}, std::pair{"scatter", &p.scatter_error}})
    for (std::size_t i = 0; i < kNumCostClasses; ++i) {
      const std::string field = fmt::format("uncertainty.{}.{}", kind, kCostClassNames[i]);
      const double f = (*factors)[i];
      check_profile_number(field, f, true);
      if (f < 1.0) throw ProfileError(field, fmt::format("must be at least 1, got {}", f));
    }
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_DEVICE_PROFILE_H
