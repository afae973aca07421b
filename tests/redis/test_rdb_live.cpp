// tests/redis/test_rdb_live.cpp: a dump.rdb written by Debian's redis-server (7.0) loads into a
// store with every value and the exact PEXPIRETIME of every key (rdb.hpp), and one that
// save_rdb() wrote loads into redis-server the same way.
//
// The server is given strings in each of its encodings (short and long raw strings, integers
// of every width Redis packs, LZF-compressible text, binary bytes, an empty string), hashes
// small enough for a listpack and large enough for a hashtable, keys with and without a TTL,
// and a list, a set and a sorted set; SAVE writes the file, which is loaded here and compared
// key by key with what the server answers (GET, HGETALL, PEXPIRETIME). Skipped when
// redis-server is not installed. MIGRATE (server/migrate.cpp) between two expiring-servers and
// both ways with redis-server.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <expiring/expiring.hpp>
#include <expiring/rdb.hpp>
#include <expiring/redis/value.hpp>

#include "catch.hpp"
#include "redis_live.hpp"

using live::Argv;
using live::Conn;
using Reply = expiring::redis::Reply;

namespace {

using VStore = expiring::Store<std::string, expiring::redis::Value>;

std::string hash_text(std::vector<std::pair<std::string, std::string>> fields) {
  std::sort(fields.begin(), fields.end());
  std::string out;
  for (const auto& f : fields) out += f.first + "=" + f.second + ";";
  return out;
}

}  // namespace

TEST_CASE("rdb live: redis-server's dump.rdb loads with every value and exact PEXPIRETIME", "[redis][live][rdb]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  live::RedisServer redis(*server);
  Conn c(redis.port());
  // What the keys hold: name -> value as text (strings) and which are hashes.
  std::vector<std::string> strings, hashes;
  const auto set = [&](const std::string& k, const std::string& v) {
    REQUIRE(c.call({"SET", k, v}).str() == "OK");
    strings.push_back(k);
  };
  set("small", "hello");
  set("empty", "");
  set("int8", "-100");
  set("int16", "30000");
  set("int32", "-2000000000");
  set("int64", "9000000000000000000");  // beyond 32 bits: kept as text by Redis
  set("lead0", "007");                   // not a canonical integer: raw
  set("lzf", std::string(2000, 'a') + "tail" + std::string(500, 'b'));
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  set("binary", binary);
  set("long", std::string(70000, 'x') + "y");
  const std::int64_t at = 4102444800123;  // 2100-01-01 plus 123 ms
  set("timed", "t");
  REQUIRE(c.call({"PEXPIREAT", "timed", std::to_string(at)}).integer() == 1);
  set("timed_int", "42");
  REQUIRE(c.call({"PEXPIREAT", "timed_int", std::to_string(at + 1)}).integer() == 1);
  REQUIRE(c.call({"HSET", "hsmall", "a", "1", "b", "two", "c", "-3"}).integer() == 3);
  hashes.push_back("hsmall");
  Argv big{"HSET", "hbig"};
  for (int i = 0; i < 300; ++i) {
    big.push_back("field" + std::to_string(i));
    big.push_back(i % 3 == 0 ? std::to_string(i * 1000) : "value-" + std::to_string(i));
  }
  REQUIRE(c.call(big).integer() == 300);
  hashes.push_back("hbig");
  REQUIRE(c.call({"HSET", "hlongvalue", "f", std::string(100, 'z')}).integer() == 1);  // past the listpack value limit
  hashes.push_back("hlongvalue");
  REQUIRE(c.call({"PEXPIREAT", "hsmall", std::to_string(at + 2)}).integer() == 1);
  REQUIRE(c.call({"RPUSH", "alist", "x", "y"}).integer() == 2);
  REQUIRE(c.call({"SADD", "aset", "m"}).integer() == 1);
  REQUIRE(c.call({"ZADD", "azset", "1.5", "m"}).integer() == 1);
  REQUIRE(c.call({"SAVE"}).str() == "OK");

  const std::string path = redis.dir() + "/dump.rdb";
  struct Remove {
    std::string p;
    ~Remove() { ::unlink(p.c_str()); }
  } remove{path};

  VStore s;
  // The list, set and sorted set first stop the load, by name...
  const auto refused = expiring::load_rdb(s, path);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == expiring::Errc::unsupported_type);
  CHECK(s.size() == 0);
  // ...and are skipped and counted on request.
  expiring::RdbLoadOptions o;
  o.skip_other_types = true;
  const auto r = expiring::load_rdb(s, path, o);
  REQUIRE(r.ok());
  CHECK(r->version == 10);  // Redis 7.0
  CHECK(r->skipped == 3);
  CHECK(r->keys == strings.size() + hashes.size());
  CHECK(std::find_if(r->aux.begin(), r->aux.end(), [](const auto& a) { return a.first == "redis-ver"; }) != r->aux.end());

  for (const std::string& k : strings) {
    INFO("key " << k);
    const expiring::redis::Value* v = s.get(k);
    REQUIRE(v != nullptr);
    REQUIRE(v->is_string());
    CHECK(*v->string() == c.call({"GET", k}).str());
    CHECK(s.pexpiretime(k) == c.call({"PEXPIRETIME", k}).integer());
  }
  for (const std::string& k : hashes) {
    INFO("key " << k);
    const expiring::redis::Value* v = s.get(k);
    REQUIRE(v != nullptr);
    REQUIRE(v->is_hash());
    std::vector<std::pair<std::string, std::string>> mine, theirs;
    for (std::uint32_t i = 0; i < v->hash()->size(); ++i) mine.emplace_back(v->hash()->at(i).name, v->hash()->at(i).value);
    const Reply all = c.call({"HGETALL", k});
    for (std::size_t i = 0; i + 1 < all.elements().size(); i += 2) {
      theirs.emplace_back(all.elements()[i].str(), all.elements()[i + 1].str());
    }
    CHECK(hash_text(mine) == hash_text(theirs));
    CHECK(s.pexpiretime(k) == c.call({"PEXPIRETIME", k}).integer());
  }
  CHECK(s.pexpiretime("timed") == at);
}

