// expiring/field_map.hpp: a hash value whose fields may each carry a deadline (Redis 7.4 HFE).
//
// A FieldMap is the value type of a hash: ExpiringStore<K, FieldMap<F, V>> has Redis's hash
// commands (HSET, HGET, ..., HEXPIRE, HTTL, HPERSIST) as members (hash_fields.hpp), and the
// store reclaims stale fields lazily and in tick(). Used on its own, it is a plain container:
// it never looks at a clock, and a field past its deadline stays until someone reclaims it.
//
// Design (docs/design/hash_fields.md, layout (d))
// -------------------------------------------------
//   fields_     the fields, dense: {name, value}, in no particular order; erasing moves the
//               last field into the hole
//   index_      PosIndex: the position in fields_ of each name (4 bytes a slot; a probe's
//               control bytes and positions share one cache line)
//   deadlines_  6 bytes per field, parallel to fields_ (a deadline is at most Redis's cap,
//               2^46 - 1 ms, so 48 bits hold it), allocated when the first field gets a
//               deadline (so a hash without field TTLs pays nothing) and reserved to fields_'s
//               capacity (no growth slack of its own); all ones = persistent
//   due_        the K earliest volatile fields as {deadline, position}, sorted by deadline, K
//               = clamp(size / 64, 2, 65536): 0.25 bytes a field at most; hashes of up to 128
//               fields have none (a scan of their deadlines is the pass). Built by one pass
//               (a threshold sampled from the deadlines, then every field at or below it,
//               ordered by a counting sort on deadline - min); popped front to back; an entry
//               that no longer holds (the field was re-timed, persisted, erased or moved) is
//               skipped when met. A field given an earlier deadline than the list's last
//               entry is inserted into it (the list's tail is dropped when full: the next pass
//               finds it again). Rebuilt when it runs dry.
// Why: the per-field expiry cost is the 6-byte deadline, grown by 1.25x (at most 7.5 bytes a
// field; the due-list adds at most 0.25), against Redis 7.4's ~16-25 bytes per field in hashtable-encoded hashes; and
// reclaiming in time order costs one pass per K fields reclaimed (~75 ns a field at 1e6
// fields in one hash, docs/design/hash_fields_duelist_experiment.cpp) instead of a rescan.
//
// The field hasher is shared, not owned: a map holds a shared_ptr to it (16 bytes), so that a
// hash value does not carry a 192-byte hash secret of its own. A store gives every hash it
// creates its own keyed hasher (Options::seed rekeys it); a map built on its own shares a
// process-wide one, randomly keyed. Field names may be chosen by an attacker either way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "detail/attributes.hpp"
#include "detail/hash_value.hpp"
#include "detail/pos_index.hpp"
#include "detail/table.hpp"
#include "hash.hpp"

namespace expiring {

// A hash's fields: names of type F, values of type V, and for each field an optional deadline
// in ms (a store's are Unix times, as its clock's now_ms()). Fields are addressed by position,
// 0 .. size() - 1, which erase() changes for the last field. FieldHash hashes names (one
// hasher shared by copies, see above) and FieldEq compares them.
template <class F, class V, class FieldHash = expiring::Hash<F>, class FieldEq = std::equal_to<>>
class FieldMap {
 public:
  // The field hasher, the field name type and the value type: FieldHash, F and V.
  using hasher = FieldHash;
  using field_type = F;
  using mapped_type = V;
  // The position find() returns for a name that is not there.
  static constexpr std::uint32_t npos = detail::kNoSlot;
  // The deadline of a field without one: INT64_MAX, later than any deadline.
  static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
  // The largest deadline a field can have: Redis 7.4's cap, 2^46 - 1 ms (year 4199).
  static constexpr std::int64_t kMaxDeadline = (std::int64_t{1} << 46) - 1;

  // A field as stored, what at() and iteration give; its deadline is kept apart (deadline()).
  struct Field {
    F name;   // not to be changed in place: the map's index hashes it
    V value;  // changed in place, or by assign() and replace_value()
  };

