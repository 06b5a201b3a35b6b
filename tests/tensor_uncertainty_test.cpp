// The cost model's own error (tensat/cost/uncertainty.h): kernel classes, the worst-case gain
// of a change, and `optimize`'s do-no-harm extraction, which keeps only the changes whose gain
// survives the profile's error factors.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/calibrate.h>
#include <tensat/cost/uncertainty.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

DeviceProfile with_uncertainty(DeviceProfile p, double systematic, double scatter) {
  p.systematic_error.fill(systematic);
  p.scatter_error.fill(scatter);
  return p;
}

/// Two products of one input, each followed by its activation: what the fold and merge rules
/// can shorten (an activation into its product, the two products into one).
RecExpr<TensorNode> two_heads() {
  Graph g;
  const Tensor x = g.input("x", {64, 256});
  const Tensor a = g.relu(g.matmul(x, g.weight("w1", {256, 256})));
  const Tensor b = g.relu(g.matmul(x, g.weight("w2", {256, 256})));
  g.output(g.ewadd(a, b));
  return g.program();
}

}  // namespace

TEST_CASE("uncertainty: every operator has a kernel class, a depthwise convolution a window one") {
  OpWork plain, windowed, sized, gemv;
  windowed.depthwise = true;
  windowed.compute_rate = 1e9;
  sized.compute_rate = 1e12;  // a GPU's convolution at its size's rate: still a contraction
  gemv.gemv = true;
  CHECK(cost_class(Op::MatMul, plain) == CostClass::Contraction);
  CHECK(cost_class(Op::Conv2d, plain) == CostClass::Contraction);
  CHECK(cost_class(Op::Conv2d, windowed) == CostClass::Window);
  CHECK(cost_class(Op::Conv2d, sized) == CostClass::Contraction);
  CHECK(kernel_kind(Op::Conv2d, windowed.own_form(), false) == kDepthwiseScale);
  CHECK(kernel_kind(Op::Conv2d, sized.own_form(), false) == static_cast<std::size_t>(Op::Conv2d));
  CHECK(cost_class(Op::MatMul, gemv) == CostClass::Contraction);
  CHECK(kernel_kind(Op::MatMul, gemv.own_form(), false) == kGemvScale);
  CHECK(time_scale_name(kGemvScale) == "gemv");
  CHECK(cost_class(Op::PoolAvg, plain) == CostClass::Window);
  CHECK(cost_class(Op::Relu, plain) == CostClass::Elementwise);
  CHECK(cost_class(Op::BatchNorm, plain) == CostClass::Elementwise);
  CHECK(cost_class(Op::Transpose, plain) == CostClass::Movement);
  CHECK(cost_class(Op::Relayout, plain) == CostClass::Movement);
  CHECK(cost_class(Op::LayerNorm, plain) == CostClass::Reduction);
  CHECK(cost_class(Op::Fused, plain) == CostClass::Fused);
  for (std::size_t i = 0; i < kNumCostClasses; ++i) CHECK_FALSE(kCostClassNames[i].empty());
}

TEST_CASE("uncertainty: the profile's error factors round-trip through JSON and are validated") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  CHECK_FALSE(p.knows_its_error());
  p.systematic_error = {1.25, 1.5, 1.1, 2.0, 1.3, 1.75};
  p.scatter_error = {1.5, 1.0, 1.0, 1.25, 1.0, 1.0};
  CHECK(p.knows_its_error());
  CHECK(profile_from_json(profile_to_json(p)) == p);
  CHECK(p.uncertainty_of(CostClass::Movement) == 2.5);

  p.kind_scatter[static_cast<std::size_t>(Op::MatMul)] = 1.1;  // a probed kind's own scatter
  CHECK(profile_from_json(profile_to_json(p)) == p);
  CHECK(p.uncertainty_of(CostClass::Contraction, static_cast<std::size_t>(Op::MatMul)) ==
        Approx(1.25 * 1.1));
  CHECK(p.uncertainty_of(CostClass::Contraction, static_cast<std::size_t>(Op::Conv2d)) ==
        Approx(1.25 * 1.5));
  p.kind_scatter[static_cast<std::size_t>(Op::MatMul)] = 0.5;
  CHECK_THROWS_AS(validate(p), ProfileError);
  p.kind_scatter[static_cast<std::size_t>(Op::MatMul)] = 0;

  p.scatter_error[2] = 0.9;  // a kernel cannot be predicted to within less than exactly
  try {
    validate(p);
    FAIL("a factor below 1 was accepted");
  } catch (const ProfileError& e) {
    CHECK(e.field() == "uncertainty.scatter.elementwise");
  }
  std::string text = profile_to_json(find_profile("xeon-spr-56c"));
  const auto at = text.find("\"contraction\": 1.0");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("\"contraction\": 1.0").size(), "\"contractoin\": 1.0");
  CHECK_THROWS_AS(profile_from_json(text), ProfileError);
}