TEST_CASE("rdb live: save_rdb()'s file loads into redis-server with every value and exact PEXPIRETIME",
          "[redis][live][rdb]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  VStore s;
  using expiring::redis::Value;
  const std::int64_t at = 4102444800123;
  std::vector<std::string> strings = {"small", "empty", "int8", "int16", "int32", "int64", "lead0", "lzf", "long", "binary",
                                      "timed"};
  (void)s.set("small", Value(std::string("hello")));
  (void)s.set("empty", Value(std::string()));
  (void)s.set("int8", Value(std::string("-100")));
  (void)s.set("int16", Value(std::string("30000")));
  (void)s.set("int32", Value(std::string("-2000000000")));
  (void)s.set("int64", Value(std::string("9000000000000000000")));
  (void)s.set("lead0", Value(std::string("007")));
  (void)s.set("lzf", Value(std::string(2000, 'a') + "tail" + std::string(500, 'b')));
  (void)s.set("long", Value(std::string(70000, 'x') + "y"));
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  (void)s.set("binary", Value(binary));
  (void)s.set("timed", Value(std::string("t")), expiring::PxAt{at});
  (void)s.hset("hsmall", "a", "1");
  (void)s.hset("hsmall", "b", "-70000");
  (void)s.hset("hsmall", "c", "two");
  (void)s.pexpireat("hsmall", at + 2);
  for (int i = 0; i < 300; ++i) (void)s.hset("hbig", "field" + std::to_string(i), i % 3 == 0 ? std::to_string(i * 1000) : "value-" + std::to_string(i));
  (void)s.hset("hlongvalue", "f", std::string(100, 'z'));
  std::string bytes;
  const auto w = expiring::save_rdb(s, bytes);
  REQUIRE(w.ok());
  REQUIRE(w->version == 10);

  live::RedisServer redis(*server, bytes);
  Conn c(redis.port());
  CHECK(c.call({"DBSIZE"}).integer() == static_cast<std::int64_t>(s.size()));
  for (const std::string& k : strings) {
    INFO("key " << k);
    CHECK(c.call({"GET", k}).str() == *s.get(k)->string());
    CHECK(c.call({"PEXPIRETIME", k}).integer() == s.pexpiretime(k));
  }
  for (const std::string k : {"hsmall", "hbig", "hlongvalue"}) {
    INFO("key " << k);
    std::vector<std::pair<std::string, std::string>> mine, theirs;
    const auto& m = *s.get(k)->hash();
    for (std::uint32_t i = 0; i < m.size(); ++i) mine.emplace_back(m.at(i).name, m.at(i).value);
    const Reply all = c.call({"HGETALL", k});
    for (std::size_t i = 0; i + 1 < all.elements().size(); i += 2) theirs.emplace_back(all.elements()[i].str(), all.elements()[i + 1].str());
    CHECK(hash_text(mine) == hash_text(theirs));
    CHECK(c.call({"PEXPIRETIME", k}).integer() == s.pexpiretime(k));
  }
  // (hbig was written as a hashtable; the server re-encodes by its own hash-max-listpack-entries,
  // 512 in Debian's build.)
  CHECK(c.call({"OBJECT", "ENCODING", "hsmall"}).str() == "listpack");
  CHECK(c.call({"OBJECT", "ENCODING", "int16"}).str() == "int");
  // redis-server checks its own structures when asked: DEBUG RELOAD saves and loads again.
  CHECK(c.call({"DEBUG", "RELOAD"}).str() == "OK");
  CHECK(c.call({"DBSIZE"}).integer() == static_cast<std::int64_t>(s.size()));
}

