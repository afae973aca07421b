// tests/redis/test_redis_transactions.cpp: MULTI, EXEC, DISCARD, WATCH and UNWATCH in the command
// layer (cmd_transactions.hpp) on ManualClock stores: queuing and its errors, EXECABORT, the
// memory limit, and WATCH against writes, TTL changes, lazy and active expiry, FLUSHDB and
// SWAPDB, with Redis's rule for keys already stale when watched. The replies are redis-server
// 7.0.15's (its unit/multi.tcl runs against expiring-server in CI, tests/redis/redis_units).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"

using expiring::ManualClock;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::Session;

namespace {

constexpr std::int64_t kT0 = 1'000'000;

struct Fx : commands_under_test::Databases {
  std::unique_ptr<CommandExecutor<ManualClock&>> ex = std::make_unique<CommandExecutor<ManualClock&>>(dbs);
  Session a, b;  // two connections
  Fx() : Databases(4, kT0) {}
  std::string run(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string> v(argv.begin(), argv.end());
    return ex->execute(v, s).to_resp();
  }
  std::string A(std::initializer_list<std::string_view> argv) { return run(a, argv); }
  std::string B(std::initializer_list<std::string_view> argv) { return run(b, argv); }
};

const std::string OK = "+OK\r\n";
const std::string QUEUED = "+QUEUED\r\n";
const std::string NIL_ARRAY = "*-1\r\n";
std::string I(std::int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string E(std::string_view s) { return "-" + std::string(s) + "\r\n"; }

}  // namespace

TEST_CASE("transactions: MULTI queues and EXEC runs the queue as one array", "[redis][multi]") {
  Fx f;
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "k", "1"}) == QUEUED);
  CHECK(f.A({"INCR", "k"}) == QUEUED);
  CHECK(f.A({"GET", "k"}) == QUEUED);
  CHECK(f.B({"GET", "k"}) == "$-1\r\n");  // nothing ran yet
  CHECK(f.A({"EXEC"}) == "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n");
  CHECK(f.A({"EXEC"}) == E("ERR EXEC without MULTI"));
  CHECK(f.A({"DISCARD"}) == E("ERR DISCARD without MULTI"));
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"MULTI"}) == E("ERR MULTI calls can not be nested"));
  CHECK(f.A({"EXEC"}) == "*0\r\n");  // a nested MULTI does not abort the transaction
  SECTION("a runtime error is one element; the others run") {
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"SET", "s", "x"}) == QUEUED);
    CHECK(f.A({"INCR", "s"}) == QUEUED);
    CHECK(f.A({"SET", "t", "y"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == "*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n");
  }
  SECTION("DISCARD drops the queue") {
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"SET", "d", "1"}) == QUEUED);
    CHECK(f.A({"DISCARD"}) == OK);
    CHECK(f.A({"EXISTS", "d"}) == I(0));
  }
  SECTION("SELECT inside a transaction moves the session") {
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"SELECT", "2"}) == QUEUED);
    CHECK(f.A({"SET", "in2", "v"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == "*2\r\n+OK\r\n+OK\r\n");
    CHECK(f.dbs[2]->size() == 1);
    CHECK(f.A({"DBSIZE"}) == I(1));
  }
}

TEST_CASE("transactions: an error while queuing makes EXEC fail with EXECABORT", "[redis][multi]") {
  Fx f;
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "k", "1"}) == QUEUED);
  CHECK(f.A({"NOSUCH", "x"}) == E("ERR unknown command 'NOSUCH', with args beginning with: 'x' "));
  CHECK(f.A({"SET"}) == E("ERR wrong number of arguments for 'set' command"));
  CHECK(f.A({"SAVE"}) == E("ERR unknown command 'SAVE', with args beginning with: "));  // (a server adds SAVE)
  CHECK(f.A({"SHUTDOWN"}) == E("ERR Command not allowed inside a transaction"));
  CHECK(f.A({"EXEC"}) == E("EXECABORT Transaction discarded because of previous errors."));
  CHECK(f.A({"EXISTS", "k"}) == I(0));
  CHECK(f.A({"EXEC"}) == E("ERR EXEC without MULTI"));  // the state is cleared
  SECTION("WATCH inside MULTI is refused and does not abort") {
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"WATCH", "k"}) == E("ERR WATCH inside MULTI is not allowed"));
    CHECK(f.A({"PING"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == "*1\r\n+PONG\r\n");
  }
}

