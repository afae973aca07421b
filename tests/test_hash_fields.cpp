// tests/test_hash_fields.cpp: hash field expiration (Redis 7.4 HFE) on
// ExpiringStore<std::string, FieldMap<std::string, std::string>> (issue 14).
//
// The contract is hash_fields.hpp's, with the Redis behaviour of
// docs/design/hash_fields_research.md (§1, §3, §4, catalogue §6, cited as H<n>) and this
// library's decisions (semantics.md D20-D27: a field is live iff now <= deadline; every member
// that opens a hash first reclaims its stale fields, so a stale field is simply absent).
// What it covers:
// * The HEXPIRE family (all four forms): every reply code for every flag (none, NX, XX, GT,
//   LT, and XX with GT or LT) against a field without TTL, with an earlier, equal or later
//   TTL, and a missing field; code 2 for a time at or before now (conditions first; hdel,
//   expired_subkeys); mixed and duplicated fields in one call; a missing key.
// * Argument errors (negative time, the 2^46 - 1 ms cap in each form, incompatible flags):
//   the error, and nothing changed in the store (stale fields included).
// * HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME values and their rounding up; HPERSIST; HSET,
//   HSETNX and HINCRBY on fields with TTLs; HINCRBY's errors.
// * Lazy expiry by every member that opens a hash, its hexpired event (exactly the reclaimed
//   fields), and the key deleted (del, not expired) with its last field.
// * Active expiry by tick(): deadline order across hashes, the field quota (10000 / hz),
//   the now == deadline boundary, the key's own TTL (independent), subexpiry.
// * rename / copy / del / unlink / set / modify of hashes and the field index.
// * Clock starts: 0, 1000 s, a seeded one inside the field range, one beyond the cap, one
//   minute before INT64_MAX, and clocks before 1970.
// * used_memory() with a memory limit (field TTL writes must be accounted).
// * A model test (random operations, Redis 8's HGETEX / HGETDEL / HSETEX among them, against
//   a reference model, on small hashes and on hashes above FieldMap's 128-field threshold)
//   and a 20000-field hash drained by tick().
// Every store uses TestPolicy (the suite is built once per expiry policy), Options::seed and a
// budget clock that always reads 0, so that no tick depends on real time.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

namespace {

using expiring::Errc;
using expiring::ExpireFlags;
using expiring::FieldReply;
using expiring::KeyEventCause;
using expiring::ManualClock;
using expiring::Options;

using FM = expiring::FieldMap<std::string, std::string>;
using HStore = expiring::Store<std::string, FM, ManualClock&, TestPolicy>;
using Codes = std::vector<int>;
using Times = std::vector<std::int64_t>;
using Names = std::vector<std::string>;
using Pairs = std::vector<std::pair<std::string, std::string>>;

constexpr std::int64_t kCap = 70368744177663;  // 2^46 - 1 ms, Redis 7.4's largest field deadline
constexpr std::int64_t kNoDl = FM::kNoDeadline;
constexpr std::int64_t kT0 = support::T0;
constexpr std::int64_t kMax = support::kMax;
constexpr std::int64_t kMin = support::kMin;

constexpr ExpireFlags kNone = ExpireFlags::None;
constexpr ExpireFlags kNX = ExpireFlags::NX;
constexpr ExpireFlags kXX = ExpireFlags::XX;
constexpr ExpireFlags kGT = ExpireFlags::GT;
constexpr ExpireFlags kLT = ExpireFlags::LT;

// A start inside the field range (support's random start, ~2^61, is beyond the cap): the
// first output of mt19937_64 seeded with kFieldSeed, below the cap by more than three years.
constexpr std::uint64_t kFieldSeed = 0x4EF5'5EED'0014ull;
std::int64_t random_field_start() {
  std::mt19937_64 gen(kFieldSeed);
  return static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(kCap - 100'000'000'000));
}

// ---- Events ------------------------------------------------------------------------------

struct Ev {
  KeyEventCause cause;
  std::string key;
  Pairs fields;  // hexpired: the reclaimed (name, value) pairs, sorted; empty otherwise
  Names order;   // hexpired: the names in the event's map order (not compared)

  friend bool operator==(const Ev& a, const Ev& b) {
    return a.cause == b.cause && a.key == b.key && a.fields == b.fields;
  }
  friend bool operator<(const Ev& a, const Ev& b) {
    return std::tie(a.key, a.cause, a.fields) < std::tie(b.key, b.cause, b.fields);
  }
  friend std::ostream& operator<<(std::ostream& os, const Ev& e) {
    os << expiring::to_string(e.cause) << ' ' << e.key;
    if (!e.fields.empty()) {
      os << " {";
      for (const auto& f : e.fields) os << ' ' << f.first << '=' << f.second;
      os << " }";
    }
    return os;
  }
};
using Evs = std::vector<Ev>;
Ev ev(KeyEventCause c, std::string key, Pairs fields = {}) { return Ev{c, std::move(key), std::move(fields), {}}; }

// ---- Results -----------------------------------------------------------------------------

// The value of a Result that must not be an error.
template <class T>
T ok(expiring::Result<T> r) {
  if (!r.ok()) FAIL("unexpected error: " << r.error());
  return std::move(*r);
}
std::string show(const std::string* p) { return p != nullptr ? *p : std::string("(nil)"); }

// ---- Quiet views of a store --------------------------------------------------------------

struct MField {
  std::string value;
  std::int64_t deadline = kNoDl;
  friend bool operator==(const MField& a, const MField& b) { return a.value == b.value && a.deadline == b.deadline; }
};
using MHash = std::map<std::string, MField>;
using MKeys = std::map<std::string, MHash>;

// Every stored field (stale ones included) with its deadline, read through iteration (which
// opens no hash, reclaims nothing and counts nothing).
MKeys stored(const HStore& s) {
  MKeys out;
  for (const auto& e : s) {
    MHash& h = out[e.key];
    for (std::uint32_t p = 0; p < e.value.size(); ++p) h[e.value.at(p).name] = MField{e.value.at(p).value, e.value.deadline(p)};
  }
  return out;
}
std::string show(const MKeys& keys) {
  std::ostringstream os;
  for (const auto& k : keys) {
    os << k.first << ": {";
    for (const auto& f : k.second) {
      os << ' ' << f.first << '=' << f.second.value;
      if (f.second.deadline != kNoDl) os << '@' << f.second.deadline;
    }
    os << " }\n";
  }
  return os.str();
}

// ---- The fixture -------------------------------------------------------------------------

struct Hfx {
  ManualClock clock;
  HStore store;
  Evs events;

  static Options options(int hz = 10) {
    Options o;
    o.seed = 0x5EED;
    o.hz = hz;
    o.budget_clock_us = [] { return std::int64_t{0}; };
    return o;
  }
  explicit Hfx(std::int64_t start, Options o = options(), expiring::KeyEventCauses causes = expiring::KeyEventCauses::all())
      : clock(start), store(clock, std::move(o)) {
    store.set_listener([this](const HStore::event_type& e) {
      Ev x{e.cause, e.key, {}, {}};
      if (e.cause == KeyEventCause::hexpired) {
        REQUIRE(e.value != nullptr);
        for (const auto& f : *e.value) {
          x.fields.emplace_back(f.name, f.value);
          x.order.push_back(f.name);
        }
        std::sort(x.fields.begin(), x.fields.end());
      }
      events.push_back(std::move(x));
    }, causes);
  }
  Hfx(const Hfx&) = delete;
  Hfx& operator=(const Hfx&) = delete;

  std::int64_t now() const { return clock.now_ms(); }
  Evs take() {
    Evs out;
    out.swap(events);
    return out;
  }
  void hset(const std::string& k, const std::string& f, const std::string& v) { REQUIRE(store.hset(k, f, v).ok()); }
  void hset_many(const std::string& k, const Pairs& pairs) { REQUIRE(store.hset(k, pairs).ok()); }
  // Gives field f of k the absolute deadline `when` (which must be in the future).
  void deadline(const std::string& k, const std::string& f, std::int64_t when) {
    REQUIRE(ok(store.hpexpireat(k, when, {f})) == Codes{FieldReply::set});
  }
  std::string get(const std::string& k, const std::string& f) { return show(ok(store.hget(k, f))); }
  std::size_t hlen(const std::string& k) { return ok(store.hlen(k)); }
  std::size_t stored_size(const std::string& k) const {
    const FM* m = store.peek(k);
    return m == nullptr ? 0 : m->size();
  }
  std::uint64_t subkeys() const { return store.stats().expired_subkeys; }
  std::uint64_t subexpiry() const { return store.stats().subexpiry; }
  std::uint64_t expired_keys() const { return store.stats().expired_keys; }

  // Everything observable through quiet paths: contents with deadlines and key TTLs, the
  // figures, and the number of events.
  std::string state() const {
    std::ostringstream os;
    os << show(stored(store));
    for (const auto& e : store) os << e.key << " ttl " << e.pexpiretime << '\n';
    const expiring::Stats st = store.stats();
    os << "keys " << store.size() << " expires " << store.expires_size() << " subexpiry " << st.subexpiry
       << " expired_subkeys " << st.expired_subkeys << " expired_keys " << st.expired_keys << " hits "
       << st.keyspace_hits << " misses " << st.keyspace_misses << " events " << events.size();
    return os.str();
  }
};

Pairs sorted(Pairs p) {
  std::sort(p.begin(), p.end());
  return p;
}
Names sorted(Names n) {
  std::sort(n.begin(), n.end());
  return n;
}

// ---- The four HEXPIRE forms --------------------------------------------------------------

enum class Cmd { hexpire, hpexpire, hexpireat, hpexpireat };
constexpr Cmd kCmds[] = {Cmd::hexpire, Cmd::hpexpire, Cmd::hexpireat, Cmd::hpexpireat};
const char* name(Cmd c) {
  switch (c) {
    case Cmd::hexpire: return "hexpire";
    case Cmd::hpexpire: return "hpexpire";
    case Cmd::hexpireat: return "hexpireat";
    case Cmd::hpexpireat: return "hpexpireat";
  }
  return "?";
}
bool in_seconds(Cmd c) { return c == Cmd::hexpire || c == Cmd::hexpireat; }
bool absolute(Cmd c) { return c == Cmd::hexpireat || c == Cmd::hpexpireat; }
// A deadline at least `sec` seconds after now on the command's grid (whole seconds from now,
// or whole Unix seconds for HEXPIREAT).
std::int64_t future_on_grid(Cmd c, std::int64_t now, std::int64_t sec) {
  return c == Cmd::hexpireat ? (now / 1000 + sec + 1) * 1000 : now + sec * 1000;
}
// The argument that asks for deadline `when` (on the command's grid) at `now`.
std::int64_t arg_for(Cmd c, std::int64_t when, std::int64_t now) {
  switch (c) {
    case Cmd::hexpire: return (when - now) / 1000;
    case Cmd::hpexpire: return when - now;
    case Cmd::hexpireat: return when / 1000;
    case Cmd::hpexpireat: return when;
  }
  return 0;
}
template <class Fields>
expiring::Result<Codes> call(HStore& s, Cmd c, const std::string& k, std::int64_t arg, const Fields& f,
                             ExpireFlags fl = kNone) {
  switch (c) {
    case Cmd::hexpire: return s.hexpire(k, arg, f, fl);
    case Cmd::hpexpire: return s.hpexpire(k, arg, f, fl);
    case Cmd::hexpireat: return s.hexpireat(k, arg, f, fl);
    case Cmd::hpexpireat: return s.hpexpireat(k, arg, f, fl);
  }
  return Errc::out_of_range;
}
// HGETEX's / HSETEX's time argument in the form of command c.
expiring::FieldTtl field_ttl(Cmd c, std::int64_t arg) {
  switch (c) {
    case Cmd::hexpire: return expiring::FieldTtl::ex(arg);
    case Cmd::hpexpire: return expiring::FieldTtl::px(arg);
    case Cmd::hexpireat: return expiring::FieldTtl::exat(arg);
    case Cmd::hpexpireat: return expiring::FieldTtl::pxat(arg);
  }
  return expiring::FieldTtl::keep();
}
// The argument meaning "now" (relative 0, absolute `now` on the command's unit: for
// HEXPIREAT the whole second at or before now).
std::int64_t now_arg(Cmd c, std::int64_t now) {
  switch (c) {
    case Cmd::hexpire:
    case Cmd::hpexpire: return 0;
    case Cmd::hexpireat: return now / 1000;
    case Cmd::hpexpireat: return now;
  }
  return 0;
}

// One row of the condition table: the code for a field without TTL, and with a TTL earlier
// than, equal to and later than the new deadline (a missing field is always -2).
struct FlagRow {
  ExpireFlags flags;
  const char* name;
  int none, earlier, equal, later;
};
constexpr FlagRow kRows[] = {
    {kNone, "none", 1, 1, 1, 1}, {kNX, "NX", 1, 0, 0, 0}, {kXX, "XX", 0, 1, 1, 1},
    {kGT, "GT", 0, 1, 0, 0},     {kLT, "LT", 1, 0, 0, 1},
};

// The field states of the condition table, set up in hash "h" for a new deadline `when`.
const Names kStates{"none", "earlier", "equal", "later", "missing"};
void setup_states(Hfx& fx, std::int64_t when) {
  for (const char* f : {"none", "earlier", "equal", "later"}) fx.hset("h", f, std::string("v-") + f);
  fx.deadline("h", "earlier", when - 1000);
  fx.deadline("h", "equal", when);
  fx.deadline("h", "later", when + 1000);
  (void)fx.take();
}
Times deadlines_after(const int* codes, std::int64_t when) {
  const std::int64_t before[] = {-1, when - 1000, when, when + 1000};
  Times t;
  for (int j = 0; j < 4; ++j) t.push_back(codes[j] == FieldReply::set ? when : before[j]);
  t.push_back(FieldReply::no_field);
  return t;
}

}  // namespace

// =============================================================================================
// 1. The HEXPIRE family's reply codes
// =============================================================================================

TEST_CASE("hash fields: HEXPIRE family codes for every flag against every field state", "[hash_fields]") {
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, kT0, 0, random_field_start());
  CAPTURE(start);
  for (const Cmd c : kCmds) {
    for (const FlagRow& row : kRows) {
      CAPTURE(name(c), row.name);
      const int codes[] = {row.none, row.earlier, row.equal, row.later};
      {  // All five states in one call.
        Hfx fx(start);
        const std::int64_t when = future_on_grid(c, start, 20);
        setup_states(fx, when);
        const Codes got = ok(call(fx.store, c, "h", arg_for(c, when, start), kStates, row.flags));
        CHECK(got == Codes{row.none, row.earlier, row.equal, row.later, FieldReply::no_field});
        CHECK(ok(fx.store.hpexpiretime("h", kStates)) == deadlines_after(codes, when));
        CHECK(fx.take() == Evs{ev(KeyEventCause::hexpire, "h")});  // every row sets some field
        CHECK(fx.hlen("h") == 4);
        CHECK(fx.subkeys() == 0);
        CHECK(fx.subexpiry() == 1);
        CHECK(fx.store.check_invariants());
      }
      for (std::size_t j = 0; j < kStates.size(); ++j) {  // Each state alone: its code, and an event only for 1.
        CAPTURE(kStates[j]);
        Hfx fx(start);
        const std::int64_t when = future_on_grid(c, start, 20);
        setup_states(fx, when);
        const std::string before = fx.state();
        const int want = j < 4 ? codes[j] : FieldReply::no_field;
        CHECK(ok(call(fx.store, c, "h", arg_for(c, when, start), Names{kStates[j]}, row.flags)) == Codes{want});
        if (want == FieldReply::set) {
          CHECK(fx.take() == Evs{ev(KeyEventCause::hexpire, "h")});
          CHECK(ok(fx.store.hpexpiretime("h", Names{kStates[j]})) == Times{when});
        } else {
          CHECK(fx.state() == before);  // 0 and -2 change nothing and raise no event
        }
      }
    }
  }
}

TEST_CASE("hash fields: XX with GT or LT applies both conditions, as EXPIRE does for keys", "[hash_fields]") {
  // ExpireFlags accepts XX|GT and XX|LT (only NX with another flag, and GT with LT, are
  // refused); GT and LT keep their documented meaning: the key EXPIRE of the same store
  // applies both conditions, and so must the field form.
  struct Row {
    ExpireFlags flags;
    const char* name;
    int none, earlier, equal, later;
  };
  const Row rows[] = {{kXX | kGT, "XX|GT", 0, 1, 0, 0}, {kXX | kLT, "XX|LT", 0, 0, 0, 1}};
  for (const Cmd c : kCmds) {
    for (const Row& row : rows) {
      CAPTURE(name(c), row.name);
      Hfx fx(kT0);
      const std::int64_t when = future_on_grid(c, kT0, 20);
      setup_states(fx, when);
      const int codes[] = {row.none, row.earlier, row.equal, row.later};
      CHECK(ok(call(fx.store, c, "h", arg_for(c, when, kT0), kStates, row.flags)) ==
            Codes{row.none, row.earlier, row.equal, row.later, FieldReply::no_field});
      CHECK(ok(fx.store.hpexpiretime("h", kStates)) == deadlines_after(codes, when));
    }
  }
  // The key form, for comparison: XX|GT with an earlier deadline is refused.
  ManualClock clock(kT0);
  ttltest::Store<support::StringKeys> keys(clock);
  REQUIRE(keys.set("k", "v") == true);
  REQUIRE(keys.pexpire("k", 2000) == true);
  CHECK(keys.pexpire("k", 1000, kXX | kGT) == false);
  CHECK(keys.pexpire("k", 3000, kXX | kLT) == false);
  CHECK(keys.pttl("k") == 2000);
}

