// tests/redis/test_redis_persistence_live.cpp: expiring-server's persistence and
// replication over real TCP: SAVE / BGSAVE / LASTSAVE / DEBUG RELOAD and a restart that loads
// the snapshot; the append-only log under appendfsync always surviving SIGKILL, and
// BGREWRITEAOF; a primary and a replica on loopback (TTLs equal to the millisecond, stale keys
// read as missing until the primary's DEL, DBSIZE converging, READONLY, reconnection after
// the primary restarts, REPLICAOF NO ONE); CONFIG SET appendonly / appendfsync at run time and
// DEBUG LOADAOF. Every server runs in a temporary directory removed
// at the end; every wait is bounded.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "redis_live.hpp"
#include "temp_dir.hpp"
#include "text.hpp"

using live::Argv;
using live::Conn;
using live::RespServer;
using Reply = expiring::redis::Reply;

namespace {

using TempDir = testdir::TempDir;

std::string info(Conn& c, const std::string& section, const std::string& field) {
  return redistext::info_field(c.call({"INFO", section}).str(), field);
}

// Polls `ok` every 10 ms for up to `ms`.
bool eventually(const std::function<bool()>& ok, int ms = 10000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok();
}

std::int64_t integer(const Reply& r) {
  REQUIRE(r.type() == Reply::Type::integer);
  return r.integer();
}

}  // namespace

