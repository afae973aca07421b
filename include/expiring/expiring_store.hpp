// expiring/expiring_store.hpp: ExpiringStore, Redis's key-expiry semantics in-process.
//
// Overview
// --------
// ExpiringStore<K, V> is a hash map whose keys can carry a deadline, with exactly the
// semantics of Redis 7's TTL commands (see docs/semantics.md). The contract in one paragraph:
//
//   A key whose deadline has passed (`now > deadline`) is invisible at once: every read,
//   write and query treats it as missing. It is deleted lazily, by the first operation that
//   touches it, and in bulk only when you call tick(), which runs Redis's probabilistic
//   active-expire cycle within a time budget. The store reads the clock at most once per
//   operation, and between your calls nothing happens to the keyspace. It starts no thread,
//   unless Options::lazyfree_background asks for one (a reclaimer that only destroys values
//   already removed; see options.hpp).
//
// A store of hashes (V = FieldMap<F, W>: each field may carry its own deadline, as Redis 7.4)
// also has Redis's hash commands as members, hset() ... hexpire() ... hpersist(): they are
// documented in hash_fields.hpp, the base class that provides them (opt-in: include it, or
// field_map.hpp).
//
// Each member below is documented with its Redis analogue, what it returns and what it costs.
// "One probe" means one hash-table lookup; all operations are O(1) expected except where
// noted.
//
// Pointer validity (tests/test_pointer_validity.cpp has a case per rule). Entries live inline
// in an open-addressing table (detail/table.hpp) and move only when it is rehashed. A pointer
// from get(), get_many(), getex_ptr(), get_or_load(), lookup() or peek() points at the stored
// value and stays valid
//   * across reads, writes and deletes of other keys, including the lazy reclaiming of other
//     stale keys by any call (erasure moves no entry);
//   * across TTL changes of any key (expire() family, persist(), getex() options, idle TTLs);
//   * across an overwrite or modify() of its own key: the same object then holds the new value
//     (pointers into the value's own heap, such as a std::string's data(), follow V's rules);
// and becomes invalid
//   * when its key is removed: del(), unlink(), getdel(), rename() away, a deadline already
//     past, eviction, or expiry, which happens lazily in the first call that touches the key
//     after its deadline (a get() of the same key included) or in tick();
//   * for every key, at a call that may add a key (the set() family, get_or_load() when it
//     loads, copy(), rename() to an absent key: any of them may grow the table), reserve(),
//     tick() (which may shrink the table after a mass expiry), clear(), and assignment, move or
//     destruction of the store.
// Listeners run inside the call that raised their events, just before it returns: what a
// listener does counts as done by that call (a listener that adds keys while get_many()
// reclaims stale ones invalidates the pointers get_many() returns).
//
// Events: a listener set with set_listener() receives each change with its cause. Events are
// queued while an operation runs and dispatched when the store is consistent again, just
// before the operation returns; a listener may read and write the store (the events that
// causes are dispatched after it returns, in order).
//
// Exceptions from your code (the contract for each callback):
// * A listener that throws: the store is already consistent when listeners run, and every
//   queued event is still delivered (to the same listener, in order); then the first
//   exception propagates out of the operation that raised the events. Later exceptions from
//   the same dispatch are dropped. A listener that removes itself stops the dispatch.
// * A loader (get_or_load) that throws: nothing was stored; the exception propagates.
// * modify()'s function that throws: the value is as fn left it, its weight is recounted
//   and the TTL is kept; the exception propagates.
// * as_one_command()'s function that throws: the writes it made stay; the memory check is
//   back on; the exception propagates.
// * A weigher must not throw: the store weighs entries in the middle of its own updates,
//   where it cannot undo them, so it calls the weigher as noexcept and a throw calls
//   std::terminate (as a throwing destructor would). Report an unweighable value with a
//   weight instead.
// * Keys' and values' copy and move constructors: a throwing copy (set() of an lvalue,
//   copy(), getdel()'s copy for listeners) leaves the store unchanged; moves must be noexcept
//   (a static_assert says so).
//
// Thread safety: none, as for standard containers, with one difference that matters: every
// lookup writes (statistics, the lazy reclaiming of a stale key, LRU/LFU data, an idle TTL), so
// get() is not a read in the thread-safety sense. Concurrent readers need exclusive access
// too: guard a shared store with a std::mutex (a shared_mutex's shared lock is not enough).
// The const members (peek(), size(), keys(), iteration, stats()) may run concurrently with
// each other, not with anything else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "change_feed.hpp"
#include "detail/active_expire.hpp"
#include "detail/arith.hpp"
#include "detail/engine.hpp"
#include "detail/event_queue.hpp"
#include "detail/eviction.hpp"
#include "detail/keyspace.hpp"
#include "detail/lazyfree.hpp"
#include "error.hpp"
#include "events.hpp"
#include "hash.hpp"
#include "api/key_commands.hpp"
#include "detail/hash_value.hpp"
#include "options.hpp"
#include "stats.hpp"

namespace expiring {

// The store. Most code names it through the Store alias below; the full parameter list is for
// a key type with a hash or equality of its own.
template <class K, class V, class Hash = expiring::Hash<K>, class KeyEqual = std::equal_to<>,
          class Clock = TscClock, class ExpiryPolicy = SampledExpiry>
class ExpiringStore;

// expiring::Store<K, V> is ExpiringStore<K, V> with the default hash and equality, the clock
// third and the expiry policy fourth:
//
//   expiring::Store<std::string, Session> sessions;                    // TscClock
//   expiring::ManualClock clock{0};
//   expiring::Store<std::string, Session, expiring::ManualClock> test_store{clock};  // shares `clock`
template <class K, class V, class Clock = TscClock, class ExpiryPolicy = SampledExpiry>
using Store = ExpiringStore<K, V, expiring::Hash<K>, std::equal_to<>, Clock, ExpiryPolicy>;

// What the function of compute() decides for its key (see ExpiringStore::compute()).
template <class V>
class Computed {
 public:
  // The decision, as keep(), remove(), store() and retime() make it.
  enum class Op : std::uint8_t { keep, remove, store, retime };
  // Leave the key as it is (a missing key stays missing).
  static Computed keep() { return Computed(Op::keep); }
  // Remove the key (cause `del`), as DEL.
  static Computed remove() { return Computed(Op::remove); }
  // Write `value` with `ttl` as set(key, value, ttl) would: KeepTtl{} (the default) keeps the
  // TTL of a live key, SetExpiry{} removes it, Px/PxAt/a duration/a time point sets one.
  static Computed store(V value, SetExpiry ttl = KeepTtl{}) {
    Computed c(Op::store);
    c.value_.emplace(std::move(value));
    c.ttl_ = ttl;
    return c;
  }
  // Keep the value, change only its TTL: Px/PxAt/a duration/a time point sets one (a deadline
  // at or before now deletes the key, as PEXPIREAT does), SetExpiry{} removes it (PERSIST).
  static Computed retime(SetExpiry ttl) {
    Computed c(Op::retime);
    c.ttl_ = ttl;
    return c;
  }
  // What compute() reads back: the decision, the value to write (store() only: compute() moves
  // it out), and the TTL argument (store() and retime()).
  Op op() const noexcept { return op_; }
  std::optional<V>& value() noexcept { return value_; }
  SetExpiry ttl() const noexcept { return ttl_; }

 private:
  explicit Computed(Op op) : op_(op) {}
  Op op_;
  std::optional<V> value_;
  SetExpiry ttl_{};
};

namespace detail {
template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};
// A clock: `now_ms()` callable on a const object, giving something convertible to int64.
template <class C, class = void>
struct is_clock : std::false_type {};
template <class C>
struct is_clock<C, std::void_t<decltype(std::declval<const std::remove_reference_t<C>&>().now_ms())>>
    : std::is_convertible<decltype(std::declval<const std::remove_reference_t<C>&>().now_ms()), std::int64_t> {};
template <class H, class K, class = void>
struct hashes : std::false_type {};
template <class H, class K>
struct hashes<H, K, std::enable_if_t<is_complete<H>::value>>
    : std::is_invocable_r<std::size_t, const H&, const K&> {};
}  // namespace detail

