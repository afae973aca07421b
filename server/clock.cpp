// server/clock.cpp: the keys' time, and DEBUG's commands that move it.
//
// Design. The store reads a ManualClock that the server owns (Server::clock_). Under
// `--clock system`, the default, the server sets it from the system clock before each command,
// each cron tick and each read of the replication link: one reading per command, so every key
// a command touches is judged at one instant, as Redis 7 takes one time snapshot per command.
// Under `--clock manual` the clock starts at the system time. Only DEBUG SET-TIME <unix-ms> and
// DEBUG ADVANCE-TIME <ms> move it, an extension of this server (Redis's clock cannot be moved). A test
// in any language can then check an hour's TTL in microseconds, under Redis's exact expiry
// rules (examples/manual_clock.sh). Times that are not the keys' (uptime, LASTSAVE, the
// replication link's timeouts, the cron's period) stay on the system's clocks.
#include <optional>
#include <string>

#include "server.hpp"

namespace expiring::server {

using expiring::redis::Reply;

void Server::sync_clock() {
  if (!cfg_.manual_clock) clock_.set(expiring::SystemClock{}.now_ms());
}

std::optional<Reply> Server::clock_command(const std::vector<std::string>& a) {
  namespace rd = expiring::redis::detail;
  const bool set = a.size() == 3 && rd::iequals(a[1], "set-time");
  const bool advance = a.size() == 3 && rd::iequals(a[1], "advance-time");
  if (!set && !advance) return std::nullopt;
  if (!cfg_.manual_clock) {
    return Reply::error(std::string("ERR DEBUG ") + (set ? "SET-TIME" : "ADVANCE-TIME") +
                        " needs a manual clock (start the server with --clock manual)");
  }
  std::int64_t ms = 0;
  if (!expiring::redis::parse_int64(a[2], ms)) return Reply::error("ERR value is not an integer or out of range");
  if (set) {
    clock_.set(ms);
  } else {
    clock_.advance(ms);  // saturating at the int64 limits
  }
  return Reply::integer(clock_.now_ms());
}

}  // namespace expiring::server
