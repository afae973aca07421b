// expiring/snapshot.hpp: save a whole store to a file or stream, and load it back, in
// absolute time (Redis's SAVE and RDB loading).
//
//   expiring::FileResult<expiring::SnapshotInfo> r = expiring::save(store, "/var/lib/app/dump.snap");
//   if (!r.ok()) log(r.error().message);            // Errc::io_error, with errno's text
//   auto l = expiring::load(store, "/var/lib/app/dump.snap");   // LoadAs::primary
//   if (l == expiring::Errc::corrupt_file) ...     // the store is as it was
//
// Design
// ------
// A snapshot holds every stored key with its value and its absolute deadline (Unix ms), so a
// key keeps its PEXPIRETIME across a save and a load at any later time; its TTL is then
// smaller by the time that passed (semantics.md D33). Keys already past their deadline but not
// yet reclaimed are saved as well, as Redis's RDB does; loading decides what to do with them:
//   * LoadAs::primary (Redis loading an RDB as a master): a key whose deadline has passed
//     (`now > deadline`, now = the loading store's clock) is skipped and counted, and so is a
//     hash field (the whole hash when every field had expired);
//   * LoadAs::replica: every key is kept, stale or not (the primary's DEL will follow).
// Loading reads and verifies the whole input first (magic, version, every record decoded, the
// record count, the checksum) and only then replaces the store's content (clear(), then each
// key through apply(), which takes every key as valid): a corrupt or truncated input is
// refused with the store unchanged. The decoded keys and values are held in memory until
// then (one copy of the data; each is freed as soon as the store has its own). Two records
// of one key (by the store's hash and equality) are corrupt_file at the second, found as it
// is decoded (SeenKeys: 4-byte record numbers into the held records, no copy of a key); so is
// a hash with no field (codec.hpp), a state no store saves: a replica's hash emptied by its
// own reclaim (D31) answers as a missing key, and save() leaves it out.
//
// Loading from a path reads a regular file only: it is opened with O_NOFOLLOW | O_NONBLOCK and
// checked with fstat, so a symbolic link (as the last component), a FIFO (which would block
// the open), a device (/dev/zero never ends) or a directory is Errc::io_error at once; use the
// stream overload to read a pipe. Keeping a name inside a directory is the caller's rule.
//
// Saving to a path writes `path + ".tmp-" + pid` in the same directory, fsyncs it, renames it
// over `path` and fsyncs the directory, so a crash leaves either the old file or the new one
// under `path`, never a part of one. Output is buffered in 64 KiB chunks, with one write per
// chunk; a record is encoded straight into that buffer (no allocation per record).
//
// Format, version 1 (docs/design/snapshot_format.md has it byte by byte). Integers are
// little-endian; varints are unsigned LEB128 in their shortest form.
//
//   header   magic "\x89EXPSNAP" (8 bytes), version u16 = 1, flags u16 = 0,
//            created_ms i64 (the saving store's clock), record count u64       (28 bytes)
//   record   kind u8 (0x01: a key without TTL, 0x02: with a deadline), body length varint,
//            body = [deadline i64, for kind 0x02] key (Codec<K>) value (Codec<V>)
//   end      0xFF, record count u64 (again), CRC-32C (Castagnoli) u32 of every byte before it
//
// Every record says its length, so a cut file is told from a corrupt one (a record that ends
// past the input is truncated_file; one whose body does not decode, or decodes to fewer
// bytes than it says, is corrupt_file), and no length can make the loader allocate more than
// twice the bytes that actually arrived. CRC-32C detects every error burst of up to 32 bits,
// so every single-byte change of a file is caught.
//
// Every deadline the store can hold round-trips, -1 ms and INT64_MAX included (visit_stored()
// tells "no TTL" apart from every deadline, and apply() stores any).
//
// Only the path functions need POSIX (open, fsync, rename); the stream functions are portable.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ios>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "change_feed.hpp"
#include "codec.hpp"
#include "detail/bits.hpp"
#include "error.hpp"
#include "field_map.hpp"

#if defined(__unix__) || defined(__unix) || (defined(__APPLE__) && defined(__MACH__))
// Defined on POSIX systems, where the functions that take a path (open, fsync, rename) exist.
#define EXPIRING_SNAPSHOT_POSIX 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace expiring {

// ---- Public API ------------------------------------------------------------------------

// How load() treats keys whose deadline has already passed.
enum class LoadAs : std::uint8_t {
  primary,  // skip them (Redis's RDB load on a master)
  replica,  // keep them: the primary decides when a key expired
};

// What a save or a load did.
struct SnapshotInfo {
  std::uint64_t keys = 0;            // save: keys written; load: keys now in the store
  std::uint64_t expired = 0;         // load as primary: keys skipped as past their deadline
                                     // (and hashes whose every field was)
  std::uint64_t expired_fields = 0;  // load as primary: hash fields skipped likewise
  std::uint64_t bytes = 0;           // bytes written or read
  std::int64_t created_ms = 0;       // the saving store's clock at save (Unix ms)
  // save: the store's feed_seq() as the save began. The snapshot plus the feed's records
  // numbered after it (Change::seq), replayed in order, give the store's state, even when
  // other threads wrote to a ConcurrentStore during the save.
  std::uint64_t feed_seq = 0;
};

// Why a save or a load failed, and where. `offset` is a byte offset into the file or stream:
// for a truncated input, where it ends; for a corrupt one, the start of the part that is
// wrong; for a write error, the bytes written before it. `message` says both, in English:
// "snapshot: checksum mismatch at offset 1234 (stored 0x1f2e3d4c, computed 0x0a0b0c0d)".
//   Errc::corrupt_file         not a snapshot, or bytes that are not what the format says
//   Errc::truncated_file       the input ends before the snapshot does
//   Errc::unsupported_version  a format version (or flag) this build does not read
//   Errc::io_error             open, read, write, fsync or rename failed (errno's text)
//   another code               the store refused a record (apply()); see load()
struct FileError {
  Errc code{};               // what went wrong (the codes above)
  std::uint64_t offset = 0;  // where: a byte offset from the start of the file or stream
  std::string message;       // what and where, in English
};

// Either a T or a FileError, [[nodiscard]], used as Result<T> (error.hpp) is: ok(), value()
// (throws BadResultAccess on an error), operator*, error(), and `r == Errc::corrupt_file`.
template <class T>
class [[nodiscard]] FileResult {
 public:
  // The type of the value a successful FileResult holds.
  using value_type = T;

