// tests/backend/test_conformance_hashes.cpp: hashes with field TTLs (Redis 7.4), one contract
// over every store of hashes: ExpiringStore and ConcurrentStore of FieldMap<string, string>
// on a ManualClock, and RedisStore on expiring-server (backends.hpp; Debian's redis-server 7.0
// has no field TTLs, so RedisStore is checked there only for the error it gives). The same
// code compiles against each: the multi-field and time-argument forms come from
// api/hash_commands.hpp on all three. On a server, time passes between calls: a relative
// reading is checked within B::kSlackMs, an absolute one exactly.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/conformance.hpp"
#include "catch.hpp"

using backend_test::hget;
using backend_test::Str;
using expiring::Errc;
using expiring::ExpireFlags;
using expiring::FieldReply;
using Codes = std::vector<int>;
using Times = std::vector<std::int64_t>;
using Pairs = std::vector<std::pair<Str, Str>>;
using Names = std::vector<Str>;

#define HASH_BACKENDS                                                                          \
  backend_test::InProcessHash, backend_test::Concurrent1Hash, backend_test::ConcurrentHash, \
      backend_test::Concurrent64Hash, backend_test::OwnServerHash

namespace {
constexpr std::int64_t kCap = (std::int64_t{1} << 46) - 1;  // the largest field deadline

template <class S>
Pairs all_fields(S& s, const Str& key) {
  auto r = s.hgetall(key);
  REQUIRE(r.ok());
  Pairs p = r.value();
  std::sort(p.begin(), p.end());
  return p;
}
}  // namespace

TEMPLATE_TEST_CASE("conformance hashes: HSET, HGET, HMGET, HDEL, HLEN, HEXISTS, HGETALL", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hlen("h") == std::size_t{0});
  CHECK(s.hset("h", "a", "1") == std::size_t{1});
  CHECK(s.hset("h", "a", "2") == std::size_t{0});
  CHECK(s.hset("h", Pairs{{"b", "3"}, {"c", "4"}}) == std::size_t{2});
  CHECK(s.hset("h", {{"c", "5"}, {"d", "6"}}) == std::size_t{1});
  CHECK(s.hsetnx("h", "a", "x") == false);
  CHECK(s.hsetnx("h", "e", "7") == true);
  CHECK(hget(s, "h", "a") == std::optional<Str>("2"));
  CHECK(hget(s, "h", "zz") == std::nullopt);
  CHECK(hget(s, "nokey", "a") == std::nullopt);
  CHECK(s.hlen("h") == std::size_t{5});
  CHECK(s.hexists("h", "d") == true);
  CHECK(s.hexists("h", "zz") == false);
  CHECK(all_fields(s, "h") == Pairs{{"a", "2"}, {"b", "3"}, {"c", "5"}, {"d", "6"}, {"e", "7"}});
  auto keys = s.hkeys("h").value();
  std::sort(keys.begin(), keys.end());
  CHECK(keys == Names{"a", "b", "c", "d", "e"});
  CHECK(s.hvals("h").value().size() == 5);
  CHECK(s.hdel("h", Names{"a", "zz", "b"}) == std::size_t{2});
  CHECK(s.hdel("h", {"c"}) == std::size_t{1});
  CHECK(s.hincrby("h", "n", 5) == std::int64_t{5});
  CHECK(s.hincrby("h", "n", -7) == std::int64_t{-2});
  CHECK(s.hincrby("h", "e", 1) == std::int64_t{8});
  CHECK(s.hset("h", "x", "abc") == std::size_t{1});
  CHECK(s.hincrby("h", "x", 1) == Errc::not_an_integer);
  CHECK(s.hincrby("h", "n", std::numeric_limits<std::int64_t>::min()) == Errc::overflow);
  CHECK(hget(s, "h", "n") == std::optional<Str>("-2"));
  // The last field's HDEL deletes the key.
  CHECK(s.hdel("h", Names{"d", "e", "n", "x"}) == std::size_t{4});
  CHECK_FALSE(s.exists("h"));
}

