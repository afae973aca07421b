// expiring/clock.hpp: the time sources a store can read.
//
// A store reads its clock at most once per public operation (semantics.md D7) and compares every
// deadline in that operation against that one reading; get() reads it only when it must
// compare a deadline (a miss, or a hit on a key without TTL, reads no clock). The default clock
// is TscClock. A clock is any type with
//
//     std::int64_t now_ms() const;   // Unix time in milliseconds
//
// The store holds its clock by value; pass a reference type (`ManualClock&`) to share one
// fake clock between a test and the store it drives.
//
// The production clocks, what a reading costs and how right it is (bench/bench_clock.cpp,
// Release, this project's 2-vCPU KVM guest of a 2.1 GHz Xeon, shared with other builds; CPU
// time, the range over four quick runs; get() with CachedClock in the first run was a plain
// load clock):
//
//   clock        one reading alone   one reading per independent miss   get() hit, 1e6 keys
//   SystemClock  34-50 ns            370-640 ns per load                470-720 ns
//   TscClock     21-29 ns            365-580 ns per load                520-640 ns
//   CachedClock  0.4-0.6 ns          24-33 ns per load (no read: 25-44) 110-260 ns
//   (the miss column of CachedClock is bench_clock's miss/load: a plain load per miss)
//   raw RDTSC 17-20 ns alone and 380-530 ns per load; RDTSCP 26-36 / 360-630;
//   LFENCE;RDTSC 25-35 / 370-640
//
// * SystemClock: exact (it is the system clock), one vDSO clock_gettime(CLOCK_REALTIME),
//   which reads the TSC with a serialising RDTSCP or LFENCE;RDTSC.
// * TscClock: one non-serialising RDTSC and a multiply against a process-wide anchor
//   (detail/tsc.hpp). Error against the system clock: its readings are floor(ms) of a time
//   that differs from the system clock's by at most h + u + d + s, where h is the anchor
//   sample's half bracket (~100 ns here; the vDSO read sits between two fenced TSC reads),
//   u <= 200 us is the rate's measured uncertainty times the anchor's age (the age limit is
//   chosen so; the age is at most 2^28 ns = 268 ms, after which the next reading re-anchors),
//   d is the change of the system clock's rate since it was measured times that age (<= 268 us
//   even for a 1000 ppm change: the kernel limits NTP's frequency and slew to 500 ppm each)
//   and s a step of the system clock since the anchor. Without a step that is under
//   0.47 ms + h (typically a few us), so a reading is within 1 ms of SystemClock's at
//   the same instant (equal, unless the two times straddle a ms boundary). A step of the
//   system clock (settimeofday, an NTP step, a leap second) shows in every reading taken more
//   than 268 ms after it, earlier after a resync() (tick() calls it); the rate is measured
//   against CLOCK_MONOTONIC, which steps never touch, so a step does not disturb it. Readings
//   are not monotonic: at a re-anchor, or when a reading falls back to the system clock (a
//   reader meeting a concurrent re-anchor), they may go back by the error above, i.e. by at
//   most 1 ms, or by a backward step of the system clock. Where the TSC is not usable (not
//   x86-64 Linux with GCC/Clang, no invariant TSC, or Linux itself not using the TSC as its
//   clocksource, as in many VMs) TscClock reads the system clock: SystemClock's reading.
// * CachedClock: a load; stale by up to one refresh period (see below).
//
// Why TscClock is not the whole answer: the +300 ns that SystemClock costs a memory-bound
// get() is the timestamp read stopping consecutive get()s' cache misses from overlapping.
// On this guest a plain RDTSC stalls them too (miss/rdtsc ~ miss/rdtscp; reading the TSC
// once per 4, 8, 16 loads divides the cost by 4, 8, 16: each RDTSC waits for the loads before
// it, measured outside the bench as well), so TscClock only saves the ~15 ns of the read
// itself; whether RDTSC overlaps misses on bare metal (as Intel documents it may) is not
// measured here. Only a clock that does not read the time per operation (CachedClock)
// removes the cost, at the price of its staleness.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "detail/duration.hpp"
#include "detail/tsc.hpp"

namespace expiring {

// Wall-clock Unix milliseconds, as Redis uses for absolute deadlines (EXPIREAT, PXAT).
struct SystemClock {
  // Milliseconds since the Unix epoch, from std::chrono::system_clock (truncated to the ms).
  std::int64_t now_ms() const noexcept {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
};

// Wall-clock Unix milliseconds from the CPU's time-stamp counter: SystemClock's reading (to
// within 1 ms, see the top of this file) for one non-serialising RDTSC and a multiply. All
// TscClock objects share one process-wide anchor (detail/tsc.hpp); the object is empty and
// trivially copyable, and constructing one costs nothing (the first reading in the process
// calibrates, about 1 ms, once). Where the TSC is not usable it reads the system clock.
struct TscClock {
  // Milliseconds since the Unix epoch, within 1 ms of SystemClock's reading (see above).
  std::int64_t now_ms() const noexcept { return detail::tsc::process_source().now_ms(); }

