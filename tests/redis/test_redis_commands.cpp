// tests/redis/test_redis_commands.cpp: the Redis command layer (include/expiring/redis/
// commands.hpp) on a ManualClock store: exact RESP replies (types and bytes), Redis 7.0's error
// strings, option parsing, and the semantics.md §5 catalogue cases about parsing and errors
// (25, 32-34, 36, 49-51, 64, 67-69, 78-85, 104, 114, 116-121, 131, 132, 134).
// Every expected reply here was checked against redis-server 7.0.15.
#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "text.hpp"

using expiring::ManualClock;
using expiring::redis::Action;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::Session;
using expiring::redis::ValueStore;

namespace {

constexpr std::int64_t kT0 = 1'000'000;  // semantics.md §5: the clock starts at 1,000,000 ms

expiring::Options seeded() {
  expiring::Options o;
  o.seed = 42;
  return o;
}

struct Fx {
  ManualClock clock{kT0};
  ValueStore<ManualClock&> store{clock, seeded()};
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

TEST_CASE("integer grammar: string2ll accepts exactly Redis's forms (semantics.md §2.0)", "[redis][int]") {
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

TEST_CASE("hello: RESP2 and RESP3, the handshake fields of redis 7.0", "[redis][server]") {
  Fx f;
  Session s;
  s.id = 7;
  const Reply r = f.ex.execute({"HELLO", "2"}, s);
  CHECK(r.to_resp() == "*14\r\n" + B("server") + B("redis") + B("version") + B("7.0.15") + B("proto") + I(2) + B("id") +
                           I(7) + B("mode") + B("standalone") + B("role") + B("master") + B("modules") + "*0\r\n");
  CHECK(f.R({"HELLO", "1"}) == E("NOPROTO unsupported protocol version"));
  CHECK(f.R({"HELLO", "4"}) == E("NOPROTO unsupported protocol version"));
  CHECK(f.R({"HELLO", "x"}) == E("ERR Protocol version is not an integer or out of range"));
  CHECK(f.R({"HELLO", "2", "FOO"}) == E("ERR Syntax error in HELLO option 'FOO'"));
  CHECK(f.R({"HELLO", "2", "AUTH", "x"}) == E("ERR Syntax error in HELLO option 'AUTH'"));
  CHECK(f.R({"HELLO", "2", "AUTH", "foo", "bar"}) == E("WRONGPASS invalid username-password pair or user is disabled."));
  CHECK(f.ex.execute({"HELLO", "2", "AUTH", "default", "x", "SETNAME", "me"}, s).type() == Reply::Type::map);
  CHECK(s.name == "me");
  CHECK(f.ex.execute({"HELLO", "2", "SETNAME", "a b"}, s).to_resp() ==
        E("ERR Client names cannot contain spaces, newlines or special characters."));
  CHECK(s.resp == 2);
  const Reply three = f.ex.execute({"HELLO", "3"}, s);
  CHECK(s.resp == 3);
  CHECK(three.to_resp(3) == "%7\r\n" + B("server") + B("redis") + B("version") + B("7.0.15") + B("proto") + I(3) +
                                B("id") + I(7) + B("mode") + B("standalone") + B("role") + B("master") + B("modules") +
                                "*0\r\n");
  CHECK(f.ex.execute({"HELLO"}, s).to_resp(3).find(B("proto") + I(3)) != std::string::npos);  // no version: kept
}

TEST_CASE("resp3: nulls, maps, verbatim strings and DEBUG PROTOCOL's samples, each in its RESP2 form on RESP2",
          "[redis][server][resp3]") {
  Fx f;
  Session s2, s3;
  (void)f.ex.execute({"HELLO", "3"}, s3);
  const auto on = [&](Session& s, std::initializer_list<std::string_view> argv) {
    expiring::redis::OutputBuffer out;
    f.ex.execute_into(std::vector<std::string>(argv.begin(), argv.end()), s, out);
    return out.str();
  };
  // Nulls: a missing GET, MGET's holes, an aborted EXEC.
  CHECK(on(s2, {"GET", "nokey"}) == NIL);
  CHECK(on(s3, {"GET", "nokey"}) == "_\r\n");
  CHECK(on(s3, {"SET", "a", "1"}) == OK);
  CHECK(on(s3, {"MGET", "a", "nokey"}) == "*2\r\n" + B("1") + "_\r\n");
  CHECK(on(s3, {"HRANDFIELD", "nokey"}) == "_\r\n");
  // Maps: HGETALL, CONFIG GET, LCS IDX; HRANDFIELD WITHVALUES gives pairs.
  CHECK(on(s3, {"HSET", "h", "f", "v"}) == I(1));
  CHECK(on(s3, {"HGETALL", "h"}) == "%1\r\n" + B("f") + B("v"));
  CHECK(on(s2, {"HGETALL", "h"}) == "*2\r\n" + B("f") + B("v"));
  CHECK(on(s3, {"CONFIG", "GET", "hz"}) == "%1\r\n" + B("hz") + B("10"));
  CHECK(on(s3, {"HRANDFIELD", "h", "-2", "WITHVALUES"}) ==
        "*2\r\n*2\r\n" + B("f") + B("v") + "*2\r\n" + B("f") + B("v"));
  CHECK(on(s2, {"HRANDFIELD", "h", "-2", "WITHVALUES"}) == "*4\r\n" + B("f") + B("v") + B("f") + B("v"));
  CHECK(on(s3, {"LCS", "a", "a", "IDX"}).rfind("%2\r\n", 0) == 0);
  // INFO: a verbatim string ("txt:").
  CHECK(on(s3, {"INFO", "keyspace"}).rfind("=", 0) == 0);
  CHECK(on(s3, {"INFO", "keyspace"}).find("txt:# Keyspace") != std::string::npos);
  CHECK(on(s2, {"INFO", "keyspace"}).rfind("$", 0) == 0);
  // DEBUG PROTOCOL, in both.
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "bignum"}) == "(1234567999999999999999999999999999999\r\n");
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "bignum"}) == B("1234567999999999999999999999999999999"));
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "true"}) == "#t\r\n");
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "false"}) == I(0));
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "double"}) == ",3.141\r\n");
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "double"}) == B("3.141"));
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "null"}) == "_\r\n");
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "set"}) == "~3\r\n:0\r\n:1\r\n:2\r\n");
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "map"}) == "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n");
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "map"}) == "*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n");
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "verbatim"}) == "=29\r\ntxt:This is a verbatim\nstring\r\n");
  CHECK(on(s3, {"DEBUG", "PROTOCOL", "attrib"}) == "|1\r\n" + B("key-popularity") + "*2\r\n" + B("key:123") +
                                                     I(90) + B("Some real reply following the attribute"));
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "attrib"}) == B("Some real reply following the attribute"));
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "push"}) == E("ERR RESP2 is not supported by this command"));
  CHECK(on(s2, {"DEBUG", "PROTOCOL", "nope"}).rfind("-ERR Wrong protocol type name.", 0) == 0);
  // Every RESP3 reply decodes back (a client's parser, and the tests' from_resp).
  for (const char* t : {"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "true",
                        "verbatim"}) {
    const std::string bytes = on(s3, {"DEBUG", "PROTOCOL", t});
    std::size_t pos = 0;
    Reply back;
    CHECK(Reply::from_resp(bytes, pos, back));
    CHECK(pos == bytes.size());
    CHECK(back.to_resp(3) == bytes);
  }
  // A boolean is #t or #f; anything else is not RESP.
  for (const char* bad : {"#x\r\n", "#\r\n", "#tt\r\n"}) {
    std::size_t pos = 0;
    Reply back;
    CHECK_FALSE(Reply::from_resp(bad, pos, back));
  }
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