TEST_CASE("transactions: over the memory limit queuing is refused, DISCARD and reads are not", "[redis][multi][maxmemory]") {
  Fx f;
  CHECK(f.A({"SET", "big", std::string(10000, 'x')}) == OK);
  CHECK(f.B({"CONFIG", "SET", "maxmemory", "1"}) == OK);
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "x", "1"}) == E("OOM command not allowed when used memory > 'maxmemory'."));
  CHECK(f.A({"DISCARD"}) == OK);
  CHECK(f.B({"CONFIG", "SET", "maxmemory", "0"}) == OK);
  // Queued under the limit, then the limit: a transaction with a write fails whole at EXEC.
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "x", "1"}) == QUEUED);
  CHECK(f.B({"CONFIG", "SET", "maxmemory", "1"}) == OK);
  CHECK(f.A({"EXEC"}) ==
        E("EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."));
  CHECK(f.B({"CONFIG", "SET", "maxmemory", "0"}) == OK);
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"GET", "x"}) == QUEUED);
  CHECK(f.B({"CONFIG", "SET", "maxmemory", "1"}) == OK);
  CHECK(f.A({"EXEC"}) == "*1\r\n$-1\r\n");  // only reads: runs
}

TEST_CASE("transactions: WATCH fails EXEC after a change by anyone, and only then", "[redis][multi][watch]") {
  Fx f;
  CHECK(f.A({"SET", "x", "30"}) == OK);
  CHECK(f.A({"WATCH", "x", "y", "z"}) == OK);
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"PING"}) == QUEUED);
  CHECK(f.A({"EXEC"}) == "*1\r\n+PONG\r\n");  // untouched
  CHECK(f.B({"SET", "x", "40"}) == OK);        // EXEC unwatched everything
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"EXEC"}) == "*0\r\n");

  CHECK(f.A({"WATCH", "x", "y"}) == OK);
  CHECK(f.B({"EXPIRE", "y", "10"}) == I(0));  // no such key: no change
  CHECK(f.B({"EXPIRE", "x", "10"}) == I(1));  // a TTL change is a change
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "x", "new"}) == QUEUED);
  CHECK(f.A({"EXEC"}) == NIL_ARRAY);
  CHECK(f.A({"GET", "x"}) == "$2\r\n40\r\n");

  SECTION("its own write counts too, and UNWATCH or DISCARD forget it") {
    CHECK(f.A({"WATCH", "x"}) == OK);
    CHECK(f.A({"SET", "x", "10"}) == OK);
    CHECK(f.A({"UNWATCH"}) == OK);
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"INCR", "x"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == "*1\r\n:11\r\n");
    CHECK(f.A({"WATCH", "x"}) == OK);
    CHECK(f.A({"SET", "x", "10"}) == OK);
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"DISCARD"}) == OK);
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"INCR", "x"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == "*1\r\n:11\r\n");
  }
  SECTION("a watched key is the key of its database") {
    CHECK(f.A({"SELECT", "3"}) == OK);
    CHECK(f.A({"WATCH", "x"}) == OK);
    CHECK(f.B({"SET", "x", "in 0"}) == OK);  // database 0's x
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"EXEC"}) == "*0\r\n");
  }
  SECTION("RENAME, DEL, a hash field and FLUSHDB of an existing key are changes") {
    for (const char* how : {"rename", "del", "hset", "flushdb"}) {
      CAPTURE(how);
      CHECK(f.A({"SET", "w", "v"}) == OK);
      CHECK(f.A({"DEL", "h"}) != "");
      if (std::string(how) == "hset") CHECK(f.A({"HSET", "w2", "f", "v"}) == I(1));
      const char* key = std::string(how) == "hset" ? "w2" : "w";
      CHECK(f.A({"WATCH", key}) == OK);
      if (std::string(how) == "rename") CHECK(f.B({"RENAME", "w", "other"}) == OK);
      if (std::string(how) == "del") CHECK(f.B({"DEL", "w"}) == I(1));
      if (std::string(how) == "hset") CHECK(f.B({"HSET", "w2", "g", "v"}) == I(1));
      if (std::string(how) == "flushdb") CHECK(f.B({"FLUSHDB"}) == OK);
      CHECK(f.A({"MULTI"}) == OK);
      CHECK(f.A({"EXEC"}) == NIL_ARRAY);
    }
  }
}

