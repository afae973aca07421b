// tests/test_table.cpp: direct tests of the storage engine's table (detail::SlotTable), of the
// keyspace built on it (detail::Keyspace) and of VolatileBitmap, below the store's API.
//
// * A differential test against std::unordered_map under four hashes: a good one, a constant
//   one (every key in one probe sequence), one with a constant fingerprint byte and one with
//   constant group bits.
// * Erasure moves no other entry; churn at a constant size does not grow the table and keeps
//   misses short; rehash reports every move once; the expiry indexes and the access array
//   follow a rehash; copies keep the layout and leak nothing when an entry's copy throws; a
//   throwing constructor leaves the table as it was; try_emplace with arguments that refer
//   into a table it grows; random_slot's uniformity and its fallback; groups_for's bounds;
//   VolatileBitmap's scans; Keyspace::compact's conditions.
//
// Every loop is bounded and every random choice comes from a fixed seed.
// expiring-test: one policy (the table and keyspace are tested directly, under every policy they take)
#include <expiring/detail/expiry_index.hpp>
#include <expiring/detail/keyspace.hpp>
#include <expiring/detail/table.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "catch.hpp"

namespace {

using expiring::detail::kGroupSlots;
using expiring::detail::kNoSlot;
using expiring::detail::Keyspace;
using expiring::detail::SlotTable;
using expiring::detail::TimerWheel;
using expiring::detail::VolatileBitmap;

std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ---- SlotTable of plain key/value entries, under four hashes ----------------------------------

struct KV {
  std::uint64_t key;
  std::uint64_t value;
};
using Table = SlotTable<KV>;

// The maximum load of a table of g groups: 7/8 of its slots (what rehash() sets).
std::size_t max_load_of(std::size_t g) { return g * kGroupSlots - g * kGroupSlots / 8; }

struct GoodHash {
  static constexpr const char* name = "good";
  std::uint64_t operator()(std::uint64_t k) const noexcept { return mix64(k); }
};
// Every key has the same 64-bit hash: one probe sequence, one fingerprint.
struct ConstantHash {
  static constexpr const char* name = "constant";
  std::uint64_t operator()(std::uint64_t) const noexcept { return 0x5555'5555'5555'5555ull; }
};
// The fingerprint (low byte) is the same for every key; the group bits vary.
struct ConstantFingerprintHash {
  static constexpr const char* name = "constant fingerprint";
  std::uint64_t operator()(std::uint64_t k) const noexcept { return (mix64(k) & ~std::uint64_t{0xFF}) | 0x5Au; }
};
// The group bits (all bits above the fingerprint) are the same for every key.
struct ConstantGroupHash {
  static constexpr const char* name = "constant group";
  std::uint64_t operator()(std::uint64_t k) const noexcept {
    return 0x0123'4567'89AB'CD00ull | (mix64(k) & 0xFFu);
  }
};

// A SlotTable used as a map, the way Keyspace uses it: find, then rehash to groups_for(size + 1)
// when insert_grows(), then emplace_new. Counts key comparisons and rehashes.
template <class H>
struct Driver {
  Table t;
  H hf;
  std::size_t rehashes = 0;
  mutable std::size_t comparisons = 0;

