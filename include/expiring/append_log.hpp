// expiring/append_log.hpp: the append-only log, Redis's AOF for a store, fed by its change
// feed and replayed at start.
//
//   expiring::AppendLogOptions o;
//   o.fsync = expiring::Fsync::always;                  // appendfsync always | everysec | no
//   auto log = expiring::AppendLog<Store>::open(store, "/var/lib/app", o);
//   if (!log.ok()) die(log.error().message);            // the store is as it was
//   store.set("k", "v", expiring::Ex{100});             // logged as SET k v PXAT <ms>
//   (*log)->start_rewrite();                            // BGREWRITEAOF, then from your loop:
//   while ((*log)->rewriting()) (*log)->rewrite_step(); // each step within a time bound
//
// Design
// ------
// Files, in one directory, as Redis 7's multi-part AOF:
//   <name>.manifest        the files that make the log, in order: a base, then incr files,
//                          then a CRC-32C of the lines before it ("expiring-aof 2"; version
//                          1, without it, is still read and replaced at the next switch)
//   <name>.<n>.base.log    the store's content as whole keys, written by a rewrite
//   <name>.<n>.incr.log    every change after that base, as records
// <name> is a file name (log_name_problem(): no '/', no "..", no control character; else
// open() is Errc::out_of_range). open() checks the whole manifest before it opens or removes
// any file: every name exactly as the log makes it, one base then incr files in strictly
// increasing order, the checksum, at most 1 MiB. Files are opened with O_NOFOLLOW |
// O_NONBLOCK and must be regular (fstat): a symbolic link, a FIFO or a device is refused at
// once (Errc::io_error naming the file), and a read stops at the size fstat gave. New files
// are created with O_EXCL | O_NOFOLLOW. Only files with the log's exact names that the manifest
// on disk does not name are ever removed.
// A file is a header (magic "\x89EXPLOG", version u16, kind u8 (1 base, 2 incr), 0 u8,
// created ms i64, CRC-32C of those 20 bytes u32: 24 bytes) and records [length u32][CRC-32C
// of the length u32][CRC-32C of the payload u32][payload].
// A payload is an op byte, then: SET without TTL: key, value; SET with a deadline: the
// deadline i64, key, value; PEXPIREAT: the deadline, key; PERSIST, DEL, UNLINK: key;
// FLUSHALL (the store's clear), MULTI, EXEC: nothing; SELECT: a database i64; SWAPDB: two
// databases i64 (keys and values by Codec<K>, Codec<V>; integers little-endian).
// docs/design/append_log.md has the bytes.
//
// Several databases (a server's SELECT numbers, open(dbs, ...)): one log for all of them, as
// Redis keeps one AOF. The stream of records says SELECT n before the first record of
// database n, at the start of each file and wherever it changes; a SWAPDB is a record; a
// rewrite writes each database after its SELECT. A replay puts each record in the store of
// the database it names, and swaps the caller's vector where the log swapped. A SWAPDB during
// a rewrite starts the rewrite over (its walk saw the databases in the old order).
//
// Every time is absolute (the feed's), and every record but PEXPIREAT and PERSIST sets a
// key's whole state: the feed's KEEPTTL is written with the deadline it kept, and RENAME a b
// as DEL a, SET b <value> <deadline> in a MULTI. That is what lets a rewrite run in steps,
// without a fork and without a copy of the store: it starts a new incr file (every later
// change goes there), then walks the store a bounded number of entries per step, writing each
// one as it is at that moment into the new base. A key changed during the walk may be written
// in any of its states since the start, but the new incr file holds every change since then,
// and replaying a whole-state record (or a DEL) fixes the key whatever came before it, while
// PEXPIREAT and PERSIST leave existence and value alone. So base + incr gives the store's
// state (docs/design/append_log.md has the argument). A rehash during the walk restarts it.
// When the walk is done the base is fsynced (on a thread: a step never waits for it) and
// renamed into place, and a new manifest names it and the incr file that started with it;
// the older files go. A crash at any point leaves a manifest whose files replay to the state:
// until the switch, the old base and incr files plus the new incr file.
//
// Durability, as Redis's appendfsync:
//   Fsync::always     each unit of change (a record, or a MULTI ... EXEC) is written and
//                     fdatasync'ed before the store's call returns: an acknowledged write
//                     survives a crash of the process or of the machine.
//   Fsync::everysec   records are buffered and written, then fdatasync'ed, once a second by a
//                     thread of the log (and written at once when the buffer passes 1 MiB):
//                     a crash may lose the last second or so.
//   Fsync::no         as everysec, without fdatasync: the system writes when it wants.
// A write or fsync that fails is kept as the log's failure() (Redis's aof_last_write_status);
// the store's change was made and the log no longer has it, so treat it as fatal. The feed
// itself never throws (change_feed.hpp).
//
// Replay, at open(): every file is read and checked (header, each record's length and CRC,
// each payload) before the store is touched; then the store is cleared and every record
// applied with apply(), which takes every key as valid (a deadline that has passed is stored,
// and reclaimed afterwards, as Redis's AOF loading). A torn last record in the last file,
// and a MULTI that never reached its EXEC, are what a crash in the middle of a write leaves:
// with load_truncated (Redis's aof-load-truncated yes, the default) they are cut off the file
// and replay goes on; without it they are Errc::truncated_file. Anything else (a CRC that does
// not match, a payload that does not decode, a torn record before the end) is
// Errc::corrupt_file or Errc::truncated_file, with the file's name and the offset, and the
// store is unchanged.
//
// Threads: the log is driven from the store's thread (the feed, rewrite_step(), flush()). Its
// own threads only write and sync files.
//
// A store of many threads (ConcurrentStore): its stream is numbered store-wide
// (concurrent_store.hpp). The log takes it as bytes (set_change_log()): each shard encodes its
// units into a buffer of its own under its own lock, and every write_out() drains the shards'
// buffers in stream order (drain_log()), so what the file holds is always a prefix of the
// stream. The log's thread drains every 100 ms (fdatasync once a second under everysec). A
// rewrite walks the shards one bounded step of one shard at a time (scan_stored(shard, ...));
// a shard that rehashes mid-walk is walked again, and the keys it already gave are written
// twice, harmlessly: a base's later record of a key is a later state of it, and the incr file
// that started with the rewrite holds every change since, so the argument above holds. Under
// appendfsync always the calling thread waits after its call has released the store's locks
// (after_call()): one fdatasync covers every unit drained before it began, so writers share
// syncs (a group commit, as Redis's and PostgreSQL's) instead of holding the store while the
// disk works. rewrite_step() and flush() may be called from any one thread while others write.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "change_feed.hpp"
#include "codec.hpp"
#include "detail/quiet_thread.hpp"
#include "detail/shard_lock.hpp"
#include "error.hpp"
#include "snapshot.hpp"

#if !defined(EXPIRING_SNAPSHOT_POSIX)
#error "expiring/append_log.hpp needs POSIX files (open, write, fdatasync, rename)"
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace expiring {

// Redis's appendfsync.
enum class Fsync : std::uint8_t { always, everysec, no };

// The policy's name as redis.conf and CONFIG GET appendfsync spell it: "always", "everysec"
// or "no".
constexpr const char* to_string(Fsync f) noexcept {
  switch (f) {
    case Fsync::always: return "always";
    case Fsync::everysec: return "everysec";
    case Fsync::no: return "no";
  }
  return "?";
}

// How open() opens the log and how the log writes (Redis's AOF settings, by their names).
struct AppendLogOptions {
  Fsync fsync = Fsync::everysec;  // appendfsync
  bool load_truncated = true;     // aof-load-truncated: cut a torn tail off instead of failing
  std::string name = "appendonly";  // appendfilename: the files' common prefix
  // The bound on one rewrite_step(): it stops walking the store once this much time passed
  // (checked every 64 keys). Redis's rewrite forks instead; the walk is what bounds a step.
  std::chrono::microseconds rewrite_step_budget{1000};
  // Records buffered beyond this many bytes are written at once (everysec and no).
  std::size_t buffer_limit = 1u << 20;
  // open() makes the log the store's change feed (and the destructor removes it). Off: you
  // install a feed of your own that calls on_change(), and remove it before the log goes.
  bool attach = true;
  // Start over (Redis's CONFIG SET appendonly yes at run time): the store's content is kept
  // and becomes the base of a new log, and the files of a log already in `dir` are replaced
  // (read by nothing; removed once the new manifest is in place).
  bool start_over = false;
};

// Why `name` cannot be an AppendLogOptions::name (Redis's appendfilename), or "" when it can:
// a file name, not a path, that the log's own file names can be made of. Refused: empty,
// longer than 200 bytes (<name>.<n>.base.log.tmp stays within NAME_MAX, 255), a '/', a
// "..", a NUL or another control character. open() refuses such a name (Errc::out_of_range);
// a server checks it at startup.
inline std::string log_name_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 200) return "it is longer than 200 bytes";
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '/') return "it is a path (a '/'), not a file name";
    if (c < 0x20 || c == 0x7F) return "it holds a control character or a NUL";
  }
  if (name.find("..") != std::string_view::npos) return "it holds \"..\"";
  if (name == ".") return "it is \".\"";
  return "";
}

