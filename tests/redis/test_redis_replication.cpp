// tests/redis/test_redis_replication.cpp: the change feed of the command layer as RESP
// commands (include/expiring/redis/replication.hpp), and a replica that parses them back and
// applies them. The live test of two servers is in test_redis_replica_live.cpp.
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
                          "SET s w", "EXEC", "DEL j", "FLUSHALL"});
}

TEST_CASE("replication stream: hashes travel whole as RESTORE, and parse back", "[redis][replication]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock};
  CommandExecutor<ManualClock&> ex{store};
  Wire w;
  store.set_change_feed([&](const expiring::redis::ValueChange& c) { w.add(c); });
  (void)ex.execute({"HSET", "h", "a", "1", "b", "2"});
  (void)ex.execute({"HPEXPIRE", "h", "500", "FIELDS", "1", "a"});
  (void)ex.execute({"PEXPIRE", "h", "9000"});
  const Strs lines = w.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("RESTORE h 0 ", 0) == 0);
  CHECK(lines[2] == "PEXPIREAT h 1009000");
  RequestParser p;
  p.feed(w.bytes.data(), w.bytes.size());
  Strs argv;
  REQUIRE(p.next(argv) == RequestParser::Status::command);
  REQUIRE(p.next(argv) == RequestParser::Status::command);
  const auto r = expiring::redis::parse_change(argv);
  REQUIRE(r.has_value());
  CHECK(r->op == ChangeOp::set);
  REQUIRE(r->value->hash() != nullptr);
  CHECK(r->value->hash()->size() == 2);
  // Malformed commands are not records.
  CHECK_FALSE(expiring::redis::parse_change({"SET", "k"}).has_value());
  CHECK_FALSE(expiring::redis::parse_change({"SET", "k", "v", "PXAT", "x"}).has_value());
  CHECK_FALSE(expiring::redis::parse_change({"RESTORE", "k", "0", "garbage", "REPLACE"}).has_value());
  CHECK_FALSE(expiring::redis::parse_change({"RESTORE", "k", "5", "garbage", "REPLACE"}).has_value());
  CHECK_FALSE(expiring::redis::parse_change({"GET", "k"}).has_value());
  CHECK(expiring::redis::parse_change({"pexpireat", "k", "-9223372036854775808"})->at_ms == INT64_MIN);
}

// Random commands on a primary; its stream parsed and applied on a replica after each one:
// the two store exactly the same keys, values and deadlines, stale entries included.
TEST_CASE("replication stream: a replica applying the parsed stream stores what the primary stores",
          "[redis][replication][model]") {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> primary{clock};
  CommandExecutor<ManualClock&> ex{primary};
  expiring::Options ro;
  ro.replica = true;
  ValueStore<ManualClock&> replica{clock, ro};
  std::string wire;
  primary.set_change_feed([&](const expiring::redis::ValueChange& c) { expiring::redis::write_change(c, wire); });
  RequestParser parser;
  std::vector<expiring::redis::ValueRecord> multi;
  bool in_multi = false;
  std::mt19937_64 rng(5);
  auto key = [&] { return "k" + std::to_string(rng() % 30); };
  auto num = [&](int n) { return std::to_string(static_cast<int>(rng() % static_cast<unsigned>(n)) - 3); };
  for (int step = 0; step < 3000; ++step) {
    Strs cmd;
    switch (rng() % 14) {
      case 0: cmd = {"SET", key(), "v" + std::to_string(step)}; break;
      case 1: cmd = {"SET", key(), "t", "PX", std::to_string(1 + rng() % 40)}; break;
      case 2: cmd = {"SET", key(), "k", "KEEPTTL"}; break;
      case 3: cmd = {"PEXPIRE", key(), num(50)}; break;
      case 4: cmd = {"PERSIST", key()}; break;
      case 5: cmd = {"DEL", key(), key()}; break;
      case 6: cmd = {"RENAME", key(), key()}; break;
      case 7: cmd = {"GET", key()}; break;
      case 8: cmd = {"HSET", key(), "f" + std::to_string(rng() % 5), "x"}; break;
      case 9: cmd = {"HPEXPIRE", key(), std::to_string(1 + rng() % 40), "FIELDS", "1", "f" + std::to_string(rng() % 5)}; break;
      case 10: cmd = {"HGETALL", key()}; break;
      case 11: cmd = {"INCR", key()}; break;
      case 12: clock.advance(static_cast<std::int64_t>(rng() % 6)); continue;
      case 13: (void)primary.tick(expiring::CycleKind::Slow); break;
    }
    if (!cmd.empty()) (void)ex.execute(cmd);
    parser.feed(wire.data(), wire.size());
    wire.clear();
    Strs argv;
    while (parser.next(argv) == RequestParser::Status::command) {
      std::optional<expiring::redis::ValueRecord> r = expiring::redis::parse_change(argv);
      REQUIRE(r.has_value());
      if (r->op == ChangeOp::multi) {
        in_multi = true;
        continue;
      }
      if (r->op == ChangeOp::exec) {
        for (const auto& m : multi) REQUIRE(replica.apply(m.view()).ok());
        multi.clear();
        in_multi = false;
        continue;
      }
      if (in_multi) {
        multi.push_back(std::move(*r));
      } else {
        REQUIRE(replica.apply(r->view()).ok());
      }
    }
    REQUIRE_FALSE(in_multi);
    // A replica drops the stale fields a read finds (D31), so compare only keys the replica
    // has not read: this loop never reads the replica.
    INFO("step " << step);
    REQUIRE(stored(replica) == stored(primary));
  }
}
