// tests/redis/test_redis_replication_live.cpp: replication in Redis's protocol, both ways, against
// Debian's redis-server 7.0.15 on loopback.
//
//   * expiring-server as REPLICAOF redis-server: the RDB both as `$<length>` (disk-based sync)
//     and between EOF marks (diskless, Redis 7.0's default), with writes, TTL changes,
//     deletions, expiries and evictions on the primary during and after the sync; then a cut
//     connection (CLIENT KILL TYPE replica), continued by PSYNC (+CONTINUE); then the primary
//     shut down and restarted from its dump.rdb.
//   * redis-server as REPLICAOF expiring-server: the same workload on expiring-server, a cut
//     connection continued from the backlog, and the primary restarted from its log (a new
//     replication ID: a full sync).
// The workload uses databases 0, 1 and 5 (SELECT, MOVE, SWAPDB, COPY ... DB). Each time the
// two hold the same keys, values and exact PEXPIRETIMEs in each database once the replica's
// offset has reached the primary's (INFO replication: master_repl_offset against
// slave_repl_offset). Keys of the types expiring-server does not hold (a list) are skipped by
// it and left out of the comparison. Skipped when redis-server is not installed.
//
// The in-process replica (replica.hpp, a ConcurrentStore read by two threads while it
// follows) is checked the same way against redis-server and expiring-server, and against a
// primary that is not there (it keeps trying, and says why).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <expiring/concurrent_store.hpp>
#include <expiring/replica.hpp>
#include <expiring/redis/value.hpp>

#include "catch.hpp"
#include "redis_live.hpp"
#include "temp_dir.hpp"
#include "text.hpp"

using live::Argv;
using live::Conn;
using Reply = expiring::redis::Reply;
using TempDir = testdir::TempDir;

