// The ONNX exporter's forms: the dialect terms written in the shapes onnxruntime's graph
// optimizer fuses (`Exporter::plan_fusible_forms`) and the matchers that find them.
#ifndef TENSAT_ONNX_DETAIL_EXPORT_FORMS_H
#define TENSAT_ONNX_DETAIL_EXPORT_FORMS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tensat/onnx/detail/exporter.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

inline void Exporter::plan_fusible_forms(const std::vector<std::size_t>& uses) {
  const std::size_t n = p_.size();
  absorbed_.assign(n, false);
  layer_norms_.clear();
  conv_biases_.clear();
  std::vector<std::vector<std::size_t>> readers(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed_[i] || frontier_[i] || elided_[i]) continue;
    for (Id c : p_[Id(i)].children()) readers[c.index()].push_back(i);
  }
  std::vector<bool> output(n, false);
  for (std::size_t o : outputs_) output[o] = true;
  for (std::size_t c = 0; c < n; ++c) {
    if (!needed_[c] || frontier_[c] || infos_[c].symbolic || output[c] || readers[c].empty() ||
        readers[c].size() != uses[c])
      continue;
    absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
      return keepdims_reshape(r) || nd_matmul(r) || erf_of_scaled(r);
    });
  }
  // The flattening reshape of N-d products, when only they read it.
  for (std::size_t c = 0; c < n; ++c) {
    if (!needed_[c] || p_[Id(c)].op() != Op::Reshape || !plain(c) || output[c] ||
        readers[c].empty() || readers[c].size() != uses[c])
      continue;
    absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
      return p_[Id(r)].op() == Op::MatMul && absorbed_[r] && p_[Id(r)].children()[1].index() == c &&
             p_[Id(r)].children()[2].index() != c;
    });
  }
  const auto free_node = [&](std::size_t c) {
    return needed_[c] && plain(c) && !output[c] && !readers[c].empty() &&
           readers[c].size() == uses[c];
  };
  // Explicit window padding: each padding node when only window ops that fold it into their
  // pads (or the padding node outside it, folded too) read it; outermost first.
  std::vector<std::optional<ExplicitPadding>> padded(n);
  std::vector<std::vector<std::size_t>> folds(n);  // the window ops that fold padding node c
  std::vector<bool> edge_row(n, false);            // a row slice of an absorbed edge padding
  for (std::size_t r = 0; r < n; ++r) {
    if (!needed_[r] || frontier_[r]) continue;
    padded[r] = window_explicit_padding(r);
    if (padded[r])
      for (std::size_t c : padded[r]->nodes) folds[c].push_back(r);
  }
  for (std::size_t c = n; c-- > 0;) {
    if (folds[c].empty() || absorbed_[c] || !free_node(c)) continue;
    absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
      return (padded[r] && std::count(folds[c].begin(), folds[c].end(), r)) ||
             (absorbed_[r] && (!folds[r].empty() || edge_row[r]));
    });
    // An edge padding's row slices, when only it reads them.
    if (!absorbed_[c] || p_[Id(c)].op() != Op::Concat) continue;
    for (Id part : p_[Id(c)].children()) {
      const std::size_t k = part.index();
      if (p_[Id(k)].op() == Op::Slice && !absorbed_[k] && free_node(k))
        absorbed_[k] = edge_row[k] = std::all_of(readers[k].begin(), readers[k].end(),
                                                 [&](std::size_t r) { return r == c; });
    }
  }
  // Layer normalizations over several axes (outermost form first): their inner nodes when
  // each is read only by the node above it, and the layernorm's constant broadcasts.
  for (std::size_t t = n; t-- > 0;) {
    if (!needed_[t] || absorbed_[t] || frontier_[t] || elided_[t]) continue;
    auto f = layer_norm_form(t);
    if (!f) continue;
    bool free = true;
    for (std::size_t k = 1; k < f->chain.size() && free; ++k) {
      const std::size_t c = f->chain[k];
      free = !absorbed_[c] && free_node(c) &&
             std::all_of(readers[c].begin(), readers[c].end(),
                         [&](std::size_t r) { return r == f->chain[k - 1]; });
    }
    if (!free) continue;
    for (std::size_t k = 1; k < f->chain.size(); ++k) absorbed_[f->chain[k]] = true;
    for (std::size_t k : {std::size_t{1}, std::size_t{2}}) {
      const std::size_t p = p_[Id(f->ln)].children()[k].index();
      if (is_view_broadcast(p) && scalar_constant(p) && free_node(p) &&
          std::all_of(readers[p].begin(), readers[p].end(),
                      [&](std::size_t r) { return r == f->ln; }))
        absorbed_[p] = true;
    }
    layer_norms_.emplace(t, std::move(*f));
  }
  // A convolution's bias add: the convolution, when only the add reads it.
  for (std::size_t t = 0; t < n; ++t) {
    if (!needed_[t] || absorbed_[t] || frontier_[t]) continue;
    const auto f = conv_bias_form(t);
    if (!f || absorbed_[f->first] || !free_node(f->first) || readers[f->first].size() != 1)
      continue;
    absorbed_[f->first] = true;
    conv_biases_.emplace(t, *f);
  }
  // HardSigmoid's affine part: its add when only such clips read it, then its product when
  // only those adds (or clips without an add) read it.
  std::vector<std::optional<HardSigmoidForm>> hard(n);
  for (std::size_t r = 0; r < n; ++r)
    if (needed_[r] && !frontier_[r] && !elided_[r]) hard[r] = hard_sigmoid_form(r);
  std::vector<std::optional<std::size_t>> add_mul(n);  // an absorbed add's product
  for (std::size_t c = 0; c < n; ++c) {
    if (p_[Id(c)].op() != Op::EwAdd || absorbed_[c] || conv_biases_.count(c) || !free_node(c))
      continue;
    absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(),
                               [&](std::size_t r) { return hard[r] && hard[r]->add == c; });
    if (absorbed_[c]) add_mul[c] = hard[readers[c].front()]->mul;
  }
  for (std::size_t c = 0; c < n; ++c) {
    const Op op = p_[Id(c)].op();
    if ((op != Op::SMul && op != Op::EwMul) || absorbed_[c] || !free_node(c)) continue;
    absorbed_[c] = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
      return (absorbed_[r] && add_mul[r] == c) || (hard[r] && !hard[r]->add && hard[r]->mul == c);
    });
  }
  // Residual adds that only layer norms read, as Sum (the runtime would fuse an Add).
  skip_sums_.clear();
  if (!options_.unfused_skip_layer_norm) return;
  std::set<std::size_t> flattens;  // the inputs of layer norms over several axes
  for (const auto& [top, f] : layer_norms_) flattens.insert(f.chain.back());
  for (std::size_t c = 0; c < n; ++c) {
    if (p_[Id(c)].op() != Op::EwAdd || absorbed_[c] || conv_biases_.count(c) || !free_node(c))
      continue;
    const auto ch = p_[Id(c)].children();
    if (is_view_broadcast(ch[0].index()) || is_view_broadcast(ch[1].index())) continue;
    const bool normed = std::all_of(readers[c].begin(), readers[c].end(), [&](std::size_t r) {
      if (p_[Id(r)].op() == Op::LayerNorm && p_[Id(r)].children()[0].index() == c) return true;
      return flattens.count(r) > 0;  // a layer norm over several axes, written as one
    });
    if (normed) skip_sums_.insert(c);
  }
}

