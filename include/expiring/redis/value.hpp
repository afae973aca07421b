// expiring/redis/value.hpp: the value type of the command layer's keyspace: a string or a hash.
//
// Redis keeps values of several types in one keyspace, and a command on a key of another type
// answers WRONGTYPE. The command layer does the same with one store whose value is a
// redis::Value: either a std::string (the string commands) or a redis::Hash, a FieldMap of
// strings with per-field TTLs (the hash commands, hash_fields.hpp). The hash is held through a
// pointer, so that a string entry stays the size of a string plus a tag (40 bytes), and is
// copied deeply (COPY). hash_value_traits<Value> below is how the store finds the hash in a
// Value: its hash members then answer Errc::wrong_type for a string.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "../codec.hpp"
#include "../field_map.hpp"

namespace expiring::redis {

// A hash value: fields and their values, binary-safe strings, each field with its own
// deadline (Redis 7.4's hash field TTLs; field_map.hpp, hash_fields.hpp).
using Hash = FieldMap<std::string, std::string>;

// One value of the keyspace: a std::string or a Hash, as TYPE tells (type_name()). A hash is
// held through a pointer; copying a Value copies a hash deeply.
class Value {
 public:
  // An empty string.
  Value() = default;
  // A string; implicit, so that a string is a Value wherever one is expected.
  Value(std::string s) noexcept : v_(std::move(s)) {}  // NOLINT: a string converts, as in SET
  // A string: a copy of the NUL-terminated `s`.
  Value(const char* s) : v_(std::string(s)) {}         // NOLINT
  // A string: a copy of the bytes of `s`.
  Value(std::string_view s) : v_(std::string(s)) {}    // NOLINT
  // A hash, moved into a box of its own (explicit: a Hash does not turn into a Value unasked).
  explicit Value(Hash h) : v_(std::make_unique<Hash>(std::move(h))) {}

  // Copying copies the string or the whole hash, O(fields), as COPY does; moving takes the
  // string or the hash's box, O(1), and leaves the source an empty string.
  Value(const Value& o) : v_(copy_of(o.v_)) {}
  Value(Value&& o) noexcept : v_(std::move(o.v_)) { o.v_.emplace<std::string>(); }
  Value& operator=(const Value& o) {
    if (this != &o) v_ = copy_of(o.v_);
    return *this;
  }
  Value& operator=(Value&& o) noexcept {
    if (this != &o) {
      v_ = std::move(o.v_);
      o.v_.emplace<std::string>();
    }
    return *this;
  }

  // Which of the two the value holds (TYPE answers "string" or "hash").
  bool is_string() const noexcept { return v_.index() == 0; }
  bool is_hash() const noexcept { return v_.index() == 1; }
  // The string, or nullptr for a hash.
  const std::string* string() const noexcept { return std::get_if<std::string>(&v_); }
  std::string* string() noexcept { return std::get_if<std::string>(&v_); }
  // The hash, or nullptr for a string.
  const Hash* hash() const noexcept {
    const auto* p = std::get_if<std::unique_ptr<Hash>>(&v_);
    return p == nullptr ? nullptr : p->get();
  }
  Hash* hash() noexcept {
    auto* p = std::get_if<std::unique_ptr<Hash>>(&v_);
    return p == nullptr ? nullptr : p->get();
  }
  // TYPE's answer.
  const char* type_name() const noexcept { return is_hash() ? "hash" : "string"; }

  // Heap bytes beyond sizeof(Value), for the memory limit: a string's buffer; a hash's box
  // and tables (its fields' own buffers are not counted, so that weighing stays O(1)).
  std::size_t heap_bytes() const noexcept {
    if (const Hash* h = hash()) return sizeof(Hash) + h->weighed_bytes();
    const std::string& s = *string();
    const auto* data = reinterpret_cast<const char*>(s.data());
    const auto* self = reinterpret_cast<const char*>(&s);
    return data >= self && data < self + sizeof(s) ? 0 : s.capacity() + 1;
  }

  // `v == s`: v holds the string s. `a == b`: two strings with the same bytes, or the very
  // same hash object (hashes are not compared field by field).
  friend bool operator==(const Value& a, const std::string& b) noexcept {
    return a.string() != nullptr && *a.string() == b;
  }
  friend bool operator==(const Value& a, const Value& b) noexcept {
    if (a.is_string() && b.is_string()) return *a.string() == *b.string();
    return a.hash() == b.hash();  // hashes: the same object only
  }

 private:
  using Storage = std::variant<std::string, std::unique_ptr<Hash>>;
  static Storage copy_of(const Storage& s) {
    if (const auto* h = std::get_if<std::unique_ptr<Hash>>(&s)) return Storage(std::make_unique<Hash>(**h));
    return Storage(std::get<std::string>(s));
  }
  Storage v_;
};

}  // namespace expiring::redis

namespace expiring {

// How a store finds the hash in a redis::Value (detail/hash_value.hpp): a Value that holds a
// string has none, so a store's hash members answer Errc::wrong_type for it (WRONGTYPE).
template <>
struct hash_value_traits<redis::Value> {
  static constexpr bool enabled = true;  // a store of Values has the hash members
  using map_type = redis::Hash;          // the hash type a Value may hold
  // The hash v holds, or nullptr when v holds a string.
  static map_type* map(redis::Value& v) noexcept { return v.hash(); }
  static const map_type* map(const redis::Value& v) noexcept { return v.hash(); }
  // A Value holding an empty hash that hashes its fields with h (the store's field hasher).
  static redis::Value make(std::shared_ptr<const map_type::hasher> h) { return redis::Value(map_type(std::move(h))); }
};

// The command layer's value: a tag byte (0 string, 1 hash), then the string or the hash.
template <>
struct Codec<redis::Value> {
  static constexpr char kString = 0;  // the tag byte of a string
  static constexpr char kHash = 1;    // the tag byte of a hash
  // Appends v's bytes to out: its tag, then Codec<std::string>'s or Codec<redis::Hash>'s bytes.
  static void encode(const redis::Value& v, std::string& out) {
    if (const redis::Hash* h = v.hash()) {
      out.push_back(kHash);
      Codec<redis::Hash>::encode(*h, out);
    } else {
      out.push_back(kString);
      Codec<std::string>::encode(*v.string(), out);
    }
  }
  // A hash decoded into a Value that holds a hash keeps that hash's field hasher.
  static bool decode(std::string_view& in, redis::Value& out) {
    if (in.empty()) return false;
    std::string_view rest = in.substr(1);
    if (in[0] == kString) {
      if (std::string* s = out.string()) {
        if (!Codec<std::string>::decode(rest, *s)) return false;
      } else {
        std::string str;
        if (!Codec<std::string>::decode(rest, str)) return false;
        out = redis::Value(std::move(str));
      }
    } else if (in[0] == kHash) {
      const redis::Hash* had = out.hash();
      redis::Hash h = had != nullptr ? redis::Hash(had->hash_function()) : redis::Hash();
      if (!Codec<redis::Hash>::decode(rest, h)) return false;
      if (redis::Hash* mine = out.hash()) {
        *mine = std::move(h);
      } else {
        out = redis::Value(std::move(h));
      }
    } else {
      return false;
    }
    in = rest;
    return true;
  }
};

}  // namespace expiring
