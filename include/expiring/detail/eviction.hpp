// expiring/detail/eviction.hpp: Redis's maxmemory eviction (evict.c) for the store: the 24-bit
// LRU clock, the LFU logarithmic counter with decay, the 16-slot eviction pool that sampled
// candidates compete for, and the choice of a victim (choose_victim). The store keeps the
// accounting (used memory against the limit) and removes the victims.
//
// Each entry has 4 bytes of access metadata (Keyspace::access(i), an array beside the entries
// that exists only while a memory limit with an LRU/LFU policy is set), as Redis's robj.lru:
//   LRU: the LRU clock (24 bits) at the last access;
//   LFU: the minute of the last decrement (16 bits) << 8 | an 8-bit logarithmic counter.
// The store updates it on access only when a memory limit is set and the policy reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "../options.hpp"
#include "attributes.hpp"

namespace expiring::detail {

inline constexpr std::uint32_t kLruClockMax = (std::uint32_t{1} << 24) - 1;
inline constexpr std::uint32_t kLfuInitVal = 5;  // Redis LFU_INIT_VAL: new keys start here
inline constexpr int kEvictionPoolSize = 16;     // Redis EVPOOL_SIZE

// int64 ms mapped monotonically onto uint64 (negative times are allowed by ManualClock).
constexpr std::uint64_t biased_ms(std::int64_t t) noexcept {
  return static_cast<std::uint64_t>(t) ^ (std::uint64_t{1} << 63);
}
// floor(t / unit) in two's complement (unit > 0): whole units of Unix time, also before 1970.
constexpr std::uint64_t time_units(std::int64_t t, std::int64_t unit) noexcept {
  std::int64_t q = t / unit;
  if (t % unit != 0 && t < 0) --q;
  return static_cast<std::uint64_t>(q);
}

// Redis LRU_CLOCK(): the time in units of `resolution_ms`, modulo 2^24.
constexpr std::uint32_t lru_clock(std::int64_t now, std::int64_t resolution_ms) noexcept {
  return static_cast<std::uint32_t>(time_units(now, resolution_ms) & kLruClockMax);
}
// Redis estimateObjectIdleTime(), in clock units: handles one wrap of the 24-bit clock.
constexpr std::uint64_t lru_idle(std::uint32_t clock, std::uint32_t lru) noexcept {
  return clock >= lru ? clock - lru : clock + (kLruClockMax - lru);
}

// Redis LFUGetTimeInMinutes(): minutes modulo 2^16.
constexpr std::uint32_t lfu_minutes(std::int64_t now) noexcept {
  return static_cast<std::uint32_t>(time_units(now, 60000) & 0xFFFF);
}
// Redis LFUTimeElapsed().
constexpr std::uint32_t lfu_elapsed(std::uint32_t ldt, std::uint32_t now_min) noexcept {
  return now_min >= ldt ? now_min - ldt : 65535 - ldt + now_min;
}
// Redis LFUDecrAndReturn(): the counter after `lfu-decay-time`-minute periods of idleness
// (not stored back).
constexpr std::uint32_t lfu_decayed(std::uint32_t access, std::uint32_t now_min, int decay_time) noexcept {
  const std::uint32_t ldt = access >> 8;
  std::uint32_t counter = access & 255;
  const std::uint32_t periods = decay_time > 0 ? lfu_elapsed(ldt, now_min) / static_cast<std::uint32_t>(decay_time) : 0;
  if (periods != 0) counter = periods > counter ? 0 : counter - periods;
  return counter;
}
// Redis LFULogIncr(): increments with probability 1 / ((counter - LFU_INIT_VAL) * factor + 1)
// (1 while counter <= LFU_INIT_VAL); saturates at 255. `r` is uniform in [0, 1).
constexpr std::uint32_t lfu_log_incr(std::uint32_t counter, double r, int log_factor) noexcept {
  if (counter >= 255) return 255;
  const double base = counter > kLfuInitVal ? static_cast<double>(counter - kLfuInitVal) : 0.0;
  const double p = 1.0 / (base * static_cast<double>(log_factor) + 1.0);
  return r < p ? counter + 1 : counter;
}
constexpr std::uint32_t lfu_pack(std::uint32_t now_min, std::uint32_t counter) noexcept {
  return (now_min << 8) | counter;
}

// What the victim choice asks of a keyspace. The engine implements it over its own (an
// adapter of five small functions per store type), so that the pool and the choice below are
// compiled once, whatever the key and value types (bench/compile_cost).
class EvictionSource {
 public:
  // The number of keys (allkeys) or of keys with a TTL.
  virtual std::size_t population(bool allkeys) const = 0;
  // A random entry of that population (population(allkeys) != 0).
  virtual std::uint32_t sample(bool allkeys) = 0;
  // How good a victim entry i is (higher is better): idle time, 255 - LFU counter, or
  // distance to the deadline, as Redis's pool ranks them.
  virtual std::uint64_t score(std::uint32_t i) = 0;
  // The 64-bit hash entry i's key is placed by (keyed with the store's secret).
  virtual std::uint64_t hash_at(std::uint32_t i) const = 0;
  // The entry whose key has this hash, if one is still stored and in the population, else
  // kNoVictim.
  virtual std::uint32_t locate(std::uint64_t hash, bool allkeys) const = 0;
  // The store's random source (Options::random, else its own generator).
  virtual std::uint64_t draw() = 0;

