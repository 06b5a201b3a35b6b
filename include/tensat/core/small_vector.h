// SmallVector: a vector of trivially copyable values that stores its first N elements inline.
#ifndef TENSAT_CORE_SMALL_VECTOR_H
#define TENSAT_CORE_SMALL_VECTOR_H

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "tensat/core/config.h"
#include "tensat/core/span.h"
#include "tensat/detail/page_allocator.h"

namespace tensat {
inline namespace v0 {

/// A vector that keeps up to `N` elements inside the object and moves to the heap beyond that.
///
/// E-nodes and substitutions are small (two children, three variables), and a heap allocation
/// per e-node would dominate both memory and time; this keeps them in one cache line.
/// Restricted to trivially copyable `T` so that copies are `memcpy`.
template <class T, std::size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");
  static_assert(N >= 1, "SmallVector needs at least one inline slot");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() noexcept = default;
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.size()); }
  SmallVector(const T* values, std::size_t count) { assign(values, count); }
  explicit SmallVector(Span<const T> values) { assign(values.data(), values.size()); }
  SmallVector(std::size_t count, const T& value) {
    reserve(count);
    for (std::size_t i = 0; i < count; ++i) data()[i] = value;
    size_ = static_cast<std::uint32_t>(count);
  }
  SmallVector(const SmallVector& other) {
    if (other.is_inline()) {
      std::memcpy(static_cast<void*>(storage_.inline_values), other.storage_.inline_values,
                  sizeof(storage_.inline_values));
      size_ = other.size_;
    } else {
      assign(other.data(), other.size());
    }
  }
  SmallVector(SmallVector&& other) noexcept { steal(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      size_ = 0;
      assign(other.data(), other.size());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t capacity() const noexcept { return is_inline() ? N : capacity_; }
  /// Bytes held on the heap, malloc's block overhead included (zero while the elements fit
  /// inline).
  [[nodiscard]] std::size_t heap_bytes() const noexcept {
    return is_inline() ? 0 : detail::heap_block_bytes(capacity_ * sizeof(T));
  }
  [[nodiscard]] T* data() noexcept { return is_inline() ? storage_.inline_values : storage_.heap; }
  [[nodiscard]] const T* data() const noexcept {
    return is_inline() ? storage_.inline_values : storage_.heap;
  }
  [[nodiscard]] T* begin() noexcept { return data(); }
  [[nodiscard]] T* end() noexcept { return data() + size_; }
  [[nodiscard]] const T* begin() const noexcept { return data(); }
  [[nodiscard]] const T* end() const noexcept { return data() + size_; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept {
    assert(i < size_);
    return data()[i];
  }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return data()[i];
  }
  [[nodiscard]] T& back() noexcept { return data()[size_ - 1]; }
  [[nodiscard]] const T& back() const noexcept { return data()[size_ - 1]; }
  operator Span<T>() noexcept { return {data(), size_}; }
  operator Span<const T>() const noexcept { return {data(), size_}; }

  void push_back(const T& value) {
    if (size_ == capacity()) return grow_and_push(value);  // rare: keep the fast path small
    data()[size_++] = value;
  }
  /// Appends `count` values (which must not live in this vector).
  void append(const T* values, std::size_t count) {
    if (size_ + count > capacity()) grow(std::max<std::size_t>(size_ + count, 2 * capacity()));
    if (count != 0) std::memcpy(static_cast<void*>(data() + size_), values, count * sizeof(T));
    size_ += static_cast<std::uint32_t>(count);
  }
  /// Removes the elements for which `pred` holds, keeping the others in order. O(size).
  template <class Pred>
  void erase_if(Pred&& pred) {
    T* out = data();
    for (T* in = data(); in != data() + size_; ++in)
      if (!pred(*in)) *out++ = *in;
    size_ = static_cast<std::uint32_t>(out - data());
  }
  /// Releases heap storage beyond the size (moves back inline when the elements fit).
  void shrink_to_fit() {
    if (is_inline() || (size_ > N && capacity_ <= block_capacity(size_))) return;
    SmallVector fresh(data(), size_);
    *this = std::move(fresh);
  }
  void pop_back() noexcept {
    assert(size_ > 0);
    --size_;
  }
  void clear() noexcept { size_ = 0; }
  void resize(std::size_t count, const T& value = T{}) {
    reserve(count);
    for (std::size_t i = size_; i < count; ++i) data()[i] = value;
    size_ = static_cast<std::uint32_t>(count);
  }
  void reserve(std::size_t count) {
    if (count > capacity()) grow(count);
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i)
      if (!(a.data()[i] == b.data()[i])) return false;
    return true;
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) noexcept { return !(a == b); }

 private:
  [[nodiscard]] bool is_inline() const noexcept { return capacity_ == 0; }

  void assign(const T* values, std::size_t count) {
    if (count <= N) {
      // A fixed-size copy of the whole inline buffer compiles to a few moves, not a call.
      release();
      if (count != 0)
        std::memcpy(static_cast<void*>(storage_.inline_values), values, count * sizeof(T));
      size_ = static_cast<std::uint32_t>(count);
      return;
    }
    reserve(count);
    if (count != 0) std::memcpy(static_cast<void*>(data()), values, count * sizeof(T));
    size_ = static_cast<std::uint32_t>(count);
  }
  TENSAT_NOINLINE void grow_and_push(const T& value) {
    const T copy = value;  // `value` may live in this vector
    grow(capacity() * 2);
    data()[size_++] = copy;
  }

  // The elements a heap block for `count` of them holds: the whole block malloc hands out (a
  // 3-id list gets room for 6).
  static std::size_t block_capacity(std::size_t count) noexcept {
    return std::min<std::size_t>(
        0xFFFFFFFFu, std::max(count, detail::heap_usable_bytes(count * sizeof(T)) / sizeof(T)));
  }

  void grow(std::size_t new_capacity) {
    if (new_capacity <= N) return;
    if (new_capacity > 0xFFFFFFFFu) throw std::length_error("SmallVector: too many elements");
    new_capacity = block_capacity(new_capacity);
    T* fresh = static_cast<T*>(std::malloc(new_capacity * sizeof(T)));
    if (fresh == nullptr) throw std::bad_alloc();
    if (size_ != 0) std::memcpy(static_cast<void*>(fresh), data(), size_ * sizeof(T));
    release();
    storage_.heap = fresh;
    capacity_ = static_cast<std::uint32_t>(new_capacity);
  }
// GCC 12 may inline a destructor into a caller whose vector it knows to be inline and still
// warn that the free below (taken only when the storage is on the heap) frees the inline
// values' storage: -Wfree-nonheap-object, a false positive users' builds would see too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif
  void release() noexcept {
    if (!is_inline()) std::free(storage_.heap);
    capacity_ = 0;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  void steal(SmallVector& other) noexcept {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.is_inline()) {
      if (size_ != 0)
        std::memcpy(static_cast<void*>(storage_.inline_values), other.storage_.inline_values,
                    size_ * sizeof(T));
    } else {
      storage_.heap = other.storage_.heap;
    }
    other.size_ = 0;
    other.capacity_ = 0;
  }

  union Storage {
    T* heap;
    T inline_values[N];
    Storage() noexcept : heap(nullptr) {}
  } storage_;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;  // 0 while inline
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_SMALL_VECTOR_H
