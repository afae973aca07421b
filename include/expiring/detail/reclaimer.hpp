// expiring/detail/reclaimer.hpp: the background reclaimer of lazy free.
//
// Design
// ------
// With Options::lazyfree_background, a thread destroys values the store has removed, so that
// neither the caller's operation nor tick() pays for destroying a large value. Redis does the
// same with its lazyfree bio thread.
//
// Hand-off is by batch, not by value, so the store's hot paths take no lock and allocate
// nothing. The store fills its own queue (a vector whose room is reserved up front); at a
// hand-off point it swaps that vector with the reclaimer's, if the reclaimer has finished the
// previous batch. Both vectors reserve the same room, so a swap never allocates, and memory
// held by values waiting to die is bounded by two queues. If the reclaimer is still busy the
// store keeps filling its queue, and destroys a value itself once the queue is full. The
// reclaimer is not a template (see below): one per program whatever the stores' value types.
#ifndef EXPIRING_DETAIL_RECLAIMER_HPP
#define EXPIRING_DETAIL_RECLAIMER_HPP

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "attributes.hpp"

namespace expiring::detail {

// The reclaimer is not a template: a program compiles its thread, lock and counters once
// whatever its value types (std::make_shared of a Reclaimer<V>, its std::thread and its
// condition-variable wait cost each store type's constructor about 0.1 s of g++ -O2). It
// knows its batch, a std::vector<V> on the heap, only through three functions of V.
struct BatchOps {
  std::size_t (*drain)(void* batch);             // destroys the values, keeps the room; how many
  void (*swap)(void* batch, void* queue);        // exchanges the batch with a queue of the same V
  void (*destroy)(void* batch) noexcept;         // deletes the batch
};

template <class V>
struct BatchOf {
  static std::size_t drain(void* batch) {
    auto& b = *static_cast<std::vector<V>*>(batch);
    const std::size_t n = b.size();
    b.clear();  // keeps the reserved room for the next swap
    return n;
  }
  static void swap(void* batch, void* queue) {
    static_cast<std::vector<V>*>(batch)->swap(*static_cast<std::vector<V>*>(queue));
  }
  static void destroy(void* batch) noexcept { delete static_cast<std::vector<V>*>(batch); }
  static constexpr BatchOps ops{&drain, &swap, &destroy};
};

class Reclaimer {
 public:
  // A reclaimer of std::vector<V> batches of `room` values, its thread started; shared, so
  // that copies of a store hand their values to the same thread.
  template <class V>
  static std::shared_ptr<Reclaimer> start(std::size_t room) {
    auto batch = std::make_unique<std::vector<V>>();
    batch->reserve(room);
    return start(batch.release(), BatchOf<V>::ops);
  }
  // Takes ownership of `batch` (ops.destroy deletes it, also when this throws).
  EXPIRING_NOINLINE static std::shared_ptr<Reclaimer> start(void* batch, const BatchOps& ops) {
    std::unique_ptr<Reclaimer> owner;
    try {
      owner.reset(new Reclaimer(batch, ops));
    } catch (...) {
      ops.destroy(batch);
      throw;
    }
    // From here the reclaimer owns the batch (a throw below destroys both, once).
    std::shared_ptr<Reclaimer> r(std::move(owner));
    // std::thread, not quiet_thread(): the core includes no POSIX header (signal.h
    // pulls in unistd.h), so this thread has its creator's signal mask.
    r->thread_ = std::thread([p = r.get()] { p->run(); });
    return r;
  }
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;
  // Destroys what it was given, then stops.
  EXPIRING_NOINLINE ~Reclaimer() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
      }
      wake_.notify_one();
      thread_.join();
    }
    ops_.destroy(batch_);
  }

  // Gives `queue`'s values to the thread if it is idle, handing back its empty vector (of
  // the same reserved room) in exchange. False, and `queue` untouched, while it is busy.
  // Never blocks on the destruction itself: the lock guards only the swap. Safe to call from
  // several threads (copies of a store share a reclaimer): busy_ is checked again under the
  // lock. V is the one start<V>() was given.
  template <class V>
  bool try_hand_off(std::vector<V>& queue) {
    return !queue.empty() && hand_off(&queue, queue.size());
  }

  // Values handed to the thread and not yet destroyed.
  std::size_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  // Values destroyed since the thread started.
  std::uint64_t freed() const noexcept { return freed_.load(std::memory_order_acquire); }

 private:
  Reclaimer(void* batch, const BatchOps& ops) noexcept : batch_(batch), ops_(ops) {}

  EXPIRING_NOINLINE bool hand_off(void* queue, std::size_t n) {
    if (busy_.load(std::memory_order_acquire)) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (busy_.load(std::memory_order_relaxed)) return false;
      ops_.swap(batch_, queue);
      pending_.store(n, std::memory_order_relaxed);
      busy_.store(true, std::memory_order_release);
    }
    wake_.notify_one();
    return true;
  }

  EXPIRING_NOINLINE void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      // busy_ is set only with a non-empty batch, and cleared only here.
      wake_.wait(lock, [this] { return stop_ || busy_.load(std::memory_order_relaxed); });
      if (!busy_.load(std::memory_order_relaxed)) return;  // stop_ and nothing left
      // Destroy outside the lock: the store's try_hand_off() sees busy_ and does not wait.
      // Only this thread touches the batch while busy_ is set.
      lock.unlock();
      const std::size_t n = ops_.drain(batch_);
      // Pending first, then freed, both release: whoever reads pending() == 0 sees the
      // values' destructors done, and whoever sees freed() count them sees pending() at 0.
      pending_.store(0, std::memory_order_release);
      freed_.fetch_add(n, std::memory_order_release);
      lock.lock();
      busy_.store(false, std::memory_order_release);
    }
  }

  void* batch_;  // a std::vector<V>: the values being destroyed; empty (with its room) when idle
  BatchOps ops_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> busy_{false};
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> freed_{0};
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace expiring::detail

#endif  // EXPIRING_DETAIL_RECLAIMER_HPP
