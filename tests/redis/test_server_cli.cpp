// tests/redis/test_server_cli.cpp: expiring-server as a program: --help, --version, a config
// file in redis.conf syntax (the port it listens on, what CONFIG GET then reports), flags that
// override the file, and files it refuses (an error naming the file and line, exit status 1,
// nothing started). The parser itself is also tested in-process, through the server library
// (server/config.hpp) that this target links. Servers run on loopback, are waited for at most
// 10 s and stopped by the harness (live::Process).
#include <string>
#include <vector>

#include <expiring/version.hpp>

#include "catch.hpp"
#include "config.hpp"
#include "redis_live.hpp"
#include "temp_dir.hpp"

using expiring::server::CliAction;
using expiring::server::Config;
using live::Argv;
using testdir::TempDir;

namespace {

// The binary run with stderr merged into stdout (run_program drops stderr), to completion.
live::RunResult run_server(const Argv& args) {
  Argv argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", EXPIRING_SERVER};
  argv.insert(argv.end(), args.begin(), args.end());
  return live::run_program(argv, "", 10000);
}

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
std::string config_get_reply(const std::string& name, const std::string& value) {
  return "*2\r\n" + bulk(name) + bulk(value);
}

// The port the server printed it listens on, or -1.
int listening_port(live::Process& p) {
  const std::optional<std::string> line = p.read_line(10000);
  const std::string prefix = "expiring-server: listening on 127.0.0.1:";
  if (!line || line->rfind(prefix, 0) != 0) return -1;
  return std::stoi(line->substr(prefix.size()));
}

bool port_open(int port) {
  const int fd = live::connect_loopback(port, 1000);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

Config parse_text(const std::string& text, std::string& error) {
  Config cfg;
  error = expiring::server::parse_config_text(text, "t.conf", cfg);
  return cfg;
}

}  // namespace

TEST_CASE("expiring-server: --version prints its version and --help every option and both exit 0", "[redis][live][server]") {
  const live::RunResult v = run_server({"--version"});
  CHECK(v.exit_code() == 0);
  CHECK(v.out == std::string("expiring-server ") + EXPIRING_VERSION_STRING + "\n");

  const live::RunResult h = run_server({"--help"});
  CHECK(h.exit_code() == 0);
  for (const char* opt : {"--port", "--maxclients", "--redis-exact", "--dir", "--dbfilename", "--appendonly",
                          "--appendfsync", "--appendfilename", "--replicaof", "--requirepass", "--self-test",
                          "maxmemory", "maxmemory-policy", "hz", "client-output-buffer-limit", "--help", "--version"}) {
    INFO(opt);
    CHECK(h.out.find(opt) != std::string::npos);
  }
  CHECK(run_server({"-v"}).out == v.out);
  CHECK(run_server({"--port", "0", "--help"}).exit_code() == 0);  // before anything else, as redis-server
}

TEST_CASE("expiring-server: a config file sets its port and the values CONFIG GET reports", "[redis][live][server]") {
  TempDir dir("expiring-server-conf");
  const int port = live::free_port();
  dir.write("expiring.conf",
            "# expiring-server test configuration\n"
            "\n"
            "port " + std::to_string(port) + "\n"
            "   maxmemory 100mb\n"
            "maxmemory-policy allkeys-lru\n"
            "requirepass \"pa ss\\x21\\\"word\"\n"
            "appendonly yes\n"
            "appendfsync always\n"
            "dir " + dir.path + "\n"
            "dbfilename 'my dump.snap'\n"
            "HZ 20\r\n"
            "client-output-buffer-limit normal 4mb 2mb 30\n"
            "maxclients 64\n");
  live::Process p({EXPIRING_SERVER, dir.file("expiring.conf")}, true);
  REQUIRE(listening_port(p) == port);
  live::Conn c(port);
  CHECK(c.raw({"PING"}) == "-NOAUTH Authentication required.\r\n");
  CHECK(c.raw({"AUTH", "pa ss!\"word"}) == "+OK\r\n");
  CHECK(c.raw({"CONFIG", "GET", "port"}) == config_get_reply("port", std::to_string(port)));
  CHECK(c.raw({"CONFIG", "GET", "maxmemory"}) == config_get_reply("maxmemory", "104857600"));
  CHECK(c.raw({"CONFIG", "GET", "maxmemory-policy"}) == config_get_reply("maxmemory-policy", "allkeys-lru"));
  CHECK(c.raw({"CONFIG", "GET", "hz"}) == config_get_reply("hz", "20"));
  CHECK(c.raw({"CONFIG", "GET", "appendonly"}) == config_get_reply("appendonly", "yes"));
  CHECK(c.raw({"CONFIG", "GET", "appendfsync"}) == config_get_reply("appendfsync", "always"));
  CHECK(c.raw({"CONFIG", "GET", "dir"}) == config_get_reply("dir", dir.path));
  CHECK(c.raw({"CONFIG", "GET", "dbfilename"}) == config_get_reply("dbfilename", "my dump.snap"));
  CHECK(c.raw({"CONFIG", "GET", "maxclients"}) == config_get_reply("maxclients", "64"));
  CHECK(c.raw({"CONFIG", "GET", "client-output-buffer-limit"}) ==
        config_get_reply("client-output-buffer-limit", "normal 4194304 2097152 30 slave 268435456 67108864 60 "
                                                       "pubsub 33554432 8388608 60"));
  CHECK(c.raw({"SET", "k", "v"}) == "+OK\r\n");
  CHECK(c.raw({"SAVE"}) == "+OK\r\n");
  const std::vector<std::string> files = dir.files();
  CHECK(std::find(files.begin(), files.end(), "my dump.snap") != files.end());
  CHECK(std::find(files.begin(), files.end(), "appendonly.manifest") != files.end());
}

TEST_CASE("expiring-server: flags after the config file override it", "[redis][live][server]") {
  TempDir dir("expiring-server-conf");
  const int file_port = live::free_port();
  dir.write("e.conf", "port " + std::to_string(file_port) + "\nmaxmemory 1mb\nhz 15\n");
  live::Process p({EXPIRING_SERVER, dir.file("e.conf"), "--port", "0", "--maxmemory", "2mb"}, true);
  const int port = listening_port(p);
  REQUIRE(port > 0);
  CHECK(port != file_port);
  live::Conn c(port);
  CHECK(c.raw({"CONFIG", "GET", "maxmemory"}) == config_get_reply("maxmemory", "2097152"));
  CHECK(c.raw({"CONFIG", "GET", "hz"}) == config_get_reply("hz", "15"));  // from the file
}

TEST_CASE("expiring-server: a bad config file is refused with its name and line and exit 1 and nothing started",
          "[redis][live][server]") {
  TempDir dir("expiring-server-conf");
  const int port = live::free_port();
  const std::string head = "port " + std::to_string(port) + "\nappendonly yes\ndir " + dir.path + "\n";
  struct Bad {
    const char* what;
    std::string body;  // after `head` (3 lines)
    std::string expect;
  };
  const std::vector<Bad> cases{
      {"an unknown directive", "# a comment\nno-such-directive 1\n", ":5: "},
      {"a port out of range", "port 70000\n", ":4: "},
      {"a port that is not a number", "\nport seven\n", ":5: "},
      {"a bad memory value", "maxmemory lots\n", ":4: "},
      {"a bad policy", "maxmemory-policy sometimes\n", ":4: "},
      {"appendonly neither yes nor no", "appendonly maybe\n", ":4: "},
      {"unbalanced quotes", "requirepass \"open\n", ":4: "},
      {"a closing quote not followed by a blank", "requirepass \"a\"b\n", ":4: "},
      {"a directive without its argument", "maxclients\n", ":4: "},
      {"replicaof without a port", "replicaof 127.0.0.1\n", ":4: "},
      {"a NUL byte in a line", std::string("requirepass a\0b\n", 16), ":4: "},
  };
  for (const Bad& b : cases) {
    INFO(b.what);
    dir.write("bad.conf", head + b.body);
    const live::RunResult r = run_server({dir.file("bad.conf")});
    CHECK(r.exit_code() == 1);
    CHECK(r.out.find(dir.file("bad.conf") + b.expect) != std::string::npos);
    CHECK(r.out.find("listening") == std::string::npos);
    CHECK_FALSE(port_open(port));
    CHECK(dir.files() == std::vector<std::string>{"bad.conf"});  // no log, no snapshot
  }
  const live::RunResult missing = run_server({dir.file("missing.conf")});
  CHECK(missing.exit_code() == 1);
  CHECK(missing.out.find(dir.file("missing.conf")) != std::string::npos);
  const live::RunResult flag = run_server({"--port", "0", "--no-such-setting", "1"});
  CHECK(flag.exit_code() == 1);
  CHECK(flag.out.find("no-such-setting") != std::string::npos);
}

TEST_CASE("server config: arguments are split as redis.conf splits them", "[redis][live][server]") {
  std::vector<std::string> a;
  REQUIRE(expiring::redis::split_args("  name  one\ttwo  ", a));
  CHECK(a == std::vector<std::string>{"name", "one", "two"});
  REQUIRE(expiring::redis::split_args(R"(x "a b" "\x41\n\"\\" 'it\'s' "")", a));
  CHECK(a == std::vector<std::string>{"x", "a b", "A\n\"\\", "it's", ""});
  CHECK_FALSE(expiring::redis::split_args(R"(x "open)", a));
  CHECK_FALSE(expiring::redis::split_args(R"(x "a"b)", a));
  CHECK_FALSE(expiring::redis::split_args("x 'open", a));
}

TEST_CASE("server config: directives fill the configuration and later ones win",
          "[redis][live][server]") {
  std::string err;
  Config cfg = parse_text("port 7000\r\n# c\n\nMAXCLIENTS 5\nappendonly YES\nappendfsync no\nport 7001\n"
                          "maxmemory 10mb\nclient-output-buffer-limit normal 0 0 0\nreplicaof localhost 7002\n"
                          "redis-exact yes\nclock MANUAL\n",
                          err);
  CHECK(err.empty());
  CHECK(cfg.manual_clock);
  CHECK(cfg.port == 7001);
  CHECK(cfg.maxclients == 5);
  CHECK(cfg.appendonly);
  CHECK(cfg.appendfsync == expiring::Fsync::no);
  CHECK(cfg.redis_exact);
  CHECK(cfg.replicaof_host == "localhost");
  CHECK(cfg.replicaof_port == 7002);
  REQUIRE(cfg.settings.size() == 2);
  CHECK(cfg.settings[0].name == "maxmemory");
  CHECK(cfg.settings[0].value == "10mb");
  CHECK(cfg.settings[0].origin == "t.conf:8");
  CHECK(cfg.settings[1].value == "normal 0 0 0");

  parse_text("port 1\nport x\n", err);
  CHECK(err.rfind("t.conf:2: 'port x': ", 0) == 0);
  parse_text("clock fast\n", err);
  CHECK(err == "t.conf:1: 'clock fast': argument must be 'system' or 'manual'");
  parse_text("self-test\n", err);  // a command-line switch only
  CHECK(err.rfind("t.conf:1: ", 0) == 0);

  const char* argv[] = {"expiring-server", "--port", "0", "--redis-exact", "--requirepass", "--odd", "--hz", "20"};
  Config c2;
  const expiring::server::ParseResult r = expiring::server::parse_command_line(8, argv, c2);
  CHECK(r.action == CliAction::run);
  CHECK(c2.port == 0);
  CHECK(c2.redis_exact);
  CHECK(c2.requirepass == "--odd");  // a flag of the server takes its argument, whatever it looks like
  REQUIRE(c2.settings.size() == 1);
  CHECK(c2.settings[0].origin == "command line");

  const char* legacy[] = {"expiring-server", "6391"};  // the old `resp_server 6391` form
  Config c3;
  CHECK(expiring::server::parse_command_line(2, legacy, c3).action == CliAction::run);
  CHECK(c3.port == 6391);
  const char* bad[] = {"expiring-server", "--port"};
  Config c4;
  CHECK(expiring::server::parse_command_line(2, bad, c4).action == CliAction::error);
}

TEST_CASE("expiring-server: the sample server/expiring.conf is valid and states the defaults", "[redis][live][server]") {
  TempDir dir("expiring-server-conf");
  live::Process with_file({EXPIRING_SERVER, EXPIRING_SAMPLE_CONF, "--port", "0", "--dir", dir.path}, true);
  live::Process without({EXPIRING_SERVER, "--port", "0", "--dir", dir.path}, true);
  const int a = listening_port(with_file);
  const int b = listening_port(without);
  REQUIRE(a > 0);
  REQUIRE(b > 0);
  live::Conn ca(a), cb(b);
  for (const char* name : {"maxclients", "dir", "dbfilename", "appendonly", "appendfsync", "appendfilename", "requirepass",
                           "maxmemory", "maxmemory-policy", "maxmemory-samples", "hz", "active-expire-effort",
                           "proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit",
                           "repl-timeout", "repl-ping-replica-period"}) {
    INFO(name);
    CHECK(ca.raw({"CONFIG", "GET", name}) == cb.raw({"CONFIG", "GET", name}));
  }
  CHECK(ca.raw({"INFO", "replication"}).find("role:master") != std::string::npos);
}