template <class K, class V, class Hash, class KeyEqual, class Clock, class ExpiryPolicy>
class ExpiringStore : public detail::HashFieldOps<detail::Engine<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>, V>,
                      public api::KeyCommands<ExpiringStore<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>, V> {
  static_assert(!detail::is_clock<Hash>::value,
                "expiring::ExpiringStore: the third template argument is the key hash, and the clock is the fifth; "
                "write expiring::Store<K, V, Clock> (the clock third), or ExpiringStore<K, V, Hash, KeyEqual, Clock>");
  static_assert(detail::is_complete<Hash>::value,
                "expiring::ExpiringStore: there is no hash for this key type (expiring::Hash covers integers, enums "
                "and strings); pass a hash functor as the third argument: ExpiringStore<K, V, MyHash, std::equal_to<>, "
                "Clock> (keys may be chosen by an attacker: see hash.hpp for a keyed hash)");
  static_assert(!detail::is_complete<Hash>::value || detail::is_clock<Hash>::value || detail::hashes<Hash, K>::value,
                "expiring::ExpiringStore: the hash must be callable as hash(const K&) and return std::size_t");
  static_assert(std::is_invocable_r_v<bool, const KeyEqual&, const K&, const K&>,
                "expiring::ExpiringStore: KeyEqual must be callable as eq(const K&, const K&) -> bool");
  static_assert(detail::is_clock<Clock>::value,
                "expiring::ExpiringStore: the clock must have `std::int64_t now_ms() const` (Unix milliseconds); "
                "see clock.hpp for TscClock, SystemClock, CachedClock and ManualClock");
  using engine_type = detail::Engine<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>;
  using base_type = detail::HashFieldOps<engine_type, V>;
  using commands_type = api::KeyCommands<ExpiringStore, V>;
  using keyspace_type = typename engine_type::keyspace_type;
  using entry_type = typename engine_type::entry_type;
  using slot_iterator = typename engine_type::slot_iterator;
  static constexpr bool kWheel = engine_type::kWheel;
  static constexpr bool kHashes = engine_type::kHashes;

 public:
  // The template's key, value and clock types; a key event (events.hpp) and the listener
  // set_listener() takes; a change record (change_feed.hpp) and the feed set_change_feed()
  // takes; the weigher set_weigher() takes (an entry's weight against Options::maxmemory); how
  // volatile keys are indexed for tick() (SampledExpiry or TimeOrderedExpiry, options.hpp).
  using key_type = K;
  using mapped_type = V;
  using clock_type = Clock;
  using event_type = KeyEvent<K, V>;
  using listener_type = std::function<void(const event_type&)>;
  using change_type = Change<K, V>;
  using change_feed_type = std::function<void(const change_type&)>;
  using weigher_type = std::function<std::size_t(const K&, const V&)>;
  using expiry_policy = ExpiryPolicy;

  // TTL replies, as Redis: -2 = no such key, -1 = no TTL.
  static constexpr std::int64_t kNoKey = -2;
  static constexpr std::int64_t kNoTtl = -1;

  // ==== Construction ======================================================================

  // A store reading `clk` (held by value; pass `ManualClock&` to share one). Throws
  // std::invalid_argument, naming it, for an option outside the range options.hpp gives it.
  explicit ExpiringStore(Clock clk, Options options, Hash hash = Hash{}, KeyEqual eq = KeyEqual{})
      : base_type(std::forward<Clock>(clk), std::move(options), std::move(hash), std::move(eq)) {
    if constexpr (kHashes) this->init_field_hash(options_.seed);
  }
  // The same with default Options. (A separate constructor: a store built without options
  // brings in the code of eviction, access tracking and lazy free only once a setter turns
  // one of them on.)
  explicit ExpiringStore(Clock clk) : base_type(std::forward<Clock>(clk), Hash{}, KeyEqual{}) {
    if constexpr (kHashes) this->init_field_hash(options_.seed);
  }
  // A store reading a default-constructed Clock (not a reference), with default or given Options.
  template <class C = Clock, std::enable_if_t<std::is_default_constructible_v<C>, int> = 0>
  ExpiringStore() : ExpiringStore(Clock{}) {}
  template <class C = Clock, std::enable_if_t<std::is_default_constructible_v<C>, int> = 0>
  explicit ExpiringStore(Options options) : ExpiringStore(Clock{}, std::move(options)) {}

  // ==== Reading ===========================================================================
  // Reads count keyspace_hits / keyspace_misses, as Redis does, and reclaim a stale key they
  // find (cause `expired`). A key is looked up as any type the hash and equality accept
  // (std::string_view for std::string keys with the default transparent functors).

  // GET. The value, or nullptr when the key is missing or expired. One probe. The clock is read
  // only when a deadline must be compared (D7: at most once): a miss and a hit on a key
  // without TTL read no clock.
  template <class KK>
  [[nodiscard]] const V* get(const KK& key) {
    const auto& lk = lookup_key(key);
    const slot_iterator it = ks_.find(lk, ks_.hash_of(lk));
    if (it != ks_.end()) {
      const entry_type& e = ks_.entry(it);
      if (e.deadline == detail::kNoDeadline && !access_.read_hook()) {  // alive at any time
        ++stats_.keyspace_hits;
        return &e.value;
      }
      const std::int64_t now = now_ms();
      if (!e.is_stale(now)) {
        ++stats_.keyspace_hits;
        if (EXPIRING_UNLIKELY(access_.read_hook())) return &ks_.entry(touch_(*this, it, now, detail::Access::read)).value;
        return &e.value;
      }
      if (EXPIRING_UNLIKELY(!this->replica().reclaims_on_read())) {  // missing, left in place
        ++stats_.keyspace_misses;
        return nullptr;
      }
      expire_entry(it, now);
    }
    ++stats_.keyspace_misses;
    flush();
    return nullptr;
  }

  // MGET. For each key of `keys` (any range of keys or lookup types), out[i] = its value or
  // nullptr, as get(keys[i]) would give, all against one clock reading; returns the number of
  // hits. Counts a hit or miss per key and reclaims the stale keys it finds. Looks keys up in
  // batches, prefetching each batch's slots before it reads them, so that at large sizes the
  // cache misses of a batch overlap. `out` must have room for size(keys) pointers. Every
  // pointer stays valid until the next call that may move entries (see "Pointer validity").
  // get_many(keys, std::optional<V>* out), by copy, is every store's (api/key_commands.hpp).
  using commands_type::get_many;
  template <class Keys>
  std::size_t get_many(const Keys& keys, const V** out);

  // What lookup() returns.
  struct LookupResult {
    const V* value;        // the live value (valid as get()'s), or nullptr
    Freshness freshness;   // missing, fresh, refresh (due for a refresh-ahead) or stale
    std::int64_t pttl;     // PTTL: the remaining ms; kNoKey (-2) missing, kNoTtl (-1) no TTL
  };
  // GET with freshness (soft TTL, see Options::stale_window_ms): the value (nullptr when
  // missing or expired), whether it is fresh, due for a refresh-ahead, or stale (past its
  // soft deadline: still served), and its PTTL (-2 missing, -1 no TTL). Counts a hit or miss
  // and reclaims a stale key as get() does. One probe.
  template <class KK>
  [[nodiscard]] LookupResult lookup(const KK& key) {
    const std::int64_t now = now_ms();
    const auto& lk = lookup_key(key);
    auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::read);
    LookupResult out{nullptr, Freshness::missing, kNoKey};
    if (it != ks_.end()) {
      const entry_type& e = ks_.entry(it);
      out.value = &e.value;
      out.freshness = freshness_of(e, now);
      out.pttl = ks_.is_volatile(e) ? detail::saturating_sub(e.deadline, now) : kNoTtl;
    }
    flush();
    return out;
  }

  // Get-or-load for single-threaded use (a read, then maybe a write). Returns the live value
  // when there is one that is not stale (fresh or in its refresh-ahead window: loader not
  // called). Otherwise calls loader() (which returns something V is constructible from) and
  // stores the result as set(key, result, ttl) would, jitter included, then returns a
  // pointer to the stored value. nullptr only when `ttl` is an absolute deadline already
  // past (nothing is stored, as SET PXAT <past> stores nothing; a live key is deleted).
  // Errors, checked before anything is read (loader not called, nothing changes):
  //   Errc::invalid_expire_time as set(); Errc::out_of_range for an invalid per-call Jitter;
  //   and, after the read, Errc::out_of_memory when it would load and the memory limit
  //   cannot be met, or the entry bound is reached with nothing to evict (see "Memory
  //   limit"; the loader is not called).
  // If loader throws, the exception propagates and the store is unchanged (a stale-flagged
  // value stays; only the read's own effects, stats and lazy reclaiming, happened).
  // The loader may use the store; the write reads the clock again after it returns, so the
  // TTL counts from when the value is stored. The pointer is valid as get()'s.
  template <class KK, class F>
  Result<const V*> get_or_load(const KK& key, F&& loader, SetExpiry ttl = {});

  // EXISTS (one key): whether the key is live. Counts hits/misses like Redis.
  template <class KK>
  [[nodiscard]] bool exists(const KK& key) {
    return read_probe(key, detail::Touch::no);
  }

  // TOUCH (one key): whether the key is live; updates its LRU/LFU access data (which
  // exists() and the TTL queries do not, as Redis's LOOKUP_NOTOUCH).
  template <class KK>
  bool touch(const KK& key) {
    return read_probe(key, detail::Touch::yes);
  }

  // TTL: remaining seconds rounded half up; -2 missing, -1 no TTL; 0 at the deadline itself.
  template <class KK>
  [[nodiscard]] std::int64_t ttl(const KK& key) {
    return ttl_query(key, detail::TimeBase::relative, detail::TimeUnit::seconds);
  }
  // PTTL: remaining milliseconds; -2 missing, -1 no TTL.
  template <class KK>
  [[nodiscard]] std::int64_t pttl(const KK& key) {
    return ttl_query(key, detail::TimeBase::relative, detail::TimeUnit::ms);
  }
  // EXPIRETIME: the absolute deadline in Unix seconds, rounded half up; -2 / -1 as TTL.
  template <class KK>
  [[nodiscard]] std::int64_t expiretime(const KK& key) {
    return ttl_query(key, detail::TimeBase::absolute, detail::TimeUnit::seconds);
  }
  // PEXPIRETIME: the absolute deadline in Unix milliseconds; -2 / -1 as TTL.
  template <class KK>
  [[nodiscard]] std::int64_t pexpiretime(const KK& key) {
    return ttl_query(key, detail::TimeBase::absolute, detail::TimeUnit::ms);
  }

  // ==== Writing ===========================================================================

  // SET key value [NX|XX] [EX|PX|EXAT|PXAT|KEEPTTL].
  // Without an expiry argument the key's TTL is removed, as Redis's SET does; KeepTtl keeps
  // the TTL of a live key. Returns true when the value was stored (Redis "OK"), false when
  // NX/XX refused it (Redis nil). With ExAt/PxAt at or before now (semantics.md D4) an existing key
  // is deleted (cause `del`), nothing is stored, and the result is true.
  // Errors (nothing changes): Errc::invalid_expire_time when an EX/PX/EXAT/PXAT value is not
  // positive or its absolute deadline overflows int64; Errc::out_of_memory when a memory limit
  // is set and the new entry's weight does not fit under it after what the policy may evict
  // (see "Memory limit").
  // Cost: one probe (two with XX or a past deadline). Events: `set`, then `expire` if a TTL
  // was given.
  template <class KK, class VV>
  EXPIRING_INLINE Result<bool> set(KK&& key, VV&& value, SetExpiry expiry = {}, SetCond cond = SetCond::Always) {
    const std::int64_t now = now_ms();
    if (cond == SetCond::Always && set_live_plain(key, value, expiry.spec(), now)) return true;
    Result<bool> r = write(std::forward<KK>(key), std::forward<VV>(value), expiry.spec(), cond, now, nullptr);
    flush();
    return r;
  }
  // set(key, value, cond), setnx(), setex(), psetex(), getset(): api/key_commands.hpp.
  using commands_type::set;

  // SET ... GET: as set(), but returns the previous live value (nullopt if none), whether or
  // not NX/XX let the write happen. Counts a hit or miss for the read, as Redis does.
  template <class KK, class VV>
  Result<std::optional<V>> set_get(KK&& key, VV&& value, SetExpiry expiry = {}, SetCond cond = SetCond::Always) {
    const std::int64_t now = now_ms();
    std::optional<V> old;
    Result<bool> r = write(std::forward<KK>(key), std::forward<VV>(value), expiry.spec(), cond, now, &old);
    flush();
    if (!r.ok()) return r.error();
    return old;
  }

  // GETEX key [EX|PX|EXAT|PXAT|PERSIST]: returns a copy of the live value (nullopt if
  // missing) and then applies the option. A missing key returns nullopt without validating
  // the option, as Redis does. ExAt/PxAt at or before now delete the key after reading it
  // (cause `del`). Errors (value not returned, nothing changes): Errc::invalid_expire_time.
  template <class KK>
  Result<std::optional<V>> getex(const KK& key, GetExExpiry option = {}) {
    const std::int64_t now = now_ms();
    std::optional<V> out;
    Result<void> r = getex_at(key, option.spec(), now, [&](const V& v, bool) { out.emplace(v); });
    flush();
    if (!r.ok()) return r.error();
    return out;
  }

  // GETEX without the copy: the live value's address (nullptr if missing, or deleted by an
  // ExAt/PxAt already past), after applying the option in the same probe. The one-probe way
  // to slide a TTL: `getex_ptr(k, 30min)` reads the session and moves its deadline to now +
  // 30 min. Errors, events and the missing-key rule as getex(); the pointer is valid as
  // get()'s.
  template <class KK>
  Result<const V*> getex_ptr(const KK& key, GetExExpiry option) {
    const std::int64_t now = now_ms();
    const V* out = nullptr;
    Result<void> r = getex_at(key, option.spec(), now, [&](const V& v, bool removed) { out = removed ? nullptr : &v; });
    flush();
    if (!r.ok()) return r.error();
    return out;
  }

  // GETDEL: removes a live key and returns its value (nullopt if missing). Cause `del`.
  template <class KK>
  std::optional<V> getdel(const KK& key);

  // In-place update: calls fn(V&) on the live value and keeps its TTL (semantics.md §2.9:
  // "overwrite clears the TTL, update keeps it"; Redis's APPEND/INCR). Returns false if the key is
  // missing. Cause `update`. fn must not call the store.
  template <class KK, class F>
  bool modify(const KK& key, F&& fn);

  // INCRBY for integer values: adds `delta` to the live value, keeping its TTL (cause
  // `update`), or stores `delta` without TTL if the key is missing (cause `set`); returns the
  // new value. Errc::overflow, and nothing changes, when the sum does not fit V; a missing key
  // that must be added may also be refused with Errc::out_of_memory as set() is.
  template <class KK>
  Result<std::int64_t> incr_by(const KK& key, std::int64_t delta);

  // DEL (one key): true if a live key was removed (cause `del`). A stale key is reclaimed as
  // an expiry (cause `expired`, counted in expired_keys) and not counted: false.
  template <class KK>
  bool del(const KK& key) {
    return write_delete(key, options_.lazyfree_lazy_user_del, ChangeOp::del);
  }
  // UNLINK (one key): as del(), but with lazy free enabled (Options::lazyfree_queue_max) the
  // value is destroyed later, by tick(), as Redis's UNLINK.
  template <class KK>
  bool unlink(const KK& key) {
    return write_delete(key, /*lazy=*/true, ChangeOp::unlink);
  }

  // MSET: stores every (key, value) pair of `pairs` (a range of std::pair-like elements)
  // without TTL, as one command for the memory limit (as_one_command): all or nothing,
  // Errc::out_of_memory when eviction cannot make room first. Events: `set` per pair.
  template <class Pairs>
  Result<void> mset(const Pairs& pairs) {
    const typename detail::ChangeFeed<K, V>::Group unit(notify_.feed());
    return as_one_command([&] {
      for (const auto& kv : pairs) (void)set(kv.first, kv.second);
    });
  }
  // MSETNX: stores every pair only if none of the keys is live; true if it did.
  template <class Pairs>
  Result<bool> msetnx(const Pairs& pairs) {
    for (const auto& kv : pairs) {
      if (peek(kv.first) != nullptr) return false;
    }
    Result<void> r = mset(pairs);
    if (!r.ok()) return r.error();
    return true;
  }
  // DEL k1 k2 ...: the number of live keys removed (a key given twice counts once).
  template <class Keys>
  std::size_t del_many(const Keys& keys) {
    const typename detail::ChangeFeed<K, V>::Group unit(notify_.feed());
    std::size_t n = 0;
    for (const auto& k : keys) n += del(k) ? std::size_t{1} : std::size_t{0};
    return n;
  }

  // ==== TTL ===============================================================================
  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT with NX / XX / GT / LT (semantics.md B §2.1).
  // Returns true when the TTL was set or the key deleted, false when the key is missing or a
  // condition failed (nothing changes). A deadline at or before now deletes the key at once
  // (cause `del`, not counted as an expiry: semantics.md D3). No TTL counts as infinite for GT/LT.
  // Errors, checked before the key is looked up (nothing changes):
  //   Errc::nx_and_xx_gt_lt, Errc::gt_and_lt for invalid flag sets;
  //   Errc::invalid_expire_time when the deadline overflows int64.

  // The overloads (integer seconds or ms, std::chrono durations and time points, flags,
  // jitter) are api/key_commands.hpp's, over this one call:
  template <class KK>
  Result<bool> expire_request(const KK& key, const ExpireRequest& r) {
    return expire_generic(key, r, AnyValue{});
  }

  // PERSIST: removes the TTL of a live key; true if it had one (cause `persist`).
  template <class KK>
  bool persist(const KK& key);

  // ==== Atomic read-modify-write ===========================================================
  // One probe-and-decide per key, with nothing in between: what Redis needs a Lua script or
  // WATCH/MULTI for. In ConcurrentStore the same calls are atomic per key across threads.

  // The lock-lease renewal `if GET(k) == expected then PEXPIREAT(...)`: pexpireat_if_equal()
  // (api/key_commands.hpp), over this one call; one lookup, one clock reading.
  template <class KK, class VV>
  Result<bool> expire_request_if_equal(const KK& key, const VV& expected, const ExpireRequest& r) {
    return expire_generic(key, r, [&](const V& v) { return v == expected; });
  }
  // The lock-lease release `if GET(k) == expected then DEL(k)`: true if it was removed.
  template <class KK, class VV>
  bool del_if_equal(const KK& key, const VV& expected) {
    const std::int64_t now = now_ms();
    const auto& lk = lookup_key(key);
    auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::write);
    const bool equal = it != ks_.end() && ks_.entry(it).value == expected;
    if (equal) remove(it, KeyEventCause::del, options_.lazyfree_lazy_user_del);
    flush();
    return equal;
  }
  // The general form: fn(const V* value, std::int64_t pexpiretime) sees the live value
  // (nullptr if missing) and its absolute deadline (-1 without TTL, -2 missing) and returns a
  // Computed<V>: keep(), remove(), store(value, ttl) or retime(ttl). Returns true when the
  // store changed. Errors as set() for store() (Errc::invalid_expire_time, out_of_memory) and
  // for retime() (Errc::invalid_expire_time); nothing changes then. fn must not call the store.
  template <class KK, class F>
  Result<bool> compute(const KK& key, F&& fn);

  // ==== Keyspace ==========================================================================

  // RENAME src dst: moves src's value and TTL (or lack of one) to dst, replacing dst and its
  // TTL. `rename(k, k)` of a live key changes nothing. Errc::no_such_key if src is missing.
  // Events: `rename_from` (src), `rename_to` (dst).
  template <class K1, class K2>
  Result<void> rename(const K1& src, const K2& dst) {
    const std::int64_t now = now_ms();
    Result<bool> r = rename_at(src, dst, SetCond::Always, now);
    flush();
    if (!r.ok()) return r.error();
    return {};
  }
  // RENAMENX src dst: as rename() but only when dst is absent; false otherwise (also for
  // src == dst). Errc::no_such_key if src is missing.
  template <class K1, class K2>
  Result<bool> renamenx(const K1& src, const K2& dst) {
    const std::int64_t now = now_ms();
    Result<bool> r = rename_at(src, dst, SetCond::NX, now);
    flush();
    return r;
  }

  // DBSIZE: stored keys, including expired ones not yet reclaimed (semantics.md D10). O(1).
  std::size_t size() const noexcept { return ks_.size(); }
  bool empty() const noexcept { return ks_.size() == 0; }
  // Stored keys with a TTL (INFO keyspace `expires=`). O(1).
  std::size_t expires_size() const noexcept { return ks_.expires_size(); }

  // FLUSHDB: removes everything, with no per-key events. Statistics are kept.
  void clear() noexcept {
    if (EXPIRING_UNLIKELY(notify_.recording())) notify_.feed().standalone(change_type{ChangeOp::flushall});
    ks_.clear();
    lazy_.clear();  // FLUSHDB (synchronous): pending lazy-free values go too
    gov_.clear();
    active_.on_clear();
  }

  // Reserves room for n keys.
  void reserve(std::size_t n) { ks_.reserve(n); }

  // KEYS *: copies of the live keys, in storage order. Stale keys are skipped, not deleted
  // (as Redis's KEYS). O(size).
  std::vector<K> keys() const {
    const std::int64_t now = now_ms();
    std::vector<K> out;
    for (const entry_type& e : ks_.entries()) {
      if (!e.is_stale(now)) out.push_back(e.key);
    }
    return out;
  }

  // RANDOMKEY: a random live key (uniform; see Keyspace::random_slot for the one exception),
  // nullopt when there is none. Stale keys it lands on are reclaimed (cause `expired`) and it
  // tries again, as Redis's dbRandomKey.
  // On a replica (Options::replica) stale keys are skipped, not reclaimed; after 100 stale
  // draws in a row it answers the stale key, as Redis's replica does rather than loop.
  std::optional<K> random_key();

  // SCAN: visits up to `count` keys in storage order from `cursor` (0 starts a scan), calls
  // fn(const K&, const V&) for each live one, and returns the cursor to continue with (0 when
  // the scan is complete). Stale keys it visits are reclaimed (cause `expired`), as Redis's
  // SCAN does (on a replica, skipped and left in place). Guarantee, as Redis's: every key present for the whole scan is reported at
  // least once; a key may be reported more than once. Erasure moves no entry, so deletions
  // during a scan change nothing for the other keys; a rehash between two calls (a growth, or
  // tick()'s shrink) reorders the table, and the cursor, which carries a tag of the table's
  // layout, then restarts the scan from the beginning. fn must not call the store. O(count)
  // plus the empty slots skipped.
  template <class F>
  std::uint64_t scan(std::uint64_t cursor, std::size_t count, F&& fn);

  // COPY src dst [REPLACE]: dst gets a copy of src's value and its TTL (or none). Returns
  // false when src is missing, or dst exists and `replace` is false. Errc::same_key when src
  // and dst are the same key, whether or not it exists (Redis: "source and destination
  // objects are the same"). Errc::out_of_memory as set().
  // Event: `copy_to` (dst).
  template <class K1, class K2>
  Result<bool> copy(const K1& src, const K2& dst, bool replace = false) {
    const std::int64_t now = now_ms();
    Result<bool> r = copy_at(src, dst, replace, now);
    flush();
    return r;
  }

  // Bytes held by the store: its tables plus the heap blocks of std::string keys and values
  // (other types count their sizeof only). O(size) for string types, O(1) otherwise.
  std::size_t memory_usage() const noexcept {
    std::size_t bytes = sizeof(*this) + ks_.table_bytes();
    if constexpr (detail::has_heap_bytes<K>::value || detail::has_heap_bytes<V>::value) {
      for (const entry_type& e : ks_.entries()) bytes += detail::heap_bytes(e.key) + detail::heap_bytes(e.value);
    }
    return bytes;
  }

  // Iteration over live entries (a quiet path: no statistics, nothing deleted). The clock is
  // read once, by begin(). Any non-const call invalidates iterators. An EntryView is one live
  // entry, by reference into the store: valid as its iterator.
  struct EntryView {
    const K& key;              // the stored key
    const V& value;            // the stored value
    std::int64_t pexpiretime;  // absolute deadline in Unix ms, or -1 without TTL
  };
  // A forward iterator over the live entries, in storage order: it skips stale ones (without
  // deleting them), against the clock reading begin() took.
  class const_iterator {
   public:
    // The standard member types; `*it` makes an EntryView, so `it->` returns a `pointer`.
    using iterator_category = std::forward_iterator_tag;
    using value_type = EntryView;
    using difference_type = std::ptrdiff_t;
    using reference = EntryView;
    // What `it->` returns: an EntryView held by value, so that `it->key` works.
    struct pointer {
      EntryView view;  // the entry `it` was at
      // The held EntryView's address: `it->key` goes through it.
      const EntryView* operator->() const noexcept { return &view; }
    };

    // A forward iterator's operations: `++` to the next live entry, equal at the same position.
    const_iterator() = default;
    reference operator*() const {
      const entry_type& e = store_->ks_.entry(i_);
      return EntryView{e.key, e.value, store_->ks_.is_volatile(e) ? e.deadline : kNoTtl};
    }
    pointer operator->() const { return pointer{**this}; }
    const_iterator& operator++() {
      ++i_;
      skip_stale();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept { return a.i_ == b.i_; }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) noexcept { return a.i_ != b.i_; }

   private:
    friend class ExpiringStore;
    const_iterator(const ExpiringStore* s, std::uint32_t i, std::int64_t now) : store_(s), i_(i), now_(now) {
      skip_stale();
    }
    void skip_stale() {
      const std::size_t n = store_->ks_.slot_count();
      i_ = static_cast<std::uint32_t>(store_->ks_.next_occupied(i_));
      while (i_ < n && store_->ks_.entry(i_).is_stale(now_)) {
        i_ = static_cast<std::uint32_t>(store_->ks_.next_occupied(i_ + 1));
      }
    }
    const ExpiringStore* store_ = nullptr;
    std::uint32_t i_ = 0;
    std::int64_t now_ = 0;
  };
  // The live entries (begin() reads the clock once for the walk); O(1) a step, plus skips.
  const_iterator begin() const { return const_iterator(this, 0, now_ms()); }
  const_iterator end() const { return const_iterator(this, static_cast<std::uint32_t>(ks_.slot_count()), 0); }

  // ==== Memory limit and eviction (Redis maxmemory) ======================================
  // With Options::maxmemory = N > 0 the store tracks used memory, the sum of its weigher over
  // the entries (O(1) per write). Before each write of the SET family, copy() and the store
  // of get_or_load(), if used memory plus the weight of the entry being written is above N,
  // it evicts keys chosen by the policy until it is not (Redis's performEvictions, run before
  // a command, counts the request that carries the value in used memory: the same rule). If
  // the policy cannot free enough (noeviction; volatile-* with no key with a TTL left), or
  // the entry could not fit even in an empty store (then nothing is evicted), the write
  // returns Errc::out_of_memory and changes nothing else, as Redis's "OOM command not allowed
  // when used memory > 'maxmemory'". So no single write takes used memory above the limit;
  // as_one_command() (MSET) checks once, before its writes, and set_external_memory() lets a
  // server count the requests themselves. Reads, deletes, TTL changes, rename and modify()
  // are never refused. Each evicted key raises `evicted` (with its value) and counts in
  // evicted_keys.
  // LRU and LFU are Redis's approximations: each eviction samples maxmemory_samples keys into
  // a pool of the 16 best candidates and evicts the best one. Access data: 4 bytes per entry
  // (an array beside the entries, allocated only while a limit and an LRU/LFU policy are set;
  // nothing otherwise), updated by reads and writes; exists(), the TTL queries and peek() do
  // not touch it (Redis LOOKUP_NOTOUCH).

  // Used memory: the weigher's sum over the entries plus the external memory below. O(1)
  // with a limit set, O(size) without.
  std::size_t used_memory() const { return (gov_.tracking() ? gov_.used() : weigh_all()) + gov_.external(); }
  // Memory the store does not hold but that counts against its limit, as Redis counts its
  // clients' query and output buffers in used_memory: a server sets it to the bytes of its
  // client buffers before each command, so that one request carrying a large value is refused
  // (noeviction) or makes room (any other policy) before it is stored. Counted by
  // used_memory() and by every limit check; never evicted. 0 by default.
  void set_external_memory(std::size_t bytes) noexcept { gov_.set_external(bytes); }
  std::size_t external_memory() const noexcept { return gov_.external(); }
  // The check Redis runs before every command that may grow memory (performEvictions):
  // if used memory is above the limit, evicts until it is not. Errc::out_of_memory when the
  // policy cannot free enough. The store's own writes run it themselves; call it before a
  // compound write of your own (the command layer does, for Redis's "denyoom" commands).
  Result<void> perform_evictions() {
    const bool ok = make_room(now_ms());
    flush();
    if (!ok) return Errc::out_of_memory;
    return {};
  }
  // Runs fn() as one command for the memory limit, as Redis runs MSET: perform_evictions()
  // once, before; the writes fn makes then neither evict nor are refused (so they are all
  // or nothing), and the next write outside brings memory back under the limit.
  // Errc::out_of_memory, and fn is not called, when eviction cannot free enough.
  template <class F>
  Result<void> as_one_command(F&& fn);
  // CONFIG SET maxmemory (0 = no limit). Turning the limit on counts used memory (O(size)) and
  // resets every key's access data to "now"; then keys are evicted at once while used memory
  // is above the limit, if the policy allows (as Redis does).
  void set_maxmemory(std::size_t bytes) {
    const bool had_access = access_.words();
    options_.maxmemory = bytes;
    update_eviction_flags();  // counts used memory when the limit turns on
    if (access_.words() && !had_access) reset_access(now_ms());
    if (over_limit()) {
      (void)evict_to_limit(now_ms());
      flush();
    }
  }
  // CONFIG SET maxmemory-policy. Changing between the LRU and LFU families resets the access
  // data of every key (O(size)); the candidate pool is emptied.
  void set_maxmemory_policy(EvictionPolicy policy) {
    const bool was_lfu = is_lfu(options_.maxmemory_policy), had_access = access_.words();
    options_.maxmemory_policy = policy;
    update_eviction_flags();
    gov_.forget_candidates();
    if (access_.words() && (!had_access || was_lfu != is_lfu(policy))) reset_access(now_ms());
  }
  // The entry bound (Options::max_entries; 0 = none). Lowering it below size() evicts down to
  // it at once if the policy allows (with noeviction the keys stay, and adding keys is
  // refused until deletes or expiry bring the count under the bound).
  void set_max_entries(std::size_t n) {
    const bool had_access = access_.words();
    options_.max_entries = n;
    update_eviction_flags();
    if (access_.words() && !had_access) reset_access(now_ms());
    if (n != 0 && ks_.size() > n) {
      (void)evict_to_entries(now_ms(), n);
      flush();
    }
  }
  // The idle TTL (Options::expire_after_access; 0 turns it off). Keys keep their deadlines
  // until their next access. Errc::out_of_range (nothing changes) for a negative duration or
  // one beyond the int64 range of ms.
  template <class Rep, class Period>
  Result<void> set_expire_after_access(std::chrono::duration<Rep, Period> idle) noexcept {
    const detail::CheckedMs ms = detail::to_ms(idle);
    // The sign of the duration itself: -1 us rounds up to 0 ms, which would turn the TTL off.
    if (!ms.ok || idle < std::chrono::duration<Rep, Period>::zero()) return Errc::out_of_range;
    options_.expire_after_access = std::chrono::milliseconds(ms.ms);
    install_touch();
    access_.set_idle_ms(ms.ms);
    update_plain_writes();
    return {};
  }

  // CONFIG SET maxmemory-samples (1..64), lfu-log-factor (>= 0), lfu-decay-time (>= 0).
  Result<void> set_maxmemory_samples(int n) noexcept {
    if (n < 1 || n > 64) return Errc::out_of_range;
    options_.maxmemory_samples = n;
    return {};
  }
  Result<void> set_lfu_log_factor(int f) noexcept {
    if (f < 0) return Errc::out_of_range;
    options_.lfu_log_factor = f;
    return {};
  }
  Result<void> set_lfu_decay_time(int minutes) noexcept {
    if (minutes < 0) return Errc::out_of_range;
    options_.lfu_decay_time = minutes;
    return {};
  }
  // The per-entry weigher (an empty function restores the default: sizeof(K) + sizeof(V) +
  // heap bytes of std::string keys and values). It must depend only on the entry's content
  // and must not throw (a throw calls std::terminate; see "Exceptions" at the top).
  // Recounts used memory (O(size)) when a limit is set.
  void set_weigher(weigher_type w) {
    gov_.set_weigher(std::move(w), [this] { return weigh_all(); });
  }
  // OBJECT FREQ: the key's LFU counter (decayed to now, not stored), without touching it;
  // nullopt if the key is missing. Meaningful while an LFU policy and a limit are set.
  template <class KK>
  std::optional<std::uint32_t> object_freq(const KK& key) const {
    const std::int64_t now = now_ms();
    const std::uint32_t i = quiet_index(key, now);
    if (i == detail::kNoPos) return std::nullopt;
    if (!access_.words()) return 0;
    return detail::lfu_decayed(ks_.access(i), detail::lfu_minutes(now), options_.lfu_decay_time);
  }
  // OBJECT IDLETIME: ms since the key's last access (in LRU clock resolution), without
  // touching it; nullopt if missing. Meaningful while an LRU policy and a limit are set.
  template <class KK>
  std::optional<std::int64_t> object_idletime_ms(const KK& key) const {
    const std::int64_t now = now_ms();
    const std::uint32_t i = quiet_index(key, now);
    if (i == detail::kNoPos) return std::nullopt;
    if (!access_.words()) return 0;
    const std::uint64_t idle =
        detail::lru_idle(detail::lru_clock(now, options_.lru_clock_resolution_ms), ks_.access(i) & detail::kLruClockMax);
    return static_cast<std::int64_t>(idle) * options_.lru_clock_resolution_ms;
  }
  // RESTORE's IDLETIME and FREQ (Redis's objectSetLRUOrLFU()): under an LFU policy `freq`
  // (0..255) becomes the key's counter as of now; under another, `idle_seconds` (>= 0; one
  // beyond the LRU clock's range is its longest idle time) makes the key last accessed that
  // long ago, as object_idletime_ms() then reports. The one the policy does not read, and
  // both when the store keeps no access data (no limit, or no LRU/LFU policy), change
  // nothing, as in Redis. Not an access: counts nothing. Returns whether the key exists.
  template <class KK>
  bool set_object_access(const KK& key, std::optional<std::int64_t> idle_seconds, std::optional<std::uint8_t> freq) {
    const std::int64_t now = now_ms();
    const std::uint32_t i = quiet_index(key, now);
    if (i == detail::kNoPos) return false;
    if (!access_.words()) return true;
    if (is_lfu(options_.maxmemory_policy)) {
      if (freq) ks_.access(i) = detail::lfu_pack(detail::lfu_minutes(now), *freq);
    } else if (idle_seconds && *idle_seconds >= 0) {
      const auto res = static_cast<std::uint64_t>(options_.lru_clock_resolution_ms);
      const std::uint64_t cap = detail::kLruClockMax - 1;  // lru_idle()'s largest answer
      const auto secs = static_cast<std::uint64_t>(*idle_seconds);
      const std::uint64_t units = secs > cap * res / 1000 + 1 ? cap : std::min(cap, secs * 1000 / res);
      const std::uint32_t lru_now = detail::lru_clock(now, options_.lru_clock_resolution_ms);
      ks_.access(i) = static_cast<std::uint32_t>(lru_now >= units ? lru_now - units : lru_now + detail::kLruClockMax - units);
    }
    return true;
  }

  // ==== Active expiry =====================================================================

  // One run of Redis's active-expire cycle (semantics.md B §3.3): rounds of keys_per_loop samples
  // taken by a resumable cursor over the expiry table, repeated while more than
  // acceptable_stale% of a round expired, stopping when a full pass completes, and checking
  // the time budget every 16 rounds (slow: slow_time_perc% of 1/hz; fast: fast_duration).
  // A fast cycle runs only if the previous cycle hit its budget or the stale average is at
  // least acceptable_stale% (semantics.md D8: the intended comparison, not Redis's unit defect
  // #15410), and not within 2*fast_duration of the previous fast cycle.
  // With Options::full_pass_ticks = N > 0 a slow tick also visits at least
  // ceil(expires_size / N) positions (semantics.md D9), so due keys never wait more than N ticks.
  // Deletes with the same predicate as reads (now > deadline, semantics.md D2). Cause `expired`.
  // When a tick leaves the tables at most 1/8 full it shrinks them (O(size)) if that fits in
  // the rest of its budget, so that no later write pays for cleaning up after a mass expiry.
  TickReport tick(CycleKind kind = CycleKind::Slow);

  // CONFIG SET hz: clamped to [1, 500], as Redis.
  void set_hz(int hz) noexcept { options_.hz = hz < 1 ? 1 : (hz > 500 ? 500 : hz); }
  // CONFIG SET active-expire-effort: 1..10, else Errc::out_of_range and nothing changes.
  Result<void> set_active_expire_effort(int effort) noexcept {
    if (effort < 1 || effort > 10) return Errc::out_of_range;
    options_.active_expire_effort = effort;
    return {};
  }
  // The store's default TTL jitter; Errc::out_of_range (nothing changes) if invalid.
  Result<void> set_ttl_jitter(Jitter jitter) noexcept {
    if (!jitter.valid()) return Errc::out_of_range;
    options_.ttl_jitter = jitter.kind() == Jitter::Kind::inherit ? Jitter::none() : jitter;
    return {};
  }
  // The soft-TTL windows (Options::stale_window_ms, refresh_window_ms); Errc::out_of_range
  // (nothing changes) if either is negative.
  Result<void> set_soft_ttl(std::int64_t stale_window_ms, std::int64_t refresh_window_ms) noexcept {
    if (stale_window_ms < 0 || refresh_window_ms < 0) return Errc::out_of_range;
    options_.stale_window_ms = stale_window_ms;
    options_.refresh_window_ms = refresh_window_ms;
    return {};
  }
  // The same in std::chrono durations (rounded up to ms; out_of_range if negative or too big).
  template <class R1, class P1, class R2, class P2>
  Result<void> set_soft_ttl(std::chrono::duration<R1, P1> stale_window, std::chrono::duration<R2, P2> refresh_window) noexcept {
    const detail::CheckedMs a = detail::to_ms(stale_window), b = detail::to_ms(refresh_window);
    // Negative is judged on the durations themselves (-1 us rounds up to 0 ms).
    if (!a.ok || !b.ok || stale_window < std::chrono::duration<R1, P1>::zero() ||
        refresh_window < std::chrono::duration<R2, P2>::zero()) {
      return Errc::out_of_range;
    }
    return set_soft_ttl(a.ms, b.ms);
  }
  // DEBUG SET-ACTIVE-EXPIRE 0|1.
  void set_active_expire_enabled(bool on) noexcept { options_.active_expire_enabled = on; }
  // REPLICAOF host port / REPLICAOF NO ONE: turns replica mode (Options::replica) on or off.
  // Turned off, the store expires its stale keys again, lazily and by tick().
  void set_replica(bool on) noexcept { options_.replica = on; }
  // CONFIG GET: the settings in force, as the setters above left them (hz clamped to 1..500).
  const Options& options() const noexcept { return options_; }
  // The parameters the current effort and hz give (semantics.md B §3.2).
  CycleParams cycle() const noexcept { return cycle_params(options_.active_expire_effort, options_.hz); }

  // ==== Change feed, replication and loading ==============================================
  // What a replica, an append-only log or a snapshot needs (change_feed.hpp, snapshot.hpp,
  // append_log.hpp; docs/semantics.md D28-D33). Every TTL travels as an absolute deadline,
  // and only the store that owns the keys decides that one expired.

  // Receives every effective change of the store as the record that replays it (SET k v PXAT
  // ms, PEXPIREAT, PERSIST, DEL/UNLINK, RENAME, FLUSHALL, MULTI/EXEC), synchronously and in
  // order; an empty function removes the feed. The feed must neither call the store nor throw
  // (see change_feed.hpp). Cost without a feed: one test per change.
  void set_change_feed(change_feed_type feed) {
    install_feed();
    notify_.set_feed(std::move(feed));
    update_plain_writes();
  }
  // The sequence number (Change::seq) of the last record sent, 0 before the first: a snapshot
  // taken now holds every record up to it (SnapshotInfo::feed_seq).
  std::uint64_t feed_seq() const noexcept { return notify_.feed().seq(); }

  // Replays one record as the store that made it did, taking every key as valid: nothing is
  // stale to apply(), nothing is evicted or refused for memory, and a deadline already past
  // is stored as given (a replica keeps the key until the primary's DEL; elsewhere it is
  // reclaimed as any stale key, by the next call that touches it or by tick()). Raises the
  // events and feed records of the matching member, so a replica can keep its own log.
  // Returns whether the store changed: false for a PEXPIREAT, PERSIST or DEL of a missing
  // key, a RENAME of a missing source, MULTI and EXEC. Errc::invalid_record, and nothing
  // changes, when the record lacks the key, value or destination its op needs.
  Result<bool> apply(const change_type& c);
  // apply() of a SET record whose key and value the caller hands over: the same, without
  // copying them (what a loader replays: snapshot.hpp, rdb.hpp). `deadline`: nullopt, none.
  Result<bool> apply_set(K&& key, V&& value, std::optional<std::int64_t> deadline) {
    return apply_set(std::move(key), std::move(value), deadline, LoadStep{hash_function()(key), now_ms()});
  }
  // What a loader knows before it stores a key: its hash, taken once (hash_function()(key)),
  // the load's one clock reading, and the hashes of the keys of records a few calls later,
  // whose places in the table are fetched meanwhile (the same key as ahead_group first, then
  // as ahead_slot, is a two-stage pipeline: the control bytes, then the free slot), so that
  // the cache misses of a large load overlap. nullptr: none.
  struct LoadStep {
    std::uint64_t hash;                          // hash_function()(key) of the key stored
    std::int64_t now;                            // the load's clock reading (Unix ms)
    const std::uint64_t* ahead_group = nullptr;  // a later key's hash: fetch its group's control bytes
    const std::uint64_t* ahead_slot = nullptr;   // a later key's hash: fetch the free slot it will take
  };
  // apply_set() given a LoadStep (snapshot.hpp's loads): no second hash, keys ahead prefetched.
  Result<bool> apply_set(K&& key, V&& value, std::optional<std::int64_t> deadline, const LoadStep& step) {
    if (step.ahead_group != nullptr) ks_.prefetch_group(ks_.template hash_from<K>(*step.ahead_group));
    if (step.ahead_slot != nullptr) ks_.prefetch_free_slot(ks_.template hash_from<K>(*step.ahead_slot));
    apply_set_at(std::move(key), std::move(value), deadline ? ChangeTtl::at : ChangeTtl::none,
                 deadline ? *deadline : kNoTtl, step.now, ks_.template hash_from<K>(step.hash));
    flush();
    return true;
  }

  // Runs fn() (calls of this store) as one unit of the feed: its records travel as one MULTI
  // ... EXEC, so a log replays all of them or, cut by a crash, none (a snapshot load, a
  // replica applying a primary's MULTI). Nested units join the outer one.
  template <class F>
  void as_one_unit(F&& fn) {
    const typename detail::ChangeFeed<K, V>::Group unit(notify_.feed());
    std::forward<F>(fn)();
  }

  // Every stored entry, stale ones not yet reclaimed included, as fn(const K& key, const V&
  // value, std::optional<std::int64_t> deadline) (nullopt without TTL: every deadline, -1 and
  // INT64_MAX included, is told apart from none), in storage order: what a snapshot saves. A
  // quiet path (no statistics, nothing reclaimed); fn must not call the store. O(size).
  template <class F>
  void visit_stored(F&& fn) const {
    for (const entry_type& e : ks_.entries()) {
      fn(static_cast<const K&>(e.key), static_cast<const V&>(e.value), deadline_of(e));
    }
  }

  // The same, a few entries at a time, as scan() walks the table: calls fn(const K&, const
  // V&, std::optional<std::int64_t> deadline) for up to `count` stored entries from `cursor`
  // (0 starts) and returns the cursor to continue with, 0 once every entry was visited. A
  // rehash between two calls (a growth, or tick()'s shrink) returns kRestarted instead: the
  // entries visited before may not be visited again, so the walk must start over (what a log
  // rewrite does, append_log.hpp). Quiet, as the whole-store form; fn must not call the store.
  static constexpr std::uint64_t kRestarted = ~std::uint64_t{0};
  template <class F>
  std::uint64_t scan_stored(std::uint64_t cursor, std::size_t count, F&& fn) const;

  // ==== Events and statistics =============================================================

  // Receives the key events of the given causes (all of them by default; see events.hpp); an
  // empty function removes the listener. Cost: an event of a cause not subscribed to is one
  // bit test; one subscribed to copies its key (and, for a removal, moves the value) into a
  // queue that is delivered before the operation returns. A set() with a TTL raises two events
  // (`set`, `expire`): subscribe to KeyEventCauses::removals() to pay only for removals.
  void set_listener(listener_type listener, KeyEventCauses causes = KeyEventCauses::all()) {
    notify_.set_listener(std::move(listener), causes);
    update_plain_writes();
  }

  // INFO stats and keyspace figures (semantics.md D12).
  Stats stats() const noexcept {
    Stats s = stats_;
    s.expired_stale_perc = active_.stale_fraction() * 100.0;
    s.avg_ttl = active_.avg_ttl();
    s.keys = ks_.size();
    s.expires = ks_.expires_size();
    s.subexpiry = ks_.hashes_indexed();
    s.lazyfree_pending_objects = lazy_.pending();
    s.lazyfreed_objects += lazy_.reclaimed();
    return s;
  }
  // Cache statistics (stats.hpp: value reads only, loads, evictions). O(1).
  CacheStats cache_stats() const noexcept {
    CacheStats c;
    c.hit_count = stats_.keyspace_hits - probe_hits_ - soft_reloads_;
    c.miss_count = stats_.keyspace_misses - probe_misses_ + soft_reloads_;
    c.load_success_count = load_ok_;
    c.load_failure_count = load_failed_;
    c.total_load_time_ns = load_ns_;
    c.eviction_count = stats_.evicted_keys;
    c.eviction_weight = gov_.evicted_weight();
    return c;
  }
  // CONFIG RESETSTAT: zeroes the counters (both kinds) and the stale average.
  void reset_stats() noexcept {
    stats_ = Stats{};
    active_.reset_stats();
    lazy_.reset_stats();
    probe_hits_ = probe_misses_ = soft_reloads_ = 0;
    load_ok_ = load_failed_ = load_ns_ = 0;
    gov_.reset_evicted_weight();
  }

  // ==== Inspection (a quiet side door) ====================================================

  // The live value without side effects: no statistics, no lazy deletion, no events.
  template <class KK>
  [[nodiscard]] const V* peek(const KK& key) const {
    const std::int64_t now = now_ms();
    const auto& lk = lookup_key(key);
    const entry_type* e = ks_.find_entry(lk, ks_.hash_of(lk));
    return (e == nullptr || e->is_stale(now)) ? nullptr : &e->value;
  }
  // The stored value, stale or not, as fn(const V& value, std::optional<std::int64_t>
  // deadline) (nullopt: no TTL); false, fn not called, when no entry is stored. What a replica
  // reads to apply its primary's command, which sees every key the primary has not deleted
  // (redis/apply_stream.hpp). Quiet, as peek(); fn must not call the store.
  template <class KK, class F>
  bool peek_stored(const KK& key, F&& fn) const {
    const auto& lk = lookup_key(key);
    const entry_type* e = ks_.find_entry(lk, ks_.hash_of(lk));
    if (e == nullptr) return false;
    std::forward<F>(fn)(static_cast<const V&>(e->value), deadline_of(*e));
    return true;
  }
  // The key hash (with its key, for a keyed hash: keep it secret).
  const Hash& hash_function() const noexcept { return ks_.hasher(); }
  // now_ms(): the clock's reading, as the store's next operation would see it.
  // clock(): the store's clock (for a ManualClock held by value: a handle on the same time as
  // the one the store was built from; for CachedClock: the one to refresh()).
  using engine_type::clock;
  using engine_type::now_ms;
  // The key equality (with hash_function(): how the store tells two keys apart).
  const KeyEqual& key_eq() const noexcept { return ks_.key_eq(); }
  // Verifies the engine's internal invariants (for tests; O(size)).
  bool check_invariants() const;

 protected:
  // A generic member placed a value in entry i: a hash is indexed by its earliest field
  // deadline (hash_fields.hpp). Nothing for other values.
  void placed(std::uint32_t i, std::int64_t now) {
    if constexpr (kHashes) this->hash_placed(i, now);
  }

  // The engine's internal API and state (detail/engine.hpp), used by the members above and
  // by ConcurrentStore's shards (detail/shard_store.hpp).
  using engine_type::lookup_key;
  using engine_type::next_random;
  using engine_type::budget_now;
  using engine_type::emit;
  using engine_type::renamed;
  using engine_type::flush;
  using engine_type::deadline_of;
  using engine_type::past_deadline_verb;
  using engine_type::lookup;
  using engine_type::read_probe;
  using engine_type::write_delete;
  using engine_type::quiet_index;
  using engine_type::weigh_all;
  using engine_type::remove;
  using engine_type::replace_value;
  using engine_type::is_lfu;
  using engine_type::update_eviction_flags;
  using engine_type::plain_writes;
  using engine_type::update_plain_writes;
  using engine_type::weight;
  using engine_type::account;
  using engine_type::unaccount;
  using engine_type::over_limit;
  using engine_type::incoming_weight;
  using engine_type::predicted_heap_bytes;
  using engine_type::init_access;
  using engine_type::reset_access;
  using engine_type::install_touch;
  using engine_type::install_feed;
  using engine_type::touch_;
  using engine_type::refresh_idle;
  using engine_type::prepared_idle_deadline;
  using engine_type::touch_access;
  using engine_type::overwrite;
  using engine_type::evict_to_limit;
  using engine_type::evict_to_entries;
  using engine_type::room_for_key;
  using engine_type::evict;
  using engine_type::make_room;
  using engine_type::expire_entry;
  using engine_type::resolve_positive;
  using engine_type::jittered;
  using engine_type::freshness_of;
  using engine_type::has_deadline;
  using engine_type::clock_;
  using engine_type::notify_;
  using engine_type::gov_;
  using engine_type::access_;
  using engine_type::ks_;
  using engine_type::options_;
  using engine_type::stats_;
  using engine_type::active_;
  using engine_type::probe_hits_;
  using engine_type::probe_misses_;
  using engine_type::soft_reloads_;
  using engine_type::load_ok_;
  using engine_type::load_failed_;
  using engine_type::load_ns_;
  using engine_type::lazy_;

 private:
  template <class KK, class VV>
  bool set_live_plain(KK& key, VV& value, detail::ExpirySpec spec, std::int64_t now);
  template <class KK, class VV>
  Result<bool> write(KK&& key, VV&& value, detail::ExpirySpec spec, SetCond cond, std::int64_t now,
                     std::optional<V>* old);
  template <class KK, class Read>
  Result<void> getex_at(const KK& key, detail::ExpirySpec spec, std::int64_t now, Read&& read);
  template <class KK>
  std::int64_t ttl_query(const KK& key, detail::TimeBase base, detail::TimeUnit unit);
  // The guard of expire_generic(): which live values the TTL change applies to.
  struct AnyValue {
    constexpr bool operator()(const V&) const noexcept { return true; }
  };
  template <class KK, class Guard>
  Result<bool> expire_generic(const KK& key, const ExpireRequest& r, Guard guard);
  template <class K1, class K2>
  Result<bool> copy_at(const K1& src, const K2& dst, bool replace, std::int64_t now);
  template <class K1, class K2>
  Result<bool> rename_at(const K1& src, const K2& dst, SetCond cond, std::int64_t now, bool all_valid = false);
  template <class KK, class VV>
  void apply_set_at(KK&& key, VV&& value, ChangeTtl ttl, std::int64_t at, std::int64_t now);
  template <class KK, class VV>
  void apply_set_at(KK&& key, VV&& value, ChangeTtl ttl, std::int64_t at, std::int64_t now, std::uint64_t h);
};