  // Implicit from a value (success) or from a FileError (failure), so that a function
  // returning a FileResult can `return value;` or `return FileError{...};`.
  FileResult(T value) : value_(std::move(value)) {}                 // NOLINT: implicit by design
  FileResult(FileError error) : error_(std::move(error)) {}         // NOLINT: implicit by design

  // Whether the result holds a value (no error).
  bool ok() const noexcept { return value_.has_value(); }
  // The error; a default FileError (code Errc{}) when ok().
  const FileError& error() const noexcept { return error_; }
  // The error's code, error().code: Errc{} when ok().
  Errc code() const noexcept { return error_.code; }

  // The value; throws BadResultAccess (with the error's code) when the result holds an error.
  // `*r` and `r->` check the same way: unlike std::optional's, they are never unchecked.
  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  // `r == e`: the result holds an error whose code is `e`. `!=` is the negation of `==`.
  friend bool operator==(const FileResult& r, Errc e) { return !r.ok() && r.error_.code == e; }
  friend bool operator!=(const FileResult& r, Errc e) { return !(r == e); }
  // Writes "ok", or "error(<code>: <message>)".
  friend std::ostream& operator<<(std::ostream& os, const FileResult& r) {
    if (r.ok()) return os << "ok";
    return os << "error(" << r.error_.code << ": " << r.error_.message << ")";
  }

 private:
  void check() const {
    if (!value_) throw BadResultAccess(error_.code);
  }
  std::optional<T> value_;
  FileError error_;
};

// The format version this build writes and reads.
inline constexpr std::uint16_t kSnapshotVersion = 1;

// Writes every stored key of `s` (stale ones included) to `out`. Errc::io_error if the stream
// fails (it is left as the failure left it). Throws what a codec or an allocation throws.
template <class Store, class = std::void_t<typename Store::key_type, typename Store::mapped_type>>
FileResult<SnapshotInfo> save(const Store& s, std::ostream& out);

#if defined(EXPIRING_SNAPSHOT_POSIX)
// Writes a snapshot of `s` to `path`, atomically (see the design above). On any failure the
// temporary file is removed, `path` is untouched and the error is Errc::io_error with errno's
// text; the one exception is a failed fsync of the directory after the rename, which leaves
// the new file in place (its message says so). One save per path at a time in a process (the
// temporary file's name is per process). POSIX only.
template <class Store, class = std::void_t<typename Store::key_type, typename Store::mapped_type>>
FileResult<SnapshotInfo> save(const Store& s, const std::string& path);
#endif

// Reads a snapshot from `in` and, once all of it is verified, replaces the content of `s`
// with it. Reads exactly the snapshot's bytes: the stream is left just after its checksum.
// On an error the store is unchanged, except in one case: when the store refuses a record
// (apply() returns an error; a record it cannot replay), after clear(), the store keeps the
// records before it, and the error carries apply()'s code. Loading goes through clear() and
// apply(): a change feed sees FLUSHALL and a SET per key, a listener `set` (and `expire`)
// events. Throws what a codec or an allocation throws (before clear(): the store unchanged).
template <class Store, class = std::void_t<typename Store::key_type, typename Store::mapped_type>>
FileResult<SnapshotInfo> load(Store& s, std::istream& in, LoadAs as = LoadAs::primary);

// load() from bytes in memory that hold one snapshot and nothing else: bytes after the
// checksum are corrupt_file, and the store is unchanged then (a replica's full sync loads the
// payload its primary sent this way).
template <class Store, class = std::void_t<typename Store::key_type, typename Store::mapped_type>>
FileResult<SnapshotInfo> load_bytes(Store& s, std::string_view bytes, LoadAs as = LoadAs::primary);

#if defined(EXPIRING_SNAPSHOT_POSIX)
// load() from a file; bytes after the checksum are corrupt_file. POSIX only. `path` must be a
// regular file, not a symbolic link, FIFO or device (Errc::io_error, without reading).
template <class Store, class = std::void_t<typename Store::key_type, typename Store::mapped_type>>
FileResult<SnapshotInfo> load(Store& s, const std::string& path, LoadAs as = LoadAs::primary);
#endif

// ---- Implementation --------------------------------------------------------------------

namespace detail {

// A store made of shards (ConcurrentStore): saved and logged one bounded step of one shard at
// a time, while other threads write.
template <class S, class = void>
struct is_sharded : std::false_type {};
template <class S>
struct is_sharded<S, std::void_t<decltype(std::declval<const S&>().shard_count())>> : std::true_type {};
struct AnyVisitor {
  template <class... A>
  void operator()(const A&...) const noexcept {}
};
template <class S, class = void>
struct has_visit_stored : std::false_type {};
template <class S>
struct has_visit_stored<S, std::void_t<decltype(std::declval<const S&>().visit_stored(AnyVisitor{}))>>
    : std::true_type {};
template <class S, class = void>
struct has_apply_set : std::false_type {};
template <class S>
struct has_apply_set<S, std::void_t<decltype(std::declval<S&>().apply_set(std::declval<typename S::key_type&&>(),
                                                                            std::declval<typename S::mapped_type&&>(),
                                                                            std::optional<std::int64_t>()))>>
    : std::true_type {};
template <class S, class = void>
struct has_feed_seq : std::false_type {};
template <class S>
struct has_feed_seq<S, std::void_t<decltype(std::declval<const S&>().feed_seq())>> : std::true_type {};

// ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing by 8 --------------

struct Crc32cTables {
  std::uint32_t t[8][256];
};
constexpr Crc32cTables make_crc32c_tables() {
  Crc32cTables x{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    x.t[0][i] = c;
  }
  for (int s = 1; s < 8; ++s) {
    for (std::uint32_t i = 0; i < 256; ++i) x.t[s][i] = (x.t[s - 1][i] >> 8) ^ x.t[0][x.t[s - 1][i] & 0xFFu];
  }
  return x;
}
inline constexpr Crc32cTables kCrc32c = make_crc32c_tables();

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define EXPIRING_CRC32C_HW 1
// The CPU's CRC32 instruction (SSE 4.2) computes this very CRC, 8 bytes an instruction: used
// when the CPU has it (checked once), whatever the flags the program was compiled with.
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_update_hw(std::uint32_t state, const unsigned char* p,
                                                                      std::size_t n) noexcept {
  std::uint64_t s = state;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    s = __builtin_ia32_crc32di(s, v);
    p += 8;
    n -= 8;
  }
  auto s32 = static_cast<std::uint32_t>(s);
  while (n-- != 0) s32 = __builtin_ia32_crc32qi(s32, *p++);
  return s32;
}
inline bool crc32c_hw_available() noexcept {
  static const bool yes = __builtin_cpu_supports("sse4.2") != 0;
  return yes;
}
#endif

