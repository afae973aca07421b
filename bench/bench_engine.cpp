// bench/bench_engine.cpp: the engine goals E1-E6, through the store's public API only, so that
// the same program judges the engine before and after a rewrite.
//
//   E1  get() hit vs a raw absl::flat_hash_map<K, V, expiring::Hash<K>> find and vs the
//       two-map peer; the store reading a CachedClock& (its own cost: one load) and the
//       store with every template argument defaulted (its default clock), beside the
//       measured cost of one reading of that default clock.
//   E2  get() miss (keys of a disjoint family, checked to miss) vs raw find.
//   E3  bytes per key over the raw map, counted by this program's operator new/delete
//       (malloc_usable_size of every live block, and the peak of live bytes), over a sweep of
//       log-spaced sizes built from empty (natural growth, no reserve): store with a TTL on
//       every key, store without TTLs, the peer with TTLs, the raw map.
//   E4  set() with TTL of new keys (whole fills from empty, thread CPU) vs raw try_emplace;
//       set() with TTL and pexpire() of existing volatile keys vs raw insert_or_assign.
//   E5  the longest tick() over mass-expiry drains of 1e6 keys with default Options, timed
//       by this program around each call (steady clock; thread CPU beside it), vs the slow
//       cycle's budget as the store reports it (cycle().slow_time_limit_us).
//   E6  get_many(keys, out) in batches of 32 and 256 keys vs a loop of get() over the same
//       keys, on the same store.
//   E7  set() with TTL of existing keys with no listener, with a listener subscribed to
//       removals only, and with a listener for every cause (u64 keys).
//
// POCO (Debian's libpoco-dev, when the build finds it): Poco::UniqueExpireCache<K,
// ExpirationDecorator<V>>, the C++ TTL cache people already know (a per-entry deadline, a
// mutex, std::map-based strategies, events on every call), is a contender of E1 (`get`) and
// E4 (`update` with a new TTL of an existing key), for datasets of at most 2e6 keys. It reads
// the system clock (Poco::Timestamp) on each call; it cannot take another.
//
// Method (the house method of bench_ops): every timed figure is paired. The contenders of one
// experiment run in rotation (each round starts with the next contender), each on its own
// batch of 256 operations walking its own part of one random access order, each batch timed
// by the steady clock, for 1 s (full: 1.5 s); a repetition reports each contender's median ns per operation over
// its batches, and the experiment is repeated (5 times in quick mode, 7 in full): the report
// takes medians over the repetitions. Keys are looked up from a sequence materialised in the
// random order (copies, so a string key's bytes are read as a caller that has just received
// it reads them), so no contender pays an extra indirection the others do not. Every
// contender of a dataset holds the same keys; sums of the values read go through
// benchmark::DoNotOptimize and into a checksum printed at the end; hits and misses are
// counted and checked (a miss in a hit experiment, or a hit in a miss experiment, is an
// error).
//
// Modes: smoke (ctest, seconds), quick (1e4 and 1e6 keys; E3 u64 over 10 sizes 1e5..1e6; E5
// 5 drains; E6 u64 at 1e6), full (adds 1e7 keys; E3 over 20 sizes 1e5..1e7 for u64 and
// string keys; E5 50 drains; E6 u64 and string at 1e6 and 1e7). --only=e1,...,e7
// runs a subset; --sizes=N,N sets the dataset sizes of E1/E2/E4/E6 (and, with --only=e3,
// E3's sizes); --keys=u64|str one key type.
//
// Output (--out=DIR): engine.csv (goal,key,n,contender,metric,rep,value),
// engine_memory.csv (key,n,contender,bytes,peak_bytes), engine_ticks.csv (drain,tick,
// wall_us,cpu_us,elapsed_us,expired,time_cap_hit,budget_us).
#include <benchmark/benchmark.h>
#include <cxxabi.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "bench_common.hpp"

#if EXPIRING_BENCH_HAS_POCO
#include <Poco/ExpirationDecorator.h>
#include <Poco/UniqueExpireCache.h>
#endif

// ---- the allocation counter (E3): bench/alloc_counter.hpp ----------------------------------
#include "alloc_counter.hpp"