  auto hash_of() const {
    return [this](const KV& e) { return hf(e.key); };
  }
  std::uint32_t find(std::uint64_t k) const {
    return t.find(hf(k), [this, k](const KV& e) {
      ++comparisons;
      return e.key == k;
    });
  }
  // Precondition: k is absent.
  std::uint32_t insert(std::uint64_t k, std::uint64_t v) {
    if (t.insert_grows()) {
      t.rehash(Table::groups_for(t.size() + 1), hash_of(), [](KV*, std::uint32_t, std::uint32_t) {});
      ++rehashes;
    }
    return t.emplace_new(hf(k), KV{k, v});
  }
  bool erase(std::uint64_t k) {
    const std::uint32_t i = find(k);
    if (i == kNoSlot) return false;
    t.erase(i);
    return true;
  }
  bool check() const { return t.check(hash_of()); }
};

// Everything observable agrees with the model: check(), size(), every key of [0, key_range)
// found exactly when the model has it (with its value), and next_occupied() at every index
// agrees with occupied().
template <class H>
void verify(const Driver<H>& d, const std::unordered_map<std::uint64_t, std::uint64_t>& model,
            std::uint64_t key_range) {
  REQUIRE(d.check());
  REQUIRE(d.t.size() == model.size());
  std::size_t wrong = 0;
  std::uint64_t first_wrong = 0;
  for (std::uint64_t k = 0; k < key_range; ++k) {
    const std::uint32_t i = d.find(k);
    const auto it = model.find(k);
    const bool ok = it == model.end()
                        ? i == kNoSlot
                        : i != kNoSlot && d.t.occupied(i) && d.t[i].key == k && d.t[i].value == it->second;
    if (!ok && wrong++ == 0) first_wrong = k;
  }
  CAPTURE(first_wrong);
  REQUIRE(wrong == 0);
  // next_occupied(i) for every i, against a backward scan of occupied().
  const std::size_t cap = d.t.capacity();
  std::size_t expect = cap;
  std::size_t occupied = 0;
  std::size_t bad_next = 0;
  for (std::size_t i = cap; i-- > 0;) {
    if (d.t.occupied(static_cast<std::uint32_t>(i))) {
      expect = i;
      ++occupied;
    }
    if (d.t.next_occupied(i) != expect) ++bad_next;
  }
  REQUIRE(bad_next == 0);
  REQUIRE(occupied == model.size());
  REQUIRE(d.t.next_occupied(cap) == cap);
}

// ~ops mixed operations: insertions (or updates) of keys in [0, key_range), erasures, lookups
// that hit or miss, and now and then a shrinking rehash. The insert share changes by phase so
// that the size climbs, falls and climbs again, crossing growth thresholds both ways.
template <class H>
void differential(std::uint64_t seed, int ops, std::uint64_t key_range, int verify_every) {
  CAPTURE(H::name, seed);
  std::mt19937_64 rng(seed);
  Driver<H> d;
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::size_t hits = 0;
  std::size_t misses = 0;
  std::size_t shrinks = 0;
  for (int op = 0; op < ops; ++op) {
    static constexpr std::uint64_t kInsertPct[] = {70, 35, 65, 20};
    const std::uint64_t insert_pct = kInsertPct[static_cast<std::size_t>(op) * 4 / static_cast<std::size_t>(ops)];
    const std::uint64_t r = rng() % 100;
    const std::uint64_t k = rng() % key_range;
    if (r < insert_pct) {
      const std::uint64_t v = rng();
      const std::uint32_t i = d.find(k);
      REQUIRE((i != kNoSlot) == (model.count(k) != 0));
      if (i != kNoSlot) {
        d.t[i].value = v;
      } else {
        const std::uint32_t at = d.insert(k, v);
        REQUIRE(d.t[at].key == k);
      }
      model[k] = v;
    } else if (r < insert_pct + (100 - insert_pct) * 2 / 3) {
      REQUIRE(d.erase(k) == (model.erase(k) != 0));
    } else {
      const std::uint32_t i = d.find(k);
      const auto it = model.find(k);
      if (it == model.end()) {
        REQUIRE(i == kNoSlot);
        ++misses;
      } else {
        REQUIRE(i != kNoSlot);
        REQUIRE(d.t[i].value == it->second);
        ++hits;
      }
      REQUIRE(d.find(key_range + rng() % key_range) == kNoSlot);  // never inserted
    }
    if (rng() % 4096 == 0 && d.t.size() * 4 < d.t.capacity()) {
      const std::size_t g = Table::groups_for(d.t.size());
      d.t.rehash(g, d.hash_of(), [](KV*, std::uint32_t, std::uint32_t) {});
      REQUIRE(d.t.groups() == g);
      ++shrinks;
    }
    if ((op + 1) % verify_every == 0) verify(d, model, key_range);
  }
  verify(d, model, key_range);
  CHECK(hits > 0);
  CHECK(misses > 0);
  CHECK(d.rehashes > 0);
  (void)shrinks;
}

TEST_CASE("table: differential against std::unordered_map, good hash", "[table]") {
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) differential<GoodHash>(seed, 50'000, 12'000, 5'000);
}

TEST_CASE("table: differential against std::unordered_map, constant hash (one probe sequence)", "[table]") {
  // Every key in one probe sequence: a miss walks every group the keys overflowed through.
  for (std::uint64_t seed : {11u, 12u}) differential<ConstantHash>(seed, 12'000, 400, 1'000);
}

TEST_CASE("table: differential against std::unordered_map, constant fingerprint", "[table]") {
  for (std::uint64_t seed : {21u, 22u, 23u}) differential<ConstantFingerprintHash>(seed, 30'000, 4'000, 3'000);
}

TEST_CASE("table: differential against std::unordered_map, constant group bits", "[table]") {
  // All keys start in the same group and fan out along one probe sequence, under 255
  // fingerprints: every overflow bit of the early groups gets set.
  for (std::uint64_t seed : {31u, 32u}) differential<ConstantGroupHash>(seed, 12'000, 400, 1'000);
}

TEST_CASE("table: a constant hash fills its probe sequence group by group, and misses stop", "[table]") {
  // Fill a table with keys of one hash up to its maximum load: the groups of the probe
  // sequence fill in order, so a miss must walk all full groups and stop at the first one
  // that never overflowed.
  Driver<ConstantHash> d;
  d.t.rehash(8, d.hash_of(), [](KV*, std::uint32_t, std::uint32_t) {});
  std::uint64_t k = 0;
  while (!d.t.insert_grows()) d.insert(k, k * 3), ++k;
  REQUIRE(d.t.size() == max_load_of(8));
  REQUIRE(d.check());
  d.comparisons = 0;
  REQUIRE(d.find(1'000'000) == kNoSlot);
  // A miss compares the key against every entry: they all share the fingerprint, and every
  // group before the last one it visits overflowed.
  REQUIRE(d.comparisons == d.t.size());
  for (std::uint64_t j = 0; j < k; ++j) REQUIRE(d.t[d.find(j)].value == j * 3);
}

// ---- erasure moves nothing --------------------------------------------------------------------

template <class H>
void erase_moves_nothing(std::uint64_t n, std::uint64_t seed) {
  CAPTURE(H::name);
  Driver<H> d;
  for (std::uint64_t k = 0; k < n; ++k) d.insert(k, ~k);
  std::vector<const KV*> addr(n);
  std::vector<std::uint32_t> index(n);
  for (std::uint64_t k = 0; k < n; ++k) {
    index[k] = d.find(k);
    addr[k] = &d.t[index[k]];
  }
  std::vector<std::uint64_t> order(n);
  for (std::uint64_t k = 0; k < n; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::set<std::uint64_t> erased(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n / 2));
  const std::size_t groups = d.t.groups();
  for (const std::uint64_t k : erased) REQUIRE(d.erase(k));
  REQUIRE(d.t.groups() == groups);
  REQUIRE(d.check());
  std::size_t moved = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint32_t i = d.find(k);
    if (erased.count(k) != 0) {
      REQUIRE(i == kNoSlot);
      REQUIRE_FALSE(d.t.occupied(index[k]));
    } else if (i != index[k] || &d.t[i] != addr[k] || addr[k]->key != k || addr[k]->value != ~k) {
      ++moved;
    }
  }
  REQUIRE(moved == 0);
}

TEST_CASE("table: erasing any subset moves no other entry", "[table]") {
  erase_moves_nothing<GoodHash>(6'000, 5);
  erase_moves_nothing<ConstantFingerprintHash>(3'000, 6);
  erase_moves_nothing<ConstantGroupHash>(500, 7);
  erase_moves_nothing<ConstantHash>(300, 8);
}

// ---- churn ------------------------------------------------------------------------------------

// Average key comparisons over `probes` lookups of keys that are absent.
template <class H>
double miss_cost(const Driver<H>& d, std::uint64_t& next_missing, int probes) {
  d.comparisons = 0;
  for (int p = 0; p < probes; ++p) {
    if (d.find(next_missing++) != kNoSlot) return 1e9;
  }
  return static_cast<double>(d.comparisons) / probes;
}

TEST_CASE("table: churn at a constant size neither grows the table nor lengthens misses", "[table]") {
  constexpr std::uint64_t kLive = 1000;
  const std::size_t bound = 2 * Table::groups_for(kLive);

  SECTION("good hash, 1e6 insert/erase pairs") {
    Driver<GoodHash> d;
    std::uint64_t missing = std::uint64_t{1} << 40;
    for (std::uint64_t k = 0; k < kLive; ++k) d.insert(k, k);
    const std::size_t rehashes_at_start = d.rehashes;
    double worst = 0;
    std::size_t max_groups = 0;
    for (std::uint64_t k = kLive; k < kLive + 1'000'000; ++k) {
      REQUIRE(d.find(k) == kNoSlot);
      d.insert(k, k);
      REQUIRE(d.erase(k - kLive));
      max_groups = std::max(max_groups, d.t.groups());
      if (k % 50'000 == 0) {
        worst = std::max(worst, miss_cost(d, missing, 500));
        REQUIRE(d.check());
      }
    }
    CAPTURE(max_groups, worst, d.rehashes - rehashes_at_start);
    REQUIRE(d.t.size() == kLive);
    REQUIRE(max_groups <= bound);
    REQUIRE(worst < 2.0);
    // Erasures from overflowed groups used up the load budget: same-size rehashes happened.
    REQUIRE(d.rehashes > rehashes_at_start);
    REQUIRE(d.check());
  }

  SECTION("constant fingerprint: misses compare every entry of each group they visit") {
    // With one fingerprint for all keys the comparisons of a miss count the entries of the
    // groups it visits: a measure of probe length. Without the erase rule the overflow bits
    // would pile up until a miss scanned most of the table (~kLive comparisons).
    Driver<ConstantFingerprintHash> d;
    std::uint64_t missing = std::uint64_t{1} << 40;
    for (std::uint64_t k = 0; k < kLive; ++k) d.insert(k, k);
    // A fresh table (rehash to the same size) is the baseline.
    d.t.rehash(d.t.groups(), d.hash_of(), [](KV*, std::uint32_t, std::uint32_t) {});
    const double baseline = miss_cost(d, missing, 2000);
    const std::size_t rehashes_at_start = d.rehashes;
    double worst = 0;
    std::size_t max_groups = 0;
    for (std::uint64_t k = kLive; k < kLive + 300'000; ++k) {
      d.insert(k, k);
      REQUIRE(d.erase(k - kLive));
      max_groups = std::max(max_groups, d.t.groups());
      if (k % 10'000 == 0) worst = std::max(worst, miss_cost(d, missing, 500));
    }
    CAPTURE(baseline, worst, max_groups, d.rehashes - rehashes_at_start);
    REQUIRE(max_groups <= bound);
    REQUIRE(d.rehashes > rehashes_at_start);
    REQUIRE(worst < 3 * baseline);
    REQUIRE(d.check());
  }
}

// ---- rehash and on_move -----------------------------------------------------------------------

TEST_CASE("table: rehash reports each move once, as (new index, old index)", "[table]") {
  Driver<GoodHash> d;
  std::mt19937_64 rng(77);
  for (std::uint64_t k = 0; k < 3000; ++k) d.insert(k, rng());
  for (std::uint64_t k = 0; k < 3000; ++k) {
    if (k % 3 != 0) d.erase(k);  // holes, so old indices are sparse; and room to shrink
  }

  for (const std::size_t target : {d.t.groups() * 2, d.t.groups(), Table::groups_for(d.t.size())}) {
    CAPTURE(target);
    std::map<std::uint32_t, KV> before;  // old index -> entry
    for (std::size_t i = d.t.next_occupied(0); i < d.t.capacity(); i = d.t.next_occupied(i + 1)) {
      before.emplace(static_cast<std::uint32_t>(i), d.t[static_cast<std::uint32_t>(i)]);
    }
    std::map<std::uint32_t, int> from_seen;
    std::set<std::uint32_t> to_seen;
    std::size_t wrong = 0;
    std::map<std::uint32_t, std::uint32_t> moves;  // new -> old
    d.t.rehash(target, d.hash_of(), [&](KV* slots, std::uint32_t to, std::uint32_t from) {
      ++from_seen[from];
      if (!to_seen.insert(to).second) ++wrong;
      const auto it = before.find(from);
      if (it == before.end() || slots[to].key != it->second.key || slots[to].value != it->second.value) ++wrong;
      moves[to] = from;
    });
    REQUIRE(wrong == 0);
    REQUIRE(d.t.groups() == target);
    REQUIRE(from_seen.size() == before.size());
    for (const auto& [from, count] : from_seen) REQUIRE(count == 1);
    REQUIRE(moves.size() == d.t.size());
    for (const auto& [to, from] : moves) {
      REQUIRE(d.t.occupied(to));
      REQUIRE(d.t[to].key == before.at(from).key);
      REQUIRE(d.t[to].value == before.at(from).value);
      REQUIRE(d.find(d.t[to].key) == to);
    }
    REQUIRE(d.check());
  }

  SECTION("rehash(0) of an empty table frees everything") {
    for (std::uint64_t k = 0; k < 3000; ++k) d.erase(k);
    REQUIRE(d.t.size() == 0);
    d.t.rehash(0, d.hash_of(), [](KV*, std::uint32_t, std::uint32_t) { FAIL("nothing to move"); });
    REQUIRE(d.t.groups() == 0);
    REQUIRE(d.t.capacity() == 0);
    REQUIRE(d.t.bytes() == 0);
    REQUIRE(d.t.insert_grows());
    REQUIRE(d.find(1) == kNoSlot);
    REQUIRE(d.t.next_occupied(0) == 0);
    d.insert(1, 2);
    REQUIRE(d.t[d.find(1)].value == 2);
  }
}

// ---- Keyspace: the expiry index and the access array follow a rehash --------------------------

struct MixHash {
  std::size_t operator()(std::uint64_t k) const noexcept { return static_cast<std::size_t>(mix64(k)); }
};
struct PlainEq {
  bool operator()(std::uint64_t a, std::uint64_t b) const noexcept { return a == b; }
};
template <class Index>
using KS = Keyspace<std::uint64_t, std::uint64_t, MixHash, PlainEq, Index>;

template <class Ks>
std::uint32_t ks_insert(Ks& ks, std::uint64_t k, std::uint64_t v) {
  const auto r = ks.try_emplace(k, ks.hash_of(k), k, v);
  REQUIRE(r.second);
  return r.first;
}
template <class Ks>
std::uint32_t ks_find(const Ks& ks, std::uint64_t k) {
  return ks.find_index(k, ks.hash_of(k));
}
template <class Ks>
void ks_erase(Ks& ks, std::uint64_t k) {
  const std::uint32_t i = ks_find(ks, k);
  REQUIRE(i != kNoSlot);
  ks.erase(Ks::slot_of(i), [](auto&) {});
}
template <class Ks>
void ks_set_deadline(Ks& ks, std::uint64_t k, std::int64_t when) {
  const std::uint32_t i = ks_find(ks, k);
  REQUIRE(i != kNoSlot);
  ks.prepare_deadline(when);
  ks.set_deadline(i, when);
}

// Keyspace agrees with the expected keys, deadlines and access values.
template <class Ks>
void verify_keyspace(const Ks& ks, const std::map<std::uint64_t, std::uint64_t>& values,
                     const std::map<std::uint64_t, std::int64_t>& deadlines,
                     const std::map<std::uint64_t, std::uint32_t>* access) {
  REQUIRE(ks.check_invariants());
  REQUIRE(ks.size() == values.size());
  REQUIRE(ks.expires_size() == deadlines.size());
  std::size_t wrong = 0;
  std::uint64_t first_wrong = 0;
  for (const auto& [k, v] : values) {
    const std::uint32_t i = ks_find(ks, k);
    bool ok = i != kNoSlot && ks.entry(i).key == k && ks.entry(i).value == v;
    if (ok) {
      const auto d = deadlines.find(k);
      ok = d == deadlines.end() ? !ks.is_volatile(i) && ks.entry(i).deadline == expiring::detail::kNoDeadline
                                : ks.is_volatile(i) && ks.entry(i).deadline == d->second;
    }
    if (ok && access != nullptr) {
      const auto a = access->find(k);
      ok = ks.access(i) == (a == access->end() ? 0u : a->second);
    }
    if (!ok && wrong++ == 0) first_wrong = k;
  }
  CAPTURE(first_wrong);
  REQUIRE(wrong == 0);
}

template <class Index>
void keyspace_follows_rehash(std::uint64_t seed) {
  KS<Index> ks(MixHash{}, PlainEq{}, 0x5EED);
  std::mt19937_64 rng(seed);
  std::map<std::uint64_t, std::uint64_t> values;
  std::map<std::uint64_t, std::int64_t> deadlines;
  std::map<std::uint64_t, std::uint32_t> access;
  ks.enable_access(true);
  auto random_deadline = [&] { return static_cast<std::int64_t>(1'000'000 + rng() % 4'000'000'000ull); };

  for (std::uint64_t k = 0; k < 300; ++k) {
    values[k] = rng();
    ks_insert(ks, k, values[k]);
  }
  for (std::uint64_t k = 0; k < 300; ++k) {
    if (rng() % 3 == 0) {
      deadlines[k] = random_deadline();
      ks_set_deadline(ks, k, deadlines[k]);
    }
    if (rng() % 2 == 0) {
      access[k] = static_cast<std::uint32_t>(rng() | 1u);
      ks.access(ks_find(ks, k)) = access[k];
    }
  }
  verify_keyspace(ks, values, deadlines, &access);

  // Grow through several doublings, with deadlines, access values, erasures and cleared
  // deadlines along the way.
  const std::size_t groups_before = ks.entries_mut().groups();
  const std::uint32_t epoch_before = ks.epoch();
  for (std::uint64_t k = 300; k < 20'000; ++k) {
    values[k] = rng();
    ks_insert(ks, k, values[k]);
    const std::uint64_t r = rng() % 16;
    if (r < 4) {
      deadlines[k] = random_deadline();
      ks_set_deadline(ks, k, deadlines[k]);
    } else if (r < 6) {
      access[k] = static_cast<std::uint32_t>(rng() | 1u);
      ks.access(ks_find(ks, k)) = access[k];
    } else if (r == 6) {
      const std::uint64_t victim = rng() % k;
      if (values.count(victim) != 0) {
        ks_erase(ks, victim);
        values.erase(victim);
        deadlines.erase(victim);
        access.erase(victim);
      }
    } else if (r == 7) {
      const std::uint64_t victim = rng() % k;
      if (values.count(victim) != 0) {
        REQUIRE(ks.clear_deadline(ks_find(ks, victim)) == (deadlines.erase(victim) != 0));
      }
    }
    if (k % 5000 == 0) verify_keyspace(ks, values, deadlines, &access);
  }
  REQUIRE(ks.entries_mut().groups() >= 32 * groups_before);
  REQUIRE(ks.epoch() > epoch_before);
  verify_keyspace(ks, values, deadlines, &access);

  if constexpr (std::is_same_v<Index, VolatileBitmap>) {
    // Exactly the slots of the keys with deadlines are set.
    std::set<std::uint32_t> want;
    for (const auto& [k, d] : deadlines) want.insert(ks_find(ks, k));
    std::set<std::uint32_t> got;
    for (std::size_t i = ks.expiry().next(0); i != VolatileBitmap::npos; i = ks.expiry().next(i + 1)) {
      got.insert(static_cast<std::uint32_t>(i));
    }
    REQUIRE(got == want);
    REQUIRE(ks.expiry().count_from(0) == want.size());
  } else {
    // The wheel's handles were repointed: advancing reclaims exactly the keys due.
    const std::int64_t now = 2'000'000'000;
    std::set<std::uint64_t> reclaimed;
    ks.expiry().advance(
        ks.entries_mut(), now,
        [&](std::uint32_t i) {
          reclaimed.insert(ks.entry(i).key);
          ks.erase(KS<Index>::slot_of(i), [](auto&) {});
        },
        [] { return true; });
    std::set<std::uint64_t> due;
    for (const auto& [k, d] : deadlines) {
      if (d < now) due.insert(k);
    }
    REQUIRE(reclaimed == due);
    for (const std::uint64_t k : due) {
      values.erase(k);
      deadlines.erase(k);
      access.erase(k);
    }
    verify_keyspace(ks, values, deadlines, &access);
  }
}

TEST_CASE("keyspace: the expiry index and the access array follow growth", "[table]") {
  SECTION("VolatileBitmap") { keyspace_follows_rehash<VolatileBitmap>(101); }
  SECTION("TimerWheel") { keyspace_follows_rehash<TimerWheel>(202); }
}

TEST_CASE("keyspace: a deadline prepared on an empty keyspace survives the first growth", "[table]") {
  // VolatileBitmap allocates with the first TTL; prepare_deadline() on a keyspace with no
  // slots arms the growth that gives it slots.
  KS<VolatileBitmap> ks(MixHash{}, PlainEq{}, 1);
  ks.prepare_deadline(5);
  const std::uint32_t i = ks_insert(ks, 9, 90);
  ks.set_deadline(i, 5);
  REQUIRE(ks.is_volatile(i));
  REQUIRE(ks.check_invariants());
  for (std::uint64_t k = 10; k < 200; ++k) ks_insert(ks, k, k);
  REQUIRE(ks.is_volatile(ks_find(ks, 9)));
  REQUIRE(ks.expires_size() == 1);
  REQUIRE(ks.check_invariants());
}

// ---- copies -----------------------------------------------------------------------------------

TEST_CASE("table: a copy has the same layout and is independent", "[table]") {
  Driver<GoodHash> d;
  for (std::uint64_t k = 0; k < 2000; ++k) d.insert(k, k + 7);
  for (std::uint64_t k = 0; k < 2000; k += 5) d.erase(k);

  auto same_layout = [](const Driver<GoodHash>& a, const Driver<GoodHash>& b) {
    REQUIRE(a.t.groups() == b.t.groups());
    REQUIRE(a.t.size() == b.t.size());
    REQUIRE(a.t.insert_grows() == b.t.insert_grows());
    for (std::uint32_t i = 0; i < a.t.capacity(); ++i) {
      REQUIRE(a.t.occupied(i) == b.t.occupied(i));
      if (a.t.occupied(i)) {
        REQUIRE(a.t[i].key == b.t[i].key);
        REQUIRE(a.t[i].value == b.t[i].value);
      }
    }
  };

  SECTION("copy constructor") {
    Driver<GoodHash> c;
    c.t = Table(d.t);
    same_layout(d, c);
    REQUIRE(c.check());
    REQUIRE(&c.t[0] != &d.t[0]);
    // Independent: changing the original leaves the copy as it was.
    const Table snapshot(d.t);
    for (std::uint64_t k = 1; k < 2000; k += 5) d.erase(k);
    for (std::uint64_t k = 5000; k < 9000; ++k) d.insert(k, k);  // grows the original
    d.t[d.find(2)].value = 12345;
    Driver<GoodHash> s;
    s.t = snapshot;
    same_layout(c, s);
    REQUIRE(c.t[c.find(2)].value == 9);
    REQUIRE(c.find(5000) == kNoSlot);
    REQUIRE(c.check());
    // And the copy can be used on its own.
    c.erase(3);
    c.insert(3, 33);
    REQUIRE(c.t[c.find(3)].value == 33);
    REQUIRE(d.t[d.find(3)].value == 10);
    REQUIRE(c.check());
    REQUIRE(d.check());
  }

  SECTION("copy assignment, over a table with entries, and self-assignment") {
    Driver<GoodHash> c;
    for (std::uint64_t k = 100'000; k < 100'050; ++k) c.insert(k, k);
    c.t = d.t;
    same_layout(d, c);
    REQUIRE(c.find(100'000) == kNoSlot);
    const Table& self = c.t;
    c.t = self;
    same_layout(d, c);
    d.t[d.find(4)].value = 1;
    REQUIRE(c.t[c.find(4)].value == 11);
    REQUIRE(c.check());
  }

  SECTION("copy of an empty table") {
    const Table empty;
    const Table copy(empty);
    REQUIRE(copy.groups() == 0);
    REQUIRE(copy.size() == 0);
  }
}

template <class Index>
void keyspace_copy_case() {
  KS<Index> ks(MixHash{}, PlainEq{}, 8);
  ks.enable_access(true);
  std::map<std::uint64_t, std::uint64_t> values;
  std::map<std::uint64_t, std::int64_t> deadlines;
  std::map<std::uint64_t, std::uint32_t> access;
  for (std::uint64_t k = 0; k < 3000; ++k) {
    values[k] = k * 5;
    const std::uint32_t i = ks_insert(ks, k, values[k]);
    if (k % 3 == 0) {
      deadlines[k] = static_cast<std::int64_t>(10'000 + k * 977);
      ks_set_deadline(ks, k, deadlines[k]);
    }
    if (k % 4 == 0) ks.access(ks_find(ks, k)) = access[k] = static_cast<std::uint32_t>(k + 1);
    (void)i;
  }
  for (std::uint64_t k = 0; k < 3000; k += 7) {
    ks_erase(ks, k);
    values.erase(k);
    deadlines.erase(k);
    access.erase(k);
  }
  const KS<Index> copy(ks);
  verify_keyspace(copy, values, deadlines, &access);
  for (const auto& [k, v] : values) REQUIRE(ks_find(copy, k) == ks_find(ks, k));  // same layout
  // Independent: the original grows, loses keys and deadlines; the copy does not notice.
  const auto values_then = values;
  const auto deadlines_then = deadlines;
  const auto access_then = access;
  for (std::uint64_t k = 1; k < 3000; k += 7) {
    ks_erase(ks, k);
    values.erase(k);
    deadlines.erase(k);
    access.erase(k);
  }
  for (std::uint64_t k = 10'000; k < 20'000; ++k) {
    values[k] = k;
    ks_insert(ks, k, k);
  }
  verify_keyspace(ks, values, deadlines, &access);
  verify_keyspace(copy, values_then, deadlines_then, &access_then);
}

TEST_CASE("keyspace: a copy keeps the layout, the expiry index and the access array", "[table]") {
  SECTION("VolatileBitmap") { keyspace_copy_case<VolatileBitmap>(); }
  SECTION("TimerWheel") { keyspace_copy_case<TimerWheel>(); }
}

// An entry that counts its instances, owns a heap block (so that ASan sees a leak), and whose
// copy constructor throws on the throw_at-th copy.
struct Counted {
  static inline int live = 0;
  static inline int copies = 0;
  static inline int throw_at = 0;  // 0: never

  std::uint64_t key;
  std::unique_ptr<std::uint64_t> payload;

  Counted(std::uint64_t k, bool throw_now) : key(k), payload(std::make_unique<std::uint64_t>(k * 2)) {
    if (throw_now) throw std::runtime_error("constructor");
    ++live;
  }
  Counted(const Counted& o) : key(o.key), payload(std::make_unique<std::uint64_t>(*o.payload)) {
    if (++copies == throw_at) throw std::runtime_error("copy");
    ++live;
  }
  Counted(Counted&& o) noexcept : key(o.key), payload(std::move(o.payload)) { ++live; }
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
  ~Counted() { --live; }
};
using CountedTable = SlotTable<Counted>;

struct CountedFx {
  CountedTable t;
  static std::uint64_t hash(std::uint64_t k) { return mix64(k); }
  static auto hash_of() {
    return [](const Counted& e) { return hash(e.key); };
  }
  std::uint32_t find(std::uint64_t k) const {
    return t.find(hash(k), [k](const Counted& e) { return e.key == k; });
  }
  void insert(std::uint64_t k, bool throw_now = false) {
    if (t.insert_grows()) t.rehash(CountedTable::groups_for(t.size() + 1), hash_of(), [](Counted*, std::uint32_t, std::uint32_t) {});
    t.emplace_new(hash(k), k, throw_now);
  }
};

TEST_CASE("table: an entry's throwing copy leaks nothing and propagates", "[table]") {
  Counted::live = 0;
  Counted::copies = 0;
  Counted::throw_at = 0;
  {
    CountedFx f;
    for (std::uint64_t k = 0; k < 500; ++k) f.insert(k);
    REQUIRE(Counted::live == 500);
    for (const int k : {1, 2, 14, 15, 16, 250, 499, 500}) {
      CAPTURE(k);
      Counted::copies = 0;
      Counted::throw_at = k;
      REQUIRE_THROWS_AS(CountedTable(f.t), std::runtime_error);
      REQUIRE(Counted::live == 500);
      // Copy assignment: the target keeps what it had.
      CountedFx g;
      for (std::uint64_t j = 7000; j < 7010; ++j) g.insert(j);
      Counted::copies = 0;
      REQUIRE_THROWS_AS(g.t = f.t, std::runtime_error);
      REQUIRE(Counted::live == 510);
      REQUIRE(g.t.size() == 10);
      REQUIRE(g.t.check(CountedFx::hash_of()));
      REQUIRE(g.find(7003) != kNoSlot);
    }
    Counted::throw_at = 0;
    const CountedTable copy(f.t);
    REQUIRE(Counted::live == 1000);
    REQUIRE(copy.check(CountedFx::hash_of()));
  }
  REQUIRE(Counted::live == 0);
}

TEST_CASE("table: a throwing constructor in emplace_new adds nothing", "[table]") {
  Counted::live = 0;
  Counted::throw_at = 0;
  {
    CountedFx f;
    for (std::uint64_t k = 0; k < 200; ++k) f.insert(k);
    const std::size_t groups = f.t.groups();
    REQUIRE_FALSE(f.t.insert_grows());
    REQUIRE_THROWS_AS(f.insert(999, true), std::runtime_error);
    REQUIRE(f.t.size() == 200);
    REQUIRE(f.t.groups() == groups);
    REQUIRE(Counted::live == 200);
    REQUIRE(f.t.check(CountedFx::hash_of()));
    REQUIRE(f.find(999) == kNoSlot);
    for (std::uint64_t k = 0; k < 200; ++k) REQUIRE(f.find(k) != kNoSlot);
    f.insert(999);
    REQUIRE(f.find(999) != kNoSlot);
    REQUIRE(f.t.check(CountedFx::hash_of()));
  }
  REQUIRE(Counted::live == 0);

  SECTION("after probing past full groups") {
    // One hash for all keys: the failed insertion walks full groups before it throws.
    struct One {
      std::uint64_t operator()(const Counted&) const noexcept { return 0x77; }
    };
    CountedTable t;
    t.rehash(4, One{}, [](Counted*, std::uint32_t, std::uint32_t) {});
    for (std::uint64_t k = 0; k < 40; ++k) t.emplace_new(0x77, k, false);
    // Same home group, another overflow bit: the failed insertion sets it on the full groups.
    REQUIRE_THROWS_AS(t.emplace_new(0x71, 40, true), std::runtime_error);
    REQUIRE(t.size() == 40);
    REQUIRE(Counted::live == 40);
    REQUIRE(t.check(One{}));
    for (std::uint64_t k = 0; k < 40; ++k) {
      REQUIRE(t.find(0x77, [k](const Counted& e) { return e.key == k; }) != kNoSlot);
    }
    REQUIRE(t.find(0x71, [](const Counted& e) { return e.key == 40; }) == kNoSlot);
    t.emplace_new(0x71, 40, false);
    REQUIRE(t.find(0x71, [](const Counted& e) { return e.key == 40; }) != kNoSlot);
    REQUIRE(Counted::live == 41);
  }
  REQUIRE(Counted::live == 0);
}

// ---- Keyspace::try_emplace ---------------------------------------------------------------------

using StrKS = Keyspace<std::uint64_t, std::string, MixHash, PlainEq, VolatileBitmap>;

TEST_CASE("keyspace: try_emplace with a value that refers into the table it grows", "[table]") {
  // set(k2, *get(k1)): the value argument is a reference to an entry that the growth moves.
  StrKS ks(MixHash{}, PlainEq{}, 3);
  auto value_of = [](std::uint64_t k) {
    return "a value long enough to live on the heap, number " + std::to_string(k);
  };
  std::uint64_t k = 0;
  for (; k < 10 || !ks.entries_mut().insert_grows(); ++k) {
    REQUIRE(ks.try_emplace(k, ks.hash_of(k), k, value_of(k)).second);
  }
  const std::size_t groups = ks.entries_mut().groups();
  const std::uint32_t epoch = ks.epoch();
  for (const std::uint64_t source : {std::uint64_t{0}, k / 2, k - 1}) {
    CAPTURE(source);
    const std::uint32_t i = ks.find_index(source, ks.hash_of(source));
    REQUIRE(i != kNoSlot);
    const std::string& ref = ks.entry(i).value;  // into the table
    const std::uint64_t target = 1'000'000 + source;
    const auto r = ks.try_emplace(target, ks.hash_of(target), target, ref);
    REQUIRE(r.second);
    REQUIRE(ks.entry(r.first).key == target);
    REQUIRE(ks.entry(r.first).value == value_of(source));
    REQUIRE(ks.entry(ks.find_index(source, ks.hash_of(source))).value == value_of(source));
  }
  REQUIRE(ks.entries_mut().groups() == 2 * groups);  // the first of them grew the table
  REQUIRE(ks.epoch() == epoch + 1);
  REQUIRE(ks.check_invariants());
  // A key argument that refers into the table, too (copy(k1 -> k1's key + 1) style).
  std::uint64_t last = k - 1;
  for (; !ks.entries_mut().insert_grows(); ++k) {
    REQUIRE(ks.try_emplace(k, ks.hash_of(k), k, value_of(k)).second);
    last = k;
  }
  const std::uint32_t j = ks.find_index(last, ks.hash_of(last));
  const std::uint64_t& key_ref = ks.entry(j).key;
  const std::string& value_ref = ks.entry(j).value;
  const std::uint64_t probe = last + 500'000;
  // Found-path: the key is present, nothing is built.
  const auto same = ks.try_emplace(key_ref, ks.hash_of(key_ref), key_ref, value_ref);
  REQUIRE_FALSE(same.second);
  REQUIRE(same.first == j);
  const auto r = ks.try_emplace(probe, ks.hash_of(probe), probe, value_ref);
  REQUIRE(r.second);
  REQUIRE(ks.entry(r.first).value == value_of(last));
  REQUIRE(ks.check_invariants());
  for (std::uint64_t x = 0; x < k; ++x) REQUIRE(ks.entry(ks.find_index(x, ks.hash_of(x))).value == value_of(x));
}

// A value whose construction throws when asked to.
struct MaybeThrow {
  std::uint64_t v;
  MaybeThrow(std::uint64_t x, bool t) : v(x) {
    if (t) throw std::runtime_error("value");
  }
};
using ThrowKS = Keyspace<std::uint64_t, MaybeThrow, MixHash, PlainEq, VolatileBitmap>;

TEST_CASE("keyspace: try_emplace whose value constructor throws changes nothing", "[table]") {
  ThrowKS ks(MixHash{}, PlainEq{}, 4);
  std::uint64_t k = 0;
  for (; k < 100; ++k) ks.try_emplace(k, ks.hash_of(k), k, k, false);
  for (const bool at_growth : {false, true}) {
    CAPTURE(at_growth);
    if (at_growth) {
      for (; !ks.entries_mut().insert_grows(); ++k) ks.try_emplace(k, ks.hash_of(k), k, k, false);
    }
    const std::size_t size = ks.size();
    const std::size_t groups = ks.entries_mut().groups();
    const std::uint32_t epoch = ks.epoch();
    const std::uint64_t bad = 1u << 30;
    REQUIRE_THROWS_AS(ks.try_emplace(bad, ks.hash_of(bad), bad, bad, true), std::runtime_error);
    REQUIRE(ks.size() == size);
    REQUIRE(ks.entries_mut().groups() == groups);
    REQUIRE(ks.epoch() == epoch);
    REQUIRE(ks.find_index(bad, ks.hash_of(bad)) == kNoSlot);
    REQUIRE(ks.check_invariants());
  }
}

// ---- random_slot and next_occupied -------------------------------------------------------------

TEST_CASE("keyspace: random_slot is uniform over the keys of a half-full table", "[table]") {
  KS<VolatileBitmap> ks(MixHash{}, PlainEq{}, 5);
  ks.reserve(800);
  const std::size_t cap = ks.slot_count();
  const std::uint64_t n = cap / 2;
  for (std::uint64_t k = 0; k < n; ++k) ks_insert(ks, k, k);
  REQUIRE(ks.slot_count() == cap);
  std::mt19937_64 rng(12345);
  auto next = [&] { return rng(); };
  std::unordered_map<std::uint32_t, std::uint64_t> hits;
  const std::uint64_t per_key = 60;
  const std::uint64_t draws = n * per_key;
  for (std::uint64_t d = 0; d < draws; ++d) {
    const std::uint32_t i = ks.random_slot(next);
    REQUIRE(i < cap);
    REQUIRE(ks.occupied(i));
    ++hits[i];
  }
  REQUIRE(hits.size() == n);  // every key drawn at least once
  double chi2 = 0;
  for (const auto& [slot, count] : hits) {
    const double diff = static_cast<double>(count) - static_cast<double>(per_key);
    chi2 += diff * diff / static_cast<double>(per_key);
  }
  // n - 1 degrees of freedom: mean n - 1, standard deviation sqrt(2 (n - 1)). Six of them.
  const double dof = static_cast<double>(n - 1);
  const double sd = std::sqrt(2 * dof);
  CAPTURE(n, chi2, dof);
  REQUIRE(chi2 < dof + 6 * sd);
  REQUIRE(chi2 > dof - 6 * sd);
}

TEST_CASE("keyspace: random_slot finds the one key of a large, nearly empty table", "[table]") {
  KS<VolatileBitmap> ks(MixHash{}, PlainEq{}, 6);
  ks.reserve(100'000);
  const std::size_t cap = ks.slot_count();
  REQUIRE(cap >= 100'000);
  // Keys whose slots are at the very start and the very end of the table, and one between.
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  bool have_low = false;
  bool have_high = false;
  for (std::uint64_t k = 0; k < 200'000 && !(have_low && have_high); ++k) {
    const std::uint32_t i = ks_insert(ks, k, k);
    if (!have_low && i < kGroupSlots) {
      low = k, have_low = true;
    } else if (!have_high && i >= cap - kGroupSlots) {
      high = k, have_high = true;
    }
    ks_erase(ks, k);
  }
  REQUIRE(have_low);
  REQUIRE(have_high);
  REQUIRE(ks.slot_count() == cap);
  for (const std::uint64_t key : {low, high, std::uint64_t{424242}}) {
    CAPTURE(key);
    const std::uint32_t at = ks_insert(ks, key, key);
    std::mt19937_64 rng(key);
    auto next = [&] { return rng(); };
    for (int d = 0; d < 50; ++d) REQUIRE(ks.random_slot(next) == at);
    // Draws that always land on an empty slot: the fallback scans on from the last draw,
    // wrapping around when the key is before it.
    for (const std::uint64_t fixed : {std::uint64_t{0}, std::uint64_t{cap / 2}, std::uint64_t{cap - 1}}) {
      const std::uint64_t slot = (fixed == at) ? (fixed + 1) % cap : fixed;
      auto stuck = [slot] { return slot; };
      REQUIRE(ks.random_slot(stuck) == at);
    }
    REQUIRE(ks.next_occupied(0) == at);
    REQUIRE(ks.next_occupied(at) == at);
    REQUIRE(ks.next_occupied(at + 1) == cap);
    ks_erase(ks, key);
  }
}

// ---- groups_for ---------------------------------------------------------------------------------

TEST_CASE("table: groups_for(n) is the smallest table that holds n entries below its maximum load", "[table]") {
  // The real tables' maximum load is what max_load_of() says.
  for (std::size_t g = 1; g <= 64; g *= 2) {
    Table t;
    t.rehash(g, [](const KV& e) { return mix64(e.key); }, [](KV*, std::uint32_t, std::uint32_t) {});
    std::uint64_t k = 0;
    while (!t.insert_grows()) t.emplace_new(mix64(k), KV{k, k}), ++k;
    REQUIRE(t.size() == max_load_of(g));
  }
  auto holds = [](std::size_t n) {
    const std::size_t g = Table::groups_for(n);
    return (g & (g - 1)) == 0 && n < max_load_of(g) && (g == 1 || n >= max_load_of(g / 2));
  };
  std::size_t bad = 0;
  for (std::size_t n = 0; n <= 100'000; ++n) bad += holds(n) ? 0 : 1;
  std::mt19937_64 rng(9);
  for (int r = 0; r < 100'000; ++r) bad += holds(rng() % 10'000'001) ? 0 : 1;
  for (std::size_t g = 1; g <= (std::size_t{1} << 28); g *= 2) {
    CAPTURE(g);
    REQUIRE(Table::groups_for(max_load_of(g) - 1) == g);
    if (g < (std::size_t{1} << 28)) REQUIRE(Table::groups_for(max_load_of(g)) == 2 * g);
  }
  REQUIRE(bad == 0);
}

TEST_CASE("table: groups_for throws length_error past 2^32 - 2 slots", "[table]") {
  struct Big {
    unsigned char bytes[4096];
  };
  using BigTable = SlotTable<Big>;
  constexpr std::size_t kTop = std::size_t{1} << 28;  // 2^28 groups: 4,026,531,840 slots
  static_assert(kTop * kGroupSlots <= BigTable::kMaxSlots && 2 * kTop * kGroupSlots > BigTable::kMaxSlots);
  REQUIRE(BigTable::groups_for(max_load_of(kTop) - 1) == kTop);
  REQUIRE_THROWS_AS(BigTable::groups_for(max_load_of(kTop)), std::length_error);
  const std::size_t huge[] = {
      std::size_t{1} << 32,
      std::numeric_limits<std::uint32_t>::max(),
      std::size_t{1} << 40,
      std::size_t{7} << 61,  // n + n / 7 is exactly 2^64
      (std::size_t{7} << 61) + 6,
      std::numeric_limits<std::size_t>::max() / 2,
      std::numeric_limits<std::size_t>::max() - 1,
      std::numeric_limits<std::size_t>::max(),
  };
  for (const std::size_t n : huge) {
    CAPTURE(n);
    REQUIRE_THROWS_AS(BigTable::groups_for(n), std::length_error);
    REQUIRE_THROWS_AS(Table::groups_for(n), std::length_error);
  }
}

// ---- VolatileBitmap ------------------------------------------------------------------------------

// A stand-in for the table: every slot below its capacity is occupied.
struct FakeSlots {
  std::size_t cap;
  std::size_t capacity() const noexcept { return cap; }
  bool occupied(std::uint32_t i) const noexcept { return i < cap; }
};

TEST_CASE("VolatileBitmap: next, count_from and sample over bit patterns", "[table]") {
  constexpr std::size_t kSlots = 256;  // four words
  FakeSlots es{kSlots};
  const std::vector<std::vector<std::uint32_t>> patterns = {
      {}, {0}, {63}, {64}, {127}, {128}, {255}, {0, 63, 64, 127}, {62, 63, 64, 65}, {1, 200},
  };
  auto check_pattern = [&](const VolatileBitmap& b, const std::set<std::uint32_t>& bits) {
    REQUIRE(b.size() == bits.size());
    REQUIRE(b.check(es));
    for (std::size_t pos = 0; pos <= kSlots + 70; ++pos) {
      CAPTURE(pos);
      const auto it = bits.lower_bound(static_cast<std::uint32_t>(pos));
      const std::size_t want_next = it == bits.end() ? VolatileBitmap::npos : *it;
      REQUIRE(b.next(pos) == want_next);
      REQUIRE(b.count_from(pos) == static_cast<std::size_t>(std::distance(it, bits.end())));
    }
    for (std::uint32_t i = 0; i < kSlots; ++i) REQUIRE(b.contains(es, i) == (bits.count(i) != 0));
    if (!bits.empty()) {
      std::mt19937_64 rng(bits.size());
      auto next = [&] { return rng(); };
      std::set<std::uint32_t> seen;
      for (int d = 0; d < 400; ++d) {
        const std::uint32_t s = b.sample(next);
        REQUIRE(bits.count(s) != 0);
        seen.insert(s);
      }
      REQUIRE(seen == bits);  // 400 draws reach each of at most four bits
      // Draws stuck on a clear bit: the fallback takes the next set bit, wrapping around.
      for (const std::uint64_t stuck : {std::uint64_t{0}, std::uint64_t{100}, std::uint64_t{kSlots - 1}}) {
        if (bits.count(static_cast<std::uint32_t>(stuck)) != 0) continue;
        auto fixed = [stuck] { return stuck; };
        const auto after = bits.lower_bound(static_cast<std::uint32_t>(stuck));
        REQUIRE(b.sample(fixed) == (after != bits.end() ? *after : *bits.begin()));
      }
    }
  };

  SECTION("never allocated") {
    const VolatileBitmap b;
    REQUIRE(b.next(0) == VolatileBitmap::npos);
    REQUIRE(b.count_from(0) == 0);
    REQUIRE(b.bytes() == 0);
    REQUIRE_FALSE(b.contains(es, 5));
  }
  for (const auto& pattern : patterns) {
    CAPTURE(pattern);
    VolatileBitmap b;
    b.prepare(0, kSlots);
    REQUIRE(b.bytes() >= kSlots / 8);
    std::set<std::uint32_t> bits(pattern.begin(), pattern.end());
    for (const std::uint32_t i : pattern) b.insert(es, i);
    check_pattern(b, bits);
    // Erase them one by one.
    for (const std::uint32_t i : pattern) {
      b.erase(es, i);
      bits.erase(i);
      check_pattern(b, bits);
    }
  }
  SECTION("all set") {
    VolatileBitmap b;
    b.prepare(0, kSlots);
    for (std::uint32_t i = 0; i < kSlots; ++i) b.insert(es, i);
    REQUIRE(b.size() == kSlots);
    for (std::size_t pos = 0; pos < kSlots; ++pos) {
      REQUIRE(b.next(pos) == pos);
      REQUIRE(b.count_from(pos) == kSlots - pos);
    }
    REQUIRE(b.next(kSlots) == VolatileBitmap::npos);
    REQUIRE(b.count_from(kSlots) == 0);
    std::uint64_t x = 0;
    auto seq = [&] { return x++ * 37; };
    for (int d = 0; d < 100; ++d) {
      const std::uint64_t want = (static_cast<std::uint64_t>(d) * 37) % kSlots;
      REQUIRE(b.sample(seq) == want);  // every draw hits
    }
    b.clear();
    REQUIRE(b.size() == 0);
    REQUIRE(b.next(0) == VolatileBitmap::npos);
    REQUIRE(b.bytes() == 0);
  }
}

// ---- Keyspace::compact -----------------------------------------------------------------------------

template <class Index>
void compact_case(std::uint64_t seed) {
  KS<Index> ks(MixHash{}, PlainEq{}, seed);
  std::mt19937_64 rng(seed);
  constexpr std::uint64_t kKeys = 20'000;
  std::map<std::uint64_t, std::uint64_t> values;
  std::map<std::uint64_t, std::int64_t> deadlines;
  for (std::uint64_t k = 0; k < kKeys; ++k) {
    values[k] = k * 11;
    ks_insert(ks, k, values[k]);
    if (rng() % 4 == 0) {
      deadlines[k] = static_cast<std::int64_t>(1'000'000 + rng() % 1'000'000'000);
      ks_set_deadline(ks, k, deadlines[k]);
    }
  }
  const std::size_t cap = ks.slot_count();
  auto erase_down_to = [&](std::size_t target) {
    for (std::uint64_t k = 0; k < kKeys && ks.size() > target; ++k) {
      if (values.count(k) == 0) continue;
      ks_erase(ks, k);
      values.erase(k);
      deadlines.erase(k);
    }
    REQUIRE(ks.size() == target);
  };
  // The estimate compact() charges (its documented formula).
  auto cost = [&] {
    return static_cast<std::int64_t>(ks.entries_mut().bytes() / 16384 + ks.size() * 3 / 100);
  };

  // More than 1/8 full: never shrunk, whatever the budget.
  erase_down_to(cap / 8 + 1);
  REQUIRE_FALSE(ks.compact(std::numeric_limits<std::int64_t>::max()));
  REQUIRE(ks.slot_count() == cap);
  // Exactly 1/8 full, then sparser: only with a budget that covers the estimate.
  erase_down_to(cap / 8);
  REQUIRE(cost() > 0);
  REQUIRE_FALSE(ks.compact(cost() - 1));
  REQUIRE(ks.slot_count() == cap);
  erase_down_to(cap / 40);
  const std::int64_t c = cost();
  REQUIRE_FALSE(ks.compact(0));
  REQUIRE_FALSE(ks.compact(c - 1));
  REQUIRE(ks.slot_count() == cap);
  verify_keyspace(ks, values, deadlines, nullptr);
  const std::uint32_t epoch = ks.epoch();
  REQUIRE(ks.compact(c));
  REQUIRE(ks.epoch() == epoch + 1);
  REQUIRE(ks.entries_mut().groups() == KS<Index>::table_type::groups_for(ks.size()));
  REQUIRE(ks.slot_count() < cap);
  verify_keyspace(ks, values, deadlines, nullptr);
  // Already the smallest table for its size: nothing more to do.
  REQUIRE_FALSE(ks.compact(std::numeric_limits<std::int64_t>::max()));
  // And it still works: insert, set deadlines, grow.
  for (std::uint64_t k = kKeys; k < kKeys + 3000; ++k) {
    values[k] = k;
    ks_insert(ks, k, k);
    if (k % 7 == 0) {
      deadlines[k] = static_cast<std::int64_t>(k);
      ks_set_deadline(ks, k, deadlines[k]);
    }
  }
  verify_keyspace(ks, values, deadlines, nullptr);
}

TEST_CASE("keyspace: compact shrinks a sparse table only within the budget", "[table]") {
  SECTION("VolatileBitmap") { compact_case<VolatileBitmap>(41); }
  SECTION("TimerWheel") { compact_case<TimerWheel>(42); }

  SECTION("small tables are never shrunk; an emptied table is freed") {
    KS<VolatileBitmap> ks(MixHash{}, PlainEq{}, 43);
    for (std::uint64_t k = 0; k < 1000; ++k) ks_insert(ks, k, k);
    REQUIRE(ks.slot_count() < expiring::detail::kCompactMinCapacity);
    for (std::uint64_t k = 0; k < 999; ++k) ks_erase(ks, k);
    REQUIRE_FALSE(ks.compact(std::numeric_limits<std::int64_t>::max()));

    for (std::uint64_t k = 1000; k < 10'000; ++k) ks_insert(ks, k, k);
    ks_set_deadline(ks, 5000, 77);
    for (std::uint64_t k = 999; k < 10'000; ++k) ks_erase(ks, k);
    REQUIRE(ks.size() == 0);
    REQUIRE(ks.compact(std::numeric_limits<std::int64_t>::max()));
    REQUIRE(ks.slot_count() == 0);
    REQUIRE(ks.check_invariants());
    const std::uint32_t i = ks_insert(ks, 1, 1);
    ks.prepare_deadline(9);
    ks.set_deadline(i, 9);
    REQUIRE(ks.is_volatile(i));
    REQUIRE(ks.check_invariants());
  }

  SECTION("with the access array on") {
    KS<VolatileBitmap> ks(MixHash{}, PlainEq{}, 44);
    ks.enable_access(true);
    std::map<std::uint64_t, std::uint64_t> values;
    std::map<std::uint64_t, std::uint32_t> access;
    for (std::uint64_t k = 0; k < 10'000; ++k) {
      values[k] = k;
      ks.access(ks_insert(ks, k, k)) = static_cast<std::uint32_t>(k + 1);
      access[k] = static_cast<std::uint32_t>(k + 1);
    }
    for (std::uint64_t k = 0; k < 9'800; ++k) {
      ks_erase(ks, k);
      values.erase(k);
      access.erase(k);
    }
    REQUIRE(ks.compact(std::numeric_limits<std::int64_t>::max()));
    verify_keyspace(ks, values, {}, &access);
  }
}

TEST_CASE("keys: inline string equality agrees with std::equal_to at every length and every differing byte", "[table]") {
  // detail::keys_equal compares std::string / std::string_view keys and field names inline
  // (8- and 4-byte words, overlapping at the end, in a loop past 16 bytes); it must answer as
  // operator== does.
  const std::equal_to<> eq;
  for (std::size_t n = 0; n <= 80; ++n) {
    std::string a(n, 'k');
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + (i * 7) % 26);
    const std::string same = a;
    REQUIRE(expiring::detail::keys_equal(eq, a, same));
    REQUIRE(expiring::detail::keys_equal(eq, a, std::string_view(same)));
    for (std::size_t i = 0; i < n; ++i) {
      for (const int flip : {1, 0x80}) {
        std::string b = a;
        b[i] = static_cast<char>(b[i] ^ flip);
        REQUIRE_FALSE(expiring::detail::keys_equal(eq, a, b));
        REQUIRE_FALSE(expiring::detail::keys_equal(eq, std::string_view(b), a));
      }
    }
    REQUIRE_FALSE(expiring::detail::keys_equal(eq, a, a + "x"));  // a prefix is not equal
    if (n != 0) REQUIRE_FALSE(expiring::detail::keys_equal(eq, a, std::string_view(a).substr(1)));
  }
  // Embedded zero bytes are bytes like any other.
  REQUIRE_FALSE(expiring::detail::keys_equal(eq, std::string("ab\0cd", 5), std::string("ab\0ce", 5)));
  REQUIRE(expiring::detail::keys_equal(eq, std::string("ab\0cd", 5), std::string("ab\0cd", 5)));
}

}  // namespace
