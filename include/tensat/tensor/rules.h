// The rule families of the tensor dialect (TASO's substitutions as TENSAT applies them), each
// rule named and labelled with its family; multi-pattern rules labelled `multi` as well.
#ifndef TENSAT_TENSOR_RULES_H
#define TENSAT_TENSOR_RULES_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/multipattern.h"
#include "tensat/tensor/checked_rewrite.h"
#include "tensat/tensor/detail/merges.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The label every multi-pattern rule carries (run them in the first `k_multi` iterations only:
/// `Runner::with_label_iteration_limit(kMultiLabel, k_multi)`).
inline constexpr std::string_view kMultiLabel = "multi";

namespace detail {

using Ref = RightHandSide::Ref;

/// A rule labelled `family` and `multi` that searches the multi-pattern `lhs` with `applier`.
inline TensorRewrite multi_rewrite(
    std::string name, std::string_view family, std::string_view lhs,
    std::shared_ptr<const Applier<TensorNode, TensorAnalysis>> applier) {
  auto searcher = std::make_shared<MultiPatternSearcher<TensorNode, TensorAnalysis>>(
      MultiPattern<TensorNode>(lhs));
  return TensorRewrite(std::move(name), std::move(searcher), std::move(applier))
      .with_label(std::string(family))
      .with_label(std::string(kMultiLabel));
}

}  // namespace detail

/// `lhs => rhs` and `rhs => lhs`, named `name` and `name-rev` and labelled `family`, appended to
/// `out`: a bidirectional tensor rule, checked as every rule of the dialect (`tensor_rewrite`).
inline std::vector<TensorRewrite>& both(std::vector<TensorRewrite>& out, const std::string& name,
                                        std::string_view family, std::string_view lhs,
                                        std::string_view rhs) {
  out.push_back(tensor_rewrite(name, family, lhs, rhs));
  out.push_back(tensor_rewrite(name + "-rev", family, rhs, lhs));
  return out;
}

/// Builds a multi-pattern rule's right-hand side: one term for each of the two clause
/// variables (`first`, `second`), or false to apply nothing for this match.
using MultiRhs = std::function<bool(RightHandSide&, const TensorEGraph&, const Subst&,
                                    RightHandSide::Ref& first, RightHandSide::Ref& second)>;

/// A rule labelled `family` and `multi` over the two-clause multi-pattern `lhs` (as
/// `"?a = (...), ?b = (...)"`): for each match whose classes for `first_var` and `second_var`
/// differ (each unordered pair once), `build` writes a term for each, and the two are united
/// with those classes through `apply_checked` (so shapes are checked and no cycle is made).
inline TensorRewrite multi_rule(std::string name, std::string_view family, std::string_view lhs,
                                const char* first_var, const char* second_var, MultiRhs build) {
  const Var v1(first_var), v2(second_var);
  auto fn = [v1, v2, build = std::move(build)](TensorEGraph& egraph, Id,
                                               const Subst& subst) -> std::vector<Id> {
    const Id c1 = egraph.find(subst[v1]);
    const Id c2 = egraph.find(subst[v2]);
    if (!(c1 < c2)) return {};  // each unordered pair of distinct classes once
    RightHandSide rhs(egraph);
    RightHandSide::Ref first{0}, second{0};
    if (!build(rhs, egraph, subst, first, second)) return {};
    return apply_checked(egraph, rhs, {{c1, first}, {c2, second}});
  };
  return detail::multi_rewrite(std::move(name), family, lhs,
                               std::make_shared<FnApplier<TensorNode, TensorAnalysis>>(
                                   std::move(fn), std::vector<Var>{v1, v2}));
}

namespace detail {

/// The rank of `?var`'s tensor minus `from_end` equals the integer bound to `?axis`.
inline TensorCondition axis_from_end(std::string_view axis, std::string_view var,
                                     std::int64_t from_end) {
  const Var a(axis), v(var);
  return [a, v, from_end](const TensorEGraph& g, const Subst& s) {
    const TensorInfo& t = info_of(g, s, v);
    return info_of(g, s, a).value == static_cast<std::int64_t>(t.rank()) - from_end;
  };
}

/// The extent of `?var` along the axis bound to `?axis` equals the integer bound to `?n`.
inline TensorCondition extent_is(std::string_view var, std::string_view axis, std::string_view n) {
  const Var v(var), a(axis), k(n);
  return [v, a, k](const TensorEGraph& g, const Subst& s) {
    return dim(info_of(g, s, v), info_of(g, s, a).value) == info_of(g, s, k).value;
  };
}

/// The convolution of input `?x` with weight `?w` has one group.
inline TensorCondition one_group(std::string_view x, std::string_view w) {
  const Var xv(x), wv(w);
  return [xv, wv](const TensorEGraph& g, const Subst& s) {
    return dim(info_of(g, s, xv), 1) == dim(info_of(g, s, wv), 1);
  };
}

inline TensorCondition all_of(TensorCondition a, TensorCondition b) {
  return [a, b](const TensorEGraph& g, const Subst& s) { return a(g, s) && b(g, s); };
}

/// Whether every class bound to `vars` is weight-only (known before the run, so that what a
/// rule computes from them alone is precomputed and costs nothing).
inline bool all_weight_only(const TensorEGraph& g, const Subst& s,
                            std::initializer_list<const char*> vars) {
  return std::all_of(vars.begin(), vars.end(),
                     [&](const char* v) { return info_of(g, s, Var(v)).weight_only; });
}

/// Inference-mode batchnorm parameters `?s ?b ?m ?v` (scale, bias, mean, var), to fold into
/// the linear op before it: with k = s / sqrt(v + eps), batchnorm(y) = y·k + (b − m·k) per
/// channel. Both parts are computed by `batchnorm` itself on weight-only operands, so that eps
/// and the rounding are the batchnorm's own: zeros z = m − m, batchnorm(t, s, z, z, v) = t·k.
struct FoldedBatchNorm {
  Ref s, b, m, v, zeros;

