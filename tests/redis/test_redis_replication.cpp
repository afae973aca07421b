// tests/redis/test_redis_replication.cpp: the change feed of the command layer as RESP
// commands (include/expiring/redis/replication.hpp), and a replica that applies them with
// StreamApplier (apply_stream.hpp). The live tests against redis-server are in
// test_redis_replication_live.cpp.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "expiring/redis/replication.hpp"

using expiring::ChangeOp;
using expiring::ManualClock;
using expiring::redis::CommandExecutor;
using expiring::redis::RequestParser;
using expiring::redis::Value;
using expiring::redis::ValueStore;
using Strs = std::vector<std::string>;

namespace {

constexpr std::int64_t kT0 = 1'000'000;

using Stored = std::vector<std::tuple<std::string, std::string, std::optional<std::int64_t>>>;
template <class S>
Stored stored(const S& s) {
  Stored out;
  std::uint64_t cursor = 0;
  do {
    cursor = s.scan_stored(cursor, 1000, [&](const std::string& k, const Value& v, std::optional<std::int64_t> d) {
      std::string bytes;
      expiring::Codec<Value>::encode(v, bytes);
      out.emplace_back(k, bytes, d);
    });
  } while (cursor != 0);
  std::sort(out.begin(), out.end());
  return out;
}

// The commands a feed sends, as text lines ("SET k v PXAT 1100000").
struct Wire {
  std::string bytes;
  void add(const expiring::redis::ValueChange& c) { expiring::redis::write_change(c, bytes); }
  Strs lines() const {
    RequestParser p;
    p.feed(bytes.data(), bytes.size());
    Strs out, argv;
    while (p.next(argv) == RequestParser::Status::command) {
      std::string l;
      for (const std::string& a : argv) l += (l.empty() ? "" : " ") + a;
      out.push_back(l);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("replication stream: the commands Redis 7 propagates, in absolute time", "[redis][replication]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock};
  CommandExecutor<ManualClock&> ex{store};
  Wire w;
  store.set_change_feed([&](const expiring::redis::ValueChange& c) { w.add(c); });
  (void)ex.execute({"SET", "k", "v", "EX", "100"});
  (void)ex.execute({"EXPIRE", "k", "200"});
  (void)ex.execute({"INCR", "n"});
  (void)ex.execute({"EXPIRE", "n", "100"});
  (void)ex.execute({"INCR", "n"});
  (void)ex.execute({"APPEND", "n", "0"});
  (void)ex.execute({"PERSIST", "k"});
  (void)ex.execute({"RENAME", "k", "j"});
  (void)ex.execute({"GET", "nothing"});
  (void)ex.execute({"SET", "s", "v", "PX", "10"});
  clock.set(kT0 + 11);
  (void)ex.execute({"SET", "s", "w"});
  (void)ex.execute({"EXPIRE", "j", "-1"});
  (void)ex.execute({"FLUSHALL"});
  CHECK(w.lines() == Strs{"SET k v PXAT 1100000", "PEXPIREAT k 1200000", "SET n 1", "PEXPIREAT n 1100000",
                          "SET n 2 KEEPTTL", "SET n 20 KEEPTTL", "PERSIST k", "RENAME k j", "SET s v PXAT 1000010", "MULTI", "DEL s",
                          "SET s w", "EXEC", "DEL j", "FLUSHDB"});
}

TEST_CASE("replication stream: field changes travel as Redis 7.4's field commands", "[redis][replication]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock};
  CommandExecutor<ManualClock&> ex{store};
  Wire w;
  store.set_change_feed([&](const expiring::redis::ValueChange& c) { w.add(c); });
  (void)ex.execute({"HSET", "h", "a", "1", "b", "2"});
  (void)ex.execute({"HPEXPIRE", "h", "500", "FIELDS", "2", "a", "b"});
  (void)ex.execute({"HPEXPIRE", "h", "800", "FIELDS", "1", "b"});
  (void)ex.execute({"PEXPIRE", "h", "9000"});
  (void)ex.execute({"HINCRBY", "h", "b", "3"});
  (void)ex.execute({"HPERSIST", "h", "FIELDS", "2", "b", "none"});
  (void)ex.execute({"HSETNX", "h", "c", "3"});
  (void)ex.execute({"HDEL", "h", "c", "none"});
  (void)ex.execute({"HGET", "h", "a"});
  clock.set(kT0 + 501);
  (void)ex.execute({"HSET", "h", "d", "4"});  // `a` is reclaimed first: its HDEL goes ahead
  (void)ex.execute({"HPEXPIREAT", "h", "1", "FIELDS", "1", "d"});  // past: deleted
  (void)ex.execute({"HDEL", "h", "b"});  // the last field: the key goes
  CHECK(w.lines() == Strs{"HSET h a 1 b 2",
                          "HPEXPIREAT h 1000500 FIELDS 2 a b",
                          "HPEXPIREAT h 1000800 FIELDS 1 b",
                          "PEXPIREAT h 1009000",
                          "MULTI", "HSET h b 5", "HPEXPIREAT h 1000800 FIELDS 1 b", "EXEC",
                          "HPERSIST h FIELDS 1 b",
                          "HSET h c 3",
                          "HDEL h c",
                          "HDEL h a",
                          "HSET h d 4",
                          "HDEL h d",
                          "DEL h"});
}

TEST_CASE("replication stream: a hash placed whole travels as RESTORE with a DUMP payload, and applies back",
          "[redis][replication]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock};
  CommandExecutor<ManualClock&> ex{store};
  (void)ex.execute({"HSET", "g", "a", "1", "b", "2"});
  (void)ex.execute({"HPEXPIRE", "g", "500", "FIELDS", "1", "a"});
  Wire w;
  store.set_change_feed([&](const expiring::redis::ValueChange& c) { w.add(c); });
  (void)ex.execute({"COPY", "g", "h"});
  (void)ex.execute({"PEXPIRE", "h", "9000"});
  const Strs lines = w.lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].rfind("RESTORE h 0 ", 0) == 0);
  CHECK(lines[1] == "PEXPIREAT h 1009000");
  // The payload is Redis's DUMP format: restore() reads it.
  RequestParser p;
  p.feed(w.bytes.data(), w.bytes.size());
  Strs argv;
  REQUIRE(p.next(argv) == RequestParser::Status::command);
  ValueStore<ManualClock&> other{clock};
  REQUIRE(expiring::restore(other, "h", argv[3], {}).ok());
  REQUIRE(other.peek("h")->hash() != nullptr);
  CHECK(other.peek("h")->hash()->size() == 2);
  CHECK(other.peek("h")->hash()->volatile_count() == 1);
  // A replica applies it; what it cannot read is refused and counted, the stream goes on.
  expiring::Options ro;
  ro.replica = true;
  ValueStore<ManualClock&> replica{clock, ro};
  expiring::redis::StreamApplier<ValueStore<ManualClock&>> apply(replica);
  using O = expiring::redis::StreamOutcome;
  CHECK(apply.apply(argv) == O::applied);
  CHECK(replica.peek("h")->hash()->size() == 2);
  CHECK(apply.apply({"SET", "k", "v", "PXAT", "x"}) == O::refused);
  CHECK(apply.apply({"RESTORE", "k", "0", "garbage", "REPLACE"}) == O::refused);
  CHECK(apply.apply({"GET", "k"}) == O::skipped);
  CHECK(apply.apply({"pexpireat", "h", "-9223372036854775808"}) == O::applied);
  std::optional<std::int64_t> deadline;
  CHECK(replica.peek_stored("h", [&](const Value&, std::optional<std::int64_t> d) { deadline = d; }));
  CHECK(deadline == INT64_MIN);  // stored as sent; hidden from reads until the primary's DEL
  CHECK(replica.pexpiretime("h") == -2);
  CHECK(apply.refused() == 2);
  CHECK(apply.skipped() == 1);
}

// Random commands on a primary; its stream applied on a replica after each one:
// the two store exactly the same keys, values and deadlines, stale entries included.
TEST_CASE("replication stream: a replica applying the stream stores what the primary stores",
          "[redis][replication][model]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> primary{clock};
  CommandExecutor<ManualClock&> ex{primary};
  expiring::Options ro;
  ro.replica = true;
  // The replica's clock runs ahead of the primary's, and the replica is read: what is stale
  // by its clock is hidden from its readers and left for the primary's commands (D31, D35).
  ManualClock rclock{kT0};
  ValueStore<ManualClock&> replica{rclock, ro};
  CommandExecutor<ManualClock&> rex{replica};
  std::string wire;
  primary.set_change_feed([&](const expiring::redis::ValueChange& c) { expiring::redis::write_change(c, wire); });
  RequestParser parser;
  expiring::redis::StreamApplier<ValueStore<ManualClock&>> apply(replica);
  std::mt19937_64 rng(5);
  auto key = [&] { return "k" + std::to_string(rng() % 30); };
  auto num = [&](int n) { return std::to_string(static_cast<int>(rng() % static_cast<unsigned>(n)) - 3); };
  auto field = [&] { return "f" + std::to_string(rng() % 5); };
  for (int step = 0; step < 4000; ++step) {
    Strs cmd;
    switch (rng() % 25) {
      case 0: cmd = {"SET", key(), "v" + std::to_string(step)}; break;
      case 1: cmd = {"SET", key(), "t", "PX", std::to_string(1 + rng() % 40)}; break;
      case 2: cmd = {"SET", key(), "k", "KEEPTTL"}; break;
      case 3: cmd = {"PEXPIRE", key(), num(50)}; break;
      case 4: cmd = {"PERSIST", key()}; break;
      case 5: cmd = {"DEL", key(), key()}; break;
      case 6: cmd = {"RENAME", key(), key()}; break;
      case 7: cmd = {"GET", key()}; break;
      case 8: cmd = {"HSET", key(), field(), "x", field(), "y"}; break;
      case 9: cmd = {"HPEXPIRE", key(), std::to_string(1 + rng() % 40), "FIELDS", "2", field(), field()}; break;
      case 10: cmd = {"HGETALL", key()}; break;
      case 11: cmd = {"INCR", key()}; break;
      case 12: clock.advance(static_cast<std::int64_t>(rng() % 6)); continue;
      case 13: (void)primary.tick(expiring::CycleKind::Slow); break;
      case 14: cmd = {"HDEL", key(), field(), field()}; break;
      case 15: cmd = {"HPERSIST", key(), "FIELDS", "1", field()}; break;
      case 16: cmd = {"HINCRBY", key(), field(), "2"}; break;
      case 17: cmd = {"HPEXPIRE", key(), num(8), rng() % 2 ? "GT" : "NX", "FIELDS", "1", field()}; break;
      case 18: cmd = {"HSETNX", key(), field(), "n"}; break;
      case 19: cmd = {"HPEXPIREAT", key(), std::to_string(kT0 + rng() % 2000), "FIELDS", "1", field()}; break;
      case 20:  // replica reads, with its clock ahead
        (void)rex.execute({"HGETALL", key()});
        (void)rex.execute({"HLEN", key()});
        (void)rex.execute({"HGET", key(), field()});
        (void)rex.execute({"HPTTL", key(), "FIELDS", "1", field()});
        (void)rex.execute({"GET", key()});
        continue;
      case 21: rclock.set(clock.now_ms() + static_cast<std::int64_t>(rng() % 20)); continue;
      case 22: {  // Redis 8's HSETEX, every form
        static const char* const kForms[] = {"", "KEEPTTL", "PX", "FNX", "FXX"};
        cmd = {"HSETEX", key()};
        const char* form = kForms[rng() % 5];
        if (*form != '\0') cmd.emplace_back(form);
        if (std::string(form) == "PX") cmd.push_back(num(40));
        cmd.insert(cmd.end(), {"FIELDS", "2", field(), "s", field(), "t"});
        break;
      }
      case 23:
        cmd = {"HGETEX", key(), rng() % 2 ? "PERSIST" : "PX", "FIELDS", "1", field()};
        if (cmd[2] == "PX") cmd.insert(cmd.begin() + 3, num(40));
        break;
      case 24: cmd = {"HGETDEL", key(), "FIELDS", "2", field(), field()}; break;
    }
    if (!cmd.empty()) (void)ex.execute(cmd);
    parser.feed(wire.data(), wire.size());
    wire.clear();
    Strs argv;
    while (parser.next(argv) == RequestParser::Status::command) {
      const auto o = apply.apply(argv);
      INFO(argv[0]);
      REQUIRE((o == expiring::redis::StreamOutcome::applied || o == expiring::redis::StreamOutcome::ignored));
    }
    REQUIRE_FALSE(apply.in_multi());
    INFO("step " << step);
    REQUIRE(stored(replica) == stored(primary));
  }
}

// docs/semantics.md D35: the primary's commands see every key it has not deleted, past its
// deadline by the replica's clock or not; readers do not.
TEST_CASE("replication stream: a primary's command lands on a key stale by the replica's clock", "[redis][replication]") {
  ManualClock clock{kT0};
  expiring::Options ro;
  ro.replica = true;
  ValueStore<ManualClock&> replica{clock, ro};
  expiring::redis::StreamApplier<ValueStore<ManualClock&>> apply(replica);
  using O = expiring::redis::StreamOutcome;
  REQUIRE(apply.apply({"SET", "n", "5", "PXAT", std::to_string(kT0 + 100)}) == O::applied);
  REQUIRE(apply.apply({"HSET", "h", "a", "1"}) == O::applied);
  REQUIRE(apply.apply({"PEXPIREAT", "h", std::to_string(kT0 + 100)}) == O::applied);
  clock.set(kT0 + 500);  // both past their deadlines here; the primary has not deleted them
  CHECK(replica.get("n") == nullptr);  // hidden from readers
  REQUIRE(apply.apply({"INCR", "n"}) == O::applied);
  REQUIRE(apply.apply({"HSET", "h", "b", "2"}) == O::applied);
  std::optional<std::int64_t> deadline;
  std::string text;
  REQUIRE(replica.peek_stored("n", [&](const Value& v, std::optional<std::int64_t> d) {
    text = *v.string();
    deadline = d;
  }));
  CHECK(text == "6");                 // added to its value, as on the primary
  CHECK(deadline == kT0 + 100);       // and its deadline kept
  REQUIRE(apply.apply({"PERSIST", "n"}) == O::applied);
  CHECK(*replica.get("n")->string() == "6");  // kept for good
  REQUIRE(apply.apply({"PERSIST", "h"}) == O::applied);
  REQUIRE(replica.get("h") != nullptr);
  CHECK(replica.get("h")->hash()->size() == 2);
  // A relative time (a primary before Redis 7.0) against the replica's clock.
  REQUIRE(apply.apply({"SETEX", "s", "10", "v"}) == O::applied);
  CHECK(replica.pexpiretime("s") == kT0 + 500 + 10'000);
  // Other databases are skipped, FLUSHALL empties all of them.
  REQUIRE(apply.apply({"SELECT", "1"}) == O::ignored);
  CHECK(apply.apply({"SET", "other", "x"}) == O::skipped);
  CHECK(apply.apply({"FLUSHALL"}) == O::applied);
  CHECK(replica.size() == 0);
}

// What a Redis 8 primary sends for HSETEX (its time as PXAT) and HINCRBYFLOAT (HSETEX KEEPTTL).
TEST_CASE("replication stream: a Redis 8 primary's HSETEX", "[redis][replication]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> replica{clock};
  expiring::redis::StreamApplier<ValueStore<ManualClock&>> apply(replica);
  CommandExecutor<ManualClock&> rex{replica};
  using O = expiring::redis::StreamOutcome;
  const std::string at = std::to_string(kT0 + 5000);
  REQUIRE(apply.apply({"HSETEX", "h", "FIELDS", "2", "a", "1", "b", "2"}) == O::applied);
  REQUIRE(apply.apply({"HSETEX", "h", "FNX", "PXAT", at, "FIELDS", "1", "c", "3"}) == O::applied);
  REQUIRE(apply.apply({"HSETEX", "h", "PXAT", at, "FIELDS", "1", "a", "x"}) == O::applied);
  REQUIRE(apply.apply({"hsetex", "h", "keepttl", "fields", "2", "a", "1.5", "b", "y"}) == O::applied);
  CHECK(rex.execute({"HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"}).to_resp() ==
        "*3\r\n:" + at + "\r\n:-1\r\n:" + at + "\r\n");
  CHECK(rex.execute({"HMGET", "h", "a", "b", "c"}).to_resp() == "*3\r\n$3\r\n1.5\r\n$1\r\ny\r\n$1\r\n3\r\n");
  REQUIRE(apply.apply({"HSETEX", "h", "FXX", "FIELDS", "1", "c", "4"}) == O::applied);  // no TTL option: cleared
  CHECK(rex.execute({"HPEXPIRETIME", "h", "FIELDS", "1", "c"}).to_resp() == "*1\r\n:-1\r\n");
  // What it cannot read is refused, and changes nothing.
  CHECK(apply.apply({"HSETEX", "h", "FIELDS", "2", "a", "1"}) == O::refused);
  CHECK(apply.apply({"HSETEX", "h", "BOGUS", "FIELDS", "1", "a", "1"}) == O::refused);
  CHECK(apply.apply({"HSETEX", "h", "PXAT", "-1", "FIELDS", "1", "a", "1"}) == O::refused);
  CHECK(apply.apply({"HSETEX", "h", "PXAT", "70368744177664", "FIELDS", "1", "a", "1"}) == O::refused);
  CHECK(rex.execute({"HGET", "h", "a"}).to_resp() == "$3\r\n1.5\r\n");
}

TEST_CASE("replication stream: PUBLISH goes to the replica's publish handler, inside MULTI too", "[redis][replication]") {
  ManualClock clock{kT0};
  expiring::Options ro;
  ro.replica = true;
  ValueStore<ManualClock&> replica{clock, ro};
  expiring::redis::StreamApplier<ValueStore<ManualClock&>> apply(replica);
  using O = expiring::redis::StreamOutcome;
  CHECK(apply.apply({"PUBLISH", "ch", "lost"}) == O::ignored);  // no handler: nothing to deliver
  Strs got;
  apply.set_publish_handler([&](const std::string& c, const std::string& m) { got.push_back(c + "=" + m); });
  CHECK(apply.apply({"PUBLISH", "ch", "one"}) == O::ignored);
  CHECK(apply.apply({"MULTI"}) != O::failed);
  CHECK(apply.apply({"SET", "k", "v"}) == O::applied);
  CHECK(apply.apply({"PUBLISH", "ch", "two"}) == O::applied);  // held until EXEC
  CHECK(got == Strs{"ch=one"});
  CHECK(apply.apply({"EXEC"}) == O::applied);
  CHECK(got == Strs{"ch=one", "ch=two"});
  CHECK(*replica.get("k")->string() == "v");
  CHECK(replica.size() == 1);  // a message is not a key
}
