// examples/resp_server.cpp: a Redis-compatible server over ExpiringStore.
//
// A single-threaded epoll event loop on 127.0.0.1 that speaks RESP2 (multibulk and inline
// requests, pipelining) and runs expiring's Redis command layer, so that redis-cli,
// redis-benchmark and any Redis client library can drive the store:
//
//   resp_server [port] [--port N] [--maxclients N] [--redis-exact]
//   redis-cli -p 6390 SET session:1 alice EX 30
//   redis-cli -p 6390 TTL session:1
//
// Like Redis it runs the active-expire cycle from its loop: tick(Slow) `hz` times a second
// (epoll_wait's timeout is 1000/hz ms) and tick(Fast) before every wait. It stops cleanly on
// SIGINT, SIGTERM and the SHUTDOWN command. With --port 0 it picks a free port; the first line
// it prints says which ("resp_server: listening on 127.0.0.1:<port>").
//
// Resources, as Redis 7.0 guards them:
//   * Memory: every client's query buffer (unparsed input plus the arguments of its pending
//     command) and output buffer count as used memory. The server keeps their running total
//     (each client's share is updated when it changes, O(1)) and declares it to the store with
//     set_external_memory() before every command, so with maxmemory set a request carrying
//     more than the limit is refused (-OOM, noeviction) or makes room before it is stored, and
//     INFO's used_memory is the figure the limit is checked against.
//   * Output: replies go into a client's OutputBuffer (a block list: a reply costs its size
//     once; GET and MGET copy stored values straight into it). client-output-buffer-limit
//     (normal class; CONFIG SET) closes a client whose output reaches the hard limit (a reply
//     being built stops there: the rest is not even produced), or stays
//     over the soft limit longer than its seconds: its output is dropped and it is closed
//     before the next wait (Redis's asynchronous close), counted in INFO stats
//     client_output_buffer_limit_disconnections. Beyond Redis, a client whose output exceeds
//     max(1 MB, the normal limits) is not read until it drains, so a client that pipelines
//     without reading holds about one reply more than that, not an ever-growing buffer.
//   * Input: client-query-buffer-limit and proto-max-bulk-len (CONFIG SET) are the parser's
//     limits; a client past the first is closed without a reply and counted in
//     client_query_buffer_limit_disconnections.
//   * File descriptors: at start maxclients is lowered to fit RLIMIT_NOFILE less 32 reserved
//     descriptors (after trying to raise the soft limit), with a note on stderr, as Redis's
//     adjustOpenFilesLimit(). A client over maxclients gets "-ERR max number of clients
//     reached" and is closed. If accept() still fails with EMFILE / ENFILE, a spare descriptor
//     kept open for the purpose is closed so that the waiting client can be accepted, told the
//     same error and closed; if even that fails the listener is left out of epoll for 100 ms.
//     Either way the loop never spins on a listening socket it cannot drain.
//
// `--self-test` starts the server on a free port, drives it from a second thread over TCP
// (pipelined SET/GET/TTL, inline commands, split frames, a protocol error, SHUTDOWN) and exits
// 0 if every reply was right: that is how ctest runs this example.
//
// ctest-args: --self-test
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <expiring/redis/commands.hpp>

namespace {

using expiring::redis::Action;
using expiring::redis::CommandExecutor;
using expiring::redis::OutputBuffer;
using expiring::redis::OutputBufferLimit;
using expiring::redis::Reply;
using expiring::redis::RequestParser;
using Store = expiring::redis::ValueStore<expiring::SystemClock>;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = 16 * 1024;  // Redis PROTO_IOBUF_LEN
// Backpressure (not in Redis): a client whose unsent output is above this, or above the
// normal client-output-buffer-limit if that is larger, is not read until it drains.
constexpr std::size_t kOutputHighWater = 1024 * 1024;
constexpr int kReservedFds = 32;         // Redis CONFIG_MIN_RESERVED_FDS: listener, epoll, logs...
constexpr int kListenerPauseMs = 100;    // when even the spare descriptor cannot accept
constexpr std::size_t kMaxIov = 64;      // blocks per sendmsg()

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now().time_since_epoch()).count();
}

