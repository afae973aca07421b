// tests/robustness/test_clock_limits.cpp: clock readings and deadlines at the ends of int64
// (issue 10, item 2). These cases matter under UndefinedBehaviorSanitizer (the sanitizer
// configuration of CI), which fails on any signed overflow; each also checks its replies.
// The randomized model test covers the same ground more widely ("model: negative and
// near-limit clocks with TTL jitter on", tests/test_model.cpp).
#include <expiring/expiring.hpp>
#include "commands_under_test.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "catch.hpp"

namespace {
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::ManualClock&>;
using expiring::Jitter;
using expiring::Px;
}  // namespace

TEST_CASE("clock limits: jitter drawn upward before 1970 (the issue's repro)", "[robustness][clock]") {
  expiring::ManualClock clk(-10'000);
  Store s{clk};
  for (int i = 0; i < 8; ++i) REQUIRE(s.set("k" + std::to_string(i), "v", Px{1000}.with(Jitter::percent(50))).ok());
  for (int i = 0; i < 8; ++i) {
    const std::int64_t left = s.pttl("k" + std::to_string(i));
    CHECK(left >= 500);
    CHECK(left <= 1500);
  }
}

TEST_CASE("clock limits: every write and query at INT64_MIN + 1 and INT64_MAX - 1", "[robustness][clock]") {
  for (const std::int64_t start : {kMin + 1, kMin + 2, std::int64_t{-1}, kMax - 1}) {
    CAPTURE(start);
    expiring::ManualClock clk(start);
    expiring::Options o;
    o.ttl_jitter = Jitter::spread_ms(kMax);  // the widest spread: every clamp is reached
    o.stale_window_ms = kMax;
    o.refresh_window_ms = kMax;
    o.maxmemory = 1000;
    o.maxmemory_policy = expiring::EvictionPolicy::allkeys_lfu;
    o.seed = 3;
    Store s{clk, o};
    for (int i = 0; i < 50; ++i) {
      const std::string k = "key:" + std::to_string(i);
      (void)s.set(k, std::string(10, 'v'), Px{1 + i});
      (void)s.pexpire(k, kMax);
      (void)s.expire(k, kMax / 1000);
      (void)s.pexpire(k, kMin, expiring::ExpireFlags::GT);
      (void)s.pexpireat(k, kMax, expiring::ExpireFlags::LT);
      (void)s.pexpireat(k, kMin);
      (void)s.set(k, "w", expiring::ExAt{kMax / 1000});
      (void)s.getex(k, Px{kMax});
      (void)s.lookup(k);
      CHECK(s.ttl(k) >= -2);
      CHECK(s.pttl(k) >= -2);
      (void)s.pexpiretime(k);
      (void)s.object_idletime_ms(k);
      (void)s.object_freq(k);
      clk.advance(i % 2 == 0 ? kMax : kMin);  // saturates at the ends
      (void)s.tick();
      clk.set(start);
    }
    CHECK(s.check_invariants());
  }
}

TEST_CASE("clock limits: the command layer's INFO, TIME and TTL replies at the ends of int64", "[robustness][clock]") {
  expiring::ManualClock clk(0);
  expiring::Options o;
  o.seed = 4;
  expiring::redis::ValueStore<expiring::ManualClock&> store{clk, o};
  expiring::redis::CommandExecutor<expiring::ManualClock&> ex{store};
  for (const std::int64_t t : {kMin, kMin + 1, std::int64_t{-1}, kMax - 1, kMax}) {
    CAPTURE(t);
    clk.set(t);
    const std::string info = ex.execute({"INFO", "server"}).str();
    CHECK(info.find("server_time_usec:") != std::string::npos);
    CHECK(info.find("uptime_in_seconds:") != std::string::npos);
    CHECK(ex.execute({"TIME"}).elements().size() == 2);
    (void)ex.execute({"SET", "k", "v", "PX", "1000"});  // an error where now + 1000 overflows
    (void)ex.execute({"PEXPIRE", "k", "9223372036854775807"});
    (void)ex.execute({"EXPIREAT", "k", "-9223372036854775"});
    (void)ex.execute({"TTL", "k"});
    (void)ex.execute({"PEXPIRETIME", "k"});
    (void)ex.execute({"DEBUG", "SET-ACTIVE-EXPIRE", "1"});
  }
}
