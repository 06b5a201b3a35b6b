// The analytical cost model of the tensor dialect: the extraction cost `RooflineCost` over a
// TensorEGraph, and the time of a program with a per-op-kind breakdown (program_breakdown,
// program_time), over the kernel times of op_work.h and the fused groups of fused_group.h.
// Times are in microseconds.
#ifndef TENSAT_COST_COST_MODEL_H
#define TENSAT_COST_COST_MODEL_H

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/cost/device_profile.h"
#include "tensat/cost/fused_group.h"
#include "tensat/cost/op_work.h"
#include "tensat/cost/simple_cost.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/post_ops.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

// ----------------------------------------------------------------------------- extraction cost

/// The roofline model as an extraction cost `(node, eclass) -> microseconds` over a
/// `TensorEGraph`, for `ExtractionGraph::from_egraph` (like `SimpleCost`). Shapes come from the
/// analysis data; a child class holding a `broadcast` e-node is read at its source's size.
class RooflineCost {
 public:
  /// Throws `ProfileError` if the profile is not valid.
  RooflineCost(const TensorEGraph& egraph, const DeviceProfile& profile)
      : egraph_(&egraph), profile_(profile) {
    validate(profile_);
  }

  /// The work of `node` in class `cls`.
  [[nodiscard]] OpWork work(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    SmallVector<const TensorInfo*, 8> children;
    SmallVector<double, 8> reads;
    for (Id c : node.children()) {
      const auto& child = (*egraph_)[c];
      children.push_back(&child.data);
      reads.push_back(read_bytes(child));
    }
    return op_work(node, cls.data, Span<const TensorInfo* const>(children.data(), children.size()),
                   profile_, Span<const double>(reads.data(), reads.size()));
  }
  /// The kernel time of `node` in class `cls` (for a `fused` node: its group's time, the body
  /// read through each body class's first member).
  [[nodiscard]] KernelTime time(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    if (node.op() == Op::Fused && !cls.data.weight_only) {
      const FusedGroup g = group(node, cls);
      return scaled(fused_time(g, profile_), profile_.time_scale[fused_kind(g)]);
    }
    const OpWork w = work(node, cls);
    return scaled(kernel_time(w, profile_), profile_.time_scale_of(node.op(), w.own_form(), false));
  }
  /// The group of a `fused` node.
  [[nodiscard]] FusedGroup group(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    double reads = 0;
    std::vector<Id> inputs;
    std::vector<double> input_bytes;
    for (std::size_t i = 1; i < node.children().size(); ++i) {
      const Id c = egraph_->find(node.children()[i]);
      if (std::find(inputs.begin(), inputs.end(), c) != inputs.end()) continue;
      inputs.push_back(c);
      input_bytes.push_back(read_bytes((*egraph_)[c]));
      reads += input_bytes.back();
    }
    bool has_contraction = false, has_gather = false;
    std::size_t contractions = 0;
    std::vector<bool> contraction_reads(inputs.size(),
                                        false);  // input read directly by a contraction
    const Id root = egraph_->find(node.children()[0]);
    FusedGroup g = fused_group(cls.data, reads, profile_, [&](auto&& f) {
      std::vector<Id> stack{root}, seen;
      while (!stack.empty()) {
        const Id c = stack.back();
        stack.pop_back();
        if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        seen.push_back(c);
        const auto& body = (*egraph_)[c];
        if (body.nodes.empty()) continue;
        const TensorNode& n = egraph_->node(body.nodes[0]);
        if (n.op() == Op::Arg) continue;
        SmallVector<const TensorInfo*, 8> children;
        double materialized = epilogue_operand_bytes(n.op(), body.data, c == root, profile_);
        const bool contraction = is_contraction(n.op());
        has_contraction = has_contraction || contraction;
        contractions += contraction ? 1 : 0;
        has_gather = has_gather ||
                     body_gathers(n.op(), n.op() == Op::Broadcast && n.children().size() == 2 &&
                                              is_arg_class((*egraph_)[n.children()[1]]));
        for (Id child : n.children()) {
          const auto& child_class = (*egraph_)[child];
          children.push_back(&child_class.data);
          if (!child_class.data.symbolic) continue;
          stack.push_back(egraph_->find(child));
          const TensorNode* arg =
              child_class.nodes.empty() ? nullptr : &egraph_->node(child_class.nodes[0]);
          if (arg && arg->op() == Op::Arg) {
            const std::int64_t k =
                (*egraph_)[arg->children()[0]].data.value;  // input k + 1 of the fused node
            if (contraction && k >= 0 && static_cast<std::size_t>(k) + 1 < node.children().size()) {
              const Id input = egraph_->find(node.children()[static_cast<std::size_t>(k) + 1]);
              const auto at = std::find(inputs.begin(), inputs.end(), input);
              if (at != inputs.end())
                contraction_reads[static_cast<std::size_t>(at - inputs.begin())] = true;
            }
          } else {
            materialized += prologue_bytes(n.op(), child_class.data);
          }
        }
        f(n, body.data, Span<const TensorInfo* const>(children.data(), children.size()),
          materialized);
      }
    });
    if (has_contraction && !profile_.fusion_overlap)
      for (std::size_t k = 0; k < inputs.size(); ++k)
        if (!contraction_reads[k]) g.staged_bytes += input_bytes[k];
    g.has_contraction = has_contraction;
    g.contractions = contractions;
    g.has_gather = has_gather;
    if (has_contraction && runs_post_ops(profile_)) {
      const auto view = node_body_view(
          [this](Id c) -> const TensorNode* {
            const auto& body = (*egraph_)[c];
            return body.nodes.empty() ? nullptr : &egraph_->node(body.nodes[0]);
          },
          [this](Id c) -> const TensorInfo& { return (*egraph_)[c].data; });
      if (const auto post = conv_post_ops(view, root)) {
        g.post_ops = true;
        if (post->residual)
          g.post_bytes = static_cast<double>((*egraph_)[*post->residual].data.bytes());
      }
    }
    return g;
  }
  /// The cost: `time(node, cls).total_us`.
  double operator()(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    return time(node, cls).total_us;
  }
  [[nodiscard]] const DeviceProfile& profile() const noexcept { return profile_; }

