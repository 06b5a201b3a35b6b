// Fitting a GPU profile to measured kernels (tensat/exec/calibrate_device.h), without a GPU:
// measurements made from known parameters are fitted back to them, the fitted profile predicts
// the measured contractions, and the recorded measurements of a real GPU refit to the profile
// of record committed beside them.
#include <catch2/catch.hpp>

#include "support/skip.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <tensat/tensor.h>
#include <tensat/exec/calibrate_device.h>

using namespace tensat::tensor;

namespace {

constexpr double kPeak = 50e12, kHalf = 1e9, kKernel = 2.5e-6, kBandwidth = 4e12;
constexpr double kConvPeak = 5e12, kConvHalf = 2e7;  // 3x3 convolutions: their own, slower curve

/// The seconds a product of `flops` takes on the synthetic device: kernel + (F + h) / P.
double synthetic_seconds(double flops) { return kKernel + (flops + kHalf) / kPeak; }
/// The seconds a 3x3 convolution of `flops` takes on it.
double synthetic_conv_seconds(double flops) { return kKernel + (flops + kConvHalf) / kConvPeak; }

ContractionSample sample(const std::string& what, double flops) {
  return {what, flops, synthetic_seconds(flops)};
}

DeviceMeasurements synthetic() {
  DeviceMeasurements m;
  m.device = "synthetic";
  m.kernel_seconds = kKernel;
  m.bandwidth = kBandwidth;
  // Products of 64x1024x1024 and the like, and 3x3 convolutions of 32 channels on 56x56 and the
  // like (their flops as calibrate counts them).
  for (double flops :
       {2.0 * 64 * 1024 * 1024, 2.0 * 1024 * 14 * 14 * 1024, 2.0 * 2048 * 2048 * 2048})
    m.products.push_back(sample("p", flops));
  for (double flops :
       {2.0 * 32 * 56 * 56 * 32 * 9, 2.0 * 128 * 28 * 28 * 128 * 9, 2.0 * 512 * 14 * 14 * 512 * 9})
    m.convolutions.push_back({"c", flops, synthetic_conv_seconds(flops)});
  m.depthwise = {"depthwise", 2.0 * 128 * 56 * 56 * 9, kKernel + 2.0 * 128 * 56 * 56 * 9 / 2e12};
  m.grouped_rows = 8;
  const double grouped_flops = 2.0 * 256 * 28 * 28 * 8 * 9;
  // Half the convolutions' peak: gemm_half_rows = 8.
  m.grouped = {"grouped", grouped_flops, kKernel + 2 * grouped_flops / kConvPeak};
  return m;
}

}  // namespace

TEST_CASE(
    "calibrate_device: the contraction curve fitted to exact samples is the one they came from") {
  const DeviceMeasurements m = synthetic();
  const ContractionCurve c = fit_contraction_curve(m.products, kKernel);
  CHECK(c.peak == Approx(kPeak).epsilon(1e-9));
  CHECK(c.half_flops == Approx(kHalf).epsilon(1e-6));
  const ContractionCurve conv = fit_contraction_curve(m.convolutions, kKernel);
  CHECK(conv.peak == Approx(kConvPeak).epsilon(1e-9));
  CHECK(conv.half_flops == Approx(kConvHalf).epsilon(1e-6));
}

TEST_CASE(
    "calibrate_device: a curve that would need a negative fixed cost goes through the origin") {
  // Every sample at exactly 40 TFLOP/s plus less than the kernel cost: no fixed cost is left.
  std::vector<ContractionSample> samples;
  for (double f : {1e8, 1e9, 1e10}) samples.push_back({"c", f, f / 40e12 + 1e-6});
  const ContractionCurve c = fit_contraction_curve(samples, 2e-6);
  CHECK(c.half_flops == 0);
  CHECK(c.peak > 0);
}

