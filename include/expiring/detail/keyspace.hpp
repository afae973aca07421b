// expiring/detail/keyspace.hpp: the storage engine behind ExpiringStore.
//
// Design
// ------
// Two structures, each doing one job, plus an optional third:
//
//   table_    SlotTable<Entry> (table.hpp)  open-addressing table of {key, value, deadline},
//                                           stored inline in its slots
//   expiry_   VolatileBitmap or TimerWheel (expiry_index.hpp): the volatile keys by slot
//             index, never a copy of a key
//   access_   eviction's access data, one uint32 per slot, only while an LRU/LFU limit is set
//   fields_   hash values only (V is a FieldMap, or may hold one): the field index, a second
//             TimerWheel of the hashes that have volatile fields, each by its earliest field
//             deadline or a bound before it (FieldMap::earliest_bound()), over a per-slot
//             array of {deadline, wheel position} (16 bytes a slot) allocated with the first
//             volatile field
//
// Why this shape:
// * The deadline sits beside the key and the value, so a hit is one control group, then the
//   slot it points at, then a compare against the operation's `now`: the accesses of a raw
//   Swiss-table find and nothing else. Persistent entries hold INT64_MAX, so the read path
//   has no "is it volatile?" branch: `now > deadline` is never true for them.
// * The expiry index is Redis's separate `expires` dict reduced to what reclaiming needs: a
//   bit per slot (sampled policy) or a timer wheel of slot handles (time-ordered policy).
// * Eviction's access data (Redis's robj.lru: an LRU clock or an LFU counter, 4 bytes,
//   eviction.hpp) lives in a parallel array indexed by slot, allocated only while a memory
//   limit with an LRU/LFU policy is set, so entries do not grow for it and a store without a
//   limit pays nothing.
// * The field index is the key index's design again, one level up (docs/design/hash_fields.md):
//   a hash with volatile fields is one entry, whatever its number of fields, and a tick pops
//   the hashes whose earliest field may be due, in time order, instead of sampling (a small
//   hash whose earliest field was re-timed later keeps its old, earlier place until the tick
//   that reaches it scans it once and moves it to its exact one). Each
//   hash orders its own fields (field_map.hpp). Why the timer wheel, from the candidates:
//   the entry's deadline changes whenever the hash's earliest field does (HSET over it, an
//   HEXPIRE of it, its reclaiming), so the change must be O(1): a heap pays O(log n) and a
//   position handle anyway, and ebuckets-like time segments (Redis 7.4) pay a tree of buckets
//   for the same order the wheel's levels give. The wheel costs 4 bytes per indexed hash in
//   its buckets plus the 16-byte HashSlot per table slot: 0.26 bytes a field at 1e6 fields in
//   1e4 hashes. Measured through the store (bench/bench_hash_fields): reclaiming 1e6 fields of
//   1e4 hashes by tick() costs 0.90x the hdel() of the same fields, index included. What it
//   indexes is a parallel array rather than the entry, so that stores of other values pay
//   nothing and entries do not grow.
// * Entries are addressed by slot index (32 bits). Erasing never moves another entry, so a
//   pointer to a value survives the erasure (lazy or explicit) of other keys. Only a rehash
//   moves entries: growth, before an insertion into a full table, and compact(), which
//   tick() calls after a mass expiry. Each rehash fixes up the expiry index's handles and
//   the access array as it moves each entry.
//
// Invariants (checked by check_invariants(), exercised by the model test):
//   every occupied slot is found from its key's hash; the expiry index holds exactly the
//   volatile entries (checked by the index itself); a persistent entry's deadline is
//   INT64_MAX; expiry_.size() <= size(); access_ has one
//   element per slot while access is on, none otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../hash.hpp"
#include "arith.hpp"
#include "attributes.hpp"
#include "expiry_index.hpp"
#include "hash_value.hpp"
#include "table.hpp"

