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
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "../events.hpp"

namespace expiring::detail {

template <class K, class V>
class EventQueue {
 public:
  using event_type = KeyEvent<K, V>;
  using listener_type = std::function<void(const event_type&)>;

  // The listener and the causes it receives (an empty function: no listener).
  void set_listener(listener_type listener, KeyEventCauses causes) {
    listener_ = std::move(listener);
    causes_ = listener_ ? causes : KeyEventCauses{};
  }
  // Whether anyone listens to `cause`: when not, nothing is queued and removals keep nothing.
  bool wants(KeyEventCause cause) const noexcept { return causes_.contains(cause); }

  // An event about a key that stays (set, expire, persist, rename_to, ...).
  void push(KeyEventCause cause, const K& key) {
    if (wants(cause)) pending_.push_back(Pending{cause, key, std::nullopt, false});
  }
  // An event about a removed key, which carries the value. `lazy`: after the listener saw it,
  // the value goes to the lazy-free queue.
  void push_removed(KeyEventCause cause, K&& key, std::optional<V> value, bool lazy) {
    pending_.push_back(Pending{cause, std::move(key), std::move(value), lazy});
  }

  // Delivers the queued events, unless a dispatch is already running (a listener's own
  // operation: the outer loop delivers its events). lazy_free(V&) takes the lazy values.
  template <class LazyFree>
  void flush(LazyFree&& lazy_free) {
    if (!pending_.empty()) dispatch(lazy_free);
  }

 private:
  struct Pending {
    KeyEventCause cause;
    K key;
    std::optional<V> value;
    bool lazy;
  };

  template <class LazyFree>
  void dispatch(LazyFree& lazy_free) {
    if (dispatching_ || !listener_) {
      if (!listener_) pending_.clear();
      return;
    }
    dispatching_ = true;
    struct Reset {
      EventQueue* q;
      ~Reset() {
        q->dispatching_ = false;
        q->pending_.clear();
      }
    } reset{this};
    std::exception_ptr first_error;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      Pending ev = std::move(pending_[i]);
      try {
        listener_(event_type{ev.cause, ev.key, ev.value ? &*ev.value : nullptr});
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
      if (ev.lazy && ev.value) lazy_free(*ev.value);
      if (!listener_) break;
    }
    if (first_error) std::rethrow_exception(first_error);  // unwinding through Reset empties the queue
  }

  listener_type listener_;
  KeyEventCauses causes_;
  std::vector<Pending> pending_;
  bool dispatching_ = false;
};

}  // namespace expiring::detail
