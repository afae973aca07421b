// The positive control of the compile-fail harness: the correct spelling of every case of
// this directory, built by the same harness with the same flags. It must build; if it does
// not, the harness (or the library) is broken and the failing cases prove nothing.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

struct MyStruct {
  int a;
  bool operator==(const MyStruct& o) const { return a == o.a; }
};
struct MyHash {
  std::size_t operator()(const MyStruct& s) const noexcept { return static_cast<std::size_t>(s.a); }
};
struct AClock {
  std::int64_t now_ms() const { return 0; }
};

int main() {
  using namespace std::chrono_literals;
  expiring::ManualClock clock{0};
  expiring::Store<std::string, std::string, expiring::ManualClock> store{clock};  // clock_as_hash
  expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                          expiring::ManualClock>
      long_spelling{clock};
  expiring::ExpiringStore<MyStruct, int, MyHash> hashed;  // key_without_hash
  expiring::Store<std::string, int, AClock> clocked{AClock{}};  // not_a_clock
  const expiring::Ex e{std::chrono::seconds(2)};               // ex_milliseconds
  const expiring::Px p{std::chrono::milliseconds(1500)};
  (void)store.set("a", "b", std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(1.5)));  // float_duration
  clock.advance(std::chrono::milliseconds(2));  // float_advance
  (void)store.set("a", "b");                    // discard_result: on purpose
  const bool ok = store.set("a", "b", e) == true && store.set("c", "d", p) == true;
  const std::string* v = store.get("a");  // discard_query
  return ok && v != nullptr && long_spelling.size() == 0 && hashed.size() == 0 && clocked.size() == 0 ? 0 : 1;
}