// What open() replayed.
struct AppendLogInfo {
  std::uint64_t records = 0;          // records applied
  std::uint64_t files = 0;            // files read
  std::uint64_t bytes = 0;            // bytes read
  std::uint64_t truncated_bytes = 0;  // cut off the last file (a torn record, an open MULTI)
  bool created = false;               // there was no log: a new one was started
};

// Counters for INFO persistence.
struct AppendLogStats {
  std::uint64_t records = 0;         // records written since open()
  std::uint64_t bytes = 0;           // bytes written to incr files since open()
  std::uint64_t fsyncs = 0;          // fdatasync calls that succeeded
  std::uint64_t rewrites = 0;        // rewrites completed
  std::uint64_t rewrite_restarts = 0;  // walks restarted by a rehash
  std::uint64_t base_bytes = 0;      // size of the current base file
  std::uint64_t incr_bytes = 0;      // size of the current incr file
  std::int64_t last_rewrite_us = -1;   // wall time of the last completed rewrite
  bool rewriting = false;            // a rewrite is in progress (aof_rewrite_in_progress)
  bool ok = true;                    // no write or fsync failed (aof_last_write_status)
};

// The append-only log of a store, or of a server's databases (see the file's comment): open()
// replays it into the store, then the store's change feed writes every change to it. Store is
// an ExpiringStore or a ConcurrentStore. Made by open() only; not copyable.
template <class Store>
class AppendLog {
 public:
  // The store's key and value types, and the change the feed hands on_change().
  using key_type = typename Store::key_type;
  using mapped_type = typename Store::mapped_type;
  using change_type = Change<key_type, mapped_type>;

  // Opens the log in `dir` (which must exist) and replays it into `store`, replacing what the
  // store holds; then becomes the store's change feed. A directory without a manifest starts
  // a new, empty log (the store is left as it is and its content is written as the first
  // base). On an error the store is unchanged and no file is modified.
  static FileResult<std::unique_ptr<AppendLog>> open(Store& store, std::string dir, AppendLogOptions options = {});
  // Several databases (a server's SELECT numbers): dbs[n] is database n's store, an
  // ExpiringStore (not a store of shards). One log holds them all: a SELECT record comes
  // before each database's records and a SWAPDB is a record of its own, so a replay puts every
  // key back in its database (and replaces every store's content), and a rewrite walks the
  // databases in order. The vector is the caller's: a replayed SWAPDB swaps two of its
  // entries, and the caller that swaps two calls swapdb(). With `attach`, each store's feed is
  // the log's; without, the caller's feed of database n calls on_change(c, n). A log written
  // with one store opens as database 0 of several; one that has records of database n opens
  // only with more than n databases (Errc::out_of_range otherwise, nothing changed).
  static FileResult<std::unique_ptr<AppendLog>> open(std::vector<Store*>& dbs, std::string dir,
                                                     AppendLogOptions options = {});

  // Writes what is buffered, fdatasyncs, stops the log's thread and detaches from the store.
  ~AppendLog();

  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // The feed: the store calls it (set by open()); call it yourself from a feed of your own
  // when the store has other consumers too.
  void on_change(const change_type& c) noexcept { on_change(c, 0); }
  // The feed of database `db` (several databases).
  void on_change(const change_type& c, std::size_t db) noexcept;
  // SWAPDB a b (several databases), after the caller swapped the two entries of its vector:
  // recorded; a rewrite in progress starts over (its walk saw the databases in another order),
  // or, inside a unit of changes, is abandoned.
  void swapdb(std::size_t a, std::size_t b) noexcept;

  // Writes and fdatasyncs everything buffered now, whatever the policy. False on a failure.
  bool flush();
  // CONFIG SET appendfsync: what is buffered is written and fdatasynced, then `f` applies.
  // Call it where the store's writes are made, not while other threads write to it.
  void set_fsync(Fsync f);
  // A store of many threads (ConcurrentStore) calls this after each call that sent records,
  // once the call's locks are released (set_change_feed()'s on_return; open() passes it, and
  // with attach off you pass it yourself). Under appendfsync always it returns once every
  // record up to `seq` (Change::seq) is on disk, or the log has failed: the threads that
  // wait share one fdatasync (the first writes and syncs everything buffered, the others find
  // their records covered by it). Otherwise it writes a buffer that passed buffer_limit.
  void after_call(std::uint64_t seq);
  // A store of shards' log path (set_change_log(), passed by open()): encodes one record
  // into its shard's buffer, under the shard's lock, on any thread; write_out() drains the
  // shards' buffers in stream order (drain_log()).
  std::size_t encode_shared(const change_type& c, bool in_unit, std::string& out) noexcept;

  // BGREWRITEAOF: starts a rewrite (false if one is running, the log has failed, or a unit
  // of changes is open: a MULTI of the store's is not split between two files).
  bool start_rewrite();
  // One bounded step of the rewrite; true when it completed (the new manifest is in place).
  bool rewrite_step();
  // All the steps at once.
  bool rewrite() {
    if (!rewriting() && !start_rewrite()) return false;
    while (rewriting()) {
      if (rewrite_step()) return true;
      if (!failure_.code_ok()) return false;
    }
    return true;
  }
  // Whether a rewrite is in progress: started, and neither completed nor abandoned.
  bool rewriting() const noexcept { return rw_.has_value(); }

  // The first write or fsync error, if any (the log stops writing after it).
  std::optional<FileError> failure() const;
  // Counters for INFO persistence, as of the call.
  AppendLogStats stats() const;
  // What open() replayed.
  const AppendLogInfo& replayed() const noexcept { return info_; }
  // The log's directory, as open() was given it.
  const std::string& directory() const noexcept { return dir_; }

 private:
  struct Failure {
    mutable std::mutex mu;
    std::optional<FileError> error;
    std::atomic<bool> failed{false};
    bool code_ok() const noexcept { return !failed.load(std::memory_order_acquire); }
    void set(FileError e) {
      std::lock_guard<std::mutex> g(mu);
      if (!error) error = std::move(e);
      failed.store(true, std::memory_order_release);
    }
  };
  struct Rewrite {
    std::uint64_t seq = 0;         // the new base's and incr's number
    std::string tmp_path;          // the base being written
    int fd = -1;
    std::string buf;
    std::uint64_t cursor = 0;
    std::size_t shard = 0;         // a store of shards: the one being walked
    std::size_t db = 0;            // several databases: the one being walked
    bool selected = false;         // ... and its SELECT is in the base
    std::uint64_t bytes = 0;
    bool walked = false;           // the walk is done; the base is being synced
    std::thread syncer;
    std::atomic<int> synced{0};    // 0 running, 1 done, -1 failed (errno in sync_err)
    int sync_err = 0;
    std::chrono::steady_clock::time_point started;
  };

  AppendLog(std::vector<Store*>* dbs, std::string dir, AppendLogOptions options)
      : dbs_(dbs), dir_(std::move(dir)), options_(std::move(options)) {}

  static FileResult<std::unique_ptr<AppendLog>> finish_open(std::unique_ptr<AppendLog> log);
  // The store (one database), or database 0.
  Store& store() const noexcept { return *(*dbs_)[0]; }
  bool several() const noexcept { return dbs_ != &one_; }
  std::size_t index_of(const Store* s) const noexcept {
    std::size_t i = 0;
    while (i < dbs_->size() && (*dbs_)[i] != s) ++i;
    return i;
  }
  // A SELECT of `db` appended to `out` if the stream is in another database: 0 or 1 record.
  std::size_t select(std::size_t db, std::string& out);
  void cancel_rewrite();

  std::string path(const std::string& file) const { return dir_ + "/" + file; }
  std::string file_name(std::uint64_t seq, bool base) const {
    return options_.name + "." + std::to_string(seq) + (base ? ".base.log" : ".incr.log");
  }

  FileResult<bool> replay(const std::vector<std::pair<bool, std::string>>& files, std::uint64_t last_size);
  bool create_file(const std::string& file, bool base, int& fd, std::uint64_t& size);
  bool write_manifest(const std::string& base, const std::vector<std::string>& incrs);
  std::size_t encode(const change_type& c, bool in_unit, std::string& out);
  // Appends one record (its head, op byte and operands) to `out`; a key's whole state as
  // SET with its deadline or without.
  static void append_record(std::string& out, unsigned char op, const key_type* k, const mapped_type* v,
                            const std::int64_t* at);
  static void append_whole(std::string& out, const key_type& k, const mapped_type& v,
                           const std::optional<std::int64_t>& deadline);
  bool close_unit(std::uint64_t seq, std::size_t records);
  void end_unit(bool big);  // big: the buffer passed buffer_limit
  void wait_durable(std::uint64_t seq);  // after_call() under always: the group commit
  bool write_out(bool sync, bool wait = true);  // takes fd_mu_ (or, without `wait`, only if free)
  void background();
  void fail(std::string what, int err);
  void remove_strays() const;
  bool is_log_file(const std::string& f, bool temporary) const;

