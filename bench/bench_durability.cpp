// bench/bench_durability.cpp: snapshots and the append-only log through the public API, against
// redis-server on the same data in the same run.
//
// Data: N keys "key:<i>" (N = 1e6; smoke mode for ctest: 1e4) with 16-byte values, every
// other key with a TTL an hour away.
// 1. Snapshot save and load: expiring::save() of the store to a file (fsync and rename
//    included) and expiring::load() of it into an empty store, as keys/s and MB/s of the
//    file; against redis-server 7 holding the same keys (written by pipelined SETs): the
//    wall time of SAVE, and of DEBUG RELOAD (Redis saves, empties and loads), compared with
//    save() + load() into the full store (which empties it first). Both write to the same
//    file system (a temporary directory).
//    Redis's RDB format (rdb.hpp): load_rdb() of the dump.rdb redis-server's SAVE wrote, into an
//    empty store and again into the full one (replacing it, as DEBUG RELOAD does), and
//    save_rdb() of it, against redis-server's SAVE of the same keys and its load two ways,
//    each matched with its own case: into a process that starts on the file (a second
//    redis-server; its log's "DB loaded from disk" time), which takes fresh memory from the
//    system as a new store does, and DEBUG RELOAD less SAVE, which reloads into memory its
//    allocator kept, as a full store's reload may.
// 2. Write throughput with the log: set() of N keys with a TTL, with no log, with AppendLog
//    under appendfsync everysec and no, and (N / 100 keys) under always, as ns per set() and
//    the ratio to no log.
// The redis-server comparison is left out (and says so) when redis-server cannot be started.
// needs: expiring::redis
#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <expiring/append_log.hpp>
#include <expiring/expiring.hpp>
#include <expiring/rdb.hpp>
#include <expiring/snapshot.hpp>

#include "bench_common.hpp"
#include "redis_server.hpp"

