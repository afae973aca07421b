// tests/test_concurrent_durability.cpp: the change feed, snapshots and the append-only log of
// a ConcurrentStore written to by several threads (issue 26 §2-4).
//
// * The feed: records are numbered 1, 2, 3, ... with no gap; a call over several shards
//   (mset, del_many, RENAME between shards), as_one_unit() and clear() each send one unit.
// * The stream of four writers (hash fields, key TTLs, deletions, renames and copies between
//   shards, on shared keys) replayed in order into an ExpiringStore reaches the same state,
//   key by key, field by field, deadline by deadline; every unit is contiguous.
// * A snapshot saved while four threads write, loaded, plus the records numbered after its
//   feed_seq, reaches the store's final state.
// * AppendLog on a ConcurrentStore under always, everysec and no, with a rewrite running
//   while four threads write: the log reopened into a new store (another shard count) holds
//   the store's state. Under always, threads share fdatasyncs (a group commit).
// * Crash (P1): a child process of four writer threads calling hset, hpexpireat and
//   pexpireat under an AppendLog is killed with SIGKILL at a random point; the log replayed
//   must hold, for each thread, the state its acknowledged writes made (always: all of them,
//   the one in flight possibly too; everysec and no: a prefix of them, per thread).
// Bounded: every loop has a count; the crash child stops after 10 s or 1e5 writes a thread.
#include <expiring/append_log.hpp>
#include <expiring/concurrent_store.hpp>
#include <expiring/field_map.hpp>
#include <expiring/snapshot.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "hash_state.hpp"
#include "temp_dir.hpp"
#include "test_concurrent_support.hpp"
#include "test_policy.hpp"

namespace {

using expiring::ChangeOp;
using expiring::ManualClock;
using concurrent_test::scaled;
using concurrent_test::shards;
using concurrent_test::T0;
using concurrent_test::test_options;

using FM = expiring::FieldMap<std::string, std::string>;
using Ref = expiring::Store<std::string, FM, ManualClock, TestPolicy>;
using CStore = expiring::ConcurrentStore<std::string, FM, ManualClock, TestPolicy>;
using Record = expiring::ChangeRecord<std::string, FM>;
using Pairs = std::vector<std::pair<std::string, std::string>>;
using Names = std::vector<std::string>;

constexpr int kKeys = 24;
std::string key_name(std::uint64_t i) { return "k" + std::to_string(i % kKeys); }

// Every record the feed sends, in order (the feed runs under the sequencer: one at a time).
struct Recorder {
  std::vector<Record> records;
  void operator()(const expiring::Change<std::string, FM>& c) { records.push_back(Record::of(c)); }
};

// A store's state over the test's keys, as text (hash_state.hpp). Read on a frozen clock, so
// reading changes nothing.
const std::vector<std::string>& all_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int i = 0; i < kKeys; ++i) k.push_back(key_name(static_cast<std::uint64_t>(i)));
    return k;
  }();
  return keys;
}
template <class S>
std::string dump(S& s) {
  return test_state::hash_state(s, all_keys());
}

// One random write on shared keys, by any of several threads.
void random_write(CStore& s, std::mt19937_64& g) {
  const std::string k = key_name(g());
  const std::string k2 = key_name(g());
  const std::string f = "f" + std::to_string(g() % 4);
  switch (g() % 12) {
    case 0:
    case 1: (void)s.hset(k, Pairs{{f, std::to_string(g() % 100)}}); break;
    case 2: (void)s.hdel(k, Names{f}); break;
    case 3: (void)s.hpexpireat(k, T0 + 1000 + static_cast<std::int64_t>(g() % 1000), Names{f}); break;
    case 4: (void)s.hpexpireat(k, T0 - 5, Names{f}); break;  // in the past: the field goes
    case 5: (void)s.pexpireat(k, T0 + 5000 + static_cast<std::int64_t>(g() % 1000)); break;
    case 6: (void)s.persist(k); break;
    case 7: (void)s.del(k); break;
    case 8: (void)s.rename(k, k2); break;
    case 9: (void)s.copy(k, k2, g() % 2 == 0); break;
    case 10: (void)s.hincrby(k, "n", 1); break;
    default: (void)s.del_many(Names{k, k2}); break;
  }
}

// Runs `threads` writers of `ops` random writes each, seeded apart.
void run_writers(CStore& s, int threads, int ops, std::uint64_t seed) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&s, t, ops, seed] {
      std::mt19937_64 g(seed + static_cast<std::uint64_t>(t));
      for (int i = 0; i < ops; ++i) random_write(s, g);
    });
  }
  for (std::thread& t : ts) t.join();
}

