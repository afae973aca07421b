// Consumer without CMake: compiled and linked with
//   c++ -std=c++17 main.cpp -o consumer $(pkg-config --cflags --libs expiring)
// against an installed expiring (tests/CMakeLists.txt: packaging.pkg_config).
#include <expiring/expiring.hpp>
#include <string>
int main() {
  expiring::ManualClock clock{1000000};
  expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>, expiring::ManualClock&> store{clock};
  store.set("k", "v", expiring::Px{100});
  return store.pttl("k") == 100 ? 0 : 1;
}
