// DeviceProfile: what the roofline cost model knows about a machine (peaks per dtype and unit,
// memory bandwidth, launch overhead, latency, derates, transcendental weights); the built-in
// profiles with their sources, and JSON load/save.
#ifndef TENSAT_COST_DEVICE_PROFILE_H
#define TENSAT_COST_DEVICE_PROFILE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tensat/core/error.h"
#include "tensat/io/file.h"
#include "tensat/io/json.h"
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
/// broadcast: a gather), and a matrix-vector product (a matmul of one row priced on the
/// profile's `gemv_bandwidth` curve); `Op::Fused`'s own index is a plain elementwise fused kernel.
inline constexpr std::size_t kDepthwiseScale = kNumOps;
inline constexpr std::size_t kFusedContractionScale = kNumOps + 1;
inline constexpr std::size_t kFusedGatherScale = kNumOps + 2;
inline constexpr std::size_t kGemvScale = kNumOps + 3;
inline constexpr std::size_t kNumTimeScales = kNumOps + 4;

/// The JSON key of a `time_scale` index: the op's name, "depthwise_conv2d", "fused_contraction",
/// "fused_gather" or "gemv".
[[nodiscard]] constexpr std::string_view time_scale_name(std::size_t i) noexcept {
  return i == kDepthwiseScale          ? std::string_view("depthwise_conv2d")
         : i == kFusedContractionScale ? std::string_view("fused_contraction")
         : i == kFusedGatherScale      ? std::string_view("fused_gather")
         : i == kGemvScale             ? std::string_view("gemv")
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
  /// written, and as much of it as the cache still holds comes from the cache (measured on the
  /// development VM: an add of two 250 KB arrays ran at 45 GB/s, of 1 MB ones at 22 GB/s, of
  /// 3 MB ones at 15 GB/s, the triad over 256 MiB at 13.7). 0: every byte at `mem_bandwidth`.
  /// JSON "cache_bandwidth" and "cache_resident_bytes", optional (0 when absent).
  double cache_bandwidth = 0;
  double cache_resident_bytes = 0;
  /// FLOP/s of the windowed kernels that have no product to lower to: depthwise convolutions
  /// (one input channel per group) and pooling, which slide a small window over each channel
  /// with no reduction over channels, so a GEMM's register and cache blocking does not apply.
  /// On a CPU these are direct loops well below the GEMM rate (the reference executor's
  /// depthwise 3x3 convolution: about 19 GFLOP/s where its GEMM reaches 38 on the development
  /// VM). 0: the vector peak. JSON "window_flops", optional (0 when absent).
  double window_flops = 0;
  /// Seconds a depthwise convolution spends on each plane (an image's channel) beyond its
  /// arithmetic: the reference executor lays each input channel out padded and computes rows
  /// (W_o + k_w - 1) / s_w wide, so a small plane (7x7 in MobileNet's last stages) runs at a
  /// fraction of the rate a 56x56 one does (3x its prediction before). The cost model charges
  /// it per plane and the rows' extra width (`op_work`). 0: not modelled. JSON
  /// "window_plane_overhead", optional (0 when absent).
  double window_plane_overhead = 0;
  /// A grouped convolution's product runs per group as a GEMM whose rows are the group's output
  /// channels (Og = C_out / groups); with few rows it cannot fill the register blocks of the GEMM
  /// kernel, and runs at peak · Og / (Og + gemm_half_rows) (`gemm_rows_rate`). Measured on the
  /// reference executor (Eigen, one thread, 3x3 and 1x1 kernels): 6-10 GFLOP/s at Og = 2, 12-15
  /// at 4, 17-22 at 8, 23-28 at 16, 28-35 at 32, where its 1024-row GEMM reaches 40: the curve
  /// with gemm_half_rows about 8. It prices ResNeXt's 32 groups of 4-32 channels, and a depthwise
  /// convolution merged into groups of two (TASO's merge_gconv), as they run. A convolution of
  /// one group keeps the peak: its rows are its output channels (32-512 in the models here,
  /// 80-98 % of the peak on the curve), and pricing them on the curve makes every
  /// convolution sharing an input worth merging into one wider product and a split, which
  /// measured no faster on this executor (the split copies its parts). 0: not modelled. JSON
  /// "gemm_half_rows", optional (0 when absent).
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
  /// short of work either way (measured on the reference executor: 3x3 convolutions on 2x2
  /// planes ran at 0.3-0.4 of the peak, on 4x4 planes 0.7). 1 when gemm_half_rows is 0, and
  /// for one column: a matrix-vector product, which runs without the GEMM kernel.
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

namespace detail {

inline void check_profile_number(const std::string& field, double v, bool positive,
                                 double max = HUGE_VAL) {
  if (!std::isfinite(v))
    throw ProfileError(field, fmt::format("must be a finite number, got {}", v));
  if (v < 0) throw ProfileError(field, fmt::format("must not be negative, got {}", v));
  if (positive && v == 0) throw ProfileError(field, "must be positive, got 0");
  if (v > max) throw ProfileError(field, fmt::format("must be at most {}, got {}", max, v));
}

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
  using detail::check_profile_number;
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
    detail::check_profile_number(fmt::format("op_weights.{}", key), v, false);
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

/// The profile as JSON (keys in a fixed order; numbers written so that they read back exactly).
[[nodiscard]] inline nlohmann::ordered_json profile_to_json_value(const DeviceProfile& p) {
  nlohmann::ordered_json doc;
  doc["name"] = p.name;
  doc["kind"] = p.kind;
  doc["description"] = p.description;
  nlohmann::ordered_json vector, matrix;
  for (std::size_t i = 0; i < 3; ++i) {
    vector[std::string(detail::kProfileDtypes[i])] = p.vector_flops[i];
    matrix[std::string(detail::kProfileDtypes[i])] = p.matrix_flops[i];
  }
  doc["peak_flops"]["vector"] = vector;
  doc["peak_flops"]["matrix"] = matrix;
  doc["mem_bandwidth"] = p.mem_bandwidth;
  doc["cache_bytes"] = p.cache_bytes;
  doc["launch_overhead"] = p.launch_overhead;
  doc["mem_latency"] = p.mem_latency;
  doc["eta_c"] = p.eta_c;
  doc["eta_m"] = p.eta_m;
  doc["alpha"] = p.alpha;
  nlohmann::ordered_json weights = nlohmann::ordered_json::object();
  detail::for_each_weight(p.weights,
                          [&](std::string_view key, double v) { weights[std::string(key)] = v; });
  doc["op_weights"] = weights;
  doc["fusion_overlap"] = p.fusion_overlap;
  doc["split_copies"] = p.split_copies;
  doc["epilogue_kernel"] = p.epilogue_kernel;
  doc["broadcast_copies"] = p.broadcast_copies;
  doc["winograd"] = p.winograd;
  doc["runtime_fusion"] = p.runtime_fusion;
  doc["gemv_bandwidth"] = p.gemv_bandwidth;
  doc["gemv_half_width"] = p.gemv_half_width;
  doc["cache_bandwidth"] = p.cache_bandwidth;
  doc["cache_resident_bytes"] = p.cache_resident_bytes;
  doc["window_flops"] = p.window_flops;
  doc["window_plane_overhead"] = p.window_plane_overhead;
  doc["gemm_half_rows"] = p.gemm_half_rows;
  doc["group_overhead"] = p.group_overhead;
  doc["gemm_half_flops"] = p.gemm_half_flops;
  doc["conv_flops"] = p.conv_flops;
  doc["conv_half_flops"] = p.conv_half_flops;
  doc["fused_term_overhead"] = p.fused_term_overhead;
  nlohmann::ordered_json conv_layout = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < 3; ++i)
    conv_layout[std::string(detail::kProfileDtypes[i])] =
        std::string(layout_name(p.conv_layout[i]));
  doc["conv_layout"] = conv_layout;
  for (const auto& [kind, factors] :
       {std::pair{"systematic", &p.systematic_error}, std::pair{"scatter", &p.scatter_error}}) {
    nlohmann::ordered_json table = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < kNumCostClasses; ++i)
      table[std::string(kCostClassNames[i])] = (*factors)[i];
    doc["uncertainty"][kind] = table;
  }
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kNumTimeScales; ++i)
    if (p.kind_scatter[i] != 0) kinds[std::string(time_scale_name(i))] = p.kind_scatter[i];
  doc["uncertainty"]["kind_scatter"] = kinds;
  nlohmann::ordered_json scales = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kNumTimeScales; ++i)
    if (p.time_scale[i] != 1.0) scales[std::string(time_scale_name(i))] = p.time_scale[i];
  doc["time_scale"] = scales;
  return doc;
}

