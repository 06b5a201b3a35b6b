// The ONNX importer's converters of normalizations and reductions: BatchNormalization,
// LayerNormalization, Softmax, the Reduce ops.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_NORMALIZATION_H
#define TENSAT_ONNX_DETAIL_CONVERT_NORMALIZATION_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

// reductions
inline void Importer::batchnorm(const NodeContext& c) {
  if (c.int_attr("training_mode", 0) != 0) c.unsupported("training mode is not supported");
  for (int k = 1; k < c.node.output_size(); ++k)
    if (!c.node.output(k).empty())
      c.unsupported("BatchNormalization's training outputs are not supported");
  Tensor x = c.tensor(0);
  const std::int64_t channels = g_.shape(x).size() >= 2 ? g_.shape(x)[1] : 0;
  Value var = c.in(4);
  for (std::size_t i = 1; i <= 4; ++i)
    if (c.in(i).dims != Dims{channels})
      c.fail("scale, bias, mean and var must have one value per channel");
  // The dialect's eps is 1e-5; another epsilon is folded into a constant variance.
  const double eps = c.float_attr("epsilon", 1e-5);
  const bool other_eps = std::fabs(eps - static_cast<double>(tensor::kNormEps)) > 1e-12;
  if (other_eps) {
    if (!var.is_constant()) c.unsupported("an epsilon other than 1e-5 needs a constant variance");
    for (double& d : var.data) d += eps - static_cast<double>(tensor::kNormEps);
  }
  const Tensor v =
      weight_of(var, other_eps ? derived_key(c.input_name(4), "eps") : c.input_name(4));
  set_tensor(c, g_.batchnorm(x, c.tensor(1), c.tensor(2), c.tensor(3), v));
}

/// Normalization over the trailing axes from `axis`: the dialect's layernorm when it is the
/// last axis (its eps a `scalar` unless 1e-5), else written out (mean, variance, sqrt, divide).
inline void Importer::layer_normalization(const NodeContext& c) {
  for (int k = 1; k < c.node.output_size(); ++k)
    if (!c.node.output(k).empty())
      c.unsupported("LayerNormalization's Mean and InvStdDev outputs are not supported");
  const Tensor x = c.tensor(0);
  const Dims d = g_.shape(x);
  const std::int64_t axis = axis_of(c.int_attr("axis", -1), d.size(), c.where);
  const double eps = c.float_attr("epsilon", 1e-5);
  std::int64_t inner = 1;
  for (std::size_t a = static_cast<std::size_t>(axis); a < d.size(); ++a) inner *= d[a];
  const Dims normalized(d.begin() + axis, d.size() - static_cast<std::size_t>(axis));
  const Tensor scale = c.tensor(1);
  const bool has_bias = c.has_input(2);
  const Tensor bias = has_bias ? c.tensor(2) : scalar_zeros(normalized, c.derived("bias"));
  if (axis == static_cast<std::int64_t>(d.size()) - 1 && g_.shape(scale) == normalized &&
      g_.shape(bias) == normalized)
    return set_tensor(c, static_cast<float>(eps) == tensor::kNormEps
                             ? g_.layernorm(x, scale, bias)
                             : g_.layernorm(x, scale, bias, g_.scalar(static_cast<float>(eps))));
  const std::int64_t outer =
      std::accumulate(d.begin(), d.begin() + axis, std::int64_t{1}, std::multiplies<>());
  const Tensor flat = reshaped(x, {outer, inner});
  const Tensor mean = g_.reshape(g_.reduce_mean(flat, 1), {outer, 1});
  const Tensor centred = g_.sub(flat, mean);
  const Tensor var = g_.reshape(g_.reduce_mean(g_.ewmul(centred, centred), 1), {outer, 1});
  const Tensor norm =
      g_.div(centred, g_.sqrt(g_.add(var, scalar_weight(eps, c.derived("epsilon")))));
  Tensor y = g_.mul(reshaped(norm, d), scale);
  if (has_bias) y = g_.add(y, bias);
  set_tensor(c, y);
}

/// A zero weight of shape `dims`.
inline Tensor Importer::scalar_zeros(const Dims& dims, const std::string& key) {
  Value v;
  v.dims = dims;
  v.data.assign(static_cast<std::size_t>(checked_elements(dims, max_constant_, key, "zeros")), 0.0);
  return weight_of(v, key);
}

