// server/migrate.cpp: MIGRATE, Redis's move of keys to another server (server.hpp has the
// rest of the design).
//
//   MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//           [AUTH2 username password] [KEYS key [key ...]]
//
// As Redis 7.0's: each key's DUMP payload goes to the target as RESTORE key <ttl> <payload>
// [REPLACE], with the key's remaining TTL in ms (0: none; a key that expired since the command
// began is left out), after AUTH and a SELECT of the database (skipped when the connection
// already has it), all in one write; then one reply line per command is read, and each key the
// target accepted is deleted here unless COPY. The deletion is an ordinary DEL of the store, so
// the log and the replicas get DEL and subscribers a `del` event, as Redis propagates MIGRATE.
// The I/O blocks the loop, each step at most `timeout` ms (0 or less: 1000), as Redis's does.
//
// Connections are kept by "host:port" with the database they last selected (at most 64; the
// cron closes one unused for more than 10 s; INFO stats migrate_cached_sockets counts them).
// A socket failure before the first RESTORE reply is retried once on a new connection, unless
// it was a timeout (a cached connection the target closed fails that way).
//
// Replies, with Redis's texts: OK; NOKEY when none of the keys exists; "IOERR error or timeout
// connecting to the client"; "IOERR error or timeout writing|reading to target instance";
// "ERR Target instance replied with error: <the first error of AUTH, SELECT or a RESTORE>" (the
// keys it accepted are still deleted here).
#include "server.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <expiring/rdb.hpp>

namespace expiring::server {

using expiring::redis::Reply;

namespace {

constexpr std::size_t kMaxCachedSockets = 64;  // Redis's MIGRATE_SOCKET_CACHE_ITEMS
constexpr std::int64_t kCachedSocketTtlMs = 10'000;  // ... MIGRATE_SOCKET_CACHE_TTL
constexpr std::size_t kMaxReplyLine = 1023;     // a reply line longer than this is cut (Redis's buffer)

// Waits until fd is ready for `events` or `deadline_ms` (steady) passes: 1 ready, 0 timed out,
// -1 failed.
int wait_for(int fd, short events, std::int64_t deadline_ms) {
  for (;;) {
    const std::int64_t left = deadline_ms - steady_ms();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    return 1;
  }
}

// A non-blocking TCP connection to host:port within timeout_ms, or -1 (timed_out says why).
int dial(const std::string& host, const std::string& port, std::int64_t timeout_ms, bool& timed_out) {
  timed_out = false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  const std::int64_t deadline = steady_ms() + timeout_ms;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      int err = errno;
      if (err == EINPROGRESS) {
        const int w = wait_for(fd, POLLOUT, deadline);
        socklen_t len = sizeof err;
        if (w == 0) timed_out = true;
        err = w == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : ETIMEDOUT;
      }
      if (err != 0) {
        ::close(fd);
        fd = -1;
      }
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timed_out = false;
  }
  return fd;
}

// After a send() or recv() of `n` <= 0 bytes: whether to try again (interrupted, or the socket
// became ready for `events` before the deadline). False when the peer closed, on an error, or
// at the deadline (then `timed_out`).
bool ready_again(int fd, ssize_t n, short events, std::int64_t deadline, bool& timed_out) {
  if (n < 0 && errno == EINTR) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    const int w = wait_for(fd, events, deadline);
    if (w == 1) return true;
    timed_out = w == 0;
  }
  return false;
}

// Writes all of `data`, 64 KB at a time, each within timeout_ms; false on a failure.
bool write_all(int fd, const std::string& data, std::int64_t timeout_ms, bool& timed_out) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::size_t chunk = std::min<std::size_t>(data.size() - pos, 64 * 1024);
    const std::int64_t deadline = steady_ms() + timeout_ms;
    std::size_t done = 0;
    while (done < chunk) {
      const ssize_t n = ::send(fd, data.data() + pos + done, chunk - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (!ready_again(fd, n, POLLOUT, deadline, timed_out)) {
        return false;
      }
    }
    pos += chunk;
  }
  return true;
}

}  // namespace