// The running state (start with ~0u; the CRC is ~state): state after `n` more bytes.
inline std::uint32_t crc32c_update(std::uint32_t state, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(EXPIRING_CRC32C_HW)
  if (crc32c_hw_available()) return crc32c_update_hw(state, p, n);
#endif
  const auto& t = kCrc32c.t;
  while (n >= 8) {
    const std::uint32_t lo = state ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
                                      std::uint32_t{p[3]} << 24);
    const std::uint32_t hi =
        std::uint32_t{p[4]} | std::uint32_t{p[5]} << 8 | std::uint32_t{p[6]} << 16 | std::uint32_t{p[7]} << 24;
    state = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^ t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- != 0) state = (state >> 8) ^ t[0][(state ^ *p++) & 0xFFu];
  return state;
}
// CRC-32C of a whole buffer (crc32c("123456789") == 0xE3069283).
inline std::uint32_t crc32c(const void* data, std::size_t n) noexcept { return ~crc32c_update(~0u, data, n); }

// The state after the low `n` bytes of v, little-endian (n = 1, 2, 4 or 8): the same as
// crc32c_update() over those bytes in memory, from a register. A writer that has just stored
// a record's fields would otherwise read them back with loads that span several of its own
// narrower stores, which the CPU cannot forward (a stall of ~15 cycles each).
#if defined(EXPIRING_CRC32C_HW)
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_le_hw(std::uint32_t state, std::uint64_t v,
                                                                   std::size_t n) noexcept {
  switch (n) {
    case 1: return __builtin_ia32_crc32qi(state, static_cast<unsigned char>(v));
    case 2: return __builtin_ia32_crc32hi(state, static_cast<unsigned short>(v));
    case 4: return __builtin_ia32_crc32si(state, static_cast<unsigned int>(v));
    default: return static_cast<std::uint32_t>(__builtin_ia32_crc32di(state, v));
  }
}
#endif
inline std::uint32_t crc32c_le(std::uint32_t state, std::uint64_t v, std::size_t n) noexcept {
#if defined(EXPIRING_CRC32C_HW)
  if (crc32c_hw_available()) return crc32c_le_hw(state, v, n);
#endif
  unsigned char b[8];
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  return crc32c_update(state, b, n);
}

// ---- The format's constants ------------------------------------------------------------

namespace snap {
inline constexpr char kMagic[8] = {'\x89', 'E', 'X', 'P', 'S', 'N', 'A', 'P'};
inline constexpr std::size_t kHeaderBytes = 8 + 2 + 2 + 8 + 8;
inline constexpr unsigned char kKey = 0x01;          // a key without TTL
inline constexpr unsigned char kKeyDeadline = 0x02;  // a key with a deadline
inline constexpr unsigned char kEnd = 0xFF;          // the end marker
inline constexpr std::size_t kEndBytes = 1 + 8 + 4;
inline constexpr std::uint16_t kKnownFlags = 0;      // version 1 defines no flag
inline constexpr std::size_t kChunk = 64 * 1024;

inline std::uint64_t le(const char* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
inline std::int64_t le_i64(const char* p) noexcept {
  const std::uint64_t u = le(p, 8);
  std::int64_t v = 0;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
inline std::string hex32(std::uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 7; i >= 0; --i) s.push_back(kDigits[(v >> (4 * i)) & 0xFu]);
  return s;
}
inline std::string errno_text(int err) { return std::strerror(err); }
inline FileError error(Errc code, std::uint64_t offset, std::string what) {
  return FileError{code, offset, "snapshot: " + std::move(what)};
}
inline std::string at(std::uint64_t offset) { return "at offset " + std::to_string(offset); }
inline std::string record_of(std::uint64_t i, std::uint64_t n) {
  return "record " + std::to_string(i + 1) + " of " + std::to_string(n);
}
}  // namespace snap

// ---- Writing -----------------------------------------------------------------------------

// Buffers a snapshot and hands it to the sink in chunks, keeping the running CRC.
//   sink.write(const char*, std::size_t) -> bool     false: failed (sink.describe() says why)
template <class Sink>
class SnapshotWriter {
 public:
  explicit SnapshotWriter(Sink& sink) : sink_(sink) { buf_.reserve(snap::kChunk + snap::kChunk / 4); }

  std::string& buffer() noexcept { return buf_; }
  bool failed() const noexcept { return failed_; }
  std::uint64_t offset() const noexcept { return flushed_ + buf_.size(); }

  void maybe_flush() {
    if (buf_.size() >= snap::kChunk) flush();
  }
  bool flush() {
    if (failed_) return false;
    if (buf_.empty()) return true;
    crc_ = crc32c_update(crc_, buf_.data(), buf_.size());
    if (!sink_.write(buf_.data(), buf_.size())) {
      failed_ = true;
      return false;
    }
    flushed_ += buf_.size();
    buf_.clear();
    if (buf_.capacity() > 4 * snap::kChunk) {  // after one huge record: back to a chunk
      std::string().swap(buf_);
      buf_.reserve(snap::kChunk + snap::kChunk / 4);
    }
    return true;
  }
  // The CRC of everything written so far, flushed or not.
  std::uint32_t crc() const noexcept { return ~crc32c_update(crc_, buf_.data(), buf_.size()); }

  template <class K, class V>
  void record(const K& key, const V& value, const std::optional<std::int64_t>& deadline) {
    const bool timed = deadline.has_value();
    buf_.push_back(static_cast<char>(timed ? snap::kKeyDeadline : snap::kKey));
    buf_.push_back('\0');  // the body length, if it takes one byte (else widened below)
    const std::size_t body = buf_.size();
    if (timed) codec::put_i64(buf_, *deadline);
    Codec<K>::encode(key, buf_);
    Codec<V>::encode(value, buf_);
    std::uint64_t len = buf_.size() - body;
    const std::size_t n = codec::varint_size(len);
    if (n > 1) buf_.insert(body, n - 1, '\0');
    char* p = &buf_[body - 1];
    while (len >= 0x80) {
      *p++ = static_cast<char>(static_cast<unsigned char>(len) | 0x80u);
      len >>= 7;
    }
    *p = static_cast<char>(len);
  }