 protected:
  ~EvictionSource() = default;
};

inline constexpr std::uint32_t kNoVictim = 0xFFFFFFFFu;

// EvictionSource::draw() as the callable the keyspace's samplers take: one type for every
// store, so that a sampler that is not a member of the keyspace is compiled once.
struct EvictionDraw {
  EvictionSource* src;
  std::uint64_t operator()() const { return src->draw(); }
};

// Redis's eviction pool: the 16 best candidates seen so far, sorted by ascending `idle`
// (the best candidate, highest idle, at the right end). Redis keeps a copy of each
// candidate's key and looks it up again when the candidate's turn comes, so that a key
// deleted meanwhile (a "ghost") is skipped; here a candidate is its key's 64-bit keyed hash,
// looked up the same way (EvictionSource::locate). Two live keys with the same 64-bit hash
// would make either one the victim, and both are in the population.
class EvictionPool {
 public:
  struct Candidate {
    std::uint64_t idle;
    std::uint64_t hash;
  };

  // Redis evictionPoolPopulate()'s insertion of one sample.
  void offer(std::uint64_t idle, std::uint64_t hash) noexcept {
    constexpr int n = kEvictionPoolSize;
    int k = 0;
    while (k < n && slots_[k] && slots_[k]->idle < idle) ++k;
    if (k == 0 && slots_[n - 1]) return;  // worse than every candidate, and no room
    if (!(k < n && !slots_[k])) {
      if (!slots_[n - 1]) {
        for (int j = n - 1; j > k; --j) slots_[j] = slots_[j - 1];  // room on the right
      } else {
        --k;  // full: drop the worst (leftmost)
        for (int j = 0; j < k; ++j) slots_[j] = slots_[j + 1];
      }
    }
    slots_[k] = Candidate{idle, hash};
  }

  // Takes the best candidate out (highest idle), or nullopt when the pool is empty.
  std::optional<Candidate> pop_best() noexcept {
    for (int k = kEvictionPoolSize - 1; k >= 0; --k) {
      if (slots_[k]) {
        const std::optional<Candidate> out = slots_[k];
        slots_[k].reset();
        return out;
      }
    }
    return std::nullopt;
  }

  void clear() noexcept {
    for (auto& s : slots_) s.reset();
  }
  std::size_t size() const noexcept {
    std::size_t c = 0;
    for (const auto& s : slots_) c += s ? 1 : 0;
    return c;
  }

 private:
  std::optional<Candidate> slots_[kEvictionPoolSize];
};

// Redis performEvictions()'s choice of one victim (evict.c): for the random policies a random
// key of the population (all keys, or the volatile ones); for the others, evictionPoolPopulate()
// (maxmemory_samples random keys of the population compete, by score, for the pool's 16
// places) and then the best candidate that still exists and is still in the population
// (candidates deleted or made persistent meanwhile are ghosts, dropped); repeated while the
// pool yields none. Returns kNoVictim when the population is empty.
inline EXPIRING_NOINLINE std::uint32_t choose_victim(EvictionSource& src, EvictionPool& pool, EvictionPolicy policy, int samples) {
  const bool allkeys = policy == EvictionPolicy::allkeys_lru || policy == EvictionPolicy::allkeys_lfu ||
                       policy == EvictionPolicy::allkeys_random;
  const bool random = policy == EvictionPolicy::allkeys_random || policy == EvictionPolicy::volatile_random;
  if (src.population(allkeys) == 0) return kNoVictim;
  if (random) return src.sample(allkeys);
  for (;;) {
    for (int n = 0; n < samples; ++n) {
      const std::uint32_t i = src.sample(allkeys);
      pool.offer(src.score(i), src.hash_at(i));
    }
    while (const auto c = pool.pop_best()) {
      const std::uint32_t i = src.locate(c->hash, allkeys);
      if (i != kNoVictim) return i;
    }
    if (src.population(allkeys) == 0) return kNoVictim;
  }
}

}  // namespace expiring::detail
