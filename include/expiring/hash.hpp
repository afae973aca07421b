// expiring/hash.hpp: keyed hashing for keys an attacker may choose.
//
// Overview
// --------
// Two keyed hashes, for std::string, std::string_view, integral and enum keys:
//
//   expiring::Hash<K>     the default: XXH3 with a 192-byte secret of its own per instance
//   expiring::SipHash<K>  SipHash-1-3 with a 128-bit key: a pseudo-random function
//
// Both take their key material from a `HashKey` (128 bits). Every default-constructed hash
// draws a fresh key from the operating system's random source; a store built with
// Options::seed rekeys its hash from that seed instead, so that a seeded store is
// reproducible. Both are transparent for strings: a store keyed by std::string is probed with
// a std::string_view or a literal without building a std::string.
//
// Why the key must enter the function: hash flooding sends keys that share a hash, so that a
// table degrades from O(1) to O(n) per operation. A fast unkeyed hash followed by a seeded
// mixer (what this header did before) does not help, because keys with equal unkeyed hashes
// stay equal under every seed: XXH3's 17-240-byte path multiplies by zero when 8 input bytes
// equal 8 bytes of its public default secret, so any number of 32-byte keys can be made to
// hash alike (tests/robustness/test_hash_flood.cpp builds 200,000 of them).
//
// What each guarantees (bench/bench_hash.cpp has the figures):
// * Hash (XXH3 keyed by a random secret). The secret replaces XXH3's public one, so the
//   multiply-by-zero keys and every other choice of keys made without the secret land as
//   random keys do: crafted keys insert at random-key speed. XXH3 with a secret is a family
//   of almost-universal hashes, not a pseudo-random function: a fixed pair of 32-240-byte
//   messages is known to collide for about 2^-27 of random secrets, the order of chance that
//   two random keys share the bits a table of 2^20 groups uses, so it gives an attacker who
//   cannot see the secret nothing to aim with. What it does not promise is that an attacker
//   who can time very many requests learns nothing about the secret. It costs what unkeyed
//   XXH3 costs: 1.6-1.8 ns for a u64, 3.3-5.7 ns for 8-64-byte strings here.
// * SipHash (SipHash-1-3). A keyed pseudo-random function (the construction Redis, Rust and
//   Python key their tables with): even collisions an attacker has observed say nothing
//   about other keys. Choose it when clients can observe timings at scale. It costs 8-9 ns
//   for a u64 and 9-27 ns for 8-64-byte strings, and its longer dependency chain lets fewer
//   cache misses overlap: a memory-bound get() measured 2-3x slower with it.
//
// A hash of your own: the store folds its result with a per-store seed, which scatters probe
// positions but cannot separate keys whose hashes are equal. If keys may come from an
// attacker, your hash must be keyed (seeded inside the function, from a secret random key)
// and collision-resistant without the key. Give it `void rekey(expiring::HashKey)` and a store
// built with Options::seed will key it from the seed, as it does Hash and SipHash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "detail/attributes.hpp"

#if defined(__linux__)
#include <sys/random.h>
#else
#include <random>
#endif

// xxHash in inline mode (static functions, nothing to link), private to this include: the
// macro is removed again unless the user defined it. A TU that included <xxhash.h> without it
// before still gets the inline copy (xxhash.h re-reads itself under XXH_INLINE_ALL, with
// XXH_INLINE_-prefixed names), and afterwards XXH* names that TU uses refer to the inline copy.
#ifdef XXH_INLINE_ALL
#include <xxhash.h>
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#undef XXH_INLINE_ALL
#endif

namespace expiring {

// 128 bits of key material for a keyed hash.
struct HashKey {
  // The key's two 64-bit halves (all zero by default: a fixed key, not a secret).
  std::uint64_t k0 = 0;
  std::uint64_t k1 = 0;

  // A key from the operating system's random source (getrandom() on Linux, elsewhere
  // std::random_device), mixed with the steady clock in case that source is unavailable.
  static HashKey random() noexcept;
  // A reproducible key expanded from a 64-bit seed (splitmix64). For tests and for stores
  // built with Options::seed; a key derived from a seed an attacker can guess is no secret.
  static constexpr HashKey from_seed(std::uint64_t seed) noexcept;

