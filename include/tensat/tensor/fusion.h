// Fusion as e-nodes: rules that add, beside an elementwise op, a `fused` node computing it
// together with its producers as one kernel. The unfused form stays in the same class, so DAG
// extraction under the roofline cost (cost_model.h) chooses globally between fused and unfused.
#ifndef TENSAT_TENSOR_FUSION_H
#define TENSAT_TENSOR_FUSION_H

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tensat/tensor/checked_rewrite.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The label of every fusion rule.
inline constexpr std::string_view kFusionLabel = "fusion";

/// Elementwise ops (TVM's lowest lattice level): the roots of fused kernels and their producers.
[[nodiscard]] constexpr bool is_fusible_elementwise(Op op) noexcept { return is_elementwise(op); }
/// Injective data movement (TVM's injective level): fuses into any consumer, as a root too.
[[nodiscard]] constexpr bool is_injective(Op op) noexcept { return has_trait(op, kInjective); }
/// Reductions: the root of a kernel fed by elementwise/injective producers (XLA's kInput fusion).
[[nodiscard]] constexpr bool is_reduction(Op op) noexcept {
  return op_class(op) == OpClass::Reduction;
}
// Contractions (`is_contraction`, op.h; out-elementwise-fusable): at most one per kernel, as the
// producer of an elementwise epilogue (XLA's kOutput fusion), with its own operands read from
// memory.

namespace detail {

/// Builds one fused kernel's right-hand side: the body over `arg`s and the distinct inputs.
class FusedBuilder {
 public:
  using Ref = RightHandSide::Ref;

  /// `no_contraction`: no producer may bring a contraction — the kernel's root is a
  /// contraction or a reduction, or an injective op (a contraction heads elementwise epilogues
  /// only: XLA's kOutput, TVM's out-elementwise-fusable level).
  FusedBuilder(RightHandSide& rhs, const TensorEGraph& egraph, bool no_contraction)
      : rhs_(rhs), egraph_(egraph), contractions_(no_contraction ? 1 : 0) {}

  /// The body term for the value of class `cls` as an operand of the kernel's root: the best
  /// producer found in it inlined (a `fused` node's body, or one fusible op over args), else an
  /// `arg`. Sets `inlined` when a producer was inlined.
  Ref operand(Id cls, bool& inlined) {
    cls = egraph_.find(cls);
    const TensorInfo& info = egraph_[cls].data;
    if (info.kind != Kind::Tensor) return rhs_.cls(cls);  // an attribute
    if (info.symbolic) return arg(cls);
    if (info.weight_only) return weight(cls);
    // A fused producer: the largest legal body.
    const TensorNode* best = nullptr;
    std::size_t best_size = 0;
    for (Id nid : egraph_[cls].nodes) {
      const TensorNode& n = egraph_.node(nid);
      if (n.op() != Op::Fused) continue;
      std::size_t size = 0, contractions = 0;
      measure(n.children()[0], size, contractions);
      // A reduction-rooted kernel is never inlined into a consumer (a reduction roots its group).
      const Id body = egraph_.find(n.children()[0]);
      if (!egraph_[body].nodes.empty() && is_reduction(egraph_.node(egraph_[body].nodes[0]).op()))
        continue;
      if (contractions_ + contractions > 1 || size <= best_size) continue;
      best = &n;
      best_size = size;
    }
    if (best) {
      inlined = true;
      std::unordered_map<std::int64_t, Ref> args;
      for (std::size_t i = 1; i < best->children().size(); ++i)
        args.emplace(static_cast<std::int64_t>(i - 1), arg(egraph_.find(best->children()[i])));
      std::size_t size = 0, contractions = 0;
      measure(best->children()[0], size, contractions);
      contractions_ += contractions;
      std::unordered_map<std::uint32_t, Ref> done;
      return copy_body(best->children()[0], args, done);
    }
    // A plain producer: one elementwise, broadcast or injective op, or a contraction.
    for (Id nid : egraph_[cls].nodes) {
      const TensorNode& n = egraph_.node(nid);
      const bool loop =
          is_fusible_elementwise(n.op()) || n.op() == Op::Broadcast || is_injective(n.op());
      if (!loop && !(is_contraction(n.op()) && contractions_ == 0)) continue;
      if (is_contraction(n.op())) ++contractions_;
      inlined = true;
      SmallVector<Ref, 8> children;
      for (Id c : n.children()) {
        const TensorInfo& ci = egraph_[c].data;
        children.push_back(ci.kind != Kind::Tensor ? rhs_.cls(c)
                           : n.op() == Op::Pad     ? pad_operand(egraph_.find(c), 1)
                                                   : arg(egraph_.find(c)));
      }
      return rhs_.op(n.op(), Span<const Ref>(children));
    }
    return arg(cls);
  }