TEST_CASE("calibrate_device: too few usable samples are a ProfileError") {
  CHECK_THROWS_AS(fit_contraction_curve({}, 0), ProfileError);
  CHECK_THROWS_AS(fit_contraction_curve({{"a", 1e9, 1e-3}, {"b", 1e9, 2e-3}}, 0),
                  ProfileError);  // one size
  // Samples no longer than the kernel's fixed cost carry no rate.
  CHECK_THROWS_AS(fit_contraction_curve({{"a", 1e9, 1e-6}, {"b", 2e9, 1e-6}}, 2e-6), ProfileError);
  DeviceMeasurements m = synthetic();
  m.kernel_seconds = 0;
  CHECK_THROWS_AS(device_profile_from(find_profile("h100-sxm"), m), ProfileError);
}

TEST_CASE(
    "calibrate_device: the fitted profile sets what the measurements say and keeps the rest of its "
    "base") {
  const DeviceProfile base = find_profile("h200-sxm");
  const DeviceProfile p = device_profile_from(base, synthetic());
  CHECK(p.name == "h200-sxm-calibrated");
  CHECK(p.launch_overhead == kKernel);
  CHECK(p.mem_latency == 0);
  CHECK(p.mem_bandwidth == kBandwidth);
  CHECK(p.eta_c == 1.0);
  CHECK(p.eta_m == 1.0);
  CHECK(p.vector_flops[0] == Approx(kPeak));
  CHECK(p.gemm_half_flops == Approx(kHalf).epsilon(1e-6));
  CHECK(p.conv_flops == Approx(kConvPeak).epsilon(1e-9));
  CHECK(p.conv_half_flops == Approx(kConvHalf).epsilon(1e-6));
  CHECK(p.window_flops == Approx(2e12));
  CHECK(p.gemm_half_rows == Approx(8.0).epsilon(1e-6));
  CHECK_FALSE(p.fusion_overlap);
  CHECK(p.split_copies);
  // The peaks not measured keep what base predicted (base's eta_c folded in).
  CHECK(p.matrix_flops[1] == Approx(base.matrix_flops[1] * base.eta_c));
  CHECK(p.vector_flops[2] == Approx(base.vector_flops[2] * base.eta_c));
  CHECK(p.conv_layout == base.conv_layout);
  CHECK(p.weights == base.weights);
  CHECK(profile_from_json(profile_to_json(p)) == p);
}

TEST_CASE(
    "calibrate_device: the fitted profile predicts the measured convolutions, each on its curve") {
  const DeviceProfile p = device_profile_from(find_profile("h100-sxm"), synthetic());
  for (std::int64_t k : {1, 3})
    for (auto [channels, size] :
         {std::pair<std::int64_t, std::int64_t>{64, 56}, {128, 28}, {512, 7}}) {
      INFO(k << "x" << k << ", " << channels << " channels, " << size << "x" << size);
      Graph g;
      const Tensor x = g.input("x", {1, channels, size, size});
      g.output(g.conv2d(x, g.weight("w", {channels, channels, k, k}), 1, 1, Padding::Same));
      const double flops = 2.0 * static_cast<double>(channels * size * size * channels * k * k);
      const ProgramTime t = program_breakdown(g.program(), p);
      // launch + (F + h) / P on the products' curve (1x1) or the convolutions' (3x3): what was
      // measured (compute-bound at these sizes but the 1x1 on 56x56, whose bytes take longer).
      const double expected = k == 1 ? synthetic_seconds(flops) : synthetic_conv_seconds(flops);
      if (t.kernels.at(0).time.bound == Bound::Compute)
        CHECK(t.total_us * 1e-6 == Approx(expected).epsilon(1e-6));
      CHECK(t.total_us * 1e-6 >= Approx(expected).epsilon(1e-6));
    }
  // A grouped convolution of 8 channels a group runs at half the convolutions' peak, with no
  // fill (its fixed cost is the kernel's).
  Graph g;
  g.output(
      g.conv2d(g.input("x", {1, 256, 28, 28}), g.weight("w", {256, 8, 3, 3}), 1, 1, Padding::Same));
  const double flops = 2.0 * 256 * 28 * 28 * 8 * 9;
  CHECK(program_breakdown(g.program(), p).total_us * 1e-6 ==
        Approx(kKernel + 2 * flops / kConvPeak).epsilon(1e-6));
}

