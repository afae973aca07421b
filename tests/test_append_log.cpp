// tests/test_append_log.cpp: the append-only log (append_log.hpp): replay in absolute time,
// torn and corrupt files, the stepwise rewrite, the fsync policies, and crash injection (a
// child killed with SIGKILL while it writes, at the end of the file).
// expiring-test: one policy (the log does not depend on the expiry index)
#include <expiring/append_log.hpp>
#include <expiring/expiring.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "temp_dir.hpp"
#include "test_tsan.hpp"

using namespace support;
using expiring::AppendLog;
using expiring::AppendLogOptions;
using expiring::Fsync;

namespace {

using Store = StoreOf<StringKeys>;
using Log = AppendLog<Store>;
using Stored = std::vector<std::tuple<std::string, std::string, std::optional<std::int64_t>>>;

Stored stored(const Store& s) {
  Stored out;
  std::uint64_t cursor = 0;
  do {
    cursor = s.scan_stored(cursor, 1000, [&](const std::string& k, const std::string& v, std::optional<std::int64_t> d) {
      out.emplace_back(k, v, d);
    });
  } while (cursor != 0 && cursor != Store::kRestarted);
  std::sort(out.begin(), out.end());
  return out;
}

using TempDir = testdir::TempDir;

std::unique_ptr<Log> open_log(Store& s, const TempDir& d, AppendLogOptions o = {}) {
  auto r = Log::open(s, d.path, o);
  INFO(r.error().message);
  REQUIRE(r.ok());
  return std::move(*r);
}

AppendLogOptions always() {
  AppendLogOptions o;
  o.fsync = Fsync::always;
  return o;
}

// A random workload: every kind of change the feed has, and lazy expiry.
void workload(Store& s, ManualClock& clock, std::mt19937_64& rng, int steps, int keys) {
  auto key = [&] { return "k" + std::to_string(rng() % static_cast<std::uint64_t>(keys)); };
  for (int i = 0; i < steps; ++i) {
    const std::string k = key();
    switch (rng() % 12) {
      case 0: (void)s.set(k, "v" + std::to_string(i)); break;
      case 1: (void)s.set(k, "t" + std::to_string(i), Px{static_cast<std::int64_t>(1 + rng() % 100)}); break;
      case 2: (void)s.set(k, "x", KeepTtl{}); break;
      case 3: (void)s.pexpire(k, static_cast<std::int64_t>(rng() % 80) - 5); break;
      case 4: (void)s.persist(k); break;
      case 5: (void)s.del(k); break;
      case 6: (void)s.rename(k, key()); break;
      case 7: (void)s.copy(k, key(), true); break;
      case 8: (void)s.modify(k, [](std::string& v) { v += "+"; }); break;
      case 9: (void)s.get(k); break;
      case 10: clock.advance(static_cast<std::int64_t>(rng() % 5)); break;
      case 11: (void)s.unlink(k); break;
    }
  }
}

}  // namespace

TEST_CASE("append log: a replay later in time keeps every absolute deadline (case 161)", "[aof][spec-M]") {
  TempDir dir;
  ManualClock clock{T0};
  Stored before;
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    CHECK(log->replayed().created);
    REQUIRE(s.set("ex", "v", Ex{100}).ok());
    REQUIRE(s.set("keep", "v", Ex{100}).ok());
    REQUIRE(s.set("keep", "w", KeepTtl{}).ok());
    REQUIRE(s.set("p", "v", Ex{100}).ok());
    CHECK(show(*s.getex("p", Persist{})) == "v");
    REQUIRE(s.set("gone", "v", Px{1000}).ok());
    REQUIRE(s.set("a", "1", Ex{50}).ok());
    REQUIRE(s.rename("a", "b").ok());
    CHECK(s.modify("b", [](std::string& v) { v = "2"; }));
    REQUIRE(s.set("d", "1").ok());
    CHECK(s.del("d"));
    before = stored(s);
  }
  ManualClock later{T0 + 2000};
  Store r(later);
  auto log = open_log(r, dir, always());
  CHECK_FALSE(log->replayed().created);
  CHECK(stored(r) == before);
  CHECK(r.ttl("ex") == 98);
  CHECK(r.pexpiretime("ex") == T0 + 100000);
  CHECK(r.pexpiretime("keep") == T0 + 100000);
  CHECK(show(r.get("keep")) == "w");
  CHECK(r.ttl("p") == -1);
  CHECK(r.pexpiretime("b") == T0 + 50000);
  CHECK(show(r.get("b")) == "2");
  // Stored by the replay, then reclaimed: the expired key is gone.
  CHECK(r.get("gone") == nullptr);
  CHECK(r.size() == 4);
}

