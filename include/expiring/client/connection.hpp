// expiring/client/connection.hpp: one blocking connection to one Redis node, over hiredis.
//
// hiredis 0.14 (Debian 12's libhiredis-dev) is used for its RESP2 parser and its blocking
// socket code, and for nothing else: the rules below are written against that version's
// behaviour, which differs from hiredis 1.x in ways that matter here.
//
//   * A connection is set up in full every time it is opened: TCP connect within
//     connect_timeout, SO_RCVTIMEO/SO_SNDTIMEO = command_timeout (hiredis's own connect
//     timeout is not a command timeout), keepalive, AUTH [user] password, SELECT db.
//     Reconnecting is opening a new Connection; hiredis's redisReconnect() would drop the
//     timeouts, AUTH and SELECT.
//   * Any transport error (hiredis sets c->err) kills the connection: hiredis's errors are
//     sticky, and a reply that arrives after a timeout would otherwise be read as the answer
//     to the next command. broken() then says so and the pool destroys it.
//   * 0.14 has no timeout error code: a timeout is REDIS_ERR_IO with errno EAGAIN (a command)
//     or ETIMEDOUT (a connect). Errors are classified into Errc::timeout / Errc::io_error
//     right where they happen, with hiredis's text kept.
//   * 0.14 writes with write(), so writing to a socket the server has closed raises SIGPIPE,
//     which kills a process by default. Unless told that the program ignores SIGPIPE, every
//     round trip blocks SIGPIPE in the calling thread and discards one raised meanwhile.
//   * Commands are formatted here as RESP (binary-safe: keys and values are bytes, never a
//     printf format) and handed to hiredis as formatted bytes; a pipeline is several of them
//     appended before the first reply is read.
#pragma once

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "key_slot.hpp"

static_assert((HIREDIS_MAJOR == 0 && HIREDIS_MINOR >= 14) || HIREDIS_MAJOR >= 1,
              "expiring::RedisStore needs hiredis 0.14 or later");

