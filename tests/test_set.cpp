// tests/test_set.cpp: SET (semantics.md B §5 F, cases 74-101) and SETEX / PSETEX / GETSET / SETNX
// (§5 G, cases 102-107) through the typed API, over three key spellings (tests/support.hpp).
//
// Command-layer only (string parsing; no typed equivalent to write): 81 (EX 1.5), 83 and 84
// (syntax errors, conflicting options: the typed API cannot express them, see the
// static_asserts below), 85 (repeated options), 94 (WRONGTYPE), 108 (MSET).
// Decision D4 (Valkey): SET with EXAT/PXAT <= now deletes an existing key and stores nothing.
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
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using namespace support;

// 83/84/114: what Redis rejects with "syntax error" cannot be written in the typed API.
static_assert(!std::is_constructible_v<expiring::SetExpiry, expiring::Persist>, "SET has no PERSIST");
static_assert(!std::is_constructible_v<expiring::GetExExpiry, expiring::KeepTtl>, "GETEX has no KEEPTTL");
static_assert(!std::is_convertible_v<std::int64_t, expiring::SetExpiry>, "a bare number is not an expiry");

// ---- F. SET ----------------------------------------------------------------------------

TEMPLATE_TEST_CASE("set: a plain SET removes the TTL (case 74)", "[set][spec-F]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar", Ex{100}) == true);
  CHECK(store.ttl(k("foo")) == 100);
  CHECK(store.expires_size() == 1);
  CHECK(store.set(k("foo"), "bar") == true);
  CHECK(store.ttl(k("foo")) == -1);
  CHECK(store.pexpiretime(k("foo")) == -1);
  CHECK(store.expires_size() == 0);
  CHECK(store.size() == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: KEEPTTL keeps a live key's TTL (cases 75, 76)", "[set][spec-F]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar", Ex{100}) == true);
  CHECK(store.set(k("foo"), "bar2", KeepTtl{}) == true);
  CHECK(store.ttl(k("foo")) == 100);
  CHECK(store.pexpiretime(k("foo")) == T0 + 100000);
  CHECK(show(store.get(k("foo"))) == "bar2");
  // The deadline is absolute: KEEPTTL later keeps the same deadline, not the same TTL.
  clock.set(T0 + 40000);
  CHECK(store.set(k("foo"), "bar3", KeepTtl{}) == true);
  CHECK(store.pexpiretime(k("foo")) == T0 + 100000);
  CHECK(store.ttl(k("foo")) == 60);

  // 76: KEEPTTL on a key without TTL leaves it without TTL; on a missing key, none either.
  CHECK(store.set(k("k"), "v") == true);
  CHECK(store.set(k("k"), "w", KeepTtl{}) == true);
  CHECK(store.ttl(k("k")) == -1);
  CHECK(show(store.get(k("k"))) == "w");
  CHECK(store.set(k("new"), "x", KeepTtl{}) == true);
  CHECK(store.ttl(k("new")) == -1);
  CHECK(store.expires_size() == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: KEEPTTL does not revive a stale TTL (case 77, D11)", "[set][spec-F]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{100}) == true);
  clock.set(T0 + 100);  // at the deadline the key is alive: KEEPTTL keeps it
  CHECK(store.set(k("k"), "v2", KeepTtl{}) == true);
  CHECK(store.pttl(k("k")) == 0);
  clock.set(T0 + 101);
  CHECK(store.size() == 1);
  CHECK(store.set(k("k"), "w", KeepTtl{}) == true);
  CHECK(store.stats().expired_keys == 1);  // the stale key was reclaimed as an expiry first
  CHECK(store.ttl(k("k")) == -1);
  CHECK(show(store.get(k("k"))) == "w");
  CHECK(store.expires_size() == 0);
  CHECK(store.size() == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: EX/PX/EXAT/PXAT set the deadline (cases 95, 96)", "[set][spec-F]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "bar", Ex{10}) == true);
  CHECK(store.set(k("b"), "bar", Px{10000}) == true);
  CHECK(store.set(k("c"), "bar", ExAt{1010}) == true);
  CHECK(store.set(k("d"), "bar", PxAt{1010000}) == true);
  for (const char* name : {"a", "b", "c", "d"}) {
    CAPTURE(name);
    CHECK(store.ttl(k(name)) == 10);
    CHECK(store.pttl(k(name)) == 10000);
    CHECK(store.pexpiretime(k(name)) == 1010000);
    CHECK(store.expiretime(k(name)) == 1010);
  }
  CHECK(store.expires_size() == 4);

  // 96: XX with PX on an existing key.
  CHECK(store.set(k("foo"), "val") == true);
  CHECK(store.set(k("foo"), "bar", Px{10000}, SetCond::XX) == true);
  CHECK(store.ttl(k("foo")) == 10);
  CHECK(show(store.get(k("foo"))) == "bar");
  // Overwriting with another deadline replaces it (even a shorter one).
  CHECK(store.set(k("foo"), "baz", Px{5}) == true);
  CHECK(store.pttl(k("foo")) == 5);
  CHECK(store.expires_size() == 5);
  CHECK(store.check_invariants());
}

