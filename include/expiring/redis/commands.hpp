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
// RENAME RENAMENX COPY TYPE STRLEN APPEND INCR INCRBY DECR DECRBY KEYS SCAN RANDOMKEY DBSIZE
// HSET HSETNX HGET HMGET HDEL HLEN HEXISTS HGETALL HKEYS HVALS HINCRBY HEXPIRE HPEXPIRE
// HEXPIREAT HPEXPIREAT HTTL HPTTL HEXPIRETIME HPEXPIRETIME HPERSIST
// FLUSHDB FLUSHALL SELECT INFO CONFIG (GET/SET/RESETSTAT/HELP) DEBUG SET-ACTIVE-EXPIRE TIME
// COMMAND (COUNT/INFO/LIST/HELP) OBJECT (FREQ/IDLETIME/HELP) HELLO QUIT SHUTDOWN.
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
// There is one database (SELECT 0 only, COPY ... DB 0 only) and two types, string and hash:
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
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../expiring_store.hpp"
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
  none,
  close,     // QUIT: send the reply, then close the connection
  shutdown,  // SHUTDOWN: stop the server (no reply is sent)
};

// Per-connection state a command can read or change.
struct Session {
  std::uint64_t id = 0;          // client id (HELLO reports it)
  Action action = Action::none;  // set by QUIT and SHUTDOWN
  // False until AUTH (or HELLO ... AUTH) succeeds, for a connection opened while requirepass
  // is set: CommandExecutor::open_session() sets it, as Redis does at connect. Such a session
  // may run only AUTH, HELLO and QUIT (-NOAUTH otherwise), and its server parses its requests
  // with ParserLimits::authenticated false.
  bool authenticated = true;
};

// One class of client-output-buffer-limit: a client whose output buffer reaches `hard`
// bytes, or stays at `soft` bytes or more for longer than `soft_seconds`, is disconnected.
// 0 bytes = no such limit.
struct OutputBufferLimit {
  std::uint64_t hard = 0;
  std::uint64_t soft = 0;
  std::int64_t soft_seconds = 0;
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

template <class Clock>
class CommandExecutor {
 public:
  using store_type = ValueStore<Clock>;
  using Args = std::vector<std::string>;

  // Adds "name:value" lines to an INFO section (server, clients, memory, stats, keyspace),
  // after its header and before the executor's own lines. A server reports its connection
  // figures this way.
  using InfoHook = std::function<void(std::string_view section, std::string& out)>;

  explicit CommandExecutor(store_type& store, CommandOptions options = {})
      : store_(store), options_(std::move(options)) {
    for (std::size_t i = 0; i < table().size(); ++i) {
      index_.emplace(table()[i].name, i);
      denyoom_.push_back(has_flag(table()[i].flags, "denyoom"));
    }
    start_ms_ = store_.now_ms();
  }

  // A command the executor does not implement itself, added by a server (SAVE, BGSAVE,
  // REPLICAOF, ...: what needs files, processes or sockets). It takes precedence over a
  // built-in command of the same name; run_builtin() reaches the built-in one.
  using ServerCommand = std::function<Reply(const Args&, Session&)>;
  void add_command(std::string name, int arity, std::string flags, ServerCommand handler) {
    name = detail::lowercase(name);
    server_commands_[name] = ServerSpec{arity, std::move(flags), std::move(handler)};
  }
  // Runs the built-in command of argv[0], past any server command of that name.
  Reply run_builtin(const Args& argv, Session& session) {
    Reply early;
    const Spec* spec = prepare(argv, early);
    if (spec == nullptr) return early;
    if (spec->handler != nullptr) return (this->*spec->handler)(argv, session);
    // A streaming command: its encoding, decoded (tests compare Reply values).
    OutputBuffer out;
    (this->*spec->writer)(argv, session, out);
    const std::string bytes = out.str();
    std::size_t pos = 0;
    Reply r;
    (void)Reply::from_resp(bytes, pos, r);
    return r;
  }
  // Whether argv[0] names a command flagged `write` (a replica refuses those from clients).
  bool is_write(const Args& argv) const {
    if (argv.empty()) return false;
    const std::string name = detail::lowercase(argv[0]);
    if (auto s = server_commands_.find(name); s != server_commands_.end()) return has_flag(s->second.flags, "write");
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
    if (!session.authenticated) {
      if (std::optional<Reply> refused = check_auth(argv)) return std::move(*refused);
    }
    if (!server_commands_.empty()) {
      if (std::optional<Reply> r = run_server_command(argv, session)) return std::move(*r);
    }
    return run_builtin(argv, session);
  }
  // Runs one command and appends its reply's RESP encoding to `out`, the client's output
  // buffer: what a server calls. The commands whose replies carry stored values (GET, MGET)
  // write them straight from the store into `out`, so a large reply is never held twice.
  void execute_into(const Args& argv, Session& session, OutputBuffer& out) {
    if (!session.authenticated) {
      if (std::optional<Reply> refused = check_auth(argv)) {
        refused->write_resp(out);
        return;
      }
    }
    if (!server_commands_.empty()) {
      if (std::optional<Reply> r = run_server_command(argv, session)) {
        r->write_resp(out);
        return;
      }
    }
    Reply early;
    const Spec* spec = prepare(argv, early);
    if (spec == nullptr) {
      early.write_resp(out);
    } else if (spec->handler != nullptr) {
      (this->*spec->handler)(argv, session).write_resp(out);
    } else {
      (this->*spec->writer)(argv, session, out);
    }
  }
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

  store_type& store() noexcept { return store_; }
  const CommandOptions& options() const noexcept { return options_; }
  void set_info_hook(InfoHook hook) { info_hook_ = std::move(hook); }
  // A read-only setting CONFIG GET reports (e.g. "port", "maxclients"; "appendonly" replaces
  // the default "no").
  void add_config(std::string name, std::string value) { extra_configs_.emplace_back(std::move(name), std::move(value)); }
  // Commands this executor knows (COMMAND COUNT).
  std::size_t command_count() const noexcept { return table().size(); }
  std::uint64_t commands_processed() const noexcept { return commands_processed_; }

 private:
  struct ServerSpec {
    int arity;
    std::string flags;
    ServerCommand handler;
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

