// expiring/concurrent_store.hpp: ConcurrentStore, the store for many threads.
//
// Overview
// --------
// ConcurrentStore<K, V> has ExpiringStore's semantics per key (Redis 7's, see
// docs/semantics.md) and may be called from any number of threads at once. It is a
// power-of-two number of shards, each an ExpiringStore behind its own lock on its own cache
// line; a key's shard is chosen by the high bits of the store's keyed hash, so that an
// attacker who does not know the key cannot pile keys into one shard.
//
//   * Values leave the store by copy (get() returns std::optional<V>) or are seen under the
//     shard's lock by a visitor (visit(key, fn)); no pointer into a shard ever escapes. For
//     large values use std::shared_ptr<const T> as V: a copy is then a reference count.
//   * Every single-key call is atomic (linearizable) for its key. compute(),
//     pexpireat_if_equal() and del_if_equal() are atomic read-modify-writes of one key.
//   * Events are delivered outside every lock, in the order the operations happened per
//     shard (so per key); a listener may call the store.
//   * Expiry: tick() runs every shard's active-expire cycle (one budget for all, split
//     evenly), from your timer; or an Expirer (below) does it on its own thread.
//   * get_or_load() is single-flight: concurrent misses on one key call the loader once,
//     outside every lock, and all callers get its value (or its exception).
//   * Durability and replication, while threads write: one change feed for the whole store
//     (every record numbered, every call one unit: "The change feed" below), as_one_unit(),
//     save() and load() (snapshot.hpp), AppendLog<ConcurrentStore<...>> (append_log.hpp), and
//     replica mode (apply()).
//
// Limits are per shard: Options::max_entries and maxmemory are divided evenly (rounded up)
// among the shards, so the store-wide bound is exact to within one key per shard.
// Statistics are summed over the shards when read.
//
// Locks and reads. Each shard has a spinlock (detail/shard_lock.hpp), alone on its cache line,
// that yields after a bounded spin; its 64-bit word is also the shard's version (odd while
// held, +2 per critical section). Every write, and every read that writes (an idle TTL of
// Options::expire_after_access, an LFU limit, a stale key to reclaim), takes the lock.
// get() and get_many() of a store whose value is trivially copyable and default-constructible
// and whose key, compared with std::equal_to, is an integer, enum or pointer, or a
// std::string (with libstdc++: a key of up to 15 bytes held in the string itself; longer ones
// are read under the lock, since a writer may free their heap bytes) take no lock and write
// no shared cache line (under an LRU limit, one read in 8 per thread is redone locked to
// record its access, a sampled LRU as Caffeine buffers reads; Redis's LRU is approximate
// anyway): they read the shard's table between two loads of the version and keep the result
// only if it did not move (a seqlock read, retried a few times, then done under the lock).
// Such a reader may look into a table block that a concurrent rehash replaces, so a writer
// frees a block only after every read section that may be inside it has ended
// (detail/read_section.hpp: one cache line per thread, an asymmetric fence that leaves the
// fence on the writer's side). Their hit and miss counts are kept per thread and summed by
// stats(). Other key and value types (string values, say) read under the lock.
// ConcurrencyOptions::optimistic_reads turns the lock-free reads off.
// The Clock's now_ms() is called from many threads at once and must be safe for that:
// SystemClock, TscClock and ManualClock are; a CachedClock (a plain int64) must not be
// refreshed while the store runs. Figures: docs/design/concurrent.md, bench/bench_concurrent.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/hash_commands.hpp"
#include "api/key_commands.hpp"
#include "detail/quiet_thread.hpp"
#include "detail/read_section.hpp"
#include "detail/shard_lock.hpp"
#include "detail/shard_store.hpp"
#include "expiring_store.hpp"

