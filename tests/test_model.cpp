// tests/test_model.cpp: a randomized model test.
//
// Random operations run against an ExpiringStore and against a plain reference model written
// here from docs/semantics.md alone (a std::map from key to {value, optional deadline}). Every
// reply, every key event (cause, key and removed value), the statistics (expired_keys,
// keyspace_hits, keyspace_misses) and the sizes are compared after every operation, together
// with the store's internal invariants. Periodically the live keys seen through iteration,
// keys(), scan() and peek() are compared with the model's.
//
// The model keeps stale keys until an operation touches them, like the store, so DBSIZE
// (size()) and INFO's expires= (expires_size()) match exactly. What it cannot predict, which
// stale keys tick(), random_key() and scan() reclaim, it learns from the `expired` events those
// calls raise, after checking that each reclaimed key really was stale.
// expiring-test: expiry index (built over both policies under the sanitizers too)
#include <expiring/expiring.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "test_policy.hpp"
#include "test_results.hpp"

namespace {

using expiring::CycleKind;
using expiring::Errc;
using expiring::ExpireFlags;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;
using expiring::Result;
using expiring::SetCond;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// Every key lands on the same hash: all probes collide.
struct CollidingHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view) const noexcept { return 0x42; }
};

// ---- The reference model --------------------------------------------------------------------

enum class Kind { none, ex, px, exat, pxat, keepttl, persist };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "-";
    case Kind::ex: return "EX";
    case Kind::px: return "PX";
    case Kind::exat: return "EXAT";
    case Kind::pxat: return "PXAT";
    case Kind::keepttl: return "KEEPTTL";
    case Kind::persist: return "PERSIST";
  }
  return "?";
}

bool has_time(Kind k) { return k == Kind::ex || k == Kind::px || k == Kind::exat || k == Kind::pxat; }

// SET/GETEX expiry argument to an absolute deadline (semantics.md B §2.4 step 1, D5, D6): the
// value must be positive; seconds are multiplied by 1000 and relative forms added to now, both checked.
std::optional<std::int64_t> set_deadline(Kind k, std::int64_t v, std::int64_t now) {
  if (v <= 0) return std::nullopt;
  std::int64_t ms = v;
  if ((k == Kind::ex || k == Kind::exat) && __builtin_mul_overflow(v, std::int64_t{1000}, &ms)) return std::nullopt;
  if (k == Kind::ex || k == Kind::px) {
    std::int64_t when = 0;
    if (__builtin_add_overflow(ms, now, &when)) return std::nullopt;
    return when;
  }
  return ms;
}

// EXPIRE-family argument to an absolute deadline (semantics.md B §2.1 step 3, D6); any sign
// is allowed.
std::optional<std::int64_t> expire_deadline(std::int64_t v, bool seconds, bool relative, std::int64_t now) {
  std::int64_t ms = v;
  if (seconds && __builtin_mul_overflow(v, std::int64_t{1000}, &ms)) return std::nullopt;
  if (relative && __builtin_add_overflow(ms, now, &ms)) return std::nullopt;
  return ms;
}

// TTL/EXPIRETIME replies round half up (semantics.md B §2.2, D6), for x >= 0.
std::int64_t round_seconds(std::int64_t x) { return x / 1000 + (x % 1000 >= 500 ? 1 : 0); }

template <class K>
struct Ev {
  KeyEventCause cause;
  K key;
  std::optional<std::string> value;  // the removed value, for del / expired
  bool operator==(const Ev& o) const { return cause == o.cause && key == o.key && value == o.value; }
};

template <class K>
struct Model {
  struct Entry {
    std::string value;
    std::optional<std::int64_t> deadline;
  };
  std::map<K, Entry> m;  // every stored key, stale ones included until something reclaims them
  std::uint64_t expired_keys = 0, hits = 0, misses = 0;
  std::vector<Ev<K>> events;  // the events the current operation must raise, in order
  // TTL jitter of a relative deadline `when` = now + ttl (ttl > 0), or none.
  std::function<std::int64_t(std::int64_t when, std::int64_t ttl, std::int64_t now)> jitter;
  std::int64_t jittered(std::int64_t when, std::int64_t ttl, std::int64_t now) const {
    return jitter ? jitter(when, ttl, now) : when;
  }

  static bool stale(const Entry& e, std::int64_t now) { return e.deadline && now > *e.deadline; }

  // A lookup with lazy expiry (semantics.md B §1.4, D1): a stale key is deleted as an expiry.
  Entry* lookup(const K& k, std::int64_t now, bool read) {
    auto it = m.find(k);
    if (it != m.end() && stale(it->second, now)) {
      ++expired_keys;
      events.push_back({KeyEventCause::expired, k, it->second.value});
      m.erase(it);
      it = m.end();
    }
    if (read) ++(it == m.end() ? misses : hits);
    return it == m.end() ? nullptr : &it->second;
  }
  void remove_del(const K& k) {
    events.push_back({KeyEventCause::del, k, m.at(k).value});
    m.erase(k);
  }
  void note(KeyEventCause c, const K& k) { events.push_back({c, k, std::nullopt}); }

  // SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL] (semantics.md B §2.4, D4, D5, D11).
  Result<bool> set(const K& k, const std::string& v, Kind kind, std::int64_t arg, SetCond cond,
                   std::optional<std::string>* old, std::int64_t now) {
    std::optional<std::int64_t> when;
    if (has_time(kind)) {
      when = set_deadline(kind, arg, now);
      if (!when) return Errc::invalid_expire_time;
      if (kind == Kind::ex || kind == Kind::px) when = jittered(*when, *when - now, now);
    }
    if (old != nullptr) {
      if (Entry* e = lookup(k, now, true)) *old = e->value;
    }
    Entry* e = lookup(k, now, false);
    const bool found = e != nullptr;
    if ((cond == SetCond::NX && found) || (cond == SetCond::XX && !found)) return false;
    if (when && *when <= now) {  // D4: nothing stored, an existing key deleted
      if (found) remove_del(k);
      return true;
    }
    std::optional<std::int64_t> deadline = when;
    if (kind == Kind::keepttl && found) deadline = e->deadline;
    m[k] = Entry{v, deadline};
    note(KeyEventCause::set, k);
    if (when) note(KeyEventCause::expire, k);
    return true;
  }

  // GETEX (semantics.md B §2.6).
  Result<std::optional<std::string>> getex(const K& k, Kind kind, std::int64_t arg, std::int64_t now) {
    Entry* e = lookup(k, now, true);
    if (e == nullptr) return std::optional<std::string>{};
    std::optional<std::int64_t> when;
    if (has_time(kind)) {
      when = set_deadline(kind, arg, now);
      if (!when) return Errc::invalid_expire_time;
      if (kind == Kind::ex || kind == Kind::px) when = jittered(*when, *when - now, now);
    }
    std::optional<std::string> out = e->value;
    if (when) {
      if (*when <= now) {
        remove_del(k);
      } else {
        e->deadline = when;
        note(KeyEventCause::expire, k);
      }
    } else if (kind == Kind::persist && e->deadline) {
      e->deadline.reset();
      note(KeyEventCause::persist, k);
    }
    return out;
  }

  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (semantics.md B §2.1, D3).
  Result<bool> expire(const K& k, std::int64_t v, bool seconds, bool relative, ExpireFlags f, std::int64_t now) {
    const bool nx = expiring::has(f, ExpireFlags::NX), xx = expiring::has(f, ExpireFlags::XX);
    const bool gt = expiring::has(f, ExpireFlags::GT), lt = expiring::has(f, ExpireFlags::LT);
    if (nx && (xx || gt || lt)) return Errc::nx_and_xx_gt_lt;
    if (gt && lt) return Errc::gt_and_lt;
    std::optional<std::int64_t> when = expire_deadline(v, seconds, relative, now);
    if (!when) return Errc::invalid_expire_time;
    if (relative && *when - now > 0) when = jittered(*when, *when - now, now);  // a positive TTL only
    Entry* e = lookup(k, now, false);
    if (e == nullptr) return false;
    const std::optional<std::int64_t> cur = e->deadline;
    if (nx && cur) return false;
    if (xx && !cur) return false;
    if (gt && (!cur || *when <= *cur)) return false;
    if (lt && cur && *when >= *cur) return false;
    if (*when <= now) {
      remove_del(k);
    } else {
      e->deadline = when;
      note(KeyEventCause::expire, k);
    }
    return true;
  }

  // TTL / PTTL / EXPIRETIME / PEXPIRETIME (semantics.md B §2.2).
  std::int64_t ttl(const K& k, bool absolute, bool seconds, std::int64_t now) {
    Entry* e = lookup(k, now, true);
    if (e == nullptr) return -2;
    if (!e->deadline) return -1;
    std::int64_t x = *e->deadline;
    if (!absolute && __builtin_sub_overflow(*e->deadline, now, &x)) x = kMax;  // live: deadline >= now
    if (x < 0) x = 0;
    return seconds ? round_seconds(x) : x;
  }

  // RENAME / RENAMENX (semantics.md B §2.9): src's value and TTL (or none) move to dst.
  Result<bool> rename(const K& src, const K& dst, bool nx, std::int64_t now) {
    Entry* s = lookup(src, now, false);
    if (s == nullptr) return Errc::no_such_key;
    if (src == dst) return !nx;
    Entry* d = lookup(dst, now, false);
    if (d != nullptr && nx) return false;
    Entry moved = *s;
    m[dst] = moved;
    note(KeyEventCause::rename_from, src);
    note(KeyEventCause::rename_to, dst);
    m.erase(src);
    return true;
  }

  // The live entries as (key, value, pexpiretime or -1), sorted by key.
  std::vector<std::tuple<K, std::string, std::int64_t>> live(std::int64_t now) const {
    std::vector<std::tuple<K, std::string, std::int64_t>> out;
    for (const auto& [k, e] : m) {
      if (!stale(e, now)) out.emplace_back(k, e.value, e.deadline ? *e.deadline : -1);
    }
    return out;
  }
  std::size_t volatile_count() const {
    std::size_t n = 0;
    for (const auto& kv : m) n += kv.second.deadline ? 1 : 0;
    return n;
  }
};

// ---- Printing for failure messages ------------------------------------------------------------

