// tests/test_lazy_expiry.cpp: lazy expiry and the access paths (semantics.md B §5 E, cases 64-73)
// and the keyspace views of semantics.md D10: size() counts stale keys not yet reclaimed; keys(),
// iteration and random_key() never return one; random_key() reclaims the stale keys it lands
// on. Over three key spellings (tests/support.hpp).
//
// Typed equivalents: MGET is one get() per key (64); EXISTS/DEL with several arguments are
// one call per argument (67); KEYS * is keys() (68, 69); the SCAN half of 69 is the command
// layer's (iteration is the store's quiet path and deletes nothing); SETNX (70, 71) is in
// test_set.cpp as well; 72's RPUSH/WRONGTYPE is the command layer's (the typed form: a stale
// key has no old value for SET GET); 73's INCR is the command layer's (the typed form:
// modify() of a stale key finds nothing, and a write recreates it without TTL).
// expiring-test: expiry index (built over both policies under the sanitizers too)
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

namespace {
template <class KT, class Store>
std::vector<typename KT::key_type> sorted_keys(const Store& store) {
  std::vector<typename KT::key_type> out = store.keys();
  std::sort(out.begin(), out.end());
  return out;
}
template <class KT>
std::vector<typename KT::key_type> sorted_names(std::initializer_list<std::string_view> names) {
  std::vector<typename KT::key_type> out;
  for (const std::string_view n : names) out.push_back(KT::key(n));
  std::sort(out.begin(), out.end());
  return out;
}
template <class KT, class Store>
std::vector<typename KT::key_type> sorted_iteration(const Store& store) {
  std::vector<typename KT::key_type> out;
  for (const auto& e : store) out.push_back(e.key);
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

// ---- E. Lazy expiry and access paths -----------------------------------------------------

TEMPLATE_TEST_CASE("lazy expiry: stale keys are counted until read (case 64)", "[lazy][spec-E]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.psetex(k("key1"), 500, "a").ok());
  CHECK(store.psetex(k("key2"), 500, "a").ok());
  CHECK(store.psetex(k("key3"), 500, "a").ok());
  CHECK(store.size() == 3);
  clock.set(T0 + 1000);
  CHECK(store.size() == 3);
  CHECK(store.expires_size() == 3);
  CHECK(store.stats().expired_keys == 0);
  CHECK(show(store.get(k("key1"))) == "(nil)");
  CHECK(show(store.get(k("key2"))) == "(nil)");
  CHECK(show(store.get(k("key3"))) == "(nil)");
  CHECK(store.size() == 0);
  CHECK(store.expires_size() == 0);
  const expiring::Stats st = store.stats();
  CHECK(st.expired_keys == 3);
  CHECK(st.keyspace_misses == 3);
  CHECK(st.keyspace_hits == 0);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("lazy expiry: DEL and UNLINK of a stale key return false (cases 65, 66)", "[lazy][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.setex(k("keyExpire"), 1, "valExpire").ok());  // 65
  CHECK(store.set(k("k"), "v", Px{10}) == true);             // 66
  clock.set(T0 + 1100);
  CHECK(store.del(k("keyExpire")) == false);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.unlink(k("k")) == false);
  CHECK(store.stats().expired_keys == 2);
  CHECK(store.size() == 0);
  // DEL is a write lookup: no hits or misses.
  CHECK(store.stats().keyspace_hits == 0);
  CHECK(store.stats().keyspace_misses == 0);
  // A live volatile key is deleted (and is not an expiry).
  CHECK(store.set(k("live"), "v", Px{10}) == true);
  CHECK(store.del(k("live")) == true);
  CHECK(store.stats().expired_keys == 2);
  CHECK(store.expires_size() == 0);
}

TEMPLATE_TEST_CASE("lazy expiry: EXISTS counts each probe, DEL removes once (case 67)", "[lazy][spec-E]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1") == true);
  int n = 0;
  for (const char* name : {"a", "a", "nokey"}) n += store.exists(k(name)) ? 1 : 0;
  CHECK(n == 2);
  CHECK(store.stats().keyspace_hits == 2);
  CHECK(store.stats().keyspace_misses == 1);
  n = 0;
  for (const char* name : {"a", "a"}) n += store.del(k(name)) ? 1 : 0;
  CHECK(n == 1);
  CHECK(store.size() == 0);
  CHECK(store.touch(k("a")) == false);
}