TEST_CASE(
    "uncertainty: time a change removes from a class saves at least net / f, time it adds costs "
    "net * f") {
  Graph g;
  const Tensor x = g.input("x", {256, 256});
  const Tensor once = g.relu(x);
  g.output(g.relu(once));
  const RecExpr<TensorNode> original = g.program();
  Graph h;
  h.output(h.relu(h.input("x", {256, 256})));
  const RecExpr<TensorNode> shorter = h.program();

  const DeviceProfile exact = find_profile("xeon-spr-56c");
  const double relu_us = program_time(shorter, exact);
  REQUIRE(relu_us > 0);
  const GainBand same = gain_band(original, original, exact);
  CHECK(same.predicted_us == 0);
  CHECK(same.worst_case_us == 0);
  CHECK(same.removed_kernels + same.added_kernels == 0);

  const GainBand nominal = gain_band(original, shorter, exact);
  CHECK(nominal.predicted_us == Approx(relu_us));
  CHECK(nominal.worst_case_us == Approx(relu_us));
  CHECK(nominal.removed_kernels == 1);  // the shared first relu cancels
  CHECK(nominal.added_kernels == 0);

  const GainBand doubtful = gain_band(original, shorter, with_uncertainty(exact, 2.0, 1.0));
  CHECK(doubtful.predicted_us == Approx(relu_us));
  CHECK(doubtful.worst_case_us == Approx(relu_us / 2));
  CHECK(doubtful.band_us() == Approx(relu_us / 2));
  // A kernel's own scatter k is charged on top: t / s - t (1 - 1/k).
  CHECK(gain_band(original, shorter, with_uncertainty(exact, 2.0, 4.0)).worst_case_us ==
        Approx(relu_us / 2 - relu_us * 0.75));

  // The other way round the relu is added: its worst case is a loss of t * s + t (k - 1).
  const GainBand back = gain_band(shorter, original, with_uncertainty(exact, 2.0, 1.5));
  CHECK(back.added_kernels == 1);
  CHECK(back.worst_case_us == Approx(-2 * relu_us - 0.5 * relu_us));

  // Kernels of one class are netted (their error is common); classes are not.
  Graph t;
  const Tensor y = t.input("x", {256, 256});
  t.output(t.transpose(t.relu(y), {1, 0}));
  const RecExpr<TensorNode> moved = t.program();
  DeviceProfile p = exact;
  p.systematic_error[static_cast<std::size_t>(CostClass::Movement)] = 3.0;
  const double transpose_us = program_time(moved, exact) - relu_us;
  REQUIRE(transpose_us > 0);
  // original: relu, relu; moved: relu, transpose. Elementwise loses one relu (net +relu_us),
  // movement gains a transpose (net -transpose_us).
  const GainBand mixed = gain_band(original, moved, p);
  CHECK(mixed.removed_kernels == 1);
  CHECK(mixed.added_kernels == 1);
  CHECK(mixed.predicted_us == Approx(relu_us - transpose_us));
  CHECK(mixed.worst_case_us == Approx(relu_us - 3.0 * transpose_us));
}

TEST_CASE("uncertainty: one kind's kernels err together, different kinds independently") {
  Graph g;
  g.output(g.relu(g.relu(g.relu(g.input("x", {256, 256})))));
  Graph h;
  h.output(h.relu(h.input("x", {256, 256})));
  DeviceProfile p = find_profile("xeon-spr-56c");
  const double relu_us = program_time(h.program(), p);
  REQUIRE(relu_us > 0);
  p.scatter_error.fill(2.0);
  // Two relus removed: one kind, so their charges add (not √2 times one).
  const GainBand two = gain_band(g.program(), h.program(), p);
  REQUIRE(two.removed_kernels == 2);
  CHECK(two.worst_case_us == Approx(2 * relu_us - 2 * relu_us * 0.5));

  // A relu removed and a transpose added: two kinds, their charges combine in quadrature.
  Graph t;
  t.output(t.transpose(t.relu(t.input("x", {256, 256})), {1, 0}));
  Graph r;
  r.output(r.relu(r.relu(r.input("x", {256, 256}))));
  const double transpose_us = program_time(t.program(), p) - relu_us;
  REQUIRE(transpose_us > 0);
  p.scatter_error[static_cast<std::size_t>(CostClass::Elementwise)] = 1.5;
  const GainBand mixed = gain_band(r.program(), t.program(), p);
  REQUIRE(mixed.removed_kernels == 1);
  REQUIRE(mixed.added_kernels == 1);
  const double relu_charge = relu_us * (1 - 1 / 1.5), transpose_charge = transpose_us * 1.0;
  CHECK(mixed.worst_case_us ==
        Approx(relu_us - transpose_us -
               std::sqrt(relu_charge * relu_charge + transpose_charge * transpose_charge)));
  CHECK(mixed.worst_case_us > relu_us - transpose_us - relu_charge - transpose_charge);
}

