// measure_cuda_device and calibrate_cuda (tensat/exec/cuda_executor.h): chains of equal
// kernels built with Graph and timed on the CUDA executor; the fit is calibrate_device.h's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include <fmt/format.h>

#include <tensat/exec/calibrate_device.h>
#include <tensat/exec/cuda_executor.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/graph.h>

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace {

/// The next kernel of a chain: from the previous result and the kernel's index (for its weight's
/// name).
using Step = std::function<Tensor(Graph&, Tensor, std::size_t)>;

/// Seconds of one kernel: (t(2n) − t(n)) / n over chains of `step` from an input of `dims`;
/// t(2n) / 2n if the difference is not positive (noise on a kernel too short to see).
double kernel_seconds(const Dims& dims, const Step& step, const CudaCalibrationOptions& options) {
  const std::size_t n = std::max<std::size_t>(options.chain, 1);
  const auto chain_seconds = [&](std::size_t kernels) {
    Graph g;
    Tensor x = g.input("x", dims);
    for (std::size_t i = 0; i < kernels; ++i) x = step(g, x, i);
    g.output(x);
    const RecExpr<TensorNode> program = g.program();
    return measure_cuda_ms(program, random_bindings(program, 1),
                           std::max<std::size_t>(options.runs, 1), CudaTiming::graph) *
           1e-3;
  };
  const double once = chain_seconds(n);
  const double twice = chain_seconds(2 * n);
  const double d = (twice - once) / static_cast<double>(n);
  return d > 0 ? d : twice / static_cast<double>(2 * n);
}

ContractionSample matmul_sample(std::int64_t m, std::int64_t k,
                                const CudaCalibrationOptions& options) {
  const double seconds = kernel_seconds(
      {m, k},
      [k](Graph& g, Tensor x, std::size_t i) {
        return g.matmul(x, g.weight(fmt::format("w{}", i), {k, k}));
      },
      options);
  return {fmt::format("matmul {}x{}x{}", m, k, k), 2.0 * static_cast<double>(m * k * k), seconds};
}

/// A SAME, stride-1 convolution of `channels` channels on [1, channels, size, size] with a
/// `kernel` x `kernel` window in groups of `per_group` channels.
ContractionSample conv_sample(std::int64_t channels, std::int64_t size, std::int64_t kernel,
                              std::int64_t per_group, const CudaCalibrationOptions& options) {
  const double seconds = kernel_seconds(
      {1, channels, size, size},
      [=](Graph& g, Tensor x, std::size_t i) {
        return g.conv2d(x, g.weight(fmt::format("w{}", i), {channels, per_group, kernel, kernel}),
                        1, 1, Padding::Same);
      },
      options);
  const double flops =
      2.0 * static_cast<double>(channels * size * size * per_group * kernel * kernel);
  const std::string groups =
      per_group == channels ? std::string() : fmt::format(" in groups of {}", per_group);
  return {fmt::format("conv2d {}x{} C={} {}x{}{}", kernel, kernel, channels, size, size, groups),
          flops, seconds};
}

/// A matrix-vector product [1, k] x [k, n]: a chain going there and back ([1, k] -> [1, n] ->
/// [1, k] ...), each kernel the chain's time over its length (the two directions' bytes are
/// equal, and a chain of one shape cannot be built for n != k).
GemvSample gemv_sample(std::int64_t k, std::int64_t n, const CudaCalibrationOptions& options) {
  const double seconds = kernel_seconds(
      {1, k},
      [k, n](Graph& g, Tensor x, std::size_t i) {
        return g.matmul(x, g.weight(fmt::format("w{}", i), i % 2 == 0 ? Dims{k, n} : Dims{n, k}));
      },
      options);
  return {fmt::format("matmul 1x{}x{}", k, n), static_cast<double>(k), static_cast<double>(n),
          seconds};
}

}  // namespace

DeviceMeasurements measure_cuda_device(const CudaCalibrationOptions& options) {
  DeviceMeasurements m;
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&properties, device) == cudaSuccess)
    m.device = properties.name;
  m.kernel_seconds = kernel_seconds(
      {1, 256}, [](Graph& g, Tensor x, std::size_t) { return g.relu(x); }, options);
  const std::int64_t elements = std::int64_t{1} << 24;
  const double add = kernel_seconds(
      {elements},
      [elements](Graph& g, Tensor x, std::size_t i) {
        return g.ewadd(x, g.input(fmt::format("z{}", i), {elements}));
      },
      options);
  m.bandwidth = 12.0 * static_cast<double>(elements) / add;
  for (auto [rows, k] :
       {std::pair<std::int64_t, std::int64_t>{16, 512}, {64, 1024}, {1024, 1024}, {2048, 2048}})
    m.products.push_back(matmul_sample(rows, k, options));
  for (auto [channels, size] : {std::pair<std::int64_t, std::int64_t>{1024, 14}, {256, 56}})
    m.products.push_back(conv_sample(channels, size, 1, channels, options));
  for (auto [channels, size] : {std::pair<std::int64_t, std::int64_t>{32, 56},
                                {64, 56},
                                {128, 56},
                                {128, 28},
                                {256, 28},
                                {256, 14},
                                {512, 14},
                                {512, 7}})
    m.convolutions.push_back(conv_sample(channels, size, 3, channels, options));
  m.depthwise = conv_sample(128, 56, 3, 1, options);
  m.grouped_rows = 8;
  m.grouped = conv_sample(256, 28, 3, 8, options);
  for (auto [k, n] : {std::pair<std::int64_t, std::int64_t>{512, 512},
                      {1024, 1024},
                      {1024, 4096},
                      {2048, 2048},
                      {1024, 16384},
                      {4096, 4096}})
    m.gemv.push_back(gemv_sample(k, n, options));
  if (options.probes) {
    // The probes on the profile the kernels fit (their fused probes are what optimize fuses on
    // it), each a whole program with its weight-only subgraphs precomputed, as the models run.
    const DeviceProfile fitted = device_kernels_profile_from(options.base, m);
    const std::size_t runs = std::max<std::size_t>(options.runs, 1);
    {
      Graph g;
      g.output(g.relu(g.input("x", {1, 256})));
      const RecExpr<TensorNode> program = g.program();
      m.run_seconds =
          measure_cuda_ms(program, random_bindings(program, 1), runs, CudaTiming::graph) * 1e-3;
    }
    for (const Probe& probe : device_uncertainty_probes(fitted)) {
      try {
        const PrecomputedProgram pre =
            precompute_weights(probe.program, random_bindings(probe.program, 1));
        m.probes.push_back(
            ProbeSeconds{probe.name,
                         measure_cuda_ms(pre.program, pre.bindings, runs, CudaTiming::graph) * 1e-3,
                         {}});
      } catch (const ExecutionError& e) {
        // A probe the executor cannot run as a graph (the Winograd operators run through the
        // host): recorded with the reason, and not fitted.
        m.probes.push_back(ProbeSeconds{probe.name, 0.0, e.what()});
      }
    }
  }
  return m;
}

DeviceProfile calibrate_cuda(const DeviceProfile& base, const CudaCalibrationOptions& options) {
  CudaCalibrationOptions with_base = options;
  with_base.base = base;
  return device_profile_from(base, measure_cuda_device(with_base));
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat
