// expiring/detail/access.hpp: the access-tracking room: LRU/LFU data and idle TTLs.
//
// Design
// ------
// Two things may happen when a key is accessed, and both are optional:
//   * its access word is updated (Redis's robj.lru: the 24-bit LRU clock, or the LFU
//     minute and logarithmic counter; detail/eviction.hpp has the arithmetic), which the
//     memory governor's LRU and LFU policies read when they score eviction candidates; the
//     words exist only while a memory limit or an entry bound is set with such a policy;
//   * a read moves its idle TTL (Options::expire_after_access) to now + idle.
// The room keeps which of them are on and computes the words and deadlines; the engine owns
// the keyspace's access array and writes what it is told. With neither on, `read_hook()` is
// false and a read pays that one test: the hot path of get() reads nothing else here.
#pragma once

#include <cstdint>

#include "../options.hpp"
#include "arith.hpp"
#include "eviction.hpp"

namespace expiring::detail {

class AccessTracker {
 public:
  static constexpr bool is_lfu(EvictionPolicy p) noexcept {
    return p == EvictionPolicy::allkeys_lfu || p == EvictionPolicy::volatile_lfu;
  }
  static constexpr bool is_lru(EvictionPolicy p) noexcept {
    return p == EvictionPolicy::allkeys_lru || p == EvictionPolicy::volatile_lru;
  }
  // Whether a bounded store (a memory limit or an entry bound) with this policy keeps words.
  static constexpr bool wants_words(bool bounded, EvictionPolicy p) noexcept {
    return bounded && (is_lru(p) || is_lfu(p));
  }

  // ---- what is on ----
  // Access words are kept (the keyspace's access array exists).
  bool words() const noexcept { return words_; }
  void set_words(bool on) noexcept {
    words_ = on;
    hook_ = words_ || idle_ms_ != 0;
  }
  // The idle TTL in ms (0: none).
  std::int64_t idle_ms() const noexcept { return idle_ms_; }
  void set_idle_ms(std::int64_t ms) noexcept {
    idle_ms_ = ms;
    hook_ = words_ || idle_ms_ != 0;
  }
  // Whether a read must go through the engine's access hook (words or an idle TTL).
  bool read_hook() const noexcept { return hook_; }

  // ---- access words ----
  // The word of a new entry: the LRU clock, or LFU_INIT_VAL at this minute.
  static std::uint32_t initial_word(const Options& o, std::int64_t now) noexcept {
    return is_lfu(o.maxmemory_policy) ? lfu_pack(lfu_minutes(now), kLfuInitVal)
                                      : lru_clock(now, o.lru_clock_resolution_ms);
  }
  // The word after an access (Redis's updateLFU(), or the LRU clock store of lookupKey()).
  // `unit` is a uniform draw in [0, 1), for the LFU counter's logarithmic increment.
  static std::uint32_t accessed_word(std::uint32_t word, const Options& o, std::int64_t now, double unit) noexcept {
    if (!is_lfu(o.maxmemory_policy)) return lru_clock(now, o.lru_clock_resolution_ms);
    const std::uint32_t minutes = lfu_minutes(now);
    std::uint32_t c = lfu_decayed(word, minutes, o.lfu_decay_time);
    c = lfu_log_incr(c, unit, o.lfu_log_factor);
    return lfu_pack(minutes, c);
  }
  // An eviction candidate's score, higher = better to evict (Redis evictionPoolPopulate's
  // "idle"): LRU idle time, 255 - the decayed LFU counter, or for volatile-ttl the nearness
  // of the deadline.
  static std::uint64_t score(std::uint32_t word, std::int64_t deadline, const Options& o, std::int64_t now) noexcept {
    const EvictionPolicy p = o.maxmemory_policy;
    if (is_lru(p)) return lru_idle(lru_clock(now, o.lru_clock_resolution_ms), word & kLruClockMax);
    if (is_lfu(p)) return 255 - lfu_decayed(word, lfu_minutes(now), o.lfu_decay_time);
    return ~biased_ms(deadline);  // volatile-ttl: the nearest deadline scores highest
  }

  // ---- idle TTLs ----
  // The deadline a key gets at an access at `now` (saturating at INT64_MAX).
  std::int64_t idle_deadline(std::int64_t now) const noexcept {
    return now > kInt64Max - idle_ms_ ? kInt64Max : now + idle_ms_;
  }

 private:
  bool words_ = false;
  bool hook_ = false;
  std::int64_t idle_ms_ = 0;
};

}  // namespace expiring::detail
