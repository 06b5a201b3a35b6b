// A DeviceProfile as JSON and back: profile_to_json, profile_from_json (every field checked, its
// JSON path in the error), load_profile and save_profile.
#ifndef TENSAT_COST_PROFILE_JSON_H
#define TENSAT_COST_PROFILE_JSON_H

#include <array>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/cost/device_profile.h"
#include "tensat/io/file.h"
#include "tensat/io/json.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The profile as JSON (keys in a fixed order; numbers written so that they read back exactly).
[[nodiscard]] inline nlohmann::ordered_json profile_to_json_value(const DeviceProfile& p) {
  nlohmann::ordered_json doc;
  doc["name"] = p.name;
  doc["kind"] = p.kind;
  doc["description"] = p.description;
  nlohmann::ordered_json vector, matrix;
  for (std::size_t i = 0; i < 3; ++i) {
    vector[std::string(detail::kProfileDtypes[i])] = p.vector_flops[i];
    matrix[std::string(detail::kProfileDtypes[i])] = p.matrix_flops[i];
  }
  doc["peak_flops"]["vector"] = vector;
  doc["peak_flops"]["matrix"] = matrix;
  doc["mem_bandwidth"] = p.mem_bandwidth;
  doc["cache_bytes"] = p.cache_bytes;
  doc["launch_overhead"] = p.launch_overhead;
  doc["mem_latency"] = p.mem_latency;
  doc["eta_c"] = p.eta_c;
  doc["eta_m"] = p.eta_m;
  doc["alpha"] = p.alpha;
  nlohmann::ordered_json weights = nlohmann::ordered_json::object();
  detail::for_each_weight(p.weights,
                          [&](std::string_view key, double v) { weights[std::string(key)] = v; });
  doc["op_weights"] = weights;
  doc["fusion_overlap"] = p.fusion_overlap;
  doc["split_copies"] = p.split_copies;
  doc["epilogue_kernel"] = p.epilogue_kernel;
  doc["broadcast_copies"] = p.broadcast_copies;
  doc["winograd"] = p.winograd;
  doc["runtime_fusion"] = p.runtime_fusion;
  doc["gemv_bandwidth"] = p.gemv_bandwidth;
  doc["gemv_half_width"] = p.gemv_half_width;
  doc["cache_bandwidth"] = p.cache_bandwidth;
  doc["cache_resident_bytes"] = p.cache_resident_bytes;
  doc["window_flops"] = p.window_flops;
  doc["window_plane_overhead"] = p.window_plane_overhead;
  doc["gemm_half_rows"] = p.gemm_half_rows;
  doc["group_overhead"] = p.group_overhead;
  doc["gemm_half_flops"] = p.gemm_half_flops;
  doc["conv_flops"] = p.conv_flops;
  doc["conv_half_flops"] = p.conv_half_flops;
  doc["fused_term_overhead"] = p.fused_term_overhead;
  nlohmann::ordered_json conv_layout = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < 3; ++i)
    conv_layout[std::string(detail::kProfileDtypes[i])] =
        std::string(layout_name(p.conv_layout[i]));
  doc["conv_layout"] = conv_layout;
  for (const auto& [kind, factors] :
       {std::pair{"systematic", &p.systematic_error}, std::pair{"scatter", &p.scatter_error}}) {
    nlohmann::ordered_json table = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < kNumCostClasses; ++i)
      table[std::string(kCostClassNames[i])] = (*factors)[i];
    doc["uncertainty"][kind] = table;
  }
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kNumTimeScales; ++i)
    if (p.kind_scatter[i] != 0) kinds[std::string(time_scale_name(i))] = p.kind_scatter[i];
  doc["uncertainty"]["kind_scatter"] = kinds;
  nlohmann::ordered_json scales = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kNumTimeScales; ++i)
    if (p.time_scale[i] != 1.0) scales[std::string(time_scale_name(i))] = p.time_scale[i];
  doc["time_scale"] = scales;
  return doc;
}

/// The profile as JSON text (`indent` < 0: one line).
[[nodiscard]] inline std::string profile_to_json(const DeviceProfile& p, int indent = 2) {
  return profile_to_json_value(p).dump(indent, ' ', false,
                                       nlohmann::json::error_handler_t::replace);
}

namespace detail {

/// `obj` itself, after checking that it is an object (at JSON path `path`).
template <class Json>
const Json& profile_object(const Json& obj, const std::string& path) {
  if (!obj.is_object())
    throw ProfileError(path, fmt::format("must be a JSON object, got {}", obj.type_name()));
  return obj;
}

inline std::string join_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

template <class Json>
void reject_unknown_keys(const Json& obj, const std::string& path,
                         std::initializer_list<std::string_view> keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (std::string_view k : keys) known = known || it.key() == k;
    if (!known)
      throw ProfileError(join_path(path, it.key()),
                         fmt::format("unknown field (expected one of: {})",
                                     fmt::join(keys.begin(), keys.end(), ", ")));
  }
}

