// Launchers of the CUDA executor's kernels (kernels.cu), callable from host C++ compiled by the
// host compiler: plain pointers and sizes, no tensat types. Each launches on `stream` and
// returns the launch's error (cudaGetLastError).
#ifndef TENSAT_CUDA_KERNELS_H
#define TENSAT_CUDA_KERNELS_H

#include <cstdint>

#include <cuda_runtime.h>

namespace tensat::cuda_kernels {

enum class Unary : int { Relu, Tanh, Sigmoid, Gelu, Exp, Erf, GeluErf, Silu, HardSwish };
enum class Reduce : int { Sum, Max, Mean };

inline constexpr int kMaxRank = 8;
/// out[i] = in[offset + sum_k m_k * strides_k] over the output's multi-index m (rank <= kMaxRank).
struct Strided {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};  // the source's stride per output axis (0: broadcast)
  std::int64_t offset = 0;
};

struct PoolShape {
  std::int64_t planes, H, W, Ho, Wo, kh, kw, sh, sw, ph, pw;
};

/// The elementwise part of a fused kernel as a postfix program over leaf tensors, run by one
/// kernel that evaluates it for each output element on a small stack: `Load` pushes
/// leaves[leaf][i], `LoadScalar` leaves[leaf][0]; the unary ops replace the top, the binary ones
/// pop their right operand and replace the left; `Clip` pops its bounds (lo under hi) and
/// replaces the value under them; the `Round` ops round the top to bf16 or f16.
enum class FusedOp : unsigned char {
  Load,
  LoadScalar,
  Add,
  Mul,
  Sub,
  Div,
  Pow,
  Relu,
  Tanh,
  Sigmoid,
  Gelu,
  Exp,
  Sqrt,
  Erf,
  GeluErf,
  Silu,
  HardSwish,
  Clip,
  RoundBf16,
  RoundF16
};
struct FusedCode {
  static constexpr int kMaxCode = 64, kMaxLeaves = 16, kMaxStack = 12;
  int length = 0;
  FusedOp op[kMaxCode] = {};
  unsigned char leaf[kMaxCode] = {};  // Load, LoadScalar: index into leaves
  const float* leaves[kMaxLeaves] = {};
};

/// One thread that returns `ns` nanoseconds (the GPU's global timer) after it starts: work
/// queued behind it on `stream` waits, so the host can launch a whole run before any of it starts.
cudaError_t spin(std::uint64_t ns, cudaStream_t stream);
cudaError_t unary(const float* x, float* y, std::int64_t n, Unary op, cudaStream_t stream);
/// out[i] = the value of `code` at element i, for i < n.
cudaError_t fused_elementwise(const FusedCode& code, float* out, std::int64_t n,
                              cudaStream_t stream);
/// y = a + b, or a * b when `mul`.
cudaError_t binary(const float* a, const float* b, float* y, std::int64_t n, bool mul,
                   cudaStream_t stream);
/// y = a * s[0].
cudaError_t scale(const float* a, const float* s, float* y, std::int64_t n, cudaStream_t stream);
/// Rounds in place: dtype 1 bf16 (nearest even on the upper 16 bits), 2 f16 (IEEE, nearest even).
cudaError_t round_to(float* p, std::int64_t n, int dtype, cudaStream_t stream);
cudaError_t gather(const float* in, float* out, std::int64_t n, const Strided& s,
                   cudaStream_t stream);
/// Copies x (outer x extent x inner) into out (outer x out_extent x inner) at `at` of the middle
/// axis.
cudaError_t place(const float* x, float* out, std::int64_t outer, std::int64_t extent,
                  std::int64_t inner, std::int64_t out_extent, std::int64_t at,
                  cudaStream_t stream);
/// Zero-pads planes of H x W to (H + th) x (W + tw), th / 2 rows before and tw / 2 columns before.
cudaError_t pad2d(const float* x, float* out, std::int64_t planes, std::int64_t H, std::int64_t W,
                  std::int64_t th, std::int64_t tw, cudaStream_t stream);
cudaError_t reduce(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                   std::int64_t inner, Reduce op, cudaStream_t stream);
cudaError_t softmax(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                    std::int64_t inner, cudaStream_t stream);
cudaError_t layernorm(const float* x, const float* gamma, const float* beta, float* y,
                      std::int64_t rows, std::int64_t n, float eps, cudaStream_t stream);
cudaError_t batchnorm(const float* x, const float* scale, const float* bias, const float* mean,
                      const float* var, float* y, std::int64_t channels, std::int64_t inner,
                      std::int64_t n, float eps, cudaStream_t stream);
cudaError_t pool(const float* x, float* y, const PoolShape& s, bool is_max, cudaStream_t stream);

}  // namespace tensat::cuda_kernels

#endif  // TENSAT_CUDA_KERNELS_H