namespace expiring::detail {

inline constexpr std::uint32_t kNoPos = kNoExpiryPos;
static_assert(kNoPos == kNoSlot, "the expiry index and the table reserve the same index");
inline constexpr std::int64_t kNoDeadline = kInt64Max;
// Tables with fewer slots than this are never shrunk: not worth an allocation.
inline constexpr std::size_t kCompactMinCapacity = 4096;

// Heap bytes owned by a key or value beyond its sizeof: std::string's buffer when it is not
// stored inline.
// Other types report 0, unless they say with a `std::size_t heap_bytes() const` member.
template <class T, class = void>
struct has_heap_bytes : std::false_type {};
template <class T>
struct has_heap_bytes<T, std::void_t<decltype(std::declval<const T&>().heap_bytes())>> : std::true_type {};
template <class Ch, class Tr, class Al>
struct has_heap_bytes<std::basic_string<Ch, Tr, Al>, void> : std::true_type {};
template <class T>
std::size_t heap_bytes(const T& t) noexcept {
  if constexpr (has_heap_bytes<T>::value) {
    return t.heap_bytes();
  } else {
    return 0;
  }
}
template <class Ch, class Tr, class Al>
std::size_t heap_bytes(const std::basic_string<Ch, Tr, Al>& s) noexcept {
  // Whether the buffer is inline is detected by address, which works for any SSO size.
  const auto* data = reinterpret_cast<const char*>(s.data());
  const auto* self = reinterpret_cast<const char*>(&s);
  const bool inline_buffer = data >= self && data < self + sizeof(s);
  return inline_buffer ? 0 : (s.capacity() + 1) * sizeof(Ch);
}

// One slot's content. Meta is what the expiry index keeps per entry (nothing for the bitmap).
template <class K, class V, class Meta>
struct Entry : Meta {
  K key;
  V value;
  std::int64_t deadline;  // absolute Unix ms; kNoDeadline when persistent

  template <class KK, class... Args, std::enable_if_t<!std::is_same_v<std::decay_t<KK>, Entry>, int> = 0>
  explicit Entry(KK&& k, Args&&... args)
      : key(std::forward<KK>(k)), value(std::forward<Args>(args)...), deadline(kNoDeadline) {}

  // semantics.md D1/D2: alive at now == deadline.
  bool is_stale(std::int64_t now) const noexcept { return now > deadline; }
};

// The field index's view of one slot (hash values only): the hash's earliest field deadline
// and its place in the field wheel.
struct HashSlot {
  std::int64_t deadline = kNoDeadline;
  std::uint32_t exp_pos = kNoExpiryPos;
  std::uint16_t exp_bucket = 0;
  bool is_stale(std::int64_t now) const noexcept { return now > deadline; }
};
// What the field wheel indexes: one HashSlot per table slot (or none before the first).
class HashSlots {
 public:
  HashSlots() = default;
  explicit HashSlots(std::size_t n) : v_(n) {}
  HashSlot& operator[](std::uint32_t i) noexcept { return v_[i]; }
  const HashSlot& operator[](std::uint32_t i) const noexcept { return v_[i]; }
  std::size_t capacity() const noexcept { return v_.size(); }
  bool empty() const noexcept { return v_.empty(); }
  std::size_t bytes() const noexcept { return v_.capacity() * sizeof(HashSlot); }
  void release() noexcept { std::vector<HashSlot>().swap(v_); }
  void swap(HashSlots& o) noexcept { v_.swap(o.v_); }

 private:
  std::vector<HashSlot> v_;
};
struct FieldIndex {
  TimerWheel wheel;
  HashSlots slots;
};
struct NoFieldIndex {};

// A lookup counts keyspace hits/misses (Redis lookupKeyRead) or not (lookupKeyWrite), and
// updates the LRU/LFU access data or not (LOOKUP_NOTOUCH).
enum class Access : std::uint8_t { read, write };
enum class Touch : bool { no, yes };

// A slot, as the store names one it found: `it->index` is its slot index, end() is kNoPos.
struct SlotRef {
  std::uint32_t index;
  const SlotRef* operator->() const noexcept { return this; }
  friend bool operator==(SlotRef a, SlotRef b) noexcept { return a.index == b.index; }
  friend bool operator!=(SlotRef a, SlotRef b) noexcept { return a.index != b.index; }
};

template <class K, class V, class Hash, class KeyEqual, class ExpiryIndex>
class Keyspace {
 public:
  using expiry_index_type = ExpiryIndex;
  using entry_type = Entry<K, V, typename ExpiryIndex::entry_meta>;
  using table_type = SlotTable<entry_type>;
  using slot_iterator = SlotRef;
  // Whether values are hashes with field TTLs, which the field index tracks.
  static constexpr bool kHashes = hash_value_traits<V>::enabled;