TEMPLATE_TEST_CASE("keys: five keys in, five keys out (case 68)", "[lazy][keys][spec-E]", U64Keys, StringKeys,
                   CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "c") == true);
  CHECK(store.expire(k("a"), 5) == true);
  CHECK(store.set(k("t"), "c") == true);
  CHECK(store.set(k("e"), "c") == true);
  CHECK(store.set(k("s"), "c") == true);
  CHECK(store.set(k("foo"), "b") == true);
  CHECK(sorted_keys<TestType>(store) == sorted_names<TestType>({"a", "e", "foo", "s", "t"}));
  CHECK(sorted_iteration<TestType>(store) == sorted_names<TestType>({"a", "e", "foo", "s", "t"}));
  CHECK(store.size() == 5);
}

TEMPLATE_TEST_CASE("keys: stale keys are skipped, not deleted, size() still counts them (case 69, D10)",
                   "[lazy][keys][spec-E]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  CHECK(store.set(k("p"), "v") == true);
  clock.set(T0 + 10);  // at the deadline k is alive and listed
  CHECK(sorted_keys<TestType>(store) == sorted_names<TestType>({"k", "p"}));
  CHECK(sorted_iteration<TestType>(store) == sorted_names<TestType>({"k", "p"}));
  clock.set(T0 + 11);
  CHECK(store.keys() == std::vector<typename TestType::key_type>{k("p")});
  CHECK(store.size() == 2);
  CHECK(store.expires_size() == 1);
  CHECK(sorted_iteration<TestType>(store) == sorted_names<TestType>({"p"}));
  CHECK(store.size() == 2);  // iteration is quiet: nothing reclaimed
  const expiring::Stats st = store.stats();
  CHECK(st.expired_keys == 0);
  CHECK(st.keyspace_hits == 0);
  CHECK(st.keyspace_misses == 0);
  CHECK(st.keys == 2);
  CHECK(st.expires == 1);
  // The first access reclaims it.
  CHECK(store.exists(k("k")) == false);
  CHECK(store.size() == 1);
  CHECK(store.stats().expired_keys == 1);
}

TEMPLATE_TEST_CASE("lazy expiry: a stale key has no old value for SET GET (case 72)", "[lazy][spec-E]", U64Keys,
                   StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "a") == true);
  CHECK(store.pexpire(k("k"), 10) == true);
  clock.set(T0 + 11);
  auto r = store.set_get(k("k"), "v");
  REQUIRE(r.ok());
  CHECK(show(*r) == "(nil)");
  CHECK(show(store.get(k("k"))) == "v");
  CHECK(store.ttl(k("k")) == -1);
}

TEMPLATE_TEST_CASE("lazy expiry: a write on a stale key recreates it without TTL (case 73)", "[lazy][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "5", Px{10}) == true);
  clock.set(T0 + 11);
  // modify() updates in place only: on a stale key it finds nothing and creates nothing.
  bool called = false;
  CHECK(store.modify(k("k"), [&](std::string& v) { called = true; v = "6"; }) == false);
  CHECK_FALSE(called);
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.set(k("k"), "1") == true);
  CHECK(store.ttl(k("k")) == -1);
  CHECK(show(store.get(k("k"))) == "1");
  // The same through expire() on a stale key: refused, like a missing key (case 59).
  CHECK(store.set(k("j"), "5", Px{10}) == true);
  clock.set(T0 + 22);
  CHECK(store.expire(k("j"), 100) == false);
  CHECK(store.exists(k("j")) == false);
  CHECK(store.stats().expired_keys == 2);
}

