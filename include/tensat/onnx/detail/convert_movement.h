// The ONNX importer's converters of data movement: Gather, Squeeze/Unsqueeze, Flatten, Concat,
// Reshape, Expand, Slice, Split, Pad, Tile, Transpose.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_MOVEMENT_H
#define TENSAT_ONNX_DETAIL_CONVERT_MOVEMENT_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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

inline void Importer::gather(const NodeContext& c) {
  const Value& data = c.in(0);
  const Value& idx = c.in(1);
  if (!idx.is_constant()) c.unsupported("Gather with computed indices is not supported");
  if (data.dims.empty()) c.fail("Gather of a scalar");
  const std::int64_t axis = axis_of(c.int_attr("axis", 0), data.dims.size(), c.where);
  const std::int64_t extent = data.dims[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> indices;
  for (double di : idx.data) {
    if (!(std::fabs(di) < 9.2e18)) c.fail("an index is not an integer");
    auto i = static_cast<std::int64_t>(di);
    if (i < -extent || i >= extent)
      c.fail(fmt::format("index {} is outside an axis of {}", i, extent));
    indices.push_back(i < 0 ? i + extent : i);
  }
  std::vector<std::int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (data.tensor) {
    // Slices of the indexed entries, concatenated (one slice for a contiguous run), then the
    // indices' shape in place of the axis.
    if (indices.empty()) c.unsupported("Gather with no indices (an empty result)");
    if (indices.size() > 256) c.unsupported("Gather of more than 256 entries of a computed tensor");
    std::vector<Tensor> parts;
    for (std::size_t k = 0; k < indices.size();) {
      std::size_t run = k + 1;
      while (run < indices.size() && indices[run] == indices[run - 1] + 1) ++run;
      parts.push_back(slice_of(*data.tensor, axis, indices[k], indices[run - 1] + 1));
      k = run;
    }
    const Tensor gathered = parts.size() == 1 ? parts[0] : g_.concat(axis, parts);
    return set_tensor(c, reshaped(gathered, dims_of(dims)));
  }
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
  for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < data.dims.size(); ++k)
    inner *= data.dims[k];
  Value out;
  out.integer = data.integer;
  out.elem_type = data.elem_type;
  out.dims = dims_of(dims);
  checked_elements(out.dims, max_constant_, c.where, "the result");
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i : indices)
      for (std::int64_t k = 0; k < inner; ++k)
        out.data.push_back(data.data[static_cast<std::size_t>((o * extent + i) * inner + k)]);
  set(c, std::move(out));
}

/// x reshaped to `dims` (nothing when it has them already).
inline Tensor Importer::reshaped(Tensor x, const Dims& dims) {
  return g_.shape(x) == dims ? x : g_.reshape(x, dims);
}

/// Entries [start, end) of x along axis (nothing when that is all of it).
inline Tensor Importer::slice_of(Tensor x, std::int64_t axis, std::int64_t start,
                                 std::int64_t end) {
  if (start == 0 && end == g_.shape(x)[static_cast<std::size_t>(axis)]) return x;
  return g_.slice(x, axis, start, end);
}

inline void Importer::squeeze(const NodeContext& c, bool unsqueeze) {
  Value v = c.in(0);
  // Opset 13 moved axes from an attribute to an input.
  Dims axes = c.has_input(1) ? c.ints_input(1) : c.ints_attr("axes").value_or(Dims{});
  std::vector<std::int64_t> d = vector_of(v.dims);
  if (unsqueeze) {
    const std::size_t rank = d.size() + axes.size();
    for (std::int64_t& a : axes) a = axis_of(a, rank, c.where);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
    for (std::int64_t a : axes) d.insert(d.begin() + a, 1);
  } else {
    if (axes.empty())
      for (std::size_t k = 0; k < d.size(); ++k)
        if (d[k] == 1) axes.push_back(static_cast<std::int64_t>(k));
    for (std::int64_t& a : axes) {
      a = axis_of(a, d.size(), c.where);
      if (d[static_cast<std::size_t>(a)] != 1)
        c.fail(fmt::format("axis {} has size {}, not 1", a, d[static_cast<std::size_t>(a)]));
    }
    std::sort(axes.begin(), axes.end(), std::greater<>());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("an axis is repeated");
    for (std::int64_t a : axes) d.erase(d.begin() + a);
  }
  if (v.tensor) return set_tensor(c, reshaped(*v.tensor, dims_of(d)));
  v.dims = dims_of(d);
  set(c, std::move(v));
}

