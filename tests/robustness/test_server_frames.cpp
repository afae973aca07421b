// tests/robustness/test_server_frames.cpp: malformed and oversized request frames against the
// expiring-server, compared byte for byte with the real redis-server when it is installed.
//
// The frames are the catalogue the differential test sends (tests/redis/frames.hpp) plus
// oversized bulk and multibulk lengths, a bulk over proto-max-bulk-len and requests past
// client-query-buffer-limit (both lowered to 1mb on both servers). Each frame goes on a fresh
// connection, whole and then in three pieces; the client half-closes and reads until the
// server closes. Without redis-server expiring-server must still answer every frame without
// dying (a fresh connection gets PONG afterwards), and the comparison is skipped with a
// warning.
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "frames.hpp"
#include "server_support.hpp"
#include "text.hpp"

namespace {

using redistext::printable;

std::vector<std::string> oversized_frames() {
  const std::string mb2(2 * 1024 * 1024, 'q');
  const std::string k900(900000, 'k');
  return {
      "*1\r\n$536870912\r\n",                         // valid length (before CONFIG SET), data never comes
      "*1\r\n$9223372036854775807\r\n",              // int64 max
      "*1\r\n$9223372036854775808\r\n",              // over int64
      "*1\r\n$-2\r\n",
      "*2\r\n$4\r\nECHO\r\n$1048577\r\nxx",          // over proto-max-bulk-len 1mb
      "*2\r\n$4\r\nECHO\r\n$1048576\r\n" + std::string(1024, 'a'),  // at the limit: waits for the rest
      "*2147483647\r\n$4\r\nPING\r\n",               // a huge count is not allocated up front
      "*2\r\n$4\r\nECHO\r\n$3000000\r\n" + mb2,      // over proto-max-bulk-len, with its data
      // Arguments past client-query-buffer-limit 1mb: expiring-server closes at once (it counts
      // the arguments assembled so far, Redis 7.0 only its query buffer: it waits); both
      // close without a reply when the client half-closes.
      "*4\r\n$4\r\nECHO\r\n$900000\r\n" + k900 + "\r\n$900000\r\n" + k900 + "\r\n$900000\r\n" + k900.substr(0, 500000),
      "PING\r\n" + std::string(1536 * 1024, 'x'),    // an inline line past 64 KB: protocol error
  };
}


// The bytes a server sends back for `in` (whole, or in three pieces), until it closes.
std::string exchange(int port, const std::string& in, bool split) {
  live::Conn c(port);
  live::send_maybe_split(c, in, split);
  return c.read_to_close();
}

}  // namespace

TEST_CASE("server frames: malformed and oversized frames give redis-server's replies", "[server][frames]") {
  live::RespServer ours;
  const auto bin = live::redis_server_path();
  std::unique_ptr<live::RedisServer> redis;
  if (bin) {
    redis = std::make_unique<live::RedisServer>(*bin);
  } else {
    WARN(robust::skip_reason());
  }
  std::vector<int> ports{ours.port()};
  if (redis) ports.push_back(redis->port());
  for (int port : ports) {
    live::Conn admin(port);
    CHECK(admin.raw({"CONFIG", "SET", "proto-max-bulk-len", "1mb", "client-query-buffer-limit", "1mb"}) ==
          "+OK\r\n");
  }
  std::vector<std::string> inputs = frames::catalogue();
  for (const std::string& f : oversized_frames()) inputs.push_back(f);

  int failures = 0;
  for (const std::string& in : inputs) {
    for (int split = 0; split < 2; ++split) {
      const std::string got = exchange(ours.port(), in, split != 0);
      // Still alive and serving.
      live::Conn probe(ours.port());
      REQUIRE(probe.raw({"PING"}) == "+PONG\r\n");
      if (!redis) continue;
      const std::string want = exchange(redis->port(), in, split != 0);
      if (got != want && ++failures <= 20) {
        FAIL_CHECK("input " << printable(in) << (split ? " (split)" : "") << "\n  redis: " << printable(want)
                            << "\n  ours:  " << printable(got));
      }
    }
  }
  CHECK(failures == 0);
  live::Conn admin(ours.port());
  // The frame past the query buffer limit was closed and counted (whole and split).
  CHECK(robust::info_number(admin, "stats", "client_query_buffer_limit_disconnections") == 2);
}
