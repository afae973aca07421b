// expiring/detail/event_queue.hpp: the store's change events, queued and dispatched.
//
// Design
// ------
// Only the causes the listener subscribed to are queued (KeyEventCauses: one bit test per
// event otherwise). An operation never calls the listener while the store is in the middle of a change: it
// queues each event (a key is copied, a removed key and value are moved in, which the erasure
// hands over just before it destroys the entry), and the store dispatches the queue once it is
// consistent again, just before the operation returns. A listener may use the store; events
// it causes are queued behind the ones being dispatched and delivered by the same loop, in
// order. A throwing listener still gets every queued event; the first exception is rethrown
// after the last one (the "Exceptions from your code" contract of expiring_store.hpp). Removed
// values marked lazy go to the lazy-free queue once the listener has seen them.
// The queue itself is created by the first listener and reached through virtual calls, so a
// program that never sets one compiles none of it (bench/compile_cost: what the library costs
// a translation unit).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "../events.hpp"
#include "clone_ptr.hpp"

namespace expiring::detail {

template <class K, class V>
class EventQueue {
 public:
  using event_type = KeyEvent<K, V>;
  using listener_type = std::function<void(const event_type&)>;

  // The listener and the causes it receives (an empty function: no listener). The first
  // listener creates the queue: a store that never has one carries no queue's code.
  void set_listener(listener_type listener, KeyEventCauses causes) {
    if (!queue_) {
      if (!listener) return;
      queue_.template emplace<Queue>();
    }
    queue_->listener = std::move(listener);
    causes_ = queue_->listener ? causes : KeyEventCauses{};
  }
  // Whether anyone listens to `cause`: when not, nothing is queued and removals keep nothing.
  bool wants(KeyEventCause cause) const noexcept { return causes_.contains(cause); }

  // An event about a key that stays (set, expire, persist, rename_to, ...).
  void push(KeyEventCause cause, const K& key) {
    if (wants(cause)) queue_->push(cause, key);
  }
  // An event about a removed key, which carries the value; only when wants(cause). `lazy`:
  // after the listener saw it, the value goes to the lazy-free queue.
  void push_removed(KeyEventCause cause, K&& key, std::optional<V> value, bool lazy) {
    queue_->push_removed(cause, std::move(key), std::move(value), lazy);
  }

  // Delivers the queued events, unless a dispatch is already running (a listener's own
  // operation: the outer loop delivers its events). lazy_free(V&) takes the lazy values.
  template <class LazyFree>
  void flush(LazyFree&& lazy_free) {
    if (queue_ && queue_->queued) {
      queue_->dispatch([](void* f, V& v) { (*static_cast<std::remove_reference_t<LazyFree>*>(f))(v); }, &lazy_free);
    }
  }

 private:
  using LazyFreeFn = void (*)(void*, V&);
  // The queue behind the first listener, reached through virtual calls: its code (the
  // events' vector, the dispatch loop) is compiled only in a program that sets a listener.
  struct QueueBase {
    virtual ~QueueBase() = default;
    virtual std::unique_ptr<QueueBase> clone() const = 0;
    virtual void push(KeyEventCause cause, const K& key) = 0;
    virtual void push_removed(KeyEventCause cause, K&& key, std::optional<V> value, bool lazy) = 0;
    virtual void dispatch(LazyFreeFn lazy_free, void* ctx) = 0;
    listener_type listener;
    bool queued = false;  // events are waiting
  };
  struct Queue final : QueueBase {
    struct Pending {
      KeyEventCause cause;
      K key;
      std::optional<V> value;
      bool lazy;
    };
    std::vector<Pending> pending;
    bool dispatching = false;

    std::unique_ptr<QueueBase> clone() const override { return std::make_unique<Queue>(*this); }
    void push(KeyEventCause cause, const K& key) override {
      pending.push_back(Pending{cause, key, std::nullopt, false});
      this->queued = true;
    }
    void push_removed(KeyEventCause cause, K&& key, std::optional<V> value, bool lazy) override {
      pending.push_back(Pending{cause, std::move(key), std::move(value), lazy});
      this->queued = true;
    }
    void dispatch(LazyFreeFn lazy_free, void* ctx) override {
      if (dispatching) return;
      if (!this->listener) {
        pending.clear();
        this->queued = false;
        return;
      }
      dispatching = true;
      struct Reset {
        Queue* q;
        ~Reset() {
          q->dispatching = false;
          q->pending.clear();
          q->queued = false;
        }
      } reset{this};
      std::exception_ptr first_error;
      for (std::size_t i = 0; i < pending.size(); ++i) {
        Pending ev = std::move(pending[i]);
        try {
          this->listener(event_type{ev.cause, ev.key, ev.value ? &*ev.value : nullptr});
        } catch (...) {
          if (!first_error) first_error = std::current_exception();
        }
        if (ev.lazy && ev.value) lazy_free(ctx, *ev.value);
        if (!this->listener) break;
      }
      if (first_error) std::rethrow_exception(first_error);  // unwinding through Reset empties the queue
    }
  };

  KeyEventCauses causes_;
  ClonePtr<QueueBase> queue_;  // copied with the store (a copy has the same listener)
};

}  // namespace expiring::detail
