// expiring/detail/notifier.hpp: the notifier room: what a call tells the outside world.
//
// Design
// ------
// A store call reports its changes two ways: as events for the listener (KeyEvent, queued in
// an EventQueue and dispatched when the store is consistent again) and as records for the
// change feed (Change, grouped into one unit per call, as Redis 7 propagates a command to
// its replicas and its AOF: docs/semantics.md D28-D33). The engine says what happened to an
// entry (a cause, the entry as it now is); this room decides what each consumer sees:
//
//   changed()         a change that leaves the entry in place: SET k v PXAT, PEXPIREAT,
//                     PERSIST, SET k v KEEPTTL, or the whole hash after a field change,
//                     with the field command that made it; a `set` followed by its own
//                     `expire` is one record
//   renamed()         RENAME: two events, one record
//   removed()         a removal by the caller (DEL or UNLINK) or by eviction
//   expired()         only the primary decides that a key expired: a lazy expiry's DEL waits
//                     for the change of the call that found it; one found by tick(), scan()
//                     or random_key() goes on its own
//   end_call()        the call's unit closes, then its events are dispatched
//
// Nothing here reads the keyspace: the engine passes what a record needs. With no feed set,
// each member costs one test (recording()); with no listener, an event costs one bit test.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "../change_feed.hpp"
#include "../events.hpp"
#include "arith.hpp"
#include "attributes.hpp"
#include "event_queue.hpp"

namespace expiring::detail {

template <class K, class V>
class Notifier {
 public:
  using change_type = Change<K, V>;
  using events_type = EventQueue<K, V>;
  using feed_type = ChangeFeed<K, V>;

  // An entry as the change feed sees it: `id` tells one entry from another within a call (a
  // `set` and the `expire` that follows it are one record); `deadline` is set when the entry
  // has a TTL.
  struct Subject {
    const K& key;
    const V& value;
    const void* id;
    std::optional<std::int64_t> deadline;
  };

  // (Events are pushed through events(); the listener is set by set_listener().)
  events_type& events() noexcept { return events_; }
  const events_type& events() const noexcept { return events_; }
  feed_type& feed() noexcept { return feed_; }
  const feed_type& feed() const noexcept { return feed_; }
  // Whether a change feed is set: when not, no record is made.
  bool recording() const noexcept { return feed_.on(); }
  // Whether a key's write or TTL change needs nothing from this room: no feed, no listener
  // of `set` or `expire` (the engine's plain_writes()). One load: kept by the two setters.
  bool quiet_writes() const noexcept { return quiet_writes_; }

  // The feed and the listener are set here, so that quiet_writes() follows them.
  void set_feed(typename feed_type::function_type fn) {
    feed_.set(std::move(fn));
    update_quiet();
  }
  void set_listener(typename events_type::listener_type listener, KeyEventCauses causes) {
    events_.set_listener(std::move(listener), causes);
    update_quiet();
  }

  // The record of a change that leaves its entry in place. `idle`: the store has an idle TTL
  // (an update moves the deadline, so it is sent). `emptied`: a hash whose last field went,
  // whose DEL is the record (the engine removes it next).
  // A field change of a hash says which (`field_op`, `fields`: Change's members, D32).
  EXPIRING_INLINE void changed(KeyEventCause cause, const Subject& s, bool idle, bool emptied,
                               FieldOp field_op = FieldOp::none, const V* fields = nullptr) {
    const change_type as_is{ChangeOp::set, &s.key, &s.value, nullptr, s.deadline ? *s.deadline : 0,
                            s.deadline ? ChangeTtl::at : ChangeTtl::none, s.deadline};
    switch (cause) {
      case KeyEventCause::set:        // SET ... EX/PX/EXAT/PXAT: SET k v PXAT ms
      case KeyEventCause::copy_to:    // COPY and the other half of a transfer: the copy as it is
      case KeyEventCause::rename_to:
        feed_.record(as_is);
        set_ = s.id;  // the `expire` event that follows is part of this record
        return;
      case KeyEventCause::expire:
        if (set_ != s.id) {
          feed_.record(change_type{ChangeOp::pexpireat, &s.key, nullptr, nullptr, s.deadline.value_or(kInt64Max)});
        }
        return;
      case KeyEventCause::persist:
        feed_.record(change_type{ChangeOp::persist, &s.key});
        return;
      case KeyEventCause::update:  // modify(), incr_by(): SET k v KEEPTTL (an idle TTL moves too)
        feed_.record(idle ? as_is : change_type{ChangeOp::set, &s.key, &s.value, nullptr, 0, ChangeTtl::keep, s.deadline});
        return;
      case KeyEventCause::rename_from:  // the first half of a transfer: the key leaves
        feed_.record(change_type{ChangeOp::del, &s.key});
        return;
      case KeyEventCause::hset:  // a hash's fields changed: the hash as it now is, and how (D32)
      case KeyEventCause::hdel:
      case KeyEventCause::hexpire:
      case KeyEventCause::hpersist:
      case KeyEventCause::hexpired:
        if (!emptied) {  // (an emptied hash's DEL is its record) one record per field change,
          change_type c = as_is;  // with the key's deadline: an idle TTL may be new
          c.field_op = field_op;
          c.fields = fields;
          feed_.record(c);
        }
        return;
      case KeyEventCause::del:
      case KeyEventCause::expired:
      case KeyEventCause::evicted:
        return;  // removals are recorded by removed() and expired()
    }
  }

