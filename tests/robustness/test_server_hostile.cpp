// tests/robustness/test_server_hostile.cpp: expiring-server against hostile clients and a
// hostile primary (issue 30, items 1, 2 and 6), over real TCP on loopback.
//
//   * A client that announces `*2147483647` and sends empty arguments is closed at
//     client-query-buffer-limit (it used to grow without bound while used_memory stayed
//     flat); a pending request's arguments count in used_memory at their real cost.
//   * requirepass / AUTH / HELLO AUTH, and Redis's bounds before AUTH (10 arguments of
//     16 KB), compared with redis-server where it is installed.
//   * A fake primary (a listener in this test that does Redis's handshake and answers PSYNC
//     with what the case wants): an RDB announced over proto-max-bulk-len, an endless header
//     line, a flood of commands, empty arguments, a MULTI that never ends, half an RDB then
//     silence, a silent stream, bytes after the checksum, garbage after the RDB, garbage
//     starting with NUL. Each time the replica drops the link (and connects again), keeps answering PING,
//     stays within twice its configured link limits (RSS, not under ASan), and stops on
//     SIGTERM.
//   * Two real servers: the primary's PINGs keep an idle link alive past repl-timeout, and
//     a replica that does not read is dropped at client-output-buffer-limit replica.
// Every wait is a bounded poll; no timing assertion beyond "within N seconds" bounds that
// are 5-10x what is needed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "expiring/snapshot.hpp"
#include "server_support.hpp"
#include "stream_support.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define EXPIRING_HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EXPIRING_HOSTILE_ASAN 1
#endif
#endif

namespace {

constexpr std::size_t kMB = 1024 * 1024;
using Clock = std::chrono::steady_clock;
using robust::eventually;
using robust::repeat;
using robust::fullresync;
using robust::snapshot_of;
using robust::sync_reply;

// A primary that is not one: a loopback listener that takes the replica's connection and
// answers its handshake up to PSYNC, then sends whatever the test case says.
class FakePrimary {
 public:
  FakePrimary() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_fd_, 8) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~FakePrimary() {
    drop();
    ::close(listen_fd_);
  }
  int port() const noexcept { return port_; }

