// tests/test_rdb.cpp: rdb.hpp, loading Redis's RDB format, on inputs built here byte by byte.
//
// What is checked: Redis's CRC-64 check value; LZF streams (literal runs, overlapping back
// references, malformed ones); a file with every supported encoding (raw, integer and LZF
// strings; hashes as hashtable, listpack and ziplist; Redis 7.4's hashes with field TTLs, as
// hashtable with metadata and as listpack-ex) loaded with values, PEXPIRETIMEs and field
// deadlines exact; LoadAs::primary skipping past keys and fields, LoadAs::replica keeping them;
// other types refused by name or skipped and counted; other databases counted, or loaded each
// into its own store (load_rdb_databases_bytes, save_rdb_databases); and that every
// truncation and every single-byte change of the file is refused with the store unchanged.
// The files redis-server itself writes are loaded in tests/redis/test_rdb_live.cpp.
// expiring-test: one policy (loading does not depend on the expiry index)
#include <expiring/expiring.hpp>
#include <expiring/rdb.hpp>
#include <expiring/redis/value.hpp>

#include <array>
#include <cstdint>
#include <string_view>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using expiring::Errc;
using expiring::LoadAs;
using expiring::ManualClock;
using expiring::RdbInfo;
using expiring::RdbLoadOptions;
using support::T0;

namespace {

using VStore = expiring::Store<std::string, expiring::redis::Value, ManualClock&, TestPolicy>;
using SStore = expiring::Store<std::string, std::string, ManualClock&, TestPolicy>;

// ---- A writer of RDB bytes, for the tests ---------------------------------------------------

std::string len(std::uint64_t n) {
  std::string o;
  if (n < 64) {
    o.push_back(static_cast<char>(n));
  } else if (n < 16384) {
    o.push_back(static_cast<char>(0x40 | (n >> 8)));
    o.push_back(static_cast<char>(n & 0xFF));
  } else {
    o.push_back(static_cast<char>(0x80));
    for (int i = 3; i >= 0; --i) o.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  }
  return o;
}
std::string str(const std::string& s) { return len(s.size()) + s; }
std::string le(std::uint64_t v, int n) {
  std::string o;
  for (int i = 0; i < n; ++i) o.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return o;
}
// A listpack of short strings and small integers (what Redis 7 writes for small hashes).
std::string listpack(const std::vector<std::string>& items) {
  std::string body;
  for (const std::string& it : items) {
    const bool small_int = !it.empty() && it.size() <= 2 && it.find_first_not_of("0123456789") == std::string::npos &&
                           std::stoi(it) < 128 && (it.size() == 1 || it[0] != '0');
    if (small_int) {
      body.push_back(static_cast<char>(std::stoi(it)));
      body.push_back('\x01');
    } else {
      REQUIRE(it.size() < 64);
      body.push_back(static_cast<char>(0x80 | it.size()));
      body += it;
      body.push_back(static_cast<char>(1 + it.size()));
    }
  }
  std::string lp = le(6 + body.size() + 1, 4) + le(items.size(), 2) + body + "\xFF";
  return lp;
}
// A ziplist of short strings (what Redis < 7 wrote for small hashes).
std::string ziplist(const std::vector<std::string>& items) {
  std::string body;
  unsigned prev = 0;
  for (const std::string& it : items) {
    std::string e;
    e.push_back(static_cast<char>(prev));
    e.push_back(static_cast<char>(it.size()));  // 00pppppp
    e += it;
    prev = static_cast<unsigned>(e.size());
    body += e;
  }
  const std::size_t total = 10 + body.size() + 1;
  return le(total, 4) + le(10 + body.size() - prev, 4) + le(items.size(), 2) + body + "\xFF";
}
std::string finish(std::string rdb) {
  rdb.push_back('\xFF');
  return rdb + le(expiring::detail::rdb::crc64(0, rdb.data(), rdb.size()), 8);
}
// "abcabcabc...": a literal run then an overlapping back reference, as LZF writes.
std::string lzf_abc9() {
  std::string c;
  c.push_back(2);  // literal of 3
  c += "abc";
  c.push_back(static_cast<char>((4 << 5) | 0));  // back reference of 4 + 2 = 6 bytes...
  c.push_back(2);                                  // ...from 3 bytes back
  return c;
}

const std::int64_t kLater = T0 + 3'600'000;

// One file with every encoding rdb.hpp reads.
std::string sample_rdb() {
  std::string r = "REDIS0012";
  r += "\xFA" + str("redis-ver") + str("7.4.0");
  r += "\xFE" + len(0) + "\xFB" + len(9) + len(2);
  r += std::string("\x00", 1) + str("plain") + str("hello");
  r += "\xFC" + le(static_cast<std::uint64_t>(kLater), 8) + std::string("\x00", 1) + str("timed") + str("v");
  r += std::string("\x00", 1) + str("int8") + "\xC0" + le(static_cast<std::uint8_t>(-5), 1);
  r += std::string("\x00", 1) + str("int16") + "\xC1" + le(static_cast<std::uint16_t>(-1234), 2);
  r += std::string("\x00", 1) + str("int32") + "\xC2" + le(2000000000u, 4);
  r += std::string("\x00", 1) + str("lzf") + "\xC3" + len(lzf_abc9().size()) + len(9) + lzf_abc9();
  r += "\x04" + str("ht") + len(2) + str("f1") + str("v1") + str("f2") + str("v2");
  r += "\x10" + str("lp") + str(listpack({"a", "1", "b", "hello"}));
  r += "\x0D" + str("zl") + str(ziplist({"x", "y"}));
  // 7.4, hashtable with metadata: min deadline, then per field a TTL relative to it (+1; 0 none)
  r += "\x18" + str("meta") + le(static_cast<std::uint64_t>(kLater), 8) + len(2) + len(0) + str("p") + str("1") + len(11) +
       str("q") + str("2");
  // 7.4, listpack-ex: min deadline, then a listpack of (field, value, absolute deadline or 0)
  r += "\x19" + str("lpex") + le(static_cast<std::uint64_t>(kLater), 8) +
       str(listpack({"f", "v", std::to_string(kLater + 5), "g", "w", "0"}));
  r += "\xFE" + len(3) + std::string("\x00", 1) + str("elsewhere") + str("x");
  return finish(r);
}

template <class Store>
std::string text_of(Store& s, const std::string& key) {
  const expiring::redis::Value* v = s.get(key);
  if (v == nullptr) return "(none)";
  if (v->is_string()) return *v->string();
  std::vector<std::string> f;
  const auto& m = *v->hash();
  for (std::uint32_t i = 0; i < m.size(); ++i) {
    const std::int64_t d = m.deadline(i);
    f.push_back(m.at(i).name + "=" + m.at(i).value + (d == m.kNoDeadline ? "" : "@" + std::to_string(d)));
  }
  std::sort(f.begin(), f.end());
  std::string out;
  for (const auto& x : f) out += x + ";";
  return out;
}

}  // namespace

