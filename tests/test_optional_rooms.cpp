// tests/test_optional_rooms.cpp: a store built without Options reaches eviction, access
// tracking and the change feed through pointers its setters install (detail/engine.hpp,
// "optional rooms"). Each setter that can turn a room on must install it: an entry bound, a
// memory limit, an eviction policy, an idle TTL, a feed. Each case starts from a store built
// from a clock alone and checks the room works as it does for a store built with Options.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::ChangeOp;
using expiring::EvictionPolicy;
using expiring::ManualClock;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;

}  // namespace

TEST_CASE("a store without Options has the default options", "[rooms]") {
  ManualClock clock(T0);
  S plain(clock);
  S with(clock, expiring::Options{});
  CHECK(plain.options().hz == with.options().hz);
  CHECK(plain.options().active_expire_effort == with.options().active_expire_effort);
  CHECK(plain.options().maxmemory == 0);
  CHECK(plain.options().max_entries == 0);
  CHECK(plain.options().maxmemory_policy == EvictionPolicy::noeviction);
  CHECK_FALSE(plain.options().seed.has_value());
  CHECK(plain.set("a", "1", 10s) == true);
  CHECK(plain.pttl("a") == 10'000);
}

TEST_CASE("set_max_entries on a store without Options evicts by the policy set later", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  store.set_maxmemory_policy(EvictionPolicy::allkeys_lru);
  REQUIRE(store.set_maxmemory_samples(64).ok());  // 64 draws over 3 keys: c is all but sure to be seen
  store.set_max_entries(3);
  for (const char* k : {"a", "b", "c"}) {
    REQUIRE(store.set(k, "v") == true);
    clock.advance(2s);  // the LRU clock's resolution is 1 s
  }
  // Reads move a and b ahead of c: c is the least recently used.
  CHECK(store.get("a") != nullptr);
  CHECK(store.get("b") != nullptr);
  clock.advance(2s);
  REQUIRE(store.set("d", "v") == true);
  CHECK(store.size() == 3);
  CHECK_FALSE(store.exists("c"));
  CHECK(store.exists("a"));
  CHECK(store.exists("b"));
  CHECK(store.exists("d"));
  CHECK(store.stats().evicted_keys == 1);
}

TEST_CASE("set_max_entries with noeviction refuses new keys on a store without Options", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  store.set_max_entries(1);
  REQUIRE(store.set("a", "1") == true);
  CHECK(store.set("b", "2") == expiring::Errc::out_of_memory);
  CHECK(store.set("a", "3") == true);  // an existing key may still be written
  CHECK(store.size() == 1);
  CHECK(*store.get("a") == "3");
}

TEST_CASE("set_maxmemory on a store without Options evicts down to the limit", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  for (int i = 0; i < 100; ++i) REQUIRE(store.set("key" + std::to_string(i), std::string(100, 'x')) == true);
  store.set_maxmemory_policy(EvictionPolicy::allkeys_random);
  const std::size_t limit = store.used_memory() / 2;
  store.set_maxmemory(limit);
  CHECK(store.used_memory() <= limit);
  CHECK(store.size() < 100);
  CHECK(store.size() > 0);
  const std::size_t before = store.stats().evicted_keys;
  CHECK(before == 100 - store.size());
  REQUIRE(store.set("more", std::string(100, 'y')) == true);
  CHECK(store.used_memory() <= limit);
  CHECK(store.stats().evicted_keys > before);
}

TEST_CASE("set_expire_after_access on a store without Options moves deadlines on reads", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  REQUIRE(store.set_expire_after_access(10s).ok());
  REQUIRE(store.set("k", "v") == true);
  CHECK(store.pttl("k") == 10'000);
  clock.advance(6s);
  CHECK(store.get("k") != nullptr);  // a read: the idle TTL starts again
  CHECK(store.pttl("k") == 10'000);
  clock.advance(6s);
  CHECK(store.get("k") != nullptr);
  clock.advance(10s);  // the deadline itself: still live
  CHECK(store.get("k") != nullptr);
  clock.advance(11s);
  CHECK(store.get("k") == nullptr);
}

TEST_CASE("set_change_feed on a store without Options records every change", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  std::vector<ChangeOp> ops;
  std::vector<std::int64_t> at;
  store.set_change_feed([&](const S::change_type& c) {
    ops.push_back(c.op);
    at.push_back(c.at_ms);
  });
  REQUIRE(store.set("a", "1", 10s) == true);  // SET a 1 PXAT T0+10000
  REQUIRE(store.pexpire("a", 20'000) == true);  // PEXPIREAT
  REQUIRE(store.persist("a") == true);
  REQUIRE(store.del("a") == 1);
  REQUIRE(ops == std::vector<ChangeOp>{ChangeOp::set, ChangeOp::pexpireat, ChangeOp::persist, ChangeOp::del});
  CHECK(at[0] == T0 + 10'000);
  CHECK(at[1] == T0 + 20'000);
  // A lazy expiry is the primary's DEL.
  REQUIRE(store.set("b", "2", 1s) == true);
  clock.advance(2s);
  CHECK(store.get("b") == nullptr);
  CHECK(ops.back() == ChangeOp::del);
}

TEST_CASE("a copy of a store keeps the rooms its original installed", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  store.set_maxmemory_policy(EvictionPolicy::allkeys_lru);
  store.set_max_entries(2);
  std::vector<ChangeOp> ops;
  store.set_change_feed([&](const S::change_type& c) { ops.push_back(c.op); });
  S copy = store;
  REQUIRE(copy.set("a", "1") == true);
  REQUIRE(copy.set("b", "2") == true);
  REQUIRE(copy.set("c", "3") == true);
  CHECK(copy.size() == 2);
  CHECK(copy.stats().evicted_keys == 1);
  CHECK(ops.size() >= 4);  // three SETs and the eviction's DEL, from the copy's shared feed
  CHECK(store.size() == 0);
}

// set() and pexpire() of a live key with a TTL take a short path while nothing listens
// (plain_writes(), a flag the setters keep). Each setter that makes a write need more must
// end the short path, and the setter that undoes it must bring it back: checked by turning
// a listener, a feed and a memory limit on and off between writes to the same live key.
TEST_CASE("the short write paths end while a listener, feed or limit is on, and come back", "[rooms]") {
  ManualClock clock(T0);
  S store(clock);
  REQUIRE(store.set("k", "v0", 10s) == true);
  REQUIRE(store.set("k", "v1", 10s) == true);  // short path: nothing to see
  REQUIRE(store.pexpire("k", 20'000) == true);

  std::vector<expiring::KeyEventCause> seen;
  store.set_listener([&](const S::event_type& e) { seen.push_back(e.cause); },
                     expiring::KeyEventCauses{expiring::KeyEventCause::expire});
  REQUIRE(store.pexpire("k", 30'000) == true);
  REQUIRE(store.set("k", "v2", 10s) == true);
  CHECK(seen == std::vector<expiring::KeyEventCause>{expiring::KeyEventCause::expire, expiring::KeyEventCause::expire});
  store.set_listener(nullptr);
  REQUIRE(store.pexpire("k", 40'000) == true);
  CHECK(seen.size() == 2);

  // A listener of removals only leaves the short path on: no event is owed to it.
  store.set_listener([&](const S::event_type& e) { seen.push_back(e.cause); }, expiring::KeyEventCauses::removals());
  REQUIRE(store.set("k", "v3", 10s) == true);
  CHECK(seen.size() == 2);
  store.set_listener(nullptr);

  std::vector<ChangeOp> ops;
  store.set_change_feed([&](const S::change_type& c) { ops.push_back(c.op); });
  REQUIRE(store.set("k", "v4", 10s) == true);
  REQUIRE(store.pexpire("k", 50'000) == true);
  CHECK(ops == std::vector<ChangeOp>{ChangeOp::set, ChangeOp::pexpireat});
  store.set_change_feed(nullptr);
  REQUIRE(store.set("k", "v5", 10s) == true);
  CHECK(ops.size() == 2);

  // An entry bound under LRU: an overwrite is an access, so the key written last stays.
  REQUIRE(store.del("k") == 1);
  store.set_maxmemory_policy(EvictionPolicy::allkeys_lru);
  REQUIRE(store.set_maxmemory_samples(64).ok());  // 64 draws over 2 keys: b is all but sure to be seen
  store.set_max_entries(2);
  REQUIRE(store.set("a", "1", 100s) == true);
  clock.advance(5s);
  REQUIRE(store.set("b", "2", 100s) == true);
  clock.advance(5s);
  REQUIRE(store.set("a", "3", 100s) == true);  // a is now the most recently used
  clock.advance(5s);
  REQUIRE(store.set("c", "4", 100s) == true);  // evicts b
  CHECK(store.get("b") == nullptr);
  REQUIRE(store.get("a") != nullptr);
  CHECK(*store.get("a") == "3");
  CHECK(store.pttl("a") == 95'000);
  store.set_max_entries(0);
  store.set_maxmemory_policy(EvictionPolicy::noeviction);
  REQUIRE(store.set("b", "5", 10s) == true);
  CHECK(store.size() == 3);
}
