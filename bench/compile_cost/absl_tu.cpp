// The baseline for store_tu.cpp: the same two maps and five calls written
// with absl::flat_hash_map.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <string>

int main() {
  absl::flat_hash_map<std::string, std::string> names;
  absl::flat_hash_map<std::uint64_t, std::uint64_t> counts;
  names.insert_or_assign("k", "v");
  counts.insert_or_assign(1, 2);
  auto v = names.find("k");
  auto c = counts.find(1);
  counts.erase(1);
  return (v != names.end()) + (c != counts.end());
}
