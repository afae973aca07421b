// tests/test_pointer_validity.cpp: one case per rule of "Pointer validity" at the top of
// expiring_store.hpp. The "stays valid" rules read through the old pointer after the call
// (under AddressSanitizer, a moved or freed entry is a heap-use-after-free) and check that the
// store still hands out the same address; the "becomes invalid" rules show that the call
// really does move or remove the entry (a new address, or no entry), without dereferencing
// the old pointer.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

using namespace std::chrono_literals;
using expiring::ManualClock;
using Store = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;

constexpr std::int64_t kT0 = 1'000'000;
// Longer than any small-string buffer: the value owns heap memory, so a freed entry is caught.
const std::string kValue = "a value long enough to live on the heap, not in the string object";

// A store with `n` keys k0..k{n-1}, room reserved for `n` more (no growth while it is used).
Store filled(ManualClock& clock, int n) {
  expiring::Options o;
  o.seed = 7;
  o.reserve = static_cast<std::size_t>(2 * n);
  Store s{clock, o};
  for (int i = 0; i < n; ++i) REQUIRE(s.set("k" + std::to_string(i), kValue + std::to_string(i)).ok());
  return s;
}

}  // namespace

TEST_CASE("pointers: a get() pointer survives the lazy reclaiming of another stale key by get()", "[pointers]") {
  // The two-lookup program of issue 11: it looked like plain reads.
  ManualClock clock{kT0};
  Store s = filled(clock, 100);
  REQUIRE(s.set("stale", kValue, 10ms).ok());
  const std::string* p = s.get("k1");
  REQUIRE(p != nullptr);
  clock.advance(11ms);
  REQUIRE(s.get("stale") == nullptr);  // reclaims "stale": erasure moves nothing
  CHECK(s.stats().expired_keys == 1);
  CHECK(*p == kValue + "1");
  CHECK(s.get("k1") == p);
}

TEST_CASE("pointers: get_many() pointers all survive the reclaiming of the batch's own stale keys", "[pointers]") {
  ManualClock clock{kT0};
  Store s = filled(clock, 64);
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i) {
    keys.push_back("k" + std::to_string(i));
    if (i % 4 == 0) REQUIRE(s.pexpire(keys.back(), 5) == true);
  }
  clock.advance(6ms);
  std::vector<const std::string*> out(keys.size());
  CHECK(s.get_many(keys, out.data()) == 48);
  CHECK(s.stats().expired_keys == 16);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i % 4 == 0) {
      CHECK(out[i] == nullptr);
    } else {
      REQUIRE(out[i] != nullptr);
      CHECK(*out[i] == kValue + std::to_string(i));
      CHECK(s.peek(keys[i]) == out[i]);
    }
  }
}

TEST_CASE("pointers: writes and deletes of other keys, with room reserved, move nothing", "[pointers]") {
  ManualClock clock{kT0};
  Store s = filled(clock, 100);
  const std::string* p = s.get("k5");
  REQUIRE(p != nullptr);
  // Deletes of every kind, on other keys.
  CHECK(s.del("k6"));
  CHECK(s.unlink("k7"));
  CHECK(s.getdel("k8").has_value());
  CHECK(s.expire("k9", 0s) == true);  // a deadline already past deletes
  // Overwrites of other keys, and inserts that fit in the reserved room.
  for (int i = 10; i < 40; ++i) REQUIRE(s.set("k" + std::to_string(i), "x").ok());
  for (int i = 0; i < 50; ++i) REQUIRE(s.set("new" + std::to_string(i), "y").ok());
  CHECK(*p == kValue + "5");
  CHECK(s.get("k5") == p);
}

TEST_CASE("pointers: TTL changes of any key, its own included, move nothing", "[pointers]") {
  ManualClock clock{kT0};
  Store s = filled(clock, 50);
  const std::string* p = s.get("k3");
  REQUIRE(p != nullptr);
  CHECK(s.expire("k3", 30min) == true);
  CHECK(s.pexpire("k4", 100ms) == true);
  CHECK(s.persist("k3"));
  CHECK(s.pexpireat("k3", kT0 + 60'000) == true);
  CHECK(s.getex("k3", expiring::Persist{}).value() == kValue + "3");
  CHECK(s.getex_ptr("k3", 10s).value() == p);
  CHECK(s.set_expire_after_access(1min).ok());
  CHECK(s.get("k3") == p);  // the idle refresh writes the deadline, in place
  CHECK(*p == kValue + "3");
}

TEST_CASE("pointers: an overwrite or modify() of its own key keeps the object, now holding the new value",
          "[pointers]") {
  ManualClock clock{kT0};
  Store s = filled(clock, 20);
  const std::string* p = s.get("k2");
  REQUIRE(p != nullptr);
  REQUIRE(s.set("k2", "overwritten", 1min).ok());
  CHECK(*p == "overwritten");
  CHECK(s.modify("k2", [](std::string& v) { v += "!"; }));
  CHECK(*p == "overwritten!");
  CHECK(s.get("k2") == p);
}

TEST_CASE("pointers: removing its own key ends it, lazily included", "[pointers]") {
  ManualClock clock{kT0};
  Store s = filled(clock, 20);
  REQUIRE(s.pexpire("k1", 10) == true);
  REQUIRE(s.get("k1") != nullptr);
  clock.advance(11ms);
  // The next touch of the key itself (a get() of it here) reclaims it: its pointer is gone.
  CHECK(s.get("k1") == nullptr);
  CHECK(s.peek("k1") == nullptr);
  CHECK(s.size() == 19);
  REQUIRE(s.get("k2") != nullptr);
  CHECK(s.del("k2"));
  CHECK(s.peek("k2") == nullptr);
}

TEST_CASE("pointers: a call that adds a key may grow the table and move every entry", "[pointers]") {
  ManualClock clock{kT0};
  expiring::Options o;
  o.seed = 7;
  Store s{clock, o};  // no reserve: the table grows as keys are added
  REQUIRE(s.set("first", kValue).ok());
  const std::string* before = s.get("first");
  REQUIRE(before != nullptr);
  bool moved = false;
  for (int i = 0; i < 5000 && !moved; ++i) {
    REQUIRE(s.set("grow" + std::to_string(i), "v").ok());
    moved = s.peek("first") != before;  // compares addresses only
  }
  CHECK(moved);
  CHECK(*s.get("first") == kValue);
}

TEST_CASE("pointers: reserve() and tick()'s shrink after a mass expiry move entries", "[pointers]") {
  ManualClock clock{kT0};
  expiring::Options o;
  o.seed = 7;
  Store s{clock, o};
  REQUIRE(s.set("keeper", kValue).ok());
  const std::string* before = s.get("keeper");
  s.reserve(100'000);
  const std::string* after_reserve = s.peek("keeper");
  CHECK(after_reserve != before);
  for (int i = 0; i < 20'000; ++i) REQUIRE(s.set("tmp" + std::to_string(i), "v", 10ms).ok());
  clock.advance(1s);
  const std::string* before_tick = s.peek("keeper");
  bool moved = false;
  for (int t = 0; t < 2000 && !moved && s.size() > 1; ++t) {
    (void)s.tick();
    moved = s.peek("keeper") != before_tick;
  }
  for (int t = 0; t < 10 && !moved; ++t) {  // the shrink runs in the tick that leaves it 1/8 full
    (void)s.tick();
    moved = s.peek("keeper") != before_tick;
  }
  CHECK(s.size() == 1);
  CHECK(moved);
  CHECK(*s.get("keeper") == kValue);
}