inline void Importer::flatten(const NodeContext& c) {
  const Dims& d = c.in(0).dims;
  const std::int64_t axis = c.int_attr("axis", 1);
  const std::int64_t a = axis < 0 ? axis + static_cast<std::int64_t>(d.size()) : axis;
  if (a < 0 || a > static_cast<std::int64_t>(d.size()))
    c.fail(fmt::format("axis {} is out of range", axis));
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(d.size()); ++k)
    (k < a ? outer : inner) *= d[static_cast<std::size_t>(k)];
  reshape(c, Dims{outer, inner}, false);
}

inline void Importer::concat(const NodeContext& c) {
  const std::size_t n = c.inputs();
  if (n == 0) c.fail("Concat without inputs");
  const std::size_t rank = c.in(0).dims.size();
  const std::int64_t axis = axis_of(c.int_attr("axis", 0), rank, c.where);
  bool all_constant = true;
  for (std::size_t i = 0; i < n; ++i) {
    const Value& v = c.in(i);
    all_constant = all_constant && v.is_constant();
    if (v.dims.size() != rank) c.fail("Concat of inputs of different ranks");
    for (std::size_t k = 0; k < rank; ++k)
      if (static_cast<std::int64_t>(k) != axis && v.dims[k] != c.in(0).dims[k])
        c.fail(fmt::format("inputs of shapes {} and {} do not concatenate along axis {}",
                           tensor::dims_to_string(c.in(0).dims), tensor::dims_to_string(v.dims),
                           axis));
  }
  if (!all_constant) {
    std::vector<Tensor> parts;
    for (std::size_t i = 0; i < n; ++i)
      if (c.in(i).elements() > 0)
        parts.push_back(c.tensor(i));  // exporters concatenate empty tensors too
    if (parts.empty()) c.unsupported("a Concat of empty tensors");
    return set_tensor(c, parts.size() == 1 ? parts[0] : g_.concat(axis, parts));
  }
  Value out;
  out.dims = c.in(0).dims;
  out.dims[static_cast<std::size_t>(axis)] = 0;
  out.integer = true;
  out.elem_type = c.in(0).elem_type;
  std::int64_t outer = 1;
  for (std::int64_t k = 0; k < axis; ++k) outer *= out.dims[static_cast<std::size_t>(k)];
  for (std::size_t i = 0; i < n; ++i) {
    const Value& v = c.in(i);
    out.dims[static_cast<std::size_t>(axis)] += v.dims[static_cast<std::size_t>(axis)];
    out.integer = out.integer && v.integer;
  }
  if (!out.integer) out.elem_type = ::onnx::TensorProto::FLOAT;
  checked_elements(out.dims, max_constant_, c.where, "the result");
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < n; ++i) {
      const Value& v = c.in(i);
      const std::int64_t block = outer > 0 ? v.elements() / outer : 0;
      out.data.insert(out.data.end(), v.data.begin() + o * block, v.data.begin() + (o + 1) * block);
    }
  set(c, std::move(out));
}

inline void Importer::reshape(const NodeContext& c, Dims target, bool allow_zero) {
  const Value& v = c.in(0);
  const std::int64_t n = v.elements();
  std::optional<std::size_t> infer;
  std::int64_t known = 1;
  if (target.size() > 16) c.fail("the target shape has more than 16 dimensions");
  for (std::size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allow_zero) {
      if (k >= v.dims.size())
        c.fail("a 0 in the target shape copies a dimension the input does not have");
      target[k] = v.dims[k];
    }
    if (target[k] == -1) {
      if (infer) c.fail("the target shape has two -1");
      infer = k;
      continue;
    }
    if (target[k] < 0) c.fail(fmt::format("target dimension {} is negative", target[k]));
    if (target[k] != 0 && known > max_tensor_ / target[k])
      c.fail(fmt::format("cannot reshape {} elements to {}", n, tensor::dims_to_string(target)));
    known *= target[k];
  }
  if (infer) {
    if (known == 0 || n % known != 0)
      c.fail(fmt::format("cannot reshape {} elements to {}", n, tensor::dims_to_string(target)));
    target[*infer] = n / known;
  } else if (known != n) {
    c.fail(fmt::format("cannot reshape {} ({} elements) to {}", tensor::dims_to_string(v.dims), n,
                       tensor::dims_to_string(target)));
  }
  if (v.tensor) return set_tensor(c, reshaped(*v.tensor, target));
  Value out = v;
  out.dims = target;
  set(c, std::move(out));
}

