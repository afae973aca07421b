// bench/bench_ops.cpp: G1 (get) and G2 (set) as ratios against baselines in the same run.
//
// Contenders, all with the same hash (expiring::Hash<K>) and an 8-byte value:
//   raw        absl::flat_hash_map<K, V>: the limit (no expiry at all)
//   peer       a value map plus a deadline map, the deadline checked on read (Redis 7 by hand)
//   store      ExpiringStore under each expiry policy (sampled, time_ordered), reading either
//              the cached clock (one load, as Redis's server.mstime) or the real SystemClock
//
// Every figure is *paired*: one benchmark runs all its contenders in rotation, each on its own
// batch of 256 operations over pre-generated keys in random order, and reports the median ns
// per operation of each contender's batches as a counter. Contenders measured seconds apart
// on a shared machine see different loads; batches measured microseconds apart do not, and
// the median ignores the batches a preemption hit.
//   pair_get/K/N/P     hits on live volatile keys: raw find, peer get, store get        (G1)
//   pair_update/K/N/P  existing keys: raw insert_or_assign, peer set with TTL, store set()
//                      with a new TTL on a volatile key, store pexpire(), store set()
//                      without TTL on a persistent key                                   (G2)
//   pair_fill/K/N/P    N new keys into an empty table (no reserve; thread CPU per fill):
//                      raw try_emplace, peer set with TTL, store set() with/without TTL  (G2)
//   clock/-/1/*        one clock reading
//
// Modes: smoke (ctest) 1e3 keys; quick 1e4 and 1e6; full adds 1e7 (about 10 GB at peak).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "bench_common.hpp"

namespace {

using namespace bench;

constexpr std::int64_t kTtlMs = 3600 * 1000;  // 1 h: nothing expires during the run

// A fixed seed: the constructor would otherwise read std::random_device, which is not what
// a set() costs.
template <class S>
std::unique_ptr<S> new_store() {
  expiring::Options o;
  o.seed = 42;
  return std::make_unique<S>(typename S::clock_type{}, o);
}

// One dataset (key type, size) is alive at a time: the keys, an access order, and the
// contenders built on first use.
template <class K>
struct Dataset {
  explicit Dataset(std::size_t count)
      : n(count), keys(make_keys<K>(count)), order(random_order(count, pow2_at_least(std::min<std::size_t>(count, 1u << 22)) * 4)) {}

  std::size_t n;
  std::vector<K> keys;
  std::vector<std::uint32_t> order;
  std::unique_ptr<RawMap<K>> raw_map;
  std::unique_ptr<Peer<K>> peer_map;
  std::map<std::string, std::shared_ptr<void>> stores;

