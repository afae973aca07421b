// expiring/detail/read_section.hpp: optimistic readers, and when memory they read may be freed.
//
// Design
// ------
// ConcurrentStore's get() of a trivially copyable key and value takes no lock: it reads the
// shard's table between two loads of the shard's version (shard_lock.hpp) and keeps what it
// read only if the version did not move. Such a reader may be looking at a table block that
// a writer is about to free (a rehash replaces the block), so the writer must know whether a
// reader can still be inside it. This file is that knowledge, at no shared write per read:
//
//   * Each thread gets a small id (ReaderIds: taken on first use, given back at thread exit,
//     at most kReaderSlots at a time; a thread that found none reads under the shard's lock
//     for the rest of its life). The ids are one pool per program, as inline functions'
//     statics are; several shared objects built with hidden visibility would each have
//     their own, so a store must not be read through two of them.
//   * Each store has a ReaderSlot per id, a cache line that only its thread writes: an odd
//     `seq` while the thread is inside a read section, and the thread's hit and miss counts
//     (statistics without a shared write).
//   * A writer that frees a block calls synchronize() first: it waits until every slot that
//     was odd has moved on. A section is a few dozen nanoseconds; the wait is the rare
//     rehash's, under the shard's lock (readers never wait for anything, so it ends).
//
// Ordering. The reader's store "I am inside" must be visible to a writer that later scans
// the slots, before the reader loads the version: a store-load order, which x86 keeps only
// with a fence (~20-30 cycles and a drain of the store buffer per read). On Linux the fence
// is moved to the writer instead: membarrier(PRIVATE_EXPEDITED) makes every running thread of
// the process execute a full barrier, so the reader needs only a compiler barrier. Where
// membarrier is not available the reader issues the fence itself.
//
// Under ThreadSanitizer the reads of a section are marked as ignored (they race with writers
// by design, and their results are thrown away when the version moved); the version, the
// slots and everything outside sections stay checked.
//
// String keys. A reader may compare a std::string key only by bytes that live in the table's
// block (a writer frees a key's heap block without waiting for readers): InlineString reads
// the object's bytes into a copy and says whether its characters are in the object itself
// (libstdc++'s short-string buffer, up to 15 bytes). The layout is libstdc++'s (new ABI),
// checked once at run time before a store relies on it (inline_strings_ok()); other standard
// libraries read string keys under the lock.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../hash.hpp"
#include "attributes.hpp"
#include "shard_lock.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(EXPIRING_TSAN)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#define EXPIRING_IGNORE_READS_BEGIN() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define EXPIRING_IGNORE_READS_END() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define EXPIRING_IGNORE_READS_BEGIN() ((void)0)
#define EXPIRING_IGNORE_READS_END() ((void)0)
#endif

namespace expiring::detail {

inline constexpr std::size_t kReaderSlots = 256;

// ---- string keys a reader can compare --------------------------------------------------

#if defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
inline constexpr bool kInlineStrings = sizeof(std::string) == 4 * sizeof(void*);
#else
inline constexpr bool kInlineStrings = false;
#endif
inline constexpr std::size_t kInlineCapacity = 15;  // characters in the object's own buffer

// A copy of a std::string's bytes, as {data pointer, length, 16-byte buffer}: its characters
// are `inline_chars()` when the pointer points into the object at the buffer; anything else
// (a heap string, or bytes torn by a writer) is not compared.
class InlineString {
 public:
  explicit InlineString(const std::string* s) noexcept : self_(reinterpret_cast<std::uintptr_t>(s)) {
    static_assert(sizeof(std::string) >= kBuffer + kInlineCapacity + 1, "expiring: string layout");
    std::memcpy(raw_, static_cast<const void*>(s), sizeof raw_);
  }
  std::size_t size() const noexcept {
    std::size_t n = 0;
    std::memcpy(&n, raw_ + sizeof(void*), sizeof n);
    return n;
  }
  bool inline_chars() const noexcept {
    std::uintptr_t p = 0;
    std::memcpy(&p, raw_, sizeof p);
    return p == self_ + kBuffer && size() <= kInlineCapacity;
  }
  // Whether the characters are inline and equal to k's.
  bool equals(std::string_view k) const noexcept {
    return size() == k.size() && inline_chars() &&
           equal_bytes(reinterpret_cast<const char*>(raw_) + kBuffer, k.data(), k.size());
  }

