// expiring/hash.hpp: XXH3-based hashing for keys.
//
// `expiring::Hash<std::string>` (and `<std::string_view>`) is transparent: a store keyed by
// std::string can be probed with a std::string_view or a string literal without building a
// std::string, so lookups allocate nothing. Integral and enum keys hash their 8-byte value.
//
// The store does not trust any key hash to be unpredictable: it folds every hash with a seed
// chosen per store (Options::seed) before it picks a probe position, so keys an attacker
// chose against one process are not aimed at the probe sequences of another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace expiring {

template <class K, class Enable = void>
struct Hash;  // primary template: no hash for this key type; supply your own functor

namespace detail {
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return static_cast<std::size_t>(XXH3_64bits(s.data(), s.size()));
  }
};
}  // namespace detail

template <>
struct Hash<std::string> : detail::StringHash {};
template <>
struct Hash<std::string_view> : detail::StringHash {};

template <class K>
struct Hash<K, std::enable_if_t<std::is_integral_v<K> || std::is_enum_v<K>>> {
  std::size_t operator()(K key) const noexcept {
    const auto v = static_cast<std::uint64_t>(key);
    return static_cast<std::size_t>(XXH3_64bits(&v, sizeof v));
  }
};

}  // namespace expiring