namespace {

std::string info(Conn& c, const std::string& field) {
  return redistext::info_field(c.call({"INFO", "replication"}).str(), field);
}

template <class F>
bool eventually(F&& f, int ms = 20000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

// Every string and hash key of a server, with its value as text and its PEXPIRETIME
// (`field_ttls`: each field's HPEXPIRETIME too, which redis-server 7.0 does not have).
std::map<std::string, std::string> keyspace(Conn& c, bool field_ttls = false) {
  std::map<std::string, std::string> out;
  std::string cursor = "0";
  int rounds = 0;
  do {
    const Reply r = c.call({"SCAN", cursor, "COUNT", "1000"});
    REQUIRE(r.elements().size() == 2);
    cursor = r.elements()[0].str();
    for (const Reply& k : r.elements()[1].elements()) {
      const std::string key = k.str();
      const std::string type = c.call({"TYPE", key}).str();
      std::string v;
      if (type == "string") {
        v = "s:" + c.call({"GET", key}).str();
      } else if (type == "hash") {
        std::vector<std::string> fields;
        const Reply all = c.call({"HGETALL", key});
        for (std::size_t i = 0; i + 1 < all.elements().size(); i += 2) {
          fields.push_back(all.elements()[i].str() + "=" + all.elements()[i + 1].str());
          if (field_ttls) {
            const Reply t = c.call({"HPEXPIRETIME", key, "FIELDS", "1", all.elements()[i].str()});
            REQUIRE(t.elements().size() == 1);
            fields.back() += "@" + std::to_string(t.elements()[0].integer());
          }
        }
        std::sort(fields.begin(), fields.end());
        v = "h:";
        for (const std::string& f : fields) v += f + ";";
      } else {
        continue;  // a type expiring-server does not hold
      }
      out[key] = v + " @" + std::to_string(c.call({"PEXPIRETIME", key}).integer());
    }
  } while (cursor != "0" && ++rounds < 100000);
  return out;
}

// Random writes of every kind the two servers share, on `c` (`lists`: RPUSH too, which
// expiring-server does not hold; `field_ttls`: Redis 7.4's field TTL commands too, which
// redis-server 7.0 does not have). A TTL is either short (at most 400 ms: past by settle()) or
// long (a minute or more: not past while the two are compared).
// The databases the workload of several databases uses.
const std::vector<std::string> kDbs = {"0", "1", "5"};

void workload(Conn& c, std::mt19937_64& rng, int ops, bool lists, bool field_ttls = false, bool databases = false) {
  const auto key = [&] { return "k" + std::to_string(rng() % 200); };
  const auto hkey = [&] { return "h" + std::to_string(rng() % 40); };
  const auto ms = [&](int lo, int hi) { return std::to_string(lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo))); };
  const auto field = [&] { return "f" + std::to_string(rng() % 8); };
  for (int i = 0; i < ops; ++i) {
    if (databases) {  // SELECT, MOVE and SWAPDB among databases 0, 1 and 5
      const std::uint64_t d = rng() % 200;
      if (d < 4) (void)c.call({"SELECT", kDbs[rng() % kDbs.size()]});
      if (d == 4 || d == 5) (void)c.call({"MOVE", key(), kDbs[rng() % kDbs.size()]});
      if (d == 6) (void)c.call({"MOVE", hkey(), kDbs[rng() % kDbs.size()]});
      if (d == 7) (void)c.call({"SWAPDB", kDbs[rng() % kDbs.size()], kDbs[rng() % kDbs.size()]});
      if (d == 8) (void)c.call({"COPY", key(), key(), "DB", kDbs[rng() % kDbs.size()], "REPLACE"});
    }
    switch (rng() % (field_ttls ? 21 : 16)) {
      case 0: (void)c.call({"SET", key(), "v" + std::to_string(i)}); break;
      case 1: (void)c.call({"SET", key(), "t" + std::to_string(i), "PX", ms(20, 400)}); break;  // expires soon
      case 2: (void)c.call({"SET", key(), "long", "EX", ms(1000, 5000)}); break;
      case 3: (void)c.call({"INCR", "n" + std::to_string(rng() % 20)}); break;
      case 4: (void)c.call({"APPEND", key(), "+"}); break;
      case 5: (void)c.call({"PEXPIRE", key(), ms(30, 300)}); break;
      case 6: (void)c.call({"EXPIRE", key(), ms(2000, 9000)}); break;
      case 7: (void)c.call({"PERSIST", key()}); break;
      case 8: (void)c.call({"DEL", key(), key()}); break;
      case 9: (void)c.call({"HSET", hkey(), "f" + std::to_string(rng() % 8), "x" + std::to_string(i)}); break;
      case 10: (void)c.call({"HDEL", hkey(), "f" + std::to_string(rng() % 8)}); break;
      case 11: (void)c.call({"HINCRBY", hkey(), "n", "3"}); break;
      case 12: (void)c.call({"RENAME", key(), key()}); break;
      case 13: (void)c.call({"GETEX", key(), "PX", ms(60000, 90000)}); break;
      case 14: (void)c.call({"SETEX", key(), ms(100, 800), "sx"}); break;
      case 15:
        if (lists) (void)c.call({"RPUSH", "list" + std::to_string(rng() % 5), "x"});
        break;
      case 16: (void)c.call({"HPEXPIRE", hkey(), ms(20, 400), "FIELDS", "2", field(), field()}); break;  // soon
      case 17: (void)c.call({"HPEXPIRE", hkey(), ms(60000, 90000), "FIELDS", "1", field()}); break;
      case 18: (void)c.call({"HPERSIST", hkey(), "FIELDS", "1", field()}); break;
      case 19: (void)c.call({"HEXPIRE", hkey(), ms(100, 200), "GT", "FIELDS", "1", field()}); break;
      case 20: (void)c.call({"HSET", hkey(), field(), "y", field(), "z"}); break;
    }
  }
}

// Evictions on the primary: 300 keys of 1 KB, then a memory limit 60 KB below what it uses,
// and more writes; the limit is lifted after them. (Redis counts its replication backlog in
// used_memory: the stream the evictions add makes it evict more, so the margin is small.)
void evictions(Conn& c, std::mt19937_64& rng, bool lists) {
  for (int i = 0; i < 300; ++i) REQUIRE(c.call({"SET", "big" + std::to_string(i), std::string(1000, 'b')}).str() == "OK");
  REQUIRE(c.call({"CONFIG", "SET", "maxmemory-policy", "allkeys-random"}).str() == "OK");
  const std::int64_t used = std::stoll(redistext::info_field(c.call({"INFO", "memory"}).str(), "used_memory"));
  REQUIRE(c.call({"CONFIG", "SET", "maxmemory", std::to_string(used - 60000)}).str() == "OK");
  workload(c, rng, 300, lists);
  REQUIRE(c.call({"CONFIG", "SET", "maxmemory", "0"}).str() == "OK");
  CHECK(std::stoll(redistext::info_field(c.call({"INFO", "stats"}).str(), "evicted_keys")) > 0);
  CHECK(c.call({"DBSIZE"}).integer() > 100);
}

