// tests/redis/test_redis_commands.cpp: the Redis command layer (include/expiring/redis/
// commands.hpp) on a ManualClock store: exact RESP replies (types and bytes), Redis 7.0's error
// strings, option parsing, and the SPEC §5 catalogue cases about parsing and errors
// (25, 32-34, 36, 49-51, 64, 67-69, 78-85, 104, 114, 116-121, 131, 132, 134).
// Every expected reply here was checked against redis-server 7.0.15.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "expiring/redis/commands.hpp"

using expiring::ManualClock;
using expiring::redis::Action;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::Session;
using expiring::redis::StringStore;

namespace {

constexpr std::int64_t kT0 = 1'000'000;  // SPEC §5: the clock starts at 1,000,000 ms

expiring::Options seeded() {
  expiring::Options o;
  o.seed = 42;
  return o;
}

struct Fx {
  ManualClock clock{kT0};
  StringStore<ManualClock&> store{clock, seeded()};
  CommandExecutor<ManualClock&> ex{store};

  Reply run(std::initializer_list<std::string_view> argv) { return ex.execute(argv); }
  Reply run(const std::vector<std::string>& argv) { return ex.execute(argv); }
  // The reply as bytes on the wire.
  std::string R(std::initializer_list<std::string_view> argv) { return run(argv).to_resp(); }
  // @+n: the clock reads T0 + n ms.
  void at(std::int64_t n) { clock.set(kT0 + n); }
};

const std::string OK = "+OK\r\n";
const std::string NIL = "$-1\r\n";
std::string I(std::int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string B(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string E(std::string_view s) { return "-" + std::string(s) + "\r\n"; }
const std::string NOT_INT = E("ERR value is not an integer or out of range");
const std::string SYNTAX = E("ERR syntax error");
std::string ARITY(std::string_view cmd) { return E("ERR wrong number of arguments for '" + std::string(cmd) + "' command"); }
std::string BAD_EXPIRE(std::string_view cmd) { return E("ERR invalid expire time in '" + std::string(cmd) + "' command"); }

std::vector<std::string> sorted_bulks(const Reply& r) {
  std::vector<std::string> v;
  for (const Reply& e : r.elements()) v.push_back(e.str());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// ==== Reply encoding ===========================================================================

TEST_CASE("resp reply: every type encodes as RESP2", "[redis][reply]") {
  CHECK(Reply::ok().to_resp() == "+OK\r\n");
  CHECK(Reply::status("PONG").to_resp() == "+PONG\r\n");
  CHECK(Reply::error("ERR syntax error").to_resp() == "-ERR syntax error\r\n");
  CHECK(Reply::integer(0).to_resp() == ":0\r\n");
  CHECK(Reply::integer(INT64_MIN).to_resp() == ":-9223372036854775808\r\n");
  CHECK(Reply::integer(INT64_MAX).to_resp() == ":9223372036854775807\r\n");
  CHECK(Reply::bulk("").to_resp() == "$0\r\n\r\n");
  CHECK(Reply::bulk(std::string("a\0\r\nb", 5)).to_resp() == std::string("$5\r\na\0\r\nb\r\n", 11));
  CHECK(Reply::nil().to_resp() == "$-1\r\n");
  CHECK(Reply::nil_array().to_resp() == "*-1\r\n");
  CHECK(Reply::array().to_resp() == "*0\r\n");
  CHECK(Reply::array({Reply::integer(1), Reply::array({Reply::bulk("x"), Reply::nil()})}).to_resp() ==
        "*2\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n");
  // A status or error line can never break the protocol.
  CHECK(Reply::error("ERR a\r\nb").to_resp() == "-ERR a  b\r\n");
  CHECK(Reply::status("x\ny").to_resp() == "+x y\r\n");
}

TEST_CASE("integer grammar: string2ll accepts exactly Redis's forms (SPEC §2.0)", "[redis][int]") {
  using expiring::redis::parse_int64;
  std::int64_t v = 7;
  CHECK((parse_int64("0", v) && v == 0));
  CHECK((parse_int64("-1", v) && v == -1));
  CHECK((parse_int64("9223372036854775807", v) && v == INT64_MAX));
  CHECK((parse_int64("-9223372036854775808", v) && v == INT64_MIN));
  for (const char* bad : {"", "+5", "010", "-0", "00", "1.5", " 1", "1 ", "abc", "-", "9223372036854775808",
                          "-9223372036854775809", "18446744073709551616", "100000000000000000000", "1e3", "0x10"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_int64(bad, v));
  }
  CHECK_FALSE(parse_int64(std::string("1\0", 2), v));
}

// ==== Dispatch: unknown commands and arity =====================================================

TEST_CASE("dispatch: unknown command is reported as redis 7.0 formats it", "[redis][dispatch]") {
  Fx f;
  CHECK(f.R({"foo"}) == E("ERR unknown command 'foo', with args beginning with: "));
  CHECK(f.R({"foo", "a", "b"}) == E("ERR unknown command 'foo', with args beginning with: 'a' 'b' "));
  // CR/LF become spaces; arguments are read as C strings (cut at NUL).
  CHECK(f.R({"foo", "a\r\nb", std::string_view("c\0d", 3)}) ==
        E("ERR unknown command 'foo', with args beginning with: 'a  b' 'c' "));
  // The name is matched on its full length: "get\0x" is not GET.
  CHECK(f.R({std::string_view("get\0x", 5), "a"}) == E("ERR unknown command 'get', with args beginning with: 'a' "));
  CHECK(f.R({""}) == E("ERR unknown command '', with args beginning with: "));
  // The name is cut at 128 bytes; arguments are quoted until the list reaches 128 bytes.
  const std::string longname(200, 'n');
  const std::string a100(100, 'a'), b100(100, 'b');
  CHECK(f.R({longname, a100, b100, "c"}) == E("ERR unknown command '" + std::string(128, 'n') +
                                               "', with args beginning with: '" + a100 + "' '" + std::string(25, 'b') +
                                               "' "));
  CHECK(f.store.size() == 0);
}

TEST_CASE("dispatch: names are case-insensitive, arity errors name the command in lowercase", "[redis][dispatch]") {
  Fx f;
  CHECK(f.R({"sEt", "k", "v"}) == OK);
  CHECK(f.R({"GeT", "k"}) == B("v"));
  CHECK(f.R({"GET"}) == ARITY("get"));
  CHECK(f.R({"GET", "a", "b"}) == ARITY("get"));
  CHECK(f.R({"SET", "k"}) == ARITY("set"));
  CHECK(f.R({"EXPIRE", "k"}) == ARITY("expire"));  // case 34
  CHECK(f.R({"GETEX"}) == ARITY("getex"));         // case 116
  CHECK(f.R({"MSET", "a"}) == ARITY("mset"));
  CHECK(f.R({"MSET", "a", "1", "b"}) == ARITY("mset"));
  CHECK(f.R({"MSETNX", "a", "1", "b"}) == ARITY("msetnx"));
  CHECK(f.R({"PING", "a", "b"}) == ARITY("ping"));
  CHECK(f.R({"TIME", "x"}) == ARITY("time"));
  CHECK(f.R({"DBSIZE", "x"}) == ARITY("dbsize"));
  CHECK(f.R({"RANDOMKEY", "x"}) == ARITY("randomkey"));
  CHECK(f.R({"SETEX", "k", "10"}) == ARITY("setex"));
  CHECK(f.R({"PSETEX", "k", "10", "v", "x"}) == ARITY("psetex"));
  CHECK(f.R({"COPY", "a"}) == ARITY("copy"));
  CHECK(f.R({"KEYS"}) == ARITY("keys"));
  CHECK(f.R({"SCAN"}) == ARITY("scan"));
  CHECK(f.R({"CONFIG"}) == ARITY("config"));
  CHECK(f.R({"CONFIG", "GET"}) == ARITY("config|get"));
  CHECK(f.R({"CONFIG", "SET", "hz"}) == ARITY("config|set"));
  CHECK(f.R({"CONFIG", "RESETSTAT", "x"}) == ARITY("config|resetstat"));
  CHECK(f.R({"COMMAND", "COUNT", "x"}) == ARITY("command|count"));
  CHECK(f.R({"CONFIG", "FOO"}) == E("ERR unknown subcommand 'FOO'. Try CONFIG HELP."));
  CHECK(f.R({"command", "foo"}) == E("ERR unknown subcommand 'foo'. Try COMMAND HELP."));
  CHECK(f.R({"DEBUG"}) == ARITY("debug"));
  CHECK(f.R({"DEBUG", "foo"}) ==
        E("ERR unknown subcommand or wrong number of arguments for 'foo'. Try DEBUG HELP."));
  CHECK(f.R({"DEBUG", "set-active-expire"}) ==
        E("ERR unknown subcommand or wrong number of arguments for 'set-active-expire'. Try DEBUG HELP."));
}

// ==== Connection and server commands ===========================================================

TEST_CASE("ping, echo, select, time, dbsize", "[redis][server]") {
  Fx f;
  CHECK(f.R({"PING"}) == "+PONG\r\n");
  CHECK(f.R({"PING", "hi"}) == B("hi"));
  CHECK(f.R({"ECHO", std::string_view("a\0b", 3)}) == B(std::string_view("a\0b", 3)));
  CHECK(f.R({"SELECT", "0"}) == OK);
  CHECK(f.R({"SELECT", "1"}) == E("ERR DB index is out of range"));  // one database only
  CHECK(f.R({"SELECT", "16"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SELECT", "-1"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"SELECT", "abc"}) == NOT_INT);
  CHECK(f.R({"SELECT", "99999999999"}) ==
        E("ERR value is out of range, value must between -2147483648 and 2147483647"));
  f.clock.set(1'700'000'123'456);
  CHECK(f.R({"TIME"}) == "*2\r\n" + B("1700000123") + B("456000"));
  CHECK(f.R({"DBSIZE"}) == I(0));
  f.R({"SET", "a", "1"});
  f.R({"SET", "b", "1", "PX", "10"});
  CHECK(f.R({"DBSIZE"}) == I(2));
}

TEST_CASE("quit and shutdown report their connection action", "[redis][server]") {
  Fx f;
  Session s;
  CHECK(f.ex.execute({"QUIT"}, s) == Reply::ok());
  CHECK(s.action == Action::close);
  Session t;
  CHECK(f.ex.execute({"SHUTDOWN", "NOSAVE", "NOW"}, t) == Reply::ok());
  CHECK(t.action == Action::shutdown);
  Session u;
  CHECK(f.ex.execute({"SHUTDOWN", "FOO"}, u).to_resp() == SYNTAX);
  CHECK(f.ex.execute({"SHUTDOWN", "SAVE", "NOSAVE"}, u).to_resp() == SYNTAX);
  CHECK(f.ex.execute({"SHUTDOWN", "ABORT"}, u).to_resp() == E("ERR No shutdown in progress."));
  CHECK(u.action == Action::none);
}

TEST_CASE("hello: RESP2 only, the handshake fields of redis 7.0", "[redis][server]") {
  Fx f;
  Session s;
  s.id = 7;
  const Reply r = f.ex.execute({"HELLO", "2"}, s);
  CHECK(r.to_resp() == "*14\r\n" + B("server") + B("redis") + B("version") + B("7.0.15") + B("proto") + I(2) + B("id") +
                           I(7) + B("mode") + B("standalone") + B("role") + B("master") + B("modules") + "*0\r\n");
  CHECK(f.R({"HELLO", "3"}) == E("NOPROTO unsupported protocol version"));
  CHECK(f.R({"HELLO", "1"}) == E("NOPROTO unsupported protocol version"));
  CHECK(f.R({"HELLO", "x"}) == E("ERR Protocol version is not an integer or out of range"));
  CHECK(f.R({"HELLO", "2", "FOO"}) == E("ERR Syntax error in HELLO option 'FOO'"));
  CHECK(f.R({"HELLO", "2", "AUTH", "x"}) == E("ERR Syntax error in HELLO option 'AUTH'"));
  CHECK(f.R({"HELLO", "2", "AUTH", "foo", "bar"}) == E("WRONGPASS invalid username-password pair or user is disabled."));
  CHECK(f.run({"HELLO", "2", "AUTH", "default", "x", "SETNAME", "me"}).type() == Reply::Type::array);
}

TEST_CASE("command: count, info, list, no docs (enough for redis-cli)", "[redis][server]") {
  Fx f;
  const Reply count = f.run({"COMMAND", "COUNT"});
  REQUIRE(count.type() == Reply::Type::integer);
  CHECK(count.integer() == static_cast<std::int64_t>(f.ex.command_count()));
  CHECK(count.integer() >= 50);
  // Refused, so that redis-cli uses its built-in help.
  CHECK(f.R({"COMMAND", "DOCS"}) == E("ERR unknown subcommand 'DOCS'. Try COMMAND HELP."));
  const Reply all = f.run({"COMMAND"});
  CHECK(all.elements().size() == f.ex.command_count());
  const Reply info = f.run({"COMMAND", "INFO", "get", "nosuch"});
  REQUIRE(info.elements().size() == 2);
  CHECK(info.elements()[0].elements().size() == 10);
  CHECK(info.elements()[0].elements()[0] == Reply::bulk("get"));
  CHECK(info.elements()[0].elements()[1] == Reply::integer(2));
  CHECK(info.elements()[1] == Reply::nil_array());
  const Reply list = f.run({"COMMAND", "LIST"});
  CHECK(list.elements().size() == f.ex.command_count());
  CHECK(f.R({"COMMAND", "LIST", "x"}) == SYNTAX);
}

// ==== SET and friends ==========================================================================

TEST_CASE("set: option errors and overflow (cases 78-84)", "[redis][set]") {
  Fx f;
  CHECK(f.R({"SET", "foo", "bar", "EX", "10000000000000000"}) == BAD_EXPIRE("set"));   // 78
  CHECK(f.R({"SET", "foo", "bar", "EX", "-9999999999999999"}) == BAD_EXPIRE("set"));   // 79
  for (const char* opt : {"EX", "PX", "EXAT", "PXAT"}) {                                // 80
    CAPTURE(opt);
    CHECK(f.R({"SET", "k", "v", opt, "0"}) == BAD_EXPIRE("set"));
    CHECK(f.R({"SET", "k", "v", opt, "-1"}) == BAD_EXPIRE("set"));
  }
  CHECK(f.R({"EXISTS", "k"}) == I(0));
  CHECK(f.R({"SET", "k", "v", "EX", "1.5"}) == NOT_INT);                               // 81
  CHECK(f.R({"SET", "k", "v", "EX", ""}) == NOT_INT);
  CHECK(f.R({"SET", "k", "v", "PX", "9223372036854775807"}) == BAD_EXPIRE("set"));     // 82
  CHECK(f.R({"SET", "k", "v", "EX", "9223372036854775"}) == BAD_EXPIRE("set"));
  CHECK(f.R({"SET", "k", "v", "EXAT", "9223372036854775"}) == OK);
  CHECK(f.R({"PEXPIRETIME", "k"}) == I(9223372036854775000));
  CHECK(f.R({"SET", "k", "v", "PXAT", "9223372036854775807"}) == OK);
  CHECK(f.R({"PEXPIRETIME", "k"}) == I(INT64_MAX));
  CHECK(f.R({"SET", "foo", "bar", "non-existing-option"}) == SYNTAX);                  // 83
  for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{      // 84
           {"SET", "k", "v", "NX", "XX"},
           {"SET", "k", "v", "XX", "NX"},
           {"SET", "k", "v", "EX", "10", "PX", "100"},
           {"SET", "k", "v", "EX", "10", "EXAT", "2000"},
           {"SET", "k", "v", "PX", "10", "PXAT", "5"},
           {"SET", "k", "v", "EX", "10", "KEEPTTL"},
           {"SET", "k", "v", "KEEPTTL", "PX", "10"},
           {"SET", "k", "v", "EX"},
           {"SET", "k", "v", "PERSIST"},
           {"SET", "k", "v", "EX", "abc", "NX", "XX"},
           {"SET", "k", "v", "NX", "EX"},
           {"SET", "k", "v", "nxx"},
           {"SET", "k", "v", ""}}) {
    CAPTURE(cmd);
    CHECK(f.run(cmd).to_resp() == SYNTAX);
  }
  CHECK(f.R({"PEXPIRETIME", "k"}) == I(INT64_MAX));  // none of the errors changed anything
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("set: repeated options are accepted and the last value wins (case 85)", "[redis][set]") {
  Fx f;
  CHECK(f.R({"SET", "k", "v", "EX", "10", "EX", "20"}) == OK);
  CHECK(f.R({"TTL", "k"}) == I(20));
  CHECK(f.R({"SET", "k", "v", "NX", "NX"}) == NIL);
  CHECK(f.R({"SET", "j", "v", "KEEPTTL", "KEEPTTL"}) == OK);
  CHECK(f.R({"SET", "j", "w", "GET", "GET"}) == B("v"));
  CHECK(f.R({"SET", "k", "w", "xx", "Px", "5000", "pX", "7000"}) == OK);
  CHECK(f.R({"PTTL", "k"}) == I(7000));
  // Options are C strings to Redis: "nx\0junk" reads as NX.
  CHECK(f.R({"SET", "n", "v", std::string_view("nx\0junk", 7)}) == OK);
  CHECK(f.R({"SET", "n", "w", std::string_view("nx\0junk", 7)}) == NIL);
}

TEST_CASE("set: NX, XX, GET, KEEPTTL and expiry options in any order", "[redis][set]") {
  Fx f;
  CHECK(f.R({"SET", "foo", "1", "NX"}) == OK);
  CHECK(f.R({"SET", "foo", "2", "NX"}) == NIL);
  CHECK(f.R({"GET", "foo"}) == B("1"));
  CHECK(f.R({"SET", "bar", "1", "XX"}) == NIL);
  CHECK(f.R({"SET", "foo", "bar", "GET"}) == B("1"));
  CHECK(f.R({"SET", "new", "x", "GET"}) == NIL);
  CHECK(f.R({"SET", "foo", "baz", "GET", "NX"}) == B("bar"));
  CHECK(f.R({"GET", "foo"}) == B("bar"));
  CHECK(f.R({"SET", "zz", "v", "GET", "XX"}) == NIL);
  CHECK(f.R({"EXISTS", "zz"}) == I(0));
  CHECK(f.R({"SET", "foo", "v", "EX", "100", "GET", "XX"}) == B("bar"));
  CHECK(f.R({"TTL", "foo"}) == I(100));
  CHECK(f.R({"SET", "foo", "w", "KEEPTTL"}) == OK);
  CHECK(f.R({"TTL", "foo"}) == I(100));
  CHECK(f.R({"SET", "foo", "w"}) == OK);
  CHECK(f.R({"TTL", "foo"}) == I(-1));
  CHECK(f.R({"SET", "e", "v", "EXAT", "1010"}) == OK);
  CHECK(f.R({"TTL", "e"}) == I(10));
  CHECK(f.R({"SET", "p", "v", "PXAT", "1010000"}) == OK);
  CHECK(f.R({"PTTL", "p"}) == I(10000));
  // D4: an absolute deadline already past deletes the key and stores nothing; reply OK / GET.
  CHECK(f.R({"SET", "p", "old", "PXAT", "999000", "GET"}) == B("v"));
  CHECK(f.R({"EXISTS", "p"}) == I(0));
  CHECK(f.R({"SET", "q", "v", "EXAT", "1"}) == OK);
  CHECK(f.R({"EXISTS", "q"}) == I(0));
}

TEST_CASE("setex, psetex, setnx, getset, mset, msetnx (case 104)", "[redis][set]") {
  Fx f;
  CHECK(f.R({"SETEX", "z", "-10", "foo"}) == BAD_EXPIRE("setex"));
  CHECK(f.R({"SETEX", "z", "0", "foo"}) == BAD_EXPIRE("setex"));
  CHECK(f.R({"PSETEX", "z", "0", "foo"}) == BAD_EXPIRE("psetex"));
  CHECK(f.R({"SETEX", "z", "x", "foo"}) == NOT_INT);
  CHECK(f.R({"SETEX", "z", "9223372036854776", "foo"}) == BAD_EXPIRE("setex"));
  CHECK(f.R({"EXISTS", "z"}) == I(0));
  CHECK(f.R({"SETEX", "x", "12", "test"}) == OK);
  CHECK(f.R({"TTL", "x"}) == I(12));
  CHECK(f.R({"PSETEX", "y", "1500", "v"}) == OK);
  CHECK(f.R({"PTTL", "y"}) == I(1500));
  CHECK(f.R({"SETNX", "x", "20"}) == I(0));
  CHECK(f.R({"SETNX", "n", "20"}) == I(1));
  CHECK(f.R({"GETSET", "x", "w"}) == B("test"));
  CHECK(f.R({"TTL", "x"}) == I(-1));
  CHECK(f.R({"GETSET", "none", "w"}) == NIL);
  CHECK(f.R({"MSET", "y", "1", "m", "2", "m", "3"}) == OK);
  CHECK(f.R({"TTL", "y"}) == I(-1));
  CHECK(f.R({"MGET", "y", "m", "nope"}) == "*3\r\n" + B("1") + B("3") + NIL);
  CHECK(f.R({"MSETNX", "a", "1", "y", "2"}) == I(0));
  CHECK(f.R({"EXISTS", "a"}) == I(0));
  CHECK(f.R({"MSETNX", "a", "1", "b", "2"}) == I(1));
  CHECK(f.R({"MGET", "a", "b"}) == "*2\r\n" + B("1") + B("2"));
}

TEST_CASE("msetnx: a stale key counts as absent and costs no keyspace hit", "[redis][set]") {
  Fx f;
  f.R({"SET", "a", "old", "PX", "10"});
  f.at(11);
  const auto hits = f.store.stats().keyspace_hits, misses = f.store.stats().keyspace_misses;
  CHECK(f.R({"MSETNX", "a", "new"}) == I(1));
  CHECK(f.store.stats().keyspace_hits == hits);
  CHECK(f.store.stats().keyspace_misses == misses);
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.R({"GET", "a"}) == B("new"));
  CHECK(f.R({"TTL", "a"}) == I(-1));
}

// ==== GETEX / GETDEL ===========================================================================

TEST_CASE("getex: syntax errors (case 114) and arity (case 116)", "[redis][getex]") {
  Fx f;
  f.R({"SET", "foo", "bar", "EX", "100"});
  for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
           {"GETEX", "foo", "non-existent-option"},
           {"GETEX", "foo", "EX", "10", "PX", "10"},
           {"GETEX", "foo", "PERSIST", "EX", "1"},
           {"GETEX", "foo", "EX", "1", "PERSIST"},
           {"GETEX", "foo", "KEEPTTL"},
           {"GETEX", "foo", "NX"},
           {"GETEX", "foo", "XX"},
           {"GETEX", "foo", "GET"},
           {"GETEX", "foo", "EX"}}) {
    CAPTURE(cmd);
    CHECK(f.run(cmd).to_resp() == SYNTAX);
  }
  CHECK(f.R({"GETEX"}) == ARITY("getex"));
  CHECK(f.R({"TTL", "foo"}) == I(100));
}

TEST_CASE("getex: expire values are checked only for a live key (cases 117-120)", "[redis][getex]") {
  Fx f;
  f.R({"SET", "foo", "bar"});
  CHECK(f.R({"GETEX", "foo", "EX", "10000000000000000"}) == BAD_EXPIRE("getex"));  // 117
  CHECK(f.R({"TTL", "foo"}) == I(-1));
  CHECK(f.R({"GETEX", "foo", "EX", "-9999999999999999"}) == BAD_EXPIRE("getex"));  // 118
  CHECK(f.R({"GETEX", "foo", "EX", "0"}) == BAD_EXPIRE("getex"));                   // 119
  CHECK(f.R({"GETEX", "foo", "PXAT", "0"}) == BAD_EXPIRE("getex"));
  CHECK(f.R({"GETEX", "foo", "EX", "abc"}) == NOT_INT);
  CHECK(f.R({"TTL", "foo"}) == I(-1));
  CHECK(f.R({"GETEX", "missing", "EX", "0"}) == NIL);                              // 120
  CHECK(f.R({"GETEX", "missing", "EX", "abc"}) == NIL);
  CHECK(f.R({"GETEX", "missing", "BOGUS"}) == SYNTAX);
  // 121 (WRONGTYPE) cannot arise: every value is a string. The same order on a string key:
  CHECK(f.R({"GETEX", "foo", "EX", "0"}) == BAD_EXPIRE("getex"));
}

TEST_CASE("getex: options set, replace, persist and delete", "[redis][getex]") {
  Fx f;
  f.R({"SET", "foo", "bar"});
  CHECK(f.R({"GETEX", "foo", "EX", "10"}) == B("bar"));
  CHECK(f.R({"TTL", "foo"}) == I(10));
  CHECK(f.R({"GETEX", "foo", "px", "20000", "PX", "30000"}) == B("bar"));
  CHECK(f.R({"PTTL", "foo"}) == I(30000));
  CHECK(f.R({"GETEX", "foo"}) == B("bar"));
  CHECK(f.R({"PTTL", "foo"}) == I(30000));
  CHECK(f.R({"GETEX", "foo", "PERSIST"}) == B("bar"));
  CHECK(f.R({"TTL", "foo"}) == I(-1));
  CHECK(f.R({"GETEX", "foo", "EXAT", "1010"}) == B("bar"));
  CHECK(f.R({"TTL", "foo"}) == I(10));
  CHECK(f.R({"GETEX", "foo", "PXAT", "1000000"}) == B("bar"));  // == now: deleted after reading
  CHECK(f.R({"EXISTS", "foo"}) == I(0));
  CHECK(f.R({"GETDEL", "foo"}) == NIL);
  f.R({"SET", "k", "v", "EX", "100"});
  CHECK(f.R({"GETDEL", "k"}) == B("v"));
  CHECK(f.R({"TTL", "k"}) == I(-2));
}

// ==== The EXPIRE family ========================================================================

TEST_CASE("expire: non-integer TTL strings are refused (case 25)", "[redis][expire]") {
  Fx f;
  f.R({"SET", "foo", "bar"});
  for (const char* bad : {"", "1.5", "+5", "010", "-0", "abc", " 5", "5 "}) {
    CAPTURE(bad);
    CHECK(f.R({"EXPIRE", "foo", bad}) == NOT_INT);
    CHECK(f.R({"PEXPIREAT", "foo", bad}) == NOT_INT);
  }
  CHECK(f.R({"TTL", "foo"}) == I(-1));
}

TEST_CASE("expire: options are parsed before the number, errors beat a missing key (cases 32, 33)",
          "[redis][expire]") {
  Fx f;
  f.R({"SET", "k", "v"});
  CHECK(f.R({"EXPIRE", "k", "abc", "FOO"}) == E("ERR Unsupported option FOO"));
  CHECK(f.R({"EXPIRE", "k", "abc", "NX", "XX"}) ==
        E("ERR NX and XX, GT or LT options at the same time are not compatible"));
  CHECK(f.R({"EXPIRE", "k", "abc", "NX"}) == NOT_INT);
  CHECK(f.R({"EXPIRE", "missing", "10", "NX", "XX"}) ==
        E("ERR NX and XX, GT or LT options at the same time are not compatible"));
  CHECK(f.R({"EXPIRE", "missing", "9223372036854776"}) == BAD_EXPIRE("expire"));
  CHECK(f.R({"PEXPIRE", "missing", "9223372036854770000"}) == BAD_EXPIRE("pexpire"));
  CHECK(f.R({"EXPIREAT", "missing", "9223372036854776"}) == BAD_EXPIRE("expireat"));
  CHECK(f.R({"EXPIREAT", "missing", "-9223372036854776"}) == BAD_EXPIRE("expireat"));
  CHECK(f.R({"PEXPIREAT", "missing", "9223372036854775807"}) == I(0));
  CHECK(f.R({"EXPIRE", "missing", "100"}) == I(0));
  CHECK(f.R({"TTL", "k"}) == I(-1));
}

TEST_CASE("expire: flags are case-insensitive and repeatable (case 36)", "[redis][expire]") {
  Fx f;
  f.R({"SET", "k", "v", "EX", "100"});
  CHECK(f.R({"EXPIRE", "k", "200", "gt", "GT"}) == I(1));
  CHECK(f.R({"TTL", "k"}) == I(200));
  f.R({"SET", "j", "v"});
  CHECK(f.R({"EXPIRE", "j", "5", "nx", "NX"}) == I(1));
  CHECK(f.R({"TTL", "j"}) == I(5));
  CHECK(f.R({"EXPIRE", "k", "300", "xx", "gT"}) == I(1));
  CHECK(f.R({"TTL", "k"}) == I(300));
}

TEST_CASE("expire: conflicting and unsupported options (cases 49-51)", "[redis][expire]") {
  Fx f;
  f.R({"SET", "foo", "bar", "EX", "100"});
  CHECK(f.R({"EXPIRE", "foo", "200", "LT", "GT"}) == E("ERR GT and LT options at the same time are not compatible"));
  for (const char* other : {"GT", "LT", "XX"}) {
    CAPTURE(other);
    CHECK(f.R({"EXPIRE", "foo", "200", "NX", other}) ==
          E("ERR NX and XX, GT or LT options at the same time are not compatible"));
    CHECK(f.R({"PEXPIREAT", "foo", "200", other, "NX"}) ==
          E("ERR NX and XX, GT or LT options at the same time are not compatible"));
  }
  CHECK(f.R({"EXPIRE", "foo", "200", "AB"}) == E("ERR Unsupported option AB"));
  CHECK(f.R({"EXPIRE", "foo", "200", "XX", "AB"}) == E("ERR Unsupported option AB"));
  // The option is quoted as a C string, with CR/LF trimmed at the end and spaced inside.
  CHECK(f.R({"EXPIRE", "foo", "200", "A\r\nB\r\n"}) == E("ERR Unsupported option A  B"));
  CHECK(f.R({"EXPIRE", "foo", "200", std::string_view("AB\0CD", 5)}) == E("ERR Unsupported option AB"));
  CHECK(f.R({"TTL", "foo"}) == I(100));
}

TEST_CASE("expire: the family's replies, deletion by a past deadline, persist", "[redis][expire]") {
  Fx f;
  f.R({"SET", "k", "v"});
  CHECK(f.R({"EXPIRE", "k", "100"}) == I(1));
  CHECK(f.R({"PEXPIRE", "k", "100001", "GT"}) == I(1));
  CHECK(f.R({"EXPIRE", "k", "100", "GT"}) == I(0));
  CHECK(f.R({"PEXPIRETIME", "k"}) == I(1100001));
  CHECK(f.R({"EXPIRETIME", "k"}) == I(1100));
  CHECK(f.R({"EXPIREAT", "k", "2000"}) == I(1));
  CHECK(f.R({"TTL", "k"}) == I(1000));
  CHECK(f.R({"PERSIST", "k"}) == I(1));
  CHECK(f.R({"PERSIST", "k"}) == I(0));
  CHECK(f.R({"PERSIST", "none"}) == I(0));
  CHECK(f.R({"EXPIRE", "k", "0"}) == I(1));
  CHECK(f.R({"EXISTS", "k"}) == I(0));
  CHECK(f.R({"TTL", "k"}) == I(-2));
  CHECK(f.R({"PTTL", "k"}) == I(-2));
  CHECK(f.R({"EXPIRETIME", "k"}) == I(-2));
  CHECK(f.store.stats().expired_keys == 0);  // D3: a deletion, not an expiry
}

// ==== Lazy expiry through commands (cases 64, 67-69) ==========================================

TEST_CASE("lazy expiry: MGET reclaims, DBSIZE counts stale keys (case 64)", "[redis][lazy]") {
  Fx f;
  for (const char* k : {"key1", "key2", "key3"}) CHECK(f.R({"PSETEX", k, "500", "a"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(3));
  f.at(1000);
  CHECK(f.R({"DBSIZE"}) == I(3));
  CHECK(f.R({"MGET", "key1", "key2", "key3"}) == "*3\r\n" + NIL + NIL + NIL);
  CHECK(f.R({"DBSIZE"}) == I(0));
  CHECK(f.store.stats().expired_keys == 3);
}

TEST_CASE("exists counts duplicates, del counts once (case 67)", "[redis][lazy]") {
  Fx f;
  f.R({"SET", "a", "1"});
  CHECK(f.R({"EXISTS", "a", "a", "nokey"}) == I(2));
  CHECK(f.R({"TOUCH", "a", "a", "nokey"}) == I(2));
  CHECK(f.R({"DEL", "a", "a"}) == I(1));
  f.R({"MSET", "x", "1", "y", "2"});
  CHECK(f.R({"UNLINK", "x", "y", "z"}) == I(2));
}

TEST_CASE("keys: five keys in, five keys out (case 68)", "[redis][keys]") {
  Fx f;
  f.R({"SET", "a", "c"});
  f.R({"EXPIRE", "a", "5"});
  for (const char* k : {"t", "e", "s"}) f.R({"SET", k, "c"});
  f.R({"SET", "foo", "b"});
  CHECK(sorted_bulks(f.run({"KEYS", "*"})) == std::vector<std::string>{"a", "e", "foo", "s", "t"});
}

TEST_CASE("keys filters stale keys without deleting, a full scan reclaims them (case 69)", "[redis][keys]") {
  Fx f;
  f.R({"SET", "k", "v", "PX", "10"});
  f.R({"SET", "p", "v"});
  f.at(11);
  CHECK(f.R({"KEYS", "*"}) == "*1\r\n" + B("p"));
  CHECK(f.R({"DBSIZE"}) == I(2));
  std::vector<std::string> seen;
  std::string cursor = "0";
  do {
    const Reply r = f.run({"SCAN", cursor});
    REQUIRE(r.elements().size() == 2);
    cursor = r.elements()[0].str();
    for (const Reply& k : r.elements()[1].elements()) seen.push_back(k.str());
  } while (cursor != "0");
  CHECK(seen == std::vector<std::string>{"p"});
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("keys: Redis glob patterns", "[redis][keys]") {
  Fx f;
  for (const char* k : {"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "a\\b", "[x]", "", "-", "]"}) {
    f.R({"SET", k, "1"});
  }
  f.R({"SET", std::string_view("n\0ul", 4), "1"});
  auto keys = [&](std::string_view pat) { return sorted_bulks(f.run({"KEYS", pat})); };
  using V = std::vector<std::string>;
  CHECK(keys("h?llo") == V{"h*llo", "hallo", "hello", "hxllo"});
  CHECK(keys("h*llo") == V{"h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo"});
  CHECK(keys("h[ae]llo") == V{"hallo", "hello"});
  CHECK(keys("h[^e]llo") == V{"h*llo", "hallo", "hxllo"});
  CHECK(keys("h[a-b]llo") == V{"hallo"});
  CHECK(keys("h[b-a]llo") == V{"hallo"});  // range ends in either order
  CHECK(keys("h\\*llo") == V{"h*llo"});
  CHECK(keys("a\\\\b") == V{"a\\b"});
  CHECK(keys("\\[x\\]") == V{"[x]"});
  CHECK(keys("[\\]]") == V{"]"});
  CHECK(keys("[-]") == V{"-"});
  CHECK(keys("hel[lo") == V{});  // unterminated: "[lo" is the class {l, o} closing at the end
  CHECK(keys("hell[o") == V{"hello"});
  CHECK(keys("n?ul") == V{std::string("n\0ul", 4)});  // binary-safe
  CHECK(keys("*").size() == 12);                       // includes the empty key
  CHECK(keys("**").size() == 11);                      // Redis: "**" does not match ""
  CHECK(keys("x*") == V{});
}

TEST_CASE("glob: Redis's edge cases and its nesting limit", "[redis][keys]") {
  using expiring::redis::glob_match;
  CHECK(glob_match("*", "anything"));
  CHECK_FALSE(glob_match("*", ""));
  CHECK(glob_match("", ""));
  CHECK(glob_match("a*", "a"));
  CHECK(glob_match("a**", "a"));
  CHECK(glob_match("[a", "a"));
  CHECK_FALSE(glob_match("[", "a"));
  CHECK(glob_match("[^", "a"));
  CHECK(glob_match("\\", "\\"));
  CHECK(glob_match("?", "\xff"));
  CHECK(glob_match("HeLLo", "hello", true));
  CHECK_FALSE(glob_match("HeLLo", "hello", false));
  CHECK(glob_match("h[A-Z]llo", "hello", true));
  // Signed-char ranges, as Redis compares them: [a-\xff] is [\xff..a] and holds "b"? no.
  CHECK(glob_match("[\xff-a]", "\xff"));
  CHECK_FALSE(glob_match("[\xff-a]", "b"));
  // Deep '*' nesting gives up (no match) instead of exhausting the stack.
  std::string deep, text(1001, 'a');
  for (int i = 0; i < 1001; ++i) deep += "*a";
  CHECK_FALSE(glob_match(deep, text));
  std::string shallow;
  for (int i = 0; i < 999; ++i) shallow += "*a";
  CHECK(glob_match(shallow, text));
  // Exponential patterns finish quickly (skip-longer-matches).
  CHECK_FALSE(glob_match("a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

// ==== SCAN =====================================================================================

TEST_CASE("scan: cursor grammar, options and errors", "[redis][scan]") {
  Fx f;
  CHECK(f.R({"SCAN", "x"}) == E("ERR invalid cursor"));
  CHECK(f.R({"SCAN", " 5"}) == E("ERR invalid cursor"));
  CHECK(f.R({"SCAN", "18446744073709551616"}) == E("ERR invalid cursor"));
  CHECK(f.R({"SCAN", "0x10"}) == E("ERR invalid cursor"));
  CHECK(f.R({"SCAN", ""}) == "*2\r\n" + B("0") + "*0\r\n");
  CHECK(f.R({"SCAN", "-1"}) == "*2\r\n" + B("0") + "*0\r\n");
  CHECK(f.R({"SCAN", "+5"}) == "*2\r\n" + B("0") + "*0\r\n");
  CHECK(f.R({"SCAN", std::string_view("5\0a", 3)}) == "*2\r\n" + B("0") + "*0\r\n");
  CHECK(f.R({"SCAN", "0", "COUNT", "0"}) == SYNTAX);
  CHECK(f.R({"SCAN", "0", "COUNT", "-1"}) == SYNTAX);
  CHECK(f.R({"SCAN", "0", "COUNT", "x"}) == NOT_INT);
  CHECK(f.R({"SCAN", "0", "COUNT"}) == SYNTAX);
  CHECK(f.R({"SCAN", "0", "MATCH"}) == SYNTAX);
  CHECK(f.R({"SCAN", "0", "FOO", "x"}) == SYNTAX);
  CHECK(f.R({"SCAN", "0", "TYPE", "hash"}) == "*2\r\n" + B("0") + "*0\r\n");
}

TEST_CASE("scan: a full scan returns every key present throughout, with MATCH and TYPE", "[redis][scan]") {
  Fx f;
  std::set<std::string> want;
  for (int i = 0; i < 300; ++i) {
    const std::string k = "key:" + std::to_string(i);
    f.R({"SET", k, "v"});
    if (i % 3 == 0) want.insert(k);
  }
  // Delete and add keys while scanning: keys present throughout must all be seen.
  std::set<std::string> seen;
  std::string cursor = "0";
  int round = 0;
  do {
    const Reply r = f.run({"SCAN", cursor, "COUNT", "7", "MATCH", "key:*", "TYPE", "STRING"});
    REQUIRE(r.elements().size() == 2);
    cursor = r.elements()[0].str();
    for (const Reply& k : r.elements()[1].elements()) seen.insert(k.str());
    const std::string victim = "key:" + std::to_string(round * 3 + 1);
    f.R({"DEL", victim});
    f.R({"SET", "other:" + std::to_string(round), "v"});
    ++round;
  } while (cursor != "0" && round < 1000);
  CHECK(cursor == "0");
  for (const std::string& k : want) {
    CAPTURE(k);
    CHECK(seen.count(k) == 1);
  }
  for (const std::string& k : seen) CHECK(k.rfind("key:", 0) == 0);
  // TYPE none selects nothing among live keys.
  CHECK(f.R({"SCAN", "0", "COUNT", "1000", "TYPE", "none"}) == "*2\r\n" + B("0") + "*0\r\n");
}

// ==== In-place updates: STRLEN, APPEND, INCR family (case 134) =================================

TEST_CASE("incr, append keep the TTL, type and strlen (case 134)", "[redis][string]") {
  Fx f;
  CHECK(f.R({"SET", "k", "1", "EX", "100"}) == OK);
  CHECK(f.R({"INCR", "k"}) == I(2));
  CHECK(f.R({"TTL", "k"}) == I(100));
  CHECK(f.R({"APPEND", "k", "x"}) == I(2));
  CHECK(f.R({"TTL", "k"}) == I(100));
  CHECK(f.R({"GET", "k"}) == B("2x"));
  CHECK(f.R({"STRLEN", "k"}) == I(2));
  CHECK(f.R({"STRLEN", "none"}) == I(0));
  CHECK(f.R({"TYPE", "k"}) == "+string\r\n");
  CHECK(f.R({"TYPE", "none"}) == "+none\r\n");
  CHECK(f.R({"APPEND", "new", "abc"}) == I(3));
  CHECK(f.R({"TTL", "new"}) == I(-1));
  // A write on a stale key recreates it without TTL (case 73).
  f.R({"SET", "s", "5", "PX", "10"});
  f.at(11);
  CHECK(f.R({"INCR", "s"}) == I(1));
  CHECK(f.R({"TTL", "s"}) == I(-1));
}

TEST_CASE("incr family: integer grammar and overflow errors", "[redis][string]") {
  Fx f;
  CHECK(f.R({"INCR", "n"}) == I(1));
  CHECK(f.R({"DECR", "n"}) == I(0));
  CHECK(f.R({"DECR", "n"}) == I(-1));
  CHECK(f.R({"INCRBY", "n", "10"}) == I(9));
  CHECK(f.R({"DECRBY", "n", "-1"}) == I(10));
  CHECK(f.R({"INCRBY", "n", "x"}) == NOT_INT);
  CHECK(f.R({"INCRBY", "n", "+1"}) == NOT_INT);
  CHECK(f.R({"DECRBY", "n", "-9223372036854775808"}) == E("ERR decrement would overflow"));
  f.R({"SET", "m", "9223372036854775807"});
  CHECK(f.R({"INCR", "m"}) == E("ERR increment or decrement would overflow"));
  CHECK(f.R({"GET", "m"}) == B("9223372036854775807"));
  f.R({"SET", "m", "-9223372036854775808"});
  CHECK(f.R({"DECR", "m"}) == E("ERR increment or decrement would overflow"));
  CHECK(f.R({"INCRBY", "m", "9223372036854775807"}) == I(-1));
  for (const char* bad : {"abc", "", " 1", "01", "-0", "1.0", "99999999999999999999"}) {
    CAPTURE(bad);
    f.R({"SET", "b", bad});
    CHECK(f.R({"INCR", "b"}) == NOT_INT);
    CHECK(f.R({"GET", "b"}) == B(bad));
  }
  CHECK(f.R({"INCRBY", "fresh", "-9223372036854775808"}) == I(INT64_MIN));
}

TEST_CASE("append refuses to grow past proto-max-bulk-len", "[redis][string]") {
  ManualClock clock{kT0};
  StringStore<ManualClock&> store{clock};
  expiring::redis::CommandOptions o;
  o.proto_max_bulk_len = 10;
  CommandExecutor<ManualClock&> ex{store, o};
  CHECK(ex.execute({"APPEND", "k", "12345"}).to_resp() == I(5));
  CHECK(ex.execute({"APPEND", "k", "67890"}).to_resp() == I(10));
  CHECK(ex.execute({"APPEND", "k", "x"}).to_resp() ==
        E("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
  CHECK(ex.execute({"STRLEN", "k"}).to_resp() == I(10));
}

// ==== RENAME / COPY (cases 131, 132) ===========================================================

TEST_CASE("rename: TTL carried, missing and stale sources (case 131)", "[redis][rename]") {
  Fx f;
  f.R({"SET", "mykey", "foo", "EX", "100"});
  CHECK(f.R({"RENAME", "mykey", "mykey2"}) == OK);
  CHECK(f.R({"TTL", "mykey2"}) == I(100));
  CHECK(f.R({"RENAME", "mykey2", "mykey2"}) == OK);
  CHECK(f.R({"RENAMENX", "mykey2", "mykey2"}) == I(0));
  CHECK(f.R({"RENAME", "none", "x"}) == E("ERR no such key"));
  CHECK(f.R({"RENAMENX", "none", "x"}) == E("ERR no such key"));
  f.R({"SET", "k", "v", "PX", "10"});
  f.at(11);
  CHECK(f.R({"RENAME", "k", "j"}) == E("ERR no such key"));
  f.R({"SET", "a", "1"});
  CHECK(f.R({"RENAMENX", "a", "mykey2"}) == I(0));
  CHECK(f.R({"RENAMENX", "a", "b"}) == I(1));
  CHECK(f.R({"GET", "b"}) == B("1"));
}

TEST_CASE("copy: TTL copied, REPLACE, DB 0 only, same key (case 132)", "[redis][copy]") {
  Fx f;
  f.R({"SET", "mykey", "foobar", "EX", "100"});
  CHECK(f.R({"COPY", "mykey", "mynewkey", "REPLACE"}) == I(1));
  CHECK(f.R({"TTL", "mynewkey"}) == I(100));
  CHECK(f.R({"GET", "mynewkey"}) == B("foobar"));
  f.R({"SET", "p", "plain"});
  CHECK(f.R({"COPY", "p", "mynewkey"}) == I(0));
  CHECK(f.R({"COPY", "p", "mynewkey", "replace", "DB", "0"}) == I(1));
  CHECK(f.R({"TTL", "mynewkey"}) == I(-1));
  CHECK(f.R({"COPY", "none", "x"}) == I(0));
  CHECK(f.R({"COPY", "a", "a"}) == E("ERR source and destination objects are the same"));
  CHECK(f.R({"COPY", "p", "x", "DB", "x"}) == NOT_INT);
  CHECK(f.R({"COPY", "p", "x", "DB", "99999999999"}) ==
        E("ERR value is out of range, value must between -2147483648 and 2147483647"));
  CHECK(f.R({"COPY", "p", "x", "DB", "1"}) == E("ERR DB index is out of range"));
  CHECK(f.R({"COPY", "p", "x", "DB"}) == SYNTAX);
  CHECK(f.R({"COPY", "p", "x", "FOO"}) == SYNTAX);
  CHECK(f.R({"EXISTS", "x"}) == I(0));
}

// ==== INFO / CONFIG / DEBUG / FLUSH ============================================================

namespace {
std::string info_field(const std::string& info, const std::string& name) {
  const std::string key = "\r\n" + name + ":";
  const std::size_t p = info.find(key);
  if (p == std::string::npos) return "<missing>";
  const std::size_t b = p + key.size();
  return info.substr(b, info.find("\r\n", b) - b);
}
}  // namespace

TEST_CASE("info: Redis's sections and field names", "[redis][info]") {
  Fx f;
  f.R({"SET", "a", "1", "EX", "100"});
  f.R({"SET", "b", "1"});
  f.R({"GET", "a"});
  f.R({"GET", "zz"});
  f.R({"SET", "s", "v", "PX", "10"});
  f.at(11);
  f.R({"GET", "s"});
  const std::string all = f.run({"INFO"}).str();
  CHECK(all.rfind("# Server\r\n", 0) == 0);
  CHECK(info_field(all, "redis_version") == "7.0.15");
  CHECK(info_field(all, "hz") == "10");
  CHECK(info_field(all, "keyspace_hits") == "1");
  CHECK(info_field(all, "keyspace_misses") == "2");
  CHECK(info_field(all, "expired_keys") == "1");
  CHECK(info_field(all, "expired_stale_perc") == "0.00");
  CHECK(info_field(all, "expired_time_cap_reached_count") == "0");
  CHECK(info_field(all, "expire_cycle_cpu_milliseconds") == "0");
  CHECK(info_field(all, "evicted_keys") == "0");
  CHECK(info_field(all, "used_memory") == std::to_string(f.store.memory_usage()));
  CHECK(info_field(all, "db0") == "keys=2,expires=1,avg_ttl=0");
  CHECK(all.find("\r\n\r\n# Memory\r\n") != std::string::npos);
  CHECK(all.find("\r\n\r\n# Stats\r\n") != std::string::npos);
  CHECK(all.find("\r\n\r\n# Keyspace\r\n") != std::string::npos);
  CHECK(f.R({"INFO", "keyspace"}) == B("# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n"));
  // Sections come in Redis's order whatever the order asked; unknown ones add nothing.
  const std::string two = f.run({"INFO", "KEYSPACE", "stats", "nosuch"}).str();
  CHECK(two.rfind("# Stats\r\n", 0) == 0);
  CHECK(two.find("\r\n\r\n# Keyspace\r\ndb0:") != std::string::npos);
  CHECK(f.R({"INFO", "nosuch"}) == B(""));
  f.R({"FLUSHALL"});
  CHECK(f.R({"INFO", "keyspace"}) == B("# Keyspace\r\n"));
  CHECK(f.R({"CONFIG", "RESETSTAT"}) == OK);
  const std::string reset = f.run({"INFO", "stats"}).str();
  CHECK(info_field(reset, "keyspace_hits") == "0");
  CHECK(info_field(reset, "keyspace_misses") == "0");
  CHECK(info_field(reset, "expired_keys") == "0");
}

TEST_CASE("config: GET with names and globs, SET hz and active-expire-effort", "[redis][config]") {
  Fx f;
  CHECK(f.R({"CONFIG", "GET", "hz"}) == "*2\r\n" + B("hz") + B("10"));
  CHECK(f.R({"CONFIG", "GET", "HZ", "hz"}) == "*2\r\n" + B("HZ") + B("10"));  // the name as asked
  CHECK(f.R({"CONFIG", "GET", "active-expire-*"}) == "*2\r\n" + B("active-expire-effort") + B("1"));
  CHECK(f.R({"CONFIG", "GET", "nonexist"}) == "*0\r\n");
  CHECK(f.R({"CONFIG", "GET", "save"}) == "*2\r\n" + B("save") + B(""));
  CHECK(f.R({"CONFIG", "SET", "hz", "0"}) == OK);
  CHECK(f.R({"CONFIG", "GET", "hz"}) == "*2\r\n" + B("hz") + B("1"));
  CHECK(f.R({"CONFIG", "SET", "hz", "1000"}) == OK);
  CHECK(f.R({"CONFIG", "GET", "hz"}) == "*2\r\n" + B("hz") + B("500"));
  CHECK(f.store.options().hz == 500);
  CHECK(f.R({"CONFIG", "SET", "hz", "-1"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'hz') - argument must be between 0 and 2147483647 "
          "inclusive"));
  CHECK(f.R({"CONFIG", "SET", "HZ", "abc"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer"));
  CHECK(f.R({"CONFIG", "SET", "active-expire-effort", "11"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'active-expire-effort') - argument must be between 1 "
          "and 10 inclusive"));
  CHECK(f.R({"CONFIG", "SET", "foo", "1"}) == E("ERR Unknown option or number of arguments for CONFIG SET - 'foo'"));
  CHECK(f.R({"CONFIG", "SET", "hz", "10", "HZ", "5"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter"));
  CHECK(f.R({"CONFIG", "SET", "hz", "10", "foo"}) == SYNTAX);
  // Atomic: one bad value and nothing changes.
  CHECK(f.R({"CONFIG", "SET", "hz", "20", "active-expire-effort", "0"}).rfind("-ERR CONFIG SET failed", 0) == 0);
  CHECK(f.store.options().hz == 500);
  CHECK(f.R({"CONFIG", "SET", "hz", "20", "active-expire-effort", "5"}) == OK);
  CHECK(f.store.options().hz == 20);
  CHECK(f.store.options().active_expire_effort == 5);
  f.ex.add_config("port", "6390");
  CHECK(f.R({"CONFIG", "GET", "port"}) == "*2\r\n" + B("port") + B("6390"));
}

TEST_CASE("debug set-active-expire switches tick() off and on", "[redis][config]") {
  Fx f;
  f.R({"SET", "k", "v", "PX", "10"});
  f.at(100);
  CHECK(f.R({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == OK);
  f.store.tick();
  CHECK(f.R({"DBSIZE"}) == I(1));
  CHECK(f.R({"DEBUG", "set-active-expire", "1"}) == OK);
  f.store.tick();
  CHECK(f.R({"DBSIZE"}) == I(0));
  CHECK(f.R({"DEBUG", "set-active-expire", "abc"}) == OK);  // atoi: 0
  CHECK_FALSE(f.store.options().active_expire_enabled);
}

TEST_CASE("flushdb and flushall accept SYNC and ASYNC only", "[redis][server]") {
  Fx f;
  f.R({"MSET", "a", "1", "b", "2"});
  CHECK(f.R({"FLUSHDB", "x"}) == SYNTAX);
  CHECK(f.R({"FLUSHALL", "x", "y"}) == SYNTAX);
  CHECK(f.R({"DBSIZE"}) == I(2));
  CHECK(f.R({"FLUSHDB", "async"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(0));
  f.R({"SET", "a", "1"});
  CHECK(f.R({"FLUSHALL", "SYNC"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(0));
}

TEST_CASE("randomkey returns live keys only", "[redis][keys]") {
  Fx f;
  CHECK(f.R({"RANDOMKEY"}) == NIL);
  f.R({"SET", "a", "1"});
  f.R({"SET", "s", "1", "PX", "10"});
  f.at(11);
  for (int i = 0; i < 10; ++i) CHECK(f.R({"RANDOMKEY"}) == B("a"));
  CHECK(f.R({"DBSIZE"}) == I(1));
}

TEST_CASE("ttl family: reply values and rounding through the command layer", "[redis][ttl]") {
  Fx f;
  f.R({"SET", "a", "v", "PX", "499"});
  f.R({"SET", "b", "v", "PX", "500"});
  f.R({"SET", "d", "v", "PX", "1500"});
  CHECK(f.R({"TTL", "a"}) == I(0));
  CHECK(f.R({"TTL", "b"}) == I(1));
  CHECK(f.R({"TTL", "d"}) == I(2));
  f.R({"SET", "x", "hello"});
  CHECK(f.R({"TTL", "x"}) == I(-1));
  CHECK(f.R({"PEXPIRETIME", "x"}) == I(-1));
  CHECK(f.R({"PEXPIREAT", "x", "9223372036854775807"}) == I(1));
  CHECK(f.R({"EXPIRETIME", "x"}) == I(9223372036854776));
  CHECK(f.R({"PEXPIRETIME", "x"}) == I(INT64_MAX));
}