  std::vector<Store*> one_;    // open(store): the one store
  std::vector<Store*>* dbs_;   // &one_, or the caller's databases
  std::int64_t last_db_ = -1;  // several: the database the current file's stream is in (-1: none yet)
  std::string dir_;
  AppendLogOptions options_;
  AppendLogInfo info_;

  // The current files.
  std::uint64_t seq_ = 0;
  std::string base_;
  std::vector<std::string> incrs_;
  int fd_ = -1;  // the last incr file (guarded by fd_mu_)

  // Records not yet written (buf_mu_), written in order under fd_mu_ (taken first). The
  // buffer's lock is a spinlock that yields (a shard's): it is held for one unit's append,
  // tens of ns, under a store's sequencer; mu_ guards the statistics and the threads.
  mutable std::mutex fd_mu_;
  mutable std::mutex mu_;
  mutable detail::ShardLock buf_mu_;
  std::string buf_;
  std::string spare_;           // buf_mu_: an empty buffer with room, for the next swap
  std::uint64_t records_ = 0;   // buf_mu_: records given to the log since open()
  // The unit being encoded (the feed's thread, or the store's sequencer): a unit goes into
  // buf_ whole, so that no write or file switch ever splits one.
  std::string scratch_;
  std::uint64_t scratch_records_ = 0;
  bool in_multi_ = false;
  // appendfsync always on a store of shards (wait_durable()), under mu_: the number of the
  // last record in buf_, the last one known on disk, and whether a thread is syncing.
  std::uint64_t appended_seq_ = 0;  // buf_mu_
  std::uint64_t durable_seq_ = 0;
  bool committing_ = false;
  std::condition_variable durable_cv_;
  std::atomic<bool> write_due_{false};  // a store of shards: the buffer passed buffer_limit
  bool attached_ = false;  // the store's feed is this log's
  AppendLogStats stats_;   // mu_
  Failure failure_;

  std::optional<Rewrite> rw_;
  bool manifest_renamed_ = false;  // the last write_manifest() that failed did so after its rename

  std::thread thread_;
  std::condition_variable wake_;
  bool stop_ = false;  // mu_
};

// =========================================================================================
// Implementation
// =========================================================================================

