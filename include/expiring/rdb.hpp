// expiring/rdb.hpp: Redis's own RDB format: load a dump.rdb that redis-server wrote into a store.
//
//   expiring::Store<std::string, std::string> s;
//   expiring::FileResult<expiring::RdbInfo> r = expiring::load_rdb(s, "/var/lib/redis/dump.rdb");
//   if (!r.ok()) log(r.error().message);   // corrupt_file / truncated_file at an offset; store unchanged
//
// What it reads
// -------------
// RDB versions 1 to 12 (Redis 2.x to 7.4): the header "REDIS" + 4 digits, AUX fields, SELECTDB,
// RESIZEDB, key expiry in ms (EXPIRETIME_MS) and in s (EXPIRETIME), LRU/LFU hints (IDLE, FREQ:
// read and ignored), function libraries (skipped), the EOF opcode and the CRC-64 trailer
// (Redis's: Jones polynomial, reflected, initial 0; a trailer of 0 means the writer had
// rdbchecksum off and is not checked, as redis-server does).
//   strings   every encoding: raw, integers (8, 16 and 32 bit, read as their decimal text, as
//             Redis does) and LZF-compressed
//   hashes    hashtable (type 4), ziplist (13, Redis < 7), listpack (16, Redis 7), and Redis 7.4's
//             hashes with field TTLs: hashtable with metadata (22, 24) and listpack-ex (23, 25),
//             every field deadline exact
//   others    lists, sets, sorted sets, streams and module values have no place in a store of
//             strings and hashes: Errc::unsupported_type naming the key and the type, or, with
//             RdbLoadOptions::skip_other_types, skipped and counted (RdbInfo::skipped); module
//             data that cannot be skipped (a module's own opaque encoding) is refused either way
// Keys of databases other than RdbLoadOptions::db are skipped and counted (RdbInfo::other_db).
//
// As snapshot.hpp's load(): the whole input is read and verified first (every opcode, every
// value decoded, the checksum), and only then replaces the store's content, as one unit of its
// change feed; a corrupt, truncated or hostile input is refused with the store unchanged. A
// key past its deadline is skipped under LoadAs::primary (counted in `expired`; a field past
// its deadline likewise, in `expired_fields`) and kept under LoadAs::replica. Every length is
// checked against the bytes that remain before anything is allocated, so no length can make
// the loader reserve more than the input's size; LZF output is bounded by the length the
// record declares, and that by what the input could hold (a ratio no LZF stream exceeds).
//
// Value types: a store of std::string values takes strings (a hash is unsupported_type), a
// store of FieldMap<std::string, std::string> takes hashes (a string is unsupported_type), a
// store of redis::Value takes both. Keys are std::string.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/arith.hpp"
#include "field_map.hpp"
#include "snapshot.hpp"

