// tests/test_dump_restore.cpp: rdb.hpp's dump() and restore(), Redis's DUMP/RESTORE payloads.
//
// What is checked: a payload byte for byte as redis-server 7.0.15 writes it; round trips of
// strings, hashes and hashes with field TTLs (the 7.4 type and version 12) in stores of
// strings and of redis::Value; RESTORE's TTL rules (relative, ABSTTL, 0 for none, a past
// deadline storing nothing and deleting with REPLACE, a replica storing it all the same, the
// int64 edges); BUSYKEY; every refused payload (short, newer version, CRC, trailing bytes, a
// list, a hash for a store of strings) leaving the store as it was; IDLETIME under an LRU
// policy and FREQ under an LFU one; the same, and save_rdb(), on a ConcurrentStore. The
// payloads moving between redis-server and expiring-server are in
// tests/redis/test_rdb_live.cpp.
// expiring-test: one policy (the payload does not depend on the expiry index)
#include <expiring/concurrent_store.hpp>
#include <expiring/expiring.hpp>
#include <expiring/rdb.hpp>
#include <expiring/redis/value.hpp>

#include <cstdint>
#include <string>

#include "catch.hpp"
#include "support.hpp"

using expiring::Errc;
using expiring::ManualClock;
using expiring::RestoreOptions;
using support::kMax;
using support::T0;

namespace {

using VStore = expiring::Store<std::string, expiring::redis::Value, ManualClock&, TestPolicy>;
using SStore = expiring::Store<std::string, std::string, ManualClock&, TestPolicy>;
using expiring::redis::Value;

RestoreOptions ttl(std::int64_t ms, bool absttl = false, bool replace = false) {
  RestoreOptions o;
  o.ttl_ms = ms;
  o.absttl = absttl;
  o.replace = replace;
  return o;
}

// Every key, value and deadline, as text, to tell whether a refused call changed anything.
template <class S>
std::string state(const S& s) {
  std::string out;
  s.visit_stored([&](const std::string& k, const auto& v, const std::optional<std::int64_t>& d) {
    out += k + "=" + expiring::dump_value(v) + "@" + (d ? std::to_string(*d) : "-") + ";";
  });
  return out;
}

}  // namespace

TEST_CASE("dump: a payload is byte for byte redis-server 7.0's", "[rdb][dump]") {
  ManualClock clock{T0};
  SStore s{clock};
  (void)s.set("a", std::string("hello"));
  // redis-cli DUMP of SET a hello on redis-server 7.0.15: type 0, length 5, the bytes, RDB
  // version 10, CRC-64.
  CHECK(*expiring::dump(s, "a") == std::string("\x00\x05hello\n\x00" "cr\xdf" "ve4 \n", 17));
  (void)s.set("i", std::string("12345"));
  CHECK(expiring::dump(s, "i")->substr(0, 4) == std::string("\x00\xc1\x39\x30", 4));  // an int16
  CHECK_FALSE(expiring::dump(s, "missing").has_value());
  VStore v{clock};
  (void)v.hset("h", "f1", "v1");
  (void)v.hset("h", "f2", "12345");
  // HSET h f1 v1 f2 12345 on redis-server 7.0.15: a listpack (type 16).
  CHECK(*expiring::dump(v, "h") == std::string("\x10\x17\x17\x00\x00\x00\x04\x00\x82" "f1\x03\x82v1\x03\x82" "f2\x03\xf1" "90\x03\xff\n\x00@{B\x16\xb3t\xc0\xb9", 35));
}

