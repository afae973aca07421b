// bench/bench_get_cost.cpp: what the cache features (issue 5) cost get().
//
// Built twice from this file: bench_get_cost (the library as shipped) and
// bench_get_cost_nohook (EXPIRING_BENCH_NO_READ_HOOK: the read path's LRU/LFU access update,
// the one thing the features add to a hit, compiled out). scripts/bench.sh runs the two
// alternately and reports the ratio of their `off` rows: what the features cost a read while
// none of them is used.
//
// Rows, each the time of one get() hit (keys in random order, the store reads a cached clock;
// the best of `reps` passes over a 2^20-long order):
//   off        default Options: no memory limit, no lazy free, no jitter, no soft TTL
//   lazy+jit   lazy free (all flags), TTL jitter and soft-TTL windows on: none is on a hit's path
//   lru        maxmemory above the data + allkeys-lru: every hit updates the 24-bit LRU clock
//   lfu        maxmemory above the data + allkeys-lfu: every hit updates the LFU counter
// (lru and lfu only in the shipped build: the other one does not update access data.)
// Prints CSV: build,config,key,keys,ns_per_get.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

#ifdef EXPIRING_BENCH_NO_READ_HOOK
constexpr const char* kBuild = "nohook";
constexpr bool kHooked = false;
#else
constexpr const char* kBuild = "shipped";
constexpr bool kHooked = true;
#endif

template <class K>
using Store = expiring::ExpiringStore<K, std::uint64_t, expiring::Hash<K>, std::equal_to<>, bench::CachedClock>;

enum class Config { off, lazy_jitter, lru, lfu };
const char* config_name(Config c) {
  switch (c) {
    case Config::off: return "off";
    case Config::lazy_jitter: return "lazy+jit";
    case Config::lru: return "lru";
    case Config::lfu: return "lfu";
  }
  return "?";
}

expiring::Options options_for(Config c) {
  expiring::Options o;
  o.seed = 7;
  o.active_expire_enabled = false;
  switch (c) {
    case Config::off: break;
    case Config::lazy_jitter:
      o.lazyfree_queue_max = 1024;
      o.lazyfree_lazy_expire = o.lazyfree_lazy_eviction = o.lazyfree_lazy_user_del = true;
      o.lazyfree_lazy_server_del = true;
      o.ttl_jitter = expiring::Jitter::percent(10);
      o.stale_window_ms = 10'000;
      o.refresh_window_ms = 20'000;
      break;
    case Config::lru:
    case Config::lfu:
      o.maxmemory = std::size_t{1} << 40;  // far above the data: tracked, never evicts
      o.maxmemory_policy =
          c == Config::lru ? expiring::EvictionPolicy::allkeys_lru : expiring::EvictionPolicy::allkeys_lfu;
      break;
  }
  return o;
}

// ns per get() hit: the best of `reps` timed passes over `order`.
template <class K>
double ns_per_get(Config c, const std::vector<K>& keys, const std::vector<std::uint32_t>& order, int reps) {
  Store<K> s{bench::CachedClock{}, options_for(c)};
  s.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // Half the keys carry a TTL (an hour: none expires during the run).
    if (i % 2 == 0) {
      (void)s.set(keys[i], i, expiring::Ex{3600});
    } else {
      (void)s.set(keys[i], i);
    }
  }
  std::uint64_t sum = 0;
  std::int64_t best = INT64_MAX;
  for (int r = 0; r < reps + 1; ++r) {  // the first pass warms the caches and is not counted
    const std::int64_t t0 = bench::steady_ns();
    for (const std::uint32_t i : order) {
      const std::uint64_t* v = s.get(keys[i]);
      sum += v != nullptr ? *v : 1;
    }
    const std::int64_t dt = bench::steady_ns() - t0;
    if (r != 0 && dt < best) best = dt;
  }
  if (sum == 0) std::printf("# (impossible) checksum 0\n");
  return static_cast<double>(best) / static_cast<double>(order.size());
}

template <class K>
void run(std::size_t n, std::size_t len, int reps) {
  const std::vector<K> keys = bench::make_keys<K>(n);
  const std::vector<std::uint32_t> order = bench::random_order(n, len);
  std::vector<Config> configs{Config::off, Config::lazy_jitter};
  if (kHooked) {
    configs.push_back(Config::lru);
    configs.push_back(Config::lfu);
  }
  for (const Config c : configs) {
    std::printf("%s,%s,%s,%zu,%.2f\n", kBuild, config_name(c), bench::key_name<K>(), n,
                ns_per_get<K>(c, keys, order, reps));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  bench::keep_freed_memory();
  bench::CachedClock::refresh();
  const bool smoke = cfg.mode == bench::Mode::smoke;
  const std::size_t len = smoke ? (1u << 12) : (1u << 20);
  const int reps = smoke ? 1 : 5;
  std::vector<std::size_t> sizes{10'000};
  if (!smoke) sizes.push_back(1'000'000);
  std::printf("build,config,key,keys,ns_per_get\n");
  for (const std::size_t n : sizes) {
    run<std::uint64_t>(n, len, reps);
    run<std::string>(n, len, reps);
  }
  return 0;
}
