// bench/bench_clock.cpp: what a clock reading costs, alone and between cache misses.
//
//   read/<clock>      one reading in a tight loop (ns): a plain load, RDTSC, LFENCE;RDTSC,
//                     RDTSCP, TscClock, CachedClock, SystemClock (vDSO clock_gettime)
//   miss/<clock>      the experiment behind "SystemClock costs a 1e6-key get() ~300 ns":
//                     independent random 8-byte loads from a large array (1 GiB in quick mode,
//                     4 GiB full, 1 MiB smoke), one clock reading per load, ns per load. Without
//                     a reading (none) the core keeps ~10 misses in flight; a serialising
//                     reading (LFENCE;RDTSC, RDTSCP, and the vDSO, which uses one of them)
//                     waits for the earlier loads to finish, so each miss costs its full latency.
//                     Whether a plain RDTSC (and so TscClock) waits too depends on the machine:
//                     on the machine issue 25 was filed from it did not (TscClock cost a 1e6-key
//                     get() about 31 ns); on the 2-vCPU AMD EPYC VM of 2026-12-04 it does (miss/
//                     rdtsc ~400 ns against ~29 ns for none), which is that machine's floor for a
//                     store whose every get() reads the TSC.
//   place/<where>     where one RDTSC goes relative to the load of each iteration: before it,
//                     after it (its value unused by the load), or once per 256 loads; beside
//                     none. Only fewer readings beat a waiting RDTSC; moving it does not.
//   get/<clock>       the store itself: get() hits on a 1e6-key store (1000 in smoke mode) in
//                     random order, with CachedClock, TscClock and SystemClock as the store's
//                     clock, ns per get().
// Quick mode runs each benchmark 0.2 s (about 10 s in all, most of it building the data).
#include <benchmark/benchmark.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define EXPIRING_BENCH_X86 1
#else
#define EXPIRING_BENCH_X86 0
#endif

#include "bench_common.hpp"

namespace {

using bench::Mode;

// ---- the clocks, as functions returning a uint64 the loop consumes ------------------------

std::atomic<std::int64_t> g_cached_ms{0};  // a cached clock: what the store reads for a load

struct LoadRead {
  static constexpr const char* name = "load";
  static std::uint64_t read() noexcept {
    return static_cast<std::uint64_t>(g_cached_ms.load(std::memory_order_relaxed));
  }
};
#if EXPIRING_BENCH_X86
struct RdtscRead {
  static constexpr const char* name = "rdtsc";
  static std::uint64_t read() noexcept { return __rdtsc(); }
};
struct LfenceRdtscRead {
  static constexpr const char* name = "lfence_rdtsc";
  static std::uint64_t read() noexcept {
    _mm_lfence();
    return __rdtsc();
  }
};
struct RdtscpRead {
  static constexpr const char* name = "rdtscp";
  static std::uint64_t read() noexcept {
    unsigned aux = 0;
    return __rdtscp(&aux);
  }
};
#endif
struct TscRead {
  static constexpr const char* name = "tsc_clock";
  static std::uint64_t read() noexcept { return static_cast<std::uint64_t>(expiring::TscClock{}.now_ms()); }
};
struct CachedRead {
  static constexpr const char* name = "cached_clock";
  static inline expiring::CachedClock clock{0};
  static std::uint64_t read() noexcept {
    benchmark::DoNotOptimize(clock);  // a load each time, as from a store's member
    return static_cast<std::uint64_t>(clock.now_ms());
  }
};
struct SystemRead {
  static constexpr const char* name = "system_clock";
  static std::uint64_t read() noexcept { return static_cast<std::uint64_t>(expiring::SystemClock{}.now_ms()); }
};
struct NoRead {
  static constexpr const char* name = "none";
  static std::uint64_t read() noexcept { return 0; }
};

template <class R>
void read_cost(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(R::read());
}

// ---- independent misses -------------------------------------------------------------------

struct Array {
  std::uint64_t* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t mask = 0;  // words - 1 (words a power of two)
  ~Array() {
    if (data != nullptr) munmap(data, bytes);
  }
};
std::unique_ptr<Array> g_array;

void make_array(std::size_t bytes) {
  g_array = std::make_unique<Array>();
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "bench_clock: cannot map %zu bytes\n", bytes);
    std::exit(1);
  }
  g_array->data = static_cast<std::uint64_t*>(p);
  g_array->bytes = bytes;
  const std::size_t words = bytes / sizeof(std::uint64_t);
  g_array->mask = words - 1;
  for (std::size_t i = 0; i < words; ++i) g_array->data[i] = bench::splitmix64(i);  // faults every page in
}

// One random load and one clock reading per iteration. The index comes from a counter (not
// from the previous load), so the loads are independent and may overlap.
template <class R>
void miss_cost(benchmark::State& st) {
  const std::uint64_t* a = g_array->data;
  const std::uint64_t mask = g_array->mask;
  std::uint64_t i = 0, sum = 0;
  for (auto _ : st) {
    sum += a[bench::splitmix64(i++) & mask];
    sum += R::read();
  }
  benchmark::DoNotOptimize(sum);
}

#if EXPIRING_BENCH_X86
// place/<where>: one random load per iteration, as miss_cost, with the RDTSC placed before the
// load, after it, or taken once every 256 iterations.
enum class Place { before, after, per256 };
template <Place P>
void place_cost(benchmark::State& st) {
  const std::uint64_t* a = g_array->data;
  const std::uint64_t mask = g_array->mask;
  std::uint64_t i = 0, sum = 0, now = 0;
  for (auto _ : st) {
    if constexpr (P == Place::before) now = __rdtsc();
    if constexpr (P == Place::per256) {
      if ((i & 255) == 0) now = __rdtsc();
    }
    sum += a[bench::splitmix64(i++) & mask];
    if constexpr (P == Place::after) now = __rdtsc();
    sum += now;
  }
  benchmark::DoNotOptimize(sum);
}
#endif

