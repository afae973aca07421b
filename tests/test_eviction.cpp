// tests/test_eviction.cpp: maxmemory and maxmemory-policy (Redis evict.c): used-memory
// accounting, noeviction's OOM error, each policy's choice of victim, the eviction pool's
// ghosts, LFU's logarithmic counter and its decay, events and statistics.
// expiring-test: expiry index (built over both policies under the sanitizers too)
#include <expiring/expiring.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

using expiring::Errc;
using expiring::EvictionPolicy;
using expiring::Ex;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;
using expiring::Px;

using IntStore = expiring::ExpiringStore<std::uint64_t, std::uint64_t, expiring::Hash<std::uint64_t>, std::equal_to<>,
                                         ManualClock&, TestPolicy>;
using StrStore = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                         ManualClock&, TestPolicy>;

constexpr std::int64_t T0 = 1'000'000;
constexpr std::size_t kW = 16;  // default weight of a uint64 -> uint64 entry

Options limit(std::size_t bytes, EvictionPolicy p, int samples = 5) {
  Options o;
  o.maxmemory = bytes;
  o.maxmemory_policy = p;
  o.maxmemory_samples = samples;
  o.seed = 12345;
  return o;
}

// used_memory() as tracked, checked against a full recount (limit off, then on again; the
// caller's store must be within its limit, or turning it on again evicts).
template <class S>
bool accounting_exact(S& s) {
  const std::size_t tracked = s.used_memory();
  const std::size_t lim = s.options().maxmemory;
  s.set_maxmemory(0);
  const std::size_t counted = s.used_memory();
  s.set_maxmemory(lim);
  return tracked == counted;
}

