// tests/redis/test_redis_resp.cpp: the RESP2 request parser (include/expiring/redis/resp.hpp):
// multibulk and inline requests, pipelining, partial reads, Redis 7.0's protocol errors word for
// word, its leniencies, the limits that keep a client from making the server allocate, and a
// long randomized run over valid, corrupted and random input split at random points.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "expiring/redis/resp.hpp"

using expiring::redis::ParserLimits;
using expiring::redis::RequestParser;
using Status = expiring::redis::RequestParser::Status;
using Argv = std::vector<std::string>;

namespace {

struct Outcome {
  std::vector<Argv> commands;
  Status final_status = Status::incomplete;
  std::string error;
  bool operator==(const Outcome& o) const {
    return commands == o.commands && final_status == o.final_status && error == o.error;
  }
};

// Feeds `input` in pieces of the given sizes (the rest at once) and drains commands after each.
Outcome parse(std::string_view input, const std::vector<std::size_t>& pieces = {}, ParserLimits limits = {}) {
  RequestParser p(limits);
  Outcome out;
  std::size_t off = 0;
  std::size_t piece = 0;
  while (off < input.size() || piece == 0) {
    std::size_t n = piece < pieces.size() ? pieces[piece] : input.size() - off;
    if (n > input.size() - off) n = input.size() - off;
    ++piece;
    p.feed(input.data() + off, n);
    off += n;
    Argv argv;
    for (;;) {
      const Status s = p.next(argv);
      if (s == Status::command) {
        out.commands.push_back(argv);
        continue;
      }
      out.final_status = s;
      if (s == Status::protocol_error) out.error = p.error();
      break;
    }
    if (out.final_status != Status::incomplete || off >= input.size()) break;
  }
  return out;
}

std::string mb(const Argv& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

std::vector<std::size_t> bytewise(std::size_t n) { return std::vector<std::size_t>(n, 1); }

}  // namespace

TEST_CASE("resp parser: multibulk requests, pipelined, binary-safe", "[redis][resp]") {
  const Argv a{"SET", std::string("k\0\r\n", 4), ""};
  const Argv b{"GET", "k"};
  const std::string in = mb(a) + mb(b);
  const Outcome o = parse(in);
  CHECK(o.final_status == Status::incomplete);
  REQUIRE(o.commands.size() == 2);
  CHECK(o.commands[0] == a);
  CHECK(o.commands[1] == b);
  // Any split into reads gives the same commands.
  CHECK(parse(in, bytewise(in.size())) == o);
  for (std::size_t cut = 0; cut <= in.size(); ++cut) CHECK(parse(in, {cut}) == o);
}

TEST_CASE("resp parser: inline requests as Redis splits them", "[redis][resp]") {
  CHECK(parse("PING\r\n").commands == std::vector<Argv>{{"PING"}});
  CHECK(parse("PING\n").commands == std::vector<Argv>{{"PING"}});
  CHECK(parse("SET  k\t v \r\n").commands == std::vector<Argv>{{"SET", "k", "v"}});
  CHECK(parse("ECHO \"a\\x41\\n\\r\\t\\b\\a\\\\\\\"\" x\r\n").commands ==
        std::vector<Argv>{{"ECHO", "aA\n\r\t\b\a\\\"", "x"}});
  CHECK(parse("ECHO \"\\xZZ\\q\"\r\n").commands == std::vector<Argv>{{"ECHO", "xZZq"}});
  CHECK(parse("ECHO 'a\\'b' 'c\\n'\r\n").commands == std::vector<Argv>{{"ECHO", "a'b", "c\\n"}});
  CHECK(parse("ECHO a\"b c\"\r\n").commands == std::vector<Argv>{{"ECHO", "ab c"}});
  CHECK(parse("ECHO \"\"\r\n").commands == std::vector<Argv>{{"ECHO", ""}});
  // \v and \f separate arguments only before one starts (isspace), not inside one.
  CHECK(parse("ECHO \vx\f\r\n").commands == std::vector<Argv>{{"ECHO", "x\f"}});
  // Empty lines and blank lines are skipped without a reply.
  CHECK(parse("\r\n\n   \r\nPING\r\n").commands == std::vector<Argv>{{"PING"}});
  // A line without its newline waits.
  const Outcome w = parse("PING");
  CHECK(w.commands.empty());
  CHECK(w.final_status == Status::incomplete);
}

TEST_CASE("resp parser: Redis's leniencies are kept", "[redis][resp]") {
  // The two bytes after a bulk payload are skipped unchecked: "xy" is eaten, "PING" is inline.
  CHECK(parse("*1\r\n$4\r\nPINGxyPING\r\n").commands == std::vector<Argv>{{"PING"}, {"PING"}});
  // The byte after '\r' in a length line is not checked.
  CHECK(parse("*1\rX$4\rXPING\r\n").commands == std::vector<Argv>{{"PING"}});
  // *0 and *-N are empty requests.
  CHECK(parse("*0\r\n*-5\r\nPING\r\n").commands == std::vector<Argv>{{"PING"}});
  // A NUL before the terminator stalls the request (Redis's strchr stops there).
  const Outcome nul = parse(std::string("PING\0x\r\nPING\r\n", 14));
  CHECK(nul.commands.empty());
  CHECK(nul.final_status == Status::incomplete);
  const Outcome nul2 = parse(std::string("*1\0\r\n$4\r\nPING\r\n", 15));
  CHECK(nul2.commands.empty());
  CHECK(nul2.final_status == Status::incomplete);
}

TEST_CASE("resp parser: protocol errors, word for word, after the commands before them", "[redis][resp]") {
  struct Case {
    std::string in;
    std::string error;
    std::size_t commands_before;
  };
  const std::vector<Case> cases = {
      {"*x\r\n", "ERR Protocol error: invalid multibulk length", 0},
      {"*3000000000\r\n", "ERR Protocol error: invalid multibulk length", 0},
      {"*01\r\n", "ERR Protocol error: invalid multibulk length", 0},
      {"*\r\n", "ERR Protocol error: invalid multibulk length", 0},
      {"*+1\r\n", "ERR Protocol error: invalid multibulk length", 0},
      {"*1\r\nx3\r\n", "ERR Protocol error: expected '$', got 'x'", 0},
      {"*1\r\n\r\r\n", "ERR Protocol error: expected '$', got ' '", 0},
      {"*1\r\n\xff" "4\r\n", "ERR Protocol error: expected '$', got '\xff'", 0},
      {"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length", 0},
      {"*1\r\n$04\r\n", "ERR Protocol error: invalid bulk length", 0},
      {"*1\r\n$\xff" "4\r\n", "ERR Protocol error: invalid bulk length", 0},
      {"*1\r\n$536870913\r\n", "ERR Protocol error: invalid bulk length", 0},
      {"*1\r\n$99999999999999999999\r\n", "ERR Protocol error: invalid bulk length", 0},
      {"SET a \"b\r\n", "ERR Protocol error: unbalanced quotes in request", 0},
      {"SET a 'b'c\r\n", "ERR Protocol error: unbalanced quotes in request", 0},
      {"SET a \"b\"c\r\n", "ERR Protocol error: unbalanced quotes in request", 0},
      {"PING\r\n*1x\r\n", "ERR Protocol error: invalid multibulk length", 1},
      {"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$a\r\n", "ERR Protocol error: invalid bulk length", 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.in);
    const Outcome o = parse(c.in);
    CHECK(o.final_status == Status::protocol_error);
    CHECK(o.error == c.error);
    CHECK(o.commands.size() == c.commands_before);
    // Byte by byte: the same result.
    CHECK(parse(c.in, bytewise(c.in.size())) == o);
  }
}

TEST_CASE("resp parser: a failure is sticky and releases the buffers", "[redis][resp]") {
  RequestParser p;
  p.feed("*1\r\n$-1\r\nPING\r\n");
  Argv argv;
  CHECK(p.next(argv) == Status::protocol_error);
  CHECK(p.failed());
  CHECK(p.buffered_bytes() == 0);
  p.feed("PING\r\n");
  CHECK(p.next(argv) == Status::protocol_error);
  CHECK(p.error() == "ERR Protocol error: invalid bulk length");
}

TEST_CASE("resp parser: lines waiting for a terminator are limited to 64 KB", "[redis][resp]") {
  CHECK(parse(std::string(70000, 'A')).error == "ERR Protocol error: too big inline request");
  CHECK(parse("*" + std::string(70000, '1')).error == "ERR Protocol error: too big mbulk count string");
  CHECK(parse("*1\r\n$" + std::string(70000, '1')).error == "ERR Protocol error: too big bulk count string");
  // Exactly 64 KB still waits; a longer line that arrives whole (newline included) passes.
  CHECK(parse(std::string(65536, 'A')).final_status == Status::incomplete);
  const std::string long_inline = "ECHO " + std::string(100000, 'x') + "\r\n";
  CHECK(parse(long_inline).commands.size() == 1);
  // ... but not when it trickles in 16 KB reads, as Redis reads (the 5th read passes 64 KB).
  CHECK(parse(long_inline, std::vector<std::size_t>(10, 16384)).error ==
        "ERR Protocol error: too big inline request");
  // A NUL stalls the line until it is too long.
  std::string stalled("GET a\0b", 7);
  stalled += std::string(70000, 'c') + "\r\n";
  CHECK(parse(stalled).error == "ERR Protocol error: too big inline request");
}

TEST_CASE("resp parser: bulk lengths over the limit are refused before allocating", "[redis][resp]") {
  ParserLimits lim;
  lim.max_bulk_len = 100;
  CHECK(parse("*1\r\n$101\r\n", {}, lim).error == "ERR Protocol error: invalid bulk length");
  const Outcome ok = parse(mb({std::string(100, 'z')}), {}, lim);
  REQUIRE(ok.commands.size() == 1);
  CHECK(ok.commands[0][0].size() == 100);

  // The default limit is Redis's 512 MB; a header at the limit allocates nothing big by
  // itself: the argument slots reserved (1024 at most), never the announced length.
  RequestParser p;
  p.feed("*2000000000\r\n$536870912\r\n");
  Argv argv;
  CHECK(p.next(argv) == Status::incomplete);
  const std::size_t base = p.buffered_bytes();
  CHECK(base <= 1024 * sizeof(std::string) + sizeof(std::string));
  p.feed("abc");
  CHECK(p.next(argv) == Status::incomplete);
  CHECK(p.buffered_bytes() <= base + sizeof(std::string));
}

TEST_CASE("resp parser: the query buffer limit closes the connection silently", "[redis][resp]") {
  ParserLimits lim;
  lim.max_query_buffer = 1000;
  RequestParser p(lim);
  Argv argv;
  p.feed(mb({"SET", "k", std::string(500, 'v')}));
  CHECK(p.next(argv) == Status::command);
  p.feed("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n" + std::string(800, 'v'));
  CHECK(p.next(argv) == Status::incomplete);
  p.feed(std::string(300, 'v'));
  CHECK(p.next(argv) == Status::limit);
  CHECK(p.failed());
  CHECK(p.buffered_bytes() == 0);
  CHECK(p.next(argv) == Status::limit);
}

TEST_CASE("resp parser: a huge announced argument count reserves nothing big", "[redis][resp]") {
  RequestParser p;
  Argv argv;
  p.feed("*2147483647\r\n");
  for (int i = 0; i < 2000; ++i) p.feed("$1\r\nx\r\n");
  CHECK(p.next(argv) == Status::incomplete);
  // The 2000 one-byte arguments assembled so far, each with its string object (the vector
  // grows geometrically: at most twice the slots used).
  CHECK(p.buffered_bytes() >= 2000 * (sizeof(std::string) + 1));
  CHECK(p.buffered_bytes() <= 2 * 2048 * sizeof(std::string) + 2000);
  CHECK_FALSE(p.idle());
}

// ---- Randomized ------------------------------------------------------------------------------

namespace {

std::string random_bytes(std::mt19937_64& rng, std::size_t max_len) {
  static const char kAlphabet[] = "*$\r\n0123456789-+ \"'\\xabSETGET\0\xff";
  std::uniform_int_distribution<std::size_t> len(0, max_len);
  std::uniform_int_distribution<int> coin(0, 3);
  std::string s(len(rng), '\0');
  for (char& c : s) {
    c = coin(rng) == 0 ? static_cast<char>(rng() & 0xff) : kAlphabet[rng() % (sizeof kAlphabet - 1)];
  }
  return s;
}

Argv random_argv(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> n(1, 5);
  Argv a;
  const int argc = n(rng);
  for (int i = 0; i < argc; ++i) a.push_back(random_bytes(rng, 12));
  return a;
}

// An inline encoding of `a` when one exists (no NUL; quotes via \xHH).
std::string inline_encode(const Argv& a) {
  std::string s;
  for (const std::string& x : a) {
    s += '"';
    for (char c : x) {
      static const char kHex[] = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      s += "\\x";
      s += kHex[u >> 4];
      s += kHex[u & 15];
    }
    s += "\" ";
  }
  return s + "\r\n";
}

std::vector<std::size_t> random_pieces(std::mt19937_64& rng, std::size_t total) {
  std::vector<std::size_t> v;
  std::size_t sum = 0;
  while (sum < total) {
    const std::size_t n = 1 + rng() % 40;
    v.push_back(n);
    sum += n;
  }
  return v;
}

}  // namespace

TEST_CASE("resp parser: randomized round trips survive any split into reads", "[redis][resp][fuzz]") {
  std::mt19937_64 rng(20240601);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<Argv> want;
    std::string stream;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      Argv a = random_argv(rng);
      if (rng() % 3 == 0) {
        stream += inline_encode(a);
      } else {
        stream += mb(a);
      }
      want.push_back(std::move(a));
    }
    const Outcome whole = parse(stream);
    CAPTURE(iter, stream);
    CHECK(whole.final_status == Status::incomplete);
    CHECK(whole.commands == want);
    CHECK(parse(stream, random_pieces(rng, stream.size())) == whole);
  }
}

