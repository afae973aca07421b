// tests/robustness/test_server_files.cpp: expiring-server against hostile file names and
// files (issue 30, items 3 and 4; goal H3: no file outside --dir is read or written, and a
// FIFO, device or symlink is refused at startup with an error within a second).
//
//   * --dbfilename with a path and --appendfilename with a path are refused at startup, as
//     Redis does ("dbfilename can't be a path, just a filename"), whether the path exists or
//     not: the old server read ../x, and created sub/aof.* and then refused to reopen them.
//   * A FIFO as dump.rdb or as a log file: the old server blocked in open() and, with
//     SIGTERM blocked for its signalfd, could only be killed.
// Each start is bounded: a server still running after the deadline is killed and the test
// fails.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "server_support.hpp"
#include "temp_dir.hpp"

namespace {

using testdir::TempDir;

struct Start {
  bool exited = false;  // false: still running at the deadline (then killed)
  int code = -1;        // the exit code when it exited
  std::string output;   // stdout and stderr
  double seconds = 0;
};

// Starts the server with `args` (after the binary) and waits until it exits or `deadline_ms`
// passes; a server still running then is killed. Collects stdout and stderr together.
Start start_server(const std::vector<std::string>& args, int deadline_ms) {
  std::vector<std::string> argv{EXPIRING_SERVER};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (std::string& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(cargs[0], cargs.data());
    ::_exit(127);
  }
  ::close(p[1]);
  Start s;
  const auto deadline = t0 + std::chrono::milliseconds(deadline_ms);
  bool open = true;
  while (open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pf{p[0], POLLIN, 0};
    if (::poll(&pf, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n <= 0) {
      open = false;
    } else {
      s.output.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(p[0]);
  int status = 0;
  for (;;) {  // the output closed (the server exited) or the deadline passed
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      s.exited = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    ::usleep(10000);
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (s.exited && WIFEXITED(status)) s.code = WEXITSTATUS(status);
  return s;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("server files: --dbfilename and --appendfilename with a path are refused at startup", "[server][files]") {
  TempDir top("expiring-files");
  const std::string dir = top.file("data");
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  REQUIRE(::mkdir(top.file("data/sub").c_str(), 0755) == 0);
  top.write("x", "a file outside --dir");  // what ../x names
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--dbfilename", "../x"}, "dbfilename can't be a path, just a filename"},
      {{"--dbfilename", "/etc/passwd"}, "dbfilename can't be a path, just a filename"},
      {{"--dbfilename", "sub/dump.snap"}, "dbfilename can't be a path, just a filename"},
      {{"--appendonly", "yes", "--appendfilename", "sub/aof"}, "appendfilename can't be a path, just a filename"},
      {{"--appendonly", "no", "--appendfilename", "../aof"}, "appendfilename can't be a path, just a filename"},
      {{"--appendonly", "yes", "--appendfilename", ".."}, "appendfilename"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"--port", "0", "--dir", dir};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(c.args);
    const Start s = start_server(args, 3000);
    INFO(s.output);
    CHECK(s.exited);  // the old server started and listened
    CHECK(s.code != 0);
    CHECK(s.seconds < 1.0);
    CHECK(has(s.output, c.message));
  }
  // Nothing was created in sub/ or next to --dir.
  CHECK(std::filesystem::is_empty(top.file("data/sub")));
  CHECK(top.read("x") == "a file outside --dir");
}

TEST_CASE("server files: a FIFO as dump.rdb or as a log file is refused at startup within a second",
          "[server][files]") {
  SECTION("dump.rdb") {
    TempDir dir("expiring-files");
    REQUIRE(::mkfifo(dir.file("dump.rdb").c_str(), 0644) == 0);
    const Start s = start_server({"--port", "0", "--dir", dir.path}, 3000);
    INFO(s.output);
    REQUIRE(s.exited);  // the old server blocked in open(), SIGTERM blocked
    CHECK(s.code != 0);
    CHECK(s.seconds < 1.0);
    CHECK(has(s.output, "dump.rdb"));
    CHECK(has(s.output, "not a regular file"));
  }
  SECTION("a log file") {
    TempDir dir("expiring-files");
    {
      // A log made by the server itself, then its incr file replaced by a FIFO.
      const Start first = start_server({"--port", "0", "--dir", dir.path, "--appendonly", "yes"}, 1500);
      INFO(first.output);
      REQUIRE(has(first.output, "listening"));
    }
    REQUIRE(::unlink(dir.file("appendonly.1.incr.log").c_str()) == 0);
    REQUIRE(::mkfifo(dir.file("appendonly.1.incr.log").c_str(), 0644) == 0);
    const Start s = start_server({"--port", "0", "--dir", dir.path, "--appendonly", "yes"}, 3000);
    INFO(s.output);
    REQUIRE(s.exited);
    CHECK(s.code != 0);
    CHECK(s.seconds < 1.0);
    CHECK(has(s.output, "appendonly.1.incr.log"));
    CHECK(has(s.output, "not a regular file"));
  }
}