inline void Importer::expand(const NodeContext& c) {
  const Value& v = c.in(0);
  const Dims shape = c.ints_input(1);
  for (std::int64_t d : shape)
    if (d < 0) c.fail(fmt::format("target dimension {} is negative", d));
  const Dims out = broadcast_dims(v.dims, shape, c.where);
  checked_elements(out, v.tensor ? max_tensor_ : max_constant_, c.where, "the result");
  if (v.tensor) {
    if (std::find(out.begin(), out.end(), 0) != out.end())
      c.unsupported("an Expand to an empty tensor");
    return set_tensor(c, out == v.dims ? *v.tensor : g_.broadcast(*v.tensor, out));
  }
  Value zero;  // folded as v + 0 broadcast to `out`
  zero.dims = out;
  zero.integer = true;
  zero.data.assign(
      static_cast<std::size_t>(checked_elements(out, max_constant_, c.where, "the result")), 0.0);
  Value r = fold_binary(
      v, zero, [](double x, double) { return x; }, c.where);
  r.integer = v.integer;
  r.elem_type = v.elem_type;
  set(c, std::move(r));
}

/// ONNX Slice's clamped range along an axis of extent `dim`: (start, count) for `step`.
inline std::pair<std::int64_t, std::int64_t> Importer::slice_range(std::int64_t start,
                                                                   std::int64_t end,
                                                                   std::int64_t step,
                                                                   std::int64_t dim) {
  const auto clamp_index = [](std::int64_t i, std::int64_t dim, std::int64_t lo, std::int64_t hi) {
    if (i < 0) i = i < -dim ? lo : i + dim;
    return std::clamp(i, lo, hi);
  };
  if (step > 0) {
    start = clamp_index(start, dim, 0, dim);
    end = clamp_index(end, dim, 0, dim);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = clamp_index(start, dim, -1, dim - 1);
  end = clamp_index(end, dim, -1, dim - 1);
  return {start, start > end ? (start - end + (-step) - 1) / (-step) : 0};
}

inline void Importer::slice(const NodeContext& c) {
  const Value& v = c.in(0);
  Dims starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = c.ints_attr("starts").value_or(Dims{});
    ends = c.ints_attr("ends").value_or(Dims{});
    axes = c.ints_attr("axes").value_or(Dims{});
  } else {
    starts = c.ints_input(1);
    ends = c.ints_input(2);
    if (c.has_input(3)) axes = c.ints_input(3);
    if (c.has_input(4)) steps = c.ints_input(4);
  }
  if (axes.empty())
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  if (steps.empty()) steps = Dims(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  // Per axis: (start, count, step); axes not named keep everything.
  const std::size_t rank = v.dims.size();
  std::vector<std::int64_t> first(rank, 0), count(v.dims.begin(), v.dims.end()), step(rank, 1);
  std::vector<bool> seen(rank, false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto a = static_cast<std::size_t>(axis_of(axes[k], rank, c.where));
    if (seen[a]) c.fail("an axis is repeated");
    seen[a] = true;
    if (steps[k] == 0) c.fail("a step of 0");
    if (steps[k] == std::numeric_limits<std::int64_t>::min()) c.fail("a step out of range");
    const auto [s, n] = slice_range(starts[k], ends[k], steps[k], v.dims[a]);
    first[a] = s;
    count[a] = n;
    step[a] = steps[k];
  }
  Dims out_dims = dims_of(count);
  if (v.is_constant()) {
    const std::int64_t n = checked_elements(out_dims, max_constant_, c.where, "the result");
    const auto strides = tensor::strides_of(v.dims);
    Value out;
    out.dims = out_dims;
    out.integer = v.integer;
    out.elem_type = v.elem_type;
    out.data.reserve(static_cast<std::size_t>(n));
    for (std::int64_t flat = 0; flat < n; ++flat) {
      std::int64_t rest = flat, src = 0;
      for (std::size_t a = rank; a-- > 0;) {
        const std::int64_t i = rest % count[a];
        rest /= count[a];
        src += (first[a] + i * step[a]) * strides[a];
      }
      out.data.push_back(v.data[static_cast<std::size_t>(src)]);
    }
    return set(c, std::move(out));
  }
  Tensor x = *v.tensor;
  for (std::size_t a = 0; a < rank; ++a) {
    if (count[a] == 0) c.unsupported("a Slice with an empty result");
    const auto axis = static_cast<std::int64_t>(a);
    if (step[a] < 0) {
      if (count[a] != 1)
        c.unsupported("a Slice with a negative step (a reversal) of a computed tensor");
      x = slice_of(x, axis, first[a], first[a] + 1);
      continue;
    }
    if (step[a] == 1 || count[a] == 1) {
      x = slice_of(x, axis, first[a], first[a] + count[a]);
      continue;
    }
    // Every step-th entry: the span [first, first + count * step) (zero-padded past the end),
    // reshaped to [count, step] along the axis, entry 0 of each row kept.
    const std::int64_t extent = g_.shape(x)[a];
    if (step[a] > max_tensor_ / count[a]) c.fail("a Slice step out of range");
    const std::int64_t span = count[a] * step[a], available = std::min(span, extent - first[a]);
    x = slice_of(x, axis, first[a], first[a] + available);
    if (available < span) x = g_.pad(x, axis, 0, span - available);
    Dims split = g_.shape(x);
    std::vector<std::int64_t> d = vector_of(split);
    d[a] = count[a];
    d.insert(d.begin() + static_cast<std::ptrdiff_t>(a) + 1, step[a]);
    x = g_.slice(g_.reshape(x, dims_of(d)), axis + 1, 0, 1);
    d.erase(d.begin() + static_cast<std::ptrdiff_t>(a) + 1);
    x = g_.reshape(x, dims_of(d));
  }
  set_tensor(c, x);
}

inline void Importer::split(const NodeContext& c) {
  const Value& v = c.in(0);
  const std::int64_t axis = axis_of(c.int_attr("axis", 0), v.dims.size(), c.where);
  const std::int64_t extent = v.dims[static_cast<std::size_t>(axis)];
  Dims sizes = c.has_input(1) ? c.ints_input(1) : c.ints_attr("split").value_or(Dims{});
  const auto outputs = static_cast<std::int64_t>(c.node.output_size());
  if (outputs == 0) c.fail("Split without outputs");
  if (sizes.empty()) {
    // Equal parts (opset 18: the last one smaller).
    const std::int64_t part = (extent + outputs - 1) / outputs;
    for (std::int64_t k = 0, left = extent; k < outputs; ++k, left -= part)
      sizes.push_back(std::max<std::int64_t>(std::min(part, left), 0));
  }
  if (static_cast<std::int64_t>(sizes.size()) != outputs)
    c.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), outputs));
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0 || s > extent) c.fail(fmt::format("split size {} out of range", s));
    total += s;
  }
  if (total != extent)
    c.fail(fmt::format("split sizes add up to {}, the axis has {}", total, extent));
  std::int64_t start = 0;
  for (std::int64_t k = 0; k < outputs; ++k) {
    const std::int64_t end = start + sizes[static_cast<std::size_t>(k)];
    const int out = static_cast<int>(k);
    if (v.tensor) {
      if (end == start) c.unsupported("a Split with an empty part");
      set_tensor(c, slice_of(*v.tensor, axis, start, end), out);
    } else {
      std::int64_t outer, ext, inner;
      tensor::split_dims(v.dims, axis, outer, ext, inner);
      Value part;
      part.dims = v.dims;
      part.dims[static_cast<std::size_t>(axis)] = end - start;
      part.integer = v.integer;
      part.elem_type = v.elem_type;
      for (std::int64_t o = 0; o < outer; ++o)
        part.data.insert(part.data.end(), v.data.begin() + (o * ext + start) * inner,
                         v.data.begin() + (o * ext + end) * inner);
      set(c, std::move(part), out);
    }
    start = end;
  }
}