namespace {

using namespace bench;
using expiring::ManualClock;

constexpr std::int64_t kT0 = 1700000000000;   // the ManualClock's fixed start
constexpr std::int64_t kTtlMs = 3600 * 1000;  // 1 h: nothing expires during a timed run

// The store reading a shared CachedClock (its own cost: the clock is one load; nothing here
// ticks it, which would resync it) and the store with every template argument after K and V
// defaulted (what a user gets). E5's drains tick, on a ManualClock (TickStore).
template <class K>
using MStore = expiring::Store<K, Value, expiring::CachedClock&>;
using TickStore = expiring::Store<std::uint64_t, Value, ManualClock>;
#if EXPIRING_BENCH_HAS_POCO
template <class K>
using PocoCache = Poco::UniqueExpireCache<K, Poco::ExpirationDecorator<Value>>;
constexpr std::size_t kPocoMaxKeys = 2000000;  // std::map nodes and strategy maps: ~0.3 KB a key
#endif
template <class K>
using DStore = expiring::ExpiringStore<K, Value>;
using DefaultClock = typename DStore<std::uint64_t>::clock_type;

std::string demangle(const char* n) {
  int st = 0;
  char* d = abi::__cxa_demangle(n, nullptr, nullptr, &st);
  std::string s = st == 0 && d != nullptr ? d : n;
  std::free(d);
  for (char& c : s) {
    if (c == ',') c = ';';
  }
  return s;
}

// ---- settings -------------------------------------------------------------------------------

struct Settings {
  Mode mode = Mode::quick;
  std::vector<std::size_t> sizes;      // E1, E2, E4, E6 datasets
  std::vector<std::size_t> e6_sizes;   // E6 only at these
  std::vector<std::size_t> e3_sizes;
  bool e3_strings = false;
  bool e6_strings = false;
  bool do_u64 = true, do_str = true;
  int reps = 5;
  double rep_seconds = 1.0;
  double fill_seconds = 3.0;
  std::size_t min_fill_rounds = 3;
  int drains = 5;
  std::size_t drain_keys = 1000000;
  std::string only;
  bool wanted(const char* part) const {
    if (only.empty()) return true;
    return ("," + only + ",").find(std::string(",") + part + ",") != std::string::npos;
  }
};

// ---- output ---------------------------------------------------------------------------------

struct Out {
  Csv main;
  Csv memory;
  Csv ticks;
  explicit Out(const std::string& dir)
      : main(dir, "engine.csv", "goal,key,n,contender,metric,rep,value"),
        memory(dir, "engine_memory.csv", "key,n,contender,bytes,peak_bytes"),
        ticks(dir, "engine_ticks.csv", "drain,tick,wall_us,cpu_us,elapsed_us,expired,time_cap_hit,budget_us") {}
  void put(const char* goal, const char* key, std::size_t n, const std::string& contender, const char* metric, int rep,
           double value) {
    main.row(fmt("%s,%s,%zu,%s,%s,%d,%.6g", goal, key, n, contender.c_str(), metric, rep, value));
  }
};

std::uint64_t g_checksum = 0;  // every value read, printed at the end
int g_errors = 0;

void error(const std::string& what) {
  std::fprintf(stderr, "bench_engine: ERROR: %s\n", what.c_str());
  ++g_errors;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// ---- paired rotation ------------------------------------------------------------------------

constexpr std::size_t kBatch = 256;
using BatchFn = std::function<void(std::size_t)>;

// One repetition: the contenders in rotation for `seconds` (at least 21 rounds), each on
// batches of kBatch operations from its own cursor into the access order; each contender's
// median ns per operation.
std::vector<double> run_paired(const std::vector<BatchFn>& fs, std::size_t order_len, double seconds,
                               std::size_t offset) {
  std::vector<std::vector<double>> samples(fs.size());
  std::vector<std::size_t> cursor(fs.size());
  // Cursors start at multiples of kBatch (order_len is one), so a batch never wraps.
  for (std::size_t c = 0; c < fs.size(); ++c) {
    cursor[c] = (offset + order_len / fs.size() * c) / kBatch * kBatch % order_len;
  }
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
    if (round >= 20 && static_cast<double>(steady_ns() - start) > seconds * 1e9) break;
  }
  std::vector<double> out;
  for (auto& v : samples) out.push_back(median(std::move(v)));
  return out;
}

// Runs `reps` repetitions (after one untimed pass of every contender over the whole order),
// writes every repetition's figures and prints the medians.
void run_experiment(Out& out, const Settings& st, const char* goal, const char* key, std::size_t n,
                    const std::vector<std::string>& names, const std::vector<BatchFn>& fs, std::size_t order_len) {
  for (const auto& f : fs) {
    for (std::size_t pos = 0; pos + kBatch <= order_len; pos += kBatch) f(pos);
  }
  std::vector<std::vector<double>> all(fs.size());
  for (int r = 0; r < st.reps; ++r) {
    const std::vector<double> ns = run_paired(fs, order_len, st.rep_seconds, static_cast<std::size_t>(r) * 7919 * kBatch);
    for (std::size_t c = 0; c < fs.size(); ++c) {
      out.put(goal, key, n, names[c], "ns_per_op", r, ns[c]);
      all[c].push_back(ns[c]);
    }
  }
  std::printf("%-3s %-3s %9zu", goal, key, n);
  for (std::size_t c = 0; c < fs.size(); ++c) {
    std::printf("  %s %.1f", names[c].c_str(), median(all[c]));
    if (c > 0) std::printf(" (%.2fx)", median(all[c]) / median(all[0]));
  }
  std::printf("  ns/op\n");
  std::fflush(stdout);
}

// ---- a dataset: keys, access orders, and the contenders over the same keys ----------------

// A contiguous range of lookup keys, as get_many takes them.
template <class T>
struct Span {
  const T* b;
  const T* e;
  const T* begin() const noexcept { return b; }
  const T* end() const noexcept { return e; }
  const T* data() const noexcept { return b; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(e - b); }
  bool empty() const noexcept { return b == e; }
  const T& operator[](std::size_t i) const noexcept { return b[i]; }
};

// The type get_many and the E6 get() loop look keys up as: the key itself for integers, a
// string_view into the caller's string for strings (MGET's arguments).
template <class K>
using LookupOf = std::conditional_t<std::is_same_v<K, std::string>, std::string_view, K>;

template <class K>
struct Dataset {
  std::size_t n;
  std::vector<K> keys;  // the stored keys, in insertion order
  std::size_t len;      // access sequence length (a power of two)
  std::vector<K> hits;  // keys[random order], copies
  std::vector<K> misses;  // keys of a disjoint family (salt 1), never stored
  std::vector<LookupOf<K>> hit_lookups;  // views of `hits` (E6)
  expiring::CachedClock clock{kT0};
  std::unique_ptr<RawMap<K>> raw;
  std::unique_ptr<Peer<K>> peer;
  std::unique_ptr<MStore<K>> store;
  std::unique_ptr<DStore<K>> dstore;
#if EXPIRING_BENCH_HAS_POCO
  std::unique_ptr<PocoCache<K>> poco;  // null above kPocoMaxKeys
#endif

