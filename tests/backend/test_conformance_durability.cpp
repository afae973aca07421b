// tests/backend/test_conformance_durability.cpp: the change feed, snapshots and the
// append-only log, as round trips, on every store that has them: ExpiringStore and
// ConcurrentStore of 1, 4 and 64 shards, of strings and of hashes with field TTLs.
//
// Each round trip runs one script of writes (TTLs set, moved, removed; renames and copies,
// which cross shards on a ConcurrentStore; deletions of one and of several keys; MSET; field
// TTLs) and then checks that a fresh store of the same kind reaches the same state, key by
// key, value by value, deadline by deadline:
//   * the feed: every record, numbered 1, 2, 3, ... with no gap, replayed with apply();
//   * a snapshot: save() to a stream, load() into the fresh store; its feed_seq is the
//     store's;
//   * the log: AppendLog at appendfsync always, a rewrite in the middle of the script, the
//     log reopened on the fresh store.
// RedisStore has none of the three (a Redis server replicates, saves and logs by itself):
// calling them does not compile (redis_store.hpp's list of members with no server analogue).
#include <expiring/append_log.hpp>
#include <expiring/snapshot.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "backend/conformance.hpp"
#include "catch.hpp"
#include "hash_state.hpp"
#include "temp_dir.hpp"

using backend_test::Str;

#define LOCAL_BACKENDS \
  backend_test::InProcess, backend_test::Concurrent1, backend_test::Concurrent, backend_test::Concurrent64
#define LOCAL_HASH_BACKENDS                                                                            \
  backend_test::InProcessHash, backend_test::Concurrent1Hash, backend_test::ConcurrentHash, \
      backend_test::Concurrent64Hash