TEST_CASE("hash fields: a time at or before now deletes the field, after the conditions", "[hash_fields]") {
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, kT0, 0, random_field_start());
  CAPTURE(start);
  for (const Cmd c : kCmds) {
    CAPTURE(name(c));
    const std::int64_t past = now_arg(c, start);
    {  // Code 2: the field goes (hdel), counted in expired_subkeys; the key stays.
      Hfx fx(start);
      fx.hset("h", "f", "v");
      fx.hset("h", "g", "w");
      (void)fx.take();
      CHECK(ok(call(fx.store, c, "h", past, Names{"f"})) == Codes{FieldReply::deleted});
      CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
      CHECK(fx.get("h", "f") == "(nil)");
      CHECK(fx.hlen("h") == 1);
      CHECK(fx.subkeys() == 1);
      CHECK(fx.expired_keys() == 0);
      CHECK(fx.store.check_invariants());
    }
    if (start >= 1000) {  // Strictly in the past too.
      Hfx fx(start);
      fx.hset("h", "f", "v");
      fx.hset("h", "g", "w");
      const std::int64_t earlier = absolute(c) ? past - 1 : past;
      CHECK(ok(call(fx.store, c, "h", earlier, Names{"f"})) == Codes{FieldReply::deleted});
      CHECK(fx.hlen("h") == 1);
    }
    {  // Conditions are checked first (H33, H34): GT and XX fail on a field without TTL, NX and
       // GT on a field with a later TTL; LT and NX pass and delete.
      Hfx fx(start);
      fx.hset("h", "plain", "1");
      fx.hset("h", "timed", "2");
      fx.hset("h", "keep", "3");
      fx.deadline("h", "timed", start + 5000);
      (void)fx.take();
      const std::string before = fx.state();
      CHECK(ok(call(fx.store, c, "h", past, Names{"plain"}, kGT)) == Codes{FieldReply::condition_not_met});
      CHECK(ok(call(fx.store, c, "h", past, Names{"plain"}, kXX)) == Codes{FieldReply::condition_not_met});
      CHECK(ok(call(fx.store, c, "h", past, Names{"timed"}, kNX)) == Codes{FieldReply::condition_not_met});
      CHECK(ok(call(fx.store, c, "h", past, Names{"timed"}, kGT)) == Codes{FieldReply::condition_not_met});
      CHECK(fx.state() == before);
      CHECK(ok(call(fx.store, c, "h", past, Names{"timed"}, kLT)) == Codes{FieldReply::deleted});
      CHECK(ok(call(fx.store, c, "h", past, Names{"plain"}, kNX)) == Codes{FieldReply::deleted});
      CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::hdel, "h")});
      CHECK(ok(fx.store.hkeys("h")) == Names{"keep"});
      CHECK(fx.subkeys() == 2);
      CHECK(fx.subexpiry() == 0);
    }
    {  // H32: [2, 2, -2, 0] in one call, the TTL'd field kept.
      Hfx fx(start);
      for (const char* f : {"f1", "f2", "f4"}) fx.hset("h", f, "v");
      CHECK(ok(fx.store.hexpire("h", 1000, {"f4"}, kNX)) == Codes{FieldReply::set});
      (void)fx.take();
      CHECK(ok(call(fx.store, c, "h", past, Names{"f1", "f2", "f3", "f4"}, kNX)) ==
            Codes{FieldReply::deleted, FieldReply::deleted, FieldReply::no_field, FieldReply::condition_not_met});
      CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
      CHECK_FALSE(ok(fx.store.hexists("h", "f1")));
      CHECK(fx.hlen("h") == 1);
      CHECK(ok(fx.store.httl("h", {"f4"})) == Times{1000});
      CHECK(fx.subkeys() == 2);
    }
    {  // H38: the last fields go: hdel, then del of the key; expired_keys does not move.
      Hfx fx(start);
      REQUIRE(ok(fx.store.hset("h", {{"a", "1"}, {"b", "2"}, {"c", "3"}})) == 3);
      (void)fx.take();
      CHECK(ok(call(fx.store, c, "h", past, Names{"a", "b"})) == Codes{FieldReply::deleted, FieldReply::deleted});
      CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
      CHECK(ok(call(fx.store, c, "h", past, Names{"c"})) == Codes{FieldReply::deleted});
      CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::del, "h")});
      CHECK_FALSE(fx.store.exists("h"));
      CHECK(fx.store.size() == 0);
      CHECK(fx.subkeys() == 3);
      CHECK(fx.expired_keys() == 0);
      CHECK(fx.subexpiry() == 0);
      CHECK(fx.store.check_invariants());
    }
  }
}

TEST_CASE("hash fields: mixed and duplicated fields in one call", "[hash_fields]") {
  Hfx fx(kT0);
  SECTION("mixed fields with GT and with NX") {
    fx.hset("h", "timed", "1");
    fx.hset("h", "plain", "2");
    fx.deadline("h", "timed", kT0 + 1000);
    CHECK(ok(fx.store.hpexpire("h", 2000, {"timed", "missing", "plain"}, kGT)) ==
          Codes{FieldReply::set, FieldReply::no_field, FieldReply::condition_not_met});
    CHECK(ok(fx.store.hpexpire("h", 3000, {"timed", "missing", "plain"}, kNX)) ==
          Codes{FieldReply::condition_not_met, FieldReply::no_field, FieldReply::set});
    CHECK(ok(fx.store.hpttl("h", {"timed", "missing", "plain"})) == Times{2000, -2, 3000});
  }
  SECTION("H39: events of a mixed call") {
    fx.hset("h", "a", "1");
    (void)fx.take();
    CHECK(ok(fx.store.hexpire("h", 100, {"a", "nosuch"})) == Codes{FieldReply::set, FieldReply::no_field});
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpire, "h")});
    CHECK(ok(fx.store.hexpire("h", 100, {"a"}, kNX)) == Codes{FieldReply::condition_not_met});
    CHECK(ok(fx.store.hexpire("h", 100, {"nosuch"})) == Codes{FieldReply::no_field});
    CHECK(fx.take().empty());
  }
  SECTION("H40-H43: a duplicate sees the first occurrence's effect") {
    fx.hset("h", "f", "v");
    CHECK(ok(fx.store.hexpire("h", 100, {"f", "f"}, kNX)) == Codes{FieldReply::set, FieldReply::condition_not_met});
    CHECK(ok(fx.store.hexpire("h", 100, {"f", "f"})) == Codes{FieldReply::set, FieldReply::set});
    CHECK(ok(fx.store.httl("h", {"f", "f", "x"})) == Times{100, 100, -2});
    CHECK(ok(fx.store.hpersist("h", {"f", "f"})) == Codes{FieldReply::persisted, FieldReply::no_ttl});
    (void)fx.take();
    CHECK(ok(fx.store.hexpire("h", 0, {"f", "f"})) == Codes{FieldReply::deleted, FieldReply::no_field});
    CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::del, "h")});
    CHECK_FALSE(fx.store.exists("h"));
    CHECK(fx.subkeys() == 1);
  }
  SECTION("the allocation-free form writes the same codes") {
    fx.hset("h", "f", "v");
    int out[3] = {7, 7, 7};
    REQUIRE(fx.store.hpexpire("h", 500, Names{"f", "x", "f"}, kNone, out).ok());
    CHECK(Codes(out, out + 3) == Codes{FieldReply::set, FieldReply::no_field, FieldReply::set});
    std::int64_t t[2] = {0, 0};
    REQUIRE(fx.store.hpttl("h", Names{"f", "x"}, t).ok());
    CHECK(Times(t, t + 2) == Times{500, -2});
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: a missing key answers -2 for every field and is not created", "[hash_fields]") {
  Hfx fx(kT0);
  for (const Cmd c : kCmds) {
    CAPTURE(name(c));
    CHECK(ok(call(fx.store, c, "nokey", arg_for(c, future_on_grid(c, kT0, 5), kT0), Names{"a", "b"})) ==
          Codes{-2, -2});
    CHECK(ok(call(fx.store, c, "nokey", now_arg(c, kT0), Names{"a"})) == Codes{-2});  // a past time too
  }
  CHECK(ok(fx.store.httl("nokey", {"a", "b"})) == Times{-2, -2});
  CHECK(ok(fx.store.hpttl("nokey", {"a"})) == Times{-2});
  CHECK(ok(fx.store.hexpiretime("nokey", {"a"})) == Times{-2});
  CHECK(ok(fx.store.hpexpiretime("nokey", {"a", "b"})) == Times{-2, -2});
  CHECK(ok(fx.store.hpersist("nokey", {"a", "b"})) == Codes{-2, -2});
  CHECK(ok(fx.store.hdel("nokey", {"a"})) == 0);
  CHECK(fx.hlen("nokey") == 0);
  CHECK(ok(fx.store.hgetall("nokey")).empty());
  CHECK(fx.get("nokey", "a") == "(nil)");
  CHECK_FALSE(fx.store.exists("nokey"));
  CHECK(fx.store.size() == 0);
  CHECK(fx.events.empty());
  CHECK(fx.subexpiry() == 0);
}

// =============================================================================================
// 2. Argument errors
// =============================================================================================

TEST_CASE("hash fields: argument errors are refused and change nothing", "[hash_fields]") {
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, kT0, 0, random_field_start());
  CAPTURE(start);
  Hfx fx(start);
  fx.hset("h", "f", "v");
  fx.hset("h", "g", "w");
  fx.hset("h", "s", "stale");
  fx.deadline("h", "g", start + 100'000);
  fx.deadline("h", "s", start + 10);
  fx.clock.advance(11);  // "s" is stale and stays stored until something opens the hash
  const std::int64_t now = fx.now();
  const std::string before = fx.state();
  const auto refused = [&](Errc want, Cmd c, std::int64_t arg, ExpireFlags fl, const char* what) {
    CAPTURE(name(c), arg, what);
    for (const std::string key : {"h", "nokey"}) {
      CAPTURE(key);
      const expiring::Result<Codes> r = call(fx.store, c, key, arg, Names{"f", "g", "s"}, fl);
      CHECK(r == want);
      int out[3] = {9, 9, 9};
      expiring::Result<void> r2 = Errc::out_of_range;
      switch (c) {
        case Cmd::hexpire: r2 = fx.store.hexpire(key, arg, Names{"f"}, fl, out); break;
        case Cmd::hpexpire: r2 = fx.store.hpexpire(key, arg, Names{"f"}, fl, out); break;
        case Cmd::hexpireat: r2 = fx.store.hexpireat(key, arg, Names{"f"}, fl, out); break;
        case Cmd::hpexpireat: r2 = fx.store.hpexpireat(key, arg, Names{"f"}, fl, out); break;
      }
      CHECK(r2 == want);
      CHECK(fx.state() == before);
    }
  };
  for (const Cmd c : kCmds) {
    refused(Errc::negative_expire_time, c, -1, kNone, "negative");
    refused(Errc::negative_expire_time, c, kMin, kNone, "INT64_MIN");
    refused(Errc::negative_expire_time, c, -1, kNX, "negative with NX");
    refused(Errc::invalid_expire_time, c, kMax, kNone, "INT64_MAX");
    const std::int64_t unit = in_seconds(c) ? 1000 : 1;
    refused(Errc::invalid_expire_time, c, kCap / unit + 1, kNone, "above the cap in the command's unit");
    if (absolute(c)) {
      refused(Errc::invalid_expire_time, c, in_seconds(c) ? 70368744178 : 70368744177664, kNone, "H15/H16 cap + 1");
    } else {
      // The deadline now + time must not pass the cap (H17, H18).
      const std::int64_t over = in_seconds(c) ? (kCap - now) / 1000 + 1 : kCap - now + 1;
      refused(Errc::invalid_expire_time, c, over, kNone, "now + time above the cap");
      refused(Errc::invalid_expire_time, c, over, kGT, "now + time above the cap, GT");
    }
    const std::int64_t fine = arg_for(c, future_on_grid(c, now, 5), now);
    refused(Errc::nx_and_xx_gt_lt, c, fine, kNX | kXX, "NX|XX");
    refused(Errc::nx_and_xx_gt_lt, c, fine, kNX | kGT, "NX|GT");
    refused(Errc::nx_and_xx_gt_lt, c, fine, kNX | kLT, "NX|LT");
    refused(Errc::nx_and_xx_gt_lt, c, fine, kNX | kXX | kGT | kLT, "all four");
    refused(Errc::gt_and_lt, c, fine, kGT | kLT, "GT|LT");
    refused(Errc::gt_and_lt, c, fine, kXX | kGT | kLT, "XX|GT|LT");
  }
  CHECK(fx.subkeys() == 0);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: the largest accepted field times, in each form", "[hash_fields]") {
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, kT0, 0, random_field_start());
  CAPTURE(start);
  Hfx fx(start);
  fx.hset("h", "f", "v");
  SECTION("H15, H19: HPEXPIREAT 2^46 - 1") {
    CHECK(ok(fx.store.hpexpireat("h", kCap, {"f"})) == Codes{1});
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{kCap});
    CHECK(ok(fx.store.hexpiretime("h", {"f"})) == Times{70368744178});
    CHECK(ok(fx.store.hpttl("h", {"f"})) == Times{kCap - start});
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{(kCap - start + 999) / 1000});
    CHECK(fx.store.hpexpireat("h", kCap + 1, {"f"}) == Errc::invalid_expire_time);
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{kCap});
  }
  SECTION("H16: HEXPIREAT 70368744177") {
    CHECK(ok(fx.store.hexpireat("h", 70368744177, {"f"})) == Codes{1});
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{70368744177000});
    CHECK(fx.store.hexpireat("h", 70368744178, {"f"}) == Errc::invalid_expire_time);
  }
  SECTION("H17: HPEXPIRE up to the cap") {
    CHECK(ok(fx.store.hpexpire("h", kCap - start, {"f"})) == Codes{1});
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{kCap});
    CHECK(fx.store.hpexpire("h", kCap - start + 1, {"f"}) == Errc::invalid_expire_time);
  }
  SECTION("H18: HEXPIRE up to the cap") {
    const std::int64_t s = (kCap - start) / 1000;
    CHECK(ok(fx.store.hexpire("h", s, {"f"})) == Codes{1});
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{start + s * 1000});
    CHECK(fx.store.hexpire("h", s + 1, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hexpire("h", 70368744178, {"f"}) == Errc::invalid_expire_time);
  }
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 3. HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME
// =============================================================================================

TEST_CASE("hash fields: field TTL queries, -2, -1, values and rounding up", "[hash_fields]") {
  Hfx fx(kT0);
  fx.hset("h", "field1", "value1");
  fx.hset("h", "field2", "value2");
  SECTION("H23: no TTL is -1, no such field -2") {
    CHECK(ok(fx.store.httl("h", {"field1", "nosuch"})) == Times{-1, -2});
    CHECK(ok(fx.store.hpttl("h", {"field1", "nosuch"})) == Times{-1, -2});
    CHECK(ok(fx.store.hexpiretime("h", {"field1", "nosuch"})) == Times{-1, -2});
    CHECK(ok(fx.store.hpexpiretime("h", {"field1", "nosuch"})) == Times{-1, -2});
  }
  SECTION("H44, H45: HTTL rounds up") {
    const std::int64_t ms[] = {1, 999, 1000, 1001, 1499, 1500, 2000, 2001};
    const std::int64_t s[] = {1, 1, 1, 2, 2, 2, 2, 3};
    for (int j = 0; j < 8; ++j) {
      CAPTURE(ms[j]);
      REQUIRE(ok(fx.store.hpexpire("h", ms[j], {"field1"})) == Codes{1});
      CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{ms[j]});
      CHECK(ok(fx.store.httl("h", {"field1"})) == Times{s[j]});
    }
  }
  SECTION("H46, H47: absolute times, HEXPIRETIME rounds up") {
    CHECK(ok(fx.store.hexpireat("h", 1100, {"field1"})) == Codes{1});
    CHECK(ok(fx.store.hexpiretime("h", {"field1"})) == Times{1100});
    CHECK(ok(fx.store.hpexpiretime("h", {"field1"})) == Times{1100000});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{100});
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{100000});
    const std::int64_t at[] = {1010001, 1010000, 1010999};
    const std::int64_t sec[] = {1011, 1010, 1011};
    for (int j = 0; j < 3; ++j) {
      REQUIRE(ok(fx.store.hpexpireat("h", at[j], {"field1"})) == Codes{1});
      CHECK(ok(fx.store.hexpiretime("h", {"field1"})) == Times{sec[j]});
      CHECK(ok(fx.store.hpexpiretime("h", {"field1"})) == Times{at[j]});
    }
  }
  SECTION("H48, H49: progress to the deadline; at the deadline 0 and still readable") {
    REQUIRE(ok(fx.store.hpexpire("h", 1000, {"field1"}, kNX)) == Codes{1});
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{1000});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{1});
    fx.clock.set(kT0 + 100);
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{900});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{1});
    fx.clock.set(kT0 + 999);
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{1});
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{1});
    fx.clock.set(kT0 + 1000);
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{0});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{0});
    CHECK(ok(fx.store.hpexpiretime("h", {"field1"})) == Times{kT0 + 1000});
    CHECK(fx.get("h", "field1") == "value1");
    CHECK(fx.subkeys() == 0);
    fx.clock.set(kT0 + 1001);
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{-2});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{-2});
    CHECK(fx.get("h", "field1") == "(nil)");
    CHECK(fx.subkeys() == 1);
  }
  SECTION("HTTL of 1001 ms left is 2, of 1000 ms is 1") {
    REQUIRE(ok(fx.store.hpexpire("h", 5000, {"field1"})) == Codes{1});
    fx.clock.set(kT0 + 5000 - 1001);
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{2});
    fx.clock.set(kT0 + 5000 - 1000);
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{1});
    fx.clock.set(kT0 + 5000 - 1);
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{1});
  }
  SECTION("H51") {
    CHECK(ok(fx.store.hexpireat("h", 1002, {"field1"}, kNX)) == Codes{1});
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{2000});
    CHECK(ok(fx.store.hexpireat("h", 1005, {"field1"}, kXX)) == Codes{1});
    CHECK(ok(fx.store.httl("h", {"field1"})) == Times{5});
  }
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 4. HPERSIST, HSET, HSETNX, HINCRBY
// =============================================================================================