TEST_CASE("append log: a torn last record or an open MULTI is cut off, or refused without aof-load-truncated",
          "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  std::string incr, manifest;
  Stored all_but_last;
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    REQUIRE(s.set("a", "1", Ex{10}).ok());
    REQUIRE(s.set("b", "2").ok());
    all_but_last = stored(s);
    REQUIRE(s.rename("a", "c").ok());  // the last unit: MULTI, DEL a, SET c, EXEC
  }
  const std::vector<std::string> files = dir.files();
  const std::string incr_name = "appendonly.1.incr.log";
  REQUIRE(std::find(files.begin(), files.end(), incr_name) != files.end());
  incr = dir.read(incr_name);
  // The last unit's bytes: everything after the end of "SET b 2".
  std::size_t unit = 0;
  {
    Store s(clock);
    auto log = open_log(s, dir, always());  // the whole file replays
    CHECK(s.size() == 2);
  }
  REQUIRE(dir.read(incr_name) == incr);  // replay does not write what is whole
  // Find the unit's start: replay every prefix and keep the longest giving all_but_last.
  for (std::size_t cut = incr.size() - 1; cut > 20; --cut) {
    dir.write(incr_name, incr.substr(0, cut));
    Store s(clock);
    auto r = Log::open(s, dir.path, always());
    REQUIRE(r.ok());
    if (stored(s) != all_but_last) break;
    unit = cut;
  }
  REQUIRE(unit != 0);
  for (std::size_t cut = unit + 1; cut < incr.size(); ++cut) {
    CAPTURE(cut);
    dir.write(incr_name, incr.substr(0, cut));
    {  // aof-load-truncated no: refused, the store unchanged
      Store s(clock);
      REQUIRE(s.set("mine", "x").ok());
      AppendLogOptions o = always();
      o.load_truncated = false;
      auto r = Log::open(s, dir.path, o);
      REQUIRE_FALSE(r.ok());
      CHECK(r.code() == expiring::Errc::truncated_file);
      CHECK(r.error().message.find(incr_name) != std::string::npos);
      CHECK(s.size() == 1);
      CHECK(show(s.get("mine")) == "x");
    }
    {  // yes: the torn unit goes, from the file too
      Store s(clock);
      auto r = Log::open(s, dir.path, always());
      REQUIRE(r.ok());
      CHECK(stored(s) == all_but_last);
      CHECK((*r)->replayed().truncated_bytes == cut - unit);
    }
    CHECK(dir.read(incr_name).size() == unit);
  }
}

TEST_CASE("append log: a corrupt byte anywhere is refused with the offset, the store unchanged", "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    REQUIRE(s.set("a", "1", Ex{10}).ok());
    REQUIRE(s.set("b", "22").ok());
    CHECK(s.persist("a"));
  }
  const std::string name = "appendonly.1.incr.log";
  const std::string good = dir.read(name);
  for (std::size_t i = 0; i < good.size(); ++i) {
    CAPTURE(i);
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    dir.write(name, bad);
    Store s(clock);
    REQUIRE(s.set("mine", "x").ok());
    auto r = Log::open(s, dir.path, always());
    REQUIRE_FALSE(r.ok());
    CHECK((r.code() == expiring::Errc::corrupt_file || r.code() == expiring::Errc::unsupported_version ||
           r.code() == expiring::Errc::truncated_file));
    CHECK(r.error().message.find("offset") != std::string::npos);
    CHECK(r.error().offset <= good.size());
    CHECK(s.size() == 1);
    CHECK(dir.read(name) == bad);  // nothing written
  }
  dir.write(name, good);
  dir.write("appendonly.manifest", "expiring-aof 1\nbase ../etc/passwd\nincr x\n");
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  CHECK(r.code() == expiring::Errc::corrupt_file);
}

