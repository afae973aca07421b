// server/config.hpp: expiring-server's settings, from a redis.conf-style file and the command line.
//
// Design: redis-server's model, kept. A setting has one name, used alike as a config file
// directive (`port 7000`) and as a command-line flag (`--port 7000`); the file is read first
// and the flags after it, so a flag overrides the file, and a later line overrides an earlier
// one. The file's syntax is redis.conf's: one directive per line, `name arg...`, `#` starting a
// comment line, blank lines ignored, arguments split at blanks, double-quoted arguments with
// Redis's escapes (\n \r \t \b \a \\ \" \xHH), single-quoted ones with \' only (sdssplitargs():
// redis::split_args() of resp.hpp, the splitter of inline requests); a line with a NUL byte
// is refused.
//
// Two kinds of settings:
//   * the server's own (port, databases, maxclients, dir, dbfilename, rdb-skip-other-types, appendonly,
//     appendfsync, appendfilename, replicaof, requirepass, redis-exact, clock): what the process
//     needs before it starts, checked here, each a field of Config;
//   * every setting CONFIG SET accepts (maxmemory, maxmemory-policy, hz, client-output-buffer-
//     limit, ...): kept in order in Config::settings and applied by Server::configure() through
//     the command layer's own CONFIG SET, so the file accepts exactly what CONFIG SET accepts
//     and says so in the same words. A directive with several arguments is given to CONFIG SET
//     as one value, its arguments joined by spaces (`client-output-buffer-limit normal 0 0 0`).
// A directive neither knows is an error naming the file and line; nothing is started.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <expiring/append_log.hpp>

namespace expiring::server {

// One directive for CONFIG SET, and where it came from ("/etc/expiring.conf:12" or
// "command line"), for the error message.
struct Setting {
  std::string name;
  std::string value;
  std::string origin;
};

// The most databases a server may have (Redis allows up to INT_MAX; each is a store here).
constexpr int kMaxDatabases = 4096;

struct Config {
  int port = 6390;
  int databases = 16;  // Redis's `databases`: SELECT 0 to databases - 1
  int maxclients = 10000;
  bool redis_exact = false;
  // The stores' Options::full_pass_ticks (the guaranteed sweep of the active-expire cycle: a
  // pass over every volatile key in at most N slow ticks); unset: the library's default (16),
  // or 0 with redis-exact. 1 makes `expired` events prompt: within a cron period, budget
  // permitting.
  int active_expire_pass_ticks = -1;
  bool manual_clock = false;  // --clock manual: the store's time moves only by DEBUG SET-TIME/ADVANCE-TIME
  bool self_test = false;
  std::string dir = ".";
  std::string dbfilename = "dump.rdb";
  bool rdb_skip_other_types = false;  // RDB lists, sets, ...: skipped at load instead of refused
  bool appendonly = false;
  expiring::Fsync appendfsync = expiring::Fsync::everysec;
  std::string appendfilename = "appendonly";
  std::string replicaof_host;  // empty: a primary
  int replicaof_port = 0;
  std::string requirepass;     // empty: no password
  std::string config_file;     // the file read, if any (absolute path not required)
  std::vector<Setting> settings;  // CONFIG SET directives, in the order given
};

// What the command line asks for.
enum class CliAction { run, help, version, error };

struct ParseResult {
  CliAction action = CliAction::run;
  std::string error;  // with CliAction::error: the message, naming the file and line
};

// Reads the directives of `text` (the content of a file called `source`) into `cfg`.
// "" on success, else "<source>:<line>: <why>".
std::string parse_config_text(std::string_view text, const std::string& source, Config& cfg);

// The whole command line: [config-file] [--name value...]...; --help, --version.
ParseResult parse_command_line(int argc, const char* const* argv, Config& cfg);

// Checks what only the complete configuration can tell (file names in dir). "" if fine.
std::string validate(const Config& cfg);

// The text --help prints: usage, every option, the config file's syntax.
std::string usage_text();
// "expiring-server <version>".
std::string version_text();

}  // namespace expiring::server
