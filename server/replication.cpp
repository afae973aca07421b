// server/replication.cpp: the server's replication (server.hpp has the design), in Redis's
// protocol, so that either side may be a redis-server.
//
// Primary. A replica connects as a client and sends REPLCONF listening-port, REPLCONF capa
// (both +OK), then PSYNC <replid> <offset>. When the replication ID is this server's and the
// backlog (the stream's last repl-backlog-size bytes) still holds that offset, it answers
// +CONTINUE <replid> and the bytes after it; otherwise +FULLRESYNC <replid> <offset> and the
// RDB of this moment as `$<length>\r\n<bytes>`, no CRLF after it (written by the loop, a stall
// proportional to the data; Redis forks for it). SYNC (an old replica, redis-cli --rdb) gets
// the RDB alone. From then on the connection carries the stream one way: the store's change
// feed as Redis 7 propagates it (redis/replication.hpp: every TTL absolute, expiries as DEL),
// a SELECT 0 before the first record after a full sync, and a PING every
// repl-ping-replica-period; what the replica sends is not answered, and its REPLCONF ACK
// <offset> is kept for INFO. Every byte streamed counts in master_repl_offset.
//
// Replica. REPLICAOF HOST PORT makes this server a replica of a redis-server or another
// expiring-server: ReplicaLink (redis/replication.hpp) does Redis's handshake, loads the RDB
// (stale keys kept) and applies the stream as a Redis replica does (apply_stream.hpp); the
// server never expires a key on its own (Options::replica), and clients' writes get -READONLY.
// It sends REPLCONF ACK <offset> once a second (every cron after a sync until the stream
// starts). When the link drops it reconnects every second
// and asks to continue from the offset it reached (PSYNC <replid> <offset + 1>); the primary
// answers +CONTINUE, or a full sync. REPLICAOF NO ONE stops it, and the server takes a new
// replication ID (its replicas then sync in full). INFO replication.
//
// The link trusts nothing its primary sends (ReplicaLink): the RDB is bounded by
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
#include <random>
#include <cstdio>
#include <cstring>

#include <expiring/rdb.hpp>

