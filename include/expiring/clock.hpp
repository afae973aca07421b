// expiring/clock.hpp: the time sources a store can read.
//
// A store reads its clock exactly once per public operation (semantics.md D7) and compares every
// deadline in that operation against that one reading. A clock is any type with
//
//     std::int64_t now_ms() const;   // Unix time in milliseconds
//
// The store holds its clock by value; pass a reference type (`ManualClock&`) to share one
// fake clock between a test and the store it drives.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "detail/tsc.hpp"

namespace expiring {

// Wall-clock Unix milliseconds, as Redis uses for absolute deadlines (EXPIREAT, PXAT).
struct SystemClock {
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

// A clock that moves only when told to: for deterministic tests. Any int64 reading is
// allowed, including values near INT64_MIN and INT64_MAX; advance() saturates there instead
// of overflowing.
class ManualClock {
 public:
  constexpr explicit ManualClock(std::int64_t start_ms = 0) noexcept : now_(start_ms) {}

  constexpr std::int64_t now_ms() const noexcept { return now_; }

  // Jump to an absolute reading (may go backwards, as a wall clock can).
  constexpr void set(std::int64_t ms) noexcept { now_ = ms; }

  // Move by `delta_ms` (negative moves back), saturating at the int64 limits.
  constexpr void advance(std::int64_t delta_ms) noexcept {
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    if (delta_ms > 0 && now_ > kMax - delta_ms) {
      now_ = kMax;
    } else if (delta_ms < 0 && now_ < kMin - delta_ms) {
      now_ = kMin;
    } else {
      now_ += delta_ms;
    }
  }
  void advance(std::chrono::milliseconds delta) noexcept { advance(static_cast<std::int64_t>(delta.count())); }

 private:
  std::int64_t now_;
};

// Monotonic microseconds: the default budget clock of tick() (Redis's ustime()).
struct SteadyMicrosClock {
  std::int64_t operator()() const noexcept {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace expiring
