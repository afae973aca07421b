// tests/redis/test_redis_hash.cpp: the command layer's hash commands with Redis 7.4 hash field
// expiration (include/expiring/redis/cmd_hashes.hpp, value.hpp, hash_fields.hpp),
// on a ManualClock store, as exact RESP replies.
//
// Covers: the catalogue of docs/design/hash_fields_research.md §6 (cases H1-H86, each cited
// next to its checks; the ones a command layer cannot express are listed below with the
// reason), the arity and COMMAND INFO entry of the 20 commands, WRONGTYPE in both directions
// and its precedence over argument errors, TYPE / SCAN TYPE / DBSIZE / DEL / EXISTS / EXPIRE /
// TTL / PERSIST / RENAME / COPY on hashes, every per-field reply code and condition flag,
// the time-argument errors in Redis's order, HINCRBY, lazy and active field expiry with
// INFO's expired_subkeys and subexpiry, and the key events of the catalogue (read with a
// listener on the fixture's store, since the command layer has no keyspace notifications).
//
// The reference: research §1 (syntax, argument order, exact error texts) and §3 (other
// commands), Redis 7.4.0 where docs/semantics.md D20-D27 do not decide otherwise, and
// docs/semantics.md Part B for the string commands (those replies were checked against
// redis-server 7.0.15, which has no HFE). Where this library departs from Redis on purpose the
// check asserts the library's documented outcome and its comment cites the decision: in
// particular D20 (every command that opens a hash first reclaims its stale fields, so HLEN,
// HGETALL, HTTL and HPERSIST see only live fields and leave none behind) and D23 (a write to a
// stale field treats it as absent).
//
// Catalogue cases that cannot apply here:
//   H49 (LP)   the listpack-encoding variant: one encoding here, D20 (the HT answer is checked)
//   H61, H62   HINCRBYFLOAT is not implemented
//   H67        HSCAN is not implemented
//   H71, H72   HRANDFIELD is not implemented
//   H79        HMSET and DUMP/RESTORE of a hash with field TTLs: DUMP/RESTORE's own tests
//              (tests/test_dump_restore.cpp, test_rdb_live.cpp) cover the payload; HMSET below
//   H84, H85, H86  replication / AOF propagation: the change feed's tests cover it
//              (tests/test_change_feed.cpp, tests/redis/test_redis_replication.cpp)
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "text.hpp"

namespace {

using expiring::ManualClock;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::ValueStore;
using Strs = std::vector<std::string>;

constexpr std::int64_t kT0 = 1'000'000;  // the catalogue's frozen clock, research §6

expiring::Options hash_options() {
  expiring::Options o;
  o.seed = 42;
  o.budget_clock_us = [] { return std::int64_t{0}; };  // tick() budgets never run out
  return o;
}

struct HashFx {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock, hash_options()};
  CommandExecutor<ManualClock&> ex{store};
  Strs events;  // "cause key", recorded once record() was called

  Reply run(std::initializer_list<std::string_view> argv) { return ex.execute(argv); }
  Reply run(const Strs& argv) { return ex.execute(argv); }
  std::string R(std::initializer_list<std::string_view> argv) { return run(argv).to_resp(); }
  std::string R(const Strs& argv) { return run(argv).to_resp(); }
  // @+n: the clock reads T0 + n ms.
  void at(std::int64_t n) { clock.set(kT0 + n); }
  std::string stat(const std::string& name) { return redistext::info_field(run({"INFO", "stats"}).str(), name); }
  std::string subkeys() { return stat("expired_subkeys"); }
  // INFO keyspace's db0 line after "db0:", or "" when the line is absent (no keys).
  std::string db0() { return redistext::info_field(run({"INFO", "keyspace"}).str(), "db0"); }
  void record() {
    store.set_listener([this](const auto& e) { events.push_back(std::string(to_string(e.cause)) + " " + e.key); });
  }
  Strs take() { return std::exchange(events, Strs{}); }
  // The fields stored in a hash, stale or not (peek: no side effects), or -1 without a hash.
  std::int64_t stored_fields(const std::string& key) {
    const expiring::redis::Value* v = store.peek(key);
    if (v == nullptr || v->hash() == nullptr) return -1;
    return static_cast<std::int64_t>(v->hash()->size());
  }
};

const std::string OK = "+OK\r\n";
const std::string NIL = "$-1\r\n";
const std::string EMPTY = "*0\r\n";
std::string I(std::int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string B(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string E(std::string_view s) { return "-" + std::string(s) + "\r\n"; }
// An array of integers, and an array of already encoded elements.
std::string IA(std::initializer_list<std::int64_t> v) {
  std::string s = "*" + std::to_string(v.size()) + "\r\n";
  for (std::int64_t x : v) s += I(x);
  return s;
}
std::string ARR(std::initializer_list<std::string> parts) {
  std::string s = "*" + std::to_string(parts.size()) + "\r\n";
  for (const std::string& p : parts) s += p;
  return s;
}
std::string ARITY(std::string_view cmd) { return E("ERR wrong number of arguments for '" + std::string(cmd) + "' command"); }
std::string BAD_TIME(std::string_view cmd) { return E("ERR invalid expire time in '" + std::string(cmd) + "' command"); }
const std::string WRONGTYPE = E("WRONGTYPE Operation against a key holding the wrong kind of value");
const std::string NOT_INT = E("ERR value is not an integer or out of range");
const std::string SYNTAX = E("ERR syntax error");
const std::string NEGATIVE = E("ERR invalid expire time, must be >= 0");
const std::string NO_FIELDS = E("ERR Mandatory argument FIELDS is missing or not at the right position");
const std::string NUMFIELDS_EXPIRE = E("ERR Parameter `numFields` should be greater than 0");
const std::string NUMFIELDS_QUERY = E("ERR Number of fields must be a positive integer");
const std::string MISMATCH = E("ERR The `numfields` parameter must match the number of arguments");
const std::string HASH_NOT_INT = E("ERR hash value is not an integer");
const std::string OVERFLOW = E("ERR increment or decrement would overflow");
const std::string OOM = E("OOM command not allowed when used memory > 'maxmemory'.");

// Elements of an array reply, sorted; HGETALL's as "field=value".
Strs sorted_bulks(const Reply& r) {
  Strs v;
  for (const Reply& e : r.elements()) v.push_back(e.str());
  std::sort(v.begin(), v.end());
  return v;
}
Strs sorted_pairs(const Reply& r) {
  Strs v;
  const auto& e = r.elements();
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) v.push_back(e[i].str() + "=" + e[i + 1].str());
  std::sort(v.begin(), v.end());
  return v;
}

const char* const kExpireCmds[] = {"HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT"};
const char* const kQueryCmds[] = {"HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME", "HPERSIST"};

}  // namespace

// ==== The command table ==========================================================================

TEST_CASE("hash: arity errors of the 20 hash commands name them in lower case", "[redis][hash]") {
  HashFx f;
  f.R({"HSET", "h", "f", "v"});
  // H1, H2
  CHECK(f.R({"HEXPIRE", "h", "10", "FIELDS", "1"}) == ARITY("hexpire"));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1"}) == ARITY("httl"));
  CHECK(f.R({"HPERSIST", "h"}) == ARITY("hpersist"));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1"}) == ARITY("hpersist"));

  CHECK(f.R({"HSET", "h", "f"}) == ARITY("hset"));
  CHECK(f.R({"HSET", "h", "f", "v", "g"}) == ARITY("hset"));  // a field without its value
  CHECK(f.R({"HsEt", "h", "f", "v", "g"}) == ARITY("hset"));
  CHECK(f.R({"HSETNX", "h", "f"}) == ARITY("hsetnx"));
  CHECK(f.R({"HSETNX", "h", "f", "v", "x"}) == ARITY("hsetnx"));
  CHECK(f.R({"HGET", "h"}) == ARITY("hget"));
  CHECK(f.R({"HGET", "h", "f", "x"}) == ARITY("hget"));
  CHECK(f.R({"HMGET", "h"}) == ARITY("hmget"));
  CHECK(f.R({"HDEL", "h"}) == ARITY("hdel"));
  CHECK(f.R({"HLEN"}) == ARITY("hlen"));
  CHECK(f.R({"HLEN", "h", "x"}) == ARITY("hlen"));
  CHECK(f.R({"HEXISTS", "h"}) == ARITY("hexists"));
  CHECK(f.R({"HEXISTS", "h", "f", "x"}) == ARITY("hexists"));
  CHECK(f.R({"HGETALL"}) == ARITY("hgetall"));
  CHECK(f.R({"HGETALL", "h", "x"}) == ARITY("hgetall"));
  CHECK(f.R({"HKEYS"}) == ARITY("hkeys"));
  CHECK(f.R({"HKEYS", "h", "x"}) == ARITY("hkeys"));
  CHECK(f.R({"HVALS"}) == ARITY("hvals"));
  CHECK(f.R({"hvals", "h", "x"}) == ARITY("hvals"));
  CHECK(f.R({"HINCRBY", "h", "f"}) == ARITY("hincrby"));
  CHECK(f.R({"HINCRBY", "h", "f", "1", "2"}) == ARITY("hincrby"));
  for (const char* c : kExpireCmds) {
    INFO(c);
    const std::string name = expiring::redis::detail::lowercase(c);
    CHECK(f.R({c, "h", "10", "FIELDS", "1"}) == ARITY(name));
    CHECK(f.R({c, "h", "10", "NX", "FIELDS"}) == ARITY(name));
    CHECK(f.R({c}) == ARITY(name));
  }
  for (const char* c : kQueryCmds) {
    INFO(c);
    const std::string name = expiring::redis::detail::lowercase(c);
    CHECK(f.R({c, "h", "FIELDS", "1"}) == ARITY(name));
    CHECK(f.R({c, "h"}) == ARITY(name));
  }
  // None of these changed anything.
  CHECK(f.R({"HGETALL", "h"}) == ARR({B("f"), B("v")}));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({-1}));
}

TEST_CASE("hash: COMMAND INFO gives each hash command Redis's arity and flags (research 1.1)", "[redis][hash]") {
  HashFx f;
  struct Want {
    const char* name;
    int arity;
    Strs flags;
  };
  const std::vector<Want> want = {
      {"hset", -4, {"write", "denyoom", "fast"}},
      {"hmset", -4, {"write", "denyoom", "fast"}},
      {"hstrlen", 3, {"readonly", "fast"}},
      {"hsetnx", 4, {"write", "denyoom", "fast"}},
      {"hget", 3, {"readonly", "fast"}},
      {"hmget", -3, {"readonly", "fast"}},
      {"hdel", -3, {"write", "fast"}},
      {"hlen", 2, {"readonly", "fast"}},
      {"hexists", 3, {"readonly", "fast"}},
      {"hgetall", 2, {"readonly"}},
      {"hkeys", 2, {"readonly"}},
      {"hvals", 2, {"readonly"}},
      {"hincrby", 4, {"write", "denyoom", "fast"}},
      // research §1.1: the HEXPIRE family is `write denyoom fast` in Redis 7.4.0
      {"hexpire", -6, {"write", "denyoom", "fast"}},
      {"hpexpire", -6, {"write", "denyoom", "fast"}},
      {"hexpireat", -6, {"write", "denyoom", "fast"}},
      {"hpexpireat", -6, {"write", "denyoom", "fast"}},
      {"httl", -5, {"readonly", "fast"}},
      {"hpttl", -5, {"readonly", "fast"}},
      {"hexpiretime", -5, {"readonly", "fast"}},
      {"hpexpiretime", -5, {"readonly", "fast"}},
      {"hpersist", -5, {"write", "fast"}},
      // Redis 8's commands.json: HGETEX and HGETDEL `write fast`, HSETEX `write denyoom fast`
      {"hgetex", -5, {"write", "fast"}},
      {"hgetdel", -5, {"write", "fast"}},
      {"hsetex", -6, {"write", "denyoom", "fast"}},
  };
  for (const Want& w : want) {
    INFO(w.name);
    const Reply info = f.run({"COMMAND", "INFO", w.name});
    REQUIRE(info.elements().size() == 1);
    const Reply& e = info.elements()[0];
    REQUIRE(e.elements().size() == 10);
    CHECK(e.elements()[0] == Reply::bulk(w.name));
    CHECK(e.elements()[1] == Reply::integer(w.arity));
    Strs flags;
    for (const Reply& fl : e.elements()[2].elements()) flags.push_back(fl.str());
    CHECK(flags == w.flags);
    CHECK(e.elements()[3] == Reply::integer(1));  // first key
    CHECK(e.elements()[4] == Reply::integer(1));  // last key
    CHECK(e.elements()[5] == Reply::integer(1));  // step
  }
}

TEST_CASE("hash: a denyoom hash command is refused over maxmemory, HEXPIRE included (research 1.1)",
          "[redis][hash]") {
  HashFx f;
  f.R({"HSET", "h", "f", "v"});
  REQUIRE(f.R({"CONFIG", "SET", "maxmemory", "1"}) == OK);  // noeviction: every write is over the limit
  CHECK(f.R({"HSET", "h", "g", "w"}) == OOM);
  CHECK(f.R({"HSETNX", "h", "g", "w"}) == OOM);
  CHECK(f.R({"HINCRBY", "h", "n", "1"}) == OOM);
  // Not denyoom in Redis 7.4 (research §1.1, hdel.json, hpersist.json): they run.
  CHECK(f.R({"HGET", "h", "f"}) == B("v"));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({-1}));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == IA({-1}));
  // HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT are `write denyoom fast` in Redis 7.4.0: refused.
  const std::pair<const char*, const char*> expire_calls[] = {
      {"HEXPIRE", "100"}, {"HPEXPIRE", "100000"}, {"HEXPIREAT", "1100"}, {"HPEXPIREAT", "1100000"}};
  for (const auto& c : expire_calls) {
    INFO(c.first);
    CHECK(f.R({c.first, "h", c.second, "FIELDS", "1", "f"}) == OOM);
  }
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "0"}) == OK);
  CHECK(f.R({"HSET", "h", "g", "w"}) == I(1));
}

// ==== Catalogue A: arity, argument errors and their order ==========================================

