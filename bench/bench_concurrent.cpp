// bench/bench_concurrent.cpp: throughput of ConcurrentStore against the ways to share a store
// or a map between threads, at 1, 2, 4, ... threads up to std::thread::hardware_concurrency()
// (and that many again, twice the hardware threads, to show oversubscription).
//
// Contenders (u64 keys, u64 values; every expiring contender reads the same clock type, by
// default expiring::TscClock, --clock=cached: one expiring::CachedClock built at start and
// never refreshed, a plain load):
//   concurrent   expiring::ConcurrentStore<uint64_t, uint64_t, Clock>, default shards (--shards=N
//                to override): get() reads without the lock (ConcurrencyOptions::optimistic_reads)
//   locked       the same with optimistic_reads off: every get() takes its shard's lock
//   logged       (bench_concurrent_log only) `concurrent` with an AppendLog at appendfsync
//                everysec in a directory under $TMPDIR (or /tmp): every set() is a record in
//                the log's buffer, written and fdatasync'ed once a second by the log's thread;
//                after each point the log is rewritten (untimed), so that it stays the
//                store's size. A program of its own (bench_concurrent_log.cpp compiles this
//                file with EXPIRING_BENCH_WITH_LOG): in one program with the others, GCC 12
//                laid out and inlined the other contenders' loops differently and
//                `concurrent` measured 15-20% slower at one thread.
//   mutex        one std::mutex around an expiring::Store<uint64_t, uint64_t, Clock>
//   tbb          tbb::concurrent_hash_map<uint64_t, uint64_t> (no TTL; if found at configure time)
//   cuckoo       libcuckoo::cuckoohash_map<uint64_t, uint64_t> (no TTL; if found at configure
//                time): with tbb, the ceiling for a concurrent map
//   unlocked     expiring::Store<uint64_t, uint64_t, Clock> with no lock, at 1 thread only: the
//                baseline of the goals
//   loop         the thread loop alone, no map: how far the machine itself scales
//
// Workload: the keys 0..n-1 (through bench::make_key, a bijection, computed in the loop: no
// key array is read) are pre-filled, each with a TTL of 1 h (nothing expires in a run; a
// get() of a key with a TTL reads the clock). Two mixes: 95% get / 5% set with that TTL, and
// 50/50. Each thread draws keys uniformly from its own xorshift64* generator (seeded by
// repetition, thread count and thread index, the same seeds for every contender of a point),
// waits at a start barrier, runs for a fixed time (smoke 0.05 s, quick 1 s, full 2 s) and
// counts its operations in its own cache-line-padded slot; a point's throughput is the
// total over the threads divided by the wall time from the start signal to the last thread's
// end. Every get() must hit and return the value the key was filled with (sets write the same
// value): a miss or a wrong value is an error (exit status 1), in every mode.
//
// Method (the house method): every point (mix, keys, threads) is repeated (quick 3, full 5)
// and each repetition runs every thread count and, within each, every contender in rotation
// (each round starts with the next contender), so drift on the machine falls on all of them;
// the table shows medians over the repetitions and each goal ratio is the median of the
// repetitions' ratios, measured in the same run. No timed assertions: goals are reported.
//
// Goals (per mix and key count; "2 threads" is judged only if 2 is among the thread counts):
//   C1  ConcurrentStore at 2 threads >= 1.7x its own 1-thread throughput
//   C2  ConcurrentStore at 2 threads >= 1.2x the unlocked store's 1-thread throughput
//   C3  ConcurrentStore at 1 thread  >= 0.8x the unlocked store's 1-thread throughput
//   C4  ConcurrentStore at 2 threads >= libcuckoo at 2 threads (95/5 only)
//   P3  ConcurrentStore with its AppendLog (everysec) at 2 threads >= 0.7x the same store
//       without a log at 2 threads (issue 26; judged at 95/5, shown for both mixes;
//       bench_concurrent_log, whose contenders are concurrent and logged by default)
//
// Modes: --smoke (ctest; also EXPIRING_BENCH_SMOKE=1 or a tiny --benchmark_min_time: 1e3
// keys, threads 1, 2, 4, 0.05 s, one repetition), --quick (default: 1e4 and 1e6 keys), --full.
// --threads=1,2,4, --keys=N,N and --contenders=concurrent,unlocked,... (a subset) override.
// --out=DIR writes concurrent.csv (mix,keys,threads,contender,rep,mops), concurrent_cpu.csv
// (the same with cpus: the CPU time the threads got over the wall time, the table's "CPUs got":
// on a shared machine it shows which points lost a core to other processes),
// concurrent_meta.csv (key,value) and concurrent_table.md (the printed tables).
// scripts/plot_concurrent.py draws the CSV into docs/bench/concurrent.svg.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_common.hpp"