// =========================================================================================
// Implementation. Each command is one function below, in the order of the class.
// =========================================================================================

// SET and its variants (semantics.md B §2.4, Part A D4, D5, D11).
template <class K, class V, class H, class E, class C, class P>
template <class KK, class VV>
EXPIRING_INLINE Result<bool> ExpiringStore<K, V, H, E, C, P>::write(KK&& key, VV&& value, detail::ExpirySpec spec, SetCond cond,
                                                  std::int64_t now, std::optional<V>* old) {
  // 0. Memory (Redis checks before running the command, with the request, which carries the
  // value, counted in used memory): the new entry's own weight must fit after eviction.
  if (!make_room(now, incoming_weight(key, value))) return Errc::out_of_memory;
  // 1. The expire argument is validated before anything is looked up.
  std::int64_t when = detail::kNoDeadline;
  const bool with_deadline = has_deadline(spec);
  if (with_deadline) {
    Result<std::int64_t> w = resolve_positive(spec, now);
    if (!w.ok()) return w.error();
    when = *w;
    ks_.prepare_deadline(when);
  }
  const bool keep_ttl = spec.kind == detail::ExpiryKind::keepttl;
  // expire_after_access: a write without a TTL gives the idle one (no `expire` event).
  const bool idle = EXPIRING_UNLIKELY(access_.idle_ms() != 0) && !with_deadline && !keep_ttl;
  if (idle) when = prepared_idle_deadline(now);
  const auto& lk = lookup_key(key);
  const std::uint64_t h = ks_.hash_of(lk);

  // 2. GET: a read lookup (counts a hit or miss, reclaims a stale key).
  if (old != nullptr) {
    auto it = lookup(lk, h, now, detail::Access::read);
    if (it != ks_.end()) *old = ks_.entry(it).value;
  }

  // Applies the new value and TTL to a live entry or a freshly inserted one.
  auto apply = [&](std::uint32_t i, bool fresh) {
    if (fresh) {
      account(ks_.entry(i));
      init_access(i, now);
    } else {
      overwrite(i, std::forward<VV>(value), now);
    }
    if (with_deadline || idle) {
      ks_.set_deadline(i, when);
    } else if (!keep_ttl) {
      ks_.clear_deadline(i);
    }
    placed(i, now);
    const entry_type& e = ks_.entry(i);
    emit(KeyEventCause::set, e);
    if (with_deadline) emit(KeyEventCause::expire, e);
  };

  // 3-5. XX, or an absolute deadline already past: look up without inserting.
  const bool past = with_deadline && when <= now;
  if (cond == SetCond::XX || past) {
    auto it = lookup(lk, h, now, detail::Access::write, detail::Touch::no);  // apply() touches once
    const bool found = it != ks_.end();
    if ((cond == SetCond::XX && !found) || (cond == SetCond::NX && found)) return false;
    if (past) {
      if (found) remove(it, KeyEventCause::del, false, past_deadline_verb());
      return true;
    }
    apply(it->index, false);
    return true;
  }

  // An entry bound that is reached: a new key needs room first (one more probe, only here).
  if (EXPIRING_UNLIKELY(options_.max_entries != 0) && ks_.size() >= options_.max_entries &&
      !room_for_key(lk, h, now)) {
    return Errc::out_of_memory;
  }
  // Otherwise find or insert in one probe (the probe inline, the insertion out of line).
  std::uint32_t i = ks_.find_index(lk, h);
  if (EXPIRING_UNLIKELY(i != detail::kNoPos && ks_.entry(i).is_stale(now))) {
    // D11: a write on a stale key first reclaims it as an expiry; then the key is new.
    expire_entry(ks_.slot_of(i), now);
    i = detail::kNoPos;
  }
  if (i == detail::kNoPos) {
    apply(ks_.emplace_absent(h, std::forward<KK>(key), std::forward<VV>(value)), true);
    return true;
  }
  if (cond == SetCond::NX) return false;
  apply(i, false);
  return true;
}