namespace {

using Pairs = std::vector<std::pair<Str, Str>>;
using Names = std::vector<Str>;

constexpr int kKeys = 12;
Str key(int i) { return "k" + std::to_string(i); }

// A store of strings' state over the script's keys.
template <class S>
std::string strings_state(S& s) {
  std::string out;
  for (int i = 0; i < kKeys; ++i) {
    const auto v = backend_test::get(s, key(i));
    if (!v) continue;
    out += key(i) + "=" + *v + "@" + std::to_string(s.pexpiretime(key(i))) + "\n";
  }
  return out;
}

// A store of hashes' state (hash_state.hpp).
template <class S>
std::string hashes_state(S& s) {
  std::vector<Str> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(key(i));
  return test_state::hash_state(s, keys);
}

template <class S>
std::string state(S& s) {
  if constexpr (expiring::hash_value_traits<typename S::mapped_type>::enabled) {
    return hashes_state(s);
  } else {
    return strings_state(s);
  }
}

// The script, on a store of strings. `mid` runs halfway (a log's rewrite).
template <class S, class Mid>
void strings_script(S& s, std::int64_t now, Mid&& mid) {
  for (int i = 0; i < kKeys; ++i) REQUIRE(s.set(key(i), "v" + std::to_string(i), expiring::Px{60'000 + i}).ok());
  REQUIRE(s.pexpireat(key(1), now + 5'000).ok());
  REQUIRE(s.persist(key(2)));
  REQUIRE(s.rename(key(3), key(9)).ok());  // over k9, on another shard or the same
  REQUIRE(s.copy(key(4), key(10), true).ok());
  REQUIRE(s.del(key(5)));
  mid();
  CHECK(s.del_many(Names{key(6), key(7), "absent"}) == 2);
  REQUIRE(s.mset(Pairs{{key(6), "m6"}, {key(11), "m11"}}).ok());
  REQUIRE(s.set(key(8), "kept", expiring::KeepTtl{}).ok());
  REQUIRE(s.getex(key(0), expiring::PxAt{now + 7'777}).ok());
  REQUIRE(s.set(key(3), "back", expiring::PxAt{now + 1}).ok());
  CHECK(backend_test::get(s, key(12)) == std::nullopt);
}

// The script, on a store of hashes.
template <class S, class Mid>
void hashes_script(S& s, std::int64_t now, Mid&& mid) {
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE(s.hset(key(i), Pairs{{"a", "1"}, {"b", std::to_string(i)}}).ok());
    REQUIRE(s.hpexpireat(key(i), now + 10'000 + i, Names{"a"}).ok());
  }
  REQUIRE(s.pexpireat(key(1), now + 5'000).ok());
  REQUIRE(s.hpersist(key(2), Names{"a"}).ok());
  REQUIRE(s.rename(key(3), key(9)).ok());
  REQUIRE(s.copy(key(4), key(10), true).ok());
  REQUIRE(s.hdel(key(5), Names{"a", "b"}).ok());  // the last fields: the key goes
  mid();
  CHECK(s.del_many(Names{key(6), key(7)}) == 2);
  REQUIRE(s.hincrby(key(8), "n", 41).ok());
  REQUIRE(s.hpexpire(key(11), 1, Names{"b"}).ok());
  REQUIRE(s.hset(key(0), "c", "3").ok());
}

template <class S, class Mid>
void script(S& s, std::int64_t now, Mid&& mid) {
  if constexpr (expiring::hash_value_traits<typename S::mapped_type>::enabled) {
    hashes_script(s, now, mid);
  } else {
    strings_script(s, now, mid);
  }
}

template <class TestType>
void feed_round_trip() {
  BACKEND_SETUP();
  using S = std::remove_reference_t<decltype(s)>;
  std::vector<expiring::ChangeRecord<Str, typename S::mapped_type>> records;
  s.set_change_feed([&](const auto& c) { records.push_back(expiring::ChangeRecord<Str, typename S::mapped_type>::of(c)); });
  script(s, b.now_ms(), [] {});
  s.set_change_feed({});
  REQUIRE_FALSE(records.empty());
  CHECK(records.back().seq == s.feed_seq());
  TestType fresh;
  auto& t = fresh.store();
  int depth = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].seq == i + 1);
    if (records[i].op == expiring::ChangeOp::multi) ++depth;
    if (records[i].op == expiring::ChangeOp::exec) --depth;
    CHECK((depth == 0 || depth == 1));
    REQUIRE(t.apply(records[i].view()).ok());
  }
  CHECK(depth == 0);
  const std::string want = state(s);
  CHECK_FALSE(want.empty());
  CHECK(state(t) == want);
  CHECK(t.size() == s.size());
}

template <class TestType>
void snapshot_round_trip() {
  BACKEND_SETUP();
  std::uint64_t last = 0;
  s.set_change_feed([&](const auto& c) { last = c.seq; });
  script(s, b.now_ms(), [] {});
  std::stringstream out;
  auto saved = expiring::save(s, out);
  INFO(saved.error().message);
  REQUIRE(saved.ok());
  CHECK(saved->keys == s.size());
  CHECK(saved->feed_seq == last);
  s.set_change_feed({});
  TestType fresh;
  auto& t = fresh.store();
  auto loaded = expiring::load(t, out);
  INFO(loaded.error().message);
  REQUIRE(loaded.ok());
  CHECK(state(t) == state(s));
}

template <class TestType>
void log_round_trip() {
  BACKEND_SETUP();
  using S = std::remove_reference_t<decltype(s)>;
  testdir::TempDir dir;
  std::string want;
  {
    expiring::AppendLogOptions o;
    o.fsync = expiring::Fsync::always;
    auto log = expiring::AppendLog<S>::open(s, dir.path, o);
    INFO(log.error().message);
    REQUIRE(log.ok());
    script(s, b.now_ms(), [&] { CHECK((*log)->rewrite()); });
    CHECK((*log)->failure() == std::nullopt);
    CHECK((*log)->stats().rewrites == 1);
    want = state(s);
  }
  TestType fresh;
  auto& t = fresh.store();
  auto log = expiring::AppendLog<S>::open(t, dir.path);
  INFO(log.error().message);
  REQUIRE(log.ok());
  CHECK(state(t) == want);
}

}  // namespace

TEMPLATE_TEST_CASE("conformance durability: the feed replayed into a fresh store reaches the same state",
                   "[conformance][durability]", LOCAL_BACKENDS, LOCAL_HASH_BACKENDS) {
  feed_round_trip<TestType>();
}

TEMPLATE_TEST_CASE("conformance durability: a snapshot round trip keeps every value and deadline",
                   "[conformance][durability]", LOCAL_BACKENDS, LOCAL_HASH_BACKENDS) {
  snapshot_round_trip<TestType>();
}

TEMPLATE_TEST_CASE("conformance durability: the append log with a rewrite replays to the same state",
                   "[conformance][durability]", LOCAL_BACKENDS, LOCAL_HASH_BACKENDS) {
  log_round_trip<TestType>();
}
