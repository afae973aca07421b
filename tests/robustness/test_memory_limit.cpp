// tests/robustness/test_memory_limit.cpp: one write cannot take the store past maxmemory
// (issue 10, item 3, the library's side; the server's side, which counts client buffers
// through set_external_memory(), is tested against the RESP server in test_server_*.cpp).
#include <expiring/expiring.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "catch.hpp"

namespace {
using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::ManualClock&>;
using expiring::Errc;
using expiring::EvictionPolicy;

Store limited(expiring::ManualClock& clk, std::size_t limit, EvictionPolicy policy) {
  expiring::Options o;
  o.maxmemory = limit;
  o.maxmemory_policy = policy;
  o.seed = 1;
  return Store{clk, o};
}
}  // namespace

TEST_CASE("memory limit: one write larger than the limit is refused on an empty store", "[robustness][memory]") {
  expiring::ManualClock clk(1'000'000);
  Store s = limited(clk, 10u << 20, EvictionPolicy::noeviction);
  const std::string big(50u << 20, 'x');
  const auto r = s.set("a", big);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == Errc::out_of_memory);
  CHECK(s.size() == 0);
  CHECK(s.used_memory() == 0);
  // A write that fits is still accepted.
  CHECK(s.set("b", std::string(1000, 'y')).ok());
}

TEST_CASE("memory limit: a write that cannot fit even after evicting everything evicts nothing",
          "[robustness][memory]") {
  expiring::ManualClock clk(1'000'000);
  Store s = limited(clk, 4000, EvictionPolicy::allkeys_lru);
  for (int i = 0; i < 10; ++i) REQUIRE(s.set("k" + std::to_string(i), std::string(100, 'v')).ok());
  const std::size_t before = s.size(), used = s.used_memory();
  const auto r = s.set("huge", std::string(5000, 'h'));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == Errc::out_of_memory);
  CHECK(s.size() == before);
  CHECK(s.used_memory() == used);
  CHECK(s.stats().evicted_keys == 0);
}

TEST_CASE("memory limit: a write evicts until its own weight fits, never past the limit", "[robustness][memory]") {
  for (const EvictionPolicy policy :
       {EvictionPolicy::allkeys_lru, EvictionPolicy::allkeys_lfu, EvictionPolicy::allkeys_random,
        EvictionPolicy::volatile_lru, EvictionPolicy::volatile_ttl}) {
    CAPTURE(static_cast<int>(policy));
    expiring::ManualClock clk(1'000'000);
    const std::size_t limit = 20'000;
    Store s = limited(clk, limit, policy);
    std::mt19937_64 rng(5);
    int refused = 0;
    for (int i = 0; i < 2000; ++i) {
      const std::string key = "k" + std::to_string(rng() % 300);
      const std::string value(rng() % 2500, 'v');
      const auto r = s.set(key, value, expiring::Px{1'000'000});
      if (r.ok()) {
        CHECK(s.used_memory() <= limit);
      } else {
        CHECK(r.error() == Errc::out_of_memory);
        ++refused;
      }
    }
    CHECK(s.check_invariants());
    CHECK(refused == 0);  // every value fits in the limit; eviction makes room for each
  }
}

TEST_CASE("memory limit: copy() counts the copy's weight", "[robustness][memory]") {
  expiring::ManualClock clk(1'000'000);
  Store s = limited(clk, 3000, EvictionPolicy::noeviction);
  REQUIRE(s.set("src", std::string(2000, 's')).ok());
  const auto r = s.copy("src", "dst");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == Errc::out_of_memory);
  CHECK(s.size() == 1);
}

TEST_CASE("memory limit: external memory (client buffers) counts against the limit", "[robustness][memory]") {
  expiring::ManualClock clk(1'000'000);
  Store s = limited(clk, 10'000, EvictionPolicy::noeviction);
  REQUIRE(s.set("a", "1").ok());
  const std::size_t own = s.used_memory();
  s.set_external_memory(9'990);
  CHECK(s.used_memory() == own + 9'990);
  const auto r = s.set("b", std::string(100, 'b'));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == Errc::out_of_memory);
  CHECK(s.perform_evictions().error() == Errc::out_of_memory);
  CHECK(s.get("a") != nullptr);  // reads are never refused
  CHECK(s.del("a"));             // nor deletes
  s.set_external_memory(0);
  CHECK(s.set("b", std::string(100, 'b')).ok());
  // An external figure near SIZE_MAX cannot overflow the check.
  s.set_external_memory(~std::size_t{0});
  CHECK_FALSE(s.set("c", "x").ok());
}
