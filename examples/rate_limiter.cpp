// rate_limiter: a fixed-window limiter on PEXPIREAT.
//
// Each client gets a counter whose deadline is the end of the current window, an absolute
// time: PEXPIREAT with NX sets it only when the counter has none, so every request in the
// window shares one deadline and the counter vanishes exactly when the window closes.
// modify() increments in place and keeps the TTL (Redis's INCR).
#include <expiring/expiring.hpp>

#include <cstdio>
#include <string>

namespace {

using Store = expiring::Store<std::string, long long, expiring::ManualClock>;

class RateLimiter {
 public:
  RateLimiter(Store& store, long long limit, std::int64_t window_ms) : store_(store), limit_(limit), window_(window_ms) {}

  bool allow(const std::string& client) {
    const std::string key = "rl:" + client;
    const std::int64_t window_end = (store_.now_ms() / window_ + 1) * window_;
    long long count = 0;
    if (!store_.modify(key, [&](long long& c) { count = ++c; })) {
      if (!store_.set(key, 1LL).ok()) return false;  // refused (a memory limit): fail closed
      count = 1;
    }
    (void)store_.pexpireat(key, window_end, expiring::ExpireFlags::NX);  // NX: false once it has one
    return count <= limit_;
  }

 private:
  Store& store_;
  long long limit_;
  std::int64_t window_;
};

}  // namespace

int main() {
  expiring::ManualClock clock{1'700'000'000'000};
  Store store{clock};
  RateLimiter limiter{store, 5, 1000};  // 5 requests per second per client

  for (int second = 0; second < 3; ++second) {
    int allowed = 0, refused = 0;
    for (int i = 0; i < 8; ++i) {  // 8 requests, 100 ms apart
      (limiter.allow("alice") ? allowed : refused)++;
      clock.advance(100);
    }
    std::printf("second %d: allowed %d, refused %d (the window closes in %lld ms)\n", second, allowed, refused,
                static_cast<long long>(store.pttl("rl:alice")));
    clock.advance(200);
  }
  return 0;
}