  explicit Dataset(std::size_t count) : n(count), keys(make_keys<K>(count)) {
    len = std::min<std::size_t>(pow2_at_least(n), std::size_t{1} << 21);
    const std::vector<std::uint32_t> ord = random_order(n, len, 42);
    hits.reserve(len);
    for (std::uint32_t i : ord) hits.push_back(keys[i]);
    misses = make_keys<K>(len, 1);
    for (const K& k : hits) hit_lookups.push_back(LookupOf<K>(k));
    raw = std::make_unique<RawMap<K>>();
    for (std::size_t i = 0; i < n; ++i) raw->try_emplace(keys[i], Value{i});
    peer = std::make_unique<Peer<K>>();
    for (std::size_t i = 0; i < n; ++i) peer->set_ttl(keys[i], Value{i}, clock.now_ms() + kTtlMs);
    expiring::Options o;
    o.seed = 42;  // no std::random_device read: not what a get() costs
    store = std::make_unique<MStore<K>>(clock, o);
    for (std::size_t i = 0; i < n; ++i) store->set(keys[i], Value{i}, expiring::Px{kTtlMs}).value();
    dstore = std::make_unique<DStore<K>>(o);
    for (std::size_t i = 0; i < n; ++i) dstore->set(keys[i], Value{i}, expiring::Px{kTtlMs}).value();
    if (raw->size() != n || peer->values.size() != n || store->size() != n || dstore->size() != n ||
        store->expires_size() != n || dstore->expires_size() != n) {
      error(fmt("dataset %s/%zu: a contender does not hold every key", key_name<K>(), n));
    }
#if EXPIRING_BENCH_HAS_POCO
    if (n <= kPocoMaxKeys) {
      poco = std::make_unique<PocoCache<K>>();
      for (std::size_t i = 0; i < n; ++i) poco->add(keys[i], Poco::ExpirationDecorator<Value>(Value{i}, kTtlMs));
      if (poco->size() != n) error(fmt("dataset %s/%zu: POCO does not hold every key", key_name<K>(), n));
    }
#endif
  }
};

// A get() batch over `seq` for any contender: `find(key)` returns a value pointer or nullptr;
// `expect_hit` says what every lookup must find.
template <class T, class Find>
BatchFn lookup_batch(const T* seq, std::size_t mask, bool expect_hit, std::uint64_t& wrong, Find find) {
  return [seq, mask, expect_hit, &wrong, find](std::size_t pos) {
    Value sum = 0;
    std::uint64_t found = 0;
    for (std::size_t j = 0; j < kBatch; ++j) {
      const Value* v = find(seq[(pos + j) & mask]);
      found += v != nullptr ? 1 : 0;
      sum += v != nullptr ? *v : 0;
    }
    benchmark::DoNotOptimize(sum);
    g_checksum += sum;
    wrong += expect_hit ? kBatch - found : found;
  };
}

// ---- E1, E2: get() hits and misses ----------------------------------------------------------

template <class K>
void run_e1(Out& out, const Settings& st, Dataset<K>& ds) {
  const K* seq = ds.hits.data();
  const std::size_t mask = ds.len - 1;
  std::uint64_t wrong = 0;
  auto& raw = *ds.raw;
  auto& peer = *ds.peer;
  auto& store = *ds.store;
  auto& dstore = *ds.dstore;
  const expiring::CachedClock& clock = ds.clock;
  const DefaultClock dclock{};  // built once, as a store holds its clock (it may calibrate)
  std::vector<BatchFn> fs = {
      lookup_batch(seq, mask, true, wrong,
                   [&raw](const K& k) -> const Value* {
                     auto it = raw.find(k);
                     return it != raw.end() ? &it->second : nullptr;
                   }),
      lookup_batch(seq, mask, true, wrong, [&peer, &clock](const K& k) { return peer.get(k, clock.now_ms()); }),
      lookup_batch(seq, mask, true, wrong, [&store](const K& k) { return store.get(k); }),
      lookup_batch(seq, mask, true, wrong, [&dstore](const K& k) { return dstore.get(k); }),
      [&dclock](std::size_t) {  // one reading of the default clock
        std::int64_t sum = 0;
        for (std::size_t j = 0; j < kBatch; ++j) sum += dclock.now_ms();
        benchmark::DoNotOptimize(sum);
        g_checksum += static_cast<std::uint64_t>(sum);
      },
  };
  std::vector<std::string> names = {"raw", "peer", "store", "store_default", "clock_default"};
#if EXPIRING_BENCH_HAS_POCO
  if (ds.poco) {
    fs.push_back(lookup_batch(seq, mask, true, wrong, [&poco = *ds.poco](const K& k) -> const Value* {
      const auto p = poco.get(k);  // the cache keeps its own reference: the value outlives p
      return p.isNull() ? nullptr : &p->value();
    }));
    names.push_back("poco");
  }
#endif
  run_experiment(out, st, "E1", key_name<K>(), ds.n, names, fs, ds.len);
  if (wrong != 0) error(fmt("E1 %s/%zu: %llu lookups of stored keys missed", key_name<K>(), ds.n,
                            static_cast<unsigned long long>(wrong)));
}

template <class K>
void run_e2(Out& out, const Settings& st, Dataset<K>& ds) {
  const K* seq = ds.misses.data();
  const std::size_t mask = ds.len - 1;
  std::uint64_t wrong = 0;
  auto& raw = *ds.raw;
  auto& peer = *ds.peer;
  auto& store = *ds.store;
  auto& dstore = *ds.dstore;
  const expiring::CachedClock& clock = ds.clock;
  const std::uint64_t misses_before = store.stats().keyspace_misses;
  std::vector<BatchFn> fs = {
      lookup_batch(seq, mask, false, wrong,
                   [&raw](const K& k) -> const Value* {
                     auto it = raw.find(k);
                     return it != raw.end() ? &it->second : nullptr;
                   }),
      lookup_batch(seq, mask, false, wrong, [&peer, &clock](const K& k) { return peer.get(k, clock.now_ms()); }),
      lookup_batch(seq, mask, false, wrong, [&store](const K& k) { return store.get(k); }),
      lookup_batch(seq, mask, false, wrong, [&dstore](const K& k) { return dstore.get(k); }),
  };
  run_experiment(out, st, "E2", key_name<K>(), ds.n, {"raw", "peer", "store", "store_default"}, fs, ds.len);
  if (wrong != 0) error(fmt("E2 %s/%zu: %llu lookups of absent keys hit", key_name<K>(), ds.n,
                            static_cast<unsigned long long>(wrong)));
  if (store.stats().keyspace_misses == misses_before) error("E2: the store counted no misses");
}

// ---- E4: updates of existing keys -----------------------------------------------------------

template <class K>
void run_e4_update(Out& out, const Settings& st, Dataset<K>& ds) {
  const K* seq = ds.hits.data();
  const std::size_t mask = ds.len - 1;
  auto& raw = *ds.raw;
  auto& peer = *ds.peer;
  auto& store = *ds.store;
  auto& dstore = *ds.dstore;
  const expiring::CachedClock& clock = ds.clock;
  bool ok = true;
  // New TTLs vary by up to a second, so the deadline really moves.
  auto ttl_at = [](std::size_t i) { return kTtlMs + static_cast<std::int64_t>(i & 1023); };
  std::vector<BatchFn> fs = {
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) raw.insert_or_assign(seq[(pos + j) & mask], Value{j});
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          peer.set_ttl(seq[(pos + j) & mask], Value{j}, clock.now_ms() + ttl_at(pos + j));
        }
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          ok &= store.set(seq[(pos + j) & mask], Value{j}, expiring::Px{ttl_at(pos + j)}).ok();
        }
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) ok &= store.pexpire(seq[(pos + j) & mask], ttl_at(pos + j)) == true;
      },
      [&](std::size_t pos) {
        for (std::size_t j = 0; j < kBatch; ++j) {
          ok &= dstore.set(seq[(pos + j) & mask], Value{j}, expiring::Px{ttl_at(pos + j)}).ok();
        }
      },
  };
  std::vector<std::string> names = {"raw", "peer", "store_set", "store_pexpire", "store_default_set"};
