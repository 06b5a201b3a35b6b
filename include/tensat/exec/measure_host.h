// measure_host: this machine measured as the reference executor sees it (STREAM-triad bandwidth,
// Eigen GEMM FLOP/s, the relative cost of exp/tanh/divide/rsqrt, the executor's fixed cost per
// node and per fused term, its matrix-vector, add, depthwise and grouped-convolution rates), and
// host_profile, the CPU DeviceProfile fitted to those measurements.
#ifndef TENSAT_EXEC_MEASURE_HOST_H
#define TENSAT_EXEC_MEASURE_HOST_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <fmt/format.h>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tensat/cost/cost_model.h"
#include "tensat/cost/device_profile.h"
#include "tensat/exec/executor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Sizes of the measurements. The defaults take about two seconds; tiny sizes give meaningless
/// but positive numbers quickly (what a test wants).
struct CalibrationOptions {
  /// Doubles per STREAM-triad array; 0: four times the last-level cache, at least 2^24 and at
  /// most 2^25 (256 MiB an array: VMs and many-chiplet CPUs report the whole package's L3, of
  /// which one core's share is a fraction, and four times that would take gigabytes).
  std::size_t stream_elements = 0;
  /// n of the n x n x n single-precision GEMM (Eigen::MatrixXf product).
  int gemm_size = 1024;
  /// Floats in the cache-resident arrays of the elementwise timings.
  std::size_t weight_elements = 16384;
  /// Passes over those arrays per timing.
  std::size_t weight_passes = 256;
  /// Each measurement is the best of this many runs (after one warm-up run).
  int repetitions = 5;
  /// Nodes of the executor chain whose time per node is the per-kernel overhead.
  int overhead_nodes = 1024;
  /// Bytes of matrices the matrix-vector products stream through, one after the other (as a
  /// model's weights are read once per run), at each of the two output widths measured. Past
  /// the last-level cache, like the triad's arrays: a model's weights come from memory, and
  /// matrices that partly fit in the cache measure a rate no model sees (measure_host.md).
  std::size_t gemv_bytes = std::size_t{256} << 20;
  /// Elements of the two executor adds that measure the cache tier: one whose operands and
  /// result fit in a core's L2 (384 KiB of traffic), one a few times larger (3 MiB), each run
  /// `cache_passes` times in a row on the same inputs, as a kernel reads what its producer wrote.
  std::size_t cache_small_elements = 32768;
  std::size_t cache_large_elements = 262144;
  std::size_t cache_passes = 64;
  /// The depthwise convolution whose rate is the windowed kernels' (`window_flops`): a 3x3,
  /// stride-1, SAME convolution of [1, window_channels, window_size, window_size] (the defaults:
  /// the 56x56 stage of NasNet-A and MobileNet, 1.6 MB in and out, as a model runs it from the
  /// cache its producer left it in), run `window_passes` times in a row.
  std::int64_t window_channels = 128;
  std::int64_t window_size = 56;
  std::size_t window_passes = 8;
  /// A second depthwise convolution on small planes (between the 14x14 and 7x7 stages of
  /// MobileNet; the uncertainty probes check the fit at 28x28 and 7x7), run
  /// `window_small_passes` times: with the first it fits `window_plane_overhead`.
  std::int64_t window_small_channels = 256;
  std::int64_t window_small_size = 10;
  std::size_t window_small_passes = 64;
  /// The grouped convolution whose rate fits the GEMM's row curve (`gemm_half_rows`): a 3x3,
  /// stride-1, SAME convolution of [1, grouped_channels, grouped_size, grouped_size] in groups of
  /// `grouped_rows` channels (the defaults: ResNeXt-50's second stage, 8 channels a group, as a
  /// model runs it from the cache its producer left it in), run `grouped_passes` times in a row.
  std::int64_t grouped_channels = 256;
  std::int64_t grouped_size = 28;
  std::int64_t grouped_rows = 8;
  std::size_t grouped_passes = 4;
  /// A grouped convolution of many small groups on a small map (a depthwise convolution merged
  /// into groups of two, as TASO's merge_gconv writes it, on MobileNet's 4x4 stage), run
  /// `group_small_passes` times: what it costs beyond the fitted rates fits `group_overhead`.
  std::int64_t group_small_channels = 256;
  std::int64_t group_small_size = 4;
  std::int64_t group_small_rows = 2;
  std::size_t group_small_passes = 32;
  /// Passes of each probe program whose residual measures the model's own error
  /// (`measure_uncertainty`).
  std::size_t probe_passes = 8;
  /// Rounds over all the probes, each probe's time its best round: a slow spell of a shared
  /// machine that outlasts one probe's repetitions then falls on one round of it, not on all.
  std::size_t probe_rounds = 3;
  /// The least scatter factor recorded for a class: repeated timings of one program differ by a
  /// few percent, which a handful of probes cannot tell from the model's own error.
  double min_scatter = 1.05;
  /// How closely the probes of one kind of kernel must agree for `measure_uncertainty` to set
  /// that kind's `time_scale` (their ratios within this factor of their geometric mean).
  double scale_agreement = 1.5;
};

