// expiring/stats.hpp: counters named as Redis's INFO fields (semantics.md D12), and what one tick()
// did.
#pragma once

#include <cstdint>

namespace expiring {

struct Stats {
  std::uint64_t keyspace_hits = 0;    // reads that found a live key
  std::uint64_t keyspace_misses = 0;  // reads that found nothing (or a stale key)
  std::uint64_t expired_keys = 0;     // keys reclaimed by lazy or active expiry
  std::uint64_t evicted_keys = 0;     // keys removed to respect a memory limit
  // Moving average (5% weight per tick) of expired/sampled, in percent, as INFO prints it.
  double expired_stale_perc = 0.0;
  std::uint64_t expired_time_cap_reached_count = 0;  // ticks that stopped on their budget
  std::uint64_t expire_cycle_cpu_microseconds = 0;   // total time spent in tick()
  std::int64_t avg_ttl = 0;  // estimated mean remaining TTL (ms) of volatile keys (INFO keyspace)
  std::uint64_t keys = 0;     // as DBSIZE (INFO keyspace keys=)
  std::uint64_t expires = 0;  // volatile keys stored (INFO keyspace expires=)
  std::uint64_t lazyfree_pending_objects = 0;  // values queued for lazy free, not yet destroyed
  std::uint64_t lazyfreed_objects = 0;         // values destroyed by lazy free (tick() or the reclaimer)
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
};

}  // namespace expiring
