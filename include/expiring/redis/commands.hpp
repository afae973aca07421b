// expiring/redis/commands.hpp: Redis's string, hash and keyspace commands over an ExpiringStore.
//
// Overview
// --------
// `CommandExecutor<Clock>` runs one Redis command, given as its arguments (binary-safe
// std::strings, the command name first), against a `ValueStore<Clock>` (an ExpiringStore of
// redis::Value: a string or a hash, value.hpp) and returns the reply Redis 7.0 would send (7.4
// for the hash field TTL commands): the same reply type and, for errors, the same text
// (semantics.md Part B §2, §2.0 integer grammar, §2.10 error strings; arity errors; "unknown
// command" formatted as redis 7.0.15 formats it). Where semantics.md Part A decides otherwise (D4:
// SET with a past EXAT/PXAT stores nothing) the store's decision stands.
//
// Commands: PING ECHO SET SETEX PSETEX SETNX GET GETSET GETEX GETDEL MGET MSET MSETNX DEL
// UNLINK EXISTS TOUCH TTL PTTL EXPIRE PEXPIRE EXPIREAT PEXPIREAT EXPIRETIME PEXPIRETIME PERSIST
// RENAME RENAMENX COPY MOVE DUMP RESTORE TYPE STRLEN APPEND INCR INCRBY DECR DECRBY INCRBYFLOAT KEYS
// SCAN RANDOMKEY DBSIZE
// HSET HSETNX HGET HMGET HDEL HLEN HEXISTS HGETALL HKEYS HVALS HINCRBY HEXPIRE HPEXPIRE
// HEXPIREAT HPEXPIREAT HTTL HPTTL HEXPIRETIME HPEXPIRETIME HPERSIST
// FLUSHDB FLUSHALL SELECT SWAPDB INFO CONFIG (GET/SET/RESETSTAT/HELP) DEBUG SET-ACTIVE-EXPIRE TIME
// COMMAND (COUNT/INFO/LIST/HELP) OBJECT (FREQ/IDLETIME/HELP) HELLO QUIT SHUTDOWN
// MULTI EXEC DISCARD WATCH UNWATCH SUBSCRIBE PSUBSCRIBE UNSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB
// CLIENT (REPLY/ID/SETNAME/GETNAME/NO-EVICT/HELP).
//
// Layout: this file holds what is common to every command: CommandExecutor's declaration
// (its members listed family by family), the session, the dispatch (lookup, arity, AUTH, the
// memory check, server commands) and the command table, table(), in one place: a command's
// name, arity, flags, key positions and handler. Each family's implementations are in a file
// of their own, included at the end of this one:
//   cmd_server.hpp    connection and server/admin: PING ECHO QUIT SHUTDOWN AUTH HELLO SELECT SWAPDB
//                     TIME DBSIZE FLUSHDB FLUSHALL DEBUG INFO CONFIG COMMAND OBJECT
//   cmd_strings.hpp   GET SET SETEX PSETEX SETNX GETSET GETDEL GETEX MGET MSET MSETNX STRLEN
//                     APPEND INCR DECR INCRBY DECRBY INCRBYFLOAT
//   cmd_keyspace.hpp  DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX COPY MOVE DUMP RESTORE KEYS SCAN
//                     RANDOMKEY
//   cmd_expiry.hpp    TTL PTTL EXPIRETIME PEXPIRETIME EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST
//   cmd_hashes.hpp    HSET ... HINCRBY and the hash field TTL commands HEXPIRE ... HPERSIST
//   cmd_transactions.hpp  MULTI EXEC DISCARD WATCH UNWATCH (time stands still inside EXEC)
//   cmd_pubsub.hpp    SUBSCRIBE ... PUBSUB, keyspace notifications, CLIENT
// The persistence and replication commands (SAVE BGSAVE LASTSAVE BGREWRITEAOF DEBUG RELOAD SYNC
// REPLICAOF) need files, processes and sockets: a server adds them with add_command()
// (expiring-server: server/persistence.cpp). The members are defined out of the class, so a
// program can compile the instances it uses once (`template class CommandExecutor<Clock>;`)
// and declare them `extern template` elsewhere (expiring-server: server/command_instances.hpp).
//
// Memory limit: CONFIG SET maxmemory / maxmemory-policy / maxmemory-samples / lfu-log-factor /
// lfu-decay-time drive the store's limit. With a limit set, every command first runs the
// store's perform_evictions() (Redis performEvictions() in processCommand), and a command
// Redis flags `denyoom` is refused with "-OOM command not allowed when used memory >
// 'maxmemory'." when it fails; other commands (reads, DEL, EXPIRE, ...) still run.
//
// `INFO memory` reports as used_memory the figure the limit is enforced against
// (store.used_memory(), which includes what a server declares with set_external_memory(): its
// clients' buffers).
//
// Replies: execute() returns a Reply; execute_into() appends the reply's encoding to a
// client's OutputBuffer, and GET and MGET write the stored values straight into it, so that
// a reply of large values is copied once (building a Reply and then encoding it held it twice,
// and more while the output string grew). execute() of those commands decodes what they wrote.
//
// Client limits: CONFIG SET / GET proto-max-bulk-len, client-query-buffer-limit and
// client-output-buffer-limit (Redis's syntax and defaults) live in options(); the server
// enforces them.
//
// Databases: an executor built on one store has one database (SELECT 0 only); built on a
// vector of stores it has as many, Redis's `databases`, each a store of its own: SELECT picks
// a session's database, SWAPDB exchanges two for every session, MOVE and COPY ... DB carry a
// key (with its TTL and its fields' TTLs) between them, FLUSHALL empties them all, INFO
// keyspace has a line per database and INFO stats sums them. One maxmemory bounds them all
// (memory_check()). There are two types, string and hash:
// a command on a key of the other type answers "WRONGTYPE Operation against a key holding the
// wrong kind of value", checked first, as Redis (MGET answers nil for a hash; SET, MSET and the
// keyspace commands take either type). The hash field TTL commands follow Redis 7.4's syntax,
// argument order and texts (docs/design/hash_fields_research.md §1); the store's decisions
// D20-D27 (semantics.md) stand where they differ from 7.4.
//
// Connection-level effects (QUIT closes the connection after the reply; SHUTDOWN stops the
// server and sends no reply) are reported through Session::action for the server to carry out.
//
// Every command reads and writes the store through its public API, so the store's lazy
// expiry, statistics (keyspace_hits/misses as Redis counts them) and events apply unchanged.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__linux__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

#include "../expiring_store.hpp"
#include "../rdb.hpp"
#include "../version.hpp"
#include "glob.hpp"
#include "resp.hpp"
#include "value.hpp"

namespace expiring::redis {

// The store type the command layer drives: strings and hashes in one keyspace.
template <class Clock>
using ValueStore = Store<std::string, Value, Clock>;

// What the server must do after sending a command's reply.
enum class Action : std::uint8_t {
  none,      // nothing: the connection goes on
  close,     // QUIT: send the reply, then close the connection
  shutdown,  // SHUTDOWN: stop the server (no reply is sent)
};

struct Session;

namespace detail {
// Where a session's WATCHed keys and subscriptions are registered (an executor): told when the
// session goes.
struct WatchRegistry {
  void* owner;
  void (*forget)(void* owner, Session& s) noexcept;
};
}  // namespace detail

// Per-connection state a command can read or change. Not copyable: the executor keeps a
// pointer to a session that WATCHes keys or subscribes, until it stops or is destroyed.
struct Session {
  std::uint64_t id = 0;          // client id (HELLO reports it)
  Action action = Action::none;  // set by QUIT and SHUTDOWN
  // False until AUTH (or HELLO ... AUTH) succeeds, for a connection opened while requirepass
  // is set: CommandExecutor::open_session() sets it, as Redis does at connect. Such a session
  // may run only AUTH, HELLO and QUIT (-NOAUTH otherwise), and its server parses its requests
  // with ParserLimits::authenticated false.
  bool authenticated = true;

  std::size_t db = 0;  // the database SELECT chose
  int resp = 2;        // the protocol HELLO chose: 2 (RESP2) or 3 (RESP3)

  // MULTI ... EXEC (cmd_transactions.hpp): the queued commands and their bytes; whether one was
  // refused while queuing (EXEC answers EXECABORT) or a watched key changed (EXEC answers nil).
  bool in_multi = false;
  bool multi_dirty = false;
  bool watch_dirty = false;
  bool queued_denyoom = false;  // a queued command may grow memory
  bool queued_write = false;    // a queued command writes
  std::vector<std::vector<std::string>> queued;
  std::size_t queued_bytes = 0;
  // A key WATCH registered, and the database it is in (the session's at the WATCH); EXEC
  // answers nil, and runs nothing, when it changed since.
  struct Watched {
    std::size_t db;   // the database the key is in
    std::string key;  // the key, as WATCH named it
    bool stale;  // stored but past its deadline when watched (Redis's watchedKey.expired)
  };
  // The keys the session WATCHes, in WATCH order (UNWATCH, EXEC and DISCARD clear them).
  std::vector<Watched> watched;
  // Publish/subscribe (cmd_pubsub.hpp): the channels and patterns subscribed to, and where
  // messages go (the server's output buffer of the connection; none: not delivered).
  std::vector<std::string> channels, patterns;
  OutputBuffer* push = nullptr;

  void* owner = nullptr;  // the server's, for its push hook
  // CLIENT SETNAME; CLIENT REPLY OFF, and SKIP (the next command's reply).
  std::string name;
  bool reply_off = false;
  bool reply_skip = false;

