// Must not compile: the clock passed third, where ExpiringStore takes the hash (the Store alias
// takes the clock third). Expected: the static_assert naming the mistake.
#include <expiring/expiring.hpp>

#include <string>

int main() {
  expiring::ExpiringStore<std::string, std::string, expiring::ManualClock> store;
  return static_cast<int>(store.size());
}