namespace expiring::server {

// ---- Replication (redis/replication.hpp) ----

// ---- The primary's side ----

// A replication ID: 40 hexadecimal digits, new at start and when a replica becomes a primary.
void Server::new_replid() {
  std::random_device rd;
  std::mt19937_64 gen((std::uint64_t{rd()} << 32) ^ rd() ^ static_cast<std::uint64_t>(steady_ms()));
  static const char kHex[] = "0123456789abcdef";
  replid_.clear();
  for (int i = 0; i < 40; ++i) replid_.push_back(kHex[gen() & 15]);
  master_offset_ = 0;
  backlog_.clear();
  backlog_first_ = 1;
}

// Bytes of the stream: to the replicas' buffer, the offset and the backlog.
void Server::add_to_stream(const char* data, std::size_t n) {
  repl_buf_.append(data, n);
  master_offset_ += static_cast<std::int64_t>(n);
  backlog_.append(data, n);
  const std::size_t keep = std::max<std::size_t>(exec_.options().repl_backlog_size, 1);
  if (backlog_.size() > 2 * keep) {  // trimmed in steps, so each byte moves O(1) times
    const std::size_t drop = backlog_.size() - keep;
    backlog_.erase(0, drop);
    backlog_first_ += static_cast<std::int64_t>(drop);
  }
}

bool Server::replication_command(Client& c) {
  using expiring::redis::detail::iequals;
  const std::vector<std::string>& a = c.argv;
  if (iequals(a[0], "replconf")) {
    if (a.size() % 2 == 0) {
      Reply::error("ERR wrong number of arguments for 'replconf' command").write_resp(c.out);
      return true;
    }
    for (std::size_t i = 1; i + 1 < a.size(); i += 2) {
      std::int64_t v = 0;
      if (iequals(a[i], "ack")) {  // a replica's acknowledgement: never answered
        if (expiring::redis::parse_int64(a[i + 1], v)) {
          c.ack_offset = v;
          c.ack_ms = steady_ms();
        }
        return true;
      }
      if (iequals(a[i], "getack")) return true;
      if (iequals(a[i], "listening-port")) {
        if (!expiring::redis::parse_int64(a[i + 1], v) || v < 0 || v > 65535) {
          Reply::error("ERR value is not an integer or out of range").write_resp(c.out);
          return true;
        }
        c.replica_port = static_cast<int>(v);
      }
      // capa eof / psync2, ip-address, rdb-only ...: taken as given.
    }
    if (replicas_.count(c.fd) == 0) Reply::ok().write_resp(c.out);
    return true;
  }
  const bool psync = iequals(a[0], "psync");
  if (!psync && !iequals(a[0], "sync")) return false;
  if (replicas_.count(c.fd) != 0) return true;  // already one
  if (replica_ && !(link_.state == Link::connected && !link_.reader->syncing())) {
    Reply::error("NOMASTERLINK Can't SYNC while not connected with my master").write_resp(c.out);
    return true;
  }
  if (psync && a.size() != 3) {
    Reply::error("ERR wrong number of arguments for 'psync' command").write_resp(c.out);
    return true;
  }
  std::int64_t from = 0;
  if (psync && a[1] == replid_ && expiring::redis::parse_int64(a[2], from) && from >= backlog_first_ &&
      from <= master_offset_ + 1) {
    // Continue: the backlog holds every byte the replica has not seen.
    propagate_to_replicas();
    const std::string line = "+CONTINUE " + replid_ + "\r\n";
    c.out.append(line.data(), line.size());
    const auto skip = static_cast<std::size_t>(from - backlog_first_);
    c.out.append(backlog_.data() + skip, backlog_.size() - skip);
    replicas_.insert(c.fd);
    ++sync_partial_ok_;
    std::fprintf(stderr, "expiring-server: replica %d continues from offset %lld\n", c.replica_port,
                 static_cast<long long>(from));
    return true;
  }
  if (psync && a[1] != "?") ++sync_partial_err_;  // it asked to continue and cannot
  attach_replica(c, psync ? 0 : -1);
  return true;
}

// A full sync: the RDB of this moment, then the stream from the offset it stands for.
void Server::attach_replica(Client& c, std::int64_t psync) {
  propagate_to_replicas();  // what the others have not been sent yet is in the RDB
  std::string rdb;
  const auto r = expiring::save_rdb_databases(dbs(), rdb);
  if (!r.ok()) {
    Reply::error("ERR " + r.error().message).write_resp(c.out);
    return;
  }
  const std::size_t before = c.out.size();
  const std::size_t allocated_before = c.out.allocated();
  if (psync == 0) {
    const std::string line = "+FULLRESYNC " + replid_ + " " + std::to_string(master_offset_) + "\r\n";
    c.out.append(line.data(), line.size());
  }
  const std::string header = "$" + std::to_string(rdb.size()) + "\r\n";
  c.out.append(header.data(), header.size());
  c.out.append(rdb.data(), rdb.size());  // no CRLF after it, as Redis sends it
  c.sync_unsent = c.out.size() - before;
  c.sync_allocated = c.out.allocated() - allocated_before;
  replicas_.insert(c.fd);
  streaming_ = true;
  stream_db_ = -1;
  ++sync_full_;
  std::fprintf(stderr, "expiring-server: full sync of %llu keys (%zu bytes) to replica %d at offset %lld\n",
               static_cast<unsigned long long>(r->keys), rdb.size(), c.replica_port, static_cast<long long>(master_offset_));
}

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
  if (host != link_.host || port != link_.port) {  // another primary: nothing to continue
    link_.replid = "?";
    link_.offset = -1;
    link_.db = 0;
  }
  stop_link();
  replica_ = true;
  for (Store* d : dbs()) d->set_replica(true);
  link_.host = host;
  link_.port = port;
  connect_link();
}
void Server::stop_replication() {
  stop_link();
  replica_ = false;
  for (Store* d : dbs()) d->set_replica(false);
  new_replid();  // a new history: replicas of this server sync in full
}
void Server::stop_link() {
  if (link_.fd >= 0) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link_.fd, nullptr);
    ::close(link_.fd);
  }
  // What the link reached, for the next PSYNC.
  if (link_.reader && link_.reader->state() == expiring::redis::ReplicaLink<Store>::State::streaming) {
    link_.replid = link_.reader->replid();
    link_.offset = link_.reader->offset();
    link_.db = link_.reader->selected_db();
  }
  link_.fd = -1;
  link_.state = Link::idle;
  link_.reader.reset();
  link_.out.clear();
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
// Sends what the link has to say (the handshake's commands, ACKs); what the socket does not
// take now waits for EPOLLOUT.
void Server::flush_link() {
  if (link_.state != Link::connected) return;
  link_.out += link_.reader->outbox();
  link_.reader->outbox().clear();
  while (!link_.out.empty()) {
    const ssize_t n = ::send(link_.fd, link_.out.data(), link_.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      link_failed(std::string("cannot write to the primary: ") + std::strerror(errno));
      return;
    }
    link_.out.erase(0, static_cast<std::size_t>(n));
  }
  epoll_event e{};
  e.events = EPOLLIN | (link_.out.empty() ? 0u : static_cast<std::uint32_t>(EPOLLOUT));
  e.data.fd = link_.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, link_.fd, &e);
}
// serverCron: a replica without its link tries again once a second; one whose primary has
// sent nothing for repl-timeout (while connecting, syncing or streaming: the primary PINGs
// an idle link) gives it up; one that streams acknowledges its offset once a second. A
// primary PINGs its replicas every repl-ping-replica-period.
void Server::replication_cron() {
  const std::int64_t now = steady_ms();
  if (replica_ && link_.state == Link::idle && now >= link_.retry_at_ms) connect_link();
  if (link_.state != Link::idle && now - link_.last_io_ms > exec_.options().repl_timeout * 1000) {
    ++link_.timeouts;
    const bool syncing = link_.state == Link::connected && link_.reader->syncing();
    link_failed(std::string(link_.state == Link::connecting ? "no connection"
                            : syncing                       ? "timeout receiving the RDB"
                                                            : "timeout: no data nor PING") +
                " within repl-timeout (" + std::to_string(exec_.options().repl_timeout) + " s)");
  }
  // ACK once a second; every cron while nothing has come since a sync (a diskless primary
  // starts the stream only on an ACK that arrives after it has seen the transfer end).
  const bool quiet_since_sync = link_.state == Link::connected && link_.reader->offset() == link_.synced_offset;
  if (link_.state == Link::connected && now - link_.last_ack_ms >= (quiet_since_sync ? 100 : 1000)) {
    link_.last_ack_ms = now;
    link_.reader->ack();
    flush_link();
  }
  if (!replicas_.empty() && now - last_replica_ping_ms_ >= exec_.options().repl_ping_replica_period * 1000) {
    last_replica_ping_ms_ = now;
    static const char kPing[] = "*1\r\n$4\r\nPING\r\n";
    add_to_stream(kPing, sizeof kPing - 1);
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
    link_.state = Link::connected;
    expiring::redis::LinkStart start;
    start.listening_port = port_;
    start.replid = link_.replid;
    start.offset = link_.offset;
    start.db = link_.db;
    link_.reader = std::make_unique<expiring::redis::ReplicaLink<Store>>(dbs(), link_limits(), start);
    // The primary's PUBLISH reaches this replica's subscribers (and its own replicas), as Redis's.
    link_.reader->set_publish_handler([this](const std::string& channel, const std::string& message) {
      (void)exec_.publish(channel, message);
      propagate_publish(channel, message, -1);
    });
    link_.last_io_ms = steady_ms();
    link_.last_ack_ms = link_.last_io_ms;
    flush_link();
    return;
  }
  if ((ev & EPOLLOUT) != 0) {
    flush_link();
    if (link_.state != Link::connected) return;
  }
  if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) return;
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
    sync_clock();
    const bool ok = link_.reader->feed(buf, static_cast<std::size_t>(n));
    account_link();
    if (!ok) {
      link_failed(link_.reader->error());
      return;
    }
    if (was_syncing && !link_.reader->syncing()) {
      link_.synced_offset = link_.reader->offset();
      if (link_.reader->continued()) {
        ++link_.partial_syncs;
        std::fprintf(stderr, "expiring-server: continuing the stream of %s:%d from offset %lld\n", link_.host.c_str(),
                     link_.port, static_cast<long long>(link_.reader->offset()));
      } else {
        ++link_.syncs;
        std::fprintf(stderr, "expiring-server: synced %llu keys from %s:%d\n",
                     static_cast<unsigned long long>(link_.reader->synced().keys), link_.host.c_str(), link_.port);
      }
    }
    flush_link();
    if (link_.state != Link::connected) return;
  }
}

}  // namespace expiring::server
