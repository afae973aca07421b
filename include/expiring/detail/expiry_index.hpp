// expiring/detail/expiry_index.hpp: the two expiry indexes a store can be built with.
//
// Both name volatile keys by slot index (table.hpp), never by a copy of the key; both add and
// remove a key in O(1); and both follow a rehash of the table: the table reports each entry it
// moves (moved()), into storage staged for the new table (stage()) that adopt() then takes.
// `Es` below is the table, or the new slot array during a rehash: anything with es[i].
//
// VolatileBitmap (policy SampledExpiry) is Redis's `expires` dict reduced to what the active
// cycle needs: one bit per slot, set when the slot's key has a TTL, plus a count. The cycle
// sweeps it with a resumable cursor by slot position, skipping 64 slots per word, as Redis's
// cycle scans its expires dict bucket by bucket; no per-entry field and no handle array, so a
// TTL costs the entry's deadline and 1/8 byte per slot. The bitmap is allocated with the first
// TTL and freed by clear(). Sampling it costs nothing per key until a tick looks, but when few
// keys are due a tick mostly samples keys that are not (the store's guaranteed sweep,
// Options::full_pass_ticks, bounds how late they get).
//
// TimerWheel (policy TimeOrderedExpiry) is a hierarchical timing wheel: ten levels of 64
// buckets, level l spanning 2^(4+6l) ms per bucket, so level 0 has 16 ms slots and the top
// level covers the whole int64 range. A key sits at the lowest level whose enclosing window it
// shares with the wheel's clock; as the wheel's clock reaches a higher-level bucket, that
// bucket is cascaded (its keys re-placed, each at a lower level), so a key moves at most ten
// times in its life. A level-0 bucket whose 16 ms slot has fully passed holds only due keys,
// reclaimed without looking at anything else; the one slot that contains `now` is scanned key
// by key. So a tick reclaims every key due at its `now` (budget permitting) and looks at no
// other key than those of one 16 ms slot. Bitmaps of occupied buckets let the wheel's clock
// jump over empty time in O(levels). The price is 8 more bytes per entry (its bucket and its
// position there) and 4 bytes per volatile key in the buckets, and a re-placement on every TTL
// change that crosses a bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "bits.hpp"

namespace expiring::detail {

inline constexpr std::uint32_t kNoExpiryPos = 0xFFFFFFFFu;

// Per-entry fields each index needs.
struct NoExpiryMeta {};
struct WheelMeta {
  std::uint32_t exp_pos = kNoExpiryPos;  // position in its bucket; kNoExpiryPos when persistent
  std::uint16_t exp_bucket = 0;
};

class VolatileBitmap {
 public:
  using entry_meta = NoExpiryMeta;
  // A deadline that moves needs no work here: the bitmap records which slots have one, not when.
  static constexpr bool kRetimeInPlace = true;
  using staged = std::vector<std::uint64_t>;
  static constexpr std::size_t npos = ~std::size_t{0};

  std::size_t size() const noexcept { return size_; }
  template <class Es>
  bool contains(const Es&, std::uint32_t i) const noexcept {
    return !words_.empty() && ((words_[i >> 6] >> (i & 63)) & 1u) != 0;
  }

  // The first volatile slot at or after pos, or npos.
  std::size_t next(std::size_t pos) const noexcept {
    std::size_t w = pos >> 6;
    if (w >= words_.size()) return npos;
    std::uint64_t m = words_[w] & (~std::uint64_t{0} << (pos & 63));
    while (m == 0) {
      if (++w == words_.size()) return npos;
      m = words_[w];
    }
    return (w << 6) + static_cast<std::size_t>(lowest_bit(m));
  }
  // Volatile slots at or after pos. O(slots / 64).
  std::size_t count_from(std::size_t pos) const noexcept {
    std::size_t w = pos >> 6;
    if (w >= words_.size()) return 0;
    std::size_t n = static_cast<std::size_t>(count_bits(words_[w] & (~std::uint64_t{0} << (pos & 63))));
    for (++w; w < words_.size(); ++w) n += static_cast<std::size_t>(count_bits(words_[w]));
    return n;
  }

