// bench/bench_vs_redis.cpp: the in-process store against redis-server doing the same work, in
// the same run: the figure a reader weighing "a Redis next to the service" against "the
// store inside it" wants.
//
// Data: N string keys (bench::make_key, 16-24 bytes) with 16-byte values, each with a TTL an
// hour away, in both. Two operations over the same keys in random order:
//   get    a hit: ExpiringStore::get(k), against GET k
//   set    an existing key with a new TTL: ExpiringStore::set(k, v, PX), against SET k v PX ms
// redis-server is measured two ways on one loopback connection (hiredis): pipelined, 64
// commands sent before their replies are read (the server's own cost per command plus a
// 64th of a round trip: the best a client gets), and one command per round trip (what a
// plain call costs). The store reads a CachedClock (one load), as Redis reads its cached
// mstime. Rounds alternate the contenders; the figure is the median round's ns per operation,
// and each redis-server figure is also given as a multiple of the store's.
//
// Modes: --smoke (ctest; also EXPIRING_BENCH_SMOKE=1 or a tiny --benchmark_min_time) 1e3 keys,
// 3 rounds; --quick (default) 1e4 and 1e6 keys; --full the same with more rounds. The
// redis-server from PATH is started on a free loopback port with no persistence and stopped
// at exit; without one the program says so and exits with status 1 (nothing is compared).
// With --out=DIR, also DIR/vs_redis.csv (scripts/bench_readme.py puts it in README.md).
// needs: expiring::redis
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "expiring/expiring.hpp"
#include "redis_server.hpp"

namespace {

using clk = std::chrono::steady_clock;
constexpr std::int64_t kT0 = 1'700'000'000'000;
constexpr std::int64_t kTtlMs = 3'600'000;
constexpr std::size_t kDepth = 64;  // commands in flight per pipelined batch

using bench::median;

// One loopback connection; every reply must be what the operation expects.
class Conn {
 public:
  explicit Conn(int port) : c_(redisConnect("127.0.0.1", port)) {}
  ~Conn() {
    if (c_ != nullptr) redisFree(c_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool ok() const { return c_ != nullptr && c_->err == 0; }

  // Sends the commands in batches of `depth` (1: a round trip each) and checks each reply:
  // a bulk string for GET, +OK for SET. Returns false on any other reply.
  bool run(const std::vector<std::vector<std::string>>& cmds, std::size_t depth) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (std::size_t i = 0; i < cmds.size(); i += depth) {
      const std::size_t end = std::min(cmds.size(), i + depth);
      for (std::size_t j = i; j < end; ++j) {
        argv.clear();
        lens.clear();
        for (const std::string& a : cmds[j]) {
          argv.push_back(a.data());
          lens.push_back(a.size());
        }
        if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) return false;
      }
      for (std::size_t j = i; j < end; ++j) {
        void* r = nullptr;
        if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) return false;
        const auto* reply = static_cast<redisReply*>(r);
        const bool good = cmds[j][0] == "GET" ? reply->type == REDIS_REPLY_STRING : reply->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!good) return false;
      }
    }
    return true;
  }

 private:
  redisContext* c_;
};

struct Figures {
  double store = 0, piped = 0, trip = 0;  // ns per operation
};

