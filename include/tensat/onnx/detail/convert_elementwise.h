// The ONNX importer's converters of elementwise arithmetic and activations: Add/Mul/Sub/Div/Pow,
// Sum/Mean, Where, unary ops, Clip, HardSigmoid/HardSwish, LeakyRelu.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_ELEMENTWISE_H
#define TENSAT_ONNX_DETAIL_CONVERT_ELEMENTWISE_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

inline void Importer::binary(const NodeContext& c, const std::string& op) {
  const Value& a = c.in(0);
  const Value& b = c.in(1);
  if (a.is_constant() && b.is_constant()) {
    std::function<double(double, double)> f;
    const bool integer = a.integer && b.integer;
    if (op == "Add") f = [](double x, double y) { return x + y; };
    if (op == "Sub") f = [](double x, double y) { return x - y; };
    if (op == "Mul") f = [](double x, double y) { return x * y; };
    if (op == "Pow") f = [](double x, double y) { return std::pow(x, y); };
    if (op == "Div")
      f = [integer](double x, double y) {
        return integer ? (y == 0 ? 0.0 : std::trunc(x / y)) : x / y;
      };
    return set(c, fold_binary(a, b, f, c.where));
  }
  // A constant operand of Sub or Div is folded into an Add or a Mul (the forms the rules know).
  if ((op == "Sub" || op == "Div") && b.is_constant()) {
    Value k = b;
    for (double& d : k.data) d = op == "Sub" ? -d : 1.0 / d;
    k.integer = false;
    const Tensor x = c.tensor(0);
    const Tensor y = weight_of(k, derived_key(c.input_name(1), op == "Sub" ? "neg" : "recip"));
    return set_tensor(c, op == "Sub" ? g_.add(x, y) : g_.mul(x, y));
  }
  const Tensor x = c.tensor(0), y = c.tensor(1);
  if (op == "Add") return set_tensor(c, g_.add(x, y));
  if (op == "Mul") return set_tensor(c, g_.mul(x, y));
  if (op == "Sub") return set_tensor(c, g_.sub(x, y));
  if (op == "Div") return set_tensor(c, g_.div(x, y));
  set_tensor(c, g_.pow(x, y));
}

inline void Importer::sum(const NodeContext& c, bool mean) {
  const std::size_t n = c.inputs();
  if (n == 0) c.fail("no inputs");
  Tensor acc = c.tensor(0);
  for (std::size_t i = 1; i < n; ++i) acc = g_.add(acc, c.tensor(i));
  if (mean && n > 1)
    acc = g_.smul(acc, scalar_weight(1.0 / static_cast<double>(n), c.derived("mean_scale")));
  set_tensor(c, acc);
}

/// Comparisons, logic and min/max of import-time constants (shape computations).
inline void Importer::constant_binary(const NodeContext& c, const std::string& op) {
  if (c.inputs() != 2) c.unsupported(fmt::format("{} with {} inputs", op, c.inputs()));
  const Value& a = c.in(0);
  const Value& b = c.in(1);
  if (!a.is_constant() || !b.is_constant())
    c.unsupported(fmt::format("{} of a computed tensor is not supported", op));
  std::function<double(double, double)> f;
  bool boolean = true;
  if (op == "Equal") f = [](double x, double y) { return x == y ? 1.0 : 0.0; };
  if (op == "Less") f = [](double x, double y) { return x < y ? 1.0 : 0.0; };
  if (op == "Greater") f = [](double x, double y) { return x > y ? 1.0 : 0.0; };
  if (op == "LessOrEqual") f = [](double x, double y) { return x <= y ? 1.0 : 0.0; };
  if (op == "GreaterOrEqual") f = [](double x, double y) { return x >= y ? 1.0 : 0.0; };
  if (op == "And") f = [](double x, double y) { return x != 0 && y != 0 ? 1.0 : 0.0; };
  if (op == "Or") f = [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; };
  if (op == "Min" || op == "Max" || op == "Mod") {
    boolean = false;
    if (op == "Min") f = [](double x, double y) { return std::min(x, y); };
    if (op == "Max") f = [](double x, double y) { return std::max(x, y); };
    if (op == "Mod")
      f = [](double x, double y) { return y == 0 ? 0.0 : x - y * std::floor(x / y); };
  }
  Value r = fold_binary(a, b, f, c.where);
  set(c, boolean ? as_bool(std::move(r)) : std::move(r));
}

inline void Importer::constant_unary(const NodeContext& c, const std::string& op) {
  const Value& v = c.in(0);
  if (!v.is_constant()) c.unsupported(fmt::format("{} of a computed tensor is not supported", op));
  if (op == "Not")
    return set(c, as_bool(fold_unary(v, [](double x) { return x == 0 ? 1.0 : 0.0; })));
  if (op == "Abs") return set(c, fold_unary(v, [](double x) { return std::fabs(x); }));
  if (op == "Floor") return set(c, fold_unary(v, [](double x) { return std::floor(x); }));
  set(c, fold_unary(v, [](double x) { return std::ceil(x); }));
}

