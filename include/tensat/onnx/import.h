// ONNX import: an ONNX model file -> a tensor-dialect program plus the bindings of its weights.
// Needs Debian's libonnx-dev (the protobuf classes of onnx.proto): link `tensat::onnx`, which
// CMake defines when it finds ONNX (option TENSAT_WITH_ONNX) and which defines TENSAT_HAS_ONNX.
#ifndef TENSAT_ONNX_IMPORT_H
#define TENSAT_ONNX_IMPORT_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/executor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// A model that cannot be imported: not an ONNX file, an opset or operator the importer does
/// not support, a missing input shape, inconsistent shapes. `where()`: the node (index, name
/// and op type) or the part of the model ("input 'x'", "file"), empty if none.
class ImportError : public Error {
 public:
  ImportError(std::string where, const std::string& reason)
      : Error(where.empty() ? "onnx import: " + reason : fmt::format("onnx import: {}: {}", where, reason)),
        where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

struct ImportOptions {
  /// Shapes of graph inputs, by name: required for an input with a symbolic or unknown
  /// dimension (a dynamic batch size), and overriding the model's shape when given.
  std::map<std::string, tensor::Dims> input_shapes;
};

/// What `import_model` returns: the program (its root the single output, or a `noop` of the
/// outputs in the model's order), the values of its weights (initializers and `Constant`
/// tensors the program reads), and the model's names.
struct ImportedModel {
  RecExpr<tensor::TensorNode> program;
  tensor::Bindings weights;
  std::vector<std::string> inputs;   ///< graph inputs that are not initializers, in order
  std::vector<std::string> outputs;  ///< graph outputs, in order
  std::int64_t opset = 0;            ///< the default domain's opset version
};

/// Opset versions of the default domain the importer accepts (those of PyTorch's and Paddle's
/// exporters).
inline constexpr std::int64_t kMinOpset = 9;
inline constexpr std::int64_t kMaxOpset = 17;

namespace internal {

using tensor::Dims;
using tensor::Tensor;

/// A value during import: a tensor of the program being built, or a constant known at import
/// time (integers for shapes and axes, floats for weights), kept as doubles.
struct Value {
  std::optional<Tensor> tensor;  ///< set for a program tensor
  Dims dims;                     ///< the shape (also of a program tensor)
  std::vector<double> data;      ///< a constant's elements, row-major
  bool integer = false;          ///< a constant of an integer type (shapes, indices, axes)
  [[nodiscard]] bool is_constant() const noexcept { return !tensor.has_value(); }
  [[nodiscard]] std::int64_t elements() const noexcept {
    return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
  }
};

/// The elements of an ONNX TensorProto (FLOAT, DOUBLE, INT32, INT64, INT8, UINT8, BOOL), from
/// its typed fields or its little-endian raw_data.
inline Value tensor_value(const ::onnx::TensorProto& t, const std::string& where) {
  Value v;
  for (std::int64_t d : t.dims()) {
    if (d < 0) throw ImportError(where, fmt::format("tensor '{}' has a negative dimension {}", t.name(), d));
    v.dims.push_back(d);
  }
  if (t.has_data_location() && t.data_location() == ::onnx::TensorProto::EXTERNAL)
    throw ImportError(where, fmt::format("tensor '{}' keeps its data in an external file, which is not supported",
                                         t.name()));
  const std::int64_t n = v.elements();
  const std::string& raw = t.raw_data();
  const auto from_raw = [&](auto sample) {
    using T = decltype(sample);
    if (raw.size() != static_cast<std::size_t>(n) * sizeof(T))
      throw ImportError(where, fmt::format("tensor '{}': raw_data holds {} bytes, {} elements of {} bytes expected",
                                           t.name(), raw.size(), n, sizeof(T)));
    v.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, raw.data() + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
      v.data[static_cast<std::size_t>(i)] = static_cast<double>(x);
    }
  };
  const auto from_field = [&](const auto& field) {
    if (field.size() != n)
      throw ImportError(where, fmt::format("tensor '{}' holds {} values for shape {}", t.name(), field.size(),
                                           tensor::dims_to_string(v.dims)));
    v.data.assign(field.begin(), field.end());
  };
  switch (t.data_type()) {
    case ::onnx::TensorProto::FLOAT: raw.empty() ? from_field(t.float_data()) : from_raw(float{}); break;
    case ::onnx::TensorProto::DOUBLE: raw.empty() ? from_field(t.double_data()) : from_raw(double{}); break;
    case ::onnx::TensorProto::INT64:
      v.integer = true;
      raw.empty() ? from_field(t.int64_data()) : from_raw(std::int64_t{});
      break;
    case ::onnx::TensorProto::INT32:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data()) : from_raw(std::int32_t{});
      break;
    case ::onnx::TensorProto::INT8:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data()) : from_raw(std::int8_t{});
      break;
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::BOOL:
      v.integer = true;
      raw.empty() ? from_field(t.int32_data()) : from_raw(std::uint8_t{});
      break;
    default:
      throw ImportError(where, fmt::format("tensor '{}' has data type {}, which is not supported", t.name(),
                                           ::onnx::TensorProto::DataType_Name(
                                               static_cast<::onnx::TensorProto::DataType>(t.data_type()))));
  }
  return v;
}