  // An empty map hashing with the process-wide default hasher, or with `hash`.
  FieldMap() : hash_(default_hasher()) {}
  // An empty map hashing with `hash` (null: the default one); a store passes its field hasher.
  explicit FieldMap(std::shared_ptr<const FieldHash> hash) : hash_(hash ? std::move(hash) : default_hasher()) {}
  // A copy shares the hasher and copies the fields and their deadlines.
  FieldMap(const FieldMap&) = default;
  FieldMap& operator=(const FieldMap&) = default;
  // A moved-from map is empty and usable, with the same hasher.
  FieldMap(FieldMap&& o) noexcept
      : hash_(o.hash_),
        fields_(std::move(o.fields_)),
        deadlines_(std::move(o.deadlines_)),
        index_(std::move(o.index_)),
        due_(std::move(o.due_)),
        due_head_(o.due_head_),
        volatile_(o.volatile_),
        small_earliest_(o.small_earliest_),
        small_earliest_known_(o.small_earliest_known_) {
    o.release_all();
  }
  // Takes o's fields and hasher; `o` is left empty and usable, with the same hasher.
  FieldMap& operator=(FieldMap&& o) noexcept {
    if (this != &o) {
      hash_ = o.hash_;
      fields_ = std::move(o.fields_);
      deadlines_ = std::move(o.deadlines_);
      index_ = std::move(o.index_);
      due_ = std::move(o.due_);
      due_head_ = o.due_head_;
      volatile_ = o.volatile_;
      small_earliest_ = o.small_earliest_;
      small_earliest_known_ = o.small_earliest_known_;
      o.release_all();
    }
    return *this;
  }

  // The field hasher: find(name, hash) and assign(name, value, hash) take a hash computed by it.
  const std::shared_ptr<const FieldHash>& hash_function() const noexcept { return hash_; }

  // The number of fields stored, stale ones included (the map never looks at a clock), and
  // whether it is 0.
  std::size_t size() const noexcept { return fields_.size(); }
  bool empty() const noexcept { return fields_.empty(); }
  // Fields with a deadline.
  std::size_t volatile_count() const noexcept { return volatile_; }

  // Whether the map keeps a deadline per field: from the first field given one on (erasing
  // that field or persisting it keeps the column), as Redis 7.4 keeps a hash that had a field
  // TTL in its "listpackex" encoding.
  bool has_deadline_column() const noexcept { return !deadlines_.empty(); }
  // Fields by position, 0 .. size() - 1, in no particular order (erasing moves the last field
  // into the hole). Iteration visits every stored field, stale ones included.
  Field& at(std::uint32_t pos) noexcept { return fields_[pos]; }
  const Field& at(std::uint32_t pos) const noexcept { return fields_[pos]; }
  using const_iterator = typename std::vector<Field>::const_iterator;
  const_iterator begin() const noexcept { return fields_.begin(); }
  const_iterator end() const noexcept { return fields_.end(); }
  // The field's deadline, kNoDeadline without one.
  std::int64_t deadline(std::uint32_t pos) const noexcept {
    return deadlines_.empty() ? kNoDeadline : load(pos);
  }

  // ---- lookup ------------------------------------------------------------------------------

  // The position of `name`, or npos. `hash` hashes names (and anything they are compared with).
  template <class N>
  std::uint32_t find(const N& name) const {
    if (fields_.empty()) return npos;
    return find(name, hash_of(name));
  }
  // The same with the name's hash already computed: `hash` must be (*hash_function())(name).
  // (A caller that knows the hasher before it has the map hashes while the map is fetched.)
  template <class N>
  std::uint32_t find(const N& name, std::uint64_t hash) const {
    return index_.find_pos(hash, [&](std::uint32_t pos) { return detail::keys_equal(FieldEq{}, fields_[pos].name, name); });
  }

  // ---- writing -----------------------------------------------------------------------------

  // HSET of one field: inserts it, or replaces its value and removes its deadline (Redis: an
  // overwrite clears the field's TTL). Returns {position, inserted}.
  template <class N, class VV>
  std::pair<std::uint32_t, bool> assign(N&& name, VV&& value) {
    const std::uint64_t h = hash_of(name);
    return assign(std::forward<N>(name), std::forward<VV>(value), h);
  }
  // The same with the name's hash already computed, as find(name, hash).
  template <class N, class VV>
  std::pair<std::uint32_t, bool> assign(N&& name, VV&& value, std::uint64_t h) {
    const std::uint32_t pos = find(name, h);
    if (pos != npos) {
      fields_[pos].value = std::forward<VV>(value);
      clear_deadline(pos);
      return {pos, false};
    }
    return {insert_new(h, std::forward<N>(name), std::forward<VV>(value)), true};
  }

