// The cost model's own error, and what a change is worth once it is counted: the class of each
// kernel (`cost_class`), the worst-case gain of replacing one program by another (`gain_band`),
// and a cautious extraction cost (`RobustCost`): what `optimize` uses to do no harm.
#ifndef TENSAT_COST_UNCERTAINTY_H
#define TENSAT_COST_UNCERTAINTY_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/tensor/analysis.h"
#include "tensat/cost/cost_model.h"
#include "tensat/cost/device_profile.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The `CostClass` of a kernel of `op` whose work is `work`: a depthwise convolution
/// (`OpWork::depthwise`) is a `Window` kernel, any other a `Contraction`.
[[nodiscard]] inline CostClass cost_class(Op op, const OpWork& work) noexcept {
  switch (op) {
    case Op::MatMul:
    case Op::ConvTranspose:
    case Op::WinoConv2d:
      return CostClass::Contraction;
    case Op::Conv2d:
      return work.depthwise ? CostClass::Window : CostClass::Contraction;
    case Op::PoolMax:
    case Op::PoolAvg:
      return CostClass::Window;
    case Op::Softmax:
    case Op::LayerNorm:
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMean:
      return CostClass::Reduction;
    case Op::Concat:
    case Op::Split:
    case Op::Split0:
    case Op::Split1:
    case Op::Transpose:
    case Op::Reshape:
    case Op::Broadcast:
    case Op::Slice:
    case Op::Pad:
    case Op::Resize:
    case Op::Relayout:
    case Op::Enlarge:
    case Op::Merge:
    case Op::WinoWeight:
      return CostClass::Movement;
    case Op::Fused:
      return CostClass::Fused;
    default:
      return CostClass::Elementwise;
  }
}

/// The gain of running `optimized` instead of `original`, as predicted and at worst within the
/// profile's error (`DeviceProfile::uncertainty`), in microseconds. Kernels the two programs
/// share (the same op on the same operands) cost the same in both and cancel, and so do a removed
/// and an added kernel of the same signature (op, flops, bytes and time: one computation on other
/// values, like a convolution with a batchnorm folded into its weights). A removed and an added
/// kernel of the same kind whose flops agree to within 25 % (a convolution that took its
/// activation in) run the same library kernel and share its error: they pair up, and only the
/// difference d of their times is charged, as a removed (d > 0) or an added (d < 0) time; so do
/// a convolution with post-ops (`kConvPostOpsScale`) and the bare convolution it runs. The
/// others are netted by class against the class's systematic error s
/// (`DeviceProfile::systematic_error`, common to its kernels): a class the change removes time
/// from on balance saves at least net / s, one it adds time to costs at most net · s; then each
/// changed kernel's own error k (`DeviceProfile::scatter_of`: its kind's if calibration probed
/// the kind, else its class's) is charged: t · (1 − 1/k) for a removed kernel, t · (k − 1) for
/// an added one. The kernels of one kind share a library routine and a fitted curve, so their
/// charges add up; the kinds' sums, errors of different routines, combine in quadrature (the
/// square root of their sum of squares): a change that swaps many convolutions for Winograd
/// ones is not charged as if both kinds erred against it at once.
struct GainBand {
  double predicted_us = 0;   ///< time(original) − time(optimized)
  double worst_case_us = 0;  ///< the gain with the errors against it
  std::size_t removed_kernels = 0;
  std::size_t added_kernels = 0;
  /// How far the worst case lies below the prediction.
  [[nodiscard]] double band_us() const noexcept { return predicted_us - worst_case_us; }
};

