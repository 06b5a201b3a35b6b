// The cost model's own error, measured: probe programs of every kind of kernel timed against the
// profile's prediction (uncertainty_probes, measure_uncertainty), and the per-kind time scales
// and per-class error factors fitted to them (fit_uncertainty) that optimize's guard reads.
#ifndef TENSAT_EXEC_UNCERTAINTY_PROBES_H
#define TENSAT_EXEC_UNCERTAINTY_PROBES_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/cost/uncertainty.h"
#include "tensat/exec/measure_host.h"
#include "tensat/opt/optimize.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

namespace detail {

/// The `time_scale` index of the fused kernels in `program` on `profile` (`fused_kind`, as
/// `program_breakdown` reports them), `kNumTimeScales` if they differ or there is none.
inline std::size_t fused_scale_of(const RecExpr<TensorNode>& program,
                                  const DeviceProfile& profile) {
  std::size_t scale = kNumTimeScales;
  for (const KernelReport& k : program_breakdown(program, profile).kernels) {
    if (k.op != Op::Fused) continue;
    if (scale != kNumTimeScales && scale != k.kind) return kNumTimeScales;
    scale = k.kind;
  }
  return scale;
}

}  // namespace detail

namespace detail {

/// What builds a fused probe: the fusion phase on `profile` without its error factors (the
/// probe is what `optimize` fuses there), small limits, no layout search.
[[nodiscard]] inline OptimizeOptions probe_fusion_options(const DeviceProfile& profile) {
  OptimizeOptions fuse;
  fuse.profile = profile;
  fuse.profile->systematic_error.fill(1.0);
  fuse.profile->scatter_error.fill(1.0);
  fuse.fusion = true;
  fuse.node_limit = 2'000;
  fuse.iter_limit = 2;
  fuse.layouts = LayoutSearch::Off;
  return fuse;
}

}  // namespace detail

/// One probe of `measure_uncertainty`: a program of kernels of one kind (the `time_scale` index
/// `scale`, in class `cls`).
struct Probe {
  std::string name;
  CostClass cls = CostClass::Elementwise;
  std::size_t scale = 0;
  RecExpr<TensorNode> program;
};

namespace detail {

/// Whether `probe` measures the kind its `scale` names: a fused probe must hold that fused kernel
/// on `profile` (the fusion phase may have chosen another form, or none).
inline bool probe_holds_its_kind(const Probe& probe, const DeviceProfile& profile) {
  if (probe.cls != CostClass::Fused) return true;
  const bool fused = std::any_of(probe.program.begin(), probe.program.end(),
                                 [](const TensorNode& n) { return n.op() == Op::Fused; });
  return fused && fused_scale_of(probe.program, profile) == probe.scale;
}

}  // namespace detail

/// A probe's outcome: its predicted (with the fitted `time_scale`) and measured seconds a run.
struct Residual {
  std::string name;
  CostClass cls = CostClass::Elementwise;
  std::size_t scale = 0;
  double predicted = 0;
  double measured = 0;
  /// ln(measured / predicted): > 0 where the model is optimistic.
  [[nodiscard]] double log_ratio() const { return std::log(measured / predicted); }
};

