// The CUDA executor (tensat/exec/cuda_executor.h): every operator of the tensor dialect on an
// NVIDIA GPU. matmul runs on cuBLAS (strided batched SGEMM), conv2d on cuDNN (grouped, explicit
// zero padding when TensorFlow's SAME padding is asymmetric); the other operators are the small
// grid-stride kernels of kernels.cu, launched from here (host code, built by the C++ compiler).
// The semantics, including the choices the shape rules leave open (SAME padding, poolavg
// divisors, eps, gelu's tanh form, f16/bf16 rounding), are those of the Eigen executor, against
// which the tests compare it.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <tensat/exec/cuda_executor.h>
#include <tensat/tensor/graph.h>

#include "kernels.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace cuda_internal {

namespace k = ::tensat::cuda_kernels;

// ----------------------------------------------------------------------------- errors

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw ExecutionError(fmt::format("execute_cuda: {} failed: {}", call, cudaGetErrorString(e)));
}
inline void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw ExecutionError(
        fmt::format("execute_cuda: {} failed: cuBLAS status {}", call, static_cast<int>(s)));
}
inline void check(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw ExecutionError(fmt::format("execute_cuda: {} failed: {}", call, cudnnGetErrorString(s)));
}
#define TENSAT_CUDA_CHECK(call) ::tensat::tensor::cuda_internal::check((call), #call)

// ----------------------------------------------------------------------------- memory

/// Device buffers reused by size: a program allocates and frees the same sizes on every run, and
/// cudaMalloc/cudaFree synchronize.
class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    for (auto& [bytes, p] : free_) cudaFree(p);
  }
  float* get(std::size_t elements) {
    const std::size_t bytes = std::max<std::size_t>(elements, 1) * sizeof(float);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      float* p = it->second;
      free_.erase(it);
      return p;
    }
    void* p = nullptr;
    TENSAT_CUDA_CHECK(cudaMalloc(&p, bytes));
    return static_cast<float*>(p);
  }
  void put(float* p, std::size_t elements) {
    free_.emplace(std::max<std::size_t>(elements, 1) * sizeof(float), p);
  }

 private:
  std::multimap<std::size_t, float*> free_;
};

/// A start and a stop event, destroyed with the pair.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    TENSAT_CUDA_CHECK(cudaEventCreate(&start));
    const cudaError_t e = cudaEventCreate(&stop);
    if (e != cudaSuccess) cudaEventDestroy(start);
    TENSAT_CUDA_CHECK(e);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  /// The time from `start` to `stop`, once the stream has reached `stop`.
  float elapsed_ms() const {
    TENSAT_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    TENSAT_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    return t;
  }
};

/// A tensor on the device; its buffer goes back to the pool with the last reference.
struct DeviceTensor {
  DType dtype = DType::F32;
  Dims dims;
  std::shared_ptr<float> data;
  [[nodiscard]] std::int64_t elements() const noexcept { return HostTensor::count(dims); }
  [[nodiscard]] float* ptr() const noexcept { return data.get(); }
};

// ----------------------------------------------------------------------------- convolution
// algorithms

/// A cuDNN forward algorithm for one convolution geometry, and the workspace it needs.
struct ConvAlgorithm {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspace_bytes = 0;
  /// Whether cudnnConvolutionBiasActivationForward runs `algo` with a ReLU: 0 not tried yet,
  /// 1 yes, -1 refused (then the ReLU is a kernel of its own).
  int relu_fusion = 0;
  /// A 1x1, stride-1, ungrouped convolution run as one strided-batched SGEMM instead (cuBLAS,
  /// plain f32), where that timed faster than cuDNN's algorithms.
  bool gemm = false;
};

/// A convolution as cuDNN runs it, the key of its algorithm choice: the input (after any
/// explicit padding), the filter, the padding and strides, and the device.
struct ConvGeometry {
  int n = 0, c = 0, h = 0, w = 0;     ///< the input, NCHW
  int o = 0, cg = 0, kh = 0, kw = 0;  ///< output channels, input channels a group, the window
  int pad_h = 0, pad_w = 0;           ///< symmetric padding
  int stride_h = 0, stride_w = 0;
  int device = 0;

  [[nodiscard]] auto key() const {
    return std::tie(n, c, h, w, o, cg, kh, kw, pad_h, pad_w, stride_h, stride_w, device);
  }
  friend bool operator<(const ConvGeometry& a, const ConvGeometry& b) { return a.key() < b.key(); }
};

/// The process-wide choice of a forward algorithm per geometry (see Executor::conv_algorithm).
struct ConvAlgorithmCache {
  std::mutex mutex;
  std::map<ConvGeometry, ConvAlgorithm> chosen;
};
inline ConvAlgorithmCache& conv_algorithm_cache() {
  static ConvAlgorithmCache cache;
  return cache;
}

// ----------------------------------------------------------------------------- the evaluator

/// Node values: integers, lists and names on the host; tensors on the device.
struct Value {
  std::int64_t value = 0;
  Dims ints;
  std::string name;
  std::shared_ptr<DeviceTensor> t, t2;
  std::vector<std::shared_ptr<DeviceTensor>> outs;
};

