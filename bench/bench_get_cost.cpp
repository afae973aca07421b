// bench/bench_get_cost.cpp: what the cache features (issue 5) cost get().
//
// The one thing the features add to a get() hit is the LRU/LFU access update, behind a flag.
// The baseline is the store with default Options (no feature on: the flag is off), on a
// clock type of its own, in the same process. Baseline and subject
// are built over the same keys and run in rotation, batches of 256 get() hits each (keys in
// random order, a cached clock), so that drift on a shared machine hits both alike; each
// reports its median batch. Three pairs are built per row, in alternating order (where a
// table lands in memory moves a memory-bound read by several percent); the row gives the
// median of the three ratios. Subjects:
//   a/a        the baseline against itself: the method's noise floor
//   off        default Options, as the baseline: no memory limit, no lazy free, no jitter, no soft TTL
//   lazy+jit   lazy free (all flags), TTL jitter and soft-TTL windows on (none is on a hit's path)
//   lru        maxmemory above the data + allkeys-lru: every hit updates the 24-bit LRU clock
//   lfu        maxmemory above the data + allkeys-lfu: every hit updates the LFU counter
// Prints CSV: config,key,keys,baseline_ns,subject_ns,ratio.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"

namespace {

// The baseline's clock: the cached clock under another name, so that baseline and subject
// are distinct types (separately instantiated code, as two stores in a program would be).
struct NoHookClock {
  std::int64_t now_ms() const noexcept { return bench::CachedClock::now; }
};

template <class K, class Clock>
using Store = expiring::ExpiringStore<K, std::uint64_t, expiring::Hash<K>, std::equal_to<>, Clock>;

enum class Config { same, off, lazy_jitter, lru, lfu };
const char* config_name(Config c) {
  switch (c) {
    case Config::same: return "a/a";
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
    case Config::same:
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

template <class K, class Clock>
void fill(Store<K, Clock>& s, const std::vector<K>& keys) {
  s.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // Half the keys carry a TTL (an hour: none expires during the run).
    if (i % 2 == 0) {
      (void)s.set(keys[i], i, expiring::Ex{3600});
    } else {
      (void)s.set(keys[i], i);
    }
  }
}

constexpr std::size_t kBatch = 256;

// Times one batch of get() hits starting at order[pos]; returns ns per get.
template <class S, class K>
double batch_ns(S& s, const std::vector<K>& keys, const std::vector<std::uint32_t>& order, std::size_t pos,
                std::uint64_t& sum) {
  const std::size_t mask = order.size() - 1;
  const std::int64_t t0 = bench::steady_ns();
  for (std::size_t j = 0; j < kBatch; ++j) {
    const std::uint64_t* v = s.get(keys[order[(pos + j) & mask]]);
    sum += v != nullptr ? *v : 1;
  }
  return static_cast<double>(bench::steady_ns() - t0) / static_cast<double>(kBatch);
}

using bench::median;

struct Pair {
  double base_ns, subject_ns;
};

// One baseline/subject pair, built in the given order, measured in rotation.
template <class K, class SubjectClock>
Pair measure_pair(Config c, const std::vector<K>& keys, const std::vector<std::uint32_t>& order,
                  std::size_t batches, bool subject_first) {
  std::unique_ptr<Store<K, NoHookClock>> base;
  std::unique_ptr<Store<K, SubjectClock>> subject;
  auto make_base = [&] {
    base = std::make_unique<Store<K, NoHookClock>>(NoHookClock{}, options_for(Config::off));
    fill(*base, keys);
  };
  auto make_subject = [&] {
    subject = std::make_unique<Store<K, SubjectClock>>(SubjectClock{}, options_for(c));
    fill(*subject, keys);
  };
  if (subject_first) {
    make_subject();
    make_base();
  } else {
    make_base();
    make_subject();
  }
  std::uint64_t sum = 0;
  std::vector<double> b, s;
  b.reserve(batches);
  s.reserve(batches);
  for (std::size_t i = 0; i < batches + batches / 8; ++i) {  // the first eighth warms up
    const std::size_t pos = i * kBatch;
    double tb = 0, ts = 0;
    if (i % 2 == 0) {
      tb = batch_ns(*base, keys, order, pos, sum);
      ts = batch_ns(*subject, keys, order, pos, sum);
    } else {
      ts = batch_ns(*subject, keys, order, pos, sum);
      tb = batch_ns(*base, keys, order, pos, sum);
    }
    if (i >= batches / 8) {
      b.push_back(tb);
      s.push_back(ts);
    }
  }
  if (sum == 0) std::printf("# (impossible) checksum 0\n");
  return {median(b), median(s)};
}

template <class K>
void run(std::size_t n, std::size_t batches) {
  const std::vector<K> keys = bench::make_keys<K>(n);
  const std::vector<std::uint32_t> order = bench::random_order(n, std::size_t{1} << 20);
  for (const Config c : {Config::same, Config::off, Config::lazy_jitter, Config::lru, Config::lfu}) {
    std::vector<double> ratios, base, subject;
    for (int p = 0; p < 3; ++p) {
      const bool subject_first = p % 2 == 1;
      const Pair r = c == Config::same ? measure_pair<K, NoHookClock>(c, keys, order, batches, subject_first)
                                       : measure_pair<K, bench::CachedClock>(c, keys, order, batches, subject_first);
      base.push_back(r.base_ns);
      subject.push_back(r.subject_ns);
      ratios.push_back(r.subject_ns / r.base_ns);
    }
    std::printf("%s,%s,%zu,%.2f,%.2f,%.4f\n", config_name(c), bench::key_name<K>(), n, median(base), median(subject),
                median(ratios));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  bench::keep_freed_memory();
  bench::CachedClock::refresh();
  const bool smoke = cfg.mode == bench::Mode::smoke;
  const std::size_t batches = smoke ? 64 : (cfg.mode == bench::Mode::full ? 8192 : 4096);
  std::vector<std::size_t> sizes{10'000};
  if (!smoke) sizes.push_back(1'000'000);
  std::printf("config,key,keys,baseline_ns,subject_ns,ratio\n");
  for (const std::size_t n : sizes) {
    run<std::uint64_t>(n, batches);
    run<std::string>(n, batches);
  }
  return 0;
}