  // RENAME within the store: the two events, one record (`to` is the entry as it now is).
  void renamed(const K& from, const Subject& to) {
    events_.push(KeyEventCause::rename_from, from);
    events_.push(KeyEventCause::rename_to, to.key);
    if (recording()) {
      feed_.record(change_type{ChangeOp::rename, &from, &to.value, &to.key, 0, ChangeTtl::none, to.deadline});
    }
  }

  // The record of a removal (before the entry goes). Cause `del`: `verb` (DEL or UNLINK, as
  // the caller asked); `evicted`: DEL, or UNLINK under lazyfree-lazy-eviction; `expired`:
  // nothing here (expired() records it).
  void removed(KeyEventCause cause, const K& key, ChangeOp verb, bool unlink_evictions) {
    if (!recording()) return;
    if (cause == KeyEventCause::evicted) {
      feed_.standalone(change_type{unlink_evictions ? ChangeOp::unlink : ChangeOp::del, &key});
    } else if (cause != KeyEventCause::expired) {
      feed_.record(change_type{verb, &key});
    }
  }
  // The record of an expiry: DEL, or UNLINK under lazyfree-lazy-expire. `active`: found by
  // tick(), so it goes on its own; a lazy one travels with the call's change.
  void expired(const K& key, bool active, bool unlink) {
    if (!recording()) return;
    if (active || arbitrary_) {
      feed_.standalone(change_type{unlink ? ChangeOp::unlink : ChangeOp::del, &key});
    } else {
      feed_.lazy_delete(key, unlink);
    }
  }
  // An idle TTL moved by a read: the new deadline.
  void deadline_moved(const K& key, std::int64_t deadline) {
    if (recording()) feed_.record(change_type{ChangeOp::pexpireat, &key, nullptr, nullptr, deadline});
  }

  // The end of a call: its feed unit closes, then its events are dispatched; `lazy_free(V&)`
  // takes the removed values marked lazy once the listener has seen them.
  template <class LazyFree>
  void end_call(LazyFree&& lazy_free) {
    if (recording()) {
      set_ = nullptr;
      feed_.end_unit();
    }
    events_.flush(std::forward<LazyFree>(lazy_free));
  }

  // scan() and random_key(): their lazy DELs go one by one while the guard lives (restored on
  // the way out, a throw from scan()'s function included).
  class ArbitraryKeys {
   public:
    explicit ArbitraryKeys(Notifier& n) noexcept : flag_(n.arbitrary_), was_(std::exchange(n.arbitrary_, true)) {}
    ArbitraryKeys(const ArbitraryKeys&) = delete;
    ArbitraryKeys& operator=(const ArbitraryKeys&) = delete;
    ~ArbitraryKeys() { flag_ = was_; }

   private:
    bool& flag_;
    bool was_;
  };

 private:
  void update_quiet() noexcept {
    quiet_writes_ = !feed_.on() && !events_.wants(KeyEventCause::set) && !events_.wants(KeyEventCause::expire);
  }

  events_type events_;
  feed_type feed_;
  const void* set_ = nullptr;  // the entry the current call's last `set` record was about
  bool quiet_writes_ = true;
  bool arbitrary_ = false;     // in scan() or random_key(): lazy DELs go one by one
};

}  // namespace expiring::detail
