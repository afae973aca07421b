// bench/bench_replica.cpp: an in-process replica of a redis-server (replica.hpp), same run:
//
//   1. lag: a writer sends SET key:<i> <its send time> to the primary at a steady rate (5k to
//      100k writes/s, 200k with --full; 10k and 50k with --smoke; pipelined a millisecond's
//      worth at a time), and the replica's store records, as each SET reaches it (its change
//      feed), now minus the send time: the time from a write leaving its client to the
//      replica's readers seeing it (the primary's own processing and propagation, loopback,
//      parsing and applying). p50 / p90 / p99 / p99.9 / max; with --out=DIR also
//      DIR/replica_lag.csv, which scripts/plot_replica.py draws. Goal I3: p99 <= 10 ms at 50k
//      writes/s.
//   2. a read: ConcurrentStore::get() of a key on the replica, against a GET of it over
//      loopback from the primary (hiredis, one round trip). Goal I3: the local read <= 1/100
//      of the GET.
// The primary is a redis-server from PATH on a free port; the bench says so and stops when it
// cannot start one. 16-byte keys, 24-byte values, 10,000 distinct keys.
//
//   0. first, without redis-server: what a field change costs a primary that replicates (a
//      ValueStore whose change feed is redis::write_change() into a buffer, as expiring-server
//      sends its stream): ns and stream bytes per HSET and per HPEXPIREAT of one field, in 100
//      hashes of 10 and of 1,000 fields (8-byte names and values), against the same calls on
//      the same store without a feed (the baseline, same run).
// needs: expiring::redis
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <hiredis/hiredis.h>

#include <expiring/concurrent_store.hpp>
#include <expiring/redis/replication.hpp>
#include <expiring/replica.hpp>

#include "bench_common.hpp"
#include "redis_server.hpp"

namespace {

using Store = expiring::ConcurrentStore<std::string, std::string>;
using SteadyClock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

// Lags recorded by the replica's change feed (on its thread; read after the run).
struct LagLog {
  std::mutex mu;
  std::vector<std::int64_t> ns;
  bool on = false;
};

double percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1e6;
}