// Every reply below is redis-server 7.0.15's for the same command (checked with redis-cli).
TEST_CASE("getrange substr setrange: Redis's index rules and limits", "[redis][string]") {
  Fx f;
  const std::string WRONGTYPE = E("WRONGTYPE Operation against a key holding the wrong kind of value");
  const std::string TOO_BIG = E("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  CHECK(f.R({"SET", "k", "This is a string", "EX", "100"}) == OK);
  CHECK(f.R({"GETRANGE", "k", "0", "3"}) == B("This"));
  CHECK(f.R({"GETRANGE", "k", "-3", "-1"}) == B("ing"));
  CHECK(f.R({"GETRANGE", "k", "0", "-1"}) == B("This is a string"));
  CHECK(f.R({"GETRANGE", "k", "10", "100"}) == B("string"));
  CHECK(f.R({"GETRANGE", "k", "-1", "-5"}) == B(""));
  CHECK(f.R({"GETRANGE", "k", "5", "3"}) == B(""));
  CHECK(f.R({"GETRANGE", "k", "-100", "2"}) == B("Thi"));
  CHECK(f.R({"GETRANGE", "k", "-9223372036854775808", "9223372036854775807"}) == B("This is a string"));
  CHECK(f.R({"GETRANGE", "none", "0", "1"}) == B(""));
  CHECK(f.R({"GETRANGE", "none", "x", "1"}) == NOT_INT);  // the indexes first
  CHECK(f.R({"SUBSTR", "k", "0", "3"}) == B("This"));
  CHECK(f.R({"SETRANGE", "k", "10", "Redis"}) == I(16));
  CHECK(f.R({"GET", "k"}) == B("This is a Redisg"));
  CHECK(f.R({"TTL", "k"}) == I(100));  // the TTL stays
  CHECK(f.R({"SETRANGE", "k", "-1", "a"}) == E("ERR offset is out of range"));
  CHECK(f.R({"SETRANGE", "k", "x", "a"}) == NOT_INT);
  CHECK(f.R({"SETRANGE", "new", "3", "ab"}) == I(5));
  CHECK(f.R({"GET", "new"}) == B(std::string("\0\0\0ab", 5)));
  CHECK(f.R({"SETRANGE", "none", "5", ""}) == I(0));  // nothing written, nothing created
  CHECK(f.R({"EXISTS", "none"}) == I(0));
  CHECK(f.R({"SETRANGE", "k", "536870912", "a"}) == TOO_BIG);
  CHECK(f.R({"SETRANGE", "k", "536870912", ""}) == I(16));
  CHECK(f.R({"SETRANGE", "k", "9223372036854775807", "a"}) == TOO_BIG);
  CHECK(f.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(f.R({"SETRANGE", "h", "0", ""}) == WRONGTYPE);
  CHECK(f.R({"SETRANGE", "h", "0", "a"}) == WRONGTYPE);
  CHECK(f.R({"GETRANGE", "h", "0", "1"}) == WRONGTYPE);
  CHECK(f.R({"SETRANGE", "h", "x", "a"}) == NOT_INT);
  // A stale key is gone for SETRANGE, as for any write: recreated without TTL.
  CHECK(f.R({"SET", "s", "abc", "PX", "10"}) == OK);
  f.at(11);
  CHECK(f.R({"SETRANGE", "s", "1", "x"}) == I(2));
  CHECK(f.R({"GET", "s"}) == B(std::string("\0x", 2)));
  CHECK(f.R({"TTL", "s"}) == I(-1));
}

// redis-server 7.0.15's replies with no library loaded (checked with redis-cli), but for STATS,
// which lists no engine here (there is none).
TEST_CASE("function: answered as with no library loaded", "[redis][server]") {
  Fx f;
  CHECK(f.R({"FUNCTION", "FLUSH"}) == OK);
  CHECK(f.R({"FUNCTION", "FLUSH", "ASYNC"}) == OK);
  CHECK(f.R({"FUNCTION", "FLUSH", "sync"}) == OK);
  CHECK(f.R({"FUNCTION", "FLUSH", "x"}) == E("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
  CHECK(f.R({"FUNCTION", "FLUSH", "a", "b"}) ==
        E("ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."));
  CHECK(f.R({"FUNCTION", "LIST"}) == "*0\r\n");
  CHECK(f.R({"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "x*"}) == "*0\r\n");
  CHECK(f.R({"FUNCTION", "LIST", "LIBRARYNAME"}) == E("ERR library name argument was not given"));
  CHECK(f.R({"FUNCTION", "LIST", "foo"}) == E("ERR Unknown argument foo"));
  CHECK(f.R({"FUNCTION", "DELETE", "x"}) == E("ERR Library not found"));
  CHECK(f.R({"FUNCTION", "DELETE"}) == ARITY("function|delete"));
  CHECK(f.R({"FUNCTION", "KILL"}) == E("NOTBUSY No scripts in execution right now."));
  CHECK(f.R({"FUNCTION", "KILL", "x"}) == ARITY("function|kill"));
  CHECK(f.R({"FUNCTION", "STATS"}) == "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*0\r\n");
  CHECK(f.R({"FUNCTION", "DUMP"}) == B(std::string("\x0a\x00\x5d\x9b\x5c\x40\x0f\x7f\xa2\xda", 10)));
  CHECK(f.R({"FUNCTION", "BOGUS"}) == E("ERR unknown subcommand 'BOGUS'. Try FUNCTION HELP."));
  CHECK(f.R({"FUNCTION", "LOAD", "#!lua name=x"}) == E("ERR unknown subcommand 'LOAD'. Try FUNCTION HELP."));
  CHECK(f.R({"FUNCTION"}) == ARITY("function"));
  CHECK(f.run({"FUNCTION", "HELP"}).elements().size() > 10);
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
  ValueStore<ManualClock&> store{clock};
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
using redistext::info_field;
}  // namespace

TEST_CASE("info: expiry lateness, lazy and active (not in Redis)", "[redis][info][lateness]") {
  Fx f;
  f.R({"SET", "lazy", "1", "PX", "10"});
  f.R({"SET", "active", "1", "PX", "10"});
  const std::string before = f.run({"INFO", "stats"}).str();
  CHECK(info_field(before, "expired_lateness_ms_lazy") == "count=0,p50=0,p99=0,p99.9=0");
  f.at(300);                 // 290 ms after both deadlines: bucket (256, 512]
  f.R({"GET", "lazy"});      // lazy expiry
  (void)f.store.tick();      // active expiry of the other
  const std::string after = f.run({"INFO", "stats"}).str();
  CHECK(info_field(after, "expired_lateness_ms_lazy") == "count=1,p50=512,p99=512,p99.9=512");
  CHECK(info_field(after, "expired_lateness_ms_active") == "count=1,p50=512,p99=512,p99.9=512");
}

TEST_CASE("info: lazyfree_pending_objects and lazyfreed_objects follow UNLINK's lazy free", "[redis][info][lazyfree]") {
  ManualClock clock{kT0};
  expiring::Options o = seeded();
  o.lazyfree_queue_max = 8;  // as expiring-server configures its databases
  ValueStore<ManualClock&> store{clock, o};
  CommandExecutor<ManualClock&> ex{store};
  const auto field = [&](const char* section, const char* name) { return info_field(ex.execute({"INFO", section}).str(), name); };
  CHECK(field("memory", "lazyfree_pending_objects") == "0");
  CHECK(field("stats", "lazyfreed_objects") == "0");
  CHECK(ex.execute({"HSET", "h", "a", "1", "b", "2"}).to_resp() == I(2));
  CHECK(ex.execute({"SET", "s", "v"}).to_resp() == OK);
  CHECK(ex.execute({"UNLINK", "h", "s", "nope"}).to_resp() == I(2));
  CHECK(ex.execute({"EXISTS", "h", "s"}).to_resp() == I(0));
  CHECK(field("memory", "lazyfree_pending_objects") == "2");  // queued, not yet destroyed
  CHECK(ex.execute({"DEL", "x"}).to_resp() == I(0));
  (void)store.tick();  // the cron's tick destroys them
  CHECK(field("memory", "lazyfree_pending_objects") == "0");
  CHECK(field("stats", "lazyfreed_objects") == "2");
}

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
  CHECK(info_field(all, "used_memory") == std::to_string(f.store.used_memory()));
  CHECK(info_field(all, "db0") == "keys=2,expires=1,avg_ttl=0,subexpiry=0");
  CHECK(all.find("\r\n\r\n# Memory\r\n") != std::string::npos);
  CHECK(all.find("\r\n\r\n# Stats\r\n") != std::string::npos);
  CHECK(all.find("\r\n\r\n# Keyspace\r\n") != std::string::npos);
  CHECK(f.R({"INFO", "keyspace"}) == B("# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0,subexpiry=0\r\n"));
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

// ==== Memory limit: CONFIG, OOM, eviction, INFO, OBJECT ========================================
// Every reply and error string below was checked against redis-server 7.0.15, except where a
// comment says the behaviour differs on purpose. With the default weigher each key of this
// section (short strings) weighs sizeof(std::string) * 2 bytes.

namespace {
constexpr std::size_t kKeyBytes = sizeof(std::string) + sizeof(expiring::redis::Value);  // a key and its value
std::string CFG(std::string_view name, std::string_view value) { return "*2\r\n" + B(name) + B(value); }
std::string SET_FAILED(std::string_view name, std::string_view why) {
  return E("ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "') - " + std::string(why));
}
const std::string OOM = E("OOM command not allowed when used memory > 'maxmemory'.");
const std::string POLICIES =
    "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, "
    "allkeys-lru, allkeys-lfu, allkeys-random, noeviction";
}  // namespace

TEST_CASE("config: maxmemory takes Redis memory units and prints a byte count", "[redis][config][maxmemory]") {
  Fx f;
  CHECK(f.R({"CONFIG", "GET", "maxmemory"}) == CFG("maxmemory", "0"));
  const std::vector<std::pair<std::string, std::string>> ok_cases = {
      {"100", "100"},         {"1k", "1000"},       {"1K", "1000"},        {"1kb", "1024"},
      {"1KB", "1024"},        {"1kB", "1024"},      {"1m", "1000000"},     {"1mb", "1048576"},
      {"2MB", "2097152"},     {"1g", "1000000000"}, {"1gb", "1073741824"}, {"1b", "1"},
      {"7B", "7"},            {"01k", "1000"},      {"", "0"},             {"k", "0"},
      {"gb", "0"},            {"0", "0"},           {std::string("5mb\0x", 5), "5242880"},
      {"18446744073709551615", "18446744073709551615"},
      {"17179869183gb", "18446744072635809792"},  {"17179869184g", "17179869184000000000"},
  };
  for (const auto& c : ok_cases) {
    INFO("value '" << c.first << "'");
    CHECK(f.run({"CONFIG", "SET", "maxmemory", c.first}).to_resp() == OK);
    CHECK(f.R({"CONFIG", "GET", "maxmemory"}) == CFG("maxmemory", c.second));
    CHECK(std::to_string(f.store.options().maxmemory) == c.second);
  }
  f.R({"CONFIG", "SET", "maxmemory", "1234"});
  const std::string bad = SET_FAILED("maxmemory", "argument must be a memory value");
  const std::vector<std::string> bad_cases = {
      "-1", "-0", "abc", " 1", "1 ", "+5", "1.5", "0x10", "1t", "1tb", "1kbx", "16777216tb",
      std::string(127, '0') + "5",  // 128 digits: Redis's buffer
      // Overflow: Redis 7.0.15 silently clamps ("18446744073709551616" -> 2^64-1) or wraps
      // ("99999999999999999999gb" -> 18446744072635809792); an error here.
      "18446744073709551616", "99999999999999999999gb", "17179869184gb", std::string(127, '1')};
  for (const std::string& v : bad_cases) {
    INFO("value '" << v << "'");
    CHECK(f.run({"CONFIG", "SET", "maxmemory", v}).to_resp() == bad);
    CHECK(f.run({"CONFIG", "SET", "MAXMEMORY", v}).to_resp() == bad);  // the canonical name is quoted
  }
  CHECK(f.R({"CONFIG", "GET", "maxmemory"}) == CFG("maxmemory", "1234"));
  CHECK(f.R({"CONFIG", "GET", "MAXMEMORY", "maxmemory"}) == CFG("MAXMEMORY", "1234"));
}

TEST_CASE("config: maxmemory-policy, maxmemory-samples, lfu-log-factor, lfu-decay-time", "[redis][config][maxmemory]") {
  Fx f;
  CHECK(f.R({"CONFIG", "GET", "maxmemory-policy"}) == CFG("maxmemory-policy", "noeviction"));
  CHECK(f.R({"CONFIG", "GET", "maxmemory-samples"}) == CFG("maxmemory-samples", "5"));
  CHECK(f.R({"CONFIG", "GET", "lfu-log-factor"}) == CFG("lfu-log-factor", "10"));
  CHECK(f.R({"CONFIG", "GET", "lfu-decay-time"}) == CFG("lfu-decay-time", "1"));
  using P = expiring::EvictionPolicy;
  const std::vector<std::pair<std::string, P>> policies = {
      {"volatile-lru", P::volatile_lru},     {"VOLATILE-LFU", P::volatile_lfu}, {"volatile-random", P::volatile_random},
      {"Volatile-Ttl", P::volatile_ttl},     {"allkeys-lru", P::allkeys_lru},   {"ALLKEYS-LFU", P::allkeys_lfu},
      {"allkeys-random", P::allkeys_random}, {"noeviction", P::noeviction},
  };
  for (const auto& p : policies) {
    CHECK(f.run({"CONFIG", "SET", "maxmemory-policy", p.first}).to_resp() == OK);
    CHECK(f.store.options().maxmemory_policy == p.second);
    CHECK(f.R({"CONFIG", "GET", "maxmemory-policy"}) ==
          CFG("maxmemory-policy", expiring::redis::detail::lowercase(p.first)));
  }
  CHECK(f.run({"CONFIG", "SET", "maxmemory-policy", std::string("allkeys-lru\0x", 13)}).to_resp() == OK);
  for (const char* v : {"foo", "", "allkeys", "allkeys-lru "}) {
    CHECK(f.R({"CONFIG", "SET", "Maxmemory-Policy", v}) == SET_FAILED("maxmemory-policy", POLICIES));
  }
  CHECK(f.store.options().maxmemory_policy == P::allkeys_lru);

  const std::string not_int = "argument couldn't be parsed into an integer";
  struct Range {
    const char* name;
    const char* lo;
    const char* below;
  };
  for (const Range& r : {Range{"maxmemory-samples", "1", "0"}, Range{"lfu-log-factor", "0", "-1"},
                         Range{"lfu-decay-time", "0", "-1"}}) {
    const std::string range = std::string("argument must be between ") + r.lo + " and 2147483647 inclusive";
    CHECK(f.R({"CONFIG", "SET", r.name, r.below}) == SET_FAILED(r.name, range));
    CHECK(f.R({"CONFIG", "SET", r.name, "2147483648"}) == SET_FAILED(r.name, range));
    CHECK(f.R({"CONFIG", "SET", r.name, "-99999999999"}) == SET_FAILED(r.name, range));
    for (const std::string& v : std::vector<std::string>{"abc", "1k", "+3", " 3", "3 ", "",
                                                         "9999999999999999999999", std::string("5\0x", 3)}) {
      CHECK(f.run({"CONFIG", "SET", expiring::redis::detail::uppercase(r.name), v}).to_resp() == SET_FAILED(r.name, not_int));
    }
    CHECK(f.R({"CONFIG", "SET", r.name, r.lo}) == OK);
    CHECK(f.R({"CONFIG", "GET", r.name}) == CFG(r.name, r.lo));
    CHECK(f.R({"CONFIG", "SET", r.name, "65"}) == OK);
    CHECK(f.R({"CONFIG", "GET", r.name}) == CFG(r.name, "65"));
    CHECK(f.R({"CONFIG", "SET", r.name, "2147483647"}) == OK);
    CHECK(f.R({"CONFIG", "GET", r.name}) == CFG(r.name, "2147483647"));
  }
  CHECK(f.store.options().lfu_log_factor == 2147483647);
  CHECK(f.store.options().lfu_decay_time == 2147483647);
  // The store samples at most 64 keys; CONFIG GET still shows the value set, as Redis.
  CHECK(f.store.options().maxmemory_samples == 64);
  CHECK(f.R({"CONFIG", "SET", "maxmemory-samples", "7"}) == OK);
  CHECK(f.store.options().maxmemory_samples == 7);
  CHECK(f.R({"CONFIG", "GET", "maxmemory-samples"}) == CFG("maxmemory-samples", "7"));
  (void)f.store.set_maxmemory_samples(9);  // changed behind the executor's back: the store's value
  CHECK(f.R({"CONFIG", "GET", "maxmemory-samples"}) == CFG("maxmemory-samples", "9"));

  const Reply all = f.run({"CONFIG", "GET", "maxmemory*", "lfu-*"});
  CHECK(sorted_bulks(all) == std::vector<std::string>{"0", "2147483647", "2147483647", "9", "allkeys-lru",
                                                      "lfu-decay-time", "lfu-log-factor", "maxmemory",
                                                      "maxmemory-policy", "maxmemory-samples"});
}

TEST_CASE("config: SET over several memory settings is atomic, in argument order", "[redis][config][maxmemory]") {
  Fx f;
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1mb", "maxmemory-policy", "bad"}) ==
        SET_FAILED("maxmemory-policy", POLICIES));
  CHECK(f.store.options().maxmemory == 0);
  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "bad", "maxmemory", "x"}) == SET_FAILED("maxmemory-policy", POLICIES));
  CHECK(f.R({"CONFIG", "SET", "maxmemory-samples", "0", "maxmemory-policy", "bad"}) ==
        SET_FAILED("maxmemory-samples", "argument must be between 1 and 2147483647 inclusive"));
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1", "MAXMEMORY", "2"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'MAXMEMORY') - duplicate parameter"));
  CHECK(f.R({"CONFIG", "SET", "lfu-log-factor", "3", "hz", "0", "lfu-decay-time", "x"}) ==
        SET_FAILED("lfu-decay-time", "argument couldn't be parsed into an integer"));
  CHECK(f.store.options().lfu_log_factor == 10);
  CHECK(f.store.options().hz == 10);
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "2kb", "maxmemory-policy", "allkeys-lfu", "maxmemory-samples", "10",
             "lfu-log-factor", "3", "lfu-decay-time", "2", "hz", "20"}) == OK);
  const expiring::Options& o = f.store.options();
  CHECK(o.maxmemory == 2048);
  CHECK(o.maxmemory_policy == expiring::EvictionPolicy::allkeys_lfu);
  CHECK(o.maxmemory_samples == 10);
  CHECK(o.lfu_log_factor == 3);
  CHECK(o.lfu_decay_time == 2);
  CHECK(o.hz == 20);
}

