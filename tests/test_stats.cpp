// tests/test_stats.cpp: statistics, semantics.md Part B §5.L (cases 151-152), §3.5 and D12: which
// calls count keyspace_hits / keyspace_misses (reads do, writes don't, as Redis's lookupKeyRead vs
// lookupKeyWrite), when expired_keys grows, and reset_stats() (CONFIG RESETSTAT).
// The per-command rules below were checked against redis-server 7.0.15 (INFO stats after each
// command on a live, a missing and a stale key, with DEBUG SET-ACTIVE-EXPIRE 0).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using expiring::CycleKind;
using expiring::Errc;
using expiring::Ex;
using expiring::KeyEventCause;
using expiring::Px;
using expiring::PxAt;
using ttltest::Fx;

// ==== L. Statistics ===========================================================================

TEMPLATE_TEST_CASE("stats: immediate deletions are not expiries (case 151)", "[stats][L]", TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto k = f.key(0), j = f.key(1);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.expire(k, -1) == true);
  REQUIRE(f.store.set(j, "v") == true);
  const auto got = f.store.getex(j, PxAt{1});
  REQUIRE(got.ok());
  CHECK(*got == std::optional<std::string>("v"));
  CHECK_FALSE(f.store.exists(j));
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
  // Both were deletions (Redis keyspace event `del`), not expiries.
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::set, k},
                                                    {KeyEventCause::del, k},
                                                    {KeyEventCause::set, j},
                                                    {KeyEventCause::del, j}}));
}

TEMPLATE_TEST_CASE("stats: lazy and active expiry both count in expired_keys (case 152)", "[stats][L]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0), j = f.key(1);
  REQUIRE(f.store.set(k, "v", Px{10}) == true);
  f.at(11);
  CHECK(f.store.get(k) == nullptr);
  CHECK(f.store.stats().expired_keys == 1);
  REQUIRE(f.store.set(j, "v", Px{10}) == true);  // deadline @+21
  f.at(22);
  CHECK(f.store.size() == 1);
  const expiring::TickReport r = f.store.tick(CycleKind::Slow);
  CHECK(r.ran);
  CHECK(r.expired == 1);
  CHECK(f.store.stats().expired_keys == 2);
  CHECK(f.store.size() == 0);
  // Neither expiry was a read hit; the GET was a miss.
  CHECK(f.store.stats().keyspace_hits == 0);
  CHECK(f.store.stats().keyspace_misses == 1);
  f.take_events();
}

// ==== keyspace_hits / keyspace_misses ===========================================================

namespace {
template <class KT>
struct Op {
  const char* name;
  std::function<void(Fx<KT>&, const typename KT::key_type&)> run;
};

// Calls that read the key (Redis lookupKeyRead): each counts one hit or one miss.
template <class KT>
std::vector<Op<KT>> read_ops() {
  using K = typename KT::key_type;
  return {
      {"get", [](Fx<KT>& f, const K& k) { (void)f.store.get(k); }},
      {"exists", [](Fx<KT>& f, const K& k) { (void)f.store.exists(k); }},
      {"touch", [](Fx<KT>& f, const K& k) { (void)f.store.touch(k); }},
      {"ttl", [](Fx<KT>& f, const K& k) { (void)f.store.ttl(k); }},
      {"pttl", [](Fx<KT>& f, const K& k) { (void)f.store.pttl(k); }},
      {"expiretime", [](Fx<KT>& f, const K& k) { (void)f.store.expiretime(k); }},
      {"pexpiretime", [](Fx<KT>& f, const K& k) { (void)f.store.pexpiretime(k); }},
      {"getex", [](Fx<KT>& f, const K& k) { (void)f.store.getex(k); }},
      {"getex PERSIST", [](Fx<KT>& f, const K& k) { (void)f.store.getex(k, expiring::Persist{}); }},
      {"getex EX 50", [](Fx<KT>& f, const K& k) { (void)f.store.getex(k, Ex{50}); }},
      {"getdel", [](Fx<KT>& f, const K& k) { (void)f.store.getdel(k); }},
      {"set GET", [](Fx<KT>& f, const K& k) { (void)f.store.set_get(k, "w"); }},
      {"set GET NX", [](Fx<KT>& f, const K& k) { (void)f.store.set_get(k, "w", {}, expiring::SetCond::NX); }},
      {"getset", [](Fx<KT>& f, const K& k) { (void)f.store.getset(k, "w"); }},
  };
}

// Calls that write the key (Redis lookupKeyWrite): they count neither hits nor misses.
template <class KT>
std::vector<Op<KT>> write_ops() {
  using K = typename KT::key_type;
  return {
      {"set", [](Fx<KT>& f, const K& k) { (void)f.store.set(k, "w"); }},
      {"set NX", [](Fx<KT>& f, const K& k) { (void)f.store.set(k, "w", expiring::SetCond::NX); }},
      {"set XX", [](Fx<KT>& f, const K& k) { (void)f.store.set(k, "w", expiring::SetCond::XX); }},
      {"set PX", [](Fx<KT>& f, const K& k) { (void)f.store.set(k, "w", Px{500}); }},
      {"set KEEPTTL", [](Fx<KT>& f, const K& k) { (void)f.store.set(k, "w", expiring::KeepTtl{}); }},
      {"setnx", [](Fx<KT>& f, const K& k) { (void)f.store.setnx(k, "w"); }},
      {"setex", [](Fx<KT>& f, const K& k) { (void)f.store.setex(k, 5, "w"); }},
      {"psetex", [](Fx<KT>& f, const K& k) { (void)f.store.psetex(k, 5, "w"); }},
      {"expire", [](Fx<KT>& f, const K& k) { (void)f.store.expire(k, 5); }},
      {"expire 0", [](Fx<KT>& f, const K& k) { (void)f.store.expire(k, 0); }},
      {"pexpire XX", [](Fx<KT>& f, const K& k) { (void)f.store.pexpire(k, 5, expiring::ExpireFlags::XX); }},
      {"expireat", [](Fx<KT>& f, const K& k) { (void)f.store.expireat(k, 1); }},
      {"pexpireat GT", [](Fx<KT>& f, const K& k) {
         (void)f.store.pexpireat(k, ttltest::kMax, expiring::ExpireFlags::GT);
       }},
      {"persist", [](Fx<KT>& f, const K& k) { (void)f.store.persist(k); }},
      {"del", [](Fx<KT>& f, const K& k) { (void)f.store.del(k); }},
      {"unlink", [](Fx<KT>& f, const K& k) { (void)f.store.unlink(k); }},
      {"modify", [](Fx<KT>& f, const K& k) { (void)f.store.modify(k, [](std::string& v) { v += "!"; }); }},
      {"rename", [](Fx<KT>& f, const K& k) { (void)f.store.rename(k, f.key(99)); }},
      {"renamenx", [](Fx<KT>& f, const K& k) { (void)f.store.renamenx(k, f.key(99)); }},
  };
}

enum class Kind { live_persistent, live_volatile, missing, stale };
const char* name(Kind k) {
  switch (k) {
    case Kind::live_persistent: return "live, no TTL";
    case Kind::live_volatile: return "live, with TTL";
    case Kind::missing: return "missing";
    case Kind::stale: return "stale";
  }
  return "?";
}

// A fresh store holding key 0 in the given state at @+100, statistics reset.
template <class KT>
void prepare(Fx<KT>& f, Kind kind) {
  const auto k = f.key(0);
  REQUIRE(f.store.set(f.key(1), "neighbour") == true);
  if (kind == Kind::live_persistent) REQUIRE(f.store.set(k, "v") == true);
  if (kind == Kind::live_volatile) REQUIRE(f.store.set(k, "v", Px{30'000}) == true);
  if (kind == Kind::stale) REQUIRE(f.store.set(k, "v", Px{10}) == true);
  f.at(100);
  f.store.reset_stats();
  REQUIRE(f.store.stats().keyspace_hits == 0);
  REQUIRE(f.store.stats().keyspace_misses == 0);
  REQUIRE(f.store.stats().expired_keys == 0);
}

// Runs every op of `ops` on key 0 in every state, each on a fresh store started at t0, and
// hands the statistics that follow to check(kind, stats).
template <class KT, class Check>
void for_each_op_and_kind(std::int64_t t0, const std::vector<Op<KT>>& ops, Check check) {
  for (const Op<KT>& op : ops) {
    for (Kind kind : {Kind::live_persistent, Kind::live_volatile, Kind::missing, Kind::stale}) {
      CAPTURE(op.name, name(kind));
      Fx<KT> f{t0};
      prepare(f, kind);
      op.run(f, f.key(0));
      check(kind, f.store.stats());
    }
  }
}
}  // namespace

TEMPLATE_TEST_CASE("stats: every read counts one hit or one miss", "[stats]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  for_each_op_and_kind(t0, read_ops<TestType>(), [](Kind kind, const expiring::Stats& s) {
    const bool live = kind == Kind::live_persistent || kind == Kind::live_volatile;
    CHECK(s.keyspace_hits == (live ? 1u : 0u));
    CHECK(s.keyspace_misses == (live ? 0u : 1u));
    // A stale key is reclaimed by the read, as an expiry.
    CHECK(s.expired_keys == (kind == Kind::stale ? 1u : 0u));
  });
}

TEMPLATE_TEST_CASE("stats: writes count neither hits nor misses", "[stats]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  for_each_op_and_kind(t0, write_ops<TestType>(), [](Kind kind, const expiring::Stats& s) {
    CHECK(s.keyspace_hits == 0);
    CHECK(s.keyspace_misses == 0);
    // A write's lookup reclaims a stale key as an expiry too (redis-server: expired_keys 1).
    CHECK(s.expired_keys == (kind == Kind::stale ? 1u : 0u));
  });
}

TEMPLATE_TEST_CASE("stats: the quiet side door counts nothing", "[stats]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto live = f.key(0), stale = f.key(1), missing = f.key(2);
  REQUIRE(f.store.set(live, "v") == true);
  REQUIRE(f.store.set(stale, "v", Px{10}) == true);
  f.at(100);
  f.store.reset_stats();
  CHECK(f.store.peek(live) != nullptr);
  CHECK(f.store.peek(stale) == nullptr);
  CHECK(f.store.peek(missing) == nullptr);
  CHECK(f.store.keys().size() == 1);  // KEYS skips a stale key without deleting it
  std::size_t n = 0;
  for (const auto& e : f.store) {
    (void)e;
    ++n;
  }
  CHECK(n == 1);
  CHECK(f.store.size() == 2);
  CHECK(f.store.expires_size() == 1);
  CHECK(f.store.check_invariants());
  const expiring::Stats s = f.store.stats();
  CHECK(s.keyspace_hits == 0);
  CHECK(s.keyspace_misses == 0);
  CHECK(s.expired_keys == 0);
  CHECK(s.keys == 2);     // INFO keyspace keys= counts the stale key (DBSIZE)
  CHECK(s.expires == 1);  // and expires= too
}

TEMPLATE_TEST_CASE("stats: RANDOMKEY and tick reclaim stale keys without counting misses", "[stats]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto a = f.key(0);
  REQUIRE(f.store.set(a, "v", Px{10}) == true);
  f.at(11);
  CHECK_FALSE(f.store.random_key().has_value());
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.store.stats().keyspace_misses == 0);
  for (int i = 1; i <= 5; ++i) REQUIRE(f.store.set(f.key(i), "v", Px{10}) == true);  // deadlines @+21
  f.at(22);
  (void)f.store.tick(CycleKind::Slow);
  CHECK(f.store.size() == 0);
  const expiring::Stats s = f.store.stats();
  CHECK(s.expired_keys == 6);
  CHECK(s.keyspace_hits == 0);
  CHECK(s.keyspace_misses == 0);
}

TEMPLATE_TEST_CASE("stats: failed calls count nothing, except GETEX's read", "[stats][D13]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  f.store.reset_stats();
  CHECK(f.store.set(k, "w", Ex{0}) == Errc::invalid_expire_time);
  CHECK(f.store.set_get(k, "w", Px{-1}).error() == Errc::invalid_expire_time);  // checked before the GET
  CHECK(f.store.expire(k, 5, expiring::ExpireFlags::NX | expiring::ExpireFlags::XX) == Errc::nx_and_xx_gt_lt);
  CHECK(f.store.expire(k, ttltest::kMax) == Errc::invalid_expire_time);
  CHECK(f.store.stats().keyspace_hits == 0);
  CHECK(f.store.stats().keyspace_misses == 0);
  // GETEX looks the key up before it validates the option, so the read is counted
  // (redis-server 7.0.15: `GETEX k EX 0` -> error, keyspace_hits:1). The key is unchanged.
  CHECK(f.store.getex(k, Ex{0}).error() == Errc::invalid_expire_time);
  CHECK(f.store.stats().keyspace_hits == 1);
  CHECK(f.store.ttl(k) == -1);
  REQUIRE(f.store.peek(k) != nullptr);
  CHECK(*f.store.peek(k) == "v");
}

