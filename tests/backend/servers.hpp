// tests/backend/servers.hpp: the test harness of the Redis backend's tests. It starts real
// redis-server processes (Debian's 7.0.15) on free loopback ports, each in a fresh temporary
// directory with its own log: a StandaloneRedis (which a test can stop and start again on the
// same port) and a 3-master RedisCluster made with `redis-cli --cluster create`, with the
// slot-migration steps of redis-cli (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) as separate
// calls so that a test can act between them. Both talk to the servers through live::Conn
// (tests/redis/redis_live.hpp), with AUTH first when a password is set. Every wait is bounded;
// every failure throws std::runtime_error saying what failed, with the tail of the server's
// log. Destructors stop the servers and remove their directories, also when a test throws.
// Linux only (fork/exec). Each call opens its own connection: no state is shared between calls.
#pragma once

// redis_live.hpp's RespServer names expiring-server's binary by this macro, which only the
// tests/redis live and robustness targets define; the backend tests do not use RespServer.
#ifndef EXPIRING_SERVER
#define EXPIRING_SERVER ""
#endif
#include "redis/redis_live.hpp"

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace backend_test {

// True when both redis-server and redis-cli are found (see live::find_program: the
// EXPIRING_REDIS_SERVER / EXPIRING_REDIS_CLI variables, PATH, /usr/bin).
inline bool have_redis() { return live::redis_server_path().has_value() && live::redis_cli_path().has_value(); }

struct ServerConfig {
  // The default user's password (--requirepass); empty: none. The harness AUTHs with it.
  std::string requirepass;
  // Passed to redis-server verbatim, after the harness's own arguments. An ACL user, as
  // verified on 7.0.15 (each rule its own argument, no shell quoting since there is no shell):
  //   {"--user", "alice", "on", ">secret", "~*", "&*", "+@all"}
  // ("user alice on >secret ~* &* +@all"; AUTH alice secret then works). The harness itself
  // always authenticates as the default user, with `requirepass`.
  std::vector<std::string> extra_args;
};

namespace detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline std::string join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    s += a.empty() ? std::string("\"\"") : a;
  }
  return s;
}

