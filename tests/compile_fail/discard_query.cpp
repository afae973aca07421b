// Must not compile (as an error, with -Werror=unused-result): a [[nodiscard]] query whose
// answer is dropped (get() looks like a statement but only reads).
#include <expiring/expiring.hpp>

#include <string>

int main() {
  expiring::ManualClock clock{0};
  expiring::Store<std::string, std::string, expiring::ManualClock> store{clock};
  store.get("a");
  return 0;
}