  // A volatile slot chosen by next() (uniform 64-bit draws): for eviction's sampling, size()
  // != 0. Uniform random slots until one is volatile; after 64 misses (fewer than ~1 in 20
  // slots volatile), the first volatile slot after the last draw, which is not uniform.
  template <class Next>
  std::uint32_t sample(Next&& next_draw) const noexcept {
    const std::size_t slots = words_.size() * 64;
    std::size_t i = 0;
    for (int tries = 0; tries < 64; ++tries) {
      i = static_cast<std::size_t>(next_draw() % slots);
      if (((words_[i >> 6] >> (i & 63)) & 1u) != 0) return static_cast<std::uint32_t>(i);
    }
    std::size_t j = next(i);
    if (j == npos) j = next(0);
    return static_cast<std::uint32_t>(j);
  }

  // Makes the next insert() unable to throw: allocates the bitmap for the table's `slots`
  // slots, or, for a table with none yet, makes the rehash that will give it slots allocate.
  void prepare(std::int64_t /*deadline*/, std::size_t slots) {
    if (words_.empty() && slots != 0) words_.assign((slots + 63) / 64, 0);
    armed_ = true;
  }
  template <class Es>
  void insert(Es&, std::uint32_t i) noexcept {
    words_[i >> 6] |= std::uint64_t{1} << (i & 63);
    ++size_;
  }
  template <class Es>
  void reschedule(Es&, std::uint32_t, std::int64_t /*old_deadline*/) noexcept {}
  template <class Es>
  void erase(Es&, std::uint32_t i) noexcept {
    words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
    --size_;
  }

  // Rehash: storage for the new table, filled by moved() for each entry the table moves, then
  // adopted. Nothing is allocated while no key has a TTL.
  staged stage(std::size_t new_slots) const {
    return words_.empty() && !armed_ ? staged{} : staged((new_slots + 63) / 64, 0);
  }
  template <class Es>
  void moved(staged& st, Es&, std::uint32_t to, std::uint32_t from) const noexcept {
    if (!words_.empty() && ((words_[from >> 6] >> (from & 63)) & 1u) != 0) st[to >> 6] |= std::uint64_t{1} << (to & 63);
  }
  void adopt(staged& st) noexcept { words_.swap(st); }
  // Nothing to do: the rehash that shrank the table sized the bitmap to it.
  void compact() noexcept {}

  void clear() noexcept {
    std::vector<std::uint64_t>().swap(words_);
    size_ = 0;
    armed_ = false;
  }
  std::size_t bytes() const noexcept { return words_.capacity() * sizeof(std::uint64_t); }
  // The count matches the bits; every bit is an occupied slot whose entry has a deadline
  // set (a TTL of INT64_MAX keeps kNoDeadline's value: its bit alone says it is volatile).
  template <class Es>
  bool check(const Es& es) const {
    std::size_t n = 0;
    for (std::size_t i = next(0); i != npos; i = next(i + 1)) {
      if (i >= es.capacity() || !es.occupied(static_cast<std::uint32_t>(i))) return false;
      ++n;
    }
    return n == size_ && (words_.empty() || words_.size() == (es.capacity() + 63) / 64);
  }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t size_ = 0;
  bool armed_ = false;  // prepare() was called: the next rehash allocates even if words_ is empty
};

class TimerWheel {
 public:
  using entry_meta = WheelMeta;
  static constexpr bool kRetimeInPlace = false;  // a deadline that moves changes bucket

  static constexpr int kSlotBits = 4;   // level-0 slot: 16 ms
  static constexpr int kLevelBits = 6;  // 64 buckets per level
  static constexpr int kLevels = 10;    // 4 + 6 * 10 >= 64: the top level covers all of int64
  static constexpr int kBucketsPerLevel = 1 << kLevelBits;
  static constexpr int kBuckets = kLevels * kBucketsPerLevel;

