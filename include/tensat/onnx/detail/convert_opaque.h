// The ONNX importer's converters of opaque nodes: an operator the dialect does not have, kept with
// its attributes and a shape from ONNX's inference or the model's annotations.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_OPAQUE_H
#define TENSAT_ONNX_DETAIL_CONVERT_OPAQUE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

/// The node as an `opaque` node: its output shape from ONNX shape inference on the node alone
/// (its operands' shapes are known), else from the model's value_info; otherwise, or when
/// opaque nodes are not allowed, an ImportError with `reason`.
inline void Importer::opaque(const NodeContext& c, const std::string& reason, bool checked) {
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
inline Dims Importer::opaque_shape(const NodeContext& c, const OpaqueOp& record,
                                   const std::vector<Tensor>& operands, const std::string& reason,
                                   bool checked) {
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
    c.fail(fmt::format("inconsistent shapes: ONNX shape inference gives {}, the model declares {}",
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
inline std::optional<Dims> Importer::declared_shape(const NodeContext& c,
                                                    const std::string& name) const {
  const auto from = [&](const ::onnx::ValueInfoProto& vi) -> std::optional<Dims> {
    if (vi.name() != name || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
      return std::nullopt;
    const auto& tt = vi.type().tensor_type();
    if (tt.elem_type() != ::onnx::TensorProto::FLOAT &&
        tt.elem_type() != ::onnx::TensorProto::UNDEFINED)
      c.fail(
          fmt::format("it produces type {}, and the dialect's tensors are float", tt.elem_type()));
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

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_OPAQUE_H