/// What `measure_host` found.
struct HostMeasurements {
  double bandwidth = 0;     ///< bytes/s, STREAM triad a = b + s·c (24 bytes per element counted)
  double gemm_flops = 0;    ///< FLOP/s of C = A·B (2·n³ flops)
  double cache_bytes = 0;   ///< last-level cache reported by the OS (0 if unknown)
  double exp_weight = 0;    ///< time of y = exp(x) / time of y = x + z, per element
  double tanh_weight = 0;   ///< y = tanh(x) against the add
  double div_weight = 0;    ///< y = x / z against the add
  double rsqrt_weight = 0;  ///< y = rsqrt(x) against the add
  double node_overhead =
      0;  ///< seconds per node of the reference executor (`execute`) on a tiny tensor
  /// seconds per body term of a fused kernel on a tiny tensor, beyond the kernel's node overhead
  double fused_term_overhead = 0;
  double gemv_narrow = 0;  ///< bytes/s of the executor's [1, 512] x [512, 512] products, streamed
  double gemv_wide = 0;    ///< bytes/s of its [1, 512] x [512, 4096] products, streamed
  double add_small =
      0;  ///< bytes/s of the executor's ewadd of `cache_small_elements` (12 bytes each)
  double add_large = 0;        ///< the same over `cache_large_elements` floats
  double add_small_bytes = 0;  ///< the traffic of one small add, 12 bytes a float
  double add_large_bytes = 0;  ///< the traffic of one large add
  double window_flops =
      0;  ///< FLOP/s of the executor's depthwise 3x3 convolution (2·9 flops an output)
  double window_small_flops = 0;                ///< the same on `window_small_size` planes
  double window_channels = 0, window_size = 0;  ///< the shapes of those two
  double window_small_channels = 0, window_small_size = 0;
  double grouped_flops =
      0;  ///< FLOP/s of its grouped 3x3 convolution of `grouped_rows`-channel groups
  double grouped_rows = 0;       ///< the output channels of one of those groups (its GEMM's rows)
  double group_small_flops = 0;  ///< FLOP/s of the grouped convolution of small groups
  /// Its shape: [1, channels, size, size] in groups of `rows`.
  double group_small_channels = 0, group_small_size = 0, group_small_rows = 0;
};

namespace detail {

template <class F>
double best_seconds(int repetitions, F&& f) {
  f();  // warm-up: page faults, caches, frequency
  double best = HUGE_VAL;
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return std::max(best, 1e-9);  // a clock tick, so that rates stay finite
}

/// Keeps a value alive so that the measured work is not optimized away.
inline void keep(double value) {
  static volatile double sink = 0;
  sink = sink + value;
}

/// Seconds of `passes` executions in a row of `program` on the same random bindings (seed 1),
/// best of `repetitions`: what stays in cache from one execution to the next is found there, as
/// a kernel finds what its producer has just written. Weight-only subexpressions (a Winograd
/// convolution's transformed weights) are computed once beforehand (`precompute_weights`), as
/// the cost model counts them free and tensat-opt --measure runs them.
inline double seconds_of_passes(const RecExpr<TensorNode>& program, std::size_t passes,
                                int repetitions) {
  const PrecomputedProgram pre = precompute_weights(program, random_bindings(program, 1));
  return best_seconds(repetitions, [&] {
    for (std::size_t p = 0; p < passes; ++p) {
      const std::vector<HostTensor> out = execute(pre.program, pre.bindings);
      keep(static_cast<double>(out.at(0).data[p % out.at(0).data.size()]));
    }
  });
}

}  // namespace detail

