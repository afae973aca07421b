// tests/test_snapshot.cpp: codec.hpp (Codec<T>, varints, CRC-32C) and snapshot.hpp (save()
// and load() of a whole store, in absolute time).
//
// What is checked: round trips of every built-in codec, through streams and files, with
// deadlines exact to the ms; loading later in time (semantics.md case 161: the TTL is smaller,
// PEXPIRETIME the same); LoadAs::primary skipping keys and hash fields already past their
// deadline, LoadAs::replica keeping them; clocks at the ends of int64; and that every damaged
// input (every truncation and every single-bit flip of a small snapshot, wrong magic, a future
// version, hostile lengths) is refused with the right code and offset while the store keeps
// what it had. Files go into a directory made per test (mkdtemp) and removed by RAII.
// expiring-test: one policy (a snapshot does not depend on the expiry index)
#include <expiring/expiring.hpp>
#include <expiring/redis/value.hpp>
#include <expiring/snapshot.hpp>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using expiring::Codec;
using expiring::Errc;
using expiring::FieldMap;
using expiring::FileResult;
using expiring::LoadAs;
using expiring::ManualClock;
using expiring::Px;
using expiring::PxAt;
using expiring::SnapshotInfo;
using support::kMax;
using support::kMin;
using support::T0;

namespace {

namespace fs = std::filesystem;

using SStore = expiring::Store<std::string, std::string, ManualClock&, TestPolicy>;
using IStore = expiring::Store<std::uint64_t, std::int64_t, ManualClock&, TestPolicy>;
using FM = FieldMap<std::string, std::string>;
using HStore = expiring::Store<std::string, FM, ManualClock&, TestPolicy>;
using VStore = expiring::Store<std::string, expiring::redis::Value, ManualClock&, TestPolicy>;

// A directory of its own for one test, removed with everything in it at the end (also when
// the test fails: REQUIRE throws, and the destructor runs).
struct TempDir {
  fs::path path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/expiring-snapshot-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Values as text, for comparing stores.
std::string text(const std::string& s) { return s; }
std::string text(std::int64_t v) { return std::to_string(v); }
std::string text(const FM& m) {
  std::vector<std::string> fields;
  for (std::uint32_t i = 0; i < m.size(); ++i) {
    const std::int64_t d = m.deadline(i);
    fields.push_back(m.at(i).name + "=" + m.at(i).value + "@" + (d == FM::kNoDeadline ? "-" : std::to_string(d)));
  }
  std::sort(fields.begin(), fields.end());
  std::string out = "{";
  for (const std::string& f : fields) out += f + ";";
  return out + "}";
}
std::string text(const expiring::redis::Value& v) {
  return v.is_hash() ? "hash" + text(*v.hash()) : "string:" + *v.string();
}

// Everything stored, stale keys included: sorted (key, value, pexpiretime).
template <class Store>
std::vector<std::tuple<typename Store::key_type, std::string, std::optional<std::int64_t>>> stored(const Store& s) {
  std::vector<std::tuple<typename Store::key_type, std::string, std::optional<std::int64_t>>> out;
  s.visit_stored([&](const typename Store::key_type& k, const typename Store::mapped_type& v,
                     const std::optional<std::int64_t>& deadline) { out.emplace_back(k, text(v), deadline); });
  std::sort(out.begin(), out.end());
  return out;
}

template <class Store>
std::string bytes_of(const Store& s) {
  std::ostringstream os;
  const FileResult<SnapshotInfo> r = expiring::save(s, os);
  REQUIRE(r.ok());
  CHECK(r->bytes == os.str().size());
  return os.str();
}
template <class Store>
FileResult<SnapshotInfo> load_stream(Store& s, const std::string& bytes, LoadAs as = LoadAs::primary) {
  std::istringstream is(bytes);
  return expiring::load(s, is, as);
}

// A snapshot built by hand (for inputs save() never writes), with a correct checksum.
struct Crafted {
  std::string b;
  explicit Crafted(std::uint64_t count, std::uint16_t version = 1, std::uint16_t flags = 0, std::int64_t created = T0) {
    b.append("\x89"
             "EXPSNAP",
             8);
    expiring::codec::put_le(b, version, 2);
    expiring::codec::put_le(b, flags, 2);
    expiring::codec::put_i64(b, created);
    expiring::codec::put_le(b, count, 8);
  }
  // A record with a body length of its own choosing.
  Crafted& record(unsigned char kind, const std::string& body, std::uint64_t claimed) {
    b.push_back(static_cast<char>(kind));
    expiring::codec::put_varint(b, claimed);
    b += body;
    return *this;
  }
  Crafted& record(unsigned char kind, const std::string& body) { return record(kind, body, body.size()); }
  std::string finish(std::uint64_t count) {
    std::string out = b;
    out.push_back('\xFF');
    expiring::codec::put_le(out, count, 8);
    expiring::codec::put_le(out, expiring::detail::crc32c(out.data(), out.size()), 4);
    return out;
  }
};
std::string str_body(const std::string& key, const std::string& value) {
  std::string body;
  Codec<std::string>::encode(key, body);
  Codec<std::string>::encode(value, body);
  return body;
}

// A small store of every kind of record, and another to load over (it must survive a refusal).
void fill_small(SStore& s) {
  REQUIRE(s.set("a", "1") == true);
  REQUIRE(s.set("bb", "twenty-two", Px{5000}) == true);
  REQUIRE(s.set(std::string("nul\0key", 7), std::string(130, 'x')) == true);  // a 2-byte body length
}
void fill_other(SStore& s) {
  REQUIRE(s.set("other", "keep me") == true);
  REQUIRE(s.set("timed", "me too", Px{100000}) == true);
}

}  // namespace

// ---- codec.hpp ---------------------------------------------------------------------------

TEST_CASE("snapshot: CRC-32C matches the standard check value", "[snapshot][codec]") {
  CHECK(expiring::detail::crc32c("123456789", 9) == 0xE3069283u);
  CHECK(expiring::detail::crc32c("", 0) == 0u);
  // Slicing by 8 and byte by byte agree, at every length and alignment.
  std::string data;
  for (int i = 0; i < 100; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  for (std::size_t len = 0; len <= data.size(); ++len) {
    std::uint32_t slow = ~0u;
    for (std::size_t i = 0; i < len; ++i) slow = expiring::detail::crc32c_update(slow, data.data() + i, 1);
    CHECK(~slow == expiring::detail::crc32c(data.data(), len));
  }
}

TEST_CASE("snapshot: CRC-32C of a value from a register equals the CRC of its bytes", "[snapshot][codec]") {
  // crc32c_le() (the log's records take their CRC from the values they store) against
  // crc32c_update() over the same little-endian bytes, for every width and edge values.
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0x80}, std::uint64_t{0x0123456789ABCDEF},
                                std::numeric_limits<std::uint64_t>::max(), std::uint64_t{1} << 63}) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
      for (const std::uint32_t state : {~0u, 0u, 0xE3069283u}) {
        char b[8];
        expiring::codec::store_le(b, v, n);
        CHECK(expiring::detail::crc32c_le(state, v, n) == expiring::detail::crc32c_update(state, b, n));
      }
    }
  }
}