#include <expiring/concurrent_store.hpp>

#if defined(EXPIRING_BENCH_WITH_LOG)
#include <expiring/append_log.hpp>
#endif

#if defined(EXPIRING_BENCH_HAS_TBB)
#include <oneapi/tbb/concurrent_hash_map.h>
#endif
#if defined(EXPIRING_BENCH_HAS_LIBCUCKOO)
#include <libcuckoo/cuckoohash_map.hh>
#endif

namespace {

using namespace bench;
using u64 = std::uint64_t;

constexpr auto kTtl = std::chrono::hours(1);
constexpr u64 kValueSalt = 0xA5A5A5A55A5A5A5Aull;

inline u64 key_of(u64 i) noexcept { return make_key<u64>(i); }
inline u64 value_of(u64 key) noexcept { return key ^ kValueSalt; }

// ---- contenders: get(k, v) -> hit?, set(k, v) -> ok? --------------------------------------

template <class Clock>
struct Unlocked {
  static constexpr const char* name = "unlocked";
  expiring::Store<u64, u64, Clock> s;
  explicit Unlocked(Clock c) : s(c) {}
  bool get(u64 k, u64& v) {
    const u64* p = s.get(k);
    if (p == nullptr) return false;
    v = *p;
    return true;
  }
  bool set(u64 k, u64 v) { return s.set(k, v, kTtl).ok(); }
  std::size_t size() const { return s.size(); }
};

template <class Clock>
struct Mutexed {
  static constexpr const char* name = "mutex";
  std::mutex mu;
  expiring::Store<u64, u64, Clock> s;
  explicit Mutexed(Clock c) : s(c) {}
  bool get(u64 k, u64& v) {
    std::lock_guard<std::mutex> g(mu);
    const u64* p = s.get(k);
    if (p == nullptr) return false;
    v = *p;
    return true;
  }
  bool set(u64 k, u64 v) {
    std::lock_guard<std::mutex> g(mu);
    return s.set(k, v, kTtl).ok();
  }
  std::size_t size() const { return s.size(); }
};

template <class Clock, bool kOptimistic = true>
struct Concurrent {
  static constexpr const char* name = kOptimistic ? "concurrent" : "locked";
  expiring::ConcurrentStore<u64, u64, Clock> s;
  Concurrent(Clock c, std::size_t shards)
      : s(c, expiring::Options{}, expiring::ConcurrencyOptions{shards, kOptimistic}) {}
  bool get(u64 k, u64& v) {
    const std::optional<u64> r = s.get(k);
    if (!r) return false;
    v = *r;
    return true;
  }
  bool set(u64 k, u64 v) { return s.set(k, v, kTtl).ok(); }
  std::size_t size() const { return s.size(); }
};

#if defined(EXPIRING_BENCH_WITH_LOG)
constexpr bool kWithLog = true;
void error(const std::string& what);  // (below) reported, counted, and the exit status 1
[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "bench_concurrent: ERROR: %s\n", what.c_str());
  std::exit(1);
}

// `concurrent` with an append-only log at everysec.
template <class Clock>
struct Logged : Concurrent<Clock> {
  static constexpr const char* name = "logged";
  using Store = expiring::ConcurrentStore<u64, u64, Clock>;
  TempDir dir;  // before the log: the log closes its files before they go
  std::unique_ptr<expiring::AppendLog<Store>> log;
  Logged(Clock c, std::size_t shards) : Concurrent<Clock>(c, shards) {
    expiring::AppendLogOptions o;
    o.fsync = expiring::Fsync::everysec;
    auto r = expiring::AppendLog<Store>::open(this->s, dir.path, o);
    if (!r.ok()) fatal("logged: " + r.error().message);
    log = std::move(*r);
  }
  // Between points, untimed: the log compacted to the store's size.
  void after_point() {
    if (!log->rewrite() || log->failure()) error("logged: the log failed: " + log->failure().value_or(expiring::FileError{}).message);
  }
};
#else
constexpr bool kWithLog = false;
#endif