TEST_CASE("append log: a rewrite in steps, with writes between them, replays to the store", "[aof][rewrite]") {
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    TempDir dir;
    ManualClock clock{T0};
    Stored expected;
    expiring::AppendLogStats st;
    {
      expiring::Options o;
      o.seed = seed;
      Store s(clock, o);
      std::mt19937_64 rng(seed);
      AppendLogOptions lo = always();
      lo.rewrite_step_budget = std::chrono::microseconds(0);  // one batch a step
      auto log = open_log(s, dir, lo);
      workload(s, clock, rng, 400, 50);
      for (int round = 0; round < 3; ++round) {
        REQUIRE(log->start_rewrite());
        CHECK_FALSE(log->start_rewrite());  // one at a time
        int steps = 0;
        while (!log->rewrite_step()) {
          REQUIRE(log->rewriting());
          REQUIRE(++steps < 100000);
          workload(s, clock, rng, 5, round == 1 ? 5000 : 50);  // round 1 grows the table: rehashes
        }
        CHECK_FALSE(log->rewriting());
        workload(s, clock, rng, 50, 50);
      }
      st = log->stats();
      CHECK(st.rewrites == 3);
      CHECK(st.ok);
      expected = stored(s);
      // Only the manifest, one base and one incr file remain.
      const std::vector<std::string> files = dir.files();
      CHECK(files.size() == 3);
    }
    Store r(clock);
    auto log = open_log(r, dir, always());
    CHECK(stored(r) == expected);
  }
}

TEST_CASE("append log: a log dropped in the middle of a rewrite replays to the store", "[aof][rewrite]") {
  TempDir dir;
  ManualClock clock{T0};
  Stored expected;
  {
    Store s(clock);
    std::mt19937_64 rng(9);
    AppendLogOptions lo = always();
    lo.rewrite_step_budget = std::chrono::microseconds(0);
    auto log = open_log(s, dir, lo);
    workload(s, clock, rng, 3000, 1000);
    REQUIRE(log->start_rewrite());
    for (int i = 0; i < 3; ++i) {
      (void)log->rewrite_step();
      workload(s, clock, rng, 20, 1000);
    }
    REQUIRE(log->rewriting());
    expected = stored(s);
  }
  Store r(clock);
  auto log = open_log(r, dir, always());
  CHECK(stored(r) == expected);
  const std::vector<std::string> files = dir.files();
  for (const std::string& f : files) CHECK(f.find(".tmp") == std::string::npos);
}

