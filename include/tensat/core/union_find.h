// UnionFind: disjoint sets of ids with path halving, and a 31-bit value stored in each root.
#ifndef TENSAT_CORE_UNION_FIND_H
#define TENSAT_CORE_UNION_FIND_H

#include <cstdint>
#include <vector>

#include "tensat/core/id.h"
#include "tensat/detail/page_allocator.h"

namespace tensat {
inline namespace v0 {

/// Disjoint sets over ids 0..size()-1 (at most 2^31), stored as one 4-byte entry per id: a
/// non-root holds its parent, a root holds a flag bit and a 31-bit value of the caller's (the
/// e-graph keeps the index of the class record there, so that finding a class and reaching its
/// record read the same entry and no per-id side table is needed).
///
/// `find` is const and never writes, so concurrent readers are safe; `find_mut` halves paths.
/// `union_roots` takes the leader as an argument: the e-graph decides which class survives
/// (the one with more parents, as egg does), not the union-find.
class UnionFind {
 public:
  /// Largest value a root can hold.
  static constexpr std::uint32_t kMaxRootValue = 0x7FFFFFFFu;

  /// Adds a singleton set (its root value 0) and returns its id. O(1) amortized.
  Id make_set() {
    const Id id(entries_.size());
    entries_.push_back(kRoot);
    return id;
  }

  /// Sizes the storage for `count` ids without growing later.
  void reserve(std::size_t count) { entries_.reserve(count); }
  /// Ids the storage holds before it grows.
  [[nodiscard]] std::size_t capacity() const noexcept { return entries_.capacity(); }

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /// The representative of `id`'s set. O(path length); paths stay short because `find_mut`
  /// halves them and the e-graph re-canonicalizes its ids during rebuild.
  [[nodiscard]] Id find(Id id) const noexcept {
    std::uint32_t e = entries_[id.index()];
    while (!(e & kRoot)) {
      id = Id(e);
      e = entries_[id.index()];
    }
    return id;
  }

  /// The representative of `id`'s set, halving the path on the way (amortized near O(1)).
  Id find_mut(Id id) noexcept {
    while (!(entries_[id.index()] & kRoot)) {
      const std::uint32_t parent = entries_[id.index()];
      const std::uint32_t grandparent = entries_[parent];
      if (grandparent & kRoot) return Id(parent);
      entries_[id.index()] = grandparent;
      id = Id(grandparent);
    }
    return id;
  }

  /// Makes `root1` the parent of `root2`; both must be representatives. `root1` keeps its
  /// value; `root2`'s is dropped. Returns `root1`.
  Id union_roots(Id root1, Id root2) noexcept {
    entries_[root2.index()] = root1.value;
    return root1;
  }

  /// The value stored in `root` (a representative).
  [[nodiscard]] std::uint32_t root_value(Id root) const noexcept {
    return entries_[root.index()] & ~kRoot;
  }
  /// Stores `value` (at most kMaxRootValue) in `root` (a representative).
  void set_root_value(Id root, std::uint32_t value) noexcept {
    entries_[root.index()] = kRoot | value;
  }

  /// Each id's parent (a root is its own parent), for inspection and tests. O(size()).
  [[nodiscard]] std::vector<Id> parents() const {
    std::vector<Id> out(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i)
      out[i] = entries_[i] & kRoot ? Id(i) : Id(entries_[i]);
    return out;
  }
  /// Bytes held (the capacity of the entry vector).
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return entries_.capacity() * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::uint32_t kRoot = 0x80000000u;

  std::vector<std::uint32_t, detail::PageAllocator<std::uint32_t>> entries_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_UNION_FIND_H
