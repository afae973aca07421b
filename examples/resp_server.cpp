// examples/resp_server.cpp: a Redis-compatible server over ExpiringStore.
//
// A single-threaded epoll event loop on 127.0.0.1 that speaks RESP2 (multibulk and inline
// requests, pipelining) and runs expiring's Redis command layer, so that redis-cli,
// redis-benchmark and any Redis client library can drive the store:
//
//   resp_server [port] [--port N] [--maxclients N] [--redis-exact]
//               [--dir D] [--dbfilename F] [--appendonly yes|no] [--appendfsync always|everysec|no]
//               [--appendfilename NAME] [--replicaof HOST PORT] [--requirepass PASSWORD]
//   redis-cli -p 6390 SET session:1 alice EX 30
//   redis-cli -p 6390 TTL session:1
//
// Persistence and replication, with Redis's names (docs/semantics.md §4, D28-D33):
//   * At start: with --appendonly yes the append-only log in --dir is replayed (a snapshot
//     --dbfilename is loaded first if there is no log yet, and becomes its base); else the
//     snapshot is loaded if it exists. Keys already expired in a snapshot are skipped.
//   * SAVE writes the snapshot (snapshot.hpp); BGSAVE forks a child that writes it while the
//     loop goes on; LASTSAVE; DEBUG RELOAD saves, empties and loads it again. BGREWRITEAOF
//     starts the log's rewrite, which the loop advances one bounded step per iteration
//     (append_log.hpp). INFO persistence reports them.
//   * REPLICAOF HOST PORT makes this server a replica of another instance of it: it connects,
//     sends SYNC, loads the snapshot the primary answers with (stale keys kept), then applies
//     the primary's command stream (redis/replication.hpp) and never expires a key on its own
//     (Options::replica). Clients' writes get -READONLY. When the link drops it reconnects
//     every second, with a full sync each time. REPLICAOF NO ONE stops it. A primary answers
//     SYNC with a snapshot taken at that moment (a stall of the loop proportional to the data;
//     Redis forks for it) and streams every change to each replica, with a PING every
//     repl-ping-replica-period (10 s) while idle. INFO replication.
//   * The link trusts nothing its primary sends (redis/replication.hpp, ReplicaLink): the
//     snapshot is bounded by proto-max-bulk-len, the stream and an open MULTI by
//     client-query-buffer-limit, framing is strict, and its buffers count in used_memory. At
//     most 128 KB are read from the link per turn of the loop, so clients are served while a
//     primary floods it. A link that brings no data for repl-timeout (60 s; while connecting,
//     syncing or streaming) is dropped and made again. A replica whose output reaches
//     client-output-buffer-limit replica is dropped by its primary.
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
//     client_query_buffer_limit_disconnections. Each pending argument counts at its real
//     cost (its string object and its bytes), so empty arguments cannot grow a client
//     unseen. With --requirepass (CONFIG SET requirepass) a new connection must AUTH first,
//     and until then may announce at most 10 arguments of 16 KB (Redis's bounds).
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

#include <sys/stat.h>
#include <sys/wait.h>

#include <sstream>

#include <expiring/append_log.hpp>
#include <expiring/redis/commands.hpp>
#include <expiring/redis/replication.hpp>
#include <expiring/snapshot.hpp>

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
constexpr std::size_t kKeepArgs = 1024;  // argument slots a client keeps between commands
// A replica reads at most this much from its primary per event, then serves its clients:
// a primary that floods the link cannot keep the loop to itself.
constexpr std::size_t kLinkReadBudget = 8 * kReadChunk;

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
  // A SYNC reply is not counted against the replica's output limit (Redis sends its RDB from
  // a file, outside the replica's output buffer; the limit is for the stream): its unsent
  // bytes, and what its blocks hold allocated until they are all sent.
  std::size_t sync_unsent = 0;
  std::size_t sync_allocated = 0;
};

