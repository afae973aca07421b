// tests/redis/test_server_clock.cpp: expiring-server's clock (server/clock.cpp). Under
// --clock manual the keys' time moves only by DEBUG SET-TIME / ADVANCE-TIME, so an hour's TTL
// is checked without waiting: PTTL counts down exactly, a key is live at its deadline and gone
// one millisecond after, lazily and by the cron's active expiry. Under --clock system both
// commands are refused. Servers run on loopback and are stopped by the harness; every wait is
// bounded.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "catch.hpp"
#include "redis_live.hpp"
#include "text.hpp"

namespace {

std::int64_t info_int(live::Conn& c, const std::string& section, const std::string& field) {
  return std::stoll(redistext::info_field(c.call({"INFO", section}).str(), field));
}

}  // namespace

TEST_CASE("server clock: --clock manual tests an hour's TTL without waiting", "[redis][live][server][clock]") {
  live::RespServer server({"--clock", "manual"});
  live::Conn c(server.port());
  CHECK(redistext::info_field(c.call({"INFO", "server"}).str(), "clock") == "manual");
  const std::int64_t t0 = 1'800'000'000'000;  // 2027
  CHECK(c.call({"DEBUG", "SET-TIME", std::to_string(t0)}).integer() == t0);
  CHECK(c.call({"TIME"}).elements()[0].str() == std::to_string(t0 / 1000));

  REQUIRE(c.call({"SET", "session", "alice", "EX", "3600"}).str() == "OK");
  REQUIRE(c.call({"SET", "other", "bob", "PXAT", std::to_string(t0 + 3'600'000)}).str() == "OK");
  CHECK(c.call({"PTTL", "session"}).integer() == 3'600'000);  // the time stands still
  CHECK(c.call({"PEXPIRETIME", "session"}).integer() == t0 + 3'600'000);
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "3599999"}).integer() == t0 + 3'599'999);
  CHECK(c.call({"PTTL", "session"}).integer() == 1);
  CHECK(c.call({"TTL", "session"}).integer() == 0);
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "1"}).integer() == t0 + 3'600'000);
  CHECK(c.call({"GET", "session"}).str() == "alice");  // at its deadline: still live
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "1"}).integer() == t0 + 3'600'001);
  CHECK(c.call({"GET", "session"}).is_nil());  // one ms later: gone, deleted lazily
  CHECK(info_int(c, "stats", "expired_keys") == 1);

  // `other` is not read: the cron's active expiry reclaims it, at the manual time.
  bool reclaimed = false;
  for (int i = 0; i < 200 && !reclaimed; ++i) {  // at most 2 s (the cron runs 10 times a second)
    reclaimed = c.call({"DBSIZE"}).integer() == 0;
    if (!reclaimed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(reclaimed);
  CHECK(info_int(c, "stats", "expired_keys") == 2);

  // Backwards too, as a wall clock can; and errors leave the time alone.
  REQUIRE(c.call({"SET", "k", "v", "PX", "100"}).str() == "OK");
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "-50"}).integer() == t0 + 3'599'951);
  CHECK(c.call({"PTTL", "k"}).integer() == 150);
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "soon"}).str() == "ERR value is not an integer or out of range");
  CHECK(c.call({"DEBUG", "SET-TIME"}).is_error());
  CHECK(c.call({"PTTL", "k"}).integer() == 150);
  CHECK(c.call({"DEBUG", "HELP"}).elements().size() > 8);
}

TEST_CASE("server clock: --clock system refuses to be moved", "[redis][live][server][clock]") {
  live::RespServer server;
  live::Conn c(server.port());
  CHECK(redistext::info_field(c.call({"INFO", "server"}).str(), "clock") == "system");
  CHECK(c.call({"DEBUG", "SET-TIME", "0"}).str() ==
        "ERR DEBUG SET-TIME needs a manual clock (start the server with --clock manual)");
  CHECK(c.call({"DEBUG", "ADVANCE-TIME", "1000"}).str() ==
        "ERR DEBUG ADVANCE-TIME needs a manual clock (start the server with --clock manual)");
  REQUIRE(c.call({"SET", "k", "v", "EX", "100"}).str() == "OK");
  const std::int64_t ttl = c.call({"PTTL", "k"}).integer();
  CHECK(ttl > 90'000);
  CHECK(ttl <= 100'000);
}

// semantics.md D37: the commands of a transaction all run at EXEC's instant, so a key set
// with a deadline 2 ms ahead inside it is alive for the last command, tens of milliseconds of
// work later, and expires after.
TEST_CASE("server clock: time stands still inside EXEC", "[redis][live][server][clock][multi]") {
  live::RespServer server;
  live::Conn c(server.port());
  REQUIRE(c.call({"MULTI"}).str() == "OK");
  REQUIRE(c.call({"SET", "k", "v", "PX", "2"}).str() == "QUEUED");
  constexpr int kWork = 50'000;  // far more than 2 ms of work on any machine
  std::string pipeline;
  for (int i = 0; i < kWork; ++i) pipeline += live::encode({"INCR", "counter"});
  c.send_raw(pipeline);
  for (int i = 0; i < kWork; ++i) REQUIRE(c.read_reply_bytes() == "+QUEUED\r\n");
  REQUIRE(c.call({"GET", "k"}).str() == "QUEUED");
  REQUIRE(c.call({"PTTL", "k"}).str() == "QUEUED");
  const auto started = std::chrono::steady_clock::now();
  const expiring::redis::Reply r = c.call({"EXEC"});
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE(r.elements().size() == static_cast<std::size_t>(kWork) + 3);
  INFO("EXEC took " << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us");
  CHECK(r.elements()[static_cast<std::size_t>(kWork) + 1].str() == "v");
  CHECK(r.elements()[static_cast<std::size_t>(kWork) + 2].integer() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  CHECK(c.call({"GET", "k"}).type() == expiring::redis::Reply::Type::nil);
  CHECK(c.call({"GET", "counter"}).str() == std::to_string(kWork));
}
