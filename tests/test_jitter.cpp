// tests/test_jitter.cpp: TTL jitter (Options::ttl_jitter, per-call Ex/Px .with(Jitter),
// expire/pexpire(..., Jitter)): where it applies, its exact arithmetic with an injected random
// source, the clamp at now + 1 and INT64_MAX, and its error paths.
#include <expiring/expiring.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

using expiring::Errc;
using expiring::Ex;
using expiring::ExAt;
using expiring::ExpireFlags;
using expiring::Jitter;
using expiring::ManualClock;
using expiring::Options;
using expiring::Px;
using expiring::PxAt;

using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      ManualClock&, TestPolicy>;

constexpr std::int64_t T0 = 1'000'000;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A random source returning the queued numbers in order (then 0), counting its draws.
struct Script {
  std::vector<std::uint64_t> values;
  std::size_t next = 0;
  std::uint64_t operator()() { return next < values.size() ? values[next++] : 0; }
};

Options with_jitter(Jitter j, Script& script) {
  Options o;
  o.ttl_jitter = j;
  o.random = [&script]() { return script(); };
  return o;
}

}  // namespace

TEST_CASE("jitter: a percentage spreads a PX TTL symmetrically by the drawn offset", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::percent(10), script)};
  // TTL 1000 ms, 10%: s = 100, range 201 values; d = r % 201 - 100.
  script.values = {0, 100, 200, 201 + 150};
  REQUIRE(store.set("a", "1", Px{1000}) == true);
  REQUIRE(store.set("b", "1", Px{1000}) == true);
  REQUIRE(store.set("c", "1", Px{1000}) == true);
  REQUIRE(store.set("d", "1", Px{1000}) == true);
  CHECK(store.pttl("a") == 900);
  CHECK(store.pttl("b") == 1000);
  CHECK(store.pttl("c") == 1100);
  CHECK(store.pttl("d") == 1050);
  CHECK(script.next == 4);
  CHECK(store.check_invariants());
}

TEST_CASE("jitter: an absolute spread applies to EX in milliseconds", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(500), script)};
  script.values = {0, 1000};  // d = -500, +500
  REQUIRE(store.set("a", "1", Ex{10}) == true);
  REQUIRE(store.setex("b", 10, "1").ok());
  CHECK(store.pttl("a") == 9500);
  CHECK(store.pttl("b") == 10500);
  CHECK(store.ttl("a") == 10);  // 9.5 s rounds half up
}

TEST_CASE("jitter: absolute deadlines, KEEPTTL and PERSIST are never jittered", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  script.values = {0, 0, 0, 0, 0};
  Store store{clock, with_jitter(Jitter::spread_ms(500), script)};
  REQUIRE(store.set("a", "1", PxAt{T0 + 5000}) == true);
  REQUIRE(store.set("b", "1", ExAt{T0 / 1000 + 7}) == true);
  REQUIRE(store.pexpireat("c", T0 + 1) == false);
  REQUIRE(store.set("c", "1") == true);
  REQUIRE(store.pexpireat("c", T0 + 3000) == true);
  REQUIRE(store.expireat("c", T0 / 1000 + 4) == true);
  REQUIRE(store.set("a", "2", expiring::KeepTtl{}) == true);
  REQUIRE(store.getex("b", expiring::PxAt{T0 + 6000}).ok());
  CHECK(store.pexpiretime("a") == T0 + 5000);
  CHECK(store.pexpiretime("b") == T0 + 6000);
  CHECK(store.pexpiretime("c") == T0 + 4000);
  CHECK(script.next == 0);  // no draw at all
}

TEST_CASE("jitter: every relative form is jittered (set_get, psetex, getex, expire, pexpire)", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(10), script)};
  script.values = {0, 20, 5, 15, 0};  // d = -10, +10, -5, +5, -10
  REQUIRE(store.set_get("a", "1", Px{1000}).ok());
  REQUIRE(store.psetex("b", 1000, "1").ok());
  REQUIRE(store.getex("a", Px{2000}).ok());
  REQUIRE(store.expire("b", 3) == true);
  REQUIRE(store.pexpire("b", 100) == true);
  CHECK(store.pttl("a") == 1995);
  CHECK(store.pttl("b") == 90);
  CHECK(script.next == 5);
}

