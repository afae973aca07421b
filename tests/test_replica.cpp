// tests/test_replica.cpp: expiring::Replica (replica.hpp) against a primary written here, on
// loopback: Redis's handshake, a full sync, the stream read by two threads while the replica
// applies it, a cut connection continued with +CONTINUE from the offset the replica reached,
// stats() read from another thread, and stop(). Also run under ThreadSanitizer (the replica's
// thread, the readers and stats() share the store and the replica's state). The replica of a
// real redis-server is in tests/redis/test_redis_replication_live.cpp.
// expiring-test: one policy (the replica does not depend on the expiry index)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <expiring/concurrent_store.hpp>
#include <expiring/rdb.hpp>
#include <expiring/redis/value.hpp>
#include <expiring/replica.hpp>

#include "catch.hpp"

namespace {

using Replicated = expiring::ConcurrentStore<std::string, expiring::redis::Value>;
using expiring::redis::Value;

std::string command(std::initializer_list<std::string> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// One side of a loopback connection, with bounded waits.
class Peer {
 public:
  explicit Peer(int fd) : fd_(fd) {}
  ~Peer() { ::close(fd_); }
  bool send(const std::string& b) {
    std::size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  // The next command the replica sends (its name and arguments); empty after 10 s.
  std::vector<std::string> next() {
    std::vector<std::string> argv;
    for (int i = 0; i < 1000; ++i) {
      if (parser_.next(argv) == expiring::redis::RequestParser::Status::command) return argv;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return {};
      parser_.feed(buf, static_cast<std::size_t>(n));
    }
    return {};
  }

 private:
  int fd_;
  expiring::redis::RequestParser parser_;
};

class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }
  // The next connection within 10 s, or -1.
  int accept() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return -1;
    return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

const std::string kReplid(40, 'a');

std::string name_of(const std::vector<std::string>& argv) { return argv.empty() ? std::string() : argv[0]; }

// Redis's handshake from the primary's side: PING, REPLCONF listening-port, REPLCONF capa, each
// answered; true when the PSYNC that follows is `psync`.
bool handshake(Peer& p, const std::vector<std::string>& psync) {
  return p.next() == std::vector<std::string>{"PING"} && p.send("+PONG\r\n") && name_of(p.next()) == "REPLCONF" &&
         p.send("+OK\r\n") && name_of(p.next()) == "REPLCONF" && p.send("+OK\r\n") && p.next() == psync;
}

}  // namespace

TEST_CASE("replica: a full sync, a stream read by other threads, and a cut link continued from its offset",
          "[replica]") {
  Listener primary;
  Replicated store;
  // The primary's content at the sync: 100 keys, one hash.
  std::string rdb;
  {
    expiring::Store<std::string, Value> content;
    for (int i = 0; i < 100; ++i) (void)content.set("k" + std::to_string(i), Value(std::string("v0")));
    (void)content.hset("h", "f", "1");
    REQUIRE(expiring::save_rdb(content, rdb).ok());
  }
  std::atomic<std::int64_t> sent_offset{0};
  std::atomic<bool> primary_ok{true};
  std::thread primary_thread([&] {
    const auto fail = [&] { primary_ok = false; };
    {
      const int fd = primary.accept();
      if (fd < 0) return fail();
      Peer p(fd);
      if (!handshake(p, {"PSYNC", "?", "-1"})) return fail();
      if (!p.send("+FULLRESYNC " + kReplid + " 1000\r\n$" + std::to_string(rdb.size()) + "\r\n" + rdb)) return fail();
      std::int64_t offset = 1000;
      for (int i = 0; i < 2000; ++i) {
        const std::string c = i == 0 ? command({"SELECT", "0"})
                                     : command({"SET", "k" + std::to_string(i % 100), "v" + std::to_string(i)});
        if (!p.send(c)) return fail();
        offset += static_cast<std::int64_t>(c.size());
      }
      const std::string c = command({"HINCRBY", "h", "f", "41"});
      if (!p.send(c)) return fail();
      offset += static_cast<std::int64_t>(c.size());
      sent_offset = offset;
      // The replica acknowledges what it applied; then the connection is cut.
      for (int i = 0; i < 200; ++i) {
        const auto a = p.next();
        if (a.size() == 3 && a[0] == "REPLCONF" && a[1] == "ACK" && a[2] == std::to_string(offset)) break;
        if (a.empty()) return fail();
      }
    }
    // It reconnects and asks to continue from the byte after the last it applied.
    const int fd = primary.accept();
    if (fd < 0) return fail();
    Peer p(fd);
    if (!handshake(p, {"PSYNC", kReplid, std::to_string(sent_offset.load() + 1)})) return fail();
    std::string more = "+CONTINUE " + kReplid + "\r\n";
    more += command({"DEL", "k1"}) + command({"PEXPIREAT", "k2", "4102444800000"}) + command({"LPUSH", "l", "x"});
    if (!p.send(more)) return fail();
    for (int i = 0; i < 200; ++i) {  // until its ACK shows it applied them
      const auto a = p.next();
      if (a.size() == 3 && a[1] == "ACK" && std::stoll(a[2]) > sent_offset.load()) break;
      if (a.empty()) return fail();
    }
  });

  expiring::ReplicaOptions o;
  o.port = primary.port();
  o.backoff_min = std::chrono::milliseconds(10);
  expiring::Replica<Replicated> replica(store, o);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> seen{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      std::uint64_t n = 0;
      while (!done) {
        if (store.get("k" + std::to_string(n % 100))) ++seen;
        (void)replica.stats();
        ++n;
      }
    });
  }
  REQUIRE(replica.wait_until_synced(std::chrono::seconds(10)));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (replica.stats().partial_syncs == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  primary_thread.join();
  done = true;
  for (auto& t : readers) t.join();
  CHECK(primary_ok.load());
  const expiring::ReplicaStats st = replica.stats();
  CHECK(st.full_syncs == 1);
  CHECK(st.partial_syncs == 1);
  CHECK(st.connects == 2);
  CHECK(st.master_replid == kReplid);
  CHECK(st.applied == 1999 + 1 + 2);  // the SETs, HINCRBY, DEL, PEXPIREAT (SELECT is not a write)
  CHECK(st.skipped == 1);              // LPUSH
  CHECK(st.offset > sent_offset.load());
  CHECK(seen.load() > 0);
  CHECK(store.get("k99")->string() != nullptr);
  CHECK(*store.get("k99")->string() == "v1999");
  CHECK(store.hget("h", "f").value() == std::optional<std::string>("42"));
  CHECK_FALSE(store.get("k1").has_value());
  CHECK(store.pexpiretime("k2") == 4102444800000);
  replica.stop();
  CHECK_FALSE(replica.stats().link_up);
}