// set() of a live key that has a TTL, with a relative TTL and nothing optional on
// (plain_writes()): probe, validate, store the value and the deadline; no event, no feed
// record, nothing for flush() to do. False, and nothing done, for anything else: write()
// then runs the whole command (the TTL is resolved, and jittered, only once the key is known
// to take this path, so a fallback draws no extra random number).
template <class K, class V, class H, class E, class C, class P>
template <class KK, class VV>
EXPIRING_INLINE bool ExpiringStore<K, V, H, E, C, P>::set_live_plain(KK& key, VV& value, detail::ExpirySpec spec,
                                                                      std::int64_t now) {
  if ((spec.kind != detail::ExpiryKind::px && spec.kind != detail::ExpiryKind::ex) || !plain_writes()) return false;
  const auto& lk = lookup_key(key);
  const std::uint32_t i = this->find_live_volatile(lk, ks_.hash_of(lk), now);
  if (i == detail::kNoPos) return false;
  Result<std::int64_t> w = resolve_positive(spec, now);
  if (!w.ok()) return false;  // write() reports it
  ks_.prepare_retime(*w);  // may throw (the time-ordered index may allocate): before any change
  ks_.entry(i).value = std::forward<VV>(value);
  ks_.retime(i, *w);
  return true;
}

// Get-or-load: a read lookup; on a miss or a stale (soft-TTL) hit, load and set().
template <class K, class V, class H, class E, class C, class P>
template <class KK, class F>
Result<const V*> ExpiringStore<K, V, H, E, C, P>::get_or_load(const KK& key, F&& loader, SetExpiry ttl) {
  const detail::ExpirySpec spec = ttl.spec();
  {
    // Validate first, as set() would, so that a bad TTL never costs a load.
    const std::int64_t now = now_ms();
    if (has_deadline(spec)) {
      if (spec.invalid || spec.value <= 0) return Errc::invalid_expire_time;
      std::int64_t v = spec.value;
      const bool seconds = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::exat;
      const bool relative = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::px;
      if (relative && !spec.jitter.valid()) return Errc::out_of_range;
      if (seconds && !detail::seconds_to_ms(v, v)) return Errc::invalid_expire_time;
      if (relative && !detail::checked_add(v, now, v)) return Errc::invalid_expire_time;
    }
    const auto& lk = lookup_key(key);
    auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::read);
    // A hit emits no event, so nothing can run between here and the caller.
    if (it != ks_.end() && freshness_of(ks_.entry(it), now) != Freshness::stale) return &ks_.entry(it).value;
    if (it != ks_.end()) ++soft_reloads_;  // a keyspace hit, but a cache miss: it loads
    // The write will need room: refuse before loading rather than after. The value is not
    // known yet: count what the default weigher will count at least (a weigher of your own
    // is asked when the loaded value is set).
    const std::size_t at_least =
        gov_.tracking() && !gov_.weigher() ? sizeof(K) + sizeof(V) + this->template predicted_heap_bytes<K>(key) : 0;
    // The entry bound likewise: a key that is not there needs room before the loader runs.
    const bool absent = it == ks_.end();
    if (!make_room(now, at_least) || (EXPIRING_UNLIKELY(options_.max_entries != 0) && absent &&
                                      ks_.size() >= options_.max_entries && !room_for_key(lk, ks_.hash_of(lk), now))) {
      flush();
      return Errc::out_of_memory;
    }
    flush();  // a stale key reclaimed (or keys evicted) on the way; listeners may use the store
  }
  const auto started = std::chrono::steady_clock::now();
  auto load_time = [&] {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
    load_ns_ += static_cast<std::uint64_t>(ns.count() < 0 ? 0 : ns.count());
  };
  std::optional<V> loaded;
  try {
    loaded.emplace(std::forward<F>(loader)());
  } catch (...) {
    ++load_failed_;
    load_time();
    throw;
  }
  ++load_ok_;
  load_time();
  Result<bool> r = set(key, std::move(*loaded), ttl);
  if (!r.ok()) return r.error();  // the clock moved while loading and the TTL overflowed
  const auto& lk = lookup_key(key);
  const std::int64_t now = now_ms();
  const entry_type* e = ks_.find_entry(lk, ks_.hash_of(lk));
  return (e == nullptr || e->is_stale(now)) ? nullptr : &e->value;
}