  const detail::WatchRegistry* registry = nullptr;  // set while watching or subscribed
  // Whether a channel or a pattern is subscribed to: in RESP2, subscribed mode, where only the
  // (un)subscribe commands, PING, QUIT and RESET run.
  bool subscribed() const noexcept { return !channels.empty() || !patterns.empty(); }

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (registry != nullptr) registry->forget(registry->owner, *this);
  }
};

// One class of client-output-buffer-limit: a client whose output buffer reaches `hard`
// bytes, or stays at `soft` bytes or more for longer than `soft_seconds`, is disconnected.
// 0 bytes = no such limit.
struct OutputBufferLimit {
  std::uint64_t hard = 0;         // bytes: reached, the client is disconnected at once
  std::uint64_t soft = 0;         // bytes: held for longer than soft_seconds, likewise
  std::int64_t soft_seconds = 0;  // seconds the output may stay at `soft` bytes or more
};

// Settings the command layer reports and CONFIG SET changes; a server reads them (options())
// when it enforces its client limits.
struct CommandOptions {
  // Redis proto-max-bulk-len: the largest bulk argument a request may carry, and the largest
  // string APPEND builds.
  std::size_t proto_max_bulk_len = std::size_t{512} * 1024 * 1024;
  // Redis client-query-buffer-limit: a client's unparsed input plus its pending command.
  std::size_t client_query_buffer_limit = std::size_t{1024} * 1024 * 1024;
  // Redis client-output-buffer-limit for the classes normal, replica, pubsub (in the order
  // CONFIG GET prints them), Redis's defaults: normal clients have no limit.
  OutputBufferLimit client_output_buffer_limit[3] = {
      {0, 0, 0},
      {256ull * 1024 * 1024, 64ull * 1024 * 1024, 60},
      {32ull * 1024 * 1024, 8ull * 1024 * 1024, 60},
  };
  // The Redis version reported by INFO and HELLO (clients use it for feature detection).
  std::string redis_version = "7.0.15";
  // Redis requirepass: the default user's password; empty = none (every connection is
  // authenticated from the start). CONFIG SET changes it for connections opened afterwards.
  std::string requirepass;
  // Redis repl-timeout (seconds): a replica gives up a sync or a link that brings no data for
  // this long, and connects again.
  std::int64_t repl_timeout = 60;
  // Redis repl-ping-replica-period (seconds): a primary sends PING to its replicas this often,
  // so that a quiet link is not taken for a dead one.
  std::int64_t repl_ping_replica_period = 10;
  // Redis repl-backlog-size (bytes): how much of its stream a primary keeps for a replica that
  // reconnects and asks to continue (PSYNC answered +CONTINUE).
  std::size_t repl_backlog_size = 1024 * 1024;
  // Redis min-replicas-to-write / min-replicas-max-lag (seconds): with N > 0, a primary refuses
  // writes (-NOREPLICAS) unless N replicas acknowledged within the lag; the server that has
  // replicas says so through set_write_gate().
  std::int64_t min_replicas_to_write = 0;
  std::int64_t min_replicas_max_lag = 10;
  // Redis hash-max-listpack-entries / hash-max-listpack-value: the bounds within which Redis
  // keeps a hash in its compact encoding. Only OBJECT ENCODING reads them (semantics.md D38:
  // a hash here has one representation whatever its size).
  std::size_t hash_max_listpack_entries = 128;
  std::size_t hash_max_listpack_value = 64;
  // Redis sanitize-dump-payload (no, yes, clients): shown as set; RESTORE here checks every
  // payload whole before it changes anything, whatever it says (rdb.hpp restore()).
  std::string sanitize_dump_payload = "no";
  // Redis replica-serve-stale-data: false refuses most commands with -MASTERDOWN while the
  // server is a replica whose link to its primary is down (set_link_down_query()).
  bool replica_serve_stale_data = true;
};

namespace detail {

// The bytes up to the first NUL: how Redis sees an argument it compares with strcasecmp()
// or prints with %s.
inline std::string_view cstr(std::string_view s) noexcept {
  const std::size_t z = s.find('\0');
  return z == std::string_view::npos ? s : s.substr(0, z);
}
inline char ascii_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
inline char ascii_upper(char c) noexcept { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}
// An option token as Redis tests it: case-insensitive, the argument read as a C string.
inline bool is_opt(std::string_view arg, std::string_view token) noexcept { return iequals(cstr(arg), token); }
inline std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

// INFO cpu: the process's (or the calling thread's) CPU time, getrusage()'s; zeros where
// there is none.
struct CpuTimes {
  std::int64_t user_us = 0, sys_us = 0;
};
inline CpuTimes cpu_times(bool thread) {
  CpuTimes t;
#if defined(__linux__) || defined(__APPLE__)
  rusage u{};
#if defined(RUSAGE_THREAD)
  const int who = thread ? RUSAGE_THREAD : RUSAGE_SELF;
#else
  const int who = RUSAGE_SELF;
  (void)thread;
#endif
  if (::getrusage(who, &u) == 0) {
    t.user_us = static_cast<std::int64_t>(u.ru_utime.tv_sec) * 1000000 + u.ru_utime.tv_usec;
    t.sys_us = static_cast<std::int64_t>(u.ru_stime.tv_sec) * 1000000 + u.ru_stime.tv_usec;
  }
#else
  (void)thread;
#endif
  return t;
}

// DEBUG DIGEST and DIGEST-VALUE: 20 bytes, printed as Redis prints its SHA1 digests (40 hex
// digits). Built from XXH3 (128 + 32 bits), not SHA1: equal data gives equal digests, here and
// on another expiring-server, which is what the digests are compared for.
struct Digest {
  unsigned char b[20] = {};
  Digest& operator^=(const Digest& o) noexcept {
    for (int i = 0; i < 20; ++i) b[i] ^= o.b[i];
    return *this;
  }
};
inline Digest digest_of(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  const std::uint64_t t = XXH3_64bits_withSeed(bytes.data(), bytes.size(), 0x5EED);
  Digest d;
  for (int i = 0; i < 8; ++i) {
    d.b[i] = static_cast<unsigned char>(h.low64 >> (8 * i));
    d.b[8 + i] = static_cast<unsigned char>(h.high64 >> (8 * i));
  }
  for (int i = 0; i < 4; ++i) d.b[16 + i] = static_cast<unsigned char>(t >> (8 * i));
  return d;
}
inline void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
// A value's digest: a string's bytes; a hash's fields with their deadlines in no order.
inline Digest value_digest(const Value& v) {
  if (const std::string* s = v.string()) return digest_of("s" + *s);
  Digest fields;
  const Hash& h = *v.hash();
  for (std::uint32_t pos = 0; pos < h.size(); ++pos) {
    std::string bytes;
    put_u64(bytes, h.at(pos).name.size());
    bytes += h.at(pos).name;
    bytes += h.at(pos).value;
    put_u64(bytes, static_cast<std::uint64_t>(h.deadline(pos)));
    fields ^= digest_of(bytes);
  }
  return digest_of("h" + std::string(reinterpret_cast<const char*>(fields.b), sizeof fields.b));
}
inline std::string hex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : d.b) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}
inline std::string uppercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

// Redis's addReplyErrorFormat(): CR/LF at either end are trimmed, inner ones become spaces.
inline Reply error_format(std::string msg) {
  std::size_t b = 0, e = msg.size();
  while (b < e && (msg[b] == '\r' || msg[b] == '\n')) ++b;
  while (e > b && (msg[e - 1] == '\r' || msg[e - 1] == '\n')) --e;
  msg = msg.substr(b, e - b);
  for (char& c : msg) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  if (!msg.empty() && msg[0] == '-') return Reply::error(msg.substr(1));
  return Reply::error("ERR " + msg);
}

// strtoul(s, &end, 10) as SCAN parses its cursor: leading blank refused, optional sign
// ("-1" wraps around), digits, nothing after them but the end of the C string, no overflow.
// The empty string is cursor 0.
inline bool parse_scan_cursor(std::string_view arg, std::uint64_t& out) noexcept {
  const std::string_view s = cstr(arg);
  out = 0;
  if (s.empty()) return true;
  const char f = s[0];
  if (f == ' ' || f == '\t' || f == '\n' || f == '\v' || f == '\f' || f == '\r') return false;
  std::size_t i = 0;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    ++i;
  }
  if (i == s.size() || s[i] < '0' || s[i] > '9') return false;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const auto d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;  // ERANGE
    v = v * 10 + d;
  }
  out = negative ? 0 - v : v;
  return true;
}

// Redis's bytesToHuman() for used_memory_human and maxmemory_human.
inline std::string bytes_to_human(std::uint64_t n) {
  char buf[64];
  const double d = static_cast<double>(n);
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(n));
  } else if (n < 1024ull * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fK", d / 1024);
  } else if (n < 1024ull * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fM", d / (1024.0 * 1024));
  } else if (n < 1024ull * 1024 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fG", d / (1024.0 * 1024 * 1024));
  } else if (n < 1024ull * 1024 * 1024 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fT", d / (1024.0 * 1024 * 1024 * 1024));
  } else if (n < 1024ull * 1024 * 1024 * 1024 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fP", d / (1024.0 * 1024 * 1024 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(n));
  }
  return buf;
}

