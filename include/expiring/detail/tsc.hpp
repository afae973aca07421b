// expiring/detail/tsc.hpp: the machinery behind TscClock (clock.hpp): Unix milliseconds from
// the CPU's time-stamp counter.
//
// Design
// ------
// * Read path (TscSource::now_ms): one RDTSC (not RDTSCP, no LFENCE: the architecture lets it
//   run before earlier loads complete, so the cache misses around it may keep overlapping;
//   on this project's KVM guest it measurably waits for them anyway, see clock.hpp),
//   six loads from one read-mostly cache line (the anchor, under a seqlock), one 64x64->128
//   multiply and a saturating add. No division, no loop, no system call. Every rare condition
//   (the anchor is being rewritten, the anchor is older than its limit, the TSC reads behind
//   the anchor, not calibrated yet, TSC not usable) folds into one predictable branch to a cold
//   slow path.
// * Anchor: tsc0; the Unix time at tsc0 as whole ms plus a 64-bit binary fraction of a ms;
//   mult = ms per tick in units of 2^-64 ms; limit = how many ticks after tsc0 the anchor may
//   be used. reading = ms0 + floor((frac0 + (tsc - tsc0) * mult) / 2^64), computed exactly in
//   128 bits and saturated at INT64_MAX (ticks_to_ms): defined for every TSC value.
// * Samples: one sample brackets a CLOCK_MONOTONIC and a CLOCK_REALTIME read between two
//   fenced TSC reads (the best of 4 tries); its TSC is the bracket's midpoint and its half
//   width is its uncertainty. The first calibration (once per process, by the first reader,
//   lazily) spins 1 ms of CLOCK_MONOTONIC between two samples.
// * Rate and offset come from different clocks. The rate is measured against CLOCK_MONOTONIC,
//   which Linux advances at exactly the NTP-disciplined rate of CLOCK_REALTIME but never
//   steps, so a stepped wall clock cannot corrupt the rate. The offset is CLOCK_REALTIME at
//   each anchor, so a step is picked up by the next anchor, with no step detection needed.
// * Re-anchoring (resync(), and the read path once delta >= limit): a new sample becomes the
//   anchor; the rate is re-measured over the long baseline from an older sample (kept up to
//   ~69 s, then restarted; a new estimate replaces the current one when its baseline is at
//   least as long, or longer than ~1 s, and it lies within 0.2 % of it: a larger jump means
//   the TSC or the system misbehaved over the baseline, e.g. suspend, and the baseline
//   restarts). limit = min(2^28 ns, the age at which the rate's uncertainty reaches 200 us).
// * Publication: a seqlock of std::atomic fields (acquire loads and release stores, no
//   standalone fences, so ThreadSanitizer models it exactly). A writer takes the lock with a
//   CAS from even to odd, so at most one thread re-anchors at a time; a reader that meets a
//   writer, or a would-be writer that finds the lock taken, reads the system clock instead.
//   Nobody ever spins: the read path is wait-free.
// * Availability (tsc_usable): x86-64 Linux with GCC or Clang (RDTSC and unsigned __int128),
//   CPUID 0x80000007 EDX bit 8 (invariant TSC: constant rate in every P-, C- and T-state), and
//   Linux's own clocksource is "tsc" (under a hypervisor the kernel picks kvm-clock or another
//   paravirtual clock when it does not trust the guest TSC; its verdict is the best evidence
//   a process can get). Without sysfs, bare metal with an invariant TSC is trusted, a guest is
//   not. Everywhere else TscSource reads the system clock (exactly SystemClock's reading).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__SIZEOF_INT128__)
#define EXPIRING_TSC_SUPPORTED 1
// The two instructions are GCC/Clang builtins: <x86intrin.h> would cost every user's
// translation unit ~0.6 s of parsing (bench/compile_cost).
#include <cpuid.h>

#include <cstdio>
#include <cstring>
#else
#define EXPIRING_TSC_SUPPORTED 0
#endif

