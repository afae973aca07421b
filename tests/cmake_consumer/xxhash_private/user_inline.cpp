// The user asked for inline mode themselves: expiring must leave their macro defined.
#define XXH_INLINE_ALL
#include <expiring/expiring.hpp>

#include <cstdint>
#include <string>

#ifndef XXH_INLINE_ALL
#error "expiring/expiring.hpp removed the user's own XXH_INLINE_ALL"
#endif

std::uint64_t hash_user_inline(const std::string& s) {
  expiring::Hash<std::string> h{expiring::HashKey::from_seed(7)};
  return h(s);
}