  // Level-0 slot width.
  static constexpr std::int64_t kSlotMs = std::int64_t{1} << kSlotBits;
  // How far back the clock may step before advance() re-places all keys.
  static constexpr std::uint64_t kRebaseMs = 1000;

  std::size_t size() const noexcept { return size_; }

  // A volatile key chosen by r (uniform when r is): for eviction's sampling. size() != 0.
  // O(occupied buckets).
  template <class Next>
  std::uint32_t sample(Next&& next_draw) const noexcept {
    std::uint64_t pos = next_draw() % size_;
    for (int l = 0; l < kLevels; ++l) {
      for (std::uint64_t m = occupied_[l]; m != 0; m &= m - 1) {
        const std::vector<std::uint32_t>& v = buckets_[l * kBucketsPerLevel + lowest_bit(m)];
        if (pos < v.size()) return v[pos];
        pos -= v.size();
      }
    }
    return buckets_[0].empty() ? 0 : buckets_[0][0];  // unreachable
  }

  // Starts an empty wheel's clock at `now`, so that new keys are placed low in the wheel.
  void sync(std::int64_t now) noexcept {
    if (size_ == 0) advance_clock(bias(now));
  }

  template <class Es>
  bool contains(const Es& es, std::uint32_t i) const noexcept {
    return es[i].exp_pos != kNoExpiryPos;
  }
  void prepare(std::int64_t deadline, std::size_t /*slots*/) {
    std::vector<std::uint32_t>& v = buckets_[bucket_for(bias(deadline))];
    if (v.size() == v.capacity()) v.reserve(v.size() < 8 ? 8 : v.size() * 2);
  }
  template <class Es>
  void insert(Es& es, std::uint32_t i) {
    place(es, i, bucket_for(bias(es[i].deadline)));
  }
  template <class Es>
  void reschedule(Es& es, std::uint32_t i, std::int64_t /*old_deadline*/) {
    const int nb = bucket_for(bias(es[i].deadline));
    if (nb == es[i].exp_bucket) return;
    buckets_[nb].push_back(i);  // first, so that a throw leaves everything as it was
    remove_at(es, es[i].exp_bucket, es[i].exp_pos);
    es[i].exp_bucket = static_cast<std::uint16_t>(nb);
    es[i].exp_pos = static_cast<std::uint32_t>(buckets_[nb].size() - 1);
    occupied_[nb >> kLevelBits] |= bit(nb);
    ++size_;
  }
  template <class Es>
  void erase(Es& es, std::uint32_t i) noexcept {
    remove_at(es, es[i].exp_bucket, es[i].exp_pos);
    es[i].exp_pos = kNoExpiryPos;
  }
  // Rehash: the entries carry their bucket and position, so each moved one is repointed in
  // place; nothing is staged.
  struct staged {};
  staged stage(std::size_t /*new_slots*/) const noexcept { return {}; }
  template <class Es>
  void moved(staged&, Es& es, std::uint32_t to, std::uint32_t /*from*/) noexcept {
    if (es[to].exp_pos != kNoExpiryPos) buckets_[es[to].exp_bucket][es[to].exp_pos] = to;
  }
  void adopt(staged&) noexcept {}
  void clear() noexcept {
    for (auto& b : buckets_) b.clear();
    for (auto& o : occupied_) o = 0;
    size_ = 0;
  }
  // Frees the buffers of large empty buckets (left behind by a mass expiry).
  void compact() noexcept {
    for (auto& b : buckets_) {
      if (b.empty() && b.capacity() > 1024) std::vector<std::uint32_t>().swap(b);
    }
  }
  std::size_t bytes() const noexcept {
    std::size_t n = sizeof(buckets_);
    for (const auto& b : buckets_) n += b.capacity() * sizeof(std::uint32_t);
    return n;
  }
  template <class Es>
  bool check(const Es& es) const {
    std::size_t total = 0;
    for (int b = 0; b < kBuckets; ++b) {
      const auto& v = buckets_[b];
      if (((occupied_[b >> kLevelBits] & bit(b)) != 0) != !v.empty()) return false;
      for (std::size_t p = 0; p < v.size(); ++p) {
        if (v[p] >= es.capacity() || es[v[p]].exp_bucket != b || es[v[p]].exp_pos != p) return false;
      }
      total += v.size();
    }
    return total == size_;
  }