/// `GainBand` of replacing `original` by `optimized` on `profile`. Throws `ShapeError` for an
/// ill-typed program and `ProfileError` for an invalid profile. O(nodes).
[[nodiscard]] inline GainBand gain_band(const RecExpr<TensorNode>& original,
                                        const RecExpr<TensorNode>& optimized,
                                        const DeviceProfile& profile) {
  struct Kernel {
    double us = 0;
    CostClass cls = CostClass::Elementwise;
    double flops = 0;
    double bytes = 0;
    double kind = 0;  // kernel_kind: the op, or which depthwise / fused kind
  };
  std::unordered_map<TensorNode, std::size_t, NodeHash>
      shared;  // a node over shared ids -> its shared id
  const auto kernels_of = [&](const RecExpr<TensorNode>& program) {
    std::vector<std::size_t> ids(program.size());
    for (std::size_t i = 0; i < program.size(); ++i) {
      const TensorNode node =
          map_children(program[Id(i)], [&](Id c) { return Id(ids[c.index()]); });
      ids[i] = shared.emplace(node, shared.size()).first->second;
    }
    std::unordered_map<std::size_t, Kernel>
        kernels;  // shared id -> the kernel (each distinct one once)
    for (const KernelReport& k : program_breakdown(program, profile).kernels)
      kernels.emplace(ids[k.node], Kernel{k.time.total_us, cost_class(k.op, k.work), k.work.flops,
                                          k.work.bytes_moved(), static_cast<double>(k.kind)});
    return kernels;
  };
  const auto before = kernels_of(original);
  const auto after = kernels_of(optimized);
  GainBand band;
  // The kernels only one program runs. A removed and an added kernel with the same signature
  // (op, flops, bytes, time: the same computation on other values, such as a convolution whose
  // weights a batchnorm was folded into) are one kernel for the error: they pair up and cancel.
  using Signature = std::tuple<CostClass, double, double, double, double>;
  std::map<Signature, std::ptrdiff_t> unpaired;  // removed minus added, by signature
  const auto signature = [](const Kernel& k) {
    return Signature{k.cls, k.flops, k.bytes, k.us, k.kind};
  };
  for (const auto& [id, k] : before) {
    band.predicted_us += k.us;
    if (after.count(id)) continue;
    unpaired[signature(k)]++;
    band.removed_kernels++;
  }
  for (const auto& [id, k] : after) {
    band.predicted_us -= k.us;
    if (before.count(id)) continue;
    unpaired[signature(k)]--;
    band.added_kernels++;
  }
  std::array<double, kNumCostClasses> net{};  // time removed minus time added, by class
  std::map<double, double> scatter_us;        // the kernels' own errors, summed by kind
  // What is left of the change: a removed time at least t / k, an added one at most t · k.
  const auto charge = [&](const Signature& sig, double removed_us, double added_us) {
    const auto c = static_cast<std::size_t>(std::get<0>(sig));
    const double k =
        profile.scatter_of(std::get<0>(sig), static_cast<std::size_t>(std::get<4>(sig)));
    const double d = removed_us - added_us;
    net[c] += d;
    scatter_us[std::get<4>(sig)] += d > 0 ? d * (1 - 1 / k) : -d * (k - 1);
  };
  // A removed and an added kernel of one kind whose flops agree to within kSameWork (a product
  // that took its activation or bias in, a convolution whose epilogue changed) run the same
  // library kernel, whose error they share: only the difference of their times is uncertain.
  constexpr double kSameWork = 1.25;
  // The same kind, or a convolution with post-ops (`kConvPostOpsScale`) and the bare convolution
  // it runs: the post-ops pass is all that differs.
  const auto same_library_kernel = [](const Signature& a, const Signature& b) {
    const auto conv = [](const Signature& k) {
      const auto kind = static_cast<std::size_t>(std::get<4>(k));
      return kind == static_cast<std::size_t>(Op::Conv2d) || kind == kDepthwiseScale;
    };
    const auto post = [](const Signature& k) {
      return static_cast<std::size_t>(std::get<4>(k)) == kConvPostOpsScale;
    };
    if (std::get<0>(a) == std::get<0>(b) && std::get<4>(a) == std::get<4>(b)) return true;
    return (post(a) && conv(b)) || (conv(a) && post(b));
  };
  std::vector<std::pair<Signature, bool>> left;  // one entry a kernel; true: removed
  for (const auto& [sig, count] : unpaired)
    for (std::ptrdiff_t i = 0; i < (count > 0 ? count : -count); ++i)
      left.emplace_back(sig, count > 0);
  std::vector<bool> used(left.size(), false);
  for (std::size_t a = 0; a < left.size(); ++a) {
    if (left[a].second) continue;  // each added kernel looks for its removed twin
    const Signature& added = left[a].first;
    std::size_t best = left.size();
    double best_ratio = kSameWork;
    for (std::size_t r = 0; r < left.size(); ++r) {
      if (used[r] || !left[r].second) continue;
      const Signature& removed = left[r].first;
      if (!same_library_kernel(removed, added)) continue;
      const double fa = std::get<1>(added), fr = std::get<1>(removed);
      if (!(fa > 0 && fr > 0)) continue;
      const double ratio = std::max(fa, fr) / std::min(fa, fr);
      if (ratio <= best_ratio) {
        best_ratio = ratio;
        best = r;
      }
    }
    if (best == left.size()) continue;
    used[a] = used[best] = true;
    charge(added, std::get<3>(left[best].first), std::get<3>(added));
  }
  for (std::size_t i = 0; i < left.size(); ++i)
    if (!used[i])
      charge(left[i].first, left[i].second ? std::get<3>(left[i].first) : 0.0,
             left[i].second ? 0.0 : std::get<3>(left[i].first));
  // One kind's kernels err together (one library routine, priced by one curve): their errors
  // add up. Kinds err independently of each other: their sums add in quadrature.
  double squares = 0;
  for (const auto& [kind, us] : scatter_us) squares += us * us;
  band.worst_case_us -= std::sqrt(squares);
  for (std::size_t c = 0; c < kNumCostClasses; ++c) {
    const double s = profile.systematic_error[c];
    band.worst_case_us += net[c] > 0 ? net[c] / s : net[c] * s;
  }
  return band;
}

