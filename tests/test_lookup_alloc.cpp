// tests/test_lookup_alloc.cpp: lookups by std::string_view or string literal on a
// std::string-keyed store allocate nothing (transparent hash and equality: see
// include/expiring/hash.hpp).
//
// This file replaces the global operator new/delete for the whole test executable with
// malloc/free wrappers that count calls while a measuring window is open, and only then. The
// windows contain store calls only; assertions run after the window closes (Catch allocates).
// Keys and values are longer than any small-string buffer, so building a std::string from a
// lookup key would show up as an allocation; two controls prove that the counter sees one.
#include <expiring/expiring.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#include "catch.hpp"
#include "test_policy.hpp"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_news{0};
std::atomic<std::size_t> g_deletes{0};

void* counted_alloc(std::size_t n) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void counted_free(void* p) noexcept {
  if (p != nullptr && g_counting.load(std::memory_order_relaxed)) g_deletes.fetch_add(1, std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace {

using expiring::ManualClock;

constexpr std::int64_t T0 = 1'000'000;

struct Counts {
  std::size_t news;
  std::size_t deletes;
};

// Runs f with the counter on; f must not allocate for its own bookkeeping.
template <class F>
Counts count_allocations(F&& f) {
  g_news.store(0);
  g_deletes.store(0);
  g_counting.store(true);
  f();
  g_counting.store(false);
  return Counts{g_news.load(), g_deletes.load()};
}

using ValueStore = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                            ManualClock&, TestPolicy>;

constexpr std::string_view kLive = "session:0123456789abcdef:volatile";
constexpr std::string_view kPlain = "session:0123456789abcdef:persistent";
constexpr std::string_view kStale = "session:0123456789abcdef:stale-soon";
constexpr std::string_view kMissing = "session:0123456789abcdef:not-there";
const std::string kValue(64, 'v');

void fill(ValueStore& store) {
  REQUIRE(store.set(std::string(kLive), kValue, expiring::Ex{100}) == true);
  REQUIRE(store.set(std::string(kPlain), kValue) == true);
  REQUIRE(store.set(std::string(kStale), kValue, expiring::Px{10}) == true);
  for (int i = 0; i < 40; ++i) {  // some company, so that the table is not trivially small
    REQUIRE(store.set("filler:0123456789abcdef:" + std::to_string(i), kValue, expiring::Ex{50 + i}) == true);
  }
}

std::string g_sink;  // lets the control's string escape, so its allocation cannot be elided

}  // namespace

TEST_CASE("lookup alloc: the counter sees a long std::string (control)", "[alloc]") {
  const Counts c = count_allocations([] { g_sink = std::string(200, 'x'); });
  CHECK(c.news >= 1);
  CHECK(g_sink.size() == 200);
  const Counts d = count_allocations([] { std::string().swap(g_sink); });
  CHECK(d.deletes >= 1);
}

TEST_CASE("lookup alloc: a store without transparent functors does allocate (control)", "[alloc]") {
  ManualClock clock{T0};
  expiring::ExpiringStore<std::string, std::string, std::hash<std::string>, std::equal_to<std::string>, ManualClock&, TestPolicy>
      store{clock};
  REQUIRE(store.set(std::string(kLive), kValue) == true);
  const std::string* found = nullptr;
  const Counts c = count_allocations([&] { found = store.get(kLive); });  // builds a std::string key
  CHECK(found != nullptr);
  CHECK(c.news >= 1);
}

TEST_CASE("lookup alloc: get, exists, touch, peek by string_view and literal allocate nothing", "[alloc]") {
  ManualClock clock{T0};
  ValueStore store{clock};
  fill(store);
  const std::string* a = nullptr;
  const std::string* b = nullptr;
  const std::string* c = nullptr;
  const std::string* d = nullptr;
  bool e1 = false, e2 = true, t1 = false;
  const Counts counts = count_allocations([&] {
    a = store.get(kLive);
    b = store.get("session:0123456789abcdef:persistent");
    c = store.get(kMissing);
    d = store.peek(kLive);
    e1 = store.exists(kPlain);
    e2 = store.exists("session:0123456789abcdef:not-there");
    t1 = store.touch(kLive);
  });
  CHECK(counts.news == 0);
  CHECK(counts.deletes == 0);
  REQUIRE(a != nullptr);
  CHECK(*a == kValue);
  REQUIRE(b != nullptr);
  CHECK(c == nullptr);
  CHECK(d == a);
  CHECK(e1);
  CHECK_FALSE(e2);
  CHECK(t1);
  CHECK(store.stats().keyspace_hits == 4);
  CHECK(store.stats().keyspace_misses == 2);
}

TEST_CASE("lookup alloc: ttl, pttl, expiretime, pexpiretime by string_view allocate nothing", "[alloc]") {
  ManualClock clock{T0};
  ValueStore store{clock};
  fill(store);
  std::int64_t r[6] = {};
  const Counts counts = count_allocations([&] {
    r[0] = store.ttl(kLive);
    r[1] = store.pttl(kLive);
    r[2] = store.expiretime("session:0123456789abcdef:volatile");
    r[3] = store.pexpiretime(kLive);
    r[4] = store.ttl(kPlain);
    r[5] = store.ttl(kMissing);
  });
  CHECK(counts.news == 0);
  CHECK(counts.deletes == 0);
  CHECK(r[0] == 100);
  CHECK(r[1] == 100000);
  CHECK(r[2] == 1100);
  CHECK(r[3] == T0 + 100000);
  CHECK(r[4] == -1);
  CHECK(r[5] == -2);
}

TEST_CASE("lookup alloc: del of a missing key and expire by string_view or literal allocate nothing", "[alloc]") {
  ManualClock clock{T0};
  ValueStore store{clock};
  fill(store);
  bool d1 = true, d2 = true, p = false;
  expiring::Result<bool> x1 = true, x2 = true, x3 = true, x4 = false, x5 = false;
  const Counts counts = count_allocations([&] {
    d1 = store.del(kMissing);
    d2 = store.unlink("session:0123456789abcdef:not-there");
    x1 = store.expire(kMissing, 10);
    x2 = store.expire("session:0123456789abcdef:volatile", 500, expiring::ExpireFlags::NX);  // refused
    x3 = store.pexpireat(kLive, T0 + 1, expiring::ExpireFlags::GT);                          // refused
    x4 = store.pexpire(std::string_view("session:0123456789abcdef:stale-soon"), -1);        // deletes
    x5 = store.expire(kPlain, 50, expiring::ExpireFlags::XX);                               // refused
    p = store.persist(kLive);
  });
  CHECK(counts.news == 0);
  CHECK_FALSE(d1);
  CHECK_FALSE(d2);
  CHECK(x1 == false);
  CHECK(x2 == false);
  CHECK(x3 == false);
  CHECK(x4 == true);
  CHECK(x5 == false);
  CHECK(p);
  CHECK(store.ttl(kLive) == -1);
  CHECK(store.exists(kStale) == false);
  CHECK(store.size() == 42);
}

// A successful expire also stores the deadline. The sampled policy's dense table has room
// (it grows by doubling), so nothing is allocated at all; the timer wheel may grow a bucket.
// Under any policy the lookup itself must add nothing: by string_view or literal it costs
// exactly what it costs with a ready-made std::string key on an identical store.
TEST_CASE("lookup alloc: a successful expire by string_view or literal costs no more than by std::string", "[alloc]") {
  expiring::Options options;
  options.seed = 99;
  ManualClock clock_a{T0};
  ManualClock clock_b{T0};
  ValueStore by_view{clock_a, options};
  ValueStore by_string{clock_b, options};
  fill(by_view);
  fill(by_string);
  const std::string live(kLive);
  const std::string stale(kStale);
  expiring::Result<bool> v1 = false, v2 = false, s1 = false, s2 = false;
  const Counts view_counts = count_allocations([&] {
    v1 = by_view.expire("session:0123456789abcdef:volatile", 500);  // replaces an existing TTL
    v2 = by_view.pexpire(kStale, 20000, expiring::ExpireFlags::XX);
  });
  const Counts string_counts = count_allocations([&] {
    s1 = by_string.expire(live, 500);
    s2 = by_string.pexpire(stale, 20000, expiring::ExpireFlags::XX);
  });
  CHECK(v1 == true);
  CHECK(v2 == true);
  CHECK(s1 == true);
  CHECK(s2 == true);
  CHECK(view_counts.news == string_counts.news);
  if (std::is_same_v<ValueStore::expiry_policy, expiring::SampledExpiry>) {
    CHECK(view_counts.news == 0);
  }
  CHECK(by_view.ttl(kLive) == 500);
  CHECK(by_view.pttl(kStale) == 20000);
}

TEST_CASE("lookup alloc: a read that reclaims a stale key allocates nothing (no listener)", "[alloc]") {
  ManualClock clock{T0};
  ValueStore store{clock};
  fill(store);
  clock.set(T0 + 11);
  const std::string* r = &kValue;
  const Counts counts = count_allocations([&] { r = store.get(kStale); });
  CHECK(r == nullptr);
  CHECK(store.size() == 42);
  CHECK(store.stats().expired_keys == 1);
  // Reclaiming frees the key and the value: deletions, but no new allocation.
  CHECK(counts.news == 0);
}

TEST_CASE("lookup alloc: integer keys allocate nothing either", "[alloc]") {
  ManualClock clock{T0};
  expiring::ExpiringStore<std::uint64_t, std::string, expiring::Hash<std::uint64_t>, std::equal_to<>, ManualClock&, TestPolicy>
      store{clock};
  for (std::uint64_t i = 0; i < 50; ++i) REQUIRE(store.set(i, kValue, expiring::Ex{10}) == true);
  const std::string* a = nullptr;
  std::int64_t t = 0;
  bool d = true;
  expiring::Result<bool> x = false;
  const Counts counts = count_allocations([&] {
    a = store.get(std::uint64_t{7});
    t = store.ttl(std::uint64_t{8});
    d = store.del(std::uint64_t{1000});
    x = store.expire(std::uint64_t{9}, 30, expiring::ExpireFlags::NX);  // refused: it has a TTL
  });
  CHECK(counts.news == 0);
  CHECK(counts.deletes == 0);
  CHECK(a != nullptr);
  CHECK(t == 10);
  CHECK_FALSE(d);
  CHECK(x == false);
}