// Redis's memtoull() for memory settings (maxmemory): the argument as a C string, decimal
// digits (none means 0) and an optional unit b, k, kb, m, mb, g, gb (case-insensitive;
// k = 1000, kb = 1024, ...). A sign, blanks or any other suffix is an error, as are 128 or
// more digits (Redis's buffer). Unlike Redis, a value that overflows 64 bits (the digits or
// the digits times the unit) is an error: Redis silently clamps or wraps it.
inline bool parse_memory(std::string_view arg, std::uint64_t& out) noexcept {
  const std::string_view s = cstr(arg);
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  const std::string_view unit = s.substr(n);
  std::uint64_t mul = 0;
  if (unit.empty() || iequals(unit, "b")) {
    mul = 1;
  } else if (iequals(unit, "k")) {
    mul = 1000;
  } else if (iequals(unit, "kb")) {
    mul = 1024;
  } else if (iequals(unit, "m")) {
    mul = 1000 * 1000;
  } else if (iequals(unit, "mb")) {
    mul = 1024 * 1024;
  } else if (iequals(unit, "g")) {
    mul = 1000ull * 1000 * 1000;
  } else if (iequals(unit, "gb")) {
    mul = 1024ull * 1024 * 1024;
  } else {
    return false;
  }
  if (n >= 128) return false;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (kMax - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v > kMax / mul) return false;
  out = v * mul;
  return true;
}

// An unsigned 64-bit value printed as C's "%lld" of the same bits (INFO's maxmemory line).
inline std::string as_signed_decimal(std::uint64_t v) {
  constexpr std::uint64_t kMaxSigned = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (v <= kMaxSigned) return std::to_string(v);
  return "-" + std::to_string(0 - v);  // two's complement magnitude
}

// The values of maxmemory-policy, in the order Redis's error message lists them.
inline constexpr EvictionPolicy kPolicies[] = {
    EvictionPolicy::volatile_lru,   EvictionPolicy::volatile_lfu, EvictionPolicy::volatile_random,
    EvictionPolicy::volatile_ttl,   EvictionPolicy::allkeys_lru,  EvictionPolicy::allkeys_lfu,
    EvictionPolicy::allkeys_random, EvictionPolicy::noeviction,
};

}  // namespace detail

// Redis's command layer over one or more ValueStore<Clock> databases: execute() or
// execute_into() runs one command for a Session (a connection's state) and answers as Redis
// 7.0 does (the file's comment lists the commands). A server adds what needs files, processes
// or sockets with add_command() and the hooks below. One thread at a time; not copyable.
template <class Clock>
class CommandExecutor {
 public:
  // The store of one database, and a command: its arguments, binary-safe, the name first.
  using store_type = ValueStore<Clock>;
  using Args = std::vector<std::string>;

  // Adds "name:value" lines to an INFO section (server, clients, memory, stats, keyspace),
  // after its header and before the executor's own lines. A server reports its connection
  // figures this way.
  using InfoHook = std::function<void(std::string_view section, std::string& out)>;

  // One database: SELECT 0 only.
  explicit CommandExecutor(store_type& store, CommandOptions options = {})
      : CommandExecutor(std::vector<store_type*>{&store}, std::move(options)) {}
  // Several databases, Redis's SELECT numbers: dbs[n] is database n (distinct stores, none
  // null, at least one). SWAPDB swaps two entries of this vector (databases()).
  explicit CommandExecutor(std::vector<store_type*> dbs, CommandOptions options = {})
      : dbs_(std::move(dbs)), store_(dbs_.at(0)), options_(std::move(options)) {
    for (std::size_t i = 0; i < table().size(); ++i) {
      index_.emplace(table()[i].name, i);
      denyoom_.push_back(has_flag(table()[i].flags, "denyoom"));
      write_.push_back(has_flag(table()[i].flags, "write"));
    }
    cmd_stats_.resize(table().size());
    start_ms_ = store_->now_ms();
  }

  ~CommandExecutor() {
    for (auto& entry : watchers_) {
      for (Session* s : entry.second) s->registry = nullptr;
    }
    for (auto* m : {&channels_, &patterns_}) {
      for (auto& entry : *m) {
        for (Session* s : entry.second) s->registry = nullptr;
      }
    }
    for (store_type* d : dbs_) {
      if (listening_) d->set_listener({});
    }
  }
  CommandExecutor(const CommandExecutor&) = delete;
  CommandExecutor& operator=(const CommandExecutor&) = delete;

  // Called around the commands EXEC runs (true before the first, false after the last), for a
  // server that propagates a transaction as one unit (MULTI ... EXEC in its stream).
  using TransactionHook = std::function<void(bool begin)>;
  // Installs the hook; without one (the default) EXEC calls nothing around its commands.
  void set_transaction_hook(TransactionHook hook) { transaction_hook_ = std::move(hook); }
  // Called after a message was appended to a session's push buffer (Session::push) by another
  // session's PUBLISH or by a keyspace notification (cmd_pubsub.hpp): the server sends it.
  using PushHook = std::function<void(Session& to)>;
  // Installs the hook; without one (the default) messages still land in Session::push, and the
  // server finds them there when it next looks.
  void set_push_hook(PushHook hook) { push_hook_ = std::move(hook); }
  // Asked, while min-replicas-to-write is above 0, before a write command runs (and before
  // EXEC of a queue with one): an error text refuses it, as Redis refuses writes with
  // -NOREPLICAS.
  using WriteGate = std::function<std::optional<std::string>()>;
  // Installs the gate; without one (the default) min-replicas-to-write refuses nothing.
  void set_write_gate(WriteGate gate) { write_gate_ = std::move(gate); }
  // Asked, while replica-serve-stale-data is no, before a command Redis refuses on a replica
  // whose link to its primary is down: true refuses it with -MASTERDOWN.
  using LinkDownQuery = std::function<bool()>;
  // Installs the query; without one (the default) replica-serve-stale-data no refuses nothing.
  void set_link_down_query(LinkDownQuery q) { link_down_ = std::move(q); }
  // Called after PUBLISH delivered a message (with the publisher's database), for a server that
  // propagates PUBLISH to its replicas, as Redis does.
  using PublishHook = std::function<void(const std::string& channel, const std::string& message, std::size_t db)>;
  // Installs the hook; without one (the default) a message reaches this executor's sessions only.
  void set_publish_hook(PublishHook hook) { publish_hook_ = std::move(hook); }
  // Publishes as PUBLISH does (a server's own messages); how many sessions received it.
  std::size_t publish(const std::string& channel, const std::string& message);

  // A command the executor does not implement itself, added by a server (SAVE, BGSAVE,
  // REPLICAOF, ...: what needs files, processes or sockets). It takes precedence over a
  // built-in command of the same name; run_builtin() reaches the built-in one.
  using ServerCommand = std::function<Reply(const Args&, Session&)>;
  // Adds the command `name` (case-insensitive; adding it again replaces it). `arity` is
  // Redis's: n, exactly n arguments with the name; -n, at least n. `flags` are Redis's,
  // space-separated; two are read, as for a built-in command: `write` (is_write(), refused
  // by min-replicas-to-write) and `denyoom` (refused over maxmemory).
  void add_command(std::string name, int arity, std::string flags, ServerCommand handler) {
    name = detail::lowercase(name);
    server_commands_[name] = ServerSpec{arity, has_flag(flags, "write"), has_flag(flags, "denyoom"), std::move(handler)};
  }
  // Runs the built-in command of argv[0], past any server command of that name.
  Reply run_builtin(const Args& argv, Session& session) {
    select(session);
    return run_selected(argv, session);
  }
  // Whether argv[0] names a command flagged `write` (a replica refuses those from clients).
  bool is_write(const Args& argv) const {
    if (argv.empty()) return false;
    const std::string name = detail::lowercase(argv[0]);
    if (auto s = server_commands_.find(name); s != server_commands_.end()) return s->second.write;
    auto it = index_.find(name);
    return it != index_.end() && has_flag(table()[it->second].flags, "write");
  }

  // Prepares the session of a new connection: with requirepass set it starts
  // unauthenticated (Redis decides this at connect, so a CONFIG SET requirepass does not
  // lock out the connections already open).
  void open_session(Session& session) const noexcept { session.authenticated = options_.requirepass.empty(); }

  // Runs one command and returns its reply. `argv` must not be empty (the parser never
  // yields an empty command).
  Reply execute(const Args& argv, Session& session) {
    Reply r = dispatch(argv, session);
    if (r.is_error()) note_error(r.str());
    return r;
  }
  // Runs one command and appends its reply's RESP encoding to `out`, the client's output
  // buffer: what a server calls. The commands whose replies carry stored values (GET, MGET)
  // write them straight from the store into `out`, so a large reply is never held twice.
  void execute_into(const Args& argv, Session& session, OutputBuffer& into) {
    const std::size_t before = into.size();
    dispatch_into(argv, session, into);
    if (into.size() > before && into.byte_at(before) == '-') note_error(into.text_at(before + 1, 64));
  }