#if defined(EXPIRING_BENCH_HAS_TBB)
struct Tbb {
  static constexpr const char* name = "tbb";
  using Map = oneapi::tbb::concurrent_hash_map<u64, u64>;
  Map m;
  bool get(u64 k, u64& v) {
    Map::const_accessor a;
    if (!m.find(a, k)) return false;
    v = a->second;
    return true;
  }
  bool set(u64 k, u64 v) {
    Map::accessor a;
    m.insert(a, k);
    a->second = v;
    return true;
  }
  std::size_t size() const { return m.size(); }
};
#endif

#if defined(EXPIRING_BENCH_HAS_LIBCUCKOO)
struct Cuckoo {
  static constexpr const char* name = "cuckoo";
  libcuckoo::cuckoohash_map<u64, u64> m;
  bool get(u64 k, u64& v) { return m.find(k, v); }
  bool set(u64 k, u64 v) {
    m.insert_or_assign(k, v);
    return true;
  }
  std::size_t size() const { return m.size(); }
};
#endif

// The harness alone: the same loop (generator, key, value check) with no map behind it. Its
// throughput over thread counts is the machine's own scaling (vCPUs that are hyperthreads of
// one core, or a host that is busy, show here), against which the contenders' scaling reads.
struct Loop {
  static constexpr const char* name = "loop";
  bool get(u64 k, u64& v) {
    v = value_of(k);
    benchmark::DoNotOptimize(v);
    return true;
  }
  bool set(u64 k, u64 v) {
    benchmark::DoNotOptimize(k);
    benchmark::DoNotOptimize(v);
    return true;
  }
  std::size_t size() const { return n; }
  std::size_t n = 0;
};

// ---- one timed point ----------------------------------------------------------------------

struct alignas(64) Slot {
  u64 ops = 0;
  u64 gets = 0;
  u64 bad = 0;  // get() misses, wrong values, failed sets
  u64 sink = 0;
  std::int64_t end_ns = 0;
  std::int64_t cpu_ns = 0;  // the thread's CPU time from the start signal to its end
};

struct Control {
  alignas(64) std::atomic<int> ready{0};
  alignas(64) std::atomic<bool> go{false};
  alignas(64) std::atomic<bool> stop{false};
};

struct PointResult {
  double mops = 0;
  double cpus = 0;  // CPUs the threads got: their CPU time over the wall time
  u64 ops = 0, gets = 0, bad = 0;
};

template <class C>
void worker(C& c, Control& ctl, Slot& slot, u64 seed, std::uint32_t n, std::uint32_t get_below) {
  u64 x = splitmix64(seed) | 1;
  ctl.ready.fetch_add(1, std::memory_order_acq_rel);
  while (!ctl.go.load(std::memory_order_acquire)) std::this_thread::yield();
  const std::int64_t cpu0 = thread_cpu_ns();
  u64 ops = 0, gets = 0, bad = 0, sink = 0;
  while (!ctl.stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 64; ++i) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      const u64 r = x * 0x2545F4914F6CDD1Dull;  // xorshift64*
      const u64 idx = ((r >> 32) * n) >> 32;    // uniform in [0, n)
      const u64 key = key_of(idx);
      if (static_cast<std::uint32_t>(r & 0xFFFF) < get_below) {
        u64 v = 0;
        const bool hit = c.get(key, v);
        bad += (!hit || v != value_of(key)) ? 1 : 0;
        sink += v;
        ++gets;
      } else {
        bad += c.set(key, value_of(key)) ? 0 : 1;
      }
    }
    ops += 64;
  }
  slot.end_ns = steady_ns();
  slot.cpu_ns = thread_cpu_ns() - cpu0;
  slot.ops = ops;
  slot.gets = gets;
  slot.bad = bad;
  slot.sink = sink;
}

template <class C>
PointResult run_point(C& c, std::uint32_t n, std::uint32_t get_below, int threads, double seconds, u64 seed) {
  Control ctl;
  std::vector<Slot> slots(static_cast<std::size_t>(threads));
  std::vector<std::thread> ts;
  ts.reserve(slots.size());
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(worker<C>, std::ref(c), std::ref(ctl), std::ref(slots[static_cast<std::size_t>(t)]),
                    seed * 1000003 + static_cast<u64>(t), n, get_below);
  }
  while (ctl.ready.load(std::memory_order_acquire) < threads) std::this_thread::yield();
  const std::int64_t t0 = steady_ns();
  ctl.go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9)));
  ctl.stop.store(true, std::memory_order_relaxed);
  for (auto& t : ts) t.join();
  PointResult r;
  std::int64_t t1 = t0;
  u64 sink = 0;
  std::int64_t cpu = 0;
  for (const Slot& s : slots) {
    cpu += s.cpu_ns;
    r.ops += s.ops;
    r.gets += s.gets;
    r.bad += s.bad;
    sink += s.sink;
    t1 = std::max(t1, s.end_ns);
  }
  benchmark::DoNotOptimize(sink);
  r.mops = static_cast<double>(r.ops) / (static_cast<double>(t1 - t0) / 1e9) / 1e6;
  r.cpus = static_cast<double>(cpu) / static_cast<double>(t1 - t0);
  return r;
}