TEST_CASE("oom: noeviction refuses denyoom commands, reads and deletes still work", "[redis][maxmemory]") {
  Fx f;
  f.R({"SET", "a", "1"});
  f.R({"SET", "b", "2", "EX", "100"});
  f.R({"SET", "n", "5"});
  CHECK(f.R({"CONFIG", "SET", "maxmemory", std::to_string(kKeyBytes)}) == OK);  // 3 keys: above it
  CHECK(f.R({"DBSIZE"}) == I(3));                                               // noeviction: none evicted
  const std::vector<std::vector<std::string>> refused = {
      {"SET", "c", "1"},          {"SET", "a", "x", "GET"},   {"SETNX", "c", "1"},     {"SETEX", "c", "10", "1"},
      {"PSETEX", "c", "10", "1"}, {"GETSET", "a", "x"},       {"MSET", "c", "1"},      {"MSETNX", "c", "1"},
      {"APPEND", "a", "x"},       {"INCR", "n"},              {"DECR", "n"},           {"INCRBY", "n", "2"},
      {"DECRBY", "n", "2"},       {"COPY", "a", "c"},         {"SET", "c", "1", "EX", "x"},
      {"INCRBY", "n", "notanumber"}};
  for (const auto& cmd : refused) {
    INFO(cmd[0]);
    CHECK(f.run(cmd).to_resp() == OOM);
  }
  // Nothing changed.
  CHECK(f.R({"MGET", "a", "b", "n", "c"}) == "*4\r\n" + B("1") + B("2") + B("5") + NIL);
  CHECK(f.R({"DBSIZE"}) == I(3));
  // Unknown commands and arity errors come first, as in Redis.
  CHECK(f.R({"SET", "c"}) == ARITY("set"));
  CHECK(f.R({"MSET", "c"}) == ARITY("mset"));
  // Commands without the denyoom flag run.
  CHECK(f.R({"GET", "a"}) == B("1"));
  CHECK(f.R({"GETEX", "b", "PERSIST"}) == B("2"));
  CHECK(f.R({"EXPIRE", "a", "100"}) == I(1));
  CHECK(f.R({"PERSIST", "a"}) == I(1));
  CHECK(f.R({"RENAME", "n", "m"}) == OK);
  CHECK(f.R({"GETDEL", "m"}) == B("5"));
  CHECK(f.R({"DEL", "b"}) == I(1));
  // At the limit (one key): a write must fit with its own weight, so SET is still refused.
  CHECK(f.R({"SET", "c", "1"}) == OOM);
  CHECK(f.R({"DEL", "a"}) == I(1));
  // Now within the limit: writes run again.
  CHECK(f.R({"SET", "c", "1"}) == OK);
  CHECK(f.R({"SET", "d", "1"}) == OOM);
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "0"}) == OK);
  CHECK(f.R({"SET", "d", "1"}) == OK);
  CHECK(f.store.stats().evicted_keys == 0);
}