TEST_CASE("hash fields: HPERSIST codes and events", "[hash_fields]") {
  Hfx fx(kT0);
  fx.hset("h", "f1", "v1");
  fx.hset("h", "f2", "v2");
  SECTION("H52") {
    CHECK(ok(fx.store.hexpire("h", 1000, {"f1"}, kNX)) == Codes{1});
    CHECK(fx.subexpiry() == 1);
    (void)fx.take();
    CHECK(ok(fx.store.hpersist("h", {"f1", "not-exists-field"})) == Codes{1, -2});
    CHECK(fx.take() == Evs{ev(KeyEventCause::hpersist, "h")});
    CHECK(fx.subexpiry() == 0);
    CHECK(ok(fx.store.hpersist("h", {"f2"})) == Codes{-1});
    CHECK(fx.take().empty());
    CHECK(ok(fx.store.httl("h", {"f1", "f2"})) == Times{-1, -1});
  }
  SECTION("H53: persisted fields outlive their old deadline") {
    CHECK(ok(fx.store.hexpire("h", 20, {"f1", "f2"}, kNX)) == Codes{1, 1});
    CHECK(ok(fx.store.hpersist("h", {"f1", "f2"})) == Codes{1, 1});
    fx.clock.set(kT0 + 25'000);
    (void)fx.store.tick();
    CHECK(fx.get("h", "f1") == "v1");
    CHECK(fx.get("h", "f2") == "v2");
    CHECK(ok(fx.store.httl("h", {"f1", "f2"})) == Times{-1, -1});
    CHECK(fx.subkeys() == 0);
  }
  SECTION("a stale field is -2 and is reclaimed") {
    CHECK(ok(fx.store.hpexpire("h", 10, {"f1"})) == Codes{1});
    fx.clock.set(kT0 + 11);
    (void)fx.take();
    CHECK(ok(fx.store.hpersist("h", {"f1", "f2"})) == Codes{-2, -1});
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"f1", "v1"}})});
    CHECK(fx.subkeys() == 1);
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: HSET clears a field TTL, HINCRBY keeps it, HSETNX leaves a live field", "[hash_fields]") {
  Hfx fx(kT0);
  SECTION("H54: an overwrite clears the TTL") {
    REQUIRE(ok(fx.store.hset("h", {{"field1", "value1"}, {"field2", "value2"}, {"field3", "value3"}})) == 3);
    CHECK(ok(fx.store.hpexpire("h", 10000, {"field1"}, kNX)) == Codes{1});
    CHECK(ok(fx.store.hpexpire("h", 1, {"field2"}, kNX)) == Codes{1});
    (void)fx.take();
    CHECK(ok(fx.store.hset("h", "field2", "value4")) == 0);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h")});
    fx.clock.set(kT0 + 5);
    CHECK(fx.get("h", "field2") == "value4");
    CHECK(ok(fx.store.httl("h", {"field2", "field3"})) == Times{-1, -1});
    CHECK(ok(fx.store.hpttl("h", {"field1"})) == Times{9995});
    CHECK(fx.subkeys() == 0);
  }
  SECTION("H55: HSET's counts, and the multi-field form clears TTLs too") {
    REQUIRE(ok(fx.store.hset("h", {{"f1", "v1"}, {"f2", "v2"}})) == 2);
    CHECK(ok(fx.store.hexpire("h", 100000, {"f1", "f2"})) == Codes{1, 1});
    CHECK(ok(fx.store.hset("h", "f2", "v2")) == 0);
    CHECK(ok(fx.store.hset("h", "f3", "v3")) == 1);
    CHECK(ok(fx.store.hset("h", {{"f3", "v3"}, {"f4", "v4"}})) == 1);
    CHECK(ok(fx.store.hset("h", {{"f3", "v3"}, {"f5", "v5"}, {"f6", "v6"}})) == 2);
    CHECK(ok(fx.store.hset("h", {{"f1", "x"}, {"f7", "y"}})) == 1);
    CHECK(ok(fx.store.httl("h", {"f1", "f2"})) == Times{-1, -1});
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("H56: HSETNX on a live field changes nothing") {
    fx.hset("h", "f", "v");
    CHECK(ok(fx.store.hpexpire("h", 100, {"f"})) == Codes{1});
    (void)fx.take();
    const std::string before = fx.state();
    CHECK(ok(fx.store.hsetnx("h", "f", "w")) == false);
    CHECK(fx.state() == before);
    CHECK(ok(fx.store.hpttl("h", {"f"})) == Times{100});
    CHECK(fx.get("h", "f") == "v");
    CHECK(ok(fx.store.hsetnx("h", "g", "w")) == true);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h")});
    CHECK(ok(fx.store.httl("h", {"g"})) == Times{-1});
  }
  SECTION("H57, H58: HSETNX on a stale field writes it without TTL") {
    fx.hset("h", "f", "v");
    fx.hset("h", "g", "w");
    CHECK(ok(fx.store.hpexpire("h", 10, {"f"})) == Codes{1});
    fx.clock.set(kT0 + 11);
    (void)fx.take();
    CHECK(ok(fx.store.hsetnx("h", "f", "x")) == true);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"f", "v"}}), ev(KeyEventCause::hset, "h")});
    CHECK(fx.get("h", "f") == "x");
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{-1});
    CHECK(fx.subkeys() == 1);
    // The only field: the key goes and a new one is made.
    fx.hset("h2", "f", "v");
    CHECK(ok(fx.store.hpexpire("h2", 10, {"f"})) == Codes{1});
    fx.clock.set(kT0 + 22);
    (void)fx.take();
    CHECK(ok(fx.store.hsetnx("h2", "f", "x")) == true);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h2", {{"f", "v"}}), ev(KeyEventCause::del, "h2"),
                           ev(KeyEventCause::hset, "h2")});
    CHECK(fx.hlen("h2") == 1);
  }
  SECTION("H59: HINCRBY keeps the TTL") {
    fx.hset("h1", "f1", "10");
    CHECK(ok(fx.store.hpexpire("h1", 20, {"f1"})) == Codes{1});
    (void)fx.take();
    CHECK(ok(fx.store.hincrby("h1", "f1", 2)) == 12);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h1")});
    CHECK(ok(fx.store.hpttl("h1", {"f1"})) == Times{20});
    CHECK(fx.get("h1", "f1") == "12");
    CHECK(fx.subexpiry() == 1);
  }
  SECTION("H60: HINCRBY on a stale field starts from 0 without TTL") {
    fx.hset("h1", "f1", "10");
    fx.hset("h1", "f2", "2");
    fx.hset("h2", "f1", "10");
    CHECK(ok(fx.store.hincrby("h1", "f1", 2)) == 12);
    CHECK(ok(fx.store.hincrby("h2", "f1", 2)) == 12);
    CHECK(ok(fx.store.hpexpire("h1", 10, {"f1"})) == Codes{1});
    CHECK(ok(fx.store.hpexpire("h2", 10, {"f1"})) == Codes{1});
    fx.clock.set(kT0 + 15);
    CHECK(ok(fx.store.hincrby("h1", "f1", 1)) == 1);
    CHECK(ok(fx.store.hincrby("h2", "f1", 1)) == 1);
    CHECK(ok(fx.store.httl("h1", {"f1"})) == Times{-1});
    CHECK(ok(fx.store.httl("h2", {"f1"})) == Times{-1});
    CHECK(fx.subkeys() == 2);
    CHECK(fx.subexpiry() == 0);
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: HINCRBY errors change nothing, and HINCRBY creates a missing key", "[hash_fields]") {
  Hfx fx(kT0);
  SECTION("not an integer, and overflow") {
    const Pairs values{{"word", "abc"},      {"float", "1.5"},  {"space", " 1"}, {"plus", "+1"},
                       {"zero-led", "01"},   {"minus0", "-0"},  {"empty", ""},   {"long", "123456789012345678901"},
                       {"max", "9223372036854775807"}, {"min", "-9223372036854775808"}, {"timed", "7"}};
    fx.hset_many("h", values);
    fx.deadline("h", "timed", kT0 + 500);
    fx.deadline("h", "word", kT0 + 600);
    (void)fx.take();
    const std::string before = fx.state();
    for (const char* f : {"word", "float", "space", "plus", "zero-led", "minus0", "empty", "long"}) {
      CAPTURE(f);
      CHECK(fx.store.hincrby("h", f, 1) == Errc::not_an_integer);
      CHECK(fx.state() == before);
    }
    CHECK(fx.store.hincrby("h", "max", 1) == Errc::overflow);
    CHECK(fx.store.hincrby("h", "min", -1) == Errc::overflow);
    CHECK(fx.store.hincrby("h", "timed", kMax) == Errc::overflow);
    CHECK(fx.store.hincrby("h", "timed", kMin) == 7 + kMin);  // in range
    CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h")});
    CHECK(fx.store.hincrby("h", "timed", -8) == Errc::overflow);  // 7 + INT64_MIN - 8
    CHECK(ok(fx.store.hpttl("h", {"timed", "word"})) == Times{500, 600});
    CHECK(fx.get("h", "max") == "9223372036854775807");
    CHECK(fx.get("h", "word") == "abc");
    CHECK(fx.take().empty());
  }
  SECTION("a missing key is created with the field, without TTL") {
    CHECK(ok(fx.store.hincrby("counter", "n", -5)) == -5);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "counter")});
    CHECK(fx.store.exists("counter"));
    CHECK(fx.get("counter", "n") == "-5");
    CHECK(fx.hlen("counter") == 1);
    CHECK(ok(fx.store.httl("counter", {"n"})) == Times{-1});
    CHECK(ok(fx.store.hincrby("counter", "n", 5)) == 0);
    CHECK(fx.get("counter", "n") == "0");
    CHECK(ok(fx.store.hincrby("counter", "m", kMax)) == kMax);
    CHECK(fx.subexpiry() == 0);
  }
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 5. Lazy expiry
// =============================================================================================

TEST_CASE("hash fields: every member that opens a hash reclaims its stale fields first", "[hash_fields]") {
  Hfx fx(kT0);
  REQUIRE(ok(fx.store.hset("h", {{"f1", "v1"}, {"f2", "v2"}, {"g", "w"}})) == 3);
  REQUIRE(ok(fx.store.hpexpire("h", 100, {"f1"})) == Codes{1});
  REQUIRE(ok(fx.store.hpexpire("h", 200, {"f2"})) == Codes{1});
  (void)fx.take();
  fx.clock.set(kT0 + 100);  // f1 at its deadline: live (D20)
  CHECK(fx.get("h", "f1") == "v1");
  CHECK(fx.hlen("h") == 3);
  CHECK(fx.take().empty());
  fx.clock.set(kT0 + 101);
  const Evs f1_gone{ev(KeyEventCause::hexpired, "h", {{"f1", "v1"}})};
  SECTION("hget") {
    CHECK(fx.get("h", "f1") == "(nil)");
    CHECK(fx.take() == f1_gone);
    CHECK(fx.subkeys() == 1);
    CHECK(fx.hlen("h") == 2);
    CHECK(fx.get("h", "f2") == "v2");
  }
  SECTION("hlen counts live fields only") {
    CHECK(fx.hlen("h") == 2);
    CHECK(fx.take() == f1_gone);
  }
  SECTION("hgetall, hkeys, hvals") {
    CHECK(sorted(ok(fx.store.hgetall("h"))) == Pairs{{"f2", "v2"}, {"g", "w"}});
    CHECK(fx.take() == f1_gone);
    CHECK(sorted(ok(fx.store.hkeys("h"))) == Names{"f2", "g"});
    CHECK(sorted(ok(fx.store.hvals("h"))) == Names{"v2", "w"});
    std::size_t visited = 0;
    CHECK(ok(fx.store.hvisit("h", [&](const std::string&, const std::string&) { ++visited; })) == 2);
    CHECK(visited == 2);
    CHECK(fx.take().empty());
  }
  SECTION("hexists") {
    CHECK_FALSE(ok(fx.store.hexists("h", "f1")));
    CHECK(fx.take() == f1_gone);
  }
  SECTION("hmget") {
    const std::string* out[3] = {nullptr, nullptr, nullptr};
    CHECK(ok(fx.store.hmget("h", Names{"f1", "f2", "g"}, out)) == 2);
    CHECK(show(out[0]) == "(nil)");
    CHECK(show(out[1]) == "v2");
    CHECK(show(out[2]) == "w");
    CHECK(fx.take() == f1_gone);
  }
  SECTION("the TTL queries") {
    CHECK(ok(fx.store.httl("h", {"f1", "f2"})) == Times{-2, 1});
    CHECK(fx.take() == f1_gone);
    CHECK(ok(fx.store.hpexpiretime("h", {"f1", "f2"})) == Times{-2, kT0 + 200});
  }
  SECTION("the HEXPIRE family answers -2 and does not revive the field (D23, H74)") {
    for (const Cmd c : kCmds) {
      CAPTURE(name(c));
      CHECK(ok(call(fx.store, c, "h", arg_for(c, future_on_grid(c, fx.now(), 100), fx.now()), Names{"f1"})) ==
            Codes{FieldReply::no_field});
    }
    CHECK(fx.take() == f1_gone);
    CHECK(fx.get("h", "f1") == "(nil)");
    CHECK(fx.subkeys() == 1);
  }
  SECTION("hset counts a stale field as new (D23, H73)") {
    CHECK(ok(fx.store.hset("h", "f1", "x")) == 1);
    CHECK(fx.take() == Evs{f1_gone[0], ev(KeyEventCause::hset, "h")});
    CHECK(ok(fx.store.httl("h", {"f1"})) == Times{-1});
    CHECK(fx.subkeys() == 1);
  }
  SECTION("hset with several fields counts it as new too") {
    CHECK(ok(fx.store.hset("h", {{"f1", "x"}, {"g", "y"}})) == 1);
    CHECK(fx.take() == Evs{f1_gone[0], ev(KeyEventCause::hset, "h")});
  }
  SECTION("hdel answers 0 for a stale field (D23, H70)") {
    CHECK(ok(fx.store.hdel("h", {"f1"})) == 0);
    CHECK(fx.take() == f1_gone);
    CHECK(fx.subkeys() == 1);
    CHECK(ok(fx.store.hdel("h", {"f1", "f2"})) == 1);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
  }
  SECTION("hincrby") {
    CHECK(ok(fx.store.hincrby("h", "f1", 3)) == 3);
    CHECK(fx.take() == Evs{f1_gone[0], ev(KeyEventCause::hset, "h")});
  }
  SECTION("all stale fields go in one event, in one call") {
    fx.clock.set(kT0 + 201);
    CHECK(sorted(ok(fx.store.hgetall("h"))) == Pairs{{"g", "w"}});
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"f1", "v1"}, {"f2", "v2"}})});
    CHECK(fx.subkeys() == 2);
    CHECK(fx.subexpiry() == 0);
  }
  CHECK(fx.expired_keys() == 0);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: the last field's expiry deletes the key, hexpired then del", "[hash_fields]") {
  Hfx fx(kT0);
  REQUIRE(ok(fx.store.hset("h", {{"a", "1"}, {"b", "2"}})) == 2);
  REQUIRE(ok(fx.store.hpexpire("h", 10, {"a", "b"})) == Codes{1, 1});
  CHECK(fx.subexpiry() == 1);
  (void)fx.take();
  fx.clock.set(kT0 + 11);
  const Evs gone{ev(KeyEventCause::hexpired, "h", {{"a", "1"}, {"b", "2"}}), ev(KeyEventCause::del, "h")};
  SECTION("hget") { CHECK(fx.get("h", "a") == "(nil)"); }
  SECTION("hlen") { CHECK(fx.hlen("h") == 0); }
  SECTION("hgetall") { CHECK(ok(fx.store.hgetall("h")).empty()); }
  SECTION("httl") { CHECK(ok(fx.store.httl("h", {"a", "b"})) == Times{-2, -2}); }
  SECTION("hpersist") { CHECK(ok(fx.store.hpersist("h", {"a"})) == Codes{-2}); }
  SECTION("hexpire") { CHECK(ok(fx.store.hexpire("h", 10, {"a"})) == Codes{-2}); }
  SECTION("hdel") { CHECK(ok(fx.store.hdel("h", {"a"})) == 0); }
  CHECK(fx.take() == gone);
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(fx.store.size() == 0);
  CHECK(fx.subkeys() == 2);
  CHECK(fx.expired_keys() == 0);
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 6. Active expiry
// =============================================================================================