inline std::optional<Exporter::HardSigmoidForm> Exporter::hard_sigmoid_form(std::size_t r) const {
  if (p_[Id(r)].op() != Op::Clip || !plain(r)) return std::nullopt;
  const auto ch = p_[Id(r)].children();
  if (scalar_constant(ch[1].index()) != 0.0f || scalar_constant(ch[2].index()) != 1.0f)
    return std::nullopt;
  HardSigmoidForm f;
  std::size_t a = ch[0].index();
  // The constant operand of binary node `a`, and the other one (a product by a scalar reads
  // its scalar second).
  const auto split = [&](std::size_t a,
                         bool either) -> std::optional<std::pair<float, std::size_t>> {
    const auto ac = p_[Id(a)].children();
    for (std::size_t k : {std::size_t{1}, std::size_t{0}}) {
      if (k == 0 && !either) break;
      if (auto v = scalar_constant(ac[k].index())) return std::pair{*v, ac[1 - k].index()};
    }
    return std::nullopt;
  };
  if (p_[Id(a)].op() == Op::EwAdd && plain(a)) {
    if (auto s = split(a, true)) {
      f.beta = s->first;
      f.add = a;
      a = s->second;
    }
  }
  const Op m = p_[Id(a)].op();
  if ((m == Op::SMul || m == Op::EwMul) && plain(a)) {
    if (auto s = split(a, m == Op::EwMul)) {
      f.alpha = s->first;
      f.mul = a;
      a = s->second;
    }
  }
  if ((!f.add && !f.mul) || is_view_broadcast(a) || !plain(a)) return std::nullopt;
  f.x = a;
  return f;
}

