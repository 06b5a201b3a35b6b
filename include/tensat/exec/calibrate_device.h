// Calibrating a GPU profile: what the CUDA executor's kernels were measured to take
// (`DeviceMeasurements`, filled on a GPU by `measure_cuda_device`, cuda_executor.h), and the
// profile fitted to them over a datasheet profile (`device_profile_from`). Fitting needs no GPU,
// so a profile can be refitted, and tested, from recorded measurements.
#ifndef TENSAT_EXEC_CALIBRATE_DEVICE_H
#define TENSAT_EXEC_CALIBRATE_DEVICE_H

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tensat/exec/calibrate.h"
#include "tensat/cost/device_profile.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// One timed contraction (a matmul or a convolution): its flops as the cost model counts them
/// and the seconds one of them took on the device.
struct ContractionSample {
  std::string what;  ///< e.g. "conv2d 3x3 C=64 56x56"
  double flops = 0;
  double seconds = 0;

  friend bool operator==(const ContractionSample& a, const ContractionSample& b) noexcept {
    return a.what == b.what && a.flops == b.flops && a.seconds == b.seconds;
  }
};

/// One timed matrix-vector product [1, K] x [K, N]: what a batch-1 recurrent cell or a
/// classifier runs. No tiled GEMM: the device streams the matrix, so its time is bytes over a
/// rate that grows with N (`DeviceProfile::gemv_rate`), not flops on the products' curve.
struct GemvSample {
  std::string what;  ///< e.g. "matmul 1x1024x4096"
  double k = 0;
  double n = 0;
  double seconds = 0;
  /// The bytes the cost model counts for it: the vector, the matrix and the result, f32.
  [[nodiscard]] double bytes() const noexcept { return 4.0 * (k + k * n + n); }

  friend bool operator==(const GemvSample& a, const GemvSample& b) noexcept {
    return a.what == b.what && a.k == b.k && a.n == b.n && a.seconds == b.seconds;
  }
};

/// One timed probe of `device_uncertainty_probes`, by name: the seconds one run took, or why
/// the executor could not time it (then `seconds` is 0 and the probe is not fitted).
struct ProbeSeconds {
  std::string name;
  double seconds = 0;
  std::string error;

  friend bool operator==(const ProbeSeconds& a, const ProbeSeconds& b) noexcept {
    return a.name == b.name && a.seconds == b.seconds && a.error == b.error;
  }
};

/// What a GPU's kernels took, each the time of one kernel within a chain of equal ones (the
/// difference between chains of 2n and n kernels, over n: the run's own fixed costs cancel).
struct DeviceMeasurements {
  std::string device;           ///< the GPU's name as the driver reports it
  double kernel_seconds = 0;    ///< a relu over 256 floats: a kernel's fixed cost on the device
  double bandwidth = 0;         ///< bytes/s of an ewadd of 2^24 floats, 12 bytes an element
  ContractionSample depthwise;  ///< a depthwise 3x3 convolution (2·9 flops an output)
  ContractionSample grouped;    ///< a grouped 3x3 convolution of `grouped_rows` channels a group
  double grouped_rows = 0;      ///< the output channels of one of those groups
  /// Products (matmuls and 1x1 convolutions, which are products) at several sizes, one large
  /// enough to reach the device's rate: the GEMM's curve.
  std::vector<ContractionSample> products;
  /// Convolutions of one group with a 3x3 window at several sizes: their own curve.
  std::vector<ContractionSample> convolutions;
  /// Matrix-vector products at several widths (empty in measurements recorded before them:
  /// the profile then has no `gemv_bandwidth`).
  std::vector<GemvSample> gemv;
  /// The probes of `device_uncertainty_probes` on the profile fitted to the kernels above, each
  /// a whole program timed as the executor runs it (empty: the profile does not know its error).
  std::vector<ProbeSeconds> probes;
  /// A whole run of a program of one kernel (a relu over 256 floats), timed as the probes are:
  /// the run's own fixed cost (a graph launch) beyond `kernel_seconds`, which every probe holds
  /// once and the roofline does not price, is taken off each probe. 0: not measured.
  double run_seconds = 0;

