// bench/bench_hash_fields.cpp: FieldMap (issue 14, work in progress), by the allocator and the clock.
//
// Memory: the live heap bytes, as malloc_usable_size reports them (bench/alloc_counter.hpp),
// of 1e6 fields in 1 hash and in 1e4 hashes of 100, built from empty (natural growth), with
// no field TTL and with a TTL on every field. The goal is at most 8 bytes of field-expiry
// metadata per field:
//   expiry bytes per field = (bytes with TTLs - bytes without) / fields      goal: <= 8
// Redis 7.4's ebuckets cost about 16-25 B per field in hashtable-encoded hashes (derived
// from its layout, docs/design/hash_fields_research.md section 5); Valkey 9 quotes 16-29 B.
// The total bytes per field of an absl::flat_hash_map<std::string, std::string> per hash,
// with no TTL support, are printed beside for scale.
//
// CPU: with deadlines uniform over 100 s and a tick every 100 ms, every field is reclaimed in
// deadline order (the store's index is simulated by each hash's cached earliest deadline),
// against HDEL of every field in the same global deadline order (the same memory access
// pattern). Smoke mode (ctest) uses 1e4 fields.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <expiring/field_map.hpp>
#include <expiring/hash.hpp>

#include "bench_common.hpp"

#include "alloc_counter.hpp"

namespace {

using Map = expiring::FieldMap<std::string, std::string>;
using clk = std::chrono::steady_clock;

std::vector<std::string> field_names(std::size_t n) {
  std::vector<std::string> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back("field:" + std::to_string(i));  // 7-12 bytes: inline strings
  return v;
}

struct MemoryRow {
  double plain = 0, timed = 0, absl = 0;  // bytes per field
};

MemoryRow memory(std::size_t hashes, std::size_t per, const std::vector<std::string>& names) {
  MemoryRow row;
  const double fields = static_cast<double>(hashes * per);
  {
    const std::size_t before = g_live;
    std::vector<Map> maps(hashes);
    for (auto& m : maps)
      for (std::size_t i = 0; i < per; ++i) m.assign(names[i], std::string("v"));
    row.plain = static_cast<double>(g_live - before) / fields;
  }
  {
    const std::size_t before = g_live;
    std::vector<Map> maps(hashes);
    std::int64_t d = 1'000'000;
    for (auto& m : maps) {
      for (std::size_t i = 0; i < per; ++i) m.set_deadline(m.assign(names[i], std::string("v")).first, d++);
      (void)m.earliest_deadline();  // builds the due-list of a big hash
    }
    row.timed = static_cast<double>(g_live - before) / fields;
  }
  {
    const std::size_t before = g_live;
    std::vector<absl::flat_hash_map<std::string, std::string>> maps(hashes);
    for (auto& m : maps)
      for (std::size_t i = 0; i < per; ++i) m.emplace(names[i], "v");
    row.absl = static_cast<double>(g_live - before) / fields;
  }
  return row;
}

struct CpuRow {
  double reclaim_ns = 0, hdel_ns = 0;
};

CpuRow cpu(std::size_t hashes, std::size_t per, const std::vector<std::string>& names) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::int64_t> t(1, 100'000);
  std::vector<Map> timed(hashes);
  std::vector<Map> plain(hashes);
  std::vector<std::tuple<std::int64_t, std::uint32_t, std::uint32_t>> order;
  for (std::size_t h = 0; h < hashes; ++h) {
    for (std::size_t i = 0; i < per; ++i) {
      const std::int64_t d = t(rng);
      timed[h].set_deadline(timed[h].assign(names[i], std::string("v")).first, d);
      plain[h].assign(names[i], std::string("v"));
      order.emplace_back(d, static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(i));
    }
  }
  std::sort(order.begin(), order.end());
  CpuRow row;
  std::vector<std::int64_t> next(hashes);
  for (std::size_t h = 0; h < hashes; ++h) next[h] = timed[h].earliest_deadline();
  std::size_t reclaimed = 0;
  const auto t0 = clk::now();
  for (std::int64_t now = 100; now <= 100'100; now += 100) {
    for (std::size_t h = 0; h < hashes; ++h) {
      if (!(now > next[h])) continue;
      reclaimed += timed[h].reclaim_due(now, SIZE_MAX, [](Map::Field&, std::int64_t) {});
      next[h] = timed[h].earliest_deadline();
    }
  }
  row.reclaim_ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(reclaimed);
  std::size_t deleted = 0;
  const auto t1 = clk::now();
  for (const auto& [d, h, i] : order) {
    plain[h].erase(plain[h].find(names[i]));
    ++deleted;
  }
  row.hdel_ns = std::chrono::duration<double, std::nano>(clk::now() - t1).count() / static_cast<double>(deleted);
  if (reclaimed != hashes * per || deleted != hashes * per) std::printf("bench_hash_fields: MISCOUNT\n");
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const std::size_t total = cfg.mode == bench::Mode::smoke ? 10'000 : 1'000'000;
  const std::vector<std::string> names = field_names(total);
  std::printf("bench_hash_fields: %zu fields (FieldMap<std::string, std::string>, values of 1 byte)\n\n", total);
  std::printf("%-22s %14s %14s %14s %16s\n", "shape", "no TTL B/f", "all TTL B/f", "expiry B/f", "absl map B/f");
  for (const std::size_t hashes : {std::size_t{1}, total / 100}) {
    const MemoryRow m = memory(hashes, total / hashes, names);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%zu x %zu", hashes, total / hashes);
    std::printf("%-22s %14.2f %14.2f %14.2f %16.2f   goal <= 8: %s\n", shape, m.plain, m.timed, m.timed - m.plain, m.absl,
                m.timed - m.plain <= 8.0 ? "pass" : "MISS");
  }
  std::printf("\n%-22s %22s %22s %10s\n", "shape", "reclaim, time order ns/f", "HDEL, same order ns/f", "ratio");
  for (const std::size_t hashes : {std::size_t{1}, total / 100}) {
    const CpuRow c = cpu(hashes, total / hashes, names);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%zu x %zu", hashes, total / hashes);
    std::printf("%-22s %22.0f %22.0f %9.2fx\n", shape, c.reclaim_ns, c.hdel_ns, c.reclaim_ns / c.hdel_ns);
  }
  return 0;
}
