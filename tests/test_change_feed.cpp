// tests/test_change_feed.cpp: the change feed in absolute time and replica mode
// (docs/semantics.md §4 and D28-D33; catalogue cases 153-163).
//
// Each record is written as the Redis command it stands for ("SET k v PXAT 1100000"), so
// the expectations read as the catalogue's. The replay tests feed one store's records into
// another and compare everything stored, stale entries included.
#include <expiring/expiring.hpp>
#include <expiring/hash_fields.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using namespace support;
using expiring::ChangeOp;
using expiring::ChangeRecord;
using expiring::ChangeTtl;

namespace {

using Store = StoreOf<StringKeys>;
using Change = Store::change_type;
using Record = ChangeRecord<std::string, std::string>;

std::string text(const Change& c) {
  std::string s = expiring::to_string(c.op);
  if (c.key != nullptr) s += " " + *c.key;
  if (c.op == ChangeOp::rename) s += " " + *c.to;
  if (c.op == ChangeOp::set) {
    s += " " + *c.value;
    if (c.ttl == ChangeTtl::at) s += " PXAT " + std::to_string(c.at_ms);
    if (c.ttl == ChangeTtl::keep) s += " KEEPTTL";
  }
  if (c.op == ChangeOp::pexpireat) s += " " + std::to_string(c.at_ms);
  return s;
}

// A store with a feed that records both the text and an owning copy of every record.
struct Fx {
  ManualClock clock{T0};
  Store store;
  std::vector<std::string> log;
  std::vector<Record> records;
  explicit Fx(expiring::Options o = {}) : store(clock, o) {
    store.set_change_feed([this](const Change& c) {
      log.push_back(text(c));
      records.push_back(Record::of(c));
    });
  }
  std::vector<std::string> take() { return std::exchange(log, {}); }
};

using Lines = std::vector<std::string>;
using Stored = std::vector<std::tuple<std::string, std::string, std::optional<std::int64_t>>>;

template <class S>
Stored stored(const S& s) {
  Stored out;
  s.visit_stored([&](const std::string& k, const std::string& v, std::optional<std::int64_t> d) { out.emplace_back(k, v, d); });
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("change feed: every TTL command travels as PEXPIREAT (case 153)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("k", "v").ok());
  f.take();
  CHECK(*f.store.expire("k", 100));
  CHECK(*f.store.pexpire("k", 100));
  CHECK(*f.store.expireat("k", 1100));
  CHECK(*f.store.pexpireat("k", 1100000));
  CHECK(f.take() == Lines{"PEXPIREAT k 1100000", "PEXPIREAT k 1000100", "PEXPIREAT k 1100000",
                          "PEXPIREAT k 1100000"});
}

TEST_CASE("change feed: SET with any expiry travels as SET PXAT (case 154)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("k", "v", Ex{100}).ok());
  REQUIRE(f.store.set("k", "v", Px{100000}).ok());
  REQUIRE(f.store.set("k", "v", ExAt{1100}).ok());
  REQUIRE(f.store.setex("k", 100, "v").ok());
  REQUIRE(f.store.psetex("k", 100000, "v").ok());
  REQUIRE(f.store.set("k", "v", PxAt{1100000}).ok());
  CHECK(f.take() == Lines(6, "SET k v PXAT 1100000"));
  // KEEPTTL travels as the deadline it kept (D29); a plain SET as a SET without TTL.
  REQUIRE(f.store.set("k", "w", KeepTtl{}).ok());
  REQUIRE(f.store.set("k", "x").ok());
  CHECK(f.take() == Lines{"SET k w PXAT 1100000", "SET k x"});
}

TEST_CASE("change feed: a deadline already past travels as DEL, or UNLINK under lazyfree-lazy-expire (case 155)",
          "[feed][spec-M]") {
  for (const bool lazy : {false, true}) {
    CAPTURE(lazy);
    expiring::Options o;
    o.lazyfree_lazy_expire = lazy;
    Fx f(o);
    REQUIRE(f.store.set("foo", "bar").ok());
    CHECK(*f.store.expireat("foo", 900));
    REQUIRE(f.store.set("foo", "bar").ok());
    CHECK(*f.store.pexpire("foo", -1));
    REQUIRE(f.store.set("foo", "bar").ok());
    REQUIRE(f.store.set("foo", "baz", PxAt{T0 - 1}).ok());
    const std::string del = lazy ? "UNLINK foo" : "DEL foo";
    CHECK(f.take() == Lines{"SET foo bar", del, "SET foo bar", del, "SET foo bar", del});
  }
}

TEST_CASE("change feed: GETEX travels as PERSIST, DEL or nothing (case 156)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("foo", "bar", Ex{100}).ok());
  CHECK(show(*f.store.getex("foo", Persist{})) == "bar");
  CHECK(show(*f.store.getex("foo")) == "bar");
  CHECK(show(*f.store.getex("foo", Persist{})) == "bar");  // no TTL to remove: nothing
  CHECK(show(*f.store.getex("foo", ExAt{900})) == "bar");
  CHECK(f.take() == Lines{"SET foo bar PXAT 1100000", "PERSIST foo", "DEL foo"});
  REQUIRE(f.store.set("foo", "bar").ok());
  CHECK(show(*f.store.getex("foo", Px{500})) == "bar");
  CHECK(f.take() == Lines{"SET foo bar", "PEXPIREAT foo 1000500"});
}

TEST_CASE("change feed: GETDEL travels as DEL, a plain GETEX as nothing (case 157)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("foo", "bar").ok());
  CHECK(show(f.store.getdel("foo")) == "bar");
  REQUIRE(f.store.set("foo", "bar").ok());
  CHECK(show(*f.store.getex("foo")) == "bar");
  CHECK(f.store.del("foo"));
  CHECK(f.take() == Lines{"SET foo bar", "DEL foo", "SET foo bar", "DEL foo"});
}

TEST_CASE("change feed: a read sends only the DEL of the key it found expired (case 158)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("foo", "bar", Px{1}).ok());
  CHECK(f.take() == Lines{"SET foo bar PXAT 1000001"});
  f.clock.set(T0 + 2);
  CHECK(f.store.get("foo") == nullptr);
  REQUIRE(f.store.set("x", "1").ok());
  CHECK(f.take() == Lines{"DEL foo", "SET x 1"});
  // Nothing at all for reads and writes that change nothing.
  REQUIRE(f.store.set("y", "1").ok());
  f.take();
  (void)f.store.get("y");
  (void)f.store.exists("y");
  (void)f.store.ttl("y");
  (void)f.store.pttl("nope");
  CHECK_FALSE(f.store.persist("y"));
  CHECK_FALSE(*f.store.expire("nope", 10));
  CHECK_FALSE(*f.store.set("y", "2", SetCond::NX));
  CHECK_FALSE(*f.store.set("nope", "2", SetCond::XX));
  CHECK_FALSE(f.store.del("nope"));
  CHECK_FALSE(*f.store.pexpire("y", 10, expiring::ExpireFlags::XX));
  CHECK(f.take().empty());
}

TEST_CASE("change feed: scan() and random_key() send their lazy DELs one by one (case 159)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("foo1", "bar", Px{1}).ok());
  REQUIRE(f.store.set("foo2", "bar", Px{1}).ok());
  f.take();
  f.clock.set(T0 + 2);
  std::uint64_t cursor = 0;
  int rounds = 0;
  do {
    cursor = f.store.scan(cursor, 10, [](const std::string&, const std::string&) {});
  } while (cursor != 0 && ++rounds < 100);
  Lines got = f.take();
  std::sort(got.begin(), got.end());
  CHECK(got == Lines{"DEL foo1", "DEL foo2"});

  REQUIRE(f.store.set("foo1", "bar", Px{1}).ok());
  REQUIRE(f.store.set("foo2", "bar", Px{1}).ok());
  f.take();
  f.clock.set(T0 + 4);
  CHECK_FALSE(f.store.random_key().has_value());
  got = f.take();
  std::sort(got.begin(), got.end());
  CHECK(got == Lines{"DEL foo1", "DEL foo2"});
}

TEST_CASE("change feed: a write that finds its key expired sends MULTI, DEL, the write, EXEC (case 160)",
          "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("k", "v", Px{10}).ok());
  f.take();
  f.clock.set(T0 + 11);
  REQUIRE(f.store.set("k", "w").ok());
  CHECK(f.take() == Lines{"MULTI", "DEL k", "SET k w", "EXEC"});
  // A write that finds the key expired and then changes nothing sends the DEL alone.
  REQUIRE(f.store.set("j", "v", Px{10}).ok());
  f.take();
  f.clock.set(T0 + 22);
  CHECK_FALSE(*f.store.expire("j", 100));
  CHECK(f.take() == Lines{"DEL j"});
  // RENAME onto an expired destination.
  REQUIRE(f.store.set("a", "1").ok());
  REQUIRE(f.store.set("b", "2", Px{1}).ok());
  f.take();
  f.clock.set(T0 + 30);
  REQUIRE(f.store.rename("a", "b").ok());
  CHECK(f.take() == Lines{"MULTI", "DEL b", "RENAME a b", "EXEC"});
}

TEST_CASE("change feed: a replay later in time keeps every absolute deadline (case 161)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("ex", "v", Ex{100}).ok());
  REQUIRE(f.store.set("keep", "v", Ex{100}).ok());
  REQUIRE(f.store.set("keep", "w", KeepTtl{}).ok());
  REQUIRE(f.store.set("persisted", "v", Ex{100}).ok());
  CHECK(show(*f.store.getex("persisted", Persist{})) == "v");
  REQUIRE(f.store.set("gone", "v", Px{1000}).ok());
  ManualClock later{T0 + 2000};
  Store replay(later);
  for (const Record& r : f.records) REQUIRE(replay.apply(r.view()).ok());
  CHECK(replay.ttl("ex") == 98);
  CHECK(replay.pexpiretime("ex") == f.store.pexpiretime("ex"));
  CHECK(replay.pexpiretime("keep") == T0 + 100000);
  CHECK(show(replay.get("keep")) == "w");
  CHECK(replay.ttl("persisted") == -1);
  // Stored as replayed (apply() takes every key as valid), reclaimed afterwards.
  CHECK(replay.size() == 4);
  CHECK(replay.get("gone") == nullptr);
  CHECK(replay.size() == 3);
}

TEST_CASE("change feed: an in-place update travels as SET KEEPTTL (case 162)", "[feed][spec-M]") {
  Fx f;
  REQUIRE(f.store.set("f", "1", Ex{100}).ok());
  CHECK(f.store.modify("f", [](std::string& v) { v = "1.1"; }));
  CHECK(f.take() == Lines{"SET f 1 PXAT 1100000", "SET f 1.1 KEEPTTL"});
}

TEST_CASE("change feed: removals, renames, copies, groups and the active cycle", "[feed]") {
  SECTION("del, unlink, rename, copy, clear") {
    Fx f;
    REQUIRE(f.store.set("a", "1", Ex{10}).ok());
    REQUIRE(f.store.rename("a", "b").ok());
    REQUIRE(*f.store.copy("b", "c"));
    CHECK(f.store.unlink("b"));
    CHECK(f.store.del("c"));
    REQUIRE(f.store.set("d", "1").ok());
    f.store.clear();
    CHECK(f.take() == Lines{"SET a 1 PXAT 1010000", "RENAME a b", "SET c 1 PXAT 1010000", "UNLINK b", "DEL c",
                            "SET d 1", "FLUSHALL"});
  }
  SECTION("mset and del_many travel as one MULTI") {
    Fx f;
    const std::vector<std::pair<std::string, std::string>> pairs{{"a", "1"}, {"b", "2"}};
    REQUIRE(f.store.mset(pairs).ok());
    CHECK(f.store.del_many(std::vector<std::string>{"a", "b", "zz"}) == 2);
    CHECK(f.take() == Lines{"MULTI", "SET a 1", "SET b 2", "EXEC", "MULTI", "DEL a", "DEL b", "EXEC"});
  }
  SECTION("tick() sends each expiry alone, UNLINK under lazyfree-lazy-expire") {
    for (const bool lazy : {false, true}) {
      expiring::Options o;
      o.lazyfree_lazy_expire = lazy;
      Fx f(o);
      for (int i = 0; i < 5; ++i) REQUIRE(f.store.set("k" + std::to_string(i), "v", Px{10}).ok());
      f.take();
      f.clock.set(T0 + 20);
      for (int i = 0; i < 50 && f.store.size() != 0; ++i) (void)f.store.tick(expiring::CycleKind::Slow);
      REQUIRE(f.store.size() == 0);
      Lines got = f.take();
      REQUIRE(got.size() == 5);
      for (const std::string& l : got) CHECK(l.rfind(lazy ? "UNLINK k" : "DEL k", 0) == 0);
    }
  }
  SECTION("evictions go alone, before the write that made room") {
    expiring::Options o;
    o.max_entries = 2;
    o.maxmemory_policy = expiring::EvictionPolicy::allkeys_lru;
    Fx f(o);
    REQUIRE(f.store.set("a", "1").ok());
    REQUIRE(f.store.set("b", "2").ok());
    f.take();
    REQUIRE(f.store.set("c", "3").ok());
    const Lines got = f.take();
    REQUIRE(got.size() == 2);
    CHECK((got[0] == "DEL a" || got[0] == "DEL b"));
    CHECK(got[1] == "SET c 3");
  }
  SECTION("removing the feed stops it") {
    Fx f;
    f.store.set_change_feed({});
    REQUIRE(f.store.set("a", "1").ok());
    CHECK(f.take().empty());
  }
}

TEST_CASE("change feed: apply() refuses records without what their op needs", "[feed]") {
  ManualClock clock{T0};
  Store s(clock);
  REQUIRE(s.set("k", "v").ok());
  const std::string k = "k", v = "w";
  CHECK(s.apply(Change{ChangeOp::set, nullptr, &v}).error() == Errc::invalid_record);
  CHECK(s.apply(Change{ChangeOp::set, &k, nullptr}).error() == Errc::invalid_record);
  CHECK(s.apply(Change{ChangeOp::rename, &k, nullptr, nullptr}).error() == Errc::invalid_record);
  CHECK(show(s.get("k")) == "v");
  CHECK(s.ttl("k") == -1);
  // Deadlines at the ends of time are stored as given.
  CHECK(*s.apply(Change{ChangeOp::pexpireat, &k, nullptr, nullptr, kMax}));
  CHECK(s.pexpiretime("k") == kMax);
  CHECK(*s.apply(Change{ChangeOp::set, &k, &v, nullptr, kMax - 1, ChangeTtl::at}));
  CHECK(s.pexpiretime("k") == kMax - 1);
  CHECK(*s.apply(Change{ChangeOp::pexpireat, &k, nullptr, nullptr, kMin}));
  CHECK(s.size() == 1);              // stored by apply(), stale from now on
  CHECK(s.get("k") == nullptr);      // and reclaimed by the first read of a primary
  CHECK(s.size() == 0);
  CHECK_FALSE(*s.apply(Change{ChangeOp::del, &k}));
  CHECK_FALSE(*s.apply(Change{ChangeOp::multi}));
}

TEST_CASE("replica: stale keys read as missing and stay until the primary's DEL (case 163)", "[feed][replica][spec-M]") {
  expiring::Options o;
  o.replica = true;
  ManualClock clock{T0};
  Store replica(clock, o);
  const std::string k = "k", v = "v", j = "j";
  REQUIRE(*replica.apply(Change{ChangeOp::set, &k, &v, nullptr, T0 + 100, ChangeTtl::at}));
  REQUIRE(*replica.apply(Change{ChangeOp::set, &j, &v}));
  clock.set(T0 + 101);
  CHECK(replica.get("k") == nullptr);
  CHECK_FALSE(replica.exists("k"));
  CHECK(replica.ttl("k") == -2);
  CHECK(replica.size() == 2);  // DBSIZE unchanged
  for (int i = 0; i < 20; ++i) (void)replica.tick(expiring::CycleKind::Slow);
  CHECK(replica.size() == 2);  // no active cycle
  // A past PEXPIREAT from the primary is stored, not executed as a DEL.
  REQUIRE(*replica.apply(Change{ChangeOp::pexpireat, &j, nullptr, nullptr, T0}));
  CHECK(replica.size() == 2);
  CHECK(stored(replica) == Stored{{"j", "v", T0}, {"k", "v", T0 + 100}});
  CHECK(replica.get("j") == nullptr);
  std::uint64_t cursor = 0;
  int seen = 0, rounds = 0;
  do {
    cursor = replica.scan(cursor, 10, [&](const std::string&, const std::string&) { ++seen; });
  } while (cursor != 0 && ++rounds < 100);
  CHECK(seen == 0);
  CHECK(replica.random_key().has_value());  // after 100 stale draws it answers one, as Redis
  CHECK(replica.size() == 2);
  // The primary's DEL removes it.
  REQUIRE(*replica.apply(Change{ChangeOp::del, &k}));
  CHECK(replica.size() == 1);
  // The primary's writes see every key as valid: a SET KEEPTTL keeps the stale deadline.
  const std::string w = "w";
  REQUIRE(*replica.apply(Change{ChangeOp::set, &j, &w, nullptr, 0, ChangeTtl::keep}));
  CHECK(stored(replica) == Stored{{"j", "w", T0}});
  // A write of your own treats the stale key as missing, as a writable Redis replica.
  REQUIRE(*replica.set("j", "mine", SetCond::NX));
  CHECK(replica.ttl("j") == -1);
  CHECK(show(replica.get("j")) == "mine");
}

namespace {
using FM = expiring::FieldMap<std::string, std::string>;
using HStore = expiring::Store<std::string, FM, ManualClock&, TestPolicy>;
using HRecord = ChangeRecord<std::string, FM>;
using Pairs = std::vector<std::pair<std::string, std::string>>;
std::string hash_text(const HStore::change_type& c) {
  std::string s = expiring::to_string(c.op);
  if (c.key != nullptr) s += " " + *c.key;
  if (c.op == ChangeOp::set) s += " <" + std::to_string(c.value->size()) + " fields>";
  if (c.op == ChangeOp::set && c.ttl == ChangeTtl::keep) s += " KEEPTTL";
  if (c.field_op != expiring::FieldOp::none) {  // the field command, its fields in name order
    s += std::string(" ") + expiring::to_string(c.field_op);
    std::vector<std::string> names;
    for (std::uint32_t pos = 0; pos < c.fields->size(); ++pos) {
      names.push_back(c.fields->at(pos).name);
      if (c.fields->deadline(pos) != FM::kNoDeadline) names.back() += "@" + std::to_string(c.fields->deadline(pos) - T0);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) s += " " + n;
  }
  return s;
}
}  // namespace

TEST_CASE("change feed: a field change travels as its field command with the whole hash (D32)", "[feed][hash_fields]") {
  ManualClock clock{T0};
  HStore primary(clock);
  std::vector<std::string> log;
  std::vector<HRecord> records;
  primary.set_change_feed([&](const HStore::change_type& c) {
    log.push_back(hash_text(c));
    records.push_back(HRecord::of(c));
  });
  REQUIRE(primary.hset("h", Pairs{{"a", "1"}, {"b", "2"}, {"c", "3"}}).ok());
  REQUIRE(primary.hpexpire("h", 10, {"a"}).ok());
  REQUIRE(primary.hpexpire("h", 1000, {"b", "c", "nothing"}).ok());
  REQUIRE(primary.hpexpire("h", 5, {"b"}, expiring::ExpireFlags::GT).ok());  // not met: nothing
  REQUIRE(primary.hpersist("h", {"c", "nothing"}).ok());
  REQUIRE(primary.hpersist("h", {"c"}).ok());  // no TTL left: nothing
  REQUIRE(*primary.hsetnx("h", "d", "4"));
  REQUIRE_FALSE(*primary.hsetnx("h", "d", "5"));
  CHECK(log == std::vector<std::string>{"SET h <3 fields> HSET a b c", "SET h <3 fields> HPEXPIREAT a@10",
                                        "SET h <3 fields> HPEXPIREAT b@1000 c@1000", "SET h <3 fields> HPERSIST c",
                                        "SET h <4 fields> HSET d"});
  log.clear();
  REQUIRE(*primary.hincrby("h", "d", 1) == 5);  // a field without TTL: HSET alone
  REQUIRE(*primary.hincrby("h", "b", 0) == 2);  // it keeps its TTL: HSET and HPEXPIREAT, one unit
  CHECK(log == std::vector<std::string>{"SET h <4 fields> HSET d", "MULTI", "SET h <4 fields> HSET b@1000",
                                        "SET h <4 fields> HPEXPIREAT b@1000", "EXEC"});
  log.clear();
  clock.set(T0 + 11);
  CHECK(*primary.hlen("h") == 3);  // the lazy reclaim of `a` travels as HDEL a
  CHECK(log == std::vector<std::string>{"SET h <3 fields> HDEL a"});
  log.clear();
  REQUIRE(primary.hdel("h", {"d", "nothing"}).ok());
  REQUIRE(primary.hpexpire("h", 0, {"c"}).ok());  // a time already past deletes the field
  CHECK(log == std::vector<std::string>{"SET h <2 fields> HDEL d", "SET h <1 fields> HDEL c"});
  log.clear();
  REQUIRE(primary.hset("h", Pairs{{"b", "x"}, {"c", "3"}}).ok());
  REQUIRE(primary.hset("h", Pairs{{"b", "x"}, {"c", "3"}}).ok());  // no new field, still a change
  CHECK(log == std::vector<std::string>{"SET h <2 fields> HSET b c", "SET h <2 fields> HSET b c"});
  log.clear();
  REQUIRE(primary.hdel("h", {"b", "c"}).ok());  // the last fields: the key goes
  CHECK(log.back() == "DEL h");

  // Replayed later, field deadlines are as absolute as key deadlines.
  REQUIRE(primary.hset("g", Pairs{{"x", "1"}, {"y", "2"}}).ok());
  REQUIRE(primary.hpexpire("g", 5000, {"x"}).ok());
  ManualClock later{T0 + 2000};
  HStore replay(later);
  for (const HRecord& r : records) REQUIRE(replay.apply(r.view()).ok());
  CHECK(*replay.hpexpiretime("g", {"x", "y"}) == std::vector<std::int64_t>{T0 + 11 + 5000, -1});
  CHECK(*replay.hexists("h", "a") == false);
  CHECK(replay.size() == 1);
}

TEST_CASE("change feed: Redis 8's HGETEX, HGETDEL and HSETEX travel as field commands", "[feed][hash_fields]") {
  ManualClock clock{T0};
  HStore primary(clock);
  std::vector<std::string> log;
  std::vector<HRecord> records;
  primary.set_change_feed([&](const HStore::change_type& c) {
    log.push_back(hash_text(c));
    records.push_back(HRecord::of(c));
  });
  using expiring::FieldTtl;
  REQUIRE(*primary.hsetex("h", Pairs{{"a", "1"}, {"b", "2"}}));  // no TTL: HSET alone
  REQUIRE(*primary.hsetex("h", Pairs{{"a", "1"}, {"c", "3"}}, FieldTtl::px(100)));  // HSET, HPEXPIREAT: one unit
  REQUIRE(*primary.hsetex("h", Pairs{{"a", "9"}, {"d", "4"}}, FieldTtl::keep()));  // a kept TTL travels too
  REQUIRE(*primary.hsetex("h", Pairs{{"b", "5"}}, FieldTtl::keep()));              // none kept: HSET alone
  CHECK(log == std::vector<std::string>{"SET h <2 fields> HSET a b", "MULTI", "SET h <3 fields> HSET a@100 c@100",
                                        "SET h <3 fields> HPEXPIREAT a@100 c@100", "EXEC", "MULTI",
                                        "SET h <4 fields> HSET a@100 d", "SET h <4 fields> HPEXPIREAT a@100 d", "EXEC",
                                        "SET h <4 fields> HSET b"});
  log.clear();
  REQUIRE(primary.hgetex("h", {"a"}).ok());  // a read: nothing
  REQUIRE(primary.hgetex("h", {"b", "zz"}, FieldTtl::pxat(T0 + 50)).ok());
  REQUIRE(primary.hgetex("h", {"a", "d"}, FieldTtl::persist()).ok());
  REQUIRE(primary.hgetex("h", {"c"}, FieldTtl::px(0)).ok());  // a past time: HDEL
  REQUIRE(primary.hgetdel("h", {"d", "zz"}).ok());
  CHECK(log == std::vector<std::string>{"SET h <4 fields> HPEXPIREAT b@50", "SET h <4 fields> HPERSIST a",
                                        "SET h <3 fields> HDEL c", "SET h <2 fields> HDEL d"});
  log.clear();
  REQUIRE(*primary.hsetex("g", Pairs{{"x", "1"}}, FieldTtl::px(0)));  // written, then deleted with its key
  CHECK(log == std::vector<std::string>{"MULTI", "SET g <1 fields> HSET x", "DEL g", "EXEC"});
  REQUIRE(*primary.hsetex("h", Pairs{{"x", "1"}}, FieldTtl::px(0)));  // the key stays
  CHECK(log.back() == "EXEC");
  CHECK(log[log.size() - 2] == "SET h <2 fields> HDEL x");

  // Replayed later, on a store whose clock is ahead, the state is the primary's.
  ManualClock later{T0 + 20};
  HStore replay(later);
  for (const HRecord& r : records) REQUIRE(replay.apply(r.view()).ok());
  CHECK(*replay.hgetall("h") == *primary.hgetall("h"));
  CHECK(*replay.hpexpiretime("h", {"a", "b"}) == std::vector<std::int64_t>{-1, T0 + 50});
  CHECK(replay.size() == 1);
}

TEST_CASE("replica: a hash whose fields all went stale keeps its key until the primary's DEL", "[feed][replica][hash_fields]") {
  expiring::Options o;
  o.replica = true;
  ManualClock clock{T0};
  HStore replica(clock, o);
  ManualClock pclock{T0};
  HStore primary(pclock);
  std::vector<HRecord> records;
  primary.set_change_feed([&](const HStore::change_type& c) { records.push_back(HRecord::of(c)); });
  REQUIRE(primary.hset("h", Pairs{{"a", "1"}}).ok());
  REQUIRE(primary.hpexpire("h", 10, {"a"}).ok());
  for (const HRecord& r : records) REQUIRE(replica.apply(r.view()).ok());
  records.clear();
  clock.set(T0 + 11);  // the replica's clock is ahead of the primary's
  CHECK(*replica.hlen("h") == 0);
  CHECK(replica.hget("h", "a").ok());
  CHECK(replica.size() == 1);  // the key stays
  for (int i = 0; i < 10; ++i) (void)replica.tick(expiring::CycleKind::Slow);
  CHECK(replica.size() == 1);
  // The primary, still before the deadline, extends the key's TTL: the replica has the key.
  REQUIRE(*primary.pexpire("h", 100000));
  for (const HRecord& r : records) REQUIRE(replica.apply(r.view()).ok());
  records.clear();
  CHECK(replica.pexpiretime("h") == T0 + 100000);
  pclock.set(T0 + 11);
  CHECK(*primary.hlen("h") == 0);  // the primary reclaims: its DEL reaches the replica
  for (const HRecord& r : records) REQUIRE(replica.apply(r.view()).ok());
  CHECK(replica.size() == 0);
}

// The feed's contract end to end: a replica that applies every record, at any lag, stores
// exactly what the primary stores (stale entries not yet reclaimed included), after every
// call of a random workload with lazy and active expiry, renames, copies and evictions.
TEST_CASE("change feed: a replica fed every record stores exactly what the primary stores", "[feed][replica][model]") {
  for (const bool evicting : {false, true}) {
    CAPTURE(evicting);
    expiring::Options po;
    po.seed = 7;
    if (evicting) {
      po.max_entries = 24;
      po.maxmemory_policy = expiring::EvictionPolicy::volatile_ttl;
    }
    ManualClock clock{T0};
    Store primary(clock, po);
    expiring::Options ro;
    ro.replica = true;
    Store replica(clock, ro);
    std::vector<Record> pending;
    primary.set_change_feed([&](const Change& c) { pending.push_back(Record::of(c)); });
    std::mt19937_64 rng(42);
    auto key = [&] { return "k" + std::to_string(rng() % 40); };
    for (int step = 0; step < 4000; ++step) {
      const auto op = rng() % 16;
      const std::string k = key();
      switch (op) {
        case 0: (void)primary.set(k, "v" + std::to_string(step)); break;
        case 1: (void)primary.set(k, "t" + std::to_string(step), Px{static_cast<std::int64_t>(1 + rng() % 50)}); break;
        case 2: (void)primary.set(k, "n", Px{static_cast<std::int64_t>(1 + rng() % 50)}, SetCond::NX); break;
        case 3: (void)primary.set(k, "x", KeepTtl{}, SetCond::XX); break;
        case 4: (void)primary.pexpire(k, static_cast<std::int64_t>(rng() % 60) - 5); break;
        case 5: (void)primary.persist(k); break;
        case 6: (void)primary.get(k); break;
        case 7: (void)primary.del(k); break;
        case 8: (void)primary.rename(k, key()); break;
        case 9: (void)primary.copy(k, key(), rng() % 2 == 0); break;
        case 10: (void)primary.getex(k, Px{static_cast<std::int64_t>(rng() % 30) - 2}); break;
        case 11: (void)primary.getdel(k); break;
        case 12: (void)primary.modify(k, [](std::string& v) { v += "+"; }); break;
        case 13: (void)primary.tick(rng() % 2 ? expiring::CycleKind::Fast : expiring::CycleKind::Slow); break;
        case 14: clock.advance(static_cast<std::int64_t>(rng() % 7)); break;
        case 15: (void)primary.scan(rng() % 64, 4, [](const std::string&, const std::string&) {}); break;
      }
      // Apply what the call sent; MULTI/EXEC must balance within the call.
      int depth = 0;
      for (const Record& r : pending) {
        if (r.op == ChangeOp::multi) ++depth;
        if (r.op == ChangeOp::exec) --depth;
        REQUIRE((depth == 0 || depth == 1));
        REQUIRE(replica.apply(r.view()).ok());
      }
      REQUIRE(depth == 0);
      pending.clear();
      INFO("step " << step << " op " << op);
      REQUIRE(stored(replica) == stored(primary));
    }
  }
}

// ---- Regressions found by review -----------------------------------------------------------

TEST_CASE("change feed: a field write after a lazy field reclaim in the same call is recorded", "[feed][hash_fields]") {
  for (const bool incr : {false, true}) {
    CAPTURE(incr);
    ManualClock clock{T0};
    HStore primary(clock);
    std::vector<HRecord> records;
    primary.set_change_feed([&](const HStore::change_type& c) { records.push_back(HRecord::of(c)); });
    REQUIRE(primary.hset("h", Pairs{{"a", "1"}, {"n", "5"}}).ok());
    REQUIRE(primary.hpexpire("h", 10, {"a"}).ok());
    clock.set(T0 + 11);
    if (incr) {
      REQUIRE(*primary.hincrby("h", "n", 10) == 15);  // reclaims `a` lazily, then changes `n`
    } else {
      REQUIRE(primary.hset("h", "c", "3").ok());  // reclaims `a` lazily, then writes `c`
    }
    HStore replica(clock);
    for (const HRecord& r : records) REQUIRE(replica.apply(r.view()).ok());
    CHECK(*replica.hgetall("h") == *primary.hgetall("h"));
  }
}

TEST_CASE("change feed: HDEL of the last fields travels as one DEL", "[feed][hash_fields]") {
  ManualClock clock{T0};
  HStore primary(clock);
  std::vector<std::string> log;
  primary.set_change_feed([&](const HStore::change_type& c) { log.push_back(hash_text(c)); });
  REQUIRE(primary.hset("h", Pairs{{"a", "1"}, {"b", "2"}}).ok());
  log.clear();
  REQUIRE(primary.hdel("h", {"a", "b"}).ok());
  CHECK(log == std::vector<std::string>{"DEL h"});
  REQUIRE(primary.hset("g", Pairs{{"a", "1"}}).ok());
  log.clear();
  REQUIRE(primary.hpexpire("g", 0, {"a"}).ok());  // a time already past deletes the field, then the key
  CHECK(log == std::vector<std::string>{"DEL g"});
}

TEST_CASE("change feed: an idle TTL moved by a read travels as PEXPIREAT", "[feed]") {
  ManualClock clock{T0};
  expiring::Options o;
  o.expire_after_access = std::chrono::milliseconds(100);
  Store primary(clock, o);
  std::vector<Record> records;
  std::vector<std::string> log;
  primary.set_change_feed([&](const Change& c) {
    records.push_back(Record::of(c));
    log.push_back(text(c));
  });
  REQUIRE(primary.set("k", "v").ok());
  clock.set(T0 + 50);
  REQUIRE(primary.get("k") != nullptr);
  CHECK(log == Lines{"SET k v PXAT 1000100", "PEXPIREAT k 1000150"});
  Store replay(clock);
  for (const Record& r : records) REQUIRE(replay.apply(r.view()).ok());
  CHECK(stored(replay) == stored(primary));
  clock.set(T0 + 120);
  CHECK(replay.get("k") != nullptr);
}

TEST_CASE("replica: never evicts, whatever its limits", "[feed][replica]") {
  ManualClock clock{T0};
  expiring::Options o;
  o.replica = true;
  o.max_entries = 2;
  o.maxmemory_policy = expiring::EvictionPolicy::allkeys_random;
  Store replica(clock, o);
  const std::string a = "a", b = "b", v = "v";
  REQUIRE(*replica.apply(Change{ChangeOp::set, &a, &v}));
  REQUIRE(*replica.apply(Change{ChangeOp::set, &b, &v}));
  (void)replica.set("mine", "x");
  replica.set_maxmemory(1);
  CHECK(replica.perform_evictions().ok());
  CHECK(replica.stats().evicted_keys == 0);
  CHECK(replica.size() == 3);
}

TEST_CASE("change feed: a throwing scan() function does not change the framing of later calls", "[feed]") {
  Fx f;
  REQUIRE(f.store.set("a", "1").ok());
  CHECK_THROWS_AS(f.store.scan(0, 10, [](const std::string&, const std::string&) { throw 1; }), int);
  REQUIRE(f.store.set("k", "v", Px{10}).ok());
  f.clock.set(T0 + 11);
  f.take();
  REQUIRE(f.store.set("k", "w").ok());
  CHECK(f.take() == Lines{"MULTI", "DEL k", "SET k w", "EXEC"});
}

TEST_CASE("change feed: incr_by on an expired key travels as one unit, and as_one_unit() groups calls", "[feed]") {
  ManualClock clock{T0};
  expiring::ExpiringStore<std::string, std::int64_t, expiring::Hash<std::string>, std::equal_to<>, ManualClock&,
                          TestPolicy>
      s(clock);
  std::vector<std::string> ops;
  s.set_change_feed([&](const auto& c) { ops.push_back(expiring::to_string(c.op)); });
  REQUIRE(s.set("n", 5, Px{10}).ok());
  clock.set(T0 + 11);
  ops.clear();
  CHECK(*s.incr_by("n", 1) == 1);
  CHECK(ops == std::vector<std::string>{"MULTI", "DEL", "SET", "EXEC"});
  ops.clear();
  s.as_one_unit([&] {
    (void)s.set("a", 1);
    (void)s.set("b", 2);
  });
  CHECK(ops == std::vector<std::string>{"MULTI", "SET", "SET", "EXEC"});
}
