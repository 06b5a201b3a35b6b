// ONNX export: a tensor-dialect program plus the bindings of its weights -> an ONNX model (opset
// 13 to 17) that onnx::checker accepts. Fused kernels are written as their bodies' plain ONNX
// operators, weight-only subgraphs no larger than their weights as initializers, opaque nodes
// as the ONNX nodes they were imported from. Needs Debian's libonnx-dev: link `tensat::onnx`
// (see import.h).
#ifndef TENSAT_ONNX_EXPORT_H
#define TENSAT_ONNX_EXPORT_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/onnx/import.h"
#include "tensat/exec/executor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// A program that cannot be written as ONNX (a weight without a value, a dtype other than f32,
/// an opaque node whose operator changed between the opsets), or a model onnx::checker
/// rejects, or a file that cannot be written. `where()`: the node ("node 12 (resize)") or
/// "model" / "file".
class ExportError : public Error {
 public:
  ExportError(std::string where, const std::string& reason)
      : Error(where.empty() ? "onnx export: " + reason
                            : fmt::format("onnx export: {}: {}", where, reason)),
        where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

struct ExportOptions {
  /// The default domain's opset of the model written (13 to 17: the operators written are the
  /// same in all of them).
  std::int64_t opset = 13;
  /// The opset the program's opaque nodes were imported from (their records are written as they
  /// were, so an operator whose schema changed between the two opsets cannot be); 0: `opset`.
  std::int64_t source_opset = 0;
  /// ONNX names of the program's inputs, by `input` symbol (default: the symbol).
  std::map<std::string, std::string> input_names;
  /// ONNX names of the outputs, in order (default: "output0", "output1", ...).
  std::vector<std::string> output_names;
  /// The records of the program's opaque nodes, by type symbol (`ImportedModel::opaque`). An
  /// opaque node without one is written as a node of that op type with no attributes.
  std::map<std::string, OpaqueOp> opaque;
  /// Opsets of other domains the opaque nodes need (domain, version).
  std::vector<std::pair<std::string, std::int64_t>> other_opsets;
  /// Compute weight-only subgraphs (TASO's precomputable ones: concatenated, transposed, merged
  /// weights) once and write them as initializers, each only when its value has no more
  /// elements than the distinct weights it reads (otherwise it is written as operators on
  /// them), so that the file stays about the size of the weights; a `broadcast` of a weight is
  /// written as an Expand (or left to ONNX's broadcasting), never materialized.
  bool precompute_weights = true;
  /// Run onnx::checker::check_model on the result (an `ExportError` when it fails).
  bool check = true;
  std::string graph_name = "tensat";
  std::string producer_name = "tensat";
};

/// Options that write a program imported from `model` (or optimized from one) under the model's
/// names, with its opaque nodes' records and opsets; opset max(13, the model's).
[[nodiscard]] inline ExportOptions export_options_for(const ImportedModel& model) {
  ExportOptions options;
  options.opset = std::max<std::int64_t>(13, model.opset);
  options.source_opset = model.opset;
  for (std::size_t i = 0; i < model.inputs.size() && i < model.input_symbols.size(); ++i)
    options.input_names.emplace(model.input_symbols[i], model.inputs[i]);
  options.output_names = model.outputs;
  options.opaque = model.opaque;
  for (const auto& [domain, version] : model.opset_imports)
    if (!domain.empty()) options.other_opsets.emplace_back(domain, version);
  return options;
}

namespace detail {

using tensor::Dims;
using tensor::Op;
using tensor::TensorInfo;
using tensor::TensorNode;

class Exporter {
 public:
  Exporter(const RecExpr<TensorNode>& program, const tensor::Bindings& weights,
           const ExportOptions& options)
      : p_(program), weights_(weights), options_(options) {}

