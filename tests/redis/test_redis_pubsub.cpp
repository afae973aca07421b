// tests/redis/test_redis_pubsub.cpp: publish/subscribe, keyspace notifications and CLIENT REPLY in
// the command layer (cmd_pubsub.hpp) on ManualClock stores: messages into a session's push
// buffer, patterns, subscribed mode, notify-keyspace-events (flags, CONFIG GET's canonical
// form, Redis's event names per command), and `expired` for lazy and active expiry. Replies are
// redis-server 7.0.15's (its unit/pubsub.tcl runs against expiring-server in CI).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"

using expiring::ManualClock;
using expiring::redis::CommandExecutor;
using expiring::redis::OutputBuffer;
using expiring::redis::Reply;
using expiring::redis::RequestParser;
using expiring::redis::Session;
using expiring::redis::ValueStore;

namespace {

constexpr std::int64_t kT0 = 1'000'000;
using VStore = ValueStore<ManualClock&>;

struct Fx {
  ManualClock clock{kT0};
  VStore db0{clock}, db1{clock};
  CommandExecutor<ManualClock&> ex{std::vector<VStore*>{&db0, &db1}};
  OutputBuffer sub_out;
  Session pub, sub;
  int pushes = 0;
  Fx() {
    sub.push = &sub_out;
    ex.set_push_hook([this](Session& s) {
      CHECK(&s == &sub);
      ++pushes;
    });
  }
  std::string run(Session& s, std::initializer_list<std::string_view> argv) {
    std::vector<std::string> v(argv.begin(), argv.end());
    OutputBuffer out;
    ex.execute_into(v, s, out);
    return out.str();
  }
  std::string P(std::initializer_list<std::string_view> argv) { return run(pub, argv); }
  // The subscriber's command: its replies are written where messages go, as on a connection.
  std::string S(std::initializer_list<std::string_view> argv) {
    std::vector<std::string> v(argv.begin(), argv.end());
    ex.execute_into(v, sub, sub_out);
    return take();
  }
  // What the subscriber received since the last call, as text lines of the RESP values.
  std::string take() {
    const std::string bytes = sub_out.str();
    sub_out.clear();
    return bytes;
  }
};

std::string msg(std::string_view channel, std::string_view m) {
  const auto b = [](std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; };
  return "*3\r\n" + b("message") + b(channel) + b(m);
}
std::string pmsg(std::string_view pattern, std::string_view channel, std::string_view m) {
  const auto b = [](std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; };
  return "*4\r\n" + b("pmessage") + b(pattern) + b(channel) + b(m);
}

}  // namespace