namespace expiring {

// How load_rdb() reads.
struct RdbLoadOptions {
  LoadAs as = LoadAs::primary;  // primary skips keys and fields past their deadline; replica keeps them
  // Lists, sets, sorted sets and streams (and module values Redis can skip): skipped and
  // counted instead of refused.
  bool skip_other_types = false;
  // The database whose keys are loaded; the others' are skipped and counted.
  std::uint64_t db = 0;
};

// What load_rdb() read.
struct RdbInfo {
  unsigned version = 0;           // the file's RDB version
  std::uint64_t keys = 0;         // keys now in the store
  std::uint64_t expired = 0;      // keys skipped because their deadline had passed (LoadAs::primary)
  std::uint64_t expired_fields = 0;  // hash fields skipped likewise (a hash left with none: in `expired`)
  std::uint64_t skipped = 0;      // values of other types skipped (skip_other_types)
  std::uint64_t other_db = 0;     // keys of other databases
  std::uint64_t bytes = 0;        // the input's size
  std::vector<std::pair<std::string, std::string>> aux;  // AUX fields, in order (redis-ver, ctime, ...)
};

// Loads `bytes`, a whole RDB file (or a DUMP-less RDB stream of a full sync).
template <class Store>
FileResult<RdbInfo> load_rdb_bytes(Store& s, std::string_view bytes, const RdbLoadOptions& options = {});
#if defined(EXPIRING_SNAPSHOT_POSIX)
// Loads the regular file at `path` (opened as snapshot.hpp's load() opens one: no symbolic
// link, FIFO or device), read whole into memory first.
template <class Store>
FileResult<RdbInfo> load_rdb(Store& s, const std::string& path, const RdbLoadOptions& options = {});
#endif

// Several databases, as redis-server keeps them (Redis's SELECT numbers): dbs[n] takes the
// file's database n, and every store of `dbs` is replaced (one the file does not hold is
// emptied); the keys of a database past the vector's end, or whose entry is null, are skipped
// and counted in other_db (RdbLoadOptions::db is not used). The stores must be distinct.
// Nothing changes until the whole input has been read and checked.
template <class Store>
FileResult<RdbInfo> load_rdb_databases_bytes(const std::vector<Store*>& dbs, std::string_view bytes,
                                             const RdbLoadOptions& options = {});
#if defined(EXPIRING_SNAPSHOT_POSIX)
// From the regular file at `path`, opened and read as load_rdb() reads one.
template <class Store>
FileResult<RdbInfo> load_rdb_databases(const std::vector<Store*>& dbs, const std::string& path,
                                       const RdbLoadOptions& options = {});
#endif

// How save_rdb() writes.
struct RdbSaveOptions {
  // LZF-compress strings of more than 20 bytes when that saves at least 4 (Redis's
  // rdbcompression yes).
  bool compress = true;
};

// Writes every stored key (stale ones included, as Redis's SAVE does) as an RDB file:
// version 10 (Redis 7.0), strings as Redis encodes them (integers, LZF, raw), hashes as a
// listpack when Redis would keep them in one (at most 128 fields of at most 64 bytes) and as a
// hashtable otherwise; with a field TTL anywhere, version 12 and Redis 7.4's hash with
// metadata for those hashes (redis-server 7.0 cannot read that), as database 0. An
// ExpiringStore or a ConcurrentStore (while other threads write: shard by shard, each key as it
// was when its shard was walked, as snapshot.hpp's save()).
template <class Store>
FileResult<RdbInfo> save_rdb(const Store& s, std::string& out, const RdbSaveOptions& options = {});
#if defined(EXPIRING_SNAPSHOT_POSIX)
// To a file, as snapshot.hpp's save() writes one (a temporary file, fsync, rename).
template <class Store>
FileResult<RdbInfo> save_rdb(const Store& s, const std::string& path, const RdbSaveOptions& options = {});
#endif
// Several databases: dbs[n] as database n (null or empty ones are left out, as Redis leaves
// out its empty databases).
template <class Store>
FileResult<RdbInfo> save_rdb_databases(const std::vector<Store*>& dbs, std::string& out, const RdbSaveOptions& options = {});
#if defined(EXPIRING_SNAPSHOT_POSIX)
// To a file, as save_rdb() writes one.
template <class Store>
FileResult<RdbInfo> save_rdb_databases(const std::vector<Store*>& dbs, const std::string& path,
                                       const RdbSaveOptions& options = {});
#endif

// ---- DUMP and RESTORE ------------------------------------------------------------------
// A DUMP payload is one value as an RDB file holds it (its type byte, then the value),
// followed by the RDB version in 2 bytes and a CRC-64 of everything before it in 8 (both
// little-endian), byte for byte as redis-server 7.0 writes and reads it: a payload moves
// between this library, its server and a real Redis in either direction.

// The value of `key` as DUMP serializes it, nullopt when the key does not exist. A read, as
// Redis's DUMP: a keyspace hit or miss, and an access for LRU/LFU.
template <class Store>
std::optional<std::string> dump(Store& s, const std::string& key);
// The payload of one value: RDB version 10 (Redis 7.0), or 12 for a hash with a field TTL
// (Redis 7.4's hash with metadata; redis-server 7.0 refuses it, as any 7.4 payload).
template <class V>
std::string dump_value(const V& v);

// How restore() stores.
struct RestoreOptions {
  // 0: no TTL. Else a deadline in milliseconds from now or, with absttl, in Unix ms.
  std::int64_t ttl_ms = 0;
  bool absttl = false;
  // Replace an existing key (else Errc::busy_key).
  bool replace = false;
  // IDLETIME seconds and FREQ counter: the key's access data, for the eviction policy in
  // force (Store::set_object_access()).
  std::optional<std::int64_t> idle_seconds;
  std::optional<std::uint8_t> freq;
};

// RESTORE: stores the value of a DUMP payload as `key`, as Redis's RESTORE does. Returns true
// when stored; false when its deadline had already passed, and then nothing is stored and,
// with replace, an existing key is deleted (a replica, Options::replica, stores it all the
// same: only its primary's DEL removes it). Errors, the store unchanged:
//   invalid_expire_time   ttl_ms < 0, or now + ttl_ms past a signed 64-bit integer
//   busy_key              the key exists and replace is false
//   bad_dump_payload      shorter than its footer, a version newer than 12, a CRC mismatch
//   corrupt_file          the footer is sound but the value cannot be decoded
//   unsupported_type      a list, set, sorted set, stream or module value; a hash for a store
//                         of strings, a string for a store of hashes
// A store change: the feed sees a set (and a DEL for the expired case).
template <class Store>
FileResult<bool> restore(Store& s, const std::string& key, std::string_view payload, const RestoreOptions& options = {});

// =========================================================================================
// Implementation
// =========================================================================================

namespace detail::rdb {

// ---- CRC-64 (Jones polynomial 0xad93d23594c935a9, reflected, initial 0, no final xor) --------

struct Crc64Table {
  std::uint64_t t[256];
};
constexpr Crc64Table make_crc64_table() {
  // The reflected form of the polynomial: its bits in reverse order.
  constexpr std::uint64_t poly = 0xad93d23594c935a9ull;
  std::uint64_t rev = 0;
  for (int b = 0; b < 64; ++b) {
    if (((poly >> b) & 1u) != 0) rev |= std::uint64_t{1} << (63 - b);
  }
  Crc64Table x{};
  for (std::uint64_t i = 0; i < 256; ++i) {
    std::uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ rev : c >> 1;
    x.t[i] = c;
  }
  return x;
}
inline constexpr Crc64Table kCrc64 = make_crc64_table();
// crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9ca, Redis's check value.
inline std::uint64_t crc64(std::uint64_t crc, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) crc = kCrc64.t[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return crc;
}

// ---- LZF ----------------------------------------------------------------------------------

// Decompresses `in` into exactly `out_len` bytes; false if the stream is malformed, refers
// before the start of the output, or does not produce exactly out_len bytes.
inline bool lzf_decompress(std::string_view in, std::size_t out_len, std::string& out) {
  out.assign(out_len, '\0');
  std::size_t ip = 0, op = 0;
  while (ip < in.size()) {
    const unsigned ctrl = static_cast<unsigned char>(in[ip++]);
    if (ctrl < 32) {  // a literal run of ctrl + 1 bytes
      const std::size_t run = ctrl + 1u;
      if (run > in.size() - ip || run > out_len - op) return false;
      std::memcpy(&out[op], in.data() + ip, run);
      ip += run;
      op += run;
    } else {  // a back reference: length (ctrl >> 5) + 2, distance from the low bits and a byte
      std::size_t len = ctrl >> 5;
      if (len == 7) {
        if (ip >= in.size()) return false;
        len += static_cast<unsigned char>(in[ip++]);
      }
      len += 2;
      if (ip >= in.size()) return false;
      const std::size_t back = ((std::size_t{ctrl} & 0x1Fu) << 8) + static_cast<unsigned char>(in[ip++]) + 1u;
      if (back > op || len > out_len - op) return false;
      for (std::size_t i = 0; i < len; ++i, ++op) out[op] = out[op - back];  // may overlap: byte by byte
    }
  }
  return op == out_len;
}

// ---- Little-endian numbers ------------------------------------------------------------

// The n (<= 8) little-endian bytes at `at`, as an unsigned number.
inline std::uint64_t le_at(std::string_view b, std::size_t at, std::size_t n) noexcept {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < n; ++i) x |= std::uint64_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
  return x;
}

// The low `bits` (1..64) of x, read as a two's-complement number.
inline std::int64_t sign_extend(std::uint64_t x, unsigned bits) noexcept {
  const unsigned shift = 64 - bits;
  return static_cast<std::int64_t>(x << shift) >> shift;
}

// ---- The format's constants ---------------------------------------------------------------

enum Opcode : unsigned char {
  kSlotInfo = 244,
  kFunction2 = 245,
  kFunctionPreGa = 246,
  kModuleAux = 247,
  kIdle = 248,
  kFreq = 249,
  kAux = 250,
  kResizeDb = 251,
  kExpireTimeMs = 252,
  kExpireTime = 253,
  kSelectDb = 254,
  kEof = 255,
};
enum Type : unsigned char {
  kString = 0,
  kList = 1,
  kSet = 2,
  kZset = 3,
  kHash = 4,
  kZset2 = 5,
  kModulePreGa = 6,
  kModule2 = 7,
  kHashZipmap = 9,
  kListZiplist = 10,
  kSetIntset = 11,
  kZsetZiplist = 12,
  kHashZiplist = 13,
  kListQuicklist = 14,
  kStreamListpacks = 15,
  kHashListpack = 16,
  kZsetListpack = 17,
  kListQuicklist2 = 18,
  kStreamListpacks2 = 19,
  kSetListpack = 20,
  kStreamListpacks3 = 21,
  kHashMetadataPreGa = 22,
  kHashListpackExPreGa = 23,
  kHashMetadata = 24,
  kHashListpackEx = 25,
};
inline constexpr unsigned kMaxVersion = 12;
// Redis 7.4's largest field deadline (EB_EXPIRE_TIME_MAX): 2^48 - 1 ms.
inline constexpr std::uint64_t kMaxFieldExpire = (std::uint64_t{1} << 48) - 1;

inline const char* type_name(unsigned t) noexcept {
  switch (t) {
    case kList: case kListZiplist: case kListQuicklist: case kListQuicklist2: return "list";
    case kSet: case kSetIntset: case kSetListpack: return "set";
    case kZset: case kZset2: case kZsetZiplist: case kZsetListpack: return "zset";
    case kStreamListpacks: case kStreamListpacks2: case kStreamListpacks3: return "stream";
    case kModulePreGa: case kModule2: return "module";
    case kHashZipmap: return "hash (zipmap)";
    default: return "unknown";
  }
}

// One decoded value: a string, or a hash's fields (deadline 0: none).
struct HashField {
  std::string name;
  std::string value;
  std::uint64_t deadline;
};
struct Value {
  bool is_hash = false;
  std::string str;
  std::vector<HashField> fields;
};

// A cursor over the input; every read is bounds-checked and a failure names the offset.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::uint64_t offset() const noexcept { return pos_; }
  std::size_t left() const noexcept { return in_.size() - pos_; }
  bool failed() const noexcept { return err_.has_value(); }
  const FileError& error() const { return *err_; }

  // Records the first failure (truncated: the input ended) and returns false.
  bool fail(Errc code, std::string what) {
    if (!err_) err_ = FileError{code, pos_, what + " at offset " + std::to_string(pos_)};
    return false;
  }
  bool short_input(const char* what) { return fail(Errc::truncated_file, std::string("truncated: ") + what); }

