// expiring/change_feed.hpp: the change feed, every effective change of a store as the Redis
// command that replays it, in absolute time.
//
// Design
// ------
// A store with a feed (ExpiringStore::set_change_feed) hands it one Change per effective
// change, synchronously, in the order the changes happen, as Redis 7 propagates commands to
// its replicas and its AOF (docs/semantics.md §4 and D28-D33):
//   * every TTL is absolute: SET k v PXAT ms, PEXPIREAT k ms; a relative TTL never travels;
//   * a deletion is DEL, or UNLINK when the caller unlinked (or lazyfree_lazy_expire /
//     lazyfree_lazy_eviction asked for a lazy free of an expiry or eviction), including the
//     deletions by expiry: only the primary decides that a key expired;
//   * reads and writes that change nothing send nothing;
//   * a lazy expiry inside a call waits for that call's own change: the two travel together
//     as MULTI, DEL k, <change>, EXEC. A call that reclaims and changes nothing else sends
//     its DEL alone (two or more go in one MULTI). tick()'s deletions, evictions and the
//     lazy expiries of scan() and random_key() go one by one, as Redis's.
// A record's pointers live for the duration of the call: serialize what you keep. The feed
// runs in the middle of the store's update and must not call the store; it must not throw
// either (a throw calls std::terminate, as Redis stops when it cannot write its AOF): a log
// that can fail records the failure itself (AppendLog does).
//
// The other direction is ExpiringStore::apply(): it replays a record as the primary made it,
// with every key valid (nothing is stale to it), so that a replica or a log replay reaches the
// primary's state whatever its own clock says.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "detail/clone_ptr.hpp"

namespace expiring {

// What a record does, as the Redis command that replays it.
enum class ChangeOp : std::uint8_t {
  set,        // SET key value, with ttl: none (no TTL), at (PXAT at_ms) or keep (KEEPTTL)
  pexpireat,  // PEXPIREAT key at_ms
  persist,    // PERSIST key
  del,        // DEL key
  unlink,     // UNLINK key
  rename,     // RENAME key to
  flushall,   // FLUSHALL: clear()
  multi,      // MULTI: the records up to the next exec are one unit
  exec,       // EXEC
};

// The TTL a `set` record gives its key.
enum class ChangeTtl : std::uint8_t {
  none,  // SET key value: no TTL
  at,    // SET key value PXAT at_ms
  keep,  // SET key value KEEPTTL: the TTL the key has (an in-place update: modify(), incr_by())
};

// What a hash's `set` record changed in its fields (D32): the Redis 7.4 command that makes
// the same change, for a consumer that sends field commands instead of the whole hash.
enum class FieldOp : std::uint8_t {
  none,        // not a field change (or the whole hash was replaced)
  hset,        // HSET key field value ...: the fields with their new values (HINCRBY keeps a
               // field's deadline: an hpexpireat record of it follows, in the same unit)
  hdel,        // HDEL key field ...: removed by the caller, by a past field time or by expiry
  hpexpireat,  // HPEXPIREAT key at FIELDS n field ...: each field with its new deadline
  hpersist,    // HPERSIST key FIELDS n field ...
};

// The Redis command's name, as "HSET"; "" for none.
constexpr const char* to_string(FieldOp op) noexcept {
  switch (op) {
    case FieldOp::none: return "";
    case FieldOp::hset: return "HSET";
    case FieldOp::hdel: return "HDEL";
    case FieldOp::hpexpireat: return "HPEXPIREAT";
    case FieldOp::hpersist: return "HPERSIST";
  }
  return "?";
}

// The Redis command's name, as "SET" or "PEXPIREAT".
constexpr const char* to_string(ChangeOp op) noexcept {
  switch (op) {
    case ChangeOp::set: return "SET";
    case ChangeOp::pexpireat: return "PEXPIREAT";
    case ChangeOp::persist: return "PERSIST";
    case ChangeOp::del: return "DEL";
    case ChangeOp::unlink: return "UNLINK";
    case ChangeOp::rename: return "RENAME";
    case ChangeOp::flushall: return "FLUSHALL";
    case ChangeOp::multi: return "MULTI";
    case ChangeOp::exec: return "EXEC";
  }
  return "?";
}

// One record, as the feed sees it: pointers into the store or into the caller's data.
template <class K, class V>
struct Change {
  ChangeOp op = ChangeOp::set;  // the command; it says which members below are meaningful
  const K* key = nullptr;    // every op but flushall, multi and exec
  const V* value = nullptr;  // set; for rename (from the store's feed), the value moved
  const K* to = nullptr;     // rename: the new name
  std::int64_t at_ms = 0;    // pexpireat, and set with ttl == ChangeTtl::at (Unix ms)
  ChangeTtl ttl = ChangeTtl::none;  // set: no TTL, PXAT at_ms, or KEEPTTL
  // The whole state after a set or a rename, from the store's feed: the deadline the key
  // (rename: the new name) now has, nullopt for none. A log that writes every change as the
  // key's whole state (append_log.hpp) needs it for KEEPTTL and RENAME; apply() does not
  // read it.
  std::optional<std::int64_t> deadline = std::nullopt;
  // The record's place in its store's stream: 1, 2, 3, ... from the store's first record, one
  // number per record (MULTI and EXEC included), so that a reader can tell where it is and
  // a snapshot can say where the stream after it starts (SnapshotInfo::feed_seq). Set by the
  // store's feed as it sends the record (mutable: numbered in place, without a copy); apply()
  // does not read it.
  mutable std::uint64_t seq = 0;
  // A `set` of a hash made by a field change also says what changed (D32): `fields` is a
  // hash holding the fields concerned (for hset, and hpexpireat, with their values and
  // deadlines as they now are; for hdel and hpersist the names count, not the values), and
  // `value` is still the whole hash after the change, with the key's deadline. apply() and a
  // log of whole states read `value`; a Redis replica is sent the field command.
  FieldOp field_op = FieldOp::none;
  // The hash of the fields concerned, as above; nullptr when field_op is none.
  const V* fields = nullptr;
};

// A record that owns its key and value: what a log or a replication link reads back.
template <class K, class V>
struct ChangeRecord {
  // Change's members, owned: each pointer of Change is here an optional holding a copy of what
  // it pointed at (empty for nullptr); the other members are as in Change.
  ChangeOp op = ChangeOp::set;
  std::optional<K> key;
  std::optional<V> value;
  std::optional<K> to;
  std::int64_t at_ms = 0;
  ChangeTtl ttl = ChangeTtl::none;
  std::optional<std::int64_t> deadline = std::nullopt;
  std::uint64_t seq = 0;
  FieldOp field_op = FieldOp::none;
  std::optional<V> fields;

  // A record holding copies of what `c` points at (ConcurrentStore keeps the records of a
  // MULTI ... EXEC unit this way until its EXEC).
  static ChangeRecord of(const Change<K, V>& c) {
    ChangeRecord r;
    r.op = c.op;
    if (c.key != nullptr) r.key.emplace(*c.key);
    if (c.value != nullptr) r.value.emplace(*c.value);
    if (c.to != nullptr) r.to.emplace(*c.to);
    r.at_ms = c.at_ms;
    r.ttl = c.ttl;
    r.deadline = c.deadline;
    r.seq = c.seq;
    r.field_op = c.field_op;
    if (c.fields != nullptr) r.fields.emplace(*c.fields);
    return r;
  }
  // The record as a Change whose pointers point into this one: valid while it lives and is not
  // modified.
  Change<K, V> view() const noexcept {
    return Change<K, V>{op,  key ? &*key : nullptr, value ? &*value : nullptr, to ? &*to : nullptr, at_ms, ttl,
                        deadline, seq, field_op, fields ? &*fields : nullptr};
  }
};

namespace detail {

// The store's side of the feed: the deferral of lazy deletions and the MULTI/EXEC framing.
// The framing lives behind the first feed, reached through virtual calls, so that a program
// that never sets a feed compiles none of it (bench/compile_cost); every member below but
// set(), on() and Group is called only while on().
template <class K, class V>
class ChangeFeed {
 public:
  using change_type = Change<K, V>;
  using function_type = std::function<void(const change_type&)>;

