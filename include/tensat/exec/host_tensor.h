// HostTensor, the executors' tensor on the host (row-major f32, f16/bf16 values stored rounded),
// Bindings (inputs and weights by name), the execution errors, and rounding to a dtype.
#ifndef TENSAT_EXEC_HOST_TENSOR_H
#define TENSAT_EXEC_HOST_TENSOR_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// A tensor on the host: row-major f32 data (f16/bf16 values are stored rounded to their type).
struct HostTensor {
  DType dtype = DType::F32;
  Dims dims;
  std::vector<float> data;

  HostTensor() = default;
  HostTensor(Dims d, DType t = DType::F32)
      : dtype(t), dims(std::move(d)), data(static_cast<std::size_t>(count(dims)), 0.0f) {}
  HostTensor(Dims d, std::vector<float> values, DType t = DType::F32)
      : dtype(t), dims(std::move(d)), data(std::move(values)) {}

  [[nodiscard]] static std::int64_t count(const Dims& d) noexcept {
    std::int64_t n = 1;
    for (std::int64_t x : d) n *= x;
    return n;
  }
  [[nodiscard]] std::int64_t elements() const noexcept { return count(dims); }
  [[nodiscard]] std::size_t rank() const noexcept { return dims.size(); }
};

/// Inputs and weights by name.
using Bindings = std::map<std::string, HostTensor>;

/// An execution failure.
class ExecutionError : public Error {
 public:
  using Error::Error;
};
/// An `input` or `weight` with no binding of its name.
class MissingBindingError : public ExecutionError {
 public:
  explicit MissingBindingError(std::string name)
      : ExecutionError(fmt::format("execute: no binding for '{}'", name)), name_(std::move(name)) {}
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};
/// A binding whose shape differs from its declaration.
class BindingShapeError : public ExecutionError {
 public:
  BindingShapeError(std::string name, const Dims& want, const Dims& got)
      : ExecutionError(fmt::format("execute: '{}' is declared {} but bound to {}", name,
                                   dims_to_string(want), dims_to_string(got))),
        name_(std::move(name)) {}
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

/// An `opaque` node: an operator the dialect does not know, which no executor can run.
class OpaqueOpError : public ExecutionError {
 public:
  OpaqueOpError(std::size_t node, std::string op_type)
      : ExecutionError(fmt::format(
            "execute: node {} is the opaque operator '{}', which the executor cannot run", node,
            op_type)),
        op_type_(std::move(op_type)) {}
  [[nodiscard]] const std::string& op_type() const noexcept { return op_type_; }

 private:
  std::string op_type_;
};

/// f32 rounded to bf16 (round to nearest even on the upper 16 bits; NaN kept).
[[nodiscard]] inline float round_bf16(float x) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float out;
  std::memcpy(&out, &u, 4);
  return out;
}
/// f32 rounded to IEEE f16 (round to nearest even; overflow to infinity; subnormals kept).
[[nodiscard]] inline float round_f16(float x) noexcept {
  if (std::isnan(x) || std::isinf(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  if (a < std::ldexp(1.0f, -25))
    return std::copysign(0.0f, x);  // below half the smallest subnormal
  int e = 0;
  std::frexp(a, &e);                     // a = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, -14);  // f16 exponent (subnormals share -14)
  const float quantum = std::ldexp(1.0f, exp - 10);
  return std::copysign(std::nearbyint(a / quantum) * quantum, x);  // default rounding: to even
}
[[nodiscard]] inline float round_to(float x, DType t) noexcept {
  return t == DType::F32 ? x : t == DType::BF16 ? round_bf16(x) : round_f16(x);
}
inline void round_tensor(HostTensor& t) {
  if (t.dtype == DType::F32) return;
  for (float& v : t.data) v = round_to(v, t.dtype);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_HOST_TENSOR_H