TEST_CASE("hash: catalogue A, argument errors and their order (H3-H14)", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HSET", "h", "f1", "v1"}) == I(1));
  // H3
  CHECK(f.R({"HEXPIRE", "h", "-1", "FIELDS", "1", "f1"}) == NEGATIVE);
  CHECK(f.R({"HEXPIRE", "h", "-9223372036854775808", "FIELDS", "1", "f1"}) == NEGATIVE);
  // H4
  CHECK(f.R({"HEXPIRE", "h", "281474976710", "FIELDS", "1", "f1"}) == BAD_TIME("hexpire"));
  CHECK(f.R({"HPEXPIRE", "h", "281474976710656", "FIELDS", "1", "f1"}) == BAD_TIME("hpexpire"));
  // H5
  CHECK(f.R({"HEXPIREAT", "h", "281474977810", "FIELDS", "1", "f1"}) == BAD_TIME("hexpireat"));
  CHECK(f.R({"HPEXPIREAT", "h", "281474977710756", "FIELDS", "1", "f1"}) == BAD_TIME("hpexpireat"));
  // H6
  CHECK(f.R({"HEXPIRE", "h", "1.5", "FIELDS", "1", "f1"}) == NOT_INT);
  CHECK(f.R({"HEXPIRE", "h", "9223372036854775808", "FIELDS", "1", "f1"}) == NOT_INT);
  // H7: WRONGTYPE before any argument is read
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HEXPIRE", "s", "abc", "FOO", "FIELDS", "0"}) == WRONGTYPE);
  CHECK(f.R({"HTTL", "s", "NOPE", "0", "f"}) == WRONGTYPE);
  CHECK(f.R({"HPERSIST", "s", "FIELDS", "9", "f"}) == WRONGTYPE);
  // H8: the errors come before a missing key's array of -2
  CHECK(f.R({"HEXPIRE", "nokey", "-5", "FIELDS", "1", "f"}) == NEGATIVE);
  CHECK(f.R({"HEXPIRE", "nokey", "10", "FIELDS", "2", "f"}) == MISMATCH);
  CHECK(f.R({"EXISTS", "nokey"}) == I(0));
  // H9: the time before the option
  CHECK(f.R({"HEXPIRE", "h", "-1", "FOO", "FIELDS", "1", "f1"}) == NEGATIVE);
  // H10
  CHECK(f.R({"HEXPIRE", "h", "10", "FOO", "FIELDS", "1", "f1"}) == NO_FIELDS);
  CHECK(f.R({"HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "f1"}) == NO_FIELDS);
  CHECK(f.R({"HEXPIRE", "h", "10", "1", "f1", "f2"}) == NO_FIELDS);
  // H11
  CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "0", "f1", "f2", "f3"}) == NUMFIELDS_EXPIRE);
  CHECK(f.R({"HPEXPIRE", "h", "1000", "FIELDS", "x", "f1"}) == NUMFIELDS_EXPIRE);
  CHECK(f.R({"HPEXPIRE", "h", "1000", "FIELDS", "-1", "f1"}) == NUMFIELDS_EXPIRE);
  // H12
  CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "4", "f1", "f2", "f3"}) == MISMATCH);
  CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "2", "f1", "f2", "f3"}) == MISMATCH);
  // H13
  CHECK(f.R({"HTTL", "h", "FIELDS", "0", "f"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "x", "f"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "a", "b"}) == MISMATCH);
  CHECK(f.R({"HPTTL", "h", "FIELDS", "3", "a", "b"}) == MISMATCH);
  CHECK(f.R({"HTTL", "h", "FIELD", "1", "f"}) == NO_FIELDS);
  // Nothing above changed the hash.
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f1"}) == IA({-1}));
  // H14: the tokens are case-insensitive
  CHECK(f.R({"hpexpire", "h", "1000", "nx", "fields", "1", "f1"}) == IA({1}));
  CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f1"}) == IA({1000}));
}

TEST_CASE("hash: the time-argument errors of the four HEXPIRE commands, in Redis's order", "[redis][hash]") {
  HashFx f;
  f.R({"HSET", "h", "f", "v"});
  for (const char* c : kExpireCmds) {
    INFO(c);
    const std::string name = expiring::redis::detail::lowercase(c);
    // 1. an integer (§2.0 grammar)
    for (const char* bad : {"abc", "1.5", "+5", "010", "-0", "", " 1", "9223372036854775808", "-9223372036854775809"}) {
      INFO("time '" << bad << "'");
      CHECK(f.R({c, "h", bad, "FIELDS", "1", "f"}) == NOT_INT);
    }
    // 2. not negative
    CHECK(f.R({c, "h", "-1", "FIELDS", "1", "f"}) == NEGATIVE);
    CHECK(f.R({c, "h", "-9223372036854775808", "NX", "FIELDS", "1", "f"}) == NEGATIVE);
    // 3. the cap (2^46 - 1 ms), seconds checked before they are multiplied
    CHECK(f.R({c, "h", "9223372036854775807", "FIELDS", "1", "f"}) == BAD_TIME(name));
    CHECK(f.R({c, "h", "281474976710656", "FIELDS", "1", "f"}) == BAD_TIME(name));
    // the time is checked before the option, FIELDS, numfields and the count
    CHECK(f.R({c, "h", "9223372036854775807", "FOO", "FIELDS", "0"}) == BAD_TIME(name));
    CHECK(f.R({c, "h", "-1", "FOO", "FIELDS", "0"}) == NEGATIVE);
    CHECK(f.R({c, "h", "x", "FOO", "FIELDS", "0"}) == NOT_INT);
    // and the errors come before a missing key's -2s
    CHECK(f.R({c, "nokey", "-1", "FIELDS", "1", "f"}) == NEGATIVE);
    CHECK(f.R({c, "nokey", "9223372036854775807", "FIELDS", "1", "f"}) == BAD_TIME(name));
  }
  // The seconds pre-check: 70368744178 s is above 70368744177663 / 1000 (H18, H16).
  CHECK(f.R({"HEXPIRE", "h", "70368744178", "FIELDS", "1", "f"}) == BAD_TIME("hexpire"));
  CHECK(f.R({"HEXPIREAT", "h", "70368744178", "FIELDS", "1", "f"}) == BAD_TIME("hexpireat"));
  // The milliseconds forms at the cap itself: only the relative one adds now.
  CHECK(f.R({"HPEXPIRE", "h", "70368744177663", "FIELDS", "1", "f"}) == BAD_TIME("hpexpire"));
  CHECK(f.R({"HPEXPIREAT", "h", "70368744177663", "FIELDS", "1", "f"}) == IA({1}));
  // An option token, then a missing FIELDS, numfields < 1, the count.
  for (const char* c : kExpireCmds) {
    INFO(c);
    CHECK(f.R({c, "h", "10", "NX", "NX", "FIELDS", "1", "f"}) == NO_FIELDS);
    CHECK(f.R({c, "h", "10", "NX", "1", "f", "g"}) == NO_FIELDS);
    CHECK(f.R({c, "h", "10", "PERSIST", "FIELDS", "1", "f"}) == NO_FIELDS);
    CHECK(f.R({c, "h", "10", "FIELD", "1", "f"}) == NO_FIELDS);
    CHECK(f.R({c, "h", "10", "FIELDS", "FIELDS", "1", "f"}) == NUMFIELDS_EXPIRE);
    for (const char* n : {"0", "-1", "x", "+1", "01", "9223372036854775808"}) {
      INFO("numfields '" << n << "'");
      CHECK(f.R({c, "h", "10", "FIELDS", n, "f"}) == NUMFIELDS_EXPIRE);
      CHECK(f.R({c, "nokey", "10", "GT", "FIELDS", n, "f"}) == NUMFIELDS_EXPIRE);
    }
    CHECK(f.R({c, "h", "10", "FIELDS", "2", "f"}) == MISMATCH);
    CHECK(f.R({c, "h", "10", "LT", "FIELDS", "1", "f", "g"}) == MISMATCH);
    CHECK(f.R({c, "h", "10", "FIELDS", "9223372036854775807", "f"}) == MISMATCH);
    CHECK(f.R({c, "nokey", "10", "FIELDS", "3", "f"}) == MISMATCH);
  }
  for (const char* c : kQueryCmds) {
    INFO(c);
    CHECK(f.R({c, "h", "NX", "FIELDS", "1", "f"}) == NO_FIELDS);
    CHECK(f.R({c, "h", "fieldsx", "1", "f"}) == NO_FIELDS);
    CHECK(f.R({c, "nokey", "FIELD", "1", "f"}) == NO_FIELDS);
    for (const char* n : {"0", "-1", "x", "+1", "01", "9223372036854775808"}) {
      INFO("numfields '" << n << "'");
      CHECK(f.R({c, "h", "FIELDS", n, "f"}) == NUMFIELDS_QUERY);
      CHECK(f.R({c, "nokey", "fields", n, "f"}) == NUMFIELDS_QUERY);
    }
    CHECK(f.R({c, "h", "FIELDS", "2", "f"}) == MISMATCH);
    CHECK(f.R({c, "h", "FIELDS", "1", "f", "g"}) == MISMATCH);
    CHECK(f.R({c, "nokey", "FIELDS", "1", "f", "g"}) == MISMATCH);
  }
  // No error changed the field (its deadline is the cap, from the one HPEXPIREAT that ran).
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744177663}));
}

// ==== Catalogue B: the time cap ===================================================================

TEST_CASE("hash: catalogue B, the field-time cap 2^46 - 1 ms at T0 (H15-H19)", "[redis][hash]") {
  HashFx f;
  f.R({"HSET", "h", "f", "v"});
  // H15
  CHECK(f.R({"HPEXPIREAT", "h", "70368744177663", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HPEXPIREAT", "h", "70368744177664", "FIELDS", "1", "f"}) == BAD_TIME("hpexpireat"));
  // H16
  CHECK(f.R({"HEXPIREAT", "h", "70368744177", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744177000}));
  CHECK(f.R({"HEXPIREAT", "h", "70368744178", "FIELDS", "1", "f"}) == BAD_TIME("hexpireat"));
  // H17
  CHECK(f.R({"HPEXPIRE", "h", "70368743177663", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744177663}));
  CHECK(f.R({"HPEXPIRE", "h", "70368743177664", "FIELDS", "1", "f"}) == BAD_TIME("hpexpire"));
  // H18
  CHECK(f.R({"HEXPIRE", "h", "70368743177", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744177000}));
  CHECK(f.R({"HEXPIRE", "h", "70368743178", "FIELDS", "1", "f"}) == BAD_TIME("hexpire"));
  CHECK(f.R({"HEXPIRE", "h", "70368744178", "FIELDS", "1", "f"}) == BAD_TIME("hexpire"));
  // H19: the ceiling (D22)
  CHECK(f.R({"HPEXPIREAT", "h", "70368744177663", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744177663}));
  CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({70368744178}));
  CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({70368743177663}));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({70368743178}));
}

// ==== Catalogue C: missing key, fields without TTL =================================================

TEST_CASE("hash: catalogue C, a missing key and fields without TTL (H20-H24)", "[redis][hash]") {
  HashFx f;
  // H20
  CHECK(f.R({"HEXPIRE", "nokey", "1000", "FIELDS", "1", "a"}) == IA({-2}));
  CHECK(f.R({"HEXPIREAT", "nokey", "1000", "FIELDS", "1", "a"}) == IA({-2}));
  CHECK(f.R({"HPEXPIRE", "nokey", "1000", "FIELDS", "2", "a", "b"}) == IA({-2, -2}));
  CHECK(f.R({"HPEXPIREAT", "nokey", "1000", "FIELDS", "2", "a", "b"}) == IA({-2, -2}));
  CHECK(f.R({"HPEXPIRE", "nokey", "0", "NX", "FIELDS", "3", "a", "b", "a"}) == IA({-2, -2, -2}));
  CHECK(f.R({"EXISTS", "nokey"}) == I(0));
  // H21
  CHECK(f.R({"HTTL", "nokey", "FIELDS", "1", "a"}) == IA({-2}));
  CHECK(f.R({"HPTTL", "nokey", "FIELDS", "2", "a", "b"}) == IA({-2, -2}));
  CHECK(f.R({"HEXPIRETIME", "nokey", "FIELDS", "1", "a"}) == IA({-2}));
  CHECK(f.R({"HPEXPIRETIME", "nokey", "FIELDS", "2", "a", "b"}) == IA({-2, -2}));
  // H22
  CHECK(f.R({"HPERSIST", "nokey", "FIELDS", "1", "a"}) == IA({-2}));
  CHECK(f.R({"HPERSIST", "nokey", "FIELDS", "2", "a", "b"}) == IA({-2, -2}));
  CHECK(f.R({"DBSIZE"}) == I(0));
  // H23
  CHECK(f.R({"HSET", "h", "field1", "value1", "field2", "value2"}) == I(2));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "field1"}) == IA({-1}));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "nosuch"}) == IA({-2}));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "field1"}) == IA({-1}));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "nosuch"}) == IA({-2}));
  CHECK(f.R({"HPTTL", "h", "FIELDS", "3", "field1", "nosuch", "field2"}) == IA({-1, -2, -1}));
  CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "2", "field2", "field1"}) == IA({-1, -1}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "field2"}) == IA({-1}));
  // H24: a stale key is reclaimed by the write lookup first
  HashFx g;
  CHECK(g.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(g.R({"PEXPIRE", "h", "10"}) == I(1));
  g.at(11);
  CHECK(g.R({"HEXPIRE", "h", "100", "FIELDS", "1", "f"}) == IA({-2}));
  CHECK(g.R({"EXISTS", "h"}) == I(0));
  CHECK(g.stat("expired_keys") == "1");
  CHECK(g.subkeys() == "0");
}

// ==== Catalogue D: NX / XX / GT / LT ===============================================================

TEST_CASE("hash: catalogue D, NX XX GT LT (H25-H34)", "[redis][hash]") {
  SECTION("H25 NX") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2", "field3", "value3"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "2", "field1", "field2"}) == IA({0, 1}));
  }
  SECTION("H26 XX") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2", "field3", "value3"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "2", "field1", "field2"}) == IA({1, 1}));
    CHECK(f.R({"HPEXPIRE", "h", "1000", "XX", "FIELDS", "2", "field1", "field3"}) == IA({1, 0}));
  }
  SECTION("H27 GT") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "2000", "NX", "FIELDS", "1", "field2"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "1500", "GT", "FIELDS", "2", "field1", "field2"}) == IA({1, 0}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "field1", "field2"}) == IA({1500, 2000}));
  }
  SECTION("H28 LT") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2", "field3", "value3"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "2000", "NX", "FIELDS", "1", "field2"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "1500", "LT", "FIELDS", "3", "field1", "field2", "field3"}) == IA({0, 1, 1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "3", "field1", "field2", "field3"}) == IA({1000, 1500, 1500}));
  }
  SECTION("H29 the AT forms, same replies") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2", "field3", "value3"});
    // H25
    CHECK(f.R({"HPEXPIREAT", "h", "2000000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPEXPIREAT", "h", "2000000", "NX", "FIELDS", "2", "field1", "field2"}) == IA({0, 1}));
    // H26
    CHECK(f.R({"HEXPIREAT", "h", "2000", "XX", "FIELDS", "2", "field1", "field3"}) == IA({1, 0}));
    // H27: field1 at 2000000, field2 moved to 3000000
    CHECK(f.R({"HPEXPIREAT", "h", "3000000", "XX", "FIELDS", "1", "field2"}) == IA({1}));
    CHECK(f.R({"HPEXPIREAT", "h", "2500000", "GT", "FIELDS", "2", "field1", "field2"}) == IA({1, 0}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "field1", "field2"}) == IA({1500000, 2000000}));
    // H28: field1 2500000, field2 3000000, field3 none
    CHECK(f.R({"HEXPIREAT", "h", "2700", "LT", "FIELDS", "3", "field1", "field2", "field3"}) == IA({0, 1, 1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "3", "field1", "field2", "field3"}) == IA({2500, 2700, 2700}));
  }
  SECTION("H30 equality fails GT and LT") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "1000", "GT", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HPEXPIREAT", "h", "1001000", "LT", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HPEXPIRE", "h", "1000", "XX", "FIELDS", "1", "f"}) == IA({1}));
  }
  SECTION("H31 no TTL counts as +infinity") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HEXPIRE", "h", "100", "GT", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HEXPIRE", "h", "100", "XX", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HEXPIRE", "h", "100", "LT", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({100}));
  }
  SECTION("H32 conditions before deletion") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2", "f4", "v4"});
    CHECK(f.R({"HEXPIRE", "h", "1000", "NX", "FIELDS", "1", "f4"}) == IA({1}));
    CHECK(f.R({"HPEXPIREAT", "h", "999000", "NX", "FIELDS", "4", "f1", "f2", "f3", "f4"}) == IA({2, 2, -2, 0}));
    CHECK(f.R({"HEXISTS", "h", "f1"}) == I(0));
    CHECK(f.R({"HLEN", "h"}) == I(1));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f4"}) == IA({1000}));
  }
  SECTION("H33 a zero time with GT and LT") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HEXPIRE", "h", "0", "GT", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HEXISTS", "h", "f"}) == I(1));
    CHECK(f.R({"HEXPIRE", "h", "0", "LT", "FIELDS", "1", "f"}) == IA({2}));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
  }
  SECTION("H34 a past time with XX and NX") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIREAT", "h", "1", "XX", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HGET", "h", "f"}) == B("v"));
    CHECK(f.R({"HPEXPIREAT", "h", "1", "NX", "FIELDS", "1", "f"}) == IA({2}));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
  }
}