namespace expiring::detail::tsc {

// The system clock's reading, exactly as SystemClock computes it: the fallback everywhere.
inline std::int64_t system_ms() noexcept {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

#if defined(__SIZEOF_INT128__)
#define EXPIRING_TSC_HAS_INT128 1
__extension__ typedef unsigned __int128 u128;

// ---- the pure fixed-point arithmetic (tested directly with synthetic anchors) ---------------

// The reading `delta` ticks after an anchor at Unix time ms0 + frac0 / 2^64 ms, at `mult`
// 2^-64 ms per tick: ms0 + floor((frac0 + delta * mult) / 2^64), saturated at INT64_MAX.
// Exact for every input: delta * mult + frac0 <= (2^64-1)^2 + 2^64-1 < 2^128.
constexpr std::int64_t ticks_to_ms(std::int64_t ms0, std::uint64_t frac0, std::uint64_t mult,
                                   std::uint64_t delta) noexcept {
  const u128 sum = static_cast<u128>(delta) * mult + frac0;
  const auto off = static_cast<std::uint64_t>(sum >> 64);
  // INT64_MAX - ms0 as an exact non-negative value (it lies in [0, 2^64 - 1]).
  const std::uint64_t headroom =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - static_cast<std::uint64_t>(ms0);
  if (off > headroom) return std::numeric_limits<std::int64_t>::max();
  // ms0 + off is in [INT64_MIN, INT64_MAX]: the modular sum converts back exactly.
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(ms0) + off);
}

// mult for a rate measured as `ticks` ticks in `ns` nanoseconds: ns * 2^64 / (ticks * 10^6),
// rounded to nearest. 0 (unusable) when ticks == 0, ns >= 2^63 or the result does not fit
// (a rate below 1 kHz).
constexpr std::uint64_t mult_from(std::uint64_t ns, std::uint64_t ticks) noexcept {
  if (ticks == 0 || ns >= (std::uint64_t{1} << 63)) return 0;
  const u128 den = static_cast<u128>(ticks) * 1000000u;  // < 2^84
  const u128 num = static_cast<u128>(ns) << 64;          // < 2^127
  const u128 q = (num + den / 2) / den;                  // num + den / 2 < 2^128
  if ((q >> 64) != 0) return 0;
  return static_cast<std::uint64_t>(q);
}

// Unix nanoseconds as floor milliseconds plus the remainder as a 2^-64 fraction of a ms.
struct MsFrac {
  std::int64_t ms;
  std::uint64_t frac;
};
constexpr MsFrac split_ns(std::int64_t ns) noexcept {
  std::int64_t q = ns / 1000000;
  std::int64_t r = ns % 1000000;
  if (r < 0) {  // floor, not truncation, before 1970 (q > INT64_MIN here: no overflow)
    r += 1000000;
    --q;
  }
  const u128 f = (static_cast<u128>(static_cast<std::uint64_t>(r)) << 64) / 1000000u;  // < 2^64
  return {q, static_cast<std::uint64_t>(f)};
}

// ns * num / den, saturated at UINT64_MAX; den == 0 gives UINT64_MAX.
constexpr std::uint64_t mul_div(std::uint64_t ns, std::uint64_t num, std::uint64_t den) noexcept {
  if (den == 0) return std::numeric_limits<std::uint64_t>::max();
  const u128 q = static_cast<u128>(ns) * num / den;
  return (q >> 64) != 0 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(q);
}
#else
#define EXPIRING_TSC_HAS_INT128 0
#endif

// Constants of the re-anchoring policy (see the design comment).
inline constexpr std::uint64_t kMaxAnchorAgeNs = std::uint64_t{1} << 28;   // 268.4 ms
inline constexpr std::uint64_t kRateBudgetNs = 200000;                     // 200 us
inline constexpr std::uint64_t kMinAnchorAgeNs = 1000000;                  // 1 ms: limit floor
inline constexpr std::uint64_t kCalibrateNs = 1000000;                     // first calibration
inline constexpr std::uint64_t kRefineNs = std::uint64_t{1} << 30;         // 1.07 s
inline constexpr std::uint64_t kMaxBaselineNs = std::uint64_t{1} << 36;    // 68.7 s

#if EXPIRING_TSC_SUPPORTED
inline std::uint64_t read_tsc() noexcept { return __builtin_ia32_rdtsc(); }

// A TSC read that neither starts before earlier instructions finish nor lets later ones start
// before it: for the brackets of a sample only (the slow path).
inline std::uint64_t fenced_tsc() noexcept {
  __builtin_ia32_lfence();
  const std::uint64_t t = __builtin_ia32_rdtsc();
  __builtin_ia32_lfence();
  return t;
}

inline bool cpu_invariant_tsc() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return ((d >> 8) & 1u) != 0;
}

inline bool cpu_under_hypervisor() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1u, &a, &b, &c, &d) == 0) return true;  // cannot tell: assume a guest
  return ((c >> 31) & 1u) != 0;
}

