// tests/backend/test_conformance.cpp: one contract, several engines.
//
// Every case runs on ExpiringStore and ConcurrentStore of 1, 4 and 64 shards (on a ManualClock)
// and on RedisStore
// against a real redis-server and a real three-node Redis Cluster (backends.hpp). Every reply
// Redis defines must agree exactly; where time passes between two calls on a server, a
// relative reading (TTL, PTTL) is checked within B::kSlackMs, and absolute ones (EXPIRETIME,
// PEXPIRETIME of an absolute deadline) exactly. Keys of one multi-key call share a hash tag,
// so that they share a cluster slot. docs/semantics.md ("Backends") lists what differs
// between the engines: only timing.
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/conformance.hpp"
#include "catch.hpp"

using expiring::Errc;
using expiring::Ex;
using expiring::ExAt;
using expiring::ExpireFlags;
using expiring::KeepTtl;
using expiring::Persist;
using expiring::Px;
using expiring::PxAt;
using expiring::SetCond;
using backend_test::get;
using backend_test::get_many;
using backend_test::Str;

namespace {
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
}  // namespace

#define BACKENDS                                                                                            \
  backend_test::InProcess, backend_test::Concurrent1, backend_test::Concurrent, backend_test::Concurrent64, \
      backend_test::Standalone, backend_test::Cluster

#define INT_BACKENDS                                                                                   \
  backend_test::InProcessInt, backend_test::Concurrent1Int, backend_test::ConcurrentInt,              \
      backend_test::Concurrent64Int, backend_test::StandaloneInt, backend_test::ClusterInt

TEMPLATE_TEST_CASE("conformance: set, get, exists, touch, del, unlink", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(get(s, "k") == std::nullopt);
  CHECK_FALSE(s.exists("k"));
  CHECK_FALSE(s.touch("k"));
  CHECK(s.set("k", "v") == true);
  CHECK(get(s, "k") == Str("v"));
  CHECK(s.exists("k"));
  CHECK(s.touch("k"));
  CHECK(s.set("k", "w") == true);
  CHECK(get(s, "k") == Str("w"));
  CHECK(s.del("k"));
  CHECK_FALSE(s.del("k"));
  CHECK(get(s, "k") == std::nullopt);
  CHECK(s.set("u", "1") == true);
  CHECK(s.unlink("u"));
  CHECK_FALSE(s.unlink("u"));
  CHECK_FALSE(s.exists("u"));
  // Bytes, not C strings: an embedded NUL and an empty value.
  const Str nul("a\0b", 3);
  CHECK(s.set(nul, Str("x\0y", 3)) == true);
  CHECK(get(s, nul) == Str("x\0y", 3));
  CHECK(s.set("empty", "") == true);
  CHECK(get(s, "empty") == Str(""));
}

TEMPLATE_TEST_CASE("conformance: SET NX and XX", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("k", "1", SetCond::XX) == false);
  CHECK_FALSE(s.exists("k"));
  CHECK(s.set("k", "1", SetCond::NX) == true);
  CHECK(s.set("k", "2", SetCond::NX) == false);
  CHECK(get(s, "k") == Str("1"));
  CHECK(s.set("k", "3", SetCond::XX) == true);
  CHECK(get(s, "k") == Str("3"));
  CHECK(s.setnx("k", "4") == false);
  CHECK(s.setnx("n", "4") == true);
  CHECK(get(s, "n") == Str("4"));
}

TEMPLATE_TEST_CASE("conformance: SET GET returns the old value whether or not it writes", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set_get("k", "1") == std::optional<Str>());
  CHECK(s.set_get("k", "2") == std::optional<Str>("1"));
  CHECK(s.set_get("k", "3", {}, SetCond::NX) == std::optional<Str>("2"));
  CHECK(get(s, "k") == Str("2"));
  CHECK(s.set_get("m", "3", {}, SetCond::XX) == std::optional<Str>());
  CHECK_FALSE(s.exists("m"));
  CHECK(s.getset("k", "9") == std::optional<Str>("2"));
  CHECK(get(s, "k") == Str("9"));
}