#if EXPIRING_BENCH_HAS_POCO
  if (ds.poco) {
    fs.push_back([&poco = *ds.poco, seq, mask, &ttl_at](std::size_t pos) {
      for (std::size_t j = 0; j < kBatch; ++j) {
        poco.update(seq[(pos + j) & mask], Poco::ExpirationDecorator<Value>(Value{j}, ttl_at(pos + j)));
      }
    });
    names.push_back("poco_update");
  }
#endif
  run_experiment(out, st, "E4u", key_name<K>(), ds.n, names, fs, ds.len);
  if (!ok) error(fmt("E4 %s/%zu: a store update failed", key_name<K>(), ds.n));
  if (raw.size() != ds.n || store.size() != ds.n || store.expires_size() != ds.n || dstore.size() != ds.n) {
    error(fmt("E4 %s/%zu: an update changed the number of keys", key_name<K>(), ds.n));
  }
}

// ---- E7: what a listener costs set() -------------------------------------------------------

// set() with a TTL of existing keys (two events each: `set`, `expire`) on three stores over the
// same keys: no listener (the baseline), a listener subscribed to removals only (expired,
// evicted, del: none of which a set() raises), and a listener for every cause, which counts
// what it receives (checked: two events per set()).
template <class K>
void run_e7(Out& out, const Settings& st, Dataset<K>& ds) {
  const K* seq = ds.hits.data();
  const std::size_t mask = ds.len - 1;
  expiring::Options o;
  o.seed = 42;
  auto make = [&] {
    auto s = std::make_unique<MStore<K>>(ds.clock, o);
    for (std::size_t i = 0; i < ds.n; ++i) s->set(ds.keys[i], Value{i}, expiring::Px{kTtlMs}).value();
    return s;
  };
  auto quiet = make(), removals = make(), all = make();
  std::uint64_t removal_events = 0, all_events = 0, sets = 0;
  removals->set_listener([&](const auto&) { ++removal_events; }, expiring::KeyEventCauses::removals());
  all->set_listener([&](const auto&) { ++all_events; });
  bool ok = true;
  auto setter = [&](MStore<K>& s, bool count) -> BatchFn {
    return [&s, &ok, &sets, seq, mask, count](std::size_t pos) {
      for (std::size_t j = 0; j < kBatch; ++j) {
        ok &= s.set(seq[(pos + j) & mask], Value{j}, expiring::Px{kTtlMs + static_cast<std::int64_t>(j)}).ok();
      }
      if (count) sets += kBatch;
    };
  };
  run_experiment(out, st, "E7", key_name<K>(), ds.n, {"no_listener", "listener_removals", "listener_all"},
                 {setter(*quiet, false), setter(*removals, false), setter(*all, true)}, ds.len);
  if (!ok) error(fmt("E7 %s/%zu: a set() failed", key_name<K>(), ds.n));
  if (removal_events != 0) error(fmt("E7 %s/%zu: the removals-only listener saw a set()", key_name<K>(), ds.n));
  if (all_events != 2 * sets) error(fmt("E7 %s/%zu: the listener missed events", key_name<K>(), ds.n));
}