  friend bool operator==(const DeviceMeasurements& a, const DeviceMeasurements& b) noexcept {
    return a.device == b.device && a.kernel_seconds == b.kernel_seconds &&
           a.bandwidth == b.bandwidth && a.depthwise == b.depthwise && a.grouped == b.grouped &&
           a.grouped_rows == b.grouped_rows && a.products == b.products &&
           a.convolutions == b.convolutions && a.gemv == b.gemv && a.probes == b.probes &&
           a.run_seconds == b.run_seconds;
  }
};

/// A fitted rate curve: peak · F / (F + half_flops) for a contraction of F flops.
struct ContractionCurve {
  double peak = 0;        ///< FLOP/s a large contraction reaches
  double half_flops = 0;  ///< the flops at which it reaches half of that
};

/// The line t = F / peak + half_flops / peak through contraction times with the fixed kernel
/// cost taken off (`fixed_seconds`): the rate curve of `DeviceProfile::gemm_half_flops`. Least
/// squares on relative errors (each sample weighted by 1 / t², so a large GEMM does not drown
/// the small ones); half_flops is clamped at 0, and the slope refitted through the origin then.
/// Throws `ProfileError` (naming `field`) with fewer than two samples of distinct flops or when
/// no positive peak fits.
[[nodiscard]] inline ContractionCurve fit_contraction_curve(
    const std::vector<ContractionSample>& samples, double fixed_seconds,
    const std::string& field = "gemm_half_flops") {
  double sw = 0, sf = 0, sy = 0, sff = 0, sfy = 0;
  double min_f = HUGE_VAL, max_f = 0;
  for (const ContractionSample& s : samples) {
    const double y = s.seconds - fixed_seconds;
    if (!(s.flops > 0) || !(y > 0) || !std::isfinite(y) || !std::isfinite(s.flops)) continue;
    const double w = 1.0 / (y * y);
    sw += w;
    sf += w * s.flops;
    sy += w * y;
    sff += w * s.flops * s.flops;
    sfy += w * s.flops * y;
    min_f = std::min(min_f, s.flops);
    max_f = std::max(max_f, s.flops);
  }
  if (!(max_f > min_f))
    throw ProfileError(field,
                       "needs contractions of at least two sizes that took longer than a kernel");
  const double det = sw * sff - sf * sf;
  double slope = (sw * sfy - sf * sy) / det;  // seconds per flop: 1 / peak
  double intercept = (sy - slope * sf) / sw;  // half_flops / peak
  if (intercept < 0) {
    intercept = 0;
    slope = sfy / sff;
  }
  if (!(slope > 0) || !std::isfinite(slope))
    throw ProfileError(field, "no positive rate fits the contractions");
  return ContractionCurve{1.0 / slope, intercept / slope};
}

/// The matrix-vector rate curve B · N / (N + h) (`DeviceProfile::gemv_bandwidth`,
/// `gemv_half_width`) through timed products [1, K] x [K, N], the fixed kernel cost taken off:
/// t = bytes / B + (bytes / N) · h / B, least squares on relative errors. h is clamped at 0
/// (and B refitted through the origin then). Throws `ProfileError` (field "gemv") with fewer
/// than two usable samples of distinct bytes or when no positive rate fits.
struct GemvCurve {
  double bandwidth = 0;   ///< bytes/s a wide product streams at
  double half_width = 0;  ///< the N at which it streams at half that
};