 private:
  /// Whether body class `c` is a kernel input (its first member an `arg`).
  [[nodiscard]] bool is_arg_class(const TensorEGraph::EClass& c) const {
    return !c.nodes.empty() && egraph_->node(c.nodes[0]).op() == Op::Arg;
  }
  /// Bytes a consumer reads for `cls`: its size, or the smallest source of a `broadcast` in it.
  double read_bytes(const TensorEGraph::EClass& cls) const {
    return profile_.broadcast_copies ? static_cast<double>(cls.data.bytes())
                                     : class_read_bytes(*egraph_, cls);
  }

  const TensorEGraph* egraph_;
  DeviceProfile profile_;
};

// ----------------------------------------------------------------------------- programs

/// One kernel of a program.
struct KernelReport {
  std::size_t node = 0;  ///< index in the program
  Op op = Op::Num;
  OpWork work;
  KernelTime time;
  /// `kernel_kind`: which `DeviceProfile::time_scale` (and `kind_scatter`) applies.
  std::size_t kind = 0;
};

/// The kernels of one op kind in a program.
struct OpKindTime {
  Op op = Op::Num;
  std::size_t kernels = 0;
  std::size_t compute_bound = 0;
  std::size_t memory_bound = 0;
  double time_us = 0;
  double flops = 0;
  double bytes = 0;
};

/// The time of a program and where it goes.
struct ProgramTime {
  double total_us = 0;
  std::vector<KernelReport> kernels;  ///< every distinct kernel node, in program order
  std::vector<OpKindTime> by_op;  ///< op kinds with kernels, by decreasing time (ties: `Op` order)
};

