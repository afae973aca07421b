// expiring/detail/hash_value.hpp: what the core knows of hash values, without the hashes.
//
// A store of hashes (a FieldMap, or a value that may hold one, such as redis::Value) keeps a
// field index in its keyspace and has the hash members of hash_fields.hpp. The core sees
// only this header: whether V is a hash (hash_value_traits, specialised by field_map.hpp and
// by each value type that may hold a hash) and the empty layer a store of other values has.
// Naming FieldMap means including field_map.hpp, which brings hash_fields.hpp, so a program
// that never uses a hash never parses either.
#pragma once

namespace expiring {

// How a store finds the hash in one of its values: a FieldMap is one; a value type that may
// hold one (redis::Value, a variant of a string and a hash) specialises this the same way.
//   enabled   true for a hash value
//   map(v)    the hash v holds, or nullptr when v is another type (WRONGTYPE)
//   make(h)   a value holding an empty hash that hashes its fields with h
template <class V>
struct hash_value_traits {
  static constexpr bool enabled = false;
};

namespace detail {

// Whether v is a hash with no field: a state no primary store keeps (the last field going
// deletes the key), which only a replica holds (D31) and no snapshot or log record carries.
template <class V>
bool is_empty_hash(const V& v) noexcept {
  if constexpr (hash_value_traits<V>::enabled) {
    const auto* m = hash_value_traits<V>::map(v);
    return m != nullptr && m->empty();
  } else {
    static_cast<void>(v);
    return false;
  }
}

// The field and value types of a store of hashes, for a face whose hash members are declared
// whatever V is (ConcurrentStore: they fail to compile, with a message, unless V is a hash).
struct NotAHash {};
template <class V, bool IsHash = hash_value_traits<V>::enabled>
struct HashTypes {
  using field_type = NotAHash;
  using value_type = NotAHash;
};
template <class V>
struct HashTypes<V, true> {
  using field_type = typename hash_value_traits<V>::map_type::field_type;
  using value_type = typename hash_value_traits<V>::map_type::mapped_type;
};

// The layer between the engine and the store's face. For a value that is not a hash, nothing
// but the engine; for a hash, the hash members (the specialisation in hash_fields.hpp).
template <class Engine, class V, bool IsHash = hash_value_traits<V>::enabled>
class HashFieldOps : public Engine {
  static_assert(!IsHash, "expiring: a store of hashes needs <expiring/hash_fields.hpp> (field_map.hpp includes it)");

 protected:
  using Engine::Engine;
};

}  // namespace detail
}  // namespace expiring
