// expiring/detail/engine.hpp: the engine under every store face, and its internal API.
//
// Design
// ------
// ExpiringStore (expiring_store.hpp) is a face: the contract, documented member by member.
// What it stands on is this class: the keyspace and its expiry index, the options, the
// statistics, and the subsystems every command touches:
//
//   lookup()        a probe that reclaims a stale key (cause `expired`) and counts hits and
//                   misses (Redis's lookupKeyRead / lookupKeyWrite)
//   remove()        a key leaves: events, change-feed record, memory, lazy free
//   expire_entry()  a stale key is reclaimed, lazily or by the active cycle
//   emit() flush()  events and change-feed records of the current call, delivered at its end
//   make_room()     admission and eviction by the memory governor (detail/memory.hpp)
//   touched()       access tracking: LRU/LFU data, idle TTLs (detail/access.hpp)
//   jittered() resolve_positive() freshness_of()   TTL arithmetic
//   replica()       replica mode as a policy: what a replica leaves to its primary
//
// Rooms above it (the hash-field members of hash_fields.hpp, the face) reach it through
// this protected API, by inheritance: none of them is a friend of another. What does not
// depend on K and V (options, statistics, the cycle's state, access tracking) sits in a base
// that is not a template, EngineState. The hot path tests little for everything optional:
// `access_.read_hook()` on reads; on writes, plain_writes() (no bound, access data, lazy
// replacement, feed or listener of the write's events) lets set() and pexpire() of a live key
// with a TTL skip the general path. Eviction, access tracking and the feed's records are
// reached through pointers that the paths turning them on install ("optional rooms" below):
// a store built without Options that never turns them on compiles none of their code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../change_feed.hpp"
#include "../clock.hpp"
#include "../error.hpp"
#include "../events.hpp"
#include "../hash.hpp"
#include "../options.hpp"
#include "../stats.hpp"
#include "access.hpp"
#include "active_expire.hpp"
#include "arith.hpp"
#include "attributes.hpp"
#include "event_queue.hpp"
#include "eviction.hpp"
#include "keyspace.hpp"
#include "lazyfree.hpp"
#include "memory.hpp"
#include "notifier.hpp"
#include "replica.hpp"


namespace expiring {

namespace detail {

// Throws std::invalid_argument for Options no store can run with (the constructor's check;
// not a template, so a program compiles it once whatever its stores).
inline void validate(const Options& o) {
  if (o.active_expire_effort < 1 || o.active_expire_effort > 10) {
    throw std::invalid_argument("expiring: active_expire_effort must be between 1 and 10");
  }
  if (!o.ttl_jitter.valid()) {
    throw std::invalid_argument("expiring: ttl_jitter percent must be 0..100 and spread >= 0");
  }
  if (o.stale_window_ms < 0 || o.refresh_window_ms < 0) {
    throw std::invalid_argument("expiring: soft-TTL windows must not be negative");
  }
  if (o.maxmemory_samples < 1 || o.maxmemory_samples > 64 || o.lfu_log_factor < 0 || o.lfu_decay_time < 0 ||
      o.lru_clock_resolution_ms < 1) {
    throw std::invalid_argument(
        "expiring: maxmemory_samples must be 1..64, lfu_log_factor and lfu_decay_time >= 0, "
        "lru_clock_resolution_ms >= 1");
  }
  if (o.lazyfree_background && o.lazyfree_queue_max == 0) {
    throw std::invalid_argument("expiring: lazyfree_background needs lazyfree_queue_max > 0");
  }
  if (o.expire_after_access.count() < 0) {
    throw std::invalid_argument("expiring: expire_after_access must not be negative");
  }
}

// What an engine holds whatever its K and V: the options (checked), the statistics, the
// active-expire cycle's state, the random source, access tracking and the cache counters.
// Not a template: its constructor is compiled once per program whatever the stores.
class EngineState {
 protected:
  // Default options: nothing to check.
  EngineState() : rng_(random_u64()) {}
  // Throws std::invalid_argument for options out of range (see ExpiringStore's constructor).
  EXPIRING_NOINLINE explicit EngineState(Options&& options) : options_(std::move(options)) {
    validate(options_);
    access_.set_idle_ms(static_cast<std::int64_t>(options_.expire_after_access.count()));
    options_.hz = options_.hz < 1 ? 1 : (options_.hz > 500 ? 500 : options_.hz);
    rng_ = options_.seed ? *options_.seed ^ 0xD1B54A32D192ED03ull : random_u64();
  }
  // The keyspace's seed: Options::seed, or a random one.
  EXPIRING_NOINLINE std::uint64_t table_seed() const noexcept {
    return options_.seed ? *options_.seed : random_u64();
  }