// ---- E6: get_many vs a loop of get() ---------------------------------------------------------

template <class K>
void run_e6(Out& out, const Settings& st, Dataset<K>& ds) {
  using L = LookupOf<K>;
  const L* seq = ds.hit_lookups.data();
  const std::size_t len = ds.len;
  auto& store = *ds.store;
  auto& dstore = *ds.dstore;
  std::uint64_t wrong = 0;
  auto loop = [&wrong, seq, len](auto& s) -> BatchFn {
    return [&wrong, &s, seq, len](std::size_t pos) {
      Value sum = 0;
      std::uint64_t found = 0;
      for (std::size_t j = 0; j < kBatch; ++j) {
        const Value* v = s.get(seq[(pos + j) & (len - 1)]);
        found += v != nullptr ? 1 : 0;
        sum += v != nullptr ? *v : 0;
      }
      benchmark::DoNotOptimize(sum);
      g_checksum += sum;
      wrong += kBatch - found;
    };
  };
  // kBatch keys in calls of b keys; positions are multiples of kBatch and len of kBatch, so a
  // batch never wraps.
  auto many = [&wrong, seq](auto& s, std::size_t b) -> BatchFn {
    return [&wrong, &s, seq, b](std::size_t pos) {
      const Value* outp[kBatch];
      Value sum = 0;
      std::uint64_t found = 0;
      for (std::size_t off = 0; off < kBatch; off += b) {
        found += s.get_many(Span<L>{seq + pos + off, seq + pos + off + b}, outp + off);
      }
      for (std::size_t j = 0; j < kBatch; ++j) sum += outp[j] != nullptr ? *outp[j] : 0;
      benchmark::DoNotOptimize(sum);
      g_checksum += sum;
      wrong += kBatch - found;
    };
  };
  std::vector<BatchFn> fs = {loop(store), many(store, 32), many(store, 256), loop(dstore), many(dstore, 32)};
  run_experiment(out, st, "E6", key_name<K>(), ds.n,
                 {"get_loop", "get_many_32", "get_many_256", "default_get_loop", "default_get_many_32"}, fs, ds.len);
  if (wrong != 0) error(fmt("E6 %s/%zu: %llu lookups of stored keys missed", key_name<K>(), ds.n,
                            static_cast<unsigned long long>(wrong)));
}

// ---- E4: fills of new keys -------------------------------------------------------------------

