// expiring/redis/replication.hpp: a ValueStore's change feed as RESP commands, and back.
//
// expiring-server (server/) streams these commands from a primary to its replicas after the
// full sync's snapshot (server/replication.cpp, REPLICAOF), as Redis 7 does: every TTL
// absolute, every expiry a DEL sent by the primary (docs/semantics.md §4, D28-D32). A string
// travels as the command Redis propagates:
//   SET k v | SET k v PXAT <ms> | SET k v KEEPTTL | PEXPIREAT k <ms> | PERSIST k | DEL k |
//   UNLINK k | RENAME a b | FLUSHALL | MULTI | EXEC
// A hash travels whole (D32) as `RESTORE k 0 <payload> REPLACE` (no TTL) or `RESTORE k <ms>
// <payload> REPLACE ABSTTL`, the payload being the value's Codec bytes (codec.hpp), not
// Redis's DUMP format: this stream is read by another instance of this server.
//
// The replica does not run these through the command layer, which would judge their times
// against its own clock (a SET ... PXAT in the past deletes): it turns each back into the
// record (parse_change()) and applies it with ExpiringStore::apply(), which takes every key
// as valid. ReplicaLink (at the end of this file) is the whole replica side of a link: the
// full sync's snapshot, then the stream, with every byte from the primary bounded and
// checked.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../change_feed.hpp"
#include "../codec.hpp"
#include "../snapshot.hpp"
#include "commands.hpp"
#include "resp.hpp"
#include "value.hpp"