TEMPLATE_TEST_CASE("conformance hashes: HVISIT of one field shows its value or says it is absent", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hset("h", Pairs{{"a", "1"}, {"b", "2"}}) == std::size_t{2});
  std::vector<Str> seen;
  auto keep = [&](const Str& v) { seen.push_back(v); };
  CHECK(s.hvisit("h", "b", keep) == true);
  CHECK(s.hvisit("h", "zz", keep) == false);
  CHECK(s.hvisit("nokey", "a", keep) == false);
  CHECK(seen == std::vector<Str>{"2"});
  // A field past its deadline is not shown.
  CHECK(s.hpexpire("h", 100, {"a"}) == Codes{FieldReply::set});
  b.pass(TestType::kRemote ? 300 : 101);
  CHECK(s.hvisit("h", "a", keep) == false);
  CHECK(seen.size() == 1);
}

TEMPLATE_TEST_CASE("conformance hashes: the HEXPIRE family, its flags and codes", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hexpire("h", 100, {"a"}) == Codes{FieldReply::no_field});  // no key
  CHECK(s.hset("h", {{"a", "1"}, {"b", "2"}, {"c", "3"}}) == std::size_t{3});
  CHECK(s.hexpire("h", 100, {"a", "zz"}) == Codes{FieldReply::set, FieldReply::no_field});
  CHECK(s.hexpire("h", 200, {"a", "b"}, ExpireFlags::NX) == Codes{FieldReply::condition_not_met, FieldReply::set});
  CHECK(s.hexpire("h", 300, {"a", "c"}, ExpireFlags::XX) == Codes{FieldReply::set, FieldReply::condition_not_met});
  CHECK(s.hexpire("h", 250, {"a", "c"}, ExpireFlags::GT) == Codes{FieldReply::condition_not_met, FieldReply::condition_not_met});
  CHECK(s.hexpire("h", 250, {"a", "c"}, ExpireFlags::LT) == Codes{FieldReply::set, FieldReply::set});
  CHECK(s.httl("h", {"a", "b", "c", "zz"}) == Times{250, 200, 250, FieldReply::no_field});  // rounded up
  CHECK_NEAR_BELOW(s.hpttl("h", {"b"}).value()[0], 200'000, TestType::kSlackMs);
  const std::int64_t now = b.now_ms();
  CHECK(s.hpexpireat("h", now + 200'000, {"b"}) == Codes{FieldReply::set});
  CHECK(s.hpexpiretime("h", {"b"}) == Times{now + 200'000});
  CHECK(s.hexpiretime("h", {"b"}) == Times{(now + 200'000 + 999) / 1000});
  CHECK(s.hpexpire("h", 1500, {"c"}) == Codes{FieldReply::set});
  CHECK(s.httl("h", {"c"}) == Times{2});  // rounded up
  CHECK(s.hpexpireat("h", now + 5000, {"c"}) == Codes{FieldReply::set});
  CHECK(s.hpexpiretime("h", {"c"}) == Times{now + 5000});
  CHECK(s.hexpireat("h", now / 1000 + 10, {"c"}) == Codes{FieldReply::set});
  CHECK(s.hexpiretime("h", {"c"}) == Times{now / 1000 + 10});
  // std::chrono forms, the array form.
  CHECK(s.hpexpire("h", std::chrono::seconds(7), {"c"}) == Codes{FieldReply::set});
  CHECK_NEAR_BELOW(s.hpttl("h", {"c"}).value()[0], 7000, TestType::kSlackMs);
  CHECK(s.hpexpireat("h", std::chrono::system_clock::time_point(std::chrono::milliseconds(now + 9000)), {"c"}) ==
        Codes{FieldReply::set});
  CHECK(s.hpexpiretime("h", {"c"}) == Times{now + 9000});
  int out[2] = {7, 7};
  CHECK(s.hpexpire("h", 8000, Names{"c", "zz"}, ExpireFlags::None, out).ok());
  CHECK(out[0] == FieldReply::set);
  CHECK(out[1] == FieldReply::no_field);
  // HPERSIST.
  CHECK(s.hpersist("h", {"a", "a", "zz"}) == Codes{FieldReply::persisted, FieldReply::no_ttl, FieldReply::no_field});
  CHECK(s.httl("h", {"a"}) == Times{FieldReply::no_ttl});
  // A time at or before now deletes the field (conditions first).
  CHECK(s.hpexpireat("h", now - 1, {"a"}, ExpireFlags::GT) == Codes{FieldReply::condition_not_met});
  CHECK(s.hpexpireat("h", now, {"a"}) == Codes{FieldReply::deleted});
  CHECK(s.hexpire("h", 0, {"b", "c"}) == Codes{FieldReply::deleted, FieldReply::deleted});
  CHECK_FALSE(s.exists("h"));  // the last field went, and the key with it
}

TEMPLATE_TEST_CASE("conformance hashes: field TTL errors change nothing", "[conformance][hashes]", HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hset("h", "a", "1") == std::size_t{1});
  CHECK(s.hexpire("h", -1, {"a"}) == Errc::negative_expire_time);
  CHECK(s.hpexpireat("h", kCap + 1, {"a"}) == Errc::invalid_expire_time);
  CHECK(s.hexpireat("h", kCap / 1000 + 1, {"a"}) == Errc::invalid_expire_time);
  CHECK(s.hpexpire("h", kCap, {"a"}) == Errc::invalid_expire_time);  // now + cap is beyond it
  CHECK(s.hpexpire("h", std::chrono::hours::max(), {"a"}) == Errc::invalid_expire_time);
  CHECK(s.hexpire("h", 10, {"a"}, ExpireFlags::NX | ExpireFlags::XX) == Errc::nx_and_xx_gt_lt);
  CHECK(s.hexpire("h", 10, {"a"}, ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
  CHECK(s.hpexpireat("h", kCap, {"a"}) == Codes{FieldReply::set});  // the cap itself is allowed
  CHECK(s.hpexpiretime("h", {"a"}) == Times{kCap});
  CHECK(s.hpexpire("h", -5, {"a"}) == Errc::negative_expire_time);
  CHECK(s.hpexpiretime("h", {"a"}) == Times{kCap});
}

TEMPLATE_TEST_CASE("conformance hashes: fields expire when their time has passed", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hset("h", {{"a", "1"}, {"b", "2"}}) == std::size_t{2});
  CHECK(s.hpexpire("h", 100, {"a"}) == Codes{FieldReply::set});
  CHECK(s.hpexpire("k2", 100, {"a"}) == Codes{FieldReply::no_field});
  CHECK(s.hset("k2", "only", "x") == std::size_t{1});
  CHECK(s.hpexpire("k2", 100, {"only"}) == Codes{FieldReply::set});
  if constexpr (!TestType::kRemote) {
    b.pass(100);
    CHECK(hget(s, "h", "a") == std::optional<Str>("1"));  // live at its deadline
    b.pass(1);
  } else {
    b.pass(300);
  }
  CHECK(hget(s, "h", "a") == std::nullopt);
  CHECK(s.hlen("h") == std::size_t{1});
  CHECK(all_fields(s, "h") == Pairs{{"b", "2"}});
  (void)s.tick();  // in-process: reclaims k2's only field, and the key goes
  if constexpr (!TestType::kRemote) CHECK_FALSE(s.exists("k2"));
  CHECK(s.hlen("k2") == std::size_t{0});
  CHECK(s.hset("h", "a", "3") == std::size_t{1});  // a stale field counts as absent
  // HSET clears a field's TTL; HINCRBY keeps it.
  CHECK(s.hpexpire("h", 1000, {"a", "b"}) == Codes{FieldReply::set, FieldReply::set});
  CHECK(s.hset("h", "a", "4") == std::size_t{0});
  CHECK(s.hpttl("h", {"a"}) == Times{FieldReply::no_ttl});
  CHECK(s.hset("h", "b", "10") == std::size_t{0});
  CHECK(s.hpexpire("h", 1000, {"b"}) == Codes{FieldReply::set});
  CHECK(s.hincrby("h", "b", 1) == std::int64_t{11});
  CHECK_NEAR_BELOW(s.hpttl("h", {"b"}).value()[0], 1000, TestType::kSlackMs);
}

TEMPLATE_TEST_CASE("conformance hashes: a server without field TTLs names its version", "[conformance][hashes]",
                   backend_test::StandaloneHash) {
  BACKEND_SETUP();
  CHECK(s.hset("h", "a", "1") == std::size_t{1});  // redis-server 7.0 has hashes
  CHECK(hget(s, "h", "a") == std::optional<Str>("1"));
  CHECK(s.hincrby("h", "a", 2) == std::int64_t{3});
  try {
    (void)s.hpexpire("h", 100, {"a"});
    FAIL("HPEXPIRE did not fail on redis-server 7.0");
  } catch (const expiring::RedisError& e) {
    CHECK(e.code() == Errc::server_error);
    const Str what = e.what();
    CHECK(what.find("HPEXPIRE") != Str::npos);
    CHECK(what.find("redis_version 7.0") != Str::npos);
    CHECK(what.find("Redis 7.4 or later") != Str::npos);
  }
  CHECK_THROWS_AS(s.httl("h", {"a"}), expiring::RedisError);
  try {
    (void)s.hgetex("h", {"a"}, expiring::FieldTtl::ex(10));
    FAIL("HGETEX did not fail on redis-server 7.0");
  } catch (const expiring::RedisError& e) {
    CHECK(e.code() == Errc::server_error);
    CHECK(Str(e.what()).find("Redis 8.0 or later") != Str::npos);
  }
  CHECK_THROWS_AS(s.hgetdel("h", {"a"}), expiring::RedisError);
  CHECK_THROWS_AS(s.hsetex("h", Pairs{{"a", "1"}}), expiring::RedisError);
}

TEMPLATE_TEST_CASE("conformance hashes: HEXPIRE's flag sets on RedisStore", "[conformance][hashes]",
                   backend_test::OwnServerHash) {
  BACKEND_SETUP();
  CHECK(s.hset("h", {{"a", "1"}, {"b", "2"}}) == std::size_t{2});
  CHECK(s.hexpire("h", 100, {"a"}) == Codes{FieldReply::set});
  // XX|GT is sent as GT, which means the same: a field without TTL fails both.
  CHECK(s.hexpire("h", 200, {"a", "b"}, ExpireFlags::XX | ExpireFlags::GT) ==
        Codes{FieldReply::set, FieldReply::condition_not_met});
  // XX|LT has no single Redis command.
  CHECK_THROWS_AS(s.hexpire("h", 50, {"a"}, ExpireFlags::XX | ExpireFlags::LT), std::invalid_argument);
  CHECK(s.httl("h", {"a"}) == Times{200});
  CHECK(s.hset("h", Pairs{}) == std::size_t{0});  // no field: no round trip, as in-process
  CHECK(s.hdel("h", Names{}) == std::size_t{0});
}

TEMPLATE_TEST_CASE("conformance hashes: HINCRBYFLOAT keeps the TTL, refuses what is not a number", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  CHECK(s.hincrbyfloat("h", "f", 10.5L) == Str("10.5"));
  CHECK(s.hincrbyfloat("h", "f", 0.1L) == Str("10.6"));
  CHECK(s.hincrbyfloat("h", "f", -10.6L) == Str("0"));
  CHECK(s.hincrbyfloat("h", "f", 5.0e3L) == Str("5000"));
  CHECK(s.hset("h", "i", "7") == std::size_t{1});
  CHECK(s.hincrbyfloat("h", "i", 1.25L) == Str("8.25"));
  CHECK(s.hpexpire("h", 1000, {"i"}) == Codes{FieldReply::set});
  CHECK(s.hincrbyfloat("h", "i", 1) == Str("9.25"));
  CHECK_NEAR_BELOW(s.hpttl("h", {"i"}).value()[0], 1000, TestType::kSlackMs);
  CHECK(s.hset("h", "s", "abc") == std::size_t{1});
  CHECK(s.hincrbyfloat("h", "s", 1) == Errc::not_a_float);
  CHECK(s.hset("h", "big", "1.1e4932") == std::size_t{1});
  CHECK(s.hincrbyfloat("h", "big", 1.1e4932L) == Errc::overflow);  // +inf
  CHECK(hget(s, "h", "s") == std::optional<Str>("abc"));  // nothing changed
  CHECK(hget(s, "h", "big") == std::optional<Str>("1.1e4932"));
}

TEMPLATE_TEST_CASE("conformance hashes: HRANDFIELD picks live fields, distinct or repeated", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  const auto pick = [&](std::int64_t count) {
    Pairs got;
    auto r = s.hrandfield("h", count, [&](const Str& f, const Str& v) { got.emplace_back(f, v); });
    REQUIRE(r.ok());
    CHECK(r.value() == got.size());
    return got;
  };
  CHECK(pick(3).empty());  // no key
  Pairs all;
  for (int i = 0; i < 200; ++i) all.emplace_back("f" + std::to_string(i), "v" + std::to_string(i));
  CHECK(s.hset("h", all) == std::size_t{200});
  std::sort(all.begin(), all.end());
  CHECK(pick(0).empty());
  for (std::int64_t count : {1, 7, 99, 150, 199, 200, 500}) {  // distinct, at most all
    Pairs got = pick(count);
    CHECK(got.size() == std::min<std::size_t>(static_cast<std::size_t>(count), 200));
    std::sort(got.begin(), got.end());
    CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
    CHECK(std::includes(all.begin(), all.end(), got.begin(), got.end()));
  }
  Pairs rep = pick(-1000);  // repeats allowed: 1000 of 200 must repeat
  CHECK(rep.size() == 1000);
  std::sort(rep.begin(), rep.end());
  CHECK(std::adjacent_find(rep.begin(), rep.end()) != rep.end());
  // A stale field is never picked.
  CHECK(s.hset("g", {{"live", "1"}, {"gone", "2"}}) == std::size_t{2});
  CHECK(s.hpexpire("g", 50, {"gone"}) == Codes{FieldReply::set});
  b.pass(TestType::kRemote ? 300 : 51);
  for (int round = 0; round < 20; ++round) {
    auto r = s.hrandfield("g", -5, [&](const Str& f, const Str&) { CHECK(f == "live"); });
    CHECK(r == std::size_t{5});
  }
  // A visit that stops early.
  std::size_t seen = 0;
  auto r = s.hrandfield("h", -50, [&](const Str&, const Str&) { return ++seen < 3; });
  CHECK(r == std::size_t{3});
  CHECK(s.hrandfield("nokey", -5, [](const Str&, const Str&) {}) == std::size_t{0});
}

TEMPLATE_TEST_CASE("conformance hashes: HSCAN reports every field present for the whole scan", "[conformance][hashes]",
                   HASH_BACKENDS) {
  BACKEND_SETUP();
  const auto scan_all = [&](const Str& key, std::size_t count, auto&& between) {
    std::vector<Str> seen;
    std::uint64_t cursor = 0;
    for (int calls = 0; calls < 10000; ++calls) {
      auto r = s.hscan(key, cursor, count, [&](const Str& f, const Str&) { seen.push_back(f); });
      REQUIRE(r.ok());
      cursor = r.value();
      if (cursor == 0) break;
      between();
    }
    CHECK(cursor == 0);
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  CHECK(scan_all("nokey", 10, [] {}).empty());
  Pairs fields;
  for (int i = 0; i < 1000; ++i) fields.emplace_back("f" + std::to_string(i), "v");
  CHECK(s.hset("h", fields) == std::size_t{1000});
  std::vector<Str> seen = scan_all("h", 37, [] {});
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  CHECK(seen.size() == 1000);
  // Fields deleted and added during the scan: the ones kept throughout are all reported.
  int step = 0;
  seen = scan_all("h", 50, [&] {
    std::vector<Str> gone;
    for (int j = 0; j < 20; ++j) gone.push_back("f" + std::to_string(step * 20 + j));  // f0 .. f399 go
    CHECK(s.hdel("h", gone) == std::size_t{20});
    CHECK(s.hset("h", "new" + std::to_string(step), "v") == std::size_t{1});
    ++step;
  });
  REQUIRE(step <= 20);
  for (int i = step * 20; i < 1000; ++i) {
    CHECK(std::binary_search(seen.begin(), seen.end(), "f" + std::to_string(i)));
  }
  // A small hash comes whole in one call, whatever COUNT says.
  CHECK(s.hset("small", {{"a", "1"}, {"b", "2"}, {"c", "3"}}) == std::size_t{3});
  std::size_t n = 0;
  CHECK(s.hscan("small", 0, 1, [&](const Str&, const Str&) { ++n; }) == std::uint64_t{0});
  CHECK(n == 3);
}

TEMPLATE_TEST_CASE("conformance hashes: Redis 8's HGETEX, HGETDEL and HSETEX", "[conformance][hashes]", HASH_BACKENDS) {
  BACKEND_SETUP();
  using expiring::FieldCondition;
  using expiring::FieldTtl;
  using Values = std::vector<std::optional<Str>>;
  const std::int64_t far = std::int64_t{4'000'000'000'000};  // a Unix time in ms, year 2096
  // HSETEX: the condition, then the fields with the TTL asked for.
  CHECK(s.hsetex("h", Pairs{{"a", "1"}}, FieldTtl::persist(), FieldCondition::fxx) == false);
  CHECK_FALSE(s.exists("h"));
  CHECK(s.hsetex("h", Pairs{{"a", "1"}, {"b", "2"}}) == true);
  CHECK(s.hsetex("h", Pairs{{"a", "x"}, {"c", "3"}}, FieldTtl::persist(), FieldCondition::fnx) == false);
  CHECK(s.hsetex("h", Pairs{{"a", "x"}, {"c", "3"}}, FieldTtl::persist(), FieldCondition::fxx) == false);
  CHECK(s.hsetex("h", Pairs{{"a", "x"}, {"b", "y"}}, FieldTtl::pxat(far), FieldCondition::fxx) == true);
  CHECK(s.hpexpiretime("h", {"a", "b"}) == Times{far, far});
  CHECK(s.hsetex("h", Pairs{{"a", "z"}, {"n", "9"}}, FieldTtl::keep()) == true);
  CHECK(s.hpexpiretime("h", {"a", "n"}) == Times{far, -1});
  CHECK(s.hsetex("h", Pairs{{"a", "w"}}) == true);  // no TTL argument: cleared, as HSET
  CHECK(s.hpexpiretime("h", {"a"}) == Times{-1});
  CHECK(s.hsetex("h", Pairs{{"n", "8"}}, FieldTtl::ex(100)) == true);
  CHECK_NEAR_BELOW(s.hpttl("h", {"n"}).value()[0], 100'000, TestType::kSlackMs);
  // HGETEX: the values, then the TTLs.
  CHECK(s.hgetex("h", {"a", "zz"}) == Values{Str("w"), std::nullopt});
  CHECK(s.hgetex("h", {"a"}, FieldTtl::exat(far / 1000)) == Values{Str("w")});
  CHECK(s.hpexpiretime("h", {"a"}) == Times{far});
  CHECK(s.hgetex("h", {"a"}, FieldTtl::px(5000)) == Values{Str("w")});
  CHECK_NEAR_BELOW(s.hpttl("h", {"a"}).value()[0], 5000, TestType::kSlackMs);
  CHECK(s.hgetex("h", {"a", "b"}, FieldTtl::persist()) == Values{Str("w"), Str("y")});
  CHECK(s.hpexpiretime("h", {"a", "b"}) == Times{-1, -1});
  CHECK(s.hgetex("h", {"a"}, FieldTtl::after(std::chrono::seconds(0))) == Values{Str("w")});  // now: deleted
  CHECK(s.hexists("h", "a") == false);
  CHECK(s.hgetex("nokey", {"a"}, FieldTtl::ex(5)) == Values{std::nullopt});
  // HGETDEL: the values, then the fields gone, the key with its last.
  CHECK(s.hgetdel("h", {"b", "zz", "b"}) == Values{Str("y"), std::nullopt, std::nullopt});
  CHECK(s.hgetdel("h", {"n"}) == Values{Str("8")});
  CHECK_FALSE(s.exists("h"));
  // A past time on HSETEX writes nothing that stays; the errors change nothing.
  CHECK(s.hsetex("g", Pairs{{"a", "1"}}, FieldTtl::px(0)) == true);
  CHECK_FALSE(s.exists("g"));
  CHECK(s.hset("g", "a", "1") == std::size_t{1});
  CHECK(s.hsetex("g", Pairs{{"a", "2"}}, FieldTtl::ex(-1)) == Errc::negative_expire_time);
  CHECK(s.hsetex("g", Pairs{{"a", "2"}}, FieldTtl::pxat(kCap + 1)) == Errc::invalid_expire_time);
  CHECK(s.hgetex("g", {"a"}, FieldTtl::px(-1)) == Errc::negative_expire_time);
  CHECK(s.hgetex("g", {"a"}, FieldTtl::after(std::chrono::hours::max())) == Errc::invalid_expire_time);
  CHECK(hget(s, "g", "a") == std::optional<Str>("1"));
  CHECK(s.hpexpiretime("g", {"a"}) == Times{-1});
  // The caller's array forms.
  std::optional<Str> out[2];
  CHECK(s.hgetex("g", {"a", "zz"}, FieldTtl::keep(), out) == std::size_t{1});
  CHECK((out[0] == std::optional<Str>("1") && out[1] == std::nullopt));
  CHECK(s.hgetdel("g", {"zz", "a"}, out) == std::size_t{1});
  CHECK((out[0] == std::nullopt && out[1] == std::optional<Str>("1")));
}