 private:
  Reply dispatch(const Args& argv, Session& session) {
    select(session);
    if (!session.authenticated) {
      if (std::optional<Reply> refused = check_auth(argv)) return std::move(*refused);
    }
    if (session.subscribed() && session.resp == 2) {  // (RESP3 has no subscribed mode)
      if (std::optional<Reply> refused = subscribed_mode(argv, session)) return std::move(*refused);
    }
    if (session.in_multi) {
      if (std::optional<Reply> queued = queue_in_multi(argv, session)) return std::move(*queued);
    }
    if (notify_flags_ != 0) command_ = detail::lowercase(argv[0]);
    const CommandName running{command_};  // (cleared after it: later events are not its)
    if (!server_commands_.empty()) {
      if (std::optional<Reply> r = run_server_command(argv, session)) return std::move(*r);
    }
    return run_selected(argv, session);
  }
  void dispatch_into(const Args& argv, Session& session, OutputBuffer& into) {
    // CLIENT REPLY OFF or SKIP: the reply is written and dropped.
    const bool reply_command = argv.size() == 3 && detail::is_opt(argv[0], "client") && detail::is_opt(argv[1], "reply");
    bool silent = (session.reply_off || session.reply_skip) && !in_exec_;
    if (!in_exec_) session.reply_skip = false;
    if (reply_command) silent = !detail::is_opt(argv[2], "on");
    // (Subscribing is answered as messages are: Redis's CLIENT_PUSHING bypasses REPLY OFF.)
    if (silent && (detail::is_opt(argv[0], "subscribe") || detail::is_opt(argv[0], "psubscribe") ||
                   detail::is_opt(argv[0], "unsubscribe") || detail::is_opt(argv[0], "punsubscribe"))) {
      silent = false;
    }
    if (silent) discard_.clear();
    OutputBuffer& out = silent ? discard_ : into;
    select(session);
    if (!session.authenticated) {
      if (std::optional<Reply> refused = check_auth(argv)) {
        refused->write_resp(out, session.resp);
        return;
      }
    }
    if (session.subscribed() && session.resp == 2) {  // (RESP3 has no subscribed mode)
      if (std::optional<Reply> refused = subscribed_mode(argv, session)) {
        refused->write_resp(out, session.resp);
        return;
      }
    }
    if (session.in_multi) {
      if (std::optional<Reply> queued = queue_in_multi(argv, session)) {
        queued->write_resp(out, session.resp);
        return;
      }
    }
    if (notify_flags_ != 0) command_ = detail::lowercase(argv[0]);
    const CommandName running{command_};  // (cleared after it: later events are not its)
    if (!server_commands_.empty()) {
      if (std::optional<Reply> r = run_server_command(argv, session)) {
        r->write_resp(out, session.resp);
        return;
      }
    }
    Reply early;
    const Spec* spec = prepare(argv, early);
    if (spec == nullptr) {
      early.write_resp(out, session.resp);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::size_t mark = out.size();
    if (spec->handler != nullptr) {
      (this->*spec->handler)(argv, session).write_resp(out, session.resp);
    } else {
      (this->*spec->writer)(argv, session, out);
    }
    count_call(cmd_stats_[static_cast<std::size_t>(spec - table().data())], start,
               out.size() > mark && out.byte_at(mark) == '-');
  }

 public:
  // Runs one command in a Session of its own, made for it and dropped after it (database 0,
  // RESP2, authenticated): for a command that needs no connection (tests, an embedding
  // program). The list form takes the arguments as `{"SET", "k", "v"}`.
  Reply execute(const Args& argv) {
    Session s;
    return execute(argv, s);
  }
  Reply execute(std::initializer_list<std::string_view> argv) {
    Args a;
    a.reserve(argv.size());
    for (std::string_view s : argv) a.emplace_back(s);
    return execute(a);
  }

  // The database the last command ran in (database 0 before any).
  store_type& store() noexcept { return *store_; }
  // Database `n`: the store a session that SELECTed n uses.
  store_type& store(std::size_t n) noexcept { return *dbs_[n]; }
  // How many databases there are (Redis's `databases`): SELECT takes 0 to databases() - 1.
  std::size_t databases() const noexcept { return dbs_.size(); }
  // The databases: entry n is database n's store. SWAPDB swaps two entries; a replica's link
  // (ReplicaLink over this vector) swaps them too when its primary's stream has a SWAPDB.
  std::vector<store_type*>& stores() noexcept { return dbs_; }
  // The memory the server's clients hold (Redis counts them in used_memory): every store's
  // external memory (memory_check() counts it once).
  void set_external_memory(std::size_t bytes) noexcept {
    if (bytes == external_) return;  // (called before every command)
    external_ = bytes;
    for (store_type* d : dbs_) d->set_external_memory(bytes);
  }
  // Used memory over every database and the external memory: the figure maxmemory limits.
  std::size_t used_memory() const {
    if (dbs_.size() == 1) return dbs_[0]->used_memory();  // (its external memory may be set on it directly)
    std::size_t used = external_;
    for (const store_type* d : dbs_) used += d->used_memory() - d->external_memory();
    return used;
  }
  // The statistics of every database, summed (INFO stats).
  Stats stats() const;
  // The settings as CONFIG SET left them; a server reads its client limits here.
  const CommandOptions& options() const noexcept { return options_; }
  // Installs the INFO hook; without one (the default) INFO leaves out the sections only a
  // server has (clients, persistence, replication).
  void set_info_hook(InfoHook hook) { info_hook_ = std::move(hook); }
  // A read-only setting CONFIG GET reports (e.g. "port", "maxclients"; "appendonly" replaces
  // the default "no").
  void add_config(std::string name, std::string value) { extra_configs_.emplace_back(std::move(name), std::move(value)); }
  // A setting the embedding server owns and CONFIG SET changes (e.g. "appendonly"): CONFIG GET
  // shows get(); CONFIG SET calls set(value) once the command's other values are checked and
  // before any is applied, and set() answers "" or why it refused (then it changed nothing,
  // and neither does the command; a setting of the same command set before it stays set).
  void add_config(std::string name, std::function<std::string()> get, std::function<std::string(const std::string&)> set) {
    server_configs_.push_back({std::move(name), std::move(get), std::move(set)});
  }
  // Commands this executor knows (COMMAND COUNT).
  std::size_t command_count() const noexcept { return table().size(); }
  // Commands run so far (INFO's total_commands_processed); one refused before it ran (an
  // unknown name, a wrong argument count, OOM, ...) is not counted.
  std::uint64_t commands_processed() const noexcept { return commands_processed_; }

 private:
  // INFO commandstats: a command's calls, their time, and those refused or failed.
  struct CommandStat {
    std::uint64_t calls = 0, usec = 0, rejected = 0, failed = 0;
  };
  struct ServerSpec {
    int arity;
    bool write, denyoom;  // the two flags add_command() reads
    ServerCommand handler;
    CommandStat stat{};
  };
  // Redis processCommand()'s order for a connection that has not authenticated: an unknown
  // command and a wrong argument count are reported as such, then anything but AUTH, HELLO
  // and QUIT is refused with -NOAUTH. nullopt: the command may run.
  std::optional<Reply> check_auth(const Args& argv) const {
    if (argv.empty()) return std::nullopt;
    const std::string name = detail::lowercase(argv[0]);
    int arity = 0;
    if (auto s = server_commands_.find(name); s != server_commands_.end()) {
      arity = s->second.arity;
    } else if (auto it = index_.find(name); it != index_.end()) {
      arity = table()[it->second].arity;
    } else {
      return unknown_command(argv);
    }
    if (!arity_ok(arity, argv.size())) return arity_error(name);
    if (name == "auth" || name == "hello" || name == "quit") return std::nullopt;
    return Reply::error("NOAUTH Authentication required.");
  }

  // run_builtin() in the database already selected.
  Reply run_selected(const Args& argv, Session& session) {
    Reply early;
    const Spec* spec = prepare(argv, early);
    if (spec == nullptr) return early;
    const auto start = std::chrono::steady_clock::now();
    Reply r;
    if (spec->handler != nullptr) {
      r = (this->*spec->handler)(argv, session);
    } else {  // a streaming command: its encoding, decoded (tests compare Reply values)
      OutputBuffer out;
      (this->*spec->writer)(argv, session, out);
      const std::string bytes = out.str();
      std::size_t pos = 0;
      (void)Reply::from_resp(bytes, pos, r);
    }
    count_call(cmd_stats_[static_cast<std::size_t>(spec - table().data())], start, r.is_error());
    return r;
  }

  // replica-serve-stale-data no, on a replica whose link is down: the commands Redis 7.0
  // does not flag `stale` are refused.
  bool refused_as_stale(std::string_view name) const {
    if (options_.replica_serve_stale_data || !link_down_) return false;
    static constexpr std::string_view kStale[] = {
        "acl",     "auth",     "client",    "cluster",   "command",     "config",    "debug",     "discard",
        "echo",    "exec",     "failover",  "hello",     "info",        "lastsave",  "latency",   "monitor",
        "multi",   "psubscribe", "publish", "pubsub",    "punsubscribe", "quit",     "replconf",  "replicaof",
        "reset",   "role",     "select",    "shutdown",  "slaveof",     "spublish",  "ssubscribe", "subscribe",
        "sunsubscribe", "time", "unsubscribe", "unwatch", "watch"};
    const std::string lower = detail::lowercase(name);
    for (std::string_view s : kStale) {
      if (s == lower) return false;
    }
    return link_down_();
  }
  static Reply masterdown_error() {
    return Reply::error("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.");
  }

  // ---- INFO commandstats and errorstats ----
  static void count_call(CommandStat& st, std::chrono::steady_clock::time_point start, bool failed) {
    ++st.calls;
    st.usec += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    if (failed) ++st.failed;
  }
  // An error reply, by its first word (Redis's afterErrorReply(): "ERR" when the text has no
  // space in its first 32 bytes); at most 128 kinds are kept, as Redis keeps.
  void note_error(std::string_view text) {
    ++total_error_replies_;
    const std::size_t space = text.substr(0, 32).find(' ');
    const std::string kind(space == std::string_view::npos ? std::string_view("ERR") : text.substr(0, space));
    auto it = error_stats_.find(kind);
    if (it != error_stats_.end()) {
      ++it->second;
    } else if (error_stats_.size() < 128) {
      error_stats_.emplace(kind, 1);
    }
  }

  std::optional<Reply> run_server_command(const Args& argv, Session& session) {
    if (argv.empty()) return std::nullopt;
    auto it = server_commands_.find(detail::lowercase(argv[0]));
    if (it == server_commands_.end()) return std::nullopt;
    if (!arity_ok(it->second.arity, argv.size())) {
      ++it->second.stat.rejected;
      return arity_error(it->first);
    }
    if (!in_exec_ && refused_as_stale(it->first)) {
      ++it->second.stat.rejected;
      return masterdown_error();
    }
    if (std::optional<Reply> refused = admit(it->second.denyoom, it->second.write)) {
      ++it->second.stat.rejected;
      return std::move(*refused);
    }
    ++commands_processed_;
    const auto start = std::chrono::steady_clock::now();
    Reply r = it->second.handler(argv, session);
    count_call(it->second.stat, start, r.is_error());
    return r;
  }

  using Handler = Reply (CommandExecutor::*)(const Args&, Session&);
  using Writer = void (CommandExecutor::*)(const Args&, Session&, OutputBuffer&);
  struct Spec {
    const char* name;
    int arity;  // Redis convention: n = exactly n arguments, -n = at least n
    Handler handler;    // builds the reply; nullptr for a streaming command
    const char* flags;  // space separated, for COMMAND
    int first_key, last_key, step;
    Writer writer = nullptr;  // a streaming command: writes its reply's encoding
  };

  // Everything before a command's handler runs: lookup, arity, and Redis processCommand()'s
  // memory check (with a limit set, evict before every command; a `denyoom` command is
  // refused, and not run, when that cannot bring used memory within the limit). Returns the
  // command to run, or nullptr with the reply in `early`.
  const Spec* prepare(const Args& argv, Reply& early) {
    if (argv.empty()) {
      early = Reply::error("ERR empty command");
      return nullptr;
    }
    auto it = index_.find(detail::lowercase(argv[0]));
    if (it == index_.end()) {
      early = unknown_command(argv);
      return nullptr;
    }
    const Spec& spec = table()[it->second];
    if (!arity_ok(spec.arity, argv.size())) {
      early = arity_error(spec.name);
      ++cmd_stats_[it->second].rejected;
      return nullptr;
    }
    if (!in_exec_ && refused_as_stale(spec.name)) {
      early = masterdown_error();
      ++cmd_stats_[it->second].rejected;
      return nullptr;
    }
    if (std::optional<Reply> refused = admit(denyoom_[it->second], write_[it->second])) {
      early = std::move(*refused);
      ++cmd_stats_[it->second].rejected;
      return nullptr;
    }
    ++commands_processed_;
    if ((notify_flags_ & kNotifyNew) != 0) note_absent_keys(spec, argv);
    return &spec;
  }

  // Redis processCommand()'s checks of a command about to run, built-in or a server's, outside
  // EXEC (which checked its commands as a whole): with a memory limit, evict first, then refuse
  // a `denyoom` command if used memory is still over it; with min-replicas-to-write, ask the
  // write gate about a `write` command. The refusal, or nullopt.
  std::optional<Reply> admit(bool denyoom, bool write) {
    if (in_exec_) return std::nullopt;
    if (store_->options().maxmemory != 0 && !memory_check() && denyoom) return oom_error();
    if (write && options_.min_replicas_to_write > 0 && write_gate_) {
      if (std::optional<std::string> refused = write_gate_()) return Reply::error(std::move(*refused));
    }
    return std::nullopt;
  }

  // The session's database becomes the one commands run in.
  void select(const Session& session) noexcept {
    store_ = dbs_[session.db < dbs_.size() ? session.db : 0];
  }
  // Redis's performEvictions() with several databases under one maxmemory: before a command,
  // while the memory of all of them (and the clients') is above the limit, the database that
  // holds the most evicts, as if the others' memory were its own external memory, then the
  // next. Between these checks each store sees only its own memory and the clients', so a
  // command's writes evict from nowhere else, as Redis evicts only before a command. False if
  // used memory stays above the limit.
  bool memory_check() {
    if (dbs_.size() == 1) return store_->perform_evictions().ok();
    const std::size_t limit = store_->options().maxmemory;
    std::size_t total = used_memory();
    if (total <= limit) return true;
    std::vector<store_type*> order(dbs_);
    const auto own = [](const store_type* d) { return d->used_memory() - d->external_memory(); };
    std::sort(order.begin(), order.end(), [&](const store_type* x, const store_type* y) { return own(x) > own(y); });
    for (store_type* d : order) {
      d->set_external_memory(total - own(d));
      (void)d->perform_evictions();
      d->set_external_memory(external_);
      total = used_memory();
      if (total <= limit) return true;
    }
    return false;
  }

  static bool arity_ok(int arity, std::size_t argc) noexcept {
    return arity >= 0 ? argc == static_cast<std::size_t>(arity) : argc >= static_cast<std::size_t>(-arity);
  }
  static Reply arity_error(std::string_view fullname) {
    return Reply::error("ERR wrong number of arguments for '" + std::string(fullname) + "' command");
  }
  static Reply syntax_error() { return Reply::error("ERR syntax error"); }
  static Reply oom_error() { return Reply::error("OOM command not allowed when used memory > 'maxmemory'."); }
  // A store write's error as the command's reply: OOM for a refused write, else the
  // command's "invalid expire time" error.
  static Reply write_error(Errc e, const char* cmd) {
    return e == Errc::out_of_memory ? oom_error() : invalid_expire(cmd);
  }
  static bool has_flag(std::string_view flags, std::string_view flag) noexcept {
    while (!flags.empty()) {
      const std::size_t sp = flags.find(' ');
      if (flags.substr(0, sp) == flag) return true;
      if (sp == std::string_view::npos) break;
      flags.remove_prefix(sp + 1);
    }
    return false;
  }
  static Reply not_integer() { return Reply::error("ERR value is not an integer or out of range"); }
  static Reply invalid_expire(const char* cmd) {
    return Reply::error(std::string("ERR invalid expire time in '") + cmd + "' command");
  }
  static Reply ok() { return Reply::ok(); }
  static Reply bulk_or_nil(const std::string* v) { return v ? Reply::bulk(*v) : Reply::nil(); }
  static Reply bulk_or_nil(const std::optional<std::string>& v) { return v ? Reply::bulk(*v) : Reply::nil(); }
  static Reply bulk_or_nil(const std::optional<Value>& v) { return v ? bulk_or_nil(v->string()) : Reply::nil(); }
  static Reply wrong_type() {
    return Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value");
  }
  // Whether `key` holds a live value of the other type than a command expects: checked before
  // anything else, as Redis's checkType. `read`: the command's lookup is a read (Redis
  // lookupKeyRead), so it counts a keyspace hit; the store's own call would not run.
  bool holds_hash(const std::string& key, bool read) {
    const Value* v = store_->peek(key);
    if (v == nullptr || !v->is_hash()) return false;
    if (read) (void)store_->exists(key);
    return true;
  }
  bool holds_string(const std::string& key, bool read) {
    const Value* v = store_->peek(key);
    if (v == nullptr || !v->is_string()) return false;
    if (read) (void)store_->exists(key);
    return true;
  }

  // "unknown command '<name>', with args beginning with: '<a1>' '<a2>' ..." as redis 7.0:
  // the name and each argument are read as C strings, the name cut at 128 bytes, the
  // arguments quoted until the list reaches 128 bytes.
  static Reply unknown_command(const Args& argv) {
    std::string args;
    for (std::size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
      const std::string_view a = detail::cstr(argv[i]);
      const std::size_t room = 128 - args.size();
      args += '\'';
      args.append(a.substr(0, room));
      args += "' ";
    }
    std::string msg = "ERR unknown command '" + std::string(detail::cstr(argv[0]).substr(0, 128)) +
                      "', with args beginning with: " + args;
    for (char& c : msg) {
      if (c == '\r' || c == '\n') c = ' ';
    }
    return Reply::error(std::move(msg));
  }
  static Reply unknown_subcommand(const Args& argv) {
    return Reply::error("ERR unknown subcommand '" + std::string(detail::cstr(argv[1]).substr(0, 128)) + "'. Try " +
                        detail::uppercase(detail::cstr(argv[0])) + " HELP.");
  }

  // §2.0: the argument as an int64, or false.
  static bool to_int(const std::string& s, std::int64_t& v) { return parse_int64(s, v); }

  // ==== Connection and server (cmd_server.hpp) =================================

  Reply cmd_ping(const Args& a, Session&);
  Reply cmd_echo(const Args& a, Session&);
  Reply cmd_quit(const Args&, Session& s);
  Reply cmd_shutdown(const Args& a, Session& s);
  Reply cmd_auth(const Args& a, Session& s);
  bool password_ok(const std::string& user, const std::string& password) const;
  static Reply wrongpass();
  Reply cmd_hello(const Args& a, Session& s);
  Reply cmd_select(const Args& a, Session&);
  Reply cmd_swapdb(const Args& a, Session&);
  // ==== Transactions (cmd_transactions.hpp) ====
  Reply cmd_multi(const Args& a, Session& s);
  Reply cmd_discard(const Args& a, Session& s);
  void write_exec(const Args& a, Session& s, OutputBuffer& out);
  Reply cmd_watch(const Args& a, Session& s);
  Reply cmd_unwatch(const Args& a, Session& s);
  // ==== Publish/subscribe, CLIENT (cmd_pubsub.hpp) ====
  void write_subscribe(const Args& a, Session& s, OutputBuffer& out);
  void write_unsubscribe(const Args& a, Session& s, OutputBuffer& out);
  Reply cmd_publish(const Args& a, Session&);
  Reply cmd_pubsub(const Args& a, Session&);
  Reply cmd_client(const Args& a, Session& s);
  Reply cmd_time(const Args&, Session&);
  Reply cmd_dbsize(const Args&, Session&);
  Reply cmd_flush(const Args& a, Session&);
  Reply cmd_debug(const Args& a, Session&);
  static long long atoi_like(std::string_view s);

  // ---- INFO ----
  Reply cmd_info(const Args& a, Session&);
  void info_section(std::string_view section, std::string& out);

  // ---- CONFIG ----
  struct ConfigEntry {
    std::string name;
    std::string value;
  };
  std::vector<ConfigEntry> config_entries() const;
  Reply cmd_config_get(const Args& a, Session&);
  // The settings CONFIG SET changes, with the name its value errors quote.
  enum class Param : std::uint8_t {
    hz, effort, maxmemory, policy, samples, lfu_log_factor, lfu_decay_time,
    proto_max_bulk_len, query_buffer_limit, output_buffer_limit, requirepass, repl_timeout, repl_ping_period,
    repl_backlog_size, notify_keyspace_events, min_replicas_to_write, min_replicas_max_lag,
    hash_max_listpack_entries, hash_max_listpack_value, sanitize_dump_payload, replica_serve_stale_data,
  };
  struct ParamSpec {
    const char* name;
    Param param;
    std::int64_t lo, hi;  // integer settings: Redis's accepted range
  };
  static constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  static constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t kMinBufferLimit = 1024 * 1024;  // Redis: at least 1mb

  static std::string parse_output_limits(std::string_view value, OutputBufferLimit (&limits)[3]);
  static constexpr ParamSpec kParams[] = {
      {"hz", Param::hz, 0, kIntMax},
      {"active-expire-effort", Param::effort, 1, 10},
      {"maxmemory", Param::maxmemory, 0, 0},
      {"maxmemory-policy", Param::policy, 0, 0},
      {"maxmemory-samples", Param::samples, 1, kIntMax},
      {"lfu-log-factor", Param::lfu_log_factor, 0, kIntMax},
      {"lfu-decay-time", Param::lfu_decay_time, 0, kIntMax},
      {"proto-max-bulk-len", Param::proto_max_bulk_len, kMinBufferLimit, kInt64Max},
      {"client-query-buffer-limit", Param::query_buffer_limit, kMinBufferLimit, kInt64Max},
      {"client-output-buffer-limit", Param::output_buffer_limit, 0, 0},
      {"requirepass", Param::requirepass, 0, 0},
      {"notify-keyspace-events", Param::notify_keyspace_events, 0, 0},
      {"repl-timeout", Param::repl_timeout, 1, kIntMax},
      {"repl-ping-replica-period", Param::repl_ping_period, 1, kIntMax},
      {"repl-ping-slave-period", Param::repl_ping_period, 1, kIntMax},
      {"repl-backlog-size", Param::repl_backlog_size, 1, kInt64Max},
      {"min-replicas-to-write", Param::min_replicas_to_write, 0, kIntMax},
      {"min-replicas-max-lag", Param::min_replicas_max_lag, 0, kIntMax},
      {"hash-max-listpack-entries", Param::hash_max_listpack_entries, 0, kInt64Max},
      {"hash-max-ziplist-entries", Param::hash_max_listpack_entries, 0, kInt64Max},
      {"hash-max-listpack-value", Param::hash_max_listpack_value, 0, kInt64Max},
      {"hash-max-ziplist-value", Param::hash_max_listpack_value, 0, kInt64Max},
      {"sanitize-dump-payload", Param::sanitize_dump_payload, 0, 0},
      {"replica-serve-stale-data", Param::replica_serve_stale_data, 0, 0},
      {"slave-serve-stale-data", Param::replica_serve_stale_data, 0, 0},
  };
  static bool is_memory_param(Param p) noexcept;
  // The store takes at most 64 samples (Redis's 1..INT_MAX would only sample the whole
  // population); CONFIG GET shows the value set while the store still has it.
  static constexpr std::int64_t kStoreMaxSamples = 64;
  std::int64_t shown_samples() const;
  static Reply config_set_failed(const char* name, std::string_view why);
  Reply cmd_config_set(const Args& a, Session&);
  Reply cmd_config_resetstat(const Args&, Session&);
  Reply cmd_config_help(const Args&, Session&);

  // ---- COMMAND ----
  Reply command_info(const Spec& s) const;
  Reply cmd_command(const Args& a, Session& session);
  Reply cmd_command_count(const Args&, Session&);
  Reply cmd_command_info(const Args& a, Session&);
  Reply cmd_command_list(const Args& a, Session&);
  Reply cmd_command_help(const Args&, Session&);
  // ---- OBJECT ----
  Reply cmd_object(const Args& a, Session&);
  Reply cmd_memory(const Args& a, Session&);
  std::string object_encoding(const Value& v) const;
  std::int64_t object_refcount(const Value& v) const;
  Reply debug_object(const std::string& key);
  Reply debug_protocol(const std::string& type, Session& s);
  detail::Digest dataset_digest() const;
  Reply cmd_function(const Args& a, Session&);

  Reply cmd_config(const Args& a, Session& session);

  // ==== Strings (cmd_strings.hpp) ==============================================

  static void write_bulk_or_nil(OutputBuffer& out, const std::string* v, int proto);
  void write_get(const Args& a, Session&, OutputBuffer& out);

  // Options of SET (get_mode false) and GETEX (get_mode true), semantics.md B §2.4 table.
  enum class ExpKind : std::uint8_t { none, ex, px, exat, pxat };
  struct StrOpts {
    bool nx = false, xx = false, get = false, keepttl = false, persist = false;
    ExpKind kind = ExpKind::none;
    const std::string* value = nullptr;
  };
  static bool parse_string_opts(const Args& a, std::size_t from, bool get_mode, StrOpts& o);
  template <class E>
  static std::optional<E> make_expiry(ExpKind kind, std::int64_t v) {
    using K = ExpKind;
    switch (kind) {
      case K::ex: return E(Ex{v});
      case K::px: return E(Px{v});
      case K::exat: return E(ExAt{v});
      case K::pxat: return E(PxAt{v});
      default: return std::nullopt;
    }
  }

  Reply cmd_set(const Args& a, Session&);
  bool set_expiry_valid(ExpKind kind, std::int64_t v) const;
  Reply cmd_setex_generic(const Args& a, bool ms);
  Reply cmd_setex(const Args& a, Session&);
  Reply cmd_psetex(const Args& a, Session&);
  Reply cmd_setnx(const Args& a, Session&);
  Reply cmd_getset(const Args& a, Session&);
  Reply cmd_getdel(const Args& a, Session&);
  Reply cmd_getex(const Args& a, Session&);
  void write_mget(const Args& a, Session&, OutputBuffer& out);
  Result<void> set_pairs(const Args& a);
  Reply cmd_mset(const Args& a, Session&);
  bool exists_for_write(const std::string& key);
  Reply cmd_msetnx(const Args& a, Session&);
  Reply cmd_strlen(const Args& a, Session&);
  Reply cmd_append(const Args& a, Session&);
  Reply cmd_getrange(const Args& a, Session&);
  Reply cmd_setrange(const Args& a, Session&);
  bool bit_offset(const std::string& arg, std::uint64_t& offset) const;
  Reply cmd_setbit(const Args& a, Session&);
  Reply cmd_getbit(const Args& a, Session&);
  Reply cmd_lcs(const Args& a, Session&);
  Reply incr_by(const std::string& key, std::int64_t incr);
  Reply cmd_incr(const Args& a, Session&);
  Reply cmd_decr(const Args& a, Session&);
  Reply cmd_incrby(const Args& a, Session&);
  Reply cmd_decrby(const Args& a, Session&);
  Reply cmd_incrbyfloat(const Args& a, Session&);

  // ==== Hashes (cmd_hashes.hpp) ================================================
  // Each hash command checks the key's type first (WRONGTYPE beats every argument error, as
  // Redis; HINCRBY reads its increment first, as Redis), then its arguments, then runs one
  // store member (hash_fields.hpp).

  Reply hash_error(Errc e, const char* cmd);
  static std::vector<std::string_view> fields_of(const Args& a, std::size_t from);
  static Reply integers(const std::vector<int>& v);
  static Reply integers(const std::vector<std::int64_t>& v);

  Reply cmd_hset(const Args& a, Session&);
  Reply cmd_hmset(const Args& a, Session&);
  Reply cmd_hstrlen(const Args& a, Session&);
  Reply cmd_hsetnx(const Args& a, Session&);
  Reply cmd_hget(const Args& a, Session&);
  Reply cmd_hmget(const Args& a, Session&);
  Reply cmd_hdel(const Args& a, Session&);
  Reply cmd_hlen(const Args& a, Session&);
  Reply cmd_hexists(const Args& a, Session&);
  Reply hash_listing(const Args& a, bool names, bool values);
  Reply cmd_hgetall(const Args& a, Session&);
  Reply cmd_hkeys(const Args& a, Session&);
  Reply cmd_hvals(const Args& a, Session&);
  Reply cmd_hincrby(const Args& a, Session&);
  Reply cmd_hincrbyfloat(const Args& a, Session&);
  void write_hrandfield(const Args& a, Session&, OutputBuffer& out);
  Reply cmd_hscan(const Args& a, Session&);
  struct ScanOptions {
    std::int64_t count = 10;
    const std::string* pattern = nullptr;  // MATCH ("*" matches all: no test)
    const std::string* type = nullptr;     // SCAN's TYPE
    bool novalues = false;                 // HSCAN's NOVALUES
    bool matches(const std::string& s) const {
      return pattern == nullptr || (pattern->size() == 1 && (*pattern)[0] == '*') || glob_match(*pattern, s);
    }
  };
  std::optional<Reply> parse_scan_options(const Args& a, std::size_t from, bool scan, ScanOptions& o);

  static bool field_count(const std::string& s, std::int64_t& n);
  static Reply fields_missing();
  static Reply fields_mismatch();

  Reply hexpire_generic(const Args& a, const char* name, std::int64_t unit, bool absolute);
  Reply cmd_hexpire(const Args& a, Session&);
  Reply cmd_hpexpire(const Args& a, Session&);
  Reply cmd_hexpireat(const Args& a, Session&);
  Reply cmd_hpexpireat(const Args& a, Session&);

  // HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME / HPERSIST key FIELDS numfields field...
  // (research §1.3, §1.4): type, FIELDS, numfields, the count, then the store.
  enum class FieldQuery : std::uint8_t { ttl, pttl, expiretime, pexpiretime, persist };
  Reply field_query(const Args& a, FieldQuery q);
  Reply cmd_httl(const Args& a, Session&);
  Reply cmd_hpttl(const Args& a, Session&);
  Reply cmd_hexpiretime(const Args& a, Session&);
  Reply cmd_hpexpiretime(const Args& a, Session&);
  Reply cmd_hpersist(const Args& a, Session&);

  // Redis 8's HGETEX, HGETDEL, HSETEX, with its order of checks and its error texts.
  std::optional<Reply> field_time_arg(const std::string& arg, std::int64_t unit, bool absolute, const char* name,
                                      std::int64_t& v);
  std::optional<std::optional<Reply>> field_ttl_option(const std::string& option, const std::string& arg,
                                                       const char* name, FieldTtl& ttl);
  Reply field_values(const Result<std::vector<std::optional<std::string>>>& r, const char* name);
  Reply cmd_hgetex(const Args& a, Session&);
  Reply cmd_hgetdel(const Args& a, Session&);
  Reply cmd_hsetex(const Args& a, Session&);

  // ==== Keyspace (cmd_keyspace.hpp) ============================================

  Reply cmd_del(const Args& a, Session&);
  Reply cmd_unlink(const Args& a, Session&);
  Reply cmd_exists(const Args& a, Session&);
  Reply cmd_touch(const Args& a, Session&);
  Reply cmd_type(const Args& a, Session&);

  Reply cmd_rename(const Args& a, Session&);
  Reply cmd_renamenx(const Args& a, Session&);
  Reply cmd_copy(const Args& a, Session&);
  Reply cmd_move(const Args& a, Session&);
  struct Exported {
    std::string payload;       // DUMP's
    std::int64_t pexpiretime;  // -1: no TTL
  };
  static std::optional<Exported> export_key(store_type& from, const std::string& key);
  static bool present_for_write(store_type& in, const std::string& key);
  Reply import_key(store_type& to, const std::string& key, const Exported& e);
  Reply cmd_dump(const Args& a, Session&);
  Reply cmd_restore(const Args& a, Session&);

  Reply cmd_keys(const Args& a, Session&);
  Reply cmd_scan(const Args& a, Session&);
  Reply cmd_randomkey(const Args&, Session&);


  // ==== Expiry (cmd_expiry.hpp) =========================================================
  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (semantics.md B §2.1): options, then the number, then
  // the store (which checks overflow before looking the key up).
  enum class ExpireCommand : std::uint8_t { expire, pexpire, expireat, pexpireat };
  Reply cmd_ttl(const Args& a, Session&);
  Reply cmd_pttl(const Args& a, Session&);
  Reply cmd_expiretime(const Args& a, Session&);
  Reply cmd_pexpiretime(const Args& a, Session&);
  Reply expire_generic(const Args& a, const char* name, ExpireCommand cmd);
  Reply cmd_expire(const Args& a, Session&);
  Reply cmd_pexpire(const Args& a, Session&);
  Reply cmd_expireat(const Args& a, Session&);
  Reply cmd_pexpireat(const Args& a, Session&);
  Reply cmd_persist(const Args& a, Session&);

  // ==== The command table ==================================================================

  static const std::vector<Spec>& table() {
    using E = CommandExecutor;
    static const std::vector<Spec> t = {
        {"ping", -1, &E::cmd_ping, "fast", 0, 0, 0},
        {"echo", 2, &E::cmd_echo, "fast", 0, 0, 0},
        {"quit", -1, &E::cmd_quit, "fast", 0, 0, 0},
        {"shutdown", -1, &E::cmd_shutdown, "admin", 0, 0, 0},
        {"hello", -1, &E::cmd_hello, "fast", 0, 0, 0},
        {"auth", -2, &E::cmd_auth, "fast", 0, 0, 0},
        {"select", 2, &E::cmd_select, "fast", 0, 0, 0},
        {"swapdb", 3, &E::cmd_swapdb, "write fast", 0, 0, 0},
        {"multi", 1, &E::cmd_multi, "noscript loading stale fast allow_busy", 0, 0, 0},
        {"exec", 1, nullptr, "noscript loading stale skip_slowlog", 0, 0, 0, &E::write_exec},
        {"discard", 1, &E::cmd_discard, "noscript loading stale fast allow_busy", 0, 0, 0},
        {"watch", -2, &E::cmd_watch, "noscript loading stale fast allow_busy", 1, -1, 1},
        {"unwatch", 1, &E::cmd_unwatch, "noscript loading stale fast allow_busy", 0, 0, 0},
        {"subscribe", -2, nullptr, "pubsub noscript loading stale", 0, 0, 0, &E::write_subscribe},
        {"psubscribe", -2, nullptr, "pubsub noscript loading stale", 0, 0, 0, &E::write_subscribe},
        {"unsubscribe", -1, nullptr, "pubsub noscript loading stale", 0, 0, 0, &E::write_unsubscribe},
        {"punsubscribe", -1, nullptr, "pubsub noscript loading stale", 0, 0, 0, &E::write_unsubscribe},
        {"publish", 3, &E::cmd_publish, "pubsub loading stale fast may_replicate", 0, 0, 0},
        {"pubsub", -2, &E::cmd_pubsub, "pubsub loading stale", 0, 0, 0},
        {"client", -2, &E::cmd_client, "admin noscript loading stale", 0, 0, 0},
        {"time", 1, &E::cmd_time, "fast", 0, 0, 0},
        {"dbsize", 1, &E::cmd_dbsize, "readonly fast", 0, 0, 0},
        {"flushdb", -1, &E::cmd_flush, "write", 0, 0, 0},
        {"flushall", -1, &E::cmd_flush, "write", 0, 0, 0},
        {"info", -1, &E::cmd_info, "", 0, 0, 0},
        {"config", -2, &E::cmd_config, "", 0, 0, 0},
        {"debug", -2, &E::cmd_debug, "admin", 0, 0, 0},
        {"command", -1, &E::cmd_command, "", 0, 0, 0},
        {"object", -2, &E::cmd_object, "", 0, 0, 0},
        {"memory", -2, &E::cmd_memory, "", 0, 0, 0},
        {"function", -2, &E::cmd_function, "", 0, 0, 0},
        {"get", 2, nullptr, "readonly fast", 1, 1, 1, &E::write_get},
        {"set", -3, &E::cmd_set, "write denyoom", 1, 1, 1},
        {"setex", 4, &E::cmd_setex, "write denyoom", 1, 1, 1},
        {"psetex", 4, &E::cmd_psetex, "write denyoom", 1, 1, 1},
        {"setnx", 3, &E::cmd_setnx, "write denyoom fast", 1, 1, 1},
        {"getset", 3, &E::cmd_getset, "write denyoom fast", 1, 1, 1},
        {"getex", -2, &E::cmd_getex, "write fast", 1, 1, 1},
        {"getdel", 2, &E::cmd_getdel, "write fast", 1, 1, 1},
        {"mget", -2, nullptr, "readonly fast", 1, -1, 1, &E::write_mget},
        {"mset", -3, &E::cmd_mset, "write denyoom", 1, -1, 2},
        {"msetnx", -3, &E::cmd_msetnx, "write denyoom", 1, -1, 2},
        {"strlen", 2, &E::cmd_strlen, "readonly fast", 1, 1, 1},
        {"append", 3, &E::cmd_append, "write denyoom fast", 1, 1, 1},
        {"getrange", 4, &E::cmd_getrange, "readonly", 1, 1, 1},
        {"substr", 4, &E::cmd_getrange, "readonly", 1, 1, 1},
        {"setrange", 4, &E::cmd_setrange, "write denyoom", 1, 1, 1},
        {"setbit", 4, &E::cmd_setbit, "write denyoom", 1, 1, 1},
        {"getbit", 3, &E::cmd_getbit, "readonly fast", 1, 1, 1},
        {"lcs", -3, &E::cmd_lcs, "readonly", 1, 2, 1},
        {"incr", 2, &E::cmd_incr, "write denyoom fast", 1, 1, 1},
        {"decr", 2, &E::cmd_decr, "write denyoom fast", 1, 1, 1},
        {"incrby", 3, &E::cmd_incrby, "write denyoom fast", 1, 1, 1},
        {"decrby", 3, &E::cmd_decrby, "write denyoom fast", 1, 1, 1},
        {"incrbyfloat", 3, &E::cmd_incrbyfloat, "write denyoom fast", 1, 1, 1},
        {"del", -2, &E::cmd_del, "write", 1, -1, 1},
        {"unlink", -2, &E::cmd_unlink, "write fast", 1, -1, 1},
        {"exists", -2, &E::cmd_exists, "readonly fast", 1, -1, 1},
        {"touch", -2, &E::cmd_touch, "readonly fast", 1, -1, 1},
        {"type", 2, &E::cmd_type, "readonly fast", 1, 1, 1},
        {"ttl", 2, &E::cmd_ttl, "readonly fast", 1, 1, 1},
        {"pttl", 2, &E::cmd_pttl, "readonly fast", 1, 1, 1},
        {"expiretime", 2, &E::cmd_expiretime, "readonly fast", 1, 1, 1},
        {"pexpiretime", 2, &E::cmd_pexpiretime, "readonly fast", 1, 1, 1},
        {"expire", -3, &E::cmd_expire, "write fast", 1, 1, 1},
        {"pexpire", -3, &E::cmd_pexpire, "write fast", 1, 1, 1},
        {"expireat", -3, &E::cmd_expireat, "write fast", 1, 1, 1},
        {"pexpireat", -3, &E::cmd_pexpireat, "write fast", 1, 1, 1},
        {"persist", 2, &E::cmd_persist, "write fast", 1, 1, 1},
        {"rename", 3, &E::cmd_rename, "write", 1, 2, 1},
        {"renamenx", 3, &E::cmd_renamenx, "write fast", 1, 2, 1},
        {"copy", -3, &E::cmd_copy, "write denyoom", 1, 2, 1},
        {"move", 3, &E::cmd_move, "write fast", 1, 1, 1},
        {"dump", 2, &E::cmd_dump, "readonly", 1, 1, 1},
        {"restore", -4, &E::cmd_restore, "write denyoom", 1, 1, 1},
        {"keys", 2, &E::cmd_keys, "readonly", 0, 0, 0},
        {"scan", -2, &E::cmd_scan, "readonly", 0, 0, 0},
        {"randomkey", 1, &E::cmd_randomkey, "readonly", 0, 0, 0},
        {"hset", -4, &E::cmd_hset, "write denyoom fast", 1, 1, 1},
        {"hmset", -4, &E::cmd_hmset, "write denyoom fast", 1, 1, 1},
        {"hsetnx", 4, &E::cmd_hsetnx, "write denyoom fast", 1, 1, 1},
        {"hget", 3, &E::cmd_hget, "readonly fast", 1, 1, 1},
        {"hmget", -3, &E::cmd_hmget, "readonly fast", 1, 1, 1},
        {"hdel", -3, &E::cmd_hdel, "write fast", 1, 1, 1},
        {"hlen", 2, &E::cmd_hlen, "readonly fast", 1, 1, 1},
        {"hstrlen", 3, &E::cmd_hstrlen, "readonly fast", 1, 1, 1},
        {"hexists", 3, &E::cmd_hexists, "readonly fast", 1, 1, 1},
        {"hgetall", 2, &E::cmd_hgetall, "readonly", 1, 1, 1},
        {"hkeys", 2, &E::cmd_hkeys, "readonly", 1, 1, 1},
        {"hvals", 2, &E::cmd_hvals, "readonly", 1, 1, 1},
        {"hincrby", 4, &E::cmd_hincrby, "write denyoom fast", 1, 1, 1},
        {"hincrbyfloat", 4, &E::cmd_hincrbyfloat, "write denyoom fast", 1, 1, 1},
        {"hrandfield", -2, nullptr, "readonly", 1, 1, 1, &E::write_hrandfield},
        {"hscan", -3, &E::cmd_hscan, "readonly", 1, 1, 1},
        {"hexpire", -6, &E::cmd_hexpire, "write denyoom fast", 1, 1, 1},
        {"hpexpire", -6, &E::cmd_hpexpire, "write denyoom fast", 1, 1, 1},
        {"hexpireat", -6, &E::cmd_hexpireat, "write denyoom fast", 1, 1, 1},
        {"hpexpireat", -6, &E::cmd_hpexpireat, "write denyoom fast", 1, 1, 1},
        {"httl", -5, &E::cmd_httl, "readonly fast", 1, 1, 1},
        {"hpttl", -5, &E::cmd_hpttl, "readonly fast", 1, 1, 1},
        {"hexpiretime", -5, &E::cmd_hexpiretime, "readonly fast", 1, 1, 1},
        {"hpexpiretime", -5, &E::cmd_hpexpiretime, "readonly fast", 1, 1, 1},
        {"hpersist", -5, &E::cmd_hpersist, "write fast", 1, 1, 1},
        {"hgetex", -5, &E::cmd_hgetex, "write fast", 1, 1, 1},
        {"hgetdel", -5, &E::cmd_hgetdel, "write fast", 1, 1, 1},
        {"hsetex", -6, &E::cmd_hsetex, "write denyoom fast", 1, 1, 1},
    };
    return t;
  }

  // ---- Transactions (cmd_transactions.hpp) ----
  std::optional<Reply> queue_in_multi(const Args& argv, Session& s);
  void end_transaction(Session& s);
  void unwatch_all(Session& s);
  bool watched_key_expired(const Session& s) const;
  void touch(std::size_t db, const std::string& key, bool deletion);
  void touch_database(std::size_t db, const store_type* replaced_with);
  void update_listeners();
  static void forget(void* self, Session& s) noexcept;

  // ---- Publish/subscribe and keyspace notifications (cmd_pubsub.hpp) ----
  void unsubscribe(Session& s, const std::string& name, bool pattern);
  std::optional<Reply> subscribed_mode(const Args& argv, Session& s);
  void notify(std::size_t db, const typename store_type::event_type& e);
  static int parse_notify_flags(std::string_view s);
  void note_absent_keys(const Spec& spec, const Args& argv);
  static std::string notify_flags_string(int flags);
  // Redis's NOTIFY_* classes.
  static constexpr int kNotifyKeyspace = 1 << 0, kNotifyKeyevent = 1 << 1, kNotifyGeneric = 1 << 2,
                       kNotifyString = 1 << 3, kNotifyList = 1 << 4, kNotifySet = 1 << 5, kNotifyHash = 1 << 6,
                       kNotifyZset = 1 << 7, kNotifyExpired = 1 << 8, kNotifyEvicted = 1 << 9,
                       kNotifyStream = 1 << 10, kNotifyKeyMiss = 1 << 11, kNotifyModule = 1 << 13,
                       kNotifyNew = 1 << 14;
  static constexpr int kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet | kNotifyHash |
                                    kNotifyZset | kNotifyExpired | kNotifyEvicted | kNotifyStream | kNotifyModule;

  std::vector<store_type*> dbs_;  // dbs_[n]: database n
  store_type* store_;             // the current command's database
  std::size_t external_ = 0;      // set_external_memory()
  // WATCHed keys: (database, key) -> the sessions watching it; the stores' listener is set
  // while it is not empty.
  struct WatchKey {
    std::size_t db;
    std::string key;
    friend bool operator<(const WatchKey& x, const WatchKey& y) { return x.db != y.db ? x.db < y.db : x.key < y.key; }
  };
  std::map<WatchKey, std::vector<Session*>> watchers_;
  bool listening_ = false;
  bool in_exec_ = false;
  const detail::WatchRegistry registry_{this, &CommandExecutor::forget};
  // Subscriptions: channel -> sessions, pattern -> sessions.
  std::map<std::string, std::vector<Session*>> channels_, patterns_;
  PushHook push_hook_;
  int notify_flags_ = 0;  // notify-keyspace-events
  std::string command_;   // the running command's name (lowercase) while notifications are on
  struct CommandName {
    std::string& name;
    ~CommandName() { name.clear(); }
  };
  std::vector<std::string> absent_;  // its key arguments missing before it ran ("new" events)
  OutputBuffer discard_;  // where a silenced reply goes (CLIENT REPLY OFF / SKIP)
  TransactionHook transaction_hook_;
  CommandOptions options_;
  InfoHook info_hook_;
  std::vector<std::pair<std::string, std::string>> extra_configs_;
  struct ServerConfig {
    std::string name;
    std::function<std::string()> get;
    std::function<std::string(const std::string&)> set;
  };
  std::vector<ServerConfig> server_configs_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, ServerSpec> server_commands_;
  std::vector<bool> denyoom_;  // per table() entry
  std::vector<bool> write_;    // per table() entry
  WriteGate write_gate_;
  LinkDownQuery link_down_;
  PublishHook publish_hook_;
  // maxmemory-samples as last set by CONFIG SET (Redis accepts 1..INT_MAX; the store takes
  // at most 64, so a larger value is passed on as 64 and shown as set).
  std::optional<std::int64_t> samples_config_;
  std::int64_t start_ms_ = 0;
  std::uint64_t commands_processed_ = 0;
  std::vector<CommandStat> cmd_stats_;  // per table() entry
  std::map<std::string, std::uint64_t, std::less<>> error_stats_;
  std::uint64_t total_error_replies_ = 0;
};

}  // namespace expiring::redis

// The command implementations, one file per family (each includes this header).
#include "cmd_server.hpp"
#include "cmd_strings.hpp"
#include "cmd_keyspace.hpp"
#include "cmd_transactions.hpp"
#include "cmd_pubsub.hpp"
#include "cmd_expiry.hpp"
#include "cmd_hashes.hpp"