struct EventLog {
  std::vector<std::pair<KeyEventCause, std::uint64_t>> events;  // cause, key
  std::vector<std::uint64_t> values;                            // values of evicted keys
  template <class S>
  void attach(S& s) {
    s.set_listener([this](const typename S::event_type& e) {
      events.emplace_back(e.cause, e.key);
      if (e.cause == KeyEventCause::evicted) values.push_back(*e.value);
    });
  }
  std::vector<std::uint64_t> evicted() const {
    std::vector<std::uint64_t> out;
    for (const auto& [c, k] : events) {
      if (c == KeyEventCause::evicted) out.push_back(k);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("maxmemory: the default weigher counts sizeof and std::string heap bytes", "[eviction]") {
  ManualClock clock{T0};
  IntStore ints{clock, limit(1000, EvictionPolicy::noeviction)};
  REQUIRE(ints.set(1, 10) == true);
  REQUIRE(ints.set(2, 20) == true);
  CHECK(ints.used_memory() == 2 * kW);
  REQUIRE(ints.del(1));
  CHECK(ints.used_memory() == kW);

  StrStore strs{clock, limit(1'000'000, EvictionPolicy::noeviction)};
  REQUIRE(strs.set("k", "short") == true);
  CHECK(strs.used_memory() == 2 * sizeof(std::string));
  const std::string big(100, 'x');
  REQUIRE(strs.set("k", big) == true);
  const std::size_t heap = expiring::detail::heap_bytes(*strs.peek("k"));
  CHECK(heap >= 101);
  CHECK(strs.used_memory() == 2 * sizeof(std::string) + heap);
  // Without a limit nothing is tracked; used_memory() counts on demand.
  StrStore plain{clock};
  REQUIRE(plain.set("k", big) == true);
  CHECK(plain.used_memory() == 2 * sizeof(std::string) + expiring::detail::heap_bytes(*plain.peek("k")));
}

TEST_CASE("maxmemory: used memory stays exact through every kind of write (random model)", "[eviction]") {
  ManualClock clock{T0};
  StrStore s{clock, limit(std::size_t{1} << 40, EvictionPolicy::allkeys_lru)};
  std::mt19937_64 rng(99);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto key = [&] { return "key" + std::to_string(pick(40)) + (pick(4) == 0 ? std::string(40, 'k') : ""); };
  auto val = [&] { return std::string(static_cast<std::size_t>(pick(4) == 0 ? 60 + pick(100) : pick(10)), 'v'); };
  int listener_calls = 0;
  for (int step = 0; step < 4000; ++step) {
    if (step % 1000 == 500) s.set_listener([&](const StrStore::event_type&) { ++listener_calls; });
    if (step % 1000 == 0) s.set_listener({});
    switch (pick(12)) {
      case 0: (void)s.set(key(), val()); break;
      case 1: (void)s.set(key(), val(), Px{1 + pick(50)}); break;
      case 2: (void)s.del(key()); break;
      case 3: (void)s.getdel(key()); break;
      case 4: (void)s.rename(key(), key()); break;
      case 5: (void)s.copy(key(), key(), pick(2) == 0); break;
      case 6: (void)s.modify(key(), [&](std::string& v) { v += std::string(static_cast<std::size_t>(pick(80)), 'm'); }); break;
      case 7: (void)s.getex(key(), Px{1 + pick(50)}); break;
      case 8: clock.advance(pick(20)); break;
      case 9: (void)s.tick(); break;
      case 10: (void)s.set_get(key(), val()); break;
      case 11: (void)s.get(key()); break;
    }
    if (step % 97 == 0) REQUIRE(accounting_exact(s));
  }
  REQUIRE(accounting_exact(s));
  CHECK(listener_calls > 0);
  s.clear();
  CHECK(s.used_memory() == 0);
  CHECK(s.check_invariants());
}

TEST_CASE("maxmemory: noeviction refuses writes once used memory is above the limit", "[eviction][error]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(100, EvictionPolicy::noeviction)};
  // A write is admitted when used memory plus its own weight fits (as Redis counts the
  // request in used memory): 6 keys = 96, and a 7th would make 112 > 100.
  for (std::uint64_t k = 0; k < 6; ++k) REQUIRE(s.set(k, k * 10) == true);
  CHECK(s.used_memory() == 6 * kW);
  CHECK(s.set(100, 1) == Errc::out_of_memory);
  CHECK(s.set(0, 999) == Errc::out_of_memory);  // overwrites too
  CHECK(s.set_get(0, 999) == Errc::out_of_memory);
  CHECK(s.setex(101, 10, 1) == Errc::out_of_memory);
  CHECK(s.psetex(101, 10, 1) == Errc::out_of_memory);
  CHECK(s.setnx(102, 1) == false);
  CHECK(s.getset(0, 999) == Errc::out_of_memory);
  CHECK(s.getset(105, 1) == Errc::out_of_memory);
  CHECK(s.perform_evictions().ok());  // 96 <= 100: the pre-command check alone passes
  CHECK(s.copy(0, 103) == Errc::out_of_memory);
  int loads = 0;
  CHECK(s.get_or_load(std::uint64_t{104}, [&] { return std::uint64_t(++loads); }) == Errc::out_of_memory);
  CHECK(loads == 0);
  // Nothing changed; reads, TTL changes and deletes still work.
  CHECK(s.size() == 6);
  CHECK(*s.get(0) == 0);
  CHECK(s.get_or_load(std::uint64_t{3}, [&] { return std::uint64_t(++loads); }).value() == s.peek(3));
  CHECK(s.expire(1, 100) == true);
  CHECK(s.persist(1) == true);
  CHECK(s.rename(1, 200).ok());
  CHECK(s.stats().evicted_keys == 0);
  REQUIRE(s.del(200));
  CHECK(s.used_memory() == 5 * kW);
  CHECK(s.perform_evictions().ok());  // at 80 <= 100: nothing to do
  CHECK(s.size() == 5);
  CHECK(s.set(100, 1) == true);  // 80 + 16 <= 100: accepted again
  CHECK(s.set(101, 1) == Errc::out_of_memory);
  CHECK(s.check_invariants());
}

TEST_CASE("maxmemory: as_one_command checks memory once, so its writes are all or nothing", "[eviction][error]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(100, EvictionPolicy::noeviction)};
  for (std::uint64_t k = 0; k < 6; ++k) REQUIRE(s.set(k, k) == true);  // 96 <= 100
  // Three writes in one command: one check (96 <= 100), then every write goes through.
  int calls = 0;
  CHECK(s.as_one_command([&] {
    ++calls;
    for (std::uint64_t k = 10; k < 13; ++k) CHECK(s.set(k, k) == true);
  }).ok());
  CHECK(calls == 1);
  CHECK(s.size() == 9);
  CHECK(s.used_memory() == 9 * kW);
  // Now above the limit: the next command is refused whole, and fn is not called.
  CHECK(s.as_one_command([&] { ++calls; }) == Errc::out_of_memory);
  CHECK(calls == 1);
  CHECK(s.set(20, 20) == Errc::out_of_memory);
  // An exception from fn propagates; the check is back on afterwards.
  REQUIRE(s.del(10));
  REQUIRE(s.del(11));
  REQUIRE(s.del(12));
  CHECK_THROWS_AS(s.as_one_command([&] {
    (void)s.set(30, 30);
    throw std::runtime_error("x");
  }), std::runtime_error);
  CHECK(s.used_memory() == 7 * kW);   // key 30 was written before the throw
  CHECK(s.set(31, 31) == Errc::out_of_memory);  // 112 > 100: checked again
}

TEST_CASE("maxmemory: volatile policies with no volatile key behave like noeviction", "[eviction][error]") {
  for (EvictionPolicy p : {EvictionPolicy::volatile_lru, EvictionPolicy::volatile_lfu, EvictionPolicy::volatile_random,
                           EvictionPolicy::volatile_ttl}) {
    CAPTURE(expiring::to_string(p));
    ManualClock clock{T0};
    IntStore s{clock, limit(100, p)};
    EventLog log;
    log.attach(s);
    for (std::uint64_t k = 0; k < 5; ++k) REQUIRE(s.set(k, k) == true);
    REQUIRE(s.set(50, 50, Ex{100}) == true);  // the only volatile key; 96 bytes
    REQUIRE(s.set(51, 51) == true);           // 96 + 16 > 100: evicts key 50 first, then 6 keys: 96
    CHECK(log.evicted() == std::vector<std::uint64_t>{50});
    CHECK(log.values == std::vector<std::uint64_t>{50});
    CHECK(s.peek(50) == nullptr);
    CHECK(s.set(52, 52) == Errc::out_of_memory);  // no volatile key left
    CHECK(s.size() == 6);
    CHECK(s.stats().evicted_keys == 1);
    CHECK(s.stats().expired_keys == 0);
  }
}

TEST_CASE("maxmemory: allkeys-random keeps memory at the limit, one eviction per key over", "[eviction]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(10 * kW, EvictionPolicy::allkeys_random)};
  EventLog log;
  log.attach(s);
  for (std::uint64_t k = 0; k < 100; ++k) {
    REQUIRE(s.set(k, k + 1000) == true);
    REQUIRE(s.size() <= 10);
  }
  CHECK(s.size() == 10);  // each write makes room for its own weight first
  CHECK(s.stats().evicted_keys == 90);
  CHECK(log.evicted().size() == 90);
  for (std::size_t i = 0; i < log.values.size(); ++i) CHECK(log.values[i] == log.evicted()[i] + 1000);
  CHECK(s.peek(99) != nullptr);  // the key just written is never the victim of its own write
  CHECK(accounting_exact(s));
}

TEST_CASE("maxmemory: volatile-random evicts only keys with a TTL", "[eviction]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(10 * kW, EvictionPolicy::volatile_random)};
  for (std::uint64_t k = 0; k < 5; ++k) REQUIRE(s.set(k, k) == true);
  for (std::uint64_t k = 100; k < 120; ++k) REQUIRE(s.set(k, k, Ex{1000}) == true);
  for (std::uint64_t k = 0; k < 5; ++k) CHECK(s.peek(k) != nullptr);
  CHECK(s.size() == 10);
  CHECK(s.expires_size() == 5);
}

TEST_CASE("maxmemory: volatile-ttl evicts the nearest deadline among the samples", "[eviction]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(5 * kW, EvictionPolicy::volatile_ttl, /*samples=*/64)};
  EventLog log;
  log.attach(s);
  REQUIRE(s.set(1, 1) == true);             // persistent: never a candidate
  REQUIRE(s.set(2, 2, Ex{300}) == true);
  REQUIRE(s.set(3, 3, Ex{100}) == true);
  REQUIRE(s.set(4, 4, Ex{200}) == true);
  REQUIRE(s.set(5, 5, Px{400'000}) == true);  // 5 keys = 80, the limit: no eviction yet
  CHECK(log.evicted().empty());
  REQUIRE(s.set(6, 6) == true);  // evicts 3 (100 s)
  REQUIRE(s.set(7, 7) == true);  // evicts 4 (200 s)
  REQUIRE(s.set(8, 8) == true);  // evicts 2 (300 s)
  REQUIRE(s.set(9, 9) == true);  // evicts 5 (400 s)
  CHECK(log.evicted() == std::vector<std::uint64_t>{3, 4, 2, 5});
  CHECK(s.set(10, 10) == Errc::out_of_memory);
}

TEST_CASE("maxmemory: allkeys-lru evicts the least recently used key", "[eviction]") {
  ManualClock clock{T0};
  Options o = limit(6 * kW, EvictionPolicy::allkeys_lru, /*samples=*/64);  // room for 6 keys
  o.lru_clock_resolution_ms = 1;
  IntStore s{clock, o};
  EventLog log;
  log.attach(s);
  for (std::uint64_t k = 1; k <= 6; ++k) {
    REQUIRE(s.set(k, k) == true);
    clock.advance(10);
  }
  // Access order now: 3, 1, 5, 2 (most recent last); 4 and 6 untouched since written.
  for (std::uint64_t k : {3, 1, 5, 2}) {
    REQUIRE(s.get(k) != nullptr);
    clock.advance(10);
  }
  CHECK(*s.object_idletime_ms(4) == 70);  // written at T0 + 30, now T0 + 100
  REQUIRE(s.set(7, 7) == true);  // evicts 4 (oldest)
  clock.advance(10);
  REQUIRE(s.set(8, 8) == true);  // evicts 6
  clock.advance(10);
  REQUIRE(s.set(9, 9) == true);  // evicts 3
  CHECK(log.evicted() == std::vector<std::uint64_t>{4, 6, 3});
  // exists() and ttl() do not count as accesses (LOOKUP_NOTOUCH); touch() does.
  const std::int64_t idle1 = *s.object_idletime_ms(1);
  clock.advance(5);
  CHECK(s.exists(1));
  CHECK(s.ttl(1) == -1);
  CHECK(*s.object_idletime_ms(1) == idle1 + 5);
  CHECK(s.touch(1));
  CHECK(*s.object_idletime_ms(1) == 0);
  CHECK(s.object_idletime_ms(4) == std::nullopt);
}

TEST_CASE("maxmemory: volatile-lru evicts the LRU key among keys with a TTL", "[eviction]") {
  ManualClock clock{T0};
  Options o = limit(5 * kW, EvictionPolicy::volatile_lru, /*samples=*/64);  // room for 5 keys
  o.lru_clock_resolution_ms = 1;
  IntStore s{clock, o};
  EventLog log;
  log.attach(s);
  REQUIRE(s.set(1, 1) == true);  // oldest, but persistent
  clock.advance(10);
  REQUIRE(s.set(2, 2, Ex{100}) == true);
  clock.advance(10);
  REQUIRE(s.set(3, 3, Ex{100}) == true);
  clock.advance(10);
  REQUIRE(s.set(4, 4, Ex{100}) == true);
  clock.advance(10);
  REQUIRE(s.get(2) != nullptr);
  clock.advance(10);
  REQUIRE(s.set(5, 5) == true);  // 80: at the limit
  REQUIRE(s.set(6, 6) == true);  // makes room: evicts 3
  CHECK(log.evicted() == std::vector<std::uint64_t>{3});
  CHECK(s.peek(1) != nullptr);
}

TEST_CASE("maxmemory: a pooled candidate deleted meanwhile is a ghost, not evicted", "[eviction]") {
  ManualClock clock{T0};
  Options o = limit(4 * kW, EvictionPolicy::allkeys_lru, /*samples=*/64);  // room for 4 keys
  o.lru_clock_resolution_ms = 1;
  IntStore s{clock, o};
  EventLog log;
  log.attach(s);
  for (std::uint64_t k = 1; k <= 4; ++k) {
    REQUIRE(s.set(k, k) == true);
    clock.advance(10);
  }
  REQUIRE(s.set(5, 5) == true);  // evicts 1; 2 and 3 stay in the pool as the next best
  CHECK(log.evicted() == std::vector<std::uint64_t>{1});
  REQUIRE(s.del(2));  // the pool's best candidate is now a ghost
  REQUIRE(s.set(6, 6) == true);  // 48 + 16 <= 64: no eviction
  REQUIRE(s.set(7, 7) == true);  // 64 + 16 > 64: evicts 3, not the ghost 2
  CHECK(log.evicted() == std::vector<std::uint64_t>{1, 3});
  CHECK(s.stats().evicted_keys == 2);
  CHECK(s.size() == 4);
}

TEST_CASE("lfu: new keys start at LFU_INIT_VAL and counters grow logarithmically", "[eviction][lfu]") {
  using expiring::detail::lfu_log_incr;
  // p = 1 / ((counter - 5) * factor + 1); counters up to 5 always grow.
  CHECK(lfu_log_incr(0, 0.999, 10) == 1);
  CHECK(lfu_log_incr(5, 0.999, 10) == 6);
  CHECK(lfu_log_incr(6, 0.0909, 10) == 7);  // p = 1/11 = 0.0909..
  CHECK(lfu_log_incr(6, 0.0910, 10) == 6);
  CHECK(lfu_log_incr(15, 0.0099, 10) == 16);  // p = 1/101
  CHECK(lfu_log_incr(15, 0.0100, 10) == 15);
  CHECK(lfu_log_incr(100, 0.5, 0) == 101);  // factor 0: always
  CHECK(lfu_log_incr(255, 0.0, 10) == 255);

  ManualClock clock{T0};
  Options o = limit(std::size_t{1} << 30, EvictionPolicy::allkeys_lfu);
  IntStore s{clock, o};
  REQUIRE(s.set(1, 1) == true);
  CHECK(s.object_freq(1) == 5u);
  CHECK(s.object_freq(99) == std::nullopt);
  REQUIRE(s.get(1) != nullptr);
  CHECK(s.object_freq(1) == 6u);  // from 5 the increment is certain
  // Redis's documented table for lfu-log-factor 10 (redis.conf): 100 hits -> 10, 1000 -> 18,
  // 100K -> 142. The expectation is 9.6, 20.1 and 148 (sum of 1/p over the steps); the mean
  // of 20 keys is checked for the first two.
  double sum100 = 0, sum1000 = 0;
  for (std::uint64_t k = 10; k < 30; ++k) {
    REQUIRE(s.set(k, k) == true);
    for (int i = 0; i < 100; ++i) REQUIRE(s.get(k) != nullptr);
    sum100 += *s.object_freq(k);
    for (int i = 0; i < 900; ++i) REQUIRE(s.get(k) != nullptr);
    sum1000 += *s.object_freq(k);
  }
  CHECK(sum100 / 20 >= 8.5);
  CHECK(sum100 / 20 <= 11.0);
  CHECK(sum1000 / 20 >= 18.0);
  CHECK(sum1000 / 20 <= 22.0);
  for (int i = 0; i < 100'000; ++i) REQUIRE(s.get(1) != nullptr);
  const auto c100k = *s.object_freq(1);
  CHECK(c100k >= 130);
  CHECK(c100k <= 165);
}

TEST_CASE("lfu: an injected random source decides each increment", "[eviction][lfu]") {
  ManualClock clock{T0};
  Options o = limit(std::size_t{1} << 30, EvictionPolicy::allkeys_lfu);
  std::vector<double> rs;
  std::size_t next = 0;
  o.random = [&] {
    const double r = next < rs.size() ? rs[next++] : 0.999;
    return static_cast<std::uint64_t>(r * 9007199254740992.0) << 11;  // random_unit() == r
  };
  IntStore s{clock, o};
  REQUIRE(s.set(1, 1) == true);
  rs = {0.999, 0.09, 0.0910, 0.999};
  REQUIRE(s.get(1) != nullptr);  // 5 -> 6 (certain)
  REQUIRE(s.get(1) != nullptr);  // 6 -> 7 (0.09 < 1/11)
  REQUIRE(s.get(1) != nullptr);  // 7: p = 1/21, 0.0910 fails
  CHECK(s.object_freq(1) == 7u);
}

TEST_CASE("lfu: counters decay by one per lfu-decay-time minutes of idleness", "[eviction][lfu]") {
  ManualClock clock{T0};
  Options o = limit(std::size_t{1} << 30, EvictionPolicy::allkeys_lfu);
  o.lfu_log_factor = 0;  // every access increments: exact counters
  IntStore s{clock, o};
  REQUIRE(s.set(1, 1) == true);
  for (int i = 0; i < 15; ++i) REQUIRE(s.get(1) != nullptr);
  CHECK(s.object_freq(1) == 20u);
  clock.advance(3 * 60'000);
  CHECK(s.object_freq(1) == 17u);  // read without touching: not stored
  REQUIRE(s.get(1) != nullptr);    // decay 3, then +1
  CHECK(s.object_freq(1) == 18u);
  clock.advance(1000 * 60'000);
  CHECK(s.object_freq(1) == 0u);
  REQUIRE(s.set_lfu_decay_time(0).ok());  // 0: never decays
  CHECK(s.object_freq(1) == 18u);
  REQUIRE(s.set_lfu_decay_time(2).ok());
  clock.advance(3 * 60'000);
  CHECK(s.object_freq(1) == 0u);  // 1003 minutes / 2 periods
}

TEST_CASE("maxmemory: allkeys-lfu evicts the least frequently used key", "[eviction][lfu]") {
  ManualClock clock{T0};
  Options o = limit(5 * kW, EvictionPolicy::allkeys_lfu, /*samples=*/64);  // room for 5 keys
  o.lfu_log_factor = 0;
  IntStore s{clock, o};
  EventLog log;
  log.attach(s);
  for (std::uint64_t k = 1; k <= 4; ++k) REQUIRE(s.set(k, k) == true);
  for (std::uint64_t k = 1; k <= 4; ++k) {
    for (std::uint64_t n = 0; n < 5 - k + (k == 3 ? 10 : 0); ++n) REQUIRE(s.get(k) != nullptr);
  }
  // Counters: 1 -> 9, 2 -> 8, 3 -> 17, 4 -> 6.
  REQUIRE(s.set(5, 5) == true);  // 80: at the limit
  REQUIRE(s.set(6, 6) == true);  // makes room: evicts 5 (still at 5 < 6)
  CHECK(log.evicted() == std::vector<std::uint64_t>{5});
  REQUIRE(s.set(7, 7) == true);  // evicts 6
  REQUIRE(s.get(7) != nullptr);  // 7 -> 6; ties with 4 broken by the pool order
  REQUIRE(s.get(7) != nullptr);  // 7 -> 7
  REQUIRE(s.set(8, 8) == true);  // evicts 4 (6)
  CHECK(log.evicted() == std::vector<std::uint64_t>{5, 6, 4});
}

TEST_CASE("maxmemory: lowering the limit evicts at once, 0 turns tracking off", "[eviction]") {
  ManualClock clock{T0};
  IntStore s{clock, limit(0, EvictionPolicy::allkeys_random)};
  for (std::uint64_t k = 0; k < 20; ++k) REQUIRE(s.set(k, k) == true);
  CHECK(s.used_memory() == 20 * kW);
  s.set_maxmemory(5 * kW);
  CHECK(s.size() == 5);
  CHECK(s.stats().evicted_keys == 15);
  CHECK(s.used_memory() == 5 * kW);
  s.set_maxmemory_policy(EvictionPolicy::noeviction);
  s.set_maxmemory(2 * kW);  // cannot evict: nothing happens, writes are refused
  CHECK(s.size() == 5);
  CHECK(s.set(100, 1) == Errc::out_of_memory);
  s.set_maxmemory(0);
  CHECK(s.set(100, 1) == true);
  CHECK(s.used_memory() == 6 * kW);
}

TEST_CASE("maxmemory: a custom weigher", "[eviction]") {
  ManualClock clock{T0};
  StrStore s{clock, limit(10, EvictionPolicy::allkeys_random)};
  s.set_weigher([](const std::string&, const std::string& v) { return v.size(); });
  REQUIRE(s.set("a", "12345") == true);
  REQUIRE(s.set("b", "123456") == true);  // 5 + 6 > 10: the weigher sees b first, a is evicted
  CHECK(s.used_memory() == 6);
  CHECK(s.stats().evicted_keys == 1);
  REQUIRE(s.set("c", "1") == true);  // 6 + 1 <= 10
  CHECK(s.size() == 2);
  CHECK(s.stats().evicted_keys == 1);
  s.set_weigher({});
  CHECK(s.used_memory() == 4 * sizeof(std::string));
}

TEST_CASE("maxmemory: settings are validated", "[eviction][error]") {
  ManualClock clock{T0};
  IntStore s{clock};
  CHECK(s.set_maxmemory_samples(0) == Errc::out_of_range);
  CHECK(s.set_maxmemory_samples(65) == Errc::out_of_range);
  CHECK(s.set_maxmemory_samples(10).ok());
  CHECK(s.options().maxmemory_samples == 10);
  CHECK(s.set_lfu_log_factor(-1) == Errc::out_of_range);
  CHECK(s.set_lfu_decay_time(-1) == Errc::out_of_range);
  CHECK(s.options().lfu_log_factor == 10);
  CHECK(s.options().lfu_decay_time == 1);
  for (int bad = 0; bad < 4; ++bad) {
    Options o;
    if (bad == 0) o.maxmemory_samples = 0;
    if (bad == 1) o.lfu_log_factor = -1;
    if (bad == 2) o.lfu_decay_time = -1;
    if (bad == 3) o.lru_clock_resolution_ms = 0;
    CHECK_THROWS_AS(IntStore(clock, o), std::invalid_argument);
  }
  CHECK(std::string(expiring::to_string(EvictionPolicy::volatile_ttl)) == "volatile-ttl");
  CHECK(std::string(expiring::to_string(Errc::out_of_memory)) ==
        "command not allowed when used memory > 'maxmemory'");
}

TEST_CASE("lru: the 24-bit clock wraps and idle time survives one wrap", "[eviction]") {
  using namespace expiring::detail;
  CHECK(lru_idle(10, 5) == 5);
  CHECK(lru_idle(3, kLruClockMax - 2) == 3 + 2);
  CHECK(lru_clock(0, 1000) == 0);
  CHECK(lru_clock(999, 1000) == 0);
  CHECK(lru_clock(-1, 1000) == kLruClockMax);  // floor division before 1970
  CHECK(lru_clock(1000, 1000) == ((lru_clock(0, 1000) + 1) & kLruClockMax));
  CHECK(lfu_elapsed(65530, 4) == 9);
  CHECK(lfu_decayed(lfu_pack(100, 20), 103, 1) == 17);
  CHECK(lfu_decayed(lfu_pack(100, 20), 160, 2) == 0);
}

TEST_CASE("maxmemory: access data follows entries moved by deletions, and exists only while used",
          "[eviction]") {
  ManualClock clock{T0};
  Options o = limit(0, EvictionPolicy::allkeys_lru, /*samples=*/64);
  o.lru_clock_resolution_ms = 1;
  IntStore s{clock, o};
  const std::size_t bare = s.memory_usage();
  for (std::uint64_t k = 1; k <= 6; ++k) REQUIRE(s.set(k, k) == true);
  CHECK(s.object_idletime_ms(1) == 0);  // no limit: no access data
  const std::size_t without = s.memory_usage();
  s.set_maxmemory(100 * kW);            // on: every key's access data starts at now
  CHECK(s.memory_usage() > without);
  CHECK(s.check_invariants());
  for (std::uint64_t k = 1; k <= 6; ++k) {
    clock.advance(10);
    REQUIRE(s.get(k) != nullptr);  // key k last used at T0 + 10k
  }
  REQUIRE(s.del(1));  // the last entry (6) moves into entry 0's place
  REQUIRE(s.del(3));
  clock.advance(10);
  CHECK(*s.object_idletime_ms(6) == 10);
  CHECK(*s.object_idletime_ms(2) == 50);
  s.set_maxmemory(4 * kW);  // 4 keys left: 64 bytes, within the limit
  CHECK(s.size() == 4);
  s.set_maxmemory(2 * kW);  // evicts 2 then 4, the least recently used
  CHECK(s.size() == 2);
  CHECK(s.peek(5) != nullptr);
  CHECK(s.peek(6) != nullptr);
  CHECK(s.check_invariants());
  s.set_maxmemory_policy(EvictionPolicy::allkeys_random);  // no access data needed: freed
  CHECK(s.check_invariants());
  s.set_maxmemory(0);
  CHECK(s.check_invariants());
  CHECK(s.memory_usage() >= bare);
}

// Engine issue: entries are addressed by slot, not by a dense 0..size-1 index, so turning an
// LRU limit on must reset the access data of every key wherever its slot is.
TEST_CASE("eviction: turning an LRU limit on resets the access data of every key", "[eviction][engine]") {
  ManualClock clock{T0};
  IntStore s{clock};
  for (std::uint64_t k = 0; k < 5000; ++k) REQUIRE(s.set(k * 0x9E3779B97F4A7C15ull, k).ok());
  clock.advance(3'600'000);
  s.set_maxmemory_policy(EvictionPolicy::allkeys_lru);
  s.set_maxmemory(std::size_t{1} << 30);
  clock.advance(2'000);
  for (std::uint64_t k = 0; k < 5000; ++k) {
    const auto idle = s.object_idletime_ms(k * 0x9E3779B97F4A7C15ull);
    REQUIRE(idle.has_value());
    CHECK(*idle <= 3'000);  // reset at T0 + 1 h, read 2 s later (the LRU clock has 1 s steps)
  }
  CHECK(s.check_invariants());
}
