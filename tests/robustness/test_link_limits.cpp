// tests/robustness/test_link_limits.cpp: what a hostile client or primary can make the RESP
// layer hold, without sockets (issue 30, items 1, 2 and 6; the server-level cases are in
// test_server_hostile.cpp).
//
//   * RequestParser counts each pending argument at its real cost: `*2147483647` followed by
//     empty arguments reaches client-query-buffer-limit (it used to add 0 bytes per argument).
//   * A client that has not authenticated may announce at most 10 arguments of 16 KB.
//   * Strict framing (the replica's link): CRLF after every length line and bulk, no NUL
//     in a length line, multibulk only; each is an error at once, not a wait.
//   * ReplicaLink: an RDB larger than proto-max-bulk-len is refused on its header; the
//     buffer grows with what arrives, not with what is announced; an endless header line is
//     refused at 64 KB; bytes after the checksum inside the bulk are refused with the store
//     unchanged, and bytes after the RDB that are not a command fail the link; a MULTI that
//     never ends is refused past client-query-buffer-limit; nested MULTI and EXEC without
//     MULTI fail; PING is accepted, a command of a type the store does not hold is skipped
//     and counted; any split of the input gives the same store.
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "commands_under_test.hpp"
#include "expiring/redis/replication.hpp"
#include "expiring/snapshot.hpp"
#include "stream_support.hpp"

using expiring::ManualClock;
using expiring::redis::args_cost;
using expiring::redis::LinkLimits;
using expiring::redis::ParserLimits;
using expiring::redis::ReplicaLink;
using expiring::redis::RequestParser;
using expiring::redis::Value;
using Store = expiring::redis::ValueStore<ManualClock>;
using Status = RequestParser::Status;
using robust::fullresync;
using robust::handshake_replies;
using robust::repeat;
using robust::snapshot_of;
using robust::sync_reply;

namespace {

constexpr std::size_t kMB = 1024 * 1024;

std::string command(std::initializer_list<std::string> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}
struct Replica {
  ManualClock clock{1'000'000};
  Store store{clock};
  ReplicaLink<Store> link;
  // Past the handshake: the link has sent PSYNC and waits for its answer.
  explicit Replica(LinkLimits limits = {}) : link(store, limits) {
    (void)store.set("before", Value(std::string("sync")));
    REQUIRE(feed(handshake_replies()));
    REQUIRE(link.outbox().find("PSYNC") != std::string::npos);
  }
  bool feed(const std::string& bytes) { return link.feed(bytes.data(), bytes.size()); }
  bool has(const std::string& key) { return store.peek(key) != nullptr; }
};

}  // namespace

TEST_CASE("parser: empty arguments of a huge multibulk count reach client-query-buffer-limit", "[link][query]") {
  ParserLimits l;
  l.max_query_buffer = kMB;
  RequestParser p(l);
  std::vector<std::string> argv;
  p.feed("*2147483647\r\n");
  REQUIRE(p.next(argv) == Status::incomplete);
  Status st = Status::incomplete;
  std::size_t sent = 0;
  // 6 bytes of input each; every one costs at least a string object.
  const std::string chunk = repeat("$0\r\n\r\n", 1000);
  while (st == Status::incomplete && sent < 8 * kMB) {
    p.feed(chunk);
    sent += chunk.size();
    st = p.next(argv);
    if (st == Status::incomplete) CHECK(p.buffered_bytes() <= kMB + 64 * 1024);
  }
  CHECK(st == Status::limit);
  // Each empty argument costs at least sizeof(std::string): the limit is reached after about
  // 1 MB / 32 B of them, i.e. ~200 KB of input, never after megabytes.
  CHECK(sent <= kMB);
}

TEST_CASE("parser: a pending command's arguments cost their objects and their bytes", "[link][query]") {
  RequestParser p;
  std::vector<std::string> argv;
  p.feed("*100\r\n" + repeat("$0\r\n\r\n", 50));
  REQUIRE(p.next(argv) == Status::incomplete);
  CHECK(p.buffered_bytes() >= 50 * sizeof(std::string));
  std::vector<std::string> args(3, std::string(100, 'x'));
  CHECK(args_cost(args) == args.capacity() * sizeof(std::string) + 300);
}

TEST_CASE("parser: an unauthenticated client may announce 10 arguments of 16 KB", "[link][auth]") {
  ParserLimits l;
  l.authenticated = false;
  std::vector<std::string> argv;
  {
    RequestParser p(l);
    p.feed("*11\r\n");
    CHECK(p.next(argv) == Status::protocol_error);
    CHECK(p.error() == "ERR Protocol error: unauthenticated multibulk length");
  }
  {
    RequestParser p(l);
    p.feed("*1\r\n$16385\r\n");
    CHECK(p.next(argv) == Status::protocol_error);
    CHECK(p.error() == "ERR Protocol error: unauthenticated bulk length");
  }
  {
    RequestParser p(l);
    p.feed("*10\r\n" + repeat("$16384\r\n" + std::string(16384, 'a') + "\r\n", 10));
    CHECK(p.next(argv) == Status::command);
    CHECK(argv.size() == 10);
  }
  {
    // The same input once authenticated: accepted (11 arguments).
    RequestParser p;
    p.feed(command({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}));
    CHECK(p.next(argv) == Status::command);
  }
}

