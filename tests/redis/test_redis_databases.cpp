// tests/redis/test_redis_databases.cpp: Redis's databases in the command layer (an executor over
// a vector of stores) and in the replication stream (a StreamApplier over every database):
// SELECT, SWAPDB, MOVE, COPY ... DB, FLUSHDB and FLUSHALL, INFO keyspace and stats, one
// maxmemory over all of them, and a TTL and field TTLs carried by MOVE, COPY and the stream.
// Every expected reply of the command layer was checked against redis-server 7.0.15 (the
// differential test, test_redis_differential.cpp, runs MOVE, SWAPDB and COPY ... DB at random).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "text.hpp"

#include <expiring/redis/apply_stream.hpp>

using expiring::ManualClock;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::Session;
using expiring::redis::StreamApplier;
using expiring::redis::StreamOutcome;
using expiring::redis::ValueStore;
using redistext::info_field;

namespace {

constexpr std::int64_t kT0 = 1'000'000;
using VStore = ValueStore<ManualClock&>;

using Dbs = commands_under_test::Databases;

struct Fx : Dbs {
  CommandExecutor<ManualClock&> ex{dbs};
  Session s;
  Fx() : Dbs(16, kT0) {}
  std::string R(std::initializer_list<std::string_view> argv) {
    std::vector<std::string> a(argv.begin(), argv.end());
    return ex.execute(a, s).to_resp();
  }
};

const std::string OK = "+OK\r\n";
const std::string NIL = "$-1\r\n";
std::string I(std::int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string B(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string E(std::string_view s) { return "-" + std::string(s) + "\r\n"; }

}  // namespace

TEST_CASE("databases: SELECT picks a session's database and refuses what Redis refuses", "[redis][databases]") {
  Fx f;
  CHECK(f.R({"SET", "k", "zero"}) == OK);
  CHECK(f.R({"SELECT", "3"}) == OK);
  CHECK(f.R({"GET", "k"}) == NIL);
  CHECK(f.R({"SET", "k", "three"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(1));
  CHECK(f.R({"SELECT", "16"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SELECT", "-1"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SELECT", "x"}) == E("ERR value is not an integer or out of range"));
  CHECK(f.R({"SELECT", "99999999999"}) == E("ERR value is out of range, value must between -2147483648 and 2147483647"));
  CHECK(f.R({"GET", "k"}) == B("three"));  // still in 3
  Session other;                           // a session of its own starts in 0
  CHECK(f.ex.execute({"GET", "k"}, other).to_resp() == B("zero"));
  CHECK(f.R({"CONFIG", "GET", "databases"}) == "*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n");
  const std::string ks = f.R({"INFO", "keyspace"});
  CHECK(info_field(ks, "db0") == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  CHECK(info_field(ks, "db3") == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  CHECK(info_field(ks, "db1").empty());
}

TEST_CASE("databases: SWAPDB exchanges two databases for every session", "[redis][databases]") {
  Fx f;
  CHECK(f.R({"SET", "k", "zero"}) == OK);
  CHECK(f.R({"SELECT", "5"}) == OK);
  CHECK(f.R({"SET", "k", "five", "PX", "100"}) == OK);
  Session other;
  CHECK(f.R({"SWAPDB", "0", "5"}) == OK);
  CHECK(f.R({"GET", "k"}) == B("zero"));                              // this session is in 5
  CHECK(f.ex.execute({"GET", "k"}, other).to_resp() == B("five"));  // the other in 0
  CHECK(f.ex.execute({"PTTL", "k"}, other).to_resp() == I(100));
  CHECK(f.R({"SWAPDB", "0", "0"}) == OK);
  CHECK(f.R({"SWAPDB", "x", "0"}) == E("ERR invalid first DB index"));
  CHECK(f.R({"SWAPDB", "0", "x"}) == E("ERR invalid second DB index"));
  CHECK(f.R({"SWAPDB", "0", "99999999999"}) == E("ERR invalid second DB index"));
  CHECK(f.R({"SWAPDB", "0", "16"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SWAPDB", "-1", "0"}) == E("ERR DB index is out of range"));
  CHECK(f.dbs[0]->peek("k") != nullptr);  // the executor's vector is the one swapped
  CHECK(f.ex.stores()[5] == f.owned[0].get());
}

TEST_CASE("databases: MOVE carries a key with its TTL and its fields' TTLs and never overwrites", "[redis][databases]") {
  Fx f;
  CHECK(f.R({"SET", "s", "v", "PX", "5000"}) == OK);
  CHECK(f.R({"HSET", "h", "a", "1", "b", "2"}) == I(2));
  CHECK(f.R({"HPEXPIRE", "h", "3000", "FIELDS", "1", "a"}) == "*1\r\n:1\r\n");
  CHECK(f.R({"MOVE", "s", "2"}) == I(1));
  CHECK(f.R({"MOVE", "h", "2"}) == I(1));
  CHECK(f.R({"EXISTS", "s", "h"}) == I(0));
  CHECK(f.R({"MOVE", "nothing", "2"}) == I(0));
  CHECK(f.R({"MOVE", "s", "0"}) == E("ERR source and destination objects are the same"));
  CHECK(f.R({"MOVE", "s", "16"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"MOVE", "s", "x"}) == E("ERR value is not an integer or out of range"));
  CHECK(f.R({"SELECT", "2"}) == OK);
  CHECK(f.R({"PTTL", "s"}) == I(5000));
  CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "a", "b"}) == "*2\r\n:3000\r\n:-1\r\n");
  CHECK(f.R({"SET", "s2", "here"}) == OK);
  CHECK(f.R({"SELECT", "0"}) == OK);
  CHECK(f.R({"SET", "s2", "there"}) == OK);
  CHECK(f.R({"MOVE", "s2", "2"}) == I(0));  // exists in 2: nothing moves
  CHECK(f.R({"GET", "s2"}) == B("there"));
  SECTION("a key stale at the destination does not stop it") {
    CHECK(f.R({"SELECT", "2"}) == OK);
    CHECK(f.R({"PEXPIRE", "s2", "10"}) == I(1));
    f.clock.advance(11);
    CHECK(f.R({"SELECT", "0"}) == OK);
    CHECK(f.R({"MOVE", "s2", "2"}) == I(1));
    CHECK(f.R({"SELECT", "2"}) == OK);
    CHECK(f.R({"GET", "s2"}) == B("there"));
  }
}

TEST_CASE("databases: COPY ... DB copies across databases, REPLACE or not", "[redis][databases]") {
  Fx f;
  CHECK(f.R({"SET", "a", "1", "PX", "700"}) == OK);
  CHECK(f.R({"COPY", "a", "a", "DB", "1"}) == I(1));  // same name, other database: allowed
  CHECK(f.R({"COPY", "a", "a", "DB", "0"}) == E("ERR source and destination objects are the same"));
  CHECK(f.R({"COPY", "a", "a", "DB", "1"}) == I(0));
  CHECK(f.R({"SET", "a", "2"}) == OK);
  CHECK(f.R({"COPY", "a", "a", "DB", "1", "REPLACE"}) == I(1));
  CHECK(f.R({"COPY", "nothing", "b", "DB", "1"}) == I(0));
  CHECK(f.R({"COPY", "a", "b", "DB", "16"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SELECT", "1"}) == OK);
  CHECK(f.R({"GET", "a"}) == B("2"));
  CHECK(f.R({"PTTL", "a"}) == I(-1));  // REPLACE took the source's state: no TTL
  CHECK(f.R({"SELECT", "0"}) == OK);
  CHECK(f.R({"GET", "a"}) == B("2"));  // the source stays
}

TEST_CASE("databases: FLUSHDB empties one and FLUSHALL all while INFO stats sum them", "[redis][databases]") {
  Fx f;
  for (const char* db : {"0", "1", "2"}) {
    CHECK(f.R({"SELECT", db}) == OK);
    CHECK(f.R({"SET", "k", db}) == OK);
    CHECK(f.R({"GET", "k"}) == B(db));
  }
  CHECK(info_field(f.R({"INFO", "stats"}), "keyspace_hits") == "3");
  CHECK(f.R({"FLUSHDB"}) == OK);
  CHECK(f.dbs[2]->size() == 0);
  CHECK(f.dbs[1]->size() == 1);
  CHECK(f.R({"FLUSHALL"}) == OK);
  CHECK(f.dbs[0]->size() == 0);
  CHECK(f.dbs[1]->size() == 0);
  CHECK(f.R({"CONFIG", "SET", "hz", "50"}) == OK);  // a store setting: every database's
  CHECK(f.dbs[9]->options().hz == 50);
}

TEST_CASE("databases: one maxmemory bounds them all, and a write evicts from another database", "[redis][databases][maxmemory]") {
  Fx f;
  CHECK(f.R({"SELECT", "1"}) == OK);
  for (int i = 0; i < 200; ++i) {
    std::vector<std::string> a{"SET", "old" + std::to_string(i), std::string(1000, 'x')};
    CHECK(f.ex.execute(a, f.s).to_resp() == OK);
  }
  const std::size_t in_one = f.dbs[1]->used_memory();
  CHECK(std::stoull(info_field(f.R({"INFO", "memory"}), "used_memory")) == in_one);
  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "allkeys-random"}) == OK);
  CHECK(f.R({"CONFIG", "SET", "maxmemory", std::to_string(in_one + 2000)}) == OK);
  CHECK(f.R({"SELECT", "0"}) == OK);
  for (int i = 0; i < 50; ++i) {
    std::vector<std::string> a{"SET", "new" + std::to_string(i), std::string(1000, 'y')};
    CHECK(f.ex.execute(a, f.s).to_resp() == OK);
  }
  // Database 0 grew and database 1 made the room: together they stay about the limit.
  CHECK(f.dbs[0]->size() > 40);
  CHECK(f.dbs[1]->size() < 200);
  CHECK(f.ex.used_memory() <= in_one + 2000 + 2000);
  CHECK(std::stoull(info_field(f.R({"INFO", "stats"}), "evicted_keys")) > 0);
  SECTION("noeviction refuses a write once all of them are full") {
    CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == OK);
    CHECK(f.R({"CONFIG", "SET", "maxmemory", "1000"}) == OK);
    CHECK(f.R({"SET", "x", "y"}) == E("OOM command not allowed when used memory > 'maxmemory'."));
    CHECK(f.R({"GET", "new1"}) != E("OOM command not allowed when used memory > 'maxmemory'."));
  }
}

TEST_CASE("databases: a stream applier over every database follows SELECT, MOVE, COPY, SWAPDB and FLUSHALL",
          "[redis][databases][replication]") {
  Dbs r(4, kT0);
  StreamApplier<VStore> apply(r.dbs);
  using A = std::vector<std::string>;
  CHECK(apply.apply(A{"SET", "k", "zero"}) == StreamOutcome::applied);
  CHECK(apply.apply(A{"SELECT", "2"}) == StreamOutcome::ignored);
  CHECK(apply.apply(A{"SET", "k", "two", "PXAT", std::to_string(kT0 + 500)}) == StreamOutcome::applied);
  CHECK(apply.apply(A{"MOVE", "k", "3"}) == StreamOutcome::applied);
  CHECK(r.dbs[2]->size() == 0);
  CHECK(*r.dbs[3]->peek("k")->string() == "two");
  CHECK(r.dbs[3]->pexpiretime("k") == kT0 + 500);
  CHECK(apply.apply(A{"SELECT", "0"}) == StreamOutcome::ignored);
  CHECK(apply.apply(A{"COPY", "k", "c", "DB", "1"}) == StreamOutcome::applied);
  CHECK(*r.dbs[1]->peek("c")->string() == "zero");
  CHECK(apply.apply(A{"SELECT", "9"}) == StreamOutcome::ignored);
  CHECK(apply.apply(A{"SET", "k", "nine"}) == StreamOutcome::skipped);  // a database it does not have
  CHECK(apply.apply(A{"SWAPDB", "0", "3"}) == StreamOutcome::applied);
  CHECK(*r.dbs[0]->peek("k")->string() == "two");
  CHECK(r.dbs[3] == r.owned[0].get());
  // A transaction's SELECT applies at EXEC, in order.
  CHECK(apply.apply(A{"MULTI"}) == StreamOutcome::applied);
  CHECK(apply.apply(A{"SELECT", "1"}) == StreamOutcome::applied);
  CHECK(apply.apply(A{"SET", "t", "in1"}) == StreamOutcome::applied);
  CHECK(r.dbs[1]->peek("t") == nullptr);
  CHECK(apply.apply(A{"EXEC"}) == StreamOutcome::applied);
  CHECK(*r.dbs[1]->peek("t")->string() == "in1");
  CHECK(apply.selected_db() == 1);
  CHECK(apply.apply(A{"FLUSHDB"}) == StreamOutcome::applied);
  CHECK(r.dbs[1]->size() == 0);
  CHECK(r.dbs[0]->size() == 1);
  CHECK(apply.apply(A{"FLUSHALL"}) == StreamOutcome::applied);
  for (VStore* d : r.dbs) CHECK(d->size() == 0);

  SECTION("an applier of one database refuses a SWAPDB of it and skips the others'") {
    Dbs one(1, kT0);
    StreamApplier<VStore> single(*one.dbs[0], 0);
    CHECK(single.apply(A{"SWAPDB", "1", "2"}) == StreamOutcome::skipped);
    CHECK(single.apply(A{"SWAPDB", "0", "2"}) == StreamOutcome::refused);
    CHECK(single.apply(A{"SELECT", "1"}) == StreamOutcome::ignored);
    CHECK(single.apply(A{"SET", "k", "v"}) == StreamOutcome::skipped);
    CHECK(single.apply(A{"FLUSHALL"}) == StreamOutcome::applied);
  }
}
