// tests/test_lazyfree.cpp: lazy free (Options::lazyfree_*): which removals queue their value,
// that tick() destroys the queue within its budget, the bound on the queue, statistics, and
// the background reclaimer (which thread destroys what, and when).
#include <expiring/expiring.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

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

using Store = expiring::ExpiringStore<std::uint64_t, Big, expiring::Hash<std::uint64_t>, std::equal_to<>, ManualClock&, TestPolicy>;

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

// For the background reclaimer: counts destructions of live values, and those that ran on
// the thread that created the store.
struct Deaths {
  std::atomic<int> total{0};
  std::atomic<int> on_store_thread{0};
  std::thread::id store_thread = std::this_thread::get_id();
};

// A value holding a block and a pointer to its Deaths (moved-from ones hold nothing).
struct Tracked {
  std::vector<int> data;
  Deaths* deaths = nullptr;
  Tracked() = default;
  Tracked(Deaths& d, std::size_t n = 1000) : data(n, 1), deaths(&d) {}
  Tracked(Tracked&& o) noexcept : data(std::move(o.data)), deaths(std::exchange(o.deaths, nullptr)) {}
  Tracked(const Tracked&) = default;
  Tracked& operator=(Tracked&& o) noexcept {
    die();
    data = std::move(o.data);
    deaths = std::exchange(o.deaths, nullptr);
    return *this;
  }
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { die(); }
  void die() noexcept {
    if (deaths == nullptr) return;
    if (std::this_thread::get_id() == deaths->store_thread) ++deaths->on_store_thread;
    ++deaths->total;
    deaths = nullptr;
  }
};

using TrackedStore =
    expiring::ExpiringStore<std::uint64_t, Tracked, expiring::Hash<std::uint64_t>, std::equal_to<>, ManualClock&, TestPolicy>;

Options background(std::size_t queue) {
  Options o = lazy(queue, true, true, true);
  o.lazyfree_background = true;
  return o;
}

