// server/replication.cpp: the server's replication (server.hpp has the design).
//
// REPLICAOF HOST PORT makes this server a replica of another expiring-server: it connects,
// sends SYNC, loads the snapshot the primary answers with (stale keys kept), then applies the
// primary's command stream (expiring/redis/replication.hpp) and never expires a key on its own
// (Options::replica). Clients' writes get -READONLY. When the link drops it reconnects every
// second, with a full sync each time. REPLICAOF NO ONE stops it. A primary answers SYNC with a
// snapshot taken at that moment (a stall of the loop proportional to the data; Redis forks for
// it) and streams every change to each replica, with a PING every repl-ping-replica-period
// (10 s) while idle. INFO replication.
//
// The link trusts nothing its primary sends (ReplicaLink): the snapshot is bounded by
// proto-max-bulk-len, the stream and an open MULTI by client-query-buffer-limit, framing is
// strict, and its buffers count in used_memory. At most 128 KB are read from the link per turn
// of the loop, so clients are served while a primary floods it. A link that brings no data for
// repl-timeout (60 s; while connecting, syncing or streaming) is dropped and made again. A
// replica whose output reaches client-output-buffer-limit replica is dropped by its primary.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace expiring::server {

// ---- Replication (redis/replication.hpp) ----

void Server::propagate_to_replicas() {
  if (repl_buf_.empty()) return;
  for (int fd : replicas_) {
    auto it = clients_.find(fd);
    if (it == clients_.end() || it->second->closing) continue;
    Client& r = *it->second;
    r.out.append(repl_buf_.data(), repl_buf_.size());
    account(r);
    if (over_output_limit(r)) {  // a replica that does not keep up: dropped (it will sync again)
      output_limit_reached(r);
      continue;
    }
    pending_.push_back(fd);
  }
  repl_buf_.clear();
}

void Server::start_replication(const std::string& host, int port) {
  stop_link();
  replica_ = true;
  store_.set_replica(true);
  link_.host = host;
  link_.port = port;
  connect_link();
}
void Server::stop_replication() {
  stop_link();
  replica_ = false;
  store_.set_replica(false);
}
void Server::stop_link() {
  if (link_.fd >= 0) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link_.fd, nullptr);
    ::close(link_.fd);
  }
  link_.fd = -1;
  link_.state = Link::idle;
  link_.reader.reset();
  account_link();
}
// The link's buffers are a client's buffers: they count in used_memory.
void Server::account_link() {
  const std::size_t now = link_.reader ? link_.reader->buffered_bytes() : 0;
  client_bytes_ = client_bytes_ - link_.counted + now;
  link_.counted = now;
}
expiring::redis::LinkLimits Server::link_limits() const {
  expiring::redis::LinkLimits l;
  l.max_bulk = exec_.options().proto_max_bulk_len;
  l.max_buffer = exec_.options().client_query_buffer_limit;
  return l;
}
void Server::link_failed(const std::string& why) {
  std::fprintf(stderr, "expiring-server: replication link to %s:%d: %s; retrying in 1 s\n", link_.host.c_str(),
               link_.port, why.c_str());
  stop_link();
  link_.retry_at_ms = steady_ms() + 1000;
}
void Server::connect_link() {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(link_.port));
  const std::string host = link_.host == "localhost" ? "127.0.0.1" : link_.host;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    link_failed("not an IPv4 address");
    return;
  }
  link_.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (link_.fd < 0) {
    link_failed(std::strerror(errno));
    return;
  }
  if (::connect(link_.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    link_failed(std::strerror(errno));
    return;
  }
  link_.state = Link::connecting;
  link_.last_io_ms = steady_ms();
  add_fd(link_.fd, EPOLLOUT);
}
// serverCron: a replica without its link tries again once a second; one whose primary has
// sent nothing for repl-timeout (while connecting, syncing or streaming: the primary PINGs
// an idle link) gives it up. A primary PINGs its replicas every repl-ping-replica-period.
void Server::replication_cron() {
  const std::int64_t now = steady_ms();
  if (replica_ && link_.state == Link::idle && now >= link_.retry_at_ms) connect_link();
  if (link_.state != Link::idle && now - link_.last_io_ms > exec_.options().repl_timeout * 1000) {
    ++link_.timeouts;
    const bool syncing = link_.state == Link::connected && link_.reader->syncing();
    link_failed(std::string(link_.state == Link::connecting ? "no connection"
                            : syncing                       ? "timeout receiving the snapshot"
                                                            : "timeout: no data nor PING") +
                " within repl-timeout (" + std::to_string(exec_.options().repl_timeout) + " s)");
  }
  if (!replicas_.empty() && now - last_replica_ping_ms_ >= exec_.options().repl_ping_replica_period * 1000) {
    last_replica_ping_ms_ = now;
    static const char kPing[] = "*1\r\n$4\r\nPING\r\n";
    repl_buf_.append(kPing, sizeof kPing - 1);
    propagate_to_replicas();
  }
}
void Server::link_event(std::uint32_t ev) {
  if (link_.state == Link::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(link_.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (ev & (EPOLLERR | EPOLLHUP)) != 0) {
      link_failed(err != 0 ? std::strerror(err) : "connection failed");
      return;
    }
    static const char kSync[] = "*1\r\n$4\r\nSYNC\r\n";
    if (::send(link_.fd, kSync, sizeof kSync - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof kSync - 1)) {
      link_failed("cannot send SYNC");
      return;
    }
    link_.state = Link::connected;
    link_.reader = std::make_unique<expiring::redis::ReplicaLink<Store>>(store_, link_limits());
    link_.last_io_ms = steady_ms();
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = link_.fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, link_.fd, &e);
    return;
  }
  // At most kLinkReadBudget bytes per event (level-triggered: the rest is read on the next
  // turn of the loop, after the clients), each chunk applied before the next is read.
  link_.reader->set_limits(link_limits());  // CONFIG SET may have changed them
  char buf[kReadChunk];
  for (std::size_t budget = kLinkReadBudget; budget != 0; budget -= std::min(budget, kReadChunk)) {
    const ssize_t n = ::recv(link_.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      link_failed(n == 0 ? "the primary closed the link" : std::strerror(errno));
      return;
    }
    link_.last_io_ms = steady_ms();
    const bool was_syncing = link_.reader->syncing();
    const bool ok = link_.reader->feed(buf, static_cast<std::size_t>(n));
    account_link();
    if (!ok) {
      link_failed(link_.reader->error());
      return;
    }
    if (was_syncing && !link_.reader->syncing()) {
      ++link_.syncs;
      std::fprintf(stderr, "expiring-server: synced %llu keys from %s:%d\n",
                   static_cast<unsigned long long>(link_.reader->synced().keys), link_.host.c_str(), link_.port);
    }
  }
}

}  // namespace expiring::server
