// tests/test_concurrent.cpp: ConcurrentStore (include/expiring/concurrent_store.hpp).
//
// * Equivalence: one thread drives an ExpiringStore and ConcurrentStores of 1, 4 and 64 shards
//   on one ManualClock with the same random operations; replies, per-key events, sizes and
//   statistics must be identical.
// * Linearizability: threads run single-key operations on a few keys with a frozen clock; each
//   key's recorded history must be explained by a sequential register-with-delete in an order
//   that respects real time (a Wing & Gong search with memoization). The checker is first
//   shown to reject hand-made non-linearizable histories.
// * A lock lease (SET NX PX, renewal by pexpireat_if_equal, release by del_if_equal), single-
//   flight get_or_load and get_or_load_async, event order and re-entrant listeners, the
//   Expirer thread, and a stress test where each thread checks its own keys against its own
//   sequential model.
//
// Catch2 v2's assertions are not thread-safe: worker threads only record what they saw, and
// the test's own thread checks it afterwards. Every loop is bounded in iterations and in time.
#include <expiring/concurrent_store.hpp>
#include <expiring/expiring.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"
#include "test_concurrent_support.hpp"
#include "test_results.hpp"
#include "test_tsan.hpp"

namespace {

using expiring::Computed;
using expiring::CycleKind;
using expiring::Errc;
using expiring::ExpireFlags;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;
using expiring::Result;
using expiring::SetCond;
using expiring::SetExpiry;
using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;
using concurrent_test::scaled;
using concurrent_test::shards;
using concurrent_test::T0;
using concurrent_test::test_options;

using Engine = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                       ManualClock&, TestPolicy>;
using CStore = expiring::ConcurrentStore<std::string, std::string, ManualClock, TestPolicy>;

// Waits (sleeping 1 ms at a time) until pred() or `limit` has passed; returns pred().
template <class Pred>
bool wait_until(Pred pred, milliseconds limit) {
  const auto end = Steady::now() + limit;
  while (!pred()) {
    if (Steady::now() >= end) return pred();
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// A start line for threads: each spins (yielding, at most `limit`) until all have arrived.
class StartLine {
 public:
  explicit StartLine(int n) : n_(n) {}
  void arrive_and_wait(milliseconds limit = milliseconds(10'000)) {
    arrived_.fetch_add(1);
    const auto end = Steady::now() + limit;
    while (arrived_.load() < n_ && Steady::now() < end) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> arrived_{0};
};

// Runs fn on its own thread and waits at most `limit` for it. A thread that does not finish
// in time is detached (everything it uses must be owned by the shared state it captured) and
// the result is false: the caller fails the test.
bool finishes_within(std::function<void()> fn, milliseconds limit) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  std::thread t([fn = std::move(fn), done] {
    fn();
    done->set_value();
  });
  if (f.wait_for(limit) != std::future_status::ready) {
    t.detach();
    return false;
  }
  t.join();
  return true;
}

std::string show(const std::optional<std::string>& o) { return o ? "\"" + *o + "\"" : std::string("(nil)"); }
std::string show(bool b) { return b ? "true" : "false"; }
std::string show(std::int64_t v) { return std::to_string(v); }
template <class T>
std::string show(const Result<T>& r) {
  return r.ok() ? show(r.value()) : std::string("error(") + expiring::to_string(r.error()) + ")";
}
std::string show(const Result<void>& r) {
  return r.ok() ? std::string("ok") : std::string("error(") + expiring::to_string(r.error()) + ")";
}

// One delivered event, owned.
struct Ev {
  KeyEventCause cause;
  std::string key;
  std::optional<std::string> value;
  bool operator==(const Ev& o) const { return cause == o.cause && key == o.key && value == o.value; }
};
std::string show(const std::vector<Ev>& evs) {
  std::string s = "[";
  for (const Ev& e : evs) s += std::string(" ") + expiring::to_string(e.cause) + ":" + e.key + "=" + show(e.value);
  return s + " ]";
}
// Events grouped by key, each key's in delivery order.
std::map<std::string, std::vector<Ev>> by_key(const std::vector<Ev>& evs) {
  std::map<std::string, std::vector<Ev>> m;
  for (const Ev& e : evs) m[e.key].push_back(e);
  return m;
}
// Checks that key k's delivered events are `rounds` times (set, expire, del of value_of(i)),
// in that order: a key set, given a TTL, then deleted (the del event carries the value).
template <class ValueOf>
void check_set_expire_del(const std::map<std::string, std::vector<Ev>>& per_key, const std::string& k, int rounds,
                          ValueOf value_of) {
  std::vector<Ev> want;
  for (int i = 0; i < rounds; ++i) {
    want.push_back(Ev{KeyEventCause::set, k, std::nullopt});
    want.push_back(Ev{KeyEventCause::expire, k, std::nullopt});
    want.push_back(Ev{KeyEventCause::del, k, value_of(i)});
  }
  CAPTURE(k);
  const auto it = per_key.find(k);
  REQUIRE(it != per_key.end());
  CHECK(it->second == want);
}

// =============================================================================================
// 1a. Single-threaded equivalence with ExpiringStore
// =============================================================================================

class Equivalence {
 public:
  Equivalence(std::uint64_t seed, std::size_t shard_count)
      : seed_(seed),
        rng_(seed),
        clock_(T0),
        engine_(clock_, test_options(seed)),
        conc_(clock_, test_options(seed), shards(shard_count)) {
    for (int i = 0; i < 23; ++i) keys_.push_back("key:" + std::to_string(i));
    keys_.push_back("");  // the empty key is a key too
    engine_.set_listener([this](const Engine::event_type& ev) {
      engine_events_.push_back(Ev{ev.cause, ev.key, ev.value ? std::optional<std::string>(*ev.value) : std::nullopt});
    });
    conc_.set_listener([this](const CStore::event_type& ev) {
      conc_events_.push_back(Ev{ev.cause, ev.key, ev.value ? std::optional<std::string>(*ev.value) : std::nullopt});
    });
  }

  void run(int ops) {
    for (op_ = 0; op_ < ops; ++op_) {
      engine_events_.clear();
      conc_events_.clear();
      what_.clear();
      step();
      compare_after_op();
    }
  }
  std::uint64_t events_seen() const { return events_total_; }
  std::uint64_t nontrivial_compute() const { return compute_changed_; }
  std::uint64_t lease_ops_true() const { return if_equal_true_; }

 private:
  std::uint64_t rnd(std::uint64_t n) { return rng_() % n; }
  std::int64_t rnd_range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rnd(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  bool chance(int percent) { return rnd(100) < static_cast<std::uint64_t>(percent); }
  const std::string& any_key() { return keys_[static_cast<std::size_t>(rnd(keys_.size()))]; }
  std::string new_value() { return "v" + std::to_string(++values_); }
  // A value the key may hold: its current one (read quietly from the engine) or another.
  std::string maybe_current(const std::string& k) {
    const std::string* p = engine_.peek(k);
    if (p != nullptr && chance(70)) return *p;
    return chance(50) ? "v" + std::to_string(rnd_range(1, static_cast<std::int64_t>(values_) + 1)) : "nope";
  }

  std::int64_t now() const { return clock_.now_ms(); }
  // A relative or absolute time argument: mostly near now, sometimes invalid or past.
  std::int64_t rel_ms() {
    const int r = static_cast<int>(rnd(10));
    if (r < 7) return rnd_range(1, 3000);
    if (r < 9) return rnd_range(-100, 0);
    return chance(50) ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  }
  std::int64_t abs_ms() { return now() + rnd_range(-500, 3000); }
  SetExpiry set_expiry() {
    switch (rnd(7)) {
      case 0: return {};
      case 1: return expiring::Px{rel_ms()};
      case 2: return expiring::Ex{rnd_range(-1, 3)};
      case 3: return expiring::PxAt{abs_ms()};
      case 4: return expiring::ExAt{abs_ms() / 1000};
      case 5: return expiring::KeepTtl{};
      default: return expiring::Px{rnd_range(1, 200)};
    }
  }
  expiring::GetExExpiry getex_expiry() {
    switch (rnd(6)) {
      case 0: return {};
      case 1: return expiring::Px{rel_ms()};
      case 2: return expiring::Ex{rnd_range(-1, 3)};
      case 3: return expiring::PxAt{abs_ms()};
      case 4: return expiring::ExAt{abs_ms() / 1000};
      default: return expiring::Persist{};
    }
  }
  SetCond cond() {
    const int r = static_cast<int>(rnd(10));
    return r < 6 ? SetCond::Always : (r < 8 ? SetCond::NX : SetCond::XX);
  }
  ExpireFlags flags() {
    if (chance(80)) {
      const ExpireFlags valid[] = {ExpireFlags::None, ExpireFlags::NX, ExpireFlags::XX, ExpireFlags::GT,
                                   ExpireFlags::LT, ExpireFlags::XX | ExpireFlags::GT, ExpireFlags::XX | ExpireFlags::LT};
      return valid[rnd(7)];
    }
    return static_cast<ExpireFlags>(rnd(16));  // invalid combinations included
  }

  std::string context() const {
    std::ostringstream os;
    os << "seed " << seed_ << ", shards " << conc_.shard_count() << ", op " << op_ << " (" << what_ << "), now "
       << clock_.now_ms();
    return os.str();
  }
  template <class A>
  void expect_same(const A& from_engine, const A& from_conc) {
    if (!same(from_engine, from_conc)) {
      FAIL(context() << ": ExpiringStore " << show(from_engine) << ", ConcurrentStore " << show(from_conc));
    }
  }
  template <class A>
  void expect_eq(const A& from_engine, const A& from_conc, const char* what) {
    if (!(from_engine == from_conc)) {
      FAIL(context() << ": " << what << ": ExpiringStore " << show(from_engine) << ", ConcurrentStore "
                     << show(from_conc));
    }
  }

  void step() {
    const int r = static_cast<int>(rnd(100));
    const std::string& k = any_key();
    what_ = k;
    if (r < 14) {  // SET [NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL]
      const std::string v = new_value();
      const SetExpiry e = set_expiry();
      const SetCond c = cond();
      if (chance(30)) {
        what_ = "SET GET " + k;
        expect_same(engine_.set_get(k, v, e, c), conc_.set_get(k, v, e, c));
      } else {
        what_ = "SET " + k;
        expect_same(engine_.set(k, v, e, c), conc_.set(k, v, e, c));
      }
    } else if (r < 17) {
      const std::string v = new_value();
      const int which = static_cast<int>(rnd(3));
      const std::int64_t t = rnd_range(-1, 3000);
      if (which == 0) {
        what_ = "SETNX " + k;
        expect_eq(engine_.setnx(k, v), conc_.setnx(k, v), "setnx");
      } else if (which == 1) {
        what_ = "PSETEX " + k;
        expect_same(engine_.psetex(k, t, v), conc_.psetex(k, t, v));
      } else {
        what_ = "SETEX " + k;
        expect_same(engine_.setex(k, t / 1000, v), conc_.setex(k, t / 1000, v));
      }
    } else if (r < 27) {
      what_ = "GET " + k;
      const std::string* p = engine_.get(k);
      const std::optional<std::string> want = p ? std::optional<std::string>(*p) : std::nullopt;
      if (chance(30)) {
        std::optional<std::string> seen;
        const bool hit = conc_.visit(k, [&](const std::string& v) { seen = v; });
        expect_eq(want.has_value(), hit, "visit's return");
        expect_eq(want, seen, "visit");
      } else {
        expect_eq(want, conc_.get(k), "get");
      }
    } else if (r < 33) {
      const bool unlink = chance(30);
      what_ = (unlink ? "UNLINK " : "DEL ") + k;
      expect_eq(unlink ? engine_.unlink(k) : engine_.del(k), unlink ? conc_.unlink(k) : conc_.del(k), "del");
    } else if (r < 43) {
      const int which = static_cast<int>(rnd(4));
      const ExpireFlags f = flags();
      static const char* const names[] = {"EXPIRE ", "PEXPIRE ", "EXPIREAT ", "PEXPIREAT "};
      what_ = names[which] + k;
      switch (which) {
        case 0: {
          const std::int64_t s = rnd_range(-1, 4);
          expect_same(engine_.expire(k, s, f), conc_.expire(k, s, f));
          break;
        }
        case 1: {
          const std::int64_t ms = rel_ms();
          expect_same(engine_.pexpire(k, ms, f), conc_.pexpire(k, ms, f));
          break;
        }
        case 2: {
          const std::int64_t s = abs_ms() / 1000;
          expect_same(engine_.expireat(k, s, f), conc_.expireat(k, s, f));
          break;
        }
        default: {
          const std::int64_t ms = abs_ms();
          expect_same(engine_.pexpireat(k, ms, f), conc_.pexpireat(k, ms, f));
          break;
        }
      }
    } else if (r < 46) {
      what_ = "PERSIST " + k;
      expect_eq(engine_.persist(k), conc_.persist(k), "persist");
    } else if (r < 53) {
      const int which = static_cast<int>(rnd(4));
      static const char* const names[] = {"TTL ", "PTTL ", "EXPIRETIME ", "PEXPIRETIME "};
      what_ = names[which] + k;
      switch (which) {
        case 0: expect_eq(engine_.ttl(k), conc_.ttl(k), "ttl"); break;
        case 1: expect_eq(engine_.pttl(k), conc_.pttl(k), "pttl"); break;
        case 2: expect_eq(engine_.expiretime(k), conc_.expiretime(k), "expiretime"); break;
        default: expect_eq(engine_.pexpiretime(k), conc_.pexpiretime(k), "pexpiretime"); break;
      }
    } else if (r < 58) {
      what_ = "GETEX " + k;
      const expiring::GetExExpiry o = getex_expiry();
      expect_same(engine_.getex(k, o), conc_.getex(k, o));
    } else if (r < 62) {
      what_ = "GETDEL " + k;
      expect_eq(engine_.getdel(k), conc_.getdel(k), "getdel");
    } else if (r < 66) {
      const bool touch = chance(30);
      what_ = (touch ? "TOUCH " : "EXISTS ") + k;
      expect_eq(touch ? engine_.touch(k) : engine_.exists(k), touch ? conc_.touch(k) : conc_.exists(k), "exists");
    } else if (r < 74) {
      op_compute(k);
    } else if (r < 79) {
      const std::string expected = maybe_current(k);
      const std::int64_t when = chance(85) ? abs_ms() : rnd_range(-5, 5);
      const ExpireFlags f = flags();
      what_ = "PEXPIREAT_IF_EQUAL " + k + " " + expected + " " + std::to_string(when);
      const Result<bool> a = engine_.pexpireat_if_equal(k, expected, when, f);
      expect_same(a, conc_.pexpireat_if_equal(k, expected, when, f));
      if (a.ok() && *a) ++if_equal_true_;
    } else if (r < 84) {
      const std::string expected = maybe_current(k);
      what_ = "DEL_IF_EQUAL " + k + " " + expected;
      const bool a = engine_.del_if_equal(k, expected);
      expect_eq(a, conc_.del_if_equal(k, expected), "del_if_equal");
      if (a) ++if_equal_true_;
    } else if (r < 86) {
      what_ = "MODIFY " + k;
      auto fn = [](std::string& v) { v += "+"; };
      expect_eq(engine_.modify(k, fn), conc_.modify(k, fn), "modify");
    } else if (r < 96) {
      const std::int64_t d = chance(80) ? rnd_range(0, 400) : (chance(70) ? rnd_range(1000, 4000) : -rnd_range(0, 50));
      what_ = "CLOCK ADVANCE " + std::to_string(d);
      clock_.advance(d);
    } else {
      op_tick();
    }
  }

  // compute() with a function that decides from what it sees; both stores must show it the
  // same value and deadline.
  void op_compute(const std::string& k) {
    const int decision = static_cast<int>(rnd(5));
    const std::string v = new_value();
    const SetExpiry ttl = set_expiry();
    const SetExpiry retime_ttl = chance(20) ? SetExpiry{} : set_expiry();
    what_ = "COMPUTE " + k + " decision " + std::to_string(decision);
    std::vector<std::pair<std::optional<std::string>, std::int64_t>> seen_e, seen_c;
    auto make_fn = [&](std::vector<std::pair<std::optional<std::string>, std::int64_t>>& seen) {
      return [&seen, decision, v, ttl, retime_ttl](const std::string* cur, std::int64_t pexp) -> Computed<std::string> {
        seen.emplace_back(cur ? std::optional<std::string>(*cur) : std::nullopt, pexp);
        switch (decision) {
          case 0: return Computed<std::string>::keep();
          case 1: return Computed<std::string>::remove();
          case 2: return Computed<std::string>::store(cur ? *cur + "|" + v : v, ttl);
          case 3: return Computed<std::string>::retime(retime_ttl);
          default: return cur ? Computed<std::string>::store(*cur + "*") : Computed<std::string>::keep();
        }
      };
    };
    const Result<bool> a = engine_.compute(k, make_fn(seen_e));
    const Result<bool> b = conc_.compute(k, make_fn(seen_c));
    expect_same(a, b);
    if (seen_e != seen_c || seen_e.size() != 1) FAIL(context() << ": compute's function saw different inputs");
    if (a.ok() && *a) ++compute_changed_;
  }

  // tick() reclaims different keys in the two (the shards sample on their own), so each store
  // then looks up every key: together they must reclaim the same stale keys with the same
  // values, and leave the same statistics.
  void op_tick() {
    const CycleKind kind = chance(60) ? CycleKind::Slow : CycleKind::Fast;
    what_ = "TICK + lookup of every key";
    const expiring::TickReport a = engine_.tick(kind);
    const expiring::TickReport b = conc_.tick(kind);
    if (a.sampled < a.expired || b.sampled < b.expired) FAIL(context() << ": tick expired more than it sampled");
    for (const std::string& k : keys_) {
      expect_eq(engine_.exists(k), conc_.exists(k), "exists after tick");
    }
    for (const Ev& e : engine_events_) {
      if (e.cause != KeyEventCause::expired) FAIL(context() << ": tick + lookups raised " << show(engine_events_));
    }
  }

  void compare_after_op() {
    const auto ea = by_key(engine_events_);
    const auto eb = by_key(conc_events_);
    if (ea != eb) {
      FAIL(context() << ": events: ExpiringStore " << show(engine_events_) << ", ConcurrentStore "
                     << show(conc_events_));
    }
    events_total_ += engine_events_.size();
    if (engine_.size() != conc_.size() || engine_.expires_size() != conc_.expires_size()) {
      FAIL(context() << ": size " << engine_.size() << "/" << conc_.size() << ", expires_size "
                     << engine_.expires_size() << "/" << conc_.expires_size());
    }
    const expiring::Stats sa = engine_.stats();
    const expiring::Stats sb = conc_.stats();
    if (sa.keyspace_hits != sb.keyspace_hits || sa.keyspace_misses != sb.keyspace_misses ||
        sa.expired_keys != sb.expired_keys || sa.keys != sb.keys || sa.expires != sb.expires) {
      FAIL(context() << ": stats differ: hits " << sa.keyspace_hits << "/" << sb.keyspace_hits << ", misses "
                     << sa.keyspace_misses << "/" << sb.keyspace_misses << ", expired_keys " << sa.expired_keys
                     << "/" << sb.expired_keys);
    }
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  Engine engine_;
  CStore conc_;
  std::vector<std::string> keys_;
  std::vector<Ev> engine_events_, conc_events_;
  std::string what_;
  int op_ = 0;
  std::uint64_t values_ = 0;
  std::uint64_t events_total_ = 0;
  std::uint64_t compute_changed_ = 0;
  std::uint64_t if_equal_true_ = 0;
};

}  // namespace

TEST_CASE("concurrent: one thread sees the same replies and events as ExpiringStore", "[concurrent]") {
  const int ops = scaled(15'000, 3'000);
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{64}}) {
    for (const std::uint64_t seed : {1ull, 2ull, 77ull}) {
      CAPTURE(n, seed);
      Equivalence eq(seed, n);
      eq.run(ops);
      // The run exercised what it claims to.
      CHECK(eq.events_seen() > static_cast<std::uint64_t>(ops) / 4);
      CHECK(eq.nontrivial_compute() > 0);
      CHECK(eq.lease_ops_true() > 0);
    }
  }
}

TEST_CASE("concurrent: shard_count is the requested count rounded up to a power of two", "[concurrent]") {
  ManualClock clock(T0);
  CHECK(CStore(clock, {}, shards(1)).shard_count() == 1);
  CHECK(CStore(clock, {}, shards(3)).shard_count() == 4);
  CHECK(CStore(clock, {}, shards(64)).shard_count() == 64);
  CHECK(CStore(clock, {}, shards(65)).shard_count() == 128);
  const std::size_t dflt = CStore(clock).shard_count();
  CHECK(dflt >= 4);
  CHECK(dflt <= 1024);
  CHECK((dflt & (dflt - 1)) == 0);
}

// =============================================================================================
// 1b. Linearizability of per-key histories
// =============================================================================================

namespace lin {

// The operations: a register that may hold a value (a unique id) or nothing.
enum class Op : std::uint8_t { set, set_nx, get, del, pexpire };
constexpr std::int64_t kNone = -1;

struct Call {
  Op op;
  std::int64_t arg;     // the id written (set, set_nx)
  std::int64_t result;  // get: the id or kNone; the others: 0 or 1
  std::uint64_t invoked;
  std::uint64_t responded;
};

// Applies `c` to `state`; false if its recorded result is not what the register gives.
bool apply(const Call& c, std::int64_t& state) {
  switch (c.op) {
    case Op::set:
      if (c.result != 1) return false;
      state = c.arg;
      return true;
    case Op::set_nx:
      if (c.result != (state == kNone ? 1 : 0)) return false;
      if (state == kNone) state = c.arg;
      return true;
    case Op::get: return c.result == state;
    case Op::del:
      if (c.result != (state != kNone ? 1 : 0)) return false;
      state = kNone;
      return true;
    case Op::pexpire: return c.result == (state != kNone ? 1 : 0);  // the deadline is far away
  }
  return false;
}

// Whether some order of `history` that respects real time (a call that responded before
// another was invoked comes first) explains every result from an empty register. Wing &
// Gong's search: at each step try each call that no pending call precedes; memoize the
// (linearized set, state) pairs already explored. `budget` bounds the explored states.
class Checker {
 public:
  explicit Checker(std::vector<Call> history) : h_(std::move(history)) {
    std::sort(h_.begin(), h_.end(), [](const Call& a, const Call& b) { return a.invoked < b.invoked; });
    done_.assign((h_.size() + 63) / 64, 0);
  }
  // true: linearizable; false: not; nullopt: the budget ran out.
  std::optional<bool> check(std::uint64_t budget = 2'000'000) {
    budget_ = budget;
    exhausted_ = false;
    const bool ok = search(0, kNone);
    if (exhausted_) return std::nullopt;
    return ok;
  }
  std::uint64_t explored() const { return explored_; }

 private:
  bool is_done(std::size_t i) const { return (done_[i / 64] >> (i % 64)) & 1u; }
  void flip(std::size_t i) { done_[i / 64] ^= std::uint64_t{1} << (i % 64); }

  bool search(std::size_t linearized, std::int64_t state) {
    if (linearized == h_.size()) return true;
    std::string memo(reinterpret_cast<const char*>(done_.data()), done_.size() * sizeof(std::uint64_t));
    memo.append(reinterpret_cast<const char*>(&state), sizeof state);
    if (!seen_.insert(std::move(memo)).second) return false;
    if (++explored_ > budget_) {
      exhausted_ = true;
      return false;
    }
    // The first pending call, and the earliest response among pending calls: only calls
    // invoked before that response may go next.
    std::size_t first = 0;
    while (is_done(first)) ++first;
    std::uint64_t min_resp = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = first; i < h_.size() && h_[i].invoked < min_resp; ++i) {
      if (!is_done(i)) min_resp = std::min(min_resp, h_[i].responded);
    }
    for (std::size_t i = first; i < h_.size() && h_[i].invoked < min_resp; ++i) {
      if (is_done(i)) continue;
      std::int64_t next = state;
      if (!apply(h_[i], next)) continue;
      flip(i);
      const bool ok = search(linearized + 1, next);
      flip(i);
      if (ok || exhausted_) return ok;
    }
    return false;
  }

  std::vector<Call> h_;
  std::vector<std::uint64_t> done_;
  std::unordered_set<std::string> seen_;
  std::uint64_t budget_ = 0;
  std::uint64_t explored_ = 0;
  bool exhausted_ = false;
};

Call call(Op op, std::int64_t arg, std::int64_t result, std::uint64_t invoked, std::uint64_t responded) {
  return Call{op, arg, result, invoked, responded};
}

}  // namespace lin

TEST_CASE("concurrent: the linearizability checker rejects non-linearizable histories", "[concurrent]") {
  using lin::call;
  using lin::Op;
  using H = std::vector<lin::Call>;
  // Accepted: sequential and overlapping histories a register can explain.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 1), call(Op::get, 0, 1, 2, 3)}).check() == true);
  // A get overlapping a set may see either the old value or the new one, and two gets that
  // overlap it may disagree, if the one that saw the new value is not followed by the other.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 10), call(Op::get, 0, 1, 1, 2), call(Op::get, 0, lin::kNone, 3, 4)})
            .check() == false);
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 10), call(Op::get, 0, lin::kNone, 1, 2), call(Op::get, 0, 1, 3, 4)})
            .check() == true);
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 10), call(Op::get, 0, 1, 1, 5), call(Op::get, 0, lin::kNone, 2, 6)})
            .check() == true);
  // Rejected: a completed write that a later read does not see.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 1), call(Op::get, 0, lin::kNone, 2, 3)}).check() == false);
  // Two completed writes, then a read of the older one.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 1), call(Op::set, 2, 1, 2, 3), call(Op::get, 0, 1, 4, 5)}).check() ==
        false);
  // A value nobody wrote.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 1), call(Op::get, 0, 7, 2, 3)}).check() == false);
  // Two overlapping SET NX on an empty key both winning.
  CHECK(lin::Checker(H{call(Op::set_nx, 1, 1, 0, 5), call(Op::set_nx, 2, 1, 1, 6)}).check() == false);
  CHECK(lin::Checker(H{call(Op::set_nx, 1, 1, 0, 5), call(Op::set_nx, 2, 0, 1, 6)}).check() == true);
  // A delete that reports a removal, then one that also does, with no write in between.
  CHECK(lin::Checker(H{call(Op::set, 1, 1, 0, 1), call(Op::del, 0, 1, 2, 3), call(Op::del, 0, 1, 4, 5)}).check() ==
        false);
  // A larger overlapping history: 3 "threads" of 40 calls each whose last read contradicts a
  // write that completed before it, hidden among valid overlaps.
  {
    H h;
    std::uint64_t t = 0;
    std::int64_t id = 1;
    for (int round = 0; round < 40; ++round) {
      const std::uint64_t base = t;
      h.push_back(call(Op::set, id, 1, base, base + 4));
      h.push_back(call(Op::get, 0, id, base + 1, base + 5));  // overlaps the set: sees it
      h.push_back(call(Op::pexpire, 0, 1, base + 2, base + 6));
      ++id;
      t += 7;
    }
    CHECK(lin::Checker(h).check() == true);
    h.push_back(call(Op::get, 0, 5, t + 1, t + 2));  // long after id 40 was written
    CHECK(lin::Checker(h).check() == false);
  }
}

