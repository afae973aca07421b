// expiring/detail/duration.hpp: std::chrono durations and time points to milliseconds,
// checked.
//
// The store keeps time in int64 milliseconds (Redis's unit). Wherever it accepts a
// std::chrono::duration (a TTL) or a system_clock::time_point (a deadline) it converts here:
// the count is taken exactly, rounded up to the next whole millisecond (toward the future, so
// a key never expires before the time it was given: 1 us is 1 ms, -1.5 ms is -1 ms), and a
// value outside the int64 range of milliseconds is reported instead of wrapping (chrono's own
// duration_cast would overflow silently, which is undefined for signed counts). Counts must be
// integral: a floating-point duration is refused at compile time, with a message.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>

namespace expiring::detail {

// A conversion's result: `ms` is meaningful only when `ok`.
struct CheckedMs {
  std::int64_t ms;
  bool ok;
};

enum class Round : bool { toward_zero, up };

template <class Rep, class Period>
constexpr CheckedMs to_ms(std::chrono::duration<Rep, Period> d, Round round = Round::up) noexcept {
  static_assert(std::is_integral_v<Rep>,
                "expiring: a TTL or deadline must have an integral count; convert a floating-point duration "
                "with std::chrono::ceil<std::chrono::milliseconds>(d) first");
  static_assert(sizeof(Rep) <= sizeof(std::int64_t), "expiring: duration counts wider than 64 bits are not supported");
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  using R = std::ratio_divide<Period, std::milli>;  // one tick in ms: a / b, reduced
  constexpr std::int64_t a = R::num, b = R::den;
  static_assert(a > 0 && b > 0, "expiring: a duration's period must be positive");

  const Rep count = d.count();
  if constexpr (std::is_unsigned_v<Rep> && sizeof(Rep) == sizeof(std::int64_t)) {
    if (count > static_cast<Rep>(kMax)) return {0, false};
  }
  const auto x = static_cast<std::int64_t>(count);
  // x * a / b = q * a + rem * a / b, with q = x / b and |rem| < b.
  const std::int64_t q = x / b, rem = x % b;
  if (q > kMax / a || q < kMin / a) return {0, false};
  const std::int64_t whole = q * a;
  if (rem == 0) return {whole, true};
  if (rem > kMax / a || rem < kMin / a) return {0, false};  // only for exotic periods
  const std::int64_t part = rem * a;
  std::int64_t frac = part / b;
  if (round == Round::up && part > 0 && part % b != 0) ++frac;
  if ((frac > 0 && whole > kMax - frac) || (frac < 0 && whole < kMin - frac)) return {0, false};
  return {whole + frac, true};
}

// A system_clock time point as Unix milliseconds (rounded up, checked as above).
template <class D>
constexpr CheckedMs to_unix_ms(std::chrono::time_point<std::chrono::system_clock, D> t) noexcept {
  return to_ms(t.time_since_epoch());
}

// Whole seconds of a duration (for Ex and EXPIRE): exact only, else not ok.
template <class Rep, class Period>
constexpr CheckedMs to_seconds_exact(std::chrono::duration<Rep, Period> d) noexcept {
  const CheckedMs ms = to_ms(d, Round::toward_zero);
  if (!ms.ok || ms.ms % 1000 != 0) return {0, false};
  return {ms.ms / 1000, true};
}

// Milliseconds toward zero, saturated at the int64 limits (ManualClock::advance).
template <class Rep, class Period>
constexpr std::int64_t saturating_ms(std::chrono::duration<Rep, Period> d) noexcept {
  const CheckedMs ms = to_ms(d, Round::toward_zero);
  if (ms.ok) return ms.ms;
  return d.count() < Rep{0} ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
}

}  // namespace expiring::detail
