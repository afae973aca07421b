// tests/test_compute.cpp: the atomic read-modify-writes of ExpiringStore (compute(),
// pexpireat_if_equal(), del_if_equal()) and the transfer halves ConcurrentStore's
// cross-shard RENAME and COPY are made of (rename_out/rename_in, copy_out/copy_in, members of
// the shards, detail/shard_store.hpp): replies,
// TTLs, events, errors that change nothing. Over the suite's TestPolicy.
#include <expiring/detail/shard_store.hpp>
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::Computed;
using expiring::Errc;
using expiring::ExpireFlags;
using expiring::KeyEventCause;
using expiring::ManualClock;

namespace {
using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
// A shard of ConcurrentStore: the same store, with the transfer halves.
using Shard = expiring::detail::ShardStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                           ManualClock, TestPolicy>;
using C = Computed<std::string>;
constexpr std::int64_t kT0 = 1'000'000;

struct Fx {
  ManualClock clock{kT0};
  S s{clock};
  std::vector<std::pair<KeyEventCause, std::string>> events;
  Fx() {
    s.set_listener([this](const S::event_type& e) { events.emplace_back(e.cause, e.key); });
  }
};
using Events = std::vector<std::pair<KeyEventCause, std::string>>;
}  // namespace

TEST_CASE("compute: the function sees the value and deadline, and keep changes nothing", "[compute]") {
  Fx f;
  REQUIRE(f.s.set("k", "v", 10s).ok());
  f.events.clear();
  const std::string* seen = nullptr;
  std::int64_t seen_pexp = 0;
  CHECK(f.s.compute("k", [&](const std::string* v, std::int64_t pexp) {
    seen = v;
    seen_pexp = pexp;
    return C::keep();
  }) == false);
  REQUIRE(seen != nullptr);
  CHECK(*seen == "v");
  CHECK(seen_pexp == kT0 + 10'000);
  CHECK(f.events.empty());
  std::int64_t missing_pexp = 0;
  CHECK(f.s.compute("absent", [&](const std::string* v, std::int64_t pexp) {
    CHECK(v == nullptr);
    missing_pexp = pexp;
    return C::keep();
  }) == false);
  CHECK(missing_pexp == -2);
  REQUIRE(f.s.set("p", "v").ok());
  CHECK(f.s.compute("p", [&](const std::string*, std::int64_t pexp) {
    CHECK(pexp == -1);
    return C::keep();
  }) == false);
}

TEST_CASE("compute: store keeps or replaces the TTL as set() would", "[compute]") {
  Fx f;
  REQUIRE(f.s.set("k", "1", 10s).ok());
  CHECK(f.s.compute("k", [](const std::string* v, std::int64_t) { return C::store(*v + "2"); }) == true);
  CHECK(*f.s.get("k") == "12");
  CHECK(f.s.pttl("k") == 10'000);  // KeepTtl by default
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::store("x", expiring::SetExpiry{}); }) == true);
  CHECK(f.s.pttl("k") == -1);
  CHECK(f.s.compute("new", [](const std::string* v, std::int64_t) { return C::store(v ? *v : "fresh", 5s); }) == true);
  CHECK(f.s.pttl("new") == 5000);
  f.events.clear();
  CHECK(f.s.compute("new", [](const std::string*, std::int64_t) { return C::store("y", expiring::Px{0}); }) ==
        Errc::invalid_expire_time);
  CHECK(*f.s.get("new") == "fresh");
  CHECK(f.events.empty());
}

TEST_CASE("compute: retime and remove", "[compute]") {
  Fx f;
  REQUIRE(f.s.set("k", "v").ok());
  f.events.clear();
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::retime(30s); }) == true);
  CHECK(f.s.pttl("k") == 30'000);
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::retime(expiring::SetExpiry{}); }) == true);
  CHECK(f.s.pttl("k") == -1);
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::retime(expiring::SetExpiry{}); }) == false);
  CHECK(f.events == Events{{KeyEventCause::expire, "k"}, {KeyEventCause::persist, "k"}});
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::retime(expiring::Px{-1}); }) ==
        Errc::invalid_expire_time);
  CHECK(f.s.exists("k"));
  CHECK(f.s.compute("k", [](const std::string*, std::int64_t) { return C::retime(expiring::PxAt{kT0}); }) == true);
  CHECK_FALSE(f.s.exists("k"));  // a deadline at now deletes, as PEXPIREAT
  CHECK(f.s.compute("absent", [](const std::string*, std::int64_t) { return C::retime(10s); }) == false);
  REQUIRE(f.s.set("r", "v").ok());
  f.events.clear();
  CHECK(f.s.compute("r", [](const std::string*, std::int64_t) { return C::remove(); }) == true);
  CHECK(f.s.compute("r", [](const std::string*, std::int64_t) { return C::remove(); }) == false);
  CHECK(f.events == Events{{KeyEventCause::del, "r"}});
}