TEST_CASE("hash fields: tick reclaims due fields without access, in deadline order across hashes", "[hash_fields]") {
  Hfx fx(kT0);
  // Three hashes of 600 fields; A's deadlines come first, then B's, then C's, all distinct.
  const char* keys[] = {"A", "B", "C"};
  for (int k = 0; k < 3; ++k) {
    Pairs p;
    for (int i = 0; i < 600; ++i) p.emplace_back("f" + std::to_string(i), std::string(keys[k]) + std::to_string(i));
    fx.hset_many(keys[k], p);
    for (int i = 0; i < 600; ++i) fx.deadline(keys[k], "f" + std::to_string(i), kT0 + 1000 * (k + 1) + i);
  }
  CHECK(fx.subexpiry() == 3);
  (void)fx.take();
  fx.clock.set(kT0 + 10'000);
  const auto fields_of = [](const char* key, int from, int to) {
    Pairs p;
    for (int i = from; i < to; ++i) p.emplace_back("f" + std::to_string(i), std::string(key) + std::to_string(i));
    return sorted(p);
  };
  // The quota (hz 10: 1000) takes all of A and B's 400 earliest.
  const expiring::TickReport r1 = fx.store.tick();
  CHECK(r1.field_quota == 1000);
  CHECK(r1.fields_expired == 1000);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "A", fields_of("A", 0, 600)), ev(KeyEventCause::del, "A"),
                         ev(KeyEventCause::hexpired, "B", fields_of("B", 0, 400))});
  CHECK(fx.store.peek("A") == nullptr);
  CHECK(fx.stored_size("B") == 200);
  CHECK(fx.stored_size("C") == 600);
  CHECK(fx.subexpiry() == 2);
  CHECK(fx.subkeys() == 1000);
  const expiring::TickReport r2 = fx.store.tick();
  CHECK(r2.fields_expired == 800);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "B", fields_of("B", 400, 600)), ev(KeyEventCause::del, "B"),
                         ev(KeyEventCause::hexpired, "C", fields_of("C", 0, 600)), ev(KeyEventCause::del, "C")});
  CHECK(fx.store.size() == 0);
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.subkeys() == 1800);
  CHECK(fx.expired_keys() == 0);
  CHECK(fx.store.tick().fields_expired == 0);
  CHECK(fx.take().empty());
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: tick reclaims at most 10000 / hz fields and repeated ticks drain the rest", "[hash_fields]") {
  SECTION("hz 10, 5000 due fields: 1000 a tick") {
    Hfx fx(kT0);
    Pairs p;
    Names names;
    for (int i = 0; i < 5000; ++i) {
      p.emplace_back("f" + std::to_string(i), "v");
      names.push_back("f" + std::to_string(i));
    }
    fx.hset_many("big", p);
    const Codes all_set(5000, FieldReply::set);
    REQUIRE(ok(fx.store.hpexpire("big", 10, names)) == all_set);
    (void)fx.take();
    fx.clock.set(kT0 + 11);
    for (int t = 1; t <= 5; ++t) {
      CAPTURE(t);
      const expiring::TickReport r = fx.store.tick();
      CHECK(r.field_quota == 1000);
      CHECK(r.fields_expired == 1000);
      CHECK(fx.stored_size("big") == static_cast<std::size_t>(5000 - 1000 * t));
      CHECK(fx.subkeys() == static_cast<std::uint64_t>(1000 * t));
      const Evs evs = fx.take();
      REQUIRE(evs.size() == (t < 5 ? 1u : 2u));
      CHECK(evs[0].cause == KeyEventCause::hexpired);
      CHECK(evs[0].fields.size() == 1000);
      if (t == 5) CHECK(evs[1] == ev(KeyEventCause::del, "big"));
      CHECK(fx.store.check_invariants());
    }
    CHECK_FALSE(fx.store.exists("big"));
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.expired_keys() == 0);
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("other hz values") {
    const int hz = GENERATE(1, 100, 500);
    CAPTURE(hz);
    Hfx fx(kT0, Hfx::options(hz));
    Pairs p;
    Names names;
    for (int i = 0; i < 250; ++i) {
      p.emplace_back("f" + std::to_string(i), "v");
      names.push_back("f" + std::to_string(i));
    }
    fx.hset_many("h", p);
    REQUIRE(ok(fx.store.hpexpire("h", 10, names)).size() == 250);
    fx.clock.set(kT0 + 11);
    const std::uint64_t quota = static_cast<std::uint64_t>(10000 / hz);
    std::uint64_t left = 250;
    for (int t = 0; t < 100 && left != 0; ++t) {
      const expiring::TickReport r = fx.store.tick();
      CHECK(r.field_quota == quota);
      CHECK(r.fields_expired == std::min(quota, left));
      left -= r.fields_expired;
    }
    CHECK(left == 0);
    CHECK_FALSE(fx.store.exists("h"));
  }
}

TEST_CASE("hash fields: a field at its deadline stays when an earlier one of its hash goes", "[hash_fields]") {
  Hfx fx(kT0);
  fx.hset("h", "early", "1");
  fx.hset("h", "due", "2");
  fx.hset("h", "plain", "3");
  REQUIRE(ok(fx.store.hpexpire("h", 50, {"early"})) == Codes{1});
  REQUIRE(ok(fx.store.hpexpire("h", 100, {"due"})) == Codes{1});
  (void)fx.take();
  fx.clock.set(kT0 + 100);  // "early" is stale, "due" is at its deadline: live
  SECTION("by tick") { CHECK(fx.store.tick().fields_expired == 1); }
  SECTION("lazily") { CHECK(sorted(ok(fx.store.hkeys("h"))) == Names{"due", "plain"}); }
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"early", "1"}})});
  CHECK(fx.get("h", "due") == "2");
  CHECK(fx.subexpiry() == 1);
  fx.clock.set(kT0 + 101);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"due", "2"}})});
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: tick reclaims each field at its own time when the earliest is re-timed later or persisted or deleted",
          "[hash_fields]") {
  // A small hash is indexed by a bound at or before its earliest field (FieldMap::
  // earliest_bound()): a tick that reaches it early finds nothing due and leaves it whole.
  Hfx fx(kT0);
  for (const char* f : {"a", "b", "c", "d"}) fx.hset("h", f, f);
  fx.deadline("h", "a", kT0 + 1000);
  fx.deadline("h", "b", kT0 + 2000);
  fx.deadline("h", "c", kT0 + 3000);
  fx.deadline("h", "d", kT0 + 500);
  fx.deadline("h", "a", kT0 + 5000);            // the earliest but one, later
  REQUIRE(ok(fx.store.hpersist("h", {"d"})) == Codes{1});  // the earliest, persisted
  (void)fx.take();
  CHECK(fx.subexpiry() == 1);
  for (const std::int64_t t : {kT0 + 501, kT0 + 1001, kT0 + 1999}) {
    fx.clock.set(t);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.stored_size("h") == 4);
    CHECK(fx.take().empty());
    CHECK(ok(fx.store.hpexpiretime("h", {"a", "b", "c", "d"})) ==
          std::vector<std::int64_t>{kT0 + 5000, kT0 + 2000, kT0 + 3000, -1});
  }
  fx.clock.set(kT0 + 2001);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"b", "b"}})});
  REQUIRE(ok(fx.store.hdel("h", {"c"})) == 1);  // the earliest left, deleted
  (void)fx.take();
  fx.clock.set(kT0 + 4000);
  CHECK(fx.store.tick().fields_expired == 0);
  CHECK(fx.stored_size("h") == 2);
  fx.clock.set(kT0 + 5001);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "a"}})});
  CHECK(fx.subexpiry() == 0);  // "d" has no TTL: the hash leaves the field index
  CHECK(fx.get("h", "d") == "d");
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: tick does not reclaim a field at its deadline (D21)", "[hash_fields]") {
  Hfx fx(kT0);
  fx.hset("h", "f", "v");
  fx.hset("h", "g", "w");
  REQUIRE(ok(fx.store.hpexpire("h", 100, {"f"})) == Codes{1});
  (void)fx.take();
  fx.clock.set(kT0 + 100);
  CHECK(fx.store.tick().fields_expired == 0);
  CHECK(fx.stored_size("h") == 2);
  CHECK(fx.take().empty());
  fx.clock.set(kT0 + 101);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"f", "v"}})});
  CHECK(fx.stored_size("h") == 1);
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: the key's own TTL is independent of its fields' TTLs", "[hash_fields]") {
  Hfx fx(kT0);
  fx.hset("h", "f", "v");
  fx.hset("h", "g", "w");
  SECTION("H75: EXPIRE/PERSIST act on the key, HEXPIRE/HPERSIST on fields") {
    REQUIRE(fx.store.expire("h", 100) == true);
    CHECK(ok(fx.store.hexpire("h", 50, {"f"})) == Codes{1});
    CHECK(fx.store.ttl("h") == 100);
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{50});
    CHECK(ok(fx.store.hpersist("h", {"f"})) == Codes{1});
    CHECK(fx.store.ttl("h") == 100);
    CHECK(ok(fx.store.hexpire("h", 50, {"f"})) == Codes{1});
    CHECK(fx.store.persist("h"));
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{50});
    CHECK(fx.store.ttl("h") == -1);
  }
  SECTION("H76: the key expires whole, by tick()") {
    CHECK(ok(fx.store.hpexpire("h", 5000, {"f"})) == Codes{1});
    REQUIRE(fx.store.pexpire("h", 100) == true);
    (void)fx.take();
    fx.clock.set(kT0 + 101);
    for (int t = 0; t < 50 && fx.store.size() != 0; ++t) (void)fx.store.tick();
    CHECK(fx.store.size() == 0);
    CHECK(fx.take() == Evs{ev(KeyEventCause::expired, "h")});
    CHECK(fx.expired_keys() == 1);
    CHECK(fx.subkeys() == 0);
    CHECK(fx.subexpiry() == 0);
    fx.clock.set(kT0 + 6000);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.take().empty());
  }
  SECTION("the key expires whole, lazily") {
    CHECK(ok(fx.store.hpexpire("h", 50, {"f"})) == Codes{1});
    REQUIRE(fx.store.pexpire("h", 100) == true);
    (void)fx.take();
    fx.clock.set(kT0 + 101);  // the field is stale too, but the key goes as a key
    CHECK(fx.get("h", "g") == "(nil)");
    CHECK(fx.take() == Evs{ev(KeyEventCause::expired, "h")});
    CHECK(fx.expired_keys() == 1);
    CHECK(fx.subkeys() == 0);
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("a key TTL survives field writes and the field expiry") {
    REQUIRE(fx.store.pexpire("h", 10'000) == true);
    CHECK(ok(fx.store.hpexpire("h", 50, {"f"})) == Codes{1});
    fx.hset("h", "x", "y");
    fx.clock.set(kT0 + 51);
    (void)fx.store.tick();
    CHECK(fx.stored_size("h") == 2);
    CHECK(fx.store.pttl("h") == 10'000 - 51);
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: tick never reclaims the fields of a key whose own TTL has passed", "[hash_fields]") {
  // A key whose deadline has passed is expired as a whole (D27: cause expired, no hexpired,
  // no expired_subkeys), or left for later; its fields must not be reclaimed one by one and
  // the key then deleted with cause del. Many other volatile keys (far from due) keep the key
  // cycle of a sampled store from reaching it at once.
  Hfx fx(kT0);
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "other" + std::to_string(i);
    fx.hset(k, "a", "1");
    REQUIRE(fx.store.pexpire(k, 1'000'000) == true);
  }
  fx.hset("h", "f", "v");
  REQUIRE(ok(fx.store.hpexpire("h", 100, {"f"})) == Codes{1});
  REQUIRE(fx.store.pexpire("h", 50) == true);
  (void)fx.take();
  fx.clock.set(kT0 + 200);
  (void)fx.store.tick();
  const Evs evs = fx.take();
  for (const Ev& e : evs) {
    CAPTURE(e);
    CHECK(e.key == "h");
    CHECK(e.cause == KeyEventCause::expired);
  }
  CHECK(fx.subkeys() == 0);
  CHECK(fx.expired_keys() == (evs.empty() ? 0u : 1u));
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: subexpiry counts the hashes with volatile fields", "[hash_fields]") {
  Hfx fx(kT0);
  REQUIRE(ok(fx.store.hset("m", {{"f1", "v1"}, {"f2", "v2"}, {"f3", "v3"}, {"f4", "v4"}, {"f5", "v5"}})) == 5);
  CHECK(fx.subexpiry() == 0);
  CHECK(ok(fx.store.hpexpire("m", 100, {"f1", "f2", "f3"})) == Codes{1, 1, 1});  // H83
  CHECK(fx.subexpiry() == 1);
  REQUIRE(ok(fx.store.hset("m2", {{"f1", "v1"}, {"f2", "v2"}})) == 2);
  CHECK(fx.subexpiry() == 1);
  CHECK(ok(fx.store.hpexpire("m2", 100, {"f1"})) == Codes{1});
  CHECK(fx.subexpiry() == 2);
  CHECK(ok(fx.store.hpersist("m2", {"f1"})) == Codes{1});
  CHECK(fx.subexpiry() == 1);
  CHECK(ok(fx.store.hincrby("m", "n", 1)) == 1);
  CHECK(fx.subexpiry() == 1);
  CHECK(ok(fx.store.hset("m", "f1", "x")) == 0);  // an overwrite clears f1's TTL
  CHECK(fx.subexpiry() == 1);
  CHECK(ok(fx.store.hdel("m", {"f2", "f3"})) == 2);
  CHECK(fx.subexpiry() == 0);
  CHECK(ok(fx.store.hpexpire("m", 100, {"f4"})) == Codes{1});
  CHECK(ok(fx.store.hpexpire("m2", 200, {"f2"})) == Codes{1});
  CHECK(fx.subexpiry() == 2);
  fx.clock.set(kT0 + 101);
  (void)fx.store.tick();
  CHECK(fx.subexpiry() == 1);
  fx.clock.set(kT0 + 201);
  (void)fx.store.tick();
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.subkeys() == 2);
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 7. Whole-key operations and the field index
// =============================================================================================

TEST_CASE("hash fields: rename keeps field deadlines and the index", "[hash_fields]") {
  Hfx fx(kT0);
  SECTION("H77: to a new name") {
    fx.hset("h", "field1", "value1");
    REQUIRE(ok(fx.store.hpexpire("h", 20, {"field1"}, kNX)) == Codes{1});
    REQUIRE(fx.store.rename("h", "h2").ok());
    CHECK_FALSE(fx.store.exists("h"));
    CHECK(ok(fx.store.hpttl("h2", {"field1"})) == Times{20});
    CHECK(fx.subexpiry() == 1);
    CHECK(fx.store.check_invariants());
    (void)fx.take();
    fx.clock.set(kT0 + 25);
    CHECK(fx.store.exists("h2"));
    for (int t = 0; t < 4 && fx.store.size() != 0; ++t) (void)fx.store.tick();
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h2", {{"field1", "value1"}}), ev(KeyEventCause::del, "h2")});
    CHECK_FALSE(fx.store.exists("h2"));
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("onto a hash with volatile fields of its own") {
    fx.hset("dst", "x", "1");
    REQUIRE(ok(fx.store.hpexpire("dst", 10, {"x"})) == Codes{1});
    fx.hset("src", "y", "2");
    fx.hset("src", "z", "3");
    REQUIRE(ok(fx.store.hpexpire("src", 50, {"y"})) == Codes{1});
    CHECK(fx.subexpiry() == 2);
    REQUIRE(fx.store.rename("src", "dst").ok());
    CHECK(fx.subexpiry() == 1);
    CHECK(fx.store.check_invariants());
    (void)fx.take();
    fx.clock.set(kT0 + 11);  // dst's old field deadline: nothing of it is left
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.take().empty());
    CHECK(fx.stored_size("dst") == 2);
    fx.clock.set(kT0 + 51);
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "dst", {{"y", "2"}})});
    CHECK(ok(fx.store.hgetall("dst")) == Pairs{{"z", "3"}});
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("onto a hash with volatile fields, from one without") {
    fx.hset("dst", "x", "1");
    REQUIRE(ok(fx.store.hpexpire("dst", 10, {"x"})) == Codes{1});
    fx.hset("src", "y", "2");
    REQUIRE(fx.store.rename("src", "dst").ok());
    CHECK(fx.subexpiry() == 0);
    fx.clock.set(kT0 + 11);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.get("dst", "y") == "2");
  }
  SECTION("a hash with stale fields is reclaimed under its new name") {
    fx.hset("h", "f", "v");
    fx.hset("h", "g", "w");
    REQUIRE(ok(fx.store.hpexpire("h", 10, {"f"})) == Codes{1});
    (void)fx.take();
    fx.clock.set(kT0 + 11);
    REQUIRE(fx.store.rename("h", "h2").ok());
    (void)fx.store.tick();
    Evs hexpired;
    for (const Ev& e : fx.take()) {
      if (e.cause == KeyEventCause::hexpired) hexpired.push_back(e);
    }
    REQUIRE(hexpired.size() == 1);
    CHECK(hexpired[0].fields == Pairs{{"f", "v"}});
    CHECK(fx.stored_size("h2") == 1);
    CHECK(fx.subkeys() == 1);
  }
  SECTION("rename grows the table while hashes are indexed") {
    for (int i = 0; i < 200; ++i) {
      const std::string k = "k" + std::to_string(i);
      fx.hset(k, "f", "v");
      REQUIRE(ok(fx.store.hpexpire(k, 100 + i, {"f"})) == Codes{1});
    }
    for (int i = 0; i < 200; ++i) REQUIRE(fx.store.rename("k" + std::to_string(i), "r" + std::to_string(i)).ok());
    CHECK(fx.subexpiry() == 200);
    CHECK(fx.store.check_invariants());
    CHECK(ok(fx.store.hpttl("r7", {"f"})) == Times{107});
    fx.clock.set(kT0 + 400);
    CHECK(fx.store.tick().fields_expired == 200);
    CHECK(fx.store.size() == 0);
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: copy keeps field deadlines, and both hashes are reclaimed", "[hash_fields]") {
  Hfx fx(kT0);
  SECTION("H78") {
    fx.hset("h1", "f1", "v1");
    fx.hset("h1", "f2", "v2");
    REQUIRE(ok(fx.store.hpexpire("h1", 100, {"f1"}, kNX)) == Codes{1});
    CHECK(ok(fx.store.copy("h1", "h1copy")) == true);
    CHECK(ok(fx.store.hpttl("h1copy", {"f1", "f2"})) == Times{100, -1});
    CHECK(fx.subexpiry() == 2);
    (void)fx.take();
    fx.clock.set(kT0 + 105);
    CHECK(fx.store.tick().fields_expired == 2);
    Evs evs = fx.take();
    std::sort(evs.begin(), evs.end());
    CHECK(evs == Evs{ev(KeyEventCause::hexpired, "h1", {{"f1", "v1"}}),
                     ev(KeyEventCause::hexpired, "h1copy", {{"f1", "v1"}})});
    CHECK(fx.get("h1copy", "f1") == "(nil)");
    CHECK(fx.hlen("h1copy") == 1);
    CHECK(fx.hlen("h1") == 1);
    CHECK(fx.subexpiry() == 0);
  }
  SECTION("with replace, onto a hash with volatile fields") {
    fx.hset("src", "a", "1");
    fx.hset("dst", "b", "2");
    REQUIRE(ok(fx.store.hpexpire("dst", 10, {"b"})) == Codes{1});
    CHECK(ok(fx.store.copy("src", "dst", true)) == true);
    CHECK(fx.subexpiry() == 0);
    fx.clock.set(kT0 + 11);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(ok(fx.store.hgetall("dst")) == Pairs{{"a", "1"}});
  }
  SECTION("a copy of a hash with stale fields carries them, and tick reclaims both") {
    fx.hset("h", "f", "v");
    fx.hset("h", "g", "w");
    REQUIRE(ok(fx.store.hpexpire("h", 10, {"f"})) == Codes{1});
    fx.clock.set(kT0 + 11);
    (void)fx.take();
    CHECK(ok(fx.store.copy("h", "c")) == true);
    (void)fx.store.tick();
    Evs hexpired;
    for (const Ev& e : fx.take()) {
      if (e.cause == KeyEventCause::hexpired) hexpired.push_back(e);
    }
    std::sort(hexpired.begin(), hexpired.end());
    CHECK(hexpired == Evs{ev(KeyEventCause::hexpired, "c", {{"f", "v"}}), ev(KeyEventCause::hexpired, "h", {{"f", "v"}})});
    CHECK(fx.stored_size("c") == 1);
    CHECK(fx.stored_size("h") == 1);
    CHECK(fx.subexpiry() == 0);
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: del and unlink take a hash out of the field index", "[hash_fields]") {
  Hfx fx(kT0);
  for (const char* k : {"a", "b", "c"}) {
    fx.hset(k, "f", "v");
    REQUIRE(ok(fx.store.hpexpire(k, 100, {"f"})) == Codes{1});
  }
  CHECK(fx.subexpiry() == 3);
  (void)fx.take();
  CHECK(fx.store.del("a"));
  CHECK(fx.subexpiry() == 2);
  CHECK(fx.store.unlink("b"));
  CHECK(fx.subexpiry() == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::del, "a"), ev(KeyEventCause::del, "b")});
  CHECK(fx.store.check_invariants());
  fx.clock.set(kT0 + 1000);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "c", {{"f", "v"}}), ev(KeyEventCause::del, "c")});
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.subkeys() == 1);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: set and modify of a FieldMap with deadlines index it", "[hash_fields]") {
  Hfx fx(kT0);
  FM m;
  m.assign(std::string("a"), std::string("1"));
  m.assign(std::string("b"), std::string("2"));
  m.set_deadline(m.find("a"), kT0 + 100);
  SECTION("set(), then tick at the deadline") {
    REQUIRE(fx.store.set("h", m) == true);
    CHECK(fx.subexpiry() == 1);
    CHECK(ok(fx.store.hpttl("h", {"a", "b"})) == Times{100, -1});
    CHECK(fx.store.check_invariants());
    (void)fx.take();
    fx.clock.set(kT0 + 100);
    CHECK(fx.store.tick().fields_expired == 0);
    fx.clock.set(kT0 + 101);
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "1"}})});
    CHECK(fx.subexpiry() == 0);
    CHECK(fx.stored_size("h") == 1);
  }
  SECTION("set() of a map whose only field has a deadline: the key goes with it") {
    FM one;
    one.assign(std::string("x"), std::string("y"));
    one.set_deadline(one.find("x"), kT0 + 50);
    REQUIRE(fx.store.set("h", std::move(one)) == true);
    (void)fx.take();
    fx.clock.set(kT0 + 51);
    (void)fx.store.tick();
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"x", "y"}}), ev(KeyEventCause::del, "h")});
    CHECK(fx.store.size() == 0);
  }
  SECTION("set() of a map with a stale field: reclaimed lazily") {
    fx.clock.set(kT0 + 200);
    REQUIRE(fx.store.set("h", m) == true);
    (void)fx.take();
    CHECK(fx.get("h", "a") == "(nil)");
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "1"}})});
  }
  SECTION("set() of a map with a stale field: reclaimed by tick") {
    fx.clock.set(kT0 + 200);
    REQUIRE(fx.store.set("h", m) == true);
    (void)fx.take();
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "1"}})});
  }
  SECTION("set() over an indexed hash with a map without deadlines") {
    REQUIRE(fx.store.set("h", m) == true);
    FM plain;
    plain.assign(std::string("p"), std::string("q"));
    REQUIRE(fx.store.set("h", plain) == true);
    CHECK(fx.subexpiry() == 0);
    fx.clock.set(kT0 + 101);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.get("h", "p") == "q");
  }
  SECTION("modify() that adds and removes deadlines") {
    fx.hset("h", "a", "1");
    fx.hset("h", "b", "2");
    REQUIRE(fx.store.modify("h", [](FM& v) { v.set_deadline(v.find("b"), kT0 + 30); }));
    CHECK(fx.subexpiry() == 1);
    CHECK(ok(fx.store.hpttl("h", {"b"})) == Times{30});
    REQUIRE(fx.store.modify("h", [](FM& v) { v.set_deadline(v.find("a"), kT0 + 20); }));
    (void)fx.take();
    fx.clock.set(kT0 + 21);
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "1"}})});
    REQUIRE(fx.store.modify("h", [](FM& v) { (void)v.clear_deadline(v.find("b")); }));
    CHECK(fx.subexpiry() == 0);
    fx.clock.set(kT0 + 100);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.get("h", "b") == "2");
  }
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: a hash stored whole with a hasher of its own answers every member", "[hash_fields]") {
  // The members hash a field with the store's hasher while the key is looked up, and use that
  // hash only for maps that share the hasher: a map built elsewhere keys its own.
  Hfx fx(kT0);
  FM m;  // the process-wide hasher, not the store's
  for (int i = 0; i < 200; ++i) m.assign("f" + std::to_string(i), "v" + std::to_string(i));
  REQUIRE(fx.store.set("h", std::move(m)) == true);
  REQUIRE(fx.store.peek("h")->hash_function() != fx.store.field_hash_function());
  CHECK(fx.get("h", "f7") == "v7");
  CHECK(fx.get("h", "f199") == "v199");
  CHECK(fx.get("h", "nope") == "(nil)");
  CHECK(ok(fx.store.hpexpireat("h", kT0 + 50, {"f7"})) == Codes{FieldReply::set});
  CHECK(ok(fx.store.hpexpire("h", 60, {"f8", "nope"})) == Codes{FieldReply::set, FieldReply::no_field});
  CHECK(ok(fx.store.hpttl("h", {"f7", "f8", "f9"})) == Times{50, 60, -1});
  CHECK(ok(fx.store.hset("h", std::string("f8"), std::string("w"))) == 0);  // clears f8's TTL
  CHECK(ok(fx.store.hset("h", std::string("new"), std::string("n"))) == 1);
  CHECK(ok(fx.store.hpttl("h", {"f8", "new"})) == Times{-1, -1});
  CHECK(fx.get("h", "f8") == "w");
  CHECK(fx.get("h", "new") == "n");
  CHECK(ok(fx.store.hlen("h")) == 201);
  fx.clock.set(kT0 + 51);
  CHECK(fx.get("h", "f7") == "(nil)");
  CHECK(ok(fx.store.hlen("h")) == 200);
  CHECK(fx.store.check_invariants());
}