  ::onnx::ModelProto run() {
    if (options_.opset < 13 || options_.opset > kMaxOpset)
      throw ExportError(
          "model", fmt::format("opset {} is not supported (13 to {})", options_.opset, kMaxOpset));
    if (p_.size() == 0) throw ExportError("model", "the program is empty");
    infos_ = tensor::check_program(p_);
    for (std::size_t i = 0; i < p_.size(); ++i)
      if (infos_[i].kind == tensor::Kind::Tensor && infos_[i].dtype != tensor::DType::F32)
        throw ExportError(where(i), fmt::format("dtype {} is not supported (f32 only)",
                                                tensor::dtype_name(infos_[i].dtype)));
    model_.set_ir_version(8);
    model_.set_producer_name(options_.producer_name);
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(options_.opset);
    for (const auto& [domain, version] : options_.other_opsets) {
      auto* o = model_.add_opset_import();
      o->set_domain(domain);
      o->set_version(version);
    }
    graph_ = model_.mutable_graph();
    graph_->set_name(options_.graph_name);

    outputs_ = output_ids();
    plan();
    names_.assign(p_.size(), {});
    // Inputs, in program order, under their ONNX names.
    for (std::size_t i = 0; i < p_.size(); ++i) {
      if (!needed_[i] || p_[Id(i)].op() != Op::Input) continue;
      const std::string symbol = symbol_of(i);
      auto it = options_.input_names.find(symbol);
      const std::string name = it != options_.input_names.end() ? it->second : symbol;
      if (!taken_.insert(name).second)
        throw ExportError(where(i), fmt::format("input name '{}' is used twice", name));
      names_[i] = {name};
      value_info(graph_->add_input(), name, infos_[i].dims);
    }
    // Output names are reserved first so that no node takes one; a computed node that is one
    // output is named after it directly, anything else gets an Identity at the end.
    std::vector<std::string> output_names;
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      std::string name =
          k < options_.output_names.size() ? options_.output_names[k] : fmt::format("output{}", k);
      if (!taken_.insert(name).second)
        throw ExportError("model",
                          fmt::format("output name '{}' is used twice or names an input", name));
      output_names.push_back(name);
    }
    std::map<std::size_t, std::size_t> direct;  // node -> the output it is named after
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      const std::size_t o = outputs_[k];
      const Op op = p_[Id(o)].op();
      const bool computed =
          !tensor::is_source(op) && !frontier_[o] && op != Op::Split0 && op != Op::Split1;
      if (computed && !direct.count(o)) direct.emplace(o, k);
    }
    for (std::size_t i = 0; i < p_.size(); ++i) {
      if (!needed_[i] || !names_[i].empty()) continue;
      const TensorInfo& info = infos_[i];
      if (info.kind != tensor::Kind::Tensor && info.kind != tensor::Kind::Pair) continue;
      if (info.symbolic) continue;  // a fused body's term: written with its fused node
      if (frontier_[i] || p_[Id(i)].op() == Op::Weight || p_[Id(i)].op() == Op::Scalar) {
        names_[i] = {initializer(i)};
        continue;
      }
      const auto d = direct.find(i);
      if (elided_[i]) continue;    // every reader takes its source: ONNX broadcasts
      if (absorbed_[i]) continue;  // written by its readers (`plan_fusible_forms`)
      names_[i] = emit(i, nullptr, d != direct.end() ? output_names[d->second] : std::string());
    }
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      const std::size_t o = outputs_[k];
      const auto d = direct.find(o);
      if (d == direct.end() || d->second != k)
        node("Identity", {names_[o].at(0)}, {output_names[k]});
      value_info(graph_->add_output(), output_names[k], infos_[o].dims);
    }
    if (options_.check) {
      try {
        ::onnx::checker::check_model(model_);
      } catch (const std::exception& e) {
        throw ExportError("model", std::string("onnx::checker rejects the model: ") + e.what());
      }
    }
    return std::move(model_);
  }

 private:
  [[nodiscard]] std::string where(std::size_t i) const {
    return fmt::format("node {} ({})", i, p_[Id(i)].op_name());
  }
  [[nodiscard]] std::string symbol_of(std::size_t i) const {
    return std::string(p_[p_[Id(i)].children()[0]].symbol().str());
  }

  /// The outputs, in order: the root, or a root noop's children (nested noops flattened).
  [[nodiscard]] std::vector<std::size_t> output_ids() const {
    std::vector<std::size_t> out;
    // Depth-first, children in order (noops nest only as deep as the program was built).
    const std::function<void(Id)> walk = [&](Id id) {
      if (p_[id].op() == Op::Noop) {
        for (Id c : p_[id].children()) walk(c);
        return;
      }
      out.push_back(id.index());
    };
    walk(Id(p_.size() - 1));
    return out;
  }

  /// Which nodes are written and which weight-only nodes become initializers (`frontier_`):
  /// each weight-only computed tensor read by a node that is not weight-only, or that is an
  /// output, when it is no larger than the weights it reads (`weight_elements`); a larger one is
  /// written as operators and the mark passes to its operands. A `broadcast` passes its mark to
  /// its operand (a broadcast weight is written as an Expand of the small tensor, or left to
  /// ONNX's broadcasting, never materialized).
  void plan() {
    const std::size_t n = p_.size();
    frontier_.assign(n, false);
    needed_.assign(n, false);
    const auto foldable = [&](std::size_t i) {
      const Op op = p_[Id(i)].op();
      return options_.precompute_weights && infos_[i].kind == tensor::Kind::Tensor &&
             infos_[i].weight_only && !infos_[i].symbolic && op != Op::Input && op != Op::Weight;
    };
    const std::vector<std::int64_t> budget = weight_elements();
    std::vector<bool> marked(n, false);
    const auto mark = [&](std::size_t start) {
      std::vector<std::size_t> stack{start};
      while (!stack.empty()) {
        std::size_t c = stack.back();
        stack.pop_back();
        while (p_[Id(c)].op() == Op::Broadcast && foldable(c)) c = p_[Id(c)].children()[1].index();
        if (!foldable(c) || marked[c]) continue;
        marked[c] = true;
        if (infos_[c].elements() <= budget[c]) {
          frontier_[c] = true;
        } else {
          for (Id g : p_[Id(c)].children()) stack.push_back(g.index());
        }
      }
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (infos_[i].weight_only && infos_[i].kind == tensor::Kind::Tensor) continue;
      for (Id c : p_[Id(i)].children()) mark(c.index());
    }
    for (std::size_t o : outputs_) mark(o);
    // Needed: what the outputs read, stopping at initializers (a broadcast above one is written).
    std::vector<std::size_t> stack(outputs_.begin(), outputs_.end());
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      stack.pop_back();
      if (needed_[i]) continue;
      needed_[i] = true;
      if (frontier_[i]) continue;
      for (Id c : p_[Id(i)].children()) stack.push_back(c.index());
    }
    // A `broadcast` read by elementwise operators is left to ONNX's broadcasting (the operator
    // reads its source): it is written only when something else reads it.
    std::vector<std::size_t> uses(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!needed_[i] || frontier_[i]) continue;
      const auto ch = p_[Id(i)].children();
      const std::optional<std::size_t> elided =
          infos_[i].symbolic ? std::nullopt : elided_operand(i);
      for (std::size_t k = 0; k < ch.size(); ++k) {
        // A fused kernel's broadcast input is written only if its body needs it expanded.
        const bool lazy = p_[Id(i)].op() == Op::Fused && k > 0 && is_view_broadcast(ch[k].index());
        if ((!elided || *elided != k) && !lazy) ++uses[ch[k].index()];
      }
    }
    for (std::size_t o : outputs_) ++uses[o];
    elided_.assign(n, false);
    for (std::size_t i = 0; i < n; ++i)
      elided_[i] =
          needed_[i] && p_[Id(i)].op() == Op::Broadcast && !infos_[i].symbolic && uses[i] == 0;
    if (std::find(frontier_.begin(), frontier_.end(), true) != frontier_.end()) {
      evaluator_ = std::make_unique<tensor::detail::Evaluator>(p_, weights_);
      try {
        evaluator_->run(true, true);
      } catch (const tensor::MissingBindingError& e) {
        throw ExportError("model", fmt::format("weight '{}' has no value", e.name()));
      }
    }
    plan_fusible_forms(uses);
  }

  /// Marks `absorbed_` the nodes written inside their readers, in the forms onnxruntime's graph
  /// optimizer fuses (and PyTorch's exporter writes): a reduction whose result a reshape only
  /// gives its reduced axis back as 1 (ReduceMean with keepdims, which LayerNormFusion needs); a
  /// product of a flattened N-d tensor reshaped back to N-d (one N-d MatMul, which a bias Add
  /// then joins into a Gemm); a product by a one-element constant k read by erf (a Div by 1/k,
  /// the erf GELU that GeluFusion matches), and the flattening reshape of such products. Each
  /// only when every reader of the node takes it that way, so nothing is computed twice.
  void plan_fusible_forms(const std::vector<std::size_t>& uses) {
    const std::size_t n = p_.size();
    absorbed_.assign(n, false);
    std::vector<std::vector<std::size_t>> readers(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!needed_[i] || frontier_[i] || elided_[i]) continue;
      for (Id c : p_[Id(i)].children()) readers[c.index()].push_back(i);
    }
    std::vector<bool> output(n, false);
    for (std::size_t o : outputs_) output[o] = true;
    for (std::size_t c = 0; c < n; ++c) {
      if (!needed_[c] || frontier_[c] || infos_[c].symbolic || output[c] || readers[c].empty() ||
          readers[c].size() != uses[c])
        continue;
      absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
        return keepdims_reshape(r) || nd_matmul(r) || erf_of_scaled(r);
      });
    }
    // The flattening reshape of N-d products, when only they read it.
    for (std::size_t c = 0; c < n; ++c) {
      if (!needed_[c] || p_[Id(c)].op() != Op::Reshape || !plain(c) || output[c] ||
          readers[c].empty() || readers[c].size() != uses[c])
        continue;
      absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
        return p_[Id(r)].op() == Op::MatMul && absorbed_[r] &&
               p_[Id(r)].children()[1].index() == c && p_[Id(r)].children()[2].index() != c;
      });
    }
  }
  [[nodiscard]] bool plain(std::size_t i) const { return !frontier_[i] && !infos_[i].symbolic; }
  /// `reshape` node `r` of a reduction that gives its reduced axis back as 1.
  [[nodiscard]] bool keepdims_reshape(std::size_t r) const {
    if (p_[Id(r)].op() != Op::Reshape || !plain(r)) return false;
    const std::size_t c = p_[Id(r)].children()[1].index();
    const Op op = p_[Id(c)].op();
    if ((op != Op::ReduceSum && op != Op::ReduceMax && op != Op::ReduceMean) || !plain(c))
      return false;
    Dims want = infos_[p_[Id(c)].children()[1].index()].dims;
    const std::int64_t axis = infos_[p_[Id(c)].children()[0].index()].value;
    if (axis < 0 || axis >= static_cast<std::int64_t>(want.size())) return false;
    want[static_cast<std::size_t>(axis)] = 1;
    return infos_[r].dims == want;
  }
  /// `reshape` node `r` of a matmul of a flattened tensor x [..., K] back to [..., N].
  [[nodiscard]] bool nd_matmul(std::size_t r) const {
    if (p_[Id(r)].op() != Op::Reshape || !plain(r)) return false;
    const std::size_t m = p_[Id(r)].children()[1].index();
    if (p_[Id(m)].op() != Op::MatMul || !plain(m)) return false;
    const std::size_t q = p_[Id(m)].children()[1].index();
    if (p_[Id(q)].op() != Op::Reshape || !plain(q)) return false;
    const Dims& x = infos_[p_[Id(q)].children()[1].index()].dims;
    if (x.size() < 3) return false;
    Dims out;
    std::int64_t rows = 1;
    for (std::size_t k = 0; k + 1 < x.size(); ++k) {
      out.push_back(x[k]);
      rows *= x[k];
    }
    if (infos_[q].dims != Dims{rows, x.back()}) return false;
    out.push_back(infos_[m].dims.back());
    return infos_[r].dims == out;
  }
  /// The one-element constant (a weight or precomputed value, perhaps broadcast) that operand
  /// `c` is, if it is one and its value is finite and not 0 (so that 1/k is too).
  [[nodiscard]] std::optional<std::size_t> one_element_constant(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Broadcast && !frontier_[c]) c = p_[Id(c)].children()[1].index();
    const bool constant =
        p_[Id(c)].op() == Op::Weight || p_[Id(c)].op() == Op::Scalar || frontier_[c];
    if (!constant || infos_[c].symbolic || infos_[c].elements() != 1) return std::nullopt;
    const std::optional<float> k = constant_value(c);
    if (!k || *k == 0 || !std::isfinite(*k) || !std::isfinite(1.0f / *k)) return std::nullopt;
    return c;
  }
  /// `erf` node `r` of an ewmul by a one-element constant.
  [[nodiscard]] bool erf_of_scaled(std::size_t r) const {
    if (p_[Id(r)].op() != Op::Erf || !plain(r)) return false;
    const std::size_t m = p_[Id(r)].children()[0].index();
    if (p_[Id(m)].op() != Op::EwMul || !plain(m)) return false;
    return one_element_constant(p_[Id(m)].children()[1].index()) ||
           one_element_constant(p_[Id(m)].children()[0].index());
  }
  /// The value of one-element weight or precomputed node `c`; none when it has none (the
  /// initializer's own checks then say why).
  [[nodiscard]] std::optional<float> constant_value(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Scalar)
      return tensor::TensorNode::scalar_of_atom(p_[p_[Id(c)].children()[0]]);
    if (p_[Id(c)].op() == Op::Weight) {
      const auto it = weights_.find(symbol_of(c));
      if (it == weights_.end() || it->second.data.size() != 1) return std::nullopt;
      return it->second.data[0];
    }
    if (!evaluator_) return std::nullopt;
    const auto& value = evaluator_->value(c).t;
    if (!value || value->data.size() != 1) return std::nullopt;
    return value->data[0];
  }

  /// Per weight-only node, the elements of the distinct `weight` leaves it reads (0 for any
  /// other node): a precomputed value larger than that would make the file larger than the
  /// weights it replaces (a bias broadcast to an activation's shape: megabytes for a few floats).
  [[nodiscard]] std::vector<std::int64_t> weight_elements() const {
    const std::size_t n = p_.size();
    std::vector<std::vector<std::size_t>> leaves(n);  // sorted, distinct
    std::vector<std::int64_t> out(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!infos_[i].weight_only || infos_[i].symbolic) continue;
      if (p_[Id(i)].op() == Op::Weight || p_[Id(i)].op() == Op::Scalar) {
        leaves[i] = {i};
      } else {
        for (Id c : p_[Id(i)].children()) {
          std::vector<std::size_t> merged;
          std::set_union(leaves[i].begin(), leaves[i].end(), leaves[c.index()].begin(),
                         leaves[c.index()].end(), std::back_inserter(merged));
          leaves[i] = std::move(merged);
        }
      }
      for (std::size_t w : leaves[i]) out[i] += infos_[w].elements();
    }
    return out;
  }

  /// A top-level `broadcast` that is written as an Expand only when something needs it.
  [[nodiscard]] bool is_view_broadcast(std::size_t c) const {
    return p_[Id(c)].op() == Op::Broadcast && !frontier_[c] && !infos_[c].symbolic;
  }

  /// The operand of elementwise binary node `i` written as its `broadcast`'s source (ONNX
  /// broadcasts it): the second if it is a broadcast, else the first; none when neither is.
  [[nodiscard]] std::optional<std::size_t> elided_operand(std::size_t i) const {
    const TensorNode& n = p_[Id(i)];
    const Op op = n.op();
    if (op != Op::EwAdd && op != Op::EwMul && op != Op::EwSub && op != Op::EwDiv && op != Op::EwPow)
      return std::nullopt;
    for (std::size_t k : {std::size_t{1}, std::size_t{0}}) {
      const std::size_t c = n.children()[k].index();
      if (p_[Id(c)].op() == Op::Broadcast && !frontier_[c]) return k;
    }
    return std::nullopt;
  }

  // ------------------------------------------------------------------- graph building

  static void value_info(::onnx::ValueInfoProto* vi, const std::string& name, const Dims& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (std::int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }

  /// A name no other value of the graph has, from `base`.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; !taken_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  ::onnx::NodeProto* node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
    ::onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op_type);
    n->set_name(fmt::format("{}_{}", op_type, graph_->node_size() - 1));
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  /// A one-output node with a fresh output name (or `name` when given); returns the output.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::string& name = {}, ::onnx::NodeProto** out = nullptr) {
    const std::string output = name.empty() ? fresh(op_type + "_out") : name;
    ::onnx::NodeProto* n = node(op_type, inputs, {output});
    if (out) *out = n;
    return output;
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(::onnx::NodeProto* n, const std::string& name,
                   const std::vector<std::int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  /// An int64 vector initializer (shapes, axes, pads), shared by equal values.
  std::string ints(const std::vector<std::int64_t>& values) {
    if (auto it = int_constants_.find(values); it != int_constants_.end()) return it->second;
    const std::string name = fresh("ints");
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
    int_constants_.emplace(values, name);
    return name;
  }
  /// A float scalar initializer (rank 0), shared by equal values.
  std::string scalar(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, 4);
    if (auto it = scalar_constants_.find(bits); it != scalar_constants_.end()) return it->second;
    const std::string name = fresh("scalar");
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    scalar_constants_.emplace(bits, name);
    return name;
  }
  /// A float initializer holding `t`.
  std::string float_initializer(const std::string& base, const tensor::HostTensor& t) {
    const std::string name = fresh(base);
    auto* init = graph_->add_initializer();
    init->set_name(name);
    init->set_data_type(::onnx::TensorProto::FLOAT);
    for (std::int64_t d : t.dims) init->add_dims(d);
    init->mutable_raw_data()->assign(reinterpret_cast<const char*>(t.data.data()),
                                     t.data.size() * sizeof(float));
    return name;
  }

  /// The initializer of a `weight` leaf (its bound value) or of a precomputed weight-only node.
  std::string initializer(std::size_t i) {
    if (p_[Id(i)].op() == Op::Weight) {
      const std::string symbol = symbol_of(i);
      auto it = weights_.find(symbol);
      if (it == weights_.end())
        throw ExportError(where(i), fmt::format("weight '{}' has no value", symbol));
      if (it->second.dims != infos_[i].dims ||
          static_cast<std::int64_t>(it->second.data.size()) != infos_[i].elements())
        throw ExportError(where(i), fmt::format("weight '{}' is declared {} but bound to {}",
                                                symbol, tensor::dims_to_string(infos_[i].dims),
                                                tensor::dims_to_string(it->second.dims)));
      return float_initializer(symbol, it->second);
    }
    if (p_[Id(i)].op() == Op::Scalar) {
      tensor::HostTensor t(Dims{1});
      t.data[0] = constant_value(i).value_or(0.0f);
      return float_initializer(fmt::format("scalar_{}", i), t);
    }
    const auto& value = evaluator_->value(i).t;
    if (!value) throw ExportError(where(i), "the precomputed value is missing");
    return float_initializer(fmt::format("{}_{}", p_[Id(i)].op_name(), i), *value);
  }

  /// `name` as a rank-0 tensor when `info` has one element in a higher rank (Clip's bounds).
  std::string as_scalar(const std::string& name, const TensorInfo& info) {
    return info.rank() == 0 ? name : op("Reshape", {name, ints({})});
  }
  /// The activation code `act` (TASO's) applied to `x`.
  std::string activation(std::int64_t act, const std::string& x, const std::string& name) {
    switch (act) {
      case 1:
        return op("Sigmoid", {x}, name);
      case 2:
        return op("Relu", {x}, name);
      case 3:
        return op("Tanh", {x}, name);
      default:
        return x;
    }
  }
  /// ONNX pads [top, left, bottom, right] of a SAME (TensorFlow) or VALID window.
  static std::vector<std::int64_t> window_pads(const Dims& x, std::int64_t kh, std::int64_t kw,
                                               std::int64_t sh, std::int64_t sw, std::int64_t pad) {
    if (pad != static_cast<std::int64_t>(tensor::Padding::Same)) return {0, 0, 0, 0};
    const auto same = [](std::int64_t in, std::int64_t k, std::int64_t s) {
      const std::int64_t out = (in + s - 1) / s;
      const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
      return std::pair<std::int64_t, std::int64_t>{total / 2, total - total / 2};
    };
    const auto [t, b] = same(x[2], kh, sh);
    const auto [l, r] = same(x[3], kw, sw);
    return {t, l, b, r};
  }

  // ------------------------------------------------------------------- operators

  /// A term's context: the names bound to a fused body's args (empty outside bodies), and the
  /// names of body terms already written for this fused node.
  struct Body {
    std::vector<std::string> args;  ///< empty for a broadcast input not written yet
    std::vector<std::optional<std::size_t>>
        arg_broadcast;  ///< the top-level broadcast an arg is bound to
    std::map<std::size_t, std::vector<std::string>> done;
  };

  /// The name of `broadcast` node `b`'s source when operand `c` of an elementwise operator is
  /// that broadcast (at top level, or through an arg of `body`): ONNX's broadcasting does the rest.
  std::optional<std::string> broadcast_source(Id c, Body* body) {
    const TensorNode& n = p_[c];
    if (n.op() == Op::Broadcast && !frontier_[c.index()]) return tensor_of(n.children()[1], body);
    if (body && n.op() == Op::Arg) {
      const auto k = static_cast<std::size_t>(infos_[n.children()[0].index()].value);
      if (k < body->arg_broadcast.size() && body->arg_broadcast[k])
        return tensor_of(p_[Id(*body->arg_broadcast[k])].children()[1], nullptr);
    }
    return std::nullopt;
  }

  /// The names of term `i` (a tensor, or a split's two outputs) inside `body` (or at top level
  /// when `body` is null).
  std::vector<std::string> value_of(std::size_t i, Body* body) {
    if (body && infos_[i].symbolic) {
      if (auto it = body->done.find(i); it != body->done.end()) return it->second;
      auto names = emit(i, body, {});
      body->done.emplace(i, names);
      return names;
    }
    if (names_[i].empty()) throw ExportError(where(i), "is read before it is written");
    return names_[i];
  }
  std::string tensor_of(Id c, Body* body) { return value_of(c.index(), body).at(0); }

  /// Writes term `i` (its output named `name` when given); returns its output names.
  std::vector<std::string> emit(std::size_t i, Body* body, const std::string& name) {
    const TensorNode& n = p_[Id(i)];
    const auto ch = n.children();
    const auto num = [&](std::size_t k) { return infos_[ch[k].index()].value; };
    const auto ints_of = [&](std::size_t k) {
      return std::vector<std::int64_t>(infos_[ch[k].index()].dims.begin(),
                                       infos_[ch[k].index()].dims.end());
    };
    const auto in = [&](std::size_t k) { return tensor_of(ch[k], body); };
    const auto dims = [&](std::size_t k) -> const Dims& { return infos_[ch[k].index()].dims; };
    ::onnx::NodeProto* created = nullptr;
    switch (n.op()) {
      case Op::Arg: {
        const auto k = static_cast<std::size_t>(num(0));
        if (!body || k >= body->args.size())
          throw ExportError(where(i), "an arg outside a fused kernel");
        if (body->args[k].empty()) {
          // A broadcast input read as a whole: written (once) as an Expand now.
          const std::size_t b = *body->arg_broadcast[k];
          if (names_[b].empty()) names_[b] = emit(b, nullptr, {});
          body->args[k] = names_[b].at(0);
        }
        if (name.empty()) return {body->args[k]};
        return {op("Identity", {body->args[k]}, name)};
      }
      case Op::EwAdd:
      case Op::EwMul:
      case Op::EwSub:
      case Op::EwDiv:
      case Op::EwPow: {
        static const std::map<Op, std::string> kNames{{Op::EwAdd, "Add"},
                                                      {Op::EwMul, "Mul"},
                                                      {Op::EwSub, "Sub"},
                                                      {Op::EwDiv, "Div"},
                                                      {Op::EwPow, "Pow"}};
        // ONNX broadcasts: a `broadcast` operand is written as its source (the other operand
        // has the full shape, the dialect's operands being of one shape); one operand at most.
        std::string a, b;
        if (auto s1 = broadcast_source(ch[1], body)) {
          a = in(0);
          b = *s1;
        } else if (auto s0 = broadcast_source(ch[0], body)) {
          a = *s0;
          b = in(1);
        } else {
          a = in(0);
          b = in(1);
        }
        return {op(kNames.at(n.op()), {a, b}, name)};
      }
      case Op::SMul: {
        const std::string s = infos_[ch[1].index()].rank() > infos_[ch[0].index()].rank()
                                  ? op("Reshape", {in(1), ints({})})
                                  : in(1);
        return {op("Mul", {in(0), s}, name)};
      }
      case Op::Relu:
        return {op("Relu", {in(0)}, name)};
      case Op::Tanh:
        return {op("Tanh", {in(0)}, name)};
      case Op::Sigmoid:
        return {op("Sigmoid", {in(0)}, name)};
      case Op::Exp:
        return {op("Exp", {in(0)}, name)};
      case Op::Sqrt:
        return {op("Sqrt", {in(0)}, name)};
      case Op::Erf: {
        if (!body && absorbed_[ch[0].index()]) {  // erf(x·k) as erf(x / (1/k))
          const auto mc = p_[ch[0]].children();
          const bool second = one_element_constant(mc[1].index()).has_value();
          const std::size_t k = *one_element_constant(mc[second ? 1 : 0].index());
          const std::string x = tensor_of(mc[second ? 0 : 1], nullptr);
          return {op("Erf", {op("Div", {x, scalar(1.0f / *constant_value(k))})}, name)};
        }
        return {op("Erf", {in(0)}, name)};
      }
      case Op::Gelu: {
        // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the executor's form.
        const std::string x = in(0);
        const std::string cube = op("Mul", {op("Mul", {x, x}), x});
        const std::string inner = op("Add", {x, op("Mul", {cube, scalar(0.044715f)})});
        const std::string t = op("Tanh", {op("Mul", {inner, scalar(0.7978845608028654f)})});
        return {op("Mul", {op("Mul", {x, op("Add", {t, scalar(1.0f)})}), scalar(0.5f)}, name)};
      }
      case Op::GeluErf: {
        // x·(1 + erf(x / √2))·0.5, as PyTorch exports F.gelu (what GeluFusion matches).
        const std::string x = in(0);
        const std::string e = op("Erf", {op("Div", {x, scalar(1.41421356237309505f)})});
        return {op("Mul", {op("Mul", {x, op("Add", {e, scalar(1.0f)})}), scalar(0.5f)}, name)};
      }
      case Op::Silu: {
        const std::string x = in(0);
        return {op("Mul", {x, op("Sigmoid", {x})}, name)};
      }
      case Op::HardSwish: {
        if (options_.opset >= 14) return {op("HardSwish", {in(0)}, name)};
        const std::string x = in(0);
        ::onnx::NodeProto* h = nullptr;
        const std::string gate = op("HardSigmoid", {x}, {}, &h);
        attr(h, "alpha", 1.0f / 6.0f);
        attr(h, "beta", 0.5f);
        return {op("Mul", {x, gate}, name)};
      }
      case Op::MatMul:
        return {
            activation(num(0), op("MatMul", {in(1), in(2)}, num(0) ? std::string() : name), name)};
      case Op::Conv2d: {
        const Dims& w = dims(5);
        const std::string y = op("Conv", {in(4), in(5)}, num(3) ? std::string() : name, &created);
        attr(created, "kernel_shape", std::vector<std::int64_t>{w[2], w[3]});
        attr(created, "strides", std::vector<std::int64_t>{num(0), num(1)});
        attr(created, "pads", window_pads(dims(4), w[2], w[3], num(0), num(1), num(2)));
        const std::int64_t groups = dims(4)[1] / w[1];
        if (groups != 1) attr(created, "group", groups);
        return {activation(num(3), y, name)};
      }
      case Op::PoolMax:
      case Op::PoolAvg: {
        const bool is_max = n.op() == Op::PoolMax;
        const std::string y = op(is_max ? "MaxPool" : "AveragePool", {in(6)},
                                 num(5) ? std::string() : name, &created);
        attr(created, "kernel_shape", std::vector<std::int64_t>{num(0), num(1)});
        attr(created, "strides", std::vector<std::int64_t>{num(2), num(3)});
        attr(created, "pads", window_pads(dims(6), num(0), num(1), num(2), num(3), num(4)));
        if (!is_max)
          attr(created, "count_include_pad",
               std::int64_t{0});  // padding excluded, as the dialect's
        return {activation(num(5), y, name)};
      }
      case Op::Concat: {
        std::vector<std::string> parts;
        for (std::size_t k = 1; k < ch.size(); ++k) parts.push_back(in(k));
        const std::string y = op("Concat", parts, name, &created);
        attr(created, "axis", num(0));
        return {y};
      }
      case Op::Split: {
        const std::int64_t axis = num(0), size = num(1);
        const std::int64_t rest = dims(2)[static_cast<std::size_t>(axis)] - size;
        const std::vector<std::string> outs{fresh("split_out"), fresh("split_out")};
        created = node("Split", {in(2), ints({size, rest})}, outs);
        attr(created, "axis", axis);
        return outs;
      }
      case Op::Split0:
      case Op::Split1: {
        const std::string part = value_of(ch[0].index(), body).at(n.op() == Op::Split0 ? 0 : 1);
        return {name.empty() ? part : op("Identity", {part}, name)};
      }
      case Op::Transpose: {
        const std::string y = op("Transpose", {in(1)}, name, &created);
        attr(created, "perm", ints_of(0));
        return {y};
      }
      case Op::Reshape: {
        const std::size_t c = ch[1].index();
        if (!body && absorbed_[c] && p_[ch[1]].op() == Op::MatMul) {  // one N-d MatMul
          const auto mc = p_[ch[1]].children();
          const std::int64_t act = infos_[mc[0].index()].value;
          const std::string x = tensor_of(p_[mc[1]].children()[1], nullptr);
          return {activation(
              act, op("MatMul", {x, tensor_of(mc[2], nullptr)}, act ? std::string() : name), name)};
        }
        if (!body && absorbed_[c]) {  // the reduction, keeping its axis
          const auto rc = p_[ch[1]].children();
          const std::int64_t axis = infos_[rc[0].index()].value;
          const Op rop = p_[ch[1]].op();
          const std::string x = tensor_of(rc[1], nullptr);
          const std::string y =
              rop == Op::ReduceSum
                  ? op("ReduceSum", {x, ints({axis})}, name, &created)
                  : op(rop == Op::ReduceMax ? "ReduceMax" : "ReduceMean", {x}, name, &created);
          if (rop != Op::ReduceSum) attr(created, "axes", std::vector<std::int64_t>{axis});
          attr(created, "keepdims", std::int64_t{1});
          return {y};
        }
        return {op("Reshape", {in(1), ints(ints_of(0))}, name)};
      }
      case Op::BatchNorm: {
        const std::string y =
            op("BatchNormalization", {in(0), in(1), in(2), in(3), in(4)}, name, &created);
        attr(created, "epsilon", tensor::detail::kNormEps);
        return {y};
      }
      case Op::Enlarge: {
        const Dims& w = dims(0);
        const Dims& ref = dims(1);
        const std::int64_t dh = (ref[2] - w[2]) / 2, dw = (ref[3] - w[3]) / 2;
        return {op("Pad", {in(0), ints({0, 0, dh, dw, 0, 0, dh, dw})}, name)};
      }
      case Op::WinoWeight: {
        // U = G w G^T per filter, [O, C, 4, 4] as two products, then [16, O, C].
        const Dims& w = dims(0);
        tensor::HostTensor g(
            Dims{4, 3}, std::vector<float>{1, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f, -0.5f, 0.5f, 0, 0, 1});
        tensor::HostTensor gt(
            Dims{3, 4}, std::vector<float>{1, 0.5f, 0.5f, 0, 0, 0.5f, -0.5f, 0, 0, 0.5f, 0.5f, 1});
        const std::string gw = op("MatMul", {float_initializer("wino_g", g), in(0)});
        const std::string u = op("MatMul", {gw, float_initializer("wino_gt", gt)});
        const std::string flat = op("Reshape", {u, ints({w[0], w[1], 16})});
        const std::string y = op("Transpose", {flat}, name, &created);
        attr(created, "perm", std::vector<std::int64_t>{2, 0, 1});
        return {y};
      }
      case Op::WinoConv2d: {
        // ONNX has no Winograd convolution: the kernel back from U (L G = I, L the rows 0,
        // 1 - 2 and 3 of the identity), w = L U L^T, then a plain 3x3 Conv. Exact only for a U
        // that wino_weight computed (precomputed or not); any other [16, O, C] tensor has no
        // 3x3 kernel, and the Conv would compute something else.
        if (p_[ch[3]].op() != Op::WinoWeight)
          throw ExportError(where(i),
                            "the transformed weight of a wino_conv2d is not a wino_weight: no 3x3 "
                            "kernel to write");
        const Dims& u = dims(3);
        tensor::HostTensor l(Dims{3, 4}, std::vector<float>{1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0, 1});
        tensor::HostTensor lt(Dims{4, 3}, std::vector<float>{1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1});
        ::onnx::NodeProto* perm = nullptr;
        const std::string per_filter = op("Transpose", {in(3)}, {}, &perm);  // [O, C, 16]
        attr(perm, "perm", std::vector<std::int64_t>{1, 2, 0});
        const std::string tiles = op("Reshape", {per_filter, ints({u[1], u[2], 4, 4})});
        const std::string lu = op("MatMul", {float_initializer("wino_l", l), tiles});
        const std::string kernel = op("MatMul", {lu, float_initializer("wino_lt", lt)});
        const std::string y = op("Conv", {in(2), kernel}, num(1) ? std::string() : name, &created);
        attr(created, "kernel_shape", std::vector<std::int64_t>{3, 3});
        attr(created, "strides", std::vector<std::int64_t>{1, 1});
        attr(created, "pads", window_pads(dims(2), 3, 3, 1, 1, num(0)));
        return {activation(num(1), y, name)};
      }
      case Op::Merge: {
        // Tile the weight `count` times along its input channels, then zero every block but
        // the one each output channel belongs to.
        const std::int64_t groups = num(0), count = num(1);
        const Dims& w = dims(2);
        const std::int64_t out_channels = w[0], c = w[1], per_group = out_channels / groups;
        tensor::HostTensor mask(Dims{out_channels, c * count, 1, 1});
        for (std::int64_t o = 0; o < out_channels; ++o)
          for (std::int64_t j = 0; j < c; ++j)
            mask.data[static_cast<std::size_t>(o * c * count + ((o / per_group) % count) * c + j)] =
                1.0f;
        const std::string tiled = op("Tile", {in(2), ints({1, count, 1, 1})});
        return {op("Mul", {tiled, float_initializer("merge_mask", mask)}, name)};
      }
      case Op::Softmax: {
        const std::string y = op("Softmax", {in(1)}, name, &created);
        attr(created, "axis", num(0));
        return {y};
      }
      case Op::LayerNorm: {
        const std::string x = in(0);
        float eps = tensor::detail::kNormEps;
        if (n.children().size() == 4) {
          const std::optional<float> value = constant_value(n.children()[3].index());
          if (!value) throw ExportError(where(i), "layernorm: eps has no known value");
          eps = *value;
        }
        if (options_.opset >= 17) {
          // One operator (opset 17): onnxruntime runs it as one kernel.
          const std::string y = op("LayerNormalization", {x, in(1), in(2)}, name, &created);
          attr(created, "axis", std::int64_t{-1});
          attr(created, "epsilon", eps);
          return {y};
        }
        // Spelled out as onnxruntime's LayerNormFusion matches it (the variance from Pow 2).
        const auto mean = [&](const std::string& v) {
          ::onnx::NodeProto* r = nullptr;
          const std::string m = op("ReduceMean", {v}, {}, &r);
          attr(r, "axes", std::vector<std::int64_t>{-1});
          attr(r, "keepdims", std::int64_t{1});
          return m;
        };
        const std::string centred = op("Sub", {x, mean(x)});
        const std::string var = mean(op("Pow", {centred, scalar(2.0f)}));
        const std::string norm = op("Div", {centred, op("Sqrt", {op("Add", {var, scalar(eps)})})});
        return {op("Add", {op("Mul", {norm, in(1)}), in(2)}, name)};
      }
      case Op::Broadcast:
        return {op("Expand", {in(1), ints(ints_of(0))}, name)};
      case Op::ReduceSum: {
        const std::string y = op("ReduceSum", {in(1), ints({num(0)})}, name, &created);
        attr(created, "keepdims", std::int64_t{0});
        return {y};
      }
      case Op::ReduceMax:
      case Op::ReduceMean: {
        const std::string y =
            op(n.op() == Op::ReduceMax ? "ReduceMax" : "ReduceMean", {in(1)}, name, &created);
        attr(created, "axes", std::vector<std::int64_t>{num(0)});
        attr(created, "keepdims", std::int64_t{0});
        return {y};
      }
      case Op::Slice:
        return {op("Slice", {in(3), ints({num(1)}), ints({num(2)}), ints({num(0)})}, name)};
      case Op::Pad: {
        const std::size_t rank = dims(3).size();
        std::vector<std::int64_t> pads(2 * rank, 0);
        pads[static_cast<std::size_t>(num(0))] = num(1);
        pads[rank + static_cast<std::size_t>(num(0))] = num(2);
        return {op("Pad", {in(3), ints(pads)}, name)};
      }
      case Op::Clip:
        return {op("Clip",
                   {in(0), as_scalar(in(1), infos_[ch[1].index()]),
                    as_scalar(in(2), infos_[ch[2].index()])},
                   name)};
      case Op::Resize: {
        const bool nearest = num(0) == static_cast<std::int64_t>(tensor::ResizeInterp::Nearest);
        const std::string y = op("Resize", {in(4), "", "", ints(ints_of(3))}, name, &created);
        attr(created, "mode", std::string(nearest ? "nearest" : "linear"));
        static const char* const kCoord[] = {"half_pixel", "asymmetric", "align_corners"};
        static const char* const kNearest[] = {"round_prefer_floor", "floor", "round_prefer_ceil",
                                               "ceil"};
        attr(created, "coordinate_transformation_mode", std::string(kCoord[num(1)]));
        if (nearest) attr(created, "nearest_mode", std::string(kNearest[num(2)]));
        return {y};
      }
      case Op::ConvTranspose: {
        const Dims& w = dims(8);
        const std::string y = op("ConvTranspose", {in(7), in(8)}, name, &created);
        const std::int64_t pb = num(4), pr = num(5);
        attr(created, "kernel_shape", std::vector<std::int64_t>{w[2], w[3]});
        attr(created, "strides", std::vector<std::int64_t>{num(0), num(1)});
        attr(created, "pads",
             std::vector<std::int64_t>{num(2), num(3), std::max<std::int64_t>(pb, 0),
                                       std::max<std::int64_t>(pr, 0)});
        if (pb < 0 || pr < 0)
          attr(created, "output_padding",
               std::vector<std::int64_t>{std::max<std::int64_t>(-pb, 0),
                                         std::max<std::int64_t>(-pr, 0)});
        if (num(6) != 1) attr(created, "group", num(6));
        return {y};
      }
      case Op::Opaque:
        return {opaque(i, body, name)};
      // ONNX tensors have no physical layout: the same tensor.
      case Op::Relayout:
        return {op("Identity", {in(1)}, name)};
      case Op::Fused: {
        Body inner;
        for (std::size_t k = 1; k < ch.size(); ++k) {
          const std::size_t c = ch[k].index();
          const bool lazy = is_view_broadcast(c) && names_[c].empty();
          inner.args.push_back(lazy ? std::string() : in(k));
          inner.arg_broadcast.push_back(is_view_broadcast(c) ? std::optional<std::size_t>(c)
                                                             : std::nullopt);
        }
        const std::vector<std::string> out = emit(ch[0].index(), &inner, name);
        return out;
      }
      case Op::Noop:
      case Op::Num:
      case Op::Sym:
      case Op::Ints:
      case Op::Input:
      case Op::Weight:
      case Op::Scalar:  // an initializer (`plan`)
        break;
    }
    throw ExportError(where(i), "cannot be written as an ONNX operator here");
  }

  /// An operator of the default domain must be one ONNX defines at the opset written (the
  /// importer keeps any operator it does not know opaque, ONNX's or not).
  void require_known(std::size_t i, const std::string& op_type) const {
    if (!::onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(options_.opset)))
      throw ExportError(
          where(i),
          fmt::format("'{}' is not an ONNX operator (default domain, opset {}): it cannot be "
                      "written",
                      op_type, options_.opset));
  }

  /// An opaque node as the ONNX node it was imported from.
  std::string opaque(std::size_t i, Body* body, const std::string& name) {
    const TensorNode& n = p_[Id(i)];
    const std::string type = symbol_of(i);
    std::vector<std::string> operands;
    for (std::size_t k = 3; k < n.children().size(); ++k)
      operands.push_back(tensor_of(n.children()[k], body));
    const auto it = options_.opaque.find(type);
    if (it == options_.opaque.end()) {
      require_known(i, type);
      return op(type, operands, name);
    }
    const OpaqueOp& record = it->second;
    const std::string domain =
        record.node.domain() == "ai.onnx" ? std::string() : record.node.domain();
    if (domain.empty()) {
      require_known(i, record.node.op_type());
      // Written as it was read: its schema must be the same in both opsets.
      const std::int64_t from = options_.source_opset > 0 ? options_.source_opset : options_.opset;
      const auto* a =
          ::onnx::OpSchemaRegistry::Schema(record.node.op_type(), static_cast<int>(from));
      const auto* b =
          ::onnx::OpSchemaRegistry::Schema(record.node.op_type(), static_cast<int>(options_.opset));
      // Elementwise operators whose later versions only added element types (bfloat16, ...)
      // mean the same at both; any other change of version might not.
      static const std::set<std::string> kTypesOnly{
          "Abs",  "Acos", "Acosh", "Asin",     "Asinh",    "Atan",  "Atanh",
          "Ceil", "Celu", "Cos",   "Cosh",     "Elu",      "Erf",   "Floor",
          "Log",  "Max",  "Min",   "Mod",      "PRelu",    "Round", "Selu",
          "Sign", "Sin",  "Sinh",  "Softplus", "Softsign", "Tan",   "ThresholdedRelu"};
      if (a != b && !kTypesOnly.count(record.node.op_type()))
        throw ExportError(
            where(i),
            fmt::format("the opaque operator {} of opset {} differs in opset {}; export it at "
                        "opset {} or map it in the importer",
                        record.node.op_type(), from, options_.opset, from));
    }
    std::vector<std::string> inputs;
    for (std::size_t k = 0; k < record.inputs.size(); ++k) {
      const std::int64_t r = record.inputs[k];
      if (r == OpaqueOp::kOmitted) {
        inputs.emplace_back();
      } else if (r == OpaqueOp::kConstant) {
        const auto c = record.constants.find(k);
        if (c == record.constants.end())
          throw ExportError(where(i), "an opaque node's constant input is missing");
        ::onnx::TensorProto t = c->second;
        t.set_name(fresh(type + "_constant"));
        inputs.push_back(t.name());
        *graph_->add_initializer() = std::move(t);
      } else {
        if (r < 0 || static_cast<std::size_t>(r) >= operands.size())
          throw ExportError(where(i), "an opaque node's record does not match its operands");
        inputs.push_back(operands[static_cast<std::size_t>(r)]);
      }
    }
    ::onnx::NodeProto* created = nullptr;
    const std::string y = op(record.node.op_type(), inputs, name, &created);
    created->set_domain(record.node.domain());
    *created->mutable_attribute() = record.node.attribute();
    return y;
  }

  const RecExpr<TensorNode>& p_;
  const tensor::Bindings& weights_;
  const ExportOptions& options_;
  std::vector<TensorInfo> infos_;
  ::onnx::ModelProto model_;
  ::onnx::GraphProto* graph_ = nullptr;
  std::vector<std::size_t> outputs_;
  std::vector<bool> frontier_, needed_, elided_, absorbed_;
  std::unique_ptr<tensor::detail::Evaluator> evaluator_;
  std::vector<std::vector<std::string>> names_;
  std::set<std::string> taken_;
  std::map<std::vector<std::int64_t>, std::string> int_constants_;
  std::map<std::uint32_t, std::string> scalar_constants_;
};

}  // namespace detail