// ---- DUMP and RESTORE between redis-server and expiring-server, both ways ---------------------

namespace {

// The same data, by the same commands, on either server: strings in every encoding Redis
// keeps, listpack and hashtable hashes, with and without a TTL. Returns the keys.
std::vector<std::string> fill(Conn& c, const std::string& prefix) {
  std::vector<std::string> keys;
  const std::int64_t at = 4102444800123;  // 2100-01-01 plus 123 ms
  const auto set = [&](const std::string& k, const std::string& v) {
    REQUIRE(c.call({"SET", prefix + k, v}).str() == "OK");
    keys.push_back(prefix + k);
  };
  int n = 0;
  for (const std::string& v : {std::string("hello"), std::string(), std::string("0"), std::string("-1"), std::string("127"),
                               std::string("-128"), std::string("128"), std::string("30000"), std::string("-32769"),
                               std::string("2147483647"), std::string("-2147483648"), std::string("2147483648"),
                               std::string("9223372036854775807"), std::string("-9223372036854775808"), std::string("007"),
                               std::string("+1"), std::string("-0"), std::string(" 1"), std::string(20, 'q'),
                               std::string(21, 'q'), std::string(64, 'r'), std::string(2000, 'a') + "tail",
                               std::string(70000, 'x') + "y"}) {
    set("s" + std::to_string(n++), v);
  }
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  set("binary", binary);
  for (int i = 0; i < 120; ++i) set("num" + std::to_string(i), std::to_string(static_cast<std::int64_t>(i - 60) * 7919 * (i % 2 == 0 ? 1 : 131071)));
  for (int i = 0; i < 40; ++i) {
    const std::string k = "h" + std::to_string(i);
    Argv h{"HSET", prefix + k};
    const int fields = i < 30 ? 1 + i * 4 : 150 + i;  // the last ten past 128 fields: hashtables
    for (int f = 0; f < fields; ++f) {
      h.push_back("f" + std::to_string(f));
      h.push_back(f % 3 == 0 ? std::to_string(f * 1000 - 5000) : (i == 7 ? std::string(100, 'v') : "value" + std::to_string(f)));
    }
    REQUIRE(c.call(h).integer() == fields);
    keys.push_back(prefix + k);
  }
  for (std::size_t i = 0; i < keys.size(); i += 3) {
    REQUIRE(c.call({"PEXPIREAT", keys[i], std::to_string(at + static_cast<std::int64_t>(i))}).integer() == 1);
  }
  return keys;
}

// What a key holds, as text both servers answer alike (a hash's fields sorted).
std::string contents(Conn& c, const std::string& k) {
  const std::string type = c.call({"TYPE", k}).str();
  if (type == "string") return "string:" + c.call({"GET", k}).str();
  if (type != "hash") return type;
  std::vector<std::pair<std::string, std::string>> fields;
  const Reply all = c.call({"HGETALL", k});
  for (std::size_t i = 0; i + 1 < all.elements().size(); i += 2) fields.emplace_back(all.elements()[i].str(), all.elements()[i + 1].str());
  return "hash:" + hash_text(fields);
}

// Moves every key from `from` to `to` by DUMP and RESTORE ... ABSTTL; checks values and exact
// PEXPIRETIMEs. Returns the payloads.
std::vector<std::string> move_all(Conn& from, Conn& to, const std::vector<std::string>& keys) {
  std::vector<std::string> payloads;
  for (const std::string& k : keys) {
    INFO("key " << k);
    const Reply p = from.call({"DUMP", k});
    REQUIRE(p.type() == Reply::Type::bulk);
    const std::int64_t deadline = from.call({"PEXPIRETIME", k}).integer();
    const Reply r = to.call({"RESTORE", k, std::to_string(deadline < 0 ? 0 : deadline), p.str(), "ABSTTL"});
    REQUIRE(r.str() == "OK");
    CHECK(contents(to, k) == contents(from, k));
    CHECK(to.call({"PEXPIRETIME", k}).integer() == deadline);
    payloads.push_back(p.str());
  }
  return payloads;
}

}  // namespace

