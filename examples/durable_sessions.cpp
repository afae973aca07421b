// durable_sessions: sessions with per-field TTLs, written by 4 threads, that survive a restart.
//
// The store is a ConcurrentStore of hashes (one hash per session, fields with their own
// TTLs) behind an append-only log at appendfsync always: a call returns once its change is
// on disk, and the threads waiting for the disk share one fdatasync (a group commit). The
// example writes from 4 threads, "restarts" (drops the store and its log, opens a new store
// on the same directory), and checks that every session, field and deadline came back, to the
// millisecond. Then it compacts the log with a rewrite and shows the log's figures.
#include <expiring/append_log.hpp>
#include <expiring/concurrent_store.hpp>
#include <expiring/field_map.hpp>

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using Sessions = expiring::ConcurrentStore<std::string, expiring::FieldMap<std::string, std::string>>;

constexpr int kThreads = 4;
constexpr int kSessionsPerThread = 250;

std::string session(int t, int i) { return "session:" + std::to_string(t) + ":" + std::to_string(i); }

// Each session's deadlines, read back as Unix ms: the key's, then its fields'.
std::vector<std::int64_t> deadlines(Sessions& s, const std::string& key) {
  std::vector<std::int64_t> out{s.pexpiretime(key)};
  auto fields = s.hpexpiretime(key, {"user", "csrf", "cart"});
  if (fields.ok()) out.insert(out.end(), fields.value().begin(), fields.value().end());
  return out;
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/expiring-durable-sessions-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  expiring::AppendLogOptions options;
  options.fsync = expiring::Fsync::always;

  std::vector<std::vector<std::int64_t>> before;
  std::uint64_t fsyncs = 0, records = 0;
  {
    Sessions sessions;
    auto log = expiring::AppendLog<Sessions>::open(sessions, dir, options);
    if (!log.ok()) {
      std::fprintf(stderr, "open: %s\n", log.error().message.c_str());
      return 1;
    }
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&sessions, t] {
        for (int i = 0; i < kSessionsPerThread; ++i) {
          const std::string key = session(t, i);
          (void)sessions.hset(key, {{"user", "u" + std::to_string(i)}, {"csrf", "x"}, {"cart", "3 items"}});
          (void)sessions.hpexpire(key, std::chrono::minutes(15), {"csrf"});  // a short-lived token
          (void)sessions.hpexpire(key, std::chrono::hours(2), {"cart"});
          (void)sessions.pexpire(key, std::chrono::hours(24));                // the session itself
        }
      });
    }
    for (std::thread& w : writers) w.join();
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kSessionsPerThread; ++i) before.push_back(deadlines(sessions, session(t, i)));
    }
    fsyncs = (*log)->stats().fsyncs;
    records = (*log)->stats().records;
  }  // the store and its log go: a restart

  Sessions sessions;
  auto log = expiring::AppendLog<Sessions>::open(sessions, dir, options);
  if (!log.ok()) {
    std::fprintf(stderr, "reopen: %s\n", log.error().message.c_str());
    return 1;
  }
  std::size_t same = 0, k = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kSessionsPerThread; ++i, ++k) same += deadlines(sessions, session(t, i)) == before[k] ? 1 : 0;
  }
  std::printf("%d threads wrote %zu sessions: %llu records, %llu fdatasyncs (shared by the threads)\n", kThreads,
              before.size(), static_cast<unsigned long long>(records), static_cast<unsigned long long>(fsyncs));
  std::printf("after the restart: %zu keys, %zu sessions with every deadline exact to the ms\n", sessions.size(), same);
  const bool rewritten = (*log)->rewrite();
  std::printf("rewrite: %s, base %llu bytes\n", rewritten ? "done" : "failed",
              static_cast<unsigned long long>((*log)->stats().base_bytes));
  (*log).reset();  // closes the log before its directory goes
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return same == before.size() && sessions.size() == before.size() && rewritten ? 0 : 1;
}
