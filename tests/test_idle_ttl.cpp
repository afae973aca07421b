// tests/test_idle_ttl.cpp: Options::expire_after_access (time to idle) and
// set_expire_after_access(), as options.hpp documents them: the reads that move a key's
// deadline to now + T, the queries that do not, writes without a TTL, explicit TTLs kept until
// the next read, KEEPTTL, persist(), modify(); no event for a refresh; a key not read for T
// expires (lazily and by tick()). Runs over the suite's TestPolicy (both policies).
#include <expiring/expiring.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::Errc;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Px;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
constexpr std::int64_t kIdle = 10'000;

expiring::Options idle_opts(std::chrono::milliseconds idle = std::chrono::milliseconds(kIdle)) {
  expiring::Options o;
  o.seed = 0x1D1E;
  o.budget_clock_us = [] { return 0; };
  o.expire_after_access = idle;
  return o;
}

struct Fixture {
  ManualClock clock{T0};
  S store{clock, idle_opts()};
  std::vector<std::pair<KeyEventCause, std::string>> events;
  Fixture() {
    store.set_listener([this](const S::event_type& e) { events.emplace_back(e.cause, e.key); });
  }
};

}  // namespace

TEST_CASE("idle: a write without a TTL gets now + T, and no expire event", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  CHECK(f.store.pttl("k") == kIdle);
  CHECK(f.store.pexpiretime("k") == T0 + kIdle);
  CHECK(f.store.expires_size() == 1);
  CHECK(f.events == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::set, "k"}});
  f.clock.advance(3000);
  CHECK(f.store.setnx("n", "v"));
  CHECK(f.store.pttl("n") == kIdle);
  REQUIRE(f.store.set("k", "w", expiring::SetCond::XX) == true);  // an overwrite: now + T again
  CHECK(f.store.pttl("k") == kIdle);
  REQUIRE(f.store.getset("k", "x").ok());
  CHECK(f.store.pttl("k") == kIdle);
  auto r = f.store.get_or_load("loaded", [] { return std::string("L"); });
  REQUIRE(r.ok());
  CHECK(f.store.pttl("loaded") == kIdle);
}

TEST_CASE("idle: the reads that refresh the deadline", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  f.events.clear();
  std::int64_t t = T0;
  // Each read, 4 s after the previous one, moves the deadline to its own now + T.
  auto after_read = [&](const char* what, auto&& read) {
    INFO(what);
    t += 4000;
    f.clock.set(t);
    CHECK(f.store.pexpiretime("k") == t - 4000 + kIdle);  // not yet moved
    read();
    CHECK(f.store.pexpiretime("k") == t + kIdle);
  };
  after_read("get", [&] { CHECK(f.store.get("k") != nullptr); });
  after_read("get_many", [&] {
    const std::array<std::string_view, 2> keys{"k", "missing"};
    const std::string* out[2];
    CHECK(f.store.get_many(keys, out) == 1);
  });
  after_read("lookup", [&] { CHECK(f.store.lookup("k").value != nullptr); });
  after_read("get_or_load hit", [&] {
    auto r = f.store.get_or_load("k", []() -> std::string { FAIL("no load on a hit"); return ""; });
    CHECK(r.ok());
  });
  after_read("touch", [&] { CHECK(f.store.touch("k")); });
  after_read("getex without option", [&] { CHECK(f.store.getex("k").ok()); });
  after_read("getex_ptr without option", [&] { CHECK(f.store.getex_ptr("k", {}).ok()); });
  after_read("set_get with KEEPTTL", [&] {
    // set_get's read moves the deadline; KEEPTTL then keeps that one.
    auto r = f.store.set_get("k", "v", expiring::KeepTtl{});
    REQUIRE(r.ok());
    CHECK(support::show(*r) == "v");
  });
  // The lookup() reply already reports the moved deadline.
  f.clock.set(t += 1000);
  CHECK(f.store.lookup("k").pttl == kIdle);
  // A refresh raises no event (set_get's write raised its `set`).
  CHECK(f.events == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::set, "k"}});
}