TEST_CASE("dump live: DUMP payloads move between redis-server and expiring-server both ways with exact PEXPIRETIME",
          "[redis][live][dump]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  live::RedisServer redis(*server);
  live::RespServer ours;
  Conn r(redis.port()), e(ours.port());

  // redis-server -> expiring-server.
  const std::vector<std::string> theirs = fill(r, "r:");
  REQUIRE(theirs.size() >= 180);
  const std::vector<std::string> from_redis = move_all(r, e, theirs);
  // expiring-server -> redis-server (the keys made by the same commands there).
  const std::vector<std::string> mine = fill(e, "e:");
  const std::vector<std::string> from_ours = move_all(e, r, mine);

  // Byte for byte where the encoding is canonical: strings Redis does not compress (at most
  // 20 bytes) and hashes both keep in a listpack (Redis's insertion order is ours; at most
  // 128 fields, the default hash-max-listpack-entries, which Debian raises to 512). Longer
  // strings are LZF, whose output depends on the compressor's choices; hashtables list
  // fields in hash order.
  std::size_t same = 0;
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    INFO("key " << theirs[i]);
    const std::string enc = r.call({"OBJECT", "ENCODING", theirs[i]}).str();
    const bool canonical = enc == "int" || (enc == "listpack" && r.call({"HLEN", theirs[i]}).integer() <= 128) ||
                           (enc == "embstr" && r.call({"STRLEN", theirs[i]}).integer() <= 20);
    if (!canonical) continue;
    CHECK(e.call({"DUMP", theirs[i]}).str() == from_redis[i]);
    CHECK(from_ours[i] == r.call({"DUMP", mine[i]}).str());
    ++same;
  }
  CHECK(same >= 150);
  // Every payload of ours also restores into redis-server under a new name (REPLACE, relative
  // TTL 0), and each of Redis's into ours.
  for (std::size_t i = 0; i < from_ours.size(); ++i) {
    CHECK(r.call({"RESTORE", "copy", "0", from_ours[i], "REPLACE"}).str() == "OK");
    CHECK(e.call({"RESTORE", "copy", "0", from_redis[i], "REPLACE"}).str() == "OK");
  }

  // The errors, word for word: an existing key, a bad TTL, a bad option, a damaged payload
  // (checksum, version), and one whose footer is sound but whose value is not.
  std::string damaged = from_redis[0];
  damaged[1] = static_cast<char>(damaged[1] ^ 0x01);
  std::string newer = from_redis[0];
  newer[newer.size() - 10] = 99;
  const std::vector<Argv> bad = {
      {"RESTORE", "copy", "0", from_redis[0]},
      {"RESTORE", "fresh", "-1", from_redis[0]},
      {"RESTORE", "fresh", "x", from_redis[0]},
      {"RESTORE", "fresh", "0", from_redis[0], "NOPE"},
      {"RESTORE", "fresh", "0", from_redis[0], "IDLETIME", "-1"},
      {"RESTORE", "fresh", "0", from_redis[0], "FREQ", "256"},
      {"RESTORE", "fresh", "0", from_redis[0], "IDLETIME", "1", "FREQ", "1"},
      {"RESTORE", "fresh", "0", damaged},
      {"RESTORE", "fresh", "0", newer},
      {"RESTORE", "fresh", "0", "short"},
      {"RESTORE", "fresh", "1", from_redis[0], "ABSTTL"},  // long past: OK, nothing stored
      {"RESTORE", "fresh", "0", from_redis[0], "IDLETIME", "100", "REPLACE"},
      {"DUMP", "missing"},
  };
  for (const Argv& a : bad) {
    std::string shown;
    for (const auto& x : a) shown += (x.size() > 30 ? "<payload>" : x) + " ";
    INFO(shown);
    const Reply want = r.call(a);
    const Reply got = e.call(a);
    CHECK(got.type() == want.type());
    CHECK(got.str() == want.str());
  }
  CHECK(e.call({"EXISTS", "fresh"}).integer() == r.call({"EXISTS", "fresh"}).integer());
}

