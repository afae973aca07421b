// Must not compile: a clock type without `std::int64_t now_ms() const`.
#include <expiring/expiring.hpp>

#include <cstdint>
#include <string>

struct NotAClock {
  std::int64_t now() const { return 0; }  // the wrong name
};

int main() {
  expiring::Store<std::string, int, NotAClock> store{NotAClock{}};
  return static_cast<int>(store.size());
}