  /// The body term for a convolution's data operand `cls`: where the class holds a `pad`, its
  /// chain of pads over an `arg`, whatever fused producers it has, so that the convolution folds
  /// the padding in (`conv_post_ops`) instead of reading a padded copy; else `operand`.
  Ref conv_input(Id cls, bool& inlined) {
    cls = egraph_.find(cls);
    if (std::optional<Ref> chain = pad_chain(cls, 0)) {
      inlined = true;
      return *chain;
    }
    return operand(cls, inlined);
  }

  /// The body term for class `cls` as a kernel input, nothing inlined: an `arg`, a weight's
  /// broadcast, or the class itself for an attribute.
  Ref input(Id cls) {
    cls = egraph_.find(cls);
    const TensorInfo& info = egraph_[cls].data;
    if (info.kind != Kind::Tensor) return rhs_.cls(cls);
    return info.weight_only && !info.symbolic ? weight(cls) : arg(cls);
  }

  /// Whether class `cls` is a convolution's value or its epilogue's: it holds a `conv2d`, or a
  /// `fused` node whose body has one.
  [[nodiscard]] bool brings_conv(Id cls) const {
    cls = egraph_.find(cls);
    const TensorInfo& info = egraph_[cls].data;
    if (info.kind != Kind::Tensor || info.symbolic || info.weight_only) return false;
    for (Id nid : egraph_[cls].nodes) {
      const TensorNode& n = egraph_.node(nid);
      if (n.op() == Op::Conv2d) return true;
      if (n.op() == Op::Fused && body_has(n.children()[0], Op::Conv2d)) return true;
    }
    return false;
  }

  /// The `fused` node over `body`.
  Ref fused(Ref body) {
    SmallVector<Ref, 8> children{body};
    for (Id input : inputs_) children.push_back(rhs_.cls(input));
    return rhs_.op(Op::Fused, Span<const Ref>(children));
  }

 private:
  /// A weight-only operand: a broadcast of a smaller weight (a bias, a per-channel scale) stays a
  /// broadcast over the small one's `arg`, so the kernel reads the small tensor (a fill, run by
  /// run) instead of its full-size copy; any other weight is an `arg`.
  Ref weight(Id cls) {
    const TensorInfo& info = egraph_[cls].data;
    for (Id nid : egraph_[cls].nodes) {
      const TensorNode& n = egraph_.node(nid);
      if (n.op() != Op::Broadcast || n.children().size() != 2) continue;
      const Id src = egraph_.find(n.children()[1]);
      const TensorInfo& si = egraph_[src].data;
      if (si.kind != Kind::Tensor || si.bytes() >= info.bytes()) continue;
      return rhs_.op(Op::Broadcast, {rhs_.cls(n.children()[0]), arg(src)});
    }
    return arg(cls);
  }

  /// A `pad`'s operand: the pads below it inlined with it, so that a chain of pads (a 2-D
  /// padding, one ONNX Pad, is a pad per axis) is one producer level and a convolution folds all
  /// of its input's padding (`conv_post_ops`); an `arg` below the chain.
  Ref pad_operand(Id cls, std::size_t depth) {
    if (egraph_[cls].data.kind != Kind::Tensor) return rhs_.cls(cls);
    std::optional<Ref> chain = pad_chain(cls, depth);
    return chain ? *chain : arg(cls);
  }

  /// Class `cls` as its (non-empty) `pad` over `pad_operand`, or nothing where it holds none or
  /// is no computed tensor (a weight, a symbolic shape).
  std::optional<Ref> pad_chain(Id cls, std::size_t depth) {
    const TensorInfo& info = egraph_[cls].data;
    if (info.kind != Kind::Tensor || info.symbolic || info.weight_only || depth > 8)
      return std::nullopt;
    for (Id nid : egraph_[cls].nodes) {
      const TensorNode& n = egraph_.node(nid);
      if (n.op() != Op::Pad || n.children().size() != 4) continue;
      const Id x = egraph_.find(n.children()[3]);
      if (x == cls || egraph_[x].data.kind != Kind::Tensor) continue;  // an empty pad
      SmallVector<Ref, 8> children;
      for (std::size_t k = 0; k < 3; ++k) children.push_back(rhs_.cls(n.children()[k]));
      children.push_back(pad_operand(x, depth + 1));
      return rhs_.op(Op::Pad, Span<const Ref>(children));
    }
    return std::nullopt;
  }