// Checks the stream's numbering (1, 2, ... with no gap) and framing (MULTI ... EXEC never
// nested or left open), and replays it, from the record after `after`, into `into`.
template <class S>
void replay(const std::vector<Record>& recs, S& into, std::uint64_t after = 0) {
  bool open = false;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    REQUIRE(recs[i].seq == i + 1);
    if (recs[i].op == ChangeOp::multi) {
      REQUIRE_FALSE(open);
      open = true;
    } else if (recs[i].op == ChangeOp::exec) {
      REQUIRE(open);
      open = false;
    }
    if (recs[i].seq > after) REQUIRE(into.apply(recs[i].view()).ok());
  }
  REQUIRE_FALSE(open);
}

}  // namespace

TEST_CASE("concurrent feed: records are numbered without gaps and each call is one unit", "[concurrent][feed]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(1), shards(8));
  Recorder rec;
  s.set_change_feed(std::ref(rec));
  REQUIRE(s.hset("a", Pairs{{"f", "1"}}).ok());
  REQUIRE(s.pexpireat("a", T0 + 100).ok());
  // Keys of different shards, so that these calls lock several.
  Names many;
  for (int i = 0; i < 16; ++i) many.push_back("m" + std::to_string(i));
  for (const std::string& k : many) REQUIRE(s.hset(k, Pairs{{"f", k}}).ok());
  const std::size_t before_del = rec.records.size();
  CHECK(s.del_many(many) == 16);
  s.as_one_unit([&] {
    REQUIRE(s.hset("x", Pairs{{"f", "1"}}).ok());
    REQUIRE(s.hset("y", Pairs{{"f", "2"}}).ok());
    CHECK(s.size() == 3);  // a reading call inside the unit takes no lock again
  });
  s.as_one_unit([&] { REQUIRE(s.hset("z", Pairs{{"f", "3"}}).ok()); });
  s.clear();
  std::vector<std::string> ops;
  for (std::size_t i = before_del; i < rec.records.size(); ++i) ops.push_back(expiring::to_string(rec.records[i].op));
  const std::vector<std::string> want = [] {
    std::vector<std::string> w{"MULTI"};
    for (int i = 0; i < 16; ++i) w.push_back("DEL");
    for (const char* op : {"EXEC", "MULTI", "SET", "SET", "EXEC", "MULTI", "SET", "EXEC", "FLUSHALL"}) w.push_back(op);
    return w;
  }();
  CHECK(ops == want);
  for (std::size_t i = 0; i < rec.records.size(); ++i) CHECK(rec.records[i].seq == i + 1);
  CHECK(s.feed_seq() == rec.records.size());
  CHECK(rec.records[1].op == ChangeOp::pexpireat);
  CHECK(rec.records[1].at_ms == T0 + 100);
  // No feed: nothing is sent, and the numbering stops where it was.
  s.set_change_feed({});
  const std::size_t n = rec.records.size();
  REQUIRE(s.hset("after", Pairs{{"f", "1"}}).ok());
  CHECK(rec.records.size() == n);
  CHECK(s.feed_seq() == n);
}

TEST_CASE("concurrent feed: four writers' stream replayed in order reaches the store's state", "[concurrent][feed]") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{64}}) {
    CAPTURE(n);
    ManualClock clock{T0};
    CStore s(clock, test_options(2), shards(n));
    Recorder rec;
    s.set_change_feed(std::ref(rec));
    run_writers(s, 4, scaled(3000, 600), 100 + n);
    s.set_change_feed({});
    REQUIRE_FALSE(rec.records.empty());
    Ref r(clock, test_options(3));
    replay(rec.records, r);
    const std::string want = dump(s);
    CHECK_FALSE(want.empty());
    CHECK(dump(r) == want);
    CHECK(r.size() == s.size());
    // The stream replays into a ConcurrentStore of another shard count alike.
    CStore c(clock, test_options(4), shards(n == 1 ? 16 : 1));
    replay(rec.records, c);
    CHECK(dump(c) == want);
  }
}