  static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_move_assignable_v<K>,
                "expiring: keys must be nothrow-movable (a rehash moves entries)");
  static_assert(std::is_nothrow_move_constructible_v<V> && std::is_nothrow_move_assignable_v<V>,
                "expiring: values must be nothrow-movable (a rehash moves entries)");

  Keyspace(Hash hash, KeyEqual eq, std::uint64_t seed) : hasher_(std::move(hash)), eq_(std::move(eq)), seed_(seed) {}

  // ---- lookups ----------------------------------------------------------------------

  // The 64 bits a key is placed by. An avalanching hash (expiring::Hash, expiring::SipHash:
  // keyed, so seeded already) is used as is; any other is folded with the store's seed and
  // mixed, so that the table's fingerprint (low byte) and group (bits above) are usable even
  // from a weak user hash.
  template <class KK>
  std::uint64_t hash_of(const KK& key) const {
    return hash_from<KK>(static_cast<std::uint64_t>(hasher_(key)));
  }
  // hash_of(key) from hasher()(key), for a caller that has it already.
  template <class KK>
  std::uint64_t hash_from(std::uint64_t raw) const noexcept {
    if constexpr (is_avalanching<Hash>::value && sizeof(decltype(hasher_(std::declval<const KK&>()))) >= 8) {
      return raw;
    } else {
      return mix(raw ^ seed_);
    }
  }

  // Every output bit depends on every input bit: the fold of a 64x64 -> 128-bit product (or,
  // without 128-bit integers, a two-multiply finaliser).
  static std::uint64_t mix(std::uint64_t x) noexcept {
#if defined(__SIZEOF_INT128__) && (defined(__GNUC__) || defined(__clang__))
    __extension__ typedef unsigned __int128 u128;
    const u128 p = static_cast<u128>(x) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
#else
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
#endif
  }

  template <class KK>
  slot_iterator find(const KK& key, std::uint64_t h) const {
    return SlotRef{table_.find(h, [&](const entry_type& e) { return detail::keys_equal(eq_, e.key, key); })};
  }
  // The slot of the entry whose key's hash_of() is h, or kNoPos: a lookup by the 64-bit hash
  // alone (the eviction pool's candidates are hashes; detail/eviction.hpp).
  std::uint32_t find_by_hash(std::uint64_t h) const {
    return table_.find(h, [&](const entry_type& e) { return hash_of(e.key) == h; });
  }
  template <class KK>
  const entry_type* find_entry(const KK& key, std::uint64_t h) const {
    const std::uint32_t i = find(key, h).index;
    return i == kNoPos ? nullptr : &table_[i];
  }
  // The slot of a key's entry, or kNoPos.
  template <class KK>
  std::uint32_t find_index(const KK& key, std::uint64_t h) const {
    return find(key, h).index;
  }
  // get_many()'s two prefetch stages: the control group, then the likely slot.
  void prefetch_group(std::uint64_t h) const noexcept { table_.prefetch_group(h); }
  void prefetch_slot(std::uint64_t h) const noexcept { table_.prefetch_slot(h); }
  // A bulk insertion's second stage (a loader's): the free slot a new key of hash h takes.
  void prefetch_free_slot(std::uint64_t h) const noexcept { table_.prefetch_free_slot(h); }

  const Hash& hasher() const noexcept { return hasher_; }
  const KeyEqual& key_eq() const noexcept { return eq_; }
  template <class A, class B>
  bool keys_equal(const A& a, const B& b) const {
    return detail::keys_equal(eq_, a, b);
  }
  static slot_iterator slot_of(std::uint32_t i) noexcept { return SlotRef{i}; }
  static slot_iterator end() noexcept { return SlotRef{kNoPos}; }

