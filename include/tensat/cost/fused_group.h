// FusedGroup: ops run as one kernel, priced as one roofline over their summed work and the bytes
// that cross the group's boundary (fused_time), and the group of a `fused` node's body
// (fused_group). Times are in microseconds.
#ifndef TENSAT_COST_FUSED_GROUP_H
#define TENSAT_COST_FUSED_GROUP_H

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

#include "tensat/cost/op_work.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The data-movement ops a fused body can read through (pad, transpose, slice, concat,
/// broadcast): an executor's fused loop gathers their elements by index.
[[nodiscard]] constexpr bool is_gather(Op op) noexcept { return has_trait(op, kGather); }

/// Whether a body term of op `op` reads through a gather, given whether its data operand is an
/// `arg`: a broadcast of a kernel input (a bias, a per-channel scale) is a fill, run by run.
[[nodiscard]] constexpr bool body_gathers(Op op, bool operand_is_arg) noexcept {
  return is_gather(op) && !(op == Op::Broadcast && operand_is_arg);
}

/// A group of ops executed as one kernel: the members' work (only `kernel`, `flops`, `dtype`,
/// `unit`, `compute_rate` and the primary member's `bandwidth` are used; their own bytes are not,
/// since intermediates stay on chip), plus the bytes of
/// the group's external inputs (each read once) and of its outputs used outside it (each written
/// once).
struct FusedGroup {
  std::vector<OpWork> members;
  double bytes_read = 0;     ///< R(G): tensors produced outside the group (or sources), once each
  double bytes_written = 0;  ///< W(G): tensors produced in the group and used outside it
  /// The member whose peak the group runs at; by default the first member on the matrix unit
  /// (a GEMM/conv root), else the member with the most flops (the first on ties).
  std::optional<std::size_t> primary;
  /// Part of R(G) + W(G) that is a phase of its own: operands computed in the group and stored
  /// for a contraction, then read back by it (`prologue_bytes`). The contraction starts only
  /// once its operand is complete, so this traffic does not overlap the group's compute.
  double staged_bytes = 0;
  /// A member is a contraction (its time takes `DeviceProfile::time_scale`'s
  /// "fused_contraction" factor rather than "fused").
  bool has_contraction = false;
  /// How many members are contractions (with `DeviceProfile::epilogue_kernel`, a launch each).
  std::size_t contractions = 0;
  /// A member is a data-movement op (pad, transpose, slice, concat, broadcast): the body reads
  /// through it ("fused_gather").
  bool has_gather = false;
  /// Each member's own `DeviceProfile::time_scale` (its kind's, as if it ran alone), applied to
  /// its compute: a sigmoid or a square root costs what it costs unfused whether or not a
  /// loop fuses it. Empty, or shorter than `members`: 1.
  std::vector<double> member_scales{};
  /// The contraction members' own times, each as the kernel it would be alone (its time scale
  /// included): a kernel runs its product as the library call it is, so it costs no less than
  /// the product alone would (fused_group.md).
  double floor_us = 0;
  /// The body is a convolution with per-channel post-ops (`conv_post_ops`) on a profile that
  /// `runs_post_ops`: the executor runs the post-ops on each block of the product as the
  /// convolution writes it, so the kernel costs its convolution alone (`floor_us`) plus one pass
  /// of the post-ops over data in cache (`fused_time`) and the reads of a residual input
  /// (`post_bytes`); its kind is `kConvPostOpsScale`. The `pad`s of its input are folded into
  /// the convolution (`folded_pads`): they cost nothing.
  bool post_ops = false;
  double post_bytes = 0;  ///< the residual input's bytes, read once by the post-ops pass
  /// The member that is the group's (last) contraction, set by `fused_group`: with `post_ops`,
  /// the convolution, whatever member has the most flops.
  std::optional<std::size_t> contraction{};
  /// Each member is a `pad`, set by `fused_group`: with `post_ops`, a padding the convolution
  /// applies as it reads its input (`conv_post_ops`), never run as a step.
  std::vector<bool> folded_pads{};
};

/// Whether `p` runs a convolution's per-channel post-ops on each block of its product as the
/// product is written (the reference executor: no `fusion_overlap`, no `epilogue_kernel`), so
/// that `FusedGroup::post_ops` applies.
[[nodiscard]] inline bool runs_post_ops(const DeviceProfile& p) noexcept {
  return !p.fusion_overlap && !p.epilogue_kernel;
}

/// The `time_scale` index (the kind) of a fused group's kernel: `kConvPostOpsScale` for one
/// with `post_ops`, else `kernel_kind(Op::Fused, ...)` by its contraction and gather.
[[nodiscard]] inline std::size_t fused_kind(const FusedGroup& g) noexcept {
  return g.post_ops ? kConvPostOpsScale
                    : kernel_kind(Op::Fused, false, g.has_contraction, g.has_gather);
}