TEST_CASE("dump: strings, hashes and field TTLs round trip, with the version each needs", "[rdb][dump]") {
  ManualClock clock{T0};
  VStore s{clock};
  (void)s.set("s", Value(std::string(5000, 'z') + "end"));
  (void)s.hset("h", "a", "1");
  for (int i = 0; i < 200; ++i) (void)s.hset("big", "f" + std::to_string(i), std::string(i, 'x'));
  (void)s.hset("ttl", "a", "1");
  (void)s.hset("ttl", "b", "2");
  REQUIRE(s.hpexpireat("ttl", T0 + 5000, {"a"}).ok());
  for (const char* k : {"s", "h", "big", "ttl"}) {
    INFO(k);
    const std::string p = *expiring::dump(s, k);
    const unsigned version = static_cast<unsigned char>(p[p.size() - 10]);
    CHECK(version == (std::string(k) == "ttl" ? 12u : 10u));
    VStore t{clock};
    REQUIRE(expiring::restore(t, k, p).ok());
    CHECK(expiring::dump_value(*t.peek(std::string(k))) == p);
  }
  VStore t{clock};
  REQUIRE(expiring::restore(t, "ttl", *expiring::dump(s, "ttl")).ok());
  CHECK(t.hpexpiretime("ttl", {"a", "b"}).value() == std::vector<std::int64_t>{T0 + 5000, -1});
  // A store of strings takes the strings.
  SStore strings{clock};
  REQUIRE(expiring::restore(strings, "s", *expiring::dump(s, "s")).ok());
  CHECK(*strings.get("s") == std::string(5000, 'z') + "end");
}

TEST_CASE("restore: TTLs relative, absolute and none, and a past one stores nothing", "[rdb][dump]") {
  ManualClock clock{T0};
  SStore s{clock};
  (void)s.set("src", std::string("v"));
  const std::string p = *expiring::dump(s, "src");
  CHECK(*expiring::restore(s, "rel", p, ttl(1500)));
  CHECK(s.pexpiretime("rel") == T0 + 1500);
  CHECK(*expiring::restore(s, "abs", p, ttl(T0 + 7, true)));
  CHECK(s.pexpiretime("abs") == T0 + 7);
  CHECK(*expiring::restore(s, "none", p, ttl(0)));
  CHECK(s.pexpiretime("none") == -1);
  CHECK(*expiring::restore(s, "far", p, ttl(kMax, true)));  // the largest deadline there is
  CHECK(s.pexpiretime("far") == kMax);
  // A deadline at or before now: nothing stored (false); with REPLACE the old key goes.
  CHECK_FALSE(*expiring::restore(s, "gone", p, ttl(T0, true)));
  CHECK_FALSE(s.exists("gone"));
  CHECK_FALSE(*expiring::restore(s, "none", p, ttl(1, true, true)));
  CHECK_FALSE(s.exists("none"));
  // REPLACE of a key with a TTL: the new value's TTL (none) replaces it.
  CHECK(*expiring::restore(s, "rel", p, ttl(0, false, true)));
  CHECK(s.pexpiretime("rel") == -1);
  // A replica keeps what its primary sent, past or not.
  expiring::Options o;
  o.replica = true;
  SStore r{clock, o};
  CHECK(*expiring::restore(r, "old", p, ttl(1, true)));
  CHECK(r.size() == 1);
}

TEST_CASE("restore: refusals leave the store as it was", "[rdb][dump]") {
  ManualClock clock{T0};
  SStore s{clock};
  (void)s.set("src", std::string("value"), expiring::PxAt{T0 + 100});
  const std::string p = *expiring::dump(s, "src");
  const std::string before = state(s);
  const auto code = [&](const std::string& key, const std::string& payload, RestoreOptions o) {
    const auto r = expiring::restore(s, key, payload, o);
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(r.error().message.empty());
    CHECK(state(s) == before);
    return r.error().code;
  };
  CHECK(code("src", p, ttl(0)) == Errc::busy_key);
  CHECK(code("new", p, ttl(-1)) == Errc::invalid_expire_time);
  CHECK(code("new", p, ttl(kMax)) == Errc::invalid_expire_time);  // now + ttl overflows
  CHECK(code("new", "", ttl(0)) == Errc::bad_dump_payload);
  CHECK(code("new", p.substr(0, 9), ttl(0)) == Errc::bad_dump_payload);
  std::string newer = p;
  newer[newer.size() - 10] = 13;
  CHECK(code("new", newer, ttl(0)) == Errc::bad_dump_payload);
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::string flipped = p;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x20);
    INFO("byte " << i);
    CHECK(code("new", flipped, ttl(0)) == Errc::bad_dump_payload);
  }
  // Sound footers around bodies that are not: trailing bytes, a cut value, a list, a hash.
  const auto sealed = [](std::string body) {
    body += std::string("\x0a\x00", 2);
    const std::uint64_t crc = expiring::detail::rdb::crc64(0, body.data(), body.size());
    for (int i = 0; i < 8; ++i) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xFFu));
    return body;
  };
  CHECK(code("new", sealed(std::string("\x00\x01" "ab", 4)), ttl(0)) == Errc::corrupt_file);
  CHECK(code("new", sealed(std::string("\x00\x05" "ab", 4)), ttl(0)) == Errc::truncated_file);
  CHECK(code("new", sealed(std::string("\x01\x01\x01" "a", 4)), ttl(0)) == Errc::unsupported_type);
  CHECK(code("new", sealed(std::string("\x63", 1)), ttl(0)) == Errc::corrupt_file);
  ManualClock c2{T0};
  VStore v{c2};
  (void)v.hset("h", "f", "x");
  CHECK(code("new", *expiring::dump(v, "h"), ttl(0)) == Errc::unsupported_type);
  const auto r = expiring::restore(s, "new", sealed(std::string("\x01\x01\x01" "a", 4)));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("list") != std::string::npos);
}

