// tests/robustness/stream_support.hpp: what a primary sends, for the replica-link tests (the
// library's ReplicaLink in test_link_limits.cpp, the server's link in test_server_hostile.cpp):
// Redis's replies to the handshake, +FULLRESYNC and the RDB.
#pragma once

#include <string>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "expiring/rdb.hpp"

namespace robust {

inline std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

// The RDB of a store holding `keys` keys k0.. with the value "v": a full sync's payload.
inline std::string snapshot_of(int keys) {
  expiring::ManualClock clock{1'000'000};
  expiring::redis::ValueStore<expiring::ManualClock> s{clock};
  for (int i = 0; i < keys; ++i) (void)s.set("k" + std::to_string(i), expiring::redis::Value(std::string("v")));
  std::string rdb;
  REQUIRE(expiring::save_rdb(s, rdb).ok());
  return rdb;
}

// A primary's answer to PSYNC that starts a full sync, at offset 0.
inline std::string fullresync() { return "+FULLRESYNC " + std::string(40, 'f') + " 0\r\n"; }

// The replies to a replica's handshake before PSYNC: PING, REPLCONF listening-port, REPLCONF capa.
inline std::string handshake_replies() { return "+PONG\r\n+OK\r\n+OK\r\n"; }

// The answer to PSYNC that carries the RDB, framed as Redis frames it (no CRLF after it).
inline std::string sync_reply(const std::string& rdb) {
  return fullresync() + "$" + std::to_string(rdb.size()) + "\r\n" + rdb;
}

}  // namespace robust
