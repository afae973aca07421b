// bench/bench_common.hpp: what the three benchmark programs share.
//
// * Run modes: smoke (ctest: tiny datasets, seconds), quick (the default of scripts/bench.sh,
//   about two minutes in all) and full (`--full` or EXPIRING_BENCH_FULL=1: adds 1e7 keys).
// * Key generators: distinct uint64_t keys and distinct std::string keys of 16-24 bytes
//   (always past libstdc++'s 15-byte inline buffer, so every key owns a heap block).
// * The contenders every figure is a ratio against, built with the same hash
//   (expiring::Hash<K>): the raw absl::flat_hash_map<K, V> (the limit) and the hand-written
//   peer (a value map plus a deadline map, checked on read: Redis 7's layout by hand).
// * The store under each expiry-index policy, chosen by a tag so that the same templated
//   helper runs both side by side. TimeOrderedExpiry is compiled in when the library defines
//   EXPIRING_HAS_TIME_ORDERED_EXPIRY.
// * CachedClock: a clock the store reads for the price of a load, as Redis reads its cached
//   `server.mstime` instead of calling gettimeofday() per key.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <dirent.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <absl/container/flat_hash_map.h>

#include <expiring/expiring.hpp>

namespace bench {

// ---- run mode ---------------------------------------------------------------------------

enum class Mode { smoke, quick, full };

inline bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// Reads the mode from the environment and argv; removes the flags it consumed from argv
// (--full, --quick, --smoke, --out=DIR) so that Google Benchmark does not see them. A
// --benchmark_min_time below 0.01 s (what ctest's smoke run passes) also selects smoke mode.
struct RunConfig {
  Mode mode = Mode::quick;
  std::string out_dir;  // where CSV/JSON go; empty = print only
};

inline RunConfig parse_args(int& argc, char** argv) {
  RunConfig cfg;
  bool smoke = env_on("EXPIRING_BENCH_SMOKE");
  bool full = env_on("EXPIRING_BENCH_FULL");
  int w = 1;
  for (int r = 1; r < argc; ++r) {
    const std::string a = argv[r];
    if (a == "--full") {
      full = true;
    } else if (a == "--quick") {
      full = false;
    } else if (a == "--smoke") {
      smoke = true;
    } else if (a.rfind("--out=", 0) == 0) {
      cfg.out_dir = a.substr(6);
    } else {
      if (a.rfind("--benchmark_min_time=", 0) == 0) {
        const double t = std::atof(a.c_str() + std::strlen("--benchmark_min_time="));
        if (t > 0 && t < 0.01) smoke = true;
      }
      argv[w++] = argv[r];
    }
  }
  argc = w;
  argv[argc] = nullptr;
  cfg.mode = smoke ? Mode::smoke : (full ? Mode::full : Mode::quick);
  return cfg;
}

inline const char* mode_name(Mode m) {
  return m == Mode::smoke ? "smoke" : (m == Mode::quick ? "quick" : "full");
}

// Keeps freed memory in the process (no trimming, no mmap below 32 MiB), as a long-running
// server's allocator does once warm: a table built after a warm-up then measures the table,
// not this VM's page faults (several microseconds each here).
inline void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// ---- keys -------------------------------------------------------------------------------

inline std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// splitmix64 is a bijection, so key i is distinct from key j for i != j. `salt` gives a
// disjoint family (the keys of a second batch).
template <class K>
K make_key(std::uint64_t i, std::uint64_t salt = 0);

template <>
inline std::uint64_t make_key<std::uint64_t>(std::uint64_t i, std::uint64_t salt) {
  return splitmix64(i ^ (salt << 40));
}

// 16 hex digits of a bijection of i (distinct), then 0-8 filler bytes: 16-24 bytes in all.
template <>
inline std::string make_key<std::string>(std::uint64_t i, std::uint64_t salt) {
  static const char* hex = "0123456789abcdef";
  const std::uint64_t h = splitmix64(i ^ (salt << 40));
  std::string s(16, '0');
  for (int d = 0; d < 16; ++d) s[static_cast<std::size_t>(d)] = hex[(h >> (4 * d)) & 15];
  const std::size_t extra = static_cast<std::size_t>(splitmix64(h) % 9);
  s.append(extra, ':');
  return s;
}

template <class K>
std::vector<K> make_keys(std::size_t n, std::uint64_t salt = 0) {
  std::vector<K> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(make_key<K>(i, salt));
  return v;
}

// A random access order over [0, n): `len` indices (len a power of two so the hot loop
// masks instead of dividing).
inline std::vector<std::uint32_t> random_order(std::size_t n, std::size_t len, std::uint64_t seed = 42) {
  std::vector<std::uint32_t> v(len);
  std::uint64_t s = seed;
  for (auto& x : v) x = static_cast<std::uint32_t>((s = splitmix64(s)) % n);
  return v;
}

// The median of samples as the benches report it: the upper middle one of an even count
// (no average of two runs), 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

inline std::size_t pow2_at_least(std::size_t n) {
  std::size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

template <class K>
const char* key_name() {
  return std::is_same_v<K, std::string> ? "str" : "u64";
}

// ---- clocks -----------------------------------------------------------------------------

// The cached clock: one global reading, refreshed by the bench (Redis's server.mstime).
struct CachedClock {
  static inline std::int64_t now = 0;
  std::int64_t now_ms() const noexcept { return now; }
  static void refresh() noexcept { now = expiring::SystemClock{}.now_ms(); }
};

inline std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---- contenders -------------------------------------------------------------------------

using Value = std::uint64_t;

template <class K>
using RawMap = absl::flat_hash_map<K, Value, expiring::Hash<K>, std::equal_to<>>;

// The hand-written peer: Redis 7's two dicts (keyspace + expires), each with its own copy
// of the key, the deadline checked on every read (lookupKey -> expireIfNeeded).
template <class K>
struct Peer {
  absl::flat_hash_map<K, Value, expiring::Hash<K>, std::equal_to<>> values;
  absl::flat_hash_map<K, std::int64_t, expiring::Hash<K>, std::equal_to<>> deadlines;

  const Value* get(const K& k, std::int64_t now) {
    auto it = values.find(k);
    if (it == values.end()) return nullptr;
    auto d = deadlines.find(k);
    if (d != deadlines.end() && now > d->second) {
      deadlines.erase(d);
      values.erase(it);
      return nullptr;
    }
    return &it->second;
  }
  void set_ttl(const K& k, Value v, std::int64_t deadline) {
    values.insert_or_assign(k, v);
    deadlines.insert_or_assign(k, deadline);
  }
  void set(const K& k, Value v) {
    values.insert_or_assign(k, v);
    deadlines.erase(k);
  }
  bool del(const K& k) {
    deadlines.erase(k);
    return values.erase(k) != 0;
  }
};

// ---- policies ---------------------------------------------------------------------------

struct Sampled {
  static constexpr const char* name = "sampled";
};
struct TimeOrdered {
  static constexpr const char* name = "time_ordered";
};

template <class K, class V, class Clock, class Policy>
struct StoreFor;

#if defined(EXPIRING_HAS_TIME_ORDERED_EXPIRY)
#define EXPIRING_BENCH_TIME_ORDERED 1
template <class K, class V, class Clock>
struct StoreFor<K, V, Clock, Sampled> {
  using type = expiring::ExpiringStore<K, V, expiring::Hash<K>, std::equal_to<>, Clock, expiring::SampledExpiry>;
};
template <class K, class V, class Clock>
struct StoreFor<K, V, Clock, TimeOrdered> {
  using type = expiring::ExpiringStore<K, V, expiring::Hash<K>, std::equal_to<>, Clock, expiring::TimeOrderedExpiry>;
};
#else
#define EXPIRING_BENCH_TIME_ORDERED 0
template <class K, class V, class Clock>
struct StoreFor<K, V, Clock, Sampled> {
  using type = expiring::ExpiringStore<K, V, expiring::Hash<K>, std::equal_to<>, Clock>;
};
#endif

template <class K, class Clock, class Policy>
using Store = typename StoreFor<K, Value, Clock, Policy>::type;

// Calls f(Policy{}) for each policy compiled in.
template <class F>
void for_each_policy(F&& f) {
  f(Sampled{});
#if EXPIRING_BENCH_TIME_ORDERED
  f(TimeOrdered{});
#endif
}

// ---- output -----------------------------------------------------------------------------

// Appends rows to a CSV file (header written when the file is new).
class Csv {
 public:
  Csv(const std::string& dir, const std::string& name, const std::string& header) {
    if (dir.empty()) return;
    const std::string path = dir + "/" + name;
    f_ = std::fopen(path.c_str(), "w");
    if (f_ == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      std::exit(1);
    }
    std::fprintf(f_, "%s\n", header.c_str());
  }
  ~Csv() {
    if (f_ != nullptr) std::fclose(f_);
  }
  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;
  void row(const std::string& line) {
    if (f_ != nullptr) std::fprintf(f_, "%s\n", line.c_str());
  }

 private:
  std::FILE* f_ = nullptr;
};

// Tiny printf into std::string.
__attribute__((format(printf, 1, 2))) inline std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// A directory of its own under $TMPDIR (or /tmp), removed with its files at the end (the
// benches that write files: a snapshot, a log). Aborts if it cannot be made.
struct TempDir {
  std::string path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/expiring-bench-XXXXXX";
    if (::mkdtemp(path.data()) == nullptr) {
      std::fprintf(stderr, "bench: cannot make a directory under %s\n", path.c_str());
      std::abort();
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (DIR* d = ::opendir(path.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string f = e->d_name;
        if (f != "." && f != "..") ::unlink((path + "/" + f).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
};

}  // namespace bench