// ---- settings, records ----------------------------------------------------------------------

struct Settings {
  Mode mode = Mode::quick;
  std::vector<std::size_t> keys;
  std::vector<int> threads;
  int reps = 3;
  double seconds = 1.0;
  std::size_t shards = 0;
  bool cached_clock = false;
  unsigned hw = 1;
  std::string contenders;  // comma-separated subset; empty = all
  bool wanted(const std::string& c) const {
    return contenders.empty() || ("," + contenders + ",").find("," + c + ",") != std::string::npos;
  }
};

struct Mix {
  const char* name;
  std::uint32_t get_below;  // of 65536
};
const Mix kMixes[] = {{"95/5", 62259}, {"50/50", 32768}};  // 62259/65536 = 95.0%

const std::vector<std::string> kColumns = {"concurrent", "locked", "logged", "mutex", "tbb", "cuckoo", "unlocked", "loop"};

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// (mix, keys, threads, contender) -> mops per repetition
struct Key {
  std::string mix;
  std::size_t keys;
  int threads;
  std::string contender;
  bool operator<(const Key& o) const {
    return std::tie(mix, keys, threads, contender) < std::tie(o.mix, o.keys, o.threads, o.contender);
  }
};

int g_errors = 0;
void error(const std::string& what) {
  std::fprintf(stderr, "bench_concurrent: ERROR: %s\n", what.c_str());
  ++g_errors;
}

struct Results {
  std::map<Key, std::vector<double>> mops;  // index = rep (NaN if not run)
  std::map<std::tuple<std::string, std::size_t, int>, std::vector<double>> cpus;  // every run of a point
  std::string text;                         // the printed tables, for concurrent_table.md
  void say(const std::string& s) {
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
    text += s;
  }
  const std::vector<double>* find(const std::string& mix, std::size_t keys, int threads, const std::string& c) const {
    auto it = mops.find(Key{mix, keys, threads, c});
    return it == mops.end() ? nullptr : &it->second;
  }
};

// One contender, type-erased for the rotation.
struct Entry {
  std::string name;
  bool one_thread_only;
  std::function<PointResult(std::uint32_t, std::uint32_t, int, double, u64)> run;
  std::function<std::size_t()> size;
};

template <class C, class = void>
struct has_after_point : std::false_type {};
template <class C>
struct has_after_point<C, std::void_t<decltype(std::declval<C&>().after_point())>> : std::true_type {};

template <class C>
Entry entry_for(C& c, bool one_thread_only = false) {
  return Entry{C::name, one_thread_only,
               [&c](std::uint32_t n, std::uint32_t gb, int th, double s, u64 seed) {
                 PointResult r = run_point(c, n, gb, th, s, seed);
                 if constexpr (has_after_point<C>::value) c.after_point();
                 return r;
               },
               [&c] { return c.size(); }};
}

template <class C>
void fill(C& c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const u64 k = key_of(i);
    if (!c.set(k, value_of(k))) error(fmt("%s: fill set() failed", C::name));
  }
}

// ---- the run --------------------------------------------------------------------------------