  bool byte(unsigned& b, const char* what) {
    if (left() < 1) return short_input(what);
    b = static_cast<unsigned char>(in_[pos_++]);
    return true;
  }
  bool bytes(std::size_t n, std::string_view& out, const char* what) {
    if (left() < n) return short_input(what);
    out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool le(std::size_t n, std::uint64_t& v, const char* what) {
    std::string_view b;
    if (!bytes(n, b, what)) return false;
    v = le_at(b, 0, n);
    return true;
  }
  bool be(std::size_t n, std::uint64_t& v, const char* what) {
    std::string_view b;
    if (!bytes(n, b, what)) return false;
    v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return true;
  }

  // A length, or (encoded) the code of a special string encoding.
  bool length(std::uint64_t& len, bool* encoded, const char* what) {
    unsigned b = 0;
    if (!byte(b, what)) return false;
    if (encoded != nullptr) *encoded = false;
    switch (b >> 6) {
      case 0: len = b & 0x3Fu; return true;
      case 1: {
        unsigned b2 = 0;
        if (!byte(b2, what)) return false;
        len = ((std::uint64_t{b} & 0x3Fu) << 8) | b2;
        return true;
      }
      case 2:
        if (b == 0x80) return be(4, len, what);
        if (b == 0x81) return be(8, len, what);
        return fail(Errc::corrupt_file, std::string("bad length encoding in ") + what);
      default:
        if (encoded == nullptr) return fail(Errc::corrupt_file, std::string("an encoded string where a length belongs in ") + what);
        *encoded = true;
        len = b & 0x3Fu;
        return true;
    }
  }
  bool plain_length(std::uint64_t& len, const char* what) { return length(len, nullptr, what); }

  // A string in any of its encodings (raw, integer, LZF).
  bool string(std::string& out, const char* what) {
    std::uint64_t len = 0;
    bool encoded = false;
    if (!length(len, &encoded, what)) return false;
    if (!encoded) {
      std::string_view b;
      if (len > left()) return short_input(what);
      if (!bytes(static_cast<std::size_t>(len), b, what)) return false;
      out.assign(b.data(), b.size());
      return true;
    }
    switch (len) {
      case 0: case 1: case 2: {  // a signed integer of 1, 2 or 4 bytes, little-endian
        const std::size_t n = std::size_t{1} << len;
        std::uint64_t u = 0;
        if (!le(n, u, what)) return false;
        out = std::to_string(sign_extend(u, static_cast<unsigned>(8 * n)));
        return true;
      }
      case 3: {
        std::uint64_t clen = 0, ulen = 0;
        if (!plain_length(clen, what) || !plain_length(ulen, what)) return false;
        if (clen > left()) return short_input(what);
        // LZF expands at most ~264x (a back reference of 264 bytes takes 2 to 3): a larger
        // claim cannot be a real stream, and would make us allocate it first.
        if (ulen > clen * 264 + 64) return fail(Errc::corrupt_file, std::string("an LZF length out of proportion in ") + what);
        std::string_view c;
        if (!bytes(static_cast<std::size_t>(clen), c, what)) return false;
        if (!lzf_decompress(c, static_cast<std::size_t>(ulen), out)) {
          return fail(Errc::corrupt_file, std::string("a malformed LZF string in ") + what);
        }
        return true;
      }
      default: return fail(Errc::corrupt_file, std::string("unknown string encoding in ") + what);
    }
  }
  bool skip_string(const char* what) {
    std::string tmp;
    return string(tmp, what);
  }
  // A double as Redis's ZSET (type 3) wrote it: a length byte (253: NaN, 254: +inf, 255:
  // -inf) then that many characters.
  bool skip_text_double(const char* what) {
    unsigned n = 0;
    if (!byte(n, what)) return false;
    if (n >= 253) return true;
    std::string_view b;
    return bytes(n, b, what);
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  std::optional<FileError> err_;
};

// ---- Listpacks and ziplists (inside a string) ----------------------------------------------

// An entry's back-length (its encoding and data's size, for walking backwards), as Redis
// writes it: 7 bits a byte, the most significant group first, every byte but the first with
// its top bit set. Returns how many bytes it takes (1 to 5).
inline std::size_t lp_backlen(std::size_t l, char* out) noexcept {
  std::size_t n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3 : l < 268435455 ? 4 : 5;
  for (std::size_t i = 0; i < n; ++i) {
    const auto group = static_cast<unsigned>((l >> (7 * (n - 1 - i))) & 127u);
    out[i] = static_cast<char>(i == 0 ? group : group | 128u);
  }
  return n;
}

// Calls fn(std::string) for each element of a listpack; false if malformed.
template <class Fn>
bool listpack_each(std::string_view lp, Fn&& fn) {
  if (lp.size() < 7) return false;
  if (le_at(lp, 0, 4) != lp.size()) return false;
  std::size_t p = 6;
  std::size_t count = 0;
  for (;;) {
    if (p >= lp.size()) return false;
    const unsigned b = static_cast<unsigned char>(lp[p]);
    if (b == 0xFF) break;
    std::size_t head = 0, len = 0;  // the encoding's bytes, and the string's (0 for an integer)
    bool is_int = true;
    std::int64_t v = 0;
    const auto need = [&](std::size_t n) { return n <= lp.size() - p; };
    if ((b & 0x80u) == 0) {
      head = 1;
      v = b & 0x7F;
    } else if ((b & 0xC0u) == 0x80u) {
      head = 1;
      len = b & 0x3Fu;
      is_int = false;
    } else if ((b & 0xE0u) == 0xC0u) {
      if (!need(2)) return false;
      head = 2;
      v = sign_extend((std::uint64_t{b} & 0x1Fu) << 8 | static_cast<unsigned char>(lp[p + 1]), 13);
    } else if ((b & 0xF0u) == 0xE0u) {
      if (!need(2)) return false;
      head = 2;
      len = (std::size_t{b} & 0x0Fu) << 8 | static_cast<unsigned char>(lp[p + 1]);
      is_int = false;
    } else if (b == 0xF0) {
      if (!need(5)) return false;
      head = 5;
      len = static_cast<std::size_t>(le_at(lp, p + 1, 4));
      is_int = false;
    } else if (b >= 0xF1 && b <= 0xF4) {
      static constexpr std::size_t kBytes[] = {2, 3, 4, 8};
      const std::size_t n = kBytes[b - 0xF1];
      if (!need(1 + n)) return false;
      head = 1 + n;
      v = sign_extend(le_at(lp, p + 1, n), static_cast<unsigned>(8 * n));
    } else {
      return false;  // 0xF5 .. 0xFE are unused
    }
    if (!is_int && len > lp.size() - p - head) return false;
    const std::size_t entry = head + len;
    char want[5];
    const std::size_t back = lp_backlen(entry, want);
    if (back > lp.size() - p - entry || std::memcmp(want, lp.data() + p + entry, back) != 0) return false;
    if (is_int) {
      fn(std::to_string(v));
    } else {
      fn(std::string(lp.substr(p + head, len)));
    }
    p += entry + back;
    ++count;
  }
  if (p + 1 != lp.size()) return false;
  const std::uint64_t n16 = le_at(lp, 4, 2);
  return n16 == 65535 || n16 == count;  // 65535: "too many to count"
}

// Calls fn(std::string) for each element of a ziplist (Redis < 7); false if malformed.
template <class Fn>
bool ziplist_each(std::string_view zl, Fn&& fn) {
  if (zl.size() < 11) return false;
  if (le_at(zl, 0, 4) != zl.size()) return false;
  std::size_t p = 10;
  std::size_t count = 0;
  for (;;) {
    if (p >= zl.size()) return false;
    if (static_cast<unsigned char>(zl[p]) == 0xFF) break;
    // prevlen: 1 byte, or 0xFE then 4 bytes
    p += static_cast<unsigned char>(zl[p]) == 0xFE ? 5 : 1;
    if (p >= zl.size()) return false;
    const unsigned b = static_cast<unsigned char>(zl[p]);
    const std::size_t rem = zl.size() - p;
    std::size_t head = 0, len = 0;
    bool is_int = true;
    std::int64_t v = 0;
    switch (b >> 6) {
      case 0: head = 1; len = b & 0x3Fu; is_int = false; break;
      case 1:
        if (rem < 2) return false;
        head = 2; len = (std::size_t{b} & 0x3Fu) << 8 | static_cast<unsigned char>(zl[p + 1]); is_int = false;
        break;
      case 2:
        if (b != 0x80 || rem < 5) return false;
        head = 5;
        len = static_cast<std::size_t>(static_cast<std::uint64_t>(static_cast<unsigned char>(zl[p + 1])) << 24 |
                                       static_cast<std::uint64_t>(static_cast<unsigned char>(zl[p + 2])) << 16 |
                                       static_cast<std::uint64_t>(static_cast<unsigned char>(zl[p + 3])) << 8 |
                                       static_cast<unsigned char>(zl[p + 4]));
        is_int = false;
        break;
      default: {
        std::size_t n = 0;
        if (b == 0xC0) n = 2;
        else if (b == 0xD0) n = 4;
        else if (b == 0xE0) n = 8;
        else if (b == 0xF0) n = 3;
        else if (b == 0xFE) n = 1;
        else if (b >= 0xF1 && b <= 0xFD) { head = 1; v = static_cast<std::int64_t>(b & 0x0Fu) - 1; break; }
        else return false;
        if (rem < 1 + n) return false;
        head = 1 + n;
        v = sign_extend(le_at(zl, p + 1, n), static_cast<unsigned>(8 * n));
      }
    }
    if (!is_int && len > rem - head) return false;
    if (is_int) {
      fn(std::to_string(v));
    } else {
      fn(std::string(zl.substr(p + head, len)));
    }
    p += head + len;
    ++count;
  }
  if (p + 1 != zl.size()) return false;
  const std::uint64_t n16 = le_at(zl, 8, 2);
  return n16 == 65535 || n16 == count;
}

// ---- Values ---------------------------------------------------------------------------------

// Reads the value of type `t` into v; skip: consume it without keeping it (other types).
// false on failure (the reader holds the error).
inline bool read_value(Reader& r, unsigned t, Value& v, const std::string& key) {
  const std::string what = "the value of key '" + key + "'";
  const char* w = what.c_str();
  v.is_hash = false;
  v.str.clear();
  v.fields.clear();
  switch (t) {
    case kString: return r.string(v.str, w);
    case kHash: case kHashMetadata: case kHashMetadataPreGa: {
      v.is_hash = true;
      std::uint64_t min_expire = 0;
      if (t == kHashMetadata && !r.le(8, min_expire, w)) return false;
      if (t == kHashMetadata && min_expire > kMaxFieldExpire + 1) {
        return r.fail(Errc::corrupt_file, "a hash's minimum field deadline out of range in " + what);
      }
      std::uint64_t n = 0;
      if (!r.plain_length(n, w)) return false;
      if (n > r.left() / 2) return r.short_input(w);  // each field takes 2 bytes at least
      v.fields.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) {
        HashField f{{}, {}, 0};
        if (t != kHash) {
          std::uint64_t ttl = 0;
          if (!r.plain_length(ttl, w)) return false;
          if (t == kHashMetadata) {
            if (ttl != 0 && ttl - 1 > kMaxFieldExpire - std::min(min_expire, kMaxFieldExpire)) {
              return r.fail(Errc::corrupt_file, "a field deadline out of range in " + what);
            }
            f.deadline = ttl == 0 ? 0 : ttl + min_expire - 1;
          } else {
            f.deadline = ttl;
          }
          if (f.deadline > kMaxFieldExpire) return r.fail(Errc::corrupt_file, "a field deadline out of range in " + what);
        }
        if (!r.string(f.name, w) || !r.string(f.value, w)) return false;
        v.fields.push_back(std::move(f));
      }
      return true;
    }
    case kHashZiplist: case kHashListpack: case kHashListpackEx: case kHashListpackExPreGa: {
      v.is_hash = true;
      if (t == kHashListpackEx) {
        std::uint64_t min_expire = 0;
        if (!r.le(8, min_expire, w)) return false;
      }
      std::string blob;
      if (!r.string(blob, w)) return false;
      const std::size_t tuple = (t == kHashListpackEx || t == kHashListpackExPreGa) ? 3 : 2;
      std::vector<std::string> items;
      const auto take = [&](std::string s) { items.push_back(std::move(s)); };
      const bool ok = t == kHashZiplist ? ziplist_each(blob, take) : listpack_each(blob, take);
      if (!ok) return r.fail(Errc::corrupt_file, "a malformed " + std::string(t == kHashZiplist ? "ziplist" : "listpack") + " in " + what);
      if (items.size() % tuple != 0) return r.fail(Errc::corrupt_file, "a hash with an odd element count in " + what);
      v.fields.reserve(items.size() / tuple);
      for (std::size_t i = 0; i < items.size(); i += tuple) {
        HashField f{std::move(items[i]), std::move(items[i + 1]), 0};
        if (tuple == 3) {
          const std::string& ttl = items[i + 2];
          std::uint64_t d = 0;
          for (const char c : ttl) {
            if (c < '0' || c > '9' || d > kMaxFieldExpire) return r.fail(Errc::corrupt_file, "a bad field deadline in " + what);
            d = d * 10 + static_cast<unsigned>(c - '0');
          }
          if (ttl.empty() || d > kMaxFieldExpire) return r.fail(Errc::corrupt_file, "a bad field deadline in " + what);
          f.deadline = d;
        }
        v.fields.push_back(std::move(f));
      }
      return true;
    }
    default: break;
  }
  return false;
}

// Consumes a value of another type (list, set, zset, module value Redis can parse); false
// with the reader's error when it cannot (a stream, a malformed value).
inline bool skip_value(Reader& r, unsigned t, const std::string& key) {
  const std::string what = "the " + std::string(type_name(t)) + " value of key '" + key + "'";
  const char* w = what.c_str();
  std::uint64_t n = 0;
  switch (t) {
    case kList: case kSet:
      if (!r.plain_length(n, w)) return false;
      for (std::uint64_t i = 0; i < n; ++i) {
        if (!r.skip_string(w)) return false;
      }
      return true;
    case kZset: case kZset2:
      if (!r.plain_length(n, w)) return false;
      for (std::uint64_t i = 0; i < n; ++i) {
        if (!r.skip_string(w)) return false;
        if (t == kZset2) {
          std::string_view d;
          if (!r.bytes(8, d, w)) return false;
        } else if (!r.skip_text_double(w)) {
          return false;
        }
      }
      return true;
    case kListQuicklist:
      if (!r.plain_length(n, w)) return false;
      for (std::uint64_t i = 0; i < n; ++i) {
        if (!r.skip_string(w)) return false;
      }
      return true;
    case kListQuicklist2:
      if (!r.plain_length(n, w)) return false;
      for (std::uint64_t i = 0; i < n; ++i) {
        std::uint64_t container = 0;
        if (!r.plain_length(container, w) || !r.skip_string(w)) return false;
      }
      return true;
    case kHashZipmap: case kListZiplist: case kSetIntset: case kZsetZiplist: case kZsetListpack: case kSetListpack:
      return r.skip_string(w);
    default:
      return r.fail(Errc::unsupported_type, "cannot skip " + what + " (type " + std::to_string(t) + ")");
  }
}

// Makes `out` (the store's value prototype) the value read into `in` (whose strings it
// takes); on failure, the error's code and what went wrong: a type the store does not hold,
// a duplicate field, a field deadline past what a FieldMap holds.
template <class Store, class V>
std::optional<std::pair<Errc, std::string>> to_store_value(const Store& s, Value& in, V& out) {
  if (in.is_hash) {
    if constexpr (hash_value_traits<V>::enabled) {
      auto* m = hash_value_traits<V>::map(out);
      if (m == nullptr) {  // a redis::Value: make it a hash with the store's field hasher
        out = V(typename hash_value_traits<V>::map_type(s.field_hash_function()));
        m = hash_value_traits<V>::map(out);
      }
      for (HashField& f : in.fields) {
        // Redis reads field deadlines up to 2^48 - 1 ms and its commands set them up to
        // 2^46 - 1 ms, a FieldMap's limit: a larger one (year 6429 and on) is refused here.
        if (f.deadline > static_cast<std::uint64_t>(hash_value_traits<V>::map_type::kMaxDeadline)) {
          return std::make_pair(Errc::corrupt_file, std::string("a field deadline past 2^46 - 1 ms"));
        }
        const auto placed = m->assign(std::move(f.name), std::move(f.value));
        if (!placed.second) return std::make_pair(Errc::corrupt_file, std::string("a hash with a duplicate field"));
        if (f.deadline != 0) m->set_deadline(placed.first, static_cast<std::int64_t>(f.deadline));
      }
      return std::nullopt;
    } else {
      return std::make_pair(Errc::unsupported_type, std::string("a hash, and the store holds strings"));
    }
  }
  if constexpr (std::is_constructible_v<V, std::string>) {
    out = V(std::move(in.str));
    return std::nullopt;
  } else {
    (void)s;
    return std::make_pair(Errc::unsupported_type, std::string("a string, and the store holds hashes"));
  }
}

// A key as read: its value, deadline and where its record began.
struct Entry {
  std::string key;
  Value value;
  std::int64_t expire_ms = 0;
  bool timed = false;
  std::uint64_t offset = 0;
  std::uint64_t db = 0;  // the database SELECTDB chose
};

// Parses a whole RDB file, calling take(Entry&) for each key of a database wants(db) accepts
// (the others counted); take returns an error to stop with. false on failure (the reader holds
// the error, or `stopped` take's).
// `size_hint`: what RESIZEDB said of the size of the database being read, when wanted (a hint
// a hostile file may inflate).
template <class Wants, class Take>
bool parse(Reader& r, std::string_view in, const RdbLoadOptions& o, RdbInfo& info, Wants&& wants, Take&& take,
           std::optional<FileError>& stopped, std::uint64_t& size_hint) {
  std::string_view magic;
  if (!r.bytes(9, magic, "the header")) return false;
  if (magic.substr(0, 5) != "REDIS") return r.fail(Errc::corrupt_file, "bad magic: not an RDB file (no \"REDIS\")");
  unsigned version = 0;
  for (std::size_t i = 5; i < 9; ++i) {
    if (magic[i] < '0' || magic[i] > '9') return r.fail(Errc::corrupt_file, "bad version digits in the header");
    version = version * 10 + static_cast<unsigned>(magic[i] - '0');
  }
  if (version < 1 || version > kMaxVersion) {
    return r.fail(Errc::unsupported_version, "RDB version " + std::to_string(version) + " (this build reads 1 to " +
                                                 std::to_string(kMaxVersion) + ")");
  }
  info.version = version;
  std::uint64_t db = 0;
  std::int64_t expire = 0;
  bool timed = false;
  Entry entry;  // (one, reused: its buffers keep their room from key to key)
  for (;;) {
    const std::uint64_t at = r.offset();
    unsigned op = 0;
    if (!r.byte(op, "an opcode")) return false;
    switch (op) {
      case kEof: {
        const std::size_t body = static_cast<std::size_t>(r.offset());
        if (version >= 5) {
          std::uint64_t stored = 0;
          if (!r.le(8, stored, "the checksum")) return false;
          const std::uint64_t computed = crc64(0, in.data(), body);
          if (stored != 0 && stored != computed) {
            return r.fail(Errc::corrupt_file, "checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                                                  std::to_string(computed) + ")");
          }
        }
        if (r.left() != 0) return r.fail(Errc::corrupt_file, "bytes after the end of the RDB");
        return true;
      }
      case kSelectDb:
        if (!r.plain_length(db, "SELECTDB")) return false;
        continue;
      case kResizeDb: {
        std::uint64_t a = 0, b = 0;
        if (!r.plain_length(a, "RESIZEDB") || !r.plain_length(b, "RESIZEDB")) return false;
        if (wants(db)) size_hint = a;
        continue;
      }
      case kExpireTimeMs: {
        std::uint64_t u = 0;
        if (!r.le(8, u, "EXPIRETIME_MS")) return false;
        expire = static_cast<std::int64_t>(u);
        timed = true;
        continue;
      }
      case kExpireTime: {
        std::uint64_t u = 0;
        if (!r.le(4, u, "EXPIRETIME")) return false;
        expire = static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(u))) * 1000;
        timed = true;
        continue;
      }
      case kIdle: {
        std::uint64_t idle = 0;
        if (!r.plain_length(idle, "IDLE")) return false;
        continue;
      }
      case kFreq: {
        unsigned f = 0;
        if (!r.byte(f, "FREQ")) return false;
        continue;
      }
      case kAux: {
        std::string k, v;
        if (!r.string(k, "an AUX field") || !r.string(v, "an AUX field")) return false;
        info.aux.emplace_back(std::move(k), std::move(v));
        continue;
      }
      case kFunction2:
        if (!r.skip_string("a function library")) return false;
        continue;
      case kSlotInfo: {
        std::uint64_t a = 0;
        for (int i = 0; i < 3; ++i) {
          if (!r.plain_length(a, "SLOT_INFO")) return false;
        }
        continue;
      }
      case kModuleAux: case kFunctionPreGa:
        return r.fail(Errc::unsupported_type, std::string(op == kModuleAux ? "module auxiliary data" : "a 7.0 RC function") +
                                                  " (a module's own encoding)");
      default: break;
    }
    // A key: type, key, value.
    std::string key;
    if (!r.string(key, "a key")) return false;
    const bool ours = wants(db);
    const bool known = op == kString || op == kHash || op == kHashZiplist || op == kHashListpack ||
                       op == kHashMetadata || op == kHashMetadataPreGa || op == kHashListpackEx ||
                       op == kHashListpackExPreGa;
    if (!known) {
      if (op > kHashListpackEx || op == 8) return r.fail(Errc::corrupt_file, "unknown value type " + std::to_string(op) + " of key '" + key + "'");
      if (!o.skip_other_types && ours) {
        return r.fail(Errc::unsupported_type, "key '" + key + "' holds a " + type_name(op) +
                                                  ", which the store does not hold (RdbLoadOptions::skip_other_types skips it)");
      }
      if (!skip_value(r, op, key)) return false;
      if (ours) ++info.skipped;
      else ++info.other_db;
      timed = false;
      continue;
    }
    entry.key = std::move(key);
    entry.expire_ms = expire;
    entry.timed = timed;
    entry.offset = at;
    entry.db = db;
    timed = false;
    if (!read_value(r, op, entry.value, entry.key)) return false;
    if (!ours) {
      ++info.other_db;
      continue;
    }
    if (entry.value.is_hash && entry.value.fields.empty()) {
      return r.fail(Errc::corrupt_file, "key '" + entry.key + "' is an empty hash");
    }
    stopped = take(entry);
    if (stopped) return false;
  }
}

