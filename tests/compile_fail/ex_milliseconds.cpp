// Must not compile: Ex takes whole seconds; a millisecond duration must be written as Px.
#include <expiring/expiring.hpp>

#include <chrono>

int main() {
  const expiring::Ex e{std::chrono::milliseconds(1500)};
  return static_cast<int>(e.seconds);
}
