// bench/bench_ops.cpp: G1 (get) and G2 (set) as ratios against baselines in the same run.
//
// Contenders, all with the same hash (expiring::Hash<K>) and an 8-byte value:
//   raw        absl::flat_hash_map<K, V>: the limit (no expiry at all)
//   peer       a value map plus a deadline map, the deadline checked on read (Redis 7 by hand)
//   store      ExpiringStore under each expiry policy (sampled, time_ordered), reading either
//              the cached clock (one load, as Redis's server.mstime) or the real SystemClock
//
// Benchmarks (name = op/key/size/contender; every one reports cpu ns per iteration and an
// ops_per_iter counter, so ns per op = cpu_time / ops_per_iter):
//   get           hits on live volatile keys, random order over pre-generated keys      (G1)
//   fill          build a table of N keys from empty, no reserve (insert; set with/without
//                 TTL; the peer's set with TTL)                                          (G2)
//   update        random existing keys: raw insert_or_assign vs set() with a new TTL on a
//                 volatile key; `pexpire` (TTL only) and `overwrite` (set() without TTL on
//                 a persistent key) as extra rows                                         (G2)
//   clock         the cost of one clock reading
//
// Modes: smoke (ctest) 1e3 keys; quick 1e4 and 1e6; full adds 1e7 (about 10 GB at peak).
#include <benchmark/benchmark.h>

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
          s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
        } else {
          s->set(keys[i], Value{i});
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

void finish(benchmark::State& st, double ops_per_iter) {
  st.counters["ops_per_iter"] = benchmark::Counter(ops_per_iter);
  st.SetItemsProcessed(static_cast<std::int64_t>(static_cast<double>(st.iterations()) * ops_per_iter));
}

// ---- G1: get ---------------------------------------------------------------------------

template <class K>
void get_raw(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& m = ds.raw();
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  std::size_t i = 0;
  Value sum = 0;
  for (auto _ : st) {
    auto it = m.find(keys[ord[i++ & mask]]);
    sum += it != m.end() ? it->second : 0;
  }
  benchmark::DoNotOptimize(sum);
  finish(st, 1);
}

template <class K>
void get_peer(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& m = ds.peer();
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  const CachedClock clock;
  std::size_t i = 0;
  Value sum = 0;
  for (auto _ : st) {
    const Value* v = m.get(keys[ord[i++ & mask]], clock.now_ms());
    sum += v != nullptr ? *v : 0;
  }
  benchmark::DoNotOptimize(sum);
  finish(st, 1);
}

template <class K, class S>
void get_store(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  S& s = ds.template store<S>(true);
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  std::size_t i = 0;
  Value sum = 0;
  for (auto _ : st) {
    const Value* v = s.get(keys[ord[i++ & mask]]);
    sum += v != nullptr ? *v : 0;
  }
  benchmark::DoNotOptimize(sum);
  finish(st, 1);
}

// ---- G2: fill from empty (insert of new keys, natural growth) --------------------------

template <class K>
void fill_raw(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  for (auto _ : st) {
    auto m = std::make_unique<RawMap<K>>();
    for (std::size_t i = 0; i < n; ++i) m->try_emplace(ds.keys[i], Value{i});
    benchmark::DoNotOptimize(m->size());
    st.PauseTiming();
    m.reset();
    st.ResumeTiming();
  }
  finish(st, static_cast<double>(n));
}

template <class K>
void fill_peer(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  const CachedClock clock;
  for (auto _ : st) {
    auto m = std::make_unique<Peer<K>>();
    for (std::size_t i = 0; i < n; ++i) m->set_ttl(ds.keys[i], Value{i}, clock.now_ms() + kTtlMs);
    benchmark::DoNotOptimize(m->values.size());
    st.PauseTiming();
    m.reset();
    st.ResumeTiming();
  }
  finish(st, static_cast<double>(n));
}

template <class K, class S>
void fill_store(benchmark::State& st, std::size_t n, bool ttl) {
  auto& ds = dataset<K>(n);
  for (auto _ : st) {
    std::unique_ptr<S> s = new_store<S>();
    if (ttl) {
      for (std::size_t i = 0; i < n; ++i) s->set(ds.keys[i], Value{i}, expiring::Px{kTtlMs});
    } else {
      for (std::size_t i = 0; i < n; ++i) s->set(ds.keys[i], Value{i});
    }
    benchmark::DoNotOptimize(s->size());
    st.PauseTiming();
    s.reset();
    st.ResumeTiming();
  }
  finish(st, static_cast<double>(n));
}

// ---- G2: updates of existing keys ------------------------------------------------------

template <class K>
void update_raw(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& m = ds.raw();
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  std::size_t i = 0;
  for (auto _ : st) {
    m.insert_or_assign(keys[ord[i & mask]], Value{i});
    ++i;
  }
  finish(st, 1);
}

template <class K>
void update_peer(benchmark::State& st, std::size_t n) {
  auto& ds = dataset<K>(n);
  auto& m = ds.peer();
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  const CachedClock clock;
  std::size_t i = 0;
  for (auto _ : st) {
    m.set_ttl(keys[ord[i & mask]], Value{i}, clock.now_ms() + kTtlMs + static_cast<std::int64_t>(i & 1023));
    ++i;
  }
  finish(st, 1);
}

enum class Update { set_ttl, pexpire, overwrite };

template <class K, class S>
void update_store(benchmark::State& st, std::size_t n, Update kind) {
  auto& ds = dataset<K>(n);
  S& s = ds.template store<S>(kind != Update::overwrite);
  const K* keys = ds.keys.data();
  const std::uint32_t* ord = ds.order.data();
  const std::size_t mask = ds.order.size() - 1;
  std::size_t i = 0;
  bool ok = true;
  // The new TTL varies by up to a second, so the deadline really moves (a time-ordered
  // index has to relocate the key).
  for (auto _ : st) {
    const K& k = keys[ord[i & mask]];
    const std::int64_t ttl = kTtlMs + static_cast<std::int64_t>(i & 1023);
    switch (kind) {
      case Update::set_ttl: ok &= s.set(k, Value{i}, expiring::Px{ttl}).ok(); break;
      case Update::pexpire: ok &= s.pexpire(k, ttl).ok(); break;
      case Update::overwrite: ok &= s.set(k, Value{i}).ok(); break;
    }
    ++i;
  }
  if (!ok) st.SkipWithError("a store write failed");
  finish(st, 1);
}

// ---- registration ----------------------------------------------------------------------

int g_repetitions = 1;  // full mode: per-operation benchmarks run 3 times, the median is kept

template <class F>
void add(const std::string& name, F&& f) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))->Unit(benchmark::kNanosecond);
  const bool per_op = name.rfind("fill", 0) != 0 && name.rfind("release", 0) != 0;
  if (per_op && g_repetitions > 1) b->Repetitions(g_repetitions)->ReportAggregatesOnly(true);
}