// The loader of every form: database base + i of the file goes to dbs[i] (null: skipped and
// counted), and every non-null store is replaced. Nothing is changed until the whole input has
// been read and checked.
template <class Store>
FileResult<RdbInfo> load_databases(Store* const* dbs, std::size_t n, std::uint64_t base, std::string_view bytes,
                                   const RdbLoadOptions& options) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  static_assert(std::is_same_v<K, std::string>, "expiring::load_rdb: RDB keys are byte strings; use a store of std::string keys");
  constexpr bool kTakesHashes = hash_value_traits<V>::enabled;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (dbs[i] != nullptr && dbs[i] == dbs[j]) {
        return FileError{Errc::out_of_range, 0, "databases " + std::to_string(j) + " and " + std::to_string(i) + " are one store"};
      }
    }
  }
  RdbInfo info;
  info.bytes = bytes.size();
  // Each key becomes its store's value as it is read, and is checked for a duplicate; a key
  // past its deadline is skipped (primary).
  const bool primary = options.as == LoadAs::primary;
  std::vector<std::vector<LoadedKey<K, V>>> keys(n);
  std::vector<std::size_t> live(n, 0);
  std::vector<std::int64_t> now(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (dbs[i] != nullptr) now[i] = dbs[i]->now_ms();
  }
  std::uint64_t size_hint = 0;
  const auto wants = [&](std::uint64_t db) { return db >= base && db - base < n && dbs[db - base] != nullptr; };
  const auto take = [&](Entry& e) -> std::optional<FileError> {
    const std::size_t d = static_cast<std::size_t>(e.db - base);
    Store& s = *dbs[d];
    std::vector<LoadedKey<K, V>>& into = keys[d];
    if (into.empty()) {
      // RESIZEDB's count, but no more than a key per 16 bytes of input (a file of tinier keys
      // grows the vector as they come; a hostile hint reserves no more than that).
      into.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size_hint, bytes.size() / 16)));
    }
    const auto fail = [&](Errc c, const std::string& what) {
      return FileError{c, e.offset, "key '" + e.key + "' at offset " + std::to_string(e.offset) + ": " + what};
    };
    V value = value_prototype<V>(s);
    bool skipped = primary && e.timed && now[d] > e.expire_ms;
    if (auto bad = to_store_value(s, e.value, value)) return fail(bad->first, bad->second);
    if constexpr (kTakesHashes) {
      if (e.value.is_hash && primary && !skipped) {
        auto* m = hash_value_traits<V>::map(value);
        const std::size_t gone = m->reclaim_due(now[d], std::numeric_limits<std::size_t>::max(), [](auto&, std::int64_t) {});
        info.expired_fields += gone;
        if (gone != 0 && m->empty()) skipped = true;
      }
    }
    if (skipped) {
      ++info.expired;
      value = value_prototype<V>(s);
    } else {
      ++live[d];
    }
    if (into.size() >= SeenKeys<Store, LoadedKey<K, V>>::kMaxRecords) {
      return fail(Errc::out_of_memory, "more keys than a store can hold");
    }
    const std::uint64_t h = loaded_hash(s, e.key);
    into.push_back(LoadedKey<K, V>{std::move(e.key), std::move(value), h, e.expire_ms, e.offset, e.timed, skipped});
    return std::nullopt;
  };
  Reader r(bytes);
  std::optional<FileError> stopped;
  if (!parse(r, bytes, options, info, wants, take, stopped, size_hint)) return stopped ? *stopped : r.error();
  // Two records of one key in one database (by the store's hash and equality), found at once.
  for (std::size_t d = 0; d < n; ++d) {
    if (dbs[d] == nullptr) continue;
    if (const auto dup = SeenKeys<Store, LoadedKey<K, V>>(*dbs[d]).first_duplicate(keys[d])) {
      const auto& later = keys[d][dup->second];
      return FileError{Errc::corrupt_file, later.offset,
                       "key '" + later.key + "' at offset " + std::to_string(later.offset) + " appears twice (first at offset " +
                           std::to_string(keys[d][dup->first].offset) + ")"};
    }
  }

  // Replace each store's content as one unit of its change feed, as snapshot.hpp's load().
  std::optional<FileError> refused;
  for (std::size_t d = 0; d < n && !refused; ++d) {
    if (dbs[d] == nullptr) continue;
    Store& s = *dbs[d];
    std::vector<LoadedKey<K, V>>& ks = keys[d];
    s.as_one_unit([&] {
      s.clear();
      s.reserve(live[d]);
      // Each key's place in the table is fetched 16 records ahead (its control bytes), then 8
      // ahead (its free slot): a large load's cache misses overlap.
      constexpr std::size_t kGroupAhead = 16, kSlotAhead = 8;
      const auto ahead = [&](std::size_t i, std::size_t dist) -> const std::uint64_t* {
        return i + dist < ks.size() && !ks[i + dist].skipped ? &ks[i + dist].hash : nullptr;
      };
      for (std::size_t i = 0; i < ks.size(); ++i) {
        LoadedKey<K, V> e = std::move(ks[i]);  // freed at the end of this iteration
        if (e.skipped) continue;
        const Result<bool> applied = replay_loaded(s, e, now[d], ahead(i, kGroupAhead), ahead(i, kSlotAhead));
        if (!applied.ok()) {
          refused = FileError{applied.error(), e.offset,
                              "the store refused key '" + e.key + "' (" + to_string(applied.error()) + ")"};
          return;
        }
        ++info.keys;
      }
    });
    std::vector<LoadedKey<K, V>>().swap(ks);
  }
  if (refused) return *refused;
  return info;
}

}  // namespace detail::rdb

