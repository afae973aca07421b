// expiring/redis_store.hpp: the store's API over a real Redis or Valkey, standalone or cluster.
//
// RedisStore<K, V> has the member names, argument types and results of ExpiringStore for every
// command that exists in Redis: the same code runs in-process or against a server, with
// Redis's own semantics (ExpiringStore reproduces them; docs/semantics.md lists the few
// differences, which are all about timing). It is a separate CMake target, expiring::redis,
// that links hiredis (Debian's libhiredis-dev 0.14.1 or later), so that the core library stays
// header-only with no network dependency.
//
//   expiring::RedisOptions o;
//   o.nodes = {{"127.0.0.1", 6379}};                  // a cluster: any of its nodes, and
//   o.cluster = true;                                 // cluster = true
//   expiring::RedisStore<std::string, std::string> store(o);
//   (void)store.set("session:42", "alice", expiring::Ex{30});
//   std::optional<std::string> v = store.get("session:42");
//   std::int64_t left = store.ttl("session:42");
//
// ---- Results and errors ----------------------------------------------------------------------
// Results are those of ExpiringStore, with values returned by copy: get() gives a
// std::optional<V> (a pointer into a remote store cannot be), as ConcurrentStore's does. A
// Result carries exactly the errors the in-process store can return (invalid_expire_time,
// nx_and_xx_gt_lt, gt_and_lt, no_such_key, same_key, out_of_memory, out_of_range, overflow), mapped
// from Redis's error replies, so that `store.set(k, v, Ex{0}) == Errc::invalid_expire_time`
// holds for both. Everything else, which the in-process store cannot fail with, is thrown as
// expiring::RedisError: code() says which (io_error and timeout for the network, wrong_type,
// crossslot, cluster_down, too_many_redirects, auth_failed, server_error, protocol_error) and
// what() keeps hiredis's or Redis's text. A write that was sent and then lost its connection
// throws io_error or timeout with "(the command may have run)": its outcome is unknown, and
// it is not sent again; reads are, once.
//
// ---- Threads -----------------------------------------------------------------------------------
// Every member may be called from any number of threads at once. Each call borrows a
// connection from a per-node pool (RedisOptions::pool_size), so calls from different threads
// run in parallel up to the pool's size and then wait (up to pool_wait, then Errc::timeout).
//
// ---- Cluster -----------------------------------------------------------------------------------
// Keys are routed by slot (client/key_slot.hpp: CRC16 with hash tags); MOVED, ASK, TRYAGAIN and
// CLUSTERDOWN are followed (client/router.hpp). Calls on several keys:
//   * get_many, del_many and mset are split and pipelined per node: not atomic across slots
//     (mset is one MSET per slot, atomic in its slot; get_many and del_many one command per
//     key). Use hash tags, "{user42}.a" and "{user42}.b", to keep keys together.
//   * msetnx, rename, renamenx and copy need all their keys in one slot: otherwise they throw
//     RedisError(Errc::crossslot) before anything is sent, as Redis would refuse them.
//
// ---- Members with no server analogue -------------------------------------------------------------
//   tick()             does nothing and returns an empty TickReport: the server expires keys
//                      itself (lazily and with its own active cycle).
//   Options, stats(), listeners, eviction settings, memory accounting, scan(), iteration,
//   visit(), modify(), compute(), get_or_load()
//                      do not exist here: they are the server's configuration (maxmemory,
//                      CONFIG SET), INFO, or need a callback under a lock that a server does
//                      not run. Calling them does not compile.
//   set_change_feed(), apply(), as_one_unit(), save(), load(), AppendLog
//                      the server replicates, saves and logs by itself: these stop the build
//                      with a message that says so.
//   Time               EX/PX/EXAT/PXAT, TTL and EXPIRETIME use the server's clock; there is no
//                      Clock parameter. ttl_jitter (RedisOptions) is applied client-side: the
//                      jittered TTL is sent as PX / PEXPIRE.
//
// Extra members: ping(), flushdb() (every master's current database), client_stats() (the
// client's counters: connections, round trips, redirections), and key_prefix (RedisOptions),
// prepended to every key this store sends, for sharing one database between stores.
#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/hash_commands.hpp"
#include "api/key_commands.hpp"
#include "client/codec.hpp"
#include "client/connection.hpp"
#include "client/key_slot.hpp"
#include "client/pool.hpp"
#include "client/router.hpp"
#include "detail/arith.hpp"
#include "detail/hash_value.hpp"
#include "error.hpp"
#include "options.hpp"
#include "stats.hpp"

namespace expiring {

// The client's types under the store's names: a node's address (RedisOptions::nodes), and the
// counters client_stats() returns.
using RedisEndpoint = client::Endpoint;
using RedisClientStats = client::ClientStats;

// How to reach the server and how the client behaves.
struct RedisOptions {
  // Standalone: the server (nodes[0]). Cluster: seeds, any of its nodes (the rest of the
  // cluster is learned from CLUSTER SLOTS).
  std::vector<RedisEndpoint> nodes{RedisEndpoint{}};
  bool cluster = false;

  // AUTH [user] password on every connection (user empty: the default user). SELECT db when
  // db != 0 (standalone only: a cluster has database 0 alone, and the constructor throws
  // std::invalid_argument for cluster with db != 0).
  std::string user;
  std::string password;
  int db = 0;

  // Connecting (TCP connect); one command's reply (a gap between two reads of one reply, as
  // hiredis's socket timeouts measure it); waiting for a free pooled connection.
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds command_timeout{1000};
  std::chrono::milliseconds pool_wait{1000};
  // Connections per node (>= 1).
  std::size_t pool_size = 8;
  // Reconnect backoff per node after a failed connect (client/pool.hpp).
  std::chrono::milliseconds reconnect_backoff_min{10};
  std::chrono::milliseconds reconnect_backoff_max{1000};
  // MOVED / ASK / TRYAGAIN / CLUSTERDOWN followed per command before giving up.
  int max_redirects = 16;
  // Commands written per pipelined round trip (get_many, mset, del_many), and keys per MGET
  // or DEL of a standalone get_many / del_many; >= 1.
  std::size_t pipeline_chunk = 1000;
  // TCP keepalive on every connection (hiredis's redisEnableKeepAlive), so that the kernel
  // notices a dead server behind an idle connection.
  bool keepalive = true;
  // false when the program already ignores SIGPIPE (signal(SIGPIPE, SIG_IGN), as most servers
  // do): saves four system calls per round trip. true: each round trip blocks SIGPIPE in its
  // thread and discards one raised by a write to a closed connection.
  bool block_sigpipe = true;

