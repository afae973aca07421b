// Builds and links against hiredis through expiring::redis; no server is needed: a port that
// nothing listens on gives Errc::io_error.
#include <expiring/redis_store.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

int main() {
  // A loopback port that was free a moment ago.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  expiring::RedisOptions o;
  o.nodes = {{"127.0.0.1", ntohs(a.sin_port)}};
  expiring::RedisStore<std::string, std::string> store(o);
  try {
    (void)store.get("k");
  } catch (const expiring::RedisError& e) {
    return e.code() == expiring::Errc::io_error ? 0 : 1;
  }
  return 1;
}