  // Replaces the value of the field at `pos`, keeping its deadline (HINCRBY).
  template <class VV>
  void replace_value(std::uint32_t pos, VV&& value) {
    fields_[pos].value = std::forward<VV>(value);
  }

  // Removes the field at `pos`; the last field moves into its place (positions of other
  // fields than the last are unchanged).
  void erase(std::uint32_t pos) {
    const std::uint32_t last = static_cast<std::uint32_t>(fields_.size() - 1);
    index_.erase(slot_of(pos));
    if (const std::int64_t d = deadline(pos); d != kNoDeadline) {
      --volatile_;
      if (d == small_earliest_) small_earliest_known_ = false;
    }
    if (pos != last) {
      const std::uint32_t moved_slot = slot_of(last);
      fields_[pos] = std::move(fields_[last]);
      if (!deadlines_.empty()) store(pos, load(last));
      index_[moved_slot] = pos;
      // The moved field keeps its deadline; if it was in the due-list it is found again by
      // the next pass (its old position is skipped as stale, below).
      if (deadline(pos) != kNoDeadline) note_retimed(pos);
    }
    fields_.pop_back();
    if (!deadlines_.empty()) deadlines_.resize(deadlines_.size() - kDeadlineBytes);
    if (fields_.empty()) {
      release_all();
    } else if (fields_.size() <= kSmall && !due_.empty()) {
      // Small again: no list (note_retimed() ignores small hashes, so a kept list would go
      // stale and mislead due_front() once the hash grows again).
      std::vector<Due>().swap(due_);
      due_head_ = 0;
    }
  }

  // Sets the field's deadline, 0 <= when <= kMaxDeadline (the caller refuses others with
  // Redis's error; here they throw std::out_of_range).
  EXPIRING_INLINE void set_deadline(std::uint32_t pos, std::int64_t when) {
    if (EXPIRING_UNLIKELY(when < 0 || when > kMaxDeadline)) throw_beyond_cap();
    if (EXPIRING_UNLIKELY(deadlines_.empty())) add_deadline_column();
    const std::int64_t before = load(pos);
    if (before == kNoDeadline) ++volatile_;
    store(pos, when);
    if (fields_.size() > kSmall) note_retimed(pos);
    if (when <= small_earliest_) {
      small_earliest_ = when;  // (still exact if it was)
    } else if (before == small_earliest_) {
      small_earliest_known_ = false;  // the earliest moved later: a lower bound now
    }
  }
  // HPERSIST of one field: true if it had a deadline.
  bool clear_deadline(std::uint32_t pos) noexcept {
    if (deadlines_.empty()) return false;
    const std::int64_t before = load(pos);
    if (before == kNoDeadline) return false;
    store(pos, kNoDeadline);
    --volatile_;
    if (before == small_earliest_) small_earliest_known_ = false;
    return true;
  }

  // ---- time order ---------------------------------------------------------------------------

  // A deadline at or before every field's, without a scan (kNoDeadline without volatile
  // fields): a small hash's last known earliest, lowered by every deadline set since (a field
  // re-timed later, persisted or erased leaves it where it was); a large hash's exact
  // earliest, from its due-list. The store indexes a hash by it: a hash reached early by
  // tick() has nothing due, and is then indexed by its exact earliest, found by the reclaim's
  // own scan. So re-timing a field of a small hash never scans its deadlines.
  EXPIRING_INLINE std::int64_t earliest_bound() {
    if (volatile_ == 0) return kNoDeadline;
    if (fields_.size() <= kSmall) return small_earliest_;
    return earliest_deadline();
  }

  // The earliest deadline of any field, kNoDeadline without volatile fields.
  std::int64_t earliest_deadline() {
    if (volatile_ == 0) return kNoDeadline;
    if (fields_.size() <= kSmall && small_earliest_known_) return small_earliest_;
    const std::uint32_t pos = due_front();
    const std::int64_t d = pos == npos ? kNoDeadline : load(pos);
    if (fields_.size() <= kSmall) {
      small_earliest_ = d;
      small_earliest_known_ = true;
    }
    return d;
  }

