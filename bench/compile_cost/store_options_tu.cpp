// store_tu.cpp with both stores built from Options: the constructor that takes Options
// brings in the code of every room an option can turn on (eviction, access tracking, lazy
// free and its thread), which a store built without them compiles only once a setter
// asks for it.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdint>
#include <string>

int main() {
  using namespace std::chrono_literals;
  expiring::Options options;
  options.hz = 10;
  expiring::Store<std::string, std::string> names(options);
  expiring::Store<std::uint64_t, std::uint64_t> counts(options);
  bool ok = names.set("k", "v", 10s).value_or(false);
  ok = counts.set(1, 2).value_or(false) && ok;
  const std::string* v = names.get("k");
  const std::uint64_t* c = counts.get(1);
  counts.del(1);
  return ok + (v != nullptr) + (c != nullptr);
}