  FoldedBatchNorm(RightHandSide& rhs, const Subst& subst)
      : s(rhs.cls(subst[Var("?s")])),
        b(rhs.cls(subst[Var("?b")])),
        m(rhs.cls(subst[Var("?m")])),
        v(rhs.cls(subst[Var("?v")])),
        zeros(rhs.op(Op::EwSub, {m, m})) {}

  /// `t` (channels on axis 1) times k per channel.
  Ref scaled(RightHandSide& rhs, Ref t) const {
    return rhs.op(Op::BatchNorm, {t, s, zeros, zeros, v});
  }

  /// `y` (channels on axis 1) plus the shift b − m·k, broadcast from [1, C, 1, ...] (a `y`
  /// of rank < 2 has no channel axis: the batchnorm of the shift is then ill-typed).
  Ref shifted(RightHandSide& rhs, Ref y) const {
    if (!rhs.ok()) return y;
    const Dims out = rhs.info(y).dims;
    Dims one(out.size(), 1);
    if (out.size() >= 2) one[1] = out[1];
    const Ref shift =
        rhs.op(Op::BatchNorm, {rhs.op(Op::Reshape, {rhs.ints(one), zeros}), s, b, m, v});
    return rhs.op(Op::EwAdd, {y, rhs.op(Op::Broadcast, {rhs.ints(out), shift})});
  }
};

}  // namespace detail