  // How far ahead advance() announces the keys it will reclaim (see Ahead).
  static constexpr std::size_t kAheadFar = 8;
  static constexpr std::size_t kAheadNear = 3;
  // Which announcement: `far` comes kAheadFar reclaims before the key's own, `near`
  // kAheadNear before it.
  enum class Ahead { far, near };
  struct NoAhead {
    void operator()(std::uint32_t, Ahead) const noexcept {}
  };

  // Moves the wheel's clock towards `now`, reclaiming due keys and cascading buckets whose
  // time has come. Before each key it touches it calls budget(), which returns false to stop
  // (the wheel resumes there on the next call). reclaim(i) must erase entry i (and so call
  // erase()). Stops early only on the budget, or when a due bucket holds a key that is not
  // stale at `now` (possible only if the clock went backwards).
  //
  // A bucket of due keys is drained from its back, so the keys reclaimed next are known in
  // advance: ahead(j, Ahead::far) and then ahead(j, Ahead::near) are called for each one a
  // few reclaims before its own, so that the caller can prefetch what its reclaim will read
  // (a hint: it must not change anything). The wheel prefetches its own entries' lines.
  template <class Es, class Reclaim, class Budget, class AheadFn = NoAhead>
  void advance(Es& es, std::int64_t now, Reclaim&& reclaim, Budget&& budget, AheadFn&& ahead = AheadFn{}) {
    const std::uint64_t target = bias(now);
    const std::uint64_t target_slot = target >> kSlotBits;
    // The clock stepped back by more than a second (a wall clock can): re-place every key
    // relative to the new time, once, so that active reclaiming does not stall until the
    // clock catches up with the wheel again.
    if (w_ > kRebaseMs && target < w_ - kRebaseMs) rebase(es, target);
    for (;;) {
      // 0. A bucket at the wheel clock's own digit (level >= 1) is one whose cascade a budget
      //    stop interrupted: finish it first. Placement never puts a key there otherwise.
      int partial = -1;
      for (int l = kLevels - 1; l >= 1 && partial < 0; --l) {
        const int b = l * kBucketsPerLevel + digit(w_, l);
        if (!buckets_[b].empty()) partial = b;
      }
      if (partial >= 0) {
        // A bucket whose whole window lies before the slot of `now` holds only due keys:
        // reclaim them directly instead of moving them down level by level.
        const int l = partial >> kLevelBits;
        const std::uint64_t window_end = (w_ & ~low_mask(shift(l))) + (std::uint64_t{1} << shift(l));
        const bool all_due = window_end != 0 && (window_end >> kSlotBits) <= target_slot;
        std::vector<std::uint32_t>& v = buckets_[partial];
        while (!v.empty()) {
          if (!budget()) return;
          const std::uint32_t i = v.back();
          if (all_due && es[i].is_stale(now)) {
            reclaim(i);
          } else if (!relocate(es, i)) {
            return;  // cannot happen; never spin
          }
        }
        continue;
      }
      // 1. Level 0: the first non-empty slot from the clock's slot on, in this level-1 window.
      const int c0 = digit(w_, 0);
      const std::uint64_t m0 = occupied_[0] & (~std::uint64_t{0} << c0);
      if (m0 != 0) {
        const int j = lowest_bit(m0);
        const std::uint64_t slot_start = (w_ & ~low_mask(shift(1))) | (static_cast<std::uint64_t>(j) << kSlotBits);
        if ((slot_start >> kSlotBits) > target_slot) {
          advance_clock(target);  // nothing is due yet
          return;
        }
        if ((slot_start >> kSlotBits) == target_slot) {
          // The slot `now` is in: only part of it is due. Scanning it downwards, an erased
          // key's place is taken by the last key, which was already looked at.
          advance_clock(slot_start);
          std::vector<std::uint32_t>& v = buckets_[j];
          for (std::size_t p = v.size(); p-- > 0;) {
            if (!budget()) return;
            if (p < v.size() && es[v[p]].is_stale(now)) reclaim(v[p]);
          }
          advance_clock(target);
          return;
        }
        advance_clock(slot_start);
        std::vector<std::uint32_t>& v = buckets_[j];
        announce_start(es, v, ahead);
        while (!v.empty()) {
          const std::uint32_t i = v.back();
          if (!es[i].is_stale(now)) return;  // the clock went backwards; retry next tick
          if (!budget()) return;
          announce(es, v, ahead);
          reclaim(i);
        }
        continue;
      }
      // 2. No level-0 keys left in this window: the next occupied bucket of a higher level.
      std::uint64_t event = 0;
      bool found = false;
      for (int l = 1; l < kLevels && !found; ++l) {
        const int cl = digit(w_, l);
        if (cl == kBucketsPerLevel - 1) continue;
        const std::uint64_t m = occupied_[l] & (~std::uint64_t{0} << (cl + 1));
        if (m == 0) continue;
        const std::uint64_t base = l + 1 < kLevels ? (w_ & ~low_mask(shift(l + 1))) : 0;
        event = base | (static_cast<std::uint64_t>(lowest_bit(m)) << shift(l));
        found = true;
      }
      if (!found || event > target) {
        advance_clock(target);
        return;
      }
      advance_clock(event);  // step 0 cascades the bucket that starts here
    }
  }

