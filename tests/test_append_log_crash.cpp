// tests/test_append_log_crash.cpp: crash injection for the append-only log. A child process
// writes keys under each appendfsync policy and reports each write the store acknowledged
// (the call returned) down a pipe; the parent kills it with SIGKILL at a random point, then
// replays the log in a fresh store and checks:
//   * always: every acknowledged write is there, with its exact PEXPIRETIME;
//   * everysec, no: what is there is a prefix of the acknowledged writes (a killed process
//     loses its last buffered second, never a write in the middle);
//   * nothing is invented: every key is one the child wrote, with the value it wrote;
//   * keys whose deadline has passed are gone.
// Bounded: 3 kills per policy, each after at most a few thousand writes and 10 s.
#include <expiring/append_log.hpp>
#include <expiring/expiring.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

namespace {

using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::SystemClock>;
using Log = expiring::AppendLog<Store>;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/expiring-crash-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    if (DIR* d = ::opendir(path.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string f = e->d_name;
        if (f != "." && f != "..") ::unlink((path + "/" + f).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
};

// One acknowledged write, as the child reports it.
struct Ack {
  std::uint32_t i;         // the write's number: key "k<i>", value "v<i>" (or a delete of k<i>)
  std::uint8_t del;        // 1: del("k<i>")
  std::uint8_t done;       // 0: about to be made (the write in flight if no 1 follows); 1: acknowledged
  std::int64_t pexpire;    // the key's PEXPIRETIME right after the write (-1: none)
};

// The child: writes until it is killed (or its bounds run out). Never returns.
[[noreturn]] void child(const std::string& dir, expiring::Fsync policy, int fd, std::uint64_t seed) {
  Store s;
  expiring::AppendLogOptions o;
  o.fsync = policy;
  auto log = Log::open(s, dir, o);
  if (!log.ok()) ::_exit(3);
  std::mt19937_64 rng(seed);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::uint32_t i = 0; i < 200000 && std::chrono::steady_clock::now() < until; ++i) {
    Ack a{i, 0, 0, -1};
    const std::string k = "k" + std::to_string(i);
    const auto kind = rng() % 10;
    if (kind == 9 && i > 0) {
      a.i = static_cast<std::uint32_t>(rng() % i);
      a.del = 1;
    }
    if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
    a.done = 1;
    if (a.del) {
      (void)s.del("k" + std::to_string(a.i));
    } else if (kind < 5) {
      (void)s.set(k, "v" + std::to_string(i));
    } else if (kind < 8) {
      (void)s.set(k, "v" + std::to_string(i), expiring::Px{600000});  // outlives the test
    } else if (kind < 9) {
      (void)s.set(k, "v" + std::to_string(i), expiring::Px{1 + static_cast<std::int64_t>(rng() % 20)});  // gone by the check
    }
    if (!a.del) a.pexpire = s.pexpiretime(k);
    if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
  }
  ::_exit(0);
}

}  // namespace

TEST_CASE("append log crash: SIGKILL at random points loses nothing acknowledged under always, invents nothing",
          "[aof][crash]") {
  std::mt19937_64 rng(20261202);
  for (const expiring::Fsync policy : {expiring::Fsync::always, expiring::Fsync::everysec, expiring::Fsync::no}) {
    for (int trial = 0; trial < 3; ++trial) {
      CAPTURE(expiring::to_string(policy), trial);
      TempDir dir;
      int p[2];
      REQUIRE(::pipe(p) == 0);
      const std::uint64_t seed = rng();
      const std::size_t kill_after = 50 + static_cast<std::size_t>(rng() % 2000);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(p[0]);
        child(dir.path, policy, p[1], seed);
      }
      ::close(p[1]);
      std::vector<Ack> acks;
      Ack a{};
      bool killed = false;
      for (;;) {
        const ssize_t r = ::read(p[0], &a, sizeof a);
        if (r == 0) break;
        if (r < 0 && errno == EINTR) continue;
        REQUIRE(r == static_cast<ssize_t>(sizeof a));
        acks.push_back(a);
        if (!killed && acks.size() >= kill_after) {
          ::kill(pid, SIGKILL);  // what was acknowledged before now is still in the pipe
          killed = true;
        }
      }
      ::close(p[0]);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      REQUIRE(killed);
      REQUIRE(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the short TTLs pass

      Store s;
      auto log = Log::open(s, dir.path);
      INFO(log.error().message);
      REQUIRE(log.ok());
      // What the acknowledged writes leave, in order; the write in flight may or may not be
      // there, so its key is checked for what it may be only.
      std::map<std::uint32_t, std::int64_t> live;  // i -> pexpiretime
      std::uint32_t last = 0;
      std::optional<std::uint32_t> in_flight;
      if (!acks.empty() && acks.back().done == 0) {
        in_flight = acks.back().i;
        acks.pop_back();
      }
      std::vector<Ack> done;
      for (const Ack& x : acks) {
        if (x.done) done.push_back(x);
      }
      for (const Ack& x : done) {
        if (x.del) {
          live.erase(x.i);
        } else {
          live[x.i] = x.pexpire;
          last = x.i;
        }
      }
      const std::int64_t now = s.now_ms();
      auto expired = [&](std::int64_t pexpire) { return pexpire >= 0 && pexpire < now; };
      // Nothing invented, nothing stale visible.
      std::size_t present = 0;
      for (const auto& e : s) {
        ++present;
        REQUIRE(e.key.size() > 1);
        const std::uint32_t i = static_cast<std::uint32_t>(std::stoul(e.key.substr(1)));
        CHECK(e.value == "v" + std::to_string(i));
        CHECK(i <= last + 1);  // at most the write in flight when the child died
        CHECK_FALSE(expired(e.pexpiretime));
        if (live.count(i) != 0 && i != in_flight) CHECK(e.pexpiretime == live[i]);
      }
      if (policy == expiring::Fsync::always) {
        for (const auto& [i, pexpire] : live) {
          if (i == in_flight) continue;
          if (expired(pexpire)) {
            CHECK(s.get("k" + std::to_string(i)) == nullptr);
            continue;
          }
          CAPTURE(i);
          CHECK(s.pexpiretime("k" + std::to_string(i)) == pexpire);
        }
      } else {
        // A prefix: the replay is the state after some number of acknowledged writes, so
        // below the highest key present every key the acknowledged writes leave is present.
        std::uint32_t highest = 0;
        for (const auto& e : s) highest = std::max(highest, static_cast<std::uint32_t>(std::stoul(e.key.substr(1))));
        (void)present;
        for (const auto& [i, pexpire] : live) {
          if (i >= highest || expired(pexpire) || i == in_flight) continue;
          CAPTURE(i, highest);
          CHECK(s.exists("k" + std::to_string(i)));
        }
      }
    }
  }
}
