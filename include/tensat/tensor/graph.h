// Graph: a fluent builder of tensor programs (shape-checked as they are built), and checking of
// programs read as text.
#ifndef TENSAT_TENSOR_GRAPH_H
#define TENSAT_TENSOR_GRAPH_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/sexpr.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// A value of a `Graph` under construction: the index of its node in the graph.
struct Tensor {
  Id id;
  friend bool operator==(Tensor a, Tensor b) noexcept { return a.id == b.id; }
  friend bool operator!=(Tensor a, Tensor b) noexcept { return a.id != b.id; }
};

/// Throws `ShapeError` unless every `arg i` in the body of the `fused` node `at` declares the
/// dtype and shape of the node's input `i` (inference sees only the body's result; this walk
/// sees the args).
inline void check_fused_args(const RecExpr<TensorNode>& program,
                             const std::vector<TensorInfo>& infos, std::size_t at) {
  const TensorNode& fused = program[Id(at)];
  std::vector<Id> stack{fused.children()[0]};
  std::vector<bool> seen(at, false);
  while (!stack.empty()) {
    const Id b = stack.back();
    stack.pop_back();
    if (seen[b.index()]) continue;
    seen[b.index()] = true;
    const TensorNode& n = program[b];
    if (n.op() == Op::Arg) {
      const auto index = static_cast<std::size_t>(infos[n.children()[0].index()].value);
      const TensorInfo& arg = infos[b.index()];
      const TensorInfo& input = infos[fused.children()[index + 1].index()];
      if (arg.dtype != input.dtype || arg.dims != input.dims)
        throw ShapeError(at, "fused",
                         fmt::format("arg {} is {} {} but input {} is {} {}", index,
                                     dtype_name(arg.dtype), dims_to_string(arg.dims), index,
                                     dtype_name(input.dtype), dims_to_string(input.dims)));
      continue;
    }
    for (Id c : n.children())
      if (infos[c.index()].symbolic) stack.push_back(c);
  }
}

/// Infers every node of `program` bottom-up; returns the info of each node (indexed like the
/// program). Throws `ShapeError` naming the first ill-typed node.
[[nodiscard]] inline std::vector<TensorInfo> check_program(const RecExpr<TensorNode>& program) {
  std::vector<TensorInfo> infos(program.size());
  std::vector<const TensorInfo*> children;
  std::string why;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& node = program[Id(i)];
    children.clear();
    for (Id c : node.children()) children.push_back(&infos[c.index()]);
    if (!infer(node, Span<const TensorInfo* const>(children.data(), children.size()), infos[i],
               &why))
      throw ShapeError(i, node.op_name(), why);
    if (node.op() == Op::Fused) check_fused_args(program, infos, i);
  }
  return infos;
}

/// Reads a program from its s-expression and checks it: `ParseError` (with the offset) for
/// malformed text or unknown operators, `ShapeError` for an ill-typed program.
[[nodiscard]] inline RecExpr<TensorNode> parse_program(std::string_view text) {
  RecExpr<TensorNode> program = parse_expr<TensorNode>(text);
  (void)check_program(program);
  return program;
}

/// Operators of `program` by count, leaving out attributes (`num`, `ints`, `sym`), sources
/// (`input`, `weight`), `noop` and the terms inside fused kernels' bodies (a `fused` node
/// counts once): the op counts that papers report. Indexed by `Op`.
[[nodiscard]] inline std::array<std::size_t, kNumOps> op_histogram(
    const RecExpr<TensorNode>& program) {
  std::array<std::size_t, kNumOps> counts{};
  std::vector<bool> in_body(program.size(), false);
  for (std::size_t i = program.size(); i-- > 0;) {
    const TensorNode& node = program[Id(i)];
    if (node.op() == Op::Fused) in_body[node.children()[0].index()] = true;
    if (in_body[i])
      for (Id c : node.children()) in_body[c.index()] = true;
  }
  for (std::size_t i = 0; i < program.size(); ++i)
    if (!in_body[i] && is_operator(program[Id(i)].op()))
      counts[static_cast<std::size_t>(program[Id(i)].op())]++;
  return counts;
}
/// Which nodes of `expr` `root` reaches (itself included): its term's nodes.
[[nodiscard]] inline std::vector<bool> reachable_nodes(const RecExpr<TensorNode>& expr, Id root) {
  std::vector<bool> needed(expr.size(), false);
  needed[root.index()] = true;
  for (std::size_t i = root.index() + 1; i-- > 0;)
    if (needed[i])
      for (Id c : expr[Id(i)].children()) needed[c.index()] = true;
  return needed;
}

