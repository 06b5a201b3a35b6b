// Private: the e-graph's hashcons, an open-addressing table of e-node ids keyed by node content.
#ifndef TENSAT_DETAIL_NODE_TABLE_H
#define TENSAT_DETAIL_NODE_TABLE_H

#ifndef TENSAT_CORE_EGRAPH_H
#error "tensat/detail/node_table.h is private: include tensat/core/egraph.h"
#endif

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensat/core/id.h"
#include "tensat/detail/page_allocator.h"

namespace tensat {
inline namespace v0 {
namespace detail {

/// Folds a language's 64-bit hash to the table's 32 bits so that every input bit reaches the
/// low bits that pick the slot (splitmix64's finalizer, high half).
[[nodiscard]] constexpr std::uint32_t mix_hash(std::uint64_t h) noexcept {
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return static_cast<std::uint32_t>(h >> 32);
}

/// Hash set of node ids whose keys live elsewhere (the e-graph's node arena). Each 8-byte slot
/// holds a 32-bit hash, which both picks the home slot and skips most unequal nodes without
/// touching the arena, and the node id.
/// Capacity is limited to 2^32 slots. Linear probing from the home slot `hash * capacity / 2^32`
/// (a multiply instead of a mask, so any capacity works: `fit` sizes an at-rest table tightly),
/// load at most 3/4 while growing, backward-shift deletion (no tombstones, so lookups never slow
/// down after many erasures).
class NodeTable {
 public:
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return slots_.capacity() * sizeof(Slot);
  }
  /// Entries the table holds before its next growth.
  [[nodiscard]] std::size_t capacity_for_entries() const noexcept { return slots_.size() * 3 / 4; }

  /// The id of a stored node equal to the probe (`equals(id)` decides), or kInvalidId.
  template <class Equals>
  [[nodiscard]] Id find(std::uint32_t hash, Equals&& equals) const {
    if (slots_.empty()) return kInvalidId;
    for (std::size_t i = home(hash);; i = next(i)) {
      const Slot& slot = slots_[i];
      if (slot.id == kEmpty) return kInvalidId;
      if (slot.hash == hash && equals(Id(slot.id))) return Id(slot.id);
    }
  }

  /// Inserts `id` under `hash`. The caller guarantees no equal node is stored.
  void insert(std::uint32_t hash, Id id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    place(hash, id.value);
    ++size_;
  }

  /// Removes `id`, stored under `hash`. Returns false if it is not there.
  bool erase(std::uint32_t hash, Id id) {
    if (slots_.empty()) return false;
    std::size_t i = home(hash);
    for (;; i = next(i)) {
      if (slots_[i].id == kEmpty) return false;
      if (slots_[i].id == id.value) break;
    }
    // Backward shift: pull later members of the probe run into the hole.
    std::size_t hole = i;
    for (std::size_t j = next(hole); slots_[j].id != kEmpty; j = next(j)) {
      const std::size_t h = home(slots_[j].hash);
      // Move slot j into the hole if its home is not in the cyclic range (hole, j].
      const bool home_in_range = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!home_in_range) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  /// Sizes the table for `count` entries without growing (doubling from 64 slots).
  void reserve(std::size_t count) {
    std::size_t capacity = 64;
    while (capacity * 3 < count * 4) capacity *= 2;
    if (capacity > slots_.size()) rehash(capacity);
  }

  /// Sizes the table for exactly `count` entries at the growth load (3/4), for callers that
  /// budget memory: no doubling, so the table holds no more slots than asked for.
  void reserve_exact(std::size_t count) {
    const std::size_t capacity = std::max<std::size_t>(64, count + count / 3 + 1);
    if (capacity > slots_.size()) rehash(capacity);
  }

  /// Resizes the table to hold its entries at a load of about 7/8, for a table at rest (after
  /// garbage collection): the next insertion grows it again.
  void fit() { rehash(std::max<std::size_t>(16, size_ + size_ / 7 + 1)); }

  void clear() noexcept {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
  struct Slot {
    std::uint32_t hash = 0;
    std::uint32_t id = kEmpty;
  };

  [[nodiscard]] std::size_t home(std::uint32_t hash) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(hash) * slots_.size()) >> 32);
  }
  [[nodiscard]] std::size_t next(std::size_t i) const noexcept {
    return i + 1 == slots_.size() ? 0 : i + 1;
  }

  void place(std::uint32_t hash, std::uint32_t id) {
    std::size_t i = home(hash);
    while (slots_[i].id != kEmpty) i = next(i);
    slots_[i] = Slot{hash, id};
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot, PageAllocator<Slot>> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    slots_.shrink_to_fit();
    for (const Slot& slot : old)
      if (slot.id != kEmpty) place(slot.hash, slot.id);
  }

  void grow() { rehash(slots_.empty() ? 64 : std::max<std::size_t>(64, 2 * slots_.size())); }

  std::vector<Slot, PageAllocator<Slot>> slots_;
  std::size_t size_ = 0;
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_NODE_TABLE_H
