// bench/bench_memory.cpp: G3, bytes per key counted by the allocator.
//
// Every global operator new/delete of this program goes through a hook that keeps the live
// byte count, as malloc_usable_size() reports it (what the allocator really hands out, as
// Redis's used_memory counts with zmalloc_size). A contender's footprint is the live bytes
// after building it from empty with N keys (natural growth, no reserve) minus the live bytes
// before; the key vector the keys are copied from exists before, so a std::string key's heap
// block is counted once per copy the contender keeps.
//
// Contenders: the raw absl::flat_hash_map<K, V>; the peer (value map, plus a deadline map
// when keys have a TTL); the store under each policy, all keys persistent or all volatile.
//
// Output: memory.csv (key, n, contender, policy, ttl, bytes, bytes_per_key) for the plot of
// bytes per key against table size, and memory_summary.csv with the G3 figures at the
// reporting sizes (1e4, 1e6, and 1e7 in full mode):
//   expiry bytes per volatile key = (bytes with TTL - bytes without) / N      G3: <= 16
//   total ratio                   = store bytes with TTL / raw map bytes       G3: <= 1.35
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_common.hpp"

// ---- the allocation hook: bench/alloc_counter.hpp ---------------------------------------
#include "alloc_counter.hpp"

// ---- measurements ------------------------------------------------------------------------