inline void Importer::softmax(const NodeContext& c) {
  Tensor x = c.tensor(0);
  const Dims d = g_.shape(x);
  if (d.empty()) c.fail("Softmax of a scalar");
  const std::int64_t axis = axis_of(c.int_attr("axis", opset_ >= 13 ? -1 : 1), d.size(), c.where);
  if (opset_ >= 13 || axis == static_cast<std::int64_t>(d.size()) - 1)
    return set_tensor(c, g_.softmax(x, axis));
  // Before opset 13 the input is flattened to 2-D at `axis`, normalized per row.
  std::int64_t outer = 1;
  for (std::int64_t k = 0; k < axis; ++k) outer *= d[static_cast<std::size_t>(k)];
  const std::int64_t inner =
      std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()) / outer;
  set_tensor(c, g_.reshape(g_.softmax(g_.reshape(x, {outer, inner}), 1), d));
}

inline void Importer::reduce(const NodeContext& c, const std::string& op) {
  const Value& v = c.in(0);
  const std::size_t rank = v.dims.size();
  // Axes: an attribute, or (ReduceSum from opset 13) an input; none means all of them unless
  // noop_with_empty_axes.
  Dims axes = op == "ReduceSum" && opset_ >= 13 ? (c.has_input(1) ? c.ints_input(1) : Dims{})
                                                : c.ints_attr("axes").value_or(Dims{});
  const bool keepdims = c.int_attr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (c.int_attr("noop_with_empty_axes", 0) != 0) return set(c, v);
    for (std::size_t a = 0; a < rank; ++a) axes.push_back(static_cast<std::int64_t>(a));
  }
  for (std::int64_t& a : axes) a = axis_of(a, rank, c.where);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
  Dims kept_dims;  // the result with keepdims
  Dims dropped;    // without
  for (std::size_t a = 0; a < rank; ++a) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<std::int64_t>(a));
    kept_dims.push_back(reduced ? 1 : v.dims[a]);
    if (!reduced) dropped.push_back(v.dims[a]);
  }
  if (v.is_constant() && (v.integer || op == "ReduceProd")) {
    // Shape arithmetic: folded.
    Value out;
    out.dims = keepdims ? kept_dims : dropped;
    out.integer = v.integer;
    out.elem_type = v.elem_type;
    const std::int64_t n = checked_elements(kept_dims, max_constant_, c.where, "the result");
    const double init = op == "ReduceProd"  ? 1.0
                        : op == "ReduceMax" ? -std::numeric_limits<double>::infinity()
                                            : 0.0;
    out.data.assign(static_cast<std::size_t>(n), init);
    std::vector<std::int64_t> count(static_cast<std::size_t>(n), 0);
    for (std::int64_t flat = 0; flat < v.elements(); ++flat) {
      std::int64_t rest = flat, target = 0, stride = 1;
      for (std::size_t a = rank; a-- > 0;) {
        const std::int64_t i = rest % v.dims[a];
        rest /= v.dims[a];
        target += (kept_dims[a] == 1 ? 0 : i) * stride;
        stride *= kept_dims[a];
      }
      double& acc = out.data[static_cast<std::size_t>(target)];
      const double x = v.data[static_cast<std::size_t>(flat)];
      acc = op == "ReduceProd" ? acc * x : op == "ReduceMax" ? std::max(acc, x) : acc + x;
      ++count[static_cast<std::size_t>(target)];
    }
    if (op == "ReduceMean")
      for (std::size_t i = 0; i < out.data.size(); ++i)
        out.data[i] /= static_cast<double>(std::max<std::int64_t>(count[i], 1));
    return set(c, std::move(out));
  }
  if (op == "ReduceProd") c.unsupported("ReduceProd of a computed tensor is not supported");
  Tensor x = c.tensor(0);
  if (g_.info(x).elements() == 0) c.unsupported("a reduction of an empty tensor");
  for (std::size_t k = axes.size();
       k-- > 0;) {  // the highest axis first: the lower ones keep their index
    if (op == "ReduceMean")
      x = g_.reduce_mean(x, axes[k]);
    else if (op == "ReduceSum")
      x = g_.reduce_sum(x, axes[k]);
    else
      x = g_.reduce_max(x, axes[k]);
  }
  set_tensor(c, keepdims ? reshaped(x, kept_dims) : x);
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_NORMALIZATION_H