TEST_CASE("rdb: Redis's CRC-64 and LZF", "[rdb]") {
  CHECK(expiring::detail::rdb::crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9caull);
  std::string out;
  REQUIRE(expiring::detail::rdb::lzf_decompress(lzf_abc9(), 9, out));
  CHECK(out == "abcabcabc");
  CHECK_FALSE(expiring::detail::rdb::lzf_decompress(lzf_abc9(), 10, out));  // shorter than declared
  CHECK_FALSE(expiring::detail::rdb::lzf_decompress(lzf_abc9(), 8, out));   // longer than declared
  std::string far = lzf_abc9();
  far.back() = 9;  // 10 bytes back, before the start
  CHECK_FALSE(expiring::detail::rdb::lzf_decompress(far, 9, out));
  CHECK_FALSE(expiring::detail::rdb::lzf_decompress(std::string("\x05" "ab", 3), 6, out));  // a literal past the end
}

TEST_CASE("rdb: every encoding loads with its value, PEXPIRETIME and field deadlines", "[rdb]") {
  ManualClock clock{T0};
  VStore s{clock};
  const std::string rdb = sample_rdb();
  const expiring::FileResult<RdbInfo> r = expiring::load_rdb_bytes(s, rdb);
  REQUIRE(r.ok());
  CHECK(r->version == 12);
  CHECK(r->keys == 11);
  CHECK(r->other_db == 1);
  CHECK(r->bytes == rdb.size());
  REQUIRE(r->aux.size() == 1);
  CHECK(r->aux[0] == std::make_pair(std::string("redis-ver"), std::string("7.4.0")));
  CHECK(text_of(s, "plain") == "hello");
  CHECK(text_of(s, "timed") == "v");
  CHECK(s.pexpiretime("timed") == kLater);
  CHECK(s.pexpiretime("plain") == -1);
  CHECK(text_of(s, "int8") == "-5");
  CHECK(text_of(s, "int16") == "-1234");
  CHECK(text_of(s, "int32") == "2000000000");
  CHECK(text_of(s, "lzf") == "abcabcabc");
  CHECK(text_of(s, "ht") == "f1=v1;f2=v2;");
  CHECK(text_of(s, "lp") == "a=1;b=hello;");
  CHECK(text_of(s, "zl") == "x=y;");
  CHECK(text_of(s, "meta") == "p=1;q=2@" + std::to_string(kLater + 10) + ";");
  CHECK(text_of(s, "lpex") == "f=v@" + std::to_string(kLater + 5) + ";g=w;");
  CHECK(text_of(s, "elsewhere") == "(none)");

  SECTION("database 3 instead") {
    RdbLoadOptions o;
    o.db = 3;
    const auto r3 = expiring::load_rdb_bytes(s, rdb, o);
    REQUIRE(r3.ok());
    CHECK(r3->keys == 1);
    CHECK(r3->other_db == 11);
    CHECK(text_of(s, "elsewhere") == "x");
    CHECK(s.size() == 1);
  }
}

