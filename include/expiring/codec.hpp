// expiring/codec.hpp: how keys and values become bytes in a snapshot (snapshot.hpp), and back.
//
// A codec for T is a specialisation of expiring::Codec<T> with two static members:
//
//   static void encode(const T& v, std::string& out);    // appends v's bytes to out
//   static bool decode(std::string_view& in, T& out);    // consumes v's bytes from the front
//                                                         // of in; false if they are not a T
//
// decode() reads untrusted bytes: it must return false (never crash, never read past `in`)
// on malformed or short input, and check every length against the bytes that remain before
// it allocates, so that a hostile length cannot make it reserve gigabytes. It reads into
// `out`, which may hold state to keep (a FieldMap keeps out's field hasher); what else `out`
// holds after a false return is unspecified. The helpers in expiring::codec (varints, fixed
// little-endian integers, byte runs) do the checking for codecs of your own.
//
// Built in:
//   std::string       varint length, then the bytes
//   integers, enums   fixed width, little-endian, two's complement (sizeof(T) bytes); bool is
//                     one byte, 0 or 1; an enum is its underlying type
//   float, double     the IEEE 754 bit pattern as a fixed-width little-endian integer
//   FieldMap<F, W>    varint field count, then per field: name (Codec<F>), value (Codec<W>),
//                     and its deadline as a varint: 0 for none, else deadline + 1 (absolute
//                     Unix ms, 0 .. FieldMap::kMaxDeadline). Fields in storage order, stale
//                     ones included; decoding refuses duplicate names, out-of-range deadlines
//                     and a count of 0 (a hash with no field is not a stored state)
//   redis::Value      a tag byte (0: string, 1: hash), then the string or the hash as above
//                     (its codec is in redis/value.hpp: persistence does not depend on the
//                     command layer)
// Fixed width was chosen over zig-zag varints for integers: one store and no branches per
// value, and every integer key the same size.
//
// A type without a codec fails to compile with a static_assert that names Codec<T>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "field_map.hpp"

namespace expiring {

// The codec of T for snapshots: none by default (a static_assert); the specialisations below
// and your own give it encode() and decode().
template <class T, class Enable = void>
struct Codec {
  static_assert(sizeof(T) == 0,
                "expiring::Codec<T>: no codec for this type; specialise expiring::Codec<T> with "
                "static void encode(const T&, std::string& out) and "
                "static bool decode(std::string_view& in, T& out) (see expiring/codec.hpp)");
};

// ---- Helpers for codecs ------------------------------------------------------------------
namespace codec {

// The most bytes a 64-bit varint takes.
inline constexpr std::size_t kMaxVarintBytes = 10;

// Bytes that varint v takes: 1 for v < 128, up to 10.
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Unsigned LEB128: 7 bits a byte, least significant group first, the high bit set on every
// byte but the last.
inline void put_varint(std::string& out, std::uint64_t v) {
  char buf[kMaxVarintBytes];
  std::size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(static_cast<unsigned char>(v) | 0x80u);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}

// Reads a varint from the front of `in`. False (and `in` unchanged) when it is short, longer
// than 10 bytes, overflows 64 bits, or is not in its shortest form (a final byte of 0 after
// the first): every value has exactly one encoding.
inline bool get_varint(std::string_view& in, std::uint64_t& v) noexcept {
  std::uint64_t x = 0;
  const std::size_t n = in.size() < kMaxVarintBytes ? in.size() : kMaxVarintBytes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (i == kMaxVarintBytes - 1 && b > 1) return false;  // bits beyond the 64th
    x |= std::uint64_t{b & 0x7Fu} << (7 * i);
    if ((b & 0x80u) == 0) {
      if (b == 0 && i != 0) return false;  // not the shortest form
      in.remove_prefix(i + 1);
      v = x;
      return true;
    }
  }
  return false;  // short, or more than 10 bytes
}

// Writes the low `n` bytes of v at p, little-endian.
inline void store_le(char* p, std::uint64_t v, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(static_cast<unsigned char>(v >> (8 * i)));
}
// Appends the low `n` bytes of v, little-endian.
inline void put_le(std::string& out, std::uint64_t v, std::size_t n) {
  char buf[8];
  store_le(buf, v, n);
  out.append(buf, n);
}
// Reads an n-byte little-endian integer (n <= 8). False (`in` unchanged) when short.
inline bool get_le(std::string_view& in, std::uint64_t& v, std::size_t n) noexcept {
  if (in.size() < n) return false;
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < n; ++i) x |= std::uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  in.remove_prefix(n);
  v = x;
  return true;
}