 private:
  Sink& sink_;
  std::string buf_;
  std::uint64_t flushed_ = 0;
  std::uint32_t crc_ = ~0u;
  bool failed_ = false;
};

struct OstreamSink {
  std::ostream& out;
  bool write(const char* p, std::size_t n) {
    try {
      out.write(p, static_cast<std::streamsize>(n));
    } catch (const std::ios_base::failure&) {
      return false;
    }
    return static_cast<bool>(out);
  }
  bool finish() {
    try {
      out.flush();
    } catch (const std::ios_base::failure&) {
      return false;
    }
    return static_cast<bool>(out);
  }
  std::string describe() const { return "the output stream failed"; }
};

// The header, with the record count it announces.
template <class Sink>
void write_header(SnapshotWriter<Sink>& w, std::int64_t created_ms, std::uint64_t count) {
  std::string& b = w.buffer();
  b.append(snap::kMagic, sizeof snap::kMagic);
  codec::put_le(b, kSnapshotVersion, 2);
  codec::put_le(b, 0, 2);  // flags
  codec::put_i64(b, created_ms);
  codec::put_le(b, count, 8);
}
// The end (marker, count again, CRC), flushed to the sink; the snapshot's size, or the error.
template <class Sink>
FileResult<std::uint64_t> write_end(SnapshotWriter<Sink>& w, Sink& sink, std::uint64_t count) {
  std::string& b = w.buffer();
  b.push_back(static_cast<char>(snap::kEnd));
  codec::put_le(b, count, 8);
  codec::put_le(b, w.crc(), 4);
  const std::uint64_t total = w.offset();
  if (!w.flush() || !sink.finish()) {
    return snap::error(Errc::io_error, w.offset(), sink.describe() + " " + snap::at(w.offset()));
  }
  return total;
}

// Appends what it is given to a string: a shard's part of a snapshot.
struct StringSink {
  std::string& out;
  bool write(const char* p, std::size_t n) {
    out.append(p, n);
    return true;
  }
};

// A store of shards, while other threads write: the feed's number first, then each shard's
// entries in bounded steps (its lock held for one step), encoded into that shard's part of
// the snapshot in memory, since the header's count comes first. A shard that rehashes during
// its walk is walked again from an empty part. Each key is then written as it was at its
// step, at or after feed_seq: the records after feed_seq, replayed on the loaded snapshot,
// reach the store's state (docs/design/concurrent_feed.md §2 has the argument).
template <class Store, class Sink>
FileResult<SnapshotInfo> save_sharded(const Store& s, Sink& sink) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  constexpr std::size_t kStep = 256;
  SnapshotInfo info;
  info.feed_seq = s.feed_seq();
  info.created_ms = s.now_ms();
  std::vector<std::string> parts(s.shard_count());
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string& part = parts[i];
    std::uint64_t n = 0;
    std::uint64_t cursor = 0;
    StringSink to_part{part};
    std::optional<SnapshotWriter<StringSink>> pw(std::in_place, to_part);
    for (;;) {
      cursor = s.scan_stored(i, cursor, kStep, [&](const K& key, const V& value, const std::optional<std::int64_t>& d) {
        if (is_empty_hash(value)) return;  // a replica's emptied hash (see save_to())
        pw->record(key, value, d);
        ++n;
        pw->maybe_flush();
      });
      if (cursor == Store::kRestarted) {
        part.clear();
        n = 0;
        cursor = 0;
        pw.emplace(to_part);
        continue;
      }
      if (cursor == 0) break;
    }
    (void)pw->flush();
    count += n;
  }
  SnapshotWriter<Sink> w(sink);
  write_header(w, info.created_ms, count);
  std::string& b = w.buffer();
  for (std::string& part : parts) {
    for (std::size_t at = 0; at < part.size() && !w.failed(); at += snap::kChunk) {
      b.append(part, at, snap::kChunk);
      w.maybe_flush();
    }
    std::string().swap(part);
  }
  if (w.failed()) return snap::error(Errc::io_error, w.offset(), sink.describe() + " " + snap::at(w.offset()));
  FileResult<std::uint64_t> total = write_end(w, sink, count);
  if (!total.ok()) return total.error();
  info.keys = count;
  info.bytes = *total;
  return info;
}

template <class Store, class Sink>
FileResult<SnapshotInfo> save_whole(const Store& s, Sink& sink) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  SnapshotWriter<Sink> w(sink);
  const std::int64_t now = s.now_ms();
  std::uint64_t count = s.size();
  if constexpr (hash_value_traits<V>::enabled) {
    // A replica keeps a hash its own reclaim emptied (D31), which answers as a missing key; a
    // snapshot leaves it out, since load() refuses a hash with no field. The header's count
    // comes first, hence a pass to count them (on a replica only: no other store has one).
    if (s.options().replica) {
      s.visit_stored([&](const K&, const V& value, const std::optional<std::int64_t>&) {
        if (is_empty_hash(value)) --count;
      });
    }
  }
  write_header(w, now, count);
  std::uint64_t written = 0;
  s.visit_stored([&](const K& key, const V& value, const std::optional<std::int64_t>& deadline) {
    if (w.failed() || is_empty_hash(value)) return;
    w.record(key, value, deadline);
    ++written;
    w.maybe_flush();
  });
  if (w.failed()) return snap::error(Errc::io_error, w.offset(), sink.describe() + " " + snap::at(w.offset()));
  if (written != count) {  // size() and visit_stored() disagree: never written as a snapshot
    return snap::error(Errc::invalid_record, w.offset(),
                       "the store visited " + std::to_string(written) + " keys, but its size() is " +
                           std::to_string(count));
  }
  FileResult<std::uint64_t> total = write_end(w, sink, count);
  if (!total.ok()) return total.error();
  SnapshotInfo info;
  info.keys = written;
  info.bytes = *total;
  info.created_ms = now;
  if constexpr (has_feed_seq<Store>::value) info.feed_seq = s.feed_seq();
  return info;
}

template <class Store, class Sink>
FileResult<SnapshotInfo> save_to(const Store& s, Sink& sink) {
  static_assert(is_sharded<Store>::value || has_visit_stored<Store>::value,
                "expiring: save() needs an in-process store (ExpiringStore, ConcurrentStore); a Redis server "
                "saves itself (SAVE, BGSAVE)");
  if constexpr (is_sharded<Store>::value) {
    return save_sharded(s, sink);
  } else {
    return save_whole(s, sink);
  }
}

// ---- Reading -----------------------------------------------------------------------------

// Hands out the input in contiguous runs, keeping the CRC of the bytes consumed.
//   src.read(char*, std::size_t n) -> std::size_t   bytes read; fewer than n only at the end
//                                                    of the input or on an error
//   src.failed(), src.describe()                     an error (not the end) stopped it
//   Source::kReadAhead                               may read past what is asked for
template <class Source>
class SnapshotReader {
 public:
  explicit SnapshotReader(Source& src) : src_(src) {}