/// Dims from a standard container (Dims is a small vector without insert/erase).
template <class Container>
Dims dims_of(const Container& values) {
  Dims out;
  for (auto v : values) out.push_back(static_cast<std::int64_t>(v));
  return out;
}
inline std::vector<std::int64_t> vector_of(const Dims& d) { return std::vector<std::int64_t>(d.begin(), d.end()); }

/// A name usable as a symbol of the dialect's s-expressions.
inline std::string symbol_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '/' || c == ':' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9') || out[0] == '-') out.insert(out.begin(), 'v');
  return out;
}

/// Normalizes a possibly negative axis of a rank-`rank` tensor.
inline std::int64_t axis_of(std::int64_t axis, std::size_t rank, const std::string& where) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) throw ImportError(where, fmt::format("axis {} is outside a rank-{} tensor", axis, rank));
  return axis < 0 ? axis + r : axis;
}

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, const ImportOptions& options) : model_(model), options_(options) {}

  ImportedModel run() {
    ImportedModel out;
    out.opset = default_opset();
    opset_ = out.opset;
    const ::onnx::GraphProto& graph = model_.graph();
    for (const auto& init : graph.initializer()) {
      const std::string where = fmt::format("initializer '{}'", init.name());
      values_[init.name()] = tensor_value(init, where);
    }
    for (const auto& input : graph.input()) {
      if (values_.count(input.name())) continue;  // an initializer listed as an input (old exporters)
      values_[input.name()] = graph_input(input);
      out.inputs.push_back(input.name());
    }
    for (int i = 0; i < graph.node_size(); ++i) node(graph.node(i), i);
    if (graph.output_size() == 0) throw ImportError("graph", "the model has no outputs");
    for (const auto& output : graph.output()) {
      const Value& v = value(output.name(), fmt::format("output '{}'", output.name()));
      Tensor t = v.tensor ? *v.tensor : weight_of(v, output.name());
      g_.output(t);
      out.outputs.push_back(output.name());
    }
    out.program = g_.program();
    // Only the weights the program still reads.
    for (std::size_t i = 0; i < out.program.size(); ++i) {
      const tensor::TensorNode& n = out.program[Id(i)];
      if (n.op() != tensor::Op::Weight) continue;
      const std::string name(out.program[n.children()[0]].symbol().str());
      if (auto it = weights_.find(name); it != weights_.end()) out.weights.emplace(name, it->second);
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
      throw ImportError("model", fmt::format("opset {} is not supported (supported: {} to {})", *opset, kMinOpset,
                                             kMaxOpset));
    return *opset;
  }

  Value graph_input(const ::onnx::ValueInfoProto& input) {
    const std::string where = fmt::format("input '{}'", input.name());
    const auto& type = input.type();
    if (!type.has_tensor_type()) throw ImportError(where, "is not a tensor");
    if (type.tensor_type().elem_type() != ::onnx::TensorProto::FLOAT)
      throw ImportError(where, "only float inputs are supported");
    Dims dims;
    if (auto it = options_.input_shapes.find(input.name()); it != options_.input_shapes.end()) {
      dims = it->second;
      if (type.tensor_type().has_shape() && type.tensor_type().shape().dim_size() != static_cast<int>(dims.size()))
        throw ImportError(where, fmt::format("the given shape {} has rank {}, the model's rank {}",
                                             tensor::dims_to_string(dims), dims.size(),
                                             type.tensor_type().shape().dim_size()));
      if (type.tensor_type().has_shape())
        for (int k = 0; k < type.tensor_type().shape().dim_size(); ++k) {
          const auto& d = type.tensor_type().shape().dim(k);
          if (d.has_dim_value() && d.dim_value() != dims[static_cast<std::size_t>(k)])
            throw ImportError(where, fmt::format("the given shape {} disagrees with the model's dimension {} = {}",
                                                 tensor::dims_to_string(dims), k, d.dim_value()));
        }
    } else {
      if (!type.tensor_type().has_shape()) throw ImportError(where, "has no shape; give it in input_shapes");
      for (const auto& d : type.tensor_type().shape().dim()) {
        if (!d.has_dim_value())
          throw ImportError(where, fmt::format("dimension '{}' is symbolic; give the input's shape in input_shapes "
                                               "(tensat-opt: --input {}=d0,d1,...)",
                                               d.dim_param(), input.name()));
        dims.push_back(d.dim_value());
      }
    }
    for (std::int64_t d : dims)
      if (d <= 0) throw ImportError(where, fmt::format("dimension {} is not positive", d));
    Value v;
    v.dims = dims;
    v.tensor = g_.input(symbol_name(input.name()), dims);
    return v;
  }

  // ------------------------------------------------------------------- helpers

  const Value& value(const std::string& name, const std::string& where) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw ImportError(where, fmt::format("reads '{}', which nothing defines", name));
    return it->second;
  }

  /// A float constant as a weight of the program (named after its ONNX value, made unique).
  Tensor weight_of(const Value& v, const std::string& onnx_name) {
    if (v.tensor) return *v.tensor;
    if (auto it = weight_tensors_.find(onnx_name); it != weight_tensors_.end()) return it->second;
    std::string name = symbol_name(onnx_name);
    while (weights_.count(name) || used_names_.count(name)) name += "_";
    used_names_.insert(name);
    const Dims dims = v.dims.empty() ? Dims{1} : v.dims;  // a scalar as a one-element tensor
    tensor::HostTensor h(dims);
    for (std::size_t i = 0; i < v.data.size(); ++i) h.data[i] = static_cast<float>(v.data[i]);
    weights_.emplace(name, std::move(h));
    const Tensor t = g_.weight(name, dims);
    weight_tensors_.emplace(onnx_name, t);
    return t;
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
    Tensor tensor(std::size_t i) const { return self.weight_of(in(i), node.input(static_cast<int>(i))); }
    [[nodiscard]] const ::onnx::AttributeProto* attr(std::string_view name) const {
      for (const auto& a : node.attribute())
        if (a.name() == name) return &a;
      return nullptr;
    }
    [[nodiscard]] std::int64_t int_attr(std::string_view name, std::int64_t fallback) const {
      const auto* a = attr(name);
      if (!a) return fallback;
      if (a->type() != ::onnx::AttributeProto::INT) throw ImportError(where, fmt::format("attribute {} is not an int", name));
      return a->i();
    }
    [[nodiscard]] double float_attr(std::string_view name, double fallback) const {
      const auto* a = attr(name);
      if (!a) return fallback;
      if (a->type() != ::onnx::AttributeProto::FLOAT)
        throw ImportError(where, fmt::format("attribute {} is not a float", name));
      return a->f();
    }
    [[nodiscard]] std::optional<Dims> ints_attr(std::string_view name) const {
      const auto* a = attr(name);
      if (!a) return std::nullopt;
      if (a->type() != ::onnx::AttributeProto::INTS)
        throw ImportError(where, fmt::format("attribute {} is not a list of ints", name));
      return dims_of(a->ints());
    }
    /// The integers of constant input `i` (shapes, axes, indices).
    [[nodiscard]] Dims ints_input(std::size_t i) const {
      const Value& v = in(i);
      if (!v.is_constant())
        throw ImportError(where, fmt::format("input {} ('{}') must be known at import time (a constant or a "
                                             "Shape-derived value), not computed by the model",
                                             i, node.input(static_cast<int>(i))));
      Dims out;
      for (double d : v.data) out.push_back(static_cast<std::int64_t>(d));
      return out;
    }
    void fail(const std::string& reason) const { throw ImportError(where, reason); }
  };

  void set_tensor(const NodeContext& c, Tensor t, int output = 0) {
    Value v;
    v.dims = g_.shape(t);
    v.tensor = t;
    set(c, std::move(v), output);
  }
  void set(const NodeContext& c, Value v, int output = 0) {
    if (output >= c.node.output_size()) c.fail(fmt::format("has no output {}", output));
    values_[c.node.output(output)] = std::move(v);
  }

  /// Broadcast shape of two constants' dims (numpy rules), for folding.
  static Dims broadcast_dims(const Dims& a, const Dims& b, const std::string& where) {
    const std::size_t r = std::max(a.size(), b.size());
    Dims out(r, 0);
    for (std::size_t i = 0; i < r; ++i) {
      const std::int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
      const std::int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
      if (x != y && x != 1 && y != 1)
        throw ImportError(where, fmt::format("shapes {} and {} do not broadcast", tensor::dims_to_string(a),
                                             tensor::dims_to_string(b)));
      out[i] = std::max(x, y);
    }
    return out;
  }
  static Value fold_binary(const Value& a, const Value& b, const std::function<double(double, double)>& f,
                           const std::string& where) {
    Value out;
    out.dims = broadcast_dims(a.dims, b.dims, where);
    out.integer = a.integer && b.integer;
    const std::int64_t n = out.elements();
    const std::size_t r = out.dims.size();
    const auto index = [&](const Value& v, std::int64_t flat) {
      std::int64_t idx = 0, stride = 1;
      for (std::size_t k = r; k-- > 0;) {
        const std::int64_t coord = flat % out.dims[k];
        flat /= out.dims[k];
        const std::size_t off = r - v.dims.size();
        if (k >= off) {
          const std::int64_t d = v.dims[k - off];
          idx += (d == 1 ? 0 : coord) * stride;
          stride *= d;
        }
      }
      return idx;
    };
    out.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      out.data[static_cast<std::size_t>(i)] =
          f(a.data[static_cast<std::size_t>(index(a, i))], b.data[static_cast<std::size_t>(index(b, i))]);
    return out;
  }

  /// TensorFlow SAME padding of one spatial axis: (before, after).
  static std::pair<std::int64_t, std::int64_t> same_pads(std::int64_t in, std::int64_t k, std::int64_t s) {
    const std::int64_t out = (in + s - 1) / s;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
    return {total / 2, total - total / 2};
  }

  /// The dialect's padding for a window op, from ONNX's pads/auto_pad; pads the input explicitly
  /// (zeros) when neither SAME nor VALID fits and `explicit_ok`.
  tensor::Padding window_padding(const NodeContext& c, Tensor& x, std::int64_t kh, std::int64_t kw, std::int64_t sh,
                                 std::int64_t sw, bool explicit_ok) {
    const Dims& d = g_.shape(x);
    Dims pads = c.ints_attr("pads").value_or(Dims{0, 0, 0, 0});
    if (pads.size() != 4) c.fail("only 2-D windows are supported (pads must have 4 values)");
    std::string auto_pad = "NOTSET";
    if (const auto* a = c.attr("auto_pad")) auto_pad = a->s();
    if (auto_pad == "VALID") return tensor::Padding::Valid;
    const auto [th, bh] = same_pads(d[2], kh, sh);
    const auto [tw, bw] = same_pads(d[3], kw, sw);
    if (auto_pad == "SAME_UPPER") return tensor::Padding::Same;
    if (auto_pad == "SAME_LOWER") {
      if (th == bh && tw == bw) return tensor::Padding::Same;
      pads = {bh, bw, th, tw};
    } else if (auto_pad != "NOTSET") {
      c.fail(fmt::format("auto_pad '{}' is not supported", auto_pad));
    }
    if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; })) return tensor::Padding::Valid;
    if (pads == Dims{th, tw, bh, bw}) return tensor::Padding::Same;
    if (!explicit_ok)
      c.fail(fmt::format("pads {} are neither SAME nor VALID, which this operator cannot take",
                         tensor::dims_to_string(pads)));
    for (std::int64_t p : pads)
      if (p < 0) c.fail("negative pads are not supported");
    if (pads[0] || pads[2]) x = g_.pad(x, 2, pads[0], pads[2]);
    if (pads[1] || pads[3]) x = g_.pad(x, 3, pads[1], pads[3]);
    return tensor::Padding::Valid;
  }

  void require_unit(const NodeContext& c, std::string_view attr) const {
    if (auto v = c.ints_attr(attr))
      for (std::int64_t d : *v)
        if (d != 1) c.fail(fmt::format("{} other than 1 are not supported", attr));
  }

  // ------------------------------------------------------------------- operators

  void node(const ::onnx::NodeProto& node, int index) {
    NodeContext c{node, fmt::format("node {} ('{}', {})", index, node.name(), node.op_type()), *this};
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      c.fail(fmt::format("operator domain '{}' is not supported", node.domain()));
    const std::string& op = node.op_type();
    if (op == "Constant") return constant(c);
    if (op == "Identity" || op == "Dropout") return set(c, c.in(0));
    if (op == "Shape") {
      Value v;
      v.integer = true;
      v.dims = {static_cast<std::int64_t>(c.in(0).dims.size())};
      for (std::int64_t d : c.in(0).dims) v.data.push_back(static_cast<double>(d));
      return set(c, std::move(v));
    }
    if (op == "Cast") return cast(c);
    if (op == "Gather") return gather(c);
    if (op == "Unsqueeze" || op == "Squeeze") return squeeze(c, op == "Unsqueeze");
    if (op == "Concat") return concat(c);
    if (op == "Reshape") return reshape(c, c.ints_input(1));
    if (op == "Flatten") {
      const Dims& d = c.in(0).dims;
      const std::int64_t axis = c.int_attr("axis", 1);
      const std::int64_t a = axis < 0 ? axis + static_cast<std::int64_t>(d.size()) : axis;
      if (a < 0 || a > static_cast<std::int64_t>(d.size())) c.fail(fmt::format("axis {} is out of range", axis));
      std::int64_t outer = 1;
      for (std::int64_t k = 0; k < a; ++k) outer *= d[static_cast<std::size_t>(k)];
      return reshape(c, Dims{outer, -1});
    }
    if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") return binary(c, op);
    if (op == "Relu") return set_tensor(c, g_.relu(c.tensor(0)));
    if (op == "Sigmoid") return set_tensor(c, g_.sigmoid(c.tensor(0)));
    if (op == "Tanh") return set_tensor(c, g_.tanh(c.tensor(0)));
    if (op == "Exp") return set_tensor(c, g_.exp(c.tensor(0)));
    if (op == "MatMul") return matmul(c);
    if (op == "Gemm") return gemm(c);
    if (op == "Conv") return conv(c);
    if (op == "MaxPool" || op == "AveragePool") return pool(c, op == "MaxPool");
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      Tensor x = c.tensor(0);
      const Dims& d = g_.shape(x);
      if (d.size() != 4) c.fail("only NCHW inputs are supported");
      Tensor y = op == "GlobalMaxPool" ? g_.poolmax(x, d[2], d[3], 1, 1, tensor::Padding::Valid)
                                       : g_.poolavg(x, d[2], d[3], 1, 1, tensor::Padding::Valid);
      return set_tensor(c, y);
    }
    if (op == "BatchNormalization") return batchnorm(c);
    if (op == "Softmax") return softmax(c);
    if (op == "Transpose") {
      Tensor x = c.tensor(0);
      Dims perm = c.ints_attr("perm").value_or(Dims{});
      if (perm.empty())
        for (std::size_t k = g_.shape(x).size(); k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
      return set_tensor(c, g_.transpose(x, perm));
    }
    c.fail(fmt::format("operator {} is not supported", op));
  }

  void constant(const NodeContext& c) {
    if (const auto* a = c.attr("value")) {
      if (a->type() != ::onnx::AttributeProto::TENSOR) c.fail("attribute value is not a tensor");
      return set(c, tensor_value(a->t(), c.where));
    }
    Value v;
    if (const auto* a = c.attr("value_float")) {
      v.data = {a->f()};
    } else if (const auto* ai = c.attr("value_int")) {
      v.data = {static_cast<double>(ai->i())};
      v.integer = true;
    } else if (const auto* af = c.attr("value_floats")) {
      v.data.assign(af->floats().begin(), af->floats().end());
      v.dims = {static_cast<std::int64_t>(v.data.size())};
    } else if (const auto* is = c.attr("value_ints")) {
      v.data.assign(is->ints().begin(), is->ints().end());
      v.dims = {static_cast<std::int64_t>(v.data.size())};
      v.integer = true;
    } else {
      c.fail("a Constant without a supported value attribute");
    }
    set(c, std::move(v));
  }

  void cast(const NodeContext& c) {
    Value v = c.in(0);
    const std::int64_t to = c.int_attr("to", 0);
    const bool to_float = to == ::onnx::TensorProto::FLOAT || to == ::onnx::TensorProto::DOUBLE;
    const bool to_int = to == ::onnx::TensorProto::INT64 || to == ::onnx::TensorProto::INT32;
    if (v.tensor) {
      if (!to_float) c.fail("a computed tensor can only be cast to float");
      return set(c, std::move(v));
    }
    if (!to_float && !to_int) c.fail(fmt::format("cast of a constant to type {} is not supported", to));
    if (to_int)
      for (double& d : v.data) d = std::trunc(d);
    v.integer = to_int;
    set(c, std::move(v));
  }

  void gather(const NodeContext& c) {
    const Value& data = c.in(0);
    if (!data.is_constant()) c.fail("Gather of a computed tensor is not supported");
    const Value& idx = c.in(1);
    if (!idx.is_constant()) c.fail("Gather with computed indices is not supported");
    const std::int64_t axis = axis_of(c.int_attr("axis", 0), data.dims.size(), c.where);
    const std::int64_t extent = data.dims[static_cast<std::size_t>(axis)];
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
    for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < data.dims.size(); ++k) inner *= data.dims[k];
    Value out;
    out.integer = data.integer;
    std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
    dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
    dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    out.dims = dims_of(dims);
    for (std::int64_t o = 0; o < outer; ++o)
      for (double di : idx.data) {
        auto i = static_cast<std::int64_t>(di);
        if (i < -extent || i >= extent) c.fail(fmt::format("index {} is outside an axis of {}", i, extent));
        if (i < 0) i += extent;
        for (std::int64_t k = 0; k < inner; ++k)
          out.data.push_back(data.data[static_cast<std::size_t>((o * extent + i) * inner + k)]);
      }
    set(c, std::move(out));
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
      for (std::int64_t a : axes) d.insert(d.begin() + a, 1);
    } else {
      if (axes.empty())
        for (std::size_t k = 0; k < d.size(); ++k)
          if (d[k] == 1) axes.push_back(static_cast<std::int64_t>(k));
      for (std::int64_t& a : axes) {
        a = axis_of(a, d.size(), c.where);
        if (d[static_cast<std::size_t>(a)] != 1) c.fail(fmt::format("axis {} has size {}, not 1", a, d[static_cast<std::size_t>(a)]));
      }
      std::sort(axes.begin(), axes.end(), std::greater<>());
      for (std::int64_t a : axes) d.erase(d.begin() + a);
    }
    if (v.tensor) return set_tensor(c, g_.reshape(*v.tensor, dims_of(d)));
    v.dims = dims_of(d);
    set(c, std::move(v));
  }

  void concat(const NodeContext& c) {
    const std::size_t n = c.inputs();
    if (n == 0) c.fail("Concat without inputs");
    const std::size_t rank = c.in(0).dims.size();
    const std::int64_t axis = axis_of(c.int_attr("axis", 0), rank, c.where);
    bool all_constant = true;
    for (std::size_t i = 0; i < n; ++i) all_constant = all_constant && c.in(i).is_constant();
    if (!all_constant) {
      std::vector<Tensor> parts;
      for (std::size_t i = 0; i < n; ++i) parts.push_back(c.tensor(i));
      return set_tensor(c, parts.size() == 1 ? parts[0] : g_.concat(axis, parts));
    }
    Value out;
    out.dims = c.in(0).dims;
    out.dims[static_cast<std::size_t>(axis)] = 0;
    out.integer = true;
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= out.dims[static_cast<std::size_t>(k)];
    for (std::size_t i = 0; i < n; ++i) {
      const Value& v = c.in(i);
      if (v.dims.size() != rank) c.fail("Concat of inputs of different ranks");
      out.dims[static_cast<std::size_t>(axis)] += v.dims[static_cast<std::size_t>(axis)];
      out.integer = out.integer && v.integer;
    }
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::size_t i = 0; i < n; ++i) {
        const Value& v = c.in(i);
        const std::int64_t block = v.elements() / std::max<std::int64_t>(outer, 1);
        out.data.insert(out.data.end(), v.data.begin() + o * block, v.data.begin() + (o + 1) * block);
      }
    set(c, std::move(out));
  }

  void reshape(const NodeContext& c, Dims target) {
    const Value& v = c.in(0);
    const std::int64_t n = v.elements();
    std::optional<std::size_t> infer;
    std::int64_t known = 1;
    for (std::size_t k = 0; k < target.size(); ++k) {
      if (target[k] == 0) {
        if (k >= v.dims.size()) c.fail("a 0 in the target shape copies a dimension the input does not have");
        target[k] = v.dims[k];
      }
      if (target[k] == -1) {
        if (infer) c.fail("the target shape has two -1");
        infer = k;
        continue;
      }
      if (target[k] < 0) c.fail(fmt::format("target dimension {} is negative", target[k]));
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
    if (v.tensor) return set_tensor(c, g_.reshape(*v.tensor, target));
    Value out = v;
    out.dims = target;
    set(c, std::move(out));
  }

  void binary(const NodeContext& c, const std::string& op) {
    const Value& a = c.in(0);
    const Value& b = c.in(1);
    if (a.is_constant() && b.is_constant()) {
      std::function<double(double, double)> f;
      if (op == "Add") f = [](double x, double y) { return x + y; };
      if (op == "Sub") f = [](double x, double y) { return x - y; };
      if (op == "Mul") f = [](double x, double y) { return x * y; };
      if (op == "Div") {
        const bool integer = a.integer && b.integer;
        f = [integer](double x, double y) { return integer ? std::trunc(x / y) : x / y; };
      }
      return set(c, fold_binary(a, b, f, c.where));
    }
    // A constant operand of Sub or Div is folded into an Add or a Mul.
    if ((op == "Sub" || op == "Div") && b.is_constant()) {
      Value k = b;
      for (double& d : k.data) d = op == "Sub" ? -d : 1.0 / d;
      k.integer = false;
      const Tensor x = c.tensor(0);
      const Tensor y = weight_of(k, c.node.input(1) + (op == "Sub" ? "_neg" : "_recip"));
      return set_tensor(c, op == "Sub" ? g_.add(x, y) : g_.mul(x, y));
    }
    if (op == "Sub" || op == "Div") c.fail(fmt::format("{} of two computed tensors is not supported", op));
    const Tensor x = c.tensor(0), y = c.tensor(1);
    set_tensor(c, op == "Add" ? g_.add(x, y) : g_.mul(x, y));
  }

  void matmul(const NodeContext& c) {
    Tensor a = c.tensor(0), b = c.tensor(1);
    const Dims da = g_.shape(a), db = g_.shape(b);
    if (da.size() < 2 || db.size() < 2) c.fail("MatMul of a vector is not supported");
    if (da.size() > 2 && db.size() == 2) {
      // [..., M, K] x [K, N]: one product over the flattened leading dimensions.
      const std::int64_t k = da.back(), rows = std::accumulate(da.begin(), da.end() - 1, std::int64_t{1}, std::multiplies<>());
      Dims out = da;
      out.back() = db.back();
      return set_tensor(c, g_.reshape(g_.matmul(g_.reshape(a, {rows, k}), b), out));
    }
    if (da.size() != db.size()) c.fail("MatMul of operands of different ranks is only supported for [..., M, K] x [K, N]");
    set_tensor(c, g_.matmul(a, b));
  }

  void gemm(const NodeContext& c) {
    const double alpha = c.float_attr("alpha", 1.0), beta = c.float_attr("beta", 1.0);
    Value av = c.in(0), bv = c.in(1);
    if (alpha != 1.0) {
      if (!bv.is_constant()) c.fail("alpha other than 1 needs a constant B");
      for (double& d : bv.data) d *= alpha;
    }
    Tensor a = weight_of(av, c.node.input(0));
    Tensor b = weight_of(bv, c.node.input(1) + (alpha != 1.0 ? "_scaled" : ""));
    if (g_.shape(a).size() != 2 || g_.shape(b).size() != 2) c.fail("Gemm operands must be matrices");
    if (c.int_attr("transA", 0)) a = g_.transpose(a, {1, 0});
    if (c.int_attr("transB", 0)) b = g_.transpose(b, {1, 0});
    Tensor y = g_.matmul(a, b);
    if (c.has_input(2)) {
      Value cv = c.in(2);
      if (beta != 1.0) {
        if (!cv.is_constant()) c.fail("beta other than 1 needs a constant C");
        for (double& d : cv.data) d *= beta;
      }
      if (beta != 0.0) y = g_.add(y, weight_of(cv, c.node.input(2) + (beta != 1.0 ? "_scaled" : "")));
    }
    set_tensor(c, y);
  }

  void conv(const NodeContext& c) {
    Tensor x = c.tensor(0);
    const Value& wv = c.in(1);
    if (wv.dims.size() != 4 || g_.shape(x).size() != 4) c.fail("only 2-D convolutions (NCHW) are supported");
    require_unit(c, "dilations");
    const Dims strides = c.ints_attr("strides").value_or(Dims{1, 1});
    if (strides.size() != 2) c.fail("strides must have 2 values");
    const std::int64_t group = c.int_attr("group", 1);
    if (group < 1 || g_.shape(x)[1] != wv.dims[1] * group)
      c.fail(fmt::format("weight {} with group {} does not fit input {}", tensor::dims_to_string(wv.dims), group,
                         tensor::dims_to_string(g_.shape(x))));
    const tensor::Padding pad = window_padding(c, x, wv.dims[2], wv.dims[3], strides[0], strides[1], true);
    Tensor y = g_.conv2d(x, weight_of(wv, c.node.input(1)), strides[0], strides[1], pad);
    if (c.has_input(2)) {
      Value bias = c.in(2);
      if (bias.dims != Dims{wv.dims[0]}) c.fail("the bias must have one value per output channel");
      if (bias.is_constant()) {
        bias.dims = {wv.dims[0], 1, 1};
        y = g_.add(y, weight_of(bias, c.node.input(2)));
      } else {
        y = g_.add(y, g_.reshape(*bias.tensor, {wv.dims[0], 1, 1}));
      }
    }
    set_tensor(c, y);
  }

  void pool(const NodeContext& c, bool is_max) {
    Tensor x = c.tensor(0);
    if (g_.shape(x).size() != 4) c.fail("only 2-D pooling (NCHW) is supported");
    const Dims k = c.ints_attr("kernel_shape").value_or(Dims{});
    if (k.size() != 2) c.fail("kernel_shape must have 2 values");
    const Dims strides = c.ints_attr("strides").value_or(Dims{1, 1});
    if (strides.size() != 2) c.fail("strides must have 2 values");
    if (c.int_attr("ceil_mode", 0) != 0) c.fail("ceil_mode is not supported");
    require_unit(c, "dilations");
    if (c.node.output_size() > 1 && !c.node.output(1).empty()) c.fail("MaxPool's Indices output is not supported");
    // Padding is excluded from both a max and (count_include_pad = 0) an average: only SAME or
    // VALID, which the dialect's windows implement that way, fit.
    if (!is_max && c.int_attr("count_include_pad", 0) != 0) c.fail("count_include_pad is not supported");
    const tensor::Padding pad = window_padding(c, x, k[0], k[1], strides[0], strides[1], false);
    set_tensor(c, is_max ? g_.poolmax(x, k[0], k[1], strides[0], strides[1], pad)
                         : g_.poolavg(x, k[0], k[1], strides[0], strides[1], pad));
  }

  void batchnorm(const NodeContext& c) {
    if (c.int_attr("training_mode", 0) != 0) c.fail("training mode is not supported");
    Tensor x = c.tensor(0);
    const std::int64_t channels = g_.shape(x).size() >= 2 ? g_.shape(x)[1] : 0;
    Value var = c.in(4);
    for (std::size_t i = 1; i <= 4; ++i)
      if (c.in(i).dims != Dims{channels}) c.fail("scale, bias, mean and var must have one value per channel");
    // The dialect's eps is 1e-5; another epsilon is folded into a constant variance.
    const double eps = c.float_attr("epsilon", 1e-5);
    if (std::fabs(eps - tensor::internal::kNormEps) > 1e-12) {
      if (!var.is_constant()) c.fail("an epsilon other than 1e-5 needs a constant variance");
      for (double& d : var.data) d += eps - tensor::internal::kNormEps;
    }
    const Tensor v = weight_of(var, c.node.input(4) + (var.data == c.in(4).data ? "" : "_eps"));
    set_tensor(c, g_.batchnorm(x, c.tensor(1), c.tensor(2), c.tensor(3), v));
  }

  void softmax(const NodeContext& c) {
    Tensor x = c.tensor(0);
    const Dims d = g_.shape(x);
    const std::int64_t axis = axis_of(c.int_attr("axis", opset_ >= 13 ? -1 : 1), d.size(), c.where);
    if (opset_ >= 13 || axis == static_cast<std::int64_t>(d.size()) - 1)
      return set_tensor(c, g_.softmax(x, axis));
    // Before opset 13 the input is flattened to 2-D at `axis`, normalized per row.
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= d[static_cast<std::size_t>(k)];
    const std::int64_t inner = std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()) / outer;
    set_tensor(c, g_.reshape(g_.softmax(g_.reshape(x, {outer, inner}), 1), d));
  }

  const ::onnx::ModelProto& model_;
  const ImportOptions& options_;
  std::int64_t opset_ = 0;
  tensor::Graph g_;
  std::map<std::string, Value> values_;
  std::map<std::string, tensor::HostTensor> weights_;
  std::set<std::string> used_names_;
  std::map<std::string, Tensor> weight_tensors_;  // by the ONNX name (plus suffix) they came from
};

}  // namespace internal

/// Imports a parsed model. Throws `ImportError` (with the node or part of the model) for what
/// the importer does not support or finds inconsistent, and `tensor::ShapeError` if the graph
/// builder rejects an operator's shapes.
[[nodiscard]] inline ImportedModel import_model(const ::onnx::ModelProto& model, const ImportOptions& options = {}) {
  try {
    return internal::Importer(model, options).run();
  } catch (const tensor::ShapeError& e) {
    throw ImportError("", std::string("inconsistent shapes: ") + e.what());
  }
}

/// Imports the model in `bytes` (the serialized ModelProto).
[[nodiscard]] inline ImportedModel import_model_from_bytes(std::string_view bytes, const ImportOptions& options = {}) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError("file", "not an ONNX model (the protobuf message does not parse; truncated or another format)");
  if (!model.has_graph()) throw ImportError("file", "the model has no graph");
  return import_model(model, options);
}

/// Imports the ONNX model file at `path` (`tensat::onnx::import`).
[[nodiscard]] inline ImportedModel import(const std::string& path, const ImportOptions& options = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError("file", fmt::format("cannot open '{}'", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return import_model_from_bytes(bytes.str(), options);
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_IMPORT_H
