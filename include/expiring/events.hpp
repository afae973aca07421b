// expiring/events.hpp: key events, Redis's keyspace notifications for in-process listeners.
//
// A listener subscribes to a set of causes (KeyEventCauses, all of them by default). An event
// whose cause nobody subscribed to costs one bit test: nothing is copied or queued, and a
// removed key's value is destroyed in place instead of being handed to the queue.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace expiring {

// Why a key changed. Removal causes can be told apart, as in Caffeine's RemovalCause.
enum class KeyEventCause : std::uint8_t {
  set,          // a value was written (SET family; Redis "set")
  update,       // a value was changed in place by modify(); its TTL kept
  expire,       // a TTL was set or changed (Redis "expire")
  persist,      // a TTL was removed (Redis "persist")
  del,          // removed by the caller: del, unlink, getdel, or a deadline already past
  expired,      // removed because its deadline passed (lazy or by tick())
  evicted,      // removed to respect a limit (Options::maxmemory or max_entries)
  rename_from,  // the source of a rename (Redis "rename_from")
  rename_to,    // the destination of a rename (Redis "rename_to")
  copy_to,      // the destination of a copy (Redis "copy_to")
  // Hashes (hash_fields.hpp), as Redis 7.4's hash keyspace events. When a hash's last field
  // goes, a `del` of the key follows.
  hset,         // fields written: hset, hsetnx, hincrby (Redis "hset", "hincrby")
  hdel,         // fields removed by the caller: hdel, or a field time already past
  hexpire,      // field TTLs set or changed (Redis "hexpire")
  hpersist,     // field TTLs removed (Redis "hpersist")
  hexpired,     // fields reclaimed because their deadline passed (lazy or by tick()); `value`
                // points at a hash that holds exactly those fields, names and values
};

// The cause's name, as its enumerator is spelled ("expired", "rename_from"): Redis's event
// name where Redis has the event. "unknown" for a value outside the enumeration.
constexpr const char* to_string(KeyEventCause c) noexcept {
  switch (c) {
    case KeyEventCause::set: return "set";
    case KeyEventCause::update: return "update";
    case KeyEventCause::expire: return "expire";
    case KeyEventCause::persist: return "persist";
    case KeyEventCause::del: return "del";
    case KeyEventCause::expired: return "expired";
    case KeyEventCause::evicted: return "evicted";
    case KeyEventCause::rename_from: return "rename_from";
    case KeyEventCause::rename_to: return "rename_to";
    case KeyEventCause::copy_to: return "copy_to";
    case KeyEventCause::hset: return "hset";
    case KeyEventCause::hdel: return "hdel";
    case KeyEventCause::hexpire: return "hexpire";
    case KeyEventCause::hpersist: return "hpersist";
    case KeyEventCause::hexpired: return "hexpired";
  }
  return "unknown";
}

// A set of causes: `KeyEventCauses{KeyEventCause::expired, KeyEventCause::evicted}`, or
// KeyEventCauses::all(), or KeyEventCauses::removals() (del, expired, evicted).
class KeyEventCauses {
 public:
  constexpr KeyEventCauses() noexcept = default;  // none
  // The causes listed (a cause listed twice counts once).
  constexpr KeyEventCauses(std::initializer_list<KeyEventCause> causes) noexcept {
    for (KeyEventCause c : causes) bits_ = static_cast<std::uint16_t>(bits_ | bit(c));
  }
  // Every cause: what a listener subscribes to by default.
  static constexpr KeyEventCauses all() noexcept {
    static_assert(static_cast<unsigned>(KeyEventCause::hexpired) == 14,
                  "a new KeyEventCause: all() must take its bit, and the last cause must be named here");
    return KeyEventCauses(std::uint16_t{(1u << 15) - 1});
  }
  // The removals: del, expired and evicted, the causes whose event carries the removed value.
  static constexpr KeyEventCauses removals() noexcept {
    return {KeyEventCause::del, KeyEventCause::expired, KeyEventCause::evicted};
  }
  // Whether `c` is in the set.
  constexpr bool contains(KeyEventCause c) const noexcept { return (bits_ & bit(c)) != 0; }
  // Whether the set holds no cause.
  constexpr bool empty() const noexcept { return bits_ == 0; }
  // The causes of either set.
  friend constexpr KeyEventCauses operator|(KeyEventCauses a, KeyEventCauses b) noexcept {
    return KeyEventCauses(static_cast<std::uint16_t>(a.bits_ | b.bits_));
  }
  // Whether two sets hold the same causes.
  friend constexpr bool operator==(KeyEventCauses a, KeyEventCauses b) noexcept { return a.bits_ == b.bits_; }
  friend constexpr bool operator!=(KeyEventCauses a, KeyEventCauses b) noexcept { return a.bits_ != b.bits_; }

 private:
  constexpr explicit KeyEventCauses(std::uint16_t bits) noexcept : bits_(bits) {}
  static constexpr std::uint16_t bit(KeyEventCause c) noexcept {
    return static_cast<std::uint16_t>(1u << static_cast<unsigned>(c));
  }
  std::uint16_t bits_ = 0;
};

// One event as a listener sees it. `value` points at the removed value for the removal
// causes (del, expired, evicted), at the reclaimed fields for hexpired, and is null
// otherwise. Both references live only for the duration of the listener call.
template <class K, class V>
struct KeyEvent {
  KeyEventCause cause;  // why the key changed
  const K& key;         // the key that changed (a rename: the source or the destination)
  const V* value;       // the removed value, the reclaimed fields, or null: see above
};

}  // namespace expiring