struct Config {
  int port = 6390;
  int maxclients = 10000;
  bool redis_exact = false;
  bool self_test = false;
  std::string dir = ".";
  std::string dbfilename = "dump.snap";
  bool appendonly = false;
  expiring::Fsync appendfsync = expiring::Fsync::everysec;
  std::string appendfilename = "appendonly";
  std::string replicaof_host;  // empty: a primary
  int replicaof_port = 0;
  std::string requirepass;     // empty: no password
};

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class RespServer {
 public:
  explicit RespServer(const Config& cfg)
      : cfg_(cfg),
        store_(expiring::SystemClock{}, cfg.redis_exact ? expiring::Options::redis_exact() : expiring::Options{}),
        exec_(store_, command_options(cfg)) {}

  ~RespServer() {
    for (auto& kv : clients_) ::close(kv.first);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (spare_fd_ >= 0) ::close(spare_fd_);
  }

  // Loads the data (log or snapshot), fits maxclients to the open file limit, binds and
  // listens; false (with a message on stderr) on failure. SIGINT and SIGTERM keep their
  // default action (the process ends) while the data loads, so a long load can be stopped;
  // then they are blocked, to be read from a signalfd by the loop. The library's own threads
  // (the log's fsync thread) never take them (detail/quiet_thread.hpp).
  bool open() {
    if (!load_data()) return false;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
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

    // SIGINT / SIGTERM arrive as readable events (blocked above; one that arrived since is
    // pending, and the signalfd reports it).
    signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) return fail("signalfd");
    add_fd(signal_fd_, EPOLLIN);
    open_spare();

    exec_.add_config("port", std::to_string(port_));
    exec_.add_config("bind", "127.0.0.1");
    exec_.add_config("maxclients", std::to_string(cfg_.maxclients));
    exec_.add_config("dir", cfg_.dir);
    exec_.add_config("dbfilename", cfg_.dbfilename);
    exec_.add_config("appendonly", cfg_.appendonly ? "yes" : "no");
    exec_.add_config("appendfsync", expiring::to_string(cfg_.appendfsync));
    exec_.add_config("appendfilename", cfg_.appendfilename);
    exec_.set_info_hook([this](std::string_view section, std::string& out) { info(section, out); });
    add_persistence_commands();
    if (!cfg_.replicaof_host.empty()) start_replication(cfg_.replicaof_host, cfg_.replicaof_port);
    return true;
  }

  int port() const noexcept { return port_; }

  static expiring::redis::CommandOptions command_options(const Config& cfg) {
    expiring::redis::CommandOptions o;
    o.requirepass = cfg.requirepass;
    return o;
  }

  // The event loop; returns when SHUTDOWN, SIGINT or SIGTERM asks it to.
  void run() {
    std::vector<epoll_event> events(256);
    auto period = std::chrono::milliseconds(1000 / store_.options().hz);
    auto next_slow = SteadyClock::now() + period;
    while (!stop_) {
      // beforeSleep: the fast cycle (gated inside the store), then pending replies and
      // closes.
      store_.tick(expiring::CycleKind::Fast);
      persistence_before_sleep();
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
        } else if (fd == link_.fd && link_.fd >= 0) {
          link_event(ev);
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
        replication_cron();
        period = std::chrono::milliseconds(1000 / store_.options().hz);
        next_slow = SteadyClock::now() + period;
      }
    }
    persistence_before_sleep();
    flush_pending();
    if (bgsave_pid_ > 0) ::waitpid(bgsave_pid_, nullptr, 0);
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
      exec_.open_session(c->session);
      c->parser.set_limits(parser_limits(*c));
      add_fd(fd, EPOLLIN);
      clients_.emplace(fd, std::move(c));
    }
  }

  void close_client(int fd) {
    replicas_.erase(fd);
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
  // A client's parser limits: the settings of the moment, and Redis's tighter bounds until it
  // has authenticated.
  expiring::redis::ParserLimits parser_limits(const Client& c) const {
    expiring::redis::ParserLimits l;
    l.max_bulk_len = exec_.options().proto_max_bulk_len;
    l.max_query_buffer = exec_.options().client_query_buffer_limit;
    l.authenticated = c.session.authenticated;
    return l;
  }
  const OutputBufferLimit& normal_limit() const { return exec_.options().client_output_buffer_limit[0]; }
  // A replica's connection is limited by the replica class (Redis's client-output-buffer-limit
  // replica: 256 MB hard, 64 MB over 60 s soft), every other client by the normal one.
  const OutputBufferLimit& output_limit(const Client& c) const {
    return exec_.options().client_output_buffer_limit[replicas_.count(c.fd) != 0 ? 1 : 0];
  }
  std::size_t pause_threshold() const {
    const OutputBufferLimit& l = normal_limit();
    return static_cast<std::size_t>(std::max<std::uint64_t>({kOutputHighWater, l.hard, l.soft}));
  }
  // Redis's checkClientOutputBufferLimits() for the normal class: at or over the hard limit,
  // or over the soft limit continuously for more than its seconds. A client held back (not
  // read) since it went over the soft limit counts as over it until it has drained: the
  // backpressure that stopped its replies must not also stop its clock.
  bool over_output_limit(Client& c) {
    const OutputBufferLimit& l = output_limit(c);
    const std::size_t used = c.out.allocated() - std::min(c.out.allocated(), c.sync_allocated);
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
    c.parser.set_limits(parser_limits(c));  // CONFIG SET may have changed them
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
      c.argv_bytes = expiring::redis::args_cost(c.argv);
      account(c);
      // Redis's used_memory counts client buffers: the limit check of this command sees them.
      store_.set_external_memory(client_bytes_);
      const std::size_t before = c.out.size();
      const std::size_t allocated_before = c.out.allocated();
      c.out.set_limit(static_cast<std::size_t>(normal_limit().hard));  // a huge reply stops at it
      const bool was_authenticated = c.session.authenticated;
      if (replica_ && c.session.authenticated && exec_.is_write(c.argv)) {
        Reply::error("READONLY You can't write against a read only replica.").write_resp(c.out);
      } else {
        exec_.execute_into(c.argv, c.session, c.out);
      }
      // AUTH lifts the bounds of an unauthenticated client from its next request on.
      if (c.session.authenticated != was_authenticated) c.parser.set_limits(parser_limits(c));
      if (new_replica_ == c.session.id) {  // SYNC: this connection now receives the stream
        new_replica_ = 0;
        replicas_.insert(c.fd);
        c.sync_unsent = c.out.size() - before;
        c.sync_allocated = c.out.allocated() - allocated_before;
      }
      c.argv.clear();
      if (c.argv.capacity() > kKeepArgs) std::vector<std::string>().swap(c.argv);  // a huge command's slots
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
      c.sync_unsent -= std::min(c.sync_unsent, static_cast<std::size_t>(w));
      if (c.sync_unsent == 0) c.sync_allocated = 0;
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

  // ---- Persistence (snapshot.hpp, append_log.hpp) ----

  std::string snapshot_path() const { return cfg_.dir + "/" + cfg_.dbfilename; }
  static bool file_exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
  }

  // At start: the log (after the snapshot, if the log does not exist yet), or the snapshot.
  bool load_data() {
    const bool have_log = file_exists(cfg_.dir + "/" + cfg_.appendfilename + ".manifest");
    if ((!cfg_.appendonly || !have_log) && file_exists(snapshot_path())) {
      const auto r = expiring::load(store_, snapshot_path());
      if (!r.ok()) {
        std::fprintf(stderr, "resp_server: cannot load %s: %s\n", snapshot_path().c_str(), r.error().message.c_str());
        return false;
      }
      std::fprintf(stderr, "resp_server: loaded %llu keys from %s (%llu already expired, skipped)\n",
                   static_cast<unsigned long long>(r->keys), snapshot_path().c_str(),
                   static_cast<unsigned long long>(r->expired));
      lastsave_s_ = unix_seconds();
    }
    if (cfg_.appendonly) {
      expiring::AppendLogOptions o;
      o.fsync = cfg_.appendfsync;
      o.name = cfg_.appendfilename;
      o.attach = false;  // the server's own feed (below) calls it
      auto r = expiring::AppendLog<Store>::open(store_, cfg_.dir, o);
      if (!r.ok()) {
        std::fprintf(stderr, "resp_server: cannot open the append-only log in %s: %s\n", cfg_.dir.c_str(),
                     r.error().message.c_str());
        return false;
      }
      aof_ = std::move(*r);
      std::fprintf(stderr, "resp_server: append-only log: %llu records replayed, %llu bytes cut off a torn end\n",
                   static_cast<unsigned long long>(aof_->replayed().records),
                   static_cast<unsigned long long>(aof_->replayed().truncated_bytes));
    }
    // One feed for the log, the replicas and the change counter.
    store_.set_change_feed([this](const expiring::redis::ValueChange& c) { on_change(c); });
    return true;
  }

  void on_change(const expiring::redis::ValueChange& c) {
    if (c.op != expiring::ChangeOp::multi && c.op != expiring::ChangeOp::exec) ++dirty_;
    if (aof_) aof_->on_change(c);
    if (!replicas_.empty()) expiring::redis::write_change(c, repl_buf_);
  }

  // beforeSleep: the stream to the replicas, a step of a log rewrite, a finished BGSAVE.
  void persistence_before_sleep() {
    propagate_to_replicas();
    if (aof_ && aof_->rewriting()) {
      if (aof_->rewrite_step()) {
        last_rewrite_ok_ = true;
        std::fprintf(stderr, "resp_server: append-only log rewritten\n");
      } else if (!aof_->rewriting()) {
        last_rewrite_ok_ = false;  // abandoned: the log says why
      }
    }
    if (bgsave_pid_ > 0) {
      int status = 0;
      if (::waitpid(bgsave_pid_, &status, WNOHANG) == bgsave_pid_) {
        last_bgsave_ok_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (last_bgsave_ok_) {
          lastsave_s_ = unix_seconds();
          dirty_ -= std::min(dirty_, dirty_at_fork_);
        }
        std::fprintf(stderr, "resp_server: background save %s\n", last_bgsave_ok_ ? "done" : "FAILED");
        bgsave_pid_ = -1;
      }
    }
  }

  void add_persistence_commands() {
    using Args = CommandExecutor<expiring::SystemClock>::Args;
    using Session = expiring::redis::Session;
    exec_.add_command("save", 1, "admin", [this](const Args&, Session&) {
      if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
      const auto r = expiring::save(store_, snapshot_path());
      if (!r.ok()) return Reply::error("ERR " + r.error().message);
      dirty_ = 0;
      lastsave_s_ = unix_seconds();
      return Reply::ok();
    });
    // A forked child writes the snapshot from its copy-on-write view of the store.
    exec_.add_command("bgsave", -1, "admin", [this](const Args&, Session&) {
      if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
      const pid_t pid = ::fork();
      if (pid < 0) return Reply::error(std::string("ERR fork failed: ") + std::strerror(errno));
      if (pid == 0) ::_exit(expiring::save(store_, snapshot_path()).ok() ? 0 : 1);
      bgsave_pid_ = pid;
      dirty_at_fork_ = dirty_;
      return Reply::status("Background saving started");
    });
    exec_.add_command("lastsave", 1, "fast", [this](const Args&, Session&) { return Reply::integer(lastsave_s_); });
    exec_.add_command("bgrewriteaof", 1, "admin", [this](const Args&, Session&) {
      if (!aof_) return Reply::error("ERR the append-only log is off (start with --appendonly yes)");
      if (aof_->rewriting()) return Reply::error("ERR Background append only file rewriting already in progress");
      if (!aof_->start_rewrite()) return Reply::error("ERR the rewrite could not start");
      return Reply::status("Background append only file rewriting started");
    });
    exec_.add_command("debug", -2, "admin", [this](const Args& a, Session& s) {
      if (a.size() == 2 && expiring::redis::detail::iequals(a[1], "reload")) {
        if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
        const auto w = expiring::save(store_, snapshot_path());
        if (!w.ok()) return Reply::error("ERR " + w.error().message);
        // A replica keeps its stale keys: only the primary's DEL removes them.
        const auto r = expiring::load(store_, snapshot_path(),
                                      replica_ ? expiring::LoadAs::replica : expiring::LoadAs::primary);
        if (!r.ok()) return Reply::error("ERR Error trying to load the RDB dump: " + r.error().message);
        dirty_ = 0;
        lastsave_s_ = unix_seconds();
        return Reply::ok();
      }
      return exec_.run_builtin(a, s);
    });
    auto replicaof = [this](const Args& a, Session&) {
      if (expiring::redis::detail::iequals(a[1], "no") && expiring::redis::detail::iequals(a[2], "one")) {
        stop_replication();
        return Reply::ok();
      }
      std::int64_t port = 0;
      if (!expiring::redis::parse_int64(a[2], port) || port <= 0 || port > 65535) {
        return Reply::error("ERR Invalid master port");
      }
      start_replication(a[1], static_cast<int>(port));
      return Reply::ok();
    };
    exec_.add_command("replicaof", 3, "admin", replicaof);
    exec_.add_command("slaveof", 3, "admin", replicaof);
    // A replica's full sync: the snapshot of this moment, then the stream.
    exec_.add_command("sync", 1, "admin", [this](const Args&, Session& s) {
      propagate_to_replicas();  // what the others have not been sent yet is in the snapshot
      std::ostringstream os;
      const auto r = expiring::save(store_, os);
      if (!r.ok()) return Reply::error("ERR " + r.error().message);
      new_replica_ = s.id;
      return Reply::bulk(os.str());
    });
  }

  // ---- Replication (redis/replication.hpp) ----

  void propagate_to_replicas() {
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

  void start_replication(const std::string& host, int port) {
    stop_link();
    replica_ = true;
    store_.set_replica(true);
    link_.host = host;
    link_.port = port;
    connect_link();
  }
  void stop_replication() {
    stop_link();
    replica_ = false;
    store_.set_replica(false);
  }
  void stop_link() {
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
  void account_link() {
    const std::size_t now = link_.reader ? link_.reader->buffered_bytes() : 0;
    client_bytes_ = client_bytes_ - link_.counted + now;
    link_.counted = now;
  }
  expiring::redis::LinkLimits link_limits() const {
    expiring::redis::LinkLimits l;
    l.max_bulk = exec_.options().proto_max_bulk_len;
    l.max_buffer = exec_.options().client_query_buffer_limit;
    return l;
  }
  void link_failed(const std::string& why) {
    std::fprintf(stderr, "resp_server: replication link to %s:%d: %s; retrying in 1 s\n", link_.host.c_str(),
                 link_.port, why.c_str());
    stop_link();
    link_.retry_at_ms = steady_ms() + 1000;
  }
  void connect_link() {
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
  void replication_cron() {
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
  void link_event(std::uint32_t ev) {
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
        std::fprintf(stderr, "resp_server: synced %llu keys from %s:%d\n",
                     static_cast<unsigned long long>(link_.reader->synced().keys), link_.host.c_str(), link_.port);
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
    } else if (section == "persistence") {
      line("loading", "0");
      line("rdb_changes_since_last_save", std::to_string(dirty_));
      line("rdb_bgsave_in_progress", bgsave_pid_ > 0 ? "1" : "0");
      line("rdb_last_save_time", std::to_string(lastsave_s_));
      line("rdb_last_bgsave_status", last_bgsave_ok_ ? "ok" : "err");
      line("aof_enabled", aof_ ? "1" : "0");
      line("aof_rewrite_in_progress", aof_ && aof_->rewriting() ? "1" : "0");
      line("aof_last_bgrewrite_status", last_rewrite_ok_ ? "ok" : "err");
      if (aof_) {
        const expiring::AppendLogStats st = aof_->stats();
        line("aof_last_write_status", st.ok ? "ok" : "err");
        line("aof_current_size", std::to_string(st.base_bytes + st.incr_bytes));
        line("aof_base_size", std::to_string(st.base_bytes));
        line("aof_rewrites", std::to_string(st.rewrites));
      } else {
        line("aof_last_write_status", "ok");
      }
    } else if (section == "replication") {
      line("role", replica_ ? "slave" : "master");
      if (replica_) {
        line("master_host", link_.host);
        line("master_port", std::to_string(link_.port));
        const bool connected = link_.state == Link::connected;
        line("master_link_status", connected && !link_.reader->syncing() ? "up" : "down");
        line("master_sync_in_progress", connected && link_.reader->syncing() ? "1" : "0");
        line("master_syncs", std::to_string(link_.syncs));
        line("master_link_timeouts", std::to_string(link_.timeouts));
      }
      line("connected_slaves", std::to_string(replicas_.size()));
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
  std::unique_ptr<expiring::AppendLog<Store>> aof_;  // after store_: destroyed first
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

  // Persistence.
  std::uint64_t dirty_ = 0;          // changes since the last save
  std::uint64_t dirty_at_fork_ = 0;  // ... when the running BGSAVE started
  std::int64_t lastsave_s_ = 0;
  bool last_bgsave_ok_ = true, last_rewrite_ok_ = true;
  pid_t bgsave_pid_ = -1;
  // Replication, primary side: connections that sent SYNC, and the stream not yet copied to them.
  std::unordered_set<int> replicas_;
  std::string repl_buf_;
  std::uint64_t new_replica_ = 0;  // the session id of a SYNC being answered
  // Replica side.
  bool replica_ = false;
  struct Link {
    enum State { idle, connecting, connected };
    State state = idle;
    int fd = -1;
    std::string host;
    int port = 0;
    std::unique_ptr<expiring::redis::ReplicaLink<Store>> reader;  // while connected
    std::size_t counted = 0;          // its share of client_bytes_
    std::int64_t last_io_ms = 0;      // the last bytes from the primary (or the connect)
    std::int64_t retry_at_ms = 0;
    std::uint64_t syncs = 0;
    std::uint64_t timeouts = 0;
  } link_;
  std::int64_t last_replica_ping_ms_ = 0;
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

// Why `name` cannot be --dbfilename, or "". Redis's rule (a base name, no path) with the
// names that are not a file in --dir at all.
std::string filename_problem(const std::string& name) {
  if (name.find('/') != std::string::npos) return "dbfilename can't be a path, just a filename";
  if (name.empty() || name == "." || name == "..") return "not a file name";
  for (const char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return "a control character in a file name";
  }
  return "";
}

int usage() {
  std::fprintf(stderr,
               "usage: resp_server [port] [--port N] [--maxclients N] [--redis-exact] [--self-test]\n"
               "                   [--dir D] [--dbfilename F] [--appendonly yes|no]\n"
               "                   [--appendfsync always|everysec|no] [--appendfilename NAME] [--replicaof HOST PORT]\n"
               "                   [--requirepass PASSWORD]\n");
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
    } else if (a == "--dir" && i + 1 < argc) {
      cfg.dir = argv[++i];
    } else if (a == "--dbfilename" && i + 1 < argc) {
      cfg.dbfilename = argv[++i];
    } else if (a == "--appendfilename" && i + 1 < argc) {
      cfg.appendfilename = argv[++i];
    } else if (a == "--appendonly" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "yes" && v != "no") return usage();
      cfg.appendonly = v == "yes";
    } else if (a == "--appendfsync" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v == "always") {
        cfg.appendfsync = expiring::Fsync::always;
      } else if (v == "everysec") {
        cfg.appendfsync = expiring::Fsync::everysec;
      } else if (v == "no") {
        cfg.appendfsync = expiring::Fsync::no;
      } else {
        return usage();
      }
    } else if (a == "--requirepass" && i + 1 < argc) {
      cfg.requirepass = argv[++i];
    } else if (a == "--replicaof" && i + 2 < argc) {
      cfg.replicaof_host = argv[++i];
      cfg.replicaof_port = std::atoi(argv[++i]);
    } else if (!a.empty() && a[0] != '-') {
      cfg.port = std::atoi(a.c_str());
    } else {
      return usage();
    }
  }
  if (cfg.port < 0 || cfg.port > 65535 || cfg.maxclients < 1) return usage();
  // The files live in --dir, and only there: a name with a path is refused at startup, as
  // Redis does, whether or not the path exists (appendonly no included: CONFIG GET would show
  // it, and a later start with appendonly yes would use it).
  if (const std::string why = filename_problem(cfg.dbfilename); !why.empty()) {
    std::fprintf(stderr, "resp_server: --dbfilename '%s': %s\n", cfg.dbfilename.c_str(), why.c_str());
    return 1;
  }
  if (cfg.appendfilename.find('/') != std::string::npos) {
    std::fprintf(stderr, "resp_server: --appendfilename '%s': appendfilename can't be a path, just a filename\n",
                 cfg.appendfilename.c_str());
    return 1;
  }
  if (const std::string why = expiring::log_name_problem(cfg.appendfilename); !why.empty()) {
    std::fprintf(stderr, "resp_server: --appendfilename '%s' is refused: %s\n", cfg.appendfilename.c_str(), why.c_str());
    return 1;
  }
  if (cfg.self_test) cfg.port = 0;

  // SIGINT / SIGTERM: blocked by open() once the data is loaded, then read from a signalfd.
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
