// The seven benchmark models, optimized (default options, the roofline cost on h100-sxm with
// fusion, and on a one-core CPU profile like the ones calibrate_host measures, with fusion),
// compute what the originals compute: checked by the reference executor on deterministic random
// inputs and weights at the models' real sizes. Slow (label `slow`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// A profile like calibrate_host's on a one-core VM (fixed numbers: tests never depend on a
/// measurement): 35 GFLOP/s, 12.7 GB/s, 0.1 us per node, fused kernels in sequential phases,
/// splits copied, the Winograd rule offered.
DeviceProfile host_like() {
  DeviceProfile p = find_profile("xla-cpu-default");
  p.name = "host-like";
  p.vector_flops = {35e9, 35e9, 35e9};
  p.mem_bandwidth = 12.7e9;
  p.launch_overhead = 1e-7;
  p.fusion_overlap = false;
  p.split_copies = true;
  p.winograd = true;
  return p;
}

/// `atol`: the absolute tolerance of `verify` (rtol stays 1e-4). `profile`: with fusion, the
/// roofline cost on this profile (default h100-sxm).
OptimizeResult verify_program(const std::string& name, const RecExpr<TensorNode>& program,
                              bool fusion, double atol = 1e-5,
                              const DeviceProfile& profile = find_profile("h100-sxm")) {
  OptimizeOptions options;
  if (fusion) {
    options.profile = profile;
    options.fusion = true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const OptimizeResult result = optimize(program, options);
  const auto t1 = std::chrono::steady_clock::now();
  const VerifyResult r = verify(program, result.optimized, 1, 1e-4, atol);
  const auto t2 = std::chrono::steady_clock::now();
  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  WARN(name << (fusion ? " (" + profile.name + ", fusion)" : std::string(" (default)"))
            << ": optimize " << secs(t0, t1) << " s, verify " << secs(t1, t2) << " s, ops "
            << count_ops(program) << " -> " << count_ops(result.optimized) << "; " << r.message);
  INFO(r.message);
  CHECK(r.ok);
  // BERT has no normalization: with random weights its attention products (cubic in the
  // activations per layer) overflow f32 within 8 layers, so its outputs are not finite and its
  // check is vacuous. Every other model must produce finite outputs.
  if (name != "bert") CHECK(r.nonfinite == 0);
  return result;
}

/// The largest magnitude among the outputs of `program` (on the bindings `verify` uses).
float output_scale(const RecExpr<TensorNode>& program) {
  float scale = 0;
  for (const HostTensor& t : execute(program, random_bindings(program, 1)))
    for (float v : t.data)
      if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  return scale;
}

/// A model's atol: 1e-5, or 2e-6 of its largest output magnitude when that is larger. A deep
/// model's outputs carry rounding errors of the order of its larger values (sums that cancel
/// keep the error of their terms), so an output element near zero may differ by more than 1e-5
/// between two correct programs that group their sums differently (NasNet-A: outputs up to 13,
/// an element of 1e-3 off by 1.1e-5 when the convolutions are computed in column blocks).
OptimizeResult verify_model(const std::string& name, bool fusion,
                            const DeviceProfile& profile = find_profile("h100-sxm")) {
  const RecExpr<TensorNode> program = models::build_model(name).program();
  return verify_program(name, program, fusion,
                        std::max(1e-5, 2e-6 * static_cast<double>(output_scale(program))), profile);
}

}  // namespace

TEST_CASE("models verify: optimized programs compute the originals (default options)", "[slow]") {
  for (std::string_view name : models::model_names()) verify_model(std::string(name), false);
}

TEST_CASE("models verify: optimized programs compute the originals (h100-sxm, fusion)", "[slow]") {
  for (std::string_view name : models::model_names()) verify_model(std::string(name), true);
}

