// tests/robustness/test_files.cpp: hostile files for the append-only log and the snapshot
// loader (issue 30, items 3 and 4), at the library level: every user of AppendLog::open() and
// load(path) is protected, not only the server.
//
//   * A manifest is validated whole before any file is read or removed: exact names (the ones
//     the log makes), no NUL, no duplicate, a base then incr files in increasing order, and
//     (version 2) a CRC-32C line. A NUL in a name used to make open() unlink the real file.
//   * A FIFO, a device or a symbolic link in place of a log file, the manifest or a snapshot
//     is refused at once (a FIFO used to block open() forever, /dev/zero was read without
//     end, a symlink out of the directory was appended to).
//   * A bad AppendLogOptions::name is refused before anything is created.
// Opens that could hang on the old code run in a forked child with a deadline: a test fails,
// it never hangs.
#include <expiring/append_log.hpp>
#include <expiring/expiring.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "temp_dir.hpp"

namespace {

using Store = expiring::ExpiringStore<std::string, std::string, expiring::Hash<std::string>, std::equal_to<>,
                                      expiring::ManualClock&>;
using Log = expiring::AppendLog<Store>;
using expiring::Errc;
using testdir::TempDir;
constexpr std::int64_t kT0 = 1'000'000;

expiring::AppendLogOptions always() {
  expiring::AppendLogOptions o;
  o.fsync = expiring::Fsync::always;
  return o;
}

// A log in `dir` holding k=v (base 1, incr 1); with `second_incr`, a rewrite was started and
// not finished, so the manifest names incr 1 and incr 2, and incr 2 holds k2=v2.
void make_log(const TempDir& dir, bool second_incr = false) {
  expiring::ManualClock clock{kT0};
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  REQUIRE(r.ok());
  REQUIRE(s.set("k", "v").ok());
  if (second_incr) {
    REQUIRE((*r)->start_rewrite());
    REQUIRE(s.set("k2", "v2").ok());
  }
}

// What a child reported, and whether it did within the deadline.
struct ChildOutcome {
  bool finished = false;  // false: killed at the deadline (it hung or read without end)
  std::string text;
  double seconds = 0;
};

// Runs `f` in a forked child and reads its result through a pipe; the child is killed with
// SIGKILL if it has not answered within `deadline_ms`. For opens that block (a FIFO) or read
// without end (/dev/zero) on code without the checks: the test fails instead of hanging.
ChildOutcome in_child(const std::function<std::string()>& f, int deadline_ms) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string out;
    try {
      out = f();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    out.push_back('\n');
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  ChildOutcome o;
  const auto deadline = t0 + std::chrono::milliseconds(deadline_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pf{p[0], POLLIN, 0};
    if (::poll(&pf, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n <= 0) break;
    o.text.append(buf, static_cast<std::size_t>(n));
    if (o.text.back() == '\n') {
      o.finished = true;
      o.text.pop_back();
      break;
    }
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(p[0]);
  if (!o.finished) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return o;
}

// open() of the log in `dir`, in a child: "ok" or "<errc>: <message>".
std::string open_in_child_text(const std::string& dir) {
  expiring::ManualClock clock{kT0};
  Store s(clock);
  auto r = Log::open(s, dir, always());
  if (r.ok()) return "ok";
  return std::string(expiring::to_string(r.code())) + ": " + r.error().message;
}

std::string refused_text(Errc code) { return std::string(expiring::to_string(code)) + ": "; }

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// Every file of the directory with its bytes: what "nothing was removed or written" compares.
std::vector<std::pair<std::string, std::string>> contents(const TempDir& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& f : dir.files()) out.emplace_back(f, dir.read(f));
  return out;
}

}  // namespace

TEST_CASE("files: a NUL in a manifest name is refused before anything is read or removed", "[files][aof]") {
  TempDir dir;
  make_log(dir);
  // The name up to the NUL is the real incr file: the old code opened it, then compared the
  // whole name in remove_strays() and unlinked the real file.
  dir.write("appendonly.manifest", std::string("expiring-aof 1\nbase appendonly.1.base.log\nincr appendonly.1.incr.log") +
                                       '\0' + "x\n");
  const auto before = contents(dir);
  expiring::ManualClock clock{kT0};
  Store s(clock);
  REQUIRE(s.set("mine", "x").ok());
  auto r = Log::open(s, dir.path, always());
  CHECK(r == Errc::corrupt_file);
  INFO(r.error().message);
  CHECK(r.error().message.find("manifest") != std::string::npos);
  CHECK(contents(dir) == before);  // appendonly.1.incr.log is still there, unchanged
  CHECK(s.size() == 1);
}

TEST_CASE("files: a manifest naming a file twice, out of order, or by a name the log does not make is refused",
          "[files][aof]") {
  TempDir dir;
  make_log(dir, /*second_incr=*/true);
  const std::string head = "expiring-aof 1\nbase appendonly.1.base.log\n";
  const std::vector<std::string> bad = {
      // The same incr file 2000 times used to replay it 2000 times.
      [&] {
        std::string m = head;
        for (int i = 0; i < 2000; ++i) m += "incr appendonly.1.incr.log\n";
        return m;
      }(),
      head + "incr appendonly.1.incr.log\nincr appendonly.1.incr.log\n",
      head + "incr appendonly.2.incr.log\nincr appendonly.1.incr.log\n",   // decreasing
      "expiring-aof 1\nbase appendonly.2.base.log\nincr appendonly.1.incr.log\n",  // incr before its base
      head + "incr appendonly.01.incr.log\n",                                // not a name the log makes
      head + "incr appendonly.1.incr.log \n",
      head + "incr other.1.incr.log\n",
      head + "incr appendonly.1.incr.log\nbase appendonly.1.base.log\n",
      head + "incr appendonly.1.incr.log\x01\n",
  };
  // The files some of them name, so that only the validation can refuse them.
  dir.write("appendonly.2.base.log", dir.read("appendonly.1.base.log"));
  dir.write("appendonly.01.incr.log", dir.read("appendonly.1.incr.log"));
  dir.write("other.1.incr.log", dir.read("appendonly.1.incr.log"));
  for (const std::string& m : bad) {
    CAPTURE(m.substr(0, 120));
    dir.write("appendonly.manifest", m);
    const auto before = contents(dir);
    expiring::ManualClock clock{kT0};
    Store s(clock);
    auto r = Log::open(s, dir.path, always());
    INFO(r.error().message);
    CHECK(r == Errc::corrupt_file);
    CHECK(contents(dir) == before);
  }
}

TEST_CASE("files: the manifest carries a CRC-32C, and a changed manifest is refused", "[files][aof]") {
  TempDir dir;
  make_log(dir, /*second_incr=*/true);
  const std::string m = dir.read("appendonly.manifest");
  INFO(m);
  REQUIRE(m.find("crc32c ") != std::string::npos);
  // Dropping the last incr file loses k2 without a trace unless the manifest is checked.
  const std::string line = "incr appendonly.2.incr.log\n";
  const std::size_t at = m.find(line);
  REQUIRE(at != std::string::npos);
  dir.write("appendonly.manifest", m.substr(0, at) + m.substr(at + line.size()));
  const auto before = contents(dir);
  expiring::ManualClock clock{kT0};
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  INFO(r.error().message);
  CHECK(r == Errc::corrupt_file);
  CHECK(r.error().message.find("checksum") != std::string::npos);
  CHECK(contents(dir) == before);
  // The unchanged manifest opens with both keys.
  dir.write("appendonly.manifest", m);
  auto ok = Log::open(s, dir.path, always());
  REQUIRE(ok.ok());
  CHECK(s.size() == 2);
}

TEST_CASE("files: a version-1 manifest (no checksum) still opens, and the next switch writes version 2",
          "[files][aof]") {
  TempDir dir;
  make_log(dir);
  dir.write("appendonly.manifest", "expiring-aof 1\nbase appendonly.1.base.log\nincr appendonly.1.incr.log\n");
  expiring::ManualClock clock{kT0};
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  INFO(r.error().message);
  REQUIRE(r.ok());
  CHECK(s.size() == 1);
  CHECK(dir.read("appendonly.manifest").find("crc32c") == std::string::npos);  // left as it was
  REQUIRE(s.set("k2", "v2").ok());
  REQUIRE((*r)->rewrite());
  const std::string m = dir.read("appendonly.manifest");
  CHECK(starts_with(m, "expiring-aof 2\n"));
  CHECK(m.find("crc32c ") != std::string::npos);
  (*r).reset();
  auto again = Log::open(s, dir.path, always());
  REQUIRE(again.ok());
  CHECK(s.size() == 2);
}

TEST_CASE("files: strays are only the log's exact names, and a look-alike is left alone", "[files][aof]") {
  TempDir dir;
  make_log(dir);
  dir.write("appendonly.01.incr.log", "not a name the log makes");
  dir.write("appendonly.7.incr.log", "a name the log makes, not in the manifest");
  {
    expiring::ManualClock clock{kT0};
    Store s(clock);
    auto r = Log::open(s, dir.path, always());
    REQUIRE(r.ok());
  }
  const auto files = dir.files();
  CHECK(std::find(files.begin(), files.end(), "appendonly.01.incr.log") != files.end());
  CHECK(std::find(files.begin(), files.end(), "appendonly.7.incr.log") == files.end());
}

TEST_CASE("files: a bad log name is refused before anything is created", "[files][aof]") {
  const std::vector<std::string> bad = {"", "sub/aof", "/tmp/aof", "..", ".", "a..b", std::string("a\0b", 3),
                                        "tab\tname", std::string(300, 'a')};
  for (const std::string& name : bad) {
    CAPTURE(name);
    TempDir dir;
    ::mkdir(dir.file("sub").c_str(), 0755);  // so "sub/aof" could be created
    expiring::ManualClock clock{kT0};
    Store s(clock);
    expiring::AppendLogOptions o = always();
    o.name = name;
    auto r = Log::open(s, dir.path, o);
    INFO(r.error().message);
    CHECK(r == Errc::out_of_range);
    CHECK(dir.files() == std::vector<std::string>{"sub"});
    CHECK(std::filesystem::is_empty(dir.file("sub")));
  }
}

TEST_CASE("files: a manifest or a base that is /dev/zero is refused at once", "[files][aof]") {
  for (const std::string target : {"appendonly.manifest", "appendonly.1.base.log"}) {
    CAPTURE(target);
    TempDir dir;
    make_log(dir);
    ::unlink(dir.file(target).c_str());
    REQUIRE(::symlink("/dev/zero", dir.file(target).c_str()) == 0);
    const ChildOutcome o = in_child([&] { return open_in_child_text(dir.path); }, 1500);
    INFO(o.text);
    REQUIRE(o.finished);  // the old code read /dev/zero until it was killed
    CHECK(o.seconds < 1.0);
    CHECK(starts_with(o.text, refused_text(Errc::io_error)));
    CHECK(o.text.find(target) != std::string::npos);
  }
}

TEST_CASE("files: a FIFO as a log file or the manifest is refused within a second", "[files][aof]") {
  for (const std::string target : {"appendonly.1.base.log", "appendonly.1.incr.log", "appendonly.manifest"}) {
    CAPTURE(target);
    TempDir dir;
    make_log(dir);
    ::unlink(dir.file(target).c_str());
    REQUIRE(::mkfifo(dir.file(target).c_str(), 0644) == 0);
    const ChildOutcome o = in_child([&] { return open_in_child_text(dir.path); }, 1500);
    INFO(o.text);
    REQUIRE(o.finished);  // the old code blocked in open()
    CHECK(o.seconds < 1.0);
    CHECK(starts_with(o.text, refused_text(Errc::io_error)));
    CHECK(o.text.find(target) != std::string::npos);
    CHECK(o.text.find("not a regular file") != std::string::npos);
  }
}

TEST_CASE("files: a log file symlinked out of the directory is refused and never written", "[files][aof]") {
  TempDir dir;
  TempDir outside("expiring-outside");
  make_log(dir);
  outside.write("victim", dir.read("appendonly.1.incr.log"));
  const std::string victim = outside.read("victim");
  ::unlink(dir.file("appendonly.1.incr.log").c_str());
  REQUIRE(::symlink(outside.file("victim").c_str(), dir.file("appendonly.1.incr.log").c_str()) == 0);
  expiring::ManualClock clock{kT0};
  Store s(clock);
  auto r = Log::open(s, dir.path, always());
  INFO(r.error().message);
  CHECK(r == Errc::io_error);
  if (r.ok()) REQUIRE(s.set("written", "through the link").ok());  // what the old code let through
  CHECK(outside.read("victim") == victim);
}

TEST_CASE("files: load() refuses a FIFO, a device and a symlink, within a second", "[files][snapshot]") {
  TempDir dir;
  expiring::ManualClock clock{kT0};
  {
    Store s(clock);
    REQUIRE(s.set("k", "v").ok());
    REQUIRE(expiring::save(s, dir.file("real.snap")).ok());
  }
  REQUIRE(::mkfifo(dir.file("fifo.snap").c_str(), 0644) == 0);
  REQUIRE(::symlink(dir.file("real.snap").c_str(), dir.file("link.snap").c_str()) == 0);
  REQUIRE(::symlink("/dev/zero", dir.file("zero.snap").c_str()) == 0);
  for (const std::string name : {"fifo.snap", "link.snap", "zero.snap", "/dev/null"}) {
    CAPTURE(name);
    const std::string path = name[0] == '/' ? name : dir.file(name);
    const ChildOutcome o = in_child(
        [&] {
          expiring::ManualClock c{kT0};
          Store s(c);
          auto r = expiring::load(s, path);
          if (r.ok()) return std::string("ok");
          return std::string(expiring::to_string(r.code())) + ": " + r.error().message;
        },
        1500);
    INFO(o.text);
    REQUIRE(o.finished);  // the old code blocked in open() on the FIFO
    CHECK(o.seconds < 1.0);
    CHECK(starts_with(o.text, refused_text(Errc::io_error)));
    CHECK(o.text.find(path) != std::string::npos);
  }
  Store s(clock);
  CHECK(expiring::load(s, dir.file("real.snap")).ok());
}