/// The profile as JSON text (`indent` < 0: one line).
[[nodiscard]] inline std::string profile_to_json(const DeviceProfile& p, int indent = 2) {
  return profile_to_json_value(p).dump(indent, ' ', false,
                                       nlohmann::json::error_handler_t::replace);
}

namespace detail {

/// `obj` itself, after checking that it is an object (at JSON path `path`).
template <class Json>
const Json& profile_object(const Json& obj, const std::string& path) {
  if (!obj.is_object())
    throw ProfileError(path, fmt::format("must be a JSON object, got {}", obj.type_name()));
  return obj;
}

inline std::string join_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

template <class Json>
void reject_unknown_keys(const Json& obj, const std::string& path,
                         std::initializer_list<std::string_view> keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (std::string_view k : keys) known = known || it.key() == k;
    if (!known)
      throw ProfileError(join_path(path, it.key()),
                         fmt::format("unknown field (expected one of: {})",
                                     fmt::join(keys.begin(), keys.end(), ", ")));
  }
}

template <class Json>
const Json& profile_member(const Json& obj, const std::string& path, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it == obj.end()) throw ProfileError(join_path(path, key), "missing");
  return *it;
}

template <class Json>
double profile_number(const Json& obj, const std::string& path, std::string_view key) {
  const Json& v = profile_member(obj, path, key);
  if (!v.is_number())
    throw ProfileError(join_path(path, key),
                       fmt::format("must be a number, got {}", v.type_name()));
  const double d = v.template get<double>();
  if (!std::isfinite(d)) throw ProfileError(join_path(path, key), "must be a finite number");
  if (d < 0)
    throw ProfileError(join_path(path, key), fmt::format("must not be negative, got {}", v.dump()));
  return d;
}

