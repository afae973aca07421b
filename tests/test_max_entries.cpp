// tests/test_max_entries.cpp: Options::max_entries and set_max_entries() (options.hpp): the
// bound holds after every call under every eviction policy; overwrites, deletes and rename()
// never need room; noeviction (and volatile-* with no volatile key) refuses a new key with
// Errc::out_of_memory and changes nothing; the victims are the policy's (LRU, LFU, TTL in
// deterministic scenarios), raise `evicted` with their value, and count in
// stats().evicted_keys and cache_stats(); lowering the bound evicts at once; maxmemory and
// max_entries both hold when both are set.
// expiring-test: expiry index (built over both policies under the sanitizers too)
#include <expiring/expiring.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::Errc;
using expiring::EvictionPolicy;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Px;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;

expiring::Options bounded(std::size_t n, EvictionPolicy policy) {
  expiring::Options o;
  o.seed = 0xB0B;
  o.budget_clock_us = [] { return 0; };
  o.max_entries = n;
  o.maxmemory_policy = policy;
  o.maxmemory_samples = 64;
  o.lru_clock_resolution_ms = 1;
  o.lfu_log_factor = 0;  // every access increments the LFU counter: deterministic
  return o;
}

struct Removal {
  KeyEventCause cause;
  std::string key;
  std::optional<std::string> value;
  friend bool operator==(const Removal& a, const Removal& b) {
    return a.cause == b.cause && a.key == b.key && a.value == b.value;
  }
  // Readable in failure messages.
  friend std::ostream& operator<<(std::ostream& os, const Removal& r) {
    return os << expiring::to_string(r.cause) << "(" << r.key << (r.value ? ", " + *r.value : std::string()) << ")";
  }
};

struct Fixture {
  ManualClock clock{T0};
  S store;
  std::vector<Removal> events;
  explicit Fixture(expiring::Options o) : store(clock, std::move(o)) {
    store.set_listener([this](const S::event_type& e) {
      events.push_back(Removal{e.cause, e.key, e.value ? std::optional<std::string>(*e.value) : std::nullopt});
    });
  }
  std::vector<Removal> evictions() const {
    std::vector<Removal> out;
    for (const auto& e : events) {
      if (e.cause == KeyEventCause::evicted) out.push_back(e);
    }
    return out;
  }
};

std::string key(int i) { return "key:" + std::to_string(i); }

bool is_volatile_policy(EvictionPolicy p) {
  return p == EvictionPolicy::volatile_lru || p == EvictionPolicy::volatile_lfu ||
         p == EvictionPolicy::volatile_random || p == EvictionPolicy::volatile_ttl;
}

}  // namespace

TEST_CASE("max_entries: the bound holds after every call under every policy", "[service-api][max_entries]") {
  const EvictionPolicy policy = GENERATE(EvictionPolicy::noeviction, EvictionPolicy::allkeys_lru,
                                         EvictionPolicy::volatile_lru, EvictionPolicy::allkeys_lfu,
                                         EvictionPolicy::volatile_lfu, EvictionPolicy::allkeys_random,
                                         EvictionPolicy::volatile_random, EvictionPolicy::volatile_ttl);
  CAPTURE(policy);
  constexpr std::size_t kBound = 6;
  Fixture f(bounded(kBound, policy));
  std::mt19937 gen(1234);
  std::size_t refused = 0, violations = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::string k = key(static_cast<int>(gen() % 20));
    const std::string k2 = key(static_cast<int>(gen() % 20));
    const bool ttl = gen() % 2 == 0;
    const expiring::SetExpiry ex = ttl ? expiring::SetExpiry(Px{1 + static_cast<std::int64_t>(gen() % 5000)})
                                       : expiring::SetExpiry();
    switch (gen() % 12) {
      case 0: refused += f.store.set(k, "v", ex) == Errc::out_of_memory ? 1 : 0; break;
      case 1: refused += f.store.set_get(k, "v", ex) == Errc::out_of_memory ? 1 : 0; break;
      case 2: (void)f.store.setnx(k, "v"); break;
      case 3: refused += f.store.copy(k, k2, gen() % 2 == 0) == Errc::out_of_memory ? 1 : 0; break;
      case 4: refused += f.store.get_or_load(k, [] { return std::string("L"); }, ex) == Errc::out_of_memory ? 1 : 0; break;
      case 5: (void)f.store.rename(k, k2); break;
      case 6: (void)f.store.del(k); break;
      case 7: (void)f.store.get(k); break;
      case 8: refused += f.store.setex(k, 3, "v") == Errc::out_of_memory ? 1 : 0; break;
      case 9: refused += f.store.getset(k, "g") == Errc::out_of_memory ? 1 : 0; break;
      case 10: f.clock.advance(static_cast<std::int64_t>(gen() % 300)); break;
      default: (void)f.store.tick(); break;
    }
    if (f.store.size() > kBound) ++violations;
  }
  CHECK(violations == 0);
  CHECK(f.store.check_invariants());
  if (policy == EvictionPolicy::noeviction) {
    CHECK(f.store.stats().evicted_keys == 0);
    CHECK(refused > 0);
  } else if (!is_volatile_policy(policy)) {
    CHECK(f.store.stats().evicted_keys > 0);
  }
  CHECK(f.evictions().size() == f.store.stats().evicted_keys);
  CHECK(f.store.cache_stats().eviction_count == f.store.stats().evicted_keys);
}