// ==== Catalogue E: zero, past, now; events of HEXPIRE ===============================================

TEST_CASE("hash: catalogue E, zero, past and now, and HEXPIRE's events (H35-H39)", "[redis][hash]") {
  SECTION("H35") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1"});
    CHECK(f.R({"HEXPIREAT", "h", "999", "NX", "FIELDS", "1", "field1"}) == IA({2}));
    CHECK(f.R({"HEXISTS", "h", "field1"}) == I(0));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
  }
  SECTION("H36 a zero time deletes and counts in expired_subkeys (D24)") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2", "g", "w"});
    CHECK(f.R({"HEXPIRE", "h", "0", "FIELDS", "1", "f1"}) == IA({2}));
    CHECK(f.R({"HPEXPIRE", "h", "0", "FIELDS", "1", "f2"}) == IA({2}));
    CHECK(f.R({"HLEN", "h"}) == I(1));
    CHECK(f.subkeys() == "2");  // D24: counted, as Redis 7.4 counts it
    CHECK(f.stat("expired_keys") == "0");
  }
  SECTION("H37 a deadline equal to now deletes, now + 1 sets") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIREAT", "h", "1000000", "FIELDS", "1", "f"}) == IA({2}));
    CHECK(f.R({"HPEXPIREAT", "h", "1000001", "FIELDS", "1", "g"}) == IA({1}));
    CHECK(f.R({"HLEN", "h"}) == I(1));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "g"}) == IA({1}));
  }
  SECTION("H38 events: hdel, then del when the hash empties") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "a", "1", "b", "2", "c", "3"});
    CHECK(f.take() == Strs{"hset h"});
    CHECK(f.R({"HEXPIRE", "h", "0", "FIELDS", "2", "a", "b"}) == IA({2, 2}));
    CHECK(f.take() == Strs{"hdel h"});
    CHECK(f.R({"HEXPIRE", "h", "0", "FIELDS", "1", "c"}) == IA({2}));
    CHECK(f.take() == (Strs{"hdel h", "del h"}));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
  }
  SECTION("H39 events: one hexpire per call, none when nothing changed") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "a", "1"});
    f.take();
    CHECK(f.R({"HEXPIRE", "h", "100", "FIELDS", "2", "a", "nosuch"}) == IA({1, -2}));
    CHECK(f.take() == Strs{"hexpire h"});
    CHECK(f.R({"HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a"}) == IA({0}));
    CHECK(f.take().empty());
    CHECK(f.R({"HEXPIRE", "h", "100", "FIELDS", "1", "nosuch"}) == IA({-2}));
    CHECK(f.take().empty());
  }
}

// ==== Catalogue F: duplicate fields ================================================================

TEST_CASE("hash: catalogue F, duplicate fields see the earlier occurrence (H40-H43)", "[redis][hash]") {
  HashFx f;
  f.R({"HSET", "h", "f", "v"});
  CHECK(f.R({"HEXPIRE", "h", "100", "NX", "FIELDS", "2", "f", "f"}) == IA({1, 0}));  // H40
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HEXPIRE", "h", "100", "FIELDS", "2", "f", "f"}) == IA({1, 1}));  // H41
  CHECK(f.R({"HTTL", "h", "FIELDS", "3", "f", "f", "x"}) == IA({100, 100, -2}));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "2", "f", "f"}) == IA({1, -1}));  // H43
  CHECK(f.R({"HEXPIRE", "h", "0", "FIELDS", "2", "f", "f"}) == IA({2, -2}));  // H42
  CHECK(f.R({"EXISTS", "h"}) == I(0));
}

// ==== Catalogue G: HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME ========================================

TEST_CASE("hash: catalogue G, the values of HTTL HPTTL HEXPIRETIME HPEXPIRETIME (H44-H51)", "[redis][hash]") {
  SECTION("H44 HTTL rounds up where a key's TTL rounds half up (D22)") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "1", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"SET", "k", "v", "PX", "1"}) == OK);
    CHECK(f.R({"TTL", "k"}) == I(0));
  }
  SECTION("H45 HTTL after HPEXPIRE n") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    const std::pair<const char*, std::int64_t> cases[] = {{"999", 1},  {"1000", 1}, {"1001", 2}, {"1499", 2},
                                                          {"1500", 2}, {"2000", 2}, {"2001", 3}};
    for (const auto& c : cases) {
      INFO("HPEXPIRE " << c.first);
      CHECK(f.R({"HPEXPIRE", "h", c.first, "FIELDS", "1", "f"}) == IA({1}));
      CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({c.second}));
    }
  }
  SECTION("H46") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HEXPIREAT", "h", "1100", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1100}));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1100000}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({100}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({100000}));
  }
  SECTION("H47 HEXPIRETIME rounds up") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIREAT", "h", "1010001", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1011}));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1010001}));
    CHECK(f.R({"HPEXPIREAT", "h", "1010000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1010}));
    CHECK(f.R({"HPEXPIREAT", "h", "1010999", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1011}));
  }
  SECTION("H48 TTL progress until expiration") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "field1"}) == IA({1000}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "field1"}) == IA({1}));
    f.at(100);
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "field1"}) == IA({900}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "field1"}) == IA({1}));
    f.at(1001);
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "field1"}) == IA({-2}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "field1"}) == IA({-2}));
  }
  SECTION("H49 a field at its deadline is live: HPTTL 0, HTTL 0, readable (D20, D22)") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "1000", "FIELDS", "1", "f"}) == IA({1}));
    f.at(1000);
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({0}));
    CHECK(f.R({"HGET", "h", "f"}) == B("v"));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1001000}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1001}));
    f.at(1001);
    CHECK(f.R({"HGET", "h", "f"}) == NIL);
  }
  SECTION("H50 HTTL and HPERSIST answer -2 for a stale field and reclaim it (D20)") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({-2}));
    // D20: HTTL reclaimed it (Redis 7.4 leaves it and HLEN says 2).
    CHECK(f.subkeys() == "1");
    CHECK(f.stored_fields("h") == 1);
    CHECK(f.R({"HLEN", "h"}) == I(1));
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == IA({-2}));
    CHECK(f.R({"HLEN", "h"}) == I(1));
  }
  SECTION("H51") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1"});
    CHECK(f.R({"HEXPIREAT", "h", "1002", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "field1"}) == IA({2000}));
    CHECK(f.R({"HEXPIREAT", "h", "1005", "XX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "field1"}) == IA({5}));
  }
}

// ==== Catalogue H: HPERSIST ========================================================================

TEST_CASE("hash: catalogue H, HPERSIST (H52-H53)", "[redis][hash]") {
  SECTION("H52") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "f1", "v1", "f2", "v2"});
    CHECK(f.R({"HEXPIRE", "h", "1000", "NX", "FIELDS", "1", "f1"}) == IA({1}));
    f.take();
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "2", "f1", "not-exists-field"}) == IA({1, -2}));
    CHECK(f.take() == Strs{"hpersist h"});
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f2"}) == IA({-1}));
    CHECK(f.take().empty());
    CHECK(f.R({"HTTL", "h", "FIELDS", "2", "f1", "f2"}) == IA({-1, -1}));
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  }
  SECTION("H53 persisted fields outlive their old deadline") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2"});
    CHECK(f.R({"HEXPIRE", "h", "20", "NX", "FIELDS", "2", "f1", "f2"}) == IA({1, 1}));
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "2", "f1", "f2"}) == IA({1, 1}));
    f.at(25'000);  // past the 20 s the fields had
    (void)f.store.tick();
    CHECK(f.R({"HGET", "h", "f1"}) == B("v1"));
    CHECK(f.R({"HGET", "h", "f2"}) == B("v2"));
    CHECK(f.R({"HTTL", "h", "FIELDS", "2", "f1", "f2"}) == IA({-1, -1}));
    CHECK(f.subkeys() == "0");
  }
}

// ==== Catalogue I: other hash commands =============================================================

TEST_CASE("hash: catalogue I, HSET HSETNX HINCRBY on fields with TTLs (H54-H60)", "[redis][hash]") {
  SECTION("H54 HSET clears the field's TTL") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1", "field2", "value2", "field3", "value3"});
    CHECK(f.R({"HPEXPIRE", "h", "10000", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h", "1", "NX", "FIELDS", "1", "field2"}) == IA({1}));
    CHECK(f.R({"HSET", "h", "field2", "value4"}) == I(0));
    f.at(5);
    CHECK(f.R({"HGET", "h", "field2"}) == B("value4"));
    CHECK(f.R({"HTTL", "h", "FIELDS", "2", "field2", "field3"}) == IA({-1, -1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "field1"}) == IA({9995}));
  }
  SECTION("H55 HSET's count") {
    HashFx f;
    CHECK(f.R({"HSET", "h", "f1", "v1", "f2", "v2"}) == I(2));
    CHECK(f.R({"HEXPIRE", "h", "100000", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.R({"HSET", "h", "f2", "v2"}) == I(0));
    CHECK(f.R({"HSET", "h", "f3", "v3"}) == I(1));
    CHECK(f.R({"HSET", "h", "f3", "v3", "f4", "v4"}) == I(1));
    CHECK(f.R({"HSET", "h", "f3", "v3", "f5", "v5", "f6", "v6"}) == I(2));
    CHECK(f.R({"HSET", "h", "f1", "x"}) == I(0));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f1"}) == IA({-1}));
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  }
  SECTION("H56 HSETNX on a live field changes nothing") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"HSETNX", "h", "f", "w"}) == I(0));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({100}));
    CHECK(f.R({"HGET", "h", "f"}) == B("v"));
  }
  SECTION("H57 HSETNX on a stale field reclaims it, then writes") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f"}) == IA({1}));
    f.take();
    f.at(11);
    CHECK(f.R({"HSETNX", "h", "f", "x"}) == I(1));
    CHECK(f.take() == (Strs{"hexpired h", "hset h"}));
    CHECK(f.R({"HGET", "h", "f"}) == B("x"));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({-1}));
    CHECK(f.subkeys() == "1");
  }
  SECTION("H58 HSETNX on the last, stale field: the key goes and comes back") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f"}) == IA({1}));
    f.take();
    f.at(11);
    CHECK(f.R({"HSETNX", "h", "f", "x"}) == I(1));
    CHECK(f.take() == (Strs{"hexpired h", "del h", "hset h"}));
    CHECK(f.R({"HLEN", "h"}) == I(1));
    CHECK(f.R({"HGET", "h", "f"}) == B("x"));
  }
  SECTION("H59 HINCRBY keeps the TTL") {
    HashFx f;
    f.R({"HSET", "h1", "f1", "10"});
    CHECK(f.R({"HPEXPIRE", "h1", "20", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.R({"HINCRBY", "h1", "f1", "2"}) == I(12));
    CHECK(f.R({"HPTTL", "h1", "FIELDS", "1", "f1"}) == IA({20}));
  }
  SECTION("H60 HINCRBY on a stale field starts from 0, without TTL") {
    HashFx f;
    f.R({"HSET", "h1", "f1", "10", "f2", "2"});
    f.R({"HSET", "h2", "f1", "10"});
    CHECK(f.R({"HINCRBY", "h1", "f1", "2"}) == I(12));
    CHECK(f.R({"HINCRBY", "h2", "f1", "2"}) == I(12));
    CHECK(f.R({"HPEXPIRE", "h1", "10", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h2", "10", "FIELDS", "1", "f1"}) == IA({1}));
    f.at(15);
    CHECK(f.R({"HINCRBY", "h1", "f1", "1"}) == I(1));
    CHECK(f.R({"HINCRBY", "h2", "f1", "1"}) == I(1));
    CHECK(f.R({"HTTL", "h1", "FIELDS", "1", "f1"}) == IA({-1}));
    CHECK(f.R({"HTTL", "h2", "FIELDS", "1", "f1"}) == IA({-1}));
    CHECK(sorted_pairs(f.run({"HGETALL", "h1"})) == (Strs{"f1=1", "f2=2"}));
    CHECK(f.subkeys() == "2");
  }
}

TEST_CASE("hash: catalogue I, lazy expiry through the hash commands (H63-H70)", "[redis][hash]") {
  SECTION("H63 fields are lazily deleted, all of a hash's stale fields at once (D20)") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3"});
    CHECK(f.R({"HPEXPIRE", "h", "1", "NX", "FIELDS", "3", "f1", "f2", "f3"}) == IA({1, 1, 1}));
    f.at(5);
    CHECK(f.R({"EXISTS", "h"}) == I(1));  // EXISTS does not open the hash (research §3)
    CHECK(f.R({"TYPE", "h"}) == "+hash\r\n");
    CHECK(f.R({"DBSIZE"}) == I(1));
    // D20: HLEN reclaims all three first and counts live fields (Redis 7.4: 3, then 2, 1, 0).
    CHECK(f.R({"HLEN", "h"}) == I(0));
    CHECK(f.subkeys() == "3");
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.R({"HEXISTS", "h", "f1"}) == I(0));
    CHECK(f.R({"HLEN", "h"}) == I(0));
    CHECK(f.R({"HGET", "h", "f2"}) == NIL);
    CHECK(f.R({"HLEN", "h"}) == I(0));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.subkeys() == "3");
    CHECK(f.stat("expired_keys") == "0");  // D27: the key goes as `del`, not as an expiry
  }
  SECTION("H64 HLEN counts only live fields (D20)") {
    HashFx f;
    f.R({"HSET", "a", "k1", "v1"});
    CHECK(f.R({"HPEXPIRE", "a", "1", "NX", "FIELDS", "1", "k1"}) == IA({1}));
    f.R({"HSET", "b", "k1", "v1", "k2", "v2", "k3", "v3", "k4", "v4"});
    CHECK(f.R({"HPEXPIRE", "b", "1", "NX", "FIELDS", "3", "k1", "k3", "k4"}) == IA({1, 1, 1}));
    f.at(10);
    CHECK(f.R({"HLEN", "a"}) == I(0));  // D20 (Redis 7.4: 1)
    CHECK(f.R({"HLEN", "b"}) == I(1));  // D20 (Redis 7.4: 4)
    CHECK(f.R({"EXISTS", "a"}) == I(0));
  }
  SECTION("H65 HGETALL HKEYS HVALS return live fields, and reclaim the rest (D20)") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3", "f4", "v4", "f5", "v5", "f6", "v6"});
    CHECK(f.R({"HPEXPIRE", "h", "1", "NX", "FIELDS", "3", "f2", "f4", "f6"}) == IA({1, 1, 1}));
    f.at(10);
    CHECK(sorted_pairs(f.run({"HGETALL", "h"})) == (Strs{"f1=v1", "f3=v3", "f5=v5"}));
    CHECK(sorted_bulks(f.run({"HKEYS", "h"})) == (Strs{"f1", "f3", "f5"}));
    CHECK(sorted_bulks(f.run({"HVALS", "h"})) == (Strs{"v1", "v3", "v5"}));
    CHECK(f.R({"HLEN", "h"}) == I(3));  // D20 (Redis 7.4: 6)
    CHECK(f.subkeys() == "3");          // D20 (Redis 7.4: 0, it only filters)
  }
  SECTION("H66 HGETALL of a hash whose fields are all stale: empty, and the key goes (D20)") {
    HashFx f;
    f.R({"HSET", "h", "a", "1"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "a"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"HGETALL", "h"}) == EMPTY);
    CHECK(f.R({"HKEYS", "h"}) == EMPTY);
    CHECK(f.R({"HVALS", "h"}) == EMPTY);
    CHECK(f.R({"EXISTS", "h"}) == I(0));  // D20 (Redis 7.4: 1)
    CHECK(f.R({"HLEN", "h"}) == I(0));    // D20 (Redis 7.4: 1)
  }
  SECTION("H68 HMGET: one hexpired per command, then del if the hash emptied") {
    HashFx f;
    f.record();
    f.R({"HSET", "h1", "f1", "v1", "f2", "v2", "f3", "v3"});
    f.R({"HSET", "h2", "f1", "v1", "f2", "v2", "f3", "v3"});
    CHECK(f.R({"HPEXPIRE", "h1", "10000000", "NX", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h1", "1", "NX", "FIELDS", "2", "f2", "f3"}) == IA({1, 1}));
    CHECK(f.R({"HPEXPIRE", "h2", "1", "NX", "FIELDS", "3", "f1", "f2", "f3"}) == IA({1, 1, 1}));
    f.take();
    f.at(5);
    CHECK(f.R({"HMGET", "h1", "f1", "f2", "f3"}) == ARR({B("v1"), NIL, NIL}));
    CHECK(f.take() == Strs{"hexpired h1"});
    CHECK(f.R({"HMGET", "h2", "f1", "f2", "f3"}) == ARR({NIL, NIL, NIL}));
    CHECK(f.take() == (Strs{"hexpired h2", "del h2"}));
    CHECK(f.R({"EXISTS", "h2"}) == I(0));
    CHECK(f.subkeys() == "5");
  }
  SECTION("H69 the hash commands on stale fields (D20: a hash's stale fields go together)") {
    HashFx f;
    f.R({"HSET", "h2", "01", "01", "02", "02"});
    f.R({"HSET", "h3", "01", "01", "02", "02", "03", "03"});
    f.R({"HSET", "h4", "1", "99", "2", "99", "3", "99", "4", "99"});
    f.R({"HSET", "h5", "1", "1", "2", "22", "3", "333", "4", "4444", "5", "55555"});
    f.R({"HSET", "h6", "01", "01", "02", "02", "03", "03", "04", "04", "05", "05", "06", "06"});
    CHECK(f.R({"HPEXPIRE", "h2", "1", "NX", "FIELDS", "1", "01"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h2", "1", "NX", "FIELDS", "1", "02"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h3", "1", "NX", "FIELDS", "1", "01"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h4", "1", "NX", "FIELDS", "1", "2"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h5", "1", "NX", "FIELDS", "1", "3"}) == IA({1}));
    CHECK(f.R({"HPEXPIRE", "h6", "1", "NX", "FIELDS", "1", "05"}) == IA({1}));
    f.at(5);
    CHECK(f.R({"CONFIG", "RESETSTAT"}) == OK);
    CHECK(f.subkeys() == "0");
    CHECK(f.R({"HGET", "h2", "01"}) == NIL);
    CHECK(f.subkeys() == "2");  // D20: both of h2's stale fields (Redis 7.4: 1)
    CHECK(f.R({"HGET", "h2", "02"}) == NIL);
    CHECK(f.subkeys() == "2");
    CHECK(f.R({"HGET", "h3", "01"}) == NIL);
    CHECK(f.R({"HGET", "h3", "02"}) == B("02"));
    CHECK(f.R({"HGET", "h3", "03"}) == B("03"));
    CHECK(f.subkeys() == "3");
    CHECK(f.R({"HINCRBY", "h4", "2", "1"}) == I(1));
    CHECK(f.subkeys() == "4");
    CHECK(f.R({"HINCRBY", "h4", "3", "1"}) == I(100));
    CHECK(f.R({"HSTRLEN", "h5", "3"}) == I(0));
    CHECK(f.subkeys() == "5");
    CHECK(f.R({"HSTRLEN", "h5", "4"}) == I(4));
    CHECK(sorted_bulks(f.run({"HKEYS", "h6"})) == (Strs{"01", "02", "03", "04", "06"}));
    CHECK(f.subkeys() == "6");  // D20: HKEYS reclaims (Redis 7.4: still 5)
  }
  SECTION("H70 HDEL of a stale field answers 0 (D23)") {
    HashFx f;
    f.R({"HSET", "h1", "01", "01"});
    CHECK(f.R({"HPEXPIRE", "h1", "1", "NX", "FIELDS", "1", "01"}) == IA({1}));
    f.at(5);
    CHECK(f.R({"HDEL", "h1", "01"}) == I(0));  // D23 (Redis 7.4: 1)
    CHECK(f.R({"EXISTS", "h1"}) == I(0));
    CHECK(f.subkeys() == "1");  // D23: reclaimed first (Redis 7.4: 0)
  }
}

TEST_CASE("hash: catalogue I, writes to a stale field treat it as absent (H73-H74, D23)", "[redis][hash]") {
  SECTION("H73 (R) HSET counts a stale field as new") {
    HashFx f;
    f.R({"HSET", "h", "f1", "v1", "f2", "v2"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f1"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"HSET", "h", "f1", "x"}) == I(1));  // D23 (Redis 7.4: 0)
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f1"}) == IA({-1}));
    CHECK(f.subkeys() == "1");  // D23 (Redis 7.4: 0)
    CHECK(f.R({"HGET", "h", "f1"}) == B("x"));
  }
  SECTION("H74 (R) the HEXPIRE family answers -2 for a stale field") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "f"}) == IA({-2}));  // D23 (Redis 7.4: [1], revived)
    CHECK(f.R({"HGET", "h", "f"}) == NIL);
    CHECK(f.subkeys() == "1");
    CHECK(f.R({"HLEN", "h"}) == I(1));
  }
}

