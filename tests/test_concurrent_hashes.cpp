// tests/test_concurrent_hashes.cpp: hash fields with TTLs on ConcurrentStore (issue 26 §1).
//
// * Equivalence: one thread drives an ExpiringStore of hashes and ConcurrentStores of 1, 4
//   and 64 shards on one ManualClock with the same random hash operations (every member and
//   overload family, times in the past, beyond the cap and negative, every flag); replies
//   must be identical. Without ticks the events of each call must be identical too; with
//   ticks (whose per-shard quotas differ) the replies, and after a final read of every key
//   the statistics, must be.
// * tick() runs each shard's field cycle: due fields go without a read, counted in the
//   report and in expired_subkeys, with their hexpired events delivered after the lock.
// * A listener may call the store from a hash event (events go out after the lock).
// * Threads: hincrby() is atomic per key (no lost update); writers, readers, a clock and a
//   ticker run together (TSan checks the locking), and the store is consistent afterwards.
// Every store uses TestPolicy (the suite is built once per expiry policy). Catch2 v2's
// assertions are not thread-safe: worker threads only record what they saw.
#include <expiring/concurrent_store.hpp>
#include <expiring/field_map.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "test_concurrent_support.hpp"
#include "test_policy.hpp"

namespace {

using expiring::Errc;
using expiring::ExpireFlags;
using expiring::FieldReply;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Result;
using concurrent_test::scaled;
using concurrent_test::shards;
using concurrent_test::T0;
using concurrent_test::test_options;

constexpr std::int64_t kCap = (std::int64_t{1} << 46) - 1;

using FM = expiring::FieldMap<std::string, std::string>;
using Ref = expiring::Store<std::string, FM, ManualClock, TestPolicy>;
using CStore = expiring::ConcurrentStore<std::string, FM, ManualClock, TestPolicy>;
using Names = std::vector<std::string>;


// ---- Replies as text, so that one comparison covers every member ------------------------

template <class T>
std::string show(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
std::string show(const std::optional<std::string>& v) { return v ? *v : "(nil)"; }
std::string show(const std::string* v) { return v != nullptr ? *v : "(nil)"; }
std::string show(const std::pair<std::string, std::string>& p) { return p.first + "=" + p.second; }
template <class T>
std::string show(const std::vector<T>& v) {
  std::string s = "[";
  for (const auto& x : v) s += show(x) + " ";
  return s + "]";
}
template <class T>
std::string show(const Result<T>& r) {
  if (!r.ok()) return "error(" + show(r.error()) + ")";
  return show(*r);
}
std::string show(const Result<void>& r) { return r.ok() ? "ok" : "error(" + show(r.error()) + ")"; }
// A reply whose order is unspecified (HGETALL, HKEYS, HVALS), sorted.
template <class T>
std::string sorted(Result<std::vector<T>> r) {
  if (r.ok()) std::sort(r.value().begin(), r.value().end());
  return show(r);
}

// The events of a store, as text.
struct Log {
  std::vector<std::string> lines;
  template <class Ev>
  void add(const Ev& e) {
    std::string s = expiring::to_string(e.cause) + std::string(" ") + e.key;
    if (e.cause == KeyEventCause::hexpired && e.value != nullptr) {  // the reclaimed fields, sorted
      std::vector<std::string> f;
      for (const auto& x : *e.value) f.push_back(x.name + "=" + x.value);
      std::sort(f.begin(), f.end());
      for (const auto& x : f) s += " " + x;
    }
    lines.push_back(std::move(s));
  }
};

// ---- One random call, applied to any store of hashes -----------------------------------

struct Call {
  int op;
  std::string key;
  Names fields;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::int64_t t;
  ExpireFlags flags;
  std::int64_t delta;
};

Call random_call(std::mt19937_64& g, std::int64_t now) {
  auto pick = [&](std::uint64_t n) { return static_cast<std::int64_t>(g() % n); };
  Call c;
  c.op = static_cast<int>(pick(24));
  c.key = "h" + std::to_string(pick(6));
  const std::int64_t nf = 1 + pick(3);
  for (std::int64_t i = 0; i < nf; ++i) {
    std::string f = "f" + std::to_string(pick(8));
    c.fields.push_back(f);
    c.pairs.emplace_back(f, pick(4) == 0 ? std::string("x") : std::to_string(pick(100)));
  }
  switch (pick(8)) {  // a time argument: mostly near now, sometimes past, negative or huge
    case 0: c.t = -pick(5); break;
    case 1: c.t = kCap - pick(3); break;
    case 2: c.t = kCap + pick(3); break;
    default: c.t = pick(400); break;
  }
  const ExpireFlags all[] = {ExpireFlags::None, ExpireFlags::NX, ExpireFlags::XX, ExpireFlags::GT, ExpireFlags::LT,
                             ExpireFlags::XX | ExpireFlags::GT, ExpireFlags::NX | ExpireFlags::GT};
  c.flags = pick(3) == 0 ? all[pick(7)] : ExpireFlags::None;
  c.delta = pick(10) == 0 ? std::numeric_limits<std::int64_t>::max() : pick(21) - 10;
  (void)now;
  return c;
}

// A relative time in ms or s, or an absolute one near now.
std::int64_t abs_ms(const Call& c, std::int64_t now) { return c.t >= 0 && c.t < 1000 ? now + c.t - 100 : c.t; }

template <class S>
std::string apply(S& s, const Call& c, std::int64_t now) {
  using std::chrono::milliseconds;
  const std::string& f0 = c.fields.front();
  switch (c.op) {
    case 0: return show(s.hset(c.key, f0, c.pairs.front().second));
    case 1: return show(s.hset(c.key, c.pairs));
    case 2: return show(s.hsetnx(c.key, f0, c.pairs.front().second));
    case 3: return show(s.hget(c.key, f0));  // a pointer or an optional: the same text
    case 4: {
      if constexpr (std::is_same_v<S, Ref>) {
        std::vector<const std::string*> out(c.fields.size());
        auto r = s.hmget(c.key, c.fields, out.data());
        return show(r) + show(out);
      } else {
        std::vector<std::optional<std::string>> out(c.fields.size());
        auto r = s.hmget(c.key, c.fields, out.data());
        return show(r) + show(out);
      }
    }
    case 5: return show(s.hdel(c.key, c.fields));
    case 6: return show(s.hlen(c.key));
    case 7: return show(s.hexists(c.key, f0));
    case 8: return sorted(s.hgetall(c.key));
    case 9: return sorted(s.hkeys(c.key)) + sorted(s.hvals(c.key));
    case 10: return show(s.hincrby(c.key, f0, c.delta));
    case 11: return show(s.hexpire(c.key, c.t / 100, c.fields, c.flags));
    case 12: return show(s.hpexpire(c.key, c.t, c.fields, c.flags));
    case 13: return show(s.hexpireat(c.key, abs_ms(c, now) / 1000, c.fields, c.flags));
    case 14: return show(s.hpexpireat(c.key, abs_ms(c, now), c.fields, c.flags));
    case 15: {  // the array form
      std::vector<int> out(c.fields.size());
      const Result<void> r = s.hpexpire(c.key, c.t, c.fields, c.flags, out.data());
      return show(r) + (r.ok() ? show(out) : "");
    }
    case 16: return show(s.hpexpire(c.key, milliseconds(c.t), c.fields, c.flags));  // std::chrono
    case 17: return show(s.httl(c.key, c.fields)) + show(s.hpttl(c.key, c.fields));
    case 18: return show(s.hexpiretime(c.key, c.fields)) + show(s.hpexpiretime(c.key, c.fields));
    case 19: return show(s.hpersist(c.key, c.fields));
    case 20: return show(s.del(c.key));
    case 21: return show(s.pexpire(c.key, c.t));
    case 22: return show(s.pttl(c.key));
    default: {  // the braced-list forms
      const Result<std::size_t> a = s.hdel(c.key, {f0, "f9"});
      return show(a) + show(s.hpexpire(c.key, c.t, {f0})) + show(s.hset(c.key, {{f0, "b"}}));
    }
  }
}

// Every key's live fields with their deadlines, read as a client would (which reclaims).
template <class S>
std::string contents(S& s) {
  std::string out;
  for (int k = 0; k < 6; ++k) {
    const std::string key = "h" + std::to_string(k);
    auto all = s.hgetall(key);
    REQUIRE(all.ok());
    std::sort(all.value().begin(), all.value().end());
    Names names;
    for (const auto& p : *all) names.push_back(p.first);
    out += key + ": " + show(*all) + show(s.hpexpiretime(key, names)) + " ttl " + show(s.pttl(key)) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("concurrent hashes: every member answers as ExpiringStore's", "[concurrent][hashes]") {
  const bool ticks = GENERATE(false, true);
  const std::size_t n_shards = GENERATE(std::size_t{1}, std::size_t{4}, std::size_t{64});
  CAPTURE(ticks, n_shards);
  ManualClock clock{T0};
  Ref ref(clock, test_options(7));
  CStore con(clock, test_options(7), shards(n_shards));
  Log ref_log, con_log;
  ref.set_listener([&](const Ref::event_type& e) { ref_log.add(e); });
  con.set_listener([&](const CStore::event_type& e) { con_log.add(e); });
  std::mt19937_64 g(ticks ? 11 : 12);
  for (int step = 0; step < 6000; ++step) {
    const std::int64_t now = clock.now_ms();
    const Call c = random_call(g, now);
    CAPTURE(step, c.op, c.key, c.fields, c.t, static_cast<int>(c.flags));
    const std::string a = apply(ref, c, now);
    const std::string b = apply(con, c, now);
    REQUIRE(a == b);
    if (!ticks) {
      REQUIRE(ref_log.lines == con_log.lines);
    }
    ref_log.lines.clear();
    con_log.lines.clear();
    if (g() % 4 == 0) clock.advance(static_cast<std::int64_t>(g() % 60));
    if (ticks && g() % 8 == 0) {
      (void)ref.tick();
      (void)con.tick();
    }
  }
  REQUIRE(contents(ref) == contents(con));
  REQUIRE(ref.size() == con.size());
  const expiring::Stats rs = ref.stats(), cs = con.stats();
  CHECK(rs.expired_subkeys == cs.expired_subkeys);
  CHECK(rs.subexpiry == cs.subexpiry);
  CHECK(rs.keys == cs.keys);
  CHECK(rs.expires == cs.expires);
}

// A record as text: the op, the key, the field command and its fields (D32).
std::string record_text(const expiring::Change<std::string, FM>& c) {
  std::string s = expiring::to_string(c.op);
  if (c.key != nullptr) s += " " + *c.key;
  if (c.field_op != expiring::FieldOp::none) {
    s += std::string(" ") + expiring::to_string(c.field_op);
    Names names;
    for (std::uint32_t pos = 0; pos < c.fields->size(); ++pos) {
      names.push_back(c.fields->at(pos).name + "=" + c.fields->at(pos).value);
      if (c.fields->deadline(pos) != FM::kNoDeadline) names.back() += "@" + std::to_string(c.fields->deadline(pos));
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) s += " " + n;
  }
  return s;
}

// The field records a ConcurrentStore sends are ExpiringStore's for the same calls (MULTI and
// EXEC aside, which D34 lets differ), and a ConcurrentStore replica applying them stores the
// same hashes.
TEST_CASE("concurrent hashes: the change feed sends ExpiringStore's field records", "[concurrent][hashes][feed]") {
  const std::size_t n_shards = GENERATE(std::size_t{1}, std::size_t{4});
  CAPTURE(n_shards);
  ManualClock clock{T0};
  Ref ref(clock, test_options(7));
  CStore con(clock, test_options(7), shards(n_shards));
  expiring::Options ro = test_options(8);
  ro.replica = true;
  CStore replica(clock, ro, shards(n_shards));
  Names ref_log, con_log;
  std::vector<expiring::ChangeRecord<std::string, FM>> records;
  auto text = [](Names& log) {
    return [&log](const expiring::Change<std::string, FM>& c) {
      if (c.op != expiring::ChangeOp::multi && c.op != expiring::ChangeOp::exec) log.push_back(record_text(c));
    };
  };
  ref.set_change_feed(text(ref_log));
  con.set_change_feed([&](const expiring::Change<std::string, FM>& c) {
    text(con_log)(c);
    records.push_back(expiring::ChangeRecord<std::string, FM>::of(c));
  });
  std::mt19937_64 g(13);
  std::size_t field_records = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::int64_t now = clock.now_ms();
    const Call c = random_call(g, now);
    CAPTURE(step, c.op, c.key, c.fields, c.t, static_cast<int>(c.flags));
    REQUIRE(apply(ref, c, now) == apply(con, c, now));
    REQUIRE(ref_log == con_log);
    for (const std::string& l : con_log) field_records += l.find(" H") != std::string::npos ? 1 : 0;
    for (const auto& r : records) REQUIRE(replica.apply(r.view()).ok());
    ref_log.clear();
    con_log.clear();
    records.clear();
    if (g() % 4 == 0) clock.advance(static_cast<std::int64_t>(g() % 60));
  }
  CHECK(field_records > 1000);
  REQUIRE(contents(replica) == contents(con));
}

TEST_CASE("concurrent hashes: tick() reclaims due fields in every shard and reports them", "[concurrent][hashes]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(3), shards(8));
  std::mutex mu;
  std::vector<std::string> gone;  // "key field" of each reclaimed field
  s.set_listener(
      [&](const CStore::event_type& e) {
        std::lock_guard<std::mutex> g(mu);
        for (const auto& f : *e.value) gone.push_back(e.key + " " + f.name);
      },
      expiring::KeyEventCauses{KeyEventCause::hexpired});
  for (int k = 0; k < 40; ++k) {
    const std::string key = "k" + std::to_string(k);
    REQUIRE(s.hset(key, {{"due", "1"}, {"kept", "2"}}) == std::size_t{2});
    REQUIRE(s.hpexpire(key, 100, {"due"}) == std::vector<int>{FieldReply::set});
  }
  CHECK(s.stats().subexpiry == 40);
  clock.advance(101);
  expiring::TickReport total;
  for (int t = 0; t < 50 && total.fields_expired < 40; ++t) {
    const expiring::TickReport r = s.tick();
    total.fields_expired += r.fields_expired;
    CHECK(r.field_quota > 0);
  }
  CHECK(total.fields_expired == 40);
  CHECK(gone.size() == 40);
  const expiring::Stats st = s.stats();
  CHECK(st.expired_subkeys == 40);
  CHECK(st.subexpiry == 0);
  CHECK(st.keys == 40);
  for (int k = 0; k < 40; ++k) CHECK(s.hlen("k" + std::to_string(k)) == std::size_t{1});
}

TEST_CASE("concurrent hashes: a listener may call the store from a hash event", "[concurrent][hashes]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(5), shards(4));
  std::vector<std::string> seen;
  s.set_listener([&](const CStore::event_type& e) {
    if (e.cause == KeyEventCause::hset) {  // the shard's lock is not held: this does not deadlock
      const auto v = s.hget(e.key, "a");
      seen.push_back(v.ok() && *v ? **v : "(nil)");
      REQUIRE(s.hpexpire(e.key, 50, {"a"}).ok());
    }
  });
  REQUIRE(s.hset("k", "a", "1") == std::size_t{1});
  REQUIRE(s.hset("k", "a", "2") == std::size_t{0});
  CHECK(seen == std::vector<std::string>{"1", "2"});
  CHECK(s.hpttl("k", {"a"}) == std::vector<std::int64_t>{50});
  clock.advance(51);
  CHECK(s.hget("k", "a") == std::optional<std::string>());
  CHECK_FALSE(s.exists("k"));
}

TEST_CASE("concurrent hashes: hincrby from many threads loses no update", "[concurrent][hashes][threads]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(9), shards(4));
  const int threads = 4, per = scaled(20000, 2000);
  std::atomic<int> errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < per; ++i) {
        if (!s.hincrby("counter", "n", 1).ok()) ++errors;
        if (!s.hincrby("counter", "t" + std::to_string(t), 1).ok()) ++errors;
      }
    });
  }
  for (auto& th : ts) th.join();
  CHECK(errors == 0);
  CHECK(s.hget("counter", "n") == std::optional<std::string>(std::to_string(threads * per)));
  for (int t = 0; t < threads; ++t) CHECK(s.hget("counter", "t" + std::to_string(t)) == std::optional<std::string>(std::to_string(per)));
}