namespace detail::aof {

inline constexpr char kMagic[8] = {'\x89', 'E', 'X', 'P', 'L', 'O', 'G', '\0'};
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 8 + 2 + 1 + 1 + 8 + 4;
// A record's head: its payload's length u32, the CRC-32C of those 4 bytes u32 (a changed
// length is corrupt, not a torn end), the CRC-32C of the payload u32.
inline constexpr std::size_t kRecordHead = 12;
inline constexpr std::uint32_t kMaxPayload = 0x7FFFFFFFu;

enum Op : unsigned char {
  kSet = 1,          // key, value
  kSetDeadline = 2,  // deadline, key, value
  kPexpireat = 3,    // deadline, key
  kPersist = 4,      // key
  kDel = 5,          // key
  kUnlink = 6,       // key
  kFlushall = 7,
  kMulti = 8,
  kExec = 9,
  kSelect = 10,  // database i64: the records after it are that database's (several databases)
  kSwapdb = 11,  // database i64, database i64: SWAPDB
};

inline void put_u32(char* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(static_cast<unsigned char>(v >> (8 * i)));
}
inline std::uint32_t get_u32(const char* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

inline void put_crc(std::string& h) {
  char c[4];
  put_u32(c, detail::crc32c(h.data(), h.size()));
  h.append(c, 4);
}
// Fills the head of the record whose payload follows `head` (kRecordHead bytes before it) and
// whose CRC-32C is `crc`.
inline void seal(char* head, std::size_t len, std::uint32_t crc) noexcept {
  const auto n = static_cast<std::uint32_t>(len);
  put_u32(head, n);
  put_u32(head + 4, ~detail::crc32c_le(~0u, n, 4));
  put_u32(head + 8, crc);
}
// The same, the CRC computed from the payload's bytes.
inline void seal(char* head, std::size_t len) noexcept { seal(head, len, detail::crc32c(head + kRecordHead, len)); }
// A record of two numbers (SELECT, SWAPDB), appended whole to `out`.
inline void append_numbers(std::string& out, Op op, std::int64_t a, std::int64_t b, bool two) {
  const std::size_t start = out.size();
  out.append(kRecordHead, '\0');
  out.push_back(static_cast<char>(op));
  codec::put_i64(out, a);
  if (two) codec::put_i64(out, b);
  seal(&out[start], out.size() - start - kRecordHead);
}

inline std::string header(bool base, std::int64_t created_ms) {
  std::string h(kMagic, sizeof kMagic);
  codec::put_le(h, kVersion, 2);
  h.push_back(static_cast<char>(base ? 1 : 2));
  h.push_back('\0');
  codec::put_i64(h, created_ms);
  put_crc(h);
  return h;
}

inline FileError error(Errc code, const std::string& file, std::uint64_t offset, const std::string& what) {
  return FileError{code, offset, "append log: " + file + ": " + what + " at offset " + std::to_string(offset)};
}

using detail::write_all;  // snapshot.hpp

// A manifest is small (a line per file); anything larger is not one.
inline constexpr std::uint64_t kMaxManifestBytes = 1u << 20;
inline constexpr std::uint16_t kManifestVersion = 2;  // version 1: the same, without the crc32c line

// The number in a file's name: decimal, 1 or more, no leading zero, at most 19 digits (so it
// and the next one fit in 64 bits): exactly what std::to_string() gives the log's numbers.
inline bool parse_seq(std::string_view s, std::uint64_t& n) {
  if (s.empty() || s.size() > 19 || s[0] == '0') return false;
  n = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

// Whether `file` is exactly <name>.<n><suffix>, a name the log makes (file_name()); its n.
inline bool log_file_seq(std::string_view file, std::string_view name, std::string_view suffix, std::uint64_t& n) {
  if (file.size() <= name.size() + 1 + suffix.size() || file.compare(0, name.size(), name) != 0 ||
      file[name.size()] != '.' || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  return parse_seq(file.substr(name.size() + 1, file.size() - name.size() - 1 - suffix.size()), n);
}

inline std::string hex8(std::uint32_t v) {
  static const char* const digits = "0123456789abcdef";
  std::string h(8, '0');
  for (int i = 7; i >= 0; --i, v >>= 4) h[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return h;
}

// A manifest's text: "expiring-aof 2", "base <file>", "incr <file>"..., and "crc32c <8 lowercase
// hex digits>", the CRC-32C of every byte before that line; each line ends with '\n'.
inline std::string manifest_text(const std::string& base, const std::vector<std::string>& incrs) {
  std::string m = "expiring-aof " + std::to_string(kManifestVersion) + "\nbase " + base + "\n";
  for (const std::string& f : incrs) m += "incr " + f + "\n";
  m += "crc32c " + hex8(detail::crc32c(m.data(), m.size())) + "\n";
  return m;
}

// Checks a whole manifest before any file it names is opened: its version; for version 2 its
// crc32c line (last); then each name exactly as the log makes them for `name` (so no NUL, no
// '/', no other file), one base first, then one incr file or more whose numbers increase
// strictly from the base's (so none twice). Fills `files` ((true, base), (false, incr)...)
// and `max_seq`, the largest number named.
inline std::optional<FileError> parse_manifest(const std::string& mname, const std::string& name, std::string_view text,
                                               std::vector<std::pair<bool, std::string>>& files,
                                               std::uint64_t& max_seq) {
  files.clear();
  std::vector<std::pair<std::size_t, std::string_view>> lines;  // (offset, line)
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) return error(Errc::corrupt_file, mname, at, "a line without its end");
    lines.emplace_back(at, text.substr(at, nl - at));
    at = nl + 1;
  }
  if (lines.empty()) return error(Errc::corrupt_file, mname, 0, "empty");
  std::size_t body = lines.size();  // the lines that name files end before this one
  if (lines[0].second == "expiring-aof 2") {
    const auto& last = lines.back();
    if (lines.size() < 2 || last.second.size() != 15 || last.second.compare(0, 7, "crc32c ") != 0) {
      return error(Errc::corrupt_file, mname, last.first, "no crc32c line at the end (a cut or changed manifest)");
    }
    const std::uint32_t computed = detail::crc32c(text.data(), last.first);
    if (last.second.substr(7) != hex8(computed)) {
      return error(Errc::corrupt_file, mname, last.first,
                   "checksum mismatch (stored " + std::string(last.second.substr(7)) + ", computed " + hex8(computed) + ")");
    }
    body = lines.size() - 1;
  } else if (lines[0].second != "expiring-aof 1") {
    return error(Errc::corrupt_file, mname, 0, "not a manifest of version 1 or 2");
  }
  std::uint64_t prev = 0;
  for (std::size_t i = 1; i < body; ++i) {
    const std::size_t at = lines[i].first;
    const std::string_view line = lines[i].second;
    const bool base = i == 1;
    const std::string_view kind = base ? "base " : "incr ";
    if (line.compare(0, kind.size(), kind) != 0) {
      return error(Errc::corrupt_file, mname, at, base ? "the first file is not a base" : "a line that is not an incr file");
    }
    const std::string_view file = line.substr(kind.size());
    std::uint64_t n = 0;
    if (!log_file_seq(file, name, base ? ".base.log" : ".incr.log", n)) {
      return error(Errc::corrupt_file, mname, at,
                   "a file name this log does not make (expected " + name + ".<n>" + (base ? ".base.log" : ".incr.log") + ")");
    }
    if (!base && (files.size() == 1 ? n < prev : n <= prev)) {
      return error(Errc::corrupt_file, mname, at, "an incr file out of order or named twice (" + std::to_string(n) +
                                                     " after " + std::to_string(prev) + ")");
    }
    prev = n;
    files.emplace_back(base, std::string(file));
  }
  if (files.size() < 2) return error(Errc::corrupt_file, mname, text.size(), "no base and incr files");
  max_seq = prev;  // the last incr file's, the largest
  return std::nullopt;
}

inline int sync_fd(int fd) {
#if defined(__linux__)
  const int r = ::fdatasync(fd);
#else
  const int r = ::fsync(fd);
#endif
  return r == 0 ? 0 : errno;
}

// Reads what `fd` holds, from its start, up to `size` bytes (the size fstat() gave when the
// file was opened: a file that grows meanwhile is read as it was, one that shrinks to its
// end). False with errno in `err`.
inline bool read_fd(int fd, std::uint64_t size, std::string& out, int& err) {
  out.assign(static_cast<std::size_t>(size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::pread(fd, &out[got], out.size() - got, static_cast<off_t>(got));
    if (r < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
  return true;
}

// Reads the regular file `dir/file` whole, if it is at most `limit` bytes (open_regular():
// no symbolic link, no FIFO, no device). On a failure, the error names the file; `err` is
// errno (ENOENT: there is no such file), 0 when the file is there but refused.
inline std::optional<FileError> read_file(const std::string& dir, const std::string& file, std::string& out,
                                          std::uint64_t limit, int& err) {
  std::uint64_t size = 0;
  std::string why;
  err = 0;
  const int fd = detail::open_regular((dir + "/" + file).c_str(), O_RDONLY, size, err, why);
  if (fd < 0) return error(Errc::io_error, file, 0, "cannot open (" + why + ")");
  if (size > limit) {
    ::close(fd);
    return error(Errc::corrupt_file, file, limit, std::to_string(size) + " bytes, more than the " +
                                                      std::to_string(limit) + " a file of its kind may hold");
  }
  const bool ok = read_fd(fd, size, out, err);
  ::close(fd);
  if (!ok) return error(Errc::io_error, file, 0, std::string("cannot read (") + std::strerror(err) + ")");
  return std::nullopt;
}

inline bool sync_dir(const std::string& dir, int& err) {
  const int fd = detail::open_cloexec(dir.c_str(), O_RDONLY);
  if (fd < 0) {
    err = errno;
    return false;
  }
  const int r = ::fsync(fd);
  err = r == 0 ? 0 : errno;
  ::close(fd);
  return r == 0;
}

// Writes `data` to `dir/name` through a temporary file: fsync, rename, fsync of the directory.
// `renamed` says whether the new file took the name (then a failure is of the directory's
// fsync, and the new content may be the durable one).
inline bool replace_file(const std::string& dir, const std::string& name, const std::string& data, int& err,
                         bool& renamed) {
  renamed = false;
  const std::string final_path = dir + "/" + name;
  const std::string tmp = final_path + ".tmp-" + std::to_string(::getpid());
  // The temporary name is this process's (a stray of the log's): what a crash left there
  // goes, and the file is created anew, never through a symbolic link or into a FIFO.
  ::unlink(tmp.c_str());
  const int fd = detail::open_cloexec(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  if (fd < 0) {
    err = errno;
    return false;
  }
  bool ok = write_all(fd, data.data(), data.size(), err);
  if (ok && ::fsync(fd) != 0) {
    err = errno;
    ok = false;
  }
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    err = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return false;
  }
  renamed = true;
  return sync_dir(dir, err);
}

// One decoded record with where it ended.
template <class K, class V>
struct Parsed {
  ChangeRecord<K, V> rec;
  std::uint64_t end = 0;
  unsigned char meta = 0;  // kSelect or kSwapdb (rec unused), else 0
  std::int64_t a = 0, b = 0;
};

// Parses a whole file. On success every record is in `out` and `good_end` is where the last
// complete unit ends (a record outside a MULTI, or an EXEC); `torn` says the file ends with
// a partial record, or with a MULTI not closed.
template <class K, class V>
std::optional<FileError> parse(const std::string& name, bool base, std::string_view data,
                               std::vector<Parsed<K, V>>& out, std::uint64_t& good_end, bool& torn) {
  torn = false;
  if (data.size() < kHeaderBytes) {
    if (data.size() < sizeof kMagic && std::memcmp(data.data(), kMagic, data.size()) == 0) {
      torn = true;
      good_end = 0;
      return std::nullopt;
    }
    return error(Errc::truncated_file, name, data.size(), "the header is cut short");
  }
  if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return error(Errc::corrupt_file, name, 0, "not an append log (bad magic)");
  const auto version = static_cast<std::uint16_t>(static_cast<unsigned char>(data[8]) |
                                                  (static_cast<unsigned>(static_cast<unsigned char>(data[9])) << 8));
  if (detail::crc32c(data.data(), kHeaderBytes - 4) != get_u32(data.data() + kHeaderBytes - 4)) {
    return error(Errc::corrupt_file, name, 0, "header checksum mismatch");
  }
  if (version != kVersion) {
    return error(Errc::unsupported_version, name, 8, "format version " + std::to_string(version) + " (this build reads 1)");
  }
  if (data[10] != (base ? 1 : 2) || data[11] != 0) {
    return error(Errc::corrupt_file, name, 10, base ? "not a base file" : "not an incr file");
  }
  std::uint64_t pos = kHeaderBytes;
  good_end = pos;
  std::size_t unit_start = out.size();  // records of an open MULTI start here
  bool multi = false;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordHead) {
      torn = true;
      break;
    }
    const std::uint32_t len = get_u32(data.data() + pos);
    if (detail::crc32c(data.data() + pos, 4) != get_u32(data.data() + pos + 4)) {
      return error(Errc::corrupt_file, name, pos, "record length checksum mismatch");
    }
    const std::uint32_t crc = get_u32(data.data() + pos + 8);
    if (len == 0 || len > kMaxPayload) return error(Errc::corrupt_file, name, pos, "a record length of " + std::to_string(len));
    if (data.size() - pos - kRecordHead < len) {
      torn = true;
      break;
    }
    std::string_view payload = data.substr(static_cast<std::size_t>(pos + kRecordHead), len);
    if (detail::crc32c(payload.data(), payload.size()) != crc) return error(Errc::corrupt_file, name, pos, "checksum mismatch");
    Parsed<K, V> p;
    const auto op = static_cast<unsigned char>(payload[0]);
    payload.remove_prefix(1);
    auto key = [&]() -> bool {
      p.rec.key.emplace();
      return Codec<K>::decode(payload, *p.rec.key);
    };
    auto value = [&]() -> bool {
      p.rec.value.emplace();
      return Codec<V>::decode(payload, *p.rec.value);
    };
    auto deadline = [&]() -> bool { return codec::get_i64(payload, p.rec.at_ms); };
    bool ok = true;
    switch (op) {
      case kSet: p.rec.op = ChangeOp::set; p.rec.ttl = ChangeTtl::none; ok = key() && value(); break;
      case kSetDeadline: p.rec.op = ChangeOp::set; p.rec.ttl = ChangeTtl::at; ok = deadline() && key() && value(); break;
      case kPexpireat: p.rec.op = ChangeOp::pexpireat; ok = deadline() && key(); break;
      case kPersist: p.rec.op = ChangeOp::persist; ok = key(); break;
      case kDel: p.rec.op = ChangeOp::del; ok = key(); break;
      case kUnlink: p.rec.op = ChangeOp::unlink; ok = key(); break;
      case kFlushall: p.rec.op = ChangeOp::flushall; break;
      case kMulti: p.rec.op = ChangeOp::multi; break;
      case kExec: p.rec.op = ChangeOp::exec; break;
      case kSelect: p.meta = op; ok = codec::get_i64(payload, p.a) && p.a >= 0; break;
      case kSwapdb: p.meta = op; ok = codec::get_i64(payload, p.a) && codec::get_i64(payload, p.b) && p.a >= 0 && p.b >= 0; break;
      default: return error(Errc::corrupt_file, name, pos, "an unknown record type " + std::to_string(op));
    }
    if (!ok || !payload.empty()) return error(Errc::corrupt_file, name, pos, "a record that does not decode");
    if (p.meta != 0) {
      // (not a store record)
    } else if (p.rec.op == ChangeOp::multi) {
      if (multi) return error(Errc::corrupt_file, name, pos, "a MULTI inside a MULTI");
      multi = true;
      unit_start = out.size();
    } else if (p.rec.op == ChangeOp::exec) {
      if (!multi) return error(Errc::corrupt_file, name, pos, "an EXEC without MULTI");
      multi = false;
    }
    pos += kRecordHead + len;
    p.end = pos;
    out.push_back(std::move(p));
    if (!multi) good_end = pos;
  }
  if (multi) {  // a MULTI the crash cut: its records go
    torn = true;
    out.resize(unit_start);
  }
  return std::nullopt;
}

}  // namespace detail::aof

template <class Store>
FileResult<std::unique_ptr<AppendLog<Store>>> AppendLog<Store>::open(Store& store, std::string dir,
                                                                     AppendLogOptions options) {
  std::unique_ptr<AppendLog> log(new AppendLog(nullptr, std::move(dir), std::move(options)));
  log->one_.push_back(&store);
  log->dbs_ = &log->one_;
  return finish_open(std::move(log));
}

template <class Store>
FileResult<std::unique_ptr<AppendLog<Store>>> AppendLog<Store>::open(std::vector<Store*>& dbs, std::string dir,
                                                                     AppendLogOptions options) {
  static_assert(!detail::is_sharded<Store>::value, "expiring::AppendLog: several databases of ExpiringStore only");
  if (dbs.empty()) return FileError{Errc::out_of_range, 0, "append log: no database"};
  for (std::size_t i = 0; i < dbs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (dbs[i] == nullptr || dbs[i] == dbs[j]) return FileError{Errc::out_of_range, 0, "append log: databases must be distinct stores"};
    }
  }
  if (dbs[0] == nullptr) return FileError{Errc::out_of_range, 0, "append log: databases must be distinct stores"};
  return finish_open(std::unique_ptr<AppendLog>(new AppendLog(&dbs, std::move(dir), std::move(options))));
}

template <class Store>
FileResult<std::unique_ptr<AppendLog<Store>>> AppendLog<Store>::finish_open(std::unique_ptr<AppendLog> log) {
  namespace aof = detail::aof;
  // A name that is not a plain file name would put the log's files elsewhere than `dir`, or
  // make names that the manifest check then refuses: refused before any file is touched.
  const std::string bad = log_name_problem(log->options_.name);
  if (!bad.empty()) {
    std::string shown;
    for (const char c : log->options_.name.substr(0, 64)) {
      shown += static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? '?' : c;
    }
    return FileError{Errc::out_of_range, 0, "append log: the name '" + shown + "' is refused: " + bad};
  }
  const std::string manifest_name = log->options_.name + ".manifest";
  std::string manifest;
  int err = 0;
  std::uint64_t first = 1;                    // a new log's first file number
  bool fresh = log->options_.start_over;  // a new log (else the one the manifest names)
  if (log->options_.start_over) {
    // After every file of the log already there (a manifest left over, files without one):
    // the new ones never take their names, and replace them once the new manifest is in place.
    if (DIR* d = ::opendir(log->dir_.c_str())) {
      while (const dirent* ent = ::readdir(d)) {
        std::uint64_t n = 0;
        if ((aof::log_file_seq(ent->d_name, log->options_.name, ".base.log", n) ||
             aof::log_file_seq(ent->d_name, log->options_.name, ".incr.log", n)) &&
            n < std::numeric_limits<std::uint64_t>::max() - 2) {
          first = std::max(first, n + 1);
        }
      }
      ::closedir(d);
    }
  } else if (std::optional<FileError> e = aof::read_file(log->dir_, manifest_name, manifest, aof::kMaxManifestBytes, err)) {
    if (err != ENOENT) return *e;
    // Files of a log without their manifest: what they held cannot be known; nothing is
    // overwritten.
    if (DIR* d = ::opendir(log->dir_.c_str())) {
      std::string orphan;
      while (const dirent* ent = ::readdir(d)) {
        if (orphan.empty() && log->is_log_file(ent->d_name, false)) orphan = ent->d_name;
      }
      ::closedir(d);
      if (!orphan.empty()) {
        return aof::error(Errc::corrupt_file, manifest_name, 0, "missing, but " + orphan + " is there (restore the manifest, or move the files away)");
      }
    }
    fresh = true;
  }
  if (fresh) {
    // A new log: the store's content becomes its first base.
    log->info_.created = true;
    log->seq_ = first;
    log->base_ = log->file_name(first, true);
    int bfd = -1;
    std::uint64_t size = 0;
    if (!log->create_file(log->base_, true, bfd, size)) return *log->failure();
    ::close(bfd);
    if (!log->create_file(log->file_name(first, false), false, log->fd_, size)) return *log->failure();
    log->incrs_.push_back(log->file_name(first, false));
    if (!log->write_manifest(log->base_, log->incrs_)) return *log->failure();
    // What the store already holds becomes the next base, as a rewrite writes it.
    bool empty = true;
    for (const Store* d : *log->dbs_) empty = empty && d->size() == 0;
    if (!empty && !log->rewrite()) return *log->failure();
  } else {
    // The whole manifest is checked (names, order, checksum) before any file it names is
    // opened, and so before anything can be removed.
    std::vector<std::pair<bool, std::string>> files;
    std::uint64_t max_seq = 0;
    if (std::optional<FileError> bad_manifest = aof::parse_manifest(manifest_name, log->options_.name, manifest, files, max_seq)) {
      return *bad_manifest;
    }
    // The last incr file is opened first (for reading its records and appending new ones):
    // after the replay (which replaces the store's content) nothing can fail.
    std::uint64_t last_size = 0;
    std::string why;
    log->fd_ = detail::open_regular(log->path(files.back().second).c_str(), O_RDWR | O_APPEND, last_size, err, why);
    if (log->fd_ < 0) return aof::error(Errc::io_error, files.back().second, 0, "cannot open (" + why + ")");
    FileResult<bool> r = log->replay(files, last_size);
    if (!r.ok()) return r.error();  // ~AppendLog closes the descriptor
    log->base_ = files.front().second;
    for (std::size_t i = 1; i < files.size(); ++i) log->incrs_.push_back(files[i].second);
    // New files continue after the largest number named.
    log->seq_ = max_seq;
    struct stat st {};
    if (::fstat(log->fd_, &st) == 0) log->stats_.incr_bytes = static_cast<std::uint64_t>(st.st_size);
  }
  log->remove_strays();
  AppendLog* self = log.get();
  Store& store = log->store();
  if (log->options_.attach && log->several()) {
    for (Store* d : *log->dbs_) d->set_change_feed([self, d](const change_type& c) { self->on_change(c, self->index_of(d)); });
    log->attached_ = true;
  } else if (log->options_.attach) {
    if constexpr (detail::is_sharded<Store>::value) {
      store.set_change_log(
          [self](const change_type& c, bool in_unit, std::string& out) { return self->encode_shared(c, in_unit, out); },
          [self](std::uint64_t seq) { self->after_call(seq); },
          log->options_.buffer_limit);  // per shard: the log's thread drains them every second
    } else {
      store.set_change_feed([self](const change_type& c) { self->on_change(c); });
    }
    log->attached_ = true;
  }
  if (log->options_.fsync != Fsync::always) log->thread_ = detail::quiet_thread([self] { self->background(); });
  return log;
}

template <class Store>
FileResult<bool> AppendLog<Store>::replay(const std::vector<std::pair<bool, std::string>>& files,
                                          std::uint64_t last_size) {
  namespace aof = detail::aof;
  std::vector<aof::Parsed<key_type, mapped_type>> records;
  std::string data;
  std::optional<std::pair<std::string, std::uint64_t>> cut;  // the last file's torn tail
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& name = files[i].second;
    const bool last = i + 1 == files.size();
    int err = 0;
    if (last) {  // through the descriptor open() holds: the file that is checked is the one appended to
      if (!aof::read_fd(fd_, last_size, data, err)) {
        return aof::error(Errc::io_error, name, 0, std::string("cannot read (") + std::strerror(err) + ")");
      }
    } else if (std::optional<FileError> e = aof::read_file(dir_, name, data, std::numeric_limits<std::uint64_t>::max(), err)) {
      return *e;
    }
    if (i == 0) stats_.base_bytes = data.size();
    std::uint64_t good_end = 0;
    bool torn = false;
    if (std::optional<FileError> e = aof::parse(name, files[i].first, data, records, good_end, torn)) return *e;
    if (torn) {
      if (!last) return aof::error(Errc::truncated_file, name, good_end, "a torn record before the last file");
      if (!options_.load_truncated) {
        return aof::error(Errc::truncated_file, name, good_end, "a torn last record (aof-load-truncated is off)");
      }
      cut.emplace(name, good_end);
      info_.truncated_bytes = data.size() - good_end;
    }
    ++info_.files;
    info_.bytes += data.size();
  }
  // Every database a record names must exist (a log of several, opened with fewer).
  for (const auto& p : records) {
    if (p.meta == 0) continue;
    const std::int64_t top = std::max(p.a, p.meta == aof::kSwapdb ? p.b : 0);
    if (static_cast<std::uint64_t>(top) >= dbs_->size()) {
      return aof::error(Errc::out_of_range, "replay", p.end,
                        "a record of database " + std::to_string(top) + ", and the log was opened with " +
                            std::to_string(dbs_->size()) + (dbs_->size() == 1 ? " database" : " databases"));
    }
  }
  // Everything was read and checked: the store takes the log's state.
  if (cut) {  // the last file, open as fd_ (O_APPEND: a write goes to the end ftruncate() left)
    if (cut->second < detail::aof::kHeaderBytes) {
      // Not even the header made it: write it again.
      int err = 0;
      const std::string h = aof::header(false, store().now_ms());
      if (::ftruncate(fd_, 0) != 0 || !aof::write_all(fd_, h.data(), h.size(), err) || ::fsync(fd_) != 0) {
        return aof::error(Errc::io_error, cut->first, 0, "cannot rewrite the header");
      }
    } else if (::ftruncate(fd_, static_cast<off_t>(cut->second)) != 0) {
      return aof::error(Errc::io_error, cut->first, cut->second, std::string("cannot truncate (") + std::strerror(errno) + ")");
    }
  }
  std::optional<FileError> refused;
  const auto apply = [&](Store& to, aof::Parsed<key_type, mapped_type>& p) {
    Result<bool> r = to.apply(p.rec.view());
    if (!r.ok()) {
      refused = aof::error(r.error(), "replay", p.end, std::string("the store refused a record: ") + to_string(r.error()));
      return false;
    }
    ++info_.records;
    p.rec = {};
    return true;
  };
  if (!several()) {
    store().as_one_unit([&] {
      store().clear();
      for (auto& p : records) {
        if (p.meta != 0) continue;  // (checked above: database 0 only)
        if (!apply(store(), p)) return;
      }
    });
  } else {
    std::size_t db = 0;
    for (Store* d : *dbs_) d->clear();
    for (auto& p : records) {
      if (p.meta == aof::kSelect) {
        db = static_cast<std::size_t>(p.a);
      } else if (p.meta == aof::kSwapdb) {
        std::swap((*dbs_)[static_cast<std::size_t>(p.a)], (*dbs_)[static_cast<std::size_t>(p.b)]);
        ++info_.records;
      } else if (!apply(*(*dbs_)[db], p)) {
        break;
      }
    }
  }
  if (refused) return *refused;
  return true;
}

// Whether `f` is a name this log gives its files, exactly as file_name() makes them (n in
// its one decimal form): <name>.<n>.base.log, <name>.<n>.incr.log, and (with `temporary`)
// <name>.<n>.base.log.tmp and <name>.manifest.tmp-<pid>. A look-alike ("appendonly.01.incr.log",
// a backup with another suffix) is not the log's, and is never removed.
template <class Store>
bool AppendLog<Store>::is_log_file(const std::string& f, bool temporary) const {
  namespace aof = detail::aof;
  const std::string& n = options_.name;
  std::uint64_t seq = 0;
  if (aof::log_file_seq(f, n, ".base.log", seq) || aof::log_file_seq(f, n, ".incr.log", seq)) return true;
  if (!temporary) return false;
  const std::string manifest_tmp = n + ".manifest.tmp-";
  if (f.size() > manifest_tmp.size() && f.compare(0, manifest_tmp.size(), manifest_tmp) == 0) {
    return aof::parse_seq(std::string_view(f).substr(manifest_tmp.size()), seq);
  }
  return aof::log_file_seq(f, n, ".base.log.tmp", seq);
}

// Files of this log that the manifest does not name: a rewrite's temporary base, files a
// crash left between a manifest switch and their removal. Called once the manifest naming
// base_ and incrs_ is the one on disk (read and checked by open(), or written by it), so a
// file it names is never removed; the names compared are the exact ones opened (the manifest
// check admits no NUL or other byte a path would drop).
template <class Store>
void AppendLog<Store>::remove_strays() const {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> strays;
  while (const dirent* e = ::readdir(d)) {
    const std::string f = e->d_name;
    if (!is_log_file(f, /*temporary too=*/true) || f == base_) continue;
    bool named = false;
    for (const std::string& i : incrs_) named = named || f == i;
    if (!named) strays.push_back(f);
  }
  ::closedir(d);
  for (const std::string& f : strays) ::unlink(path(f).c_str());
}

template <class Store>
bool AppendLog<Store>::create_file(const std::string& file, bool base, int& fd, std::uint64_t& size) {
  const std::string p = path(file);
  // A new number (after every one the manifest names): a file already there under it is a
  // stray of the log's, and goes; the file is created anew (O_EXCL), never through a symbolic
  // link or into a FIFO left there.
  ::unlink(p.c_str());
  fd = detail::open_cloexec(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND, 0644);
  int err = 0;
  if (fd < 0) {
    fail("cannot create " + file, errno);
    return false;
  }
  const std::string h = detail::aof::header(base, store().now_ms());
  if (!detail::aof::write_all(fd, h.data(), h.size(), err) || detail::aof::sync_fd(fd) != 0) {
    fail("cannot write " + file, err != 0 ? err : errno);
    ::close(fd);
    fd = -1;
    return false;
  }
  size = h.size();
  return true;
}

template <class Store>
bool AppendLog<Store>::write_manifest(const std::string& base, const std::vector<std::string>& incrs) {
  int err = 0;
  bool renamed = false;
  if (!detail::aof::replace_file(dir_, options_.name + ".manifest", detail::aof::manifest_text(base, incrs), err,
                                 renamed)) {
    fail("cannot write the manifest", err);
    manifest_renamed_ = renamed;
    return false;
  }
  return true;
}

template <class Store>
void AppendLog<Store>::fail(std::string what, int err) {
  failure_.set(FileError{Errc::io_error, 0, "append log: " + what + " (" + std::strerror(err) + ")"});
}

// The change's records (append_record()), appended to `out`; how many. `in_unit`: c is inside a
// MULTI ... EXEC (a RENAME alone is framed here). Reads no state of the log: a store of
// shards calls it from many threads at once.
template <class Store>
std::size_t AppendLog<Store>::encode(const change_type& c, bool in_unit, std::string& out) {
  namespace aof = detail::aof;
  std::size_t n = 0;
  auto record = [&](unsigned char op, const key_type* k, const mapped_type* v, const std::int64_t* at) {
    append_record(out, op, k, v, at);
    ++n;
  };
  auto whole = [&](const key_type& k, const mapped_type& v, const std::optional<std::int64_t>& d) {
    append_whole(out, k, v, d);
    ++n;
  };
  switch (c.op) {
    case ChangeOp::set: {
      std::optional<std::int64_t> d;
      if (c.ttl == ChangeTtl::at) d = c.at_ms;
      if (c.ttl == ChangeTtl::keep) d = c.deadline;
      whole(*c.key, *c.value, d);
      break;
    }
    case ChangeOp::pexpireat: record(aof::kPexpireat, c.key, nullptr, &c.at_ms); break;
    case ChangeOp::persist: record(aof::kPersist, c.key, nullptr, nullptr); break;
    case ChangeOp::del: record(aof::kDel, c.key, nullptr, nullptr); break;
    case ChangeOp::unlink: record(aof::kUnlink, c.key, nullptr, nullptr); break;
    case ChangeOp::flushall: record(aof::kFlushall, nullptr, nullptr, nullptr); break;
    case ChangeOp::multi: record(aof::kMulti, nullptr, nullptr, nullptr); break;
    case ChangeOp::exec: record(aof::kExec, nullptr, nullptr, nullptr); break;
    case ChangeOp::rename:  // as the state it leaves: DEL a, SET b, in one unit
      if (!in_unit) record(aof::kMulti, nullptr, nullptr, nullptr);
      record(aof::kDel, c.key, nullptr, nullptr);
      whole(*c.to, *c.value, c.deadline);
      if (!in_unit) record(aof::kExec, nullptr, nullptr, nullptr);
      break;
  }
  return n;
}

// A store of shards: one record's bytes, encoded into its shard's log buffer under the shard's
// lock (set_change_log()), so that many threads encode at once.
template <class Store>
std::size_t AppendLog<Store>::encode_shared(const change_type& c, bool in_unit, std::string& out) noexcept {
  if (!failure_.code_ok()) return 0;
  try {
    return encode(c, in_unit, out);
  } catch (...) {  // an allocation or a codec: the log can no longer be trusted
    failure_.set(FileError{Errc::io_error, 0, "append log: a record could not be encoded"});
    return 0;
  }
}

template <class Store>
void AppendLog<Store>::append_record(std::string& out, unsigned char op, const key_type* k, const mapped_type* v,
                                     const std::int64_t* at) {
  namespace aof = detail::aof;
  // The fixed-width front (head, op, deadline, and the key when its codec has a fixed width,
  // and then the value too when its codec has one) is sized with one append and written in
  // place: a record of integers costs one call into the string, not one per field.
  constexpr std::size_t kKey = codec::fixed_bytes<key_type>::value;
  constexpr std::size_t kValue = kKey != 0 ? codec::fixed_bytes<mapped_type>::value : 0;
  const std::size_t start = out.size();
  std::size_t front = aof::kRecordHead + 1 + (at != nullptr ? 8 : 0);
  if constexpr (kKey != 0) front += k != nullptr ? kKey : 0;
  if constexpr (kValue != 0) front += v != nullptr ? kValue : 0;
  // The payload's CRC is taken from the values for that front, and from the bytes for the rest.
  out.append(front, '\0');
  char* p = &out[start + aof::kRecordHead];
  *p++ = static_cast<char>(op);
  std::uint32_t crc = detail::crc32c_le(~0u, op, 1);
  if (at != nullptr) {
    codec::store_le(p, static_cast<std::uint64_t>(*at), 8);
    crc = detail::crc32c_le(crc, static_cast<std::uint64_t>(*at), 8);
    p += 8;
  }
  std::size_t rest = out.size();
  if constexpr (kKey != 0) {
    if (k != nullptr) {
      const std::uint64_t bits = Codec<key_type>::bits(*k);
      codec::store_le(p, bits, kKey);
      crc = detail::crc32c_le(crc, bits, kKey);
      p += kKey;
    }
  } else {
    if (k != nullptr) Codec<key_type>::encode(*k, out);
  }
  if constexpr (kValue != 0) {
    if (v != nullptr) {
      const std::uint64_t bits = Codec<mapped_type>::bits(*v);
      codec::store_le(p, bits, kValue);
      crc = detail::crc32c_le(crc, bits, kValue);
    }
  } else {
    if (v != nullptr) Codec<mapped_type>::encode(*v, out);
  }
  crc = detail::crc32c_update(crc, out.data() + rest, out.size() - rest);
  aof::seal(&out[start], out.size() - start - aof::kRecordHead, ~crc);
}

template <class Store>
void AppendLog<Store>::append_whole(std::string& out, const key_type& k, const mapped_type& v,
                                    const std::optional<std::int64_t>& deadline) {
  if (deadline) {
    append_record(out, detail::aof::kSetDeadline, &k, &v, &*deadline);
  } else {
    append_record(out, detail::aof::kSet, &k, &v, nullptr);
  }
}

template <class Store>
void AppendLog<Store>::on_change(const change_type& c, std::size_t db) noexcept {
  if (!failure_.code_ok()) return;
  bool big = false;
  try {
    if (c.op == ChangeOp::multi) in_multi_ = true;
    if (in_multi_) {  // gathered until its EXEC, then into the buffer whole
      scratch_records_ += select(db, scratch_);
      scratch_records_ += encode(c, true, scratch_);
      if (c.op != ChangeOp::exec) return;
      in_multi_ = false;
      std::lock_guard<detail::ShardLock> g(buf_mu_);
      buf_.append(scratch_);
      big = close_unit(c.seq, scratch_records_);
      scratch_.clear();
      scratch_records_ = 0;
    } else {  // a unit of one record: straight into the buffer
      std::lock_guard<detail::ShardLock> g(buf_mu_);
      const std::size_t n = select(db, buf_) + encode(c, false, buf_);
      big = close_unit(c.seq, n);
    }
  } catch (...) {  // an allocation or a codec: the log can no longer be trusted
    failure_.set(FileError{Errc::io_error, 0, "append log: a record could not be encoded"});
    return;
  }
  end_unit(big);
}

template <class Store>
std::size_t AppendLog<Store>::select(std::size_t db, std::string& out) {
  if (!several() || static_cast<std::int64_t>(db) == last_db_) return 0;
  detail::aof::append_numbers(out, detail::aof::kSelect, static_cast<std::int64_t>(db), 0, false);
  last_db_ = static_cast<std::int64_t>(db);
  return 1;
}

template <class Store>
void AppendLog<Store>::swapdb(std::size_t a, std::size_t b) noexcept {
  if (!failure_.code_ok() || !several()) return;
  bool big = false;
  try {
    if (in_multi_) {  // inside a unit of the caller's (a transaction): in its place there
      detail::aof::append_numbers(scratch_, detail::aof::kSwapdb, static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), true);
      ++scratch_records_;
    } else {
      std::lock_guard<detail::ShardLock> g(buf_mu_);
      detail::aof::append_numbers(buf_, detail::aof::kSwapdb, static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), true);
      big = close_unit(appended_seq_, 1);
    }
  } catch (...) {
    failure_.set(FileError{Errc::io_error, 0, "append log: a record could not be encoded"});
    return;
  }
  if (!in_multi_) end_unit(big);
  // A walk that saw the databases in the old order would put keys in the wrong one: the
  // rewrite starts over, after the SWAPDB record (which stays in the incr file before it);
  // inside a unit it cannot start (it would split the unit), and is abandoned.
  if (rw_) {
    cancel_rewrite();
    if (!in_multi_) (void)start_rewrite();
  }
}

