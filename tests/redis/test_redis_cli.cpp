// tests/redis/test_redis_cli.cpp: the real redis-cli binary against expiring-server:
// one-shot commands (checked against fixed output, and against redis-server's output when it is
// installed), commands on stdin, --pipe mode, --scan, -r repeats, --bigkeys, and SHUTDOWN.
#include <algorithm>
#include <string>
#include <vector>

#include "catch.hpp"
#include "redis_live.hpp"

using live::Argv;

namespace {

std::string skip_reason() {
  return "redis-cli not installed (looked at $EXPIRING_REDIS_CLI, PATH, /usr/bin/redis-cli): test skipped";
}

Argv cli(const std::string& bin, int port, const Argv& args) {
  Argv a{bin, "-h", "127.0.0.1", "-p", std::to_string(port)};
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::size_t b = 0;
  while (b < s.size()) {
    const std::size_t e = s.find('\n', b);
    v.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return v;
}

}  // namespace

TEST_CASE("redis-cli: one-shot commands print what they print against redis", "[redis][live][cli]") {
  const auto bin = live::redis_cli_path();
  if (!bin) {
    EXPIRING_SKIP(skip_reason());
  }
  live::RespServer ours;
  const int port = ours.port();
  auto run = [&](const Argv& args) { return live::run_program(cli(*bin, port, args), ""); };

  CHECK(run({"SET", "k", "v", "EX", "100"}).out == "OK\n");
  const std::string ttl = run({"TTL", "k"}).out;  // 100, or 99 if half a second passed
  CHECK((ttl == "100\n" || ttl == "99\n"));
  CHECK(run({"SET", "e", "v", "EXAT", "4102444800"}).out == "OK\n");
  CHECK(run({"EXPIRETIME", "e"}).out == "4102444800\n");
  CHECK(run({"DEL", "e"}).out == "1\n");
  CHECK(run({"GET", "k"}).out == "v\n");
  CHECK(run({"GET", "nokey"}).out == "\n");
  CHECK(run({"--no-raw", "GET", "nokey"}).out == "(nil)\n");
  CHECK(run({"--no-raw", "GET", "k"}).out == "\"v\"\n");
  CHECK(run({"--no-raw", "PTTL", "nokey"}).out == "(integer) -2\n");
  CHECK(run({"PERSIST", "k"}).out == "1\n");
  CHECK(run({"TTL", "k"}).out == "-1\n");
  CHECK(run({"INCR", "n"}).out == "1\n");
  CHECK(run({"INCRBY", "n", "41"}).out == "42\n");
  CHECK(run({"MGET", "k", "nokey", "n"}).out == "v\n\n42\n");
  CHECK(run({"EXPIRE", "k", "10", "NX", "XX"}).out ==
        "ERR NX and XX, GT or LT options at the same time are not compatible\n\n");
  CHECK(run({"SET", "k", "v", "EX", "0"}).out == "ERR invalid expire time in 'set' command\n\n");
  CHECK(run({"FOO", "bar"}).out == "ERR unknown command 'FOO', with args beginning with: 'bar' \n\n");
  CHECK(run({"DBSIZE"}).out == "2\n");
  CHECK(run({"-r", "3", "INCR", "c"}).out == "1\n2\n3\n");
  CHECK(run({"SETEX", "s", "50", "x"}).out == "OK\n");
  CHECK(run({"EXPIRETIME", "nokey"}).out == "-2\n");
  CHECK(run({"TYPE", "s"}).out == "string\n");
  CHECK(run({"CONFIG", "GET", "hz"}).out == "hz\n10\n");
  const live::RunResult info = run({"INFO", "keyspace"});
  CHECK(info.out.rfind("# Keyspace\r\ndb0:keys=4,expires=1,avg_ttl=", 0) == 0);
  CHECK(run({"PING"}).exit_code() == 0);

  // The same one-shot commands against redis-server print the same.
  if (const auto server = live::redis_server_path()) {
    live::RedisServer redis(*server);
    live::run_program(cli(*bin, port, {"FLUSHALL"}), "");
    const std::vector<Argv> cmds = {
        {"SET", "k", "v", "EX", "100000"}, {"GET", "k"}, {"GET", "nokey"}, {"--no-raw", "GET", "k"},
        {"--no-raw", "MGET", "k", "nokey"}, {"INCR", "n"}, {"--no-raw", "INCR", "n"}, {"APPEND", "k", "w"},
        {"--no-raw", "PEXPIREAT", "k", "4102444800000"}, {"--no-raw", "EXPIRETIME", "k"},
        {"EXPIRE", "k", "10", "GT", "LT"}, {"--no-raw", "EXPIRE", "k", "10", "FOO"},
        {"SET", "k", "v", "FOO"}, {"GETEX", "k", "PERSIST"}, {"--no-raw", "GETDEL", "k"}, {"KEYS", "n*"},
        {"--no-raw", "KEYS", "nomatch*"}, {"EXISTS", "n", "n", "k"}, {"DEL", "n"}, {"--no-raw", "SET", "a", "1", "GET"},
        {"RENAME", "nokey", "x"}, {"--no-raw", "RENAME", "nokey", "x"}, {"PING"}, {"ECHO", "hi"}, {"DBSIZE"},
        {"FLUSHALL"}, {"--no-raw", "RANDOMKEY"}, {"SELECT", "0"}};
    for (const Argv& c : cmds) {
      CAPTURE(c);
      const live::RunResult r = live::run_program(cli(*bin, redis.port(), c), "");
      const live::RunResult o = live::run_program(cli(*bin, port, c), "");
      CHECK(o.out == r.out);
      CHECK(o.exit_code() == r.exit_code());
    }
  } else {
    WARN("redis-server not installed: redis-cli output not compared with it");
  }
}

TEST_CASE("redis-cli: commands on stdin, --pipe, --scan and --bigkeys", "[redis][live][cli]") {
  const auto bin = live::redis_cli_path();
  if (!bin) {
    EXPIRING_SKIP(skip_reason());
  }
  live::RespServer ours;
  const int port = ours.port();

  // Commands read from stdin, one per line.
  const live::RunResult stdin_run =
      live::run_program(cli(*bin, port, {}), "SET a 1 EX 1000\nINCR a\nGET a\nTTL a\nSET \"sp ace\" 'x y'\nGET \"sp ace\"\n");
  // The TTL may have ticked down a second on a loaded machine: real time passes here.
  const bool ttl_full = stdin_run.out == "OK\n2\n2\n1000\nOK\nx y\n";
  const bool ttl_ticked = stdin_run.out == "OK\n2\n2\n999\nOK\nx y\n";
  CHECK((ttl_full || ttl_ticked));

  // --pipe: raw RESP from stdin, replies counted (redis-cli appends an ECHO to find the end).
  std::string proto;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    proto += live::encode({"SET", "key:" + std::to_string(i), std::to_string(i), "EX", "1000"});
  }
  proto += live::encode({"INCR", "key:1"});
  proto += live::encode({"EXPIRE", "key:2", "0", "NX", "XX"});  // one error reply
  const live::RunResult pipe = live::run_program(cli(*bin, port, {"--pipe"}), proto);
  CHECK(pipe.out.find("errors: 1, replies: " + std::to_string(n + 2)) != std::string::npos);
  CHECK(pipe.exit_code() == 1);  // redis-cli --pipe exits 1 when a reply was an error
  CHECK(live::run_program(cli(*bin, port, {"DBSIZE"}), "").out == std::to_string(n + 2) + "\n");
  CHECK(live::run_program(cli(*bin, port, {"GET", "key:1"}), "").out == "2\n");
  const std::string ttl = live::run_program(cli(*bin, port, {"TTL", "key:1"}), "").out;
  CHECK((ttl == "1000\n" || ttl == "999\n"));  // real time passes between SET and TTL