[[nodiscard]] inline GemvCurve fit_gemv_curve(const std::vector<GemvSample>& samples,
                                              double fixed_seconds) {
  // y = a·x1 + b·x2 with x1 = bytes, x2 = bytes / N, each row weighted by 1 / y².
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  double min_b = HUGE_VAL, max_b = 0;
  std::size_t used = 0;
  for (const GemvSample& s : samples) {
    const double y = s.seconds - fixed_seconds;
    const double x1 = s.bytes(), x2 = s.n > 0 ? s.bytes() / s.n : 0;
    if (!(s.k > 0) || !(s.n > 0) || !(y > 0) || !std::isfinite(y) || !std::isfinite(x1)) continue;
    const double w = 1.0 / (y * y);
    s11 += w * x1 * x1;
    s12 += w * x1 * x2;
    s22 += w * x2 * x2;
    s1y += w * x1 * y;
    s2y += w * x2 * y;
    min_b = std::min(min_b, x1);
    max_b = std::max(max_b, x1);
    ++used;
  }
  if (used < 2 || !(max_b > min_b))
    throw ProfileError(
        "gemv",
        "needs matrix-vector products of at least two sizes that took longer than a kernel");
  const double det = s11 * s22 - s12 * s12;
  double a = det > 0 ? (s22 * s1y - s12 * s2y) / det : 0;
  double b = det > 0 ? (s11 * s2y - s12 * s1y) / det : 0;
  if (!(b > 0) || !(a > 0)) {
    b = 0;
    a = s1y / s11;
  }
  if (!(a > 0) || !std::isfinite(a))
    throw ProfileError("gemv", "no positive rate fits the matrix-vector products");
  return GemvCurve{1.0 / a, b / a};
}

/// The probes a GPU's error is measured on: `uncertainty_probes(profile)` (each kind of kernel
/// at a laptop's sizes) and the sizes the seven benchmark models and their kind run at batch 1:
/// the [1, 1024] x [1024, 4096] matrix-vector product a recurrent cell's products merge into, a
/// transformer's [64, 1024] x [1024, 1024], a 3x3 convolution of
/// 64 channels on 56 x 56 and one in 32 groups of 4 channels on 28 x 28, a split of a product's
/// result in two, and a residual block's convolution + add + relu as `optimize` fuses it on
/// `profile`.
[[nodiscard]] inline std::vector<Probe> device_uncertainty_probes(const DeviceProfile& profile) {
  std::vector<Probe> probes = uncertainty_probes(profile);
  const auto index = [](Op op) { return static_cast<std::size_t>(op); };
  const auto add = [&](std::string name, CostClass cls, std::size_t scale,
                       const RecExpr<TensorNode>& program) {
    probes.push_back(Probe{std::move(name), cls, scale, program});
  };
  for (auto [rows, k, n] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1024, 4096}, {64, 1024, 1024}}) {
    Graph g;
    Tensor x = g.input("x", {rows, k});
    for (int i = 0; i < 4; ++i)  // there and back: [rows, k] -> [rows, n] -> [rows, k] ...
      x = g.matmul(x, g.weight(fmt::format("w{}", i), i % 2 == 0 ? Dims{k, n} : Dims{n, k}));
    g.output(x);
    add(fmt::format("matmul [{}, {}] x [{}, {}]", rows, k, k, n), CostClass::Contraction,
        rows == 1 && profile.gemv_bandwidth > 0 ? kGemvScale : index(Op::MatMul), g.program());
  }
  for (auto [c, size, per_group] :
       {std::tuple<std::int64_t, std::int64_t, std::int64_t>{64, 56, 64}, {128, 28, 4}}) {
    Graph g;
    Tensor x = g.input("x", {1, c, size, size});
    for (int i = 0; i < 4; ++i)
      x = g.conv2d(x, g.weight(fmt::format("w{}", i), {c, per_group, 3, 3}), 1, 1, Padding::Same);
    g.output(x);
    add(fmt::format("conv2d 3x3 [1, {}, {}, {}]{}", c, size, size,
                    per_group == c ? std::string() : fmt::format(" in groups of {}", per_group)),
        CostClass::Contraction, index(Op::Conv2d), g.program());
  }
  {
    Graph g;
    const auto [a, b] =
        g.split(g.matmul(g.input("x", {64, 1024}), g.weight("w", {1024, 2048})), 1, 1024);
    g.output(g.ewadd(a, b));
    add("matmul [64, 1024] x [1024, 2048] split in two", CostClass::Movement, index(Op::Split),
        g.program());
  }
  const OptimizeOptions fuse = detail::probe_fusion_options(profile);
  {
    Graph g;
    const Tensor x = g.input("x", {1, 64, 56, 56});
    const Tensor y = g.conv2d(x, g.weight("w", {64, 64, 3, 3}), 1, 1, Padding::Same);
    g.output(g.relu(g.ewadd(y, g.input("shortcut", {1, 64, 56, 56}))));
    add("fused conv2d 3x3 + add + relu [1, 64, 56, 56]", CostClass::Fused, kFusedContractionScale,
        optimize(g.program(), fuse).optimized);
  }
  return probes;
}

