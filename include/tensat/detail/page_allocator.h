// Private: an allocator that maps large arrays straight from the system.
#ifndef TENSAT_DETAIL_PAGE_ALLOCATOR_H
#define TENSAT_DETAIL_PAGE_ALLOCATOR_H

#include <cstddef>
#include <new>

// Mapped pages on 64-bit Linux (x86-64, AArch64; LP64, so `long` is `off_t`), the heap elsewhere.
// The system calls are declared here under names of their own, bound to the C library's symbols,
// rather than through <sys/mman.h>: that header defines macros (MAP_TYPE, PROT_NONE, ...) that
// break other libraries' declarations, ONNX's among them, in every file that includes tensat. Not
// under AddressSanitizer: it checks heap blocks only, and LeakSanitizer does not scan mapped pages
// for the heap pointers they hold.
#if defined(__SANITIZE_ADDRESS__)
#define TENSAT_DETAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENSAT_DETAIL_ASAN 1
#endif
#endif
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__)) && defined(__LP64__) && \
    (defined(__GNUC__) || defined(__clang__)) && !defined(TENSAT_DETAIL_ASAN)
#define TENSAT_DETAIL_HAS_MMAP 1
extern "C" void* tensat_detail_mmap(void* addr, std::size_t length, int prot, int flags, int fd,
                                    long offset) noexcept __asm__("mmap");
extern "C" int tensat_detail_munmap(void* addr, std::size_t length) noexcept __asm__("munmap");
#else
#define TENSAT_DETAIL_HAS_MMAP 0
#endif

namespace tensat {
inline namespace v0 {
namespace detail {

/// The bytes a heap block for `request` bytes takes, malloc's bookkeeping included, as glibc
/// lays blocks out on 64-bit targets (an 8-byte header, 16-byte granules, 32 bytes at least):
/// an estimate elsewhere. Memory accounting counts this rather than the bytes asked for, which
/// for the small lists of an e-graph's classes is up to twice as much.
constexpr std::size_t heap_block_bytes(std::size_t request) noexcept {
  const std::size_t block = (request + 8 + 15) & ~std::size_t(15);
  return block < 32 ? 32 : block;
}

/// The most bytes a heap block of `heap_block_bytes(request)` holds for its caller.
constexpr std::size_t heap_usable_bytes(std::size_t request) noexcept {
  return heap_block_bytes(request) - 8;
}

/// `heap_block_bytes` of a heap array of `count` elements of `element` bytes; 0 for none (an
/// empty vector holds no block).
constexpr std::size_t heap_array_bytes(std::size_t count, std::size_t element) noexcept {
  return count == 0 ? 0 : heap_block_bytes(count * element);
}

/// A standard allocator for the e-graph's arrays indexed by node or class id. Blocks of at least
/// `kMapBytes` are mapped pages of their own and go back to the system when freed; smaller ones
/// come from `operator new`. Why: an array that grows leaves its old buffer behind, and malloc
/// keeps such buffers in its heap (its threshold for mapping a block rises with each mapped block
/// freed), so under a memory limit the process grew well past the bytes the e-graph counts.
/// Stateless: every instance can free what any other allocated.
template <class T>
struct PageAllocator {
  using value_type = T;
  static constexpr std::size_t kMapBytes = std::size_t(64) << 10;
  // Mapped pages are page-aligned; heap blocks of over-aligned types use aligned new.
  static constexpr bool kOverAligned = alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__;

  PageAllocator() noexcept = default;
  template <class U>
  PageAllocator(const PageAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(T);
#if TENSAT_DETAIL_HAS_MMAP
    if (bytes >= kMapBytes) {
      // PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS: the values of both targets' ABI.
      void* p = tensat_detail_mmap(nullptr, bytes, 0x1 | 0x2, 0x02 | 0x20, -1, 0);
      if (p == reinterpret_cast<void*>(-1)) throw std::bad_alloc();  // MAP_FAILED
      return static_cast<T*>(p);
    }
#endif
    if constexpr (kOverAligned)
      return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
    else
      return static_cast<T*>(::operator new(bytes));
  }

  void deallocate(T* p, [[maybe_unused]] std::size_t n) noexcept {
#if TENSAT_DETAIL_HAS_MMAP
    if (n * sizeof(T) >= kMapBytes) {
      tensat_detail_munmap(static_cast<void*>(p), n * sizeof(T));
      return;
    }
#endif
    if constexpr (kOverAligned)
      ::operator delete (static_cast<void*>(p), std::align_val_t{alignof(T)});
    else
      ::operator delete(static_cast<void*>(p));
  }

  /// The bytes an array of `n` elements from this allocator holds: whole pages when mapped.
  static constexpr std::size_t held_bytes(std::size_t n) noexcept {
#if TENSAT_DETAIL_HAS_MMAP
    if (n * sizeof(T) >= kMapBytes) return (n * sizeof(T) + 4095) & ~std::size_t(4095);
#endif
    return heap_array_bytes(n, sizeof(T));
  }

  template <class U>
  bool operator==(const PageAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const PageAllocator<U>&) const noexcept {
    return false;
  }
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_PAGE_ALLOCATOR_H
