// The Eigen executor's data movement and reductions: slice, pad, concat, transpose, broadcast,
// reduce, softmax, the normalizations, and TASO's weight transforms enlarge and merge.
#ifndef TENSAT_EXEC_DETAIL_LAYOUT_H
#define TENSAT_EXEC_DETAIL_LAYOUT_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensat/exec/detail/elementwise.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// Entries [start, end) of x along axis.
inline HostTensor slice(const HostTensor& x, std::int64_t axis, std::int64_t start,
                        std::int64_t end) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d = x.dims;
  d[static_cast<std::size_t>(axis)] = end - start;
  HostTensor out(d, x.dtype);
  const std::int64_t len = (end - start) * inner;
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data.data() + (o * extent + start) * inner, len, out.data.data() + o * len);
  return out;
}

inline HostTensor pad_axis(const HostTensor& x, std::int64_t axis, std::int64_t before,
                           std::int64_t after) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d = x.dims;
  const std::int64_t total = extent + before + after;
  d[static_cast<std::size_t>(axis)] = total;
  HostTensor out(d, x.dtype);
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data.data() + o * extent * inner, extent * inner,
                out.data.data() + (o * total + before) * inner);
  return out;
}

inline HostTensor concat(std::int64_t axis, const std::vector<const HostTensor*>& xs) {
  Dims d = xs[0]->dims;
  std::int64_t total = 0;
  for (const HostTensor* x : xs) total += x->dims[static_cast<std::size_t>(axis)];
  d[static_cast<std::size_t>(axis)] = total;
  HostTensor out(d, xs[0]->dtype);
  std::int64_t outer, extent, inner;
  split_dims(d, axis, outer, extent, inner);
  std::int64_t offset = 0;
  for (const HostTensor* x : xs) {
    const std::int64_t len = x->dims[static_cast<std::size_t>(axis)] * inner;
    for (std::int64_t o = 0; o < outer; ++o)
      std::copy_n(x->data.data() + o * len, len, out.data.data() + o * total * inner + offset);
    offset += len;
  }
  return out;
}

/// out[i] = x[sum_k idx_k * in_stride_k] for output index idx (strides may be 0 for broadcast).
inline void strided_gather(const float* in, const Dims& out_dims,
                           const std::vector<std::int64_t>& in_strides, float* out) {
  const std::size_t r = out_dims.size();
  const std::int64_t n = HostTensor::count(out_dims);
  if (r == 0) {
    if (n) out[0] = in[0];
    return;
  }
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t src = 0;
  const std::int64_t last = out_dims[r - 1], last_stride = in_strides[r - 1];
  for (std::int64_t i = 0; i < n; i += last) {
    for (std::int64_t j = 0; j < last; ++j) out[i + j] = in[src + j * last_stride];
    for (std::size_t k = r - 1; k-- > 0;) {  // advance the index over all but the last axis
      src += in_strides[k];
      if (++idx[k] < out_dims[k]) break;
      src -= in_strides[k] * out_dims[k];
      idx[k] = 0;
    }
  }
}

inline HostTensor transpose(const HostTensor& x, const Dims& perm) {
  Dims d;
  const auto in_strides = strides_of(x.dims);
  std::vector<std::int64_t> s;
  for (std::int64_t p : perm) {
    d.push_back(x.dims[static_cast<std::size_t>(p)]);
    s.push_back(in_strides[static_cast<std::size_t>(p)]);
  }
  HostTensor out(d, x.dtype);
  strided_gather(x.data.data(), d, s, out.data.data());
  return out;
}

inline HostTensor broadcast(const HostTensor& x, const Dims& d) {
  const auto in_strides = strides_of(x.dims);
  std::vector<std::int64_t> s(d.size(), 0);
  const std::size_t offset = d.size() - x.rank();
  for (std::size_t i = 0; i < x.rank(); ++i) s[offset + i] = x.dims[i] == 1 ? 0 : in_strides[i];
  HostTensor out(d, x.dtype);
  strided_gather(x.data.data(), d, s, out.data.data());
  return out;
}