/// The profile of a device measured as `m` says, over the datasheet profile `base` (its name
/// with "-calibrated", its f16/bf16 and matrix peaks, cache, transcendental weights and layouts
/// kept): the fixed kernel cost as `launch_overhead` (no separate `mem_latency`), the measured
/// add's rate as `mem_bandwidth`, the f32 vector peak and `gemm_half_flops` fitted to the
/// products, `conv_flops` and `conv_half_flops` to the windowed convolutions (when at least two
/// are measured; 0 otherwise), each by `fit_contraction_curve` (eta_c = eta_m = 1: the
/// measured rates are what is reached, and the kept peaks are scaled by base's eta_c so they
/// stay what base predicted), `window_flops` from the depthwise convolution, and
/// `gemm_half_rows` through the grouped convolution's rate against `conv_flops` (each rate with
/// the fixed kernel cost taken off; 0 when the sample is absent or not slower). `split_copies`
/// and `epilogue_kernel` are true and `fusion_overlap` false, as the CUDA executor runs them: a
/// split is two slice kernels, and a fused node's elementwise region is a kernel of its own
/// after the contraction, reading the product back. Throws `ProfileError` when a measurement is
/// missing or not positive.
[[nodiscard]] inline DeviceProfile device_kernels_profile_from(const DeviceProfile& base,
                                                               const DeviceMeasurements& m) {
  check_profile_number("measurements.kernel_seconds", m.kernel_seconds, true);
  check_profile_number("measurements.bandwidth", m.bandwidth, true);
  check_profile_number("measurements.grouped_rows", m.grouped_rows, false);
  const ContractionCurve curve =
      fit_contraction_curve(m.products, m.kernel_seconds, "gemm_half_flops");
  ContractionCurve conv;
  if (m.convolutions.size() >= 2)
    conv = fit_contraction_curve(m.convolutions, m.kernel_seconds, "conv_flops");
  DeviceProfile p = base;
  p.name = base.name + "-calibrated";
  p.kind = "gpu";
  for (std::size_t i = 0; i < 3; ++i) {
    p.vector_flops[i] = base.vector_flops[i] * base.eta_c;
    p.matrix_flops[i] = base.matrix_flops[i] * base.eta_c;
  }
  p.vector_flops[static_cast<std::size_t>(DType::F32)] = curve.peak;
  p.eta_c = 1.0;
  p.eta_m = 1.0;
  p.mem_bandwidth = m.bandwidth;
  p.mem_latency = 0;
  p.launch_overhead = m.kernel_seconds;
  p.gemm_half_flops = curve.half_flops;
  p.conv_flops = conv.peak;
  p.conv_half_flops = conv.half_flops;
  // A sample's rate with the kernel's fixed cost taken off (0 when it took no longer).
  const auto rate = [&](const ContractionSample& s) {
    const double busy = s.seconds - m.kernel_seconds;
    return s.flops > 0 && busy > 0 && std::isfinite(busy) ? s.flops / busy : 0.0;
  };
  p.window_flops = rate(m.depthwise);
  p.gemm_half_rows = 0;
  // The rate the grouped convolution would have with one group: conv_flops (the fill does not
  // apply to grouped convolutions, `op_work`), or the products' curve without a conv curve.
  const double conv_rate =
      conv.peak > 0 ? conv.peak : curve.peak * p.contraction_fill(m.grouped.flops);
  if (rate(m.grouped) > 0 && m.grouped_rows > 0)
    p.gemm_half_rows = fit_gemm_half_rows(conv_rate, rate(m.grouped), m.grouped_rows);
  p.fusion_overlap = false;
  p.split_copies = true;
  p.epilogue_kernel = true;
  p.description = fmt::format(
      "{} measured by calibrate_cuda over {}: {:.2f} us a kernel, {:.0f} GB/s (ewadd), f32 "
      "products "
      "{:.1f} TFLOP/s at size with a fixed {:.1f} us (gemm_half_flops {:.3g}), 3x3 convolutions "
      "{:.1f} TFLOP/s "
      "with a fixed {:.1f} us, depthwise {:.2f} TFLOP/s, groups of {:.0f} channels {:.2f} TFLOP/s",
      m.device.empty() ? std::string("a GPU") : m.device, base.name, m.kernel_seconds * 1e6,
      m.bandwidth * 1e-9, curve.peak * 1e-12, curve.half_flops / curve.peak * 1e6, curve.half_flops,
      conv.peak * 1e-12, conv.peak > 0 ? conv.half_flops / conv.peak * 1e6 : 0.0,
      p.window_flops * 1e-12, m.grouped_rows, rate(m.grouped) * 1e-12);
  if (!m.gemv.empty()) {
    const GemvCurve gemv = fit_gemv_curve(m.gemv, m.kernel_seconds);
    p.gemv_bandwidth = gemv.bandwidth;
    p.gemv_half_width = gemv.half_width;
    p.description +=
        fmt::format(", matrix-vector products {:.0f} GB/s at width (half at N = {:.0f})",
                    gemv.bandwidth * 1e-9, gemv.half_width);
  }
  validate(p);
  return p;
}

