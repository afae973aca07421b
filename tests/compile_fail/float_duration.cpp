// Must not compile: a floating-point duration as a TTL.
#include <expiring/expiring.hpp>

#include <chrono>
#include <string>

int main() {
  expiring::ManualClock clock{0};
  expiring::Store<std::string, std::string, expiring::ManualClock> store{clock};
  return store.set("a", "b", std::chrono::duration<double>(1.5)) == true ? 0 : 1;
}