// =============================================================================================
// 8. Clock starts
// =============================================================================================

TEST_CASE("hash fields: the same semantics at a clock of 0, 1000 s and a seeded start", "[hash_fields]") {
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, 0, kT0, random_field_start());
  CAPTURE(start);
  Hfx fx(start);
  fx.hset("h", "f", "v");
  fx.hset("h", "g", "w");
  CHECK(ok(fx.store.hpexpire("h", 100, {"f"})) == Codes{1});
  CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{start + 100});
  CHECK(ok(fx.store.hexpire("h", 1, {"g"})) == Codes{1});
  CHECK(ok(fx.store.httl("h", {"g"})) == Times{1});
  CHECK(ok(fx.store.hpexpireat("h", start, {"g"}, kGT)) == Codes{0});
  fx.clock.set(start + 100);
  CHECK(fx.get("h", "f") == "v");
  CHECK(fx.store.tick().fields_expired == 0);
  fx.clock.set(start + 101);
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.get("h", "f") == "(nil)");
  CHECK(ok(fx.store.hpexpireat("h", 0, {"g"})) == Codes{2});  // 0 <= now
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(fx.subkeys() == 2);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: a clock beyond the cap refuses relative times, and past times delete", "[hash_fields]") {
  // support's random start (about 2^61, CAPTUREd) and one minute before INT64_MAX: every
  // deadline a relative time asks for is beyond 2^46 - 1 (or overflows), so it is refused; an
  // absolute time under the cap is in the past, so it deletes.
  const std::int64_t start = GENERATE(Catch::Generators::as<std::int64_t>{}, ttltest::random_start(), ttltest::kStartEnd);
  CAPTURE(start);
  Hfx fx(start);
  fx.hset("h", "f", "v");
  fx.hset("h", "g", "w");
  fx.hset("h", "k", "x");
  (void)fx.take();
  const std::string before = fx.state();
  for (const std::int64_t t : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, kCap, kMax}) {
    CAPTURE(t);
    CHECK(fx.store.hpexpire("h", t, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hexpire("h", t, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hpexpire("h", t, {"f"}, kNX) == Errc::invalid_expire_time);
  }
  CHECK(fx.store.hpexpire("h", -1, {"f"}) == Errc::negative_expire_time);
  CHECK(fx.state() == before);
  CHECK(ok(fx.store.hpexpireat("h", kCap, {"f"}, kGT)) == Codes{0});  // conditions first
  CHECK(ok(fx.store.hpexpireat("h", kCap, {"f"})) == Codes{2});
  CHECK(ok(fx.store.hexpireat("h", 0, {"g"})) == Codes{2});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::hdel, "h")});
  CHECK(ok(fx.store.httl("h", {"f", "k"})) == Times{-2, -1});
  CHECK(fx.subkeys() == 2);
  // A map placed with a (long past) deadline is reclaimed by tick, at the end of time too.
  FM m;
  m.assign(std::string("a"), std::string("1"));
  m.assign(std::string("b"), std::string("2"));
  m.set_deadline(m.find("a"), 1000);
  REQUIRE(fx.store.set("placed", m) == true);
  CHECK(fx.subexpiry() == 1);
  (void)fx.take();
  CHECK(fx.store.tick().fields_expired == 1);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "placed", {{"a", "1"}})});
  CHECK(fx.subexpiry() == 0);
  fx.clock.advance(60'000 - 1);
  CHECK(fx.get("placed", "b") == "2");
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: a clock before 1970 refuses future deadlines below zero", "[hash_fields]") {
  SECTION("10 s before 1970") {
    const std::int64_t start = -10'000;
    Hfx fx(start);
    fx.hset("h", "f", "v");
    fx.hset("h", "g", "w");
    fx.hset("h", "k", "x");
    (void)fx.take();
    const std::string before = fx.state();
    CHECK(fx.store.hpexpire("h", 5000, {"f"}) == Errc::invalid_expire_time);  // deadline -5000
    CHECK(fx.store.hpexpire("h", 1, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hexpire("h", 5, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hpexpireat("h", -1, {"f"}) == Errc::negative_expire_time);
    CHECK(fx.state() == before);
    CHECK(ok(fx.store.hpexpire("h", 10'000, {"f"})) == Codes{1});  // deadline 0 exactly
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{0});
    CHECK(ok(fx.store.hexpiretime("h", {"f"})) == Times{0});
    CHECK(ok(fx.store.hpttl("h", {"f"})) == Times{10'000});
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{10});
    CHECK(ok(fx.store.hexpireat("h", 1, {"g"})) == Codes{1});
    CHECK(ok(fx.store.hpttl("h", {"g"})) == Times{11'000});
    CHECK(ok(fx.store.hpexpire("h", 0, {"k"})) == Codes{2});  // at now: deleted
    fx.clock.set(0);
    CHECK(fx.store.tick().fields_expired == 0);
    CHECK(fx.get("h", "f") == "v");
    fx.clock.set(1);
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.stored_size("h") == 1);
    fx.clock.set(1001);
    CHECK(fx.store.tick().fields_expired == 1);
    CHECK(fx.store.size() == 0);
    CHECK(fx.store.check_invariants());
  }
  SECTION("at INT64_MIN") {
    Hfx fx(kMin);
    fx.hset("h", "f", "v");
    CHECK(fx.store.hpexpire("h", kCap, {"f"}) == Errc::invalid_expire_time);
    CHECK(fx.store.hexpire("h", kCap / 1000, {"f"}) == Errc::invalid_expire_time);
    CHECK(ok(fx.store.hpexpireat("h", 0, {"f"})) == Codes{1});
    CHECK(ok(fx.store.hpexpiretime("h", {"f"})) == Times{0});
    CHECK(ok(fx.store.hexpiretime("h", {"f"})) == Times{0});
    // 0 - INT64_MIN does not fit: the remaining time saturates (hash_fields.hpp, time_of).
    CHECK(ok(fx.store.hpttl("h", {"f"})) == Times{kMax});
    CHECK(ok(fx.store.httl("h", {"f"})) == Times{kMax / 1000 + 1});
    CHECK(ok(fx.store.hpexpire("h", 0, {"f"})) == Codes{2});
    CHECK_FALSE(fx.store.exists("h"));
    CHECK(fx.store.check_invariants());
  }
}

// =============================================================================================
// Memory accounting
// =============================================================================================

TEST_CASE("hash fields: used_memory with a memory limit follows field TTL writes", "[hash_fields]") {
  // With Options::maxmemory the store keeps used_memory() incrementally; without a limit it
  // weighs every entry when asked. The same operations must give the same figure, and an
  // empty store none.
  ManualClock clock(kT0);
  Options limited = Hfx::options();
  limited.maxmemory = std::size_t{1} << 40;
  HStore a(clock, limited);
  HStore b(clock, Hfx::options());
  const auto both = [&](const char* what, auto&& op) {
    CAPTURE(what);
    op(a);
    op(b);
    CHECK(a.used_memory() == b.used_memory());
  };
  both("hset", [](HStore& s) { REQUIRE(s.hset("h", "f", "v").ok()); });
  both("hpexpire (the first deadline)", [](HStore& s) { REQUIRE(ok(s.hpexpire("h", 1000, {"f"})) == Codes{1}); });
  both("hset another field", [](HStore& s) { REQUIRE(s.hset("h", "g", "w").ok()); });
  both("hpexpire another field", [](HStore& s) { REQUIRE(ok(s.hpexpire("h", 2000, {"g"})) == Codes{1}); });
  both("hpersist", [](HStore& s) { REQUIRE(ok(s.hpersist("h", {"f", "g"})) == Codes{1, 1}); });
  both("del", [](HStore& s) { REQUIRE(s.del("h")); });
  CHECK(a.used_memory() == 0);
  CHECK(b.used_memory() == 0);
}

TEST_CASE("hash fields: HINCRBY makes room before it reads the field", "[hash_fields]") {
  // Eviction runs before the command, as Redis's: if it takes the hash, the increment starts
  // from 0 in a new hash, never from the evicted value.
  ManualClock clock(kT0);
  Options o = Hfx::options();
  o.maxmemory_policy = expiring::EvictionPolicy::allkeys_lru;
  HStore s(clock, o);
  REQUIRE(s.hset("h", {{"n", "5"}, {"keep", "x"}}).ok());
  s.set_maxmemory(s.used_memory());  // full: the next write must evict
  const std::int64_t r = s.hincrby("h", "n", 1).value();
  const std::string* stored = s.hget("h", "n").value();
  REQUIRE(stored != nullptr);
  CHECK(*stored == std::to_string(r));
  const bool survived = s.hexists("h", "keep").value();
  CHECK(r == (survived ? 6 : 1));
}

TEST_CASE("hash fields: a value that points into the same hash is taken before the hash is opened", "[hash_fields]") {
  // Opening the hash reclaims its stale fields, which moves others: the value is copied first.
  ManualClock clock(kT0);
  HStore s(clock, Hfx::options());
  REQUIRE(s.hset("k", {{"stale", "x"}, {"b", "value-of-b-long-enough-for-the-heap"}}).ok());
  REQUIRE(ok(s.hpexpire("k", 10, {"stale"})) == Codes{1});
  const FM* m = s.peek("k");
  REQUIRE(m != nullptr);
  REQUIRE(m->find("b") == 1);  // erasing "stale" (position 0) moves "b" into its place
  const std::string* b = &m->at(1).value;
  clock.advance(11);
  REQUIRE(s.hset("k", "a", *b).ok());  // b points into the hash that hset() opens
  CHECK(*s.hget("k", "a").value() == "value-of-b-long-enough-for-the-heap");
  CHECK(*s.hget("k", "b").value() == "value-of-b-long-enough-for-the-heap");
  CHECK(s.check_invariants());
}

TEST_CASE("hash fields: the short paths of HSET, HGET and HPEXPIREAT, with nothing listening", "[hash_fields]") {
  // No listener, feed, memory limit or access data: hset(), hget() and one field's
  // hpexpireat() take their inline short paths on a live hash with nothing due.
  ManualClock clock(kT0);
  HStore s(clock, Hfx::options());
  const std::string big(40, 'v');  // on the heap
  REQUIRE(s.hset("k", {{"a", "x"}, {"b", big}, {"c", "y"}}).ok());
  REQUIRE(s.stats().subexpiry == 0);

  SECTION("an overwrite with a value from the same hash, from itself, and from a part of itself") {
    REQUIRE(ok(s.hset("k", "a", *s.hget("k", "b").value())) == 0);  // another field's value
    CHECK(*s.hget("k", "a").value() == big);
    REQUIRE(ok(s.hset("k", "b", *s.hget("k", "b").value())) == 0);  // its own
    CHECK(*s.hget("k", "b").value() == big);
    const std::string_view tail = std::string_view(*s.hget("k", "b").value()).substr(30);
    REQUIRE(ok(s.hset("k", "b", tail)) == 0);  // an overlapping part of its own
    CHECK(*s.hget("k", "b").value() == std::string(10, 'v'));
    REQUIRE(ok(s.hset("k", "d", *s.hget("k", "a").value())) == 1);  // a new field: the hash may grow
    CHECK(*s.hget("k", "d").value() == big);
    CHECK(s.check_invariants());
  }
  SECTION("an overwrite clears the TTL, and the hash leaves the index with its last one") {
    REQUIRE(ok(s.hpexpireat("k", kT0 + 500, {"a"})) == Codes{1});
    REQUIRE(ok(s.hpexpireat("k", kT0 + 300, {"b"})) == Codes{1});  // an earlier deadline re-indexes
    CHECK(s.stats().subexpiry == 1);
    REQUIRE(ok(s.hset("k", "a", "x2")) == 0);
    CHECK(ok(s.hpttl("k", {"a", "b"})) == Times{-1, 300});
    CHECK(s.stats().subexpiry == 1);
    REQUIRE(ok(s.hset("k", "b", "y2")) == 0);
    CHECK(ok(s.hpttl("k", {"a", "b"})) == Times{-1, -1});
    CHECK(s.stats().subexpiry == 0);
    clock.set(kT0 + 1000);
    (void)s.tick();
    CHECK(ok(s.hlen("k")) == 3);
    CHECK(s.check_invariants());
  }
  SECTION("a deadline set on the short path is met by tick() and by a read") {
    REQUIRE(ok(s.hpexpireat("k", kT0 + 200, {"a"})) == Codes{1});
    REQUIRE(ok(s.hpexpireat("k", kT0 + 100, {"c"})) == Codes{1});
    REQUIRE(ok(s.hpexpireat("k", kT0 + 100, {"nope"})) == Codes{-2});
    clock.set(kT0 + 101);
    (void)s.tick();  // c is due: tick() finds the hash by its lowered bound
    CHECK(s.stats().expired_subkeys == 1);
    CHECK(ok(s.hlen("k")) == 2);
    clock.set(kT0 + 201);
    CHECK(s.hget("k", "a").value() == nullptr);  // a is due: the read takes the general path
    CHECK(s.stats().expired_subkeys == 2);
    CHECK(ok(s.hlen("k")) == 1);
    CHECK(s.check_invariants());
  }
  SECTION("hits and misses are counted as on the general path") {
    const auto hits = s.stats().keyspace_hits;
    const auto misses = s.stats().keyspace_misses;
    CHECK(*s.hget("k", "a").value() == "x");
    CHECK(s.hget("k", "zz").value() == nullptr);  // a missing field of a live key is a hit
    CHECK(s.hget("nokey", "a").value() == nullptr);
    CHECK(s.stats().keyspace_hits == hits + 2);
    CHECK(s.stats().keyspace_misses == misses + 1);
  }
}

TEST_CASE("hash fields: long keys and field names that differ in one byte are different", "[hash_fields]") {
  // Keys and field names compare inline in 8-byte words; every length up to 100 bytes, with
  // the one differing byte at the start, the middle and the end.
  ManualClock clock(kT0);
  HStore s(clock, Hfx::options());
  for (std::size_t n = 1; n <= 100; n += 3) {
    for (const std::size_t at : std::set<std::size_t>{0, n / 2, n - 1}) {
      std::string k(n, 'k');
      std::string f(n, 'f');
      REQUIRE(ok(s.hset(k, f, "base")) <= 1);
      k[at] = 'K';
      f[at] = 'F';
      REQUIRE(ok(s.hset(k, f, "other")) == 1);
      CHECK(*s.hget(k, f).value() == "other");
      CHECK(s.hget(k, std::string(n, 'f')).value() == nullptr);
      CHECK(*s.hget(std::string(n, 'k'), std::string(n, 'f')).value() == "base");
    }
  }
  CHECK(s.check_invariants());
}

// =============================================================================================
// 9. The model test
// =============================================================================================

namespace {

// A strict decimal int64 (Redis string2ll), written independently of the library's.
bool model_parse(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  std::size_t i = 0;
  const bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return false;
  if (s[i] == '0') {
    if (s.size() != 1) return false;
    out = 0;
    return true;
  }
  // Accumulate the magnitude as unsigned, so that -2^63 fits and nothing overflows.
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;  // |INT64_MIN|
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const auto d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (kLimit - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg) {
    out = v == kLimit ? kMin : -static_cast<std::int64_t>(v);
    return true;
  }
  if (v > static_cast<std::uint64_t>(kMax)) return false;
  out = static_cast<std::int64_t>(v);
  return true;
}

// The reference model: key -> field -> {value, deadline}, stale fields kept until something
// reclaims them, with the same rules as hash_fields.hpp's documentation.
struct Model {
  MKeys keys;
  std::uint64_t expired_subkeys = 0;
  Evs events;  // of the current step

  static bool stale(const MField& f, std::int64_t now) { return f.deadline != kNoDl && now > f.deadline; }

  // Lazy or active reclaim of k: one hexpired with the stale fields, del if it emptied.
  // Returns k's hash, or nullptr. Adds the number reclaimed to *n.
  MHash* reclaim(const std::string& k, std::int64_t now, std::uint64_t* n = nullptr) {
    auto it = keys.find(k);
    if (it == keys.end()) return nullptr;
    Ev e = ev(KeyEventCause::hexpired, k);
    for (auto f = it->second.begin(); f != it->second.end();) {
      if (stale(f->second, now)) {
        e.fields.emplace_back(f->first, f->second.value);
        f = it->second.erase(f);
      } else {
        ++f;
      }
    }
    if (e.fields.empty()) return &it->second;
    expired_subkeys += e.fields.size();
    if (n != nullptr) *n += e.fields.size();
    events.push_back(std::move(e));
    if (it->second.empty()) {
      keys.erase(it);
      events.push_back(ev(KeyEventCause::del, k));
      return nullptr;
    }
    return &it->second;
  }
  MHash& create(const std::string& k) { return keys[k]; }
  void drop_if_empty(const std::string& k) {
    auto it = keys.find(k);
    if (it != keys.end() && it->second.empty()) {
      keys.erase(it);
      events.push_back(ev(KeyEventCause::del, k));
    }
  }

  std::size_t hset(const std::string& k, const Pairs& pairs, std::int64_t now) {
    MHash* h = reclaim(k, now);
    if (h == nullptr) h = &create(k);
    std::size_t added = 0;
    for (const auto& p : pairs) {
      auto it = h->find(p.first);
      if (it == h->end()) {
        ++added;
        (*h)[p.first] = MField{p.second, kNoDl};
      } else {
        it->second = MField{p.second, kNoDl};
      }
    }
    events.push_back(ev(KeyEventCause::hset, k));
    return added;
  }
  bool hsetnx(const std::string& k, const std::string& f, const std::string& v, std::int64_t now) {
    MHash* h = reclaim(k, now);
    if (h != nullptr && h->count(f) != 0) return false;
    if (h == nullptr) h = &create(k);
    (*h)[f] = MField{v, kNoDl};
    events.push_back(ev(KeyEventCause::hset, k));
    return true;
  }
  std::size_t hdel(const std::string& k, const Names& fields, std::int64_t now) {
    MHash* h = reclaim(k, now);
    if (h == nullptr) return 0;
    std::size_t n = 0;
    for (const auto& f : fields) n += h->erase(f);
    if (n != 0) {
      events.push_back(ev(KeyEventCause::hdel, k));
      drop_if_empty(k);
    }
    return n;
  }
  // The errors a call may answer (none: it succeeds).
  static std::vector<Errc> expire_errors(Cmd c, std::int64_t v, ExpireFlags fl, std::int64_t now, std::int64_t& when) {
    std::vector<Errc> errs;
    const bool nx = has(fl, kNX), xx = has(fl, kXX), gt = has(fl, kGT), lt = has(fl, kLT);
    if (nx && (xx || gt || lt)) errs.push_back(Errc::nx_and_xx_gt_lt);
    if (gt && lt) errs.push_back(Errc::gt_and_lt);
    const std::int64_t unit = in_seconds(c) ? 1000 : 1;
    if (v < 0) {
      errs.push_back(Errc::negative_expire_time);
    } else if (v > kCap / unit) {
      errs.push_back(Errc::invalid_expire_time);
    } else {
      const std::int64_t ms = v * unit;
      bool overflow = false;
      if (absolute(c)) {
        when = ms;
      } else {
        overflow = __builtin_add_overflow(ms, now, &when);
      }
      if (overflow || when > kCap || (when < 0 && when > now)) errs.push_back(Errc::invalid_expire_time);
    }
    return errs;
  }
  static bool condition(ExpireFlags fl, std::int64_t old, std::int64_t when) {
    const bool timed = old != kNoDl;
    if (has(fl, kNX)) return !timed;
    if (has(fl, kXX)) return timed;
    if (has(fl, kGT)) return timed && when > old;
    if (has(fl, kLT)) return !timed || when < old;
    return true;
  }
  Codes hexpire(const std::string& k, std::int64_t when, const Names& fields, ExpireFlags fl, std::int64_t now) {
    MHash* h = reclaim(k, now);
    Codes out;
    std::size_t set = 0, deleted = 0;
    for (const auto& f : fields) {
      auto it = h == nullptr ? MHash::iterator{} : h->find(f);
      if (h == nullptr || it == h->end()) {
        out.push_back(FieldReply::no_field);
      } else if (!condition(fl, it->second.deadline, when)) {
        out.push_back(FieldReply::condition_not_met);
      } else if (when <= now) {
        h->erase(it);
        ++deleted;
        out.push_back(FieldReply::deleted);
      } else {
        it->second.deadline = when;
        ++set;
        out.push_back(FieldReply::set);
      }
    }
    expired_subkeys += deleted;
    if (set != 0) events.push_back(ev(KeyEventCause::hexpire, k));
    if (deleted != 0) {
      events.push_back(ev(KeyEventCause::hdel, k));
      drop_if_empty(k);
    }
    return out;
  }
  Codes hpersist(const std::string& k, const Names& fields, std::int64_t now) {
    MHash* h = reclaim(k, now);
    Codes out;
    bool any = false;
    for (const auto& f : fields) {
      if (h == nullptr || h->count(f) == 0) {
        out.push_back(FieldReply::no_field);
      } else if ((*h)[f].deadline == kNoDl) {
        out.push_back(FieldReply::no_ttl);
      } else {
        (*h)[f].deadline = kNoDl;
        any = true;
        out.push_back(FieldReply::persisted);
      }
    }
    if (any) events.push_back(ev(KeyEventCause::hpersist, k));
    return out;
  }
  // HGETEX (Redis 8): the values, then each found field's TTL as `kind` says (expire: `when`).
  using Values = std::vector<std::optional<std::string>>;
  Values hgetex(const std::string& k, const Names& fields, expiring::FieldTtl::Kind kind, std::int64_t when,
                std::int64_t now) {
    MHash* h = reclaim(k, now);
    Values out;
    std::size_t persisted = 0, set = 0, deleted = 0;
    for (const auto& f : fields) {
      auto it = h == nullptr ? MHash::iterator{} : h->find(f);
      if (h == nullptr || it == h->end()) {
        out.emplace_back(std::nullopt);
        continue;
      }
      out.emplace_back(it->second.value);
      if (kind == expiring::FieldTtl::Kind::persist && it->second.deadline != kNoDl) {
        it->second.deadline = kNoDl;
        ++persisted;
      } else if (kind == expiring::FieldTtl::Kind::expire && when <= now) {
        h->erase(it);
        ++deleted;
      } else if (kind == expiring::FieldTtl::Kind::expire) {
        it->second.deadline = when;
        ++set;
      }
    }
    if (persisted != 0) events.push_back(ev(KeyEventCause::hpersist, k));
    if (set != 0) events.push_back(ev(KeyEventCause::hexpire, k));
    if (deleted != 0) {
      expired_subkeys += deleted;
      events.push_back(ev(KeyEventCause::hdel, k));
      drop_if_empty(k);
    }
    return out;
  }
  // HGETDEL (Redis 8).
  Values hgetdel(const std::string& k, const Names& fields, std::int64_t now) {
    MHash* h = reclaim(k, now);
    Values out;
    std::size_t deleted = 0;
    for (const auto& f : fields) {
      auto it = h == nullptr ? MHash::iterator{} : h->find(f);
      if (h == nullptr || it == h->end()) {
        out.emplace_back(std::nullopt);
        continue;
      }
      out.emplace_back(it->second.value);
      h->erase(it);
      ++deleted;
    }
    if (deleted != 0) {
      events.push_back(ev(KeyEventCause::hdel, k));
      drop_if_empty(k);
    }
    return out;
  }
  // HSETEX (Redis 8): whether it wrote.
  bool hsetex(const std::string& k, const Pairs& pairs, expiring::FieldTtl::Kind kind, std::int64_t when,
              expiring::FieldCondition cond, std::int64_t now) {
    MHash* h = reclaim(k, now);
    if (cond != expiring::FieldCondition::none) {
      std::size_t present = 0;
      for (const auto& p : pairs) present += h != nullptr && h->count(p.first) != 0 ? 1 : 0;
      if (cond == expiring::FieldCondition::fxx ? present != pairs.size() : present != 0) return false;
    }
    if (h == nullptr) h = &create(k);
    const bool timed = kind == expiring::FieldTtl::Kind::expire;
    for (const auto& p : pairs) {
      auto it = h->find(p.first);
      if (kind == expiring::FieldTtl::Kind::keep && it != h->end()) {
        it->second.value = p.second;
      } else {
        (*h)[p.first] = MField{p.second, kNoDl};
      }
      if (timed && when > now) (*h)[p.first].deadline = when;
    }
    events.push_back(ev(KeyEventCause::hset, k));
    if (timed && when > now) events.push_back(ev(KeyEventCause::hexpire, k));
    if (timed && when <= now) {
      std::size_t deleted = 0;
      for (const auto& p : pairs) deleted += h->erase(p.first);
      expired_subkeys += deleted;
      events.push_back(ev(KeyEventCause::hdel, k));
      drop_if_empty(k);
    }
    return true;
  }
  // hincrby: the sum, or the error.
  bool hincrby(const std::string& k, const std::string& f, std::int64_t delta, std::int64_t now, std::int64_t& sum,
               Errc& err) {
    MHash* h = reclaim(k, now);
    std::int64_t base = 0;
    const bool had = h != nullptr && h->count(f) != 0;
    if (had && !model_parse((*h)[f].value, base)) {
      err = Errc::not_an_integer;
      return false;
    }
    if (__builtin_add_overflow(base, delta, &sum)) {
      err = Errc::overflow;
      return false;
    }
    if (h == nullptr) h = &create(k);
    if (had) {
      (*h)[f].value = std::to_string(sum);
    } else {
      (*h)[f] = MField{std::to_string(sum), kNoDl};
    }
    events.push_back(ev(KeyEventCause::hset, k));
    return true;
  }
  bool del(const std::string& k) {
    if (keys.erase(k) == 0) return false;
    events.push_back(ev(KeyEventCause::del, k));
    return true;
  }
  bool rename(const std::string& src, const std::string& dst) {
    auto it = keys.find(src);
    if (it == keys.end()) return false;
    if (src == dst) return true;
    MHash h = std::move(it->second);
    keys.erase(it);
    keys[dst] = std::move(h);
    events.push_back(ev(KeyEventCause::rename_from, src));
    events.push_back(ev(KeyEventCause::rename_to, dst));
    return true;
  }
  std::uint64_t tick(std::int64_t now) {
    std::uint64_t n = 0;
    std::vector<std::string> names;
    for (const auto& k : keys) names.push_back(k.first);
    for (const auto& k : names) (void)reclaim(k, now, &n);
    return n;
  }
  std::size_t volatile_hashes() const {
    std::size_t n = 0;
    for (const auto& k : keys) {
      n += std::any_of(k.second.begin(), k.second.end(), [](const auto& f) { return f.second.deadline != kNoDl; }) ? 1 : 0;
    }
    return n;
  }
};

struct ModelConfig {
  const char* name;
  int keys;
  int fields;
  int steps;
  int batch;  // at most this many fields per multi-field call
  // The causes the store's listener asks for (the others are not compared). Without hset
  // and hexpire, HSET and HPEXPIREAT of one field take the short path (plain_field_write()).
  expiring::KeyEventCauses causes = expiring::KeyEventCauses::all();
};
expiring::KeyEventCauses all_causes_but(std::initializer_list<KeyEventCause> out) {
  expiring::KeyEventCauses c;
  for (int b = 0; b < 15; ++b) {
    const auto cause = static_cast<KeyEventCause>(b);
    if (std::find(out.begin(), out.end(), cause) == out.end()) c = c | expiring::KeyEventCauses{cause};
  }
  return c;
}

void run_model(const ModelConfig& cfg, std::uint64_t seed) {
  CAPTURE(cfg.name, seed);
  std::mt19937_64 rng(seed);
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::int64_t start = random_field_start();
  CAPTURE(start);
  Hfx fx(start, Hfx::options(), cfg.causes);
  Model model;
  std::vector<std::string> key_names, field_names;
  for (int i = 0; i < cfg.keys; ++i) key_names.push_back("k" + std::to_string(i));
  for (int i = 0; i < cfg.fields; ++i) field_names.push_back("f" + std::to_string(i));
  const std::vector<std::string> values{"0", "1", "-7", "12", "abc", "9223372036854775807", "-9223372036854775808", ""};
  const std::int64_t deltas[] = {1, -1, 5, -100, kMax, kMin};
  const auto any_key = [&] { return key_names[static_cast<std::size_t>(uniform(0, cfg.keys - 1))]; };
  const auto any_field = [&] { return field_names[static_cast<std::size_t>(uniform(0, cfg.fields - 1))]; };
  const auto some_fields = [&] {
    Names n;
    const std::int64_t count = uniform(1, cfg.batch);
    for (std::int64_t j = 0; j < count; ++j) n.push_back(any_field());  // duplicates allowed
    return n;
  };
  const auto show_names = [](const Names& n) {
    std::string s;
    for (const auto& x : n) s += x + ' ';
    return s;
  };

  for (int step = 0; step < cfg.steps; ++step) {
    const std::int64_t now = fx.now();
    std::ostringstream desc;
    desc << "step " << step << " now " << now << ": ";
    bool tick_step = false;
    std::uint64_t tick_expected = 0, tick_got = 0;
    const std::int64_t op = uniform(0, 114);
    // A time argument of HGETEX or HSETEX: its form, its value (errors among them), and the
    // deadline or errors it means.
    const auto time_arg = [&](Cmd& c, std::int64_t& arg) {
      c = kCmds[uniform(0, 3)];
      const std::int64_t r = uniform(0, 99);
      switch (c) {
        case Cmd::hpexpire: arg = r < 4 ? -1 : r < 8 ? kCap - now + (r & 1) : r < 18 ? 0 : uniform(1, 3000); break;
        case Cmd::hexpire: arg = r < 4 ? -1 : r < 7 ? 70368744178 : r < 18 ? 0 : uniform(1, 3); break;
        case Cmd::hpexpireat:
          arg = r < 4 ? -5 : r < 8 ? kCap + (r & 1) : std::max<std::int64_t>(0, now + uniform(-2000, 3000));
          break;
        case Cmd::hexpireat:
          arg = r < 4 ? -1 : r < 7 ? 70368744178 : std::max<std::int64_t>(0, now / 1000 + uniform(-2, 3));
          break;
      }
    };
    const auto show_values = [](const Model::Values& v) {
      std::string s;
      for (const auto& x : v) s += (x ? *x : std::string("(nil)")) + ' ';
      return s;
    };
    if (op >= 100 && op < 105) {
      const std::string k = any_key();
      const Names fs = some_fields();
      const std::int64_t form = uniform(0, 3);  // keep, persist, or a time (twice as often)
      const auto kind = form == 0   ? expiring::FieldTtl::Kind::keep
                        : form == 1 ? expiring::FieldTtl::Kind::persist
                                    : expiring::FieldTtl::Kind::expire;
      Cmd c = Cmd::hpexpire;
      std::int64_t arg = 0, when = 0;
      std::vector<Errc> errs;
      expiring::FieldTtl ttl = kind == expiring::FieldTtl::Kind::keep ? expiring::FieldTtl::keep() : expiring::FieldTtl::persist();
      if (kind == expiring::FieldTtl::Kind::expire) {
        time_arg(c, arg);
        ttl = field_ttl(c, arg);
        errs = Model::expire_errors(c, arg, kNone, now, when);
      }
      desc << "hgetex " << k << " form " << form << ' ' << name(c) << ' ' << arg << ' ' << show_names(fs);
      INFO(desc.str());
      const expiring::Result<Model::Values> got = fx.store.hgetex(k, fs, ttl);
      if (!errs.empty()) {
        REQUIRE_FALSE(got.ok());
        REQUIRE(std::find(errs.begin(), errs.end(), got.error()) != errs.end());
      } else {
        const Model::Values want = model.hgetex(k, fs, kind, when, now);
        REQUIRE(got.ok());
        INFO("want " << show_values(want) << " got " << show_values(*got));
        REQUIRE(*got == want);
      }
    } else if (op >= 100 && op < 109) {
      const std::string k = any_key();
      const Names fs = some_fields();
      desc << "hgetdel " << k << ' ' << show_names(fs);
      const Model::Values want = model.hgetdel(k, fs, now);
      INFO(desc.str());
      REQUIRE(ok(fx.store.hgetdel(k, fs)) == want);
    } else if (op >= 100) {
      const std::string k = any_key();
      Pairs pairs;
      for (const auto& f : some_fields()) pairs.emplace_back(f, values[static_cast<std::size_t>(uniform(0, 7))]);
      const std::int64_t form = uniform(0, 3);
      const auto kind = form == 0   ? expiring::FieldTtl::Kind::keep
                        : form == 1 ? expiring::FieldTtl::Kind::persist
                                    : expiring::FieldTtl::Kind::expire;
      const auto cond = static_cast<expiring::FieldCondition>(uniform(0, 2));
      Cmd c = Cmd::hpexpire;
      std::int64_t arg = 0, when = 0;
      std::vector<Errc> errs;
      expiring::FieldTtl ttl = kind == expiring::FieldTtl::Kind::keep ? expiring::FieldTtl::keep() : expiring::FieldTtl::persist();
      if (kind == expiring::FieldTtl::Kind::expire) {
        time_arg(c, arg);
        ttl = field_ttl(c, arg);
        errs = Model::expire_errors(c, arg, kNone, now, when);
      }
      desc << "hsetex " << k << " form " << form << ' ' << name(c) << ' ' << arg << " cond " << static_cast<int>(cond)
           << " x" << pairs.size();
      INFO(desc.str());
      const expiring::Result<bool> got = fx.store.hsetex(k, pairs, ttl, cond);
      if (!errs.empty()) {
        REQUIRE_FALSE(got.ok());
        REQUIRE(std::find(errs.begin(), errs.end(), got.error()) != errs.end());
      } else {
        REQUIRE(got == model.hsetex(k, pairs, kind, when, cond, now));
      }
    } else if (op < 18) {
      const std::string k = any_key();
      Pairs pairs;
      for (const auto& f : some_fields()) pairs.emplace_back(f, values[static_cast<std::size_t>(uniform(0, 7))]);
      desc << "hset " << k << " x" << pairs.size();
      const std::size_t want = model.hset(k, pairs, now);
      INFO(desc.str());
      REQUIRE(ok(fx.store.hset(k, pairs)) == want);
    } else if (op < 23) {
      const std::string k = any_key(), f = any_field(), v = values[static_cast<std::size_t>(uniform(0, 7))];
      desc << "hsetnx " << k << ' ' << f << ' ' << v;
      const bool want = model.hsetnx(k, f, v, now);
      INFO(desc.str());
      REQUIRE(ok(fx.store.hsetnx(k, f, v)) == want);
    } else if (op < 31) {
      const std::string k = any_key();
      const Names fs = some_fields();
      desc << "hdel " << k << ' ' << show_names(fs);
      const std::size_t want = model.hdel(k, fs, now);
      INFO(desc.str());
      REQUIRE(ok(fx.store.hdel(k, fs)) == want);
    } else if (op < 56) {
      const Cmd c = kCmds[uniform(0, 3)];
      const std::string k = any_key();
      const Names fs = some_fields();
      ExpireFlags fl = kNone;
      const std::int64_t f = uniform(0, 99);
      // Single flags, and the combinations that are refused (XX|GT and XX|LT are left out:
      // see "XX with GT or LT applies both conditions").
      if (f < 40) {
        fl = kNone;
      } else if (f < 52) {
        fl = kNX;
      } else if (f < 64) {
        fl = kXX;
      } else if (f < 76) {
        fl = kGT;
      } else if (f < 88) {
        fl = kLT;
      } else if (f < 92) {
        fl = kNX | kXX;
      } else if (f < 96) {
        fl = kGT | kLT;
      } else {
        fl = kNX | kGT;
      }
      std::int64_t arg = 0;
      const std::int64_t r = uniform(0, 99);
      switch (c) {
        case Cmd::hpexpire:
          arg = r < 4 ? (r < 2 ? -1 : kMin) : r < 8 ? kCap - now + (r & 1) : r < 18 ? 0 : uniform(1, 3000);
          break;
        case Cmd::hexpire:
          arg = r < 4 ? -1 : r < 7 ? 70368744178 : r < 18 ? 0 : uniform(1, 3);
          break;
        case Cmd::hpexpireat:
          arg = r < 4 ? -5 : r < 8 ? kCap + (r & 1) : std::max<std::int64_t>(0, now + uniform(-2000, 3000));
          break;
        case Cmd::hexpireat:
          arg = r < 4 ? -1 : r < 7 ? 70368744178 : std::max<std::int64_t>(0, now / 1000 + uniform(-2, 3));
          break;
      }
      desc << name(c) << ' ' << k << ' ' << arg << " flags " << static_cast<int>(fl) << ' ' << show_names(fs);
      INFO(desc.str());
      std::int64_t when = 0;
      const std::vector<Errc> errs = Model::expire_errors(c, arg, fl, now, when);
      const expiring::Result<Codes> got = call(fx.store, c, k, arg, fs, fl);
      if (!errs.empty()) {
        REQUIRE_FALSE(got.ok());
        CAPTURE(got.error());
        REQUIRE(std::find(errs.begin(), errs.end(), got.error()) != errs.end());
      } else {
        const Codes want = model.hexpire(k, when, fs, fl, now);
        REQUIRE(got.ok());
        REQUIRE(*got == want);
      }
    } else if (op < 62) {
      const std::string k = any_key();
      const Names fs = some_fields();
      desc << "hpersist " << k << ' ' << show_names(fs);
      const Codes want = model.hpersist(k, fs, now);
      INFO(desc.str());
      REQUIRE(ok(fx.store.hpersist(k, fs)) == want);
    } else if (op < 68) {
      const std::string k = any_key(), f = any_field();
      const std::int64_t d = deltas[uniform(0, 5)];
      desc << "hincrby " << k << ' ' << f << ' ' << d;
      std::int64_t sum = 0;
      Errc err{};
      const bool want_ok = model.hincrby(k, f, d, now, sum, err);
      INFO(desc.str());
      const expiring::Result<std::int64_t> got = fx.store.hincrby(k, f, d);
      if (want_ok) {
        REQUIRE(got == sum);
      } else {
        REQUIRE(got == err);
      }
    } else if (op < 70) {
      const std::string k = any_key();
      desc << "del " << k;
      const bool want = model.del(k);
      INFO(desc.str());
      REQUIRE(fx.store.del(k) == want);
    } else if (op < 73) {
      const std::string src = any_key(), dst = any_key();
      desc << "rename " << src << ' ' << dst;
      const bool want = model.rename(src, dst);
      INFO(desc.str());
      const expiring::Result<void> got = fx.store.rename(src, dst);
      if (want) {
        REQUIRE(got.ok());
      } else {
        REQUIRE(got == Errc::no_such_key);
      }
    } else if (op < 81) {
      const std::int64_t ms = uniform(0, 700);
      desc << "advance " << ms;
      fx.clock.advance(ms);
    } else if (op < 85) {
      // To a field's deadline exactly, or one ms past it: the boundary of D20 and D21.
      std::vector<std::int64_t> ahead;
      for (const auto& k : model.keys) {
        for (const auto& f : k.second) {
          if (f.second.deadline != kNoDl && f.second.deadline + 1 >= now) ahead.push_back(f.second.deadline);
        }
      }
      if (!ahead.empty()) {
        const std::int64_t to = std::max(now, ahead[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(ahead.size()) - 1))] + uniform(0, 1));
        desc << "advance to " << to;
        fx.clock.set(to);
      }
    } else if (op < 92) {
      desc << "tick";
      tick_step = true;
      tick_expected = model.tick(now);
      tick_got = fx.store.tick().fields_expired;
    } else {
      // Reads: everything about one key, which opens (and reclaims) it in both.
      const std::string k = any_key();
      desc << "reads " << k;
      INFO(desc.str());
      MHash* h = model.reclaim(k, now);
      REQUIRE(fx.hlen(k) == (h == nullptr ? 0 : h->size()));
      REQUIRE(fx.take() == model.events);
      model.events.clear();
      Pairs want_all;
      if (h != nullptr) {
        for (const auto& f : *h) want_all.emplace_back(f.first, f.second.value);
      }
      REQUIRE(sorted(ok(fx.store.hgetall(k))) == want_all);
      Times pttl, ttl, pat, at;
      for (const auto& f : field_names) {
        const auto it = h == nullptr ? MHash::const_iterator{} : h->find(f);
        if (h == nullptr || it == h->end()) {
          for (Times* t : {&pttl, &ttl, &pat, &at}) t->push_back(-2);
        } else if (it->second.deadline == kNoDl) {
          for (Times* t : {&pttl, &ttl, &pat, &at}) t->push_back(-1);
        } else {
          const std::int64_t d = it->second.deadline;
          pttl.push_back(d - now);
          ttl.push_back((d - now + 999) / 1000);
          pat.push_back(d);
          at.push_back((d + 999) / 1000);
        }
      }
      REQUIRE(ok(fx.store.hpttl(k, field_names)) == pttl);
      REQUIRE(ok(fx.store.httl(k, field_names)) == ttl);
      REQUIRE(ok(fx.store.hpexpiretime(k, field_names)) == pat);
      REQUIRE(ok(fx.store.hexpiretime(k, field_names)) == at);
      const std::string f = any_field();
      const auto it = h == nullptr ? MHash::const_iterator{} : h->find(f);
      REQUIRE(fx.get(k, f) == (h == nullptr || it == h->end() ? std::string("(nil)") : it->second.value));
      REQUIRE(fx.store.exists(k) == (h != nullptr));
    }

    // After every step: the events, the stored fields (stale ones included) with their
    // deadlines, the figures, and the invariants.
    INFO(desc.str());
    Evs got = fx.take();
    if (tick_step) {
      REQUIRE(tick_got == tick_expected);
      for (std::size_t j = 0; j < got.size(); ++j) {  // a del follows its key's hexpired
        if (got[j].cause == KeyEventCause::del) {
          REQUIRE(j > 0);
          REQUIRE(got[j - 1] == ev(KeyEventCause::hexpired, got[j].key, got[j - 1].fields));
        }
      }
      std::sort(got.begin(), got.end());
      std::sort(model.events.begin(), model.events.end());
    }
    model.events.erase(std::remove_if(model.events.begin(), model.events.end(),
                                      [&](const Ev& e) { return !cfg.causes.contains(e.cause); }),
                       model.events.end());
    REQUIRE(got == model.events);
    model.events.clear();
    const MKeys now_stored = stored(fx.store);
    if (now_stored != model.keys) FAIL("store:\n" << show(now_stored) << "model:\n" << show(model.keys));
    REQUIRE(fx.store.size() == model.keys.size());
    REQUIRE(fx.subkeys() == model.expired_subkeys);
    REQUIRE(fx.subexpiry() == model.volatile_hashes());
    REQUIRE(fx.expired_keys() == 0);
    REQUIRE(fx.store.check_invariants());
  }
}

}  // namespace

TEST_CASE("hash fields: random operations agree with a reference model", "[hash_fields]") {
  constexpr std::uint64_t kModelSeed = 0x4D0D'E15E'ED14ull;
  SECTION("small hashes") { run_model(ModelConfig{"4 keys x 6 fields", 4, 6, 3000, 3}, kModelSeed); }
  SECTION("hashes above FieldMap's 128-field threshold") {
    run_model(ModelConfig{"2 keys x 300 fields", 2, 300, 1500, 40}, kModelSeed + 1);
  }
  SECTION("small hashes, nothing listening for hset or hexpire (the short paths)") {
    run_model(ModelConfig{"4 keys x 6 fields, quiet writes", 4, 6, 3000, 3,
                          all_causes_but({KeyEventCause::hset, KeyEventCause::hexpire})},
              kModelSeed + 2);
  }
  SECTION("large hashes, nothing listening for hset or hexpire (the short paths)") {
    run_model(ModelConfig{"2 keys x 300 fields, quiet writes", 2, 300, 1500, 40,
                          all_causes_but({KeyEventCause::hset, KeyEventCause::hexpire})},
              kModelSeed + 3);
  }
}

// =============================================================================================
// 10. A large hash
// =============================================================================================

TEST_CASE("hash fields: a 20000-field hash is reclaimed by tick in deadline order", "[hash_fields]") {
  constexpr std::uint64_t kSeed = 0xB16'4A54'0014ull;
  CAPTURE(kSeed);
  std::mt19937_64 rng(kSeed);
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  Hfx fx(kT0);
  constexpr int kFields = 20000;
  std::map<std::string, std::int64_t> live;  // field -> deadline (kNoDl: persistent)
  Pairs batch;
  for (int i = 0; i < kFields; ++i) {
    batch.emplace_back("f" + std::to_string(i), "v" + std::to_string(i));
    if (batch.size() == 1000) {
      fx.hset_many("big", batch);
      batch.clear();
    }
  }
  for (int i = 0; i < kFields; ++i) {
    const std::string f = "f" + std::to_string(i);
    const std::int64_t d = kT0 + uniform(1000, 21000);
    fx.deadline("big", f, d);
    live[f] = d;
  }
  // Re-time, persist and delete some, before any is due (the due-list sees every change).
  for (int j = 0; j < 3000; ++j) {
    const std::string f = "f" + std::to_string(uniform(0, kFields - 1));
    if (live.count(f) == 0) continue;
    const std::int64_t r = uniform(0, 9);
    if (r < 6) {
      const std::int64_t d = kT0 + uniform(1000, 21000);
      fx.deadline("big", f, d);
      live[f] = d;
    } else if (r < 8) {
      REQUIRE(ok(fx.store.hpersist("big", {f})) == (live[f] == kNoDl ? Codes{-1} : Codes{1}));
      live[f] = kNoDl;
    } else {
      REQUIRE(ok(fx.store.hdel("big", {f})) == 1);
      live.erase(f);
    }
  }
  REQUIRE(fx.stored_size("big") == live.size());
  (void)fx.take();

  std::int64_t last = std::numeric_limits<std::int64_t>::min();  // the latest deadline reclaimed so far
  std::uint64_t total = 0;
  const std::uint64_t quota = 1000;
  bool drained = false;
  for (int t = 0; t < 200 && !drained; ++t) {
    // Small steps first (the quota is not reached), then large jumps (it is).
    fx.clock.advance(t < 20 ? 600 : (t % 4 == 0 ? 8000 : 0));
    const std::int64_t now = fx.now();
    CAPTURE(t, now);
    std::vector<std::int64_t> due;
    for (const auto& f : live) {
      if (f.second != kNoDl && now > f.second) due.push_back(f.second);
    }
    std::sort(due.begin(), due.end());
    const expiring::TickReport r = fx.store.tick();
    const std::uint64_t want = std::min<std::uint64_t>(quota, due.size());
    CHECK(r.fields_expired == want);
    std::vector<std::int64_t> got;
    for (const Ev& e : fx.take()) {
      if (e.cause == KeyEventCause::del) continue;
      REQUIRE(e.cause == KeyEventCause::hexpired);
      REQUIRE(e.key == "big");
      for (const auto& p : e.fields) {
        const auto it = live.find(p.first);
        REQUIRE(it != live.end());
        CHECK(p.second == "v" + p.first.substr(1));
      }
      std::int64_t prev = last;
      for (const auto& n : e.order) {  // the event's fields, in the order they were reclaimed
        const std::int64_t d = live.at(n);
        CHECK(d < now);  // never before its deadline
        CHECK(d >= prev);
        prev = d;
        got.push_back(d);
        live.erase(n);
      }
    }
    std::sort(got.begin(), got.end());
    REQUIRE(got.size() == want);
    // Exactly the earliest due fields, in nondecreasing order across ticks.
    CHECK(std::equal(got.begin(), got.end(), due.begin()));
    if (!got.empty()) {
      CHECK(got.front() >= last);
      last = got.back();
    }
    total += got.size();
    CHECK(fx.stored_size("big") == live.size());
    CHECK(fx.subkeys() == total);
    CHECK(fx.store.check_invariants());
    drained = std::none_of(live.begin(), live.end(), [](const auto& f) { return f.second != kNoDl; });
  }
  CHECK(drained);
  CHECK(fx.subexpiry() == 0);
  CHECK(fx.hlen("big") == live.size());
  CHECK(fx.subkeys() == total);
}

// =============================================================================================
// 11. Redis 8: HGETEX, HGETDEL, HSETEX
// =============================================================================================

namespace {
using Values = std::vector<std::optional<std::string>>;
using expiring::FieldCondition;
using expiring::FieldTtl;
}  // namespace

TEST_CASE("hash fields: HGETEX reads the fields, then sets, keeps or removes their TTLs", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}, {"c", "3"}});
  fx.deadline("h", "b", kT0 + 5000);
  fx.take();
  // No TTL argument: a read (nothing changes, no event).
  CHECK(ok(fx.store.hgetex("h", {"a", "zz", "b"})) == Values{"1", std::nullopt, "2"});
  CHECK(fx.take().empty());
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "b"})) == Times{-1, kT0 + 5000});
  // EX / PX / EXAT / PXAT: each field found gets the deadline; a missing one is untouched.
  CHECK(ok(fx.store.hgetex("h", {"a", "zz"}, FieldTtl::ex(10))) == Values{"1", std::nullopt});
  CHECK(ok(fx.store.hpexpiretime("h", {"a"})) == Times{kT0 + 10000});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpire, "h")});
  CHECK(ok(fx.store.hgetex("h", {"a"}, FieldTtl::px(20))) == Values{"1"});
  CHECK(ok(fx.store.hpexpiretime("h", {"a"})) == Times{kT0 + 20});
  CHECK(ok(fx.store.hgetex("h", {"a", "c"}, FieldTtl::exat(kT0 / 1000 + 7))) == Values{"1", "3"});
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "c"})) == Times{kT0 + 7000, kT0 + 7000});
  CHECK(ok(fx.store.hgetex("h", {"c"}, FieldTtl::pxat(kT0 + 123))) == Values{"3"});
  CHECK(ok(fx.store.hpexpiretime("h", {"c"})) == Times{kT0 + 123});
  CHECK(ok(fx.store.hgetex("h", {"c"}, FieldTtl::after(std::chrono::seconds(3)))) == Values{"3"});
  CHECK(ok(fx.store.hpexpiretime("h", {"c"})) == Times{kT0 + 3000});
  fx.take();
  // PERSIST: the TTLs go; a field without one is no change (no event when none had one).
  CHECK(ok(fx.store.hgetex("h", {"a", "b"}, FieldTtl::persist())) == Values{"1", "2"});
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "b", "c"})) == Times{-1, -1, kT0 + 3000});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hpersist, "h")});
  CHECK(ok(fx.store.hgetex("h", {"a"}, FieldTtl::persist())) == Values{"1"});
  CHECK(fx.take().empty());
  // A time now or in the past: the values, then the fields deleted (counted as expired, as a
  // past HEXPIRE time), and the key with its last field.
  const std::uint64_t before = fx.subkeys();
  CHECK(ok(fx.store.hgetex("h", {"a", "b"}, FieldTtl::px(0))) == Values{"1", "2"});
  CHECK(fx.subkeys() == before + 2);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
  CHECK(ok(fx.store.hgetex("h", {"c", "c"}, FieldTtl::pxat(kT0 - 1))) == Values{"3", std::nullopt});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::del, "h")});
  CHECK_FALSE(fx.store.exists("h"));
  // A missing key: every field nullopt, nothing created.
  CHECK(ok(fx.store.hgetex("h", {"a", "b"}, FieldTtl::ex(10))) == Values{std::nullopt, std::nullopt});
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(fx.take().empty());
  // The caller's array form: the number found.
  fx.hset("g", "x", "1");
  std::optional<std::string> out[2];
  CHECK(fx.store.hgetex("g", {"x", "y"}, FieldTtl::keep(), out) == std::size_t{1});
  CHECK((out[0] == std::optional<std::string>("1") && out[1] == std::nullopt));
}

