#include <catch2/catch.hpp>

#include <tensat/core/union_find.h>

using tensat::Id;

TEST_CASE("union_find: egg's unionfind.rs expectations") {
  tensat::UnionFind uf;
  for (int i = 0; i < 10; ++i) CHECK(uf.make_set() == Id(i));
  auto unite = [&](int a, int b) { uf.union_roots(uf.find_mut(Id(a)), uf.find_mut(Id(b))); };
  unite(0, 1);
  unite(0, 2);
  unite(0, 3);
  unite(6, 7);
  unite(6, 8);
  unite(6, 9);
  for (int i = 0; i < 10; ++i) uf.find_mut(Id(i));
  const std::vector<Id> expected{Id(0), Id(0), Id(0), Id(0), Id(4),
                                 Id(5), Id(6), Id(6), Id(6), Id(6)};
  CHECK(uf.parents() == expected);
}

TEST_CASE("union_find: find_mut halves paths and agrees with find") {
  tensat::UnionFind uf;
  for (int i = 0; i < 6; ++i) uf.make_set();
  // A chain 5 -> 4 -> 3 -> 2 -> 1 -> 0.
  for (int i = 1; i < 6; ++i) uf.union_roots(Id(i - 1), Id(i));
  CHECK(uf.find(Id(5)) == Id(0));
  CHECK(uf.find_mut(Id(5)) == Id(0));
  // Path halving made every other node skip its parent.
  CHECK(uf.parents()[5] == Id(3));
  CHECK(uf.parents()[3] == Id(1));
  for (int i = 0; i < 6; ++i) CHECK(uf.find(Id(i)) == Id(0));
}

TEST_CASE("union_find: roots carry a value that survives unions into them") {
  tensat::UnionFind uf;
  uf.reserve(4);
  for (int i = 0; i < 4; ++i) uf.make_set();
  CHECK(uf.root_value(Id(2)) == 0);
  uf.set_root_value(Id(0), 7);
  uf.set_root_value(Id(1), tensat::UnionFind::kMaxRootValue);
  uf.union_roots(Id(0), Id(1));
  CHECK(uf.find(Id(1)) == Id(0));
  CHECK(uf.root_value(uf.find(Id(1))) == 7);
  const std::vector<Id> expected{Id(0), Id(0), Id(2), Id(3)};
  CHECK(uf.parents() == expected);  // the value is not visible as a parent
}