TEST_CASE("pubsub: SUBSCRIBE and PSUBSCRIBE receive what PUBLISH sends", "[redis][pubsub]") {
  Fx f;
  CHECK(f.S({"SUBSCRIBE", "a", "b"}) == "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
  CHECK(f.S({"PSUBSCRIBE", "n*"}) == "*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:3\r\n");
  CHECK(f.P({"PUBLISH", "a", "hello"}) == ":1\r\n");
  CHECK(f.take() == msg("a", "hello"));
  CHECK(f.P({"PUBLISH", "news", "x"}) == ":1\r\n");
  CHECK(f.take() == pmsg("n*", "news", "x"));
  CHECK(f.P({"PUBLISH", "other", "x"}) == ":0\r\n");
  CHECK(f.pushes == 2);
  CHECK(f.P({"PUBSUB", "NUMSUB", "a", "zz"}) == "*4\r\n$1\r\na\r\n:1\r\n$2\r\nzz\r\n:0\r\n");
  CHECK(f.P({"PUBSUB", "NUMPAT"}) == ":1\r\n");
  // Subscribed mode: only the subscription commands and PING.
  CHECK(f.S({"GET", "k"}) ==
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
        "context\r\n");
  CHECK(f.S({"PING"}) == "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
  CHECK(f.S({"UNSUBSCRIBE"}) ==
        "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:1\r\n");
  CHECK(f.S({"PUNSUBSCRIBE"}) == "*3\r\n$12\r\npunsubscribe\r\n$2\r\nn*\r\n:0\r\n");
  CHECK(f.S({"UNSUBSCRIBE"}) == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
  CHECK(f.S({"PING"}) == "+PONG\r\n");
  SECTION("a session that goes is forgotten") {
    {
      Session gone;
      OutputBuffer out;
      gone.push = &out;
      std::vector<std::string> v{"SUBSCRIBE", "a"};
      f.ex.execute_into(v, gone, out);
    }
    CHECK(f.P({"PUBLISH", "a", "x"}) == ":0\r\n");
  }
}

TEST_CASE("pubsub: keyspace notifications with Redis's flags and event names", "[redis][pubsub][notify]") {
  Fx f;
  CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "KA"}) == "+OK\r\n");
  CHECK(f.P({"CONFIG", "GET", "notify-keyspace-events"}) == "*2\r\n$22\r\nnotify-keyspace-events\r\n$2\r\nAK\r\n");
  CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "$lshzxeKE"}) == "+OK\r\n");
  CHECK(f.P({"CONFIG", "GET", "notify-keyspace-events"}) == "*2\r\n$22\r\nnotify-keyspace-events\r\n$9\r\n$lshzxeKE\r\n");
  CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "Kq"}) ==
        "-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. "
        "Use 'Ag$lshzxeKEtmdn'.\r\n");
  CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "KEA"}) == "+OK\r\n");
  CHECK(f.S({"PSUBSCRIBE", "*"}) == "*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n");
  CHECK(f.P({"SET", "foo", "bar"}) == "+OK\r\n");
  CHECK(f.take() == pmsg("*", "__keyspace@0__:foo", "set") + pmsg("*", "__keyevent@0__:set", "foo"));
  CHECK(f.P({"INCR", "n"}) == ":1\r\n");
  CHECK(f.take() == pmsg("*", "__keyspace@0__:n", "incrby") + pmsg("*", "__keyevent@0__:incrby", "n"));
  CHECK(f.P({"HSET", "h", "f", "v"}) == ":1\r\n");
  CHECK(f.take() == pmsg("*", "__keyspace@0__:h", "hset") + pmsg("*", "__keyevent@0__:hset", "h"));
  CHECK(f.P({"SELECT", "1"}) == "+OK\r\n");
  CHECK(f.P({"SET", "t", "v", "PX", "100"}) == "+OK\r\n");
  CHECK(f.take() == pmsg("*", "__keyspace@1__:t", "set") + pmsg("*", "__keyevent@1__:set", "t") +
                        pmsg("*", "__keyspace@1__:t", "expire") + pmsg("*", "__keyevent@1__:expire", "t"));
  SECTION("expired: lazily, by a read") {
    f.clock.advance(101);
    CHECK(f.P({"GET", "t"}) == "$-1\r\n");
    CHECK(f.take() == pmsg("*", "__keyspace@1__:t", "expired") + pmsg("*", "__keyevent@1__:expired", "t"));
  }
  SECTION("expired: actively, by tick()") {
    f.clock.advance(101);
    for (int i = 0; i < 50 && f.db1.size() != 0; ++i) f.db1.tick(expiring::CycleKind::Slow);
    CHECK(f.take() == pmsg("*", "__keyspace@1__:t", "expired") + pmsg("*", "__keyevent@1__:expired", "t"));
  }
  SECTION("a mask: only expired events") {
    CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "Ex"}) == "+OK\r\n");
    CHECK(f.P({"SET", "u", "v"}) == "+OK\r\n");
    CHECK(f.take().empty());
    f.clock.advance(101);
    CHECK(f.P({"EXISTS", "t"}) == ":0\r\n");
    CHECK(f.take() == pmsg("*", "__keyevent@1__:expired", "t"));
  }
  SECTION("new keys") {
    CHECK(f.P({"CONFIG", "SET", "notify-keyspace-events", "En"}) == "+OK\r\n");
    CHECK(f.P({"SET", "fresh", "1"}) == "+OK\r\n");
    CHECK(f.P({"SET", "fresh", "2"}) == "+OK\r\n");
    CHECK(f.take() == pmsg("*", "__keyevent@1__:new", "fresh"));
  }
}

TEST_CASE("pubsub: CLIENT REPLY OFF and SKIP silence replies but not messages", "[redis][pubsub][client]") {
  Fx f;
  CHECK(f.S({"CLIENT", "REPLY", "OFF"}).empty());
  CHECK(f.S({"SET", "k", "v"}).empty());
  CHECK(f.S({"PSUBSCRIBE", "*"}) == "*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n");
  CHECK(f.P({"PUBLISH", "c", "m"}) == ":1\r\n");
  CHECK(f.take() == pmsg("*", "c", "m"));
  CHECK(f.S({"PUNSUBSCRIBE"}) == "*3\r\n$12\r\npunsubscribe\r\n$1\r\n*\r\n:0\r\n");
  CHECK(f.S({"CLIENT", "REPLY", "ON"}) == "+OK\r\n");
  CHECK(f.S({"CLIENT", "REPLY", "SKIP"}).empty());
  CHECK(f.S({"GET", "k"}).empty());
  CHECK(f.S({"GET", "k"}) == "$1\r\nv\r\n");
  CHECK(f.S({"CLIENT", "SETNAME", "a b"}) == "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
  CHECK(f.S({"CLIENT", "SETNAME", "worker"}) == "+OK\r\n");
  CHECK(f.S({"CLIENT", "GETNAME"}) == "$6\r\nworker\r\n");
}

TEST_CASE("pubsub: over RESP3 the confirmations and messages are pushes, and any command runs while subscribed",
          "[redis][pubsub][resp3]") {
  Fx f;
  CHECK(f.S({"HELLO", "3"}).rfind("%7\r\n", 0) == 0);
  const auto b = [](std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; };
  CHECK(f.S({"SUBSCRIBE", "ch"}) == ">3\r\n" + b("subscribe") + b("ch") + ":1\r\n");
  CHECK(f.P({"PUBLISH", "ch", "hi"}) == ":1\r\n");
  CHECK(f.take() == ">3\r\n" + b("message") + b("ch") + b("hi"));
  CHECK(f.pushes == 1);
  CHECK(f.S({"GET", "nokey"}) == "_\r\n");  // no subscribed mode in RESP3
  CHECK(f.S({"PING"}) == "+PONG\r\n");
  CHECK(f.S({"UNSUBSCRIBE"}) == ">3\r\n" + b("unsubscribe") + b("ch") + ":0\r\n");
  CHECK(f.S({"UNSUBSCRIBE"}) == ">3\r\n" + b("unsubscribe") + "_\r\n:0\r\n");
}