  // A new feed (or none): it starts between units; an open group stays open (its depth is
  // the store's calls', not the feed's).
  void set(function_type fn) {
    if (!impl_) {
      if (!fn) return;
      impl_.template emplace<Framing>();
    }
    impl_->reset(std::move(fn));
  }
  bool on() const noexcept { return impl_ && impl_->fn; }
  // The number of the last record sent (0 before the first); it goes on across feeds.
  std::uint64_t seq() const noexcept { return impl_ ? impl_->seq : 0; }

  // A change made by the current call: the lazy deletions it made first go ahead, in a MULTI.
  void record(const change_type& c) { impl_->record(c, depth_ != 0); }
  // A deletion that is a unit by itself (tick(), eviction, scan()'s lazy expiry): deletions
  // still pending go ahead of it, one by one.
  void standalone(const change_type& c) { impl_->standalone(c); }
  // A lazy expiry inside the current call: it waits for the call's own change, or its end.
  void lazy_delete(const K& key, bool unlink) { impl_->lazy_delete(key, unlink); }
  // The end of a call (the store's flush()): closes its MULTI, or sends its lone deletions.
  void end_unit() {
    if (depth_ == 0) impl_->end_unit();
  }
  // A call made of calls (mset(), del_many(), as_one_command()): its changes travel as one
  // MULTI. Nested groups join the outer one.
  class Group {
   public:
    explicit Group(ChangeFeed& f) noexcept : f_(f) { ++f_.depth_; }
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;
    ~Group() {
      if (--f_.depth_ == 0 && f_.on()) f_.end_unit();
    }

   private:
    ChangeFeed& f_;
  };

 private:
  struct FramingBase {
    virtual ~FramingBase() = default;
    virtual std::unique_ptr<FramingBase> clone() const = 0;
    virtual void reset(function_type fn) = 0;
    virtual void record(const change_type& c, bool grouped) = 0;
    virtual void standalone(const change_type& c) = 0;
    virtual void lazy_delete(const K& key, bool unlink) = 0;
    virtual void end_unit() = 0;
    function_type fn;
    std::uint64_t seq = 0;
  };
  struct Framing final : FramingBase {
    struct Pending {
      K key;
      bool unlink;
    };
    std::vector<Pending> pending;
    bool multi = false;

    std::unique_ptr<FramingBase> clone() const override { return std::make_unique<Framing>(*this); }
    void reset(function_type f) override {
      this->fn = std::move(f);
      pending.clear();
      multi = false;
    }
    void record(const change_type& c, bool grouped) override {
      if (grouped || !pending.empty()) open();
      send(c);
    }
    void standalone(const change_type& c) override {
      if (!multi) send_pending();
      send(c);
    }
    void lazy_delete(const K& key, bool unlink) override {
      if (multi) {
        send(change_type{unlink ? ChangeOp::unlink : ChangeOp::del, &key});
      } else {
        pending.push_back(Pending{key, unlink});
      }
    }
    void end_unit() override {
      if (!multi && pending.size() > 1) open();
      if (multi) {
        multi = false;
        send(change_type{ChangeOp::exec});
      } else {
        send_pending();
      }
    }
    void open() {
      if (multi) return;
      multi = true;
      send(change_type{ChangeOp::multi});
      send_pending();
    }
    void send_pending() {
      for (const Pending& p : pending) send(change_type{p.unlink ? ChangeOp::unlink : ChangeOp::del, &p.key});
      pending.clear();
    }
    // The feed must not throw (the header's contract): noexcept turns a throw into terminate.
    void send(const change_type& c) noexcept {
      c.seq = ++this->seq;
      this->fn(c);
    }
  };

  int depth_ = 0;
  ClonePtr<FramingBase> impl_;  // copied with the store (a copy has the same feed)
};

}  // namespace detail
}  // namespace expiring