/// The total of `op_histogram`.
[[nodiscard]] inline std::size_t count_ops(const RecExpr<TensorNode>& program) {
  std::size_t n = 0;
  for (std::size_t c : op_histogram(program)) n += c;
  return n;
}

/// Builds a tensor program node by node, checking shapes as it goes (a `ShapeError` names the
/// operator and the reason at the call that is wrong). Identical nodes are stored once, so the
/// program is a DAG.
///
/// ```
/// Graph g;
/// Tensor x = g.input("x", {1, 512});
/// Tensor w = g.weight("w", {512, 512});
/// g.output(g.relu(g.matmul(x, w)));
/// RecExpr<TensorNode> program = g.program();
/// ```
class Graph {
 public:
  // Sources.
  /// An input of logical shape `dims`, stored in `layout` (`ChannelsLast`: rank 4 only).
  Tensor input(std::string_view name, const Dims& dims, DType dtype = DType::F32,
               Layout layout = Layout::Contiguous) {
    return source(Op::Input, name, dims, dtype, layout);
  }
  /// A weight: known before the program runs, so subgraphs of weights only are precomputable.
  Tensor weight(std::string_view name, const Dims& dims, DType dtype = DType::F32,
                Layout layout = Layout::Contiguous) {
    return source(Op::Weight, name, dims, dtype, layout);
  }
  /// A one-element f32 tensor [1] holding `v`, its value in the term (`(scalar v)`): what
  /// exporters' scalar constants (a Pow's exponent, LayerNorm's eps) become, so rules read them.
  Tensor scalar(float v) { return add_op(Op::Scalar, {append(TensorNode::scalar_atom(v))}); }
  /// `x` stored in `layout`: the same logical tensor (a copy that reorders it in memory).
  Tensor relayout(Tensor x, Layout layout) {
    return add_op(Op::Relayout, {append(TensorNode::sym(layout_name(layout))), x.id});
  }

  // Elementwise.
  Tensor ewadd(Tensor a, Tensor b) { return add_op(Op::EwAdd, {a.id, b.id}); }
  Tensor ewmul(Tensor a, Tensor b) { return add_op(Op::EwMul, {a.id, b.id}); }
  /// `a + b` with numpy broadcasting: operands are broadcast to the common shape first.
  Tensor add(Tensor a, Tensor b) {
    auto [x, y] = broadcast_pair(a, b);
    return ewadd(x, y);
  }
  /// `a * b` with numpy broadcasting.
  Tensor mul(Tensor a, Tensor b) {
    auto [x, y] = broadcast_pair(a, b);
    return ewmul(x, y);
  }
  /// `x * s` for a one-element tensor `s`.
  Tensor smul(Tensor x, Tensor s) { return add_op(Op::SMul, {x.id, s.id}); }
  Tensor relu(Tensor x) { return add_op(Op::Relu, {x.id}); }
  Tensor tanh(Tensor x) { return add_op(Op::Tanh, {x.id}); }
  Tensor sigmoid(Tensor x) { return add_op(Op::Sigmoid, {x.id}); }
  Tensor gelu(Tensor x) { return add_op(Op::Gelu, {x.id}); }
  Tensor gelu_erf(Tensor x) { return add_op(Op::GeluErf, {x.id}); }
  Tensor silu(Tensor x) { return add_op(Op::Silu, {x.id}); }
  Tensor hard_swish(Tensor x) { return add_op(Op::HardSwish, {x.id}); }
  Tensor exp(Tensor x) { return add_op(Op::Exp, {x.id}); }

