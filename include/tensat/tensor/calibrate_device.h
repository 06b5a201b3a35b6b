// Calibrating a GPU profile: what the CUDA executor's kernels were measured to take
// (`DeviceMeasurements`, filled on a GPU by `measure_cuda_device`, cuda_executor.h), and the
// profile fitted to them over a datasheet profile (`device_profile_from`). Fitting needs no GPU,
// so a profile can be refitted, and tested, from recorded measurements.
#ifndef TENSAT_TENSOR_CALIBRATE_DEVICE_H
#define TENSAT_TENSOR_CALIBRATE_DEVICE_H

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tensat/tensor/calibrate.h"
#include "tensat/tensor/device_profile.h"

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

/// What a GPU's kernels took, each the time of one kernel within a chain of equal ones (the
/// difference between chains of 2n and n kernels, over n: the run's own fixed costs cancel).
struct DeviceMeasurements {
  std::string device;          ///< the GPU's name as the driver reports it
  double kernel_seconds = 0;   ///< a relu over 256 floats: a kernel's fixed cost on the device
  double bandwidth = 0;        ///< bytes/s of an ewadd of 2^24 floats, 12 bytes an element
  ContractionSample depthwise;  ///< a depthwise 3x3 convolution (2·9 flops an output)
  ContractionSample grouped;    ///< a grouped 3x3 convolution of `grouped_rows` channels a group
  double grouped_rows = 0;      ///< the output channels of one of those groups
  /// Products (matmuls and 1x1 convolutions, which are products) at several sizes, one large
  /// enough to reach the device's rate: the GEMM's curve.
  std::vector<ContractionSample> products;
  /// Convolutions of one group with a 3x3 window at several sizes: their own curve.
  std::vector<ContractionSample> convolutions;

  friend bool operator==(const DeviceMeasurements& a, const DeviceMeasurements& b) noexcept {
    return a.device == b.device && a.kernel_seconds == b.kernel_seconds && a.bandwidth == b.bandwidth &&
           a.depthwise == b.depthwise && a.grouped == b.grouped && a.grouped_rows == b.grouped_rows &&
           a.products == b.products && a.convolutions == b.convolutions;
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
[[nodiscard]] inline ContractionCurve fit_contraction_curve(const std::vector<ContractionSample>& samples,
                                                           double fixed_seconds,
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
    throw ProfileError(field, "needs contractions of at least two sizes that took longer than a kernel");
  const double det = sw * sff - sf * sf;
  double slope = (sw * sfy - sf * sy) / det;  // seconds per flop: 1 / peak
  double intercept = (sy - slope * sf) / sw;  // half_flops / peak
  if (intercept < 0) {
    intercept = 0;
    slope = sfy / sff;
  }
  if (!(slope > 0) || !std::isfinite(slope)) throw ProfileError(field, "no positive rate fits the contractions");
  return ContractionCurve{1.0 / slope, intercept / slope};
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
/// is true and `fusion_overlap` false, as the CUDA executor runs them: a split is two slice
/// kernels, and a fused node's elementwise region is a kernel of its own after the
/// contraction, reading the product back. Throws `ProfileError` when a measurement is missing
/// or not positive.
[[nodiscard]] inline DeviceProfile device_profile_from(const DeviceProfile& base, const DeviceMeasurements& m) {
  using detail::check_profile_number;
  check_profile_number("measurements.kernel_seconds", m.kernel_seconds, true);
  check_profile_number("measurements.bandwidth", m.bandwidth, true);
  check_profile_number("measurements.grouped_rows", m.grouped_rows, false);
  const ContractionCurve curve = fit_contraction_curve(m.products, m.kernel_seconds, "gemm_half_flops");
  ContractionCurve conv;
  if (m.convolutions.size() >= 2) conv = fit_contraction_curve(m.convolutions, m.kernel_seconds, "conv_flops");
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
  const double conv_rate = conv.peak > 0 ? conv.peak : curve.peak * p.contraction_fill(m.grouped.flops);
  if (rate(m.grouped) > 0 && m.grouped_rows > 0)
    p.gemm_half_rows = fit_gemm_half_rows(conv_rate, rate(m.grouped), m.grouped_rows);
  p.fusion_overlap = false;
  p.split_copies = true;
  p.description = fmt::format(
      "{} measured by calibrate_cuda over {}: {:.2f} us a kernel, {:.0f} GB/s (ewadd), f32 products "
      "{:.1f} TFLOP/s at size with a fixed {:.1f} us (gemm_half_flops {:.3g}), 3x3 convolutions {:.1f} TFLOP/s "
      "with a fixed {:.1f} us, depthwise {:.2f} TFLOP/s, groups of {:.0f} channels {:.2f} TFLOP/s",
      m.device.empty() ? std::string("a GPU") : m.device, base.name, m.kernel_seconds * 1e6, m.bandwidth * 1e-9,
      curve.peak * 1e-12, curve.half_flops / curve.peak * 1e6, curve.half_flops, conv.peak * 1e-12,
      conv.peak > 0 ? conv.half_flops / conv.peak * 1e6 : 0.0, p.window_flops * 1e-12, m.grouped_rows,
      rate(m.grouped) * 1e-12);
  validate(p);
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
  for (auto [key, list] : {std::pair{"products", &m.products}, std::pair{"convolutions", &m.convolutions}}) {
    doc[key] = nlohmann::ordered_json::array();
    for (const ContractionSample& s : *list) doc[key].push_back(sample(s));
  }
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
    detail::check_profile_number(field, v, false);
    return v;
  };
  const auto sample = [&](const nlohmann::json& s, const std::string& path) {
    if (!s.is_object()) throw ProfileError(path, "must be an object");
    ContractionSample result;
    if (const auto it = s.find("what"); it != s.end() && it->is_string()) result.what = it->get<std::string>();
    result.flops = number(s, path, "flops");
    result.seconds = number(s, path, "seconds");
    return result;
  };
  if (!doc.is_object()) throw ProfileError("", "must be an object");
  DeviceMeasurements m;
  if (const auto it = doc.find("device"); it != doc.end() && it->is_string()) m.device = it->get<std::string>();
  m.kernel_seconds = number(doc, "", "kernel_seconds");
  m.bandwidth = number(doc, "", "bandwidth");
  for (auto [key, slot] : {std::pair{"depthwise", &m.depthwise}, std::pair{"grouped", &m.grouped}})
    if (const auto it = doc.find(key); it != doc.end()) *slot = sample(*it, key);
  m.grouped_rows = number(doc, "", "grouped_rows");
  for (auto [key, slot] : {std::pair{"products", &m.products}, std::pair{"convolutions", &m.convolutions}}) {
    const auto list = doc.find(key);
    if (list == doc.end() || !list->is_array()) throw ProfileError(key, "must be an array");
    for (std::size_t i = 0; i < list->size(); ++i) slot->push_back(sample((*list)[i], fmt::format("{}[{}]", key, i)));
  }
  return m;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_CALIBRATE_DEVICE_H