int run_size(int port, std::size_t n, int rounds, std::size_t turn_ops, Figures& get_f, Figures& set_f) {
  expiring::CachedClock clock{kT0};
  expiring::Store<std::string, std::string, expiring::CachedClock&> store{clock};
  std::vector<std::string> keys(n), values(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = bench::make_key<std::string>(i);
    values[i] = std::string(16, static_cast<char>('a' + i % 26));
  }
  Conn conn(port);
  if (!conn.ok()) {
    std::fprintf(stderr, "bench_vs_redis: cannot connect to redis-server on port %d\n", port);
    return 1;
  }
  const std::string px = std::to_string(kTtlMs);
  std::vector<std::vector<std::string>> fill;
  fill.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!store.set(keys[i], values[i], expiring::Px{kTtlMs}).ok()) return 1;
    fill.push_back({"SET", keys[i], values[i], "PX", px});
  }
  if (!conn.run(fill, kDepth)) {
    std::fprintf(stderr, "bench_vs_redis: filling redis-server failed\n");
    return 1;
  }
  std::vector<double> s_get, p_get, t_get, s_set, p_set, t_set;
  std::uint64_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    const std::vector<std::uint32_t> order = bench::random_order(n, turn_ops, 11 + static_cast<std::uint64_t>(r));
    std::vector<std::vector<std::string>> gets, sets;
    gets.reserve(order.size());
    sets.reserve(order.size());
    for (const std::uint32_t i : order) {
      gets.push_back({"GET", keys[i]});
      sets.push_back({"SET", keys[i], values[i], "PX", px});
    }
    const auto store_get = [&] {
      const auto t0 = clk::now();
      for (const std::uint32_t i : order) {
        const std::string* v = store.get(keys[i]);
        if (v == nullptr) return -1.0;
        sink += v->size();
      }
      return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(order.size());
    };
    const auto store_set = [&] {
      const auto t0 = clk::now();
      for (const std::uint32_t i : order) {
        if (!store.set(keys[i], values[i], expiring::Px{kTtlMs}).ok()) return -1.0;
      }
      return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(order.size());
    };
    const auto remote = [&](const std::vector<std::vector<std::string>>& cmds, std::size_t depth) {
      const auto t0 = clk::now();
      if (!conn.run(cmds, depth)) return -1.0;
      return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(cmds.size());
    };
    // Alternate which side goes first, so that neither always finds the caches the other left.
    double sg, pg, tg, ss, ps, ts;
    if (r % 2 == 0) {
      sg = store_get(); pg = remote(gets, kDepth); tg = remote(gets, 1);
      ss = store_set(); ps = remote(sets, kDepth); ts = remote(sets, 1);
    } else {
      tg = remote(gets, 1); pg = remote(gets, kDepth); sg = store_get();
      ts = remote(sets, 1); ps = remote(sets, kDepth); ss = store_set();
    }
    if (sg < 0 || pg < 0 || tg < 0 || ss < 0 || ps < 0 || ts < 0) {
      std::fprintf(stderr, "bench_vs_redis: a GET or SET did not answer as expected\n");
      return 1;
    }
    s_get.push_back(sg); p_get.push_back(pg); t_get.push_back(tg);
    s_set.push_back(ss); p_set.push_back(ps); t_set.push_back(ts);
  }
  if (sink == 0) std::printf("bench_vs_redis: nothing was read\n");
  get_f = {median(s_get), median(p_get), median(t_get)};
  set_f = {median(s_set), median(p_set), median(t_set)};
  std::vector<std::vector<std::string>> flush{{"FLUSHALL"}};
  (void)conn.run(flush, 1);  // (+OK: a status reply)
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const bool smoke = cfg.mode == bench::Mode::smoke;
  bench::RedisProcess server;
  if (!server.start()) {
    std::fprintf(stderr, "bench_vs_redis: no redis-server could be started (Debian: redis-server); nothing compared\n");
    return 1;
  }
  const std::vector<std::size_t> sizes = smoke ? std::vector<std::size_t>{1000} : std::vector<std::size_t>{10000, 1000000};
  const int rounds = smoke ? 3 : (cfg.mode == bench::Mode::full ? 11 : 5);
  const std::size_t turn_ops = smoke ? 1000 : 20000;
  std::printf("bench_vs_redis: string keys of 16-24 bytes, 16-byte values, every key with a TTL; redis-server on "
              "loopback (hiredis, one connection; pipelined %zu deep, and one command per round trip); "
              "ns per operation, median of %d rounds of %zu operations\n\n",
              kDepth, rounds, turn_ops);
  std::printf("| operation | keys | store | redis-server, pipelined | redis-server, a round trip each |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  bench::Csv csv(cfg.out_dir, "vs_redis.csv", "op,keys,store_ns,pipelined_ns,round_trip_ns");
  for (const std::size_t n : sizes) {
    Figures g, s;
    if (run_size(server.port(), n, rounds, std::min(turn_ops, n * 4), g, s) != 0) return 1;
    std::printf("| get() hit / GET | %zu | %.1f ns | %.0f ns (%.0fx) | %.0f ns (%.0fx) |\n", n, g.store, g.piped,
                g.piped / g.store, g.trip, g.trip / g.store);
    std::printf("| set() with PX, existing key / SET PX | %zu | %.1f ns | %.0f ns (%.0fx) | %.0f ns (%.0fx) |\n", n,
                s.store, s.piped, s.piped / s.store, s.trip, s.trip / s.store);
    for (const auto& [op, f] : {std::pair<const char*, const Figures&>{"get", g}, {"set_px", s}}) {
      char line[160];
      std::snprintf(line, sizeof line, "%s,%zu,%.2f,%.1f,%.1f", op, n, f.store, f.piped, f.trip);
      csv.row(line);
    }
    std::fflush(stdout);
  }
  return 0;
}