  // Prepended to every key (it counts for the slot: "{tag}" inside the key still works when
  // the prefix has no '{').
  std::string key_prefix;
  // As Options::ttl_jitter; applied before sending. The constructor throws
  // std::invalid_argument for an invalid one.
  Jitter ttl_jitter = Jitter::none();
  // The random source of jitter (empty: a generator per thread). Called from every thread
  // that writes a jittered TTL: it must be safe to call concurrently.
  std::function<std::uint64_t()> random;
};

// ExpiringStore's API over a Redis or Valkey server, standalone or cluster (see the top of
// this file). KeyCodec and ValueCodec turn keys and values into Redis strings and back
// (client/codec.hpp).
template <class K, class V, class KeyCodec = RedisCodec<K>, class ValueCodec = RedisCodec<V>>
class RedisStore : public api::KeyCommands<RedisStore<K, V, KeyCodec, ValueCodec>, V>,
                   public api::HashCommands<RedisStore<K, V, KeyCodec, ValueCodec>,
                                            typename detail::HashTypes<V>::field_type,
                                            typename detail::HashTypes<V>::value_type> {
  using commands_type = api::KeyCommands<RedisStore, V>;
  using hash_commands_type = api::HashCommands<RedisStore, typename detail::HashTypes<V>::field_type,
                                               typename detail::HashTypes<V>::value_type>;

 public:
  // The key type K and the value type V.
  using key_type = K;
  using mapped_type = V;
  // A store of hashes (V a FieldMap<F, FV>): its fields' and their values' types, each sent
  // through its RedisCodec.
  using hash_field_type = typename detail::HashTypes<V>::field_type;
  using hash_value_type = typename detail::HashTypes<V>::value_type;
  // The TTL replies of a missing key (-2) and of a key without TTL (-1), as Redis's.
  static constexpr std::int64_t kNoKey = -2;
  static constexpr std::int64_t kNoTtl = -1;

  // Checks `options` and connects to nothing yet: the first call opens a connection (in a
  // cluster, after loading the slot map). Throws std::invalid_argument for no node, a bad
  // address, a cluster with db != 0, db < 0, pool_size or pipeline_chunk 0, max_redirects < 0
  // or an invalid ttl_jitter.
  explicit RedisStore(RedisOptions options = {}) : o_(validated(std::move(options))), router_(router_settings(o_)) {}

  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  // The options the store was built with; a ttl_jitter of Jitter{} (`inherit`) reads as none().
  const RedisOptions& options() const noexcept { return o_; }
  // Whether the store talks to a Redis Cluster (RedisOptions::cluster).
  bool cluster() const noexcept { return o_.cluster; }

  // ==== Reading ===================================================================================

  // GET: the live value, or nullopt.
  template <class KK>
  [[nodiscard]] std::optional<V> get(const KK& key) {
    client::Cmd c("GET");
    add_key(c, key);
    return value_of(*read(c), c);
  }

  // MGET: out[i] = keys[i]'s value or nullopt; returns the number of hits. Standalone: MGET in
  // chunks of pipeline_chunk keys, each atomic. Cluster: one GET per key, pipelined per node
  // (no snapshot across keys). `out` must have room for size(keys) elements.
  template <class Keys>
  std::size_t get_many(const Keys& keys, std::optional<V>* out) {
    std::vector<client::Cmd> cmds;
    std::vector<std::size_t> first;  // the index of each command's first key
    std::size_t n = 0;
    if (!o_.cluster) {
      for (const auto& k : keys) {
        if (n % o_.pipeline_chunk == 0) {
          cmds.emplace_back("MGET");
          first.push_back(n);
        }
        add_key(cmds.back(), k);
        ++n;
      }
    } else {
      for (const auto& k : keys) {
        cmds.emplace_back("GET");
        add_key(cmds.back(), k);
        first.push_back(n++);
      }
    }
    std::vector<client::Reply> replies = router_.execute_many(cmds, true);
    std::size_t hits = 0;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      const redisReply& r = *replies[i];
      if (client::is_error(r)) throw_reply(r, cmds[i]);
      if (!o_.cluster) {
        const std::size_t want = (i + 1 < first.size() ? first[i + 1] : n) - first[i];
        if (r.type != REDIS_REPLY_ARRAY || r.elements != want) throw unexpected(r, cmds[i]);
        for (std::size_t j = 0; j < r.elements; ++j) {
          out[first[i] + j] = value_of(*r.element[j], cmds[i]);
          hits += out[first[i] + j] ? 1u : 0u;
        }
      } else {
        out[first[i]] = value_of(r, cmds[i]);
        hits += out[first[i]] ? 1u : 0u;
      }
    }
    return hits;
  }

  // EXISTS / TOUCH (one key): whether the key is live (TOUCH also updates its access time).
  template <class KK>
  [[nodiscard]] bool exists(const KK& key) {
    return one_key_count("EXISTS", key, true) == 1;
  }
  template <class KK>
  bool touch(const KK& key) {
    return one_key_count("TOUCH", key, true) == 1;
  }

  // TTL / PTTL / EXPIRETIME / PEXPIRETIME: as ExpiringStore's (-2 missing, -1 no TTL), on the
  // server's clock.
  template <class KK>
  [[nodiscard]] std::int64_t ttl(const KK& key) {
    return one_key_count("TTL", key, true);
  }
  template <class KK>
  [[nodiscard]] std::int64_t pttl(const KK& key) {
    return one_key_count("PTTL", key, true);
  }
  template <class KK>
  [[nodiscard]] std::int64_t expiretime(const KK& key) {
    return one_key_count("EXPIRETIME", key, true);
  }
  template <class KK>
  [[nodiscard]] std::int64_t pexpiretime(const KK& key) {
    return one_key_count("PEXPIRETIME", key, true);
  }

  // ==== Writing ===================================================================================