  // Makes `n` bytes available at the cursor; false if the input ends (or fails) first, with
  // what did arrive available.
  bool need(std::size_t n) {
    if (end_ - pos_ >= n) return true;
    fold();
    if (pos_ != 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      base_ += pos_;
      crc_from_ -= pos_;
      pos_ = 0;
    }
    while (end_ < n) {
      if (end_ == buf_.size()) {
        // Grow, but never past twice what has arrived: a record that claims 2^60 bytes gets
        // a buffer as large as the input that really follows it, and no larger.
        const std::size_t want = Source::kReadAhead ? std::max(n, snap::kChunk) : n;
        buf_.resize(std::min(want, std::max(snap::kChunk, 2 * end_)));
      }
      const std::size_t room = buf_.size() - end_;
      const std::size_t ask = Source::kReadAhead ? room : std::min(room, n - end_);
      const std::size_t got = src_.read(buf_.data() + end_, ask);
      end_ += got;
      if (got < ask && end_ < n) return false;
    }
    return true;
  }
  std::size_t available() const noexcept { return end_ - pos_; }
  const char* data() const noexcept { return buf_.data() + pos_; }
  void skip(std::size_t n) noexcept { pos_ += n; }
  std::uint64_t offset() const noexcept { return base_ + pos_; }
  // The CRC-32C of every byte before the cursor.
  std::uint32_t crc() noexcept {
    fold();
    return ~crc_;
  }

 private:
  void fold() noexcept {
    crc_ = crc32c_update(crc_, buf_.data() + crc_from_, pos_ - crc_from_);
    crc_from_ = pos_;
  }
  Source& src_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0, crc_from_ = 0;
  std::uint64_t base_ = 0;  // the input offset of buf_[0]
  std::uint32_t crc_ = ~0u;
};

struct IstreamSource {
  static constexpr bool kReadAhead = false;  // leaves the stream just after the snapshot
  std::istream& in;
  bool bad = false;
  std::size_t read(char* p, std::size_t n) {
    try {
      in.read(p, static_cast<std::streamsize>(n));
    } catch (const std::ios_base::failure&) {
      // exceptions() asked for one: eofbit alone is the end of the input
    }
    if (in.bad()) bad = true;
    return static_cast<std::size_t>(in.gcount());
  }
  bool failed() const noexcept { return bad; }
  std::string describe() const { return "the input stream failed"; }
  std::uint64_t size() const noexcept { return std::numeric_limits<std::uint64_t>::max(); }  // unknown
};

struct MemorySource {
  static constexpr bool kReadAhead = true;
  std::string_view bytes;
  std::size_t pos = 0;
  std::size_t read(char* p, std::size_t n) {
    const std::size_t got = std::min(n, bytes.size() - pos);
    if (got != 0) std::memcpy(p, bytes.data() + pos, got);
    pos += got;
    return got;
  }
  bool failed() const noexcept { return false; }
  std::string describe() const { return "reading memory failed"; }
  std::uint64_t size() const noexcept { return bytes.size(); }
};

// A decoded record, waiting for the whole input to be verified. A record skipped as past its
// deadline (LoadAs::primary) keeps its key, without its value, so that a later record of the
// same key is still found to be a duplicate.
template <class K, class V>
struct LoadedKey {
  K key;
  V value;
  std::uint64_t hash;  // the store's hash_function()(key), taken once
  std::int64_t deadline;
  std::uint64_t offset;
  bool timed;
  bool skipped;
};

// The records decoded so far, by key: finds a second record of a key (a file no save()
// writes; applied, it would count one key twice, and hold every copy until the end). An
// open-addressing table of record numbers into the records load() holds anyway, by the store's
// own hash and equality, so that two records are duplicates exactly when the store would take
// them for one key: 16 to 32 bytes a record, where a set of the keys would have copied every
// key. Each slot keeps 32 bits of its key's hash beside the number, so that a probe compares
// keys (a read of a record far away in memory) only when those bits agree: rdb.hpp's load
// of 1e6 keys spent 25% of its time here while every occupied slot on the way was a key read.
template <class Store, class Rec>
class SeenKeys {
 public:
  // Record numbers are stored plus one (0 is an empty slot); a store indexes its entries with
  // 32 bits too, so a larger snapshot could not be loaded anyway.
  static constexpr std::size_t kMaxRecords = std::numeric_limits<std::uint32_t>::max() - 1;

  explicit SeenKeys(const Store& s) : s_(s) {}

  // Room for n records without growing (before the first insert()).
  void reserve(std::size_t n) {
    unsigned bits = bits_;
    while ((std::size_t{1} << bits) < 2 * n) ++bits;
    if (used_ == 0 && bits != bits_) {
      slots_.assign(std::size_t{1} << bits, Slot{0, 0});
      bits_ = bits;
    }
  }

  // Records recs[i]; if an earlier record has an equal key, returns its number instead.
  std::optional<std::size_t> insert(const std::vector<Rec>& recs, std::size_t i) { return insert(recs, i, hash(recs[i])); }

  // Every record at once, into an empty table: the first (earlier, later) pair of equal keys,
  // if any. Each slot is prefetched a few records ahead of its probe, so that the probes'
  // cache misses overlap (a probe per record into a table of 16 bytes a record is a miss each
  // once the table outgrows the cache).
  std::optional<std::pair<std::size_t, std::size_t>> first_duplicate(const std::vector<Rec>& recs) {
    reserve(recs.size());
    constexpr std::size_t kAhead = 8;
    for (std::size_t i = 0; i < recs.size(); ++i) {
      if (i + kAhead < recs.size()) detail::prefetch_write(&slots_[home(hash(recs[i + kAhead]))]);
      if (const std::optional<std::size_t> first = insert(recs, i, hash(recs[i]))) return std::make_pair(*first, i);
    }
    return std::nullopt;
  }