std::string show(const std::string& s) { return "\"" + s + "\""; }
std::string show(std::uint64_t v) { return std::to_string(v); }
std::string show(std::int64_t v) { return std::to_string(v); }
std::string show(bool b) { return b ? "true" : "false"; }
std::string show(const std::optional<std::string>& o) { return o ? show(*o) : std::string("nullopt"); }
template <class T>
std::string show(const Result<T>& r) {
  if (!r.ok()) return std::string("error(") + expiring::to_string(r.error()) + ")";
  return show(r.value());
}
std::string show(const Result<void>& r) {
  return r.ok() ? std::string("ok") : std::string("error(") + expiring::to_string(r.error()) + ")";
}
template <class K>
std::string show(const std::vector<Ev<K>>& evs) {
  std::string s = "[";
  for (const Ev<K>& e : evs) s += std::string(" ") + expiring::to_string(e.cause) + ":" + show(e.key) + "=" + show(e.value);
  return s + " ]";
}

// ---- The runner ----------------------------------------------------------------------------

struct RunConfig {
  std::uint64_t seed;
  int ops;
  std::optional<std::int64_t> start = std::nullopt;  // the clock's first reading; else by seed
  expiring::Jitter jitter = expiring::Jitter::none();  // Options::ttl_jitter
};

// The reference's TTL jitter, computed in 128 bits (independently of the store's unsigned
// arithmetic): when + d with d = draw % (2s + 1) - s, clamped to [now + 1, INT64_MAX].
__extension__ typedef __int128 i128;  // GCC and Clang
__extension__ typedef unsigned __int128 u128;
inline std::int64_t reference_jitter(expiring::Jitter j, std::uint64_t draw, std::int64_t when, std::int64_t ttl,
                                     std::int64_t now) {
  i128 s = 0;
  if (j.kind() == expiring::Jitter::Kind::percent) s = static_cast<i128>(ttl) * j.amount() / 100;
  if (j.kind() == expiring::Jitter::Kind::spread) s = j.amount();
  if (s <= 0) return when;
  const auto range = static_cast<u128>(2 * s + 1);
  const i128 d = static_cast<i128>(draw % range) - s;
  i128 x = static_cast<i128>(when) + d;
  if (x < static_cast<i128>(now) + 1) x = static_cast<i128>(now) + 1;
  if (x > kMax) x = kMax;
  return static_cast<std::int64_t>(x);
}

template <class K, class Hash>
class Runner {
 public:
  using Store = expiring::ExpiringStore<K, std::string, Hash, std::equal_to<>, ManualClock&, TestPolicy>;

  Runner(RunConfig cfg, std::vector<K> keys)
      : cfg_(cfg), rng_(cfg.seed), keys_(std::move(keys)), clock_(base_now()), store_(clock_, make_options()) {
    if (cfg_.jitter.kind() != expiring::Jitter::Kind::none) {
      model_.jitter = [this](std::int64_t when, std::int64_t ttl, std::int64_t now) {
        return reference_jitter(cfg_.jitter, op_draw_, when, ttl, now);
      };
    }
    store_.set_listener([this](const typename Store::event_type& ev) {
      got_.push_back(Ev<K>{ev.cause, ev.key, ev.value ? std::optional<std::string>(*ev.value) : std::nullopt});
    });
  }

  void run() {
    for (op_ = 0; op_ < cfg_.ops; ++op_) {
      model_.events.clear();
      got_.clear();
      op_draw_ = draw_rng_();
      step();
      check_after_op();
      got_.clear();
      if (op_ % 16 == 0) check_views();
    }
    check_views();
  }

  std::uint64_t checks() const { return checks_; }
  std::uint64_t ticks_that_reclaimed() const { return ticks_reclaimed_; }
  std::uint64_t lazy_expiries() const { return model_.expired_keys; }

