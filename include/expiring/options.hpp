// expiring/options.hpp: the arguments of SET/GETEX/EXPIRE and the store's settings.
//
// Expiry arguments are typed so that combinations Redis rejects with "syntax error" cannot
// be written: a SET takes at most one of Ex, Px, ExAt, PxAt, KeepTtl; GETEX at most one of
// Ex, Px, ExAt, PxAt, Persist; NX and XX of SET are one enum. The EXPIRE-family flags are a
// bit set because Redis accepts some combinations (XX|GT, XX|LT); the invalid ones (NX with
// anything, GT with LT) are reported as a typed error at run time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ratio>

#include "detail/duration.hpp"

namespace expiring {

// ---- Expiry arguments -------------------------------------------------------------------

// ---- TTL jitter --------------------------------------------------------------------------
// Spreads deadlines written at once so that they do not all expire at once (the "key
// storm"). Jitter applies only where a *relative* TTL is written: EX/PX of set(), set_get(),
// setex(), psetex(), getex(), and expire()/pexpire() with a positive TTL. Absolute deadlines
// (EXAT/PXAT, expireat/pexpireat) are never moved, and a non-positive EXPIRE still deletes.
//
// A TTL of t ms with spread s becomes t + d, d drawn uniformly from [-s, +s] (so the mean TTL
// is unchanged). Percent(p): s = t * p / 100, p in 0..100. Spread(ms): s = ms, ms >= 0.
// The clamp: the jittered deadline is at least now + 1 (a jittered key is never born
// expired) and at most INT64_MAX (jitter never overflows a deadline that was valid without
// it). Validity of the TTL itself (positive, no overflow) is checked before jitter, so jitter
// never turns an invalid TTL into a valid one or the reverse.
class Jitter {
 public:
  // What amount() means: a percentage of the TTL for `percent`, milliseconds for `spread`.
  enum class Kind : std::uint8_t {
    inherit,  // per call: use the store's Options::ttl_jitter (the default argument)
    none,     // no jitter
    percent,  // a percentage of the TTL
    spread,   // an absolute spread in milliseconds
  };
  // Jitter{} is `inherit`: a call given it uses the store's Options::ttl_jitter. none() turns
  // jitter off; percent(p) spreads by p% of the TTL (p in 0..100); spread_ms(ms) by `ms`
  // milliseconds (ms >= 0). An amount outside its range makes an invalid Jitter (see valid()).
  constexpr Jitter() noexcept = default;
  static constexpr Jitter none() noexcept { return Jitter(Kind::none, 0); }
  static constexpr Jitter percent(std::int64_t p) noexcept { return Jitter(Kind::percent, p); }
  static constexpr Jitter spread_ms(std::int64_t ms) noexcept { return Jitter(Kind::spread, ms); }
  // A spread given as a duration (rounded up to whole ms; one beyond the int64 range of ms
  // makes an invalid Jitter, which the store refuses with Errc::out_of_range; so does a negative one,
  // even one that rounds up to 0 ms).
  template <class Rep, class Period>
  static constexpr Jitter spread(std::chrono::duration<Rep, Period> d) noexcept {
    const detail::CheckedMs ms = detail::to_ms(d);
    return Jitter(Kind::spread, ms.ok && d >= std::chrono::duration<Rep, Period>::zero() ? ms.ms : -1);
  }
  // The kind, and its amount: a percentage for `percent`, milliseconds for `spread`, else 0.
  constexpr Kind kind() const noexcept { return kind_; }
  constexpr std::int64_t amount() const noexcept { return amount_; }
  // Percent within 0..100, spread >= 0 (a store refuses anything else).
  constexpr bool valid() const noexcept {
    return kind_ == Kind::percent ? (amount_ >= 0 && amount_ <= 100) : (kind_ != Kind::spread || amount_ >= 0);
  }
  // The spread s for a TTL of ttl_ms > 0 ms (0 for none/inherit). Never overflows.
  constexpr std::int64_t spread_for(std::int64_t ttl_ms) const noexcept {
    if (kind_ == Kind::percent) return ttl_ms / 100 * amount_ + ttl_ms % 100 * amount_ / 100;
    if (kind_ == Kind::spread) return amount_;
    return 0;
  }
  // Equal when both the kind and the amount are.
  friend constexpr bool operator==(Jitter a, Jitter b) noexcept { return a.kind_ == b.kind_ && a.amount_ == b.amount_; }
  friend constexpr bool operator!=(Jitter a, Jitter b) noexcept { return !(a == b); }