// Waits (up to a minute: a liveness bound, not a timing assertion) until the reclaimer has
// destroyed `n` values in all.
bool wait_freed(const TrackedStore& s, std::uint64_t n) {
  for (int i = 0; i < 60'000; ++i) {
    if (s.stats().lazyfreed_objects >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Ticks (each hands what is queued to the reclaimer if it is idle) until nothing is pending,
// or a minute has passed. No Catch2 assertion: it also runs on a second thread.
void tick_until_freed(TrackedStore& s) {
  for (int i = 0; i < 60'000 && s.stats().lazyfree_pending_objects != 0; ++i) {
    s.tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
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

TEST_CASE("lazyfree: unlink and lazy expiry queue the value, tick() destroys it", "[lazyfree]") {
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
  o.maxmemory = 4 * (sizeof(std::uint64_t) + sizeof(Big));  // room for 4 keys: 6 of 10 are evicted
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

TEST_CASE("lazyfree: the queue is bounded, a value removed when it is full is destroyed at once", "[lazyfree]") {
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

TEST_CASE("lazyfree: background reclaimer destroys values off the store's thread", "[lazyfree][background]") {
  Deaths deaths;
  ManualClock clock{T0};
  {
    TrackedStore s{clock, background(8)};
    for (std::uint64_t k = 0; k < 6; ++k) REQUIRE(s.set(k, Tracked{deaths}) == true);
    REQUIRE(s.set(6, Tracked{deaths}, Px{10}) == true);
    REQUIRE(s.unlink(0));
    REQUIRE(s.del(1));  // lazyfree_lazy_user_del
    clock.advance(11);
    CHECK(s.get(6) == nullptr);  // lazy expiry
    // Queued on the store's side until a hand-off point; nothing destroyed yet.
    CHECK(deaths.total == 0);
    CHECK(s.stats().lazyfree_pending_objects == 3);
    const auto r = s.tick();
    CHECK(r.lazyfreed == 0);  // handed off, not destroyed by the tick
    REQUIRE(wait_freed(s, 3));
    CHECK(deaths.total == 3);
    CHECK(deaths.on_store_thread == 0);
    CHECK(s.stats().lazyfreed_objects == 3);
    CHECK(s.stats().lazyfree_pending_objects == 0);
    CHECK(s.size() == 4);
    CHECK(s.check_invariants());
    s.reset_stats();  // CONFIG RESETSTAT zeroes lazyfreed_objects, as Redis
    CHECK(s.stats().lazyfreed_objects == 0);
    REQUIRE(s.unlink(2));
    s.tick();
    REQUIRE(wait_freed(s, 1));
    CHECK(deaths.on_store_thread == 0);
  }
  // The store's destructor stops the reclaimer; what was stored dies with the store.
  CHECK(deaths.total == 7);
}

TEST_CASE("lazyfree: a full queue is handed to an idle reclaimer instead of destroyed inline",
          "[lazyfree][background]") {
  Deaths deaths;
  ManualClock clock{T0};
  TrackedStore s{clock, background(4)};
  for (std::uint64_t k = 0; k < 9; ++k) REQUIRE(s.set(k, Tracked{deaths}) == true);
  for (std::uint64_t k = 0; k < 4; ++k) REQUIRE(s.unlink(k));
  CHECK(s.stats().lazyfree_pending_objects == 4);
  // The queue is full: the fifth unlink hands it over (the reclaimer is idle) and queues.
  REQUIRE(s.unlink(4));
  REQUIRE(wait_freed(s, 4));
  CHECK(deaths.on_store_thread == 0);
  CHECK(s.stats().lazyfree_pending_objects == 1);
  // Fill again, then tick: every value dies on the reclaimer.
  for (std::uint64_t k = 5; k < 8; ++k) REQUIRE(s.unlink(k));
  s.tick();
  REQUIRE(wait_freed(s, 8));
  CHECK(deaths.total == 8);
  CHECK(deaths.on_store_thread == 0);
}

TEST_CASE("lazyfree: memory held by queued values is bounded while the reclaimer is busy",
          "[lazyfree][background]") {
  // Whatever the reclaimer's pace, at most two queues of values wait: the store's queue and
  // the batch being destroyed. A value removed beyond that dies at once on the store's thread.
  Deaths deaths;
  ManualClock clock{T0};
  TrackedStore s{clock, background(2)};
  constexpr std::uint64_t n = 200;
  for (std::uint64_t k = 0; k < n; ++k) REQUIRE(s.set(k, Tracked{deaths, 100'000}) == true);
  for (std::uint64_t k = 0; k < n; ++k) {
    REQUIRE(s.unlink(k));
    // Pending first, deaths second: the reclaimer counts a death before it clears pending,
    // so read in this order the sum never misses a value that is between the two.
    const std::uint64_t pending = s.stats().lazyfree_pending_objects;
    const auto dead = static_cast<std::uint64_t>(deaths.total.load());
    CHECK(pending <= 4);
    CHECK(dead + pending >= k + 1);
  }
  tick_until_freed(s);
  CHECK(s.stats().lazyfree_pending_objects == 0);
  CHECK(deaths.total == static_cast<int>(n));
  CHECK(s.stats().lazyfreed_objects == n - static_cast<std::uint64_t>(deaths.on_store_thread));
}

TEST_CASE("lazyfree: background needs a queue", "[lazyfree][background][error]") {
  ManualClock clock{T0};
  Options o;
  o.lazyfree_background = true;
  CHECK_THROWS_AS(TrackedStore(clock, o), std::invalid_argument);
}

TEST_CASE("lazyfree: lazyfree_lazy_server_del queues values replaced by set, rename and copy", "[lazyfree]") {
  g_destroyed = 0;
  ManualClock clock{T0};
  Options o = lazy(16, false, false, false);
  SECTION("off: replaced values are destroyed at once") {
    Store s{clock, o};
    REQUIRE(s.set(1, Big{}) == true);
    REQUIRE(s.set(1, Big{}) == true);
    CHECK(g_destroyed == 1);
    CHECK(s.stats().lazyfree_pending_objects == 0);
  }
  SECTION("on") {
    o.lazyfree_lazy_server_del = true;
    Store s{clock, o};
    REQUIRE(s.set(1, Big{}) == true);
    REQUIRE(s.set(2, Big{}) == true);
    REQUIRE(s.set(3, Big{}) == true);
    REQUIRE(s.set(1, Big{5}, Px{100}) == true);  // overwrite
    CHECK(g_destroyed == 0);
    CHECK(s.stats().lazyfree_pending_objects == 1);
    CHECK(s.pttl(1) == 100);
    CHECK(s.get(1)->data.size() == 5);
    const Big b{6};
    REQUIRE(s.set(2, b) == true);  // overwrite by copy
    CHECK(s.get(2)->data.size() == 6);
    REQUIRE(s.rename(1, 3).ok());  // 3's old value is replaced
    CHECK(s.get(3)->data.size() == 5);
    CHECK(s.pttl(3) == 100);
    REQUIRE(s.copy(2, 3, /*replace=*/true) == true);  // 3's value (5 ints) is replaced
    CHECK(s.get(3)->data.size() == 6);
    CHECK(s.pttl(3) == -1);
    CHECK(g_destroyed == 0);
    CHECK(s.stats().lazyfree_pending_objects == 4);
    CHECK(s.tick().lazyfreed == 4);
    CHECK(g_destroyed == 4);
    CHECK(s.check_invariants());
  }
}

TEST_CASE("lazyfree: a copied store shares the reclaimer, also from another thread", "[lazyfree][background]") {
  Deaths deaths;
  ManualClock clock{T0};
  {
    TrackedStore a{clock, background(4)};
    for (std::uint64_t k = 0; k < 40; ++k) REQUIRE(a.set(k, Tracked{deaths}) == true);
    TrackedStore b = a;  // copies the 40 values: 80 live in all
    CHECK(b.size() == 40);
    // Each store is single-threaded; the two run on two threads and hand off to one reclaimer.
    // (No Catch2 assertion inside the thread: Catch2 is not thread-safe. It returns counts.)
    auto drain = [](TrackedStore& s) {
      int unlinked = 0;
      for (std::uint64_t k = 0; k < 40; ++k) {
        unlinked += s.unlink(k) ? 1 : 0;
        if (k % 3 == 0) s.tick();
      }
      tick_until_freed(s);
      return unlinked;
    };
    int b_unlinked = 0;
    std::thread other([&] { b_unlinked = drain(b); });
    const int a_unlinked = drain(a);
    other.join();
    CHECK(a_unlinked == 40);
    CHECK(b_unlinked == 40);
    CHECK(a.stats().lazyfree_pending_objects == 0);
    CHECK(b.stats().lazyfree_pending_objects == 0);
    CHECK(a.size() == 0);
    CHECK(b.size() == 0);
    CHECK(deaths.total == 80);
  }
  CHECK(deaths.total == 80);
}