/// A cautious extraction cost: a node of the original program (the same op on the same
/// e-classes) at its predicted time t divided by its class's error factor f (both factors,
/// `DeviceProfile::uncertainty_of`), any other node at t · f. Kernels the extracted program shares
/// with the original cancel, and the program of least cost is the one whose gain is largest when
/// each changed kernel's error is its own (no netting within a class, unlike `gain_band`): it keeps
/// the changes that win by a margin, a subset of the predicted optimum's. With every factor 1 it is
/// `RooflineCost`.
class RobustCost {
 public:
  /// `original` must have been added to `egraph` (as `Runner::with_expr` does); its nodes are
  /// looked up in the rebuilt e-graph. Throws `ProfileError` if the profile is not valid.
  RobustCost(const TensorEGraph& egraph, const DeviceProfile& profile,
             const RecExpr<TensorNode>& original)
      : egraph_(&egraph), roofline_(egraph, profile) {
    std::vector<Id> ids(original.size(), kInvalidId);
    for (std::size_t i = 0; i < original.size(); ++i) {
      bool known = true;
      TensorNode node = map_children(original[Id(i)], [&](Id c) {
        known = known && ids[c.index()] != kInvalidId;
        return ids[c.index()];
      });
      if (!known) continue;  // an operand pruned from the e-graph: this node cannot be there either
      ids[i] = egraph.lookup_member_id(node);
      if (ids[i] != kInvalidId) original_.insert(canonical(node));
    }
  }

  /// Whether `node` is a node of the original program.
  [[nodiscard]] bool in_original(const TensorNode& node) const {
    return original_.count(canonical(node)) > 0;
  }

  double operator()(const TensorNode& node, const TensorEGraph::EClass& cls) const {
    const KernelTime t = roofline_.time(node, cls);
    if (t.total_us <= 0) return t.total_us;
    const DeviceProfile& p = roofline_.profile();
    const OpWork work =
        node.op() == Op::Conv2d || node.op() == Op::MatMul ? roofline_.work(node, cls) : OpWork{};
    std::size_t kind = kernel_kind(node.op(), work.own_form(), false);
    if (node.op() == Op::Fused) {
      const FusedGroup g = roofline_.group(node, cls);
      kind = fused_kind(g);
    }
    const double f = p.uncertainty_of(cost_class(node.op(), work), kind);
    return in_original(node) ? t.total_us / f : t.total_us * f;
  }
  [[nodiscard]] const RooflineCost& roofline() const noexcept { return roofline_; }

 private:
  [[nodiscard]] TensorNode canonical(const TensorNode& node) const {
    return map_children(node, [&](Id c) { return egraph_->find(c); });
  }

  const TensorEGraph* egraph_;
  RooflineCost roofline_;
  std::unordered_set<TensorNode, NodeHash> original_;
};

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_COST_UNCERTAINTY_H