 private:
  static constexpr int shift(int level) noexcept { return kSlotBits + kLevelBits * level; }
  // A bucket drained from its back: announce_start() before its first reclaim (the keys up to
  // kAheadFar from the back: far, and those up to kAheadNear: near as well), announce() before
  // each reclaim (the key kAheadFar from the back: far, the one kAheadNear from it: near).
  template <class Es, class AheadFn>
  static void announce_start(Es& es, const std::vector<std::uint32_t>& v, AheadFn& ahead) noexcept {
    const std::size_t n = v.size();
    for (std::size_t k = 1; k < kAheadFar && k < n; ++k) {
      prefetch_read(&es[v[n - 1 - k]]);
      ahead(v[n - 1 - k], Ahead::far);
    }
    for (std::size_t k = 1; k < kAheadNear && k < n; ++k) ahead(v[n - 1 - k], Ahead::near);
  }
  template <class Es, class AheadFn>
  static void announce(Es& es, const std::vector<std::uint32_t>& v, AheadFn& ahead) noexcept {
    const std::size_t n = v.size();
    if (n > kAheadFar) {
      prefetch_read(&es[v[n - 1 - kAheadFar]]);
      ahead(v[n - 1 - kAheadFar], Ahead::far);
    }
    if (n > kAheadNear) ahead(v[n - 1 - kAheadNear], Ahead::near);
  }
  static constexpr std::uint64_t low_mask(int bits) noexcept { return (std::uint64_t{1} << bits) - 1; }
  static constexpr std::uint64_t bit(int bucket) noexcept {
    return std::uint64_t{1} << (bucket & (kBucketsPerLevel - 1));
  }
  static constexpr int digit(std::uint64_t t, int level) noexcept {
    return static_cast<int>((t >> shift(level)) & low_mask(kLevelBits));
  }
  // int64 order mapped onto uint64 order, so shifts are well defined for negative times.
  static constexpr std::uint64_t bias(std::int64_t t) noexcept {
    return static_cast<std::uint64_t>(t) ^ (std::uint64_t{1} << 63);
  }
  // The bucket of a (biased) deadline: the lowest level whose enclosing window it shares
  // with the wheel's clock. Deadlines the clock has passed go to the clock's own slot.
  int bucket_for(std::uint64_t u) const noexcept {
    if (u < w_) u = w_;
    const std::uint64_t x = u ^ w_;
    int level = 0;
    if (x >= (std::uint64_t{1} << shift(1))) level = (highest_bit(x) - kSlotBits) / kLevelBits;
    return level * kBucketsPerLevel + digit(u, level);
  }