// Runs 4 threads of random single-key calls on 8 keys of `store` (key_of(i) names key i,
// value_of(id) and id_of(value) convert the ids written) and checks each key's history.
template <class S, class KeyOf, class ValueOf, class IdOf>
void check_per_key_histories(S& store, KeyOf key_of, ValueOf value_of, IdOf id_of) {
  constexpr int kThreads = 4;
  constexpr int kKeys = 8;
  const int per_thread = scaled(600, 400);  // about 300 (200) calls per key
  std::atomic<std::uint64_t> ticks{0};      // the global order of invocations and responses
  std::vector<std::vector<std::pair<int, lin::Call>>> logs(kThreads);
  StartLine start(kThreads);
  std::vector<std::thread> threads;
  const auto deadline = Steady::now() + std::chrono::seconds(20);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(1000 + t));
      auto& log = logs[static_cast<std::size_t>(t)];
      log.reserve(static_cast<std::size_t>(per_thread));
      start.arrive_and_wait();
      for (int i = 0; i < per_thread && Steady::now() < deadline; ++i) {
        const int key = static_cast<int>(rng() % kKeys);
        const auto k = key_of(key);
        const std::int64_t id = static_cast<std::int64_t>(t) * 1'000'000 + i + 1;
        const int r = static_cast<int>(rng() % 100);
        lin::Call c{};
        c.op = r < 30 ? lin::Op::set : r < 45 ? lin::Op::set_nx : r < 75 ? lin::Op::get : r < 90 ? lin::Op::del : lin::Op::pexpire;
        c.arg = id;
        c.invoked = ticks.fetch_add(1);
        switch (c.op) {
          case lin::Op::set: {
            const Result<bool> w = store.set(k, value_of(id));
            c.result = w.ok() && *w ? 1 : 0;
            break;
          }
          case lin::Op::set_nx: {
            const Result<bool> w = store.set(k, value_of(id), SetCond::NX);
            c.result = !w.ok() ? 2 : (*w ? 1 : 0);
            break;
          }
          case lin::Op::get: {
            const auto v = store.get(k);
            c.result = v ? id_of(*v) : lin::kNone;
            break;
          }
          case lin::Op::del: c.result = store.del(k) ? 1 : 0; break;
          case lin::Op::pexpire: {
            const Result<bool> w = store.pexpire(k, 3'600'000);  // an hour: never reached
            c.result = !w.ok() ? 2 : (*w ? 1 : 0);
            break;
          }
        }
        c.responded = ticks.fetch_add(1);
        log.emplace_back(key, c);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<std::vector<lin::Call>> per_key(kKeys);
  std::size_t total = 0;
  for (const auto& log : logs) {
    for (const auto& [key, c] : log) per_key[static_cast<std::size_t>(key)].push_back(c);
    total += log.size();
  }
  REQUIRE(total == static_cast<std::size_t>(kThreads * per_thread));  // none cut short by the deadline
  for (int key = 0; key < kKeys; ++key) {
    CAPTURE(key, per_key[static_cast<std::size_t>(key)].size());
    lin::Checker checker(per_key[static_cast<std::size_t>(key)]);
    const std::optional<bool> ok = checker.check();
    REQUIRE(ok.has_value());  // the search finished within its budget
    CHECK(*ok);
  }
}

