// tests/fuzz/fuzz_replication_stream.cpp: libFuzzer target for the replica side of a
// replication link, redis::ReplicaLink (redis/replication.hpp), over a replica-mode store of
// redis::Value. Clang only.
//
// The bytes are what a primary sends: the answers to the handshake (+PONG, +OK, +OK), then to
// PSYNC (+FULLRESYNC <replid> <offset>), the RDB as `$<n>\r\n<rdb>` or between EOF marks,
// then the stream of commands in Redis's vocabulary (string, hash and keyspace commands, and
// others the replica skips). They reach a ReplicaLink with small limits (4 KB bulks, 16 KB
// of buffer), fed in reads of a size taken from the first byte, until it fails (the server
// would drop the link) or the input ends. Properties:
//   * what it holds (buffered_bytes()) never exceeds twice its limits plus one read;
//   * after every read, the store's invariants hold, failed link or not; a link that failed
//     takes nothing more;
//   * the replica, its clock then moved on and every hash read (so that its own reclaim empties
//     some, which a replica keeps: D31), still saves a snapshot that loads into a fresh
//     replica to the same content, less those emptied hashes.
//
// Run by ctest for a few seconds (label fuzz, tests/fuzz/CMakeLists.txt). By hand, longer:
//   build/fuzz/tests/fuzz/fuzz_replication_stream -expiring_make_corpus=/tmp/repl-seeds
//   build/fuzz/tests/fuzz/fuzz_replication_stream -max_total_time=600 -max_len=4096 /tmp/repl-seeds
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>
#include <string>
#include <vector>

#include "expiring/redis/replication.hpp"
#include "expiring/rdb.hpp"
#include "expiring/snapshot.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;

// The replica's link: bytes in, records applied, until the stream ends or is refused.
void replica_link(const std::uint8_t* data, std::size_t size, fuzz::ValueStore& s) {
  expiring::redis::LinkLimits lim;
  lim.max_bulk = 4096;
  lim.max_buffer = 16384;
  expiring::redis::ReplicaLink<fuzz::ValueStore> link(s, lim);
  const char* bytes = reinterpret_cast<const char*>(data);
  std::size_t off = size > 0 ? 1 : 0;
  const std::size_t step = size > 0 ? 1 + data[0] % 128 : 1;
  while (off < size) {
    const std::size_t n = step < size - off ? step : size - off;
    const bool ok = link.feed(bytes + off, n);
    off += n;
    FUZZ_CHECK(s.check_invariants(), "invariants after a read");
    FUZZ_CHECK(link.buffered_bytes() <= 2 * (lim.max_bulk + 64 + lim.max_buffer) + 64 * 1024 + step,
               "the link holds more than twice its limits");
    if (!ok) {
      FUZZ_CHECK(!link.error().empty(), "a failed link says why");
      FUZZ_CHECK(!link.feed("*1\r\n$4\r\nPING\r\n", 14), "a failed link takes nothing more");
      return;
    }
  }
}

std::vector<std::string> seeds() {
  // What a primary sends: the full sync's RDB of its content then, and its feed after that,
  // as write_change() puts it on the wire, then commands of Redis's vocabulary.
  expiring::ManualClock clock{kNow};
  fuzz::ValueStore s{clock};
  fuzz::populate(s, kNow);
  std::string rdb;
  (void)expiring::save_rdb(s, rdb);
  std::string stream;
  s.set_change_feed([&](const fuzz::ValueStore::change_type& c) { expiring::redis::write_change(c, stream); });
  (void)s.set("a", expiring::redis::Value(std::string("1")), expiring::KeepTtl{});
  (void)s.persist("ttl");
  (void)s.rename("a", "b");
  (void)s.del("plain");
  (void)s.unlink("far");
  (void)s.hdel("ht", std::vector<std::string>{"only"});
  clock.advance(std::chrono::milliseconds(200));
  (void)s.tick();  // the field of h that expired travels as the whole hash
  s.clear();       // FLUSHALL
  s.set_change_feed(nullptr);
  const auto cmd = [&](std::initializer_list<std::string_view> args) {
    expiring::redis::Reply::write_array_header(stream, args.size());
    for (std::string_view a : args) expiring::redis::Reply::write_bulk(stream, a);
  };
  cmd({"SELECT", "0"});
  cmd({"INCR", "n"});
  cmd({"APPEND", "n", "7"});
  cmd({"HSET", "h2", "f", "1", "g", "2"});
  cmd({"HINCRBY", "h2", "f", "5"});
  cmd({"HPEXPIREAT", "h2", "1700000009000", "FIELDS", "1", "g"});
  cmd({"HPERSIST", "h2", "FIELDS", "1", "g"});
  cmd({"HDEL", "h2", "f"});
  cmd({"SETRANGE", "n", "3", "xyz"});
  cmd({"REPLCONF", "GETACK", "*"});
  cmd({"LPUSH", "list", "x"});
  const std::string hello = "+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC " + std::string(40, 'a') + " 0\r\n";
  const std::string sized = hello + "$" + std::to_string(rdb.size()) + "\r\n" + rdb + stream;
  const std::string mark(40, 'z');
  const std::string marked = hello + "\n$EOF:" + mark + "\r\n" + rdb + mark + stream;
  // The first byte picks the read size: one seed read a byte at a time, one in large reads.
  return {std::string(1, '\0') + sized, std::string(1, '\x7f') + sized, std::string(1, '\x05') + marked};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const auto dir = fuzz::corpus_dir(*argc, *argv)) fuzz::write_corpus(*dir, seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  expiring::ManualClock clock{kNow};
  expiring::Options o;
  o.replica = true;
  fuzz::ValueStore s{clock, o};
  replica_link(data, size, s);
  FUZZ_CHECK(s.check_invariants(), "invariants after the stream");

  // Later, every hash read: fields past their deadline go, and an emptied hash stays (D31).
  clock.advance(std::chrono::milliseconds(size > 1 ? data[1] * 1000 : 0));
  std::vector<std::string> hashes;
  s.visit_stored([&](const std::string& k, const expiring::redis::Value& v, const std::optional<std::int64_t>&) {
    if (v.hash() != nullptr) hashes.push_back(k);
  });
  for (const std::string& k : hashes) (void)s.hgetall(k);
  FUZZ_CHECK(s.check_invariants(), "invariants after the reads");

  fuzz::State expect;
  for (auto& entry : fuzz::state(s)) {
    const std::string& bytes = std::get<1>(entry);
    if (bytes.size() == 2 && bytes[0] == '\x01' && bytes[1] == '\0') continue;  // an emptied hash
    expect.push_back(std::move(entry));
  }
  std::stringstream io;
  const auto saved = expiring::save(s, io);
  FUZZ_CHECK(saved.ok(), saved.error().message.c_str());
  fuzz::ValueStore t{clock, o};
  const auto loaded = expiring::load(t, io, expiring::LoadAs::replica);
  FUZZ_CHECK(loaded.ok(), loaded.error().message.c_str());
  FUZZ_CHECK(fuzz::state(t) == expect, "a replica's snapshot loads to what it holds");
  return 0;
}
