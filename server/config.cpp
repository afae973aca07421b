// server/config.cpp: the config file reader and the command-line parser (config.hpp says how).
#include "config.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <expiring/redis/resp.hpp>
#include <expiring/version.hpp>

namespace expiring::server {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
std::string lowercase(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = lower(c);
  return r;
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// A decimal integer in [lo, hi], the whole argument.
bool parse_int(const std::string& s, long long lo, long long hi, int& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size() || v < lo || v > hi) return false;
  out = static_cast<int>(v);
  return true;
}
bool parse_yes_no(const std::string& s, bool& out) {
  const std::string v = lowercase(s);
  if (v == "yes") {
    out = true;
  } else if (v == "no") {
    out = false;
  } else {
    return false;
  }
  return true;
}

std::string quote_directive(const std::string& name, const std::vector<std::string>& args) {
  std::string s = name;
  for (const std::string& a : args) s += " " + a;
  return s;
}

// Applies one directive to `cfg`; "" on success, else why not (without the origin).
std::string apply(const std::string& raw_name, const std::vector<std::string>& args, const std::string& origin,
                  Config& cfg) {
  const std::string name = lowercase(raw_name);
  auto want = [&](std::size_t n) -> std::string {
    if (args.size() == n) return "";
    return "wrong number of arguments (" + std::to_string(n) + " expected)";
  };
  if (name == "port") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_int(args[0], 0, 65535, cfg.port)) return "invalid port (0-65535)";
  } else if (name == "databases") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_int(args[0], 1, kMaxDatabases, cfg.databases)) {
      return "invalid databases (1-" + std::to_string(kMaxDatabases) + ")";
    }
  } else if (name == "active-expire-pass-ticks") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_int(args[0], 0, 1000000, cfg.active_expire_pass_ticks)) return "invalid active-expire-pass-ticks (0-1000000)";
  } else if (name == "maxclients") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_int(args[0], 1, 1000000000, cfg.maxclients)) return "invalid maxclients (at least 1)";
  } else if (name == "redis-exact") {
    if (args.empty()) {
      cfg.redis_exact = true;  // the flag form: --redis-exact
    } else if (args.size() != 1 || !parse_yes_no(args[0], cfg.redis_exact)) {
      return "argument must be 'yes' or 'no'";
    }
  } else if (name == "clock") {
    if (auto e = want(1); !e.empty()) return e;
    const std::string v = lowercase(args[0]);
    if (v != "system" && v != "manual") return "argument must be 'system' or 'manual'";
    cfg.manual_clock = v == "manual";
  } else if (name == "dir") {
    if (auto e = want(1); !e.empty()) return e;
    if (args[0].empty()) return "dir must not be empty";
    cfg.dir = args[0];
  } else if (name == "dbfilename") {
    if (auto e = want(1); !e.empty()) return e;
    cfg.dbfilename = args[0];
  } else if (name == "rdb-skip-other-types") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_yes_no(args[0], cfg.rdb_skip_other_types)) return "argument must be 'yes' or 'no'";
  } else if (name == "appendfilename") {
    if (auto e = want(1); !e.empty()) return e;
    cfg.appendfilename = args[0];
  } else if (name == "appendonly") {
    if (auto e = want(1); !e.empty()) return e;
    if (!parse_yes_no(args[0], cfg.appendonly)) return "argument must be 'yes' or 'no'";
  } else if (name == "appendfsync") {
    if (auto e = want(1); !e.empty()) return e;
    const std::string v = lowercase(args[0]);
    if (v == "always") {
      cfg.appendfsync = expiring::Fsync::always;
    } else if (v == "everysec") {
      cfg.appendfsync = expiring::Fsync::everysec;
    } else if (v == "no") {
      cfg.appendfsync = expiring::Fsync::no;
    } else {
      return "argument must be 'always', 'everysec' or 'no'";
    }
  } else if (name == "replicaof" || name == "slaveof") {
    if (auto e = want(2); !e.empty()) return e;
    if (lowercase(args[0]) == "no" && lowercase(args[1]) == "one") {
      cfg.replicaof_host.clear();
      cfg.replicaof_port = 0;
    } else {
      if (!parse_int(args[1], 1, 65535, cfg.replicaof_port)) return "invalid master port";
      cfg.replicaof_host = args[0];
    }
  } else if (name == "requirepass") {
    if (auto e = want(1); !e.empty()) return e;
    cfg.requirepass = args[0];
  } else if (name == "self-test" && origin == "command line") {
    if (!args.empty()) return "takes no argument";
    cfg.self_test = true;
  } else {
    // For CONFIG SET, which decides (Server::configure()).
    if (args.empty()) return "wrong number of arguments";
    std::string value;
    for (std::size_t i = 0; i < args.size(); ++i) value += (i ? " " : "") + args[i];
    cfg.settings.push_back({name, value, origin});
  }
  return "";
}