// Waits until every short TTL of the workload has passed and the primary has deleted those
// keys, then stops its active expiry (so that nothing expires while the two are compared)
// and waits for the replica to reach the primary's offset.
using Replicated = expiring::ConcurrentStore<std::string, expiring::redis::Value>;

// The store's string and hash keys as keyspace() shows a server's (stale ones included: the
// primary has deleted every key past its deadline by then).
std::map<std::string, std::string> keyspace(Replicated& s, bool field_ttls = false) {
  std::map<std::string, std::string> out;
  for (std::size_t shard = 0; shard < s.shard_count(); ++shard) {
    std::uint64_t cursor = 0;
    do {
      cursor = s.scan_stored(shard, cursor, 1000,
                             [&](const std::string& k, const expiring::redis::Value& v, std::optional<std::int64_t> d) {
                               std::string text;
                               if (const std::string* str = v.string()) {
                                 text = "s:" + *str;
                               } else {
                                 std::vector<std::string> fields;
                                 const auto& h = *v.hash();
                                 for (std::uint32_t i = 0; i < h.size(); ++i) {
                                   fields.push_back(h.at(i).name + "=" + h.at(i).value);
                                   const std::int64_t fd = h.deadline(i);
                                   if (field_ttls) fields.back() += "@" + std::to_string(fd == h.kNoDeadline ? -1 : fd);
                                 }
                                 std::sort(fields.begin(), fields.end());
                                 text = "h:";
                                 for (const std::string& f : fields) text += f + ";";
                               }
                               out[k] = text + " @" + std::to_string(d ? *d : -1);
                             });
      REQUIRE(cursor != Replicated::kRestarted);
    } while (cursor != 0);
  }
  return out;
}

// Whether a replica is up and has applied the primary's stream up to `offset`: a server (INFO
// replication) or an in-process replica (stats()).
bool caught_up(Conn& replica, const std::string& offset) {
  return info(replica, "slave_repl_offset") == offset && info(replica, "master_link_status") == "up";
}
bool caught_up(expiring::Replica<Replicated>& replica, const std::string& offset) {
  const expiring::ReplicaStats st = replica.stats();
  return st.link_up && std::to_string(st.offset) == offset;
}

template <class Replica>
void settle(Conn& primary, Replica& replica, bool databases = false) {
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Reading every key makes the primary delete the stale ones (and send DEL).
  if (databases) {
    for (const std::string& db : kDbs) {
      REQUIRE(primary.call({"SELECT", db}).str() == "OK");
      (void)keyspace(primary);
    }
  } else {
    (void)keyspace(primary);
  }
  REQUIRE(primary.call({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}).str() == "OK");
  REQUIRE(eventually([&] {
    const std::string want = info(primary, "master_repl_offset");
    return !want.empty() && caught_up(replica, want);
  }));
}

// The primary's keys against the replica's (a server, or the store of an in-process replica).
template <class Replica>
void check_same(Conn& primary, Replica& replica, bool field_ttls = false) {
  const auto p = keyspace(primary, field_ttls);
  const auto r = keyspace(replica, field_ttls);
  CHECK(p.size() > 50);
  CHECK(r.size() == p.size());
  std::size_t differ = 0;
  for (const auto& [k, v] : p) {
    const auto it = r.find(k);
    if (it == r.end() || it->second != v) {
      if (++differ <= 5) {
        UNSCOPED_INFO("key " << k << ": primary " << v << ", replica " << (it == r.end() ? "(none)" : it->second));
      }
    }
  }
  CHECK(differ == 0);
}

// Each of the databases, primary against replica (two servers); each connection is left in
// database 0.
void check_same_databases(Conn& primary, Conn& replica) {
  std::size_t keys = 0;
  for (const std::string& db : kDbs) {
    CAPTURE(db);
    REQUIRE(primary.call({"SELECT", db}).str() == "OK");
    REQUIRE(replica.call({"SELECT", db}).str() == "OK");
    const auto p = keyspace(primary), r = keyspace(replica);
    keys += p.size();
    CHECK(r.size() == p.size());
    std::size_t differ = 0;
    for (const auto& [k, v] : p) {
      const auto it = r.find(k);
      if ((it == r.end() || it->second != v) && ++differ <= 5) {
        UNSCOPED_INFO("key " << k << ": primary " << v << ", replica " << (it == r.end() ? "(none)" : it->second));
      }
    }
    CHECK(differ == 0);
  }
  CHECK(keys > 50);
  REQUIRE(primary.call({"SELECT", "0"}).str() == "OK");
  REQUIRE(replica.call({"SELECT", "0"}).str() == "OK");
}

}  // namespace