/// Single-pattern rules: elementwise algebra, scalar multiplication, transposes, matmul algebra,
/// activation fusion, concat/split commutations, matmul/conv with concatenated operands, 1x1
/// convolutions through average pooling, grouped-conv merging and the transformer extension.
/// See docs/dialect.md for the list.
inline std::vector<TensorRewrite> single_pattern_rules() {
  using detail::Ref;
  std::vector<TensorRewrite> r;

  // Elementwise algebra.
  r.push_back(tensor_rewrite("ewadd-comm", "ewise-algebra", "(ewadd ?x ?y)", "(ewadd ?y ?x)"));
  r.push_back(tensor_rewrite("ewmul-comm", "ewise-algebra", "(ewmul ?x ?y)", "(ewmul ?y ?x)"));
  both(r, "ewadd-assoc", "ewise-algebra", "(ewadd ?x (ewadd ?y ?z))", "(ewadd (ewadd ?x ?y) ?z)");
  both(r, "ewmul-assoc", "ewise-algebra", "(ewmul ?x (ewmul ?y ?z))", "(ewmul (ewmul ?x ?y) ?z)");
  both(r, "ewmul-distrib", "ewise-algebra", "(ewmul (ewadd ?x ?y) ?z)",
       "(ewadd (ewmul ?x ?z) (ewmul ?y ?z))");

  // Scalar multiplication.
  both(r, "smul-assoc", "scalar", "(smul (smul ?x ?y) ?w)", "(smul ?x (smul ?y ?w))");
  both(r, "smul-ewadd", "scalar", "(smul (ewadd ?x ?y) ?w)", "(ewadd (smul ?x ?w) (smul ?y ?w))");
  both(r, "smul-ewmul", "scalar", "(smul (ewmul ?x ?y) ?w)", "(ewmul ?x (smul ?y ?w))");
  both(r, "smul-matmul-rhs", "scalar", "(smul (matmul 0 ?x ?y) ?w)", "(matmul 0 ?x (smul ?y ?w))");
  both(r, "smul-matmul-lhs", "scalar", "(smul (matmul 0 ?x ?y) ?w)", "(matmul 0 (smul ?x ?w) ?y)");
  both(r, "smul-conv", "scalar", "(conv2d ?sh ?sw ?p 0 (smul ?x ?w) ?k)",
       "(conv2d ?sh ?sw ?p 0 ?x (smul ?k ?w))");
  both(r, "smul-transpose", "scalar", "(smul (transpose ?p ?x) ?w)", "(transpose ?p (smul ?x ?w))");

  // Transposes.
  both(r, "transpose-ewadd", "transpose", "(transpose ?p (ewadd ?x ?y))",
       "(ewadd (transpose ?p ?x) (transpose ?p ?y))");
  both(r, "transpose-ewmul", "transpose", "(transpose ?p (ewmul ?x ?y))",
       "(ewmul (transpose ?p ?x) (transpose ?p ?y))");
  for (const char* act : {"relu", "tanh", "sigmoid"})
    both(r, fmt::format("transpose-{}", act), "transpose",
         fmt::format("(transpose ?p ({} ?x))", act), fmt::format("({} (transpose ?p ?x))", act));
  r.push_back(tensor_rewrite("transpose-identity", "transpose", "(transpose ?p ?x)", "?x",
                             [p = Var("?p")](const TensorEGraph& g, const Subst& s) {
                               const Dims& perm = info_of(g, s, p).dims;
                               for (std::size_t i = 0; i < perm.size(); ++i)
                                 if (perm[i] != static_cast<std::int64_t>(i)) return false;
                               return true;
                             }));
  both(r, "transpose-matmul", "transpose", "(transpose (ints 1 0) (matmul 0 ?x ?y))",
       "(matmul 0 (transpose (ints 1 0) ?y) (transpose (ints 1 0) ?x))");
  both(r, "transpose-batch-matmul", "transpose", "(transpose (ints 0 2 1) (matmul 0 ?x ?y))",
       "(matmul 0 (transpose (ints 0 2 1) ?y) (transpose (ints 0 2 1) ?x))");
  r.push_back(tensor_rewrite(
      "transpose-compose", "transpose", "(transpose ?p (transpose ?q ?x))",
      [p = Var("?p"), q = Var("?q"), x = Var("?x")](RightHandSide& rhs, const TensorEGraph& g,
                                                    const Subst& s) -> std::optional<detail::Ref> {
        const Dims& outer = info_of(g, s, p).dims;
        const Dims& inner = info_of(g, s, q).dims;
        if (outer.size() != inner.size()) return std::nullopt;
        Dims composed;
        bool identity = true;
        for (std::size_t i = 0; i < outer.size(); ++i) {
          if (outer[i] < 0 || outer[i] >= static_cast<std::int64_t>(inner.size()))
            return std::nullopt;
          composed.push_back(inner[static_cast<std::size_t>(outer[i])]);
          identity = identity && composed.back() == static_cast<std::int64_t>(i);
        }
        if (identity) return rhs.cls(s[x]);
        return rhs.op(Op::Transpose, {rhs.ints(composed), rhs.cls(s[x])});
      },
      {Var("?p"), Var("?q"), Var("?x")}));

  // Matmul algebra.
  both(r, "matmul-assoc", "matmul", "(matmul 0 ?x (matmul 0 ?y ?z))",
       "(matmul 0 (matmul 0 ?x ?y) ?z)");
  both(r, "matmul-distrib-rhs", "matmul", "(matmul 0 ?x (ewadd ?y ?z))",
       "(ewadd (matmul 0 ?x ?y) (matmul 0 ?x ?z))");
  both(r, "matmul-distrib-lhs", "matmul", "(matmul 0 (ewadd ?x ?y) ?z)",
       "(ewadd (matmul 0 ?x ?z) (matmul 0 ?y ?z))");

  // Activation fusion (TASO's activation modes: 1 sigmoid, 2 relu, 3 tanh).
  for (auto [act, code] : {std::pair{"sigmoid", 1}, std::pair{"relu", 2}, std::pair{"tanh", 3}}) {
    both(r, fmt::format("fuse-{}-matmul", act), "activation-fusion",
         fmt::format("({} (matmul 0 ?x ?y))", act), fmt::format("(matmul {} ?x ?y)", code));
    both(r, fmt::format("fuse-{}-conv", act), "activation-fusion",
         fmt::format("({} (conv2d ?sh ?sw ?p 0 ?x ?w))", act),
         fmt::format("(conv2d ?sh ?sw ?p {} ?x ?w)", code));
  }
  for (const char* pool : {"poolmax", "poolavg"})
    both(r, fmt::format("fuse-relu-{}", pool), "activation-fusion",
         fmt::format("(relu ({} ?kh ?kw ?sh ?sw ?p 0 ?x))", pool),
         fmt::format("({} ?kh ?kw ?sh ?sw ?p 2 ?x)", pool));

  // Relu algebra: idempotent, and commutes with max pooling (relu is monotone).
  r.push_back(tensor_rewrite("relu-idempotent", "relu-algebra", "(relu (relu ?x))", "(relu ?x)"));
  both(r, "relu-poolmax", "relu-algebra", "(poolmax ?kh ?kw ?sh ?sw ?p 0 (relu ?x))",
       "(relu (poolmax ?kh ?kw ?sh ?sw ?p 0 ?x))");

  // Concat and split.
  r.push_back(tensor_rewrite("split0-concat", "concat",
                             "(split_0 (split ?ax ?n (concat ?ax ?x ?y)))", "?x",
                             detail::extent_is("?x", "?ax", "?n")));
  r.push_back(tensor_rewrite("split1-concat", "concat",
                             "(split_1 (split ?ax ?n (concat ?ax ?x ?y)))", "?y",
                             detail::extent_is("?x", "?ax", "?n")));
  r.push_back(tensor_rewrite("concat-splits", "concat",
                             "(concat ?ax (split_0 (split ?ax ?n ?x)) (split_1 (split ?ax ?n ?x)))",
                             "?x"));
  both(r, "concat-ewadd", "concat", "(ewadd (concat ?ax ?x ?y) (concat ?ax ?z ?w))",
       "(concat ?ax (ewadd ?x ?z) (ewadd ?y ?w))");
  both(r, "concat-ewmul", "concat", "(ewmul (concat ?ax ?x ?y) (concat ?ax ?z ?w))",
       "(concat ?ax (ewmul ?x ?z) (ewmul ?y ?w))");
  for (const char* act : {"relu", "tanh", "sigmoid", "gelu", "exp"})
    both(r, fmt::format("concat-{}", act), "concat", fmt::format("({} (concat ?ax ?x ?y))", act),
         fmt::format("(concat ?ax ({} ?x) ({} ?y))", act, act));
  both(r, "concat-smul", "concat", "(smul (concat ?ax ?x ?y) ?w)",
       "(concat ?ax (smul ?x ?w) (smul ?y ?w))");
  both(r, "concat-flatten-left", "concat", "(concat ?ax (concat ?ax ?x ?y) ?z)",
       "(concat ?ax ?x ?y ?z)");
  both(r, "concat-flatten-right", "concat", "(concat ?ax ?x (concat ?ax ?y ?z))",
       "(concat ?ax ?x ?y ?z)");
  {
    // A 2x2 block matrix concatenated by rows then columns, or by columns then rows.
    const TensorCondition distinct = [a = Var("?a"), b = Var("?b")](const TensorEGraph& g,
                                                                    const Subst& s) {
      return info_of(g, s, a).value != info_of(g, s, b).value;
    };
    r.push_back(tensor_rewrite("concat-blocks", "concat",
                               "(concat ?a (concat ?b ?x ?y) (concat ?b ?z ?w))",
                               "(concat ?b (concat ?a ?x ?z) (concat ?a ?y ?w))", distinct));
  }
  for (const char* pool : {"poolmax", "poolavg"})
    both(r, fmt::format("concat-{}", pool), "concat",
         fmt::format("({} ?kh ?kw ?sh ?sw ?p ?a (concat 1 ?x ?y))", pool),
         fmt::format("(concat 1 ({0} ?kh ?kw ?sh ?sw ?p ?a ?x) ({0} ?kh ?kw ?sh ?sw ?p ?a ?y))",
                     pool));
  both(r, "concat-conv-batch", "concat", "(conv2d ?sh ?sw ?p ?a (concat 0 ?x ?y) ?w)",
       "(concat 0 (conv2d ?sh ?sw ?p ?a ?x ?w) (conv2d ?sh ?sw ?p ?a ?y ?w))");

  // Matmul with concatenated operands.
  {
    const auto last = detail::axis_from_end("?ax", "?y", 1);
    const auto rows = detail::axis_from_end("?ax", "?x", 2);
    r.push_back(tensor_rewrite("matmul-concat-rhs", "matmul-concat",
                               "(concat ?ax (matmul ?a ?x ?y) (matmul ?a ?x ?z))",
                               "(matmul ?a ?x (concat ?ax ?y ?z))", last));
    r.push_back(tensor_rewrite("matmul-concat-rhs-rev", "matmul-concat",
                               "(matmul ?a ?x (concat ?ax ?y ?z))",
                               "(concat ?ax (matmul ?a ?x ?y) (matmul ?a ?x ?z))", last));
    r.push_back(tensor_rewrite("matmul-concat-lhs", "matmul-concat",
                               "(concat ?ax (matmul ?a ?x ?z) (matmul ?a ?y ?z))",
                               "(matmul ?a (concat ?ax ?x ?y) ?z)", rows));
    r.push_back(tensor_rewrite("matmul-concat-lhs-rev", "matmul-concat",
                               "(matmul ?a (concat ?ax ?x ?y) ?z)",
                               "(concat ?ax (matmul ?a ?x ?z) (matmul ?a ?y ?z))", rows));
    const auto inner =
        detail::all_of(detail::axis_from_end("?k", "?x", 1), detail::axis_from_end("?j", "?y", 2));
    r.push_back(tensor_rewrite("matmul-concat-inner", "matmul-concat",
                               "(matmul 0 (concat ?k ?x ?z) (concat ?j ?y ?w))",
                               "(ewadd (matmul 0 ?x ?y) (matmul 0 ?z ?w))", inner));
    r.push_back(tensor_rewrite(
        "matmul-concat-inner-rev", "matmul-concat", "(ewadd (matmul 0 ?x ?y) (matmul 0 ?z ?w))",
        [x = Var("?x"), y = Var("?y"), z = Var("?z"), w = Var("?w")](
            RightHandSide& rhs, const TensorEGraph& g,
            const Subst& s) -> std::optional<detail::Ref> {
          const auto rank = static_cast<std::int64_t>(info_of(g, s, x).rank());
          const Ref lhs = rhs.op(Op::Concat, {rhs.num(rank - 1), rhs.cls(s[x]), rhs.cls(s[z])});
          const Ref right = rhs.op(Op::Concat, {rhs.num(rank - 2), rhs.cls(s[y]), rhs.cls(s[w])});
          return rhs.op(Op::MatMul, {rhs.num(0), lhs, right});
        },
        {Var("?x"), Var("?y"), Var("?z"), Var("?w")}));
  }

  // Convolution: concatenated weights, linearity.
  both(r, "conv-concat-weights", "conv-concat",
       "(concat 1 (conv2d ?sh ?sw ?p ?a ?x ?w1) (conv2d ?sh ?sw ?p ?a ?x ?w2))",
       "(conv2d ?sh ?sw ?p ?a ?x (concat 0 ?w1 ?w2))");
  r.back() = r.back().when([c = detail::one_group("?x", "?w1")](
                               TensorEGraph& g, Id, const Subst& s) { return c(g, s); });
  r[r.size() - 2] =
      r[r.size() - 2].when([c = detail::one_group("?x", "?w1")](
                               TensorEGraph& g, Id, const Subst& s) { return c(g, s); });
  both(r, "conv-linear-weight", "conv-concat", "(conv2d ?sh ?sw ?p 0 ?x (ewadd ?w1 ?w2))",
       "(ewadd (conv2d ?sh ?sw ?p 0 ?x ?w1) (conv2d ?sh ?sw ?p 0 ?x ?w2))");
  both(r, "conv-linear-input", "conv-concat", "(conv2d ?sh ?sw ?p 0 (ewadd ?x ?y) ?w)",
       "(ewadd (conv2d ?sh ?sw ?p 0 ?x ?w) (conv2d ?sh ?sw ?p 0 ?y ?w))");
  r.push_back(tensor_rewrite("conv-concat-channels", "conv-concat",
                             "(conv2d ?sh ?sw ?p 0 (concat 1 ?x ?y) (concat 1 ?w1 ?w2))",
                             "(ewadd (conv2d ?sh ?sw ?p 0 ?x ?w1) (conv2d ?sh ?sw ?p 0 ?y ?w2))",
                             detail::one_group("?x", "?w1")));

  // A 1x1 convolution of stride 1 maps each pixel's channels by the same matrix, and average
  // pooling mixes pixels with weights that depend on the position alone (the divisor counts the
  // window's positions inside the input), the same in every channel: the two commute. Pooling
  // after the convolution pools its output channels instead of its input channels (Inception's
  // pool branches: 192-768 channels pooled, then reduced to 32-192). The activation stays last.
  {
    const TensorCondition pointwise = [w = Var("?w")](const TensorEGraph& g, const Subst& s) {
      const TensorInfo& k = info_of(g, s, w);
      return k.rank() == 4 && k.dims[2] == 1 && k.dims[3] == 1;
    };
    const char* conv_of_pool = "(conv2d 1 1 ?p ?a (poolavg ?kh ?kw ?sh ?sw ?q 0 ?x) ?w)";
    const char* pool_of_conv = "(poolavg ?kh ?kw ?sh ?sw ?q ?a (conv2d 1 1 ?p 0 ?x ?w))";
    r.push_back(
        tensor_rewrite("conv1x1-poolavg", "conv-pool", conv_of_pool, pool_of_conv, pointwise));
    r.push_back(
        tensor_rewrite("conv1x1-poolavg-rev", "conv-pool", pool_of_conv, conv_of_pool, pointwise));
  }

  // Grouped convolutions: merge groups `count` at a time (TASO's merge_gconv).
  for (std::int64_t count : {2, 4, 8, 16, 32})
    r.push_back(tensor_rewrite(
        fmt::format("gconv-merge-{}", count), "gconv", "(conv2d ?sh ?sw ?p ?a ?x ?w)",
        [count, sh = Var("?sh"), sw = Var("?sw"), p = Var("?p"), a = Var("?a"), x = Var("?x"),
         w = Var("?w")](RightHandSide& rhs, const TensorEGraph& g,
                        const Subst& s) -> std::optional<detail::Ref> {
          const std::int64_t groups =
              detail::dim(info_of(g, s, x), 1) / detail::dim(info_of(g, s, w), 1);
          if (groups < count || groups % count != 0) return std::nullopt;
          const Ref merged = rhs.op(Op::Merge, {rhs.num(groups), rhs.num(count), rhs.cls(s[w])});
          return rhs.op(Op::Conv2d, {rhs.cls(s[sh]), rhs.cls(s[sw]), rhs.cls(s[p]), rhs.cls(s[a]),
                                     rhs.cls(s[x]), merged});
        },
        {Var("?sh"), Var("?sw"), Var("?p"), Var("?a"), Var("?x"), Var("?w")}));

  // Inference folding: a batchnorm after a convolution or a product (no fused activation: a
  // batchnorm after relu is not linear in the product) becomes the product of scaled weights
  // plus a per-channel shift, and one through a weight-only addend (a conv's or a Gemm's bias)
  // reaches that product. Every new weight term is weight-only, so precomputed (the deployer's
  // Conv+BN folding).
  {
    r.push_back(tensor_rewrite(
        "fold-batchnorm-conv", "fold", "(batchnorm (conv2d ?sh ?sw ?p 0 ?x ?w) ?s ?b ?m ?v)",
        [](RightHandSide& rhs, const TensorEGraph& g, const Subst& s) -> std::optional<Ref> {
          if (!detail::all_weight_only(g, s, {"?w", "?s", "?b", "?m", "?v"})) return std::nullopt;
          const Dims w = info_of(g, s, Var("?w")).dims;
          if (w.size() != 4) return std::nullopt;
          const detail::FoldedBatchNorm bn(rhs, s);
          // The kernel as [1, C_out, C_in/g·kh·kw]: its output channels on axis 1.
          const Ref rows =
              rhs.op(Op::Reshape, {rhs.ints({1, w[0], w[1] * w[2] * w[3]}), rhs.cls(s[Var("?w")])});
          const Ref kernel = rhs.op(Op::Reshape, {rhs.ints(w), bn.scaled(rhs, rows)});
          const Ref conv = rhs.op(
              Op::Conv2d, {rhs.cls(s[Var("?sh")]), rhs.cls(s[Var("?sw")]), rhs.cls(s[Var("?p")]),
                           rhs.num(0), rhs.cls(s[Var("?x")]), kernel});
          return bn.shifted(rhs, conv);
        },
        {Var("?sh"), Var("?sw"), Var("?p"), Var("?x"), Var("?w"), Var("?s"), Var("?b"), Var("?m"),
         Var("?v")}));
    // A product [M, K] x [K, N]: the batchnorm's channels are the N output features, the
    // weight's columns (axis 1 of both).
    r.push_back(tensor_rewrite(
        "fold-batchnorm-matmul", "fold", "(batchnorm (matmul 0 ?x ?w) ?s ?b ?m ?v)",
        [](RightHandSide& rhs, const TensorEGraph& g, const Subst& s) -> std::optional<Ref> {
          if (!detail::all_weight_only(g, s, {"?w", "?s", "?b", "?m", "?v"})) return std::nullopt;
          if (info_of(g, s, Var("?x")).rank() != 2 || info_of(g, s, Var("?w")).rank() != 2)
            return std::nullopt;
          const detail::FoldedBatchNorm bn(rhs, s);
          const Ref product = rhs.op(Op::MatMul, {rhs.num(0), rhs.cls(s[Var("?x")]),
                                                  bn.scaled(rhs, rhs.cls(s[Var("?w")]))});
          return bn.shifted(rhs, product);
        },
        {Var("?x"), Var("?w"), Var("?s"), Var("?b"), Var("?m"), Var("?v")}));
    r.push_back(tensor_rewrite(
        "fold-batchnorm-ewadd", "fold", "(batchnorm (ewadd ?y ?z) ?s ?b ?m ?v)",
        "(ewadd (batchnorm ?y ?s ?b ?m ?v) (batchnorm ?z ?s (ewsub ?m ?m) (ewsub ?m ?m) ?v))",
        [](const TensorEGraph& g, const Subst& s) {
          return detail::all_weight_only(g, s, {"?z", "?s", "?b", "?m", "?v"});
        }));
  }

  // Transformer extension.
  r.push_back(tensor_rewrite("reshape-reshape", "transformer", "(reshape ?s (reshape ?t ?x))",
                             "(reshape ?s ?x)"));
  r.push_back(
      tensor_rewrite("reshape-identity", "transformer", "(reshape ?s ?x)", "?x",
                     [s_ = Var("?s"), x = Var("?x")](const TensorEGraph& g, const Subst& s) {
                       return info_of(g, s, s_).dims == info_of(g, s, x).dims;
                     }));
  r.push_back(tensor_rewrite("broadcast-broadcast", "transformer",
                             "(broadcast ?s (broadcast ?t ?x))", "(broadcast ?s ?x)"));
  r.push_back(
      tensor_rewrite("broadcast-identity", "transformer", "(broadcast ?s ?x)", "?x",
                     [s_ = Var("?s"), x = Var("?x")](const TensorEGraph& g, const Subst& s) {
                       return info_of(g, s, s_).dims == info_of(g, s, x).dims;
                     }));
  both(r, "reduce-sum-ewadd", "transformer", "(reduce_sum ?ax (ewadd ?x ?y))",
       "(ewadd (reduce_sum ?ax ?x) (reduce_sum ?ax ?y))");
  both(r, "reduce-sum-smul", "transformer", "(reduce_sum ?ax (smul ?x ?w))",
       "(smul (reduce_sum ?ax ?x) ?w)");
  r.push_back(tensor_rewrite("slice-concat", "transformer", "(slice ?ax 0 ?n (concat ?ax ?x ?y))",
                             "?x", detail::extent_is("?x", "?ax", "?n")));
  return r;
}