  /// The `arg` standing for input class `cls` (one per distinct input).
  Ref arg(Id cls) {
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i] == cls) return arg_refs_[i];
    const TensorInfo& info = egraph_[cls].data;
    const Ref index = rhs_.num(static_cast<std::int64_t>(inputs_.size()));
    const Ref dtype = rhs_.leaf(TensorNode::sym(dtype_name(info.dtype)));
    const Ref ref = info.layout == Layout::Contiguous
                        ? rhs_.op(Op::Arg, {index, dtype, rhs_.ints(info.dims)})
                        : rhs_.op(Op::Arg, {index, dtype, rhs_.ints(info.dims),
                                            rhs_.leaf(TensorNode::sym(layout_name(info.layout)))});
    inputs_.push_back(cls);
    arg_refs_.push_back(ref);
    return ref;
  }

  /// Calls `f(node)` on each distinct body term under class `b` (each class's first member,
  /// `arg`s included), until `f` returns false.
  template <class F>
  void walk_body(Id b, F&& f) const {
    std::vector<Id> stack{egraph_.find(b)}, seen;
    while (!stack.empty()) {
      const Id c = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), c) != seen.end() || egraph_[c].nodes.empty())
        continue;
      seen.push_back(c);
      const TensorNode& n = egraph_.node(egraph_[c].nodes[0]);
      if (!f(n)) return;
      if (n.op() == Op::Arg) continue;
      for (Id child : n.children())
        if (egraph_[child].data.symbolic) stack.push_back(egraph_.find(child));
    }
  }

  /// Body terms (distinct classes, `arg`s excluded) and contractions under body class `b`,
  /// reading each class's first member.
  void measure(Id b, std::size_t& size, std::size_t& contractions) const {
    walk_body(b, [&](const TensorNode& n) {
      if (n.op() == Op::Arg) return true;
      ++size;
      if (is_contraction(n.op())) ++contractions;
      return true;
    });
  }

  /// Whether the body under class `b` has a term of op `op` (each class's first member).
  [[nodiscard]] bool body_has(Id b, Op op) const {
    bool found = false;
    walk_body(b, [&](const TensorNode& n) {
      found = n.op() == op;
      return !found;
    });
    return found;
  }

  /// A copy of the body under class `b` with its args renumbered by `args`.
  Ref copy_body(Id b, const std::unordered_map<std::int64_t, Ref>& args,
                std::unordered_map<std::uint32_t, Ref>& done) {
    b = egraph_.find(b);
    if (auto it = done.find(b.value); it != done.end()) return it->second;
    const TensorNode& n = egraph_.node(egraph_[b].nodes[0]);
    Ref out{0};
    if (n.op() == Op::Arg) {
      out = args.at(egraph_[n.children()[0]].data.value);
    } else {
      SmallVector<Ref, 8> children;
      for (Id c : n.children())
        children.push_back(egraph_[c].data.symbolic ? copy_body(c, args, done) : rhs_.cls(c));
      out = rhs_.op(n.op(), Span<const Ref>(children));
    }
    done.emplace(b.value, out);
    return out;
  }

  RightHandSide& rhs_;
  const TensorEGraph& egraph_;
  std::vector<Id> inputs_;
  std::vector<Ref> arg_refs_;
  std::size_t contractions_;
};

}  // namespace detail

