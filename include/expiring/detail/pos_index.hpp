// expiring/detail/pos_index.hpp: a hash index from names to 32-bit positions, one cache line
// per probed group: a hash's field index (field_map.hpp).
//
// Design
// ------
// A FieldMap keeps its fields dense in a vector and finds them through this index, which
// holds only their positions. A lookup is then: the index's group, the position in it, the
// field at that position. With the control bytes and the positions in separate arrays (as
// SlotTable lays out its slots) that is three dependent cache misses in a large store; here a
// group is one 64-byte line holding both, so it is two, as in a map that stores its entries
// inline.
//
//   group = 16 control bytes | 12 positions (4 bytes each)   alignas(64)
//   control bytes 0..11: the slots' fingerprints (0 = empty, otherwise 8 bits of the hash,
//   never 0); byte 12: the overflow byte (bit b set when an insertion with fingerprint low
//   bits b found the group full and went on); bytes 13..15: always 0.
//
// Probing, overflow bits and erasure are SlotTable's (table.hpp): groups g, g+1, g+3, g+6,
// ... modulo a power-of-two group count; a lookup stops at the first group whose overflow bit
// for its fingerprint is clear; erasure clears a control byte, leaves no tombstone, and
// lowers the load the table may reach before its next rehash when the group has overflowed.
// Maximum load 7/8. An empty index allocates nothing. 64 bytes per 12 slots: 5.3 bytes a
// slot, as SlotTable<uint32_t>'s 76 per 15 (5.1).
//
// The index does not hash: FieldMap passes each name's 64-bit hash, and a function from
// position to hash to rehash().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "attributes.hpp"
#include "bits.hpp"
#include "table.hpp"

namespace expiring::detail {

class PosIndex {
 public:
  static constexpr std::size_t kSlots = 12;  // per group

  PosIndex() noexcept = default;
  // A copy has every position at the same slot.
  PosIndex(const PosIndex& o) : groups_(o.groups_), mask_(o.mask_), size_(o.size_), max_load_(o.max_load_) {
    if (o.groups_ == 0) return;
    g_ = allocate(o.groups_);
    std::memcpy(static_cast<void*>(g_), o.g_, o.groups_ * sizeof(Group));
  }
  PosIndex& operator=(const PosIndex& o) {
    if (this != &o) {
      PosIndex copy(o);
      swap(copy);
    }
    return *this;
  }
  PosIndex(PosIndex&& o) noexcept { swap(o); }
  PosIndex& operator=(PosIndex&& o) noexcept {
    if (this != &o) {
      clear();
      swap(o);
    }
    return *this;
  }
  ~PosIndex() { release(g_); }

  std::size_t size() const noexcept { return size_; }
  // Bytes of the allocation.
  std::size_t bytes() const noexcept { return groups_ * sizeof(Group); }

  // The position at slot i (a slot find() or emplace_new() returned).
  std::uint32_t& operator[](std::uint32_t i) noexcept { return g_[i / kSlots].pos[i % kSlots]; }
  std::uint32_t operator[](std::uint32_t i) const noexcept { return g_[i / kSlots].pos[i % kSlots]; }

  // The slot of the position p with hash h for which eq(p) holds, or kNoSlot.
  template <class Eq>
  std::uint32_t find(std::uint64_t h, Eq&& eq) const {
    return probe(h, eq, [](std::size_t g, std::size_t j, std::uint32_t) { return static_cast<std::uint32_t>(g * kSlots + j); });
  }
  // The position p with hash h for which eq(p) holds, or kNoSlot: find() without the slot
  // (the position is read from the group the probe is in, not recomputed from the slot).
  template <class Eq>
  EXPIRING_INLINE std::uint32_t find_pos(std::uint64_t h, Eq&& eq) const {
    return probe(h, eq, [](std::size_t, std::size_t, std::uint32_t p) { return p; });
  }

  // Whether the index is at its maximum load: the next insertion must rehash first.
  bool insert_grows() const noexcept { return size_ >= max_load_; }

  // Adds position p with hash h; returns its slot. Preconditions: !insert_grows(), and no
  // equal name is indexed.
  std::uint32_t emplace_new(std::uint64_t h, std::uint32_t p) noexcept {
    const unsigned char fp = fingerprint(h);
    std::size_t g = home(h);
    for (std::size_t step = 0;;) {
      Group& grp = g_[g];
      const std::uint32_t free = match(grp.ctrl, 0);
      if (free != 0) {
        const std::size_t j = static_cast<std::size_t>(lowest_bit(free));
        grp.ctrl[j] = fp;
        grp.pos[j] = p;
        ++size_;
        return static_cast<std::uint32_t>(g * kSlots + j);
      }
      grp.ctrl[kSlots] = static_cast<unsigned char>(grp.ctrl[kSlots] | ControlGroup::overflow_bit(fp));
      ++step;  // below its maximum load the index has a free slot: this loop ends
      g = (g + step) & mask_;
    }
  }