/// The last-level cache size in bytes as the OS reports it: sysfs (what a virtual machine is
/// given), else sysconf (which may report the physical part); 0 if neither does.
[[nodiscard]] inline double host_cache_bytes() {
  for (const char* path : {"/sys/devices/system/cpu/cpu0/cache/index3/size",
                           "/sys/devices/system/cpu/cpu0/cache/index2/size"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    double scale = 1;
    if (text.back() == 'K') scale = 1024.0;
    if (text.back() == 'M') scale = 1024.0 * 1024.0;
    try {
      const double value = std::stod(text) * scale;
      if (value > 0) return value;
    } catch (...) {
    }
  }
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return static_cast<double>(l3);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return static_cast<double>(l2);
#endif
  return 0;
}

/// STREAM triad a = b + s·c over three arrays of `elements` doubles (single thread, Eigen array
/// expressions): bytes/s counting 3 · 8 bytes per element, as STREAM does.
[[nodiscard]] inline double measure_triad_bandwidth(std::size_t elements, int repetitions = 5) {
  const auto n = static_cast<Eigen::Index>(std::max<std::size_t>(elements, 1));
  Eigen::ArrayXd a = Eigen::ArrayXd::Zero(n), b = Eigen::ArrayXd::Constant(n, 1.0),
                 c = Eigen::ArrayXd::Constant(n, 2.0);
  const double s = 3.0;
  const double seconds = detail::best_seconds(repetitions, [&] {
    a = b + s * c;
    detail::keep(a[n / 2]);
  });
  return 3.0 * 8.0 * static_cast<double>(n) / seconds;
}

/// FLOP/s of an n x n x n single-precision Eigen GEMM (2·n³ flops); Eigen uses several threads
/// only when built with OpenMP.
[[nodiscard]] inline double measure_gemm_flops(int n, int repetitions = 5) {
  n = std::max(n, 1);
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  const double seconds = detail::best_seconds(repetitions, [&] {
    c.noalias() = a * b;
    detail::keep(c(n / 2, n / 2));
  });
  return 2.0 * static_cast<double>(n) * n * n / seconds;
}

/// The elementwise operations whose relative cost `measure_op_weight` times.
enum class WeightedOp : std::uint8_t { Add, Exp, Tanh, Div, Rsqrt };

/// Seconds per element of `op` over cache-resident float arrays of `elements` (best of
/// `repetitions`, each `passes` passes).
[[nodiscard]] inline double measure_elementwise_seconds(WeightedOp op, std::size_t elements,
                                                        std::size_t passes, int repetitions = 5) {
  const auto n = static_cast<Eigen::Index>(std::max<std::size_t>(elements, 1));
  const Eigen::ArrayXf x = Eigen::ArrayXf::Random(n);               // [-1, 1]
  const Eigen::ArrayXf z = Eigen::ArrayXf::Random(n).abs() + 1.0f;  // [1, 2]
  Eigen::ArrayXf y(n);
  passes = std::max<std::size_t>(passes, 1);
  const double seconds = detail::best_seconds(repetitions, [&] {
    for (std::size_t p = 0; p < passes; ++p) {
      switch (op) {
        case WeightedOp::Add:
          y = x + z;
          break;
        case WeightedOp::Exp:
          y = x.exp();
          break;
        case WeightedOp::Tanh:
          y = x.tanh();
          break;
        case WeightedOp::Div:
          y = x / z;
          break;
        case WeightedOp::Rsqrt:
          y = z.rsqrt();
          break;
      }
      detail::keep(
          static_cast<double>(y[static_cast<Eigen::Index>(p % static_cast<std::size_t>(n))]));
    }
  });
  return seconds / (static_cast<double>(n) * static_cast<double>(passes));
}

/// The reference executor's fixed cost per node, in seconds: `execute` of a chain of `nodes`
/// alternating relu and tanh ops on an [1, 8] tensor, divided by the nodes (what a node costs
/// beyond its arithmetic: dispatch, the result's allocation, reference counting, freeing).
[[nodiscard]] inline double measure_node_overhead(int nodes, int repetitions = 5) {
  Graph g;
  Tensor x = g.input("x", {1, 8});
  for (int i = 0; i < std::max(nodes, 1); ++i) x = i % 2 ? g.tanh(x) : g.relu(x);
  g.output(x);
  const RecExpr<TensorNode> program = g.program();
  const Bindings bindings = random_bindings(program, 1);
  const double seconds = detail::best_seconds(repetitions, [&] {
    const std::vector<HostTensor> out = execute(program, bindings);
    detail::keep(static_cast<double>(out.at(0).data[0]));
  });
  return seconds / std::max(nodes, 1);
}

/// The reference executor's fixed cost per body term of a fused kernel, in seconds: `execute` of
/// a chain of `kernels` fused kernels, each four elementwise terms (relu, tanh, relu, tanh) on an
/// [1, 8] tensor, per kernel less one `node_overhead`, per term (what a fused loop spends setting
/// up and dispatching a term, which a kernel of a few hundred elements cannot hide). Not negative.
[[nodiscard]] inline double measure_fused_term_overhead(int kernels, double node_overhead,
                                                        int repetitions = 5) {
  constexpr int kTerms = 4;
  kernels = std::max(kernels, 1);
  const std::string arg = "(arg 0 f32 (ints 1 8))";
  std::string program_text = "(input x f32 (ints 1 8))";
  for (int k = 0; k < kernels; ++k) {
    std::string body = arg;
    for (int t = 0; t < kTerms; ++t) body = (t % 2 ? "(tanh " : "(relu ") + body + ")";
    program_text = "(fused " + body + " " + program_text + ")";
  }
  const RecExpr<TensorNode> program = parse_program(program_text);
  const Bindings bindings = random_bindings(program, 1);
  const double seconds = detail::best_seconds(repetitions, [&] {
    const std::vector<HostTensor> out = execute(program, bindings);
    detail::keep(static_cast<double>(out.at(0).data[0]));
  });
  return std::max(seconds / kernels - node_overhead, 0.0) / kTerms;
}

/// The rate in bytes/s at which the executor's matrix-vector products [1, K] x [K, N]
/// (`matmul`, row-major, as `execute` runs it) stream their matrices: products with separate
/// matrices of `bytes` bytes in all, run one after the other, best of `repetitions`.
[[nodiscard]] inline double measure_gemv_bandwidth(std::int64_t k, std::int64_t n,
                                                   std::size_t bytes, int repetitions = 5) {
  k = std::max<std::int64_t>(k, 1);
  n = std::max<std::int64_t>(n, 1);
  const auto matrix_bytes = static_cast<std::size_t>(k * n) * sizeof(float);
  const std::size_t count = std::max<std::size_t>(bytes / matrix_bytes, 1);
  std::vector<HostTensor> matrices;
  for (std::size_t i = 0; i < count; ++i) {
    HostTensor m(Dims{k, n});
    for (std::size_t j = 0; j < m.data.size(); ++j)
      m.data[j] = static_cast<float>((j * 7 + i) % 13) * 0.01f;
    matrices.push_back(std::move(m));
  }
  HostTensor x(Dims{1, k});
  std::fill(x.data.begin(), x.data.end(), 0.5f);
  const double seconds = detail::best_seconds(repetitions, [&] {
    double sum = 0;
    for (const HostTensor& m : matrices) sum += detail::matmul(x, m, Activation::None).data[0];
    detail::keep(sum);
  });
  return static_cast<double>(count * matrix_bytes) / seconds;
}

/// The traffic of an add of two [`elements`] tensors as the cost model counts it: two reads and
/// a write of 4 bytes each.
[[nodiscard]] inline double add_traffic_bytes(std::size_t elements) {
  return 12.0 * static_cast<double>(std::max<std::size_t>(elements, 1));
}

/// Bytes/s of the executor's `ewadd` of two [`elements`] tensors, counted as the cost model
/// counts it (12 bytes an element: two reads and a write), run `passes` times in a row on the
/// same inputs (what fits stays in cache), best of `repetitions`. The executor's add copies its
/// first operand and adds the second in place, and allocates its result: the rate is the
/// executor's, allocator included (a process that keeps freed memory, as the benches do with
/// `mallopt`, reuses warm blocks; one that returns it to the OS pays page faults on large ones).
[[nodiscard]] inline double measure_add_bandwidth(std::size_t elements, std::size_t passes,
                                                  int repetitions = 5) {
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(elements, 1));
  Graph g;
  g.output(g.ewadd(g.input("x", {n}), g.input("z", {n})));
  passes = std::max<std::size_t>(passes, 1);
  return add_traffic_bytes(elements) * static_cast<double>(passes) /
         detail::seconds_of_passes(g.program(), passes, repetitions);
}

