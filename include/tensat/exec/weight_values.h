// WeightValues: the values of a program's weight-only tensors (TASO's precomputable subgraphs),
// each evaluated once by the reference executor from the weights' bindings alone.
#ifndef TENSAT_EXEC_WEIGHT_VALUES_H
#define TENSAT_EXEC_WEIGHT_VALUES_H

#include <cstddef>
#include <memory>
#include <vector>

#include "tensat/core/recexpr.h"
#include "tensat/exec/detail/evaluator.h"
#include "tensat/exec/host_tensor.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/tensor_info.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Every weight-only tensor node of a program (a `weight`, or a computation reading weights
/// only: a folded batchnorm's scale, a transposed or relaid-out filter) with its value, as the
/// program computes it. What `precompute_weights` replaces by new weights, and what the ONNX
/// exporter writes as initializers. Inputs need no binding: nothing that reads one is evaluated.
/// An f32 `weight`'s value is its binding itself, not a copy: `weights` must outlive this.
class WeightValues {
 public:
  /// Evaluates the weight-only nodes of `program` from `weights` (bound by name). Throws
  /// `ShapeError` (an ill-typed program), `MissingBindingError` (a weight read has no binding),
  /// `BindingShapeError`.
  WeightValues(const RecExpr<TensorNode>& program, const Bindings& weights) {
    detail::Evaluator ev(program, weights);
    ev.run(true, true);
    infos_ = ev.infos();
    values_.resize(program.size());
    for (std::size_t i = 0; i < program.size(); ++i)
      if (is_weight_tensor(i)) values_[i] = ev.value(i).t;
  }

  /// The number of nodes of the program.
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
  /// Whether node `i` is a weight-only tensor (one whose value this holds).
  [[nodiscard]] bool is_weight_tensor(std::size_t i) const {
    return infos_.at(i).is_tensor() && infos_[i].weight_only && !infos_[i].symbolic;
  }
  /// The value of node `i`, or null when it is not a weight-only tensor. Throws
  /// `std::out_of_range` for `i` >= size().
  [[nodiscard]] const HostTensor* value(std::size_t i) const { return values_.at(i).get(); }
  /// `check_program`'s types of the program's nodes.
  [[nodiscard]] const std::vector<TensorInfo>& infos() const noexcept { return infos_; }

 private:
  std::vector<TensorInfo> infos_;
  std::vector<std::shared_ptr<const HostTensor>> values_;
};

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_WEIGHT_VALUES_H