TEST_CASE("append log: several databases replay each into its own, with SWAPDB, through rewrites", "[aof][databases]") {
  for (const std::uint64_t seed : {4u, 5u}) {
    CAPTURE(seed);
    TempDir dir;
    ManualClock clock{T0};
    std::vector<Stored> expected;
    std::vector<std::unique_ptr<Store>> owned;
    std::vector<Store*> dbs;
    for (int i = 0; i < 4; ++i) {
      owned.push_back(std::make_unique<Store>(clock));
      dbs.push_back(owned.back().get());
    }
    (void)dbs[3]->set("before", "the log");  // the first base holds it, in database 3
    {
      AppendLogOptions lo = always();
      lo.rewrite_step_budget = std::chrono::microseconds(0);
      auto r = Log::open(dbs, dir.path, lo);
      REQUIRE(r.ok());
      auto log = std::move(*r);
      std::mt19937_64 rng(seed);
      const auto swap = [&](std::size_t a, std::size_t b) {
        std::swap(dbs[a], dbs[b]);
        log->swapdb(a, b);
      };
      for (int round = 0; round < 6; ++round) {
        for (int step = 0; step < 40; ++step) workload(*dbs[rng() % 4], clock, rng, 5, 30);
        swap(rng() % 4, rng() % 4);
        if (round % 2 == 1) {
          REQUIRE(log->start_rewrite());
          int steps = 0;
          while (!log->rewrite_step()) {
            REQUIRE(++steps < 100000);
            workload(*dbs[rng() % 4], clock, rng, 3, 30);
            if (steps == 2) swap(0, 2);  // mid-walk: the rewrite starts over
          }
        }
        dbs[1]->clear();  // a FLUSHDB of one of them
        (void)dbs[1]->set("after", "flush");
      }
      CHECK(log->stats().ok);
      for (Store* d : dbs) expected.push_back(stored(*d));
    }
    std::vector<std::unique_ptr<Store>> fresh;
    std::vector<Store*> back;
    for (int i = 0; i < 4; ++i) {
      fresh.push_back(std::make_unique<Store>(clock));
      back.push_back(fresh.back().get());
    }
    auto r = Log::open(back, dir.path, always());
    INFO(r.error().message);
    REQUIRE(r.ok());
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(stored(*back[i]) == expected[i]);
    }
  }
}

TEST_CASE("append log: a log of several databases opens only with as many and one of one store opens as database 0",
          "[aof][databases]") {
  TempDir dir, single;
  ManualClock clock{T0};
  Store a(clock), b(clock), c(clock);
  {
    std::vector<Store*> dbs{&a, &b, &c};
    auto log = Log::open(dbs, dir.path, always());
    REQUIRE(log.ok());
    (void)c.set("k", "in 2");
    (void)a.set("k", "in 0");
  }
  {
    Store one(clock);
    (void)one.set("keep", "me");
    CHECK(Log::open(one, dir.path, always()) == expiring::Errc::out_of_range);
    std::vector<Store*> two{&a, &b};
    CHECK(Log::open(two, dir.path, always()) == expiring::Errc::out_of_range);
    CHECK(one.get("keep") != nullptr);  // nothing changed
  }
  {
    Store one(clock);
    auto log = open_log(one, single);
    (void)one.set("old", "log");
  }
  Store x(clock), y(clock);
  std::vector<Store*> dbs{&x, &y};
  auto log = Log::open(dbs, single.path, always());
  REQUIRE(log.ok());
  CHECK(*x.get("old") == "log");
  CHECK(y.size() == 0);
  std::vector<Store*> same{&x, &x};
  CHECK(Log::open(same, dir.path, always()) == expiring::Errc::out_of_range);
}

TEST_CASE("append log: a store with content starts its log with a base of it", "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  Stored expected;
  {
    Store s(clock);
    for (int i = 0; i < 500; ++i) REQUIRE(s.set("k" + std::to_string(i), "v", Px{1000 + i}).ok());
    auto log = open_log(s, dir, always());
    CHECK(log->stats().rewrites == 1);
    REQUIRE(s.set("after", "1").ok());
    expected = stored(s);
  }
  Store r(clock);
  auto log = open_log(r, dir, always());
  CHECK(stored(r) == expected);
}

TEST_CASE("append log: start_over keeps the store and replaces a log already there", "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    REQUIRE(s.set("old", "1").ok());
  }
  // Files a log without its manifest would refuse: start_over replaces them too.
  dir.write("appendonly.7.incr.log", "left by something");
  Stored expected;
  {
    Store s(clock);  // not the log's content: what start_over keeps
    REQUIRE(s.set("new", "2", Px{5000}).ok());
    AppendLogOptions o = always();
    o.start_over = true;
    auto log = open_log(s, dir, o);
    CHECK(log->replayed().created);
    CHECK(show(s.get("new")) == "2");
    CHECK(s.get("old") == nullptr);
    REQUIRE(s.set("after", "3").ok());
    expected = stored(s);
  }
  CHECK(!dir.has("appendonly.7.incr.log"));
  CHECK(!dir.has("appendonly.1.incr.log"));
  CHECK(dir.files().size() == 3);  // the manifest, a base, an incr file
  Store r(clock);
  auto log = open_log(r, dir, always());
  CHECK(stored(r) == expected);
}