/// Two-output rules (TENSAT's multi-pattern rules): two ops sharing an operand become one op
/// on concatenated operands followed by a split. Labelled `multi`.
inline std::vector<TensorRewrite> multi_pattern_rules() {
  using detail::Ref;
  std::vector<TensorRewrite> r;
  // x @ y and x @ z: x @ [y z], split by columns.
  constexpr std::string_view shared_lhs = "?m1 = (matmul ?a ?x ?y), ?m2 = (matmul ?a ?x ?z)";
  r.push_back(multi_rule(
      "matmul-share-lhs", "multi-matmul", shared_lhs, "?m1", "?m2",
      [a = Var("?a"), x = Var("?x"), y = Var("?y"), z = Var("?z")](
          RightHandSide& rhs, const TensorEGraph& g, const Subst& s, Ref& first, Ref& second) {
        const TensorInfo& yi = info_of(g, s, y);
        const auto axis = static_cast<std::int64_t>(yi.rank()) - 1;
        const Ref cat = rhs.op(Op::Concat, {rhs.num(axis), rhs.cls(s[y]), rhs.cls(s[z])});
        const Ref mm = rhs.op(Op::MatMul, {rhs.cls(s[a]), rhs.cls(s[x]), cat});
        return detail::merged_pair(rhs, mm, axis, detail::dim(yi, axis), first, second);
      }));
  // Every product of x at once: x @ [y z ...], split part by part (see SharedLhsMatMulMerge).
  r.push_back(detail::multi_rewrite("matmul-share-lhs-all", "multi-matmul", shared_lhs,
                                    std::make_shared<detail::SharedLhsMatMulMerge>()));
  // Every sum x @ w_i + h @ u_i of the same x and h at once: [x h] @ [w_1 ... w_n; u_1 ... u_n],
  // split by columns (see SharedOperandsSumMerge).
  r.push_back(detail::multi_rewrite("matmul-sum-share-all", "multi-matmul",
                                    "?m1 = (ewadd (matmul 0 ?x ?w1) (matmul 0 ?h ?u1)), ?m2 = "
                                    "(ewadd (matmul 0 ?x ?w2) (matmul 0 ?h ?u2))",
                                    std::make_shared<detail::SharedOperandsSumMerge>()));
  // x @ w and y @ w: [x; y] @ w, split by rows.
  r.push_back(multi_rule(
      "matmul-share-rhs", "multi-matmul", "?m1 = (matmul ?a ?x ?w), ?m2 = (matmul ?a ?y ?w)", "?m1",
      "?m2",
      [a = Var("?a"), x = Var("?x"), y = Var("?y"), w = Var("?w")](
          RightHandSide& rhs, const TensorEGraph& g, const Subst& s, Ref& first, Ref& second) {
        const TensorInfo& xi = info_of(g, s, x);
        const auto axis = static_cast<std::int64_t>(xi.rank()) - 2;
        const Ref cat = rhs.op(Op::Concat, {rhs.num(axis), rhs.cls(s[x]), rhs.cls(s[y])});
        const Ref mm = rhs.op(Op::MatMul, {rhs.cls(s[a]), cat, rhs.cls(s[w])});
        return detail::merged_pair(rhs, mm, axis, detail::dim(xi, axis), first, second);
      }));
  // Two convolutions of one input with the same strides, padding and activation: one conv with
  // the weights concatenated by output channel, split by channel. Kernels of different odd sizes
  // are first enlarged to the larger (stride 1, same padding: the centred kernel sees the same
  // window).
  r.push_back(multi_rule(
      "conv-share-input", "multi-conv",
      "?c1 = (conv2d ?sh ?sw ?p ?a ?x ?w1), ?c2 = (conv2d ?sh ?sw ?p ?a ?x ?w2)", "?c1", "?c2",
      [sh = Var("?sh"), sw = Var("?sw"), p = Var("?p"), a = Var("?a"), x = Var("?x"),
       w1 = Var("?w1"), w2 = Var("?w2")](RightHandSide& rhs, const TensorEGraph& g, const Subst& s,
                                         Ref& first, Ref& second) {
        const TensorInfo& xi = info_of(g, s, x);
        const TensorInfo& a1 = info_of(g, s, w1);
        const TensorInfo& a2 = info_of(g, s, w2);
        if (a1.rank() != 4 || a2.rank() != 4 || a1.dims[1] != xi.dims[1] ||
            a2.dims[1] != xi.dims[1])
          return false;
        Ref k1 = rhs.cls(s[w1]);
        Ref k2 = rhs.cls(s[w2]);
        if (a1.dims[2] != a2.dims[2] || a1.dims[3] != a2.dims[3]) {
          const bool stride_one = info_of(g, s, sh).value == 1 && info_of(g, s, sw).value == 1;
          if (!stride_one || info_of(g, s, p).value != static_cast<std::int64_t>(Padding::Same))
            return false;
          for (std::size_t i = 2; i < 4; ++i)
            if (a1.dims[i] % 2 == 0 || a2.dims[i] % 2 == 0) return false;
          const bool first_smaller = a1.dims[2] <= a2.dims[2] && a1.dims[3] <= a2.dims[3];
          const bool second_smaller = a2.dims[2] <= a1.dims[2] && a2.dims[3] <= a1.dims[3];
          if (first_smaller)
            k1 = rhs.op(Op::Enlarge, {k1, k2});
          else if (second_smaller)
            k2 = rhs.op(Op::Enlarge, {k2, k1});
          else
            return false;
        }
        const Ref cat = rhs.op(Op::Concat, {rhs.num(0), k1, k2});
        const Ref conv = rhs.op(Op::Conv2d, {rhs.cls(s[sh]), rhs.cls(s[sw]), rhs.cls(s[p]),
                                             rhs.cls(s[a]), rhs.cls(s[x]), cat});
        return detail::merged_pair(rhs, conv, 1, a1.dims[0], first, second);
      }));
  // Two relus of tensors of one shape: one relu of their concatenation.
  r.push_back(multi_rule(
      "relu-pair", "multi-relu", "?r1 = (relu ?x), ?r2 = (relu ?y)", "?r1", "?r2",
      [x = Var("?x"), y = Var("?y")](RightHandSide& rhs, const TensorEGraph& g, const Subst& s,
                                     Ref& first, Ref& second) {
        const TensorInfo& xi = info_of(g, s, x);
        if (xi.rank() == 0 || xi.dims != info_of(g, s, y).dims) return false;
        const Ref cat = rhs.op(Op::Concat, {rhs.num(0), rhs.cls(s[x]), rhs.cls(s[y])});
        return detail::merged_pair(rhs, rhs.op(Op::Relu, {cat}), 0, xi.dims[0], first, second);
      }));
  return r;
}