TEST_CASE(
    "uncertainty: a kernel replaced by one of the same signature is no change for the error") {
  // conv2d + batchnorm against the same convolution on other weights (a batchnorm folded in).
  Graph g;
  const Tensor x = g.input("x", {1, 32, 28, 28});
  const Tensor c = g.conv2d(x, g.weight("w", {32, 32, 3, 3}), 1, 1, Padding::Same);
  const Tensor s = g.weight("s", {32});
  g.output(g.batchnorm(c, s, g.weight("b", {32}), g.weight("m", {32}), g.weight("v", {32})));
  Graph h;
  h.output(h.conv2d(h.input("x", {1, 32, 28, 28}), h.weight("w_folded", {32, 32, 3, 3}), 1, 1,
                    Padding::Same));

  DeviceProfile p = find_profile("xeon-spr-56c");
  const GainBand exact = gain_band(g.program(), h.program(), p);
  REQUIRE(exact.removed_kernels == 2);
  REQUIRE(exact.added_kernels == 1);
  const double batchnorm_us = exact.predicted_us;
  REQUIRE(batchnorm_us > 0);
  p.systematic_error.fill(1.5);
  p.scatter_error.fill(1.25);
  p.scatter_error[static_cast<std::size_t>(CostClass::Contraction)] =
      4.0;  // no say: the convolutions pair up
  CHECK(gain_band(g.program(), h.program(), p).worst_case_us ==
        Approx(batchnorm_us / 1.5 - batchnorm_us * 0.2));
}

TEST_CASE(
    "uncertainty: a kernel that took its epilogue in shares its error with the one it replaces") {
  // conv2d + relu against the convolution with its relu inside: the convolutions' flops differ
  // by the activation's, so they pair, and only the difference of their times is uncertain.
  Graph g;
  const Tensor x = g.input("x", {1, 32, 28, 28});
  g.output(g.relu(g.conv2d(x, g.weight("w", {32, 32, 3, 3}), 1, 1, Padding::Same)));
  Graph h;
  h.output(h.conv2d(h.input("x", {1, 32, 28, 28}), h.weight("w", {32, 32, 3, 3}), 1, 1,
                    Padding::Same, Activation::Relu));
  DeviceProfile p = find_profile("xeon-spr-56c");
  const GainBand exact = gain_band(g.program(), h.program(), p);
  REQUIRE(exact.removed_kernels == 2);
  REQUIRE(exact.added_kernels == 1);
  const double relu_us = program_time(g.program(), p) - program_time(h.program(), p) + 0.0;
  REQUIRE(exact.predicted_us == Approx(relu_us));
  p.scatter_error.fill(1.0);
  p.scatter_error[static_cast<std::size_t>(CostClass::Contraction)] = 4.0;
  // Without pairing the convolution's 4x would sink the gain; paired, its part of the band is
  // the two convolutions' difference.
  Graph c;
  c.output(
      c.conv2d(c.input("x", {1, 32, 28, 28}), c.weight("w", {32, 32, 3, 3}), 1, 1, Padding::Same));
  const double conv_us = program_time(c.program(), p);
  const double fused_conv_us = program_time(h.program(), p);
  const double relu_alone_us = relu_us - (conv_us - fused_conv_us);
  const double d = conv_us - fused_conv_us;
  const double expected = relu_alone_us + d - (d > 0 ? d * 0.75 : -d * 3.0);
  CHECK(gain_band(g.program(), h.program(), p).worst_case_us == Approx(expected));
  CHECK(gain_band(g.program(), h.program(), p).worst_case_us > 0);

  // Two convolutions merged into one of twice the flops do not pair: the whole of each is charged.
  Graph two;
  const Tensor y = two.input("x", {1, 32, 28, 28});
  const Tensor a = two.conv2d(y, two.weight("a", {32, 32, 1, 1}), 1, 1, Padding::Same);
  const Tensor b = two.conv2d(y, two.weight("b", {32, 32, 1, 1}), 1, 1, Padding::Same);
  two.output(two.ewadd(a, b));
  Graph merged;
  const Tensor z = merged.conv2d(merged.input("x", {1, 32, 28, 28}),
                                 merged.weight("ab", {64, 32, 1, 1}), 1, 1, Padding::Same);
  const auto [za, zb] = merged.split(z, 1, 32);
  merged.output(merged.ewadd(za, zb));
  const GainBand band = gain_band(two.program(), merged.program(), p);
  CHECK(band.worst_case_us < band.predicted_us - 0.5 * conv_us);
}