  // Removes, in deadline order, the fields whose deadline is before `now` (now > deadline), at
  // most `max` of them, calling on_reclaim(Field&, deadline) for each before it is erased.
  // Returns the number reclaimed.
  template <class OnReclaim>
  std::size_t reclaim_due(std::int64_t now, std::size_t max, OnReclaim&& on_reclaim) {
    if (volatile_ == 0 || max == 0) return 0;
    if (fields_.size() <= kSmall) return reclaim_small(now, max, on_reclaim);
    std::size_t n = 0;
    while (n < max) {
      const std::uint32_t pos = due_front();
      if (pos == npos) break;
      const std::int64_t d = load(pos);
      if (!(now > d)) break;
      ++due_head_;
      on_reclaim(fields_[pos], d);
      erase(pos);
      ++n;
    }
    return n;
  }

  // A small hash: one scan collects the due fields, which are reported in deadline order and
  // then erased from the highest position down (erasing moves the last field into the hole,
  // and the last field is then never one still to erase).
  template <class OnReclaim>
  std::size_t reclaim_small(std::int64_t now, std::size_t max, OnReclaim& on_reclaim) {
    Due due[kSmall];
    std::size_t n = 0;
    // On raw 48-bit values, where "none" is the largest: a field is due when cut > its value
    // (now clamped into [0, kNone48], which no deadline reaches and none exceeds).
    const std::uint64_t cut = now <= 0 ? 0 : std::min(static_cast<std::uint64_t>(now), kNone48);
    std::uint64_t next48 = kNone48;  // the earliest deadline that stays
    const auto size = static_cast<std::uint32_t>(std::min(fields_.size(), kSmall));  // (<= kSmall already)
    for (std::uint32_t i = 0; i < size; ++i) {
      const std::uint64_t v = load48(i);
      if (cut > v) {
        due[n++] = Due{static_cast<std::int64_t>(v), i};
      } else {
        next48 = std::min(next48, v);
      }
    }
    std::int64_t next = next48 == kNone48 ? kNoDeadline : static_cast<std::int64_t>(next48);
    const auto by_deadline = [](const Due& a, const Due& b) {
      return a.deadline < b.deadline || (a.deadline == b.deadline && a.pos < b.pos);
    };
    if (n > 1) std::sort(due, due + n, by_deadline);
    if (n > max) {
      // The quota leaves some due fields (max < n <= kSmall: the index is in bounds).
      next = std::min(next, due[std::min(max, kSmall - 1)].deadline);
      n = max;
    }
    for (std::size_t j = 0; j < n; ++j) on_reclaim(fields_[due[j].pos], due[j].deadline);
    if (n > 1) std::sort(due, due + n, [](const Due& a, const Due& b) { return a.pos > b.pos; });
    for (std::size_t j = 0; j < n; ++j) erase(due[j].pos);
    if (fields_.size() <= kSmall) {  // (erasing can only shrink the hash)
      small_earliest_ = next;
      small_earliest_known_ = true;
    }
    return n;
  }

  // A hint for a caller about to reclaim this map's due fields (a store's tick() knows which
  // hashes come next): prefetches what the reclaim reads first, a small map's deadlines (it
  // scans them all) or a large one's due-list head, and the last field (an erase moves it).
  // Changes nothing.
  void prefetch_for_reclaim() const noexcept {
    if (volatile_ == 0) return;
    if (fields_.size() <= kSmall) {
      detail::prefetch_range(deadlines_.data(), deadlines_.size());
    } else if (due_head_ < due_.size()) {
      detail::prefetch_read(due_.data() + due_head_);
    }
    detail::prefetch_read(&fields_.back());
  }

  // Heap bytes held (fields' own heap blocks not counted).
  std::size_t bytes() const noexcept { return weighed_bytes() + due_.capacity() * sizeof(Due); }
  // bytes() without the due-list (at most 0.25 bytes a field), which queries of the time
  // order may rebuild: what a store's memory limit counts, so that a read never changes a
  // hash's weight.
  std::size_t weighed_bytes() const noexcept {
    return fields_.capacity() * sizeof(Field) + deadlines_.capacity() + index_.bytes();
  }
  // What a store's memory accounting counts for a hash value (detail/keyspace.hpp's
  // heap_bytes()): weighed_bytes(), which stays O(1).
  std::size_t heap_bytes() const noexcept { return weighed_bytes(); }

