// Measures this machine for the roofline cost model: STREAM-triad bandwidth, Eigen GEMM FLOP/s,
// the exp/tanh/divide/rsqrt weights, the executor's fixed cost per node and its matrix-vector,
// add and depthwise-convolution rates, and writes a DeviceProfile named "host" as JSON, with the
// model's own error per kernel class from the residuals of probe programs (measure_uncertainty).
// A plain program (one measurement each, best of N runs), not Google Benchmark.
//
//   calibrate_host [--quick] [--repetitions N] [--gemm N] [PROFILE.json]
//
// Without PROFILE.json the profile goes to standard output; the measurements are printed on
// standard error. --quick uses small sizes (seconds become milliseconds, the numbers noisy).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <tensat/cost/profile_json.h>
#include <tensat/exec/calibrate.h>

#include "common/heap.h"

int main(int argc, char** argv) {
  cli::keep_freed_memory();  // the executor's adds measured as the benches run them
  using namespace tensat::tensor;
  CalibrationOptions options;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      options.stream_elements = std::size_t{1} << 22;
      options.gemm_size = 256;
      options.weight_passes = 32;
      options.repetitions = 2;
      options.overhead_nodes = 64;
      options.gemv_bytes = std::size_t{8} << 20;
      options.cache_passes = 4;
      options.window_passes = 2;
      options.window_small_passes = 8;
      options.grouped_passes = 1;
      options.probe_passes = 1;
      options.probe_rounds = 1;
    } else if ((arg == "--repetitions" || arg == "--gemm") && i + 1 < argc) {
      const int value = std::atoi(argv[++i]);
      if (value <= 0) {
        std::fprintf(stderr, "calibrate_host: %s wants a positive integer\n",
                     std::string(arg).c_str());
        return 2;
      }
      (arg == "--gemm" ? options.gemm_size : options.repetitions) = value;
    } else if (arg == "-h" || arg == "--help") {
      std::printf("usage: calibrate_host [--quick] [--repetitions N] [--gemm N] [PROFILE.json]\n");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "calibrate_host: unknown option '%s' (try --help)\n",
                   std::string(arg).c_str());
      return 2;
    } else {
      path = std::string(arg);
    }
  }
  try {
    const HostMeasurements m = measure_host(options);
    std::fprintf(
        stderr,
        "STREAM triad bandwidth: %.2f GB/s\n"
        "Eigen GEMM %dx%dx%d:    %.2f GFLOP/s\n"
        "last-level cache:       %.0f KiB\n"
        "weights (x add):        exp %.2f, tanh %.2f, div %.2f, rsqrt %.2f\n"
        "executor node overhead: %.3f us\n"
        "matrix-vector products: %.2f GB/s (N = 512), %.2f GB/s (N = 4096)\n"
        "executor adds:          %.2f GB/s over %.0f KiB, %.2f GB/s over %.0f KiB\n"
        "depthwise 3x3 conv:     %.2f GFLOP/s ([1, %lld, %lld, %lld]), %.2f GFLOP/s ([1, %lld, "
        "%lld, %lld])\n"
        "grouped 3x3 conv:       %.2f GFLOP/s (%.0f channels a group of [1, %lld, %lld, %lld])\n",
        m.bandwidth * 1e-9, options.gemm_size, options.gemm_size, options.gemm_size,
        m.gemm_flops * 1e-9, m.cache_bytes / 1024, m.exp_weight, m.tanh_weight, m.div_weight,
        m.rsqrt_weight, m.node_overhead * 1e6, m.gemv_narrow * 1e-9, m.gemv_wide * 1e-9,
        m.add_small * 1e-9, m.add_small_bytes / 1024, m.add_large * 1e-9, m.add_large_bytes / 1024,
        m.window_flops * 1e-9, static_cast<long long>(options.window_channels),
        static_cast<long long>(options.window_size), static_cast<long long>(options.window_size),
        m.window_small_flops * 1e-9, static_cast<long long>(options.window_small_channels),
        static_cast<long long>(options.window_small_size),
        static_cast<long long>(options.window_small_size), m.grouped_flops * 1e-9, m.grouped_rows,
        static_cast<long long>(options.grouped_channels),
        static_cast<long long>(options.grouped_size), static_cast<long long>(options.grouped_size));
    DeviceProfile profile = host_profile(m);
    const std::vector<Residual> residuals = measure_uncertainty(profile, options);
    std::fprintf(stderr,
                 "model error (measured / predicted on the probes, after the time scales):\n");
    for (const Residual& r : residuals)
      std::fprintf(stderr, "  %-12s %-44s %9.1f us / %9.1f us = %.2f\n",
                   std::string(cost_class_name(r.cls)).c_str(), r.name.c_str(), r.measured * 1e6,
                   r.predicted * 1e6, r.measured / r.predicted);
    for (std::size_t k = 0; k < kNumTimeScales; ++k)
      if (profile.time_scale[k] != 1.0 || profile.kind_scatter[k] != 0)
        std::fprintf(stderr, "  kind         %-20s time scale x%.2f, scatter x%.2f\n",
                     std::string(time_scale_name(k)).c_str(), profile.time_scale[k],
                     profile.kind_scatter[k]);
    for (std::size_t c = 0; c < kNumCostClasses; ++c)
      std::fprintf(stderr, "  %-12s systematic x%.2f, scatter x%.2f\n",
                   std::string(kCostClassNames[c]).c_str(), profile.systematic_error[c],
                   profile.scatter_error[c]);
    if (path.empty()) {
      std::printf("%s\n", profile_to_json(profile).c_str());
    } else {
      save_profile(profile, path);
      std::fprintf(stderr, "wrote %s\n", path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calibrate_host: %s\n", e.what());
    return 1;
  }
  return 0;
}
