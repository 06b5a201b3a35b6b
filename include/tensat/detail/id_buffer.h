// Private: scratch space for ids, on the stack when small.
#ifndef TENSAT_DETAIL_ID_BUFFER_H
#define TENSAT_DETAIL_ID_BUFFER_H

#include <cstddef>
#include <memory>
#include <new>

#include "tensat/core/id.h"

namespace tensat {
inline namespace v0 {
namespace detail {

/// `size` uninitialized ids: inline storage when `size <= N`, else a heap array. Unlike an
/// `Id[N]`, whose default member initializer makes every construction zero the whole array,
/// nothing is written until the caller writes it (hot paths: one buffer per match).
template <std::size_t N>
class IdBuffer {
 public:
  explicit IdBuffer(std::size_t size) {
    if (size > N) heap_.reset(new Id[size]);
  }
  IdBuffer(const IdBuffer&) = delete;
  IdBuffer& operator=(const IdBuffer&) = delete;

  [[nodiscard]] Id* data() noexcept {
    return heap_ ? heap_.get() : std::launder(reinterpret_cast<Id*>(inline_));
  }

 private:
  alignas(Id) unsigned char inline_[N * sizeof(Id)];
  std::unique_ptr<Id[]> heap_;
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_ID_BUFFER_H