  // Contractions and windows.
  /// `a @ b`, batched over leading dimensions when the rank exceeds 2, then `act`.
  Tensor matmul(Tensor a, Tensor b, Activation act = Activation::None) {
    return add_op(Op::MatMul, {num(static_cast<std::int64_t>(act)), a.id, b.id});
  }
  /// NCHW convolution with weight [C_out, C_in / groups, kh, kw]; groups follow from the shapes.
  Tensor conv2d(Tensor x, Tensor w, std::int64_t stride_h = 1, std::int64_t stride_w = 1,
                Padding pad = Padding::Same, Activation act = Activation::None) {
    return add_op(Op::Conv2d, {num(stride_h), num(stride_w), num(static_cast<std::int64_t>(pad)),
                               num(static_cast<std::int64_t>(act)), x.id, w.id});
  }
  Tensor poolmax(Tensor x, std::int64_t kh, std::int64_t kw, std::int64_t stride_h,
                 std::int64_t stride_w, Padding pad = Padding::Same,
                 Activation act = Activation::None) {
    return pool(Op::PoolMax, x, kh, kw, stride_h, stride_w, pad, act);
  }
  Tensor poolavg(Tensor x, std::int64_t kh, std::int64_t kw, std::int64_t stride_h,
                 std::int64_t stride_w, Padding pad = Padding::Same,
                 Activation act = Activation::None) {
    return pool(Op::PoolAvg, x, kh, kw, stride_h, stride_w, pad, act);
  }

  // Data movement.
  Tensor concat(std::int64_t axis, const std::vector<Tensor>& inputs) {
    std::vector<Id> children{num(axis)};
    for (Tensor t : inputs) children.push_back(t.id);
    return add_op(Op::Concat, Span<const Id>(children.data(), children.size()));
  }
  /// The first `size` entries along `axis`, and the rest.
  std::pair<Tensor, Tensor> split(Tensor x, std::int64_t axis, std::int64_t size) {
    const Tensor pair = add_op(Op::Split, {num(axis), num(size), x.id});
    return {add_op(Op::Split0, {pair.id}), add_op(Op::Split1, {pair.id})};
  }
  Tensor transpose(Tensor x, const Dims& perm) { return add_op(Op::Transpose, {ints(perm), x.id}); }
  Tensor reshape(Tensor x, const Dims& dims) { return add_op(Op::Reshape, {ints(dims), x.id}); }

  // Normalization and weight transforms.
  Tensor batchnorm(Tensor x, Tensor scale, Tensor bias, Tensor mean, Tensor var) {
    return add_op(Op::BatchNorm, {x.id, scale.id, bias.id, mean.id, var.id});
  }
  Tensor enlarge(Tensor w, Tensor ref) { return add_op(Op::Enlarge, {w.id, ref.id}); }
  Tensor merge(Tensor w, std::int64_t groups, std::int64_t count) {
    return add_op(Op::Merge, {num(groups), num(count), w.id});
  }
  /// The Winograd F(2x2, 3x3) form of a 3x3 kernel w [C_out, C_in, 3, 3]: [16, C_out, C_in].
  Tensor wino_weight(Tensor w) { return add_op(Op::WinoWeight, {w.id}); }
  /// `conv2d(x, w, 1, 1, pad, act)` computed by Winograd F(2x2, 3x3), u = `wino_weight(w)`.
  Tensor wino_conv2d(Tensor x, Tensor u, Padding pad = Padding::Same,
                     Activation act = Activation::None) {
    return add_op(Op::WinoConv2d, {num(static_cast<std::int64_t>(pad)),
                                   num(static_cast<std::int64_t>(act)), x.id, u.id});
  }