TEST_CASE("append log: set_fsync changes the policy of an open log", "[aof][fsync]") {
  TempDir dir;
  ManualClock clock{T0};
  Store s(clock);
  AppendLogOptions o;
  o.fsync = Fsync::no;
  auto log = open_log(s, dir, o);
  const std::size_t empty = dir.read("appendonly.1.incr.log").size();
  REQUIRE(s.set("a", "1").ok());
  log->set_fsync(Fsync::always);  // what was buffered is written now
  const std::size_t one = dir.read("appendonly.1.incr.log").size();
  CHECK(one > empty);
  REQUIRE(s.set("b", "2").ok());  // written before set() returns
  CHECK(dir.read("appendonly.1.incr.log").size() > one);
  log->set_fsync(Fsync::everysec);
  REQUIRE(s.set("c", "3").ok());
  log.reset();
  Store r(clock);
  auto again = open_log(r, dir, always());
  CHECK(r.size() == 3);
}

TEST_CASE("append log: everysec and no write within a second or two without being asked", "[aof][fsync]") {
  for (const Fsync policy : {Fsync::everysec, Fsync::no}) {
    CAPTURE(expiring::to_string(policy));
    TempDir dir;
    ManualClock clock{T0};
    Store s(clock);
    AppendLogOptions o;
    o.fsync = policy;
    auto log = open_log(s, dir, o);
    const std::size_t empty = dir.read("appendonly.1.incr.log").size();
    REQUIRE(s.set("k", "v", Ex{10}).ok());
    CHECK(dir.read("appendonly.1.incr.log").size() == empty);  // buffered
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (dir.read("appendonly.1.incr.log").size() == empty && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(dir.read("appendonly.1.incr.log").size() > empty);
    if (policy == Fsync::everysec) {
      // The thread syncs just after it writes: the file can grow before the count does.
      while (log->stats().fsyncs == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      CHECK(log->stats().fsyncs >= 1);
    }
    // A big burst is written without waiting for the thread.
    o.buffer_limit = 1;
  }
}

TEST_CASE("append log: a directory that cannot be written fails with io_error", "[aof]") {
  ManualClock clock{T0};
  Store s(clock);
  REQUIRE(s.set("k", "v").ok());
  auto r = Log::open(s, "/nonexistent-dir-for-expiring-tests", always());
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == expiring::Errc::io_error);
  CHECK(show(s.get("k")) == "v");
}

TEST_CASE("append log: a rewrite is not started inside a unit of changes, and the log loads", "[aof][rewrite]") {
  TempDir dir;
  ManualClock clock{T0};
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    int refused = 0;
    s.set_listener([&](const Store::event_type&) { refused += log->start_rewrite() ? 0 : 1; });
    REQUIRE(s.mset(std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}).ok());
    CHECK(refused >= 1);  // a listener runs inside mset()'s MULTI
    CHECK_FALSE(log->rewriting());
    s.set_listener({});
    REQUIRE(log->rewrite());
  }
  Store t(clock);
  auto log = open_log(t, dir, always());
  CHECK(t.size() == 2);
}

TEST_CASE("append log: files of a log without its manifest are refused and never overwritten, and strays are exact", "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    REQUIRE(s.set("k", "v").ok());
  }
  dir.write("appendonly.1.incr.log.bak", "mine");
  dir.write("appendonly.x.incr.log", "mine too");
  dir.write("appendonly.9.base.log.tmp", "a rewrite a crash cut");
  {
    Store s(clock);
    auto log = open_log(s, dir, always());
    CHECK(show(s.get("k")) == "v");
  }
  CHECK(dir.has("appendonly.1.incr.log.bak"));
  CHECK(dir.has("appendonly.x.incr.log"));
  CHECK(!dir.has("appendonly.9.base.log.tmp"));
  const std::string incr = dir.read("appendonly.1.incr.log");
  ::unlink(dir.file("appendonly.manifest").c_str());
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == expiring::Errc::corrupt_file);
  CHECK(dir.read("appendonly.1.incr.log") == incr);
}