TEST_CASE("max_entries: overwrites and deletes never evict", "[service-api][max_entries]") {
  const EvictionPolicy policy = GENERATE(EvictionPolicy::noeviction, EvictionPolicy::allkeys_lru,
                                         EvictionPolicy::allkeys_random, EvictionPolicy::volatile_ttl);
  CAPTURE(policy);
  Fixture f(bounded(4, policy));
  for (int i = 0; i < 4; ++i) REQUIRE(f.store.set(key(i), "v", Px{100'000}) == true);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) {
      REQUIRE(f.store.set(key(i), "w" + std::to_string(round), Px{50'000 + i}) == true);
      REQUIRE(f.store.set_get(key(i), "x").ok());
      REQUIRE(f.store.setex(key(i), 10, "y").ok());
      CHECK_FALSE(f.store.setnx(key(i), "z"));
      REQUIRE(f.store.copy(key(i), key((i + 1) % 4), true) == true);
      auto r = f.store.get_or_load(key(i), [] { return std::string("L"); });
      REQUIRE(r.ok());
    }
  }
  CHECK(f.store.size() == 4);
  CHECK(f.store.stats().evicted_keys == 0);
  CHECK(f.evictions().empty());
  CHECK(f.store.del(key(0)));
  CHECK(f.store.size() == 3);
  REQUIRE(f.store.set(key(9), "v", Px{100'000}) == true);  // room again
  CHECK(f.store.size() == 4);
  CHECK(f.store.stats().evicted_keys == 0);
}

TEST_CASE("max_entries: noeviction refuses a new key and changes nothing", "[service-api][max_entries]") {
  Fixture f(bounded(3, EvictionPolicy::noeviction));
  for (int i = 0; i < 3; ++i) REQUIRE(f.store.set(key(i), "v" + std::to_string(i)) == true);
  f.events.clear();
  const auto before = support::snapshot(f.store);
  CHECK(f.store.set("new", "v") == Errc::out_of_memory);
  CHECK(f.store.set("new", "v", Px{1000}) == Errc::out_of_memory);
  CHECK(f.store.setex("new", 1s, "v") == Errc::out_of_memory);
  CHECK(f.store.psetex("new", 10, "v") == Errc::out_of_memory);
  CHECK_FALSE(f.store.setnx("new", "v"));
  CHECK(f.store.copy(key(0), "new") == Errc::out_of_memory);
  CHECK(support::snapshot(f.store) == before);
  CHECK(f.store.set_get("new", "v") == Errc::out_of_memory);  // its read counts a miss
  CHECK(f.store.getset("new", "v") == Errc::out_of_memory);   // so does GETSET's
  int loads = 0;
  CHECK(f.store.get_or_load("new", [&] { ++loads; return std::string("L"); }) == Errc::out_of_memory);
  CHECK(loads == 0);  // refused before the loader runs
  CHECK(f.store.cache_stats().load_count() == 0);
  CHECK(f.store.peek("new") == nullptr);
  CHECK(f.store.size() == 3);
  CHECK(support::snapshot(f.store).entries == before.entries);
  CHECK(f.events.empty());
  CHECK(f.store.stats().evicted_keys == 0);
  // Writes that add nothing still work.
  REQUIRE(f.store.set(key(0), "w") == true);
  REQUIRE(f.store.set("new", "v", expiring::SetCond::XX) == false);
  REQUIRE(f.store.set(key(1), "v", expiring::PxAt{1}) == true);  // a past deadline: a delete
  CHECK(f.store.size() == 2);
  REQUIRE(f.store.set("new", "v") == true);
  CHECK(f.store.size() == 3);
}

TEST_CASE("max_entries: volatile policies refuse when no key has a TTL", "[service-api][max_entries]") {
  const EvictionPolicy policy = GENERATE(EvictionPolicy::volatile_lru, EvictionPolicy::volatile_lfu,
                                         EvictionPolicy::volatile_random, EvictionPolicy::volatile_ttl);
  CAPTURE(policy);
  Fixture f(bounded(3, policy));
  for (int i = 0; i < 3; ++i) REQUIRE(f.store.set(key(i), "v") == true);
  const auto before = support::snapshot(f.store);
  CHECK(f.store.set("new", "v", Px{1000}) == Errc::out_of_memory);
  CHECK(support::snapshot(f.store) == before);
  // With one volatile key, that one is the victim.
  CHECK(f.store.expire(key(1), 100) == true);
  f.events.clear();
  REQUIRE(f.store.set("new", "v") == true);
  CHECK(f.store.size() == 3);
  CHECK(f.store.peek(key(1)) == nullptr);
  CHECK(f.evictions() == std::vector<Removal>{{KeyEventCause::evicted, key(1), std::string("v")}});
  CHECK(f.store.set("another", "v") == Errc::out_of_memory);  // none volatile again
}

TEST_CASE("max_entries: allkeys-lru evicts the least recently used key", "[service-api][max_entries]") {
  Fixture f(bounded(4, EvictionPolicy::allkeys_lru));
  f.store.set_weigher([](const std::string&, const std::string& v) { return v.size(); });
  for (const char* k : {"a", "b", "c", "d"}) {
    REQUIRE(f.store.set(k, std::string(k) + k + k) == true);
    f.clock.advance(10);
  }
  REQUIRE(f.store.get("a") != nullptr);  // a is now the most recent; b the least
  f.clock.advance(10);
  f.events.clear();
  REQUIRE(f.store.set("e", "eee") == true);
  CHECK(f.store.size() == 4);
  CHECK(f.store.peek("b") == nullptr);
  CHECK(f.evictions() == std::vector<Removal>{{KeyEventCause::evicted, "b", std::string("bbb")}});
  CHECK(f.store.stats().evicted_keys == 1);
  CHECK(f.store.cache_stats().eviction_count == 1);
  CHECK(f.store.cache_stats().eviction_weight == 3);
  f.clock.advance(10);
  REQUIRE(f.store.touch("c"));  // touch counts as an access; exists() would not
  CHECK(f.store.exists("d"));
  f.clock.advance(10);
  REQUIRE(f.store.set("f", "ffff") == true);
  CHECK(f.store.peek("d") == nullptr);
  CHECK(f.store.peek("c") != nullptr);
  CHECK(f.store.stats().evicted_keys == 2);
  CHECK(f.store.cache_stats().eviction_weight == 6);
  // get_or_load and copy make room the same way.
  f.clock.advance(10);
  auto r = f.store.get_or_load("g", [] { return std::string("gg"); });
  REQUIRE(r.ok());
  CHECK(f.store.peek("a") == nullptr);  // read at +40, older than c (touched), e and f
  f.clock.advance(10);
  REQUIRE(f.store.get("c") != nullptr);
  REQUIRE(f.store.copy("c", "h") == true);
  CHECK(f.store.size() == 4);
  CHECK(f.store.peek("e") == nullptr);
  CHECK(f.store.stats().evicted_keys == 4);
  CHECK(f.evictions().size() == 4);
}

TEST_CASE("max_entries: allkeys-lfu evicts the least frequently used key", "[service-api][max_entries]") {
  Fixture f(bounded(3, EvictionPolicy::allkeys_lfu));
  for (const char* k : {"a", "b", "c"}) REQUIRE(f.store.set(k, k) == true);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(f.store.get("a") != nullptr);
    REQUIRE(f.store.get("c") != nullptr);
  }
  REQUIRE(f.store.set("d", "d") == true);
  CHECK(f.store.peek("b") == nullptr);
  CHECK(f.evictions() == std::vector<Removal>{{KeyEventCause::evicted, "b", std::string("b")}});
}

TEST_CASE("max_entries: volatile-ttl evicts the nearest deadline", "[service-api][max_entries]") {
  Fixture f(bounded(3, EvictionPolicy::volatile_ttl));
  REQUIRE(f.store.set("far", "1", Px{90'000}) == true);
  REQUIRE(f.store.set("near", "2", Px{10'000}) == true);
  REQUIRE(f.store.set("none", "3") == true);
  REQUIRE(f.store.set("new", "4", Px{50'000}) == true);
  CHECK(f.evictions() == std::vector<Removal>{{KeyEventCause::evicted, "near", std::string("2")}});
  REQUIRE(f.store.set("new2", "5") == true);
  CHECK(f.evictions().back() == Removal{KeyEventCause::evicted, "new", std::string("4")});
  CHECK(f.store.peek("none") != nullptr);
  CHECK(f.store.peek("far") != nullptr);
}

TEST_CASE("max_entries: set_max_entries lowering evicts at once", "[service-api][max_entries]") {
  Fixture f(bounded(0, EvictionPolicy::allkeys_random));
  for (int i = 0; i < 10; ++i) REQUIRE(f.store.set(key(i), "v") == true);
  f.store.set_max_entries(4);
  CHECK(f.store.options().max_entries == 4);
  CHECK(f.store.size() == 4);
  CHECK(f.store.stats().evicted_keys == 6);
  CHECK(f.evictions().size() == 6);
  CHECK(f.store.check_invariants());
  REQUIRE(f.store.set("x", "v") == true);
  CHECK(f.store.size() == 4);
  f.store.set_max_entries(0);  // no bound
  for (int i = 0; i < 10; ++i) REQUIRE(f.store.set(key(100 + i), "v") == true);
  CHECK(f.store.size() == 14);

  // With noeviction the keys stay; new keys are refused until the count is under the bound.
  f.store.set_maxmemory_policy(EvictionPolicy::noeviction);
  f.store.set_max_entries(12);
  CHECK(f.store.size() == 14);
  CHECK(f.store.set("y", "v") == Errc::out_of_memory);
  for (int i = 0; i < 3; ++i) REQUIRE(f.store.del(key(100 + i)));
  CHECK(f.store.size() == 11);
  REQUIRE(f.store.set("y", "v") == true);
  CHECK(f.store.set("z", "v") == Errc::out_of_memory);
  CHECK(f.store.stats().evicted_keys == 7);
}

TEST_CASE("max_entries: with maxmemory both bounds hold", "[service-api][max_entries][maxmemory]") {
  const std::size_t entries = GENERATE(std::size_t{50}, std::size_t{150});
  CAPTURE(entries);
  expiring::Options o = bounded(entries, EvictionPolicy::allkeys_lru);
  o.maxmemory = 100;
  Fixture f(o);
  f.store.set_weigher([](const std::string&, const std::string&) { return std::size_t{1}; });
  for (int i = 0; i < 300; ++i) {
    REQUIRE(f.store.set(key(i), "v") == true);
    REQUIRE(f.store.size() <= entries);
    REQUIRE(f.store.used_memory() <= 100);
    f.clock.advance(1);
  }
  const std::size_t expected = entries < 100 ? entries : 100;
  CHECK(f.store.size() == expected);
  CHECK(f.store.used_memory() == expected);
  CHECK(f.store.stats().evicted_keys == 300 - expected);
  CHECK(f.store.cache_stats().eviction_weight == 300 - expected);
  // LRU with every key sampled: the survivors are the most recent ones.
  for (int i = 300 - static_cast<int>(expected); i < 300; ++i) CHECK(f.store.peek(key(i)) != nullptr);
}

TEST_CASE("max_entries: rename never needs room", "[service-api][max_entries]") {
  Fixture f(bounded(3, EvictionPolicy::noeviction));
  for (int i = 0; i < 3; ++i) REQUIRE(f.store.set(key(i), "v" + std::to_string(i), Px{100'000}) == true);
  REQUIRE(f.store.rename(key(0), "renamed").ok());
  CHECK(f.store.size() == 3);
  CHECK(*f.store.peek("renamed") == "v0");
  CHECK(f.store.renamenx("renamed", "again") == true);
  CHECK(f.store.size() == 3);
  REQUIRE(f.store.rename("again", key(1)).ok());
  CHECK(f.store.size() == 2);
  CHECK(*f.store.peek(key(1)) == "v0");
  CHECK(f.store.stats().evicted_keys == 0);
}