  // Transformer extension.
  Tensor softmax(Tensor x, std::int64_t axis) { return add_op(Op::Softmax, {num(axis), x.id}); }
  Tensor layernorm(Tensor x, Tensor gamma, Tensor beta) {
    return add_op(Op::LayerNorm, {x.id, gamma.id, beta.id});
  }
  /// LayerNorm with its own epsilon, a one-element tensor (`scalar(1e-12f)`).
  Tensor layernorm(Tensor x, Tensor gamma, Tensor beta, Tensor eps) {
    return add_op(Op::LayerNorm, {x.id, gamma.id, beta.id, eps.id});
  }
  Tensor broadcast(Tensor x, const Dims& dims) { return add_op(Op::Broadcast, {ints(dims), x.id}); }
  Tensor reduce_sum(Tensor x, std::int64_t axis) {
    return add_op(Op::ReduceSum, {num(axis), x.id});
  }
  Tensor reduce_max(Tensor x, std::int64_t axis) {
    return add_op(Op::ReduceMax, {num(axis), x.id});
  }
  Tensor reduce_mean(Tensor x, std::int64_t axis) {
    return add_op(Op::ReduceMean, {num(axis), x.id});
  }
  Tensor slice(Tensor x, std::int64_t axis, std::int64_t start, std::int64_t end) {
    return add_op(Op::Slice, {num(axis), num(start), num(end), x.id});
  }
  Tensor pad(Tensor x, std::int64_t axis, std::int64_t before, std::int64_t after) {
    return add_op(Op::Pad, {num(axis), num(before), num(after), x.id});
  }

  // ONNX extension.
  Tensor ewsub(Tensor a, Tensor b) { return add_op(Op::EwSub, {a.id, b.id}); }
  Tensor ewdiv(Tensor a, Tensor b) { return add_op(Op::EwDiv, {a.id, b.id}); }
  Tensor ewpow(Tensor a, Tensor b) { return add_op(Op::EwPow, {a.id, b.id}); }
  /// `a - b` with numpy broadcasting.
  Tensor sub(Tensor a, Tensor b) {
    auto [x, y] = broadcast_pair(a, b);
    return ewsub(x, y);
  }
  /// `a / b` with numpy broadcasting.
  Tensor div(Tensor a, Tensor b) {
    auto [x, y] = broadcast_pair(a, b);
    return ewdiv(x, y);
  }
  /// `a ^ b` with numpy broadcasting.
  Tensor pow(Tensor a, Tensor b) {
    auto [x, y] = broadcast_pair(a, b);
    return ewpow(x, y);
  }
  Tensor sqrt(Tensor x) { return add_op(Op::Sqrt, {x.id}); }
  /// The Gauss error function, elementwise (ONNX Erf).
  Tensor erf(Tensor x) { return add_op(Op::Erf, {x.id}); }
  /// `min(max(x, lo), hi)` for one-element tensors `lo` and `hi`.
  Tensor clip(Tensor x, Tensor lo, Tensor hi) { return add_op(Op::Clip, {x.id, lo.id, hi.id}); }
  /// ONNX Resize of `x` to `dims` (same rank).
  Tensor resize(Tensor x, const Dims& dims, ResizeInterp interp, ResizeCoord coord,
                ResizeNearest nearest = ResizeNearest::RoundPreferFloor) {
    return add_op(Op::Resize,
                  {num(static_cast<std::int64_t>(interp)), num(static_cast<std::int64_t>(coord)),
                   num(static_cast<std::int64_t>(nearest)), ints(dims), x.id});
  }
  /// Transposed convolution of NCHW `x` with `w` [C_in, C_out / groups, kh, kw]; `pads` are
  /// {top, left, bottom, right} (bottom and right may be negative: zeros appended).
  Tensor conv_transpose(Tensor x, Tensor w, std::int64_t stride_h, std::int64_t stride_w,
                        const std::array<std::int64_t, 4>& pads = {0, 0, 0, 0},
                        std::int64_t groups = 1) {
    return add_op(Op::ConvTranspose, {num(stride_h), num(stride_w), num(pads[0]), num(pads[1]),
                                      num(pads[2]), num(pads[3]), num(groups), x.id, w.id});
  }
  /// An operator the dialect does not know (named `type`, e.g. an ONNX op type), producing a
  /// `dtype` tensor of shape `dims` from `inputs`: kept as it is, never rewritten.
  Tensor opaque(std::string_view type, const Dims& dims, const std::vector<Tensor>& inputs,
                DType dtype = DType::F32) {
    if (type.empty() || TensorNode::parse_integer(type) || op_from_name(type) ||
        type.find_first_of(" \t\n\r()\"") != std::string_view::npos)
      throw ShapeError(
          program_.size(), "opaque",
          fmt::format(
              "'{}' cannot be an operator type (empty, an integer, a dialect operator, or has "
              "spaces/parentheses)",
              type));
    std::vector<Id> children{append(TensorNode::sym(type)),
                             append(TensorNode::sym(dtype_name(dtype))), ints(dims)};
    for (Tensor t : inputs) children.push_back(t.id);
    return add_op(Op::Opaque, Span<const Id>(children.data(), children.size()));
  }

