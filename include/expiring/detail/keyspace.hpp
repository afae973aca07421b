// expiring/detail/keyspace.hpp: the storage engine behind ExpiringStore.
//
// Design
// ------
// Three structures, each doing one job:
//
//   entries_  std::vector<Entry>       dense array of {key, value, deadline, exp_pos, hash}
//   index_    absl::flat_hash_set<Slot> Swiss table of {32 hash bits, entry index}
//   expiry_   DenseExpiryTable or TimerWheel: 4-byte handles of the volatile keys
//
// Why this shape:
// * The deadline sits beside the value, so a read is one hash probe plus one compare against
//   the operation's `now`. Persistent entries hold INT64_MAX, so the read path has no
//   "is it volatile?" branch: `now > deadline` is never true for them.
// * Keys are stored once, in entries_. The index holds 8 bytes per key and never touches a
//   key when it grows: each slot carries 32 bits of the (seeded) hash, and the table's hash
//   of a slot is derived from those bits alone.
// * The expiry index is Redis's separate `expires` dict reduced to what reclaiming needs:
//   4 bytes per volatile key, no copy of the key, O(1) removal through the entry's
//   back-index (exp_pos). Two policies (expiry_index.hpp): a dense table that a resumable
//   cursor sweeps by position without hashing (Redis's sampled cycle), or a hierarchical
//   timer wheel that hands tick() exactly the due keys.
// * Eviction's access data (Redis's robj.lru: an LRU clock or an LFU counter, 4 bytes,
//   eviction.hpp) lives in a parallel array access_, allocated only while a memory limit
//   with an LRU/LFU policy is set, so entries do not grow and a store without a limit pays
//   nothing for it. It follows entries_ exactly (same index, same moves).
// * Erasing an entry moves the last entry into its place (one extra index probe to repoint
//   that entry's slot), so entries_ stays dense: iteration is a linear scan, random_key()
//   is one random index, and memory is never fragmented by deletions.
//
// Invariants (checked by check_invariants(), exercised by the model test):
//   index_.size() == entries_.size(); each slot points at an entry with the same hash bits;
//   entry e is volatile iff e.exp_pos != kNoPos, and then the expiry index's handle at
//   e.exp_pos is e's index; a persistent entry's deadline is INT64_MAX;
//   expiry_.size() <= entries_.size().
//
// Invalidation: any insertion may reallocate entries_ (all value pointers invalidated); any
// erasure moves the last entry (pointers to it invalidated). The store documents this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "arith.hpp"
#include "expiry_index.hpp"

namespace expiring::detail {

inline constexpr std::uint32_t kNoPos = kNoExpiryPos;
inline constexpr std::int64_t kNoDeadline = kInt64Max;
// Entry indices are 32-bit and kNoPos is reserved.
inline constexpr std::size_t kMaxEntries = std::numeric_limits<std::uint32_t>::max() - 1;
// Tables smaller than this are never shrunk: not worth an allocation.
inline constexpr std::size_t kCompactMinCapacity = 4096;

// Heap bytes owned by a key or value beyond its sizeof: std::string's buffer when it is not
// stored inline. Other types report 0.
template <class T>
struct has_heap_bytes : std::false_type {};
template <class Ch, class Tr, class Al>
struct has_heap_bytes<std::basic_string<Ch, Tr, Al>> : std::true_type {};
template <class T>
std::size_t heap_bytes(const T&) noexcept {
  return 0;
}
template <class Ch, class Tr, class Al>
std::size_t heap_bytes(const std::basic_string<Ch, Tr, Al>& s) noexcept {
  // Whether the buffer is inline is detected by address, which works for any SSO size.
  const auto* data = reinterpret_cast<const char*>(s.data());
  const auto* self = reinterpret_cast<const char*>(&s);
  const bool inline_buffer = data >= self && data < self + sizeof(s);
  return inline_buffer ? 0 : (s.capacity() + 1) * sizeof(Ch);
}

template <class K, class V, class Meta>
struct Entry : Meta {
  K key;
  V value;
  std::int64_t deadline;   // absolute Unix ms; kNoDeadline when persistent
  std::uint32_t exp_pos;   // position in the expiry index; kNoPos when persistent
  std::uint32_t hash;      // the hash bits its index slot carries

