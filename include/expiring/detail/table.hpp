// expiring/detail/table.hpp: the open-addressing table that holds the store's entries inline.
//
// Design
// ------
// Slots live in groups of 15. Each group has 16 control bytes: bytes 0..14 describe its slots
// (0 = empty, otherwise an 8-bit fingerprint of the key's hash, never 0), byte 15 is the
// group's overflow byte: bit b is set when an insertion whose fingerprint has low bits b found
// the group full and went on to the next group of its probe sequence. A lookup loads one
// group's control bytes (one 16-byte SSE2 compare where available), compares the key in the
// slots whose fingerprint matches, and stops at the first group whose overflow bit for its
// fingerprint is clear: so a hit reads one control group and then its slot, which holds the
// key, the value and the deadline, and a miss usually reads one control group only.
// (Boost.Unordered's unordered_flat_map popularised the 15-slot group with an overflow byte;
// this is our own implementation of that idea.)
//
// * Probing visits groups g, g+1, g+3, g+6, ... (triangular steps) modulo a power-of-two
//   group count, which visits every group once.
// * Erasure clears the control byte and destroys the entry: no other entry moves and there
//   are no tombstones. Overflow bits are only cleared by a rehash; so that they cannot pile
//   up under churn, erasing from a group with overflow bits set lowers the load the table may
//   reach before its next rehash, which rebuilds them.
// * Growth (before an insertion into a table at its maximum load, 7/8) and shrinking rehash: every
//   entry is moved to a new slot, and `on_move(new_index)` is called for each so that the
//   structures holding slot indices (the expiry index, the access array) follow. These are
//   the only operations that move entries.
// * Memory: one allocation, 16 bytes of control per 15 slots, then the slots. An empty table
//   allocates nothing (its control bytes are a shared static group that matches nothing).
// * Optimistic readers (ConcurrentStore): view() gives the three addresses a lookup needs and
//   find_in() probes through them without writing, every address inside the view's block; a
//   free hook, called before a block is freed, lets such readers leave it first.
//
// The table does not hash: its callers pass the 64-bit hash (already mixed with the store's
// seed) to every lookup and insertion, and a function from entry to hash to rehash().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "bits.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define EXPIRING_TABLE_SSE2 1
#endif

namespace expiring::detail {

inline constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;
// get_many()'s second prefetch stage (each key's likely slot) pays only when the slots are out
// of cache: below this many bytes of table it is skipped. ExpiringStore, 1e4 u64 keys (0.4 MB):
// a batch cost 1.10x a get() loop with the stage and 0.96x without; 1e6 keys (~40 MB): 0.44x
// with it and 0.72x without (bench_engine E6; ConcurrentStore alike).
inline constexpr std::size_t kSlotPrefetchBytes = std::size_t{4} << 20;
inline constexpr std::size_t kGroupSlots = 15;
inline constexpr std::size_t kGroupBytes = 16;

// The smallest power-of-two count of groups of `per` slots that holds n entries below a
// maximum load of 7/8. Throws std::length_error(too_many) past 2^32 - 2 slots (slot indices
// are 32-bit).
inline std::size_t power_of_two_groups(std::size_t n, std::size_t per, const char* too_many) {
  constexpr std::size_t kMax = std::size_t{std::numeric_limits<std::uint32_t>::max() - 1};
  if (n >= kMax) throw std::length_error(too_many);  // (first: n + n / 7 wraps for n near 2^64)
  const std::size_t slots = n + n / 7 + 1;
  const std::size_t need = (slots + per - 1) / per;
  std::size_t g = 1;
  while (g < need) {
    if (g * 2 > kMax / per) throw std::length_error(too_many);
    g <<= 1;
  }
  return g;
}

// The 16 control bytes of one group.
struct ControlGroup {
  static constexpr std::uint32_t kSlotMask = (1u << kGroupSlots) - 1;