TEST_CASE("append log: attach = false leaves the store's feed to the caller", "[aof]") {
  TempDir dir;
  ManualClock clock{T0};
  Store s(clock);
  int mine = 0;
  AppendLogOptions o = always();
  o.attach = false;
  {
    auto log = open_log(s, dir, o);
    s.set_change_feed([&](const Store::change_type& c) {
      ++mine;
      log->on_change(c);
    });
    REQUIRE(s.set("k", "v").ok());
    s.set_change_feed({});
  }
  CHECK(mine == 1);
  Store t(clock);
  auto log = open_log(t, dir, always());
  CHECK(show(t.get("k")) == "v");
}

// ---- Crash injection --------------------------------------------------------------------
// A child process writes keys under each appendfsync policy and reports each write the store
// acknowledged (the call returned) down a pipe; the parent kills it with SIGKILL at a random
// point, then replays the log in a fresh store and checks:
//   * always: every acknowledged write is there, with its exact PEXPIRETIME;
//   * everysec, no: what is there is a prefix of the acknowledged writes (a killed process
//     loses its last buffered second, never a write in the middle);
//   * nothing is invented: every key is one the child wrote, with the value it wrote;
//   * keys whose deadline has passed are gone.
// Bounded: 3 kills per policy, each after at most a few thousand writes and 10 s.

namespace crash {

using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::SystemClock>;
using Log = expiring::AppendLog<Store>;

using TempDir = testdir::TempDir;

// One acknowledged write, as the child reports it.
struct Ack {
  std::uint32_t i;         // the write's number: key "k<i>", value "v<i>" (or a delete of k<i>)
  std::uint8_t del;        // 1: del("k<i>")
  std::uint8_t done;       // 0: about to be made (the write in flight if no 1 follows); 1: acknowledged
  std::int64_t pexpire;    // the key's PEXPIRETIME right after the write (-1: none)
};

// The child: writes until it is killed (or its bounds run out). Never returns.
[[noreturn]] void child(const std::string& dir, expiring::Fsync policy, int fd, std::uint64_t seed) {
  Store s;
  expiring::AppendLogOptions o;
  o.fsync = policy;
  auto log = Log::open(s, dir, o);
  if (!log.ok()) ::_exit(3);
  std::mt19937_64 rng(seed);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::uint32_t i = 0; i < 200000 && std::chrono::steady_clock::now() < until; ++i) {
    Ack a{i, 0, 0, -1};
    const std::string k = "k" + std::to_string(i);
    const auto kind = rng() % 10;
    if (kind == 9 && i > 0) {
      a.i = static_cast<std::uint32_t>(rng() % i);
      a.del = 1;
    }
    if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
    a.done = 1;
    if (a.del) {
      (void)s.del("k" + std::to_string(a.i));
    } else if (kind < 5) {
      (void)s.set(k, "v" + std::to_string(i));
    } else if (kind < 8) {
      (void)s.set(k, "v" + std::to_string(i), expiring::Px{600000});  // outlives the test
    } else if (kind < 9) {
      (void)s.set(k, "v" + std::to_string(i), expiring::Px{1 + static_cast<std::int64_t>(rng() % 20)});  // gone by the check
    }
    if (!a.del) a.pexpire = s.pexpiretime(k);
    if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
  }
  ::_exit(0);
}

}  // namespace crash