namespace {

// Databases 3 and 15 as the test below fills them (the connection is left in database 0).
void check_databases(Conn& c, const std::string& key0) {
  const std::string ks = c.call({"INFO", "keyspace"}).str();
  CHECK(redistext::info_field(ks, "db3").rfind("keys=2,expires=1,", 0) == 0);
  CHECK(redistext::info_field(ks, "db15").rfind("keys=2,expires=1,", 0) == 0);
  for (const std::string db : {"3", "15"}) {
    REQUIRE(c.call({"SELECT", db}).str() == "OK");
    const Reply v = c.call({"HGET", "only-" + db, "f"});
    CHECK(v.str() == db);
    CHECK(c.call({"GET", key0}).str() == "in " + db);
    CHECK(c.call({"PTTL", key0}).integer() > 3000000);
  }
  REQUIRE(c.call({"SELECT", "0"}).str() == "OK");
}

}  // namespace

TEST_CASE("rdb live: expiring-server starts on redis-server's dump.rdb, and redis-server on its SAVE", "[redis][live][rdb]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  std::string rdb;
  std::vector<std::string> keys;
  std::vector<std::string> want;
  std::vector<std::int64_t> deadlines;
  {
    live::RedisServer redis(*server);
    Conn r(redis.port());
    keys = fill(r, "k:");
    for (const std::string& k : keys) {
      want.push_back(contents(r, k));
      deadlines.push_back(r.call({"PEXPIRETIME", k}).integer());
    }
    // Databases 3 and 15 too, each with a key of its own and one named as in database 0.
    for (const char* db : {"3", "15"}) {
      REQUIRE(r.call({"SELECT", db}).str() == "OK");
      REQUIRE(r.call({"SET", keys[0], std::string("in ") + db, "PX", "3600000"}).str() == "OK");
      REQUIRE(r.call({"HSET", std::string("only-") + db, "f", db}).integer() == 1);
    }
    REQUIRE(r.call({"SELECT", "0"}).str() == "OK");
    REQUIRE(r.call({"SAVE"}).str() == "OK");
    std::ifstream f(redis.dir() + "/dump.rdb", std::ios::binary);
    rdb.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    REQUIRE(rdb.size() > 1000);
  }
  char tmpl[] = "/tmp/expiring-rdb-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      ::unlink((d + "/dump.rdb").c_str());
      ::rmdir(d.c_str());
    }
  } cleanup{dir};
  {
    std::ofstream f(dir + "/dump.rdb", std::ios::binary);
    f.write(rdb.data(), static_cast<std::streamsize>(rdb.size()));
  }
  std::string saved;
  {
    live::RespServer ours({"--dir", dir});
    Conn e(ours.port());
    REQUIRE(e.call({"DBSIZE"}).integer() == static_cast<std::int64_t>(keys.size()));
    for (std::size_t i = 0; i < keys.size(); ++i) {
      INFO("key " << keys[i]);
      CHECK(contents(e, keys[i]) == want[i]);
      CHECK(e.call({"PEXPIRETIME", keys[i]}).integer() == deadlines[i]);
    }
    check_databases(e, keys[0]);
    REQUIRE(e.call({"SAVE"}).str() == "OK");
    std::ifstream f(dir + "/dump.rdb", std::ios::binary);
    saved.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    REQUIRE(saved.substr(0, 9) == "REDIS0010");
  }
  live::RedisServer redis(*server, saved);
  Conn r(redis.port());
  REQUIRE(r.call({"DBSIZE"}).integer() == static_cast<std::int64_t>(keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    INFO("key " << keys[i]);
    CHECK(contents(r, keys[i]) == want[i]);
    CHECK(r.call({"PEXPIRETIME", keys[i]}).integer() == deadlines[i]);
  }
  check_databases(r, keys[0]);
}