 private:
  constexpr Jitter(Kind k, std::int64_t a) noexcept : kind_(k), amount_(a) {}
  Kind kind_ = Kind::inherit;
  std::int64_t amount_ = 0;
};

// ---- Expiry arguments -------------------------------------------------------------------

// Each expiry argument takes an integer or a std::chrono type: a duration for Ex and Px, a
// std::chrono::system_clock time point for PxAt (ExAt takes Unix seconds only). A duration's count is converted
// exactly (Px rounds a finer one, e.g. microseconds, up to the next ms; Ex takes whole seconds
// only: a finer period is a compile error that says to use Px). A value beyond the int64 range
// of milliseconds is not wrapped: it makes the argument invalid, and the call that takes it
// returns Errc::invalid_expire_time, as an overflowing integer does. The store-facing
// conversions (SetExpiry, GetExExpiry) also accept a bare duration (= Px) or time point
// (= PxAt): `set(k, v, 30s)`, `getex(k, 30min)`, `set(k, v, system_clock::now() + 1h)`.

// Relative seconds (Redis EX). Must be positive in SET/GETEX. `Ex{30}.with(Jitter::percent(10))`
// jitters this one write (overriding the store's default).
struct Ex {
  std::int64_t seconds;  // the TTL, in seconds
  Jitter jitter{};       // this write's jitter; Jitter{} (inherit) takes Options::ttl_jitter
  bool invalid = false;  // built from a duration beyond the int64 range of ms
  // From a count of seconds: `Ex{30}`.
  constexpr explicit Ex(std::int64_t s) noexcept : seconds(s) {}
  // From a std::chrono duration of whole seconds, implicitly: `Ex{5min}`. A finer period does
  // not compile.
  template <class Rep, class Period>
  constexpr Ex(std::chrono::duration<Rep, Period> d) noexcept  // NOLINT: implicit by design
      : seconds(0) {
    static_assert(std::ratio_divide<Period, std::ratio<1>>::den == 1,
                  "expiring::Ex takes whole seconds; use Px (or a bare duration) for a finer TTL");
    const detail::CheckedMs s = detail::to_seconds_exact(d);
    const detail::CheckedMs ms = s.ok ? detail::to_ms(d) : s;
    seconds = s.ms;
    invalid = !ms.ok;
  }
  // A copy whose write is jittered by `j`.
  constexpr Ex with(Jitter j) const noexcept {
    Ex e = *this;
    e.jitter = j;
    return e;
  }
};
// Relative milliseconds (Redis PX). Must be positive in SET/GETEX. `.with(Jitter)` as Ex.
struct Px {
  std::int64_t ms;       // the TTL, in milliseconds
  Jitter jitter{};       // this write's jitter; Jitter{} (inherit) takes Options::ttl_jitter
  bool invalid = false;  // built from a duration beyond the int64 range of ms
  // From a count of milliseconds: `Px{1500}`.
  constexpr explicit Px(std::int64_t m) noexcept : ms(m) {}
  // From a std::chrono duration, implicitly, rounded up to the next whole ms (1 us is 1 ms).
  template <class Rep, class Period>
  constexpr Px(std::chrono::duration<Rep, Period> d) noexcept  // NOLINT: implicit by design
      : ms(detail::to_ms(d).ms), invalid(!detail::to_ms(d).ok) {}
  // A copy whose write is jittered by `j`.
  constexpr Px with(Jitter j) const noexcept {
    Px p = *this;
    p.jitter = j;
    return p;
  }
};
// Absolute Unix seconds (Redis EXAT). Must be positive.
struct ExAt {
  std::int64_t unix_seconds;  // the deadline, in seconds since the Unix epoch
  // From Unix seconds.
  constexpr explicit ExAt(std::int64_t s) noexcept : unix_seconds(s) {}
};
// Absolute Unix milliseconds (Redis PXAT). Must be positive. From a system_clock time point:
// its time since the epoch, rounded up to the next ms.
struct PxAt {
  std::int64_t unix_ms;  // the deadline, in milliseconds since the Unix epoch
  bool invalid = false;  // built from a time point beyond the int64 range of ms
  // From Unix milliseconds.
  constexpr explicit PxAt(std::int64_t m) noexcept : unix_ms(m) {}
  // From a std::chrono::system_clock time point (implicitly), rounded up to the next whole ms.
  template <class D>
  constexpr PxAt(std::chrono::time_point<std::chrono::system_clock, D> t) noexcept  // NOLINT: implicit
      : unix_ms(detail::to_unix_ms(t).ms), invalid(!detail::to_unix_ms(t).ok) {}
};
// SET ... KEEPTTL: keep the TTL of the live key being overwritten.
struct KeepTtl {};
// GETEX ... PERSIST: remove the TTL.
struct Persist {};

namespace detail {
// How a time argument or reply is read: relative to now or absolute; in seconds or ms.
enum class TimeBase : std::uint8_t { relative, absolute };
enum class TimeUnit : std::uint8_t { seconds, ms };
enum class ExpiryKind : std::uint8_t { none, ex, px, exat, pxat, keepttl, persist };
struct ExpirySpec {
  ExpiryKind kind = ExpiryKind::none;
  bool invalid = false;  // from a chrono value that did not fit: Errc::invalid_expire_time
  std::int64_t value = 0;
  Jitter jitter{};  // EX/PX only
};
}  // namespace detail

// The expiry argument of SET: nothing (the TTL is removed, as Redis's SET does), or one of
// Ex, Px, ExAt, PxAt, KeepTtl.
class SetExpiry {
 public:
  // Nothing (SET then removes the TTL), or an Ex, Px, ExAt or PxAt as given, implicitly:
  // `set(k, v, Px{100})`.
  constexpr SetExpiry() noexcept = default;
  constexpr SetExpiry(Ex e) noexcept : spec_{detail::ExpiryKind::ex, e.invalid, e.seconds, e.jitter} {}  // NOLINT
  constexpr SetExpiry(Px p) noexcept : spec_{detail::ExpiryKind::px, p.invalid, p.ms, p.jitter} {}       // NOLINT
  constexpr SetExpiry(ExAt e) noexcept : spec_{detail::ExpiryKind::exat, false, e.unix_seconds} {}             // NOLINT
  constexpr SetExpiry(PxAt p) noexcept : spec_{detail::ExpiryKind::pxat, p.invalid, p.unix_ms} {}  // NOLINT
  // A bare duration is a relative TTL (Px), a system_clock time point an absolute one (PxAt).
  template <class Rep, class Period>
  constexpr SetExpiry(std::chrono::duration<Rep, Period> d) noexcept : SetExpiry(Px(d)) {}  // NOLINT
  template <class D>
  constexpr SetExpiry(std::chrono::time_point<std::chrono::system_clock, D> t) noexcept  // NOLINT
      : SetExpiry(PxAt(t)) {}
  // KEEPTTL: `set(k, v, KeepTtl{})`.
  constexpr SetExpiry(KeepTtl) noexcept : spec_{detail::ExpiryKind::keepttl, false, 0} {}         // NOLINT
  // Used by the store: the argument as one tagged value (its kind, value, validity and jitter).
  constexpr detail::ExpirySpec spec() const noexcept { return spec_; }

