// tests/test_getex_getdel.cpp: GETEX (semantics.md B §5 H, cases 109-124) and GETDEL (§5 I, cases
// 125-127) through the typed API, over three key spellings (tests/support.hpp).
//
// Command-layer only: 114 (syntax errors: the typed API cannot spell them), 116 (arity),
// 121 and the WRONGTYPE half of 127 (the store holds one value type).
// GETEX reads before it validates (Redis order), so an erroring GETEX on a live key counts
// one keyspace hit and changes nothing else.
#include <expiring/expiring.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using namespace support;

// ---- H. GETEX --------------------------------------------------------------------------

TEMPLATE_TEST_CASE("getex: EX, PX, EXAT, PXAT set the TTL and return the value (cases 109-111)", "[getex][spec-H]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar") == true);
  auto r = store.getex(k("foo"), Ex{10});  // 109
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == 10);
  r = store.getex(k("foo"), Px{10000});  // 110
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.pttl(k("foo")) == 10000);
  CHECK(store.set(k("foo"), "bar") == true);
  r = store.getex(k("foo"), ExAt{1010});  // 111
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == 10);
  r = store.getex(k("foo"), PxAt{1010000});
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.pttl(k("foo")) == 10000);
  // A later call replaces the deadline, even with an earlier one.
  r = store.getex(k("foo"), Px{5});
  REQUIRE(r.ok());
  CHECK(store.pexpiretime(k("foo")) == T0 + 5);
  CHECK(show(store.get(k("foo"))) == "bar");  // the value itself never changes
  CHECK(store.expires_size() == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("getex: PERSIST removes the TTL, no option leaves it (cases 112, 113, 124)", "[getex][spec-H]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar", Ex{10}) == true);
  CHECK(store.ttl(k("foo")) == 10);
  auto r = store.getex(k("foo"));  // 113
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == 10);
  r = store.getex(k("foo"), Persist{});  // 112
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == -1);
  CHECK(store.expires_size() == 0);
  r = store.getex(k("foo"), Persist{});  // 124: nothing to remove
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == -1);
  r = store.getex(k("foo"));
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(store.ttl(k("foo")) == -1);
  CHECK(store.size() == 1);
}

TEMPLATE_TEST_CASE("getex: repeated calls, last deadline wins (case 123)", "[getex][spec-H]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar") == true);
  CHECK(show(*store.getex(k("foo"), Ex{10})) == "bar");
  CHECK(show(*store.getex(k("foo"), Ex{20})) == "bar");
  CHECK(store.ttl(k("foo")) == 20);
}

TEMPLATE_TEST_CASE("getex: a stale or missing key gives nil (cases 115, 120)", "[getex][spec-H]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar", Px{1}) == true);
  clock.set(T0 + 1);  // at the deadline: alive
  CHECK(show(*store.getex(k("foo"))) == "bar");
  clock.set(T0 + 2);
  auto r = store.getex(k("foo"));  // 115
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(show(store.get(k("foo"))) == "(nil)");
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.size() == 0);

  // 120: a missing key short-circuits validation; nothing is created.
  const std::vector<expiring::GetExExpiry> options = {Ex{0},      Px{0},      ExAt{0}, PxAt{0}, Px{-1}, Ex{kMax},
                                                      Px{kMax},   ExAt{kMin}, PxAt{1}, Persist{}, {}};
  for (std::size_t i = 0; i < options.size(); ++i) {
    CAPTURE(i);
    r = store.getex(k("missing"), options[i]);
    REQUIRE(r.ok());
    CHECK(show(*r) == "(nil)");
  }
  CHECK(store.size() == 0);
  CHECK(store.stats().keyspace_misses == 2 + options.size());
  // ... and so does a stale key, which is reclaimed.
  CHECK(store.set(k("s"), "v", Px{10}) == true);
  clock.set(T0 + 13);
  r = store.getex(k("s"), Ex{0});
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 2);
}

TEMPLATE_TEST_CASE("getex: an invalid expire time returns no value and changes nothing (cases 117-119, D5, D6)",
                   "[getex][spec-H][errors]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar") == true);
  CHECK(store.set(k("vol"), "v", Ex{100}) == true);
  CHECK(store.set(k("other"), "o", Px{5}) == true);
  const std::vector<expiring::GetExExpiry> bad = {
      Ex{10000000000000000},   // 117
      Ex{-9999999999999999},   // 118
      Ex{0},                   // 119
      PxAt{0},                 // 119
      Px{0},   ExAt{0},  Px{-1}, Ex{-1}, ExAt{-5}, PxAt{kMin},
      Ex{kMax / 1000 + 1},     // seconds conversion overflows
      ExAt{kMax / 1000 + 1},   //
      Px{kMax},                // addition overflows
      Px{kMax - T0 + 1},       //
      Ex{9223372036854775},    //
  };
  for (const char* name : {"foo", "vol"}) {
    CAPTURE(name);
    for (std::size_t i = 0; i < bad.size(); ++i) {
      CAPTURE(i);
      auto expected = snapshot(store);
      expected.hits += 1;  // the read lookup happened
      CHECK(store.getex(k(name), bad[i]) == Errc::invalid_expire_time);
      CHECK(snapshot(store) == expected);
    }
  }
  CHECK(store.ttl(k("foo")) == -1);  // 117
  CHECK(store.ttl(k("vol")) == 100);
  CHECK(show(store.get(k("foo"))) == "bar");
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("getex: the largest deadlines are accepted", "[getex][spec-H]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v") == true);
  CHECK(show(*store.getex(k("k"), Px{kMax - T0})) == "v");
  CHECK(store.pexpiretime(k("k")) == kMax);
  CHECK(show(*store.getex(k("k"), ExAt{kMax / 1000})) == "v");
  CHECK(store.pexpiretime(k("k")) == kMax / 1000 * 1000);
  CHECK(show(*store.getex(k("k"), PxAt{kMax})) == "v");
  CHECK(store.expiretime(k("k")) == 9223372036854776);
}