  RawMap<K>& raw() {
    if (!raw_map) {
      raw_map = std::make_unique<RawMap<K>>();
      for (std::size_t i = 0; i < n; ++i) raw_map->try_emplace(keys[i], i);
    }
    return *raw_map;
  }
  Peer<K>& peer() {
    if (!peer_map) {
      peer_map = std::make_unique<Peer<K>>();
      const std::int64_t deadline = CachedClock::now + kTtlMs;
      for (std::size_t i = 0; i < n; ++i) peer_map->set_ttl(keys[i], i, deadline);
    }
    return *peer_map;
  }
  // The store S with every key volatile (ttl) or persistent.
  template <class S>
  S& store(bool ttl) {
    const std::string id = std::string(typeid(S).name()) + (ttl ? "/ttl" : "/persistent");
    auto& slot = stores[id];
    if (!slot) {
      std::shared_ptr<S> s = new_store<S>();
      for (std::size_t i = 0; i < n; ++i) {
        if (ttl) {
          (void)s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
        } else {
          (void)s->set(keys[i], Value{i});
        }
      }
      slot = s;
    }
    return *static_cast<S*>(slot.get());
  }
};

std::string g_dataset_id;
std::shared_ptr<void> g_dataset;

template <class K>
Dataset<K>& dataset(std::size_t n) {
  const std::string id = std::string(key_name<K>()) + "/" + std::to_string(n);
  if (g_dataset_id != id) {
    g_dataset.reset();  // free the previous dataset before building the next
    g_dataset = std::make_shared<Dataset<K>>(n);
    g_dataset_id = id;
  }
  return *static_cast<Dataset<K>*>(g_dataset.get());
}

// ---- paired measurements ------------------------------------------------------------------

constexpr std::size_t kBatch = 256;
double g_pair_seconds = 0.3;     // per benchmark (quick); full mode: 1.0
std::size_t g_min_fill_rounds = 3;  // smoke: 1

using bench::median;

// A contender runs kBatch operations starting at a position of the random order.
using BatchFn = std::function<void(std::size_t)>;

// Runs the contenders in rotation (each round starts with the next one), each batch timed by
// the steady clock, for g_pair_seconds and at least 21 rounds. Each contender walks its own
// part of the random order, so no batch finds its keys warm from another contender's batch.
std::vector<double> run_paired(const std::vector<BatchFn>& fs, std::size_t order_len) {
  std::vector<std::vector<double>> samples(fs.size());
  std::vector<std::size_t> cursor(fs.size());
  for (std::size_t c = 0; c < fs.size(); ++c) cursor[c] = order_len / fs.size() * c;
  const std::int64_t start = steady_ns();
  for (std::size_t round = 0;; ++round) {
    for (std::size_t k = 0; k < fs.size(); ++k) {
      const std::size_t c = (round + k) % fs.size();
      const std::int64_t t0 = steady_ns();
      fs[c](cursor[c]);
      const std::int64_t t1 = steady_ns();
      samples[c].push_back(static_cast<double>(t1 - t0) / kBatch);
      cursor[c] = (cursor[c] + kBatch) % order_len;
    }
    if (round >= 20 && static_cast<double>(steady_ns() - start) > g_pair_seconds * 1e9) break;
  }
  std::vector<double> out;
  for (auto& v : samples) out.push_back(median(std::move(v)));
  return out;
}

void report(benchmark::State& st, const std::vector<std::string>& names, const std::vector<double>& ns) {
  for (std::size_t i = 0; i < names.size(); ++i) st.counters[names[i] + "_ns"] = benchmark::Counter(ns[i]);
}

// ---- G1: get ---------------------------------------------------------------------------

template <class K, class P>
void pair_get(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& raw = ds.raw();
  auto& peer = ds.peer();
  auto& sc = ds.template store<Store<K, CachedClock, P>>(true);
  auto& ss = ds.template store<Store<K, expiring::SystemClock, P>>(true);
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  const CachedClock clock;
  std::vector<BatchFn> fs = {
      [&](std::size_t pos) {
        Value sum = 0;
        for (std::size_t j = 0; j < kBatch; ++j) {
          auto it = raw.find(keys[ord[(pos + j) & mask]]);
          sum += it != raw.end() ? it->second : 0;
        }
        benchmark::DoNotOptimize(sum);
      },
      [&](std::size_t pos) {
        Value sum = 0;
        for (std::size_t j = 0; j < kBatch; ++j) {
          const Value* v = peer.get(keys[ord[(pos + j) & mask]], clock.now_ms());
          sum += v != nullptr ? *v : 0;
        }
        benchmark::DoNotOptimize(sum);
      },
      [&](std::size_t pos) {
        Value sum = 0;
        for (std::size_t j = 0; j < kBatch; ++j) {
          const Value* v = sc.get(keys[ord[(pos + j) & mask]]);
          sum += v != nullptr ? *v : 0;
        }
        benchmark::DoNotOptimize(sum);
      },
      [&](std::size_t pos) {
        Value sum = 0;
        for (std::size_t j = 0; j < kBatch; ++j) {
          const Value* v = ss.get(keys[ord[(pos + j) & mask]]);
          sum += v != nullptr ? *v : 0;
        }
        benchmark::DoNotOptimize(sum);
      },
  };
  // One untimed pass of every contender over all keys first: at 1e7 a table spans gigabytes,
  // and this VM's first touch of a page after a build is a fault costing microseconds.
  for (auto& f : fs) {
    for (std::size_t pos = 0; pos < std::min(n, ds.order.size()); pos += kBatch) f(pos);
  }
  std::vector<double> ns;
  for (auto _ : st) ns = run_paired(fs, ds.order.size());
  report(st, {"raw", "peer", "store", "store_system"}, ns);
}

// ---- G2: updates of existing keys ------------------------------------------------------

template <class K, class P>
void pair_update(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& raw = ds.raw();
  auto& peer = ds.peer();
  auto& sc = ds.template store<Store<K, CachedClock, P>>(true);
  auto& ss = ds.template store<Store<K, expiring::SystemClock, P>>(true);
  auto& sp = ds.template store<Store<K, CachedClock, P>>(false);
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  const CachedClock clock;
  bool ok = true;
  // New TTLs vary by up to a second, so the deadline really moves (a time-ordered index has
  // to relocate the key when it crosses a bucket).
  auto ttl_at = [](std::size_t i) { return kTtlMs + static_cast<std::int64_t>(i & 1023); };
  std::vector<BatchFn> fs = {
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) raw.insert_or_assign(keys[ord[(pos + j) & mask]], Value{j});
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          peer.set_ttl(keys[ord[(pos + j) & mask]], Value{j}, clock.now_ms() + ttl_at(pos + j));
        }
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          ok &= sc.set(keys[ord[(pos + j) & mask]], Value{j}, expiring::Px{ttl_at(pos + j)}).ok();
        }
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          ok &= ss.set(keys[ord[(pos + j) & mask]], Value{j}, expiring::Px{ttl_at(pos + j)}).ok();
        }
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) ok &= sc.pexpire(keys[ord[(pos + j) & mask]], ttl_at(pos + j)).ok();
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) ok &= sp.set(keys[ord[(pos + j) & mask]], Value{j}).ok();
      },
  };
  for (auto& f : fs) {  // untimed first pass, as in pair_get
    for (std::size_t pos = 0; pos < std::min(n, ds.order.size()); pos += kBatch) f(pos);
  }
  std::vector<double> ns;
  for (auto _ : st) ns = run_paired(fs, ds.order.size());
  if (!ok) st.SkipWithError("a store write failed");
  report(st, {"raw", "peer", "store", "store_system", "pexpire", "overwrite"}, ns);
}