// The last `lines` lines of a file ("" when it cannot be read).
inline std::string file_tail(const std::string& path, std::size_t lines = 20) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  const std::size_t from = all.size() > lines ? all.size() - lines : 0;
  std::string out;
  for (std::size_t i = from; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

// A fresh directory under $TMPDIR (else /tmp), removed recursively on destruction.
class TempDir {
 public:
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t != nullptr && *t != '\0' ? t : "/tmp") + "/expiring-backend-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      throw std::runtime_error("mkdtemp(" + tmpl + ") failed: " + std::strerror(errno));
    }
    path_ = buf.data();
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Whether 127.0.0.1:port can be bound now (without SO_REUSEADDR: stricter than redis-server,
// which sets it, so a port in TIME_WAIT counts as taken here).
inline bool port_is_free(int port) {
  if (port <= 0 || port > 65535) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

inline std::string reply_text(const live::Reply& r) {
  std::ostringstream os;
  os << r;
  return os.str();
}

// A connection to 127.0.0.1:port, authenticated as the default user when `password` is set.
inline std::unique_ptr<live::Conn> connect_admin(int port, const std::string& password) {
  auto c = std::make_unique<live::Conn>(port);  // throws "cannot connect to port P"
  if (!password.empty()) {
    const live::Reply r = c->call({"AUTH", password});
    if (r.is_error()) throw std::runtime_error("AUTH on port " + std::to_string(port) + " failed: " + r.str());
  }
  return c;
}

// One command on a connection; a transport failure (closed, timed out) becomes a
// runtime_error naming the port and the command. Error replies are returned, not thrown.
inline live::Reply call(live::Conn& c, int port, const std::vector<std::string>& argv) {
  try {
    return c.call(argv);
  } catch (const std::exception& e) {
    throw std::runtime_error("redis port " + std::to_string(port) + ": " + join(argv) + ": " + e.what());
  }
}

// A connection to 127.0.0.1:port within timeout_ms (a non-blocking connect: a blocking one
// to a listener whose backlog is full would wait for the SYN retries, minutes), with that
// receive timeout too; -1 on failure.
inline int connect_within(int port, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (!ok || flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends one command on a raw socket and reads its reply's first line (without CRLF), for
// replies of one line (+OK, +PONG, -ERR ...). nullopt on a send failure, EOF or timeout.
inline std::optional<std::string> probe_line(int fd, const std::vector<std::string>& argv) {
  const std::string req = live::encode(argv);
  std::size_t off = 0;
  while (off < req.size()) {
    const ssize_t n = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return std::nullopt;
    off += static_cast<std::size_t>(n);
  }
  std::string line;
  for (int i = 0; i < 4096; ++i) {  // a line of at most 4 KB
    char c = 0;
    if (::recv(fd, &c, 1, 0) != 1) return std::nullopt;
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    line += c;
  }
  return std::nullopt;
}

// One redis-server process with its directory, port and arguments. Destruction stops the
// process first, then removes the directory (members are destroyed in reverse order).
class Node {
 public:
  Node(ServerConfig config, std::vector<std::string> mode_args)
      : config_(std::move(config)), mode_args_(std::move(mode_args)) {
    const std::optional<std::string> bin = live::redis_server_path();
    if (!bin) throw std::runtime_error("redis-server not found (set EXPIRING_REDIS_SERVER or PATH)");
    binary_ = *bin;
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() { stop(); }

  int port() const noexcept { return port_; }
  const std::string& dir() const noexcept { return dir_.path(); }
  std::string log_path() const { return dir_.path() + "/redis.log"; }
  std::string stderr_path() const { return dir_.path() + "/redis.stderr"; }
  const std::string& password() const noexcept { return config_.requirepass; }

  // The tails of the server's log file and of its stderr (where config errors go).
  std::string log_tail() const {
    const std::string log = file_tail(log_path());
    std::string s = "\n--- " + log_path() + (log.empty() ? " (empty) ---\n" : " (tail) ---\n") + log;
    const std::string err = file_tail(stderr_path());
    if (!err.empty()) s += "--- " + stderr_path() + " ---\n" + err;
    return s;
  }

  // Starts on `port` and waits until it answers PING (≤ ready_ms). False if the process
  // exited before that (bind failure, bad argument); `why` says what happened. Throws if it
  // still runs but does not answer in time, or answers AUTH/PING with an unexpected error.
  bool try_start(int port, std::string& why, int ready_ms = 10000) {
    stop();
    port_ = port;
    std::vector<std::string> argv{"--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", dir_.path(), "--daemonize", "no",
                                  "--logfile", log_path()};
    for (std::string a : mode_args_) {
      const std::size_t at = a.find("%PORT%");
      if (at != std::string::npos) a.replace(at, 6, std::to_string(port_));
      argv.push_back(std::move(a));
    }
    if (!config_.requirepass.empty()) {
      argv.push_back("--requirepass");
      argv.push_back(config_.requirepass);
    }
    for (const std::string& a : config_.extra_args) argv.push_back(a);
    cmdline_ = binary_ + " " + join(argv);
    // Through /bin/sh only to send redis-server's stderr to a file: `exec` keeps the pid.
    std::vector<std::string> full;
    if (live::is_executable("/bin/sh")) {
      full = {"/bin/sh", "-c", "exec \"$@\" 2>\"$0\"", stderr_path(), binary_};
    } else {
      full = {binary_};
    }
    full.insert(full.end(), argv.begin(), argv.end());
    proc_ = std::make_unique<live::Process>(full, false);

    const auto deadline = Clock::now() + milliseconds(ready_ms);
    std::string last = "no connection";
    for (int i = 0; i < ready_ms / 20 + 1 && Clock::now() < deadline; ++i) {
      if (!proc_->running()) {
        why = "redis-server on port " + std::to_string(port_) + " exited during startup (" + cmdline_ + ")";
        proc_.reset();
        return false;
      }
      // AUTH (when set) and PING, each answered by one line. The socket has a 500 ms receive
      // timeout, so that a listener that is not this server (the port was taken, the server
      // is exiting after failing to bind) cannot hold the loop past the liveness check.
      const int fd = connect_within(port_, 500);
      if (fd >= 0) {
        std::optional<std::string> auth, ping;
        if (!config_.requirepass.empty()) auth = probe_line(fd, {"AUTH", config_.requirepass});
        if (!auth || *auth == "+OK") ping = probe_line(fd, {"PING"});
        ::close(fd);
        if (ping && *ping == "+PONG") return true;
        const std::optional<std::string>& r = ping ? ping : auth;
        if (!r) {
          last = auth && !ping ? "AUTH: no reply" : "PING: no reply";
        } else {
          last = (ping ? "PING: " : "AUTH: ") + *r;
          // -LOADING (or -BUSY) passes; any other error will not.
          if (r->rfind("-", 0) == 0 && r->rfind("-LOADING", 0) != 0 && r->rfind("-BUSY", 0) != 0) {
            throw std::runtime_error("redis-server on port " + std::to_string(port_) + ": at startup, " + last +
                                     " (" + cmdline_ + ")" + log_tail());
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    throw std::runtime_error("redis-server on port " + std::to_string(port_) + " did not answer PING within " +
                             std::to_string(ready_ms) + " ms (last: " + last + "; " + cmdline_ + ")" + log_tail());
  }

  // Whether the last exit at startup was a failure to bind its port (or the bus port).
  bool bind_failed() const { return file_tail(log_path(), 5).find("Address already in use") != std::string::npos; }

  // Starts on a fresh free port (chosen by `pick`, which returns 0 when it found none). Up to
  // 5 ports, since one can be taken between the check and the bind; any other exit at startup
  // (a bad argument) throws at once.
  template <class Pick>
  void start_on_free_port(Pick pick) {
    std::string why;
    for (int attempt = 0; attempt < 5; ++attempt) {
      const int p = pick();
      if (p == 0) throw std::runtime_error("no free loopback port found for redis-server");
      if (try_start(p, why)) return;
      if (!bind_failed()) break;
    }
    throw std::runtime_error(why + log_tail());
  }

  // Starts again on the same port; retries for ~3 s while the port cannot be bound.
  void restart_same_port() {
    std::string why;
    const auto deadline = Clock::now() + milliseconds(3000);
    for (int attempt = 0; attempt < 15 && (attempt == 0 || Clock::now() < deadline); ++attempt) {
      if (try_start(port_, why)) return;
      if (!bind_failed()) break;
      std::this_thread::sleep_for(milliseconds(200));
    }
    throw std::runtime_error("restart failed: " + why + log_tail());
  }

  void stop() noexcept {
    if (proc_) {
      proc_->stop();  // SIGTERM, ≤ 5 s, then SIGKILL; reaps the child
      proc_.reset();
    }
  }
  bool running() { return proc_ != nullptr && proc_->running(); }

  // A fresh authenticated connection (throws naming the port when it cannot connect).
  std::unique_ptr<live::Conn> connect() const {
    try {
      return connect_admin(port_, config_.requirepass);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + (proc_ ? "" : " (the server is stopped)"));
    }
  }
  live::Reply command(const std::vector<std::string>& argv) const {
    auto c = connect();
    return call(*c, port_, argv);
  }
  // command(), throwing with the reply text (and the log tail) when the reply is an error.
  live::Reply checked(const std::vector<std::string>& argv) const {
    live::Reply r = command(argv);
    if (r.is_error()) {
      throw std::runtime_error("redis port " + std::to_string(port_) + ": " + join(argv) + " failed: " + r.str() +
                               log_tail());
    }
    return r;
  }

 private:
  ServerConfig config_;
  std::vector<std::string> mode_args_;  // a "%PORT%" in one is replaced by the port
  std::string binary_;
  std::string cmdline_;
  int port_ = 0;
  TempDir dir_;                          // destroyed after proc_
  std::unique_ptr<live::Process> proc_;  // destroyed first
};

}  // namespace detail

// ==== StandaloneRedis =========================================================================

// One redis-server: `redis-server --port P --bind 127.0.0.1 --save "" --appendonly no
// --dir <fresh tmp dir> --daemonize no --logfile <dir>/redis.log [--requirepass X] extra...`.
// Non-copyable, non-movable. Not thread-safe for stop()/start(); command() may be called from
// several threads at once (each call has its own connection).
class StandaloneRedis {
 public:
  // Starts it and waits (≤ 10 s) until it answers PING (after AUTH when requirepass is set).
  explicit StandaloneRedis(ServerConfig config = {}) : node_(std::move(config), {}) {
    node_.start_on_free_port([] { return live::free_port(); });
  }
  StandaloneRedis(const StandaloneRedis&) = delete;
  StandaloneRedis& operator=(const StandaloneRedis&) = delete;
  ~StandaloneRedis() = default;  // stops the server, removes its directory

  int port() const noexcept { return node_.port(); }
  // The directory (--dir) and the log file, e.g. for a test's own failure message.
  const std::string& dir() const noexcept { return node_.dir(); }
  std::string log_tail() const { return node_.log_tail(); }

  // Stops the server (SIGTERM, then SIGKILL after 5 s) and reaps it. The port is kept.
  void stop() noexcept { node_.stop(); }
  // Starts it again on the same port with the same configuration and waits until it answers
  // (retrying for ~3 s while the port cannot be bound). The data is gone (no persistence).
  void start() { node_.restart_same_port(); }
  bool running() { return node_.running(); }

  // A fresh admin connection (AUTH first when requirepass is set), one command, its reply.
  // An error reply is returned, not thrown; failing to connect or to read the reply throws.
  live::Reply command(const std::vector<std::string>& argv) { return node_.command(argv); }

 private:
  detail::Node node_;
};

// ==== RedisCluster ============================================================================

// Three masters (no replicas), each `--cluster-enabled yes --cluster-config-file nodes-P.conf
// --cluster-node-timeout 5000` plus StandaloneRedis's arguments, in its own directory, on a
// port P <= 55535 with P and P+10000 (the cluster bus) free; joined with `redis-cli --cluster
// create ... --cluster-replicas 0 --cluster-yes` (slots 0-5460, 5461-10922, 10923-16383 in
// node order, but use owner_of_slot()). Nodes are indexed 0, 1, 2 in the order of ports().
// Non-copyable, non-movable.
class RedisCluster {
 public:
  static constexpr std::size_t kNodes = 3;

  // Starts the nodes, creates the cluster and waits (≤ 30 s) until every node reports
  // cluster_state:ok, 16384 slots assigned and 3 known nodes, and all CLUSTER SLOTS agree.
  explicit RedisCluster(ServerConfig config = {}) : config_(std::move(config)) {
    const std::optional<std::string> cli = live::redis_cli_path();
    if (!cli) throw std::runtime_error("redis-cli not found (set EXPIRING_REDIS_CLI or PATH)");
    for (std::size_t i = 0; i < kNodes; ++i) {
      nodes_.push_back(std::make_unique<detail::Node>(
          config_, std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file",
                                            "nodes-%PORT%.conf", "--cluster-node-timeout", "5000"}));
      nodes_.back()->start_on_free_port([this] { return pick_cluster_port(); });
      ports_.push_back(nodes_.back()->port());
    }
    for (std::size_t i = 0; i < kNodes; ++i) {
      const live::Reply id = nodes_[i]->checked({"CLUSTER", "MYID"});
      ids_.push_back(id.str());
    }

    std::vector<std::string> argv{*cli};
    if (!config_.requirepass.empty()) {
      argv.push_back("-a");
      argv.push_back(config_.requirepass);
      argv.push_back("--no-auth-warning");
    }
    argv.push_back("--cluster");
    argv.push_back("create");
    for (int p : ports_) argv.push_back("127.0.0.1:" + std::to_string(p));
    for (const char* a : {"--cluster-replicas", "0", "--cluster-yes"}) argv.push_back(a);
    const live::RunResult r = live::run_program(argv, "", 30000);
    if (r.exit_code() != 0) {
      const std::string how = WIFSIGNALED(r.status)
                                  ? "killed: it did not finish within 30 s"
                                  : "exit code " + std::to_string(r.exit_code());
      throw std::runtime_error("redis-cli --cluster create failed (" + how + "): " + detail::join(argv) +
                               "\nits output:\n" + r.out + all_log_tails());
    }
    wait_cluster_ok(30000);
  }
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster() = default;  // stops all nodes, removes their directories

  const std::vector<int>& ports() const noexcept { return ports_; }
  // The node's id (CLUSTER MYID, read once at startup: it never changes).
  std::string node_id(std::size_t i) const { return ids_.at(check_index(i)); }
  // A fresh admin connection to node `node`, one command, its reply (errors such as MOVED
  // are returned, not thrown).
  live::Reply command(std::size_t node, const std::vector<std::string>& argv) {
    return nodes_[check_index(node)]->command(argv);
  }
  // The log tails of all nodes, for a test's own failure message.
  std::string all_log_tails() const {
    std::string s;
    for (const auto& n : nodes_) s += n->log_tail();
    return s;
  }

  // CLUSTER KEYSLOT on node 0.
  int keyslot(const std::string& key) {
    return static_cast<int>(nodes_[0]->checked({"CLUSTER", "KEYSLOT", key}).integer());
  }

  // The index of the node that owns `slot`, as node 0's CLUSTER SLOTS says.
  std::size_t owner_of_slot(int slot) { return owner_in(slot_map(0), slot, 0); }

  // "{<prefix>N}" for the smallest N = 0, 1, 2, ... whose slot `node` owns (as node 0 sees
  // it). Throws after 100000 candidates or 20 s.
  std::string key_in_slot_of_node(std::size_t node, const std::string& prefix) {
    check_index(node);
    const SlotMap map = slot_map(0);
    auto c = nodes_[0]->connect();
    const auto deadline = detail::Clock::now() + std::chrono::seconds(20);
    for (long n = 0; n < 100000 && detail::Clock::now() < deadline; ++n) {
      const std::string key = "{" + prefix + std::to_string(n) + "}";
      const live::Reply r = detail::call(*c, ports_[0], {"CLUSTER", "KEYSLOT", key});
      if (r.type() != live::Reply::Type::integer) {
        throw std::runtime_error("CLUSTER KEYSLOT " + key + " answered " + detail::reply_text(r));
      }
      if (owner_in(map, static_cast<int>(r.integer()), 0) == node) return key;
    }
    throw std::runtime_error("no key {" + prefix + "N} found in a slot of node " + std::to_string(node));
  }

  // ---- Migrating a slot, in redis-cli's order (clusterManagerMoveSlot) --------------------

  // On `to`: CLUSTER SETSLOT S IMPORTING <from-id>; then on `from`: SETSLOT S MIGRATING <to-id>.
  void begin_migration(int slot, std::size_t from, std::size_t to) {
    check_pair(from, to);
    const std::string s = std::to_string(slot);
    nodes_[to]->checked({"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]});
    nodes_[from]->checked({"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to]});
  }

  // On `from`, until CLUSTER GETKEYSINSLOT S 100 is empty: MIGRATE 127.0.0.1 <to-port> "" 0
  // 5000 [AUTH pw] KEYS k1 k2 .... Returns the number of keys moved. Throws on an error
  // reply, and after 10000 batches or 60 s.
  std::size_t migrate_keys(int slot, std::size_t from, std::size_t to) {
    check_pair(from, to);
    std::size_t moved = 0;
    auto c = nodes_[from]->connect();
    const int port = ports_[from];
    const auto deadline = detail::Clock::now() + std::chrono::seconds(60);
    for (int batch = 0; batch < 10000 && detail::Clock::now() < deadline; ++batch) {
      const live::Reply keys = detail::call(*c, port, {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
      if (keys.type() != live::Reply::Type::array) {
        throw std::runtime_error("CLUSTER GETKEYSINSLOT " + std::to_string(slot) + " on node " +
                                 std::to_string(from) + " answered " + detail::reply_text(keys) +
                                 nodes_[from]->log_tail());
      }
      if (keys.elements().empty()) return moved;
      std::vector<std::string> argv{"MIGRATE", "127.0.0.1", std::to_string(ports_[to]), "", "0", "5000"};
      if (!config_.requirepass.empty()) {
        argv.push_back("AUTH");
        argv.push_back(config_.requirepass);
      }
      argv.push_back("KEYS");
      for (const live::Reply& k : keys.elements()) argv.push_back(k.str());
      const live::Reply r = detail::call(*c, port, argv);
      if (r.is_error()) {
        throw std::runtime_error("MIGRATE of " + std::to_string(keys.elements().size()) + " keys of slot " +
                                 std::to_string(slot) + " from node " + std::to_string(from) + " to node " +
                                 std::to_string(to) + " failed: " + r.str() + nodes_[from]->log_tail() +
                                 nodes_[to]->log_tail());
      }
      if (r.str() == "OK") moved += keys.elements().size();  // "NOKEY": they expired meanwhile
    }
    throw std::runtime_error("migrating the keys of slot " + std::to_string(slot) + " did not finish (" +
                             std::to_string(moved) + " moved so far)");
  }

  // CLUSTER SETSLOT S NODE <to-id> on `to`, then on `from` (where "Please use SETSLOT only
  // with masters" is accepted), then on the third node; then waits (≤ 10 s) until all three
  // nodes' CLUSTER SLOTS say that `to` owns S.
  void finish_migration(int slot, std::size_t from, std::size_t to) {
    check_pair(from, to);
    const std::string s = std::to_string(slot);
    const std::vector<std::string> argv{"CLUSTER", "SETSLOT", s, "NODE", ids_[to]};
    nodes_[to]->checked(argv);
    const live::Reply r = nodes_[from]->command(argv);
    if (r.is_error() && r.str().find("Please use SETSLOT only with masters") == std::string::npos) {
      throw std::runtime_error("redis port " + std::to_string(ports_[from]) + ": " + detail::join(argv) +
                               " failed: " + r.str() + nodes_[from]->log_tail());
    }
    nodes_[3 - from - to]->checked(argv);  // the third node (the indices sum to 0 + 1 + 2)

    const auto deadline = detail::Clock::now() + std::chrono::seconds(10);
    std::string seen;
    for (int i = 0; i < 100 && detail::Clock::now() < deadline; ++i) {
      bool all = true;
      seen.clear();
      for (std::size_t n = 0; n < kNodes; ++n) {
        const SlotMap map = slot_map(n);
        const std::optional<std::size_t> o = find_owner(map, slot);
        seen += " node " + std::to_string(n) + ": " + (o ? std::to_string(*o) : std::string("none")) + ";";
        if (o != to) all = false;
      }
      if (all) return;
      std::this_thread::sleep_for(detail::milliseconds(100));
    }
    throw std::runtime_error("after SETSLOT " + s + " NODE, the nodes do not all agree that node " +
                             std::to_string(to) + " owns the slot within 10 s (owner seen by" + seen + ")" +
                             all_log_tails());
  }

  // Kills node i (its slots then have no server: no replicas here).
  void stop_node(std::size_t i) { nodes_[check_index(i)]->stop(); }
  // Starts node i again on its port and directory (its nodes-P.conf keeps its identity and
  // slots; its keys are gone: no persistence), then waits (<= 30 s) for cluster_state:ok.
  void restart_node(std::size_t i) {
    nodes_[check_index(i)]->restart_same_port();
    wait_cluster_ok(30000);
  }

 private:
  // One CLUSTER SLOTS range: start, end, owner's node id.
  using SlotMap = std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>;

  std::size_t check_index(std::size_t i) const {
    if (i >= nodes_.size()) {
      throw std::runtime_error("RedisCluster: node index " + std::to_string(i) + " out of range (" +
                               std::to_string(nodes_.size()) + " nodes)");
    }
    return i;
  }
  void check_pair(std::size_t from, std::size_t to) const {
    check_index(from);
    check_index(to);
    if (from == to) throw std::runtime_error("RedisCluster: migrating a slot from node " + std::to_string(from) + " to itself");
  }

  // A port P <= 55535 with P and P+10000 free and distinct from the ports (and bus ports)
  // already taken by earlier nodes; 0 after 500 tries.
  int pick_cluster_port() const {
    for (int attempt = 0; attempt < 500; ++attempt) {
      const int p = live::free_port();
      if (p <= 0 || p > 55535) continue;
      bool clash = false;
      for (int q : ports_) clash = clash || p == q || p == q + 10000 || p + 10000 == q;
      if (clash) continue;
      if (detail::port_is_free(p) && detail::port_is_free(p + 10000)) return p;
    }
    return 0;
  }

  // Node n's CLUSTER SLOTS, sorted by start. Throws on an error or malformed reply.
  SlotMap slot_map(std::size_t n) const {
    const live::Reply r = nodes_[n]->command({"CLUSTER", "SLOTS"});
    SlotMap map;
    bool ok = r.type() == live::Reply::Type::array;
    for (std::size_t i = 0; ok && i < r.elements().size(); ++i) {
      const live::Reply& e = r.elements()[i];
      ok = e.type() == live::Reply::Type::array && e.elements().size() >= 3 &&
           e.elements()[0].type() == live::Reply::Type::integer &&
           e.elements()[1].type() == live::Reply::Type::integer &&
           e.elements()[2].type() == live::Reply::Type::array && e.elements()[2].elements().size() >= 3;
      if (ok) map.emplace_back(e.elements()[0].integer(), e.elements()[1].integer(), e.elements()[2].elements()[2].str());
    }
    if (!ok) {
      throw std::runtime_error("CLUSTER SLOTS on node " + std::to_string(n) + " answered " + detail::reply_text(r) +
                               nodes_[n]->log_tail());
    }
    std::sort(map.begin(), map.end());
    return map;
  }
  std::optional<std::size_t> find_owner(const SlotMap& map, int slot) const {
    for (const auto& [start, end, id] : map) {
      if (slot < start || slot > end) continue;
      for (std::size_t i = 0; i < ids_.size(); ++i) {
        if (ids_[i] == id) return i;
      }
      return std::nullopt;  // an id that is not one of ours
    }
    return std::nullopt;
  }
  std::size_t owner_in(const SlotMap& map, int slot, std::size_t seen_by) const {
    const std::optional<std::size_t> o = find_owner(map, slot);
    if (!o) {
      throw std::runtime_error("slot " + std::to_string(slot) + " is not owned by any node of the cluster, as node " +
                               std::to_string(seen_by) + " sees it");
    }
    return *o;
  }

  // Polls every 150 ms until each node's CLUSTER INFO has cluster_state:ok,
  // cluster_slots_assigned:16384 and cluster_known_nodes:3, and all CLUSTER SLOTS agree.
  void wait_cluster_ok(int timeout_ms) {
    const auto deadline = detail::Clock::now() + detail::milliseconds(timeout_ms);
    std::string last;
    for (int i = 0; i < timeout_ms / 150 + 1 && detail::Clock::now() < deadline; ++i) {
      bool ok = true;
      for (std::size_t n = 0; ok && n < kNodes; ++n) {
        const live::Reply info = nodes_[n]->command({"CLUSTER", "INFO"});
        const std::string& t = info.str();
        if (info.is_error() || t.find("cluster_state:ok\r\n") == std::string::npos ||
            t.find("cluster_slots_assigned:16384\r\n") == std::string::npos ||
            t.find("cluster_known_nodes:3\r\n") == std::string::npos) {
          ok = false;
          last = "node " + std::to_string(n) + " CLUSTER INFO:\n" + t.substr(0, t.find("cluster_size"));
        }
      }
      if (ok) {
        const SlotMap first = slot_map(0);
        for (std::size_t n = 1; ok && n < kNodes; ++n) {
          if (slot_map(n) != first) {
            ok = false;
            last = "CLUSTER SLOTS differ between node 0 and node " + std::to_string(n);
          }
        }
      }
      if (ok) return;
      std::this_thread::sleep_for(detail::milliseconds(150));
    }
    throw std::runtime_error("the cluster did not become ready within " + std::to_string(timeout_ms) +
                             " ms; last seen: " + last + all_log_tails());
  }

  ServerConfig config_;
  std::vector<int> ports_;
  std::vector<std::string> ids_;
  std::vector<std::unique_ptr<detail::Node>> nodes_;  // destroyed first: stops, removes dirs
};

}  // namespace backend_test