inline void Importer::pad(const NodeContext& c) {
  const Value& v = c.in(0);
  const std::string mode = c.string_attr("mode", "constant");
  Dims pads;
  double fill = 0;
  if (opset_ < 11) {
    pads = c.ints_attr("pads").value_or(Dims{});
    fill = c.float_attr("value", 0.0);
  } else {
    pads = c.ints_input(1);
    if (c.has_input(2)) {
      const auto& f = c.constant_input(2);
      if (f.size() != 1) c.fail("constant_value must hold one value");
      fill = f[0];
    }
  }
  const std::size_t rank = v.dims.size();
  Dims axes;
  if (c.has_input(3)) {
    for (std::int64_t a : c.ints_input(3)) axes.push_back(axis_of(a, rank, c.where));
  } else {
    for (std::size_t a = 0; a < rank; ++a) axes.push_back(static_cast<std::int64_t>(a));
  }
  if (pads.size() != 2 * axes.size())
    c.fail(fmt::format("{} pads for {} axes", pads.size(), axes.size()));
  if (mode != "constant")
    c.unsupported_checked(fmt::format("Pad mode '{}' is not supported", mode));
  if (fill != 0) c.unsupported_checked("a Pad with a value other than 0");
  Tensor x = c.tensor(0);
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::int64_t axis = axes[k], before = pads[k], after = pads[k + axes.size()];
    const std::int64_t extent = g_.shape(x)[static_cast<std::size_t>(axis)];
    if (before > max_tensor_ || after > max_tensor_) c.fail("a pad out of range");
    // Negative pads remove entries.
    const std::int64_t from = std::max<std::int64_t>(-before, 0),
                       to = extent - std::max<std::int64_t>(-after, 0);
    if (to <= from) c.unsupported("a Pad whose negative pads leave nothing");
    x = slice_of(x, axis, from, to);
    if (before > 0 || after > 0) {
      Dims d = g_.shape(x);
      d[static_cast<std::size_t>(axis)] +=
          std::max<std::int64_t>(before, 0) + std::max<std::int64_t>(after, 0);
      checked_elements(d, max_tensor_, c.where, "the result");
      x = g_.pad(x, axis, std::max<std::int64_t>(before, 0), std::max<std::int64_t>(after, 0));
    }
  }
  set_tensor(c, x);
}