namespace expiring {

// How a ConcurrentStore is cut up.
struct ConcurrencyOptions {
  // Number of shards, rounded up to a power of two; 0 = 16 x std::thread::hardware_concurrency()
  // rounded up (at least 16, at most 4096). bench_concurrent on 2 cores, 1e4 keys, 95/5: 8 shards
  // give 2 threads 16.2 Mops/s, 32 give 23.5, 128 give 24.2 (one thread: 32.3, 28.5, 27.1).
  std::size_t shards = 0;
  // Whether get() of a trivially copyable integer-like key and value reads without taking the
  // shard's lock (see "Reads" above). Off: every read locks, as every write does.
  bool optimistic_reads = true;
};

// The store for many threads (see the top of this file). Most code names it through the
// ConcurrentStore alias below; the full parameter list is for a key type with a hash or
// equality of its own.
template <class K, class V, class Hash = expiring::Hash<K>, class KeyEqual = std::equal_to<>,
          class Clock = TscClock, class ExpiryPolicy = SampledExpiry>
class BasicConcurrentStore;

// The short name, as Store is ExpiringStore's: the clock third, the policy fourth.
template <class K, class V, class Clock = TscClock, class ExpiryPolicy = SampledExpiry>
using ConcurrentStore = BasicConcurrentStore<K, V, expiring::Hash<K>, std::equal_to<>, Clock, ExpiryPolicy>;

template <class K, class V, class Hash, class KeyEqual, class Clock, class ExpiryPolicy>
class BasicConcurrentStore
    : public api::KeyCommands<BasicConcurrentStore<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>, V>,
      public api::HashCommands<BasicConcurrentStore<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>,
                               typename detail::HashTypes<V>::field_type, typename detail::HashTypes<V>::value_type> {
  using commands_type = api::KeyCommands<BasicConcurrentStore, V>;
  using hash_commands_type = api::HashCommands<BasicConcurrentStore, typename detail::HashTypes<V>::field_type,
                                               typename detail::HashTypes<V>::value_type>;

 public:
  // Each shard's store: an ExpiringStore with what a shard needs added (no public member
  // hands one out).
  using engine_type = detail::ShardStore<K, V, detail::ShardHash<Hash>, KeyEqual, Clock, ExpiryPolicy>;
  // The key type K and the value type V.
  using key_type = K;
  using mapped_type = V;
  // What set_listener() takes: a function called with each KeyEvent.
  using event_type = KeyEvent<K, V>;
  using listener_type = std::function<void(const event_type&)>;
  // The TTL replies of a missing key (-2) and of a key without TTL (-1), as Redis's.
  static constexpr std::int64_t kNoKey = engine_type::kNoKey;
  static constexpr std::int64_t kNoTtl = engine_type::kNoTtl;
  // What set_change_feed() takes: a function called with each change record (change_feed.hpp).
  using change_type = Change<K, V>;
  using change_feed_type = std::function<void(const change_type&)>;
  // A store of hashes (V a FieldMap<F, FV>): its fields' and their values' types.
  using hash_field_type = typename detail::HashTypes<V>::field_type;
  using hash_value_type = typename detail::HashTypes<V>::value_type;

  // ==== Construction ======================================================================

  // A store of conc.shards shards (see ConcurrencyOptions), each an ExpiringStore with a copy
  // of `clock` and its share of `options` (the limits divided evenly, rounded up: see the top
  // of this file). With Options::seed, `hash` is keyed from it: it picks each key's shard.
  explicit BasicConcurrentStore(Clock clock, Options options = {}, ConcurrencyOptions conc = {}, Hash hash = Hash{},
                                KeyEqual eq = KeyEqual{})
      : hash_(hash),
        eq_(eq),
        options_(options),
        optimistic_(kOptimistic && conc.optimistic_reads &&
                    (!engine_type::kRacyStringKeys || detail::inline_strings_ok())),
        readers_(optimistic_) {
    std::size_t n = conc.shards;
    if (n == 0) {
      const std::size_t hw = std::max<unsigned>(1u, std::thread::hardware_concurrency());
      n = std::min<std::size_t>(4096, std::max<std::size_t>(16, 16 * hw));
    }
    shards_n_ = 1;
    while (shards_n_ < n) shards_n_ <<= 1;
    shift_ = 64;
    for (std::size_t s = shards_n_; s > 1; s >>= 1) --shift_;
    if (shift_ == 64) shift_ = 63;  // one shard: (h >> 63) & 0, a shift in range
    if (options.seed) hash_ = keyed_copy(hash_, *options.seed);
    shards_.reset(new Shard[shards_n_]);
    for (std::size_t i = 0; i < shards_n_; ++i) {
      // Every shard hashes keys as the store picks shards: with() hashes a key once.
      shards_[i].engine.emplace(clock, shard_options(options, i), detail::ShardHash<Hash>(hash_), eq);
      if (optimistic_) shards_[i].engine->set_free_hook(&detail::Readers::synchronize_at, &readers_);
    }
  }
  // The same with a default-constructed Clock.
  template <class C = Clock, std::enable_if_t<std::is_default_constructible_v<C>, int> = 0>
  explicit BasicConcurrentStore(Options options = {}, ConcurrencyOptions conc = {})
      : BasicConcurrentStore(Clock{}, std::move(options), conc) {}

  BasicConcurrentStore(const BasicConcurrentStore&) = delete;
  BasicConcurrentStore& operator=(const BasicConcurrentStore&) = delete;
  ~BasicConcurrentStore() {
    // Nobody reads a store being destroyed: its tables may be freed without waiting (a
    // membarrier per shard otherwise).
    for (std::size_t i = 0; i < shards_n_; ++i) shards_[i].engine->set_free_hook(nullptr, nullptr);
  }

  // The number of shards: a power of two, fixed at construction.
  std::size_t shard_count() const noexcept { return shards_n_; }

  // ==== Reading (copies out, or a visitor under the shard's lock) ========================

  // GET: a copy of the live value, or nullopt.
  template <class KK>
  [[nodiscard]] std::optional<V> get(const KK& key) {
    if constexpr (kOptimistic) {
      // The key as one type on both paths (K, or a view of a string key), so that they look
      // up the same key.
      const RacyKey k(key);
      if (optimistic_) return get_unlocked(k);
      V value{};
      if (get_locked(k, value) == RacyRead::hit) return value;
      return std::nullopt;
    } else {
      // Copied once, into the optional returned (a value moved through the lock's return
      // path costs a string move or two: ~30 instructions each, out of line in libstdc++).
      std::optional<V> out;
      (void)with(key, [&](engine_type& e) {
        const V* v = e.get(key);
        if (v != nullptr) out.emplace(*v);
        return v != nullptr;
      });
      return out;
    }
  }
  // GET, seen in place: calls fn(const V&) under the shard's lock if the key is live; returns
  // whether it was. fn must not call the store (the shard's lock is held).
  template <class KK, class F>
  bool visit(const KK& key, F&& fn) {
    return with(key, [&](engine_type& e) {
      const V* v = e.get(key);
      if (v != nullptr) std::forward<F>(fn)(*v);
      return v != nullptr;
    });
  }
  // MGET: out[i] = a copy of keys[i]'s live value or nullopt, for any range of keys; returns
  // the number of hits. With reads under locks, keys are grouped by shard and each shard's
  // lock is taken once for its group, inside which the lookups run back to back, so that
  // their cache misses overlap (a lock per key serialises them): per shard atomic, not across
  // shards. With reads without locks, keys are looked up in prefetched batches of 16, each
  // read atomic on its own (the result is not a snapshot of a shard). `out` must have room
  // for size(keys) elements.
  template <class Keys>
  std::size_t get_many(const Keys& keys, std::optional<V>* out) {
    if constexpr (kOptimistic) {
      if (optimistic_) return get_many_optimistic(keys, out);
    }
    // Group by shard with a counting sort (O(keys + shards)), into per-thread scratch.
    using KeyPtr = const typename Keys::value_type*;
    static thread_local std::vector<std::uint32_t> shard_ix, start;
    static thread_local std::vector<std::pair<KeyPtr, std::uint32_t>> grouped;  // (key, out index)
    shard_ix.clear();
    start.assign(shards_n_ + 1, 0);
    for (const auto& k : keys) {
      const auto sh = static_cast<std::uint32_t>(&shard_of(k) - shards_.get());
      shard_ix.push_back(sh);
      ++start[sh + 1];
    }
    for (std::size_t i = 1; i <= shards_n_; ++i) start[i] += start[i - 1];
    grouped.resize(shard_ix.size());
    {
      std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
      std::uint32_t i = 0;
      for (const auto& k : keys) {
        grouped[fill[shard_ix[i]]++] = {&k, i};
        ++i;
      }
    }
    std::size_t hits = 0;
    for (std::size_t sh = 0; sh < shards_n_; ++sh) {
      if (start[sh] == start[sh + 1]) continue;
      hits += run(shards_[sh], [&](engine_type& eng) {
        std::size_t h = 0;
        for (std::uint32_t j = start[sh]; j < start[sh + 1]; ++j) {
          const V* v = eng.get(*grouped[j].first);
          out[grouped[j].second] = v != nullptr ? std::optional<V>(*v) : std::nullopt;
          h += v != nullptr ? 1u : 0u;
        }
        return h;
      });
    }
    return hits;
  }
  // EXISTS / TOUCH (one key): whether the key is live; touch() also records an access for an
  // LRU or LFU limit (see ExpiringStore).
  template <class KK>
  [[nodiscard]] bool exists(const KK& key) {
    return with(key, [&](engine_type& e) { return e.exists(key); });
  }
  template <class KK>
  bool touch(const KK& key) {
    return with(key, [&](engine_type& e) { return e.touch(key); });
  }
  // TTL / PTTL: the remaining seconds (rounded half up) or ms; EXPIRETIME / PEXPIRETIME: the
  // deadline in Unix seconds or ms. -2 missing, -1 no TTL, as ExpiringStore's.
  template <class KK>
  [[nodiscard]] std::int64_t ttl(const KK& key) {
    return with(key, [&](engine_type& e) { return e.ttl(key); });
  }
  template <class KK>
  [[nodiscard]] std::int64_t pttl(const KK& key) {
    return with(key, [&](engine_type& e) { return e.pttl(key); });
  }
  template <class KK>
  [[nodiscard]] std::int64_t expiretime(const KK& key) {
    return with(key, [&](engine_type& e) { return e.expiretime(key); });
  }
  template <class KK>
  [[nodiscard]] std::int64_t pexpiretime(const KK& key) {
    return with(key, [&](engine_type& e) { return e.pexpiretime(key); });
  }
  // OBJECT IDLETIME / OBJECT FREQ (see ExpiringStore). Under an LRU limit, reads without the
  // lock record one access in 8 per thread (the rest leave the LRU data alone), so the idle
  // time of a key read often stays recent, as Redis's sampled LRU needs.
  template <class KK>
  [[nodiscard]] std::optional<std::int64_t> object_idletime_ms(const KK& key) {
    return with(key, [&](engine_type& e) { return e.object_idletime_ms(key); });
  }
  template <class KK>
  [[nodiscard]] std::optional<std::uint32_t> object_freq(const KK& key) {
    return with(key, [&](engine_type& e) { return e.object_freq(key); });
  }
  // RESTORE's IDLETIME and FREQ (see ExpiringStore::set_object_access()).
  template <class KK>
  bool set_object_access(const KK& key, std::optional<std::int64_t> idle_seconds, std::optional<std::uint8_t> freq) {
    return with(key, [&](engine_type& e) { return e.set_object_access(key, idle_seconds, freq); });
  }
  // The stored value, stale or not, as fn(const V&, std::optional<std::int64_t> deadline)
  // under the shard's lock (see ExpiringStore::peek_stored()); fn must not call the store.
  template <class KK, class F>
  bool peek_stored(const KK& key, F&& fn) {
    return with(key, [&](engine_type& e) { return e.peek_stored(key, fn); });
  }

  // ==== Writing: as ExpiringStore, one shard each ========================================

  // SET key value [NX|XX] [EX|PX|EXAT|PXAT|KEEPTTL], as ExpiringStore::set().
  // The signatures are ExpiringStore's (not a parameter pack), so that `set(k, v, {}, cond)`
  // and braced arguments work the same on every store.
  template <class KK, class VV>
  Result<bool> set(KK&& key, VV&& value, SetExpiry expiry = {}, SetCond cond = SetCond::Always) {
    return with(key, [&](engine_type& e) { return e.set(std::forward<KK>(key), std::forward<VV>(value), expiry, cond); });
  }
  // set(key, value, cond), setnx(), setex(), psetex(), getset(): api/key_commands.hpp.
  using commands_type::set;
  // SET ... GET: as set(), but returns the previous live value (nullopt if none), whether or
  // not NX/XX let the write happen.
  template <class KK, class VV>
  Result<std::optional<V>> set_get(KK&& key, VV&& value, SetExpiry expiry = {}, SetCond cond = SetCond::Always) {
    return with(key, [&](engine_type& e) {
      return e.set_get(std::forward<KK>(key), std::forward<VV>(value), expiry, cond);
    });
  }
  // GETEX key [EX|PX|EXAT|PXAT|PERSIST]: a copy of the live value (nullopt if missing), then
  // the option applied, as ExpiringStore::getex().
  template <class KK>
  Result<std::optional<V>> getex(const KK& key, GetExExpiry option = {}) {
    return with(key, [&](engine_type& e) { return e.getex(key, option); });
  }
  // GETDEL: removes a live key and returns its value (nullopt if missing).
  template <class KK>
  std::optional<V> getdel(const KK& key) {
    return with(key, [&](engine_type& e) { return e.getdel(key); });
  }
  // In-place update under the shard's lock (fn(V&) must not call the store).
  template <class KK, class F>
  bool modify(const KK& key, F&& fn) {
    return with(key, [&](engine_type& e) { return e.modify(key, std::forward<F>(fn)); });
  }
  // INCRBY (see ExpiringStore::incr_by): atomic per key.
  template <class KK>
  Result<std::int64_t> incr_by(const KK& key, std::int64_t delta) {
    return with(key, [&](engine_type& e) { return e.incr_by(key, delta); });
  }
  // DEL / UNLINK (one key): true if a live key was removed; unlink() frees the value later
  // with lazy free on (see ExpiringStore::unlink()).
  template <class KK>
  bool del(const KK& key) {
    return with(key, [&](engine_type& e) { return e.del(key); });
  }
  template <class KK>
  bool unlink(const KK& key) {
    return with(key, [&](engine_type& e) { return e.unlink(key); });
  }
  // PERSIST: removes the TTL of a live key; true if it had one.
  template <class KK>
  bool persist(const KK& key) {
    return with(key, [&](engine_type& e) { return e.persist(key); });
  }
  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT, every overload (api/key_commands.hpp), over:
  template <class KK>
  Result<bool> expire_request(const KK& key, const ExpireRequest& r) {
    return with(key, [&](engine_type& e) { return e.expire_request(key, r); });
  }

  // ==== Atomic read-modify-write (see ExpiringStore) =====================================

  // pexpireat_if_equal() (api/key_commands.hpp), over:
  template <class KK, class VV>
  Result<bool> expire_request_if_equal(const KK& key, const VV& expected, const ExpireRequest& r) {
    return with(key, [&](engine_type& e) { return e.expire_request_if_equal(key, expected, r); });
  }
  // The lock-lease release `if GET(k) == expected then DEL(k)`, atomic for the key: true if it
  // was removed.
  template <class KK, class VV>
  bool del_if_equal(const KK& key, const VV& expected) {
    return with(key, [&](engine_type& e) { return e.del_if_equal(key, expected); });
  }
  // fn runs under the shard's lock: it must not call the store.
  template <class KK, class F>
  Result<bool> compute(const KK& key, F&& fn) {
    return with(key, [&](engine_type& e) { return e.compute(key, std::forward<F>(fn)); });
  }

  // ==== Hash fields: a store of hashes, ConcurrentStore<K, FieldMap<F, FV>> ==============
  // Redis 7.4's hash commands with per-field TTLs, as ExpiringStore's (hash_fields.hpp has
  // the contract; include <expiring/field_map.hpp>). Each call is atomic for its key under
  // the shard's lock; tick() (and an Expirer) runs each shard's field cycle after its key
  // cycle; events go out after the lock, as for keys. Values leave by copy: hget() returns a
  // std::optional, hmget() fills optionals, hvisit() shows a field or all of them in place under
  // the lock.
  // The multi-field forms (hset of pairs, hdel, the HEXPIRE and HTTL families, hpersist) are
  // api/hash_commands.hpp's, over the primitives at the end of this section. On a store whose
  // values are not hashes, these members do not compile.

  // HSET of one field: 1 if it is new, else 0 (an overwrite clears its TTL).
  template <class KK, class FF, class VV>
  Result<std::size_t> hset(const KK& key, FF&& field, VV&& value) {
    return with_hash(key, [&](engine_type& e) { return e.hset(key, std::forward<FF>(field), std::forward<VV>(value)); });
  }
  using hash_commands_type::hset;
  // HSETNX: whether it wrote.
  template <class KK, class FF, class VV>
  Result<bool> hsetnx(const KK& key, FF&& field, VV&& value) {
    return with_hash(key, [&](engine_type& e) { return e.hsetnx(key, std::forward<FF>(field), std::forward<VV>(value)); });
  }
  // HGET: a copy of the live field's value, or nullopt.
  template <class KK, class FF>
  Result<std::optional<hash_value_type>> hget(const KK& key, const FF& field) {
    Result<std::optional<hash_value_type>> out{std::optional<hash_value_type>()};  // (copied once, as get())
    (void)with_hash(key, [&](engine_type& e) {
      const Result<const hash_value_type*> r = e.hget(key, field);
      if (!r.ok()) {
        out = r.error();
      } else if (*r != nullptr) {
        out.value().emplace(**r);
      }
      return r.ok();
    });
    return out;
  }
  // HMGET: out[j] = a copy of fields[j]'s live value or nullopt; returns the number found.
  // `out` must have room for every field.
  template <class KK, class Fields>
  Result<std::size_t> hmget(const KK& key, const Fields& fields, std::optional<hash_value_type>* out) {
    std::vector<const hash_value_type*> seen(detail::field_count(fields));
    return with_hash(key, [&](engine_type& e) -> Result<std::size_t> {
      const Result<std::size_t> r = e.hmget(key, fields, seen.data());
      if (!r.ok()) return r.error();
      for (std::size_t j = 0; j < seen.size(); ++j) {
        out[j] = seen[j] != nullptr ? std::optional<hash_value_type>(*seen[j]) : std::nullopt;
      }
      return *r;
    });
  }
  // HLEN: the number of live fields (exact: stale ones are reclaimed first); 0 when missing.
  template <class KK>
  Result<std::size_t> hlen(const KK& key) {
    return with_hash(key, [&](engine_type& e) { return e.hlen(key); });
  }
  // HEXISTS: whether the field is live.
  template <class KK, class FF>
  Result<bool> hexists(const KK& key, const FF& field) {
    return with_hash(key, [&](engine_type& e) { return e.hexists(key, field); });
  }
  // HGET as a visit: fn(const FV&) under the shard's lock if the field is live, no copy made
  // (fn must not call the store). Returns whether it was.
  template <class KK, class FF, class Fn>
  Result<bool> hvisit(const KK& key, const FF& field, Fn&& fn) {
    return with_hash(key, [&](engine_type& e) { return e.hvisit(key, field, std::forward<Fn>(fn)); });
  }
  // HGETALL as a visit: fn(const F&, const FV&) per live field, under the shard's lock (fn
  // must not call the store). Returns the number of fields.
  template <class KK, class Fn>
  Result<std::size_t> hvisit(const KK& key, Fn&& fn) {
    return with_hash(key, [&](engine_type& e) { return e.hvisit(key, std::forward<Fn>(fn)); });
  }
  // HGETALL: copies of the live fields and their values, in no particular order.
  template <class KK>
  Result<std::vector<std::pair<hash_field_type, hash_value_type>>> hgetall(const KK& key) {
    return with_hash(key, [&](engine_type& e) { return e.hgetall(key); });
  }
  // HKEYS, HVALS: copies of the live fields' names, or of their values.
  template <class KK>
  Result<std::vector<hash_field_type>> hkeys(const KK& key) {
    return with_hash(key, [&](engine_type& e) { return e.hkeys(key); });
  }
  template <class KK>
  Result<std::vector<hash_value_type>> hvals(const KK& key) {
    return with_hash(key, [&](engine_type& e) { return e.hvals(key); });
  }
  // HINCRBY: adds delta to the field's integer value and returns the sum (a missing field
  // counts as 0), as ExpiringStore's (hash_fields.hpp).
  template <class KK, class FF>
  Result<std::int64_t> hincrby(const KK& key, const FF& field, std::int64_t delta) {
    return with_hash(key, [&](engine_type& e) { return e.hincrby(key, field, delta); });
  }
  // HINCRBYFLOAT: adds delta to the field's numeric value and returns the new value as stored,
  // in Redis's form, as ExpiringStore's (hash_fields.hpp).
  template <class KK, class FF>
  Result<hash_value_type> hincrbyfloat(const KK& key, const FF& field, long double delta) {
    return with_hash(key, [&](engine_type& e) { return e.hincrbyfloat(key, field, delta); });
  }
  // HRANDFIELD and HSCAN as visits under the shard's lock (fn must not call the store).
  template <class KK, class Fn>
  Result<std::size_t> hrandfield(const KK& key, std::int64_t count, Fn&& fn) {
    return with_hash(key, [&](engine_type& e) { return e.hrandfield(key, count, std::forward<Fn>(fn)); });
  }
  template <class KK, class Fn>
  Result<std::uint64_t> hscan(const KK& key, std::uint64_t cursor, std::size_t count, Fn&& fn) {
    return with_hash(key, [&](engine_type& e) { return e.hscan(key, cursor, count, std::forward<Fn>(fn)); });
  }
  // The primitives of api/hash_commands.hpp.
  template <class KK, class It, class End>
  Result<std::size_t> hset_range(const KK& key, It first, End last) {
    return with_hash(key, [&](engine_type& e) { return e.hset_range(key, first, last); });
  }
  template <class KK, class It, class End>
  Result<std::size_t> hdel_range(const KK& key, It first, End last) {
    return with_hash(key, [&](engine_type& e) { return e.hdel_range(key, first, last); });
  }
  template <class KK, class Fields>
  Result<void> expire_fields(const KK& key, const FieldExpireRequest& req, const Fields& fields, int* out) {
    return with_hash(key, [&](engine_type& e) { return e.expire_fields(key, req, fields, out); });
  }
  template <class KK, class Fields>
  Result<void> field_times(const KK& key, const Fields& fields, FieldTimeQuery q, std::int64_t* out) {
    return with_hash(key, [&](engine_type& e) { return e.field_times(key, fields, q, out); });
  }
  template <class KK, class Fields>
  Result<void> persist_fields(const KK& key, const Fields& fields, int* out) {
    return with_hash(key, [&](engine_type& e) { return e.persist_fields(key, fields, out); });
  }
  template <class KK, class Fields>
  Result<std::size_t> getex_fields(const KK& key, const Fields& fields, const FieldTtl& ttl,
                                   std::optional<hash_value_type>* out) {
    return with_hash(key, [&](engine_type& e) { return e.getex_fields(key, fields, ttl, out); });
  }
  template <class KK, class Fields>
  Result<std::size_t> getdel_fields(const KK& key, const Fields& fields, std::optional<hash_value_type>* out) {
    return with_hash(key, [&](engine_type& e) { return e.getdel_fields(key, fields, out); });
  }
  template <class KK, class It, class End>
  Result<bool> setex_range(const KK& key, It first, End last, const FieldTtl& ttl, FieldCondition cond) {
    return with_hash(key, [&](engine_type& e) { return e.setex_range(key, first, last, ttl, cond); });
  }

  // ==== Several keys: their shards locked together, in shard order =====================
  // Each of these is atomic: no other call sees a state between its steps (all its shards
  // are locked at once, always in ascending shard order, so two of them cannot deadlock).
  // Their events are delivered after every lock is released, shard by shard.

  // MSET: stores every (key, value) pair of `pairs` without TTL. Atomic, and all or nothing
  // for the memory limit: Errc::out_of_memory (nothing written) when a shard's eviction
  // cannot make room first (Redis's check before MSET).
  template <class Pairs>
  Result<void> mset(const Pairs& pairs) {
    return run_many(shards_of_pairs(pairs), [&](auto&& engine_of) -> Result<void> {
      for (const auto& kv : pairs) {
        Result<void> r = engine_of(kv.first).perform_evictions();
        if (!r.ok()) return r;
      }
      for (const auto& kv : pairs) {
        Result<void> r = engine_of(kv.first).as_one_command([&] { (void)engine_of(kv.first).set(kv.first, kv.second); });
        if (!r.ok()) return r;
      }
      return {};
    });
  }
  // MSETNX: stores every pair only if none of the keys exists; true if it did. Atomic.
  template <class Pairs>
  Result<bool> msetnx(const Pairs& pairs) {
    return run_many(shards_of_pairs(pairs), [&](auto&& engine_of) -> Result<bool> {
      for (const auto& kv : pairs) {
        if (engine_of(kv.first).peek(kv.first) != nullptr) return false;
      }
      for (const auto& kv : pairs) {
        Result<void> r = engine_of(kv.first).perform_evictions();
        if (!r.ok()) return r.error();
      }
      for (const auto& kv : pairs) {
        Result<void> r = engine_of(kv.first).as_one_command([&] { (void)engine_of(kv.first).set(kv.first, kv.second); });
        if (!r.ok()) return r.error();
      }
      return true;
    });
  }
  // DEL k1 k2 ...: the number of live keys removed. Atomic.
  template <class Keys>
  std::size_t del_many(const Keys& keys) {
    std::vector<Shard*> shards;
    for (const auto& k : keys) shards.push_back(&shard_of(k));
    return run_many(std::move(shards), [&](auto&& engine_of) {
      std::size_t n = 0;
      for (const auto& k : keys) n += engine_of(k).del(k) ? std::size_t{1} : std::size_t{0};
      return n;
    });
  }
  // RENAME / RENAMENX, also between shards (atomic). As ExpiringStore's.
  template <class K1, class K2>
  Result<void> rename(const K1& src, const K2& dst) {
    Result<bool> r = rename_generic(src, dst, false);
    if (!r.ok()) return r.error();
    return {};
  }
  template <class K1, class K2>
  Result<bool> renamenx(const K1& src, const K2& dst) {
    return rename_generic(src, dst, true);
  }
  // COPY src dst [REPLACE], also between shards (atomic). As ExpiringStore's.
  template <class K1, class K2>
  Result<bool> copy(const K1& src, const K2& dst, bool replace = false) {
    Shard& a = shard_of(src);
    Shard& b = shard_of(dst);
    if (&a == &b) return run(a, [&](engine_type& e) { return e.copy(src, dst, replace); });
    return run_many({&a, &b}, [&](auto&& engine_of) -> Result<bool> {
      auto t = engine_of(src).copy_out(src);
      if (!t) return false;
      return engine_of(dst).copy_in(dst, std::move(*t), replace);
    });
  }

  // ==== Replica mode: following a primary's change feed ==================================
  // REPLICAOF host port / REPLICAOF NO ONE: turns replica mode (Options::replica) on or off
  // in every shard at once (expiring::Replica turns it on as it starts following).
  void set_replica(bool on) {
    std::vector<Shard*> all(shards_n_);
    for (std::size_t i = 0; i < shards_n_; ++i) all[i] = &shards_[i];
    run_many(std::move(all), [&](auto&&) {
      for (std::size_t i = 0; i < shards_n_; ++i) shards_[i].engine->set_replica(on);
      options_.replica = on;
      return true;
    });
  }
  // With Options::replica every shard is a replica (docs/semantics.md D31): tick() expires
  // nothing, and reads answer a stale key as missing and leave it in place, from any number of
  // threads. apply() replays the primary's records (change_feed.hpp) as ExpiringStore::apply()
  // does, from one thread at a time (the replication link's; calls are serialized). The
  // records of a MULTI ... EXEC unit are held until its EXEC and then applied with all their
  // shards locked at once, so that a reader sees all of a unit or none of it: inside a unit,
  // apply() checks each record (Errc::invalid_record at once, nothing held) and returns false;
  // the EXEC returns whether the unit changed the store. A RENAME between shards moves the
  // key with both shards locked. Events go out after the locks, as for every call.
  Result<bool> apply(const change_type& c) {
    std::lock_guard<std::mutex> g(apply_mu_);
    if (const std::optional<Errc> e = invalid_record(c)) return *e;
    if (c.op == ChangeOp::multi) {
      in_unit_ = true;  // (a MULTI inside a unit is ignored, as ExpiringStore's apply() does)
      return false;
    }
    if (c.op == ChangeOp::exec) {
      if (!in_unit_) return false;
      in_unit_ = false;
      std::vector<ChangeRecord<K, V>> unit;
      unit.swap(unit_);
      std::vector<change_type> views;
      views.reserve(unit.size());
      for (const auto& r : unit) views.push_back(r.view());
      return apply_records(views.data(), views.size());
    }
    if (in_unit_) {
      unit_.push_back(ChangeRecord<K, V>::of(c));
      return false;
    }
    return apply_records(&c, 1);
  }

  // ==== The change feed, units, and walks for snapshots and logs ==========================
  // One stream for the whole store (change_feed.hpp has the records): each shard's records
  // go to one sequencer, which numbers them (Change::seq) and hands them to `feed` while the
  // shard's lock is held (lock order: shard, then sequencer; nothing takes a shard's lock
  // while holding the sequencer). A shard's MULTI ... EXEC is gathered until its EXEC and
  // sent whole; a call that locks several shards (mset(), del_many(), RENAME or COPY between
  // shards, apply() of a unit, as_one_unit()) gathers the records of all of them and sends
  // them as one MULTI ... EXEC (one record alone, unframed, unless as_one_unit() made it).
  //
  // What a reader of the stream may assume (docs/design/concurrent_feed.md):
  //   1. it is one total order, consistent with the order of every key's changes;
  //   2. if call A returned before call B started, A's records come before B's;
  //   3. calls on different keys that overlap in time may appear in either order;
  //   4. every call's records (as_one_unit()'s, across shards) are one contiguous unit.
  // So replaying the stream in order, into any store, reaches this store's state.
  //
  // `feed` runs under a shard's lock and the sequencer's, and must neither call the store nor
  // throw, as ExpiringStore's. `on_return(seq)`, if given, is called by a thread whose call
  // sent records, after the call released its locks and before it returns, with the number
  // of its last record: AppendLog waits there for appendfsync always (a group commit). Set
  // the feed before other threads use the store, as the listener; an empty one removes it.
  // Cost without a feed: one test per call.
  void set_change_feed(change_feed_type feed, std::function<void(std::uint64_t)> on_return = {}) {
    const bool on = static_cast<bool>(feed);
    install_feed(std::move(feed), {}, on ? std::move(on_return) : nullptr);
  }
  // What set_change_log() takes: encode(c, in_unit, out), which appends record c's encoding
  // to `out` and returns how many records it wrote.
  using change_encoder_type = std::function<std::size_t(const change_type&, bool, std::string&)>;
  // The same stream as bytes, for a log (AppendLog uses it; it replaces set_change_feed()'s
  // function). encode(c, in_unit, out) appends record c's encoding to `out` and returns how
  // many records it wrote (in_unit: c is inside a MULTI ... EXEC); it runs under the shard's
  // lock, on the calling thread, into that shard's own buffer, and the unit takes its numbers
  // with one atomic add: nothing is serialized across shards, and no cache line but the
  // counter's is shared by the writers. drain_log() then hands the units over in stream
  // order. A shard's buffer past `shard_limit` bytes makes take_log_due() true (the log then
  // drains early). encode must neither call the store nor throw.
  void set_change_log(change_encoder_type encode, std::function<void(std::uint64_t)> on_return = {},
                      std::size_t shard_limit = std::size_t{1} << 16) {
    const bool on = static_cast<bool>(encode);
    log_shard_limit_ = shard_limit;
    install_feed({}, on ? std::move(encode) : nullptr, on ? std::move(on_return) : nullptr);
  }
  // set_change_log(): appends to `out`, in stream order, every unit numbered up to the
  // stream's end when the call began, and removes them from the shards' buffers (one shard's
  // lock at a time); returns how many records and the number of the last (0: nothing yet).
  // Every unit up to that number is in `out` or was in an earlier drain: a log that writes
  // the drains in order holds a prefix of the stream. Calls must not overlap.
  std::pair<std::size_t, std::uint64_t> drain_log(std::string& out);
  // Whether a shard's log buffer passed its limit since the last call (then false again).
  bool take_log_due() noexcept {
    return log_due_.load(std::memory_order_relaxed) && log_due_.exchange(false, std::memory_order_relaxed);
  }
  // The number of the last record the feed was sent (0 before the first): a snapshot or a
  // log rewrite starting now holds every change up to it.
  std::uint64_t feed_seq() const {
    std::lock_guard<detail::ShardLock> g(seq_mu_);  // a feed's unit is numbered under it
    return seq_.load(std::memory_order_acquire);
  }

  // Runs fn() (calls of this store, from this thread) with every shard locked: no other
  // thread sees a state between its calls, and its records travel as one MULTI ... EXEC
  // across shards (a log replays all of them or none). Nested units join the outer one;
  // events are delivered after every lock is released. Every other thread waits meanwhile:
  // meant for loads, replays and rare multi-key transactions, not for a hot path.
  template <class F>
  void as_one_unit(F&& fn) {
    if (owns_all()) {
      std::forward<F>(fn)();
      return;
    }
    std::vector<Shard*> all(shards_n_);
    for (std::size_t i = 0; i < shards_n_; ++i) all[i] = &shards_[i];
    run_many(std::move(all), [&](auto&&) {
      const Exclusive scope(exclusive_);
      std::forward<F>(fn)();
      return true;
    }, /*unit=*/true);
  }

  // FLUSHALL: removes every key of every shard at once (all shards locked), with no per-key
  // events; the feed sees one FLUSHALL. Statistics are kept.
  void clear() {
    std::vector<Shard*> all(shards_n_);
    for (std::size_t i = 0; i < shards_n_; ++i) all[i] = &shards_[i];
    run_many(std::move(all), [&](auto&&) {
      for (std::size_t i = 0; i < shards_n_; ++i) shards_[i].engine->clear();
      return true;
    });
  }
  // Reserves room for about n keys (n / shard_count() in each shard).
  void reserve(std::size_t n) {
    for (std::size_t i = 0; i < shards_n_; ++i) {
      (void)run(shards_[i], [&](engine_type& e) {
        e.reserve((n + shards_n_ - 1) / shards_n_);
        return true;
      });
    }
  }

  // What scan_stored() returns when the shard rehashed since the last step.
  static constexpr std::uint64_t kRestarted = engine_type::kRestarted;
  // A walk over one shard's stored entries, a few at a time, as ExpiringStore::scan_stored():
  // fn(const K&, const V&, std::optional<std::int64_t> deadline) for up to `count` entries
  // from `cursor` (0 starts), under that shard's lock (fn must not call the store); returns
  // the cursor to go on with, 0 when the shard is done, or kRestarted when the shard rehashed
  // since the last step (walk that shard again). What a snapshot or a log rewrite of a running
  // store is made of: a writer waits for at most one step of one shard.
  template <class F>
  std::uint64_t scan_stored(std::size_t shard, std::uint64_t cursor, std::size_t count, F&& fn) const {
    Shard& sh = shards_[shard];
    const Guard g(*this, sh);
    return sh.engine->scan_stored(cursor, count, std::forward<F>(fn));
  }

  // The Options the constructor took, store-wide (each shard has its share of the limits),
  // with `replica` as set_replica() left it.
  const Options& options() const noexcept { return options_; }
  // A copy of the key hash, keyed with Options::seed when one was given (keep it secret): it
  // picks each key's shard.
  Hash hash_function() const { return hash_; }
  // A copy of the key equality.
  KeyEqual key_eq() const { return eq_; }
  // A store of hashes: the hasher a new hash's fields take (the first shard's).
  template <class VV = V, std::enable_if_t<hash_value_traits<VV>::enabled, int> = 0>
  auto field_hash_function() const {
    return shards_[0].engine->field_hash_function();
  }

  // ==== Single-flight get-or-load ========================================================

  // As ExpiringStore::get_or_load(), for many threads: a live value that is not stale is
  // returned (a copy). Otherwise one caller runs loader() outside every lock and stores its
  // result with `ttl`; concurrent callers for the same key wait for that load and get its
  // value, or its exception rethrown. Errors as ExpiringStore::get_or_load() (validated before
  // anything is loaded); a waiter gets the loader's caller's error. nullopt when `ttl` is an
  // absolute deadline already past (nothing is stored).
  template <class KK, class F>
  Result<std::optional<V>> get_or_load(const KK& key, F&& loader, SetExpiry ttl = {});

  // The asynchronous form: the load (if one is needed) runs on a new thread; the future holds
  // what get_or_load() would return.
  template <class KK, class F>
  std::future<Result<std::optional<V>>> get_or_load_async(KK key, F loader, SetExpiry ttl = {}) {
    return std::async(std::launch::async, [this, key = std::move(key), loader = std::move(loader), ttl]() mutable {
      return get_or_load(key, loader, ttl);
    });
  }

  // ==== Keyspace, expiry and statistics ==================================================

  // DBSIZE, summed over the shards (each read under its lock; not one snapshot).
  std::size_t size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < shards_n_; ++i) {
      const Guard g(*this, shards_[i]);
      n += shards_[i].engine->size();
    }
    return n;
  }
  // Stored keys with a TTL (INFO keyspace `expires=`), summed over the shards as size() is.
  std::size_t expires_size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < shards_n_; ++i) {
      const Guard g(*this, shards_[i]);
      n += shards_[i].engine->expires_size();
    }
    return n;
  }

  // One active-expire cycle over every shard (each with its share of the budget, its lock held
  // only for its own cycle). The reports are summed.
  TickReport tick(CycleKind kind = CycleKind::Slow) {
    TickReport sum;
    for (std::size_t i = 0; i < shards_n_; ++i) {
      detail::add_part(sum, run(shards_[i], [&](engine_type& e) { return e.tick(kind); }));
    }
    return sum;
  }

  // INFO stats and keyspace figures (see ExpiringStore::stats()), summed over the shards, each
  // read under its lock (not one snapshot); expired_stale_perc is the shards' mean, avg_ttl
  // the mean over the volatile keys. The hits and misses of reads without a lock are added.
  Stats stats() const {
    Stats s;
    for (std::size_t i = 0; i < shards_n_; ++i) {
      const Guard g(*this, shards_[i]);
      detail::add_part(s, shards_[i].engine->stats(), shards_n_);
    }
    s.keyspace_hits += readers_.hits();
    s.keyspace_misses += readers_.misses();
    return s;
  }
  // Cache statistics (stats.hpp), summed over the shards as stats() is, with the hits and
  // misses of reads without a lock, and get_or_load()'s load time and failures.
  CacheStats cache_stats() const {
    CacheStats c;
    for (std::size_t i = 0; i < shards_n_; ++i) {
      const Guard g(*this, shards_[i]);
      const CacheStats t = shards_[i].engine->cache_stats();
      c.hit_count += t.hit_count;
      c.miss_count += t.miss_count;
      c.load_success_count += t.load_success_count;
      c.load_failure_count += t.load_failure_count;
      c.total_load_time_ns += t.total_load_time_ns;  // ~0: the engine only times the hand-over
      c.eviction_count += t.eviction_count;
      c.eviction_weight += t.eviction_weight;
    }
    c.hit_count += readers_.hits();  // optimistic get()s: value reads
    c.miss_count += readers_.misses();
    c.total_load_time_ns += load_ns_.load(std::memory_order_relaxed);
    c.load_failure_count += load_failed_.load(std::memory_order_relaxed);
    return c;
  }

  // The listener and its causes (see ExpiringStore::set_listener). Events are delivered after
  // the shard's lock is released, one delivery at a time per shard, in operation order; a
  // listener may call the store (the events that causes are delivered after it returns). Set
  // it before other threads use the store.
  void set_listener(listener_type listener, KeyEventCauses causes = KeyEventCauses::all()) {
    listener_ = std::move(listener);
    for (std::size_t i = 0; i < shards_n_; ++i) {
      Shard& sh = shards_[i];
      const Guard g(*this, sh);
      if (listener_) {
        sh.engine->set_listener([&sh](const event_type& ev) { sh.outbox.push_back(Owned::of(ev)); }, causes);
      } else {
        sh.engine->set_listener(nullptr);
      }
    }
  }

  // The Clock's now in Unix milliseconds (the first shard's copy of the clock).
  std::int64_t now_ms() const { return shards_[0].engine->now_ms(); }

 private:
  // An event copied out of the shard, to be delivered without its lock.
  struct Owned {
    KeyEventCause cause;
    K key;
    std::optional<V> value;
    static Owned of(const event_type& ev) {
      return Owned{ev.cause, ev.key, ev.value != nullptr ? std::optional<V>(*ev.value) : std::nullopt};
    }
  };
  // One in-progress load of get_or_load().
  struct Flight {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<Result<std::optional<V>>> result;
    std::exception_ptr error;
  };
  // The records of a call over several shards, sent as one unit when it ends.
  struct FeedGroup {
    std::vector<ChangeRecord<K, V>> records;
    bool framed = false;    // a shard framed its records (or as_one_unit() asked for a unit)
    bool flushall = false;  // clear(): one FLUSHALL for all shards
  };
  // One encoded unit in a shard's log buffer: its first number, where its bytes end, and how
  // many records they hold.
  struct LogMark {
    std::uint64_t first;
    std::size_t end;
    std::size_t records;
  };
  struct alignas(64) Shard {
    // The lock alone on its line: a waiter spinning on it does not take the engine's lines
    // (written by the owner on every operation) away from the owner.
    alignas(64) mutable detail::ShardLock lock;
    alignas(64) std::optional<engine_type> engine;
    std::vector<Owned> outbox;  // events of the operation in progress (under `lock`)
    // Delivery order: tickets taken under `lock`, served in order outside it.
    std::uint64_t next_ticket = 0;
    std::mutex deliver_mu;
    std::condition_variable deliver_cv;
    std::uint64_t serving = 0;
    std::unordered_map<K, std::shared_ptr<Flight>, Hash, KeyEqual> flights;  // under `lock`
    // The change feed (under `lock`): a MULTI ... EXEC of this shard gathered until its EXEC,
    // or the group of a call over several shards that this shard's records join.
    std::vector<ChangeRecord<K, V>> unit;
    bool in_unit = false;
    FeedGroup* group = nullptr;
    // set_change_log(): this shard's encoded units not yet drained, and where each ends.
    std::string log_bytes;
    std::vector<LogMark> log_marks;
    std::string log_spare;  // the last drain's buffers, empty, kept for their room
    std::vector<LogMark> log_marks_spare;
  };

  // The lock of a shard for a member that reads (size(), stats()): none when this thread
  // holds every lock already (inside as_one_unit()).
  class Guard {
   public:
    Guard(const BasicConcurrentStore& s, Shard& sh) : lock_(s.owns_all() ? nullptr : &sh.lock) {
      if (lock_ != nullptr) lock_->lock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (lock_ != nullptr) lock_->unlock();
    }

   private:
    detail::ShardLock* lock_;
  };
  // as_one_unit(): marks every lock as this thread's while fn() runs, so that its calls take
  // none. Another thread that reads the mark sees someone else's id (or none) and locks.
  struct Exclusive {
    std::atomic<std::thread::id>& owner;
    explicit Exclusive(std::atomic<std::thread::id>& o) : owner(o) { owner.store(std::this_thread::get_id(), std::memory_order_relaxed); }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;
    ~Exclusive() { owner.store(std::thread::id{}, std::memory_order_relaxed); }
  };
  bool owns_all() const noexcept {
    const std::thread::id id = exclusive_.load(std::memory_order_relaxed);
    return EXPIRING_UNLIKELY(id != std::thread::id{}) && id == std::this_thread::get_id();
  }

  // ---- The sequencer ----
  // set_change_feed() and set_change_log(): the consumer, then every shard's forwarder.
  void install_feed(change_feed_type feed, change_encoder_type encode, std::function<void(std::uint64_t)> on_return) {
    {
      std::lock_guard<detail::ShardLock> g(seq_mu_);
      feed_ = std::move(feed);
      encode_ = std::move(encode);
      encoded_ = static_cast<bool>(encode_);
      feed_on_ = static_cast<bool>(feed_) || encoded_;
      on_return_ = std::move(on_return);
      acknowledging_ = static_cast<bool>(on_return_);
    }
    for (std::size_t i = 0; i < shards_n_; ++i) {
      Shard& sh = shards_[i];
      const Guard g(*this, sh);
      sh.unit.clear();
      sh.in_unit = false;
      if (encoded_) {  // a new log starts empty (what an old one left undrained is not its)
        sh.log_bytes.clear();
        sh.log_marks.clear();
        log_drained_ = seq_.load(std::memory_order_relaxed);
      }
      if (feed_on_) {
        sh.engine->set_change_feed([this, &sh](const change_type& c) { forward(sh, c); });
      } else {
        sh.engine->set_change_feed({});
      }
    }
  }

  // A shard's feed (under its lock): a record alone goes out at once; a MULTI ... EXEC is
  // gathered and sent whole at its EXEC; inside a group every record joins the group.
  void forward(Shard& sh, const change_type& c) {
    if (sh.group != nullptr) {
      FeedGroup& g = *sh.group;
      if (c.op == ChangeOp::multi || c.op == ChangeOp::exec) {
        g.framed = true;
        return;
      }
      if (c.op == ChangeOp::flushall) {
        if (g.flushall) return;
        g.flushall = true;
      }
      g.records.push_back(ChangeRecord<K, V>::of(c));
      return;
    }
    if (c.op == ChangeOp::multi) {
      sh.in_unit = true;
      return;
    }
    if (sh.in_unit) {
      if (c.op != ChangeOp::exec) {
        sh.unit.push_back(ChangeRecord<K, V>::of(c));
        return;
      }
      sh.in_unit = false;
      send_unit(sh.unit, true, sh);
      sh.unit.clear();
      return;
    }
    if (encoded_) {
      log_unit(sh, 1, [&](std::string& out) { return encode_(c, false, out); });
      return;
    }
    std::lock_guard<detail::ShardLock> g(seq_mu_);
    send(c);
  }
  // set_change_log(): a unit of `numbers` records encoded into `sh`'s buffer (its lock held)
  // and numbered with one atomic add.
  template <class Encode>
  void log_unit(Shard& sh, std::uint64_t numbers, Encode&& encode) {
    const std::size_t records = encode(sh.log_bytes);
    const std::uint64_t last = seq_.fetch_add(numbers, std::memory_order_acq_rel) + numbers;
    sh.log_marks.push_back(LogMark{last - numbers + 1, sh.log_bytes.size(), records});
    // The buffer's next lines, for the next units: 32 shards' tails are more streams than the
    // hardware prefetcher follows, and a write to a line not in the cache waits for it.
    const std::size_t ahead = sh.log_bytes.size() + 128;
    if (ahead < sh.log_bytes.capacity()) detail::prefetch_write(sh.log_bytes.data() + ahead);
    last_sent() = last;
    if (sh.log_bytes.size() >= log_shard_limit_ && !log_due_.load(std::memory_order_relaxed)) {
      log_due_.store(true, std::memory_order_relaxed);
    }
  }
  // Sends recs as one unit: framed in MULTI ... EXEC when `framed` or when there are several.
  // `sh`: a shard the caller holds, whose log buffer takes the unit (set_change_log()).
  void send_unit(const std::vector<ChangeRecord<K, V>>& recs, bool framed, Shard& sh) {
    if (recs.empty()) return;
    const bool wrap = framed || recs.size() > 1;
    if (encoded_) {
      log_unit(sh, recs.size() + (wrap ? 2 : 0), [&](std::string& out) {
        std::size_t n = 0;
        if (wrap) n += encode_(change_type{ChangeOp::multi}, true, out);
        for (const ChangeRecord<K, V>& r : recs) n += encode_(r.view(), wrap, out);
        if (wrap) n += encode_(change_type{ChangeOp::exec}, true, out);
        return n;
      });
      return;
    }
    std::lock_guard<detail::ShardLock> g(seq_mu_);
    if (wrap) send(change_type{ChangeOp::multi});
    for (const ChangeRecord<K, V>& r : recs) send(r.view());
    if (wrap) send(change_type{ChangeOp::exec});
  }
  // Under seq_mu_: numbers the record and hands it to the feed.
  void send(const change_type& c) noexcept {
    c.seq = seq_.fetch_add(1, std::memory_order_acq_rel) + 1;
    last_sent() = c.seq;
    feed_(c);
  }
  // The number of the last record this thread's current call sent (0: none).
  static std::uint64_t& last_sent() noexcept {
    static thread_local std::uint64_t seq = 0;
    return seq;
  }
  // After a call released its locks: on_return(seq) if it sent records.
  void acknowledge() {
    const std::uint64_t seq = std::exchange(last_sent(), 0);
    if (seq != 0) on_return_(seq);
  }

  // The delivery this thread is running, if any: nested operations of a listener on the same
  // shard append to it instead of waiting for their own turn (which would never come).
  struct Delivery {
    Shard* shard;
    std::vector<Owned>* queue;
  };
  static Delivery*& current_delivery() noexcept {
    static thread_local Delivery* d = nullptr;
    return d;
  }
  // Events a listener's operation raised on another shard (or store) during a delivery: this
  // thread delivers them, in the order it took their tickets, once its outermost delivery has
  // passed its turn on. Waiting for another shard's turn while holding one would deadlock
  // against a thread doing the reverse.
  struct Deferred {
    BasicConcurrentStore* owner;
    Shard* shard;
    std::vector<Owned> batch;
    std::uint64_t ticket;
  };
  static std::deque<Deferred>& deferred() noexcept {
    static thread_local std::deque<Deferred> q;
    return q;
  }
  static bool& draining() noexcept {
    static thread_local bool on = false;
    return on;
  }

  // The error the engine's get_or_load() would give for `ttl` before it reads (its checks).
  static std::optional<Errc> invalid_ttl(SetExpiry ttl, std::int64_t now) noexcept {
    const detail::ExpirySpec spec = ttl.spec();
    const bool seconds = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::exat;
    const bool relative = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::px;
    if (!seconds && !relative && spec.kind != detail::ExpiryKind::pxat) return std::nullopt;  // no deadline
    if (spec.invalid || spec.value <= 0) return Errc::invalid_expire_time;
    if (relative && !spec.jitter.valid()) return Errc::out_of_range;
    std::int64_t v = spec.value;
    if (seconds && !detail::seconds_to_ms(v, v)) return Errc::invalid_expire_time;
    if (relative && !detail::checked_add(v, now, v)) return Errc::invalid_expire_time;
    return std::nullopt;
  }
  static Hash keyed_copy(Hash h, std::uint64_t seed) {
    if constexpr (detail::is_rekeyable<Hash>::value) h.rekey(HashKey::from_seed(seed ^ 0x5DEECE66Dull));
    return h;
  }
  Options shard_options(const Options& o, std::size_t i) const {
    Options s = o;
    const std::size_t n = shards_n_;
    if (s.seed) s.seed = *s.seed + 0x9E3779B97F4A7C15ull * (i + 1);
    // Each shard's slow cycle gets 1/n of the budget: its hz is n times the store's (the
    // engine clamps hz to 500, so beyond that a shard's share is larger).
    s.hz = static_cast<int>(std::min<std::size_t>(500, static_cast<std::size_t>(std::max(1, o.hz)) * n));
    if (o.max_entries != 0) s.max_entries = (o.max_entries + n - 1) / n;
    if (o.maxmemory != 0) s.maxmemory = (o.maxmemory + n - 1) / n;
    if (o.reserve != 0) s.reserve = (o.reserve + n - 1) / n;
    if (o.lazyfree_queue_max != 0) s.lazyfree_queue_max = std::max<std::size_t>(1, (o.lazyfree_queue_max + n - 1) / n);
    return s;
  }

  // A key as an optimistic read looks it up: K, or a view of a string key.
  using RacyKey = typename engine_type::racy_key_type;
  // A key on its way through an optimistic read: its shard and its table hash.
  struct Probe {
    Shard* shard;
    std::uint64_t h;
  };
  Probe probe_of(const RacyKey& k) const {
    // One hash for the shard and the table: the shards hash with the store's own (ShardHash).
    const auto raw = static_cast<std::uint64_t>(hash_(k));
    Shard& sh = shards_[shard_index(raw)];
    return Probe{&sh, sh.engine->hash_from(raw)};
  }

  using RacyRead = typename engine_type::RacyRead;
  // get() of an optimistic store. One way out: an optional assembled on several paths is
  // written member by member and then copied whole, a failed store-to-load forward (~12
  // cycles) per copy (GCC 12; measured: 30 -> 19 ns per get() at 1e4 keys).
  EXPIRING_INLINE std::optional<V> get_unlocked(const RacyKey& k) {
    V value{};
    RacyRead r = get_optimistic(k, value);
    if (r != RacyRead::hit && r != RacyRead::miss) r = get_locked(k, value);
    if (r == RacyRead::hit) return value;
    return std::nullopt;
  }
  // get() under the shard's lock, into `value`: hit or miss.
  RacyRead get_locked(const RacyKey& k, V& value) {
    return with(k, [&](engine_type& e) {
      const V* v = e.get(k);
      if (v != nullptr) value = *v;
      return v != nullptr ? RacyRead::hit : RacyRead::miss;
    });
  }
  // get() without the lock: the shard's table read between two loads of its version, inside
  // a read section (read_section.hpp) so that no block is freed under it. `hit` (the value in
  // `value`) or `miss`, counted; otherwise the read must take the lock (writers kept coming,
  // the key is stale, this thread has no reader id).
  EXPIRING_INLINE RacyRead get_optimistic(const RacyKey& k, V& value) {
    const Probe p = probe_of(k);
    const detail::Readers::Section section(readers_);
    if (section.slot() == nullptr) return RacyRead::locked;
    return read_in_section(*section.slot(), p, k, value);
  }
  // One optimistic read in an open section, tried again while a writer is seen (a few times:
  // a write takes tens of ns); counts a hit or miss. `value` holds the value only on a hit.
  EXPIRING_INLINE RacyRead read_in_section(detail::ReaderSlot& slot, const Probe& p, const RacyKey& k, V& value) {
    RacyRead r = read_once(p, k, value);
    if (EXPIRING_UNLIKELY(r == RacyRead::torn)) r = read_again(p, k, value);
    if (EXPIRING_UNLIKELY(r == RacyRead::hit_unrecorded)) {
      // Under an LRU limit one read in kLruSample, drawn at random per thread, is redone
      // under the lock, which records the access; the others leave the LRU data alone.
      r = slot.draw() % kLruSample == 0 ? RacyRead::locked : RacyRead::hit;
    }
    if (r == RacyRead::hit) detail::ReaderSlot::bump(slot.hits);
    if (r == RacyRead::miss) detail::ReaderSlot::bump(slot.misses);
    return r;
  }
  // One optimistic read: torn when a writer held the lock or ran meanwhile.
  EXPIRING_INLINE RacyRead read_once(const Probe& p, const RacyKey& k, V& value) const {
    const detail::ShardLock& lock = p.shard->lock;
    const std::uint64_t v = lock.read_begin();
    if ((v & 1) != 0) return RacyRead::torn;
    const RacyRead r = p.shard->engine->read_racy(k, p.h, value, [&] { return lock.read_valid(v); });
    return r == RacyRead::locked || lock.read_valid(v) ? r : RacyRead::torn;
  }
  // The read tried again while writers keep it torn (kReadAttempts in all; then `torn`, and
  // the caller takes the lock). Out of line: the first attempt almost always succeeds.
  EXPIRING_NOINLINE RacyRead read_again(const Probe& p, const RacyKey& k, V& value) const {
    RacyRead r = RacyRead::torn;
    for (int attempt = 1; attempt < kReadAttempts && r == RacyRead::torn; ++attempt) {
      EXPIRING_CPU_RELAX();
      r = read_once(p, k, value);
    }
    return r;
  }
  // get_many() without locks: in batches of 16 keys, hashed and their control groups and then
  // their likely slots prefetched before the reads, so that the batch's cache misses overlap
  // (as ExpiringStore::get_many); a key whose read must take the lock is read after the
  // section. Each key's read is atomic; the batch is not one snapshot.
  template <class Keys>
  std::size_t get_many_optimistic(const Keys& keys, std::optional<V>* out) {
    constexpr std::size_t kBatch = 16;
    K ks[kBatch];
    Probe ps[kBatch];
    std::size_t hits = 0, done = 0;
    auto it = std::begin(keys);
    const auto last = std::end(keys);
    while (it != last) {
      std::size_t n = 0;
      for (; it != last && n < kBatch; ++it, ++n) {
        ks[n] = K(*it);
        ps[n] = probe_of(ks[n]);
      }
      std::uint32_t locked = 0;  // bit j: key j must be read under its shard's lock
      {
        const detail::Readers::Section section(readers_);
        if (detail::ReaderSlot* slot = section.slot()) {
          for (std::size_t j = 0; j < n; ++j) ps[j].shard->engine->prefetch_racy_group(ps[j].h);
          // The slots too, if the tables are too large to be in cache (one shard's, times the
          // shards, stands for all of them).
          if (ps[0].shard->engine->racy_table_bytes() * shards_n_ >= detail::kSlotPrefetchBytes) {
            for (std::size_t j = 0; j < n; ++j) {
              const detail::ShardLock& lock = ps[j].shard->lock;
              const std::uint64_t v = lock.read_begin();
              if ((v & 1) == 0) ps[j].shard->engine->prefetch_racy_slot(ps[j].h, [&] { return lock.read_valid(v); });
            }
          }
          for (std::size_t j = 0; j < n; ++j) {
            V value{};
            const RacyRead r = read_in_section(*slot, ps[j], ks[j], value);
            if (r == RacyRead::hit) {
              out[done + j] = value;
            } else if (r == RacyRead::miss) {
              out[done + j].reset();
            } else {
              locked |= 1u << j;
            }
          }
        } else {
          locked = (1u << n) - 1;
        }
      }
      for (std::size_t j = 0; j < n; ++j) {
        if ((locked >> j & 1u) != 0) {
          V value{};
          if (get_locked(ks[j], value) == RacyRead::hit) {
            out[done + j] = value;
          } else {
            out[done + j].reset();
          }
        }
        hits += out[done + j].has_value() ? 1u : 0u;
      }
      done += n;
    }
    return hits;
  }

  // with() for a hash member: only a store of hashes has them.
  template <class KK, class Fn>
  decltype(auto) with_hash(const KK& key, Fn&& fn) {
    static_assert(hash_value_traits<V>::enabled,
                  "expiring: hash members need a store of hashes, ConcurrentStore<K, FieldMap<F, V>> "
                  "(include <expiring/field_map.hpp>)");
    return with(key, std::forward<Fn>(fn));
  }
  template <class KK>
  Shard& shard_of(const KK& key) const noexcept {
    return shards_[shard_index(static_cast<std::uint64_t>(hash_(key)))];
  }
  std::size_t shard_index(std::uint64_t hash) const noexcept {
    // A multiplicative mix: its high bits depend on every bit of the hash.
    const std::uint64_t h = hash * 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(h >> shift_) & (shards_n_ - 1);
  }

  template <class K1, class K2>
  Result<bool> rename_generic(const K1& src, const K2& dst, bool nx) {
    Shard& a = shard_of(src);
    Shard& b = shard_of(dst);
    if (&a == &b) {
      return run(a, [&](engine_type& e) -> Result<bool> {
        if (!nx) {
          Result<void> r = e.rename(src, dst);
          if (!r.ok()) return r.error();
          return true;
        }
        return e.renamenx(src, dst);
      });
    }
    return run_many({&a, &b}, [&](auto&& engine_of) -> Result<bool> {
      engine_type& s = engine_of(src);
      engine_type& d = engine_of(dst);
      if (s.peek(src) == nullptr) {
        (void)s.exists(src);  // the write lookup's lazy expiry of a stale source
        return Errc::no_such_key;
      }
      if (nx && d.peek(dst) != nullptr) return false;
      auto t = s.rename_out(src);
      if (!t) return Errc::no_such_key;
      return d.rename_in(dst, std::move(*t), nx);
    });
  }
  template <class Pairs>
  std::vector<Shard*> shards_of_pairs(const Pairs& pairs) {
    std::vector<Shard*> v;
    for (const auto& kv : pairs) v.push_back(&shard_of(kv.first));
    return v;
  }
  // apply(): the error ExpiringStore::apply() gives a record it cannot replay.
  static std::optional<Errc> invalid_record(const change_type& c) {
    const bool keyed = c.op != ChangeOp::flushall && c.op != ChangeOp::multi && c.op != ChangeOp::exec;
    if (keyed && c.key == nullptr) return Errc::invalid_record;
    if ((c.op == ChangeOp::set && c.value == nullptr) || (c.op == ChangeOp::rename && c.to == nullptr)) {
      return Errc::invalid_record;
    }
    return std::nullopt;
  }
  // Replays n valid records with every shard they touch locked at once: whether any changed,
  // or the first error a shard's apply() gave (the records after it are applied all the same,
  // as a replica goes on after a record it cannot replay).
  Result<bool> apply_records(const change_type* recs, std::size_t n) {
    std::vector<Shard*> shards;
    for (std::size_t i = 0; i < n; ++i) {
      const change_type& c = recs[i];
      if (c.op == ChangeOp::flushall) {
        for (std::size_t j = 0; j < shards_n_; ++j) shards.push_back(&shards_[j]);
      } else if (c.key != nullptr) {
        shards.push_back(&shard_of(*c.key));
        if (c.op == ChangeOp::rename) shards.push_back(&shard_of(*c.to));
      }
    }
    return run_many(std::move(shards), [&](auto&& engine_of) -> Result<bool> {
      bool changed = false;
      std::optional<Errc> error;
      const auto note = [&](const Result<bool>& r) {
        if (r.ok()) {
          changed = *r || changed;
        } else if (!error) {
          error = r.error();
        }
      };
      for (std::size_t i = 0; i < n; ++i) {
        const change_type& c = recs[i];
        if (c.op == ChangeOp::flushall) {
          for (std::size_t j = 0; j < shards_n_; ++j) note(shards_[j].engine->apply(c));
        } else if (c.op == ChangeOp::rename && &engine_of(*c.key) != &engine_of(*c.to)) {
          auto t = engine_of(*c.key).rename_out(*c.key, /*all_valid=*/true);
          if (!t) continue;
          (void)engine_of(*c.to).rename_in(*c.to, std::move(*t), /*nx=*/false, /*all_valid=*/true);
          changed = true;
        } else if (c.key != nullptr) {
          note(engine_of(*c.key).apply(c));
        }
      }
      if (error) return *error;
      return changed;
    });
  }
  // Runs fn(engine_of) with every shard of `shards` locked (deduplicated, in ascending order);
  // engine_of(key) is the key's shard's engine. Then delivers each shard's events.
  struct EngineOf {
    const BasicConcurrentStore* store;
    template <class KK>
    engine_type& operator()(const KK& key) const {
      return *store->shard_of(key).engine;
    }
  };
  // `unit` (as_one_unit()): the records go out framed even when there is one. Inside
  // as_one_unit() (this thread holds every lock) fn runs at once, its events left for the
  // outer call to deliver.
  template <class F>
  auto run_many(std::vector<Shard*> shards, F&& fn, bool unit = false) -> decltype(fn(std::declval<EngineOf&>())) {
    EngineOf engine_of{this};
    if (owns_all()) return fn(engine_of);
    std::sort(shards.begin(), shards.end());
    shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
    struct Out {
      Shard* shard;
      std::vector<Owned> batch;
      std::uint64_t ticket = 0;
      bool deliver = false;
    };
    std::vector<Out> outs(shards.size());
    using R = decltype(fn(engine_of));
    std::optional<R> result;
    std::exception_ptr error;
    {
      for (Shard* sh : shards) sh->lock.lock();
      FeedGroup group;
      group.framed = unit;
      if (feed_on_) {
        for (Shard* sh : shards) sh->group = &group;
      }
      try {
        result.emplace(fn(engine_of));
      } catch (...) {
        error = std::current_exception();
      }
      if (feed_on_) {
        for (Shard* sh : shards) sh->group = nullptr;
        send_unit(group.records, group.framed, *shards.front());
      }
      for (std::size_t i = 0; i < shards.size(); ++i) {
        outs[i].shard = shards[i];
        if (!shards[i]->outbox.empty()) take(*shards[i], outs[i].batch, outs[i].ticket, outs[i].deliver);
      }
      for (auto it = shards.rbegin(); it != shards.rend(); ++it) (*it)->lock.unlock();
    }
    if (acknowledging_) acknowledge();
    for (Out& o : outs) {
      if (!o.deliver) continue;
      std::exception_ptr e = release(*o.shard, o.batch, o.ticket);
      if (e && !error) error = e;
    }
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }

  // Runs fn(engine) under the key's shard lock, then delivers the events it raised. The key
  // is hashed once: the hash that picks the shard is the shard's (ShardHash's hint).
  template <class KK, class F>
  decltype(auto) with(const KK& key, F&& fn) {
    const auto raw = static_cast<std::uint64_t>(hash_(key));
    return run(shards_[shard_index(raw)], [&](engine_type& e) -> decltype(auto) {
      e.hint_hash(key, raw);
      const HintScope scope(e);
      return fn(e);
    });
  }
  // Clears a shard's hash hint when the call that set it ends, however it ends.
  struct HintScope {
    const engine_type& e;
    explicit HintScope(const engine_type& en) noexcept : e(en) {}
    HintScope(const HintScope&) = delete;
    HintScope& operator=(const HintScope&) = delete;
    ~HintScope() { e.clear_hash_hint(); }
  };
  template <class F>
  auto run(Shard& sh, F&& fn) -> decltype(fn(*sh.engine)) {
    using R = decltype(fn(*sh.engine));
    if (owns_all()) return fn(*sh.engine);  // inside as_one_unit(): its events go out at its end
    sh.lock.lock();
    Held held{sh.lock};
    R out = [&]() -> R {
      try {
        return fn(*sh.engine);
      } catch (...) {
        // A listener does not run here (the shard's listener only queues), so this is the
        // operation's own exception (a throwing copy, bad_alloc): its events still go out,
        // after the lock is released (a listener may call the store).
        (void)deliver_outbox(sh, held);
        throw;
      }
    }();
    if (EXPIRING_UNLIKELY(!sh.outbox.empty())) {  // (only with a listener)
      if (std::exception_ptr e = deliver_outbox(sh, held)) std::rethrow_exception(e);
      return out;
    }
    held.unlock();
    if (EXPIRING_UNLIKELY(acknowledging_)) acknowledge();
    return out;
  }
  // Unlocks a shard's lock once: at unlock(), or when the scope is left by an exception.
  struct Held {
    detail::ShardLock& lock;
    bool on = true;
    void unlock() noexcept {
      if (on) lock.unlock();
      on = false;
    }
    ~Held() { unlock(); }
  };
  // Under sh.lock (held): takes the operation's events, unlocks, and delivers them; returns
  // the first exception a listener threw.
  EXPIRING_NOINLINE std::exception_ptr deliver_outbox(Shard& sh, Held& held) {
    std::vector<Owned> batch;
    std::uint64_t ticket = 0;
    bool deliver = false;
    if (!sh.outbox.empty()) take(sh, batch, ticket, deliver);
    held.unlock();
    if (acknowledging_) acknowledge();
    return deliver ? release(sh, batch, ticket) : std::exception_ptr();
  }
  // Under sh.lock: moves the operation's events out, into the running delivery of this thread
  // if it is delivering this shard's events, else into `batch` with a ticket.
  void take(Shard& sh, std::vector<Owned>& batch, std::uint64_t& ticket, bool& deliver) {
    Delivery* d = current_delivery();
    if (d != nullptr && d->shard == &sh) {
      for (Owned& o : sh.outbox) d->queue->push_back(std::move(o));
      sh.outbox.clear();
      return;
    }
    batch.swap(sh.outbox);
    ticket = sh.next_ticket++;
    if (d != nullptr) {
      deferred().push_back(Deferred{this, &sh, std::move(batch), ticket});
      batch.clear();
      return;
    }
    deliver = true;
  }
  // Outside sh.lock: waits for this ticket's turn, delivers every event, passes the turn on;
  // returns the first exception a listener threw (the caller rethrows it).
  [[nodiscard]] std::exception_ptr release(Shard& sh, std::vector<Owned>& batch, std::uint64_t ticket) {
    {
      std::unique_lock<std::mutex> g(sh.deliver_mu);
      sh.deliver_cv.wait(g, [&] { return sh.serving == ticket; });
    }
    Delivery self{&sh, &batch};
    Delivery* outer = current_delivery();
    current_delivery() = &self;
    std::exception_ptr first;
    for (std::size_t i = 0; i < batch.size(); ++i) {  // nested operations may append
      Owned ev = std::move(batch[i]);
      try {
        if (listener_) listener_(event_type{ev.cause, ev.key, ev.value ? &*ev.value : nullptr});
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    current_delivery() = outer;
    {
      std::lock_guard<std::mutex> g(sh.deliver_mu);
      ++sh.serving;
    }
    sh.deliver_cv.notify_all();
    if (outer == nullptr && !draining()) {  // holding no turn now: the deferred ones, first taken first
      draining() = true;
      std::deque<Deferred>& q = deferred();
      while (!q.empty()) {
        Deferred job = std::move(q.front());
        q.pop_front();
        std::exception_ptr e = job.owner->release(*job.shard, job.batch, job.ticket);  // may defer more
        if (e && !first) first = e;
      }
      draining() = false;
    }
    return first;
  }

  static constexpr bool kOptimistic = engine_type::kRacyReads;
  static constexpr int kReadAttempts = 8;
  static constexpr std::uint64_t kLruSample = 8;

  Hash hash_;
  KeyEqual eq_;
  Options options_;
  bool optimistic_;
  std::mutex apply_mu_;  // apply(): one caller at a time, and the unit it holds
  // The sequencer: the feed, its last number, and what a call does once its locks are gone.
  // Its lock is held for one hand-over (tens of ns): a spinlock that yields, as a shard's,
  // since a futex round trip per contended record cost more than the records themselves.
  // The lock and the counter, written by every record, have a cache line to themselves; what
  // every call reads and only set_change_feed()/set_change_log() write has the next.
  alignas(64) mutable detail::ShardLock seq_mu_;
  std::atomic<std::uint64_t> seq_{0};  // the last number taken (a feed's, under seq_mu_)
  alignas(64) change_feed_type feed_;
  change_encoder_type encode_;  // set_change_log(): encode_ into the shards' buffers instead of feed_
  std::size_t log_shard_limit_ = std::size_t{1} << 16;
  std::uint64_t log_drained_ = 0;  // drain_log(): the last number drained
  std::atomic<bool> log_due_{false};
  std::function<void(std::uint64_t)> on_return_;
  bool feed_on_ = false;  // a feed or a log is set
  bool encoded_ = false;  // ... a log
  bool acknowledging_ = false;
  // The thread inside as_one_unit(), holding every shard's lock (none: std::thread::id{}).
  std::atomic<std::thread::id> exclusive_{};
  alignas(64) bool in_unit_ = false;  // apply()'s (a line apart from what every call reads)
  std::vector<ChangeRecord<K, V>> unit_;
  std::size_t shards_n_ = 1;
  int shift_ = 63;  // 64 - log2(shards_n_), and 63 for one shard
  detail::Readers readers_;  // before shards_: the shards' tables call it as they are freed
  std::unique_ptr<Shard[]> shards_;
  listener_type listener_;
  // get_or_load()'s loads run outside the engines: their time and failures are counted here.
  std::atomic<std::uint64_t> load_ns_{0};
  std::atomic<std::uint64_t> load_failed_{0};
};

// drain_log(): each shard's units numbered up to `upto` are taken out under its lock (its units
// are in increasing order, and a unit is encoded and numbered in one hold of the lock, so all
// of them up to `upto` are there), then merged by number.
template <class K, class V, class H, class E, class C, class P>
std::pair<std::size_t, std::uint64_t> BasicConcurrentStore<K, V, H, E, C, P>::drain_log(std::string& out) {
  const std::uint64_t upto = seq_.load(std::memory_order_acquire);
  struct Run {
    Shard* shard;
    std::string bytes;
    std::vector<LogMark> marks;
    std::size_t next = 0;
  };
  std::vector<Run> runs;
  for (std::size_t i = 0; i < shards_n_; ++i) {
    Shard& sh = shards_[i];
    const Guard g(*this, sh);
    std::size_t k = 0;
    while (k < sh.log_marks.size() && sh.log_marks[k].first <= upto) ++k;
    if (k == 0) continue;
    Run r;
    r.shard = &sh;
    if (k == sh.log_marks.size()) {
      r.bytes.swap(sh.log_bytes);
      r.marks.swap(sh.log_marks);
      sh.log_bytes.swap(sh.log_spare);
      sh.log_marks.swap(sh.log_marks_spare);
    } else {  // units numbered after `upto` stay for the next drain
      const std::size_t cut = sh.log_marks[k - 1].end;
      r.bytes.assign(sh.log_bytes, 0, cut);
      sh.log_bytes.erase(0, cut);
      r.marks.assign(sh.log_marks.begin(), sh.log_marks.begin() + static_cast<std::ptrdiff_t>(k));
      sh.log_marks.erase(sh.log_marks.begin(), sh.log_marks.begin() + static_cast<std::ptrdiff_t>(k));
      for (LogMark& m : sh.log_marks) m.end -= cut;
    }
    runs.push_back(std::move(r));
  }
  // The units' numbers are dense: every number in (log_drained_, upto] belongs to exactly
  // one unit taken now, so each unit's place follows from its first number (a table of the
  // numbers, filled run by run, then read in order: no comparison, no heap).
  const std::uint64_t base = log_drained_;
  log_drained_ = upto;
  std::size_t records = 0;
  std::size_t total = out.size();
  for (const Run& r : runs) total += r.bytes.size();
  out.reserve(total);
  std::vector<std::uint32_t> starts(static_cast<std::size_t>(upto - base), 0);  // run + 1 of the unit starting there
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (const LogMark& m : runs[r].marks) starts[static_cast<std::size_t>(m.first - base - 1)] = static_cast<std::uint32_t>(r + 1);
  }
  for (const std::uint32_t r : starts) {
    if (r == 0) continue;  // a number inside a unit
    Run& run = runs[r - 1];
    const LogMark& m = run.marks[run.next];
    const std::size_t begin = run.next == 0 ? 0 : run.marks[run.next - 1].end;
    out.append(run.bytes, begin, m.end - begin);
    records += m.records;
    ++run.next;
  }
  for (Run& run : runs) {  // the buffers go back to their shards, emptied, for their room
    run.bytes.clear();
    run.marks.clear();
    const Guard g(*this, *run.shard);
    if (run.bytes.capacity() > run.shard->log_spare.capacity()) run.shard->log_spare.swap(run.bytes);
    if (run.marks.capacity() > run.shard->log_marks_spare.capacity()) run.shard->log_marks_spare.swap(run.marks);
  }
  return {records, upto};
}

