// tests/test_field_map.cpp: FieldMap, the hash value with per-field deadlines (issue 14).
//
// The container alone: names, values, deadlines, erase by moving the last field, and the
// due-list that reclaims fields in deadline order, checked against a model under random
// operations (re-timing earlier and later, persisting, erasing, growing past the list's size).
// expiring-test: one policy (the container alone, no store)
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "expiring/field_map.hpp"
#include "expiring/hash.hpp"

namespace {
using Map = expiring::FieldMap<std::string, std::string>;
constexpr std::int64_t kNone = Map::kNoDeadline;
}  // namespace

TEST_CASE("field map: assign, find, erase, deadlines", "[field_map]") {
  Map m;
  CHECK(m.find("a") == Map::npos);
  CHECK(m.assign(std::string("a"), std::string("1")).second);
  CHECK(m.assign(std::string("b"), std::string("2")).second);
  const auto [pos, added] = m.assign(std::string("a"), std::string("one"));
  CHECK_FALSE(added);
  CHECK(m.at(pos).value == "one");
  CHECK(m.size() == 2);
  const std::uint32_t b = m.find(std::string_view("b"));
  REQUIRE(b != Map::npos);
  m.set_deadline(b, 5000);
  CHECK(m.deadline(b) == 5000);
  CHECK(m.volatile_count() == 1);
  CHECK(m.earliest_deadline() == 5000);
  // HSET over a volatile field removes its deadline.
  m.assign(std::string("b"), std::string("two"));
  CHECK(m.deadline(m.find("b")) == kNone);
  CHECK(m.volatile_count() == 0);
  CHECK(m.earliest_deadline() == kNone);
  m.set_deadline(m.find("a"), 100);
  CHECK(m.clear_deadline(m.find("a")));
  CHECK_FALSE(m.clear_deadline(m.find("a")));
  // Erase moves the last field into the hole; lookups still find everything.
  m.assign(std::string("c"), std::string("3"));
  m.set_deadline(m.find("c"), 700);
  m.erase(m.find("a"));
  CHECK(m.find("a") == Map::npos);
  CHECK(m.at(m.find("c")).value == "3");
  CHECK(m.deadline(m.find("c")) == 700);
  CHECK(m.at(m.find("b")).value == "two");
  CHECK(m.earliest_deadline() == 700);
  m.erase(m.find("b"));
  m.erase(m.find("c"));
  CHECK(m.empty());
  CHECK(m.bytes() == 0);  // everything given back
}

TEST_CASE("field map: reclaim_due takes fields in deadline order, now > deadline", "[field_map]") {
  Map m;
  for (int i = 0; i < 10; ++i) {
    const auto p = m.assign("f" + std::to_string(i), std::to_string(i)).first;
    m.set_deadline(p, 1000 - i * 10);  // f9 earliest
  }
  std::vector<std::string> order;
  const auto took = m.reclaim_due(950, 100, [&](Map::Field& f, std::int64_t) { order.push_back(f.name); });
  CHECK(took == 4);  // deadlines 910, 920, 930, 940 (950 itself is not past)
  CHECK(order == std::vector<std::string>{"f9", "f8", "f7", "f6"});
  CHECK(m.size() == 6);
  CHECK(m.earliest_deadline() == 950);
  // The quota stops it.
  CHECK(m.reclaim_due(2000, 2, [](Map::Field&, std::int64_t) {}) == 2);
  CHECK(m.size() == 4);
}

TEST_CASE("field map: the due-list agrees with a model under random operations", "[field_map]") {
  std::mt19937_64 rng(12345);
  for (const int fields : {10, 100, 300, 5000}) {
    Map m;
    std::map<std::string, std::int64_t> model;  // name -> deadline (kNone: persistent)
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    std::int64_t now = 0;
    for (int step = 0; step < 20 * fields; ++step) {
      const std::string name = "f" + std::to_string(pick(fields));
      const int op = pick(10);
      if (op < 3) {
        m.assign(name, "v");
        model[name] = kNone;
      } else if (op < 7) {
        const std::uint32_t p = m.find(name);
        if (p != Map::npos) {
          const std::int64_t when = now + 1 + pick(10000);
          m.set_deadline(p, when);
          model[name] = when;
        }
      } else if (op < 8) {
        const std::uint32_t p = m.find(name);
        if (p != Map::npos) {
          (void)m.clear_deadline(p);
          model[name] = kNone;
        }
      } else if (op < 9) {
        const std::uint32_t p = m.find(name);
        if (p != Map::npos) {
          m.erase(p);
          model.erase(name);
        }
      } else {
        now += pick(300);
        // The model's due fields, in deadline order (ties in any order).
        std::vector<std::pair<std::int64_t, std::string>> due;
        for (const auto& [n, d] : model) {
          if (d != kNone && now > d) due.emplace_back(d, n);
        }
        std::sort(due.begin(), due.end());
        std::vector<std::pair<std::int64_t, std::string>> got;
        m.reclaim_due(now, static_cast<std::size_t>(-1),
                      [&](Map::Field& f, std::int64_t d) { got.emplace_back(d, f.name); });
        std::vector<std::int64_t> got_deadlines;
        for (const auto& g : got) got_deadlines.push_back(g.first);
        CHECK(std::is_sorted(got_deadlines.begin(), got_deadlines.end()));
        std::sort(got.begin(), got.end());
        REQUIRE(got == due);
        for (const auto& d : due) model.erase(d.second);
      }
      // Invariants: the same names, values and deadlines; the earliest deadline.
      if (step % 97 == 0) {
        REQUIRE(m.size() == model.size());
        std::int64_t earliest = kNone;
        std::size_t vol = 0;
        for (const auto& [n, d] : model) {
          const std::uint32_t p = m.find(n);
          REQUIRE(p != Map::npos);
          REQUIRE(m.deadline(p) == d);
          earliest = std::min(earliest, d);
          vol += d != kNone ? 1u : 0u;
        }
        REQUIRE(m.volatile_count() == vol);
        REQUIRE(m.earliest_deadline() == earliest);
      }
    }
  }
}