TEST_CASE(
    "calibrate_device: measurements read back from their JSON, and bad JSON is a ProfileError") {
  const DeviceMeasurements m = synthetic();
  CHECK(measurements_from_json(measurements_to_json(m).dump()) == m);
  CHECK_THROWS_AS(measurements_from_json("{"), ProfileError);
  CHECK_THROWS_AS(measurements_from_json("[]"), ProfileError);
  CHECK_THROWS_AS(measurements_from_json(R"({"kernel_seconds": 1e999})"), ProfileError);
  nlohmann::json doc = nlohmann::json::parse(measurements_to_json(m).dump());
  doc["convolutions"][1]["seconds"] = -1.0;
  try {
    (void)measurements_from_json(doc.dump());
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.field() == "convolutions[1].seconds");
  }
}

TEST_CASE(
    "calibrate_device: the matrix-vector curve fitted to exact samples is the one they came from") {
  constexpr double kGemvBandwidth = 2.5e12, kHalfWidth = 700;
  std::vector<GemvSample> samples;
  for (auto [k, n] :
       {std::pair<double, double>{512, 512}, {1024, 1024}, {1024, 4096}, {4096, 4096}}) {
    GemvSample s{"g", k, n, 0};
    s.seconds = kKernel + s.bytes() / (kGemvBandwidth * n / (n + kHalfWidth));
    samples.push_back(s);
  }
  const GemvCurve c = fit_gemv_curve(samples, kKernel);
  CHECK(c.bandwidth == Approx(kGemvBandwidth).epsilon(1e-9));
  CHECK(c.half_width == Approx(kHalfWidth).epsilon(1e-6));
  // One width only, or samples no longer than a kernel: nothing to fit.
  CHECK_THROWS_AS(fit_gemv_curve({samples[0]}, kKernel), ProfileError);
  CHECK_THROWS_AS(fit_gemv_curve(samples, 1.0), ProfileError);

  // The profile prices a [1, K] x [K, N] product as those bytes at that rate, not on the
  // products' curve (whose fixed cost, 20 us here, a matrix-vector product does not pay).
  DeviceMeasurements m = synthetic();
  m.gemv = samples;
  const DeviceProfile p = device_profile_from(find_profile("h200-sxm"), m);
  REQUIRE(p.gemm_half_flops > 0);
  CHECK(p.gemv_bandwidth == Approx(kGemvBandwidth).epsilon(1e-9));
  for (const GemvSample& s : samples) {
    Graph g;
    const auto k = static_cast<std::int64_t>(s.k), n = static_cast<std::int64_t>(s.n);
    g.output(g.matmul(g.input("x", {1, k}), g.weight("w", {k, n})));
    // Weights larger than half the cache, so the matrix streams from memory.
    DeviceProfile streamed = p;
    streamed.weights_cached = false;
    CHECK(program_time(g.program(), streamed) * 1e-6 == Approx(s.seconds).epsilon(1e-9));
  }
  // A product of two rows is a GEMM again: the curve's fixed cost applies.
  Graph g;
  g.output(g.matmul(g.input("x", {2, 1024}), g.weight("w", {1024, 1024})));
  CHECK(program_time(g.program(), p) * 1e-6 >= kHalf / kPeak);
}

