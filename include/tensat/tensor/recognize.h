// Recognition rules: operators that exporters spell out as chains of small ops (LayerNorm,
// GELU, Swish, hard-swish), found again from the chain and its constants.
#ifndef TENSAT_TENSOR_RECOGNIZE_H
#define TENSAT_TENSOR_RECOGNIZE_H

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensat/tensor/rules.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The label of the recognition rules.
inline constexpr std::string_view kRecognizeLabel = "recognize";

namespace detail {

/// The value of the `(scalar v)` in the class bound to `var`, if it has one.
[[nodiscard]] inline std::optional<float> scalar_value(const TensorEGraph& g, const Subst& s,
                                                       const Var& var) {
  std::optional<float> out;
  g.for_each_node(s[var], [&](const TensorNode& n) {
    if (!out && n.op() == Op::Scalar) out = scalar_of_info(g[n.children()[0]].data);
  });
  return out;
}

/// The class bound to `var` holds a scalar within `rel` (relative) of `want`: the constants an
/// exporter writes in float32, or rounded to fewer digits.
inline TensorCondition scalar_near(std::string_view var, double want, double rel = 1e-5) {
  const Var v(var);
  return [v, want, rel](const TensorEGraph& g, const Subst& s) {
    const std::optional<float> k = scalar_value(g, s, v);
    return k && std::fabs(static_cast<double>(*k) - want) <= rel * std::fabs(want);
  };
}

/// `?h`, a weight-only tensor that its broadcast to `?x`'s shape repeats along every axis but
/// the last, as [D] (D = `?x`'s last extent); nullopt if it is not one.
[[nodiscard]] inline std::optional<Ref> last_axis_vector(RightHandSide& rhs, const TensorEGraph& g,
                                                         const Subst& s, const char* h,
                                                         const char* x) {
  const TensorInfo& hi = info_of(g, s, Var(h));
  const TensorInfo& xi = info_of(g, s, Var(x));
  if (!hi.weight_only || xi.rank() == 0 || hi.rank() > xi.rank()) return std::nullopt;
  const std::int64_t d = xi.dims.back();
  for (std::size_t k = 0; k + 1 < hi.rank(); ++k)
    if (hi.dims[k] != 1) return std::nullopt;
  if (hi.rank() == 0 || (hi.dims.back() != d && hi.dims.back() != 1)) return std::nullopt;
  Ref v = rhs.cls(s[Var(h)]);
  if (hi.rank() != 1) v = rhs.op(Op::Reshape, {rhs.ints({hi.dims.back()}), v});
  if (hi.dims.back() != d) v = rhs.op(Op::Broadcast, {rhs.ints({d}), v});
  return v;
}

}  // namespace detail