  /// Any operator, from its children (attribute nodes from `num`/`ints`, tensors by id).
  Tensor add_op(Op op, Span<const Id> children) { return Tensor{append(TensorNode(op, children))}; }
  Tensor add_op(Op op, std::initializer_list<Id> children) {
    return add_op(op, Span<const Id>(children.begin(), children.size()));
  }
  /// An integer attribute node.
  Id num(std::int64_t value) { return append(TensorNode::num(value)); }
  /// A list attribute node.
  Id ints(const Dims& values) {
    std::vector<Id> children;
    for (std::int64_t v : values) children.push_back(num(v));
    return append(TensorNode(Op::Ints, Span<const Id>(children.data(), children.size())));
  }

  /// Marks `t` as an output of the program.
  void output(Tensor t) {
    if (!info(t).is_tensor())
      throw ShapeError(t.id.index(), program_[t.id].op_name(), "an output must be a tensor");
    outputs_.push_back(t);
  }
  [[nodiscard]] const std::vector<Tensor>& outputs() const noexcept { return outputs_; }

  /// What `t` denotes (shape, dtype, weight-only).
  [[nodiscard]] const TensorInfo& info(Tensor t) const { return infos_.at(t.id.index()); }
  [[nodiscard]] const Dims& shape(Tensor t) const { return info(t).dims; }

  /// The program: its root is the single output, or a `noop` joining the outputs in order;
  /// nodes no output depends on are left out.
  /// Throws `Error` if no output was marked.
  [[nodiscard]] RecExpr<TensorNode> program() const {
    if (outputs_.empty()) throw Error("Graph::program: no output marked");
    RecExpr<TensorNode> expr = program_;
    if (outputs_.size() > 1) {
      std::vector<Id> children;
      for (Tensor t : outputs_) children.push_back(t.id);
      expr.add(TensorNode(Op::Noop, Span<const Id>(children.data(), children.size())));
    }
    return reachable(expr, outputs_.size() > 1 ? expr.root() : outputs_[0].id);
  }
  /// The program as an s-expression.
  [[nodiscard]] std::string to_string() const { return program().to_string(); }
  /// Nodes built so far (attributes included).
  [[nodiscard]] std::size_t size() const noexcept { return program_.size(); }

