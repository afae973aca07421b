// tests/fuzz/fuzz_append_log_replay.cpp: libFuzzer target for the append-only log's replay
// (AppendLog::open, append_log.hpp), over a store of redis::Value. Clang only.
//
// Each input is an incr file. A directory made once per process gets, per input, a manifest
// and a base file the library wrote (a log opened over a populated store at start), and the
// input as the incr file after that base; then AppendLog::open() replays it into a store that
// already holds other keys. The input is tried twice: as it is, and "sealed": the header's CRC
// and every record's two CRCs recomputed, so that mutations reach the payload decoder and the
// MULTI/EXEC and truncation logic instead of stopping at a checksum. Properties:
//   * a refused replay answers corrupt_file, truncated_file or unsupported_version (never an
//     I/O error in a directory of its own) and leaves the store and the incr file as they were;
//   * a replay that succeeds leaves a store whose invariants hold, and the files it leaves
//     (the torn tail cut off, as aof-load-truncated does) replay again, into a fresh store,
//     to the same content.
//
// Run by ctest for a few seconds (label fuzz, tests/fuzz/CMakeLists.txt). By hand, longer:
//   build/fuzz/tests/fuzz/fuzz_append_log_replay -expiring_make_corpus=/tmp/aof-seeds
//   build/fuzz/tests/fuzz/fuzz_append_log_replay -max_total_time=600 -max_len=4096 /tmp/aof-seeds
// Files go under $TMPDIR (or /tmp) in expiring-fuzz-aof-XXXXXX, removed at exit.
#include <stdlib.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "expiring/append_log.hpp"
#include "fuzz_support.hpp"

namespace {

namespace aof = expiring::detail::aof;
namespace fs = std::filesystem;
using Log = expiring::AppendLog<fuzz::ValueStore>;
constexpr std::int64_t kNow = 1'700'000'000'000;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_CHECK(static_cast<bool>(out), path.c_str());
}

expiring::AppendLogOptions options() {
  expiring::AppendLogOptions o;
  o.fsync = expiring::Fsync::no;  // nothing here needs to reach the disk
  return o;
}

// What the library wrote for a populated store: its manifest, its base, its incr file (the
// changes made after the log opened), and the names of the last two.
struct Written {
  std::string manifest, base, incr, base_name, incr_name;
};

// A temporary directory, removed when the process exits normally.
struct Dir {
  std::string path;
  Dir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t != nullptr && *t != '\0' ? t : "/tmp") + "/expiring-fuzz-aof-XXXXXX";
    FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr, std::strerror(errno));
    path = tmpl;
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void empty() const {
    for (const auto& e : fs::directory_iterator(path)) fs::remove_all(e.path());
  }
};

Written write_log(const Dir& dir) {
  expiring::ManualClock clock{kNow};
  Written w;
  {
    fuzz::ValueStore s{clock};
    fuzz::populate(s, kNow);
    auto log = Log::open(s, dir.path, options());  // a new log: the store's content is its base
    FUZZ_CHECK(log.ok(), log.error().message.c_str());
    // Then every kind of record the feed writes, a MULTI (RENAME) included.
    (void)s.set("a", expiring::redis::Value(std::string("1")), expiring::PxAt{kNow + 100});
    (void)s.persist("a");
    (void)s.pexpireat("plain", kNow + 7);
    (void)s.hset("h", "f4", "d");
    (void)s.rename("a", "b");
    (void)s.del("ttl");
    (void)s.unlink("far");
    (void)s.hdel("ht", std::vector<std::string>{"only"});
    FUZZ_CHECK((*log)->flush(), "flush");
  }
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 9 && name.compare(name.size() - 9, 9, ".manifest") == 0) {
      w.manifest = read_file(e.path().string());
    } else if (name.find(".base.") != std::string::npos) {
      w.base_name = name;
      w.base = read_file(e.path().string());
    } else if (name.find(".incr.") != std::string::npos) {
      w.incr_name = name;
      w.incr = read_file(e.path().string());
    }
  }
  FUZZ_CHECK(!w.manifest.empty() && !w.base_name.empty() && !w.incr_name.empty(), "the library's log files");
  dir.empty();
  return w;
}

struct Fixture {
  Dir dir;
  Written log = write_log(dir);
};
Fixture& fixture() {
  static Fixture f;  // once per process
  return f;
}

// The input with every checksum made to match, as far as its lengths go.
std::string sealed(std::string b) {
  if (b.size() >= aof::kHeaderBytes) {
    aof::put_u32(&b[aof::kHeaderBytes - 4], expiring::detail::crc32c(b.data(), aof::kHeaderBytes - 4));
  }
  std::size_t pos = aof::kHeaderBytes;
  while (pos + aof::kRecordHead <= b.size()) {
    const std::uint32_t len = aof::get_u32(&b[pos]);
    if (len == 0 || len > b.size() - pos - aof::kRecordHead) break;  // a torn tail stays torn
    aof::seal(&b[pos], len);
    pos += aof::kRecordHead + len;
  }
  return b;
}

fuzz::State replay_and_check(const std::string& incr) {
  const Fixture& f = fixture();
  f.dir.empty();
  write_file(f.dir.path + "/appendonly.manifest", f.log.manifest);
  write_file(f.dir.path + "/" + f.log.base_name, f.log.base);
  const std::string incr_path = f.dir.path + "/" + f.log.incr_name;
  write_file(incr_path, incr);

  expiring::ManualClock clock{kNow};
  fuzz::ValueStore s{clock};
  (void)s.set("other", expiring::redis::Value(std::string("kept")));
  const fuzz::State before = fuzz::state(s);
  fuzz::State after;
  {
    auto log = Log::open(s, f.dir.path, options());
    if (!log.ok()) {
      const expiring::Errc c = log.code();
      FUZZ_CHECK(c == expiring::Errc::corrupt_file || c == expiring::Errc::truncated_file ||
                     c == expiring::Errc::unsupported_version,
                 log.error().message.c_str());
      FUZZ_CHECK(fuzz::state(s) == before, "a refused replay changed the store");
      FUZZ_CHECK(read_file(incr_path) == incr, "a refused replay changed the incr file");
      return {};
    }
    FUZZ_CHECK(s.check_invariants(), "invariants after a replay");
    after = fuzz::state(s);
  }
  // The files as the first replay left them replay to the same state.
  fuzz::ValueStore t{clock};
  auto again = Log::open(t, f.dir.path, options());
  FUZZ_CHECK(again.ok(), again.error().message.c_str());
  FUZZ_CHECK(fuzz::state(t) == after, "a second replay of the same files differs");
  return after;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const auto dir = fuzz::corpus_dir(*argc, *argv)) {
    const Written& w = fixture().log;
    // The real incr file, and one with its header only (a log just opened).
    fuzz::write_corpus(*dir, {w.incr, w.incr.substr(0, aof::kHeaderBytes)});
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  replay_and_check(raw);
  const std::string s = sealed(raw);
  if (s != raw) replay_and_check(s);
  return 0;
}