template <class Store>
void AppendLog<Store>::cancel_rewrite() {
  if (rw_->syncer.joinable()) rw_->syncer.join();
  if (rw_->fd >= 0) ::close(rw_->fd);
  ::unlink(rw_->tmp_path.c_str());
  rw_.reset();
  std::lock_guard<std::mutex> g(mu_);
  ++stats_.rewrite_restarts;
}

// Under buf_mu_: a whole unit of `records` records, up to the stream's record `seq`, is in the
// buffer; whether the buffer is past its limit.
template <class Store>
bool AppendLog<Store>::close_unit(std::uint64_t seq, std::size_t records) {
  records_ += records;
  appended_seq_ = seq;
  return buf_.size() >= options_.buffer_limit;
}

template <class Store>
void AppendLog<Store>::after_call(std::uint64_t seq) {
  if (options_.fsync == Fsync::always) {
    wait_durable(seq);
    return;
  }
  bool due = write_due_.load(std::memory_order_relaxed) && write_due_.exchange(false, std::memory_order_relaxed);
  if constexpr (detail::is_sharded<Store>::value) due = store().take_log_due() || due;
  // Unless a write is running (the log's thread's, which drains the same buffers): a writer
  // of the store does not wait behind it.
  if (due) (void)write_out(false, /*wait=*/false);
}