/// The probes of `measure_uncertainty`: for each kind of kernel real models run, two or three
/// sizes (a squeeze-excite vector and a 64x56x56 map, a 20-microsecond product and a
/// milliseconds one, a transformer's softmax and layernorm at 64 and 196 tokens), each a chain of
/// the same op where the shape allows (so that one call's fixed cost is shared); the fused
/// probes are what `optimize` fuses on `profile` (an elementwise chain, a product with its bias
/// and activation).
[[nodiscard]] inline std::vector<Probe> uncertainty_probes(const DeviceProfile& profile) {
  std::vector<Probe> probes;
  const auto add = [&](std::string name, CostClass cls, std::size_t scale,
                       const RecExpr<TensorNode>& program) {
    probes.push_back(Probe{std::move(name), cls, scale, program});
  };
  const auto index = [](Op op) { return static_cast<std::size_t>(op); };
  const auto chain = [](Graph& g, Tensor x, int n, auto&& op) {
    for (int i = 0; i < n; ++i) x = op(g, x, i);
    g.output(x);
    return g.program();
  };
  // Matrix-vector products of two widths, a batch, a ViT's tokens. One row is a matrix-vector
  // product where the profile prices it so (a kind of its own).
  for (auto [rows, width] :
       {std::pair<std::int64_t, std::int64_t>{1, 384}, {1, 1024}, {64, 384}, {196, 384}}) {
    Graph g;
    add(fmt::format("matmul [{}, {}] x [{}, {}]", rows, width, width, width),
        CostClass::Contraction,
        rows == 1 && profile.gemv_bandwidth > 0 ? kGemvScale : index(Op::MatMul),
        chain(g, g.input("x", {rows, width}), 4, [width = width](Graph& h, Tensor x, int i) {
          return h.matmul(x, h.weight(fmt::format("w{}", i), {width, width}));
        }));
  }
  for (auto [c, size, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{32, 56, 3},
                            {128, 14, 3},
                            {256, 14, 1}}) {
    Graph g;
    add(fmt::format("conv2d {}x{} [1, {}, {}, {}]", k, k, c, size, size), CostClass::Contraction,
        index(Op::Conv2d),
        chain(g, g.input("x", {1, c, size, size}), 4, [c = c, k = k](Graph& h, Tensor x, int i) {
          return h.conv2d(x, h.weight(fmt::format("w{}", i), {c, c, k, k}), 1, 1, Padding::Same);
        }));
  }
  for (auto [c, size] : {std::pair<std::int64_t, std::int64_t>{96, 28}, {384, 7}}) {
    Graph g;
    add(fmt::format("depthwise 3x3 [1, {}, {}, {}]", c, size, size), CostClass::Window,
        kDepthwiseScale,
        chain(g, g.input("x", {1, c, size, size}), 4, [c = c](Graph& h, Tensor x, int i) {
          return h.conv2d(x, h.weight(fmt::format("w{}", i), {c, 1, 3, 3}), 1, 1, Padding::Same);
        }));
  }
  for (auto [c, size] : {std::pair<std::int64_t, std::int64_t>{512, 7}, {96, 56}}) {
    Graph g;
    g.output(g.poolavg(g.input("x", {1, c, size, size}), size, size, 1, 1, Padding::Valid));
    add(fmt::format("global average pool [1, {}, {}, {}]", c, size, size), CostClass::Window,
        index(Op::PoolAvg), g.program());
  }
  for (std::int64_t n : {4096, 200704}) {
    const auto unary = [&](Op op, auto&& f) {
      Graph g;
      add(fmt::format("{} [1, {}]", op_name(op), n), CostClass::Elementwise, index(op),
          chain(g, g.input("x", {1, n}), 4, [&](Graph& h, Tensor x, int) { return f(h, x); }));
    };
    unary(Op::Relu, [](Graph& h, Tensor x) { return h.relu(x); });
    unary(Op::Sigmoid, [](Graph& h, Tensor x) { return h.sigmoid(x); });
    unary(Op::Tanh, [](Graph& h, Tensor x) { return h.tanh(x); });
    unary(Op::Erf, [](Graph& h, Tensor x) { return h.erf(x); });
    unary(Op::Gelu, [](Graph& h, Tensor x) { return h.gelu(x); });
    unary(Op::GeluErf, [](Graph& h, Tensor x) { return h.gelu_erf(x); });
    unary(Op::Silu, [](Graph& h, Tensor x) { return h.silu(x); });
    unary(Op::HardSwish, [](Graph& h, Tensor x) { return h.hard_swish(x); });
    unary(Op::Sqrt, [](Graph& h, Tensor x) { return h.sqrt(h.relu(x)); });
    const auto binary = [&](Op op, auto&& f) {
      Graph g;
      const Tensor y = g.input("y", {1, n});
      add(fmt::format("{} [1, {}]", op_name(op), n), CostClass::Elementwise, index(op),
          chain(g, g.input("x", {1, n}), 4, [&](Graph& h, Tensor x, int) { return f(h, x, y); }));
    };
    binary(Op::EwAdd, [](Graph& h, Tensor x, Tensor y) { return h.ewadd(x, y); });
    binary(Op::EwMul, [](Graph& h, Tensor x, Tensor y) { return h.ewmul(x, y); });
    binary(Op::EwDiv, [](Graph& h, Tensor x, Tensor y) { return h.ewdiv(x, y); });
  }
  for (auto [c, size] : {std::pair<std::int64_t, std::int64_t>{64, 56},
                         {256, 7}}) {  // a bias add (a folded batchnorm)
    Graph g;
    add(fmt::format("ewadd [1, {}, {}, {}] + broadcast bias", c, size, size),
        CostClass::Elementwise, index(Op::EwAdd),
        chain(g, g.input("x", {1, c, size, size}), 4,
              [c = c, size = size](Graph& h, Tensor x, int i) {
                return h.ewadd(x, h.broadcast(h.weight(fmt::format("b{}", i), {1, c, 1, 1}),
                                              {1, c, size, size}));
              }));
  }
  // Winograd from a large map to the small late-stage ones (two tiles a row: 4x4), where the
  // transforms and the cache traffic weigh most.
  for (auto [c, size] : {std::pair<std::int64_t, std::int64_t>{32, 56}, {64, 14}, {64, 4}}) {
    Graph g;
    add(fmt::format("wino_conv2d 3x3 [1, {}, {}, {}]", c, size, size), CostClass::Contraction,
        index(Op::WinoConv2d),
        chain(g, g.input("x", {1, c, size, size}), 4, [c = c](Graph& h, Tensor x, int i) {
          return h.wino_conv2d(x, h.wino_weight(h.weight(fmt::format("w{}", i), {c, c, 3, 3})));
        }));
  }
  for (std::int64_t n : {64, 196}) {
    Graph t;
    add(fmt::format("transpose [{}, {}]", n, n), CostClass::Movement, index(Op::Transpose),
        chain(t, t.input("x", {n, n}), 4, [](Graph& h, Tensor x, int) {
          return h.transpose(x, {1, 0});
        }));
    Graph c;
    const Tensor x = c.input("x", {1, n, 28, 28});
    c.output(c.concat(1, {x, c.input("y", {1, n, 28, 28})}));
    add(fmt::format("concat 2 x [1, {}, 28, 28]", n), CostClass::Movement, index(Op::Concat),
        c.program());
  }
  for (std::int64_t tokens : {64, 196}) {
    Graph g;
    add(fmt::format("softmax [8, {}, {}]", tokens, tokens), CostClass::Reduction,
        index(Op::Softmax),
        chain(g, g.input("x", {8, tokens, tokens}), 4,
              [](Graph& h, Tensor x, int) { return h.softmax(x, 2); }));
    Graph n;
    add(fmt::format("layernorm [{}, 384]", tokens), CostClass::Reduction, index(Op::LayerNorm),
        chain(n, n.input("x", {tokens, 384}), 4, [](Graph& h, Tensor x, int i) {
          return h.layernorm(x, h.weight(fmt::format("g{}", i), {384}),
                             h.weight(fmt::format("b{}", i), {384}));
        }));
    Graph r;
    r.output(r.reduce_mean(r.input("x", {tokens, 384}), 1));
    add(fmt::format("reduce_mean [{}, 384]", tokens), CostClass::Reduction, index(Op::ReduceMean),
        r.program());
  }
  // Fused kernels: what the fusion phase makes of an elementwise chain and of a product's
  // epilogue, on this profile.
  const OptimizeOptions fuse = detail::probe_fusion_options(profile);
  for (std::int64_t n :
       {256, 4096, 200704}) {  // 256: a small kernel, where a loop's own overhead shows
    Graph g;
    const Tensor x = g.input("x", {1, n});
    g.output(g.ewmul(g.sigmoid(g.ewadd(x, g.input("y", {1, n}))), g.relu(x)));
    add(fmt::format("fused elementwise chain [1, {}]", n), CostClass::Fused, index(Op::Fused),
        optimize(g.program(), fuse).optimized);
  }
  for (auto [c, size] : {std::pair<std::int64_t, std::int64_t>{16, 56},
                         {96, 14}}) {  // a stride-2 conv's explicit pads
    Graph g;
    const Tensor x = g.input("x", {1, c, size, size});
    const Tensor y = g.relu(g.ewadd(x, g.input("y", {1, c, size, size})));
    g.output(g.pad(g.pad(y, 2, 0, 1), 3, 0, 1));
    add(fmt::format("fused chain through pads [1, {}, {}, {}]", c, size, size), CostClass::Fused,
        kFusedGatherScale, optimize(g.program(), fuse).optimized);
  }
  for (std::int64_t rows : {1, 196}) {
    Graph g;
    const Tensor y = g.matmul(g.input("x", {rows, 384}), g.weight("w", {384, 384}));
    g.output(g.relu(g.ewadd(y, g.weight("b", {rows, 384}))));
    add(fmt::format("fused matmul + bias + relu [{}, 384]", rows), CostClass::Fused,
        kFusedContractionScale, optimize(g.program(), fuse).optimized);
  }
  // A convolution with per-channel post-ops (kConvPostOpsScale), on a profile that runs them so,
  // written as the kernel itself (the fusion phase may not choose it where its fixed costs
  // weigh): a ReLU6 expansion on a large and a small map, a bias and Swish (an activation
  // dearer than the memory it saves), and a ResNet block's bias, residual and ReLU.
  if (runs_post_ops(profile))
    for (auto [c, size, k, step] :
         {std::tuple<std::int64_t, std::int64_t, std::int64_t, int>{64, 28, 1, 0},
          {96, 4, 1, 0},
          {32, 28, 3, 1},
          {128, 14, 1, 2}}) {
      const std::string x = fmt::format("1 {} {} {}", c, size, size);
      const std::string w = fmt::format("{} {} {} {}", c, c, k, k), b = fmt::format("1 {} 1 1", c);
      std::string body = fmt::format(
          "(ewadd (conv2d 1 1 0 0 (arg 0 f32 (ints {})) (arg 1 f32 (ints {}))) "
          "(broadcast (ints {}) (arg 2 f32 (ints {}))))",
          x, w, x, b);
      std::string inputs = fmt::format(
          "(input x f32 (ints {})) (weight w f32 (ints {})) "
          "(weight b f32 (ints {}))",
          x, w, b);
      if (step == 0) {
        body = fmt::format("(clip {} (arg 3 f32 (ints 1)) (arg 4 f32 (ints 1)))", body);
        inputs += " (scalar 0) (scalar 6)";
      } else if (step == 1) {
        body = fmt::format("(silu {})", body);
      } else {
        body = fmt::format("(relu (ewadd {} (arg 3 f32 (ints {}))))", body, x);
        inputs += fmt::format(" (input r f32 (ints {}))", x);
      }
      add(fmt::format("conv2d {}x{} [1, {}, {}, {}] + bias + {}", k, k, c, size, size,
                      step == 0   ? "relu6"
                      : step == 1 ? "silu"
                                  : "residual + relu"),
          CostClass::Fused, kConvPostOpsScale,
          parse_program(fmt::format("(fused {} {})", body, inputs)));
    }
  return probes;
}