// ==== Catalogue J: whole-key operations ============================================================

TEST_CASE("hash: catalogue J, the key's TTL, RENAME and COPY (H75-H78)", "[redis][hash]") {
  SECTION("H75 key and field TTLs are independent") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"EXPIRE", "h", "100"}) == I(1));
    CHECK(f.R({"HEXPIRE", "h", "50", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"TTL", "h"}) == I(100));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({50}));
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"TTL", "h"}) == I(100));
    CHECK(f.R({"HEXPIRE", "h", "50", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"PERSIST", "h"}) == I(1));
    CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == IA({50}));
    CHECK(f.R({"TTL", "h"}) == I(-1));
  }
  SECTION("H76 the key expires whole: expired_keys, not expired_subkeys") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"PEXPIRE", "h", "100"}) == I(1));
    f.at(101);
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.stat("expired_keys") == "1");
    CHECK(f.subkeys() == "0");
    CHECK(f.db0() == "");
  }
  SECTION("H77 RENAME carries the field deadlines") {
    HashFx f;
    f.R({"HSET", "h", "field1", "value1"});
    CHECK(f.R({"HPEXPIRE", "h", "20", "NX", "FIELDS", "1", "field1"}) == IA({1}));
    CHECK(f.R({"RENAME", "h", "h2"}) == OK);
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.R({"HPTTL", "h2", "FIELDS", "1", "field1"}) == IA({20}));
    f.at(25);
    CHECK(f.R({"EXISTS", "h2"}) == I(1));
    bool gone = false;
    for (int i = 0; i < 10 && !gone; ++i) {
      (void)f.store.tick();
      gone = f.store.peek("h2") == nullptr;
    }
    CHECK(gone);
    CHECK(f.R({"EXISTS", "h2"}) == I(0));
    CHECK(f.subkeys() == "1");
  }
  SECTION("H78 COPY carries the field deadlines") {
    HashFx f;
    f.R({"HSET", "h1", "f1", "v1", "f2", "v2"});
    CHECK(f.R({"HPEXPIRE", "h1", "100", "NX", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.R({"COPY", "h1", "h1copy"}) == I(1));
    CHECK(f.R({"HPTTL", "h1copy", "FIELDS", "1", "f1"}) == IA({100}));
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=2");
    f.at(105);
    CHECK(f.R({"HGET", "h1", "f1"}) == NIL);
    CHECK(f.R({"HGET", "h1copy", "f1"}) == NIL);
    CHECK(f.R({"HLEN", "h1copy"}) == I(1));
    CHECK(f.R({"HGET", "h1copy", "f2"}) == B("v2"));
  }
}

// ==== Catalogue K: active expiry ===================================================================

TEST_CASE("hash: catalogue K, tick() reclaims fields (H80-H83)", "[redis][hash]") {
  SECTION("H80 hashes whose fields all expire are deleted, mixed ones keep their persistent fields") {
    HashFx f;
    const int sizes[] = {1, 15, 16, 17, 31, 32, 33, 40};
    std::int64_t volatile_fields = 0;
    for (int n : sizes) {
      const std::string same = "same" + std::to_string(n), mix = "mix" + std::to_string(n);
      Strs hs_same = {"HSET", same}, hs_mix = {"HSET", mix};
      Strs hp_same = {"HPEXPIRE", same, "100", "FIELDS", std::to_string(n)};
      Strs hp_mix = {"HPEXPIRE", mix, "100", "FIELDS", std::to_string(n)};
      for (int i = 1; i <= n; ++i) {
        const std::string fld = "f" + std::to_string(i);
        hs_same.insert(hs_same.end(), {fld, "v"});
        hs_mix.insert(hs_mix.end(), {fld, "v", "p" + std::to_string(i), "v"});
        hp_same.push_back(fld);
        hp_mix.push_back(fld);
      }
      REQUIRE(f.R(hs_same) == I(n));
      REQUIRE(f.R(hs_mix) == I(2 * n));
      REQUIRE(f.run(hp_same).elements().size() == static_cast<std::size_t>(n));
      REQUIRE(f.run(hp_mix).elements().size() == static_cast<std::size_t>(n));
      volatile_fields += 2 * n;
    }
    CHECK(f.db0() == "keys=16,expires=0,avg_ttl=0,subexpiry=16");
    f.at(101);
    std::uint64_t reclaimed = 0;
    for (int i = 0; i < 20; ++i) {  // ticks until quiet
      const expiring::TickReport r = f.store.tick();
      reclaimed += r.fields_expired;
      if (r.fields_expired == 0) break;
    }
    CHECK(reclaimed == static_cast<std::uint64_t>(volatile_fields));
    CHECK(f.subkeys() == std::to_string(volatile_fields));  // by tick(), before any read
    CHECK(f.db0() == "keys=8,expires=0,avg_ttl=0,subexpiry=0");
    for (int n : sizes) {
      INFO("n = " << n);
      const std::string same = "same" + std::to_string(n), mix = "mix" + std::to_string(n);
      CHECK(f.stored_fields(mix) == n);
      CHECK(f.R({"EXISTS", same}) == I(0));
      CHECK(f.R({"HLEN", mix}) == I(n));
      CHECK(f.R({"HEXISTS", mix, "f1"}) == I(0));
      CHECK(f.R({"HEXISTS", mix, "p1"}) == I(1));
    }
  }
  SECTION("H81 the field quota: 10000 / hz fields a tick, one hexpired per hash per tick") {
    HashFx f;
    Strs hs = {"HSET", "big"}, hp = {"HPEXPIRE", "big", "10", "FIELDS", "2500"};
    for (int i = 0; i < 2500; ++i) {
      hs.insert(hs.end(), {"f" + std::to_string(i), "v"});
      hp.push_back("f" + std::to_string(i));
    }
    REQUIRE(f.R(hs) == I(2500));
    REQUIRE(f.run(hp).elements().size() == 2500);
    f.record();
    f.at(11);
    expiring::TickReport r = f.store.tick();
    CHECK(r.field_quota == 1000);
    CHECK(r.fields_expired == 1000);
    CHECK(f.subkeys() == "1000");
    CHECK(f.stored_fields("big") == 1500);  // HLEN would reclaim the rest (D20): peek instead
    CHECK(f.take() == Strs{"hexpired big"});
    r = f.store.tick();
    CHECK(r.fields_expired == 1000);
    CHECK(f.subkeys() == "2000");
    CHECK(f.stored_fields("big") == 500);
    CHECK(f.R({"EXISTS", "big"}) == I(1));
    CHECK(f.take() == Strs{"hexpired big"});
    r = f.store.tick();
    CHECK(r.fields_expired == 500);
    CHECK(f.subkeys() == "2500");
    CHECK(f.R({"EXISTS", "big"}) == I(0));
    CHECK(f.take() == (Strs{"hexpired big", "del big"}));
    CHECK(f.stat("expired_keys") == "0");
  }
  SECTION("H82 tick() reclaims a field only after its deadline (D21)") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "f"}) == IA({1}));
    f.at(100);
    CHECK(f.store.tick().fields_expired == 0);
    CHECK(f.R({"HGET", "h", "f"}) == B("v"));
    f.at(101);
    CHECK(f.store.tick().fields_expired == 1);
    CHECK(f.subkeys() == "1");
    CHECK(f.stored_fields("h") == 1);
    CHECK(f.R({"HLEN", "h"}) == I(1));
  }
  SECTION("H83 INFO keyspace subexpiry counts the hashes with volatile fields") {
    HashFx f;
    f.R({"HSET", "m", "f1", "v1", "f2", "v2", "f3", "v3", "f4", "v4", "f5", "v5"});
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
    CHECK(f.R({"HPEXPIRE", "m", "100", "FIELDS", "3", "f1", "f2", "f3"}) == IA({1, 1, 1}));
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=1");
    f.R({"HSET", "m2", "f1", "v1", "f2", "v2"});
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=1");
    CHECK(f.R({"HPEXPIRE", "m2", "100", "FIELDS", "1", "f1"}) == IA({1}));
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=2");
    f.at(101);
    for (int i = 0; i < 10 && f.store.tick().fields_expired != 0; ++i) {
    }
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=0");
    CHECK(f.subkeys() == "4");
  }
}

// ==== The hash commands themselves =================================================================

// redis-server 7.0.15's replies (checked with redis-cli).
TEST_CASE("hash: HMSET replies OK and HSTRLEN the value's length", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HMSET", "h", "a", "1", "b", "22"}) == OK);
  CHECK(f.R({"HMSET", "h", "a"}) == ARITY("hmset"));
  CHECK(f.R({"HMSET", "h", "a", "1", "b"}) == ARITY("hmset"));
  CHECK(f.R({"HSTRLEN", "h", "b"}) == I(2));
  CHECK(f.R({"HSTRLEN", "h", "none"}) == I(0));
  CHECK(f.R({"HSTRLEN", "none", "a"}) == I(0));
  CHECK(f.R({"HSTRLEN", "h"}) == ARITY("hstrlen"));
  CHECK(f.R({"HGET", "h", "a"}) == B("1"));
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HMSET", "s", "a", "1"}) == WRONGTYPE);
  CHECK(f.R({"HSTRLEN", "s", "a"}) == WRONGTYPE);
  // HMSET clears a field's TTL as HSET does.
  CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "a"}) == IA({1}));
  CHECK(f.R({"HMSET", "h", "a", "3"}) == OK);
  CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "a"}) == IA({-1}));
}