  // Bit j set when slot j holds fingerprint fp.
  static std::uint32_t match(const unsigned char* c, unsigned char fp) noexcept {
#if defined(EXPIRING_TABLE_SSE2)
    const __m128i g = _mm_load_si128(reinterpret_cast<const __m128i*>(c));
    // Broadcast from a 32-bit register: _mm_set1_epi8 makes GCC store the byte and reload a
    // dword (a failed store-to-load forward, ~12 cycles, on every lookup).
    const __m128i needle = _mm_set1_epi32(static_cast<int>(0x01010101u * fp));
    const __m128i eq = _mm_cmpeq_epi8(g, needle);
    return static_cast<std::uint32_t>(_mm_movemask_epi8(eq)) & kSlotMask;
#else
    std::uint32_t m = 0;
    for (std::size_t j = 0; j < kGroupSlots; ++j) m |= static_cast<std::uint32_t>(c[j] == fp) << j;
    return m;
#endif
  }
  static std::uint32_t empty(const unsigned char* c) noexcept { return match(c, 0); }
  static std::uint32_t full(const unsigned char* c) noexcept { return ~empty(c) & kSlotMask; }
  static unsigned char overflow_bit(unsigned char fp) noexcept { return static_cast<unsigned char>(1u << (fp & 7u)); }
};

template <class Entry>
class SlotTable {
  static_assert(alignof(Entry) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "expiring: over-aligned entries are not supported");
  static_assert(std::is_nothrow_move_constructible_v<Entry>, "expiring: entries must be nothrow-movable");

 public:
  SlotTable() noexcept = default;
  // A copy has the same layout: every entry at the same slot index, so that structures
  // holding slot indices can be copied alongside.
  SlotTable(const SlotTable& o) {
    if (o.groups_ == 0) return;
    const std::size_t ctrl_bytes = o.groups_ * kGroupBytes;
    void* block = ::operator new(o.bytes());
    auto* ctrl = static_cast<unsigned char*>(block);
    auto* slots = reinterpret_cast<Entry*>(ctrl + ctrl_bytes);
    std::memset(ctrl, 0, ctrl_bytes);
    std::size_t g = 0;
    try {
      for (; g < o.groups_; ++g) {
        const unsigned char* from = o.ctrl_ + g * kGroupBytes;
        for (std::uint32_t m = ControlGroup::full(from); m != 0; m &= m - 1) {
          const std::size_t j = static_cast<std::size_t>(lowest_bit(m));
          ::new (static_cast<void*>(slots + g * kGroupSlots + j)) Entry(o.slots_[g * kGroupSlots + j]);
          ctrl[g * kGroupBytes + j] = from[j];
        }
        ctrl[g * kGroupBytes + kGroupSlots] = from[kGroupSlots];
      }
    } catch (...) {
      for (std::size_t k = 0; k <= g && k < o.groups_; ++k) {
        for (std::uint32_t m = ControlGroup::full(ctrl + k * kGroupBytes); m != 0; m &= m - 1) {
          slots[k * kGroupSlots + static_cast<std::size_t>(lowest_bit(m))].~Entry();
        }
      }
      ::operator delete(block);
      throw;
    }
    block_ = block;
    ctrl_ = ctrl;
    slots_ = slots;
    groups_ = o.groups_;
    mask_ = o.mask_;
    size_ = o.size_;
    max_load_ = o.max_load_;
  }
  SlotTable& operator=(const SlotTable& o) {
    if (this != &o) {
      SlotTable copy(o);
      *this = std::move(copy);
    }
    return *this;
  }
  SlotTable(SlotTable&& o) noexcept { steal(o); }
  SlotTable& operator=(SlotTable&& o) noexcept {
    if (this != &o) {
      destroy_all();
      release();
      steal(o);
    }
    return *this;
  }
  ~SlotTable() {
    destroy_all();
    release();
  }

  // ---- size ---------------------------------------------------------------------------

