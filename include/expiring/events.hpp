// expiring/events.hpp: key events, Redis's keyspace notifications for in-process listeners.
#pragma once

#include <cstdint>

namespace expiring {

// Why a key changed. Removal causes can be told apart, as in Caffeine's RemovalCause.
enum class KeyEventCause : std::uint8_t {
  set,          // a value was written (SET family; Redis "set")
  update,       // a value was changed in place by modify(); its TTL kept
  expire,       // a TTL was set or changed (Redis "expire")
  persist,      // a TTL was removed (Redis "persist")
  del,          // removed by the caller: del, unlink, getdel, or a deadline already past
  expired,      // removed because its deadline passed (lazy or by tick())
  evicted,      // removed to respect a memory limit (reserved)
  rename_from,  // the source of a rename (Redis "rename_from")
  rename_to,    // the destination of a rename (Redis "rename_to")
  copy_to,      // the destination of a copy (Redis "copy_to")
};

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
  }
  return "unknown";
}

// One event as a listener sees it. `value` points at the removed value for the removal
// causes (del, expired, evicted) and is null otherwise. Both references live only for the
// duration of the listener call.
template <class K, class V>
struct KeyEvent {
  KeyEventCause cause;
  const K& key;
  const V* value;
};

}  // namespace expiring
