// Id: the index of an e-class (and of the e-node that created it).
#ifndef TENSAT_CORE_ID_H
#define TENSAT_CORE_ID_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>

#include <fmt/format.h>

namespace tensat {
inline namespace v0 {

/// A 32-bit index naming an e-class, an e-node of the e-graph, or a slot of a `RecExpr`.
///
/// In an `EGraph`, the e-node added with id `i` created the e-class `i`; after unions the class
/// is named by its canonical representative, `egraph.find(i)`.
struct Id {
  std::uint32_t value = 0;

  constexpr Id() noexcept = default;
  constexpr explicit Id(std::uint32_t v) noexcept : value(v) {}
  constexpr explicit Id(std::size_t v) noexcept : value(static_cast<std::uint32_t>(v)) {}
  constexpr explicit Id(int v) noexcept : value(static_cast<std::uint32_t>(v)) {}

  /// The id as an index into a vector.
  [[nodiscard]] constexpr std::size_t index() const noexcept { return value; }

  friend constexpr bool operator==(Id a, Id b) noexcept { return a.value == b.value; }
  friend constexpr bool operator!=(Id a, Id b) noexcept { return a.value != b.value; }
  friend constexpr bool operator<(Id a, Id b) noexcept { return a.value < b.value; }
  friend constexpr bool operator<=(Id a, Id b) noexcept { return a.value <= b.value; }
  friend constexpr bool operator>(Id a, Id b) noexcept { return a.value > b.value; }
  friend constexpr bool operator>=(Id a, Id b) noexcept { return a.value >= b.value; }
};

/// An id that names nothing; used as "absent" in dense tables.
inline constexpr Id kInvalidId{std::numeric_limits<std::uint32_t>::max()};

}  // namespace v0
}  // namespace tensat

template <>
struct std::hash<tensat::Id> {
  std::size_t operator()(tensat::Id id) const noexcept { return id.value * 0x9E3779B97F4A7C15ull; }
};

template <>
struct fmt::formatter<tensat::Id> : fmt::formatter<std::uint32_t> {
  template <class Ctx>
  auto format(tensat::Id id, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::uint32_t>::format(id.value, ctx);
  }
};

#endif  // TENSAT_CORE_ID_H
