// expiring/field_map.hpp: a hash value whose fields may each carry a deadline (Redis 7.4 HFE).
//
// WORK IN PROGRESS (issue 14): the container alone, not yet used by the store. The store will
// own the field hasher, reclaim stale fields lazily and in tick(), and raise the events.
//
// Design (docs/design/hash_fields.md, layout (d))
// -------------------------------------------------
//   fields_     the fields, dense: {name, value}, in no particular order; erasing moves the
//               last field into the hole
//   index_      SlotTable<uint32_t>: the position in fields_ of each name (4 bytes a slot)
//   deadlines_  int64 per field, parallel to fields_, allocated when the first field gets a
//               deadline (so a hash without field TTLs pays nothing); kNoDeadline = persistent
//   due_        the K earliest volatile fields as {deadline, position}, sorted by deadline, K
//               = clamp(size / 64, 16, 65536): 0.25 bytes a field at most. Built by one pass
//               (a threshold sampled from the deadlines, then every field at or below it,
//               ordered by a counting sort on deadline - min); popped front to back; an entry
//               that no longer holds (the field was re-timed, persisted, erased or moved) is
//               skipped when met. A field given an earlier deadline than the list's last
//               entry is inserted into it (the list's tail is dropped when full: the next pass
//               finds it again). Rebuilt when it runs dry.
// Why: the per-field expiry cost is the 8-byte deadline, exactly (the due-list adds at most
// 0.25 bytes), against Redis 7.4's ~16-25 bytes per field in hashtable-encoded hashes; and
// reclaiming in time order costs one pass per K fields reclaimed (~75 ns a field at 1e6
// fields in one hash, docs/design/hash_fields_duelist_experiment.cpp) instead of a rescan.
//
// The map does not hash: the owner passes its (keyed) field hasher to every call that looks a
// name up, so that a hash value does not carry a 192-byte hash secret of its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "detail/table.hpp"

namespace expiring {

template <class F, class V>
class FieldMap {
 public:
  static constexpr std::uint32_t npos = detail::kNoSlot;
  static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();

  struct Field {
    F name;
    V value;
  };

  FieldMap() = default;

  std::size_t size() const noexcept { return fields_.size(); }
  bool empty() const noexcept { return fields_.empty(); }
  // Fields with a deadline.
  std::size_t volatile_count() const noexcept { return volatile_; }

  Field& at(std::uint32_t pos) noexcept { return fields_[pos]; }
  const Field& at(std::uint32_t pos) const noexcept { return fields_[pos]; }
  // The field's deadline, kNoDeadline without one.
  std::int64_t deadline(std::uint32_t pos) const noexcept {
    return deadlines_.empty() ? kNoDeadline : deadlines_[pos];
  }

  // ---- lookup ------------------------------------------------------------------------------

  // The position of `name`, or npos. `hash` hashes names (and anything they are compared with).
  template <class Hasher, class N>
  std::uint32_t find(const Hasher& hash, const N& name) const {
    const std::uint32_t slot = find_slot(static_cast<std::uint64_t>(hash(name)), name);
    return slot == npos ? npos : index_[slot];
  }

  // ---- writing -----------------------------------------------------------------------------

  // HSET of one field: inserts it, or replaces its value and removes its deadline (Redis: an
  // overwrite clears the field's TTL). Returns {position, inserted}.
  template <class Hasher, class N, class VV>
  std::pair<std::uint32_t, bool> assign(const Hasher& hash, N&& name, VV&& value) {
    const std::uint64_t h = static_cast<std::uint64_t>(hash(name));
    const std::uint32_t slot = find_slot(h, name);
    if (slot != npos) {
      const std::uint32_t pos = index_[slot];
      fields_[pos].value = std::forward<VV>(value);
      clear_deadline(pos);
      return {pos, false};
    }
    return {insert_new(hash, h, std::forward<N>(name), std::forward<VV>(value)), true};
  }