/// Fits `profile`'s corrections and error factors to probes already timed: `seconds[i]` is what
/// one run of `probes[i].program` took (0 or less: not measured, left out), each against the
/// roofline's prediction with every `time_scale` 1 (a fused probe: with its members' kinds'
/// scales, fitted first; see `FusedGroup::member_scales`). Each kind whose probes agree to within
/// `scale_agreement` (every ln(measured / predicted) within ln(scale_agreement) of their mean)
/// gets `time_scale` = exp(that mean); a kind whose probes disagree (a matrix-vector product
/// and a batch, say) keeps 1, and its disagreement shows as error. Then, with the corrected
/// predictions, per class: `systematic_error` = exp(|mean ln(measured / predicted)|),
/// `scatter_error` = exp(max |ln(measured / predicted) − mean|), at least `min_scatter`, and
/// each probed kind's `kind_scatter` the same maximum over that kind's probes alone. A fused
/// probe that does not hold the fused kernel its `scale` names is left out; a class with no
/// probe keeps its factors. Returns the residuals, against the corrected predictions. Shared by
/// `measure_uncertainty` (the reference executor) and the CUDA executor's calibration.
inline std::vector<Residual> fit_uncertainty(DeviceProfile& profile,
                                             const std::vector<Probe>& probes,
                                             const std::vector<double>& seconds,
                                             const CalibrationOptions& options = {}) {
  DeviceProfile base = profile;
  base.systematic_error.fill(1.0);
  base.scatter_error.fill(1.0);
  base.time_scale.fill(1.0);
  std::vector<const Probe*> kept;
  std::vector<Residual> residuals;
  for (std::size_t i = 0; i < probes.size() && i < seconds.size(); ++i) {
    const Probe& probe = probes[i];
    if (!detail::probe_holds_its_kind(probe, base)) continue;
    Residual r;
    r.name = probe.name;
    r.cls = probe.cls;
    r.scale = probe.scale;
    r.predicted = program_time(probe.program, profile_for(base, probe.program)) * 1e-6;
    r.measured = seconds[i];
    if (!(r.predicted > 0 && r.measured > 0) || !std::isfinite(r.measured)) continue;
    residuals.push_back(std::move(r));
    kept.push_back(&probe);
  }
  const auto mean_and_spread = [](const std::vector<double>& logs) {
    double mean = 0, spread = 0;
    for (double l : logs) mean += l / static_cast<double>(logs.size());
    for (double l : logs) spread = std::max(spread, std::abs(l - mean));
    return std::pair{mean, spread};
  };
  const auto is_fused_kind = [](std::size_t k) {
    return k == static_cast<std::size_t>(Op::Fused) || k == kFusedContractionScale ||
           k == kFusedGatherScale || k == kConvPostOpsScale;
  };
  const auto fit_kind = [&](std::size_t k) {
    std::vector<double> logs;
    for (const Residual& r : residuals)
      if (r.scale == k) logs.push_back(r.log_ratio());
    if (logs.size() < 2) return;  // one probe cannot tell a kind's factor from one size's
    const auto [mean, spread] = mean_and_spread(logs);
    if (spread <= std::log(std::max(options.scale_agreement, 1.0)))
      base.time_scale[k] = std::exp(mean);
  };
  // The unfused kinds first; then the fused kernels, predicted with their members' own scales
  // (`FusedGroup::member_scales`), take what remains as their kind's.
  for (std::size_t k = 0; k < kNumTimeScales; ++k)
    if (!is_fused_kind(k)) fit_kind(k);
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (is_fused_kind(residuals[i].scale))
      residuals[i].predicted =
          program_time(kept[i]->program, profile_for(base, kept[i]->program)) * 1e-6;
  for (std::size_t k = 0; k < kNumTimeScales; ++k)
    if (is_fused_kind(k)) fit_kind(k);
  for (std::size_t i = 0; i < kept.size(); ++i)
    residuals[i].predicted =
        program_time(kept[i]->program, profile_for(base, kept[i]->program)) * 1e-6;
  const double least = std::max(options.min_scatter, 1.0);
  base.kind_scatter.fill(0.0);
  for (std::size_t c = 0; c < kNumCostClasses; ++c) {
    std::vector<double> logs;
    for (const Residual& r : residuals)
      if (static_cast<std::size_t>(r.cls) == c) logs.push_back(r.log_ratio());
    if (logs.empty()) continue;
    const auto [mean, spread] = mean_and_spread(logs);
    base.systematic_error[c] = std::exp(std::abs(mean));
    base.scatter_error[c] = std::max(std::exp(spread), least);
    // Each probed kind's own: its probes' largest distance from the class's mean.
    for (const Residual& r : residuals) {
      if (static_cast<std::size_t>(r.cls) != c) continue;
      double& k = base.kind_scatter[r.scale];
      k = std::max({k, least, std::exp(std::abs(r.log_ratio() - mean))});
    }
  }
  validate(base);
  profile = base;
  return residuals;
}