// Writes at `rate` per second for `seconds`, a millisecond's worth per pipeline; the writes
// sent.
std::uint64_t write_at(redisContext* c, double rate, double seconds) {
  const std::int64_t start = now_ns();
  const auto end = start + static_cast<std::int64_t>(seconds * 1e9);
  std::uint64_t sent = 0;
  char value[32];
  for (;;) {
    const std::int64_t t = now_ns();
    if (t >= end) break;
    const auto due = static_cast<std::uint64_t>(static_cast<double>(t - start) * rate / 1e9);
    if (due <= sent) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    const std::uint64_t batch = due - sent;
    for (std::uint64_t i = 0; i < batch; ++i) {
      const std::string k = "key:" + std::to_string(10'000'000 + (sent + i) % 10'000);
      const int n = std::snprintf(value, sizeof value, "t:%020lld", static_cast<long long>(now_ns()));
      redisAppendCommand(c, "SET %b %b", k.data(), k.size(), value, static_cast<std::size_t>(n));
    }
    for (std::uint64_t i = 0; i < batch; ++i) {
      void* r = nullptr;
      if (redisGetReply(c, &r) != REDIS_OK) return sent;
      freeReplyObject(r);
    }
    sent += batch;
  }
  return sent;
}

// Section 0: {ns per call, stream bytes per call} of `ops` calls of HSET (or HPEXPIREAT) of
// one field, in random hashes and fields, with or without the stream.
struct StreamCost {
  double ns;
  double bytes;
};
StreamCost field_change_cost(std::size_t fields, bool expire, bool stream, int ops) {
  using VStore = expiring::redis::ValueStore<expiring::ManualClock&>;
  constexpr std::int64_t kT0 = 1'700'000'000'000;
  expiring::ManualClock clock{kT0};
  VStore s{clock};
  std::vector<std::string> keys, names;
  for (int h = 0; h < 100; ++h) keys.push_back("hash:" + std::to_string(1000 + h));
  for (std::size_t f = 0; f < fields; ++f) names.push_back("f" + std::to_string(1'000'000 + f));  // 8 bytes
  for (const std::string& k : keys) {
    for (const std::string& f : names) (void)s.hset(k, f, std::string("v0000000"));
  }
  std::string wire;
  std::size_t bytes = 0;
  if (stream) {
    s.set_change_feed([&](const expiring::redis::ValueChange& c) {
      expiring::redis::write_change(c, wire);
      if (wire.size() > (std::size_t{1} << 20)) {
        bytes += wire.size();
        wire.clear();
      }
    });
  }
  std::uint64_t rng = 88172645463325252ull, sink = 0;
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < ops; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const std::string& k = keys[rng % keys.size()];
    const std::string& f = names[(rng >> 20) % names.size()];
    if (expire) {
      sink += (*s.hpexpireat(k, kT0 + 3'600'000 + i, {f}))[0] == 1 ? 1u : 0u;
    } else {
      sink += *s.hset(k, f, std::string("v1111111"));
    }
  }
  const double ns = static_cast<double>(now_ns() - t0) / ops;
  bytes += wire.size();
  if (sink == ~std::uint64_t{0}) std::printf("?");
  return {ns, static_cast<double>(bytes) / ops};
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const double seconds = cfg.mode == bench::Mode::smoke ? 0.3 : cfg.mode == bench::Mode::full ? 3.0 : 2.0;
  std::vector<double> rates = {10'000.0, 50'000.0};
  if (cfg.mode != bench::Mode::smoke) rates = {5'000.0, 10'000.0, 20'000.0, 50'000.0, 100'000.0};
  if (cfg.mode == bench::Mode::full) rates.push_back(200'000.0);

  // ---- 0. A field change on a primary that replicates
  {
    const int ops = cfg.mode == bench::Mode::smoke ? 2'000 : 200'000;
    std::printf("a field change on a primary whose stream is write_change() (section 0):\n");
    std::printf("%-12s %-11s %12s %12s %10s %14s\n", "fields/hash", "call", "no feed ns", "stream ns", "ratio",
                "stream B/call");
    for (const std::size_t fields : {std::size_t{10}, std::size_t{1000}}) {
      for (const bool expire : {false, true}) {
        const StreamCost base = field_change_cost(fields, expire, false, ops);
        const StreamCost with = field_change_cost(fields, expire, true, ops);
        std::printf("%-12zu %-11s %12.0f %12.0f %9.2fx %14.0f\n", fields, expire ? "HPEXPIREAT" : "HSET", base.ns, with.ns,
                    with.ns / base.ns, with.bytes);
      }
    }
    std::printf("\n");
  }

  bench::RedisProcess redis;
  if (!redis.start({"--repl-diskless-sync-delay", "0"})) {
    std::printf("bench_replica: left out: redis-server could not be started (is it installed?)\n");
    return 0;
  }
  redisContext* c = redisConnect("127.0.0.1", redis.port());
  if (c == nullptr || c->err != 0) {
    std::printf("bench_replica: cannot connect to redis-server\n");
    return 1;
  }
  Store store;
  LagLog lags;
  store.set_change_feed([&](const Store::change_type& ch) {
    if (ch.op != expiring::ChangeOp::set || ch.value == nullptr || ch.value->size() != 22 || (*ch.value)[0] != 't') return;
    const std::int64_t sent = std::strtoll(ch.value->c_str() + 2, nullptr, 10);
    const std::int64_t lag = now_ns() - sent;
    std::lock_guard<std::mutex> l(lags.mu);
    if (lags.on) lags.ns.push_back(lag);
  });
  expiring::ReplicaOptions o;
  o.port = redis.port();
  expiring::Replica<Store> replica(store, o);
  if (!replica.wait_until_synced(std::chrono::seconds(10))) {
    std::printf("bench_replica: the replica did not sync: %s\n", replica.stats().last_error.c_str());
    return 1;
  }
  // The replica has loaded the RDB; redis-server starts the stream once its cron has seen the
  // transfer end (up to 1/hz = 100 ms later). Lag is measured from the first write it streams:
  // a marker, waited for (at most 5 s).
  freeReplyObject(redisCommand(c, "SET bench:marker 1"));
  for (int i = 0; i < 500 && !store.get("bench:marker"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!store.get("bench:marker")) {
    std::printf("bench_replica: the replica did not receive the stream within 5 s\n");
    return 1;
  }
  std::printf("bench_replica: an in-process replica (ConcurrentStore, %zu shards) of redis-server on loopback, "
              "%u hardware threads\n\n",
              store.shard_count(), std::thread::hardware_concurrency());

  // ---- 1. Lag
  std::printf("%-14s %10s %10s %10s %10s %10s %10s %10s\n", "writes/s", "sent", "applied", "p50 ms", "p90 ms",
              "p99 ms", "p99.9 ms", "max ms");
  bench::Csv csv(cfg.out_dir, "replica_lag.csv", "writes_per_s,seconds,sent,applied,p50_ms,p90_ms,p99_ms,p999_ms,max_ms");
  for (const double rate : rates) {
    {
      std::lock_guard<std::mutex> l(lags.mu);
      lags.ns.clear();
      lags.ns.reserve(static_cast<std::size_t>(rate * seconds * 1.2));
      lags.on = true;
    }
    const std::uint64_t sent = write_at(c, rate, seconds);
    // Until the replica has applied what the primary holds (its offset), at most 5 s more.
    for (int i = 0; i < 500; ++i) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "INFO replication"));
      std::string info = r != nullptr && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
      if (r != nullptr) freeReplyObject(r);
      const auto at = info.find("master_repl_offset:");
      if (at != std::string::npos && std::stoll(info.substr(at + 19)) <= replica.stats().offset) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::vector<std::int64_t> v;
    {
      std::lock_guard<std::mutex> l(lags.mu);
      lags.on = false;
      v.swap(lags.ns);
    }
    const double p50 = percentile(v, 0.50), p90 = percentile(v, 0.90), p99 = percentile(v, 0.99);
    const double p999 = percentile(v, 0.999);
    const double mx = v.empty() ? 0 : static_cast<double>(*std::max_element(v.begin(), v.end())) / 1e6;
    std::printf("%-14.0f %10llu %10zu %10.3f %10.3f %10.3f %10.3f %10.3f\n", rate, static_cast<unsigned long long>(sent),
                v.size(), p50, p90, p99, p999, mx);
    if (rate == 50'000.0) std::printf("goal I3 (lag p99 <= 10 ms at 50k writes/s): %s\n", p99 <= 10.0 ? "met" : "MISSED");
    char line[256];
    std::snprintf(line, sizeof line, "%.0f,%.1f,%llu,%zu,%.4f,%.4f,%.4f,%.4f,%.4f", rate, seconds,
                  static_cast<unsigned long long>(sent), v.size(), p50, p90, p99, p999, mx);
    csv.row(line);
  }

  // ---- 2. A read: local against a GET over loopback
  const int reads = cfg.mode == bench::Mode::smoke ? 2'000 : 20'000;
  const std::string key = "key:10000042";
  std::uint64_t found = 0;
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < reads * 100; ++i) {
    const auto v = store.get(key);
    found += v ? v->size() : 0;
  }
  const double local_ns = static_cast<double>(now_ns() - t0) / (reads * 100.0);
  const std::int64_t t1 = now_ns();
  for (int i = 0; i < reads; ++i) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "GET %b", key.data(), key.size()));
    found += r != nullptr && r->type == REDIS_REPLY_STRING ? r->len : 0;
    if (r != nullptr) freeReplyObject(r);
  }
  const double get_ns = static_cast<double>(now_ns() - t1) / reads;
  std::printf("\nread of one key: local get() %.0f ns, GET over loopback %.1f us: the local read is 1/%.0f of it "
              "(goal I3: <= 1/100: %s)   [%llu bytes read]\n",
              local_ns, get_ns / 1000, get_ns / local_ns, get_ns / local_ns >= 100 ? "met" : "MISSED",
              static_cast<unsigned long long>(found));
  const expiring::ReplicaStats st = replica.stats();
  std::printf("replica: %llu full sync, %llu commands applied, offset %lld\n",
              static_cast<unsigned long long>(st.full_syncs), static_cast<unsigned long long>(st.applied),
              static_cast<long long>(st.offset));
  redisFree(c);
  return 0;
}
