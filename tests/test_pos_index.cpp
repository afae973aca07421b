// tests/test_pos_index.cpp: detail::PosIndex (a hash's field index: names to positions, a
// group per cache line), below FieldMap.
//
// * A differential test against std::unordered_map of name -> position, under four hashes:
//   a good one, a constant one (one probe sequence for every name), a constant fingerprint
//   byte, and constant group bits; with inserts (growing by rehash, as FieldMap grows it),
//   erasures and position moves (FieldMap's erase moves its last field into the hole).
// * Copies and moves keep every position; clear() empties; groups_for()'s bounds; a miss in a
//   full probe sequence ends.
//
// Every loop is bounded and every random choice comes from a fixed seed.
// expiring-test: one policy (the index is tested directly)
#include <expiring/detail/pos_index.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "catch.hpp"

using expiring::detail::kNoSlot;
using expiring::detail::PosIndex;

namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

// A dense array of names (as FieldMap's fields_), indexed by PosIndex, checked against a model.
struct Harness {
  std::uint64_t (*hash)(std::uint64_t);
  std::vector<std::uint64_t> names;  // position -> name
  PosIndex index;

  std::uint32_t find(std::uint64_t name) const {
    const std::uint32_t slot = index.find(hash(name), [&](std::uint32_t p) { return names[p] == name; });
    return slot == kNoSlot ? kNoSlot : index[slot];
  }
  void insert(std::uint64_t name) {
    if (index.insert_grows()) {
      index.rehash(PosIndex::groups_for(index.size() + 1), [&](std::uint32_t p) { return hash(names[p]); });
    }
    names.push_back(name);
    (void)index.emplace_new(hash(name), static_cast<std::uint32_t>(names.size() - 1));
  }
  std::uint32_t slot_of(std::uint32_t pos) const {
    return index.find(hash(names[pos]), [&](std::uint32_t p) { return p == pos; });
  }
  void erase(std::uint32_t pos) {
    const auto last = static_cast<std::uint32_t>(names.size() - 1);
    index.erase(slot_of(pos));
    if (pos != last) {
      const std::uint32_t moved = slot_of(last);
      names[pos] = names[last];
      index[moved] = pos;
    }
    names.pop_back();
  }
};

void differential(std::uint64_t (*hash)(std::uint64_t), std::size_t rounds) {
  Harness h{hash, {}, {}};
  std::unordered_map<std::uint64_t, std::uint32_t> model;  // name -> position
  std::mt19937_64 rng(0x9051);
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::uint64_t name = rng() % 2000;
    const auto it = model.find(name);
    if (it == model.end()) {
      REQUIRE(h.find(name) == kNoSlot);
      h.insert(name);
      model[name] = static_cast<std::uint32_t>(h.names.size() - 1);
    } else if (rng() % 3 == 0) {
      REQUIRE(h.find(name) == it->second);
      const std::uint32_t pos = it->second;
      const std::uint64_t last_name = h.names.back();
      h.erase(pos);
      model.erase(it);
      if (last_name != name) model[last_name] = pos;
    } else {
      REQUIRE(h.find(name) == it->second);
    }
    REQUIRE(h.index.size() == model.size());
  }
  for (const auto& [name, pos] : model) REQUIRE(h.find(name) == pos);
  for (std::uint64_t name = 2000; name < 2100; ++name) REQUIRE(h.find(name) == kNoSlot);
}

}  // namespace

TEST_CASE("pos index: differential against std::unordered_map, good hash", "[pos_index]") {
  differential([](std::uint64_t x) { return mix(x); }, 60'000);
}
TEST_CASE("pos index: differential against std::unordered_map, constant hash (one probe sequence)", "[pos_index]") {
  differential([](std::uint64_t) { return std::uint64_t{0x1234'5678'9ABC'DEF0ull}; }, 6'000);
}
TEST_CASE("pos index: differential against std::unordered_map, constant fingerprint", "[pos_index]") {
  differential([](std::uint64_t x) { return (mix(x) & ~std::uint64_t{0xFF}) | 0x5A; }, 30'000);
}
TEST_CASE("pos index: differential against std::unordered_map, constant group bits", "[pos_index]") {
  differential([](std::uint64_t x) { return mix(x) & 0xFF; }, 6'000);
}

TEST_CASE("pos index: copies and moves keep every position, clear() empties", "[pos_index]") {
  Harness h{[](std::uint64_t x) { return mix(x); }, {}, {}};
  for (std::uint64_t n = 0; n < 500; ++n) h.insert(n * 7);
  Harness copy{h.hash, h.names, h.index};
  Harness assigned{h.hash, {}, {}};
  assigned.names = h.names;
  assigned.index = copy.index;
  for (std::uint64_t n = 0; n < 500; ++n) {
    REQUIRE(copy.find(n * 7) == n);
    REQUIRE(assigned.find(n * 7) == n);
  }
  copy.erase(0);  // the copy is independent
  CHECK(copy.find(0) == kNoSlot);
  CHECK(h.find(0) == 0);
  PosIndex moved(std::move(h.index));
  CHECK(h.index.size() == 0);
  CHECK(h.find(7) == kNoSlot);  // a moved-from index is empty and usable
  Harness m{h.hash, h.names, std::move(moved)};
  CHECK(m.find(7) == 1);
  CHECK(m.index.bytes() % 64 == 0);
  m.index.clear();
  CHECK(m.index.size() == 0);
  CHECK(m.index.bytes() == 0);
  CHECK(m.find(7) == kNoSlot);
}

TEST_CASE("pos index: groups_for holds n below the maximum load, and refuses 2^32 slots", "[pos_index]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{10}, std::size_t{11}, std::size_t{12},
                        std::size_t{100}, std::size_t{100'000}}) {
    const std::size_t g = PosIndex::groups_for(n);
    CHECK((g & (g - 1)) == 0);
    CHECK(g * PosIndex::kSlots - g * PosIndex::kSlots / 8 > n);
  }
  CHECK_THROWS_AS(PosIndex::groups_for(std::size_t{0xFFFFFFFFu}), std::length_error);
}
