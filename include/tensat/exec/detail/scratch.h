// Per-thread staging buffers of the Eigen executor's kernels (im2col blocks, Winograd tiles),
// kept from call to call: allocated anew on every call, their pages would be faulted in (and
// zeroed by the kernel) again each time, a cost that depends on the allocator's state and that
// no runtime with an arena, as onnxruntime's, pays.
#ifndef TENSAT_EXEC_DETAIL_SCRATCH_H
#define TENSAT_EXEC_DETAIL_SCRATCH_H

#include <array>
#include <cstddef>
#include <vector>

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// The kernels' staging buffers: one slot per buffer a kernel holds at once.
enum class ScratchSlot : std::size_t { Columns, WinoInput, WinoOutput, Count };

/// At least `n` floats of this thread's buffer `slot`, whose contents are whatever the last user
/// left: the caller writes every element it reads. Valid until the next call for the same slot
/// on this thread; it grows to the largest request and stays that size until the thread ends.
[[nodiscard]] inline float* scratch(ScratchSlot slot, std::size_t n) {
  thread_local std::array<std::vector<float>, static_cast<std::size_t>(ScratchSlot::Count)> buffers;
  std::vector<float>& b = buffers[static_cast<std::size_t>(slot)];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_SCRATCH_H
