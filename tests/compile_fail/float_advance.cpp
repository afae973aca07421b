// Must not compile: ManualClock::advance with a floating-point duration.
#include <expiring/expiring.hpp>

#include <chrono>

int main() {
  expiring::ManualClock clock{0};
  clock.advance(std::chrono::duration<double, std::milli>(1.5));
  return clock.now_ms() == 0 ? 0 : 1;
}