TEST_CASE("concurrent snapshot: a save while four threads write plus the feed after its feed_seq gives the store",
          "[concurrent][snapshot]") {
  ManualClock clock{T0};
  CStore s(clock, test_options(5), shards(8));
  Recorder rec;
  s.set_change_feed(std::ref(rec));
  run_writers(s, 2, scaled(500, 100), 7);  // something to save
  std::stringstream snap;
  std::uint64_t feed_seq = 0;
  std::thread saver;
  {
    std::atomic<bool> go{false};
    saver = std::thread([&] {
      while (!go.load()) std::this_thread::yield();
      auto r = expiring::save(s, snap);
      if (r.ok()) feed_seq = r->feed_seq;
    });
    go = true;
    run_writers(s, 4, scaled(2000, 400), 11);
    saver.join();
  }
  s.set_change_feed({});
  REQUIRE(feed_seq != 0);
  Ref r(clock, test_options(6));
  auto loaded = expiring::load(r, snap, expiring::LoadAs::replica);
  INFO(loaded.error().message);
  REQUIRE(loaded.ok());
  replay(rec.records, r, feed_seq);
  CHECK(dump(r) == dump(s));
  // A snapshot of the quiet store loads into a ConcurrentStore too.
  std::stringstream again;
  auto saved = expiring::save(s, again);
  REQUIRE(saved.ok());
  CHECK(saved->keys == s.size());
  CStore c(clock, test_options(7), shards(2));
  REQUIRE(expiring::load(c, again).ok());
  CHECK(dump(c) == dump(s));
}

TEST_CASE("concurrent append log: every fsync policy with a rewrite during four writers replays to the store",
          "[concurrent][aof]") {
  for (const expiring::Fsync policy : {expiring::Fsync::always, expiring::Fsync::everysec, expiring::Fsync::no}) {
    CAPTURE(expiring::to_string(policy));
    testdir::TempDir dir;
    ManualClock clock{T0};
    std::string want;
    {
      CStore s(clock, test_options(8), shards(8));
      expiring::AppendLogOptions o;
      o.fsync = policy;
      auto log = expiring::AppendLog<CStore>::open(s, dir.path, o);
      REQUIRE(log.ok());
      std::atomic<bool> done{false};
      int rewrites = 0;
      std::thread writers([&] {
        run_writers(s, 4, scaled(1500, 300), 20);
        done = true;
      });
      for (int i = 0; i < 200 && !done.load(); ++i) {  // rewrites while the writers run
        if ((*log)->rewrite()) ++rewrites;
      }
      writers.join();
      CHECK((*log)->failure() == std::nullopt);
      const expiring::AppendLogStats st = (*log)->stats();
      CHECK(st.rewrites == static_cast<std::uint64_t>(rewrites));
      if (policy == expiring::Fsync::always) {
        // Every unit reached the disk before its call returned; no more syncs than units.
        CHECK(st.fsyncs >= 1);
        CHECK(st.fsyncs <= st.records);
      }
      want = dump(s);
      CHECK_FALSE(want.empty());
    }
    CStore t(clock, test_options(9), shards(4));
    auto log = expiring::AppendLog<CStore>::open(t, dir.path);
    INFO(log.error().message);
    REQUIRE(log.ok());
    CHECK(dump(t) == want);
  }
}

// ---- Crash injection (P1) ---------------------------------------------------------------
// Each of 4 threads of a child process owns 8 keys and makes writes i = 0, 1, 2, ... on them,
// each decided by (thread, i) alone: hset of a field, hpexpireat of a field, pexpireat of the
// key, with deadlines far in the future. A thread reports "about to make write i" and "write
// i returned" down a pipe (16 bytes, atomic); the parent kills the child at a random point,
// replays the log, and compares each thread's keys with a model: an ExpiringStore that made
// the same writes, one by one.