TEST_CASE("hash: HSET HSETNX HGET HMGET HDEL HLEN HEXISTS HGETALL HKEYS HVALS", "[redis][hash]") {
  HashFx f;
  f.record();
  CHECK(f.R({"HSET", "h", "a", "1", "b", "2", "a", "3"}) == I(2));  // a repeated: one new field
  CHECK(f.take() == Strs{"hset h"});
  CHECK(f.R({"HGET", "h", "a"}) == B("3"));
  CHECK(f.R({"HGET", "h", "nosuch"}) == NIL);
  CHECK(f.R({"HGET", "nokey", "a"}) == NIL);
  CHECK(f.R({"HSET", "h", "", ""}) == I(1));  // empty names and values are fields too
  CHECK(f.R({"HGET", "h", ""}) == B(""));
  CHECK(f.R({"HMGET", "h", "a", "nosuch", "b", "a"}) == ARR({B("3"), NIL, B("2"), B("3")}));
  CHECK(f.R({"HMGET", "nokey", "a", "b"}) == ARR({NIL, NIL}));
  CHECK(f.R({"HLEN", "h"}) == I(3));
  CHECK(f.R({"HLEN", "nokey"}) == I(0));
  CHECK(f.R({"HEXISTS", "h", "b"}) == I(1));
  CHECK(f.R({"HEXISTS", "h", "c"}) == I(0));
  CHECK(f.R({"HEXISTS", "nokey", "b"}) == I(0));
  CHECK(sorted_pairs(f.run({"HGETALL", "h"})) == (Strs{"=", "a=3", "b=2"}));
  CHECK(sorted_bulks(f.run({"HKEYS", "h"})) == (Strs{"", "a", "b"}));
  CHECK(sorted_bulks(f.run({"HVALS", "h"})) == (Strs{"", "2", "3"}));
  CHECK(f.R({"HGETALL", "nokey"}) == EMPTY);
  CHECK(f.R({"HKEYS", "nokey"}) == EMPTY);
  CHECK(f.R({"HVALS", "nokey"}) == EMPTY);
  // HGETALL pairs each name with its own value.
  const Reply all = f.run({"HGETALL", "h"});
  REQUIRE(all.elements().size() == 6);
  for (std::size_t i = 0; i < 6; i += 2) {
    const std::string& n = all.elements()[i].str();
    CHECK(all.elements()[i + 1].str() == (n == "a" ? "3" : n == "b" ? "2" : ""));
  }
  f.take();
  CHECK(f.R({"HSETNX", "h", "a", "x"}) == I(0));
  CHECK(f.take().empty());
  CHECK(f.R({"HSETNX", "h", "c", "x"}) == I(1));
  CHECK(f.take() == Strs{"hset h"});
  CHECK(f.R({"HSETNX", "new", "c", "x"}) == I(1));  // creates the key
  CHECK(f.R({"TYPE", "new"}) == "+hash\r\n");
  f.take();
  CHECK(f.R({"HDEL", "h", "a", "a", "nosuch"}) == I(1));
  CHECK(f.take() == Strs{"hdel h"});
  CHECK(f.R({"HDEL", "h", "nosuch"}) == I(0));
  CHECK(f.take().empty());
  CHECK(f.R({"HDEL", "nokey", "a"}) == I(0));
  CHECK(f.R({"HDEL", "h", "b", "", "c"}) == I(3));  // the last fields: the key goes
  CHECK(f.take() == (Strs{"hdel h", "del h"}));
  CHECK(f.R({"EXISTS", "h"}) == I(0));
  CHECK(f.R({"TYPE", "h"}) == "+none\r\n");
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("hash: every reply code and condition flag, with mixed and repeated fields in one call",
          "[redis][hash]") {
  // p: no TTL; t: deadline T0 + 1000; x: no such field.
  auto setup = [](HashFx& f) {
    REQUIRE(f.R({"HSET", "h", "p", "1", "t", "2", "keep", "3"}) == I(3));
    REQUIRE(f.R({"HPEXPIRE", "h", "1000", "FIELDS", "1", "t"}) == IA({1}));
  };
  SECTION("no condition") {
    HashFx f;
    setup(f);
    CHECK(f.R({"HPEXPIRE", "h", "2000", "FIELDS", "3", "p", "t", "x"}) == IA({1, 1, -2}));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "4", "p", "t", "x", "keep"}) == IA({1002000, 1002000, -2, -1}));
  }
  SECTION("NX, in any case") {
    for (const char* nx : {"NX", "nx", "Nx"}) {
      HashFx f;
      setup(f);
      INFO(nx);
      CHECK(f.R({"HPEXPIRE", "h", "2000", nx, "FIELDS", "3", "p", "t", "x"}) == IA({1, 0, -2}));
      CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "p", "t"}) == IA({2000, 1000}));
    }
  }
  SECTION("XX, in any case") {
    for (const char* xx : {"XX", "xx", "xX"}) {
      HashFx f;
      setup(f);
      INFO(xx);
      CHECK(f.R({"HPEXPIRE", "h", "2000", xx, "fields", "3", "p", "t", "x"}) == IA({0, 1, -2}));
      CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "p", "t"}) == IA({-1, 2000}));
    }
  }
  SECTION("GT, in any case") {
    for (const char* gt : {"GT", "gt", "gT"}) {
      HashFx f;
      setup(f);
      INFO(gt);
      CHECK(f.R({"HPEXPIRE", "h", "500", gt, "FIELDS", "3", "p", "t", "x"}) == IA({0, 0, -2}));
      CHECK(f.R({"HPEXPIRE", "h", "2000", gt, "FiElDs", "3", "p", "t", "x"}) == IA({0, 1, -2}));
      CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "p", "t"}) == IA({-1, 2000}));
    }
  }
  SECTION("LT, in any case") {
    for (const char* lt : {"LT", "lt", "Lt"}) {
      HashFx f;
      setup(f);
      INFO(lt);
      CHECK(f.R({"HPEXPIRE", "h", "2000", lt, "FIELDS", "3", "p", "t", "x"}) == IA({1, 0, -2}));
      CHECK(f.R({"HPEXPIRE", "h", "500", lt, "FIELDS", "3", "p", "t", "x"}) == IA({1, 1, -2}));
      CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "p", "t"}) == IA({500, 500}));
    }
  }
  SECTION("a past time: conditions first, then deletion (2)") {
    HashFx f;
    setup(f);
    CHECK(f.R({"HPEXPIREAT", "h", "1", "GT", "FIELDS", "3", "p", "t", "x"}) == IA({0, 0, -2}));
    CHECK(f.R({"HPEXPIREAT", "h", "1", "XX", "FIELDS", "3", "p", "t", "x"}) == IA({0, 2, -2}));
    CHECK(f.R({"HEXPIREAT", "h", "0", "LT", "FIELDS", "3", "x", "p", "p"}) == IA({-2, 2, -2}));
    CHECK(f.R({"HGETALL", "h"}) == ARR({B("keep"), B("3")}));
    CHECK(f.subkeys() == "2");
    CHECK(f.R({"HEXPIRE", "h", "0", "NX", "FIELDS", "2", "keep", "keep"}) == IA({2, -2}));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.subkeys() == "3");
  }
  SECTION("every code in one call, and repeats") {
    HashFx f;
    setup(f);
    // -2 x, 0 p (XX without TTL), 1 t; then t again sees its new deadline
    CHECK(f.R({"HPEXPIRE", "h", "3000", "XX", "FIELDS", "4", "x", "p", "t", "t"}) == IA({-2, 0, 1, 1}));
    CHECK(f.R({"HPEXPIRE", "h", "3000", "GT", "FIELDS", "2", "t", "t"}) == IA({0, 0}));
    CHECK(f.R({"HPEXPIRE", "h", "4000", "GT", "FIELDS", "2", "t", "t"}) == IA({1, 0}));
    CHECK(f.R({"HPEXPIRE", "h", "0", "FIELDS", "4", "p", "x", "p", "keep"}) == IA({2, -2, -2, 2}));
    CHECK(f.R({"HGETALL", "h"}) == ARR({B("t"), B("2")}));
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "4", "t", "t", "x", "p"}) == IA({1, -1, -2, -2}));
    CHECK(f.R({"HSET", "h", "q", "1"}) == I(1));
    CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "q"}) == IA({1}));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "4", "q", "t", "x", "q"}) == IA({100, -1, -2, 100}));
    CHECK(f.R({"HTTL", "h", "FIELDS", "2", "q", "t"}) == IA({1, -1}));
    CHECK(f.R({"HEXPIRETIME", "h", "FIELDS", "2", "q", "x"}) == IA({1001, -2}));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "2", "t", "q"}) == IA({-1, 1000100}));
  }
  SECTION("a missing key answers an array of -2, one per field, for all nine") {
    HashFx f;
    for (const char* c : kExpireCmds) {
      INFO(c);
      CHECK(f.R({c, "nokey", "100", "FIELDS", "3", "a", "b", "a"}) == IA({-2, -2, -2}));
      CHECK(f.R({c, "nokey", "0", "NX", "FIELDS", "1", "a"}) == IA({-2}));
    }
    for (const char* c : kQueryCmds) {
      INFO(c);
      CHECK(f.R({c, "nokey", "FIELDS", "3", "a", "b", "a"}) == IA({-2, -2, -2}));
    }
    CHECK(f.R({"DBSIZE"}) == I(0));
  }
}

// ==== HINCRBY ======================================================================================

TEST_CASE("hash: HINCRBY's sums and errors, and the TTL HINCRBY keeps where HSET clears it", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HINCRBY", "h", "n", "5"}) == I(5));  // creates the key and the field
  CHECK(f.R({"HINCRBY", "h", "n", "-7"}) == I(-2));
  CHECK(f.R({"HGET", "h", "n"}) == B("-2"));
  CHECK(f.R({"HINCRBY", "h", "m", "-9223372036854775808"}) == I(INT64_MIN));
  CHECK(f.R({"HINCRBY", "h", "m", "0"}) == I(INT64_MIN));
  // The increment: §2.0's grammar.
  for (const char* bad : {"abc", "1.5", "+1", "01", "", "9223372036854775808"}) {
    INFO("increment '" << bad << "'");
    CHECK(f.R({"HINCRBY", "h", "n", bad}) == NOT_INT);
    CHECK(f.R({"HINCRBY", "nokey", "n", bad}) == NOT_INT);
  }
  CHECK(f.R({"EXISTS", "nokey"}) == I(0));  // an error creates nothing
  // The stored value.
  f.R({"HSET", "h", "s", "x", "z", "05", "sp", " 5", "e", "", "big", "9223372036854775807", "neg", "-0"});
  for (const char* fld : {"s", "z", "sp", "e", "neg"}) {
    INFO("field " << fld);
    CHECK(f.R({"HINCRBY", "h", fld, "1"}) == HASH_NOT_INT);
  }
  // The increment is read before the value: a bad increment on a non-integer value.
  CHECK(f.R({"HINCRBY", "h", "s", "abc"}) == NOT_INT);
  CHECK(f.R({"HINCRBY", "h", "big", "1"}) == OVERFLOW);
  CHECK(f.R({"HINCRBY", "h", "big", "0"}) == I(INT64_MAX));
  CHECK(f.R({"HINCRBY", "h", "m", "-1"}) == OVERFLOW);
  CHECK(f.R({"HGET", "h", "big"}) == B("9223372036854775807"));  // unchanged by the error
  CHECK(f.R({"HGET", "h", "s"}) == B("x"));
  CHECK(f.R({"HINCRBY", "h", "big", "-9223372036854775807"}) == I(0));

  // HINCRBY keeps a field's TTL (H59), HSET clears it (H54), HSETNX leaves it (H56).
  CHECK(f.R({"HSET", "t", "n", "10"}) == I(1));
  CHECK(f.R({"HPEXPIRE", "t", "5000", "FIELDS", "1", "n"}) == IA({1}));
  CHECK(f.R({"HINCRBY", "t", "n", "5"}) == I(15));
  CHECK(f.R({"HPEXPIRETIME", "t", "FIELDS", "1", "n"}) == IA({1005000}));
  CHECK(f.R({"HINCRBY", "t", "n", "abc"}) == NOT_INT);
  CHECK(f.R({"HPEXPIRETIME", "t", "FIELDS", "1", "n"}) == IA({1005000}));
  CHECK(f.R({"HSETNX", "t", "n", "0"}) == I(0));
  CHECK(f.R({"HPEXPIRETIME", "t", "FIELDS", "1", "n"}) == IA({1005000}));
  CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=1");
  CHECK(f.R({"HSET", "t", "n", "1"}) == I(0));
  CHECK(f.R({"HPEXPIRETIME", "t", "FIELDS", "1", "n"}) == IA({-1}));
  CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=0");
  // A field kept alive by HINCRBY still expires at its deadline.
  CHECK(f.R({"HPEXPIRE", "t", "100", "FIELDS", "1", "n"}) == IA({1}));
  CHECK(f.R({"HINCRBY", "t", "n", "1"}) == I(2));
  f.at(100);
  CHECK(f.R({"HINCRBY", "t", "n", "1"}) == I(3));  // at its deadline: live (D20)
  f.at(101);
  CHECK(f.R({"HGET", "t", "n"}) == NIL);
  CHECK(f.R({"EXISTS", "t"}) == I(0));
}

// ==== WRONGTYPE ====================================================================================