  // Whether two keys are the same 128 bits.
  friend constexpr bool operator==(const HashKey& a, const HashKey& b) noexcept {
    return a.k0 == b.k0 && a.k1 == b.k1;
  }
  // Whether two keys differ in any bit.
  friend constexpr bool operator!=(const HashKey& a, const HashKey& b) noexcept { return !(a == b); }
};

namespace detail {

constexpr std::uint64_t rotl64(std::uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

// One splitmix64 step: advances `state` and returns a well-mixed 64-bit value.
constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64 random bits from the operating system, or from the clock if it has none.
inline std::uint64_t random_u64() noexcept {
  std::uint64_t s = 0;
#if defined(__linux__)
  // getrandom(2), as std::random_device uses on Linux, without <random>'s parsing cost.
  const auto got = ::getrandom(&s, sizeof s, 0);
  if (got < 0 || static_cast<std::size_t>(got) != sizeof s) s = 0;
#else
  try {
    std::random_device rd;
    s = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  } catch (...) {
  }
#endif
  std::uint64_t t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return s ^ splitmix64(t);
}

// A little-endian 64-bit load.
inline std::uint64_t load_le64(const unsigned char* p) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#else
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
#endif
}

inline std::uint32_t load_le32(const unsigned char* p) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#else
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
#endif
}

// SipHash-c-d (Aumasson and Bernstein, 2012) with key `key`. The message is taken in 8-byte
// little-endian words; the last word carries the remaining bytes and the length modulo 256
// in its top byte. C compression rounds per word, D finalisation rounds. SipHash-1-3 (C=1,
// D=3) is the trade-off Rust's and Python's hash tables use; SipHash-2-4, the original, is
// kept for the reference test vectors.
template <int C, int D>
class SipHasher {
 public:
  explicit constexpr SipHasher(HashKey key) noexcept
      : v0_(key.k0 ^ 0x736f6d6570736575ull),
        v1_(key.k1 ^ 0x646f72616e646f6dull),
        v2_(key.k0 ^ 0x6c7967656e657261ull),
        v3_(key.k1 ^ 0x7465646279746573ull) {}

  constexpr void absorb(std::uint64_t m) noexcept {
    v3_ ^= m;
    for (int i = 0; i < C; ++i) round();
    v0_ ^= m;
  }
  constexpr std::uint64_t finish() noexcept {
    v2_ ^= 0xff;
    for (int i = 0; i < D; ++i) round();
    return v0_ ^ v1_ ^ v2_ ^ v3_;
  }

  static std::uint64_t bytes(const void* data, std::size_t n, HashKey key) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    SipHasher h(key);
    const std::size_t words = n / 8;
    for (std::size_t w = 0; w < words; ++w) h.absorb(load_le64(p + 8 * w));
    h.absorb(tail_word(p, n) | static_cast<std::uint64_t>(n & 0xff) << 56);
    return h.finish();
  }
  // The last n % 8 bytes as a little-endian word, read with at most two loads.
  static std::uint64_t tail_word(const unsigned char* p, std::size_t n) noexcept {
    const std::size_t tail = n & 7;
    if (tail == 0) return 0;
    if (n >= 8) return load_le64(p + n - 8) >> (8 * (8 - tail));  // overlaps the last full word
    if (tail >= 4) {  // two overlapping 4-byte loads
      return load_le32(p) | (static_cast<std::uint64_t>(load_le32(p + tail - 4)) << (8 * (tail - 4)));
    }
    return static_cast<std::uint64_t>(p[0]) | static_cast<std::uint64_t>(p[tail / 2]) << (8 * (tail / 2)) |
           static_cast<std::uint64_t>(p[tail - 1]) << (8 * (tail - 1));
  }
  // The hash of the 8 little-endian bytes of `m`, without going through memory.
  static constexpr std::uint64_t word(std::uint64_t m, HashKey key) noexcept {
    SipHasher h(key);
    h.absorb(m);
    h.absorb(std::uint64_t{8} << 56);
    return h.finish();
  }

 private:
  constexpr void round() noexcept {
    v0_ += v1_;
    v1_ = rotl64(v1_, 13);
    v1_ ^= v0_;
    v0_ = rotl64(v0_, 32);
    v2_ += v3_;
    v3_ = rotl64(v3_, 16);
    v3_ ^= v2_;
    v0_ += v3_;
    v3_ = rotl64(v3_, 21);
    v3_ ^= v0_;
    v2_ += v1_;
    v1_ = rotl64(v1_, 17);
    v1_ ^= v2_;
    v2_ = rotl64(v2_, 32);
  }
  std::uint64_t v0_, v1_, v2_, v3_;
};
using SipHash13 = SipHasher<1, 3>;
using SipHash24 = SipHasher<2, 4>;