TEST_CASE("expiring-server persistence: SAVE, LASTSAVE, BGSAVE, DEBUG RELOAD, and a restart that loads the snapshot",
          "[redis][live][persistence]") {
  TempDir dir;
  const int port = live::free_port();
  std::int64_t keep_at = 0;
  {
    RespServer s(Argv{"--port", std::to_string(port), "--dir", dir.path});
    Conn c(s.port());
    CHECK(c.call({"SET", "a", "1", "PX", "100000"}).str() == "OK");
    CHECK(c.call({"SET", "b", "2"}).str() == "OK");
    CHECK(c.call({"SET", "gone", "v", "PX", "200"}).str() == "OK");
    CHECK(c.call({"HSET", "h", "f", "x", "g", "y"}) == Reply::integer(2));
    CHECK(c.call({"HPEXPIRE", "h", "100000", "FIELDS", "1", "f"}) == Reply::array({Reply::integer(1)}));
    keep_at = integer(c.call({"PEXPIRETIME", "a"}));
    CHECK(info(c, "persistence", "rdb_changes_since_last_save") != "0");
    CHECK(c.call({"SAVE"}).str() == "OK");
    CHECK(integer(c.call({"LASTSAVE"})) > 1700000000);
    CHECK(info(c, "persistence", "rdb_changes_since_last_save") == "0");
    CHECK(c.call({"SET", "c", "3"}).str() == "OK");
    CHECK(c.call({"BGSAVE"}).str() == "Background saving started");
    CHECK(eventually([&] { return info(c, "persistence", "rdb_bgsave_in_progress") == "0"; }));
    CHECK(info(c, "persistence", "rdb_last_bgsave_status") == "ok");
    CHECK(c.call({"DEBUG", "RELOAD"}).str() == "OK");
    CHECK(c.call({"GET", "c"}).str() == "3");
    CHECK(integer(c.call({"PEXPIRETIME", "a"})) == keep_at);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // "gone" expires while the server is down
  RespServer s(Argv{"--port", std::to_string(port), "--dir", dir.path});
  Conn c(s.port());
  CHECK(c.call({"GET", "b"}).str() == "2");
  CHECK(c.call({"GET", "c"}).str() == "3");
  CHECK(integer(c.call({"PEXPIRETIME", "a"})) == keep_at);
  CHECK(c.call({"EXISTS", "gone"}) == Reply::integer(0));
  CHECK(c.call({"HGET", "h", "g"}).str() == "y");
  CHECK(integer(c.call({"HTTL", "h", "FIELDS", "1", "f"}).elements().at(0)) > 90);
  CHECK(integer(c.call({"DBSIZE"})) == 4);
}

TEST_CASE("expiring-server persistence: the append-only log under appendfsync always survives SIGKILL, and BGREWRITEAOF",
          "[redis][live][persistence][aof]") {
  TempDir dir;
  const Argv args{"--dir", dir.path, "--appendonly", "yes", "--appendfsync", "always"};
  std::int64_t at = 0;
  {
    RespServer s(args);
    Conn c(s.port());
    for (int i = 0; i < 200; ++i) CHECK(c.call({"SET", "k" + std::to_string(i), "v", "EX", "1000"}).str() == "OK");
    CHECK(c.call({"RENAME", "k0", "renamed"}).str() == "OK");
    CHECK(c.call({"INCR", "n"}) == Reply::integer(1));
    CHECK(c.call({"PERSIST", "k1"}) == Reply::integer(1));
    CHECK(c.call({"DEL", "k2"}) == Reply::integer(1));
    at = integer(c.call({"PEXPIRETIME", "k3"}));
    CHECK(info(c, "persistence", "aof_enabled") == "1");
    ::kill(s.process().pid(), SIGKILL);  // every reply above was sent after its fdatasync
  }
  {
    RespServer s(args);
    Conn c(s.port());
    CHECK(integer(c.call({"DBSIZE"})) == 200);
    CHECK(integer(c.call({"PEXPIRETIME", "k3"})) == at);
    CHECK(c.call({"TTL", "k1"}) == Reply::integer(-1));
    CHECK(c.call({"EXISTS", "k0"}) == Reply::integer(0));
    CHECK(c.call({"EXISTS", "renamed"}) == Reply::integer(1));
    CHECK(c.call({"GET", "n"}).str() == "1");
    CHECK(c.call({"BGREWRITEAOF"}).str() == "Background append only file rewriting started");
    CHECK(eventually([&] { return info(c, "persistence", "aof_rewrite_in_progress") == "0"; }));
    CHECK(info(c, "persistence", "aof_last_bgrewrite_status") == "ok");
    CHECK(c.call({"SET", "after", "1"}).str() == "OK");
  }
  RespServer s(args);
  Conn c(s.port());
  CHECK(integer(c.call({"DBSIZE"})) == 201);
  CHECK(integer(c.call({"PEXPIRETIME", "k3"})) == at);
}

TEST_CASE("expiring-server persistence: CONFIG SET appendonly at run time, appendfsync, and DEBUG LOADAOF",
          "[redis][live][persistence][aof]") {
  TempDir dir;
  const Argv args{"--dir", dir.path};
  std::int64_t at = 0;
  {
    RespServer s(args);
    Conn c(s.port());
    CHECK(c.call({"DEBUG", "LOADAOF"}).is_error());  // no log
    CHECK(c.call({"SET", "a", "1", "EX", "1000"}).str() == "OK");
    CHECK(c.call({"HSET", "h", "f", "x", "g", "y"}) == Reply::integer(2));
    CHECK(c.call({"HPEXPIRE", "h", "100000", "FIELDS", "1", "f"}) == Reply::array({Reply::integer(1)}));
    at = integer(c.call({"PEXPIRETIME", "a"}));
    CHECK(c.call({"CONFIG", "SET", "appendonly", "maybe"}).str() ==
          "ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'");
    // On: what the databases hold becomes the log's base.
    CHECK(c.call({"CONFIG", "SET", "appendonly", "yes"}).str() == "OK");
    CHECK(c.call({"CONFIG", "GET", "appendonly"}) == Reply::array({Reply::bulk("appendonly"), Reply::bulk("yes")}));
    CHECK(info(c, "persistence", "aof_enabled") == "1");
    CHECK(c.call({"SET", "a", "2", "KEEPTTL"}).str() == "OK");
    CHECK(c.call({"SELECT", "3"}).str() == "OK");
    CHECK(c.call({"SET", "in3", "v"}).str() == "OK");
    // LOADAOF: emptied and replayed, the same data and deadlines.
    CHECK(c.call({"DEBUG", "LOADAOF"}).str() == "OK");
    CHECK(c.call({"GET", "in3"}).str() == "v");
    CHECK(c.call({"SELECT", "0"}).str() == "OK");
    CHECK(c.call({"GET", "a"}).str() == "2");
    CHECK(integer(c.call({"PEXPIRETIME", "a"})) == at);
    CHECK(c.call({"HGET", "h", "g"}).str() == "y");
    CHECK(integer(c.call({"HTTL", "h", "FIELDS", "1", "f"}).elements().at(0)) > 90);
    // appendfsync changes the open log's policy; a bad one is refused.
    CHECK(c.call({"CONFIG", "SET", "appendfsync", "sometimes"}).is_error());
    CHECK(c.call({"CONFIG", "SET", "appendfsync", "always"}).str() == "OK");
    CHECK(c.call({"CONFIG", "GET", "appendfsync"}) == Reply::array({Reply::bulk("appendfsync"), Reply::bulk("always")}));
    CHECK(c.call({"SET", "b", "3"}).str() == "OK");
    // Off, then on again: the log starts over from the data, replacing the old files.
    CHECK(c.call({"CONFIG", "SET", "appendonly", "no"}).str() == "OK");
    CHECK(info(c, "persistence", "aof_enabled") == "0");
    CHECK(c.call({"DEL", "b"}) == Reply::integer(1));
    CHECK(c.call({"CONFIG", "SET", "appendonly", "yes"}).str() == "OK");
    CHECK(c.call({"SET", "c", "4"}).str() == "OK");
  }
  // The restart replays the log: b went while the log was off, and stays gone.
  RespServer s(Argv{"--dir", dir.path, "--appendonly", "yes"});
  Conn c(s.port());
  CHECK(c.call({"EXISTS", "b"}) == Reply::integer(0));
  CHECK(c.call({"GET", "c"}).str() == "4");
  CHECK(integer(c.call({"PEXPIRETIME", "a"})) == at);
  // Only the new log's files are left.
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.path.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string f = e->d_name;
      if (f.rfind("appendonly.", 0) == 0) files.push_back(f);
    }
    ::closedir(d);
  }
  CHECK(files.size() == 3);  // manifest, base, incr
}