 private:
  detail::ExpirySpec spec_{};
};

// The option of GETEX: nothing (TTL untouched), or one of Ex, Px, ExAt, PxAt, Persist.
class GetExExpiry {
 public:
  // Nothing (GETEX then leaves the TTL as it is), or an Ex, Px, ExAt or PxAt as given,
  // implicitly: `getex(k, Ex{60})`.
  constexpr GetExExpiry() noexcept = default;
  constexpr GetExExpiry(Ex e) noexcept : spec_{detail::ExpiryKind::ex, e.invalid, e.seconds, e.jitter} {}  // NOLINT
  constexpr GetExExpiry(Px p) noexcept : spec_{detail::ExpiryKind::px, p.invalid, p.ms, p.jitter} {}       // NOLINT
  constexpr GetExExpiry(ExAt e) noexcept : spec_{detail::ExpiryKind::exat, false, e.unix_seconds} {}             // NOLINT
  constexpr GetExExpiry(PxAt p) noexcept : spec_{detail::ExpiryKind::pxat, p.invalid, p.unix_ms} {}  // NOLINT
  // A bare duration is a relative TTL (Px), a system_clock time point an absolute one (PxAt).
  template <class Rep, class Period>
  constexpr GetExExpiry(std::chrono::duration<Rep, Period> d) noexcept : GetExExpiry(Px(d)) {}  // NOLINT
  template <class D>
  constexpr GetExExpiry(std::chrono::time_point<std::chrono::system_clock, D> t) noexcept  // NOLINT
      : GetExExpiry(PxAt(t)) {}
  // PERSIST: `getex(k, Persist{})` removes the TTL.
  constexpr GetExExpiry(Persist) noexcept : spec_{detail::ExpiryKind::persist, false, 0} {}         // NOLINT
  // Used by the store: the option as one tagged value (its kind, value, validity and jitter).
  constexpr detail::ExpirySpec spec() const noexcept { return spec_; }