  template <class KK, class... Args>
  Entry(std::uint32_t h, KK&& k, Args&&... args)
      : key(std::forward<KK>(k)), value(std::forward<Args>(args)...), deadline(kNoDeadline), exp_pos(kNoPos), hash(h) {}

  bool is_volatile() const noexcept { return exp_pos != kNoPos; }
  // semantics.md D1/D2: alive at now == deadline.
  bool is_stale(std::int64_t now) const noexcept { return now > deadline; }
};

// One index slot. `index` is mutable because moving an entry repoints its slot in place; the
// slot's hash depends only on `hash`, so this never breaks the table's invariants.
struct Slot {
  std::uint32_t hash;
  mutable std::uint32_t index;
};

// A lookup by key: compares hash bits first, then the key in entries_.
template <class E, class KK, class Eq>
struct KeyProbe {
  const KK& key;
  std::uint32_t hash;
  const E* entries;
  const Eq* eq;
};

// A lookup of the slot that points at a known entry index.
struct IndexProbe {
  std::uint32_t hash;
  std::uint32_t index;
};

// Spreads the 32 stored bits over 64: Swiss tables take control bits from the low 7 bits and
// the probe start from the bits above.
constexpr std::size_t expand_hash(std::uint32_t h) noexcept {
  if constexpr (sizeof(std::size_t) >= 8) {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(h) << 32) | h);
  } else {
    return static_cast<std::size_t>(h);
  }
}

struct SlotHash {
  using is_transparent = void;
  std::size_t operator()(const Slot& s) const noexcept { return expand_hash(s.hash); }
  template <class P>
  std::size_t operator()(const P& p) const noexcept { return expand_hash(p.hash); }
};

struct SlotEq {
  using is_transparent = void;
  bool operator()(const Slot& a, const Slot& b) const noexcept { return a.index == b.index; }
  bool operator()(const Slot& s, const IndexProbe& p) const noexcept { return s.index == p.index; }
  template <class E, class KK, class Eq>
  bool operator()(const Slot& s, const KeyProbe<E, KK, Eq>& p) const {
    return s.hash == p.hash && (*p.eq)(p.entries[s.index].key, p.key);
  }
};

template <class K, class V, class Hash, class KeyEqual, class ExpiryIndex>
class Keyspace {
 public:
  using expiry_index_type = ExpiryIndex;
  using entry_type = Entry<K, V, typename ExpiryIndex::entry_meta>;
  using index_type = absl::flat_hash_set<Slot, SlotHash, SlotEq>;
  using slot_iterator = typename index_type::iterator;