template <class Json>
const Json& profile_member(const Json& obj, const std::string& path, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it == obj.end()) throw ProfileError(join_path(path, key), "missing");
  return *it;
}

template <class Json>
double profile_number(const Json& obj, const std::string& path, std::string_view key) {
  const Json& v = profile_member(obj, path, key);
  if (!v.is_number())
    throw ProfileError(join_path(path, key),
                       fmt::format("must be a number, got {}", v.type_name()));
  const double d = v.template get<double>();
  if (!std::isfinite(d)) throw ProfileError(join_path(path, key), "must be a finite number");
  if (d < 0)
    throw ProfileError(join_path(path, key), fmt::format("must not be negative, got {}", v.dump()));
  return d;
}

template <class Json>
std::string profile_string(const Json& obj, const std::string& path, std::string_view key) {
  const Json& v = profile_member(obj, path, key);
  if (!v.is_string())
    throw ProfileError(join_path(path, key),
                       fmt::format("must be a string, got {}", v.type_name()));
  return v.template get<std::string>();
}

/// Reads an object keyed by kernel kinds (`time_scale_name`) into `values` (at JSON path `path`).
template <class Json>
void read_kind_table(const Json& obj, const std::string& path,
                     std::array<double, kNumTimeScales>& values) {
  const Json& table = profile_object(obj, path);
  for (auto it = table.begin(); it != table.end(); ++it) {
    std::size_t i = 0;
    while (i < kNumTimeScales && time_scale_name(i) != it.key()) ++i;
    if (i == kNumTimeScales)
      throw ProfileError(join_path(path, it.key()),
                         "unknown kind (expected an operator's name, \"depthwise_conv2d\", "
                         "\"fused_contraction\" or \"fused_gather\")");
    values[i] = profile_number(table, path, it.key());
  }
}

}  // namespace detail