// ---- MIGRATE (server/migrate.cpp) ---------------------------------------------------------------

namespace {
std::int64_t int_of(const Reply& r) {
  REQUIRE(r.type() == Reply::Type::integer);
  return r.integer();
}
std::string info_stat(Conn& c, const std::string& name) {
  const std::string text = c.call({"INFO", "stats"}).str();
  const std::size_t at = text.find(name + ":");
  if (at == std::string::npos) return "";
  return text.substr(at + name.size() + 1, text.find('\r', at) - at - name.size() - 1);
}
}  // namespace

TEST_CASE("migrate live: keys move between two expiring-servers with their TTLs, COPY, REPLACE, KEYS, AUTH",
          "[redis][live][migrate]") {
  live::RespServer source;
  live::RespServer target(Argv{"--requirepass", "sesame"});
  Conn s(source.port());
  Conn t(target.port());
  REQUIRE(t.call({"AUTH", "sesame"}).str() == "OK");
  const std::string port = std::to_string(target.port());
  REQUIRE(s.call({"SET", "k", "v", "PX", "100000"}).str() == "OK");
  REQUIRE(s.call({"HSET", "h", "a", "1", "b", "2"}) == Reply::integer(2));
  REQUIRE(s.call({"HPEXPIRE", "h", "50000", "FIELDS", "1", "a"}) == Reply::array({Reply::integer(1)}));
  // Without AUTH the target refuses, and the keys stay here.
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000"}).str() ==
        "ERR Target instance replied with error: NOAUTH Authentication required.");
  CHECK(s.call({"EXISTS", "k"}) == Reply::integer(1));
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "AUTH", "wrong"}).str().rfind(
            "ERR Target instance replied with error: WRONGPASS", 0) == 0);
  // Moved: gone here, there with its value and TTL (the remaining time, give or take the trip).
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "AUTH", "sesame"}).str() == "OK");
  CHECK(s.call({"EXISTS", "k"}) == Reply::integer(0));
  CHECK(t.call({"GET", "k"}).str() == "v");
  const std::int64_t left = int_of(t.call({"PTTL", "k"}));
  CHECK(left > 90000);
  CHECK(left <= 100000);
  CHECK(info_stat(s, "migrate_cached_sockets") == "1");
  // COPY keeps it here; a key that exists there needs REPLACE.
  REQUIRE(s.call({"SET", "k", "w"}).str() == "OK");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "COPY", "AUTH", "sesame"}).str() ==
        "ERR Target instance replied with error: BUSYKEY Target key name already exists.");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "COPY", "REPLACE", "AUTH", "sesame"}).str() == "OK");
  CHECK(s.call({"GET", "k"}).str() == "w");
  CHECK(t.call({"GET", "k"}).str() == "w");
  CHECK(t.call({"PTTL", "k"}) == Reply::integer(-1));
  // KEYS, into another database: the missing keys are left out; none at all is NOKEY.
  REQUIRE(s.call({"SET", "x", "1"}).str() == "OK");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "", "3", "5000", "AUTH2", "default", "sesame", "KEYS", "h", "nope", "x"})
            .str() == "OK");
  CHECK(s.call({"EXISTS", "h", "x"}) == Reply::integer(0));
  REQUIRE(t.call({"SELECT", "3"}).str() == "OK");
  CHECK(t.call({"HGET", "h", "b"}).str() == "2");
  const std::int64_t field_left = int_of(t.call({"HPTTL", "h", "FIELDS", "1", "a"}).elements().at(0));
  CHECK(field_left > 40000);
  CHECK(field_left <= 50000);
  CHECK(t.call({"GET", "x"}).str() == "1");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "", "3", "5000", "KEYS", "nope"}).str() == "NOKEY");
  // The arguments, as Redis checks them.
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "KEYS", "k"}).str() ==
        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "BOGUS"}).str() == "ERR syntax error");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "0", "5000", "AUTH"}).str() == "ERR syntax error");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "zero", "5000"}).str() ==
        "ERR value is not an integer or out of range");
  CHECK(s.call({"MIGRATE", "127.0.0.1", port, "k", "99", "5000", "AUTH", "sesame"}).str() ==
        "ERR Target instance replied with error: ERR DB index is out of range");
  CHECK(s.call({"GET", "k"}).str() == "w");
  // Nobody listening: IOERR, and nothing changed.
  const int closed_port = live::free_port();
  CHECK(s.call({"MIGRATE", "127.0.0.1", std::to_string(closed_port), "k", "0", "1000"}).str() ==
        "IOERR error or timeout connecting to the client");
  CHECK(s.call({"GET", "k"}).str() == "w");
}