/// FLOP/s of the executor's depthwise convolution (`conv2d` with one input channel per group),
/// 3x3, stride 1, SAME, on [1, `channels`, `size`, `size`], run `passes` times in a row on the
/// same input, best of `repetitions`; 2·9 flops an output, as the cost model counts them. The
/// rate of the kernels that slide a window without a product (`DeviceProfile::window_flops`).
[[nodiscard]] inline double measure_window_flops(std::int64_t channels, std::int64_t size,
                                                 std::size_t passes, int repetitions = 5) {
  channels =
      std::max<std::int64_t>(channels, 2);  // a depthwise convolution has more than one group
  size = std::max<std::int64_t>(size, 1);
  Graph g;
  const Tensor x = g.input("x", {1, channels, size, size});
  g.output(g.conv2d(x, g.weight("w", {channels, 1, 3, 3}), 1, 1, Padding::Same));
  passes = std::max<std::size_t>(passes, 1);
  const double flops = 2.0 * 9.0 * static_cast<double>(channels * size * size);
  return flops * static_cast<double>(passes) /
         detail::seconds_of_passes(g.program(), passes, repetitions);
}

/// FLOP/s of the executor's grouped convolution, 3x3, stride 1, SAME, on [1, `channels`, `size`,
/// `size`] in groups of `rows` input and output channels (one product of `rows` rows per
/// group), run `passes` times in a row on the same input, best of `repetitions`; 2·9·rows flops an
/// output, as the cost model counts them.
[[nodiscard]] inline double measure_grouped_conv_flops(std::int64_t channels, std::int64_t size,
                                                       std::int64_t rows, std::size_t passes,
                                                       int repetitions = 5) {
  rows = std::max<std::int64_t>(rows, 2);  // one channel a group is the depthwise path
  channels = std::max<std::int64_t>(channels / rows, 1) * rows;
  size = std::max<std::int64_t>(size, 1);
  Graph g;
  const Tensor x = g.input("x", {1, channels, size, size});
  g.output(g.conv2d(x, g.weight("w", {channels, rows, 3, 3}), 1, 1, Padding::Same));
  passes = std::max<std::size_t>(passes, 1);
  const double flops = 2.0 * 9.0 * static_cast<double>(rows * channels * size * size);
  return flops * static_cast<double>(passes) /
         detail::seconds_of_passes(g.program(), passes, repetitions);
}