/// One rule per fusible root op: `(op ?x ...)` gains `(fused (op B(?x) ...) inputs...)`, where
/// B(?x) inlines the best producer of ?x's class — a `fused` node's body (the largest whose
/// contractions keep the kernel at one), else one elementwise, broadcast or injective op or a
/// contraction, over args — and weight-only or unfusable operands become args (attributes stay
/// as they are). Each iteration grows kernels by one level of producers; nothing is added when no
/// producer could be inlined. Legality follows TVM's op-pattern lattice and XLA's fusion kinds:
/// elementwise, broadcast and injective ops (transpose, slice, pad, concat) fuse into any
/// consumer (kLoop); a matmul or conv2d may head an elementwise epilogue (kOutput: every op
/// above it in the body is elementwise) or be the root that absorbs elementwise/injective
/// producers of its operands, one contraction per kernel; a
/// reduction is the root of a kernel fed by elementwise/injective producers (kInput) and is never
/// inlined as a producer; pooling, normalizations, softmax, resize, conv_transpose and `opaque`
/// never fuse. A class gains at
/// most `max_per_class` fused nodes (the first iterations' kernels: one more producer level each).
inline std::vector<TensorRewrite> fusion_rules(std::size_t max_per_class = 2) {
  std::vector<TensorRewrite> rules;
  const auto add = [&](Op op, std::vector<std::string> vars) {
    std::string lhs = fmt::format("({}", op_name(op));
    std::vector<Var> reads;
    for (const auto& v : vars) {
      lhs += " " + v;
      reads.emplace_back(v);
    }
    lhs += ")";
    auto apply = [op, reads, max_per_class](TensorEGraph& g, Id eclass,
                                            const Subst& s) -> std::vector<Id> {
      // A class keeps at most `max_per_class` kernels: algebraic variants of one op (ewadd
      // commuted and re-associated) would otherwise each bring their own.
      std::size_t fused = 0;
      for (Id nid : g[eclass].nodes) fused += g.node(nid).op() == Op::Fused;
      if (fused >= max_per_class) return {};
      bool all_weight_only = true;  // then the op is precomputed: nothing to fuse
      for (const Var& v : reads) {
        const TensorInfo& info = g[s[v]].data;
        if (info.symbolic) return {};  // a term of a body, not a kernel
        if (info.kind == Kind::Tensor) all_weight_only = all_weight_only && info.weight_only;
      }
      if (all_weight_only) return {};
      RightHandSide rhs(g);
      detail::FusedBuilder builder(rhs, g, !is_fusible_elementwise(op));
      // A convolution's epilogue (oneDNN's post-ops): once an operand brings a convolution, the
      // others stay kernel inputs rather than producers recomputed in the kernel, so the kernel
      // is the convolution, its per-channel steps and a residual read (`conv_post_ops`).
      std::size_t conv_operand = reads.size();
      if (is_fusible_elementwise(op))
        for (std::size_t i = 0; i < reads.size() && conv_operand == reads.size(); ++i)
          if (builder.brings_conv(s[reads[i]])) conv_operand = i;
      bool inlined = false;
      SmallVector<RightHandSide::Ref, 8> operands;
      for (std::size_t i = 0; i < reads.size(); ++i)
        operands.push_back(conv_operand < reads.size() && i != conv_operand
                               ? builder.input(s[reads[i]])
                           : op == Op::Conv2d && i == 4 ? builder.conv_input(s[reads[i]], inlined)
                                                        : builder.operand(s[reads[i]], inlined));
      if (!inlined) return {};
      const RightHandSide::Ref root =
          builder.fused(rhs.op(op, Span<const RightHandSide::Ref>(operands)));
      return apply_checked(g, rhs, {{eclass, root}});
    };
    rules.push_back(rewrite<TensorNode, TensorAnalysis>(fmt::format("fuse-{}", op_name(op)), lhs,
                                                        std::move(apply), reads)
                        .with_label(std::string(kFusionLabel)));
  };
  for (std::size_t i = 0; i < kNumOps;
       ++i)  // in the enum's order: the unary ops, then the binary ones
    if (is_unary_elementwise(static_cast<Op>(i))) add(static_cast<Op>(i), {"?x"});
  for (std::size_t i = 0; i < kNumOps; ++i)
    if (is_binary_elementwise(static_cast<Op>(i)) || static_cast<Op>(i) == Op::SMul)
      add(static_cast<Op>(i), {"?x", "?y"});
  add(Op::Clip, {"?x", "?lo", "?hi"});
  add(Op::Transpose, {"?p", "?x"});
  add(Op::Slice, {"?axis", "?start", "?end", "?x"});
  add(Op::Pad, {"?axis", "?before", "?after", "?x"});
  add(Op::MatMul, {"?act", "?x", "?y"});
  add(Op::Conv2d, {"?sh", "?sw", "?pad", "?act", "?x", "?w"});
  for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMean}) add(op, {"?axis", "?x"});
  return rules;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_FUSION_H