// Appends v as 8 bytes, little-endian, two's complement.
inline void put_i64(std::string& out, std::int64_t v) { put_le(out, static_cast<std::uint64_t>(v), 8); }
// Reads what put_i64 wrote from the front of `in`. False (`in` unchanged) when fewer than 8
// bytes remain.
inline bool get_i64(std::string_view& in, std::int64_t& v) noexcept {
  std::uint64_t u = 0;
  if (!get_le(in, u, 8)) return false;
  std::memcpy(&v, &u, sizeof v);  // two's complement, well defined in C++17 too
  return true;
}

// Takes `n` bytes from the front of `in` (false when fewer remain): the check to make before
// allocating room for n of anything.
inline bool get_bytes(std::string_view& in, std::uint64_t n, std::string_view& bytes) noexcept {
  if (n > in.size()) return false;
  bytes = in.substr(0, static_cast<std::size_t>(n));
  in.remove_prefix(static_cast<std::size_t>(n));
  return true;
}

}  // namespace codec

// ---- Built-in codecs ---------------------------------------------------------------------

// std::string: a varint length, then the bytes (any bytes, NULs included).
template <>
struct Codec<std::string> {
  // Appends v's length as a varint, then its bytes.
  static void encode(const std::string& v, std::string& out) {
    codec::put_varint(out, v.size());
    out.append(v.data(), v.size());
  }
  // Takes a varint length and that many bytes from the front of `in` into `out`. False (`in`
  // and `out` unchanged) when the varint is malformed or fewer bytes remain than it says.
  static bool decode(std::string_view& in, std::string& out) {
    std::string_view rest = in;
    std::uint64_t n = 0;
    std::string_view bytes;
    if (!codec::get_varint(rest, n) || !codec::get_bytes(rest, n, bytes)) return false;
    out.assign(bytes.data(), bytes.size());
    in = rest;
    return true;
  }
};

// bool: one byte, 0 or 1.
template <>
struct Codec<bool> {
  // Appends one byte: 1 for true, 0 for false.
  static void encode(bool v, std::string& out) { out.push_back(v ? '\1' : '\0'); }
  // Takes one byte from the front of `in`. False (`in` unchanged) when `in` is empty or the
  // byte is neither 0 nor 1.
  static bool decode(std::string_view& in, bool& out) noexcept {
    if (in.empty() || static_cast<unsigned char>(in[0]) > 1) return false;
    out = in[0] != 0;
    in.remove_prefix(1);
    return true;
  }
};

// Integers (char types included): sizeof(T) bytes, little-endian, two's complement. Like the
// other fixed-width codecs below, it also says so (kFixedBytes) and writes in place (store()),
// so that a writer of many small records (append_log.hpp) can size a record before filling it.
template <class T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static_assert(sizeof(T) <= 8, "expiring::Codec: integers of more than 64 bits need a codec of their own");
  // The unsigned type of T's width: v's bytes are those of `static_cast<U>(v)`.
  using U = std::make_unsigned_t<T>;
  // The encoding's size in bytes, the same for every value: sizeof(T).
  static constexpr std::size_t kFixedBytes = sizeof(T);
  // The encoding as an integer: its kFixedBytes low bytes, little-endian, are the bytes.
  static std::uint64_t bits(T v) noexcept { return static_cast<U>(v); }
  // Writes v's kFixedBytes bytes at `p`, which must have room for them; appends nothing.
  static void store(T v, char* p) noexcept { codec::store_le(p, bits(v), sizeof(T)); }
  // Appends v's kFixedBytes bytes to `out`.
  static void encode(T v, std::string& out) { codec::put_le(out, static_cast<U>(v), sizeof(T)); }
  // Takes kFixedBytes bytes from the front of `in`: every byte pattern is a T. False (`in`
  // unchanged) when fewer remain.
  static bool decode(std::string_view& in, T& out) noexcept {
    std::uint64_t x = 0;
    if (!codec::get_le(in, x, sizeof(T))) return false;
    const auto u = static_cast<U>(x);
    std::memcpy(&out, &u, sizeof out);
    return true;
  }
};

// Enums: as their underlying type.
template <class T>
struct Codec<T, std::enable_if_t<std::is_enum_v<T>>> {
  // The underlying type, whose codec writes and reads the value.
  using U = std::underlying_type_t<T>;
  // Appends `static_cast<U>(v)` with Codec<U>.
  static void encode(T v, std::string& out) { Codec<U>::encode(static_cast<U>(v), out); }
  // Reads a U with Codec<U> and casts it to T: any value of U, a named enumerator or not.
  // False (`in` unchanged) when Codec<U> refuses the bytes.
  static bool decode(std::string_view& in, T& out) noexcept {
    U u{};
    if (!Codec<U>::decode(in, u)) return false;
    out = static_cast<T>(u);
    return true;
  }
};