// Builds a table of n keys from empty with each contender, timed in thread CPU (a fill takes
// milliseconds to seconds: a preemption would show in wall time), destroyed untimed; a fresh
// random contender order each round; after one untimed round (below 1e7) that warms the
// allocator. Rounds until fill_seconds have passed, at least min_fill_rounds.
template <class K>
void run_e4_fill(Out& out, const Settings& st, std::size_t n) {
  const std::vector<K> keys = make_keys<K>(n);
  expiring::CachedClock clock(kT0);
  expiring::Options o;
  o.seed = 42;
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
        auto s = std::make_shared<MStore<K>>(clock, o);
        for (std::size_t i = 0; i < n; ++i) s->set(keys[i], Value{i}, expiring::Px{kTtlMs}).value();
        if (s->expires_size() != n) error("E4 fill: the store lost keys");
        return s;
      },
      [&]() -> std::shared_ptr<void> {
        auto s = std::make_shared<DStore<K>>(o);
        for (std::size_t i = 0; i < n; ++i) s->set(keys[i], Value{i}, expiring::Px{kTtlMs}).value();
        if (s->expires_size() != n) error("E4 fill: the default store lost keys");
        return s;
      },
  };
  const std::vector<std::string> names = {"raw", "peer", "store", "store_default"};
  const bool huge = n >= 10000000;
  if (!huge) {
    for (auto& f : fs) f().reset();
  }
  std::vector<std::vector<double>> samples(fs.size());
  std::vector<std::size_t> order(fs.size());
  std::uint64_t rs = 99;
  const std::int64_t start = steady_ns();
  for (std::size_t round = 0; round < 31; ++round) {
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[(rs = splitmix64(rs)) % k]);
    for (std::size_t k = 0; k < fs.size(); ++k) {
      const std::size_t c = order[k];
      const std::int64_t t0 = thread_cpu_ns();
      std::shared_ptr<void> built = fs[c]();
      const std::int64_t t1 = thread_cpu_ns();
      const double ns = static_cast<double>(t1 - t0) / static_cast<double>(n);
      samples[c].push_back(ns);
      out.put("E4n", key_name<K>(), n, names[c], "ns_per_op", static_cast<int>(round), ns);
      built.reset();
    }
    if (round + 1 >= st.min_fill_rounds && static_cast<double>(steady_ns() - start) > st.fill_seconds * 1e9) break;
  }
  std::printf("E4n %-3s %9zu", key_name<K>(), n);
  for (std::size_t c = 0; c < fs.size(); ++c) {
    std::printf("  %s %.1f", names[c].c_str(), median(samples[c]));
    if (c > 0) std::printf(" (%.2fx)", median(samples[c]) / median(samples[0]));
  }
  std::printf("  ns/key (thread CPU, %zu rounds)\n", samples[0].size());
  std::fflush(stdout);
}

// ---- E3: memory over a sweep of sizes --------------------------------------------------------

struct Footprint {
  std::size_t bytes;  // live after the build, minus before
  std::size_t peak;   // peak live during the build, minus before
};

template <class Build>
Footprint footprint(Build&& build) {
  const std::size_t before = g_live;
  g_peak = g_live;
  auto holder = build();
  const Footprint f{g_live - before, g_peak - before};
  holder.reset();
  if (g_live != before) error(fmt("E3: %zu bytes not freed", g_live - before));
  return f;
}

template <class K>
void e3_point(Out* out, const std::vector<K>& keys, std::size_t n) {
  const char* kn = key_name<K>();
  expiring::Options o;
  o.seed = 42;
  auto put = [&](const char* contender, const Footprint& f) {
    if (out != nullptr) out->memory.row(fmt("%s,%zu,%s,%zu,%zu", kn, n, contender, f.bytes, f.peak));
  };
  const Footprint raw = footprint([&] {
    auto m = std::make_unique<RawMap<K>>();
    for (std::size_t i = 0; i < n; ++i) m->try_emplace(keys[i], Value{i});
    return m;
  });
  put("raw", raw);
  const Footprint ttl = footprint([&] {
    auto s = std::make_unique<DStore<K>>(o);
    for (std::size_t i = 0; i < n; ++i) (void)s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
    if (s->expires_size() != n) error("E3: the store lost keys");
    return s;
  });
  put("store_ttl", ttl);
  const Footprint nottl = footprint([&] {
    auto s = std::make_unique<DStore<K>>(o);
    for (std::size_t i = 0; i < n; ++i) (void)s->set(keys[i], Value{i});
    if (s->size() != n) error("E3: the store lost keys");
    return s;
  });
  put("store_nottl", nottl);
  const Footprint peer = footprint([&] {
    auto m = std::make_unique<Peer<K>>();
    const std::int64_t deadline = CachedClock::now + kTtlMs;
    for (std::size_t i = 0; i < n; ++i) m->set_ttl(keys[i], Value{i}, deadline);
    return m;
  });
  put("peer_ttl", peer);
  if (out != nullptr) {
    const double dn = static_cast<double>(n);
    auto over = [&](const Footprint& f) {
      return (static_cast<double>(f.bytes) - static_cast<double>(raw.bytes)) / dn;
    };
    std::printf("E3  %-3s %9zu  raw %.1f B/key; over raw: store TTL %+.1f, no TTL %+.1f, peer TTL %+.1f B/key; "
                "peak vs raw: %.2fx / %.2fx\n",
                kn, n, static_cast<double>(raw.bytes) / dn, over(ttl), over(nottl), over(peer),
                static_cast<double>(ttl.peak) / static_cast<double>(raw.peak),
                static_cast<double>(nottl.peak) / static_cast<double>(raw.peak));
    std::fflush(stdout);
  }
}

