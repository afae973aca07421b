// tests/test_concurrent_replica.cpp: ConcurrentStore as a replica (issue 26 §5): Options::replica
// and apply() (include/expiring/concurrent_store.hpp).
//
// * Equivalence: a primary ExpiringStore's change feed drives an ExpiringStore replica and
//   ConcurrentStore replicas of 1, 4 and 64 shards through random operations (SET with and
//   without TTLs, EXPIRE, PERSIST, DEL, UNLINK, RENAME, units of several keys, FLUSHALL,
//   the primary's own expiry by tick()); every key reads the same on all of them after every
//   step, and the replicas never expire a key on their own.
// * A MULTI ... EXEC unit is applied at its EXEC, all of it at once; an invalid record is
//   refused at once, inside a unit too, and nothing of it is held.
// * Threads: one thread applies a primary's stream while others read; every value read is
//   one the primary wrote for that key (TSan checks the locking).
// Every store uses TestPolicy (the suite is built once per expiry policy).
#include <expiring/concurrent_store.hpp>
#include <expiring/expiring.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "test_concurrent_support.hpp"
#include "test_policy.hpp"

namespace {

using expiring::ChangeOp;
using expiring::Errc;
using expiring::ManualClock;
using expiring::Options;
using expiring::Px;
using expiring::PxAt;
using concurrent_test::scaled;
using concurrent_test::shards;
using concurrent_test::T0;


using Primary = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
using Replica = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;
using CReplica = expiring::ConcurrentStore<std::string, std::string, ManualClock, TestPolicy>;
using Change = expiring::Change<std::string, std::string>;

Options replica_options() {
  Options o;
  o.replica = true;
  o.seed = 21;
  o.budget_clock_us = [] { return std::int64_t{0}; };
  return o;
}
Options primary_options() {
  Options o;
  o.seed = 22;
  o.budget_clock_us = [] { return std::int64_t{0}; };
  return o;
}

std::string key(std::uint64_t i) { return "k" + std::to_string(i); }

// Whether v has the form of a value the threaded test's primary writes: "k<n>:<i>" (the key
// it was written for, which a RENAME may have moved it away from, and the step). A torn or
// invented value has not.
bool written(const std::string& v) {
  const std::size_t colon = v.find(':');
  if (v.size() < 4 || v[0] != 'k' || colon == std::string::npos || colon < 2 || colon + 1 == v.size()) return false;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (i != colon && (v[i] < '0' || v[i] > '9')) return false;
  }
  return true;
}