/// The depthwise rate and per-plane cost through two 3x3, stride-1, SAME depthwise convolutions
/// of `channels` planes of `size` x `size`, measured at `rate` (2·9 flops an output): the model
/// t = F·w / window_flops + planes·o of `op_work`, w = (size + 2) / size, solved through both.
/// o is clamped at 0 (the rate then the large one's); `window_flops` and `window_plane_overhead`
/// are set.
inline void fit_window_overhead(double large_rate, double large_channels, double large_size,
                                double small_rate, double small_channels, double small_size,
                                double& window_flops, double& window_plane_overhead) {
  const auto flops = [](double c, double n) { return 18.0 * c * n * n; };
  const double f1 = flops(large_channels, large_size), f2 = flops(small_channels, small_size);
  const double a1 = f1 * (large_size + 2) / large_size, a2 = f2 * (small_size + 2) / small_size;
  window_flops = large_rate;
  window_plane_overhead = 0;
  if (!(large_rate > 0) || !(small_rate > 0) || !std::isfinite(large_rate) ||
      !std::isfinite(small_rate))
    return;
  const double t1 = f1 / large_rate, t2 = f2 / small_rate;
  const double det = a1 * small_channels - a2 * large_channels;
  if (det == 0) return;
  const double inverse_rate = (t1 * small_channels - t2 * large_channels) / det;
  const double o = (t2 - a2 * inverse_rate) / small_channels;
  if (!(inverse_rate > 0) || !(o > 0) || !std::isfinite(o))
    return;  // no plane cost: the large rate
  window_flops = 1.0 / inverse_rate;
  window_plane_overhead = o;
}