TEST_CASE("transactions: WATCH and expiry, as Redis 7.0", "[redis][multi][watch]") {
  Fx f;
  SECTION("a key that expires after the WATCH fails EXEC, reclaimed or not") {
    for (const bool reclaim : {false, true}) {
      CHECK(f.A({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == OK);
      CHECK(f.A({"SET", "key", "1", "PX", "100"}) == OK);
      CHECK(f.A({"WATCH", "key"}) == OK);
      f.clock.advance(101);
      if (reclaim) CHECK(f.B({"EXISTS", "key"}) == I(0));
      CHECK(f.A({"MULTI"}) == OK);
      CHECK(f.A({"INCR", "key"}) == QUEUED);
      CHECK(f.A({"EXEC"}) == NIL_ARRAY);
    }
  }
  SECTION("active expiry touches it") {
    CHECK(f.A({"SET", "x", "foo", "PX", "1000"}) == OK);
    CHECK(f.A({"WATCH", "x"}) == OK);
    f.clock.advance(1001);
    for (int i = 0; i < 100 && f.dbs[0]->size() != 0; ++i) f.dbs[0]->tick(expiring::CycleKind::Slow);
    CHECK(f.dbs[0]->size() == 0);
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"PING"}) == QUEUED);
    CHECK(f.A({"EXEC"}) == NIL_ARRAY);
  }
  SECTION("a key stale when watched: its deletion is no change, its new value is") {
    CHECK(f.A({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == OK);
    for (const char* how : {"nothing", "exists", "flushdb", "set"}) {
      CAPTURE(how);
      CHECK(f.A({"SET", "x", "foo", "PX", "1"}) == OK);
      f.clock.advance(2);
      CHECK(f.A({"WATCH", "x"}) == OK);
      if (std::string(how) == "exists") CHECK(f.A({"EXISTS", "x"}) == I(0));
      if (std::string(how) == "flushdb") CHECK(f.A({"FLUSHDB"}) == OK);
      if (std::string(how) == "set") CHECK(f.B({"SET", "x", "back"}) == OK);
      CHECK(f.A({"MULTI"}) == OK);
      CHECK(f.A({"PING"}) == QUEUED);
      CHECK(f.A({"EXEC"}) == (std::string(how) == "set" ? NIL_ARRAY : "*1\r\n+PONG\r\n"));
      CHECK(f.A({"DEL", "x"}) != "");
    }
  }
}

TEST_CASE("transactions: SWAPDB touches what it changes, as Redis 7.0", "[redis][multi][watch][databases]") {
  Fx f;
  CHECK(f.A({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == OK);
  const auto exec_after = [&](const std::function<void()>& setup) {
    CHECK(f.A({"FLUSHALL"}) == OK);
    CHECK(f.A({"SELECT", "0"}) == OK);
    setup();
    CHECK(f.A({"SWAPDB", "0", "1"}) == OK);
    CHECK(f.A({"MULTI"}) == OK);
    CHECK(f.A({"PING"}) == QUEUED);
    return f.A({"EXEC"});
  };
  // A watched key that exists goes away.
  CHECK(exec_after([&] {
          CHECK(f.A({"SET", "x", "30"}) == OK);
          CHECK(f.A({"WATCH", "x"}) == OK);
        }) == NIL_ARRAY);
  // A missing watched key appears.
  CHECK(exec_after([&] {
          CHECK(f.A({"SELECT", "1"}) == OK);
          CHECK(f.A({"SET", "x", "30"}) == OK);
          CHECK(f.A({"SELECT", "0"}) == OK);
          CHECK(f.A({"WATCH", "x"}) == OK);
        }) == NIL_ARRAY);
  // A stale watched key replaced with nothing; nothing replaced with a stale key; stale with stale.
  CHECK(exec_after([&] {
          CHECK(f.A({"SET", "x", "foo", "PX", "1"}) == OK);
          f.clock.advance(2);
          CHECK(f.A({"WATCH", "x"}) == OK);
        }) == "*1\r\n+PONG\r\n");
  CHECK(exec_after([&] {
          CHECK(f.A({"SELECT", "1"}) == OK);
          CHECK(f.A({"SET", "x", "foo", "PX", "1"}) == OK);
          f.clock.advance(2);
          CHECK(f.A({"SELECT", "0"}) == OK);
          CHECK(f.A({"WATCH", "x"}) == OK);
        }) == "*1\r\n+PONG\r\n");
  CHECK(exec_after([&] {
          CHECK(f.A({"SET", "x", "foo", "PX", "1"}) == OK);
          CHECK(f.A({"SELECT", "1"}) == OK);
          CHECK(f.A({"SET", "x", "bar", "PX", "1"}) == OK);
          f.clock.advance(2);
          CHECK(f.A({"SELECT", "0"}) == OK);
          CHECK(f.A({"WATCH", "x"}) == OK);
        }) == "*1\r\n+PONG\r\n");
}

TEST_CASE("transactions: a session that goes while watching leaves nothing behind", "[redis][multi][watch]") {
  Fx f;
  {
    Session gone;
    CHECK(f.run(gone, {"WATCH", "k"}) == OK);
    CHECK(f.run(gone, {"MULTI"}) == OK);
  }
  CHECK(f.B({"SET", "k", "v"}) == OK);  // touches no session
  CHECK(f.A({"WATCH", "k"}) == OK);
  f.ex.reset();  // the executor goes first: the session forgets it
  CHECK(f.a.registry == nullptr);
}

TEST_CASE("transactions: a write gate (min-replicas-to-write) refuses writes and aborts EXEC", "[redis][multi]") {
  Fx f;
  bool refuse = false;
  f.ex->set_write_gate([&]() -> std::optional<std::string> {
    if (!refuse) return std::nullopt;
    return std::string("NOREPLICAS Not enough good replicas to write.");
  });
  refuse = true;
  CHECK(f.A({"SET", "xx", "1"}) == OK);  // not asked while min-replicas-to-write is 0
  CHECK(f.A({"CONFIG", "SET", "min-replicas-to-write", "1"}) == OK);
  refuse = false;
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"INCR", "xx"}) == QUEUED);
  refuse = true;
  CHECK(f.A({"EXEC"}) == E("EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write."));
  CHECK(f.A({"GET", "xx"}) == "$1\r\n1\r\n");  // reads run
  CHECK(f.A({"SET", "xx", "2"}) == E("NOREPLICAS Not enough good replicas to write."));
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"SET", "xx", "2"}) == E("NOREPLICAS Not enough good replicas to write."));
  CHECK(f.A({"EXEC"}) == E("EXECABORT Transaction discarded because of previous errors."));
  CHECK(f.A({"CONFIG", "SET", "min-replicas-to-write", "2", "min-replicas-max-lag", "5"}) != "");
  refuse = false;
  CHECK(f.A({"CONFIG", "GET", "min-replicas-*"}).find("min-replicas-max-lag") != std::string::npos);
}

