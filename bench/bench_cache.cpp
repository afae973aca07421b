// bench/bench_cache.cpp: hit ratio of the maxmemory eviction policies (issue 5).
//
// Traces over N items: Zipf with alpha 0.8, 1.0 and 1.2, and a scan-polluted one (Zipf 1.0
// where every 20,000 requests a scan reads 5,000 keys never seen before). Each request is a
// cache-aside access: get(), and on a miss set(). Contenders, all with room for C entries:
//   exact LRU     a linked list + hash map, computed in the same run (the reference);
//   allkeys-lru   the store, maxmemory-samples 10 (Redis's approximation);
//   allkeys-lfu   the store, Redis's defaults (lfu-log-factor 10, lfu-decay-time 1 min).
// The store's clock advances 1 ms per request (LRU clock resolution 1 ms). Targets: allkeys-lru
// within 1 point of exact LRU, allkeys-lfu at or above exact LRU on the Zipf traces.
// Then lazy free: the slowest get() that finds an expired key holding a large vector, and the
// slowest tick() after, with the value destroyed inline, by tick(), or by the background
// reclaimer. Prints two tables; exits 0 (figures, not tests).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <list>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "bench_common.hpp"

namespace {

using Store = expiring::ExpiringStore<std::uint64_t, std::uint64_t, expiring::Hash<std::uint64_t>, std::equal_to<>,
                                      expiring::ManualClock&>;

// Zipf(alpha) over ranks 0..n-1 by inverse CDF on a precomputed table.
class Zipf {
 public:
  Zipf(std::size_t n, double alpha) : cdf_(n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += 1.0 / std::pow(static_cast<double>(i + 1), alpha);
    double acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      acc += 1.0 / std::pow(static_cast<double>(i + 1), alpha) / sum;
      cdf_[i] = acc;
    }
  }
  std::size_t operator()(double u) const {
    std::size_t lo = 0, hi = cdf_.size() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (cdf_[mid] < u) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

 private:
  std::vector<double> cdf_;
};

std::vector<std::uint64_t> make_trace(std::size_t items, std::size_t len, double alpha, bool scans,
                                      std::uint64_t seed) {
  Zipf z(items, alpha);
  std::vector<std::uint64_t> t;
  t.reserve(len + len / 4);
  std::uint64_t x = seed, fresh = 0;
  for (std::size_t i = 0; i < len; ++i) {
    x = bench::splitmix64(x);
    const double u = static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
    // Item rank r becomes a scattered key, so hash order says nothing about popularity.
    t.push_back(bench::splitmix64(z(u) + 1));
    if (scans && i % 20'000 == 19'999) {
      for (int s = 0; s < 5'000; ++s) t.push_back(bench::splitmix64((std::uint64_t{1} << 50) + fresh++));
    }
  }
  return t;
}

double exact_lru(const std::vector<std::uint64_t>& trace, std::size_t cap) {
  std::list<std::uint64_t> order;  // front = most recent
  absl::flat_hash_map<std::uint64_t, std::list<std::uint64_t>::iterator> where;
  std::size_t hits = 0;
  for (const std::uint64_t k : trace) {
    auto it = where.find(k);
    if (it != where.end()) {
      ++hits;
      order.splice(order.begin(), order, it->second);
      continue;
    }
    if (order.size() == cap) {
      where.erase(order.back());
      order.pop_back();
    }
    order.push_front(k);
    where[k] = order.begin();
  }
  return 100.0 * static_cast<double>(hits) / static_cast<double>(trace.size());
}

double store_policy(const std::vector<std::uint64_t>& trace, std::size_t cap, expiring::EvictionPolicy policy,
                    int samples) {
  expiring::ManualClock clock{1'700'000'000'000};
  expiring::Options o;
  // The write check is Redis's "used > maxmemory" before a write: a limit one byte below C
  // entries keeps exactly C entries.
  o.maxmemory = cap * (2 * sizeof(std::uint64_t)) - 1;
  o.maxmemory_policy = policy;
  o.maxmemory_samples = samples;
  o.lru_clock_resolution_ms = 1;
  o.seed = 7;
  o.reserve = cap + 1;
  Store s{clock, o};
  std::size_t hits = 0;
  for (const std::uint64_t k : trace) {
    clock.advance(1);
    if (s.get(k) != nullptr) {
      ++hits;
    } else {
      (void)s.set(k, k);
    }
  }
  return 100.0 * static_cast<double>(hits) / static_cast<double>(trace.size());
}

// Lazy free: the slowest get() that finds an expired key holding a vector of `elems` ints,
// and the slowest tick() after those gets (until the values are gone), with the value
// destroyed inline, queued for tick(), or handed to the background reclaimer.
enum class Free { inline_, tick, background };
struct FreeTimes {
  double worst_get_us = 0;
  double worst_tick_us = 0;
};
FreeTimes expired_get(Free mode, std::size_t elems, int keys) {
  using BigStore = expiring::ExpiringStore<std::uint64_t, std::vector<int>, expiring::Hash<std::uint64_t>,
                                           std::equal_to<>, expiring::ManualClock&>;
  expiring::ManualClock clock{1'700'000'000'000};
  expiring::Options o;
  o.active_expire_enabled = false;  // only get() reclaims
  if (mode != Free::inline_) {
    o.lazyfree_queue_max = static_cast<std::size_t>(keys);
    o.lazyfree_lazy_expire = true;
    o.lazyfree_background = mode == Free::background;
  }
  BigStore s{clock, o};
  for (int k = 0; k < keys; ++k) {
    std::vector<int> v(elems);
    for (std::size_t i = 0; i < elems; i += 1024) v[i] = k;  // touch the pages
    (void)s.set(static_cast<std::uint64_t>(k), std::move(v), expiring::Px{10});
  }
  clock.advance(11);
  FreeTimes t;
  std::int64_t worst = 0;
  for (int k = 0; k < keys; ++k) {
    const std::int64_t t0 = bench::steady_ns();
    const auto* v = s.get(static_cast<std::uint64_t>(k));
    const std::int64_t dt = bench::steady_ns() - t0;
    if (v != nullptr) std::printf("unexpected hit\n");
    worst = dt > worst ? dt : worst;
  }
  t.worst_get_us = static_cast<double>(worst) / 1000.0;
  worst = 0;
  while (s.stats().lazyfree_pending_objects != 0) {
    const std::int64_t t0 = bench::steady_ns();
    (void)s.tick();
    const std::int64_t dt = bench::steady_ns() - t0;
    worst = dt > worst ? dt : worst;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the reclaimer's turn
  }
  t.worst_tick_us = static_cast<double>(worst) / 1000.0;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const bool smoke = cfg.mode == bench::Mode::smoke;
  const std::size_t items = smoke ? 10'000 : 100'000;
  const std::size_t len = smoke ? 50'000 : (cfg.mode == bench::Mode::full ? 4'000'000 : 1'000'000);
  const std::size_t cap = items / 10;
  std::printf("bench_cache (%s): %zu items, %zu requests per trace, room for %zu entries\n\n",
              bench::mode_name(cfg.mode), items, len, cap);
  std::printf("| trace | exact LRU | allkeys-lru (10 samples) | LRU - exact | allkeys-lfu | LFU - exact |\n");
  std::printf("|---|---|---|---|---|---|\n");
  struct T {
    const char* name;
    double alpha;
    bool scans;
  };
  for (const T t : {T{"Zipf 0.8", 0.8, false}, T{"Zipf 1.0", 1.0, false}, T{"Zipf 1.2", 1.2, false},
                    T{"Zipf 1.0 + scans", 1.0, true}}) {
    const auto trace = make_trace(items, len, t.alpha, t.scans, 42);
    const double exact = exact_lru(trace, cap);
    const double lru = store_policy(trace, cap, expiring::EvictionPolicy::allkeys_lru, 10);
    const double lfu = store_policy(trace, cap, expiring::EvictionPolicy::allkeys_lfu, 5);
    std::printf("| %s | %.2f%% | %.2f%% | %+.2f | %.2f%% | %+.2f |\n", t.name, exact, lru, lru - exact, lfu,
                lfu - exact);
  }
  const std::size_t elems = smoke ? 10'000 : 1'000'000;
  const int keys = smoke ? 4 : 20;
  std::printf("\nLazy free: slowest get() finding an expired %zu-element std::vector<int> (of %d keys)\n", elems,
              keys);
  std::printf("| destroyed | slowest get() | slowest tick() |\n|---|---|---|\n");
  for (const auto& [mode, name] : {std::pair{Free::inline_, "inline (default)"}, std::pair{Free::tick, "lazily, by tick()"},
                                   std::pair{Free::background, "lazily, by the background reclaimer"}}) {
    const FreeTimes t = expired_get(mode, elems, keys);
    std::printf("| %s | %.1f us | %.1f us |\n", name, t.worst_get_us, t.worst_tick_us);
  }
  return 0;
}