TEST_CASE("oom: a denyoom command that passes the check is never refused midway", "[redis][maxmemory]") {
  Fx f;
  CHECK(f.R({"CONFIG", "SET", "maxmemory", std::to_string(kKeyBytes + 1)}) == OK);
  f.R({"SET", "a", "1"});
  // As Redis: memory is checked once, before the command; MSET then writes every key.
  CHECK(f.R({"MSET", "x", "1", "y", "2", "z", "3"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(4));
  CHECK(f.store.options().maxmemory == kKeyBytes + 1);
  CHECK(f.R({"MSETNX", "p", "1"}) == OOM);
  CHECK(f.R({"DEL", "x", "y", "z"}) == I(3));
  CHECK(f.R({"MSETNX", "p", "1", "q", "2"}) == I(1));
  CHECK(f.R({"MGET", "p", "q"}) == "*2\r\n" + B("1") + B("2"));
  // One write may go above the limit; the next denyoom command is refused.
  CHECK(f.R({"INCR", "p"}) == OOM);
}

TEST_CASE("eviction: allkeys-lru set by CONFIG SET evicts, INFO counts it", "[redis][maxmemory]") {
  Fx f;
  for (int i = 0; i < 10; ++i) f.run({"SET", "k" + std::to_string(i), "v"});
  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(10));  // no limit yet
  // Lowering the limit evicts at once, as Redis's CONFIG SET maxmemory.
  CHECK(f.R({"CONFIG", "SET", "maxmemory", std::to_string(kKeyBytes * 4)}) == OK);
  CHECK(f.store.size() == 4);
  CHECK(f.store.stats().evicted_keys == 6);
  CHECK(info_field(f.run({"INFO", "stats"}).str(), "evicted_keys") == "6");
  // Writes evict instead of failing: before each command used memory is brought within it.
  for (int i = 0; i < 5; ++i) CHECK(f.run({"SET", "n" + std::to_string(i), "v"}).to_resp() == OK);
  CHECK(f.R({"DBSIZE"}) == I(4));
  CHECK(info_field(f.run({"INFO", "stats"}).str(), "evicted_keys") == "11");
  CHECK(f.R({"MSET", "m1", "v", "m2", "v", "m3", "v"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(4));
  CHECK(f.store.used_memory() <= kKeyBytes * 4);
  // volatile-lru with no key with a TTL cannot evict: OOM.
  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}) == OK);
  CHECK(f.R({"SET", "big", "v"}) == OOM);  // at the limit, and nothing it may evict
  CHECK(f.R({"SET", "big2", "v"}) == OOM);
  // Setting the policy and a lower limit together evicts under the new policy.
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1", "maxmemory-policy", "allkeys-random"}) == OK);
  CHECK(f.R({"DBSIZE"}) == I(0));
  CHECK(f.store.stats().evicted_keys == 14 + 4);
}

