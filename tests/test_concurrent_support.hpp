// tests/test_concurrent_support.hpp: what the ConcurrentStore suites share (test_concurrent*.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include <expiring/concurrent_store.hpp>

#include "test_tsan.hpp"

namespace concurrent_test {

// Under ThreadSanitizer everything runs 5-15 times slower: fewer iterations (the [concurrent]
// tests then take about 6 s on 2 cores).
constexpr int scaled(int normal, int tsan) { return EXPIRING_TEST_TSAN ? tsan : normal; }

constexpr std::int64_t T0 = 1'700'000'000'000;  // a frozen clock's reading

// Options with `seed`, whose tick() budgets never depend on real time.
inline expiring::Options test_options(std::uint64_t seed) {
  expiring::Options o;
  o.seed = seed;
  o.budget_clock_us = [] { return std::int64_t{0}; };
  return o;
}

inline expiring::ConcurrencyOptions shards(std::size_t n) {
  expiring::ConcurrencyOptions c;
  c.shards = n;
  return c;
}

}  // namespace concurrent_test