/// The time of `program` on `profile` with its breakdown: each distinct node once (as
/// `program_cost`), a `broadcast` operand read at its source's size. Throws `ShapeError` for an
/// ill-typed program and `ProfileError` for an invalid profile. O(nodes).
[[nodiscard]] inline ProgramTime program_breakdown(const RecExpr<TensorNode>& program,
                                                   const DeviceProfile& profile) {
  validate(profile);
  const std::vector<TensorInfo> infos = check_program(program);
  std::unordered_map<TensorNode, Id, NodeHash> seen;
  std::vector<Id> canonical(program.size());
  std::vector<double> read_cost(program.size());  // what reading node i costs a consumer
  ProgramTime result;
  std::array<OpKindTime, kNumOps> kinds{};
  std::vector<const TensorInfo*> children;
  std::vector<double> reads;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& original = program[Id(i)];
    const TensorNode node = map_children(original, [&](Id c) { return canonical[c.index()]; });
    auto [it, inserted] = seen.emplace(node, Id(i));
    canonical[i] = it->second;
    read_cost[i] = original.op() == Op::Broadcast && !profile.broadcast_copies
                       ? read_cost[canonical[original.children()[1].index()].index()]
                       : static_cast<double>(infos[i].bytes());
    if (!inserted) continue;
    children.clear();
    reads.clear();
    for (Id c : node.children()) {
      children.push_back(&infos[c.index()]);
      reads.push_back(read_cost[c.index()]);
    }
    OpWork work =
        op_work(original, infos[i], Span<const TensorInfo* const>(children.data(), children.size()),
                profile, Span<const double>(reads.data(), reads.size()));
    KernelTime time;
    std::size_t scale_kind = 0;
    if (original.op() == Op::Fused && !infos[i].weight_only) {
      double bytes_read = 0;
      std::vector<Id> inputs;
      for (std::size_t k = 1; k < node.children().size(); ++k) {
        const Id c = node.children()[k];
        if (std::find(inputs.begin(), inputs.end(), c) != inputs.end()) continue;
        inputs.push_back(c);
        bytes_read += read_cost[c.index()];
      }
      bool has_contraction = false, has_gather = false;
      std::size_t contractions = 0;
      std::vector<bool> contraction_reads(inputs.size(),
                                          false);  // input read directly by a contraction
      FusedGroup group = fused_group(infos[i], bytes_read, profile, [&](auto&& f) {
        std::vector<Id> stack{node.children()[0]}, seen;
        while (!stack.empty()) {
          const Id b = stack.back();
          stack.pop_back();
          if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
          seen.push_back(b);
          const TensorNode& n = program[b];
          if (n.op() == Op::Arg) continue;
          std::vector<const TensorInfo*> body_children;
          double materialized =
              epilogue_operand_bytes(n.op(), infos[b.index()], b == node.children()[0], profile);
          const bool contraction = is_contraction(n.op());
          has_contraction = has_contraction || contraction;
          contractions += contraction ? 1 : 0;
          has_gather = has_gather ||
                       body_gathers(n.op(), n.op() == Op::Broadcast && n.children().size() == 2 &&
                                                program[n.children()[1]].op() == Op::Arg);
          for (Id child : n.children()) {
            body_children.push_back(&infos[child.index()]);
            if (!infos[child.index()].symbolic) continue;
            stack.push_back(canonical[child.index()]);
            if (program[child].op() != Op::Arg) {
              materialized += prologue_bytes(n.op(), infos[child.index()]);
            } else if (contraction) {
              const std::int64_t k = program[program[child].children()[0]].value();  // input k + 1
              if (k >= 0 && static_cast<std::size_t>(k) + 1 < node.children().size()) {
                const auto at = std::find(inputs.begin(), inputs.end(),
                                          node.children()[static_cast<std::size_t>(k) + 1]);
                if (at != inputs.end())
                  contraction_reads[static_cast<std::size_t>(at - inputs.begin())] = true;
              }
            }
          }
          f(n, infos[b.index()],
            Span<const TensorInfo* const>(body_children.data(), body_children.size()),
            materialized);
        }
      });
      if (has_contraction && !profile.fusion_overlap)
        for (std::size_t k = 0; k < inputs.size(); ++k)
          if (!contraction_reads[k]) group.staged_bytes += read_cost[inputs[k].index()];
      group.has_contraction = has_contraction;
      group.contractions = contractions;
      group.has_gather = has_gather;
      if (has_contraction && runs_post_ops(profile)) {
        const auto view =
            node_body_view([&](Id c) -> const TensorNode* { return &program[c]; },
                           [&](Id c) -> const TensorInfo& { return infos[c.index()]; });
        if (const auto post = conv_post_ops(view, node.children()[0])) {
          group.post_ops = true;
          if (post->residual)
            group.post_bytes = static_cast<double>(infos[post->residual->index()].bytes());
        }
      }
      scale_kind = fused_kind(group);
      time = scaled(fused_time(group, profile), profile.time_scale[scale_kind]);
      work = OpWork{};
      work.kernel = time.total_us > 0;
      work.bytes_read = group.bytes_read;
      work.bytes_written = group.bytes_written;
      for (const OpWork& m : group.members) work.flops += m.flops;
      const std::size_t primary = primary_member(group);
      if (primary < group.members.size()) {
        work.dtype = group.members[primary].dtype;
        work.unit = group.members[primary].unit;
      }
    } else {
      scale_kind = kernel_kind(original.op(), work.own_form(), false);
      time = scaled(kernel_time(work, profile), profile.time_scale[scale_kind]);
    }
    if (!work.kernel) continue;
    result.total_us += time.total_us;
    result.kernels.push_back(KernelReport{i, original.op(), work, time, scale_kind});
    OpKindTime& kind = kinds[static_cast<std::size_t>(original.op())];
    kind.op = original.op();
    kind.kernels++;
    (time.bound == Bound::Compute ? kind.compute_bound : kind.memory_bound)++;
    kind.time_us += time.total_us;
    kind.flops += work.flops;
    kind.bytes += work.bytes();
  }
  for (const OpKindTime& k : kinds)
    if (k.kernels > 0) result.by_op.push_back(k);
  std::stable_sort(result.by_op.begin(), result.by_op.end(),
                   [](const OpKindTime& a, const OpKindTime& b) { return a.time_us > b.time_us; });
  return result;
}