 private:
  std::optional<std::size_t> insert(const std::vector<Rec>& recs, std::size_t i, std::uint64_t h) {
    if (2 * (used_ + 1) > slots_.size()) grow(recs);
    const auto tag = static_cast<std::uint32_t>(h);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = home(h);; at = (at + 1) & mask) {
      const Slot v = slots_[at];
      if (v.rec == 0) {
        slots_[at] = Slot{static_cast<std::uint32_t>(i + 1), tag};
        ++used_;
        return std::nullopt;
      }
      if (v.tag == tag && s_.key_eq()(recs[v.rec - 1].key, recs[i].key)) return std::size_t{v.rec - 1};
    }
  }

  struct Slot {
    std::uint32_t rec;  // record number + 1; 0: empty
    std::uint32_t tag;  // the low 32 bits of its key's hash
  };
  // Fibonacci hashing of the record's hash (the store's, taken once): the top bits of the
  // product, so a weak user hash (an identity on integers) still spreads over the table.
  static std::uint64_t hash(const Rec& r) { return r.hash * 0x9E3779B97F4A7C15ull; }
  std::size_t home(std::uint64_t h) const { return static_cast<std::size_t>(h >> (64 - bits_)); }
  void grow(const std::vector<Rec>& recs) {
    std::vector<Slot> old(std::size_t{1} << (bits_ + 1), Slot{0, 0});
    old.swap(slots_);
    ++bits_;
    const std::size_t mask = slots_.size() - 1;
    for (const Slot v : old) {
      if (v.rec == 0) continue;
      // The tag is the product's low half and the home its top bits: rehashed from the record.
      std::size_t at = home(hash(recs[v.rec - 1]));
      while (slots_[at].rec != 0) at = (at + 1) & mask;
      slots_[at] = v;
    }
  }

  const Store& s_;
  std::vector<Slot> slots_;
  unsigned bits_ = 2;  // slots_.size() == 2^bits_ once the first record is in
  std::size_t used_ = 0;
};

// A value to decode into: for a store of hashes, one holding an empty hash with the store's
// own field hasher (so loaded hashes hash as the store's own do).
template <class V, class Store>
V value_prototype(const Store& s) {
  if constexpr (hash_value_traits<V>::enabled) {
    return hash_value_traits<V>::make(s.field_hash_function());
  } else {
    return V{};
  }
}

// The raw hash a loaded key keeps (LoadedKey::hash).
template <class Store>
std::uint64_t loaded_hash(const Store& s, const typename Store::key_type& k) {
  return static_cast<std::uint64_t>(s.hash_function()(k));
}

// Stores one loaded key as a SET record replays (every key valid): moved in when the store
// takes it so (apply_set(), with the key's hash, the load's clock reading `now` and the hashes
// of keys ahead to prefetch), else copied by apply(). A refusal leaves e's key and value.
template <class Store, class K, class V>
Result<bool> replay_loaded(Store& s, LoadedKey<K, V>& e, std::int64_t now, const std::uint64_t* ahead_group = nullptr,
                           const std::uint64_t* ahead_slot = nullptr) {
  if constexpr (has_apply_set<Store>::value) {
    std::optional<std::int64_t> deadline;
    if (e.timed) deadline = e.deadline;
    return s.apply_set(std::move(e.key), std::move(e.value), deadline,
                       typename Store::LoadStep{e.hash, now, ahead_group, ahead_slot});
  } else {
    (void)now, (void)ahead_group, (void)ahead_slot;
    const Change<K, V> c{ChangeOp::set, &e.key, &e.value, nullptr, e.timed ? e.deadline : Store::kNoTtl,
                         e.timed ? ChangeTtl::at : ChangeTtl::none};
    return s.apply(c);
  }
}

