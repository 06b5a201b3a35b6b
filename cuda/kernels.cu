// The CUDA executor's kernels (see kernels.h): grid-stride loops, one thread per output element
// (per row for the normalizations and reductions, which sum in order like the CPU executor).
#include "kernels.h"

#include <cuda_fp16.h>

#include <algorithm>

namespace tensat::cuda_kernels {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535 * 8));
}
#define TENSAT_GRID_STRIDE(i, n)                                                                   \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

__device__ inline float relu(float v) { return v > 0.0f ? v : 0.0f; }
__device__ inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
__device__ inline float gelu(float v) {  // the tanh form, as the CPU executor
  return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}
__device__ inline float round_bf16(float x) {  // nearest even on the upper 16 bits; NaN kept
  if (isnan(x)) return x;
  unsigned int u = __float_as_uint(x);
  u += 0x7fffu + ((u >> 16) & 1u);
  return __uint_as_float(u & 0xffff0000u);
}

__global__ void unary_kernel(const float* x, float* y, std::int64_t n, Unary op) {
  TENSAT_GRID_STRIDE(i, n) {
    const float v = x[i];
    switch (op) {
      case Unary::Relu:
        y[i] = relu(v);
        break;
      case Unary::Tanh:
        y[i] = tanhf(v);
        break;
      case Unary::Sigmoid:
        y[i] = sigmoid(v);
        break;
      case Unary::Gelu:
        y[i] = gelu(v);
        break;
      case Unary::Exp:
        y[i] = expf(v);
        break;
      case Unary::Erf:
        y[i] = erff(v);
        break;
      case Unary::GeluErf:
        y[i] = v * (erff(v * 0.70710678118654752f) + 1.0f) * 0.5f;
        break;
      case Unary::Silu:
        y[i] = v / (1.0f + expf(-v));
        break;
      case Unary::HardSwish:
        y[i] = v * fminf(fmaxf(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
        break;
    }
  }
}

__global__ void fused_kernel(const FusedCode code, float* out, std::int64_t n) {
  // Indexing a kernel parameter with a run-time index makes every thread copy the parameter to
  // local memory first: the program is copied once per block into shared memory instead, and
  // each thread's stack lives there too (level k of thread t at stack[k][t]: no bank conflicts).
  __shared__ alignas(
      FusedCode) unsigned char program_bytes[sizeof(FusedCode)];  // no constructor in shared memory
  __shared__ float stack[FusedCode::kMaxStack][kThreads];
  if (threadIdx.x == 0)
    memcpy(program_bytes, &code, sizeof(FusedCode));  // FusedCode is trivially copyable
  __syncthreads();
  const FusedCode& program = *reinterpret_cast<const FusedCode*>(program_bytes);
  float* const s = &stack[0][threadIdx.x];
#define TENSAT_STACK(k) s[(k)*kThreads]
  TENSAT_GRID_STRIDE(i, n) {
    int top = -1;
    for (int c = 0; c < program.length; ++c) {
      switch (program.op[c]) {
        case FusedOp::Load:
          ++top;
          TENSAT_STACK(top) = program.leaves[program.leaf[c]][i];
          break;
        case FusedOp::LoadScalar:
          ++top;
          TENSAT_STACK(top) = program.leaves[program.leaf[c]][0];
          break;
        case FusedOp::Add:
          --top;
          TENSAT_STACK(top) = TENSAT_STACK(top) + TENSAT_STACK(top + 1);
          break;
        case FusedOp::Mul:
          --top;
          TENSAT_STACK(top) = TENSAT_STACK(top) * TENSAT_STACK(top + 1);
          break;
        case FusedOp::Sub:
          --top;
          TENSAT_STACK(top) = TENSAT_STACK(top) - TENSAT_STACK(top + 1);
          break;
        case FusedOp::Div:
          --top;
          TENSAT_STACK(top) = TENSAT_STACK(top) / TENSAT_STACK(top + 1);
          break;
        case FusedOp::Pow:
          --top;
          TENSAT_STACK(top) = powf(TENSAT_STACK(top), TENSAT_STACK(top + 1));
          break;
        case FusedOp::Relu:
          TENSAT_STACK(top) = relu(TENSAT_STACK(top));
          break;
        case FusedOp::Tanh:
          TENSAT_STACK(top) = tanhf(TENSAT_STACK(top));
          break;
        case FusedOp::Sigmoid:
          TENSAT_STACK(top) = sigmoid(TENSAT_STACK(top));
          break;
        case FusedOp::Gelu:
          TENSAT_STACK(top) = gelu(TENSAT_STACK(top));
          break;
        case FusedOp::Exp:
          TENSAT_STACK(top) = expf(TENSAT_STACK(top));
          break;
        case FusedOp::Sqrt:
          TENSAT_STACK(top) = sqrtf(TENSAT_STACK(top));
          break;
        case FusedOp::Erf:
          TENSAT_STACK(top) = erff(TENSAT_STACK(top));
          break;
        case FusedOp::GeluErf: {
          const float v = TENSAT_STACK(top);
          TENSAT_STACK(top) = v * (erff(v * 0.70710678118654752f) + 1.0f) * 0.5f;
          break;
        }
        case FusedOp::Silu: {
          const float v = TENSAT_STACK(top);
          TENSAT_STACK(top) = v / (1.0f + expf(-v));
          break;
        }
        case FusedOp::HardSwish: {
          const float v = TENSAT_STACK(top);
          TENSAT_STACK(top) = v * fminf(fmaxf(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
          break;
        }
        case FusedOp::Clip: {  // min(max(x, lo), hi), as std::min/std::max order their operands
          top -= 2;
          const float x = TENSAT_STACK(top), lo = TENSAT_STACK(top + 1), hi = TENSAT_STACK(top + 2);
          const float t = x < lo ? lo : x;
          TENSAT_STACK(top) = hi < t ? hi : t;
          break;
        }
        case FusedOp::RoundBf16:
          TENSAT_STACK(top) = round_bf16(TENSAT_STACK(top));
          break;
        case FusedOp::RoundF16:
          TENSAT_STACK(top) = __half2float(__float2half_rn(TENSAT_STACK(top)));
          break;
      }
    }
    out[i] = TENSAT_STACK(0);
  }
#undef TENSAT_STACK
}

__global__ void binary_kernel(const float* a, const float* b, float* y, std::int64_t n, bool mul) {
  TENSAT_GRID_STRIDE(i, n) { y[i] = mul ? a[i] * b[i] : a[i] + b[i]; }
}

__global__ void scale_kernel(const float* a, const float* s, float* y, std::int64_t n) {
  TENSAT_GRID_STRIDE(i, n) { y[i] = a[i] * s[0]; }
}

/// Round to the dtype in place: 1 bf16, 2 f16.
__global__ void round_kernel(float* p, std::int64_t n, int dtype) {
  TENSAT_GRID_STRIDE(i, n) {
    p[i] = dtype == 2 ? __half2float(__float2half_rn(p[i])) : round_bf16(p[i]);
  }
}

/// out[i] = in[offset + sum_k m_k * strides_k] over the output's multi-index m.
__global__ void gather_kernel(const float* in, float* out, std::int64_t n, Strided s) {
  TENSAT_GRID_STRIDE(i, n) {
    std::int64_t f = i, src = s.offset;
    for (int a = s.rank - 1; a >= 0; --a) {
      src += (f % s.dims[a]) * s.strides[a];
      f /= s.dims[a];
    }
    out[i] = in[src];
  }
}

/// Copies x (outer x extent x inner) into out (outer x out_extent x inner) at position `at` of
/// the middle axis: concat's parts and pad's interior.
__global__ void place_kernel(const float* x, float* out, std::int64_t outer, std::int64_t extent,
                             std::int64_t inner, std::int64_t out_extent, std::int64_t at) {
  const std::int64_t n = outer * extent * inner;
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t in = i % inner, e = (i / inner) % extent, o = i / (inner * extent);
    out[(o * out_extent + at + e) * inner + in] = x[i];
  }
}

/// op: 0 sum, 1 max, 2 mean; one thread per output element, the axis summed in order.
__global__ void reduce_kernel(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                              std::int64_t inner, int op) {
  const std::int64_t n = outer * inner;
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t o = i / inner, in = i % inner;
    const float* p = x + o * extent * inner + in;
    float acc = op == 1 ? -INFINITY : 0.0f;
    for (std::int64_t e = 0; e < extent; ++e)
      acc = op == 1 ? fmaxf(acc, p[e * inner]) : acc + p[e * inner];
    y[i] = op == 2 ? acc / static_cast<float>(extent) : acc;
  }
}

__global__ void softmax_kernel(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                               std::int64_t inner) {
  const std::int64_t n = outer * inner;
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t base = (i / inner) * extent * inner + i % inner;
    float m = -INFINITY;
    for (std::int64_t e = 0; e < extent; ++e) m = fmaxf(m, x[base + e * inner]);
    float sum = 0.0f;
    for (std::int64_t e = 0; e < extent; ++e)
      sum += (y[base + e * inner] = expf(x[base + e * inner] - m));
    for (std::int64_t e = 0; e < extent; ++e) y[base + e * inner] /= sum;
  }
}

__global__ void layernorm_kernel(const float* x, const float* gamma, const float* beta, float* y,
                                 std::int64_t rows, std::int64_t n, float eps) {
  TENSAT_GRID_STRIDE(r, rows) {
    const float* v = x + r * n;
    float mean = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) mean += v[k];
    mean /= static_cast<float>(n);
    float var = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) var += (v[k] - mean) * (v[k] - mean);
    var /= static_cast<float>(n);
    const float inv = 1.0f / sqrtf(var + eps);
    for (std::int64_t k = 0; k < n; ++k) y[r * n + k] = (v[k] - mean) * inv * gamma[k] + beta[k];
  }
}

