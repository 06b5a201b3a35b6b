// The ONNX exporter's operators: each dialect term written as the ONNX nodes that compute it, a
// fused kernel as its body's terms, an opaque node as the node it was imported from.
#ifndef TENSAT_ONNX_DETAIL_EXPORT_OPS_H
#define TENSAT_ONNX_DETAIL_EXPORT_OPS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/onnx/detail/exporter.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

/// The name of `broadcast` node `b`'s source when operand `c` of an elementwise operator is
/// that broadcast (at top level, or through an arg of `body`): ONNX's broadcasting does the rest.
inline std::optional<std::string> Exporter::broadcast_source(Id c, Body* body) {
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
inline std::vector<std::string> Exporter::value_of(std::size_t i, Body* body) {
  if (body && infos_[i].symbolic) {
    if (auto it = body->done.find(i); it != body->done.end()) return it->second;
    auto names = emit(i, body, {});
    body->done.emplace(i, names);
    return names;
  }
  if (names_[i].empty()) throw ExportError(where(i), "is read before it is written");
  return names_[i];
}

inline std::string Exporter::tensor_of(Id c, Body* body) { return value_of(c.index(), body).at(0); }

/// Writes term `i` (its output named `name` when given); returns its output names.
inline std::vector<std::string> Exporter::emit(std::size_t i, Body* body, const std::string& name) {
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
  if (!body) {
    if (auto it = conv_biases_.find(i); it != conv_biases_.end()) {
      // The bias as the convolution's B input ([C]).
      const auto [conv, source] = it->second;
      tensor::HostTensor b(Dims{infos_[conv].dims[1]});
      const tensor::HostTensor* value = constant_tensor(source);
      if (!value || value->data.size() != b.data.size())
        throw ExportError(where(source), "the bias has no value");
      b.data = value->data;
      return {
          write_conv(conv, nullptr, float_initializer(fmt::format("bias_{}", source), b), name)};
    }
    if (auto it = layer_norms_.find(i); it != layer_norms_.end()) {
      // One LayerNormalization over the trailing axes (`layer_norm_form`).
      const LayerNormForm& f = it->second;
      const Dims& d = infos_[f.source].dims;
      const Dims trailing(d.begin() + f.axis, d.size() - static_cast<std::size_t>(f.axis));
      const auto lc = p_[Id(f.ln)].children();
      const auto param = [&](const std::optional<std::size_t>& outer, Id own) {
        if (outer) return tensor_of(Id(*outer), nullptr);
        if (auto v = scalar_constant(own.index())) {
          tensor::HostTensor t(trailing);
          std::fill(t.data.begin(), t.data.end(), *v);
          return float_initializer(fmt::format("layernorm_{}", own.index()), t);
        }
        return op("Reshape", {tensor_of(own, nullptr),
                              ints(std::vector<std::int64_t>(trailing.begin(), trailing.end()))});
      };
      const std::string scale = param(f.scale, lc[1]), bias = param(f.bias, lc[2]);
      const float eps = lc.size() == 4 ? *constant_value(lc[3].index()) : tensor::kNormEps;
      const std::string y =
          op("LayerNormalization", {tensor_of(Id(f.source), nullptr), scale, bias}, name, &created);
      attr(created, "axis", f.axis);
      attr(created, "epsilon", eps);
      return {y};
    }
  }
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
      if (!body && skip_sums_.count(i)) return {op("Sum", {a, b}, name)};
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
      // x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³))) with x³ as Pow(x, 3): PyTorch's gelu_new
      // export, the form onnxruntime's FastGeluFusion matches.
      const std::string x = in(0);
      const std::string cube = op("Pow", {x, scalar(3.0f)});
      const std::string inner = op("Add", {x, op("Mul", {cube, scalar(0.044715f)})});
      const std::string t = op("Tanh", {op("Mul", {inner, scalar(0.7978845608028654f)})});
      return {op("Mul", {op("Mul", {x, scalar(0.5f)}), op("Add", {t, scalar(1.0f)})}, name)};
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
    case Op::Conv2d:
      return {write_conv(i, body, {}, name)};
    case Op::PoolMax:
    case Op::PoolAvg: {
      const bool is_max = n.op() == Op::PoolMax;
      const auto folded = folded_padding(i, body == nullptr);
      const std::vector<std::int64_t> pads =
          folded ? folded->pads : window_pads(dims(6), num(0), num(1), num(2), num(3), num(4));
      if (!folded && num(0) == dims(6)[2] && num(1) == dims(6)[3] &&
          pads == std::vector<std::int64_t>{0, 0, 0, 0}) {
        // A window over the whole plane: the global pool (what onnxruntime's NCHWc pass and
        // the exporters of the frameworks write).
        const std::string y = op(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {in(6)},
                                 num(5) ? std::string() : name);
        return {activation(num(5), y, name)};
      }
      const std::string x = folded ? tensor_of(Id(folded->source), nullptr) : in(6);
      const std::string y =
          op(is_max ? "MaxPool" : "AveragePool", {x}, num(5) ? std::string() : name, &created);
      attr(created, "kernel_shape", std::vector<std::int64_t>{num(0), num(1)});
      attr(created, "strides", std::vector<std::int64_t>{num(2), num(3)});
      attr(created, "pads", pads);
      // The dialect's windows leave padding out of an average; zeros padded explicitly count.
      if (!is_max) attr(created, "count_include_pad", std::int64_t{folded ? 1 : 0});
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
      attr(created, "epsilon", tensor::kNormEps);
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
      float eps = tensor::kNormEps;
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
    case Op::Clip: {
      if (auto f = body ? std::nullopt : hard_sigmoid_form(i)) {
        // clip(α·x + β, 0, 1) as the HardSigmoid it spells (onnxruntime fuses it into the
        // convolution before it).
        const bool add = f->add && absorbed_[*f->add], mul = f->mul && absorbed_[*f->mul];
        if ((add || !f->add) && (add || mul)) {
          const std::size_t x = mul || !f->mul ? f->x : *f->mul;
          const std::string y = op("HardSigmoid", {tensor_of(Id(x), nullptr)}, name, &created);
          attr(created, "alpha", mul ? f->alpha : 1.0f);
          attr(created, "beta", add ? f->beta : 0.0f);
          return {y};
        }
      }
      // ONNX's bounds are rank 0: a constant one is written as a scalar initializer.
      const auto bound = [&](std::size_t k) {
        if (auto v = body ? std::nullopt : scalar_constant(ch[k].index())) return scalar(*v);
        return as_scalar(in(k), infos_[ch[k].index()]);
      };
      return {op("Clip", {in(0), bound(1), bound(2)}, name)};
    }
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

/// `conv2d` node `i` as a Conv (with input B `bias` when given), then its activation.
inline std::string Exporter::write_conv(std::size_t i, Body* body, const std::string& bias,
                                        const std::string& name) {
  const auto ch = p_[Id(i)].children();
  const auto num = [&](std::size_t k) { return infos_[ch[k].index()].value; };
  const Dims& w = infos_[ch[5].index()].dims;
  const Dims& xd = infos_[ch[4].index()].dims;
  const auto folded = folded_padding(i, body == nullptr);
  const std::string x = folded ? tensor_of(Id(folded->source), nullptr) : tensor_of(ch[4], body);
  std::vector<std::string> inputs{x, tensor_of(ch[5], body)};
  if (!bias.empty()) inputs.push_back(bias);
  ::onnx::NodeProto* created = nullptr;
  const std::string y = op("Conv", inputs, num(3) ? std::string() : name, &created);
  attr(created, "kernel_shape", std::vector<std::int64_t>{w[2], w[3]});
  attr(created, "strides", std::vector<std::int64_t>{num(0), num(1)});
  attr(created, "pads",
       folded ? folded->pads : window_pads(xd, w[2], w[3], num(0), num(1), num(2)));
  const std::int64_t groups = xd[1] / w[1];
  if (groups != 1) attr(created, "group", groups);
  return activation(num(3), y, name);
}

/// An operator of the default domain must be one ONNX defines at the opset written (the
/// importer keeps any operator it does not know opaque, ONNX's or not).
inline void Exporter::require_known(std::size_t i, const std::string& op_type) const {
  if (!::onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(options_.opset)))
    throw ExportError(
        where(i),
        fmt::format("'{}' is not an ONNX operator (default domain, opset {}): it cannot be "
                    "written",
                    op_type, options_.opset));
}

/// An opaque node as the ONNX node it was imported from.
inline std::string Exporter::opaque(std::size_t i, Body* body, const std::string& name) {
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
    const auto* a = ::onnx::OpSchemaRegistry::Schema(record.node.op_type(), static_cast<int>(from));
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

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_EXPORT_OPS_H