  void erase(std::uint32_t i) noexcept {
    Group& grp = g_[i / kSlots];
    grp.ctrl[i % kSlots] = 0;
    --size_;
    if (grp.ctrl[kSlots] != 0 && max_load_ > 0) --max_load_;
  }

  void clear() noexcept {
    release(g_);
    g_ = nullptr;
    groups_ = mask_ = size_ = max_load_ = 0;
  }

  // The smallest group count whose index holds n positions below its maximum load. Throws
  // std::length_error past 2^32 - 2 slots.
  static std::size_t groups_for(std::size_t n) {
    return power_of_two_groups(n, kSlots, "expiring: too many fields (2^32 - 2 slots at most)");
  }

  // Rebuilds the index with `groups` groups (at least groups_for(size())), each position p
  // at hash_of(p). Only the allocation may throw, and then nothing changed.
  template <class HashOf>
  void rehash(std::size_t groups, HashOf&& hash_of) {
    Group* fresh = allocate(groups);
    Group* old = g_;
    const std::size_t old_groups = groups_;
    g_ = fresh;
    groups_ = groups;
    mask_ = groups - 1;
    size_ = 0;
    max_load_ = groups * kSlots - groups * kSlots / 8;
    for (std::size_t g = 0; g < old_groups; ++g) {
      for (std::uint32_t m = match(old[g].ctrl, 0) ^ kSlotMask; m != 0; m &= m - 1) {
        const std::uint32_t p = old[g].pos[lowest_bit(m)];
        (void)emplace_new(static_cast<std::uint64_t>(hash_of(p)), p);
      }
    }
    release(old);
  }

  void swap(PosIndex& o) noexcept {
    std::swap(g_, o.g_);
    std::swap(groups_, o.groups_);
    std::swap(mask_, o.mask_);
    std::swap(size_, o.size_);
    std::swap(max_load_, o.max_load_);
  }

 private:
  struct alignas(64) Group {
    unsigned char ctrl[16];
    std::uint32_t pos[kSlots];
  };
  static_assert(sizeof(Group) == 64, "a group is one cache line");
  static constexpr std::uint32_t kSlotMask = (1u << kSlots) - 1;

  // The probe of find() and find_pos(): found(group, slot in it, position) of the position p
  // for which eq(p) holds, or kNoSlot.
  template <class Eq, class Found>
  EXPIRING_INLINE std::uint32_t probe(std::uint64_t h, Eq& eq, Found&& found) const {
    if (groups_ == 0) return kNoSlot;
    const unsigned char fp = fingerprint(h);
    std::size_t g = home(h);
    for (std::size_t step = 0; step <= mask_;) {
      const Group& grp = g_[g];
      for (std::uint32_t m = match(grp.ctrl, fp); m != 0; m &= m - 1) {
        const auto j = static_cast<std::size_t>(lowest_bit(m));
        if (eq(grp.pos[j])) return found(g, j, grp.pos[j]);
      }
      if ((grp.ctrl[kSlots] & ControlGroup::overflow_bit(fp)) == 0) return kNoSlot;
      ++step;
      g = (g + step) & mask_;
    }
    return kNoSlot;
  }

  // Bit j set when slot j's control byte is c (bytes 12..15 are never a slot).
  static std::uint32_t match(const unsigned char* ctrl, unsigned char c) noexcept {
    return ControlGroup::match(ctrl, c) & kSlotMask;
  }
  static unsigned char fingerprint(std::uint64_t h) noexcept {
    const auto f = static_cast<unsigned char>(h & 0xFFu);
    return f == 0 ? static_cast<unsigned char>(1) : f;
  }
  std::size_t home(std::uint64_t h) const noexcept { return static_cast<std::size_t>(h >> 8) & mask_; }

  static Group* allocate(std::size_t groups) {
    auto* g = static_cast<Group*>(::operator new(groups * sizeof(Group), std::align_val_t{alignof(Group)}));
    std::memset(static_cast<void*>(g), 0, groups * sizeof(Group));
    return g;
  }
  static void release(Group* g) noexcept {
    if (g != nullptr) ::operator delete(g, std::align_val_t{alignof(Group)});
  }

  Group* g_ = nullptr;
  std::size_t groups_ = 0;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  std::size_t max_load_ = 0;
};

}  // namespace expiring::detail