  entry_type& entry(slot_iterator it) noexcept { return table_[it.index]; }
  const entry_type& entry(slot_iterator it) const noexcept { return table_[it.index]; }
  entry_type& entry(std::uint32_t i) noexcept { return table_[i]; }
  const entry_type& entry(std::uint32_t i) const noexcept { return table_[i]; }
  std::size_t size() const noexcept { return table_.size(); }

  // Slot indices run over 0 .. slot_count() - 1; occupied(i) says which hold an entry.
  std::size_t slot_count() const noexcept { return table_.capacity(); }
  bool occupied(std::uint32_t i) const noexcept { return table_.occupied(i); }
  // The first occupied slot at or after i, or slot_count().
  std::size_t next_occupied(std::size_t i) const noexcept { return table_.next_occupied(i); }
  // A uniformly random occupied slot, drawn from next(), a source of uniform 64-bit values:
  // random slots until one is occupied (expected slot_count()/size() draws; the table is at
  // least 1/8 full except between a mass expiry and the tick that shrinks it). After 64
  // empty draws it takes the first occupied slot after the last one, which is not uniform.
  // size() != 0.
  template <class Next>
  std::uint32_t random_slot(Next&& next) const {
    const std::size_t cap = table_.capacity();
    std::size_t i = 0;
    for (int tries = 0; tries < 64; ++tries) {
      i = static_cast<std::size_t>(next() % cap);
      if (table_.occupied(static_cast<std::uint32_t>(i))) return static_cast<std::uint32_t>(i);
    }
    i = table_.next_occupied(i);
    if (i == cap) i = table_.next_occupied(0);
    return static_cast<std::uint32_t>(i);
  }

  // The entries in slot order, for range-for.
  class const_entry_range {
   public:
    class iterator {
     public:
      iterator(const table_type* t, std::size_t i) : t_(t), i_(i) {}
      const entry_type& operator*() const noexcept { return (*t_)[static_cast<std::uint32_t>(i_)]; }
      iterator& operator++() noexcept {
        i_ = t_->next_occupied(i_ + 1);
        return *this;
      }
      bool operator!=(const iterator& o) const noexcept { return i_ != o.i_; }

     private:
      const table_type* t_;
      std::size_t i_;
    };
    explicit const_entry_range(const table_type* t) : t_(t) {}
    iterator begin() const { return iterator(t_, t_->next_occupied(0)); }
    iterator end() const { return iterator(t_, t_->capacity()); }

   private:
    const table_type* t_;
  };
  const_entry_range entries() const noexcept { return const_entry_range(&table_); }

  // Bumped by every rehash (which moves entries): SCAN's cursors carry it.
  std::uint32_t epoch() const noexcept { return epoch_; }

  // ---- insertion --------------------------------------------------------------------

  // Finds `probe_key`, or inserts an entry built from (key_arg, value_args...) with no TTL.
  // Returns {slot, inserted}; an insertion may rehash first (moving every entry; the
  // arguments may still refer into the table). Strong guarantee: if growing the table or
  // constructing the entry throws, nothing changed.
  template <class KK, class KeyArg, class... ValueArgs>
  std::pair<std::uint32_t, bool> try_emplace(const KK& probe_key, std::uint64_t h, KeyArg&& key_arg,
                                             ValueArgs&&... value_args) {
    const std::uint32_t found = find_index(probe_key, h);
    if (found != kNoPos) return {found, false};
    return {emplace_absent(h, std::forward<KeyArg>(key_arg), std::forward<ValueArgs>(value_args)...), true};
  }
  // try_emplace()'s insertion, for a key that find_index() just did not find (hash h): its
  // slot. Out of line, so that a caller's probe for an existing key stays small.
  template <class KeyArg, class... ValueArgs>
  EXPIRING_NOINLINE std::uint32_t emplace_absent(std::uint64_t h, KeyArg&& key_arg, ValueArgs&&... value_args) {
    std::uint32_t i = 0;
    if (table_.insert_grows()) {
      // The arguments may refer into the table (set(k2, *get(k1)), rename's moved value):
      // allocate, then build the entry, then move the table, which cannot fail.
      Staged st = stage(table_type::groups_for(table_.size() + 1));
      entry_type entry(std::forward<KeyArg>(key_arg), std::forward<ValueArgs>(value_args)...);
      commit(st);
      i = table_.emplace_new(h, std::move(entry));
    } else {
      i = table_.emplace_new(h, std::forward<KeyArg>(key_arg), std::forward<ValueArgs>(value_args)...);
    }
    if (access_on_) access_[i] = 0;
    return i;
  }