inline std::optional<Exporter::ExplicitPadding> Exporter::explicit_padding(std::size_t x,
                                                                           bool edge) const {
  ExplicitPadding e;
  bool seen[2] = {false, false};
  std::size_t c = x;
  const auto value = [&](Id v) { return infos_[v.index()].value; };
  while (e.nodes.size() < 2 && plain(c) && infos_[c].rank() == 4) {
    const auto ch = p_[Id(c)].children();
    std::int64_t axis = -1, before = 0, after = 0;
    std::optional<std::size_t> source;
    if (!edge && p_[Id(c)].op() == Op::Pad) {
      axis = value(ch[0]), before = value(ch[1]), after = value(ch[2]);
      if (before >= 0 && after >= 0) source = ch[3].index();
    } else if (edge && p_[Id(c)].op() == Op::Concat) {
      axis = value(ch[0]);
      // Parts: slice(s, 0, 1) `before` times, s, slice(s, n - 1, n) `after` times.
      const auto row_of = [&](std::size_t part, std::size_t s, bool first) {
        if (p_[Id(part)].op() != Op::Slice || !plain(part)) return false;
        const auto sc = p_[Id(part)].children();
        const std::int64_t n = infos_[s].dims[static_cast<std::size_t>(axis)];
        return sc[3].index() == s && value(sc[0]) == axis && value(sc[1]) == (first ? 0 : n - 1) &&
               value(sc[2]) == (first ? 1 : n);
      };
      for (std::size_t b = 1; b < ch.size() && !source && axis >= 2 && axis <= 3; ++b) {
        const std::size_t s = ch[b].index();
        bool fits = true;
        for (std::size_t k = 1; k < ch.size() && fits; ++k)
          if (k != b) fits = row_of(ch[k].index(), s, k < b);
        if (fits && ch.size() > 2) {
          source = s;
          before = static_cast<std::int64_t>(b) - 1;
          after = static_cast<std::int64_t>(ch.size() - 1 - b);
        }
      }
    }
    if (!source || axis < 2 || axis > 3 || seen[axis - 2]) break;
    seen[axis - 2] = true;
    e.pads[static_cast<std::size_t>(axis - 2)] = before;
    e.pads[static_cast<std::size_t>(axis)] = after;
    e.nodes.push_back(c);
    c = *source;
  }
  if (e.nodes.empty()) return std::nullopt;
  e.source = c;
  return e;
}

