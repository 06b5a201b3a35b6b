// Segments: a program cut along narrow cuts of its dataflow into pieces of at most τ operators,
// each a program of its own, and the optimized pieces stitched back into one program.
#ifndef TENSAT_TENSOR_SEGMENT_H
#define TENSAT_TENSOR_SEGMENT_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// One piece of a program cut by `segment_program`.
struct Segment {
  /// The piece as a program of its own: the tensors it reads from earlier pieces are inputs
  /// named `input_names[k]`; its root is its one output, or a `noop` of its outputs in order.
  RecExpr<TensorNode> program;
  /// Ids, in the whole program, of the tensors its inputs stand for (`input_names` in order).
  std::vector<Id> live_in;
  std::vector<std::string> input_names;
  /// Ids, in the whole program, of its outputs (the root, or the root noop's children).
  std::vector<Id> live_out;
  /// Its operators: positions [first_op, first_op + ops) among the program's operators.
  std::size_t first_op = 0, ops = 0;
};

namespace detail {

/// Attributes, sources and weight-only tensors: copied into every segment that reads them
/// (weights cost nothing at run time, and a weight-only term is computed once, offline).
[[nodiscard]] inline bool free_node(const TensorNode& node, const TensorInfo& info) {
  return is_attribute(node.op()) || is_source(node.op()) || info.weight_only;
}

/// Copies node `id` of `from` (and what it needs) into `to`, through `memo` (old id -> new id).
inline Id copy_node(const RecExpr<TensorNode>& from, Id id, RecExpr<TensorNode>& to,
                    std::vector<Id>& memo) {
  if (memo[id.index()] != kInvalidId) return memo[id.index()];
  TensorNode node = from[id];
  for (Id& c : node.children()) c = copy_node(from, c, to, memo);
  return memo[id.index()] = to.add(std::move(node));
}

/// Operators that rewrites rarely see through (activations, normalizations, softmax, opaque
/// nodes): a tensor they produce is the best kind to cut at. Products, reshapes, transposes and
/// sums are not: the rules reassociate and merge across them (e.g. an output projection with
/// the next layer's Q, K and V projections).
[[nodiscard]] inline bool barrier_op(Op op) {
  return is_unary_elementwise(op) || op == Op::Clip || op == Op::Softmax || op == Op::LayerNorm ||
         op == Op::BatchNorm || op == Op::Opaque;
}

/// The nodes of `expr` reachable from `root`, renumbered in order, equal nodes shared.
[[nodiscard]] inline RecExpr<TensorNode> compact(const RecExpr<TensorNode>& expr, Id root) {
  const std::vector<bool> needed = reachable_nodes(expr, root);
  RecExpr<TensorNode> out;
  std::vector<Id> renumber(expr.size(), kInvalidId);
  std::unordered_map<TensorNode, Id, NodeHash> seen;
  for (std::size_t i = 0; i <= root.index(); ++i) {
    if (!needed[i]) continue;
    TensorNode node = expr[Id(i)];
    for (Id& c : node.children()) c = renumber[c.index()];
    auto [it, inserted] = seen.emplace(node, kInvalidId);
    if (inserted) it->second = out.add(std::move(node));
    renumber[i] = it->second;
  }
  return out;
}

}  // namespace detail