 private:
  // ---- randomness ----
  std::uint64_t rnd(std::uint64_t n) { return rng_() % n; }
  std::int64_t rnd_range(std::int64_t lo, std::int64_t hi) {  // inclusive, small ranges
    return lo + static_cast<std::int64_t>(rnd(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  bool chance(int percent) { return rnd(100) < static_cast<std::uint64_t>(percent); }
  const K& any_key() { return keys_[static_cast<std::size_t>(rnd(keys_.size()))]; }

  std::int64_t base_now() {
    if (cfg_.start) return *cfg_.start;
    // Fixtures: an ordinary time, 0, one minute before INT64_MAX (as tests/support.hpp).
    switch (cfg_.seed % 3) {
      case 0: return 1'700'000'000'000;
      case 1: return 0;
      default: return kMax - 60'000;
    }
  }

  Options make_options() {
    Options o;
    o.seed = cfg_.seed;
    const std::uint64_t fp[] = {0, 2, 100};
    o.full_pass_ticks = static_cast<std::uint32_t>(fp[rnd(3)]);
    const std::uint32_t mr[] = {0, 1, 3};
    o.max_rounds_per_tick = mr[rnd(3)];
    o.active_expire_effort = static_cast<int>(rnd_range(1, 10));
    const std::int64_t steps[] = {0, 100, 5'000};
    budget_step_ = steps[rnd(3)];
    o.budget_clock_us = [this] {
      const std::int64_t v = budget_now_;
      budget_now_ += budget_step_;
      return v;
    };
    if (cfg_.jitter.kind() != expiring::Jitter::Kind::none) {
      // One draw per operation, whoever asks first (the store or the reference): an operation
      // makes at most one jittered write.
      o.ttl_jitter = cfg_.jitter;
      o.random = [this] { return op_draw_; };
    }
    return o;
  }

  // ---- argument generators ----
  std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
    std::int64_t x = 0;
    if (__builtin_sub_overflow(a, b, &x)) return b < 0 ? kMax : kMin;
    return x;
  }
  std::int64_t near(std::int64_t base, std::int64_t lo, std::int64_t hi) {
    std::int64_t x = 0;
    const std::int64_t d = rnd_range(lo, hi);
    if (__builtin_add_overflow(base, d, &x)) return d > 0 ? kMax : kMin;
    return x;
  }
  std::int64_t extreme(std::int64_t now, bool seconds) {
    const std::int64_t room = sat_sub(kMax, now);
    const std::int64_t cands[] = {kMax,          kMin,           kMax / 1000,     kMax / 1000 + 1, kMin / 1000,
                                  kMin / 1000 - 1, room,         room == kMax ? kMax : room + 1,   room / 1000,
                                  room / 1000 + 1, now,          now / 1000,      now / 1000 + 1,  kMax - 1,
                                  seconds ? kMax / 1000 - 1 : kMax - 999};
    return cands[rnd(sizeof cands / sizeof cands[0])];
  }
  // A time argument: relative (seconds or ms) or absolute (Unix seconds or ms).
  std::int64_t time_arg(bool seconds, bool relative, std::int64_t now) {
    const int r = static_cast<int>(rnd(100));
    if (r < 68) {
      if (relative) return seconds ? rnd_range(1, 4) : rnd_range(1, 2500);
      return seconds ? near(now / 1000, -1, 4) : near(now, -200, 2500);
    }
    if (r < 78 && !seconds) {
      // Half-second boundaries, where TTL/EXPIRETIME rounding turns (x % 1000 == 500 rounds up).
      const std::int64_t offsets[] = {0, 1, 499, 500, 501, 999, 1000, 1500, 2500};
      const std::int64_t off = offsets[rnd(9)];
      if (relative) return off;
      std::int64_t whole = now - now % 1000;  // may be below now: a past deadline is fine too
      return near(whole, off, off);
    }
    if (r < 88) {
      const std::int64_t small[] = {0, -1, 1, -1000, 2, -rnd_range(1, 100000), -rnd_range(1, 3)};
      return small[rnd(7)];
    }
    return extreme(now, seconds);
  }
  Kind set_kind() {
    const int r = static_cast<int>(rnd(100));
    if (r < 25) return Kind::none;
    if (r < 37) return Kind::ex;
    if (r < 57) return Kind::px;
    if (r < 69) return Kind::exat;
    if (r < 89) return Kind::pxat;
    return Kind::keepttl;
  }
  Kind getex_kind() {
    const int r = static_cast<int>(rnd(100));
    if (r < 25) return Kind::none;
    if (r < 40) return Kind::ex;
    if (r < 60) return Kind::px;
    if (r < 70) return Kind::exat;
    if (r < 85) return Kind::pxat;
    return Kind::persist;
  }
  std::int64_t kind_arg(Kind k, std::int64_t now) {
    switch (k) {
      case Kind::ex: return time_arg(true, true, now);
      case Kind::px: return time_arg(false, true, now);
      case Kind::exat: return time_arg(true, false, now);
      case Kind::pxat: return time_arg(false, false, now);
      default: return 0;
    }
  }
  static expiring::SetExpiry to_set_expiry(Kind k, std::int64_t v) {
    switch (k) {
      case Kind::ex: return expiring::Ex{v};
      case Kind::px: return expiring::Px{v};
      case Kind::exat: return expiring::ExAt{v};
      case Kind::pxat: return expiring::PxAt{v};
      case Kind::keepttl: return expiring::KeepTtl{};
      default: return {};
    }
  }
  static expiring::GetExExpiry to_getex_expiry(Kind k, std::int64_t v) {
    switch (k) {
      case Kind::ex: return expiring::Ex{v};
      case Kind::px: return expiring::Px{v};
      case Kind::exat: return expiring::ExAt{v};
      case Kind::pxat: return expiring::PxAt{v};
      case Kind::persist: return expiring::Persist{};
      default: return {};
    }
  }
  SetCond set_cond() {
    const int r = static_cast<int>(rnd(10));
    return r < 6 ? SetCond::Always : (r < 8 ? SetCond::NX : SetCond::XX);
  }
  ExpireFlags flags() {
    if (chance(75)) {
      const ExpireFlags valid[] = {ExpireFlags::None, ExpireFlags::NX, ExpireFlags::XX, ExpireFlags::GT,
                                   ExpireFlags::LT, ExpireFlags::XX | ExpireFlags::GT, ExpireFlags::XX | ExpireFlags::LT};
      return valid[rnd(7)];
    }
    return static_cast<ExpireFlags>(rnd(16));  // any combination, invalid ones included
  }
  static const char* flags_name(ExpireFlags f) {
    static const char* const names[16] = {"",         "NX",       "XX",       "NX XX",       "GT",         "NX GT",
                                          "XX GT",    "NX XX GT", "LT",       "NX LT",       "XX LT",      "NX XX LT",
                                          "GT LT",    "NX GT LT", "XX GT LT", "NX XX GT LT"};
    return names[static_cast<std::uint8_t>(f) & 15u];
  }
  std::string new_value() { return "v" + std::to_string(++value_counter_); }

  // ---- failure reporting ----
  // What an operation was, recorded cheaply and formatted only when a check fails.
  struct OpLog {
    int op = -1;
    std::int64_t now = 0;
    const char* name = "";
    const K* k1 = nullptr;  // into keys_, which never changes
    const K* k2 = nullptr;
    const char* opt = "";
    const char* kind = "";
    bool has_arg = false;
    std::int64_t arg = 0;
    std::uint64_t value = 0;  // "v<value>", 0 for none
    std::string text() const {
      std::ostringstream os;
      os << op << " @" << now << ": " << name;
      if (k1 != nullptr) os << " " << show(*k1);
      if (k2 != nullptr) os << " " << show(*k2);
      if (value != 0) os << " v" << value;
      if (*opt != 0) os << " " << opt;
      if (*kind != 0) os << " " << kind;
      if (has_arg) os << " " << arg;
      return os.str();
    }
  };
  OpLog& describe(const char* name, const K* k1 = nullptr, const K* k2 = nullptr) {
    OpLog& l = history_[static_cast<std::size_t>(op_ % kHistory)];
    l = OpLog{};
    l.op = op_;
    l.now = clock_.now_ms();
    l.name = name;
    l.k1 = k1;
    l.k2 = k2;
    return l;
  }
  OpLog& describe_arg(const char* name, const K* k1, std::int64_t arg) {
    OpLog& l = describe(name, k1);
    l.has_arg = true;
    l.arg = arg;
    return l;
  }
  std::string context() const {
    std::ostringstream os;
    os << "seed " << cfg_.seed << ", op " << op_ << ", now " << clock_.now_ms() << "\nrecent operations:\n";
    for (int i = op_ - kHistory + 1; i <= op_; ++i) {
      if (i >= 0) os << "  " << history_[static_cast<std::size_t>(i % kHistory)].text() << "\n";
    }
    return os.str();
  }
  template <class A, class B>
  void expect_eq(const A& got, const B& want, const char* what) {
    ++checks_;
    if (!(got == want)) FAIL(context() << what << ": store " << show(got) << ", model " << show(want));
  }
  void expect(bool ok, const char* what, const K* key = nullptr) {
    ++checks_;
    if (!ok) FAIL(context() << what << (key != nullptr ? " " + show(*key) : std::string()));
  }
  template <class T>
  void expect_same(const Result<T>& got, const Result<T>& want, const char* what) {
    ++checks_;
    if (!same(got, want)) FAIL(context() << what << ": store " << show(got) << ", model " << show(want));
  }

  // The events of tick(), random_key() and scan(): each must be the expiry of a key the model
  // holds as stale, with its value. The model then forgets those keys.
  std::size_t absorb_reclaims(std::int64_t now) {
    for (const Ev<K>& e : got_) {
      auto it = model_.m.find(e.key);
      expect(e.cause == KeyEventCause::expired, "a reclaim raised another cause than `expired` for", &e.key);
      expect(it != model_.m.end() && Model<K>::stale(it->second, now),
             "reclaimed a key that is missing or live in the model:", &e.key);
      expect(e.value == std::optional<std::string>(it->second.value), "reclaimed value differs for", &e.key);
      model_.m.erase(it);
      ++model_.expired_keys;
    }
    const std::size_t n = got_.size();
    got_.clear();
    return n;
  }

  // ---- one random operation ----
  void step() {
    const std::int64_t now = clock_.now_ms();  // the store reads the same value
    const int r = static_cast<int>(rnd(1000));
    if (r < 130) return op_set(now, false);
    if (r < 160) return op_set(now, true);
    if (r < 180) return op_setnx(now);
    if (r < 210) return op_setex(now);
    if (r < 270) return op_getex(now);
    if (r < 290) return op_getdel(now);
    if (r < 350) return op_get(now);
    if (r < 380) return op_exists(now);
    if (r < 410) return op_del(now);
    if (r < 530) return op_expire(now);
    if (r < 560) return op_persist(now);
    if (r < 640) return op_ttl(now);
    if (r < 670) return op_rename(now);
    if (r < 690) return op_modify(now);
    if (r < 710) return op_random_key(now);
    if (r < 720) return op_keys(now);
    if (r < 770) return op_tick(now);
    if (r < 780) return op_getset(now);
    if (r < 790) return op_scan(now);
    if (r < 795) return op_settings();
    if (r < 796 && chance(20)) return op_clear();
    return op_clock();
  }

  void op_set(std::int64_t now, bool with_get) {
    const K& k = any_key();
    const std::string v = new_value();
    const Kind kind = set_kind();
    const std::int64_t arg = kind_arg(kind, now);
    const SetCond cond = set_cond();
    OpLog& l = describe_arg(with_get ? "SET GET" : "SET", &k, arg);
    l.opt = cond == SetCond::NX ? "NX" : cond == SetCond::XX ? "XX" : "";
    l.kind = kind_name(kind);
    l.value = value_counter_;
    if (with_get) {
      std::optional<std::string> old;
      const Result<bool> m = model_.set(k, v, kind, arg, cond, &old, now);
      const Result<std::optional<std::string>> want =
          m.ok() ? Result<std::optional<std::string>>(old) : Result<std::optional<std::string>>(m.error());
      expect_same(store_.set_get(k, v, to_set_expiry(kind, arg), cond), want, "set_get");
    } else {
      expect_same(store_.set(k, v, to_set_expiry(kind, arg), cond), model_.set(k, v, kind, arg, cond, nullptr, now),
                  "set");
    }
  }
  void op_setnx(std::int64_t now) {
    const K& k = any_key();
    const std::string v = new_value();
    describe("SETNX", &k).value = value_counter_;
    const Result<bool> want = model_.set(k, v, Kind::none, 0, SetCond::NX, nullptr, now);
    expect_eq(store_.setnx(k, v), want.value(), "setnx");
  }
  void op_setex(std::int64_t now) {
    const K& k = any_key();
    const std::string v = new_value();
    const bool ms = chance(50);
    const std::int64_t arg = time_arg(!ms, true, now);
    describe_arg(ms ? "PSETEX" : "SETEX", &k, arg).value = value_counter_;
    const Result<bool> m = model_.set(k, v, ms ? Kind::px : Kind::ex, arg, SetCond::Always, nullptr, now);
    const Result<void> want = m.ok() ? Result<void>() : Result<void>(m.error());
    expect_same(ms ? store_.psetex(k, arg, v) : store_.setex(k, arg, v), want, ms ? "psetex" : "setex");
  }
  void op_getset(std::int64_t now) {
    const K& k = any_key();
    const std::string v = new_value();
    describe("GETSET", &k).value = value_counter_;
    std::optional<std::string> old;
    (void)model_.set(k, v, Kind::none, 0, SetCond::Always, &old, now);
    expect_eq(store_.getset(k, v).value(), old, "getset");
  }
  void op_getex(std::int64_t now) {
    const K& k = any_key();
    const Kind kind = getex_kind();
    const std::int64_t arg = kind_arg(kind, now);
    describe_arg("GETEX", &k, arg).kind = kind_name(kind);
    expect_same(store_.getex(k, to_getex_expiry(kind, arg)), model_.getex(k, kind, arg, now), "getex");
  }
  void op_getdel(std::int64_t now) {
    const K& k = any_key();
    describe("GETDEL", &k);
    std::optional<std::string> want;
    if (auto* e = model_.lookup(k, now, true)) {
      want = e->value;
      model_.remove_del(k);
    }
    expect_eq(store_.getdel(k), want, "getdel");
  }
  void op_get(std::int64_t now) {
    const K& k = any_key();
    describe("GET", &k);
    auto* e = model_.lookup(k, now, true);
    const std::string* got = store_.get(k);
    expect_eq(got ? std::optional<std::string>(*got) : std::nullopt,
              e ? std::optional<std::string>(e->value) : std::nullopt, "get");
  }
  void op_exists(std::int64_t now) {
    const K& k = any_key();
    const bool touch = chance(30);
    describe(touch ? "TOUCH" : "EXISTS", &k);
    const bool want = model_.lookup(k, now, true) != nullptr;
    expect_eq(touch ? store_.touch(k) : store_.exists(k), want, touch ? "touch" : "exists");
  }
  void op_del(std::int64_t now) {
    const K& k = any_key();
    const bool unlink = chance(30);
    describe(unlink ? "UNLINK" : "DEL", &k);
    bool want = false;
    if (model_.lookup(k, now, false) != nullptr) {
      model_.remove_del(k);
      want = true;
    }
    expect_eq(unlink ? store_.unlink(k) : store_.del(k), want, unlink ? "unlink" : "del");
  }
  void op_expire(std::int64_t now) {
    const K& k = any_key();
    const int which = static_cast<int>(rnd(4));  // expire, pexpire, expireat, pexpireat
    const bool seconds = which == 0 || which == 2, relative = which < 2;
    const std::int64_t arg = time_arg(seconds, relative, now);
    const ExpireFlags f = flags();
    static const char* const names[] = {"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"};
    describe_arg(names[which], &k, arg).opt = flags_name(f);
    Result<bool> got = false;
    switch (which) {
      case 0: got = store_.expire(k, arg, f); break;
      case 1: got = store_.pexpire(k, arg, f); break;
      case 2: got = store_.expireat(k, arg, f); break;
      default: got = store_.pexpireat(k, arg, f); break;
    }
    expect_same(got, model_.expire(k, arg, seconds, relative, f, now), names[which]);
  }
  void op_persist(std::int64_t now) {
    const K& k = any_key();
    describe("PERSIST", &k);
    bool want = false;
    if (auto* e = model_.lookup(k, now, false)) {
      if (e->deadline) {
        e->deadline.reset();
        model_.note(KeyEventCause::persist, k);
        want = true;
      }
    }
    expect_eq(store_.persist(k), want, "persist");
  }
  void op_ttl(std::int64_t now) {
    const K& k = any_key();
    const int which = static_cast<int>(rnd(4));
    static const char* const names[] = {"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"};
    describe(names[which], &k);
    const bool absolute = which >= 2, seconds = which % 2 == 0;
    std::int64_t got = 0;
    switch (which) {
      case 0: got = store_.ttl(k); break;
      case 1: got = store_.pttl(k); break;
      case 2: got = store_.expiretime(k); break;
      default: got = store_.pexpiretime(k); break;
    }
    expect_eq(got, model_.ttl(k, absolute, seconds, now), names[which]);
  }
  void op_rename(std::int64_t now) {
    const K& src = any_key();
    const K& dst = chance(8) ? src : any_key();
    const bool nx = chance(40);
    describe(nx ? "RENAMENX" : "RENAME", &src, &dst);
    const Result<bool> want = model_.rename(src, dst, nx, now);
    if (nx) {
      expect_same(store_.renamenx(src, dst), want, "renamenx");
    } else {
      const Result<void> w = want.ok() ? Result<void>() : Result<void>(want.error());
      expect_same(store_.rename(src, dst), w, "rename");
    }
  }
  void op_modify(std::int64_t now) {
    const K& k = any_key();
    describe("MODIFY", &k);
    bool want = false;
    if (auto* e = model_.lookup(k, now, false)) {
      e->value += "+";
      model_.note(KeyEventCause::update, k);
      want = true;
    }
    expect_eq(store_.modify(k, [](std::string& v) { v += "+"; }), want, "modify");
  }
  void op_random_key(std::int64_t now) {
    describe("RANDOMKEY");
    const std::optional<K> got = store_.random_key();
    absorb_reclaims(now);
    if (got) {
      auto it = model_.m.find(*got);
      expect(it != model_.m.end() && !Model<K>::stale(it->second, now), "random_key returned a key that is not live:",
             &*got);
    } else {
      expect(model_.live(now).empty(), "random_key returned nothing while live keys exist");
      expect(model_.m.empty(), "random_key returned nothing but left stale keys stored");
    }
  }
  void op_keys(std::int64_t now) {
    describe("KEYS");
    std::vector<K> got = store_.keys();
    std::sort(got.begin(), got.end());
    std::vector<K> want;
    for (const auto& t : model_.live(now)) want.push_back(std::get<0>(t));
    ++checks_;
    if (got != want) FAIL(context() << "keys(): " << got.size() << " keys, model " << want.size());
  }
  void op_scan(std::int64_t now) {
    describe("SCAN (full)");
    std::set<K> seen;
    std::uint64_t cursor = 0;
    int calls = 0;
    do {
      cursor = store_.scan(cursor, 1 + rnd(20), [&](const K& k, const std::string&) { seen.insert(k); });
      expect(++calls <= 1000, "scan does not terminate");
    } while (cursor != 0);
    absorb_reclaims(now);
    std::set<K> want;
    for (const auto& t : model_.live(now)) want.insert(std::get<0>(t));
    ++checks_;
    if (seen != want) FAIL(context() << "scan reported " << seen.size() << " keys, model has " << want.size());
    expect(model_.m.size() == want.size(), "a full scan left stale keys stored");
  }
  void op_tick(std::int64_t now) {
    const CycleKind kind = chance(60) ? CycleKind::Slow : CycleKind::Fast;
    describe(kind == CycleKind::Slow ? "TICK slow" : "TICK fast");
    const expiring::TickReport r = store_.tick(kind);
    const std::size_t n = absorb_reclaims(now);
    expect_eq(r.expired, static_cast<std::uint64_t>(n), "tick: report.expired vs expired events");
    expect(r.sampled >= r.expired, "tick sampled fewer than it expired");
    if (!active_) expect(!r.ran, "tick ran with active expiry disabled");
    if (!r.ran) expect(r.rounds == 0 && r.expired == 0, "a tick that did not run did something");
    if (n != 0) ++ticks_reclaimed_;
  }
  void op_settings() {
    if (chance(50)) {
      active_ = !active_ || chance(50);
      describe(active_ ? "DEBUG SET-ACTIVE-EXPIRE 1" : "DEBUG SET-ACTIVE-EXPIRE 0");
      store_.set_active_expire_enabled(active_);
    } else {
      const int effort = static_cast<int>(rnd_range(0, 11));
      describe_arg("CONFIG SET active-expire-effort", nullptr, effort);
      const Result<void> got = store_.set_active_expire_effort(effort);
      expect(got.ok() == (effort >= 1 && effort <= 10), "set_active_expire_effort validation");
      if (!got.ok()) expect(got.error() == Errc::out_of_range, "set_active_expire_effort error code");
    }
  }
  void op_clear() {
    describe("FLUSHDB");
    store_.clear();
    model_.m.clear();
  }
  void op_clock() {
    const int r = static_cast<int>(rnd(100));
    std::int64_t delta = 0;
    if (r < 45) {
      delta = rnd_range(0, 20);
    } else if (r < 70) {
      delta = rnd_range(0, 300);
    } else if (r < 80) {
      delta = rnd_range(1000, 5000);
    } else if (r < 96) {
      delta = -rnd_range(0, 60);
    } else {
      // A big jump: an extreme reading, or back to this run's ordinary region.
      const std::int64_t targets[] = {kMax, kMax - 1, kMax - 60'000, kMin, kMin + 1000, -1000, 0, 1,
                                      kMax / 2, static_cast<std::int64_t>(rng_()), 1'700'000'000'000, base_now(), base_now()};
      const std::int64_t t = targets[rnd(sizeof targets / sizeof targets[0])];
      describe_arg("CLOCK SET", nullptr, t);
      clock_.set(t);
      return;
    }
    describe_arg("CLOCK ADVANCE", nullptr, delta);
    clock_.advance(delta);
  }

  // ---- checks ----
  void check_after_op() {
    expect_eq(got_, model_.events, "events");
    expect(store_.check_invariants(), "check_invariants()");
    expect(store_.expires_size() <= store_.size(), "expires_size() <= size()");
    expect_eq(static_cast<std::uint64_t>(store_.size()), static_cast<std::uint64_t>(model_.m.size()),
              "size() (DBSIZE, stale keys included)");
    expect_eq(static_cast<std::uint64_t>(store_.expires_size()), static_cast<std::uint64_t>(model_.volatile_count()),
              "expires_size()");
    const expiring::Stats s = store_.stats();
    expect_eq(s.expired_keys, model_.expired_keys, "stats().expired_keys");
    expect_eq(s.keyspace_hits, model_.hits, "stats().keyspace_hits");
    expect_eq(s.keyspace_misses, model_.misses, "stats().keyspace_misses");
    expect_eq(s.keys, static_cast<std::uint64_t>(model_.m.size()), "stats().keys");
  }
  // Iteration, keys() and peek() against the model's live view (all side-effect free).
  void check_views() {
    const std::int64_t now = clock_.now_ms();
    const auto want = model_.live(now);
    std::vector<std::tuple<K, std::string, std::int64_t>> got;
    for (auto view : store_) got.emplace_back(view.key, view.value, view.pexpiretime);
    std::sort(got.begin(), got.end());
    ++checks_;
    if (got != want) {
      std::ostringstream os;
      for (const auto& [k, v, d] : got) os << " " << show(k) << "=" << v << "@" << d;
      os << "\n  model:";
      for (const auto& [k, v, d] : want) os << " " << show(k) << "=" << v << "@" << d;
      FAIL(context() << "iteration differs from the model's live entries:\n  store:" << os.str());
    }
    for (const K& k : keys_) {
      const std::string* p = store_.peek(k);
      auto it = model_.m.find(k);
      const bool live = it != model_.m.end() && !Model<K>::stale(it->second, now);
      expect(live == (p != nullptr), "peek() liveness of", &k);
      if (live && p != nullptr) expect(*p == it->second.value, "peek() value of", &k);
    }
    expect(got_.empty(), "a quiet view raised events");
  }

  static constexpr int kHistory = 12;

  RunConfig cfg_;
  std::mt19937_64 rng_;
  std::vector<K> keys_;
  std::int64_t budget_now_ = 0;
  std::int64_t budget_step_ = 0;
  std::mt19937_64 draw_rng_{cfg_.seed ^ 0x6A09E667F3BCC909ull};  // Options::random, with jitter on
  std::uint64_t op_draw_ = 0;  // this operation's random draw
  ManualClock clock_;
  Store store_;
  Model<K> model_;
  std::vector<Ev<K>> got_;
  OpLog history_[kHistory];
  int op_ = 0;
  std::uint64_t value_counter_ = 0;
  std::uint64_t checks_ = 0;
  std::uint64_t ticks_reclaimed_ = 0;
  bool active_ = true;
};

std::vector<std::string> string_keys(std::size_t n) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back("key:" + std::to_string(i));
  keys.push_back("");  // the empty key is a key too
  return keys;
}

std::vector<std::uint64_t> integer_keys(std::size_t n) {
  std::vector<std::uint64_t> keys = {0, 1, std::numeric_limits<std::uint64_t>::max(), 1ull << 63};
  for (std::size_t i = keys.size(); i < n; ++i) keys.push_back(0x9E3779B97F4A7C15ull * (i + 1));
  return keys;
}

template <class K, class Hash>
void run_model(RunConfig cfg, std::vector<K> keys) {
  INFO("seed " << cfg.seed);
  Runner<K, Hash> runner(cfg, std::move(keys));
  runner.run();
  // The run exercised what it claims to: many checks, and expiry both lazy and active.
  CHECK(runner.checks() > static_cast<std::uint64_t>(cfg.ops) * 8);
  CHECK(runner.lazy_expiries() > 0);
  CHECK(runner.ticks_that_reclaimed() > 0);
}

}  // namespace

TEST_CASE("model: random operations on std::string keys match the reference model", "[model]") {
  // 4 seeds x 25,000 operations over 65 keys (64 plus the empty key).
  for (std::uint64_t seed : {1ull, 2ull, 3ull, 20240917ull}) {
    run_model<std::string, expiring::Hash<std::string>>(RunConfig{seed, 25'000}, string_keys(64));
  }
}

TEST_CASE("model: random operations with a hash where every key collides", "[model]") {
  for (std::uint64_t seed : {7ull, 8ull}) {
    run_model<std::string, CollidingHash>(RunConfig{seed, 6'000}, string_keys(32));
  }
}

TEST_CASE("model: random operations on std::uint64_t keys match the reference model", "[model]") {
  run_model<std::uint64_t, expiring::Hash<std::uint64_t>>(RunConfig{11, 10'000}, integer_keys(64));
}

TEST_CASE("model: negative and near-limit clocks with TTL jitter on", "[model][jitter]") {
  // Each start with a percentage and an absolute spread; the clock also jumps to the extremes
  // during the run (op_clock). Under UBSan this covers every jitter path's arithmetic.
  const std::int64_t starts[] = {-10'000, kMin + 1, kMin + 60'000, kMax - 60'000, 0};
  const expiring::Jitter jitters[] = {expiring::Jitter::percent(50), expiring::Jitter::percent(100),
                                      expiring::Jitter::spread_ms(kMax), expiring::Jitter::spread_ms(700)};
  std::uint64_t seed = 100;
  for (const std::int64_t start : starts) {
    for (const expiring::Jitter j : jitters) {
      CAPTURE(start, j.amount(), seed);
      run_model<std::string, expiring::Hash<std::string>>(RunConfig{seed++, 3'000, start, j}, string_keys(32));
    }
  }
}