/// A CUDA context for one program: handles, the buffer pool and the uploaded bindings.
class Executor {
 public:
  Executor(const RecExpr<TensorNode>& program, const Bindings& bindings)
      : p_(program), bindings_(bindings), infos_(check_program(program)) {
    if (p_.size() == 0) throw ExecutionError("execute_cuda: empty program");
    TENSAT_CUDA_CHECK(cudaStreamCreate(&stream_));
    TENSAT_CUDA_CHECK(cublasCreate(&cublas_));
    TENSAT_CUDA_CHECK(cublasSetStream(cublas_, stream_));
    // Plain f32 arithmetic, as on the CPU: no TF32 tensor cores (verification uses rtol 1e-4).
    TENSAT_CUDA_CHECK(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
    TENSAT_CUDA_CHECK(cudnnCreate(&cudnn_));
    TENSAT_CUDA_CHECK(cudnnSetStream(cudnn_, stream_));
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  ~Executor() {
    values_.clear();
    uploaded_.clear();
    zeros_.reset();
    if (workspace_) cudaFree(workspace_);
    if (relu_) cudnnDestroyActivationDescriptor(relu_);
    if (cudnn_) cudnnDestroy(cudnn_);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  /// One run: every non-symbolic node in order, tensors freed after their last use. With
  /// `marks` (one event per node and one more), records marks[i] on the stream before node i's
  /// work is launched and marks[n] after the last node's (profile_cuda).
  void run(const std::vector<cudaEvent_t>* marks = nullptr) {
    const std::size_t n = p_.size();
    values_.assign(n, Value{});
    std::vector<std::size_t> last_use(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      last_use[i] = std::max(last_use[i], i);
      for (Id c : p_[Id(i)].children())
        last_use[c.index()] = infos_[i].symbolic ? n : std::max(last_use[c.index()], i);
    }
    last_use[n - 1] = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (infos_[i].symbolic) continue;
      if (marks) TENSAT_CUDA_CHECK(cudaEventRecord((*marks)[i], stream_));
      values_[i] = eval(i, nullptr);
      for (Id c : p_[Id(i)].children())
        if (last_use[c.index()] == i) {
          values_[c.index()].t.reset();
          values_[c.index()].t2.reset();
        }
    }
    if (marks) TENSAT_CUDA_CHECK(cudaEventRecord((*marks)[n], stream_));
  }

  [[nodiscard]] std::vector<HostTensor> outputs() {
    std::vector<std::shared_ptr<DeviceTensor>> roots;
    const Value& root = values_.back();
    if (p_[Id(p_.size() - 1)].op() == Op::Noop)
      roots = root.outs;
    else
      roots.push_back(root.t);
    std::vector<HostTensor> out;
    for (const auto& t : roots) {
      HostTensor h(t->dims, t->dtype);
      TENSAT_CUDA_CHECK(cudaMemcpyAsync(h.data.data(), t->ptr(), h.data.size() * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream_));
      out.push_back(std::move(h));
    }
    TENSAT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return out;
  }

  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] const std::vector<TensorInfo>& infos() const noexcept { return infos_; }

 private:
  std::shared_ptr<DeviceTensor> make(const Dims& dims, DType dtype) {
    auto t = std::make_shared<DeviceTensor>();
    t->dtype = dtype;
    t->dims = dims;
    const std::size_t n = static_cast<std::size_t>(t->elements());
    Pool* pool = &pool_;
    t->data = std::shared_ptr<float>(pool->get(n), [pool, n](float* p) { pool->put(p, n); });
    return t;
  }
  void zero(const DeviceTensor& t) {
    TENSAT_CUDA_CHECK(cudaMemsetAsync(
        t.ptr(), 0, static_cast<std::size_t>(t.elements()) * sizeof(float), stream_));
  }
  void unary(const DeviceTensor& x, DeviceTensor& y, k::Unary op) {
    TENSAT_CUDA_CHECK(k::unary(x.ptr(), y.ptr(), x.elements(), op, stream_));
  }
  void activate(DeviceTensor& y, Activation act) {
    if (act == Activation::Sigmoid)
      unary(y, y, k::Unary::Sigmoid);
    else if (act == Activation::Relu)
      unary(y, y, k::Unary::Relu);
    else if (act == Activation::Tanh)
      unary(y, y, k::Unary::Tanh);
  }

  /// The binding of `name`, uploaded once per executor (rounded to the declared dtype).
  std::shared_ptr<DeviceTensor> upload(const std::string& name, const TensorInfo& info) {
    if (auto it = uploaded_.find(name); it != uploaded_.end()) return it->second;
    auto b = bindings_.find(name);
    if (b == bindings_.end()) throw MissingBindingError(name);
    if (b->second.dims != info.dims) throw BindingShapeError(name, info.dims, b->second.dims);
    if (static_cast<std::int64_t>(b->second.data.size()) != info.elements())
      throw ExecutionError(fmt::format("execute_cuda: '{}' holds {} values for shape {}", name,
                                       b->second.data.size(), dims_to_string(info.dims)));
    HostTensor h = b->second;
    h.dtype = info.dtype;
    round_tensor(h);
    auto t = make(info.dims, info.dtype);
    TENSAT_CUDA_CHECK(
        cudaMemcpy(t->ptr(), h.data.data(), h.data.size() * sizeof(float), cudaMemcpyHostToDevice));
    uploaded_.emplace(name, t);
    return t;
  }

  void* workspace(std::size_t bytes) {
    if (bytes > workspace_bytes_) {
      if (workspace_) TENSAT_CUDA_CHECK(cudaFree(workspace_));
      workspace_ = nullptr;
      TENSAT_CUDA_CHECK(cudaMalloc(&workspace_, bytes));
      workspace_bytes_ = bytes;
    }
    return workspace_;
  }

  std::shared_ptr<DeviceTensor> matmul(const DeviceTensor& a, const DeviceTensor& b, Activation act,
                                       DType dtype) {
    const std::size_t r = a.dims.size();
    const std::int64_t M = a.dims[r - 2], K = a.dims[r - 1], N = b.dims[r - 1];
    Dims dims = a.dims;
    dims[r - 1] = N;
    auto out = make(dims, dtype);
    std::int64_t batch = 1;
    for (std::size_t i = 0; i + 2 < r; ++i) batch *= a.dims[i];
    const float one = 1.0f, zero_f = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T.
    TENSAT_CUDA_CHECK(cublasSgemmStridedBatched(
        cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
        static_cast<int>(K), &one, b.ptr(), static_cast<int>(N), K * N, a.ptr(),
        static_cast<int>(K), M * K, &zero_f, out->ptr(), static_cast<int>(N), M * N,
        static_cast<int>(batch)));
    activate(*out, act);
    return out;
  }

  /// The forward algorithm for a convolution geometry: the fastest plain-f32 (FMA math, no
  /// TF32) one, chosen the first time the process meets the geometry on a device and cached for
  /// the rest of the process. cuDNN's heuristic (cudnnGetConvolutionForwardAlgorithm_v7) lists
  /// tensor-op engines first on Hopper, and the first FMA engine it lists made the CNNs 10 to 27
  /// times slower on an H100 (bench/history/gpu-runs.md). cudnnFindConvolutionForwardAlgorithm
  /// times every algorithm once, which picked differently from one process to the next where two
  /// are close; so its FMA candidates (up to four, fastest first) are timed again here on the
  /// convolution's own buffers, the median of five runs each after one untimed, and the fastest
  /// median wins (the output is overwritten by the real call after). A 1x1 convolution with
  /// stride 1 and no groups is also timed as a cuBLAS product (`conv1x1_gemm`): at batch 1,
  /// cuDNN's FMA engines were measured far slower on such shapes (a 1024 -> 2048 channel one
  /// at 7x7: 0.13 ms, about 30 times its roofline).
  ConvAlgorithm conv_algorithm(const ConvGeometry& geometry, cudnnTensorDescriptor_t xd,
                               const float* x, cudnnFilterDescriptor_t wd, const float* w,
                               cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd,
                               float* y) {
    ConvAlgorithmCache& cache = conv_algorithm_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.chosen.find(geometry); it != cache.chosen.end()) return it->second;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    TENSAT_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(
        cudnn_, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
    std::vector<ConvAlgorithm> candidates;
    for (int a = 0; a < found && candidates.size() < 4; ++a)  // sorted by cuDNN's one timing
      if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].mathType != CUDNN_TENSOR_OP_MATH &&
          perf[a].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        candidates.push_back(ConvAlgorithm{perf[a].algo, perf[a].memory});
    // A 1x1 convolution with stride 1, no padding and no groups is a matrix product per image.
    const bool gemm_shaped = geometry.kh == 1 && geometry.kw == 1 && geometry.pad_h == 0 &&
                             geometry.pad_w == 0 && geometry.stride_h == 1 &&
                             geometry.stride_w == 1 && geometry.cg == geometry.c;
    if (gemm_shaped) {
      ConvAlgorithm g;
      g.gemm = true;
      candidates.push_back(g);
    }
    if (candidates.empty())
      throw ExecutionError("execute_cuda: cuDNN offers no FMA-math algorithm for a conv2d");
    ConvAlgorithm best = candidates.front();
    if (candidates.size() > 1) {
      const EventPair events;
      const float one = 1.0f, zero_f = 0.0f;
      double best_ms = 0;
      bool timed_any = false;
      std::string last_failure;
      for (const ConvAlgorithm& c : candidates) {
        std::vector<double> ms;
        try {  // a candidate that fails (its workspace not allocated, say) is passed over
          void* ws = c.workspace_bytes ? workspace(c.workspace_bytes) : nullptr;
          for (int r = 0; r < 6; ++r) {
            TENSAT_CUDA_CHECK(cudaEventRecord(events.start, stream_));
            if (c.gemm)
              conv1x1_gemm(x, w, y, geometry.n, geometry.c, geometry.h * geometry.w, geometry.o);
            else
              TENSAT_CUDA_CHECK(cudnnConvolutionForward(cudnn_, &one, xd, x, wd, w, cd, c.algo, ws,
                                                        c.workspace_bytes, &zero_f, yd, y));
            TENSAT_CUDA_CHECK(cudaEventRecord(events.stop, stream_));
            const float t = events.elapsed_ms();
            if (r > 0) ms.push_back(t);  // the first run untimed
          }
        } catch (const ExecutionError& e) {
          (void)cudaGetLastError();  // clear a non-sticky error; a sticky one fails the next call
                                     // anyway
          last_failure = e.what();
          continue;
        }
        std::sort(ms.begin(), ms.end());
        if (!timed_any || ms[ms.size() / 2] < best_ms) {
          best_ms = ms[ms.size() / 2];
          best = c;
          timed_any = true;
        }
      }
      if (!timed_any) throw ExecutionError(last_failure);
    }
    cache.chosen.emplace(geometry, best);
    return best;
  }