/// Cuts `program` into segments of at most `max_ops` operators (attributes, sources and
/// weight-only terms not counted: every segment copies those it reads). Each cut is placed
/// between `max_ops / 2` and `max_ops` operators after the previous one where it costs least:
/// a tensor crossing it costs 1 if an activation, normalization or softmax made it, else 2, and
/// 2 more if it has readers on both sides (a tensor read by several operators stays with them,
/// so the multi-pattern rules still see, e.g., the Q, K and V products of one input together);
/// ties go to the later cut. A cut never crosses a `split`'s pair. Operators are taken in the
/// program's order, which is topological; those with no path to the root belong to no
/// segment. A program of at most `max_ops` operators, one with fused kernels, or `max_ops` 0
/// gives one segment: the program. Throws `ShapeError` for an ill-typed program, `Error` for an
/// empty one.
[[nodiscard]] inline std::vector<Segment> segment_program(const RecExpr<TensorNode>& program,
                                                          std::size_t max_ops) {
  if (program.empty()) throw Error("segment_program: an empty program");
  const std::vector<TensorInfo> infos = check_program(program);
  const std::size_t n = program.size();
  const Id root = program.root();
  const std::vector<bool> needed =
      reachable_nodes(program, root);  // the others belong to no segment
  const bool noop_root = program[root].op() == Op::Noop;
  // Operators in order; pos[i]: position of node i among them (or npos).
  constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> pos(n, npos);
  std::vector<Id> ops;
  bool fused = false;
  for (std::size_t i = 0; i < n; ++i) {
    const TensorNode& node = program[Id(i)];
    fused = fused || node.op() == Op::Fused || node.op() == Op::Arg;
    if (!needed[i] || detail::free_node(node, infos[i]) || (noop_root && Id(i) == root)) continue;
    pos[i] = ops.size();
    ops.push_back(Id(i));
  }
  const std::size_t m = ops.size();
  std::vector<Segment> segments;
  if (max_ops == 0 || m <= max_ops || fused) {
    Segment whole;
    whole.program = program;
    whole.first_op = 0;
    whole.ops = m;
    whole.live_out.push_back(root);
    segments.push_back(std::move(whole));
    return segments;
  }
  // Operator p's readers among the operators: first and last position; an output is read at m.
  std::vector<std::size_t> first_use(m, npos), last_use(m, 0);
  std::vector<bool> is_output(m, false);
  for (std::size_t p = 0; p < m; ++p)
    for (Id c : program[ops[p]].children())
      if (pos[c.index()] != npos) {
        first_use[pos[c.index()]] = std::min(first_use[pos[c.index()]], p);
        last_use[pos[c.index()]] = std::max(last_use[pos[c.index()]], p);
      }
  const auto mark_output = [&](Id id) {
    if (pos[id.index()] != npos) is_output[pos[id.index()]] = true;
  };
  if (noop_root)
    for (Id c : program[root].children()) mark_output(c);
  else
    mark_output(root);
  // score[q] for a cut before operator q (1 <= q < m): what the tensors crossing it cost;
  // blocked[q]: a split's pair crosses it.
  std::vector<std::int64_t> delta(m + 1, 0), split_delta(m + 1, 0), pair_delta(m + 1, 0);
  for (std::size_t p = 0; p < m; ++p) {
    const std::size_t last = is_output[p] ? m : last_use[p];
    if (first_use[p] == npos && !is_output[p]) continue;
    if (last <= p) continue;
    // Crosses the cuts q in (p, last].
    const std::int64_t weight = detail::barrier_op(program[ops[p]].op()) ? 1 : 2;
    delta[p + 1] += weight, delta[std::min(last, m - 1) + 1] -= weight;
    if (infos[ops[p].index()].kind == Kind::Pair)
      ++pair_delta[p + 1], --pair_delta[std::min(last, m - 1) + 1];
    // Read on both sides of the cuts q in (first_use, last].
    if (first_use[p] != npos && first_use[p] < last)
      split_delta[first_use[p] + 1] += 2, split_delta[std::min(last, m - 1) + 1] -= 2;
  }
  std::vector<std::int64_t> score(m, 0);
  std::vector<bool> blocked(m, false);
  std::int64_t live = 0, split = 0, pairs = 0;
  for (std::size_t q = 1; q < m; ++q) {
    live += delta[q], split += split_delta[q], pairs += pair_delta[q];
    score[q] = live + split;
    blocked[q] = pairs > 0;
  }
  std::vector<std::size_t> cuts{0};
  while (m - cuts.back() > max_ops) {
    const std::size_t s = cuts.back();
    std::size_t best = npos;
    for (std::size_t q = s + std::max<std::size_t>(1, max_ops / 2); q <= s + max_ops && q < m; ++q)
      if (!blocked[q] && (best == npos || score[q] <= score[best])) best = q;
    if (best == npos)  // only pairs cross the window's cuts: the first later cut that is free
      for (std::size_t q = s + max_ops + 1; q < m && best == npos; ++q)
        if (!blocked[q]) best = q;
    if (best == npos) break;
    cuts.push_back(best);
  }
  cuts.push_back(m);

  // Names the segments' inputs can take: none of the program's own names.
  std::unordered_set<std::string> names;
  for (std::size_t i = 0; i < n; ++i)
    if (program[Id(i)].op() == Op::Sym) names.insert(std::string(program[Id(i)].symbol().str()));

  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    Segment seg;
    seg.first_op = cuts[k];
    seg.ops = cuts[k + 1] - cuts[k];
    std::vector<Id> memo(n, kInvalidId);
    const auto live_in = [&](Id id) {
      if (memo[id.index()] != kInvalidId) return memo[id.index()];
      const TensorInfo& info = infos[id.index()];
      std::string name = fmt::format("segment{}_in{}", k, seg.live_in.size());
      while (names.count(name)) name += "_";
      std::vector<Id> dims;
      for (std::int64_t d : info.dims) dims.push_back(seg.program.add(TensorNode::num(d)));
      const Id name_id = seg.program.add(TensorNode::sym(name));
      const Id dtype_id = seg.program.add(TensorNode::sym(dtype_name(info.dtype)));
      const Id dims_id =
          seg.program.add(TensorNode(Op::Ints, Span<const Id>(dims.data(), dims.size())));
      const Id input =
          info.layout == Layout::Contiguous
              ? seg.program.add(TensorNode(Op::Input, {name_id, dtype_id, dims_id}))
              : seg.program.add(TensorNode(
                    Op::Input, {name_id, dtype_id, dims_id,
                                seg.program.add(TensorNode::sym(layout_name(info.layout)))}));
      seg.live_in.push_back(id);
      seg.input_names.push_back(std::move(name));
      return memo[id.index()] = input;
    };
    for (std::size_t p = cuts[k]; p < cuts[k + 1]; ++p) {
      TensorNode node = program[ops[p]];
      for (Id& c : node.children()) {
        const std::size_t cp = pos[c.index()];
        if (cp == npos)
          c = detail::copy_node(program, c, seg.program, memo);
        else if (cp < cuts[k])
          c = live_in(c);
        else
          c = memo[c.index()];
      }
      memo[ops[p].index()] = seg.program.add(std::move(node));
      const bool read_later = is_output[p] || (last_use[p] >= cuts[k + 1] && first_use[p] != npos);
      if (read_later) seg.live_out.push_back(ops[p]);
    }
    // Every operator reaches the root, so the segment's last one is read later: outs is never
    // empty.
    std::vector<Id> outs;
    for (Id id : seg.live_out) outs.push_back(memo[id.index()]);
    if (outs.empty()) throw Error("segment_program: a segment with no output (internal)");
    const Id seg_root =
        outs.size() == 1
            ? outs[0]
            : seg.program.add(TensorNode(Op::Noop, Span<const Id>(outs.data(), outs.size())));
    seg.program = detail::compact(seg.program, seg_root);
    segments.push_back(std::move(seg));
  }
  return segments;
}