TEST_CASE("append log crash: SIGKILL at random points loses nothing acknowledged under always, invents nothing",
          "[aof][crash]") {
  if (EXPIRING_TEST_TSAN) EXPIRING_SKIP("fork() and SIGKILL are left out under ThreadSanitizer (the ASan build runs them)");
  std::mt19937_64 rng(20261202);
  for (const expiring::Fsync policy : {expiring::Fsync::always, expiring::Fsync::everysec, expiring::Fsync::no}) {
    for (int trial = 0; trial < 3; ++trial) {
      CAPTURE(expiring::to_string(policy), trial);
      crash::TempDir dir;
      int p[2];
      REQUIRE(::pipe(p) == 0);
      const std::uint64_t seed = rng();
      const std::size_t kill_after = 50 + static_cast<std::size_t>(rng() % 2000);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(p[0]);
        crash::child(dir.path, policy, p[1], seed);
      }
      ::close(p[1]);
      std::vector<crash::Ack> acks;
      crash::Ack a{};
      bool killed = false;
      for (;;) {
        const ssize_t r = ::read(p[0], &a, sizeof a);
        if (r == 0) break;
        if (r < 0 && errno == EINTR) continue;
        REQUIRE(r == static_cast<ssize_t>(sizeof a));
        acks.push_back(a);
        if (!killed && acks.size() >= kill_after) {
          ::kill(pid, SIGKILL);  // what was acknowledged before now is still in the pipe
          killed = true;
        }
      }
      ::close(p[0]);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      REQUIRE(killed);
      REQUIRE(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the short TTLs pass

      crash::Store s;
      auto log = crash::Log::open(s, dir.path);
      INFO(log.error().message);
      REQUIRE(log.ok());
      // What the acknowledged writes leave, in order; the write in flight may or may not be
      // there, so its key is checked for what it may be only.
      std::map<std::uint32_t, std::int64_t> live;  // i -> pexpiretime
      std::uint32_t last = 0;
      std::optional<std::uint32_t> in_flight;
      if (!acks.empty() && acks.back().done == 0) {
        in_flight = acks.back().i;
        acks.pop_back();
      }
      std::vector<crash::Ack> done;
      for (const crash::Ack& x : acks) {
        if (x.done) done.push_back(x);
      }
      for (const crash::Ack& x : done) {
        if (x.del) {
          live.erase(x.i);
        } else {
          live[x.i] = x.pexpire;
          last = x.i;
        }
      }
      const std::int64_t now = s.now_ms();
      auto expired = [&](std::int64_t pexpire) { return pexpire >= 0 && pexpire < now; };
      // Nothing invented, nothing stale visible.
      std::size_t present = 0;
      for (const auto& e : s) {
        ++present;
        REQUIRE(e.key.size() > 1);
        const std::uint32_t i = static_cast<std::uint32_t>(std::stoul(e.key.substr(1)));
        CHECK(e.value == "v" + std::to_string(i));
        CHECK(i <= last + 1);  // at most the write in flight when the child died
        CHECK_FALSE(expired(e.pexpiretime));
        if (live.count(i) != 0 && i != in_flight) CHECK(e.pexpiretime == live[i]);
      }
      if (policy == expiring::Fsync::always) {
        for (const auto& [i, pexpire] : live) {
          if (i == in_flight) continue;
          if (expired(pexpire)) {
            CHECK(s.get("k" + std::to_string(i)) == nullptr);
            continue;
          }
          CAPTURE(i);
          CHECK(s.pexpiretime("k" + std::to_string(i)) == pexpire);
        }
      } else {
        // A prefix: the replay is the state after some number of acknowledged writes, so
        // below the highest key present every key the acknowledged writes leave is present.
        std::uint32_t highest = 0;
        for (const auto& e : s) highest = std::max(highest, static_cast<std::uint32_t>(std::stoul(e.key.substr(1))));
        (void)present;
        for (const auto& [i, pexpire] : live) {
          if (i >= highest || expired(pexpire) || i == in_flight) continue;
          CAPTURE(i, highest);
          CHECK(s.exists("k" + std::to_string(i)));
        }
      }
    }
  }
}
