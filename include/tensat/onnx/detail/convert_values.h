// The ONNX importer's converters of import-time values: Constant, Shape, ConstantOfShape, Range,
// Cast, and the constant arithmetic of exporters' shape chains.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_VALUES_H
#define TENSAT_ONNX_DETAIL_CONVERT_VALUES_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

inline void Importer::constant(const NodeContext& c) {
  if (const auto* a = c.attr("value")) {
    if (a->type() != ::onnx::AttributeProto::TENSOR) c.fail("attribute value is not a tensor");
    return set(c, tensor_value(a->t(), c.where, max_constant_));
  }
  Value v;
  if (const auto* a = c.attr("value_float")) {
    v.data = {a->f()};
  } else if (const auto* ai = c.attr("value_int")) {
    v.data = {static_cast<double>(ai->i())};
    v.integer = true;
    v.elem_type = ::onnx::TensorProto::INT64;
  } else if (const auto* af = c.attr("value_floats")) {
    v.data.assign(af->floats().begin(), af->floats().end());
    v.dims = {static_cast<std::int64_t>(v.data.size())};
  } else if (const auto* is = c.attr("value_ints")) {
    v.data.assign(is->ints().begin(), is->ints().end());
    v.dims = {static_cast<std::int64_t>(v.data.size())};
    v.integer = true;
    v.elem_type = ::onnx::TensorProto::INT64;
  } else {
    c.unsupported("a Constant without a supported value attribute");
  }
  set(c, std::move(v));
}

inline void Importer::shape(const NodeContext& c) {
  const Dims& d = c.in(0).dims;
  const auto rank = static_cast<std::int64_t>(d.size());
  // Opset 15: start and end select a range of the dimensions (clamped).
  std::int64_t start = c.int_attr("start", 0), end = c.int_attr("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, 0, rank);
  Value v;
  v.integer = true;
  v.elem_type = ::onnx::TensorProto::INT64;
  for (std::int64_t k = start; k < end; ++k)
    v.data.push_back(static_cast<double>(d[static_cast<std::size_t>(k)]));
  v.dims = {static_cast<std::int64_t>(v.data.size())};
  set(c, std::move(v));
}

inline void Importer::constant_of_shape(const NodeContext& c) {
  const Dims dims = c.ints_input(0);
  Value v;
  v.dims = dims;
  const std::int64_t n = checked_elements(dims, max_constant_, c.where, "the result");
  double fill = 0;
  if (const auto* a = c.attr("value")) {
    if (a->type() != ::onnx::AttributeProto::TENSOR) c.fail("attribute value is not a tensor");
    const Value f = tensor_value(a->t(), c.where, max_constant_);
    if (f.data.size() != 1) c.fail("value must hold one element");
    fill = f.data[0];
    v.integer = f.integer;
    v.elem_type = f.elem_type;
  }
  v.data.assign(static_cast<std::size_t>(n), fill);
  set(c, std::move(v));
}

inline void Importer::range(const NodeContext& c) {
  const double start = c.scalar_input(0), limit = c.scalar_input(1), delta = c.scalar_input(2);
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    c.fail("a degenerate range");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > static_cast<double>(max_constant_)) c.fail("the range is too long");
  Value v;
  v.integer = c.in(0).integer;
  v.elem_type = c.in(0).elem_type;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i)
    v.data.push_back(start + static_cast<double>(i) * delta);
  v.dims = {static_cast<std::int64_t>(v.data.size())};
  set(c, std::move(v));
}

inline void Importer::cast(const NodeContext& c) {
  Value v = c.in(0);
  const std::int64_t to = c.int_attr("to", 0);
  const bool to_float = to == ::onnx::TensorProto::FLOAT || to == ::onnx::TensorProto::DOUBLE;
  const bool to_int = to == ::onnx::TensorProto::INT64 || to == ::onnx::TensorProto::INT32 ||
                      to == ::onnx::TensorProto::INT8 || to == ::onnx::TensorProto::UINT8 ||
                      to == ::onnx::TensorProto::INT16 || to == ::onnx::TensorProto::UINT16;
  const bool to_bool = to == ::onnx::TensorProto::BOOL;
  if (v.tensor) {
    if (!to_float) c.unsupported("a computed tensor can only be cast to a float type");
    return set(c, std::move(v));
  }
  if (!to_float && !to_int && !to_bool)
    c.unsupported(fmt::format("cast of a constant to type {} is not supported", to));
  if (to_int)
    for (double& d : v.data) d = std::isfinite(d) ? std::trunc(d) : 0.0;
  if (to_bool)
    for (double& d : v.data) d = d != 0 ? 1.0 : 0.0;
  v.integer = !to_float;
  v.elem_type = to_float ? ::onnx::TensorProto::FLOAT : static_cast<std::int32_t>(to);
  set(c, std::move(v));
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_VALUES_H