struct Client {
  int fd = -1;
  RequestParser parser;
  expiring::redis::Session session;
  OutputBuffer out;
  std::vector<std::string> argv;   // the command being run
  std::size_t argv_bytes = 0;      // its arguments' bytes
  std::size_t counted = 0;         // this client's share of RespServer::client_bytes_
  std::int64_t soft_since_ms = -1; // when its output went over the soft limit; -1 below it
  bool close_after_write = false;  // QUIT or a protocol error
  bool closing = false;            // over a buffer limit: output dropped, closed before the next wait
  bool want_write = false;         // EPOLLOUT registered
  bool reading = true;             // EPOLLIN registered
};

struct Config {
  int port = 6390;
  int maxclients = 10000;
  bool redis_exact = false;
  bool self_test = false;
};

class RespServer {
 public:
  explicit RespServer(const Config& cfg)
      : cfg_(cfg),
        store_(expiring::SystemClock{}, cfg.redis_exact ? expiring::Options::redis_exact() : expiring::Options{}),
        exec_(store_) {}

  ~RespServer() {
    for (auto& kv : clients_) ::close(kv.first);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (spare_fd_ >= 0) ::close(spare_fd_);
  }

  // Fits maxclients to the open file limit, binds and listens; false (with a message on
  // stderr) on failure.
  bool open() {
    if (!adjust_open_files_limit()) return false;
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return fail("socket");
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(cfg_.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("bind");
    if (::listen(listen_fd_, 511) != 0) return fail("listen");
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);

    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return fail("epoll_create1");
    add_fd(listen_fd_, EPOLLIN);

    // SIGINT / SIGTERM arrive as readable events (the caller blocked them).
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) return fail("signalfd");
    add_fd(signal_fd_, EPOLLIN);
    open_spare();

