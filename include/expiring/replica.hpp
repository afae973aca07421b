// expiring/replica.hpp: an in-process replica of a Redis primary (redis-server, or
// expiring-server).
//
//   expiring::ConcurrentStore<std::string, expiring::redis::Value> sessions;
//   expiring::ReplicaOptions o;
//   o.host = "10.0.0.5";
//   o.port = 6379;
//   expiring::Replica<decltype(sessions)> replica(sessions, o);   // a thread follows the primary
//   replica.wait_until_synced(std::chrono::seconds(10));
//   auto s = sessions.hget("session:42", "user");                // a local read, no round trip
//
// Design. The library connects to the primary as a Redis replica does (PING, AUTH,
// REPLCONF, PSYNC), loads its RDB into the store and applies its command stream, every
// deadline absolute as the primary sent it (redis/replication.hpp's ReplicaLink, redis/
// apply_stream.hpp's StreamApplier). The store is put in replica mode (Options::replica): it
// hides a key past its deadline from readers, as a Redis replica does, but keeps it until the
// primary's DEL, and expires or evicts nothing on its own. Readers read it from their own
// threads meanwhile: the store must take that (a ConcurrentStore), or its owner must keep them
// apart from the replica's thread.
//
// The thread connects (within connect_timeout), follows the primary, acknowledges its offset
// once a second (REPLCONF ACK; every 100 ms after a sync until the stream starts), and when the link fails (a closed connection, no byte for
// `timeout` while the primary PINGs every 10 s, a stream it refuses) connects again after a
// backoff that doubles from backoff_min to backoff_max, asking to continue from the offset it
// reached (+CONTINUE: no RDB again) or, failing that, syncing in full. stats() tells its lag:
// the offset applied, the time since the last byte, the syncs and reconnections.
//
// POSIX only (sockets, poll). The destructor stops the thread (within ~100 ms) and leaves the
// store as it was, still in replica mode.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "detail/quiet_thread.hpp"
#include "redis/replication.hpp"

namespace expiring {

// Where the primary is and how to follow it.
struct ReplicaOptions {
  std::string host = "127.0.0.1";  // a name or an IPv4/IPv6 address
  int port = 6379;                 // the primary's port
  std::string password;            // the primary's requirepass (Redis's masterauth)
  std::int64_t db = 0;             // the database followed (SELECT number)
  int listening_port = 0;          // what the primary's INFO shows for this replica
  redis::LinkLimits limits;        // the most the primary can make it hold
  std::chrono::milliseconds connect_timeout{2000};  // the wait for each address the host resolves to
  std::chrono::milliseconds timeout{60000};  // Redis's repl-timeout
  std::chrono::milliseconds backoff_min{100};   // the first wait before reconnecting (reset by a sync)
  std::chrono::milliseconds backoff_max{5000};  // each failed link doubles the wait, up to this
};

// What the replica has done, as of the call.
struct ReplicaStats {
  bool link_up = false;            // synced and streaming
  std::string master_replid;       // the primary's replication ID
  std::int64_t offset = -1;        // the primary's offset of the last byte applied
  std::int64_t ms_since_last_io = -1;  // since the last byte from the primary, or the connect (-1: never)
  std::uint64_t full_syncs = 0;    // RDBs loaded
  std::uint64_t partial_syncs = 0; // reconnections the primary continued (+CONTINUE)
  std::uint64_t connects = 0;      // connections made
  std::uint64_t applied = 0;       // stream commands applied, since the replica started
  std::uint64_t skipped = 0;       // ... not followed (other types, other databases)
  std::uint64_t refused = 0;       // ... the store refused
  std::string last_error;          // why the last link failed ("" while none did)
};

// Follows a Redis primary into `store` from a thread of its own, from construction until
// stop() or destruction (see the file's comment). Store has std::string keys and, to follow
// both strings and hashes, redis::Value values; a ConcurrentStore lets other threads read it
// meanwhile. Not copyable.
template <class Store>
class Replica {
 public:
  // Puts `store` in replica mode and starts following the primary.
  Replica(Store& store, ReplicaOptions options) : store_(store), options_(std::move(options)) {
    store_.set_replica(true);
    thread_ = detail::quiet_thread([this] { run(); });
  }
  // Stops the thread, as stop() does; the store stays in replica mode.
  ~Replica() { stop(); }

  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // Stops the thread (the connection closes); idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // What the replica has done, as of the call; any thread may ask.
  ReplicaStats stats() const {
    std::lock_guard<std::mutex> l(mu_);
    ReplicaStats s = stats_;
    s.ms_since_last_io = last_io_ms_ < 0 ? -1 : now_ms() - last_io_ms_;
    return s;
  }

