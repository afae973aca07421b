#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>
#include <algorithm>
#include <tuple>
#include "expiring/field_map.hpp"
#include "expiring/hash.hpp"
using Map = expiring::FieldMap<std::string, std::string>;
using clk = std::chrono::steady_clock;
int main() {
  const expiring::Hash<std::string> H{expiring::HashKey::from_seed(1)};
  for (const std::size_t hashes : {std::size_t{1}, std::size_t{10000}}) {
    const std::size_t per = 1'000'000 / hashes;
    std::mt19937_64 rng(3);
    std::uniform_int_distribution<std::int64_t> t(1, 100'000);
    std::vector<Map> maps(hashes), maps2(hashes);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < per; ++i) names.push_back("field:" + std::to_string(i));
    for (std::size_t h = 0; h < hashes; ++h)
      for (std::size_t i = 0; i < per; ++i) {
        auto p = maps[h].assign(H, names[i], std::string("v")).first;
        maps[h].set_deadline(p, t(rng));
        maps2[h].assign(H, names[i], std::string("v"));
      }
    std::size_t total = 0;
    // The store's index, simulated: each hash's earliest deadline, visited only when due.
    std::vector<std::int64_t> next(hashes);
    for (std::size_t h = 0; h < hashes; ++h) next[h] = maps[h].earliest_deadline();
    const auto t0 = clk::now();
    for (std::int64_t now = 100; now <= 100'100; now += 100)
      for (std::size_t h = 0; h < hashes; ++h) {
        if (!(now > next[h])) continue;
        total += maps[h].reclaim_due(H, now, SIZE_MAX, [](Map::Field&, std::int64_t) {});
        next[h] = maps[h].earliest_deadline();
      }
    const double reclaim = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(total);
    // HDEL of every field in the same global deadline order (the same memory access pattern).
    std::mt19937_64 rng2(3);
    std::vector<std::tuple<std::int64_t, std::uint32_t, std::uint32_t>> order;
    for (std::size_t h = 0; h < hashes; ++h)
      for (std::size_t i = 0; i < per; ++i) order.emplace_back(t(rng2), static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(i));
    std::sort(order.begin(), order.end());
    std::size_t dels = 0;
    const auto t1 = clk::now();
    for (const auto& [d, h, i] : order) {
      auto p = maps2[h].find(H, names[i]);
      maps2[h].erase(H, p);
      ++dels;
    }
    const double hdel = std::chrono::duration<double, std::nano>(clk::now() - t1).count() / static_cast<double>(dels);
    std::printf("%zu hashes x %zu fields: reclaim in time order %.0f ns/field, hdel %.0f ns/field (%.2fx)\n", hashes, per,
                reclaim, hdel, reclaim / hdel);
  }
}