TEST_CASE("rdb: past deadlines are skipped as a primary loads, kept as a replica loads", "[rdb]") {
  ManualClock clock{kLater + 7};  // past "timed", "meta"'s q (kLater + 10 not yet) and lpex's f
  {
    VStore s{clock};
    const auto r = expiring::load_rdb_bytes(s, sample_rdb());
    REQUIRE(r.ok());
    CHECK(r->expired == 1);
    CHECK(r->expired_fields == 1);
    CHECK(text_of(s, "timed") == "(none)");
    CHECK(text_of(s, "lpex") == "g=w;");
  }
  {
    expiring::Options o;
    o.replica = true;
    VStore s{clock, o};
    RdbLoadOptions lo;
    lo.as = LoadAs::replica;
    const auto r = expiring::load_rdb_bytes(s, sample_rdb(), lo);
    REQUIRE(r.ok());
    CHECK(r->expired == 0);
    CHECK(s.size() == 11);
  }
}

TEST_CASE("rdb: lists, sets and sorted sets are refused by key and type, or skipped and counted", "[rdb]") {
  std::string r = "REDIS0010";
  r += std::string("\x00", 1) + str("s") + str("v");
  r += "\x01" + str("mylist") + len(2) + str("a") + str("b");
  r += "\x02" + str("myset") + len(1) + str("m");
  r += "\x05" + str("myzset") + len(1) + str("m") + le(0, 8);
  r += "\x11" + str("lpzset") + str(listpack({"m", "1"}));
  r += "\x12" + str("ql") + len(1) + len(2) + str(listpack({"a"}));
  const std::string rdb = finish(r);
  ManualClock clock{T0};
  VStore s{clock};
  (void)s.set("before", expiring::redis::Value(std::string("kept")));
  const auto refused = expiring::load_rdb_bytes(s, rdb);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::unsupported_type);
  CHECK(refused.error().message.find("'mylist'") != std::string::npos);
  CHECK(refused.error().message.find("list") != std::string::npos);
  CHECK(text_of(s, "before") == "kept");
  RdbLoadOptions o;
  o.skip_other_types = true;
  const auto skipped = expiring::load_rdb_bytes(s, rdb, o);
  REQUIRE(skipped.ok());
  CHECK(skipped->skipped == 5);
  CHECK(skipped->keys == 1);
  CHECK(text_of(s, "s") == "v");
  CHECK(text_of(s, "before") == "(none)");
}

TEST_CASE("rdb: a store of strings refuses a hash by name", "[rdb]") {
  ManualClock clock{T0};
  SStore s{clock};
  const auto r = expiring::load_rdb_bytes(s, sample_rdb());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::unsupported_type);
  CHECK(r.error().message.find("'ht'") != std::string::npos);
}

TEST_CASE("rdb: every truncation and every changed byte is refused with the store unchanged", "[rdb]") {
  ManualClock clock{T0};
  VStore s{clock};
  (void)s.set("before", expiring::redis::Value(std::string("kept")));
  const std::string rdb = sample_rdb();
  for (std::size_t n = 0; n < rdb.size(); ++n) {
    const auto r = expiring::load_rdb_bytes(s, std::string_view(rdb).substr(0, n));
    REQUIRE_FALSE(r.ok());
    CHECK((r.error().code == Errc::truncated_file || r.error().code == Errc::corrupt_file));
  }
  for (std::size_t i = 0; i < rdb.size(); ++i) {
    std::string bad = rdb;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    const auto r = expiring::load_rdb_bytes(s, bad);
    REQUIRE_FALSE(r.ok());  // the CRC-64 catches any change of one byte
  }
  CHECK(s.size() == 1);
  CHECK(text_of(s, "before") == "kept");
}

