// expiring/detail/arith.hpp: overflow-checked time arithmetic (semantics.md D6).
//
// Every conversion from a caller's number to an absolute deadline goes through here. None of
// these functions can overflow; each reports overflow instead.
#pragma once

#include <cstdint>
#include <limits>

namespace expiring::detail {

inline constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

// a + b, or false on overflow.
// (The sum is taken modulo 2^64, where it is defined; it overflowed when its sign differs
// from both operands': one sign test instead of two range tests.)
constexpr bool checked_add(std::int64_t a, std::int64_t b, std::int64_t& out) noexcept {
  const std::uint64_t r = static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b);
  if ((((static_cast<std::uint64_t>(a) ^ r) & (static_cast<std::uint64_t>(b) ^ r)) >> 63) != 0) return false;
  out = static_cast<std::int64_t>(r);
  return true;
}

// a - b saturated to the int64 range.
constexpr std::int64_t saturating_sub(std::int64_t a, std::int64_t b) noexcept {
  if (b < 0 && a > kInt64Max + b) return kInt64Max;
  if (b > 0 && a < kInt64Min + b) return kInt64Min;
  return a - b;
}

// seconds * 1000, or false when the product leaves the int64 range (Redis 7's bounds check:
// v > LLONG_MAX/1000 or v < LLONG_MIN/1000).
constexpr bool seconds_to_ms(std::int64_t s, std::int64_t& out) noexcept {
  if (s > kInt64Max / 1000 || s < kInt64Min / 1000) return false;
  out = s * 1000;
  return true;
}

// Milliseconds to seconds rounded half up, as TTL and EXPIRETIME reply (x >= 0). Written so
// that x = INT64_MAX gives 9223372036854776 instead of overflowing.
constexpr std::int64_t ms_to_seconds_rounded(std::int64_t x) noexcept {
  return x / 1000 + (x % 1000 >= 500 ? 1 : 0);
}

}  // namespace expiring::detail