  Options options_;
  Stats stats_{};
  ActiveExpire active_;  // the active-expire cycle's state
  std::uint64_t rng_ = 0;
  AccessTracker access_;  // LRU/LFU words and the idle TTL: reads take the slow path when on
  // Cache statistics: the lookups counted in keyspace_hits/misses that are not value reads
  // (EXISTS, TOUCH, the TTL queries, COPY's source), and get_or_load()'s soft-TTL reloads
  // (a keyspace hit, a cache miss). cache_stats() derives its counts from these, so that the
  // value reads themselves pay no extra counter.
  std::uint64_t probe_hits_ = 0;
  std::uint64_t probe_misses_ = 0;
  std::uint64_t soft_reloads_ = 0;
  std::uint64_t load_ok_ = 0;
  std::uint64_t load_failed_ = 0;
  std::uint64_t load_ns_ = 0;
};

template <class T, class = void>
struct is_transparent : std::false_type {};
template <class T>
struct is_transparent<T, std::void_t<typename T::is_transparent>> : std::true_type {};

template <class Policy>
struct expiry_index_for;
template <>
struct expiry_index_for<SampledExpiry> {
  using type = VolatileBitmap;
};
template <>
struct expiry_index_for<TimeOrderedExpiry> {
  using type = TimerWheel;
};

// Detects clock.resync().
template <class C, class = void>
struct has_resync : std::false_type {};
template <class C>
struct has_resync<C, std::void_t<decltype(std::declval<C&>().resync())>> : std::true_type {};

}  // namespace detail

namespace detail {

template <class K, class V, class Hash, class KeyEqual, class Clock, class ExpiryPolicy>
class Engine : protected EngineState {
 public:
  using key_type = K;
  using mapped_type = V;
  using keyspace_type = Keyspace<K, V, Hash, KeyEqual, typename expiry_index_for<ExpiryPolicy>::type>;
  using entry_type = typename keyspace_type::entry_type;
  using slot_iterator = typename keyspace_type::slot_iterator;
  using change_type = Change<K, V>;
  using weigher_type = std::function<std::size_t(const K&, const V&)>;
  static constexpr bool kWheel = std::is_same_v<ExpiryPolicy, TimeOrderedExpiry>;
  // Hash values (FieldMap, or a type that may hold one): the hash members of hash_fields.hpp.
  static constexpr bool kHashes = keyspace_type::kHashes;

  // The clock's reading, as the store's next operation would see it.
  std::int64_t now_ms() const { return clock_.now_ms(); }
  // The store's clock (for a ManualClock held by value: a handle on the same time as the one
  // the store was built from; for CachedClock: the one to refresh()).
  std::remove_reference_t<Clock>& clock() noexcept { return clock_; }
  const std::remove_reference_t<Clock>& clock() const noexcept { return clock_; }

 protected:
  // Replica mode (Options::replica): what the engine does not decide on its own.
  ReplicaPolicy replica() const noexcept { return ReplicaPolicy(options_.replica); }
  // Throws std::invalid_argument for options out of range (see ExpiringStore's constructor).
  Engine(Clock clk, Options&& options, Hash hash, KeyEqual eq)
      : EngineState(std::move(options)),
        clock_(std::forward<Clock>(clk)),
        ks_(keyed(std::move(hash), options_.seed), std::move(eq), table_seed()) {
    set_eviction_flags([] { return std::size_t{0}; });  // empty: nothing to weigh
    lazy_.configure(options_.lazyfree_queue_max, options_.lazyfree_background);
    if (options_.reserve != 0) ks_.reserve(options_.reserve);
    if constexpr (kWheel) ks_.expiry().sync(now_ms());
  }
  // With default options: no bound, no access data, no lazy free, so none of their rooms is
  // installed (see "optional rooms" below) and a program that builds its stores this way and
  // never turns them on compiles none of their code.
  Engine(Clock clk, Hash hash, KeyEqual eq)
      : clock_(std::forward<Clock>(clk)), ks_(std::move(hash), std::move(eq), table_seed()) {
    if constexpr (kWheel) ks_.expiry().sync(now_ms());
  }
  static constexpr bool kTransparent = detail::is_transparent<Hash>::value && detail::is_transparent<KeyEqual>::value;

