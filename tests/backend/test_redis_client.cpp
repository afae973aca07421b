// tests/backend/test_redis_client.cpp: RedisStore's client, against a real redis-server.
//
// What the conformance suite cannot show, because the in-process stores have no network:
// key slots and codecs (no server), AUTH with a password and with an ACL user, SELECT,
// timeouts (a listener that never answers), refused connections and the reconnect backoff,
// reconnecting after a server restart, idle connections closed by the server, the pool's
// bound, pipelining, SIGPIPE, server-side errors the in-process store cannot produce
// (WRONGTYPE, an undecodable value) and the scripts' digests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "backend/backends.hpp"
#include "catch.hpp"
#include "expiring/client/key_slot.hpp"
#include "expiring/client/router.hpp"

using expiring::Errc;
using expiring::RedisError;
using expiring::RedisOptions;
using backend_test::StandaloneRedis;
using Store = expiring::RedisStore<std::string, std::string>;
using Clock = std::chrono::steady_clock;

namespace {

// A key codec of the user's own for std::string keys (here: a namespace of its own).
struct TenantCodec {
  static void encode(std::string_view k, std::string& out) {
    out += "tenant7/";
    out.append(k.data(), k.size());
  }
  static bool decode(std::string_view, std::string&) { return false; }
};

RedisOptions options_for(int port) {
  RedisOptions o;
  o.nodes = {{"127.0.0.1", port}};
  o.key_prefix = backend_test::next_prefix();
  return o;
}

// The Errc of what fn throws (fails the test if it throws nothing or something else).
template <class F>
Errc thrown(F&& fn, std::string* what = nullptr) {
  try {
    fn();
  } catch (const RedisError& e) {
    if (what != nullptr) *what = e.what();
    return e.code();
  }
  FAIL("no RedisError was thrown");
  return Errc{};
}

#define NEED_REDIS()                                                                  \
  std::string why_;                                                                   \
  StandaloneRedis* server = backend_test::shared_server(why_);                        \
  if (server == nullptr) EXPIRING_SKIP("no redis-server: " << why_)

// A TCP listener on a free loopback port that accepts (through the kernel's backlog) and never
// answers: a server that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  int port() const { return port_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace

// ---- No server --------------------------------------------------------------------------------

TEST_CASE("redis client: key slots are CRC16/XMODEM of the hash tag, mod 16384", "[unit]") {
  using expiring::client::key_slot;
  CHECK(expiring::client::crc16("123456789") == 0x31C3);
  CHECK(key_slot("foo") == 12182);
  CHECK(key_slot("bar") == 5061);
  CHECK(key_slot("hello") == 866);
  CHECK(key_slot("somekey") == 11058);
  CHECK(key_slot("foo{hash_tag}") == 2515);
  CHECK(key_slot("{user1000}.following") == 3443);
  CHECK(key_slot("{user1000}.followers") == 3443);
  CHECK(key_slot("foo{bar}{zap}") == 5061);      // the first tag
  CHECK(key_slot("foo{}{bar}") == 8363);         // an empty first tag: the whole key
  CHECK(key_slot("foo{{bar}}zap") == 4015);      // tag "{bar"
  CHECK(key_slot("{}") == 15257);
  CHECK(key_slot("") == 0);
  CHECK(key_slot("{unclosed") == key_slot(std::string_view("{unclosed")));
  CHECK(key_slot(std::string_view("a\0b", 3)) != key_slot("a"));  // bytes, NULs included
}

TEST_CASE("redis client: codecs", "[unit]") {
  std::string out;
  expiring::RedisCodec<std::int64_t>::encode(-42, out);
  CHECK(out == "-42");
  std::int64_t v = 0;
  CHECK(expiring::RedisCodec<std::int64_t>::decode("9223372036854775807", v));
  CHECK(v == std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(expiring::RedisCodec<std::int64_t>::decode("9223372036854775808", v));
  CHECK_FALSE(expiring::RedisCodec<std::int64_t>::decode("12x", v));
  CHECK_FALSE(expiring::RedisCodec<std::int64_t>::decode("", v));
  CHECK_FALSE(expiring::RedisCodec<std::int64_t>::decode(" 1", v));
  std::uint32_t u = 0;
  CHECK_FALSE(expiring::RedisCodec<std::uint32_t>::decode("-1", u));
  CHECK(expiring::RedisCodec<std::uint32_t>::decode("4294967295", u));
  std::string s;
  CHECK(expiring::RedisCodec<std::string>::decode(std::string_view("a\0b", 3), s));
  CHECK(s == std::string("a\0b", 3));
  // Integers decode exactly as encode() writes them: no leading zero, no "-0" (Redis's
  // string2ll refuses both), and the ends of the range round-trip.
  v = 5;
  for (const char* bad : {"007", "00", "-0", "-012", "+1", "-"}) {
    CHECK_FALSE(expiring::RedisCodec<std::int64_t>::decode(bad, v));
    CHECK(v == 5);  // unchanged by a refused decode
  }
  CHECK(expiring::RedisCodec<std::int64_t>::decode("0", v));
  CHECK(v == 0);
  for (const std::int64_t x : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{10},
                               std::numeric_limits<std::int64_t>::max()}) {
    out.clear();
    expiring::RedisCodec<std::int64_t>::encode(x, out);
    CHECK(expiring::RedisCodec<std::int64_t>::decode(out, v));
    CHECK(v == x);
  }
}

TEST_CASE("redis client: a MOVED or ASK reply is read whole, or refused", "[unit]") {
  using expiring::client::parse_redirect;
  expiring::client::Redirect r;
  REQUIRE(parse_redirect("MOVED 3999 127.0.0.1:6381", r));
  CHECK_FALSE(r.ask);
  CHECK(r.slot == 3999);
  CHECK(r.to.host == "127.0.0.1");
  CHECK(r.to.port == 6381);
  REQUIRE(parse_redirect("ASK 16383 ::1:7000", r));  // an IPv6 host: the last ':' splits
  CHECK(r.ask);
  CHECK(r.to.host == "::1");
  CHECK(r.to.port == 7000);
  for (const char* bad : {"MOVED 12x h:6379", "MOVED 12 h:6379x", "MOVED 16384 h:1", "MOVED -1 h:1", "MOVED 1 h:0",
                          "MOVED 1 h:65536", "MOVED 1 h:", "MOVED 1", "MOVED  h:1", "ERR 1 h:1"}) {
    CHECK_FALSE(parse_redirect(bad, r));
  }
}

TEST_CASE("redis client: invalid options are refused at construction", "[unit]") {
  RedisOptions o;
  o.cluster = true;
  o.db = 2;
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
  o = RedisOptions{};
  o.pool_size = 0;
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
  o = RedisOptions{};
  o.nodes.clear();
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
  o = RedisOptions{};
  o.nodes = {{"127.0.0.1", 70000}};
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
  o = RedisOptions{};
  o.ttl_jitter = expiring::Jitter::percent(150);
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
  o = RedisOptions{};
  o.pipeline_chunk = 0;
  CHECK_THROWS_AS(Store(o), std::invalid_argument);
}

TEST_CASE("redis client: nothing listening is io_error, then the reconnect backoff fails fast", "[unit]") {
  SilentListener probe;  // a port that was free
  const int port = probe.port();
  ::close(probe.fd());   // now nothing listens there (the destructor's close then fails harmlessly)
  RedisOptions o = options_for(port);
  o.reconnect_backoff_min = std::chrono::milliseconds(2000);
  o.reconnect_backoff_max = std::chrono::milliseconds(2000);
  Store s(o);
  std::string what;
  CHECK(thrown([&] { (void)s.get("k"); }, &what) == Errc::io_error);
  CHECK(what.find("Connection refused") != std::string::npos);
  const auto t0 = Clock::now();
  CHECK(thrown([&] { (void)s.set("k", "v"); }, &what) == Errc::io_error);
  CHECK(what.find("reconnect backoff") != std::string::npos);
  CHECK(Clock::now() - t0 < std::chrono::milliseconds(500));
  CHECK(s.client_stats().connect_failures == 1);
  CHECK(s.client_stats().backoff_refusals == 1);
}

TEST_CASE("redis client: a server that does not answer is a timeout, and the connection is dropped", "[unit]") {
  SilentListener hang;
  RedisOptions o = options_for(hang.port());
  o.command_timeout = std::chrono::milliseconds(200);
  Store s(o);
  const auto t0 = Clock::now();
  std::string what;
  CHECK(thrown([&] { (void)s.get("k"); }, &what) == Errc::timeout);
  const auto took = Clock::now() - t0;
  CHECK(took >= std::chrono::milliseconds(150));  // read() retried once (an idempotent GET)
  CHECK(took < std::chrono::milliseconds(3000));
  CHECK(s.client_stats().retries == 1);
  CHECK(s.client_stats().transport_errors == 2);
  // A write is not sent twice: its outcome is unknown.
  CHECK(thrown([&] { (void)s.set("k", "v"); }, &what) == Errc::timeout);
  CHECK(what.find("may have run") != std::string::npos);
  CHECK(s.client_stats().retries == 1);
}

TEST_CASE("redis client: a peer that closes mid-write raises no SIGPIPE", "[unit]") {
  // SIGPIPE at its default disposition (it would kill the process).
  struct sigaction old {};
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGPIPE, &dfl, &old);
  SilentListener peer;
  std::atomic<bool> done{false};
  std::thread closer([&] {
    // Accept, read a little, close with unread data: the kernel answers further writes with RST.
    const int c = ::accept(peer.fd(), nullptr, nullptr);
    if (c >= 0) {
      char buf[4096];
      (void)::read(c, buf, sizeof buf);
      ::close(c);
    }
    done = true;
  });
  RedisOptions o = options_for(peer.port());
  o.command_timeout = std::chrono::milliseconds(2000);
  Store s(o);
  std::vector<std::string> keys;
  for (int i = 0; i < 200'000; ++i) keys.push_back("key-number-" + std::to_string(i));  // MBs of MSET
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& k : keys) pairs.emplace_back(k, std::string(32, 'v'));
  const Errc e = thrown([&] { (void)s.mset(pairs); });
  CHECK((e == Errc::io_error || e == Errc::timeout));
  closer.join();
  CHECK(done);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  CHECK(sigismember(&pending, SIGPIPE) == 0);
  ::sigaction(SIGPIPE, &old, nullptr);
}