TEST_CASE("concurrent hashes: writers, readers, a clock and a ticker at once", "[concurrent][hashes][threads]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(13), shards(8));
  std::atomic<bool> stop{false};
  std::atomic<long> events{0};
  s.set_listener([&](const CStore::event_type&) { events.fetch_add(1, std::memory_order_relaxed); });
  const int per = scaled(20000, 2000);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 g(static_cast<std::uint64_t>(t) + 1);
      for (int i = 0; i < per; ++i) {
        const std::string key = "k" + std::to_string(g() % 16);
        const std::string f = "f" + std::to_string(g() % 8);
        switch (g() % 6) {
          case 0: if (!s.hset(key, f, std::to_string(i)).ok()) ++bad; break;
          case 1: {
            const auto r = s.hpexpire(key, static_cast<std::int64_t>(g() % 20), {f});
            if (!r.ok() || r->size() != 1) ++bad;
            break;
          }
          case 2: {
            const auto r = s.hget(key, f);  // a value any writer wrote: digits
            if (!r.ok() || (*r && (*r)->find_first_not_of("0123456789") != std::string::npos)) ++bad;
            break;
          }
          case 3: if (!s.hdel(key, {f}).ok()) ++bad; break;
          case 4: {
            const auto all = s.hgetall(key);
            if (!all.ok() || all->size() > 8) ++bad;
            break;
          }
          default: {
            const auto r = s.httl(key, {f, "f0"});
            if (!r.ok() || r->size() != 2) ++bad;
            break;
          }
        }
      }
    });
  }
  std::thread ticker([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!stop.load() && std::chrono::steady_clock::now() < end) {
      clock.advance(1);
      (void)s.tick();
      std::this_thread::yield();
    }
  });
  for (auto& th : ts) th.join();
  stop = true;
  ticker.join();
  CHECK(bad == 0);
  CHECK(events.load() > 0);
  // Consistent afterwards: every key answers, no field outlives its deadline, and the
  // statistics agree with a full read.
  clock.advance(100);
  for (int k = 0; k < 16; ++k) {
    const std::string key = "k" + std::to_string(k);
    const auto all = s.hgetall(key);
    REQUIRE(all.ok());
    for (const auto& p : *all) {
      const auto t = s.hpttl(key, {p.first});
      REQUIRE(t.ok());
      CHECK((*t)[0] == FieldReply::no_ttl);  // every TTL given was below 100 ms: those went
    }
  }
  CHECK(s.stats().subexpiry == 0);
}