  /// y[n] = w · x[n] for each image n: w [O, C], x[n] [C, HW], y[n] [O, HW], all row-major
  /// (column-major, y[n]ᵀ = x[n]ᵀ · wᵀ), one strided-batched SGEMM with w's stride 0.
  void conv1x1_gemm(const float* x, const float* w, float* y, int N, int C, int HW, int O) {
    const float one = 1.0f, zero_f = 0.0f;
    TENSAT_CUDA_CHECK(cublasSgemmStridedBatched(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, HW, O, C, &one,
                                                x, HW, static_cast<long long>(C) * HW, w, C, 0,
                                                &zero_f, y, HW, static_cast<long long>(O) * HW, N));
  }

  std::shared_ptr<DeviceTensor> conv2d(const DeviceTensor& x0, const DeviceTensor& w,
                                       std::int64_t sh, std::int64_t sw, std::int64_t pad,
                                       Activation act, DType dtype) {
    const std::int64_t N = x0.dims[0], C = x0.dims[1], H = x0.dims[2], W = x0.dims[3];
    const std::int64_t O = w.dims[0], Cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
    const std::int64_t Ho = pad == 0 ? (H + sh - 1) / sh : (H - kh) / sh + 1;
    const std::int64_t Wo = pad == 0 ? (W + sw - 1) / sw : (W - kw) / sw + 1;
    std::int64_t th = 0, tw = 0;  // SAME: total padding, the extra one after (TensorFlow)
    if (pad == 0) {
      th = std::max<std::int64_t>((Ho - 1) * sh + kh - H, 0);
      tw = std::max<std::int64_t>((Wo - 1) * sw + kw - W, 0);
    }
    const DeviceTensor* x = &x0;
    std::shared_ptr<DeviceTensor> padded;
    std::int64_t ph = th / 2, pw = tw / 2;
    if (th % 2 || tw % 2) {  // asymmetric: pad explicitly, then convolve without padding
      padded = make(Dims{N, C, H + th, W + tw}, x0.dtype);
      TENSAT_CUDA_CHECK(k::pad2d(x0.ptr(), padded->ptr(), N * C, H, W, th, tw, stream_));
      x = padded.get();
      ph = pw = 0;
    }
    auto out = make(Dims{N, O, Ho, Wo}, dtype);
    cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
    cudnnFilterDescriptor_t wd = nullptr;
    cudnnConvolutionDescriptor_t cd = nullptr;
    struct Guard {
      cudnnTensorDescriptor_t& xd;
      cudnnTensorDescriptor_t& yd;
      cudnnFilterDescriptor_t& wd;
      cudnnConvolutionDescriptor_t& cd;
      ~Guard() {
        if (xd) cudnnDestroyTensorDescriptor(xd);
        if (yd) cudnnDestroyTensorDescriptor(yd);
        if (wd) cudnnDestroyFilterDescriptor(wd);
        if (cd) cudnnDestroyConvolutionDescriptor(cd);
      }
    } guard{xd, yd, wd, cd};
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    TENSAT_CUDA_CHECK(cudnnCreateTensorDescriptor(&xd));
    TENSAT_CUDA_CHECK(cudnnCreateTensorDescriptor(&yd));
    TENSAT_CUDA_CHECK(cudnnCreateFilterDescriptor(&wd));
    TENSAT_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&cd));
    TENSAT_CUDA_CHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i32(N),
                                                 i32(C), i32(x->dims[2]), i32(x->dims[3])));
    TENSAT_CUDA_CHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i32(O),
                                                 i32(Cg), i32(kh), i32(kw)));
    TENSAT_CUDA_CHECK(cudnnSetConvolution2dDescriptor(cd, i32(ph), i32(pw), i32(sh), i32(sw), 1, 1,
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TENSAT_CUDA_CHECK(cudnnSetConvolutionGroupCount(cd, i32(C / Cg)));
    TENSAT_CUDA_CHECK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    TENSAT_CUDA_CHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i32(N),
                                                 i32(O), i32(Ho), i32(Wo)));
    ConvGeometry geometry;
    geometry.n = i32(N);
    geometry.c = i32(C);
    geometry.h = i32(x->dims[2]);
    geometry.w = i32(x->dims[3]);
    geometry.o = i32(O);
    geometry.cg = i32(Cg);
    geometry.kh = i32(kh);
    geometry.kw = i32(kw);
    geometry.pad_h = i32(ph);
    geometry.pad_w = i32(pw);
    geometry.stride_h = i32(sh);
    geometry.stride_w = i32(sw);
    TENSAT_CUDA_CHECK(cudaGetDevice(&geometry.device));
    const ConvAlgorithm chosen =
        conv_algorithm(geometry, xd, x->ptr(), wd, w.ptr(), cd, yd, out->ptr());
    if (chosen.gemm) {
      conv1x1_gemm(x->ptr(), w.ptr(), out->ptr(), i32(N), i32(C), i32(H * W), i32(O));
      activate(*out, act);
      return out;
    }
    void* ws = chosen.workspace_bytes ? workspace(chosen.workspace_bytes) : nullptr;
    const float one = 1.0f, zero_f = 0.0f;
    if (act == Activation::Relu &&
        chosen.relu_fusion >= 0) {  // the ReLU inside cuDNN's kernel, as TASO runs conv + relu
      cudnnTensorDescriptor_t bd = nullptr;
      struct BiasGuard {
        cudnnTensorDescriptor_t& d;
        ~BiasGuard() {
          if (d) cudnnDestroyTensorDescriptor(d);
        }
      } bias_guard{bd};
      TENSAT_CUDA_CHECK(cudnnCreateTensorDescriptor(&bd));
      TENSAT_CUDA_CHECK(
          cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i32(O), 1, 1));
      // y = relu(conv(x) + 0 * z + bias), z = y, bias = zeros. The output is zeroed first: cuDNN
      // does not promise to skip z when alpha2 is 0, and 0 * a stale Inf or NaN is NaN.
      zero(*out);
      const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
          cudnn_, &one, xd, x->ptr(), wd, w.ptr(), cd, chosen.algo, ws, chosen.workspace_bytes,
          &zero_f, yd, out->ptr(), bd, zeros(O), relu_descriptor(), yd, out->ptr());
      if (status == CUDNN_STATUS_SUCCESS) {
        if (chosen.relu_fusion == 0) set_relu_fusion(geometry, 1);
        return out;
      }
      // Refused (cuDNN fuses the activation with some algorithms only): the plain call below,
      // which reports any failure that is not a refusal.
      set_relu_fusion(geometry, -1);
    }
    TENSAT_CUDA_CHECK(cudnnConvolutionForward(cudnn_, &one, xd, x->ptr(), wd, w.ptr(), cd,
                                              chosen.algo, ws, chosen.workspace_bytes, &zero_f, yd,
                                              out->ptr()));
    activate(*out, act);
    return out;
  }

  /// `n` zeros on the device (a convolution's bias), kept for the executor's lifetime.
  const float* zeros(std::int64_t n) {
    if (!zeros_ || zeros_->elements() < n) {
      zeros_ = make(Dims{n}, DType::F32);
      zero(*zeros_);
    }
    return zeros_->ptr();
  }

  cudnnActivationDescriptor_t relu_descriptor() {
    if (!relu_) {
      TENSAT_CUDA_CHECK(cudnnCreateActivationDescriptor(&relu_));
      // NaN to 0, as the ReLU kernel's v > 0 ? v : 0 does.
      TENSAT_CUDA_CHECK(
          cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    }
    return relu_;
  }

  static void set_relu_fusion(const ConvGeometry& geometry, int value) {
    ConvAlgorithmCache& cache = conv_algorithm_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.chosen[geometry].relu_fusion = value;
  }

  std::shared_ptr<DeviceTensor> gather(const DeviceTensor& x, const Dims& out_dims,
                                       const std::vector<std::int64_t>& strides,
                                       std::int64_t offset, DType dtype) {
    if (out_dims.size() > static_cast<std::size_t>(k::kMaxRank))
      throw ExecutionError(
          fmt::format("execute_cuda: rank {} above {}", out_dims.size(), k::kMaxRank));
    auto out = make(out_dims, dtype);
    k::Strided s;
    s.rank = static_cast<int>(out_dims.size());
    for (std::size_t a = 0; a < out_dims.size(); ++a) {
      s.dims[a] = out_dims[a];
      s.strides[a] = strides[a];
    }
    s.offset = offset;
    TENSAT_CUDA_CHECK(k::gather(x.ptr(), out->ptr(), out->elements(), s, stream_));
    return out;
  }

  /// Places parts along `axis` of a zeroed `out`, starting at `first`.
  void place(const DeviceTensor& x, DeviceTensor& out, std::int64_t axis, std::int64_t at) {
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t a = 0; a < axis; ++a) outer *= x.dims[static_cast<std::size_t>(a)];
    for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < x.dims.size(); ++a)
      inner *= x.dims[a];
    const std::int64_t extent = x.dims[static_cast<std::size_t>(axis)];
    TENSAT_CUDA_CHECK(k::place(x.ptr(), out.ptr(), outer, extent, inner,
                               out.dims[static_cast<std::size_t>(axis)], at, stream_));
  }

  static void split_dims(const Dims& d, std::int64_t axis, std::int64_t& outer,
                         std::int64_t& extent, std::int64_t& inner) {
    outer = inner = 1;
    for (std::int64_t i = 0; i < axis; ++i) outer *= d[static_cast<std::size_t>(i)];
    extent = d[static_cast<std::size_t>(axis)];
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  }
  static std::vector<std::int64_t> strides_of(const Dims& d) {
    std::vector<std::int64_t> s(d.size(), 1);
    for (std::size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
    return s;
  }

  std::shared_ptr<DeviceTensor> slice(const DeviceTensor& x, std::int64_t axis, std::int64_t start,
                                      std::int64_t end, DType dtype) {
    Dims d = x.dims;
    d[static_cast<std::size_t>(axis)] = end - start;
    const auto s = strides_of(x.dims);
    return gather(x, d, s, start * s[static_cast<std::size_t>(axis)], dtype);
  }

  /// Copies a host-computed tensor (the weight transforms `enlarge` and `merge`) to the device.
  std::shared_ptr<DeviceTensor> from_host(const HostTensor& h, DType dtype) {
    auto t = make(h.dims, dtype);
    TENSAT_CUDA_CHECK(cudaMemcpyAsync(t->ptr(), h.data.data(), h.data.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, stream_));
    TENSAT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return t;
  }
  HostTensor to_host(const DeviceTensor& t) {
    HostTensor h(t.dims, t.dtype);
    TENSAT_CUDA_CHECK(cudaMemcpyAsync(h.data.data(), t.ptr(), h.data.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
    TENSAT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return h;
  }

  /// Node `i` computed on the host by the Eigen executor: its tensor operands copied there as
  /// the weights of a one-operator program, and the result copied back. The operators of the
  /// ONNX extension (ewsub, ewdiv, ewpow, sqrt, clip, resize, conv_transpose) have no CUDA
  /// kernels yet; the results are the reference executor's by construction.
  std::shared_ptr<DeviceTensor> on_host(std::size_t i) {
    RecExpr<TensorNode> one;
    Bindings bindings;
    std::unordered_map<std::size_t, Id> copied;  // attribute nodes of p_ already in `one`
    std::function<Id(Id)> copy_attribute = [&](Id c) {
      if (auto it = copied.find(c.index()); it != copied.end()) return it->second;
      TensorNode n = p_[c];
      for (Id& g : n.children()) g = copy_attribute(g);
      const Id id = one.add(n);
      copied.emplace(c.index(), id);
      return id;
    };
    TensorNode node = p_[Id(i)];
    std::size_t k = 0;
    for (Id& c : node.children()) {
      const TensorInfo& ci = infos_[c.index()];
      if (ci.kind != Kind::Tensor) {
        c = copy_attribute(c);
        continue;
      }
      const Value& v = values_[c.index()];
      if (!v.t)
        throw ExecutionError(fmt::format(
            "execute_cuda: node {} ({}) reads a freed or missing tensor", i, node.op_name()));
      const std::string name = fmt::format("__operand{}", k++);
      std::vector<Id> dims;
      for (std::int64_t d : ci.dims) dims.push_back(one.add(TensorNode::num(d)));
      const Id name_id = one.add(TensorNode::sym(name));
      const Id dtype_id = one.add(TensorNode::sym(dtype_name(ci.dtype)));
      const Id dims_id = one.add(TensorNode(Op::Ints, Span<const Id>(dims.data(), dims.size())));
      c = one.add(TensorNode(Op::Weight, {name_id, dtype_id, dims_id}));
      bindings.emplace(name, to_host(*v.t));
    }
    one.add(node);
    return from_host(execute(one, bindings).at(0), infos_[i].dtype);
  }

  Value eval(std::size_t i, const std::vector<std::shared_ptr<DeviceTensor>>* args) {
    const TensorNode& node = p_[Id(i)];
    const auto ch = node.children();
    const TensorInfo& info = infos_[i];
    auto val = [&](std::size_t k) -> const Value& { return values_[ch[k].index()]; };
    auto num = [&](std::size_t k) { return val(k).value; };
    auto ten = [&](std::size_t k) -> const DeviceTensor& {
      const Value& v = val(k);
      if (!v.t)
        throw ExecutionError(fmt::format(
            "execute_cuda: node {} ({}) reads a freed or missing tensor", i, node.op_name()));
      return *v.t;
    };
    Value out;
    auto result = [&](std::shared_ptr<DeviceTensor> t) {
      t->dtype = info.dtype;
      if (info.dtype != DType::F32)
        TENSAT_CUDA_CHECK(
            k::round_to(t->ptr(), t->elements(), info.dtype == DType::BF16 ? 1 : 2, stream_));
      out.t = std::move(t);
      return out;
    };
    switch (node.op()) {
      case Op::Num:
        out.value = node.value();
        return out;
      case Op::Sym:
        out.name = std::string(node.symbol().str());
        return out;
      case Op::Ints:
        for (std::size_t k = 0; k < ch.size(); ++k) out.ints.push_back(num(k));
        return out;
      case Op::Input:
      case Op::Weight: {
        const std::string name =
            p_[ch[0]].op() == Op::Num ? std::to_string(val(0).value) : val(0).name;
        out.t = upload(name, info);
        return out;
      }
      case Op::Scalar: {
        HostTensor h(Dims{1});
        h.data[0] = TensorNode::scalar_of_atom(p_[ch[0]]).value_or(0.0f);
        return result(from_host(h, info.dtype));
      }
      case Op::Arg: {
        const auto k = static_cast<std::size_t>(num(0));
        if (!args || k >= args->size())
          throw ExecutionError(fmt::format("execute_cuda: arg {} outside a fused kernel", k));
        out.t = (*args)[k];
        return out;
      }
      case Op::EwAdd:
      case Op::EwMul: {
        auto y = make(info.dims, info.dtype);
        TENSAT_CUDA_CHECK(k::binary(ten(0).ptr(), ten(1).ptr(), y->ptr(), y->elements(),
                                    node.op() == Op::EwMul, stream_));
        return result(std::move(y));
      }
      case Op::SMul: {
        auto y = make(info.dims, info.dtype);
        TENSAT_CUDA_CHECK(k::scale(ten(0).ptr(), ten(1).ptr(), y->ptr(), y->elements(), stream_));
        return result(std::move(y));
      }
      case Op::Relu:
      case Op::Tanh:
      case Op::Sigmoid:
      case Op::Gelu:
      case Op::GeluErf:
      case Op::Silu:
      case Op::HardSwish:
      case Op::Exp:
      case Op::Erf: {
        auto y = make(info.dims, info.dtype);
        const k::Unary op = node.op() == Op::Relu        ? k::Unary::Relu
                            : node.op() == Op::Tanh      ? k::Unary::Tanh
                            : node.op() == Op::Sigmoid   ? k::Unary::Sigmoid
                            : node.op() == Op::Gelu      ? k::Unary::Gelu
                            : node.op() == Op::Erf       ? k::Unary::Erf
                            : node.op() == Op::GeluErf   ? k::Unary::GeluErf
                            : node.op() == Op::Silu      ? k::Unary::Silu
                            : node.op() == Op::HardSwish ? k::Unary::HardSwish
                                                         : k::Unary::Exp;
        unary(ten(0), *y, op);
        return result(std::move(y));
      }
      case Op::MatMul:
        return result(matmul(ten(1), ten(2), activation_of(num(0)), info.dtype));
      case Op::Conv2d:
        return result(
            conv2d(ten(4), ten(5), num(0), num(1), num(2), activation_of(num(3)), info.dtype));
      case Op::PoolMax:
      case Op::PoolAvg: {
        const DeviceTensor& x = ten(6);
        const std::int64_t kh = num(0), kw = num(1), sh = num(2), sw = num(3), pad = num(4);
        const std::int64_t H = x.dims[2], W = x.dims[3], Ho = info.dims[2], Wo = info.dims[3];
        k::PoolShape s{x.dims[0] * x.dims[1],
                       H,
                       W,
                       Ho,
                       Wo,
                       kh,
                       kw,
                       sh,
                       sw,
                       pad == 0 ? std::max<std::int64_t>((Ho - 1) * sh + kh - H, 0) / 2 : 0,
                       pad == 0 ? std::max<std::int64_t>((Wo - 1) * sw + kw - W, 0) / 2 : 0};
        auto y = make(info.dims, info.dtype);
        TENSAT_CUDA_CHECK(k::pool(x.ptr(), y->ptr(), s, node.op() == Op::PoolMax, stream_));
        activate(*y, activation_of(num(5)));
        return result(std::move(y));
      }
      case Op::Concat: {
        auto y = make(info.dims, info.dtype);
        std::int64_t at = 0;
        for (std::size_t k = 1; k < ch.size(); ++k) {
          place(ten(k), *y, num(0), at);
          at += ten(k).dims[static_cast<std::size_t>(num(0))];
        }
        return result(std::move(y));
      }
      case Op::Split: {
        const DeviceTensor& x = ten(2);
        const std::int64_t axis = num(0), size = num(1);
        out.t = slice(x, axis, 0, size, info.dtype);
        out.t2 = slice(x, axis, size, x.dims[static_cast<std::size_t>(axis)], info.dtype);
        return out;
      }
      case Op::Split0:
      case Op::Split1: {
        const auto& src = node.op() == Op::Split0 ? val(0).t : val(0).t2;
        if (!src) throw ExecutionError(fmt::format("execute_cuda: node {} reads a freed split", i));
        out.t = src;
        return out;
      }
      case Op::Transpose: {
        const DeviceTensor& x = ten(1);
        const auto in = strides_of(x.dims);
        std::vector<std::int64_t> s;
        for (std::int64_t a : val(0).ints) s.push_back(in[static_cast<std::size_t>(a)]);
        return result(gather(x, info.dims, s, 0, info.dtype));
      }
      case Op::Reshape: {
        auto y = std::make_shared<DeviceTensor>(ten(1));  // the same buffer, new dims
        y->dims = info.dims;
        return result(std::move(y));
      }
      case Op::Broadcast: {
        const DeviceTensor& x = ten(1);
        const auto in = strides_of(x.dims);
        std::vector<std::int64_t> s(info.dims.size(), 0);
        const std::size_t offset = info.dims.size() - x.dims.size();
        for (std::size_t a = 0; a < x.dims.size(); ++a) s[offset + a] = x.dims[a] == 1 ? 0 : in[a];
        return result(gather(x, info.dims, s, 0, info.dtype));
      }
      case Op::BatchNorm: {
        const DeviceTensor& x = ten(0);
        std::int64_t outer, extent, inner;
        split_dims(x.dims, 1, outer, extent, inner);
        auto y = make(info.dims, info.dtype);
        TENSAT_CUDA_CHECK(k::batchnorm(x.ptr(), ten(1).ptr(), ten(2).ptr(), ten(3).ptr(),
                                       ten(4).ptr(), y->ptr(), extent, inner, y->elements(),
                                       kNormEps, stream_));
        return result(std::move(y));
      }
      case Op::LayerNorm: {
        const DeviceTensor& x = ten(0);
        const std::int64_t n = x.dims.back(), rows = n ? x.elements() / n : 0;
        auto y = make(info.dims, info.dtype);
        const float eps = ch.size() == 4 ? to_host(ten(3)).data.at(0) : kNormEps;
        TENSAT_CUDA_CHECK(
            k::layernorm(x.ptr(), ten(1).ptr(), ten(2).ptr(), y->ptr(), rows, n, eps, stream_));
        return result(std::move(y));
      }
      case Op::Softmax: {
        const DeviceTensor& x = ten(1);
        std::int64_t outer, extent, inner;
        split_dims(x.dims, num(0), outer, extent, inner);
        auto y = make(info.dims, info.dtype);
        TENSAT_CUDA_CHECK(k::softmax(x.ptr(), y->ptr(), outer, extent, inner, stream_));
        return result(std::move(y));
      }
      case Op::ReduceSum:
      case Op::ReduceMax:
      case Op::ReduceMean: {
        const DeviceTensor& x = ten(1);
        std::int64_t outer, extent, inner;
        split_dims(x.dims, num(0), outer, extent, inner);
        auto y = make(info.dims, info.dtype);
        const k::Reduce op = node.op() == Op::ReduceSum   ? k::Reduce::Sum
                             : node.op() == Op::ReduceMax ? k::Reduce::Max
                                                          : k::Reduce::Mean;
        TENSAT_CUDA_CHECK(k::reduce(x.ptr(), y->ptr(), outer, extent, inner, op, stream_));
        return result(std::move(y));
      }
      case Op::Slice:
        return result(slice(ten(3), num(0), num(1), num(2), info.dtype));
      case Op::Pad: {
        auto y = make(info.dims, info.dtype);
        zero(*y);
        place(ten(3), *y, num(0), num(1));
        return result(std::move(y));
      }
      case Op::EwSub:
      case Op::EwDiv:
      case Op::EwPow:
      case Op::Sqrt:
      case Op::Clip:
      case Op::Resize:
      case Op::ConvTranspose:
        return result(on_host(i));
      case Op::Opaque:
        throw OpaqueOpError(i, val(0).name);
      // Device tensors stay in their logical order, as the Eigen executor's (executor.h).
      case Op::Relayout:
        out.t = val(1).t;
        return out;
      case Op::Enlarge:
        return result(from_host(detail::enlarge(to_host(ten(0)), ten(1).dims), info.dtype));
      case Op::Merge:
        return result(from_host(detail::merge(to_host(ten(2)), num(0), num(1)), info.dtype));
      // Weight transforms are computed on the host (precomputed before timing). wino_conv2d runs
      // on the host too: optimize offers it only for profiles whose convolutions run directly
      // (DeviceProfile::winograd), never the GPU's, where cuDNN picks Winograd inside conv2d.
      case Op::WinoWeight:
        return result(from_host(detail::wino_weight(to_host(ten(0))), info.dtype));
      case Op::WinoConv2d:
        return result(on_host(i));
      case Op::Noop:
        for (std::size_t k = 0; k < ch.size(); ++k) {
          const Value& v = val(k);
          if (v.t)
            out.outs.push_back(v.t);
          else
            out.outs.insert(out.outs.end(), v.outs.begin(), v.outs.end());
        }
        return out;
      case Op::Fused: {
        std::vector<std::shared_ptr<DeviceTensor>> inputs;
        for (std::size_t k = 1; k < ch.size(); ++k) {
          if (!val(k).t)
            throw ExecutionError(
                fmt::format("execute_cuda: fused node {} reads a freed tensor", i));
          inputs.push_back(val(k).t);
        }
        return result(eval_body(ch[0].index(), inputs));
      }
    }
    throw ExecutionError(fmt::format("execute_cuda: unknown operator at node {}", i));
  }

  /// A fused node's value: its body's elementwise region (the elementwise terms and reshapes
  /// reachable from the root through elementwise terms) as one kernel over the region's leaves
  /// (`fused_elementwise`). The leaves are the body's args and whatever terms lie below the
  /// region (a contraction, a reduction, an injective term), which are evaluated op by op first,
  /// so `fused(relu(ewadd(conv2d(..), arg 1)))` is cuDNN's convolution and one kernel. A body
  /// whose root is not elementwise, or whose region is too large for `FusedCode`, runs op by op.
  std::shared_ptr<DeviceTensor> eval_body(
      std::size_t body, const std::vector<std::shared_ptr<DeviceTensor>>& inputs) {
    const std::int64_t n = infos_[body].elements();
    ElementwiseRegion region{k::FusedCode{}, {}, 0, 0};
    if (is_elementwise(p_[Id(body)].op()) && compile_region(body, n, inputs, region)) {
      for (std::size_t l = 0; l < region.leaves.size(); ++l)
        region.code.leaves[l] = region.leaves[l]->ptr();
      auto y = make(infos_[body].dims, infos_[body].dtype);
      TENSAT_CUDA_CHECK(k::fused_elementwise(region.code, y->ptr(), n, stream_));
      return y;  // region.leaves released after the launch: the stream orders their reuse
    }
    auto r = eval_term(body, inputs);
    // A body whose root is an arg (or a reshape of one) would alias an input: copy it.
    auto copy = make(r->dims, r->dtype);
    TENSAT_CUDA_CHECK(cudaMemcpyAsync(copy->ptr(), r->ptr(),
                                      static_cast<std::size_t>(r->elements()) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream_));
    return copy;
  }

  /// The value of body term `term`, its symbolic nodes evaluated op by op with args bound to
  /// `inputs`.
  std::shared_ptr<DeviceTensor> eval_term(
      std::size_t term, const std::vector<std::shared_ptr<DeviceTensor>>& inputs) {
    if (!infos_[term].symbolic) {  // a tensor from outside the body, kept alive by run() for it
      if (!values_[term].t)
        throw ExecutionError(fmt::format("execute_cuda: a fused body reads freed node {}", term));
      return values_[term].t;
    }
    std::vector<bool> needed(term + 1, false);
    needed[term] = true;
    for (std::size_t j = term + 1; j-- > 0;)
      if (needed[j])
        for (Id c : p_[Id(j)].children())
          if (infos_[c.index()].symbolic) needed[c.index()] = true;
    std::vector<std::size_t> order;
    for (std::size_t j = 0; j <= term; ++j)
      if (needed[j]) order.push_back(j);
    std::vector<Value> saved;
    for (std::size_t j : order) saved.push_back(std::move(values_[j]));
    for (std::size_t j : order) values_[j] = eval(j, &inputs);
    auto r = values_[term].t;
    for (std::size_t k = 0; k < order.size(); ++k) values_[order[k]] = std::move(saved[k]);
    return r;
  }

  struct ElementwiseRegion {
    k::FusedCode code;
    std::vector<std::shared_ptr<DeviceTensor>> leaves;  // kept alive until the launch
    int depth = 0, max_depth = 0;                       // the evaluation stack, as emitted so far
  };

  bool emit(ElementwiseRegion& r, k::FusedOp op, int pops, int pushes, std::size_t leaf = 0) {
    if (r.code.length == k::FusedCode::kMaxCode) return false;
    r.depth += pushes - pops;
    r.max_depth = std::max(r.max_depth, r.depth);
    if (r.max_depth > k::FusedCode::kMaxStack) return false;
    r.code.op[r.code.length] = op;
    r.code.leaf[r.code.length] = static_cast<unsigned char>(leaf);
    ++r.code.length;
    return true;
  }

  /// Emits a load of `t`, of `n` elements or, for a scalar operand, 1.
  bool emit_leaf(ElementwiseRegion& r, std::shared_ptr<DeviceTensor> t, std::int64_t n,
                 bool scalar) {
    if (!t || t->elements() != (scalar ? 1 : n)) return false;
    std::size_t l = 0;
    while (l < r.leaves.size() && r.leaves[l]->ptr() != t->ptr()) ++l;
    if (l == r.leaves.size()) {
      if (l == static_cast<std::size_t>(k::FusedCode::kMaxLeaves)) return false;
      r.leaves.push_back(std::move(t));
    }
    return emit(r, scalar ? k::FusedOp::LoadScalar : k::FusedOp::Load, 0, 1, l);
  }

  /// Emits term `j` of the region (n elements) in postfix order; false: it does not fit.
  bool compile_region(std::size_t j, std::int64_t n,
                      const std::vector<std::shared_ptr<DeviceTensor>>& inputs,
                      ElementwiseRegion& r) {
    const TensorNode& node = p_[Id(j)];
    const auto ch = node.children();
    const auto operand = [&](std::size_t k) { return compile_region(ch[k].index(), n, inputs, r); };
    const auto scalar = [&](std::size_t k) {
      return emit_leaf(r, eval_term(ch[k].index(), inputs), n, true);
    };
    // A tensor computed outside the body is a leaf, never recomputed (its operands may be freed).
    if (!infos_[j].symbolic) return emit_leaf(r, eval_term(j, inputs), n, false);
    if (node.op() == Op::Reshape) return operand(1);  // the same elements in the same order
    if (node.op() == Op::Arg) {
      const auto k = static_cast<std::size_t>(p_[ch[0]].value());
      return k < inputs.size() && emit_leaf(r, inputs[k], n, false);
    }
    if (!is_elementwise(node.op()) || infos_[j].elements() != n)
      return emit_leaf(r, eval_term(j, inputs), n, false);
    bool ok = false;
    switch (node.op()) {
      case Op::EwAdd:
        ok = operand(0) && operand(1) && emit(r, k::FusedOp::Add, 2, 1);
        break;
      case Op::EwMul:
        ok = operand(0) && operand(1) && emit(r, k::FusedOp::Mul, 2, 1);
        break;
      case Op::EwSub:
        ok = operand(0) && operand(1) && emit(r, k::FusedOp::Sub, 2, 1);
        break;
      case Op::EwDiv:
        ok = operand(0) && operand(1) && emit(r, k::FusedOp::Div, 2, 1);
        break;
      case Op::EwPow:
        ok = operand(0) && operand(1) && emit(r, k::FusedOp::Pow, 2, 1);
        break;
      case Op::SMul:
        ok = operand(0) && scalar(1) && emit(r, k::FusedOp::Mul, 2, 1);
        break;
      case Op::Clip:
        ok = operand(0) && scalar(1) && scalar(2) && emit(r, k::FusedOp::Clip, 3, 1);
        break;
      case Op::Relu:
        ok = operand(0) && emit(r, k::FusedOp::Relu, 1, 1);
        break;
      case Op::Tanh:
        ok = operand(0) && emit(r, k::FusedOp::Tanh, 1, 1);
        break;
      case Op::Sigmoid:
        ok = operand(0) && emit(r, k::FusedOp::Sigmoid, 1, 1);
        break;
      case Op::Gelu:
        ok = operand(0) && emit(r, k::FusedOp::Gelu, 1, 1);
        break;
      case Op::Exp:
        ok = operand(0) && emit(r, k::FusedOp::Exp, 1, 1);
        break;
      case Op::Sqrt:
        ok = operand(0) && emit(r, k::FusedOp::Sqrt, 1, 1);
        break;
      case Op::Erf:
        ok = operand(0) && emit(r, k::FusedOp::Erf, 1, 1);
        break;
      case Op::GeluErf:
        ok = operand(0) && emit(r, k::FusedOp::GeluErf, 1, 1);
        break;
      case Op::Silu:
        ok = operand(0) && emit(r, k::FusedOp::Silu, 1, 1);
        break;
      case Op::HardSwish:
        ok = operand(0) && emit(r, k::FusedOp::HardSwish, 1, 1);
        break;
      default:
        return false;
    }
    if (ok && infos_[j].dtype == DType::BF16) ok = emit(r, k::FusedOp::RoundBf16, 1, 1);
    if (ok && infos_[j].dtype == DType::F16) ok = emit(r, k::FusedOp::RoundF16, 1, 1);
    return ok;
  }

  const RecExpr<TensorNode>& p_;
  const Bindings& bindings_;
  std::vector<TensorInfo> infos_;
  Pool pool_;  // declared before the tensors that return their buffers to it
  std::unordered_map<std::string, std::shared_ptr<DeviceTensor>> uploaded_;
  std::vector<Value> values_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::shared_ptr<DeviceTensor> zeros_;  // a convolution's zero bias (conv2d with a fused ReLU)
  cudnnActivationDescriptor_t relu_ = nullptr;
};

}  // namespace cuda_internal

bool cuda_device_available(std::string* reason) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (reason) *reason = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(e));
    return false;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device is visible";
    return false;
  }
  return true;
}