TEST_CASE("hash fields: HGETEX of a stale field answers nil and reclaims it", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}});
  fx.deadline("h", "a", kT0 + 10);
  fx.clock.set(kT0 + 11);
  fx.take();
  CHECK(ok(fx.store.hgetex("h", {"a", "b"}, FieldTtl::ex(100))) == Values{std::nullopt, "2"});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "1"}}), ev(KeyEventCause::hexpire, "h")});
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "b"})) == Times{-2, kT0 + 11 + 100000});
}

TEST_CASE("hash fields: HGETEX's time errors change nothing", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}});
  fx.deadline("h", "a", kT0 + 10);
  fx.clock.set(kT0 + 11);  // `a` is stale: an error must not reclaim it either
  const std::string before = fx.state();
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::ex(-1)) == Errc::negative_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::px(kMin)) == Errc::negative_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::pxat(kCap + 1)) == Errc::invalid_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::exat(kCap / 1000 + 1)) == Errc::invalid_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::px(kCap - kT0 - 10)) == Errc::invalid_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::px(kMax)) == Errc::invalid_expire_time);
  CHECK(fx.store.hgetex("h", {"b"}, FieldTtl::after(std::chrono::hours::max())) == Errc::invalid_expire_time);
  CHECK(fx.state() == before);
}

