#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::Id;
using tensat::SmallVector;
using tensat::Symbol;

TEST_CASE("small_vector: inline, then heap, copies and moves") {
  SmallVector<int, 2> v;
  CHECK(v.empty());
  v.push_back(1);
  v.push_back(2);
  CHECK(v.heap_bytes() == 0);
  v.push_back(3);
  CHECK(v.size() == 3);
  CHECK(v.heap_bytes() > 0);
  SmallVector<int, 2> copy = v;
  CHECK(copy == v);
  SmallVector<int, 2> moved = std::move(copy);
  CHECK(moved == v);
  CHECK(copy.empty());  // NOLINT: moved-from is empty by contract
  moved.pop_back();
  CHECK(moved != v);
  v.push_back(v[0]);  // self-referencing push while growing
  CHECK(v.back() == 1);
  SmallVector<int, 2> filled(5, 7);
  CHECK(filled.size() == 5);
  CHECK(filled[4] == 7);
  filled.resize(1);
  CHECK(filled.size() == 1);
}

TEST_CASE("symbol: interning") {
  const Symbol a("plus");
  const Symbol b(std::string("plus"));
  CHECK(a == b);
  CHECK(a.str() == "plus");
  CHECK(Symbol::from_index(a.index()) == a);
  CHECK(Symbol("minus") != a);
  CHECK(fmt::format("{}", a) == "plus");
  CHECK(fmt::format("{}", Id(3)) == "3");
}