/// `group_overhead` from a grouped 3x3, stride-1, SAME convolution of [1, `channels`, `size`,
/// `size`] in groups of `rows` channels measured at `rate` (2·9·rows flops an output): its
/// measured time beyond what `profile` (without the term) predicts for it, a group; 0 when it is
/// not slower than predicted.
[[nodiscard]] inline double fit_group_overhead(const DeviceProfile& profile, double rate,
                                               double channels, double size, double rows) {
  if (!(rate > 0) || !std::isfinite(rate) || !(channels >= rows) || !(rows >= 2) || !(size >= 1))
    return 0.0;
  const auto c = static_cast<std::int64_t>(channels), n = static_cast<std::int64_t>(size),
             r = static_cast<std::int64_t>(rows);
  Graph g;
  const Tensor x = g.input("x", {1, c, n, n});
  g.output(g.conv2d(x, g.weight("w", {c, r, 3, 3}), 1, 1, Padding::Same));
  DeviceProfile without = profile;
  without.group_overhead = 0;
  const double predicted = program_time(g.program(), profile_for(without, g.program())) * 1e-6;
  const double measured = 18.0 * channels * rows * size * size / rate;
  const double groups = channels / rows;
  return measured > predicted ? (measured - predicted) / groups : 0.0;
}

/// `gemm_half_rows` of the curve peak · rows / (rows + h) through a product of `rows` rows
/// measured at `rate`: h = rows · (peak / rate − 1); 0 when that product is not slower than
/// the peak.
[[nodiscard]] inline double fit_gemm_half_rows(double peak, double rate, double rows) noexcept {
  return rate > 0 && rate < peak && rows > 0 ? rows * (peak / rate - 1.0) : 0.0;
}

/// cache_bandwidth and cache_resident_bytes of the two-tier memory time
/// t(B) = min(B, F) / C + max(B - F, 0) / M (`DeviceProfile::memory_seconds`) from the add over
/// `small_bytes` of traffic at `small_rate` (all of it in cache: C = small_rate) and over
/// `large_bytes` at `large_rate`, M = `memory_rate`: F solves t(large_bytes) = large_bytes /
/// large_rate, within [small_bytes, large_bytes]. No tier (both 0) when the small add is not
/// faster than memory.
inline void fit_cache_tier(double small_rate, double small_bytes, double large_rate,
                           double large_bytes, double memory_rate, double& cache_bandwidth,
                           double& resident_bytes) {
  cache_bandwidth = 0;
  resident_bytes = 0;
  if (!(small_rate > memory_rate) || memory_rate <= 0 || large_bytes <= 0) return;
  cache_bandwidth = small_rate;
  const double excess =
      large_bytes / std::max(large_rate, 1e-30) - large_bytes / memory_rate;  // < 0 if faster
  const double saving = 1.0 / small_rate - 1.0 / memory_rate;                 // < 0
  resident_bytes = std::clamp(excess / saving, small_bytes, large_bytes);
}

/// gemv_bandwidth and gemv_half_width of the curve B · N / (N + h) through the rates measured at
/// N = 512 and N = 4096 (no width effect, h = 0, when the narrow one is not slower).
inline void fit_gemv_curve(double narrow, double wide, double& bandwidth, double& half_width) {
  const double r = wide > 0 ? narrow / wide : 1.0;
  if (!(r < 1.0)) {
    half_width = 0;
  } else if (r * 4096.0 <= 512.0) {  // the curve cannot fall that fast: cap at h = 64 x 4096
    half_width = 64 * 4096.0;
  } else {
    half_width = std::min(512.0 * 4096.0 * (1.0 - r) / (4096.0 * r - 512.0), 64 * 4096.0);
  }
  bandwidth = wide * (4096.0 + half_width) / 4096.0;
}