  // SET key value [NX|XX] [EX|PX|EXAT|PXAT|KEEPTTL]: true when stored, false when NX/XX
  // refused it. Errors: Errc::invalid_expire_time (from the server's reply), out_of_range
  // (invalid per-call Jitter), out_of_memory (the server's maxmemory).
  template <class KK, class VV>
  Result<bool> set(const KK& key, const VV& value, SetExpiry expiry = {}, SetCond cond = SetCond::Always) {
    client::Cmd c("SET");
    add_key(c, key);
    add_value(c, value);
    if (const std::optional<Errc> e = add_expiry(c, expiry.spec())) return *e;
    add_cond(c, cond);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type == REDIS_REPLY_NIL) return false;
    if (r->type != REDIS_REPLY_STATUS) throw unexpected(*r, c);
    return true;
  }
  // set(key, value, cond), setnx(), setex(), psetex(), getset(): api/key_commands.hpp.
  using commands_type::set;
  // SET ... GET: the previous value (nullopt if none), whether or not NX/XX let the write happen.
  template <class KK, class VV>
  Result<std::optional<V>> set_get(const KK& key, const VV& value, SetExpiry expiry = {},
                                   SetCond cond = SetCond::Always) {
    client::Cmd c("SET");
    add_key(c, key);
    add_value(c, value);
    if (const std::optional<Errc> e = add_expiry(c, expiry.spec())) return *e;
    add_cond(c, cond);
    c.arg("GET");
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return value_of(*r, c);
  }
  // GETEX key [EX|PX|EXAT|PXAT|PERSIST]: the value (nullopt if missing), then the TTL change.
  template <class KK>
  Result<std::optional<V>> getex(const KK& key, GetExExpiry option = {}) {
    client::Cmd c("GETEX");
    add_key(c, key);
    const detail::ExpirySpec spec = option.spec();
    if (spec.kind == detail::ExpiryKind::persist) {
      c.arg("PERSIST");
    } else if (const std::optional<Errc> e = add_expiry(c, spec)) {
      // An invalid per-call Jitter, which cannot be sent: as in-process, a missing key
      // answers nil first (one GET, then the error if the key is there).
      if (!get(key)) return std::optional<V>();
      return *e;
    }
    client::Reply r = spec.kind == detail::ExpiryKind::none ? read(c) : write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return value_of(*r, c);
  }
  // GETDEL.
  template <class KK>
  std::optional<V> getdel(const KK& key) {
    client::Cmd c("GETDEL");
    add_key(c, key);
    client::Reply r = write(c);
    if (client::is_error(*r)) throw_reply(*r, c);
    return value_of(*r, c);
  }
  // INCRBY: adds delta to the integer value (keeping its TTL), or stores delta if missing;
  // the new value. Errc::overflow as ExpiringStore's. A value that is not an integer (written
  // by another client) throws RedisError(server_error, "ERR value is not an integer ...").
  template <class KK>
  Result<std::int64_t> incr_by(const KK& key, std::int64_t delta) {
    static_assert(std::is_integral_v<V> && std::is_signed_v<V> && sizeof(V) == sizeof(std::int64_t),
                  "RedisStore::incr_by() needs a signed 64-bit value type: Redis's INCRBY overflows only there");
    client::Cmd c("INCRBY");
    add_key(c, key);
    c.arg(delta);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c);
  }
  // DEL / UNLINK (one key): whether a live key was removed.
  template <class KK>
  bool del(const KK& key) {
    return one_key_count("DEL", key, false) == 1;
  }
  template <class KK>
  bool unlink(const KK& key) {
    return one_key_count("UNLINK", key, false) == 1;
  }

  // ==== Expiry ====================================================================================
  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT with NX/XX/GT/LT: true when the TTL was set (or the
  // key deleted by a deadline at or before the server's now), false when the key is missing or
  // a condition failed. Errors (from the server, in Redis's order: flags, then the number):
  // nx_and_xx_gt_lt, gt_and_lt, invalid_expire_time; out_of_range for an invalid Jitter.
  // Every overload is api/key_commands.hpp's, over this one call.
  template <class KK>
  Result<bool> expire_request(const KK& key, const ExpireRequest& r) {
    const bool seconds = r.unit == detail::TimeUnit::seconds;
    if (r.base == detail::TimeBase::relative) {
      return expire_generic(seconds ? "EXPIRE" : "PEXPIRE", key, r.amount, r.flags, r.jitter, r.overflowed);
    }
    return expire_generic(seconds ? "EXPIREAT" : "PEXPIREAT", key, r.amount, r.flags, Jitter::none(), r.overflowed);
  }
  // PERSIST: true if the live key had a TTL.
  template <class KK>
  bool persist(const KK& key) {
    return one_key_count("PERSIST", key, false) == 1;
  }

  // ==== Atomic read-modify-write (server-side scripts) =============================================
  // `if GET(k) == expected then PEXPIREAT(k, unix_ms, flags)`, atomically on the server (one
  // EVALSHA; EVAL the first time a node has not seen the script). As ExpiringStore's: errors
  // (flags, then the number) come first, whether or not the key matches. That is
  // pexpireat_if_equal() (api/key_commands.hpp), over this call; a request relative to now
  // (which only the server knows) is Errc::out_of_range, as the script runs PEXPIREAT.
  template <class KK, class VV>
  Result<bool> expire_request_if_equal(const KK& key, const VV& expected, const ExpireRequest& r) {
    std::int64_t unix_ms = r.amount;
    bool overflowed = r.overflowed;
    if (r.unit == detail::TimeUnit::seconds && !detail::seconds_to_ms(r.amount, unix_ms)) overflowed = true;
    if (r.base == detail::TimeBase::relative) {
      if (const std::optional<Errc> e = flag_error(r.flags)) return *e;
      return Errc::out_of_range;
    }
    return expire_if_equal(key, expected, unix_ms, r.flags, overflowed);
  }
  // `if GET(k) == expected then DEL(k)`: true if it was removed.
  template <class KK, class VV>
  bool del_if_equal(const KK& key, const VV& expected) {
    client::Cmd c("EVALSHA");
    client::Reply r = script(kDelIfEqualScript, kDelIfEqualSha, [&](client::Cmd& cmd) {
      add_key(cmd, key);
      add_value(cmd, expected);
    });
    if (client::is_error(*r)) throw_reply(*r, c);
    return integer_of(*r, c) == 1;
  }

  // ==== Several keys ==============================================================================

  // RENAME / RENAMENX / COPY: as ExpiringStore's (Errc::no_such_key, same_key). Cluster: both
  // keys must share a slot (else RedisError crossslot, nothing sent).
  template <class K1, class K2>
  Result<void> rename(const K1& src, const K2& dst) {
    client::Cmd c("RENAME");
    add_key(c, src);
    add_key(c, dst);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return {};
  }
  template <class K1, class K2>
  Result<bool> renamenx(const K1& src, const K2& dst) {
    client::Cmd c("RENAMENX");
    add_key(c, src);
    add_key(c, dst);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c) == 1;
  }
  template <class K1, class K2>
  Result<bool> copy(const K1& src, const K2& dst, bool replace = false) {
    client::Cmd c("COPY");
    add_key(c, src);
    add_key(c, dst);
    if (replace) c.arg("REPLACE");
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c) == 1;
  }

  // MSET of (key, value) pairs, without TTL. Standalone: one MSET, atomic and all or nothing
  // (Errc::out_of_memory). Cluster: one MSET per slot, pipelined per node: atomic per slot
  // only.
  template <class Pairs>
  Result<void> mset(const Pairs& pairs) {
    std::vector<client::Cmd> cmds;
    if (!o_.cluster) {
      cmds.emplace_back("MSET");
      for (const auto& kv : pairs) {
        add_key(cmds.back(), kv.first);
        add_value(cmds.back(), kv.second);
      }
      if (cmds.back().argc() == 1) return {};  // no pairs: Redis would refuse MSET's arity
    } else {
      std::vector<int> slot_of_cmd;
      for (const auto& kv : pairs) {
        client::Cmd probe("MSET");
        add_key(probe, kv.first);
        std::size_t i = 0;
        while (i < cmds.size() && slot_of_cmd[i] != probe.slot()) ++i;
        if (i == cmds.size()) {
          cmds.emplace_back("MSET");
          slot_of_cmd.push_back(probe.slot());
        }
        add_key(cmds[i], kv.first);
        add_value(cmds[i], kv.second);
      }
    }
    std::vector<client::Reply> replies = router_.execute_many(cmds, false);
    std::optional<Errc> first;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      if (const std::optional<Errc> e = contract_error(*replies[i], cmds[i]); e && !first) first = e;
    }
    if (first) return *first;
    return {};
  }
  // MSETNX: all pairs or none, if no key exists; true if stored. Cluster: one slot only.
  template <class Pairs>
  Result<bool> msetnx(const Pairs& pairs) {
    client::Cmd c("MSETNX");
    for (const auto& kv : pairs) {
      add_key(c, kv.first);
      add_value(c, kv.second);
    }
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c) == 1;
  }
  // DEL k1 k2 ...: the number of live keys removed. Standalone: one DEL per pipeline_chunk
  // keys. Cluster: one DEL per key, pipelined per node.
  template <class Keys>
  std::size_t del_many(const Keys& keys) {
    std::vector<client::Cmd> cmds;
    std::size_t n = 0;
    for (const auto& k : keys) {
      if (o_.cluster || n++ % o_.pipeline_chunk == 0) cmds.emplace_back("DEL");
      add_key(cmds.back(), k);
    }
    std::vector<client::Reply> replies = router_.execute_many(cmds, false);
    std::size_t removed = 0;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      if (client::is_error(*replies[i])) throw_reply(*replies[i], cmds[i]);
      const std::int64_t k = integer_of(*replies[i], cmds[i]);
      if (k < 0) throw unexpected(*replies[i], cmds[i]);
      removed += static_cast<std::size_t>(k);
    }
    return removed;
  }

  // ==== Hashes with field TTLs: RedisStore<K, FieldMap<F, FV>> ===================================
  // The hash members of hash_fields.hpp over HSET, HGET, ..., HEXPIRE, HTTL, HPERSIST, with
  // the same results (one code per field) and errors; values by copy, as ConcurrentStore's.
  // The field-TTL commands need Redis 7.4 or later (or expiring-server): against an older
  // server they throw RedisError(Errc::server_error) naming the server's version. Two forms
  // the in-process stores accept have no single Redis command: HSET and HDEL of no field
  // (answered 0 here without a round trip, as in-process), and ExpireFlags XX|LT on fields
  // (HEXPIRE takes one flag: XX|GT is sent as GT, which means the same; XX|LT throws
  // std::invalid_argument). hvisit() reads the hash with HGETALL and then calls fn on the copy.
  // On a store whose values are not hashes, these members do not compile.

  // HSET of one field: 1 if it is new, else 0 (an overwrite clears its TTL).
  template <class KK, class FF, class VV>
  Result<std::size_t> hset(const KK& key, const FF& field, const VV& value) {
    client::Cmd c = hash_cmd("HSET", key);
    add_field(c, field);
    add_field_value(c, value);
    return hash_count(c, false);
  }
  // hset(key, pairs), several fields at once: api/hash_commands.hpp, over hset_range().
  using hash_commands_type::hset;
  // HSETNX: writes the field only if the hash does not have it; whether it wrote.
  template <class KK, class FF, class VV>
  Result<bool> hsetnx(const KK& key, const FF& field, const VV& value) {
    client::Cmd c = hash_cmd("HSETNX", key);
    add_field(c, field);
    add_field_value(c, value);
    const Result<std::size_t> r = hash_count(c, false);
    if (!r.ok()) return r.error();
    return *r == 1;
  }
  // HGET: a copy of the field's value, or nullopt (no key or no such field).
  template <class KK, class FF>
  Result<std::optional<hash_value_type>> hget(const KK& key, const FF& field) {
    client::Cmd c = hash_cmd("HGET", key);
    add_field(c, field);
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return field_value_of(*r, c);
  }
  // HMGET: out[j] = fields[j]'s value or nullopt; returns the number found.
  template <class KK, class Fields>
  Result<std::size_t> hmget(const KK& key, const Fields& fields, std::optional<hash_value_type>* out) {
    const std::size_t n = detail::field_count(fields);
    if (n == 0) return std::size_t{0};
    client::Cmd c = hash_cmd("HMGET", key);
    for (const auto& f : fields) add_field(c, f);
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return values_of(*r, c, n, out);
  }
  // HLEN: the number of fields, 0 when the key is missing (Redis 7.4 also counts expired
  // fields it has not reclaimed yet: semantics.md D20).
  template <class KK>
  Result<std::size_t> hlen(const KK& key) {
    return hash_count(hash_cmd("HLEN", key), true);
  }
  // HEXISTS: whether the hash has the field.
  template <class KK, class FF>
  Result<bool> hexists(const KK& key, const FF& field) {
    client::Cmd c = hash_cmd("HEXISTS", key);
    add_field(c, field);
    const Result<std::size_t> r = hash_count(c, true);
    if (!r.ok()) return r.error();
    return *r == 1;
  }
  // hvisit(key, field, fn), HGET and then fn on the copy: api/hash_commands.hpp.
  using hash_commands_type::hvisit;
  // HGETALL, then fn(const F&, const FV&) per field of the copy. Returns the number of fields.
  template <class KK, class Fn>
  Result<std::size_t> hvisit(const KK& key, Fn&& fn) {
    Result<std::vector<std::pair<hash_field_type, hash_value_type>>> all = hgetall(key);
    if (!all.ok()) return all.error();
    for (const auto& p : *all) fn(p.first, p.second);
    return all->size();
  }
  // HGETALL: copies of the fields and their values, in the server's order.
  template <class KK>
  Result<std::vector<std::pair<hash_field_type, hash_value_type>>> hgetall(const KK& key) {
    client::Cmd c = hash_cmd("HGETALL", key);
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    std::vector<std::pair<hash_field_type, hash_value_type>> out;
    for_each_pair(*r, c, [&](const redisReply& f, const redisReply& v) {
      out.emplace_back(field_of(f, c), *field_value_of(v, c));
    });
    return out;
  }
  // HKEYS, HVALS: copies of the fields' names, or of their values.
  template <class KK>
  Result<std::vector<hash_field_type>> hkeys(const KK& key) {
    client::Cmd c = hash_cmd("HKEYS", key);
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type != REDIS_REPLY_ARRAY) throw unexpected(*r, c);
    std::vector<hash_field_type> out;
    for (std::size_t j = 0; j < r->elements; ++j) out.push_back(field_of(*r->element[j], c));
    return out;
  }
  template <class KK>
  Result<std::vector<hash_value_type>> hvals(const KK& key) {
    client::Cmd c = hash_cmd("HVALS", key);
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type != REDIS_REPLY_ARRAY) throw unexpected(*r, c);
    std::vector<hash_value_type> out;
    for (std::size_t j = 0; j < r->elements; ++j) out.push_back(*field_value_of(*r->element[j], c));
    return out;
  }
  // HINCRBY: adds delta to the field's integer value and returns the sum (a missing field
  // counts as 0). Errc::overflow and not_an_integer, as ExpiringStore's (hash_fields.hpp).
  template <class KK, class FF>
  Result<std::int64_t> hincrby(const KK& key, const FF& field, std::int64_t delta) {
    client::Cmd c = hash_cmd("HINCRBY", key);
    add_field(c, field);
    c.arg(delta);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c);
  }
  // HINCRBYFLOAT (delta sent with 21 significant digits, exact for a long double's 64-bit
  // mantissa): the new value as Redis stored it.
  template <class KK, class FF>
  Result<hash_value_type> hincrbyfloat(const KK& key, const FF& field, long double delta) {
    static_assert(std::is_same_v<hash_value_type, std::string>, "hincrbyfloat() needs std::string field values");
    if (!std::isfinite(delta)) return Errc::overflow;
    char text[64];
    const int n = std::snprintf(text, sizeof text, "%.21Lg", delta);
    client::Cmd c = hash_cmd("HINCRBYFLOAT", key);
    add_field(c, field);
    c.arg(std::string_view(text, static_cast<std::size_t>(n)));
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type != REDIS_REPLY_STRING) throw unexpected(*r, c);
    return std::string(client::text(*r));
  }
  // HRANDFIELD key count WITHVALUES, then fn(const F&, const FV&) per pair of the reply (fn
  // may return false to stop). Returns the number of calls.
  template <class KK, class Fn>
  Result<std::size_t> hrandfield(const KK& key, std::int64_t count, Fn&& fn) {
    if (count == 0) return std::size_t{0};
    client::Cmd c = hash_cmd("HRANDFIELD", key);
    c.arg(count).arg("WITHVALUES");
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    std::size_t calls = 0;
    bool going = true;
    for_each_pair(*r, c, [&](const redisReply& f, const redisReply& v) {
      if (!going) return;
      const hash_field_type name = field_of(f, c);
      const hash_value_type value = *field_value_of(v, c);
      ++calls;
      if constexpr (std::is_same_v<decltype(fn(name, value)), bool>) {
        going = fn(name, value);
      } else {
        fn(name, value);
      }
    });
    return calls;
  }
  // HSCAN key cursor COUNT count, then fn(const F&, const FV&) per pair; Redis's next cursor.
  template <class KK, class Fn>
  Result<std::uint64_t> hscan(const KK& key, std::uint64_t cursor, std::size_t count, Fn&& fn) {
    client::Cmd c = hash_cmd("HSCAN", key);
    c.arg(std::to_string(cursor)).arg("COUNT").arg(static_cast<std::int64_t>(count == 0 ? 1 : count));
    client::Reply r = read(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING) {
      throw unexpected(*r, c);
    }
    std::uint64_t next = 0;
    const std::string_view t = client::text(*r->element[0]);
    if (std::from_chars(t.data(), t.data() + t.size(), next).ptr != t.data() + t.size()) throw unexpected(*r, c);
    for_each_pair(*r->element[1], c, [&](const redisReply& f, const redisReply& v) {
      fn(field_of(f, c), *field_value_of(v, c));
    });
    return next;
  }
  // The primitives of api/hash_commands.hpp.
  template <class KK, class It, class End>
  Result<std::size_t> hset_range(const KK& key, It first, End last) {
    if (first == last) return std::size_t{0};
    client::Cmd c = hash_cmd("HSET", key);
    for (; first != last; ++first) {
      add_field(c, first->first);
      add_field_value(c, first->second);
    }
    return hash_count(c, false);
  }
  template <class KK, class It, class End>
  Result<std::size_t> hdel_range(const KK& key, It first, End last) {
    if (first == last) return std::size_t{0};
    client::Cmd c = hash_cmd("HDEL", key);
    for (; first != last; ++first) add_field(c, *first);
    return hash_count(c, false);
  }
  template <class KK, class Fields>
  Result<void> expire_fields(const KK& key, const FieldExpireRequest& req, const Fields& fields, int* out) {
    if (const std::optional<Errc> e = flag_error(req.flags)) return *e;
    const bool seconds = req.unit == detail::TimeUnit::seconds;
    const bool absolute = req.base == detail::TimeBase::absolute;
    static constexpr const char* kNames[2][2] = {{"HPEXPIRE", "HPEXPIREAT"}, {"HEXPIRE", "HEXPIREAT"}};
    client::Cmd c = hash_cmd(kNames[seconds ? 1 : 0][absolute ? 1 : 0], key);
    // Beyond the int64 range of ms: INT64_MAX, which the server refuses as the in-process
    // store refuses the overflow (invalid expire time, after a negative time's error).
    c.arg(req.overflowed ? std::numeric_limits<std::int64_t>::max() : req.amount);
    if (has(req.flags, ExpireFlags::XX) && has(req.flags, ExpireFlags::LT)) {
      throw std::invalid_argument("expiring::RedisStore: HEXPIRE takes one of NX, XX, GT, LT: XX with LT has no equivalent");
    }
    if (has(req.flags, ExpireFlags::NX)) c.arg("NX");
    if (has(req.flags, ExpireFlags::GT)) {
      c.arg("GT");  // XX|GT: GT alone means the same (a field without TTL fails both)
    } else if (has(req.flags, ExpireFlags::XX)) {
      c.arg("XX");
    }
    if (has(req.flags, ExpireFlags::LT)) c.arg("LT");
    return per_field(c, fields, /*idempotent=*/false, out);
  }
  template <class KK, class Fields>
  Result<void> field_times(const KK& key, const Fields& fields, FieldTimeQuery q, std::int64_t* out) {
    static constexpr const char* kNames[] = {"HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"};
    return per_field(hash_cmd(kNames[static_cast<int>(q)], key), fields, /*idempotent=*/true, out);
  }
  template <class KK, class Fields>
  Result<void> persist_fields(const KK& key, const Fields& fields, int* out) {
    return per_field(hash_cmd("HPERSIST", key), fields, /*idempotent=*/false, out);
  }
  // HGETEX, HGETDEL, HSETEX: Redis 8's commands (an older server's "unknown command" is thrown
  // as RedisError, naming the version needed). No field: answered here without a round trip.
  template <class KK, class Fields>
  Result<std::size_t> getex_fields(const KK& key, const Fields& fields, const FieldTtl& ttl,
                                   std::optional<hash_value_type>* out) {
    if (detail::field_count(fields) == 0) return std::size_t{0};
    client::Cmd c = hash_cmd("HGETEX", key);
    if (ttl.kind == FieldTtl::Kind::persist) c.arg("PERSIST");
    if (ttl.kind == FieldTtl::Kind::expire) add_field_time(c, ttl.time);
    return field_values(c, fields, /*idempotent=*/ttl.kind == FieldTtl::Kind::keep, out);
  }
  template <class KK, class Fields>
  Result<std::size_t> getdel_fields(const KK& key, const Fields& fields, std::optional<hash_value_type>* out) {
    if (detail::field_count(fields) == 0) return std::size_t{0};
    return field_values(hash_cmd("HGETDEL", key), fields, /*idempotent=*/false, out);
  }
  template <class KK, class It, class End>
  Result<bool> setex_range(const KK& key, It first, End last, const FieldTtl& ttl, FieldCondition cond) {
    if (first == last) return true;
    client::Cmd c = hash_cmd("HSETEX", key);
    if (cond == FieldCondition::fnx) c.arg("FNX");
    if (cond == FieldCondition::fxx) c.arg("FXX");
    if (ttl.kind == FieldTtl::Kind::keep) c.arg("KEEPTTL");
    if (ttl.kind == FieldTtl::Kind::expire) add_field_time(c, ttl.time);
    c.arg("FIELDS").arg(static_cast<std::int64_t>(std::distance(first, last)));
    for (; first != last; ++first) {
      add_field(c, first->first);
      add_field_value(c, first->second);
    }
    client::Reply r = run(c, /*idempotent=*/false);
    throw_if_unknown(*r, c, "Redis 8.0");
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    const std::int64_t n = integer_of(*r, c);
    if (n != 0 && n != 1) throw unexpected(*r, c);
    return n == 1;
  }

  // ==== Members with no server analogue, and the client's own ========================================

  // Does nothing: the server expires keys itself.
  TickReport tick(CycleKind = CycleKind::Slow) noexcept { return TickReport{}; }

  // The server replicates, saves and logs by itself (REPLICAOF, SAVE and BGSAVE, appendonly):
  // the in-process stores' change feed, apply(), as_one_unit(), save()/load() and AppendLog
  // have no analogue here, and calling them stops the build with this message.
  template <class F>
  void set_change_feed(F&&) {
    static_assert(sizeof(F) == 0, "expiring: RedisStore has no change feed: the server replicates itself (REPLICAOF)");
  }
  template <class C>
  void apply(const C&) {
    static_assert(sizeof(C) == 0, "expiring: RedisStore has no apply(): the server replicates itself (REPLICAOF)");
  }
  template <class F>
  void as_one_unit(F&&) {
    static_assert(sizeof(F) == 0, "expiring: RedisStore has no as_one_unit(): use a server-side script (MULTI/EVAL)");
  }

  // PING every master (or the server); throws RedisError if one does not answer PONG.
  void ping() { on_every_master(client::Cmd("PING")); }
  // FLUSHDB on every master (or the server): every key of the database, not only this
  // store's prefix.
  void flushdb() { on_every_master(client::Cmd("FLUSHDB")); }
  // The client's counters (connections, round trips, redirections followed).
  RedisClientStats client_stats() const noexcept { return router_.stats(); }
  // The slot of a key as this store sends it (prefix included).
  template <class KK>
  int key_slot(const KK& key) const {
    client::Cmd c("X");
    add_key(c, key);
    return c.slot();
  }

  // The server-side scripts of pexpireat_if_equal() and del_if_equal(), and the SHA1 digests
  // EVALSHA sends (tests/backend/test_redis_client.cpp checks each digest against SCRIPT LOAD,
  // so that an edit of a script without its digest fails there).
  static constexpr const char* kExpireIfEqualScript =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then "
      "return redis.call('PEXPIREAT', KEYS[1], ARGV[2], unpack(ARGV, 3)) end return 0";
  static constexpr const char* kExpireIfEqualSha = "56d2c85a115b45c9580f819bd89a7344430dca05";
  static constexpr const char* kDelIfEqualScript =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
  static constexpr const char* kDelIfEqualSha = "6fbe84d1140fd2047394924af9d845b83c070bec";

 private:
  static RedisOptions validated(RedisOptions o) {
    if (o.nodes.empty()) throw std::invalid_argument("expiring::RedisStore: RedisOptions::nodes is empty");
    if (o.cluster && o.db != 0) {
      throw std::invalid_argument("expiring::RedisStore: a cluster has only database 0 (RedisOptions::db)");
    }
    if (o.db < 0) throw std::invalid_argument("expiring::RedisStore: RedisOptions::db must be >= 0");
    if (o.pool_size == 0) throw std::invalid_argument("expiring::RedisStore: RedisOptions::pool_size must be >= 1");
    if (o.pipeline_chunk == 0) throw std::invalid_argument("expiring::RedisStore: RedisOptions::pipeline_chunk must be >= 1");
    if (o.max_redirects < 0) throw std::invalid_argument("expiring::RedisStore: RedisOptions::max_redirects must be >= 0");
    if (!o.ttl_jitter.valid()) {
      throw std::invalid_argument("expiring::RedisStore: ttl_jitter percent must be 0..100 and spread >= 0");
    }
    if (o.ttl_jitter.kind() == Jitter::Kind::inherit) o.ttl_jitter = Jitter::none();
    for (const RedisEndpoint& e : o.nodes) {
      if (e.port <= 0 || e.port > 65535 || e.host.empty()) {
        throw std::invalid_argument("expiring::RedisStore: bad node address '" + e.str() + "'");
      }
    }
    return o;
  }
  static client::RouterSettings router_settings(const RedisOptions& o) {
    client::RouterSettings s;
    s.cluster = o.cluster;
    s.seeds = o.nodes;
    s.connection.connect_timeout = o.connect_timeout;
    s.connection.command_timeout = o.command_timeout;
    s.connection.user = o.user;
    s.connection.password = o.password;
    s.connection.db = o.db;
    s.connection.keepalive = o.keepalive;
    s.connection.block_sigpipe = o.block_sigpipe;
    s.pool.size = o.pool_size;
    s.pool.wait = o.pool_wait;
    s.pool.backoff_min = o.reconnect_backoff_min;
    s.pool.backoff_max = o.reconnect_backoff_max;
    s.max_redirects = o.max_redirects;
    s.pipeline_chunk = o.pipeline_chunk;
    return s;
  }

  // ---- Encoding ----------------------------------------------------------------------------

  // x as a T through Codec; a lookup type (const char*, std::string_view) of a std::string
  // key or value with the built-in codec goes as it is, without building a T.
  template <class T, class Codec, class X>
  static void encode_as(const X& x, std::string& out) {
    if constexpr (std::is_same_v<Codec, RedisCodec<std::string>> && std::is_convertible_v<const X&, std::string_view>) {
      out.append(std::string_view(x));
    } else if constexpr (std::is_same_v<X, T>) {
      Codec::encode(x, out);
    } else {
      Codec::encode(T(x), out);
    }
  }
  template <class KK>
  void add_key(client::Cmd& c, const KK& key) const {
    if constexpr (std::is_same_v<KeyCodec, RedisCodec<std::string>> &&
                  std::is_convertible_v<const KK&, std::string_view>) {
      if (o_.key_prefix.empty()) {
        c.key(std::string_view(key));  // the bytes as they are: no copy
        return;
      }
    }
    std::string b = o_.key_prefix;
    encode_as<K, KeyCodec>(key, b);
    c.key(b);
  }
  template <class VV>
  static void add_value(client::Cmd& c, const VV& value) {
    if constexpr (std::is_same_v<ValueCodec, RedisCodec<std::string>> &&
                  std::is_convertible_v<const VV&, std::string_view>) {
      c.arg(std::string_view(value));
    } else {
      std::string b;
      encode_as<V, ValueCodec>(value, b);
      c.arg(b);
    }
  }
  static void add_cond(client::Cmd& c, SetCond cond) {
    if (cond == SetCond::NX) c.arg("NX");
    if (cond == SetCond::XX) c.arg("XX");
  }
  static void add_flags(client::Cmd& c, ExpireFlags f) {
    if (has(f, ExpireFlags::NX)) c.arg("NX");
    if (has(f, ExpireFlags::XX)) c.arg("XX");
    if (has(f, ExpireFlags::GT)) c.arg("GT");
    if (has(f, ExpireFlags::LT)) c.arg("LT");
  }

  // The expiry argument of SET / GETEX. A value the in-process store finds invalid before any
  // lookup (a chrono value beyond the int64 range of ms) is sent as EX INT64_MAX, which Redis
  // refuses the same way ("invalid expire time"), in its own order relative to the key's
  // lookup. A positive, in-range relative TTL is jittered here and sent as PX.
  std::optional<Errc> add_expiry(client::Cmd& c, detail::ExpirySpec sp) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    using detail::ExpiryKind;
    if (sp.kind == ExpiryKind::none) return std::nullopt;
    if (sp.kind == ExpiryKind::keepttl) {
      c.arg("KEEPTTL");
      return std::nullopt;
    }
    if (sp.invalid) {
      c.arg("EX").arg(kMax);
      return std::nullopt;
    }
    const bool relative = sp.kind == ExpiryKind::ex || sp.kind == ExpiryKind::px;
    if (relative && sp.value > 0) {
      if (!sp.jitter.valid()) return Errc::out_of_range;
      std::int64_t ms = sp.value;
      if (sp.kind == ExpiryKind::px || detail::seconds_to_ms(sp.value, ms)) {
        const std::int64_t j = jittered_ttl(ms, sp.jitter);
        if (j != ms) {
          c.arg("PX").arg(j);
          return std::nullopt;
        }
      }
    }
    static constexpr const char* kNames[] = {"", "EX", "PX", "EXAT", "PXAT"};
    c.arg(kNames[static_cast<int>(sp.kind)]).arg(sp.value);
    return std::nullopt;
  }

  // A positive TTL of ttl_ms plus d, d uniform in [-s, s], at least 1 (the in-process
  // store's jitter, relative to now). Not jittered when ttl_ms + s comes within a day of
  // overflowing the server's now + TTL: there, whether the deadline overflows depends on the
  // server's clock, which only the server can decide (it refuses an overflow, the in-process
  // store clamps a jittered deadline to INT64_MAX; docs/semantics.md D19).
  std::int64_t jittered_ttl(std::int64_t ttl_ms, Jitter j) {
    if (j.kind() == Jitter::Kind::inherit) j = o_.ttl_jitter;
    const std::int64_t s = j.spread_for(ttl_ms);
    if (s <= 0) return ttl_ms;
    constexpr std::int64_t kDayMs = 86'400'000;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    const std::int64_t room = std::numeric_limits<std::int64_t>::max() - (now > 0 ? now : 0) - kDayMs;
    if (ttl_ms > room || s > room - ttl_ms) return ttl_ms;
    const std::uint64_t us = static_cast<std::uint64_t>(s);
    const std::uint64_t r = next_random() % (2 * us + 1);
    if (r >= us) return ttl_ms + static_cast<std::int64_t>(r - us);  // <= ttl_ms + s <= room
    const std::uint64_t down = us - r;
    return down >= static_cast<std::uint64_t>(ttl_ms) ? 1 : ttl_ms - static_cast<std::int64_t>(down);
  }
  std::uint64_t next_random() {
    if (o_.random) return o_.random();
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng();
  }

  // ---- Running commands ----------------------------------------------------------------------

  client::Reply read(const client::Cmd& c) { return run(c, true); }
  client::Reply write(const client::Cmd& c) { return run(c, false); }
  client::Reply run(const client::Cmd& c, bool idempotent) {
    if (c.crossslot() && o_.cluster) {
      throw RedisError(Errc::crossslot, std::string(c.name()) + ": keys in request don't hash to the same slot");
    }
    return router_.execute(c, idempotent);
  }

  // EVALSHA <sha> 1 <fill's arguments>, and EVAL <source> 1 ... when the node has not cached
  // the script (NOSCRIPT: a node that restarted, or the target of an ASK).
  template <class Fill>
  client::Reply script(const char* source, const char* sha, Fill&& fill) {
    client::Cmd c("EVALSHA");
    c.arg(sha).arg(std::int64_t{1});
    fill(c);
    client::Reply r = write(c);
    if (!client::is_error(*r) || !client::starts_with(client::text(*r), "NOSCRIPT")) return r;
    client::Cmd e("EVAL");
    e.arg(source).arg(std::int64_t{1});
    fill(e);
    return write(e);
  }

  template <class KK>
  std::int64_t one_key_count(const char* name, const KK& key, bool idempotent) {
    client::Cmd c(name);
    add_key(c, key);
    client::Reply r = run(c, idempotent);
    if (client::is_error(*r)) throw_reply(*r, c);
    return integer_of(*r, c);
  }

  template <class KK>
  Result<bool> expire_generic(const char* name, const KK& key, std::int64_t v, ExpireFlags flags, Jitter jitter,
                              bool overflowed) {
    const bool relative = std::string_view(name).find("AT") == std::string_view::npos;
    if (!jitter.valid()) {
      // The in-process order: flag errors, then the jitter. Flags are pure; check them here.
      if (const std::optional<Errc> e = flag_error(flags)) return *e;
      return Errc::out_of_range;
    }
    std::string_view cmd = name;
    if (overflowed) {
      // Beyond the int64 range of ms: EXPIRE/EXPIREAT with INT64_MAX seconds, which Redis
      // refuses as "invalid expire time" after checking the flags.
      cmd = relative ? "EXPIRE" : "EXPIREAT";
      v = std::numeric_limits<std::int64_t>::max();
    } else if (relative && v > 0) {
      std::int64_t ms = v;
      if ((cmd == "PEXPIRE" || detail::seconds_to_ms(v, ms))) {
        const std::int64_t j = jittered_ttl(ms, jitter);
        if (j != ms) {
          cmd = "PEXPIRE";
          v = j;
        }
      }
    }
    client::Cmd c(cmd);
    add_key(c, key);
    c.arg(v);
    add_flags(c, flags);
    client::Reply r = write(c);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c) == 1;
  }

  static std::optional<Errc> flag_error(ExpireFlags flags) {
    const bool nx = has(flags, ExpireFlags::NX), xx = has(flags, ExpireFlags::XX);
    const bool gt = has(flags, ExpireFlags::GT), lt = has(flags, ExpireFlags::LT);
    if (nx && (xx || gt || lt)) return Errc::nx_and_xx_gt_lt;
    if (gt && lt) return Errc::gt_and_lt;
    return std::nullopt;
  }

  template <class KK, class VV>
  Result<bool> expire_if_equal(const KK& key, const VV& expected, std::int64_t unix_ms, ExpireFlags flags,
                               bool overflowed) {
    // Checked here, before the script, so that they win over a missing key or another value.
    if (const std::optional<Errc> e = flag_error(flags)) return *e;
    if (overflowed) return Errc::invalid_expire_time;
    client::Cmd c("EVALSHA");
    client::Reply r = script(kExpireIfEqualScript, kExpireIfEqualSha, [&](client::Cmd& cmd) {
      add_key(cmd, key);
      add_value(cmd, expected);
      cmd.arg(unix_ms);
      add_flags(cmd, flags);
    });
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return integer_of(*r, c) == 1;
  }

  void on_every_master(const client::Cmd& c) {
    for (client::NodePool* n : router_.masters()) {
      client::NodePool::Lease conn = n->acquire();
      client::Reply r = conn->call(c);
      if (client::is_error(*r)) throw_reply(*r, c);
    }
  }

  // ---- Replies ---------------------------------------------------------------------------------

  // An error reply that a Result carries, or nothing for a reply that is not an error; throws
  // RedisError for any other error reply.
  static std::optional<Errc> contract_error(const redisReply& r, const client::Cmd& c) {
    if (!client::is_error(r)) return std::nullopt;
    const Errc e = client::classify_error_reply(client::text(r));
    if (client::is_contract_error(e)) return e;
    throw_reply(r, c);
  }
  [[noreturn]] static void throw_reply(const redisReply& r, const client::Cmd& c) {
    throw RedisError(client::classify_error_reply(client::text(r)),
                     std::string(c.name()) + ": " + std::string(client::text(r)));
  }
  static RedisError unexpected(const redisReply& r, const client::Cmd& c) {
    return RedisError(Errc::protocol_error,
                      std::string(c.name()) + ": unexpected reply type " + std::to_string(r.type));
  }
  static std::int64_t integer_of(const redisReply& r, const client::Cmd& c) {
    if (r.type != REDIS_REPLY_INTEGER) throw unexpected(r, c);
    return static_cast<std::int64_t>(r.integer);
  }
  static std::optional<V> value_of(const redisReply& r, const client::Cmd& c) {
    if (r.type == REDIS_REPLY_NIL) return std::nullopt;
    if (r.type == REDIS_REPLY_ERROR) throw_reply(r, c);
    if (r.type != REDIS_REPLY_STRING) throw unexpected(r, c);
    V v{};
    if (!ValueCodec::decode(client::text(r), v)) {
      throw RedisError(Errc::protocol_error, std::string(c.name()) + ": a stored value does not decode as the value type");
    }
    return v;
  }

  // ---- Hashes ----------------------------------------------------------------------------

  using FieldCodec = RedisCodec<hash_field_type>;
  using FieldValueCodec = RedisCodec<hash_value_type>;

  template <class KK>
  client::Cmd hash_cmd(const char* name, const KK& key) {
    static_assert(hash_value_traits<V>::enabled,
                  "expiring: hash members need a store of hashes, RedisStore<K, FieldMap<F, V>> "
                  "(include <expiring/field_map.hpp>)");
    client::Cmd c(name);
    add_key(c, key);
    return c;
  }
  template <class FF>
  static void add_field(client::Cmd& c, const FF& f) {
    std::string b;
    encode_as<hash_field_type, FieldCodec>(f, b);
    c.arg(b);
  }
  template <class VV>
  static void add_field_value(client::Cmd& c, const VV& v) {
    std::string b;
    encode_as<hash_value_type, FieldValueCodec>(v, b);
    c.arg(b);
  }
  // A command answering an integer count, or an error a Result carries.
  Result<std::size_t> hash_count(const client::Cmd& c, bool idempotent) {
    client::Reply r = run(c, idempotent);
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    const std::int64_t n = integer_of(*r, c);
    if (n < 0) throw unexpected(*r, c);
    return static_cast<std::size_t>(n);
  }
  // A field command's FIELDS n f... and its array of integers into out[0 .. n).
  template <class Fields, class T>
  Result<void> per_field(client::Cmd c, const Fields& fields, bool idempotent, T* out) {
    const std::size_t n = detail::field_count(fields);
    c.arg("FIELDS").arg(static_cast<std::int64_t>(n));
    for (const auto& f : fields) add_field(c, f);
    client::Reply r = run(c, idempotent);
    throw_if_unknown(*r, c, "Redis 7.4");
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) throw unexpected(*r, c);
    for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<T>(integer_of(*r->element[j], c));
    return {};
  }
  // The same for a command answering the fields' values (HGETEX, HGETDEL): the number found.
  template <class Fields>
  Result<std::size_t> field_values(client::Cmd c, const Fields& fields, bool idempotent,
                                   std::optional<hash_value_type>* out) {
    const std::size_t n = detail::field_count(fields);
    c.arg("FIELDS").arg(static_cast<std::int64_t>(n));
    for (const auto& f : fields) add_field(c, f);
    client::Reply r = run(c, idempotent);
    throw_if_unknown(*r, c, "Redis 8.0");
    if (const std::optional<Errc> e = contract_error(*r, c)) return *e;
    return values_of(*r, c, n, out);
  }
  // An array reply of n field values (HMGET, HGETEX, HGETDEL) into out[0 .. n): the number
  // found.
  static std::size_t values_of(const redisReply& r, const client::Cmd& c, std::size_t n,
                               std::optional<hash_value_type>* out) {
    if (r.type != REDIS_REPLY_ARRAY || r.elements != n) throw unexpected(r, c);
    std::size_t found = 0;
    for (std::size_t j = 0; j < n; ++j) {
      out[j] = field_value_of(*r.element[j], c);
      found += out[j] ? 1u : 0u;
    }
    return found;
  }
  // HGETEX's and HSETEX's EX / PX / EXAT / PXAT argument (beyond the int64 range of ms:
  // INT64_MAX, which the server refuses as the in-process store refuses the overflow).
  static void add_field_time(client::Cmd& c, const FieldExpireRequest& t) {
    const bool seconds = t.unit == detail::TimeUnit::seconds;
    const bool absolute = t.base == detail::TimeBase::absolute;
    static constexpr const char* kNames[2][2] = {{"PX", "PXAT"}, {"EX", "EXAT"}};
    c.arg(kNames[seconds ? 1 : 0][absolute ? 1 : 0]);
    c.arg(t.overflowed ? std::numeric_limits<std::int64_t>::max() : t.amount);
  }
  // A field command the server does not have: RedisError naming the version it needs.
  void throw_if_unknown(const redisReply& r, const client::Cmd& c, const char* needs) {
    if (client::is_error(r) && client::starts_with(client::text(r), "ERR unknown command")) {
      throw RedisError(Errc::server_error, std::string(c.name()) + ": this server (" + server_version() +
                                               ") does not have it: it needs " + needs + " or later");
    }
  }
  // "redis_version X" from INFO server of the first master, for an error message.
  std::string server_version() {
    try {
      client::NodePool* n = router_.masters().front();
      client::NodePool::Lease conn = n->acquire();
      client::Reply r = conn->call(client::Cmd("INFO").arg("server"));
      const std::string_view t = client::text(*r);
      const std::size_t at = t.find("redis_version:");
      if (at == std::string_view::npos) return "redis_version unknown";
      const std::size_t end = t.find_first_of("\r\n", at);
      return "redis_version " + std::string(t.substr(at + 14, end == std::string_view::npos ? end : end - at - 14));
    } catch (const std::exception&) {
      return "redis_version unknown";
    }
  }
  static hash_field_type field_of(const redisReply& r, const client::Cmd& c) {
    if (r.type != REDIS_REPLY_STRING) throw unexpected(r, c);
    hash_field_type f{};
    if (!FieldCodec::decode(client::text(r), f)) {
      throw RedisError(Errc::protocol_error, std::string(c.name()) + ": a field does not decode as the field type");
    }
    return f;
  }
  static std::optional<hash_value_type> field_value_of(const redisReply& r, const client::Cmd& c) {
    if (r.type == REDIS_REPLY_NIL) return std::nullopt;
    if (r.type != REDIS_REPLY_STRING) throw unexpected(r, c);
    hash_value_type v{};
    if (!FieldValueCodec::decode(client::text(r), v)) {
      throw RedisError(Errc::protocol_error, std::string(c.name()) + ": a field's value does not decode as its type");
    }
    return v;
  }
  // HGETALL's reply: a flat array of field, value.
  template <class Fn>
  static void for_each_pair(const redisReply& r, const client::Cmd& c, Fn&& fn) {
    if (r.type != REDIS_REPLY_ARRAY || r.elements % 2 != 0) throw unexpected(r, c);
    for (std::size_t j = 0; j + 1 < r.elements; j += 2) fn(*r.element[j], *r.element[j + 1]);
  }

  RedisOptions o_;
  client::Router router_;
};

}  // namespace expiring