TEST_CASE("expiring-server replication: a replica agrees to the millisecond, hides stale keys until the primary's DEL, "
          "and reconnects after the primary restarts",
          "[redis][live][replication]") {
  TempDir pdir;
  const int pport = live::free_port();
  const Argv pargs{"--port", std::to_string(pport), "--dir", pdir.path, "--appendonly", "yes"};
  auto primary = std::make_unique<RespServer>(pargs);
  RespServer replica(Argv{"--replicaof", "127.0.0.1", std::to_string(pport)});
  Conn p(primary->port());
  Conn r(replica.port());
  CHECK(p.call({"SET", "before", "sync"}).str() == "OK");
  REQUIRE(eventually([&] { return info(r, "replication", "master_link_status") == "up"; }));
  CHECK(info(r, "replication", "role") == "slave");
  CHECK(eventually([&] { return r.call({"GET", "before"}).str() == "sync"; }));
  CHECK(info(p, "replication", "connected_slaves") == "1");

  // The primary must not reclaim "stale" by itself during the test: its active cycle is off.
  CHECK(p.call({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}).str() == "OK");
  CHECK(p.call({"SET", "k", "v", "PX", "100000"}).str() == "OK");
  CHECK(p.call({"SET", "stale", "v", "PX", "300"}).str() == "OK");
  CHECK(p.call({"HSET", "h", "f", "1"}) == Reply::integer(1));
  CHECK(p.call({"HPEXPIRE", "h", "50000", "FIELDS", "1", "f"}) == Reply::array({Reply::integer(1)}));
  CHECK(p.call({"EXPIRE", "before", "1000"}) == Reply::integer(1));
  REQUIRE(eventually([&] { return r.call({"EXISTS", "h"}) == Reply::integer(1); }));
  for (const char* key : {"k", "stale", "before"}) {
    CAPTURE(key);
    CHECK(integer(r.call({"PEXPIRETIME", key})) == integer(p.call({"PEXPIRETIME", key})));
  }
  CHECK(r.call({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == p.call({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}));
  CHECK(r.call({"SET", "x", "1"}).str().rfind("READONLY", 0) == 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // "stale" is past its deadline
  CHECK(r.call({"GET", "stale"}) == Reply::nil());
  CHECK(r.call({"EXISTS", "stale"}) == Reply::integer(0));
  CHECK(integer(r.call({"DBSIZE"})) == 4);  // still stored: only the primary's DEL removes it
  CHECK(integer(p.call({"DBSIZE"})) == 4);
  CHECK(p.call({"GET", "stale"}) == Reply::nil());  // the primary reclaims it and sends DEL
  CHECK(eventually([&] { return integer(r.call({"DBSIZE"})) == 3; }));

  // The primary restarts (from its log); the replica reconnects and syncs again.
  primary.reset();
  CHECK(eventually([&] { return info(r, "replication", "master_link_status") == "down"; }));
  CHECK(r.call({"GET", "k"}).str() == "v");  // a replica keeps serving reads meanwhile
  primary = std::make_unique<RespServer>(pargs);
  Conn p2(primary->port());
  CHECK(p2.call({"GET", "k"}).str() == "v");
  REQUIRE(eventually([&] { return info(r, "replication", "master_link_status") == "up"; }));
  CHECK(p2.call({"SET", "after", "restart", "PX", "60000"}).str() == "OK");
  CHECK(eventually([&] { return r.call({"GET", "after"}).str() == "restart"; }));
  CHECK(integer(r.call({"PEXPIRETIME", "after"})) == integer(p2.call({"PEXPIRETIME", "after"})));
  CHECK(integer(r.call({"PEXPIRETIME", "k"})) == integer(p2.call({"PEXPIRETIME", "k"})));
  CHECK(eventually([&] { return integer(r.call({"DBSIZE"})) == integer(p2.call({"DBSIZE"})); }));

  // REPLICAOF NO ONE: a primary again, taking writes and expiring keys itself.
  CHECK(r.call({"REPLICAOF", "NO", "ONE"}).str() == "OK");
  CHECK(info(r, "replication", "role") == "master");
  CHECK(r.call({"SET", "x", "1", "PX", "50"}).str() == "OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  CHECK(r.call({"GET", "x"}) == Reply::nil());
}