  // --scan walks the whole keyspace with SCAN.
  std::vector<std::string> scanned = lines(live::run_program(cli(*bin, port, {"--scan", "--pattern", "key:1*"}), "").out);
  std::sort(scanned.begin(), scanned.end());
  std::vector<std::string> want;
  for (int i = 0; i < n; ++i) {
    const std::string k = "key:" + std::to_string(i);
    if (k.rfind("key:1", 0) == 0) want.push_back(k);
  }
  std::sort(want.begin(), want.end());
  CHECK(scanned == want);

  // --bigkeys uses SCAN, TYPE and STRLEN.
  live::run_program(cli(*bin, port, {"SET", "the-biggest", std::string(5000, 'b')}), "");
  const std::string big = live::run_program(cli(*bin, port, {"--bigkeys"}), "").out;
  CHECK(big.find("Biggest string found '\"the-biggest\"' has 5000 bytes") != std::string::npos);
  CHECK(big.find(std::to_string(n + 3) + " strings with") != std::string::npos);
}

TEST_CASE("redis-cli: SHUTDOWN stops the server cleanly", "[redis][live][cli]") {
  const auto bin = live::redis_cli_path();
  if (!bin) {
    EXPIRING_SKIP(skip_reason());
  }
  live::RespServer ours;
  live::run_program(cli(*bin, ours.port(), {"SET", "k", "v"}), "");
  live::run_program(cli(*bin, ours.port(), {"SHUTDOWN"}), "");
  const auto status = ours.process().wait_exit(10000);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
}

