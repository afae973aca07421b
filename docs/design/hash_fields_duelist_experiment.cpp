// Experiment: reclaim fields of one big hash in time order with a bounded due-list (layout d)
// vs a full rescan per tick (layout a). Deadlines only (no field/value payload): CPU of the index.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

using clk = std::chrono::steady_clock;
constexpr std::int64_t kNone = INT64_MAX;

struct Hash {
  std::vector<std::int64_t> dl;      // deadline per field (kNone = reclaimed/persistent)
  std::vector<std::uint32_t> due;    // indices, sorted by deadline, K earliest at build time
  std::size_t head = 0;
  std::size_t live = 0;
  std::uint64_t compares = 0, rebuilds = 0; double build_ns = 0, sort_ns = 0;
  std::mt19937_64 rng{7};
  // A threshold T near the K-th smallest deadline, from a sample; then one sequential pass takes
  // every live field with deadline <= T (about K), sorted by (deadline, index) pairs.
  void build(std::size_t K) {
    const auto b0 = clk::now();
    due.clear(); head = 0; ++rebuilds;
    std::vector<std::int64_t> sample;
    std::uniform_int_distribution<std::size_t> pick(0, dl.size() - 1);
    for (int i = 0; i < 1024 && sample.size() < 256; ++i) { const auto d = dl[pick(rng)]; if (d != kNone) sample.push_back(d); }
    std::int64_t T = kNone - 1;
    if (!sample.empty() && live > K) {
      std::sort(sample.begin(), sample.end());
      const double q = static_cast<double>(K) / static_cast<double>(live);
      T = sample[std::min(sample.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sample.size())))];
    }
    std::vector<std::pair<std::int64_t, std::uint32_t>> got;
    got.reserve(K + K / 2);
    for (std::uint32_t i = 0; i < dl.size(); ++i) if (dl[i] <= T) got.emplace_back(dl[i], i);
    compares += dl.size();
    const auto s0 = clk::now();
    if (got.size() > 2 * K) {
      std::nth_element(got.begin(), got.begin() + static_cast<long>(K), got.end());
      got.resize(K);
    }
    // A counting sort on deadline - min when the span is small (it is: the K earliest of n
    // deadlines span about K/n of the hash's spread), else a comparison sort.
    std::int64_t lo = kNone, hi = 0;
    for (auto& g : got) { lo = std::min(lo, g.first); hi = std::max(hi, g.first); }
    if (!got.empty() && hi - lo < (1 << 16)) {
      const std::size_t span = static_cast<std::size_t>(hi - lo) + 1;
      std::vector<std::uint32_t> count(span + 1, 0);
      for (auto& g : got) ++count[static_cast<std::size_t>(g.first - lo) + 1];
      for (std::size_t i = 1; i <= span; ++i) count[i] += count[i - 1];
      std::vector<std::pair<std::int64_t, std::uint32_t>> out(got.size());
      for (auto& g : got) out[count[static_cast<std::size_t>(g.first - lo)]++] = g;
      got.swap(out);
    } else {
      std::sort(got.begin(), got.end());
    }
    sort_ns += std::chrono::duration<double, std::nano>(clk::now() - s0).count();
    if (got.size() > 2 * K) got.resize(2 * K);
    for (auto& g : got) due.push_back(g.second);
    if (due.empty() && live > 0) { // threshold below every live deadline: take the minimum alone
      std::uint32_t best = 0; std::int64_t bd = kNone;
      for (std::uint32_t i = 0; i < dl.size(); ++i) if (dl[i] < bd) { bd = dl[i]; best = i; }
      if (bd != kNone) due.push_back(best);
    }
    build_ns += std::chrono::duration<double, std::nano>(clk::now() - b0).count();
  }
  // Reclaims every field with deadline < now; returns the count.
  std::size_t reclaim_d(std::int64_t now, std::size_t K) {
    std::size_t n = 0;
    for (;;) {
      if (head == due.size()) { if (live == 0) break; build(K); if (due.empty()) break; }
      const std::uint32_t i = due[head];
      if (dl[i] >= now) break;
      dl[i] = kNone; --live; ++n; ++head;
    }
    return n;
  }
  std::size_t reclaim_a(std::int64_t now) {
    std::size_t n = 0;
    for (auto& d : dl) if (d < now) { d = kNone; ++n; }
    compares += dl.size();
    live -= n;
    return n;
  }
};

int main() {
  const std::size_t N = 1'000'000;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> t(0, 100'000);  // due over 100 s
  {
    // The floor: a perfect time order given for free (sorted once, untimed); reclaiming only
    // writes each field's deadline, a random access as any reclaim's (or HDEL's) is.
    std::vector<std::int64_t> dl(N);
    for (auto& d : dl) d = t(rng);
    std::vector<std::uint32_t> order(N);
    for (std::uint32_t i = 0; i < N; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return dl[a] < dl[b]; });
    std::size_t pos = 0, total = 0;
    const auto t0 = clk::now();
    for (std::int64_t now = 100; now <= 100'100; now += 100) {
      while (pos < N && dl[order[pos]] < now) { dl[order[pos]] = kNone; ++pos; ++total; }
    }
    const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
    std::printf("floor (perfect order): %.1f ns per field\n", ns / static_cast<double>(total));
  }
  for (int layout = 0; layout < 2; ++layout) {
    Hash h;
    h.dl.resize(N);
    for (auto& d : h.dl) d = t(rng);
    h.live = N;
    const std::size_t K = std::clamp<std::size_t>(N / 32, 16, 65536);
    std::size_t total = 0;
    const auto t0 = clk::now();
    for (std::int64_t now = 100; now <= 100'100; now += 100) total += layout == 0 ? h.reclaim_d(now, K) : h.reclaim_a(now);
    const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
    std::printf("%s: reclaimed %zu in 1001 ticks, %.1f ns per field, %llu rebuilds, due-list %zu B (%.3f B/field)\n",
                layout == 0 ? "d (due-list K=n/32)" : "a (rescan per tick)", total, ns / static_cast<double>(total),
                static_cast<unsigned long long>(h.rebuilds), K * 4, static_cast<double>(K * 4) / N);
    std::printf("   builds %.1f ms (sorting %.1f ms)\n", h.build_ns / 1e6, h.sort_ns / 1e6);
    std::printf("   (pass sizes: K=%zu)\n", K);
  }
}