inline void Importer::tile(const NodeContext& c) {
  const Value& v = c.in(0);
  const Dims repeats = c.ints_input(1);
  if (repeats.size() != v.dims.size()) c.fail("repeats must have one value per axis");
  Dims out = v.dims;
  for (std::size_t a = 0; a < repeats.size(); ++a) {
    if (repeats[a] < 0 || repeats[a] > 64)
      c.unsupported(fmt::format("a Tile repeat of {}", repeats[a]));
    out[a] *= repeats[a];
  }
  checked_elements(out, max_tensor_, c.where, "the result");
  if (std::find(repeats.begin(), repeats.end(), 0) != repeats.end())
    c.unsupported("a Tile to an empty tensor");
  Tensor x = c.tensor(0);
  for (std::size_t a = 0; a < repeats.size(); ++a)
    if (repeats[a] > 1)
      x = g_.concat(static_cast<std::int64_t>(a),
                    std::vector<Tensor>(static_cast<std::size_t>(repeats[a]), x));
  set_tensor(c, x);
}

inline void Importer::transpose(const NodeContext& c) {
  Tensor x = c.tensor(0);
  Dims perm = c.ints_attr("perm").value_or(Dims{});
  if (perm.empty())
    for (std::size_t k = g_.shape(x).size(); k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
  bool identity = true;
  for (std::size_t k = 0; k < perm.size(); ++k)
    identity = identity && perm[k] == static_cast<std::int64_t>(k);
  set_tensor(c, identity && perm.size() == g_.shape(x).size() ? x : g_.transpose(x, perm));
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_MOVEMENT_H
