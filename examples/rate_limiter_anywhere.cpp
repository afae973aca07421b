// rate_limiter_anywhere: one rate limiter and one lock lease, in-process or over Redis.
//
// The limiter and the lease are templates over the store: the same code is compiled against
// expiring::ConcurrentStore (in-process, shared by threads) and expiring::RedisStore (a
// redis-server, or a Redis Cluster, shared by processes and machines). A flag picks one.
//
//   rate_limiter_anywhere                                in-process
//   rate_limiter_anywhere --redis=127.0.0.1:6379         a redis-server
//   rate_limiter_anywhere --redis=127.0.0.1:7000 --cluster
//   ... --seconds=S                                      time per measurement (default 1)
//
// It first checks the behaviour (5 requests per window allowed, the 6th refused; a lease
// that only its owner can renew or release), then measures operations per second: one
// request of the limiter (INCRBY + PEXPIREAT NX), one lease cycle (SET NX PX, renewal by
// script, release by script), and single-key GETs and SETs against batches of 100 keys
// (get_many and mset, pipelined over Redis). docs/guide/redis-backend.md has the figures side by side.
// needs: expiring::redis
// ctest-args: --seconds=0.05
#include <expiring/concurrent_store.hpp>
#include <expiring/redis_store.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A fixed-window limiter: a counter per client and window, INCRBY'd by each request, whose
// deadline is the window's end (PEXPIREAT NX: set once, so every request of the window
// shares it, and the counter vanishes when the window closes).
template <class Store>
class RateLimiter {
 public:
  RateLimiter(Store& store, std::int64_t limit, std::int64_t window_ms)
      : store_(store), limit_(limit), window_(window_ms) {}

  bool allow(const std::string& client) {
    const std::int64_t window = unix_ms() / window_;
    const std::string key = "rl:{" + client + "}:" + std::to_string(window);
    const expiring::Result<std::int64_t> n = store_.incr_by(key, 1);
    if (!n.ok()) return false;  // fail closed
    (void)store_.pexpireat(key, (window + 1) * window_, expiring::ExpireFlags::NX);
    return *n <= limit_;
  }

 private:
  Store& store_;
  std::int64_t limit_;
  std::int64_t window_;
};

// A lock whose owner alone renews (compare-and-extend) and releases (compare-and-delete).
template <class Store>
class LockLease {
 public:
  LockLease(Store& store, std::string name, std::int64_t lease_ms)
      : store_(store), key_("lock:" + std::move(name)), lease_(lease_ms) {}

  bool acquire(std::int64_t owner) {
    return store_.set(key_, owner, expiring::Px{lease_}, expiring::SetCond::NX) == true;
  }
  // Moves the deadline to now + lease_ms, never earlier than it is (GT).
  bool renew(std::int64_t owner, std::int64_t lease_ms) {
    return store_.pexpireat_if_equal(key_, owner, unix_ms() + lease_ms, expiring::ExpireFlags::GT) == true;
  }
  bool release(std::int64_t owner) { return store_.del_if_equal(key_, owner); }

 private:
  Store& store_;
  std::string key_;
  std::int64_t lease_;
};

int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