// GETEX (semantics.md B §2.6).
// read(const V&, bool removed) sees the live value before the option applies, and whether the
// option then removes the key (a deadline already past): getex() copies the value either way,
// getex_ptr() keeps its address only when the key stays.
template <class K, class V, class H, class E, class C, class P>
template <class KK, class Read>
Result<void> ExpiringStore<K, V, H, E, C, P>::getex_at(const KK& key, detail::ExpirySpec spec, std::int64_t now,
                                                     Read&& read) {
  const auto& lk = lookup_key(key);
  // With an option the read does not move an idle TTL (the option decides the TTL: a PERSIST
  // must not find one the read just gave); the LRU/LFU data is touched either way.
  const bool option = spec.kind != detail::ExpiryKind::none;
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::read, option ? detail::Touch::no : detail::Touch::yes);
  if (it == ks_.end()) return {};  // missing: the option is not validated
  if (option && access_.words()) touch_access(it->index, now);
  std::int64_t when = 0;
  const bool with_deadline = has_deadline(spec);
  if (with_deadline) {
    Result<std::int64_t> w = resolve_positive(spec, now);
    if (!w.ok()) return w.error();
    when = *w;
    ks_.prepare_deadline(when);
  }
  const std::uint32_t i = it->index;
  const bool removes = with_deadline && when <= now;
  read(static_cast<const V&>(ks_.entry(i).value), removes);
  if (removes) {
    remove(it, KeyEventCause::del, false, past_deadline_verb());  // D3: a deletion, not an expiry
  } else if (with_deadline) {
    ks_.set_deadline(i, when);
    emit(KeyEventCause::expire, ks_.entry(i));
  } else if (spec.kind == detail::ExpiryKind::persist && ks_.clear_deadline(i)) {
    emit(KeyEventCause::persist, ks_.entry(i));
  }
  return {};
}

