// server/event_loop.cpp: the event loop and the clients (server.hpp has the design).
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
//     being built stops there: the rest is not even produced), or stays over the soft limit
//     longer than its seconds: its output is dropped and it is closed before the next wait
//     (Redis's asynchronous close), counted in INFO stats
//     client_output_buffer_limit_disconnections. Beyond Redis, a client whose output exceeds
//     max(1 MB, the normal limits) is not read until it drains, so a client that pipelines
//     without reading holds about one reply more than that, not an ever-growing buffer.
//   * Input: client-query-buffer-limit and proto-max-bulk-len (CONFIG SET) are the parser's
//     limits; a client past the first is closed without a reply and counted in
//     client_query_buffer_limit_disconnections. Each pending argument counts at its real
//     cost (its string object and its bytes), so empty arguments cannot grow a client
//     unseen. With requirepass (CONFIG SET requirepass) a new connection must AUTH first,
//     and until then may announce at most 10 arguments of 16 KB (Redis's bounds).
//   * File descriptors: at start maxclients is lowered to fit RLIMIT_NOFILE less 32 reserved
//     descriptors (after trying to raise the soft limit), with a note on stderr, as Redis's
//     adjustOpenFilesLimit(). A client over maxclients gets "-ERR max number of clients
//     reached" and is closed. If accept() still fails with EMFILE / ENFILE, a spare descriptor
//     kept open for the purpose is closed so that the waiting client can be accepted, told the
//     same error and closed; if even that fails the listener is left out of epoll for 100 ms.
//     Either way the loop never spins on a listening socket it cannot drain.
#include "server.hpp"

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
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace expiring::server {

using expiring::redis::Action;
using expiring::redis::Reply;
using expiring::redis::RequestParser;

namespace {

constexpr std::size_t kLazyFreeQueue = 1024;  // per database

std::vector<std::unique_ptr<Store>> make_stores(const Config& cfg, expiring::ManualClock& clock) {
  std::vector<std::unique_ptr<Store>> v;
  expiring::Options o = cfg.redis_exact ? expiring::Options::redis_exact() : expiring::Options{};
  if (cfg.active_expire_pass_ticks >= 0) o.full_pass_ticks = static_cast<std::uint32_t>(cfg.active_expire_pass_ticks);
  // UNLINK frees lazily, as Redis's: the value is queued and the next cron tick destroys it
  // within its time budget (INFO lazyfree_pending_objects, lazyfreed_objects). The other
  // lazyfree-lazy-* cases stay synchronous, Redis 7.0's defaults. A value unlinked while the
  // queue is full is destroyed at once.
  o.lazyfree_queue_max = kLazyFreeQueue;
  for (int i = 0; i < cfg.databases; ++i) v.push_back(std::make_unique<Store>(clock, o));
  return v;
}

std::vector<Store*> pointers(const std::vector<std::unique_ptr<Store>>& stores) {
  std::vector<Store*> v;
  for (const auto& s : stores) v.push_back(s.get());
  return v;
}

}  // namespace

Server::Server(const Config& cfg)
    : cfg_(cfg),
      clock_(expiring::SystemClock{}.now_ms()),
      stores_(make_stores(cfg, clock_)),
      exec_(pointers(stores_), command_options(cfg)) {
  new_replid();
}

std::size_t Server::db_of(const Store* s) {
  const std::vector<Store*>& v = dbs();
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

// Each database runs its own active-expire cycle, within its own time budget.
void Server::tick_all(expiring::CycleKind kind) {
  for (Store* s : dbs()) s->tick(kind);
}

Server::~Server() {
  close_migrate_sockets();
  for (auto& kv : clients_) ::close(kv.first);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (spare_fd_ >= 0) ::close(spare_fd_);
}

expiring::redis::CommandOptions Server::command_options(const Config& cfg) {
  expiring::redis::CommandOptions o;
  o.requirepass = cfg.requirepass;
  return o;
}

std::string Server::configure() {
  for (const Setting& s : cfg_.settings) {
    const Reply r = exec_.execute({"CONFIG", "SET", s.name, s.value});
    if (r.is_error()) {
      std::string why = r.str();
      if (why.rfind("ERR ", 0) == 0) why.erase(0, 4);
      if (why.rfind("Unknown option", 0) == 0) why = "unknown directive (expiring-server --help lists them)";
      return s.origin + ": '" + s.name + " " + s.value + "': " + why;
    }
  }
  return "";
}

bool Server::open() {
  sync_clock();
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
  // (appendonly and appendfsync: add_persistence_commands(), which CONFIG SET changes)
  exec_.add_config("appendfilename", cfg_.appendfilename);
  exec_.set_info_hook([this](std::string_view section, std::string& out) { info(section, out); });
  exec_.set_push_hook([this](expiring::redis::Session& s) { on_push(*static_cast<Client*>(s.owner)); });
  // min-replicas-to-write: a primary refuses writes unless that many replicas acknowledged
  // (REPLCONF ACK, once a second) within min-replicas-max-lag seconds.
  exec_.set_write_gate([this]() -> std::optional<std::string> {
    const auto& o = exec_.options();
    if (o.min_replicas_to_write <= 0 || replica_) return std::nullopt;
    const std::int64_t now = steady_ms();
    std::int64_t good = 0;
    for (int fd : replicas_) {
      auto it = clients_.find(fd);
      if (it != clients_.end() && it->second->ack_ms > 0 && (now - it->second->ack_ms) / 1000 <= o.min_replicas_max_lag) ++good;
    }
    if (good >= o.min_replicas_to_write) return std::nullopt;
    return std::string("NOREPLICAS Not enough good replicas to write.");
  });
  // replica-serve-stale-data: a replica's link is up once it streams after a sync.
  exec_.set_link_down_query([this] { return replica_ && !(link_.state == Link::connected && !link_.reader->syncing()); });
  add_persistence_commands();
  add_migrate_command();
  add_client_command();
  if (!cfg_.replicaof_host.empty()) start_replication(cfg_.replicaof_host, cfg_.replicaof_port);
  return true;
}

// The event loop; returns when SHUTDOWN, SIGINT or SIGTERM asks it to.
void Server::run() {
  std::vector<epoll_event> events(256);
  last_replica_ping_ms_ = steady_ms();  // replicas are PINGed a period after the start, as Redis's cron
  auto period = std::chrono::milliseconds(1000 / db(0).options().hz);
  auto next_slow = SteadyClock::now() + period;
  while (!stop_) {
    // beforeSleep: the fast cycle (gated inside the store), then pending replies and
    // closes.
    sync_clock();
    tick_all(expiring::CycleKind::Fast);
    persistence_before_sleep();
    flush_pending();
    if (stop_) break;

    const auto now = SteadyClock::now();
    const auto wait = next_slow > now ? std::chrono::duration_cast<std::chrono::milliseconds>(next_slow - now)
                                      : std::chrono::milliseconds(0);
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(wait.count()) + (wait.count() == 0 ? 0 : 1));
    if (n < 0 && errno != EINTR) {
      std::perror("expiring-server: epoll_wait");
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
          std::fprintf(stderr, "expiring-server: signal %u, shutting down\n", si.ssi_signo);
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
      sync_clock();
      tick_all(expiring::CycleKind::Slow);
      client_cron();
      replication_cron();
      migrate_cron();
      period = std::chrono::milliseconds(1000 / db(0).options().hz);
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

bool Server::fail(const char* what) {
  std::fprintf(stderr, "expiring-server: %s: %s\n", what, std::strerror(errno));
  return false;
}
void Server::add_fd(int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}
void Server::update_events(Client& c) {
  epoll_event ev{};
  ev.events = (c.reading ? EPOLLIN : 0u) | (c.want_write ? EPOLLOUT : 0u);
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

// ---- File descriptors ----

// Redis's adjustOpenFilesLimit(): maxclients plus the reserved descriptors must fit the
// soft RLIMIT_NOFILE. Raise it if allowed (to the hard limit at most, unless privileged);
// else lower maxclients to what fits, and say so. False if not even one client fits.
bool Server::adjust_open_files_limit() {
  const auto need = static_cast<rlim_t>(cfg_.maxclients) + kReservedFds;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    std::fprintf(stderr, "expiring-server: cannot read the open file limit (%s); keeping maxclients %d\n",
                 std::strerror(errno), cfg_.maxclients);
    return true;
  }
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return true;
  const rlim_t was = lim.rlim_cur;
  rlimit want = lim;
  want.rlim_cur = need;
  if (want.rlim_max != RLIM_INFINITY && want.rlim_max < need) want.rlim_max = need;  // needs privilege
  if (::setrlimit(RLIMIT_NOFILE, &want) == 0) {
    std::fprintf(stderr, "expiring-server: raised the open file limit from %llu to %llu\n",
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
  std::fprintf(stderr, "expiring-server: maxclients %d needs %llu file descriptors; the open file limit cannot be "
               "raised above %llu (%s)\n",
               cfg_.maxclients, static_cast<unsigned long long>(need), static_cast<unsigned long long>(got),
               std::strerror(err));
  if (got <= static_cast<rlim_t>(kReservedFds)) {
    std::fprintf(stderr, "expiring-server: an open file limit ('ulimit -n') of %llu is too low to serve any client; "
                 "raise it to at least %llu\n",
                 static_cast<unsigned long long>(got), static_cast<unsigned long long>(kReservedFds + 1));
    return false;
  }
  cfg_.maxclients = static_cast<int>(got - kReservedFds);
  std::fprintf(stderr, "expiring-server: maxclients lowered to %d to fit the open file limit of %llu; raise "
               "'ulimit -n' for more clients\n",
               cfg_.maxclients, static_cast<unsigned long long>(got));
  return true;
}

// A descriptor held in reserve: closed to make room when accept() runs out of them.
void Server::open_spare() {
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}
// Tells a connection it cannot be served, and closes it.
void Server::refuse(int fd) {
  static const char kErr[] = "-ERR max number of clients reached\r\n";
  (void)!::send(fd, kErr, sizeof kErr - 1, MSG_NOSIGNAL);
  ::close(fd);
  ++rejected_connections_;
}
void Server::pause_listener(int err) {
  std::fprintf(stderr, "expiring-server: accept: %s; not accepting for %d ms\n", std::strerror(err), kListenerPauseMs);
  epoll_event ev{};
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);  // no events
  listener_paused_until_ms_ = steady_ms() + kListenerPauseMs;
}
void Server::resume_listener() {
  listener_paused_until_ms_ = -1;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
}

void Server::accept_clients() {
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
            std::fprintf(stderr, "expiring-server: accept: %s; refusing clients until descriptors are free\n",
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
    c->session.push = &c->out;  // pub/sub messages and keyspace notifications
    c->session.owner = c.get();
    c->created_ms = c->last_ms = steady_ms();
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && peer.sin_family == AF_INET) {
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
      c->addr = std::string(ip) + ":" + std::to_string(ntohs(peer.sin_port));
    }
    exec_.open_session(c->session);
    c->parser.set_limits(parser_limits(*c));
    add_fd(fd, EPOLLIN);
    clients_.emplace(fd, std::move(c));
  }
}

void Server::close_client(int fd) {
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
void Server::account(Client& c) {
  const std::size_t now = c.parser.buffered_bytes() + c.argv_bytes + c.out.allocated();
  client_bytes_ = client_bytes_ - c.counted + now;
  c.counted = now;
}
// A client's parser limits: the settings of the moment, and Redis's tighter bounds until it
// has authenticated.
expiring::redis::ParserLimits Server::parser_limits(const Client& c) const {
  expiring::redis::ParserLimits l;
  l.max_bulk_len = exec_.options().proto_max_bulk_len;
  l.max_query_buffer = exec_.options().client_query_buffer_limit;
  l.authenticated = c.session.authenticated;
  return l;
}
// A replica's connection is limited by the replica class (Redis's client-output-buffer-limit
// replica: 256 MB hard, 64 MB over 60 s soft), every other client by the normal one.
const OutputBufferLimit& Server::output_limit(const Client& c) const {
  const int cls = replicas_.count(c.fd) != 0 ? 1 : c.session.subscribed() ? 2 : 0;  // normal, replica, pubsub
  return exec_.options().client_output_buffer_limit[cls];
}

// A message for a client that did not ask (another's PUBLISH, a keyspace notification): sent
// with the replies, under the pubsub class's output limit.
void Server::on_push(Client& c) {
  if (c.closing) return;
  account(c);
  if (over_output_limit(c)) {
    output_limit_reached(c);
    return;
  }
  pending_.push_back(c.fd);
}
std::size_t Server::pause_threshold() const {
  const OutputBufferLimit& l = normal_limit();
  return static_cast<std::size_t>(std::max<std::uint64_t>({kOutputHighWater, l.hard, l.soft}));
}
// Redis's checkClientOutputBufferLimits() for the normal class: at or over the hard limit,
// or over the soft limit continuously for more than its seconds. A client held back (not
// read) since it went over the soft limit counts as over it until it has drained: the
// backpressure that stopped its replies must not also stop its clock.
bool Server::over_output_limit(Client& c) {
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
void Server::close_async(Client& c) {
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
void Server::output_limit_reached(Client& c) {
  ++output_limit_disconnections_;
  std::fprintf(stderr, "expiring-server: client id=%llu closed for overcoming its output buffer limit (%zu bytes)\n",
               static_cast<unsigned long long>(c.session.id), c.out.allocated());
  close_async(c);
}
// Clients over the soft limit that produce no output (not being read) are checked here.
void Server::client_cron() {
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

void Server::read_client(Client& c) {
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
void Server::process(Client& c) {
  c.last_ms = steady_ms();  // (CLIENT LIST's idle: once per read, not per command)
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
      std::fprintf(stderr, "expiring-server: client id=%llu closed for reaching the query buffer limit\n",
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
    exec_.set_external_memory(client_bytes_);
    const std::size_t before = c.out.size();
    c.out.set_limit(static_cast<std::size_t>(normal_limit().hard));  // a huge reply stops at it
    const bool was_authenticated = c.session.authenticated;
    if (c.session.authenticated && replication_command(c)) {
      // (SYNC, PSYNC, REPLCONF: replied to, or not, by replication.cpp)
    } else if (replicas_.count(c.fd) != 0) {
      // A replica's connection carries the stream one way: Redis neither runs nor answers
      // what a replica sends but REPLCONF.
    } else if (replica_ && c.session.authenticated && exec_.is_write(c.argv)) {
      Reply::error("READONLY You can't write against a read only replica.").write_resp(c.out);
    } else {
      sync_clock();  // one reading per command
      c.last_command.assign(c.argv[0], 0, 32);  // (CLIENT LIST; its room is reused)
      exec_.execute_into(c.argv, c.session, c.out);
    }
    // AUTH lifts the bounds of an unauthenticated client from its next request on.
    if (c.session.authenticated != was_authenticated) c.parser.set_limits(parser_limits(c));
    c.argv.clear();
    if (c.argv.capacity() > kKeepArgs) std::vector<std::string>().swap(c.argv);  // a huge command's slots
    c.argv_bytes = 0;
    if (c.session.action == Action::shutdown) {
      c.out.truncate(before);  // SHUTDOWN sends no reply
      account(c);
      std::fprintf(stderr, "expiring-server: SHUTDOWN, bye\n");
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
bool Server::write_client(Client& c) {
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

void Server::flush_pending() {
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

void Server::info(std::string_view section, std::string& out) {
  auto line = [&](const char* k, const std::string& v) {
    out += k;
    out += ':';
    out += v;
    out += "\r\n";
  };
  if (section == "server") {
    line("multiplexing_api", "epoll");
    line("clock", cfg_.manual_clock ? "manual" : "system");
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
    // Redis's fields and names (a replica's offsets are its primary's; its own stream, to
    // replicas of its own, has this server's replication ID).
    line("role", replica_ ? "slave" : "master");
    if (replica_) {
      line("master_host", link_.host);
      line("master_port", std::to_string(link_.port));
      const bool connected = link_.state == Link::connected;
      const bool up = connected && !link_.reader->syncing();
      line("master_link_status", up ? "up" : "down");
      line("master_last_io_seconds_ago", connected ? std::to_string((steady_ms() - link_.last_io_ms) / 1000) : "-1");
      line("master_sync_in_progress", connected && link_.reader->syncing() ? "1" : "0");
      const std::int64_t off = up ? link_.reader->offset() : link_.offset;
      line("slave_read_repl_offset", std::to_string(off));
      line("slave_repl_offset", std::to_string(off));
      line("master_syncs", std::to_string(link_.syncs));
      line("master_partial_syncs", std::to_string(link_.partial_syncs));
      line("master_link_timeouts", std::to_string(link_.timeouts));
      if (up) {
        const auto& a = link_.reader->applier();
        line("master_stream_applied", std::to_string(a.applied()));
        line("master_stream_skipped", std::to_string(a.skipped()));
        line("master_stream_refused", std::to_string(a.refused()));
      }
    }
    line("connected_slaves", std::to_string(replicas_.size()));
    std::size_t n = 0;
    for (int fd : replicas_) {
      const auto it = clients_.find(fd);
      if (it == clients_.end()) continue;
      const Client& r = *it->second;
      line(("slave" + std::to_string(n++)).c_str(), "ip=127.0.0.1,port=" + std::to_string(r.replica_port) +
                                              ",state=" + (r.sync_unsent != 0 ? "wait_bgsave" : "online") +
                                              ",offset=" + std::to_string(r.ack_offset) + ",lag=" +
                                              std::to_string(r.ack_ms == 0 ? 0 : (steady_ms() - r.ack_ms) / 1000));
    }
    line("master_replid", replica_ && link_.state == Link::connected && !link_.reader->syncing() ? link_.reader->replid()
                                                                                                 : replid_);
    line("master_repl_offset", std::to_string(replica_ && link_.state == Link::connected && !link_.reader->syncing()
                                                   ? link_.reader->offset()
                                                   : master_offset_));
    line("repl_backlog_active", "1");
    line("repl_backlog_size", std::to_string(exec_.options().repl_backlog_size));
    line("repl_backlog_first_byte_offset", std::to_string(backlog_first_));
    line("repl_backlog_histlen", std::to_string(backlog_.size()));
  } else if (section == "stats") {
    line("total_connections_received", std::to_string(total_connections_));
    line("total_commands_processed", std::to_string(exec_.commands_processed()));
    line("total_net_input_bytes", std::to_string(net_in_));
    line("total_net_output_bytes", std::to_string(net_out_));
    line("rejected_connections", std::to_string(rejected_connections_));
    line("sync_full", std::to_string(sync_full_));
    line("sync_partial_ok", std::to_string(sync_partial_ok_));
    line("sync_partial_err", std::to_string(sync_partial_err_));
    // Redis 7.2's names; Redis 7.0.15 prints neither.
    line("client_query_buffer_limit_disconnections", std::to_string(query_limit_disconnections_));
    line("client_output_buffer_limit_disconnections", std::to_string(output_limit_disconnections_));
    line("migrate_cached_sockets", std::to_string(migrate_sockets_.size()));
  }
}

}  // namespace expiring::server

namespace expiring::server {

// ---- CLIENT LIST, INFO and KILL (the rest of CLIENT is the command layer's) ----

// One client as Redis 7.0's CLIENT LIST prints it (the fields a tool reads; the memory ones are
// this server's buffers).
std::string Server::client_line(const Client& c) const {
  const std::int64_t now = steady_ms();
  std::string flags;
  if (replicas_.count(c.fd) != 0) flags += 'S';
  if (c.session.subscribed()) flags += 'P';
  if (c.session.in_multi) flags += 'x';
  if (c.closing || c.close_after_write) flags += 'A';
  if (flags.empty()) flags = "N";
  const auto n = [](std::uint64_t v) { return std::to_string(v); };
  std::string l = "id=" + n(c.session.id) + " addr=" + c.addr + " laddr=127.0.0.1:" + std::to_string(port_) +
                  " fd=" + std::to_string(c.fd) + " name=" + c.session.name + " age=" + n(static_cast<std::uint64_t>((now - c.created_ms) / 1000)) +
                  " idle=" + n(static_cast<std::uint64_t>((now - c.last_ms) / 1000)) + " flags=" + flags +
                  " db=" + n(c.session.db) + " sub=" + n(c.session.channels.size()) + " psub=" + n(c.session.patterns.size()) +
                  " ssub=0 multi=" + (c.session.in_multi ? n(c.session.queued.size()) : std::string("-1")) +
                  " qbuf=" + n(c.parser.buffered_bytes()) + " qbuf-free=0 argv-mem=" + n(c.argv_bytes) +
                  " multi-mem=" + n(c.session.queued_bytes) + " rbs=" + n(kReadChunk) + " rbp=0 obl=0 oll=" + n(c.out.blocks()) +
                  " omem=" + n(c.out.allocated()) + " tot-mem=" + n(c.counted) + " events=" + (c.reading ? "r" : "") +
                  (c.want_write ? "w" : "") + " cmd=" + (c.last_command.empty() ? "NULL" : expiring::redis::detail::lowercase(c.last_command)) +
                  " user=default redir=-1 resp=" + n(static_cast<std::uint64_t>(c.session.resp)) + "\n";
  return l;
}

void Server::add_client_command() {
  using Args = Executor::Args;
  using expiring::redis::detail::iequals;
  exec_.add_command("client", -2, "admin noscript loading stale", [this](const Args& a, expiring::redis::Session& s) {
    Client* self = static_cast<Client*>(s.owner);
    if (iequals(a[1], "list")) {
      // CLIENT LIST [TYPE normal|master|replica|slave|pubsub] [ID id ...]
      std::string type;
      std::vector<std::uint64_t> ids;
      for (std::size_t i = 2; i < a.size(); ++i) {
        if (iequals(a[i], "type") && i + 1 < a.size()) {
          type = expiring::redis::detail::lowercase(a[++i]);
          if (type != "normal" && type != "master" && type != "replica" && type != "slave" && type != "pubsub") {
            return Reply::error("ERR Unknown client type '" + a[i] + "'");
          }
        } else if (iequals(a[i], "id") && i + 1 < a.size()) {
          for (++i; i < a.size(); ++i) {
            std::int64_t id = 0;
            if (!expiring::redis::parse_int64(a[i], id) || id <= 0) return Reply::error("ERR Invalid client ID");
            ids.push_back(static_cast<std::uint64_t>(id));
          }
        } else {
          return Reply::error("ERR syntax error");
        }
      }
      std::vector<const Client*> all;
      for (const auto& kv : clients_) all.push_back(kv.second.get());
      std::sort(all.begin(), all.end(), [](const Client* x, const Client* y) { return x->session.id < y->session.id; });
      std::string out;
      for (const Client* c : all) {
        if (!ids.empty() && std::find(ids.begin(), ids.end(), c->session.id) == ids.end()) continue;
        if (!type.empty() && client_type(*c) != (type == "slave" ? "replica" : type)) continue;
        out += client_line(*c);
      }
      return Reply::verbatim(std::move(out));  // (RESP2: a bulk)
    }
    if (iequals(a[1], "info") && a.size() == 2 && self != nullptr) return Reply::verbatim(client_line(*self));
    if (iequals(a[1], "kill")) return client_kill(a, self);
    return exec_.run_builtin(a, s);
  });
}

std::string Server::client_type(const Client& c) const {
  if (replicas_.count(c.fd) != 0) return "replica";
  if (c.session.subscribed()) return "pubsub";
  return "normal";
}

// CLIENT KILL ip:port (+OK), or CLIENT KILL [ID id] [TYPE type] [ADDR ip:port] [LADDR ip:port]
// [SKIPME yes|no] [USER name] [MAXAGE s] (how many).
Reply Server::client_kill(const std::vector<std::string>& a, Client* self) {
  using expiring::redis::detail::iequals;
  if (a.size() == 3) {  // the old form
    for (auto& kv : clients_) {
      Client& c = *kv.second;
      if (c.addr != a[2]) continue;
      if (&c == self) {
        c.close_after_write = true;
      } else {
        close_async(c);
      }
      return Reply::ok();
    }
    return Reply::error("ERR No such client");
  }
  if (a.size() % 2 != 0) return Reply::error("ERR syntax error");
  std::optional<std::uint64_t> id;
  std::string type, addr, laddr, user;
  bool skipme = true;
  std::int64_t maxage = 0;
  for (std::size_t i = 2; i + 1 < a.size(); i += 2) {
    const std::string& v = a[i + 1];
    std::int64_t n = 0;
    if (iequals(a[i], "id")) {
      if (!expiring::redis::parse_int64(v, n) || n <= 0) return Reply::error("ERR client-id should be greater than 0");
      id = static_cast<std::uint64_t>(n);
    } else if (iequals(a[i], "type")) {
      type = expiring::redis::detail::lowercase(v);
      if (type == "slave") type = "replica";
      if (type != "normal" && type != "master" && type != "replica" && type != "pubsub") {
        return Reply::error("ERR Unknown client type '" + v + "'");
      }
    } else if (iequals(a[i], "addr")) {
      addr = v;
    } else if (iequals(a[i], "laddr")) {
      laddr = v;
    } else if (iequals(a[i], "user")) {
      user = v;
    } else if (iequals(a[i], "skipme")) {
      if (iequals(v, "yes")) {
        skipme = true;
      } else if (iequals(v, "no")) {
        skipme = false;
      } else {
        return Reply::error("ERR syntax error");
      }
    } else if (iequals(a[i], "maxage")) {
      if (!expiring::redis::parse_int64(v, maxage)) return Reply::error("ERR syntax error");
    } else {
      return Reply::error("ERR syntax error");
    }
  }
  const std::int64_t now = steady_ms();
  std::int64_t killed = 0;
  for (auto& kv : clients_) {
    Client& c = *kv.second;
    if (c.closing) continue;
    if (id && c.session.id != *id) continue;
    if (!type.empty() && client_type(c) != type) continue;
    if (!addr.empty() && c.addr != addr) continue;
    if (!laddr.empty() && laddr != "127.0.0.1:" + std::to_string(port_)) continue;
    if (!user.empty() && user != "default") continue;
    if (maxage > 0 && (now - c.created_ms) / 1000 < maxage) continue;
    if (&c == self && skipme) continue;
    ++killed;
    if (&c == self) {
      c.close_after_write = true;
    } else {
      close_async(c);
    }
  }
  return Reply::integer(killed);
}

}  // namespace expiring::server