// set() of a live key that has a TTL, with nothing optional on, takes a short path (probe,
// value, deadline): the deadline must move in the expiry index too (the time-ordered one
// moves it between buckets), earlier or later, so that tick() reclaims each key at its new
// time and never before; with a listener the same writes raise `set` and `expire` as before.
TEMPLATE_TEST_CASE("set: re-timing live keys moves them in the expiry index earlier and later", "[set][spec-F]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::make;
  constexpr int kKeys = 40;
  for (int i = 0; i < kKeys; ++i) REQUIRE(store.set(k(i), "a", Px{10'000}) == true);
  // Even keys move earlier (to 1 s), odd keys later (to 100 s); values change too.
  for (int i = 0; i < kKeys; ++i) REQUIRE(store.set(k(i), "b", Px{i % 2 == 0 ? 1'000 : 100'000}) == true);
  CHECK(store.check_invariants());
  for (int i = 0; i < kKeys; ++i) {
    CHECK(store.pexpiretime(k(i)) == T0 + (i % 2 == 0 ? 1'000 : 100'000));
    CHECK(show(store.peek(k(i))) == "b");
  }
  // Past 1 s, before the old 10 s deadline: ticks reclaim the even keys.
  clock.set(T0 + 2'000);
  for (int n = 0; n < 200 && store.size() > kKeys / 2; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == kKeys / 2);
  CHECK(store.stats().expired_keys == kKeys / 2);
  // Past the old 10 s deadline: nothing more goes.
  clock.set(T0 + 20'000);
  for (int n = 0; n < 50; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == kKeys / 2);
  for (int i = 1; i < kKeys; i += 2) CHECK(store.pexpiretime(k(i)) == T0 + 100'000);
  CHECK(store.check_invariants());
  // With a listener, the same re-timing raises `set` then `expire` for each key.
  std::vector<expiring::KeyEventCause> causes;
  store.set_listener([&](const auto& ev) { causes.push_back(ev.cause); });
  REQUIRE(store.set(k(1), "c", Px{50'000}) == true);
  CHECK(causes == std::vector<expiring::KeyEventCause>{expiring::KeyEventCause::set, expiring::KeyEventCause::expire});
  CHECK(store.pexpiretime(k(1)) == T0 + 20'000 + 50'000);
  clock.set(T0 + 100'001);
  for (int n = 0; n < 200 && store.size() > 0; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == 0);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: NX and XX (cases 86, 87, 101)", "[set][spec-F]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  // 86
  CHECK(store.set(k("foo"), "1", SetCond::NX) == true);
  CHECK(store.set(k("foo"), "2", SetCond::NX) == false);
  CHECK(show(store.get(k("foo"))) == "1");
  // 87
  CHECK(store.set(k("bar"), "1", SetCond::XX) == false);
  CHECK(store.exists(k("bar")) == false);
  CHECK(store.size() == 1);
  CHECK(store.set(k("bar"), "bar") == true);
  CHECK(store.set(k("bar"), "2", SetCond::XX) == true);
  CHECK(show(store.get(k("bar"))) == "2");
  // A refused NX leaves the TTL alone.
  CHECK(store.set(k("t"), "v", Ex{100}) == true);
  CHECK(store.set(k("t"), "w", Ex{5}, SetCond::NX) == false);
  CHECK(store.ttl(k("t")) == 100);
  CHECK(show(store.get(k("t"))) == "v");
  // 101: a stale key counts as absent for XX (and is reclaimed), and for NX.
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  CHECK(store.set(k("n"), "v", Px{10}) == true);
  clock.set(T0 + 11);
  CHECK(store.set(k("k"), "w", SetCond::XX) == false);
  CHECK(store.exists(k("k")) == false);
  CHECK(store.set(k("n"), "w", SetCond::NX) == true);
  CHECK(show(store.get(k("n"))) == "w");
  CHECK(store.ttl(k("n")) == -1);
  CHECK(store.stats().expired_keys == 2);
  CHECK(store.size() == 4);  // foo, bar, t, n
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: SET GET returns the previous value (cases 88-93, 97)", "[set][spec-F]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  // 88
  CHECK(store.set(k("foo"), "bar") == true);
  auto r = store.set_get(k("foo"), "bar2");
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(show(store.get(k("foo"))) == "bar2");
  // 89
  r = store.set_get(k("new"), "bar");
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(show(store.get(k("new"))) == "bar");
  // 90
  r = store.set_get(k("foo"), "baz", {}, SetCond::XX);
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar2");
  CHECK(show(store.get(k("foo"))) == "baz");
  // 91
  r = store.set_get(k("nx"), "bar", {}, SetCond::XX);
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(show(store.get(k("nx"))) == "(nil)");
  CHECK(store.size() == 2);
  // 92
  r = store.set_get(k("n2"), "bar", {}, SetCond::NX);
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(show(store.get(k("n2"))) == "bar");
  // 93: NX refuses the write, the old value is still returned.
  r = store.set_get(k("n2"), "baz", {}, SetCond::NX);
  REQUIRE(r.ok());
  CHECK(show(*r) == "bar");
  CHECK(show(store.get(k("n2"))) == "bar");
  // 97: GET with an expiry replaces the TTL.
  CHECK(store.set(k("k"), "v", Ex{100}) == true);
  r = store.set_get(k("k"), "w", Ex{5});
  REQUIRE(r.ok());
  CHECK(show(*r) == "v");
  CHECK(store.ttl(k("k")) == 5);
  // GET without an expiry removes it; with KEEPTTL keeps it.
  r = store.set_get(k("k"), "x", KeepTtl{});
  REQUIRE(r.ok());
  CHECK(show(*r) == "w");
  CHECK(store.ttl(k("k")) == 5);
  r = store.set_get(k("k"), "y");
  REQUIRE(r.ok());
  CHECK(show(*r) == "x");
  CHECK(store.ttl(k("k")) == -1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: SET GET counts one keyspace hit or miss", "[set][spec-F][stats]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1") == true);  // plain SET is a write lookup: no hit, no miss
  CHECK(store.set(k("a"), "2", Ex{10}) == true);
  CHECK(store.set(k("a"), "3", SetCond::XX) == true);
  CHECK(store.stats().keyspace_hits == 0);
  CHECK(store.stats().keyspace_misses == 0);
  CHECK(store.set_get(k("a"), "4").ok());
  CHECK(store.stats().keyspace_hits == 1);
  CHECK(store.stats().keyspace_misses == 0);
  CHECK(store.set_get(k("b"), "4", {}, SetCond::XX).ok());
  CHECK(store.stats().keyspace_hits == 1);
  CHECK(store.stats().keyspace_misses == 1);
  // A stale key: a miss, and reclaimed as an expiry (case 72: a stale key has no old value).
  CHECK(store.set(k("s"), "old", Px{10}) == true);
  clock.set(T0 + 11);
  auto r = store.set_get(k("s"), "v");
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(store.stats().keyspace_misses == 2);
  CHECK(store.stats().keyspace_hits == 1);
  CHECK(store.stats().expired_keys == 1);
  CHECK(show(store.get(k("s"))) == "v");
  CHECK(store.stats().keyspace_hits == 2);
  CHECK(store.peek(k("s")) != nullptr);  // the quiet side door counts nothing
  CHECK(store.stats().keyspace_hits == 2);
}

TEMPLATE_TEST_CASE("set: a non-positive expiry is an error and changes nothing (case 80, D5)", "[set][spec-F][errors]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("live"), "v", Ex{100}) == true);
  CHECK(store.set(k("plain"), "p") == true);
  CHECK(store.set(k("stale"), "s", Px{5}) == true);
  clock.set(T0 + 6);
  const auto before = snapshot(store);
  REQUIRE(before.size == 3);

  const std::vector<expiring::SetExpiry> bad = {Ex{0},   Px{0},    ExAt{0},   PxAt{0},   Px{-1},
                                                Ex{-1},  ExAt{-1}, PxAt{-1},  Ex{kMin}, Px{kMin},
                                                ExAt{kMin}, PxAt{kMin}, Ex{-9999999999999999}};
  for (std::size_t i = 0; i < bad.size(); ++i) {
    CAPTURE(i);
    for (const char* name : {"missing", "live", "plain", "stale"}) {
      CAPTURE(name);
      for (const SetCond cond : {SetCond::Always, SetCond::NX, SetCond::XX}) {
        CAPTURE(static_cast<int>(cond));
        CHECK(store.set(k(name), "NEW", bad[i], cond) == Errc::invalid_expire_time);
        CHECK(store.set_get(k(name), "NEW", bad[i], cond) == Errc::invalid_expire_time);
        // Validation comes first: no lookup, so no hit/miss and the stale key stays stored.
        CHECK(snapshot(store) == before);
      }
    }
  }
  CHECK(store.size() == 3);
  CHECK(store.stats().expired_keys == 0);
  CHECK(store.exists(k("missing")) == false);
  CHECK(show(store.get(k("live"))) == "v");
  CHECK(store.ttl(k("live")) == 100);
  CHECK(store.ttl(k("plain")) == -1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: expiry overflow is an error and changes nothing (cases 78, 79, 82, D6)",
                   "[set][spec-F][errors]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("foo"), "bar", Ex{100}) == true);
  const auto before = snapshot(store);
  // 78, 79 and the conversion/addition limits of 82.
  const std::vector<expiring::SetExpiry> bad = {
      Ex{10000000000000000},       // 78: seconds * 1000 overflows
      Ex{kMax / 1000 + 1},         // the first second count that overflows on conversion
      ExAt{kMax / 1000 + 1},       // also for EXAT
      ExAt{kMax},                  //
      Ex{kMax},                    //
      Px{kMax},                    // 82: PX 9223372036854775807 + now overflows
      Px{kMax - T0 + 1},           // the first PX that overflows on the addition
      Ex{9223372036854775},        // 82: EX 9223372036854775: converts, then the addition overflows
      Ex{(kMax - T0) / 1000 + 1},  // the first EX that overflows on the addition
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    CAPTURE(i);
    CHECK(store.set(k("foo"), "NEW", bad[i]) == Errc::invalid_expire_time);
    CHECK(store.set(k("new"), "NEW", bad[i]) == Errc::invalid_expire_time);
    CHECK(store.set(k("foo"), "NEW", bad[i], SetCond::XX) == Errc::invalid_expire_time);
    CHECK(store.set_get(k("foo"), "NEW", bad[i]) == Errc::invalid_expire_time);
    CHECK(snapshot(store) == before);
  }
  CHECK(store.setex(k("foo"), kMax / 1000 + 1, "NEW") == Errc::invalid_expire_time);
  CHECK(store.setex(k("foo"), 9223372036854775, "NEW") == Errc::invalid_expire_time);
  CHECK(store.psetex(k("foo"), kMax, "NEW") == Errc::invalid_expire_time);
  CHECK(snapshot(store) == before);
  CHECK(show(store.get(k("foo"))) == "bar");
  CHECK(store.ttl(k("foo")) == 100);
  CHECK(store.exists(k("new")) == false);
}

TEMPLATE_TEST_CASE("set: the largest deadlines are accepted (case 82, D6)", "[set][spec-F]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", ExAt{9223372036854775}) == true);
  CHECK(store.pexpiretime(k("k")) == 9223372036854775000);
  CHECK(store.expiretime(k("k")) == 9223372036854775);
  CHECK(store.set(k("k"), "v", PxAt{kMax}) == true);
  CHECK(store.pexpiretime(k("k")) == kMax);
  CHECK(store.expiretime(k("k")) == 9223372036854776);  // rounds half up without overflowing
  CHECK(store.pttl(k("k")) == kMax - T0);
  CHECK(store.set(k("px"), "v", Px{kMax - T0}) == true);  // exactly reaches INT64_MAX
  CHECK(store.pexpiretime(k("px")) == kMax);
  CHECK(store.set(k("ex"), "v", Ex{(kMax - T0) / 1000}) == true);
  CHECK(store.pexpiretime(k("ex")) == 9223372036854775000);
  CHECK(store.expires_size() == 3);
  CHECK(store.size() == 3);
  // A deadline of INT64_MAX is a real TTL, not "persistent".
  CHECK(store.persist(k("k")) == true);
  CHECK(store.ttl(k("k")) == -1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: past EXAT/PXAT deletes and stores nothing (cases 98, 99, D4)", "[set][spec-F]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  SECTION("PXAT in the past over an existing key (98)") {
    CHECK(store.set(k("k"), "old", Ex{100}) == true);
    CHECK(store.set(k("k"), "v", PxAt{999000}) == true);
    CHECK(store.size() == 0);  // (V): DBSIZE 0 right after the SET
    CHECK(store.expires_size() == 0);
    CHECK(show(store.get(k("k"))) == "(nil)");
    CHECK(store.stats().expired_keys == 0);  // a deletion, not an expiry
  }
  SECTION("PXAT == now stores nothing (99)") {
    CHECK(store.set(k("k"), "v", PxAt{T0}) == true);
    CHECK(store.size() == 0);
    CHECK(show(store.get(k("k"))) == "(nil)");
    CHECK(store.pttl(k("k")) == -2);
  }
  SECTION("EXAT in the past and EXAT == now") {
    CHECK(store.set(k("a"), "old") == true);
    CHECK(store.set(k("a"), "v", ExAt{999}) == true);
    CHECK(store.set(k("b"), "old") == true);
    CHECK(store.set(k("b"), "v", ExAt{T0 / 1000}) == true);
    CHECK(store.set(k("c"), "v", ExAt{1}) == true);
    CHECK(store.size() == 0);
    CHECK(store.exists(k("a")) == false);
    CHECK(store.exists(k("b")) == false);
    CHECK(store.exists(k("c")) == false);
    CHECK(store.stats().expired_keys == 0);
  }
  SECTION("PXAT now + 1 is stored and lives one millisecond") {
    CHECK(store.set(k("k"), "v", PxAt{T0 + 1}) == true);
    CHECK(store.size() == 1);
    CHECK(store.pttl(k("k")) == 1);
    clock.set(T0 + 1);
    CHECK(show(store.get(k("k"))) == "v");
    CHECK(store.pttl(k("k")) == 0);
    clock.set(T0 + 2);
    CHECK(show(store.get(k("k"))) == "(nil)");
    CHECK(store.stats().expired_keys == 1);
  }
  SECTION("SET GET with a past PXAT returns the old value and deletes") {
    CHECK(store.set(k("k"), "old") == true);
    auto r = store.set_get(k("k"), "v", PxAt{999000});
    REQUIRE(r.ok());
    CHECK(show(*r) == "old");
    CHECK(store.size() == 0);
    r = store.set_get(k("k"), "v", PxAt{999000});
    REQUIRE(r.ok());
    CHECK(show(*r) == "(nil)");
    CHECK(store.size() == 0);
  }
  SECTION("past PXAT over a stale key: reclaimed as an expiry, nothing stored") {
    CHECK(store.set(k("k"), "old", Px{10}) == true);
    clock.set(T0 + 11);
    CHECK(store.set(k("k"), "v", PxAt{T0}) == true);
    CHECK(store.size() == 0);
    CHECK(store.stats().expired_keys == 1);
  }
  SECTION("other keys are untouched") {
    CHECK(store.set(k("x"), "1", Ex{50}) == true);
    CHECK(store.set(k("y"), "2") == true);
    CHECK(store.set(k("k"), "old") == true);
    CHECK(store.set(k("k"), "v", PxAt{1}) == true);
    CHECK(store.size() == 2);
    CHECK(show(store.get(k("x"))) == "1");
    CHECK(store.ttl(k("x")) == 50);
    CHECK(show(store.get(k("y"))) == "2");
  }
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("set: NX/XX are checked before a past deadline (case 100)", "[set][spec-F]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v") == true);
  CHECK(store.set(k("k"), "w", PxAt{1}, SetCond::NX) == false);
  CHECK(show(store.get(k("k"))) == "v");
  CHECK(store.set(k("n"), "w", PxAt{1}, SetCond::XX) == false);
  CHECK(store.exists(k("n")) == false);
  CHECK(store.size() == 1);
  // The conditions that pass: XX on an existing key deletes it, NX on a missing one stores nothing.
  CHECK(store.set(k("n"), "w", PxAt{1}, SetCond::NX) == true);
  CHECK(store.size() == 1);
  CHECK(store.set(k("k"), "w", PxAt{1}, SetCond::XX) == true);
  CHECK(store.size() == 0);
  // SET GET NX with a past deadline on an existing key: old value returned, key kept.
  CHECK(store.set(k("g"), "v", Ex{10}) == true);
  auto r = store.set_get(k("g"), "w", PxAt{1}, SetCond::NX);
  REQUIRE(r.ok());
  CHECK(show(*r) == "v");
  CHECK(show(store.get(k("g"))) == "v");
  CHECK(store.ttl(k("g")) == 10);
  CHECK(store.check_invariants());
}

// ---- G. SETEX / PSETEX / GETSET / SETNX ------------------------------------------------

TEMPLATE_TEST_CASE("setex: sets value and TTL (cases 102, 103, 106)", "[setex][spec-G]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  // 102
  CHECK(store.setex(k("x"), 12, "test").ok());
  CHECK(store.ttl(k("x")) == 12);
  CHECK(show(store.get(k("x"))) == "test");
  // 103: overwrite, then wait for expiry.
  CHECK(store.set(k("y"), "old") == true);
  CHECK(store.setex(k("y"), 1, "foo").ok());
  CHECK(show(store.get(k("y"))) == "foo");
  clock.set(T0 + 1000);
  CHECK(show(store.get(k("y"))) == "foo");
  clock.set(T0 + 1001);
  CHECK(show(store.get(k("y"))) == "(nil)");
  // 106
  clock.set(T0);
  CHECK(store.setex(k("z"), 1, "somevalue").ok());
  clock.set(T0 + 800);
  CHECK(show(store.get(k("z"))) == "somevalue");
  clock.set(T0 + 1100);
  CHECK(show(store.get(k("z"))) == "(nil)");
  CHECK(store.stats().expired_keys == 2);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("psetex: sub-second expiry (case 105)", "[setex][spec-G]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.psetex(k("x"), 100, "somevalue").ok());
  CHECK(store.pttl(k("x")) == 100);
  CHECK(show(store.get(k("x"))) == "somevalue");
  clock.set(T0 + 100);
  CHECK(show(store.get(k("x"))) == "somevalue");
  clock.set(T0 + 101);
  CHECK(show(store.get(k("x"))) == "(nil)");
  CHECK(store.size() == 0);
}

TEMPLATE_TEST_CASE("setex: a non-positive time is an error and changes nothing (case 104)", "[setex][spec-G][errors]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("x"), "keep", Ex{100}) == true);
  const auto before = snapshot(store);
  CHECK(store.setex(k("z"), -10, "foo") == Errc::invalid_expire_time);
  CHECK(store.setex(k("z"), 0, "foo") == Errc::invalid_expire_time);
  CHECK(store.psetex(k("z"), 0, "foo") == Errc::invalid_expire_time);
  CHECK(store.psetex(k("z"), -1, "foo") == Errc::invalid_expire_time);
  CHECK(store.setex(k("x"), 0, "foo") == Errc::invalid_expire_time);
  CHECK(store.psetex(k("x"), kMin, "foo") == Errc::invalid_expire_time);
  CHECK(snapshot(store) == before);
  CHECK(store.exists(k("z")) == false);
  CHECK(show(store.get(k("x"))) == "keep");
  CHECK(store.ttl(k("x")) == 100);
}

TEMPLATE_TEST_CASE("getset: returns the old value and removes the TTL (case 107)", "[getset][spec-G]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Ex{100}) == true);
  CHECK(show(store.getset(k("k"), "w").value()) == "v");
  CHECK(store.ttl(k("k")) == -1);
  CHECK(show(store.get(k("k"))) == "w");
  CHECK(show(store.getset(k("new"), "x").value()) == "(nil)");
  CHECK(show(store.get(k("new"))) == "x");
  CHECK(store.set(k("s"), "old", Px{10}) == true);
  clock.set(T0 + 11);
  CHECK(show(store.getset(k("s"), "y").value()) == "(nil)");
  CHECK(store.ttl(k("s")) == -1);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.expires_size() == 0);
}

TEMPLATE_TEST_CASE("setnx: a live volatile key blocks it, a stale one does not (cases 70, 71)", "[setnx][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("x"), "10") == true);
  CHECK(store.expire(k("x"), 10000) == true);
  CHECK(store.setnx(k("x"), "20") == false);
  CHECK(show(store.get(k("x"))) == "10");
  CHECK(store.ttl(k("x")) == 10000);

  CHECK(store.set(k("y"), "10") == true);
  CHECK(store.expire(k("y"), 1) == true);
  clock.set(T0 + 2000);
  CHECK(store.setnx(k("y"), "20") == true);
  CHECK(show(store.get(k("y"))) == "20");
  CHECK(store.ttl(k("y")) == -1);
  CHECK(store.stats().expired_keys == 1);
}

// ---- Clock extremes (fixtures at 0 and one minute before INT64_MAX, as tests/support.hpp) ------

TEST_CASE("set: relative expiry at clock start 0", "[set][clock]") {
  ManualClock clock{0};
  StoreOf<StringKeys> store{clock};
  CHECK(store.set("k", "v", Px{10}) == true);
  CHECK(store.pexpiretime("k") == 10);
  CHECK(store.set("e", "v", Ex{1}) == true);
  CHECK(store.pexpiretime("e") == 1000);
  CHECK(store.set("max", "v", Px{kMax}) == true);  // 0 + INT64_MAX does not overflow
  CHECK(store.pexpiretime("max") == kMax);
  // EXAT/PXAT 1 are in the future at 0 (and 0 itself is rejected as non-positive).
  CHECK(store.set("a", "v", PxAt{1}) == true);
  CHECK(store.pttl("a") == 1);
  CHECK(store.set("a", "v", PxAt{0}) == Errc::invalid_expire_time);
  CHECK(store.pttl("a") == 1);
  clock.set(10);
  CHECK(show(store.get("k")) == "v");
  clock.set(11);
  CHECK(show(store.get("k")) == "(nil)");
  CHECK(show(store.get("a")) == "(nil)");
  CHECK(store.size() == 2);
  CHECK(store.stats().expired_keys == 2);
}

TEST_CASE("set: one minute before INT64_MAX, EX beyond a minute is invalid and changes nothing", "[set][clock][errors]") {
  const std::int64_t start = kMax - 60000;
  ManualClock clock{start};
  StoreOf<StringKeys> store{clock};
  CHECK(store.set("k", "v") == true);
  CHECK(store.set("t", "v", Px{1000}) == true);
  const auto before = snapshot(store);
  CHECK(store.set("k", "w", Ex{61}) == Errc::invalid_expire_time);
  CHECK(store.set("n", "w", Ex{61}) == Errc::invalid_expire_time);
  CHECK(store.set("k", "w", Px{60001}) == Errc::invalid_expire_time);
  CHECK(store.set("t", "w", Ex{61}, SetCond::XX) == Errc::invalid_expire_time);
  CHECK(store.set_get("k", "w", Ex{61}) == Errc::invalid_expire_time);
  CHECK(store.setex("k", 61, "w") == Errc::invalid_expire_time);
  CHECK(store.psetex("k", 60001, "w") == Errc::invalid_expire_time);
  CHECK(store.expire("k", 61) == Errc::invalid_expire_time);
  CHECK(store.pexpire("t", 60001) == Errc::invalid_expire_time);
  CHECK(snapshot(store) == before);
  auto g = store.getex("k", Ex{61});
  CHECK(g == Errc::invalid_expire_time);
  auto expected = before;
  expected.hits += 1;  // GETEX reads the key before it validates (Redis order)
  CHECK(snapshot(store) == expected);

  // Exactly one minute reaches INT64_MAX and is fine.
  CHECK(store.set("k", "w", Ex{60}) == true);
  CHECK(store.pexpiretime("k") == kMax);
  CHECK(store.ttl("k") == 60);
  CHECK(store.set("p", "w", Px{60000}) == true);
  CHECK(store.pexpiretime("p") == kMax);
  CHECK(store.set("a", "w", ExAt{kMax / 1000}) == true);
  CHECK(store.pexpiretime("a") == kMax / 1000 * 1000);
  CHECK(store.set("past", "w", PxAt{start}) == true);  // == now: not stored (D4)
  CHECK(store.exists("past") == false);
  clock.set(kMax);
  CHECK(show(store.get("k")) == "w");  // now == deadline: alive
  CHECK(store.pttl("k") == 0);
  CHECK(show(store.get("t")) == "(nil)");
  CHECK(show(store.get("a")) == "(nil)");
  CHECK(store.check_invariants());
}