  std::size_t size() const noexcept { return size_; }
  // Number of slots; slot indices are 0 .. capacity() - 1.
  std::size_t capacity() const noexcept { return groups_ * kGroupSlots; }
  std::size_t groups() const noexcept { return groups_; }
  // Bytes of the one allocation (control bytes and slots).
  std::size_t bytes() const noexcept { return groups_ * (kGroupBytes + kGroupSlots * sizeof(Entry)); }
  static constexpr std::size_t kMaxSlots = std::size_t{std::numeric_limits<std::uint32_t>::max() - 1};

  // ---- slots --------------------------------------------------------------------------

  bool occupied(std::uint32_t i) const noexcept { return ctrl_[ctrl_index(i)] != 0; }
  Entry& operator[](std::uint32_t i) noexcept { return slots_[i]; }
  const Entry& operator[](std::uint32_t i) const noexcept { return slots_[i]; }
  std::uint32_t index_of(const Entry& e) const noexcept { return static_cast<std::uint32_t>(&e - slots_); }

  // The first occupied slot at index >= i, or capacity() when there is none.
  std::size_t next_occupied(std::size_t i) const noexcept {
    const std::size_t cap = capacity();
    while (i < cap) {
      const std::size_t g = i / kGroupSlots;
      const std::size_t j = i % kGroupSlots;
      const std::uint32_t m = ControlGroup::full(ctrl_ + g * kGroupBytes) >> j;
      if (m != 0) return i + static_cast<std::size_t>(lowest_bit(m));
      i = (g + 1) * kGroupSlots;
    }
    return cap;
  }

  // ---- lookup -------------------------------------------------------------------------

  // The slot of the entry for which eq(entry) holds among those with hash h, or kNoSlot.
  template <class Eq>
  std::uint32_t find(std::uint64_t h, Eq&& eq) const {
    return probe(ctrl_, mask_, h, [&](std::uint32_t i) { return eq(slots_[i]); });
  }

  // ---- optimistic readers (ConcurrentStore, read_section.hpp) --------------------------