// float and double: the bit pattern (NaN payloads included), little-endian.
template <class T>
struct Codec<T, std::enable_if_t<std::is_same_v<T, float> || std::is_same_v<T, double>>> {
  static_assert(std::numeric_limits<T>::is_iec559, "expiring::Codec: float and double must be IEEE 754");
  // The unsigned integer of T's size (std::uint32_t for float, std::uint64_t for double) that
  // holds the bit pattern.
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static_assert(sizeof(U) == sizeof(T), "expiring::Codec: unexpected float size");
  // The encoding's size in bytes, the same for every value: 4 for float, 8 for double.
  static constexpr std::size_t kFixedBytes = sizeof(T);
  // The encoding as an integer: v's bit pattern, whose kFixedBytes low bytes, little-endian,
  // are the bytes.
  static std::uint64_t bits(T v) noexcept {
    U u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
  }
  // Writes v's kFixedBytes bytes at `p`, which must have room for them; appends nothing.
  static void store(T v, char* p) noexcept { codec::store_le(p, bits(v), sizeof(T)); }
  // Appends v's bit pattern, kFixedBytes bytes, to `out`.
  static void encode(T v, std::string& out) {
    U u = 0;
    std::memcpy(&u, &v, sizeof u);
    codec::put_le(out, u, sizeof u);
  }
  // Takes kFixedBytes bytes from the front of `in` as a bit pattern (every one is a T, NaNs
  // included). False (`in` unchanged) when fewer remain.
  static bool decode(std::string_view& in, T& out) noexcept {
    std::uint64_t x = 0;
    if (!codec::get_le(in, x, sizeof(U))) return false;
    const auto u = static_cast<U>(x);
    std::memcpy(&out, &u, sizeof out);
    return true;
  }
};

namespace codec {
// Codec<T>::kFixedBytes when T's codec declares a fixed width (with bits() and store()), else 0.
template <class T, class = void>
struct fixed_bytes : std::integral_constant<std::size_t, 0> {};
template <class T>
struct fixed_bytes<T, std::void_t<decltype(Codec<T>::kFixedBytes)>>
    : std::integral_constant<std::size_t, Codec<T>::kFixedBytes> {};
}  // namespace codec

// A hash with per-field deadlines. Decoding rebuilds the map with out's field hasher.
template <class F, class W, class H, class E>
struct Codec<FieldMap<F, W, H, E>> {
  // The map type this codec writes and reads.
  using map_type = FieldMap<F, W, H, E>;
  // Appends the field count as a varint, then every field in storage order, stale ones
  // included: its name (Codec<F>), its value (Codec<W>), and its deadline as a varint (0 for
  // none, else the absolute Unix ms + 1).
  static void encode(const map_type& m, std::string& out) {
    codec::put_varint(out, m.size());
    const auto n = static_cast<std::uint32_t>(m.size());
    for (std::uint32_t pos = 0; pos < n; ++pos) {
      const typename map_type::Field& f = m.at(pos);
      Codec<F>::encode(f.name, out);
      Codec<W>::encode(f.value, out);
      const std::int64_t d = m.deadline(pos);
      codec::put_varint(out, d == map_type::kNoDeadline ? 0 : static_cast<std::uint64_t>(d) + 1);
    }
  }
  // Reads a map that encode() wrote into a new map with out's field hasher, and moves it into
  // `out` on success. False (`in` and `out` unchanged) on short or malformed input, a count of
  // 0, a name twice, or a deadline beyond FieldMap::kMaxDeadline.
  static bool decode(std::string_view& in, map_type& out) {
    std::string_view rest = in;
    std::uint64_t n = 0;
    if (!codec::get_varint(rest, n)) return false;
    // Every field takes at least its deadline's byte: a count beyond the bytes left is a lie.
    // No field at all is not a hash any store writes either (the last field going deletes the
    // key): accepted, it would put a key in the store that answers as a missing one.
    if (n == 0 || n > rest.size() || n > std::numeric_limits<std::uint32_t>::max()) return false;
    map_type m(out.hash_function());
    for (std::uint64_t i = 0; i < n; ++i) {
      F name{};
      W value{};
      std::uint64_t d = 0;
      if (!Codec<F>::decode(rest, name) || !Codec<W>::decode(rest, value) || !codec::get_varint(rest, d)) {
        return false;
      }
      if (d > static_cast<std::uint64_t>(map_type::kMaxDeadline) + 1) return false;
      const auto [pos, inserted] = m.assign(std::move(name), std::move(value));
      if (!inserted) return false;  // a name twice: not a map that encode() wrote
      if (d != 0) m.set_deadline(pos, static_cast<std::int64_t>(d - 1));
    }
    out = std::move(m);
    in = rest;
    return true;
  }
};

}  // namespace expiring