TEST_CASE("jitter: a per-call jitter overrides the store's, and none() disables it", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::percent(50), script)};
  script.values = {0, 0, 0};
  REQUIRE(store.set("a", "1", Px{1000}.with(Jitter::none())) == true);
  REQUIRE(store.set("b", "1", Px{1000}.with(Jitter::spread_ms(1))) == true);  // d = -1
  REQUIRE(store.set("c", "1", Ex{1}.with(Jitter::percent(20))) == true);     // d = -200
  REQUIRE(store.set("d", "1") == true);
  REQUIRE(store.pexpire("d", 1000, Jitter::none()) == true);
  REQUIRE(store.expire("e", 1, ExpireFlags::None, Jitter::spread_ms(3)) == false);  // missing key
  CHECK(store.pttl("a") == 1000);
  CHECK(store.pttl("b") == 999);
  CHECK(store.pttl("c") == 800);
  CHECK(store.pttl("d") == 1000);
}

TEST_CASE("jitter: a store without jitter draws nothing and keeps exact TTLs", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Options o;
  o.random = [&script]() { return script(); };
  Store store{clock, o};
  REQUIRE(store.set("a", "1", Px{1234}) == true);
  REQUIRE(store.expire("a", 7) == true);
  CHECK(store.pttl("a") == 7000);
  CHECK(script.next == 0);
  CHECK(store.options().ttl_jitter == Jitter::none());
}

TEST_CASE("jitter: the jittered deadline is clamped to now + 1", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(1000), script)};
  script.values = {0, 999, 998};  // d = -1000, -1, -2 on a TTL of 1 or 2 ms
  REQUIRE(store.set("a", "1", Px{5}) == true);
  REQUIRE(store.set("b", "1", Px{1}) == true);
  REQUIRE(store.set("c", "1", Px{2}) == true);
  CHECK(store.pttl("a") == 1);
  CHECK(store.pttl("b") == 1);
  CHECK(store.pttl("c") == 1);
  clock.advance(1);
  CHECK(store.get("a") != nullptr);  // alive at its deadline (D1)
  clock.advance(1);
  CHECK(store.get("a") == nullptr);
}

TEST_CASE("jitter: 100% of a TTL never makes a key born expired", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::percent(100), script)};
  script.values = {0};  // d = -ttl
  REQUIRE(store.set("a", "1", Px{1000}) == true);
  CHECK(store.pttl("a") == 1);
  CHECK(store.size() == 1);
}

