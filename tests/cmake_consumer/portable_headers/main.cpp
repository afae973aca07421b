// Compiled with __linux__ (and its aliases) undefined, and -H: the library's headers must
// take their portable paths (no <sys/mman.h>, <cpuid.h>, <x86intrin.h>, ...), compile, and
// work (tests/CMakeLists.txt: packaging.portable_headers).
#include <expiring/expiring.hpp>
#include <expiring/redis/commands.hpp>
#include <expiring/redis/glob.hpp>
#include <expiring/redis/resp.hpp>
#include <string>
int main() {
  // The default clock (TscClock) reads the system clock where the TSC path is compiled out.
  expiring::ExpiringStore<std::string, std::string> store;
  store.set("k", "v", expiring::Px{100000});
  store.tick();
  const auto ttl = store.pttl("k");
  return ttl > 0 && ttl <= 100000 ? 0 : 1;
}