// ---- G2: fills of new keys ---------------------------------------------------------------

// Builds a table of N keys from empty with each contender in turn, timed in thread CPU (a
// fill takes milliseconds to seconds, so a preemption would show in wall time), destroyed
// untimed; each round runs them in a new random order. Median per contender. Freed memory stays in the process
// (keep_freed_memory()) and an untimed round runs first, so tables up to 32 MiB are built in
// warm memory, as in a server that has been running; larger ones are mmapped fresh by all.
template <class K, class P>
void pair_fill(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  const std::vector<K>& keys = ds.keys;
  const CachedClock clock;
  using SC = Store<K, CachedClock, P>;
  using SS = Store<K, expiring::SystemClock, P>;
  std::vector<std::function<std::shared_ptr<void>()>> fs = {
      [&]() -> std::shared_ptr<void> {
        auto m = std::make_shared<RawMap<K>>();
        for (std::size_t i = 0; i < n; ++i) m->try_emplace(keys[i], Value{i});
        return m;
      },
      [&]() -> std::shared_ptr<void> {
        auto m = std::make_shared<Peer<K>>();
        for (std::size_t i = 0; i < n; ++i) m->set_ttl(keys[i], Value{i}, clock.now_ms() + kTtlMs);
        return m;
      },
      [&]() -> std::shared_ptr<void> {
        std::shared_ptr<SC> s = new_store<SC>();
        for (std::size_t i = 0; i < n; ++i) (void)s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
        return s;
      },
      [&]() -> std::shared_ptr<void> {
        std::shared_ptr<SS> s = new_store<SS>();
        for (std::size_t i = 0; i < n; ++i) (void)s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
        return s;
      },
      [&]() -> std::shared_ptr<void> {
        std::shared_ptr<SC> s = new_store<SC>();
        for (std::size_t i = 0; i < n; ++i) (void)s->set(keys[i], Value{i});
        return s;
      },
  };
  // Rounds: enough for about g_pair_seconds * 3 in all, at least 3, at most 31, after one
  // untimed round that warms the allocator (see keep_freed_memory()).
  std::vector<std::vector<double>> samples(fs.size());
  std::vector<double> ns;
  // At 1e7 every table is mmapped fresh (> 32 MiB) by every contender: no warm-up, one round.
  const bool huge = n >= 10000000;
  if (!huge) {
    for (auto& f : fs) f().reset();
  }
  const std::size_t min_rounds = huge ? 1 : g_min_fill_rounds;
  for (auto _ : st) {
    const std::int64_t start = steady_ns();
    std::vector<std::size_t> order(fs.size());
    std::uint64_t rs = 99;
    for (std::size_t round = 0; round < 31; ++round) {
      // A fresh random order each round: what ran (and was freed) just before a fill changes
      // how malloc serves it (e.g. a million small strings freed by the peer's two maps).
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[(rs = splitmix64(rs)) % k]);
      for (std::size_t k = 0; k < fs.size(); ++k) {
        const std::size_t c = order[k];
        const std::int64_t t0 = thread_cpu_ns();
        std::shared_ptr<void> built = fs[c]();
        const std::int64_t t1 = thread_cpu_ns();
        samples[c].push_back(static_cast<double>(t1 - t0) / static_cast<double>(n));
        built.reset();
      }
      if (round + 1 >= min_rounds && static_cast<double>(steady_ns() - start) > g_pair_seconds * 3e9) break;
    }
    ns.clear();
    for (auto& v : samples) ns.push_back(median(v));
  }
  report(st, {"raw", "peer", "store", "store_system", "store_nottl"}, ns);
}