__global__ void batchnorm_kernel(const float* x, const float* scale, const float* bias,
                                 const float* mean, const float* var, float* y,
                                 std::int64_t channels, std::int64_t inner, std::int64_t n,
                                 float eps) {
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t c = (i / inner) % channels;
    const float k = scale[c] / sqrtf(var[c] + eps);
    y[i] = (x[i] - mean[c]) * k + bias[c];
  }
}

__global__ void pool_kernel(const float* x, float* y, PoolShape s, bool is_max) {
  const std::int64_t n = s.planes * s.Ho * s.Wo;
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t ow = i % s.Wo, oh = (i / s.Wo) % s.Ho, plane = i / (s.Wo * s.Ho);
    const std::int64_t h0 = max(oh * s.sh - s.ph, std::int64_t{0}),
                       h1 = min(oh * s.sh - s.ph + s.kh, s.H);
    const std::int64_t w0 = max(ow * s.sw - s.pw, std::int64_t{0}),
                       w1 = min(ow * s.sw - s.pw + s.kw, s.W);
    const float* in = x + plane * s.H * s.W;
    float acc = is_max ? -INFINITY : 0.0f;
    for (std::int64_t a = h0; a < h1; ++a)
      for (std::int64_t b = w0; b < w1; ++b)
        acc = is_max ? fmaxf(acc, in[a * s.W + b]) : acc + in[a * s.W + b];
    y[i] = is_max ? acc : acc / static_cast<float>((h1 - h0) * (w1 - w0));
  }
}

