// tests/robustness/test_server_emfile.cpp: expiring-server out of file descriptors (issue 10
// item 4). It used to spin at 100% CPU: accept() failed with EMFILE, the listening socket
// stayed readable, and the waiting clients got nothing.
//
//   * Started under `ulimit -n 64` (soft and hard, set in the child before exec): maxclients
//     is lowered to 64 - 32 reserved; of 100 clients the extra ones get "-ERR max number of
//     clients reached" and are closed.
//   * Out of descriptors at run time (the server's limit lowered with prlimit after it
//     started with maxclients 10000): the clients that cannot be accepted get the same error
//     (the server's spare descriptor makes room) or a clean close.
// In both, the clients already connected still get PONG, and the server's CPU time over a
// one-second window while clients wait is a small fraction of the wall time (a ratio: the
// busy loop made it ~100%).
#include <sys/resource.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "server_support.hpp"

namespace {

constexpr int kClients = 100;
const std::string kMaxClients = "-ERR max number of clients reached\r\n";

struct Outcome {
  int served = 0;   // answered PING
  int refused = 0;  // got the max-clients error, then a close
  int closed = 0;   // closed without a reply
  int silent = 0;   // nothing at all within the wait (the bug)
};

// Opens kClients connections; each sends PING and the reply (or close) is classified.
// Keeps the connections open in `fds`.
Outcome connect_many(int port, std::vector<int>& fds) {
  Outcome o;
  for (int i = 0; i < kClients; ++i) {
    const int fd = live::connect_loopback(port, 2000);  // the backlog accepts even when the server does not
    REQUIRE(fd >= 0);
    fds.push_back(fd);
    (void)::send(fd, "PING\r\n", 6, MSG_NOSIGNAL);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);  // for all of them
  for (int fd : fds) {
    bool closed = false;
    std::string got;
    do {
      got += robust::drain(fd, 100, closed);
    } while (got.size() < 7 && !closed && std::chrono::steady_clock::now() < deadline);
    if (got == "+PONG\r\n") {
      ++o.served;
    } else if (got == kMaxClients) {
      ++o.refused;
    } else if (got.empty() && closed) {
      ++o.closed;
    } else {
      ++o.silent;
      UNSCOPED_INFO("unexpected reply: '" << got << "' closed=" << closed);
    }
  }
  return o;
}

// The server's CPU time over ~1 s of wall time, as a fraction of it.
double cpu_ratio(pid_t pid) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = robust::cpu_seconds(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const double c1 = robust::cpu_seconds(pid);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return (c1 - c0) / wall;
}

void close_all(std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
  fds.clear();
}

}  // namespace

TEST_CASE("server emfile: under ulimit -n 64, maxclients fits and extra clients are refused", "[server][emfile]") {
  live::RespServer ours({}, 64);
  live::Conn admin(ours.port());
  CHECK(admin.call({"CONFIG", "GET", "maxclients"}).elements().at(1).str() == "32");
  std::vector<int> fds;
  const Outcome o = connect_many(ours.port(), fds);
  CHECK(o.silent == 0);
  CHECK(o.served == 31);  // 32 with the admin connection
  CHECK(o.refused + o.closed == kClients - 31);
  CHECK(o.refused > 0);
  const double ratio = cpu_ratio(ours.process().pid());
  WARN("ulimit -n 64, " << kClients << " clients: server CPU " << ratio * 100 << "% of wall time");
  CHECK(ratio < 0.3);
  CHECK(admin.raw({"PING"}) == "+PONG\r\n");
  CHECK(robust::info_number(admin, "stats", "rejected_connections") == static_cast<std::uint64_t>(o.refused + o.closed));
  close_all(fds);
}

TEST_CASE("server emfile: out of descriptors at run time, no busy loop, connected clients served",
          "[server][emfile]") {
  live::RespServer ours;
  const pid_t pid = ours.process().pid();
  live::Conn admin(ours.port());
  // maxclients 10000, or what the machine's open file limit allowed (enough for the test?).
  const long maxclients = std::stol(admin.call({"CONFIG", "GET", "maxclients"}).elements().at(1).str());
  if (maxclients < kClients + 30) {
    EXPIRING_SKIP("the open file limit lets the server take only " << maxclients << " clients");
  }
  // Lower the running server's limit below what 100 clients need.
  rlimit old{};
  REQUIRE(::prlimit(pid, RLIMIT_NOFILE, nullptr, &old) == 0);
  rlimit lim = old;
  lim.rlim_cur = 64;  // the soft limit only: it can be put back without privilege
  if (::prlimit(pid, RLIMIT_NOFILE, &lim, nullptr) != 0) {
    EXPIRING_SKIP("prlimit on the server failed");
  }
  std::vector<int> fds;
  const Outcome o = connect_many(ours.port(), fds);
  CHECK(o.silent == 0);
  CHECK(o.served > 0);
  CHECK(o.refused > 0);
  CHECK(o.served + o.refused + o.closed == kClients);
  // More clients wait in the backlog while descriptors are short: still no busy loop.
  std::vector<int> waiting;
  for (int i = 0; i < 20; ++i) waiting.push_back(live::connect_loopback(ours.port(), 2000));
  const double ratio = cpu_ratio(pid);
  WARN("descriptors exhausted at run time: server CPU " << ratio * 100 << "% of wall time");
  CHECK(ratio < 0.3);
  CHECK(admin.raw({"PING"}) == "+PONG\r\n");
  // The connected clients are still served.
  int pongs = 0;
  for (int fd : fds) {
    if (::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6 && robust::read_some(fd, 7, 2000) == "+PONG\r\n") ++pongs;
  }
  CHECK(pongs == o.served);
  // Descriptors freed: new clients are accepted again.
  close_all(fds);
  for (int fd : waiting) ::close(fd);
  CHECK(::prlimit(pid, RLIMIT_NOFILE, &old, nullptr) == 0);
  CHECK([&] {
    for (int i = 0; i < 100; ++i) {
      try {
        live::Conn c(ours.port());
        if (c.raw({"PING"}) == "+PONG\r\n") return true;
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }());
}