/// `profile` as `program` runs on it: `weights_cached` set when the program's weights (each
/// distinct `weight` source once) fit in half of the profile's `cache_bytes`. Throws
/// `ShapeError` for an ill-typed program.
[[nodiscard]] inline DeviceProfile profile_for(DeviceProfile profile,
                                               const RecExpr<TensorNode>& program) {
  const std::vector<TensorInfo> infos = check_program(program);
  std::unordered_set<TensorNode, NodeHash>
      names;  // a weight's name node (a `sym`): each weight once
  double bytes = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& n = program[Id(i)];
    if (n.op() == Op::Weight && names.insert(program[n.children()[0]]).second)
      bytes += static_cast<double>(infos[i].bytes());
  }
  profile.weights_cached = profile.cache_bytes > 0 && bytes <= profile.cache_bytes / 2;
  return profile;
}

/// The time of `program` on `profile` in microseconds (`program_breakdown(...).total_us`).
[[nodiscard]] inline double program_time(const RecExpr<TensorNode>& program,
                                         const DeviceProfile& profile) {
  return program_breakdown(program, profile).total_us;
}

/// The breakdown as a text table: one line per op kind (kernels, how many are compute- and
/// memory-bound, time in microseconds, share of the total), then the total.
[[nodiscard]] inline std::string format_breakdown(const ProgramTime& t) {
  std::string s = fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12} {:>6}\n", "op", "kernels", "compute",
                              "memory", "time (us)", "share");
  for (const OpKindTime& k : t.by_op)
    s += fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12.2f} {:>5.1f}%\n", op_name(k.op), k.kernels,
                     k.compute_bound, k.memory_bound, k.time_us,
                     t.total_us > 0 ? 100 * k.time_us / t.total_us : 0.0);
  s += fmt::format("{:<12} {:>7} {:>7} {:>6} {:>12.2f}\n", "total", t.kernels.size(), "", "",
                   t.total_us);
  return s;
}

/// `t`'s kernels one per line, in program order: the node index, op, bound, work (MFLOP, MB)
/// and the roofline terms (compute, memory, launch and total microseconds), then the total.
/// What XLA's per-HLO cost analysis prints; a `fused` kernel's line is the whole group.
[[nodiscard]] inline std::string format_kernels(const ProgramTime& t) {
  std::string s =
      fmt::format("{:>6} {:<14} {:<7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}\n", "node", "op",
                  "bound", "MFLOP", "MB", "compute", "memory", "launch", "time (us)");
  for (const KernelReport& k : t.kernels)
    s += fmt::format(
        "{:>6} {:<14} {:<7} {:>10.3f} {:>10.3f} {:>10.2f} {:>10.2f} {:>8.2f} {:>10.2f}\n", k.node,
        op_name(k.op), bound_name(k.time.bound), k.work.flops / 1e6, k.work.bytes_moved() / 1e6,
        k.time.compute_us, k.time.memory_us, k.time.launch_us, k.time.total_us);
  s += fmt::format("{:>6} {:<14} {:<7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10.2f}\n", "", "total",
                   "", "", "", "", "", "", t.total_us);
  return s;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_COST_MODEL_H