  // Sets the wheel's clock back to t and re-places every key (O(size), only after the clock
  // stepped back). Keys are moved bucket by bucket through a scratch list, so nothing is lost
  // if an allocation fails: the wheel is then left at the old clock.
  template <class Es>
  void rebase(Es& es, std::uint64_t t) {
    std::vector<std::uint32_t> all;
    all.reserve(size_);
    for (const auto& b : buckets_) all.insert(all.end(), b.begin(), b.end());
    std::vector<std::uint32_t> fresh[kBuckets];
    const std::uint64_t old = w_;
    w_ = t;
    try {
      for (const std::uint32_t i : all) fresh[bucket_for(bias(es[i].deadline))].push_back(i);
    } catch (...) {
      w_ = old;
      throw;
    }
    for (auto& o : occupied_) o = 0;
    for (int b = 0; b < kBuckets; ++b) {
      buckets_[b].swap(fresh[b]);
      for (std::size_t p = 0; p < buckets_[b].size(); ++p) {
        es[buckets_[b][p]].exp_bucket = static_cast<std::uint16_t>(b);
        es[buckets_[b][p]].exp_pos = static_cast<std::uint32_t>(p);
      }
      if (!buckets_[b].empty()) occupied_[b >> kLevelBits] |= bit(b);
    }
  }

  void advance_clock(std::uint64_t t) noexcept {
    if (t > w_) w_ = t;
  }

  template <class Es>
  void place(Es& es, std::uint32_t i, int b) {
    buckets_[b].push_back(i);
    es[i].exp_bucket = static_cast<std::uint16_t>(b);
    es[i].exp_pos = static_cast<std::uint32_t>(buckets_[b].size() - 1);
    occupied_[b >> kLevelBits] |= bit(b);
    ++size_;
  }
  template <class Es>
  void remove_at(Es& es, int b, std::uint32_t pos) noexcept {
    std::vector<std::uint32_t>& v = buckets_[b];
    const std::uint32_t moved = v.back();
    v[pos] = moved;
    es[moved].exp_pos = pos;
    v.pop_back();
    if (v.empty()) occupied_[b >> kLevelBits] &= ~bit(b);
    --size_;
  }
  // Re-places entry i for the wheel's current clock (a cascade step). False if it stays.
  template <class Es>
  bool relocate(Es& es, std::uint32_t i) {
    const int nb = bucket_for(bias(es[i].deadline));
    const int ob = es[i].exp_bucket;
    if (nb == ob) return false;
    buckets_[nb].push_back(i);
    remove_at(es, ob, es[i].exp_pos);
    es[i].exp_bucket = static_cast<std::uint16_t>(nb);
    es[i].exp_pos = static_cast<std::uint32_t>(buckets_[nb].size() - 1);
    occupied_[nb >> kLevelBits] |= bit(nb);
    ++size_;
    return true;
  }

  std::vector<std::uint32_t> buckets_[kBuckets];
  std::uint64_t occupied_[kLevels] = {};
  std::uint64_t w_ = 0;  // the wheel's clock (biased ms): every slot before its slot is processed
  std::size_t size_ = 0;
};

}  // namespace expiring::detail