inline HostTensor reduce(const HostTensor& x, std::int64_t axis, Op op) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  Dims d;
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (static_cast<std::int64_t>(i) != axis) d.push_back(x.dims[i]);
  HostTensor out(d, x.dtype);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      const float* p = x.data.data() + o * extent * inner + in;
      float acc = op == Op::ReduceMax ? -std::numeric_limits<float>::infinity() : 0.0f;
      for (std::int64_t e = 0; e < extent; ++e)
        acc = op == Op::ReduceMax ? std::max(acc, p[e * inner]) : acc + p[e * inner];
      if (op == Op::ReduceMean) acc /= static_cast<float>(extent);
      out.data[static_cast<std::size_t>(o * inner + in)] = acc;
    }
  return out;
}

inline HostTensor softmax(const HostTensor& x, std::int64_t axis) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, axis, outer, extent, inner);
  HostTensor out = x;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      float* p = out.data.data() + o * extent * inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (std::int64_t e = 0; e < extent; ++e) m = std::max(m, p[e * inner]);
      float sum = 0;
      for (std::int64_t e = 0; e < extent; ++e) sum += (p[e * inner] = std::exp(p[e * inner] - m));
      for (std::int64_t e = 0; e < extent; ++e) p[e * inner] /= sum;
    }
  return out;
}

inline HostTensor layernorm(const HostTensor& x, const HostTensor& gamma, const HostTensor& beta,
                            float eps = kNormEps) {
  const std::int64_t n = x.dims.back(), rows = x.elements() / n;
  HostTensor out = x;
  for (std::int64_t r = 0; r < rows; ++r) {
    ArrayMap v(out.data.data() + r * n, n);
    const float mean = v.mean();
    v -= mean;
    const float var = v.square().mean();
    v = v / std::sqrt(var + eps) * ConstArrayMap(gamma.data.data(), n) +
        ConstArrayMap(beta.data.data(), n);
  }
  return out;
}

inline HostTensor batchnorm(const HostTensor& x, const HostTensor& scale, const HostTensor& bias,
                            const HostTensor& mean, const HostTensor& var) {
  std::int64_t outer, extent, inner;
  split_dims(x.dims, 1, outer, extent, inner);
  HostTensor out = x;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < extent; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const float k = scale.data[i] / std::sqrt(var.data[i] + kNormEps);
      ArrayMap v(out.data.data() + (o * extent + c) * inner, inner);
      v = (v - mean.data[i]) * k + bias.data[i];
    }
  return out;
}

inline HostTensor enlarge(const HostTensor& w, const Dims& ref) {
  const std::int64_t O = w.dims[0], I = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const std::int64_t KH = ref[2], KW = ref[3], dh = (KH - kh) / 2, dw = (KW - kw) / 2;
  HostTensor out(Dims{O, I, KH, KW}, w.dtype);
  for (std::int64_t oi = 0; oi < O * I; ++oi)
    for (std::int64_t i = 0; i < kh; ++i)
      std::copy_n(w.data.data() + (oi * kh + i) * kw, kw,
                  out.data.data() + (oi * KH + i + dh) * KW + dw);
  return out;
}

inline HostTensor merge(const HostTensor& w, std::int64_t groups, std::int64_t count) {
  const std::int64_t O = w.dims[0], c = w.dims[1], k = w.dims[2] * w.dims[3], m = O / groups;
  HostTensor out(Dims{O, c * count, w.dims[2], w.dims[3]}, w.dtype);
  for (std::int64_t o = 0; o < O; ++o) {
    const std::int64_t block = (o / m) % count;
    std::copy_n(w.data.data() + o * c * k, c * k,
                out.data.data() + (o * c * count + block * c) * k);
  }
  return out;
}

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_LAYOUT_H
