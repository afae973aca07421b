// tests/test_rename.cpp: the TTL carried or dropped by other operations (semantics.md B §5 J):
// RENAME / RENAMENX (cases 128-131) and the in-place update modify() (case 134: Redis's
// INCR/APPEND/INCRBYFLOAT keep the TTL). Over three key spellings (tests/support.hpp).
//
// Not applicable to the typed store (command layer or no such API): 132 (COPY), 133 (MOVE,
// one keyspace per store), 135 (SUNIONSTORE), 136 (LPOP); the INCR/APPEND/INCRBYFLOAT
// spellings of 134 are the command layer's (here: modify() doing the same edits).
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

// ---- RENAME / RENAMENX -------------------------------------------------------------------

TEMPLATE_TEST_CASE("rename: the TTL moves with the key (case 128)", "[rename][spec-J]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("mykey"), "foo") == true);
  CHECK(store.expire(k("mykey"), 100) == true);
  CHECK(store.rename(k("mykey"), k("mykey2")).ok());
  CHECK(store.ttl(k("mykey2")) == 100);
  CHECK(store.pexpiretime(k("mykey2")) == T0 + 100000);
  CHECK(store.ttl(k("mykey")) == -2);
  CHECK(show(store.get(k("mykey2"))) == "foo");
  CHECK(store.size() == 1);
  CHECK(store.expires_size() == 1);
  // A persistent key stays persistent under its new name.
  CHECK(store.set(k("p"), "bar") == true);
  CHECK(store.rename(k("p"), k("p2")).ok());
  CHECK(store.ttl(k("p2")) == -1);
  CHECK(show(store.get(k("p2"))) == "bar");
  CHECK(store.expires_size() == 1);
  CHECK(store.stats().expired_keys == 0);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("rename: the destination's value and TTL are replaced (case 129)", "[rename][spec-J]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  SECTION("persistent source over a volatile destination: no TTL") {
    CHECK(store.set(k("mykey"), "foo") == true);
    CHECK(store.set(k("mykey2"), "bar") == true);
    CHECK(store.expire(k("mykey2"), 100) == true);
    CHECK(store.rename(k("mykey"), k("mykey2")).ok());
    CHECK(store.ttl(k("mykey2")) == -1);
    CHECK(show(store.get(k("mykey2"))) == "foo");
    CHECK(store.expires_size() == 0);
  }
  SECTION("volatile source over a volatile destination: the source's TTL") {
    CHECK(store.set(k("a"), "foo", Ex{10}) == true);
    CHECK(store.set(k("b"), "bar", Ex{500}) == true);
    CHECK(store.rename(k("a"), k("b")).ok());
    CHECK(store.ttl(k("b")) == 10);
    CHECK(show(store.get(k("b"))) == "foo");
    CHECK(store.expires_size() == 1);
  }
  SECTION("volatile source over a persistent destination") {
    CHECK(store.set(k("a"), "foo", Px{1500}) == true);
    CHECK(store.set(k("b"), "bar") == true);
    CHECK(store.rename(k("a"), k("b")).ok());
    CHECK(store.pttl(k("b")) == 1500);
    CHECK(store.expires_size() == 1);
  }
  CHECK(store.size() == 1);
  CHECK(store.exists(k("a")) == false);
  CHECK(store.exists(k("mykey")) == false);
  CHECK(store.stats().expired_keys == 0);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("rename: a key onto itself changes nothing (case 130)", "[rename][spec-J]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Ex{100}) == true);
  CHECK(store.set(k("p"), "w") == true);
  const auto before = snapshot(store);
  CHECK(store.rename(k("k"), k("k")).ok());
  CHECK(store.ttl(k("k")) == 100);
  CHECK(store.renamenx(k("k"), k("k")) == false);
  CHECK(store.rename(k("p"), k("p")).ok());
  CHECK(store.renamenx(k("p"), k("p")) == false);
  auto expected = before;
  expected.hits += 1;  // the ttl() above
  CHECK(snapshot(store) == expected);
  CHECK(show(store.get(k("k"))) == "v");
  CHECK(store.ttl(k("p")) == -1);
}

TEMPLATE_TEST_CASE("rename: a missing or stale source is no_such_key (case 131)", "[rename][spec-J][errors]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("dst"), "d", Ex{100}) == true);
  CHECK(store.set(k("staledst"), "x", Px{5}) == true);
  clock.set(T0 + 6);
  // Missing source: exactly nothing changes (not even the stale destination is touched).
  const auto before = snapshot(store);
  CHECK(store.rename(k("missing"), k("j")) == Errc::no_such_key);
  CHECK(store.rename(k("missing"), k("dst")) == Errc::no_such_key);
  CHECK(store.rename(k("missing"), k("staledst")) == Errc::no_such_key);
  CHECK(store.renamenx(k("missing"), k("j")) == Errc::no_such_key);
  CHECK(store.renamenx(k("missing"), k("dst")) == Errc::no_such_key);
  CHECK(store.rename(k("missing"), k("missing")) == Errc::no_such_key);
  CHECK(snapshot(store) == before);
  CHECK(store.size() == 2);

  // 131: a stale source is reclaimed as an expiry; the destination is untouched.
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  clock.set(T0 + 11 + 6);
  CHECK(store.rename(k("k"), k("j")) == Errc::no_such_key);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.exists(k("j")) == false);
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  clock.set(T0 + 40);
  CHECK(store.renamenx(k("k"), k("dst")) == Errc::no_such_key);
  CHECK(store.stats().expired_keys == 2);
  CHECK(show(store.get(k("dst"))) == "d");
  CHECK(store.pexpiretime(k("dst")) == T0 + 100000);
  CHECK(store.set(k("k"), "v", Px{1}) == true);
  clock.set(T0 + 42);
  CHECK(store.rename(k("k"), k("k")) == Errc::no_such_key);
  CHECK(store.stats().expired_keys == 3);
  CHECK(store.size() == 2);  // dst and the untouched stale staledst
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("rename: a stale destination is reclaimed and replaced", "[rename][spec-J]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("src"), "s") == true);
  CHECK(store.set(k("dst"), "d", Px{10}) == true);
  CHECK(store.set(k("src2"), "s2", Ex{7}) == true);
  CHECK(store.set(k("dst2"), "d2", Px{10}) == true);
  clock.set(T0 + 11);
  CHECK(store.rename(k("src"), k("dst")).ok());
  CHECK(show(store.get(k("dst"))) == "s");
  CHECK(store.ttl(k("dst")) == -1);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.renamenx(k("src2"), k("dst2")) == true);  // a stale destination counts as absent
  CHECK(show(store.get(k("dst2"))) == "s2");
  CHECK(store.pexpiretime(k("dst2")) == T0 + 7000);
  CHECK(store.stats().expired_keys == 2);
  CHECK(store.size() == 2);
  CHECK(store.expires_size() == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("renamenx: moves only onto an absent key", "[rename][spec-J]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1", Ex{30}) == true);
  CHECK(store.set(k("b"), "2") == true);
  const auto before = snapshot(store);
  CHECK(store.renamenx(k("a"), k("b")) == false);
  CHECK(store.renamenx(k("b"), k("a")) == false);
  CHECK(snapshot(store) == before);
  CHECK(store.renamenx(k("a"), k("c")) == true);
  CHECK(store.exists(k("a")) == false);
  CHECK(show(store.get(k("c"))) == "1");
  CHECK(store.ttl(k("c")) == 30);
  CHECK(store.size() == 2);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("rename: at the deadline the source is alive and keeps its deadline", "[rename][spec-J]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "v", Px{100}) == true);
  clock.set(T0 + 100);
  CHECK(store.rename(k("a"), k("b")).ok());
  CHECK(store.pttl(k("b")) == 0);
  clock.set(T0 + 101);
  CHECK(store.get(k("b")) == nullptr);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.size() == 0);
}

