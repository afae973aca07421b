// Must not compile: a hash member on a ConcurrentStore whose values are not hashes.
#include <expiring/concurrent_store.hpp>

#include <string>

int main() {
  expiring::ConcurrentStore<std::string, std::string> store;
  return store.hset("key", "field", "value").ok() ? 0 : 1;
}