TEST_CASE("concurrent: per-key histories of 4 threads are linearizable", "[concurrent]") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}}) {
    CAPTURE(n);
    ManualClock clock(T0);  // frozen: nothing expires during the run
    CStore store(clock, test_options(9), shards(n));
    check_per_key_histories(
        store, [](int key) { return "lin:" + std::to_string(key); }, [](std::int64_t id) { return std::to_string(id); },
        [](const std::string& v) { return static_cast<std::int64_t>(std::stoll(v)); });
  }
}

TEST_CASE("concurrent: per-key histories with optimistic reads (u64 keys and values) are linearizable",
          "[concurrent]") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}}) {
    for (const bool optimistic : {true, false}) {
      CAPTURE(n, optimistic);
      ManualClock clock(T0);
      expiring::ConcurrentStore<std::uint64_t, std::uint64_t, ManualClock, TestPolicy> store(
          clock, test_options(9), expiring::ConcurrencyOptions{n, optimistic});
      check_per_key_histories(
          store, [](int key) { return static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull; },
          [](std::int64_t id) { return static_cast<std::uint64_t>(id); },
          [](std::uint64_t v) { return static_cast<std::int64_t>(v); });
    }
  }
}

// =============================================================================================
// 1c. A lock lease
// =============================================================================================

