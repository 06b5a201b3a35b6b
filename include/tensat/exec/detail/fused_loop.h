// FusedLoop: a `fused` node compiled into one loop over its output, chunk by chunk, with a
// contraction's epilogue run while its product is in cache (a convolution's per-channel
// post-ops by conv_post_ops.h).
#ifndef TENSAT_EXEC_DETAIL_FUSED_LOOP_H
#define TENSAT_EXEC_DETAIL_FUSED_LOOP_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/exec/detail/conv.h"
#include "tensat/exec/detail/conv_post_ops.h"
#include "tensat/exec/detail/elementwise.h"
#include "tensat/exec/detail/fused_term.h"
#include "tensat/exec/detail/layout.h"
#include "tensat/exec/detail/matmul.h"
#include "tensat/exec/detail/onnx_ops.h"
#include "tensat/exec/detail/pool.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/post_ops.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// A fused kernel compiled into one loop over its output (XLA's loop emitter, on the CPU): the
/// body's elementwise, broadcast, injective and reshape terms are evaluated chunk by chunk
/// (`kChunk` elements at a time, in cache), each term reading its operands at the positions its
/// index map gives, so no intermediate of the loop is materialized as a tensor. A contraction in
/// the body runs first as one GEMM over its loop-evaluated operands (its epilogue then reads it
/// chunk by chunk); a reduction root accumulates its operand's chunks as they are produced.
class FusedLoop {
 public:
  /// Elements per chunk: small enough that a body's chunks stay in L1/L2, large enough that the
  /// per-chunk dispatch is amortized and Eigen vectorizes each term.
  static constexpr std::int64_t kChunk = 2048;

  /// Chunk-sized scratch blocks: a loop's own, or shared by the loops an evaluator runs one
  /// after another (a kernel then allocates none).
  struct Scratch {
    std::vector<std::unique_ptr<float[]>> values;
    std::vector<std::unique_ptr<std::int64_t[]>> indices;
  };

  FusedLoop() = default;
  explicit FusedLoop(Scratch& scratch) : scratch_(&scratch) {}
  FusedLoop(const FusedLoop&) = delete;
  FusedLoop& operator=(const FusedLoop&) = delete;

  /// Room for `n` terms.
  void reserve(std::size_t n) {
    terms_.reserve(n);
    memo_.reserve(n);
  }

  /// One term of the body (`FusedTerm`).
  using Term = FusedTerm;

  /// Adds a term; returns its index. Operands must have been added before.
  std::size_t add(Term t) {
    t.elements = HostTensor::count(t.dims);
    if (t.op == Op::Concat) {  // each part's extent along the axis, once (not per chunk)
      t.part_extents.clear();
      for (std::size_t part : t.operands)
        t.part_extents.push_back(terms_[part].dims[static_cast<std::size_t>(t.attrs[0])]);
    }
    terms_.push_back(std::move(t));
    memo_.push_back({});
    return terms_.size() - 1;
  }
  [[nodiscard]] Term& term(std::size_t t) { return terms_[t]; }

  /// Whether a body op has a loop form here (elementwise, broadcast, injective, reshape).
  [[nodiscard]] static bool loop_op(Op op) noexcept {
    if (is_elementwise(op)) return true;
    switch (op) {
      case Op::Transpose:
      case Op::Broadcast:
      case Op::Slice:
      case Op::Pad:
      case Op::Concat:
      case Op::Reshape:
        return true;
      default:
        return false;
    }
  }

