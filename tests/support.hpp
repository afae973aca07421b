// tests/support.hpp: helpers shared by the test files.
//
// namespace support (test_set, test_rename, test_getex_getdel, test_lazy_expiry, test_events
// bring it in with `using namespace support;`):
// * The three key spellings for TEMPLATE_TEST_CASE (docs/testing.md): U64Keys, StringKeys and
//   CollidingKeys (std::string keys whose hash is a constant, so every key collides with every
//   other). Each makes keys two ways: key("name") from a name, make(i) from a number.
// * StoreOf<KT>: the store under test, on a ManualClock held by reference.
// * show(): replies as text; Snapshot / snapshot(store): everything observable about a store.
//
// namespace ttltest (test_ttl, test_expire, test_persist, test_stats; semantics.md Part B §5
// sections A, B, C, D and L), built on the same key spellings and store:
// * Clock starts for relative-time cases: 0, a pseudo-random time drawn from a fixed seed
//   (reported with CAPTURE in every test), and one minute before INT64_MAX. At the last one a
//   relative TTL above 60 s overflows; cases with longer TTLs check that the catalogue's
//   numbers give Errc::invalid_expire_time and change nothing, then run the same case with
//   every duration divided by 10 (see Fx::sec) so that its semantics are still exercised
//   right at the end of time.
// * Catalogue cases with absolute times run at T0 = 1,000,000 ms exactly as written.
// * Fx<KT>: one store on one ManualClock with an event recorder; a one-key Snapshot.
#pragma once

#include <expiring/expiring.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"

namespace support {

using expiring::Errc;
using expiring::Ex;
using expiring::ExAt;
using expiring::KeepTtl;
using expiring::ManualClock;
using expiring::Persist;
using expiring::Px;
using expiring::PxAt;
using expiring::SetCond;

inline constexpr std::int64_t T0 = 1'000'000;  // semantics.md B §5: the clock starts at 1000 s
inline constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// ---- Key spellings -----------------------------------------------------------------------

// Every key hashes to the same bucket: equality alone must tell keys apart.
struct CollidingHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view) const noexcept { return 42; }
};

// Makes distinct string keys from numbers; odd ones are longer than any small-string buffer,
// so both inline and heap-allocated keys are exercised.
inline std::string string_key(int i) {
  std::string s = (i % 2 != 0) ? "a-key-long-enough-to-live-on-the-heap:" : "k:";
  s += std::to_string(i);
  return s;
}

// The three key spellings; key("name") or make(i) makes a key of that spelling.
struct U64Keys {
  using key_type = std::uint64_t;
  using hash = expiring::Hash<std::uint64_t>;
  static key_type key(std::string_view name) {  // FNV-1a: distinct names, distinct keys
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
  }
  // Spread over the whole range (key 0 is 0).
  static key_type make(int i) { return static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull; }
};
struct StringKeys {
  using key_type = std::string;
  using hash = expiring::Hash<std::string>;
  static key_type key(std::string_view name) { return std::string(name); }
  static key_type make(int i) { return string_key(i); }
};
struct CollidingKeys {
  using key_type = std::string;
  using hash = CollidingHash;
  static key_type key(std::string_view name) { return std::string(name); }
  static key_type make(int i) { return string_key(i); }
};

// ---- The store under test ----------------------------------------------------------------

template <class KT>
using StoreOf = expiring::ExpiringStore<typename KT::key_type, std::string, typename KT::hash,
                                        std::equal_to<>, ManualClock&, TestPolicy>;

// Replies as text: "(nil)" for a missing value (no test value is spelled that way).
inline std::string show(const std::string* p) { return p != nullptr ? *p : std::string("(nil)"); }
inline std::string show(const std::optional<std::string>& o) { return o ? *o : std::string("(nil)"); }

// Everything observable about a store, taken through its quiet paths (iteration, stats()):
// error paths must leave it exactly as it was.
template <class Store>
struct Snapshot {
  using K = typename Store::key_type;
  std::size_t size = 0;
  std::size_t expires = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t expired = 0;
  std::vector<std::tuple<K, std::string, std::int64_t>> entries;  // sorted (key, value, pexpiretime)