/// Runs every measurement.
[[nodiscard]] inline HostMeasurements measure_host(const CalibrationOptions& options = {}) {
  HostMeasurements m;
  m.cache_bytes = host_cache_bytes();
  std::size_t stream = options.stream_elements;
  if (stream == 0)
    stream = std::clamp(static_cast<std::size_t>(4 * m.cache_bytes / 8), std::size_t{1} << 24,
                        std::size_t{1} << 25);
  m.bandwidth = measure_triad_bandwidth(stream, options.repetitions);
  m.gemm_flops = measure_gemm_flops(options.gemm_size, options.repetitions);
  const auto time = [&](WeightedOp op) {
    return measure_elementwise_seconds(op, options.weight_elements, options.weight_passes,
                                       options.repetitions);
  };
  const double add = time(WeightedOp::Add);
  m.exp_weight = time(WeightedOp::Exp) / add;
  m.tanh_weight = time(WeightedOp::Tanh) / add;
  m.div_weight = time(WeightedOp::Div) / add;
  m.rsqrt_weight = time(WeightedOp::Rsqrt) / add;
  m.node_overhead = measure_node_overhead(options.overhead_nodes, options.repetitions);
  m.fused_term_overhead =
      measure_fused_term_overhead(options.overhead_nodes / 8, m.node_overhead, options.repetitions);
  m.gemv_narrow = measure_gemv_bandwidth(512, 512, options.gemv_bytes, options.repetitions);
  m.gemv_wide = measure_gemv_bandwidth(512, 4096, options.gemv_bytes, options.repetitions);
  m.add_small = measure_add_bandwidth(options.cache_small_elements, options.cache_passes,
                                      options.repetitions);
  m.add_large = measure_add_bandwidth(options.cache_large_elements, options.cache_passes,
                                      options.repetitions);
  m.add_small_bytes = add_traffic_bytes(options.cache_small_elements);
  m.add_large_bytes = add_traffic_bytes(options.cache_large_elements);
  m.window_flops = measure_window_flops(options.window_channels, options.window_size,
                                        options.window_passes, options.repetitions);
  m.window_small_flops =
      measure_window_flops(options.window_small_channels, options.window_small_size,
                           options.window_small_passes, options.repetitions);
  m.window_channels = static_cast<double>(std::max<std::int64_t>(options.window_channels, 2));
  m.window_size = static_cast<double>(std::max<std::int64_t>(options.window_size, 1));
  m.window_small_channels =
      static_cast<double>(std::max<std::int64_t>(options.window_small_channels, 2));
  m.window_small_size = static_cast<double>(std::max<std::int64_t>(options.window_small_size, 1));
  m.grouped_rows = static_cast<double>(std::max<std::int64_t>(options.grouped_rows, 2));
  m.grouped_flops =
      measure_grouped_conv_flops(options.grouped_channels, options.grouped_size,
                                 options.grouped_rows, options.grouped_passes, options.repetitions);
  m.group_small_rows = static_cast<double>(std::max<std::int64_t>(options.group_small_rows, 2));
  // The shape measure_grouped_conv_flops times: rows at least 2, channels a multiple of them.
  const auto small_rows = static_cast<std::int64_t>(m.group_small_rows);
  m.group_small_channels = static_cast<double>(
      std::max<std::int64_t>(options.group_small_channels / small_rows, 1) * small_rows);
  m.group_small_size = static_cast<double>(std::max<std::int64_t>(options.group_small_size, 1));
  m.group_small_flops = measure_grouped_conv_flops(
      options.group_small_channels, options.group_small_size, options.group_small_rows,
      options.group_small_passes, options.repetitions);
  return m;
}

