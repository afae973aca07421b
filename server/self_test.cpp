// server/self_test.cpp: `expiring-server --self-test`'s client.
//
// The server starts on a free port and this client, in a second thread, drives it over TCP
// (pipelined SET/GET/TTL, inline commands, split frames, a protocol error, QUIT, SHUTDOWN);
// the process exits 0 if every reply was right. ctest runs it as server.self_test: a smoke test
// of the installed binary's whole path, socket to store, that needs no other program.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "server.hpp"

namespace expiring::server {

namespace {

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

}  // namespace

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

}  // namespace expiring::server
