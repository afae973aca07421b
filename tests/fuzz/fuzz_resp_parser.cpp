// tests/redis/fuzz_resp_parser.cpp: libFuzzer target for the RESP request parser (Clang only).
//
// The input is split into reads at sizes taken from its first bytes, fed to a parser with small
// limits, and drained. The parser must never crash, hang, read out of bounds or hold more than
// its query-buffer limit; the command layer then runs every parsed command on a fresh store.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "expiring/redis/commands.hpp"
#include "expiring/redis/resp.hpp"

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
      if (argv.empty()) __builtin_trap();
      std::string out;
      exec.execute(argv).write_resp(out);
    }
    if (p.buffered_bytes() > lim.max_query_buffer + step) __builtin_trap();
  }
  return 0;
}