  std::optional<Reply> run_server_command(const Args& argv, Session& session) {
    if (argv.empty()) return std::nullopt;
    auto it = server_commands_.find(detail::lowercase(argv[0]));
    if (it == server_commands_.end()) return std::nullopt;
    if (!arity_ok(it->second.arity, argv.size())) return arity_error(it->first);
    ++commands_processed_;
    return it->second.handler(argv, session);
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
      return nullptr;
    }
    if (store_.options().maxmemory != 0) {
      const bool out_of_memory = !store_.perform_evictions().ok();
      if (out_of_memory && denyoom_[it->second]) {
        early = oom_error();
        return nullptr;
      }
    }
    ++commands_processed_;
    return &spec;
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
    const Value* v = store_.peek(key);
    if (v == nullptr || !v->is_hash()) return false;
    if (read) (void)store_.exists(key);
    return true;
  }
  bool holds_string(const std::string& key, bool read) {
    const Value* v = store_.peek(key);
    if (v == nullptr || !v->is_string()) return false;
    if (read) (void)store_.exists(key);
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

  // ==== Connection and server ==============================================================

  Reply cmd_ping(const Args& a, Session&) {
    if (a.size() > 2) return arity_error("ping");
    return a.size() == 1 ? Reply::status("PONG") : Reply::bulk(a[1]);
  }
  Reply cmd_echo(const Args& a, Session&) { return Reply::bulk(a[1]); }
  Reply cmd_quit(const Args&, Session& s) {
    s.action = Action::close;
    return ok();
  }
  Reply cmd_shutdown(const Args& a, Session& s) {
    bool nosave = false, save = false, abort = false, other = false;
    for (std::size_t i = 1; i < a.size(); ++i) {
      if (detail::is_opt(a[i], "nosave")) {
        nosave = true;
      } else if (detail::is_opt(a[i], "save")) {
        save = true;
      } else if (detail::is_opt(a[i], "now") || detail::is_opt(a[i], "force")) {
        other = true;
      } else if (detail::is_opt(a[i], "abort")) {
        abort = true;
      } else {
        return syntax_error();
      }
    }
    if ((abort && (nosave || save || other)) || (nosave && save)) return syntax_error();
    if (abort) return Reply::error("ERR No shutdown in progress.");
    s.action = Action::shutdown;
    return ok();  // not sent: the server stops
  }
  // AUTH [username] password, for the one user there is ("default"). Without requirepass the
  // default user takes any password, but a bare AUTH <password> is an error, as in Redis.
  Reply cmd_auth(const Args& a, Session& s) {
    if (a.size() > 3) return syntax_error();
    if (a.size() == 2 && options_.requirepass.empty()) {
      return Reply::error(
          "ERR AUTH <password> called without any password configured for the default user. Are you sure your "
          "configuration is correct?");
    }
    const std::string& user = a.size() == 3 ? a[1] : std::string("default");
    if (!password_ok(user, a.back())) return wrongpass();
    s.authenticated = true;
    return ok();
  }
  bool password_ok(const std::string& user, const std::string& password) const {
    if (user != "default") return false;
    if (options_.requirepass.empty()) return true;
    // Compared in time independent of where they differ (Redis's time_independent_strcmp).
    const std::string& want = options_.requirepass;
    unsigned char diff = password.size() == want.size() ? 0 : 1;
    for (std::size_t i = 0; i < want.size(); ++i) {
      diff |= static_cast<unsigned char>(want[i] ^ (i < password.size() ? password[i] : '\0'));
    }
    return diff == 0;
  }
  static Reply wrongpass() { return Reply::error("WRONGPASS invalid username-password pair or user is disabled."); }
  Reply cmd_hello(const Args& a, Session& s) {
    std::size_t next = 1;
    if (a.size() >= 2) {
      std::int64_t ver = 0;
      if (!to_int(a[1], ver)) return Reply::error("ERR Protocol version is not an integer or out of range");
      // RESP3 is not offered: clients then stay on RESP2, as with an old server.
      if (ver != 2) return Reply::error("NOPROTO unsupported protocol version");
      next = 2;
    }
    std::size_t auth = 0;  // the index of an AUTH option
    for (std::size_t j = next; j < a.size(); ++j) {
      const std::size_t more = a.size() - 1 - j;
      if (detail::is_opt(a[j], "auth") && more >= 2) {
        auth = j;
        j += 2;
      } else if (detail::is_opt(a[j], "setname") && more >= 1) {
        ++j;
      } else {
        return detail::error_format("Syntax error in HELLO option '" + std::string(detail::cstr(a[j])) + "'");
      }
    }
    if (auth != 0) {
      if (!password_ok(a[auth + 1], a[auth + 2])) return wrongpass();
      s.authenticated = true;
    }
    if (!s.authenticated) {
      return Reply::error(
          "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> "
          "<pass> option can be used to authenticate the client and select the RESP protocol version at the "
          "same time");
    }
    Reply r = Reply::array();
    r.push(Reply::bulk("server")).push(Reply::bulk("redis"));
    r.push(Reply::bulk("version")).push(Reply::bulk(options_.redis_version));
    r.push(Reply::bulk("proto")).push(Reply::integer(2));
    r.push(Reply::bulk("id")).push(Reply::integer(static_cast<std::int64_t>(s.id)));
    r.push(Reply::bulk("mode")).push(Reply::bulk("standalone"));
    r.push(Reply::bulk("role")).push(Reply::bulk("master"));
    r.push(Reply::bulk("modules")).push(Reply::array());
    return r;
  }
  Reply cmd_select(const Args& a, Session&) {
    std::int64_t id = 0;
    if (!to_int(a[1], id)) return not_integer();
    if (id < std::numeric_limits<int>::min() || id > std::numeric_limits<int>::max()) {
      return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
    }
    if (id != 0) return Reply::error("ERR DB index is out of range");
    return ok();
  }
  Reply cmd_time(const Args&, Session&) {
    std::int64_t sec = 0, usec = 0;
    if constexpr (std::is_same_v<std::decay_t<Clock>, SystemClock> || std::is_same_v<std::decay_t<Clock>, TscClock>) {
      using namespace std::chrono;
      const auto us = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
      sec = us / 1000000;
      usec = us % 1000000;
    } else {
      const std::int64_t ms = store_.now_ms();
      sec = ms / 1000;
      std::int64_t rem = ms % 1000;
      if (rem < 0) {
        rem += 1000;
        --sec;
      }
      usec = rem * 1000;
    }
    std::string s1, s2;
    Reply::append_int(s1, sec);
    Reply::append_int(s2, usec);
    return Reply::array({Reply::bulk(std::move(s1)), Reply::bulk(std::move(s2))});
  }
  Reply cmd_dbsize(const Args&, Session&) { return Reply::integer(static_cast<std::int64_t>(store_.size())); }
  Reply cmd_flush(const Args& a, Session&) {
    if (a.size() > 2) return syntax_error();
    if (a.size() == 2 && !detail::is_opt(a[1], "sync") && !detail::is_opt(a[1], "async")) return syntax_error();
    store_.clear();
    return ok();
  }
  Reply cmd_debug(const Args& a, Session&) {
    if (a.size() == 3 && detail::is_opt(a[1], "set-active-expire")) {
      store_.set_active_expire_enabled(atoi_like(a[2]) != 0);
      return ok();
    }
    if (a.size() == 2 && detail::is_opt(a[1], "help")) {
      return Reply::array({Reply::status("DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                           Reply::status("SET-ACTIVE-EXPIRE <0|1>"),
                           Reply::status("    Setting it to 0 disables expiring keys in background when they are not"),
                           Reply::status("    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the"),
                           Reply::status("    default."),
                           Reply::status("HELP"),
                           Reply::status("    Prints this help.")});
    }
    return detail::error_format("unknown subcommand or wrong number of arguments for '" +
                                std::string(detail::cstr(a[1])) + "'. Try DEBUG HELP.");
  }
  // C's atoi(): blanks, an optional sign, digits; anything else ends the number.
  static long long atoi_like(std::string_view s) {
    s = detail::cstr(s);
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    long long v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (v < std::numeric_limits<long long>::max() / 10) v = v * 10 + (s[i] - '0');
    }
    return neg ? -v : v;
  }

  // ---- INFO ----
  Reply cmd_info(const Args& a, Session&) {
    // Redis's order; persistence and replication come from a server's hook only.
    static constexpr const char* kSections[] = {"server", "clients", "memory", "persistence", "stats", "replication", "keyspace"};
    constexpr int kCount = 7;
    bool want[kCount] = {};
    for (bool& w : want) w = a.size() == 1;
    for (std::size_t i = 1; i < a.size(); ++i) {
      const std::string s = detail::lowercase(a[i]);
      if (s == "default" || s == "all" || s == "everything") {
        for (bool& w : want) w = true;
      }
      for (int k = 0; k < kCount; ++k) {
        if (s == kSections[k]) want[k] = true;
      }
    }
    std::string out;
    for (int k = 0; k < kCount; ++k) {
      if (!want[k]) continue;
      const bool server_only = k == 1 || k == 3 || k == 5;  // clients, persistence, replication
      if (server_only && !info_hook_) continue;
      if (!out.empty()) out += "\r\n";
      info_section(kSections[k], out);
    }
    return Reply::bulk(std::move(out));
  }
  void info_section(std::string_view section, std::string& out) {
    auto line = [&](std::string_view k, const std::string& v) {
      out.append(k);
      out += ':';
      out += v;
      out += "\r\n";
    };
    auto num = [](std::int64_t v) {
      std::string s;
      Reply::append_int(s, v);
      return s;
    };
    const Stats st = store_.stats();
    if (section == "server") {
      out += "# Server\r\n";
      line("redis_version", options_.redis_version);
      line("expiring_version", std::to_string(EXPIRING_VERSION_MAJOR) + "." + std::to_string(EXPIRING_VERSION_MINOR) +
                                   "." + std::to_string(EXPIRING_VERSION_PATCH));
      line("redis_mode", "standalone");
      line("arch_bits", std::to_string(sizeof(void*) * 8));
      if (info_hook_) info_hook_(section, out);
      // Saturated: a ManualClock may read anything in the int64 range.
      const std::int64_t now = store_.now_ms();
      namespace ed = ::expiring::detail;
      const std::int64_t usec = now > ed::kInt64Max / 1000 ? ed::kInt64Max : now < ed::kInt64Min / 1000 ? ed::kInt64Min : now * 1000;
      const std::int64_t up = ed::saturating_sub(now, start_ms_);
      line("server_time_usec", num(usec));
      line("uptime_in_seconds", num(up / 1000));
      line("uptime_in_days", num(up / 86400000));
      line("hz", num(store_.options().hz));
      line("configured_hz", num(store_.options().hz));
    } else if (section == "clients") {
      out += "# Clients\r\n";
      if (info_hook_) info_hook_(section, out);
    } else if (section == "persistence") {
      out += "# Persistence\r\n";
      if (info_hook_) info_hook_(section, out);
    } else if (section == "replication") {
      out += "# Replication\r\n";
      if (info_hook_) info_hook_(section, out);
    } else if (section == "memory") {
      out += "# Memory\r\n";
      if (info_hook_) info_hook_(section, out);
      // The figure the limit is enforced against: the store's used memory, which counts the
      // server's client buffers (set_external_memory) as Redis's used_memory does.
      const std::size_t used = store_.used_memory();
      line("used_memory", num(static_cast<std::int64_t>(used)));
      line("used_memory_human", detail::bytes_to_human(used));
      const std::uint64_t limit = store_.options().maxmemory;
      line("maxmemory", detail::as_signed_decimal(limit));  // Redis prints it with %lld
      line("maxmemory_human", detail::bytes_to_human(limit));
      line("maxmemory_policy", to_string(store_.options().maxmemory_policy));
    } else if (section == "stats") {
      out += "# Stats\r\n";
      if (info_hook_) info_hook_(section, out);
      char perc[32];
      std::snprintf(perc, sizeof perc, "%.2f", st.expired_stale_perc);
      line("expired_keys", std::to_string(st.expired_keys));
      line("expired_subkeys", std::to_string(st.expired_subkeys));
      line("expired_stale_perc", perc);
      line("expired_time_cap_reached_count", std::to_string(st.expired_time_cap_reached_count));
      line("expire_cycle_cpu_milliseconds", std::to_string(st.expire_cycle_cpu_microseconds / 1000));
      line("evicted_keys", std::to_string(st.evicted_keys));
      line("keyspace_hits", std::to_string(st.keyspace_hits));
      line("keyspace_misses", std::to_string(st.keyspace_misses));
      // Not in Redis: how late expired keys were reclaimed (Stats::expired_lateness), in the
      // style of Redis 7's latencystats lines; the bounds are the histogram's log2 buckets.
      auto lateness = [&](const char* name, const std::array<std::uint64_t, LatenessHistogram::kBuckets>& h) {
        std::uint64_t count = 0;
        for (std::uint64_t c : h) count += c;
        line(name, "count=" + std::to_string(count) +
                       ",p50=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.5)) +
                       ",p99=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.99)) +
                       ",p99.9=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.999)));
      };
      lateness("expired_lateness_ms_active", st.expired_lateness.active);
      lateness("expired_lateness_ms_lazy", st.expired_lateness.lazy);
    } else if (section == "keyspace") {
      out += "# Keyspace\r\n";
      if (info_hook_) info_hook_(section, out);
      if (st.keys != 0) {
        line("db0", "keys=" + std::to_string(st.keys) + ",expires=" + std::to_string(st.expires) +
                        ",avg_ttl=" + num(st.avg_ttl) + ",subexpiry=" + std::to_string(st.subexpiry));
      }
    }
  }

  // ---- CONFIG ----
  struct ConfigEntry {
    std::string name;
    std::string value;
  };
  std::vector<ConfigEntry> config_entries() const {
    std::vector<ConfigEntry> v;
    v.push_back({"hz", std::to_string(store_.options().hz)});
    v.push_back({"active-expire-effort", std::to_string(store_.options().active_expire_effort)});
    const Options& o = store_.options();
    v.push_back({"maxmemory", std::to_string(static_cast<std::uint64_t>(o.maxmemory))});
    v.push_back({"maxmemory-policy", to_string(o.maxmemory_policy)});
    v.push_back({"maxmemory-samples", std::to_string(shown_samples())});
    v.push_back({"lfu-log-factor", std::to_string(o.lfu_log_factor)});
    v.push_back({"lfu-decay-time", std::to_string(o.lfu_decay_time)});
    v.push_back({"proto-max-bulk-len", std::to_string(options_.proto_max_bulk_len)});
    v.push_back({"client-query-buffer-limit", std::to_string(options_.client_query_buffer_limit)});
    std::string obl;
    static constexpr const char* kClassNames[] = {"normal", "slave", "pubsub"};  // Redis prints "slave"
    for (int k = 0; k < 3; ++k) {
      const OutputBufferLimit& l = options_.client_output_buffer_limit[k];
      obl += (k ? " " : "") + std::string(kClassNames[k]) + " " + std::to_string(l.hard) + " " +
             std::to_string(l.soft) + " " + std::to_string(l.soft_seconds);
    }
    v.push_back({"client-output-buffer-limit", obl});
    v.push_back({"requirepass", options_.requirepass});
    v.push_back({"repl-timeout", std::to_string(options_.repl_timeout)});
    v.push_back({"repl-ping-replica-period", std::to_string(options_.repl_ping_replica_period)});
    v.push_back({"save", ""});
    v.push_back({"appendonly", "no"});
    v.push_back({"databases", "1"});
    for (const auto& kv : extra_configs_) {  // a server's value replaces a default of the same name
      auto same = std::find_if(v.begin(), v.end(), [&](const ConfigEntry& e) { return e.name == kv.first; });
      if (same != v.end()) {
        same->value = kv.second;
      } else {
        v.push_back({kv.first, kv.second});
      }
    }
    return v;
  }
  Reply cmd_config_get(const Args& a, Session&) {
    const std::vector<ConfigEntry> all = config_entries();
    std::vector<std::pair<std::string, const ConfigEntry*>> matches;
    auto matched = [&](std::string_view name) {
      for (const auto& m : matches) {
        if (detail::iequals(m.first, name)) return true;
      }
      return false;
    };
    for (std::size_t i = 2; i < a.size(); ++i) {
      const std::string_view pat = detail::cstr(a[i]);
      if (pat.find_first_of("[*?") == std::string_view::npos) {
        if (matched(pat)) continue;
        for (const ConfigEntry& e : all) {
          if (detail::iequals(e.name, pat)) {
            matches.emplace_back(std::string(pat), &e);
            break;
          }
        }
        continue;
      }
      for (const ConfigEntry& e : all) {
        if (!matched(e.name) && glob_match(pat, e.name, /*nocase=*/true)) matches.emplace_back(e.name, &e);
      }
    }
    Reply r = Reply::array();
    for (const auto& m : matches) r.push(Reply::bulk(m.first)).push(Reply::bulk(m.second->value));
    return r;
  }
  // The settings CONFIG SET changes, with the name its value errors quote.
  enum class Param : std::uint8_t {
    hz, effort, maxmemory, policy, samples, lfu_log_factor, lfu_decay_time,
    proto_max_bulk_len, query_buffer_limit, output_buffer_limit, requirepass, repl_timeout, repl_ping_period,
  };
  struct ParamSpec {
    const char* name;
    Param param;
    std::int64_t lo, hi;  // integer settings: Redis's accepted range
  };
  static constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  static constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t kMinBufferLimit = 1024 * 1024;  // Redis: at least 1mb

  // CONFIG SET client-output-buffer-limit "<class> <hard> <soft> <soft seconds> ...", as
  // Redis 7.0 reads it: the value split at single spaces (so two spaces make an empty word),
  // groups of four; class normal, replica (or slave) or pubsub, case-insensitive; sizes are
  // memory values; seconds a decimal in 0..INT_MAX (strtoll: a leading '+' or zeros are
  // fine). An empty value changes nothing. "" on success, else the reason for the error.
  static std::string parse_output_limits(std::string_view value, OutputBufferLimit (&limits)[3]) {
    value = detail::cstr(value);
    if (value.empty()) return "";
    std::vector<std::string_view> words;
    for (std::size_t from = 0;;) {
      const std::size_t sp = value.find(' ', from);
      words.push_back(value.substr(from, sp == std::string_view::npos ? std::string_view::npos : sp - from));
      if (sp == std::string_view::npos) break;
      from = sp + 1;
    }
    if (words.size() % 4 != 0) return "Wrong number of arguments in buffer limit configuration.";
    OutputBufferLimit next[3] = {limits[0], limits[1], limits[2]};
    for (std::size_t j = 0; j < words.size(); j += 4) {
      int k = -1;
      if (detail::iequals(words[j], "normal")) k = 0;
      if (detail::iequals(words[j], "replica") || detail::iequals(words[j], "slave")) k = 1;
      if (detail::iequals(words[j], "pubsub")) k = 2;
      if (k < 0) return "Invalid client class specified in buffer limit configuration.";
      std::uint64_t hard = 0, soft = 0;
      std::int64_t seconds = 0;
      std::string_view sec = words[j + 3];
      if (!sec.empty() && sec[0] == '+') sec.remove_prefix(1);
      while (sec.size() > 1 && sec[0] == '0') sec.remove_prefix(1);
      if (!detail::parse_memory(words[j + 1], hard) || !detail::parse_memory(words[j + 2], soft) ||
          !parse_int64(sec, seconds) || seconds < 0 || seconds > kIntMax) {
        return "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      }
      next[k] = {hard, soft, seconds};
    }
    for (int k = 0; k < 3; ++k) limits[k] = next[k];
    return "";
  }
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
      {"repl-timeout", Param::repl_timeout, 1, kIntMax},
      {"repl-ping-replica-period", Param::repl_ping_period, 1, kIntMax},
      {"repl-ping-slave-period", Param::repl_ping_period, 1, kIntMax},
  };
  static bool is_memory_param(Param p) noexcept {
    return p == Param::maxmemory || p == Param::proto_max_bulk_len || p == Param::query_buffer_limit;
  }
  // The store takes at most 64 samples (Redis's 1..INT_MAX would only sample the whole
  // population); CONFIG GET shows the value set while the store still has it.
  static constexpr std::int64_t kStoreMaxSamples = 64;
  std::int64_t shown_samples() const {
    const int actual = store_.options().maxmemory_samples;
    if (samples_config_ && std::min(*samples_config_, kStoreMaxSamples) == actual) return *samples_config_;
    return actual;
  }
  static Reply config_set_failed(const char* name, std::string_view why) {
    return Reply::error(std::string("ERR CONFIG SET failed (possibly related to argument '") + name + "') - " +
                        std::string(why));
  }
  Reply cmd_config_set(const Args& a, Session&) {
    if (a.size() % 2 != 0) return syntax_error();
    struct Change {
      const ParamSpec* spec;
      const std::string* arg;
      std::int64_t number = 0;      // integer settings
      std::uint64_t bytes = 0;      // memory settings
      EvictionPolicy policy = EvictionPolicy::noeviction;
      OutputBufferLimit limits[3] = {};  // client-output-buffer-limit
    };
    std::vector<Change> changes;
    for (std::size_t i = 2; i < a.size(); i += 2) {
      const ParamSpec* spec = nullptr;
      for (const ParamSpec& p : kParams) {
        if (detail::iequals(a[i], p.name)) spec = &p;
      }
      if (spec == nullptr) {
        return detail::error_format("Unknown option or number of arguments for CONFIG SET - '" +
                                    std::string(detail::cstr(a[i])) + "'");
      }
      for (const Change& c : changes) {
        if (c.spec == spec) {
          return detail::error_format("CONFIG SET failed (possibly related to argument '" +
                                      std::string(detail::cstr(a[i])) + "') - duplicate parameter");
        }
      }
      changes.push_back({spec, &a[i + 1]});
    }
    // Validate every value, in argument order, before applying any (CONFIG SET is atomic).
    for (Change& c : changes) {
      const ParamSpec& p = *c.spec;
      if (is_memory_param(p.param)) {
        // Memory values as Redis's memtoull() (C string, units); overflow is an error here.
        if (!detail::parse_memory(*c.arg, c.bytes) || c.bytes > std::numeric_limits<std::size_t>::max()) {
          return config_set_failed(p.name, "argument must be a memory value");
        }
        if (p.hi != 0 && (c.bytes < static_cast<std::uint64_t>(p.lo) || c.bytes > static_cast<std::uint64_t>(p.hi))) {
          return config_set_failed(p.name, "argument must be between " + std::to_string(p.lo) + " and " +
                                               std::to_string(p.hi) + " inclusive");
        }
      } else if (p.param == Param::output_buffer_limit) {
        for (int k = 0; k < 3; ++k) c.limits[k] = options_.client_output_buffer_limit[k];
        const std::string why = parse_output_limits(*c.arg, c.limits);
        if (!why.empty()) return config_set_failed(p.name, why);
      } else if (p.param == Param::requirepass) {
        // Any string, as Redis's default user password (a NUL included).
      } else if (p.param == Param::policy) {
        bool found = false;
        std::string names;
        for (EvictionPolicy e : detail::kPolicies) {
          if (!found && detail::iequals(detail::cstr(*c.arg), to_string(e))) {
            c.policy = e;
            found = true;
          }
          names += names.empty() ? "" : ", ";
          names += to_string(e);
        }
        if (!found) return config_set_failed(p.name, "argument(s) must be one of the following: " + names);
      } else {
        if (!to_int(*c.arg, c.number)) return config_set_failed(p.name, "argument couldn't be parsed into an integer");
        if (c.number < p.lo || c.number > p.hi) {
          return config_set_failed(p.name, "argument must be between " + std::to_string(p.lo) + " and " +
                                               std::to_string(p.hi) + " inclusive");
        }
      }
    }
    // Apply; maxmemory last, so that the evictions it triggers (as Redis's updateMaxmemory)
    // use the policy and settings of the same command.
    const Change* maxmemory = nullptr;
    for (const Change& c : changes) {
      const int n = static_cast<int>(c.number);  // within int: checked above
      switch (c.spec->param) {
        case Param::hz: store_.set_hz(n); break;
        case Param::effort: (void)store_.set_active_expire_effort(n); break;
        case Param::policy: store_.set_maxmemory_policy(c.policy); break;
        case Param::samples:
          (void)store_.set_maxmemory_samples(static_cast<int>(std::min(c.number, kStoreMaxSamples)));
          samples_config_ = c.number;
          break;
        case Param::lfu_log_factor: (void)store_.set_lfu_log_factor(n); break;
        case Param::lfu_decay_time: (void)store_.set_lfu_decay_time(n); break;
        case Param::maxmemory: maxmemory = &c; break;
        case Param::proto_max_bulk_len: options_.proto_max_bulk_len = static_cast<std::size_t>(c.bytes); break;
        case Param::query_buffer_limit: options_.client_query_buffer_limit = static_cast<std::size_t>(c.bytes); break;
        case Param::output_buffer_limit:
          for (int k = 0; k < 3; ++k) options_.client_output_buffer_limit[k] = c.limits[k];
          break;
        case Param::requirepass: options_.requirepass = *c.arg; break;
        case Param::repl_timeout: options_.repl_timeout = c.number; break;
        case Param::repl_ping_period: options_.repl_ping_replica_period = c.number; break;
      }
    }
    if (maxmemory != nullptr) store_.set_maxmemory(static_cast<std::size_t>(maxmemory->bytes));
    return ok();
  }
  Reply cmd_config_resetstat(const Args&, Session&) {
    store_.reset_stats();
    return ok();
  }
  Reply cmd_config_help(const Args&, Session&) {
    return Reply::array({Reply::status("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("GET <pattern>"),
                         Reply::status("    Return parameters matching the glob-like <pattern> and their values."),
                         Reply::status("SET <directive> <value>"),
                         Reply::status("    Set the configuration <directive> to <value>."),
                         Reply::status("RESETSTAT"),
                         Reply::status("    Reset statistics reported by the INFO command."),
                         Reply::status("HELP"),
                         Reply::status("    Prints this help.")});
  }

  // ---- COMMAND ----
  Reply command_info(const Spec& s) const {
    Reply flags = Reply::array();
    std::string_view f = s.flags;
    while (!f.empty()) {
      const std::size_t sp = f.find(' ');
      flags.push(Reply::status(std::string(f.substr(0, sp))));
      if (sp == std::string_view::npos) break;
      f.remove_prefix(sp + 1);
    }
    return Reply::array({Reply::bulk(s.name), Reply::integer(s.arity), std::move(flags), Reply::integer(s.first_key),
                         Reply::integer(s.last_key), Reply::integer(s.step), Reply::array(), Reply::array(),
                         Reply::array(), Reply::array()});
  }
  Reply cmd_command(const Args& a, Session& session) {
    if (a.size() == 1) {
      Reply r = Reply::array();
      for (const Spec& s : table()) r.push(command_info(s));
      return r;
    }
    const std::string sub = detail::lowercase(a[1]);
    struct Sub {
      const char* name;
      int arity;
      Reply (CommandExecutor::*fn)(const Args&, Session&);
    };
    static const Sub subs[] = {
        {"count", 2, &CommandExecutor::cmd_command_count}, {"info", -2, &CommandExecutor::cmd_command_info},
        {"list", -2, &CommandExecutor::cmd_command_list},   {"help", 2, &CommandExecutor::cmd_command_help},
    };
    // No COMMAND DOCS: redis-cli 7 asks for it at start-up and, on this error, falls back to
    // its built-in help (as with a Redis 6 server), so `help SET` and the typing hints work;
    // an empty reply would leave it with no help at all.
    for (const Sub& s : subs) {
      if (sub == s.name) {
        if (!arity_ok(s.arity, a.size())) return arity_error(std::string("command|") + s.name);
        return (this->*s.fn)(a, session);
      }
    }
    return unknown_subcommand(a);
  }
  Reply cmd_command_count(const Args&, Session&) { return Reply::integer(static_cast<std::int64_t>(table().size())); }
  Reply cmd_command_info(const Args& a, Session&) {
    Reply r = Reply::array();
    if (a.size() == 2) {
      for (const Spec& s : table()) r.push(command_info(s));
      return r;
    }
    for (std::size_t i = 2; i < a.size(); ++i) {
      auto it = index_.find(detail::lowercase(a[i]));
      r.push(it == index_.end() ? Reply::nil_array() : command_info(table()[it->second]));
    }
    return r;
  }
  Reply cmd_command_list(const Args& a, Session&) {
    if (a.size() != 2) return syntax_error();
    Reply r = Reply::array();
    for (const Spec& s : table()) r.push(Reply::bulk(s.name));
    return r;
  }
  Reply cmd_command_help(const Args&, Session&) {
    return Reply::array({Reply::status("COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("(no subcommand)"), Reply::status("    Return details about all commands."),
                         Reply::status("COUNT"), Reply::status("    Return the total number of commands."),
                         Reply::status("INFO [<command-name> ...]"),
                         Reply::status("    Return details about the named commands."), Reply::status("LIST"),
                         Reply::status("    Return the names of all commands."), Reply::status("HELP"),
                         Reply::status("    Prints this help.")});
  }
  // ---- OBJECT ----
  // FREQ and IDLETIME read the key as Redis does (a hit or miss, not an access: nil when
  // missing), then answer from the store's LFU / LRU data. ENCODING and REFCOUNT are not
  // offered (one value type, no shared objects).
  Reply cmd_object(const Args& a, Session&) {
    const std::string sub = detail::lowercase(a[1]);
    if (sub == "help") {
      if (a.size() != 2) return arity_error("object|help");
      return Reply::array(
          {Reply::status("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
           Reply::status("ENCODING <key>"),
           Reply::status("    Return the kind of internal representation used in order to store the value"),
           Reply::status("    associated with a <key>."), Reply::status("FREQ <key>"),
           Reply::status("    Return the access frequency index of the <key>. The returned integer is"),
           Reply::status("    proportional to the logarithm of the recent access frequency of the key."),
           Reply::status("IDLETIME <key>"),
           Reply::status("    Return the idle time of the <key>, that is the approximated number of"),
           Reply::status("    seconds elapsed since the last access to the key."), Reply::status("REFCOUNT <key>"),
           Reply::status("    Return the number of references of the value associated with the specified"),
           Reply::status("    <key>."), Reply::status("HELP"), Reply::status("    Prints this help.")});
    }
    if (sub != "freq" && sub != "idletime") return unknown_subcommand(a);
    if (a.size() != 3) return arity_error("object|" + sub);
    if (!store_.exists(a[2])) return Reply::nil();
    const EvictionPolicy policy = store_.options().maxmemory_policy;
    const bool lfu = policy == EvictionPolicy::allkeys_lfu || policy == EvictionPolicy::volatile_lfu;
    static constexpr const char* kAdjust =
        " Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
    if (sub == "freq") {
      if (!lfu) {
        return Reply::error(std::string("ERR An LFU maxmemory policy is not selected, access frequency not tracked.") +
                            kAdjust);
      }
      const std::optional<std::uint32_t> freq = store_.object_freq(a[2]);
      return freq ? Reply::integer(static_cast<std::int64_t>(*freq)) : Reply::nil();
    }
    if (lfu) return Reply::error(std::string("ERR An LFU maxmemory policy is selected, idle time not tracked.") + kAdjust);
    const std::optional<std::int64_t> idle_ms = store_.object_idletime_ms(a[2]);
    return idle_ms ? Reply::integer(*idle_ms / 1000) : Reply::nil();
  }

  Reply cmd_config(const Args& a, Session& session) {
    const std::string sub = detail::lowercase(a[1]);
    if (sub == "get") {
      if (a.size() < 3) return arity_error("config|get");
      return cmd_config_get(a, session);
    }
    if (sub == "set") {
      if (a.size() < 4) return arity_error("config|set");
      return cmd_config_set(a, session);
    }
    if (sub == "resetstat") {
      if (a.size() != 2) return arity_error("config|resetstat");
      return cmd_config_resetstat(a, session);
    }
    if (sub == "help") {
      if (a.size() != 2) return arity_error("config|help");
      return cmd_config_help(a, session);
    }
    return unknown_subcommand(a);
  }

  // ==== Strings ============================================================================

  static void write_bulk_or_nil(OutputBuffer& out, const std::string* v) {
    if (v != nullptr) {
      Reply::write_bulk(out, *v);
    } else {
      Reply::write_nil(out);
    }
  }
  void write_get(const Args& a, Session&, OutputBuffer& out) {
    const Value* v = store_.get(a[1]);
    if (v != nullptr && v->is_hash()) {
      wrong_type().write_resp(out);
      return;
    }
    write_bulk_or_nil(out, v == nullptr ? nullptr : v->string());
  }

  // Options of SET (get_mode false) and GETEX (get_mode true), semantics.md B §2.4 table.
  enum class ExpKind : std::uint8_t { none, ex, px, exat, pxat };
  struct StrOpts {
    bool nx = false, xx = false, get = false, keepttl = false, persist = false;
    ExpKind kind = ExpKind::none;
    const std::string* value = nullptr;
  };
  static bool parse_string_opts(const Args& a, std::size_t from, bool get_mode, StrOpts& o) {
    using K = ExpKind;
    for (std::size_t j = from; j < a.size(); ++j) {
      const std::string& opt = a[j];
      const bool has_next = j + 1 < a.size();
      const bool any_expire = o.kind != K::none;
      if (!get_mode && detail::is_opt(opt, "nx") && !o.xx) {
        o.nx = true;
      } else if (!get_mode && detail::is_opt(opt, "xx") && !o.nx) {
        o.xx = true;
      } else if (!get_mode && detail::is_opt(opt, "get")) {
        o.get = true;
      } else if (!get_mode && detail::is_opt(opt, "keepttl") && !o.persist && !any_expire) {
        o.keepttl = true;
      } else if (get_mode && detail::is_opt(opt, "persist") && !any_expire && !o.keepttl) {
        o.persist = true;
      } else if (has_next && !o.keepttl && !o.persist &&
                 ((detail::is_opt(opt, "ex") && (o.kind == K::none || o.kind == K::ex)) ||
                  (detail::is_opt(opt, "px") && (o.kind == K::none || o.kind == K::px)) ||
                  (detail::is_opt(opt, "exat") && (o.kind == K::none || o.kind == K::exat)) ||
                  (detail::is_opt(opt, "pxat") && (o.kind == K::none || o.kind == K::pxat)))) {
        const std::string_view t = detail::cstr(opt);
        o.kind = detail::iequals(t, "ex") ? K::ex : detail::iequals(t, "px") ? K::px : detail::iequals(t, "exat") ? K::exat : K::pxat;
        o.value = &a[++j];
      } else {
        return false;
      }
    }
    return true;
  }
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

  Reply cmd_set(const Args& a, Session&) {
    StrOpts o;
    if (!parse_string_opts(a, 3, false, o)) return syntax_error();
    SetExpiry expiry;
    std::int64_t v = 0;
    if (o.kind != ExpKind::none) {
      if (!to_int(*o.value, v)) return not_integer();
      expiry = *make_expiry<SetExpiry>(o.kind, v);
    } else if (o.keepttl) {
      expiry = KeepTtl{};
    }
    const SetCond cond = o.nx ? SetCond::NX : o.xx ? SetCond::XX : SetCond::Always;
    if (o.get) {
      // The expire argument is refused before GET meets a hash (semantics.md B §2.4).
      if (o.kind != ExpKind::none && !set_expiry_valid(o.kind, v)) return invalid_expire("set");
      if (holds_hash(a[1], true)) return wrong_type();
      Result<std::optional<Value>> r = store_.set_get(a[1], a[2], expiry, cond);
      if (!r.ok()) return write_error(r.error(), "set");
      return bulk_or_nil(*r);
    }
    Result<bool> r = store_.set(a[1], a[2], expiry, cond);
    if (!r.ok()) return write_error(r.error(), "set");
    return *r ? ok() : Reply::nil();
  }
  // SET's expire argument as the store validates it (B §2.4 step 1): positive, and its
  // conversion to absolute ms does not overflow.
  bool set_expiry_valid(ExpKind kind, std::int64_t v) const {
    if (v <= 0) return false;
    std::int64_t ms = v;
    if ((kind == ExpKind::ex || kind == ExpKind::exat) && !expiring::detail::seconds_to_ms(v, ms)) return false;
    std::int64_t when = 0;
    return !(kind == ExpKind::ex || kind == ExpKind::px) || expiring::detail::checked_add(ms, store_.now_ms(), when);
  }
  Reply cmd_setex_generic(const Args& a, bool ms) {
    std::int64_t v = 0;
    if (!to_int(a[2], v)) return not_integer();
    Result<void> r = ms ? store_.psetex(a[1], v, a[3]) : store_.setex(a[1], v, a[3]);
    if (!r.ok()) return write_error(r.error(), ms ? "psetex" : "setex");
    return ok();
  }
  Reply cmd_setex(const Args& a, Session&) { return cmd_setex_generic(a, false); }
  Reply cmd_psetex(const Args& a, Session&) { return cmd_setex_generic(a, true); }
  Reply cmd_setnx(const Args& a, Session&) {
    Result<bool> r = store_.set(a[1], a[2], SetCond::NX);  // setnx() would hide a refusal
    if (!r.ok()) return oom_error();
    return Reply::integer(*r ? 1 : 0);
  }
  Reply cmd_getset(const Args& a, Session&) {
    if (holds_hash(a[1], true)) return wrong_type();
    auto r = store_.getset(a[1], a[2]);
    if (!r.ok()) return oom_error();
    return bulk_or_nil(std::move(r).value());
  }
  Reply cmd_getdel(const Args& a, Session&) {
    if (holds_hash(a[1], true)) return wrong_type();
    return bulk_or_nil(store_.getdel(a[1]));
  }
  Reply cmd_getex(const Args& a, Session&) {
    StrOpts o;
    if (!parse_string_opts(a, 2, true, o)) return syntax_error();
    if (holds_hash(a[1], true)) return wrong_type();  // after the options, before their numbers (B §2.6)
    GetExExpiry option;
    if (o.kind != ExpKind::none) {
      std::int64_t v = 0;
      if (!to_int(*o.value, v)) {
        // Redis looks the key up before it reads the number: a missing key answers nil.
        Result<std::optional<Value>> cur = store_.getex(a[1]);
        return cur.ok() && *cur ? not_integer() : Reply::nil();
      }
      option = *make_expiry<GetExExpiry>(o.kind, v);
    } else if (o.persist) {
      option = Persist{};
    }
    Result<std::optional<Value>> r = store_.getex(a[1], option);
    if (!r.ok()) return invalid_expire("getex");
    return bulk_or_nil(*r);
  }
  // Each value is copied once, from the store into the output buffer (a pointer from get()
  // is not kept past the next read).
  void write_mget(const Args& a, Session&, OutputBuffer& out) {
    Reply::write_array_header(out, a.size() - 1);
    for (std::size_t i = 1; i < a.size(); ++i) {
      const Value* v = store_.get(a[i]);
      write_bulk_or_nil(out, v == nullptr ? nullptr : v->string());  // a hash answers nil
    }
  }
  // MSET / MSETNX's writes: one memory check for the whole command, as Redis, so every pair
  // is written or none (Errc::out_of_memory).
  Result<void> set_pairs(const Args& a) {
    return store_.as_one_command([&] {
      for (std::size_t i = 1; i < a.size(); i += 2) (void)store_.set(a[i], a[i + 1]);
    });
  }
  Reply cmd_mset(const Args& a, Session&) {
    if (a.size() % 2 == 0) return arity_error("mset");
    return set_pairs(a).ok() ? ok() : oom_error();
  }
  // A write lookup (Redis lookupKeyWrite): whether the key is live, reclaiming it if stale,
  // without counting a hit or miss and without an event. The store has no such member;
  // renamenx(k, k) is exactly that: no_such_key for a missing or stale key, false otherwise.
  bool exists_for_write(const std::string& key) { return store_.renamenx(key, key).ok(); }
  Reply cmd_msetnx(const Args& a, Session&) {
    if (a.size() % 2 == 0) return arity_error("msetnx");
    for (std::size_t i = 1; i < a.size(); i += 2) {
      if (exists_for_write(a[i])) return Reply::integer(0);
    }
    return set_pairs(a).ok() ? Reply::integer(1) : oom_error();
  }
  Reply cmd_strlen(const Args& a, Session&) {
    const Value* v = store_.get(a[1]);
    if (v != nullptr && v->is_hash()) return wrong_type();
    return Reply::integer(v ? static_cast<std::int64_t>(v->string()->size()) : 0);
  }
  Reply cmd_append(const Args& a, Session&) {
    std::size_t len = 0;
    bool too_big = false;
    const std::string& add = a[2];
    if (holds_hash(a[1], false)) return wrong_type();
    const bool found = store_.modify(a[1], [&](Value& value) {
      std::string& v = *value.string();
      if (v.size() + add.size() > options_.proto_max_bulk_len) {
        too_big = true;
        return;
      }
      v += add;
      len = v.size();
    });
    if (too_big) return Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    if (!found) {
      if (!store_.set(a[1], add).ok()) return oom_error();
      len = add.size();
    }
    return Reply::integer(static_cast<std::int64_t>(len));
  }
  Reply incr_by(const std::string& key, std::int64_t incr) {
    enum { kOk, kNotInt, kOverflow } status = kOk;
    std::int64_t result = 0;
    if (holds_hash(key, false)) return wrong_type();
    const bool found = store_.modify(key, [&](Value& value) {
      std::string& v = *value.string();
      std::int64_t cur = 0;
      if (!parse_int64(v, cur)) {
        status = kNotInt;
        return;
      }
      if ((incr < 0 && cur < 0 && incr < std::numeric_limits<std::int64_t>::min() - cur) ||
          (incr > 0 && cur > 0 && incr > std::numeric_limits<std::int64_t>::max() - cur)) {
        status = kOverflow;
        return;
      }
      result = cur + incr;
      v.clear();
      Reply::append_int(v, result);
    });
    if (status == kNotInt) return not_integer();
    if (status == kOverflow) return Reply::error("ERR increment or decrement would overflow");
    if (!found) {
      result = incr;
      std::string v;
      Reply::append_int(v, result);
      if (!store_.set(key, std::move(v)).ok()) return oom_error();
    }
    return Reply::integer(result);
  }
  Reply cmd_incr(const Args& a, Session&) { return incr_by(a[1], 1); }
  Reply cmd_decr(const Args& a, Session&) { return incr_by(a[1], -1); }
  Reply cmd_incrby(const Args& a, Session&) {
    std::int64_t v = 0;
    if (!to_int(a[2], v)) return not_integer();
    return incr_by(a[1], v);
  }
  Reply cmd_decrby(const Args& a, Session&) {
    std::int64_t v = 0;
    if (!to_int(a[2], v)) return not_integer();
    if (v == std::numeric_limits<std::int64_t>::min()) return Reply::error("ERR decrement would overflow");
    return incr_by(a[1], -v);
  }

  // ==== Hashes ==============================================================================
  // Each hash command checks the key's type first (WRONGTYPE beats every argument error, as
  // Redis; HINCRBY reads its increment first, as Redis), then its arguments, then runs one
  // store member (hash_fields.hpp).

  Reply hash_error(Errc e, const char* cmd) {
    switch (e) {
      case Errc::wrong_type: return wrong_type();
      case Errc::out_of_memory: return oom_error();
      case Errc::not_an_integer: return Reply::error("ERR hash value is not an integer");
      case Errc::overflow: return Reply::error("ERR increment or decrement would overflow");
      case Errc::negative_expire_time: return Reply::error("ERR invalid expire time, must be >= 0");
      default: return invalid_expire(cmd);
    }
  }
  // The fields of a command, argv[from ..], as views (no copies).
  static std::vector<std::string_view> fields_of(const Args& a, std::size_t from) {
    return std::vector<std::string_view>(a.begin() + static_cast<std::ptrdiff_t>(from), a.end());
  }
  static Reply integers(const std::vector<int>& v) {
    Reply r = Reply::array();
    for (int x : v) r.push(Reply::integer(x));
    return r;
  }
  static Reply integers(const std::vector<std::int64_t>& v) {
    Reply r = Reply::array();
    for (std::int64_t x : v) r.push(Reply::integer(x));
    return r;
  }

  Reply cmd_hset(const Args& a, Session&) {
    if (a.size() % 2 != 0) return arity_error(detail::lowercase(a[0]));
    if (holds_string(a[1], false)) return wrong_type();
    std::vector<std::pair<std::string_view, std::string_view>> pairs;
    pairs.reserve((a.size() - 2) / 2);
    for (std::size_t i = 2; i + 1 < a.size(); i += 2) pairs.emplace_back(a[i], a[i + 1]);
    Result<std::size_t> r = store_.hset(a[1], pairs);
    if (!r.ok()) return hash_error(r.error(), "hset");
    return Reply::integer(static_cast<std::int64_t>(*r));
  }
  Reply cmd_hsetnx(const Args& a, Session&) {
    if (holds_string(a[1], false)) return wrong_type();
    Result<bool> r = store_.hsetnx(a[1], a[2], a[3]);
    if (!r.ok()) return hash_error(r.error(), "hsetnx");
    return Reply::integer(*r ? 1 : 0);
  }
  Reply cmd_hget(const Args& a, Session&) {
    Result<const std::string*> r = store_.hget(a[1], std::string_view(a[2]));
    if (!r.ok()) return hash_error(r.error(), "hget");
    return bulk_or_nil(*r);
  }
  Reply cmd_hmget(const Args& a, Session&) {
    const std::vector<std::string_view> f = fields_of(a, 2);
    std::vector<const std::string*> out(f.size());
    Result<std::size_t> r = store_.hmget(a[1], f, out.data());
    if (!r.ok()) return hash_error(r.error(), "hmget");
    Reply list = Reply::array();
    for (const std::string* v : out) list.push(bulk_or_nil(v));
    return list;
  }
  Reply cmd_hdel(const Args& a, Session&) {
    Result<std::size_t> r = store_.hdel(a[1], fields_of(a, 2));
    if (!r.ok()) return hash_error(r.error(), "hdel");
    return Reply::integer(static_cast<std::int64_t>(*r));
  }
  Reply cmd_hlen(const Args& a, Session&) {
    Result<std::size_t> r = store_.hlen(a[1]);
    if (!r.ok()) return hash_error(r.error(), "hlen");
    return Reply::integer(static_cast<std::int64_t>(*r));
  }
  Reply cmd_hexists(const Args& a, Session&) {
    Result<bool> r = store_.hexists(a[1], std::string_view(a[2]));
    if (!r.ok()) return hash_error(r.error(), "hexists");
    return Reply::integer(*r ? 1 : 0);
  }
  // HGETALL (names and values), HKEYS, HVALS: one visit.
  Reply hash_listing(const Args& a, bool names, bool values) {
    Reply list = Reply::array();
    Result<std::size_t> r = store_.hvisit(a[1], [&](const std::string& f, const std::string& v) {
      if (names) list.push(Reply::bulk(f));
      if (values) list.push(Reply::bulk(v));
    });
    if (!r.ok()) return hash_error(r.error(), "hgetall");
    return list;
  }
  Reply cmd_hgetall(const Args& a, Session&) { return hash_listing(a, true, true); }
  Reply cmd_hkeys(const Args& a, Session&) { return hash_listing(a, true, false); }
  Reply cmd_hvals(const Args& a, Session&) { return hash_listing(a, false, true); }
  Reply cmd_hincrby(const Args& a, Session&) {
    std::int64_t delta = 0;
    if (!to_int(a[3], delta)) return not_integer();  // before the type, as Redis
    if (holds_string(a[1], false)) return wrong_type();
    Result<std::int64_t> r = store_.hincrby(a[1], std::string_view(a[2]), delta);
    if (!r.ok()) return hash_error(r.error(), "hincrby");
    return Reply::integer(*r);
  }

  // numFields as Redis reads it: a long in [1, LONG_MAX].
  static bool field_count(const std::string& s, std::int64_t& n) { return to_int(s, n) && n >= 1; }
  static Reply fields_missing() {
    return Reply::error("ERR Mandatory argument FIELDS is missing or not at the right position");
  }
  static Reply fields_mismatch() {
    return Reply::error("ERR The `numfields` parameter must match the number of arguments");
  }

  // HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT] FIELDS numfields field...
  // in Redis 7.4's order (research §1.2): type, time (integer, >= 0, the cap), the condition,
  // FIELDS, numfields, the count, then the store.
  Reply hexpire_generic(const Args& a, const char* name, std::int64_t unit, bool absolute) {
    if (holds_string(a[1], false)) return wrong_type();
    std::int64_t v = 0;
    if (!to_int(a[2], v)) return not_integer();
    if (v < 0) return Reply::error("ERR invalid expire time, must be >= 0");
    constexpr std::int64_t kCap = expiring::detail::kMaxFieldDeadline;
    if (v > kCap / unit) return invalid_expire(name);
    const std::int64_t base = absolute ? 0 : store_.now_ms();
    if (v * unit > expiring::detail::saturating_sub(kCap, base)) return invalid_expire(name);
    std::size_t at = 3;
    ExpireFlags flags = ExpireFlags::None;
    if (detail::is_opt(a[at], "nx")) {
      flags = ExpireFlags::NX;
    } else if (detail::is_opt(a[at], "xx")) {
      flags = ExpireFlags::XX;
    } else if (detail::is_opt(a[at], "gt")) {
      flags = ExpireFlags::GT;
    } else if (detail::is_opt(a[at], "lt")) {
      flags = ExpireFlags::LT;
    }
    if (flags != ExpireFlags::None) ++at;
    if (at >= a.size() || !detail::is_opt(a[at], "fields")) return fields_missing();
    std::int64_t n = 0;
    if (at + 1 >= a.size() || !field_count(a[at + 1], n)) {
      return Reply::error("ERR Parameter `numFields` should be greater than 0");
    }
    if (static_cast<std::uint64_t>(n) != a.size() - at - 2) return fields_mismatch();
    const std::vector<std::string_view> f = fields_of(a, at + 2);
    Result<std::vector<int>> r = std::vector<int>{};
    if (unit == 1000 && !absolute) r = store_.hexpire(a[1], v, f, flags);
    if (unit == 1 && !absolute) r = store_.hpexpire(a[1], v, f, flags);
    if (unit == 1000 && absolute) r = store_.hexpireat(a[1], v, f, flags);
    if (unit == 1 && absolute) r = store_.hpexpireat(a[1], v, f, flags);
    if (!r.ok()) return hash_error(r.error(), name);
    return integers(*r);
  }
  Reply cmd_hexpire(const Args& a, Session&) { return hexpire_generic(a, "hexpire", 1000, false); }
  Reply cmd_hpexpire(const Args& a, Session&) { return hexpire_generic(a, "hpexpire", 1, false); }
  Reply cmd_hexpireat(const Args& a, Session&) { return hexpire_generic(a, "hexpireat", 1000, true); }
  Reply cmd_hpexpireat(const Args& a, Session&) { return hexpire_generic(a, "hpexpireat", 1, true); }

  // HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME / HPERSIST key FIELDS numfields field...
  // (research §1.3, §1.4): type, FIELDS, numfields, the count, then the store.
  enum class FieldQuery : std::uint8_t { ttl, pttl, expiretime, pexpiretime, persist };
  Reply field_query(const Args& a, FieldQuery q) {
    if (holds_string(a[1], q != FieldQuery::persist)) return wrong_type();
    if (!detail::is_opt(a[2], "fields")) return fields_missing();
    std::int64_t n = 0;
    if (!field_count(a[3], n)) return Reply::error("ERR Number of fields must be a positive integer");
    if (static_cast<std::uint64_t>(n) != a.size() - 4) return fields_mismatch();
    const std::vector<std::string_view> f = fields_of(a, 4);
    if (q == FieldQuery::persist) {
      Result<std::vector<int>> r = store_.hpersist(a[1], f);
      if (!r.ok()) return hash_error(r.error(), "hpersist");
      return integers(*r);
    }
    Result<std::vector<std::int64_t>> r = std::vector<std::int64_t>{};
    switch (q) {
      case FieldQuery::ttl: r = store_.httl(a[1], f); break;
      case FieldQuery::pttl: r = store_.hpttl(a[1], f); break;
      case FieldQuery::expiretime: r = store_.hexpiretime(a[1], f); break;
      default: r = store_.hpexpiretime(a[1], f); break;
    }
    if (!r.ok()) return hash_error(r.error(), "httl");
    return integers(*r);
  }
  Reply cmd_httl(const Args& a, Session&) { return field_query(a, FieldQuery::ttl); }
  Reply cmd_hpttl(const Args& a, Session&) { return field_query(a, FieldQuery::pttl); }
  Reply cmd_hexpiretime(const Args& a, Session&) { return field_query(a, FieldQuery::expiretime); }
  Reply cmd_hpexpiretime(const Args& a, Session&) { return field_query(a, FieldQuery::pexpiretime); }
  Reply cmd_hpersist(const Args& a, Session&) { return field_query(a, FieldQuery::persist); }

  // ==== Keyspace ===========================================================================

  Reply cmd_del(const Args& a, Session&) {
    std::int64_t n = 0;
    for (std::size_t i = 1; i < a.size(); ++i) n += store_.del(a[i]) ? 1 : 0;
    return Reply::integer(n);
  }
  Reply cmd_unlink(const Args& a, Session&) {
    std::int64_t n = 0;
    for (std::size_t i = 1; i < a.size(); ++i) n += store_.unlink(a[i]) ? 1 : 0;
    return Reply::integer(n);
  }
  Reply cmd_exists(const Args& a, Session&) {
    std::int64_t n = 0;
    for (std::size_t i = 1; i < a.size(); ++i) n += store_.exists(a[i]) ? 1 : 0;
    return Reply::integer(n);
  }
  Reply cmd_touch(const Args& a, Session&) {
    std::int64_t n = 0;
    for (std::size_t i = 1; i < a.size(); ++i) n += store_.touch(a[i]) ? 1 : 0;
    return Reply::integer(n);
  }
  Reply cmd_type(const Args& a, Session&) {
    if (!store_.exists(a[1])) return Reply::status("none");
    const Value* v = store_.peek(a[1]);
    return Reply::status(v == nullptr ? "none" : v->type_name());
  }

  Reply cmd_ttl(const Args& a, Session&) { return Reply::integer(store_.ttl(a[1])); }
  Reply cmd_pttl(const Args& a, Session&) { return Reply::integer(store_.pttl(a[1])); }
  Reply cmd_expiretime(const Args& a, Session&) { return Reply::integer(store_.expiretime(a[1])); }
  Reply cmd_pexpiretime(const Args& a, Session&) { return Reply::integer(store_.pexpiretime(a[1])); }

  // EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (semantics.md B §2.1): options, then the number, then
  // the store (which checks overflow before looking the key up).
  enum class ExpireCommand : std::uint8_t { expire, pexpire, expireat, pexpireat };
  Reply expire_generic(const Args& a, const char* name, ExpireCommand cmd) {
    bool nx = false, xx = false, gt = false, lt = false;
    for (std::size_t j = 3; j < a.size(); ++j) {
      if (detail::is_opt(a[j], "nx")) {
        nx = true;
      } else if (detail::is_opt(a[j], "xx")) {
        xx = true;
      } else if (detail::is_opt(a[j], "gt")) {
        gt = true;
      } else if (detail::is_opt(a[j], "lt")) {
        lt = true;
      } else {
        return detail::error_format("Unsupported option " + std::string(detail::cstr(a[j])));
      }
    }
    if (nx && (xx || gt || lt)) return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
    if (gt && lt) return Reply::error("ERR GT and LT options at the same time are not compatible");
    std::int64_t v = 0;
    if (!to_int(a[2], v)) return not_integer();
    ExpireFlags flags = ExpireFlags::None;
    if (nx) flags = flags | ExpireFlags::NX;
    if (xx) flags = flags | ExpireFlags::XX;
    if (gt) flags = flags | ExpireFlags::GT;
    if (lt) flags = flags | ExpireFlags::LT;
    Result<bool> r = false;
    switch (cmd) {
      case ExpireCommand::expire: r = store_.expire(a[1], v, flags); break;
      case ExpireCommand::pexpire: r = store_.pexpire(a[1], v, flags); break;
      case ExpireCommand::expireat: r = store_.expireat(a[1], v, flags); break;
      case ExpireCommand::pexpireat: r = store_.pexpireat(a[1], v, flags); break;
    }
    if (!r.ok()) {
      if (r.error() == Errc::invalid_expire_time) return invalid_expire(name);
      return Reply::error(std::string("ERR ") + to_string(r.error()));
    }
    return Reply::integer(*r ? 1 : 0);
  }
  Reply cmd_expire(const Args& a, Session&) { return expire_generic(a, "expire", ExpireCommand::expire); }
  Reply cmd_pexpire(const Args& a, Session&) { return expire_generic(a, "pexpire", ExpireCommand::pexpire); }
  Reply cmd_expireat(const Args& a, Session&) { return expire_generic(a, "expireat", ExpireCommand::expireat); }
  Reply cmd_pexpireat(const Args& a, Session&) { return expire_generic(a, "pexpireat", ExpireCommand::pexpireat); }
  Reply cmd_persist(const Args& a, Session&) { return Reply::integer(store_.persist(a[1]) ? 1 : 0); }

  Reply cmd_rename(const Args& a, Session&) {
    Result<void> r = store_.rename(a[1], a[2]);
    return r.ok() ? ok() : Reply::error("ERR no such key");
  }
  Reply cmd_renamenx(const Args& a, Session&) {
    Result<bool> r = store_.renamenx(a[1], a[2]);
    if (!r.ok()) return Reply::error("ERR no such key");
    return Reply::integer(*r ? 1 : 0);
  }
  Reply cmd_copy(const Args& a, Session&) {
    bool replace = false;
    for (std::size_t j = 3; j < a.size(); ++j) {
      const std::size_t additional = a.size() - j - 1;
      if (detail::is_opt(a[j], "replace")) {
        replace = true;
      } else if (detail::is_opt(a[j], "db") && additional > 0) {
        std::int64_t db = 0;
        if (!to_int(a[j + 1], db)) return not_integer();
        if (db < std::numeric_limits<int>::min() || db > std::numeric_limits<int>::max()) {
          return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
        }
        // One database: any other index is out of range here.
        if (db != 0) return Reply::error("ERR DB index is out of range");
        ++j;
      } else {
        return syntax_error();
      }
    }
    if (a[1] == a[2]) return Reply::error("ERR source and destination objects are the same");
    Result<bool> r = store_.copy(a[1], a[2], replace);
    if (!r.ok()) {
      if (r.error() == Errc::out_of_memory) return oom_error();
      return Reply::error("ERR source and destination objects are the same");
    }
    return Reply::integer(*r ? 1 : 0);
  }

  Reply cmd_keys(const Args& a, Session&) {
    const std::string& pat = a[1];
    const bool all = pat.size() == 1 && pat[0] == '*';
    Reply r = Reply::array();
    for (std::string& k : store_.keys()) {
      if (all || glob_match(pat, k)) r.push(Reply::bulk(std::move(k)));
    }
    return r;
  }
  Reply cmd_scan(const Args& a, Session&) {
    std::uint64_t cursor = 0;
    if (!detail::parse_scan_cursor(a[1], cursor)) return Reply::error("ERR invalid cursor");
    std::int64_t count = 10;
    const std::string* pattern = nullptr;
    const std::string* type = nullptr;
    for (std::size_t i = 2; i < a.size();) {
      const std::size_t left = a.size() - i;
      if (detail::is_opt(a[i], "count") && left >= 2) {
        if (!to_int(a[i + 1], count)) return not_integer();
        if (count < 1) return syntax_error();
        i += 2;
      } else if (detail::is_opt(a[i], "match") && left >= 2) {
        pattern = &a[i + 1];
        i += 2;
      } else if (detail::is_opt(a[i], "type") && left >= 2) {
        type = &a[i + 1];
        i += 2;
      } else {
        return syntax_error();
      }
    }
    const bool use_pattern = pattern != nullptr && !(pattern->size() == 1 && (*pattern)[0] == '*');
    std::vector<std::string> keys;
    const std::uint64_t next =
        store_.scan(cursor, static_cast<std::size_t>(count), [&](const std::string& k, const Value&) {
          if (!use_pattern || glob_match(*pattern, k)) keys.push_back(k);
        });
    Reply list = Reply::array();
    for (std::string& k : keys) {
      if (type != nullptr) {
        // Redis looks each key up to learn its type (a read: counts a hit).
        const Value* v = store_.exists(k) ? store_.peek(k) : nullptr;
        const char* t = v == nullptr ? "none" : v->type_name();
        if (!detail::iequals(detail::cstr(*type), t)) continue;
      }
      list.push(Reply::bulk(std::move(k)));
    }
    std::string c;
    c = std::to_string(next);
    return Reply::array({Reply::bulk(std::move(c)), std::move(list)});
  }
  Reply cmd_randomkey(const Args&, Session&) { return bulk_or_nil(store_.random_key()); }

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
        {"time", 1, &E::cmd_time, "fast", 0, 0, 0},
        {"dbsize", 1, &E::cmd_dbsize, "readonly fast", 0, 0, 0},
        {"flushdb", -1, &E::cmd_flush, "write", 0, 0, 0},
        {"flushall", -1, &E::cmd_flush, "write", 0, 0, 0},
        {"info", -1, &E::cmd_info, "", 0, 0, 0},
        {"config", -2, &E::cmd_config, "", 0, 0, 0},
        {"debug", -2, &E::cmd_debug, "admin", 0, 0, 0},
        {"command", -1, &E::cmd_command, "", 0, 0, 0},
        {"object", -2, &E::cmd_object, "", 0, 0, 0},
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
        {"incr", 2, &E::cmd_incr, "write denyoom fast", 1, 1, 1},
        {"decr", 2, &E::cmd_decr, "write denyoom fast", 1, 1, 1},
        {"incrby", 3, &E::cmd_incrby, "write denyoom fast", 1, 1, 1},
        {"decrby", 3, &E::cmd_decrby, "write denyoom fast", 1, 1, 1},
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
        {"keys", 2, &E::cmd_keys, "readonly", 0, 0, 0},
        {"scan", -2, &E::cmd_scan, "readonly", 0, 0, 0},
        {"randomkey", 1, &E::cmd_randomkey, "readonly", 0, 0, 0},
        {"hset", -4, &E::cmd_hset, "write denyoom fast", 1, 1, 1},
        {"hsetnx", 4, &E::cmd_hsetnx, "write denyoom fast", 1, 1, 1},
        {"hget", 3, &E::cmd_hget, "readonly fast", 1, 1, 1},
        {"hmget", -3, &E::cmd_hmget, "readonly fast", 1, 1, 1},
        {"hdel", -3, &E::cmd_hdel, "write fast", 1, 1, 1},
        {"hlen", 2, &E::cmd_hlen, "readonly fast", 1, 1, 1},
        {"hexists", 3, &E::cmd_hexists, "readonly fast", 1, 1, 1},
        {"hgetall", 2, &E::cmd_hgetall, "readonly", 1, 1, 1},
        {"hkeys", 2, &E::cmd_hkeys, "readonly", 1, 1, 1},
        {"hvals", 2, &E::cmd_hvals, "readonly", 1, 1, 1},
        {"hincrby", 4, &E::cmd_hincrby, "write denyoom fast", 1, 1, 1},
        {"hexpire", -6, &E::cmd_hexpire, "write denyoom fast", 1, 1, 1},
        {"hpexpire", -6, &E::cmd_hpexpire, "write denyoom fast", 1, 1, 1},
        {"hexpireat", -6, &E::cmd_hexpireat, "write denyoom fast", 1, 1, 1},
        {"hpexpireat", -6, &E::cmd_hpexpireat, "write denyoom fast", 1, 1, 1},
        {"httl", -5, &E::cmd_httl, "readonly fast", 1, 1, 1},
        {"hpttl", -5, &E::cmd_hpttl, "readonly fast", 1, 1, 1},
        {"hexpiretime", -5, &E::cmd_hexpiretime, "readonly fast", 1, 1, 1},
        {"hpexpiretime", -5, &E::cmd_hpexpiretime, "readonly fast", 1, 1, 1},
        {"hpersist", -5, &E::cmd_hpersist, "write fast", 1, 1, 1},
    };
    return t;
  }

  store_type& store_;
  CommandOptions options_;
  InfoHook info_hook_;
  std::vector<std::pair<std::string, std::string>> extra_configs_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, ServerSpec> server_commands_;
  std::vector<bool> denyoom_;  // per table() entry
  // maxmemory-samples as last set by CONFIG SET (Redis accepts 1..INT_MAX; the store takes
  // at most 64, so a larger value is passed on as 64 and shown as set).
  std::optional<std::int64_t> samples_config_;
  std::int64_t start_ms_ = 0;
  std::uint64_t commands_processed_ = 0;
};

}  // namespace expiring::redis