/// `program` (its root an output, or a `noop` of the outputs) with the values of its weights
/// (`weights`, by name) as an ONNX model. Throws `ExportError`, and `tensor::ShapeError` for an
/// ill-typed program.
[[nodiscard]] inline ::onnx::ModelProto export_model(const RecExpr<tensor::TensorNode>& program,
                                                     const tensor::Bindings& weights,
                                                     const ExportOptions& options = {}) {
  return detail::Exporter(program, weights, options).run();
}

/// Writes `model` to `path` (binary protobuf); `ExportError` with `where() == "file"` on failure.
/// The bytes go to a new temporary file in the same folder, renamed to `path` once complete: a
/// failure never leaves a partial file at `path` (an existing one is kept), nor the temporary.
inline void save_model(const ::onnx::ModelProto& model, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw ExportError("file", fmt::format("cannot write '{}': it is a folder", path));
  std::random_device random;
  fs::path temp;
  do {
    temp = fs::path(path + fmt::format(".tmp{:08x}", random()));
  } while (fs::exists(temp, ec));
  const auto fail = [&](const std::string& reason) {
    fs::remove(temp, ec);
    throw ExportError("file", reason);
  };
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail(fmt::format("cannot open '{}' for writing", path));
    if (!model.SerializeToOstream(&out)) fail(fmt::format("cannot write '{}'", path));
    out.close();
    if (!out) fail(fmt::format("cannot write '{}'", path));
  }
  fs::rename(temp, path, ec);
  if (ec) fail(fmt::format("cannot write '{}': {}", path, ec.message()));
}

/// `export_model`, then `save_model` to `path`.
inline void export_to_file(const RecExpr<tensor::TensorNode>& program,
                           const tensor::Bindings& weights, const std::string& path,
                           const ExportOptions& options = {}) {
  save_model(export_model(program, weights, options), path);
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_EXPORT_H