std::vector<HostTensor> execute_cuda(const RecExpr<TensorNode>& program, const Bindings& inputs) {
  cuda_internal::Executor ex(program, inputs);
  ex.run();
  return ex.outputs();
}

namespace cuda_internal {

/// Times runs of one executor as `CudaTiming` says. The constructor warms the executor up (uploads
/// the bindings, fills the buffer pool, picks cuDNN algorithms); `launch` then launches one timed
/// run, with `CudaTiming::queued` behind a spin kernel long enough for the host to queue all of it.
class RunTimer {
 public:
  RunTimer(Executor& ex, CudaTiming timing) : ex_(ex), timing_(timing) {
    ex_.run();
    TENSAT_CUDA_CHECK(cudaStreamSynchronize(ex_.stream()));
    if (timing_ == CudaTiming::queued) {
      // The host's time to launch one run with nothing left to set up: the spin's first guess.
      const auto start = std::chrono::steady_clock::now();
      ex_.run();
      host_ns_ = nanoseconds_since(start);
      TENSAT_CUDA_CHECK(cudaStreamSynchronize(ex_.stream()));
    }
  }

  /// Launches one run through `launch_run` (which records its events), `first` being the first
  /// event the run records. Queued: the run counts only if `first` is still pending once the host
  /// has launched everything (the GPU was still spinning); otherwise it is run again behind twice
  /// the spin, up to 200 ms.
  template <class LaunchRun>
  void launch(cudaEvent_t first, LaunchRun&& launch_run) {
    if (timing_ != CudaTiming::queued) {
      launch_run();
      return;
    }
    constexpr std::uint64_t max_spin_ns = 200'000'000;
    for (std::uint64_t spin_ns = std::min(max_spin_ns, 2 * host_ns_ + 1'000'000);;
         spin_ns = std::min(max_spin_ns, 2 * spin_ns)) {
      TENSAT_CUDA_CHECK(k::spin(spin_ns, ex_.stream()));
      const auto start = std::chrono::steady_clock::now();
      launch_run();
      host_ns_ = std::max(host_ns_, nanoseconds_since(start));
      const cudaError_t state = cudaEventQuery(first);
      if (state == cudaErrorNotReady) return;
      TENSAT_CUDA_CHECK(state);
      TENSAT_CUDA_CHECK(cudaStreamSynchronize(ex_.stream()));
      if (spin_ns >= max_spin_ns)
        throw ExecutionError(fmt::format(
            "CudaTiming::queued: the host took {:.1f} ms to launch a run, and the GPU started it "
            "before the host was done even behind {} ms of spin (the stream's launch queue fills "
            "up)",
            static_cast<double>(host_ns_) * 1e-6, max_spin_ns / 1'000'000));
    }
  }