  friend bool operator==(const Snapshot& a, const Snapshot& b) {
    return a.size == b.size && a.expires == b.expires && a.hits == b.hits && a.misses == b.misses &&
           a.expired == b.expired && a.entries == b.entries;
  }
  friend std::ostream& operator<<(std::ostream& os, const Snapshot& s) {
    os << "{size=" << s.size << " expires=" << s.expires << " hits=" << s.hits << " misses=" << s.misses
       << " expired_keys=" << s.expired << " entries=[";
    for (const auto& e : s.entries) os << " (" << std::get<0>(e) << "," << std::get<1>(e) << "," << std::get<2>(e) << ")";
    return os << " ]}";
  }
};
template <class Store>
Snapshot<Store> snapshot(const Store& store) {
  Snapshot<Store> s;
  s.size = store.size();
  s.expires = store.expires_size();
  const expiring::Stats st = store.stats();
  s.hits = st.keyspace_hits;
  s.misses = st.keyspace_misses;
  s.expired = st.expired_keys;
  for (const auto& e : store) s.entries.emplace_back(e.key, e.value, e.pexpiretime);
  std::sort(s.entries.begin(), s.entries.end());
  return s;
}

}  // namespace support

namespace ttltest {

using support::CollidingHash;
using support::kMax;
using support::kMin;
using support::string_key;

// ---- Key flavours ------------------------------------------------------------------------

// The spelled names are part of the test case names (TEMPLATE_TEST_CASE): keep them.
using IntKeys = support::U64Keys;
using support::CollidingKeys;
using support::StringKeys;

#define TTLTEST_KEY_FLAVOURS ttltest::IntKeys, ttltest::StringKeys, ttltest::CollidingKeys

// The key number `i` of flavour KT.
template <class KT>
typename KT::key_type key(int i) {
  return KT::make(i);
}

// ---- Clock starts ------------------------------------------------------------------------

// The catalogue's T0 (semantics.md B §5): 1,000,000 ms = 1000 s.
inline constexpr std::int64_t kT0 = support::T0;
inline constexpr std::int64_t kStartZero = 0;
// One minute before the end of time.
inline constexpr std::int64_t kStartEnd = kMax - 60'000;
// The random start: the first output of mt19937_64 (whose sequence the standard fixes) seeded
// with kRandomSeed, shifted into [0, 2^62). It is CAPTUREd by every test that uses it.
inline constexpr std::uint64_t kRandomSeed = 0x7E57'5EED'0005ull;
inline std::int64_t random_start() {
  std::mt19937_64 gen(kRandomSeed);
  return static_cast<std::int64_t>(gen() >> 2);
}

// The three starts of every relative-time case.
#define TTLTEST_RELATIVE_START()                                                                        \
  GENERATE(Catch::Generators::as<std::int64_t>{}, ::ttltest::kStartZero, ::ttltest::random_start(), \
           ::ttltest::kStartEnd)
// The three starts plus the catalogue's T0, for absolute cases that also hold at any time.
#define TTLTEST_ANY_START()                                                                          \
  GENERATE(Catch::Generators::as<std::int64_t>{}, ::ttltest::kT0, ::ttltest::kStartZero,             \
           ::ttltest::random_start(), ::ttltest::kStartEnd)

// ---- The store under test ----------------------------------------------------------------

template <class KT>
using Store = support::StoreOf<KT>;

// What a call must not change when it fails: sizes, the key's value and deadline (read through
// the quiet side door), the statistics and the number of events.
struct Snapshot {
  std::size_t size = 0;
  std::size_t expires = 0;
  std::optional<std::string> value;
  std::int64_t pexpiretime = -2;  // -2 absent (or stale), -1 no TTL
  std::uint64_t hits = 0, misses = 0, expired = 0;
  std::size_t events = 0;
  friend bool operator==(const Snapshot& a, const Snapshot& b) {
    return a.size == b.size && a.expires == b.expires && a.value == b.value && a.pexpiretime == b.pexpiretime &&
           a.hits == b.hits && a.misses == b.misses && a.expired == b.expired && a.events == b.events;
  }
  friend std::ostream& operator<<(std::ostream& os, const Snapshot& s) {
    return os << "{size " << s.size << ", expires " << s.expires << ", value "
              << (s.value ? "\"" + *s.value + "\"" : std::string("none")) << ", pexpiretime " << s.pexpiretime
              << ", hits " << s.hits << ", misses " << s.misses << ", expired_keys " << s.expired << ", events "
              << s.events << "}";
  }
};

// One store on one ManualClock, with an event recorder.
template <class KT>
struct Fx {
  using K = typename KT::key_type;
  using Event = std::pair<expiring::KeyEventCause, K>;