// TTL / PTTL / EXPIRETIME / PEXPIRETIME (semantics.md B §2.2, D6).
template <class K, class V, class H, class E, class C, class P>
template <class KK>
std::int64_t ExpiringStore<K, V, H, E, C, P>::ttl_query(const KK& key, detail::TimeBase base, detail::TimeUnit unit) {
  const std::int64_t now = now_ms();
  const auto& lk = lookup_key(key);
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::read, detail::Touch::no);
  ++(it != ks_.end() ? probe_hits_ : probe_misses_);
  std::int64_t out = kNoKey;
  if (it != ks_.end()) {
    const entry_type& e = ks_.entry(it);
    if (!ks_.is_volatile(e)) {
      out = kNoTtl;
    } else {
      std::int64_t x = base == detail::TimeBase::absolute ? e.deadline : detail::saturating_sub(e.deadline, now);
      if (x < 0) x = 0;
      out = unit == detail::TimeUnit::seconds ? detail::ms_to_seconds_rounded(x) : x;
    }
  }
  flush();
  return out;
}

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (semantics.md B §2.1, D3, D6).
template <class K, class V, class H, class E, class C, class P>
template <class KK, class Guard>
Result<bool> ExpiringStore<K, V, H, E, C, P>::expire_generic(const KK& key, const ExpireRequest& r, Guard guard) {
  const bool seconds = r.unit == detail::TimeUnit::seconds, relative = r.base == detail::TimeBase::relative;
  const ExpireFlags flags = r.flags;
  // 1. Flags, then 2-3. the number: errors win over "missing key".
  const bool nx = has(flags, ExpireFlags::NX), xx = has(flags, ExpireFlags::XX);
  const bool gt = has(flags, ExpireFlags::GT), lt = has(flags, ExpireFlags::LT);
  if (nx && (xx || gt || lt)) return Errc::nx_and_xx_gt_lt;
  if (gt && lt) return Errc::gt_and_lt;
  if (!r.jitter.valid()) return Errc::out_of_range;
  if (r.overflowed) return Errc::invalid_expire_time;  // a chrono value beyond the int64 range of ms
  const std::int64_t now = now_ms();
  std::int64_t when = r.amount;
  if (seconds && !detail::seconds_to_ms(when, when)) return Errc::invalid_expire_time;
  const std::int64_t ttl_ms = when;
  if (relative && !detail::checked_add(when, now, when)) return Errc::invalid_expire_time;
  // Jitter only a positive relative TTL: EXPIRE 0 or negative still deletes (D3).
  if (relative && ttl_ms > 0) when = jittered(when, ttl_ms, now, r.jitter);

  // 4. A write lookup.
  const auto& lk = lookup_key(key);
  const std::uint64_t h = ks_.hash_of(lk);
  // The common case, with nothing optional on (plain_writes()): a live key with a TTL, no
  // flag, any value, a deadline in the future. Its deadline moves; no event, nothing to flush.
  if (std::is_same_v<Guard, AnyValue> && flags == ExpireFlags::None && when > now && plain_writes()) {
    const std::uint32_t i = this->find_live_volatile(lk, h, now);
    if (i != detail::kNoPos) {
      ks_.prepare_retime(when);
      ks_.retime(i, when);
      return true;
    }
  }
  auto it = lookup(lk, h, now, detail::Access::write);
  bool applied = false;
  if (it != ks_.end() && guard(static_cast<const V&>(ks_.entry(it).value))) {
    const std::uint32_t i = it->index;
    const entry_type& e = ks_.entry(i);
    // 5. Conditions; no TTL counts as infinite.
    const bool has_ttl = ks_.is_volatile(e);
    bool ok = true;
    if (nx && has_ttl) ok = false;
    if (xx && !has_ttl) ok = false;
    if (gt && (!has_ttl || when <= e.deadline)) ok = false;
    if (lt && has_ttl && when >= e.deadline) ok = false;
    // 6. Apply.
    if (ok) {
      if (when <= now) {
        remove(it, KeyEventCause::del, false, past_deadline_verb());
      } else if (has_ttl) {
        ks_.prepare_retime(when);
        ks_.retime(i, when);
        emit(KeyEventCause::expire, ks_.entry(i));
      } else {
        ks_.prepare_deadline(when);
        ks_.set_deadline(i, when);
        emit(KeyEventCause::expire, ks_.entry(i));
      }
      applied = true;
    }
  }
  flush();
  return applied;
}