 private:
  Tensor source(Op op, std::string_view name, const Dims& dims, DType dtype, Layout layout) {
    if (name.empty() || TensorNode::parse_integer(name) || op_from_name(name) ||
        name.find_first_of(" \t\n\r()\"") != std::string_view::npos)
      throw ShapeError(
          program_.size(), std::string(op_name(op)),
          fmt::format(
              "'{}' cannot be a name (empty, an integer, an operator, or has spaces/parentheses)",
              name));
    const Id name_id = append(TensorNode::sym(name));
    const Id dtype_id = append(TensorNode::sym(dtype_name(dtype)));
    const Id dims_id = ints(dims);
    const Tensor t = layout == Layout::Contiguous
                         ? add_op(op, {name_id, dtype_id, dims_id})
                         : add_op(op, {name_id, dtype_id, dims_id,
                                       append(TensorNode::sym(layout_name(layout)))});
    auto [it, inserted] = sources_.emplace(std::string(name), t.id);
    if (!inserted && it->second != t.id)
      throw ShapeError(t.id.index(), std::string(op_name(op)),
                       fmt::format("'{}' is already declared differently", name));
    return t;
  }

  Tensor pool(Op op, Tensor x, std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw,
              Padding pad, Activation act) {
    return add_op(op, {num(kh), num(kw), num(sh), num(sw), num(static_cast<std::int64_t>(pad)),
                       num(static_cast<std::int64_t>(act)), x.id});
  }

  std::pair<Tensor, Tensor> broadcast_pair(Tensor a, Tensor b) {
    // Copies: broadcasting `a` appends a node, which may reallocate the infos `shape` refers to.
    const Dims x = shape(a);
    const Dims y = shape(b);
    const std::size_t rank = std::max(x.size(), y.size());
    Dims out(rank, 1);
    for (std::size_t i = 0; i < rank; ++i) {
      const std::int64_t dx = i + x.size() >= rank ? x[i + x.size() - rank] : 1;
      const std::int64_t dy = i + y.size() >= rank ? y[i + y.size() - rank] : 1;
      if (dx != dy && dx != 1 && dy != 1)
        throw ShapeError(
            program_.size(), "broadcast",
            fmt::format("shapes {} and {} do not broadcast", dims_to_string(x), dims_to_string(y)));
      out[i] = std::max(dx, dy);
    }
    Tensor bx = x == out ? a : broadcast(a, out);
    Tensor by = y == out ? b : broadcast(b, out);
    // A broadcast is contiguous: stored like the other operand when that one is channels_last.
    if (x != out && info(by).layout != Layout::Contiguous) bx = relayout(bx, info(by).layout);
    if (y != out && info(bx).layout != Layout::Contiguous) by = relayout(by, info(bx).layout);
    return {bx, by};
  }

  Id append(TensorNode node) {
    auto found = index_.find(node);
    if (found != index_.end()) return found->second;
    std::vector<const TensorInfo*> children;
    for (Id c : node.children()) children.push_back(&infos_.at(c.index()));
    TensorInfo info;
    std::string why;
    if (!infer(node, Span<const TensorInfo* const>(children.data(), children.size()), info, &why))
      throw ShapeError(program_.size(), node.op_name(), why);
    const Id id = program_.add(node);
    infos_.push_back(std::move(info));
    index_.emplace(std::move(node), id);
    return id;
  }

  /// The nodes of `expr` reachable from `root` (dead nodes dropped), renumbered in order.
  [[nodiscard]] static RecExpr<TensorNode> reachable(const RecExpr<TensorNode>& expr, Id root) {
    std::vector<Id> renumber(expr.size(), kInvalidId);
    const std::vector<bool> needed = reachable_nodes(expr, root);
    RecExpr<TensorNode> out;
    for (std::size_t i = 0; i <= root.index(); ++i)
      if (needed[i])
        renumber[i] = out.add(map_children(expr[Id(i)], [&](Id c) { return renumber[c.index()]; }));
    return out;
  }

  RecExpr<TensorNode> program_;
  std::vector<TensorInfo> infos_;
  std::unordered_map<TensorNode, Id, NodeHash> index_;
  std::unordered_map<std::string, Id> sources_;
  std::vector<Tensor> outputs_;
};

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_GRAPH_H
