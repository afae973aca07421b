// expiring/detail/shard_lock.hpp: the lock of one shard of ConcurrentStore, and its version.
//
// A test-and-test-and-set spinlock over a 64-bit sequence number (a seqlock's writer side):
// the number is odd while the lock is held and grows by 2 with every critical section, so it
// is also the shard's version, which optimistic readers load without writing (see
// read_section.hpp): a reader that saw the same even number before and after its reads read
// a state no writer touched in between. No system call on any path. Critical sections are
// one engine operation (tens to hundreds of ns), shorter than a futex round trip, so a waiter
// spins on a load (its cache line stays shared until the owner releases it) with a pause
// between loads, doubling the pause up to a bound, and then yields its time slice, so that a
// preempted owner (the usual case on an oversubscribed machine) gets the CPU back instead of
// being spun against. The shard puts it on its own cache line.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define EXPIRING_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define EXPIRING_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define EXPIRING_CPU_RELAX() ((void)0)
#endif

#if defined(__SANITIZE_THREAD__)
#define EXPIRING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EXPIRING_TSAN 1
#endif
#endif

namespace expiring::detail {

// A full fence. ThreadSanitizer does not model standalone fences (GCC refuses them under
// -fsanitize=thread), so its builds use a sequentially consistent read-modify-write instead.
inline void full_fence() noexcept {
#if defined(EXPIRING_TSAN)
  static std::atomic<int> word{0};
  (void)word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

class ShardLock {
#if defined(EXPIRING_TSAN)
  static constexpr std::memory_order kTakeOrder = std::memory_order_acq_rel;
#else
  static constexpr std::memory_order kTakeOrder = std::memory_order_acquire;
#endif

 public:
  ShardLock() = default;
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

  void lock() noexcept {
    std::uint64_t v = seq_.load(std::memory_order_relaxed);
    if ((v & 1) == 0 && seq_.compare_exchange_strong(v, v + 1, kTakeOrder, std::memory_order_relaxed)) {
      publish_odd();
      return;
    }
    contended();
  }
  bool try_lock() noexcept {
    std::uint64_t v = seq_.load(std::memory_order_relaxed);
    if ((v & 1) != 0 || !seq_.compare_exchange_strong(v, v + 1, kTakeOrder, std::memory_order_relaxed)) {
      return false;
    }
    publish_odd();
    return true;
  }
  // Only the owner writes seq_ while it is odd, so a plain increment suffices.
  void unlock() noexcept { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // ---- the reader's side (no writes) ----

  // The version to validate against; odd means a writer holds the lock.
  std::uint64_t read_begin() const noexcept { return seq_.load(std::memory_order_acquire); }
  // Whether nothing was written since read_begin() returned v (even): the loads before this
  // call are ordered before its load of the version.
  bool read_valid(std::uint64_t v) const noexcept {
#if defined(EXPIRING_TSAN)
    // (No standalone fence under TSan: a read-modify-write of the version orders the same.)
    return seq_.fetch_add(0, std::memory_order_acq_rel) == v;
#else
    std::atomic_thread_fence(std::memory_order_acquire);
    return seq_.load(std::memory_order_relaxed) == v;
#endif
  }

 private:
  void contended() noexcept {
    constexpr int kMaxPauses = 64;  // ~64 x 10-140 cycles per load: then yield
    int pauses = 1;
    for (;;) {
      std::uint64_t v = seq_.load(std::memory_order_relaxed);
      while ((v & 1) != 0) {
        if (pauses <= kMaxPauses) {
          for (int i = 0; i < pauses; ++i) EXPIRING_CPU_RELAX();
          pauses *= 2;
        } else {
          std::this_thread::yield();
        }
        v = seq_.load(std::memory_order_relaxed);
      }
      if (seq_.compare_exchange_weak(v, v + 1, kTakeOrder, std::memory_order_relaxed)) {
        publish_odd();
        return;
      }
    }
  }
  // The seqlock writer's fence: the odd version becomes visible before any store of the
  // critical section (an acquire CAS alone lets later stores pass it on weakly ordered CPUs;
  // on x86 this is a compiler barrier). Under TSan the CAS is made acq_rel instead below.
  static void publish_odd() noexcept {
#if !defined(EXPIRING_TSAN)
    std::atomic_thread_fence(std::memory_order_release);
#endif
  }

  mutable std::atomic<std::uint64_t> seq_{0};  // mutable: read_valid()'s RMW under TSan
};

}  // namespace expiring::detail