// ---- A real server ------------------------------------------------------------------------------

TEST_CASE("redis client: the scripts' digests are what SCRIPT LOAD computes", "[client]") {
  NEED_REDIS();
  const live::Reply a = server->command({"SCRIPT", "LOAD", Store::kExpireIfEqualScript});
  const live::Reply d = server->command({"SCRIPT", "LOAD", Store::kDelIfEqualScript});
  CHECK(a.str() == Store::kExpireIfEqualSha);
  CHECK(d.str() == Store::kDelIfEqualSha);
  // With the cache flushed, EVALSHA gets NOSCRIPT and the store falls back to EVAL.
  Store s(options_for(server->port()));
  REQUIRE(s.set("lock", "me") == true);
  server->command({"SCRIPT", "FLUSH"});
  CHECK(s.pexpireat_if_equal("lock", "me", backend_test::kEpochMs * 2) == true);
  server->command({"SCRIPT", "FLUSH"});
  CHECK(s.del_if_equal("lock", "me"));
}

TEST_CASE("redis client: errors the in-process store cannot produce are thrown with Redis's text", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  Store s(o);
  server->command({"RPUSH", o.key_prefix + "list", "x"});
  std::string what;
  CHECK(thrown([&] { (void)s.get("list"); }, &what) == Errc::wrong_type);
  CHECK(what.find("WRONGTYPE Operation against a key holding the wrong kind of value") != std::string::npos);
  CHECK(thrown([&] { (void)s.set_get("list", "v"); }) == Errc::wrong_type);
  CHECK(thrown([&] { (void)s.getdel("list"); }) == Errc::wrong_type);
  CHECK(thrown([&] { (void)s.pexpireat_if_equal("list", "v", 1); }) == Errc::wrong_type);
  CHECK(s.expire("list", 100) == true);  // EXPIRE works on any type, as in Redis
  CHECK(s.exists("list"));
  // A value another client wrote in another format.
  expiring::RedisStore<std::string, std::int64_t> ints(o);
  CHECK(ints.set("n", 41) == true);
  server->command({"INCR", o.key_prefix + "n"});
  CHECK(ints.get("n") == std::int64_t{42});
  server->command({"SET", o.key_prefix + "n", "forty-two"});
  CHECK(thrown([&] { (void)ints.get("n"); }, &what) == Errc::protocol_error);
  // Integer keys go through their codec too.
  expiring::RedisStore<std::uint64_t, std::string> by_id(o);
  CHECK(by_id.set(std::uint64_t{77}, "seventy-seven") == true);
  CHECK(server->command({"GET", o.key_prefix + "77"}).str() == "seventy-seven");
}