TEST_CASE("uncertainty: optimize keeps only the changes whose gain survives the profile's error") {
  const RecExpr<TensorNode> program = two_heads();
  OptimizeOptions options;
  options.node_limit = 5'000;
  options.iter_limit = 4;
  options.min_gain_percent = 0;  // any positive gain at worst (the floor is checked at the end)

  options.profile = find_profile("xeon-spr-56c");  // factors 1: the predicted times alone
  const OptimizeResult nominal = optimize(program, options);
  REQUIRE_FALSE(nominal.kept_original);
  REQUIRE(nominal.gain.predicted_us > 0);
  CHECK(nominal.gain.predicted_us == Approx(nominal.cost_before - nominal.cost_after));
  CHECK(nominal.gain.worst_case_us == Approx(nominal.gain.predicted_us));
  CHECK_FALSE(nominal.inside_error_band);

  // Factors so wide that no change can be told from noise: the original comes back.
  options.profile = with_uncertainty(find_profile("xeon-spr-56c"), 50.0, 50.0);
  const OptimizeResult doubtful = optimize(program, options);
  CHECK(doubtful.kept_original);
  CHECK(doubtful.inside_error_band);
  CHECK(doubtful.optimized == program);
  CHECK(doubtful.cost_after == doubtful.cost_before);

  // Each kernel's own error that wide, the class's none: folding an activation into its product
  // survives (the product pairs with the one it replaces, and a relu less is never slower),
  // merging the two products into one of twice the work does not.
  options.profile = with_uncertainty(find_profile("xeon-spr-56c"), 1.0, 50.0);
  const OptimizeResult scattered = optimize(program, options);
  REQUIRE_FALSE(scattered.kept_original);
  CHECK(scattered.gain.worst_case_us > 0);
  std::size_t products = 0, relus = 0;
  for (const TensorNode& n : scattered.optimized) {
    products += n.op() == Op::MatMul ? 1 : 0;
    relus += n.op() == Op::Relu ? 1 : 0;
  }
  CHECK(products == 2);
  CHECK(relus == 0);

  // The same profile with do_no_harm off: the predicted optimum, whatever the error.
  options.do_no_harm = false;
  const OptimizeResult reckless = optimize(program, options);
  CHECK_FALSE(reckless.kept_original);
  CHECK(reckless.cost_after == Approx(nominal.cost_after));

  // A moderate error: what is kept gains something even at its worst (a product with its
  // activation folded in nets against the product it replaces), and never more is predicted
  // than with the exact profile.
  options.do_no_harm = true;
  options.profile = with_uncertainty(find_profile("xeon-spr-56c"), 1.2, 1.05);
  const OptimizeResult guarded = optimize(program, options);
  REQUIRE_FALSE(guarded.kept_original);
  CHECK(guarded.gain.worst_case_us > 0);
  CHECK(guarded.gain.worst_case_us < guarded.gain.predicted_us);
  CHECK(guarded.cost_after >= nominal.cost_after * (1 - 1e-9));
  CHECK_NOTHROW(check_program(guarded.optimized));

  // A worst-case gain below min_gain_percent of the input's time keeps the input; 0 keeps any
  // positive gain.
  const double worst_percent = 100.0 * guarded.gain.worst_case_us / guarded.cost_before;
  REQUIRE(worst_percent > 0.5);
  options.min_gain_percent = worst_percent * 1.01;
  const OptimizeResult floored = optimize(program, options);
  CHECK(floored.kept_original);
  CHECK(floored.inside_error_band);
  CHECK(floored.optimized == program);
  options.min_gain_percent = worst_percent * 0.99;
  CHECK_FALSE(optimize(program, options).kept_original);
  options.min_gain_percent = 0;
  CHECK(optimize(program, options).gain.worst_case_us == Approx(guarded.gain.worst_case_us));
}