TEST_CASE("resp parser: randomized garbage never crashes, hangs or over-allocates", "[redis][resp][fuzz]") {
  std::mt19937_64 rng(777);
  ParserLimits lim;
  lim.max_bulk_len = 4096;
  lim.max_query_buffer = 1 << 20;
  std::size_t errors = 0, commands = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string stream;
    const int parts = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < parts; ++i) {
      switch (rng() % 5) {
        case 0: stream += random_bytes(rng, 64); break;
        case 1: stream += mb(random_argv(rng)); break;
        case 2: {  // a valid frame, truncated or corrupted at one byte
          std::string f = mb(random_argv(rng));
          if (rng() % 2) {
            f.resize(rng() % (f.size() + 1));
          } else {
            f[rng() % f.size()] = static_cast<char>(rng() & 0xff);
          }
          stream += f;
          break;
        }
        case 3:  // huge or hostile lengths
          stream += (rng() % 2 ? "*" : "*1\r\n$") + std::to_string(static_cast<std::int64_t>(rng())) + "\r\n";
          break;
        default: stream += inline_encode(random_argv(rng)); break;
      }
    }
    const Outcome whole = parse(stream, {}, lim);
    const Outcome split = parse(stream, random_pieces(rng, stream.size()), lim);
    CAPTURE(iter, stream);
    // Lines stay far below 64 KB here, so the split cannot change the outcome.
    CHECK(split == whole);
    errors += whole.final_status == Status::protocol_error;
    commands += whole.commands.size();
    // Every byte of every argument came from the input: nothing was invented or duplicated.
    std::size_t bytes = 0;
    for (const Argv& a : whole.commands) {
      for (const std::string& x : a) bytes += x.size();
    }
    CHECK(bytes <= stream.size());
  }
  CHECK(errors > 1000);    // the generator does reach the error paths
  CHECK(commands > 1000);  // and the command paths
}