TEST_CASE("info memory: maxmemory, maxmemory_human and maxmemory_policy", "[redis][info][maxmemory]") {
  Fx f;
  auto mem = [&] { return f.run({"INFO", "memory"}).str(); };
  CHECK(info_field(mem(), "maxmemory") == "0");
  CHECK(info_field(mem(), "maxmemory_human") == "0B");
  CHECK(info_field(mem(), "maxmemory_policy") == "noeviction");
  const std::vector<std::array<std::string, 3>> cases = {
      {"1000", "1000", "1000B"},
      {"1mb", "1048576", "1.00M"},
      {"1125899906842624", "1125899906842624", "1.00P"},
      {"1152921504606846976", "1152921504606846976", "1152921504606846976B"},
      {"18446744073709551615", "-1", "18446744073709551615B"},  // Redis prints %lld
  };
  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"}) == OK);
  for (const auto& c : cases) {
    CHECK(f.run({"CONFIG", "SET", "maxmemory", c[0]}).to_resp() == OK);
    const std::string m = mem();
    CHECK(info_field(m, "maxmemory") == c[1]);
    CHECK(info_field(m, "maxmemory_human") == c[2]);
    CHECK(info_field(m, "maxmemory_policy") == "volatile-ttl");
  }
}

TEST_CASE("object: ENCODING and REFCOUNT name what Redis would use for the value (semantics.md D38)", "[redis][object]") {
  Fx f;
  CHECK(f.R({"OBJECT", "ENCODING", "nokey"}) == NIL);
  CHECK(f.R({"OBJECT", "encoding"}) == ARITY("object|encoding"));
  for (const char* n : {"0", "-1", "1234", "9223372036854775807", "-9223372036854775808"}) {
    f.R({"SET", "s", n});
    CHECK(f.R({"OBJECT", "ENCODING", "s"}) == B("int"));
  }
  // Not string2ll's canonical form, or beyond int64: a string.
  for (const char* n : {"-0", "007", "+5", " 5", "9223372036854775808", "1.5", ""}) {
    f.R({"SET", "s", n});
    CHECK(f.R({"OBJECT", "ENCODING", "s"}) == B("embstr"));
  }
  f.R({"SET", "s", std::string(44, 'x')});
  CHECK(f.R({"OBJECT", "ENCODING", "s"}) == B("embstr"));
  f.R({"SET", "s", std::string(45, 'x')});
  CHECK(f.R({"OBJECT", "ENCODING", "s"}) == B("raw"));
  // The shared integers 0..9999, unless an LRU or LFU policy is set.
  f.R({"SET", "s", "9999"});
  CHECK(f.R({"OBJECT", "REFCOUNT", "s"}) == I(2147483647));
  f.R({"INCR", "s"});
  CHECK(f.R({"OBJECT", "REFCOUNT", "s"}) == I(1));
  f.R({"SET", "s", "-1"});
  CHECK(f.R({"OBJECT", "REFCOUNT", "s"}) == I(1));
  f.R({"SET", "s", "5"});
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1gb", "maxmemory-policy", "allkeys-lru"}) == OK);
  CHECK(f.R({"OBJECT", "REFCOUNT", "s"}) == I(1));
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "0"}) == OK);
  CHECK(f.R({"OBJECT", "REFCOUNT", "s"}) == I(2147483647));
  CHECK(f.R({"OBJECT", "REFCOUNT", "nokey"}) == NIL);

  // Hashes: listpack within both bounds, listpackex once a field had a TTL, else hashtable.
  f.R({"HSET", "h", "f", "v"});
  CHECK(f.R({"OBJECT", "ENCODING", "h"}) == B("listpack"));
  CHECK(f.R({"HEXPIRE", "h", "100", "FIELDS", "1", "f"}) == "*1\r\n:1\r\n");
  CHECK(f.R({"OBJECT", "ENCODING", "h"}) == B("listpackex"));
  CHECK(f.R({"HPERSIST", "h", "FIELDS", "1", "f"}) == "*1\r\n:1\r\n");
  CHECK(f.R({"OBJECT", "ENCODING", "h"}) == B("listpackex"));  // as Redis 7.4 keeps it
  f.R({"HSET", "g", "f", std::string(64, 'v')});
  CHECK(f.R({"OBJECT", "ENCODING", "g"}) == B("listpack"));
  f.R({"HSET", "g", std::string(65, 'f'), "v"});
  CHECK(f.R({"OBJECT", "ENCODING", "g"}) == B("hashtable"));
  CHECK(f.R({"CONFIG", "SET", "hash-max-ziplist-value", "1kb"}) == OK);
  CHECK(f.R({"OBJECT", "ENCODING", "g"}) == B("listpack"));
  CHECK(f.R({"CONFIG", "SET", "hash-max-listpack-entries", "1"}) == OK);
  CHECK(f.R({"OBJECT", "ENCODING", "g"}) == B("hashtable"));
  CHECK(f.R({"OBJECT", "ENCODING", "h"}) == B("listpackex"));
  const Reply got = f.run({"CONFIG", "GET", "hash-max-*"});
  CHECK(sorted_bulks(got) == std::vector<std::string>{"1", "1", "1024", "1024", "hash-max-listpack-entries",
                                                      "hash-max-listpack-value", "hash-max-ziplist-entries",
                                                      "hash-max-ziplist-value"});
  CHECK(f.R({"CONFIG", "SET", "hash-max-listpack-entries", "-1"}).rfind("-ERR CONFIG SET failed", 0) == 0);
}