  // Waits until the first sync is done and the stream flows; false after `timeout`.
  template <class Rep, class Period>
  bool wait_until_synced(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return stats_.link_up || stop_; }) && stats_.link_up;
  }

 private:
  using Link = redis::ReplicaLink<Store>;

  static std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  bool stopping() const {
    std::lock_guard<std::mutex> l(mu_);
    return stop_;
  }
  // Sleeps `ms` or until stop(); false when stopped.
  bool pause(std::int64_t ms) {
    std::unique_lock<std::mutex> l(mu_);
    return !cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return stop_; });
  }

  void run() {
    std::int64_t backoff = options_.backoff_min.count();
    while (!stopping()) {
      const std::string why = follow_once();
      {
        std::lock_guard<std::mutex> l(mu_);
        stats_.link_up = false;
        if (!why.empty()) stats_.last_error = why;
      }
      if (synced_this_time_) backoff = options_.backoff_min.count();
      if (!pause(backoff)) break;
      backoff = std::min<std::int64_t>(std::max<std::int64_t>(1, backoff * 2), options_.backoff_max.count());
    }
  }

  // One connection, followed until it fails or stop(); why it ended ("" for stop()).
  std::string follow_once() {
    synced_this_time_ = false;
    std::string why;
    const int fd = connect_to(why);
    if (fd < 0) return why;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    {
      std::lock_guard<std::mutex> l(mu_);
      ++stats_.connects;
    }
    redis::LinkStart start;
    start.listening_port = options_.listening_port;
    start.password = options_.password;
    start.replid = replid_;
    start.offset = offset_;
    start.db = options_.db;
    Link link(store_, options_.limits, start);
    struct Tally {  // what this link applied, added to the replica's totals when it ends
      Replica& r;
      const Link& link;
      ~Tally() {
        std::lock_guard<std::mutex> l(r.mu_);
        r.applied_base_ += link.applier().applied();
        r.skipped_base_ += link.applier().skipped();
        r.refused_base_ += link.applier().refused();
      }
    } tally{*this, link};
    std::string out;
    std::int64_t last_io = now_ms(), last_ack = last_io;
    {
      std::lock_guard<std::mutex> l(mu_);
      last_io_ms_ = last_io;
    }
    bool was_syncing = true;
    std::int64_t synced_offset = -2;  // the offset the last sync left (none yet: -2)
    char buf[64 * 1024];
    while (!stopping()) {
      out += link.outbox();
      link.outbox().clear();
      while (!out.empty()) {
        const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) return std::string("cannot write to the primary: ") + std::strerror(errno);
        out.erase(0, static_cast<std::size_t>(n));
      }
      pollfd p{fd, static_cast<short>(POLLIN | (out.empty() ? 0 : POLLOUT)), 0};
      const int ready = ::poll(&p, 1, 100);
      const std::int64_t now = now_ms();
      if (ready < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
      if (ready > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) return "the primary closed the link";
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return std::strerror(errno);
        if (n > 0) {
          last_io = now;
          if (!link.feed(buf, static_cast<std::size_t>(n))) {
            note(link, was_syncing, last_io);
            return link.error();
          }
          note(link, was_syncing, last_io);
          if (was_syncing && !link.syncing()) synced_offset = link.offset();
          was_syncing = link.syncing();
        }
      }
      if (now - last_io > options_.timeout.count()) {
        return "no data from the primary for " + std::to_string(options_.timeout.count()) + " ms";
      }
      // ACK once a second; ten times a second while nothing has come after a sync: a
      // primary that sent its RDB from a socket starts the stream on an ACK that arrives
      // after it has seen the transfer end, which its first ACK may precede.
      const bool quiet_since_sync = link.offset() == synced_offset;
      if (!link.syncing() && now - last_ack >= (quiet_since_sync ? 100 : 1000)) {
        last_ack = now;
        link.ack();
      }
    }
    return "";
  }

  // Publishes what the link reached (under the lock, for stats()).
  void note(const Link& link, bool was_syncing, std::int64_t last_io) {
    const bool up = link.state() == Link::State::streaming;
    if (up) {
      replid_ = link.replid();
      offset_ = link.offset();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      last_io_ms_ = last_io;
      if (up && was_syncing) {
        synced_this_time_ = true;
        ++(link.continued() ? stats_.partial_syncs : stats_.full_syncs);
      }
      stats_.link_up = up;
      stats_.master_replid = link.replid();
      stats_.offset = link.offset();
      const auto& a = link.applier();
      stats_.applied = applied_base_ + a.applied();
      stats_.skipped = skipped_base_ + a.skipped();
      stats_.refused = refused_base_ + a.refused();
    }
    if (up && was_syncing) cv_.notify_all();
  }

  // A connected, non-blocking socket to the primary, or -1 with why.
  int connect_to(std::string& why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(options_.port);
    if (const int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
      why = "cannot resolve '" + options_.host + "': " + ::gai_strerror(rc);
      return -1;
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, ::freeaddrinfo);
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
        why = std::strerror(errno);
        ::close(fd);
        continue;
      }
      pollfd p{fd, POLLOUT, 0};
      // poll()'s int ms: a negative timeout (which poll() takes as none) waits not at all.
      const auto wait_ms = std::clamp<std::int64_t>(options_.connect_timeout.count(), 0, INT_MAX);
      const int ready = ::poll(&p, 1, static_cast<int>(wait_ms));
      int err = 0;
      socklen_t len = sizeof err;
      if (ready == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (ready == 1 && err == 0) return fd;
      why = ready == 1 ? std::strerror(err) : "connect timed out";
      ::close(fd);
    }
    why = "cannot connect to " + options_.host + ":" + port + ": " + why;
    return -1;
  }

  Store& store_;
  const ReplicaOptions options_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  ReplicaStats stats_;
  std::int64_t last_io_ms_ = -1;
  std::uint64_t applied_base_ = 0, skipped_base_ = 0, refused_base_ = 0;  // of links that ended (mu_)
  // The thread's own (stats_ mirrors them under mu_).
  std::string replid_ = "?";
  std::int64_t offset_ = -1;
  bool synced_this_time_ = false;
};

}  // namespace expiring
