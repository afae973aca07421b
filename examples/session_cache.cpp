// session_cache: spreading a key storm with TTL jitter.
//
// A login burst writes 10,000 sessions in the same second, all with a 30-minute TTL. Without
// jitter they all expire in the same second, and whatever refreshes them (a database, an auth
// service) gets the whole burst again at once. With +-10% jitter on each TTL, expirations
// spread over six minutes. The example counts expirations per minute with tick() on a fake
// clock and prints both histograms.
#include <expiring/expiring.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using Store = expiring::Store<std::string, std::string, expiring::ManualClock>;

constexpr int kSessions = 10'000;
constexpr std::int64_t kTtlMs = 30 * 60 * 1000;

// Expirations per minute, from 26 to 34 minutes after the burst.
std::vector<int> run(double jitter) {
  expiring::ManualClock clock{1'700'000'000'000};
  const std::int64_t t0 = clock.now_ms();
  Store store{clock};
  std::mt19937_64 rng{42};
  std::uniform_real_distribution<double> spread{-jitter, jitter};
  for (int i = 0; i < kSessions; ++i) {
    const auto ttl = static_cast<std::int64_t>(static_cast<double>(kTtlMs) * (1.0 + spread(rng)));
    store.set("session:" + std::to_string(i), "user-" + std::to_string(i), expiring::Px{ttl}).value();
  }
  std::vector<int> per_minute(9, 0);
  std::uint64_t seen = 0;
  // Tick ten times a second, as a server at hz 10 would, through the window of interest.
  for (std::int64_t t = t0 + 26 * 60'000; t < t0 + 35 * 60'000; t += 100) {
    clock.set(t);
    store.tick();
    const std::uint64_t expired = store.stats().expired_keys;
    const auto minute = static_cast<std::size_t>((t - t0) / 60'000 - 26);
    if (minute < per_minute.size()) per_minute[minute] += static_cast<int>(expired - seen);
    seen = expired;
  }
  return per_minute;
}

void print(const char* title, const std::vector<int>& per_minute) {
  std::printf("%s\n", title);
  for (std::size_t m = 0; m < per_minute.size(); ++m) {
    std::printf("  minute %2zu: %5d ", m + 26, per_minute[m]);
    for (int i = 0; i < per_minute[m] / 200; ++i) std::putchar('#');
    std::putchar('\n');
  }
}

}  // namespace

int main() {
  print("expirations per minute, no jitter:", run(0.0));
  print("expirations per minute, TTL jitter +-10%:", run(0.10));
  return 0;
}