  // ---- erasure ----------------------------------------------------------------------

  // Removes the entry `it` names. `sink(entry&)` sees the entry just before it is destroyed
  // and may move its key and value out. No other entry moves.
  template <class Sink>
  void erase(slot_iterator it, Sink&& sink) {
    const std::uint32_t i = it.index;
    entry_type& e = table_[i];
    if (is_volatile(i)) expiry_.erase(table_, i);
    if constexpr (kHashes) unindex_hash(i);
    sink(e);
    table_.erase(i);
  }

  void clear() noexcept {
    table_.clear();
    expiry_.clear();
    if (access_on_) std::vector<std::uint32_t>().swap(access_);
    if constexpr (kHashes) {
      fields_.wheel.clear();
      fields_.slots.release();
    }
    ++epoch_;
  }

  void reserve(std::size_t n) {
    const std::size_t g = table_type::groups_for(n);
    if (g > table_.groups()) rehash_to(g);
  }

  // ---- access data (eviction) -------------------------------------------------------

  // Allocates the access array (all zero) or frees it.
  void enable_access(bool on) {
    if (on) {
      std::vector<std::uint32_t>(table_.capacity(), 0).swap(access_);
    } else {
      std::vector<std::uint32_t>().swap(access_);
    }
    access_on_ = on;
  }
  std::uint32_t& access(std::uint32_t i) noexcept { return access_[i]; }
  std::uint32_t access(std::uint32_t i) const noexcept { return access_[i]; }

  // After a mass expiry: when the table is at most 1/8 full, rehashes it into the smallest
  // table that fits (which also clears its overflow bits), if the estimated cost fits in
  // `budget_us`; otherwise leaves it for a later call. tick() pays this within its budget,
  // so that no later insertion pays for it and no tick overruns for it. Returns whether it
  // shrank the table. The estimate: ~30 ns to move an entry, and ~60 us per MB to release
  // the old block (freeing touched memory costs page-table work) and touch the new one.
  bool compact(std::int64_t budget_us) {
    const std::size_t cap = table_.capacity();
    if (cap < kCompactMinCapacity || table_.size() * 8 > cap) return false;
    const std::size_t new_groups = table_.size() == 0 ? 0 : table_type::groups_for(table_.size());
    if (new_groups >= table_.groups()) return false;
    const std::size_t released = table_.bytes() + access_.capacity() * sizeof(std::uint32_t);
    const auto cost_us = static_cast<std::int64_t>(released / 16384 + table_.size() * 3 / 100);
    if (cost_us > budget_us) return false;
    rehash_to(new_groups);
    expiry_.compact();
    if constexpr (kHashes) fields_.wheel.compact();
    return true;
  }

  // ---- deadlines ------------------------------------------------------------------

  std::size_t expires_size() const noexcept { return expiry_.size(); }
  ExpiryIndex& expiry() noexcept { return expiry_; }
  const ExpiryIndex& expiry() const noexcept { return expiry_; }
  table_type& entries_mut() noexcept { return table_; }
  // The table's addresses for an optimistic reader (SlotTable::View).
  typename table_type::View view() const noexcept { return table_.view(); }

  // Makes room so that the following set_deadline(.., when) cannot throw.
  void prepare_deadline(std::int64_t when) { expiry_.prepare(when, table_.capacity()); }

  // Whether entry i has a TTL. Every entry with a deadline other than kNoDeadline has one; a
  // TTL of exactly INT64_MAX is told apart by the expiry index.
  bool is_volatile(std::uint32_t i) const noexcept {
    return table_[i].deadline != kNoDeadline || expiry_.contains(table_, i);
  }
  bool is_volatile(const entry_type& e) const noexcept { return is_volatile(table_.index_of(e)); }

