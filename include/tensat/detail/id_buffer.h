// Private: scratch space for ids and other trivial values, on the stack when small.
#ifndef TENSAT_DETAIL_ID_BUFFER_H
#define TENSAT_DETAIL_ID_BUFFER_H

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include "tensat/core/id.h"

namespace tensat {
inline namespace v0 {
namespace detail {

/// `size` uninitialized values of a trivial type `T`: inline storage when `size <= N`, else a
/// heap array. Unlike a `T[N]` whose type has default member initializers (as `Id` has), which
/// makes every construction zero the whole array, nothing is written until the caller writes it
/// (hot paths: one buffer per match).
template <class T, std::size_t N>
class ScratchBuffer {
  static_assert(std::is_trivially_destructible_v<T>, "ScratchBuffer holds trivial values");

 public:
  explicit ScratchBuffer(std::size_t size) {
    if (size > N) heap_.reset(new T[size]);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  [[nodiscard]] T* data() noexcept {
    return heap_ ? heap_.get() : std::launder(reinterpret_cast<T*>(inline_));
  }

 private:
  alignas(T) unsigned char inline_[N * sizeof(T)];
  std::unique_ptr<T[]> heap_;
};

/// `size` uninitialized ids.
template <std::size_t N>
using IdBuffer = ScratchBuffer<Id, N>;

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_ID_BUFFER_H