inline void Importer::where(const NodeContext& c) {
  const Value& cond = c.in(0);
  const Value& x = c.in(1);
  const Value& y = c.in(2);
  if (!cond.is_constant() || !x.is_constant() || !y.is_constant())
    c.unsupported("Where of computed tensors is not supported");
  // cond ? x : y, broadcast: first pick between x and y at each broadcast position.
  const Dims dims = broadcast_dims(broadcast_dims(cond.dims, x.dims, c.where), y.dims, c.where);
  const std::int64_t n = checked_elements(dims, max_constant_, c.where, "the result");
  Value out;
  out.dims = dims;
  out.integer = x.integer && y.integer;
  out.elem_type = x.elem_type;
  for (std::int64_t i = 0; i < n; ++i)
    out.data.push_back(cond.data[static_cast<std::size_t>(broadcast_index(cond, dims, i))] != 0
                           ? x.data[static_cast<std::size_t>(broadcast_index(x, dims, i))]
                           : y.data[static_cast<std::size_t>(broadcast_index(y, dims, i))]);
  set(c, std::move(out));
}

inline void Importer::neg_reciprocal(const NodeContext& c, bool neg) {
  const Value& v = c.in(0);
  if (v.is_constant()) return set(c, fold_unary(v, [neg](double x) { return neg ? -x : 1.0 / x; }));
  const Tensor x = c.tensor(0);
  if (neg) return set_tensor(c, g_.smul(x, scalar_weight(-1.0, c.derived("minus_one"))));
  set_tensor(c, g_.div(scalar_weight(1.0, c.derived("one")), x));
}

inline void Importer::unary(const NodeContext& c, const std::string& op) {
  const Value& v = c.in(0);
  if (v.is_constant() && v.integer) c.unsupported(fmt::format("{} of an integer constant", op));
  const Tensor x = c.tensor(0);
  if (op == "Relu") return set_tensor(c, g_.relu(x));
  if (op == "Sigmoid") return set_tensor(c, g_.sigmoid(x));
  if (op == "Tanh") return set_tensor(c, g_.tanh(x));
  if (op == "Exp") return set_tensor(c, g_.exp(x));
  if (op == "Erf") return set_tensor(c, g_.erf(x));
  set_tensor(c, g_.sqrt(x));
}

/// A clip bound: a one-element weight from constant input `i`, else `fallback`.
inline Tensor Importer::clip_bound(const NodeContext& c, std::size_t i, double fallback,
                                   std::string_view which) {
  if (c.has_input(i)) {
    const Value& v = c.in(i);
    if (!v.is_constant()) c.unsupported("Clip with computed bounds is not supported");
    if (v.data.size() != 1) c.fail(fmt::format("the {} bound must hold one value", which));
    return weight_of(v, c.input_name(i));
  }
  return scalar_weight(fallback, c.derived(which));
}

inline void Importer::clip(const NodeContext& c) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = c.tensor(0);
  if (opset_ < 11) {
    // Before opset 11 the bounds are attributes.
    const Tensor lo = scalar_weight(c.float_attr("min", -inf), c.derived("min"));
    const Tensor hi = scalar_weight(c.float_attr("max", inf), c.derived("max"));
    return set_tensor(c, g_.clip(x, lo, hi));
  }
  const Tensor lo = clip_bound(c, 1, -inf, "min");
  const Tensor hi = clip_bound(c, 2, inf, "max");
  set_tensor(c, g_.clip(x, lo, hi));
}

/// HardSigmoid: clip(alpha·x + beta, 0, 1); HardSwish: x · HardSigmoid(x) with alpha 1/6, beta
/// 1/2.
inline void Importer::hard_sigmoid(const NodeContext& c, bool swish) {
  const Tensor x = c.tensor(0);
  const double alpha = swish ? 1.0 / 6.0 : c.float_attr("alpha", 0.2),
               beta = swish ? 0.5 : c.float_attr("beta", 0.5);
  const Tensor affine = g_.add(g_.smul(x, scalar_weight(alpha, c.derived("alpha"))),
                               scalar_weight(beta, c.derived("beta")));
  const Tensor h =
      g_.clip(affine, scalar_weight(0.0, c.derived("zero")), scalar_weight(1.0, c.derived("one")));
  set_tensor(c, swish ? g_.ewmul(x, h) : h);
}

/// LeakyRelu: relu(x) + alpha·(x − relu(x)) (exact: one of the two terms is zero).
inline void Importer::leaky_relu(const NodeContext& c) {
  const Tensor x = c.tensor(0);
  const Tensor r = g_.relu(x);
  const Tensor negative =
      g_.smul(g_.ewsub(x, r), scalar_weight(c.float_attr("alpha", 0.01), c.derived("alpha")));
  set_tensor(c, g_.ewadd(r, negative));
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_ELEMENTWISE_H