TEMPLATE_TEST_CASE("getex: a past EXAT/PXAT returns the value, then deletes (case 122, D3)", "[getex][spec-H]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  const std::vector<expiring::GetExExpiry> past = {PxAt{999000}, PxAt{T0}, ExAt{999}, ExAt{T0 / 1000}, PxAt{1}};
  CHECK(store.set(k("keep"), "k", Ex{100}) == true);
  for (std::size_t i = 0; i < past.size(); ++i) {
    CAPTURE(i);
    CHECK(store.set(k("foo"), "bar", Ex{100}) == true);
    auto r = store.getex(k("foo"), past[i]);
    REQUIRE(r.ok());
    CHECK(show(*r) == "bar");
    CHECK(store.exists(k("foo")) == false);
    CHECK(store.size() == 1);
    CHECK(store.expires_size() == 1);
  }
  CHECK(store.stats().expired_keys == 0);  // deletions, not expiries
  // PXAT now + 1 is a future deadline: the key stays.
  CHECK(store.set(k("foo"), "bar") == true);
  CHECK(show(*store.getex(k("foo"), PxAt{T0 + 1})) == "bar");
  CHECK(store.pttl(k("foo")) == 1);
  CHECK(store.ttl(k("keep")) == 100);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("getex: counts one keyspace hit or miss", "[getex][spec-H][stats]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1") == true);
  CHECK(store.getex(k("a"), Ex{5}).ok());
  CHECK(store.getex(k("a"), Persist{}).ok());
  CHECK(store.getex(k("a")).ok());
  CHECK(store.getex(k("b")).ok());
  const expiring::Stats st = store.stats();
  CHECK(st.keyspace_hits == 3);
  CHECK(st.keyspace_misses == 1);
  CHECK(st.expired_keys == 0);
}

TEST_CASE("getex: one minute before INT64_MAX", "[getex][clock]") {
  const std::int64_t start = kMax - 60000;
  ManualClock clock{start};
  StoreOf<StringKeys> store{clock};
  CHECK(store.set("k", "v") == true);
  auto expected = snapshot(store);
  expected.hits += 2;
  CHECK(store.getex("k", Ex{61}) == Errc::invalid_expire_time);
  CHECK(store.getex("k", Px{60001}) == Errc::invalid_expire_time);
  CHECK(snapshot(store) == expected);
  CHECK(show(*store.getex("k", Ex{60})) == "v");
  CHECK(store.pexpiretime("k") == kMax);
  CHECK(show(*store.getex("k", PxAt{start})) == "v");  // == now: deleted
  CHECK(store.size() == 0);
}

// ---- I. GETDEL -------------------------------------------------------------------------

TEMPLATE_TEST_CASE("getdel: returns the value and deletes (cases 125, 126)", "[getdel][spec-I]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar") == true);
  CHECK(store.set(k("other"), "o", Ex{50}) == true);
  CHECK(show(store.getdel(k("foo"))) == "bar");  // 125
  CHECK(show(store.getdel(k("foo"))) == "(nil)");
  CHECK(store.size() == 1);
  CHECK(store.set(k("k"), "v", Ex{100}) == true);  // 126
  CHECK(store.expires_size() == 2);
  CHECK(show(store.getdel(k("k"))) == "v");
  CHECK(store.ttl(k("k")) == -2);
  CHECK(store.expires_size() == 1);
  CHECK(store.size() == 1);
  CHECK(show(store.get(k("other"))) == "o");
  CHECK(store.ttl(k("other")) == 50);
  CHECK(store.stats().expired_keys == 0);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("getdel: a stale key gives nil and is reclaimed as an expiry (case 127)", "[getdel][spec-I]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  clock.set(T0 + 10);
  CHECK(store.set(k("j"), "w", Px{1}) == true);
  CHECK(show(store.getdel(k("j"))) == "w");  // at now + 1: alive
  clock.set(T0 + 11);
  CHECK(store.size() == 1);
  CHECK(show(store.getdel(k("k"))) == "(nil)");
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.stats().keyspace_hits == 1);
  CHECK(store.stats().keyspace_misses == 1);
}

TEMPLATE_TEST_CASE("getdel: at the deadline the key is still returned", "[getdel][spec-I]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{100}) == true);
  clock.set(T0 + 100);
  CHECK(show(store.getdel(k("k"))) == "v");
  CHECK(store.size() == 0);
  CHECK(store.expires_size() == 0);
  CHECK(store.stats().expired_keys == 0);
}