TEST_CASE("restore: IDLETIME under an LRU policy, FREQ under an LFU one", "[rdb][dump]") {
  ManualClock clock{T0 + 1'000'000'000};
  SStore s{clock};
  s.set_maxmemory(std::size_t{1} << 30);
  s.set_maxmemory_policy(expiring::EvictionPolicy::allkeys_lru);
  (void)s.set("src", std::string("v"));
  const std::string p = *expiring::dump(s, "src");
  RestoreOptions o;
  o.idle_seconds = 3600;
  o.freq = std::nullopt;
  REQUIRE(*expiring::restore(s, "idle", p, o));
  CHECK(*s.object_idletime_ms("idle") == 3'600'000);
  o.idle_seconds = kMax;  // longer than the LRU clock holds: its longest idle time
  REQUIRE(*expiring::restore(s, "ancient", p, o));
  CHECK(*s.object_idletime_ms("ancient") >= *s.object_idletime_ms("idle"));
  s.set_maxmemory_policy(expiring::EvictionPolicy::allkeys_lfu);
  o.idle_seconds = std::nullopt;
  o.freq = 200;
  REQUIRE(*expiring::restore(s, "hot", p, o));
  CHECK(*s.object_freq("hot") == 200);
  o.freq = 0;
  REQUIRE(*expiring::restore(s, "cold", p, o));
  CHECK(*s.object_freq("cold") == 0);
}

TEST_CASE("dump: DUMP, RESTORE and the RDB format on a ConcurrentStore", "[rdb][dump]") {
  expiring::ConcurrentStore<std::string, Value> s;
  (void)s.set("s", Value(std::string("text")));
  (void)s.hset("h", "f", "1");
  REQUIRE(s.pexpireat("h", 4102444800000).ok());
  const std::optional<std::string> p = expiring::dump(s, "s");
  REQUIRE(p.has_value());
  RestoreOptions o;
  o.ttl_ms = 4102444800123;
  o.absttl = true;
  REQUIRE(*expiring::restore(s, "copy", *p, o));
  CHECK(*s.get("copy")->string() == "text");
  CHECK(s.pexpiretime("copy") == 4102444800123);
  CHECK(expiring::restore(s, "copy", *p).error().code == Errc::busy_key);
  // save_rdb() walks the shards; load_rdb_bytes() into an ExpiringStore finds every key.
  std::string rdb;
  const auto saved = expiring::save_rdb(s, rdb);
  REQUIRE(saved.ok());
  CHECK(saved->keys == 3);
  CHECK(saved->version == 10);
  ManualClock clock{T0};
  VStore t{clock};
  REQUIRE(expiring::load_rdb_bytes(t, rdb).ok());
  CHECK(t.size() == 3);
  CHECK(t.pexpiretime("h") == 4102444800000);
  CHECK(t.pexpiretime("copy") == 4102444800123);
}
