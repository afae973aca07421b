// tests/robustness/test_callbacks.cpp: exceptions from user code (issue 10, item 7).
//
// The contract (expiring_store.hpp, "Exceptions from your code"): a throwing listener still
// receives every queued event and the first exception then reaches the caller, with the store
// consistent; a throwing loader stores nothing; a throwing modify() function keeps the TTL
// and the accounting exact; a weigher must not throw (std::terminate, checked in a child).
#include <expiring/expiring.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"

namespace {
using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::ManualClock&>;
using expiring::KeyEventCause;
using expiring::Px;

expiring::Options seeded() {
  expiring::Options o;
  o.seed = 7;
  return o;
}
}  // namespace

TEST_CASE("callbacks: a throwing listener loses no event, and the caller gets the exception", "[robustness][callbacks]") {
  expiring::ManualClock clk(1'000'000);
  Store s{clk, seeded()};
  for (int i = 0; i < 20; ++i) REQUIRE(s.set("k" + std::to_string(i), "v", Px{100}).ok());
  std::vector<std::string> seen;
  int throws = 0;
  s.set_listener([&](const Store::event_type& e) {
    if (e.cause != KeyEventCause::expired) return;
    seen.push_back(e.key);
    ++throws;
    throw std::runtime_error("listener " + e.key);  // every event throws
  });
  clk.advance(101);
  // tick() expires all 20 keys in one cycle: 20 events, 20 throws, the first one propagates.
  CHECK_THROWS_WITH(s.tick(), Catch::Matchers::StartsWith("listener k"));
  CHECK(seen.size() == 20);
  CHECK(throws == 20);
  CHECK(s.size() == 0);
  CHECK(s.stats().expired_keys == 20);
  CHECK(s.check_invariants());
  // The store works on, and the next events are delivered (none is left over from before).
  seen.clear();
  s.set_listener([&](const Store::event_type& e) { seen.push_back(e.key); });
  REQUIRE(s.set("after", "v").ok());
  CHECK(seen == std::vector<std::string>{"after"});
}

TEST_CASE("callbacks: a listener throwing on the first of two events still gets the second", "[robustness][callbacks]") {
  expiring::ManualClock clk(1'000'000);
  Store s{clk, seeded()};
  std::vector<KeyEventCause> seen;
  s.set_listener([&](const Store::event_type& e) {
    seen.push_back(e.cause);
    if (e.cause == KeyEventCause::set) throw std::logic_error("set");
  });
  CHECK_THROWS_AS(s.set("k", "v", Px{1000}), std::logic_error);  // raises set, then expire
  CHECK(seen == std::vector<KeyEventCause>{KeyEventCause::set, KeyEventCause::expire});
  CHECK(s.pttl("k") == 1000);  // the write is complete
  CHECK(s.check_invariants());
}

TEST_CASE("callbacks: a throwing loader stores nothing", "[robustness][callbacks]") {
  expiring::ManualClock clk(1'000'000);
  expiring::Options o = seeded();
  o.maxmemory = 1 << 20;
  Store s{clk, o};
  REQUIRE(s.set("other", "v").ok());
  const std::size_t used = s.used_memory();
  CHECK_THROWS_AS(s.get_or_load("k", []() -> std::string { throw std::runtime_error("db down"); }, Px{1000}),
                  std::runtime_error);
  CHECK(s.size() == 1);
  CHECK(s.peek("k") == nullptr);
  CHECK(s.used_memory() == used);
  auto r = s.get_or_load("k", [] { return std::string("loaded"); }, Px{1000});
  REQUIRE(r.ok());
  CHECK(**r == "loaded");
}

TEST_CASE("callbacks: a throwing modify() keeps the TTL and exact accounting", "[robustness][callbacks]") {
  expiring::ManualClock clk(1'000'000);
  expiring::Options o = seeded();
  o.maxmemory = 1 << 20;
  Store s{clk, o};
  REQUIRE(s.set("k", "short", Px{5000}).ok());
  CHECK_THROWS_AS(s.modify("k",
                           [](std::string& v) {
                             v.assign(1000, 'x');  // grows, then fails
                             throw std::runtime_error("half done");
                           }),
                  std::runtime_error);
  CHECK(s.pttl("k") == 5000);
  CHECK(s.peek("k")->size() == 1000);
  const std::size_t tracked = s.used_memory();
  s.set_maxmemory(0);
  CHECK(s.used_memory() == tracked);  // a full recount agrees
  CHECK(s.check_invariants());
}

TEST_CASE("callbacks: a throwing weigher terminates the process (the documented contract)", "[robustness][callbacks]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child: std::terminate must abort it before _exit is reached.
    std::set_terminate([] { std::_Exit(42); });
    expiring::ManualClock clk(1'000'000);
    expiring::Options o;
    o.maxmemory = 1 << 20;
    Store s{clk, o};
    s.set_weigher([](const std::string&, const std::string& v) -> std::size_t {
      if (v == "bad") throw std::runtime_error("cannot weigh");
      return v.size();
    });
    (void)s.set("k", "bad");
    std::_Exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
}