namespace {

using Store = expiring::Store<std::string, std::string, expiring::SystemClock>;
using clk = std::chrono::steady_clock;
using bench::TempDir;

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

std::string value_of(std::size_t i) {
  std::string v = "value-" + std::to_string(i);
  v.resize(16, '.');
  return v;
}

std::uint64_t file_size(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

void fill(Store& s, std::size_t n) {
  s.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string k = "key:" + std::to_string(i);
    if (i % 2 == 0) {
      (void)s.set(k, value_of(i), expiring::Ex{3600});
    } else {
      (void)s.set(k, value_of(i));
    }
  }
}

// ---- redis-server -----------------------------------------------------------------------

struct RedisServer {
  bench::RedisProcess proc;
  redisContext* c = nullptr;
  bool start(const std::string& dir) {
    if (!proc.start({"--dir", dir, "--dbfilename", "dump.rdb", "--enable-debug-command", "local"})) return false;
    c = redisConnect("127.0.0.1", proc.port());
    return c != nullptr && c->err == 0;
  }
  ~RedisServer() {
    if (c != nullptr) redisFree(c);
  }
  bool command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    const bool ok = r != nullptr && r->type != REDIS_REPLY_ERROR;
    if (r != nullptr) freeReplyObject(r);
    return ok;
  }
  // The same keys as fill(), by pipelined SETs (1000 a batch).
  bool fill(std::size_t n) {
    for (std::size_t i = 0; i < n;) {
      const std::size_t end = std::min(n, i + 1000);
      for (std::size_t j = i; j < end; ++j) {
        const std::string k = "key:" + std::to_string(j), v = value_of(j);
        if (j % 2 == 0) {
          redisAppendCommand(c, "SET %b %b EX 3600", k.data(), k.size(), v.data(), v.size());
        } else {
          redisAppendCommand(c, "SET %b %b", k.data(), k.size(), v.data(), v.size());
        }
      }
      for (; i < end; ++i) {
        void* r = nullptr;
        if (redisGetReply(c, &r) != REDIS_OK) return false;
        freeReplyObject(r);
      }
    }
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const std::size_t n = cfg.mode == bench::Mode::smoke ? 10'000 : 1'000'000;
  std::printf("bench_durability: %zu keys \"key:<i>\", 16-byte values, half with a TTL\n\n", n);

  // ---- 1. Snapshots
  TempDir dir;
  const std::string path = dir.path + "/dump.snap";
  double save_s = 0, load_s = 0, reload_load_s = 0;
  std::uint64_t bytes = 0;
  {
    Store s;
    fill(s, n);
    auto t = clk::now();
    const auto r = expiring::save(s, path);
    save_s = seconds_since(t);
    if (!r.ok()) {
      std::fprintf(stderr, "save failed: %s\n", r.error().message.c_str());
      return 1;
    }
    bytes = file_size(path);
    Store l;
    t = clk::now();
    const auto lr = expiring::load(l, path);
    load_s = seconds_since(t);
    if (!lr.ok() || l.size() != n) {
      std::fprintf(stderr, "load failed: %s\n", lr.error().message.c_str());
      return 1;
    }
    // DEBUG RELOAD's load: into the full store, whose keys go first.
    t = clk::now();
    const auto rr = expiring::load(s, path);
    reload_load_s = seconds_since(t);
    if (!rr.ok() || s.size() != n) return 1;
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("snapshot (expiring): %.1f MB; save %.0f ms = %.2f Mkeys/s, %.0f MB/s; load %.0f ms = %.2f Mkeys/s, %.0f MB/s "
              "(into a full store, replacing it: %.0f ms)\n",
              mb, save_s * 1e3, static_cast<double>(n) / save_s / 1e6, mb / save_s, load_s * 1e3,
              static_cast<double>(n) / load_s / 1e6, mb / load_s, reload_load_s * 1e3);
  {
    TempDir rdir;
    RedisServer redis;
    if (!redis.start(rdir.path) || !redis.fill(n)) {
      std::printf("snapshot (redis-server): left out: redis-server could not be started or filled\n");
    } else {
      auto t = clk::now();
      const bool saved = redis.command({"SAVE"});
      const double rsave = seconds_since(t);
      t = clk::now();
      const bool reloaded = redis.command({"DEBUG", "RELOAD"});
      const double rreload = seconds_since(t);
      const double rload = rreload - rsave;
      const double rmb = static_cast<double>(file_size(rdir.path + "/dump.rdb")) / 1e6;
      if (!saved || !reloaded) {
        std::printf("snapshot (redis-server): SAVE or DEBUG RELOAD failed\n");
      } else {
        std::printf("snapshot (redis-server): %.1f MB; SAVE %.0f ms = %.2f Mkeys/s, %.0f MB/s; "
                    "DEBUG RELOAD %.0f ms, so load ~%.0f ms = %.2f Mkeys/s\n",
                    rmb, rsave * 1e3, static_cast<double>(n) / rsave / 1e6, rmb / rsave, rreload * 1e3, rload * 1e3,
                    static_cast<double>(n) / rload / 1e6);
        std::printf("ratio (expiring / redis-server time): save %.2fx SAVE; save + load into the full store %.2fx DEBUG RELOAD\n",
                    save_s / rsave, (save_s + reload_load_s) / rreload);
        // redis-server starting on the file: its load into fresh memory.
        double cold = 0;
        {
          bench::RedisProcess fresh;
          const std::string log = rdir.path + "/cold.log";
          if (fresh.start({"--dir", rdir.path, "--dbfilename", "dump.rdb", "--logfile", log})) {
            for (int i = 0; i < 3000 && cold == 0; ++i) {  // up to 30 s
              std::ifstream in(log);
              std::string line;
              while (std::getline(in, line)) {
                const auto at = line.find("DB loaded from disk: ");
                if (at != std::string::npos) cold = std::strtod(line.c_str() + at + 21, nullptr);
              }
              if (cold == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
          }
        }
        // Redis's own format (rdb.hpp): redis-server's dump.rdb loaded into an empty store, and
        // the store written back as an RDB, against redis-server's load and SAVE of that file.
        Store l;
        t = clk::now();
        const auto lr = expiring::load_rdb(l, rdir.path + "/dump.rdb");
        const double rdb_load = seconds_since(t);
        // Again into the full store, replacing it (DEBUG RELOAD's case: memory the process has).
        t = clk::now();
        const auto lr2 = lr.ok() ? expiring::load_rdb(l, rdir.path + "/dump.rdb") : lr;
        const double rdb_reload = seconds_since(t);
        t = clk::now();
        const auto sr = lr.ok() ? expiring::save_rdb(l, dir.path + "/mine.rdb") : expiring::FileResult<expiring::RdbInfo>(lr.error());
        const double rdb_save = seconds_since(t);
        if (!lr.ok() || !lr2.ok() || !sr.ok() || l.size() != n) {
          std::printf("rdb (expiring): failed: %s\n", (!lr.ok() ? lr : !lr2.ok() ? lr2 : sr).error().message.c_str());
        } else {
          std::printf("rdb (expiring): load_rdb of redis-server's dump.rdb %.0f ms = %.2f Mkeys/s into an empty store, %.0f ms = "
                      "%.2f Mkeys/s replacing a full one; save_rdb %.0f ms = %.2f Mkeys/s, %.1f MB (%.2fx SAVE's rate)\n",
                      rdb_load * 1e3, static_cast<double>(n) / rdb_load / 1e6, rdb_reload * 1e3,
                      static_cast<double>(n) / rdb_reload / 1e6, rdb_save * 1e3, static_cast<double>(n) / rdb_save / 1e6,
                      static_cast<double>(file_size(dir.path + "/mine.rdb")) / 1e6, rsave / rdb_save);
          if (cold > 0) {
            std::printf("rdb load rate against redis-server's: into fresh memory %.2fx (redis-server starting on the file: "
                        "%.0f ms = %.2f Mkeys/s)\n",
                        cold / rdb_load, cold * 1e3, static_cast<double>(n) / cold / 1e6);
          } else {
            std::printf("rdb load rate against redis-server's: into fresh memory: left out (no load time in its log)\n");
          }
          std::printf("rdb load rate against redis-server's: reloading %.2fx (DEBUG RELOAD less SAVE: ~%.0f ms = %.2f "
                      "Mkeys/s)\n",
                      rload / rdb_reload, rload * 1e3, static_cast<double>(n) / rload / 1e6);
        }
      }
    }
  }

  // ---- 2. Writes with the log
  auto writes = [&](std::size_t count, const expiring::Fsync* policy) {
    TempDir ldir;
    Store s;
    s.reserve(count);
    std::unique_ptr<expiring::AppendLog<Store>> log;
    if (policy != nullptr) {
      expiring::AppendLogOptions o;
      o.fsync = *policy;
      auto r = expiring::AppendLog<Store>::open(s, ldir.path, o);
      if (!r.ok()) {
        std::fprintf(stderr, "log: %s\n", r.error().message.c_str());
        std::exit(1);
      }
      log = std::move(*r);
    }
    std::vector<std::string> keys;
    keys.reserve(count);
    for (std::size_t i = 0; i < count; ++i) keys.push_back("key:" + std::to_string(i));
    const std::string v = value_of(7);
    const auto t = clk::now();
    for (std::size_t i = 0; i < count; ++i) (void)s.set(keys[i], v, expiring::Ex{3600});
    if (log) (void)log->flush();  // what is buffered reaches the file inside the timing
    return seconds_since(t) * 1e9 / static_cast<double>(count);
  };
  const expiring::Fsync everysec = expiring::Fsync::everysec, no = expiring::Fsync::no, always = expiring::Fsync::always;
  const double base = writes(n, nullptr);
  const double es = writes(n, &everysec);
  const double nofsync = writes(n, &no);
  const std::size_t na = std::max<std::size_t>(100, n / 100);
  const double base_small = writes(na, nullptr);
  const double al = writes(na, &always);
  std::printf("\nset() with a TTL, %zu keys: no log %.0f ns; appendfsync everysec %.0f ns (%.2fx); no %.0f ns (%.2fx)\n",
              n, base, es, es / base, nofsync, nofsync / base);
  std::printf("set() with a TTL, %zu keys: no log %.0f ns; appendfsync always %.0f ns (%.1fx: an fdatasync per write)\n",
              na, base_small, al, al / base_small);
  return 0;
}
