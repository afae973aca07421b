// tests/test_ttl.cpp: TTL / PTTL / EXPIRETIME / PEXPIRETIME, semantics.md Part B §5.A (cases
// 1-11), §2.2 and decision D6 (replies at the end of time).
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "support.hpp"

using expiring::Errc;
using expiring::Ex;
using expiring::ExAt;
using expiring::KeyEventCause;
using expiring::Px;
using expiring::PxAt;
using ttltest::Fx;
using ttltest::kMax;

TEMPLATE_TEST_CASE("ttl: all four queries reply -1 for a key without TTL (case 1)", "[ttl][A]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "hello") == true);
  CHECK(f.store.ttl(x) == -1);
  CHECK(f.store.pttl(x) == -1);
  CHECK(f.store.expiretime(x) == -1);
  CHECK(f.store.pexpiretime(x) == -1);
  CHECK(f.store.size() == 1);
  CHECK(f.store.expires_size() == 0);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "hello");
}

TEMPLATE_TEST_CASE("ttl: all four queries reply -2 for a missing key (case 2)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  CHECK(f.store.ttl(x) == -2);
  CHECK(f.store.pttl(x) == -2);
  CHECK(f.store.expiretime(x) == -2);
  CHECK(f.store.pexpiretime(x) == -2);
  // A query never creates a key.
  CHECK(f.store.size() == 0);
  CHECK(f.events.empty());
  // Another key present does not change the answer.
  REQUIRE(f.store.set(f.key(1), "v", Ex{10}) == true);
  CHECK(f.store.ttl(x) == -2);
  CHECK(f.store.pexpiretime(x) == -2);
}

TEMPLATE_TEST_CASE("ttl: SETEX 10 gives TTL 10 under a frozen clock (case 3)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.setex(x, 10, "somevalue").ok());
  CHECK(f.store.ttl(x) == 10);
  CHECK(f.store.pttl(x) == 10'000);
  CHECK(f.store.pexpiretime(x) == t0 + 10'000);
}

TEMPLATE_TEST_CASE("pttl: SETEX 1 gives PTTL 1000 (case 4)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.setex(x, 1, "somevalue").ok());
  CHECK(f.store.pttl(x) == 1000);
  CHECK(f.store.ttl(x) == 1);
}

TEMPLATE_TEST_CASE("ttl: rounds the remaining milliseconds half up (case 5)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto a = f.key(0), b = f.key(1), c = f.key(2), d = f.key(3);
  REQUIRE(f.store.set(a, "v", Px{499}) == true);
  REQUIRE(f.store.set(b, "v", Px{500}) == true);
  REQUIRE(f.store.set(c, "v", Px{1499}) == true);
  REQUIRE(f.store.set(d, "v", Px{1500}) == true);
  CHECK(f.store.ttl(a) == 0);
  CHECK(f.store.ttl(b) == 1);
  CHECK(f.store.ttl(c) == 1);
  CHECK(f.store.ttl(d) == 2);
  // TTL 0 is not "expired": the key is readable.
  REQUIRE(f.store.get(a) != nullptr);
  CHECK(*f.store.get(a) == "v");
  CHECK(f.store.pttl(a) == 499);
}

TEMPLATE_TEST_CASE("ttl: rounding follows the clock (case 6)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  if (f.at_end()) {
    // EX 100 cannot be represented one minute before the end of time.
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.set(k, "v", Ex{100}); });
    CHECK(f.store.size() == 0);
  }
  const std::int64_t ex = f.sec(100);  // 100 s (10 s at the end of time)
  REQUIRE(f.store.set(k, "v", Ex{ex}) == true);
  f.at(500);
  CHECK(f.store.pttl(k) == ex * 1000 - 500);  // 99500
  CHECK(f.store.ttl(k) == ex);                 // 100
  f.at(501);
  CHECK(f.store.pttl(k) == ex * 1000 - 501);  // 99499
  CHECK(f.store.ttl(k) == ex - 1);             // 99
}

TEMPLATE_TEST_CASE("pttl: a key is alive at its deadline and gone 1 ms later (case 7)", "[ttl][A]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{100}) == true);
  f.at(100);
  CHECK(f.store.pttl(k) == 0);
  CHECK(f.store.ttl(k) == 0);
  REQUIRE(f.store.get(k) != nullptr);
  CHECK(*f.store.get(k) == "v");
  CHECK(f.store.exists(k));
  CHECK(f.store.expiretime(k) == (t0 + 100) / 1000 + ((t0 + 100) % 1000 >= 500 ? 1 : 0));
  CHECK(f.store.pexpiretime(k) == t0 + 100);
  CHECK(f.store.size() == 1);
  f.at(101);
  CHECK(f.store.pttl(k) == -2);
  CHECK(f.store.get(k) == nullptr);
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 1);
}

TEMPLATE_TEST_CASE("expiretime: EXAT 1100 gives EXPIRETIME 1100 and PEXPIRETIME 1100000 (case 8)", "[ttl][A]",
                   TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "somevalue", ExAt{1100}) == true);
  CHECK(f.store.expiretime(x) == 1100);
  CHECK(f.store.pexpiretime(x) == 1'100'000);
  CHECK(f.store.ttl(x) == 100);
}