template <class Store, class Source>
FileResult<SnapshotInfo> load_from(Store& s, Source& src, LoadAs as, bool whole_input) {
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  using snap::at;
  using snap::error;
  SnapshotReader<Source> r(src);
  const std::uint64_t input_size = src.size();
  // The error for an input that ends at the reader's end: truncated, or an I/O error.
  auto short_input = [&](const std::string& what) {
    const std::uint64_t end = r.offset() + r.available();
    if (src.failed()) return error(Errc::io_error, end, src.describe() + " " + at(end) + ": " + what);
    return error(Errc::truncated_file, end, "truncated " + at(end) + ": " + what);
  };

  // ---- header
  const bool whole_header = r.need(snap::kHeaderBytes);
  const std::size_t got = r.available();
  if (got == 0) return short_input("the input is empty (expected a snapshot header)");
  if (std::memcmp(r.data(), snap::kMagic, std::min(got, sizeof snap::kMagic)) != 0) {
    return error(Errc::corrupt_file, 0, "bad magic " + at(0) + ": not a snapshot");
  }
  if (got >= 10) {
    const auto version = static_cast<std::uint16_t>(snap::le(r.data() + 8, 2));
    if (version != kSnapshotVersion) {
      return error(Errc::unsupported_version, 8,
                   "format version " + std::to_string(version) + " " + at(8) + " (this build reads version " +
                       std::to_string(kSnapshotVersion) + ")");
    }
  }
  if (got >= 12) {
    const auto flags = static_cast<std::uint16_t>(snap::le(r.data() + 10, 2));
    if ((flags & ~snap::kKnownFlags) != 0) {
      return error(Errc::unsupported_version, 10,
                   "unknown flags " + snap::hex32(flags) + " " + at(10) + " (format version 1 defines none)");
    }
  }
  if (!whole_header) return short_input("the header is " + std::to_string(snap::kHeaderBytes) + " bytes");
  const std::int64_t created = snap::le_i64(r.data() + 12);
  const std::uint64_t count = snap::le(r.data() + 20, 8);
  r.skip(snap::kHeaderBytes);

  // ---- records
  const std::int64_t now = s.now_ms();
  const bool primary = as == LoadAs::primary;
  SnapshotInfo info;
  info.created_ms = created;
  std::vector<LoadedKey<K, V>> keys;
  SeenKeys<Store, LoadedKey<K, V>> seen(s);
  {
    // Not what the header says alone (it may lie): at most a record per 16 bytes of the file
    // (smaller records grow the vector as they come), 4096 from a stream.
    const std::uint64_t room = input_size == std::numeric_limits<std::uint64_t>::max() ? std::uint64_t{4096}
                                                                                         : input_size / 16;
    keys.reserve(static_cast<std::size_t>(std::min(count, room)));
  }
  std::uint64_t i = 0;
  for (;; ++i) {
    const std::uint64_t rec = r.offset();
    // What is being read, for a message (built only for one).
    const auto which = [&] { return i < count ? snap::record_of(i, count) + " " + at(rec) : "the end marker " + at(rec); };
    if (!r.need(2)) return short_input(which() + " is incomplete");
    const auto kind = static_cast<unsigned char>(r.data()[0]);
    if (kind == snap::kEnd) break;
    if (kind != snap::kKey && kind != snap::kKeyDeadline) {
      return error(Errc::corrupt_file, rec,
                   "unknown record kind " + snap::hex32(kind) + " " + at(rec) + " (" + snap::record_of(i, count) +
                       ")");
    }
    if (i >= count) {
      return error(Errc::corrupt_file, rec,
                   "a record " + at(rec) + " after the " + std::to_string(count) + " the header announces");
    }
    // The body length: a varint of up to 10 bytes after the kind.
    std::size_t head = 2;
    while ((static_cast<unsigned char>(r.data()[head - 1]) & 0x80u) != 0 && head <= codec::kMaxVarintBytes) {
      if (!r.need(head + 1)) return short_input(which() + " is incomplete (its length)");
      ++head;
    }
    std::string_view len_bytes(r.data() + 1, head - 1);
    std::uint64_t len = 0;
    if (!codec::get_varint(len_bytes, len)) {
      return error(Errc::corrupt_file, rec + 1, "bad record length " + at(rec + 1) + " (" + which() + ")");
    }
    const std::uint64_t body_at = rec + head;
    if (input_size != std::numeric_limits<std::uint64_t>::max() &&
        len > input_size - std::min(input_size, body_at)) {
      return error(Errc::truncated_file, input_size,
                   "truncated " + at(input_size) + ": " + which() + " claims " + std::to_string(len) +
                       " bytes, the file holds " + std::to_string(input_size - std::min(input_size, body_at)) +
                       " more");
    }
    if (len > std::numeric_limits<std::size_t>::max() - head || !r.need(head + static_cast<std::size_t>(len))) {
      return short_input(which() + " claims " + std::to_string(len) + " bytes");
    }
    std::string_view body(r.data() + head, static_cast<std::size_t>(len));
    std::int64_t deadline = Store::kNoTtl;
    const bool timed = kind == snap::kKeyDeadline;
    if (timed && !codec::get_i64(body, deadline)) {
      return error(Errc::corrupt_file, body_at, which() + ": " + std::to_string(len) + " bytes cannot hold a deadline");
    }
    K key{};
    V value = value_prototype<V>(s);
    if (!Codec<K>::decode(body, key)) return error(Errc::corrupt_file, rec, which() + ": the key does not decode");
    if (!Codec<V>::decode(body, value)) return error(Errc::corrupt_file, rec, which() + ": the value does not decode");
    if (!body.empty()) {
      return error(Errc::corrupt_file, rec,
                   which() + ": " + std::to_string(body.size()) + " bytes left over after the value");
    }
    r.skip(head + static_cast<std::size_t>(len));
    bool skipped = false;
    if (primary && timed && now > deadline) {
      ++info.expired;
      skipped = true;
    }
    if constexpr (hash_value_traits<V>::enabled) {
      if (primary && !skipped) {
        if (auto* m = hash_value_traits<V>::map(value)) {
          const std::size_t gone =
              m->reclaim_due(now, std::numeric_limits<std::size_t>::max(), [](auto&, std::int64_t) {});
          info.expired_fields += gone;
          if (gone != 0 && m->empty()) {
            ++info.expired;
            skipped = true;
          }
        }
      }
    }
    if (skipped) value = value_prototype<V>(s);  // its memory goes now; the key stays, to be found
    if (keys.size() >= SeenKeys<Store, LoadedKey<K, V>>::kMaxRecords) {
      return error(Errc::out_of_memory, rec, which() + ": more records than a store can hold");
    }
    const std::uint64_t h = loaded_hash(s, key);
    keys.push_back(LoadedKey<K, V>{std::move(key), std::move(value), h, deadline, rec, timed, skipped});
    if (const std::optional<std::size_t> first = seen.insert(keys, keys.size() - 1)) {
      return error(Errc::corrupt_file, rec,
                   which() + ": a duplicate key, first read in " + snap::record_of(*first, count) + " " +
                       at(keys[*first].offset));
    }
  }

  // ---- end marker and checksum
  const std::uint64_t end_at = r.offset();
  if (!r.need(snap::kEndBytes)) return short_input("the end marker " + at(end_at) + " is incomplete");
  const std::uint64_t end_count = snap::le(r.data() + 1, 8);
  if (end_count != i) {
    return error(Errc::corrupt_file, end_at + 1,
                 "the end marker " + at(end_at) + " counts " + std::to_string(end_count) + " records, " +
                     std::to_string(i) + " were read");
  }
  if (i != count) {
    return error(Errc::corrupt_file, end_at,
                 "the end marker " + at(end_at) + " after " + snap::record_of(i == 0 ? 0 : i - 1, count) +
                     ": the header announces " + std::to_string(count));
  }
  r.skip(9);
  const std::uint64_t crc_at = r.offset();
  const std::uint32_t computed = r.crc();
  const auto stored = static_cast<std::uint32_t>(snap::le(r.data(), 4));
  r.skip(4);
  if (stored != computed) {
    return error(Errc::corrupt_file, crc_at,
                 "checksum mismatch " + at(crc_at) + " (stored " + snap::hex32(stored) + ", computed " +
                     snap::hex32(computed) + ")");
  }
  info.bytes = r.offset();
  if (whole_input) {
    if (r.need(1)) return error(Errc::corrupt_file, info.bytes, "bytes after the checksum " + at(info.bytes));
    if (src.failed()) return short_input("reading past the checksum");
  }

  // ---- replace the store's content, as one unit of its change feed (a log replays all of
  // it or, cut by a crash, none)
  std::optional<FileError> refused;
  const std::size_t live = keys.size() - static_cast<std::size_t>(std::count_if(
                                             keys.begin(), keys.end(), [](const LoadedKey<K, V>& e) { return e.skipped; }));
  s.as_one_unit([&] {
    s.clear();
    s.reserve(live);
    for (std::size_t k = 0; k < keys.size(); ++k) {
      LoadedKey<K, V> e = std::move(keys[k]);  // freed at the end of this iteration
      if (e.skipped) continue;
      const Result<bool> applied = replay_loaded(s, e, now);
      if (!applied.ok()) {
        refused = error(applied.error(), e.offset,
                        "the store refused the key of " + snap::record_of(k, count) + " " + at(e.offset) +
                            " (" + to_string(applied.error()) + "); it holds the " + std::to_string(info.keys) +
                            " keys before it");
        return;
      }
      ++info.keys;
    }
  });
  if (refused) return *refused;
  return info;
}