TEST_CASE(
    "uncertainty: calibration times probes of every class and sets factors from their residuals") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const auto probes = uncertainty_probes(p);
  std::array<std::size_t, kNumCostClasses> per_class{};
  std::array<std::size_t, kNumTimeScales> per_kind{};
  for (const Probe& probe : probes) {
    CHECK_NOTHROW(check_program(probe.program));
    per_class[static_cast<std::size_t>(probe.cls)]++;
    REQUIRE(probe.scale < kNumTimeScales);
    per_kind[probe.scale]++;
  }
  for (std::size_t k = 0; k < kNumTimeScales; ++k) {
    INFO("kind " << time_scale_name(k));
    CHECK(per_kind[k] != 1);  // a kind's factor needs two sizes at least
  }
  for (std::size_t c = 0; c < kNumCostClasses; ++c) {
    INFO("class " << kCostClassNames[c]);
    CHECK(per_class[c] >= 2);  // a spread needs two residuals at least
  }

  CalibrationOptions quick;
  quick.probe_passes = 1;
  quick.repetitions = 1;
  quick.min_scatter = 1.05;
  const std::vector<Residual> residuals = measure_uncertainty(p, quick);
  CHECK(residuals.size() >= probes.size() - 4);  // the fused probes may not all fuse
  for (const Residual& r : residuals) {
    INFO(r.name);
    CHECK((std::isfinite(r.log_ratio()) && r.predicted > 0 && r.measured > 0));
  }
  CHECK_NOTHROW(validate(p));
  for (std::size_t c = 0; c < kNumCostClasses; ++c) {
    INFO("class " << kCostClassNames[c]);
    CHECK(p.systematic_error[c] >= 1.0);
    CHECK(p.scatter_error[c] >= 1.05);
    // The factors span the residuals: every probe lies within systematic x scatter.
    for (const Residual& r : residuals)
      if (static_cast<std::size_t>(r.cls) == c) {
        CHECK(std::abs(r.log_ratio()) <=
              std::log(p.systematic_error[c] * p.scatter_error[c]) + 1e-9);
        // ... and within its own kind's bound, which is never wider than the class's.
        CHECK(p.kind_scatter[r.scale] >= 1.05);
        CHECK(p.kind_scatter[r.scale] <= p.scatter_error[c] + 1e-12);
        CHECK(std::abs(r.log_ratio()) <= std::log(p.uncertainty_of(r.cls, r.scale)) + 1e-9);
      }
  }
  CHECK(p.knows_its_error());
  // The corrections are what the kinds' probes agreed on; the profile reads back with them.
  for (std::size_t k = 0; k < kNumTimeScales; ++k)
    CHECK((std::isfinite(p.time_scale[k]) && p.time_scale[k] > 0));
  CHECK(profile_from_json(profile_to_json(p)) == p);
}

TEST_CASE(
    "uncertainty: a time scale multiplies its kind's kernels, in programs and e-graphs alike") {
  Graph g;
  const Tensor x = g.input("x", {64, 384});
  g.output(g.softmax(g.relu(x), 1));
  const RecExpr<TensorNode> program = g.program();
  DeviceProfile p = find_profile("xeon-spr-56c");
  const ProgramTime plain = program_breakdown(program, p);
  p.time_scale[static_cast<std::size_t>(Op::Softmax)] = 3.0;
  const ProgramTime scaled_time = program_breakdown(program, p);
  REQUIRE(plain.kernels.size() == 2);
  CHECK(scaled_time.kernels[0].time.total_us == plain.kernels[0].time.total_us);  // relu
  CHECK(scaled_time.kernels[1].time.total_us ==
        Approx(3 * plain.kernels[1].time.total_us));  // softmax
  TensorEGraph egraph;
  const Id root = egraph.add_expr(program);
  egraph.rebuild();
  const RooflineCost cost(egraph, p);
  const auto& cls = egraph[root];
  CHECK(cost(egraph.node(cls.nodes[0]), cls) == Approx(scaled_time.kernels[1].time.total_us));
  std::string text = profile_to_json(p);
  CHECK(text.find("\"softmax\": 3") != std::string::npos);
  const auto at = text.find("\"softmax\": 3");
  text.replace(at, 10, "\"softmaks\"");
  CHECK_THROWS_AS(profile_from_json(text), ProfileError);
}
