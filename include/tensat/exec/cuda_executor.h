// A CUDA executor of the tensor dialect: the same semantics as executor.h's Eigen executor, run
// on an NVIDIA GPU with cuBLAS (matmul) and cuDNN (conv2d) and small CUDA kernels for the other
// operators. Compiled separately: link `tensat::cuda` (built when CMake finds CUDA and cuDNN,
// option TENSAT_WITH_CUDA); this header only declares.
#ifndef TENSAT_EXEC_CUDA_EXECUTOR_H
#define TENSAT_EXEC_CUDA_EXECUTOR_H

#include <cstddef>
#include <string>
#include <vector>

#include "tensat/core/recexpr.h"
#include "tensat/cost/device_profile.h"
#include "tensat/cost/profiles.h"
#include "tensat/exec/calibrate_device.h"
#include "tensat/exec/executor.h"
#include "tensat/tensor/node.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Whether a CUDA device can be used. When not, `reason` (if given) says why: no device visible,
/// a driver error, or a build without CUDA (then the library `tensat::cuda` is not linked and
/// these functions do not exist: guard with `#ifdef TENSAT_HAS_CUDA`).
[[nodiscard]] bool cuda_device_available(std::string* reason = nullptr);

/// Evaluates `program` on the GPU, as `execute` does on the CPU: bindings uploaded, every node
/// once in order, tensors freed after their last reader, the root's value (or a root `noop`'s
/// children) copied back. f32 arithmetic (cuBLAS and cuDNN without TF32); f16/bf16 values are
/// rounded to their type after every node, as on the CPU. `fused` nodes run their body op by op.
/// Throws `ExecutionError` (a CUDA, cuBLAS or cuDNN failure names the call), and the CPU
/// executor's `MissingBindingError`, `BindingShapeError`, `ShapeError`.
[[nodiscard]] std::vector<HostTensor> execute_cuda(const RecExpr<TensorNode>& program,
                                                   const Bindings& inputs);

/// What the CUDA events of `measure_cuda_ms` and `profile_cuda` time.
enum class CudaTiming {
  /// The run as the host launches it: the GPU's work and every gap in which it waits for the
  /// host to launch the next kernel or library call (what running the program this way costs).
  launched,
  /// The GPU's work alone: the whole run is launched behind a spin kernel that holds the stream
  /// until the host has queued all of it, so the kernels run back to back (what the roofline
  /// model predicts). Where the host cannot queue a run within 200 ms of spin (a program of more
  /// launches than the stream's launch queue holds), throws `ExecutionError`.
  queued,
  /// `measure_cuda_ms` only: the run captured once into a CUDA graph (stream capture), then each
  /// timed run one launch of that graph: the GPU's work with the graph's own small per-kernel
  /// gaps, for programs of any length. Throws `ExecutionError` where a call of the run cannot be
  /// captured (the host-computed weight transforms, `enlarge` and `merge`, synchronize: precompute
  /// them first).
  graph,
};

/// The median of `runs` timed executions (CUDA events around each run, after one untimed
/// warm-up) of `program` with its bindings resident on the GPU, in milliseconds, as `timing`
/// says. Precompute weight-only subgraphs first (`precompute_weights`) to time what TASO times.
[[nodiscard]] double measure_cuda_ms(const RecExpr<TensorNode>& program, const Bindings& inputs,
                                     std::size_t runs, CudaTiming timing = CudaTiming::launched);

/// Where a program's time goes on the GPU, node by node: one untimed warm-up run, then `runs`
/// runs with a CUDA event recorded on the stream before each node's launches and one after the
/// last node. A node's time is from its event to the next node's: its kernels and library calls,
/// and with `CudaTiming::launched` any time the GPU waited for the host to launch them
/// (`CudaTiming::queued`: the GPU's work alone). Per node the median and minimum over the runs;
/// `median_ms`/`min_ms` from the first node's event to the last event. The same
/// `ProgramProfile` as the CPU's `profile_program` (`format_profile` prints it). Throws
/// `ExecutionError` when `runs` is 0 or `timing` is `CudaTiming::graph`, and whatever
/// `execute_cuda` and `measure_cuda_ms` throw.
[[nodiscard]] ProgramProfile profile_cuda(const RecExpr<TensorNode>& program,
                                          const Bindings& inputs, std::size_t runs,
                                          CudaTiming timing = CudaTiming::launched);

/// What `measure_cuda_device` times: each kernel the difference between a chain of `2·chain`
/// equal kernels and one of `chain`, over `chain`, each chain timed as `measure_cuda_ms` with
/// `CudaTiming::graph` (the GPU's work, no host gaps) over `runs` runs.
struct CudaCalibrationOptions {
  std::size_t chain = 8;
  std::size_t runs = 10;
  /// Whether to time `device_uncertainty_probes` too (the profile then knows its error).
  bool probes = true;
  /// The datasheet profile the probes' fit starts from (its name, peaks and weights; the
  /// probes' programs are built on the kernels' fit over it). `calibrate_cuda` sets it.
  DeviceProfile base = find_profile("h200-sxm");
};

/// Times the kernels `device_profile_from` fits a profile to (calibrate_device.h), f32, batch 1:
/// a relu over 256 floats (the fixed cost of a kernel), an ewadd of 2^24 floats (bandwidth),
/// products [M, K] x [K, K] for (M, K) = (16, 512), (64, 1024), (1024, 1024), (2048, 2048) and 1x1
/// convolutions of C channels on C x S x S for (C, S) = (1024, 14), (256, 56) (the products'
/// curve), one-group SAME 3x3 convolutions for (C, S) = (32, 56), (64, 56), (128, 56),
/// (128, 28), (256, 28), (256, 14), (512, 14), (512, 7) (the convolutions' curve), a depthwise
/// 3x3 convolution of 128 channels on 56 x 56, a grouped one of 256 channels on 28 x 28 in
/// groups of 8, and matrix-vector products [1, K] x [K, N] for (K, N) = (512, 512),
/// (1024, 1024), (1024, 4096), (2048, 2048), (1024, 16384), (4096, 4096). Distinct weights per
/// kernel of a chain, as a model's layers have. With `options.probes`, then every probe of
/// `device_uncertainty_probes` on the kernels' fit over `options.base`, a whole program each
/// (weights precomputed). Seconds to a minute on a GPU. Throws what `measure_cuda_ms` throws.
[[nodiscard]] DeviceMeasurements measure_cuda_device(const CudaCalibrationOptions& options = {});

/// `device_profile_from(base, measure_cuda_device(options))`: a profile of this GPU as the CUDA
/// executor runs it, over the datasheet profile `base` (e.g. `find_profile("h200")`).
[[nodiscard]] DeviceProfile calibrate_cuda(const DeviceProfile& base,
                                           const CudaCalibrationOptions& options = {});

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_CUDA_EXECUTOR_H