/// Calibrates `profile`'s corrections and error factors on the reference executor: times every
/// probe of `uncertainty_probes` (`probe_passes` runs in a row, best of `repetitions`, in each of
/// `probe_rounds` rounds over all the probes; its best round) and fits them (`fit_uncertainty`).
/// Returns the residuals, against the corrected predictions.
inline std::vector<Residual> measure_uncertainty(DeviceProfile& profile,
                                                 const CalibrationOptions& options = {}) {
  DeviceProfile base = profile;
  base.systematic_error.fill(1.0);
  base.scatter_error.fill(1.0);
  base.time_scale.fill(1.0);
  const std::vector<Probe> probes = uncertainty_probes(base);
  std::vector<double> seconds(probes.size(), 0.0);
  const std::size_t passes = std::max<std::size_t>(options.probe_passes, 1);
  for (std::size_t round = 0; round < std::max<std::size_t>(options.probe_rounds, 1); ++round)
    for (std::size_t i = 0; i < probes.size(); ++i) {
      if (!detail::probe_holds_its_kind(probes[i], base)) continue;
      const double s = detail::seconds_of_passes(probes[i].program, passes, options.repetitions) /
                       static_cast<double>(passes);
      seconds[i] = round == 0 ? s : std::min(seconds[i], s);
    }
  return fit_uncertainty(profile, probes, seconds, options);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_UNCERTAINTY_PROBES_H
