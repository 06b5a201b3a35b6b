// Hashing helpers for e-nodes: a fast multiplicative hash (FxHash's recipe) and combiners.
#ifndef TENSAT_CORE_HASH_H
#define TENSAT_CORE_HASH_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensat/core/id.h"
#include "tensat/core/span.h"

namespace tensat {
inline namespace v0 {

/// Mixes `value` into `seed`. Rotate-xor-multiply, as rustc's FxHasher: not cryptographic, but
/// fast and good enough for hashconsing small integer tuples.
[[nodiscard]] constexpr std::uint64_t hash_combine(std::uint64_t seed,
                                                   std::uint64_t value) noexcept {
  return (((seed << 5) | (seed >> 59)) ^ value) * 0x517CC1B727220A95ull;
}

/// Hash of a sequence of ids, combined into `seed`.
[[nodiscard]] inline std::uint64_t hash_ids(std::uint64_t seed, Span<const Id> ids) noexcept {
  for (Id id : ids) seed = hash_combine(seed, id.value);
  return seed;
}

/// Hash of the bit pattern of a double; +0.0 and -0.0 hash differently, as they compare
/// differently in node equality of languages that store bit patterns.
[[nodiscard]] inline std::uint64_t hash_double_bits(double value) noexcept {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_HASH_H
