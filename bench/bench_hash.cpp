// bench/bench_hash.cpp: the cost of a keyed hash, and what it buys.
//
// Hashes per second of the default expiring::Hash (XXH3 keyed by a random secret),
// expiring::SipHash (SipHash-1-3, keyed) and unkeyed XXH3 (what the store used before it was
// keyed, and what the crafted-key flood breaks), over u64 keys and string keys of 8-128 bytes. Then
// the flood itself: inserting N crafted 32-byte keys into a store against N random ones,
// with each hash, as a ratio (1.0 = the attack does nothing).
//
//   bench_hash                       the hash throughput table (Google Benchmark)
//   bench_hash --flood               adds the flood ratio table (about 10 s)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <expiring/expiring.hpp>

namespace {

struct UnkeyedXxh3 {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return XXH3_64bits(s.data(), s.size()); }
  std::size_t operator()(std::uint64_t v) const noexcept { return XXH3_64bits(&v, sizeof v); }
};

std::vector<std::string> strings_of(std::size_t len, std::size_t n) {
  std::mt19937_64 rng(len);
  std::vector<std::string> v(n, std::string(len, '\0'));
  for (auto& s : v) {
    for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
  }
  return v;
}

template <class H>
void BM_string(benchmark::State& state) {
  const H h{};
  const auto keys = strings_of(static_cast<std::size_t>(state.range(0)), 1024);
  std::size_t i = 0, acc = 0;
  for (auto _ : state) {
    acc += h(std::string_view{keys[i++ & 1023]});
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations());
}

template <class H>
void BM_u64(benchmark::State& state) {
  const H h{};
  std::uint64_t k = 12345, acc = 0;
  for (auto _ : state) {
    acc += h(k++);
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_TEMPLATE(BM_string, expiring::Hash<std::string>)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128);
BENCHMARK_TEMPLATE(BM_string, expiring::SipHash<std::string>)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128);
BENCHMARK_TEMPLATE(BM_string, UnkeyedXxh3)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Arg(128);
BENCHMARK_TEMPLATE(BM_u64, expiring::Hash<std::uint64_t>);
BENCHMARK_TEMPLATE(BM_u64, expiring::SipHash<std::uint64_t>);
BENCHMARK_TEMPLATE(BM_u64, UnkeyedXxh3);

// ---- the flood ------------------------------------------------------------------------------

std::vector<std::string> crafted(std::size_t n) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char b[32];
    std::memcpy(b, XXH3_kSecret, 8);
    std::memcpy(b + 16, XXH3_kSecret + 16, 8);
    const std::uint64_t lo = i * 0x9E3779B97F4A7C15ull, hi = ~i;
    std::memcpy(b + 8, &lo, 8);
    std::memcpy(b + 24, &hi, 8);
    keys.emplace_back(reinterpret_cast<const char*>(b), sizeof b);
  }
  return keys;
}

template <class H>
double insert_seconds(const std::vector<std::string>& keys) {
  expiring::ManualClock clock{1'000'000};
  expiring::ExpiringStore<std::string, std::string, H, std::equal_to<>, expiring::ManualClock&> store{clock};
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& k : keys) (void)store.set(k, "v");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class H>
void flood_row(const char* name, std::size_t n) {
  const auto bad = crafted(n);
  const auto good = strings_of(32, n);
  double b = 1e9, g = 1e9;
  for (int r = 0; r < 3; ++r) {
    g = std::min(g, insert_seconds<H>(good));
    b = std::min(b, insert_seconds<H>(bad));
  }
  std::printf("| %-22s | %8zu | %10.2f | %10.2f | %7.2fx |\n", name, n, g * 1e3, b * 1e3, b / g);
}

}  // namespace

int main(int argc, char** argv) {
  bool flood = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--flood") {
      flood = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  if (flood) {
    std::printf("\nCrafted-key flood: insert N keys into a store, best of 3\n");
    std::printf("| hash                   |        N | random ms | crafted ms |   ratio |\n");
    std::printf("|---|---|---|---|---|\n");
    flood_row<expiring::Hash<std::string>>("Hash (XXH3 + secret)", 200'000);
    flood_row<expiring::SipHash<std::string>>("SipHash (SipHash-1-3)", 200'000);
    flood_row<UnkeyedXxh3>("unkeyed XXH3 (before)", 10'000);
  }
  return 0;
}