TEST_CASE("hash: WRONGTYPE both ways, and the commands that overwrite or skip a hash", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "f"}) == IA({1}));

  // Hash commands on a string key.
  CHECK(f.R({"HSET", "s", "f", "v"}) == WRONGTYPE);
  CHECK(f.R({"HSETNX", "s", "f", "v"}) == WRONGTYPE);
  CHECK(f.R({"HGET", "s", "f"}) == WRONGTYPE);
  CHECK(f.R({"HMGET", "s", "f", "g"}) == WRONGTYPE);
  CHECK(f.R({"HDEL", "s", "f"}) == WRONGTYPE);
  CHECK(f.R({"HLEN", "s"}) == WRONGTYPE);
  CHECK(f.R({"HEXISTS", "s", "f"}) == WRONGTYPE);
  CHECK(f.R({"HGETALL", "s"}) == WRONGTYPE);
  CHECK(f.R({"HKEYS", "s"}) == WRONGTYPE);
  CHECK(f.R({"HVALS", "s"}) == WRONGTYPE);
  CHECK(f.R({"HINCRBY", "s", "f", "1"}) == WRONGTYPE);
  for (const char* c : kExpireCmds) {
    INFO(c);
    CHECK(f.R({c, "s", "100", "FIELDS", "1", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "0", "NX", "FIELDS", "1", "f"}) == WRONGTYPE);
  }
  for (const char* c : kQueryCmds) {
    INFO(c);
    CHECK(f.R({c, "s", "FIELDS", "1", "f"}) == WRONGTYPE);
  }
  // WRONGTYPE beats every argument error of the field TTL commands (H7; research §1.2-§1.4).
  for (const char* c : kExpireCmds) {
    INFO(c);
    CHECK(f.R({c, "s", "abc", "FOO", "FIELDS", "0"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "-1", "FIELDS", "1", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "9223372036854775807", "FIELDS", "1", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "10", "NX", "XX", "FIELDS", "1", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "10", "FIELDS", "0", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "10", "FIELDS", "2", "f"}) == WRONGTYPE);
  }
  for (const char* c : kQueryCmds) {
    INFO(c);
    CHECK(f.R({c, "s", "NOPE", "0", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "FIELDS", "0", "f"}) == WRONGTYPE);
    CHECK(f.R({c, "s", "FIELDS", "9", "f"}) == WRONGTYPE);
  }
  // But arity comes first (the dispatcher, and HSET's pairs).
  CHECK(f.R({"HSET", "s", "f", "v", "g"}) == ARITY("hset"));
  CHECK(f.R({"HTTL", "s", "FIELDS", "1"}) == ARITY("httl"));
  CHECK(f.R({"GET", "s"}) == B("x"));  // the string is untouched

  // String commands on a hash key.
  CHECK(f.R({"GET", "h"}) == WRONGTYPE);
  CHECK(f.R({"GETSET", "h", "x"}) == WRONGTYPE);
  CHECK(f.R({"GETEX", "h"}) == WRONGTYPE);
  CHECK(f.R({"GETEX", "h", "PERSIST"}) == WRONGTYPE);
  CHECK(f.R({"GETEX", "h", "EX", "10"}) == WRONGTYPE);
  CHECK(f.R({"GETEX", "h", "EX", "0"}) == WRONGTYPE);    // type before the value (semantics.md 121)
  CHECK(f.R({"GETEX", "h", "EX", "abc"}) == WRONGTYPE);  // likewise
  CHECK(f.R({"GETDEL", "h"}) == WRONGTYPE);
  CHECK(f.R({"STRLEN", "h"}) == WRONGTYPE);
  CHECK(f.R({"APPEND", "h", "x"}) == WRONGTYPE);
  CHECK(f.R({"INCR", "h"}) == WRONGTYPE);
  CHECK(f.R({"DECR", "h"}) == WRONGTYPE);
  CHECK(f.R({"INCRBY", "h", "2"}) == WRONGTYPE);
  CHECK(f.R({"DECRBY", "h", "2"}) == WRONGTYPE);
  CHECK(f.R({"SET", "h", "x", "GET"}) == WRONGTYPE);
  CHECK(f.R({"SET", "h", "x", "GET", "NX"}) == WRONGTYPE);  // semantics.md §2.4 step 2: NX or not
  CHECK(f.R({"SET", "h", "x", "GET", "XX", "EX", "10"}) == WRONGTYPE);
  CHECK(f.R({"SET", "h", "x", "GET", "EX", "abc"}) == NOT_INT);  // the number is read first
  CHECK(f.R({"SET", "h", "x", "GET", "BOGUS"}) == SYNTAX);
  CHECK(f.R({"INCRBY", "h", "abc"}) == NOT_INT);
  // None of them touched the hash or its field TTL.
  CHECK(f.R({"TYPE", "h"}) == "+hash\r\n");
  CHECK(f.R({"HGET", "h", "f"}) == B("v"));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "f"}) == IA({1005000}));
  CHECK(f.R({"TTL", "h"}) == I(-1));
  // MGET answers nil for a hash; SETNX and SET NX see it as existing.
  CHECK(f.R({"MGET", "h", "s", "nokey"}) == ARR({NIL, B("x"), NIL}));
  CHECK(f.R({"SETNX", "h", "x"}) == I(0));
  CHECK(f.R({"SET", "h", "x", "NX"}) == NIL);
  CHECK(f.R({"MSETNX", "h", "x", "new", "y"}) == I(0));
  CHECK(f.R({"EXISTS", "new"}) == I(0));
  CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=1");

  // SET overwrites a hash, and its field TTLs go with it.
  CHECK(f.R({"SET", "h", "now-a-string", "XX"}) == OK);
  CHECK(f.R({"TYPE", "h"}) == "+string\r\n");
  CHECK(f.R({"GET", "h"}) == B("now-a-string"));
  CHECK(f.R({"HGET", "h", "f"}) == WRONGTYPE);
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "f"}) == WRONGTYPE);
  CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=0");
  // MSET overwrites one too.
  CHECK(f.R({"HSET", "h2", "f", "v"}) == I(1));
  CHECK(f.R({"HPEXPIRE", "h2", "100", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"MSET", "h2", "m", "s", "y"}) == OK);
  CHECK(f.R({"GET", "h2"}) == B("m"));
  CHECK(f.R({"GET", "s"}) == B("y"));
  CHECK(f.db0() == "keys=3,expires=0,avg_ttl=0,subexpiry=0");
  // SET ... GET over a hash that a later write turned back into a hash; GETSET on a string.
  CHECK(f.R({"DEL", "h2"}) == I(1));
  CHECK(f.R({"HSET", "h2", "a", "1"}) == I(1));
  CHECK(f.R({"SET", "h2", "z"}) == OK);
  CHECK(f.R({"SET", "h2", "w", "GET"}) == B("z"));
  // The overwritten hashes' old deadlines do not disturb tick().
  f.at(6000);
  CHECK(f.store.tick().fields_expired == 0);
  CHECK(f.R({"GET", "h"}) == B("now-a-string"));
  CHECK(f.R({"GET", "h2"}) == B("w"));
  CHECK(f.subkeys() == "0");

  // A stale string key is no obstacle to a hash command, nor a stale hash to a string one.
  CHECK(f.R({"SET", "old", "x", "PX", "10"}) == OK);
  CHECK(f.R({"HSET", "oldh", "f", "v"}) == I(1));
  CHECK(f.R({"PEXPIRE", "oldh", "10"}) == I(1));
  f.at(6011);
  CHECK(f.R({"HSET", "old", "f", "v"}) == I(1));
  CHECK(f.R({"TYPE", "old"}) == "+hash\r\n");
  CHECK(f.R({"SET", "oldh", "v", "GET"}) == NIL);
  CHECK(f.R({"TYPE", "oldh"}) == "+string\r\n");
  CHECK(f.stat("expired_keys") == "2");
}

TEST_CASE("hash: where Redis reads an argument before the key's type", "[redis][hash]") {
  // Redis parses these arguments before its lookup + checkType, so the argument error wins:
  //  - HINCRBY: getLongLongFromObjectOrReply(argv[3]) comes before hashTypeLookupWriteOrCreate
  //    (t_hash.c hincrbyCommand, 7.0 and 7.4 alike; redis-server 7.0.15: `SET s x`,
  //    `HINCRBY s f abc` -> ERR value is not an integer or out of range);
  //  - GETEX: its options are parsed first (semantics.md B §2.6 step 1 before step 3;
  //    redis-server 7.0.15: `HSET h f v`, `GETEX h BOGUS` -> ERR syntax error);
  //  - SET ... GET: the expire value is checked first (semantics.md B §2.4, execution step 1
  //    before step 2; redis-server 7.0.15: `HSET h f v`, `SET h x GET EX 0` -> ERR invalid
  //    expire time in 'set' command).
  HashFx f;
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(f.R({"HINCRBY", "s", "f", "abc"}) == NOT_INT);
  CHECK(f.R({"HINCRBY", "s", "f", "1.5"}) == NOT_INT);
  CHECK(f.R({"GETEX", "h", "BOGUS"}) == SYNTAX);
  CHECK(f.R({"GETEX", "h", "EX", "10", "PX", "10"}) == SYNTAX);
  CHECK(f.R({"GETEX", "h", "PERSIST", "EX", "1"}) == SYNTAX);
  CHECK(f.R({"SET", "h", "x", "GET", "EX", "0"}) == BAD_TIME("set"));
  CHECK(f.R({"SET", "h", "x", "GET", "PX", "-5"}) == BAD_TIME("set"));
  CHECK(f.R({"SET", "h", "x", "GET", "EX", "10000000000000000"}) == BAD_TIME("set"));
  // Nothing changed either key.
  CHECK(f.R({"GET", "s"}) == B("x"));
  CHECK(f.R({"HGET", "h", "f"}) == B("v"));
}

// ==== Keyspace commands on hashes ==================================================================

TEST_CASE("hash: TYPE, SCAN TYPE, DBSIZE, DEL, EXISTS, EXPIRE, TTL, PERSIST on hashes", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HSET", "h1", "a", "1"}) == I(1));
  CHECK(f.R({"HSET", "h2", "a", "1", "b", "2"}) == I(2));
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"TYPE", "h1"}) == "+hash\r\n");
  CHECK(f.R({"TYPE", "s"}) == "+string\r\n");
  CHECK(f.R({"TYPE", "nokey"}) == "+none\r\n");
  CHECK(f.R({"DBSIZE"}) == I(3));
  CHECK(f.R({"EXISTS", "h1", "h2", "s", "nokey", "h1"}) == I(4));

  // SCAN ... TYPE, a full walk (bounded).
  auto scan_all = [&](const char* type) {
    Strs keys;
    std::string cursor = "0";
    for (int i = 0; i < 100; ++i) {
      const Reply r = f.run({"SCAN", cursor, "COUNT", "2", "TYPE", type});
      REQUIRE(r.elements().size() == 2);
      for (const Reply& k : r.elements()[1].elements()) keys.push_back(k.str());
      cursor = r.elements()[0].str();
      if (cursor == "0") break;
    }
    CHECK(cursor == "0");
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  CHECK(scan_all("hash") == (Strs{"h1", "h2"}));
  CHECK(scan_all("HASH") == (Strs{"h1", "h2"}));
  CHECK(scan_all("string") == Strs{"s"});
  CHECK(scan_all("list") == Strs{});
  const Reply matched = f.run({"SCAN", "0", "COUNT", "100", "MATCH", "h*", "TYPE", "hash"});
  REQUIRE(matched.elements().size() == 2);
  CHECK(matched.elements()[0].str() == "0");
  CHECK(sorted_bulks(matched.elements()[1]) == (Strs{"h1", "h2"}));
  CHECK(sorted_bulks(f.run({"KEYS", "*"})) == (Strs{"h1", "h2", "s"}));

  // The key's own TTL on a hash.
  CHECK(f.R({"EXPIRE", "h2", "100"}) == I(1));
  CHECK(f.R({"TTL", "h2"}) == I(100));
  CHECK(f.R({"PTTL", "h2"}) == I(100000));
  CHECK(f.R({"EXPIRETIME", "h2"}) == I(1100));
  CHECK(f.R({"HTTL", "h2", "FIELDS", "2", "a", "b"}) == IA({-1, -1}));  // fields keep none
  CHECK(f.db0() == "keys=3,expires=1,avg_ttl=0,subexpiry=0");
  CHECK(f.R({"PERSIST", "h2"}) == I(1));
  CHECK(f.R({"TTL", "h2"}) == I(-1));
  CHECK(f.R({"PERSIST", "h2"}) == I(0));
  // DEL and UNLINK take hashes, field TTLs and all.
  CHECK(f.R({"HPEXPIRE", "h2", "100", "FIELDS", "1", "a"}) == IA({1}));
  CHECK(f.db0() == "keys=3,expires=0,avg_ttl=0,subexpiry=1");
  CHECK(f.R({"DEL", "h2", "nokey"}) == I(1));
  CHECK(f.R({"EXISTS", "h2"}) == I(0));
  CHECK(f.R({"TYPE", "h2"}) == "+none\r\n");
  CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=0");
  CHECK(f.R({"UNLINK", "h1"}) == I(1));
  CHECK(f.R({"DBSIZE"}) == I(1));
  f.at(200);
  CHECK(f.store.tick().fields_expired == 0);
  CHECK(f.subkeys() == "0");

  // EXPIRE with a past time deletes a hash like any key.
  CHECK(f.R({"HSET", "h3", "a", "1"}) == I(1));
  CHECK(f.R({"EXPIRE", "h3", "-1"}) == I(1));
  CHECK(f.R({"EXISTS", "h3"}) == I(0));
  // FLUSHALL empties the field index too.
  CHECK(f.R({"HSET", "h4", "a", "1"}) == I(1));
  CHECK(f.R({"HPEXPIRE", "h4", "100", "FIELDS", "1", "a"}) == IA({1}));
  CHECK(f.R({"FLUSHALL"}) == OK);
  CHECK(f.db0() == "");
  f.at(400);
  CHECK(f.store.tick().fields_expired == 0);
  CHECK(f.R({"DBSIZE"}) == I(0));
}

TEST_CASE("hash: the key's TTL is independent of field TTLs", "[redis][hash]") {
  SECTION("EXPIRE: the key goes whole when its TTL passes, lazily") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"EXPIRE", "h", "1"}) == I(1));
    CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "2", "f", "g"}) == IA({1005000, -1}));  // EXPIRE left them
    CHECK(f.R({"PEXPIRETIME", "h"}) == I(1001000));
    f.take();
    f.at(1001);
    CHECK(f.R({"HGET", "h", "g"}) == NIL);
    CHECK(f.take() == Strs{"expired h"});
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.stat("expired_keys") == "1");
    CHECK(f.subkeys() == "0");
    CHECK(f.db0() == "");
    f.at(6000);
    CHECK(f.store.tick().fields_expired == 0);
  }
  SECTION("EXPIRE: the key goes whole when its TTL passes, by tick()") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"PEXPIRE", "h", "100"}) == I(1));
    f.at(101);
    const expiring::TickReport r = f.store.tick();
    CHECK(r.expired == 1);
    CHECK(r.fields_expired == 0);
    CHECK(f.store.peek("h") == nullptr);
    CHECK(f.stat("expired_keys") == "1");
    CHECK(f.subkeys() == "0");
    CHECK(f.db0() == "");
  }
  SECTION("a field TTL shorter than the key's: the last field takes the key") {
    HashFx f;
    f.R({"HSET", "h", "f", "v"});
    CHECK(f.R({"EXPIRE", "h", "100"}) == I(1));
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "f"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"HLEN", "h"}) == I(0));
    CHECK(f.R({"TTL", "h"}) == I(-2));
    CHECK(f.stat("expired_keys") == "0");  // D27: `del`, not an expiry of the key
    CHECK(f.subkeys() == "1");
  }
  SECTION("HPERSIST leaves the key TTL, PERSIST leaves field TTLs") {
    HashFx f;
    f.R({"HSET", "h", "f", "v", "g", "w"});
    CHECK(f.R({"PEXPIRE", "h", "9000"}) == I(1));
    CHECK(f.R({"HPEXPIRE", "h", "3000", "FIELDS", "2", "f", "g"}) == IA({1, 1}));
    CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == IA({1}));
    CHECK(f.R({"PTTL", "h"}) == I(9000));
    CHECK(f.R({"PERSIST", "h"}) == I(1));
    CHECK(f.R({"HPTTL", "h", "FIELDS", "2", "f", "g"}) == IA({-1, 3000}));
    CHECK(f.R({"PTTL", "h"}) == I(-1));
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=1");
    f.at(3001);
    CHECK(f.R({"HGETALL", "h"}) == ARR({B("f"), B("v")}));
  }
}