template <class Store>
FileResult<RdbInfo> load_rdb_bytes(Store& s, std::string_view bytes, const RdbLoadOptions& options) {
  Store* const one = &s;
  return detail::rdb::load_databases(&one, 1, options.db, bytes, options);
}

template <class Store>
FileResult<RdbInfo> load_rdb_databases_bytes(const std::vector<Store*>& dbs, std::string_view bytes, const RdbLoadOptions& options) {
  return detail::rdb::load_databases(dbs.data(), dbs.size(), 0, bytes, options);
}

namespace detail::rdb {

// ---- Writing ------------------------------------------------------------------------------

// The hash type of a store's values (a stand-in for a store of strings, never used).
template <class V, bool = hash_value_traits<V>::enabled>
struct MapOf {
  using type = FieldMap<std::string, std::string>;
};
template <class V>
struct MapOf<V, true> {
  using type = typename hash_value_traits<V>::map_type;
};
// A value that holds a string or something else, and says which (redis::Value's string()).
template <class V, class = void>
struct has_string_member : std::false_type {};
template <class V>
struct has_string_member<V, std::void_t<decltype(std::declval<const V&>().string())>> : std::true_type {};

// Compresses `in` as LZF, appending to `out`; false (out as it was) when the result would
// be longer than `max_out` bytes. Greedy: each position's 3 bytes are looked up in a table of
// the last position that hashed alike, within LZF's 8 KiB window; matches of 3 to 264 bytes.
inline bool lzf_compress(std::string_view in, std::size_t max_out, std::string& out, std::vector<std::uint32_t>& table) {
  constexpr unsigned kBits = 14;
  table.assign(std::size_t{1} << kBits, 0);  // position + 1; 0: none
  const std::size_t start = out.size();
  const std::size_t n = in.size();
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t lit = 0;  // where the pending literal run begins
  const auto literals = [&](std::size_t until) {
    while (lit < until) {
      const std::size_t k = std::min<std::size_t>(32, until - lit);
      out.push_back(static_cast<char>(k - 1));
      out.append(in.data() + lit, k);
      lit += k;
    }
  };
  std::size_t ip = 0;
  while (ip + 2 < n) {
    if (out.size() - start > max_out) {
      out.resize(start);
      return false;
    }
    const std::uint32_t three = std::uint32_t{p[ip]} << 16 | std::uint32_t{p[ip + 1]} << 8 | p[ip + 2];
    const std::size_t h = (three * 2654435761u) >> (32 - kBits);
    const std::size_t cand = table[h];
    table[h] = static_cast<std::uint32_t>(ip + 1);
    if (cand != 0 && ip - (cand - 1) <= 8192 && std::memcmp(p + cand - 1, p + ip, 3) == 0) {
      const std::size_t ref = cand - 1;
      const std::size_t max_len = std::min<std::size_t>(264, n - ip);
      std::size_t len = 3;
      while (len < max_len && p[ref + len] == p[ip + len]) ++len;
      literals(ip);
      const std::size_t off = ip - ref - 1;
      const std::size_t l = len - 2;
      if (l < 7) {
        out.push_back(static_cast<char>((l << 5) | (off >> 8)));
      } else {
        out.push_back(static_cast<char>((7u << 5) | (off >> 8)));
        out.push_back(static_cast<char>(l - 7));
      }
      out.push_back(static_cast<char>(off & 0xFFu));
      ip += len;
      lit = ip;
    } else {
      ++ip;
    }
  }
  literals(n);
  if (out.size() - start > max_out) {
    out.resize(start);
    return false;
  }
  return true;
}

// A canonical decimal integer ("-12", not "012", "+1" or "-0"): its value.
inline bool canonical_int(std::string_view t, std::int64_t& v) noexcept {
  if (t.empty() || t.size() > 20) return false;
  std::size_t i = 0;
  const bool neg = t[0] == '-';
  if (neg) i = 1;
  if (i == t.size()) return false;
  if (t[i] == '0' && (t.size() != 1)) return false;  // leading zero, or "-0"
  std::uint64_t u = 0;
  for (; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') return false;
    const auto d = static_cast<unsigned>(t[i] - '0');
    if (u > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    u = u * 10 + d;
  }
  if (neg) {
    if (u > std::uint64_t{1} << 63) return false;
    v = static_cast<std::int64_t>(0 - u);  // two's complement, INT64_MIN included
  } else {
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    v = static_cast<std::int64_t>(u);
  }
  return true;
}

// Appends RDB encodings to a string.
class Writer {
 public:
  Writer(std::string& out, bool compress) : out_(out), compress_(compress) {}

  void byte(unsigned b) { out_.push_back(static_cast<char>(b)); }
  void le(std::uint64_t v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
  }
  void length(std::uint64_t n) {
    if (n < 64) {
      byte(static_cast<unsigned>(n));
    } else if (n < 16384) {
      byte(static_cast<unsigned>(0x40u | (n >> 8)));
      byte(static_cast<unsigned>(n & 0xFFu));
    } else if (n <= 0xFFFFFFFFu) {
      byte(0x80);
      for (int i = 3; i >= 0; --i) byte(static_cast<unsigned>((n >> (8 * i)) & 0xFFu));
    } else {
      byte(0x81);
      for (int i = 7; i >= 0; --i) byte(static_cast<unsigned>((n >> (8 * i)) & 0xFFu));
    }
  }
  // A string as Redis's rdbSaveRawString writes it: an integer of up to 32 bits when the text
  // is one (and at most 11 characters), else LZF when that saves 4 bytes or more, else raw.
  void string(std::string_view t) {
    std::int64_t v = 0;
    if (t.size() <= 11 && canonical_int(t, v)) {
      if (v >= -128 && v <= 127) {
        byte(0xC0);
        le(static_cast<std::uint64_t>(v), 1);
        return;
      }
      if (v >= -32768 && v <= 32767) {
        byte(0xC1);
        le(static_cast<std::uint64_t>(v), 2);
        return;
      }
      if (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max()) {
        byte(0xC2);
        le(static_cast<std::uint64_t>(v), 4);
        return;
      }
    }
    raw_or_lzf(t);
  }
  // A listpack of the given elements, as Redis's lpAppend encodes each (canonical integers as
  // integers, the rest as strings).
  template <class Each>
  void listpack(std::size_t count, Each&& each) {
    std::string& lp = scratch_;
    lp.assign(6, '\0');
    each([&](std::string_view t) {
      const std::size_t begin = lp.size();
      std::int64_t v = 0;
      if (canonical_int(t, v)) {
        if (v >= 0 && v <= 127) {
          lp.push_back(static_cast<char>(v));
        } else if (v >= -4096 && v <= 4095) {
          const auto u = static_cast<std::uint64_t>(v) & 0x1FFFu;
          lp.push_back(static_cast<char>(0xC0u | (u >> 8)));
          lp.push_back(static_cast<char>(u & 0xFFu));
        } else {
          const std::size_t n = v >= -32768 && v <= 32767 ? 2 : v >= -8388608 && v <= 8388607 ? 3
                                : v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max() ? 4 : 8;
          lp.push_back(static_cast<char>(n == 2 ? 0xF1 : n == 3 ? 0xF2 : n == 4 ? 0xF3 : 0xF4));
          for (std::size_t i = 0; i < n; ++i) lp.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFFu));
        }
      } else if (t.size() < 64) {
        lp.push_back(static_cast<char>(0x80u | t.size()));
        lp.append(t.data(), t.size());
      } else if (t.size() < 4096) {
        lp.push_back(static_cast<char>(0xE0u | (t.size() >> 8)));
        lp.push_back(static_cast<char>(t.size() & 0xFFu));
        lp.append(t.data(), t.size());
      } else {
        lp.push_back(static_cast<char>(0xF0));
        for (std::size_t i = 0; i < 4; ++i) lp.push_back(static_cast<char>((t.size() >> (8 * i)) & 0xFFu));
        lp.append(t.data(), t.size());
      }
      char back[5];
      lp.append(back, lp_backlen(lp.size() - begin, back));
    });
    lp.push_back(static_cast<char>(0xFF));
    const std::size_t total = lp.size();
    for (std::size_t i = 0; i < 4; ++i) lp[i] = static_cast<char>((total >> (8 * i)) & 0xFFu);
    const std::size_t n16 = count < 65535 ? count : 65535;
    lp[4] = static_cast<char>(n16 & 0xFFu);
    lp[5] = static_cast<char>(n16 >> 8);
    raw_or_lzf(lp);  // (a listpack is never integer-encoded)
  }

