// expiring/stats.hpp: counters named as Redis's INFO fields (semantics.md D12), and what one tick()
// did.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace expiring {

// How late expired keys were reclaimed: for each key, now - deadline at the moment it was
// deleted, by lazy expiry (a call touched it) or active expiry (tick()). Log2 buckets of
// milliseconds: bucket 0 holds lateness <= 1 ms, bucket b (1..30) lateness in
// (2^(b-1), 2^b] ms, bucket 31 anything later. Redis and Valkey do not report this (redis
// #15620, valkey #4385 ask for it).
struct LatenessHistogram {
  static constexpr int kBuckets = 32;            // buckets 0 (<= 1 ms) to 31 (over 2^30 ms)
  std::array<std::uint64_t, kBuckets> active{};  // keys reclaimed by active expiry (tick()), per bucket
  std::array<std::uint64_t, kBuckets> lazy{};    // keys reclaimed by lazy expiry (a call), per bucket

  // The bucket of a lateness of `ms` (>= 0).
  static constexpr int bucket_of(std::int64_t ms) noexcept {
    if (ms <= 1) return 0;
    int b = 0;
    for (std::uint64_t x = static_cast<std::uint64_t>(ms - 1); x != 0; x >>= 1) ++b;
    return b < kBuckets - 1 ? b : kBuckets - 1;
  }
  // The upper bound of bucket b in ms (bucket 31: unbounded, reported as 2^31).
  static constexpr std::int64_t upper_ms(int b) noexcept { return std::int64_t{1} << b; }
  // The smallest bucket bound below which at least fraction q (0..1] of `h`'s keys fall; 0
  // when empty.
  static std::int64_t quantile_ms(const std::array<std::uint64_t, kBuckets>& h, double q) noexcept {
    std::uint64_t total = 0;
    for (std::uint64_t c : h) total += c;
    if (total == 0) return 0;
    std::uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += h[static_cast<std::size_t>(b)];
      if (static_cast<double>(seen) >= q * static_cast<double>(total)) return upper_ms(b);
    }
    return upper_ms(kBuckets - 1);
  }
  // Adds `o`'s counts, bucket by bucket (a sum over several stores).
  LatenessHistogram& operator+=(const LatenessHistogram& o) noexcept {
    for (std::size_t b = 0; b < active.size(); ++b) {
      active[b] += o.active[b];
      lazy[b] += o.lazy[b];
    }
    return *this;
  }
};

// What stats() reports, under the names of Redis's INFO fields: counters since the store was
// built or its last reset_stats(), the active-expire cycle's stale average, and figures of the
// keyspace as it is now (keys, expires, avg_ttl, subexpiry, lazyfree_pending_objects).
struct Stats {
  std::uint64_t keyspace_hits = 0;    // reads that found a live key
  std::uint64_t keyspace_misses = 0;  // reads that found nothing (or a stale key)
  std::uint64_t expired_keys = 0;     // keys reclaimed by lazy or active expiry
  // Hash fields reclaimed by lazy or active expiry, or deleted by a field time already past
  // (Redis 7.4 INFO stats `expired_subkeys`).
  std::uint64_t expired_subkeys = 0;
  std::uint64_t evicted_keys = 0;     // keys removed to respect a memory limit
  // Moving average (5% weight per tick) of expired/sampled, in percent, as INFO prints it.
  double expired_stale_perc = 0.0;
  std::uint64_t expired_time_cap_reached_count = 0;  // ticks that stopped on their budget
  std::uint64_t expire_cycle_cpu_microseconds = 0;   // total time spent in tick()
  std::int64_t avg_ttl = 0;  // estimated mean remaining TTL (ms) of volatile keys (INFO keyspace)
  std::uint64_t keys = 0;     // as DBSIZE (INFO keyspace keys=)
  std::uint64_t expires = 0;  // volatile keys stored (INFO keyspace expires=)
  std::uint64_t subexpiry = 0;  // hashes with volatile fields (INFO keyspace subexpiry=)
  std::uint64_t lazyfree_pending_objects = 0;  // values queued for lazy free, not yet destroyed
  std::uint64_t lazyfreed_objects = 0;         // values destroyed by lazy free (tick() or the reclaimer)
  LatenessHistogram expired_lateness;          // how late each expired key was reclaimed
};