TEST_CASE("a server's own commands are checked as Redis checks its: write for min-replicas, denyoom for memory",
          "[redis][multi]") {
  Fx f;
  int runs = 0;
  const auto handler = [&](const std::vector<std::string>&, expiring::redis::Session&) {
    ++runs;
    return expiring::redis::Reply::ok();
  };
  f.ex->add_command("xwrite", 1, "write fast", handler);
  f.ex->add_command("xgrow", 1, "write denyoom", handler);
  f.ex->add_command("xread", 1, "readonly fast", handler);
  bool refuse = true;
  f.ex->set_write_gate([&]() -> std::optional<std::string> {
    if (!refuse) return std::nullopt;
    return std::string("NOREPLICAS Not enough good replicas to write.");
  });
  CHECK(f.A({"CONFIG", "SET", "min-replicas-to-write", "1"}) == OK);
  CHECK(f.A({"XWRITE"}) == E("NOREPLICAS Not enough good replicas to write."));
  CHECK(f.A({"XREAD"}) == OK);
  CHECK(runs == 1);
  refuse = false;
  CHECK(f.A({"XWRITE"}) == OK);
  CHECK(runs == 2);
  // Over maxmemory (noeviction), a denyoom command is refused before it runs, in MULTI too.
  CHECK(f.A({"SET", "big", std::string(4096, 'x')}) == OK);
  CHECK(f.A({"CONFIG", "SET", "maxmemory", "1"}) == OK);
  CHECK(f.A({"XGROW"}).rfind("-OOM command not allowed", 0) == 0);
  CHECK(f.A({"XWRITE"}) == OK);  // write, not denyoom: runs (as DEL does)
  CHECK(runs == 3);
  CHECK(f.A({"MULTI"}).rfind("-OOM", 0) != 0);
  CHECK(f.A({"XGROW"}).rfind("-OOM command not allowed", 0) == 0);
  CHECK(f.A({"DISCARD"}) == OK);
  CHECK(runs == 3);
}