template <class Clock>
void run_keys(const Settings& st, Clock clock, std::size_t n, Results& res, Csv& csv, Csv& cpu_csv) {
  Unlocked<Clock> unlocked(clock);
  Mutexed<Clock> mutexed(clock);
  Concurrent<Clock> concurrent(clock, st.shards);
  Concurrent<Clock, false> locked(clock, st.shards);
  std::vector<Entry> es;
  es.push_back(entry_for(concurrent));
  es.push_back(entry_for(locked));
#if defined(EXPIRING_BENCH_WITH_LOG)
  std::unique_ptr<Logged<Clock>> logged;
  if (st.wanted("logged")) logged = std::make_unique<Logged<Clock>>(clock, st.shards);
  if (logged) es.push_back(entry_for(*logged));
#endif
  es.push_back(entry_for(mutexed));
#if defined(EXPIRING_BENCH_HAS_TBB)
  auto tbb = std::make_unique<Tbb>();
  es.push_back(entry_for(*tbb));
#endif
#if defined(EXPIRING_BENCH_HAS_LIBCUCKOO)
  auto cuckoo = std::make_unique<Cuckoo>();
  es.push_back(entry_for(*cuckoo));
#endif
  es.push_back(entry_for(unlocked, true));
  Loop loop;
  loop.n = n;
  es.push_back(entry_for(loop));
  es.erase(std::remove_if(es.begin(), es.end(), [&](const Entry& e) { return !st.wanted(e.name); }), es.end());

  const std::int64_t f0 = steady_ns();
  fill(unlocked, n);
  fill(mutexed, n);
  fill(concurrent, n);
  fill(locked, n);
#if defined(EXPIRING_BENCH_WITH_LOG)
  if (logged) {
    fill(*logged, n);
    logged->after_point();
  }
#endif
#if defined(EXPIRING_BENCH_HAS_TBB)
  fill(*tbb, n);
#endif
#if defined(EXPIRING_BENCH_HAS_LIBCUCKOO)
  fill(*cuckoo, n);
#endif
  for (const Entry& e : es) {
    if (e.size() != n) error(fmt("%s holds %zu keys after filling %zu", e.name.c_str(), e.size(), n));
  }
  std::printf("  %zu keys filled into %zu contenders in %.2f s (ConcurrentStore: %zu shards)\n", n, es.size(),
              static_cast<double>(steady_ns() - f0) / 1e9, concurrent.s.shard_count());

  const auto n32 = static_cast<std::uint32_t>(n);
  for (const Mix& mix : kMixes) {
    // Warm-up: every contender at the largest thread count, briefly (untimed).
    for (const Entry& e : es) {
      const PointResult w = e.run(n32, mix.get_below, e.one_thread_only ? 1 : st.threads.back(),
                                  std::min(0.2, st.seconds), 99);
      if (w.bad != 0) error(fmt("%s, %s, %zu keys, warm-up: %llu bad get()/set()", e.name.c_str(), mix.name, n,
                                static_cast<unsigned long long>(w.bad)));
    }
    for (int rep = 0; rep < st.reps; ++rep) {
      for (std::size_t ti = 0; ti < st.threads.size(); ++ti) {
        const int th = st.threads[ti];
        std::vector<std::size_t> order;
        for (std::size_t k = 0; k < es.size(); ++k) {
          const std::size_t c = (static_cast<std::size_t>(rep) + ti + k) % es.size();
          if (!es[c].one_thread_only || th == 1) order.push_back(c);
        }
        for (std::size_t c : order) {
          const Entry& e = es[c];
          const u64 seed = static_cast<u64>(rep) * 131 + static_cast<u64>(th) * 7 + (mix.get_below == 32768 ? 1 : 0);
          const PointResult r = e.run(n32, mix.get_below, th, st.seconds, seed);
          if (r.bad != 0 || r.gets == 0) {
            error(fmt("%s, %s, %zu keys, %d threads, rep %d: %llu bad get()/set() of %llu ops (%llu gets)",
                      e.name.c_str(), mix.name, n, th, rep, static_cast<unsigned long long>(r.bad),
                      static_cast<unsigned long long>(r.ops), static_cast<unsigned long long>(r.gets)));
          }
          auto& v = res.mops[Key{mix.name, n, th, e.name}];
          v.resize(static_cast<std::size_t>(st.reps), std::nan(""));
          v[static_cast<std::size_t>(rep)] = r.mops;
          csv.row(fmt("%s,%zu,%d,%s,%d,%.4f", mix.name, n, th, e.name.c_str(), rep, r.mops));
          cpu_csv.row(fmt("%s,%zu,%d,%s,%d,%.3f", mix.name, n, th, e.name.c_str(), rep, r.cpus));
          res.cpus[std::make_tuple(std::string(mix.name), n, th)].push_back(r.cpus);
        }
      }
    }
    // Progress line per thread count.
    for (int th : st.threads) {
      std::printf("  %-5s %8zu keys %3d threads:", mix.name, n, th);
      for (const Entry& e : es) {
        const auto* v = res.find(mix.name, n, th, e.name);
        if (v != nullptr) std::printf("  %s %.2f", e.name.c_str(), median(*v));
      }
      std::printf(" Mops/s; %.2f CPUs\n", median(res.cpus[std::make_tuple(std::string(mix.name), n, th)]));
    }
    std::fflush(stdout);
  }
}