TEST_CASE("idle: queries do not refresh the deadline", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  f.clock.advance(6000);
  CHECK(f.store.exists("k"));
  CHECK(f.store.ttl("k") == 4);
  CHECK(f.store.pttl("k") == 4000);
  CHECK(f.store.expiretime("k") == (T0 + kIdle) / 1000);
  CHECK(f.store.pexpiretime("k") == T0 + kIdle);
  CHECK(f.store.peek("k") != nullptr);
  int scanned = 0;
  std::uint64_t cursor = 0;
  do {
    cursor = f.store.scan(cursor, 10, [&](const std::string&, const std::string&) { ++scanned; });
  } while (cursor != 0);
  CHECK(scanned == 1);
  for (const auto& e : f.store) CHECK(e.pexpiretime == T0 + kIdle);
  CHECK(f.store.keys().size() == 1);
  CHECK(f.store.pttl("k") == 4000);
  // ... so the key dies T after its last read, however often it was queried.
  f.clock.set(T0 + kIdle);
  CHECK(f.store.exists("k"));
  f.clock.set(T0 + kIdle + 1);
  CHECK_FALSE(f.store.exists("k"));
  CHECK(f.store.stats().expired_keys == 1);
}

TEST_CASE("idle: an explicit TTL is kept until the next read", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v", Px{100'000}) == true);
  CHECK(f.store.pttl("k") == 100'000);
  f.clock.advance(1000);
  CHECK(f.store.pttl("k") == 99'000);
  REQUIRE(f.store.get("k") != nullptr);
  CHECK(f.store.pttl("k") == kIdle);

  // A short explicit TTL also holds until a read: the key can die before T.
  REQUIRE(f.store.set("s", "v", Px{50}) == true);
  f.clock.advance(51);
  CHECK(f.store.get("s") == nullptr);

  // expire() sets the TTL as given (no refresh of its own).
  CHECK(f.store.expire("k", 50s) == true);
  CHECK(f.store.pttl("k") == 50'000);
  f.clock.advance(1000);
  CHECK(f.store.pttl("k") == 49'000);
  REQUIRE(f.store.get("k") != nullptr);
  CHECK(f.store.pttl("k") == kIdle);

  // getex with an option: the option wins over the read's refresh.
  auto r = f.store.getex("k", Px{77'000});
  REQUIRE(r.ok());
  CHECK(f.store.pttl("k") == 77'000);
  auto p = f.store.getex_ptr("k", Px{66'000});
  REQUIRE(p.ok());
  CHECK(f.store.pttl("k") == 66'000);

  // KEEPTTL on a write keeps the deadline as it is (no refresh by set()).
  f.clock.advance(1000);
  REQUIRE(f.store.set("k", "w", expiring::KeepTtl{}) == true);
  CHECK(f.store.pttl("k") == 65'000);
  // EXAT/PXAT as given.
  REQUIRE(f.store.set("k", "w", expiring::PxAt{f.clock.now_ms() + 123'456}) == true);
  CHECK(f.store.pttl("k") == 123'456);
}

TEST_CASE("idle: persist removes the TTL until the next read", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  CHECK(f.store.persist("k"));
  CHECK(f.store.pttl("k") == -1);
  CHECK(f.store.expires_size() == 0);
  f.clock.advance(kIdle * 5);
  CHECK(f.store.exists("k"));  // no TTL: alive however long
  CHECK(f.store.pttl("k") == -1);
  REQUIRE(f.store.get("k") != nullptr);  // the read gives it the idle TTL again
  CHECK(f.store.pttl("k") == kIdle);
  CHECK(f.store.expires_size() == 1);
}

TEST_CASE("idle: modify refreshes the deadline", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v", Px{100'000}) == true);
  f.clock.advance(2000);
  f.events.clear();
  CHECK(f.store.modify("k", [](std::string& v) { v += "!"; }));
  CHECK(f.store.pttl("k") == kIdle);
  CHECK(*f.store.peek("k") == "v!");
  CHECK(f.events == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::update, "k"}});
  CHECK_FALSE(f.store.modify("missing", [](std::string&) {}));
}

TEST_CASE("idle: a key not read for T expires, lazily and by tick", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  f.clock.advance(kIdle - 1);
  REQUIRE(f.store.get("k") != nullptr);  // read at T0 + T - 1: deadline T0 + 2T - 1
  f.clock.set(T0 + 2 * kIdle - 1);       // the deadline itself: alive
  REQUIRE(f.store.peek("k") != nullptr);
  f.clock.set(T0 + 2 * kIdle);
  CHECK(f.store.get("k") == nullptr);
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.events.back() == std::make_pair(KeyEventCause::expired, std::string("k")));

  // tick() reclaims idle keys nobody reads.
  for (int i = 0; i < 50; ++i) REQUIRE(f.store.set("t" + std::to_string(i), "v") == true);
  REQUIRE(f.store.set("read", "v") == true);
  f.clock.advance(kIdle / 2);
  REQUIRE(f.store.get("read") != nullptr);
  f.clock.advance(kIdle / 2 + 1);  // the 50 are due, "read" is not
  for (int i = 0; i < 200 && f.store.size() > 1; ++i) (void)f.store.tick();
  CHECK(f.store.size() == 1);
  CHECK(f.store.peek("read") != nullptr);
  CHECK(f.store.stats().expired_keys == 51);
}

TEST_CASE("idle: a negative expire_after_access throws", "[service-api][idle]") {
  ManualClock clock{T0};
  CHECK_THROWS_AS(S(clock, idle_opts(-1ms)), std::invalid_argument);
  CHECK_NOTHROW(S(clock, idle_opts(0ms)));
}

TEST_CASE("idle: set_expire_after_access at run time", "[service-api][idle]") {
  ManualClock clock{T0};
  S store{clock, idle_opts(0ms)};
  REQUIRE(store.set("old", "v") == true);
  CHECK(store.pttl("old") == -1);
  REQUIRE(store.get("old") != nullptr);
  CHECK(store.pttl("old") == -1);  // off: Redis semantics

  REQUIRE(store.set_expire_after_access(5s).ok());
  CHECK(store.options().expire_after_access == 5s);
  CHECK(store.pttl("old") == -1);  // keys keep their deadlines until their next access
  REQUIRE(store.get("old") != nullptr);
  CHECK(store.pttl("old") == 5000);
  REQUIRE(store.set("new", "v") == true);
  CHECK(store.pttl("new") == 5000);

  REQUIRE(store.set_expire_after_access(0s).ok());
  CHECK(store.pttl("new") == 5000);  // kept
  clock.advance(1000);
  REQUIRE(store.get("new") != nullptr);
  CHECK(store.pttl("new") == 4000);  // no refresh any more
  REQUIRE(store.set("third", "v") == true);
  CHECK(store.pttl("third") == -1);
  CHECK(store.set_expire_after_access(-5s) == Errc::out_of_range);
  CHECK(store.options().expire_after_access == 0s);
}

TEST_CASE("idle: getex() with an option leaves the TTL to the option, not to the read", "[service-api][idle]") {
  Fixture f;
  REQUIRE(f.store.set("k", "v") == true);
  REQUIRE(f.store.persist("k"));  // no TTL until the next read
  f.events.clear();
  // PERSIST on a key without a TTL: nothing to remove, so no event (the read must not have
  // given it an idle TTL first).
  CHECK(f.store.getex("k", expiring::Persist{}).value() == std::optional<std::string>("v"));
  CHECK(f.store.pttl("k") == -1);
  CHECK(f.events.empty());
  // An explicit option wins over the idle TTL: PX 500 stays 500.
  CHECK(f.store.getex_ptr("k", 500ms).value() != nullptr);
  CHECK(f.store.pttl("k") == 500);
  // Without an option the read refreshes as any read does.
  CHECK(f.store.getex("k").value() == std::optional<std::string>("v"));
  CHECK(f.store.pttl("k") == kIdle);
}