 private:
  static std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
  }

  Executor& ex_;
  CudaTiming timing_;
  std::uint64_t host_ns_ = 0;
};

/// One run of an executor captured into a CUDA graph. The graph's kernels read and write the
/// buffers the captured run took from the executor's pool; nothing else runs on that executor
/// between the replays, so they stay the run's own.
struct CapturedRun {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedRun() = default;
  CapturedRun(const CapturedRun&) = delete;
  CapturedRun& operator=(const CapturedRun&) = delete;
  ~CapturedRun() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  void capture(Executor& ex) {
    // Relaxed: the libraries may allocate while capturing; a synchronizing call on the captured
    // stream still fails the capture.
    TENSAT_CUDA_CHECK(cudaStreamBeginCapture(ex.stream(), cudaStreamCaptureModeRelaxed));
    try {
      ex.run();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(ex.stream(), &partial);  // ends the capture the failure left open
      if (partial) cudaGraphDestroy(partial);
      throw;
    }
    TENSAT_CUDA_CHECK(cudaStreamEndCapture(ex.stream(), &graph));
    TENSAT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  }
};

}  // namespace cuda_internal

double measure_cuda_ms(const RecExpr<TensorNode>& program, const Bindings& inputs, std::size_t runs,
                       CudaTiming timing) {
  if (runs == 0) throw ExecutionError("measure_cuda_ms: runs must be positive");
  cuda_internal::Executor ex(program, inputs);
  cuda_internal::RunTimer timer(ex, timing);
  const cuda_internal::EventPair events;
  cuda_internal::CapturedRun captured;
  if (timing == CudaTiming::graph) captured.capture(ex);
  std::vector<double> ms;
  for (std::size_t r = 0; r < runs; ++r) {
    timer.launch(events.start, [&] {
      TENSAT_CUDA_CHECK(cudaEventRecord(events.start, ex.stream()));
      if (timing == CudaTiming::graph)
        TENSAT_CUDA_CHECK(cudaGraphLaunch(captured.exec, ex.stream()));
      else
        ex.run();
      TENSAT_CUDA_CHECK(cudaEventRecord(events.stop, ex.stream()));
    });
    ms.push_back(events.elapsed_ms());
  }
  std::sort(ms.begin(), ms.end());
  return detail::quantile(ms, 0.5);
}