TEMPLATE_TEST_CASE("lazy expiry: every access path reclaims the stale key it touches", "[lazy][spec-E][stats]",
                   U64Keys, StringKeys, CollidingKeys) {
  using Store = StoreOf<TestType>;
  using K = typename TestType::key_type;
  const auto k = &TestType::key;
  struct Op {
    const char* name;
    std::function<void(Store&, const K&)> run;
    std::uint64_t misses;    // Redis counts read lookups only
    std::size_t size_after;  // of 3 keys: the stale one, a persistent one, a volatile one
  };
  const K other = k("other");
  const std::vector<Op> ops = {
      {"get", [](Store& s, const K& key) { CHECK(s.get(key) == nullptr); }, 1, 2},
      {"exists", [](Store& s, const K& key) { CHECK(s.exists(key) == false); }, 1, 2},
      {"touch", [](Store& s, const K& key) { CHECK(s.touch(key) == false); }, 1, 2},
      {"ttl", [](Store& s, const K& key) { CHECK(s.ttl(key) == -2); }, 1, 2},
      {"pttl", [](Store& s, const K& key) { CHECK(s.pttl(key) == -2); }, 1, 2},
      {"expiretime", [](Store& s, const K& key) { CHECK(s.expiretime(key) == -2); }, 1, 2},
      {"pexpiretime", [](Store& s, const K& key) { CHECK(s.pexpiretime(key) == -2); }, 1, 2},
      {"getex", [](Store& s, const K& key) { CHECK(show(*s.getex(key, Ex{5})) == "(nil)"); }, 1, 2},
      {"getdel", [](Store& s, const K& key) { CHECK(show(s.getdel(key)) == "(nil)"); }, 1, 2},
      {"set_get", [](Store& s, const K& key) { CHECK(show(*s.set_get(key, "n", Ex{5})) == "(nil)"); }, 1, 3},
      {"getset", [](Store& s, const K& key) { CHECK(show(s.getset(key, "n").value()) == "(nil)"); }, 1, 3},
      {"del", [](Store& s, const K& key) { CHECK(s.del(key) == false); }, 0, 2},
      {"unlink", [](Store& s, const K& key) { CHECK(s.unlink(key) == false); }, 0, 2},
      {"expire", [](Store& s, const K& key) { CHECK(s.expire(key, 100) == false); }, 0, 2},
      {"pexpire", [](Store& s, const K& key) { CHECK(s.pexpire(key, -1) == false); }, 0, 2},
      {"expireat", [](Store& s, const K& key) { CHECK(s.expireat(key, 5000) == false); }, 0, 2},
      {"pexpireat", [](Store& s, const K& key) { CHECK(s.pexpireat(key, 1) == false); }, 0, 2},
      {"persist", [](Store& s, const K& key) { CHECK(s.persist(key) == false); }, 0, 2},
      {"modify", [](Store& s, const K& key) { CHECK(s.modify(key, [](std::string& v) { v += "!"; }) == false); }, 0, 2},
      {"set XX", [](Store& s, const K& key) { CHECK(s.set(key, "n", SetCond::XX) == false); }, 0, 2},
      {"set NX", [](Store& s, const K& key) { CHECK(s.set(key, "n", SetCond::NX) == true); }, 0, 3},
      {"set KEEPTTL", [](Store& s, const K& key) { CHECK(s.set(key, "n", KeepTtl{}) == true); }, 0, 3},
      {"setex", [](Store& s, const K& key) { CHECK(s.setex(key, 5, "n").ok()); }, 0, 3},
      {"rename", [other](Store& s, const K& key) { CHECK(s.rename(key, other) == Errc::no_such_key); }, 0, 2},
      {"renamenx", [other](Store& s, const K& key) { CHECK(s.renamenx(key, other) == Errc::no_such_key); }, 0, 2},
  };
  for (const Op& op : ops) {
    CAPTURE(op.name);
    ManualClock clock{T0};
    Store store{clock};
    CHECK(store.set(k("stale"), "s", Px{10}) == true);
    CHECK(store.set(k("plain"), "p") == true);
    CHECK(store.set(k("vol"), "v", Ex{100}) == true);
    clock.set(T0 + 11);
    REQUIRE(store.size() == 3);
    op.run(store, k("stale"));
    const expiring::Stats st = store.stats();
    CHECK(st.expired_keys == 1);
    CHECK(st.keyspace_misses == op.misses);
    CHECK(st.keyspace_hits == 0);
    CHECK(store.size() == op.size_after);
    CHECK(show(store.peek(k("plain"))) == "p");
    CHECK(show(store.peek(k("vol"))) == "v");
    CHECK(store.pexpiretime(k("vol")) == T0 + 100000);
    CHECK(store.exists(other) == false);
    if (op.size_after == 3) {
      CHECK(store.ttl(k("stale")) != -2);
    }
    CHECK(store.check_invariants());
  }
}