// Linux's current clocksource: 1 if "tsc", 0 if another, -1 if it cannot be read.
inline int kernel_clocksource_is_tsc() noexcept {
  std::FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return -1;
  char buf[32] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  if (n == 0) return -1;
  return (n >= 3 && std::memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n')) ? 1 : 0;
}
#endif

// The decision TscClock makes once per process (callable on its own, e.g. by tests).
inline bool tsc_usable() noexcept {
#if EXPIRING_TSC_SUPPORTED
  if (!cpu_invariant_tsc()) return false;
  const int k = kernel_clocksource_is_tsc();
  if (k >= 0) return k == 1;
  return !cpu_under_hypervisor();
#else
  return false;
#endif
}

enum class Mode : unsigned char {
  automatic,    // use the TSC if tsc_usable() says so, else the system clock
  system_only,  // always the system clock (the fallback, forced: for tests)
};

// One anchor and its machinery. TscClock uses the process-wide instance (process_source());
// tests build their own. Not copyable (it is shared state).
class alignas(64) TscSource {
 public:
  constexpr explicit TscSource(Mode mode = Mode::automatic) noexcept : mode_(mode) {}
  TscSource(const TscSource&) = delete;
  TscSource& operator=(const TscSource&) = delete;

  // Unix milliseconds. Thread-safe, wait-free.
  std::int64_t now_ms() noexcept {
#if EXPIRING_TSC_SUPPORTED
    const std::uint64_t t = read_tsc();
    const std::uint64_t s1 = seq_.load(std::memory_order_acquire);
    const std::uint64_t tsc0 = tsc0_.load(std::memory_order_acquire);
    const std::int64_t ms0 = ms0_.load(std::memory_order_acquire);
    const std::uint64_t frac0 = frac0_.load(std::memory_order_acquire);
    const std::uint64_t mult = mult_.load(std::memory_order_acquire);
    const std::uint64_t limit = limit_.load(std::memory_order_acquire);
    // Not reordered before the acquire loads above; sees a writer that any of them saw.
    const std::uint64_t s2 = seq_.load(std::memory_order_relaxed);
    const std::uint64_t delta = t - tsc0;  // modular: a TSC behind tsc0 gives a huge delta
    const std::uint64_t torn = (s1 ^ s2) | (s1 & 1u);
    if (__builtin_expect((torn | static_cast<std::uint64_t>(delta >= limit)) != 0, 0)) {
      return slow(torn == 0, delta, limit);
    }
    return ticks_to_ms(ms0, frac0, mult, delta);
#else
    return system_ms();
#endif
  }

  // Re-anchors now: a fresh sample of the system clock becomes the anchor and the rate is
  // refined over the long baseline. Calibrates first if nothing has read the clock yet. Does
  // nothing if another thread is re-anchoring at this moment (its anchor is as fresh) or the
  // source reads the system clock.
  void resync() noexcept {
#if EXPIRING_TSC_SUPPORTED
    const int st = state_.load(std::memory_order_acquire);
    if (st == kUninit) {
      init();
    } else if (st == kTsc) {
      (void)reanchor(nullptr);
    }
#endif
  }

  // Whether readings come from the TSC (calibrates first if needed).
  bool uses_tsc() noexcept {
#if EXPIRING_TSC_SUPPORTED
    if (state_.load(std::memory_order_acquire) == kUninit) init();
    return state_.load(std::memory_order_acquire) == kTsc;
#else
    return false;
#endif
  }

  // For tests and the bench: the current calibration (read under the writer lock, so only
  // meaningful when nobody re-anchors concurrently; false if not on the TSC or locked).
  struct Calibration {
    std::uint64_t mult = 0;          // 2^-64 ms per tick
    std::uint64_t limit_ticks = 0;   // anchor age limit
    std::uint64_t rate_ns = 0;       // baseline the rate was measured over
    std::uint64_t rate_ticks = 0;
    std::uint64_t uncertainty_ticks = 0;  // sum of the two samples' half widths
    std::uint64_t anchors = 0;            // anchors published so far
  };
  bool calibration(Calibration& out) noexcept {
#if EXPIRING_TSC_SUPPORTED
    if (state_.load(std::memory_order_acquire) != kTsc) return false;
    std::uint64_t s = seq_.load(std::memory_order_relaxed);
    if ((s & 1u) != 0 || !seq_.compare_exchange_strong(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return false;
    }
    out.mult = mult_.load(std::memory_order_relaxed);
    out.limit_ticks = limit_.load(std::memory_order_relaxed);
    out.rate_ns = rate_ns_;
    out.rate_ticks = rate_ticks_;
    out.uncertainty_ticks = rate_unc_ticks_;
    out.anchors = anchors_;
    seq_.store(s + 2, std::memory_order_release);
    return true;
#else
    (void)out;
    return false;
#endif
  }

 private:
#if EXPIRING_TSC_SUPPORTED
  enum : int { kUninit = 0, kInit = 1, kTsc = 2, kSystem = 3 };

  struct Sample {
    std::uint64_t tsc = 0;   // bracket midpoint
    std::uint64_t half = 0;  // bracket half width, rounded up
    std::int64_t mono_ns = 0;
    std::int64_t real_ns = 0;
  };

  static bool take_sample(Sample& out) noexcept {
    using namespace std::chrono;
    bool got = false;
    std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
    for (int i = 0; i < 4; ++i) {
      const std::uint64_t a = fenced_tsc();
      const std::int64_t mono = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
      const std::int64_t real = duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
      const std::uint64_t b = fenced_tsc();
      if (b < a) continue;  // the TSC went backwards (a migration between unsynchronised CPUs)
      if (b - a < best) {
        best = b - a;
        out = Sample{a + (b - a) / 2, (b - a) / 2 + ((b - a) & 1u), mono, real};
        got = true;
      }
    }
    return got;
  }

  bool try_lock(std::uint64_t& s) noexcept {
    s = seq_.load(std::memory_order_relaxed);
    return (s & 1u) == 0 &&
           seq_.compare_exchange_strong(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed);
  }

  // Under the lock: publishes `x` as the anchor with the current rate.
  void write_anchor(const Sample& x) noexcept {
    const MsFrac a = split_ns(x.real_ns);
    const std::uint64_t by_age = mul_div(kMaxAnchorAgeNs, rate_ticks_, rate_ns_);
    // The age at which the rate's uncertainty (rate_unc_ticks_ / rate_ticks_) costs
    // kRateBudgetNs: budget_ticks * rate_ticks_ / rate_unc_ticks_.
    const std::uint64_t budget_ticks = mul_div(kRateBudgetNs, rate_ticks_, rate_ns_);
    const std::uint64_t by_unc = mul_div(budget_ticks, rate_ticks_, rate_unc_ticks_);
    std::uint64_t limit = by_age < by_unc ? by_age : by_unc;
    const std::uint64_t floor_ticks = mul_div(kMinAnchorAgeNs, rate_ticks_, rate_ns_);
    if (limit < floor_ticks) limit = floor_ticks;
    // Release stores: none becomes visible before the CAS that made seq_ odd.
    tsc0_.store(x.tsc, std::memory_order_release);
    ms0_.store(a.ms, std::memory_order_release);
    frac0_.store(a.frac, std::memory_order_release);
    mult_.store(mult_cur_, std::memory_order_release);
    limit_.store(limit, std::memory_order_release);
    ++anchors_;
  }

  // Once per source: decides TSC or system clock and calibrates. Losers of the race return
  // at once (their callers read the system clock meanwhile).
  void init() noexcept {
    int expected = kUninit;
    if (!state_.compare_exchange_strong(expected, kInit, std::memory_order_acq_rel)) return;
    const bool ok = mode_ == Mode::automatic && tsc_usable() && calibrate();
    state_.store(ok ? kTsc : kSystem, std::memory_order_release);
  }

  bool calibrate() noexcept {
    using namespace std::chrono;
    std::uint64_t s = 0;
    if (!try_lock(s)) return false;  // cannot happen: nothing writes before state_ is kTsc
    bool ok = false;
    Sample a, b;
    if (take_sample(a)) {
      // Spin kCalibrateNs of CLOCK_MONOTONIC; bounded in count too (~20-50 ns per read).
      for (int i = 0; i < 10000000; ++i) {
        const std::int64_t m = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
        if (m - a.mono_ns >= static_cast<std::int64_t>(kCalibrateNs)) break;
      }
      if (take_sample(b) && b.tsc > a.tsc && b.mono_ns > a.mono_ns) {
        const auto ns = static_cast<std::uint64_t>(b.mono_ns - a.mono_ns);
        const std::uint64_t ticks = b.tsc - a.tsc;
        const std::uint64_t m = mult_from(ns, ticks);
        const std::uint64_t unc = a.half + b.half;
        // A plausible rate (50 MHz to 50 GHz) measured to within 1 %.
        const bool sane = m != 0 && mul_div(ticks, 1000000000u, ns) >= 50000000u &&
                          mul_div(ticks, 1000000000u, ns) <= 50000000000u && unc <= ticks / 100;
        if (sane) {
          mult_cur_ = m;
          rate_ns_ = ns;
          rate_ticks_ = ticks;
          rate_unc_ticks_ = unc;
          base_ = a;
          write_anchor(b);
          ok = true;
        }
      }
    }
    seq_.store(s + 2, std::memory_order_release);
    return ok;
  }

  // A new anchor; the rate refined over [base_, now]. Returns false (and leaves everything
  // as it was) if another thread holds the lock. On success *out (if given) is the reading
  // at the new anchor.
  bool reanchor(std::int64_t* out) noexcept {
    std::uint64_t s = 0;
    if (!try_lock(s)) return false;
    Sample x;
    if (!take_sample(x)) {
      // The TSC went backwards inside every bracket: stop trusting it. limit 0 sends every
      // reader to the slow path, which then reads the system clock.
      limit_.store(0, std::memory_order_release);
      state_.store(kSystem, std::memory_order_release);
      seq_.store(s + 2, std::memory_order_release);
      return false;
    }
    refine(x);
    write_anchor(x);
    seq_.store(s + 2, std::memory_order_release);
    if (out != nullptr) *out = split_ns(x.real_ns).ms;
    return true;
  }

  // Under the lock: the rate over the baseline [base_, x], adopted when measured over at
  // least as long a baseline as the current one (or longer than kRefineNs) and within 0.2 %
  // of it. The baseline restarts at x when it is broken or longer than kMaxBaselineNs.
  void refine(const Sample& x) noexcept {
    bool keep_base = x.tsc > base_.tsc && x.mono_ns > base_.mono_ns;
    if (keep_base) {
      const auto ns = static_cast<std::uint64_t>(x.mono_ns - base_.mono_ns);
      const std::uint64_t ticks = x.tsc - base_.tsc;
      if (ns >= rate_ns_ || ns >= kRefineNs) {
        const std::uint64_t m = mult_from(ns, ticks);
        const std::uint64_t diff = m > mult_cur_ ? m - mult_cur_ : mult_cur_ - m;
        if (m != 0 && diff <= (mult_cur_ >> 9)) {
          mult_cur_ = m;
          rate_ns_ = ns;
          rate_ticks_ = ticks;
          rate_unc_ticks_ = base_.half + x.half;
        } else {
          keep_base = false;
        }
      }
      if (ns > kMaxBaselineNs) keep_base = false;
    }
    if (!keep_base) base_ = x;
  }

  __attribute__((noinline, cold)) std::int64_t slow(bool consistent, std::uint64_t delta,
                                                    std::uint64_t limit) noexcept {
    const int st = state_.load(std::memory_order_acquire);
    if (st == kUninit) {
      init();
      return system_ms();
    }
    if (st != kTsc || !consistent) return system_ms();
    // The TSC reads a little behind the anchor (this read ran before another thread's
    // re-anchor, or CPUs differ by a few ticks): no re-anchor needed, the system clock is right.
    if (static_cast<std::int64_t>(delta) < 0 && std::uint64_t{0} - delta <= limit) return system_ms();
    std::int64_t ms = 0;
    if (reanchor(&ms)) return ms;
    return system_ms();
  }

  // The anchor, read by every reader: its own cache line (the class is 64-aligned).
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<std::uint64_t> tsc0_{0};
  std::atomic<std::int64_t> ms0_{0};
  std::atomic<std::uint64_t> frac0_{0};
  std::atomic<std::uint64_t> mult_{0};
  std::atomic<std::uint64_t> limit_{0};  // 0 until calibrated: every read takes the slow path
  // Written once per source, read on the slow path only.
  alignas(64) std::atomic<int> state_{kUninit};
  // The writer's own state: touched only under the lock (seq_ odd).
  std::uint64_t mult_cur_ = 0;
  std::uint64_t rate_ns_ = 0;
  std::uint64_t rate_ticks_ = 0;
  std::uint64_t rate_unc_ticks_ = 0;
  std::uint64_t anchors_ = 0;
  Sample base_{};
#endif
  [[maybe_unused]] Mode mode_;
};

// The one anchor every TscClock shares. Constant-initialised (constexpr constructor): no
// guard on the read path, no static-initialisation order issue; calibration is lazy.
inline TscSource g_process_source{Mode::automatic};
inline TscSource& process_source() noexcept { return g_process_source; }

}  // namespace expiring::detail::tsc
