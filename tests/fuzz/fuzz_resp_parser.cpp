// tests/fuzz/fuzz_resp_parser.cpp: libFuzzer target for the RESP request parser (Clang only).
//
// The input is split into reads at sizes taken from its first bytes, fed to a parser with small
// limits, and drained. The parser must never crash, hang, read out of bounds, hand out an empty
// command or hold more than its query-buffer limit; the command layer then runs every parsed
// command on a fresh store.
//
// Run by ctest for a few seconds (label fuzz, tests/fuzz/CMakeLists.txt). By hand, longer:
//   build/fuzz/tests/fuzz/fuzz_resp_parser -expiring_make_corpus=/tmp/resp-seeds
//   build/fuzz/tests/fuzz/fuzz_resp_parser -max_total_time=600 -max_len=4096 /tmp/resp-seeds
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "expiring/redis/commands.hpp"
#include "expiring/redis/resp.hpp"
#include "fuzz_support.hpp"

namespace {

// Requests as a client sends them (the first byte picks the read size): multibulk commands of
// the string, TTL and hash families, and an inline one.
std::vector<std::string> seeds() {
  std::string multibulk(1, '\x10');
  auto command = [&](std::initializer_list<std::string> args) {
    expiring::redis::Reply::write_array_header(multibulk, args.size());
    for (const std::string& a : args) expiring::redis::Reply::write_bulk(multibulk, a);
  };
  command({"SET", "k", "v", "PX", "100"});
  command({"GET", "k"});
  command({"HSET", "h", "f", "1", "g", "2"});
  command({"HPEXPIRE", "h", "50", "FIELDS", "1", "f"});
  command({"HGETALL", "h"});
  command({"EXPIRE", "k", "10", "NX"});
  command({"TTL", "k"});
  command({"DEL", "k", "h"});
  return {multibulk, std::string(1, '\x03') + "SET a b\r\nINCR n\r\nTTL a\r\n"};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const auto dir = fuzz::corpus_dir(*argc, *argv)) fuzz::write_corpus(*dir, seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using expiring::redis::RequestParser;
  expiring::redis::ParserLimits lim;
  lim.max_bulk_len = 1024;
  lim.max_inline = 512;
  lim.max_query_buffer = 8192;
  RequestParser p(lim);
  expiring::ManualClock clock{1'000'000};
  expiring::redis::ValueStore<expiring::ManualClock&> store{clock};
  expiring::redis::CommandExecutor<expiring::ManualClock&> exec{store};
  std::vector<std::string> argv;
  const char* bytes = reinterpret_cast<const char*>(data);
  std::size_t off = size > 0 ? 1 : 0;
  const std::size_t step = size > 0 ? 1 + data[0] % 64 : 1;
  while (off < size && !p.failed()) {
    const std::size_t n = step < size - off ? step : size - off;
    p.feed(bytes + off, n);
    off += n;
    while (p.next(argv) == RequestParser::Status::command) {
      FUZZ_CHECK(!argv.empty(), "an empty command");
      std::string out;
      exec.execute(argv).write_resp(out);
    }
    FUZZ_CHECK(p.buffered_bytes() <= lim.max_query_buffer + step, "the parser holds more than its limit");
  }
  return 0;
}