 private:
  static constexpr std::size_t kBuffer = 2 * sizeof(void*);  // the buffer's offset
  std::uintptr_t self_;
  unsigned char raw_[sizeof(std::string)];
};
// Whether this program's strings have that layout (a short one inline, a long one not).
inline bool inline_strings_ok() noexcept {
  if constexpr (!kInlineStrings) {
    return false;
  } else {
    static const bool ok = [] {
      const std::string short_one("abc");
      const std::string long_one(40, 'x');
      const InlineString a(&short_one);
      const InlineString b(&long_one);
      return a.inline_chars() && a.equals("abc") && !a.equals("abd") && !b.inline_chars() && b.size() == 40;
    }();
    return ok;
  }
}

// ---- asymmetric fences ------------------------------------------------------------------

// Whether membarrier(PRIVATE_EXPEDITED) works here (registered once per process).
inline bool asymmetric_fences() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)  // (the MEMBARRIER_CMD_* are enumerators)
  static const bool ok = [] {
    const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

// The reader's half: orders its slot store before its later loads, given heavy_fence() on
// the writer's side.
inline void light_fence(bool asymmetric) noexcept {
  if (asymmetric) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    full_fence();
  }
}
inline void heavy_fence(bool asymmetric) noexcept {
#if defined(__linux__) && defined(SYS_membarrier)  // (the MEMBARRIER_CMD_* are enumerators)
  if (asymmetric) {
    if (::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
    // Cannot fail once registered; if it ever did, readers are not fenced: stop here rather
    // than free memory a reader may hold.
    std::terminate();
  }
#endif
  (void)asymmetric;
  full_fence();
}

// ---- thread ids -------------------------------------------------------------------------

// Small per-thread ids, reused after a thread exits, so that a store's slot array stays small.
class ReaderIds {
 public:
  static constexpr int kNone = -1;

  // This thread's id, or kNone when every id is taken.
  static int mine() noexcept {
    const int id = tl_id();
    if (EXPIRING_UNLIKELY(id < 0)) return first_use(id);
    return id;
  }
  // One more than the largest id handed out so far (slots above it were never used).
  static std::size_t high_water() noexcept { return static_cast<std::size_t>(top().load(std::memory_order_acquire)); }

 private:
  static constexpr int kUnassigned = -2;
  static int& tl_id() noexcept {
    static thread_local int id = kUnassigned;  // trivially destructible: no TLS wrapper call
    return id;
  }
  struct Pool {
    std::mutex mu;
    std::vector<int> free;
    int next = 0;
  };
  static std::atomic<int>& top() noexcept {
    static std::atomic<int> n{0};
    return n;
  }
  static Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: threads may exit after static destruction
    return *p;
  }
  // Gives the id back when its thread exits. The pool's mutex orders the old owner's last
  // slot writes before the next owner's first.
  struct Holder {
    int id = kNone;
    ~Holder() {
      tl_id() = kNone;  // a later destructor of this thread that reads takes the lock
      if (id < 0) return;
      std::lock_guard<std::mutex> g(pool().mu);
      pool().free.push_back(id);
    }
  };
  // mine() without an id yet: takes one (or had none to take).
  EXPIRING_NOINLINE static int first_use(int id) noexcept { return id == kUnassigned ? assign() : kNone; }
  static int assign() noexcept {
    int id = kNone;
    try {
      Pool& p = pool();
      std::lock_guard<std::mutex> g(p.mu);
      if (!p.free.empty()) {
        id = p.free.back();
        p.free.pop_back();
      } else if (p.next < static_cast<int>(kReaderSlots)) {
        id = p.next++;
        top().store(p.next, std::memory_order_release);  // before this thread's first section
      }
      if (id >= 0) p.free.reserve(static_cast<std::size_t>(p.next));  // so that ~Holder cannot throw
    } catch (...) {
      id = kNone;
    }
    static thread_local Holder holder;
    holder.id = id;
    tl_id() = id;
    return id;
  }
};