ProgramProfile profile_cuda(const RecExpr<TensorNode>& program, const Bindings& inputs,
                            std::size_t runs, CudaTiming timing) {
  if (runs == 0) throw ExecutionError("profile_cuda: runs must be positive");
  if (timing == CudaTiming::graph)
    throw ExecutionError(
        "profile_cuda: CudaTiming::graph times whole runs only (CudaTiming::queued times nodes)");
  cuda_internal::Executor ex(program, inputs);
  cuda_internal::RunTimer timer(ex, timing);
  const std::size_t n = program.size();
  std::vector<cudaEvent_t> marks(n + 1, nullptr);
  struct Events {
    std::vector<cudaEvent_t>& e;
    ~Events() {
      for (cudaEvent_t x : e)
        if (x) cudaEventDestroy(x);
    }
  } guard{marks};
  for (cudaEvent_t& e : marks) TENSAT_CUDA_CHECK(cudaEventCreate(&e));
  const std::vector<TensorInfo>& infos = ex.infos();
  std::size_t first = 0;  // the first node run records a mark for
  while (first < n && infos[first].symbolic) ++first;
  std::vector<std::vector<double>> node_ms(n);
  std::vector<double> totals;
  for (std::size_t r = 0; r < runs; ++r) {
    timer.launch(marks[first], [&] { ex.run(&marks); });
    TENSAT_CUDA_CHECK(cudaEventSynchronize(marks[n]));
    for (std::size_t i = first; i < n; ++i) {
      if (infos[i].symbolic) continue;
      std::size_t next = i + 1;
      while (next < n && infos[next].symbolic) ++next;
      float t = 0;
      TENSAT_CUDA_CHECK(cudaEventElapsedTime(&t, marks[i], marks[next]));
      node_ms[i].push_back(t);
    }
    float total = 0;
    TENSAT_CUDA_CHECK(cudaEventElapsedTime(&total, marks[first], marks[n]));
    totals.push_back(total);
  }
  return detail::summarize_profile(program, node_ms, totals);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat
