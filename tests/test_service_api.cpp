// tests/test_service_api.cpp: the service API of commit 4301157 (part 1): the Store alias and
// store.clock(); ManualClock's shared time and saturation; std::chrono durations and
// system_clock time points wherever a TTL or deadline is taken, with the checked conversion
// (detail/duration.hpp) at its limits; getex_ptr(). Every store here runs on a ManualClock
// held by value (a copy that shares the test's time) and on the suite's TestPolicy.
#include <expiring/expiring.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <ratio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using namespace std::chrono_literals;
using expiring::Errc;
using expiring::Ex;
using expiring::ExpireFlags;
using expiring::Jitter;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Persist;
using expiring::Px;
using expiring::PxAt;
using support::kMax;
using support::kMin;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
using SysMs = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;
using SysUs = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;
using U64Ms = std::chrono::duration<std::uint64_t, std::milli>;
using Third = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;  // a third of a second

expiring::Options opts() {
  expiring::Options o;
  o.seed = 0xA11CE;
  o.budget_clock_us = [] { return 0; };
  return o;
}

SysMs at_ms(std::int64_t unix_ms) { return SysMs(std::chrono::milliseconds(unix_ms)); }

struct Recorder {
  std::vector<std::pair<KeyEventCause, std::string>> seen;
  void attach(S& s) {
    s.set_listener([this](const S::event_type& e) { seen.emplace_back(e.cause, e.key); });
  }
  std::vector<std::pair<KeyEventCause, std::string>> take() {
    std::vector<std::pair<KeyEventCause, std::string>> out;
    out.swap(seen);
    return out;
  }
};

}  // namespace

// ---- 1. The alias and clock() -------------------------------------------------------------

TEST_CASE("api: Store alias is ExpiringStore with the clock third and the policy fourth", "[service-api][alias]") {
  STATIC_REQUIRE(std::is_same_v<expiring::Store<std::string, int>,
                                expiring::ExpiringStore<std::string, int, expiring::Hash<std::string>,
                                                        std::equal_to<>, expiring::TscClock, expiring::SampledExpiry>>);
  STATIC_REQUIRE(std::is_same_v<expiring::Store<std::string, std::string, ManualClock>,
                                expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>,
                                                        std::equal_to<>, ManualClock>>);
  STATIC_REQUIRE(std::is_same_v<expiring::Store<std::uint64_t, std::string, ManualClock&, expiring::TimeOrderedExpiry>,
                                expiring::ExpiringStore<std::uint64_t, std::string, expiring::Hash<std::uint64_t>,
                                                        std::equal_to<>, ManualClock&, expiring::TimeOrderedExpiry>>);
  STATIC_REQUIRE(std::is_same_v<S::clock_type, ManualClock>);
  STATIC_REQUIRE(std::is_same_v<S::expiry_policy, TestPolicy>);
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<S&>().clock()), ManualClock&>);
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<const S&>().clock()), const ManualClock&>);
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<expiring::Store<int, int, ManualClock&>&>().clock()), ManualClock&>);
}

TEST_CASE("api: a Store on a ManualClock by value follows the original clock", "[service-api][alias][clock]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  CHECK(store.now_ms() == T0);
  REQUIRE(store.set("k", "v", Px{100}) == true);
  CHECK(store.pttl("k") == 100);
  clock.advance(40);
  CHECK(store.now_ms() == T0 + 40);
  CHECK(store.pttl("k") == 60);
  clock.set(T0 + 100);  // the deadline itself: still alive
  REQUIRE(store.get("k") != nullptr);
  clock.advance(1);
  CHECK(store.get("k") == nullptr);
  CHECK(store.stats().expired_keys == 1);

  // store.clock() is a handle on the same time, both ways.
  store.clock().set(5);
  CHECK(clock.now_ms() == 5);
  CHECK(store.now_ms() == 5);
  const S& cs = store;
  CHECK(cs.clock().now_ms() == 5);
  clock.advance(10);
  CHECK(store.clock().now_ms() == 15);

  // Two stores made from copies of one clock share it too.
  ManualClock copy = clock;
  S other{copy, opts()};
  store.clock().advance(1000);
  CHECK(other.now_ms() == 1015);
  CHECK(copy.now_ms() == 1015);
}

// ---- 2. ManualClock ----------------------------------------------------------------------

TEST_CASE("api: ManualClock copies share one time", "[service-api][clock]") {
  ManualClock a{7};
  ManualClock b = a;
  ManualClock c{0};
  c = b;  // assignment shares too
  b.advance(3);
  CHECK(a.now_ms() == 10);
  CHECK(c.now_ms() == 10);
  c.set(-42);
  CHECK(a.now_ms() == -42);
  CHECK(b.now_ms() == -42);
  ManualClock fresh{-42};  // a new clock is its own time
  a.advance(1);
  CHECK(fresh.now_ms() == -42);
  CHECK(a.now_ms() == -41);
}