TEST_CASE("redis client: AUTH with a password and with an ACL user", "[client]") {
  if (!backend_test::have_redis()) EXPIRING_SKIP("redis-server not installed");
  backend_test::ServerConfig cfg;
  cfg.requirepass = "s3cret";
  cfg.extra_args = {"--user", "alice", "on", ">wonder", "~*", "&*", "+@all"};
  StandaloneRedis server(cfg);
  RedisOptions o = options_for(server.port());
  {
    Store s(o);  // no password
    std::string what;
    CHECK(thrown([&] { (void)s.get("k"); }, &what) == Errc::auth_failed);
    CHECK(what.find("NOAUTH") != std::string::npos);
  }
  {
    o.password = "wrong";
    Store s(o);
    std::string what;
    CHECK(thrown([&] { (void)s.get("k"); }, &what) == Errc::auth_failed);
    CHECK(what.find("WRONGPASS") != std::string::npos);
    // Not a transport failure: no backoff, the next call tries again (and fails the same way).
    CHECK(thrown([&] { (void)s.get("k"); }, &what) == Errc::auth_failed);
    CHECK(s.client_stats().backoff_refusals == 0);
  }
  {
    o.password = "s3cret";
    Store s(o);
    CHECK(s.set("k", "v") == true);
    CHECK(s.get("k") == std::string("v"));
  }
  {
    o.user = "alice";
    o.password = "wonder";
    Store s(o);
    CHECK(s.get("k") == std::string("v"));
    o.password = "s3cret";  // the default user's password, given for alice
    Store bad(o);
    CHECK(thrown([&] { (void)bad.get("k"); }) == Errc::auth_failed);
  }
}