 private:
  detail::ExpirySpec spec_{};
};

// SET's NX / XX (mutually exclusive by construction).
enum class SetCond : std::uint8_t {
  Always,  // no condition
  NX,      // only if the key does not exist (a stale key counts as absent)
  XX,      // only if the key exists
};

// The EXPIRE family's condition flags. Combine with |. Valid: none, one flag, XX|GT, XX|LT.
enum class ExpireFlags : std::uint8_t {
  None = 0,
  NX = 1,  // only if the key has no TTL
  XX = 2,  // only if the key has a TTL
  GT = 4,  // only if the new deadline is later than the current one (no TTL = infinite)
  LT = 8,  // only if the new deadline is earlier than the current one (no TTL = infinite)
};
// Both sets of flags: `ExpireFlags::XX | ExpireFlags::GT`.
constexpr ExpireFlags operator|(ExpireFlags a, ExpireFlags b) noexcept {
  return static_cast<ExpireFlags>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
// Whether `set` includes `flag`.
constexpr bool has(ExpireFlags set, ExpireFlags flag) noexcept {
  return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(flag)) != 0;
}

// ---- Expiry index policies --------------------------------------------------------------
// The sixth template parameter of ExpiringStore chooses how volatile keys are indexed for
// tick(). Both give identical command semantics; they differ in what tick() costs and how late
// a due key can be reclaimed (see detail/expiry_index.hpp).

// Redis's design: the volatile keys, swept in storage order by a resumable cursor in rounds of
// keys_per_loop (the active-expire cycle, semantics.md B §3), plus the guaranteed sweep of
// Options::full_pass_ticks. A bit per table slot marks the volatile keys; a TTL costs only the
// entry's deadline and that bit.
struct SampledExpiry {};

// A hierarchical timer wheel (16 ms slots, ten levels): every tick reclaims all keys due at its
// `now` (budget permitting), looking at no key that is not due except those of the 16 ms slot
// `now` falls in; O(1) insert/update/remove and work per tick bounded by the same budgets.
// 4 bytes per volatile key plus 8 per entry (its bucket and position there). The sampling parameters (keys_per_loop, acceptable_stale,
// full_pass_ticks) do not apply; the budgets do, and avg_ttl is not estimated (0).
struct TimeOrderedExpiry {};
// Defined (as 1) where TimeOrderedExpiry exists, for code that builds against versions with
// and without it: `#if defined(EXPIRING_HAS_TIME_ORDERED_EXPIRY)`.
#define EXPIRING_HAS_TIME_ORDERED_EXPIRY 1


// ---- Active expiry ----------------------------------------------------------------------

// Which of Redis's two active-expire cycles tick() runs.
enum class CycleKind : std::uint8_t {
  Slow,  // serverCron's cycle: hz times a second, budget slow_time_perc% of 1/hz
  Fast,  // beforeSleep's cycle: short budget, runs only after a capped or stale cycle
};

// The parameters Redis derives from `active-expire-effort` (1..10) and `hz` (semantics.md B §3.2).
struct CycleParams {
  int keys_per_loop;                 // samples per round: 20 + 5*(effort-1)
  std::int64_t fast_duration_us;     // fast-cycle budget: 1000 + 250*(effort-1)
  int slow_time_perc;                // slow-cycle share of one 1/hz period: 25 + 2*(effort-1)
  int acceptable_stale;              // repeat a round while more than this % expired: 10 - (effort-1)
  std::int64_t slow_time_limit_us;   // slow_time_perc * 1'000'000 / hz / 100, at least 1
};

// Preconditions: 1 <= effort <= 10, 1 <= hz <= 500 (the store enforces both).
constexpr CycleParams cycle_params(int effort, int hz) noexcept {
  const int e = effort - 1;
  CycleParams p{};
  p.keys_per_loop = 20 + 20 / 4 * e;
  p.fast_duration_us = 1000 + 1000 / 4 * e;
  p.slow_time_perc = 25 + 2 * e;
  p.acceptable_stale = 10 - e;
  p.slow_time_limit_us = static_cast<std::int64_t>(p.slow_time_perc) * 1000000 / hz / 100;
  if (p.slow_time_limit_us <= 0) p.slow_time_limit_us = 1;
  return p;
}

// ---- Soft TTL ---------------------------------------------------------------------------

// What lookup() found (see Options::stale_window_ms).
enum class Freshness : std::uint8_t {
  missing,  // no live key
  fresh,    // live, before its refresh-ahead window
  refresh,  // live, within the refresh-ahead window: refresh it soon
  stale,    // live, past its soft deadline: served, but refresh it now
};

// The enumerator's name, as "stale".
constexpr const char* to_string(Freshness f) noexcept {
  switch (f) {
    case Freshness::missing: return "missing";
    case Freshness::fresh: return "fresh";
    case Freshness::refresh: return "refresh";
    case Freshness::stale: return "stale";
  }
  return "unknown";
}

// ---- Memory limit and eviction ----------------------------------------------------------

// Redis `maxmemory-policy`: what a write does when used memory is above Options::maxmemory.
enum class EvictionPolicy : std::uint8_t {
  noeviction,       // refuse the write (Errc::out_of_memory); reads and deletes still work
  allkeys_lru,      // evict the least recently used key (sampled, Redis's approximation)
  volatile_lru,     // ... among keys with a TTL
  allkeys_lfu,      // evict the least frequently used key (Redis's logarithmic counter)
  volatile_lfu,     // ... among keys with a TTL
  allkeys_random,   // evict a random key
  volatile_random,  // evict a random key with a TTL
  volatile_ttl,     // evict the key with the nearest deadline among the samples
};

// Redis's name of the policy, as "allkeys-lru" (CONFIG GET maxmemory-policy).
constexpr const char* to_string(EvictionPolicy p) noexcept {
  switch (p) {
    case EvictionPolicy::noeviction: return "noeviction";
    case EvictionPolicy::allkeys_lru: return "allkeys-lru";
    case EvictionPolicy::volatile_lru: return "volatile-lru";
    case EvictionPolicy::allkeys_lfu: return "allkeys-lfu";
    case EvictionPolicy::volatile_lfu: return "volatile-lfu";
    case EvictionPolicy::allkeys_random: return "allkeys-random";
    case EvictionPolicy::volatile_random: return "volatile-random";
    case EvictionPolicy::volatile_ttl: return "volatile-ttl";
  }
  return "unknown";
}

// ---- Store settings ---------------------------------------------------------------------

// The store's settings, given to its constructor, which checks them (see ExpiringStore's). Most
// are Redis configuration directives under their redis.conf names; setters of the store
// (set_maxmemory(), set_hz(), ...) change some of them later, and options() reads them back.
struct Options {
  // Redis `hz`: how often the caller intends to run slow ticks per second. It sizes the slow
  // cycle's time budget. Clamped to [1, 500] as Redis does.
  int hz = 10;