// One line of a reply (without its CRLF, at most kMaxReplyLine bytes kept) within timeout_ms;
// bytes after it stay in the connection's buffer. False on a failure or the end of the stream.
bool Server::MigrateSocket::read_line(std::string& line, std::int64_t timeout_ms, bool& timed_out) {
  const std::int64_t deadline = steady_ms() + timeout_ms;
  for (;;) {
    const std::size_t nl = in.find('\n');
    if (nl != std::string::npos) {
      line.assign(in, 0, nl > 0 && in[nl - 1] == '\r' ? nl - 1 : nl);
      if (line.size() > kMaxReplyLine) line.resize(kMaxReplyLine);
      in.erase(0, nl + 1);
      return true;
    }
    if (in.size() > (1u << 20)) return false;  // no line end in 1 MB: not a reply this reads
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, static_cast<std::size_t>(n));
    } else if (!ready_again(fd, n, POLLIN, deadline, timed_out)) {
      return false;  // closed, an error, or the deadline
    }
  }
}

// The cached connection to host:port, or a new one (nullptr when it cannot be made).
Server::MigrateSocket* Server::migrate_socket(const std::string& host, const std::string& port,
                                             std::int64_t timeout_ms) {
  const std::string name = host + ":" + port;
  auto it = migrate_sockets_.find(name);
  if (it != migrate_sockets_.end()) {
    it->second.last_use_ms = steady_ms();
    return &it->second;
  }
  if (migrate_sockets_.size() >= kMaxCachedSockets) {  // full: one goes (Redis drops one at random)
    ::close(migrate_sockets_.begin()->second.fd);
    migrate_sockets_.erase(migrate_sockets_.begin());
  }
  bool timed_out = false;
  const int fd = dial(host, port, timeout_ms, timed_out);
  if (fd < 0) return nullptr;
  MigrateSocket& s = migrate_sockets_[name];
  s.fd = fd;
  s.last_db = -1;
  s.last_use_ms = steady_ms();
  return &s;
}

void Server::close_migrate_socket(const std::string& host, const std::string& port) {
  auto it = migrate_sockets_.find(host + ":" + port);
  if (it == migrate_sockets_.end()) return;
  ::close(it->second.fd);
  migrate_sockets_.erase(it);
}