TEMPLATE_TEST_CASE("rename: a chain of renames across table growth keeps every value and TTL", "[rename][spec-J]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  // Values longer than any small-string buffer, so a dangling reference would be caught.
  auto value_of = [](int i) { return std::string(40, static_cast<char>('a' + i % 26)) + std::to_string(i); };
  constexpr int kN = 70;
  for (int i = 0; i < kN; ++i) {
    if (i % 2 == 0) {
      CHECK(store.set(k("k" + std::to_string(i)), value_of(i), Px{1000 + i}) == true);
    } else {
      CHECK(store.set(k("k" + std::to_string(i)), value_of(i)) == true);
    }
  }
  // Each rename to a new name inserts one key while the source is still stored.
  for (int i = 0; i < kN; ++i) {
    CHECK(store.rename(k("k" + std::to_string(i)), k("r" + std::to_string(i))).ok());
  }
  // And renames onto existing keys: r(i) onto r(i+1) for even i.
  for (int i = 0; i + 1 < kN; i += 2) {
    CHECK(store.rename(k("r" + std::to_string(i)), k("r" + std::to_string(i + 1))).ok());
  }
  CHECK(store.size() == kN / 2);
  CHECK(store.expires_size() == kN / 2);
  for (int i = 1; i < kN; i += 2) {
    CAPTURE(i);
    CHECK(show(store.peek(k("r" + std::to_string(i)))) == value_of(i - 1));
    CHECK(store.pexpiretime(k("r" + std::to_string(i))) == T0 + 1000 + i - 1);
  }
  CHECK(store.check_invariants());
}