template <class K>
void run_e3(Out& out, const std::vector<std::size_t>& sizes) {
  if (sizes.empty()) return;
  const std::vector<K> keys = make_keys<K>(*std::max_element(sizes.begin(), sizes.end()));
  e3_point<K>(nullptr, keys, 1000);  // first-use allocations of the libraries are not a table's
  for (std::size_t n : sizes) e3_point<K>(&out, keys, n);
}

// ---- E5: the longest tick of mass-expiry drains ----------------------------------------------

void run_e5(Out& out, const Settings& st) {
  const std::size_t n = st.drain_keys;
  double max_wall = 0, max_cpu = 0, max_elapsed = 0, budget_us = 0;
  std::size_t ticks = 0, over = 0, capped = 0;
  for (int d = 0; d < st.drains; ++d) {
    const std::vector<std::uint64_t> keys = make_keys<std::uint64_t>(n, static_cast<std::uint64_t>(d) + 2);
    ManualClock clock(kT0);
    auto s = std::make_unique<TickStore>(clock, expiring::Options{});  // default Options
    for (std::size_t i = 0; i < n; ++i) s->set(keys[i], Value{i}, expiring::Px{60000}).value();  // one deadline
    if (s->expires_size() != n) error("E5: the store lost keys");
    budget_us = static_cast<double>(s->cycle().slow_time_limit_us);
    const std::int64_t period = 1000 / s->options().hz;
    clock.set(kT0 + 60001);  // every key is now due
    const double limit_us = 1.1 * budget_us + 50;
    std::size_t t = 0;
    std::uint64_t expired = 0;
    while (s->size() != 0 && t < 100000) {
      clock.advance(period);
      const std::int64_t c0 = thread_cpu_ns();
      const std::int64_t w0 = steady_ns();
      const expiring::TickReport r = s->tick();
      const std::int64_t w1 = steady_ns();
      const std::int64_t c1 = thread_cpu_ns();
      ++t;
      expired += r.expired;
      const double wall = static_cast<double>(w1 - w0) / 1000.0, cpu = static_cast<double>(c1 - c0) / 1000.0;
      max_wall = std::max(max_wall, wall);
      max_cpu = std::max(max_cpu, cpu);
      max_elapsed = std::max(max_elapsed, static_cast<double>(r.elapsed_us));
      over += wall > limit_us ? 1 : 0;
      capped += r.time_cap_hit ? 1 : 0;
      out.ticks.row(fmt("%d,%zu,%.1f,%.1f,%lld,%llu,%d,%.0f", d, t, wall, cpu, static_cast<long long>(r.elapsed_us),
                        static_cast<unsigned long long>(r.expired), r.time_cap_hit ? 1 : 0, budget_us));
    }
    if (s->size() != 0 || expired != n) {
      error(fmt("E5 drain %d: %zu keys left, %llu reclaimed by tick()", d, s->size(),
                static_cast<unsigned long long>(expired)));
    }
    ticks += t;
  }
  const char* c = "store";
  out.put("E5", "u64", n, c, "budget_us", 0, budget_us);
  out.put("E5", "u64", n, c, "max_tick_wall_us", 0, max_wall);
  out.put("E5", "u64", n, c, "max_tick_cpu_us", 0, max_cpu);
  out.put("E5", "u64", n, c, "max_tick_elapsed_us", 0, max_elapsed);
  out.put("E5", "u64", n, c, "ticks", 0, static_cast<double>(ticks));
  out.put("E5", "u64", n, c, "ticks_over_limit", 0, static_cast<double>(over));
  out.put("E5", "u64", n, c, "ticks_time_cap_hit", 0, static_cast<double>(capped));
  out.put("E5", "u64", n, c, "drains", 0, st.drains);
  std::printf("E5  u64 %9zu  %d drains, %zu ticks (%zu hit the budget): budget %.0f us, longest tick %.0f us wall "
              "(%.0f us thread CPU, %.0f us by the store's report); %zu over 1.1x budget + 50 us\n",
              n, st.drains, ticks, capped, budget_us, max_wall, max_cpu, max_elapsed, over);
  std::fflush(stdout);
}

// ---- driver ----------------------------------------------------------------------------------

template <class K>
void run_datasets(Out& out, const Settings& st) {
  for (std::size_t n : st.sizes) {
    if (st.wanted("e4")) run_e4_fill<K>(out, st, n);
    if (!(st.wanted("e1") || st.wanted("e2") || st.wanted("e4") || st.wanted("e6") || st.wanted("e7"))) continue;
    const bool e6 = st.wanted("e6") && (std::is_same_v<K, std::uint64_t> || st.e6_strings) &&
                    std::find(st.e6_sizes.begin(), st.e6_sizes.end(), n) != st.e6_sizes.end();
    const bool e7 = st.wanted("e7") && std::is_same_v<K, std::uint64_t>;
    if (!(st.wanted("e1") || st.wanted("e2") || st.wanted("e4") || e6 || e7)) continue;
    auto ds = std::make_unique<Dataset<K>>(n);
    if (st.wanted("e1")) run_e1(out, st, *ds);
    if (st.wanted("e2")) run_e2(out, st, *ds);
    if (e6) run_e6(out, st, *ds);
    if (e7) run_e7(out, st, *ds);
    if (st.wanted("e4")) run_e4_update(out, st, *ds);  // last: it rewrites values and deadlines
  }
}