TEST_CASE("migrate live: between expiring-server and redis-server, both ways", "[redis][live][migrate]") {
  const auto server = live::redis_server_path();
  if (!server) EXPIRING_SKIP("redis-server is not installed");
  live::RedisServer redis(*server);
  live::RespServer ours;
  Conn r(redis.port());
  Conn o(ours.port());
  REQUIRE(o.call({"SET", "s", "text", "EX", "1000"}).str() == "OK");
  REQUIRE(o.call({"SET", "n", "12345"}).str() == "OK");
  REQUIRE(o.call({"HSET", "h", "f", "v", "g", "w"}) == Reply::integer(2));
  CHECK(o.call({"MIGRATE", "127.0.0.1", std::to_string(redis.port()), "", "0", "5000", "KEYS", "s", "n", "h"}).str() ==
        "OK");
  CHECK(o.call({"DBSIZE"}) == Reply::integer(0));
  CHECK(r.call({"GET", "s"}).str() == "text");
  CHECK(int_of(r.call({"TTL", "s"})) > 990);
  CHECK(r.call({"GET", "n"}).str() == "12345");
  CHECK(r.call({"HGET", "h", "g"}).str() == "w");
  // And back: redis-server's MIGRATE into expiring-server.
  CHECK(r.call({"MIGRATE", "127.0.0.1", std::to_string(ours.port()), "", "0", "5000", "KEYS", "s", "h"}).str() == "OK");
  CHECK(o.call({"GET", "s"}).str() == "text");
  CHECK(int_of(o.call({"TTL", "s"})) > 990);
  CHECK(o.call({"HGETALL", "h"}).elements().size() == 4);
  CHECK(r.call({"EXISTS", "s", "h"}) == Reply::integer(0));
}
