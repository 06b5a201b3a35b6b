// Calibrates a GPU profile for the roofline cost model from the CUDA executor's kernels
// (tensat/exec/calibrate_device.h), or refits one from recorded measurements without a GPU.
//
//   calibrate_device [--base NAME|FILE] [--measurements OUT.json] [PROFILE.json]
//   calibrate_device --from MEASUREMENTS.json [--base NAME|FILE] [PROFILE.json]
//
// --base: the datasheet profile whose f16/bf16 and matrix peaks, cache and weights are kept
// (default h100-sxm). Measuring needs a build with the CUDA executor and a visible GPU; --from
// refits anywhere. The profile goes to PROFILE.json or standard output; the measurements, one
// kernel a line, to standard error. Exit 0, 2 on bad arguments or input, 1 on a failure.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <tensat/exec/calibrate_device.h>
#ifdef TENSAT_HAS_CUDA
#include <tensat/exec/cuda_executor.h>
#include <tensat/cost/profiles.h>
#endif

namespace {

using namespace tensat::tensor;

void print(const DeviceMeasurements& m) {
  std::fprintf(stderr, "device:          %s\n", m.device.c_str());
  std::fprintf(stderr, "kernel:          %.2f us (relu of 256 floats)\n", m.kernel_seconds * 1e6);
  std::fprintf(stderr, "bandwidth:       %.0f GB/s (ewadd of 2^24 floats)\n", m.bandwidth * 1e-9);
  const auto line = [](const ContractionSample& s) {
    std::fprintf(stderr, "%-36s %10.2f us  %8.2f TFLOP/s\n", s.what.c_str(), s.seconds * 1e6,
                 s.seconds > 0 ? s.flops / s.seconds * 1e-12 : 0.0);
  };
  for (const ContractionSample& s : m.products) line(s);
  for (const ContractionSample& s : m.convolutions) line(s);
  line(m.depthwise);
  line(m.grouped);
  if (m.run_seconds > 0)
    std::fprintf(stderr, "run:             %.2f us (a program of one relu, whole)\n",
                 m.run_seconds * 1e6);
  for (const ProbeSeconds& p : m.probes)
    if (!p.error.empty())
      std::fprintf(stderr, "probe not timed: %s: %s\n", p.name.c_str(), p.error.c_str());
  for (const GemvSample& s : m.gemv)
    std::fprintf(stderr, "%-36s %10.2f us  %8.0f GB/s\n", s.what.c_str(), s.seconds * 1e6,
                 s.seconds > 0 ? s.bytes() / s.seconds * 1e-9 : 0.0);
}

void print(const std::vector<Residual>& residuals) {
  if (residuals.empty()) return;
  std::fprintf(stderr, "%-52s %-12s %12s %12s %8s\n", "probe", "class", "predicted us",
               "measured us", "ratio");
  for (const Residual& r : residuals)
    std::fprintf(stderr, "%-52s %-12s %12.2f %12.2f %8.2f\n", r.name.c_str(),
                 std::string(cost_class_name(r.cls)).c_str(), r.predicted * 1e6, r.measured * 1e6,
                 r.measured / r.predicted);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError("", "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string base_name = "h100-sxm", from, measurements_out, out;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--base" || arg == "--from" || arg == "--measurements") && i + 1 < argc) {
      (arg == "--base" ? base_name : arg == "--from" ? from : measurements_out) = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: calibrate_device [--base NAME|FILE] [--measurements OUT.json] [PROFILE.json]\n"
          "       calibrate_device --from MEASUREMENTS.json [--base NAME|FILE] [PROFILE.json]\n");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "calibrate_device: unknown option or missing value '%s' (try --help)\n",
                   std::string(arg).c_str());
      return 2;
    } else {
      out = std::string(arg);
    }
  }
  DeviceMeasurements m;
  DeviceProfile base;
  try {
    base = resolve_profile(base_name);
    if (!from.empty()) {
      m = measurements_from_json(read_file(from));
    } else {
#ifdef TENSAT_HAS_CUDA
      std::string why;
      if (!cuda_device_available(&why)) {
        std::fprintf(stderr, "calibrate_device: no GPU (%s); --from refits recorded measurements\n",
                     why.c_str());
        return 2;
      }
      CudaCalibrationOptions options;
      options.base = base;
      m = measure_cuda_device(options);
#else
      std::fprintf(stderr,
                   "calibrate_device: built without the CUDA executor; --from refits recorded "
                   "measurements\n");
      return 2;
#endif
    }
  } catch (const tensat::Error& e) {
    std::fprintf(stderr, "calibrate_device: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calibrate_device: internal error: %s\n", e.what());
    return 1;
  }
  print(m);
  try {
    if (!measurements_out.empty()) {
      std::ofstream file(measurements_out, std::ios::binary);
      file << measurements_to_json(m).dump(2) << "\n";
      if (!file) throw ProfileError("", "cannot write " + measurements_out);
    }
    std::vector<Residual> residuals;
    const DeviceProfile profile = device_profile_from(base, m, &residuals);
    print(residuals);
    if (out.empty()) {
      std::printf("%s\n", profile_to_json(profile).c_str());
    } else {
      save_profile(profile, out);
      std::fprintf(stderr, "wrote %s\n", out.c_str());
    }
  } catch (const tensat::Error& e) {
    std::fprintf(stderr, "calibrate_device: %s\n", e.what());
    return 2;
  }
  return 0;
}