  // Gives entry i the deadline `when` (adding it to the expiry index if it had none). Call
  // prepare_deadline(when) first for the no-throw guarantee.
  void set_deadline(std::uint32_t i, std::int64_t when) {
    entry_type& e = table_[i];
    const std::int64_t old = e.deadline;
    const bool had = is_volatile(i);
    e.deadline = when;
    try {
      if (had) {
        expiry_.reschedule(table_, i, old);
      } else {
        expiry_.insert(table_, i);
      }
    } catch (...) {
      e.deadline = old;
      throw;
    }
  }

  // Moves the deadline of entry i, which has a TTL, to `when`; prepare_retime(when) first,
  // after which retime() cannot throw. With the bitmap index, a store and nothing else.
  void prepare_retime(std::int64_t when) {
    if constexpr (!ExpiryIndex::kRetimeInPlace) prepare_deadline(when);
  }
  void retime(std::uint32_t i, std::int64_t when) noexcept {
    if constexpr (ExpiryIndex::kRetimeInPlace) {
      table_[i].deadline = when;
    } else {
      set_deadline(i, when);  // cannot throw after prepare_deadline(when)
    }
  }

  // Removes entry i's deadline, if any. Returns whether it had one.
  bool clear_deadline(std::uint32_t i) noexcept {
    if (!is_volatile(i)) return false;
    expiry_.erase(table_, i);
    table_[i].deadline = kNoDeadline;
    return true;
  }

  // Bytes of the tables (not counting heap blocks owned by keys and values).
  std::size_t table_bytes() const noexcept {
    std::size_t n = table_.bytes() + expiry_.bytes() + access_.capacity() * sizeof(std::uint32_t);
    if constexpr (kHashes) n += fields_.slots.bytes() + fields_.wheel.bytes();
    return n;
  }

  // ---- the field index (hash values only) -----------------------------------------

  // Whether entry i's hash is in the field index.
  bool hash_indexed(std::uint32_t i) const noexcept {
    if constexpr (kHashes) {
      return !fields_.slots.empty() && fields_.slots[i].exp_pos != kNoExpiryPos;
    } else {
      return false;
    }
  }
  // The earliest field deadline entry i is indexed by (kNoDeadline when it is not).
  std::int64_t hash_deadline(std::uint32_t i) const noexcept {
    return hash_indexed(i) ? fields_.slots[i].deadline : kNoDeadline;
  }
  // Indexes entry i's hash by `earliest` (kNoDeadline: takes it out). `now` starts an empty
  // wheel's clock. May throw (allocation) before it changes anything.
  void index_hash(std::uint32_t i, std::int64_t earliest, std::int64_t now) {
    static_assert(kHashes, "the field index exists for hash values only");
    if (earliest == kNoDeadline) {
      unindex_hash(i);
      return;
    }
    if (fields_.slots.empty()) HashSlots(table_.capacity()).swap(fields_.slots);
    if (fields_.wheel.size() == 0) fields_.wheel.sync(now);
    fields_.wheel.prepare(earliest, 0);  // room in the target bucket: what follows cannot throw
    HashSlot& hs = fields_.slots[i];
    const std::int64_t old = hs.deadline;
    const bool had = hs.exp_pos != kNoExpiryPos;
    hs.deadline = earliest;
    if (had) {
      fields_.wheel.reschedule(fields_.slots, i, old);
    } else {
      fields_.wheel.insert(fields_.slots, i);
    }
  }
  void unindex_hash(std::uint32_t i) noexcept {
    if constexpr (kHashes) {
      if (!hash_indexed(i)) return;
      fields_.wheel.erase(fields_.slots, i);
      fields_.slots[i].deadline = kNoDeadline;
    }
  }
  // Hashes in the field index (Redis INFO keyspace `subexpiry`).
  std::size_t hashes_indexed() const noexcept {
    if constexpr (kHashes) {
      return fields_.wheel.size();
    } else {
      return 0;
    }
  }
  // tick()'s field cycle: TimerWheel::advance over the indexed hashes. reclaim(i) must take
  // entry i out of the wheel or re-index it later than `now` (or stop the budget); ahead(i,
  // TimerWheel::Ahead) announces the entries reclaimed next, for prefetching.
  template <class Reclaim, class Budget, class Ahead>
  void advance_hashes(std::int64_t now, Reclaim&& reclaim, Budget&& budget, Ahead&& ahead) {
    if constexpr (kHashes) {
      if (fields_.wheel.size() != 0) fields_.wheel.advance(fields_.slots, now, reclaim, budget, ahead);
    }
  }
  // Prefetches slot i's control byte, which erasing entry i writes (a hint).
  void prefetch_control(std::uint32_t i) const noexcept { table_.prefetch_control(i); }
  // Prefetches entry i's lines (its key and value: a hint).
  void prefetch_entry(std::uint32_t i) const noexcept { prefetch_range(&table_[i], sizeof(entry_type)); }