  // Redis `active-expire-effort`, 1..10 (the constructor throws std::invalid_argument
  // outside; set_active_expire_effort() returns Errc::out_of_range).
  int active_expire_effort = 1;

  // Redis `DEBUG SET-ACTIVE-EXPIRE`: when false, tick() does nothing and keys are reclaimed
  // only when accessed.
  bool active_expire_enabled = true;

  // Guaranteed sweep (semantics.md D9), the fix for Redis's known weakness: when few keys are due,
  // Redis's sampling stops after one round and due keys can wait minutes. With N > 0 every
  // slow tick visits at least ceil(expires_size / N) positions of the expiry table, so each
  // pass over all volatile keys takes at most N slow ticks (N / hz seconds), budget
  // permitting. 0 reproduces Redis exactly.
  std::uint32_t full_pass_ticks = 16;

  // Deterministic budget for tests: stop a tick after this many sampling rounds and count it
  // as a time-cap exit. 0 = no round limit (only the time budget applies).
  std::uint32_t max_rounds_per_tick = 0;

  // The monotonic microsecond clock that measures tick() budgets (Redis ustime()). Empty =
  // std::chrono::steady_clock. Tests inject a fake one.
  std::function<std::int64_t()> budget_clock_us;

  // Seeds the store's random_key() generator and its hash folding, and keys a keyed hash
  // (expiring::Hash, expiring::SipHash, or any hash with rekey(HashKey)) with
  // HashKey::from_seed(seed), so that a seeded store is reproducible. Empty = a fresh random
  // seed, and the hash keeps its own random key. A seed an attacker can guess gives away the hash key: seed only for tests
  // and benchmarks (hash.hpp).
  std::optional<std::uint64_t> seed;

