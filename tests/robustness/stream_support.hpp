// tests/robustness/stream_support.hpp: what a primary sends, for the replica-link tests (the
// library's ReplicaLink in test_link_limits.cpp, the server's link in test_server_hostile.cpp).
#pragma once

#include <sstream>
#include <string>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "expiring/snapshot.hpp"

namespace robust {

inline std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A snapshot of a store holding `keys` keys k0.. with the value "v": a full sync's payload.
inline std::string snapshot_of(int keys) {
  expiring::ManualClock clock{1'000'000};
  expiring::redis::ValueStore<expiring::ManualClock> s{clock};
  for (int i = 0; i < keys; ++i) (void)s.set("k" + std::to_string(i), expiring::redis::Value(std::string("v")));
  std::ostringstream os;
  REQUIRE(expiring::save(s, os).ok());
  return os.str();
}

// The reply to SYNC that carries it.
inline std::string sync_reply(const std::string& snapshot) {
  return "$" + std::to_string(snapshot.size()) + "\r\n" + snapshot + "\r\n";
}

}  // namespace robust