    exec_.add_config("port", std::to_string(port_));
    exec_.add_config("bind", "127.0.0.1");
    exec_.add_config("maxclients", std::to_string(cfg_.maxclients));
    exec_.set_info_hook([this](std::string_view section, std::string& out) { info(section, out); });
    return true;
  }

  int port() const noexcept { return port_; }

  // The event loop; returns when SHUTDOWN, SIGINT or SIGTERM asks it to.
  void run() {
    std::vector<epoll_event> events(256);
    auto period = std::chrono::milliseconds(1000 / store_.options().hz);
    auto next_slow = SteadyClock::now() + period;
    while (!stop_) {
      // beforeSleep: the fast cycle (gated inside the store), then pending replies and
      // closes.
      store_.tick(expiring::CycleKind::Fast);
      flush_pending();
      if (stop_) break;

      const auto now = SteadyClock::now();
      const auto wait = next_slow > now ? std::chrono::duration_cast<std::chrono::milliseconds>(next_slow - now)
                                        : std::chrono::milliseconds(0);
      const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                 static_cast<int>(wait.count()) + (wait.count() == 0 ? 0 : 1));
      if (n < 0 && errno != EINTR) {
        std::perror("resp_server: epoll_wait");
        break;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[static_cast<std::size_t>(i)].data.fd;
        const std::uint32_t ev = events[static_cast<std::size_t>(i)].events;
        if (fd == listen_fd_) {
          accept_clients();
        } else if (fd == signal_fd_) {
          signalfd_siginfo si;
          while (::read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            std::fprintf(stderr, "resp_server: signal %u, shutting down\n", si.ssi_signo);
            stop_ = true;
          }
        } else {
          auto it = clients_.find(fd);
          if (it == clients_.end()) continue;
          Client& c = *it->second;
          if (c.closing) continue;  // closed before the next wait
          if (ev & (EPOLLERR | EPOLLHUP)) {
            if (!(ev & EPOLLIN)) {
              close_client(fd);
              continue;
            }
          }
          if ((ev & EPOLLOUT) && !write_client(c)) continue;
          if ((ev & EPOLLIN) && c.reading) read_client(c);
        }
      }

      // serverCron: the slow cycle at hz (CONFIG SET hz changes the period), the soft output
      // limit of clients not being read, the listener after an accept failure.
      if (SteadyClock::now() >= next_slow) {
        store_.tick(expiring::CycleKind::Slow);
        client_cron();
        period = std::chrono::milliseconds(1000 / store_.options().hz);
        next_slow = SteadyClock::now() + period;
      }
    }
    flush_pending();
    // Like Redis on shutdown: every connection is closed.
    std::vector<int> fds;
    for (const auto& kv : clients_) fds.push_back(kv.first);
    for (int fd : fds) close_client(fd);
  }

 private:
  bool fail(const char* what) {
    std::fprintf(stderr, "resp_server: %s: %s\n", what, std::strerror(errno));
    return false;
  }
  void add_fd(int fd, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  void update_events(Client& c) {
    epoll_event ev{};
    ev.events = (c.reading ? EPOLLIN : 0u) | (c.want_write ? EPOLLOUT : 0u);
    ev.data.fd = c.fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // ---- File descriptors ----

  // Redis's adjustOpenFilesLimit(): maxclients plus the reserved descriptors must fit the
  // soft RLIMIT_NOFILE. Raise it if allowed (to the hard limit at most, unless privileged);
  // else lower maxclients to what fits, and say so. False if not even one client fits.
  bool adjust_open_files_limit() {
    const auto need = static_cast<rlim_t>(cfg_.maxclients) + kReservedFds;
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
      std::fprintf(stderr, "resp_server: cannot read the open file limit (%s); keeping maxclients %d\n",
                   std::strerror(errno), cfg_.maxclients);
      return true;
    }
    if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return true;
    const rlim_t was = lim.rlim_cur;
    rlimit want = lim;
    want.rlim_cur = need;
    if (want.rlim_max != RLIM_INFINITY && want.rlim_max < need) want.rlim_max = need;  // needs privilege
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) {
      std::fprintf(stderr, "resp_server: raised the open file limit from %llu to %llu\n",
                   static_cast<unsigned long long>(was), static_cast<unsigned long long>(need));
      return true;
    }
    const int err = errno;
    rlim_t got = was;
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max > was) {
      want = lim;
      want.rlim_cur = lim.rlim_max;
      if (::setrlimit(RLIMIT_NOFILE, &want) == 0) got = lim.rlim_max;
    }
    std::fprintf(stderr, "resp_server: maxclients %d needs %llu file descriptors; the open file limit cannot be "
                 "raised above %llu (%s)\n",
                 cfg_.maxclients, static_cast<unsigned long long>(need), static_cast<unsigned long long>(got),
                 std::strerror(err));
    if (got <= static_cast<rlim_t>(kReservedFds)) {
      std::fprintf(stderr, "resp_server: an open file limit ('ulimit -n') of %llu is too low to serve any client; "
                   "raise it to at least %llu\n",
                   static_cast<unsigned long long>(got), static_cast<unsigned long long>(kReservedFds + 1));
      return false;
    }
    cfg_.maxclients = static_cast<int>(got - kReservedFds);
    std::fprintf(stderr, "resp_server: maxclients lowered to %d to fit the open file limit of %llu; raise "
                 "'ulimit -n' for more clients\n",
                 cfg_.maxclients, static_cast<unsigned long long>(got));
    return true;
  }

  // A descriptor held in reserve: closed to make room when accept() runs out of them.
  void open_spare() {
    if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  // Tells a connection it cannot be served, and closes it.
  void refuse(int fd) {
    static const char kErr[] = "-ERR max number of clients reached\r\n";
    (void)!::send(fd, kErr, sizeof kErr - 1, MSG_NOSIGNAL);
    ::close(fd);
    ++rejected_connections_;
  }
  void pause_listener(int err) {
    std::fprintf(stderr, "resp_server: accept: %s; not accepting for %d ms\n", std::strerror(err), kListenerPauseMs);
    epoll_event ev{};
    ev.data.fd = listen_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);  // no events
    listener_paused_until_ms_ = steady_ms() + kListenerPauseMs;
  }
  void resume_listener() {
    listener_paused_until_ms_ = -1;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
  }

  void accept_clients() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK) return;
        if (err == EINTR || err == ECONNABORTED) continue;
        if ((err == EMFILE || err == ENFILE) && spare_fd_ >= 0) {
          // Out of descriptors: the spare one makes room to accept and refuse this client,
          // so that the listener does not stay readable (a busy loop) while others wait.
          ::close(spare_fd_);
          spare_fd_ = -1;
          const int extra = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          const int extra_err = errno;
          if (extra >= 0) {
            ++total_connections_;
            refuse(extra);
            if (fd_shortage_logged_++ == 0) {
              std::fprintf(stderr, "resp_server: accept: %s; refusing clients until descriptors are free\n",
                           std::strerror(err));
            }
          }
          open_spare();
          if (extra >= 0 && spare_fd_ >= 0) continue;
          if (extra < 0 && (extra_err == EAGAIN || extra_err == EWOULDBLOCK)) return;
        }
        pause_listener(err);  // ENOBUFS, ENOMEM, or no spare descriptor: try again later
        return;
      }
      ++total_connections_;
      if (clients_.size() >= static_cast<std::size_t>(cfg_.maxclients)) {
        refuse(fd);
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Client>();
      c->fd = fd;
      c->session.id = ++next_client_id_;
      c->parser.set_limits(parser_limits());
      add_fd(fd, EPOLLIN);
      clients_.emplace(fd, std::move(c));
    }
  }

  void close_client(int fd) {
    auto it = clients_.find(fd);
    if (it != clients_.end()) client_bytes_ -= it->second->counted;
    soft_watch_.erase(fd);
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    clients_.erase(fd);
  }

  // ---- Memory and buffer limits ----

  // Updates the running total of client buffer bytes with this client's current share.
  void account(Client& c) {
    const std::size_t now = c.parser.buffered_bytes() + c.argv_bytes + c.out.allocated();
    client_bytes_ = client_bytes_ - c.counted + now;
    c.counted = now;
  }
  expiring::redis::ParserLimits parser_limits() const {
    expiring::redis::ParserLimits l;
    l.max_bulk_len = exec_.options().proto_max_bulk_len;
    l.max_query_buffer = exec_.options().client_query_buffer_limit;
    return l;
  }
  const OutputBufferLimit& normal_limit() const { return exec_.options().client_output_buffer_limit[0]; }
  std::size_t pause_threshold() const {
    const OutputBufferLimit& l = normal_limit();
    return static_cast<std::size_t>(std::max<std::uint64_t>({kOutputHighWater, l.hard, l.soft}));
  }
  // Redis's checkClientOutputBufferLimits() for the normal class: at or over the hard limit,
  // or over the soft limit continuously for more than its seconds. A client held back (not
  // read) since it went over the soft limit counts as over it until it has drained: the
  // backpressure that stopped its replies must not also stop its clock.
  bool over_output_limit(Client& c) {
    const OutputBufferLimit& l = normal_limit();
    const std::size_t used = c.out.allocated();
    const bool hard = l.hard != 0 && used >= l.hard;
    bool soft = l.soft != 0 && (used >= l.soft || (c.soft_since_ms >= 0 && !c.reading));
    if (soft) {
      const std::int64_t now = steady_ms();
      if (c.soft_since_ms < 0) {
        c.soft_since_ms = now;
        soft_watch_.insert(c.fd);
        soft = false;
      } else if (now - c.soft_since_ms <= l.soft_seconds * 1000) {
        soft = false;
      }
    } else if (c.soft_since_ms >= 0) {
      c.soft_since_ms = -1;
      soft_watch_.erase(c.fd);
    }
    return hard || soft;
  }
  // Redis's freeClientAsync(): the client is not read or written again, its output is
  // dropped now, and it is closed before the next wait.
  void close_async(Client& c) {
    c.closing = true;
    c.out.clear();
    c.argv.clear();
    c.argv_bytes = 0;
    account(c);
    if (c.reading || c.want_write) {
      c.reading = c.want_write = false;
      update_events(c);
    }
    pending_.push_back(c.fd);
  }
  void output_limit_reached(Client& c) {
    ++output_limit_disconnections_;
    std::fprintf(stderr, "resp_server: client id=%llu closed for overcoming its output buffer limit (%zu bytes)\n",
                 static_cast<unsigned long long>(c.session.id), c.out.allocated());
    close_async(c);
  }
  // Clients over the soft limit that produce no output (not being read) are checked here.
  void client_cron() {
    if (listener_paused_until_ms_ >= 0 && steady_ms() >= listener_paused_until_ms_) {
      open_spare();
      resume_listener();
    }
    if (soft_watch_.empty()) return;
    const std::vector<int> fds(soft_watch_.begin(), soft_watch_.end());
    for (int fd : fds) {
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      Client& c = *it->second;
      if (!c.closing && over_output_limit(c)) output_limit_reached(c);
    }
  }

  // ---- Reading, running, writing ----

  void read_client(Client& c) {
    char buf[kReadChunk];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_client(c.fd);
      return;
    }
    if (n < 0) return;
    net_in_ += static_cast<std::uint64_t>(n);
    c.parser.set_limits(parser_limits());  // CONFIG SET may have changed them
    c.parser.feed(buf, static_cast<std::size_t>(n));
    account(c);
    process(c);
  }

  // Runs the complete commands buffered for a client, until its output is too large.
  void process(Client& c) {
    while (!c.close_after_write && !c.closing && !stop_) {
      if (c.out.allocated() > pause_threshold()) {
        if (c.reading) {  // backpressure: read again once the client has drained its replies
          c.reading = false;
          update_events(c);
        }
        break;
      }
      const RequestParser::Status s = c.parser.next(c.argv);
      if (s == RequestParser::Status::incomplete) break;
      if (s == RequestParser::Status::limit) {  // client-query-buffer-limit: closed without a reply
        ++query_limit_disconnections_;
        std::fprintf(stderr, "resp_server: client id=%llu closed for reaching the query buffer limit\n",
                     static_cast<unsigned long long>(c.session.id));
        close_async(c);
        return;
      }
      if (s == RequestParser::Status::protocol_error) {
        Reply::error(c.parser.error()).write_resp(c.out);
        c.close_after_write = true;
        break;
      }
      c.argv_bytes = 0;
      for (const std::string& a : c.argv) c.argv_bytes += a.size();
      account(c);
      // Redis's used_memory counts client buffers: the limit check of this command sees them.
      store_.set_external_memory(client_bytes_);
      const std::size_t before = c.out.size();
      c.out.set_limit(static_cast<std::size_t>(normal_limit().hard));  // a huge reply stops at it
      exec_.execute_into(c.argv, c.session, c.out);
      c.argv.clear();
      c.argv_bytes = 0;
      if (c.session.action == Action::shutdown) {
        c.out.truncate(before);  // SHUTDOWN sends no reply
        account(c);
        std::fprintf(stderr, "resp_server: SHUTDOWN, bye\n");
        stop_ = true;
        break;
      }
      if (c.session.action == Action::close) c.close_after_write = true;
      account(c);
      if (c.out.over_limit() || over_output_limit(c)) {
        output_limit_reached(c);
        return;
      }
    }
    account(c);
    if (!c.out.empty() || c.close_after_write) pending_.push_back(c.fd);
  }

  // Writes what it can; false if the client was closed.
  bool write_client(Client& c) {
    while (!c.out.empty()) {
      iovec iov[kMaxIov];
      const std::size_t n = std::min(kMaxIov, c.out.blocks());
      for (std::size_t i = 0; i < n; ++i) {
        const std::string_view b = c.out.block(i);
        iov[i].iov_base = const_cast<char*>(b.data());
        iov[i].iov_len = b.size();
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = n;
      const ssize_t w = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        close_client(c.fd);
        return false;
      }
      net_out_ += static_cast<std::uint64_t>(w);
      c.out.consume(static_cast<std::size_t>(w));
    }
    account(c);
    if (c.out.empty()) {
      if (c.close_after_write) {
        close_client(c.fd);
        return false;
      }
      if (c.want_write || !c.reading) {
        c.want_write = false;
        const bool resume = !c.reading;
        c.reading = true;
        update_events(c);
        if (resume) process(c);  // commands left in the parser while the output was full
      }
    } else if (!c.want_write) {
      c.want_write = true;
      update_events(c);
    }
    return true;
  }

  void flush_pending() {
    std::vector<int> fds;
    fds.swap(pending_);
    for (int fd : fds) {
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      if (it->second->closing) {
        close_client(fd);
      } else {
        write_client(*it->second);
      }
    }
  }

  void info(std::string_view section, std::string& out) {
    auto line = [&](const char* k, const std::string& v) {
      out += k;
      out += ':';
      out += v;
      out += "\r\n";
    };
    if (section == "server") {
      line("multiplexing_api", "epoll");
      line("process_id", std::to_string(::getpid()));
      line("tcp_port", std::to_string(port_));
    } else if (section == "clients") {
      line("connected_clients", std::to_string(clients_.size()));
      line("maxclients", std::to_string(cfg_.maxclients));
    } else if (section == "memory") {
      line("mem_clients_normal", std::to_string(client_bytes_));  // included in used_memory
    } else if (section == "stats") {
      line("total_connections_received", std::to_string(total_connections_));
      line("total_commands_processed", std::to_string(exec_.commands_processed()));
      line("total_net_input_bytes", std::to_string(net_in_));
      line("total_net_output_bytes", std::to_string(net_out_));
      line("rejected_connections", std::to_string(rejected_connections_));
      // Redis 7.2's names; Redis 7.0.15 prints neither.
      line("client_query_buffer_limit_disconnections", std::to_string(query_limit_disconnections_));
      line("client_output_buffer_limit_disconnections", std::to_string(output_limit_disconnections_));
    }
  }

  Config cfg_;
  Store store_;
  CommandExecutor<expiring::SystemClock> exec_;
  int listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1, spare_fd_ = -1;
  int port_ = 0;
  bool stop_ = false;
  std::int64_t listener_paused_until_ms_ = -1;
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  std::unordered_set<int> soft_watch_;  // clients over the soft output limit
  std::vector<int> pending_;
  std::size_t client_bytes_ = 0;        // every client's query and output buffer bytes
  std::uint64_t next_client_id_ = 0, total_connections_ = 0, rejected_connections_ = 0;
  std::uint64_t query_limit_disconnections_ = 0, output_limit_disconnections_ = 0, fd_shortage_logged_ = 0;
  std::uint64_t net_in_ = 0, net_out_ = 0;
};

