// tests/test_clock.cpp: the clocks of clock.hpp, TscClock above all.
//
// * The fixed-point conversion of detail/tsc.hpp, directly, with synthetic anchors: exact to
//   within its rounding for every TSC value up to 2^64 - 1 at 0.5-6 GHz, saturating, no UB.
// * TscClock against the system clock: each reading bracketed between two system reads, within
//   1 ms, over ~200 ms, before and after resync(), after a self re-anchor, and with 4 threads
//   reading while another re-anchors (bounded: 50 ms).
// * The fallback (the system clock), forced with Mode::system_only: it runs on every machine.
// The TSC cases report themselves skipped where the TSC is not usable (tsc_usable()).
#include <expiring/expiring.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

namespace tsc = expiring::detail::tsc;
using Clock = std::chrono::steady_clock;

std::int64_t sys_ms() { return expiring::SystemClock{}.now_ms(); }

// One reading of `read` bracketed by two system reads: within 1 ms of the bracket.
struct Bracket {
  std::int64_t lo, value, hi;
  bool ok() const { return value >= lo - 1 && value <= hi + 1; }
};
template <class F>
Bracket bracket(F&& read) {
  Bracket b{};
  b.lo = sys_ms();
  b.value = read();
  b.hi = sys_ms();
  return b;
}

// Reads `read` for about `ms` milliseconds (at most `max_reads`), pausing `pause_us` between
// readings; returns the readings out of bounds (with the first one in `first_bad`).
template <class F>
int count_out_of_bounds(F&& read, int ms, int max_reads, int pause_us, Bracket& first_bad) {
  int bad = 0;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  for (int i = 0; i < max_reads && Clock::now() < end; ++i) {
    const Bracket b = bracket(read);
    if (!b.ok() && bad++ == 0) first_bad = b;
    if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
  }
  return bad;
}

}  // namespace

TEST_CASE("clock: TscClock is empty, trivially copyable, and drives a store", "[clock][tsc]") {
  STATIC_REQUIRE(std::is_empty_v<expiring::TscClock>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<expiring::TscClock>);
  STATIC_REQUIRE(noexcept(expiring::TscClock{}.now_ms()));
  CHECK(expiring::TscClock::uses_tsc() == tsc::tsc_usable());
#if !EXPIRING_TSC_SUPPORTED
  CHECK_FALSE(expiring::TscClock::uses_tsc());
#endif

  expiring::ExpiringStore<std::string, int, expiring::Hash<std::string>, std::equal_to<>, expiring::TscClock, TestPolicy>
      store{expiring::TscClock{}};
  REQUIRE(store.set("k", 1, expiring::Px{60000}).value());
  REQUIRE(store.get(std::string_view{"k"}) != nullptr);
  CHECK(store.pttl("k") > 58000);
  CHECK(store.pttl("k") <= 60000);
  REQUIRE(store.set("past", 2, expiring::PxAt{sys_ms() - 5}).value() == true);
  CHECK(store.get(std::string_view{"past"}) == nullptr);
}

#if EXPIRING_TSC_HAS_INT128

TEST_CASE("clock: mult_from and split_ns, exact and total", "[clock][tsc]") {
  // 1 GHz: 10^-6 ms per tick = 2^64 / 10^6 units, rounded to nearest.
  CHECK(tsc::mult_from(1000000000u, 1000000000u) == 18446744073710ull);  // 2^64 / 10^6 = 18446744073709.55
  CHECK(tsc::mult_from(0, 1) == 0);
  CHECK(tsc::mult_from(1, 0) == 0);
  CHECK(tsc::mult_from(std::uint64_t{1} << 63, 1) == 0);
  CHECK(tsc::mult_from(1000000u, 1u) == 0);        // 1 ms per tick = 2^64: does not fit
  CHECK(tsc::mult_from(999999u, 1u) != 0);         // just below 1 ms per tick fits

  const auto a = tsc::split_ns(1'700'000'000'123'456'789);
  CHECK(a.ms == 1'700'000'000'123);
  // frac = floor(456789 * 2^64 / 1e6): within one unit of the exact ratio.
  CHECK(static_cast<double>(a.frac) / 18446744073709551616.0 == Approx(0.456789).epsilon(1e-12));
  const auto n = tsc::split_ns(-1);
  CHECK(n.ms == -1);  // floor, not truncation
  CHECK(n.frac > (std::uint64_t{1} << 63));
  const auto lo = tsc::split_ns(std::numeric_limits<std::int64_t>::min());
  CHECK(lo.ms == std::numeric_limits<std::int64_t>::min() / 1000000 - 1);
  const auto hi = tsc::split_ns(std::numeric_limits<std::int64_t>::max());
  CHECK(hi.ms == std::numeric_limits<std::int64_t>::max() / 1000000);
  CHECK(tsc::split_ns(0).ms == 0);
  CHECK(tsc::split_ns(0).frac == 0);

  CHECK(tsc::mul_div(7, 3, 0) == std::numeric_limits<std::uint64_t>::max());
  CHECK(tsc::mul_div(std::numeric_limits<std::uint64_t>::max(), 2, 1) == std::numeric_limits<std::uint64_t>::max());
  CHECK(tsc::mul_div(std::numeric_limits<std::uint64_t>::max(), 3, 3) == std::numeric_limits<std::uint64_t>::max());
  CHECK(tsc::mul_div(1000, 3, 7) == 428);
}

