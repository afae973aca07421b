// tests/redis/redis_live.hpp: helpers of the live tests: finding redis-server / redis-cli,
// starting and stopping server processes on free loopback ports, a small blocking RESP
// client that returns each reply's exact bytes, and running a program to capture its output.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "expiring/redis/resp.hpp"

namespace live {

using Argv = std::vector<std::string>;
using expiring::redis::Reply;

// ---- Programs --------------------------------------------------------------------------------

inline bool is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// $<env_var>, else `name` on PATH, else /usr/bin/<name>.
inline std::optional<std::string> find_program(const char* name, const char* env_var) {
  if (const char* e = std::getenv(env_var); e != nullptr && *e != '\0') {
    if (is_executable(e)) return std::string(e);
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t end = p.find(':', start);
      const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  const std::string fallback = std::string("/usr/bin/") + name;
  if (is_executable(fallback)) return fallback;
  return std::nullopt;
}

inline std::optional<std::string> redis_server_path() { return find_program("redis-server", "EXPIRING_REDIS_SERVER"); }
inline std::optional<std::string> redis_cli_path() { return find_program("redis-cli", "EXPIRING_REDIS_CLI"); }

// A child process; SIGTERM then SIGKILL on destruction.
class Process {
 public:
  Process() = default;
  // Starts argv[0] with the given arguments; stdout goes to a pipe readable with read_line()
  // when `capture_stdout`, else to /dev/null; stderr to /dev/null.
  // `nofile` > 0: the child's RLIMIT_NOFILE (soft and hard) is set to it before exec, as
  // `ulimit -n` would.
  Process(const Argv& argv, bool capture_stdout, long nofile = 0) { start(argv, capture_stdout, nofile); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() { stop(); }

  pid_t pid() const noexcept { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      exit_status_ = status;
      return false;
    }
    return true;
  }
  // Reads one line of the child's stdout (without the newline); nullopt on EOF or timeout.
  std::optional<std::string> read_line(int timeout_ms) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (out_fd_ >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{out_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char c = 0;
      const ssize_t n = ::read(out_fd_, &c, 1);
      if (n <= 0) return std::nullopt;
      if (c == '\n') return line;
      line += c;
    }
    return std::nullopt;
  }
  // SIGTERM, wait up to 5 s, then SIGKILL. Returns the wait status (or -1).
  int stop() {
    if (out_fd_ >= 0) {
      ::close(out_fd_);
      out_fd_ = -1;
    }
    if (pid_ <= 0) return exit_status_;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
      if (!running()) return exit_status_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = status;
    return status;
  }
  // Waits for the child to exit by itself (up to timeout_ms); the wait status, or nullopt.
  std::optional<int> wait_exit(int timeout_ms) {
    for (int i = 0; i < timeout_ms / 10; ++i) {
      if (!running()) return exit_status_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  void start(const Argv& argv, bool capture_stdout, long nofile) {
    int fds[2] = {-1, -1};
    if (capture_stdout && ::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // The child dies with the test (a test killed on its timeout must not leave servers).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(capture_stdout ? fds[1] : devnull, 1);
      ::dup2(devnull, 2);
      if (capture_stdout) {
        ::close(fds[0]);
        ::close(fds[1]);
      }
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      if (nofile > 0) {
        rlimit lim{};
        lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(nofile);
        if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(126);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (capture_stdout) {
      ::close(fds[1]);
      out_fd_ = fds[0];
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int exit_status_ = -1;
};

// Runs a program to completion, feeding `input` to its stdin; returns {wait status, stdout}.
struct RunResult {
  int status = -1;
  std::string out;
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};
inline RunResult run_program(const Argv& argv, const std::string& input, int timeout_ms = 20000) {
  int in[2], out[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe failed");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(devnull, 2);
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[0]);
    ::close(out[1]);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::signal(SIGPIPE, SIG_IGN);
  std::size_t written = 0;
  if (input.empty()) {
    ::close(in[1]);
    in[1] = -1;
  }
  RunResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool out_open = true;
  while (out_open && std::chrono::steady_clock::now() < deadline) {
    pollfd p[2] = {{out[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
    const nfds_t n = in[1] >= 0 ? 2 : 1;
    if (::poll(p, n, 100) <= 0) continue;
    if (p[0].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      const ssize_t k = ::read(out[0], buf, sizeof buf);
      if (k <= 0) {
        out_open = false;
      } else {
        r.out.append(buf, static_cast<std::size_t>(k));
      }
    }
    if (n == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t k = ::write(in[1], input.data() + written, input.size() - written);
      if (k > 0) written += static_cast<std::size_t>(k);
      if (k <= 0 || written == input.size()) {
        ::close(in[1]);
        in[1] = -1;
      }
    }
  }
  if (in[1] >= 0) ::close(in[1]);
  ::close(out[0]);
  if (out_open) ::kill(pid, SIGKILL);
  ::waitpid(pid, &r.status, 0);
  return r;
}

// ---- Sockets ---------------------------------------------------------------------------------

// A loopback port that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline int connect_loopback(int port, int timeout_ms = 10000) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline std::string encode(const Argv& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

// A blocking RESP2 client: sends commands, returns each reply's exact bytes and its value.
class Conn {
 public:
  explicit Conn(int port) : fd_(connect_loopback(port)) {
    if (fd_ < 0) throw std::runtime_error("cannot connect to port " + std::to_string(port));
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }

  void send_raw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<std::size_t>(n);
    }
  }
  // Sends what it can; false once the peer has closed (for input a server may refuse midway).
  bool try_send(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  // One command, its reply's bytes.
  std::string raw(const Argv& argv) {
    send_raw(encode(argv));
    return read_reply_bytes();
  }
  Reply call(const Argv& argv) { return decode(raw(argv)); }

  // The bytes of exactly one complete reply.
  std::string read_reply_bytes() {
    std::size_t pos = 0;
    while (!complete(buf_, pos)) {
      pos = 0;
      fill();
    }
    std::string r = buf_.substr(0, pos);
    buf_.erase(0, pos);
    return r;
  }
  // Half-closes and reads everything until the server closes (or times out).
  std::string read_to_close() {
    ::shutdown(fd_, SHUT_WR);
    std::string all = buf_;
    buf_.clear();
    char b[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n <= 0) break;
      all.append(b, static_cast<std::size_t>(n));
    }
    return all;
  }

  // Parses one encoded reply (as returned by raw()).
  static Reply decode(const std::string& bytes) {
    std::size_t pos = 0;
    return parse(bytes, pos);
  }

 private:
  void fill() {
    char b[65536];
    const ssize_t n = ::recv(fd_, b, sizeof b, 0);
    if (n <= 0) throw std::runtime_error(n == 0 ? "connection closed" : "receive timed out");
    buf_.append(b, static_cast<std::size_t>(n));
  }
  // Whether buf[pos..] holds a complete reply; advances pos past it.
  static bool complete(const std::string& buf, std::size_t& pos) {
    const std::size_t eol = buf.find("\r\n", pos);
    if (eol == std::string::npos || pos >= buf.size()) return false;
    const char t = buf[pos];
    const std::string line = buf.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    if (t == '$') {
      const long long n = std::stoll(line);
      if (n < 0) return true;
      if (buf.size() < pos + static_cast<std::size_t>(n) + 2) return false;
      pos += static_cast<std::size_t>(n) + 2;
      return true;
    }
    if (t == '*') {
      const long long n = std::stoll(line);
      for (long long i = 0; i < n; ++i) {
        if (!complete(buf, pos)) return false;
      }
      return true;
    }
    return true;
  }
  static Reply parse(const std::string& buf, std::size_t& pos) {
    const std::size_t eol = buf.find("\r\n", pos);
    const char t = buf[pos];
    const std::string line = buf.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    switch (t) {
      case '+': return Reply::status(line);
      case '-': return Reply::error(line);
      case ':': return Reply::integer(std::stoll(line));
      case '$': {
        const long long n = std::stoll(line);
        if (n < 0) return Reply::nil();
        Reply r = Reply::bulk(buf.substr(pos, static_cast<std::size_t>(n)));
        pos += static_cast<std::size_t>(n) + 2;
        return r;
      }
      case '*': {
        const long long n = std::stoll(line);
        if (n < 0) return Reply::nil_array();
        Reply r = Reply::array();
        for (long long i = 0; i < n; ++i) r.push(parse(buf, pos));
        return r;
      }
      default: throw std::runtime_error("bad reply type byte");
    }
  }

  int fd_;
  std::string buf_;
};

// ---- Servers ---------------------------------------------------------------------------------

// Debian's redis-server on a free port, no persistence. Throws if it does not come up.
// `dump_rdb`, when given, is written to its directory as dump.rdb first, for it to load.
class RedisServer {
 public:
  explicit RedisServer(const std::string& binary, const std::string& dump_rdb = {}) : binary_(binary) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = free_port();
      dir_ = "/tmp/expiring-redis-" + std::to_string(::getpid()) + "-" + std::to_string(port_);
      ::mkdir(dir_.c_str(), 0700);
      if (!dump_rdb.empty()) {
        const std::string path = dir_ + "/dump.rdb";
        FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) throw std::runtime_error("cannot write " + path);
        const bool ok = std::fwrite(dump_rdb.data(), 1, dump_rdb.size(), f) == dump_rdb.size();
        if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path);
      }
      if (start()) return;
    }
    throw std::runtime_error("redis-server did not start");
  }
  // Stops it (SIGTERM: nothing is saved, --save is off; a SAVE before leaves dump.rdb) and
  // starts it again on the same port and directory, where it loads dump.rdb.
  void restart() {
    proc_.reset();
    if (!start()) throw std::runtime_error("redis-server did not start again");
  }
  ~RedisServer() {
    proc_.reset();
    ::unlink((dir_ + "/dump.rdb").c_str());
    ::rmdir(dir_.c_str());
  }
  int port() const noexcept { return port_; }
  // Its --dir (where SAVE writes dump.rdb; a test that makes files there removes them).
  const std::string& dir() const noexcept { return dir_; }

 private:
  bool start() {
    proc_ = std::make_unique<Process>(
        Argv{binary_, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", dir_, "--daemonize", "no", "--enable-debug-command", "local", "--logfile", ""},
        false);
    for (int i = 0; i < 500 && proc_->running(); ++i) {
      const int fd = connect_loopback(port_, 1000);
      if (fd >= 0) {
        ::close(fd);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    proc_.reset();
    return false;
  }

  std::string binary_;
  int port_ = 0;
  std::string dir_;
  std::unique_ptr<Process> proc_;
};

// expiring-server (server/), started with --port 0 (it prints the port it bound).
class RespServer {
 public:
  // `nofile` > 0 starts it under that open file limit (see Process).
  explicit RespServer(Argv extra = {}, long nofile = 0) {
    Argv argv{EXPIRING_SERVER, "--port", "0"};
    for (std::string& a : extra) argv.push_back(std::move(a));
    proc_ = std::make_unique<Process>(argv, true, nofile);
    const std::optional<std::string> line = proc_->read_line(10000);
    const std::string prefix = "expiring-server: listening on 127.0.0.1:";
    if (!line || line->rfind(prefix, 0) != 0) throw std::runtime_error("expiring-server did not start");
    port_ = std::stoi(line->substr(prefix.size()));
  }
  int port() const noexcept { return port_; }
  Process& process() { return *proc_; }

 private:
  int port_ = 0;
  std::unique_ptr<Process> proc_;
};

// Sends `in` whole, or (split) in three pieces with pauses so that each arrives as its own
// read. A server may close midway through refused input: a failed send ends it; reading the
// reply still works.
inline void send_maybe_split(Conn& c, const std::string& in, bool split) {
  if (!split || in.size() < 4) {
    c.try_send(in);
    return;
  }
  const std::size_t a = in.size() / 3, b = 2 * in.size() / 3;
  if (c.try_send(in.substr(0, a))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    if (c.try_send(in.substr(a, b - a))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      c.try_send(in.substr(b));
    }
  }
}

}  // namespace live