TEMPLATE_TEST_CASE("lazy expiry: at the deadline itself the key is alive on every path (D1)", "[lazy][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock, expiring::Options{}};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{100}) == true);
  clock.set(T0 + 100);
  CHECK(show(store.peek(k("k"))) == "v");
  CHECK(show(store.get(k("k"))) == "v");
  CHECK(store.exists(k("k")) == true);
  CHECK(store.touch(k("k")) == true);
  CHECK(store.ttl(k("k")) == 0);
  CHECK(store.pttl(k("k")) == 0);
  CHECK(store.pexpiretime(k("k")) == T0 + 100);
  CHECK(store.keys().size() == 1);
  CHECK(sorted_iteration<TestType>(store) == sorted_names<TestType>({"k"}));
  CHECK(store.random_key() == std::optional<typename TestType::key_type>{k("k")});
  CHECK(store.modify(k("k"), [](std::string& v) { v = "w"; }) == true);
  CHECK(store.set(k("k"), "x", KeepTtl{}) == true);
  CHECK(store.pexpiretime(k("k")) == T0 + 100);
  CHECK(store.stats().expired_keys == 0);
  CHECK(store.size() == 1);
  clock.set(T0 + 101);
  CHECK(store.peek(k("k")) == nullptr);
  CHECK(store.size() == 1);  // peek is quiet
  CHECK(store.get(k("k")) == nullptr);
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 1);
}

TEMPLATE_TEST_CASE("lazy expiry: peek() sees a stale key as missing but does not reclaim it", "[lazy][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  clock.set(T0 + 11);
  const auto before = snapshot(store);
  CHECK(store.peek(k("k")) == nullptr);
  CHECK(store.peek(k("missing")) == nullptr);
  CHECK(snapshot(store) == before);
  CHECK(store.size() == 1);
}

// ---- D10: size(), keys(), iteration, random_key() ---------------------------------------