TEMPLATE_TEST_CASE("pexpiretime: PXAT 1100000 gives PEXPIRETIME 1100000 (case 9)", "[ttl][A]",
                   TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "somevalue", PxAt{1'100'000}) == true);
  CHECK(f.store.pexpiretime(x) == 1'100'000);
  CHECK(f.store.expiretime(x) == 1100);
  CHECK(f.store.pttl(x) == 100'000);
}

TEMPLATE_TEST_CASE("expiretime: rounds half up to the second (case 10)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.pexpireat(k, 1'010'500) == true);
  CHECK(f.store.expiretime(k) == 1011);
  CHECK(f.store.pexpireat(k, 1'010'499) == true);
  CHECK(f.store.expiretime(k) == 1010);
  CHECK(f.store.pexpiretime(k) == 1'010'499);
  // TTL rounds the same way: 10,499 ms -> 10 s; 10,500 ms -> 11 s.
  CHECK(f.store.ttl(k) == 10);
  CHECK(f.store.pexpireat(k, 1'010'500) == true);
  CHECK(f.store.ttl(k) == 11);
}

TEMPLATE_TEST_CASE("ttl: a query reclaims a stale key (case 11)", "[ttl][A]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{10}) == true);
  f.take_events();
  f.at(11);
  CHECK(f.store.size() == 1);  // DBSIZE counts the stale key until something touches it
  CHECK(f.store.ttl(k) == -2);
  CHECK(f.store.size() == 0);
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expired, k}}));
}

TEMPLATE_TEST_CASE("ttl: PTTL, EXPIRETIME and PEXPIRETIME reclaim a stale key too (case 11)", "[ttl][A]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto a = f.key(0), b = f.key(1), c = f.key(2);
  REQUIRE(f.store.set(a, "v", Px{10}) == true);
  REQUIRE(f.store.set(b, "v", Px{10}) == true);
  REQUIRE(f.store.set(c, "v", Px{10}) == true);
  f.at(11);
  CHECK(f.store.size() == 3);
  CHECK(f.store.pttl(a) == -2);
  CHECK(f.store.size() == 2);
  CHECK(f.store.expiretime(b) == -2);
  CHECK(f.store.size() == 1);
  CHECK(f.store.pexpiretime(c) == -2);
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 3);
}

// semantics.md D6: after PEXPIREAT k INT64_MAX, redis-server 7.0.15 replies EXPIRETIME
// 9223372036854776 and PEXPIRETIME 9223372036854775807; TTL rounds half up without overflowing.
TEMPLATE_TEST_CASE("pexpiretime: PEXPIREAT INT64_MAX replies as semantics.md D6 at every start", "[ttl][A][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.pexpireat(k, kMax) == true);
  CHECK(f.store.pexpiretime(k) == kMax);
  CHECK(f.store.expiretime(k) == 9'223'372'036'854'776);
  const std::int64_t remaining = kMax - t0;
  CHECK(f.store.pttl(k) == remaining);
  CHECK(f.store.ttl(k) == remaining / 1000 + (remaining % 1000 >= 500 ? 1 : 0));
  CHECK(f.store.expires_size() == 1);
}

TEMPLATE_TEST_CASE("pexpiretime: a deadline of INT64_MAX one minute before the end of time", "[ttl][A][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kStartEnd};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  REQUIRE(f.store.pexpireat(k, kMax) == true);
  CHECK(f.store.pttl(k) == 60'000);
  CHECK(f.store.ttl(k) == 60);
  CHECK(f.store.expiretime(k) == 9'223'372'036'854'776);
  CHECK(f.store.pexpiretime(k) == 9'223'372'036'854'775'807);
  // Half a minute later.
  f.at(30'000);
  CHECK(f.store.pttl(k) == 30'000);
  CHECK(f.store.ttl(k) == 30);
  // 499 ms left rounds to 0 s, 500 ms to 1 s.
  f.at(59'501);
  CHECK(f.store.pttl(k) == 499);
  CHECK(f.store.ttl(k) == 0);
  f.at(59'500);
  CHECK(f.store.ttl(k) == 1);
  // The clock's last reading: the key is alive at its deadline, with PTTL 0.
  f.clock.set(kMax);
  CHECK(f.store.pttl(k) == 0);
  CHECK(f.store.ttl(k) == 0);
  CHECK(f.store.expiretime(k) == 9'223'372'036'854'776);
  CHECK(f.store.pexpiretime(k) == kMax);
  REQUIRE(f.store.get(k) != nullptr);
  CHECK(*f.store.get(k) == "v");
  // The clock cannot pass INT64_MAX, so the key can never go stale.
  f.clock.advance(1);
  CHECK(f.clock.now_ms() == kMax);
  CHECK(f.store.exists(k));
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("ttl: EXPIREAT of the last representable second replies exactly", "[ttl][A][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  // INT64_MAX / 1000 = 9223372036854775 s is the last second whose milliseconds fit.
  CHECK(f.store.expireat(k, 9'223'372'036'854'775) == true);
  CHECK(f.store.pexpiretime(k) == 9'223'372'036'854'775'000);
  CHECK(f.store.expiretime(k) == 9'223'372'036'854'775);
  CHECK(f.store.pttl(k) == 9'223'372'036'854'775'000 - t0);
  // One second more overflows, and changes nothing.
  f.expect_error_unchanged(k, Errc::invalid_expire_time,
                           [&] { return f.store.expireat(k, 9'223'372'036'854'776); });
  CHECK(f.store.pexpiretime(k) == 9'223'372'036'854'775'000);
}