  static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_move_assignable_v<K>,
                "expiring: keys must be nothrow-movable (entries are moved on erase)");
  static_assert(std::is_nothrow_move_constructible_v<V> && std::is_nothrow_move_assignable_v<V>,
                "expiring: values must be nothrow-movable (entries are moved on erase)");

  Keyspace(Hash hash, KeyEqual eq, std::uint64_t seed) : hasher_(std::move(hash)), eq_(std::move(eq)), seed_(seed) {}

  // ---- lookups ----------------------------------------------------------------------

  // The 32 bits a key's slot carries: the user's hash folded with the store's seed.
  template <class KK>
  std::uint32_t hash_of(const KK& key) const {
    const auto h = static_cast<std::uint64_t>(hasher_(key));
    return static_cast<std::uint32_t>(((h ^ seed_) * 0x9E3779B97F4A7C15ull) >> 32);
  }

  template <class KK>
  slot_iterator find(const KK& key, std::uint32_t h) {
    return index_.find(KeyProbe<entry_type, KK, KeyEqual>{key, h, entries_.data(), &eq_});
  }
  template <class KK>
  const entry_type* find_entry(const KK& key, std::uint32_t h) const {
    auto it = index_.find(KeyProbe<entry_type, KK, KeyEqual>{key, h, entries_.data(), &eq_});
    return it == index_.end() ? nullptr : &entries_[it->index];
  }
  const Hash& hasher() const noexcept { return hasher_; }
  template <class A, class B>
  bool keys_equal(const A& a, const B& b) const {
    return eq_(a, b);
  }
  // The index of a key's entry, or kNoPos.
  template <class KK>
  std::uint32_t find_index(const KK& key, std::uint32_t h) const {
    auto it = index_.find(KeyProbe<entry_type, KK, KeyEqual>{key, h, entries_.data(), &eq_});
    return it == index_.end() ? kNoPos : it->index;
  }
  slot_iterator slot_of(std::uint32_t i) { return index_.find(IndexProbe{entries_[i].hash, i}); }
  slot_iterator end() noexcept { return index_.end(); }

  entry_type& entry(slot_iterator it) noexcept { return entries_[it->index]; }
  entry_type& entry(std::uint32_t i) noexcept { return entries_[i]; }
  const entry_type& entry(std::uint32_t i) const noexcept { return entries_[i]; }
  const std::vector<entry_type>& entries() const noexcept { return entries_; }
  std::size_t size() const noexcept { return entries_.size(); }

  // ---- insertion --------------------------------------------------------------------

  // Finds `probe_key`, or inserts an entry built from (key_arg, value_args...) with no TTL,
  // in one probe. Returns {entry index, inserted}. Strong guarantee: if constructing the
  // entry throws, nothing changed.
  template <class KK, class KeyArg, class... ValueArgs>
  std::pair<std::uint32_t, bool> try_emplace(const KK& probe_key, std::uint32_t h, KeyArg&& key_arg,
                                             ValueArgs&&... value_args) {
    if (entries_.size() >= kMaxEntries) throw std::length_error("expiring: too many keys (2^32 - 2 at most)");
    if (access_on_ && access_.size() == access_.capacity()) access_.reserve(access_.size() < 8 ? 8 : access_.size() * 2);
    const auto n = static_cast<std::uint32_t>(entries_.size());
    bool inserted = false;
    auto it = index_.lazy_emplace(KeyProbe<entry_type, KK, KeyEqual>{probe_key, h, entries_.data(), &eq_},
                                  [&](const auto& ctor) {
                                    ctor(Slot{h, n});
                                    inserted = true;
                                  });
    if (!inserted) return {it->index, false};
    try {
      entries_.emplace_back(h, std::forward<KeyArg>(key_arg), std::forward<ValueArgs>(value_args)...);
    } catch (...) {
      index_.erase(it);
      throw;
    }
    if (access_on_) access_.push_back(0);  // room reserved above: cannot throw
    return {n, true};
  }

  // ---- erasure ----------------------------------------------------------------------

  // Removes the entry `it` points at. `sink(entry&)` sees the entry just before it is
  // overwritten or destroyed and may move its key and value out. The last entry moves into
  // the hole.
  template <class Sink>
  void erase(slot_iterator it, Sink&& sink) {
    const std::uint32_t i = it->index;
    index_.erase(it);
    entry_type& e = entries_[i];
    if (e.is_volatile()) expiry_.erase(entries_, i);
    sink(e);
    const auto last = static_cast<std::uint32_t>(entries_.size() - 1);
    if (i != last) {
      entry_type& tail = entries_[last];
      index_.find(IndexProbe{tail.hash, last})->index = i;
      e = std::move(tail);
      if (e.is_volatile()) expiry_.moved(entries_, i);
      if (access_on_) access_[i] = access_[last];
    }
    entries_.pop_back();
    if (access_on_) access_.pop_back();
  }

  void clear() noexcept {
    index_.clear();
    entries_.clear();
    expiry_.clear();
    access_.clear();
  }

  void reserve(std::size_t n) {
    entries_.reserve(n);
    index_.reserve(n);
    if (access_on_) access_.reserve(n);
  }

  // ---- access data (eviction) -------------------------------------------------------

  // Allocates the access array (all zero) or frees it.
  void enable_access(bool on) {
    if (on) {
      std::vector<std::uint32_t> a(entries_.size(), 0);
      a.reserve(entries_.capacity());
      access_.swap(a);
    } else {
      std::vector<std::uint32_t>().swap(access_);
    }
    access_on_ = on;
  }
  std::uint32_t& access(std::uint32_t i) noexcept { return access_[i]; }
  std::uint32_t access(std::uint32_t i) const noexcept { return access_[i]; }

  // After a mass expiry: when the tables are at most 1/8 full, shrinks them to fit (which
  // also clears the Swiss table's tombstones), if the estimated cost fits in `budget_us` (an
  // empty table always: freeing it is O(1)). tick() pays this, so that no later insert pays
  // an in-place rehash of a table full of tombstones. Returns whether it shrank anything.
  bool compact(std::int64_t budget_us) {
    const std::size_t cap = index_.capacity();
    if (cap < kCompactMinCapacity || entries_.size() * 8 > cap) return false;
    // A rehash visits every slot (~1 ns each) and moves every key (~30 ns); entries move too.
    // Not worth starting unless it fits in what is left of the tick's budget.
    const auto cost_us = static_cast<std::int64_t>(cap / 1000 + entries_.size() * 3 / 100);
    if (entries_.size() != 0 && cost_us > budget_us) return false;
    index_.rehash(0);
    if (entries_.capacity() > 4 * entries_.size()) entries_.shrink_to_fit();
    if (access_.capacity() > 4 * access_.size()) access_.shrink_to_fit();
    expiry_.compact();
    return true;
  }

  // ---- deadlines ------------------------------------------------------------------

  std::size_t expires_size() const noexcept { return expiry_.size(); }
  ExpiryIndex& expiry() noexcept { return expiry_; }
  const ExpiryIndex& expiry() const noexcept { return expiry_; }
  std::vector<entry_type>& entries_mut() noexcept { return entries_; }

  // Makes room so that the following set_deadline(.., when) cannot throw.
  void prepare_deadline(std::int64_t when) { expiry_.prepare(when); }

  // Gives entry i the deadline `when` (adding it to the expiry index if it had none). Call
  // prepare_deadline(when) first for the no-throw guarantee.
  void set_deadline(std::uint32_t i, std::int64_t when) {
    entry_type& e = entries_[i];
    const std::int64_t old = e.deadline;
    e.deadline = when;
    try {
      if (e.is_volatile()) {
        expiry_.reschedule(entries_, i, old);
      } else {
        expiry_.insert(entries_, i);
      }
    } catch (...) {
      e.deadline = old;
      throw;
    }
  }

  // Removes entry i's deadline, if any. Returns whether it had one.
  bool clear_deadline(std::uint32_t i) noexcept {
    entry_type& e = entries_[i];
    if (!e.is_volatile()) return false;
    expiry_.erase(entries_, i);
    e.exp_pos = kNoPos;
    e.deadline = kNoDeadline;
    return true;
  }

  // Bytes of the three tables (not counting heap blocks owned by keys and values).
  std::size_t table_bytes() const noexcept {
    // A Swiss table holds one control byte per slot plus a cloned group (16 bytes).
    const std::size_t cap = index_.capacity();
    return entries_.capacity() * sizeof(entry_type) + (cap != 0 ? cap * (sizeof(Slot) + 1) + 16 : 0) +
           expiry_.bytes() + access_.capacity() * sizeof(std::uint32_t);
  }

  // ---- self-check (tests) -----------------------------------------------------------

  bool check_invariants() const {
    if (index_.size() != entries_.size() || expiry_.size() > entries_.size()) return false;
    if (access_on_ ? access_.size() != entries_.size() : !access_.empty()) return false;
    for (const Slot& s : index_) {
      if (s.index >= entries_.size() || entries_[s.index].hash != s.hash) return false;
    }
    std::size_t volatile_count = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const entry_type& e = entries_[i];
      if (e.is_volatile()) {
        ++volatile_count;
      } else if (e.deadline != kNoDeadline) {
        return false;
      }
      if (index_.find(IndexProbe{e.hash, static_cast<std::uint32_t>(i)}) == index_.end()) return false;
    }
    return volatile_count == expiry_.size() && expiry_.check(entries_);
  }

 private:
  std::vector<entry_type> entries_;
  index_type index_;
  ExpiryIndex expiry_;
  Hash hasher_;
  KeyEqual eq_;
  std::uint64_t seed_;
  std::vector<std::uint32_t> access_;  // parallel to entries_ while access_on_
  bool access_on_ = false;
};

}  // namespace expiring::detail