TEST_CASE("clock: ticks_to_ms is exact within its rounding for every TSC value at 0.5-6 GHz", "[clock][tsc]") {
  using u128 = tsc::u128;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t rates_hz[] = {500000000u,  999999937u,  1000000000u, 2100000000u, 2999999999u,
                                    3700012345u, 4294967296u, 5000000000u, 6000000000u};
  const std::int64_t anchors_ms[] = {0, 1'700'000'000'123, -86'400'000, 4'000'000'000'000};
  std::vector<std::uint64_t> deltas = {0, 1, 2, 999, 1000, 2099999, 2100000, std::uint64_t{1} << 28,
                                       std::uint64_t{1} << 32, std::uint64_t{1} << 40, std::uint64_t{1} << 52,
                                       std::uint64_t{1} << 63, kMax - (std::uint64_t{1} << 32), kMax - 1, kMax};
  std::uint64_t x = 0x12345678u;
  for (int i = 0; i < 200; ++i) {  // pseudo-random deltas across all magnitudes
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    deltas.push_back(x >> (i % 64));
  }
  int checked = 0;
  for (const std::uint64_t f : rates_hz) {
    const std::uint64_t mult = tsc::mult_from(1000000000u, f);  // f ticks per second
    REQUIRE(mult != 0);
    for (const std::int64_t ms0 : anchors_ms) {
      for (const std::uint64_t frac0 : {std::uint64_t{0}, std::uint64_t{1} << 63, kMax}) {
        for (const std::uint64_t d : deltas) {
          // Exact: ms0 + floor(frac0 / 2^64 + d * 1000 / f).
          const u128 num = static_cast<u128>(d) * 1000u;  // < 2^74
          const u128 q = num / f;
          const u128 r = num % f;
          const bool carry = (r << 64) + static_cast<u128>(frac0) * f >= (static_cast<u128>(f) << 64);
          const auto exact = static_cast<std::int64_t>(q) + (carry ? 1 : 0);  // q < 2^74 / 5e8 < 2^45
          const std::int64_t got = tsc::ticks_to_ms(ms0, frac0, mult, d);
          // mult is within 1/2 unit of exact, so the sum is within d/2 < 2^63 units (0.5 ms)
          // of exact: the floors differ by at most 1.
          const std::int64_t diff = got - ms0 - exact;
          INFO("f=" << f << " ms0=" << ms0 << " frac0=" << frac0 << " delta=" << d);
          REQUIRE(diff >= -1);
          REQUIRE(diff <= 1);
          // Over a realistic anchor age (up to an hour of ticks) the error is below d / 2^65 ms
          // (< 2^-20 ms): the floors agree unless the exact value lies that close to a ms
          // boundary (frac0 = 2^64 - 1 with a whole number of ms of ticks does).
          if (d <= f * 3600 && diff != 0) {
            // Then the exact value must lie within the fixed-point error (d / 2 + 1 units of
            // 2^-64 ms) of a ms boundary. R / f = the exact sum's distance above the boundary
            // below it, in 2^-64 ms units.
            const u128 whole = static_cast<u128>(f) << 64;
            const u128 rem = ((r << 64) + static_cast<u128>(frac0) * f) % whole;
            const u128 dist = rem < whole - rem ? rem : whole - rem;
            REQUIRE(dist <= static_cast<u128>(f) * (d / 2 + 1));
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("clock: ticks_to_ms saturates at INT64_MAX and never overflows", "[clock][tsc]") {
  constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  CHECK(tsc::ticks_to_ms(kI64Max, kMax, kMax, kMax) == kI64Max);
  CHECK(tsc::ticks_to_ms(kI64Max - 5, 0, tsc::mult_from(1000000000u, 500000000u), kMax) == kI64Max);
  CHECK(tsc::ticks_to_ms(kI64Max, 0, 1, 0) == kI64Max);
  CHECK(tsc::ticks_to_ms(kI64Max - 1, kMax, 1, 1) == kI64Max);  // frac0 + 1 carries exactly 1 ms
  CHECK(tsc::ticks_to_ms(kI64Min, 0, 0, kMax) == kI64Min);
  // (2^64-1)^2 + (2^64-1) = 2^128 - 2^64: offset 2^64 - 1 ms, from INT64_MIN: INT64_MAX.
  CHECK(tsc::ticks_to_ms(kI64Min, kMax, kMax, kMax) == kI64Max);
  CHECK(tsc::ticks_to_ms(kI64Min + 1, kMax, kMax, kMax) == kI64Max);  // saturated
  CHECK(tsc::ticks_to_ms(-1, 0, std::uint64_t{1} << 63, 2) == 0);
  // A 0.5 GHz TSC wraps after 1169 years: 2^64 - 1 ticks are 36'893'488'147'419.1 ms; mult
  // (rounded down by 0.103 units) loses 0.1 ms over them.
  const std::uint64_t m = tsc::mult_from(1000000000u, 500000000u);
  CHECK(m == 36'893'488'147'419u);
  CHECK(tsc::ticks_to_ms(0, 0, m, kMax) == 36'893'488'147'418);
}

#endif  // EXPIRING_TSC_HAS_INT128

TEST_CASE("clock: the fallback reads the system clock (forced, runs everywhere)", "[clock][tsc]") {
  tsc::TscSource src{tsc::Mode::system_only};
  CHECK_FALSE(src.uses_tsc());
  tsc::TscSource::Calibration cal;
  CHECK_FALSE(src.calibration(cal));
  src.resync();  // a no-op
  for (int i = 0; i < 1000; ++i) {
    const Bracket b = bracket([&] { return src.now_ms(); });
    REQUIRE(b.value >= b.lo);  // the same computation as SystemClock: inside the bracket
    REQUIRE(b.value <= b.hi);
  }
}

TEST_CASE("clock: TscClock agrees with the system clock within 1 ms, before and after resync", "[clock][tsc]") {
  if (!tsc::tsc_usable()) EXPIRING_SKIP("the TSC is not usable here (not invariant, or not Linux's clocksource)");
  tsc::TscSource src{tsc::Mode::automatic};
  REQUIRE(src.uses_tsc());
  tsc::TscSource::Calibration cal;
  REQUIRE(src.calibration(cal));
  CHECK(cal.anchors == 1);
  const double ghz = static_cast<double>(cal.rate_ticks) / static_cast<double>(cal.rate_ns);
  INFO("calibrated " << ghz << " GHz over " << cal.rate_ns << " ns, uncertainty " << cal.uncertainty_ticks << " ticks");
  CHECK(ghz > 0.05);
  CHECK(ghz < 50.0);
  // The age limit is at most 2^28 ns of ticks (+1 % for the rate's own error).
  CHECK(static_cast<double>(cal.limit_ticks) <= ghz * 268435456.0 * 1.01);

  Bracket bad{};
  // Tight bursts, then readings spread over ~200 ms (1 ms apart), on the first calibration.
  CHECK(count_out_of_bounds([&] { return src.now_ms(); }, 20, 100000, 0, bad) == 0);
  CHECK(count_out_of_bounds([&] { return src.now_ms(); }, 200, 400, 1000, bad) == 0);
  INFO("first bad reading: " << bad.lo << " <= " << bad.value << " <= " << bad.hi);

  src.resync();
  REQUIRE(src.calibration(cal));
  CHECK(cal.anchors >= 2);
  CHECK(cal.rate_ns > 100000000u);  // refined over the ~200 ms baseline
  CHECK(count_out_of_bounds([&] { return src.now_ms(); }, 20, 100000, 0, bad) == 0);
  CHECK(count_out_of_bounds([&] { return src.now_ms(); }, 200, 400, 1000, bad) == 0);

  // The process-wide clock, the same way.
  const expiring::TscClock clock;
  CHECK(count_out_of_bounds([&] { return clock.now_ms(); }, 20, 100000, 0, bad) == 0);
  clock.resync();
  CHECK(count_out_of_bounds([&] { return clock.now_ms(); }, 20, 100000, 0, bad) == 0);
}

TEST_CASE("clock: TscClock re-anchors itself once the anchor is older than its limit", "[clock][tsc]") {
  if (!tsc::tsc_usable()) EXPIRING_SKIP("the TSC is not usable here (not invariant, or not Linux's clocksource)");
  tsc::TscSource src{tsc::Mode::automatic};
  REQUIRE(src.uses_tsc());
  tsc::TscSource::Calibration before, after;
  REQUIRE(src.calibration(before));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // > 2^28 ns
  const Bracket b = bracket([&] { return src.now_ms(); });
  CHECK(b.ok());
  REQUIRE(src.calibration(after));
  CHECK(after.anchors == before.anchors + 1);
  CHECK(after.rate_ns > before.rate_ns);  // the rate was refined over the longer baseline
  Bracket bad{};
  CHECK(count_out_of_bounds([&] { return src.now_ms(); }, 20, 100000, 0, bad) == 0);
}

TEST_CASE("clock: 4 threads read TscClock while another re-anchors, every reading within 1 ms", "[clock][tsc]") {
  if (!tsc::tsc_usable()) EXPIRING_SKIP("the TSC is not usable here (not invariant, or not Linux's clocksource)");
  tsc::TscSource src{tsc::Mode::automatic};
  REQUIRE(src.uses_tsc());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> reads{0};
  std::atomic<long> resyncs{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      long n = 0;
      const auto end = Clock::now() + std::chrono::milliseconds(50);
      while (n < 2000000 && Clock::now() < end) {
        const Bracket b = bracket([&] { return src.now_ms(); });
        if (!b.ok()) bad.fetch_add(1, std::memory_order_relaxed);
        const expiring::TscClock global;  // the process-wide anchor too
        const Bracket g = bracket([&] { return global.now_ms(); });
        if (!g.ok()) bad.fetch_add(1, std::memory_order_relaxed);
        ++n;
      }
      reads.fetch_add(n, std::memory_order_relaxed);
    });
  }
  std::thread writer([&] {
    long n = 0;
    const auto end = Clock::now() + std::chrono::milliseconds(60);
    while (n < 1000000 && Clock::now() < end && !stop.load(std::memory_order_relaxed)) {
      src.resync();
      expiring::TscClock{}.resync();
      ++n;
    }
    resyncs.store(n, std::memory_order_relaxed);
  });
  for (auto& r : readers) r.join();
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  INFO(reads.load() << " bracketed reading pairs, " << resyncs.load() << " resyncs");
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
  CHECK(resyncs.load() > 0);
}

TEST_CASE("clock: CachedClock moves only on resync() or refresh()", "[clock]") {
  STATIC_REQUIRE(std::is_trivially_copyable_v<expiring::CachedClock>);
  const Bracket b = bracket([] { return expiring::CachedClock{}.now_ms(); });
  CHECK(b.value >= b.lo);  // the construction reads the system clock
  CHECK(b.value <= b.hi);
  expiring::CachedClock c{1000};
  CHECK(c.now_ms() == 1000);
  c.refresh(std::numeric_limits<std::int64_t>::min());
  CHECK(c.now_ms() == std::numeric_limits<std::int64_t>::min());
  const std::int64_t lo = sys_ms();
  c.resync();
  const std::int64_t hi = sys_ms();
  CHECK(c.now_ms() >= lo);
  CHECK(c.now_ms() <= hi);

  // Driving a store through a reference: the store's time stands still between refreshes.
  expiring::CachedClock clock{1'000'000};
  expiring::ExpiringStore<std::string, int, expiring::Hash<std::string>, std::equal_to<>, expiring::CachedClock&,
                          TestPolicy>
      store{clock};
  REQUIRE(store.set("k", 1, expiring::Px{100}).value());
  CHECK(store.pttl("k") == 100);
  clock.refresh(1'000'100);
  CHECK(store.get(std::string_view{"k"}) != nullptr);  // now == deadline: still live
  clock.refresh(1'000'101);
  CHECK(store.get(std::string_view{"k"}) == nullptr);
}
