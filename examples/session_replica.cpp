// session_replica: a service that reads sessions from an in-process replica of its Redis
// primary.
//
// A login service writes sessions to Redis (here through RedisStore: HSET session:<id> user
// <name> role <role>, PEXPIRE 30 min; logout is DEL). The API service that checks a session on
// every request does not ask Redis: it holds an expiring::Replica, a thread that follows the
// primary as a Redis replica does into a ConcurrentStore, and reads it locally from its
// request threads. A session appears as soon as the primary streams it, a logout removes it,
// and an expired session is hidden at once (the replica's clock) and deleted when the primary
// says so.
//
//   session_replica --redis=127.0.0.1:6379      a redis-server already running
//   session_replica --spawn                     start a throwaway redis-server on a free port
//   ... --seconds=S                             time per measurement (default 1)
// needs: expiring::redis
// ctest-args: --spawn --seconds=0.05
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <expiring/concurrent_store.hpp>
#include <expiring/field_map.hpp>
#include <expiring/redis/value.hpp>
#include <expiring/redis_store.hpp>
#include <expiring/replica.hpp>

extern char** environ;

namespace {

using Sessions = expiring::ConcurrentStore<std::string, expiring::redis::Value>;
using Clock = std::chrono::steady_clock;

// The API service's check: the user of a live session, from the local replica.
std::optional<std::string> authorize(Sessions& sessions, const std::string& session_id) {
  auto user = sessions.hget("session:" + session_id, "user");
  if (!user.ok() || !*user) return std::nullopt;
  return **user;
}

// Polls `ok` every 100 us for up to 5 s; how long it took, or -1.
template <class F>
double wait_ms(F&& ok) {
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::seconds(5)) {
    if (ok()) return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return -1;
}

// --spawn: a redis-server of our own, on a free loopback port, stopped at exit.
struct Spawned {
  pid_t pid = -1;
  int port = 0;
  bool start() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    port = ntohs(a.sin_port);
    std::string p = std::to_string(port);
    std::vector<std::string> args = {"redis-server", "--port", p, "--bind", "127.0.0.1", "--save", "",
                                     "--logfile", "/dev/null", "--repl-diskless-sync-delay", "0"};
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    if (::posix_spawnp(&pid, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) return false;
    for (int i = 0; i < 500; ++i) {  // until it answers, 5 s at most
      const int s = ::socket(AF_INET, SOCK_STREAM, 0);
      const bool up = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(s);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  ~Spawned() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 6379;
  double seconds = 1;
  Spawned spawned;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--redis=", 0) == 0) {
      const std::string hp = a.substr(8);
      host = hp.substr(0, hp.rfind(':'));
      port = std::atoi(hp.c_str() + hp.rfind(':') + 1);
    } else if (a == "--spawn") {
      if (!spawned.start()) {
        std::fprintf(stderr, "session_replica: cannot start redis-server (is it installed?)\n");
        return 1;
      }
      port = spawned.port;
    } else if (a.rfind("--seconds=", 0) == 0) {
      seconds = std::atof(a.c_str() + 10);
    } else {
      std::fprintf(stderr, "usage: session_replica [--redis=HOST:PORT | --spawn] [--seconds=S]\n");
      return 2;
    }
  }

  // The login service: writes to the primary.
  expiring::RedisOptions ro;
  ro.nodes = {expiring::RedisEndpoint{host, port}};
  expiring::RedisStore<std::string, expiring::FieldMap<std::string, std::string>> primary(ro);
  const auto login = [&](const std::string& id, const std::string& user, std::chrono::milliseconds ttl) {
    (void)primary.hset("session:" + id, "user", user);
    (void)primary.hset("session:" + id, "role", "reader");
    (void)primary.pexpire("session:" + id, ttl.count());
  };
  for (int i = 0; i < 1000; ++i) login(std::to_string(i), "user" + std::to_string(i), std::chrono::minutes(30));

  // The API service: an in-process replica of the primary.
  Sessions sessions;
  expiring::ReplicaOptions o;
  o.host = host;
  o.port = port;
  expiring::Replica<Sessions> replica(sessions, o);
  if (!replica.wait_until_synced(std::chrono::seconds(10))) {
    std::fprintf(stderr, "session_replica: no sync with %s:%d: %s\n", host.c_str(), port,
                 replica.stats().last_error.c_str());
    return 1;
  }
  std::printf("synced %zu sessions from %s:%d\n", sessions.size(), host.c_str(), port);

  // A login is visible locally as soon as the primary streams it; a logout removes it.
  login("new", "alice", std::chrono::minutes(30));
  const double seen_ms = wait_ms([&] { return authorize(sessions, "new").has_value(); });
  std::printf("login of 'new' visible locally after %.2f ms: user %s\n", seen_ms,
              authorize(sessions, "new").value_or("?").c_str());
  (void)primary.del("session:new");
  std::printf("logout visible locally after %.2f ms\n", wait_ms([&] { return !authorize(sessions, "new"); }));
  // A session that expires: hidden by the replica's own clock at its deadline, deleted when
  // the primary sends DEL.
  login("short", "bob", std::chrono::milliseconds(200));
  (void)wait_ms([&] { return authorize(sessions, "short").has_value(); });
  std::printf("a 200 ms session: refused locally after %.0f ms\n", wait_ms([&] { return !authorize(sessions, "short"); }));

  // Requests on two threads, each a local check, against one HGET round trip to the primary.
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> checks{0}, ok{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      std::uint64_t n = 0, good = 0;
      while (!stop) {
        good += authorize(sessions, std::to_string((n * 7 + static_cast<std::uint64_t>(t)) % 1000)) ? 1 : 0;
        ++n;
      }
      checks += n;
      ok += good;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  const double local_per_s = static_cast<double>(checks.load()) / seconds;
  std::uint64_t remote = 0;
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    (void)primary.hget("session:" + std::to_string(remote % 1000), "user");
    ++remote;
  }
  const double remote_per_s = static_cast<double>(remote) / seconds;
  std::printf("local checks: %.2f M/s on 2 threads (%llu of %llu found); HGET over the network: %.0f k/s on 1 "
              "connection\n",
              local_per_s / 1e6, static_cast<unsigned long long>(ok.load()), static_cast<unsigned long long>(checks.load()),
              remote_per_s / 1e3);
  const expiring::ReplicaStats st = replica.stats();
  std::printf("replica: link %s, offset %lld, %llu commands applied, %lld ms since the primary's last byte\n",
              st.link_up ? "up" : "down", static_cast<long long>(st.offset), static_cast<unsigned long long>(st.applied),
              static_cast<long long>(st.ms_since_last_io));
  return ok.load() == checks.load() && st.link_up ? 0 : 1;
}