// ---- the store --------------------------------------------------------------------------

std::size_t g_keys = 0;
std::vector<std::uint64_t> g_key_list;
std::vector<std::uint64_t> g_lookups;  // keys in random order, read sequentially

template <class Clock>
struct StoreHolder {
  static inline std::unique_ptr<expiring::ExpiringStore<std::uint64_t, std::uint64_t, expiring::Hash<std::uint64_t>,
                                                        std::equal_to<>, Clock>>
      store;
};

// Built at the first call (Google Benchmark calls a benchmark several times), freed at exit.
template <class Clock>
void get_cost(benchmark::State& st) {
  auto& s = StoreHolder<Clock>::store;
  if (!s) {
    expiring::Options o;
    o.seed = 7;
    o.active_expire_enabled = false;
    s = std::make_unique<typename std::decay_t<decltype(s)>::element_type>(Clock{}, o);
    // Half the keys with a TTL far in the future: every get() compares a deadline.
    for (std::size_t k = 0; k < g_keys; ++k) {
      if (k % 2 == 0) {
        (void)s->set(g_key_list[k], k, expiring::Px{3600000});
      } else {
        (void)s->set(g_key_list[k], k);
      }
    }
  }
  const std::size_t mask = g_lookups.size() - 1;
  std::size_t i = 0;
  std::uint64_t found = 0;
  for (auto _ : st) {
    const std::uint64_t* v = s->get(g_lookups[i++ & mask]);
    found += v != nullptr ? 1 : 0;
  }
  if (found != static_cast<std::uint64_t>(st.iterations())) st.SkipWithError("a get() missed");
}

// Registers `name` (ns per iteration; min_time 0: the command line's).
void add_bench(const std::string& name, void (*fn)(benchmark::State&), double min_time) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kNanosecond);
  if (min_time > 0) b->MinTime(min_time);
}
template <class R>
void add_read(const char* prefix, void (*fn)(benchmark::State&), double min_time) {
  add_bench(std::string(prefix) + R::name, fn, min_time);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  bench::keep_freed_memory();
  g_cached_ms.store(expiring::SystemClock{}.now_ms());
  (void)expiring::TscClock{}.now_ms();  // the once-per-process calibration, outside the timings

  std::size_t bytes = std::size_t{1} << 30;
  double min_time = 0.2;
  g_keys = 1000000;
  switch (cfg.mode) {
    case Mode::smoke:
      bytes = std::size_t{1} << 20;
      g_keys = 1000;
      min_time = 0;  // the command line's --benchmark_min_time
      break;
    case Mode::quick: break;
    case Mode::full:
      bytes = std::size_t{1} << 32;
      min_time = 1.0;
      break;
  }

  add_read<LoadRead>("read/", read_cost<LoadRead>, min_time);
#if EXPIRING_BENCH_X86
  add_read<RdtscRead>("read/", read_cost<RdtscRead>, min_time);
  add_read<LfenceRdtscRead>("read/", read_cost<LfenceRdtscRead>, min_time);
  add_read<RdtscpRead>("read/", read_cost<RdtscpRead>, min_time);
#endif
  add_read<TscRead>("read/", read_cost<TscRead>, min_time);
  add_read<CachedRead>("read/", read_cost<CachedRead>, min_time);
  add_read<SystemRead>("read/", read_cost<SystemRead>, min_time);

  add_read<NoRead>("miss/", miss_cost<NoRead>, min_time);
  add_read<LoadRead>("miss/", miss_cost<LoadRead>, min_time);
#if EXPIRING_BENCH_X86
  add_read<RdtscRead>("miss/", miss_cost<RdtscRead>, min_time);
#endif
  add_read<TscRead>("miss/", miss_cost<TscRead>, min_time);
#if EXPIRING_BENCH_X86
  add_read<LfenceRdtscRead>("miss/", miss_cost<LfenceRdtscRead>, min_time);
  add_read<RdtscpRead>("miss/", miss_cost<RdtscpRead>, min_time);
#endif
  add_read<SystemRead>("miss/", miss_cost<SystemRead>, min_time);
#if EXPIRING_BENCH_X86
  add_bench("place/rdtsc_before_load", place_cost<Place::before>, min_time);
  add_bench("place/rdtsc_after_load", place_cost<Place::after>, min_time);
  add_bench("place/rdtsc_per_256_loads", place_cost<Place::per256>, min_time);
#endif

  g_key_list = bench::make_keys<std::uint64_t>(g_keys);
  for (const std::uint32_t k : bench::random_order(g_keys, bench::pow2_at_least(g_keys * 4))) {
    g_lookups.push_back(g_key_list[k]);
  }
  add_bench("get/cached_clock", get_cost<expiring::CachedClock>, min_time);
  add_bench("get/tsc_clock", get_cost<expiring::TscClock>, min_time);
  add_bench("get/system_clock", get_cost<expiring::SystemClock>, min_time);

  make_array(bytes);
  benchmark::AddCustomContext("expiring_mode", bench::mode_name(cfg.mode));
  benchmark::AddCustomContext("expiring_miss_array_bytes", std::to_string(bytes));
  benchmark::AddCustomContext("expiring_get_keys", std::to_string(g_keys));
  benchmark::AddCustomContext("expiring_tsc_clock_uses_tsc", expiring::TscClock::uses_tsc() ? "yes" : "no");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_array.reset();
  StoreHolder<expiring::CachedClock>::store.reset();
  StoreHolder<expiring::TscClock>::store.reset();
  StoreHolder<expiring::SystemClock>::store.reset();
  return 0;
}