TEST_CASE("parser: strict framing refuses at once what a client parser waits on or skips", "[link][framing]") {
  ParserLimits strict;
  strict.strict = true;
  std::vector<std::string> argv;
  auto first = [&](const std::string& in, const ParserLimits& l) {
    RequestParser p(l);
    p.feed(in);
    return p.next(argv);
  };
  const std::string nul_first("\0garbage\r\n", 10);
  const std::string nul_in_count("*1\0\r\n", 5);
  const std::string bad_trailer = "*1\r\n$4\r\nPINGxy";
  const std::string bad_line_end = "*1\rx$4\r\nPING\r\n";
  const std::string inline_ping = "PING\r\n";
  // A client's parser: waits on the NUL, takes the others (Redis's leniency).
  CHECK(first(nul_first, ParserLimits{}) == Status::incomplete);  // an inline line, stuck on its NUL
  CHECK(first(nul_in_count, ParserLimits{}) == Status::incomplete);
  CHECK(first(bad_trailer, ParserLimits{}) == Status::command);
  CHECK(first(bad_line_end, ParserLimits{}) == Status::command);
  CHECK(first(inline_ping, ParserLimits{}) == Status::command);
  // Strict: every one is an error at once.
  CHECK(first(nul_first, strict) == Status::protocol_error);
  CHECK(first(nul_in_count, strict) == Status::protocol_error);
  CHECK(first(bad_trailer, strict) == Status::protocol_error);
  CHECK(first(bad_line_end, strict) == Status::protocol_error);
  CHECK(first(inline_ping, strict) == Status::protocol_error);
  // A big argument (its own path in the parser) is checked too.
  CHECK(first("*1\r\n$40000\r\n" + std::string(40000, 'b') + "xy", strict) == Status::protocol_error);
  CHECK(first("*1\r\n$40000\r\n" + std::string(40000, 'b') + "\r\n", strict) == Status::command);
}

TEST_CASE("replica link: a full sync, then the stream, in any split of the input", "[link]") {
  std::string stream = sync_reply(snapshot_of(3));
  stream += command({"SET", "a", "1"}) + command({"PING"}) + command({"MULTI"}) + command({"SET", "b", "2"}) +
            command({"DEL", "k0"}) + command({"EXEC"}) + command({"PEXPIREAT", "a", "5000000"});
  for (std::size_t piece : {stream.size(), std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
    INFO("pieces of " << piece);
    Replica r;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      REQUIRE(r.feed(stream.substr(at, piece)));
    }
    CHECK(r.link.state() == ReplicaLink<Store>::State::streaming);
    CHECK(r.link.synced().keys == 3);
    CHECK_FALSE(r.has("before"));  // the sync replaced the store
    CHECK(r.has("a"));
    CHECK(r.has("b"));
    CHECK_FALSE(r.has("k0"));
    CHECK(r.has("k1"));
    CHECK(r.store.pexpiretime("a") == 5'000'000);
    CHECK(r.link.applier().applied() == 4);
    CHECK(r.store.check_invariants());
  }
}

TEST_CASE("replica link: an RDB over proto-max-bulk-len is refused on its header", "[link][sync]") {
  Replica r;
  CHECK_FALSE(r.feed(fullresync() + "$1099511627776\r\n"));
  CHECK(r.link.error().find("over proto-max-bulk-len") != std::string::npos);
  CHECK(r.link.buffered_bytes() < 1024);  // nothing allocated on the primary's word
  CHECK(r.has("before"));
}

TEST_CASE("replica link: the RDB buffer grows with what arrives, not with what is announced", "[link][sync]") {
  Replica r;
  REQUIRE(r.feed(fullresync() + "$500000000\r\n"));  // within the default 512 MB
  REQUIRE(r.feed(std::string(1000, 'x')));
  CHECK(r.link.syncing());
  CHECK(r.link.buffered_bytes() < 64 * 1024);
}

TEST_CASE("replica link: an endless RDB header is refused at 64 KB", "[link][sync]") {
  Replica r;
  bool ok = r.feed(fullresync() + "$");
  for (int i = 0; i < 100 && ok; ++i) ok = r.feed(std::string(1024, '1'));
  CHECK_FALSE(ok);
  CHECK(r.link.error().find("no end") != std::string::npos);
  CHECK(r.has("before"));
  Replica z;
  CHECK_FALSE(z.feed(std::string("\0\0\0\r\n", 5)));  // not an answer to PSYNC
  Replica y;
  CHECK_FALSE(y.feed(fullresync() + std::string("\0\0\0\r\n", 5)));  // not an RDB header
  Replica e;
  CHECK_FALSE(e.feed(fullresync() + "$0\r\n*1\r\n$4\r\nPING\r\n"));  // an empty RDB
  CHECK(e.link.error().find("does not load") != std::string::npos);
}