 private:
  // A string as LZF when that saves 4 bytes or more (and compression is on), else raw.
  void raw_or_lzf(std::string_view t) {
    if (compress_ && t.size() > 20) {
      lzf_.clear();
      if (lzf_compress(t, t.size() - 4, lzf_, table_)) {
        byte(0xC3);
        length(lzf_.size());
        length(t.size());
        out_.append(lzf_);
        return;
      }
    }
    length(t.size());
    out_.append(t.data(), t.size());
  }

  std::string& out_;
  bool compress_;
  std::string scratch_;  // a listpack being built
  std::string lzf_;      // a string being compressed
  std::vector<std::uint32_t> table_;
};

// The map of a value, or nullptr for a string.
template <class V>
const typename MapOf<V>::type* map_of(const V& v) {
  if constexpr (hash_value_traits<V>::enabled) {
    return hash_value_traits<V>::map(v);
  } else {
    (void)v;
    return nullptr;
  }
}
// The text of a string value.
template <class V>
std::string_view text_of(const V& v) {
  if constexpr (std::is_convertible_v<const V&, std::string_view>) {
    return v;
  } else if constexpr (has_string_member<V>::value) {  // redis::Value: a string or a hash
    return *v.string();
  } else {
    static_assert(hash_value_traits<V>::enabled, "expiring: RDB values must be strings, hashes or redis::Value");
    (void)v;
    return {};
  }
}
// Whether any field of the value has a TTL: it needs version 12's types then.
template <class V>
bool has_field_ttls(const V& v) {
  const auto* m = map_of(v);
  return m != nullptr && m->volatile_count() != 0;
}

