// tests/redis/test_server_notifications.cpp: keyspace notifications on expiring-server as a client
// sees them (issue 28 T3). A subscriber to __keyevent@0__:expired gets one message per key
// whose TTL ran out, for keys nobody reads (active expiry, the server's cron at hz 10) and for
// keys a read finds (lazy expiry); with --active-expire-pass-ticks 1 the lateness of each
// message after the key's deadline, as the subscriber measures it on the system clock, has a
// p99 within one cron period (100 ms). With the default sweep (16 periods) it is printed.
// The server runs on loopback and is stopped by the harness; every wait is bounded.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "redis_live.hpp"

namespace {

std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("server notifications: expired events arrive within a cron period of the deadline",
          "[redis][live][server][notify]") {
  const bool prompt = GENERATE(true, false);
  CAPTURE(prompt);
  live::RespServer server(prompt ? live::Argv{"--active-expire-pass-ticks", "1"} : live::Argv{});
  live::Conn c(server.port());
  live::Conn sub(server.port());
  REQUIRE(c.call({"CONFIG", "SET", "notify-keyspace-events", "Ex"}).str() == "OK");
  REQUIRE(c.call({"CONFIG", "GET", "hz"}).elements()[1].str() == "10");
  REQUIRE(sub.call({"SUBSCRIBE", "__keyevent@0__:expired"}).elements()[2].integer() == 1);
  // 300 keys with deadlines spread over 1.5 s; the even ones are never read (active expiry),
  // the odd ones are read once at their deadline + 20 ms (whichever comes first).
  constexpr int kKeys = 300;
  std::map<std::string, std::int64_t> deadline;
  const std::int64_t start = wall_ms() + 200;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::int64_t at = start + (i * 1500) / kKeys;
    deadline[key] = at;
    REQUIRE(c.call({"SET", key, "v", "PXAT", std::to_string(at)}).str() == "OK");
  }
  // The subscriber, on a thread of its own: each message's key and arrival time (a receive
  // timeout of 10 s bounds it; it stops at kKeys messages).
  std::vector<std::pair<std::string, std::int64_t>> got;
  std::thread reader([&] {
    try {
      while (got.size() < static_cast<std::size_t>(kKeys)) {
        const expiring::redis::Reply m = live::Conn::decode(sub.read_reply_bytes());
        const std::int64_t now = wall_ms();
        if (m.elements().size() == 3) got.emplace_back(m.elements()[2].str(), now);
      }
    } catch (const std::exception&) {  // (timed out: the checks below say what was missing)
    }
  });
  // The odd keys are read just after their deadline: each read finds it stale and reclaims it.
  for (int i = 1; i < kKeys; i += 2) {
    const std::string key = "k" + std::to_string(i);
    const std::int64_t wait = deadline[key] + 1 - wall_ms();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    (void)c.call({"GET", key});
  }
  reader.join();
  REQUIRE(got.size() == static_cast<std::size_t>(kKeys));
  std::vector<std::int64_t> active, lazy;
  std::map<std::string, int> seen;
  for (const auto& [key, at] : got) {
    REQUIRE(deadline.count(key) == 1);
    ++seen[key];
    const std::int64_t late = at - deadline[key];
    CHECK(late >= 0);
    (std::stoi(key.substr(1)) % 2 == 0 ? active : lazy).push_back(late);
  }
  CHECK(seen.size() == static_cast<std::size_t>(kKeys));  // each key once
  const auto p99 = [](std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (v.size() * 99) / 100)];
  };
  INFO("active expiry: p99 " << p99(active) << " ms, max " << *std::max_element(active.begin(), active.end())
                             << " ms; lazy: p99 " << p99(lazy) << " ms");
  // (T3 is a p99 within one period; two are allowed here so that a loaded machine does not fail it)
  if (prompt) CHECK(p99(active) <= 200);
  CHECK(p99(lazy) <= 100);
  WARN("expired-event lateness (pass ticks " << (prompt ? "1" : "16") << "): active p99 " << p99(active)
                                             << " ms, lazy p99 " << p99(lazy) << " ms");
}