TEST_CASE("api: ManualClock advance saturates at the int64 limits", "[service-api][clock]") {
  ManualClock c{kMax - 5};
  c.advance(10);
  CHECK(c.now_ms() == kMax);
  c.advance(kMax);
  CHECK(c.now_ms() == kMax);
  c.advance(-1);
  CHECK(c.now_ms() == kMax - 1);
  c.set(kMin + 5);
  c.advance(-10);
  CHECK(c.now_ms() == kMin);
  c.advance(kMin);
  CHECK(c.now_ms() == kMin);
  c.advance(1);
  CHECK(c.now_ms() == kMin + 1);
  c.set(0);
  c.advance(kMax);
  CHECK(c.now_ms() == kMax);
  c.advance(kMin);
  CHECK(c.now_ms() == -1);
}

TEST_CASE("api: ManualClock advance by a duration", "[service-api][clock][chrono]") {
  ManualClock c{0};
  c.advance(30s);
  CHECK(c.now_ms() == 30'000);
  c.advance(2min);
  CHECK(c.now_ms() == 150'000);
  c.advance(1500us);  // whole ms toward zero
  CHECK(c.now_ms() == 150'001);
  c.advance(-1500us);
  CHECK(c.now_ms() == 150'000);
  c.advance(999us);
  CHECK(c.now_ms() == 150'000);
  c.advance(std::chrono::nanoseconds(-999'999));
  CHECK(c.now_ms() == 150'000);
  c.advance(-150s);
  CHECK(c.now_ms() == 0);

  // Huge durations saturate, whichever way the conversion overflows.
  c.advance(std::chrono::hours::max());
  CHECK(c.now_ms() == kMax);
  c.advance(std::chrono::hours::min());  // kMax + INT64_MIN
  CHECK(c.now_ms() == -1);
  c.advance(std::chrono::hours::min());
  CHECK(c.now_ms() == kMin);
  c.set(0);
  c.advance(U64Ms(std::numeric_limits<std::uint64_t>::max()));
  CHECK(c.now_ms() == kMax);
  c.set(0);
  c.advance(std::chrono::seconds(kMax / 1000 + 1));
  CHECK(c.now_ms() == kMax);
  c.set(-5);
  c.advance(std::chrono::nanoseconds::max());  // fits: 9223372036854 ms
  CHECK(c.now_ms() == 9'223'372'036'854 - 5);
  c.set(kMax - 100);
  c.advance(1h);  // fits as a duration, saturates in the sum
  CHECK(c.now_ms() == kMax);
}

TEST_CASE("api: ManualClock may be advanced while another thread reads it", "[service-api][clock][thread]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  constexpr int kSteps = 2000;
  std::atomic<bool> done{false};
  std::thread mover([c = clock, &done]() mutable {
    for (int i = 0; i < kSteps; ++i) c.advance(i % 2 == 0 ? 1ms : std::chrono::milliseconds(1));
    done.store(true);
  });
  std::int64_t last = T0;
  bool monotonic = true;
  for (int i = 0; i < 1'000'000 && !done.load(); ++i) {
    const std::int64_t now = store.clock().now_ms();
    if (now < last) monotonic = false;
    last = now;
  }
  mover.join();
  CHECK(monotonic);
  CHECK(clock.now_ms() == T0 + kSteps);
  CHECK(store.now_ms() == T0 + kSteps);
}

// ---- 3. The conversion itself (detail::to_ms and friends) --------------------------------

TEST_CASE("api: detail::to_ms rounds up to the ms and checks the int64 range", "[service-api][chrono][to_ms]") {
  using expiring::detail::Round;
  using expiring::detail::to_ms;
  using std::chrono::hours;
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  using std::chrono::seconds;

  // Compile-time usable.
  STATIC_REQUIRE(to_ms(1us).ok);
  STATIC_REQUIRE(to_ms(1us).ms == 1);
  STATIC_REQUIRE(!to_ms(hours::max()).ok);

  auto is = [](expiring::detail::CheckedMs r, std::int64_t ms) { return r.ok && r.ms == ms; };
  CHECK(is(to_ms(0ms), 0));
  CHECK(is(to_ms(30s), 30'000));
  CHECK(is(to_ms(30min), 1'800'000));
  CHECK(is(to_ms(1us), 1));
  CHECK(is(to_ms(1000us), 1));
  CHECK(is(to_ms(1001us), 2));
  CHECK(is(to_ms(1500us), 2));
  CHECK(is(to_ms(-1500us), -1));
  CHECK(is(to_ms(-1us), 0));
  CHECK(is(to_ms(-1000us), -1));
  CHECK(is(to_ms(1ns), 1));
  CHECK(is(to_ms(1500us, Round::toward_zero), 1));
  CHECK(is(to_ms(-1500us, Round::toward_zero), -1));
  CHECK(is(to_ms(1999us, Round::toward_zero), 1));

  // The limits of each common period.
  CHECK(is(to_ms(milliseconds::max()), kMax));
  CHECK(is(to_ms(milliseconds::min()), kMin));
  CHECK(is(to_ms(nanoseconds::max()), 9'223'372'036'855));   // 9223372036854.775807 ms, up
  CHECK(is(to_ms(nanoseconds::min()), -9'223'372'036'854));  // -9223372036854.775808 ms, up
  CHECK(is(to_ms(nanoseconds::min(), Round::toward_zero), -9'223'372'036'854));
  CHECK(is(to_ms(microseconds::max()), 9'223'372'036'854'776));
  CHECK(is(to_ms(microseconds::min()), -9'223'372'036'854'775));
  CHECK(is(to_ms(seconds(kMax / 1000)), kMax / 1000 * 1000));
  CHECK(!to_ms(seconds(kMax / 1000 + 1)).ok);
  CHECK(is(to_ms(seconds(kMin / 1000)), kMin / 1000 * 1000));
  CHECK(!to_ms(seconds(kMin / 1000 - 1)).ok);
  CHECK(!to_ms(seconds::max()).ok);
  CHECK(!to_ms(seconds::min()).ok);
  CHECK(!to_ms(hours::max()).ok);
  CHECK(!to_ms(hours::min()).ok);
  CHECK(is(to_ms(hours(kMax / 3'600'000)), kMax / 3'600'000 * 3'600'000));
  CHECK(!to_ms(hours(kMax / 3'600'000 + 1)).ok);
  CHECK(is(to_ms(hours(kMin / 3'600'000)), kMin / 3'600'000 * 3'600'000));
  CHECK(!to_ms(hours(kMin / 3'600'000 - 1)).ok);

  // Unsigned counts: above INT64_MAX is refused, not wrapped.
  CHECK(is(to_ms(U64Ms(static_cast<std::uint64_t>(kMax))), kMax));
  CHECK(!to_ms(U64Ms(static_cast<std::uint64_t>(kMax) + 1)).ok);
  CHECK(!to_ms(U64Ms(std::numeric_limits<std::uint64_t>::max())).ok);
  CHECK(!to_ms(std::chrono::duration<std::uint64_t>(static_cast<std::uint64_t>(kMax))).ok);
  CHECK(is(to_ms(std::chrono::duration<std::uint32_t, std::micro>(std::numeric_limits<std::uint32_t>::max())),
           4'294'968));
  CHECK(is(to_ms(std::chrono::duration<std::int32_t>(std::numeric_limits<std::int32_t>::min())),
           std::int64_t{std::numeric_limits<std::int32_t>::min()} * 1000));

  // Exotic periods: a third of a second, a third of a millisecond, 7/3 s.
  CHECK(is(to_ms(Third(1)), 334));
  CHECK(is(to_ms(Third(-1)), -333));
  CHECK(is(to_ms(Third(3)), 1000));
  CHECK(is(to_ms(Third(1), Round::toward_zero), 333));
  CHECK(!to_ms(Third::max()).ok);
  CHECK(!to_ms(Third::min()).ok);
  using ThirdMs = std::chrono::duration<std::int64_t, std::ratio<1, 3000>>;
  CHECK(is(to_ms(ThirdMs(1)), 1));
  CHECK(is(to_ms(ThirdMs(4)), 2));
  CHECK(is(to_ms(ThirdMs(-4)), -1));
  CHECK(is(to_ms(ThirdMs::max()), kMax / 3 + 1));
  using SevenThirds = std::chrono::duration<std::int64_t, std::ratio<7, 3>>;
  CHECK(is(to_ms(SevenThirds(1)), 2334));
  CHECK(is(to_ms(SevenThirds(-1)), -2333));
  CHECK(!to_ms(SevenThirds::max()).ok);
}

TEST_CASE("api: detail::to_unix_ms, to_seconds_exact and saturating_ms", "[service-api][chrono][to_ms]") {
  using expiring::detail::saturating_ms;
  using expiring::detail::to_seconds_exact;
  using expiring::detail::to_unix_ms;
  CHECK(to_unix_ms(at_ms(T0)).ok);
  CHECK(to_unix_ms(at_ms(T0)).ms == T0);
  CHECK(to_unix_ms(SysUs(std::chrono::microseconds(T0 * 1000 + 1))).ms == T0 + 1);
  CHECK(to_unix_ms(SysUs(std::chrono::microseconds(T0 * 1000))).ms == T0);
  using SysH = std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>;
  CHECK(!to_unix_ms(SysH(std::chrono::hours::max())).ok);
  CHECK(!to_unix_ms(SysH(std::chrono::hours::min())).ok);

  CHECK(to_seconds_exact(2000ms).ok);
  CHECK(to_seconds_exact(2000ms).ms == 2);
  CHECK(to_seconds_exact(2min).ms == 120);
  CHECK(!to_seconds_exact(1500ms).ok);
  CHECK(!to_seconds_exact(std::chrono::milliseconds(-1)).ok);
  CHECK(to_seconds_exact(-3s).ms == -3);
  CHECK(!to_seconds_exact(std::chrono::hours::max()).ok);

  CHECK(saturating_ms(std::chrono::hours::max()) == kMax);
  CHECK(saturating_ms(std::chrono::hours::min()) == kMin);
  CHECK(saturating_ms(U64Ms(std::numeric_limits<std::uint64_t>::max())) == kMax);
  CHECK(saturating_ms(-1500us) == -1);
  CHECK(saturating_ms(1500us) == 1);
}

// ---- 3. chrono in the store ----------------------------------------------------------------

TEST_CASE("api: set with a duration, a time point, Ex and Px of chrono values", "[service-api][chrono]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  rec.attach(store);

  REQUIRE(store.set("a", "1", 30s) == true);
  CHECK(store.pttl("a") == 30'000);
  REQUIRE(store.set("b", "2", Ex{2min}) == true);
  CHECK(store.pttl("b") == 120'000);
  REQUIRE(store.set("c", "3", Ex{std::chrono::seconds(7)}) == true);
  CHECK(store.pttl("c") == 7'000);
  REQUIRE(store.set("d", "4", Px{1us}) == true);
  CHECK(store.pttl("d") == 1);
  REQUIRE(store.set("e", "5", Px{1500us}) == true);
  CHECK(store.pttl("e") == 2);
  REQUIRE(store.set("f", "6", 1500us) == true);  // a bare duration is Px
  CHECK(store.pttl("f") == 2);
  REQUIRE(store.set("g", "7", Px{Third(1)}) == true);
  CHECK(store.pttl("g") == 334);
  // PxAt from system_clock time points (absolute Unix ms, rounded up).
  REQUIRE(store.set("h", "8", at_ms(T0 + 5000)) == true);
  CHECK(store.pexpiretime("h") == T0 + 5000);
  REQUIRE(store.set("i", "9", PxAt{SysUs(std::chrono::microseconds((T0 + 5000) * 1000 + 1))}) == true);
  CHECK(store.pexpiretime("i") == T0 + 5001);
  REQUIRE(store.set("j", "10", PxAt{at_ms(T0 + 1)}) == true);
  CHECK(store.pttl("j") == 1);
  const auto evs = rec.take();
  REQUIRE(evs.size() == 20);  // set + expire for each
  for (std::size_t n = 0; n < evs.size(); ++n) CHECK(evs[n].first == (n % 2 == 0 ? KeyEventCause::set : KeyEventCause::expire));

  // A past time point deletes the existing key (cause `del`) and stores nothing.
  REQUIRE(store.set("a", "x", at_ms(T0)) == true);
  CHECK(store.get("a") == nullptr);
  CHECK(rec.take() == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::del, "a"}});

  // Non-positive durations are refused as Redis refuses PX 0 / PX -1.
  const auto before = support::snapshot(store);
  CHECK(store.set("z", "v", 0ms) == Errc::invalid_expire_time);
  CHECK(store.set("z", "v", -1500us) == Errc::invalid_expire_time);  // -1.5 ms rounds up to -1 ms
  CHECK(store.set("z", "v", -1us) == Errc::invalid_expire_time);     // rounds up to 0
  CHECK(store.set("z", "v", Px{-1ms}) == Errc::invalid_expire_time);
  CHECK(store.set("z", "v", Ex{0s}) == Errc::invalid_expire_time);
  CHECK(store.set("b", "v", Ex{-1min}) == Errc::invalid_expire_time);
  CHECK(support::snapshot(store) == before);
  CHECK(rec.take().empty());
}

TEST_CASE("api: setex, psetex, getex and getex_ptr with durations", "[service-api][chrono]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  REQUIRE(store.setex("a", 30s, "1").ok());
  CHECK(store.pttl("a") == 30'000);
  REQUIRE(store.psetex("b", 1500us, "2").ok());
  CHECK(store.pttl("b") == 2);
  REQUIRE(store.setex("c", 1us, "3").ok());
  CHECK(store.pttl("c") == 1);
  REQUIRE(store.psetex("d", 2min, "4").ok());
  CHECK(store.pttl("d") == 120'000);
  const auto before = support::snapshot(store);
  CHECK(store.setex("e", 0s, "x") == Errc::invalid_expire_time);
  CHECK(store.psetex("e", -1500us, "x") == Errc::invalid_expire_time);
  CHECK(store.setex("a", std::chrono::hours::max(), "x") == Errc::invalid_expire_time);
  CHECK(store.psetex("a", U64Ms(std::numeric_limits<std::uint64_t>::max()), "x") == Errc::invalid_expire_time);
  CHECK(support::snapshot(store) == before);

  auto r = store.getex("a", 10min);
  REQUIRE(r.ok());
  CHECK(support::show(*r) == "1");
  CHECK(store.pttl("a") == 600'000);
  r = store.getex("a", 1500us);
  CHECK(support::show(*r) == "1");
  CHECK(store.pttl("a") == 2);
  r = store.getex("a", at_ms(T0 + 9000));
  CHECK(support::show(*r) == "1");
  CHECK(store.pexpiretime("a") == T0 + 9000);
  r = store.getex("a", Ex{1min});
  CHECK(store.pttl("a") == 60'000);

  auto p = store.getex_ptr("d", 45s);
  REQUIRE(p.ok());
  REQUIRE(*p != nullptr);
  CHECK(**p == "4");
  CHECK(store.pttl("d") == 45'000);
}

TEST_CASE("api: expire, pexpire, expireat, pexpireat with chrono values", "[service-api][chrono]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  REQUIRE(store.set("a", "1") == true);
  REQUIRE(store.set("b", "2") == true);
  REQUIRE(store.set("c", "3") == true);
  rec.attach(store);

  CHECK(store.expire("a", 30min) == true);
  CHECK(store.pttl("a") == 1'800'000);
  CHECK(store.pexpire("a", 1500us) == true);  // expire and pexpire are the same with a duration
  CHECK(store.pttl("a") == 2);
  CHECK(store.expire("a", 1s, ExpireFlags::LT) == false);  // T0 + 1000 is not earlier than T0 + 2
  CHECK(store.pttl("a") == 2);
  CHECK(store.expire("a", 1s, ExpireFlags::GT) == true);
  CHECK(store.pttl("a") == 1000);
  CHECK(store.expire("a", 1min, ExpireFlags::NX) == false);  // it has a TTL
  CHECK(store.pexpire("b", 1min, ExpireFlags::XX) == false);  // it has none
  CHECK(store.pttl("b") == -1);
  CHECK(store.pexpire("b", 1min, ExpireFlags::NX) == true);
  CHECK(store.pttl("b") == 60'000);
  CHECK(store.expire("b", 2min, ExpireFlags::XX | ExpireFlags::GT) == true);
  CHECK(store.pttl("b") == 120'000);
  CHECK(store.expire("missing", 1min) == false);

  // Jitter: a spread of 10 s drawn from an injected source is applied; the spread given as a
  // duration is rounded up to whole ms.
  CHECK(store.expire("c", 1min, Jitter::spread(10s)) == true);
  const std::int64_t jittered = store.pttl("c");
  CHECK(jittered >= 50'000);
  CHECK(jittered <= 70'000);
  CHECK(store.pexpire("c", 1min, ExpireFlags::None, Jitter::none()) == true);
  CHECK(store.pttl("c") == 60'000);
  CHECK(store.pexpire("c", 1min, Jitter::spread(0ms)) == true);
  CHECK(store.pttl("c") == 60'000);
  CHECK(Jitter::spread(1500us) == Jitter::spread_ms(2));
  CHECK(Jitter::spread(1500us).valid());

  // Absolute deadlines from system_clock time points.
  CHECK(store.expireat("a", at_ms(T0 + 12'345)) == true);
  CHECK(store.pexpiretime("a") == T0 + 12'345);
  CHECK(store.pexpireat("a", SysUs(std::chrono::microseconds((T0 + 7) * 1000 + 1))) == true);
  CHECK(store.pexpiretime("a") == T0 + 8);
  CHECK(store.expireat("a", at_ms(T0 + 100), ExpireFlags::LT) == false);
  CHECK(store.expireat("a", at_ms(T0 + 100), ExpireFlags::GT) == true);
  CHECK(store.pexpiretime("a") == T0 + 100);
  rec.take();

  // A duration <= 0 or a time point at or before now deletes at once (cause `del`).
  CHECK(store.expire("a", -1500us) == true);
  CHECK(store.exists("a") == false);
  CHECK(store.pexpireat("b", at_ms(T0)) == true);
  CHECK(store.exists("b") == false);
  CHECK(rec.take() == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::del, "a"},
                                                                            {KeyEventCause::del, "b"}});
  CHECK(store.stats().expired_keys == 0);
}

TEST_CASE("api: chrono values beyond the int64 range of ms are invalid_expire_time and change nothing",
          "[service-api][chrono][overflow]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  REQUIRE(store.set("k", "v", Px{5000}) == true);
  REQUIRE(store.set("p", "w") == true);
  rec.attach(store);
  using SysH = std::chrono::time_point<std::chrono::system_clock, std::chrono::hours>;
  const SysH huge(std::chrono::hours::max());
  const auto big_u = U64Ms(static_cast<std::uint64_t>(kMax) + 1);
  const auto max_u = U64Ms(std::numeric_limits<std::uint64_t>::max());
  const auto near_max = std::chrono::milliseconds(kMax - T0 + 1);  // fits as a duration; now + it does not
  const auto hmax = std::chrono::hours::max();

  auto unchanged = [&](const char* what, auto&& op) {
    INFO(what);
    const auto before = support::snapshot(store);
    const auto r = op();
    CHECK(r == Errc::invalid_expire_time);
    CHECK(support::snapshot(store) == before);
    CHECK(store.peek("k") != nullptr);
    CHECK(rec.seen.empty());
  };
  unchanged("set hours::max", [&] { return store.set("k", "x", hmax); });
  unchanged("set new key hours::max", [&] { return store.set("n", "x", hmax); });
  unchanged("set huge time point", [&] { return store.set("k", "x", huge); });
  unchanged("set PxAt huge", [&] { return store.set("k", "x", PxAt{huge}); });
  unchanged("set unsigned above INT64_MAX", [&] { return store.set("k", "x", big_u); });
  unchanged("set unsigned max", [&] { return store.set("k", "x", Px{max_u}); });
  unchanged("set near INT64_MAX ms", [&] { return store.set("k", "x", near_max); });
  unchanged("set Ex hours::max", [&] { return store.set("k", "x", Ex{hmax}); });
  unchanged("set Ex unsigned seconds", [&] {
    return store.set("k", "x", Ex{std::chrono::duration<std::uint64_t>(std::numeric_limits<std::uint64_t>::max())});
  });
  unchanged("set Ex seconds near the limit", [&] { return store.set("k", "x", Ex{std::chrono::seconds(kMax / 1000)}); });
  unchanged("set NX", [&] { return store.set("n", "x", hmax, expiring::SetCond::NX); });
  unchanged("setex", [&] { return store.setex("k", hmax, "x"); });
  unchanged("psetex", [&] { return store.psetex("n", big_u, "x"); });
  unchanged("expire", [&] { return store.expire("k", hmax); });
  unchanged("expire missing key", [&] { return store.expire("missing", hmax); });
  unchanged("pexpire unsigned", [&] { return store.pexpire("p", max_u); });
  unchanged("pexpire near max", [&] { return store.pexpire("p", near_max); });
  unchanged("expireat", [&] { return store.expireat("k", huge); });
  unchanged("pexpireat", [&] { return store.pexpireat("p", SysH(std::chrono::hours::min())); });
  unchanged("get_or_load", [&] {
    return store.get_or_load("n", []() -> std::string { FAIL("the loader must not run"); return "x"; }, hmax);
  });
  unchanged("get_or_load on a live key", [&] {
    return store.get_or_load("k", []() -> std::string { FAIL("the loader must not run"); return "x"; }, huge);
  });

  // set_get, getex and getex_ptr on a live key are reads: their hit counts (as Redis), the rest
  // does not change.
  auto read_unchanged = [&](const char* what, auto&& op) {
    INFO(what);
    auto before = support::snapshot(store);
    const auto r = op();
    CHECK(r == Errc::invalid_expire_time);
    auto after = support::snapshot(store);
    CHECK(after.entries == before.entries);
    CHECK(after.size == before.size);
    CHECK(after.expires == before.expires);
    CHECK(rec.seen.empty());
  };
  read_unchanged("set_get", [&] { return store.set_get("k", "x", hmax); });
  read_unchanged("getex", [&] { return store.getex("k", hmax); });
  read_unchanged("getex unsigned", [&] { return store.getex("k", big_u); });
  read_unchanged("getex huge time point", [&] { return store.getex("k", huge); });
  read_unchanged("getex_ptr", [&] { return store.getex_ptr("k", hmax); });
  read_unchanged("getex_ptr time point", [&] { return store.getex_ptr("p", huge); });
  CHECK(store.pttl("k") == 5000);
  CHECK(store.pttl("p") == -1);
  CHECK(*store.peek("k") == "v");

  // Flag errors win over the overflow, as Redis orders them; a bad jitter too.
  CHECK(store.expire("k", hmax, ExpireFlags::NX | ExpireFlags::XX) == Errc::nx_and_xx_gt_lt);
  CHECK(store.expire("k", hmax, ExpireFlags::GT | ExpireFlags::LT) == Errc::gt_and_lt);
  CHECK(store.expire("k", hmax, Jitter::percent(101)) == Errc::out_of_range);
  CHECK(store.expireat("k", huge, ExpireFlags::NX | ExpireFlags::GT) == Errc::nx_and_xx_gt_lt);
}

TEST_CASE("api: Jitter::spread of a huge duration is an invalid jitter", "[service-api][chrono][jitter]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  REQUIRE(store.set("k", "v", Px{5000}) == true);
  const Jitter bad = Jitter::spread(std::chrono::hours::max());
  CHECK_FALSE(bad.valid());
  CHECK_FALSE(Jitter::spread(U64Ms(std::numeric_limits<std::uint64_t>::max())).valid());
  CHECK(Jitter::spread(std::chrono::milliseconds(kMax)).valid());
  CHECK(Jitter::spread(std::chrono::milliseconds(kMax)).amount() == kMax);
  const auto before = support::snapshot(store);
  CHECK(store.set("k", "x", Px{10s}.with(bad)) == Errc::out_of_range);
  CHECK(store.set("k", "x", Ex{10s}.with(bad)) == Errc::out_of_range);
  CHECK(store.expire("k", 10s, bad) == Errc::out_of_range);
  CHECK(store.pexpire("k", 10s, ExpireFlags::None, bad) == Errc::out_of_range);
  CHECK(store.set_ttl_jitter(bad) == Errc::out_of_range);
  CHECK(support::snapshot(store) == before);
  CHECK(store.options().ttl_jitter == Jitter::none());
  CHECK(store.get_or_load("n", [] { return std::string("x"); }, Px{10s}.with(bad)) == Errc::out_of_range);
  CHECK(store.peek("n") == nullptr);
  expiring::Options o = opts();
  o.ttl_jitter = bad;
  CHECK_THROWS_AS(S(clock, o), std::invalid_argument);
}

TEST_CASE("api: get_or_load with a duration TTL", "[service-api][chrono]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  int calls = 0;
  auto loader = [&] {
    ++calls;
    return std::string("loaded");
  };
  auto r = store.get_or_load("k", loader, 30s);
  REQUIRE(r.ok());
  REQUIRE(*r != nullptr);
  CHECK(**r == "loaded");
  CHECK(calls == 1);
  CHECK(store.pttl("k") == 30'000);
  clock.advance(30s);
  r = store.get_or_load("k", loader, 30s);
  CHECK(calls == 1);  // the deadline itself: still live
  clock.advance(1ms);
  r = store.get_or_load("k", loader, 1500us);
  CHECK(calls == 2);
  CHECK(store.pttl("k") == 2);
  r = store.get_or_load("t", loader, at_ms(T0 + 60'000));
  CHECK(store.pexpiretime("t") == T0 + 60'000);
  r = store.get_or_load("u", loader, at_ms(T0));  // a deadline already past: nothing stored
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(store.peek("u") == nullptr);
  const int before = calls;
  CHECK(store.get_or_load("v", loader, 0ms) == Errc::invalid_expire_time);
  CHECK(store.get_or_load("v", loader, -1500us) == Errc::invalid_expire_time);
  CHECK(calls == before);
}

TEST_CASE("api: set_soft_ttl and set_expire_after_access take durations, checked", "[service-api][chrono]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  REQUIRE(store.set_soft_ttl(10s, 1500us).ok());
  CHECK(store.options().stale_window_ms == 10'000);
  CHECK(store.options().refresh_window_ms == 2);
  CHECK(store.set_soft_ttl(std::chrono::hours::max(), 0ms) == Errc::out_of_range);
  CHECK(store.set_soft_ttl(0ms, U64Ms(std::numeric_limits<std::uint64_t>::max())) == Errc::out_of_range);
  CHECK(store.set_soft_ttl(-1ms, 0ms) == Errc::out_of_range);
  CHECK(store.set_soft_ttl(0ms, -1s) == Errc::out_of_range);
  CHECK(store.options().stale_window_ms == 10'000);
  CHECK(store.options().refresh_window_ms == 2);
  // A soft window set by duration is the one lookup() applies.
  REQUIRE(store.set("k", "v", 20s) == true);
  CHECK(store.lookup("k").freshness == expiring::Freshness::fresh);
  clock.advance(10s);  // 10 s left: not below the stale window yet
  CHECK(store.lookup("k").freshness == expiring::Freshness::refresh);
  clock.advance(1ms);
  CHECK(store.lookup("k").freshness == expiring::Freshness::stale);

  REQUIRE(store.set_expire_after_access(1500us).ok());
  CHECK(store.options().expire_after_access == 2ms);
  CHECK(store.set_expire_after_access(-1ms) == Errc::out_of_range);
  // A negative duration is refused even when it rounds up to 0 ms (which would turn the idle
  // TTL off); so is one beyond the int64 range of ms. Nothing changes.
  CHECK(store.set_expire_after_access(-1us) == Errc::out_of_range);
  CHECK(store.set_expire_after_access(std::chrono::hours::max()) == Errc::out_of_range);
  CHECK(store.set_expire_after_access(U64Ms(std::numeric_limits<std::uint64_t>::max())) == Errc::out_of_range);
  CHECK(store.options().expire_after_access == 2ms);
  REQUIRE(store.set("i", "v") == true);
  CHECK(store.pttl("i") == 2);  // the idle TTL is still on
  REQUIRE(store.set_expire_after_access(0ms).ok());
  CHECK(store.options().expire_after_access == 0ms);
  REQUIRE(store.set("i", "v") == true);
  CHECK(store.pttl("i") == -1);

  // The same rule for the soft windows and a jitter spread.
  CHECK(store.set_soft_ttl(-1us, 0ms) == Errc::out_of_range);
  CHECK(store.set_soft_ttl(0ms, -999us) == Errc::out_of_range);
  CHECK(store.options().stale_window_ms == 10'000);
  CHECK(store.options().refresh_window_ms == 2);
  CHECK_FALSE(Jitter::spread(-1us).valid());
  CHECK_FALSE(Jitter::spread(-1ms).valid());
  CHECK(Jitter::spread(0us).valid());
}

// ---- 5. getex_ptr ------------------------------------------------------------------------

TEST_CASE("api: getex_ptr returns the stored value and applies the option in one call", "[service-api][getex_ptr]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  REQUIRE(store.set("k", "v") == true);
  rec.attach(store);

  auto r = store.getex_ptr("k", Px{5000});
  REQUIRE(r.ok());
  const std::string* p = *r;
  REQUIRE(p != nullptr);
  CHECK(*p == "v");
  CHECK(store.pttl("k") == 5000);
  CHECK(p == store.get("k"));  // the stored object, not a copy
  CHECK(p == store.peek("k"));
  CHECK(rec.take() == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::expire, "k"}});

  // No option: the TTL is untouched and no event.
  r = store.getex_ptr("k", {});
  REQUIRE(r.ok());
  CHECK(*r == p);
  CHECK(store.pttl("k") == 5000);
  CHECK(rec.take().empty());

  // Ex, ExAt, PxAt in the future.
  r = store.getex_ptr("k", Ex{10});
  CHECK(*r == p);
  CHECK(store.pttl("k") == 10'000);
  r = store.getex_ptr("k", expiring::ExAt{T0 / 1000 + 100});
  CHECK(*r == p);
  CHECK(store.pexpiretime("k") == T0 + 100'000);
  r = store.getex_ptr("k", PxAt{T0 + 777});
  CHECK(*r == p);
  CHECK(store.pexpiretime("k") == T0 + 777);
  CHECK(rec.take().size() == 3);

  // Persist: the TTL goes (event `persist`); a second Persist has nothing to remove.
  r = store.getex_ptr("k", Persist{});
  CHECK(*r == p);
  CHECK(store.pttl("k") == -1);
  r = store.getex_ptr("k", Persist{});
  CHECK(*r == p);
  CHECK(rec.take() == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::persist, "k"}});

  // The value read is a keyspace hit.
  const auto hits = store.stats().keyspace_hits;
  r = store.getex_ptr("k", {});
  CHECK(store.stats().keyspace_hits == hits + 1);
}

TEST_CASE("api: getex_ptr of a missing key is nullptr without validating the option", "[service-api][getex_ptr]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  rec.attach(store);
  const auto misses = store.stats().keyspace_misses;
  auto r = store.getex_ptr("missing", Px{0});  // invalid for a live key; not checked here
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  r = store.getex_ptr("missing", std::chrono::hours::max());
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  r = store.getex_ptr("missing", Ex{-5});
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(store.stats().keyspace_misses == misses + 3);
  CHECK(store.size() == 0);
  CHECK(rec.seen.empty());

  // A stale key is missing too: reclaimed as an expiry, option not validated.
  REQUIRE(store.set("s", "v", Px{10}) == true);
  rec.take();
  clock.advance(11);
  r = store.getex_ptr("s", Px{-1});
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(store.size() == 0);
  CHECK(rec.take() == std::vector<std::pair<KeyEventCause, std::string>>{{KeyEventCause::expired, "s"}});
}

TEST_CASE("api: getex_ptr with an invalid option is an error and changes nothing", "[service-api][getex_ptr]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Recorder rec;
  REQUIRE(store.set("k", "v", Px{5000}) == true);
  rec.attach(store);
  for (const expiring::GetExExpiry bad :
       {expiring::GetExExpiry(Px{0}), expiring::GetExExpiry(Px{-1}), expiring::GetExExpiry(Ex{0}),
        expiring::GetExExpiry(expiring::ExAt{0}), expiring::GetExExpiry(PxAt{-5}),
        expiring::GetExExpiry(Px{kMax}), expiring::GetExExpiry(Ex{kMax / 1000 + 1})}) {
    const auto before = support::snapshot(store);
    const auto r = store.getex_ptr("k", bad);
    CHECK(r == Errc::invalid_expire_time);
    const auto after = support::snapshot(store);
    CHECK(after.entries == before.entries);
    CHECK(after.hits == before.hits + 1);  // the read itself counts, as Redis
  }
  CHECK(store.getex_ptr("k", Px{1000}.with(Jitter::percent(101))) == Errc::out_of_range);
  CHECK(store.pttl("k") == 5000);
  CHECK(rec.seen.empty());
}

TEST_CASE("api: getex_ptr with a deadline already past deletes the key and returns nullptr", "[service-api][getex_ptr]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  std::vector<std::pair<KeyEventCause, std::optional<std::string>>> seen;
  REQUIRE(store.set("k", "v") == true);
  REQUIRE(store.set("j", "w") == true);
  store.set_listener([&](const S::event_type& e) {
    seen.emplace_back(e.cause, e.value != nullptr ? std::optional<std::string>(*e.value) : std::nullopt);
  });
  auto r = store.getex_ptr("k", PxAt{T0});
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(store.peek("k") == nullptr);
  CHECK(store.size() == 1);
  r = store.getex_ptr("j", at_ms(T0 - 1));
  REQUIRE(r.ok());
  CHECK(*r == nullptr);
  CHECK(store.size() == 0);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].first == KeyEventCause::del);
  CHECK(seen[0].second == std::optional<std::string>("v"));
  CHECK(seen[1].first == KeyEventCause::del);
  CHECK(seen[1].second == std::optional<std::string>("w"));
  CHECK(store.stats().expired_keys == 0);  // a deletion, not an expiry
}

TEST_CASE("api: Result's -> reaches the value's non-const members, checked as value() is", "[service-api][result]") {
  expiring::Result<std::string> r = std::string("a");
  r->append("b");  // a non-const member through ->
  CHECK(*r == "ab");
  const expiring::Result<std::string>& c = r;
  CHECK(c->size() == 2);
  expiring::Result<std::string> bad = expiring::Errc::wrong_type;
  CHECK_THROWS_AS(bad->append("x"), expiring::BadResultAccess);
}

TEST_CASE("api: Result<bool> holds a value or an error in one word and says which", "[service-api][result]") {
  using expiring::Result;
  STATIC_REQUIRE(sizeof(Result<bool>) == 2);
  for (const bool v : {false, true}) {
    const Result<bool> r = v;
    CHECK(r.ok());
    CHECK(r.value() == v);
    CHECK(*r == v);
    CHECK(r.value_or(!v) == v);
    CHECK(r == v);
    CHECK(r != !v);
    CHECK(r != Errc::invalid_expire_time);
    std::ostringstream os;
    os << r;
    CHECK(os.str() == (v ? "1" : "0"));
  }
  for (const Errc e : {Errc{}, Errc::invalid_expire_time, Errc::out_of_memory, Errc::wrong_type}) {
    const Result<bool> r = e;
    CHECK_FALSE(r.ok());
    CHECK(r.error() == e);
    CHECK(r == e);
    CHECK(r != false);
    CHECK(r != true);
    CHECK(r.value_or(true));
    CHECK_FALSE(r.value_or(false));
    CHECK_THROWS_AS(r.value(), expiring::BadResultAccess);
  }
  CHECK(Result<bool>(Errc::out_of_memory) != Errc::invalid_expire_time);
}