std::string cell(const std::vector<double>* v) {
  if (v == nullptr) return "—";
  return fmt("%.2f", median(*v));
}

// The median over repetitions of a[rep] / b[rep].
std::optional<double> ratio(const std::vector<double>* a, const std::vector<double>* b) {
  if (a == nullptr || b == nullptr) return std::nullopt;
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(a->size(), b->size()); ++i) {
    if (!std::isnan((*a)[i]) && !std::isnan((*b)[i]) && (*b)[i] > 0) r.push_back((*a)[i] / (*b)[i]);
  }
  if (r.empty()) return std::nullopt;
  return median(r);
}

void report(const Settings& st, Results& res, const std::vector<std::string>& present, const char* clock_name) {
  res.say(fmt("\n### Throughput, Mops/s (total over threads; median of %d repetition(s) of %.2f s)\n\n", st.reps,
              st.seconds));
  std::string head = "| mix | keys | threads |", rule = "|---|---:|---:|";
  for (const auto& c : kColumns) {
    if (std::find(present.begin(), present.end(), c) == present.end()) continue;
    head += " " + c + " |";
    rule += "---:|";
  }
  head += " CPUs got |";
  rule += "---:|";
  res.say(head + "\n" + rule + "\n");
  for (const Mix& mix : kMixes) {
    for (std::size_t n : st.keys) {
      for (int th : st.threads) {
        std::string line = fmt("| %s | %zu | %d%s |", mix.name, n, th,
                               th > static_cast<int>(st.hw) ? " (over)" : "");
        for (const auto& c : kColumns) {
          if (std::find(present.begin(), present.end(), c) == present.end()) continue;
          line += " " + cell(res.find(mix.name, n, th, c)) + " |";
        }
        line += fmt(" %.2f |", median(res.cpus[std::make_tuple(std::string(mix.name), n, th)]));
        res.say(line + "\n");
      }
    }
  }
  res.say(fmt("\nconcurrent = `ConcurrentStore<uint64_t, uint64_t, %s>` (%s shards; get() without locks); "
              "locked = the same with `optimistic_reads` off; logged = concurrent with an `AppendLog` at "
              "appendfsync everysec on the file system of $TMPDIR or /tmp; mutex = one `std::mutex` "
              "around `Store<uint64_t, uint64_t, %s>`; unlocked = that store without a lock (1 thread only); "
              "tbb = `tbb::concurrent_hash_map<uint64_t, uint64_t>`, cuckoo = "
              "`libcuckoo::cuckoohash_map<uint64_t, uint64_t>` (no TTL); loop = the same thread loop with no map "
              "(the machine's own scaling).",
              clock_name, st.shards == 0 ? "default" : fmt("%zu", st.shards).c_str(), clock_name));
  res.say(fmt(" \"(over)\": more threads than the %u hardware threads. CPUs got: the threads' CPU time over the "
              "wall time (median over the point's runs); below min(threads, hardware threads), other processes "
              "took the rest.\n",
              st.hw));

  res.say("\n### Goals (ratios of medians per repetition, same run)\n\n| goal | mix | keys | target | measured | "
          "result |\n|---|---|---:|---|---|---|\n");
  const bool have2 = std::find(st.threads.begin(), st.threads.end(), 2) != st.threads.end();
  const bool have1 = std::find(st.threads.begin(), st.threads.end(), 1) != st.threads.end();
  auto verdict = [&](const char* goal, const char* mix, std::size_t n, const char* target, std::optional<double> r,
                     double limit, const std::string& detail) {
    std::string measured, result;
    if (!r) {
      measured = "not measured";
      result = "n/a";
    } else {
      measured = fmt("%.2fx (%s)", *r, detail.c_str());
      result = limit < 0 ? "—" : *r >= limit ? "pass" : "**FAIL**";
    }
    res.say(fmt("| %s | %s | %zu | %s | %s | %s |\n", goal, mix, n, target, measured.c_str(), result.c_str()));
  };
  for (const Mix& mix : kMixes) {
    for (std::size_t n : st.keys) {
      const auto* c1 = have1 ? res.find(mix.name, n, 1, "concurrent") : nullptr;
      const auto* c2 = have2 ? res.find(mix.name, n, 2, "concurrent") : nullptr;
      const auto* u1 = have1 ? res.find(mix.name, n, 1, "unlocked") : nullptr;
      const auto* k2 = have2 ? res.find(mix.name, n, 2, "cuckoo") : nullptr;
      if (kWithLog) {  // this program's goal; the others are bench_concurrent's
        const auto* l1 = have1 ? res.find(mix.name, n, 1, "logged") : nullptr;
        const auto* l2 = have2 ? res.find(mix.name, n, 2, "logged") : nullptr;
        const bool judged = std::string(mix.name) == "95/5";
        verdict(judged ? "P3 the log's cost" : "P3 the log's cost (50/50: shown, not judged)", mix.name, n,
                "logged 2T ≥ 0.7x concurrent 2T", ratio(l2, c2), judged ? 0.7 : -1.0,
                fmt("%s vs %s Mops/s", cell(l2).c_str(), cell(c2).c_str()));
        verdict("the log's cost at 1 thread (shown)", mix.name, n, "logged 1T vs concurrent 1T", ratio(l1, c1), -1.0,
                fmt("%s vs %s Mops/s", cell(l1).c_str(), cell(c1).c_str()));
        continue;
      }
      verdict("C1 scaling", mix.name, n, "concurrent 2T ≥ 1.7x concurrent 1T", ratio(c2, c1), 1.7,
              fmt("%s vs %s Mops/s", cell(c2).c_str(), cell(c1).c_str()));
      verdict("C2 over the engine", mix.name, n, "concurrent 2T ≥ 1.2x unlocked 1T", ratio(c2, u1), 1.2,
              fmt("%s vs %s Mops/s", cell(c2).c_str(), cell(u1).c_str()));
      verdict("C3 single-thread cost", mix.name, n, "concurrent 1T ≥ 0.8x unlocked 1T", ratio(c1, u1), 0.8,
              fmt("%s vs %s Mops/s", cell(c1).c_str(), cell(u1).c_str()));
      if (std::string(mix.name) == "95/5") {
        verdict("C4 vs libcuckoo", mix.name, n, "concurrent 2T ≥ cuckoo 2T", ratio(c2, k2), 1.0,
                fmt("%s vs %s Mops/s", cell(c2).c_str(), cell(k2).c_str()));
      }
    }
  }
}

