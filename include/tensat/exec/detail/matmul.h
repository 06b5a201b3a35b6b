// The Eigen executor's matrix product, one Eigen GEMM per batch entry.
#ifndef TENSAT_EXEC_DETAIL_MATMUL_H
#define TENSAT_EXEC_DETAIL_MATMUL_H

#include <cstddef>
#include <cstdint>

#include <Eigen/Core>

#include "tensat/exec/detail/elementwise.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// The output shape of matmul.
inline Dims matmul_dims(const HostTensor& a, const HostTensor& b) {
  Dims dims = a.dims;
  dims.back() = b.dims.back();
  return dims;
}

/// matmul into `out` (shape `matmul_dims`), calling `epilogue` (if any) on each batch entry's
/// product once computed and activated.
inline void matmul_into(const HostTensor& a, const HostTensor& b, Activation act, HostTensor& out,
                        const Epilogue* epilogue = nullptr) {
  const std::size_t r = a.rank();
  const std::int64_t M = a.dims[r - 2], K = a.dims[r - 1], Nn = b.dims[r - 1];
  std::int64_t batch = 1;
  for (std::size_t i = 0; i + 2 < r; ++i) batch *= a.dims[i];
  for (std::int64_t i = 0; i < batch; ++i) {
    Eigen::Map<const RowMatrix> A(a.data.data() + i * M * K, M, K);
    Eigen::Map<const RowMatrix> B(b.data.data() + i * K * Nn, K, Nn);
    Eigen::Map<RowMatrix> Cm(out.data.data() + i * M * Nn, M, Nn);
    Cm.noalias() = A * B;
    activate(out.data.data() + i * M * Nn, M * Nn, act);
    if (epilogue) (*epilogue)(i * M * Nn, M * Nn);
  }
}

inline HostTensor matmul(const HostTensor& a, const HostTensor& b, Activation act) {
  HostTensor out(matmul_dims(a, b), a.dtype);
  matmul_into(a, b, act, out);
  return out;
}

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_MATMUL_H