/// The label of the layout rules.
inline constexpr std::string_view kLayoutLabel = "layout";

/// Physical-layout rules (family `layout`), the e-graph form of layout assignment (XLA's
/// layout assignment pass, onnxruntime's NHWC transformer): each convolution may run on a
/// channels_last copy of its input (`conv-channels-last`); a relayout, to either layout, moves
/// through the operators that read any layout (activations, elementwise ops, convolutions,
/// pooling, batchnorm, concats of two to four operands) in both directions; and a relayout of a
/// relayout, or to the layout a tensor already has, is the tensor itself (the shape check keeps
/// only the instances where the layouts agree). Together they let extraction keep a whole chain
/// of operators channels_last with one relayout at each end, where a device profile says
/// convolutions run natively channels_last (`DeviceProfile::conv_layout`). Not in
/// `all_rules()`: `optimize` adds them when the profile asks for them (`OptimizeOptions::layouts`).
inline std::vector<TensorRewrite> layout_rules() {
  std::vector<TensorRewrite> r;
  const std::string family(kLayoutLabel);
  r.push_back(tensor_rewrite(
      "conv-channels-last", family, "(conv2d ?sh ?sw ?p ?a ?x ?w)",
      "(relayout contiguous (conv2d ?sh ?sw ?p ?a (relayout channels_last ?x) ?w))"));
  r.push_back(tensor_rewrite("relayout-roundtrip", family, "(relayout ?l (relayout ?m ?x))", "?x"));
  r.push_back(tensor_rewrite("relayout-identity", family, "(relayout ?l ?x)", "?x"));
  for (const char* op : {"relu", "tanh", "sigmoid"})
    both(r, fmt::format("relayout-{}", op), family, fmt::format("(relayout ?l ({} ?x))", op),
         fmt::format("({} (relayout ?l ?x))", op));
  for (const char* op : {"ewadd", "ewmul"})
    both(r, fmt::format("relayout-{}", op), family, fmt::format("(relayout ?l ({} ?x ?y))", op),
         fmt::format("({} (relayout ?l ?x) (relayout ?l ?y))", op));
  both(r, "relayout-conv2d", family, "(relayout ?l (conv2d ?sh ?sw ?p ?a ?x ?w))",
       "(conv2d ?sh ?sw ?p ?a (relayout ?l ?x) ?w)");
  for (const char* op : {"poolmax", "poolavg"})
    both(r, fmt::format("relayout-{}", op), family,
         fmt::format("(relayout ?l ({} ?kh ?kw ?sh ?sw ?p ?a ?x))", op),
         fmt::format("({} ?kh ?kw ?sh ?sw ?p ?a (relayout ?l ?x))", op));
  both(r, "relayout-batchnorm", family, "(relayout ?l (batchnorm ?x ?s ?b ?m ?v))",
       "(batchnorm (relayout ?l ?x) ?s ?b ?m ?v)");
  const char* const operands[] = {"?x", "?y", "?z", "?u"};
  for (std::size_t n = 2; n <= 4; ++n) {
    std::string plain, moved;
    for (std::size_t i = 0; i < n; ++i) {
      plain += fmt::format(" {}", operands[i]);
      moved += fmt::format(" (relayout ?l {})", operands[i]);
    }
    both(r, fmt::format("relayout-concat{}", n), family,
         fmt::format("(relayout ?l (concat ?ax{}))", plain), fmt::format("(concat ?ax{})", moved));
  }
  return r;
}

