// tests/backend/backends.hpp: the engines the conformance suite runs on, behind one shape.
//
// Each backend type gives a fresh, empty store per test case and a way to let time pass:
//
//   B b;                       // skips the test case (ready() false, why()) if it cannot run
//   auto& s = b.store();       // ExpiringStore, ConcurrentStore or RedisStore of strings
//   b.now_ms();                // the store's clock: a ManualClock, or the server's TIME
//   b.pass(ms);                // advance the ManualClock, or sleep
//   B::kSlackMs                // how far a relative reading (TTL, PTTL) may lag: 0 in-process
//
// In-process stores run on a ManualClock set to a recent Unix time, so that absolute times
// mean the same on every backend. The Redis backends share one server (or one cluster) per
// test process, started on first use, and give each test case its own key prefix instead of
// a fresh server: keys of different cases never meet.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/servers.hpp"
#include "expiring/concurrent_store.hpp"
#include "expiring/expiring_store.hpp"
#include "expiring/field_map.hpp"
#include "expiring/redis_store.hpp"

namespace backend_test {

using Str = std::string;
inline constexpr std::int64_t kEpochMs = 1'750'000'000'000;  // 2025-06-15, a plausible "now"

// An in-process store on a ManualClock: ExpiringStore (kShards 0) or a ConcurrentStore of
// kShards shards.
template <class V, std::size_t kShards>
struct LocalOf {
  static constexpr bool kConcurrent = kShards != 0;
  static constexpr const char* kName = kShards == 0   ? "ExpiringStore"
                                       : kShards == 1 ? "ConcurrentStore (1 shard)"
                                       : kShards == 4 ? "ConcurrentStore (4 shards)"
                                                      : "ConcurrentStore (64 shards)";
  static_assert(kShards == 0 || kShards == 1 || kShards == 4 || kShards == 64, "a shard count the suite names");
  static constexpr bool kRemote = false;
  static constexpr std::int64_t kSlackMs = 0;
  using store_type =
      std::conditional_t<kConcurrent, expiring::ConcurrentStore<Str, V, expiring::ManualClock>,
                         expiring::ExpiringStore<Str, V, expiring::Hash<Str>, std::equal_to<>, expiring::ManualClock>>;

  bool ready() const { return true; }
  std::string why() const { return {}; }
  store_type& store() { return store_; }
  std::int64_t now_ms() const { return clock_.now_ms(); }
  void pass(std::int64_t ms) { clock_.advance(ms); }

 private:
  static store_type make(expiring::ManualClock clock) {
    if constexpr (kConcurrent) {
      return store_type(clock, expiring::Options{}, expiring::ConcurrencyOptions{kShards});
    } else {
      return store_type(clock);
    }
  }
  expiring::ManualClock clock_{kEpochMs};
  store_type store_ = make(clock_);
};
template <class V>
using InProcessOf = LocalOf<V, 0>;
template <class V>
using ConcurrentOf = LocalOf<V, 4>;
template <class V>
using Concurrent1Of = LocalOf<V, 1>;
template <class V>
using Concurrent64Of = LocalOf<V, 64>;

// The server's TIME in ms.
inline std::int64_t server_time_ms(const live::Reply& r) {
  if (r.type() != live::Reply::Type::array || r.elements().size() != 2) throw std::runtime_error("TIME: unexpected reply");
  return std::stoll(r.elements()[0].str()) * 1000 + std::stoll(r.elements()[1].str()) / 1000;
}

inline std::string next_prefix() {
  static std::atomic<int> n{0};
  return "c" + std::to_string(n.fetch_add(1)) + ":";
}

// A redis-server shared by the test process; nullptr (with why) when it cannot start.
inline StandaloneRedis* shared_server(std::string& why) {
  static std::string error;
  static std::unique_ptr<StandaloneRedis> server = [] {
    std::unique_ptr<StandaloneRedis> s;
    if (!have_redis()) {
      error = "redis-server or redis-cli not installed";
      return s;
    }
    try {
      ServerConfig cfg;
      cfg.extra_args = {"--enable-debug-command", "local"};  // DEBUG SLEEP in the pool test
      s = std::make_unique<StandaloneRedis>(cfg);
    } catch (const std::exception& e) {
      error = e.what();
    }
    return s;
  }();
  why = error;
  return server.get();
}

inline RedisCluster* shared_cluster(std::string& why) {
  static std::string error;
  static std::unique_ptr<RedisCluster> cluster = [] {
    std::unique_ptr<RedisCluster> c;
    if (!have_redis()) {
      error = "redis-server or redis-cli not installed";
      return c;
    }
    try {
      c = std::make_unique<RedisCluster>();
    } catch (const std::exception& e) {
      error = e.what();
    }
    return c;
  }();
  why = error;
  return cluster.get();
}

// RedisStore on the shared redis-server (kCluster false) or the shared cluster (true).
template <class V, bool kCluster>
struct RemoteOf {
  static constexpr const char* kName = kCluster ? "RedisStore cluster" : "RedisStore standalone";
  static constexpr bool kRemote = true;
  static constexpr std::int64_t kSlackMs = 200;
  using store_type = expiring::RedisStore<Str, V>;