template <class K>
void register_size(std::size_t n) {
  const std::string p = std::string(key_name<K>()) + "/" + std::to_string(n) + "/";
  // G2: fills first, while the dataset holds only its keys
  add("fill/" + p + "raw", [n](benchmark::State& st) { fill_raw<K>(st, n); });
  add("fill/" + p + "peer", [n](benchmark::State& st) { fill_peer<K>(st, n); });
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    const std::string s = std::string("store:") + P::name;
    add("fill_ttl/" + p + s + ":cached",
        [n](benchmark::State& st) { fill_store<K, Store<K, CachedClock, P>>(st, n, true); });
    add("fill_ttl/" + p + s + ":system",
        [n](benchmark::State& st) { fill_store<K, Store<K, expiring::SystemClock, P>>(st, n, true); });
    add("fill_nottl/" + p + s + ":cached",
        [n](benchmark::State& st) { fill_store<K, Store<K, CachedClock, P>>(st, n, false); });
  });
  // G1
  add("get/" + p + "raw", [n](benchmark::State& st) { get_raw<K>(st, n); });
  add("get/" + p + "peer", [n](benchmark::State& st) { get_peer<K>(st, n); });
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    const std::string s = std::string("store:") + P::name;
    add("get/" + p + s + ":cached", [n](benchmark::State& st) { get_store<K, Store<K, CachedClock, P>>(st, n); });
    add("get/" + p + s + ":system",
        [n](benchmark::State& st) { get_store<K, Store<K, expiring::SystemClock, P>>(st, n); });
  });
  // G2: updates of existing keys (reuse the tables built for get)
  add("update/" + p + "raw", [n](benchmark::State& st) { update_raw<K>(st, n); });
  add("update/" + p + "peer", [n](benchmark::State& st) { update_peer<K>(st, n); });
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    const std::string s = std::string("store:") + P::name;
    add("update/" + p + s + ":cached",
        [n](benchmark::State& st) { update_store<K, Store<K, CachedClock, P>>(st, n, Update::set_ttl); });
    add("update/" + p + s + ":system",
        [n](benchmark::State& st) { update_store<K, Store<K, expiring::SystemClock, P>>(st, n, Update::set_ttl); });
    add("pexpire/" + p + s + ":cached",
        [n](benchmark::State& st) { update_store<K, Store<K, CachedClock, P>>(st, n, Update::pexpire); });
    add("overwrite/" + p + s + ":cached",
        [n](benchmark::State& st) { update_store<K, Store<K, CachedClock, P>>(st, n, Update::overwrite); });
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

  benchmark::RegisterBenchmark("clock/-/1/system", [](benchmark::State& st) {
    const expiring::SystemClock c;
    for (auto _ : st) benchmark::DoNotOptimize(c.now_ms());
    finish(st, 1);
  })->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("clock/-/1/cached", [](benchmark::State& st) {
    const CachedClock c;
    for (auto _ : st) benchmark::DoNotOptimize(c.now_ms());
    finish(st, 1);
  })->Unit(benchmark::kNanosecond);

  if (cfg.mode == Mode::full) g_repetitions = 3;
  std::vector<std::size_t> sizes;
  switch (cfg.mode) {
    case Mode::smoke: sizes = {1000}; break;
    case Mode::quick: sizes = {10000, 1000000}; break;
    case Mode::full: sizes = {10000, 1000000, 10000000}; break;
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