  // The table's addresses, as one optimistic reader reads them: consistent only if nothing
  // was written while they were loaded (the reader validates that before using them).
  struct View {
    const unsigned char* ctrl;
    const Entry* slots;
    std::size_t mask;
  };
  View view() const noexcept { return View{ctrl_, slots_, mask_}; }
  // bytes() of the block a view shows (of a torn view: a number, never used as an address).
  static std::size_t bytes_in(const View& v) noexcept { return (v.mask + 1) * (kGroupBytes + kGroupSlots * sizeof(Entry)); }
  // find() over a View, with match(slot index) in place of the key comparison: every address
  // it forms lies in the view's block, whatever the control bytes hold, and it visits at most
  // every group once.
  template <class Match>
  static std::uint32_t find_in(const View& v, std::uint64_t h, Match&& match) {
    return probe(v.ctrl, v.mask, h, match);
  }
  // prefetch_group() and prefetch_slot() over a View: the first computes an address only (a
  // prefetch cannot fault, so any view will do), the second reads control bytes (so only a
  // validated view).
  static void prefetch_group_in(const View& v, std::uint64_t h) noexcept {
    const std::size_t offset = (static_cast<std::size_t>(h >> 8) & v.mask) * kGroupBytes;
    prefetch_read(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(v.ctrl) + offset));  // no pointer arithmetic on a torn view
  }
  static void prefetch_slot_in(const View& v, std::uint64_t h) noexcept {
    const std::size_t g = static_cast<std::size_t>(h >> 8) & v.mask;
    const std::uint32_t m = ControlGroup::match(v.ctrl + g * kGroupBytes, fingerprint(h));
    if (m != 0) prefetch_read(v.slots + g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m)));
  }
  // Called before the table frees a block (a rehash, clear(), destruction), so that readers
  // who may be inside it can leave first. Stays with this object: not copied or moved.
  void set_free_hook(void (*fn)(void*), void* ctx) noexcept {
    free_hook_ = fn;
    free_ctx_ = ctx;
  }

  // Prefetches the control byte of slot i, to be written (erase(i) clears it).
  void prefetch_control(std::uint32_t i) const noexcept { prefetch_write(ctrl_ + (i / kGroupSlots) * kGroupBytes); }
  // Prefetches the control group a lookup of h reads first.
  void prefetch_group(std::uint64_t h) const noexcept { prefetch_read(ctrl_ + home(h) * kGroupBytes); }
  // Prefetches the first slot of h's home group whose fingerprint matches (call after
  // prefetch_group() has had time to land): the slot a hit most likely reads.
  void prefetch_slot(std::uint64_t h) const noexcept {
    const std::size_t g = home(h);
    const std::uint32_t m = ControlGroup::match(ctrl_ + g * kGroupBytes, fingerprint(h));
    if (m != 0) prefetch_read(slots_ + g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m)));
  }

  // An insertion's second prefetch stage (after prefetch_group() has landed): for writing,
  // the free slot of h's home group an insertion of a new key would take.
  void prefetch_free_slot(std::uint64_t h) const noexcept {
    const std::size_t g = home(h);
    const std::uint32_t m = ControlGroup::empty(ctrl_ + g * kGroupBytes) & ControlGroup::kSlotMask;
    if (m != 0) prefetch_write(slots_ + g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m)));
  }

  // ---- insertion ----------------------------------------------------------------------

  // Whether the table is at its maximum load: the next insertion must rehash first.
  bool insert_grows() const noexcept { return size_ >= max_load_; }

  // Constructs an entry from args in a free slot of h's probe sequence and returns its index.
  // Preconditions: the key is not present and !insert_grows() (the caller rehashes first, so
  // that it can follow the moves). If the construction throws, no entry was added.
  template <class... Args>
  std::uint32_t emplace_new(std::uint64_t h, Args&&... args) {
    const unsigned char fp = fingerprint(h);
    std::size_t g = home(h);
    for (std::size_t step = 0;;) {
      unsigned char* c = ctrl_ + g * kGroupBytes;
      const std::uint32_t free = ControlGroup::empty(c);
      if (free != 0) {
        const std::size_t j = static_cast<std::size_t>(lowest_bit(free));
        const auto i = static_cast<std::uint32_t>(g * kGroupSlots + j);
        ::new (static_cast<void*>(slots_ + i)) Entry(std::forward<Args>(args)...);
        c[j] = fp;
        ++size_;
        return i;
      }
      c[kGroupSlots] = static_cast<unsigned char>(c[kGroupSlots] | ControlGroup::overflow_bit(fp));
      ++step;  // a table below its maximum load always has a free slot: this loop ends
      g = (g + step) & mask_;
    }
  }

  // ---- erasure ------------------------------------------------------------------------

  void erase(std::uint32_t i) noexcept {
    slots_[i].~Entry();
    const std::size_t g = i / kGroupSlots;
    ctrl_[g * kGroupBytes + i % kGroupSlots] = 0;
    --size_;
    if (ctrl_[g * kGroupBytes + kGroupSlots] != 0 && max_load_ > 0) --max_load_;
  }

  void clear() noexcept {
    destroy_all();
    release();
  }

  // ---- rehash -------------------------------------------------------------------------

  // The smallest group count whose table holds n entries below its maximum load (7/8). Throws
  // std::length_error past 2^32 - 2 slots (slot indices are 32-bit).
  static std::size_t groups_for(std::size_t n) {
    return power_of_two_groups(n, kGroupSlots, "expiring: too many keys (2^32 - 2 slots at most)");
  }

  // The allocation of a table of `groups` groups, made before anything moves (so that a
  // rehash is allocate(), which may throw, then rehash(), which cannot). Frees itself unless
  // a rehash() took it.
  class Block {
   public:
    Block() noexcept = default;
    explicit Block(std::size_t groups) : groups_(groups) {
      if (groups == 0) return;
      const std::size_t bytes = groups * (kGroupBytes + kGroupSlots * sizeof(Entry));
      p_ = ::operator new(bytes);
      advise_huge_pages(p_, bytes);
      std::memset(p_, 0, groups * kGroupBytes);
    }
    Block(Block&& o) noexcept : p_(std::exchange(o.p_, nullptr)), groups_(std::exchange(o.groups_, 0)) {}
    Block& operator=(Block&&) = delete;
    ~Block() { ::operator delete(p_); }
    std::size_t groups() const noexcept { return groups_; }

   private:
    friend class SlotTable;
    void* p_ = nullptr;
    std::size_t groups_ = 0;
  };

  // Moves every entry into a table of new_groups groups (a power of two holding size()
  // entries below its maximum load; 0 frees everything when empty), calling hash_of(entry)
  // for each and then on_move(new_slots, new_index, old_index). hash_of must not throw.
  // Throws std::bad_alloc before anything moved.
  template <class HashOf, class OnMove>
  void rehash(std::size_t new_groups, HashOf&& hash_of, OnMove&& on_move) {
    rehash(Block(new_groups), hash_of, on_move);
  }
  // The same into a block allocated beforehand. Cannot throw (hash_of and on_move must not).
  template <class HashOf, class OnMove>
  void rehash(Block&& b, HashOf&& hash_of, OnMove&& on_move) noexcept {
    const std::size_t new_groups = b.groups_;
    if (new_groups == 0) {
      clear();
      return;
    }
    const std::size_t ctrl_bytes = new_groups * kGroupBytes;
    void* block = std::exchange(b.p_, nullptr);
    auto* new_ctrl = static_cast<unsigned char*>(block);
    auto* new_slots = reinterpret_cast<Entry*>(new_ctrl + ctrl_bytes);
    const std::size_t new_mask = new_groups - 1;
    for (std::size_t g = 0; g < groups_; ++g) {
      for (std::uint32_t m = ControlGroup::full(ctrl_ + g * kGroupBytes); m != 0; m &= m - 1) {
        const auto from_index =
            static_cast<std::uint32_t>(g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m)));
        Entry& from = slots_[from_index];
        const std::uint64_t h = hash_of(static_cast<const Entry&>(from));
        const unsigned char fp = fingerprint(h);
        std::size_t ng = static_cast<std::size_t>(h >> 8) & new_mask;
        for (std::size_t step = 0;;) {
          unsigned char* c = new_ctrl + ng * kGroupBytes;
          const std::uint32_t free = ControlGroup::empty(c);
          if (free != 0) {
            const std::size_t j = static_cast<std::size_t>(lowest_bit(free));
            const auto to = static_cast<std::uint32_t>(ng * kGroupSlots + j);
            ::new (static_cast<void*>(new_slots + to)) Entry(std::move(from));
            from.~Entry();
            c[j] = fp;
            on_move(new_slots, to, from_index);
            break;
          }
          c[kGroupSlots] = static_cast<unsigned char>(c[kGroupSlots] | ControlGroup::overflow_bit(fp));
          ++step;
          ng = (ng + step) & new_mask;
        }
      }
    }
    const std::size_t n = size_;
    release();
    block_ = block;
    ctrl_ = new_ctrl;
    slots_ = new_slots;
    groups_ = new_groups;
    mask_ = new_mask;
    size_ = n;
    max_load_ = capacity() - capacity() / 8;
  }

  // ---- self-check (tests) -------------------------------------------------------------

  // Every occupied slot is found from its hash; size() matches the occupied slots.
  template <class HashOf>
  bool check(HashOf&& hash_of) const {
    std::size_t n = 0;
    for (std::size_t i = next_occupied(0); i < capacity(); i = next_occupied(i + 1)) {
      ++n;
      const Entry* want = slots_ + i;
      const std::uint64_t h = hash_of(*want);
      if (ctrl_[ctrl_index(static_cast<std::uint32_t>(i))] != fingerprint(h)) return false;
      if (find(h, [&](const Entry& e) { return &e == want; }) != i) return false;
    }
    return n == size_ && size_ <= max_load_;
  }

 private:
  static unsigned char fingerprint(std::uint64_t h) noexcept {
    const auto f = static_cast<unsigned char>(h & 0xFFu);
    return f == 0 ? static_cast<unsigned char>(1) : f;
  }
  std::size_t home(std::uint64_t h) const noexcept { return static_cast<std::size_t>(h >> 8) & mask_; }
  template <class Match>
  static std::uint32_t probe(const unsigned char* ctrl, std::size_t mask, std::uint64_t h, Match&& match) {
    const unsigned char fp = fingerprint(h);
    std::size_t g = static_cast<std::size_t>(h >> 8) & mask;
    for (std::size_t step = 0; step <= mask;) {
      const unsigned char* c = ctrl + g * kGroupBytes;
      for (std::uint32_t m = ControlGroup::match(c, fp); m != 0; m &= m - 1) {
        const auto i = static_cast<std::uint32_t>(g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m)));
        if (match(i)) return i;
      }
      if ((c[kGroupSlots] & ControlGroup::overflow_bit(fp)) == 0) return kNoSlot;
      ++step;
      g = (g + step) & mask;
    }
    return kNoSlot;
  }
  static std::size_t ctrl_index(std::uint32_t i) noexcept {
    return (i / kGroupSlots) * kGroupBytes + i % kGroupSlots;
  }

  // A large table is read at random: with 4 KB pages nearly every lookup also misses the TLB.
  // On Linux, ask for transparent huge pages over the block's 2 MB-aligned interior (honoured
  // when THP is in "madvise" or "always" mode; a hint, so failure changes nothing).
  static void advise_huge_pages(void* block, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
    if (bytes < 2 * kHuge) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(block);
    const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
    const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
    if (last > first) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
    (void)block;
    (void)bytes;
#endif
  }

  void destroy_all() noexcept {
    if constexpr (!std::is_trivially_destructible_v<Entry>) {
      for (std::size_t g = 0; g < groups_ && size_ != 0; ++g) {
        for (std::uint32_t m = ControlGroup::full(ctrl_ + g * kGroupBytes); m != 0; m &= m - 1) {
          slots_[g * kGroupSlots + static_cast<std::size_t>(lowest_bit(m))].~Entry();
        }
      }
    }
    size_ = 0;
  }
  void release() noexcept {
    if (block_ != nullptr && free_hook_ != nullptr) free_hook_(free_ctx_);
    ::operator delete(block_);
    block_ = nullptr;
    ctrl_ = empty_group();
    slots_ = nullptr;
    groups_ = 0;
    mask_ = 0;
    max_load_ = 0;
    size_ = 0;
  }
  void steal(SlotTable& o) noexcept {
    block_ = o.block_;
    ctrl_ = o.ctrl_;
    slots_ = o.slots_;
    groups_ = o.groups_;
    mask_ = o.mask_;
    size_ = o.size_;
    max_load_ = o.max_load_;
    o.block_ = nullptr;
    o.release();
  }
  // The control bytes of a table with no allocation: matches nothing, no overflow.
  static unsigned char* empty_group() noexcept {
    alignas(16) static unsigned char group[kGroupBytes] = {};
    return group;
  }

  void* block_ = nullptr;
  unsigned char* ctrl_ = empty_group();
  Entry* slots_ = nullptr;
  std::size_t groups_ = 0;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  std::size_t max_load_ = 0;
  void (*free_hook_)(void*) = nullptr;
  void* free_ctx_ = nullptr;
};

}  // namespace expiring::detail