TEST_CASE("replica-serve-stale-data no: MASTERDOWN while the link is down, EXEC aborted", "[redis][multi]") {
  Fx f;
  bool down = false;
  f.ex->set_link_down_query([&] { return down; });
  const std::string masterdown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
  CHECK(f.A({"SET", "xx", "1"}) == OK);
  down = true;
  CHECK(f.A({"GET", "xx"}) == "$1\r\n1\r\n");  // yes (the default): served
  CHECK(f.A({"CONFIG", "SET", "replica-serve-stale-data", "maybe"}).rfind("-ERR CONFIG SET failed", 0) == 0);
  CHECK(f.A({"CONFIG", "SET", "slave-serve-stale-data", "no"}) == OK);
  CHECK(f.A({"GET", "xx"}) == E(masterdown));
  CHECK(f.A({"PING"}) == E(masterdown));
  CHECK(f.A({"INFO", "keyspace"}).rfind("$", 0) == 0);  // flagged stale in Redis: served
  CHECK(f.A({"CONFIG", "GET", "replica-serve-stale-data"}) == "*2\r\n$24\r\nreplica-serve-stale-data\r\n$2\r\nno\r\n");
  // Queued while up, refused at EXEC once down; MULTI itself runs while down.
  down = false;
  CHECK(f.A({"MULTI"}) == OK);
  CHECK(f.A({"GET", "xx"}) == QUEUED);
  down = true;
  CHECK(f.A({"EXEC"}) == E("EXECABORT Transaction discarded because of: " + masterdown));
  CHECK(f.A({"MULTI"}) == OK);
  down = false;
  CHECK(f.A({"GET", "xx"}) == QUEUED);
  CHECK(f.A({"EXEC"}) == "*1\r\n$1\r\n1\r\n");
}