template <class S>
std::string view_of(S& s, int keys) {
  std::string out;
  for (int i = 0; i < keys; ++i) {
    const std::string k = key(static_cast<std::uint64_t>(i));
    const auto v = s.get(k);
    std::string value;
    if constexpr (std::is_pointer_v<decltype(v)>) {
      value = v != nullptr ? *v : "(nil)";
    } else {
      value = v ? *v : "(nil)";
    }
    out += k + "=" + value + " pttl " + std::to_string(s.pttl(k)) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("concurrent replica: follows a primary's feed as an ExpiringStore replica does", "[concurrent][replica]") {
  const std::size_t n_shards = GENERATE(std::size_t{1}, std::size_t{4}, std::size_t{64});
  CAPTURE(n_shards);
  ManualClock clock{T0};
  Primary primary(clock, primary_options());
  Replica single(clock, replica_options());
  CReplica con(clock, replica_options(), shards(n_shards));
  std::size_t records = 0, units = 0;
  primary.set_change_feed([&](const Change& c) {
    ++records;
    units += c.op == ChangeOp::multi ? 1u : 0u;
    const expiring::Result<bool> a = single.apply(c);
    const expiring::Result<bool> b = con.apply(c);
    // Inside a unit the concurrent replica holds each record (false) until its EXEC.
    if (a.ok() != b.ok()) throw std::logic_error("apply(): one replica refused a record the other took");
  });
  constexpr int kKeys = 24;
  std::mt19937_64 g(n_shards);
  for (int step = 0; step < 4000; ++step) {
    const std::string k = key(g() % kKeys), k2 = key(g() % kKeys);
    const std::string v = "v" + std::to_string(step);
    switch (g() % 12) {
      case 0: (void)primary.set(k, v); break;
      case 1: (void)primary.set(k, v, Px{static_cast<std::int64_t>(g() % 200) + 1}); break;
      case 2: (void)primary.set(k, v, PxAt{T0 + static_cast<std::int64_t>(g() % 100'000)}); break;
      case 3: (void)primary.pexpire(k, static_cast<std::int64_t>(g() % 300)); break;
      case 4: (void)primary.persist(k); break;
      case 5: (void)primary.del(k); break;
      case 6: (void)primary.unlink(k); break;
      case 7: (void)primary.rename(k, k2); break;
      case 8:
        primary.as_one_unit([&] {
          (void)primary.set(k, v);
          (void)primary.set(k2, v + "'");
          (void)primary.pexpire(key(g() % kKeys), 50);
        });
        break;
      case 9: (void)primary.tick(); break;
      case 10:
        if (g() % 50 == 0) primary.clear();  // FLUSHALL
        break;
      default: clock.advance(static_cast<std::int64_t>(g() % 40)); break;
    }
    const std::string p = view_of(primary, kKeys);
    REQUIRE(view_of(single, kKeys) == p);
    REQUIRE(view_of(con, kKeys) == p);
  }
  CHECK(records > 1000);
  CHECK(units > 100);
  // The replicas never expired a key of their own: stale keys stay stored until the primary's DEL.
  clock.advance(1'000'000);
  CHECK(con.tick().expired == 0);
  CHECK(con.size() == single.size());
}

TEST_CASE("concurrent replica: a unit is applied at its EXEC, all at once", "[concurrent][replica]") {
  ManualClock clock{T0};
  CReplica r(clock, replica_options(), shards(16));
  const std::string a = "a", b = "b", va = "1", vb = "2";
  REQUIRE(&a != &b);
  CHECK(r.apply(Change{ChangeOp::multi}) == false);
  CHECK(r.apply(Change{ChangeOp::set, &a, &va}) == false);  // held
  CHECK(r.apply(Change{ChangeOp::set, &b, &vb, nullptr, T0 + 500, expiring::ChangeTtl::at}) == false);
  CHECK_FALSE(r.get(a).has_value());
  CHECK_FALSE(r.get(b).has_value());
  // An invalid record is refused at once, and nothing of it is held.
  CHECK(r.apply(Change{ChangeOp::set, &a, nullptr}) == Errc::invalid_record);
  CHECK(r.apply(Change{ChangeOp::rename, &a, nullptr, nullptr}) == Errc::invalid_record);
  CHECK(r.apply(Change{ChangeOp::exec}) == true);
  CHECK(r.get(a) == std::optional<std::string>("1"));
  CHECK(r.get(b) == std::optional<std::string>("2"));
  CHECK(r.pexpiretime(b) == T0 + 500);
  CHECK(r.apply(Change{ChangeOp::exec}) == false);  // no unit open
  // A RENAME between shards, a past deadline kept as given (the replica waits for the DEL).
  const std::string c = "c";
  CHECK(r.apply(Change{ChangeOp::pexpireat, &b, nullptr, nullptr, T0 - 1}) == true);
  CHECK_FALSE(r.get(b).has_value());  // stale: read as missing, and kept
  CHECK(r.size() == 2);
  CHECK(r.apply(Change{ChangeOp::rename, &b, nullptr, &c}) == true);
  CHECK(r.size() == 2);
  CHECK(r.pexpiretime(c) == -2);  // still stale under its new name
  CHECK(r.apply(Change{ChangeOp::del, &c}) == true);
  CHECK(r.size() == 1);
  CHECK(r.apply(Change{ChangeOp::flushall}) == true);
  CHECK(r.size() == 0);
}

TEST_CASE("concurrent replica: readers on many threads while the link applies", "[concurrent][replica][threads]") {
  ManualClock clock{T0};
  CReplica r(clock, replica_options(), shards(8));
  Primary primary(clock, primary_options());
  primary.set_change_feed([&](const Change& c) { (void)r.apply(c); });
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 g(static_cast<std::uint64_t>(t) + 5);
      for (int i = 0; i < scaled(400000, 40000) && !done.load(std::memory_order_relaxed); ++i) {
        const std::string k = key(g() % 32);
        const std::optional<std::string> v = r.get(k);
        if (v && !written(*v)) ++bad;
      }
    });
  }
  std::mt19937_64 g(3);
  for (int i = 0; i < scaled(40000, 5000); ++i) {
    const std::string k = key(g() % 32);
    if (g() % 4 == 0) {
      primary.as_one_unit([&] {
        (void)primary.set(k, k + ":" + std::to_string(i));
        const std::string k2 = key(g() % 32);
        (void)primary.set(k2, k2 + ":" + std::to_string(i));
      });
    } else if (g() % 3 == 0) {
      (void)primary.rename(k, key(g() % 32));
    } else {
      (void)primary.set(k, k + ":" + std::to_string(i), Px{100});
    }
    if (i % 64 == 0) clock.advance(10);
  }
  done = true;
  for (auto& t : readers) t.join();
  CHECK(bad == 0);
  for (int i = 0; i < 32; ++i) {
    const std::string k = key(static_cast<std::uint64_t>(i));
    CHECK(r.get(k) == [&] {
      const std::string* p = primary.get(k);
      return p != nullptr ? std::optional<std::string>(*p) : std::nullopt;
    }());
  }
}
