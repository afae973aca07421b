// expiring/detail/bits.hpp: the bit scans and prefetch hints the tables, the volatile-key
// bitmap and the timer wheel share (compiler builtins where there are, a loop or nothing
// otherwise).
#pragma once

#include <cstddef>
#include <cstdint>

namespace expiring::detail {

// Hints: bring p's cache line in to be read, or written (never fault, change nothing).
// GCC 12 at -O2 deletes a prefetch whose only effect is the prefetch: one under a condition
// (prefetch_slot()'s "if the group has a match") or in a loop of prefetches alone
// (-ffinite-loops). An empty volatile asm that takes the address keeps it where it is.
inline void prefetch_read(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 3);
  __asm__ volatile("" : : "r"(p));
#else
  (void)p;
#endif
}
// Every line of the n bytes at p.
inline void prefetch_range(const void* p, std::size_t n) noexcept {
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(p) + n;
  for (std::uintptr_t a = first; a < end; a += 64) prefetch_read(reinterpret_cast<const void*>(a));
}
inline void prefetch_write(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1, 3);
  __asm__ volatile("" : : "r"(p));
#else
  (void)p;
#endif
}

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