/// Recognition rules (family `recognize`): operators that exporters spell out as chains of
/// small ops, found again from the chain and its constants (`scalar`s), as onnxruntime's
/// LayerNormFusion and GeluFusion find them, so that extraction can run one kernel instead:
///
/// - `layernorm-recognize` / `layernorm-recognize-square`: (x − mean(x)) / sqrt(mean((x −
///   mean(x))²) + eps) over the last axis, the square as `Pow 2` or as a product (`-1d`: a
///   rank-1 x, whose eps needs no broadcast), becomes `(layernorm x 1 0 eps)`; `layernorm-scale`
///   and `layernorm-shift` take a following product and sum with a weight-only [D] vector
///   (PyTorch's gamma and beta) into its gamma and beta.
/// - `gelu-recognize-tanh`: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's `gelu_new`,
///   becomes `(gelu x)` (the dialect's GELU is this form); `gelu-recognize-erf` and
///   `-erf-half-first`: x·(1 + erf(x/√2))·0.5, PyTorch's `F.gelu`, becomes `(gelu_erf x)`.
/// - `layernorm-recognize-reciprocal` and `-rsqrt-pow` (each also `-square`): TensorFlow's
///   spellings, the centred value times 1/sqrt(variance + eps) or (variance + eps)^−0.5.
/// - `softmax-recognize` and `-unshifted`: exp(x − max(x)) / sum(exp(x − max(x))), or without
///   the max, over one axis, becomes `(softmax axis x)`.
/// - `silu-recognize`: x·sigmoid(x) becomes `(silu x)`; `hard-swish-recognize` and `-clip6`:
///   x·clip(x/6 + 1/2, 0, 1) and x·clip(x + 3, 0, 6)/6 become `(hard_swish x)`.
///
/// Commuted operands (`0.5·x` as `x·0.5`) are the elementwise algebra rules' business. Not in
/// `all_rules()` (the instance search of `find_rule_instances` cannot build their left-hand
/// sides): `optimize` adds them (`OptimizeOptions::recognize`).
inline std::vector<TensorRewrite> recognition_rules() {
  using detail::Ref;
  std::vector<TensorRewrite> r;
  const std::string family(kRecognizeLabel);
  const std::string mean = "(broadcast ?d (reshape ?k (reduce_mean ?a ?x)))";
  const std::string centred = "(ewsub ?x " + mean + ")";
  // The eps is broadcast to the variance's shape, unless it has that shape ([1]: a rank-1 x).
  const auto normalized = [&](const std::string& square, bool broadcast_eps) {
    return "(ewdiv " + centred + " (broadcast ?d (sqrt (ewadd (reshape ?k (reduce_mean ?a " +
           square + ")) " + (broadcast_eps ? "(broadcast ?k ?e)" : "?e") + "))))";
  };
  const auto to_layernorm = [](RightHandSide& rhs, const TensorEGraph& g,
                               const Subst& s) -> std::optional<Ref> {
    const TensorInfo& x = info_of(g, s, Var("?x"));
    const TensorInfo& e = info_of(g, s, Var("?e"));
    if (x.rank() == 0 || info_of(g, s, Var("?a")).value != static_cast<std::int64_t>(x.rank()) - 1)
      return std::nullopt;
    if (!e.weight_only || e.elements() != 1) return std::nullopt;
    const Dims last{x.dims.back()};
    const Ref ones = rhs.op(Op::Broadcast, {rhs.ints(last), rhs.op(Op::Scalar, {rhs.num(1)})});
    const Ref zeros = rhs.op(Op::Broadcast, {rhs.ints(last), rhs.op(Op::Scalar, {rhs.num(0)})});
    Ref eps = rhs.cls(s[Var("?e")]);
    if (e.dims != Dims{1}) eps = rhs.op(Op::Reshape, {rhs.ints({1}), eps});
    return rhs.op(Op::LayerNorm, {rhs.cls(s[Var("?x")]), ones, zeros, eps});
  };
  const std::vector<Var> reads{Var("?x"), Var("?a"), Var("?k"), Var("?d"), Var("?e")};
  const std::string pow2 = "(ewpow " + centred + " (broadcast ?d (scalar 2)))";
  const std::string product = "(ewmul " + centred + " " + centred + ")";
  r.push_back(
      tensor_rewrite("layernorm-recognize", family, normalized(pow2, true), to_layernorm, reads));
  r.push_back(tensor_rewrite("layernorm-recognize-square", family, normalized(product, true),
                             to_layernorm, reads));
  r.push_back(tensor_rewrite("layernorm-recognize-1d", family, normalized(pow2, false),
                             to_layernorm, reads));
  r.push_back(tensor_rewrite("layernorm-recognize-square-1d", family, normalized(product, false),
                             to_layernorm, reads));
  // TensorFlow's spellings (tf2onnx): the centred value times the reciprocal of the standard
  // deviation, as Reciprocal(Sqrt(v)) (the importer's 1 / sqrt) or as Pow(v, -0.5).
  const auto times_rsqrt = [&](const std::string& square, bool as_pow) {
    const std::string v = "(ewadd (reshape ?k (reduce_mean ?a " + square + ")) (broadcast ?k ?e))";
    const std::string rs = as_pow ? "(ewpow " + v + " (broadcast ?k ?p))"
                                  : "(ewdiv (broadcast ?k (scalar 1)) (sqrt " + v + "))";
    return "(ewmul " + centred + " (broadcast ?d " + rs + "))";
  };
  const auto to_layernorm_pow = [to_layernorm](RightHandSide& rhs, const TensorEGraph& g,
                                               const Subst& s) -> std::optional<Ref> {
    const std::optional<float> p = detail::scalar_value(g, s, Var("?p"));
    if (!p || *p != -0.5f) return std::nullopt;
    return to_layernorm(rhs, g, s);
  };
  std::vector<Var> pow_reads = reads;
  pow_reads.push_back(Var("?p"));
  for (const bool as_product : {false, true}) {
    const std::string square = as_product ? product : pow2;
    const std::string suffix = as_product ? "-square" : "";
    r.push_back(tensor_rewrite("layernorm-recognize-reciprocal" + suffix, family,
                               times_rsqrt(square, false), to_layernorm, reads));
    r.push_back(tensor_rewrite("layernorm-recognize-rsqrt-pow" + suffix, family,
                               times_rsqrt(square, true), to_layernorm_pow, pow_reads));
  }
  // gamma and beta: a product (scale: both gain the factor) or a sum (shift: beta gains the
  // addend) with h, broadcast to x's shape or of that shape already.
  const auto fold_affine = [](bool scale) {
    return
        [scale](RightHandSide& rhs, const TensorEGraph& g, const Subst& s) -> std::optional<Ref> {
          const auto v = detail::last_axis_vector(rhs, g, s, "?h", "?x");
          if (!v) return std::nullopt;
          const Ref gamma = rhs.cls(s[Var("?g")]), beta = rhs.cls(s[Var("?b")]);
          return rhs.op(Op::LayerNorm,
                        {rhs.cls(s[Var("?x")]), scale ? rhs.op(Op::EwMul, {gamma, *v}) : gamma,
                         rhs.op(scale ? Op::EwMul : Op::EwAdd, {beta, *v}), rhs.cls(s[Var("?e")])});
        };
  };
  const std::vector<Var> affine_reads{Var("?x"), Var("?g"), Var("?b"), Var("?e"), Var("?h")};
  for (const bool broadcast : {true, false}) {
    const std::string h = broadcast ? "(broadcast ?d ?h)" : "?h";
    const std::string suffix = broadcast ? "" : "-1d";
    r.push_back(tensor_rewrite("layernorm-scale" + suffix, family,
                               "(ewmul (layernorm ?x ?g ?b ?e) " + h + ")", fold_affine(true),
                               affine_reads));
    r.push_back(tensor_rewrite("layernorm-shift" + suffix, family,
                               "(ewadd (layernorm ?x ?g ?b ?e) " + h + ")", fold_affine(false),
                               affine_reads));
  }
  r.push_back(tensor_rewrite(
      "gelu-recognize-tanh", family,
      "(ewmul (ewmul ?x (broadcast ?d ?half)) (ewadd (tanh (ewmul (ewadd ?x (ewmul (ewpow ?x "
      "(broadcast ?d (scalar 3))) (broadcast ?d ?k))) (broadcast ?d ?c))) (broadcast ?d (scalar "
      "1))))",
      "(gelu ?x)",
      detail::all_of(
          detail::all_of(detail::scalar_near("?half", 0.5), detail::scalar_near("?k", 0.044715)),
          detail::scalar_near("?c", 0.7978845608028654))));
  // The exact GELU: x/2·(1 + erf(x/√2)), the importer's division by √2 a product by 1/√2, the
  // half taken last (PyTorch's F.gelu) or first (0.5·x·(...), as the tanh form).
  const TensorCondition erf_constants = detail::all_of(
      detail::scalar_near("?half", 0.5), detail::scalar_near("?r", 0.7071067811865476));
  const std::string erf_term =
      "(ewadd (erf (ewmul ?x (broadcast ?d ?r))) (broadcast ?d (scalar 1)))";
  r.push_back(tensor_rewrite("gelu-recognize-erf", family,
                             "(ewmul (ewmul ?x " + erf_term + ") (broadcast ?d ?half))",
                             "(gelu_erf ?x)", erf_constants));
  r.push_back(tensor_rewrite("gelu-recognize-erf-half-first", family,
                             "(ewmul (ewmul ?x (broadcast ?d ?half)) " + erf_term + ")",
                             "(gelu_erf ?x)", erf_constants));
  // Swish, and hard-swish as PyTorch (x·HardSigmoid(x), or ONNX's HardSwish, which the importer
  // writes the same way) and Paddle (x·Clip(x + 3, 0, 6)/6) export it.
  r.push_back(tensor_rewrite("silu-recognize", family, "(ewmul ?x (sigmoid ?x))", "(silu ?x)"));
  r.push_back(tensor_rewrite(
      "hard-swish-recognize", family,
      "(ewmul ?x (clip (ewadd (smul ?x ?a) (broadcast ?d ?b)) (scalar 0) (scalar 1)))",
      "(hard_swish ?x)",
      detail::all_of(detail::scalar_near("?a", 1.0 / 6.0), detail::scalar_near("?b", 0.5))));
  r.push_back(tensor_rewrite(
      "hard-swish-recognize-clip6", family,
      "(ewmul (ewmul ?x (clip (ewadd ?x (broadcast ?d (scalar 3))) (scalar 0) (scalar 6))) "
      "(broadcast ?d ?s))",
      "(hard_swish ?x)", detail::scalar_near("?s", 1.0 / 6.0)));
  // Softmax spelled out (exporters that lower it, or write it for an axis Softmax before opset
  // 13 could not take): exp(x - max(x)) / sum(exp(x - max(x))), or without the max, over one
  // axis, each reduction given back as 1 on that axis.
  const auto to_softmax = [](RightHandSide& rhs, const TensorEGraph& g,
                             const Subst& s) -> std::optional<Ref> {
    const TensorInfo& x = info_of(g, s, Var("?x"));
    const std::int64_t axis = info_of(g, s, Var("?a")).value;
    if (axis < 0 || axis >= static_cast<std::int64_t>(x.rank())) return std::nullopt;
    Dims kept = x.dims;
    kept[static_cast<std::size_t>(axis)] = 1;
    if (info_of(g, s, Var("?k")).dims != kept) return std::nullopt;  // a row, not a transpose
    return rhs.op(Op::Softmax, {rhs.cls(s[Var("?a")]), rhs.cls(s[Var("?x")])});
  };
  const std::vector<Var> softmax_reads{Var("?x"), Var("?a"), Var("?k")};
  const std::string shifted = "(exp (ewsub ?x (broadcast ?d (reshape ?k (reduce_max ?a ?x)))))";
  r.push_back(tensor_rewrite(
      "softmax-recognize", family,
      "(ewdiv " + shifted + " (broadcast ?d (reshape ?k (reduce_sum ?a " + shifted + "))))",
      to_softmax, softmax_reads));
  r.push_back(
      tensor_rewrite("softmax-recognize-unshifted", family,
                     "(ewdiv (exp ?x) (broadcast ?d (reshape ?k (reduce_sum ?a (exp ?x)))))",
                     to_softmax, softmax_reads));
  return r;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_RECOGNIZE_H
