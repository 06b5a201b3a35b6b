// The ONNX importer's values: an ONNX tensor read into a Value (its dims, element type and, for
// an initializer or a folded shape computation, its data), and the checks every converter uses.
#ifndef TENSAT_ONNX_DETAIL_VALUES_H
#define TENSAT_ONNX_DETAIL_VALUES_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <fmt/format.h>

#include "tensat/onnx/imported_model.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

using tensor::Dims;
using tensor::Tensor;

/// The product of `dims`, or an ImportError when a dimension is negative or the product
/// exceeds `limit` (checked before it can overflow).
inline std::int64_t checked_elements(const Dims& dims, std::int64_t limit, const std::string& where,
                                     std::string_view what) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) throw ImportError(where, fmt::format("{} has a negative dimension {}", what, d));
    if (d != 0 && n > limit / d)
      throw ImportError(where, fmt::format("{} of shape {} has more than {} elements", what,
                                           tensor::dims_to_string(dims), limit));
    n *= d;
  }
  if (n > limit)
    throw ImportError(where, fmt::format("{} of shape {} has more than {} elements", what,
                                         tensor::dims_to_string(dims), limit));
  return n;
}

/// A value during import: a tensor of the program being built, or a constant known at import
/// time (integers for shapes and axes, floats for weights), kept as doubles.
struct Value {
  std::optional<Tensor> tensor;  ///< set for a program tensor
  Dims dims;                     ///< the shape (also of a program tensor)
  std::vector<double> data;      ///< a constant's elements, row-major
  bool integer = false;  ///< a constant of an integer or boolean type (shapes, indices, axes)
  /// The ONNX element type (TensorProto::DataType) of a constant, kept to write it back.
  std::int32_t elem_type = ::onnx::TensorProto::FLOAT;
  [[nodiscard]] bool is_constant() const noexcept { return !tensor.has_value(); }
  [[nodiscard]] std::int64_t elements() const noexcept {
    return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
  }
};

/// IEEE half (its 16 bits) to float.
inline float half_to_float(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<float>::quiet_NaN()
                    : sign * std::numeric_limits<float>::infinity();
  return sign * std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
}

/// The elements of an ONNX TensorProto (FLOAT, DOUBLE, FLOAT16, INT64, INT32, INT16, INT8,
/// UINT16, UINT8, BOOL), from its typed fields or its little-endian raw_data.
inline Value tensor_value(const ::onnx::TensorProto& t, const std::string& where,
                          std::int64_t max_elements) {
  Value v;
  for (std::int64_t d : t.dims()) {
    if (d < 0)
      throw ImportError(where, fmt::format("tensor '{}' has a negative dimension {}", t.name(), d));
    v.dims.push_back(d);
  }
  if (t.has_data_location() && t.data_location() == ::onnx::TensorProto::EXTERNAL)
    throw ImportError(
        where, fmt::format("tensor '{}' keeps its data in an external file, which is not supported",
                           t.name()));
  const std::int64_t n =
      checked_elements(v.dims, max_elements, where, fmt::format("tensor '{}'", t.name()));
  v.elem_type = t.data_type();
  const std::string& raw = t.raw_data();
  const auto from_raw = [&](auto sample, auto convert) {
    using T = decltype(sample);
    if (raw.size() != static_cast<std::size_t>(n) * sizeof(T))
      throw ImportError(
          where,
          fmt::format("tensor '{}': raw_data holds {} bytes, {} elements of {} bytes expected",
                      t.name(), raw.size(), n, sizeof(T)));
    v.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, raw.data() + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      v.data[static_cast<std::size_t>(i)] = convert(x);
    }
  };
  const auto plain = [](auto x) { return static_cast<double>(x); };
  const auto from_field = [&](const auto& field, auto convert) {
    if (field.size() != n)
      throw ImportError(where, fmt::format("tensor '{}' holds {} values for shape {}", t.name(),
                                           field.size(), tensor::dims_to_string(v.dims)));
    v.data.clear();
    for (auto x : field) v.data.push_back(convert(x));
  };
  const auto half = [](auto x) {
    return static_cast<double>(half_to_float(static_cast<std::uint16_t>(x)));
  };
  switch (t.data_type()) {
    case ::onnx::TensorProto::FLOAT:
      raw.empty() ? from_field(t.float_data(), plain) : from_raw(float{}, plain);
      break;
    case ::onnx::TensorProto::DOUBLE:
      raw.empty() ? from_field(t.double_data(), plain) : from_raw(double{}, plain);
      break;
    case ::onnx::TensorProto::FLOAT16:
      raw.empty() ? from_field(t.int32_data(), half) : from_raw(std::uint16_t{}, half);
      break;
    case ::onnx::TensorProto::INT64:
      v.integer = true;
      raw.empty() ? from_field(t.int64_data(), plain) : from_raw(std::int64_t{}, plain);
      break;
    case ::onnx::TensorProto::INT32:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data(), plain) : from_raw(std::int32_t{}, plain);
      break;
    case ::onnx::TensorProto::INT16:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data(), plain) : from_raw(std::int16_t{}, plain);
      break;
    case ::onnx::TensorProto::UINT16:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data(), plain) : from_raw(std::uint16_t{}, plain);
      break;
    case ::onnx::TensorProto::INT8:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data(), plain) : from_raw(std::int8_t{}, plain);
      break;
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::BOOL:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data(), plain) : from_raw(std::uint8_t{}, plain);
      break;
    default:
      throw ImportError(
          where, fmt::format("tensor '{}' has data type {}, which is not supported", t.name(),
                             ::onnx::TensorProto::DataType_IsValid(t.data_type())
                                 ? ::onnx::TensorProto::DataType_Name(
                                       static_cast<::onnx::TensorProto::DataType>(t.data_type()))
                                 : std::to_string(t.data_type())));
  }
  if (t.data_type() == ::onnx::TensorProto::DOUBLE || t.data_type() == ::onnx::TensorProto::FLOAT16)
    v.elem_type = ::onnx::TensorProto::FLOAT;  // the program computes in f32
  return v;
}