// ==== reset_stats() (CONFIG RESETSTAT) ===========================================================

TEMPLATE_TEST_CASE("stats: reset_stats zeroes the counters and keeps the keyspace figures", "[stats]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  // A budget clock that moves 7 µs per reading, and a one-round limit, so that a tick over
  // many stale keys hits its cap and spends measurable time.
  expiring::Options o = Fx<TestType>::options();
  auto us = std::make_shared<std::int64_t>(0);
  o.budget_clock_us = [us] { return *us += 7; };
  o.max_rounds_per_tick = 1;
  Fx<TestType> f{t0, o};

  for (int i = 0; i < 100; ++i) REQUIRE(f.store.set(f.key(i), "v", Px{10}) == true);
  for (int i = 100; i < 110; ++i) REQUIRE(f.store.set(f.key(i), "v", Px{60'000}) == true);
  REQUIRE(f.store.set(f.key(200), "persistent") == true);
  f.at(11);
  CHECK(f.store.get(f.key(200)) != nullptr);  // a hit
  CHECK(f.store.get(f.key(300)) == nullptr);  // a miss
  const expiring::TickReport r = f.store.tick(CycleKind::Slow);
  CHECK(r.time_cap_hit);
  CHECK(r.expired > 0);

  const expiring::Stats before = f.store.stats();
  CHECK(before.keyspace_hits == 1);
  CHECK(before.keyspace_misses == 1);
  CHECK(before.expired_keys == r.expired);
  CHECK(before.expired_time_cap_reached_count == 1);
  CHECK(before.expire_cycle_cpu_microseconds > 0);
  CHECK(before.expired_stale_perc > 0.0);

  f.store.reset_stats();
  const expiring::Stats after = f.store.stats();
  CHECK(after.keyspace_hits == 0);
  CHECK(after.keyspace_misses == 0);
  CHECK(after.expired_keys == 0);
  CHECK(after.evicted_keys == 0);
  CHECK(after.expired_time_cap_reached_count == 0);
  CHECK(after.expire_cycle_cpu_microseconds == 0);
  CHECK(after.expired_stale_perc == 0.0);
  // INFO keyspace figures describe the data, not counters: RESETSTAT leaves them.
  CHECK(after.keys == before.keys);
  CHECK(after.expires == before.expires);
  CHECK(after.keys == f.store.size());
  CHECK(after.avg_ttl == before.avg_ttl);
  // The data itself is untouched.
  CHECK(f.store.size() == 111 - r.expired);
  CHECK(f.store.check_invariants());

  // Counting resumes from zero.
  CHECK(f.store.exists(f.key(200)));
  CHECK(f.store.ttl(f.key(5)) == -2);  // stale (unless the tick got it): a miss either way
  const expiring::Stats again = f.store.stats();
  CHECK(again.keyspace_hits == 1);
  CHECK(again.keyspace_misses == 1);
  CHECK(again.expired_keys <= 1);
}

TEMPLATE_TEST_CASE("stats: hits and misses accumulate over many reads", "[stats]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  for (int i = 0; i < 50; ++i) REQUIRE(f.store.set(f.key(i), "v", Px{i < 25 ? 10 : 10'000}) == true);
  f.at(11);
  // Keys 0-24 are stale, 25-49 live, 50-74 missing.
  for (int i = 0; i < 75; ++i) (void)f.store.get(f.key(i));
  expiring::Stats s = f.store.stats();
  CHECK(s.keyspace_hits == 25);
  CHECK(s.keyspace_misses == 50);
  CHECK(s.expired_keys == 25);
  // A second pass: the stale keys are now simply missing.
  for (int i = 0; i < 75; ++i) (void)f.store.exists(f.key(i));
  s = f.store.stats();
  CHECK(s.keyspace_hits == 50);
  CHECK(s.keyspace_misses == 100);
  CHECK(s.expired_keys == 25);
  CHECK(s.keys == 25);
  CHECK(s.expires == 25);
}
