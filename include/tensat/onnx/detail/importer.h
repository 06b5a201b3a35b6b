// The ONNX importer: a model's graph walked node by node into a tensor-dialect program, each node
// mapped by the converter its operator type has in a table registered by family (convert_*.h);
// an operator without one is kept opaque.
#ifndef TENSAT_ONNX_DETAIL_IMPORTER_H
#define TENSAT_ONNX_DETAIL_IMPORTER_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <fmt/format.h>

#include "tensat/exec/executor.h"
#include "tensat/onnx/detail/values.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

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

  // Defined in convert_values.h.
  void constant(const NodeContext& c);
  void shape(const NodeContext& c);
  void constant_of_shape(const NodeContext& c);
  void range(const NodeContext& c);
  void cast(const NodeContext& c);

  // Defined in convert_movement.h.
  void gather(const NodeContext& c);
  Tensor reshaped(Tensor x, const Dims& dims);
  Tensor slice_of(Tensor x, std::int64_t axis, std::int64_t start, std::int64_t end);
  void squeeze(const NodeContext& c, bool unsqueeze);
  void flatten(const NodeContext& c);
  void concat(const NodeContext& c);
  void reshape(const NodeContext& c, Dims target, bool allow_zero);
  void expand(const NodeContext& c);
  static std::pair<std::int64_t, std::int64_t> slice_range(std::int64_t start, std::int64_t end,
                                                           std::int64_t step, std::int64_t dim);
  void slice(const NodeContext& c);
  void split(const NodeContext& c);
  void pad(const NodeContext& c);
  void tile(const NodeContext& c);
  void transpose(const NodeContext& c);

  // Defined in convert_elementwise.h.
  void binary(const NodeContext& c, const std::string& op);
  void sum(const NodeContext& c, bool mean);
  void constant_binary(const NodeContext& c, const std::string& op);
  void constant_unary(const NodeContext& c, const std::string& op);
  void where(const NodeContext& c);
  void neg_reciprocal(const NodeContext& c, bool neg);
  void unary(const NodeContext& c, const std::string& op);
  Tensor clip_bound(const NodeContext& c, std::size_t i, double fallback, std::string_view which);
  void clip(const NodeContext& c);
  void hard_sigmoid(const NodeContext& c, bool swish);
  void leaky_relu(const NodeContext& c);

  // Defined in convert_contractions.h.
  void matmul(const NodeContext& c);
  void gemm(const NodeContext& c);
  Tensor add_bias(const NodeContext& c, Tensor y, std::size_t i, std::int64_t channels);
  void conv(const NodeContext& c);
  void conv_transpose(const NodeContext& c);
  void pool(const NodeContext& c, bool is_max);
  void global_pool(const NodeContext& c, bool is_max);

  // Defined in convert_normalization.h.
  void batchnorm(const NodeContext& c);
  void layer_normalization(const NodeContext& c);
  Tensor scalar_zeros(const Dims& dims, const std::string& key);
  void softmax(const NodeContext& c);
  void reduce(const NodeContext& c, const std::string& op);

  // Defined in convert_resize.h.
  void resize(const NodeContext& c, bool upsample);

  // Defined in convert_opaque.h.
  void opaque(const NodeContext& c, const std::string& reason, bool checked);
  Dims opaque_shape(const NodeContext& c, const OpaqueOp& record,
                    const std::vector<Tensor>& operands, const std::string& reason, bool checked);
  std::optional<Dims> declared_shape(const NodeContext& c, const std::string& name) const;

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
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_IMPORTER_H