TEST_CASE("rdb: hostile lengths and versions", "[rdb]") {
  ManualClock clock{T0};
  VStore s{clock};
  const auto code = [&](const std::string& bytes) {
    const auto r = expiring::load_rdb_bytes(s, bytes);
    return r.ok() ? Errc{} : r.error().code;
  };
  CHECK(code("REDIS0013") == Errc::unsupported_version);
  CHECK(code("NOTRDB001") == Errc::corrupt_file);
  // A string claiming 2^32 - 1 bytes, a hash claiming 2^32 fields, an LZF claiming 4 GB out.
  CHECK(code(finish("REDIS0010" + std::string("\x00", 1) + str("k") + "\x80\xFF\xFF\xFF\xFF")) == Errc::truncated_file);
  CHECK(code(finish("REDIS0010\x04" + str("k") + "\x80\xFF\xFF\xFF\xFF")) == Errc::truncated_file);
  CHECK(code(finish("REDIS0010" + std::string("\x00", 1) + str("k") + "\xC3" + len(3) + "\x80\xFF\xFF\xFF\xF0" + "abc")) ==
        Errc::corrupt_file);
  // Two records of one key; an empty hash; module data.
  CHECK(code(finish("REDIS0010" + std::string("\x00", 1) + str("k") + str("a") + std::string("\x00", 1) + str("k") + str("b"))) ==
        Errc::corrupt_file);
  CHECK(code(finish("REDIS0010\x04" + str("k") + len(0))) == Errc::corrupt_file);
  CHECK(code(finish("REDIS0010\xF7" + len(1))) == Errc::unsupported_type);
  // A field deadline Redis's format allows (2^48 - 1 ms) but a FieldMap cannot hold (2^46 - 1).
  CHECK(code(finish("REDIS0012\x18" + str("k") + le(std::uint64_t{1} << 47, 8) + len(1) + len(1) + str("f") + str("v"))) ==
        Errc::corrupt_file);
  CHECK(s.size() == 0);
}

TEST_CASE("rdb: save_rdb() writes what load_rdb() reads back, in Redis's encodings", "[rdb]") {
  ManualClock clock{T0};
  VStore s{clock};
  using expiring::redis::Value;
  (void)s.set("int", Value(std::string("-42")));
  (void)s.set("int32", Value(std::string("2000000000")));
  (void)s.set("notint", Value(std::string("007")));
  (void)s.set("long", Value(std::string(3000, 'a') + "b"));
  (void)s.set("empty", Value(std::string()));
  (void)s.set("timed", Value(std::string("t")), expiring::PxAt{kLater});
  (void)s.hset("small", "a", "1");
  (void)s.hset("small", "b", "-5000");
  (void)s.hset("small", "c", "text");
  for (int i = 0; i < 200; ++i) (void)s.hset("big", "f" + std::to_string(i), std::to_string(i * 7));
  std::string bytes;
  const auto w = expiring::save_rdb(s, bytes);
  REQUIRE(w.ok());
  CHECK(w->version == 10);
  CHECK(bytes.compare(0, 9, "REDIS0010") == 0);
  CHECK(bytes.find(std::string("\x00", 1) + str("int") + "\xC0" + le(static_cast<std::uint8_t>(-42), 1)) != std::string::npos);
  CHECK(bytes.find("\x10" + str("small")) != std::string::npos);  // a listpack
  CHECK(bytes.find("\x04" + str("big")) != std::string::npos);    // a hashtable
  CHECK(bytes.size() < 1000 + 200 * 12);                         // the long string went in compressed
  VStore t{clock};
  const auto r = expiring::load_rdb_bytes(t, bytes);
  REQUIRE(r.ok());
  CHECK(r->keys == s.size());
  for (const char* k : {"int", "int32", "notint", "long", "empty", "timed", "small", "big"}) {
    INFO(k);
    CHECK(text_of(t, k) == text_of(s, k));
    CHECK(t.pexpiretime(k) == s.pexpiretime(k));
  }
  SECTION("a field TTL makes it version 12, with Redis 7.4's hash with metadata") {
    (void)s.hpexpireat("small", kLater + 1, std::array<std::string_view, 1>{"b"});
    std::string b12;
    REQUIRE(expiring::save_rdb(s, b12).ok());
    CHECK(b12.compare(0, 9, "REDIS0012") == 0);
    VStore u{clock};
    REQUIRE(expiring::load_rdb_bytes(u, b12).ok());
    CHECK(text_of(u, "small") == "a=1;b=-5000@" + std::to_string(kLater + 1) + ";c=text;");
  }
  SECTION("without compression the long string is raw") {
    expiring::RdbSaveOptions o;
    o.compress = false;
    std::string raw;
    REQUIRE(expiring::save_rdb(s, raw, o).ok());
    CHECK(raw.find(std::string(3000, 'a') + "b") != std::string::npos);
    VStore u{clock};
    REQUIRE(expiring::load_rdb_bytes(u, raw).ok());
    CHECK(text_of(u, "long") == text_of(s, "long"));
  }
}

