// tests/hash_state.hpp: a store of hashes' state as text, to compare two stores: for each
// key of `keys` that holds a hash, the key's PEXPIRETIME, then its fields sorted by name with
// their values and PEXPIRETIMEs ("k@-1: a=1@1700000010000 b=2@-1"). Works on every store of
// hashes (hgetall, hpexpiretime, pexpiretime); a call that fails shows as "error".
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace test_state {

template <class S, class Keys>
std::string hash_state(S& s, const Keys& keys) {
  std::string out;
  for (const auto& k : keys) {
    auto got = s.hgetall(k);
    if (!got.ok()) {
      out += std::string(k) + ": error\n";
      continue;
    }
    auto& all = got.value();
    if (all.empty()) continue;
    std::sort(all.begin(), all.end());
    std::vector<std::decay_t<decltype(all.front().first)>> fields;
    for (const auto& p : all) fields.push_back(p.first);
    auto times = s.hpexpiretime(k, fields);
    out += std::string(k) + "@" + std::to_string(s.pexpiretime(k)) + ":";
    for (std::size_t j = 0; j < all.size(); ++j) {
      out += " " + all[j].first + "=" + all[j].second + "@" + (times.ok() ? std::to_string(times.value()[j]) : "error");
    }
    out += "\n";
  }
  return out;
}

}  // namespace test_state
