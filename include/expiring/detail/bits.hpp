// expiring/detail/bits.hpp: the bit scans the table, the volatile-key bitmap and the timer
// wheel share (compiler builtins where there are, a loop otherwise).
#pragma once

#include <cstdint>

namespace expiring::detail {

// Index of the lowest set bit of m; m != 0.
inline int lowest_bit(std::uint64_t m) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(m);
#else
  int i = 0;
  while ((m & 1u) == 0) {
    m >>= 1;
    ++i;
  }
  return i;
#endif
}

// Index of the highest set bit of m; m != 0.
inline int highest_bit(std::uint64_t m) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return 63 - __builtin_clzll(m);
#else
  int i = 0;
  while (m >>= 1) ++i;
  return i;
#endif
}

// Number of set bits of m.
inline int count_bits(std::uint64_t m) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_popcountll(m);
#else
  int n = 0;
  for (; m != 0; m &= m - 1) ++n;
  return n;
#endif
}

}  // namespace expiring::detail