TEST_CASE("concurrent: a lock lease by SET NX PX, pexpireat_if_equal and del_if_equal", "[concurrent]") {
  constexpr int kThreads = 8;
  const int attempts = scaled(400, 250);
  ManualClock clock(T0);  // frozen: a lease never expires under its holder
  CStore store(clock, test_options(3), shards(4));
  const std::string lease = "lease";
  std::atomic<int> in_cs{0};
  std::atomic<int> max_in_cs{0};
  std::atomic<int> acquisitions{0};
  std::atomic<int> bad_renewals{0};       // a holder's renewal that failed
  std::atomic<int> bad_releases{0};       // a holder's release that failed
  std::atomic<int> foreign_successes{0};  // a non-holder's renewal or release that succeeded
  std::atomic<int> errors{0};
  StartLine start(kThreads);
  const auto deadline = Steady::now() + std::chrono::seconds(20);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      std::string last_token;  // the token of this thread's previous, released lease
      for (int i = 0; i < attempts && Steady::now() < deadline; ++i) {
        const std::string token = "t" + std::to_string(t) + "-" + std::to_string(i);
        const Result<bool> got = store.set(lease, token, expiring::Px{10'000}, SetCond::NX);
        if (!got.ok()) {
          ++errors;
          continue;
        }
        if (!*got) {
          // Not the holder: neither this attempt's token nor the last released one may renew or
          // release the lease.
          const Result<bool> renew = store.pexpireat_if_equal(lease, token, T0 + 50'000);
          if (!renew.ok() || *renew) ++foreign_successes;
          if (store.del_if_equal(lease, token)) ++foreign_successes;
          if (!last_token.empty() && store.del_if_equal(lease, last_token)) ++foreign_successes;
          std::this_thread::yield();
          continue;
        }
        ++acquisitions;
        const int inside = in_cs.fetch_add(1) + 1;
        int seen = max_in_cs.load();
        while (inside > seen && !max_in_cs.compare_exchange_weak(seen, inside)) {
        }
        for (int r = 0; r < 3; ++r) {  // renew a few times, as a holder does while it works
          const Result<bool> renew = store.pexpireat_if_equal(lease, token, T0 + 20'000 + r);
          if (!renew.ok() || !*renew) ++bad_renewals;
          if (store.pttl(lease) != 20'000 + r) ++bad_renewals;
          std::this_thread::yield();
        }
        if (store.get(lease) != token) ++bad_renewals;
        in_cs.fetch_sub(1);
        if (!store.del_if_equal(lease, token)) ++bad_releases;
        if (store.del_if_equal(lease, token)) ++bad_releases;  // released already: a second release fails
        last_token = token;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(max_in_cs.load() == 1);
  CHECK(acquisitions.load() >= kThreads);  // the lease changed hands, not once
  CHECK(bad_renewals.load() == 0);
  CHECK(bad_releases.load() == 0);
  CHECK(foreign_successes.load() == 0);
  CHECK(errors.load() == 0);
  CHECK_FALSE(store.exists(lease));
}

TEST_CASE("concurrent: an expired lease can be neither renewed nor released by its old holder", "[concurrent]") {
  ManualClock clock(T0);
  CStore store(clock, test_options(4), shards(4));
  REQUIRE(store.set("lease", std::string("a"), expiring::Px{100}, SetCond::NX) == true);
  CHECK(store.set("lease", std::string("b"), expiring::Px{100}, SetCond::NX) == false);
  clock.advance(101);
  CHECK(store.pexpireat_if_equal("lease", std::string("a"), T0 + 1000) == false);
  CHECK_FALSE(store.del_if_equal("lease", std::string("a")));
  CHECK(store.set("lease", std::string("b"), expiring::Px{100}, SetCond::NX) == true);
  CHECK_FALSE(store.del_if_equal("lease", std::string("a")));
  CHECK(store.get("lease") == std::string("b"));
  // Invalid flags are errors, checked before the value.
  CHECK(store.pexpireat_if_equal("lease", std::string("b"), T0 + 1000, ExpireFlags::GT | ExpireFlags::LT) ==
        Errc::gt_and_lt);
  // A deadline at or before now deletes the key (PEXPIREAT semantics) and counts as done.
  CHECK(store.pexpireat_if_equal("lease", std::string("b"), T0) == true);
  CHECK_FALSE(store.exists("lease"));
}

// =============================================================================================
// 1d. Single-flight get_or_load
// =============================================================================================

TEST_CASE("concurrent: get_or_load runs one loader for 16 concurrent misses", "[concurrent]") {
  constexpr int kThreads = 16;
  ManualClock clock(T0);
  CStore store(clock, test_options(5), shards(4));
  std::atomic<int> entered{0};
  std::atomic<int> calls{0};
  // The loader waits (bounded) until every caller has started, then a little more, so that
  // all of them find the flight in progress.
  auto loader = [&] {
    ++calls;
    wait_until([&] { return entered.load() == kThreads; }, milliseconds(5'000));
    std::this_thread::sleep_for(milliseconds(150));
    return std::string("loaded");
  };

  SECTION("a value") {
    std::vector<std::optional<std::string>> got(kThreads);
    std::vector<int> ok(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ++entered;
        const Result<std::optional<std::string>> r = store.get_or_load("k", loader, expiring::Px{60'000});
        ok[static_cast<std::size_t>(t)] = r.ok() ? 1 : 0;
        if (r.ok()) got[static_cast<std::size_t>(t)] = *r;
      });
    }
    for (std::thread& th : threads) th.join();
    CHECK(calls.load() == 1);
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      CHECK(ok[static_cast<std::size_t>(t)] == 1);
      CHECK(got[static_cast<std::size_t>(t)] == std::string("loaded"));
    }
    CHECK(store.get("k") == std::string("loaded"));
    CHECK(store.pttl("k") == 60'000);
    // A hit: no load.
    const Result<std::optional<std::string>> again = store.get_or_load("k", loader);
    CHECK(again.ok());
    CHECK(calls.load() == 1);
  }

  SECTION("an exception") {
    auto throwing = [&]() -> std::string {
      ++calls;
      wait_until([&] { return entered.load() == kThreads; }, milliseconds(5'000));
      std::this_thread::sleep_for(milliseconds(150));
      throw std::runtime_error("backend down");
    };
    // Each caller keeps what it caught; this thread looks at them once all have finished.
    // (Reading one exception object on many threads while another releases it is correct
    // C++, but libstdc++'s exception_ptr reference count is not instrumented, so
    // ThreadSanitizer would report the release as a race.)
    std::vector<std::exception_ptr> caught(kThreads);
    std::vector<int> returned(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ++entered;
        try {
          (void)store.get_or_load("k", throwing);
          returned[static_cast<std::size_t>(t)] = 1;
        } catch (...) {
          caught[static_cast<std::size_t>(t)] = std::current_exception();
        }
      });
    }
    for (std::thread& th : threads) th.join();
    CHECK(calls.load() == 1);
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      CHECK(returned[static_cast<std::size_t>(t)] == 0);
      std::string what = "no exception";
      try {
        if (caught[static_cast<std::size_t>(t)]) std::rethrow_exception(caught[static_cast<std::size_t>(t)]);
      } catch (const std::runtime_error& e) {
        what = std::string("runtime_error: ") + e.what();
      } catch (...) {
        what = "another exception";
      }
      CHECK(what == "runtime_error: backend down");
    }
    caught.clear();
    CHECK_FALSE(store.exists("k"));
    // The failed flight is gone: the next call loads again.
    entered = kThreads;
    const Result<std::optional<std::string>> r = store.get_or_load("k", loader);
    REQUIRE(r.ok());
    CHECK(*r == std::string("loaded"));
    CHECK(calls.load() == 2);
    CHECK(store.get("k") == std::string("loaded"));
  }
}

TEST_CASE("concurrent: get_or_load_async futures share one load", "[concurrent]") {
  constexpr int kFutures = 8;
  ManualClock clock(T0);
  CStore store(clock, test_options(6), shards(4));
  std::atomic<int> calls{0};
  auto loader = [&calls] {
    ++calls;
    std::this_thread::sleep_for(milliseconds(300));  // long enough for every future's thread to join the flight
    return std::string("async");
  };
  std::vector<std::future<Result<std::optional<std::string>>>> futures;
  for (int i = 0; i < kFutures; ++i) futures.push_back(store.get_or_load_async(std::string("ak"), loader));
  for (auto& f : futures) {
    REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    const Result<std::optional<std::string>> r = f.get();
    REQUIRE(r.ok());
    CHECK(*r == std::string("async"));
  }
  CHECK(calls.load() == 1);
  CHECK(store.get("ak") == std::string("async"));
}

TEST_CASE("concurrent: get_or_load on different keys loads them at the same time", "[concurrent]") {
  constexpr int kKeys = 4;
  ManualClock clock(T0);
  CStore store(clock, test_options(7), shards(1));  // one shard: independent even there
  std::atomic<int> loading{0};
  std::atomic<int> most{0};
  std::vector<std::string> got(kKeys);
  std::vector<std::thread> threads;
  for (int i = 0; i < kKeys; ++i) {
    threads.emplace_back([&, i] {
      auto loader = [&, i] {
        const int now = ++loading;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        // Wait (bounded) until every key's loader runs at once.
        wait_until([&] { return most.load() == kKeys; }, milliseconds(5'000));
        --loading;
        return "value" + std::to_string(i);
      };
      const Result<std::optional<std::string>> r = store.get_or_load("key" + std::to_string(i), loader);
      if (r.ok() && r->has_value()) got[static_cast<std::size_t>(i)] = **r;
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(most.load() == kKeys);
  for (int i = 0; i < kKeys; ++i) CHECK(got[static_cast<std::size_t>(i)] == "value" + std::to_string(i));
}

TEST_CASE("concurrent: get_or_load refuses an invalid TTL before it loads", "[concurrent]") {
  ManualClock clock(T0);
  CStore store(clock, test_options(8), shards(4));
  Engine engine(clock, test_options(8));
  int calls = 0;
  auto loader = [&calls] {
    ++calls;
    return std::string("x");
  };
  CHECK(engine.get_or_load("k", loader, expiring::Px{0}) == Errc::invalid_expire_time);
  CHECK(calls == 0);  // the engine's contract, which ConcurrentStore's documentation repeats
  CHECK(store.get_or_load("k", loader, expiring::Px{0}) == Errc::invalid_expire_time);
  CHECK(store.get_or_load("k", loader, expiring::Ex{-1}) == Errc::invalid_expire_time);
  CHECK(calls == 0);
  CHECK_FALSE(store.exists("k"));
  // A deadline already past: loaded, nothing stored, nullopt.
  const Result<std::optional<std::string>> past = store.get_or_load("k", loader, expiring::PxAt{T0 - 1});
  REQUIRE(past.ok());
  CHECK_FALSE(past->has_value());
  CHECK_FALSE(store.exists("k"));
}

// =============================================================================================
// 1e. Events
// =============================================================================================

namespace {
// A listener's record: events with their delivery order, under a mutex (listeners of
// different shards run at once).
struct Recorder {
  std::mutex mu;
  std::vector<Ev> events;
  void add(const CStore::event_type& ev) {
    std::lock_guard<std::mutex> g(mu);
    events.push_back(Ev{ev.cause, ev.key, ev.value ? std::optional<std::string>(*ev.value) : std::nullopt});
  }
};
}  // namespace

TEST_CASE("concurrent: each key's events are delivered in operation order", "[concurrent]") {
  constexpr int kWriters = 4;
  const int rounds = scaled(300, 200);
  ManualClock clock(T0);
  CStore store(clock, test_options(10), shards(2));  // 2 shards: writers share them
  Recorder rec;
  store.set_listener([&rec](const CStore::event_type& ev) { rec.add(ev); });
  StartLine start(kWriters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string k = "writer" + std::to_string(w);
      start.arrive_and_wait();
      for (int i = 0; i < rounds; ++i) {
        const std::string v = "v" + std::to_string(i);
        (void)store.set(k, v);
        (void)store.pexpire(k, 100'000);
        (void)store.del(k);  // the del event carries v: the order is visible
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const auto per_key = by_key(rec.events);
  REQUIRE(per_key.size() == static_cast<std::size_t>(kWriters));
  for (int w = 0; w < kWriters; ++w) {
    check_set_expire_del(per_key, "writer" + std::to_string(w), rounds, [](int i) { return "v" + std::to_string(i); });
  }
}

TEST_CASE("concurrent: events of one key written by many threads follow its linearization", "[concurrent]") {
  // Each thread writes unique values and takes whatever is there with getdel. Every value is
  // removed at most once, the del events are exactly the removals the threads saw, and each
  // thread's removals are delivered in the order it made them.
  constexpr int kThreads = 4;
  const int rounds = scaled(400, 250);
  ManualClock clock(T0);
  CStore store(clock, test_options(11), shards(4));
  Recorder rec;
  store.set_listener([&rec](const CStore::event_type& ev) { rec.add(ev); }, expiring::KeyEventCauses::removals());
  std::vector<std::vector<std::string>> taken(kThreads);
  StartLine start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < rounds; ++i) {
        (void)store.set("shared", std::to_string(t) + ":" + std::to_string(i));
        if (std::optional<std::string> v = store.getdel("shared")) taken[static_cast<std::size_t>(t)].push_back(*v);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::map<std::string, std::size_t> position;  // value -> index of its del event
  for (std::size_t i = 0; i < rec.events.size(); ++i) {
    const Ev& e = rec.events[i];
    REQUIRE(e.cause == KeyEventCause::del);
    REQUIRE(e.value.has_value());
    CHECK(position.emplace(*e.value, i).second);  // removed once
  }
  std::size_t removals = 0;
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    std::size_t last = 0;
    bool first = true;
    for (const std::string& v : taken[static_cast<std::size_t>(t)]) {
      const auto it = position.find(v);
      REQUIRE(it != position.end());
      if (!first) CHECK(it->second > last);
      last = it->second;
      first = false;
      ++removals;
    }
  }
  CHECK(removals == rec.events.size());
  CHECK(removals > 0);
}

TEST_CASE("concurrent: a listener that calls the store on its own key does not deadlock", "[concurrent]") {
  constexpr int kThreads = 4;
  const int rounds = scaled(300, 150);
  struct Shared {
    ManualClock clock{T0};
    CStore store{clock, test_options(12), shards(2)};
    Recorder rec;
    std::atomic<int> listener_reads_wrong{0};
  };
  auto sh = std::make_shared<Shared>();
  // On each set event: read the key back and give it a TTL (which raises an expire event the
  // same delivery loop must deliver next, after this call returns).
  sh->store.set_listener([raw = sh.get()](const CStore::event_type& ev) {
    raw->rec.add(ev);
    if (ev.cause == KeyEventCause::set) {
      if (!raw->store.exists(ev.key)) ++raw->listener_reads_wrong;
      (void)raw->store.pexpire(ev.key, 100'000);
    }
  });
  const bool finished = finishes_within(
      [sh, n = rounds] {
        StartLine start(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&sh, &start, n, t] {
            const std::string k = "own" + std::to_string(t);
            start.arrive_and_wait();
            for (int i = 0; i < n; ++i) {
              (void)sh->store.set(k, std::to_string(i));
              (void)sh->store.del(k);
            }
          });
        }
        for (std::thread& th : threads) th.join();
      },
      milliseconds(10'000));
  REQUIRE(finished);
  CHECK(sh->listener_reads_wrong.load() == 0);
  const auto per_key = by_key(sh->rec.events);
  for (int t = 0; t < kThreads; ++t) {
    check_set_expire_del(per_key, "own" + std::to_string(t), rounds, [](int i) { return std::to_string(i); });
  }
}

TEST_CASE("concurrent: listeners that write keys of other shards do not deadlock", "[concurrent]") {
  // Two writers on keys of their own; on each of their set events the listener writes four
  // "mirror" keys, which land on both shards: a delivery of one shard raises events of the
  // other while another thread may be delivering that one and raising events of the first.
  constexpr int kThreads = 2;
  constexpr int kMirrors = 4;
  const int rounds = scaled(400, 200);
  struct Shared {
    ManualClock clock{T0};
    CStore store{clock, test_options(15), shards(2)};
    Recorder rec;
  };
  auto sh = std::make_shared<Shared>();
  sh->store.set_listener([raw = sh.get()](const CStore::event_type& ev) {
    raw->rec.add(ev);
    if (ev.cause == KeyEventCause::set && ev.key.rfind("m:", 0) != 0) {
      for (int j = 0; j < kMirrors; ++j) (void)raw->store.set("m:" + ev.key + ":" + std::to_string(j), ev.key);
    }
  });
  const bool finished = finishes_within(
      [sh, n = rounds] {
        StartLine start(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&sh, &start, n, t] {
            start.arrive_and_wait();
            for (int i = 0; i < n; ++i) (void)sh->store.set("w" + std::to_string(t) + ":" + std::to_string(i % 8), std::to_string(i));
          });
        }
        for (std::thread& th : threads) th.join();
      },
      milliseconds(10'000));
  REQUIRE(finished);
  // Every writer's set event, and every mirror write it caused, was delivered.
  std::size_t writer_sets = 0, mirror_sets = 0;
  for (const Ev& e : sh->rec.events) {
    if (e.cause != KeyEventCause::set) continue;
    ++(e.key.rfind("m:", 0) == 0 ? mirror_sets : writer_sets);
  }
  CHECK(writer_sets == static_cast<std::size_t>(kThreads * rounds));
  CHECK(mirror_sets == writer_sets * kMirrors);
  CHECK(sh->store.size() == static_cast<std::size_t>(kThreads * 8 * (1 + kMirrors)));
}

// =============================================================================================
// 1f. The Expirer thread
// =============================================================================================

TEST_CASE("concurrent: an Expirer reclaims expired keys on its own thread", "[concurrent]") {
  ManualClock clock(T0);
  CStore store(clock, test_options(13), shards(4));
  for (int i = 0; i < 300; ++i) REQUIRE(store.set("short" + std::to_string(i), std::string("x"), expiring::Px{50}) == true);
  for (int i = 0; i < 40; ++i) REQUIRE(store.set("long" + std::to_string(i), std::string("y"), expiring::Px{3'600'000}) == true);
  for (int i = 0; i < 40; ++i) REQUIRE(store.set("forever" + std::to_string(i), std::string("z")) == true);
  REQUIRE(store.size() == 380);
  expiring::Expirer<CStore> expirer(store, 200);
  clock.advance(51);
  CHECK(wait_until([&] { return store.size() == 80; }, milliseconds(10'000)));
  CHECK(store.size() == 80);
  CHECK(store.stats().expired_keys == 300);
  CHECK(expirer.ticks() > 0);
  expirer.stop();
  const std::uint64_t after_stop = expirer.ticks();
  expirer.stop();  // idempotent
  std::this_thread::sleep_for(milliseconds(30));
  CHECK(expirer.ticks() == after_stop);
}

namespace {
// A store stand-in that counts its ticks.
struct CountingStore {
  std::atomic<int> ticks{0};
  expiring::TickReport tick() {
    ++ticks;
    return {};
  }
};
}  // namespace

TEST_CASE("concurrent: an Expirer's destructor stops and joins its thread", "[concurrent]") {
  CountingStore counter;
  {
    expiring::Expirer<CountingStore> expirer(counter, 500);
    CHECK(wait_until([&] { return counter.ticks.load() >= 3; }, milliseconds(5'000)));
  }  // no stop(): the destructor does it
  const int at_exit = counter.ticks.load();
  std::this_thread::sleep_for(milliseconds(30));
  CHECK(counter.ticks.load() == at_exit);
  CHECK(at_exit >= 3);
}

TEST_CASE("concurrent: avg_ttl is the mean over the volatile keys, not over the shards", "[concurrent]") {
  ManualClock clock(T0);
  CStore store(clock, test_options(31), shards(8));
  REQUIRE(store.set("k", "v", expiring::Px{100'000}).ok());
  (void)store.tick();  // the active cycle samples the key and sets its shard's estimate
  const expiring::Stats s = store.stats();
  CHECK(s.expires == 1);
  // The seven shards without a volatile key count for nothing (their mean said 12,500). A
  // time-ordered index estimates no avg_ttl (semantics.md case 149): 0 there.
  CHECK(s.avg_ttl == (std::is_same_v<TestPolicy, expiring::SampledExpiry> ? 100'000 : 0));
}

TEST_CASE("concurrent: an Expirer's hz is clamped to Redis's 500, so a huge one does not spin", "[concurrent]") {
  CountingStore counter;
  {
    expiring::Expirer<CountingStore> expirer(counter, std::numeric_limits<int>::max());
    std::this_thread::sleep_for(milliseconds(200));
  }
  // At most one tick every 2 ms (plus the first, at once); an hz taken as given ticked with no
  // pause at all, hundreds of thousands of times in the same 200 ms.
  CHECK(counter.ticks.load() >= 1);
  CHECK(counter.ticks.load() <= 200 / 2 + 1);
}

// =============================================================================================
// 1g. Stress: disjoint key ranges, each thread with its own sequential model
// =============================================================================================

TEST_CASE("concurrent: mixed operations of many threads leave what each thread's model says", "[concurrent]") {
  const int kThreads = scaled(8, 6);
  const int ops = scaled(6'000, 3'000);
  constexpr int kKeysPerThread = 16;
  ManualClock clock(T0);  // frozen; TTLs are far in the future
  CStore store(clock, test_options(14), shards(8));
  std::atomic<std::uint64_t> del_events{0}, set_events{0};
  store.set_listener([&](const CStore::event_type& ev) {
    if (ev.cause == KeyEventCause::del) ++del_events;
    if (ev.cause == KeyEventCause::set) ++set_events;
  });
  struct Entry {
    std::string value;
    std::int64_t deadline;  // -1: no TTL
  };
  using Model = std::map<std::string, Entry>;
  std::vector<Model> models(static_cast<std::size_t>(kThreads));
  std::vector<std::string> first_mismatch(static_cast<std::size_t>(kThreads));
  std::vector<std::uint64_t> removals(static_cast<std::size_t>(kThreads), 0), writes(static_cast<std::size_t>(kThreads), 0);
  std::atomic<bool> stop_side{false};
  StartLine start(kThreads);
  const auto deadline = Steady::now() + std::chrono::seconds(30);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto ti = static_cast<std::size_t>(t);
      Model& m = models[ti];
      std::mt19937_64 rng(static_cast<std::uint64_t>(500 + t));
      auto mismatch = [&](int i, const std::string& what) {
        if (first_mismatch[ti].empty()) first_mismatch[ti] = "thread " + std::to_string(t) + " op " + std::to_string(i) + ": " + what;
      };
      start.arrive_and_wait();
      for (int i = 0; i < ops && Steady::now() < deadline && first_mismatch[ti].empty(); ++i) {
        const std::string k = "t" + std::to_string(t) + ":" + std::to_string(rng() % kKeysPerThread);
        const std::string v = std::to_string(t) + "/" + std::to_string(i);
        auto it = m.find(k);
        const bool present = it != m.end();
        switch (rng() % 11) {
          case 0: {  // SET, with or without a TTL
            const bool ttl = rng() % 2 == 0;
            const std::int64_t d = 1'000'000 + static_cast<std::int64_t>(rng() % 1000);
            const Result<bool> r = ttl ? store.set(k, v, expiring::Px{d}) : store.set(k, v);
            if (!(r == true)) mismatch(i, "set " + k);
            m[k] = Entry{v, ttl ? T0 + d : -1};
            ++writes[ti];
            break;
          }
          case 1: {  // SET NX / XX
            const bool nx = rng() % 2 == 0;
            const Result<bool> r = store.set(k, v, nx ? SetCond::NX : SetCond::XX);
            const bool want = nx ? !present : present;
            if (!(r == want)) mismatch(i, "set nx/xx " + k);
            if (want) {
              m[k] = Entry{v, -1};
              ++writes[ti];
            }
            break;
          }
          case 2: {
            const std::optional<std::string> g = store.get(k);
            if (g != (present ? std::optional<std::string>(it->second.value) : std::nullopt)) mismatch(i, "get " + k);
            break;
          }
          case 3: {
            if (store.del(k) != present) mismatch(i, "del " + k);
            if (present) {
              m.erase(it);
              ++removals[ti];
            }
            break;
          }
          case 4: {
            const std::optional<std::string> g = store.getdel(k);
            if (g != (present ? std::optional<std::string>(it->second.value) : std::nullopt)) mismatch(i, "getdel " + k);
            if (present) {
              m.erase(it);
              ++removals[ti];
            }
            break;
          }
          case 5: {
            const std::int64_t d = 2'000'000 + static_cast<std::int64_t>(rng() % 1000);
            if (!(store.pexpire(k, d) == present)) mismatch(i, "pexpire " + k);
            if (present) it->second.deadline = T0 + d;
            break;
          }
          case 6: {
            const bool want = present && it->second.deadline != -1;
            if (store.persist(k) != want) mismatch(i, "persist " + k);
            if (want) it->second.deadline = -1;
            break;
          }
          case 7: {
            const std::int64_t want = !present ? -2 : it->second.deadline;
            if (store.pexpiretime(k) != want) mismatch(i, "pexpiretime " + k);
            break;
          }
          case 8: {  // compute: append to a live value (keeping its TTL), create a missing one
            const Result<bool> r = store.compute(k, [&](const std::string* cur, std::int64_t) {
              return cur ? Computed<std::string>::store(*cur + "+") : Computed<std::string>::store(v, SetExpiry{});
            });
            if (!(r == true)) mismatch(i, "compute " + k);
            if (present) {
              it->second.value += "+";
            } else {
              m[k] = Entry{v, -1};
            }
            ++writes[ti];
            break;
          }
          case 9: {  // del_if_equal with the right value or a wrong one
            const bool right = rng() % 2 == 0;
            const std::string expected = present && right ? it->second.value : "wrong";
            const bool want = present && right;
            if (store.del_if_equal(k, expected) != want) mismatch(i, "del_if_equal " + k);
            if (want) {
              m.erase(it);
              ++removals[ti];
            }
            break;
          }
          default: {  // pexpireat_if_equal
            const bool right = rng() % 2 == 0;
            const std::string expected = present && right ? it->second.value : "wrong";
            const bool want = present && right;
            const std::int64_t when = T0 + 3'000'000;
            if (!(store.pexpireat_if_equal(k, expected, when) == want)) mismatch(i, "pexpireat_if_equal " + k);
            if (want) it->second.deadline = when;
            break;
          }
        }
      }
    });
  }
  // Meanwhile: whole-store readers and an active-expire ticker (nothing is due).
  std::thread side([&] {
    for (int i = 0; i < 100'000 && !stop_side.load(); ++i) {
      (void)store.size();
      (void)store.stats();
      (void)store.tick();
      std::this_thread::yield();
    }
  });
  for (std::thread& th : threads) th.join();
  stop_side = true;
  side.join();
  std::size_t want_size = 0;
  std::uint64_t want_dels = 0, want_sets = 0;
  for (int t = 0; t < kThreads; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    CAPTURE(t);
    CHECK(first_mismatch[ti] == "");
    want_size += models[ti].size();
    want_dels += removals[ti];
    want_sets += writes[ti];
    for (const auto& [k, e] : models[ti]) {
      CAPTURE(k);
      CHECK(store.get(k) == e.value);
      CHECK(store.pexpiretime(k) == e.deadline);
    }
  }
  CHECK(store.size() == want_size);
  CHECK(store.stats().expired_keys == 0);
  CHECK(del_events.load() == want_dels);
  CHECK(set_events.load() == want_sets);
}

TEST_CASE("concurrent: get_or_load's loads count in cache_stats, time and failures included", "[concurrent]") {
  expiring::ManualClock clock{1'000'000};
  expiring::ConcurrentStore<std::string, std::string, expiring::ManualClock, TestPolicy> c{clock, {}, {4}};
  auto r = c.get_or_load("slow", [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return std::string("v");
  });
  REQUIRE(r.ok());
  CHECK(*r == std::optional<std::string>("v"));
  CHECK_THROWS_AS(c.get_or_load("bad", []() -> std::string { throw std::runtime_error("down"); }), std::runtime_error);
  const expiring::CacheStats s = c.cache_stats();
  CHECK(s.load_success_count == 1);
  CHECK(s.load_failure_count == 1);
  CHECK(s.total_load_time_ns >= 2'000'000);
  CHECK(s.miss_count >= 1);
}
