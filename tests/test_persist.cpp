// tests/test_persist.cpp: PERSIST, semantics.md Part B §5.D (cases 60-63) and §2.3.
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "support.hpp"

using expiring::ExpireFlags;
using expiring::KeyEventCause;
using expiring::Px;
using expiring::PxAt;
using ttltest::Fx;
using ttltest::kMax;

TEMPLATE_TEST_CASE("persist: undoes an EXPIRE (case 60)", "[persist][D]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "foo") == true);
  REQUIRE(f.store.expire(x, 50) == true);  // 50 s fits at every start
  CHECK(f.store.ttl(x) == 50);
  CHECK(f.store.expires_size() == 1);
  f.take_events();
  CHECK(f.store.persist(x) == true);
  CHECK(f.store.ttl(x) == -1);
  CHECK(f.store.pexpiretime(x) == -1);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "foo");
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.size() == 1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::persist, x}}));
  // The key now outlives its old deadline.
  f.at(50'001);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "foo");
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("persist: replies 0 for a key without TTL and for a missing key (case 61)", "[persist][D]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0), nokeyatall = f.key(1);
  REQUIRE(f.store.set(x, "foo") == true);
  f.take_events();
  const ttltest::Snapshot before = f.snapshot(x);
  CHECK(f.store.persist(x) == false);
  CHECK(f.store.persist(nokeyatall) == false);
  // Nothing changed, no event, no statistic (PERSIST is a write lookup).
  CHECK(f.snapshot(x) == before);
  CHECK(f.store.size() == 1);
  CHECK(f.events.empty());
}

TEMPLATE_TEST_CASE("persist: a stale key replies 0 and is reclaimed (case 62)", "[persist][D]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{10}) == true);
  f.take_events();
  f.at(11);
  CHECK(f.store.persist(k) == false);
  CHECK(f.store.size() == 0);  // reclaimed by PERSIST's lookup, as an expiry
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.store.stats().keyspace_misses == 0);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expired, k}}));
  CHECK_FALSE(f.store.exists(k));
}

TEMPLATE_TEST_CASE("persist: a second PERSIST replies 0 (case 63)", "[persist][D]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", expiring::Ex{10}) == true);
  f.take_events();
  CHECK(f.store.persist(k) == true);
  CHECK(f.store.persist(k) == false);
  CHECK(f.store.ttl(k) == -1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::persist, k}}));
}

TEMPLATE_TEST_CASE("persist: a key at its deadline is still alive and can be kept", "[persist][D]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{100}) == true);
  f.at(100);  // now == deadline: alive (semantics.md D1)
  CHECK(f.store.persist(k) == true);
  f.at(101);
  CHECK(f.store.ttl(k) == -1);
  CHECK(f.store.exists(k));
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("persist: after PERSIST the key has no TTL for the flags either", "[persist][D]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{30'000}) == true);
  REQUIRE(f.store.persist(k) == true);
  // No TTL is infinite: XX and GT refuse, NX and LT accept.
  CHECK(f.store.pexpire(k, 40'000, ExpireFlags::XX) == false);
  CHECK(f.store.pexpire(k, 40'000, ExpireFlags::GT) == false);
  CHECK(f.store.ttl(k) == -1);
  CHECK(f.store.pexpire(k, 40'000, ExpireFlags::NX) == true);
  CHECK(f.store.pttl(k) == 40'000);
  REQUIRE(f.store.persist(k) == true);
  CHECK(f.store.pexpire(k, 50'000, ExpireFlags::LT) == true);
  CHECK(f.store.pttl(k) == 50'000);
}

TEMPLATE_TEST_CASE("persist: removes a TTL of INT64_MAX", "[persist][D][D6]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", PxAt{kMax}) == true);
  CHECK(f.store.pexpiretime(k) == kMax);
  CHECK(f.store.expires_size() == 1);
  // A deadline of INT64_MAX is still a TTL: PERSIST removes it.
  CHECK(f.store.persist(k) == true);
  CHECK(f.store.pexpiretime(k) == -1);
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.persist(k) == false);
}

TEMPLATE_TEST_CASE("persist: touches only its key among many", "[persist][D]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  for (int i = 0; i < 64; ++i) REQUIRE(f.store.set(f.key(i), std::to_string(i), Px{1000 + i}) == true);
  for (int i = 0; i < 64; i += 2) CHECK(f.store.persist(f.key(i)) == true);
  CHECK(f.store.expires_size() == 32);
  CHECK(f.store.check_invariants());
  for (int i = 0; i < 64; ++i) {
    CAPTURE(i);
    CHECK(f.store.pttl(f.key(i)) == (i % 2 == 0 ? -1 : 1000 + i));
  }
  f.at(2000);  // every odd key is stale now
  for (int i = 0; i < 64; ++i) {
    CAPTURE(i);
    CHECK(f.store.persist(f.key(i)) == false);
  }
  CHECK(f.store.size() == 32);
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.stats().expired_keys == 32);
  CHECK(f.store.check_invariants());
}