TEST_CASE("models verify: optimized programs compute the originals (one-core CPU profile, fusion)",
          "[slow]") {
  // The kind of programs executor_bench times: fused loops, and contraction epilogues (run in
  // place) where the model still finds one worth its product's round trip through memory.
  // With the Winograd rule: VGG-19's, SqueezeNet's and Inception-v3's 3x3 stride-1 convolutions
  // of one group run as wino_conv2d.
  for (std::string_view name : models::model_names()) {
    const OptimizeResult r = verify_model(std::string(name), true, host_like());
    CHECK(r.winograd_rules);
    std::size_t winograd = 0;
    for (std::size_t i = 0; i < r.optimized.size(); ++i)
      winograd += r.optimized[Id(i)].op() == Op::WinoConv2d;
    INFO(name << ": " << winograd << " wino_conv2d");
    if (name == "vgg19" || name == "squeezenet" || name == "inceptionv3") CHECK(winograd > 0);
  }
}

TEST_CASE("models verify: NasRNN extracted exactly, wide products merged, computes the original",
          "[slow]") {
  // With a matrix-vector curve (products of wide matrices stream faster, as calibrate_host
  // measures) the exact extraction picks NasRNN's products merged by matmul-share-lhs-all.
  DeviceProfile profile = host_like();
  profile.gemv_bandwidth = 25e9;
  profile.gemv_half_width = 1000;
  OptimizeOptions options;
  options.profile = profile;
  options.fusion = true;
  options.extractor = TensorExtractor::Ilp;
  options.ilp.time_limit_seconds = 10;
  const RecExpr<TensorNode> program = models::nasrnn().program();
  const OptimizeResult result = optimize(program, options);
  std::int64_t widest = 0;
  const std::vector<TensorInfo> infos = check_program(result.optimized);
  for (std::size_t i = 0; i < result.optimized.size(); ++i)
    if (result.optimized[Id(i)].op() == Op::MatMul && !infos[i].weight_only)
      widest = std::max(widest, infos[i].dims.back());
  WARN("nasrnn (exact extraction): predicted " << result.cost_before << " -> " << result.cost_after
                                               << " us, widest product " << widest << " columns");
  CHECK(result.cost_after < result.cost_before);
  const VerifyResult r = verify(program, result.optimized, 1, 1e-4, 1e-5);
  INFO(r.message);
  CHECK(r.ok);
  CHECK(r.nonfinite == 0);
}

TEST_CASE(
    "models verify: programs relaid out channels_last compute the originals (xeon-spr-56c, fusion)",
    "[slow]") {
  // The CPU profile's convolutions are channels_last: optimize adds the layout rules, and the
  // convolutional models come back with relayouts around channels_last stages.
  const DeviceProfile xeon = find_profile("xeon-spr-56c");
  for (std::string_view name : models::model_names()) {
    const RecExpr<TensorNode> program = models::build_model(std::string(name)).program();
    if (!has_foreign_layout_convolution(program, xeon)) continue;
    const OptimizeResult result = verify_model(std::string(name), true, xeon);
    INFO(name);
    CHECK(result.layout_rules);
    CHECK(op_histogram(result.optimized)[static_cast<std::size_t>(Op::Relayout)] >= 2);
  }
}

TEST_CASE("models verify: BERT shortened to one and two layers stays finite and is verified",
          "[slow]") {
  // The same layers as the full model (the rewrites found are per layer), few enough that the
  // values stay finite, so the comparison says something for BERT too.
  for (bool fusion : {false, true})
    verify_program("bert-1-layer", models::bert(1).program(), fusion);
  // With two layers the values reach ~1e6 and the attention sums cancel: an element's rounding
  // error then scales with the tensor's magnitude, not its own (a product regrouped by a merged
  // matmul is off by ~1e-6 of max |expected| where the sum cancels to ~10). So the absolute
  // tolerance is 1e-5 of that magnitude; a wrong program is off by O(max |expected|).
  const RecExpr<TensorNode> two = models::bert(2).program();
  const HostTensor expected = execute(two, random_bindings(two, 1)).at(0);
  float scale = 0;
  for (float v : expected.data) scale = std::max(scale, std::fabs(v));
  REQUIRE(std::isfinite(scale));
  REQUIRE(scale > 1e3f);
  for (bool fusion : {false, true}) verify_program("bert-2-layers", two, fusion, 1e-5 * scale);
}
