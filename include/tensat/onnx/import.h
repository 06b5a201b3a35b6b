// ONNX import: an ONNX model file -> a tensor-dialect program plus the bindings of its weights.
// Needs Debian's libonnx-dev (the protobuf classes of onnx.proto, and ONNX's shape inference for
// operators kept opaque): link `tensat::onnx`, which CMake defines when it finds ONNX (option
// TENSAT_WITH_ONNX) and which defines TENSAT_HAS_ONNX.
#ifndef TENSAT_ONNX_IMPORT_H
#define TENSAT_ONNX_IMPORT_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/exec/executor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// A model that cannot be imported: not an ONNX file, an opset the importer does not support, a
/// missing input shape, a value nothing defines, inconsistent shapes, an operator kept opaque
/// whose output shape cannot be known. `where()`: the node (index, name and op type) or the part
/// of the model ("input 'x'", "file"), empty if none.
class ImportError : public Error {
 public:
  ImportError(std::string where, const std::string& reason)
      : Error(where.empty() ? "onnx import: " + reason
                            : fmt::format("onnx import: {}: {}", where, reason)),
        where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

struct ImportOptions {
  /// Shapes of graph inputs, by name: required for an input with a symbolic or unknown
  /// dimension (a dynamic batch size), and overriding the model's shape when given.
  std::map<std::string, tensor::Dims> input_shapes;
  /// An operator the dialect does not know, or a feature of one it does not support (ceil_mode,
  /// dilations, ...), becomes an `opaque` node when its output shape can be known (ONNX shape
  /// inference, or the model's value_info). false: such a node is an `ImportError`.
  bool allow_opaque = true;
  /// Size limits (elements): a program tensor, and a constant folded at import time (held as
  /// doubles). Beyond them a model is refused rather than risking overflow or exhausting memory.
  std::int64_t max_tensor_elements = std::int64_t{1} << 40;
  std::int64_t max_constant_elements = std::int64_t{1} << 24;
};

/// An ONNX node imported as an `opaque` node: what export needs to write it back.
struct OpaqueOp {
  /// The node with its op type, domain, name and attributes (inputs and outputs cleared).
  ::onnx::NodeProto node;
  static constexpr std::int64_t kOmitted = -1;   ///< an optional input left out ("")
  static constexpr std::int64_t kConstant = -2;  ///< an integer constant, in `constants`
  /// Per ONNX input: the index of the opaque node's tensor operand that feeds it, or kOmitted,
  /// or kConstant.
  std::vector<std::int64_t> inputs;
  /// The integer constants fed to it, by ONNX input index (float constants are weights).
  std::map<std::size_t, ::onnx::TensorProto> constants;
  /// Why the node is opaque: "unknown operator", or the unsupported feature.
  std::string reason;
};

/// What `import_model` returns: the program (its root the single output, or a `noop` of the
/// outputs in the model's order), the values of its weights (initializers and `Constant`
/// tensors the program reads), and the model's names.
struct ImportedModel {
  RecExpr<tensor::TensorNode> program;
  tensor::Bindings weights;
  std::vector<std::string> inputs;  ///< graph inputs that are not initializers, in order
  std::vector<std::string>
      input_symbols;  ///< the program's `input` names for them (valid symbols, unique)
  std::vector<tensor::Dims> input_dims;  ///< their shapes, as imported
  std::vector<std::string> outputs;      ///< graph outputs, in order
  std::int64_t opset = 0;                ///< the default domain's opset version
  std::int64_t ir_version = 0;
  /// Every opset the model imports (domain, version), the default domain as "".
  std::vector<std::pair<std::string, std::int64_t>> opset_imports;
  /// The operator types kept as `opaque` nodes, each once, in order of first appearance
  /// ("Sin"; "com.microsoft.FusedGemm" outside the default domain).
  std::vector<std::string> opaque_ops;
  /// Every opaque node's record, by the type symbol of its `opaque` node.
  std::map<std::string, OpaqueOp> opaque;
};

/// Opset versions of the default domain the importer accepts (those of PyTorch's and Paddle's
/// exporters).
inline constexpr std::int64_t kMinOpset = 9;
inline constexpr std::int64_t kMaxOpset = 17;

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

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, const ImportOptions& options)
      : model_(model), options_(options) {}

  ImportedModel run() {
    ImportedModel out;
    out.opset = default_opset();
    out.ir_version = model_.ir_version();
    opset_ = out.opset;
    for (const auto& o : model_.opset_import())
      out.opset_imports.emplace_back(o.domain() == "ai.onnx" ? std::string() : o.domain(),
                                     o.version());
    const ::onnx::GraphProto& graph = model_.graph();
    for (const auto& init : graph.initializer()) {
      const std::string where = fmt::format("initializer '{}'", init.name());
      if (values_.count(init.name())) throw ImportError(where, "is defined twice");
      values_[init.name()] = tensor_value(init, where, max_constant_);
    }
    for (const auto& input : graph.input()) {
      if (values_.count(input.name())) {
        if (values_[input.name()].is_constant() && !listed_inputs_.count(input.name()))
          continue;  // an initializer listed as an input (old exporters)
        throw ImportError(fmt::format("input '{}'", input.name()), "is listed twice");
      }
      listed_inputs_.insert(input.name());
      Value v = graph_input(input);
      out.inputs.push_back(input.name());
      out.input_dims.push_back(v.dims);
      out.input_symbols.push_back(std::string(symbol_of_input_.at(input.name())));
      values_[input.name()] = std::move(v);
    }
    for (const auto& [name, dims] : options_.input_shapes)
      if (!listed_inputs_.count(name))
        throw ImportError(fmt::format("input '{}'", name),
                          "a shape is given for it, but the model has no such input");
    for (int i = 0; i < graph.node_size(); ++i) node(graph.node(i), i);
    if (graph.output_size() == 0) throw ImportError("graph", "the model has no outputs");
    for (const auto& output : graph.output()) {
      const Value& v = value(output.name(), fmt::format("output '{}'", output.name()));
      Tensor t = v.tensor ? *v.tensor : weight_of(v, output.name());
      g_.output(t);
      out.outputs.push_back(output.name());
    }
    out.program = g_.program();
    // Only the weights and opaque records the program still uses.
    for (std::size_t i = 0; i < out.program.size(); ++i) {
      const tensor::TensorNode& n = out.program[Id(i)];
      if (n.op() != tensor::Op::Weight && n.op() != tensor::Op::Opaque) continue;
      const std::string name(out.program[n.children()[0]].symbol().str());
      if (n.op() == tensor::Op::Weight) {
        if (auto it = weights_.find(name); it != weights_.end())
          out.weights.emplace(name, it->second);
        continue;
      }
      auto it = opaque_.find(name);
      if (it == opaque_.end() || out.opaque.count(name)) continue;
      out.opaque.emplace(name, it->second);
      const std::string type =
          it->second.node.domain().empty() || it->second.node.domain() == "ai.onnx"
              ? it->second.node.op_type()
              : it->second.node.domain() + "." + it->second.node.op_type();
      if (std::find(out.opaque_ops.begin(), out.opaque_ops.end(), type) == out.opaque_ops.end())
        out.opaque_ops.push_back(type);
    }
    return out;
  }

 private:
  std::int64_t default_opset() const {
    std::optional<std::int64_t> opset;
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (!opset) throw ImportError("model", "no opset of the default ONNX domain is imported");
    if (*opset < kMinOpset || *opset > kMaxOpset)
      throw ImportError("model", fmt::format("opset {} is not supported (supported: {} to {})",
                                             *opset, kMinOpset, kMaxOpset));
    return *opset;
  }

  Value graph_input(const ::onnx::ValueInfoProto& input) {
    const std::string where = fmt::format("input '{}'", input.name());
    const auto& type = input.type();
    if (!type.has_tensor_type()) throw ImportError(where, "is not a tensor");
    if (type.tensor_type().elem_type() != ::onnx::TensorProto::FLOAT)
      throw ImportError(where, "only float inputs are supported");
    const bool has_shape = type.tensor_type().has_shape();
    const auto& shape = type.tensor_type().shape();
    Dims dims;
    if (auto it = options_.input_shapes.find(input.name()); it != options_.input_shapes.end()) {
      dims = it->second;
      if (has_shape && shape.dim_size() != static_cast<int>(dims.size()))
        throw ImportError(where,
                          fmt::format("the given shape {} has rank {}, the model's rank {}",
                                      tensor::dims_to_string(dims), dims.size(), shape.dim_size()));
    } else {
      if (!has_shape) throw ImportError(where, "has no shape; give it in input_shapes");
      for (const auto& d : shape.dim()) {
        if (d.has_dim_value()) {
          dims.push_back(d.dim_value());
          continue;
        }
        if (auto p = dim_params_.find(d.dim_param());
            !d.dim_param().empty() && p != dim_params_.end()) {
          dims.push_back(p->second);  // the same symbol, fixed by another input
          continue;
        }
        throw ImportError(
            where, fmt::format("dimension '{}' is symbolic; give the input's shape in input_shapes "
                               "(tensat-opt: --input {}=d0,d1,...)",
                               d.dim_param(), input.name()));
      }
    }
    for (std::int64_t d : dims)
      if (d <= 0) throw ImportError(where, fmt::format("dimension {} is not positive", d));
    checked_elements(dims, max_tensor_, where, "the input");
    // The model's fixed dimensions must agree; its symbolic ones are bound for value_info.
    if (has_shape)
      for (int k = 0; k < shape.dim_size(); ++k) {
        const auto& d = shape.dim(k);
        const std::int64_t given = dims[static_cast<std::size_t>(k)];
        if (d.has_dim_value() && d.dim_value() != given)
          throw ImportError(
              where, fmt::format("the given shape {} disagrees with the model's dimension {} = {}",
                                 tensor::dims_to_string(dims), k, d.dim_value()));
        if (d.has_dim_param() && !d.dim_param().empty()) {
          auto [p, inserted] = dim_params_.emplace(d.dim_param(), given);
          if (!inserted && p->second != given)
            throw ImportError(where,
                              fmt::format("dimension '{}' is {} here but {} in another input",
                                          d.dim_param(), given, p->second));
        }
      }
    Value v;
    v.dims = dims;
    std::string symbol = symbol_name(input.name());
    while (used_names_.count(symbol)) symbol += "_";
    used_names_.insert(symbol);
    symbol_of_input_.emplace(input.name(), symbol);
    v.tensor = g_.input(symbol, dims);
    return v;
  }

  // ------------------------------------------------------------------- helpers

  const Value& value(const std::string& name, const std::string& where) const {
    auto it = values_.find(name);
    if (it == values_.end())
      throw ImportError(where, fmt::format("reads '{}', which nothing defines", name));
    return it->second;
  }

  /// A float constant as a weight of the program (named after its ONNX value, made unique); a
  /// one-element one as a `scalar`, its value in the term (a Pow's exponent, an epsilon), so
  /// that rules can read it (reshaped to its ONNX shape when that is not [1] or []).
  Tensor weight_of(const Value& v, const std::string& onnx_name) {
    if (v.tensor) return *v.tensor;
    if (auto it = weight_tensors_.find(onnx_name); it != weight_tensors_.end()) return it->second;
    if (v.data.size() == 1) {
      const Tensor s = g_.scalar(static_cast<float>(v.data[0]));
      return v.dims.empty() || v.dims == Dims{1} ? s : g_.reshape(s, v.dims);
    }
    std::string name = symbol_name(onnx_name);
    while (weights_.count(name) || used_names_.count(name)) name += "_";
    used_names_.insert(name);
    const Dims dims = v.dims.empty() ? Dims{1} : v.dims;  // a scalar as a one-element tensor
    if (v.data.empty())
      throw ImportError(fmt::format("value '{}'", onnx_name), "an empty tensor cannot be a weight");
    tensor::HostTensor h(dims);
    for (std::size_t i = 0; i < v.data.size(); ++i) h.data[i] = static_cast<float>(v.data[i]);
    weights_.emplace(name, std::move(h));
    const Tensor t = g_.weight(name, dims);
    weight_tensors_.emplace(onnx_name, t);
    return t;
  }
  /// A one-element weight holding `x`, named after `key`.
  Tensor scalar_weight(double x, const std::string& key) {
    Value v;
    v.dims = {1};
    v.data = {x};
    return weight_of(v, key);
  }

  struct NodeContext {
    const ::onnx::NodeProto& node;
    std::string where;
    Importer& self;

    [[nodiscard]] std::size_t inputs() const {
      // Trailing empty names are omitted optional inputs.
      std::size_t n = static_cast<std::size_t>(node.input_size());
      while (n > 0 && node.input(static_cast<int>(n - 1)).empty()) --n;
      return n;
    }
    [[nodiscard]] bool has_input(std::size_t i) const {
      return i < inputs() && !node.input(static_cast<int>(i)).empty();
    }
    [[nodiscard]] const Value& in(std::size_t i) const {
      if (!has_input(i)) throw ImportError(where, fmt::format("input {} is missing", i));
      return self.value(node.input(static_cast<int>(i)), where);
    }
    [[nodiscard]] const std::string& input_name(std::size_t i) const {
      return node.input(static_cast<int>(i));
    }
    /// The key of a constant this node derives from its first output's name (see `derived_key`).
    [[nodiscard]] std::string derived(std::string_view suffix) const {
      return derived_key(node.output_size() > 0 ? node.output(0) : where, suffix);
    }
    Tensor tensor(std::size_t i) const { return self.weight_of(in(i), input_name(i)); }
    [[nodiscard]] const ::onnx::AttributeProto* attr(std::string_view name) const {
      for (const auto& a : node.attribute())
        if (a.name() == name) return &a;
      return nullptr;
    }
    [[nodiscard]] std::int64_t int_attr(std::string_view name, std::int64_t fallback) const {
      const auto* a = attr(name);
      if (!a) return fallback;
      if (a->type() != ::onnx::AttributeProto::INT)
        throw ImportError(where, fmt::format("attribute {} is not an int", name));
      return a->i();
    }
    [[nodiscard]] double float_attr(std::string_view name, double fallback) const {
      const auto* a = attr(name);
      if (!a) return fallback;
      if (a->type() != ::onnx::AttributeProto::FLOAT)
        throw ImportError(where, fmt::format("attribute {} is not a float", name));
      return a->f();
    }
    [[nodiscard]] std::string string_attr(std::string_view name,
                                          const std::string& fallback) const {
      const auto* a = attr(name);
      if (!a) return fallback;
      if (a->type() != ::onnx::AttributeProto::STRING)
        throw ImportError(where, fmt::format("attribute {} is not a string", name));
      return a->s();
    }
    [[nodiscard]] std::optional<Dims> ints_attr(std::string_view name) const {
      const auto* a = attr(name);
      if (!a) return std::nullopt;
      if (a->type() != ::onnx::AttributeProto::INTS)
        throw ImportError(where, fmt::format("attribute {} is not a list of ints", name));
      if (a->ints_size() > 64)
        throw ImportError(where, fmt::format("attribute {} has {} values", name, a->ints_size()));
      return dims_of(a->ints());
    }
    [[nodiscard]] std::optional<std::vector<double>> floats_attr(std::string_view name) const {
      const auto* a = attr(name);
      if (!a) return std::nullopt;
      if (a->type() != ::onnx::AttributeProto::FLOATS)
        throw ImportError(where, fmt::format("attribute {} is not a list of floats", name));
      return std::vector<double>(a->floats().begin(), a->floats().end());
    }
    /// The integers of constant input `i` (shapes, axes, indices).
    [[nodiscard]] Dims ints_input(std::size_t i) const {
      const Value& v = in(i);
      if (!v.is_constant())
        throw ImportError(
            where, fmt::format("input {} ('{}') must be known at import time (a constant or a "
                               "Shape-derived value), not computed by the model",
                               i, input_name(i)));
      if (v.data.size() > 64)
        throw ImportError(where, fmt::format("input {} has {} values", i, v.data.size()));
      Dims out;
      for (double d : v.data) {
        if (!(std::fabs(d) < 9.2e18))
          throw ImportError(where, fmt::format("input {} holds {}, not an int64", i, d));
        out.push_back(static_cast<std::int64_t>(d));
      }
      return out;
    }
    /// The doubles of constant input `i`.
    [[nodiscard]] const std::vector<double>& constant_input(std::size_t i) const {
      const Value& v = in(i);
      if (!v.is_constant())
        throw Unsupported{
            fmt::format("input {} ('{}') is computed by the model, not an import-time constant", i,
                        input_name(i))};
      return v.data;
    }
    /// The one value of constant input `i`.
    [[nodiscard]] double scalar_input(std::size_t i) const {
      const std::vector<double>& v = constant_input(i);
      if (v.size() != 1)
        throw ImportError(where, fmt::format("input {} must hold one value, not {}", i, v.size()));
      return v[0];
    }
    [[noreturn]] void fail(const std::string& reason) const { throw ImportError(where, reason); }
    [[noreturn]] void unsupported(const std::string& reason) const {
      throw Unsupported{reason, false};
    }
    /// `unsupported`, once the node's inputs are validated (see `Unsupported::checked`).
    [[noreturn]] void unsupported_checked(const std::string& reason) const {
      throw Unsupported{reason, true};
    }
  };

  void set_tensor(const NodeContext& c, Tensor t, int output = 0) {
    Value v;
    v.dims = g_.shape(t);
    checked_elements(v.dims, max_tensor_, c.where, "the result");
    v.tensor = t;
    set(c, std::move(v), output);
  }
  void set(const NodeContext& c, Value v, int output = 0) {
    if (output >= c.node.output_size()) c.fail(fmt::format("has no output {}", output));
    const std::string& name = c.node.output(output);
    if (name.empty()) return;  // an optional output nobody reads
    if (values_.count(name)) c.fail(fmt::format("defines '{}', which is already defined", name));
    if (v.is_constant()) checked_elements(v.dims, max_constant_, c.where, "a constant");
    values_[name] = std::move(v);
  }

  /// Broadcast shape of two shapes (numpy rules).
  static Dims broadcast_dims(const Dims& a, const Dims& b, const std::string& where) {
    const std::size_t r = std::max(a.size(), b.size());
    Dims out(r, 0);
    for (std::size_t i = 0; i < r; ++i) {
      const std::int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
      const std::int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
      if (x != y && x != 1 && y != 1)
        throw ImportError(where, fmt::format("shapes {} and {} do not broadcast",
                                             tensor::dims_to_string(a), tensor::dims_to_string(b)));
      out[i] = x == 1 ? y : x;
    }
    return out;
  }
  /// The flat index into `v` of element `flat` of a tensor of shape `out` it is broadcast to.
  static std::int64_t broadcast_index(const Value& v, const Dims& out, std::int64_t flat) {
    const std::size_t r = out.size();
    std::int64_t idx = 0, stride = 1;
    for (std::size_t k = r; k-- > 0;) {
      const std::int64_t coord = flat % out[k];
      flat /= out[k];
      const std::size_t off = r - v.dims.size();
      if (k >= off) {
        const std::int64_t d = v.dims[k - off];
        idx += (d == 1 ? 0 : coord) * stride;
        stride *= d;
      }
    }
    return idx;
  }
  Value fold_binary(const Value& a, const Value& b, const std::function<double(double, double)>& f,
                    const std::string& where) {
    Value out;
    out.dims = broadcast_dims(a.dims, b.dims, where);
    const std::int64_t n = checked_elements(out.dims, max_constant_, where, "a folded constant");
    out.integer = a.integer && b.integer;
    out.elem_type = a.integer ? a.elem_type : b.elem_type;
    out.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      out.data[static_cast<std::size_t>(i)] =
          f(a.data[static_cast<std::size_t>(broadcast_index(a, out.dims, i))],
            b.data[static_cast<std::size_t>(broadcast_index(b, out.dims, i))]);
    return out;
  }
  static Value fold_unary(Value v, const std::function<double(double)>& f) {
    for (double& d : v.data) d = f(d);
    return v;
  }
  /// An integer constant holding a boolean result.
  static Value as_bool(Value v) {
    v.integer = true;
    v.elem_type = ::onnx::TensorProto::BOOL;
    return v;
  }

  /// TensorFlow SAME padding of one spatial axis: (before, after).
  static std::pair<std::int64_t, std::int64_t> same_pads(std::int64_t in, std::int64_t k,
                                                         std::int64_t s) {
    const std::int64_t out = (in + s - 1) / s;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
    return {total / 2, total - total / 2};
  }

  /// How `window_padding` pads the input when neither SAME nor VALID fits: not at all (the
  /// operator is unsupported), with zeros (a convolution, an average that counts the padding), or
  /// by repeating the edge rows (a max: the repeated values lie in every window that reaches the
  /// padding as long as each pad is below the kernel, so the max is the max over the real rows).
  enum class ExplicitPads { Reject, Zeros, Edge };

  /// `x` with its first row along `axis` repeated `before` times in front and its last row
  /// repeated `after` times behind.
  Tensor edge_pad(Tensor x, std::int64_t axis, std::int64_t before, std::int64_t after) {
    const std::int64_t n = g_.shape(x)[static_cast<std::size_t>(axis)];
    std::vector<Tensor> parts;
    if (before) parts.assign(static_cast<std::size_t>(before), g_.slice(x, axis, 0, 1));
    parts.push_back(x);
    if (after)
      parts.insert(parts.end(), static_cast<std::size_t>(after), g_.slice(x, axis, n - 1, n));
    return g_.concat(axis, parts);
  }

  /// The dialect's padding for a window op, from ONNX's pads/auto_pad; pads the input explicitly
  /// as `explicit_pads` says when neither SAME nor VALID fits.
  tensor::Padding window_padding(const NodeContext& c, Tensor& x, std::int64_t kh, std::int64_t kw,
                                 std::int64_t sh, std::int64_t sw, ExplicitPads explicit_pads) {
    const Dims d = g_.shape(x);  // a copy: adding nodes may move the builder's infos
    Dims pads = c.ints_attr("pads").value_or(Dims{0, 0, 0, 0});
    if (pads.size() != 4) c.fail("pads must have 4 values for a 2-D window");
    std::string auto_pad = c.string_attr("auto_pad", "NOTSET");
    if (auto_pad == "VALID") return tensor::Padding::Valid;
    const auto [th, bh] = same_pads(d[2], kh, sh);
    const auto [tw, bw] = same_pads(d[3], kw, sw);
    if (auto_pad == "SAME_UPPER") return tensor::Padding::Same;
    if (auto_pad == "SAME_LOWER") {
      if (th == bh && tw == bw) return tensor::Padding::Same;
      pads = {bh, bw, th, tw};
    } else if (auto_pad != "NOTSET") {
      c.fail(fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                         auto_pad));
    }
    for (std::int64_t p : pads)
      if (p < 0 || p > (std::int64_t{1} << 20)) c.fail(fmt::format("pad {} is out of range", p));
    if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; }))
      return tensor::Padding::Valid;
    if (pads == Dims{th, tw, bh, bw}) return tensor::Padding::Same;
    if (explicit_pads == ExplicitPads::Reject)
      c.unsupported_checked(
          fmt::format("pads {} are neither SAME nor VALID, which this operator cannot take",
                      tensor::dims_to_string(pads)));
    if (explicit_pads == ExplicitPads::Edge) {
      if (pads[0] >= kh || pads[2] >= kh || pads[1] >= kw || pads[3] >= kw)
        c.unsupported_checked(
            fmt::format("pads {} reach a kernel's extent or more", tensor::dims_to_string(pads)));
      if (pads[0] || pads[2]) x = edge_pad(x, 2, pads[0], pads[2]);
      if (pads[1] || pads[3]) x = edge_pad(x, 3, pads[1], pads[3]);
      return tensor::Padding::Valid;
    }
    if (pads[0] || pads[2]) x = g_.pad(x, 2, pads[0], pads[2]);
    if (pads[1] || pads[3]) x = g_.pad(x, 3, pads[1], pads[3]);
    return tensor::Padding::Valid;
  }

  void require_unit(const NodeContext& c, std::string_view attr) const {
    if (auto v = c.ints_attr(attr))
      for (std::int64_t d : *v)
        if (d != 1) c.unsupported_checked(fmt::format("{} other than 1 are not supported", attr));
  }
  /// Two positive window values (kernel, strides) from a 2-value attribute.
  static std::pair<std::int64_t, std::int64_t> pair_of(const NodeContext& c, const Dims& v,
                                                       std::string_view what) {
    if (v.size() != 2) c.unsupported(fmt::format("{} must have 2 values (2-D windows only)", what));
    for (std::int64_t x : v)
      if (x <= 0 || x > (std::int64_t{1} << 20))
        c.fail(fmt::format("{} {} is out of range", what, x));
    return {v[0], v[1]};
  }

  // ------------------------------------------------------------------- operators

  void node(const ::onnx::NodeProto& node, int index) {
    NodeContext c{node, fmt::format("node {} ('{}', {})", index, node.name(), node.op_type()),
                  *this};
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    try {
      try {
        if (!default_domain)
          c.unsupported(fmt::format("operator domain '{}' is not the default one", node.domain()));
        if (!dispatch(c))
          c.unsupported(fmt::format("operator {} is not supported", node.op_type()));
      } catch (const tensor::ShapeError& e) {
        c.fail(std::string("inconsistent shapes: ") + e.what());
      }
    } catch (const Unsupported& u) {
      opaque(c, u.reason, u.checked);
    }
  }

  /// A converter: maps one node of its operator type (`c.node.op_type()`) into the program.
  using Converter = void (*)(Importer&, const NodeContext&);
  using ConverterTable = std::unordered_map<std::string_view, Converter>;

  /// `fn` for each operator type of `types`.
  static void add(ConverterTable& t, std::initializer_list<std::string_view> types, Converter fn) {
    for (std::string_view type : types) t.emplace(type, fn);
  }

  /// Import-time values: constants, and the shape computations exporters write (folded).
  static void add_values(ConverterTable& t) {
    add(t, {"Constant"}, [](Importer& i, const NodeContext& c) { i.constant(c); });
    add(t, {"Identity", "Dropout"}, [](Importer& i, const NodeContext& c) {
      if (c.node.op_type() == "Dropout" && c.node.output_size() > 1 && !c.node.output(1).empty())
        c.unsupported("Dropout's mask output is not supported");
      i.set(c, c.in(0));
    });
    add(t, {"Shape"}, [](Importer& i, const NodeContext& c) { i.shape(c); });
    add(t, {"Size"}, [](Importer& i, const NodeContext& c) {
      Value v;
      v.integer = true;
      v.elem_type = ::onnx::TensorProto::INT64;
      v.data = {
          static_cast<double>(checked_elements(c.in(0).dims, i.max_tensor_, c.where, "the input"))};
      i.set(c, std::move(v));
    });
    add(t, {"ConstantOfShape"}, [](Importer& i, const NodeContext& c) { i.constant_of_shape(c); });
    add(t, {"Range"}, [](Importer& i, const NodeContext& c) { i.range(c); });
    add(t, {"Cast"}, [](Importer& i, const NodeContext& c) { i.cast(c); });
    add(t,
        {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Min", "Max",
         "Mod"},
        [](Importer& i, const NodeContext& c) { i.constant_binary(c, c.node.op_type()); });
    add(t, {"Not", "Abs", "Floor", "Ceil"},
        [](Importer& i, const NodeContext& c) { i.constant_unary(c, c.node.op_type()); });
    add(t, {"Where"}, [](Importer& i, const NodeContext& c) { i.where(c); });
  }
  /// Data movement: gathers, views, concatenation, padding, transposes, resizing.
  static void add_movement(ConverterTable& t) {
    add(t, {"Gather"}, [](Importer& i, const NodeContext& c) { i.gather(c); });
    add(t, {"Unsqueeze", "Squeeze"},
        [](Importer& i, const NodeContext& c) { i.squeeze(c, c.node.op_type() == "Unsqueeze"); });
    add(t, {"Concat"}, [](Importer& i, const NodeContext& c) { i.concat(c); });
    add(t, {"Reshape"}, [](Importer& i, const NodeContext& c) {
      i.reshape(c, c.ints_input(1), c.int_attr("allowzero", 0) != 0);
    });
    add(t, {"Flatten"}, [](Importer& i, const NodeContext& c) { i.flatten(c); });
    add(t, {"Expand"}, [](Importer& i, const NodeContext& c) { i.expand(c); });
    add(t, {"Slice"}, [](Importer& i, const NodeContext& c) { i.slice(c); });
    add(t, {"Split"}, [](Importer& i, const NodeContext& c) { i.split(c); });
    add(t, {"Pad"}, [](Importer& i, const NodeContext& c) { i.pad(c); });
    add(t, {"Tile"}, [](Importer& i, const NodeContext& c) { i.tile(c); });
    add(t, {"Transpose"}, [](Importer& i, const NodeContext& c) { i.transpose(c); });
    add(t, {"Resize", "Upsample"},
        [](Importer& i, const NodeContext& c) { i.resize(c, c.node.op_type() == "Upsample"); });
  }
  /// Elementwise arithmetic and activations.
  static void add_elementwise(ConverterTable& t) {
    add(t, {"Add", "Mul", "Sub", "Div", "Pow"},
        [](Importer& i, const NodeContext& c) { i.binary(c, c.node.op_type()); });
    add(t, {"Sum", "Mean"},
        [](Importer& i, const NodeContext& c) { i.sum(c, c.node.op_type() == "Mean"); });
    add(t, {"Neg", "Reciprocal"},
        [](Importer& i, const NodeContext& c) { i.neg_reciprocal(c, c.node.op_type() == "Neg"); });
    add(t, {"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf"},
        [](Importer& i, const NodeContext& c) { i.unary(c, c.node.op_type()); });
    add(t, {"Clip"}, [](Importer& i, const NodeContext& c) { i.clip(c); });
    add(t, {"HardSigmoid", "HardSwish"}, [](Importer& i, const NodeContext& c) {
      i.hard_sigmoid(c, c.node.op_type() == "HardSwish");
    });
    add(t, {"LeakyRelu"}, [](Importer& i, const NodeContext& c) { i.leaky_relu(c); });
  }
  /// Contractions and windows: products, convolutions, pooling.
  static void add_contractions(ConverterTable& t) {
    add(t, {"MatMul"}, [](Importer& i, const NodeContext& c) { i.matmul(c); });
    add(t, {"Gemm"}, [](Importer& i, const NodeContext& c) { i.gemm(c); });
    add(t, {"Conv"}, [](Importer& i, const NodeContext& c) { i.conv(c); });
    add(t, {"ConvTranspose"}, [](Importer& i, const NodeContext& c) { i.conv_transpose(c); });
    add(t, {"MaxPool", "AveragePool"},
        [](Importer& i, const NodeContext& c) { i.pool(c, c.node.op_type() == "MaxPool"); });
    add(t, {"GlobalAveragePool", "GlobalMaxPool"}, [](Importer& i, const NodeContext& c) {
      i.global_pool(c, c.node.op_type() == "GlobalMaxPool");
    });
  }
  /// Normalizations and reductions.
  static void add_normalization(ConverterTable& t) {
    add(t, {"BatchNormalization"}, [](Importer& i, const NodeContext& c) { i.batchnorm(c); });
    add(t, {"LayerNormalization"},
        [](Importer& i, const NodeContext& c) { i.layer_normalization(c); });
    add(t, {"Softmax"}, [](Importer& i, const NodeContext& c) { i.softmax(c); });
    add(t, {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceProd"},
        [](Importer& i, const NodeContext& c) { i.reduce(c, c.node.op_type()); });
  }

 public:
  /// Every converter, by ONNX operator type (default domain), registered by family.
  static const ConverterTable& converters() {
    static const ConverterTable table = [] {
      ConverterTable t;
      add_values(t);
      add_movement(t);
      add_elementwise(t);
      add_contractions(t);
      add_normalization(t);
      return t;
    }();
    return table;
  }

 private:
  /// Maps one node; false for an operator the importer does not know.
  bool dispatch(const NodeContext& c) {
    const auto it = converters().find(c.node.op_type());
    if (it == converters().end()) return false;
    it->second(*this, c);
    return true;
  }

  // ------------------------------------------------------------------- import-time values

  void constant(const NodeContext& c) {
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

  void shape(const NodeContext& c) {
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

  void constant_of_shape(const NodeContext& c) {
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

  void range(const NodeContext& c) {
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

  void cast(const NodeContext& c) {
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

  // ------------------------------------------------------------------- shapes and data movement

  void gather(const NodeContext& c) {
    const Value& data = c.in(0);
    const Value& idx = c.in(1);
    if (!idx.is_constant()) c.unsupported("Gather with computed indices is not supported");
    if (data.dims.empty()) c.fail("Gather of a scalar");
    const std::int64_t axis = axis_of(c.int_attr("axis", 0), data.dims.size(), c.where);
    const std::int64_t extent = data.dims[static_cast<std::size_t>(axis)];
    std::vector<std::int64_t> indices;
    for (double di : idx.data) {
      if (!(std::fabs(di) < 9.2e18)) c.fail("an index is not an integer");
      auto i = static_cast<std::int64_t>(di);
      if (i < -extent || i >= extent)
        c.fail(fmt::format("index {} is outside an axis of {}", i, extent));
      indices.push_back(i < 0 ? i + extent : i);
    }
    std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
    dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
    dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    if (data.tensor) {
      // Slices of the indexed entries, concatenated (one slice for a contiguous run), then the
      // indices' shape in place of the axis.
      if (indices.empty()) c.unsupported("Gather with no indices (an empty result)");
      if (indices.size() > 256)
        c.unsupported("Gather of more than 256 entries of a computed tensor");
      std::vector<Tensor> parts;
      for (std::size_t k = 0; k < indices.size();) {
        std::size_t run = k + 1;
        while (run < indices.size() && indices[run] == indices[run - 1] + 1) ++run;
        parts.push_back(slice_of(*data.tensor, axis, indices[k], indices[run - 1] + 1));
        k = run;
      }
      const Tensor gathered = parts.size() == 1 ? parts[0] : g_.concat(axis, parts);
      return set_tensor(c, reshaped(gathered, dims_of(dims)));
    }
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
    for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < data.dims.size(); ++k)
      inner *= data.dims[k];
    Value out;
    out.integer = data.integer;
    out.elem_type = data.elem_type;
    out.dims = dims_of(dims);
    checked_elements(out.dims, max_constant_, c.where, "the result");
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i : indices)
        for (std::int64_t k = 0; k < inner; ++k)
          out.data.push_back(data.data[static_cast<std::size_t>((o * extent + i) * inner + k)]);
    set(c, std::move(out));
  }

  /// x reshaped to `dims` (nothing when it has them already).
  Tensor reshaped(Tensor x, const Dims& dims) {
    return g_.shape(x) == dims ? x : g_.reshape(x, dims);
  }
  /// Entries [start, end) of x along axis (nothing when that is all of it).
  Tensor slice_of(Tensor x, std::int64_t axis, std::int64_t start, std::int64_t end) {
    if (start == 0 && end == g_.shape(x)[static_cast<std::size_t>(axis)]) return x;
    return g_.slice(x, axis, start, end);
  }

  void squeeze(const NodeContext& c, bool unsqueeze) {
    Value v = c.in(0);
    // Opset 13 moved axes from an attribute to an input.
    Dims axes = c.has_input(1) ? c.ints_input(1) : c.ints_attr("axes").value_or(Dims{});
    std::vector<std::int64_t> d = vector_of(v.dims);
    if (unsqueeze) {
      const std::size_t rank = d.size() + axes.size();
      for (std::int64_t& a : axes) a = axis_of(a, rank, c.where);
      std::sort(axes.begin(), axes.end());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
      for (std::int64_t a : axes) d.insert(d.begin() + a, 1);
    } else {
      if (axes.empty())
        for (std::size_t k = 0; k < d.size(); ++k)
          if (d[k] == 1) axes.push_back(static_cast<std::int64_t>(k));
      for (std::int64_t& a : axes) {
        a = axis_of(a, d.size(), c.where);
        if (d[static_cast<std::size_t>(a)] != 1)
          c.fail(fmt::format("axis {} has size {}, not 1", a, d[static_cast<std::size_t>(a)]));
      }
      std::sort(axes.begin(), axes.end(), std::greater<>());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
      for (std::int64_t a : axes) d.erase(d.begin() + a);
    }
    if (v.tensor) return set_tensor(c, reshaped(*v.tensor, dims_of(d)));
    v.dims = dims_of(d);
    set(c, std::move(v));
  }

  void flatten(const NodeContext& c) {
    const Dims& d = c.in(0).dims;
    const std::int64_t axis = c.int_attr("axis", 1);
    const std::int64_t a = axis < 0 ? axis + static_cast<std::int64_t>(d.size()) : axis;
    if (a < 0 || a > static_cast<std::int64_t>(d.size()))
      c.fail(fmt::format("axis {} is out of range", axis));
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(d.size()); ++k)
      (k < a ? outer : inner) *= d[static_cast<std::size_t>(k)];
    reshape(c, Dims{outer, inner}, false);
  }

  void concat(const NodeContext& c) {
    const std::size_t n = c.inputs();
    if (n == 0) c.fail("Concat without inputs");
    const std::size_t rank = c.in(0).dims.size();
    const std::int64_t axis = axis_of(c.int_attr("axis", 0), rank, c.where);
    bool all_constant = true;
    for (std::size_t i = 0; i < n; ++i) {
      const Value& v = c.in(i);
      all_constant = all_constant && v.is_constant();
      if (v.dims.size() != rank) c.fail("Concat of inputs of different ranks");
      for (std::size_t k = 0; k < rank; ++k)
        if (static_cast<std::int64_t>(k) != axis && v.dims[k] != c.in(0).dims[k])
          c.fail(fmt::format("inputs of shapes {} and {} do not concatenate along axis {}",
                             tensor::dims_to_string(c.in(0).dims), tensor::dims_to_string(v.dims),
                             axis));
    }
    if (!all_constant) {
      std::vector<Tensor> parts;
      for (std::size_t i = 0; i < n; ++i)
        if (c.in(i).elements() > 0)
          parts.push_back(c.tensor(i));  // exporters concatenate empty tensors too
      if (parts.empty()) c.unsupported("a Concat of empty tensors");
      return set_tensor(c, parts.size() == 1 ? parts[0] : g_.concat(axis, parts));
    }
    Value out;
    out.dims = c.in(0).dims;
    out.dims[static_cast<std::size_t>(axis)] = 0;
    out.integer = true;
    out.elem_type = c.in(0).elem_type;
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= out.dims[static_cast<std::size_t>(k)];
    for (std::size_t i = 0; i < n; ++i) {
      const Value& v = c.in(i);
      out.dims[static_cast<std::size_t>(axis)] += v.dims[static_cast<std::size_t>(axis)];
      out.integer = out.integer && v.integer;
    }
    if (!out.integer) out.elem_type = ::onnx::TensorProto::FLOAT;
    checked_elements(out.dims, max_constant_, c.where, "the result");
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::size_t i = 0; i < n; ++i) {
        const Value& v = c.in(i);
        const std::int64_t block = outer > 0 ? v.elements() / outer : 0;
        out.data.insert(out.data.end(), v.data.begin() + o * block,
                        v.data.begin() + (o + 1) * block);
      }
    set(c, std::move(out));
  }

  void reshape(const NodeContext& c, Dims target, bool allow_zero) {
    const Value& v = c.in(0);
    const std::int64_t n = v.elements();
    std::optional<std::size_t> infer;
    std::int64_t known = 1;
    if (target.size() > 16) c.fail("the target shape has more than 16 dimensions");
    for (std::size_t k = 0; k < target.size(); ++k) {
      if (target[k] == 0 && !allow_zero) {
        if (k >= v.dims.size())
          c.fail("a 0 in the target shape copies a dimension the input does not have");
        target[k] = v.dims[k];
      }
      if (target[k] == -1) {
        if (infer) c.fail("the target shape has two -1");
        infer = k;
        continue;
      }
      if (target[k] < 0) c.fail(fmt::format("target dimension {} is negative", target[k]));
      if (target[k] != 0 && known > max_tensor_ / target[k])
        c.fail(fmt::format("cannot reshape {} elements to {}", n, tensor::dims_to_string(target)));
      known *= target[k];
    }
    if (infer) {
      if (known == 0 || n % known != 0)
        c.fail(fmt::format("cannot reshape {} elements to {}", n, tensor::dims_to_string(target)));
      target[*infer] = n / known;
    } else if (known != n) {
      c.fail(fmt::format("cannot reshape {} ({} elements) to {}", tensor::dims_to_string(v.dims), n,
                         tensor::dims_to_string(target)));
    }
    if (v.tensor) return set_tensor(c, reshaped(*v.tensor, target));
    Value out = v;
    out.dims = target;
    set(c, std::move(out));
  }

  void expand(const NodeContext& c) {
    const Value& v = c.in(0);
    const Dims shape = c.ints_input(1);
    for (std::int64_t d : shape)
      if (d < 0) c.fail(fmt::format("target dimension {} is negative", d));
    const Dims out = broadcast_dims(v.dims, shape, c.where);
    checked_elements(out, v.tensor ? max_tensor_ : max_constant_, c.where, "the result");
    if (v.tensor) {
      if (std::find(out.begin(), out.end(), 0) != out.end())
        c.unsupported("an Expand to an empty tensor");
      return set_tensor(c, out == v.dims ? *v.tensor : g_.broadcast(*v.tensor, out));
    }
    Value zero;  // folded as v + 0 broadcast to `out`
    zero.dims = out;
    zero.integer = true;
    zero.data.assign(
        static_cast<std::size_t>(checked_elements(out, max_constant_, c.where, "the result")), 0.0);
    Value r = fold_binary(
        v, zero, [](double x, double) { return x; }, c.where);
    r.integer = v.integer;
    r.elem_type = v.elem_type;
    set(c, std::move(r));
  }

  /// ONNX Slice's clamped range along an axis of extent `dim`: (start, count) for `step`.
  static std::pair<std::int64_t, std::int64_t> slice_range(std::int64_t start, std::int64_t end,
                                                           std::int64_t step, std::int64_t dim) {
    const auto clamp_index = [](std::int64_t i, std::int64_t dim, std::int64_t lo,
                                std::int64_t hi) {
      if (i < 0) i = i < -dim ? lo : i + dim;
      return std::clamp(i, lo, hi);
    };
    if (step > 0) {
      start = clamp_index(start, dim, 0, dim);
      end = clamp_index(end, dim, 0, dim);
      return {start, end > start ? (end - start + step - 1) / step : 0};
    }
    start = clamp_index(start, dim, -1, dim - 1);
    end = clamp_index(end, dim, -1, dim - 1);
    return {start, start > end ? (start - end + (-step) - 1) / (-step) : 0};
  }

  void slice(const NodeContext& c) {
    const Value& v = c.in(0);
    Dims starts, ends, axes, steps;
    if (opset_ < 10) {
      starts = c.ints_attr("starts").value_or(Dims{});
      ends = c.ints_attr("ends").value_or(Dims{});
      axes = c.ints_attr("axes").value_or(Dims{});
    } else {
      starts = c.ints_input(1);
      ends = c.ints_input(2);
      if (c.has_input(3)) axes = c.ints_input(3);
      if (c.has_input(4)) steps = c.ints_input(4);
    }
    if (axes.empty())
      for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    if (steps.empty()) steps = Dims(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      c.fail("starts, ends, axes and steps differ in length");
    // Per axis: (start, count, step); axes not named keep everything.
    const std::size_t rank = v.dims.size();
    std::vector<std::int64_t> first(rank, 0), count(v.dims.begin(), v.dims.end()), step(rank, 1);
    std::vector<bool> seen(rank, false);
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const auto a = static_cast<std::size_t>(axis_of(axes[k], rank, c.where));
      if (seen[a]) c.fail("an axis is repeated");
      seen[a] = true;
      if (steps[k] == 0) c.fail("a step of 0");
      if (steps[k] == std::numeric_limits<std::int64_t>::min()) c.fail("a step out of range");
      const auto [s, n] = slice_range(starts[k], ends[k], steps[k], v.dims[a]);
      first[a] = s;
      count[a] = n;
      step[a] = steps[k];
    }
    Dims out_dims = dims_of(count);
    if (v.is_constant()) {
      const std::int64_t n = checked_elements(out_dims, max_constant_, c.where, "the result");
      const auto strides = tensor::detail::strides_of(v.dims);
      Value out;
      out.dims = out_dims;
      out.integer = v.integer;
      out.elem_type = v.elem_type;
      out.data.reserve(static_cast<std::size_t>(n));
      for (std::int64_t flat = 0; flat < n; ++flat) {
        std::int64_t rest = flat, src = 0;
        for (std::size_t a = rank; a-- > 0;) {
          const std::int64_t i = rest % count[a];
          rest /= count[a];
          src += (first[a] + i * step[a]) * strides[a];
        }
        out.data.push_back(v.data[static_cast<std::size_t>(src)]);
      }
      return set(c, std::move(out));
    }
    Tensor x = *v.tensor;
    for (std::size_t a = 0; a < rank; ++a) {
      if (count[a] == 0) c.unsupported("a Slice with an empty result");
      const auto axis = static_cast<std::int64_t>(a);
      if (step[a] < 0) {
        if (count[a] != 1)
          c.unsupported("a Slice with a negative step (a reversal) of a computed tensor");
        x = slice_of(x, axis, first[a], first[a] + 1);
        continue;
      }
      if (step[a] == 1 || count[a] == 1) {
        x = slice_of(x, axis, first[a], first[a] + count[a]);
        continue;
      }
      // Every step-th entry: the span [first, first + count * step) (zero-padded past the end),
      // reshaped to [count, step] along the axis, entry 0 of each row kept.
      const std::int64_t extent = g_.shape(x)[a];
      if (step[a] > max_tensor_ / count[a]) c.fail("a Slice step out of range");
      const std::int64_t span = count[a] * step[a], available = std::min(span, extent - first[a]);
      x = slice_of(x, axis, first[a], first[a] + available);
      if (available < span) x = g_.pad(x, axis, 0, span - available);
      Dims split = g_.shape(x);
      std::vector<std::int64_t> d = vector_of(split);
      d[a] = count[a];
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(a) + 1, step[a]);
      x = g_.slice(g_.reshape(x, dims_of(d)), axis + 1, 0, 1);
      d.erase(d.begin() + static_cast<std::ptrdiff_t>(a) + 1);
      x = g_.reshape(x, dims_of(d));
    }
    set_tensor(c, x);
  }

  void split(const NodeContext& c) {
    const Value& v = c.in(0);
    const std::int64_t axis = axis_of(c.int_attr("axis", 0), v.dims.size(), c.where);
    const std::int64_t extent = v.dims[static_cast<std::size_t>(axis)];
    Dims sizes = c.has_input(1) ? c.ints_input(1) : c.ints_attr("split").value_or(Dims{});
    const auto outputs = static_cast<std::int64_t>(c.node.output_size());
    if (outputs == 0) c.fail("Split without outputs");
    if (sizes.empty()) {
      // Equal parts (opset 18: the last one smaller).
      const std::int64_t part = (extent + outputs - 1) / outputs;
      for (std::int64_t k = 0, left = extent; k < outputs; ++k, left -= part)
        sizes.push_back(std::max<std::int64_t>(std::min(part, left), 0));
    }
    if (static_cast<std::int64_t>(sizes.size()) != outputs)
      c.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), outputs));
    std::int64_t total = 0;
    for (std::int64_t s : sizes) {
      if (s < 0 || s > extent) c.fail(fmt::format("split size {} out of range", s));
      total += s;
    }
    if (total != extent)
      c.fail(fmt::format("split sizes add up to {}, the axis has {}", total, extent));
    std::int64_t start = 0;
    for (std::int64_t k = 0; k < outputs; ++k) {
      const std::int64_t end = start + sizes[static_cast<std::size_t>(k)];
      const int out = static_cast<int>(k);
      if (v.tensor) {
        if (end == start) c.unsupported("a Split with an empty part");
        set_tensor(c, slice_of(*v.tensor, axis, start, end), out);
      } else {
        std::int64_t outer, ext, inner;
        tensor::detail::split_dims(v.dims, axis, outer, ext, inner);
        Value part;
        part.dims = v.dims;
        part.dims[static_cast<std::size_t>(axis)] = end - start;
        part.integer = v.integer;
        part.elem_type = v.elem_type;
        for (std::int64_t o = 0; o < outer; ++o)
          part.data.insert(part.data.end(), v.data.begin() + (o * ext + start) * inner,
                           v.data.begin() + (o * ext + end) * inner);
        set(c, std::move(part), out);
      }
      start = end;
    }
  }

  void pad(const NodeContext& c) {
    const Value& v = c.in(0);
    const std::string mode = c.string_attr("mode", "constant");
    Dims pads;
    double fill = 0;
    if (opset_ < 11) {
      pads = c.ints_attr("pads").value_or(Dims{});
      fill = c.float_attr("value", 0.0);
    } else {
      pads = c.ints_input(1);
      if (c.has_input(2)) {
        const auto& f = c.constant_input(2);
        if (f.size() != 1) c.fail("constant_value must hold one value");
        fill = f[0];
      }
    }
    const std::size_t rank = v.dims.size();
    Dims axes;
    if (c.has_input(3)) {
      for (std::int64_t a : c.ints_input(3)) axes.push_back(axis_of(a, rank, c.where));
    } else {
      for (std::size_t a = 0; a < rank; ++a) axes.push_back(static_cast<std::int64_t>(a));
    }
    if (pads.size() != 2 * axes.size())
      c.fail(fmt::format("{} pads for {} axes", pads.size(), axes.size()));
    if (mode != "constant")
      c.unsupported_checked(fmt::format("Pad mode '{}' is not supported", mode));
    if (fill != 0) c.unsupported_checked("a Pad with a value other than 0");
    Tensor x = c.tensor(0);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const std::int64_t axis = axes[k], before = pads[k], after = pads[k + axes.size()];
      const std::int64_t extent = g_.shape(x)[static_cast<std::size_t>(axis)];
      if (before > max_tensor_ || after > max_tensor_) c.fail("a pad out of range");
      // Negative pads remove entries.
      const std::int64_t from = std::max<std::int64_t>(-before, 0),
                         to = extent - std::max<std::int64_t>(-after, 0);
      if (to <= from) c.unsupported("a Pad whose negative pads leave nothing");
      x = slice_of(x, axis, from, to);
      if (before > 0 || after > 0) {
        Dims d = g_.shape(x);
        d[static_cast<std::size_t>(axis)] +=
            std::max<std::int64_t>(before, 0) + std::max<std::int64_t>(after, 0);
        checked_elements(d, max_tensor_, c.where, "the result");
        x = g_.pad(x, axis, std::max<std::int64_t>(before, 0), std::max<std::int64_t>(after, 0));
      }
    }
    set_tensor(c, x);
  }

  void tile(const NodeContext& c) {
    const Value& v = c.in(0);
    const Dims repeats = c.ints_input(1);
    if (repeats.size() != v.dims.size()) c.fail("repeats must have one value per axis");
    Dims out = v.dims;
    for (std::size_t a = 0; a < repeats.size(); ++a) {
      if (repeats[a] < 0 || repeats[a] > 64)
        c.unsupported(fmt::format("a Tile repeat of {}", repeats[a]));
      out[a] *= repeats[a];
    }
    checked_elements(out, max_tensor_, c.where, "the result");
    if (std::find(repeats.begin(), repeats.end(), 0) != repeats.end())
      c.unsupported("a Tile to an empty tensor");
    Tensor x = c.tensor(0);
    for (std::size_t a = 0; a < repeats.size(); ++a)
      if (repeats[a] > 1)
        x = g_.concat(static_cast<std::int64_t>(a),
                      std::vector<Tensor>(static_cast<std::size_t>(repeats[a]), x));
    set_tensor(c, x);
  }

  void transpose(const NodeContext& c) {
    Tensor x = c.tensor(0);
    Dims perm = c.ints_attr("perm").value_or(Dims{});
    if (perm.empty())
      for (std::size_t k = g_.shape(x).size(); k-- > 0;)
        perm.push_back(static_cast<std::int64_t>(k));
    bool identity = true;
    for (std::size_t k = 0; k < perm.size(); ++k)
      identity = identity && perm[k] == static_cast<std::int64_t>(k);
    set_tensor(c, identity && perm.size() == g_.shape(x).size() ? x : g_.transpose(x, perm));
  }

  // ------------------------------------------------------------------- elementwise

  void binary(const NodeContext& c, const std::string& op) {
    const Value& a = c.in(0);
    const Value& b = c.in(1);
    if (a.is_constant() && b.is_constant()) {
      std::function<double(double, double)> f;
      const bool integer = a.integer && b.integer;
      if (op == "Add") f = [](double x, double y) { return x + y; };
      if (op == "Sub") f = [](double x, double y) { return x - y; };
      if (op == "Mul") f = [](double x, double y) { return x * y; };
      if (op == "Pow") f = [](double x, double y) { return std::pow(x, y); };
      if (op == "Div")
        f = [integer](double x, double y) {
          return integer ? (y == 0 ? 0.0 : std::trunc(x / y)) : x / y;
        };
      return set(c, fold_binary(a, b, f, c.where));
    }
    // A constant operand of Sub or Div is folded into an Add or a Mul (the forms the rules know).
    if ((op == "Sub" || op == "Div") && b.is_constant()) {
      Value k = b;
      for (double& d : k.data) d = op == "Sub" ? -d : 1.0 / d;
      k.integer = false;
      const Tensor x = c.tensor(0);
      const Tensor y = weight_of(k, derived_key(c.input_name(1), op == "Sub" ? "neg" : "recip"));
      return set_tensor(c, op == "Sub" ? g_.add(x, y) : g_.mul(x, y));
    }
    const Tensor x = c.tensor(0), y = c.tensor(1);
    if (op == "Add") return set_tensor(c, g_.add(x, y));
    if (op == "Mul") return set_tensor(c, g_.mul(x, y));
    if (op == "Sub") return set_tensor(c, g_.sub(x, y));
    if (op == "Div") return set_tensor(c, g_.div(x, y));
    set_tensor(c, g_.pow(x, y));
  }

  void sum(const NodeContext& c, bool mean) {
    const std::size_t n = c.inputs();
    if (n == 0) c.fail("no inputs");
    Tensor acc = c.tensor(0);
    for (std::size_t i = 1; i < n; ++i) acc = g_.add(acc, c.tensor(i));
    if (mean && n > 1)
      acc = g_.smul(acc, scalar_weight(1.0 / static_cast<double>(n), c.derived("mean_scale")));
    set_tensor(c, acc);
  }

  /// Comparisons, logic and min/max of import-time constants (shape computations).
  void constant_binary(const NodeContext& c, const std::string& op) {
    if (c.inputs() != 2) c.unsupported(fmt::format("{} with {} inputs", op, c.inputs()));
    const Value& a = c.in(0);
    const Value& b = c.in(1);
    if (!a.is_constant() || !b.is_constant())
      c.unsupported(fmt::format("{} of a computed tensor is not supported", op));
    std::function<double(double, double)> f;
    bool boolean = true;
    if (op == "Equal") f = [](double x, double y) { return x == y ? 1.0 : 0.0; };
    if (op == "Less") f = [](double x, double y) { return x < y ? 1.0 : 0.0; };
    if (op == "Greater") f = [](double x, double y) { return x > y ? 1.0 : 0.0; };
    if (op == "LessOrEqual") f = [](double x, double y) { return x <= y ? 1.0 : 0.0; };
    if (op == "GreaterOrEqual") f = [](double x, double y) { return x >= y ? 1.0 : 0.0; };
    if (op == "And") f = [](double x, double y) { return x != 0 && y != 0 ? 1.0 : 0.0; };
    if (op == "Or") f = [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; };
    if (op == "Min" || op == "Max" || op == "Mod") {
      boolean = false;
      if (op == "Min") f = [](double x, double y) { return std::min(x, y); };
      if (op == "Max") f = [](double x, double y) { return std::max(x, y); };
      if (op == "Mod")
        f = [](double x, double y) { return y == 0 ? 0.0 : x - y * std::floor(x / y); };
    }
    Value r = fold_binary(a, b, f, c.where);
    set(c, boolean ? as_bool(std::move(r)) : std::move(r));
  }

  void constant_unary(const NodeContext& c, const std::string& op) {
    const Value& v = c.in(0);
    if (!v.is_constant())
      c.unsupported(fmt::format("{} of a computed tensor is not supported", op));
    if (op == "Not")
      return set(c, as_bool(fold_unary(v, [](double x) { return x == 0 ? 1.0 : 0.0; })));
    if (op == "Abs") return set(c, fold_unary(v, [](double x) { return std::fabs(x); }));
    if (op == "Floor") return set(c, fold_unary(v, [](double x) { return std::floor(x); }));
    set(c, fold_unary(v, [](double x) { return std::ceil(x); }));
  }

  void where(const NodeContext& c) {
    const Value& cond = c.in(0);
    const Value& x = c.in(1);
    const Value& y = c.in(2);
    if (!cond.is_constant() || !x.is_constant() || !y.is_constant())
      c.unsupported("Where of computed tensors is not supported");
    // cond ? x : y, broadcast: first pick between x and y at each broadcast position.
    const Dims dims = broadcast_dims(broadcast_dims(cond.dims, x.dims, c.where), y.dims, c.where);
    const std::int64_t n = checked_elements(dims, max_constant_, c.where, "the result");
    Value out;
    out.dims = dims;
    out.integer = x.integer && y.integer;
    out.elem_type = x.elem_type;
    for (std::int64_t i = 0; i < n; ++i)
      out.data.push_back(cond.data[static_cast<std::size_t>(broadcast_index(cond, dims, i))] != 0
                             ? x.data[static_cast<std::size_t>(broadcast_index(x, dims, i))]
                             : y.data[static_cast<std::size_t>(broadcast_index(y, dims, i))]);
    set(c, std::move(out));
  }

  void neg_reciprocal(const NodeContext& c, bool neg) {
    const Value& v = c.in(0);
    if (v.is_constant())
      return set(c, fold_unary(v, [neg](double x) { return neg ? -x : 1.0 / x; }));
    const Tensor x = c.tensor(0);
    if (neg) return set_tensor(c, g_.smul(x, scalar_weight(-1.0, c.derived("minus_one"))));
    set_tensor(c, g_.div(scalar_weight(1.0, c.derived("one")), x));
  }

  void unary(const NodeContext& c, const std::string& op) {
    const Value& v = c.in(0);
    if (v.is_constant() && v.integer) c.unsupported(fmt::format("{} of an integer constant", op));
    const Tensor x = c.tensor(0);
    if (op == "Relu") return set_tensor(c, g_.relu(x));
    if (op == "Sigmoid") return set_tensor(c, g_.sigmoid(x));
    if (op == "Tanh") return set_tensor(c, g_.tanh(x));
    if (op == "Exp") return set_tensor(c, g_.exp(x));
    if (op == "Erf") return set_tensor(c, g_.erf(x));
    set_tensor(c, g_.sqrt(x));
  }

  /// A clip bound: a one-element weight from constant input `i`, else `fallback`.
  Tensor clip_bound(const NodeContext& c, std::size_t i, double fallback, std::string_view which) {
    if (c.has_input(i)) {
      const Value& v = c.in(i);
      if (!v.is_constant()) c.unsupported("Clip with computed bounds is not supported");
      if (v.data.size() != 1) c.fail(fmt::format("the {} bound must hold one value", which));
      return weight_of(v, c.input_name(i));
    }
    return scalar_weight(fallback, c.derived(which));
  }

  void clip(const NodeContext& c) {
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor x = c.tensor(0);
    if (opset_ < 11) {
      // Before opset 11 the bounds are attributes.
      const Tensor lo = scalar_weight(c.float_attr("min", -inf), c.derived("min"));
      const Tensor hi = scalar_weight(c.float_attr("max", inf), c.derived("max"));
      return set_tensor(c, g_.clip(x, lo, hi));
    }
    const Tensor lo = clip_bound(c, 1, -inf, "min");
    const Tensor hi = clip_bound(c, 2, inf, "max");
    set_tensor(c, g_.clip(x, lo, hi));
  }

  /// HardSigmoid: clip(alpha·x + beta, 0, 1); HardSwish: x · HardSigmoid(x) with alpha 1/6, beta
  /// 1/2.
  void hard_sigmoid(const NodeContext& c, bool swish) {
    const Tensor x = c.tensor(0);
    const double alpha = swish ? 1.0 / 6.0 : c.float_attr("alpha", 0.2),
                 beta = swish ? 0.5 : c.float_attr("beta", 0.5);
    const Tensor affine = g_.add(g_.smul(x, scalar_weight(alpha, c.derived("alpha"))),
                                 scalar_weight(beta, c.derived("beta")));
    const Tensor h = g_.clip(affine, scalar_weight(0.0, c.derived("zero")),
                             scalar_weight(1.0, c.derived("one")));
    set_tensor(c, swish ? g_.ewmul(x, h) : h);
  }

  /// LeakyRelu: relu(x) + alpha·(x − relu(x)) (exact: one of the two terms is zero).
  void leaky_relu(const NodeContext& c) {
    const Tensor x = c.tensor(0);
    const Tensor r = g_.relu(x);
    const Tensor negative =
        g_.smul(g_.ewsub(x, r), scalar_weight(c.float_attr("alpha", 0.01), c.derived("alpha")));
    set_tensor(c, g_.ewadd(r, negative));
  }

  // ------------------------------------------------------------------- contractions and windows

  void matmul(const NodeContext& c) {
    Tensor a = c.tensor(0), b = c.tensor(1);
    const Dims da = g_.shape(a), db = g_.shape(b);
    if (da.size() < 2 || db.size() < 2) c.unsupported("MatMul of a vector is not supported");
    if (da.size() > 2 && db.size() == 2) {
      // [..., M, K] x [K, N]: one product over the flattened leading dimensions.
      const std::int64_t k = da.back(),
                         rows = std::accumulate(da.begin(), da.end() - 1, std::int64_t{1},
                                                std::multiplies<>());
      Dims out = da;
      out.back() = db.back();
      return set_tensor(c, g_.reshape(g_.matmul(g_.reshape(a, {rows, k}), b), out));
    }
    // Batch dimensions broadcast (numpy's matmul).
    const Dims batch =
        broadcast_dims(Dims(da.begin(), da.size() - 2), Dims(db.begin(), db.size() - 2), c.where);
    const auto full = [&](Tensor t, const Dims& d) {
      Dims want = batch;
      want.push_back(d[d.size() - 2]);
      want.push_back(d.back());
      return want == d ? t : g_.broadcast(t, want);
    };
    set_tensor(c, g_.matmul(full(a, da), full(b, db)));
  }

  void gemm(const NodeContext& c) {
    const double alpha = c.float_attr("alpha", 1.0), beta = c.float_attr("beta", 1.0);
    Value av = c.in(0), bv = c.in(1);
    if (alpha != 1.0) {
      if (!bv.is_constant()) c.unsupported("alpha other than 1 needs a constant B");
      for (double& d : bv.data) d *= alpha;
    }
    Tensor a = weight_of(av, c.input_name(0));
    Tensor b =
        weight_of(bv, alpha != 1.0 ? derived_key(c.input_name(1), "scaled") : c.input_name(1));
    if (g_.shape(a).size() != 2 || g_.shape(b).size() != 2)
      c.fail("Gemm operands must be matrices");
    if (c.int_attr("transA", 0)) a = g_.transpose(a, {1, 0});
    if (c.int_attr("transB", 0)) b = g_.transpose(b, {1, 0});
    Tensor y = g_.matmul(a, b);
    if (c.has_input(2)) {
      Value cv = c.in(2);
      if (beta != 1.0) {
        if (!cv.is_constant()) c.unsupported("beta other than 1 needs a constant C");
        for (double& d : cv.data) d *= beta;
      }
      if (beta != 0.0)
        y = g_.add(y, weight_of(cv, beta != 1.0 ? derived_key(c.input_name(2), "scaled")
                                                : c.input_name(2)));
    }
    set_tensor(c, y);
  }

  /// `y + bias` for a per-channel bias [C] of an NCHW tensor (input `i`, optional).
  Tensor add_bias(const NodeContext& c, Tensor y, std::size_t i, std::int64_t channels) {
    if (!c.has_input(i)) return y;
    Value bias = c.in(i);
    if (bias.dims != Dims{channels}) c.fail("the bias must have one value per output channel");
    if (bias.is_constant()) {
      bias.dims = {channels, 1, 1};
      return g_.add(y, weight_of(bias, c.input_name(i)));
    }
    return g_.add(y, g_.reshape(*bias.tensor, {channels, 1, 1}));
  }

  void conv(const NodeContext& c) {
    Tensor x = c.tensor(0);
    const Value& wv = c.in(1);
    if (wv.dims.size() != 4 || g_.shape(x).size() != 4)
      c.unsupported("only 2-D convolutions (NCHW) are supported");
    require_unit(c, "dilations");
    const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
    if (const auto k = c.ints_attr("kernel_shape"); k && *k != Dims{wv.dims[2], wv.dims[3]})
      c.fail("kernel_shape disagrees with the weight");
    const std::int64_t group = c.int_attr("group", 1);
    if (group < 1 || g_.shape(x)[1] != wv.dims[1] * group)
      c.fail(fmt::format("weight {} with group {} does not fit input {}",
                         tensor::dims_to_string(wv.dims), group,
                         tensor::dims_to_string(g_.shape(x))));
    const tensor::Padding pad =
        window_padding(c, x, wv.dims[2], wv.dims[3], sh, sw, ExplicitPads::Zeros);
    const Tensor y = g_.conv2d(x, c.tensor(1), sh, sw, pad);
    set_tensor(c, add_bias(c, y, 2, wv.dims[0]));
  }

  void conv_transpose(const NodeContext& c) {
    const Tensor x = c.tensor(0);
    const Value& wv = c.in(1);
    const Dims xd = g_.shape(x);
    if (wv.dims.size() != 4 || xd.size() != 4)
      c.unsupported("only 2-D transposed convolutions (NCHW) are supported");
    require_unit(c, "dilations");
    const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
    const std::int64_t group = c.int_attr("group", 1);
    if (group < 1 || xd[1] != wv.dims[0] || wv.dims[0] % group != 0)
      c.fail(fmt::format("weight {} with group {} does not fit input {}",
                         tensor::dims_to_string(wv.dims), group, tensor::dims_to_string(xd)));
    const Dims output_padding = c.ints_attr("output_padding").value_or(Dims{0, 0});
    if (output_padding.size() != 2) c.unsupported("output_padding must have 2 values");
    const std::int64_t k[2] = {wv.dims[2], wv.dims[3]}, s[2] = {sh, sw}, in[2] = {xd[2], xd[3]};
    for (int a = 0; a < 2; ++a)
      if (output_padding[static_cast<std::size_t>(a)] < 0 ||
          output_padding[static_cast<std::size_t>(a)] >= s[a])
        c.fail("output_padding must be in [0, stride)");
    std::int64_t begin[2] = {0, 0}, end[2] = {0, 0};
    const std::string auto_pad = c.string_attr("auto_pad", "NOTSET");
    const auto output_shape = c.ints_attr("output_shape");
    if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // ONNX: total padding from the wanted output size; SAME_UPPER puts the odd one at the end.
      if (output_shape && output_shape->size() != 2 && output_shape->size() != 4)
        c.fail("output_shape must have 2 or 4 values");
      for (int a = 0; a < 2; ++a) {
        const std::int64_t want =
            output_shape ? (*output_shape)[output_shape->size() - 2 + static_cast<std::size_t>(a)]
                         : in[a] * s[a];
        const std::int64_t total =
            s[a] * (in[a] - 1) + output_padding[static_cast<std::size_t>(a)] + k[a] - want;
        if (total < 0) c.unsupported("an output_shape larger than the full transposed convolution");
        const bool upper = auto_pad != "SAME_LOWER";
        begin[a] = upper ? total / 2 : total - total / 2;
        end[a] = total - begin[a];
      }
    } else if (auto_pad == "NOTSET") {
      const Dims pads = c.ints_attr("pads").value_or(Dims{0, 0, 0, 0});
      if (pads.size() != 4) c.fail("pads must have 4 values");
      for (std::int64_t p : pads)
        if (p < 0 || p > (std::int64_t{1} << 20)) c.fail(fmt::format("pad {} is out of range", p));
      begin[0] = pads[0], begin[1] = pads[1], end[0] = pads[2], end[1] = pads[3];
    } else if (auto_pad != "VALID") {
      c.fail(fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                         auto_pad));
    }
    // The dialect's end pads absorb output_padding (a negative end pad appends rows).
    const std::array<std::int64_t, 4> pads{begin[0], begin[1], end[0] - output_padding[0],
                                           end[1] - output_padding[1]};
    for (int a = 0; a < 2; ++a)
      if (in[a] - 1 > max_tensor_ / s[a]) c.fail("the output is too large");
    const Tensor y = g_.conv_transpose(x, c.tensor(1), sh, sw, pads, group);
    set_tensor(c, add_bias(c, y, 2, wv.dims[1] * group));
  }

  void pool(const NodeContext& c, bool is_max) {
    Tensor x = c.tensor(0);
    if (g_.shape(x).size() != 4) c.unsupported("only 2-D pooling (NCHW) is supported");
    const auto [kh, kw] = pair_of(c, c.ints_attr("kernel_shape").value_or(Dims{}), "kernel_shape");
    const auto [sh, sw] = pair_of(c, c.ints_attr("strides").value_or(Dims{1, 1}), "strides");
    if (c.int_attr("ceil_mode", 0) != 0) c.unsupported_checked("ceil_mode is not supported");
    require_unit(c, "dilations");
    if (c.node.output_size() > 1 && !c.node.output(1).empty())
      c.unsupported("MaxPool's Indices output is not supported");
    if (c.int_attr("storage_order", 0) != 0)
      c.unsupported_checked("storage_order is not supported");
    // The dialect's windows exclude padding from a max and from an average's divisor (ONNX's
    // count_include_pad = 0): SAME or VALID fit. With count_include_pad = 1 an average counts
    // the padding zeros, which is an average over the explicitly zero-padded input. A max with
    // other pads (torchvision ResNet's 3x3 stride-2 pads-1 MaxPool) takes the edge-padded input.
    const bool include_pad = !is_max && c.int_attr("count_include_pad", 0) != 0;
    const tensor::Padding pad = window_padding(c, x, kh, kw, sh, sw,
                                               is_max        ? ExplicitPads::Edge
                                               : include_pad ? ExplicitPads::Zeros
                                                             : ExplicitPads::Reject);
    if (include_pad && pad == tensor::Padding::Same) {
      const Dims d = g_.shape(x);  // a copy: adding nodes may move the builder's infos
      const auto [th, bh] = same_pads(d[2], kh, sh);
      const auto [tw, bw] = same_pads(d[3], kw, sw);
      if (th || bh) x = g_.pad(x, 2, th, bh);
      if (tw || bw) x = g_.pad(x, 3, tw, bw);
      return set_tensor(c, g_.poolavg(x, kh, kw, sh, sw, tensor::Padding::Valid));
    }
    set_tensor(c, is_max ? g_.poolmax(x, kh, kw, sh, sw, pad) : g_.poolavg(x, kh, kw, sh, sw, pad));
  }

  void global_pool(const NodeContext& c, bool is_max) {
    Tensor x = c.tensor(0);
    const Dims d = g_.shape(x);  // a copy: adding nodes may move the builder's infos
    if (d.size() != 4) c.unsupported("only NCHW inputs are supported");
    set_tensor(c, is_max ? g_.poolmax(x, d[2], d[3], 1, 1, tensor::Padding::Valid)
                         : g_.poolavg(x, d[2], d[3], 1, 1, tensor::Padding::Valid));
  }

  // ------------------------------------------------------------------- normalization and
  // reductions

  void batchnorm(const NodeContext& c) {
    if (c.int_attr("training_mode", 0) != 0) c.unsupported("training mode is not supported");
    for (int k = 1; k < c.node.output_size(); ++k)
      if (!c.node.output(k).empty())
        c.unsupported("BatchNormalization's training outputs are not supported");
    Tensor x = c.tensor(0);
    const std::int64_t channels = g_.shape(x).size() >= 2 ? g_.shape(x)[1] : 0;
    Value var = c.in(4);
    for (std::size_t i = 1; i <= 4; ++i)
      if (c.in(i).dims != Dims{channels})
        c.fail("scale, bias, mean and var must have one value per channel");
    // The dialect's eps is 1e-5; another epsilon is folded into a constant variance.
    const double eps = c.float_attr("epsilon", 1e-5);
    const bool other_eps = std::fabs(eps - static_cast<double>(tensor::detail::kNormEps)) > 1e-12;
    if (other_eps) {
      if (!var.is_constant()) c.unsupported("an epsilon other than 1e-5 needs a constant variance");
      for (double& d : var.data) d += eps - static_cast<double>(tensor::detail::kNormEps);
    }
    const Tensor v =
        weight_of(var, other_eps ? derived_key(c.input_name(4), "eps") : c.input_name(4));
    set_tensor(c, g_.batchnorm(x, c.tensor(1), c.tensor(2), c.tensor(3), v));
  }

  /// Normalization over the trailing axes from `axis`: the dialect's layernorm when it is the
  /// last axis (its eps a `scalar` unless 1e-5), else written out (mean, variance, sqrt, divide).
  void layer_normalization(const NodeContext& c) {
    for (int k = 1; k < c.node.output_size(); ++k)
      if (!c.node.output(k).empty())
        c.unsupported("LayerNormalization's Mean and InvStdDev outputs are not supported");
    const Tensor x = c.tensor(0);
    const Dims d = g_.shape(x);
    const std::int64_t axis = axis_of(c.int_attr("axis", -1), d.size(), c.where);
    const double eps = c.float_attr("epsilon", 1e-5);
    std::int64_t inner = 1;
    for (std::size_t a = static_cast<std::size_t>(axis); a < d.size(); ++a) inner *= d[a];
    const Dims normalized(d.begin() + axis, d.size() - static_cast<std::size_t>(axis));
    const Tensor scale = c.tensor(1);
    const bool has_bias = c.has_input(2);
    const Tensor bias = has_bias ? c.tensor(2) : scalar_zeros(normalized, c.derived("bias"));
    if (axis == static_cast<std::int64_t>(d.size()) - 1 && g_.shape(scale) == normalized &&
        g_.shape(bias) == normalized)
      return set_tensor(c, static_cast<float>(eps) == tensor::detail::kNormEps
                               ? g_.layernorm(x, scale, bias)
                               : g_.layernorm(x, scale, bias, g_.scalar(static_cast<float>(eps))));
    const std::int64_t outer =
        std::accumulate(d.begin(), d.begin() + axis, std::int64_t{1}, std::multiplies<>());
    const Tensor flat = reshaped(x, {outer, inner});
    const Tensor mean = g_.reshape(g_.reduce_mean(flat, 1), {outer, 1});
    const Tensor centred = g_.sub(flat, mean);
    const Tensor var = g_.reshape(g_.reduce_mean(g_.ewmul(centred, centred), 1), {outer, 1});
    const Tensor norm =
        g_.div(centred, g_.sqrt(g_.add(var, scalar_weight(eps, c.derived("epsilon")))));
    Tensor y = g_.mul(reshaped(norm, d), scale);
    if (has_bias) y = g_.add(y, bias);
    set_tensor(c, y);
  }
  /// A zero weight of shape `dims`.
  Tensor scalar_zeros(const Dims& dims, const std::string& key) {
    Value v;
    v.dims = dims;
    v.data.assign(static_cast<std::size_t>(checked_elements(dims, max_constant_, key, "zeros")),
                  0.0);
    return weight_of(v, key);
  }

  void softmax(const NodeContext& c) {
    Tensor x = c.tensor(0);
    const Dims d = g_.shape(x);
    if (d.empty()) c.fail("Softmax of a scalar");
    const std::int64_t axis = axis_of(c.int_attr("axis", opset_ >= 13 ? -1 : 1), d.size(), c.where);
    if (opset_ >= 13 || axis == static_cast<std::int64_t>(d.size()) - 1)
      return set_tensor(c, g_.softmax(x, axis));
    // Before opset 13 the input is flattened to 2-D at `axis`, normalized per row.
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= d[static_cast<std::size_t>(k)];
    const std::int64_t inner =
        std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()) / outer;
    set_tensor(c, g_.reshape(g_.softmax(g_.reshape(x, {outer, inner}), 1), d));
  }

  void reduce(const NodeContext& c, const std::string& op) {
    const Value& v = c.in(0);
    const std::size_t rank = v.dims.size();
    // Axes: an attribute, or (ReduceSum from opset 13) an input; none means all of them unless
    // noop_with_empty_axes.
    Dims axes = op == "ReduceSum" && opset_ >= 13 ? (c.has_input(1) ? c.ints_input(1) : Dims{})
                                                  : c.ints_attr("axes").value_or(Dims{});
    const bool keepdims = c.int_attr("keepdims", 1) != 0;
    if (axes.empty()) {
      if (c.int_attr("noop_with_empty_axes", 0) != 0) return set(c, v);
      for (std::size_t a = 0; a < rank; ++a) axes.push_back(static_cast<std::int64_t>(a));
    }
    for (std::int64_t& a : axes) a = axis_of(a, rank, c.where);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
    Dims kept_dims;  // the result with keepdims
    Dims dropped;    // without
    for (std::size_t a = 0; a < rank; ++a) {
      const bool reduced =
          std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(a));
      kept_dims.push_back(reduced ? 1 : v.dims[a]);
      if (!reduced) dropped.push_back(v.dims[a]);
    }
    if (v.is_constant() && (v.integer || op == "ReduceProd")) {
      // Shape arithmetic: folded.
      Value out;
      out.dims = keepdims ? kept_dims : dropped;
      out.integer = v.integer;
      out.elem_type = v.elem_type;
      const std::int64_t n = checked_elements(kept_dims, max_constant_, c.where, "the result");
      const double init = op == "ReduceProd"  ? 1.0
                          : op == "ReduceMax" ? -std::numeric_limits<double>::infinity()
                                              : 0.0;
      out.data.assign(static_cast<std::size_t>(n), init);
      std::vector<std::int64_t> count(static_cast<std::size_t>(n), 0);
      for (std::int64_t flat = 0; flat < v.elements(); ++flat) {
        std::int64_t rest = flat, target = 0, stride = 1;
        for (std::size_t a = rank; a-- > 0;) {
          const std::int64_t i = rest % v.dims[a];
          rest /= v.dims[a];
          target += (kept_dims[a] == 1 ? 0 : i) * stride;
          stride *= kept_dims[a];
        }
        double& acc = out.data[static_cast<std::size_t>(target)];
        const double x = v.data[static_cast<std::size_t>(flat)];
        acc = op == "ReduceProd" ? acc * x : op == "ReduceMax" ? std::max(acc, x) : acc + x;
        ++count[static_cast<std::size_t>(target)];
      }
      if (op == "ReduceMean")
        for (std::size_t i = 0; i < out.data.size(); ++i)
          out.data[i] /= static_cast<double>(std::max<std::int64_t>(count[i], 1));
      return set(c, std::move(out));
    }
    if (op == "ReduceProd") c.unsupported("ReduceProd of a computed tensor is not supported");
    Tensor x = c.tensor(0);
    if (g_.info(x).elements() == 0) c.unsupported("a reduction of an empty tensor");
    for (std::size_t k = axes.size();
         k-- > 0;) {  // the highest axis first: the lower ones keep their index
      if (op == "ReduceMean")
        x = g_.reduce_mean(x, axes[k]);
      else if (op == "ReduceSum")
        x = g_.reduce_sum(x, axes[k]);
      else
        x = g_.reduce_max(x, axes[k]);
    }
    set_tensor(c, keepdims ? reshaped(x, kept_dims) : x);
  }

  // ------------------------------------------------------------------- resize

  void resize(const NodeContext& c, bool upsample) {
    const Tensor x = c.tensor(0);
    const Dims in = g_.shape(x);
    std::string mode = c.string_attr("mode", "nearest");
    // Inputs: Upsample-9 and Resize-10 (X, scales); Resize-11+ (X, roi, scales, sizes).
    const bool legacy = upsample || opset_ < 11;
    std::optional<std::vector<double>> scales;
    std::optional<Dims> sizes;
    if (upsample && opset_ < 9) {
      scales = c.floats_attr("scales");
    } else if (legacy) {
      scales = c.constant_input(1);
    } else {
      if (c.has_input(2) && !c.in(2).data.empty()) scales = c.constant_input(2);
      if (c.has_input(3)) sizes = c.ints_input(3);
    }
    Dims out = in;
    if (sizes) {
      if (sizes->size() != in.size()) c.fail("sizes must have one value per axis");
      out = *sizes;
    } else {
      if (!scales || scales->size() != in.size()) c.fail("scales must have one value per axis");
      for (std::size_t a = 0; a < in.size(); ++a) {
        const double target = static_cast<double>(in[a]) * (*scales)[a];
        if (!(target >= 1 && target < static_cast<double>(max_tensor_)))
          c.fail("a scale out of range");
        // With scales, ONNX maps coordinates by the given scale; it equals out / in (which the
        // dialect uses) only when in · scale is a whole number.
        if (std::floor(target) != target)
          c.unsupported_checked("a scale whose output extent is not a whole number");
        out[a] = static_cast<std::int64_t>(target);
      }
    }
    for (std::int64_t d : out)
      if (d <= 0) c.fail("a non-positive output size");
    checked_elements(out, max_tensor_, c.where, "the result");
    tensor::ResizeInterp interp = tensor::ResizeInterp::Nearest;
    if (mode == "linear" || mode == "bilinear")
      interp = tensor::ResizeInterp::Linear;
    else if (mode != "nearest")
      c.unsupported_checked(fmt::format("mode '{}' is not supported", mode));
    tensor::ResizeCoord coord = tensor::ResizeCoord::Asymmetric;
    tensor::ResizeNearest nearest = tensor::ResizeNearest::RoundPreferFloor;
    if (legacy) {
      // Upsample and Resize-10: asymmetric coordinates; nearest rounds down when enlarging, up
      // when shrinking (onnxruntime's reading of the old specs).
      bool grows = false, shrinks = false;
      for (std::size_t a = 0; a < in.size(); ++a) {
        grows = grows || out[a] > in[a];
        shrinks = shrinks || out[a] < in[a];
      }
      if (grows && shrinks && interp == tensor::ResizeInterp::Nearest)
        c.unsupported_checked(
            "nearest resizing that enlarges some axes and shrinks others (opset < 11)");
      nearest = shrinks ? tensor::ResizeNearest::Ceil : tensor::ResizeNearest::Floor;
    } else {
      const std::string transform = c.string_attr("coordinate_transformation_mode", "half_pixel");
      if (transform == "half_pixel")
        coord = tensor::ResizeCoord::HalfPixel;
      else if (transform == "asymmetric")
        coord = tensor::ResizeCoord::Asymmetric;
      else if (transform == "align_corners")
        coord = tensor::ResizeCoord::AlignCorners;
      else if (transform == "pytorch_half_pixel") {
        // half_pixel, except that an output extent of 1 reads coordinate 0.
        for (std::size_t a = 0; a < in.size(); ++a)
          if (out[a] == 1 && in[a] != 1)
            c.unsupported_checked("pytorch_half_pixel to an extent of 1");
        coord = tensor::ResizeCoord::HalfPixel;
      } else {
        c.unsupported_checked(
            fmt::format("coordinate_transformation_mode '{}' is not supported", transform));
      }
      const std::string rounding = c.string_attr("nearest_mode", "round_prefer_floor");
      if (rounding == "round_prefer_floor")
        nearest = tensor::ResizeNearest::RoundPreferFloor;
      else if (rounding == "floor")
        nearest = tensor::ResizeNearest::Floor;
      else if (rounding == "round_prefer_ceil")
        nearest = tensor::ResizeNearest::RoundPreferCeil;
      else if (rounding == "ceil")
        nearest = tensor::ResizeNearest::Ceil;
      else
        c.fail(fmt::format("nearest_mode '{}' is not one of ONNX's", rounding));
      if (c.int_attr("exclude_outside", 0) != 0)
        c.unsupported_checked("exclude_outside is not supported");
    }
    if (interp == tensor::ResizeInterp::Linear)
      nearest = tensor::ResizeNearest::RoundPreferFloor;  // unused: canonical
    set_tensor(c, out == in ? x : g_.resize(x, out, interp, coord, nearest));
  }

  // ------------------------------------------------------------------- opaque nodes

  /// The node as an `opaque` node: its output shape from ONNX shape inference on the node alone
  /// (its operands' shapes are known), else from the model's value_info; otherwise, or when
  /// opaque nodes are not allowed, an ImportError with `reason`.
  void opaque(const NodeContext& c, const std::string& reason, bool checked) {
    if (!options_.allow_opaque) c.fail(reason);
    std::size_t outputs = 0;
    for (const auto& o : c.node.output()) outputs += !o.empty();
    if (c.node.output_size() != 1 || outputs != 1)
      c.fail(reason +
             fmt::format("; it cannot be kept opaque: it has {} outputs, opaque nodes have one",
                         c.node.output_size()));
    for (const auto& a : c.node.attribute())
      if (a.type() == ::onnx::AttributeProto::GRAPH || a.type() == ::onnx::AttributeProto::GRAPHS)
        c.fail(reason + "; it cannot be kept opaque: it has a subgraph");
    OpaqueOp record;
    record.node = c.node;
    record.node.clear_input();
    record.node.clear_output();
    record.node.clear_name();
    record.node.clear_doc_string();
    record.reason = reason;
    std::vector<Tensor> operands;
    for (std::size_t i = 0; i < static_cast<std::size_t>(c.node.input_size()); ++i) {
      if (!c.has_input(i)) {
        record.inputs.push_back(OpaqueOp::kOmitted);
        continue;
      }
      const Value& v = c.in(i);
      if (v.is_constant() && v.integer) {
        record.inputs.push_back(OpaqueOp::kConstant);
        record.constants.emplace(i, tensor_proto(v, ""));
        continue;
      }
      record.inputs.push_back(static_cast<std::int64_t>(operands.size()));
      operands.push_back(c.tensor(i));
    }
    const Dims dims = opaque_shape(c, record, operands, reason, checked);
    // One type symbol per distinct record (operator, attributes, constants): identical nodes
    // share it (and hash-cons), different ones do not.
    ::onnx::NodeProto key_node = record.node;
    for (const auto& [i, t] : record.constants)
      *key_node.add_input() = std::to_string(i) + t.SerializeAsString();
    const std::string key_bytes = key_node.SerializeAsString();
    std::string symbol;
    if (auto it = opaque_keys_.find(key_bytes); it != opaque_keys_.end()) {
      symbol = it->second;
    } else {
      const std::string base = symbol_name(c.node.op_type());
      symbol = base;
      for (int k = 2; opaque_.count(symbol) || used_names_.count(symbol); ++k)
        symbol = base + "_" + std::to_string(k);
      opaque_keys_.emplace(key_bytes, symbol);
      opaque_.emplace(symbol, std::move(record));
    }
    set_tensor(c, g_.opaque(symbol, dims, operands));
  }

  /// The output shape of an opaque node (see `opaque`): input 0's for an operator that preserves
  /// it, the inputs' broadcast for Max/Min/Mod, ONNX's shape inference for a known operator whose
  /// inputs were validated (`checked`), else the model's declaration.
  Dims opaque_shape(const NodeContext& c, const OpaqueOp& record,
                    const std::vector<Tensor>& operands, const std::string& reason, bool checked) {
    std::optional<Dims> inferred;
    std::string inferred_type_problem;
    const bool default_domain = record.node.domain().empty() || record.node.domain() == "ai.onnx";
    const bool all_operands = std::all_of(record.inputs.begin(), record.inputs.end(),
                                          [](std::int64_t r) { return r >= 0; });
    if (default_domain && preserves_shape(record.node.op_type()) && !record.inputs.empty() &&
        record.inputs[0] == 0) {
      inferred = g_.shape(operands[0]);
    } else if (default_domain && broadcasts_inputs(record.node.op_type()) && !operands.empty() &&
               all_operands) {
      Dims d = g_.shape(operands[0]);
      for (const Tensor& t : operands) d = broadcast_dims(d, g_.shape(t), c.where);
      inferred = d;
    } else if (checked) {
      ::onnx::ModelProto m;
      m.set_ir_version(model_.ir_version() > 0 ? model_.ir_version() : 8);
      *m.mutable_opset_import() = model_.opset_import();
      ::onnx::GraphProto* g = m.mutable_graph();
      g->set_name("opaque");
      ::onnx::NodeProto* n = g->add_node();
      *n = record.node;
      for (std::size_t i = 0; i < record.inputs.size(); ++i) {
        const std::string name = "in" + std::to_string(i);
        const std::int64_t r = record.inputs[i];
        if (r == OpaqueOp::kOmitted) {
          n->add_input("");
          continue;
        }
        n->add_input(name);
        if (r == OpaqueOp::kConstant) {
          ::onnx::TensorProto t = record.constants.at(i);
          t.set_name(name);
          *g->add_initializer() = t;
          continue;
        }
        ::onnx::ValueInfoProto* in = g->add_input();
        in->set_name(name);
        auto* tt = in->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(::onnx::TensorProto::FLOAT);
        for (std::int64_t d : g_.shape(operands[static_cast<std::size_t>(r)]))
          tt->mutable_shape()->add_dim()->set_dim_value(d);
      }
      n->add_output("out");
      try {
        ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(),
                                             ::onnx::ShapeInferenceOptions(false, 1, false));
        for (const auto& vi : g->value_info()) {
          if (vi.name() != "out" || !vi.type().has_tensor_type()) continue;
          const auto& tt = vi.type().tensor_type();
          if (tt.elem_type() != ::onnx::TensorProto::FLOAT &&
              tt.elem_type() != ::onnx::TensorProto::UNDEFINED) {
            inferred_type_problem =
                fmt::format("it produces {}, and the dialect's tensors are float",
                            ::onnx::TensorProto::DataType_IsValid(tt.elem_type())
                                ? ::onnx::TensorProto::DataType_Name(
                                      static_cast<::onnx::TensorProto::DataType>(tt.elem_type()))
                                : std::to_string(tt.elem_type()));
            break;
          }
          if (!tt.has_shape()) break;
          Dims d;
          bool known = true;
          for (const auto& dim : tt.shape().dim()) {
            known = known && dim.has_dim_value() && dim.dim_value() > 0;
            d.push_back(dim.has_dim_value() ? dim.dim_value() : 0);
          }
          if (known) inferred = d;
        }
      } catch (const std::exception&) {
        // ONNX has no schema for the operator, or its inference failed: try value_info.
      }
    }
    if (!inferred_type_problem.empty())
      c.fail(reason + "; it cannot be kept opaque: " + inferred_type_problem);
    const std::optional<Dims> declared = declared_shape(c, c.node.output(0));
    if (inferred && declared && *inferred != *declared)
      c.fail(
          fmt::format("inconsistent shapes: ONNX shape inference gives {}, the model declares {}",
                      tensor::dims_to_string(*inferred), tensor::dims_to_string(*declared)));
    const std::optional<Dims> dims = inferred ? inferred : declared;
    if (!dims)
      c.fail(reason +
             "; it cannot be kept opaque: its output shape is unknown (ONNX shape inference does "
             "not give it "
             "and the model's value_info does not declare it)");
    checked_elements(*dims, max_tensor_, c.where, "the output");
    return *dims;
  }

  /// The float shape the model declares for value `name` (value_info or a graph output), with
  /// symbolic dimensions bound by the inputs; nothing when it is not fully known.
  std::optional<Dims> declared_shape(const NodeContext& c, const std::string& name) const {
    const auto from = [&](const ::onnx::ValueInfoProto& vi) -> std::optional<Dims> {
      if (vi.name() != name || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
        return std::nullopt;
      const auto& tt = vi.type().tensor_type();
      if (tt.elem_type() != ::onnx::TensorProto::FLOAT &&
          tt.elem_type() != ::onnx::TensorProto::UNDEFINED)
        c.fail(fmt::format("it produces type {}, and the dialect's tensors are float",
                           tt.elem_type()));
      Dims d;
      for (const auto& dim : tt.shape().dim()) {
        if (dim.has_dim_value() && dim.dim_value() > 0) {
          d.push_back(dim.dim_value());
        } else if (auto p = dim_params_.find(dim.dim_param());
                   dim.has_dim_param() && p != dim_params_.end()) {
          d.push_back(p->second);
        } else {
          return std::nullopt;
        }
      }
      return d;
    };
    for (const auto& vi : model_.graph().value_info())
      if (auto d = from(vi)) return d;
    for (const auto& vi : model_.graph().output())
      if (auto d = from(vi)) return d;
    return std::nullopt;
  }

  const ::onnx::ModelProto& model_;
  const ImportOptions& options_;
  const std::int64_t max_tensor_ = options_.max_tensor_elements;
  const std::int64_t max_constant_ = options_.max_constant_elements;
  std::int64_t opset_ = 0;
  tensor::Graph g_;
  std::map<std::string, Value> values_;
  std::map<std::string, tensor::HostTensor> weights_;
  std::set<std::string> used_names_;
  std::set<std::string> listed_inputs_;
  std::map<std::string, std::string> symbol_of_input_;
  std::map<std::string, Tensor> weight_tensors_;    // by the ONNX name (plus suffix) they came from
  std::map<std::string, std::int64_t> dim_params_;  // symbolic dimensions bound by the inputs
  std::map<std::string, OpaqueOp> opaque_;          // by type symbol
  std::map<std::string, std::string> opaque_keys_;  // serialized record -> type symbol
};

}  // namespace detail