 private:
  struct Due {
    std::int64_t deadline;
    std::uint32_t pos;
  };

  // ---- 6-byte deadlines (little-endian bytes; all ones = none) ---------------------------
  static constexpr std::size_t kDeadlineBytes = 6;
  static constexpr std::uint64_t kNone48 = (std::uint64_t{1} << 48) - 1;
  // On a little-endian machine the bytes are a 4-byte and a 2-byte load (a scan of a small
  // hash's deadlines is then ~1 ns a field instead of a loop over six bytes).
  static constexpr bool kLittleEndian =
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
#else
      false;
#endif
  std::int64_t load(std::uint32_t pos) const noexcept {
    const std::uint64_t v = load48(pos);
    return v == kNone48 ? kNoDeadline : static_cast<std::int64_t>(v);
  }
  std::uint64_t load48(std::uint32_t pos) const noexcept {
    const unsigned char* b = deadlines_.data() + std::size_t{pos} * kDeadlineBytes;
    std::uint64_t v = 0;
    if constexpr (kLittleEndian) {
      std::uint32_t lo = 0;
      std::uint16_t hi = 0;
      std::memcpy(&lo, b, sizeof lo);
      std::memcpy(&hi, b + sizeof lo, sizeof hi);
      v = std::uint64_t{lo} | (std::uint64_t{hi} << 32);
    } else {
      for (std::size_t i = 0; i < kDeadlineBytes; ++i) v |= std::uint64_t{b[i]} << (8 * i);
    }
    return v;
  }
  void store(std::uint32_t pos, std::int64_t when) noexcept {
    const std::uint64_t v = when == kNoDeadline ? kNone48 : static_cast<std::uint64_t>(when);
    unsigned char* b = deadlines_.data() + std::size_t{pos} * kDeadlineBytes;
    if constexpr (kLittleEndian) {
      const auto lo = static_cast<std::uint32_t>(v);
      const auto hi = static_cast<std::uint16_t>(v >> 32);
      std::memcpy(b, &lo, sizeof lo);
      std::memcpy(b + sizeof lo, &hi, sizeof hi);
    } else {
      for (std::size_t i = 0; i < kDeadlineBytes; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    }
  }

  template <class N>
  std::uint64_t hash_of(const N& name) const {
    // A moved-from map has no hasher, and no fields: the default one is as good.
    return static_cast<std::uint64_t>((hash_ ? *hash_ : *default_hasher())(name));
  }
  std::uint32_t slot_of(std::uint32_t pos) const {
    const std::uint64_t h = hash_of(fields_[pos].name);
    return index_.find(h, [&](std::uint32_t p) { return p == pos; });
  }

  template <class N, class VV>
  std::uint32_t insert_new(std::uint64_t h, N&& name, VV&& value) {
    // Everything that can throw comes first: the index's growth, room for the field and its
    // deadline, the field itself. Then nothing can fail.
    if (index_.insert_grows()) {
      const std::size_t groups = detail::PosIndex::groups_for(index_.size() + 1);
      index_.rehash(groups, [&](std::uint32_t pos) { return hash_of(fields_[pos].name); });
    }
    if (fields_.size() == fields_.capacity()) fields_.reserve(fields_.size() < 4 ? 4 : fields_.size() * 2);
    // Geometric growth by 1.25x (not the vector's own 2x): at most 7.5 bytes a field.
    const std::size_t want = (fields_.size() + 1) * kDeadlineBytes;
    if (!deadlines_.empty() && deadlines_.capacity() < want) {
      deadlines_.reserve(grown(fields_.size() + 1) * kDeadlineBytes);
    }
    Field field{F(std::forward<N>(name)), V(std::forward<VV>(value))};
    fields_.push_back(std::move(field));
    const auto pos = static_cast<std::uint32_t>(fields_.size() - 1);
    if (!deadlines_.empty()) deadlines_.insert(deadlines_.end(), kDeadlineBytes, static_cast<unsigned char>(0xFF));
    index_.emplace_new(h, pos);
    return pos;
  }

  [[noreturn]] EXPIRING_NOINLINE static void throw_beyond_cap() {
    throw std::out_of_range("expiring::FieldMap: deadline beyond 2^46 - 1 ms");
  }
  // The first deadline: the column, every field persistent.
  EXPIRING_NOINLINE void add_deadline_column() {
    deadlines_.reserve(grown(fields_.size()) * kDeadlineBytes);
    deadlines_.assign(fields_.size() * kDeadlineBytes, 0xFF);
  }

  // Room for n fields' deadlines and a quarter more.
  static std::size_t grown(std::size_t n) noexcept { return n + n / 4 + 1; }

  // Hashes of at most this many fields keep no due-list: a scan of their deadlines (at most
  // 768 bytes) finds the earliest.
  static constexpr std::size_t kSmall = 128;

  std::uint32_t earliest_by_scan() const noexcept {
    std::uint32_t best = npos;
    std::uint64_t best_d = kNone48;  // (raw values: "none" is the largest)
    const auto n = static_cast<std::uint32_t>(fields_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t d = load48(i);
      if (d < best_d) {
        best_d = d;
        best = i;
      }
    }
    return best;
  }

  // The volatile field with the earliest deadline (npos if none): the due-list entry at its
  // head that still holds, rebuilding the list when it runs dry; a scan for small hashes.
  std::uint32_t due_front() {
    if (volatile_ == 0) return npos;
    if (fields_.size() <= kSmall) {
      if (!due_.empty()) std::vector<Due>().swap(due_);  // shrunk below the threshold
      due_head_ = 0;
      return earliest_by_scan();
    }
    small_earliest_known_ = false;
    for (;;) {
      while (due_head_ < due_.size()) {
        const Due& d = due_[due_head_];
        if (d.pos < fields_.size() && load(d.pos) == d.deadline) return d.pos;
        ++due_head_;  // stale: re-timed, persisted, erased or moved
      }
      if (volatile_ == 0) return npos;
      rebuild_due();
      if (due_.empty()) return npos;
    }
  }

  // K: at most 16 bytes per 64 fields (0.25 bytes a field).
  std::size_t due_capacity() const noexcept {
    return std::clamp<std::size_t>(fields_.size() / 64, 2, 65536);
  }

  // A field's deadline changed (or it moved). The list's invariant: every volatile field whose
  // deadline is below the list's last one has a valid entry in it (one whose recorded
  // deadline is its current one). Never allocates (so erase() and set_deadline() cannot fail
  // half-way): the consumed head is dropped once it is as long as the list may be, and a
  // full list drops its last entry to make room (the next pass finds that field again). So
  // the list holds at most twice its capacity.
  void note_retimed(std::uint32_t pos) noexcept {
    if (fields_.size() <= kSmall || due_head_ >= due_.size()) return;  // no list: the next pass sees it
    const Due d{load(pos), pos};
    if (d.deadline > due_.back().deadline) return;  // later than the list: the next pass sees it
    if (due_head_ != 0 && due_head_ >= due_capacity()) {
      due_.erase(due_.begin(), due_.begin() + static_cast<std::ptrdiff_t>(due_head_));
      due_head_ = 0;
    }
    if (due_.size() == due_.capacity()) {
      due_.pop_back();
      if (due_head_ >= due_.size() || d.deadline > due_.back().deadline) return;
    }
    auto it = std::upper_bound(due_.begin() + static_cast<std::ptrdiff_t>(due_head_), due_.end(), d,
                               [](const Due& a, const Due& b) { return a.deadline < b.deadline; });
    due_.insert(it, d);  // within capacity: no allocation
    if (due_.size() - due_head_ > due_capacity()) due_.pop_back();
  }

  // An allocation failure leaves the list empty ("run dry"), which is a valid state: the next
  // query rebuilds it.
  void rebuild_due() {
    due_.clear();
    due_head_ = 0;
    try {
      rebuild_due_list();
    } catch (...) {
      due_.clear();
      throw;
    }
  }
  void rebuild_due_list() {
    const std::size_t k = due_capacity();
    // A threshold near the k-th smallest deadline, from every step-th field.
    std::int64_t threshold = kNoDeadline - 1;
    if (volatile_ > k) {
      std::vector<std::int64_t> sample;
      const std::size_t step = std::max<std::size_t>(1, fields_.size() / 256);
      for (std::size_t i = 0; i < fields_.size(); i += step) {
        const std::int64_t d = load(static_cast<std::uint32_t>(i));
        if (d != kNoDeadline) sample.push_back(d);
      }
      if (!sample.empty()) {
        std::sort(sample.begin(), sample.end());
        const std::size_t at = sample.size() * k / volatile_;
        threshold = sample[std::min(sample.size() - 1, at)];
      }
    }
    std::int64_t lo = kNoDeadline;
    std::int64_t hi = std::numeric_limits<std::int64_t>::min();
    const auto n = static_cast<std::uint32_t>(fields_.size());
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::int64_t d = load(i);
      if (d != kNoDeadline && d <= threshold) {
        due_.push_back(Due{d, i});
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
    }
    if (due_.empty()) {
      // The sampled threshold fell below every deadline: take the earliest alone.
      std::uint32_t best = npos;
      std::int64_t best_d = kNoDeadline;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::int64_t d = load(i);
        if (d < best_d) {
          best_d = d;
          best = i;
        }
      }
      if (best != npos) due_.push_back(Due{best_d, best});
      return;
    }
    const auto by_deadline = [](const Due& a, const Due& b) { return a.deadline < b.deadline; };
    if (due_.size() > 2 * k) {
      std::nth_element(due_.begin(), due_.begin() + static_cast<std::ptrdiff_t>(k), due_.end(), by_deadline);
      due_.resize(k);
      lo = hi = due_.front().deadline;
      for (const Due& d : due_) {
        lo = std::min(lo, d.deadline);
        hi = std::max(hi, d.deadline);
      }
    }
    // The span of the earliest deadlines is small (about k / n of the hash's): a counting
    // sort on deadline - lo, else a comparison sort (both are within [0, 2^46): no overflow).
    const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (span < (std::uint64_t{1} << 16) && due_.size() > 64) {
      std::vector<std::uint32_t> count(static_cast<std::size_t>(span) + 2, 0);
      for (const Due& d : due_) ++count[static_cast<std::size_t>(d.deadline - lo) + 1];
      for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
      std::vector<Due> out(due_.size());
      for (const Due& d : due_) out[count[static_cast<std::size_t>(d.deadline - lo)]++] = d;
      due_.swap(out);
    } else {
      std::sort(due_.begin(), due_.end(), by_deadline);
    }
  }

