// tests/test_lazyfree.cpp: lazy free (Options::lazyfree_*): which removals queue their value,
// that tick() destroys the queue within its budget, the bound on the queue, and statistics.
#include <expiring/expiring.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"

namespace {

using expiring::EvictionPolicy;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;
using expiring::Px;

int g_destroyed = 0;  // live Big values destroyed

// A value that owns a large block; counts its destruction (moved-from ones do not count).
struct Big {
  std::vector<int> data;
  explicit Big(std::size_t n = 1000) : data(n, 7) {}
  Big(Big&&) noexcept = default;
  Big(const Big&) = default;
  // Assigning over a live block releases it: that counts as a destruction too.
  Big& operator=(Big&& o) noexcept {
    if (!data.empty()) ++g_destroyed;
    data = std::move(o.data);
    return *this;
  }
  Big& operator=(const Big& o) {
    if (!data.empty()) ++g_destroyed;
    data = o.data;
    return *this;
  }
  ~Big() {
    if (!data.empty()) ++g_destroyed;
  }
};

using Store = expiring::ExpiringStore<std::uint64_t, Big, expiring::Hash<std::uint64_t>, std::equal_to<>, ManualClock&>;

constexpr std::int64_t T0 = 1'000'000;

Options lazy(std::size_t queue, bool expire, bool eviction, bool user_del) {
  Options o;
  o.lazyfree_queue_max = queue;
  o.lazyfree_lazy_expire = expire;
  o.lazyfree_lazy_eviction = eviction;
  o.lazyfree_lazy_user_del = user_del;
  o.seed = 5;
  return o;
}

}  // namespace

TEST_CASE("lazyfree: disabled by default, every removal destroys the value at once", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Store s{clock};
  REQUIRE(s.set(1, Big{}) == true);
  REQUIRE(s.set(2, Big{}) == true);
  REQUIRE(s.set(3, Big{}, Px{10}) == true);
  REQUIRE(s.unlink(1));
  CHECK(g_destroyed == 1);
  REQUIRE(s.del(2));
  CHECK(g_destroyed == 2);
  clock.advance(11);
  CHECK(s.get(3) == nullptr);
  CHECK(g_destroyed == 3);
  CHECK(s.stats().lazyfree_pending_objects == 0);
  CHECK(s.tick().lazyfreed == 0);
}

TEST_CASE("lazyfree: unlink and lazy expiry queue the value; tick() destroys it", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Store s{clock, lazy(8, /*expire=*/true, false, /*user_del=*/false)};
  REQUIRE(s.set(1, Big{}) == true);
  REQUIRE(s.set(2, Big{}) == true);
  REQUIRE(s.set(3, Big{}, Px{10}) == true);
  REQUIRE(s.unlink(1));  // UNLINK is always lazy
  CHECK(g_destroyed == 0);
  CHECK(s.peek(1) == nullptr);
  REQUIRE(s.del(2));  // lazyfree_lazy_user_del is off: destroyed now
  CHECK(g_destroyed == 1);
  clock.advance(11);
  CHECK(s.get(3) == nullptr);  // reclaimed lazily: the value waits
  CHECK(g_destroyed == 1);
  CHECK(s.size() == 0);
  CHECK(s.stats().lazyfree_pending_objects == 2);
  CHECK(s.stats().expired_keys == 1);
  const auto report = s.tick();
  CHECK(report.lazyfreed == 2);
  CHECK(g_destroyed == 3);
  CHECK(s.stats().lazyfree_pending_objects == 0);
  CHECK(s.stats().lazyfreed_objects == 2);
}

TEST_CASE("lazyfree: active expiry, user del and eviction follow their flags", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Options o = lazy(64, true, true, true);
  o.maxmemory = 3 * (sizeof(std::uint64_t) + sizeof(Big));
  o.maxmemory_policy = EvictionPolicy::allkeys_random;
  Store s{clock, o};
  for (std::uint64_t k = 0; k < 10; ++k) REQUIRE(s.set(k, Big{}, Px{100}) == true);
  CHECK(s.stats().evicted_keys == 6);
  CHECK(g_destroyed == 0);
  CHECK(s.stats().lazyfree_pending_objects == 6);
  REQUIRE(s.del(9));
  CHECK(g_destroyed == 0);
  clock.advance(101);
  (void)s.tick();  // drains 7, then the cycle expires the rest into the queue
  CHECK(g_destroyed == 7);
  CHECK(s.size() == 0);
  CHECK(s.stats().lazyfree_pending_objects == 3);
  (void)s.tick();
  CHECK(g_destroyed == 10);
  CHECK(s.stats().lazyfreed_objects == 10);
}

TEST_CASE("lazyfree: a listener still sees the value, which is then queued", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Store s{clock, lazy(8, true, false, false)};
  std::vector<std::size_t> sizes;
  s.set_listener([&](const Store::event_type& e) {
    if (e.cause == KeyEventCause::del) sizes.push_back(e.value->data.size());
  });
  REQUIRE(s.set(1, Big{123}) == true);
  REQUIRE(s.unlink(1));
  CHECK(sizes == std::vector<std::size_t>{123});
  CHECK(g_destroyed == 0);
  CHECK(s.stats().lazyfree_pending_objects == 1);
  CHECK(s.tick().lazyfreed == 1);
  CHECK(g_destroyed == 1);
}

TEST_CASE("lazyfree: the queue is bounded; a value removed when it is full is destroyed at once", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Store s{clock, lazy(2, false, false, false)};
  for (std::uint64_t k = 0; k < 3; ++k) REQUIRE(s.set(k, Big{}) == true);
  REQUIRE(s.unlink(0));
  REQUIRE(s.unlink(1));
  CHECK(g_destroyed == 0);
  REQUIRE(s.unlink(2));
  CHECK(g_destroyed == 1);
  CHECK(s.stats().lazyfree_pending_objects == 2);
  s.clear();  // FLUSHDB is synchronous: the queue goes too
  CHECK(g_destroyed == 3);
  CHECK(s.stats().lazyfree_pending_objects == 0);
}

TEST_CASE("lazyfree: tick() drains within its budget, 16 values between clock checks", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Options o = lazy(100, false, false, false);
  std::int64_t us = 0;
  o.budget_clock_us = [&us] { return us += 30'000; };  // every reading is 30 ms later
  o.active_expire_enabled = false;
  Store s{clock, o};
  for (std::uint64_t k = 0; k < 40; ++k) REQUIRE(s.set(k, Big{}) == true);
  for (std::uint64_t k = 0; k < 40; ++k) REQUIRE(s.unlink(k));
  // Budget of a slow tick at hz 10: 25 ms; the first check (after 16) is already over it.
  auto r = s.tick();
  CHECK(r.lazyfreed == 16);
  CHECK(g_destroyed == 16);
  CHECK(s.stats().lazyfree_pending_objects == 24);
  CHECK(s.tick().lazyfreed == 16);
  CHECK(s.tick().lazyfreed == 8);
  CHECK(g_destroyed == 40);
  CHECK(s.tick().lazyfreed == 0);
}