std::vector<std::size_t> parse_sizes(const std::string& s) {
  std::vector<std::size_t> v;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    v.push_back(static_cast<std::size_t>(std::atof(s.substr(i, j - i).c_str())));
    i = j + 1;
  }
  return v;
}

std::vector<std::size_t> log_sizes(double lo, double hi, int points) {
  std::vector<std::size_t> v;
  for (int k = 0; k < points; ++k) {
    const double e = std::log10(lo) + (std::log10(hi) - std::log10(lo)) * k / (points - 1);
    v.push_back(static_cast<std::size_t>(std::llround(std::pow(10.0, e))));
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Settings st;
  std::string sizes_arg, keys_arg;
  {
    int w = 1;
    for (int r = 1; r < argc; ++r) {
      const std::string a = argv[r];
      if (a.rfind("--only=", 0) == 0) {
        st.only = a.substr(7);
      } else if (a.rfind("--sizes=", 0) == 0) {
        sizes_arg = a.substr(8);
      } else if (a.rfind("--keys=", 0) == 0) {
        keys_arg = a.substr(7);
      } else {
        argv[w++] = argv[r];
      }
    }
    argc = w;
    argv[argc] = nullptr;
  }
  const RunConfig cfg = parse_args(argc, argv);
  for (int r = 1; r < argc; ++r) {
    if (std::string(argv[r]).rfind("--benchmark_", 0) != 0) {
      std::fprintf(stderr, "bench_engine: unknown argument '%s'\n", argv[r]);
      return 2;
    }
  }
  st.mode = cfg.mode;
  CachedClock::refresh();
  keep_freed_memory();

  switch (st.mode) {
    case Mode::smoke:
      st.sizes = {1000};
      st.e6_sizes = {1000};
      st.e3_sizes = log_sizes(1000, 10000, 3);
      st.reps = 1;
      st.rep_seconds = 0.005;
      st.fill_seconds = 0;
      st.min_fill_rounds = 1;
      st.drains = 1;
      st.drain_keys = 20000;
      break;
    case Mode::quick:
      st.sizes = {10000, 1000000};
      st.e6_sizes = {1000000};
      st.e3_sizes = log_sizes(1e5, 1e6, 10);
      break;
    case Mode::full:
      st.sizes = {10000, 1000000, 10000000};
      st.e6_sizes = {1000000, 10000000};
      st.e3_sizes = log_sizes(1e5, 1e7, 20);
      st.e3_strings = true;
      st.e6_strings = true;
      st.reps = 7;
      st.rep_seconds = 1.5;
      st.fill_seconds = 6.0;
      st.drains = 50;
      break;
  }
  if (!sizes_arg.empty()) {
    st.sizes = parse_sizes(sizes_arg);
    st.e6_sizes = st.sizes;
    if (st.only == "e3") st.e3_sizes = st.sizes;
  }
  if (keys_arg == "u64") st.do_str = false;
  if (keys_arg == "str") st.do_u64 = false;

  Out out(cfg.out_dir);
  const std::string clock_name = demangle(typeid(DefaultClock).name());
  out.main.row(fmt("meta,-,0,default_clock,%s,0,0", clock_name.c_str()));
  out.main.row(fmt("meta,-,0,mode,%s,0,0", mode_name(st.mode)));
  out.put("meta", "-", 0, "settings", "reps", 0, st.reps);
  out.put("meta", "-", 0, "settings", "rep_seconds", 0, st.rep_seconds);
  out.put("meta", "-", 0, "settings", "e3_points", 0, static_cast<double>(st.e3_sizes.size()));
  out.put("meta", "-", 0, "settings", "e3_strings", 0, st.e3_strings ? 1 : 0);
  std::printf("bench_engine: mode %s, default clock %s, %d repetitions of %.2f s per experiment\n",
              mode_name(st.mode), clock_name.c_str(), st.reps, st.rep_seconds);
  const std::int64_t t_start = steady_ns();

  if (st.wanted("e5")) run_e5(out, st);
  if (st.do_u64) run_datasets<std::uint64_t>(out, st);
  if (st.do_str) run_datasets<std::string>(out, st);
  if (st.wanted("e3")) {
    if (st.do_u64) run_e3<std::uint64_t>(out, st.e3_sizes);
    if (st.do_str && (st.e3_strings || !keys_arg.empty())) run_e3<std::string>(out, st.e3_sizes);
  }

  const double secs = static_cast<double>(steady_ns() - t_start) / 1e9;
  out.put("meta", "-", 0, "run", "seconds", 0, secs);
  std::printf("mode=%s; %.0f s; checksum %llu; %d error(s)\n", mode_name(st.mode), secs,
              static_cast<unsigned long long>(g_checksum), g_errors);
  return g_errors == 0 ? 0 : 1;
}