inline std::optional<Exporter::ExplicitPadding> Exporter::window_explicit_padding(
    std::size_t r) const {
  const Op op = p_[Id(r)].op();
  if ((op != Op::Conv2d && op != Op::PoolMax && op != Op::PoolAvg) || !plain(r))
    return std::nullopt;
  const auto ch = p_[Id(r)].children();
  const bool conv = op == Op::Conv2d;
  const std::int64_t mode = infos_[ch[conv ? 2 : 4].index()].value;
  if (mode != static_cast<std::int64_t>(tensor::Padding::Valid)) return std::nullopt;
  auto e = explicit_padding(ch[conv ? 4 : 6].index(), op == Op::PoolMax);
  if (e && op == Op::PoolMax) {
    const std::int64_t kh = infos_[ch[0].index()].value, kw = infos_[ch[1].index()].value;
    if (e->pads[0] >= kh || e->pads[2] >= kh || e->pads[1] >= kw || e->pads[3] >= kw)
      return std::nullopt;
  }
  return e;
}

inline std::optional<Exporter::LayerNormForm> Exporter::layer_norm_form(std::size_t t) const {
  if (options_.opset < 17 || !plain(t)) return std::nullopt;
  LayerNormForm f;
  std::size_t c = t;
  // The constant operand (through its broadcast) of binary node `c`, and the other one.
  const auto constant_operand =
      [&](std::size_t c) -> std::optional<std::pair<std::size_t, std::size_t>> {
    const auto ch = p_[Id(c)].children();
    for (std::size_t k : {std::size_t{1}, std::size_t{0}}) {
      const std::size_t o = ch[k].index();
      if (!is_view_broadcast(o)) continue;
      const std::size_t source = p_[Id(o)].children()[1].index();
      if (infos_[source].weight_only && !infos_[source].symbolic)
        return std::pair{source, ch[1 - k].index()};
    }
    return std::nullopt;
  };
  f.chain.push_back(c);
  // The bias add, then the scale product, each perhaps absent.
  for (const auto& [op, param] : {std::pair{Op::EwAdd, &f.bias}, std::pair{Op::EwMul, &f.scale}}) {
    if (p_[Id(c)].op() != op) continue;
    const auto k = constant_operand(c);
    if (!k || !plain(k->second)) return std::nullopt;
    *param = k->first;
    c = k->second;
    f.chain.push_back(c);
  }
  if (p_[Id(c)].op() != Op::Reshape) return std::nullopt;
  const std::size_t ln = p_[Id(c)].children()[1].index();
  if (p_[Id(ln)].op() != Op::LayerNorm || !plain(ln)) return std::nullopt;
  const std::size_t q = p_[Id(ln)].children()[0].index();
  if (p_[Id(q)].op() != Op::Reshape || !plain(q)) return std::nullopt;
  f.chain.push_back(ln);
  f.chain.push_back(q);
  f.ln = ln;
  f.source = p_[Id(q)].children()[1].index();
  const Dims& d = infos_[f.source].dims;
  const Dims& flat = infos_[q].dims;
  if (infos_[c].dims != d || flat.size() != 2 || d.size() < 2) return std::nullopt;
  // The axis: where the flattening splits the source (the constants' shape decides between
  // splits that differ only by axes of size 1).
  const auto params_fit = [&](std::size_t axis) {
    const Dims trailing(d.begin() + static_cast<std::ptrdiff_t>(axis), d.size() - axis);
    for (const auto& p : {f.scale, f.bias})
      if (p && infos_[*p].dims != trailing) return false;
    return true;
  };
  std::int64_t outer = 1;
  for (std::size_t a = 1; a < d.size() && !f.axis; ++a) {
    outer *= d[a - 1];
    if (outer == flat[0] && infos_[q].elements() == infos_[f.source].elements() && params_fit(a))
      f.axis = static_cast<std::int64_t>(a);
  }
  if (!f.axis) return std::nullopt;
  const auto lc = p_[Id(ln)].children();
  if (f.scale && scalar_constant(lc[1].index()) != 1.0f) return std::nullopt;
  if ((f.scale || f.bias) && scalar_constant(lc[2].index()) != 0.0f) return std::nullopt;
  for (std::size_t k : {std::size_t{1}, std::size_t{2}})
    if (!infos_[lc[k].index()].weight_only) return std::nullopt;
  if (lc.size() == 4 && !constant_value(lc[3].index())) return std::nullopt;
  return f;
}