// Counters and leases share one store of strings to integers; the lease's owner is an id.
template <class Store>
void behaviour(Store& counters, Store& leases) {
  RateLimiter<Store> limiter(counters, 5, 60'000);
  const std::string client = "client-" + std::to_string(unix_ms());
  int allowed = 0;
  for (int i = 0; i < 6; ++i) allowed += limiter.allow(client) ? 1 : 0;
  check(allowed == 5, "5 of 6 requests allowed in one window");

  LockLease<Store> lock(leases, "report-" + std::to_string(unix_ms()), 10'000);
  check(lock.acquire(1), "owner 1 takes the lock");
  check(!lock.acquire(2), "owner 2 cannot take it");
  check(!lock.renew(2, 20'000), "owner 2 cannot renew it");
  check(lock.renew(1, 20'000), "owner 1 renews it");
  check(!lock.release(2), "owner 2 cannot release it");
  check(lock.release(1), "owner 1 releases it");
  check(lock.acquire(2), "then owner 2 takes it");
  check(lock.release(2), "and releases it");
  std::printf("behaviour: 5 of 6 requests allowed; the lease is renewed and released by its owner only\n");
}

// Runs fn (which does `per_call` operations) for about `seconds`; operations per second.
template <class F>
double rate(double seconds, std::size_t per_call, F&& fn) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::size_t calls = 0;
  do {
    for (int i = 0; i < 16; ++i, ++calls) fn(calls);
  } while (clock::now() < until);
  const double took = std::chrono::duration<double>(clock::now() - start).count();
  return static_cast<double>(calls * per_call) / took;
}

template <class Store>
void measure(Store& store, double seconds) {
  RateLimiter<Store> limiter(store, 1'000'000'000, 60'000);
  LockLease<Store> lock(store, "bench-" + std::to_string(unix_ms()), 10'000);
  std::vector<std::string> keys;
  std::vector<std::pair<std::string, std::int64_t>> pairs;
  for (int i = 0; i < 100; ++i) {
    keys.push_back("bench:" + std::to_string(i));
    pairs.emplace_back(keys.back(), i);
  }
  std::vector<std::optional<std::int64_t>> out(keys.size());
  (void)store.mset(pairs);
  std::int64_t sink = 0;

  const double limit = rate(seconds, 1, [&](std::size_t i) { sink += limiter.allow("c" + std::to_string(i % 64)); });
  const double lease = rate(seconds, 1, [&](std::size_t) {
    sink += lock.acquire(7) ? 1 : 0;
    sink += lock.renew(7, 20'000) ? 1 : 0;
    sink += lock.release(7) ? 1 : 0;
  });
  const double get1 = rate(seconds, 1, [&](std::size_t i) { sink += store.get(keys[i % 100]).value_or(0); });
  const double set1 = rate(seconds, 1, [&](std::size_t i) { sink += store.set(keys[i % 100], 1) == true; });
  const double getn = rate(seconds, 100, [&](std::size_t) { sink += static_cast<std::int64_t>(store.get_many(keys, out.data())); });
  const double setn = rate(seconds, 100, [&](std::size_t) { sink += store.mset(pairs).ok() ? 1 : 0; });
  std::printf("%-34s %14s\n", "operation", "per second");
  std::printf("%-34s %14.0f\n", "rate limiter request (2 commands)", limit);
  std::printf("%-34s %14.0f\n", "lease cycle (take, renew, release)", lease);
  std::printf("%-34s %14.0f\n", "get, one key per call", get1);
  std::printf("%-34s %14.0f\n", "set, one key per call", set1);
  std::printf("%-34s %14.0f\n", "get_many, 100 keys per call", getn);
  std::printf("%-34s %14.0f\n", "mset, 100 keys per call", setn);
  if (sink == 42) std::printf(" \n");  // keeps the work observable
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<expiring::RedisEndpoint> redis;
  bool cluster = false;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--redis=", 0) == 0) {
      const std::string hp = a.substr(8);
      const std::size_t colon = hp.rfind(':');
      if (colon == std::string::npos) {
        std::fprintf(stderr, "rate_limiter_anywhere: --redis=HOST:PORT\n");
        return 2;
      }
      redis = expiring::RedisEndpoint{hp.substr(0, colon), std::atoi(hp.c_str() + colon + 1)};
    } else if (a == "--cluster") {
      cluster = true;
    } else if (a.rfind("--seconds=", 0) == 0) {
      seconds = std::atof(a.c_str() + 10);
    } else {
      std::fprintf(stderr, "usage: rate_limiter_anywhere [--redis=HOST:PORT [--cluster]] [--seconds=S]\n");
      return 2;
    }
  }
  if (seconds <= 0) seconds = 0.05;

  if (!redis) {
    std::printf("store: in-process (expiring::ConcurrentStore)\n");
    expiring::ConcurrentStore<std::string, std::int64_t> store;
    behaviour(store, store);
    measure(store, seconds);
  } else {
    expiring::RedisOptions o;
    o.nodes = {*redis};
    o.cluster = cluster;
    std::printf("store: expiring::RedisStore over %s %s\n", cluster ? "the Redis Cluster at" : "redis-server at",
                redis->str().c_str());
    try {
      expiring::RedisStore<std::string, std::int64_t> store(o);
      behaviour(store, store);
      measure(store, seconds);
    } catch (const expiring::RedisError& e) {
      std::fprintf(stderr, "rate_limiter_anywhere: %s (%s)\n", e.what(), expiring::to_string(e.code()));
      return 1;
    }
  }
  return failures == 0 ? 0 : 1;
}
