// bench/bench_redis.cpp: what RedisStore costs over calling hiredis by hand, same server, same run.
//
//   get/raw          redisCommandArgv(GET k) on one connection: the baseline
//   get/store        RedisStore::get(k): pool checkout, RESP formatting, SIGPIPE guard, decode
//   get/store_nosig  the same with block_sigpipe = false (a program that ignores SIGPIPE)
//   set/raw, set/store                      SET k v EX 600
//   mget100/raw, mget100/store              100 keys: one MGET by hand, get_many()
//   lease/store                             SET NX PX + pexpireat_if_equal (script) + del_if_equal
// Each is wall time per call against a loopback redis-server: the network round trip
// dominates, so the figure that matters is store / raw, printed at the end ("G-redis" goals:
// get and set within 1.10x of raw hiredis, get_many within 1.10x of a hand-built MGET).
//
// The server: --redis=HOST:PORT, or EXPIRING_BENCH_REDIS=HOST:PORT, else a redis-server from
// PATH started here on a free loopback port (no persistence) and stopped at exit.
// needs: expiring::redis
#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <expiring/redis_store.hpp>

#include "bench_common.hpp"
#include "redis_server.hpp"

namespace {

using Store = expiring::RedisStore<std::string, std::string>;
expiring::RedisEndpoint g_server;

// ---- A server of our own, when none is given -----------------------------------------------

bench::RedisProcess g_redis;

bool start_server() {
  if (!g_redis.start()) return false;
  g_server = {"127.0.0.1", g_redis.port()};
  return true;
}

void stop_server() { g_redis.stop(); }

// ---- The baseline: hiredis by hand -----------------------------------------------------------

redisContext* raw_connect() {
  redisContext* c = redisConnect(g_server.host.c_str(), g_server.port);
  if (c == nullptr || c->err != 0) {
    std::fprintf(stderr, "bench_redis: cannot connect to %s\n", g_server.str().c_str());
    std::exit(1);
  }
  return c;
}

redisReply* raw(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
}

std::vector<std::string> keys(std::size_t n) {
  std::vector<std::string> k;
  for (std::size_t i = 0; i < n; ++i) k.push_back("bench:key:" + std::to_string(i));
  return k;
}

Store make_store(bool block_sigpipe = true) {
  expiring::RedisOptions o;
  o.nodes = {g_server};
  o.block_sigpipe = block_sigpipe;
  return Store(o);
}

void fill(std::size_t n) {
  redisContext* c = raw_connect();
  for (const std::string& k : keys(n)) freeReplyObject(raw(c, {"SET", k, std::string(32, 'v')}));
  redisFree(c);
}

// ---- Benchmarks ------------------------------------------------------------------------------

void BM_get_raw(benchmark::State& st) {
  redisContext* c = raw_connect();
  const auto k = keys(100);
  std::size_t i = 0;
  for (auto _ : st) {
    redisReply* r = raw(c, {"GET", k[i++ % 100]});
    benchmark::DoNotOptimize(r->len);
    freeReplyObject(r);
  }
  redisFree(c);
}
void BM_get_store(benchmark::State& st) {
  Store s = make_store(st.range(0) != 0);
  const auto k = keys(100);
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(s.get(k[i++ % 100]));
}
void BM_set_raw(benchmark::State& st) {
  redisContext* c = raw_connect();
  const auto k = keys(100);
  const std::string v(32, 'w');
  std::size_t i = 0;
  for (auto _ : st) freeReplyObject(raw(c, {"SET", k[i++ % 100], v, "EX", "600"}));
  redisFree(c);
}
void BM_set_store(benchmark::State& st) {
  Store s = make_store();
  const auto k = keys(100);
  const std::string v(32, 'w');
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(s.set(k[i++ % 100], v, expiring::Ex{600}).ok());
}
void BM_mget100_raw(benchmark::State& st) {
  redisContext* c = raw_connect();
  std::vector<std::string> cmd{"MGET"};
  for (const std::string& k : keys(100)) cmd.push_back(k);
  for (auto _ : st) {
    redisReply* r = raw(c, cmd);
    benchmark::DoNotOptimize(r->elements);
    freeReplyObject(r);
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * 100);
  redisFree(c);
}
void BM_mget100_store(benchmark::State& st) {
  Store s = make_store();
  const auto k = keys(100);
  std::vector<std::optional<std::string>> out(100);
  for (auto _ : st) benchmark::DoNotOptimize(s.get_many(k, out.data()));
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * 100);
}
void BM_lease_store(benchmark::State& st) {
  Store s = make_store();
  for (auto _ : st) {
    benchmark::DoNotOptimize(s.set("bench:lock", "me", expiring::Px{10'000}, expiring::SetCond::NX).ok());
    benchmark::DoNotOptimize(s.pexpireat_if_equal("bench:lock", "me", 4'000'000'000'000).ok());
    benchmark::DoNotOptimize(s.del_if_equal("bench:lock", "me"));
  }
}

BENCHMARK(BM_get_raw)->Name("get/raw")->UseRealTime();
BENCHMARK(BM_get_store)->Name("get/store")->Arg(1)->UseRealTime();
BENCHMARK(BM_get_store)->Name("get/store_nosig")->Arg(0)->UseRealTime();
BENCHMARK(BM_set_raw)->Name("set/raw")->UseRealTime();
BENCHMARK(BM_set_store)->Name("set/store")->UseRealTime();
BENCHMARK(BM_mget100_raw)->Name("mget100/raw")->UseRealTime();
BENCHMARK(BM_mget100_store)->Name("mget100/store")->UseRealTime();
BENCHMARK(BM_lease_store)->Name("lease/store")->UseRealTime();

// Collects each benchmark's real time per iteration for the ratios.
class Ratios : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.iterations <= 0 || r.run_type != Run::RT_Iteration) continue;
      // "get/store/1/real_time" -> "get/store"
      std::string name = r.benchmark_name();
      const std::size_t rt = name.find("/real_time");
      if (rt != std::string::npos) name.erase(rt);
      const std::size_t slash = name.rfind('/');
      if (slash != std::string::npos && name.find_first_not_of("0123456789", slash + 1) == std::string::npos) {
        name.erase(slash);
      }
      ns_[name] = r.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nG-redis: RedisStore over raw hiredis, same server, same run (goal <= 1.10x)\n");
    row("get", "get/store", "get/raw");
    row("get, block_sigpipe = false", "get/store_nosig", "get/raw");
    row("set EX", "set/store", "set/raw");
    row("get_many(100) vs MGET", "mget100/store", "mget100/raw");
  }

 private:
  void row(const char* what, const char* store, const char* base) {
    if (ns_.count(store) == 0 || ns_.count(base) == 0 || ns_[base] <= 0) return;
    const double r = ns_[store] / ns_[base];
    std::printf("  %-28s %8.0f ns / %8.0f ns = %.2fx %s\n", what, ns_[store], ns_[base], r, r <= 1.10 ? "pass" : "MISS");
  }
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  (void)cfg;
  std::string given;
  int w = 1;
  for (int r = 1; r < argc; ++r) {
    const std::string a = argv[r];
    if (a.rfind("--redis=", 0) == 0) {
      given = a.substr(8);
    } else {
      argv[w++] = argv[r];
    }
  }
  argc = w;
  if (given.empty() && std::getenv("EXPIRING_BENCH_REDIS") != nullptr) given = std::getenv("EXPIRING_BENCH_REDIS");
  if (!given.empty()) {
    const std::size_t colon = given.rfind(':');
    g_server = {given.substr(0, colon), std::atoi(given.c_str() + colon + 1)};
  } else if (!start_server()) {
    std::fprintf(stderr, "bench_redis: no --redis=HOST:PORT and no redis-server could be started\n");
    stop_server();
    return 1;
  }
  std::printf("bench_redis: redis-server at %s\n", g_server.str().c_str());
  fill(100);
  benchmark::Initialize(&argc, argv);
  Ratios reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  stop_server();
  return 0;
}