// COPY (semantics.md B §2.9).
template <class K, class V, class H, class E, class C, class P>
template <class K1, class K2>
Result<bool> ExpiringStore<K, V, H, E, C, P>::copy_at(const K1& src, const K2& dst, bool replace, std::int64_t now) {
  const auto& ls = lookup_key(src);
  const auto& ld = lookup_key(dst);
  const std::uint64_t hs = ks_.hash_of(ls);
  const std::uint64_t hd = ks_.hash_of(ld);
  if (hs == hd && ks_.keys_equal(ls, ld)) return Errc::same_key;  // checked first, as Redis
  std::size_t incoming = 0;  // the copy's weight: the source's value under the new key
  if (gov_.tracking()) {
    if (const entry_type* e = ks_.find_entry(ls, hs); e != nullptr && !e->is_stale(now)) {
      incoming = incoming_weight(dst, e->value);
    }
  }
  if (!make_room(now, incoming)) return Errc::out_of_memory;
  if (EXPIRING_UNLIKELY(options_.max_entries != 0) && ks_.size() >= options_.max_entries) {
    const entry_type* src_entry = ks_.find_entry(ls, hs);
    const entry_type* dst_entry = ks_.find_entry(ld, hd);
    // A stale destination is reclaimed and replaced in place: only an absent one adds a key.
    const bool adds = src_entry != nullptr && !src_entry->is_stale(now) && dst_entry == nullptr;
    if (adds && !evict_to_entries(now, options_.max_entries - 1)) return Errc::out_of_memory;
  }
  auto sit = lookup(ls, hs, now, detail::Access::read);
  ++(sit != ks_.end() ? probe_hits_ : probe_misses_);
  if (sit == ks_.end()) return false;
  auto dit = lookup(ld, hd, now, detail::Access::write);
  if (dit != ks_.end() && !replace) return false;
  const std::uint32_t s = sit->index;
  V value(ks_.entry(s).value);
  const bool was_volatile = ks_.is_volatile(ks_.entry(s));
  const std::int64_t deadline = ks_.entry(s).deadline;
  ks_.prepare_deadline(deadline);
  std::uint32_t d = 0;
  if (dit != ks_.end()) {
    d = dit->index;
    unaccount(ks_.entry(d));
    replace_value(ks_.entry(d).value, std::move(value));
    account(ks_.entry(d));
  } else {
    d = ks_.try_emplace(ld, hd, dst, std::move(value)).first;
    account(ks_.entry(d));
    init_access(d, now);
  }
  if (was_volatile) {
    ks_.set_deadline(d, deadline);
  } else {
    ks_.clear_deadline(d);
  }
  placed(d, now);
  emit(KeyEventCause::copy_to, ks_.entry(d));
  return true;
}

// compute(): one write lookup, then the function's decision.
template <class K, class V, class H, class E, class C, class P>
template <class KK, class F>
Result<bool> ExpiringStore<K, V, H, E, C, P>::compute(const KK& key, F&& fn) {
  const std::int64_t now = now_ms();
  const auto& lk = lookup_key(key);
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::write);
  const bool found = it != ks_.end();
  const V* value = found ? &ks_.entry(it).value : nullptr;
  const std::int64_t pexp = !found ? kNoKey : (ks_.is_volatile(ks_.entry(it)) ? ks_.entry(it).deadline : kNoTtl);
  Computed<V> c = std::forward<F>(fn)(value, pexp);
  Result<bool> out = false;
  switch (c.op()) {
    case Computed<V>::Op::keep:
      break;
    case Computed<V>::Op::remove:
      if (found) remove(it, KeyEventCause::del, options_.lazyfree_lazy_user_del);
      out = found;
      break;
    case Computed<V>::Op::store:
      out = write(key, std::move(*c.value()), c.ttl().spec(), SetCond::Always, now, nullptr);
      break;
    case Computed<V>::Op::retime: {
      if (!found) break;
      const detail::ExpirySpec spec = c.ttl().spec();
      const std::uint32_t i = it->index;
      if (has_deadline(spec)) {
        Result<std::int64_t> w = resolve_positive(spec, now);
        if (!w.ok()) {
          out = w.error();
          break;
        }
        if (*w <= now) {
          remove(it, KeyEventCause::del, false, past_deadline_verb());
        } else {
          ks_.prepare_deadline(*w);
          ks_.set_deadline(i, *w);
          emit(KeyEventCause::expire, ks_.entry(i));
        }
        out = true;
      } else if (spec.kind == detail::ExpiryKind::none) {
        out = ks_.clear_deadline(i);
        if (*out) emit(KeyEventCause::persist, ks_.entry(i));
      }
      break;
    }
  }
  flush();
  return out;
}

// RENAME / RENAMENX (semantics.md B §2.9).
template <class K, class V, class H, class E, class C, class P>
template <class K1, class K2>
Result<bool> ExpiringStore<K, V, H, E, C, P>::rename_at(const K1& src, const K2& dst, SetCond cond,
                                                     std::int64_t now, bool all_valid) {
  const bool nx = cond == SetCond::NX;  // RENAMENX
  const auto& ls = lookup_key(src);
  const auto& ld = lookup_key(dst);
  const std::uint64_t hs = ks_.hash_of(ls);
  const std::uint64_t hd = ks_.hash_of(ld);
  // apply() (all_valid): every key is live, whatever its deadline.
  const std::int64_t seen = all_valid ? std::numeric_limits<std::int64_t>::min() : now;
  auto sit = lookup(ls, hs, seen, detail::Access::write);
  if (sit == ks_.end()) return Errc::no_such_key;
  auto dit = lookup(ld, hd, seen, detail::Access::write);
  if (dit != ks_.end() && dit->index == sit->index) return !nx;  // the same key
  if (dit != ks_.end() && nx) return false;

  if (dit != ks_.end()) {
    // dst exists: it takes src's value and TTL; then src goes.
    const std::uint32_t s = sit->index, d = dit->index;
    entry_type& se = ks_.entry(s);
    entry_type& de = ks_.entry(d);
    ks_.prepare_deadline(se.deadline);
    unaccount(se);
    unaccount(de);
    replace_value(de.value, std::move(se.value));
    if (access_.words()) ks_.access(d) = ks_.access(s);  // the value keeps its access data, as Redis's rename
    account(de);
    if (ks_.is_volatile(se)) {
      ks_.set_deadline(d, se.deadline);
    } else {
      ks_.clear_deadline(d);
    }
    placed(d, now);
    renamed(se, de);
    ks_.erase(sit, [](entry_type&) {});
    return true;
  }
  // dst absent: a new entry for dst takes src's value and TTL; then src goes.
  std::uint32_t s = sit->index;
  const bool was_volatile = ks_.is_volatile(ks_.entry(s));
  const std::int64_t deadline = ks_.entry(s).deadline;
  ks_.prepare_deadline(deadline);
  const std::size_t src_weight = gov_.tracking() ? weight(ks_.entry(s)) : 0;
  const std::uint32_t d = ks_.try_emplace(ld, hd, dst, std::move(ks_.entry(s).value)).first;
  s = ks_.find_index(ls, hs);  // the insertion may have grown the table, moving src
  gov_.release(src_weight);
  account(ks_.entry(d));
  if (access_.words()) ks_.access(d) = ks_.access(s);
  if (was_volatile) ks_.set_deadline(d, deadline);
  placed(d, now);
  renamed(ks_.entry(s), ks_.entry(d));
  ks_.erase(ks_.slot_of(s), [](entry_type&) {});
  return true;
}

// APPLY: one record of a change feed, with every key valid (change_feed.hpp, D31).
template <class K, class V, class H, class E, class C, class P>
Result<bool> ExpiringStore<K, V, H, E, C, P>::apply(const change_type& c) {
  const bool keyed = c.op != ChangeOp::flushall && c.op != ChangeOp::multi && c.op != ChangeOp::exec;
  if (keyed && c.key == nullptr) return Errc::invalid_record;
  if ((c.op == ChangeOp::set && c.value == nullptr) || (c.op == ChangeOp::rename && c.to == nullptr)) {
    return Errc::invalid_record;
  }
  const std::int64_t now = now_ms();  // for the access data and the field index only: no key is stale to apply()
  bool changed = false;
  switch (c.op) {
    case ChangeOp::multi:
    case ChangeOp::exec:
      return false;
    case ChangeOp::flushall:
      changed = ks_.size() != 0;
      clear();
      break;
    case ChangeOp::set:
      apply_set_at(*c.key, *c.value, c.ttl, c.at_ms, now);
      changed = true;
      break;
    case ChangeOp::pexpireat:
    case ChangeOp::persist: {
      const auto& lk = lookup_key(*c.key);
      const auto it = ks_.find(lk, ks_.hash_of(lk));
      if (it == ks_.end()) break;
      const std::uint32_t i = it->index;
      if (c.op == ChangeOp::pexpireat) {
        ks_.prepare_deadline(c.at_ms);
        ks_.set_deadline(i, c.at_ms);
        emit(KeyEventCause::expire, ks_.entry(i));
        changed = true;
      } else if (ks_.clear_deadline(i)) {
        emit(KeyEventCause::persist, ks_.entry(i));
        changed = true;
      }
      break;
    }
    case ChangeOp::del:
    case ChangeOp::unlink: {
      const auto& lk = lookup_key(*c.key);
      const auto it = ks_.find(lk, ks_.hash_of(lk));
      if (it == ks_.end()) break;
      const bool lazy = c.op == ChangeOp::unlink || options_.lazyfree_lazy_user_del;
      remove(it, KeyEventCause::del, lazy, c.op);
      changed = true;
      break;
    }
    case ChangeOp::rename: {
      Result<bool> r = rename_at(*c.key, *c.to, SetCond::Always, now, /*all_valid=*/true);
      if (!r.ok() && r.error() != Errc::no_such_key) {
        flush();
        return r.error();
      }
      changed = r.ok() && *r;
      break;
    }
  }
  flush();
  return changed;
}

// apply()'s SET (and apply_set()'s): the key and value copied or moved in, as given.
template <class K, class V, class H, class E, class C, class P>
template <class KK, class VV>
void ExpiringStore<K, V, H, E, C, P>::apply_set_at(KK&& key, VV&& value, ChangeTtl ttl, std::int64_t at, std::int64_t now) {
  const std::uint64_t h = ks_.hash_of(lookup_key(key));
  apply_set_at(std::forward<KK>(key), std::forward<VV>(value), ttl, at, now, h);
}
template <class K, class V, class H, class E, class C, class P>
template <class KK, class VV>
void ExpiringStore<K, V, H, E, C, P>::apply_set_at(KK&& key, VV&& value, ChangeTtl ttl, std::int64_t at, std::int64_t now,
                                                   std::uint64_t h) {
  const auto& lk = lookup_key(key);
  if (ttl == ChangeTtl::at) ks_.prepare_deadline(at);
  std::uint32_t i = 0;
  if (auto it = ks_.find(lk, h); it != ks_.end()) {
    i = it->index;
    overwrite(i, std::forward<VV>(value), now);
  } else {
    i = ks_.try_emplace(lk, h, std::forward<KK>(key), std::forward<VV>(value)).first;
    account(ks_.entry(i));
    init_access(i, now);
  }
  if (ttl == ChangeTtl::at) {
    ks_.set_deadline(i, at);
  } else if (ttl == ChangeTtl::none) {
    ks_.clear_deadline(i);
  }
  placed(i, now);
  emit(KeyEventCause::set, ks_.entry(i));
  if (ttl == ChangeTtl::at) emit(KeyEventCause::expire, ks_.entry(i));
}