TEST_CASE("replication live: expiring-server follows redis-server through syncs, a cut link and a restart",
          "[redis][live][replication]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  for (const bool diskless : {true, false}) {
    INFO((diskless ? "diskless sync (EOF marks)" : "disk-based sync ($<length>)"));
    auto redis = std::make_unique<live::RedisServer>(*server);
    Conn p(redis->port());
    REQUIRE(p.call({"CONFIG", "SET", "repl-diskless-sync", diskless ? "yes" : "no"}).str() == "OK");
    REQUIRE(p.call({"CONFIG", "SET", "repl-diskless-sync-delay", "0"}).str() == "OK");
    std::mt19937_64 rng(diskless ? 1 : 2);
    workload(p, rng, 3000, true, false, true);
    live::RespServer ours;
    Conn r(ours.port());
    REQUIRE(r.call({"REPLICAOF", "127.0.0.1", std::to_string(redis->port())}).str() == "OK");
    // Writes during the sync and after it; evictions too (a memory limit the workload exceeds).
    workload(p, rng, 2000, true, false, true);
    REQUIRE(eventually([&] { return info(r, "master_link_status") == "up"; }));
    evictions(p, rng, true);
    settle(p, r, true);
    check_same_databases(p, r);
    CHECK(info(r, "master_syncs") == "1");
    CHECK(std::stoll(info(r, "master_stream_skipped")) > 0);  // the list's commands

    // A cut connection: the replica continues from its offset.
    REQUIRE(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str() == "OK");
    REQUIRE(p.call({"CLIENT", "KILL", "TYPE", "replica"}).integer() == 1);
    workload(p, rng, 1000, true, false, true);
    REQUIRE(eventually([&] { return info(r, "master_partial_syncs") == "1"; }));
    workload(p, rng, 1000, true, false, true);
    settle(p, r, true);
    check_same_databases(p, r);
    CHECK(info(r, "master_syncs") == "1");  // no second full sync

    CHECK(redistext::info_field(p.call({"INFO", "stats"}).str(), "sync_partial_ok") == "1");

    // The primary saved, stopped and started again on its dump.rdb (same port): the replica
    // reconnects, by PSYNC or a full sync, and the two agree again.
    REQUIRE(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str() == "OK");
    REQUIRE(p.call({"SAVE"}).str() == "OK");
    redis->restart();
    Conn p2(redis->port());
    REQUIRE(eventually([&] { return info(r, "master_link_status") == "up"; }, 30000));
    workload(p2, rng, 1000, true, false, true);
    settle(p2, r, true);
    check_same_databases(p2, r);
  }
}

TEST_CASE("replication live: redis-server follows expiring-server through syncs, a cut link and a restart",
          "[redis][live][replication]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  TempDir dir;
  const int pport = live::free_port();
  const Argv pargs{"--port", std::to_string(pport), "--dir", dir.path, "--appendonly", "yes"};
  auto ours = std::make_unique<live::RespServer>(pargs);
  Conn p(ours->port());
  std::mt19937_64 rng(3);
  workload(p, rng, 3000, false, false, true);
  live::RedisServer redis(*server);
  Conn r(redis.port());
  REQUIRE(r.call({"REPLICAOF", "127.0.0.1", std::to_string(pport)}).str() == "OK");
  workload(p, rng, 2000, false, false, true);
  REQUIRE(eventually([&] { return info(r, "master_link_status") == "up"; }));
  // Evictions on the primary travel as DEL.
  evictions(p, rng, false);
  settle(p, r, true);
  check_same_databases(p, r);

  // A cut connection: redis-server continues from the backlog.
  REQUIRE(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str() == "OK");
  REQUIRE(r.call({"CLIENT", "KILL", "TYPE", "master"}).integer() == 1);
  workload(p, rng, 1000, false, false, true);
  REQUIRE(eventually([&] { return info(r, "master_link_status") == "up"; }));
  workload(p, rng, 1000, false, false, true);
  settle(p, r, true);
  check_same_databases(p, r);
  CHECK(redistext::info_field(p.call({"INFO", "stats"}).str(), "sync_full") == "1");
  CHECK(redistext::info_field(p.call({"INFO", "stats"}).str(), "sync_partial_ok") == "1");

  // The primary restarted from its log: a new replication ID, a full sync.
  ours.reset();
  CHECK(eventually([&] { return info(r, "master_link_status") == "down"; }));
  ours = std::make_unique<live::RespServer>(pargs);
  Conn p2(ours->port());
  REQUIRE(eventually([&] { return info(r, "master_link_status") == "up"; }, 30000));
  workload(p2, rng, 1000, false, false, true);
  settle(p2, r, true);
  check_same_databases(p2, r);
}