// Cache statistics, as a cache user means them (Caffeine's CacheStats). Stats above counts
// what Redis counts (keyspace_hits includes EXISTS, TTL and TOUCH lookups); these count only
// the reads of a value: get(), get_many() (per key), lookup(), getex(), getex_ptr(),
// getdel(), set_get() and get_or_load(). A get_or_load() that calls its loader is a miss,
// also when it replaces a live value past its soft deadline (Redis counts that read as a hit).
struct CacheStats {
  std::uint64_t hit_count = 0;           // value reads that found a live value
  std::uint64_t miss_count = 0;          // value reads that did not (or reloaded a stale one)
  std::uint64_t load_success_count = 0;  // get_or_load() loader calls that returned
  std::uint64_t load_failure_count = 0;  // ... that threw
  std::uint64_t total_load_time_ns = 0;  // time spent in loaders (steady clock), both kinds
  std::uint64_t eviction_count = 0;      // keys evicted (either limit)
  std::uint64_t eviction_weight = 0;     // their summed weight (the weigher's, see maxmemory)

  // hit_count + miss_count: the value reads counted.
  std::uint64_t request_count() const noexcept { return hit_count + miss_count; }
  // hits / requests; 1.0 when there was no request (Caffeine's convention).
  double hit_rate() const noexcept {
    const std::uint64_t n = request_count();
    return n == 0 ? 1.0 : static_cast<double>(hit_count) / static_cast<double>(n);
  }
  // misses / requests; 0.0 when there was no request.
  double miss_rate() const noexcept {
    const std::uint64_t n = request_count();
    return n == 0 ? 0.0 : static_cast<double>(miss_count) / static_cast<double>(n);
  }
  // load_success_count + load_failure_count: the loader calls.
  std::uint64_t load_count() const noexcept { return load_success_count + load_failure_count; }
  // Mean time per load in ns; 0 without loads.
  double average_load_penalty_ns() const noexcept {
    const std::uint64_t n = load_count();
    return n == 0 ? 0.0 : static_cast<double>(total_load_time_ns) / static_cast<double>(n);
  }
};

// What one call of tick() did.
struct TickReport {
  bool ran = false;            // false: disabled, or a fast cycle that its gating skipped
  std::uint32_t rounds = 0;    // sampling rounds (Redis "iterations")
  std::uint64_t sampled = 0;   // expiry-table positions visited
  std::uint64_t expired = 0;   // keys reclaimed
  bool time_cap_hit = false;   // stopped on its time budget (or round limit)
  bool pass_completed = false; // the cursor finished a full pass over the expiry table
  std::int64_t elapsed_us = 0; // by the budget clock
  std::uint64_t lazyfreed = 0; // values of the lazy-free queue destroyed by this tick
  // Hash values (hash_fields.hpp): the field cycle, which runs after the key cycle within
  // the same budget (elapsed_us counts both).
  std::uint64_t fields_expired = 0;  // hash fields reclaimed
  std::uint64_t field_quota = 0;     // the most it could reclaim this tick
};

namespace detail {

// A sum over several stores (ConcurrentStore's shards), one part at a time: the counters add
// up; expired_stale_perc is averaged over the `parts`, and avg_ttl over their volatile keys
// (each part's estimate weighed by its `expires`: a part without one counts for nothing).
inline void add_part(Stats& sum, const Stats& part, std::size_t parts) noexcept {
  if (part.expires != 0) {  // the running mean, before sum.expires takes the part's count
    const double share = static_cast<double>(part.expires) / static_cast<double>(sum.expires + part.expires);
    sum.avg_ttl += static_cast<std::int64_t>(static_cast<double>(part.avg_ttl - sum.avg_ttl) * share);
  }
  sum.keyspace_hits += part.keyspace_hits;
  sum.keyspace_misses += part.keyspace_misses;
  sum.expired_keys += part.expired_keys;
  sum.expired_subkeys += part.expired_subkeys;
  sum.evicted_keys += part.evicted_keys;
  sum.expired_stale_perc += part.expired_stale_perc / static_cast<double>(parts);
  sum.expired_time_cap_reached_count += part.expired_time_cap_reached_count;
  sum.expire_cycle_cpu_microseconds += part.expire_cycle_cpu_microseconds;
  sum.keys += part.keys;
  sum.expires += part.expires;
  sum.subexpiry += part.subexpiry;
  sum.lazyfree_pending_objects += part.lazyfree_pending_objects;
  sum.lazyfreed_objects += part.lazyfreed_objects;
  sum.expired_lateness += part.expired_lateness;
}
inline void add_part(TickReport& sum, const TickReport& part) noexcept {
  sum.ran = sum.ran || part.ran;
  sum.rounds += part.rounds;
  sum.sampled += part.sampled;
  sum.expired += part.expired;
  sum.time_cap_hit = sum.time_cap_hit || part.time_cap_hit;
  sum.pass_completed = sum.pass_completed || part.pass_completed;
  sum.elapsed_us += part.elapsed_us;
  sum.lazyfreed += part.lazyfreed;
  sum.fields_expired += part.fields_expired;
  sum.field_quota += part.field_quota;
}

}  // namespace detail
}  // namespace expiring
