// expiring's inline use of xxHash stays private to its header (tests/CMakeLists.txt:
// packaging.xxhash_private): XXH_INLINE_ALL is not defined after including it, and translation
// units that include <xxhash.h> in other ways link together and agree.
#include <expiring/expiring.hpp>

#include <cstdint>
#include <string>

#ifdef XXH_INLINE_ALL
#error "expiring/expiring.hpp leaked XXH_INLINE_ALL into a user's translation unit"
#endif

std::uint64_t hash_after_plain_include(const std::string& s);
std::uint64_t xxh3_after_plain_include(const std::string& s);
std::uint64_t hash_user_inline(const std::string& s);

int main() {
  const std::string key = "a key longer than sixteen bytes";
  expiring::Hash<std::string> h{expiring::HashKey::from_seed(7)};
  const std::uint64_t here = h(key);
  if (hash_after_plain_include(key) != here) return 1;
  if (hash_user_inline(key) != here) return 2;
  if (xxh3_after_plain_include(key) == 0) return 3;
  expiring::ManualClock clock{1000000};
  expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>, expiring::ManualClock&> store{clock};
  store.set("k", "v", expiring::Px{100});
  return store.pttl("k") == 100 ? 0 : 4;
}
