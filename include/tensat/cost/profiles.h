// The built-in device profiles (datasheet figures, each with its source) by name: find_profile,
// profile_names, and resolve_profile (a built-in name or a JSON file).
#ifndef TENSAT_COST_PROFILES_H
#define TENSAT_COST_PROFILES_H

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/cost/device_profile.h"
#include "tensat/cost/profile_json.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

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

#endif  // TENSAT_COST_PROFILES_H
