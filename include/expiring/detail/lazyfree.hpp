// expiring/detail/lazyfree.hpp: lazy free, Redis's lazyfree for one keyspace.
//
// Design
// ------
// With Options::lazyfree_queue_max = N > 0, removals that ask for it (UNLINK, and the
// lazyfree_lazy_* options) do not destroy the value in the caller's operation: push() moves it
// into a queue whose room (N) is reserved up front, so it never allocates and is safe inside
// an erasure. Then either
// * tick() destroys queued values within its budget (service(): the budget is checked every
//   16 values, as the expire cycle checks it), or
// * with Options::lazyfree_background, a Reclaimer thread (reclaimer.hpp) takes whole batches:
//   the queue is swapped with the reclaimer's when it is idle, at a tick or when the queue is
//   full.
// A full queue that no reclaimer can take destroys the value at once, so the memory held by
// values waiting to die is bounded by two queues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "reclaimer.hpp"

namespace expiring::detail {

template <class V>
class LazyFree {
 public:
  // Reserves the queue's room and starts the reclaimer when `background`.
  void configure(std::size_t queue_max, bool background) {
    if (queue_max != 0) queue_.reserve(queue_max);
    if (background) reclaimer_ = Reclaimer::start<V>(queue_max);
  }
  bool enabled() const noexcept { return queue_.capacity() != 0; }

  // Takes a removed value (moved from). Never allocates.
  void push(V& v) noexcept {
    if (queue_.size() == queue_.capacity() && reclaimer_) reclaimer_->try_hand_off(queue_);
    if (queue_.size() < queue_.capacity()) {
      queue_.push_back(std::move(v));
    } else {
      [[maybe_unused]] V dead(std::move(v));
    }
  }

  // tick()'s share: hands the queue to an idle reclaimer, or destroys queued values until
  // budget_now() - start passes timelimit. Returns how many this call destroyed.
  template <class BudgetNow>
  std::uint64_t service(BudgetNow&& budget_now, std::int64_t timelimit) {
    if (reclaimer_) {
      reclaimer_->try_hand_off(queue_);
      return 0;
    }
    if (queue_.empty()) return 0;
    const std::int64_t start = budget_now();
    std::uint64_t n = 0;
    while (!queue_.empty()) {
      queue_.pop_back();
      ++n;
      if (n % 16 == 0 && budget_now() - start > timelimit) break;
    }
    return n;
  }

  // FLUSHDB (synchronous): queued values go now.
  void clear() noexcept { queue_.clear(); }

  // Values waiting: in the queue, and handed to the reclaimer but not yet destroyed.
  std::size_t pending() const noexcept { return queue_.size() + (reclaimer_ ? reclaimer_->pending() : 0); }
  // Values the reclaimer destroyed since the last reset_stats().
  std::uint64_t reclaimed() const noexcept { return reclaimer_ ? reclaimer_->freed() - reclaimed_base_ : 0; }
  void reset_stats() noexcept {
    if (reclaimer_) reclaimed_base_ = reclaimer_->freed();
  }

 private:
  std::vector<V> queue_;  // capacity reserved by configure()
  // Shared, so the store stays copyable: a copy hands its values to the same thread (hand-off
  // is safe from several stores), which stops with the last one.
  std::shared_ptr<Reclaimer> reclaimer_;
  std::uint64_t reclaimed_base_ = 0;
};

}  // namespace expiring::detail