/// Index of the group's primary member (see `FusedGroup::primary`); `members.size()` when no
/// member is a kernel.
[[nodiscard]] inline std::size_t primary_member(const FusedGroup& g) noexcept {
  if (g.primary && *g.primary < g.members.size()) return *g.primary;
  std::size_t best = g.members.size();
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    const OpWork& m = g.members[i];
    if (!m.kernel) continue;
    if (m.unit == Unit::Matrix) return i;
    if (best == g.members.size() || m.flops > g.members[best].flops) best = i;
  }
  return best;
}

/// The time of a fused group as one kernel: one launch (with `DeviceProfile::epilogue_kernel`,
/// one more for each product beyond the first and one for the elementwise region), the members'
/// flops at the primary member's peak P_G (a member with a rate of its own, `OpWork::compute_rate`,
/// at that rate), R(G) + W(G) bytes, of which the staged bytes S(G) come after: cost(G) = t_launch
/// + n_G · t_term + combine(sum_i s_i · F_i / (P_i · eta_c), (R(G) + W(G) − S(G)) / (BW_G · eta_m)
/// + lat_m)
///           + S(G) / (BW · eta_m),
/// n_G = the kernel members, t_term = `DeviceProfile::fused_term_overhead`,
/// s_i = the member's own time scale (`FusedGroup::member_scales`), P_i = the member's
/// `compute_rate` or P_G; BW_G the primary member's bandwidth
/// (`OpWork::bandwidth`: a matrix-vector product's) or the profile's. A group without a kernel
/// member is free.
/// A group with `post_ops`: cost(G) = floor_us + sum_i max(s_i · F_i / (P_vec · eta_c),
/// s_i · t_i − t_m,i) over the post-ops (t_i its time alone without the launch, t_m,i that
/// time's memory part: a sigmoid that runs at 2 ns an element alone does so in cache too, a
/// ReLU that only streams memory alone is nearly free), + post_bytes / (BW · eta_m), the
/// overlap alpha taken between those two, + t_term for every member (the body compiled on each
/// run, its broadcasts too); the `pad`s the convolution folds in (`folded_pads`) are no steps.
[[nodiscard]] inline KernelTime fused_time(const FusedGroup& g, const DeviceProfile& p) {
  const std::size_t primary = primary_member(g);
  if (primary >= g.members.size() || !g.members[primary].kernel) return KernelTime{};
  const OpWork& root = g.members[primary];
  if (g.post_ops && g.contraction && *g.contraction < g.members.size()) {
    const std::size_t conv = *g.contraction;
    KernelTime t = kernel_time(g.members[conv], p);
    const double conv_scale = t.total_us > 0 ? g.floor_us / t.total_us : 1.0;
    t = scaled(t, conv_scale);  // the convolution as it would run alone
    // Each step on data in cache: what it costs alone (its kind's scale included) less the
    // memory traffic it no longer has, and no less than its own flops at the vector peak.
    double compute_us = 0;
    for (std::size_t i = 0; i < g.members.size(); ++i) {
      const OpWork& m = g.members[i];
      if (i == conv || !m.kernel || (i < g.folded_pads.size() && g.folded_pads[i])) continue;
      const double scale = i < g.member_scales.size() ? g.member_scales[i] : 1.0;
      const KernelTime alone = kernel_time(m, p);
      const double flops_us = m.flops / (p.peak(m.dtype, Unit::Vector) * p.eta_c) * 1e6;
      compute_us +=
          std::max(scale * flops_us, scale * (alone.total_us - alone.launch_us) - alone.memory_us);
    }
    const double memory_us = p.memory_seconds(g.post_bytes) / p.eta_m * 1e6;
    // The executor compiles the body on every run: each term's setup, kernel or not.
    const double setup_us = static_cast<double>(g.members.size()) * p.fused_term_overhead * 1e6;
    t.compute_us += compute_us;
    t.memory_us += memory_us;
    t.launch_us += setup_us;
    t.total_us += setup_us + compute_us + memory_us - p.alpha * std::min(compute_us, memory_us);
    return t;
  }
  const double peak = p.peak(root.dtype, root.unit);
  double flops =
      0;  // at `peak`: a member with a rate of its own counts as many flops as take it as long
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    const OpWork& m = g.members[i];
    const double scale = i < g.member_scales.size() ? g.member_scales[i] : 1.0;
    if (m.kernel)
      flops += scale * (m.compute_rate > 0 ? m.flops * (peak / m.compute_rate) : m.flops);
  }
  const double staged = std::clamp(g.staged_bytes, 0.0, g.bytes_read + g.bytes_written);
  KernelTime t =
      roofline_time(flops, g.bytes_read + g.bytes_written - staged, peak, p, root.bandwidth);
  if (p.fused_term_overhead > 0) {  // an interpreted body: each term's own setup and dispatch
    std::size_t terms = 0;
    for (const OpWork& m : g.members) terms += m.kernel ? 1 : 0;
    const double us = static_cast<double>(terms) * p.fused_term_overhead * 1e6;
    t.launch_us += us;
    t.total_us += us;
  }
  if (p.epilogue_kernel && g.contractions > 0) {
    // The products are library calls and the rest one kernel after them: launches of their own.
    std::size_t kernels = 0;
    for (const OpWork& m : g.members) kernels += m.kernel ? 1 : 0;
    const double extra =
        static_cast<double>(g.contractions - 1) + (kernels > g.contractions ? 1.0 : 0.0);
    t.launch_us += extra * p.launch_overhead * 1e6;
    t.total_us += extra * p.launch_overhead * 1e6;
  }
  if (staged > 0) {
    const double staged_us = staged / (p.mem_bandwidth * p.eta_m) * 1e6;
    t.memory_us += staged_us;
    t.total_us += staged_us;
    t.bound = t.compute_us > t.memory_us ? Bound::Compute : Bound::Memory;
  }
  if (t.total_us < g.floor_us) {  // never below its products alone
    const double extra = g.floor_us - t.total_us;
    (t.bound == Bound::Compute ? t.compute_us : t.memory_us) += extra;
    t.total_us = g.floor_us;
  }
  return t;
}

