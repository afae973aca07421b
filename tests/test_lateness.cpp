// tests/test_lateness.cpp: Stats::expired_lateness (stats.hpp), how late expired keys were
// reclaimed: the bucket rule at its edges, lazy and active expiry counted apart, quantiles,
// reset_stats(), and sums over a ConcurrentStore's shards.
#include <expiring/concurrent_store.hpp>
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "catch.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::LatenessHistogram;
using expiring::ManualClock;

namespace {
using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
std::uint64_t total(const std::array<std::uint64_t, LatenessHistogram::kBuckets>& h) {
  std::uint64_t n = 0;
  for (std::uint64_t c : h) n += c;
  return n;
}
}  // namespace

TEST_CASE("lateness: bucket edges", "[lateness]") {
  CHECK(LatenessHistogram::bucket_of(0) == 0);
  CHECK(LatenessHistogram::bucket_of(1) == 0);
  CHECK(LatenessHistogram::bucket_of(2) == 1);
  CHECK(LatenessHistogram::bucket_of(3) == 2);
  CHECK(LatenessHistogram::bucket_of(4) == 2);
  CHECK(LatenessHistogram::bucket_of(5) == 3);
  CHECK(LatenessHistogram::bucket_of(1024) == 10);
  CHECK(LatenessHistogram::bucket_of(1025) == 11);
  CHECK(LatenessHistogram::bucket_of(std::int64_t{1} << 30) == 30);
  CHECK(LatenessHistogram::bucket_of((std::int64_t{1} << 30) + 1) == 31);
  CHECK(LatenessHistogram::bucket_of(std::numeric_limits<std::int64_t>::max()) == 31);
  for (int b = 1; b < 31; ++b) {
    CHECK(LatenessHistogram::bucket_of(LatenessHistogram::upper_ms(b)) == b);
    CHECK(LatenessHistogram::bucket_of(LatenessHistogram::upper_ms(b) + 1) == b + 1);
  }
}

TEST_CASE("lateness: lazy and active expiry are counted apart, with their lateness", "[lateness]") {
  ManualClock clock{1'000'000};
  expiring::Options o;
  o.seed = 3;
  S s{clock, o};
  for (int i = 0; i < 10; ++i) REQUIRE(s.set("lazy" + std::to_string(i), "v", 100ms).ok());
  for (int i = 0; i < 30; ++i) REQUIRE(s.set("active" + std::to_string(i), "v", 100ms).ok());
  clock.advance(100ms);  // at the deadline: alive
  CHECK(s.get("lazy0") != nullptr);
  clock.advance(5ms);    // 5 ms late: bucket 3, (4, 8]
  for (int i = 0; i < 10; ++i) CHECK(s.get("lazy" + std::to_string(i)) == nullptr);
  clock.advance(995ms);  // 1000 ms late: bucket 10, (512, 1024]
  for (int t = 0; t < 100 && s.size() != 0; ++t) (void)s.tick();
  REQUIRE(s.size() == 0);
  const expiring::Stats st = s.stats();
  CHECK(st.expired_lateness.lazy[3] == 10);
  CHECK(total(st.expired_lateness.lazy) == 10);
  CHECK(st.expired_lateness.active[10] == 30);
  CHECK(total(st.expired_lateness.active) == 30);
  CHECK(st.expired_keys == 40);
  CHECK(LatenessHistogram::quantile_ms(st.expired_lateness.lazy, 0.5) == 8);
  CHECK(LatenessHistogram::quantile_ms(st.expired_lateness.active, 0.99) == 1024);
  CHECK(LatenessHistogram::quantile_ms(std::array<std::uint64_t, LatenessHistogram::kBuckets>{}, 0.5) == 0);
  s.reset_stats();
  CHECK(total(s.stats().expired_lateness.lazy) == 0);
  CHECK(total(s.stats().expired_lateness.active) == 0);
}

TEST_CASE("lateness: a ConcurrentStore sums its shards", "[lateness][concurrent]") {
  ManualClock clock{1'000'000};
  expiring::ConcurrentStore<std::string, std::string, ManualClock, TestPolicy> c{clock, {}, {8}};
  for (int i = 0; i < 64; ++i) REQUIRE(c.set("k" + std::to_string(i), "v", 10ms).ok());
  clock.advance(12ms);  // 2 ms late: bucket 1
  for (int i = 0; i < 64; ++i) CHECK_FALSE(c.get("k" + std::to_string(i)).has_value());
  const expiring::Stats st = c.stats();
  CHECK(st.expired_lateness.lazy[1] == 64);
  CHECK(st.expired_keys == 64);
}