TEST_CASE("redis client: SELECT puts the store in its own database", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.db = 3;
  Store in3(o);
  o.db = 0;
  Store in0(o);
  CHECK(in3.set("k", "three") == true);
  CHECK(in0.get("k") == std::nullopt);
  CHECK(in0.set("k", "zero") == true);
  CHECK(in3.get("k") == std::string("three"));
  o.db = 100000;  // beyond `databases`: Redis refuses SELECT
  Store nowhere(o);
  std::string what;
  CHECK(thrown([&] { (void)nowhere.get("k"); }, &what) == Errc::server_error);
  CHECK(what.find("DB index is out of range") != std::string::npos);
}

TEST_CASE("redis client: reconnects after a restart, with AUTH and SELECT again", "[client]") {
  if (!backend_test::have_redis()) EXPIRING_SKIP("redis-server not installed");
  backend_test::ServerConfig cfg;
  cfg.requirepass = "pw";
  StandaloneRedis server(cfg);
  RedisOptions o = options_for(server.port());
  o.password = "pw";
  o.db = 2;
  o.reconnect_backoff_min = std::chrono::milliseconds(5);
  o.reconnect_backoff_max = std::chrono::milliseconds(50);
  Store s(o);
  CHECK(s.set("before", "1") == true);
  server.stop();
  CHECK(thrown([&] { (void)s.get("before"); }) == Errc::io_error);
  server.start();
  // Bounded: the backoff is at most 50 ms.
  bool back = false;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!back && Clock::now() < deadline) {
    try {
      back = s.set("after", "2") == true;
    } catch (const RedisError& e) {
      CHECK(e.code() == Errc::io_error);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  REQUIRE(back);
  CHECK(s.get("before") == std::nullopt);  // no persistence: a fresh server
  CHECK(s.get("after") == std::string("2"));
  // In database 2, authenticated: read it with a plain client.
  CHECK(server.command({"SELECT", "2"}).str() == "OK");
  CHECK(s.client_stats().connects >= 2);
}

TEST_CASE("redis client: an idle connection the server closed is dropped before a write", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.pool_size = 1;
  Store s(o);
  CHECK(s.set("k", "1") == true);
  // Close every normal client connection (the store's idle one among them).
  server->command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The write must not be lost or reported as "may have run": the dead one is noticed first.
  CHECK(s.set("k", "2") == true);
  CHECK(s.get("k") == std::string("2"));
  CHECK(s.client_stats().dropped_idle == 1);
  CHECK(s.client_stats().transport_errors == 0);
}

TEST_CASE("redis client: the pool bounds connections and times out waiting for one", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.pool_size = 2;
  Store s(o);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const std::string k = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (s.set(k, k) == true && s.get(k) == k) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(ok == 800);
  CHECK(s.client_stats().connects <= 2);

  // One connection, held by a command the server takes 600 ms to answer (DEBUG SLEEP blocks
  // the whole server): a second caller waits pool_wait, then times out.
  o.pool_size = 1;
  o.pool_wait = std::chrono::milliseconds(100);
  o.command_timeout = std::chrono::milliseconds(3000);
  Store one(o);
  REQUIRE(one.set("k", "v") == true);
  std::thread sleeper([&] { server->command({"DEBUG", "SLEEP", "0.6"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread holder([&] { (void)one.get("k"); });  // waits for the server, holding the connection
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string what;
  CHECK(thrown([&] { (void)one.get("k"); }, &what) == Errc::timeout);
  CHECK(what.find("no free connection") != std::string::npos);
  holder.join();
  sleeper.join();
  CHECK(one.get("k") == std::string("v"));
}

TEST_CASE("redis client: batches are pipelined", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.pipeline_chunk = 1000;
  Store s(o);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> keys;
  for (int i = 0; i < 4500; ++i) {
    keys.push_back("k" + std::to_string(i));
    pairs.emplace_back(keys.back(), std::to_string(i));
  }
  const auto before = s.client_stats();
  REQUIRE(s.mset(pairs).ok());
  const auto after_mset = s.client_stats();
  CHECK(after_mset.round_trips - before.round_trips == 1);  // one MSET: atomic
  CHECK(after_mset.commands - before.commands == 1);
  std::vector<std::optional<std::string>> out(keys.size());
  CHECK(s.get_many(keys, out.data()) == 4500);
  CHECK(s.client_stats().round_trips - after_mset.round_trips == 1);  // 5 MGETs in one round trip
  CHECK(s.client_stats().commands - after_mset.commands == 5);
  for (int i = 0; i < 4500; ++i) CHECK(out[static_cast<std::size_t>(i)] == std::to_string(i));
  CHECK(s.del_many(keys) == 4500);
}

TEST_CASE("redis client: jitter is applied before sending", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.ttl_jitter = expiring::Jitter::spread_ms(10'000);
  std::uint64_t draw = 0;  // r % (2s + 1): 0 is the lowest TTL, ttl - s
  o.random = [&] { return draw; };
  Store s(o);
  CHECK(s.set("a", "v", expiring::Ex{100}) == true);
  CHECK(s.pttl("a") <= 90'000);
  CHECK(s.pttl("a") > 89'000);
  draw = 20'000;  // the highest: ttl + s
  CHECK(s.expire("a", 100) == true);
  CHECK(s.pttl("a") > 109'000);
  CHECK(s.set("b", "v", expiring::Px{50'000}.with(expiring::Jitter::none())) == true);
  CHECK(s.pttl("b") <= 50'000);
  CHECK(s.pttl("b") > 49'000);
  // Absolute deadlines are never moved.
  CHECK(s.pexpireat("b", backend_test::kEpochMs * 2) == true);
  CHECK(s.pexpiretime("b") == backend_test::kEpochMs * 2);
}

TEST_CASE("redis client: many threads share one store", "[client]") {
  NEED_REDIS();
  Store s(options_for(server->port()));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string lock = "lock";
      const std::string me = "owner" + std::to_string(t);
      for (int i = 0; i < 50; ++i) {
        if (s.set(lock, me, expiring::Px{5000}, expiring::SetCond::NX) == true) {
          // While held, nobody else may take it; release only our own.
          if (s.get(lock) != me) ++failures;
          if (!s.del_if_equal(lock, me)) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK_FALSE(s.exists("lock"));
}

TEST_CASE("redis client: examples/rate_limiter_anywhere runs against redis-server", "[client][example]") {
#ifndef EXPIRING_RATE_LIMITER_EXAMPLE
  EXPIRING_SKIP("the examples are not built");
#else
  NEED_REDIS();
  const live::RunResult r = live::run_program(
      {EXPIRING_RATE_LIMITER_EXAMPLE, "--redis=127.0.0.1:" + std::to_string(server->port()), "--seconds=0.05"}, "",
      60000);
  INFO(r.out);
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
  CHECK(r.out.find("behaviour: 5 of 6 requests allowed") != std::string::npos);
  CHECK(r.out.find("mset, 100 keys per call") != std::string::npos);
#endif
}

TEST_CASE("redis client: a connection that owes a reply is never reused", "[client]") {
  NEED_REDIS();
  expiring::client::AtomicClientStats stats;
  expiring::client::NodePool pool({"127.0.0.1", server->port()}, {}, {}, stats);
  {
    expiring::client::NodePool::Lease c = pool.acquire();
    CHECK(c->clean());
    c->append(expiring::client::Cmd("PING"));
    CHECK_FALSE(c->clean());  // as if an exception came between a command and its reply
  }
  {
    expiring::client::NodePool::Lease c = pool.acquire();  // a new one: the first was destroyed
    CHECK(stats.connects.load() == 2);
    const expiring::client::Reply r = c->call(expiring::client::Cmd("ECHO").arg("mine"));
    CHECK(expiring::client::text(*r) == "mine");
    CHECK(c->clean());
  }
  {
    expiring::client::NodePool::Lease c = pool.acquire();  // the clean one comes back
    CHECK(stats.connects.load() == 2);
  }
}

TEST_CASE("redis client: a user codec for std::string keys is used, not bypassed", "[client]") {
  NEED_REDIS();
  RedisOptions o = options_for(server->port());
  o.key_prefix.clear();
  expiring::RedisStore<std::string, std::string, TenantCodec> s(o);
  const std::string key = "codec-" + backend_test::next_prefix();
  CHECK(s.set(key, "v") == true);
  CHECK(s.set(std::string_view(key), "w") == true);  // a lookup type goes through the codec too
  CHECK(server->command({"GET", "tenant7/" + key}).str() == "w");
  CHECK(server->command({"EXISTS", key}).integer() == 0);
  CHECK(s.get(key) == std::string("w"));
  CHECK(s.del(key));
}
