// The ONNX exporter: a program planned (which nodes to write, which weight-only subgraphs to keep
// as initializers, which fusible forms onnxruntime recognizes) and written node by node; the
// operators' mappings are in export_ops.h.
#ifndef TENSAT_ONNX_DETAIL_EXPORTER_H
#define TENSAT_ONNX_DETAIL_EXPORTER_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <fmt/format.h>

#include "tensat/core/recexpr.h"
#include "tensat/exec/executor.h"
#include "tensat/onnx/export_options.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
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
    prune_initializers();
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

  /// Drops the initializers no node (nor any subgraph of an opaque node) reads and no output
  /// names: the constants of forms written differently (a bias folded into its convolution, a
  /// HardSigmoid's alpha and beta).
  void prune_initializers() {
    std::set<std::string> used;
    const std::function<void(const ::onnx::GraphProto&)> reads = [&](const ::onnx::GraphProto& g) {
      for (const auto& node : g.node()) {
        for (const auto& input : node.input()) used.insert(input);
        for (const auto& a : node.attribute()) {
          if (a.has_g()) reads(a.g());
          for (const auto& sub : a.graphs()) reads(sub);
        }
      }
      for (const auto& output : g.output()) used.insert(output.name());
    };
    reads(*graph_);
    auto* inits = graph_->mutable_initializer();
    int keep = 0;
    for (int k = 0; k < inits->size(); ++k)
      if (used.count(inits->Get(k).name())) inits->SwapElements(keep++, k);
    while (inits->size() > keep) inits->RemoveLast();
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
      try {
        weight_values_ = std::make_unique<tensor::WeightValues>(p_, weights_);
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
  void plan_fusible_forms(const std::vector<std::size_t>& uses);
  [[nodiscard]] bool plain(std::size_t i) const { return !frontier_[i] && !infos_[i].symbolic; }
  /// clip(α·x + β, 0, 1) as ONNX's HardSigmoid reads it: x, α and β, and the add and product
  /// nodes that spell the affine part (either may be absent: α 1, β 0).
  struct HardSigmoidForm {
    std::size_t x = 0;
    float alpha = 1.0f, beta = 0.0f;
    std::optional<std::size_t> add, mul;
  };
  /// `clip` node `r` as a HardSigmoid, when its bounds are 0 and 1 and an add of a one-element
  /// constant or a product by one (or both) computes what it clips.
  [[nodiscard]] std::optional<HardSigmoidForm> hard_sigmoid_form(std::size_t r) const;
  /// The explicit padding that input `x` of a window op spells, in the importer's forms for pads
  /// neither SAME nor VALID fits: zero `pad`s of the spatial axes, or (`edge`) concats that
  /// repeat a tensor's first and last rows around it. The padded source, the pads [top, left,
  /// bottom, right] and the padding nodes, outermost first.
  struct ExplicitPadding {
    std::size_t source = 0;
    std::vector<std::int64_t> pads = std::vector<std::int64_t>(4, 0);
    std::vector<std::size_t> nodes;
  };
  [[nodiscard]] std::optional<ExplicitPadding> explicit_padding(std::size_t x, bool edge) const;
  /// Window op `r`'s explicit padding that its own pads attribute can say: zeros for a
  /// convolution or an average that counts them, edge rows (each pad below the kernel) for a max.
  [[nodiscard]] std::optional<ExplicitPadding> window_explicit_padding(std::size_t r) const;
  /// A layer normalization over the trailing axes of `source` from `axis` (>= 1), as the importer
  /// writes one over several axes: the input flattened to [outer, inner], a `layernorm`, the
  /// result reshaped back, perhaps then a product by a constant scale and an add of a constant
  /// bias of the normalized shape (the layernorm's own then 1 and 0). Opset 17 and later write
  /// it as one LayerNormalization.
  struct LayerNormForm {
    std::size_t source = 0, ln = 0;
    std::int64_t axis = 0;
    std::optional<std::size_t> scale, bias;  ///< the constants (of the normalized shape)
    std::vector<std::size_t> chain;          ///< the nodes it writes, outermost first
  };
  [[nodiscard]] std::optional<LayerNormForm> layer_norm_form(std::size_t t) const;
  /// `ewadd` node `t` as a convolution's bias: one operand a `conv2d` without activation, the
  /// other a broadcast of a constant with one value per output channel ([C], [C, 1, 1] or
  /// [1, C, 1, 1]). The convolution and the constant.
  [[nodiscard]] std::optional<std::pair<std::size_t, std::size_t>> conv_bias_form(
      std::size_t t) const;
  /// Window op `r`'s explicit padding when it is written into its pads (at top level, the
  /// padding nodes absorbed).
  [[nodiscard]] std::optional<ExplicitPadding> folded_padding(std::size_t r, bool top_level) const;
  /// The value of one-element constant `c` (a weight, scalar or precomputed value, perhaps
  /// broadcast), whatever it is.
  [[nodiscard]] std::optional<float> scalar_constant(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Broadcast && !frontier_[c]) c = p_[Id(c)].children()[1].index();
    const bool constant =
        p_[Id(c)].op() == Op::Weight || p_[Id(c)].op() == Op::Scalar || frontier_[c];
    if (!constant || infos_[c].symbolic || infos_[c].elements() != 1) return std::nullopt;
    return constant_value(c);
  }
  /// `reshape` node `r` of a reduction that gives its reduced axis back as 1.
  [[nodiscard]] bool keepdims_reshape(std::size_t r) const;
  /// `reshape` node `r` of a matmul of a flattened tensor x [..., K] back to [..., N].
  [[nodiscard]] bool nd_matmul(std::size_t r) const;
  /// The one-element constant (a weight or precomputed value, perhaps broadcast) that operand
  /// `c` is, if it is one and its value is finite and not 0 (so that 1/k is too).
  [[nodiscard]] std::optional<std::size_t> one_element_constant(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Broadcast && !frontier_[c]) c = p_[Id(c)].children()[1].index();
    const std::optional<float> k = scalar_constant(c);
    if (!k || *k == 0 || !std::isfinite(*k) || !std::isfinite(1.0f / *k)) return std::nullopt;
    return c;
  }
  /// `erf` node `r` of an ewmul by a one-element constant.
  [[nodiscard]] bool erf_of_scaled(std::size_t r) const;
  /// The value of one-element weight or precomputed node `c`; none when it has none (the
  /// initializer's own checks then say why).
  [[nodiscard]] std::optional<float> constant_value(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Scalar)
      return tensor::TensorNode::scalar_of_atom(p_[p_[Id(c)].children()[0]]);
    const tensor::HostTensor* value = constant_tensor(c);
    if (!value || value->data.size() != 1) return std::nullopt;
    return value->data[0];
  }
  /// The bound value of `weight` node `c`, or the precomputed value of weight-only node `c`;
  /// null when it has none.
  [[nodiscard]] const tensor::HostTensor* constant_tensor(std::size_t c) const {
    if (p_[Id(c)].op() == Op::Weight) {
      const auto it = weights_.find(symbol_of(c));
      return it == weights_.end() ? nullptr : &it->second;
    }
    return weight_values_ ? weight_values_->value(c) : nullptr;
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
    const tensor::HostTensor* value = weight_values_ ? weight_values_->value(i) : nullptr;
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

  /// A term's context: the names bound to a fused body's args (empty outside bodies), and the
  /// names of body terms already written for this fused node.
  struct Body {
    std::vector<std::string> args;  ///< empty for a broadcast input not written yet
    std::vector<std::optional<std::size_t>>
        arg_broadcast;  ///< the top-level broadcast an arg is bound to
    std::map<std::size_t, std::vector<std::string>> done;
  };

  // Defined in export_ops.h.
  std::optional<std::string> broadcast_source(Id c, Body* body);
  std::vector<std::string> value_of(std::size_t i, Body* body);
  std::string tensor_of(Id c, Body* body);
  std::vector<std::string> emit(std::size_t i, Body* body, const std::string& name);
  std::string write_conv(std::size_t i, Body* body, const std::string& bias,
                         const std::string& name);
  void require_known(std::size_t i, const std::string& op_type) const;
  std::string opaque(std::size_t i, Body* body, const std::string& name);

  const RecExpr<TensorNode>& p_;
  const tensor::Bindings& weights_;
  const ExportOptions& options_;
  std::vector<TensorInfo> infos_;
  ::onnx::ModelProto model_;
  ::onnx::GraphProto* graph_ = nullptr;
  std::vector<std::size_t> outputs_;
  std::vector<bool> frontier_, needed_, elided_, absorbed_;
  std::map<std::size_t, LayerNormForm> layer_norms_;  ///< by their top node (`plan_fusible_forms`)
  /// Residual adds written as Sum (`ExportOptions::unfused_skip_layer_norm`).
  std::set<std::size_t> skip_sums_;
  /// Bias adds written as their convolution's B input: add -> (conv2d, constant).
  std::map<std::size_t, std::pair<std::size_t, std::size_t>> conv_biases_;
  std::unique_ptr<tensor::WeightValues> weight_values_;
  std::vector<std::vector<std::string>> names_;
  std::set<std::string> taken_;
  std::map<std::vector<std::int64_t>, std::string> int_constants_;
  std::map<std::uint32_t, std::string> scalar_constants_;
};

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_EXPORTER_H