/// The ONNX operator types (default domain) the importer converts, sorted; any other operator
/// is kept as an `opaque` node.
[[nodiscard]] inline std::vector<std::string> supported_operators() {
  std::vector<std::string> out;
  for (const auto& [type, converter] : detail::Importer::converters()) out.emplace_back(type);
  std::sort(out.begin(), out.end());
  return out;
}

/// Imports a parsed model. Throws `ImportError` (with the node or part of the model) for what
/// the importer cannot import or finds inconsistent (an inconsistent shape names the node).
[[nodiscard]] inline ImportedModel import_model(const ::onnx::ModelProto& model,
                                                const ImportOptions& options = {}) {
  try {
    return detail::Importer(model, options).run();
  } catch (const tensor::ShapeError& e) {
    throw ImportError("", std::string("inconsistent shapes: ") + e.what());
  }
}

/// Imports the model in `bytes` (the serialized ModelProto).
[[nodiscard]] inline ImportedModel import_model_from_bytes(std::string_view bytes,
                                                           const ImportOptions& options = {}) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError(
        "file",
        "not an ONNX model (the protobuf message does not parse; truncated or another format)");
  if (!model.has_graph()) throw ImportError("file", "the model has no graph");
  return import_model(model, options);
}

/// Imports the ONNX model file at `path` (`tensat::onnx::import`).
[[nodiscard]] inline ImportedModel import(const std::string& path,
                                          const ImportOptions& options = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError("file", fmt::format("cannot open '{}'", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) throw ImportError("file", fmt::format("cannot read '{}'", path));
  return import_model_from_bytes(bytes.str(), options);
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_IMPORT_H