bool read_file(const std::string& path, std::string& out, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    why = "is a directory";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    why = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The options the server knows and how many arguments each takes (-1: 0 or 1).
int own_arity(const std::string& name) {
  if (name == "replicaof" || name == "slaveof") return 2;
  if (name == "self-test") return 0;
  if (name == "redis-exact") return -1;
  if (name == "port" || name == "databases" || name == "active-expire-pass-ticks" || name == "maxclients" || name == "dir" || name == "dbfilename" || name == "appendonly" ||
      name == "rdb-skip-other-types" || name == "clock" ||
      name == "appendfsync" || name == "appendfilename" || name == "requirepass") {
    return 1;
  }
  return -2;  // not the server's own: arguments up to the next --option
}

}  // namespace

std::string parse_config_text(std::string_view text, const std::string& source, Config& cfg) {
  std::size_t lineno = 0;
  std::size_t pos = 0;
  std::vector<std::string> args;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineno;
    // Trim blanks (a CRLF file's '\r' included), skip comments and empty lines.
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = source + ":" + std::to_string(lineno);
    // A NUL would end the line for redis-server (a C string): refused rather than guessed at.
    if (line.find('\0') != std::string_view::npos) return where + ": a NUL byte in the line";
    if (!redis::split_args(line, args)) return where + ": unbalanced quotes in '" + std::string(line) + "'";
    if (args.empty()) continue;
    const std::string name = args.front();
    args.erase(args.begin());
    if (const std::string why = apply(name, args, where, cfg); !why.empty()) {
      return where + ": '" + std::string(line) + "': " + why;
    }
  }
  return "";
}

ParseResult parse_command_line(int argc, const char* const* argv, Config& cfg) {
  ParseResult r;
  std::vector<std::string> a(argv + 1, argv + argc);
  for (const std::string& s : a) {
    if (s == "--help" || s == "-h") {
      r.action = CliAction::help;
      return r;
    }
    if (s == "--version" || s == "-v") {
      r.action = CliAction::version;
      return r;
    }
  }
  auto fail = [&](std::string why) {
    r.action = CliAction::error;
    r.error = std::move(why);
    return r;
  };
  // The config file first: a positional argument that names a file (or is not a number; a
  // number that names no file is the port, the old `resp_server 6390` form).
  std::vector<std::size_t> positional;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& s = a[i];
    if (s.size() > 2 && s.compare(0, 2, "--") == 0) {
      // Skip the option's arguments.
      const int arity = own_arity(lowercase(s.substr(2)));
      if (arity >= 0) {
        i += static_cast<std::size_t>(arity);
      } else if (arity == -1) {
        if (i + 1 < a.size() && (lowercase(a[i + 1]) == "yes" || lowercase(a[i + 1]) == "no")) ++i;
      } else {
        while (i + 1 < a.size() && a[i + 1].compare(0, 2, "--") != 0) ++i;
      }
      continue;
    }
    if (!s.empty() && s[0] == '-' && s != "-") return fail("command line: unknown option '" + s + "'");
    positional.push_back(i);
  }
  bool have_file = false;
  for (std::size_t p : positional) {
    const std::string& s = a[p];
    if (all_digits(s) && !file_exists(s)) continue;  // a port, below
    if (have_file) return fail("command line: more than one config file ('" + cfg.config_file + "', '" + s + "')");
    have_file = true;
    cfg.config_file = s;
    std::string text, why;
    if (!read_file(s, text, why)) return fail(s + ": " + why);
    if (std::string e = parse_config_text(text, s, cfg); !e.empty()) return fail(e);
  }
  // Then the flags, in order: they override the file.
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& s = a[i];
    std::vector<std::string> args;
    std::string name;
    if (s.size() > 2 && s.compare(0, 2, "--") == 0) {
      name = lowercase(s.substr(2));
      const int arity = own_arity(name);
      if (arity >= 0) {
        if (i + static_cast<std::size_t>(arity) >= a.size()) {
          return fail("command line: '" + s + "' needs " + std::to_string(arity) + " argument" +
                      (arity == 1 ? "" : "s"));
        }
        for (int k = 0; k < arity; ++k) args.push_back(a[++i]);
      } else if (arity == -1) {
        if (i + 1 < a.size() && (lowercase(a[i + 1]) == "yes" || lowercase(a[i + 1]) == "no")) args.push_back(a[++i]);
      } else {
        while (i + 1 < a.size() && a[i + 1].compare(0, 2, "--") != 0) args.push_back(a[++i]);
      }
    } else if (all_digits(s) && !file_exists(s)) {
      name = "port";
      args.push_back(s);
    } else {
      continue;  // the config file
    }
    if (const std::string why = apply(name, args, "command line", cfg); !why.empty()) {
      return fail("command line: '--" + quote_directive(name, args) + "': " + why);
    }
  }
  return r;
}