TEST_CASE("calibrate_device: timed probes give the profile its corrections and error factors") {
  const DeviceProfile base = find_profile("h200-sxm");
  DeviceMeasurements m = synthetic();
  const DeviceProfile kernels = device_kernels_profile_from(base, m);
  CHECK_FALSE(kernels.knows_its_error());
  CHECK_FALSE(device_profile_from(base, m).knows_its_error());  // no probes: no error known
  // Every probe measured as the kernels' profile predicts, but matmuls 1.3x slower and one
  // elementwise probe 3x slower than predicted, each timed whole with a run's fixed cost of 4 us
  // (what a program of one kernel took beyond that kernel), which the fit takes off.
  m.run_seconds = kKernel + 4e-6;
  const std::vector<Probe> probes = device_uncertainty_probes(kernels);
  REQUIRE(probes.size() > uncertainty_probes(kernels).size());
  const std::string odd = "ewmul [1, 4096]";
  bool found_odd = false;
  for (const Probe& probe : probes) {
    double seconds = program_time(probe.program, profile_for(kernels, probe.program)) * 1e-6;
    if (probe.scale == static_cast<std::size_t>(Op::MatMul)) seconds *= 1.3;
    if (probe.name == odd) {
      seconds *= 3.0;
      found_odd = true;
    }
    m.probes.push_back({probe.name, seconds + 4e-6, {}});
  }
  REQUIRE(found_odd);
  m.probes.push_back({"a probe no longer built", 1.0, {}});                      // ignored
  m.probes.push_back({"a probe the executor could not time", 0.0, "a reason"});  // not fitted
  std::vector<Residual> residuals;
  const DeviceProfile p = device_profile_from(base, m, &residuals);
  CHECK(p.knows_its_error());
  CHECK(residuals.size() <= probes.size());
  CHECK(residuals.size() + 3 >= probes.size());  // at most the fused probes left out
  CHECK(p.time_scale[static_cast<std::size_t>(Op::MatMul)] == Approx(1.3).epsilon(1e-6));
  CHECK(p.systematic_error[static_cast<std::size_t>(CostClass::Contraction)] ==
        Approx(1.0).margin(1e-6));
  // ewmul's two probes disagree 3x: no correction, and the class's scatter shows it.
  CHECK(p.time_scale[static_cast<std::size_t>(Op::EwMul)] == 1.0);
  CHECK(p.scatter_error[static_cast<std::size_t>(CostClass::Elementwise)] > 1.3);
  CHECK(p.kind_scatter[static_cast<std::size_t>(Op::EwMul)] > 1.3);
  // The measurements, probes and matrix-vector products with them, read back from JSON.
  m.gemv.push_back({"g", 1024, 1024, 5e-6});
  CHECK(measurements_from_json(measurements_to_json(m).dump()) == m);
  nlohmann::json doc = nlohmann::json::parse(measurements_to_json(m).dump());
  doc["probes"][0]["seconds"] = "fast";
  try {
    (void)measurements_from_json(doc.dump());
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.field() == "probes[0].seconds");
  }
}

TEST_CASE(
    "calibrate_device: the H200 profile of record is the fit of the measurements committed beside "
    "it") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(__FILE__).parent_path().parent_path() / "bench" / "profiles";
  const auto read = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const DeviceMeasurements m = measurements_from_json(read(dir / "h200-measurements.json"));
  const DeviceProfile recorded = profile_from_json(read(dir / "h200-calibrated.json"));
  CHECK(device_profile_from(find_profile("h200-sxm"), m) == recorded);
  // onnxruntime's CPU kernels on one thread (bench/ort/measure.js), fitted over onnxruntime-cpu.
  const DeviceProfile ort = profile_from_json(read(dir / "onnxruntime-cpu-calibrated.json"));
  CHECK(device_profile_from(
            find_profile("onnxruntime-cpu"),
            measurements_from_json(read(dir / "onnxruntime-cpu-measurements.json"))) == ort);
  CHECK(ort.runtime_fusion);
  // What the fit found there, in the ranges the measurements show: a 2048^3 product at 50
  // TFLOP/s, 3x3 convolutions of 231 MFLOP at 4-8 TFLOP/s, a kernel's fixed cost of 1-2 us.
  CHECK((recorded.vector_flops[0] > 30e12 && recorded.vector_flops[0] < 67e12));
  CHECK((recorded.conv_flops > 0 && recorded.conv_flops < recorded.vector_flops[0]));
  CHECK((recorded.launch_overhead > 0.5e-6 && recorded.launch_overhead < 5e-6));
  CHECK_FALSE(recorded.fusion_overlap);
}