  void release_all() noexcept {
    std::vector<Field>().swap(fields_);
    std::vector<unsigned char>().swap(deadlines_);
    std::vector<Due>().swap(due_);
    due_head_ = 0;
    volatile_ = 0;
    small_earliest_ = kNoDeadline;
    small_earliest_known_ = false;
    index_.clear();
  }

  static const std::shared_ptr<const FieldHash>& default_hasher() {
    static const std::shared_ptr<const FieldHash> h = std::make_shared<const FieldHash>();
    return h;
  }

  std::shared_ptr<const FieldHash> hash_;
  std::vector<Field> fields_;
  std::vector<unsigned char> deadlines_;
  detail::PosIndex index_;
  std::vector<Due> due_;
  std::size_t due_head_ = 0;
  std::size_t volatile_ = 0;
  // Small hashes: the earliest deadline when small_earliest_known_, else a lower bound of it
  // (earliest_bound()). Every set_deadline() lowers it, whatever the hash's size, so that it
  // stays a bound when a large hash shrinks back.
  std::int64_t small_earliest_ = kNoDeadline;
  bool small_earliest_known_ = false;
};

// A FieldMap is a hash value (detail/hash_value.hpp).
template <class F, class W, class H, class E>
struct hash_value_traits<FieldMap<F, W, H, E>> {
  static constexpr bool enabled = true;   // a FieldMap is a hash
  using map_type = FieldMap<F, W, H, E>;  // the hash a value holds: the FieldMap itself
  // The hash `v` holds: `v` itself, never null.
  static map_type* map(map_type& v) noexcept { return &v; }
  // The same for a const value.
  static const map_type* map(const map_type& v) noexcept { return &v; }
  // An empty FieldMap hashing its fields with `h`.
  static map_type make(std::shared_ptr<const H> h) { return map_type(std::move(h)); }
};

}  // namespace expiring

// The hash members of a store of FieldMaps come with the type.
#include "hash_fields.hpp"