// Single-flight get-or-load: the first caller for a key registers a Flight under the shard's
// lock and loads outside it; later callers find the Flight and wait for it.
template <class K, class V, class H, class E, class C, class P>
template <class KK, class F>
Result<std::optional<V>> BasicConcurrentStore<K, V, H, E, C, P>::get_or_load(const KK& key, F&& loader, SetExpiry ttl) {
  Shard& sh = shard_of(key);
  std::shared_ptr<Flight> flight;
  bool leader = false;
  // 1. A live value (not stale) is returned; else join or start the key's flight.
  std::optional<Result<std::optional<V>>> early = run(sh, [&](engine_type& e) -> std::optional<Result<std::optional<V>>> {
    // Validate first, as the engine's get_or_load() does, so that a bad TTL never costs a load.
    if (const std::optional<Errc> bad = invalid_ttl(ttl, e.now_ms())) return Result<std::optional<V>>(*bad);
    const typename engine_type::LookupResult r = e.lookup(key);
    if (r.value != nullptr && r.freshness != Freshness::stale) return Result<std::optional<V>>(std::optional<V>(*r.value));
    K k(key);
    auto it = sh.flights.find(k);
    if (it != sh.flights.end()) {
      flight = it->second;
    } else {
      flight = std::make_shared<Flight>();
      sh.flights.emplace(std::move(k), flight);
      leader = true;
    }
    return std::nullopt;
  });
  if (early) return std::move(*early);
  if (!leader) {
    std::unique_lock<std::mutex> g(flight->mu);
    flight->done_cv.wait(g, [&] { return flight->done; });
    if (flight->error) std::rethrow_exception(flight->error);
    return *flight->result;
  }
  // 2. The leader loads outside every lock, stores, and wakes the waiters.
  auto finish = [&](std::optional<Result<std::optional<V>>> result, std::exception_ptr error) {
    run(sh, [&](engine_type&) { return sh.flights.erase(K(key)); });
    {
      std::lock_guard<std::mutex> g(flight->mu);
      flight->result = std::move(result);
      flight->error = error;
      flight->done = true;
    }
    flight->done_cv.notify_all();
  };
  try {
    std::optional<V> loaded;
    const auto started = std::chrono::steady_clock::now();
    auto timed = [&] {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
      load_ns_.fetch_add(static_cast<std::uint64_t>(ns.count() < 0 ? 0 : ns.count()), std::memory_order_relaxed);
    };
    try {
      loaded.emplace(std::forward<F>(loader)());
    } catch (...) {
      timed();
      load_failed_.fetch_add(1, std::memory_order_relaxed);  // the engine never saw this load
      throw;
    }
    timed();  // the engine counts the load's success when it stores the value
    // The engine's get_or_load stores it (validation, jitter, limits), its "loader" handing
    // over the value loaded outside the lock; a value another thread set meanwhile wins.
    Result<std::optional<V>> r = run(sh, [&](engine_type& e) -> Result<std::optional<V>> {
      Result<const V*> p = e.get_or_load(key, [&]() -> V { return std::move(*loaded); }, ttl);
      if (!p.ok()) return p.error();
      return *p == nullptr ? std::optional<V>() : std::optional<V>(**p);
    });
    finish(r, nullptr);
    return r;
  } catch (...) {
    finish(std::nullopt, std::current_exception());
    throw;
  }
}