TEST_CASE("hash fields: HGETDEL reads and deletes the fields, the key with its last", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}, {"c", "3"}});
  fx.deadline("h", "b", kT0 + 5000);
  fx.take();
  CHECK(ok(fx.store.hgetdel("h", {"b", "zz", "b"})) == Values{"2", std::nullopt, std::nullopt});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h")});
  CHECK(fx.subexpiry() == 0);  // its only field with a TTL went
  CHECK(ok(fx.store.hgetdel("h", {"zz"})) == Values{std::nullopt});
  CHECK(fx.take().empty());
  CHECK(fx.hlen("h") == 2);
  CHECK(ok(fx.store.hgetdel("h", {"a", "c"})) == Values{"1", "3"});
  CHECK(fx.take() == Evs{ev(KeyEventCause::hdel, "h"), ev(KeyEventCause::del, "h")});
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(ok(fx.store.hgetdel("h", {"a"})) == Values{std::nullopt});
  CHECK(fx.subkeys() == 0);  // deletions, not expiry
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: HSETEX writes the fields with a TTL, KEEPTTL, or none", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  // No TTL argument: as HSET, an overwrite clears the field's TTL.
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "1"}, {"b", "2"}})) == true);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h")});
  fx.deadline("h", "a", kT0 + 5000);
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "x"}})) == true);
  CHECK(ok(fx.store.hpexpiretime("h", {"a"})) == Times{-1});
  // A time: every field gets it (new and existing), events hset then hexpire.
  fx.take();
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "y"}, {"n", "9"}}, FieldTtl::ex(10))) == true);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h"), ev(KeyEventCause::hexpire, "h")});
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "n", "b"})) == Times{kT0 + 10000, kT0 + 10000, -1});
  CHECK(fx.get("h", "a") == "y");
  // KEEPTTL: an existing field keeps its TTL; a new one has none.
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "z"}, {"m", "8"}}, FieldTtl::keep())) == true);
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "m"})) == Times{kT0 + 10000, -1});
  CHECK(fx.get("h", "a") == "z");
  CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h")});
  // A new key is created.
  CHECK(ok(fx.store.hsetex("g", Pairs{{"x", "1"}}, FieldTtl::pxat(kT0 + 100))) == true);
  CHECK(ok(fx.store.hpexpiretime("g", {"x"})) == Times{kT0 + 100});
  CHECK(fx.subexpiry() == 2);
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: HSETEX FNX and FXX, a stale field counting as missing", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  // FXX on a missing key: nothing, and no key created.
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "1"}}, FieldTtl::persist(), FieldCondition::fxx)) == false);
  CHECK_FALSE(fx.store.exists("h"));
  CHECK(fx.take().empty());
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "1"}, {"b", "2"}}, FieldTtl::persist(), FieldCondition::fnx)) == true);
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "x"}, {"c", "3"}}, FieldTtl::ex(5), FieldCondition::fnx)) == false);
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "x"}, {"c", "3"}}, FieldTtl::ex(5), FieldCondition::fxx)) == false);
  CHECK(fx.get("h", "a") == "1");
  CHECK(fx.get("h", "c") == "(nil)");
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "x"}, {"b", "y"}}, FieldTtl::ex(5), FieldCondition::fxx)) == true);
  CHECK(ok(fx.store.hpexpiretime("h", {"a", "b"})) == Times{kT0 + 5000, kT0 + 5000});
  fx.take();
  // `a` and `b` stale: FXX fails (they are gone), FNX succeeds.
  fx.clock.set(kT0 + 5001);
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "2"}}, FieldTtl::keep(), FieldCondition::fxx)) == false);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hexpired, "h", {{"a", "x"}, {"b", "y"}}), ev(KeyEventCause::del, "h")});
  CHECK_FALSE(fx.store.exists("h"));
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}});
  fx.deadline("h", "a", kT0 + 6000);
  fx.clock.set(kT0 + 6001);
  fx.take();
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "3"}}, FieldTtl::keep(), FieldCondition::fnx)) == true);
  CHECK(ok(fx.store.hpexpiretime("h", {"a"})) == Times{-1});  // created anew: no TTL to keep
  // A name given twice with FNX: both absent, both written (the last value stays).
  CHECK(ok(fx.store.hsetex("h", Pairs{{"d", "1"}, {"d", "2"}}, FieldTtl::persist(), FieldCondition::fnx)) == true);
  CHECK(fx.get("h", "d") == "2");
}