/// `device_kernels_profile_from(base, m)` with its corrections and error factors fitted to the
/// timed probes (`fit_uncertainty` over `device_uncertainty_probes` of that profile, matched by
/// name, each less the run's fixed cost `m.run_seconds − m.kernel_seconds`; a probe measured but
/// no longer built, or built but not measured, is left out), so that
/// `optimize` keeps a program whose gain the device's error could undo. Without probes in `m`
/// the profile does not know its error. `residuals`, when given, receives the probes' outcomes.
[[nodiscard]] inline DeviceProfile device_profile_from(const DeviceProfile& base,
                                                       const DeviceMeasurements& m,
                                                       std::vector<Residual>* residuals = nullptr,
                                                       const CalibrationOptions& options = {}) {
  DeviceProfile p = device_kernels_profile_from(base, m);
  if (m.probes.empty()) return p;
  const std::vector<Probe> probes = device_uncertainty_probes(p);
  const double run_cost = m.run_seconds > m.kernel_seconds ? m.run_seconds - m.kernel_seconds : 0.0;
  std::vector<double> seconds(probes.size(), 0.0);
  for (std::size_t i = 0; i < probes.size(); ++i)
    for (const ProbeSeconds& s : m.probes)
      if (s.name == probes[i].name && s.seconds > run_cost) seconds[i] = s.seconds - run_cost;
  std::vector<Residual> fitted = fit_uncertainty(p, probes, seconds, options);
  if (residuals != nullptr) *residuals = std::move(fitted);
  return p;
}

/// The measurements as JSON (what `calibrate_device --measurements` writes, so that a profile
/// can be refitted without the GPU).
[[nodiscard]] inline nlohmann::ordered_json measurements_to_json(const DeviceMeasurements& m) {
  nlohmann::ordered_json doc;
  doc["device"] = m.device;
  doc["kernel_seconds"] = m.kernel_seconds;
  doc["bandwidth"] = m.bandwidth;
  const auto sample = [](const ContractionSample& s) {
    return nlohmann::ordered_json{{"what", s.what}, {"flops", s.flops}, {"seconds", s.seconds}};
  };
  doc["depthwise"] = sample(m.depthwise);
  doc["grouped"] = sample(m.grouped);
  doc["grouped_rows"] = m.grouped_rows;
  for (auto [key, list] :
       {std::pair{"products", &m.products}, std::pair{"convolutions", &m.convolutions}}) {
    doc[key] = nlohmann::ordered_json::array();
    for (const ContractionSample& s : *list) doc[key].push_back(sample(s));
  }
  if (!m.gemv.empty()) {
    doc["gemv"] = nlohmann::ordered_json::array();
    for (const GemvSample& s : m.gemv)
      doc["gemv"].push_back(
          nlohmann::ordered_json{{"what", s.what}, {"k", s.k}, {"n", s.n}, {"seconds", s.seconds}});
  }
  if (!m.probes.empty()) {
    doc["probes"] = nlohmann::ordered_json::array();
    for (const ProbeSeconds& s : m.probes) {
      nlohmann::ordered_json probe{{"name", s.name}, {"seconds", s.seconds}};
      if (!s.error.empty()) probe["error"] = s.error;
      doc["probes"].push_back(std::move(probe));
    }
  }
  if (m.run_seconds > 0) doc["run_seconds"] = m.run_seconds;
  return doc;
}