TEST_CASE("jitter: the jittered deadline saturates at INT64_MAX instead of overflowing", "[jitter]") {
  ManualClock clock{kMax - 60'000};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(kMax), script)};
  script.values = {~std::uint64_t{0} - 1};  // r = 2^64 - 2 = 2s: d = +s
  REQUIRE(store.set("a", "1", Px{30'000}) == true);
  CHECK(store.pexpiretime("a") == kMax);
  // A TTL that overflows without jitter is still an error (validated first); no draw.
  CHECK(store.set("b", "1", Px{60'001}) == Errc::invalid_expire_time);
  CHECK(store.pexpire("a", 60'001) == Errc::invalid_expire_time);
  CHECK(script.next == 1);
  CHECK(store.pexpiretime("a") == kMax);
  CHECK(store.check_invariants());
}

TEST_CASE("jitter: EXPIRE with a non-positive TTL still deletes, without a draw", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(100'000), script)};
  script.values = {200'000};
  REQUIRE(store.set("a", "1") == true);
  CHECK(store.expire("a", 0) == true);
  CHECK(store.exists("a") == false);
  CHECK(script.next == 0);
  CHECK(store.stats().expired_keys == 0);
}

TEST_CASE("jitter: GT and LT compare the jittered deadline", "[jitter]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::spread_ms(100), script)};
  script.values = {100, 0, 200};  // d = 0, -100, +100
  REQUIRE(store.set("a", "1", Px{1000}) == true);          // deadline T0 + 1000
  CHECK(store.pexpire("a", 1050, ExpireFlags::GT) == false);  // 950 is not later
  CHECK(store.pexpire("a", 950, ExpireFlags::GT) == true);    // 1050 is later
  CHECK(store.pttl("a") == 1050);
}

TEST_CASE("jitter: invalid jitter is refused and changes nothing", "[jitter][error]") {
  ManualClock clock{T0};
  Script script;
  Store store{clock, with_jitter(Jitter::none(), script)};
  REQUIRE(store.set("a", "1", Px{1000}) == true);
  CHECK(store.set("a", "2", Px{10}.with(Jitter::percent(101))) == Errc::out_of_range);
  CHECK(store.set("b", "2", Px{10}.with(Jitter::spread_ms(-1))) == Errc::out_of_range);
  CHECK(store.getex("a", Px{10}.with(Jitter::percent(-1))) == Errc::out_of_range);
  CHECK(store.expire("a", 10, Jitter::spread_ms(-5)) == Errc::out_of_range);
  CHECK(store.pexpire("a", 10, ExpireFlags::NX, Jitter::percent(200)) == Errc::out_of_range);
  // Flag errors are reported first.
  CHECK(store.pexpire("a", 10, ExpireFlags::GT | ExpireFlags::LT, Jitter::percent(200)) == Errc::gt_and_lt);
  // A non-positive value is reported before the jitter.
  CHECK(store.set("a", "2", Px{0}.with(Jitter::percent(101))) == Errc::invalid_expire_time);
  CHECK(*store.get("a") == "1");
  CHECK(store.pttl("a") == 1000);
  CHECK(store.size() == 1);
  CHECK(script.next == 0);

  CHECK(store.set_ttl_jitter(Jitter::percent(101)) == Errc::out_of_range);
  CHECK(store.options().ttl_jitter == Jitter::none());
  CHECK(store.set_ttl_jitter(Jitter::percent(5)).ok());
  CHECK(store.options().ttl_jitter == Jitter::percent(5));
  CHECK(store.set_ttl_jitter(Jitter{}).ok());  // inherit means none for the store
  CHECK(store.options().ttl_jitter == Jitter::none());

  Options bad;
  bad.ttl_jitter = Jitter::spread_ms(-1);
  CHECK_THROWS_AS(Store(clock, bad), std::invalid_argument);
  bad.ttl_jitter = Jitter::percent(101);
  CHECK_THROWS_AS(Store(clock, bad), std::invalid_argument);
}

TEST_CASE("jitter: the percentage spread is exact for large TTLs", "[jitter]") {
  CHECK(Jitter::percent(10).spread_for(1000) == 100);
  CHECK(Jitter::percent(10).spread_for(1999) == 199);
  CHECK(Jitter::percent(100).spread_for(kMax) == kMax);
  CHECK(Jitter::percent(33).spread_for(kMax) == kMax / 100 * 33 + kMax % 100 * 33 / 100);
  CHECK(Jitter::spread_ms(7).spread_for(1) == 7);
  CHECK(Jitter::none().spread_for(1000) == 0);
  CHECK(Jitter{}.spread_for(1000) == 0);
}

TEST_CASE("jitter: the built-in generator spreads a batch written at once (seeded)", "[jitter]") {
  ManualClock clock{T0};
  Options o;
  o.seed = 7;
  o.ttl_jitter = Jitter::percent(10);
  Store store{clock, o};
  std::set<std::int64_t> deadlines;
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(store.set("k" + std::to_string(i), "v", Px{10'000}) == true);
    const std::int64_t t = store.pttl("k" + std::to_string(i));
    REQUIRE(t >= 9'000);
    REQUIRE(t <= 11'000);
    deadlines.insert(t);
  }
  CHECK(deadlines.size() > 500);  // 2001 possible values: 1000 draws hit well over 500
  // Same seed, same deadlines.
  ManualClock clock2{T0};
  Store again{clock2, o};
  REQUIRE(again.set("k0", "v", Px{10'000}) == true);
  CHECK(again.pttl("k0") == store.pttl("k0"));
}