TEMPLATE_TEST_CASE("conformance: SET's expiry arguments", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("ex", "v", Ex{100}) == true);
  CHECK_NEAR_BELOW(s.ttl("ex"), 100, 1);
  CHECK_NEAR_BELOW(s.pttl("ex"), 100'000, TestType::kSlackMs);
  CHECK(s.set("px", "v", Px{50'000}) == true);
  CHECK_NEAR_BELOW(s.pttl("px"), 50'000, TestType::kSlackMs);
  CHECK(s.set("px", "v", std::chrono::seconds(7)) == true);
  CHECK_NEAR_BELOW(s.pttl("px"), 7'000, TestType::kSlackMs);

  // Absolute deadlines read back exactly.
  const std::int64_t at = b.now_ms() + 3'600'000 + 499;
  CHECK(s.set("pxat", "v", PxAt{at}) == true);
  CHECK(s.pexpiretime("pxat") == at);
  CHECK(s.expiretime("pxat") == (at + 500) / 1000);  // rounded half up (semantics.md D6)
  const std::int64_t at_s = at / 1000 + 10;
  CHECK(s.set("exat", "v", ExAt{at_s}) == true);
  CHECK(s.expiretime("exat") == at_s);
  CHECK(s.pexpiretime("exat") == at_s * 1000);
  CHECK(s.set("tp", "v", std::chrono::system_clock::time_point(std::chrono::milliseconds(at))) == true);
  CHECK(s.pexpiretime("tp") == at);

  // SET without an expiry removes the TTL; KEEPTTL keeps it.
  CHECK(s.set("pxat", "w", KeepTtl{}) == true);
  CHECK(s.pexpiretime("pxat") == at);
  CHECK(get(s, "pxat") == Str("w"));
  CHECK(s.set("pxat", "x") == true);
  CHECK(s.pexpiretime("pxat") == -1);
  CHECK(s.ttl("pxat") == -1);
  CHECK(s.pttl("nokey") == -2);
  CHECK(s.ttl("nokey") == -2);
  CHECK(s.expiretime("nokey") == -2);
  CHECK(s.pexpiretime("nokey") == -2);
  // KEEPTTL on a key without TTL, or a new key: no TTL.
  CHECK(s.set("fresh", "v", KeepTtl{}) == true);
  CHECK(s.pttl("fresh") == -1);
  // setex / psetex.
  CHECK(s.setex("se", 20, "v").ok());
  CHECK_NEAR_BELOW(s.pttl("se"), 20'000, TestType::kSlackMs);
  CHECK(s.psetex("pse", 20'000, "v").ok());
  CHECK_NEAR_BELOW(s.pttl("pse"), 20'000, TestType::kSlackMs);
}

TEMPLATE_TEST_CASE("conformance: SET with a deadline already past (D4)", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("k", "old") == true);
  // Both report success and then show no key (Redis stores a dead key; the store stores none).
  CHECK(s.set("k", "new", PxAt{b.now_ms() - 1000}) == true);
  CHECK(get(s, "k") == std::nullopt);
  CHECK_FALSE(s.exists("k"));
  CHECK(s.ttl("k") == -2);
  CHECK(s.set("k", "old") == true);
  CHECK(s.set_get("k", "new", ExAt{1}) == std::optional<Str>("old"));
  CHECK_FALSE(s.exists("k"));
  CHECK(s.set("nx", "v", PxAt{1}, SetCond::NX) == true);
  CHECK_FALSE(s.exists("nx"));
}

TEMPLATE_TEST_CASE("conformance: SET's invalid expiry is refused and changes nothing", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("k", "v") == true);
  CHECK(s.set("k", "w", Ex{0}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", Px{-1}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", ExAt{0}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", PxAt{-5}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", Ex{kMax}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", Ex{kMax / 1000 + 1}) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", Px{kMax}) == Errc::invalid_expire_time);  // now + PX overflows
  CHECK(s.set("k", "w", std::chrono::hours::max()) == Errc::invalid_expire_time);
  CHECK(s.set("k", "w", Ex{0}, SetCond::NX) == Errc::invalid_expire_time);
  CHECK(s.set_get("k", "w", Px{0}) == Errc::invalid_expire_time);
  CHECK(s.setex("k", 0, "w") == Errc::invalid_expire_time);
  CHECK(s.psetex("k", -3, "w") == Errc::invalid_expire_time);
  CHECK(s.set("new", "w", Ex{-1}) == Errc::invalid_expire_time);
  CHECK_FALSE(s.exists("new"));
  CHECK(get(s, "k") == Str("v"));
  CHECK(s.ttl("k") == -1);
  // A per-call jitter that is invalid: a typed error before anything is sent.
  CHECK(s.set("k", "w", Ex{10}.with(expiring::Jitter::percent(101))) == Errc::out_of_range);
  CHECK(get(s, "k") == Str("v"));
}

TEMPLATE_TEST_CASE("conformance: GETEX", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  // A missing key answers nil before its option is validated, as Redis does.
  CHECK(s.getex("k") == std::optional<Str>());
  CHECK(s.getex("k", Ex{0}) == std::optional<Str>());
  CHECK(s.getex("k", Px{100}.with(expiring::Jitter::percent(200))) == std::optional<Str>());
  CHECK(s.set("k", "v") == true);
  CHECK(s.getex("k", Px{100}.with(expiring::Jitter::percent(200))) == Errc::out_of_range);
  CHECK(s.getex("k") == std::optional<Str>("v"));
  CHECK(s.ttl("k") == -1);
  CHECK(s.getex("k", Ex{0}) == Errc::invalid_expire_time);
  CHECK(s.getex("k", Px{kMax}) == Errc::invalid_expire_time);
  CHECK(s.ttl("k") == -1);
  CHECK(s.getex("k", Px{30'000}) == std::optional<Str>("v"));
  CHECK_NEAR_BELOW(s.pttl("k"), 30'000, TestType::kSlackMs);
  const std::int64_t at = b.now_ms() + 600'000;
  CHECK(s.getex("k", PxAt{at}) == std::optional<Str>("v"));
  CHECK(s.pexpiretime("k") == at);
  CHECK(s.getex("k", ExAt{at / 1000 + 5}) == std::optional<Str>("v"));
  CHECK(s.expiretime("k") == at / 1000 + 5);
  CHECK(s.getex("k", Persist{}) == std::optional<Str>("v"));
  CHECK(s.pttl("k") == -1);
  // A deadline in the past deletes, and still returns the value.
  CHECK(s.getex("k", PxAt{1}) == std::optional<Str>("v"));
  CHECK_FALSE(s.exists("k"));
}

TEMPLATE_TEST_CASE("conformance: GETDEL", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.getdel("k") == std::nullopt);
  CHECK(s.set("k", "v", Ex{100}) == true);
  CHECK(s.getdel("k") == Str("v"));
  CHECK(s.getdel("k") == std::nullopt);
  CHECK(s.ttl("k") == -2);
}

TEMPLATE_TEST_CASE("conformance: EXPIRE family and its flags", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.expire("k", 100) == false);
  CHECK(s.pexpire("k", 100) == false);
  CHECK(s.expireat("k", 2'000'000'000) == false);
  CHECK(s.pexpireat("k", 2'000'000'000'000) == false);
  CHECK(s.set("k", "v") == true);
  CHECK(s.expire("k", 100, ExpireFlags::XX) == false);  // no TTL yet
  CHECK(s.expire("k", 100, ExpireFlags::GT) == false);  // no TTL = infinite
  CHECK(s.expire("k", 100, ExpireFlags::NX) == true);
  CHECK(s.expire("k", 200, ExpireFlags::NX) == false);
  CHECK_NEAR_BELOW(s.ttl("k"), 100, 1);
  CHECK(s.expire("k", 50, ExpireFlags::GT) == false);
  CHECK(s.expire("k", 200, ExpireFlags::GT) == true);
  CHECK(s.expire("k", 300, ExpireFlags::LT) == false);
  CHECK(s.expire("k", 150, ExpireFlags::LT) == true);
  CHECK(s.expire("k", 160, ExpireFlags::XX | ExpireFlags::GT) == true);
  CHECK(s.expire("k", 170, ExpireFlags::XX | ExpireFlags::LT) == false);
  CHECK_NEAR_BELOW(s.ttl("k"), 160, 1);
  CHECK(s.pexpire("k", 90'000) == true);
  CHECK_NEAR_BELOW(s.pttl("k"), 90'000, TestType::kSlackMs);
  CHECK(s.expire("k", std::chrono::minutes(2)) == true);
  CHECK_NEAR_BELOW(s.pttl("k"), 120'000, TestType::kSlackMs);
  const std::int64_t at = b.now_ms() + 1'000'000;
  CHECK(s.pexpireat("k", at) == true);
  CHECK(s.pexpiretime("k") == at);
  CHECK(s.expireat("k", at / 1000 + 100) == true);
  CHECK(s.expiretime("k") == at / 1000 + 100);
  CHECK(s.pexpireat("k", std::chrono::system_clock::time_point(std::chrono::milliseconds(at))) == true);
  CHECK(s.pexpiretime("k") == at);
  // The largest deadline there is.
  CHECK(s.pexpireat("k", kMax) == true);
  CHECK(s.pexpiretime("k") == kMax);
  // No TTL counts as infinite for LT.
  CHECK(s.set("n", "v") == true);
  CHECK(s.expire("n", 100, ExpireFlags::LT) == true);
}

TEMPLATE_TEST_CASE("conformance: EXPIRE's errors come before the key's lookup", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  for (const char* key : {"missing", "k"}) {
    if (std::string(key) == "k") REQUIRE(s.set("k", "v", Ex{100}) == true);
    CHECK(s.expire(key, 10, ExpireFlags::NX | ExpireFlags::XX) == Errc::nx_and_xx_gt_lt);
    CHECK(s.expire(key, 10, ExpireFlags::NX | ExpireFlags::GT) == Errc::nx_and_xx_gt_lt);
    CHECK(s.pexpire(key, 10, ExpireFlags::NX | ExpireFlags::LT) == Errc::nx_and_xx_gt_lt);
    CHECK(s.expire(key, 10, ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
    CHECK(s.expireat(key, 10, ExpireFlags::GT | ExpireFlags::LT | ExpireFlags::XX) == Errc::gt_and_lt);
    CHECK(s.expire(key, kMax) == Errc::invalid_expire_time);
    CHECK(s.expire(key, kMax / 1000 + 1) == Errc::invalid_expire_time);
    CHECK(s.pexpire(key, kMax) == Errc::invalid_expire_time);
    CHECK(s.expireat(key, kMax) == Errc::invalid_expire_time);
    CHECK(s.expire(key, std::chrono::hours::max()) == Errc::invalid_expire_time);
    CHECK(s.expire(key, std::chrono::hours::max(), ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
    CHECK(s.expire(key, 10, expiring::Jitter::percent(200)) == Errc::out_of_range);
    CHECK(s.pexpire(key, kMax, expiring::Jitter::percent(10)) == Errc::invalid_expire_time);  // jitter never rescues it
  }
  CHECK_NEAR_BELOW(s.ttl("k"), 100, 1);
  CHECK_FALSE(s.exists("missing"));
}

TEMPLATE_TEST_CASE("conformance: a deadline at or before now deletes", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("a", "v") == true);
  CHECK(s.expire("a", 0) == true);
  CHECK_FALSE(s.exists("a"));
  CHECK(s.set("b", "v") == true);
  CHECK(s.pexpire("b", -100) == true);
  CHECK_FALSE(s.exists("b"));
  CHECK(s.set("c", "v") == true);
  CHECK(s.expireat("c", 1) == true);
  CHECK_FALSE(s.exists("c"));
  CHECK(s.set("d", "v", Ex{100}) == true);
  CHECK(s.pexpireat("d", b.now_ms() - 1) == true);
  CHECK(get(s, "d") == std::nullopt);
  // A flag that fails keeps the key.
  CHECK(s.set("e", "v") == true);
  CHECK(s.expire("e", 0, ExpireFlags::XX) == false);
  CHECK(s.exists("e"));
}

TEMPLATE_TEST_CASE("conformance: PERSIST", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK_FALSE(s.persist("k"));
  CHECK(s.set("k", "v") == true);
  CHECK_FALSE(s.persist("k"));
  CHECK(s.expire("k", 100) == true);
  CHECK(s.persist("k"));
  CHECK(s.ttl("k") == -1);
  CHECK(get(s, "k") == Str("v"));
}

TEMPLATE_TEST_CASE("conformance: keys expire when their time has passed", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("short", "v", Px{150}) == true);
  CHECK(s.set("long", "v", Ex{100}) == true);
  CHECK(s.set("{t}a", "v", Px{150}) == true);
  CHECK(s.exists("short"));
  b.pass(400);
  CHECK(get(s, "short") == std::nullopt);
  CHECK_FALSE(s.exists("short"));
  CHECK(s.ttl("short") == -2);
  CHECK(s.set("short", "new", SetCond::XX) == false);  // expired counts as missing
  CHECK(s.set("short", "new", SetCond::NX) == true);
  CHECK(s.exists("long"));
  CHECK(s.rename("{t}a", "{t}b") == Errc::no_such_key);
  CHECK(s.getex("{t}a", Px{100}) == std::optional<Str>());
}

TEMPLATE_TEST_CASE("conformance: RENAME and RENAMENX", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.rename("{r}a", "{r}b") == Errc::no_such_key);
  CHECK(s.renamenx("{r}a", "{r}b") == Errc::no_such_key);
  const std::int64_t at = b.now_ms() + 500'000;
  CHECK(s.set("{r}a", "1", PxAt{at}) == true);
  CHECK(s.rename("{r}a", "{r}b").ok());
  CHECK_FALSE(s.exists("{r}a"));
  CHECK(get(s, "{r}b") == Str("1"));
  CHECK(s.pexpiretime("{r}b") == at);  // the TTL moves with the value
  CHECK(s.set("{r}c", "2") == true);
  CHECK(s.rename("{r}c", "{r}b").ok());  // overwrites, and the TTL is the source's (none)
  CHECK(get(s, "{r}b") == Str("2"));
  CHECK(s.pexpiretime("{r}b") == -1);
  CHECK(s.set("{r}d", "3") == true);
  CHECK(s.renamenx("{r}d", "{r}b") == false);
  CHECK(get(s, "{r}d") == Str("3"));
  CHECK(s.renamenx("{r}d", "{r}e") == true);
  CHECK(get(s, "{r}e") == Str("3"));
  // The same key: fine if it exists.
  CHECK(s.rename("{r}e", "{r}e").ok());
  CHECK(get(s, "{r}e") == Str("3"));
  CHECK(s.renamenx("{r}e", "{r}e") == false);
  CHECK(s.rename("{r}zz", "{r}zz") == Errc::no_such_key);
}

TEMPLATE_TEST_CASE("conformance: COPY", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.copy("{c}a", "{c}b") == false);
  CHECK(s.set("{c}a", "1", Ex{500}) == true);
  CHECK(s.copy("{c}a", "{c}a") == Errc::same_key);
  CHECK(s.copy("{c}a", "{c}b") == true);
  CHECK(get(s, "{c}b") == Str("1"));
  CHECK(s.pexpiretime("{c}b") == s.pexpiretime("{c}a"));
  CHECK(s.set("{c}a", "2") == true);
  CHECK(s.copy("{c}a", "{c}b") == false);
  CHECK(get(s, "{c}b") == Str("1"));
  CHECK(s.copy("{c}a", "{c}b", true) == true);
  CHECK(get(s, "{c}b") == Str("2"));
  CHECK(s.ttl("{c}b") == -1);
}

TEMPLATE_TEST_CASE("conformance: MSET, MSETNX, get_many and del_many", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("{m}a", "old", Ex{100}) == true);
  const std::vector<std::pair<Str, Str>> pairs{{"{m}a", "1"}, {"{m}b", "2"}, {"{m}c", "3"}};
  CHECK(s.mset(pairs).ok());
  CHECK(s.ttl("{m}a") == -1);  // MSET removes the TTL, as SET does
  std::size_t hits = 0;
  const auto got = get_many(s, {"{m}a", "{m}x", "{m}b", "{m}c"}, &hits);
  CHECK(hits == 3);
  CHECK(got == std::vector<std::optional<Str>>{Str("1"), std::nullopt, Str("2"), Str("3")});
  CHECK(s.msetnx(std::vector<std::pair<Str, Str>>{{"{m}c", "9"}, {"{m}d", "4"}}) == false);
  CHECK_FALSE(s.exists("{m}d"));
  CHECK(get(s, "{m}c") == Str("3"));
  CHECK(s.msetnx(std::vector<std::pair<Str, Str>>{{"{m}d", "4"}, {"{m}e", "5"}}) == true);
  CHECK(get(s, "{m}e") == Str("5"));
  CHECK(s.del_many(std::vector<Str>{"{m}a", "{m}b", "{m}x", "{m}e"}) == 3);
  CHECK(get_many(s, {"{m}a", "{m}c", "{m}d"}) == std::vector<std::optional<Str>>{std::nullopt, Str("3"), Str("4")});
  // Keys spread over slots (and nodes): get_many and del_many split by slot in a cluster.
  std::vector<Str> spread;
  for (int i = 0; i < 50; ++i) {
    spread.push_back("spread" + std::to_string(i));
    REQUIRE(s.set(spread.back(), std::to_string(i)) == true);
  }
  spread.push_back("spread-missing");
  const auto many = get_many(s, spread, &hits);
  CHECK(hits == 50);
  for (int i = 0; i < 50; ++i) CHECK(many[static_cast<std::size_t>(i)] == std::to_string(i));
  CHECK(many.back() == std::nullopt);
  CHECK(s.del_many(spread) == 50);
}

TEMPLATE_TEST_CASE("conformance: the shared overload sets and their primitives", "[conformance]", BACKENDS) {
  // api/key_commands.hpp: every overload reduces to expire_request() / set() / set_get(), and
  // get_many() by copy has one signature on every store.
  BACKEND_SETUP();
  using expiring::ExpireRequest;
  CHECK(s.set("k", "v", SetCond::XX) == false);
  CHECK(s.set("k", "v", SetCond::NX) == true);
  CHECK(s.expire_request("k", ExpireRequest::expire(100)) == true);
  CHECK_NEAR_BELOW(s.ttl("k"), 100, 1);
  CHECK(s.expire_request("k", ExpireRequest::pexpire(50'000, ExpireFlags::GT)) == false);
  CHECK(s.expire_request("k", ExpireRequest::after(std::chrono::seconds(50), ExpireFlags::LT, {})) == true);
  CHECK_NEAR_BELOW(s.pttl("k"), 50'000, TestType::kSlackMs);
  const std::int64_t at = b.now_ms() + 600'000;
  CHECK(s.expire_request("k", ExpireRequest::pexpireat(at)) == true);
  CHECK(s.pexpiretime("k") == at);
  CHECK(s.expire_request("k", ExpireRequest::expireat(at / 1000 + 5, ExpireFlags::NX)) == false);
  CHECK(s.expire_request("k", ExpireRequest::after(std::chrono::hours::max(), ExpireFlags::None, {})) ==
        Errc::invalid_expire_time);
  CHECK(s.expire_request("k", ExpireRequest::expire(1, ExpireFlags::GT | ExpireFlags::LT)) == Errc::gt_and_lt);
  CHECK(s.pexpiretime("k") == at);
  CHECK(s.expire_request_if_equal("k", Str("other"), ExpireRequest::pexpireat(at + 1)) == false);
  CHECK(s.expire_request_if_equal("k", Str("v"), ExpireRequest::pexpireat(at + 1)) == true);
  CHECK(s.pexpiretime("k") == at + 1);
  CHECK(s.getset("k", "w") == std::optional<Str>("v"));
  CHECK(s.ttl("k") == -1);
  CHECK(s.setex("e", std::chrono::seconds(30), "x").ok());
  CHECK_NEAR_BELOW(s.pttl("e"), 30'000, TestType::kSlackMs);
  const std::vector<Str> keys{"k", "missing", "e"};
  std::optional<Str> out[3];
  CHECK(s.get_many(keys, out) == 2);
  CHECK(out[0] == Str("w"));
  CHECK(out[1] == std::nullopt);
  CHECK(out[2] == Str("x"));
}

TEMPLATE_TEST_CASE("conformance: compare-and-extend", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  const std::int64_t at = b.now_ms() + 300'000;
  CHECK(s.pexpireat_if_equal("lock", "me", at) == false);
  CHECK(s.set("lock", "me", Px{10'000}) == true);
  CHECK(s.pexpireat_if_equal("lock", "you", at) == false);
  CHECK_NEAR_BELOW(s.pttl("lock"), 10'000, TestType::kSlackMs);
  CHECK(s.pexpireat_if_equal("lock", "me", at) == true);
  CHECK(s.pexpiretime("lock") == at);
  CHECK(s.pexpireat_if_equal("lock", "me", at - 1000, ExpireFlags::GT) == false);
  CHECK(s.pexpireat_if_equal("lock", "me", at + 1000, ExpireFlags::GT) == true);
  CHECK(s.pexpiretime("lock") == at + 1000);
  CHECK(s.pexpireat_if_equal("lock", "me", std::chrono::system_clock::time_point(std::chrono::milliseconds(at))) ==
        true);
  CHECK(s.pexpiretime("lock") == at);
  // Flag errors come first, whatever the key holds.
  CHECK(s.pexpireat_if_equal("lock", "you", at, ExpireFlags::NX | ExpireFlags::XX) == Errc::nx_and_xx_gt_lt);
  CHECK(s.pexpireat_if_equal("none", "me", at, ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
  using HoursPoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>;
  CHECK(s.pexpireat_if_equal("lock", "me", HoursPoint::max()) == Errc::invalid_expire_time);  // beyond int64 ms
  CHECK(s.pexpiretime("lock") == at);
  // A past deadline deletes, and counts as done.
  CHECK(s.pexpireat_if_equal("lock", "me", 1) == true);
  CHECK_FALSE(s.exists("lock"));
  // del_if_equal.
  CHECK(s.set("lease", "me") == true);
  CHECK_FALSE(s.del_if_equal("lease", "you"));
  CHECK(s.exists("lease"));
  CHECK(s.del_if_equal("lease", "me"));
  CHECK_FALSE(s.exists("lease"));
  CHECK_FALSE(s.del_if_equal("lease", "me"));
}

TEMPLATE_TEST_CASE("conformance: tick() exists on every store", "[conformance]", BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.set("k", "v", Px{100}) == true);
  const expiring::TickReport r = s.tick();
  if constexpr (TestType::kRemote) {
    CHECK_FALSE(r.ran);  // the server expires keys itself
    CHECK(r.expired == 0);
  } else {
    CHECK(r.expired == 0);  // nothing is due yet
  }
  CHECK(s.exists("k"));
}

TEMPLATE_TEST_CASE("conformance: INCRBY keeps the TTL and refuses overflow", "[conformance]", INT_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.incr_by("n", 5) == std::int64_t{5});  // a missing key counts from 0, without TTL
  CHECK(s.ttl("n") == -1);
  CHECK(s.incr_by("n", -7) == std::int64_t{-2});
  CHECK(s.expire("n", 100) == true);
  CHECK(s.incr_by("n", 1) == std::int64_t{-1});
  CHECK_NEAR_BELOW(s.ttl("n"), 100, 1);  // an update keeps the TTL
  CHECK(s.set("big", kMax - 1) == true);
  CHECK(s.incr_by("big", 1) == kMax);
  CHECK(s.incr_by("big", 1) == Errc::overflow);
  CHECK(get(s, "big") == std::optional<std::int64_t>(kMax));
  CHECK(s.set("small", std::numeric_limits<std::int64_t>::min()) == true);
  CHECK(s.incr_by("small", -1) == Errc::overflow);
  CHECK(s.incr_by("none", std::numeric_limits<std::int64_t>::min()) == std::numeric_limits<std::int64_t>::min());
  CHECK(s.set("gone", 1, Px{100}) == true);
  b.pass(300);
  CHECK(s.incr_by("gone", 1) == std::int64_t{1});  // expired counts as missing
  CHECK(s.ttl("gone") == -1);
}