/// The "host" profile from measurements: a CPU (no memory latency, no matrix unit), the
/// executor's node overhead as the launch overhead and its fused loops' cost per term
/// (`fused_term_overhead`), every vector peak the measured GEMM rate
/// (f16/bf16 are computed in f32), the triad bandwidth, the measured exp/tanh/div/rsqrt weights
/// (never below 1, an add), sigmoid = exp + 1 + div, gelu = tanh + 8, eta = alpha = 1; and the
/// reference executor's ways: fused kernels run in phases (`fusion_overlap` false: one thread
/// computes a part of a product, then its epilogue), splits copy their parts (`split_copies`), and
/// matrix-vector products stream their matrices at a rate that grows with the output width
/// (`gemv_bandwidth`, `gemv_half_width`: the curve through the two widths measured); and a
/// kernel's first bytes of traffic come from the cache (`cache_bandwidth`,
/// `cache_resident_bytes`: fitted to the two adds, `fit_cache_tier`); and the windowed kernels
/// (depthwise convolutions, pooling) at the depthwise convolution's rate (`window_flops`); and a
/// convolution's per-group product slower with fewer rows (`gemm_half_rows`: the curve through
/// the GEMM's rate and the grouped convolution's, `fit_gemm_half_rows`).
[[nodiscard]] inline DeviceProfile host_profile(const HostMeasurements& m) {
  DeviceProfile p;
  p.name = "host";
  p.kind = "cpu";
  p.description = fmt::format(
      "measured by calibrate_host: STREAM triad {:.1f} GB/s, Eigen GEMM {:.1f} GFLOP/s (one thread "
      "unless Eigen "
      "uses OpenMP), exp {:.2f} x add, executor node overhead {:.2f} us ({:.2f} us more a fused "
      "kernel's term), "
      "matrix-vector products {:.1f} GB/s "
      "(N = 512) to {:.1f} GB/s (N = 4096), adds {:.1f} GB/s over {:.0f} KiB and {:.1f} GB/s over "
      "{:.0f} KiB, "
      "depthwise convolution {:.1f} GFLOP/s ({:.1f} on {:.0f}x{:.0f} planes), grouped convolution "
      "of {:.0f} "
      "channels a group {:.1f} GFLOP/s",
      m.bandwidth * 1e-9, m.gemm_flops * 1e-9, m.exp_weight, m.node_overhead * 1e6,
      m.fused_term_overhead * 1e6, m.gemv_narrow * 1e-9, m.gemv_wide * 1e-9, m.add_small * 1e-9,
      m.add_small_bytes / 1024, m.add_large * 1e-9, m.add_large_bytes / 1024, m.window_flops * 1e-9,
      m.window_small_flops * 1e-9, m.window_small_size, m.window_small_size, m.grouped_rows,
      m.grouped_flops * 1e-9);
  p.vector_flops = {m.gemm_flops, m.gemm_flops, m.gemm_flops};
  p.matrix_flops = {0.0, 0.0, 0.0};
  p.mem_bandwidth = m.bandwidth;
  p.cache_bytes = m.cache_bytes;
  p.launch_overhead = m.node_overhead;
  p.fused_term_overhead = m.fused_term_overhead;
  p.mem_latency = 0;
  p.fusion_overlap = false;
  p.split_copies = true;
  p.broadcast_copies = true;  // its unfused broadcast writes the whole shape
  p.winograd = true;  // the executor's conv2d is im2col and a product: wino_conv2d is its Winograd
  // The reference executor's convolutions are NCHW (im2col over contiguous planes); it computes
  // a channels_last tensor in its logical order, so no layout is faster on it.
  p.conv_layout = {Layout::Contiguous, Layout::Contiguous, Layout::Contiguous};
  fit_gemv_curve(m.gemv_narrow, m.gemv_wide, p.gemv_bandwidth, p.gemv_half_width);
  fit_cache_tier(m.add_small, m.add_small_bytes, m.add_large, m.add_large_bytes, m.bandwidth,
                 p.cache_bandwidth, p.cache_resident_bytes);
  fit_window_overhead(m.window_flops, m.window_channels, m.window_size, m.window_small_flops,
                      m.window_small_channels, m.window_small_size, p.window_flops,
                      p.window_plane_overhead);
  p.gemm_half_rows = fit_gemm_half_rows(m.gemm_flops, m.grouped_flops, m.grouped_rows);
  p.weights.exp = std::max(m.exp_weight, 1.0);
  p.weights.tanh = std::max(m.tanh_weight, 1.0);
  p.weights.div = std::max(m.div_weight, 1.0);
  p.weights.rsqrt = std::max(m.rsqrt_weight, 1.0);
  p.weights.sigmoid = p.weights.exp + p.weights.add + p.weights.div;
  p.weights.gelu = p.weights.tanh + 8.0;
  p.group_overhead = fit_group_overhead(p, m.group_small_flops, m.group_small_channels,
                                        m.group_small_size, m.group_small_rows);
  validate(p);
  return p;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_MEASURE_HOST_H
