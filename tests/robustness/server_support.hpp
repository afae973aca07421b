// tests/robustness/server_support.hpp: what the server robustness tests share beyond
// tests/redis/redis_live.hpp: INFO fields, a process's CPU time and peak memory from /proc,
// non-blocking probes of a connection, and the redis-server skip message.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "redis_live.hpp"
#include "text.hpp"

namespace robust {

using redistext::info_field;
inline std::uint64_t info_number(live::Conn& c, const std::string& section, const std::string& name) {
  const std::string v = info_field(c.call({"INFO", section}).str(), name);
  return v.empty() ? 0 : std::stoull(v);
}

// utime + stime of a process, in seconds (/proc/<pid>/stat fields 14 and 15).
inline double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t close = all.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return static_cast<double>(ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A /proc/<pid>/status figure in bytes (VmRSS, VmHWM).
inline std::uint64_t proc_status_bytes(pid_t pid, const std::string& name) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::stoull(line.substr(name.size() + 1)) * 1024;
  }
  return 0;
}
// Resets a process's peak resident size (VmHWM) to its current size; false if not allowed.
inline bool reset_peak_rss(pid_t pid) {
  std::ofstream f("/proc/" + std::to_string(pid) + "/clear_refs");
  f << "5";
  return static_cast<bool>(f.flush());
}

// Polls cond() every 50 ms for up to timeout_ms; its last answer.
template <class F>
bool eventually(F cond, int timeout_ms = 10000) {
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}

// Waits up to timeout_ms for fd to become readable (data or EOF).
inline bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}
// Reads what a server sent on a raw socket until it closes or `timeout_ms` passes without
// data; `closed` tells whether it closed.
inline std::string drain(int fd, int timeout_ms, bool& closed) {
  std::string got;
  closed = false;
  char buf[65536];
  while (readable(fd, timeout_ms)) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      closed = true;
      break;
    }
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// Reads until `want` bytes arrived, the server closed, or timeout_ms passed without data.
inline std::string read_some(int fd, std::size_t want, int timeout_ms) {
  std::string got;
  char buf[4096];
  while (got.size() < want && readable(fd, timeout_ms)) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

inline std::string skip_reason() {
  return "redis-server not installed (looked at $EXPIRING_REDIS_SERVER, PATH, /usr/bin/redis-server): "
         "comparison with redis-server skipped";
}

}  // namespace robust