TEST_CASE("replica link: bytes after the checksum inside the bulk are refused, the store unchanged",
          "[link][framing]") {
  Replica r;
  const std::string snap = snapshot_of(2) + "Z";
  CHECK_FALSE(r.feed(sync_reply(snap)));
  CHECK(r.link.error().find("after the end") != std::string::npos);
  CHECK(r.has("before"));
  CHECK_FALSE(r.has("k0"));
}

TEST_CASE("replica link: no CRLF after the RDB: what follows is the stream", "[link][framing]") {
  const std::string snap = snapshot_of(2);
  for (const std::string& trailer : {std::string("\r\n"), std::string("xy"), std::string("\0\0", 2)}) {
    Replica r;
    CHECK_FALSE(r.feed(sync_reply(snap) + trailer));
    CHECK(r.link.error().find("protocol error") != std::string::npos);
    CHECK(r.has("k0"));  // the RDB itself loaded
  }
}

TEST_CASE("replica link: an RDB framed with an EOF mark, in any split", "[link][sync]") {
  const std::string mark(40, 'm');
  const std::string stream = fullresync() + "\n\n$EOF:" + mark + "\r\n" + snapshot_of(3) + mark;
  for (std::size_t piece : {stream.size(), std::size_t{1}, std::size_t{39}, std::size_t{41}}) {
    INFO("pieces of " << piece);
    Replica r;
    for (std::size_t at = 0; at < stream.size(); at += piece) REQUIRE(r.feed(stream.substr(at, piece)));
    CHECK(r.link.state() == ReplicaLink<Store>::State::streaming);
    CHECK(r.link.synced().keys == 3);
    CHECK(r.link.outbox().find("REPLCONF") != std::string::npos);  // the ACK that starts the stream
  }
}

TEST_CASE("replica link: commands it does not follow are counted and the stream goes on", "[link]") {
  Replica r;
  REQUIRE(r.feed(sync_reply(snapshot_of(1))));
  REQUIRE(r.feed(command({"LPUSH", "list", "x"}) + command({"SELECT", "3"}) + command({"SET", "other", "db"}) +
                 command({"SELECT", "0"}) + command({"INCR", "k0"}) + command({"SET", "n", "1"}) + command({"INCR", "n"})));
  CHECK(r.link.applier().skipped() == 2);
  CHECK(r.link.applier().refused() == 1);  // INCR of "v"
  CHECK(r.link.applier().applied() == 2);
  CHECK(*r.store.peek("n")->string() == "2");
  CHECK(r.store.peek("other") == nullptr);
}

TEST_CASE("replica link: garbage in the stream fails the link, a NUL first included", "[link][framing]") {
  for (const std::string& garbage : {std::string("\0\0\0\0", 4), std::string("hello\r\n"),
                                    command({"EXEC"}), command({"MULTI"}) + command({"MULTI"}),
                                    std::string("*1\r\n$4\r\nPING\r\r")}) {
    Replica r;
    REQUIRE(r.feed(sync_reply(snapshot_of(1))));
    CHECK_FALSE(r.feed(garbage));
    CHECK(r.link.state() == ReplicaLink<Store>::State::failed);
    CHECK_FALSE(r.link.error().empty());
  }
}

TEST_CASE("replica link: empty arguments and a MULTI that never ends stop at client-query-buffer-limit",
          "[link][query]") {
  LinkLimits limits;
  limits.max_buffer = kMB;
  {
    Replica r(limits);
    REQUIRE(r.feed(sync_reply(snapshot_of(1))));
    bool ok = r.feed("*2147483647\r\n");
    const std::string chunk = repeat("$0\r\n\r\n", 1000);
    std::size_t sent = 0;
    for (; ok && sent < 8 * kMB; sent += chunk.size()) ok = r.feed(chunk);
    CHECK_FALSE(ok);
    CHECK(sent <= kMB);
  }
  {
    Replica r(limits);
    REQUIRE(r.feed(sync_reply(snapshot_of(1))));
    bool ok = r.feed(command({"MULTI"}));
    const std::string set = command({"SET", "k", std::string(1000, 'v')});
    std::size_t sent = 0;
    for (; ok && sent < 8 * kMB; sent += set.size()) {
      ok = r.feed(set);
      if (ok) CHECK(r.link.buffered_bytes() <= 2 * kMB);
    }
    CHECK_FALSE(ok);
    CHECK(sent <= 2 * kMB);
    CHECK(r.link.error().find("MULTI") != std::string::npos);
    CHECK(r.store.peek("k") == nullptr);  // nothing of the open MULTI was applied
  }
}

TEST_CASE("replica link: a bulk over proto-max-bulk-len in the stream fails the link", "[link][query]") {
  LinkLimits limits;
  limits.max_bulk = kMB;
  Replica r(limits);
  REQUIRE(r.feed(sync_reply(snapshot_of(1))));
  CHECK_FALSE(r.feed("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(kMB + 1) + "\r\n"));
  CHECK(r.link.error().find("invalid bulk length") != std::string::npos);
}