namespace {

using namespace bench;

constexpr std::int64_t kTtlMs = 3600 * 1000;

struct Row {
  std::string key;
  std::size_t n;
  std::string contender;  // raw, peer, store
  std::string policy;     // -, sampled, time_ordered
  bool ttl;
  std::size_t bytes;
};

// Live bytes that building `make()` with the first n keys leaves allocated.
template <class Build>
std::size_t footprint(Build&& build) {
  const std::size_t before = g_live;
  auto holder = build();
  const std::size_t after = g_live;
  holder.reset();
  if (g_live != before) {
    std::fprintf(stderr, "bench_memory: %zu bytes not freed\n", g_live - before);
  }
  return after - before;
}

template <class K>
void measure(const std::vector<K>& keys, std::size_t n, std::vector<Row>& rows) {
  const std::string kn = key_name<K>();
  rows.push_back({kn, n, "raw", "-", false, footprint([&] {
                    auto m = std::make_unique<RawMap<K>>();
                    for (std::size_t i = 0; i < n; ++i) m->try_emplace(keys[i], Value{i});
                    return m;
                  })});
  for (const bool ttl : {false, true}) {
    rows.push_back({kn, n, "peer", "-", ttl, footprint([&] {
                      auto m = std::make_unique<Peer<K>>();
                      for (std::size_t i = 0; i < n; ++i) {
                        if (ttl) {
                          m->set_ttl(keys[i], Value{i}, CachedClock::now + kTtlMs);
                        } else {
                          m->set(keys[i], Value{i});
                        }
                      }
                      return m;
                    })});
  }
  for_each_policy([&](auto pol) {
    using P = decltype(pol);
    using S = Store<K, CachedClock, P>;
    for (const bool ttl : {false, true}) {
      rows.push_back({kn, n, "store", P::name, ttl, footprint([&] {
                        expiring::Options o;
                        o.seed = 42;
                        auto s = std::make_unique<S>(CachedClock{}, o);
                        for (std::size_t i = 0; i < n; ++i) {
                          if (ttl) {
                            (void)s->set(keys[i], Value{i}, expiring::Px{kTtlMs});
                          } else {
                            (void)s->set(keys[i], Value{i});
                          }
                        }
                        return s;
                      })});
    }
  });
}

// Bytes per key of the expiry fields every entry carries whether or not it has a TTL (the
// deadline; with the timer wheel also its bucket and position there): invisible to the
// with-minus-without difference, so reported beside it. Entries live inline in the store's
// table, which at n keys (natural growth) has SlotTable::groups_for(n) groups of 15 slots.
template <class P>
struct MetaOf;
template <>
struct MetaOf<Sampled> {
  using type = expiring::detail::VolatileBitmap::entry_meta;
};
#if EXPIRING_BENCH_TIME_ORDERED
template <>
struct MetaOf<TimeOrdered> {
  using type = expiring::detail::TimerWheel::entry_meta;
};
#endif
template <class K, class P>
double embedded_bytes_per_key(std::size_t n) {
  struct Bare {
    K key;
    Value value;
  };
  using E = expiring::detail::Entry<K, Value, typename MetaOf<P>::type>;
  const std::size_t slots = expiring::detail::SlotTable<E>::groups_for(n) * expiring::detail::kGroupSlots;
  return static_cast<double>(sizeof(E) - sizeof(Bare)) * static_cast<double>(slots) / static_cast<double>(n);
}

const Row* find(const std::vector<Row>& rows, const std::string& key, std::size_t n, const std::string& contender,
                const std::string& policy, bool ttl) {
  for (const Row& r : rows) {
    if (r.key == key && r.n == n && r.contender == contender && r.policy == policy && r.ttl == ttl) return &r;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const RunConfig cfg = parse_args(argc, argv);
  CachedClock::refresh();
  // A fixed mmap threshold: glibc's dynamic one moves after the first large free, so the same
  // table would otherwise be page-rounded (mmap) in one measurement and not in the next.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);

  std::size_t max_n = 1000000;
  std::vector<std::size_t> report = {10000, 1000000};
  int steps_per_decade = 5;
  if (cfg.mode == Mode::smoke) {
    max_n = 10000;
    report = {10000};
    steps_per_decade = 2;
  } else if (cfg.mode == Mode::full) {
    max_n = 10000000;
    report = {10000, 1000000, 10000000};
    steps_per_decade = 5;
  }
  // Log-spaced sizes from 1e3 to max_n; the reporting sizes are on the grid.
  std::vector<std::size_t> sizes;
  for (int k = 0;; ++k) {
    const double x = 1000.0 * std::pow(10.0, static_cast<double>(k) / steps_per_decade);
    const auto n = static_cast<std::size_t>(std::llround(x));
    if (n > std::min<std::size_t>(max_n, 1000000)) break;
    sizes.push_back(n);
  }
  // Above 1e6 (full mode) only the reporting size: each 1e7 table takes seconds to build.
  for (std::size_t n : report) {
    if (n > 1000000) sizes.push_back(n);
  }

  std::vector<Row> rows;
  {
    const std::vector<std::uint64_t> keys = make_keys<std::uint64_t>(max_n);
    std::vector<Row> warmup;  // first-use allocations of the libraries are not a table's
    measure(keys, 1000, warmup);
    for (std::size_t n : sizes) measure(keys, n, rows);
  }
  {
    const std::vector<std::string> keys = make_keys<std::string>(max_n);
    for (std::size_t n : sizes) measure(keys, n, rows);
  }

  Csv csv(cfg.out_dir, "memory.csv", "key,n,contender,policy,ttl,bytes,bytes_per_key");
  for (const Row& r : rows) {
    csv.row(fmt("%s,%zu,%s,%s,%d,%zu,%.3f", r.key.c_str(), r.n, r.contender.c_str(), r.policy.c_str(), r.ttl ? 1 : 0,
                r.bytes, static_cast<double>(r.bytes) / static_cast<double>(r.n)));
  }

  // G3 at the reporting sizes.
  Csv sum(cfg.out_dir, "memory_summary.csv",
          "key,n,contender,policy,bytes_per_key_nottl,bytes_per_key_ttl,expiry_bytes_per_key,raw_bytes_per_key,"
          "ratio_ttl_vs_raw,ratio_nottl_vs_raw,embedded_expiry_bytes_per_key");
  std::printf("%-4s %9s %-20s %10s %10s %12s %8s %8s %s\n", "key", "n", "contender", "B/key", "B/key TTL",
              "expiry B/key", "vs raw", "(no TTL)", "fields in every entry");
  for (const char* kn : {"u64", "str"}) {
    for (std::size_t n : report) {
      const Row* raw = find(rows, kn, n, "raw", "-", false);
      if (raw == nullptr) continue;
      const double rawb = static_cast<double>(raw->bytes) / static_cast<double>(n);
      std::printf("%-4s %9zu %-20s %10.1f %10s %12s %8s %8s\n", kn, n, "raw", rawb, "-", "-", "1.00x", "");
      std::vector<std::pair<std::string, std::string>> cs = {{"peer", "-"}};
      std::vector<double> embedded = {0.0};
      for_each_policy([&](auto pol) {
        using P = decltype(pol);
        cs.emplace_back("store", P::name);
        embedded.push_back(std::string(kn) == "u64" ? embedded_bytes_per_key<std::uint64_t, P>(n)
                                                    : embedded_bytes_per_key<std::string, P>(n));
      });
      for (std::size_t ci = 0; ci < cs.size(); ++ci) {
        const auto& [c, p] = cs[ci];
        const Row* a = find(rows, kn, n, c, p, false);
        const Row* b = find(rows, kn, n, c, p, true);
        if (a == nullptr || b == nullptr) continue;
        const double na = static_cast<double>(a->bytes) / static_cast<double>(n);
        const double nb = static_cast<double>(b->bytes) / static_cast<double>(n);
        const std::string label = c == "peer" ? c : c + ":" + p;
        std::printf("%-4s %9zu %-20s %10.1f %10.1f %12.1f %7.2fx %7.2fx %.1f\n", kn, n, label.c_str(), na, nb, nb - na,
                    nb / rawb, na / rawb, embedded[ci]);
        sum.row(fmt("%s,%zu,%s,%s,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.3f", kn, n, c.c_str(), p.c_str(), na, nb, nb - na,
                    rawb, nb / rawb, na / rawb, embedded[ci]));
      }
    }
  }
  std::printf("mode=%s; bytes = malloc_usable_size of live blocks; Redis 7.0.15: 40.4 B per TTL key\n",
              mode_name(cfg.mode));
  return 0;
}