/// The label of the Winograd rule.
inline constexpr std::string_view kWinogradLabel = "winograd";

/// Winograd F(2x2, 3x3) (Lavin & Gray, CVPR 2016), family `winograd`: a 3x3 stride-1
/// convolution of one group becomes `wino_conv2d` of its transformed kernel (`wino_weight`): 16
/// products over 4x4 input tiles, 2.25x fewer multiplies than the direct convolution's 36 per
/// 2x2 outputs. The kernel transform is weight-only wherever the kernel is, so it is
/// precomputed, as TASO precomputes `enlarge` and `merge`. One direction: a transformed weight
/// does not name its kernel. Not in `all_rules()`: `optimize` adds it when the device profile's
/// convolutions run directly (`DeviceProfile::winograd`: the reference executor's im2col
/// products); cuDNN chooses Winograd itself inside `conv2d`.
inline std::vector<TensorRewrite> winograd_rules() {
  const TensorCondition three_by_three = [w = Var("?w")](const TensorEGraph& g, const Subst& s) {
    const TensorInfo& k = info_of(g, s, w);
    return k.rank() == 4 && k.dims[2] == 3 && k.dims[3] == 3;
  };
  // At least two tiles a row and a column: with one (an output of 2x2 or less) the transforms
  // run a tile at a time and the 16 products are matrix-vector products over u, 16/9 of the
  // filter's bytes, slower than the direct convolution (rules.md, the Winograd rule).
  const TensorCondition several_tiles = [x = Var("?x"), p = Var("?p")](const TensorEGraph& g,
                                                                       const Subst& s) {
    const TensorInfo& in = info_of(g, s, x);
    if (in.rank() != 4) return false;
    const std::int64_t shrink =
        info_of(g, s, p).value == static_cast<std::int64_t>(Padding::Same) ? 0 : 2;
    return in.dims[2] - shrink >= 3 && in.dims[3] - shrink >= 3;
  };
  std::vector<TensorRewrite> r;
  r.push_back(tensor_rewrite("conv3x3-winograd", kWinogradLabel, "(conv2d 1 1 ?p ?a ?x ?w)",
                             "(wino_conv2d ?p ?a ?x (wino_weight ?w))",
                             detail::all_of(detail::all_of(three_by_three, several_tiles),
                                            detail::one_group("?x", "?w"))));
  return r;
}

/// Every rule: `single_pattern_rules()` then `multi_pattern_rules()`.
inline std::vector<TensorRewrite> all_rules() {
  std::vector<TensorRewrite> r = single_pattern_rules();
  for (auto& m : multi_pattern_rules()) r.push_back(std::move(m));
  return r;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_RULES_H