template <class Json>
std::string profile_string(const Json& obj, const std::string& path, std::string_view key) {
  const Json& v = profile_member(obj, path, key);
  if (!v.is_string())
    throw ProfileError(join_path(path, key),
                       fmt::format("must be a string, got {}", v.type_name()));
  return v.template get<std::string>();
}

/// Reads an object keyed by kernel kinds (`time_scale_name`) into `values` (at JSON path `path`).
template <class Json>
void read_kind_table(const Json& obj, const std::string& path,
                     std::array<double, kNumTimeScales>& values) {
  const Json& table = profile_object(obj, path);
  for (auto it = table.begin(); it != table.end(); ++it) {
    std::size_t i = 0;
    while (i < kNumTimeScales && time_scale_name(i) != it.key()) ++i;
    if (i == kNumTimeScales)
      throw ProfileError(join_path(path, it.key()),
                         "unknown kind (expected an operator's name, \"depthwise_conv2d\", "
                         "\"fused_contraction\" or \"fused_gather\")");
    values[i] = profile_number(table, path, it.key());
  }
}

}  // namespace detail

/// A profile from parsed JSON. Every field is required but "fusion_overlap", "split_copies",
/// "epilogue_kernel", "broadcast_copies", "winograd", "runtime_fusion", "gemv_bandwidth",
/// "gemv_half_width", "cache_bandwidth", "cache_resident_bytes", "window_flops",
/// "window_plane_overhead", "gemm_half_rows", "group_overhead", "gemm_half_flops", "conv_flops",
/// "conv_half_flops",
/// "fused_term_overhead", "conv_layout", "uncertainty" and "time_scale" (added later; true, false,
/// 0 for the numbers, all contiguous and every factor 1 when absent), unknown fields are rejected
/// (a typo would otherwise silently keep a default), numbers must be finite and non-negative, and
/// the result must pass `validate`. Throws `ProfileError` naming the field.
template <class Json>
[[nodiscard]] DeviceProfile profile_from_json_value(const Json& doc) {
  using namespace detail;
  profile_object(doc, "");
  reject_unknown_keys(doc, "",
                      {"name",
                       "kind",
                       "description",
                       "peak_flops",
                       "mem_bandwidth",
                       "cache_bytes",
                       "launch_overhead",
                       "mem_latency",
                       "eta_c",
                       "eta_m",
                       "alpha",
                       "op_weights",
                       "fusion_overlap",
                       "split_copies",
                       "epilogue_kernel",
                       "broadcast_copies",
                       "winograd",
                       "runtime_fusion",
                       "gemv_bandwidth",
                       "gemv_half_width",
                       "cache_bandwidth",
                       "cache_resident_bytes",
                       "window_flops",
                       "window_plane_overhead",
                       "gemm_half_rows",
                       "group_overhead",
                       "gemm_half_flops",
                       "conv_flops",
                       "conv_half_flops",
                       "fused_term_overhead",
                       "conv_layout",
                       "uncertainty",
                       "time_scale"});
  DeviceProfile p;
  p.name = profile_string(doc, "", "name");
  p.kind = profile_string(doc, "", "kind");
  p.description = profile_string(doc, "", "description");
  const Json& peaks = profile_object(profile_member(doc, "", "peak_flops"), "peak_flops");
  reject_unknown_keys(peaks, "peak_flops", {"vector", "matrix"});
  for (std::string_view unit : {"vector", "matrix"}) {
    const std::string path = fmt::format("peak_flops.{}", unit);
    const Json& table = profile_object(profile_member(peaks, "peak_flops", unit), path);
    reject_unknown_keys(table, path, {"f32", "f16", "bf16"});
    for (std::size_t i = 0; i < 3; ++i)
      (unit == "vector" ? p.vector_flops : p.matrix_flops)[i] =
          profile_number(table, path, kProfileDtypes[i]);
  }
  p.mem_bandwidth = profile_number(doc, "", "mem_bandwidth");
  p.cache_bytes = profile_number(doc, "", "cache_bytes");
  p.launch_overhead = profile_number(doc, "", "launch_overhead");
  p.mem_latency = profile_number(doc, "", "mem_latency");
  p.eta_c = profile_number(doc, "", "eta_c");
  p.eta_m = profile_number(doc, "", "eta_m");
  p.alpha = profile_number(doc, "", "alpha");
  const Json& weights = profile_object(profile_member(doc, "", "op_weights"), "op_weights");
  reject_unknown_keys(weights, "op_weights",
                      {"add", "mul", "max", "div", "exp", "tanh", "sigmoid", "gelu", "rsqrt"});
  for_each_weight(p.weights, [&](std::string_view key, double& v) {
    v = profile_number(weights, "op_weights", key);
  });
  for (auto [key, flag] :
       {std::pair{"fusion_overlap", &p.fusion_overlap}, std::pair{"split_copies", &p.split_copies},
        std::pair{"epilogue_kernel", &p.epilogue_kernel},
        std::pair{"broadcast_copies", &p.broadcast_copies}, std::pair{"winograd", &p.winograd},
        std::pair{"runtime_fusion", &p.runtime_fusion}}) {
    auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_boolean())
      throw ProfileError(key, fmt::format("must be true or false, got {}", it->type_name()));
    *flag = it->template get<bool>();
  }
  for (auto [key, number] :
       {std::pair{"gemv_bandwidth", &p.gemv_bandwidth},
        std::pair{"gemv_half_width", &p.gemv_half_width},
        std::pair{"cache_bandwidth", &p.cache_bandwidth},
        std::pair{"cache_resident_bytes", &p.cache_resident_bytes},
        std::pair{"window_flops", &p.window_flops},
        std::pair{"window_plane_overhead", &p.window_plane_overhead},
        std::pair{"gemm_half_rows", &p.gemm_half_rows},
        std::pair{"group_overhead", &p.group_overhead},
        std::pair{"gemm_half_flops", &p.gemm_half_flops}, std::pair{"conv_flops", &p.conv_flops},
        std::pair{"conv_half_flops", &p.conv_half_flops},
        std::pair{"fused_term_overhead", &p.fused_term_overhead}})
    if (doc.find(key) != doc.end()) *number = profile_number(doc, "", key);
  if (doc.find("conv_layout") != doc.end()) {
    const Json& table = profile_object(profile_member(doc, "", "conv_layout"), "conv_layout");
    reject_unknown_keys(table, "conv_layout", {"f32", "f16", "bf16"});
    for (std::size_t i = 0; i < 3; ++i) {
      if (table.find(std::string(kProfileDtypes[i])) == table.end()) continue;
      const std::string name = profile_string(table, "conv_layout", kProfileDtypes[i]);
      const std::optional<Layout> layout = layout_from_name(name);
      if (!layout)
        throw ProfileError(
            join_path("conv_layout", kProfileDtypes[i]),
            fmt::format("must be \"contiguous\" or \"channels_last\", got \"{}\"", name));
      p.conv_layout[i] = *layout;
    }
  }
  if (doc.find("uncertainty") != doc.end()) {
    const Json& both = profile_object(profile_member(doc, "", "uncertainty"), "uncertainty");
    reject_unknown_keys(both, "uncertainty", {"systematic", "scatter", "kind_scatter"});
    if (both.find("kind_scatter") != both.end())
      read_kind_table(profile_member(both, "uncertainty", "kind_scatter"),
                      "uncertainty.kind_scatter", p.kind_scatter);
    for (const auto& [kind, factors] :
         {std::pair{"systematic", &p.systematic_error}, std::pair{"scatter", &p.scatter_error}}) {
      if (both.find(kind) == both.end()) continue;
      const std::string path = join_path("uncertainty", kind);
      const Json& table = profile_object(profile_member(both, "uncertainty", kind), path);
      reject_unknown_keys(
          table, path, {"contraction", "window", "elementwise", "movement", "reduction", "fused"});
      for (std::size_t i = 0; i < kNumCostClasses; ++i)
        if (table.find(std::string(kCostClassNames[i])) != table.end())
          (*factors)[i] = profile_number(table, path, kCostClassNames[i]);
    }
  }
  if (doc.find("time_scale") != doc.end())
    read_kind_table(profile_member(doc, "", "time_scale"), "time_scale", p.time_scale);
  validate(p);
  return p;
}

