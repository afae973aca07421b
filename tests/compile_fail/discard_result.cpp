// Must not compile (as an error, with -Werror=unused-result): a Result dropped on the floor.
#include <expiring/expiring.hpp>

#include <string>

int main() {
  expiring::ManualClock clock{0};
  expiring::Store<std::string, std::string, expiring::ManualClock> store{clock};
  store.set("a", "b");
  return 0;
}