TEST_CASE("hash: RENAME and COPY keep field TTLs", "[redis][hash]") {
  SECTION("RENAME, to a new name and over a string") {
    HashFx f;
    f.R({"HSET", "h", "a", "1", "b", "2"});
    CHECK(f.R({"HPEXPIRE", "h", "5000", "FIELDS", "1", "a"}) == IA({1}));
    CHECK(f.R({"EXPIRE", "h", "100"}) == I(1));
    CHECK(f.R({"RENAME", "h", "h2"}) == OK);
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.R({"HPEXPIRETIME", "h2", "FIELDS", "2", "a", "b"}) == IA({1005000, -1}));
    CHECK(f.R({"TTL", "h2"}) == I(100));
    CHECK(f.db0() == "keys=1,expires=1,avg_ttl=0,subexpiry=1");
    CHECK(f.R({"SET", "s", "x"}) == OK);
    CHECK(f.R({"RENAME", "h2", "s"}) == OK);
    CHECK(f.R({"TYPE", "s"}) == "+hash\r\n");
    CHECK(f.R({"HPEXPIRETIME", "s", "FIELDS", "2", "a", "b"}) == IA({1005000, -1}));
    CHECK(f.R({"RENAMENX", "s", "s"}) == I(0));
    CHECK(f.db0() == "keys=1,expires=1,avg_ttl=0,subexpiry=1");
    f.at(5001);
    CHECK(f.store.tick().fields_expired == 1);  // the index followed the rename
    CHECK(f.R({"HGETALL", "s"}) == ARR({B("b"), B("2")}));
  }
  SECTION("RENAME over a hash with field TTLs: the destination's TTLs go") {
    HashFx f;
    f.R({"HSET", "src", "a", "1"});
    f.R({"HSET", "dst", "b", "2"});
    CHECK(f.R({"HPEXPIRE", "dst", "100", "FIELDS", "1", "b"}) == IA({1}));
    CHECK(f.R({"RENAME", "src", "dst"}) == OK);
    CHECK(f.R({"HGETALL", "dst"}) == ARR({B("a"), B("1")}));
    CHECK(f.R({"HTTL", "dst", "FIELDS", "2", "a", "b"}) == IA({-1, -2}));
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
    f.at(101);
    CHECK(f.store.tick().fields_expired == 0);
    CHECK(f.R({"HGETALL", "dst"}) == ARR({B("a"), B("1")}));
  }
  SECTION("COPY: a deep copy with the field deadlines and the key TTL") {
    HashFx f;
    f.R({"HSET", "s", "a", "1", "b", "2"});
    CHECK(f.R({"HPEXPIRE", "s", "5000", "FIELDS", "1", "a"}) == IA({1}));
    CHECK(f.R({"PEXPIRE", "s", "9000"}) == I(1));
    CHECK(f.R({"COPY", "s", "c"}) == I(1));
    CHECK(f.R({"HPEXPIRETIME", "c", "FIELDS", "2", "a", "b"}) == IA({1005000, -1}));
    CHECK(f.R({"PTTL", "c"}) == I(9000));
    CHECK(f.R({"TYPE", "c"}) == "+hash\r\n");
    CHECK(f.db0() == "keys=2,expires=2,avg_ttl=0,subexpiry=2");
    // Deep: changing the copy leaves the source.
    CHECK(f.R({"HSET", "c", "a", "changed"}) == I(0));
    CHECK(f.R({"HGET", "s", "a"}) == B("1"));
    CHECK(f.R({"HPEXPIRETIME", "s", "FIELDS", "1", "a"}) == IA({1005000}));
    CHECK(f.R({"HPEXPIRETIME", "c", "FIELDS", "1", "a"}) == IA({-1}));
    CHECK(f.db0() == "keys=2,expires=2,avg_ttl=0,subexpiry=1");
    CHECK(f.R({"COPY", "s", "c"}) == I(0));
    CHECK(f.R({"COPY", "s", "c", "REPLACE"}) == I(1));
    CHECK(f.R({"HPEXPIRETIME", "c", "FIELDS", "2", "a", "b"}) == IA({1005000, -1}));
    CHECK(f.R({"HGET", "c", "a"}) == B("1"));
    CHECK(f.R({"COPY", "s", "str"}) == I(1));
    CHECK(f.R({"SET", "str", "x"}) == OK);  // a copy overwritten by a string
    CHECK(f.R({"COPY", "str", "c", "REPLACE"}) == I(1));
    CHECK(f.R({"TYPE", "c"}) == "+string\r\n");
    CHECK(f.db0() == "keys=3,expires=1,avg_ttl=0,subexpiry=1");
  }
  SECTION("COPY of a hash with a stale field: the copy's is reclaimed too") {
    HashFx f;
    f.R({"HSET", "s", "a", "1", "b", "2"});
    CHECK(f.R({"HPEXPIRE", "s", "10", "FIELDS", "1", "a"}) == IA({1}));
    f.at(11);
    CHECK(f.R({"COPY", "s", "c"}) == I(1));
    CHECK(f.R({"HGETALL", "c"}) == ARR({B("b"), B("2")}));
    (void)f.store.tick();
    CHECK(f.stored_fields("s") == 1);
    CHECK(f.stored_fields("c") == 1);
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=0");
  }
}

// ==== Expiry through commands, and INFO ============================================================

TEST_CASE("hash: lazy and active field expiry through commands, expired_subkeys and subexpiry", "[redis][hash]") {
  SECTION("lazy: HGET after the deadline, then the last field takes the key") {
    HashFx f;
    f.record();
    f.R({"HSET", "h", "a", "1", "b", "2"});
    CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "a"}) == IA({1}));
    CHECK(f.R({"INFO", "keyspace"}) == B("# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0,subexpiry=1\r\n"));
    CHECK(f.subkeys() == "0");
    f.take();
    f.at(100);
    CHECK(f.R({"HGET", "h", "a"}) == B("1"));  // at the deadline: live (D20)
    CHECK(f.take().empty());
    f.at(101);
    CHECK(f.R({"HGET", "h", "a"}) == NIL);
    CHECK(f.take() == Strs{"hexpired h"});
    CHECK(f.subkeys() == "1");
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
    CHECK(f.R({"HGETALL", "h"}) == ARR({B("b"), B("2")}));
    CHECK(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "b"}) == IA({1}));
    f.take();
    f.at(200);
    CHECK(f.R({"HEXISTS", "h", "b"}) == I(0));
    CHECK(f.take() == (Strs{"hexpired h", "del h"}));
    CHECK(f.R({"EXISTS", "h"}) == I(0));
    CHECK(f.R({"TYPE", "h"}) == "+none\r\n");
    CHECK(f.R({"DBSIZE"}) == I(0));
    CHECK(f.subkeys() == "2");
    CHECK(f.stat("expired_keys") == "0");
    CHECK(f.R({"INFO", "keyspace"}) == B("# Keyspace\r\n"));
    CHECK(f.R({"CONFIG", "RESETSTAT"}) == OK);
    CHECK(f.subkeys() == "0");
  }
  SECTION("every hash command reclaims a stale field when it opens the hash (D20)") {
    const std::vector<Strs> cmds = {
        {"HGET", "h", "a"},
        {"HMGET", "h", "b"},
        {"HLEN", "h"},
        {"HEXISTS", "h", "b"},
        {"HGETALL", "h"},
        {"HKEYS", "h"},
        {"HVALS", "h"},
        {"HDEL", "h", "nosuch"},
        {"HSET", "h", "c", "3"},
        {"HSETNX", "h", "b", "2"},
        {"HINCRBY", "h", "n", "1"},
        {"HEXPIRE", "h", "100", "FIELDS", "1", "nosuch"},
        {"HPEXPIREAT", "h", "9000000", "FIELDS", "1", "b"},
        {"HTTL", "h", "FIELDS", "1", "nosuch"},
        {"HPTTL", "h", "FIELDS", "1", "b"},
        {"HEXPIRETIME", "h", "FIELDS", "1", "b"},
        {"HPEXPIRETIME", "h", "FIELDS", "1", "b"},
        {"HPERSIST", "h", "FIELDS", "1", "b"},
    };
    for (const Strs& c : cmds) {
      INFO(c[0]);
      HashFx f;
      f.R({"HSET", "h", "a", "1", "b", "2"});
      REQUIRE(f.R({"HPEXPIRE", "h", "10", "FIELDS", "1", "a"}) == IA({1}));
      f.at(11);
      REQUIRE(f.stored_fields("h") == 2);
      (void)f.run(c);
      CHECK(f.subkeys() == "1");
      CHECK(f.R({"HEXISTS", "h", "a"}) == I(0));
      CHECK(f.R({"HGET", "h", "b"}) == B("2"));
    }
  }
  SECTION("active: tick() reclaims without any access") {
    HashFx f;
    f.record();
    f.R({"HSET", "k", "x", "1", "y", "2", "z", "3"});
    f.R({"HSET", "other", "x", "1"});
    CHECK(f.R({"HPEXPIRE", "k", "50", "FIELDS", "2", "x", "y"}) == IA({1, 1}));
    CHECK(f.R({"HPEXPIRE", "other", "500", "FIELDS", "1", "x"}) == IA({1}));
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=2");
    f.take();
    f.at(251);
    const expiring::TickReport r = f.store.tick();
    CHECK(r.fields_expired == 2);
    CHECK(f.take() == Strs{"hexpired k"});
    CHECK(f.subkeys() == "2");
    CHECK(f.stored_fields("k") == 1);
    CHECK(f.stored_fields("other") == 1);
    CHECK(f.db0() == "keys=2,expires=0,avg_ttl=0,subexpiry=1");
    CHECK(f.R({"HGETALL", "k"}) == ARR({B("z"), B("3")}));
    f.at(501);
    CHECK(f.store.tick().fields_expired == 1);
    CHECK(f.take() == (Strs{"hexpired other", "del other"}));
    CHECK(f.store.peek("other") == nullptr);
    CHECK(f.R({"EXISTS", "other"}) == I(0));
    CHECK(f.subkeys() == "3");
    CHECK(f.stat("expired_keys") == "0");
    CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  }
  SECTION("DEBUG SET-ACTIVE-EXPIRE 0 stops the field cycle too") {
    HashFx f;
    f.R({"HSET", "k", "x", "1", "y", "2"});
    CHECK(f.R({"HPEXPIRE", "k", "50", "FIELDS", "1", "x"}) == IA({1}));
    CHECK(f.R({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == OK);
    f.at(51);
    CHECK(f.store.tick().fields_expired == 0);
    CHECK(f.stored_fields("k") == 2);
    CHECK(f.R({"DEBUG", "SET-ACTIVE-EXPIRE", "1"}) == OK);
    CHECK(f.store.tick().fields_expired == 1);
    CHECK(f.stored_fields("k") == 1);
  }
}

// ==== HINCRBYFLOAT, HRANDFIELD, HSCAN ============================================================

TEST_CASE("hash: HINCRBYFLOAT's checks in Redis 7.0's order, its formatting, the TTL kept", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HINCRBYFLOAT", "h", "f"}) == ARITY("hincrbyfloat"));
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HINCRBYFLOAT", "s", "f", "abc"}) == E("ERR value is not a valid float"));  // before the type
  CHECK(f.R({"HINCRBYFLOAT", "s", "f", "inf"}) == E("ERR value is NaN or Infinity"));
  CHECK(f.R({"HINCRBYFLOAT", "s", "f", "1"}) == WRONGTYPE);
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "10.50"}) == B("10.5"));
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "-0.5"}) == B("10"));
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "5.0e3"}) == B("5010"));
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "0x10"}) == B("5026"));  // strtold's hexadecimal
  CHECK(f.R({"HSET", "h", "t", "abc", "big", "1.1e4932"}) == I(2));
  CHECK(f.R({"HINCRBYFLOAT", "h", "t", "1"}) == E("ERR hash value is not a float"));
  CHECK(f.R({"HINCRBYFLOAT", "h", "big", "1.1e4932"}) == E("ERR increment would produce NaN or Infinity"));
  CHECK(f.R({"HGET", "h", "big"}) == B("1.1e4932"));
  CHECK(f.R({"HPEXPIRE", "h", "500", "FIELDS", "1", "f"}) == IA({1}));
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "1"}) == B("5027"));
  CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({500}));
  f.at(501);
  CHECK(f.R({"HINCRBYFLOAT", "h", "f", "2.5"}) == B("2.5"));  // a stale field counts as 0, no TTL
  CHECK(f.R({"HPTTL", "h", "FIELDS", "1", "f"}) == IA({-1}));
}