namespace crash {

using SysStore = expiring::ConcurrentStore<std::string, FM, expiring::SystemClock>;
using SysRef = expiring::Store<std::string, FM, expiring::SystemClock>;
constexpr int kThreads = 4;
constexpr std::int64_t kFar = 4'000'000'000'000;  // year 2096: no deadline passes during the test

struct Ack {
  std::uint32_t thread;
  std::uint32_t i;
  std::uint32_t done;  // 0: about to be made; 1: returned
  std::uint32_t pad;
};

std::string key_of(int t, std::uint32_t i) { return "t" + std::to_string(t) + "k" + std::to_string(i % 8); }

// Write i of thread t, on any store of hashes.
template <class S>
void write(S& s, int t, std::uint32_t i) {
  const std::string k = key_of(t, i);
  const std::string f = "f" + std::to_string((i / 8) % 3);
  switch (i % 3) {
    case 0: (void)s.hset(k, Pairs{{f, std::to_string(i)}}); break;
    case 1: (void)s.hpexpireat(k, kFar + i, Names{f}); break;
    default: (void)s.pexpireat(k, kFar + 7 * static_cast<std::int64_t>(i)); break;
  }
}

// Thread t's keys, as dump() shows keys.
template <class S>
std::string state_of(S& s, int t) {
  std::vector<std::string> keys;
  for (std::uint32_t j = 0; j < 8; ++j) keys.push_back(key_of(t, j));
  return test_state::hash_state(s, keys);
}

[[noreturn]] void child(const std::string& dir, expiring::Fsync policy, int fd) {
  SysStore s;
  expiring::AppendLogOptions o;
  o.fsync = policy;
  auto log = expiring::AppendLog<SysStore>::open(s, dir, o);
  if (!log.ok()) ::_exit(3);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < 100000 && std::chrono::steady_clock::now() < until; ++i) {
        Ack a{static_cast<std::uint32_t>(t), i, 0, 0};
        if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
        write(s, t, i);
        a.done = 1;
        if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(4);
        // Paced where nothing waits for the disk: a few thousand writes a thread by the kill,
        // which the parent's model then replays one by one.
        if (policy != expiring::Fsync::always) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (std::thread& th : ts) th.join();
  ::_exit(0);
}

}  // namespace crash

TEST_CASE("concurrent append log crash: SIGKILL under 4 writer threads loses nothing acknowledged under always",
          "[concurrent][aof][crash]") {
  if (EXPIRING_TEST_TSAN) EXPIRING_SKIP("fork() and SIGKILL are left out under ThreadSanitizer (the ASan build runs them)");
  std::mt19937_64 rng(20261205);
  for (const expiring::Fsync policy : {expiring::Fsync::always, expiring::Fsync::everysec, expiring::Fsync::no}) {
    for (int trial = 0; trial < 3; ++trial) {
      CAPTURE(expiring::to_string(policy), trial);
      testdir::TempDir dir;
      int p[2];
      REQUIRE(::pipe(p) == 0);
      const std::size_t kill_after = 100 + static_cast<std::size_t>(rng() % 4000);
      // everysec and no write once a second: a kill after up to 1.3 s falls before or after
      // one of those writes.
      const auto kill_at = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(policy == expiring::Fsync::always ? 0 : 100 + rng() % 1200);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(p[0]);
        crash::child(dir.path, policy, p[1]);
      }
      ::close(p[1]);
      std::uint32_t acked[crash::kThreads] = {0, 0, 0, 0};  // writes returned, per thread
      crash::Ack a{};
      std::size_t messages = 0;
      bool killed = false;
      bool in_order = true;  // each thread's writes return in order
      for (;;) {
        const ssize_t r = ::read(p[0], &a, sizeof a);
        if (r == 0) break;
        if (r < 0 && errno == EINTR) continue;
        if (r != static_cast<ssize_t>(sizeof a) || a.thread >= static_cast<std::uint32_t>(crash::kThreads)) {
          in_order = false;
          break;
        }
        if (a.done == 1) {
          in_order = in_order && a.i == acked[a.thread];
          acked[a.thread] = a.i + 1;
        }
        if (!killed && ++messages >= kill_after && std::chrono::steady_clock::now() >= kill_at) {
          ::kill(pid, SIGKILL);  // what was acknowledged before now is still in the pipe
          killed = true;
        }
      }
      ::close(p[0]);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      REQUIRE(in_order);
      REQUIRE(killed);
      REQUIRE(WIFSIGNALED(status));

      crash::SysStore s;
      auto log = expiring::AppendLog<crash::SysStore>::open(s, dir.path);
      INFO(log.error().message);
      REQUIRE(log.ok());
      for (int t = 0; t < crash::kThreads; ++t) {
        CAPTURE(t, acked[t]);
        const std::string got = crash::state_of(s, t);
        // The model after m writes, for every m up to one past the acknowledged ones (the
        // write in flight may have reached the log before the kill).
        crash::SysRef model;
        std::uint32_t matched = ~0u;
        for (std::uint32_t m = 0; m <= acked[t] + 1; ++m) {
          if (m > 0) crash::write(model, t, m - 1);
          if (crash::state_of(model, t) == got) matched = m;
        }
        INFO(got);
        REQUIRE(matched != ~0u);  // a prefix of the thread's writes, nothing invented
        if (policy == expiring::Fsync::always) CHECK(matched >= acked[t]);
      }
    }
  }
}
