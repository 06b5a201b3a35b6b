// UnionFind: disjoint sets of ids with path halving.
#ifndef TENSAT_CORE_UNION_FIND_H
#define TENSAT_CORE_UNION_FIND_H

#include <vector>

#include "tensat/core/id.h"

namespace tensat {
inline namespace v0 {

/// Disjoint sets over ids 0..size()-1, stored as a parent vector (a root is its own parent).
///
/// `find` is const and never writes, so concurrent readers are safe; `find_mut` halves paths.
/// `union_roots` takes the leader as an argument: the e-graph decides which class survives
/// (the one with more parents, as egg does), not the union-find.
class UnionFind {
 public:
  /// Adds a singleton set and returns its id. O(1) amortized.
  Id make_set() {
    const Id id(parents_.size());
    parents_.push_back(id);
    return id;
  }

  [[nodiscard]] std::size_t size() const noexcept { return parents_.size(); }

  /// The representative of `id`'s set. O(path length); paths stay short because `find_mut`
  /// halves them and the e-graph re-canonicalizes its ids during rebuild.
  [[nodiscard]] Id find(Id id) const noexcept {
    while (parents_[id.index()] != id) id = parents_[id.index()];
    return id;
  }

  /// The representative of `id`'s set, halving the path on the way (amortized near O(1)).
  Id find_mut(Id id) noexcept {
    while (parents_[id.index()] != id) {
      const Id grandparent = parents_[parents_[id.index()].index()];
      parents_[id.index()] = grandparent;
      id = grandparent;
    }
    return id;
  }

  /// Makes `root1` the parent of `root2`; both must be representatives. Returns `root1`.
  Id union_roots(Id root1, Id root2) noexcept {
    parents_[root2.index()] = root1;
    return root1;
  }

  /// The parent vector, for inspection and tests.
  [[nodiscard]] const std::vector<Id>& parents() const noexcept { return parents_; }
  [[nodiscard]] std::size_t memory_bytes() const noexcept { return parents_.capacity() * sizeof(Id); }

 private:
  std::vector<Id> parents_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_UNION_FIND_H
