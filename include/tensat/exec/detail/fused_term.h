// FusedTerm: one term of a fused kernel's body, as the fused loop and the convolution post-ops
// runner read it.
#ifndef TENSAT_EXEC_DETAIL_FUSED_TERM_H
#define TENSAT_EXEC_DETAIL_FUSED_TERM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tensat/exec/host_tensor.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/tensor_info.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// One term of a fused kernel's body as `FusedLoop` runs it. Leaves (`arg`s, and a contraction
/// once computed) hold a tensor.
struct FusedTerm {
  Op op = Op::Arg;
  DType dtype = DType::F32;
  Dims dims;
  std::int64_t elements = 0;
  std::vector<std::size_t> operands;  ///< tensor operands, as term indices, in order
  std::vector<std::int64_t> attrs;    ///< integer attributes (axis, start, act, ...)
  std::vector<std::int64_t>
      strides;  ///< transpose/broadcast/slice: the operand's stride per output axis
  std::vector<std::int64_t> part_extents;  ///< concat: each part's extent along the axis
  std::int64_t offset = 0;                 ///< slice: the flat offset of the first element
  std::shared_ptr<const HostTensor> leaf;
};

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_FUSED_TERM_H