TEST_CASE("hash: HRANDFIELD's forms, errors and replies", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HRANDFIELD"}) == ARITY("hrandfield"));
  CHECK(f.R({"HRANDFIELD", "h"}) == NIL);
  CHECK(f.R({"HRANDFIELD", "h", "3"}) == EMPTY);
  CHECK(f.R({"HRANDFIELD", "h", "-3", "WITHVALUES"}) == EMPTY);
  CHECK(f.R({"HRANDFIELD", "h", "x"}) == NOT_INT);
  CHECK(f.R({"HRANDFIELD", "h", "1", "WITHVALUE"}) == SYNTAX);
  CHECK(f.R({"HRANDFIELD", "h", "1", "WITHVALUES", "x"}) == SYNTAX);
  CHECK(f.R({"HRANDFIELD", "h", "-9223372036854775808"}) ==
        E("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
  CHECK(f.R({"HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"}) == E("ERR value is out of range"));
  CHECK(f.R({"HRANDFIELD", "h", "4611686018427387903", "WITHVALUES"}) == EMPTY);
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HRANDFIELD", "s"}) == WRONGTYPE);
  CHECK(f.R({"HRANDFIELD", "s", "x"}) == NOT_INT);  // the count before the type
  CHECK(f.R({"HRANDFIELD", "s", "1"}) == WRONGTYPE);
  CHECK(f.R({"HSET", "h", "a", "1", "b", "2", "c", "3"}) == I(3));
  const std::string one = f.run({"HRANDFIELD", "h"}).str();
  CHECK((one == "a" || one == "b" || one == "c"));
  CHECK(sorted_bulks(f.run({"HRANDFIELD", "h", "10"})) == Strs{"a", "b", "c"});
  CHECK(sorted_pairs(f.run({"HRANDFIELD", "h", "3", "WITHVALUES"})) == Strs{"a=1", "b=2", "c=3"});
  CHECK(f.run({"HRANDFIELD", "h", "2"}).elements().size() == 2);
  const Reply rep = f.run({"HRANDFIELD", "h", "-7", "WITHVALUES"});
  REQUIRE(rep.elements().size() == 14);
  for (const std::string& p : sorted_pairs(rep)) CHECK((p == "a=1" || p == "b=2" || p == "c=3"));
  CHECK(f.R({"HRANDFIELD", "h", "0"}) == EMPTY);
}

TEST_CASE("hash: HRANDFIELD with a huge negative count stops at the client's output limit", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HSET", "h", "a", "1"}) == I(1));
  expiring::redis::OutputBuffer out;
  out.set_limit(1 << 20);
  expiring::redis::Session session;
  f.ex.execute_into(Strs{"HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"}, session, out);
  CHECK(out.over_limit());  // the server closes such a client, as Redis does
  CHECK(out.allocated() < (std::size_t{3} << 20));
}

TEST_CASE("hash: HSCAN's cursor, MATCH, COUNT, NOVALUES and errors", "[redis][hash]") {
  HashFx f;
  CHECK(f.R({"HSCAN", "h"}) == ARITY("hscan"));
  CHECK(f.R({"HSCAN", "h", "x"}) == E("ERR invalid cursor"));
  CHECK(f.R({"HSCAN", "h", "0"}) == ARR({B("0"), EMPTY}));
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HSCAN", "s", "x"}) == E("ERR invalid cursor"));  // the cursor before the type
  CHECK(f.R({"HSCAN", "s", "0"}) == WRONGTYPE);
  CHECK(f.R({"HSET", "h", "a1", "1", "a2", "2", "b1", "3"}) == I(3));
  CHECK(f.R({"HSCAN", "h", "0", "COUNT", "0"}) == SYNTAX);
  CHECK(f.R({"HSCAN", "h", "0", "COUNT", "x"}) == NOT_INT);
  CHECK(f.R({"HSCAN", "h", "0", "TYPE", "string"}) == SYNTAX);  // SCAN's alone
  CHECK(f.R({"HSCAN", "h", "0", "MATCH"}) == SYNTAX);
  Reply r = f.run({"HSCAN", "h", "0", "COUNT", "1"});  // a small hash: whole, cursor 0
  CHECK(r.elements()[0].str() == "0");
  CHECK(sorted_pairs(r.elements()[1]) == Strs{"a1=1", "a2=2", "b1=3"});
  r = f.run({"HSCAN", "h", "0", "MATCH", "a*", "NOVALUES"});
  CHECK(sorted_bulks(r.elements()[1]) == Strs{"a1", "a2"});
  // A large hash in steps, each field once when nothing changes.
  Strs args{"HSET", "big"};
  for (int i = 0; i < 500; ++i) {
    args.push_back("f" + std::to_string(i));
    args.push_back("v");
  }
  CHECK(f.R(args) == I(500));
  std::string cursor = "0";
  Strs seen;
  int calls = 0;
  do {
    r = f.run({"HSCAN", "big", cursor, "COUNT", "64", "NOVALUES"});
    cursor = r.elements()[0].str();
    for (const Reply& e : r.elements()[1].elements()) seen.push_back(e.str());
  } while (cursor != "0" && ++calls < 100);
  CHECK(calls == 7);  // 8 calls of up to 64 fields
  std::sort(seen.begin(), seen.end());
  CHECK(std::unique(seen.begin(), seen.end()) == seen.end());
  CHECK(seen.size() == 500);
}

// ==== Redis 8: HGETEX, HGETDEL, HSETEX ===========================================================
// Their checks in Redis 8's order and with its texts (t_hash.c hgetexCommand, hgetdelCommand,
// hsetexParseArgs; its tests/unit/type/hash-field-expire.tcl, whose HGETEX / HGETDEL / HSETEX
// tests pass against expiring-server, tests/redis/units/run_units.sh).

TEST_CASE("hash: HGETEX's argument errors in Redis 8's order", "[redis][hash][redis8]") {
  HashFx f;
  CHECK(f.R({"HGETEX", "h"}) == ARITY("hgetex"));
  CHECK(f.R({"HGETEX", "h", "FIELDS"}) == ARITY("hgetex"));
  CHECK(f.R({"HGETEX", "h", "FIELDS", "1"}) == ARITY("hgetex"));
  CHECK(f.R({"HGETEX", "h", "XFIELDX", "1", "a"}) == NO_FIELDS);
  CHECK(f.R({"HGETEX", "h", "PXAT", "1", "1"}) == NO_FIELDS);
  CHECK(f.R({"HGETEX", "h", "PERSIST", "1", "FIELDS", "1", "a"}) == NO_FIELDS);
  CHECK(f.R({"HGETEX", "h", "EX", "10", "FIELDS"}) == ARITY("hgetex"));
  CHECK(f.R({"HGETEX", "h", "FIELDS", "2", "a"}) == MISMATCH);
  CHECK(f.R({"HGETEX", "h", "FIELDS", "0", "a"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HGETEX", "h", "FIELDS", "-1", "a"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HGETEX", "h", "FIELDS", "9223372036854775808", "a"}) == NUMFIELDS_QUERY);
  // The time: an integer, >= 0, within the cap, checked before FIELDS.
  CHECK(f.R({"HGETEX", "h", "EX", "bla", "FIELDS", "1", "a"}) == NOT_INT);
  CHECK(f.R({"HGETEX", "h", "EX", "bla", "NOFIELDS", "1", "a"}) == NOT_INT);
  CHECK(f.R({"HGETEX", "h", "EXAT", "9223372036854775808", "FIELDS", "1", "a"}) == NOT_INT);
  CHECK(f.R({"HGETEX", "h", "PX", "-1", "FIELDS", "1", "a"}) == NEGATIVE);
  CHECK(f.R({"HGETEX", "h", "PXAT", "-1", "FIELDS", "1", "a"}) == NEGATIVE);
  CHECK(f.R({"HGETEX", "h", "EX", "70368744178", "FIELDS", "1", "a"}) == BAD_TIME("hgetex"));
  CHECK(f.R({"HGETEX", "h", "PXAT", "70368744177664", "FIELDS", "1", "a"}) == BAD_TIME("hgetex"));
  CHECK(f.R({"HGETEX", "h", "PX", std::to_string(70368744177663 - kT0 + 1), "FIELDS", "1", "a"}) ==
        BAD_TIME("hgetex"));
  // WRONGTYPE first, before any argument.
  CHECK(f.R({"SET", "s", "x"}) == OK);
  CHECK(f.R({"HGETEX", "s", "EX", "bla", "FIELDS", "1", "a"}) == WRONGTYPE);
  CHECK(f.R({"HGETEX", "s", "FIELDS", "1", "a"}) == WRONGTYPE);
  CHECK(f.R({"HGETDEL", "s", "BOGUS", "1", "a"}) == WRONGTYPE);
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("hash: HGETEX's replies and the TTLs it sets", "[redis][hash][redis8]") {
  HashFx f;
  CHECK(f.R({"HGETEX", "h", "EX", "10", "FIELDS", "2", "a", "b"}) == ARR({NIL, NIL}));  // no key: nils
  CHECK(f.R({"EXISTS", "h"}) == I(0));
  CHECK(f.R({"HSET", "h", "a", "1", "b", "2", "c", "3"}) == I(3));
  CHECK(f.R({"HGETEX", "h", "FIELDS", "2", "a", "zz"}) == ARR({B("1"), NIL}));
  CHECK(f.R({"HTTL", "h", "FIELDS", "1", "a"}) == IA({-1}));
  CHECK(f.R({"hgetex", "h", "ex", "10", "fields", "1", "a"}) == ARR({B("1")}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "a"}) == IA({kT0 + 10000}));
  CHECK(f.R({"HGETEX", "h", "PX", "500", "FIELDS", "1", "b"}) == ARR({B("2")}));
  CHECK(f.R({"HGETEX", "h", "EXAT", "2000", "FIELDS", "1", "c"}) == ARR({B("3")}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"}) == IA({kT0 + 10000, kT0 + 500, 2000000}));
  CHECK(f.R({"HGETEX", "h", "PXAT", std::to_string(kT0 + 7), "FIELDS", "1", "c"}) == ARR({B("3")}));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "c"}) == IA({kT0 + 7}));
  CHECK(f.R({"HGETEX", "h", "PERSIST", "FIELDS", "2", "a", "b"}) == ARR({B("1"), B("2")}));
  CHECK(f.R({"HTTL", "h", "FIELDS", "3", "a", "b", "c"}) == IA({-1, -1, 1}));
  // A stale field answers nil; a past time deletes the fields after reading them, and the
  // key with its last field.
  f.at(8);
  CHECK(f.R({"HGETEX", "h", "FIELDS", "1", "c"}) == ARR({NIL}));
  CHECK(f.subkeys() == "1");
  CHECK(f.R({"HGETEX", "h", "PX", "0", "FIELDS", "1", "a"}) == ARR({B("1")}));
  CHECK(f.subkeys() == "2");
  CHECK(f.R({"HGETEX", "h", "EXAT", "1", "FIELDS", "2", "b", "b"}) == ARR({B("2"), NIL}));
  CHECK(f.R({"EXISTS", "h"}) == I(0));
}

TEST_CASE("hash: HGETDEL's errors and replies", "[redis][hash][redis8]") {
  HashFx f;
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "1"}) == ARITY("hgetdel"));
  CHECK(f.R({"HGETDEL", "h", "XFIELDS", "1", "a"}) == NO_FIELDS);
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "0", "a"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "x", "a"}) == NUMFIELDS_QUERY);
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "2", "a"}) == MISMATCH);
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "1", "a"}) == ARR({NIL}));
  CHECK(f.R({"HSET", "h", "a", "1", "b", "2", "c", "3"}) == I(3));
  CHECK(f.R({"HPEXPIRE", "h", "100", "FIELDS", "1", "b"}) == IA({1}));
  f.record();
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "3", "b", "zz", "b"}) == ARR({B("2"), NIL, NIL}));
  CHECK(f.take() == Strs{"hdel h"});
  CHECK(f.db0() == "keys=1,expires=0,avg_ttl=0,subexpiry=0");
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "2", "a", "c"}) == ARR({B("1"), B("3")}));
  CHECK(f.take() == Strs{"hdel h", "del h"});
  CHECK(f.R({"EXISTS", "h"}) == I(0));
  CHECK(f.subkeys() == "0");
}

TEST_CASE("hash: HSETEX's argument errors, before the key's type", "[redis][hash][redis8]") {
  HashFx f;
  const std::string ONE_TTL = E("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
  const std::string ONE_COND = E("ERR Only one of FXX or FNX arguments can be specified");
  const std::string NFIELDS = E("ERR invalid number of fields");
  CHECK(f.R({"SET", "s", "x"}) == OK);  // a string: the argument errors still come first
  for (const char* k : {"h", "s"}) {
    CAPTURE(k);
    CHECK(f.R({"HSETEX", k, "FIELDS", "1", "a"}) == ARITY("hsetex"));
    CHECK(f.R({"HSETEX", k, "FIELDS", "2", "a", "b"}) == ARITY("hsetex"));
    CHECK(f.R({"HSETEX", k, "FIELDS", "2", "a", "b", "c"}) == ARITY("hsetex"));
    CHECK(f.R({"HSETEX", k, "FIELDS", "2", "a", "b", "c", "d", "e"}) == ARITY("hsetex"));
    CHECK(f.R({"HSETEX", k, "FIELDS", "1", "a", "b", "c"}) == ARITY("hsetex"));
    CHECK(f.R({"HSETEX", k, "FIELDS", "0", "a", "b"}) == NFIELDS);
    CHECK(f.R({"HSETEX", k, "FIELDS", "-1", "a", "b"}) == NFIELDS);
    CHECK(f.R({"HSETEX", k, "FIELDS", "2147483648", "a", "b"}) == NFIELDS);
    CHECK(f.R({"HSETEX", k, "FIELDS", "x", "a", "b"}) == NFIELDS);
    CHECK(f.R({"HSETEX", k, "FNX", "FXX", "FIELDS", "1", "a", "b"}) == ONE_COND);
    CHECK(f.R({"HSETEX", k, "FXX", "FXX", "FIELDS", "1", "a", "b"}) == ONE_COND);
    CHECK(f.R({"HSETEX", k, "EX", "10", "PX", "10", "FIELDS", "1", "a", "b"}) == ONE_TTL);
    CHECK(f.R({"HSETEX", k, "KEEPTTL", "EX", "10", "FIELDS", "1", "a", "b"}) == ONE_TTL);
    CHECK(f.R({"HSETEX", k, "EX", "10", "KEEPTTL", "FIELDS", "1", "a", "b"}) == ONE_TTL);
    CHECK(f.R({"HSETEX", k, "KEEPTTL", "KEEPTTL", "FIELDS", "1", "a", "b"}) == ONE_TTL);
    CHECK(f.R({"HSETEX", k, "EX", "bla", "FIELDS", "1", "a", "b"}) == NOT_INT);
    CHECK(f.R({"HSETEX", k, "PX", "-1", "FIELDS", "1", "a", "b"}) == NEGATIVE);
    CHECK(f.R({"HSETEX", k, "EXAT", "70368744178", "FIELDS", "1", "a", "b"}) == BAD_TIME("hsetex"));
    CHECK(f.R({"HSETEX", k, "PX", "70368744177663", "FIELDS", "1", "a", "b"}) == BAD_TIME("hsetex"));
    CHECK(f.R({"HSETEX", k, "FNX", "FXX", "EX", "1"}) == ONE_COND);  // in the order given: FXX first
    CHECK(f.R({"HSETEX", k, "FNX", "KEEPTTL", "EX", "1"}) == ONE_TTL);
    CHECK(f.R({"HSETEX", k, "FNX", "KEEPTTL", "BOGUS", "1", "a"}) == E("ERR unknown argument: BOGUS"));
    CHECK(f.R({"HSETEX", k, "FNX", "a", "b", "c"}) == E("ERR unknown argument: a"));
    CHECK(f.R({"HSETEX", k, "FNX", "KEEPTTL", "FIELDS", "EX"}) == ARITY("hsetex"));
  }
  CHECK(f.R({"HSETEX", "s", "FIELDS", "1", "a", "b"}) == WRONGTYPE);
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("hash: HSETEX's replies, FNX and FXX, and the TTLs it gives", "[redis][hash][redis8]") {
  HashFx f;
  f.record();
  CHECK(f.R({"HSETEX", "h", "FXX", "FIELDS", "1", "a", "1"}) == I(0));  // no key: FXX fails, nothing created
  CHECK(f.R({"EXISTS", "h"}) == I(0));
  CHECK(f.R({"HSETEX", "h", "FIELDS", "2", "a", "1", "b", "2"}) == I(1));
  CHECK(f.take() == Strs{"hset h"});
  CHECK(f.R({"HSETEX", "h", "FNX", "FIELDS", "2", "a", "x", "c", "3"}) == I(0));
  CHECK(f.R({"HSETEX", "h", "FXX", "FIELDS", "2", "a", "x", "c", "3"}) == I(0));
  CHECK(f.take().empty());
  CHECK(f.R({"HSETEX", "h", "FXX", "EX", "10", "FIELDS", "2", "a", "x", "b", "y"}) == I(1));
  CHECK(f.take() == Strs{"hset h", "hexpire h"});
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"}) == IA({kT0 + 10000, kT0 + 10000}));
  CHECK(f.R({"HSETEX", "h", "KEEPTTL", "FIELDS", "2", "a", "z", "n", "9"}) == I(1));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "2", "a", "n"}) == IA({kT0 + 10000, -1}));
  CHECK(f.R({"HSETEX", "h", "FIELDS", "1", "a", "w"}) == I(1));  // no TTL argument: cleared, as HSET
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "1", "a"}) == IA({-1}));
  CHECK(f.R({"HSETEX", "h", "PXAT", std::to_string(kT0 + 50), "FIELDS", "1", "a", "v"}) == I(1));
  CHECK(f.R({"HSETEX", "h", "EXAT", "3000", "FIELDS", "1", "b", "v"}) == I(1));
  CHECK(f.R({"HSETEX", "h", "PX", "70", "FIELDS", "1", "n", "v"}) == I(1));
  CHECK(f.R({"HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "n"}) == IA({kT0 + 50, 3000000, kT0 + 70}));
  f.take();
  // A past time: written, then deleted (counted as expired), the key with its last field.
  CHECK(f.R({"HSETEX", "h", "PX", "0", "FIELDS", "1", "a", "v"}) == I(1));
  CHECK(f.take() == Strs{"hset h", "hdel h"});
  CHECK(f.R({"HEXISTS", "h", "a"}) == I(0));
  CHECK(f.subkeys() == "1");
  CHECK(f.R({"HSETEX", "g", "EXAT", "1", "FIELDS", "1", "a", "v"}) == I(1));
  CHECK(f.take() == Strs{"hset g", "hdel g", "del g"});
  CHECK(f.R({"EXISTS", "g"}) == I(0));
  // A stale field counts as missing for FXX and FNX.
  f.at(51);
  CHECK(f.R({"HSETEX", "h", "FXX", "FIELDS", "1", "a", "x"}) == I(0));
  CHECK(f.R({"HSETEX", "h", "FNX", "FIELDS", "1", "a", "x"}) == I(1));
}

TEST_CASE("hash: HSETEX is refused over maxmemory, HGETEX and HGETDEL are not", "[redis][hash][redis8]") {
  HashFx f;
  CHECK(f.R({"HSET", "h", "a", "1"}) == I(1));
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1"}) == OK);
  CHECK(f.R({"HSETEX", "h", "FIELDS", "1", "b", "2"}) == OOM);
  CHECK(f.R({"HGETEX", "h", "EX", "10", "FIELDS", "1", "a"}) == ARR({B("1")}));
  CHECK(f.R({"HGETDEL", "h", "FIELDS", "1", "a"}) == ARR({B("1")}));
}

TEST_CASE("hash: a Value moved from is an empty string, which copies, weighs and compares", "[redis][hash][value]") {
  using expiring::redis::Value;
  Value h(expiring::redis::Hash{});
  REQUIRE(h.hash() != nullptr);
  (void)h.hash()->assign(std::string("f"), std::string("v"));
  Value taken(std::move(h));
  CHECK(taken.hash() != nullptr);
  CHECK(taken.hash()->size() == 1);
  // The source is left valid: an empty string (a copy of it and its weight are defined).
  CHECK(h.is_string());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(h == std::string());
  const Value copy(h);
  CHECK(copy.is_string());
  CHECK(h.heap_bytes() == 0);
  Value assigned("x");
  assigned = std::move(taken);
  CHECK(assigned.is_hash());
  CHECK(taken.is_string());  // NOLINT(bugprone-use-after-move)
  CHECK(*taken.string() == "");
  Value& self = assigned;
  assigned = std::move(self);  // a self-move leaves the value as it was
  CHECK(assigned.is_hash());
  CHECK(assigned.hash()->size() == 1);
}