// ---- --self-test: a client in a second thread checks the server's replies ---------------------

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}
void send_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}
// Reads until `expected.size()` bytes arrived (or the peer closed / timed out).
std::string recv_bytes(int fd, std::size_t want) {
  std::string got;
  char buf[4096];
  while (got.size() < want) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

int self_test_client(int port) {
  int failures = 0;
  auto check = [&](const char* what, const std::string& got, const std::string& want) {
    if (got != want) {
      std::fprintf(stderr, "self-test FAILED: %s\n  want: %s\n  got:  %s\n", what, want.c_str(), got.c_str());
      ++failures;
    }
  };
  const int fd = connect_to(port);
  if (fd < 0) {
    std::fprintf(stderr, "self-test: cannot connect\n");
    return 1;
  }
  // Pipelined multibulk commands, one of them split across two sends.
  send_all(fd, "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$3\r\n100\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*2\r\n$3\r\nTT");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  send_all(fd, "L\r\n$1\r\nk\r\n");
  std::string want = "+OK\r\n$1\r\nv\r\n:100\r\n";
  check("pipelined SET/GET/TTL", recv_bytes(fd, want.size()), want);
  // Inline commands, in-place updates that keep the TTL, and errors.
  send_all(fd, "INCR n\r\nAPPEND k w\r\nttl k\r\nSET k v EX 0\r\nEXPIRE k 10 NX XX\r\nFOO bar\r\n");
  want = ":1\r\n:2\r\n:100\r\n-ERR invalid expire time in 'set' command\r\n"
         "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
         "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n";
  check("inline commands and errors", recv_bytes(fd, want.size()), want);
  // A protocol error is answered, then the connection is closed.
  const int bad = connect_to(port);
  send_all(bad, "PING\r\n*1\r\n$-5\r\n");
  check("protocol error", recv_bytes(bad, 1 << 20), "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");
  ::close(bad);
  // QUIT closes after its reply.
  const int q = connect_to(port);
  send_all(q, "QUIT\r\nPING\r\n");
  check("QUIT", recv_bytes(q, 1 << 20), "+OK\r\n");
  ::close(q);
  // SHUTDOWN stops the server: no reply, the connection closes.
  send_all(fd, "SHUTDOWN\r\n");
  check("SHUTDOWN", recv_bytes(fd, 1 << 20), "");
  ::close(fd);
  return failures;
}

int usage() {
  std::fprintf(stderr, "usage: resp_server [port] [--port N] [--maxclients N] [--redis-exact] [--self-test]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      cfg.port = std::atoi(argv[++i]);
    } else if (a == "--maxclients" && i + 1 < argc) {
      cfg.maxclients = std::atoi(argv[++i]);
    } else if (a == "--redis-exact") {
      cfg.redis_exact = true;
    } else if (a == "--self-test") {
      cfg.self_test = true;
    } else if (!a.empty() && a[0] != '-') {
      cfg.port = std::atoi(a.c_str());
    } else {
      return usage();
    }
  }
  if (cfg.port < 0 || cfg.port > 65535 || cfg.maxclients < 1) return usage();
  if (cfg.self_test) cfg.port = 0;

  // Blocked in every thread: they are read from a signalfd by the event loop.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  RespServer server(cfg);
  if (!server.open()) return 1;
  std::printf("resp_server: listening on 127.0.0.1:%d\n", server.port());
  std::fflush(stdout);

  if (!cfg.self_test) {
    server.run();
    return 0;
  }
  std::atomic<int> failures{0};
  std::thread client([&] { failures = self_test_client(server.port()); });
  server.run();
  client.join();
  std::printf("resp_server self-test: %s\n", failures == 0 ? "passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
