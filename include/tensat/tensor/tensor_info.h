// TensorInfo: what a class of the tensor dialect denotes (its kind, dtype, shape, layout, and
// whether it depends on weights only), with Dims and a one-line description.
#ifndef TENSAT_TENSOR_TENSOR_INFO_H
#define TENSAT_TENSOR_TENSOR_INFO_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/small_vector.h"
#include "tensat/core/symbol.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Dimensions of a tensor, or the values of an `ints` list.
using Dims = SmallVector<std::int64_t, 4>;

/// What a class denotes.
enum class Kind : std::uint8_t {
  Invalid,  ///< an ill-typed node (never added by the dialect's rules or builder)
  Int,      ///< a `num`
  Ints,     ///< an `ints` list
  Name,     ///< a `sym`
  Tensor,   ///< a tensor
  Pair,     ///< the two outputs of a `split`
  Outputs,  ///< a `noop`: several outputs joined
};

/// The analysis data of a class: kind, dtype, shape and whether the value depends on weights only.
struct TensorInfo {
  Kind kind = Kind::Invalid;
  DType dtype = DType::F32;
  /// Computable from weights alone (TASO's precomputable subgraphs): evaluated once, free at run
  /// time.
  bool weight_only = false;
  /// Part of a fused kernel's body: depends on an `arg` (never computed on its own).
  bool symbolic = false;
  /// Int: the value; Name: the symbol index.
  std::int64_t value = 0;
  /// Tensor: the shape; Ints: the values; Pair: the first output's shape.
  Dims dims;
  /// Pair: the second output's shape.
  Dims dims2;
  /// Tensor and Pair: how the value is stored (`dims` is always the logical shape). Only a rank-4
  /// tensor can be `ChannelsLast`.
  Layout layout = Layout::Contiguous;

  [[nodiscard]] bool is_tensor() const noexcept { return kind == Kind::Tensor; }
  /// The same kind of value: kind, dtype, shapes and layout (what two equal terms must share;
  /// `weight_only` and `value` aside).
  [[nodiscard]] bool same_type(const TensorInfo& other) const noexcept {
    return kind == other.kind && dtype == other.dtype && dims == other.dims &&
           dims2 == other.dims2 && layout == other.layout;
  }
  [[nodiscard]] std::size_t rank() const noexcept { return dims.size(); }
  /// Elements of a tensor (1 for a scalar, shape []).
  [[nodiscard]] std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
  }
  [[nodiscard]] std::int64_t bytes() const noexcept {
    return elements() * static_cast<std::int64_t>(dtype_bytes(dtype));
  }

  friend bool operator==(const TensorInfo& a, const TensorInfo& b) noexcept {
    return a.kind == b.kind && a.dtype == b.dtype && a.weight_only == b.weight_only &&
           a.symbolic == b.symbolic && a.value == b.value && a.dims == b.dims &&
           a.dims2 == b.dims2 && a.layout == b.layout;
  }
  friend bool operator!=(const TensorInfo& a, const TensorInfo& b) noexcept { return !(a == b); }
};

/// The row-major strides of `dims`, in elements: the last axis 1.
[[nodiscard]] inline std::vector<std::int64_t> strides_of(const Dims& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

/// `dims` around `axis` (in [0, rank)): the product of the dims before it (`outer`), its own
/// (`extent`), and the product of those after it (`inner`).
inline void split_dims(const Dims& dims, std::int64_t axis, std::int64_t& outer,
                       std::int64_t& extent, std::int64_t& inner) {
  outer = 1;
  inner = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<std::size_t>(i)];
  extent = dims[static_cast<std::size_t>(axis)];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
}

/// "[1, 512]".
[[nodiscard]] inline std::string dims_to_string(const Dims& dims) {
  return fmt::format("[{}]", fmt::join(dims.begin(), dims.end(), ", "));
}

/// A one-line description: "tensor f32 [1, 512]", "int 3", ...
[[nodiscard]] inline std::string describe(const TensorInfo& info) {
  switch (info.kind) {
    case Kind::Invalid:
      return "invalid";
    case Kind::Int:
      return fmt::format("int {}", info.value);
    case Kind::Ints:
      return fmt::format("ints {}", dims_to_string(info.dims));
    case Kind::Name:
      return fmt::format("name {}",
                         Symbol::from_index(static_cast<std::uint32_t>(info.value)).str());
    case Kind::Tensor:
      return fmt::format("{}tensor {} {}{}", info.symbolic ? "symbolic " : "",
                         dtype_name(info.dtype), dims_to_string(info.dims),
                         info.layout == Layout::Contiguous ? "" : " channels_last");
    case Kind::Pair:
      return fmt::format("pair {} {} {}{}", dtype_name(info.dtype), dims_to_string(info.dims),
                         dims_to_string(info.dims2),
                         info.layout == Layout::Contiguous ? "" : " channels_last");
    case Kind::Outputs:
      return "outputs";
  }
  return "?";
}

/// The float a `num` or `sym` child of `(scalar v)` spells (see `TensorNode::scalar_atom`).
[[nodiscard]] inline std::optional<float> scalar_of_info(const TensorInfo& atom) {
  if (atom.kind == Kind::Int) return TensorNode::scalar_of_atom(TensorNode::num(atom.value));
  if (atom.kind != Kind::Name) return std::nullopt;
  return TensorNode::scalar_of_atom(
      TensorNode::sym(Symbol::from_index(static_cast<std::uint32_t>(atom.value)).str()));
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_TENSOR_INFO_H