  RemoteOf() {
    expiring::RedisOptions o;
    if constexpr (kCluster) {
      cluster_ = shared_cluster(why_);
      if (cluster_ == nullptr) return;
      o.cluster = true;
      o.nodes = {{"127.0.0.1", cluster_->ports()[0]}};
    } else {
      server_ = shared_server(why_);
      if (server_ == nullptr) return;
      o.nodes = {{"127.0.0.1", server_->port()}};
    }
    o.key_prefix = next_prefix();
    store_ = std::make_unique<store_type>(o);
  }
  bool ready() const { return store_ != nullptr; }
  std::string why() const { return why_; }
  store_type& store() { return *store_; }
  std::int64_t now_ms() {
    return server_time_ms(kCluster ? cluster_->command(0, {"TIME"}) : server_->command({"TIME"}));
  }
  void pass(std::int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

 private:
  std::string why_;
  StandaloneRedis* server_ = nullptr;
  RedisCluster* cluster_ = nullptr;
  std::unique_ptr<store_type> store_;
};
template <class V>
using StandaloneOf = RemoteOf<V, false>;
template <class V>
using ClusterOf = RemoteOf<V, true>;

// The backends of string values (the suite's), and of integer values (for INCRBY).
using InProcess = InProcessOf<Str>;
using Concurrent = ConcurrentOf<Str>;
using Concurrent1 = Concurrent1Of<Str>;
using Concurrent64 = Concurrent64Of<Str>;
using Standalone = StandaloneOf<Str>;
using Cluster = ClusterOf<Str>;
using InProcessInt = InProcessOf<std::int64_t>;
using ConcurrentInt = ConcurrentOf<std::int64_t>;
using Concurrent1Int = Concurrent1Of<std::int64_t>;
using Concurrent64Int = Concurrent64Of<std::int64_t>;
using StandaloneInt = StandaloneOf<std::int64_t>;
using ClusterInt = ClusterOf<std::int64_t>;
// expiring-server (server/), which has Redis 7.4's field TTLs, shared by the test process;
// nullptr (with why) when this build has no server (EXPIRING_SERVER empty) or it cannot start.
inline live::RespServer* shared_own_server(std::string& why) {
  static std::string error;
  static std::unique_ptr<live::RespServer> server = [] {
    std::unique_ptr<live::RespServer> s;
    if (std::string(EXPIRING_SERVER).empty()) {
      error = "this build has no expiring-server (EXPIRING_BUILD_SERVER off, or not Linux)";
      return s;
    }
    try {
      s = std::make_unique<live::RespServer>();
    } catch (const std::exception& e) {
      error = e.what();
    }
    return s;
  }();
  why = error;
  return server.get();
}

// RedisStore on the shared expiring-server.
template <class V>
struct OwnServerOf {
  static constexpr const char* kName = "RedisStore on expiring-server";
  static constexpr bool kRemote = true;
  static constexpr std::int64_t kSlackMs = 200;
  using store_type = expiring::RedisStore<Str, V>;

  OwnServerOf() {
    server_ = shared_own_server(why_);
    if (server_ == nullptr) return;
    expiring::RedisOptions o;
    o.nodes = {{"127.0.0.1", server_->port()}};
    o.key_prefix = next_prefix();
    store_ = std::make_unique<store_type>(o);
  }
  bool ready() const { return store_ != nullptr; }
  std::string why() const { return why_; }
  store_type& store() { return *store_; }
  std::int64_t now_ms() {
    live::Conn c(server_->port());
    return server_time_ms(c.call({"TIME"}));
  }
  void pass(std::int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

 private:
  std::string why_;
  live::RespServer* server_ = nullptr;
  std::unique_ptr<store_type> store_;
};

// The backends of hashes with field TTLs (FieldMap values). redis-server 7.0 has hashes but
// no field TTLs: StandaloneHash is for what a store of hashes does against such a server.
using FieldHash = expiring::FieldMap<Str, Str>;
using InProcessHash = InProcessOf<FieldHash>;
using ConcurrentHash = ConcurrentOf<FieldHash>;
using Concurrent1Hash = Concurrent1Of<FieldHash>;
using Concurrent64Hash = Concurrent64Of<FieldHash>;
using OwnServerHash = OwnServerOf<FieldHash>;
using StandaloneHash = StandaloneOf<FieldHash>;

// ---- One call shape over every store --------------------------------------------------------

// get() as an optional copy (ExpiringStore returns a pointer).
template <class S, class KK>
auto get(S& s, const KK& key) {
  using V = typename S::mapped_type;
  auto r = s.get(key);
  if constexpr (std::is_pointer_v<decltype(r)>) {
    return r != nullptr ? std::optional<V>(*r) : std::optional<V>();
  } else {
    return r;
  }
}

// hget() as an optional copy (ExpiringStore returns a pointer); an error reads as nullopt
// (a case that expects one checks hget()'s Result itself).
template <class S, class KK, class FF>
std::optional<Str> hget(S& s, const KK& key, const FF& field) {
  const auto r = s.hget(key, field);
  if (!r.ok()) return std::nullopt;
  if constexpr (std::is_pointer_v<std::decay_t<decltype(*r)>>) {
    return *r != nullptr ? std::optional<Str>(**r) : std::nullopt;
  } else {
    return *r;
  }
}

// get_many() as a vector of optionals: the one convention every store has.
template <class S>
std::vector<std::optional<Str>> get_many(S& s, const std::vector<Str>& keys, std::size_t* hits = nullptr) {
  std::vector<std::optional<Str>> out(keys.size());
  const std::size_t h = s.get_many(keys, out.data());
  if (hits != nullptr) *hits = h;
  return out;
}

}  // namespace backend_test
