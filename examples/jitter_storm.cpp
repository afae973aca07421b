// jitter_storm: the expiry "key storm" and how TTL jitter spreads it.
//
// 20,000 keys are written in the same instant with a 60 s TTL. The store's clock then runs
// for 80 s, ticking 10 times a second (hz 10), and the example counts how many keys tick()
// reclaims in each second: without jitter they all go in the same second; with
// Options::ttl_jitter = Jitter::percent(10) they spread over 54..66 s. Prints both as a text
// chart (one '#' per 200 expirations).
#include <expiring/expiring.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace {

// The timer wheel reclaims every key in the tick after its deadline, so the chart shows when
// keys fall due (the sampled index would add its own lateness).
using Store = expiring::Store<std::uint64_t, std::uint64_t, expiring::ManualClock, expiring::TimeOrderedExpiry>;

constexpr int kKeys = 20'000;
constexpr std::int64_t kTtlSeconds = 60;

// Expirations per second after the batch was written.
std::map<std::int64_t, std::uint64_t> run(expiring::Jitter jitter) {
  expiring::ManualClock clock{1'700'000'000'000};
  const std::int64_t t0 = clock.now_ms();
  expiring::Options o;
  o.ttl_jitter = jitter;
  o.seed = 2024;                  // deterministic spread
  o.budget_clock_us = [] { return std::int64_t{0}; };  // never out of budget: count exactly
  Store store{clock, o};
  for (std::uint64_t k = 0; k < kKeys; ++k) (void)store.set(k, k, expiring::Ex{kTtlSeconds});
  std::map<std::int64_t, std::uint64_t> per_second;
  for (int t = 0; t < 800; ++t) {  // 80 s at hz 10
    clock.advance(100);
    const expiring::TickReport r = store.tick();
    if (r.expired != 0) per_second[(clock.now_ms() - t0 - 1) / 1000] += r.expired;
  }
  return per_second;
}

void chart(const char* title, const std::map<std::int64_t, std::uint64_t>& per_second) {
  std::printf("%s\n", title);
  std::uint64_t peak = 0, total = 0;
  for (std::int64_t s = 50; s <= 70; ++s) {
    const auto it = per_second.find(s);
    const std::uint64_t n = it == per_second.end() ? 0 : it->second;
    peak = n > peak ? n : peak;
    total += n;
    std::printf("  %3lld s %6llu |%s\n", static_cast<long long>(s), static_cast<unsigned long long>(n),
                std::string(static_cast<std::size_t>(n / 200), '#').c_str());
  }
  std::printf("  total %llu, peak %llu expirations in one second\n\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(peak));
}

}  // namespace

int main() {
  const auto plain = run(expiring::Jitter::none());
  const auto jittered = run(expiring::Jitter::percent(10));
  chart("Without jitter: 20,000 keys, EX 60, written at once", plain);
  chart("With Jitter::percent(10)", jittered);
  std::uint64_t a = 0, b = 0;
  for (const auto& [s, n] : plain) a += n;
  for (const auto& [s, n] : jittered) b += n;
  return a == kKeys && b == kKeys ? 0 : 1;
}