  // The key to probe with: the caller's own object when the functors are transparent (or it
  // already is a K), else a K built from it.
  template <class KK>
  static decltype(auto) lookup_key(const KK& key) {
    if constexpr (kTransparent || std::is_same_v<KK, K>) {
      return (key);
    } else {
      return K(key);
    }
  }

  // A keyed hash (expiring::Hash, expiring::SipHash, or any with rekey(HashKey)) is keyed from
  // Options::seed when one is given, so that a seeded store is reproducible; otherwise it
  // keeps its own key.
  static Hash keyed(Hash hash, const std::optional<std::uint64_t>& seed) {
    if constexpr (detail::is_rekeyable<Hash>::value) {
      if (seed) hash.rekey(HashKey::from_seed(*seed));
    }
    return hash;
  }
  std::uint64_t next_random() noexcept {  // splitmix64
    std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t budget_now() const {
    return options_.budget_clock_us ? options_.budget_clock_us() : SteadyMicrosClock{}();
  }

  // ---- events and change-feed records (the notifier room: detail/notifier.hpp) ----
  // An event about entry e, and its record in the change feed.
  void emit(KeyEventCause cause, const entry_type& e) {
    notify_.events().push(cause, e.key);
    if (EXPIRING_UNLIKELY(notify_.recording())) record_(*this, cause, e, FieldOp::none, nullptr);
  }
  // A field change of entry e's hash: its event, and its record with the fields concerned
  // (`fields` is read only while recording; Change::field_op and Change::fields, D32).
  void emit_fields(KeyEventCause cause, const entry_type& e, FieldOp op, const V* fields) {
    notify_.events().push(cause, e.key);
    if (EXPIRING_UNLIKELY(notify_.recording())) record_(*this, cause, e, op, fields);
  }
  // RENAME within the store: the two events, one record.
  void renamed(const entry_type& from, const entry_type& to) { notify_.renamed(from.key, subject(to)); }
  // The end of a call: its feed unit closes, then its events are dispatched.
  void flush() {
    notify_.end_call([this](V& v) { lazy_free(v); });
  }
  // The record of a change that leaves entry e in place (reached through record_ by emit(),
  // installed with the first feed: the feed is optional).
  static void feed_change_hook(Engine& self, KeyEventCause cause, const entry_type& e, FieldOp op, const V* fields) {
    self.feed_change(cause, e, op, fields);
  }
  EXPIRING_NOINLINE void feed_change(KeyEventCause cause, const entry_type& e, FieldOp op = FieldOp::none,
                                     const V* fields = nullptr) {
    bool emptied = false;
    if constexpr (kHashes) {  // an emptied hash is deleted next: its DEL is the record
      const auto* m = hash_value_traits<V>::map(e.value);
      emptied = m != nullptr && m->empty();
    }
    notify_.changed(cause, subject(e), access_.idle_ms() != 0, emptied, op, fields);
  }
  typename Notifier<K, V>::Subject subject(const entry_type& e) const noexcept {
    return {e.key, e.value, &e, deadline_of(e)};
  }
  std::optional<std::int64_t> deadline_of(const entry_type& e) const noexcept {
    if (!ks_.is_volatile(e)) return std::nullopt;
    return e.deadline;
  }
  // The verb of a deletion by a deadline already past (EXPIRE family, GETEX, SET ... PXAT):
  // Redis's DEL, or UNLINK under lazyfree-lazy-expire.
  ChangeOp past_deadline_verb() const noexcept {
    return options_.lazyfree_lazy_expire ? ChangeOp::unlink : ChangeOp::del;
  }

  // ---- lookups and removal ----

  // Finds a live key; a stale one is reclaimed (cause `expired`) and reported missing.
  // Access::read counts keyspace hits/misses (Redis's lookupKeyRead vs lookupKeyWrite).
  template <class KK>
  slot_iterator lookup(const KK& lk, std::uint64_t h, std::int64_t now, detail::Access access,
                       detail::Touch touch = detail::Touch::yes) {
    const bool read = access == detail::Access::read;
    const auto it = ks_.find(lk, h);
    if (it != ks_.end() && !ks_.entry(it).is_stale(now)) {
      if (read) ++stats_.keyspace_hits;
      if (EXPIRING_UNLIKELY(access_.read_hook()) && touch == detail::Touch::yes) return touch_(*this, it, now, access);
      return it;
    }
    return lookup_missed(it, now, read);
  }
  // lookup() of a missing or stale key (out of line: the hit's path stays short).
  EXPIRING_NOINLINE slot_iterator lookup_missed(slot_iterator it, std::int64_t now, bool read) {
    if (it != ks_.end()) {
      if (EXPIRING_UNLIKELY(!replica().reclaims_on_read()) && read) {  // stale, left in place
        ++stats_.keyspace_misses;
        return ks_.end();
      }
      expire_entry(it, now);
    }
    if (read) ++stats_.keyspace_misses;
    return ks_.end();
  }
  // The slot of a live key that has a TTL, or kNoPos (reclaims nothing, counts nothing): what
  // the short paths of set() and the EXPIRE family start from (see plain_writes()).
  template <class KK>
  std::uint32_t find_live_volatile(const KK& lk, std::uint64_t h, std::int64_t now) const {
    const std::uint32_t i = ks_.find_index(lk, h);
    return i != kNoPos && !ks_.entry(i).is_stale(now) && ks_.is_volatile(i) ? i : kNoPos;
  }
  template <class KK>
  bool read_probe(const KK& key, detail::Touch touch) {
    const std::int64_t now = now_ms();
    const auto& lk = lookup_key(key);
    const bool found = lookup(lk, ks_.hash_of(lk), now, detail::Access::read, touch) != ks_.end();
    ++(found ? probe_hits_ : probe_misses_);
    flush();
    return found;
  }
  // DEL / UNLINK: a write lookup, then removal (cause `del`); `lazy` as remove().
  template <class KK>
  bool write_delete(const KK& key, bool lazy, ChangeOp verb) {
    const std::int64_t now = now_ms();
    const auto& lk = lookup_key(key);
    auto it = lookup(lk, ks_.hash_of(lk), now, detail::Access::write);
    const bool found = it != ks_.end();
    if (found) remove(it, KeyEventCause::del, lazy, verb);
    flush();
    return found;
  }
  // A live key's entry index without side effects (no statistics, no lazy deletion);
  // detail::kNoPos when the key is missing or stale.
  template <class KK>
  std::uint32_t quiet_index(const KK& key, std::int64_t now) const {
    const auto& lk = lookup_key(key);
    const std::uint32_t i = ks_.find_index(lk, ks_.hash_of(lk));
    return i == detail::kNoPos || ks_.entry(i).is_stale(now) ? detail::kNoPos : i;
  }
  // The weigher's sum over every entry. O(size).
  std::size_t weigh_all() const {
    std::size_t sum = 0;
    for (const entry_type& e : ks_.entries()) sum += weight(e);
    return sum;
  }
  // `lazy`: the value goes to the lazy-free queue (if lazy free is enabled). `verb`: the
  // change feed's record of a removal by the caller (cause `del`): DEL or UNLINK.
  void remove(slot_iterator it, KeyEventCause cause, bool lazy = false, ChangeOp verb = ChangeOp::del) {
    if (EXPIRING_UNLIKELY(notify_.recording())) {
      notify_.removed(cause, ks_.entry(it).key, verb, options_.lazyfree_lazy_eviction);
    }
    lazy = lazy && lazy_.enabled();
    ks_.erase(it, [&](entry_type& e) {
      unaccount(e);
      if (notify_.events().wants(cause)) {
        notify_.events().push_removed(cause, std::move(e.key), std::optional<V>(std::move(e.value)), lazy);
      } else if (lazy) {
        lazy_free(e.value);
      }
    });
  }
  void lazy_free(V& v) noexcept { lazy_.push(v); }
  // Replaces a stored value; with Options::lazyfree_lazy_server_del the old one is lazily
  // freed. The new value is built first, so a throwing copy changes nothing.
  template <class VV>
  void replace_value(V& slot, VV&& value) {
    if (options_.lazyfree_lazy_server_del && lazy_.enabled()) {
      V old = std::exchange(slot, V(std::forward<VV>(value)));
      lazy_free(old);
    } else {
      slot = std::forward<VV>(value);
    }
  }
  // An overwrite of entry i's value (SET of a stored key, a replayed SET): replace_value(),
  // its memory accounted again (as before it, if the copy throws), its access data touched.
  template <class VV>
  void overwrite(std::uint32_t i, VV&& value, std::int64_t now) {
    entry_type& e = ks_.entry(i);
    unaccount(e);
    try {
      replace_value(e.value, std::forward<VV>(value));
    } catch (...) {
      account(e);
      throw;
    }
    account(e);
    if (access_.words()) touch_access(i, now);
  }

  // ---- memory accounting and eviction ----

  static constexpr bool is_lfu(EvictionPolicy p) noexcept { return AccessTracker::is_lfu(p); }
  // Derives the flags from the options; allocates or frees the access array as needed.
  void update_eviction_flags() { set_eviction_flags([this] { return weigh_all(); }); }
  // weigh_all(): the keyspace's weight, asked for when the memory limit turns on.
  template <class WeighAll>
  void set_eviction_flags(WeighAll&& weigh_all) {
    evict_ = &Engine::evict_hook;
    install_touch();
    gov_.set_limits(options_.maxmemory, options_.max_entries, weigh_all);
    const bool want = AccessTracker::wants_words(gov_.bounded(), options_.maxmemory_policy);
    if (want != access_.words()) ks_.enable_access(want);
    access_.set_words(want);
    update_plain_writes();
  }
  // Whether a write needs none of the optional rooms: no memory or entry bound (so no
  // admission, eviction or weighing), no access data or idle TTL, no lazy free of replaced
  // values, no change feed, and no listener of `set` or `expire`. set() of a live key is then
  // a probe and two stores.
  bool plain_writes() const noexcept {
    if constexpr (kHashes) {
      return false;
    } else {
      return plain_writes_;
    }
  }
  // Recomputes plain_writes() after any of its parts changed: set_eviction_flags() (bounds,
  // access words), and the store's setters of the idle TTL, the feed and the listener.
  void update_plain_writes() noexcept {
    plain_writes_ = !gov_.bounded() && !access_.read_hook() && !options_.lazyfree_lazy_server_del && notify_.quiet_writes();
  }
  // ---- memory (the governor room: detail/memory.hpp) ----
  std::size_t weight(const entry_type& e) const noexcept { return gov_.weight(e.key, e.value); }
  void account(const entry_type& e) noexcept { gov_.account(e.key, e.value); }
  void unaccount(const entry_type& e) noexcept { gov_.unaccount(e.key, e.value); }
  // Whether used memory plus `incoming` bytes is above the limit.
  bool over_limit(std::size_t incoming = 0) const noexcept { return gov_.over_limit(options_.maxmemory, incoming); }
  // The weight of an entry about to be written from (key, value), before it exists.
  template <class KK, class VV>
  std::size_t incoming_weight(const KK& key, const VV& value) const {
    return gov_.incoming_weight(key, value);
  }
  template <class T, class U>
  static std::size_t predicted_heap_bytes(const U& u) {
    return MemoryGovernor<K, V>::template predicted_heap_bytes<T>(u);
  }
  double random_unit() { return static_cast<double>(draw() >> 11) * (1.0 / 9007199254740992.0); }
  std::uint64_t draw() { return options_.random ? options_.random() : next_random(); }

  // ---- access tracking (the access room: detail/access.hpp) ----
  // Access data of a new entry: the LRU clock, or LFU_INIT_VAL at this minute.
  void init_access(std::uint32_t i, std::int64_t now) noexcept {
    if (access_.words()) ks_.access(i) = AccessTracker::initial_word(options_, now);
  }
  void reset_access(std::int64_t now) noexcept {
    const std::size_t slots = ks_.slot_count();
    for (std::size_t i = ks_.next_occupied(0); i < slots; i = ks_.next_occupied(i + 1)) {
      init_access(static_cast<std::uint32_t>(i), now);
    }
  }
  // The access hook (touch_, installed with the first limit or idle TTL): out of line, and
  // returning its argument, so that a read without a limit or an idle TTL pays only the flag
  // test (nothing is kept alive across the call). Updates the LRU/LFU access data; a read also
  // moves an idle TTL (expire_after_access).
  static slot_iterator touched_hook(Engine& self, slot_iterator it, std::int64_t now, detail::Access access) {
    return self.touched(it, now, access);
  }
  slot_iterator touched(slot_iterator it, std::int64_t now, detail::Access access) {
    if (access_.words()) touch_access(it->index, now);
    if (access_.idle_ms() != 0 && access == detail::Access::read) {
      refresh_idle(it->index, now);
      const entry_type& e = ks_.entry(it);  // the deadline moved: that is a change to record
      notify_.deadline_moved(e.key, e.deadline);
    }
    return it;
  }
  void refresh_idle(std::uint32_t i, std::int64_t now) { ks_.set_deadline(i, prepared_idle_deadline(now)); }
  EXPIRING_NOINLINE std::int64_t prepared_idle_deadline(std::int64_t now) {
    const std::int64_t when = access_.idle_deadline(now);
    ks_.prepare_deadline(when);
    return when;
  }
  // An access to entry i updates its word (the LFU counter's increment draws a number).
  void touch_access(std::uint32_t i, std::int64_t now) {
    const double unit = is_lfu(options_.maxmemory_policy) ? random_unit() : 0.0;
    ks_.access(i) = AccessTracker::accessed_word(ks_.access(i), options_, now, unit);
  }
  // The eviction pool's score of entry i: higher = better to evict.
  std::uint64_t eviction_score(std::uint32_t i, std::int64_t now) const noexcept {
    return AccessTracker::score(access_.words() ? ks_.access(i) : 0, ks_.entry(i).deadline, options_, now);
  }
  // Redis performEvictions(): evicts until used memory is within the limit. False when the
  // policy cannot free enough.
  bool evict_to_limit(std::int64_t now, std::size_t incoming = 0);
  bool evict_to_entries(std::int64_t now, std::size_t target);
  // What the loop evicts down to: memory with `incoming` bytes to come, or `entries` keys.
  static constexpr std::size_t kNoEntryTarget = ~std::size_t{0};
  struct EvictionTarget {
    std::size_t incoming;
    std::size_t entries;  // kNoEntryTarget: the memory limit
  };
  static bool evict_hook(Engine& self, std::int64_t now, EvictionTarget t) { return self.evict_until(now, t); }
  bool evict_until(std::int64_t now, EvictionTarget t);
  // Options::max_entries is reached: whether a write of `lk` may go ahead (the key is present,
  // or eviction made room for it). Out of line, so that the write path keeps one probe's code.
  template <class KK>
  EXPIRING_NOINLINE bool room_for_key(const KK& lk, std::uint64_t h, std::int64_t now) {
    return ks_.find_entry(lk, h) != nullptr || evict_to_entries(now, options_.max_entries - 1);
  }
  void evict(slot_iterator victim) {
    ++stats_.evicted_keys;
    gov_.count_evicted(weight(ks_.entry(victim)));
    remove(victim, KeyEventCause::evicted, options_.lazyfree_lazy_eviction);
  }
  // The check before a write that may grow memory by up to `incoming` bytes: evicts until
  // used memory plus `incoming` fits the limit. A write that could not fit even in an empty
  // store (incoming + external memory above the limit) is refused before anything is evicted.
  bool make_room(std::int64_t now, std::size_t incoming = 0) {
    if (!over_limit(incoming) || gov_.in_command()) return true;
    if (incoming != 0 && gov_.over_limit_when_empty(options_.maxmemory, incoming)) return false;
    return evict_to_limit(now, incoming);
  }
  // Reclaims a stale key (cause `expired`) found at `now`, lazily or by tick() (`active`).
  void expire_entry(slot_iterator it, std::int64_t now, bool active = false) {
    const std::int64_t late = detail::saturating_sub(now, ks_.entry(it).deadline);
    auto& h = active ? stats_.expired_lateness.active : stats_.expired_lateness.lazy;
    ++h[static_cast<std::size_t>(LatenessHistogram::bucket_of(late < 0 ? 0 : late))];
    ++stats_.expired_keys;
    // Only the primary decides that a key expired: it sends the DEL (UNLINK under
    // lazyfree-lazy-expire).
    if (EXPIRING_UNLIKELY(notify_.recording())) {
      notify_.expired(ks_.entry(it).key, active, options_.lazyfree_lazy_expire);
    }
    remove(it, KeyEventCause::expired, options_.lazyfree_lazy_expire);
  }

  // Resolves an EX/PX/EXAT/PXAT argument of SET or GETEX to an absolute deadline
  // (semantics.md B §2.4 step 1): the value must be positive; the conversion must not overflow.
  // A relative EX/PX is then jittered (after validation: see Jitter).
  EXPIRING_INLINE Result<std::int64_t> resolve_positive(detail::ExpirySpec spec, std::int64_t now) {
    std::int64_t v = spec.value;
    if (spec.invalid || v <= 0) return Errc::invalid_expire_time;
    const bool seconds = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::exat;
    const bool relative = spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::px;
    if (relative && !spec.jitter.valid()) return Errc::out_of_range;
    if (seconds && !detail::seconds_to_ms(v, v)) return Errc::invalid_expire_time;
    if (!relative) return v;
    std::int64_t when = 0;
    if (!detail::checked_add(v, now, when)) return Errc::invalid_expire_time;
    return jittered(when, v, now, spec.jitter);
  }

  // TTL jitter: `when` = now + ttl_ms is a valid deadline and ttl_ms > 0. Returns now + ttl_ms
  // + d with d uniform in [-s, s], clamped to [now + 1, INT64_MAX] (see Jitter).
  EXPIRING_INLINE std::int64_t jittered(std::int64_t when, std::int64_t ttl_ms, std::int64_t now, Jitter j) {
    if (j.kind() == Jitter::Kind::inherit) j = options_.ttl_jitter;
    if (j.kind() == Jitter::Kind::none) return when;  // the usual case, without a call
    return jittered_by(when, ttl_ms, now, j);
  }
  std::int64_t jittered_by(std::int64_t when, std::int64_t ttl_ms, std::int64_t now, Jitter j) {
    const std::int64_t s = j.spread_for(ttl_ms);
    if (s <= 0) return when;
    const std::uint64_t us = static_cast<std::uint64_t>(s);
    const std::uint64_t range = 2 * us + 1;  // s <= INT64_MAX: at most 2^64 - 1
    const std::uint64_t r = (options_.random ? options_.random() : next_random()) % range;
    if (r >= us) {
      const std::uint64_t up = r - us;  // 0..s
      // INT64_MAX - when in unsigned arithmetic: at most 2^64 - 1 for any when (when may be
      // negative, where the signed difference overflows).
      const std::uint64_t room = static_cast<std::uint64_t>(detail::kInt64Max) - static_cast<std::uint64_t>(when);
      return up > room ? detail::kInt64Max : when + static_cast<std::int64_t>(up);
    }
    const std::uint64_t down = us - r;  // 1..s
    return down >= static_cast<std::uint64_t>(ttl_ms) ? now + 1 : when - static_cast<std::int64_t>(down);
  }

  Freshness freshness_of(const entry_type& e, std::int64_t now) const noexcept {
    if (!ks_.is_volatile(e)) return Freshness::fresh;
    const std::int64_t left = detail::saturating_sub(e.deadline, now);  // live: >= 0
    if (left < options_.stale_window_ms) return Freshness::stale;
    const std::int64_t refresh = detail::kInt64Max - options_.stale_window_ms < options_.refresh_window_ms
                                     ? detail::kInt64Max
                                     : options_.stale_window_ms + options_.refresh_window_ms;
    return left < refresh ? Freshness::refresh : Freshness::fresh;
  }
  static bool has_deadline(detail::ExpirySpec spec) noexcept {
    return spec.kind == detail::ExpiryKind::ex || spec.kind == detail::ExpiryKind::px ||
           spec.kind == detail::ExpiryKind::exat || spec.kind == detail::ExpiryKind::pxat;
  }

  // The value of an entry moved out before its erasure: its weight leaves used memory.
  void unaccount_moved(const entry_type& e, const V& moved) noexcept { gov_.unaccount(e.key, moved); }

  // ---- optional rooms ----
  // Eviction, access tracking and the change feed's records are reached through these
  // pointers, installed by the paths that can turn them on: set_eviction_flags() (the
  // constructor with options, and every limit and policy change) for evict_ and touch_,
  // set_expire_after_access() for touch_, install_feed() (set_change_feed()) for record_.
  // Until then a store runs without them, and a program whose stores never install them
  // compiles none of their code: a default-constructed store in a user's translation unit
  // pays for the probe and the expiry index, not for the memory governor's loop.
  void install_touch() noexcept { touch_ = &Engine::touched_hook; }
  void install_feed() noexcept { record_ = &Engine::feed_change_hook; }
  slot_iterator (*touch_)(Engine&, slot_iterator, std::int64_t, detail::Access) = nullptr;
  bool (*evict_)(Engine&, std::int64_t, EvictionTarget) = nullptr;
  void (*record_)(Engine&, KeyEventCause, const entry_type&, FieldOp, const V*) = nullptr;

  bool plain_writes_ = true;  // plain_writes(), kept by update_plain_writes()
  Clock clock_;
  keyspace_type ks_;
  Notifier<K, V> notify_;      // events and change-feed records (set_listener(), set_change_feed())
  MemoryGovernor<K, V> gov_;  // maxmemory: accounting, admission, eviction
  detail::LazyFree<V> lazy_;  // values removed lazily, waiting for tick() or the reclaimer
};

// Redis performEvictions() (evict.c), for one keyspace: evict the policy's best candidate
// until used memory is within the limit.
template <class K, class V, class H, class E, class C, class P>
bool Engine<K, V, H, E, C, P>::evict_to_limit(std::int64_t now, std::size_t incoming) {
  if (evict_ == nullptr) return !over_limit(incoming);  // no limit was ever set
  return evict_(*this, now, EvictionTarget{incoming, kNoEntryTarget});
}

// Options::max_entries: evicts the policy's best candidates until at most `target` keys are
// stored. False when the policy cannot (noeviction; volatile-* with no key with a TTL).
template <class K, class V, class H, class E, class C, class P>
bool Engine<K, V, H, E, C, P>::evict_to_entries(std::int64_t now, std::size_t target) {
  if (ks_.size() <= target) return true;
  if (evict_ == nullptr) return false;  // no bound was ever set: nothing may be evicted
  return evict_(*this, now, EvictionTarget{0, target});
}

// The one eviction loop of both bounds (one instantiation of the victim choice per store).
template <class K, class V, class H, class E, class C, class P>
EXPIRING_NOINLINE bool Engine<K, V, H, E, C, P>::evict_until(std::int64_t now, EvictionTarget t) {
  if (!replica().evicts()) return true;
  const EvictionPolicy policy = options_.maxmemory_policy;
  if (policy == EvictionPolicy::noeviction) return false;
  // The keyspace as the victim choice sees it (detail/eviction.hpp).
  struct Source final : EvictionSource {
    Engine& e;
    std::int64_t now;
    Source(Engine& engine, std::int64_t t) : e(engine), now(t) {}
    std::size_t population(bool allkeys) const override { return allkeys ? e.ks_.size() : e.ks_.expires_size(); }
    std::uint32_t sample(bool allkeys) override {
      const EvictionDraw next{this};
      return allkeys ? e.ks_.random_slot(next) : e.ks_.expiry().sample(next);
    }
    std::uint64_t draw() override { return e.draw(); }
    std::uint64_t score(std::uint32_t i) override { return e.eviction_score(i, now); }
    std::uint64_t hash_at(std::uint32_t i) const override { return e.ks_.hash_of(e.ks_.entry(i).key); }
    std::uint32_t locate(std::uint64_t hash, bool allkeys) const override {
      const std::uint32_t i = e.ks_.find_by_hash(hash);
      return i != kNoPos && (allkeys || e.ks_.is_volatile(e.ks_.entry(i))) ? i : kNoVictim;
    }
  } source(*this, now);
  return gov_.evict_while(
      source, policy, options_.maxmemory_samples,
      [&] { return t.entries == kNoEntryTarget ? over_limit(t.incoming) : ks_.size() > t.entries; },
      [&](std::uint32_t victim) { evict(ks_.slot_of(victim)); });
}

}  // namespace detail
}  // namespace expiring
