// expiring/client/codec.hpp: how RedisStore turns keys and values into Redis strings.
//
// Redis stores bytes. A codec for T has two static members:
//
//   static void encode(const T& v, std::string& out);      // append v's bytes to out
//   static bool decode(std::string_view bytes, T& out);    // false: not a T
//
// Out of the box: std::string (the bytes as they are) and the integer types (decimal text,
// so that a value written here reads the same from redis-cli, INCR and Lua: "42", "-7").
// For anything else, specialise expiring::RedisCodec<T> or pass a codec type as the store's
// KeyCodec / ValueCodec parameter. A value that does not decode makes the reading call throw
// RedisError(Errc::protocol_error): it was written by someone else, in another format.
#pragma once

#include <charconv>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "../detail/hash_value.hpp"

namespace expiring {

// The codec of T for RedisStore: none by default (a static_assert); the specialisations below
// and your own give it encode() and decode().
template <class T, class Enable = void>
struct RedisCodec {
  static_assert(sizeof(T) == 0,
                "expiring::RedisCodec<T>: no codec for this type; specialise expiring::RedisCodec<T> "
                "(static void encode(const T&, std::string&); static bool decode(std::string_view, T&)) "
                "or pass a codec type to RedisStore");
};

// std::string: the bytes as they are, NULs included; every Redis string decodes.
template <>
struct RedisCodec<std::string> {
  // Appends v's bytes to `out`.
  static void encode(std::string_view v, std::string& out) { out.append(v.data(), v.size()); }
  // Copies `bytes` into `out`; always true.
  static bool decode(std::string_view bytes, std::string& out) {
    out.assign(bytes.data(), bytes.size());
    return true;
  }
};

// A hash (FieldMap) is not one Redis string: a RedisStore of hashes sends each field and its
// value through their own codecs (RedisCodec<F>, RedisCodec<FV>), and has no get() or set()
// of a whole hash (they do not compile: this codec has no members).
template <class T>
struct RedisCodec<T, std::enable_if_t<hash_value_traits<T>::enabled>> {};

// Integers as decimal text; decode accepts exactly what encode writes (no sign on unsigned
// types, no spaces, no leading '+', in range).
template <class T>
struct RedisCodec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  // Appends v in decimal, with a '-' when negative (std::to_chars).
  static void encode(T v, std::string& out) {
    char buf[std::numeric_limits<T>::digits10 + 3];  // every digit, a sign (also __int128's)
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  // Parses the whole of `bytes` as a decimal T (std::from_chars). False when it is empty, has
  // anything else in it, is out of T's range, or is not as encode() writes it: a leading zero
  // ("007") or "-0" (Redis's own integer parser refuses those too).
  static bool decode(std::string_view bytes, T& out) {
    if (bytes.empty()) return false;
    const std::size_t digits = bytes[0] == '-' ? 1 : 0;
    if (bytes.size() > digits + 1 && bytes[digits] == '0') return false;  // a leading zero
    if (digits == 1 && bytes.size() == 2 && bytes[1] == '0') return false;  // "-0"
    const char* end = bytes.data() + bytes.size();
    T v{};
    const std::from_chars_result r = std::from_chars(bytes.data(), end, v);
    if (r.ec != std::errc() || r.ptr != end) return false;
    out = v;
    return true;
  }
};

}  // namespace expiring
