// tests/test_cache_stats.cpp: cache_stats() (stats.hpp CacheStats): hits and misses count the
// reads of a value only (not EXISTS, the TTL queries, TOUCH or COPY's source, which Stats
// counts as Redis does); get_or_load()'s loads, failures and load time; a soft-TTL reload is
// a miss; the derived rates; reset_stats() zeroes both kinds.
#include <expiring/expiring.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::CacheStats;
using expiring::ManualClock;
using expiring::Px;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;

expiring::Options opts() {
  expiring::Options o;
  o.seed = 0xCAC4E;
  o.budget_clock_us = [] { return 0; };
  return o;
}

struct Counts {
  std::uint64_t hits, misses;
};
Counts cache(const S& s) { return {s.cache_stats().hit_count, s.cache_stats().miss_count}; }
Counts keyspace(const S& s) { return {s.stats().keyspace_hits, s.stats().keyspace_misses}; }

}  // namespace

TEST_CASE("cache_stats: each value read counts one hit or one miss", "[service-api][cache_stats]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  REQUIRE(store.set("a", "1") == true);
  REQUIRE(store.set("b", "2", Px{100}) == true);
  REQUIRE(store.set("d", "4") == true);
  REQUIRE(store.set("e", "5") == true);
  std::uint64_t hits = 0, misses = 0;
  auto expect = [&](const char* what, std::uint64_t h, std::uint64_t m) {
    INFO(what);
    hits += h;
    misses += m;
    CHECK(store.cache_stats().hit_count == hits);
    CHECK(store.cache_stats().miss_count == misses);
    CHECK(store.cache_stats().request_count() == hits + misses);
    // Here every read is a value read: Redis's counters agree.
    CHECK(store.stats().keyspace_hits == hits);
    CHECK(store.stats().keyspace_misses == misses);
  };
  expect("start", 0, 0);
  CHECK(store.get("a") != nullptr);
  expect("get hit", 1, 0);
  CHECK(store.get("x") == nullptr);
  expect("get miss", 0, 1);
  const std::array<std::string_view, 4> keys{"a", "x", "b", "y"};
  const std::string* out[4];
  CHECK(store.get_many(keys, out) == 2);
  expect("get_many", 2, 2);
  CHECK(store.lookup("a").value != nullptr);
  CHECK(store.lookup("x").value == nullptr);
  expect("lookup", 1, 1);
  CHECK(store.getex("a").ok());
  CHECK(store.getex("x", Px{10}).ok());
  expect("getex", 1, 1);
  CHECK(store.getex_ptr("a", Px{100'000}).ok());
  CHECK(store.getex_ptr("x", {}).ok());
  expect("getex_ptr", 1, 1);
  CHECK(store.getdel("d").has_value());
  CHECK_FALSE(store.getdel("d").has_value());
  expect("getdel", 1, 1);
  CHECK(store.set_get("e", "55").ok());
  CHECK(store.set_get("new", "n").ok());
  expect("set_get", 1, 1);
  CHECK(store.get_or_load("e", [] { return std::string("L"); }).ok());
  CHECK(store.get_or_load("loaded", [] { return std::string("L"); }).ok());
  expect("get_or_load", 1, 1);
  // A stale key is a miss.
  clock.advance(101);
  CHECK(store.get("b") == nullptr);
  expect("stale get", 0, 1);
}

TEST_CASE("cache_stats: exists, TTL queries, touch and copy's source are not value reads",
          "[service-api][cache_stats]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  REQUIRE(store.set("a", "1", Px{5000}) == true);
  const CacheStats before = store.cache_stats();
  const Counts ks = keyspace(store);
  CHECK(store.exists("a"));
  CHECK_FALSE(store.exists("x"));
  CHECK(store.ttl("a") == 5);
  CHECK(store.pttl("x") == -2);
  CHECK(store.expiretime("a") > 0);
  CHECK(store.pexpiretime("x") == -2);
  CHECK(store.touch("a"));
  CHECK_FALSE(store.touch("x"));
  CHECK(store.copy("a", "b") == true);
  CHECK(store.copy("x", "c") == false);
  // Neither are quiet reads (peek, iteration) or writes.
  CHECK(store.peek("a") != nullptr);
  CHECK(store.expire("a", 10) == true);
  CHECK(store.persist("a"));
  CHECK(store.del("b"));
  // Redis counted every lookup above...
  CHECK(keyspace(store).hits == ks.hits + 5);
  CHECK(keyspace(store).misses == ks.misses + 5);
  // ... the cache counted none.
  CHECK(cache(store).hits == before.hit_count);
  CHECK(cache(store).misses == before.miss_count);
  // And a value read after them is still counted exactly.
  CHECK(store.get("a") != nullptr);
  CHECK(cache(store).hits == before.hit_count + 1);
}

TEST_CASE("cache_stats: get_or_load loads, failures and load time", "[service-api][cache_stats]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  auto r = store.get_or_load("k", [] { return std::string("v"); });
  REQUIRE(r.ok());
  CacheStats c = store.cache_stats();
  CHECK(c.miss_count == 1);
  CHECK(c.hit_count == 0);
  CHECK(c.load_success_count == 1);
  CHECK(c.load_failure_count == 0);
  CHECK(c.load_count() == 1);
  r = store.get_or_load("k", []() -> std::string { throw std::logic_error("must not load"); });
  c = store.cache_stats();
  CHECK(c.hit_count == 1);
  CHECK(c.load_count() == 1);

  // A throwing loader: the exception propagates, a failure is counted, nothing is stored.
  CHECK_THROWS_AS(store.get_or_load("bad", []() -> std::string { throw std::runtime_error("down"); }),
                  std::runtime_error);
  c = store.cache_stats();
  CHECK(c.miss_count == 2);
  CHECK(c.load_success_count == 1);
  CHECK(c.load_failure_count == 1);
  CHECK(store.peek("bad") == nullptr);

  // Load time: the steady clock around the loader.
  const std::uint64_t before_ns = c.total_load_time_ns;
  r = store.get_or_load("slow", [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::string("s");
  });
  REQUIRE(r.ok());
  c = store.cache_stats();
  CHECK(c.total_load_time_ns >= before_ns + 1'000'000);
  CHECK(c.total_load_time_ns < before_ns + 10'000'000'000ull);  // bounded: not a garbage value
  CHECK(c.load_success_count == 2);
  CHECK(c.average_load_penalty_ns() == Approx(static_cast<double>(c.total_load_time_ns) / 3.0));
  CHECK(c.average_load_penalty_ns() >= 1'000'000.0 / 3.0);
  // A throwing loader's time counts too.
  CHECK_THROWS(store.get_or_load("bad", []() -> std::string {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    throw std::runtime_error("down");
  }));
  CHECK(store.cache_stats().total_load_time_ns >= c.total_load_time_ns + 1'000'000);
}

TEST_CASE("cache_stats: a reload in the soft-TTL stale window is a miss", "[service-api][cache_stats][soft_ttl]") {
  ManualClock clock{T0};
  expiring::Options o = opts();
  o.stale_window_ms = 1000;
  S store{clock, o};
  int loads = 0;
  auto loader = [&] {
    ++loads;
    return std::string("v") + std::to_string(loads);
  };
  REQUIRE(store.get_or_load("k", loader, Px{5000}).ok());
  REQUIRE(loads == 1);
  clock.advance(3999);  // 1001 ms left: fresh
  REQUIRE(store.get_or_load("k", loader, Px{5000}).ok());
  CHECK(loads == 1);
  CHECK(store.cache_stats().hit_count == 1);
  clock.advance(2);  // 999 ms left: stale, reloaded
  const auto ks_hits = store.stats().keyspace_hits;
  auto r = store.get_or_load("k", loader, Px{5000});
  REQUIRE(r.ok());
  CHECK(**r == "v2");
  CHECK(loads == 2);
  CHECK(store.stats().keyspace_hits == ks_hits + 1);  // Redis saw a live key
  const CacheStats c = store.cache_stats();
  CHECK(c.hit_count == 1);
  CHECK(c.miss_count == 2);
  CHECK(c.load_success_count == 2);
  // lookup() of a stale-flagged key is a hit: it returns the value.
  clock.advance(4001);
  CHECK(store.lookup("k").freshness == expiring::Freshness::stale);
  CHECK(store.cache_stats().hit_count == 2);
}

TEST_CASE("cache_stats: rates and derived figures", "[service-api][cache_stats]") {
  CacheStats none;
  CHECK(none.request_count() == 0);
  CHECK(none.hit_rate() == 1.0);
  CHECK(none.miss_rate() == 0.0);
  CHECK(none.load_count() == 0);
  CHECK(none.average_load_penalty_ns() == 0.0);

  ManualClock clock{T0};
  S store{clock, opts()};
  CHECK(store.cache_stats().hit_rate() == 1.0);
  REQUIRE(store.set("a", "1") == true);
  for (int i = 0; i < 3; ++i) CHECK(store.get("a") != nullptr);
  CHECK(store.get("x") == nullptr);
  const CacheStats c = store.cache_stats();
  CHECK(c.request_count() == 4);
  CHECK(c.hit_rate() == Approx(0.75));
  CHECK(c.miss_rate() == Approx(0.25));
  CacheStats manual;
  manual.load_success_count = 3;
  manual.load_failure_count = 1;
  manual.total_load_time_ns = 1000;
  CHECK(manual.load_count() == 4);
  CHECK(manual.average_load_penalty_ns() == Approx(250.0));
}

TEST_CASE("cache_stats: reset_stats zeroes both kinds", "[service-api][cache_stats]") {
  ManualClock clock{T0};
  expiring::Options o = opts();
  o.max_entries = 1;
  o.maxmemory_policy = expiring::EvictionPolicy::allkeys_random;
  S store{clock, o};
  REQUIRE(store.get_or_load("a", [] { return std::string("1"); }).ok());
  CHECK_THROWS(store.get_or_load("b", []() -> std::string { throw std::runtime_error("x"); }));
  REQUIRE(store.set("c", "3") == true);  // evicts a
  CHECK(store.exists("c"));
  CHECK(store.get("c") != nullptr);
  CacheStats c = store.cache_stats();
  REQUIRE(c.hit_count == 1);
  REQUIRE(c.miss_count == 2);
  REQUIRE(c.load_count() == 2);
  REQUIRE(c.eviction_count == 1);
  REQUIRE(c.eviction_weight > 0);
  store.reset_stats();
  c = store.cache_stats();
  CHECK(c.hit_count == 0);
  CHECK(c.miss_count == 0);
  CHECK(c.load_success_count == 0);
  CHECK(c.load_failure_count == 0);
  CHECK(c.total_load_time_ns == 0);
  CHECK(c.eviction_count == 0);
  CHECK(c.eviction_weight == 0);
  const expiring::Stats s = store.stats();
  CHECK(s.keyspace_hits == 0);
  CHECK(s.keyspace_misses == 0);
  CHECK(s.evicted_keys == 0);
  // Counting starts again from zero, with no residue of the probes before the reset.
  CHECK(store.exists("c"));
  CHECK(store.cache_stats().hit_count == 0);
  CHECK(store.get("c") != nullptr);
  CHECK(store.cache_stats().hit_count == 1);
  CHECK(store.cache_stats().miss_count == 0);
}