namespace expiring::redis {

using ValueChange = Change<std::string, Value>;
using ValueRecord = ChangeRecord<std::string, Value>;

namespace detail {

template <class Sink>
void put_bulk(Sink& out, std::string_view s) {
  Reply::write_bulk(out, s);
}
inline std::string decimal(std::int64_t v) {
  std::string s;
  Reply::append_int(s, v);
  return s;
}

}  // namespace detail

// Appends the RESP command that replays `c` (an array of bulk strings) to `out`, anything
// with append(const char*, std::size_t).
template <class Sink>
void write_change(const ValueChange& c, Sink& out) {
  auto cmd = [&](std::initializer_list<std::string_view> args) {
    Reply::write_array_header(out, args.size());
    for (std::string_view a : args) detail::put_bulk(out, a);
  };
  switch (c.op) {
    case ChangeOp::set: {
      if (const std::string* s = c.value->string()) {
        if (c.ttl == ChangeTtl::at) {
          cmd({"SET", *c.key, *s, "PXAT", detail::decimal(c.at_ms)});
        } else if (c.ttl == ChangeTtl::keep) {
          cmd({"SET", *c.key, *s, "KEEPTTL"});
        } else {
          cmd({"SET", *c.key, *s});
        }
        return;
      }
      // A hash: the whole value, with the deadline the key has now.
      std::string payload;
      Codec<Value>::encode(*c.value, payload);
      std::optional<std::int64_t> d;
      if (c.ttl == ChangeTtl::at) d = c.at_ms;
      if (c.ttl == ChangeTtl::keep) d = c.deadline;
      if (d) {
        cmd({"RESTORE", *c.key, detail::decimal(*d), payload, "REPLACE", "ABSTTL"});
      } else {
        cmd({"RESTORE", *c.key, "0", payload, "REPLACE"});
      }
      return;
    }
    case ChangeOp::pexpireat: cmd({"PEXPIREAT", *c.key, detail::decimal(c.at_ms)}); return;
    case ChangeOp::persist: cmd({"PERSIST", *c.key}); return;
    case ChangeOp::del: cmd({"DEL", *c.key}); return;
    case ChangeOp::unlink: cmd({"UNLINK", *c.key}); return;
    case ChangeOp::rename: cmd({"RENAME", *c.key, *c.to}); return;
    case ChangeOp::flushall: cmd({"FLUSHALL"}); return;
    case ChangeOp::multi: cmd({"MULTI"}); return;
    case ChangeOp::exec: cmd({"EXEC"}); return;
  }
}

// The record a command of that stream stands for; nullopt when argv is not one of them (a
// replica drops the link then: the stream is not what it expects).
inline std::optional<ValueRecord> parse_change(const std::vector<std::string>& a) {
  if (a.empty()) return std::nullopt;
  const std::string name = detail::uppercase(a[0]);
  ValueRecord r;
  auto key = [&](std::size_t i) { r.key.emplace(a[i]); };
  auto time = [&](std::size_t i) { return parse_int64(a[i], r.at_ms); };
  if (name == "SET" && (a.size() == 3 || a.size() == 4 || a.size() == 5)) {
    r.op = ChangeOp::set;
    key(1);
    r.value.emplace(std::string(a[2]));
    if (a.size() == 3) return r;
    if (a.size() == 4 && detail::uppercase(a[3]) == "KEEPTTL") {
      r.ttl = ChangeTtl::keep;
      return r;
    }
    if (a.size() == 5 && detail::uppercase(a[3]) == "PXAT" && time(4)) {
      r.ttl = ChangeTtl::at;
      return r;
    }
    return std::nullopt;
  }
  if (name == "RESTORE" && (a.size() == 5 || a.size() == 6) && detail::uppercase(a[4]) == "REPLACE") {
    r.op = ChangeOp::set;
    key(1);
    std::string_view payload = a[3];
    Value v;
    if (!Codec<Value>::decode(payload, v) || !payload.empty()) return std::nullopt;
    r.value.emplace(std::move(v));
    if (a.size() == 6) {
      if (detail::uppercase(a[5]) != "ABSTTL" || !time(2)) return std::nullopt;
      r.ttl = ChangeTtl::at;
    } else if (a[2] != "0") {
      return std::nullopt;
    }
    return r;
  }
  if (name == "PEXPIREAT" && a.size() == 3 && time(2)) {
    r.op = ChangeOp::pexpireat;
    key(1);
    return r;
  }
  if ((name == "PERSIST" || name == "DEL" || name == "UNLINK") && a.size() == 2) {
    r.op = name == "PERSIST" ? ChangeOp::persist : name == "DEL" ? ChangeOp::del : ChangeOp::unlink;
    key(1);
    return r;
  }
  if (name == "RENAME" && a.size() == 3) {
    r.op = ChangeOp::rename;
    key(1);
    r.to.emplace(a[2]);
    return r;
  }
  if (a.size() == 1 && (name == "FLUSHALL" || name == "MULTI" || name == "EXEC")) {
    r.op = name == "FLUSHALL" ? ChangeOp::flushall : name == "MULTI" ? ChangeOp::multi : ChangeOp::exec;
    return r;
  }
  return std::nullopt;
}

// ==== The replica's side of a link ============================================================

// The bounds of what a primary can make a replica hold (Redis's names, CONFIG SET).
struct LinkLimits {
  // proto-max-bulk-len: the largest snapshot a full sync may announce, and the largest bulk
  // in the stream.
  std::size_t max_bulk = std::size_t{512} * 1024 * 1024;
  // client-query-buffer-limit: the stream's unparsed bytes, plus the records of a MULTI
  // that has not reached its EXEC yet.
  std::size_t max_buffer = std::size_t{1024} * 1024 * 1024;
};

// Everything a replica reads from its primary after it sent SYNC, bytes in, store changes
// out: the full sync `$<n>\r\n<n bytes: a snapshot>\r\n`, then the stream of write_change()
// commands (and PING, which the primary sends while idle so the replica can tell a quiet link
// from a dead one). The socket, the reconnection and the timeout are the server's; this class
// decides what the bytes mean, and it trusts none of them:
//   * memory: the snapshot is held as it arrives, never reserved on the primary's word, and
//     refused at once if it announces more than `max_bulk`; the stream is parsed with strict
//     framing (ParserLimits::strict) and the same limits as a client's query buffer; a MULTI
//     holds its records until EXEC, counted against `max_buffer` with the unparsed input.
//     buffered_bytes() is what it holds, for the server's used_memory.
//   * framing: the header line is at most 64 KB and has no NUL; the two bytes after the
//     snapshot must be CRLF; the snapshot must end exactly at its checksum (load_bytes());
//     nested MULTI, EXEC without MULTI and anything that is not a change record fail.
//   * the store: a snapshot that does not load leaves it as it was; every record goes
//     through ExpiringStore::apply(), one MULTI as one unit (as_one_unit()); one it refuses
//     (RENAME of a missing key) is counted, and the stream goes on, as in Redis.
// After a failure (feed() returns false, error() says why) the object takes nothing more:
// the server drops the link and starts a new one with a new ReplicaLink.
template <class Store>
class ReplicaLink {
 public:
  enum class State : std::uint8_t { sync_header, sync_payload, streaming, failed };

