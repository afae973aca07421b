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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

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
#include <vector>

#include <expiring/redis/commands.hpp>

namespace {

using expiring::redis::Action;
using expiring::redis::CommandExecutor;
using expiring::redis::Reply;
using expiring::redis::RequestParser;
using Store = expiring::redis::StringStore<expiring::SystemClock>;

constexpr std::size_t kReadChunk = 16 * 1024;                 // Redis PROTO_IOBUF_LEN
constexpr std::size_t kOutputHighWater = 32 * 1024 * 1024;    // stop reading a client past this

struct Client {
  int fd = -1;
  RequestParser parser;
  expiring::redis::Session session;
  std::string out;
  std::size_t out_pos = 0;
  bool close_after_write = false;  // QUIT or a protocol error
  bool want_write = false;         // EPOLLOUT registered
  bool reading = true;             // EPOLLIN registered
  std::vector<std::string> argv;
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
  }

  // Binds and listens; false (with a message on stderr) on failure.
  bool open() {
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

    exec_.add_config("port", std::to_string(port_));
    exec_.add_config("bind", "127.0.0.1");
    exec_.add_config("maxclients", std::to_string(cfg_.maxclients));
    exec_.set_info_hook([this](std::string_view section, std::string& out) { info(section, out); });
    return true;
  }

  int port() const noexcept { return port_; }

  // The event loop; returns when SHUTDOWN, SIGINT or SIGTERM asks it to.
  void run() {
    using Clock = std::chrono::steady_clock;
    std::vector<epoll_event> events(256);
    auto period = std::chrono::milliseconds(1000 / store_.options().hz);
    auto next_slow = Clock::now() + period;
    while (!stop_) {
      // beforeSleep: the fast cycle (gated inside the store), then pending replies.
      store_.tick(expiring::CycleKind::Fast);
      flush_pending();
      if (stop_) break;

      const auto now = Clock::now();
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
          if (ev & (EPOLLERR | EPOLLHUP)) {
            if (!(ev & EPOLLIN)) {
              close_client(fd);
              continue;
            }
          }
          if ((ev & EPOLLOUT) && !write_client(c)) continue;
          if (ev & EPOLLIN) read_client(c);
        }
      }

      // serverCron: the slow cycle at hz (CONFIG SET hz changes the period).
      if (Clock::now() >= next_slow) {
        store_.tick(expiring::CycleKind::Slow);
        period = std::chrono::milliseconds(1000 / store_.options().hz);
        next_slow = Clock::now() + period;
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

  void accept_clients() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error: try again on the next event
      ++total_connections_;
      if (clients_.size() >= static_cast<std::size_t>(cfg_.maxclients)) {
        static const char kErr[] = "-ERR max number of clients reached\r\n";
        (void)!::send(fd, kErr, sizeof kErr - 1, MSG_NOSIGNAL);
        ::close(fd);
        ++rejected_connections_;
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Client>();
      c->fd = fd;
      c->session.id = ++next_client_id_;
      add_fd(fd, EPOLLIN);
      clients_.emplace(fd, std::move(c));
    }
  }

  void close_client(int fd) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    clients_.erase(fd);
  }

  void read_client(Client& c) {
    char buf[kReadChunk];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_client(c.fd);
      return;
    }
    if (n < 0) return;
    net_in_ += static_cast<std::uint64_t>(n);
    c.parser.feed(buf, static_cast<std::size_t>(n));
    process(c);
  }

  // Runs the complete commands buffered for a client, until its output is too large.
  void process(Client& c) {
    while (!c.close_after_write && !stop_) {
      if (c.out.size() - c.out_pos > kOutputHighWater) {
        if (c.reading) {  // backpressure: read again once the client has drained its replies
          c.reading = false;
          update_events(c);
        }
        break;
      }
      const RequestParser::Status s = c.parser.next(c.argv);
      if (s == RequestParser::Status::incomplete) break;
      if (s == RequestParser::Status::limit) {  // client-query-buffer-limit: dropped silently
        c.out.clear();
        c.out_pos = 0;
        c.close_after_write = true;
        break;
      }
      if (s == RequestParser::Status::protocol_error) {
        Reply::error(c.parser.error()).write_resp(c.out);
        c.close_after_write = true;
        break;
      }
      const Reply r = exec_.execute(c.argv, c.session);
      if (c.session.action == Action::shutdown) {
        std::fprintf(stderr, "resp_server: SHUTDOWN, bye\n");
        stop_ = true;
        break;
      }
      r.write_resp(c.out);
      if (c.session.action == Action::close) c.close_after_write = true;
    }
    if (c.out.size() > c.out_pos || c.close_after_write) pending_.push_back(c.fd);
  }

  // Writes what it can; false if the client was closed.
  bool write_client(Client& c) {
    while (c.out_pos < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        close_client(c.fd);
        return false;
      }
      net_out_ += static_cast<std::uint64_t>(n);
      c.out_pos += static_cast<std::size_t>(n);
    }
    if (c.out_pos == c.out.size()) {
      c.out.clear();
      c.out_pos = 0;
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
      if (it != clients_.end()) write_client(*it->second);
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
    } else if (section == "stats") {
      line("total_connections_received", std::to_string(total_connections_));
      line("total_commands_processed", std::to_string(exec_.commands_processed()));
      line("total_net_input_bytes", std::to_string(net_in_));
      line("total_net_output_bytes", std::to_string(net_out_));
      line("rejected_connections", std::to_string(rejected_connections_));
    }
  }

  Config cfg_;
  Store store_;
  CommandExecutor<expiring::SystemClock> exec_;
  int listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1;
  int port_ = 0;
  bool stop_ = false;
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  std::vector<int> pending_;
  std::uint64_t next_client_id_ = 0, total_connections_ = 0, rejected_connections_ = 0;
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