  // ---- self-check (tests) -----------------------------------------------------------

  bool check_invariants() const {
    if (expiry_.size() > table_.size()) return false;
    if (access_on_ ? access_.size() != table_.capacity() : !access_.empty()) return false;
    if (!table_.check([&](const entry_type& e) { return hash_of(e.key); })) return false;
    std::size_t volatile_count = 0;
    for (const entry_type& e : entries()) {
      if (expiry_.contains(table_, table_.index_of(e))) {
        ++volatile_count;
      } else if (e.deadline != kNoDeadline) {
        return false;
      }
    }
    if constexpr (kHashes) {
      if (!fields_.slots.empty() && fields_.slots.capacity() != table_.capacity()) return false;
      std::size_t indexed = 0;
      for (std::uint32_t i = 0; i < fields_.slots.capacity(); ++i) {
        if (fields_.slots[i].exp_pos == kNoExpiryPos) continue;
        if (!table_.occupied(i)) return false;
        ++indexed;
      }
      if (indexed != fields_.wheel.size() || !fields_.wheel.check(fields_.slots)) return false;
    }
    return volatile_count == expiry_.size() && expiry_.check(table_);
  }

 private:
  // A rehash is two steps, so that everything that can throw happens before anything moves:
  // stage() allocates the new table, access array and expiry-index storage (may throw);
  // commit() moves every entry there, fixing up the expiry index's handles and the access
  // array (cannot throw). The hash must not throw in commit() (it did not for these keys
  // before): if it does, the program terminates rather than leave a half-moved table.
  struct Staged {
    typename table_type::Block block;
    std::vector<std::uint32_t> access;
    typename ExpiryIndex::staged expiry;
    HashSlots hashes;  // the field index's array for the new table, while it has one
  };
  Staged stage(std::size_t groups) const {
    Staged st{typename table_type::Block(groups), {}, expiry_.stage(groups * kGroupSlots), {}};
    if (access_on_) st.access.assign(groups * kGroupSlots, 0);
    if constexpr (kHashes) {
      if (!fields_.slots.empty()) HashSlots(groups * kGroupSlots).swap(st.hashes);
    }
    return st;
  }
  void commit(Staged& st) noexcept {
    table_.rehash(
        std::move(st.block), [this](const entry_type& e) noexcept { return hash_of(e.key); },
        [&](entry_type* slots, std::uint32_t to, std::uint32_t from) noexcept {
          expiry_.moved(st.expiry, slots, to, from);
          if (access_on_) st.access[to] = access_[from];
          if constexpr (kHashes) {
            if (!st.hashes.empty()) {
              st.hashes[to] = fields_.slots[from];
              TimerWheel::staged none;
              fields_.wheel.moved(none, st.hashes, to, from);
            }
          }
        });
    expiry_.adopt(st.expiry);
    if (access_on_) access_.swap(st.access);
    if constexpr (kHashes) {
      if (!st.hashes.empty()) fields_.slots.swap(st.hashes);
    }
    ++epoch_;
  }
  void rehash_to(std::size_t groups) {
    Staged st = stage(groups);
    commit(st);
  }

  table_type table_;
  ExpiryIndex expiry_;
  Hash hasher_;
  KeyEqual eq_;
  std::uint64_t seed_;
  std::vector<std::uint32_t> access_;  // one per slot while access_on_
  std::conditional_t<kHashes, FieldIndex, NoFieldIndex> fields_;
  bool access_on_ = false;
  std::uint32_t epoch_ = 0;
};

}  // namespace expiring::detail
