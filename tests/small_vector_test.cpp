#include <catch2/catch.hpp>

#include <tensat/detail/page_allocator.h>
#include <tensat/tensat.h>

#include <cstdint>
#include <vector>

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

TEST_CASE("small_vector: a heap list fills its malloc block and counts the block") {
  // Memory limits count heap_bytes(): the block malloc takes (header, 16-byte granules, at
  // least 32 bytes), not the bytes the elements use, which undercounted short lists by half.
  SmallVector<Id, 2> ids{Id(1), Id(2)};
  ids.push_back(Id(3));
  CHECK(ids.capacity() == 6);  // a 16-byte request gets a 32-byte block: 24 usable bytes
  CHECK(ids.heap_bytes() == 32);
  CHECK(ids.heap_bytes() == tensat::detail::heap_block_bytes(ids.capacity() * sizeof(Id)));
  for (std::uint32_t i = 4; i <= 7; ++i) ids.push_back(Id(i));
  CHECK(ids.capacity() == 14);  // 48 bytes asked, a 64-byte block, 56 usable
  CHECK(ids.heap_bytes() == 64);
  ids.shrink_to_fit();  // 7 ids fit a 48-byte block: room for 10
  CHECK(ids.capacity() == 10);
  CHECK(ids.heap_bytes() == 48);
  const Id* before = ids.data();
  ids.shrink_to_fit();  // already the smallest block: nothing moves
  CHECK(ids.data() == before);
  CHECK(ids[6] == Id(7));
  ids.resize(3);
  ids.shrink_to_fit();
  CHECK(ids.capacity() == 6);
  CHECK(ids[2] == Id(3));
}

TEST_CASE("page allocator: large blocks mapped, small ones from the heap, sizes counted") {
  using Alloc = tensat::detail::PageAllocator<std::uint32_t>;
  CHECK(Alloc::held_bytes(0) == 0);
  CHECK(Alloc::held_bytes(1) == 32);
  CHECK(Alloc::held_bytes(100) == tensat::detail::heap_block_bytes(400));
  const std::size_t big = Alloc::kMapBytes / sizeof(std::uint32_t) + 1;
  if (TENSAT_DETAIL_HAS_MMAP)  // mapped pages (64-bit Linux, not under AddressSanitizer)
    CHECK(Alloc::held_bytes(big) % 4096 == 0);
  else
    CHECK(Alloc::held_bytes(big) == tensat::detail::heap_block_bytes(big * sizeof(std::uint32_t)));
  CHECK(Alloc::held_bytes(big) >= big * sizeof(std::uint32_t));
  std::vector<std::uint32_t, Alloc> v;
  for (std::uint32_t i = 0; i < 100'000; ++i) v.push_back(i);  // grows through both kinds
  std::vector<std::uint32_t, Alloc> copy = v;
  v.clear();
  v.shrink_to_fit();
  REQUIRE(copy.size() == 100'000);
  CHECK(copy[99'999] == 99'999);
  CHECK(copy[12'345] == 12'345);
  struct alignas(64) Wide {  // over-aligned: heap blocks through aligned new
    double lanes[8];
  };
  std::vector<Wide, tensat::detail::PageAllocator<Wide>> wide(10), wider(2'000);
  CHECK(reinterpret_cast<std::uintptr_t>(wide.data()) % 64 == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(wider.data()) % 64 == 0);
  std::vector<bool, tensat::detail::PageAllocator<bool>> bits(1'000'000, false);
  bits[999'999] = true;
  CHECK(bits[999'999]);
  CHECK_FALSE(bits[0]);
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
