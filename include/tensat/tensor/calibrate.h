// calibrate_host: measures this machine (STREAM-triad bandwidth, Eigen GEMM FLOP/s, the relative
// cost of exp/tanh/divide/rsqrt against an add, the reference executor's fixed cost per node)
// and returns a DeviceProfile named "host".
#ifndef TENSAT_TENSOR_CALIBRATE_H
#define TENSAT_TENSOR_CALIBRATE_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <Eigen/Dense>
#include <fmt/format.h>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tensat/tensor/device_profile.h"
#include "tensat/tensor/executor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Sizes of the measurements. The defaults take about two seconds; tiny sizes give meaningless
/// but positive numbers quickly (what a test wants).
struct CalibrationOptions {
  /// Doubles per STREAM-triad array; 0: four times the last-level cache (at least 2^24).
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
};

/// What `measure_host` found.
struct HostMeasurements {
  double bandwidth = 0;       ///< bytes/s, STREAM triad a = b + s·c (24 bytes per element counted)
  double gemm_flops = 0;      ///< FLOP/s of C = A·B (2·n³ flops)
  double cache_bytes = 0;     ///< last-level cache reported by the OS (0 if unknown)
  double exp_weight = 0;      ///< time of y = exp(x) / time of y = x + z, per element
  double tanh_weight = 0;     ///< y = tanh(x) against the add
  double div_weight = 0;      ///< y = x / z against the add
  double rsqrt_weight = 0;    ///< y = rsqrt(x) against the add
  double node_overhead = 0;   ///< seconds per node of the reference executor (`execute`) on a tiny tensor
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

}  // namespace detail

/// The last-level cache size in bytes as the OS reports it: sysfs (what a virtual machine is
/// given), else sysconf (which may report the physical part); 0 if neither does.
[[nodiscard]] inline double host_cache_bytes() {
  for (const char* path : {"/sys/devices/system/cpu/cpu0/cache/index3/size", "/sys/devices/system/cpu/cpu0/cache/index2/size"}) {
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
  Eigen::ArrayXd a = Eigen::ArrayXd::Zero(n), b = Eigen::ArrayXd::Constant(n, 1.0), c = Eigen::ArrayXd::Constant(n, 2.0);
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
[[nodiscard]] inline double measure_elementwise_seconds(WeightedOp op, std::size_t elements, std::size_t passes,
                                                        int repetitions = 5) {
  const auto n = static_cast<Eigen::Index>(std::max<std::size_t>(elements, 1));
  const Eigen::ArrayXf x = Eigen::ArrayXf::Random(n);                       // [-1, 1]
  const Eigen::ArrayXf z = Eigen::ArrayXf::Random(n).abs() + 1.0f;          // [1, 2]
  Eigen::ArrayXf y(n);
  passes = std::max<std::size_t>(passes, 1);
  const double seconds = detail::best_seconds(repetitions, [&] {
    for (std::size_t p = 0; p < passes; ++p) {
      switch (op) {
        case WeightedOp::Add: y = x + z; break;
        case WeightedOp::Exp: y = x.exp(); break;
        case WeightedOp::Tanh: y = x.tanh(); break;
        case WeightedOp::Div: y = x / z; break;
        case WeightedOp::Rsqrt: y = z.rsqrt(); break;
      }
      detail::keep(static_cast<double>(y[static_cast<Eigen::Index>(p % static_cast<std::size_t>(n))]));
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

/// Runs every measurement.
[[nodiscard]] inline HostMeasurements measure_host(const CalibrationOptions& options = {}) {
  HostMeasurements m;
  m.cache_bytes = host_cache_bytes();
  std::size_t stream = options.stream_elements;
  if (stream == 0) stream = std::max<std::size_t>(static_cast<std::size_t>(4 * m.cache_bytes / 8), std::size_t{1} << 24);
  m.bandwidth = measure_triad_bandwidth(stream, options.repetitions);
  m.gemm_flops = measure_gemm_flops(options.gemm_size, options.repetitions);
  const auto time = [&](WeightedOp op) {
    return measure_elementwise_seconds(op, options.weight_elements, options.weight_passes, options.repetitions);
  };
  const double add = time(WeightedOp::Add);
  m.exp_weight = time(WeightedOp::Exp) / add;
  m.tanh_weight = time(WeightedOp::Tanh) / add;
  m.div_weight = time(WeightedOp::Div) / add;
  m.rsqrt_weight = time(WeightedOp::Rsqrt) / add;
  m.node_overhead = measure_node_overhead(options.overhead_nodes, options.repetitions);
  return m;
}

/// The "host" profile from measurements: a CPU (no memory latency, no matrix unit), the
/// executor's node overhead as the launch overhead, every vector peak the measured GEMM rate
/// (f16/bf16 are computed in f32), the triad bandwidth, the measured exp/tanh/div/rsqrt weights
/// (never below 1, an add), sigmoid = exp + 1 + div, gelu = tanh + 8, eta = alpha = 1; and the
/// reference executor's ways: fused kernels run in phases (`fusion_overlap` false: one thread
/// computes a product block, then its epilogue) and splits copy their parts (`split_copies`).
[[nodiscard]] inline DeviceProfile host_profile(const HostMeasurements& m) {
  DeviceProfile p;
  p.name = "host";
  p.kind = "cpu";
  p.description = fmt::format(
      "measured by calibrate_host: STREAM triad {:.1f} GB/s, Eigen GEMM {:.1f} GFLOP/s (one thread unless Eigen "
      "uses OpenMP), exp {:.2f} x add, executor node overhead {:.2f} us",
      m.bandwidth * 1e-9, m.gemm_flops * 1e-9, m.exp_weight, m.node_overhead * 1e6);
  p.vector_flops = {m.gemm_flops, m.gemm_flops, m.gemm_flops};
  p.matrix_flops = {0.0, 0.0, 0.0};
  p.mem_bandwidth = m.bandwidth;
  p.cache_bytes = m.cache_bytes;
  p.launch_overhead = m.node_overhead;
  p.mem_latency = 0;
  p.fusion_overlap = false;
  p.split_copies = true;
  p.weights.exp = std::max(m.exp_weight, 1.0);
  p.weights.tanh = std::max(m.tanh_weight, 1.0);
  p.weights.div = std::max(m.div_weight, 1.0);
  p.weights.rsqrt = std::max(m.rsqrt_weight, 1.0);
  p.weights.sigmoid = p.weights.exp + p.weights.add + p.weights.div;
  p.weights.gelu = p.weights.tanh + 8.0;
  validate(p);
  return p;
}

/// Measures this machine and returns its profile, named "host" (`host_profile(measure_host())`).
[[nodiscard]] inline DeviceProfile calibrate_host(const CalibrationOptions& options = {}) {
  return host_profile(measure_host(options));
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_CALIBRATE_H