TEST_CASE("resp parser: a random byte stream fed in random reads stays bounded", "[redis][resp][fuzz]") {
  std::mt19937_64 rng(99);
  ParserLimits lim;
  lim.max_query_buffer = 256 * 1024;
  for (int conn = 0; conn < 200; ++conn) {
    RequestParser p(lim);
    Argv argv;
    std::size_t fed = 0;
    for (int read = 0; read < 200 && !p.failed(); ++read) {
      const std::string chunk = random_bytes(rng, 2048);
      p.feed(chunk);
      fed += chunk.size();
      Status s;
      int guard = 0;
      while ((s = p.next(argv)) == Status::command) {
        REQUIRE(!argv.empty());
        REQUIRE(++guard < 100000);
      }
      // What it holds is within the limit, and never more than each byte fed at the cost of
      // an argument (the smallest argument takes 4 bytes of input, "$0\r\n" in a pipeline
      // of them, and costs a string object).
      CHECK(p.buffered_bytes() <= lim.max_query_buffer);
      CHECK(p.buffered_bytes() <= fed * (1 + sizeof(std::string)) + 1024 * sizeof(std::string));
    }
  }
}

TEST_CASE("resp parser: big arguments arrive into their own strings, in any split", "[redis][resp]") {
  std::mt19937_64 rng(7);
  std::string big1(40'000, 'a'), big2(300'001, 'b');
  for (std::size_t i = 0; i < big2.size(); i += 997) big2[i] = static_cast<char>('0' + i % 10);
  const Argv cmd{"MSET", "k1", big1, "k2", big2};
  const std::string stream = mb(cmd) + mb({"PING"});
  const Outcome whole = parse(stream);
  REQUIRE(whole.commands.size() == 2);
  CHECK(whole.commands[0] == cmd);
  for (int iter = 0; iter < 20; ++iter) {
    std::vector<std::size_t> pieces;
    for (std::size_t left = stream.size(); left > 0;) {
      const std::size_t n = std::min<std::size_t>(left, 1 + rng() % 70'000);
      pieces.push_back(n);
      left -= n;
    }
    CHECK(parse(stream, pieces) == whole);
  }
  // What it holds while a big argument arrives: the bytes so far, counted once.
  RequestParser p;
  const std::string head = "*2\r\n$4\r\nECHO\r\n$100000\r\n";
  p.feed(head);
  p.feed(std::string(60'000, 'x'));
  Argv argv;
  CHECK(p.next(argv) == Status::incomplete);
  CHECK(p.buffered_bytes() >= 4 + 60'000);
  CHECK(p.buffered_bytes() <= 2 * sizeof(std::string) + 4 + 100'000);  // not twice
  p.feed(std::string(40'000, 'x') + "\r\n");
  CHECK(p.next(argv) == Status::command);
  CHECK(argv == Argv{"ECHO", std::string(100'000, 'x')});
  CHECK(p.buffered_bytes() == 0);
  CHECK(p.idle());
}

TEST_CASE("resp parser: the query buffer limit counts a big argument as it arrives", "[redis][resp]") {
  ParserLimits lim;
  lim.max_query_buffer = 100'000;
  RequestParser p(lim);
  p.feed("*2\r\n$4\r\nECHO\r\n$200000\r\n");
  Argv argv;
  CHECK(p.next(argv) == Status::incomplete);
  for (int i = 0; i < 7; ++i) p.feed(std::string(16'384, 'x'));  // 114,692 bytes held
  CHECK(p.next(argv) == Status::limit);
  CHECK(p.buffered_bytes() == 0);
}