  /// The value of the last term added (the body's root).
  [[nodiscard]] HostTensor run() {
    if (std::optional<HostTensor> out = run_epilogue_in_place()) return std::move(*out);
    // Contractions (at most one in kernels built by fusion_rules; any number works) become leaves.
    for (std::size_t t = 0; t < terms_.size(); ++t) {
      Term& term = terms_[t];
      if (!is_contraction(term.op)) continue;
      const auto a = materialize(term.operands[0]);
      const auto b = materialize(term.operands[1]);
      HostTensor r = term.op == Op::MatMul ? matmul(*a, *b, activation_of(term.attrs[0]))
                                           : conv2d(*a, *b, term.attrs[0], term.attrs[1],
                                                    term.attrs[2], activation_of(term.attrs[3]));
      r.dtype = term.dtype;
      round_tensor(r);
      term.leaf = std::make_shared<const HostTensor>(std::move(r));
    }
    const std::size_t root = terms_.size() - 1;
    const Term& r = terms_[root];
    if (r.op == Op::ReduceSum || r.op == Op::ReduceMax || r.op == Op::ReduceMean)
      return reduce_root(r);
    if (r.leaf) return *r.leaf;
    HostTensor out(r.dims, r.dtype);
    // An elementwise root writes its chunk straight into the output (no scratch block, no copy):
    // the output is a fresh tensor, so no operand reads it.
    root_output_ = &r;
    for (std::int64_t start = 0; start < r.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, r.elements - start);
      begin_chunk();
      root_output_at_ = out.data.data() + start;
      const float* p = eval(root, Indices{start, n, nullptr});
      if (p != root_output_at_) std::copy_n(p, n, out.data.data() + start);
    }
    root_output_ = nullptr;
    return out;
  }

 private:
  /// Positions in a term's output: the range [start, start + size), or `list[0..size)`.
  struct Indices {
    std::int64_t start = 0, size = 0;
    const std::int64_t* list = nullptr;
    [[nodiscard]] std::int64_t at(std::int64_t k) const noexcept {
      return list ? list[k] : start + k;
    }
  };
  struct Memo {
    std::uint64_t chunk = 0;
    std::int64_t start = 0, size = 0;
    const float* values = nullptr;
  };

  /// Whether an in-place epilogue evaluates `op`: an elementwise op whose operands are read at
  /// the output's positions (smul's scalar and a clip's two bounds aside: tensors from outside
  /// the kernel, read at position 0).
  static bool epilogue_op(Op op) noexcept { return is_elementwise(op); }
  /// Whether operand `k` of `op` is one read at position 0 only (a scalar, not a map).
  static bool scalar_operand(Op op, std::size_t k) noexcept {
    return (op == Op::SMul && k == 1) || (op == Op::Clip && k >= 1);
  }

  /// A kernel whose root is an elementwise epilogue of its one contraction, every term between
  /// them elementwise (or a reshape, or a broadcast of a tensor from outside the kernel) over the
  /// same positions, all f32: the contraction writes straight into the output and the epilogue
  /// runs on each part as the contraction finishes it (`Epilogue`: still in cache), overwriting
  /// it with the kernel's values. Nothing otherwise.
  std::optional<HostTensor> run_epilogue_in_place() {
    const std::size_t root = terms_.size() - 1;
    std::size_t contraction = terms_.size();
    for (std::size_t t = 0; t < terms_.size(); ++t) {
      if (terms_[t].leaf) continue;
      if (terms_[t].dtype != DType::F32) return std::nullopt;
      if (is_contraction(terms_[t].op)) {
        if (contraction != terms_.size()) return std::nullopt;
        contraction = t;
      }
    }
    if (contraction == terms_.size()) return std::nullopt;
    if (std::optional<HostTensor> out = run_post_ops(terms_, root, contraction)) return out;
    if (!epilogue_op(terms_[root].op)) return std::nullopt;
    const std::int64_t n = terms_[root].elements;
    if (terms_[contraction].elements != n) return std::nullopt;
    // The terms the epilogue evaluates: from the root down to the contraction and the leaves.
    std::vector<bool> seen(terms_.size(), false);
    std::vector<std::size_t> stack{root};
    bool by_block = true;  // no full-size operand besides the product: run on each column block
    while (!stack.empty()) {
      const std::size_t t = stack.back();
      stack.pop_back();
      if (seen[t] || t == contraction) continue;
      seen[t] = true;
      const Term& term = terms_[t];
      if (term.leaf) {
        if (term.elements != n) return std::nullopt;  // read at the output's positions
        by_block = false;
        continue;
      }
      if (term.elements != n) return std::nullopt;
      if (term.op == Op::Broadcast && terms_[term.operands[0]].leaf)
        continue;  // a bias or scale, read as a view
      if (!epilogue_op(term.op) && term.op != Op::Reshape) return std::nullopt;
      for (std::size_t k = 0; k < term.operands.size(); ++k) {
        if (scalar_operand(term.op, k)) {  // read at position 0: a tensor from outside
          if (!terms_[term.operands[k]].leaf) return std::nullopt;
          continue;
        }
        stack.push_back(term.operands[k]);
      }
    }
    Term& c = terms_[contraction];
    const auto a = materialize(c.operands[0]);
    const auto b = materialize(c.operands[1]);
    HostTensor out(terms_[root].dims, DType::F32);
    // The contraction's leaf is the output itself: the epilogue reads a part, then overwrites it.
    c.leaf = std::shared_ptr<const HostTensor>(&out, [](const HostTensor*) {});
    // The root writes each chunk straight over the output's part it was computed from (an
    // elementwise term reads its operands at the positions it writes, and nothing reads the
    // root), so the chunk needs no scratch block and no copy.
    root_output_ = &terms_[root];
    const Epilogue epilogue = [&](std::int64_t start, std::int64_t length) {
      for (std::int64_t at = start; at < start + length; at += kChunk) {
        const std::int64_t size = std::min(kChunk, start + length - at);
        begin_chunk();
        root_output_at_ = out.data.data() + at;
        const float* values = eval(root, Indices{at, size, nullptr});
        if (values != root_output_at_) std::copy_n(values, size, out.data.data() + at);
      }
    };
    if (c.op == Op::MatMul)
      matmul_into(*a, *b, activation_of(c.attrs[0]), out, &epilogue);
    else
      conv2d_into(*a, *b, c.attrs[0], c.attrs[1], c.attrs[2], activation_of(c.attrs[3]), out,
                  &epilogue, by_block);
    root_output_ = nullptr;
    c.leaf.reset();
    return out;
  }

  void begin_chunk() noexcept {
    ++chunk_;
    next_values_ = 0;
    next_indices_ = 0;
  }
  // Chunk-sized scratch blocks, handed out in order and all released at the next chunk: a
  // block's address stays valid while the chunk is evaluated.
  float* values_block() {
    auto& blocks = scratch_->values;
    if (next_values_ == blocks.size()) blocks.emplace_back(new float[kChunk]);
    return blocks[next_values_++].get();
  }
  std::int64_t* indices_block() {
    auto& blocks = scratch_->indices;
    if (next_indices_ == blocks.size()) blocks.emplace_back(new std::int64_t[kChunk]);
    return blocks[next_indices_++].get();
  }

  /// The whole value of term `t` (a leaf's tensor, else evaluated chunk by chunk).
  std::shared_ptr<const HostTensor> materialize(std::size_t t) {
    const Term& term = terms_[t];
    if (term.leaf) return term.leaf;
    HostTensor out(term.dims, term.dtype);
    for (std::int64_t start = 0; start < term.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, term.elements - start);
      begin_chunk();
      std::copy_n(eval(t, Indices{start, n, nullptr}), n, out.data.data() + start);
    }
    return std::make_shared<const HostTensor>(std::move(out));
  }

  /// A reduction root: its operand's chunks accumulated into the output in the order the
  /// unfused `reduce` adds them (so the sums are bit-identical).
  HostTensor reduce_root(const Term& r) {
    const Term& x = terms_[r.operands[0]];
    std::int64_t outer, extent, inner;
    split_dims(x.dims, r.attrs[0], outer, extent, inner);
    HostTensor out(r.dims, r.dtype);
    const bool is_max = r.op == Op::ReduceMax;
    std::fill(out.data.begin(), out.data.end(),
              is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
    float* acc = out.data.data();
    std::int64_t o = 0, e = 0, in = 0;  // the position of the next operand element
    for (std::int64_t start = 0; start < x.elements; start += kChunk) {
      const std::int64_t n = std::min(kChunk, x.elements - start);
      begin_chunk();
      const float* p = eval(r.operands[0], Indices{start, n, nullptr});
      if (inner == 1) {  // runs along the reduced axis, each into one output element
        for (std::int64_t k = 0; k < n;) {
          const std::int64_t len = std::min(n - k, extent - e);
          float a = acc[o];
          if (is_max)
            for (std::int64_t j = 0; j < len; ++j) a = std::max(a, p[k + j]);
          else
            for (std::int64_t j = 0; j < len; ++j) a += p[k + j];
          acc[o] = a;
          k += len;
          e += len;
          if (e == extent) {
            e = 0;
            ++o;
          }
        }
        continue;
      }
      for (std::int64_t k = 0; k < n;) {  // runs along the inner axes: one add per output element
        const std::int64_t len = std::min(n - k, inner - in);
        float* a = acc + o * inner + in;
        if (is_max)
          for (std::int64_t j = 0; j < len; ++j) a[j] = std::max(a[j], p[k + j]);
        else
          for (std::int64_t j = 0; j < len; ++j) a[j] += p[k + j];
        k += len;
        in += len;
        if (in == inner) {
          in = 0;
          if (++e == extent) {
            e = 0;
            ++o;
          }
        }
      }
    }
    if (r.op == Op::ReduceMean)
      for (float& v : out.data) v /= static_cast<float>(extent);
    round_tensor(out);
    return out;
  }

  /// Output positions `ix` of a term with output `dims` mapped to its operand's flat positions
  /// `offset + sum_k m_k * strides_k` (m: the multi-index), into an index block.
  const std::int64_t* map_strided(const Indices& ix, const Dims& dims,
                                  const std::vector<std::int64_t>& strides, std::int64_t offset) {
    std::int64_t* out = indices_block();
    const std::size_t r = dims.size();
    if (r == 0) {
      std::fill_n(out, ix.size, offset);
      return out;
    }
    std::int64_t m[16];
    auto decompose = [&](std::int64_t f) {
      std::int64_t src = offset;
      for (std::size_t a = r; a-- > 0;) {
        m[a] = f % dims[a];
        f /= dims[a];
        src += m[a] * strides[a];
      }
      return src;
    };
    if (ix.list || r > 16) {
      for (std::int64_t k = 0; k < ix.size; ++k) out[k] = decompose(ix.at(k));
      return out;
    }
    std::int64_t src = decompose(ix.start);  // contiguous: runs along the last axis
    for_each_run(dims, strides, m, src, ix.size,
                 [&](std::int64_t k, std::int64_t from, std::int64_t len, std::int64_t step) {
                   for (std::int64_t j = 0; j < len; ++j) out[k + j] = from + j * step;
                 });
    return out;
  }

  /// Walks `n` positions of an odometer over `dims` (multi-index `m`, operand position `src`,
  /// both advanced) in runs along the last axis: `run(k, from, len, step)` for output positions
  /// [k, k + len) reading the operand at from, from + step, ...
  template <class Run>
  static void for_each_run(const Dims& dims, const std::vector<std::int64_t>& strides,
                           std::int64_t* m, std::int64_t& src, std::int64_t n, const Run& run) {
    const std::size_t r = dims.size();
    const std::int64_t last = dims[r - 1], step = strides[r - 1];
    for (std::int64_t k = 0; k < n;) {
      const std::int64_t len = std::min(n - k, last - m[r - 1]);
      run(k, src, len, step);
      k += len;
      src += len * step;
      m[r - 1] += len;
      if (m[r - 1] < last) break;  // only the last run can end inside the axis
      src -= step * last;
      m[r - 1] = 0;
      for (std::size_t a = r - 1; a-- > 0;) {
        src += strides[a];
        if (++m[a] < dims[a]) break;
        src -= strides[a] * dims[a];
        m[a] = 0;
      }
    }
  }

  /// A transpose, broadcast or slice at positions `ix`: a leaf operand is read directly, run by
  /// run along the last axis (a broadcast run is a fill); another operand is evaluated once over
  /// the contiguous range its reads span when that fits a chunk (so it is vectorized and shared
  /// with other readers of the same range), else at the mapped positions one by one.
  const float* strided(const Term& term, const Indices& ix) {
    const Term& x = terms_[term.operands[0]];
    const std::size_t r = term.dims.size();
    if (x.leaf && !ix.list && r > 0 && r <= 16) {
      const float* data = x.leaf->data.data();
      float* out = values_block();
      std::int64_t m[16];
      std::int64_t f = ix.start, src = term.offset;
      for (std::size_t a = r; a-- > 0;) {
        m[a] = f % term.dims[a];
        f /= term.dims[a];
        src += m[a] * term.strides[a];
      }
      for_each_run(term.dims, term.strides, m, src, ix.size,
                   [&](std::int64_t k, std::int64_t from, std::int64_t len, std::int64_t step) {
                     if (step == 0)
                       std::fill_n(out + k, len, data[from]);
                     else if (step == 1)
                       std::copy_n(data + from, len, out + k);
                     else
                       for (std::int64_t j = 0; j < len; ++j) out[k + j] = data[from + j * step];
                   });
      return out;
    }
    const std::int64_t* at = map_strided(ix, term.dims, term.strides, term.offset);
    if (x.leaf) return eval(term.operands[0], Indices{0, ix.size, at});
    std::int64_t lo = at[0], hi = at[0];
    for (std::int64_t k = 1; k < ix.size; ++k) {
      lo = std::min(lo, at[k]);
      hi = std::max(hi, at[k]);
    }
    if (hi - lo >= kChunk) return eval(term.operands[0], Indices{0, ix.size, at});
    const float* v = eval(term.operands[0], Indices{lo, hi - lo + 1, nullptr});
    float* out = values_block();
    for (std::int64_t k = 0; k < ix.size; ++k) out[k] = v[at[k] - lo];
    return out;
  }

  /// Term `t`'s values at positions `ix` (at most kChunk of them).
  const float* eval(std::size_t t, const Indices& ix) {
    const Term& term = terms_[t];
    Memo& memo = memo_[t];
    if (!ix.list && memo.chunk == chunk_ && memo.start == ix.start && memo.size == ix.size)
      return memo.values;
    const float* result = compute(term, ix);
    if (!ix.list) memo = Memo{chunk_, ix.start, ix.size, result};
    return result;
  }

  const float* compute(const Term& term, const Indices& ix) {
    const std::int64_t n = ix.size;
    if (term.leaf) {
      const float* data = term.leaf->data.data();
      if (!ix.list) return data + ix.start;
      float* out = values_block();
      for (std::int64_t k = 0; k < n; ++k) out[k] = data[ix.list[k]];
      return out;
    }
    switch (term.op) {
      case Op::Reshape:
        return eval(term.operands[0], ix);  // the same flat positions
      case Op::Transpose:
      case Op::Broadcast:
      case Op::Slice:
        return strided(term, ix);
      case Op::Pad:
        return pad(term, ix);
      case Op::Concat:
        return concat(term, ix);
      default:
        break;
    }
    float* out = &term == root_output_ && !ix.list ? root_output_at_ : values_block();
    ArrayMap o(out, n);
    const ConstArrayMap a(eval(term.operands[0], ix), n);
    switch (term.op) {
      case Op::EwAdd:
        o = a + ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwMul:
        o = a * ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::SMul:
        o = a * eval(term.operands[1], Indices{0, 1, nullptr})[0];
        break;
      // Transcendental ops through the unfused kernels' helpers: small functions in which the
      // compiler inlines Eigen's vectorized exp and tanh (in this one it calls them per packet).
      case Op::Relu:
        o = a.max(0.0f);
        break;
      case Op::Tanh:
        activate_to(out, a.data(), n, Activation::Tanh);
        break;
      case Op::Sigmoid:
        activate_to(out, a.data(), n, Activation::Sigmoid);
        break;
      case Op::Exp:
        exp_to(out, a.data(), n);
        break;
      case Op::Gelu:
        o = a;
        gelu(out, n);
        break;
      case Op::GeluErf:
        gelu_erf(out, a.data(), n);
        break;
      case Op::Silu:
        silu(out, a.data(), n);
        break;
      case Op::HardSwish:
        hard_swish(out, a.data(), n);
        break;
      case Op::EwSub:
        o = a - ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwDiv:
        o = a / ConstArrayMap(eval(term.operands[1], ix), n);
        break;
      case Op::EwPow: {
        const float* e = eval(term.operands[1], ix);
        if (e == out) {  // an epilogue root over its contraction's output: keep the exponents
          float* kept = values_block();
          std::copy_n(e, n, kept);
          e = kept;
        }
        o = a;
        pow_inplace(out, e, n);
        break;
      }
      case Op::Sqrt:
        o = a;
        sqrt_inplace(out, n);
        break;
      case Op::Erf:
        o = a.erf();
        break;
      case Op::Clip: {
        const float lo = eval(term.operands[1], Indices{0, 1, nullptr})[0];
        const float hi = eval(term.operands[2], Indices{0, 1, nullptr})[0];
        o = a;
        clip(out, n, lo, hi);
        break;
      }
      default:
        throw ExecutionError(
            fmt::format("execute: '{}' has no loop form in a fused kernel", op_name(term.op)));
    }
    if (term.dtype != DType::F32)
      for (std::int64_t k = 0; k < n; ++k) out[k] = round_to(out[k], term.dtype);
    return out;
  }

  /// Output positions `ix` of a `pad` or `concat` along `axis` (output `dims`), gathered from
  /// `parts`: part k covers `extents[k]` positions of the axis, in order; a part of `kZeros` is
  /// padding (zeros). A contiguous request splits into runs that are contiguous in their part
  /// (no per-element arithmetic); a list request maps each position.
  static constexpr std::size_t kZeros = static_cast<std::size_t>(-1);
  const float* gather_parts(const Dims& dims, std::int64_t axis,
                            const std::vector<std::size_t>& parts,
                            const std::vector<std::int64_t>& extents, const Indices& ix,
                            float* dest) {
    std::int64_t outer, extent, inner;
    split_dims(dims, axis, outer, extent, inner);
    if (!ix.list) {
      // Output positions increase with a part's positions, so the positions of part k that the
      // request covers are one contiguous range of it: each part is evaluated once, over that
      // range, and copied run by run (a part read run by run would be dispatched per run).
      const std::int64_t end = ix.start + ix.size;
      const auto walk =
          [&](const auto& visit) {  // visit(part, output position, part position, length)
            // The position as (outer o, axis a, inner i), in part k whose first axis position is
            // `first`; advanced run by run without dividing.
            std::int64_t o = ix.start / (extent * inner), a = (ix.start / inner) % extent,
                         i = ix.start % inner;
            std::size_t k = 0;
            std::int64_t first = 0;
            while (a >= first + extents[k]) first += extents[k++];
            for (std::int64_t p = ix.start; p < end;) {
              const std::int64_t left =
                  (first + extents[k] - a) * inner - i;  // positions of part k in this row
              const std::int64_t len = std::min(end - p, left);
              visit(k, p, (o * extents[k] + (a - first)) * inner + i, len);
              p += len;
              if (len < left) break;  // the request ends inside the part
              a = first += extents[k];
              i = 0;
              for (++k; k == parts.size() || extents[k] == 0;
                   ++k) {  // the next part with positions
                if (k == parts.size()) {
                  k = 0;
                  a = first = 0;
                  ++o;
                  if (extents[0] > 0) break;
                }
              }
            }
          };
      // The first position of part k (from axis position `first`) at or after output position p.
      const auto part_position = [&](std::int64_t p, std::size_t k, std::int64_t first) {
        const std::int64_t o = p / (extent * inner), a = (p / inner) % extent;
        if (a < first) return o * extents[k] * inner;
        if (a >= first + extents[k]) return (o + 1) * extents[k] * inner;
        return (o * extents[k] + a - first) * inner + p % inner;
      };
      std::vector<std::int64_t> lo(parts.size(), 0);
      std::vector<const float*> values(parts.size(), nullptr);
      std::int64_t first = 0;
      for (std::size_t k = 0; k < parts.size(); first += extents[k++]) {
        if (parts[k] == kZeros) continue;
        lo[k] = part_position(ix.start, k, first);
        const std::int64_t hi = part_position(end, k, first);
        if (hi <= lo[k]) continue;
        values[k] = eval(parts[k], Indices{lo[k], hi - lo[k], nullptr});
        if (hi - lo[k] == ix.size) return values[k];  // the whole request is this part's
      }
      float* out = dest ? dest : values_block();
      walk([&](std::size_t k, std::int64_t p, std::int64_t src, std::int64_t len) {
        float* to = out + (p - ix.start);
        const float* from = parts[k] == kZeros ? nullptr : values[k] + (src - lo[k]);
        if (len >= 64) {
          if (from)
            std::copy_n(from, len, to);
          else
            std::fill_n(to, len, 0.0f);
          return;
        }
        for (std::int64_t j = 0; j < len; ++j)
          to[j] = from ? from[j] : 0.0f;  // short rows: no library call
      });
      return out;
    }
    float* out = values_block();
    std::int64_t* src = indices_block();
    std::int64_t* where = indices_block();
    std::int64_t first = 0;
    for (std::size_t k = 0; k < parts.size(); first += extents[k++]) {
      std::int64_t m = 0;
      for (std::int64_t j = 0; j < ix.size; ++j) {
        const std::int64_t f = ix.list[j], a = (f / inner) % extent - first;
        if (a < 0 || a >= extents[k]) continue;
        if (parts[k] == kZeros) {
          out[j] = 0.0f;
          continue;
        }
        src[m] = ((f / (inner * extent)) * extents[k] + a) * inner + f % inner;
        where[m++] = j;
      }
      if (m) {
        const float* v = eval(parts[k], Indices{0, m, src});
        for (std::int64_t j = 0; j < m; ++j) out[where[j]] = v[j];
      }
    }
    return out;
  }

  /// pad: positions inside the operand read it, the others are zero.
  const float* pad(const Term& term, const Indices& ix) {
    const std::int64_t axis = term.attrs[0];
    const std::int64_t x_extent = terms_[term.operands[0]].dims[static_cast<std::size_t>(axis)];
    return gather_parts(term.dims, axis, {kZeros, term.operands[0], kZeros},
                        {term.attrs[1], x_extent, term.attrs[2]}, ix, output_of(term, ix));
  }

  /// concat: each position reads the operand whose part of the axis holds it.
  const float* concat(const Term& term, const Indices& ix) {
    return gather_parts(term.dims, term.attrs[0], term.operands, term.part_extents, ix,
                        output_of(term, ix));
  }

  /// Where term `t`'s values at `ix` go: the kernel's output for the root's chunk, else nowhere
  /// yet.
  float* output_of(const Term& t, const Indices& ix) const noexcept {
    return &t == root_output_ && !ix.list ? root_output_at_ : nullptr;
  }

  std::vector<Term> terms_;
  std::vector<Memo> memo_;
  std::uint64_t chunk_ = 0;
  const Term* root_output_ = nullptr;  // the root whose chunks `run` has written in place
  float* root_output_at_ = nullptr;    // where the current chunk of the root goes
  Scratch own_scratch_;
  Scratch* scratch_ = &own_scratch_;
  std::size_t next_values_ = 0, next_indices_ = 0;
};

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_FUSED_LOOP_H
