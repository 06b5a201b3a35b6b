// Span: a pointer and a length, C++17's stand-in for std::span.
#ifndef TENSAT_CORE_SPAN_H
#define TENSAT_CORE_SPAN_H

#include <cassert>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace tensat {
inline namespace v0 {

/// A non-owning view of `size()` contiguous `T`s (the subset of C++20 `std::span` tensat uses).
template <class T>
class Span {
 public:
  using value_type = std::remove_cv_t<T>;
  using iterator = T*;

  constexpr Span() noexcept = default;
  constexpr Span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <class U, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr Span(Span<U> other) noexcept : data_(other.data()), size_(other.size()) {}
  template <class U, class Alloc, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  Span(std::vector<U, Alloc>& v) noexcept : data_(v.data()), size_(v.size()) {}
  template <class U, class Alloc,
            class = std::enable_if_t<std::is_convertible_v<const U (*)[], T (*)[]>>>
  Span(const std::vector<U, Alloc>& v) noexcept : data_(v.data()), size_(v.size()) {}

  [[nodiscard]] constexpr T* data() const noexcept { return data_; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] constexpr T* begin() const noexcept { return data_; }
  [[nodiscard]] constexpr T* end() const noexcept { return data_ + size_; }
  [[nodiscard]] constexpr T& operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return data_[i];
  }
  [[nodiscard]] constexpr T& front() const noexcept { return data_[0]; }
  [[nodiscard]] constexpr T& back() const noexcept { return data_[size_ - 1]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_SPAN_H