/// A profile from parsed JSON. Every field is required but "fusion_overlap", "split_copies",
/// "epilogue_kernel", "broadcast_copies", "winograd", "runtime_fusion", "gemv_bandwidth",
/// "gemv_half_width", "cache_bandwidth", "cache_resident_bytes", "window_flops",
/// "window_plane_overhead", "gemm_half_rows", "group_overhead", "gemm_half_flops", "conv_flops",
/// "conv_half_flops",
/// "fused_term_overhead", "conv_layout", "uncertainty" and "time_scale" (added later; true, false,
/// 0 for the numbers, all contiguous and every factor 1 when absent), unknown fields are rejected
/// (a typo would otherwise silently keep a default), numbers must be finite and non-negative, and
/// the result must pass `validate`. Throws `ProfileError` naming the field.
template <class Json>
[[nodiscard]] DeviceProfile profile_from_json_value(const Json& doc) {
  using namespace detail;
  profile_object(doc, "");
  reject_unknown_keys(doc, "",
                      {"name",
                       "kind",
                       "description",
                       "peak_flops",
                       "mem_bandwidth",
                       "cache_bytes",
                       "launch_overhead",
                       "mem_latency",
                       "eta_c",
                       "eta_m",
                       "alpha",
                       "op_weights",
                       "fusion_overlap",
                       "split_copies",
                       "epilogue_kernel",
                       "broadcast_copies",
                       "winograd",
                       "runtime_fusion",
                       "gemv_bandwidth",
                       "gemv_half_width",
                       "cache_bandwidth",
                       "cache_resident_bytes",
                       "window_flops",
                       "window_plane_overhead",
                       "gemm_half_rows",
                       "group_overhead",
                       "gemm_half_flops",
                       "conv_flops",
                       "conv_half_flops",
                       "fused_term_overhead",
                       "conv_layout",
                       "uncertainty",
                       "time_scale"});
  DeviceProfile p;
  p.name = profile_string(doc, "", "name");
  p.kind = profile_string(doc, "", "kind");
  p.description = profile_string(doc, "", "description");
  const Json& peaks = profile_object(profile_member(doc, "", "peak_flops"), "peak_flops");
  reject_unknown_keys(peaks, "peak_flops", {"vector", "matrix"});
  for (std::string_view unit : {"vector", "matrix"}) {
    const std::string path = fmt::format("peak_flops.{}", unit);
    const Json& table = profile_object(profile_member(peaks, "peak_flops", unit), path);
    reject_unknown_keys(table, path, {"f32", "f16", "bf16"});
    for (std::size_t i = 0; i < 3; ++i)
      (unit == "vector" ? p.vector_flops : p.matrix_flops)[i] =
          profile_number(table, path, kProfileDtypes[i]);
  }
  p.mem_bandwidth = profile_number(doc, "", "mem_bandwidth");
  p.cache_bytes = profile_number(doc, "", "cache_bytes");
  p.launch_overhead = profile_number(doc, "", "launch_overhead");
  p.mem_latency = profile_number(doc, "", "mem_latency");
  p.eta_c = profile_number(doc, "", "eta_c");
  p.eta_m = profile_number(doc, "", "eta_m");
  p.alpha = profile_number(doc, "", "alpha");
  const Json& weights = profile_object(profile_member(doc, "", "op_weights"), "op_weights");
  reject_unknown_keys(weights, "op_weights",
                      {"add", "mul", "max", "div", "exp", "tanh", "sigmoid", "gelu", "rsqrt"});
  for_each_weight(p.weights, [&](std::string_view key, double& v) {
    v = profile_number(weights, "op_weights", key);
  });
  for (auto [key, flag] :
       {std::pair{"fusion_overlap", &p.fusion_overlap}, std::pair{"split_copies", &p.split_copies},
        std::pair{"epilogue_kernel", &p.epilogue_kernel},
        std::pair{"broadcast_copies", &p.broadcast_copies}, std::pair{"winograd", &p.winograd},
        std::pair{"runtime_fusion", &p.runtime_fusion}}) {
    auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_boolean())
      throw ProfileError(key, fmt::format("must be true or false, got {}", it->type_name()));
    *flag = it->template get<bool>();
  }
  for (auto [key, number] :
       {std::pair{"gemv_bandwidth", &p.gemv_bandwidth},
        std::pair{"gemv_half_width", &p.gemv_half_width},
        std::pair{"cache_bandwidth", &p.cache_bandwidth},
        std::pair{"cache_resident_bytes", &p.cache_resident_bytes},
        std::pair{"window_flops", &p.window_flops},
        std::pair{"window_plane_overhead", &p.window_plane_overhead},
        std::pair{"gemm_half_rows", &p.gemm_half_rows},
        std::pair{"group_overhead", &p.group_overhead},
        std::pair{"gemm_half_flops", &p.gemm_half_flops}, std::pair{"conv_flops", &p.conv_flops},
        std::pair{"conv_half_flops", &p.conv_half_flops},
        std::pair{"fused_term_overhead", &p.fused_term_overhead}})
    if (doc.find(key) != doc.end()) *number = profile_number(doc, "", key);
  if (doc.find("conv_layout") != doc.end()) {
    const Json& table = profile_object(profile_member(doc, "", "conv_layout"), "conv_layout");
    reject_unknown_keys(table, "conv_layout", {"f32", "f16", "bf16"});
    for (std::size_t i = 0; i < 3; ++i) {
      if (table.find(std::string(kProfileDtypes[i])) == table.end()) continue;
      const std::string name = profile_string(table, "conv_layout", kProfileDtypes[i]);
      const std::optional<Layout> layout = layout_from_name(name);
      if (!layout)
        throw ProfileError(
            join_path("conv_layout", kProfileDtypes[i]),
            fmt::format("must be \"contiguous\" or \"channels_last\", got \"{}\"", name));
      p.conv_layout[i] = *layout;
    }
  }
  if (doc.find("uncertainty") != doc.end()) {
    const Json& both = profile_object(profile_member(doc, "", "uncertainty"), "uncertainty");
    reject_unknown_keys(both, "uncertainty", {"systematic", "scatter", "kind_scatter"});
    if (both.find("kind_scatter") != both.end())
      read_kind_table(profile_member(both, "uncertainty", "kind_scatter"),
                      "uncertainty.kind_scatter", p.kind_scatter);
    for (const auto& [kind, factors] :
         {std::pair{"systematic", &p.systematic_error}, std::pair{"scatter", &p.scatter_error}}) {
      if (both.find(kind) == both.end()) continue;
      const std::string path = join_path("uncertainty", kind);
      const Json& table = profile_object(profile_member(both, "uncertainty", kind), path);
      reject_unknown_keys(
          table, path, {"contraction", "window", "elementwise", "movement", "reduction", "fused"});
      for (std::size_t i = 0; i < kNumCostClasses; ++i)
        if (table.find(std::string(kCostClassNames[i])) != table.end())
          (*factors)[i] = profile_number(table, path, kCostClassNames[i]);
    }
  }
  if (doc.find("time_scale") != doc.end())
    read_kind_table(profile_member(doc, "", "time_scale"), "time_scale", p.time_scale);
  validate(p);
  return p;
}

/// A profile from JSON text. What `parse_json` rejects (syntax, a number out of range, a
/// duplicate key, too deep nesting) gives a `ProfileError` with the byte offset.
[[nodiscard]] inline DeviceProfile profile_from_json(std::string_view text) {
  nlohmann::json doc;
  try {
    doc = parse_json(text);
  } catch (const JsonError& e) {
    throw ProfileError("", e.reason(), e.offset());
  }
  return profile_from_json_value(doc);
}

/// Reads a profile from a JSON file (`ProfileError` if it cannot be read, e.g. is a directory,
/// or is malformed).
[[nodiscard]] inline DeviceProfile load_profile(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const FileError& e) {
    throw ProfileError("", e.what());
  }
  return profile_from_json(text);
}

/// Writes a profile as JSON (2-space indent, trailing newline); `ProfileError` if it cannot.
inline void save_profile(const DeviceProfile& p, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw ProfileError("", fmt::format("cannot write '{}'", path));
  out << profile_to_json(p) << '\n';
  if (!out) throw ProfileError("", fmt::format("cannot write '{}'", path));
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_PROFILE_JSON_H