TEST_CASE("field map: deadlines are within [0, 2^46 - 1] ms", "[field_map]") {
  Map m;
  const auto p = m.assign(std::string("f"), std::string("v")).first;
  m.set_deadline(p, Map::kMaxDeadline);
  CHECK(m.deadline(p) == Map::kMaxDeadline);
  m.set_deadline(p, 0);
  CHECK(m.deadline(p) == 0);
  CHECK_THROWS_AS(m.set_deadline(p, Map::kMaxDeadline + 1), std::out_of_range);
  CHECK_THROWS_AS(m.set_deadline(p, -1), std::out_of_range);
  CHECK(m.deadline(p) == 0);  // unchanged
}

TEST_CASE("field map: memory of field deadlines is 8 bytes a field plus the due-list", "[field_map]") {
  Map plain;
  Map timed;
  constexpr int kFields = 100000;
  for (int i = 0; i < kFields; ++i) {
    plain.assign("field:" + std::to_string(i), std::string("v"));
    const auto p = timed.assign("field:" + std::to_string(i), std::string("v")).first;
    timed.set_deadline(p, 1'000'000 + i);
  }
  (void)timed.earliest_deadline();  // builds the due-list
  const double extra = static_cast<double>(timed.bytes() - plain.bytes()) / kFields;
  INFO("extra bytes per field: " << extra);
  // 6 bytes a field grown by 1.25x at most (7.5), plus the due-list's 0.25.
  CHECK(extra >= 6.0);
  CHECK(extra <= 7.75);
}

TEST_CASE("field map: small hashes keep no due-list and 1e4 hashes of 100 fields stay under 8 bytes", "[field_map]") {
  std::size_t plain = 0;
  std::size_t timed = 0;
  std::vector<Map> hashes(1000);
  std::vector<Map> plains(1000);
  for (std::size_t h = 0; h < hashes.size(); ++h) {
    for (int i = 0; i < 100; ++i) {
      const std::string f = "f" + std::to_string(i);
      plains[h].assign(f, std::string("v"));
      const auto p = hashes[h].assign(f, std::string("v")).first;
      hashes[h].set_deadline(p, 5000 + i);
    }
    CHECK(hashes[h].earliest_deadline() == 5000);
    plain += plains[h].bytes();
    timed += hashes[h].bytes();
  }
  const double extra = static_cast<double>(timed - plain) / (1000.0 * 100.0);
  INFO("extra bytes per field: " << extra);
  CHECK(extra <= 7.75);
  std::size_t n = 0;
  std::int64_t last = 0;
  bool ordered = true;
  n += hashes[0].reclaim_due(5050, 1000, [&](Map::Field&, std::int64_t d) {
    ordered = ordered && d >= last;
    last = d;
  });
  CHECK(n == 50);
  CHECK(ordered);
}

TEST_CASE("field map: the due-list stays bounded while early deadlines keep arriving", "[field_map]") {
  // 1000 fields with far deadlines keep the list from running dry; each round adds a field
  // due at once and reclaims it. The consumed head must not pile up.
  Map m;
  for (int i = 0; i < 1000; ++i) m.set_deadline(m.assign("far" + std::to_string(i), std::string("v")).first, 1'000'000 + i);
  REQUIRE(m.earliest_deadline() == 1'000'000);
  const std::size_t before = m.bytes();
  for (int round = 0; round < 20'000; ++round) {
    const auto pos = m.assign("soon" + std::to_string(round), std::string("v")).first;
    m.set_deadline(pos, 10 + round);
    CHECK(m.earliest_deadline() == 10 + round);
    REQUIRE(m.reclaim_due(11 + round, 1000, [](const Map::Field&, std::int64_t) {}) == 1);
  }
  CHECK(m.size() == 1000);
  CHECK(m.bytes() <= before + 4096);
}

TEST_CASE("field map: a hash that shrinks to 128 fields and grows again finds its earliest deadline", "[field_map]") {
  Map m;
  for (int i = 0; i < 129; ++i) m.set_deadline(m.assign("f" + std::to_string(i), std::string("v")).first, 5000 + i);
  REQUIRE(m.earliest_deadline() == 5000);  // builds the due-list (129 > 128 fields)
  m.erase(m.find("f128"));                  // 128: small again
  m.set_deadline(m.find("f100"), 1000);     // earlier than anything the old list held
  m.assign(std::string("g"), std::string("v"));  // 129 again
  CHECK(m.earliest_deadline() == 1000);
  std::vector<std::int64_t> got;
  m.reclaim_due(1001, 10, [&](const Map::Field&, std::int64_t d) { got.push_back(d); });
  CHECK(got == std::vector<std::int64_t>{1000});
}

TEST_CASE("field map: a moved-from map is empty and usable", "[field_map]") {
  Map a;
  a.set_deadline(a.assign(std::string("x"), std::string("1")).first, 100);
  Map b(std::move(a));
  CHECK(b.size() == 1);
  CHECK(b.volatile_count() == 1);
  CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(a.volatile_count() == 0);
  CHECK(a.earliest_deadline() == kNone);
  a.set_deadline(a.assign(std::string("y"), std::string("2")).first, 50);
  CHECK(a.earliest_deadline() == 50);
  Map c;
  c = std::move(b);
  CHECK(c.find("x") != Map::npos);
  CHECK(b.size() == 0);  // NOLINT(bugprone-use-after-move)
  CHECK(b.find("x") == Map::npos);
}
