// bench/redis_server.hpp: a throwaway redis-server from PATH, for the benches that compare
// with Redis or need a Redis primary: a free loopback port, no persistence unless asked, a
// working directory of its own (so a dump.rdb lying in the bench's directory is never loaded),
// stopped (SIGTERM, then waited for) and its directory removed when the object goes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <hiredis/hiredis.h>

namespace bench {

// A loopback TCP port nothing listens on (as of the call).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class RedisProcess {
 public:
  RedisProcess() = default;
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;
  ~RedisProcess() { stop(); }

  // Starts `redis-server --port <free> --bind 127.0.0.1 --dir <a new temporary directory>
  // --save "" --appendonly no --daemonize no --logfile /dev/null` plus `extra` (later
  // arguments win); true once it answers, false when it cannot be started (not installed) or
  // does not answer within 5 s.
  bool start(const std::vector<std::string>& extra = {}) {
    port_ = free_loopback_port();
    std::string dir = (std::filesystem::temp_directory_path() / "expiring-bench-redis-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) return false;
    dir_ = dir;
    std::vector<std::string> args = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                     "--dir", dir_, "--save", "", "--appendonly", "no", "--daemonize", "no",
                                     "--logfile", "/dev/null"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {  // up to 5 s
      redisContext* c = redisConnect("127.0.0.1", port_);
      const bool up = c != nullptr && c->err == 0;
      if (c != nullptr) redisFree(c);
      if (up) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // it exited
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }
  int port() const noexcept { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;  // its working directory, removed by stop()
};

}  // namespace bench