// ---- registration ----------------------------------------------------------------------

template <class F>
void add(const std::string& name, F&& f) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

template <class K>
void register_size(std::size_t n) {
  const std::string p = std::string(key_name<K>()) + "/" + std::to_string(n) + "/";
  // Fills first, while the dataset holds only its keys.
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    add("pair_fill/" + p + P::name, [n](benchmark::State& st) { pair_fill<K, P>(st, n); });
  });
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    add("pair_get/" + p + P::name, [n](benchmark::State& st) { pair_get<K, P>(st, n); });
    add("pair_update/" + p + P::name, [n](benchmark::State& st) { pair_update<K, P>(st, n); });
  });
  // Free this dataset before the next size's benchmarks build theirs.
  add("release/" + p + "-", [](benchmark::State& st) {
    for (auto _ : st) {
    }
    g_dataset.reset();
    g_dataset_id.clear();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const RunConfig cfg = parse_args(argc, argv);
  CachedClock::refresh();
  keep_freed_memory();

  benchmark::RegisterBenchmark("clock/-/1/system", [](benchmark::State& st) {
    const expiring::SystemClock c;
    for (auto _ : st) benchmark::DoNotOptimize(c.now_ms());
  })->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("clock/-/1/cached", [](benchmark::State& st) {
    const CachedClock c;
    for (auto _ : st) benchmark::DoNotOptimize(c.now_ms());
  })->Unit(benchmark::kNanosecond);

  std::vector<std::size_t> sizes;
  switch (cfg.mode) {
    case Mode::smoke:
      sizes = {1000};
      g_pair_seconds = 0.001;
      g_min_fill_rounds = 1;
      break;
    case Mode::quick: sizes = {10000, 1000000}; break;
    case Mode::full:
      sizes = {10000, 1000000, 10000000};
      g_pair_seconds = 1.0;
      break;
  }
  for (std::size_t n : sizes) register_size<std::uint64_t>(n);
  for (std::size_t n : sizes) register_size<std::string>(n);

  benchmark::AddCustomContext("expiring_mode", mode_name(cfg.mode));
  benchmark::AddCustomContext("expiring_time_ordered", EXPIRING_BENCH_TIME_ORDERED ? "yes" : "no");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