/// Measurements from `measurements_to_json`'s JSON text. Throws `ProfileError` naming the field
/// (`offset()` for a syntax error).
[[nodiscard]] inline DeviceMeasurements measurements_from_json(const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ProfileError("", fmt::format("not JSON: {}", e.what()), e.byte > 0 ? e.byte - 1 : 0);
  } catch (const nlohmann::json::exception& e) {
    throw ProfileError("", fmt::format("not JSON: {}", e.what()));
  }
  const auto number = [](const nlohmann::json& obj, const std::string& path, const char* key) {
    const auto it = obj.find(key);
    const std::string field = path.empty() ? key : path + "." + key;
    if (it == obj.end() || !it->is_number()) throw ProfileError(field, "must be a number");
    const double v = it->get<double>();
    check_profile_number(field, v, false);
    return v;
  };
  const auto sample = [&](const nlohmann::json& s, const std::string& path) {
    if (!s.is_object()) throw ProfileError(path, "must be an object");
    ContractionSample result;
    if (const auto it = s.find("what"); it != s.end() && it->is_string())
      result.what = it->get<std::string>();
    result.flops = number(s, path, "flops");
    result.seconds = number(s, path, "seconds");
    return result;
  };
  if (!doc.is_object()) throw ProfileError("", "must be an object");
  DeviceMeasurements m;
  if (const auto it = doc.find("device"); it != doc.end() && it->is_string())
    m.device = it->get<std::string>();
  m.kernel_seconds = number(doc, "", "kernel_seconds");
  m.bandwidth = number(doc, "", "bandwidth");
  for (auto [key, slot] : {std::pair{"depthwise", &m.depthwise}, std::pair{"grouped", &m.grouped}})
    if (const auto it = doc.find(key); it != doc.end()) *slot = sample(*it, key);
  m.grouped_rows = number(doc, "", "grouped_rows");
  for (auto [key, slot] :
       {std::pair{"products", &m.products}, std::pair{"convolutions", &m.convolutions}}) {
    const auto list = doc.find(key);
    if (list == doc.end() || !list->is_array()) throw ProfileError(key, "must be an array");
    for (std::size_t i = 0; i < list->size(); ++i)
      slot->push_back(sample((*list)[i], fmt::format("{}[{}]", key, i)));
  }
  // Optional: measurements recorded before them have neither.
  const auto optional_array = [&](const char* key) -> const nlohmann::json* {
    const auto it = doc.find(key);
    if (it == doc.end()) return nullptr;
    if (!it->is_array()) throw ProfileError(key, "must be an array");
    return &*it;
  };
  if (const nlohmann::json* list = optional_array("gemv"))
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string path = fmt::format("gemv[{}]", i);
      const nlohmann::json& s = (*list)[i];
      if (!s.is_object()) throw ProfileError(path, "must be an object");
      GemvSample g;
      if (const auto it = s.find("what"); it != s.end() && it->is_string())
        g.what = it->get<std::string>();
      g.k = number(s, path, "k");
      g.n = number(s, path, "n");
      g.seconds = number(s, path, "seconds");
      m.gemv.push_back(std::move(g));
    }
  if (const nlohmann::json* list = optional_array("probes"))
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string path = fmt::format("probes[{}]", i);
      const nlohmann::json& s = (*list)[i];
      if (!s.is_object()) throw ProfileError(path, "must be an object");
      const auto name = s.find("name");
      if (name == s.end() || !name->is_string())
        throw ProfileError(path + ".name", "must be a string");
      ProbeSeconds probe{name->get<std::string>(), number(s, path, "seconds"), {}};
      if (const auto it = s.find("error"); it != s.end() && it->is_string())
        probe.error = it->get<std::string>();
      m.probes.push_back(std::move(probe));
    }
  if (doc.contains("run_seconds")) m.run_seconds = number(doc, "", "run_seconds");
  return m;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_CALIBRATE_DEVICE_H