/// A profile from JSON text. What `parse_json` rejects (syntax, a number out of range, a
/// duplicate key, too deep nesting) gives a `ProfileError` with the byte offset.
[[nodiscard]] inline DeviceProfile profile_from_json(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = parse_json(text);
  } catch (const JsonError& e) {
    throw ProfileError("", e.reason(), e.offset());
  }
  return profile_from_json_value(doc);
}

/// Reads a profile from a JSON file (`ProfileError` if it cannot be read, e.g. is a directory,
/// or is malformed).
[[nodiscard]] inline DeviceProfile load_profile(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const FileError& e) {
    throw ProfileError("", e.what());
  }
  return profile_from_json(text);
}

/// Writes a profile as JSON (2-space indent, trailing newline); `ProfileError` if it cannot.
inline void save_profile(const DeviceProfile& p, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw ProfileError("", fmt::format("cannot write '{}'", path));
  out << profile_to_json(p) << '\n';
  if (!out) throw ProfileError("", fmt::format("cannot write '{}'", path));
}

// ----------------------------------------------------------------------------- built-in profiles

namespace detail {

inline constexpr double kMiB = 1024.0 * 1024.0;

inline DeviceProfile gpu_profile(std::string name, std::string description, double vector_f32,
                                 double matrix_16, double bandwidth, double l2_bytes) {
  DeviceProfile p;
  p.name = std::move(name);
  p.kind = "gpu";
  p.description = std::move(description);
  // Elementwise f16/bf16 math is modelled at the f32 vector rate (computed in f32 after
  // conversion).
  p.vector_flops = {vector_f32, vector_f32, vector_f32};
  p.matrix_flops = {0.0, matrix_16,
                    matrix_16};  // TF32 not modelled (see DeviceProfile::matrix_flops)
  p.mem_bandwidth = bandwidth;
  p.cache_bytes = l2_bytes;
  p.launch_overhead = 1e-6;  // XLA kKernelLaunchOverhead
  p.mem_latency = 4e-6;  // launch + lat_m = 5 us, the intercept of XLA's measured H100 HBM table
  // Tensor-core convolutions (f16/bf16) are NHWC kernels; f32 ones (no TF32 here) run NCHW.
  p.conv_layout = {Layout::Contiguous, Layout::ChannelsLast, Layout::ChannelsLast};
  return p;
}

inline DeviceProfile cpu_profile(std::string name, std::string description, double vector_f32,
                                 double bandwidth, double cache) {
  DeviceProfile p;
  p.name = std::move(name);
  p.kind = "cpu";
  p.description = std::move(description);
  p.vector_flops = {vector_f32, vector_f32, vector_f32};
  p.matrix_flops = {0.0, 0.0, 0.0};
  p.mem_bandwidth = bandwidth;
  p.cache_bytes = cache;
  p.launch_overhead = 0;
  p.mem_latency = 0;
  // oneDNN's and XLA's (Eigen's) CPU convolutions read channels-minor activations; NCHW ones are
  // reordered around each convolution.
  p.conv_layout = {Layout::ChannelsLast, Layout::ChannelsLast, Layout::ChannelsLast};
  return p;
}

inline const std::vector<DeviceProfile>& builtin_profiles() {
  static const std::vector<DeviceProfile> profiles = [] {
    std::vector<DeviceProfile> v;
    v.push_back(gpu_profile(
        "h100-sxm",
        "NVIDIA H100 SXM5 80GB: 132 SMs at 1.98 GHz; FP32 66.9 TFLOP/s, BF16/FP16 tensor 989.4 "
        "TFLOP/s dense; HBM3 3.35 TB/s; 50 MiB L2 (XLA gpu_device_info_for_tests.cc, "
        "cuda_core_info_table_test.cc; NVIDIA datasheet)",
        66.9e12, 989.4e12, 3352320000000.0, 50 * kMiB));
    v.push_back(gpu_profile(
        "h200-sxm",
        "NVIDIA H200 SXM 141GB: H100's compute (FP32 66.9, BF16/FP16 tensor 989.4 TFLOP/s "
        "dense); HBM3e 4.8 TB/s; 50 MiB L2 (NVIDIA datasheet)",
        66.9e12, 989.4e12, 4.8e12, 50 * kMiB));
    v.push_back(gpu_profile(
        "a100-sxm-80gb",
        "NVIDIA A100 SXM4 80GB: 108 SMs at 1.41 GHz; FP32 19.5 TFLOP/s, BF16/FP16 tensor 312 "
        "TFLOP/s dense; HBM2e 2.039 TB/s; 40 MiB L2 (XLA gpu_device_info_for_tests.cc; "
        "NVIDIA datasheet)",
        19.5e12, 312e12, 2039040000000.0, 40 * kMiB));
    v.push_back(cpu_profile(
        "xeon-spr-56c",
        "Intel Xeon Sapphire Rapids, 56 cores: 2 AVX-512 FMA per cycle x 16 f32 lanes x 2 "
        "flops x 2.0 GHz = 7.17 TFLOP/s; 8 x DDR5-4800 = 307.2 GB/s; 105 MiB LLC",
        56 * 2 * 16 * 2 * 2.0e9, 307.2e9, 105 * kMiB));
    v.push_back(cpu_profile(
        "epyc-9654",
        "AMD EPYC 9654 (Zen 4), 96 cores: 32 f32 flops per cycle x 2.4 GHz = 7.37 TFLOP/s; "
        "12 x DDR5-4800 = 460.8 GB/s; 384 MiB L3",
        96 * 32 * 2.4e9, 460.8e9, 384 * kMiB));
    v.push_back(cpu_profile(
        "xla-cpu-default",
        "XLA's default CPU: 8 cores x 16 lanes x 2 flops x 3 GHz = 768 GFLOP/s; 100 GB/s; "
        "1 MiB L2",
        8 * 16 * 2 * 3e9, 100e9, 1 * kMiB));
    {
      DeviceProfile ort = cpu_profile("onnxruntime-cpu",
                                      "onnxruntime's CPU execution provider on one thread of an "
                                      "AVX2 core: 8 f32 lanes x 2 FMA x 2 flops x "
                                      "2.5 GHz = 80 GFLOP/s; 20 GB/s single-thread DRAM stream; 32 "
                                      "MiB L3 (nominal, not calibrated). Its Conv "
                                      "reads NCHW and picks its own blocked layout; its graph "
                                      "optimizer fuses kernels (runtime_fusion)",
                                      8 * 2 * 2 * 2.5e9, 20e9, 32 * kMiB);
      ort.conv_layout = {Layout::Contiguous, Layout::Contiguous, Layout::Contiguous};
      ort.runtime_fusion = true;
      v.push_back(std::move(ort));
    }
    return v;
  }();
  return profiles;
}

}  // namespace detail

/// The names of the built-in profiles, in a fixed order: h100-sxm, h200-sxm, a100-sxm-80gb,
/// xeon-spr-56c, epyc-9654, xla-cpu-default, onnxruntime-cpu.
[[nodiscard]] inline std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const DeviceProfile& p : detail::builtin_profiles()) names.push_back(p.name);
  return names;
}

/// The built-in profile called `name`. Throws `ProfileError` (field "name") listing the valid
/// names.
[[nodiscard]] inline DeviceProfile find_profile(std::string_view name) {
  for (const DeviceProfile& p : detail::builtin_profiles())
    if (p.name == name) return p;
  const std::vector<std::string> names = profile_names();
  throw ProfileError("name", fmt::format("unknown profile '{}'; valid names: {}", name,
                                         fmt::join(names.begin(), names.end(), ", ")));
}

/// A profile named on a command line: a JSON file when `name_or_path` contains a '/' or ends in
/// ".json" (`load_profile`), else a built-in profile (`find_profile`). `ProfileError` from either.
[[nodiscard]] inline DeviceProfile resolve_profile(const std::string& name_or_path) {
  const bool file =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  return file ? load_profile(name_or_path) : find_profile(name_or_path);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_DEVICE_PROFILE_H