TEST_CASE("expiring-server: SIGTERM and SIGINT stop it cleanly", "[redis][live]") {
  for (int sig : {SIGTERM, SIGINT}) {
    live::RespServer ours;
    live::Conn c(ours.port());
    CHECK(c.raw({"SET", "k", "v"}) == "+OK\r\n");
    ::kill(ours.process().pid(), sig);
    const auto status = ours.process().wait_exit(10000);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
  }
}

TEST_CASE("expiring-server: many clients, pipelining and maxclients", "[redis][live]") {
  live::RespServer ours({"--maxclients", "40"});
  std::vector<std::unique_ptr<live::Conn>> conns;
  for (int i = 0; i < 40; ++i) conns.push_back(std::make_unique<live::Conn>(ours.port()));
  // Every client pipelines 200 commands before reading a reply.
  for (int i = 0; i < 40; ++i) {
    std::string batch;
    for (int j = 0; j < 200; ++j) batch += live::encode({"INCR", "counter:" + std::to_string(i)});
    conns[static_cast<std::size_t>(i)]->send_raw(batch);
  }
  for (int i = 0; i < 40; ++i) {
    for (int j = 1; j <= 200; ++j) {
      REQUIRE(conns[static_cast<std::size_t>(i)]->read_reply_bytes() == ":" + std::to_string(j) + "\r\n");
    }
  }
  // The 41st connection is refused with Redis's message.
  live::Conn extra(ours.port());
  CHECK(extra.read_to_close() == "-ERR max number of clients reached\r\n");
  conns.pop_back();
  // A client that sends a lot without reading gets every reply once it reads.
  std::string big;
  for (int j = 0; j < 20000; ++j) big += live::encode({"SET", "k" + std::to_string(j), std::string(100, 'v')});
  big += live::encode({"DBSIZE"});
  conns[0]->send_raw(big);
  for (int j = 0; j < 20000; ++j) REQUIRE(conns[0]->read_reply_bytes() == "+OK\r\n");
  CHECK(conns[0]->read_reply_bytes() == ":20040\r\n");
}

