// TensorAnalysis: the e-class analysis of the tensor dialect (kind, dtype, shape per class).
#ifndef TENSAT_TENSOR_ANALYSIS_H
#define TENSAT_TENSOR_ANALYSIS_H

#include <fmt/format.h>

#include "tensat/core/analysis.h"
#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/small_vector.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Shapes, dtypes and layouts live here, not in operator names: `make` runs shape inference
/// on a node from its children's data, `merge` checks that united classes denote the same kind
/// of value (a rule that unites a [2, 3] class with a [3, 2] one is unsound, and throws) and
/// keeps `weight_only` if either side has it (a class equal to a weight-only term is itself
/// computable from the weights).
struct TensorAnalysis {
  using Data = TensorInfo;

  template <class EGraphT>
  Data make(const EGraphT& egraph, const TensorNode& node, Id) const {
    SmallVector<const TensorInfo*, 8> children;
    for (Id c : node.children()) children.push_back(&egraph[c].data);
    TensorInfo out;
    infer(node, children, out);
    return out;
  }

  DidMerge merge(Data& a, Data b) const {
    if (a.kind == Kind::Invalid || b.kind == Kind::Invalid) {
      if (a.kind == Kind::Invalid && b.kind != Kind::Invalid) {
        a = std::move(b);
        return {true, false};
      }
      return {false, b.kind == Kind::Invalid && a.kind != Kind::Invalid};
    }
    if (!a.same_type(b) || a.symbolic != b.symbolic || (!a.symbolic && a.value != b.value))
      throw Error(fmt::format("tensor analysis: united classes denote different values ({} and {})",
                              describe(a), describe(b)));
    if (a.symbolic) {  // fused-kernel bodies: the number of args read is a max
      if (a.value == b.value) return {false, false};
      if (a.value < b.value) {
        a.value = b.value;
        return {true, false};
      }
      return {false, true};
    }
    if (a.weight_only == b.weight_only) return {false, false};
    if (!a.weight_only) {
      a.weight_only = true;
      return {true, false};
    }
    return {false, true};
  }
};

/// The e-graph of the tensor dialect.
using TensorEGraph = EGraph<TensorNode, TensorAnalysis>;

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_ANALYSIS_H
