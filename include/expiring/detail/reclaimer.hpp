// The background reclaimer of lazy free (Options::lazyfree_background): a thread that
// destroys values the store has removed, so that neither the caller's operation nor tick()
// pays for destroying a large value. Redis does the same with its lazyfree bio thread.
//
// Hand-off is by batch, not by value, so the store's hot paths take no lock and allocate
// nothing. The store fills its own queue (a vector whose room is reserved up front); at a
// hand-off point it swaps that vector with the reclaimer's, if the reclaimer has finished the
// previous batch. Both vectors reserve the same room, so a swap never allocates, and memory
// held by values waiting to die is bounded by two queues. If the reclaimer is still busy the
// store keeps filling its queue, and destroys a value itself once the queue is full.
#ifndef EXPIRING_DETAIL_RECLAIMER_HPP
#define EXPIRING_DETAIL_RECLAIMER_HPP

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace expiring::detail {

template <class V>
class Reclaimer {
 public:
  explicit Reclaimer(std::size_t room) {
    batch_.reserve(room);
    // std::thread, not quiet_thread(): the core includes no POSIX header (signal.h
    // pulls in unistd.h), so this thread has its creator's signal mask.
    thread_ = std::thread([this] { run(); });
  }
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;
  // Destroys what it was given, then stops.
  ~Reclaimer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  // Gives `queue`'s values to the thread if it is idle, handing back its empty vector (of
  // the same reserved room) in exchange. False, and `queue` untouched, while it is busy.
  // Never blocks on the destruction itself: the lock guards only the swap. Safe to call from
  // several threads (copies of a store share a reclaimer): the batch is checked under the lock.
  bool try_hand_off(std::vector<V>& queue) {
    if (queue.empty() || busy_.load(std::memory_order_acquire)) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // busy_ changes only under the lock: if it is clear here, the thread is not touching
      // batch_, which is empty. (Checked again: another store may have handed off meanwhile.)
      if (busy_.load(std::memory_order_relaxed)) return false;
      batch_.swap(queue);
      pending_.store(batch_.size(), std::memory_order_relaxed);
      busy_.store(true, std::memory_order_release);
    }
    wake_.notify_one();
    return true;
  }

  // Values handed off and not yet destroyed (Redis lazyfree_pending_objects).
  std::size_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  // Values destroyed by the thread so far (Redis lazyfreed_objects).
  std::uint64_t freed() const noexcept { return freed_.load(std::memory_order_acquire); }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !batch_.empty(); });
      if (batch_.empty()) return;  // stop_ and nothing left
      // Destroy outside the lock: the store's try_hand_off() sees busy_ and does not wait.
      // Only this thread touches batch_ while busy_ is set.
      lock.unlock();
      const std::size_t n = batch_.size();
      batch_.clear();  // keeps the reserved room for the next swap
      // Pending first, then freed, both release: whoever reads pending() == 0 sees the
      // values' destructors done, and whoever sees freed() count them sees pending() at 0.
      pending_.store(0, std::memory_order_release);
      freed_.fetch_add(n, std::memory_order_release);
      lock.lock();
      busy_.store(false, std::memory_order_release);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<V> batch_;  // the values being destroyed; empty (with its room) when idle
  std::atomic<bool> busy_{false};
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> freed_{0};
  bool stop_ = false;
  std::thread thread_;  // last: started once everything else is built
};

}  // namespace expiring::detail

#endif  // EXPIRING_DETAIL_RECLAIMER_HPP