__global__ void pad2d_kernel(const float* x, float* out, std::int64_t planes, std::int64_t H,
                             std::int64_t W, std::int64_t th, std::int64_t tw) {
  const std::int64_t Hp = H + th, Wp = W + tw, n = planes * Hp * Wp;
  TENSAT_GRID_STRIDE(i, n) {
    const std::int64_t w = i % Wp - tw / 2, h = (i / Wp) % Hp - th / 2, plane = i / (Wp * Hp);
    out[i] = h >= 0 && h < H && w >= 0 && w < W ? x[(plane * H + h) * W + w] : 0.0f;
  }
}

}  // namespace

#define TENSAT_LAUNCH(n, kernel, ...)                                         \
  do {                                                                        \
    if ((n) > 0) kernel<<<blocks_for(n), kThreads, 0, stream>>>(__VA_ARGS__); \
    return cudaGetLastError();                                                \
  } while (0)

__global__ void spin_kernel(std::uint64_t ns) {
  std::uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

cudaError_t unary(const float* x, float* y, std::int64_t n, Unary op, cudaStream_t stream) {
  TENSAT_LAUNCH(n, unary_kernel, x, y, n, op);
}
cudaError_t fused_elementwise(const FusedCode& code, float* out, std::int64_t n,
                              cudaStream_t stream) {
  TENSAT_LAUNCH(n, fused_kernel, code, out, n);
}
cudaError_t binary(const float* a, const float* b, float* y, std::int64_t n, bool mul,
                   cudaStream_t stream) {
  TENSAT_LAUNCH(n, binary_kernel, a, b, y, n, mul);
}
cudaError_t scale(const float* a, const float* s, float* y, std::int64_t n, cudaStream_t stream) {
  TENSAT_LAUNCH(n, scale_kernel, a, s, y, n);
}
cudaError_t round_to(float* p, std::int64_t n, int dtype, cudaStream_t stream) {
  TENSAT_LAUNCH(n, round_kernel, p, n, dtype);
}
cudaError_t gather(const float* in, float* out, std::int64_t n, const Strided& s,
                   cudaStream_t stream) {
  TENSAT_LAUNCH(n, gather_kernel, in, out, n, s);
}
cudaError_t place(const float* x, float* out, std::int64_t outer, std::int64_t extent,
                  std::int64_t inner, std::int64_t out_extent, std::int64_t at,
                  cudaStream_t stream) {
  TENSAT_LAUNCH(outer * extent * inner, place_kernel, x, out, outer, extent, inner, out_extent, at);
}
cudaError_t spin(std::uint64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}
cudaError_t pad2d(const float* x, float* out, std::int64_t planes, std::int64_t H, std::int64_t W,
                  std::int64_t th, std::int64_t tw, cudaStream_t stream) {
  TENSAT_LAUNCH(planes * (H + th) * (W + tw), pad2d_kernel, x, out, planes, H, W, th, tw);
}
cudaError_t reduce(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                   std::int64_t inner, Reduce op, cudaStream_t stream) {
  TENSAT_LAUNCH(outer * inner, reduce_kernel, x, y, outer, extent, inner, static_cast<int>(op));
}
cudaError_t softmax(const float* x, float* y, std::int64_t outer, std::int64_t extent,
                    std::int64_t inner, cudaStream_t stream) {
  TENSAT_LAUNCH(outer * inner, softmax_kernel, x, y, outer, extent, inner);
}
cudaError_t layernorm(const float* x, const float* gamma, const float* beta, float* y,
                      std::int64_t rows, std::int64_t n, float eps, cudaStream_t stream) {
  TENSAT_LAUNCH(rows, layernorm_kernel, x, gamma, beta, y, rows, n, eps);
}
cudaError_t batchnorm(const float* x, const float* scale, const float* bias, const float* mean,
                      const float* var, float* y, std::int64_t channels, std::int64_t inner,
                      std::int64_t n, float eps, cudaStream_t stream) {
  TENSAT_LAUNCH(n, batchnorm_kernel, x, scale, bias, mean, var, y, channels, inner, n, eps);
}
cudaError_t pool(const float* x, float* y, const PoolShape& s, bool is_max, cudaStream_t stream) {
  TENSAT_LAUNCH(s.planes * s.Ho * s.Wo, pool_kernel, x, y, s, is_max);
}

}  // namespace tensat::cuda_kernels