std::vector<std::size_t> parse_list(const std::string& s) {
  std::vector<std::size_t> v;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const double x = std::atof(s.substr(i, j - i).c_str());
    if (x >= 1) v.push_back(static_cast<std::size_t>(x));
    i = j + 1;
  }
  return v;
}

template <class Clock>
int run_all(const Settings& st, Clock clock, const char* clock_name, const char* clock_note,
            const std::string& out_dir) {
  std::vector<std::string> present = {"concurrent", "locked"};
  if (kWithLog) present.push_back("logged");
  present.push_back("mutex");
#if defined(EXPIRING_BENCH_HAS_TBB)
  present.push_back("tbb");
#else
  std::printf("bench_concurrent: oneTBB was not found at configure time: tbb::concurrent_hash_map left out\n");
#endif
#if defined(EXPIRING_BENCH_HAS_LIBCUCKOO)
  present.push_back("cuckoo");
#else
  std::printf("bench_concurrent: libcuckoo/cuckoohash_map.hh was not found at configure time: libcuckoo left out\n");
#endif
  present.push_back("unlocked");
  present.push_back("loop");
  present.erase(std::remove_if(present.begin(), present.end(), [&](const std::string& c) { return !st.wanted(c); }),
                present.end());

  std::string threads;
  for (int t : st.threads) threads += (threads.empty() ? "" : ",") + std::to_string(t);
  std::string keys;
  for (std::size_t k : st.keys) keys += (keys.empty() ? "" : ",") + std::to_string(k);
  Results res;
  res.say(fmt("bench_concurrent: mode %s; clock expiring::%s%s for every expiring contender; %u hardware threads; "
              "threads %s; keys %s; %d repetition(s) of %.2f s per point\n",
              mode_name(st.mode), clock_name, clock_note, st.hw, threads.c_str(), keys.c_str(), st.reps, st.seconds));
  {
    Csv meta(out_dir, "concurrent_meta.csv", "key,value");
    meta.row(fmt("mode,%s", mode_name(st.mode)));
    meta.row(fmt("clock,%s", clock_name));
    meta.row(fmt("hardware_concurrency,%u", st.hw));
    meta.row(fmt("seconds,%g", st.seconds));
    meta.row(fmt("reps,%d", st.reps));
    meta.row(fmt("shards,%zu", st.shards));
  }
  const std::int64_t t0 = steady_ns();
  {
    Csv csv(out_dir, "concurrent.csv", "mix,keys,threads,contender,rep,mops");
    Csv cpu_csv(out_dir, "concurrent_cpu.csv", "mix,keys,threads,contender,rep,cpus");
    for (std::size_t n : st.keys) run_keys(st, clock, n, res, csv, cpu_csv);
  }
  report(st, res, present, clock_name);
  const double secs = static_cast<double>(steady_ns() - t0) / 1e9;
  std::printf("\nmode=%s; %.0f s; %d error(s)\n", mode_name(st.mode), secs, g_errors);
  if (!out_dir.empty()) {
    const std::string path = out_dir + "/concurrent_table.md";
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      error("cannot write " + path);
    } else {
      std::fputs(res.text.c_str(), f);
      std::fclose(f);
    }
  }
  return g_errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Settings st;
  std::string threads_arg, keys_arg, clock_arg = "tsc";
  {
    int w = 1;
    for (int r = 1; r < argc; ++r) {
      const std::string a = argv[r];
      if (a.rfind("--threads=", 0) == 0) {
        threads_arg = a.substr(10);
      } else if (a.rfind("--keys=", 0) == 0) {
        keys_arg = a.substr(7);
      } else if (a.rfind("--clock=", 0) == 0) {
        clock_arg = a.substr(8);
      } else if (a.rfind("--contenders=", 0) == 0) {
        st.contenders = a.substr(13);
      } else if (a.rfind("--shards=", 0) == 0) {
        st.shards = static_cast<std::size_t>(std::atof(a.c_str() + 9));
      } else {
        argv[w++] = argv[r];
      }
    }
    argc = w;
    argv[argc] = nullptr;
  }
  const RunConfig cfg = parse_args(argc, argv);
  for (int r = 1; r < argc; ++r) {
    if (std::string(argv[r]).rfind("--benchmark_", 0) != 0) {  // ctest's smoke flags are accepted
      std::fprintf(stderr, "bench_concurrent: unknown argument '%s'\n", argv[r]);
      return 2;
    }
  }
  if (clock_arg != "tsc" && clock_arg != "cached") {
    std::fprintf(stderr, "bench_concurrent: --clock=tsc (default) or --clock=cached\n");
    return 2;
  }
  if (kWithLog && st.contenders.empty()) st.contenders = "concurrent,logged";
  st.mode = cfg.mode;
  st.cached_clock = clock_arg == "cached";
  st.hw = std::max(1u, std::thread::hardware_concurrency());
  keep_freed_memory();

  switch (st.mode) {
    case Mode::smoke:
      st.keys = {1000};
      st.threads = {1, 2, 4};
      st.reps = 1;
      st.seconds = 0.05;
      break;
    case Mode::quick:
      st.keys = {10000, 1000000};
      st.reps = 3;
      st.seconds = 1.0;
      break;
    case Mode::full:
      st.keys = {10000, 1000000};
      st.reps = 5;
      st.seconds = 2.0;
      break;
  }
  if (st.threads.empty()) {
    for (unsigned t = 1; t < st.hw; t *= 2) st.threads.push_back(static_cast<int>(t));
    st.threads.push_back(static_cast<int>(st.hw));
    st.threads.push_back(static_cast<int>(2 * st.hw));
  }
  if (!threads_arg.empty()) {
    st.threads.clear();
    for (std::size_t t : parse_list(threads_arg)) st.threads.push_back(static_cast<int>(std::min<std::size_t>(t, 4096)));
  }
  if (!keys_arg.empty()) st.keys = parse_list(keys_arg);
  std::sort(st.threads.begin(), st.threads.end());
  st.threads.erase(std::unique(st.threads.begin(), st.threads.end()), st.threads.end());
  for (std::size_t& n : st.keys) n = std::min<std::size_t>(n, 0xFFFFFFFFu);
  if (st.threads.empty() || st.keys.empty()) {
    std::fprintf(stderr, "bench_concurrent: empty --threads or --keys\n");
    return 2;
  }

  if (st.cached_clock) {
    const expiring::CachedClock clock;  // built once, never refreshed: a plain load
    return run_all(st, clock, "CachedClock", " (built once, never refreshed: a plain load)", cfg.out_dir);
  }
  return run_all(st, expiring::TscClock{}, "TscClock", " (the default clock)", cfg.out_dir);
}