// The end of a unit: under `always` it reaches the disk now; otherwise the thread writes it
// within a second, or now if the buffer is past its limit.
template <class Store>
void AppendLog<Store>::end_unit(bool big) {
  if constexpr (detail::is_sharded<Store>::value) {
    // The store's locks are held: the write waits for after_call(), once they are released.
    if (big) write_due_.store(true, std::memory_order_relaxed);
  } else if (options_.fsync == Fsync::always) {
    (void)write_out(true);
  } else if (big) {
    (void)write_out(false);
  }
}

// Writes are ordered by fd_mu_; the fdatasync runs after it is released, on a duplicate of the
// descriptor, so that a write of the store's threads never waits for the disk behind the
// log's thread (a rewrite may meanwhile switch fd_ to a new file: the duplicate keeps the old
// one open until its sync is done).
template <class Store>
bool AppendLog<Store>::write_out(bool sync, bool wait) {
  std::string out;
  std::uint64_t covered = 0;  // the last record this write holds
  int sync_on = -1;
  std::size_t drained = 0;  // records from the shards' buffers
  {
    std::unique_lock<std::mutex> fg(fd_mu_, std::defer_lock);
    if (wait) {
      fg.lock();
    } else if (!fg.try_lock()) {
      return true;  // another write is running; it or the next takes these records
    }
    {
      std::lock_guard<detail::ShardLock> g(buf_mu_);
      out.swap(buf_);
      buf_.swap(spare_);  // the last write's buffer, kept with its capacity
      covered = appended_seq_;
    }
    if constexpr (detail::is_sharded<Store>::value) {  // the shards' buffers, in stream order
      if (attached_) {
        const std::pair<std::size_t, std::uint64_t> d = store().drain_log(out);
        drained = d.first;
        covered = std::max(covered, d.second);
      }
    }
    if (!failure_.code_ok()) return false;
    int err = 0;
    if (!out.empty() && !detail::aof::write_all(fd_, out.data(), out.size(), err)) {
      fail("write failed", err);
      return false;
    }
    if (sync && (sync_on = detail::open_cloexec_dup(fd_)) < 0) {
      fail("cannot duplicate the log's descriptor", errno);
      return false;
    }
  }
  if (sync) {
    const int err = detail::aof::sync_fd(sync_on);
    ::close(sync_on);
    if (err != 0) {
      fail("fdatasync failed", err);
      return false;
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  stats_.bytes += out.size();
  stats_.incr_bytes += out.size();
  if (sync) {
    ++stats_.fsyncs;
    durable_seq_ = std::max(durable_seq_, covered);
  }
  // Keep the buffer's capacity for the next write's records.
  out.clear();
  std::lock_guard<detail::ShardLock> b(buf_mu_);
  records_ += drained;
  if (out.capacity() > spare_.capacity()) spare_.swap(out);
  return true;
}

template <class Store>
void AppendLog<Store>::background() {
  // A store of shards buffers in its shards until this thread drains them: every 100 ms, so
  // that the buffers stay small, with the fdatasync of everysec once a second.
  constexpr bool kSharded = detail::is_sharded<Store>::value;
  const auto period = kSharded ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
  auto last_sync = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> g(mu_);
  while (!stop_) {
    wake_.wait_for(g, period, [&] { return stop_; });
    if (stop_) break;
    g.unlock();
    const auto now = std::chrono::steady_clock::now();
    const bool sync = options_.fsync == Fsync::everysec && (!kSharded || now - last_sync >= std::chrono::seconds(1));
    if (sync) last_sync = now;
    (void)write_out(sync);
    g.lock();
  }
}

template <class Store>
bool AppendLog<Store>::flush() {
  return write_out(true);
}

template <class Store>
void AppendLog<Store>::set_fsync(Fsync f) {
  // The thread stops (it reads the policy), the buffer goes to the disk, and the thread starts
  // again under the new policy if it has one.
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  (void)write_out(true);
  options_.fsync = f;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  if (f != Fsync::always) thread_ = detail::quiet_thread([this] { background(); });
}

template <class Store>
void AppendLog<Store>::wait_durable(std::uint64_t seq) {
  std::unique_lock<std::mutex> g(mu_);
  while (durable_seq_ < seq && failure_.code_ok()) {
    if (committing_) {  // a sync is running: it may cover this record; if not, the next one
      durable_cv_.wait(g);
      continue;
    }
    committing_ = true;
    g.unlock();
    (void)write_out(true);  // covers every record buffered before it swapped the buffer
    g.lock();
    committing_ = false;
    durable_cv_.notify_all();
  }
}

template <class Store>
std::optional<FileError> AppendLog<Store>::failure() const {
  std::lock_guard<std::mutex> g(failure_.mu);
  return failure_.error;
}

template <class Store>
AppendLogStats AppendLog<Store>::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  AppendLogStats s = stats_;
  {
    std::lock_guard<detail::ShardLock> b(buf_mu_);
    s.records = records_;
  }
  s.rewriting = rw_.has_value();
  s.ok = failure_.code_ok();
  return s;
}

template <class Store>
AppendLog<Store>::~AppendLog() {
  if (attached_) {
    for (Store* d : *dbs_) d->set_change_feed({});
  }
  if (rw_) {
    if (rw_->syncer.joinable()) rw_->syncer.join();
    if (rw_->fd >= 0) ::close(rw_->fd);
    ::unlink(rw_->tmp_path.c_str());
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) {
    (void)write_out(options_.fsync != Fsync::no);
    ::close(fd_);
  }
}

// ---- Rewrite ----

template <class Store>
bool AppendLog<Store>::start_rewrite() {
  if (rw_ || !failure_.code_ok()) return false;
  // (A store of shards never calls a listener inside a unit; its in_multi_ is the sequencer's.)
  if constexpr (!detail::is_sharded<Store>::value) {
    if (in_multi_) return false;
  }
  // The changes from now on go to a new incr file, named in the manifest at once.
  if (!write_out(true)) return false;
  const std::uint64_t seq = seq_ + 1;
  const std::string incr = file_name(seq, false);
  int fd = -1;
  std::uint64_t size = 0;
  if (!create_file(incr, false, fd, size)) return false;
  std::vector<std::string> incrs = incrs_;
  incrs.push_back(incr);
  if (!write_manifest(base_, incrs)) {
    ::close(fd);
    // Unless the new manifest took the name (only the directory's fsync failed): then it may
    // be the durable one, and names the file.
    if (!manifest_renamed_) ::unlink(path(incr).c_str());
    return false;
  }
  {
    std::lock_guard<std::mutex> fg(fd_mu_);
    ::close(fd_);
    fd_ = fd;
  }
  last_db_ = -1;  // the new incr file's first record says its database
  {
    std::lock_guard<std::mutex> g(mu_);
    stats_.incr_bytes = size;
  }
  seq_ = seq;
  incrs_ = std::move(incrs);
  rw_.emplace();
  rw_->seq = seq;
  rw_->started = std::chrono::steady_clock::now();
  rw_->tmp_path = path(file_name(seq, true)) + ".tmp";
  ::unlink(rw_->tmp_path.c_str());  // a stray of the log's name: created anew, as create_file()
  rw_->fd = detail::open_cloexec(rw_->tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  if (rw_->fd < 0) {
    fail("cannot create the new base", errno);
    rw_.reset();
    return false;
  }
  rw_->buf = detail::aof::header(true, store().now_ms());
  return true;
}

template <class Store>
bool AppendLog<Store>::rewrite_step() {
  namespace aof = detail::aof;
  if (!rw_) return false;
  Rewrite& rw = *rw_;
  auto abandon = [&](const std::string& what, int err) {
    fail(what, err);
    if (rw.syncer.joinable()) rw.syncer.join();
    ::close(rw.fd);
    ::unlink(rw.tmp_path.c_str());
    rw_.reset();
    return false;
  };
  if (!rw.walked) {
    const auto deadline = std::chrono::steady_clock::now() + options_.rewrite_step_budget;
    std::string& out = rw.buf;
    auto put = [&](const key_type& k, const mapped_type& v, const std::optional<std::int64_t>& d) {
      // A replica's hash emptied by its own reclaim (D31) answers as a missing key, and a
      // record of it would not replay (the codec refuses a hash with no field).
      if (detail::is_empty_hash(v)) return;
      append_whole(out, k, v, d);
    };
    for (;;) {
      bool done = false;
      if constexpr (detail::is_sharded<Store>::value) {
        const std::uint64_t next = store().scan_stored(rw.shard, rw.cursor, 64, put);
        if (next == Store::kRestarted) {  // this shard rehashed: walk it again (see the design)
          rw.cursor = 0;
          std::lock_guard<std::mutex> g(mu_);
          ++stats_.rewrite_restarts;
          continue;
        }
        rw.cursor = next;
        if (next == 0) done = ++rw.shard == store().shard_count();
      } else {
        // Database after database (several: each after its SELECT).
        if (several() && !rw.selected) {
          aof::append_numbers(out, aof::kSelect, static_cast<std::int64_t>(rw.db), 0, false);
          rw.selected = true;
        }
        const std::uint64_t next = (*dbs_)[rw.db]->scan_stored(rw.cursor, 64, put);
        if (next == Store::kRestarted) {  // a rehash moved entries: walk again, from an empty base
          out = aof::header(true, store().now_ms());
          rw.bytes = 0;
          if (::ftruncate(rw.fd, 0) != 0 || ::lseek(rw.fd, 0, SEEK_SET) != 0) {
            return abandon("cannot truncate the new base", errno);
          }
          rw.cursor = 0;
          rw.db = 0;
          rw.selected = false;
          std::lock_guard<std::mutex> g(mu_);
          ++stats_.rewrite_restarts;
          continue;
        }
        rw.cursor = next;
        if (next == 0) {
          rw.selected = false;
          done = ++rw.db == dbs_->size();
        }
      }
      if (out.size() >= (1u << 16) || done) {
        int err = 0;
        if (!aof::write_all(rw.fd, out.data(), out.size(), err)) return abandon("cannot write the new base", err);
        rw.bytes += out.size();
        out.clear();
      }
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
    rw.walked = true;
    // The base reaches the disk on a thread; the steps that follow only look.
    const int fd = rw.fd;
    Rewrite* r = &rw;
    rw.syncer = detail::quiet_thread([fd, r] {
      const int e = ::fsync(fd);
      r->sync_err = e == 0 ? 0 : errno;
      r->synced.store(e == 0 ? 1 : -1, std::memory_order_release);
    });
    return false;
  }
  const int state = rw.synced.load(std::memory_order_acquire);
  if (state == 0) return false;
  rw.syncer.join();
  if (state < 0) return abandon("cannot fsync the new base", rw.sync_err);
  ::close(rw.fd);
  rw.fd = -1;
  const std::string base = file_name(rw.seq, true);
  int err = 0;
  if (::rename(rw.tmp_path.c_str(), path(base).c_str()) != 0) return abandon("cannot rename the new base", errno);
  if (!aof::sync_dir(dir_, err)) return abandon("cannot fsync the directory", err);
  const std::vector<std::string> incrs{incrs_.back()};
  if (!write_manifest(base, incrs)) {
    rw_.reset();
    return false;
  }
  // The older files are no longer named by the manifest.
  ::unlink(path(base_).c_str());
  for (std::size_t i = 0; i + 1 < incrs_.size(); ++i) ::unlink(path(incrs_[i]).c_str());
  base_ = base;
  incrs_ = incrs;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++stats_.rewrites;
    stats_.base_bytes = rw.bytes;
    stats_.last_rewrite_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - rw.started)
                                 .count();
  }
  rw_.reset();
  return true;
}

}  // namespace expiring