#if defined(EXPIRING_SNAPSHOT_POSIX)
inline int open_cloexec(const char* path, int flags, mode_t mode = 0) {
#if defined(O_CLOEXEC)
  flags |= O_CLOEXEC;
#endif
  int fd;
  do {
    fd = ::open(path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// dup(fd), closed on exec as open_cloexec()'s descriptors are.
inline int open_cloexec_dup(int fd) {
#if defined(F_DUPFD_CLOEXEC)
  return ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
#else
  return ::dup(fd);
#endif
}

// What a file that is not a regular one is, for an error message.
inline const char* file_kind(mode_t m) noexcept {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  return "of an unknown kind";
}

// Opens `path` only if it is a regular file, and says its size. O_NOFOLLOW: a symbolic link
// (as the last component) is refused, so a file named in a directory is that file and not
// one elsewhere; O_NONBLOCK: opening a FIFO returns at once instead of waiting for its other
// end (cleared once the file is known to be regular, where it changes nothing anyway). Then
// fstat() on the descriptor itself: a FIFO, a device (/dev/zero reads without end), a
// directory or a socket is refused. Returns the descriptor, or -1 with `why` set ("not a
// regular file (a FIFO)", or errno's text) and `err` errno (0 when the file is of the wrong
// kind).
inline int open_regular(const char* path, int flags, std::uint64_t& size, int& err, std::string& why) {
  const int fd = open_cloexec(path, flags | O_NOFOLLOW | O_NONBLOCK, 0);
  struct stat st {};
  if (fd < 0) {
    err = errno;
    // ELOOP is a symbolic link; ENXIO a FIFO opened for writing without a reader: say what
    // the file is rather than the errno, when it is not a regular file.
    if (::lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
      why = std::string("not a regular file (") + file_kind(st.st_mode) + ")";
      err = 0;
    } else {
      why = std::strerror(err);
    }
    return -1;
  }
  if (::fstat(fd, &st) != 0) {
    err = errno;
    why = std::strerror(err);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0) {
    err = 0;
    why = std::string("not a regular file (") + file_kind(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// Writes all n bytes (retrying short writes and EINTR); false with errno in `err`.
inline bool write_all(int fd, const char* p, std::size_t n, int& err) {
  while (n != 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

struct FdSink {
  int fd;
  const std::string& name;
  int err = 0;
  bool write(const char* p, std::size_t n) { return write_all(fd, p, n, err); }
  bool finish() { return true; }
  std::string describe() const { return "write to '" + name + "' failed (" + snap::errno_text(err) + ")"; }
};

struct FdSource {
  static constexpr bool kReadAhead = true;
  int fd;
  const std::string& name;
  std::uint64_t file_size;
  int err = 0;
  std::size_t read(char* p, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd, p + got, n - got);
      if (r < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }
  bool failed() const noexcept { return err != 0; }
  std::string describe() const { return "reading '" + name + "' failed (" + snap::errno_text(err) + ")"; }
  std::uint64_t size() const noexcept { return file_size; }
};

// Closes the descriptor and removes the temporary file unless the save went through.
struct TempFile {
  std::string path;
  int fd = -1;
  bool keep = false;
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(path.c_str());
  }
};

inline std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
#endif  // EXPIRING_SNAPSHOT_POSIX

}  // namespace detail

template <class Store, class>
FileResult<SnapshotInfo> save(const Store& s, std::ostream& out) {
  if (!out) return detail::snap::error(Errc::io_error, 0, "the output stream is not writable");
  detail::OstreamSink sink{out};
  return detail::save_to(s, sink);
}

template <class Store, class>
FileResult<SnapshotInfo> load(Store& s, std::istream& in, LoadAs as) {
  if (!in.good()) return detail::snap::error(Errc::io_error, 0, "the input stream is not readable");
  detail::IstreamSource src{in};
  return detail::load_from(s, src, as, /*whole_input=*/false);
}

template <class Store, class>
FileResult<SnapshotInfo> load_bytes(Store& s, std::string_view bytes, LoadAs as) {
  detail::MemorySource src{bytes};
  return detail::load_from(s, src, as, /*whole_input=*/true);
}

#if defined(EXPIRING_SNAPSHOT_POSIX)
namespace detail {
// Writes a file as save() does: write(sink) into `path + ".tmp-" + pid`, fsync, rename over
// `path`, fsync the directory; a crash leaves the old file or the new one. R has `bytes`.
template <class R, class Write>
FileResult<R> write_file_atomically(const std::string& path, Write&& write) {
  using snap::errno_text;
  using snap::error;
  TempFile tmp;
  tmp.path = path + ".tmp-" + std::to_string(static_cast<long long>(::getpid()));
  // The temporary name is this process's: whatever a crash left there goes, and the file is
  // created anew (O_EXCL: never written through a symbolic link or into a FIFO put there).
  ::unlink(tmp.path.c_str());
  tmp.fd = open_cloexec(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
  if (tmp.fd < 0) {
    const int err = errno;
    tmp.keep = true;  // not ours: nothing was created
    return error(Errc::io_error, 0, "cannot create '" + tmp.path + "' (" + errno_text(err) + ")");
  }
  FdSink sink{tmp.fd, tmp.path};
  FileResult<R> r = write(sink);
  if (!r.ok()) return r;
  if (::fsync(tmp.fd) != 0) {
    const int err = errno;
    return error(Errc::io_error, r->bytes, "fsync of '" + tmp.path + "' failed (" + errno_text(err) + ")");
  }
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    return error(Errc::io_error, r->bytes, "closing '" + tmp.path + "' failed (" + errno_text(err) + ")");
  }
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    return error(Errc::io_error, r->bytes,
                 "cannot rename '" + tmp.path + "' to '" + path + "' (" + errno_text(err) + ")");
  }
  tmp.keep = true;
  // The rename is durable once the directory is: sync it (Redis's fsyncFileDir; EINVAL and
  // EBADF mean a file system that cannot sync directories, and are not errors).
  const std::string dir = directory_of(path);
  const int dfd = open_cloexec(dir.c_str(), O_RDONLY);
  int err = dfd < 0 ? errno : 0;
  if (dfd >= 0) {
    if (::fsync(dfd) != 0 && errno != EINVAL && errno != EBADF) err = errno;
    ::close(dfd);
  }
  if (err != 0) {
    return error(Errc::io_error, r->bytes,
                 "'" + path + "' is written, but syncing its directory '" + dir + "' failed (" + errno_text(err) +
                     ")");
  }
  return r;
}
}  // namespace detail

template <class Store, class>
FileResult<SnapshotInfo> save(const Store& s, const std::string& path) {
  return detail::write_file_atomically<SnapshotInfo>(path, [&](detail::FdSink& sink) { return detail::save_to(s, sink); });
}

template <class Store, class>
FileResult<SnapshotInfo> load(Store& s, const std::string& path, LoadAs as) {
  using detail::snap::error;
  std::uint64_t size = 0;
  int err = 0;
  std::string why;
  const int fd = detail::open_regular(path.c_str(), O_RDONLY, size, err, why);
  if (fd < 0) return error(Errc::io_error, 0, "cannot open '" + path + "' (" + why + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  detail::FdSource src{fd, path, size};
  return detail::load_from(s, src, as, /*whole_input=*/true);
}
#endif  // EXPIRING_SNAPSHOT_POSIX

}  // namespace expiring