  // Capacity to reserve up front (keys).
  std::size_t reserve = 0;

  // TTL jitter applied to every relative TTL written (see Jitter); a call's own Ex/Px
  // .with(Jitter) or expire(..., Jitter) overrides it. The constructor throws
  // std::invalid_argument for an invalid one (percent outside 0..100, negative spread).
  Jitter ttl_jitter = Jitter::none();

  // The random source jitter draws from (one 64-bit draw per jittered write). Empty = the
  // store's own generator (splitmix64, seeded from `seed`). Inject one for deterministic tests.
  std::function<std::uint64_t()> random;

  // Soft TTL (stale-while-revalidate and refresh-ahead), read by lookup() and get_or_load().
  // Both are windows before a key's hard deadline, so they cost no bytes per key:
  //   stale   when the remaining TTL is below stale_window_ms (past the soft deadline
  //           deadline - stale_window_ms): still served, flagged stale;
  //   refresh when the remaining TTL is below stale_window_ms + refresh_window_ms: fresh,
  //           but due for a refresh ahead of time.
  // Keys without a TTL are always fresh. 0 disables a window. Negative values make the
  // constructor throw std::invalid_argument.
  std::int64_t stale_window_ms = 0;
  std::int64_t refresh_window_ms = 0;

  // Expire after access (time to idle: Caffeine's expireAfterAccess, moka's time_to_idle).
  // With T > 0 a key lives until T has passed since it was last read or written:
  //   * a read that finds a live key sets its deadline to now + T: get(), get_many(),
  //     lookup(), get_or_load()'s hit, touch(), getex() and getex_ptr() without an option
  //     (with one, the option sets the TTL), set_get()'s read, copy()'s source; the queries
  //     that Redis does not count as an access (exists(), the TTL queries, peek(), scan(),
  //     iteration) do not;
  //   * a write that gives no TTL gives now + T instead of none: the set() family without
  //     an expiry argument, get_or_load() without `ttl`, modify();
  //   * an explicit TTL (EX/PX/EXAT/PXAT, expire(), getex() with an option, KEEPTTL) is
  //     applied as given, until the key's next read moves it to now + T; persist() removes
  //     the TTL until then.
  // The refresh raises no event and costs one store of the deadline per read (a key's only
  // extra cost). 0 (the default) turns it off: Redis's semantics exactly. Negative values
  // make the constructor throw std::invalid_argument.
  std::chrono::milliseconds expire_after_access{0};