  // Waits for the replica to connect and do Redis's handshake (PING, REPLCONF listening-port,
  // REPLCONF capa, each answered) up to its PSYNC; true when it did within timeout_ms.
  bool accept_sync(int timeout_ms = 10000) {
    drop();
    if (!robust::readable(listen_fd_, timeout_ms)) return false;
    conn_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn_ < 0) return false;
    timeval tv{2, 0};  // a send to a replica that stopped reading gives up after 2 s
    ::setsockopt(conn_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    expiring::redis::RequestParser parser;
    std::vector<std::string> argv;
    const char* const expected[] = {"PING", "REPLCONF", "REPLCONF", "PSYNC"};
    const char* const replies[] = {"+PONG\r\n", "+OK\r\n", "+OK\r\n", ""};
    for (int step = 0; step < 4; ++step) {
      while (parser.next(argv) != expiring::redis::RequestParser::Status::command) {
        if (!robust::readable(conn_, timeout_ms)) return false;
        char buf[512];
        const ssize_t n = ::recv(conn_, buf, sizeof buf, 0);
        if (n <= 0) return false;
        parser.feed(buf, static_cast<std::size_t>(n));
      }
      if (argv[0] != expected[step]) return false;
      if (replies[step][0] != '\0' && !send(replies[step])) return false;
    }
    return true;
  }
  // Sends bytes; false once the replica has closed the link (or stopped reading for 2 s).
  bool send(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(conn_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Sends `chunk` again and again until the replica closes the link, `max_bytes` were sent
  // or `max_ms` passed. The bytes sent.
  std::size_t flood(const std::string& chunk, std::size_t max_bytes, int max_ms) {
    std::size_t sent = 0;
    const auto until = Clock::now() + std::chrono::milliseconds(max_ms);
    while (sent < max_bytes && Clock::now() < until && send(chunk)) sent += chunk.size();
    return sent;
  }
  // True once the replica has closed the link (what it sends is read and dropped).
  bool closed_by_replica(int timeout_ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[4096];
    while (Clock::now() < until) {
      if (!robust::readable(conn_, 100)) continue;
      const ssize_t n = ::recv(conn_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
    return false;
  }
  void drop() {
    if (conn_ >= 0) ::close(conn_);
    conn_ = -1;
  }

 private:
  int listen_fd_ = -1;
  int conn_ = -1;
  int port_ = 0;
};

// A replica server of the fake primary, with 1 MB link limits and the given repl-timeout.
struct Replica {
  live::RespServer server;
  live::Conn admin;
  explicit Replica(FakePrimary& primary, int repl_timeout_s = 60) : admin(server.port()) {
    REQUIRE(admin.raw({"CONFIG", "SET", "client-query-buffer-limit", "1mb", "proto-max-bulk-len", "1mb"}) ==
            "+OK\r\n");
    if (repl_timeout_s != 60) {  // not the default
      REQUIRE(admin.raw({"CONFIG", "SET", "repl-timeout", std::to_string(repl_timeout_s)}) == "+OK\r\n");
    }
    REQUIRE(admin.raw({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())}) == "+OK\r\n");
  }
  pid_t pid() { return server.process().pid(); }
  std::string info(const std::string& name) {
    return redistext::info_field(admin.call({"INFO", "replication"}).str(), name);
  }
  // The replica answers PING within its connection's 10 s receive timeout (a throw fails).
  bool pong() { return admin.raw({"PING"}) == "+PONG\r\n"; }
};

// The resident size a hostile peer may add: twice the link limits (1 MB each) plus slack for
// the allocator and the 128 KB read budget. Not under ASan (its quarantine keeps memory).
void check_rss_growth(pid_t pid, std::uint64_t before) {
#ifdef EXPIRING_HOSTILE_ASAN
  (void)pid;
  (void)before;
#else
  const std::uint64_t peak = robust::proc_status_bytes(pid, "VmHWM");
  INFO("peak RSS " << peak << " bytes, " << before << " before");
  CHECK(peak < before + 2 * 2 * kMB + 8 * kMB);
#endif
}

// Runs a case of a hostile primary: sync_and_then() is called once the replica's SYNC
// arrived; then the replica must drop the link within `drop_ms` and connect again.
void hostile_primary(const std::function<void(FakePrimary&)>& sync_and_then, int repl_timeout_s = 60,
                     int drop_ms = 10000) {
  FakePrimary primary;
  Replica replica(primary, repl_timeout_s);
  const std::uint64_t rss_before = robust::proc_status_bytes(replica.pid(), "VmRSS");
  REQUIRE(primary.accept_sync());
  sync_and_then(primary);
  CHECK(primary.closed_by_replica(drop_ms));
  CHECK(replica.pong());
  CHECK(replica.info("master_link_status") == "down");
  CHECK(primary.accept_sync());  // it connects again (once a second)
  CHECK(replica.pong());
  check_rss_growth(replica.pid(), rss_before);
  const int status = replica.server.process().stop();
  CHECK(WIFEXITED(status));  // SIGTERM was honoured, not the harness's SIGKILL
}

}  // namespace

// ---- Clients ------------------------------------------------------------------------------

TEST_CASE("server query limit: empty arguments of an endless multibulk are counted and closed at the limit",
          "[server][query][hostile]") {
  live::RespServer ours;
  live::Conn admin(ours.port());
  REQUIRE(admin.raw({"CONFIG", "SET", "client-query-buffer-limit", "1mb"}) == "+OK\r\n");
  const std::uint64_t rss_before = robust::proc_status_bytes(ours.process().pid(), "VmRSS");
  const int fd = live::connect_loopback(ours.port());
  REQUIRE(fd >= 0);
  timeval tv{2, 0};  // a server that stopped reading makes send() give up after 2 s
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::size_t sent = 0;
  if (::send(fd, "*2147483647\r\n", 13, MSG_NOSIGNAL) == 13) {
    const std::string empties = repeat("$0\r\n\r\n", 10000);
    const auto until = Clock::now() + std::chrono::seconds(15);
    while (sent < 64 * kMB && Clock::now() < until) {
      const ssize_t n = ::send(fd, empties.data(), empties.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
  }
  bool closed = false;
  for (int i = 0; i < 50 && !closed; ++i) (void)robust::drain(fd, 200, closed);
  ::close(fd);
  INFO("sent " << sent << " bytes");
  CHECK(closed);
  CHECK(robust::info_number(admin, "stats", "client_query_buffer_limit_disconnections") == 1);
  CHECK(admin.raw({"PING"}) == "+PONG\r\n");
  check_rss_growth(ours.process().pid(), rss_before);
}

TEST_CASE("server memory: a pending request's empty arguments count in used_memory", "[server][query][hostile]") {
  live::RespServer ours;
  live::Conn admin(ours.port());
  const std::uint64_t idle = robust::info_number(admin, "memory", "mem_clients_normal");
  live::Conn hog(ours.port());
  hog.send_raw("*1000000\r\n" + repeat("$0\r\n\r\n", 100000));  // 600 KB, never completed
  // 100000 pending arguments hold at least 100000 string objects.
  const std::uint64_t want = idle + 100000 * sizeof(std::string);
  CHECK(eventually([&] { return robust::info_number(admin, "memory", "mem_clients_normal") >= want; }));
  CHECK(robust::info_number(admin, "memory", "used_memory") >= want);
}

TEST_CASE("server auth: requirepass, AUTH, HELLO AUTH and the bounds before AUTH, as redis-server",
          "[server][auth][hostile]") {
  live::RespServer ours;
  std::unique_ptr<live::RedisServer> redis;
  if (const auto bin = live::redis_server_path()) {
    redis = std::make_unique<live::RedisServer>(*bin);
  } else {
    WARN(robust::skip_reason());
  }
  std::vector<std::pair<const char*, int>> servers{{"expiring-server", ours.port()}};
  if (redis) servers.emplace_back("redis-server", redis->port());
  for (const auto& [name, port] : servers) {
    INFO(name);
    live::Conn admin(port);
    // Without a password: a bare AUTH is an error, AUTH default <any> is fine.
    CHECK(admin.raw({"AUTH", "x"}) ==
          "-ERR AUTH <password> called without any password configured for the default user. Are you sure your "
          "configuration is correct?\r\n");
    CHECK(admin.raw({"AUTH", "default", "x"}) == "+OK\r\n");
    REQUIRE(admin.raw({"CONFIG", "SET", "requirepass", "s3cret"}) == "+OK\r\n");
    CHECK(admin.raw({"PING"}) == "+PONG\r\n");  // connections already open stay authenticated

    live::Conn c(port);
    CHECK(c.raw({"PING"}) == "-NOAUTH Authentication required.\r\n");
    CHECK(c.raw({"SET", "k", "v"}) == "-NOAUTH Authentication required.\r\n");
    CHECK(c.raw({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
    CHECK(c.raw({"NOSUCH"}).rfind("-ERR unknown command 'NOSUCH'", 0) == 0);
    CHECK(c.raw({"HELLO", "2"}).rfind("-NOAUTH HELLO must be called with the client already authenticated", 0) ==
          0);
    CHECK(c.raw({"AUTH", "wrong"}) == "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    CHECK(c.raw({"AUTH", "bob", "s3cret"}) == "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    CHECK(c.raw({"AUTH", "a", "b", "c"}) == "-ERR syntax error\r\n");
    CHECK(c.raw({"HELLO", "2", "AUTH", "default", "nope"}) ==
          "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    CHECK(c.raw({"AUTH", "s3cret"}) == "+OK\r\n");
    CHECK(c.raw({"PING"}) == "+PONG\r\n");
    // Authenticated, a request of 11 arguments is fine.
    CHECK(c.raw({"DEL", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}) == ":0\r\n");

    live::Conn h(port);
    CHECK(h.call({"HELLO", "2", "AUTH", "default", "s3cret"}).type() == expiring::redis::Reply::Type::array);
    CHECK(h.raw({"PING"}) == "+PONG\r\n");

    // Before AUTH: at most 10 arguments, of at most 16 KB.
    live::Conn many(port);
    (void)many.try_send("*11\r\n");
    CHECK(many.read_to_close() == "-ERR Protocol error: unauthenticated multibulk length\r\n");
    live::Conn big(port);
    (void)big.try_send("*1\r\n$16385\r\n");
    CHECK(big.read_to_close() == "-ERR Protocol error: unauthenticated bulk length\r\n");
    // AUTH then a large request in the same write: the bounds are lifted from the next request.
    live::Conn pipelined(port);
    pipelined.send_raw(live::encode({"AUTH", "s3cret"}) +
                       live::encode({"ECHO", std::string(20000, 'e')}));
    CHECK(pipelined.read_reply_bytes() == "+OK\r\n");
    CHECK(pipelined.read_reply_bytes() == "$20000\r\n" + std::string(20000, 'e') + "\r\n");
    CHECK(admin.raw({"CONFIG", "SET", "requirepass", ""}) == "+OK\r\n");
  }
}

// ---- A hostile primary ----------------------------------------------------------------------

TEST_CASE("replica link: an RDB announced over proto-max-bulk-len is refused", "[server][replica][hostile]") {
  hostile_primary([](FakePrimary& p) { (void)p.send(fullresync() + "$1099511627776\r\n"); });
}

TEST_CASE("replica link: an endless RDB header is refused", "[server][replica][hostile]") {
  hostile_primary([](FakePrimary& p) {
    (void)p.send(fullresync() + "$");
    (void)p.flood(std::string(16384, '7'), 64 * kMB, 10000);
  });
}

TEST_CASE("replica link: empty arguments of an endless multibulk stop at client-query-buffer-limit",
          "[server][replica][hostile]") {
  hostile_primary([](FakePrimary& p) {
    REQUIRE(p.send(sync_reply(snapshot_of(2))));
    (void)p.send("*2147483647\r\n");
    (void)p.flood(repeat("$0\r\n\r\n", 10000), 64 * kMB, 10000);
  });
}

TEST_CASE("replica link: a MULTI that never ends stops at client-query-buffer-limit", "[server][replica][hostile]") {
  hostile_primary([](FakePrimary& p) {
    REQUIRE(p.send(sync_reply(snapshot_of(2)) + "*1\r\n$5\r\nMULTI\r\n"));
    (void)p.flood(live::encode({"SET", "k", std::string(1000, 'v')}), 64 * kMB, 10000);
  });
}

TEST_CASE("replica link: half a snapshot, then silence, gives up within repl-timeout",
          "[server][replica][hostile][timeout]") {
  FakePrimary primary;
  Replica replica(primary, /*repl_timeout_s=*/1);
  REQUIRE(primary.accept_sync());
  const std::string snap = snapshot_of(100);
  REQUIRE(primary.send(fullresync() + "$" + std::to_string(snap.size()) + "\r\n" + snap.substr(0, snap.size() / 2)));
  CHECK(replica.info("master_sync_in_progress") == "1");
  CHECK(primary.closed_by_replica(8000));  // 1 s of repl-timeout, checked once a cron (100 ms)
  CHECK(std::stoull(replica.info("master_link_timeouts")) >= 1);
  CHECK(primary.accept_sync());  // and a new sync
  CHECK(replica.pong());
}

TEST_CASE("replica link: a stream that goes silent gives up within repl-timeout", "[server][replica][hostile][timeout]") {
  FakePrimary primary;
  Replica replica(primary, /*repl_timeout_s=*/1);
  REQUIRE(primary.accept_sync());
  REQUIRE(primary.send(sync_reply(snapshot_of(3))));
  CHECK(eventually([&] { return replica.info("master_link_status") == "up"; }));
  CHECK(primary.closed_by_replica(8000));
  CHECK(primary.accept_sync());
}

TEST_CASE("replica link: a flood from the primary neither stops the replica answering nor its SIGTERM",
          "[server][replica][hostile]") {
  FakePrimary primary;
  Replica replica(primary);
  const std::uint64_t rss_before = robust::proc_status_bytes(replica.pid(), "VmRSS");
  REQUIRE(primary.accept_sync());
  REQUIRE(primary.send(sync_reply(snapshot_of(2))));
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> sent{0};
  std::thread flooder([&] {
    const std::string chunk = repeat(live::encode({"SET", "k", "v"}) + live::encode({"PING"}), 2000);
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!stop && Clock::now() < until && primary.send(chunk)) sent += chunk.size();
  });
  // While the link is flooded, each PING is answered (within the connection's 10 s timeout).
  bool answered = true;
  for (int i = 0; i < 20 && answered; ++i) {
    try {
      answered = replica.pong();
    } catch (const std::exception&) {
      answered = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(answered);
  CHECK(replica.info("master_link_status") == "up");
  check_rss_growth(replica.pid(), rss_before);
  // SIGTERM during the flood: the server exits by itself (the harness waits 5 s, then kills).
  const int status = replica.server.process().stop();
  stop = true;
  flooder.join();
  INFO("flooded with " << sent.load() << " bytes");
  CHECK(sent.load() > 0);
  CHECK(WIFEXITED(status));
}

TEST_CASE("replica link: bytes after the checksum inside the RDB bulk are refused", "[server][replica][hostile]") {
  FakePrimary primary;
  Replica replica(primary);
  REQUIRE(primary.accept_sync());
  (void)primary.send(sync_reply(snapshot_of(2) + "trailing"));
  CHECK(primary.closed_by_replica(10000));
  CHECK(replica.admin.raw({"EXISTS", "k0"}) == ":0\r\n");
  CHECK(replica.info("master_syncs") == "0");
}

TEST_CASE("replica link: bytes after the RDB that are not a command drop the link", "[server][replica][hostile]") {
  // Redis sends no CRLF after the RDB: what follows is the stream, and "XY" is not a command.
  FakePrimary primary;
  Replica replica(primary);
  REQUIRE(primary.accept_sync());
  (void)primary.send(sync_reply(snapshot_of(2)) + "XY");
  CHECK(primary.closed_by_replica(10000));
  CHECK(replica.admin.raw({"EXISTS", "k0"}) == ":1\r\n");  // the RDB itself loaded
}

TEST_CASE("replica link: garbage that starts with NUL drops the link instead of leaving it up",
          "[server][replica][hostile]") {
  hostile_primary([](FakePrimary& p) {
    REQUIRE(p.send(sync_reply(snapshot_of(2))));
    (void)p.send(std::string("\0\0garbage\r\n", 11));
  });
}

// ---- Two real servers --------------------------------------------------------------------------

TEST_CASE("replica link: the primary's PINGs keep an idle link up past repl-timeout", "[server][replica][timeout]") {
  live::RespServer primary;
  live::Conn padmin(primary.port());
  REQUIRE(padmin.raw({"CONFIG", "SET", "repl-ping-replica-period", "1"}) == "+OK\r\n");
  REQUIRE(padmin.raw({"SET", "a", "1"}) == "+OK\r\n");
  live::RespServer replica;
  live::Conn radmin(replica.port());
  // Timeout at 4x the ping period: a loaded CI machine (sanitizers, two cores) may delay one PING.
  REQUIRE(radmin.raw({"CONFIG", "SET", "repl-timeout", "4"}) == "+OK\r\n");
  REQUIRE(radmin.raw({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())}) == "+OK\r\n");
  auto field = [&](const std::string& name) {
    return redistext::info_field(radmin.call({"INFO", "replication"}).str(), name);
  };
  REQUIRE(eventually([&] { return field("master_link_status") == "up"; }));
  std::this_thread::sleep_for(std::chrono::seconds(6));  // 1.5x repl-timeout, nothing written
  CHECK(field("master_link_status") == "up");
  CHECK(field("master_syncs") == "1");
  CHECK(field("master_link_timeouts") == "0");
  REQUIRE(padmin.raw({"SET", "b", "2"}) == "+OK\r\n");
  CHECK(eventually([&] { return radmin.raw({"GET", "b"}) == "$1\r\n2\r\n"; }));
}

TEST_CASE("primary: a replica that does not read is dropped at client-output-buffer-limit replica",
          "[server][replica][output]") {
  live::RespServer primary;
  live::Conn admin(primary.port());
  REQUIRE(admin.raw({"CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 0 0"}) == "+OK\r\n");
  const int fake_replica = live::connect_loopback(primary.port());
  REQUIRE(fake_replica >= 0);
  const std::string sync = live::encode({"SYNC"});
  REQUIRE(::send(fake_replica, sync.data(), sync.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(sync.size()));
  CHECK(eventually([&] { return robust::info_number(admin, "replication", "connected_slaves") == 1; }));
  // Writes whose stream the fake replica never reads: loopback buffers take a few MB, then
  // the primary's output to it grows to the hard limit.
  const std::string value(64 * 1024, 'x');
  for (int i = 0; i < 2000 && robust::info_number(admin, "replication", "connected_slaves") == 1; ++i) {
    REQUIRE(admin.raw({"SET", "k" + std::to_string(i % 10), value}) == "+OK\r\n");
  }
  CHECK(robust::info_number(admin, "replication", "connected_slaves") == 0);
  CHECK(robust::info_number(admin, "stats", "client_output_buffer_limit_disconnections") == 1);
  ::close(fake_replica);
}

TEST_CASE("primary: a full sync larger than client-output-buffer-limit replica does not count against it",
          "[server][replica][output]") {
  live::RespServer primary;
  live::Conn admin(primary.port());
  REQUIRE(admin.raw({"CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 0 0"}) == "+OK\r\n");
  // Values LZF cannot shrink (the RDB compresses what it can): 8 MB of RDB.
  std::mt19937_64 rng(11);
  std::string value(256 * 1024, '\0');
  for (char& ch : value) ch = static_cast<char>(rng());
  for (int i = 0; i < 32; ++i) REQUIRE(admin.raw({"SET", "big" + std::to_string(i), value}) == "+OK\r\n");
  const int fake_replica = live::connect_loopback(primary.port());
  REQUIRE(fake_replica >= 0);
  const std::string sync = live::encode({"SYNC"});
  REQUIRE(::send(fake_replica, sync.data(), sync.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(sync.size()));
  CHECK(eventually([&] { return robust::info_number(admin, "replication", "connected_slaves") == 1; }));
  // The snapshot (8 MB) is still mostly unsent (the fake has not read); a small write now
  // goes to the stream, which is far below the limit.
  REQUIRE(admin.raw({"SET", "after", "sync"}) == "+OK\r\n");
  CHECK(robust::info_number(admin, "replication", "connected_slaves") == 1);
  CHECK(robust::info_number(admin, "stats", "client_output_buffer_limit_disconnections") == 0);
  // It reads the whole snapshot and then the write.
  const std::string got = robust::read_some(fake_replica, 8 * kMB + 64 * 1024, 5000);
  CHECK(got.size() > 8 * kMB);
  CHECK(got.find("after") != std::string::npos);
  ::close(fake_replica);
}