  expiring::ManualClock clock;
  Store<KT> store;
  const std::int64_t t0;
  std::vector<Event> events;

  static expiring::Options options() {
    expiring::Options o;
    o.seed = 0x5EED;                         // deterministic hashing and random_key()
    o.budget_clock_us = [] { return 0; };    // tick() budgets never depend on real time
    return o;
  }

  explicit Fx(std::int64_t start) : Fx(start, options()) {}
  Fx(std::int64_t start, expiring::Options opts) : clock(start), store(clock, std::move(opts)), t0(start) {
    store.set_listener([this](const typename Store<KT>::event_type& ev) { events.emplace_back(ev.cause, ev.key); });
  }

  static K key(int i) { return KT::make(i); }

  // @+n: the clock reads T0 + n (absolute offset from the start, as in the catalogue).
  void at(std::int64_t n) {
    REQUIRE(n <= kMax - t0);
    clock.set(t0 + n);
  }

  // Whether t0 is the start one minute before INT64_MAX.
  bool at_end() const { return t0 == kStartEnd; }
  // Whether a relative TTL of `ms` from t0 is representable.
  bool fits(std::int64_t ms) const { return ms <= kMax - t0; }
  // A catalogue duration in seconds, divided by 10 at the end-of-time start so that it fits
  // into the last minute (100 s -> 10 s, 200 s -> 20 s; order and rounding are preserved).
  std::int64_t sec(std::int64_t seconds) const { return at_end() ? seconds / 10 : seconds; }

  template <class KK>
  Snapshot snapshot(const KK& k) const {
    Snapshot s;
    s.size = store.size();
    s.expires = store.expires_size();
    if (const std::string* v = store.peek(k)) s.value = *v;
    for (const auto& e : store) {
      if (std::equal_to<>{}(e.key, k)) s.pexpiretime = e.pexpiretime;
    }
    const expiring::Stats st = store.stats();
    s.hits = st.keyspace_hits;
    s.misses = st.keyspace_misses;
    s.expired = st.expired_keys;
    s.events = events.size();
    return s;
  }

  // Runs `op`, which must fail with `err` and leave everything as it was.
  template <class KK, class Op>
  void expect_error_unchanged(const KK& k, expiring::Errc err, Op&& op) {
    const Snapshot before = snapshot(k);
    const auto r = std::forward<Op>(op)();
    CHECK(r == err);
    CHECK(snapshot(k) == before);
  }

  // Events recorded so far, then forgotten.
  std::vector<Event> take_events() {
    std::vector<Event> out;
    out.swap(events);
    return out;
  }
};

// Shorthand for an expected event list.
template <class KT>
std::vector<typename Fx<KT>::Event> evs(std::initializer_list<typename Fx<KT>::Event> list) {
  return std::vector<typename Fx<KT>::Event>(list);
}

}  // namespace ttltest

namespace Catch {
// Readable event lists in failure messages.
template <>
struct StringMaker<expiring::KeyEventCause> {
  static std::string convert(expiring::KeyEventCause c) { return expiring::to_string(c); }
};
template <>
struct StringMaker<expiring::EvictionPolicy> {
  static std::string convert(expiring::EvictionPolicy p) { return expiring::to_string(p); }
};
}  // namespace Catch
