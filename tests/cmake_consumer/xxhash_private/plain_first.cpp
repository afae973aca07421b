// <xxhash.h> in its ordinary (linked) mode first, as another header of the user's might
// include it; then expiring, whose hash.hpp includes it again in inline mode.
#include <xxhash.h>

#include <expiring/expiring.hpp>

#include <cstdint>
#include <string>

#ifdef XXH_INLINE_ALL
#error "expiring/expiring.hpp leaked XXH_INLINE_ALL into a user's translation unit"
#endif

std::uint64_t hash_after_plain_include(const std::string& s) {
  expiring::Hash<std::string> h{expiring::HashKey::from_seed(7)};
  return h(s);
}

// The XXH names now refer to the inline copy: callable without linking libxxhash.
std::uint64_t xxh3_after_plain_include(const std::string& s) { return XXH3_64bits(s.data(), s.size()); }