TEST_CASE("rdb: several databases save and load each into its own store", "[rdb]") {
  ManualClock clock{T0};
  using expiring::redis::Value;
  VStore a{clock}, b{clock}, c{clock};
  (void)a.set("k", Value(std::string("in0")));
  (void)c.set("k", Value(std::string("in2")), expiring::PxAt{kLater});
  (void)c.hset("h", "f", "v");
  std::string bytes;
  const auto w = expiring::save_rdb_databases(std::vector<VStore*>{&a, &b, &c}, bytes);
  REQUIRE(w.ok());
  CHECK(w->keys == 3);
  // Empty database 1 is left out, as Redis leaves out its empty databases.
  CHECK(bytes.find("\xFE" + len(0)) != std::string::npos);
  CHECK(bytes.find("\xFE" + len(1)) == std::string::npos);
  CHECK(bytes.find("\xFE" + len(2)) != std::string::npos);

  VStore x{clock}, y{clock}, z{clock};
  (void)y.set("stale", Value(std::string("replaced")));
  const auto r = expiring::load_rdb_databases_bytes(std::vector<VStore*>{&x, &y, &z}, bytes);
  REQUIRE(r.ok());
  CHECK(r->keys == 3);
  CHECK(r->other_db == 0);
  CHECK(text_of(x, "k") == "in0");
  CHECK(y.size() == 0);  // a database the file does not hold is emptied
  CHECK(text_of(z, "k") == "in2");
  CHECK(z.pexpiretime("k") == kLater);
  CHECK(text_of(z, "h") == "f=v;");

  SECTION("a database past the vector or null is skipped and counted") {
    VStore only{clock};
    const auto r2 = expiring::load_rdb_databases_bytes(std::vector<VStore*>{&only, nullptr}, bytes);
    REQUIRE(r2.ok());
    CHECK(r2->keys == 1);
    CHECK(r2->other_db == 2);
  }
  SECTION("one store given twice is refused with nothing changed") {
    const auto r3 = expiring::load_rdb_databases_bytes(std::vector<VStore*>{&x, &x}, bytes);
    CHECK(r3 == Errc::out_of_range);
    CHECK(text_of(x, "k") == "in0");
  }
  SECTION("a key twice in one database is refused; once in each of two is not") {
    std::string two = "REDIS0010";
    two += "\xFE" + len(0) + std::string("\x00", 1) + str("k") + str("a");
    two += "\xFE" + len(1) + std::string("\x00", 1) + str("k") + str("b");
    VStore p{clock}, q{clock};
    REQUIRE(expiring::load_rdb_databases_bytes(std::vector<VStore*>{&p, &q}, finish(two)).ok());
    CHECK(text_of(p, "k") == "a");
    CHECK(text_of(q, "k") == "b");
    two += std::string("\x00", 1) + str("k") + str("c");
    CHECK(expiring::load_rdb_databases_bytes(std::vector<VStore*>{&p, &q}, finish(two)) == Errc::corrupt_file);
    CHECK(text_of(q, "k") == "b");
  }
}

TEST_CASE("rdb: LZF round trips on text, repeats, random bytes and the window's edge", "[rdb]") {
  std::vector<std::string> inputs = {std::string(10000, 'x'), "abcabcabcabcabcabcabcabcabcabc"};
  std::string random;
  std::uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    random.push_back(static_cast<char>(x & 0xFF));
  }
  inputs.push_back(random);
  inputs.push_back(random.substr(0, 9000) + random.substr(0, 9000));  // a repeat 9000 bytes back: past the window
  inputs.push_back(random.substr(0, 8000) + random.substr(0, 8000));  // within it
  std::vector<std::uint32_t> table;
  for (const std::string& in : inputs) {
    std::string c;
    if (!expiring::detail::rdb::lzf_compress(in, in.size() + in.size() / 16 + 64, c, table)) continue;
    std::string back;
    REQUIRE(expiring::detail::rdb::lzf_decompress(c, in.size(), back));
    CHECK(back == in);
  }
  std::string c;
  CHECK_FALSE(expiring::detail::rdb::lzf_compress(random, random.size() - 4, c, table));  // random bytes do not shrink
  CHECK(c.empty());
}