// ---- a store's slots --------------------------------------------------------------------

struct alignas(64) ReaderSlot {
  std::atomic<std::uint64_t> seq{0};  // odd inside a section; written by its thread only
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> draws{0x9E3779B97F4A7C15ull};  // a xorshift64 state, for sampling

  static void bump(std::atomic<std::uint64_t>& c) noexcept {  // single writer: no RMW
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // A pseudo-random 64-bit draw of this thread's (not tied to the order of its calls).
  std::uint64_t draw() noexcept {
    std::uint64_t x = draws.load(std::memory_order_relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    draws.store(x, std::memory_order_relaxed);
    return x;
  }
};

class Readers {
 public:
  // `enabled`: whether there are slots (kReaderSlots cache lines) at all; without them
  // every enter() fails and synchronize() has nothing to wait for.
  explicit Readers(bool enabled)
      : slots_(enabled ? new ReaderSlot[kReaderSlots] : nullptr),
        n_(enabled ? kReaderSlots : 0),
        asymmetric_(enabled && asymmetric_fences()) {
    for (std::size_t i = 0; i < n_; ++i) slots_[i].draws.store(0x9E3779B97F4A7C15ull * (2 * i + 1), std::memory_order_relaxed);
  }

  // Enters a read section on this thread's slot; nullptr when the thread has no id (the
  // caller takes the lock instead). Only on Readers built enabled (slots to enter).
  ReaderSlot* enter() noexcept {
    const int id = ReaderIds::mine();
    if (EXPIRING_UNLIKELY(id < 0)) return nullptr;
    ReaderSlot* s = slots_.get() + id;
    s->seq.store(s->seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    light_fence(asymmetric_);
    EXPIRING_IGNORE_READS_BEGIN();
    return s;
  }
  static void leave(ReaderSlot* s) noexcept {
    EXPIRING_IGNORE_READS_END();
    s->seq.store(s->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // A section for a scope: left however the scope ends (a clock may throw inside one, and a
  // section left open would make every later writer wait forever).
  class Section {
   public:
    explicit Section(Readers& r) noexcept : slot_(r.enter()) {}
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;
    ~Section() {
      if (slot_ != nullptr) leave(slot_);
    }
    // This thread's slot, or nullptr when it has no id (no section was entered).
    ReaderSlot* slot() const noexcept { return slot_; }

   private:
    ReaderSlot* slot_;
  };

  // Returns once every read section that may have started before this call has ended.
  void synchronize() const noexcept {
    if (n_ == 0) return;
    heavy_fence(asymmetric_);
    // A thread whose id is above the high water read here took it after the fence, so its
    // sections see this writer's version as odd and never enter the block being freed.
    const std::size_t n = std::min(n_, ReaderIds::high_water());
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t s = slots_[i].seq.load(std::memory_order_acquire);
      if ((s & 1) == 0) continue;
      int pauses = 0;
      while (slots_[i].seq.load(std::memory_order_acquire) == s) {
        if (++pauses < 1000) {
          EXPIRING_CPU_RELAX();
        } else {
          std::this_thread::yield();  // the reader was preempted inside its section
        }
      }
    }
  }

  // The hits and misses counted by the sections (relaxed: a moment's sum, as Stats are).
  std::uint64_t hits() const noexcept { return sum(&ReaderSlot::hits); }
  std::uint64_t misses() const noexcept { return sum(&ReaderSlot::misses); }

  // For SlotTable's hook: synchronize() on the Readers at ctx.
  static void synchronize_at(void* ctx) noexcept { static_cast<const Readers*>(ctx)->synchronize(); }

 private:
  std::uint64_t sum(std::atomic<std::uint64_t> ReaderSlot::*c) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < n_; ++i) n += (slots_[i].*c).load(std::memory_order_relaxed);
    return n;
  }

  std::unique_ptr<ReaderSlot[]> slots_;
  std::size_t n_;
  bool asymmetric_;
};

}  // namespace expiring::detail