// The key types the default hashes accept: strings (transparently, as string_view) and
// integral or enum values (as their 64-bit value).
template <class K>
constexpr bool is_string_key_v = std::is_same_v<K, std::string> || std::is_same_v<K, std::string_view>;

// Key equality as the tables call it: eq(a, b), except that for the standard equal_to and two
// std::string / std::string_view operands of up to 16 bytes (short keys and field names) the
// bytes are compared inline, without memcmp's call: the same answer.
template <class Eq>
constexpr bool is_std_equal_v = std::is_same_v<Eq, std::equal_to<>> || std::is_same_v<Eq, std::equal_to<std::string>> ||
                                std::is_same_v<Eq, std::equal_to<std::string_view>>;
inline bool equal_bytes(const char* a, const char* b, std::size_t n) noexcept {
  const auto load64 = [](const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  const auto load32 = [](const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  // Up to 16 bytes: the first and the last word, overlapping, without a loop. Longer: words,
  // the last one overlapping. No call at all (memcmp's, on any path, made the probes around
  // this save and restore their registers at every candidate slot).
  if (n > 16) {
    for (std::size_t i = 0; i < n - 8; i += 8) {
      if (load64(a + i) != load64(b + i)) return false;
    }
    return load64(a + n - 8) == load64(b + n - 8);
  }
  if (n >= 8) return ((load64(a) ^ load64(b)) | (load64(a + n - 8) ^ load64(b + n - 8))) == 0;
  if (n >= 4) return ((load32(a) ^ load32(b)) | (load32(a + n - 4) ^ load32(b + n - 4))) == 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
template <class Eq, class A, class B>
bool keys_equal(const Eq& eq, const A& a, const B& b) {
  if constexpr (is_std_equal_v<Eq> && is_string_key_v<A> && is_string_key_v<B>) {
    return a.size() == b.size() && equal_bytes(a.data(), b.data(), a.size());
  } else {
    return eq(a, b);
  }
}

// A hash marked `using is_avalanching = void;` promises well-mixed output: the store then
// places keys by its bits directly instead of mixing them once more.
template <class H, class = void>
struct is_avalanching : std::false_type {};
template <class H>
struct is_avalanching<H, std::void_t<typename H::is_avalanching>> : std::true_type {};

// Detects `h.rekey(HashKey)`: a keyed hash the store keys from Options::seed.
template <class H, class = void>
struct is_rekeyable : std::false_type {};
template <class H>
struct is_rekeyable<H, std::void_t<decltype(std::declval<H&>().rekey(HashKey{}))>> : std::true_type {};

// An integral or enum key as the 64-bit word its hash reads.
template <class K>
constexpr std::uint64_t key_word(K key) noexcept {
  if constexpr (std::is_enum_v<K>) {
    return static_cast<std::uint64_t>(static_cast<std::underlying_type_t<K>>(key));
  } else {
    return static_cast<std::uint64_t>(key);
  }
}

}  // namespace detail

inline HashKey HashKey::random() noexcept { return HashKey{detail::random_u64(), detail::random_u64()}; }

constexpr HashKey HashKey::from_seed(std::uint64_t seed) noexcept {
  std::uint64_t s = seed ^ 0x5851F42D4C957F2Dull;
  const std::uint64_t k0 = detail::splitmix64(s);
  const std::uint64_t k1 = detail::splitmix64(s);
  return HashKey{k0, k1};
}

// ---- Hash (the default): XXH3 with a random secret per instance ------------------------------

template <class K, class Enable = void>
struct Hash;  // no default hash for this key type: supply your own functor

namespace detail {
// The 192-byte secret, expanded from a 128-bit key (two splitmix64 streams), so that Hash
// takes the same HashKey as SipHash. A default-constructed one draws a random key.
class Xxh3Secret {
 public:
  Xxh3Secret() noexcept { rekey(HashKey::random()); }
  explicit Xxh3Secret(HashKey key) noexcept { rekey(key); }

  void rekey(HashKey key) noexcept {
    key_ = key;
    std::uint64_t s = key.k0;
    std::uint64_t t = key.k1 ^ 0x2545F4914F6CDD1Dull;
    for (std::size_t i = 0; i < sizeof secret_; i += 8) {
      const std::uint64_t w = splitmix64(s) ^ rotl64(splitmix64(t), 29);
      std::memcpy(secret_ + i, &w, 8);
    }
  }
  HashKey key() const noexcept { return key_; }

 protected:
  EXPIRING_INLINE std::uint64_t hash_bytes(const void* p, std::size_t n) const noexcept {
#if XXH_VERSION_NUMBER >= 800 && XXH_VERSION_NUMBER < 900
    // Up to 16 bytes (integers, most keys and field names), XXH3's own short-input function
    // inline: the value XXH3_64bits_withSecret() returns (it calls the same function with a
    // zero seed), without a call, which would make the probe around it save its registers.
    if (n <= 16) return XXH3_len_0to16_64b(static_cast<const xxh_u8*>(p), n, secret_, 0);
#endif
    return hash_long(p, n);
  }
  EXPIRING_NOINLINE std::uint64_t hash_long(const void* p, std::size_t n) const noexcept {
    return XXH3_64bits_withSecret(p, n, secret_, sizeof secret_);
  }

 private:
  static_assert(XXH3_SECRET_DEFAULT_SIZE >= XXH3_SECRET_SIZE_MIN && XXH3_SECRET_DEFAULT_SIZE % 8 == 0,
                "expiring: XXH3's default secret size");
  unsigned char secret_[XXH3_SECRET_DEFAULT_SIZE];
  HashKey key_;
};
}  // namespace detail

// Strings: transparent, so std::string_view and literals probe a std::string store.
template <class K>
struct Hash<K, std::enable_if_t<detail::is_string_key_v<K>>> : detail::Xxh3Secret {
  using is_avalanching = void;  // every output bit depends on every key bit: the table uses it as is
  using is_transparent = void;
  using Xxh3Secret::Xxh3Secret;
  // XXH3 of the bytes of `s` under this instance's secret.
  std::size_t operator()(std::string_view s) const noexcept {
    return static_cast<std::size_t>(hash_bytes(s.data(), s.size()));
  }
};

// Integral and enum keys: the hash of their value as a 64-bit word.
template <class K>
struct Hash<K, std::enable_if_t<std::is_integral_v<K> || std::is_enum_v<K>>> : detail::Xxh3Secret {
  using is_avalanching = void;  // every output bit depends on every key bit: the table uses it as is
  using Xxh3Secret::Xxh3Secret;
  // XXH3 of `key`'s value as a 64-bit word (an enum's underlying value) under this instance's
  // secret.
  std::size_t operator()(K key) const noexcept {
    const std::uint64_t v = detail::key_word(key);
    return static_cast<std::size_t>(hash_bytes(&v, sizeof v));
  }
};

// ---- SipHash: SipHash-1-3, keyed per instance -----------------------------------------------

template <class K, class Enable = void>
struct SipHash;  // SipHash-1-3 is offered for strings, integral and enum keys

// Strings: transparent, so std::string_view and literals probe a std::string store.
template <class K>
struct SipHash<K, std::enable_if_t<detail::is_string_key_v<K>>> {
  using is_avalanching = void;  // every output bit depends on every key bit: the table uses it as is
  using is_transparent = void;

  // A fresh random key (one read of the OS random source).
  SipHash() noexcept : key_(HashKey::random()) {}
  // Keyed with `key`: two instances with the same key hash alike.
  explicit SipHash(HashKey key) noexcept : key_(key) {}

  // SipHash-1-3 of the bytes of `s`.
  std::size_t operator()(std::string_view s) const noexcept {
    return static_cast<std::size_t>(detail::SipHash13::bytes(s.data(), s.size(), key_));
  }

  // Replaces the key: a store built with Options::seed rekeys its hash from the seed.
  void rekey(HashKey key) noexcept { key_ = key; }
  // The key in use.
  HashKey key() const noexcept { return key_; }

 private:
  HashKey key_;
};

// Integral and enum keys: the hash of their value as a 64-bit word.
template <class K>
struct SipHash<K, std::enable_if_t<std::is_integral_v<K> || std::is_enum_v<K>>> {
  using is_avalanching = void;  // every output bit depends on every key bit: the table uses it as is
  // A fresh random key (one read of the OS random source).
  SipHash() noexcept : key_(HashKey::random()) {}
  // Keyed with `key`: two instances with the same key hash alike.
  explicit SipHash(HashKey key) noexcept : key_(key) {}

  // SipHash-1-3 of `key`'s value as 8 little-endian bytes (an enum's underlying value).
  std::size_t operator()(K key) const noexcept {
    return static_cast<std::size_t>(detail::SipHash13::word(detail::key_word(key), key_));
  }

  // Replaces the key: a store built with Options::seed rekeys its hash from the seed.
  void rekey(HashKey key) noexcept { key_ = key; }
  // The key in use.
  HashKey key() const noexcept { return key_; }

 private:
  HashKey key_;
};

}  // namespace expiring