  explicit ReplicaLink(Store& store, LinkLimits limits = {}) : store_(store) { set_limits(limits); }

  // New limits (CONFIG SET): from the next feed() on.
  void set_limits(const LinkLimits& limits) {
    limits_ = limits;
    ParserLimits p;
    p.max_bulk_len = limits.max_bulk;
    p.max_query_buffer = limits.max_buffer;
    p.strict = true;
    parser_.set_limits(p);
  }

  // Consumes `n` bytes from the primary. False once the link has failed.
  bool feed(const char* data, std::size_t n) {
    while (state_ != State::failed && n != 0) {
      std::size_t used = 0;
      switch (state_) {
        case State::sync_header: used = feed_header(data, n); break;
        case State::sync_payload: used = feed_payload(data, n); break;
        case State::streaming: feed_stream(data, n); used = n; break;
        case State::failed: break;
      }
      data += used;
      n -= used;
    }
    return state_ != State::failed;
  }

  State state() const noexcept { return state_; }
  bool syncing() const noexcept { return state_ == State::sync_header || state_ == State::sync_payload; }
  const std::string& error() const noexcept { return error_; }
  // Bytes held for the primary: the header line or the snapshot so far, the stream's
  // unparsed input and pending command, and a MULTI's records.
  std::size_t buffered_bytes() const noexcept {
    return header_.capacity() + payload_.capacity() + parser_.buffered_bytes() + multi_cost_ +
           multi_.capacity() * sizeof(ValueRecord);
  }
  // What the full sync loaded (valid once streaming).
  const SnapshotInfo& synced() const noexcept { return synced_; }
  // Records applied from the stream since the sync, and how many of them the store refused.
  std::uint64_t applied() const noexcept { return applied_; }
  std::uint64_t refused() const noexcept { return refused_; }

 private:
  static constexpr std::size_t kMaxHeader = 64 * 1024;  // Redis PROTO_INLINE_MAX_SIZE

  bool fail(std::string why) {
    error_ = std::move(why);
    state_ = State::failed;
    std::string().swap(header_);
    std::string().swap(payload_);
    std::vector<ValueRecord>().swap(multi_);
    multi_cost_ = 0;
    return false;
  }