TEST_CASE("rename: keys given as string_view and literals on a std::string store", "[rename][spec-J]") {
  ManualClock clock{T0};
  StoreOf<StringKeys> store{clock};
  CHECK(store.set(std::string("a-rather-long-source-key-name"), "v", Ex{9}) == true);
  CHECK(store.rename(std::string_view("a-rather-long-source-key-name"), "a-rather-long-target-key-name").ok());
  CHECK(store.ttl("a-rather-long-target-key-name") == 9);
  CHECK(store.exists(std::string_view("a-rather-long-source-key-name")) == false);
  CHECK(store.renamenx("a-rather-long-target-key-name", std::string_view("x")) == true);
  CHECK(store.keys() == std::vector<std::string>{"x"});
}

// ---- 134: in-place updates keep the TTL ------------------------------------------------

TEMPLATE_TEST_CASE("modify: an in-place update keeps the TTL (case 134)", "[modify][spec-J]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "1", Ex{100}) == true);
  CHECK(store.modify(k("k"), [](std::string& v) { v = std::to_string(std::stoi(v) + 1); }) == true);  // INCR
  CHECK(show(store.peek(k("k"))) == "2");
  CHECK(store.ttl(k("k")) == 100);
  CHECK(store.modify(k("k"), [](std::string& v) { v += "x"; }) == true);  // APPEND
  CHECK(show(store.peek(k("k"))) == "2x");
  CHECK(store.ttl(k("k")) == 100);
  CHECK(store.set(k("f"), "1", Ex{100}) == true);
  CHECK(store.modify(k("f"), [](std::string& v) { v = "1.1"; }) == true);  // INCRBYFLOAT 0.1
  CHECK(show(store.peek(k("f"))) == "1.1");
  CHECK(store.ttl(k("f")) == 100);
  CHECK(store.pexpiretime(k("f")) == T0 + 100000);
  // A persistent key stays persistent.
  CHECK(store.set(k("p"), "a") == true);
  CHECK(store.modify(k("p"), [](std::string& v) { v += "b"; }) == true);
  CHECK(store.ttl(k("p")) == -1);
  CHECK(store.expires_size() == 2);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("modify: a missing key is not created, no hit/miss counted", "[modify][spec-J]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("other"), "o", Ex{3}) == true);
  const auto before = snapshot(store);
  bool called = false;
  CHECK(store.modify(k("missing"), [&](std::string&) { called = true; }) == false);
  CHECK_FALSE(called);
  CHECK(snapshot(store) == before);
  CHECK(store.modify(k("other"), [](std::string& v) { v = "p"; }) == true);
  CHECK(store.stats().keyspace_hits == 0);
  CHECK(store.stats().keyspace_misses == 0);
  // At the deadline the key is alive; after it, modify() finds nothing and reclaims it.
  clock.set(T0 + 3000);
  CHECK(store.modify(k("other"), [](std::string& v) { v += "q"; }) == true);
  CHECK(show(store.peek(k("other"))) == "pq");
  clock.set(T0 + 3001);
  CHECK(store.modify(k("other"), [](std::string& v) { v += "r"; }) == false);
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 1);
}

TEMPLATE_TEST_CASE("rename: to a new key at every table size (growth while the source is stored)", "[rename][spec-J]",
                   U64Keys, StringKeys, CollidingKeys) {
  const auto k = &TestType::key;
  auto value_of = [](int i) { return std::string(48, static_cast<char>('A' + i % 26)) + std::to_string(i); };
  for (int n = 1; n <= 70; ++n) {
    for (const int src : {0, n - 1}) {
      CAPTURE(n, src);
      ManualClock clock{T0};
      StoreOf<TestType> store{clock};
      for (int i = 0; i < n; ++i) {
        REQUIRE(store.set(k("k" + std::to_string(i)), value_of(i), Px{5000 + i}) == true);
      }
      // The insertion of the destination may grow the tables while src's value is moved.
      REQUIRE(store.rename(k("k" + std::to_string(src)), k("new")).ok());
      CHECK(store.size() == static_cast<std::size_t>(n));
      CHECK(show(store.peek(k("new"))) == value_of(src));
      CHECK(store.pexpiretime(k("new")) == T0 + 5000 + src);
      CHECK(store.exists(k("k" + std::to_string(src))) == false);
      for (int i = 0; i < n; ++i) {
        if (i != src) CHECK(show(store.peek(k("k" + std::to_string(i)))) == value_of(i));
      }
      CHECK(store.check_invariants());
    }
  }
}