// TICK: lazy free first, then the active-expire cycle (detail/active_expire.hpp).
template <class K, class V, class H, class E, class C, class P>
TickReport ExpiringStore<K, V, H, E, C, P>::tick(CycleKind kind) {
  TickReport report;
  const CycleParams p = cycle();
  const bool fast = kind == CycleKind::Fast;
  // Hand queued values to the background reclaimer, or destroy them within this tick's budget.
  report.lazyfreed = lazy_.service([&] { return budget_now(); }, fast ? p.fast_duration_us : p.slow_time_limit_us);
  stats_.lazyfreed_objects += report.lazyfreed;
  // A clock with an anchor to refresh (TscClock) or a cached reading (CachedClock) is resynced
  // once per tick, before the cycle reads it.
  if constexpr (detail::has_resync<C>::value) clock_.resync();
  if (options_.active_expire_enabled && this->replica().expires_actively()) {
    std::int64_t cycle_now = 0;  // the cycle's one reading (D7), for the lateness histogram
    active_.run(
        report, ks_, options_, p, fast, stats_, [&] { return cycle_now = now_ms(); }, [&] { return budget_now(); },
        [&](slot_iterator it) { expire_entry(it, cycle_now, /*active=*/true); });
    if constexpr (kHashes) {
      // The field cycle (hash_fields.hpp): after the key cycle, in what is left of its budget.
      if (report.ran || !fast) {
        if (!report.ran) cycle_now = now_ms();
        const std::int64_t limit = fast ? p.fast_duration_us : p.slow_time_limit_us;
        const std::int64_t start = budget_now();
        const std::int64_t left = limit - report.elapsed_us;
        this->field_cycle(report, cycle_now, fast, [&] { return budget_now() - start < left; });
        const std::int64_t spent = budget_now() - start;
        if (spent > 0) {
          report.elapsed_us += spent;
          stats_.expire_cycle_cpu_microseconds += static_cast<std::uint64_t>(spent);
        }
      }
    }
  }
  flush();
  return report;
}

// MGET without copies: hash and prefetch a batch of keys, then read it.
template <class K, class V, class H, class E, class C, class P>
template <class Keys>
std::size_t ExpiringStore<K, V, H, E, C, P>::get_many(const Keys& keys, const V** out) {
  const std::int64_t now = now_ms();
  constexpr std::size_t kBatch = 16;
  // (stage 2; the slot table's block alone, in O(1): table_bytes() also walks a wheel's buckets)
  const bool prefetch_slots = keyspace_type::table_type::bytes_in(ks_.view()) >= detail::kSlotPrefetchBytes;
  std::uint64_t hashes[kBatch];
  std::size_t hits = 0;
  std::size_t done = 0;
  auto it = std::begin(keys);
  const auto last = std::end(keys);
  while (it != last) {
    // Stage 1: hash the batch and prefetch each key's control group.
    auto first = it;
    std::size_t n = 0;
    for (; it != last && n < kBatch; ++it, ++n) {
      hashes[n] = ks_.hash_of(lookup_key(*it));
      ks_.prefetch_group(hashes[n]);
    }
    // Stage 2: read the groups (now arriving) and prefetch each likely slot.
    if (prefetch_slots) {
      for (std::size_t j = 0; j < n; ++j) ks_.prefetch_slot(hashes[j]);
    }
    // Stage 3: the lookups proper. Erasure moves no entry, so the pointers of this batch
    // survive the reclaiming of its stale keys.
    for (std::size_t j = 0; j < n; ++j, ++first) {
      const auto& lk = lookup_key(*first);
      const slot_iterator hit = lookup(lk, hashes[j], now, detail::Access::read);
      out[done + j] = hit == ks_.end() ? nullptr : &ks_.entry(hit).value;
      hits += hit == ks_.end() ? 0 : 1;
    }
    done += n;
  }
  flush();
  return hits;
}

// SCAN: a cursor of the table's layout tag and a slot position.
template <class K, class V, class H, class E, class C, class P>
template <class F>
std::uint64_t ExpiringStore<K, V, H, E, C, P>::scan(std::uint64_t cursor, std::size_t count, F&& fn) {
  const std::int64_t now = now_ms();
  constexpr int kTagShift = 40;  // positions below 2^40; the layout tag above
  const std::uint64_t tag = (static_cast<std::uint64_t>(ks_.epoch()) & 0xFFFFFFu) + 1;
  std::size_t pos = 0;
  if (cursor != 0 && (cursor >> kTagShift) == tag) {
    pos = static_cast<std::size_t>(cursor & ((std::uint64_t{1} << kTagShift) - 1));
  }
  if (count == 0) count = 1;
  const std::size_t slots = ks_.slot_count();
  pos = ks_.next_occupied(pos);
  const typename detail::Notifier<K, V>::ArbitraryKeys arbitrary(notify_);
  for (std::size_t visited = 0; pos < slots && visited < count; ++visited) {
    const auto i = static_cast<std::uint32_t>(pos);
    if (ks_.entry(i).is_stale(now)) {
      if (this->replica().reclaims_on_read()) expire_entry(ks_.slot_of(i), now);
    } else {
      fn(static_cast<const K&>(ks_.entry(i).key), static_cast<const V&>(ks_.entry(i).value));
    }
    pos = ks_.next_occupied(pos + 1);
  }
  flush();
  return pos >= slots ? 0 : (tag << kTagShift) | pos;
}

// In-place update of a live value.
template <class K, class V, class H, class E, class C, class P>
template <class KK, class F>
bool ExpiringStore<K, V, H, E, C, P>::modify(const KK& key, F&& fn) {
  const std::int64_t now = now_ms();
  const auto& lk = lookup_key(key);
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::write);
  bool found = it != ks_.end();
  if (found) {
    entry_type& e = ks_.entry(it);
    unaccount(e);
    try {
      std::forward<F>(fn)(e.value);
    } catch (...) {
      account(e);
      throw;
    }
    account(e);
    if (access_.idle_ms() != 0) refresh_idle(it->index, now);
    placed(it->index, now);
    emit(KeyEventCause::update, e);
  }
  flush();
  return found;
}

// INCRBY.
template <class K, class V, class H, class E, class C, class P>
template <class KK>
Result<std::int64_t> ExpiringStore<K, V, H, E, C, P>::incr_by(const KK& key, std::int64_t delta) {
  static_assert(std::is_integral_v<V> && std::is_signed_v<V> && sizeof(V) <= sizeof(std::int64_t),
                "incr_by() needs a signed integer value type of at most 64 bits (Redis's INCRBY)");
  const auto fits = [&](std::int64_t base, std::int64_t& out) {
    return detail::checked_add(base, delta, out) && out >= static_cast<std::int64_t>(std::numeric_limits<V>::min()) &&
           out <= static_cast<std::int64_t>(std::numeric_limits<V>::max());
  };
  std::int64_t next = 0;
  if (const V* cur = peek(key); cur != nullptr && !fits(static_cast<std::int64_t>(*cur), next)) return Errc::overflow;
  const typename detail::ChangeFeed<K, V>::Group unit(notify_.feed());  // a lazy DEL and the SET travel together
  if (modify(key, [&](V& v) {
        (void)fits(static_cast<std::int64_t>(v), next);
        v = static_cast<V>(next);
      })) {
    return next;
  }
  if (!fits(0, next)) return Errc::overflow;
  const Result<bool> r = set(key, static_cast<V>(next));
  if (!r.ok()) return r.error();
  return next;
}

// GETDEL.
template <class K, class V, class H, class E, class C, class P>
template <class KK>
std::optional<V> ExpiringStore<K, V, H, E, C, P>::getdel(const KK& key) {
  const std::int64_t now = now_ms();
  const auto& lk = lookup_key(key);
  std::optional<V> out;
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::read);
  if (it != ks_.end()) {
    if (EXPIRING_UNLIKELY(notify_.recording())) notify_.feed().record(change_type{ChangeOp::del, &ks_.entry(it).key});
    unaccount(ks_.entry(it));
    out.emplace(std::move(ks_.entry(it).value));
    ks_.erase(it, [&](entry_type& e) {
      if (notify_.events().wants(KeyEventCause::del)) {
        notify_.events().push_removed(KeyEventCause::del, std::move(e.key), out, false);
      }
    });
  }
  flush();
  return out;
}

// The quiet scan, stale entries included (snapshots and replication).
template <class K, class V, class H, class E, class C, class P>
template <class F>
std::uint64_t ExpiringStore<K, V, H, E, C, P>::scan_stored(std::uint64_t cursor, std::size_t count, F&& fn) const {
  constexpr int kTagShift = 40;  // positions below 2^40; the layout tag above (as scan())
  const std::uint64_t tag = (static_cast<std::uint64_t>(ks_.epoch()) & 0xFFFFFFu) + 1;
  std::size_t pos = 0;
  if (cursor != 0) {
    if ((cursor >> kTagShift) != tag) return kRestarted;
    pos = static_cast<std::size_t>(cursor & ((std::uint64_t{1} << kTagShift) - 1));
  }
  const std::size_t slots = ks_.slot_count();
  pos = ks_.next_occupied(pos);
  for (std::size_t visited = 0; pos < slots && visited < count; ++visited) {
    const entry_type& e = ks_.entry(static_cast<std::uint32_t>(pos));
    fn(static_cast<const K&>(e.key), static_cast<const V&>(e.value), deadline_of(e));
    pos = ks_.next_occupied(pos + 1);
  }
  return pos >= slots ? 0 : (tag << kTagShift) | pos;
}

// RANDOMKEY (a replica answers a stale key after 100 stale draws, as Redis's).
template <class K, class V, class H, class E, class C, class P>
std::optional<K> ExpiringStore<K, V, H, E, C, P>::random_key() {
  const std::int64_t now = now_ms();
  std::optional<K> out;
  const typename detail::Notifier<K, V>::ArbitraryKeys arbitrary(notify_);
  int tries = 100;
  while (ks_.size() != 0) {
    const std::uint32_t i = ks_.random_slot([&] { return next_random(); });
    if (!ks_.entry(i).is_stale(now) || (!this->replica().reclaims_on_read() && --tries == 0)) {
      out.emplace(ks_.entry(i).key);
      break;
    }
    if (this->replica().reclaims_on_read()) expire_entry(ks_.slot_of(i), now);
  }
  flush();
  return out;
}

// The engine's invariants, for tests.
template <class K, class V, class H, class E, class C, class P>
bool ExpiringStore<K, V, H, E, C, P>::check_invariants() const {
  if (!ks_.check_invariants()) return false;
  if constexpr (kHashes) {
    // The last field going deletes a hash's key (hash_changed()); a replica alone keeps an
    // emptied one until the primary's record (D31). Anything else that put one there (an
    // apply() of a record no store writes) is a state the hash members do not expect.
    if (!this->replica().keeps_emptied_hashes()) {
      for (const entry_type& e : ks_.entries()) {
        if (detail::is_empty_hash(e.value)) return false;
      }
    }
  }
  return true;
}

// MSET's admission: one memory check for a group of writes.
template <class K, class V, class H, class E, class C, class P>
template <class F>
Result<void> ExpiringStore<K, V, H, E, C, P>::as_one_command(F&& fn) {
  Result<void> r = perform_evictions();
  if (!r.ok()) return r;
  struct Restore {
    bool& flag;
    bool was;
    ~Restore() { flag = was; }
  } restore{gov_.in_command(), gov_.in_command()};
  gov_.in_command() = true;
  const typename detail::ChangeFeed<K, V>::Group unit(notify_.feed());
  std::forward<F>(fn)();
  return r;
}

// PERSIST.
template <class K, class V, class H, class E, class C, class P>
template <class KK>
bool ExpiringStore<K, V, H, E, C, P>::persist(const KK& key) {
  const std::int64_t now = now_ms();
  const auto& lk = lookup_key(key);
  auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::write);
  bool removed = false;
  if (it != ks_.end()) {
    const std::uint32_t i = it->index;
    removed = ks_.clear_deadline(i);
    if (removed) emit(KeyEventCause::persist, ks_.entry(i));
  }
  flush();
  return removed;
}

}  // namespace expiring
