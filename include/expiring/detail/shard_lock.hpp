// expiring/detail/shard_lock.hpp: the lock of one shard of ConcurrentStore.
//
// A test-and-test-and-set spinlock: one byte, no system call on any path. Critical sections
// are one engine operation (tens to hundreds of ns), shorter than a futex round trip, so a
// waiter spins on a read of the lock (its cache line stays shared until the owner releases
// it) with a pause between reads, doubling the pause up to a bound, and after that yields its
// time slice, so that a preempted owner (the usual case on an oversubscribed machine) gets the
// CPU back instead of being spun against. The shard puts it on its own cache line.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define EXPIRING_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define EXPIRING_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define EXPIRING_CPU_RELAX() ((void)0)
#endif

namespace expiring::detail {

class ShardLock {
 public:
  ShardLock() = default;
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    contended();
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  void contended() noexcept {
    constexpr int kMaxPauses = 64;  // ~64 x 10-140 cycles per read: then yield
    int pauses = 1;
    for (;;) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (pauses <= kMaxPauses) {
          for (int i = 0; i < pauses; ++i) EXPIRING_CPU_RELAX();
          pauses *= 2;
        } else {
          std::this_thread::yield();
        }
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  std::atomic<bool> locked_{false};
};

}  // namespace expiring::detail