  // Removes the field at `pos`; the last field moves into its place (positions of other
  // fields than the last are unchanged).
  template <class Hasher>
  void erase(const Hasher& hash, std::uint32_t pos) {
    const std::uint32_t last = static_cast<std::uint32_t>(fields_.size() - 1);
    index_.erase(slot_of(hash, pos));
    if (deadline(pos) != kNoDeadline) --volatile_;
    if (pos != last) {
      const std::uint32_t moved_slot = slot_of(hash, last);
      fields_[pos] = std::move(fields_[last]);
      if (!deadlines_.empty()) deadlines_[pos] = deadlines_[last];
      index_[moved_slot] = pos;
      // The moved field keeps its deadline; if it was in the due-list it is found again by
      // the next pass (its old position is skipped as stale, below).
      if (deadline(pos) != kNoDeadline) note_retimed(pos);
    }
    fields_.pop_back();
    if (!deadlines_.empty()) deadlines_.pop_back();
    if (fields_.empty()) release_all();
  }

  // Sets the field's deadline (any value; the caller validated it).
  void set_deadline(std::uint32_t pos, std::int64_t when) {
    if (deadlines_.empty()) deadlines_.assign(fields_.size(), kNoDeadline);
    if (deadlines_[pos] == kNoDeadline) ++volatile_;
    deadlines_[pos] = when;
    note_retimed(pos);
  }
  // HPERSIST of one field: true if it had a deadline.
  bool clear_deadline(std::uint32_t pos) noexcept {
    if (deadlines_.empty() || deadlines_[pos] == kNoDeadline) return false;
    deadlines_[pos] = kNoDeadline;
    --volatile_;
    return true;
  }

  // ---- time order ---------------------------------------------------------------------------

  // The earliest deadline of any field, kNoDeadline without volatile fields.
  std::int64_t earliest_deadline() {
    const std::uint32_t pos = due_front();
    return pos == npos ? kNoDeadline : deadlines_[pos];
  }

  // Removes, in deadline order, the fields whose deadline is before `now` (now > deadline), at
  // most `max` of them, calling on_reclaim(Field&, deadline) for each before it is erased.
  // Returns the number reclaimed.
  template <class Hasher, class OnReclaim>
  std::size_t reclaim_due(const Hasher& hash, std::int64_t now, std::size_t max, OnReclaim&& on_reclaim) {
    std::size_t n = 0;
    while (n < max) {
      const std::uint32_t pos = due_front();
      if (pos == npos || !(now > deadlines_[pos])) break;
      ++due_head_;
      on_reclaim(fields_[pos], deadlines_[pos]);
      erase(hash, pos);
      ++n;
    }
    return n;
  }

  // Heap bytes held (fields' own heap blocks not counted).
  std::size_t bytes() const noexcept {
    return fields_.capacity() * sizeof(Field) + deadlines_.capacity() * sizeof(std::int64_t) + index_.bytes() +
           due_.capacity() * sizeof(Due);
  }

 private:
  struct Due {
    std::int64_t deadline;
    std::uint32_t pos;
  };

  template <class N>
  std::uint32_t find_slot(std::uint64_t h, const N& name) const {
    return index_.find(h, [&](std::uint32_t pos) { return fields_[pos].name == name; });
  }
  template <class Hasher>
  std::uint32_t slot_of(const Hasher& hash, std::uint32_t pos) const {
    const std::uint64_t h = static_cast<std::uint64_t>(hash(fields_[pos].name));
    return index_.find(h, [&](std::uint32_t p) { return p == pos; });
  }

  template <class Hasher, class N, class VV>
  std::uint32_t insert_new(const Hasher& hash, std::uint64_t h, N&& name, VV&& value) {
    if (index_.insert_grows()) {
      const std::size_t groups = detail::SlotTable<std::uint32_t>::groups_for(index_.size() + 1);
      index_.rehash(
          groups, [&](std::uint32_t pos) { return static_cast<std::uint64_t>(hash(fields_[pos].name)); },
          [](auto&&...) {});
    }
    fields_.push_back(Field{F(std::forward<N>(name)), V(std::forward<VV>(value))});
    const auto pos = static_cast<std::uint32_t>(fields_.size() - 1);
    if (!deadlines_.empty()) deadlines_.push_back(kNoDeadline);
    index_.emplace_new(h, pos);
    return pos;
  }

  // The due-list entry at its head that still holds, rebuilding the list when it runs dry.
  std::uint32_t due_front() {
    for (;;) {
      while (due_head_ < due_.size()) {
        const Due& d = due_[due_head_];
        if (d.pos < fields_.size() && deadlines_[d.pos] == d.deadline) return d.pos;
        ++due_head_;  // stale: re-timed, persisted, erased or moved
      }
      if (volatile_ == 0) return npos;
      rebuild_due();
      if (due_.empty()) return npos;
    }
  }

  std::size_t due_capacity() const noexcept {
    return std::clamp<std::size_t>(fields_.size() / 64, 16, 65536);
  }

  // A field's deadline changed (or it moved). The list's invariant: every volatile field whose
  // deadline is below the list's last one has a valid entry in it (one whose recorded
  // deadline is its current one).
  void note_retimed(std::uint32_t pos) {
    if (due_head_ >= due_.size()) return;  // empty: the next pass sees it
    const Due d{deadlines_[pos], pos};
    if (d.deadline > due_.back().deadline) return;  // later than the list: the next pass sees it
    auto it = std::upper_bound(due_.begin() + static_cast<std::ptrdiff_t>(due_head_), due_.end(), d,
                               [](const Due& a, const Due& b) { return a.deadline < b.deadline; });
    due_.insert(it, d);
    if (due_.size() - due_head_ > due_capacity()) due_.pop_back();
  }

  void rebuild_due() {
    due_.clear();
    due_head_ = 0;
    const std::size_t k = due_capacity();
    // A threshold near the k-th smallest deadline, from every step-th field.
    std::int64_t threshold = kNoDeadline - 1;
    if (volatile_ > k) {
      std::vector<std::int64_t> sample;
      const std::size_t step = std::max<std::size_t>(1, fields_.size() / 256);
      for (std::size_t i = 0; i < fields_.size(); i += step) {
        if (deadlines_[i] != kNoDeadline) sample.push_back(deadlines_[i]);
      }
      if (!sample.empty()) {
        std::sort(sample.begin(), sample.end());
        const std::size_t at = sample.size() * k / volatile_;
        threshold = sample[std::min(sample.size() - 1, at)];
      }
    }
    std::int64_t lo = kNoDeadline;
    std::int64_t hi = std::numeric_limits<std::int64_t>::min();
    for (std::uint32_t i = 0; i < deadlines_.size(); ++i) {
      const std::int64_t d = deadlines_[i];
      if (d != kNoDeadline && d <= threshold) {
        due_.push_back(Due{d, i});
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
    }
    if (due_.empty()) {
      // The sampled threshold fell below every deadline: take the earliest alone.
      std::uint32_t best = npos;
      for (std::uint32_t i = 0; i < deadlines_.size(); ++i) {
        if (deadlines_[i] != kNoDeadline && (best == npos || deadlines_[i] < deadlines_[best])) best = i;
      }
      if (best != npos) due_.push_back(Due{deadlines_[best], best});
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
    // sort on deadline - lo, else a comparison sort. (hi - lo cannot overflow: both are
    // deadlines the caller validated, within Redis's 2^46 ms cap.)
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
    std::vector<std::int64_t>().swap(deadlines_);
    std::vector<Due>().swap(due_);
    due_head_ = 0;
    volatile_ = 0;
    index_.clear();
  }

  std::vector<Field> fields_;
  std::vector<std::int64_t> deadlines_;
  detail::SlotTable<std::uint32_t> index_;
  std::vector<Due> due_;
  std::size_t due_head_ = 0;
  std::size_t volatile_ = 0;
};

}  // namespace expiring