/// A constant as an ONNX tensor of its element type (integers as INT64 or INT32, booleans, floats).
inline ::onnx::TensorProto tensor_proto(const Value& v, const std::string& name) {
  ::onnx::TensorProto t;
  t.set_name(name);
  for (std::int64_t d : v.dims) t.add_dims(d);
  const std::int32_t type = v.integer ? v.elem_type : ::onnx::TensorProto::FLOAT;
  switch (type) {
    case ::onnx::TensorProto::INT32:
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::UINT16:
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::BOOL:
      t.set_data_type(type);
      for (double d : v.data) t.add_int32_data(static_cast<std::int32_t>(d));
      break;
    case ::onnx::TensorProto::FLOAT:
      t.set_data_type(::onnx::TensorProto::FLOAT);
      for (double d : v.data) t.add_float_data(static_cast<float>(d));
      break;
    default:
      t.set_data_type(::onnx::TensorProto::INT64);
      for (double d : v.data) t.add_int64_data(static_cast<std::int64_t>(d));
      break;
  }
  return t;
}

/// Dims from a standard container (Dims is a small vector without insert/erase).
template <class Container>
Dims dims_of(const Container& values) {
  Dims out;
  for (auto v : values) out.push_back(static_cast<std::int64_t>(v));
  return out;
}
inline std::vector<std::int64_t> vector_of(const Dims& d) {
  return std::vector<std::int64_t>(d.begin(), d.end());
}

/// A name usable as a symbol of the dialect's s-expressions: characters other than letters,
/// digits and `_ . / : -` become `_`; a name that would read as a number or an operator gets a
/// prefix or suffix.
inline std::string symbol_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '/' || c == ':' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9') || out[0] == '-' || out[0] == '.')
    out.insert(out.begin(), 'v');
  if (tensor::op_from_name(out)) out += '_';
  return out;
}

/// Normalizes a possibly negative axis of a rank-`rank` tensor.
inline std::int64_t axis_of(std::int64_t axis, std::size_t rank, const std::string& where) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw ImportError(where, fmt::format("axis {} is outside a rank-{} tensor", axis, rank));
  return axis < 0 ? axis + r : axis;
}

/// The key under which the importer keeps a constant it derives from ONNX value `base` (a
/// negated subtrahend, a scaled Gemm operand, a clip bound): it starts with a control character
/// that ONNX names do not use in practice, so it cannot collide with a value of the model (the
/// weight's symbol is `symbol_name` of it).
inline std::string derived_key(std::string_view base, std::string_view suffix) {
  return "\x1f" + std::string(base) + "/" + std::string(suffix);
}

/// A feature of a known operator that the importer does not map (dilations, ceil_mode, ...):
/// the node becomes opaque when it can (thrown inside the importer only). `checked`: the
/// operator's inputs have been validated (ranks, attribute lengths) before, so ONNX's shape
/// inference function can be trusted with the node (libonnx 1.12's functions index dimensions
/// without checking ranks: an invalid node crashes them).
struct Unsupported {
  std::string reason;
  bool checked = false;
};

/// ONNX operators (default domain) whose output has the shape of input 0: the shape of such an
/// opaque node is known without ONNX's shape inference.
inline bool preserves_shape(std::string_view op) {
  static const std::set<std::string_view> kOps{"Abs",
                                               "Acos",
                                               "Acosh",
                                               "Asin",
                                               "Asinh",
                                               "Atan",
                                               "Atanh",
                                               "Ceil",
                                               "Celu",
                                               "Cos",
                                               "Cosh",
                                               "CumSum",
                                               "Elu",
                                               "Erf",
                                               "Floor",
                                               "Hardmax",
                                               "InstanceNormalization",
                                               "Log",
                                               "LogSoftmax",
                                               "LpNormalization",
                                               "MeanVarianceNormalization",
                                               "Mish",
                                               "PRelu",
                                               "Round",
                                               "Selu",
                                               "Shrink",
                                               "Sign",
                                               "Sin",
                                               "Sinh",
                                               "Softplus",
                                               "Softsign",
                                               "Tan",
                                               "ThresholdedRelu",
                                               "Trilu"};
  return kOps.count(op) != 0;
}
/// ONNX operators whose output is their inputs broadcast together (numpy rules).
inline bool broadcasts_inputs(std::string_view op) {
  return op == "Max" || op == "Min" || op == "Mod";
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_VALUES_H
