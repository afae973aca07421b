// tests/robustness/test_snapshot_semantics.cpp: inputs that decode record by record but are not
// a state the store can be in (issue 30, item 5).
//
//   * a snapshot with two records of one key: load() used to apply both (the log said "loaded
//     2 keys" with DBSIZE 1, and 8M copies of one key held 919 MB); it is refused as
//     corrupt_file at the second record's offset, the store unchanged;
//   * a hash with no field: the store never keeps one on a primary (the last field going
//     deletes the key), yet the codec decoded one from a snapshot, a log record and a
//     replication RESTORE; each is refused now, and check_invariants() reports one.
// A replica is the exception the store makes on purpose (D31: a hash emptied by its own lazy
// reclaim keeps its key until the primary's record): its check_invariants() accepts one, and
// save() and the log rewrite leave one out (it answers as a missing key), so that what a replica
// writes loads again.
#include <expiring/append_log.hpp>
#include <expiring/expiring.hpp>
#include "commands_under_test.hpp"
#include <expiring/redis/replication.hpp>
#include <expiring/redis/resp.hpp>
#include <expiring/snapshot.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "temp_dir.hpp"

namespace {

using expiring::Codec;
using expiring::Errc;
using expiring::LoadAs;
using expiring::ManualClock;
using expiring::redis::Value;
namespace codec = expiring::codec;

constexpr std::int64_t kT0 = 1'700'000'000'000;
using SStore = expiring::Store<std::string, std::string, ManualClock&>;
using VStore = expiring::Store<std::string, Value, ManualClock&>;
using FM = expiring::FieldMap<std::string, std::string>;
using HStore = expiring::Store<std::string, FM, ManualClock&>;

// One record's body: [deadline] key value, each by its codec.
template <class V>
std::string body(const std::string& key, const V& value, std::optional<std::int64_t> deadline = std::nullopt) {
  std::string b;
  if (deadline) codec::put_i64(b, *deadline);
  Codec<std::string>::encode(key, b);
  Codec<V>::encode(value, b);
  return b;
}

// A snapshot built byte by byte as snapshot.hpp lays it out (header, records, end marker,
// CRC-32C), for inputs save() never writes. `offsets` gets each record's offset.
struct Built {
  std::string bytes;
  std::vector<std::uint64_t> offsets;
};
Built snapshot_of(const std::vector<std::pair<bool, std::string>>& records) {  // (timed, body)
  Built out;
  std::string& b = out.bytes;
  b.assign("\x89" "EXPSNAP", 8);
  codec::put_le(b, expiring::kSnapshotVersion, 2);
  codec::put_le(b, 0, 2);
  codec::put_i64(b, kT0);
  codec::put_le(b, records.size(), 8);
  for (const auto& [timed, bytes] : records) {
    out.offsets.push_back(b.size());
    b.push_back(timed ? '\x02' : '\x01');
    codec::put_varint(b, bytes.size());
    b += bytes;
  }
  b.push_back('\xFF');
  codec::put_le(b, records.size(), 8);
  codec::put_le(b, expiring::detail::crc32c(b.data(), b.size()), 4);
  return out;
}

// The payload of a hash with no field: the tag byte, then a field count of 0.
std::string empty_hash_value_bytes() { return std::string("\x01\x00", 2); }

template <class Store>
std::vector<std::string> keys_of(const Store& s) {
  std::vector<std::string> out;
  s.visit_stored([&](const std::string& k, const auto&, const std::optional<std::int64_t>&) { out.push_back(k); });
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("snapshot semantics: two records of one key are refused at the second's offset", "[robustness][snapshot]") {
  ManualClock clock{kT0};
  SStore s{clock};
  REQUIRE(s.set("old", "kept").ok());
  const Built snap = snapshot_of({{false, body<std::string>("k", "1")},
                                  {false, body<std::string>("j", "x")},
                                  {false, body<std::string>("k", "2")}});
  SECTION("from a stream") {
    std::istringstream in(snap.bytes);
    const auto r = expiring::load(s, in);
    INFO(r.error().message);
    REQUIRE(r == Errc::corrupt_file);
    CHECK(r.error().offset == snap.offsets[2]);
    CHECK(r.error().message.find("duplicate") != std::string::npos);
    CHECK(r.error().message.find("offset " + std::to_string(snap.offsets[0])) != std::string::npos);
  }
  SECTION("from a file") {
    testdir::TempDir dir;
    const std::string path = dir.file("dup.snap");
    std::ofstream(path, std::ios::binary) << snap.bytes;
    const auto r = expiring::load(s, path, LoadAs::replica);
    INFO(r.error().message);
    REQUIRE(r == Errc::corrupt_file);
    CHECK(r.error().offset == snap.offsets[2]);
  }
  CHECK(keys_of(s) == std::vector<std::string>{"old"});
  CHECK(s.check_invariants());
}

TEST_CASE("snapshot semantics: a duplicate is refused even when its first record expired", "[robustness][snapshot]") {
  // The file is corrupt whatever the loading clock says: as a primary the first record would
  // be skipped as stale, and the second must not slip through because of that.
  ManualClock clock{kT0};
  SStore s{clock};
  const Built snap =
      snapshot_of({{true, body<std::string>("k", "stale", kT0 - 5)}, {false, body<std::string>("k", "live")}});
  std::istringstream in(snap.bytes);
  const auto r = expiring::load(s, in, LoadAs::primary);
  INFO(r.error().message);
  REQUIRE(r == Errc::corrupt_file);
  CHECK(r.error().offset == snap.offsets[1]);
  CHECK(s.size() == 0);
}

TEST_CASE("snapshot semantics: a hash with no field is refused in a snapshot", "[robustness][snapshot]") {
  ManualClock clock{kT0};
  SECTION("a store of redis::Value") {
    VStore s{clock};
    REQUIRE(s.set("old", Value(std::string("kept"))).ok());
    std::string h;
    Codec<std::string>::encode("h", h);
    h += empty_hash_value_bytes();
    const Built snap = snapshot_of({{false, body<Value>("a", Value(std::string("1")))}, {false, h}});
    std::istringstream in(snap.bytes);
    const auto r = expiring::load(s, in);
    INFO(r.error().message);
    REQUIRE(r == Errc::corrupt_file);
    CHECK(r.error().offset == snap.offsets[1]);
    CHECK(keys_of(s) == std::vector<std::string>{"old"});
  }
  SECTION("a store of FieldMap") {
    HStore s{clock};
    const Built snap = snapshot_of({{true, body<FM>("h", FM{}, kT0 + 1000)}});
    std::istringstream in(snap.bytes);
    const auto r = expiring::load(s, in, LoadAs::replica);
    INFO(r.error().message);
    REQUIRE(r == Errc::corrupt_file);
    CHECK(r.error().offset == snap.offsets[0]);
    CHECK(s.size() == 0);
  }
}

TEST_CASE("snapshot semantics: RESTORE of an empty hash on the replication stream is refused",
          "[robustness][snapshot][replication]") {
  // The replica side of the link as the server runs it: RESP frames, then StreamApplier.
  ManualClock clock{kT0};
  expiring::Options o;
  o.replica = true;
  VStore s{clock, o};
  std::string stream;
  // A DUMP payload of a hash of no field (type 4, length 0), with a sound footer.
  std::string empty("\x04\x00\x0a\x00", 4);
  const std::uint64_t crc = expiring::detail::rdb::crc64(0, empty.data(), empty.size());
  for (int i = 0; i < 8; ++i) empty.push_back(static_cast<char>((crc >> (8 * i)) & 0xFFu));
  auto command = [&](std::initializer_list<std::string> args) {
    expiring::redis::Reply::write_array_header(stream, args.size());
    for (const std::string& a : args) expiring::redis::Reply::write_bulk(stream, a);
  };
  command({"SET", "a", "1"});
  command({"RESTORE", "h", "0", empty, "REPLACE"});
  command({"RESTORE", "h", std::to_string(kT0 + 1000), empty, "REPLACE", "ABSTTL"});
  expiring::redis::RequestParser p{expiring::redis::ParserLimits{}};
  p.feed(stream.data(), stream.size());
  std::vector<std::string> argv;
  std::vector<std::string> refused;
  expiring::redis::StreamApplier<VStore> apply(s);
  while (p.next(argv) == expiring::redis::RequestParser::Status::command) {
    if (apply.apply(argv) == expiring::redis::StreamOutcome::refused) refused.push_back(argv[0]);
  }
  CHECK(refused == std::vector<std::string>{"RESTORE", "RESTORE"});
  CHECK(keys_of(s) == std::vector<std::string>{"a"});
  // The control: a hash with a field still travels.
  expiring::redis::Hash one;
  one.assign("f", "v");
  CHECK(apply.apply({"RESTORE", "h", "0", expiring::dump_value(Value(std::move(one))), "REPLACE"}) ==
        expiring::redis::StreamOutcome::applied);
  CHECK(keys_of(s) == std::vector<std::string>{"a", "h"});
}

TEST_CASE("snapshot semantics: check_invariants() reports a stored hash with no field", "[robustness][snapshot]") {
  ManualClock clock{kT0};
  const std::string key = "h";
  SECTION("a primary: apply() is the one way in (it takes a record as valid)") {
    VStore s{clock};
    REQUIRE(s.set("a", Value(std::string("1"))).ok());
    REQUIRE(s.check_invariants());
    const Value empty{expiring::redis::Hash{}};
    REQUIRE(s.apply(VStore::change_type{expiring::ChangeOp::set, &key, &empty}).ok());
    CHECK_FALSE(s.check_invariants());
    REQUIRE(s.apply(VStore::change_type{expiring::ChangeOp::del, &key}).ok());
    CHECK(s.check_invariants());
  }
  SECTION("a store of FieldMap") {
    HStore s{clock};
    const FM empty;
    REQUIRE(s.apply(HStore::change_type{expiring::ChangeOp::set, &key, &empty}).ok());
    CHECK_FALSE(s.check_invariants());
  }
  SECTION("a replica keeps a hash its own reclaim emptied (D31): valid there, and left out of a save") {
    expiring::Options o;
    o.replica = true;
    HStore s{clock, o};
    FM h;
    const auto pos = h.assign("f", "v").first;
    h.set_deadline(pos, kT0 + 10);
    REQUIRE(s.apply(HStore::change_type{expiring::ChangeOp::set, &key, &h}).ok());
    clock.advance(std::chrono::milliseconds(20));
    const auto got = s.hget(key, "f");
    REQUIRE(got.ok());
    CHECK(*got == nullptr);
    CHECK(s.peek(key)->size() == 1);  // a read hides the stale field and leaves it (D31)
    REQUIRE(s.hdel(key, {"other"}).ok());  // a write of the replica's own reclaims it
    CHECK(s.peek(key)->size() == 0);
    REQUIRE(s.size() == 1);  // the key stays, empty
    CHECK(s.check_invariants());
    std::stringstream io;
    const auto saved = expiring::save(s, io);
    REQUIRE(saved.ok());
    CHECK(saved->keys == 0);
    HStore t{clock, o};
    const auto loaded = expiring::load(t, io, LoadAs::replica);
    INFO(loaded.error().message);
    REQUIRE(loaded.ok());
    CHECK(t.size() == 0);
  }
}

TEST_CASE("snapshot semantics: an empty hash in an append-log record is refused at replay", "[robustness][snapshot]") {
  ManualClock clock{kT0};
  testdir::TempDir dir;
  const std::string key = "h";
  using Log = expiring::AppendLog<VStore>;
  {
    VStore s{clock};
    auto log = Log::open(s, dir.path);
    INFO(log.error().message);
    REQUIRE(log.ok());
    REQUIRE(s.set("a", Value(std::string("1"))).ok());
    // apply() logs what it is given: here, a record no primary writes.
    const Value empty{expiring::redis::Hash{}};
    REQUIRE(s.apply(VStore::change_type{expiring::ChangeOp::set, &key, &empty}).ok());
  }
  VStore t{clock};
  REQUIRE(t.set("old", Value(std::string("kept"))).ok());
  auto again = Log::open(t, dir.path);
  INFO(again.error().message);
  REQUIRE(again == Errc::corrupt_file);
  CHECK(again.error().message.find("does not decode") != std::string::npos);
  CHECK(keys_of(t) == std::vector<std::string>{"old"});
}

TEST_CASE("snapshot semantics: a replica's emptied hash is left out of a log rewrite", "[robustness][snapshot]") {
  ManualClock clock{kT0};
  testdir::TempDir dir;
  const std::string key = "h";
  expiring::Options o;
  o.replica = true;
  using Log = expiring::AppendLog<HStore>;
  {
    HStore s{clock, o};
    auto log = Log::open(s, dir.path);
    REQUIRE(log.ok());
    FM h;
    const auto pos = h.assign("f", "v").first;
    h.set_deadline(pos, kT0 + 10);
    REQUIRE(s.apply(HStore::change_type{expiring::ChangeOp::set, &key, &h}).ok());
    clock.advance(std::chrono::milliseconds(20));
    REQUIRE(s.hdel(key, {"other"}).ok());  // a write of the replica's own reclaims the field
    REQUIRE(s.size() == 1);
    REQUIRE((*log)->rewrite());
  }
  HStore t{clock, o};
  auto again = Log::open(t, dir.path);
  INFO(again.error().message);
  REQUIRE(again.ok());
  CHECK(t.size() == 0);
}