TEST_CASE("snapshot: varints round trip and refuse malformed input", "[snapshot][codec]") {
  using namespace expiring::codec;
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{127}, std::uint64_t{128},
                                std::uint64_t{16383}, std::uint64_t{16384}, std::uint64_t{1} << 63,
                                std::numeric_limits<std::uint64_t>::max()}) {
    std::string b;
    put_varint(b, v);
    CHECK(b.size() == varint_size(v));
    b += "rest";
    std::string_view in = b;
    std::uint64_t got = 0;
    REQUIRE(get_varint(in, got));
    CHECK(got == v);
    CHECK(in == "rest");
  }
  const auto refused = [](std::string b) {
    std::string_view in = b;
    std::uint64_t v = 0;
    const bool ok = get_varint(in, v);
    return !ok && in.size() == b.size();  // and nothing consumed
  };
  CHECK(refused(""));
  CHECK(refused("\x80"));                                              // short
  CHECK(refused(std::string("\x80\x00", 2)));                          // not the shortest form
  CHECK(refused("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x02"));          // beyond 64 bits
  CHECK(refused("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"));      // 11 bytes
}

TEST_CASE("snapshot: built-in codecs round trip", "[snapshot][codec]") {
  const auto round_trip = [](const auto& v) {
    using T = std::decay_t<decltype(v)>;
    std::string b;
    Codec<T>::encode(v, b);
    std::string_view in = b;
    T out{};
    REQUIRE(Codec<T>::decode(in, out));
    CHECK(in.empty());
    // Every shorter input is refused.
    for (std::size_t n = 0; n < b.size(); ++n) {
      std::string_view short_in(b.data(), n);
      T x{};
      CHECK_FALSE(Codec<T>::decode(short_in, x));
    }
    return out;
  };
  SECTION("strings") {
    CHECK(round_trip(std::string()) == "");
    CHECK(round_trip(std::string("hello")) == "hello");
    const std::string binary("a\0b\xff", 4);
    CHECK(round_trip(binary) == binary);
    const std::string big(100000, 'z');
    CHECK(round_trip(big) == big);
  }
  SECTION("integers, bool and enums: fixed width, little-endian") {
    CHECK(round_trip(std::int8_t{-128}) == -128);
    CHECK(round_trip(std::uint16_t{65535}) == 65535);
    CHECK(round_trip(std::int32_t{-2}) == -2);
    CHECK(round_trip(kMin) == kMin);
    CHECK(round_trip(kMax) == kMax);
    CHECK(round_trip(std::numeric_limits<std::uint64_t>::max()) == std::numeric_limits<std::uint64_t>::max());
    CHECK(round_trip(true) == true);
    CHECK(round_trip(false) == false);
    enum class Colour : std::uint8_t { red = 1, blue = 200 };
    CHECK(round_trip(Colour::blue) == Colour::blue);
    std::string b;
    Codec<std::int32_t>::encode(0x01020304, b);
    CHECK(b == std::string("\x04\x03\x02\x01", 4));
    std::string_view two("\x02", 1);
    bool flag = false;
    CHECK_FALSE(Codec<bool>::decode(two, flag));
  }
  SECTION("floating point: the bit pattern") {
    CHECK(round_trip(1.5) == 1.5);
    CHECK(round_trip(-0.25f) == -0.25f);
    const double neg_zero = round_trip(-0.0);
    CHECK(std::signbit(neg_zero));
    CHECK(std::isnan(round_trip(std::numeric_limits<double>::quiet_NaN())));
    CHECK(round_trip(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
  }
  SECTION("FieldMap: fields with and without deadlines") {
    FM m;
    m.assign(std::string("plain"), std::string("v1"));
    const std::uint32_t t = m.assign(std::string("timed"), std::string("v2")).first;
    m.set_deadline(t, T0 + 500);
    const std::uint32_t z = m.assign(std::string("zero"), std::string("")).first;
    m.set_deadline(z, 0);
    const std::uint32_t c = m.assign(std::string("cap"), std::string("v4")).first;
    m.set_deadline(c, FM::kMaxDeadline);
    const FM out = round_trip(m);
    CHECK(text(out) == text(m));
    CHECK(out.volatile_count() == 3);
    // A hash with no field is not a state a store saves (issue 30): it encodes, but does not
    // decode.
    std::string empty;
    Codec<FM>::encode(FM(), empty);
    CHECK(empty == std::string(1, '\0'));
    std::string_view in = empty;
    FM none;
    CHECK_FALSE(Codec<FM>::decode(in, none));
  }
  SECTION("FieldMap: many fields (past the small-hash threshold)") {
    FM m;
    for (int i = 0; i < 1000; ++i) {
      const std::uint32_t pos = m.assign("f" + std::to_string(i), "v" + std::to_string(i)).first;
      if (i % 3 == 0) m.set_deadline(pos, T0 + i);
    }
    std::string b;
    Codec<FM>::encode(m, b);
    std::string_view in = b;
    FM out;
    REQUIRE(Codec<FM>::decode(in, out));
    CHECK(text(out) == text(m));
  }
  SECTION("redis::Value: a string or a hash") {
    const expiring::redis::Value s(std::string("str"));
    CHECK(text(round_trip(s)) == "string:str");
    expiring::redis::Hash h;
    const std::uint32_t pos = h.assign(std::string("f"), std::string("v")).first;
    h.set_deadline(pos, T0);
    const expiring::redis::Value hv(std::move(h));
    CHECK(text(round_trip(hv)) == "hash{f=v@1000000;}");
  }
}

TEST_CASE("snapshot: codecs refuse malformed input without allocating for it", "[snapshot][codec]") {
  // A length of 2^60 is checked against the bytes that remain before anything is allocated
  // (under ASan an allocation that large aborts the test; without it, it would throw).
  std::string b;
  expiring::codec::put_varint(b, std::uint64_t{1} << 60);
  b += "abc";
  {
    std::string_view in = b;
    std::string out;
    CHECK_FALSE(Codec<std::string>::decode(in, out));
    CHECK(in.size() == b.size());
  }
  {
    std::string_view in = b;
    FM out;
    CHECK_FALSE(Codec<FM>::decode(in, out));  // a field count of 2^60
  }
  SECTION("a FieldMap with a name twice") {
    std::string m;
    expiring::codec::put_varint(m, 2);
    for (int i = 0; i < 2; ++i) {
      Codec<std::string>::encode("same", m);
      Codec<std::string>::encode("v", m);
      expiring::codec::put_varint(m, 0);
    }
    std::string_view in = m;
    FM out;
    CHECK_FALSE(Codec<FM>::decode(in, out));
  }
  SECTION("a FieldMap deadline beyond 2^46 - 1 ms") {
    std::string m;
    expiring::codec::put_varint(m, 1);
    Codec<std::string>::encode("f", m);
    Codec<std::string>::encode("v", m);
    expiring::codec::put_varint(m, static_cast<std::uint64_t>(FM::kMaxDeadline) + 2);
    std::string_view in = m;
    FM out;
    CHECK_FALSE(Codec<FM>::decode(in, out));
  }
  SECTION("a redis::Value with an unknown tag") {
    std::string_view in("\x07\x01x", 3);
    expiring::redis::Value out;
    CHECK_FALSE(Codec<expiring::redis::Value>::decode(in, out));
  }
}

// ---- Round trips -------------------------------------------------------------------------

TEST_CASE("snapshot: strings round trip through a file with deadlines exact to the ms", "[snapshot]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore s{clock};
  fill_small(s);
  REQUIRE(s.set("at", "absolute", PxAt{T0 + 123457}) == true);
  REQUIRE(s.set("empty", "") == true);
  const std::string path = dir.file("dump.snap");
  const FileResult<SnapshotInfo> w = expiring::save(s, path);
  REQUIRE(w.ok());
  CHECK(w->keys == 5);
  CHECK(w->expired == 0);
  CHECK(w->created_ms == T0);
  CHECK(w->bytes == fs::file_size(path));

  ManualClock clock2{T0};
  SStore t{clock2};
  const FileResult<SnapshotInfo> r = expiring::load(t, path);
  REQUIRE(r.ok());
  CHECK(r->keys == 5);
  CHECK(r->expired == 0);
  CHECK(r->created_ms == T0);
  CHECK(r->bytes == w->bytes);
  CHECK(stored(t) == stored(s));
  CHECK(t.pexpiretime("bb") == T0 + 5000);
  CHECK(t.pexpiretime("at") == T0 + 123457);
  CHECK(t.pexpiretime("a") == -1);
  CHECK(t.expires_size() == 2);
  CHECK(support::show(t.get("empty")) == "");
  CHECK(t.check_invariants());
  // The same bytes through a stream.
  CHECK(bytes_of(s) == read_file(path));
}

TEST_CASE("snapshot: integer keys and values round trip", "[snapshot]") {
  ManualClock clock{T0};
  IStore s{clock};
  for (int i = 0; i < 300; ++i) {
    const auto k = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    if (i % 2 == 0) {
      REQUIRE(s.set(k, std::int64_t{-i}, Px{1000 + i}) == true);
    } else {
      REQUIRE(s.set(k, kMin + i) == true);
    }
  }
  IStore t{clock};
  REQUIRE(t.set(std::uint64_t{7}, std::int64_t{7}) == true);  // replaced by the load
  REQUIRE(load_stream(t, bytes_of(s)).ok());
  CHECK(stored(t) == stored(s));
  CHECK(t.size() == 300);
  CHECK(t.check_invariants());
}

TEST_CASE("snapshot: hashes round trip with their field deadlines", "[snapshot][hash_fields]") {
  ManualClock clock{T0};
  HStore s{clock};
  REQUIRE(s.hset("h", "f1", "v1").ok());
  REQUIRE(s.hset("h", "f2", "v2").ok());
  REQUIRE(s.hset("h", "f3", "v3").ok());
  REQUIRE(s.hpexpireat("h", T0 + 1500, {"f1"}) == std::vector<int>{1});
  REQUIRE(s.hpexpireat("h", FM::kMaxDeadline, {"f3"}) == std::vector<int>{1});
  REQUIRE(s.hset("timed-key", "x", "y").ok());
  REQUIRE(s.pexpire("timed-key", 9000) == true);
  for (int i = 0; i < 500; ++i) REQUIRE(s.hset("big", "field" + std::to_string(i), std::to_string(i)).ok());
  for (int i = 0; i < 500; i += 7) {
    REQUIRE(s.hpexpireat("big", T0 + 10 * i + 1, {"field" + std::to_string(i)}) == std::vector<int>{1});
  }

  HStore t{clock};
  const FileResult<SnapshotInfo> r = load_stream(t, bytes_of(s));
  REQUIRE(r.ok());
  CHECK(r->keys == 3);
  CHECK(stored(t) == stored(s));
  CHECK(t.hpexpiretime("h", {"f1", "f2", "f3"}) == std::vector<std::int64_t>{T0 + 1500, -1, FM::kMaxDeadline});
  CHECK(t.pexpiretime("timed-key") == T0 + 9000);
  // Loaded hashes hash their fields with the loading store's own hasher.
  REQUIRE(t.peek("h") != nullptr);
  CHECK(t.peek("h")->hash_function() == t.field_hash_function());
  // And they expire as any: f1 at T0 + 1500.
  clock.set(T0 + 1501);
  CHECK(t.hlen("h") == std::size_t{2});
  CHECK(t.check_invariants());
}

TEST_CASE("snapshot: redis::Value stores round trip strings and hashes", "[snapshot][hash_fields]") {
  ManualClock clock{T0};
  VStore s{clock};
  REQUIRE(s.set("s", expiring::redis::Value("a string"), Px{700}) == true);
  REQUIRE(s.hset("h", "f", "v").ok());
  REQUIRE(s.hset("h", "g", "w").ok());
  REQUIRE(s.hpexpireat("h", T0 + 50, {"g"}) == std::vector<int>{1});
  VStore t{clock};
  REQUIRE(load_stream(t, bytes_of(s)).ok());
  CHECK(stored(t) == stored(s));
  REQUIRE(t.peek("h") != nullptr);
  REQUIRE(t.peek("h")->hash() != nullptr);
  CHECK(t.peek("h")->hash()->hash_function() == t.field_hash_function());
  CHECK(t.pexpiretime("s") == T0 + 700);
  CHECK(t.check_invariants());
}

TEST_CASE("snapshot: an empty store, and a load replaces what the store held", "[snapshot]") {
  ManualClock clock{T0};
  SStore empty{clock};
  const std::string b = bytes_of(empty);
  CHECK(b.size() == 28 + 13);
  SStore t{clock};
  fill_other(t);
  const FileResult<SnapshotInfo> r = load_stream(t, b);
  REQUIRE(r.ok());
  CHECK(r->keys == 0);
  CHECK(t.size() == 0);
  CHECK(t.expires_size() == 0);
  CHECK(t.check_invariants());
}

TEST_CASE("snapshot: loaded later, the TTL is smaller and PEXPIRETIME the same (semantics.md case 161)",
          "[snapshot]") {
  ManualClock clock{T0};
  SStore s{clock};
  REQUIRE(s.set("k", "v", expiring::Ex{100}) == true);
  const std::string b = bytes_of(s);
  ManualClock later{T0 + 2000};
  SStore t{later};
  REQUIRE(load_stream(t, b).ok());
  CHECK(t.ttl("k") == 98);
  CHECK(t.pttl("k") == 98000);
  CHECK(t.pexpiretime("k") == T0 + 100000);
  later.set(T0 + 100001);
  CHECK(t.get("k") == nullptr);
}

// ---- Keys past their deadline ------------------------------------------------------------

TEST_CASE("snapshot: a primary load skips keys already past their deadline and counts them", "[snapshot]") {
  ManualClock clock{T0};
  SStore s{clock};
  REQUIRE(s.set("a", "persistent") == true);
  REQUIRE(s.set("b", "short", Px{100}) == true);
  REQUIRE(s.set("c", "long", Px{1000}) == true);
  const std::string b = bytes_of(s);

  SECTION("after b's deadline") {
    ManualClock later{T0 + 500};
    SStore t{later};
    const FileResult<SnapshotInfo> r = load_stream(t, b);
    REQUIRE(r.ok());
    CHECK(r->keys == 2);
    CHECK(r->expired == 1);
    CHECK(t.size() == 2);
    CHECK(t.peek("b") == nullptr);
    CHECK(t.pexpiretime("c") == T0 + 1000);
  }
  SECTION("at b's deadline exactly: not yet stale (now > deadline)") {
    ManualClock at{T0 + 100};
    SStore t{at};
    const FileResult<SnapshotInfo> r = load_stream(t, b);
    REQUIRE(r.ok());
    CHECK(r->keys == 3);
    CHECK(r->expired == 0);
    CHECK(t.pexpiretime("b") == T0 + 100);
  }
  SECTION("after every deadline") {
    ManualClock much_later{T0 + 5000};
    SStore t{much_later};
    const FileResult<SnapshotInfo> r = load_stream(t, b);
    REQUIRE(r.ok());
    CHECK(r->keys == 1);
    CHECK(r->expired == 2);
    CHECK(stored(t) == decltype(stored(t)){{"a", "persistent", std::nullopt}});
  }
}

TEST_CASE("snapshot: a replica load keeps keys already past their deadline", "[snapshot]") {
  ManualClock clock{T0};
  SStore s{clock};
  REQUIRE(s.set("a", "persistent") == true);
  REQUIRE(s.set("b", "short", Px{100}) == true);
  const std::string b = bytes_of(s);
  ManualClock later{T0 + 500};
  SStore t{later};
  const FileResult<SnapshotInfo> r = load_stream(t, b, LoadAs::replica);
  REQUIRE(r.ok());
  CHECK(r->keys == 2);
  CHECK(r->expired == 0);
  CHECK(t.size() == 2);
  CHECK(stored(t) == stored(s));  // b is stored, with its deadline
  CHECK(t.peek("b") == nullptr);  // and stale: invisible
  CHECK(t.check_invariants());

  SECTION("in a store built as a replica, it stays until a DEL") {
    expiring::Options o;
    o.replica = true;
    SStore rep{later, o};
    REQUIRE(load_stream(rep, b, LoadAs::replica).ok());
    CHECK(rep.get("b") == nullptr);
    CHECK(rep.size() == 2);
    const std::string key = "b";
    CHECK(rep.apply(expiring::Change<std::string, std::string>{expiring::ChangeOp::del, &key}) == true);
    CHECK(rep.size() == 1);
  }
}

TEST_CASE("snapshot: keys stale but not yet reclaimed are saved with their deadline", "[snapshot]") {
  ManualClock clock{T0};
  SStore s{clock};
  REQUIRE(s.set("live", "v") == true);
  REQUIRE(s.set("stale", "v", Px{100}) == true);
  clock.set(T0 + 200);
  REQUIRE(s.size() == 2);  // nothing touched it
  const std::string b = bytes_of(s);
  SStore replica{clock};
  const FileResult<SnapshotInfo> r1 = load_stream(replica, b, LoadAs::replica);
  REQUIRE(r1.ok());
  CHECK(r1->created_ms == T0 + 200);
  CHECK(stored(replica) == stored(s));
  SStore primary{clock};
  const FileResult<SnapshotInfo> r2 = load_stream(primary, b);
  REQUIRE(r2.ok());
  CHECK(r2->keys == 1);
  CHECK(r2->expired == 1);
  CHECK(primary.size() == 1);
}

TEST_CASE("snapshot: a primary load skips hash fields past their deadline, and hashes left empty",
          "[snapshot][hash_fields]") {
  ManualClock clock{T0};
  HStore s{clock};
  REQUIRE(s.hset("h", "keep", "1").ok());
  REQUIRE(s.hset("h", "gone", "2").ok());
  REQUIRE(s.hpexpireat("h", T0 + 100, {"gone"}) == std::vector<int>{1});
  REQUIRE(s.hset("all-gone", "x", "3").ok());
  REQUIRE(s.hpexpireat("all-gone", T0 + 100, {"x"}) == std::vector<int>{1});
  const std::string b = bytes_of(s);
  ManualClock later{T0 + 200};
  SECTION("primary") {
    HStore t{later};
    const FileResult<SnapshotInfo> r = load_stream(t, b);
    REQUIRE(r.ok());
    CHECK(r->keys == 1);
    CHECK(r->expired == 1);
    CHECK(r->expired_fields == 2);
    CHECK(stored(t) == decltype(stored(t)){{"h", "{keep=1@-;}", std::nullopt}});
  }
  SECTION("replica") {
    HStore t{later};
    const FileResult<SnapshotInfo> r = load_stream(t, b, LoadAs::replica);
    REQUIRE(r.ok());
    CHECK(r->keys == 2);
    CHECK(r->expired_fields == 0);
    CHECK(stored(t) == stored(s));
  }
}

// ---- The ends of time --------------------------------------------------------------------

TEST_CASE("snapshot: clocks near INT64_MIN and INT64_MAX, deadlines far in the future", "[snapshot]") {
  SECTION("near INT64_MIN") {
    ManualClock clock{kMin + 10};
    SStore s{clock};
    REQUIRE(s.set("p", "persistent") == true);
    REQUIRE(s.set("soon", "v", Px{5}) == true);
    REQUIRE(s.set("far", "v", PxAt{kMax - 1}) == true);
    const std::string b = bytes_of(s);
    SStore t{clock};
    const FileResult<SnapshotInfo> r = load_stream(t, b);
    REQUIRE(r.ok());
    CHECK(r->created_ms == kMin + 10);
    CHECK(stored(t) == stored(s));
    CHECK(std::get<2>(stored(t)[2]) == kMin + 15);  // "soon" (sorted last), exact
    ManualClock later{kMin + 16};
    SStore u{later};
    const FileResult<SnapshotInfo> r2 = load_stream(u, b);
    REQUIRE(r2.ok());
    CHECK(r2->expired == 1);
    CHECK(u.size() == 2);
  }
  SECTION("near INT64_MAX, a deadline of INT64_MAX included") {
    ManualClock clock{kMax - 10};
    SStore s{clock};
    REQUIRE(s.set("max", "v", Px{10}) == true);  // deadline INT64_MAX
    REQUIRE(s.set("before", "v", Px{5}) == true);
    REQUIRE(s.set("p", "v") == true);
    REQUIRE(s.pexpiretime("max") == kMax);
    const std::string b = bytes_of(s);
    SStore t{clock};
    REQUIRE(load_stream(t, b).ok());
    CHECK(stored(t) == stored(s));
    CHECK(t.pexpiretime("max") == kMax);
    CHECK(t.check_invariants());
    // At INT64_MAX itself "before" is stale and "max" is not (no reading is after it).
    ManualClock end{kMax};
    SStore u{end};
    const FileResult<SnapshotInfo> r = load_stream(u, b);
    REQUIRE(r.ok());
    CHECK(r->expired == 1);
    CHECK(u.peek("max") != nullptr);
    CHECK(u.peek("before") == nullptr);
    CHECK(u.size() == 2);
  }
  SECTION("a deadline of exactly -1 ms is a deadline, not \"no TTL\"") {
    ManualClock clock{-100};
    SStore s{clock};
    REQUIRE(s.set("k", "v") == true);
    REQUIRE(s.pexpireat("k", -1) == true);
    REQUIRE(*std::get<2>(stored(s)[0]) == -1);  // PEXPIRETIME answers 0 for it; the store holds -1
    const std::string b = bytes_of(s);
    SStore t{clock};
    REQUIRE(load_stream(t, b).ok());
    CHECK(stored(t) == stored(s));
    REQUIRE(std::get<2>(stored(t)[0]).has_value());
    CHECK(*std::get<2>(stored(t)[0]) == -1);
    ManualClock after{0};
    SStore u{after};
    expiring::Options o;
    o.replica = true;
    SStore replica{after, o};
    REQUIRE(load_stream(replica, b, expiring::LoadAs::replica).ok());
    CHECK(replica.size() == 1);
    CHECK(replica.get("k") == nullptr);  // stale on the replica, not made persistent
  }
  SECTION("deadlines far in the future at an ordinary time") {
    ManualClock clock{T0};
    SStore s{clock};
    REQUIRE(s.set("a", "v", PxAt{kMax - 1}) == true);
    REQUIRE(s.set("b", "v", PxAt{std::int64_t{1} << 62}) == true);
    SStore t{clock};
    REQUIRE(load_stream(t, bytes_of(s)).ok());
    CHECK(t.pexpiretime("a") == kMax - 1);
    CHECK(t.pexpiretime("b") == std::int64_t{1} << 62);
  }
}

// ---- Damaged input -----------------------------------------------------------------------

TEST_CASE("snapshot: every truncation of a small snapshot is refused and the store keeps its keys",
          "[snapshot][robustness]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore s{clock};
  fill_small(s);
  const std::string b = bytes_of(s);
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  const std::string path = dir.file("cut.snap");
  for (std::size_t len = 0; len < b.size(); ++len) {
    CAPTURE(len);
    const std::string cut = b.substr(0, len);
    const FileResult<SnapshotInfo> r = load_stream(t, cut);
    REQUIRE_FALSE(r.ok());
    CHECK((r.code() == Errc::truncated_file || r.code() == Errc::corrupt_file));
    CHECK(r.error().offset <= len);
    CHECK(r.error().message.rfind("snapshot: ", 0) == 0);
    write_file(path, cut);
    const FileResult<SnapshotInfo> f = expiring::load(t, path);
    REQUIRE_FALSE(f.ok());
    CHECK((f.code() == Errc::truncated_file || f.code() == Errc::corrupt_file));
    CHECK(f.error().offset <= len);
    REQUIRE(stored(t) == before);
  }
  // The cuts of this snapshot are all told as truncations, with the offset where it ends.
  const FileResult<SnapshotInfo> r = load_stream(t, b.substr(0, 29));
  CHECK(r == Errc::truncated_file);
  CHECK(r.error().offset == 29);
  CHECK(r.error().message == "snapshot: truncated at offset 29: record 1 of 3 at offset 28 is incomplete");
  CHECK(load_stream(t, b.substr(0, b.size() - 4)) == Errc::truncated_file);
  CHECK(stored(t) == before);
  CHECK(t.check_invariants());
}

TEST_CASE("snapshot: every single-bit flip and byte inversion of a small snapshot is refused",
          "[snapshot][robustness]") {
  ManualClock clock{T0};
  SStore s{clock};
  fill_small(s);
  const std::string b = bytes_of(s);
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  for (std::size_t pos = 0; pos < b.size(); ++pos) {
    for (const unsigned mask : {0x01u, 0x02u, 0x04u, 0x08u, 0x10u, 0x20u, 0x40u, 0x80u, 0xFFu}) {
      CAPTURE(pos, mask);
      std::string bad = b;
      bad[pos] = static_cast<char>(static_cast<unsigned char>(bad[pos]) ^ mask);
      const FileResult<SnapshotInfo> r = load_stream(t, bad);
      REQUIRE_FALSE(r.ok());
      CHECK((r.code() == Errc::corrupt_file || r.code() == Errc::truncated_file ||
             r.code() == Errc::unsupported_version));
      CHECK(r.error().offset <= bad.size());
      REQUIRE(stored(t) == before);
    }
  }
  // A flip in the checksum itself names the checksum.
  std::string bad = b;
  bad[b.size() - 1] = static_cast<char>(bad[b.size() - 1] ^ 0x10);
  const FileResult<SnapshotInfo> r = load_stream(t, bad);
  CHECK(r == Errc::corrupt_file);
  CHECK(r.error().offset == b.size() - 4);
  CHECK(r.error().message.find("snapshot: checksum mismatch at offset " + std::to_string(b.size() - 4)) == 0);
}

TEST_CASE("snapshot: a wrong magic, a future version and unknown flags are refused", "[snapshot][robustness]") {
  ManualClock clock{T0};
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  SECTION("wrong magic") {
    const FileResult<SnapshotInfo> r = load_stream(t, "REDIS0011 and more bytes than a header has, surely");
    CHECK(r == Errc::corrupt_file);
    CHECK(r.error().offset == 0);
    CHECK(r.error().message.find("bad magic") != std::string::npos);
    CHECK(load_stream(t, "R") == Errc::corrupt_file);  // even before a whole header
  }
  SECTION("a future version") {
    const FileResult<SnapshotInfo> r = load_stream(t, Crafted(0, 2).finish(0));
    CHECK(r == Errc::unsupported_version);
    CHECK(r.error().offset == 8);
    CHECK(r.error().message.find("format version 2") != std::string::npos);
    CHECK(load_stream(t, Crafted(0, 2).b.substr(0, 10)) == Errc::unsupported_version);  // cut after it
  }
  SECTION("unknown flags") {
    const FileResult<SnapshotInfo> r = load_stream(t, Crafted(0, 1, 0x0004).finish(0));
    CHECK(r == Errc::unsupported_version);
    CHECK(r.error().offset == 10);
  }
  SECTION("a well-formed crafted snapshot loads (the control)") {
    Crafted c(1);
    c.record(0x01, str_body("k", "v"));
    REQUIRE(load_stream(t, c.finish(1)).ok());
    CHECK(stored(t) == decltype(stored(t)){{"k", "v", std::nullopt}});
    return;
  }
  CHECK(stored(t) == before);
}

TEST_CASE("snapshot: records the format does not allow are refused", "[snapshot][robustness]") {
  ManualClock clock{T0};
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  const auto refused = [&](const std::string& bytes, Errc code) {
    const FileResult<SnapshotInfo> r = load_stream(t, bytes);
    CHECK(r == code);
    CHECK(r.error().offset <= bytes.size());
    CHECK(stored(t) == before);
    return r.error().message;
  };
  SECTION("an unknown record kind") {
    Crafted c(1);
    c.record(0x03, str_body("k", "v"));
    CHECK(refused(c.finish(1), Errc::corrupt_file).find("unknown record kind") != std::string::npos);
    Crafted z(1);
    z.record(0x00, str_body("k", "v"));
    refused(z.finish(1), Errc::corrupt_file);
  }
  SECTION("bytes left over after the value") {
    Crafted c(1);
    c.record(0x01, str_body("k", "v") + "x");
    CHECK(refused(c.finish(1), Errc::corrupt_file).find("left over") != std::string::npos);
  }
  SECTION("a key or value that does not decode within its record") {
    Crafted c(1);
    c.record(0x01, std::string("\x05k", 2));
    CHECK(refused(c.finish(1), Errc::corrupt_file).find("the key does not decode") != std::string::npos);
  }
  SECTION("a timed record too short for its deadline") {
    Crafted c(1);
    c.record(0x02, "1234");
    refused(c.finish(1), Errc::corrupt_file);
  }
  SECTION("counts that disagree") {
    Crafted more(1);
    more.record(0x01, str_body("k", "v")).record(0x01, str_body("k2", "v"));
    refused(more.finish(2), Errc::corrupt_file);  // more records than the header announces
    Crafted fewer(2);
    fewer.record(0x01, str_body("k", "v"));
    refused(fewer.finish(1), Errc::corrupt_file);
    Crafted end(1);
    end.record(0x01, str_body("k", "v"));
    refused(end.finish(7), Errc::corrupt_file);  // the end marker's count
  }
  SECTION("a snapshot of other types") {
    SStore s{clock};
    fill_small(s);
    IStore ints{clock};
    const FileResult<SnapshotInfo> r = load_stream(ints, bytes_of(s));
    CHECK(r == Errc::corrupt_file);
    CHECK(ints.size() == 0);
  }
}

TEST_CASE("snapshot: hostile lengths are refused without allocating for them", "[snapshot][robustness]") {
  // Each would ask for 2^60 bytes or elements if it were believed (under ASan such an
  // allocation aborts the run; without it, it throws).
  TempDir dir;
  ManualClock clock{T0};
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  const std::uint64_t huge = std::uint64_t{1} << 60;
  SECTION("a record length of 2^60, from a stream and from a file") {
    Crafted c(1);
    c.record(0x01, str_body("k", "v"), huge);
    const std::string bytes = c.finish(1);
    const FileResult<SnapshotInfo> r = load_stream(t, bytes);
    CHECK(r == Errc::truncated_file);
    CHECK(r.error().offset <= bytes.size());
    write_file(dir.file("h.snap"), bytes);
    const FileResult<SnapshotInfo> f = expiring::load(t, dir.file("h.snap"));
    CHECK(f == Errc::truncated_file);
    CHECK(f.error().offset == bytes.size());
    CHECK(f.error().message.find("claims 1152921504606846976 bytes") != std::string::npos);
  }
  SECTION("a string length of 2^60 inside a record") {
    std::string body;
    expiring::codec::put_varint(body, huge);
    body += "k";
    Crafted c(1);
    c.record(0x01, body);
    CHECK(load_stream(t, c.finish(1)) == Errc::corrupt_file);
  }
  SECTION("a header count of 2^60") {
    Crafted c(huge);
    c.record(0x01, str_body("k", "v"));
    CHECK(load_stream(t, c.finish(1)) == Errc::corrupt_file);
    write_file(dir.file("c.snap"), c.finish(1));
    CHECK(expiring::load(t, dir.file("c.snap")) == Errc::corrupt_file);
  }
  SECTION("a hash field count of 2^60") {
    HStore h{clock};
    std::string body;
    Codec<std::string>::encode("h", body);
    expiring::codec::put_varint(body, huge);
    Crafted c(1);
    c.record(0x01, body);
    CHECK(load_stream(h, c.finish(1)) == Errc::corrupt_file);
  }
  CHECK(stored(t) == before);
}

// ---- Files -------------------------------------------------------------------------------

TEST_CASE("snapshot: a save leaves no temporary file and replaces the old snapshot", "[snapshot][files]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore a{clock};
  fill_small(a);
  SStore b{clock};
  fill_other(b);
  const std::string path = dir.file("dump.snap");
  REQUIRE(expiring::save(a, path).ok());
  CHECK(dir.entries() == std::vector<std::string>{"dump.snap"});
  REQUIRE(expiring::save(b, path).ok());
  CHECK(dir.entries() == std::vector<std::string>{"dump.snap"});
  SStore t{clock};
  REQUIRE(expiring::load(t, path).ok());
  CHECK(stored(t) == stored(b));
}

TEST_CASE("snapshot: save failures are io_error and leave nothing behind", "[snapshot][files]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore s{clock};
  fill_small(s);
  SECTION("a missing directory") {
    const FileResult<SnapshotInfo> r = expiring::save(s, dir.file("no-such-dir/dump.snap"));
    CHECK(r == Errc::io_error);
    CHECK(r.error().message.find("No such file or directory") != std::string::npos);
    CHECK(dir.entries().empty());
  }
  SECTION("a path that is a directory: the rename fails, the temporary file goes") {
    fs::create_directory(dir.path / "taken");
    const FileResult<SnapshotInfo> r = expiring::save(s, dir.file("taken"));
    CHECK(r == Errc::io_error);
    CHECK(r.error().message.find("cannot rename") != std::string::npos);
    CHECK(dir.entries() == std::vector<std::string>{"taken"});
    CHECK(fs::is_empty(dir.path / "taken"));
  }
  SECTION("a failed stream") {
    std::ostringstream os;
    os.setstate(std::ios::badbit);
    CHECK(expiring::save(s, os) == Errc::io_error);
  }
  SECTION("FileResult: value() of an error throws, and the error prints") {
    const FileResult<SnapshotInfo> r = expiring::save(s, dir.file("no-such-dir/x"));
    CHECK_THROWS_AS(r.value(), expiring::BadResultAccess);
    std::ostringstream os;
    os << r;
    CHECK(os.str().find("snapshot: cannot create") != std::string::npos);
  }
}

TEST_CASE("snapshot: load errors of files", "[snapshot][files]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore s{clock};
  fill_small(s);
  SStore t{clock};
  fill_other(t);
  const auto before = stored(t);
  SECTION("a missing file") {
    const FileResult<SnapshotInfo> r = expiring::load(t, dir.file("missing.snap"));
    CHECK(r == Errc::io_error);
    CHECK(r.error().message.find("No such file or directory") != std::string::npos);
  }
  SECTION("bytes after the checksum") {
    write_file(dir.file("x.snap"), bytes_of(s) + "x");
    CHECK(expiring::load(t, dir.file("x.snap")) == Errc::corrupt_file);
  }
  SECTION("an empty file") {
    write_file(dir.file("e.snap"), "");
    const FileResult<SnapshotInfo> r = expiring::load(t, dir.file("e.snap"));
    CHECK(r == Errc::truncated_file);
    CHECK(r.error().offset == 0);
  }
  CHECK(stored(t) == before);
}

TEST_CASE("snapshot: a stream load stops after the snapshot's checksum", "[snapshot]") {
  ManualClock clock{T0};
  SStore a{clock};
  fill_small(a);
  SStore b{clock};
  fill_other(b);
  std::stringstream ss;
  REQUIRE(expiring::save(a, ss).ok());
  REQUIRE(expiring::save(b, ss).ok());
  ss << "tail";
  SStore t{clock};
  REQUIRE(expiring::load(t, ss).ok());
  CHECK(stored(t) == stored(a));
  REQUIRE(expiring::load(t, ss).ok());
  CHECK(stored(t) == stored(b));
  std::string rest;
  ss >> rest;
  CHECK(rest == "tail");
}

TEST_CASE("snapshot: 100000 keys round trip through a file", "[snapshot][files]") {
  TempDir dir;
  ManualClock clock{T0};
  SStore s{clock};
  constexpr int kKeys = 100000;
  for (int i = 0; i < kKeys; ++i) {
    std::string k = "key:" + std::to_string(i);
    std::string v = "value-" + std::to_string(i * 7919);
    if (i % 2 == 0) {
      REQUIRE(s.set(std::move(k), std::move(v), Px{1000 + i}) == true);
    } else {
      REQUIRE(s.set(std::move(k), std::move(v)) == true);
    }
  }
  const std::string path = dir.file("big.snap");
  const auto t0 = std::chrono::steady_clock::now();
  const FileResult<SnapshotInfo> w = expiring::save(s, path);
  REQUIRE(w.ok());
  CHECK(w->keys == kKeys);
  SStore t{clock};
  const FileResult<SnapshotInfo> r = expiring::load(t, path);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  REQUIRE(r.ok());
  CHECK(r->keys == kKeys);
  CHECK(t.size() == static_cast<std::size_t>(kKeys));
  CHECK(t.expires_size() == static_cast<std::size_t>(kKeys / 2));
  CHECK(t.pexpiretime("key:4242") == T0 + 1000 + 4242);
  CHECK(support::show(t.get("key:99999")) == "value-" + std::to_string(99999 * 7919));
  CHECK(stored(t) == stored(s));
  CHECK(t.check_invariants());
  // Generous: Debug with sanitizers on a busy 2-core machine.
  CHECK(std::chrono::duration_cast<std::chrono::seconds>(elapsed).count() < 20);
}