// The cron: connections unused for more than 10 s are closed.
void Server::migrate_cron() {
  const std::int64_t now = steady_ms();
  for (auto it = migrate_sockets_.begin(); it != migrate_sockets_.end();) {
    if (now - it->second.last_use_ms > kCachedSocketTtlMs) {
      ::close(it->second.fd);
      it = migrate_sockets_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::close_migrate_sockets() {
  for (auto& kv : migrate_sockets_) ::close(kv.second.fd);
  migrate_sockets_.clear();
}

Reply Server::migrate(const std::vector<std::string>& a, expiring::redis::Session& session) {
  namespace rd = expiring::redis::detail;
  bool copy = false, replace = false;
  const std::string* username = nullptr;
  const std::string* password = nullptr;
  std::size_t first_key = 3, num_keys = 1;
  for (std::size_t j = 6; j < a.size(); ++j) {
    const std::size_t more = a.size() - 1 - j;
    if (rd::iequals(a[j], "copy")) {
      copy = true;
    } else if (rd::iequals(a[j], "replace")) {
      replace = true;
    } else if (rd::iequals(a[j], "auth")) {
      if (more == 0) return Reply::error("ERR syntax error");
      password = &a[++j];
    } else if (rd::iequals(a[j], "auth2")) {
      if (more < 2) return Reply::error("ERR syntax error");
      username = &a[++j];
      password = &a[++j];
    } else if (rd::iequals(a[j], "keys")) {
      if (!a[3].empty()) {
        return Reply::error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
      }
      first_key = j + 1;
      num_keys = a.size() - j - 1;
      break;
    } else {
      return Reply::error("ERR syntax error");
    }
  }
  std::int64_t timeout = 0, dbid = 0;
  if (!expiring::redis::parse_int64(a[5], timeout) || !expiring::redis::parse_int64(a[4], dbid)) {
    return Reply::error("ERR value is not an integer or out of range");
  }
  if (timeout <= 0) timeout = 1000;

  // The keys that exist, with their payloads; none: NOKEY.
  Store& store = db(session.db);
  struct Item {
    const std::string* key;
    std::string payload;
  };
  std::vector<Item> items;
  for (std::size_t j = 0; j < num_keys; ++j) {
    const std::string& key = a[first_key + j];
    std::optional<std::string> payload = expiring::dump(store, key);
    if (payload) items.push_back({&key, std::move(*payload)});
  }
  if (items.empty()) return Reply::status("NOKEY");

  const std::string& host = a[1];
  const std::string& port = a[2];
  bool may_retry = true;
  for (;;) {
    MigrateSocket* cs = migrate_socket(host, port, timeout);
    if (cs == nullptr) return Reply::error("IOERR error or timeout connecting to the client");
    std::string cmd;
    auto put_bulk = [&](std::string_view s) { rd::put_bulk(cmd, s); };
    if (password != nullptr) {
      Reply::write_array_header(cmd, username != nullptr ? 3 : 2);
      put_bulk("AUTH");
      if (username != nullptr) put_bulk(*username);
      put_bulk(*password);
    }
    const bool select = cs->last_db != dbid;
    if (select) {
      Reply::write_array_header(cmd, 2);
      put_bulk("SELECT");
      put_bulk(std::to_string(dbid));
    }
    // The remaining TTL now (a key that expired since the lookup is left out).
    std::vector<const std::string*> sent;
    for (const Item& it : items) {
      const std::int64_t pttl = store.pttl(*it.key);
      if (pttl == -2) continue;
      Reply::write_array_header(cmd, replace ? 5 : 4);
      put_bulk("RESTORE");
      put_bulk(*it.key);
      put_bulk(std::to_string(pttl < 0 ? 0 : std::max<std::int64_t>(pttl, 1)));
      put_bulk(it.payload);
      if (replace) put_bulk("REPLACE");
      sent.push_back(it.key);
    }

    bool timed_out = false, write_error = false, socket_error = false;
    std::string auth_line, select_line, line, target_error;
    std::size_t replies = 0;
    if (!write_all(cs->fd, cmd, timeout, timed_out)) {
      write_error = true;
    } else if ((password != nullptr && !cs->read_line(auth_line, timeout, timed_out)) ||
               (select && !cs->read_line(select_line, timeout, timed_out))) {
      socket_error = true;
    } else {
      for (const std::string* key : sent) {
        if (!cs->read_line(line, timeout, timed_out)) {
          socket_error = true;
          break;
        }
        ++replies;
        const std::string* err = !auth_line.empty() && auth_line[0] == '-'       ? &auth_line
                                 : select && !select_line.empty() && select_line[0] == '-' ? &select_line
                                 : !line.empty() && line[0] == '-'                ? &line
                                                                                  : nullptr;
        if (err != nullptr) {
          if (target_error.empty()) {
            cs->last_db = -1;  // the SELECT may not have happened
            target_error = "ERR Target instance replied with error: " + err->substr(1);
          }
        } else if (!copy) {
          (void)store.del(*key);  // a DEL in the log and the replicas' stream, a `del` event
        }
      }
    }
    if (write_error || socket_error) {
      // Retried once on a new connection when nothing was applied yet and it did not time out
      // (a cached connection the target closed); otherwise IOERR, unless the target's error
      // came first.
      close_migrate_socket(host, port);
      if (may_retry && !timed_out && replies == 0) {
        may_retry = false;
        continue;
      }
      if (target_error.empty()) {
        return Reply::error(std::string("IOERR error or timeout ") + (write_error ? "writing" : "reading") +
                            " to target instance");
      }
    }
    if (!target_error.empty()) return Reply::error(target_error);
    cs->last_db = dbid;
    return Reply::ok();
  }
}

void Server::add_migrate_command() {
  exec_.add_command("migrate", -6, "write",
                    [this](const std::vector<std::string>& a, expiring::redis::Session& s) { return migrate(a, s); });
}

}  // namespace expiring::server