std::string validate(const Config& cfg) {
  // The files live in dir, and only there: a name with a path is refused at startup, as
  // Redis does, whether or not the path exists (appendonly no included: CONFIG GET would show
  // it, and a later start with appendonly yes would use it).
  const std::string& db = cfg.dbfilename;
  std::string why;
  if (db.find('/') != std::string::npos) {
    why = "dbfilename can't be a path, just a filename";
  } else if (db.empty() || db == "." || db == "..") {
    why = "not a file name";
  } else {
    for (const char c : db) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) why = "a control character in a file name";
    }
  }
  if (!why.empty()) return "--dbfilename '" + db + "': " + why;
  if (cfg.appendfilename.find('/') != std::string::npos) {
    return "--appendfilename '" + cfg.appendfilename + "': appendfilename can't be a path, just a filename";
  }
  if (const std::string w = expiring::log_name_problem(cfg.appendfilename); !w.empty()) {
    return "--appendfilename '" + cfg.appendfilename + "' is refused: " + w;
  }
  return "";
}

std::string usage_text() {
  return "Usage: expiring-server [/path/to/expiring.conf] [--option value ...]\n"
         "       expiring-server --help | --version\n"
         "\n"
         "A Redis-compatible server (RESP2 on 127.0.0.1) over expiring's ExpiringStore.\n"
         "The config file has redis.conf's syntax: one directive per line ('port 7000'),\n"
         "'#' comments, double-quoted arguments with Redis's escapes. Flags after it\n"
         "override it; every directive is also a flag ('--port 7000').\n"
         "\n"
         "Options (default in brackets):\n"
         "  --port N                      TCP port on 127.0.0.1; 0 picks a free one [6390]\n"
         "  --databases N                 databases, SELECT 0 to N-1 (1-4096) [16]\n"
         "  --maxclients N                most clients at once (lowered to fit 'ulimit -n') [10000]\n"
         "  --redis-exact [yes|no]        Redis 7's exact active-expire cycle [no]\n"
         "  --active-expire-pass-ticks N  every volatile key visited within N cron periods (0: Redis's\n"
         "                                sampling only; 1: prompt 'expired' events) [16; 0 with redis-exact]\n"
         "  --clock system|manual         the keys' time: the system's, or a manual one that only\n"
         "                                DEBUG SET-TIME / ADVANCE-TIME move (for tests) [system]\n"
         "  --dir D                       directory of the snapshot and the append-only log [.]\n"
         "  --dbfilename F                snapshot file name in dir, Redis's RDB format [dump.rdb]\n"
         "  --rdb-skip-other-types yes|no skip an RDB's lists, sets, sorted sets and streams at load\n"
         "                                instead of refusing to start [no]\n"
         "  --appendonly yes|no           keep an append-only log, replayed at start [no]\n"
         "  --appendfsync always|everysec|no   when the log is fsynced [everysec]\n"
         "  --appendfilename NAME         the log's base name in dir [appendonly]\n"
         "  --replicaof HOST PORT         start as a replica of another expiring-server\n"
         "  --requirepass PASSWORD        clients must AUTH first\n"
         "  --self-test                   serve on a free port, check it from a client thread, exit\n"
         "  --<setting> VALUE...          any setting CONFIG SET accepts: maxmemory,\n"
         "                                maxmemory-policy, maxmemory-samples, hz,\n"
         "                                active-expire-effort, lfu-log-factor, lfu-decay-time,\n"
         "                                proto-max-bulk-len, client-query-buffer-limit,\n"
         "                                client-output-buffer-limit, repl-timeout,\n"
         "                                repl-ping-replica-period\n"
         "  -h, --help                    this text\n"
         "  -v, --version                 the version\n"
         "\n"
         "Examples:\n"
         "  expiring-server /etc/expiring.conf\n"
         "  expiring-server --port 7000 --maxmemory 100mb --appendonly yes --dir /var/lib/expiring\n"
         "  expiring-server /etc/expiring.conf --port 7001      (the flag overrides the file)\n";
}

std::string version_text() { return std::string("expiring-server ") + EXPIRING_VERSION_STRING + "\n"; }

}  // namespace expiring::server