TEST_CASE("hash fields: HSETEX with a past time writes, then deletes, the fields", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}});
  fx.take();
  CHECK(ok(fx.store.hsetex("h", Pairs{{"a", "x"}, {"c", "y"}}, FieldTtl::px(0))) == true);
  CHECK(fx.take() == Evs{ev(KeyEventCause::hset, "h"), ev(KeyEventCause::hdel, "h")});
  CHECK(ok(fx.store.hgetall("h")) == Pairs{{"b", "2"}});
  CHECK(fx.subkeys() == 2);
  // On a missing key: created, written, deleted: nothing is left.
  CHECK(ok(fx.store.hsetex("g", Pairs{{"a", "x"}}, FieldTtl::exat(1))) == true);
  CHECK(fx.take() ==
        Evs{ev(KeyEventCause::hset, "g"), ev(KeyEventCause::hdel, "g"), ev(KeyEventCause::del, "g")});
  CHECK_FALSE(fx.store.exists("g"));
  CHECK(fx.store.check_invariants());
}

TEST_CASE("hash fields: HSETEX's errors change nothing", "[hash_fields][redis8]") {
  Hfx fx(kT0);
  fx.hset_many("h", Pairs{{"a", "1"}, {"b", "2"}});
  fx.deadline("h", "a", kT0 + 10);
  fx.clock.set(kT0 + 11);
  const std::string before = fx.state();
  CHECK(fx.store.hsetex("h", Pairs{{"b", "x"}}, FieldTtl::ex(-1)) == Errc::negative_expire_time);
  CHECK(fx.store.hsetex("h", Pairs{{"b", "x"}}, FieldTtl::pxat(kCap + 1), FieldCondition::fxx) ==
        Errc::invalid_expire_time);
  CHECK(fx.store.hsetex("new", Pairs{{"b", "x"}}, FieldTtl::ex(kCap)) == Errc::invalid_expire_time);
  CHECK(fx.state() == before);
  // No pair: nothing to write.
  CHECK(ok(fx.store.hsetex("new", Pairs{})) == true);
  CHECK_FALSE(fx.store.exists("new"));
}