// Writes one object as Redis's rdbSaveObjectType + (the key) + rdbSaveObject do: its type
// byte, then `key` unless it is null (DUMP writes none), then its value. A string as Redis
// encodes it; a hash with a field TTL as Redis 7.4's hash with metadata, else as a listpack
// when Redis would keep it in one (at most 128 fields of at most 64 bytes), else a hashtable.
template <class V>
void write_object(Writer& w, const V& v, const std::string_view* key) {
  using Map = typename MapOf<V>::type;
  const Map* m = map_of(v);
  const auto head = [&](unsigned type) {
    w.byte(type);
    if (key != nullptr) w.string(*key);
  };
  if (m == nullptr) {
    head(kString);
    w.string(text_of(v));
    return;
  }
  if (m->volatile_count() != 0) {
    // The earliest deadline, then per field its deadline relative to it plus 1 (0: none),
    // its name, its value.
    std::int64_t min = Map::kNoDeadline;
    for (std::uint32_t i = 0; i < m->size(); ++i) min = std::min(min, m->deadline(i));
    head(kHashMetadata);
    w.le(static_cast<std::uint64_t>(min), 8);
    w.length(m->size());
    for (std::uint32_t i = 0; i < m->size(); ++i) {
      const std::int64_t d = m->deadline(i);
      w.length(d == Map::kNoDeadline ? 0 : static_cast<std::uint64_t>(d - min) + 1);
      w.string(m->at(i).name);
      w.string(m->at(i).value);
    }
    return;
  }
  bool small = m->size() <= 128;
  for (std::uint32_t i = 0; small && i < m->size(); ++i) small = m->at(i).name.size() <= 64 && m->at(i).value.size() <= 64;
  if (small) {
    head(kHashListpack);
    w.listpack(2 * std::size_t{m->size()}, [&](auto&& put) {
      for (std::uint32_t i = 0; i < m->size(); ++i) {
        put(std::string_view(m->at(i).name));
        put(std::string_view(m->at(i).value));
      }
    });
    return;
  }
  head(kHash);
  w.length(m->size());
  for (std::uint32_t i = 0; i < m->size(); ++i) {
    w.string(m->at(i).name);
    w.string(m->at(i).value);
  }
}

}  // namespace detail::rdb

namespace detail::rdb {

// The writer of every form: dbs[i] as database i (an empty or null one is left out).
template <class Store>
FileResult<RdbInfo> save_databases(const Store* const* dbs, std::size_t count, std::string& out, const RdbSaveOptions& options) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  static_assert(std::is_same_v<K, std::string>, "expiring::save_rdb: RDB keys are byte strings; use a store of std::string keys");
  static_assert(detail::is_sharded<Store>::value || detail::has_visit_stored<Store>::value,
                "expiring::save_rdb: an in-process store (ExpiringStore, ConcurrentStore); a Redis server saves itself");
  namespace rdb = detail::rdb;
  // One pass. The header says version 10 and Redis 7.0, and becomes 12 and 7.4 (the same
  // length) if a field has a TTL; RESIZEDB is a hint (the store's counts as of the start).
  RdbInfo info;
  const std::size_t begin = out.size();
  out += "REDIS0010";
  rdb::Writer w(out, options.compress);
  const auto aux = [&](std::string_view k, std::string_view v) {
    w.byte(rdb::kAux);
    w.string(k);
    const std::size_t at = out.size();
    w.string(v);
    info.aux.emplace_back(std::string(k), std::string(v));
    return at;
  };
  const std::size_t ver_at = aux("redis-ver", "7.0.0");  // the format's, for tools that read it
  aux("redis-bits", "64");
  std::int64_t ctime_ms = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (dbs[i] != nullptr) {
      ctime_ms = dbs[i]->now_ms();
      break;
    }
  }
  aux("ctime", std::to_string(ctime_ms / 1000));
  std::uint64_t keys = 0;
  bool field_ttls = false;
  // One key's record; a replica's hash emptied by its own reclaim (D31) is left out, as
  // snapshot.hpp's save() leaves it (no RDB holds an empty hash).
  const auto record = [&](rdb::Writer& to, const K& k, const V& v, const std::optional<std::int64_t>& deadline) {
    if (detail::is_empty_hash(v)) return false;
    if (deadline) {
      to.byte(rdb::kExpireTimeMs);
      to.le(static_cast<std::uint64_t>(*deadline), 8);
    }
    const std::string_view key(k);
    rdb::write_object(to, v, &key);
    field_ttls = field_ttls || rdb::has_field_ttls(v);
    return true;
  };
  for (std::size_t db = 0; db < count; ++db) {
    if (dbs[db] == nullptr || dbs[db]->size() == 0) continue;
    const Store& s = *dbs[db];
    w.byte(rdb::kSelectDb);
    w.length(db);
    w.byte(rdb::kResizeDb);
    w.length(s.size());
    w.length(s.expires_size());
    if constexpr (detail::is_sharded<Store>::value) {
      // Shard by shard in bounded steps (a writer waits for one step); a shard that rehashes
      // during its walk is walked again from an empty part, as snapshot.hpp's save() does.
      std::string part;
      for (std::size_t i = 0; i < s.shard_count(); ++i) {
        part.clear();
        rdb::Writer pw(part, options.compress);
        std::uint64_t n = 0, cursor = 0;
        for (;;) {
          cursor = s.scan_stored(i, cursor, 256, [&](const K& k, const V& v, const std::optional<std::int64_t>& d) {
            if (record(pw, k, v, d)) ++n;
          });
          if (cursor == Store::kRestarted) {
            part.clear();
            n = 0;
            cursor = 0;
            continue;
          }
          if (cursor == 0) break;
        }
        out += part;
        keys += n;
      }
    } else {
      s.visit_stored([&](const K& k, const V& v, const std::optional<std::int64_t>& deadline) {
        if (record(w, k, v, deadline)) ++keys;
      });
    }
  }
  if (field_ttls) {  // Redis 7.4's hash with metadata: version 12
    out[begin + 7] = '1';
    out[begin + 8] = '2';
    out[ver_at + 3] = '4';  // "7.0.0" -> "7.4.0" (a length byte, then the text)
    info.aux[0].second = "7.4.0";
  }
  info.version = field_ttls ? 12 : 10;
  w.byte(rdb::kEof);
  w.le(rdb::crc64(0, out.data() + begin, out.size() - begin), 8);
  info.keys = keys;
  info.bytes = out.size() - begin;
  return info;
}

}  // namespace detail::rdb