  // Entry-count bound (Caffeine's maximumSize, moka's max_capacity): with N > 0 the store
  // never holds more than N keys (stale ones not yet reclaimed included, as size()). A write
  // that adds a key to a store holding N first evicts one by maxmemory_policy (allkeys-* among
  // all keys, volatile-* among keys with a TTL), so the bound holds after every call; when
  // the policy has nothing to evict (noeviction, or volatile-* with no key with a TTL) the
  // write is refused with Errc::out_of_memory and nothing changes. Overwrites, deletes and
  // rename() never need room. Independent of maxmemory: set both and both hold. 0 = no bound.
  std::size_t max_entries = 0;

  // Redis `maxmemory`: the limit on used memory, as the store's weigher counts it (by default
  // sizeof(K) + sizeof(V) + the heap bytes of std::string keys and values, per entry).
  // 0 = no limit: nothing is tracked and nothing is paid.
  std::size_t maxmemory = 0;
  // Redis `maxmemory-policy`.
  EvictionPolicy maxmemory_policy = EvictionPolicy::noeviction;
  // Redis `maxmemory-samples`: keys sampled per eviction round, 1..64.
  int maxmemory_samples = 5;
  // Redis `lfu-log-factor` (>= 0) and `lfu-decay-time` (minutes, >= 0; 0 = never decay).
  int lfu_log_factor = 10;
  int lfu_decay_time = 1;
  // Resolution of the 24-bit LRU clock, in ms (Redis LRU_CLOCK_RESOLUTION: 1000). >= 1.
  std::int64_t lru_clock_resolution_ms = 1000;

  // Lazy free (Redis UNLINK and lazyfree-lazy-*): removed values are not destroyed on the
  // caller's path but queued, and tick() destroys them within its time budget. The queue
  // holds at most lazyfree_queue_max values (its room is reserved by the constructor); a value
  // removed while it is full is destroyed at once. 0 (the default) disables lazy free.
  // When enabled, unlink() is always lazy, as Redis's UNLINK; the flags choose the others.
  std::size_t lazyfree_queue_max = 0;
  bool lazyfree_lazy_expire = false;      // values of expired keys (lazy and active expiry)
  bool lazyfree_lazy_eviction = false;    // values of evicted keys
  bool lazyfree_lazy_user_del = false;    // values removed by del()
  bool lazyfree_lazy_server_del = false;  // values replaced by set(), rename() and copy()
  // Destroy queued values on a background thread (Redis's lazyfree bio thread) instead of in
  // tick(): tick() and a full queue hand the whole queue over in one swap (no allocation, no
  // lock on any other path); values then die off the store's thread, so V's destructor must
  // be safe to run there. Memory waiting to be freed is bounded by two queues. Needs
  // lazyfree_queue_max > 0 (else the constructor throws std::invalid_argument).
  bool lazyfree_background = false;

  // A replica (Redis's replica, docs/semantics.md D31): the store follows a primary's change
  // feed through apply() and never expires a key on its own. tick() runs no expiry cycle;
  // reads (get(), exists(), the TTL queries, scan(), random_key(), ...) answer a stale key as
  // missing and leave it in place; nothing is evicted. A key goes only when a record says so
  // (DEL, UNLINK, FLUSHALL) or when you write it yourself: as on a writable Redis replica, a
  // write of your own treats a stale key as missing and replaces it. In a store of hashes the
  // readers skip a stale field and leave it (only the primary's HDEL removes it); a write of
  // your own drops the stale fields of the hash it opens, but keeps the key even when that
  // empties it.
  bool replica = false;

  // Redis 7's active expiry exactly: no guaranteed sweep; everything else as Redis's
  // defaults (hz 10, effort 1).
  static Options redis_exact() {
    Options o;
    o.full_pass_ticks = 0;
    return o;
  }
};

}  // namespace expiring