// Hash commands with Redis 7.4 field TTLs (HFE) through the real redis-cli. Not compared with
// redis-server: Debian 12's 7.0 has no HFE; the expectations are research §1 and semantics.md
// D20-D27 (tests/redis/test_redis_hash.cpp has the exact RESP replies).
TEST_CASE("redis-cli: hash commands with field TTLs over TCP", "[redis][live][cli][hash]") {
  const auto bin = live::redis_cli_path();
  if (!bin) {
    EXPIRING_SKIP(skip_reason());
  }
  live::RespServer ours;
  const int port = ours.port();
  auto run = [&](const Argv& args) { return live::run_program(cli(*bin, port, args), ""); };

  CHECK(run({"HSET", "h", "a", "1", "b", "2"}).out == "2\n");
  CHECK(run({"HGET", "h", "a"}).out == "1\n");
  CHECK(run({"HGET", "h", "nosuch"}).out == "\n");
  CHECK(run({"--no-raw", "HGET", "h", "nosuch"}).out == "(nil)\n");
  CHECK(run({"HEXPIRE", "h", "100", "FIELDS", "2", "a", "nosuch"}).out == "1\n-2\n");
  CHECK(run({"--no-raw", "HEXPIRE", "h", "100", "NX", "FIELDS", "2", "a", "b"}).out ==
        "1) (integer) 0\n2) (integer) 1\n");
  // HTTL rounds up (D22): 100 right after the HEXPIRE, 99 once a second has passed.
  const std::string ttl = run({"HTTL", "h", "FIELDS", "3", "a", "b", "nosuch"}).out;
  CHECK((ttl == "100\n100\n-2\n" || ttl == "99\n99\n-2\n" || ttl == "100\n99\n-2\n" || ttl == "99\n100\n-2\n"));
  CHECK(run({"HPEXPIREAT", "h", "4102444800000", "FIELDS", "1", "b"}).out == "1\n");
  CHECK(run({"HEXPIRETIME", "h", "FIELDS", "1", "b"}).out == "4102444800\n");
  CHECK(run({"HPERSIST", "h", "FIELDS", "2", "a", "a"}).out == "1\n-1\n");
  CHECK(run({"HTTL", "h", "FIELDS", "1", "a"}).out == "-1\n");
  const std::string all = run({"HGETALL", "h"}).out;
  CHECK((all == "a\n1\nb\n2\n" || all == "b\n2\na\n1\n"));
  CHECK(run({"TYPE", "h"}).out == "hash\n");
  CHECK(run({"HLEN", "h"}).out == "2\n");
  CHECK(run({"HINCRBY", "h", "a", "41"}).out == "42\n");
  CHECK(run({"INFO", "keyspace"}).out.rfind("# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0,subexpiry=1\r\n", 0) == 0);
  // A past time deletes the field (2); the last field takes the key.
  CHECK(run({"HPEXPIREAT", "h", "1", "FIELDS", "1", "b"}).out == "2\n");
  CHECK(run({"HDEL", "h", "a"}).out == "1\n");
  CHECK(run({"EXISTS", "h"}).out == "0\n");
  CHECK(run({"TYPE", "h"}).out == "none\n");
  CHECK(run({"HTTL", "h", "FIELDS", "2", "a", "b"}).out == "-2\n-2\n");
  // WRONGTYPE both ways, and error texts.
  CHECK(run({"SET", "s", "x"}).out == "OK\n");
  CHECK(run({"HGET", "s", "a"}).out == "WRONGTYPE Operation against a key holding the wrong kind of value\n\n");
  CHECK(run({"HSET", "h", "a", "1"}).out == "1\n");
  CHECK(run({"GET", "h"}).out == "WRONGTYPE Operation against a key holding the wrong kind of value\n\n");
  CHECK(run({"HEXPIRE", "h", "10", "FIELDS", "2", "a"}).out ==
        "ERR The `numfields` parameter must match the number of arguments\n\n");
  CHECK(run({"HEXPIRE", "h", "-1", "FIELDS", "1", "a"}).out == "ERR invalid expire time, must be >= 0\n\n");
  CHECK(run({"HPEXPIREAT", "h", "70368744177664", "FIELDS", "1", "a"}).out ==
        "ERR invalid expire time in 'hpexpireat' command\n\n");
  CHECK(run({"HTTL", "h", "FIELD", "1", "a"}).out ==
        "ERR Mandatory argument FIELDS is missing or not at the right position\n\n");
  CHECK(run({"HPERSIST", "h", "FIELDS", "0", "a"}).out == "ERR Number of fields must be a positive integer\n\n");
  CHECK(run({"HPTTL", "h"}).out == "ERR wrong number of arguments for 'hpttl' command\n\n");
  CHECK(run({"DBSIZE"}).out == "2\n");
}