inline std::optional<std::pair<std::size_t, std::size_t>> Exporter::conv_bias_form(
    std::size_t t) const {
  if (p_[Id(t)].op() != Op::EwAdd || !plain(t)) return std::nullopt;
  const auto ch = p_[Id(t)].children();
  for (std::size_t k : {std::size_t{0}, std::size_t{1}}) {
    const std::size_t c = ch[k].index(), o = ch[1 - k].index();
    if (p_[Id(c)].op() != Op::Conv2d || !plain(c) || !is_view_broadcast(o)) continue;
    if (infos_[p_[Id(c)].children()[3].index()].value != 0) continue;  // an activation first
    const std::size_t source = p_[Id(o)].children()[1].index();
    const Op sop = p_[Id(source)].op();
    if (!(sop == Op::Weight || frontier_[source]) || infos_[source].symbolic) continue;
    const Dims& sd = infos_[source].dims;
    const std::int64_t channels = infos_[c].dims[1];
    // Right-aligned against [N, C, H, W]: C on the channel axis, 1 elsewhere.
    bool fits = sd.size() >= 1 && sd.size() <= 4 && infos_[source].elements() == channels;
    for (std::size_t a = 0; a < sd.size() && fits; ++a) {
      const std::size_t axis = 4 - sd.size() + a;
      fits = sd[a] == (axis == 1 ? channels : 1);
    }
    if (fits) return std::pair{c, source};
  }
  return std::nullopt;
}

inline std::optional<Exporter::ExplicitPadding> Exporter::folded_padding(std::size_t r,
                                                                         bool top_level) const {
  if (!top_level) return std::nullopt;
  auto e = window_explicit_padding(r);
  if (!e || !absorbed_[e->nodes.front()]) return std::nullopt;
  return e;
}

inline bool Exporter::keepdims_reshape(std::size_t r) const {
  if (p_[Id(r)].op() != Op::Reshape || !plain(r)) return false;
  const std::size_t c = p_[Id(r)].children()[1].index();
  const Op op = p_[Id(c)].op();
  if ((op != Op::ReduceSum && op != Op::ReduceMax && op != Op::ReduceMean) || !plain(c))
    return false;
  Dims want = infos_[p_[Id(c)].children()[1].index()].dims;
  const std::int64_t axis = infos_[p_[Id(c)].children()[0].index()].value;
  if (axis < 0 || axis >= static_cast<std::int64_t>(want.size())) return false;
  want[static_cast<std::size_t>(axis)] = 1;
  return infos_[r].dims == want;
}

inline bool Exporter::nd_matmul(std::size_t r) const {
  if (p_[Id(r)].op() != Op::Reshape || !plain(r)) return false;
  const std::size_t m = p_[Id(r)].children()[1].index();
  if (p_[Id(m)].op() != Op::MatMul || !plain(m)) return false;
  const std::size_t q = p_[Id(m)].children()[1].index();
  if (p_[Id(q)].op() != Op::Reshape || !plain(q)) return false;
  const Dims& x = infos_[p_[Id(q)].children()[1].index()].dims;
  if (x.size() < 3) return false;
  Dims out;
  std::int64_t rows = 1;
  for (std::size_t k = 0; k + 1 < x.size(); ++k) {
    out.push_back(x[k]);
    rows *= x[k];
  }
  if (infos_[q].dims != Dims{rows, x.back()}) return false;
  out.push_back(infos_[m].dims.back());
  return infos_[r].dims == out;
}

inline bool Exporter::erf_of_scaled(std::size_t r) const {
  if (p_[Id(r)].op() != Op::Erf || !plain(r)) return false;
  const std::size_t m = p_[Id(r)].children()[0].index();
  if (p_[Id(m)].op() != Op::EwMul || !plain(m)) return false;
  return one_element_constant(p_[Id(m)].children()[1].index()) ||
         one_element_constant(p_[Id(m)].children()[0].index());
}
}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_EXPORT_FORMS_H