// ---- The in-process replica (replica.hpp) ----------------------------------------------------

TEST_CASE("replica.hpp: an in-process replica of redis-server, read by other threads while it follows",
          "[redis][live][replication][replica]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  auto redis = std::make_unique<live::RedisServer>(*server);
  Conn p(redis->port());
  REQUIRE(p.call({"CONFIG", "SET", "repl-diskless-sync-delay", "0"}).str() == "OK");
  std::mt19937_64 rng(7);
  workload(p, rng, 3000, true);
  Replicated store;
  expiring::ReplicaOptions o;
  o.port = redis->port();
  o.backoff_min = std::chrono::milliseconds(50);
  o.backoff_max = std::chrono::milliseconds(200);
  expiring::Replica<Replicated> replica(store, o);
  REQUIRE(replica.wait_until_synced(std::chrono::seconds(20)));
  CHECK(store.options().replica);
  // Readers on two threads while the primary writes.
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::uint64_t n = 0;
      while (!done) {
        (void)store.get("k" + std::to_string(n % 200));
        (void)store.hget("h" + std::to_string(n % 40), "f" + std::to_string(t));
        ++n;
      }
      reads += n;
    });
  }
  workload(p, rng, 2000, true);
  evictions(p, rng, true);
  settle(p, replica);
  check_same(p, store);
  // A cut link: continued from the offset.
  REQUIRE(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str() == "OK");
  REQUIRE(p.call({"CLIENT", "KILL", "TYPE", "replica"}).integer() == 1);
  workload(p, rng, 1000, true);
  REQUIRE(eventually([&] { return replica.stats().partial_syncs == 1; }));
  settle(p, replica);
  check_same(p, store);
  // The primary restarted on its dump.rdb.
  REQUIRE(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}).str() == "OK");
  REQUIRE(p.call({"SAVE"}).str() == "OK");
  redis->restart();
  Conn p2(redis->port());
  REQUIRE(eventually([&] { return replica.stats().connects >= 3 && replica.stats().link_up; }, 30000));
  workload(p2, rng, 1000, true);
  settle(p2, replica);
  check_same(p2, store);
  done = true;
  for (auto& t : readers) t.join();
  const expiring::ReplicaStats st = replica.stats();
  CHECK(reads.load() > 0);
  CHECK(st.full_syncs >= 1);
  CHECK(st.applied > 1000);
  CHECK(st.skipped > 0);  // the lists
  CHECK(st.ms_since_last_io >= 0);
  CHECK(st.master_replid.size() == 40);
  replica.stop();
  CHECK_FALSE(replica.stats().link_up);
}

TEST_CASE("replica.hpp: an in-process replica of expiring-server, and a primary that is not there",
          "[redis][live][replication][replica]") {
  live::RespServer ours;
  Conn p(ours.port());
  std::mt19937_64 rng(8);
  workload(p, rng, 3000, false, /*field_ttls=*/true);
  Replicated store;
  expiring::ReplicaOptions o;
  o.port = ours.port();
  expiring::Replica<Replicated> replica(store, o);
  REQUIRE(replica.wait_until_synced(std::chrono::seconds(20)));
  workload(p, rng, 2000, false, /*field_ttls=*/true);  // field commands in the stream
  settle(p, replica);
  check_same(p, store, /*field_ttls=*/true);

  Replicated lonely;
  expiring::ReplicaOptions nowhere;
  nowhere.port = live::free_port();  // nothing listens there
  nowhere.backoff_min = std::chrono::milliseconds(10);
  nowhere.backoff_max = std::chrono::milliseconds(20);
  expiring::Replica<Replicated> waiting(lonely, nowhere);
  CHECK_FALSE(waiting.wait_until_synced(std::chrono::milliseconds(300)));
  CHECK(waiting.stats().last_error.find("cannot connect") != std::string::npos);
  CHECK(waiting.stats().connects == 0);
}