TEST_CASE("pexpireat_if_equal and del_if_equal: the lock lease", "[compute][lease]") {
  Fx f;
  REQUIRE(f.s.set("lock", "token-1", 10s, expiring::SetCond::NX) == true);
  CHECK(f.s.set("lock", "token-2", 10s, expiring::SetCond::NX) == false);
  CHECK(f.s.pexpireat_if_equal("lock", "token-2", kT0 + 60'000) == false);
  CHECK(f.s.pexpiretime("lock") == kT0 + 10'000);
  CHECK(f.s.pexpireat_if_equal("lock", "token-1", kT0 + 60'000) == true);
  CHECK(f.s.pexpiretime("lock") == kT0 + 60'000);
  CHECK(f.s.pexpireat_if_equal("lock", "token-1", kT0 + 30'000, ExpireFlags::GT) == false);
  CHECK(f.s.pexpireat_if_equal("lock", "token-1", std::chrono::system_clock::time_point(std::chrono::milliseconds(kT0 + 90'000))) == true);
  CHECK(f.s.pexpiretime("lock") == kT0 + 90'000);
  // Flag errors first, whatever the value; then an overflowing time point.
  CHECK(f.s.pexpireat_if_equal("lock", "nope", kT0, ExpireFlags::NX | ExpireFlags::GT) == Errc::nx_and_xx_gt_lt);
  CHECK(f.s.pexpireat_if_equal("lock", "token-1", kT0, ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
  // (system_clock::time_point::max() in ns fits in ms; one in hours does not.)
  CHECK(f.s.pexpireat_if_equal("lock", "token-1",
                               std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>::max()) ==
        Errc::invalid_expire_time);
  CHECK(f.s.pexpiretime("lock") == kT0 + 90'000);
  CHECK_FALSE(f.s.del_if_equal("lock", "token-2"));
  CHECK(f.s.exists("lock"));
  f.events.clear();
  CHECK(f.s.del_if_equal("lock", "token-1"));
  CHECK_FALSE(f.s.exists("lock"));
  CHECK(f.events == Events{{KeyEventCause::del, "lock"}});
  // An expired lease is not renewed.
  REQUIRE(f.s.set("lease", "t", 10ms).ok());
  f.clock.advance(11ms);
  CHECK(f.s.pexpireat_if_equal("lease", "t", kT0 + 100'000) == false);
  CHECK(f.s.pttl("lease") == -2);
}

TEST_CASE("transfers: rename_out/rename_in and copy_out/copy_in keep value, TTL and events", "[compute][transfer]") {
  ManualClock clock{kT0};
  Shard a{clock}, b{clock};
  Events ea, eb;
  a.set_listener([&](const Shard::event_type& e) { ea.emplace_back(e.cause, e.key); });
  b.set_listener([&](const Shard::event_type& e) { eb.emplace_back(e.cause, e.key); });
  REQUIRE(a.set("src", "v", 20s).ok());
  REQUIRE(b.set("dst", "old", 5s).ok());
  ea.clear();
  eb.clear();
  auto t = a.rename_out("src");
  REQUIRE(t.has_value());
  CHECK(t->value == "v");
  CHECK(t->pexpiretime == kT0 + 20'000);
  CHECK_FALSE(a.exists("src"));
  CHECK(b.rename_in("dst", std::move(*t)));
  CHECK(*b.get("dst") == "v");
  CHECK(b.pexpiretime("dst") == kT0 + 20'000);
  CHECK(ea == Events{{KeyEventCause::rename_from, "src"}});
  CHECK(eb == Events{{KeyEventCause::rename_to, "dst"}});
  CHECK_FALSE(a.rename_out("src").has_value());
  // RENAMENX's second half keeps a live destination.
  REQUIRE(a.set("p", "persistent").ok());
  auto t2 = a.rename_out("p");
  REQUIRE(t2.has_value());
  CHECK(t2->pexpiretime == -1);
  CHECK_FALSE(b.rename_in("dst", std::move(*t2), /*nx=*/true));
  CHECK(*b.get("dst") == "v");
  // COPY's halves.
  REQUIRE(a.set("c", "copy-me", 7s).ok());
  auto t3 = a.copy_out("c");
  REQUIRE(t3.has_value());
  CHECK(a.exists("c"));
  eb.clear();
  CHECK(b.copy_in("c2", *t3, false) == true);
  CHECK(b.copy_in("c2", *t3, false) == false);
  CHECK(b.copy_in("c2", *t3, true) == true);
  CHECK(b.pttl("c2") == 7000);
  CHECK(eb == Events{{KeyEventCause::copy_to, "c2"}, {KeyEventCause::copy_to, "c2"}});
  CHECK(a.check_invariants());
  CHECK(b.check_invariants());
}

TEST_CASE("pexpireat_if_equal reclaims a stale key as PEXPIREAT's lookup does", "[compute][lease]") {
  Fx f;
  REQUIRE(f.s.set("lease", "t", 10ms).ok());
  f.clock.advance(11ms);
  f.events.clear();
  CHECK(f.s.pexpireat_if_equal("lease", "t", kT0 + 100'000) == false);
  CHECK(f.events == Events{{KeyEventCause::expired, "lease"}});
  CHECK(f.s.size() == 0);
}