template <class Store>
FileResult<RdbInfo> save_rdb(const Store& s, std::string& out, const RdbSaveOptions& options) {
  const Store* const one = &s;
  return detail::rdb::save_databases(&one, 1, out, options);
}

template <class Store>
FileResult<RdbInfo> save_rdb_databases(const std::vector<Store*>& dbs, std::string& out, const RdbSaveOptions& options) {
  using S = const Store;
  std::vector<S*> c(dbs.begin(), dbs.end());
  return detail::rdb::save_databases(c.data(), c.size(), out, options);
}

#if defined(EXPIRING_SNAPSHOT_POSIX)
namespace detail::rdb {

template <class Save>
FileResult<RdbInfo> save_file(const std::string& path, Save&& save) {
  return write_file_atomically<RdbInfo>(path, [&](FdSink& sink) -> FileResult<RdbInfo> {
    std::string bytes;
    FileResult<RdbInfo> r = save(bytes);
    if (!r.ok()) return r;
    if (!sink.write(bytes.data(), bytes.size())) return FileError{Errc::io_error, 0, sink.describe()};
    return r;
  });
}

// The regular file at `path`, read whole.
inline FileResult<std::string> read_file(const std::string& path) {
  std::uint64_t size = 0;
  int err = 0;
  std::string why;
  const int fd = detail::open_regular(path.c_str(), O_RDONLY, size, err, why);
  if (fd < 0) return FileError{Errc::io_error, 0, "cannot open '" + path + "' (" + why + ")"};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > std::numeric_limits<std::size_t>::max()) return FileError{Errc::out_of_memory, 0, "'" + path + "' is larger than memory"};
  std::string bytes(static_cast<std::size_t>(size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, &bytes[got], bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError{Errc::io_error, got, "reading '" + path + "': " + std::strerror(errno)};
    if (n == 0) return FileError{Errc::io_error, got, "'" + path + "' shrank while being read"};
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace detail::rdb

template <class Store>
FileResult<RdbInfo> save_rdb(const Store& s, const std::string& path, const RdbSaveOptions& options) {
  return detail::rdb::save_file(path, [&](std::string& out) { return save_rdb(s, out, options); });
}
template <class Store>
FileResult<RdbInfo> save_rdb_databases(const std::vector<Store*>& dbs, const std::string& path, const RdbSaveOptions& options) {
  return detail::rdb::save_file(path, [&](std::string& out) { return save_rdb_databases(dbs, out, options); });
}
template <class Store>
FileResult<RdbInfo> load_rdb(Store& s, const std::string& path, const RdbLoadOptions& options) {
  FileResult<std::string> bytes = detail::rdb::read_file(path);
  if (!bytes.ok()) return bytes.error();
  return load_rdb_bytes(s, *bytes, options);
}
template <class Store>
FileResult<RdbInfo> load_rdb_databases(const std::vector<Store*>& dbs, const std::string& path, const RdbLoadOptions& options) {
  FileResult<std::string> bytes = detail::rdb::read_file(path);
  if (!bytes.ok()) return bytes.error();
  return load_rdb_databases_bytes(dbs, *bytes, options);
}
#endif  // EXPIRING_SNAPSHOT_POSIX


// ---- DUMP and RESTORE ----------------------------------------------------------------------

template <class V>
std::string dump_value(const V& v) {
  namespace rdb = detail::rdb;
  std::string out;
  rdb::Writer w(out, true);
  rdb::write_object(w, v, nullptr);
  w.le(rdb::has_field_ttls(v) ? 12 : 10, 2);
  w.le(rdb::crc64(0, out.data(), out.size()), 8);
  return out;
}

template <class Store>
std::optional<std::string> dump(Store& s, const std::string& key) {
  const auto v = s.get(key);  // a pointer (ExpiringStore) or an optional copy (ConcurrentStore)
  if (!v) return std::nullopt;
  return dump_value(*v);
}

namespace detail::rdb {

// Checks a DUMP payload's footer and decodes its value into `v`; the error, if any.
inline std::optional<FileError> decode_dump(std::string_view payload, Value& v) {
  if (payload.size() < 10) return FileError{Errc::bad_dump_payload, 0, "a DUMP payload of fewer than 10 bytes"};
  const std::size_t body = payload.size() - 10;
  const auto version = static_cast<unsigned>(le_at(payload, body, 2));
  if (version > kMaxVersion) {
    return FileError{Errc::bad_dump_payload, body, "a DUMP payload of RDB version " + std::to_string(version) +
                                                       " (this build reads up to " + std::to_string(kMaxVersion) + ")"};
  }
  if (le_at(payload, body + 2, 8) != crc64(0, payload.data(), body + 2)) {
    return FileError{Errc::bad_dump_payload, body + 2, "a DUMP payload whose CRC-64 does not match"};
  }
  Reader r(payload.substr(0, body));
  unsigned type = 0;
  if (!r.byte(type, "the value's type")) return r.error();
  const bool known = type == kString || type == kHash || type == kHashZiplist || type == kHashListpack ||
                     type == kHashMetadata || type == kHashMetadataPreGa || type == kHashListpackEx ||
                     type == kHashListpackExPreGa;
  if (!known) {
    if (type > kHashListpackEx || type == 8) return FileError{Errc::corrupt_file, 0, "unknown value type " + std::to_string(type)};
    return FileError{Errc::unsupported_type, 0, std::string("the payload holds a ") + type_name(type) + ", which the store does not hold"};
  }
  if (!read_value(r, type, v, "(restored)")) return r.error();
  if (r.left() != 0) return FileError{Errc::corrupt_file, r.offset(), "bytes after the value"};
  if (v.is_hash && v.fields.empty()) return FileError{Errc::corrupt_file, 0, "an empty hash"};
  return std::nullopt;
}

}  // namespace detail::rdb

template <class Store>
FileResult<bool> restore(Store& s, const std::string& key, std::string_view payload, const RestoreOptions& o) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  namespace rdb = detail::rdb;
  // Redis's order: the options, the existing key, the TTL, the payload.
  if (!o.replace && s.exists(key)) return FileError{Errc::busy_key, 0, "key '" + key + "' exists"};
  if (o.ttl_ms < 0) return FileError{Errc::invalid_expire_time, 0, "a negative TTL"};
  rdb::Value read;
  if (auto bad = rdb::decode_dump(payload, read)) return *bad;
  V value = detail::value_prototype<V>(s);
  if (auto bad = rdb::to_store_value(s, read, value)) return FileError{bad->first, 0, bad->second};
  const std::int64_t now = s.now_ms();
  std::int64_t deadline = o.ttl_ms;
  if (deadline != 0 && !o.absttl && !detail::checked_add(now, deadline, deadline)) {
    return FileError{Errc::invalid_expire_time, 0, "now + TTL overflows"};
  }
  if (deadline != 0 && deadline <= now && !s.options().replica) {
    if (o.replace) (void)s.del(key);
    return false;
  }
  const Change<K, V> c{ChangeOp::set, &key, &value, nullptr, deadline != 0 ? deadline : Store::kNoTtl,
                       deadline != 0 ? ChangeTtl::at : ChangeTtl::none};
  const Result<bool> applied = s.apply(c);
  if (!applied.ok()) return FileError{applied.error(), 0, "the store refused the value (" + std::string(to_string(applied.error())) + ")"};
  if (o.idle_seconds || o.freq) (void)s.set_object_access(key, o.idle_seconds, o.freq);
  return true;
}

}  // namespace expiring
