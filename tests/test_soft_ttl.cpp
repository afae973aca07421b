// tests/test_soft_ttl.cpp: soft TTL (stale-while-revalidate, refresh-ahead) through lookup(),
// and get_or_load(): when it loads, what it stores (TTL, jitter), its error paths and a
// throwing loader.
#include <expiring/expiring.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

using expiring::Errc;
using expiring::Ex;
using expiring::Freshness;
using expiring::Jitter;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;
using expiring::Px;
using expiring::PxAt;

using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      ManualClock&, TestPolicy>;

constexpr std::int64_t T0 = 1'000'000;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

Options soft(std::int64_t stale, std::int64_t refresh) {
  Options o;
  o.stale_window_ms = stale;
  o.refresh_window_ms = refresh;
  return o;
}

}  // namespace

TEST_CASE("lookup: freshness walks fresh, refresh, stale, then missing at the hard deadline", "[soft_ttl]") {
  ManualClock clock{T0};
  Store store{clock, soft(/*stale=*/2000, /*refresh=*/3000)};
  REQUIRE(store.set("k", "v", Px{10'000}) == true);  // soft deadline T0+8000, refresh from T0+5000

  auto r = store.lookup("k");
  REQUIRE(r.value != nullptr);
  CHECK(*r.value == "v");
  CHECK(r.freshness == Freshness::fresh);
  CHECK(r.pttl == 10'000);

  clock.set(T0 + 5000);  // remaining 5000: not below 5000
  CHECK(store.lookup("k").freshness == Freshness::fresh);
  clock.set(T0 + 5001);  // remaining 4999 < 5000
  CHECK(store.lookup("k").freshness == Freshness::refresh);
  clock.set(T0 + 8000);  // remaining 2000: at the soft deadline, not past it
  CHECK(store.lookup("k").freshness == Freshness::refresh);
  clock.set(T0 + 8001);
  r = store.lookup("k");
  CHECK(r.freshness == Freshness::stale);
  CHECK(*r.value == "v");
  CHECK(r.pttl == 1999);
  clock.set(T0 + 10'000);  // alive at the hard deadline (D1), stale
  r = store.lookup("k");
  CHECK(r.freshness == Freshness::stale);
  CHECK(r.pttl == 0);
  clock.set(T0 + 10'001);
  r = store.lookup("k");
  CHECK(r.value == nullptr);
  CHECK(r.freshness == Freshness::missing);
  CHECK(r.pttl == -2);
  CHECK(store.size() == 0);  // reclaimed as get() would
  CHECK(store.stats().expired_keys == 1);
  CHECK(store.stats().keyspace_hits == 6);
  CHECK(store.stats().keyspace_misses == 1);
}

TEST_CASE("lookup: keys without TTL are fresh, windows of 0 never flag anything", "[soft_ttl]") {
  ManualClock clock{T0};
  Store store{clock, soft(1000, 1000)};
  REQUIRE(store.set("p", "v") == true);
  auto r = store.lookup("p");
  CHECK(r.freshness == Freshness::fresh);
  CHECK(r.pttl == -1);

  Store plain{clock};
  REQUIRE(plain.set("k", "v", Px{10}) == true);
  clock.advance(10);
  r = plain.lookup("k");
  CHECK(r.freshness == Freshness::fresh);
  CHECK(r.pttl == 0);
  CHECK(plain.lookup("nope").freshness == Freshness::missing);
}

TEST_CASE("lookup: a refresh window without a stale window, and huge windows saturate", "[soft_ttl]") {
  ManualClock clock{T0};
  Store store{clock, soft(0, 500)};
  REQUIRE(store.set("k", "v", Px{1000}) == true);
  CHECK(store.lookup("k").freshness == Freshness::fresh);
  clock.advance(501);
  CHECK(store.lookup("k").freshness == Freshness::refresh);
  clock.advance(499);
  CHECK(store.lookup("k").freshness == Freshness::refresh);  // remaining 0, stale window 0

  REQUIRE(store.set_soft_ttl(kMax, kMax).ok());
  REQUIRE(store.set("m", "v", PxAt{kMax}) == true);
  CHECK(store.lookup("m").freshness == Freshness::stale);
  REQUIRE(store.set_soft_ttl(1, kMax).ok());
  CHECK(store.lookup("m").freshness == Freshness::refresh);
}

TEST_CASE("soft ttl: invalid windows are refused", "[soft_ttl][error]") {
  ManualClock clock{T0};
  CHECK_THROWS_AS(Store(clock, soft(-1, 0)), std::invalid_argument);
  CHECK_THROWS_AS(Store(clock, soft(0, -1)), std::invalid_argument);
  Store store{clock, soft(10, 20)};
  CHECK(store.set_soft_ttl(-1, 5) == Errc::out_of_range);
  CHECK(store.set_soft_ttl(5, -1) == Errc::out_of_range);
  CHECK(store.options().stale_window_ms == 10);
  CHECK(store.options().refresh_window_ms == 20);
  CHECK(store.set_soft_ttl(0, 0).ok());
  CHECK(store.options().stale_window_ms == 0);
}

TEST_CASE("get_or_load: loads a missing key once, stores it with the TTL, then serves it", "[soft_ttl][get_or_load]") {
  ManualClock clock{T0};
  Store store{clock};
  int loads = 0;
  auto loader = [&] {
    ++loads;
    return std::string("loaded") + std::to_string(loads);
  };
  auto r = store.get_or_load("k", loader, Ex{10});
  REQUIRE(r.ok());
  REQUIRE(*r != nullptr);
  CHECK(**r == "loaded1");
  CHECK(store.pttl("k") == 10'000);
  clock.advance(9000);
  r = store.get_or_load("k", loader, Ex{10});
  CHECK(**r == "loaded1");
  CHECK(loads == 1);
  clock.advance(1001);  // expired: load again
  r = store.get_or_load("k", loader, Ex{10});
  CHECK(**r == "loaded2");
  CHECK(loads == 2);
  CHECK(store.pttl("k") == 10'000);
  // Without a TTL argument the value is stored without TTL, as set().
  r = store.get_or_load(std::string_view("p"), loader);
  CHECK(**r == "loaded3");
  CHECK(store.pttl("p") == -1);
  CHECK(store.stats().keyspace_misses == 3);  // k (new), k (expired), p
}

TEST_CASE("get_or_load: reloads a stale value but serves one due for refresh-ahead", "[soft_ttl][get_or_load]") {
  ManualClock clock{T0};
  Store store{clock, soft(/*stale=*/1000, /*refresh=*/1000)};
  int loads = 0;
  auto loader = [&] { return std::string("v") + std::to_string(++loads); };
  REQUIRE(*store.get_or_load("k", loader, Px{5000}).value() == "v1");
  clock.set(T0 + 3500);  // refresh window: served, no load
  CHECK(*store.get_or_load("k", loader, Px{5000}).value() == "v1");
  CHECK(loads == 1);
  clock.set(T0 + 4001);  // stale: reloaded, with a new TTL
  CHECK(*store.get_or_load("k", loader, Px{5000}).value() == "v2");
  CHECK(loads == 2);
  CHECK(store.pttl("k") == 5000);
  CHECK(store.lookup("k").freshness == Freshness::fresh);
}

TEST_CASE("get_or_load: a throwing loader propagates and leaves the store unchanged", "[soft_ttl][get_or_load][error]") {
  ManualClock clock{T0};
  Store store{clock, soft(1000, 0)};
  REQUIRE(store.set("k", "old", Px{1500}) == true);
  clock.advance(600);  // stale
  std::vector<KeyEventCause> events;
  store.set_listener([&](const Store::event_type& e) { events.push_back(e.cause); });
  auto boom = []() -> std::string { throw std::runtime_error("backend down"); };
  CHECK_THROWS_AS(store.get_or_load("k", boom, Px{5000}), std::runtime_error);
  CHECK_THROWS_AS(store.get_or_load("new", boom, Px{5000}), std::runtime_error);
  CHECK(store.size() == 1);
  CHECK(*store.peek("k") == "old");
  CHECK(store.pttl("k") == 900);
  CHECK(store.peek("new") == nullptr);
  CHECK(events.empty());
  CHECK(store.check_invariants());
}

TEST_CASE("get_or_load: an invalid TTL is refused before loading", "[soft_ttl][get_or_load][error]") {
  ManualClock clock{T0};
  Store store{clock};
  int loads = 0;
  auto loader = [&] {
    ++loads;
    return std::string("x");
  };
  CHECK(store.get_or_load("k", loader, Px{0}) == Errc::invalid_expire_time);
  CHECK(store.get_or_load("k", loader, Ex{-5}) == Errc::invalid_expire_time);
  CHECK(store.get_or_load("k", loader, Ex{kMax / 1000 + 1}) == Errc::invalid_expire_time);
  CHECK(store.get_or_load("k", loader, Px{kMax}) == Errc::invalid_expire_time);  // now + ttl overflows
  CHECK(store.get_or_load("k", loader, Px{10}.with(Jitter::percent(101))) == Errc::out_of_range);
  CHECK(loads == 0);
  CHECK(store.size() == 0);
  CHECK(store.stats().keyspace_misses == 0);
}

TEST_CASE("get_or_load: a past absolute deadline stores nothing and deletes the key", "[soft_ttl][get_or_load]") {
  ManualClock clock{T0};
  Store store{clock, soft(100, 0)};
  REQUIRE(store.set("k", "old", Px{50}) == true);  // stale at once: 50 < 100
  int loads = 0;
  auto r = store.get_or_load("k", [&] { return std::string("x") + std::to_string(++loads); }, PxAt{T0});
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(loads == 1);
  CHECK(store.size() == 0);
}

TEST_CASE("get_or_load: stores with the store's jitter and the loader may use the store", "[soft_ttl][get_or_load]") {
  ManualClock clock{T0};
  Options o;
  o.ttl_jitter = Jitter::spread_ms(100);
  std::uint64_t draws = 0;
  o.random = [&draws] {
    ++draws;
    return std::uint64_t{0};  // d = -100
  };
  Store store{clock, o};
  auto r = store.get_or_load("k", [&] {
    REQUIRE(store.set("side", "effect") == true);
    return std::string("v");
  }, Px{1000});
  REQUIRE(r.ok());
  CHECK(**r == "v");
  CHECK(store.pttl("k") == 900);
  CHECK(draws == 1);
  CHECK(*store.get("side") == "effect");
}

TEST_CASE("get_or_load: integer keys and values", "[soft_ttl][get_or_load]") {
  ManualClock clock{T0};
  expiring::ExpiringStore<std::uint64_t, int, expiring::Hash<std::uint64_t>, std::equal_to<>, ManualClock&, TestPolicy> store{
      clock};
  auto r = store.get_or_load(std::uint64_t{7}, [] { return 42; }, Px{10});
  CHECK(**r == 42);
  CHECK(**store.get_or_load(std::uint64_t{7}, [] { return 0; }, Px{10}) == 42);
}