namespace expiring {

// What RedisStore throws when the network or the server fails a call in a way the in-process
// store never does (the Errc values from io_error on). what() is hiredis's or Redis's text,
// prefixed with the node's address for transport errors.
class RedisError : public std::runtime_error {
 public:
  // An error of kind `code` whose what() is `message`.
  RedisError(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  // The kind of failure: an Errc, usually one from Errc::io_error on; what() has the details.
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

namespace client {

// host:port of one node.
struct Endpoint {
  std::string host = "127.0.0.1";  // a host name or an IP address (IPv6 without brackets)
  int port = 6379;                 // the TCP port
  // "host:port", for messages.
  std::string str() const { return host + ":" + std::to_string(port); }
  // The same port and the same host text: "localhost" and "127.0.0.1" are different nodes.
  friend bool operator==(const Endpoint& a, const Endpoint& b) { return a.port == b.port && a.host == b.host; }
};

// What a connection is opened with (a part of RedisOptions).
struct ConnectionSettings {
  // The TCP connect's limit. A value <= 0 is taken as 1 ms, not as no limit.
  std::chrono::milliseconds connect_timeout{1000};
  // The socket's read and write timeouts (SO_RCVTIMEO, SO_SNDTIMEO): how long one read or
  // write of a command may block. A value <= 0 is taken as 1 ms, not as no limit.
  std::chrono::milliseconds command_timeout{1000};

  std::string user;      // AUTH user password (Redis 6 ACL); empty: AUTH password
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECT db when not 0 (standalone only)
  bool keepalive = true;      // TCP keepalive on the socket (hiredis's redisEnableKeepAlive)
  bool block_sigpipe = true;  // SigpipeGuard around each read(); false when SIGPIPE is ignored
};

// ---- Commands ----------------------------------------------------------------------------

// One command, formatted as a RESP array of bulk strings as its arguments are added. Keys
// added with key() are remembered for routing: slot() is their common slot, or -1 with no
// key; crossslot() says two keys hash to different slots.
class Cmd {
 public:
  // A command named `name` ("GET"), its first argument, with no other argument yet.
  explicit Cmd(std::string_view name) { arg(name); }

  // Appends an argument that is not a key, its bytes as they are. Returns *this.
  Cmd& arg(std::string_view a) {
    body_ += '$';
    append_number(body_, static_cast<std::int64_t>(a.size()));
    body_ += "\r\n";
    body_.append(a.data(), a.size());
    body_ += "\r\n";
    ++argc_;
    return *this;
  }
  // Appends an integer argument as decimal text ("-7"). Returns *this.
  Cmd& arg(std::int64_t v) {
    char buf[24];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
    return arg(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  }
  // A key: an argument that also decides the command's slot.
  Cmd& key(std::string_view k) {
    const int s = key_slot(k);
    if (slot_ < 0) {
      slot_ = s;
    } else if (s != slot_) {
      crossslot_ = true;
    }
    return arg(k);
  }

  // The slot of the first key added with key(), 0..16383, or -1 when none was.
  int slot() const noexcept { return slot_; }
  // Whether two keys added with key() hash to different slots (a cluster answers CROSSSLOT).
  bool crossslot() const noexcept { return crossslot_; }
  // The number of arguments, the name included.
  std::size_t argc() const noexcept { return argc_; }
  // The command's first argument, for messages.
  std::string_view name() const {
    const std::size_t start = body_.find("\r\n") + 2;
    return std::string_view(body_).substr(start, body_.find("\r\n", start) - start);
  }
  // The RESP bytes: "*<argc>\r\n" then the body.
  void format_into(std::string& out) const {
    out += '*';
    append_number(out, static_cast<std::int64_t>(argc_));
    out += "\r\n";
    out += body_;
  }

 private:
  static void append_number(std::string& s, std::int64_t v) {
    char buf[24];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }

  std::string body_;
  std::size_t argc_ = 0;
  int slot_ = -1;
  bool crossslot_ = false;
};

// ---- Replies -----------------------------------------------------------------------------

// The deleter of Reply.
struct ReplyDeleter {
  // Frees `r` and every element in it (hiredis's freeReplyObject).
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
// A reply from hiredis, owned: freed with its elements when it goes out of scope.
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Whether `r` is an error reply ("-ERR ...", REDIS_REPLY_ERROR).
inline bool is_error(const redisReply& r) noexcept { return r.type == REDIS_REPLY_ERROR; }
// The bytes of a string, status or error reply, as a view into `r`; empty for a reply with no
// string (an integer, an array, nil).
inline std::string_view text(const redisReply& r) noexcept {
  return r.str == nullptr ? std::string_view() : std::string_view(r.str, r.len);
}
// Whether `s` begins with `prefix` (std::string_view::starts_with is C++20).
inline bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}

// The Errc of an error reply's text, by prefix (an error raised inside a script carries a
// suffix naming the script). Those before Errc::io_error are the contract's own errors, which
// a Result carries; the rest are thrown.
inline Errc classify_error_reply(std::string_view t) noexcept {
  if (starts_with(t, "ERR invalid expire time, must be >= 0")) return Errc::negative_expire_time;  // a field's
  if (starts_with(t, "ERR invalid expire time")) return Errc::invalid_expire_time;
  if (starts_with(t, "ERR NX and XX, GT or LT options at the same time are not compatible")) return Errc::nx_and_xx_gt_lt;
  if (starts_with(t, "ERR GT and LT options at the same time are not compatible")) return Errc::gt_and_lt;
  if (starts_with(t, "ERR no such key")) return Errc::no_such_key;
  if (starts_with(t, "ERR source and destination objects are the same")) return Errc::same_key;
  if (starts_with(t, "OOM ")) return Errc::out_of_memory;
  if (starts_with(t, "ERR increment or decrement would overflow")) return Errc::overflow;
  if (starts_with(t, "ERR hash value is not an integer")) return Errc::not_an_integer;
  if (starts_with(t, "ERR hash value is not a float")) return Errc::not_a_float;
  if (starts_with(t, "ERR increment would produce NaN or Infinity")) return Errc::overflow;
  if (starts_with(t, "WRONGTYPE")) return Errc::wrong_type;
  if (starts_with(t, "CROSSSLOT")) return Errc::crossslot;
  if (starts_with(t, "CLUSTERDOWN")) return Errc::cluster_down;
  if (starts_with(t, "MOVED ") || starts_with(t, "ASK ") || starts_with(t, "TRYAGAIN")) return Errc::too_many_redirects;
  if (starts_with(t, "NOAUTH") || starts_with(t, "WRONGPASS") || starts_with(t, "NOPERM")) return Errc::auth_failed;
  return Errc::server_error;
}
inline bool is_contract_error(Errc e) noexcept { return e < Errc::io_error; }  // (wrong_type is thrown)

// ---- SIGPIPE -----------------------------------------------------------------------------

// Blocks SIGPIPE in this thread for its lifetime and discards one raised meanwhile (by a
// write to a closed socket). A SIGPIPE that was pending or blocked before is left alone.
class SigpipeGuard {
 public:
  // Blocks SIGPIPE when `on`; with `on` false (the program ignores SIGPIPE), does nothing.
  explicit SigpipeGuard(bool on) noexcept : on_(on) {
    if (!on_) return;
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    was_blocked_ = sigismember(&old_, SIGPIPE) == 1;
  }

  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  ~SigpipeGuard() {
    if (!on_) return;
    if (!was_pending_ && !was_blocked_) {
      sigset_t pending;
      sigemptyset(&pending);
      ::sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        while (::sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    if (!was_blocked_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  bool on_;
  bool was_pending_ = false;
  bool was_blocked_ = false;
  sigset_t pipe_{};
  sigset_t old_{};
};

// ---- Connection --------------------------------------------------------------------------

// One blocking connection to one node, set up as the top of this file says. It has no lock:
// one thread uses it at a time (a NodePool lends it out). It is never reconnected: once
// broken(), it is destroyed and another is opened.
class Connection {
 public:
  // Opens and sets up a connection (see the top of this file). Throws RedisError: timeout or
  // io_error for the transport, auth_failed for a refused AUTH, server_error for a refused
  // SELECT.
  static std::unique_ptr<Connection> open(const Endpoint& at, const ConnectionSettings& s) {
    const timeval tv = to_timeval(s.connect_timeout);
    redisContext* c = redisConnectWithTimeout(at.host.c_str(), at.port, tv);
    if (c == nullptr) throw RedisError(Errc::io_error, at.str() + ": cannot allocate a hiredis context");
    struct FreeUnlessOwned {
      redisContext* c;
      ~FreeUnlessOwned() {
        if (c != nullptr) redisFree(c);
      }
    } guard{c};
    std::unique_ptr<Connection> conn(new Connection(c, at, s.block_sigpipe));
    guard.c = nullptr;
    if (c->err != 0) conn->fail("connect", /*connecting=*/true);
    if (redisSetTimeout(c, to_timeval(s.command_timeout)) != REDIS_OK) conn->fail("setting the command timeout");
    if (s.keepalive && redisEnableKeepAlive(c) != REDIS_OK) conn->fail("enabling keepalive");
    if (!s.password.empty()) {
      Cmd auth("AUTH");
      if (!s.user.empty()) auth.arg(s.user);
      auth.arg(s.password);
      conn->setup_command(auth);
    }
    if (s.db != 0) {
      Cmd select("SELECT");
      select.arg(static_cast<std::int64_t>(s.db));
      conn->setup_command(select);
    }
    return conn;
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { redisFree(c_); }

  // The node it is connected to.
  const Endpoint& endpoint() const noexcept { return at_; }
  // A transport error happened: the connection must not be used again.
  bool broken() const noexcept { return broken_; }
  // Whether it can serve the next command: not broken, every command queued has had its
  // reply read, nothing is left unsent, and no byte the server sent is waiting in the reader
  // (an exception between append() and read(), or an unasked reply, would otherwise make the
  // next command read someone else's reply).
  bool clean() const noexcept {
    return !broken_ && pending_ == 0 && sdslen(c_->obuf) == 0 && c_->reader->pos >= c_->reader->len;
  }
  // Whether an idle connection looks dead: readable with nothing asked means the server
  // closed it (or sent something unasked, which RESP2 without pub/sub never does). One poll().
  bool looks_closed() const noexcept {
    pollfd p{c_->fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  // Queues a command (no I/O).
  void append(const Cmd& cmd) {
    scratch_.clear();
    cmd.format_into(scratch_);
    if (redisAppendFormattedCommand(c_, scratch_.data(), scratch_.size()) != REDIS_OK) fail("queueing a command");
    ++pending_;
  }
  // Sends what is queued (on the first call) and reads the next reply. Throws RedisError on
  // a transport error (then broken()).
  Reply read() {
    SigpipeGuard guard(block_sigpipe_);
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) {
      if (r != nullptr) freeReplyObject(r);
      fail("reading a reply");
    }
    if (pending_ > 0) --pending_;
    return Reply(static_cast<redisReply*>(r));
  }
  // One round trip.
  Reply call(const Cmd& cmd) {
    append(cmd);
    return read();
  }

 private:
  Connection(redisContext* c, Endpoint at, bool block_sigpipe)
      : c_(c), at_(std::move(at)), block_sigpipe_(block_sigpipe) {}

  static timeval to_timeval(std::chrono::milliseconds ms) {
    const long long v = ms.count() <= 0 ? 1 : ms.count();
    timeval tv{};
    tv.tv_sec = static_cast<decltype(tv.tv_sec)>(v / 1000);
    tv.tv_usec = static_cast<decltype(tv.tv_usec)>((v % 1000) * 1000);
    return tv;
  }

  void setup_command(const Cmd& cmd) {
    Reply r = call(cmd);
    if (is_error(*r)) {
      broken_ = true;
      const std::string_view t = text(*r);
      const Errc e = classify_error_reply(t);
      throw RedisError(e == Errc::server_error && cmd.name() == "AUTH" ? Errc::auth_failed : e,
                       at_.str() + ": " + std::string(cmd.name()) + ": " + std::string(t));
    }
  }

  // Marks the connection dead and throws the classified transport error: a socket timeout
  // (EAGAIN), or the connect's own timeout (ETIMEDOUT while connecting; later, ETIMEDOUT is
  // the kernel giving up on a dead link: io_error).
  [[noreturn]] void fail(const char* during, bool connecting = false) {
    const int saved_errno = errno;
    broken_ = true;
    const std::string what = c_->errstr[0] != '\0' ? std::string(c_->errstr) : std::string("unknown error");
    Errc e = Errc::io_error;
    const bool timed_out = saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || what == std::strerror(EAGAIN) ||
                           (connecting && (saved_errno == ETIMEDOUT || what == std::strerror(ETIMEDOUT)));
    if (c_->err == REDIS_ERR_IO && timed_out) {
      e = Errc::timeout;
    } else if (c_->err == REDIS_ERR_PROTOCOL) {
      e = Errc::protocol_error;
    }
    throw RedisError(e, at_.str() + ": " + during + ": " + what);
  }

  redisContext* c_;
  Endpoint at_;
  bool block_sigpipe_;
  bool broken_ = false;
  std::size_t pending_ = 0;  // commands appended whose replies are not read yet
  std::string scratch_;
};

}  // namespace client
}  // namespace expiring