/// The whole program again from `optimized[k]`, an optimized version of `segments[k].program`
/// (same inputs, same outputs in the same order), and `program`, the program that was cut:
/// each segment's inputs are wired to the tensors they stand for, the original root (or its
/// `noop` of outputs) is rebuilt over the segments' outputs, and equal nodes are shared.
/// Throws `Error` if an optimized segment lost its root's shape (a `noop` with another count).
[[nodiscard]] inline RecExpr<TensorNode> stitch(const RecExpr<TensorNode>& program,
                                                const std::vector<Segment>& segments,
                                                const std::vector<RecExpr<TensorNode>>& optimized) {
  if (segments.size() != optimized.size()) throw Error("stitch: one optimized program per segment");
  if (segments.size() == 1 && segments[0].live_in.empty() && segments[0].live_out.size() == 1 &&
      segments[0].live_out[0] == program.root())
    return optimized[0];
  RecExpr<TensorNode> out;
  std::vector<Id> value(program.size(), kInvalidId);  // whole-program id -> id in `out`
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const Segment& seg = segments[k];
    const RecExpr<TensorNode>& p = optimized[k];
    std::unordered_map<std::string, Id> inputs;
    for (std::size_t j = 0; j < seg.live_in.size(); ++j)
      inputs.emplace(seg.input_names[j], value[seg.live_in[j].index()]);
    std::vector<Id> local(p.size(), kInvalidId);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const TensorNode& node = p[Id(i)];
      if (node.op() == Op::Input) {
        const TensorNode& name = p[node.children()[0]];
        if (auto it = inputs.find(std::string(name.symbol().str())); it != inputs.end()) {
          if (it->second == kInvalidId)
            throw Error(fmt::format("stitch: segment {} reads a tensor not yet computed", k));
          local[i] = it->second;
          continue;
        }
      }
      TensorNode copy = node;
      for (Id& c : copy.children()) c = local[c.index()];
      local[i] = out.add(std::move(copy));
    }
    const Id seg_root = p.root();
    if (seg.live_out.size() == 1) {
      value[seg.live_out[0].index()] = local[seg_root.index()];
    } else {
      const TensorNode& r = p[seg_root];
      if (r.op() != Op::Noop || r.children().size() != seg.live_out.size())
        throw Error(fmt::format("stitch: segment {}'s root is not a noop of its {} outputs", k,
                                seg.live_out.size()));
      for (std::size_t j = 0; j < seg.live_out.size(); ++j)
        value[seg.live_out[j].index()] = local[r.children()[j].index()];
    }
  }
  std::vector<Id> memo(program.size(), kInvalidId);
  const auto resolve = [&](Id id) {
    return value[id.index()] != kInvalidId ? value[id.index()]
                                           : detail::copy_node(program, id, out, memo);
  };
  const Id root = program.root();
  Id new_root;
  if (value[root.index()] != kInvalidId) {
    new_root = value[root.index()];
  } else {
    TensorNode node = program[root];
    for (Id& c : node.children()) c = resolve(c);
    new_root = out.add(std::move(node));
  }
  return detail::compact(out, new_root);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_SEGMENT_H