/// The bytes a body term of op `op` needs in memory for its computed (non-`arg`) operand
/// `operand`: the operand's size for a contraction (`matmul`, `conv2d`: library kernels read
/// their operands from memory), 0 for every other op (loop-fused).
[[nodiscard]] inline double prologue_bytes(Op op, const TensorInfo& operand) noexcept {
  return is_contraction(op) && operand.kind == Kind::Tensor ? static_cast<double>(operand.bytes())
                                                            : 0.0;
}

/// The bytes of a body term's own result that a kernel keeps in memory: on a profile without
/// `fusion_overlap` (one CPU thread, the Eigen executor), a contraction below the body's root
/// writes its whole product (a convolution's group, a matmul's batch entry) before the loop that
/// follows reads it back, so the product is staged like a prologue's operand; 0 for every other
/// term, and on a GPU profile, where an epilogue runs on the product's registers.
[[nodiscard]] inline double epilogue_operand_bytes(Op op, const TensorInfo& result, bool is_root,
                                                   const DeviceProfile& profile) noexcept {
  return is_contraction(op) && !is_root && !profile.fusion_overlap && result.kind == Kind::Tensor
             ? static_cast<double>(result.bytes())
             : 0.0;
}

/// The group of a `fused` node: its body's ops (`visit_body(f)` calls
/// `f(node, out, children, materialized)` once for each distinct body term other than `arg`s),
/// the external inputs' bytes (each distinct input once) and the result's bytes. `materialized`:
/// the bytes of the term's operands that are computed in the body but must exist in memory for
/// it — a `matmul`'s or `conv2d`'s operands other than `arg`s (see `prologue_bytes`). A
/// GEMM or convolution library (cuBLAS, cuDNN, Eigen, oneDNN) reads its operands from memory, so
/// a producer inlined into a contraction is written and read back, as XLA materializes the
/// operands of its library calls; they are charged to the group twice (written, then read),
/// as staged bytes (`FusedGroup::staged_bytes`): time that the contraction cannot hide. The
/// same holds for a contraction's own product where the epilogue after it is a pass of its own
/// (`epilogue_operand_bytes`): the callers add those bytes to the contraction's `materialized`.
template <class VisitBody>
[[nodiscard]] FusedGroup fused_group(const TensorInfo& out, double bytes_read,
                                     const DeviceProfile& profile, VisitBody&& visit_body) {
  FusedGroup g;
  g.bytes_read = bytes_read;
  g.bytes_written = static_cast<double>(out.bytes());
  visit_body([&](const TensorNode& node, const TensorInfo& info,
                 Span<const TensorInfo* const> children, double materialized) {
    TensorInfo concrete = info;  // the body term, costed as if computed (its bytes are not used)
    concrete.symbolic = false;
    g.members.push_back(op_work(node, concrete, children, profile));
    g.member_scales.push_back(profile.time_scale_of(node.op(), g.members.back().own_form(), false));
    g.folded_pads.push_back(node.op() == Op::Pad);
    if (is_contraction(node.op())) {
      g.floor_us += scaled(kernel_time(g.members.back(), profile), g.member_scales.back()).total_us;
      g.contraction = g.members.size() - 1;
    }
    g.bytes_written += materialized;
    g.bytes_read += materialized;
    g.staged_bytes += 2 * materialized;
    // A contraction's layout transposes stay phases of their own inside the kernel too.
    g.bytes_read += g.members.back().relayout_bytes / 2;
    g.bytes_written += g.members.back().relayout_bytes / 2;
    g.staged_bytes += g.members.back().relayout_bytes;
  });
  return g;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_FUSED_GROUP_H