  // Re-reads the system clock: the anchor moves to now and the rate is refined. Call it from
  // a timer (ExpiringStore::tick() does); without it readings re-anchor themselves anyway
  // once the anchor is 268 ms old. Cheap (~0.3-1 us), thread-safe.
  void resync() const noexcept { detail::tsc::process_source().resync(); }

  // Whether readings come from the TSC (false: the system clock fallback). Calibrates first
  // if nothing has read a TscClock yet; false while another thread is calibrating.
  static bool uses_tsc() noexcept { return detail::tsc::process_source().uses_tsc(); }
};
static_assert(std::is_empty_v<TscClock> && std::is_trivially_copyable_v<TscClock>);

// A clock whose reading is a plain load: the last reading of the system clock, refreshed only
// by resync() (which ExpiringStore::tick() calls) or refresh(ms). Redis's cached
// `server.mstime`, but refreshed per tick instead of per command. Staleness: a reading lags
// the system clock by up to the time since the last refresh, i.e. one tick() period (100 ms at
// the default hz 10) plus however long tick() is late. Between refreshes the store's time
// stands still: keys expire up to one period after their deadline, PTTL/TTL replies count
// down in steps, and relative expiries (PX, EX) are measured from the stale reading (so they
// land up to one period early in wall time). Per object, not thread-safe (like the store);
// the construction reads the system clock. Never the default: choose it when a get() must
// not pay for a timestamp read and per-tick expiry precision is acceptable.
class CachedClock {
 public:
  // Starts at the system clock's reading now, or at `start_ms` (Unix ms).
  CachedClock() noexcept : now_(SystemClock{}.now_ms()) {}
  constexpr explicit CachedClock(std::int64_t start_ms) noexcept : now_(start_ms) {}

  // The cached reading, in Unix ms, as the constructor or the last resync() or refresh() set
  // it: a load, no clock read.
  constexpr std::int64_t now_ms() const noexcept { return now_; }

  // Re-reads the system clock (about 35 ns).
  void resync() noexcept { now_ = SystemClock{}.now_ms(); }
  // Sets the reading, e.g. from a clock the caller already read.
  constexpr void refresh(std::int64_t ms) noexcept { now_ = ms; }

 private:
  std::int64_t now_;
};

// A clock that moves only when told to: for deterministic tests. Copies share one time: a
// store built from a ManualClock (by value) and the test that keeps the original see the same
// reading, so `clock.advance(1000)` moves every store made from it (there is no way to get a
// private copy by accident). Any int64 reading is allowed, including values near INT64_MIN and
// INT64_MAX; advance() saturates there instead of overflowing. Reads and moves are atomic
// (relaxed), so a test may advance the clock while other threads read it.
class ManualClock {
 public:
  // A new time, starting at `start_ms` (Unix ms; 0 by default), which the copies of this clock
  // share and another ManualClock does not.
  explicit ManualClock(std::int64_t start_ms = 0) : now_(std::make_shared<std::atomic<std::int64_t>>(start_ms)) {}

  // The current reading, in Unix ms, as set() and advance() on any copy left it.
  std::int64_t now_ms() const noexcept { return now_->load(std::memory_order_relaxed); }

  // Jump to an absolute reading (may go backwards, as a wall clock can).
  void set(std::int64_t ms) noexcept { now_->store(ms, std::memory_order_relaxed); }

  // Move by `delta_ms` (negative moves back), saturating at the int64 limits.
  void advance(std::int64_t delta_ms) noexcept {
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    std::int64_t now = now_->load(std::memory_order_relaxed);
    std::int64_t next = 0;
    do {
      if (delta_ms > 0 && now > kMax - delta_ms) {
        next = kMax;
      } else if (delta_ms < 0 && now < kMin - delta_ms) {
        next = kMin;
      } else {
        next = now + delta_ms;
      }
    } while (!now_->compare_exchange_weak(now, next, std::memory_order_relaxed));
  }
  // Move by a duration, converted to whole milliseconds toward zero; saturating as above (a
  // duration beyond the int64 range of milliseconds saturates too).
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> delta) noexcept {
    static_assert(std::is_integral_v<Rep>, "ManualClock::advance: use a duration with an integral count");
    advance(detail::saturating_ms(delta));
  }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> now_;
};

// Monotonic microseconds: the default budget clock of tick() (Redis's ustime()).
struct SteadyMicrosClock {
  // Microseconds of std::chrono::steady_clock (from an unspecified origin: only differences
  // mean anything).
  std::int64_t operator()() const noexcept {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace expiring
