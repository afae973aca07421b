// tests/fuzz/fuzz_replication_stream.cpp: libFuzzer target for the replica side of the
// replication stream (redis/replication.hpp), over a replica-mode store of redis::Value. Clang
// only.
//
// The bytes go through the steps the resp_server example's link runs today (its
// process_link(), streaming state): a RequestParser (with small ParserLimits), fed in reads
// of a size taken from the first byte; parse_change() of each command, the link dropped at the
// first one that is not a change record or at a protocol error; apply() of each record, the
// records of a MULTI held until its EXEC and applied as one unit. This is kept to that one
// loop (replica_link() below) so that it can be pointed at a library class for the link once
// there is one. Properties:
//   * the parser never holds more than its limit (plus one read) and never hands out an
//     empty command;
//   * apply() never fails on a record parse_change() produced but with the errors RENAME can
//     answer (no such key) and the store's invariants hold after every record;
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
#include <string>
#include <vector>

#include "expiring/redis/replication.hpp"
#include "expiring/redis/resp.hpp"
#include "expiring/snapshot.hpp"
#include "fuzz_support.hpp"

namespace {

using expiring::redis::RequestParser;
using expiring::redis::ValueRecord;
constexpr std::int64_t kNow = 1'700'000'000'000;

void check_applied(const expiring::Result<bool>& r, const fuzz::ValueStore& s) {
  FUZZ_CHECK(r.ok() || r.error() == expiring::Errc::no_such_key, to_string(r.error()));
  FUZZ_CHECK(s.check_invariants(), "invariants after a record");
}

// The replica's link: bytes in, records applied, until the stream ends or is refused.
void replica_link(const std::uint8_t* data, std::size_t size, fuzz::ValueStore& s) {
  expiring::redis::ParserLimits lim;
  lim.max_bulk_len = 4096;
  lim.max_inline = 512;
  lim.max_query_buffer = 16384;
  RequestParser p(lim);
  std::vector<ValueRecord> multi;
  bool in_multi = false;
  const char* bytes = reinterpret_cast<const char*>(data);
  std::size_t off = size > 0 ? 1 : 0;
  const std::size_t step = size > 0 ? 1 + data[0] % 128 : 1;
  std::vector<std::string> argv;
  while (off < size) {
    const std::size_t n = step < size - off ? step : size - off;
    p.feed(bytes + off, n);
    off += n;
    for (;;) {
      const RequestParser::Status st = p.next(argv);
      if (st == RequestParser::Status::incomplete) break;
      if (st != RequestParser::Status::command) return;  // a protocol error drops the link
      FUZZ_CHECK(!argv.empty(), "an empty command");
      std::optional<ValueRecord> rec = expiring::redis::parse_change(argv);
      if (!rec) return;  // not a change record: the link is dropped
      if (rec->op == expiring::ChangeOp::multi) {
        in_multi = true;
      } else if (rec->op == expiring::ChangeOp::exec) {
        s.as_one_unit([&] {
          for (const ValueRecord& m : multi) check_applied(s.apply(m.view()), s);
        });
        multi.clear();
        in_multi = false;
      } else if (in_multi) {
        multi.push_back(std::move(*rec));
      } else {
        check_applied(s.apply(rec->view()), s);
      }
    }
    FUZZ_CHECK(p.buffered_bytes() <= lim.max_query_buffer + step, "the parser holds more than its limit");
  }
}

std::vector<std::string> seeds() {
  // A primary's feed, as write_change() puts it on the wire.
  expiring::ManualClock clock{kNow};
  fuzz::ValueStore s{clock};
  std::string stream;
  s.set_change_feed([&](const fuzz::ValueStore::change_type& c) { expiring::redis::write_change(c, stream); });
  fuzz::populate(s, kNow);
  (void)s.set("a", expiring::redis::Value(std::string("1")), expiring::KeepTtl{});
  (void)s.persist("ttl");
  (void)s.rename("a", "b");
  (void)s.del("plain");
  (void)s.unlink("far");
  (void)s.hdel("ht", std::vector<std::string>{"only"});
  clock.advance(std::chrono::milliseconds(200));
  (void)s.tick();  // the field of h that expired travels as the whole hash
  s.clear();  // FLUSHALL
  const std::string whole = stream;
  s.set_change_feed(nullptr);
  // The first byte picks the read size: one seed read a byte at a time, one in large reads.
  return {std::string(1, '\0') + whole, std::string(1, '\x7f') + whole};
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