TEST_CASE("object: FREQ and IDLETIME under LRU and LFU policies, HELP, errors", "[redis][object][maxmemory]") {
  Fx f;
  const std::string adjust =
      " Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
  const std::string no_lfu = E("ERR An LFU maxmemory policy is not selected, access frequency not tracked." + adjust);
  const std::string lfu = E("ERR An LFU maxmemory policy is selected, idle time not tracked." + adjust);
  CHECK(f.R({"OBJECT"}) == ARITY("object"));
  CHECK(f.R({"OBJECT", "foo"}) == E("ERR unknown subcommand 'foo'. Try OBJECT HELP."));
  CHECK(f.R({"OBJECT", "freq"}) == ARITY("object|freq"));
  CHECK(f.R({"OBJECT", "FREQ", "a", "b"}) == ARITY("object|freq"));
  CHECK(f.R({"OBJECT", "idletime"}) == ARITY("object|idletime"));
  CHECK(f.R({"OBJECT", "help", "x"}) == ARITY("object|help"));
  const Reply help = f.run({"OBJECT", "HELP"});
  REQUIRE(help.elements().size() == 15);
  CHECK(help.elements()[0].to_resp() == "+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n");
  CHECK(help.elements()[14].to_resp() == "+    Prints this help.\r\n");

  f.R({"SET", "a", "1"});
  CHECK(f.R({"OBJECT", "FREQ", "nokey"}) == NIL);  // the key is looked up first
  CHECK(f.R({"OBJECT", "FREQ", "a"}) == no_lfu);
  CHECK(f.R({"OBJECT", "IDLETIME", "nokey"}) == NIL);
  CHECK(f.R({"OBJECT", "IDLETIME", "a"}) == I(0));
  // A lookup without touching: counts a hit or miss.
  const expiring::Stats st = f.store.stats();
  CHECK(st.keyspace_hits == 2);
  CHECK(st.keyspace_misses == 2);

  CHECK(f.R({"CONFIG", "SET", "maxmemory", "1gb", "maxmemory-policy", "allkeys-lru"}) == OK);
  f.at(5'000);
  CHECK(f.R({"OBJECT", "IDLETIME", "a"}) == I(5));
  CHECK(f.R({"OBJECT", "IDLETIME", "a"}) == I(5));  // not an access
  f.R({"GET", "a"});
  CHECK(f.R({"OBJECT", "IDLETIME", "a"}) == I(0));
  f.R({"SET", "s", "v", "PX", "10"});
  f.at(6'000);
  CHECK(f.R({"OBJECT", "IDLETIME", "s"}) == NIL);  // expired

  CHECK(f.R({"CONFIG", "SET", "maxmemory-policy", "volatile-lfu"}) == OK);
  CHECK(f.R({"OBJECT", "IDLETIME", "a"}) == lfu);
  CHECK(f.R({"OBJECT", "IDLETIME", "nokey"}) == NIL);
  CHECK(f.R({"OBJECT", "FREQ", "a"}) == I(5));  // LFU_INIT_VAL after the switch
  f.R({"SET", "b", "1"});
  CHECK(f.R({"OBJECT", "FREQ", "b"}) == I(5));
  for (int i = 0; i < 50; ++i) f.R({"GET", "b"});
  const Reply freq = f.run({"OBJECT", "FREQ", "b"});
  CHECK(freq.integer() > 5);
  CHECK(freq.integer() <= 255);
}

// ==== Streaming replies, client limits, used memory (issue 10) =================================

TEST_CASE("execute_into: the output buffer gets the same bytes as execute()'s reply", "[redis][stream]") {
  Fx a, b;
  const std::string big(100'000, 'v');
  const std::vector<std::vector<std::string>> cmds = {
      {"SET", "k", "v"},  {"SET", "big", big}, {"GET", "k"},       {"GET", "nokey"},   {"GET", "big"},
      {"MGET", "k", "nokey", "big", "k"},      {"MGET", "nokey"},   {"GET"},            {"MGET"},
      {"get", "k", "x"},  {"PING"},            {"INCR", "k"},       {"FOO", "bar"},     {"KEYS", "*"},
  };
  for (const auto& c : cmds) {
    expiring::redis::OutputBuffer out;
    Session s;
    a.ex.execute_into(c, s, out);
    CHECK(out.str() == b.run(c).to_resp());
  }
  // The Reply of a streaming command is its decoded encoding.
  const Reply r = b.run({"MGET", "k", "nokey"});
  REQUIRE(r.type() == Reply::Type::array);
  REQUIRE(r.elements().size() == 2);
  CHECK(r.elements()[0] == Reply::bulk("v"));
  CHECK(r.elements()[1].is_nil());
}

TEST_CASE("output buffer: appended to itself, it doubles once", "[redis][stream]") {
  expiring::redis::OutputBuffer out;
  out.append("+OK\r\n");
  Reply::write_bulk(out, std::string(20'000, 'y'));  // more than one block
  const std::string once = out.str();
  REQUIRE(out.blocks() > 1);
  out.append(out);
  CHECK(out.str() == once + once);
}

TEST_CASE("output buffer: blocks, sizes and partial sends", "[redis][stream]") {
  expiring::redis::OutputBuffer out;
  CHECK(out.empty());
  out.append("+OK\r\n");
  CHECK(out.blocks() == 1);
  CHECK(out.allocated() >= expiring::redis::OutputBuffer::kBlockSize);
  const std::string big(100'000, 'x');
  Reply::write_bulk(out, big);
  const std::string want = "+OK\r\n$100000\r\n" + big + "\r\n";
  CHECK(out.size() == want.size());
  CHECK(out.str() == want);
  // A large value gets a block of its own size: no block is more than one value's worth.
  CHECK(out.allocated() < want.size() + 2 * expiring::redis::OutputBuffer::kBlockSize);
  out.consume(3);
  CHECK(out.str() == want.substr(3));
  // truncate() keeps the first n unsent bytes (SHUTDOWN drops its own reply this way).
  out.append("+PONG\r\n");
  out.truncate(want.size() - 3);
  CHECK(out.str() == want.substr(3));
  out.truncate(10);
  CHECK(out.str() == want.substr(3, 10));
  out.consume(out.size());
  CHECK(out.empty());
  CHECK(out.blocks() == 0);
  CHECK(out.allocated() == 0);
  // A cap: appends past it are dropped and reported (the server then closes the client).
  out.set_limit(50'000);
  out.append("+OK\r\n");
  CHECK(!out.over_limit());
  Reply::write_bulk(out, big);  // its payload's block takes the buffer past the cap
  Reply::write_bulk(out, big);
  CHECK(out.over_limit());
  CHECK(out.allocated() < 2 * big.size());
  out.clear();
  CHECK(!out.over_limit());
}

TEST_CASE("config: client-output-buffer-limit, client-query-buffer-limit, proto-max-bulk-len", "[redis][config]") {
  Fx f;
  const std::string failed = "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - ";
  auto get = [&](std::string_view name) { return f.run({"CONFIG", "GET", name}).elements().at(1).str(); };
  CHECK(get("client-output-buffer-limit") == "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
  CHECK(get("client-query-buffer-limit") == "1073741824");
  CHECK(get("proto-max-bulk-len") == "536870912");
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "normal 8mb 4mb 1"}) == OK);
  CHECK(get("client-output-buffer-limit") == "normal 8388608 4194304 1 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
  CHECK(f.ex.options().client_output_buffer_limit[0].hard == 8u * 1024 * 1024);
  CHECK(f.ex.options().client_output_buffer_limit[0].soft == 4u * 1024 * 1024);
  CHECK(f.ex.options().client_output_buffer_limit[0].soft_seconds == 1);
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "replica 1kb 2k 3 pubsub 0 0 0"}) == OK);
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "NORMAL 1 2 +03"}) == OK);
  CHECK(get("client-output-buffer-limit") == "normal 1 2 3 slave 1024 2000 3 pubsub 0 0 0");
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", ""}) == OK);  // changes nothing
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "foo"}) ==
        E(failed + "Wrong number of arguments in buffer limit configuration."));
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "normal  1 2 3"}) ==
        E(failed + "Wrong number of arguments in buffer limit configuration."));
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "master x 2 3"}) ==
        E(failed + "Invalid client class specified in buffer limit configuration."));
  for (const char* bad : {"normal x 2 3", "normal -1 2 3", "normal 1 2 -3", "normal 1 2 3x", "normal 1 2 2147483648"}) {
    CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", bad}) ==
          E(failed + "Error in hard, soft or soft_seconds setting in buffer limit configuration."));
  }
  // Atomic: a bad second group leaves the first unchanged.
  CHECK(f.R({"CONFIG", "SET", "client-output-buffer-limit", "normal 9 9 9 foo 1 2 3"}) ==
        E(failed + "Invalid client class specified in buffer limit configuration."));
  CHECK(get("client-output-buffer-limit") == "normal 1 2 3 slave 1024 2000 3 pubsub 0 0 0");

  CHECK(f.R({"CONFIG", "SET", "client-query-buffer-limit", "1000"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be "
          "between 1048576 and 9223372036854775807 inclusive"));
  CHECK(f.R({"CONFIG", "SET", "client-query-buffer-limit", "2mb"}) == OK);
  CHECK(get("client-query-buffer-limit") == "2097152");
  CHECK(f.ex.options().client_query_buffer_limit == 2u * 1024 * 1024);
  CHECK(f.R({"CONFIG", "SET", "proto-max-bulk-len", "abc"}) ==
        E("ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be a memory value"));
  CHECK(f.R({"CONFIG", "SET", "proto-max-bulk-len", "1mb"}) == OK);
  CHECK(f.ex.options().proto_max_bulk_len == 1024u * 1024);
  // APPEND obeys the new proto-max-bulk-len.
  f.run({"SET", "s", std::string(1024 * 1024, 'a')});
  CHECK(f.R({"APPEND", "s", "b"}) == E("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
}

TEST_CASE("info memory: used_memory is the figure the limit is enforced against", "[redis][info][maxmemory]") {
  Fx f;
  f.R({"SET", "k", "v"});
  f.store.set_external_memory(123'456);  // a server's client buffers
  const std::string m = f.run({"INFO", "memory"}).str();
  CHECK(info_field(m, "used_memory") == std::to_string(f.store.used_memory()));
  CHECK(std::stoull(info_field(m, "used_memory")) >= 123'456);
  // With a limit below the client buffers, a denyoom command is refused.
  CHECK(f.R({"CONFIG", "SET", "maxmemory", "100000"}) == OK);
  CHECK(f.R({"SET", "k2", "v"}) == E("OOM command not allowed when used memory > 'maxmemory'."));
  f.store.set_external_memory(0);
  CHECK(f.R({"SET", "k2", "v"}) == OK);
}

TEST_CASE("INCRBYFLOAT: Redis 7.0's parsing, checks and long double formatting", "[redis][strings]") {
  Fx f;
  CHECK(f.R({"INCRBYFLOAT", "n", "10.5"}) == B("10.5"));
  CHECK(f.R({"INCRBYFLOAT", "n", "0.1"}) == B("10.6"));
  CHECK(f.R({"INCRBYFLOAT", "n", "5.0e3"}) == B("5010.60000000000000009"));
  CHECK(f.R({"INCRBYFLOAT", "z", "-0"}) == B("0"));
  CHECK(f.R({"INCRBYFLOAT", "n", " 1"}) == E("ERR value is not a valid float"));
  CHECK(f.R({"INCRBYFLOAT", "n", "1 "}) == E("ERR value is not a valid float"));
  CHECK(f.R({"INCRBYFLOAT", "n", std::string("1\0", 2)}) == E("ERR value is not a valid float"));
  CHECK(f.R({"INCRBYFLOAT", "n", "nan"}) == E("ERR value is not a valid float"));
  CHECK(f.R({"INCRBYFLOAT", "n", "inf"}) == E("ERR increment would produce NaN or Infinity"));
  CHECK(f.R({"INCRBYFLOAT", "n", "1e-5000"}) == E("ERR value is not a valid float"));  // underflows to 0
  CHECK(f.R({"SET", "s", "abc", "PX", "5000"}) == OK);
  CHECK(f.R({"INCRBYFLOAT", "s", "1"}) == E("ERR value is not a valid float"));  // the stored value first
  CHECK(f.R({"SET", "s", "2", "PX", "5000"}) == OK);
  CHECK(f.R({"INCRBYFLOAT", "s", "0x10"}) == B("18"));  // strtold() reads hexadecimal
  CHECK(f.R({"PTTL", "s"}) == I(5000));                  // the TTL stays
  CHECK(f.R({"HSET", "h", "f", "1"}) == I(1));
  CHECK(f.R({"INCRBYFLOAT", "h", "x"}) == E("WRONGTYPE Operation against a key holding the wrong kind of value"));
}

TEST_CASE("setbit and getbit: Redis 7.0's checks, growth with zero bytes, the old bit", "[redis][string]") {
  Fx f;
  CHECK(f.R({"SETBIT", "k", "-1", "1"}) == E("ERR bit offset is not an integer or out of range"));
  CHECK(f.R({"SETBIT", "k", "x", "1"}) == E("ERR bit offset is not an integer or out of range"));
  CHECK(f.R({"SETBIT", "k", "4294967296", "1"}) == E("ERR bit offset is not an integer or out of range"));  // 512 MB
  CHECK(f.R({"SETBIT", "k", "0", "2"}) == E("ERR bit is not an integer or out of range"));
  CHECK(f.R({"SETBIT", "k", "0", "-1"}) == E("ERR bit is not an integer or out of range"));
  CHECK(f.R({"SETBIT", "k", "0", "x"}) == E("ERR bit is not an integer or out of range"));
  CHECK(f.R({"EXISTS", "k"}) == I(0));  // errors create nothing
  CHECK(f.R({"SETBIT", "k", "1", "1"}) == I(0));
  CHECK(f.R({"GET", "k"}) == B(std::string(1, '\x40')));
  CHECK(f.R({"SETBIT", "k", "1", "1"}) == I(1));
  CHECK(f.R({"SETBIT", "k", "1", "0"}) == I(1));
  CHECK(f.R({"SETBIT", "k", "23", "1"}) == I(0));
  CHECK(f.R({"GET", "k"}) == B(std::string("\x00\x00\x01", 3)));
  CHECK(f.R({"SET", "n", "1"}) == OK);  // "1" is 0x31
  CHECK(f.R({"GETBIT", "n", "2"}) == I(1));
  CHECK(f.R({"GETBIT", "n", "4"}) == I(0));
  CHECK(f.R({"SETBIT", "n", "6", "1"}) == I(0));
  CHECK(f.R({"GET", "n"}) == B("3"));
  CHECK(f.R({"GETBIT", "n", "8"}) == I(0));
  CHECK(f.R({"GETBIT", "n", "4294967295"}) == I(0));
  CHECK(f.R({"GETBIT", "nokey", "0"}) == I(0));
  CHECK(f.R({"GETBIT", "n", "-1"}) == E("ERR bit offset is not an integer or out of range"));
  CHECK(f.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(f.R({"SETBIT", "h", "0", "1"}) == E("WRONGTYPE Operation against a key holding the wrong kind of value"));
  CHECK(f.R({"GETBIT", "h", "0"}) == E("WRONGTYPE Operation against a key holding the wrong kind of value"));
  // A TTL stays; a stale key is gone first.
  CHECK(f.R({"SET", "t", "a", "PX", "100"}) == OK);
  CHECK(f.R({"SETBIT", "t", "7", "1"}) == I(1));  // 'a' = 0x61
  CHECK(f.R({"PTTL", "t"}) == I(100));
  f.at(101);
  CHECK(f.R({"SETBIT", "t", "7", "1"}) == I(0));
  CHECK(f.R({"PTTL", "t"}) == I(-1));
}

TEST_CASE("debug: OBJECT, DIGEST and DIGEST-VALUE, and memory: USAGE", "[redis][debug]") {
  Fx f;
  CHECK(f.R({"DEBUG", "OBJECT", "nokey"}) == E("ERR no such key"));
  CHECK(f.R({"SET", "n", "20000"}) == OK);
  const std::string before = f.run({"DEBUG", "OBJECT", "n"}).str();
  CHECK(before.find(" refcount:1 encoding:int serializedlength:3 lru:") != std::string::npos);
  CHECK(f.R({"INCR", "n"}) == I(20001));
  const std::string after = f.run({"DEBUG", "OBJECT", "n"}).str();
  CHECK(before.substr(0, before.find(' ')) == after.substr(0, after.find(' ')));  // modified in place
  CHECK(f.run({"DEBUG", "OBJECT", "n"}).str().rfind("Value at:", 0) == 0);
  // Equal values, equal digests; a missing key 40 zeros; the dataset's digest changes with it.
  const std::string zeros(40, '0');
  CHECK(f.R({"FLUSHALL"}) == OK);
  CHECK(f.R({"DEBUG", "DIGEST"}) == "+" + zeros + "\r\n");
  CHECK(f.R({"HSET", "h1", "a", "1", "b", "2"}) == I(2));
  CHECK(f.R({"HSET", "h2", "b", "2", "a", "1"}) == I(2));  // other order
  CHECK(f.R({"SET", "s", "x"}) == OK);
  const Reply d = f.run({"DEBUG", "DIGEST-VALUE", "h1", "h2", "s", "nokey"});
  REQUIRE(d.elements().size() == 4);
  CHECK(d.elements()[0].str().size() == 40);
  CHECK(d.elements()[0].str() == d.elements()[1].str());
  CHECK(d.elements()[0].str() != d.elements()[2].str());
  CHECK(d.elements()[3].str() == zeros);
  const std::string all = f.run({"DEBUG", "DIGEST"}).str();
  CHECK(f.R({"HPEXPIRE", "h1", "1000", "FIELDS", "1", "a"}) == "*1\r\n:1\r\n");
  CHECK(f.run({"DEBUG", "DIGEST-VALUE", "h1"}).elements()[0].str() != d.elements()[0].str());
  CHECK(f.run({"DEBUG", "DIGEST"}).str() != all);
  // MEMORY USAGE: what the key costs as maxmemory weighs it.
  CHECK(f.R({"MEMORY", "USAGE", "nokey"}) == NIL);
  CHECK(f.R({"MEMORY", "USAGE"}) == E("ERR unknown subcommand or wrong number of arguments for 'USAGE'. Try MEMORY HELP."));
  CHECK(f.R({"MEMORY", "USAGE", "s", "SAMPLES"}) == SYNTAX);
  CHECK(f.R({"MEMORY", "USAGE", "s", "SAMPLES", "-1"}) == SYNTAX);
  CHECK(f.R({"MEMORY", "USAGE", "s", "SAMPLES", "x"}) == NOT_INT);
  CHECK(f.R({"SET", "big", std::string(1000, 'x')}) == OK);
  const std::int64_t small = f.run({"MEMORY", "USAGE", "s"}).integer();
  const std::int64_t large = f.run({"MEMORY", "USAGE", "big"}).integer();
  CHECK(small > 0);
  CHECK(large >= small + 1000);
  CHECK(f.run({"MEMORY", "HELP"}).elements().size() == 6);
  // sanitize-dump-payload: shown as set (RESTORE checks every payload whole anyway).
  CHECK(f.R({"CONFIG", "SET", "sanitize-dump-payload", "clients"}) == OK);
  CHECK(f.R({"CONFIG", "GET", "sanitize-dump-payload"}) == "*2\r\n" + B("sanitize-dump-payload") + B("clients"));
  CHECK(f.R({"CONFIG", "SET", "sanitize-dump-payload", "maybe"}).rfind("-ERR CONFIG SET failed", 0) == 0);
}

TEST_CASE("lcs: the string, LEN, IDX with MINMATCHLEN and WITHMATCHLEN, errors", "[redis][string]") {
  Fx f;
  CHECK(f.R({"SET", "a", "ohmytext"}) == OK);
  CHECK(f.R({"SET", "b", "mynewtext"}) == OK);
  CHECK(f.R({"LCS", "a", "b"}) == B("mytext"));
  CHECK(f.R({"LCS", "a", "b", "LEN"}) == I(6));
  CHECK(f.R({"LCS", "a", "nokey"}) == B(""));
  CHECK(f.R({"LCS", "nokey", "nokey2", "LEN"}) == I(0));
  // The ranges from the ends backwards: "text" (a 4..7, b 5..8), then "my" (a 2..3, b 0..1).
  const std::string text = "*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n";
  const std::string my = "*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n";
  CHECK(f.R({"LCS", "a", "b", "IDX"}) == "*4\r\n" + B("matches") + "*2\r\n" + text + my + B("len") + I(6));
  CHECK(f.R({"LCS", "a", "b", "IDX", "MINMATCHLEN", "3"}) == "*4\r\n" + B("matches") + "*1\r\n" + text + B("len") + I(6));
  CHECK(f.R({"LCS", "a", "b", "IDX", "MINMATCHLEN", "-5", "WITHMATCHLEN"}) ==
        "*4\r\n" + B("matches") + "*2\r\n" + "*3\r\n" + text.substr(4) + I(4) + "*3\r\n" + my.substr(4) + I(2) +
            B("len") + I(6));
  CHECK(f.R({"LCS", "a", "b", "LEN", "IDX"}) == E("ERR If you want both the length and indexes, please just use IDX."));
  CHECK(f.R({"LCS", "a", "b", "MINMATCHLEN"}) == SYNTAX);
  CHECK(f.R({"LCS", "a", "b", "MINMATCHLEN", "x"}) == NOT_INT);
  CHECK(f.R({"LCS", "a", "b", "FOO"}) == SYNTAX);
  CHECK(f.R({"HSET", "h", "f", "v"}) == I(1));
  CHECK(f.R({"LCS", "a", "h", "FOO"}) == E("ERR The specified keys must contain string values"));  // before options
  // The table is bounded by proto-max-bulk-len (4 bytes a cell).
  CHECK(f.R({"SET", "big", std::string(500, 'x')}) == OK);
  CHECK(f.R({"CONFIG", "SET", "proto-max-bulk-len", "1mb"}) == OK);
  CHECK(f.R({"LCS", "big", "big", "LEN"}) == I(500));  // 501 x 501 x 4 bytes < 1 MB
  CHECK(f.R({"SET", "big2", std::string(600, 'y')}) == OK);
  CHECK(f.R({"LCS", "big2", "big2", "LEN"}) ==
        E("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"));
}

TEST_CASE("info: commandstats, errorstats, total_error_replies and cpu, which CONFIG RESETSTAT clears", "[redis][info]") {
  Fx f;
  expiring::redis::Session s;
  expiring::redis::OutputBuffer out;
  const auto run = [&](std::initializer_list<std::string_view> argv) {
    f.ex.execute_into(std::vector<std::string>(argv.begin(), argv.end()), s, out);
  };
  run({"SET", "a", "1"});
  run({"GET", "a"});
  run({"GET"});                // rejected: arity
  run({"HGET", "a", "f"});     // failed: WRONGTYPE
  run({"NOSUCHCOMMAND"});      // ERR, no command to count
  run({"INCR", "a", "x"});     // rejected: arity
  const std::string cmd = f.run({"INFO", "commandstats"}).str();
  CHECK(cmd.find("cmdstat_set:calls=1,") != std::string::npos);
  CHECK(cmd.find("cmdstat_get:calls=1,") != std::string::npos);
  CHECK(cmd.find(",rejected_calls=1,failed_calls=0\r\n") != std::string::npos);
  CHECK(cmd.find("cmdstat_hget:calls=1,") != std::string::npos);
  CHECK(cmd.find("cmdstat_incr:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0") != std::string::npos);
  const std::string err = f.run({"INFO", "errorstats"}).str();
  CHECK(err == "# Errorstats\r\nerrorstat_ERR:count=3\r\nerrorstat_WRONGTYPE:count=1\r\n");
  CHECK(redistext::info_field(f.run({"INFO", "stats"}).str(), "total_error_replies") == "4");
  const std::string all = f.run({"INFO"}).str();
  CHECK(all.find("# CPU\r\nused_cpu_sys:") != std::string::npos);
  CHECK(all.find("# Errorstats") != std::string::npos);
  CHECK(all.find("# Commandstats") == std::string::npos);  // only when asked, or with ALL
  CHECK(f.run({"INFO", "all"}).str().find("# Commandstats") != std::string::npos);
  CHECK(f.R({"CONFIG", "RESETSTAT"}) == OK);
  CHECK(f.run({"INFO", "errorstats"}).str() == "# Errorstats\r\n");
  CHECK(f.run({"INFO", "commandstats"}).str().find("cmdstat_set") == std::string::npos);
}