TEMPLATE_TEST_CASE("keys: size() counts stale keys, keys() and iteration never return one (D10)", "[lazy][keys][d10]",
                   U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  for (const char* name : {"s1", "s2", "s3"}) CHECK(store.set(k(name), "stale", Px{10}) == true);
  CHECK(store.set(k("v"), "live", Ex{100}) == true);
  CHECK(store.set(k("p1"), "persistent") == true);
  CHECK(store.set(k("p2"), "persistent") == true);
  clock.set(T0 + 11);
  CHECK(store.size() == 6);
  CHECK(store.expires_size() == 4);
  CHECK_FALSE(store.empty());
  CHECK(sorted_keys<TestType>(store) == sorted_names<TestType>({"p1", "p2", "v"}));
  std::size_t n = 0;
  for (const auto& e : store) {
    ++n;
    CHECK(e.value != "stale");
    if (e.key == k("v")) {
      CHECK(e.value == "live");
      CHECK(e.pexpiretime == T0 + 100000);
    } else {
      CHECK(e.value == "persistent");
      CHECK(e.pexpiretime == -1);
    }
  }
  CHECK(n == 3);
  CHECK(std::distance(store.begin(), store.end()) == 3);
  CHECK(store.size() == 6);
  CHECK(store.stats().expired_keys == 0);

  // Every key stale: no keys, empty iteration, yet size() still counts them.
  CHECK(store.pexpire(k("p1"), 50) == true);
  CHECK(store.pexpire(k("p2"), 50) == true);
  clock.set(T0 + 200000);
  CHECK(store.keys().empty());
  CHECK((store.begin() == store.end()));
  CHECK(store.size() == 6);
  CHECK(store.expires_size() == 6);
  CHECK(store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("random_key: never returns a stale key and reclaims those it lands on (D10)",
                   "[lazy][random_key][d10]", U64Keys, StringKeys, CollidingKeys) {
  ManualClock clock{T0};
  expiring::Options options;
  options.seed = 12345;
  StoreOf<TestType> store{clock, options};
  const auto k = &TestType::key;
  CHECK_FALSE(store.random_key().has_value());  // empty store

  SECTION("every key stale: nullopt, and every key is reclaimed") {
    for (int i = 0; i < 20; ++i) CHECK(store.set(k("s" + std::to_string(i)), "x", Px{10}) == true);
    clock.set(T0 + 11);
    CHECK(store.size() == 20);
    CHECK_FALSE(store.random_key().has_value());
    CHECK(store.size() == 0);
    CHECK(store.expires_size() == 0);
    CHECK(store.stats().expired_keys == 20);
  }
  SECTION("one live key among stale ones: always that key") {
    for (int i = 0; i < 30; ++i) CHECK(store.set(k("s" + std::to_string(i)), "x", Px{10}) == true);
    CHECK(store.set(k("live"), "y", Ex{100}) == true);
    clock.set(T0 + 11);
    for (int i = 0; i < 200; ++i) {
      CAPTURE(i);
      const auto r = store.random_key();
      REQUIRE(r.has_value());
      CHECK(*r == k("live"));
      // Everything reclaimed so far was stale; the live key is never touched.
      CHECK(store.size() + store.stats().expired_keys == 31);
    }
    CHECK(store.size() >= 1);
    CHECK(store.size() < 31);  // 200 draws landed on a stale key at least once
    CHECK(show(store.peek(k("live"))) == "y");
    CHECK(store.ttl(k("live")) == 100);
  }
  SECTION("live keys only: each draw is a live key, nothing removed, no stats") {
    for (int i = 0; i < 10; ++i) CHECK(store.set(k("k" + std::to_string(i)), "v") == true);
    std::vector<typename TestType::key_type> seen;
    for (int i = 0; i < 300; ++i) {
      const auto r = store.random_key();
      REQUIRE(r.has_value());
      seen.push_back(*r);
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    CHECK(seen == sorted_keys<TestType>(store));  // 300 draws from 10 keys reach every key
    CHECK(store.size() == 10);
    CHECK(store.stats().keyspace_hits == 0);
    CHECK(store.stats().keyspace_misses == 0);
    CHECK(store.stats().expired_keys == 0);
  }
  CHECK(store.check_invariants());
}

// ---- Clock starts (tests/support.hpp) ----------------------------------------------------------

TEST_CASE("lazy expiry: the same behaviour at clock starts 0, T0 and one minute before INT64_MAX", "[lazy][clock]") {
  const std::int64_t start = GENERATE(std::int64_t{0}, T0, kMax - 60000);
  CAPTURE(start);
  ManualClock clock{start};
  StoreOf<StringKeys> store{clock};
  CHECK(store.psetex("key1", 500, "a").ok());
  CHECK(store.psetex("key2", 500, "a").ok());
  CHECK(store.setex("key3", 60, "a").ok());  // reaches INT64_MAX exactly at the last start
  CHECK(store.set("p", "b") == true);
  CHECK(store.pexpiretime("key3") == start + 60000);
  clock.set(start + 500);
  CHECK(show(store.get("key1")) == "a");
  CHECK(store.pttl("key1") == 0);
  clock.set(start + 1000);
  CHECK(store.size() == 4);
  CHECK(store.keys().size() == 2);
  CHECK(show(store.get("key1")) == "(nil)");
  CHECK(store.del("key2") == false);
  CHECK(store.size() == 2);
  CHECK(store.ttl("key3") == 59);
  clock.set(start + 60000);
  CHECK(show(store.get("key3")) == "a");
  CHECK(store.pttl("key3") == 0);
  CHECK(store.stats().expired_keys == 2);
  if (start == kMax - 60000) {
    // The clock reads INT64_MAX now: key3 can never expire, and any relative expiry overflows.
    CHECK(store.setex("key4", 1, "x") == Errc::invalid_expire_time);
    CHECK(store.psetex("key4", 1, "x") == Errc::invalid_expire_time);
    CHECK(store.set("key4", "x", PxAt{kMax}) == true);  // == now: not stored (D4)
    CHECK(store.exists("key4") == false);
  } else {
    clock.set(start + 60001);
    CHECK(show(store.get("key3")) == "(nil)");
    CHECK(store.stats().expired_keys == 3);
  }
  CHECK(show(store.get("p")) == "b");
}