  // "$<n>\r\n": the snapshot's length.
  std::size_t feed_header(const char* data, std::size_t n) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
    const std::size_t take = nl == nullptr ? n : static_cast<std::size_t>(nl - data) + 1;
    if (header_.size() + take > kMaxHeader) {
      fail("the reply to SYNC has no end within " + std::to_string(kMaxHeader) + " bytes");
      return take;
    }
    header_.append(data, take);
    if (nl == nullptr) return take;
    std::string_view line(header_);
    std::int64_t len = -1;
    if (line.size() < 3 || line[0] != '$' || line[line.size() - 2] != '\r' ||
        !parse_int64(line.substr(1, line.size() - 3), len) || len < 0) {
      std::string shown(line.substr(0, std::min<std::size_t>(line.size(), 80)));
      for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      }
      fail("unexpected reply to SYNC: '" + shown + "'");
      return take;
    }
    if (static_cast<std::uint64_t>(len) > limits_.max_bulk) {
      fail("the primary announces a snapshot of " + std::to_string(len) + " bytes, over proto-max-bulk-len (" +
           std::to_string(limits_.max_bulk) + ")");
      return take;
    }
    std::string().swap(header_);
    payload_len_ = static_cast<std::size_t>(len);
    state_ = State::sync_payload;
    return take;
  }

  // The snapshot and the CRLF after it. The buffer grows with what arrives (geometrically,
  // up to the announced length plus the CRLF), never with what was announced.
  std::size_t feed_payload(const char* data, std::size_t n) {
    const std::size_t want = payload_len_ + 2;
    const std::size_t take = std::min(n, want - payload_.size());
    if (payload_.size() + take > payload_.capacity()) {
      std::string grown;
      grown.reserve(std::min(want, std::max(payload_.size() + take, 2 * payload_.capacity())));
      grown.append(payload_);
      payload_.swap(grown);
    }
    payload_.append(data, take);
    if (payload_.size() < want) return take;
    if (payload_[payload_len_] != '\r' || payload_[payload_len_ + 1] != '\n') {
      fail("the snapshot is not followed by CRLF");
      return take;
    }
    const auto r = load_bytes(store_, std::string_view(payload_.data(), payload_len_), LoadAs::replica);
    if (!r.ok()) {
      fail("the snapshot does not load: " + r.error().message);
      return take;
    }
    synced_ = *r;
    std::string().swap(payload_);
    state_ = State::streaming;
    return take;
  }

  void feed_stream(const char* data, std::size_t n) {
    parser_.feed(data, n);
    std::vector<std::string> argv;
    for (;;) {
      const RequestParser::Status st = parser_.next(argv);
      if (st == RequestParser::Status::incomplete) break;
      if (st == RequestParser::Status::limit) {
        fail("the stream holds more than client-query-buffer-limit (" + std::to_string(limits_.max_buffer) +
             " bytes)");
        return;
      }
      if (st == RequestParser::Status::protocol_error) {
        fail("a protocol error in the stream: " + parser_.error());
        return;
      }
      if (argv.size() == 1 && detail::iequals(argv[0], "ping")) continue;  // the primary is alive
      std::optional<ValueRecord> rec = parse_change(argv);
      if (!rec) {
        std::string name(argv[0].substr(0, 64));
        for (char& c : name) {
          if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
        }
        fail("'" + name + "' is not a change record");
        return;
      }
      if (!apply(std::move(*rec), args_cost(argv))) return;
    }
    if (parser_.buffered_bytes() + multi_cost_ > limits_.max_buffer) {
      fail("the stream and its open MULTI hold more than client-query-buffer-limit (" +
           std::to_string(limits_.max_buffer) + " bytes)");
    }
  }

  bool apply(ValueRecord rec, std::size_t cost) {
    if (rec.op == ChangeOp::multi) {
      if (in_multi_) return fail("MULTI inside MULTI");
      in_multi_ = true;
      return true;
    }
    if (rec.op == ChangeOp::exec) {
      if (!in_multi_) return fail("EXEC without MULTI");
      store_.as_one_unit([&] {  // one unit for this server's own log and replicas too
        for (const ValueRecord& m : multi_) count(store_.apply(m.view()));
      });
      std::vector<ValueRecord>().swap(multi_);
      multi_cost_ = 0;
      in_multi_ = false;
      return true;
    }
    if (in_multi_) {
      multi_cost_ += cost;
      if (multi_cost_ > limits_.max_buffer) {
        return fail("a MULTI of more than client-query-buffer-limit (" + std::to_string(limits_.max_buffer) +
                    " bytes)");
      }
      multi_.push_back(std::move(rec));
      return true;
    }
    count(store_.apply(rec.view()));
    return true;
  }
  // A record the store refuses (RENAME of a key it does not have) is counted and the stream
  // goes on, as a Redis replica discards its primary's error replies.
  void count(const Result<bool>& r) noexcept {
    ++applied_;
    if (!r.ok()) ++refused_;
  }

  Store& store_;
  LinkLimits limits_;
  State state_ = State::sync_header;
  std::string error_;
  std::string header_;
  std::string payload_;
  std::size_t payload_len_ = 0;
  RequestParser parser_;
  std::vector<ValueRecord> multi_;
  std::size_t multi_cost_ = 0;
  bool in_multi_ = false;
  SnapshotInfo synced_;
  std::uint64_t applied_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace expiring::redis