// A thread that runs a store's tick() hz times a second until it is stopped or destroyed.
template <class Store>
class Expirer {
 public:
  // Starts the thread: it calls store.tick() at once, then again 1/hz seconds after each call
  // returns (hz clamped to [1, 500], Redis's range for its hz). `store` must outlive the Expirer.
  explicit Expirer(Store& store, int hz = 10)
      : store_(store), period_(std::chrono::microseconds(1000000 / std::clamp(hz, 1, 500))) {
    thread_ = detail::quiet_thread([this] { loop(); });
  }

  Expirer(const Expirer&) = delete;
  Expirer& operator=(const Expirer&) = delete;
  ~Expirer() { stop(); }

  // Stops the thread and joins it (idempotent; may be called from several threads).
  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    std::lock_guard<std::mutex> j(join_mu_);
    if (thread_.joinable()) thread_.join();
  }
  // The number of tick() calls the thread has made so far.
  std::uint64_t ticks() const noexcept { return ticks_.load(std::memory_order_relaxed); }

 private:
  void loop() {
    std::unique_lock<std::mutex> g(mu_);
    while (!stop_) {
      g.unlock();
      (void)store_.tick();
      ticks_.fetch_add(1, std::memory_order_relaxed);
      g.lock();
      cv_.wait_for(g, period_, [&] { return stop_; });
    }
  }

  Store& store_;
  std::chrono::microseconds period_;
  std::mutex mu_;
  std::mutex join_mu_;  // one joiner at a time
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<std::uint64_t> ticks_{0};
  std::thread thread_;
};

}  // namespace expiring
