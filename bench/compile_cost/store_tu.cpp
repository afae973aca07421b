// The translation unit issue 24 measures: a Store<std::string, std::string>,
// a Store<std::uint64_t, std::uint64_t> and five calls. absl_tu.cpp is the
// same unit over absl::flat_hash_map; scripts/compile_cost.py compares them.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdint>
#include <string>

int main() {
  using namespace std::chrono_literals;
  expiring::Store<std::string, std::string> names;
  expiring::Store<std::uint64_t, std::uint64_t> counts;
  bool ok = names.set("k", "v", 10s).value_or(false);
  ok = counts.set(1, 2).value_or(false) && ok;
  const std::string* v = names.get("k");
  const std::uint64_t* c = counts.get(1);
  counts.del(1);
  return ok + (v != nullptr) + (c != nullptr);
}
