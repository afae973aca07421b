// expiring/redis/replication.hpp: Redis's replication protocol, both sides, over a ValueStore.
//
// The primary's side: write_change() turns the store's change feed into the commands Redis 7
// propagates, every TTL absolute and every expiry a DEL sent by the primary (docs/semantics.md
// §4, D28-D32):
//   SET k v | SET k v PXAT <ms> | SET k v KEEPTTL | PEXPIREAT k <ms> | PERSIST k | DEL k |
//   UNLINK k | RENAME a b | FLUSHDB | MULTI | EXEC
// (a store is one database: its clear() is a FLUSHDB; a server of several databases puts a
// SELECT before the first record of each, as Redis does)
// and for a hash's fields what Redis 7.4 sends (D32):
//   HSET k f v ... | HDEL k f ... (a field expired, too) | HPEXPIREAT k <ms> FIELDS n f ... |
//   HPERSIST k FIELDS n f ...
// A hash placed whole (SET, COPY, RENAME's destination, RESTORE) travels as Redis propagates
// a RESTORE: `RESTORE k 0 <payload> REPLACE` (no TTL) or `RESTORE k <ms> <payload> REPLACE
// ABSTTL`, the payload Redis 7.0's DUMP format (rdb.hpp dump_value()): redis-server 7.0
// applies it as it is, unless a field has a TTL (RDB version 12, Redis 7.4's); so does
// HSET, HDEL, while HPEXPIREAT and HPERSIST need a Redis 7.4 replica.
//
// The replica's side: ReplicaLink (below) is everything a replica reads from its primary, a
// redis-server or an expiring-server, and the commands it sends back: Redis's handshake
// (PING, REPLCONF listening-port, REPLCONF capa eof capa psync2, PSYNC), the full sync's RDB
// framed as Redis frames it, then the stream, applied by StreamApplier (apply_stream.hpp) as a
// Redis replica applies it, with REPLCONF ACK of its offset.
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
#include "../rdb.hpp"
#include "apply_stream.hpp"
#include "commands.hpp"
#include "resp.hpp"
#include "value.hpp"

namespace expiring::redis {

// A change of a ValueStore as its change feed reports it: what write_change() sends.
using ValueChange = Change<std::string, Value>;

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

// The field command of a hash's field change (Change::field_op, D32), as Redis 7.4 sends
// them: HSET k f v ..., HDEL k f ..., HPEXPIREAT k <ms> FIELDS n f ... (one for each
// deadline the fields have, in deadline order), HPERSIST k FIELDS n f ....
template <class Sink>
void write_field_change(const ValueChange& c, const Hash& fields, Sink& out) {
  // Each command written as it goes: its length is known before its arguments.
  auto head = [&](std::string_view verb, std::size_t args) {
    Reply::write_array_header(out, args);
    detail::put_bulk(out, verb);
    detail::put_bulk(out, *c.key);
  };
  auto counted = [&](std::size_t n) {
    detail::put_bulk(out, "FIELDS");
    detail::put_bulk(out, detail::decimal(static_cast<std::int64_t>(n)));
  };
  switch (c.field_op) {
    case FieldOp::hset:
      head("HSET", 2 + 2 * fields.size());
      for (const auto& f : fields) {
        detail::put_bulk(out, f.name);
        detail::put_bulk(out, f.value);
      }
      return;
    case FieldOp::hdel:
      head("HDEL", 2 + fields.size());
      for (const auto& f : fields) detail::put_bulk(out, f.name);
      return;
    case FieldOp::hpexpireat: {  // one HPEXPIREAT for each deadline, in deadline order
      std::vector<std::pair<std::int64_t, std::uint32_t>> timed;
      timed.reserve(fields.size());
      for (std::uint32_t pos = 0; pos < fields.size(); ++pos) {
        if (fields.deadline(pos) != Hash::kNoDeadline) timed.emplace_back(fields.deadline(pos), pos);
      }
      std::sort(timed.begin(), timed.end());
      for (std::size_t b = 0; b < timed.size();) {
        std::size_t e = b;
        while (e < timed.size() && timed[e].first == timed[b].first) ++e;
        head("HPEXPIREAT", 5 + (e - b));
        detail::put_bulk(out, detail::decimal(timed[b].first));
        counted(e - b);
        for (; b < e; ++b) detail::put_bulk(out, fields.at(timed[b].second).name);
      }
      return;
    }
    case FieldOp::hpersist:
      head("HPERSIST", 4 + fields.size());
      counted(fields.size());
      for (const auto& f : fields) detail::put_bulk(out, f.name);
      return;
    case FieldOp::none: return;
  }
}

// Appends the RESP command that replays `c` (an array of bulk strings) to `out`, anything
// with append(const char*, std::size_t). A field change of a hash is sent as its field
// commands (write_field_change()); any other change of a hash as a RESTORE of the whole.
template <class Sink>
void write_change(const ValueChange& c, Sink& out) {
  auto cmd = [&](std::initializer_list<std::string_view> args) {
    Reply::write_array_header(out, args.size());
    for (std::string_view a : args) detail::put_bulk(out, a);
  };
  if (c.op == ChangeOp::set && c.field_op != FieldOp::none && c.fields != nullptr && c.fields->hash() != nullptr) {
    write_field_change(c, *c.fields->hash(), out);
    return;
  }
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
      const std::string payload = dump_value(*c.value);
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
    case ChangeOp::flushall: cmd({"FLUSHDB"}); return;  // a store is one database
    case ChangeOp::multi: cmd({"MULTI"}); return;
    case ChangeOp::exec: cmd({"EXEC"}); return;
  }
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

// Where a replica starts a link: the port it serves on (REPLCONF listening-port, which the
// primary shows in INFO), what it already holds (PSYNC <replid> <offset + 1>: a replica that
// was cut off asks to continue; "?" and -1 ask for a full sync) and the database it follows
// (one store) or in which the stream it continues stands (every database).
struct LinkStart {
  int listening_port = 0;    // sent as REPLCONF listening-port
  // The primary's requirepass (Redis's masterauth): AUTH after PING when not empty.
  std::string password;

  std::string replid = "?";  // the replication ID of the primary it holds data of; "?": none
  std::int64_t offset = -1;  // the offset of the last byte it applied
  std::int64_t db = 0;       // the database followed (one store) or the stream is in (every one)
};

// Everything a replica reads from its primary, bytes in, store changes and replies out:
//   1. the handshake, one command at a time, each answered before the next is sent:
//      PING (+PONG; -NOAUTH and -NOPERM are taken as a live primary, as Redis does), AUTH
//      <password> when the LinkStart has one (+OK), REPLCONF listening-port <port>, REPLCONF capa eof capa psync2 (errors ignored), then
//      PSYNC <replid> <offset>: +FULLRESYNC <replid> <offset> starts a full sync, +CONTINUE
//      [<new replid>] resumes the stream where this replica's offset stands (newlines before
//      the answer are the primary's keepalive);
//   2. the full sync: newlines while the primary prepares it, then the RDB as
//      `$<length>\r\n<bytes>` (no CRLF after it) or, for a primary that streams it from a
//      socket, `$EOF:<40-byte mark>\r\n<bytes><mark>`; loaded with load_rdb_bytes() as a
//      replica (stale keys kept; other types skipped and counted, other databases too);
//   3. the stream, whose every command counts in the offset; REPLCONF GETACK * queues
//      `REPLCONF ACK <offset>`, as ack() does (the owner calls it once a second).
// What to send is in outbox(); the socket, the reconnection and the timeout are the owner's.
// It trusts none of the primary's bytes:
//   * memory: a reply line is at most 64 KB; the RDB is held as it arrives, never reserved on
//     the primary's word, refused at once past `max_bulk` (announced or, with an EOF mark,
//     received); the stream is parsed with strict framing (ParserLimits::strict) and the limits
//     of a client's query buffer; an open MULTI counts against `max_buffer` with the unparsed
//     input. buffered_bytes() is what it holds, for the owner's used_memory.
//   * framing: a handshake reply that is not one of the above, an RDB that does not load (it
//     must end exactly at its checksum), a protocol error in the stream, MULTI inside MULTI or
//     EXEC without MULTI fail the link.
//   * the store: an RDB that does not load leaves it as it was; a command it refuses or does
//     not follow (another type, another database) is counted and the stream goes on.
// After a failure (feed() returns false, error() says why) it takes nothing more: the owner
// drops the connection and, for a new one, makes a new ReplicaLink with the replid and offset
// this one reached, so that the primary can continue instead of a full sync.
template <class Store>
class ReplicaLink {
 public:
  // Where the link is: the handshake (up to PSYNC's answer), the full sync's `$` line, its
  // RDB's bytes, the stream; or failed, for good.
  enum class State : std::uint8_t { handshake, sync_header, sync_payload, streaming, failed };

  // Follows database start.db of the primary into `store`.
  explicit ReplicaLink(Store& store, LinkLimits limits = {}, LinkStart start = {})
      : one_(&store), applier_(store, start.db), start_(std::move(start)) {
    begin(limits);
  }
  // Follows every database: dbs[n] holds database n; the stream starts in database
  // LinkStart::db (where the link it continues left it: selected_db()). The vector is the
  // caller's; the stream's SWAPDB swaps two of its entries (StreamApplier).
  explicit ReplicaLink(std::vector<Store*>& dbs, LinkLimits limits = {}, LinkStart start = {})
      : dbs_(&dbs), applier_(dbs, start.db), start_(std::move(start)) {
    begin(limits);
  }

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
        case State::handshake: used = feed_line(data, n, &ReplicaLink::on_handshake_line); break;
        case State::sync_header: used = feed_line(data, n, &ReplicaLink::on_sync_header); break;
        case State::sync_payload: used = feed_payload(data, n); break;
        case State::streaming: feed_stream(data, n); used = n; break;
        case State::failed: break;
      }
      data += used;
      n -= used;
    }
    return state_ != State::failed;
  }

  // What to send to the primary; the owner sends it and clears it.
  std::string& outbox() noexcept { return outbox_; }
  // Queues REPLCONF ACK <offset> (streaming only): the owner calls it once a second.
  void ack() {
    if (state_ == State::streaming) send({"REPLCONF", "ACK", std::to_string(offset_)});
  }

  // Where the link is; syncing(): not yet streaming (nor failed); error(): why it failed, ""
  // before it did.
  State state() const noexcept { return state_; }
  bool syncing() const noexcept { return state_ != State::streaming && state_ != State::failed; }
  const std::string& error() const noexcept { return error_; }
  // The primary's replication ID and the offset of the last byte applied (Redis's
  // master_replid and slave_repl_offset); what a new link passes on in its LinkStart.
  const std::string& replid() const noexcept { return replid_; }
  std::int64_t offset() const noexcept { return offset_; }
  // The database the stream last SELECTed: a link that continues this one (PSYNC +CONTINUE)
  // starts there (LinkStart::db), as the primary does not select it again.
  std::int64_t selected_db() const noexcept { return applier_.selected_db(); }
  // Whether the primary answered +CONTINUE (a partial resync, no RDB) rather than +FULLRESYNC.
  bool continued() const noexcept { return continued_; }
  // Bytes held for the primary: a reply line, the RDB so far, the stream's unparsed input and
  // pending command, an open MULTI's commands.
  std::size_t buffered_bytes() const noexcept {
    return line_.capacity() + payload_.capacity() + parser_.buffered_bytes() + applier_.held_bytes();
  }
  // What the full sync loaded (valid once streaming after a full sync).
  const RdbInfo& synced() const noexcept { return synced_; }
  // The stream's commands: applied, not followed (other types or databases), refused.
  const StreamApplier<Store>& applier() const noexcept { return applier_; }
  // Where the stream's PUBLISH messages go (StreamApplier::set_publish_handler()).
  void set_publish_handler(typename StreamApplier<Store>::PublishHandler h) { applier_.set_publish_handler(std::move(h)); }

 private:
  static constexpr std::size_t kMaxLine = 64 * 1024;  // Redis PROTO_INLINE_MAX_SIZE
  static constexpr std::size_t kMarkSize = 40;         // Redis RDB_EOF_MARK_SIZE
  enum class Step : std::uint8_t { pong, auth, port, capa, psync };

  bool fail(std::string why) {
    error_ = std::move(why);
    state_ = State::failed;
    std::string().swap(line_);
    std::string().swap(payload_);
    return false;
  }
  void send(std::initializer_list<std::string_view> args) {
    Reply::write_array_header(outbox_, args.size());
    for (std::string_view a : args) Reply::write_bulk(outbox_, a);
  }
  static std::string shown(std::string_view line) {
    std::string out(line.substr(0, std::min<std::size_t>(line.size(), 80)));
    for (char& c : out) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    }
    return out;
  }

  // Collects one line (up to '\n', CR stripped) and hands it to `on`.
  std::size_t feed_line(const char* data, std::size_t n, bool (ReplicaLink::*on)(std::string_view)) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', n));
    const std::size_t take = nl == nullptr ? n : static_cast<std::size_t>(nl - data) + 1;
    if (line_.size() + take > kMaxLine) {
      fail("a reply of the primary has no end within " + std::to_string(kMaxLine) + " bytes");
      return take;
    }
    line_.append(data, take);
    if (nl == nullptr) return take;
    std::string line;
    line.swap(line_);
    line.pop_back();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    (this->*on)(line);
    return take;
  }

  bool on_handshake_line(std::string_view line) {
    const bool error = !line.empty() && line[0] == '-';
    switch (step_) {
      case Step::pong:
        // Redis's replica takes an authentication error as a live primary (its AUTH comes next).
        if (line != "+PONG" && line.rfind("-NOAUTH", 0) != 0 && line.rfind("-NOPERM", 0) != 0 &&
            line.rfind("-ERR operation not permitted", 0) != 0) {
          return fail("the primary answered PING with '" + shown(line) + "'");
        }
        if (!start_.password.empty()) {
          step_ = Step::auth;
          send({"AUTH", start_.password});
          return true;
        }
        step_ = Step::port;
        send({"REPLCONF", "listening-port", std::to_string(start_.listening_port)});
        return true;
      case Step::auth:
        if (line != "+OK") return fail("the primary refused AUTH: '" + shown(line) + "'");
        step_ = Step::port;
        send({"REPLCONF", "listening-port", std::to_string(start_.listening_port)});
        return true;
      case Step::port:
        if (!error && line != "+OK") return fail("unexpected reply to REPLCONF: '" + shown(line) + "'");
        step_ = Step::capa;
        send({"REPLCONF", "capa", "eof", "capa", "psync2"});
        return true;
      case Step::capa:
        if (!error && line != "+OK") return fail("unexpected reply to REPLCONF: '" + shown(line) + "'");
        step_ = Step::psync;
        send({"PSYNC", replid_, offset_ < 0 ? std::string("-1") : std::to_string(offset_ + 1)});
        return true;
      case Step::psync: return on_psync_reply(line);
    }
    return true;
  }

  bool on_psync_reply(std::string_view line) {
    if (line.empty()) return true;  // the primary's keepalive before it answers
    if (line.rfind("+FULLRESYNC ", 0) == 0) {
      const std::string_view rest = line.substr(12);
      const std::size_t sp = rest.find(' ');
      std::int64_t off = 0;
      if (sp == std::string_view::npos || sp == 0 || sp > kMarkSize || !parse_int64(rest.substr(sp + 1), off) || off < 0) {
        return fail("a malformed +FULLRESYNC: '" + shown(line) + "'");
      }
      replid_ = std::string(rest.substr(0, sp));
      offset_ = off;
      continued_ = false;
      state_ = State::sync_header;
      return true;
    }
    if (line == "+CONTINUE" || line.rfind("+CONTINUE ", 0) == 0) {
      if (line.size() > 10) {
        const std::string_view id = line.substr(10);
        if (id.empty() || id.size() > kMarkSize) return fail("a malformed +CONTINUE: '" + shown(line) + "'");
        replid_ = std::string(id);
      }
      continued_ = true;
      state_ = State::streaming;
      return true;
    }
    return fail("the primary refused PSYNC: '" + shown(line) + "'");
  }

  // The RDB's header: "$<length>" or "$EOF:<mark>", after any number of keepalive newlines.
  bool on_sync_header(std::string_view line) {
    if (line.empty()) return true;  // the primary's keepalive while it prepares the RDB
    if (line.rfind("$EOF:", 0) == 0) {
      if (line.size() != 5 + kMarkSize) return fail("a malformed EOF mark: '" + shown(line) + "'");
      mark_ = std::string(line.substr(5));
      payload_len_ = 0;
      state_ = State::sync_payload;
      return true;
    }
    std::int64_t len = -1;
    if (line.size() < 2 || line[0] != '$' || !parse_int64(line.substr(1), len) || len < 0) {
      return fail("unexpected RDB header: '" + shown(line) + "'");
    }
    if (static_cast<std::uint64_t>(len) > limits_.max_bulk) {
      return fail("the primary announces an RDB of " + std::to_string(len) + " bytes, over proto-max-bulk-len (" +
                  std::to_string(limits_.max_bulk) + ")");
    }
    mark_.clear();
    payload_len_ = static_cast<std::size_t>(len);
    state_ = State::sync_payload;
    if (payload_len_ == 0) load();  // (no RDB is empty: this refuses it)
    return true;
  }

  // The RDB. The buffer grows with what arrives (geometrically, bounded by the announced
  // length or by max_bulk), never with what was announced.
  std::size_t feed_payload(const char* data, std::size_t n) {
    const bool marked = !mark_.empty();
    const std::size_t cap = payload_cap();
    std::size_t take = std::min(n, cap - std::min(cap, payload_.size()));
    if (marked) {
      // Up to the mark: the first place where the bytes so far hold it (a search that starts
      // in the tail of what came before, for a mark split between two reads).
      const std::size_t before = payload_.size();
      grow(before + take);
      payload_.append(data, take);
      const std::size_t from = before >= kMarkSize ? before - (kMarkSize - 1) : 0;
      const std::size_t at = std::string_view(payload_).find(mark_, from);
      if (at != std::string_view::npos) {
        const std::size_t used = at + kMarkSize - before;
        payload_.resize(at);
        load();
        return used;
      }
      if (payload_.size() >= cap) fail("the RDB is larger than proto-max-bulk-len (" + std::to_string(limits_.max_bulk) + ")");
      return take;
    }
    grow(payload_.size() + take);
    payload_.append(data, take);
    if (payload_.size() == payload_len_) load();
    return take;
  }
  // The most the RDB buffer may hold: the announced length, or (EOF-marked) proto-max-bulk-len
  // and the mark.
  std::size_t payload_cap() const noexcept { return mark_.empty() ? payload_len_ : limits_.max_bulk + kMarkSize; }
  // Room for `want` bytes: doubling, never past what the RDB may hold.
  void grow(std::size_t want) {
    if (want <= payload_.capacity()) return;
    std::string grown;
    grown.reserve(std::min(payload_cap(), std::max(want, 2 * payload_.capacity())));
    grown.append(payload_);
    payload_.swap(grown);
  }

  // Loads the RDB; a replica then acknowledges it at once (a primary that sent it from a
  // socket starts the stream on that first ACK).
  void load() {
    RdbLoadOptions o;
    o.as = LoadAs::replica;
    o.skip_other_types = true;
    o.db = static_cast<std::uint64_t>(start_.db < 0 ? 0 : start_.db);
    const auto r = dbs_ != nullptr ? load_rdb_databases_bytes(*dbs_, payload_, o) : load_rdb_bytes(*one_, payload_, o);
    if (!r.ok()) {
      fail("the RDB does not load: " + r.error().message);
      return;
    }
    synced_ = *r;
    std::string().swap(payload_);
    applier_.reset_selected_db();
    state_ = State::streaming;
    ack();
  }

  // The encoded size of a command: what it adds to the offset.
  static std::size_t encoded_size(const std::vector<std::string>& argv) {
    const auto digits = [](std::size_t v) {
      std::size_t d = 1;
      while (v >= 10) {
        v /= 10;
        ++d;
      }
      return d;
    };
    std::size_t n = 3 + digits(argv.size());
    for (const std::string& a : argv) n += 5 + digits(a.size()) + a.size();
    return n;
  }

  void feed_stream(const char* data, std::size_t n) {
    parser_.feed(data, n);
    for (;;) {
      const RequestParser::Status st = parser_.next(argv_);
      if (st == RequestParser::Status::incomplete) break;
      if (st == RequestParser::Status::limit) {
        fail("the stream holds more than client-query-buffer-limit (" + std::to_string(limits_.max_buffer) + " bytes)");
        return;
      }
      if (st == RequestParser::Status::protocol_error) {
        fail("a protocol error in the stream: " + parser_.error());
        return;
      }
      const StreamOutcome o = applier_.apply(argv_);
      if (o == StreamOutcome::failed) {
        fail(applier_.last_problem());
        return;
      }
      offset_ += static_cast<std::int64_t>(encoded_size(argv_));
      if (o == StreamOutcome::getack) ack();
    }
    if (parser_.buffered_bytes() + applier_.held_bytes() > limits_.max_buffer) {
      fail("the stream and its open MULTI hold more than client-query-buffer-limit (" + std::to_string(limits_.max_buffer) +
           " bytes)");
    }
  }

  void begin(const LinkLimits& limits) {
    set_limits(limits);
    replid_ = start_.replid;
    offset_ = start_.offset;
    send({"PING"});
  }

  Store* one_ = nullptr;                // ReplicaLink(store, ...)
  std::vector<Store*>* dbs_ = nullptr;  // ReplicaLink(dbs, ...)
  StreamApplier<Store> applier_;
  LinkStart start_;
  LinkLimits limits_;
  State state_ = State::handshake;
  Step step_ = Step::pong;
  std::string error_;
  std::string outbox_;
  std::string line_;
  std::string payload_;
  std::size_t payload_len_ = 0;
  std::string mark_;
  std::string replid_;
  std::int64_t offset_ = -1;
  bool continued_ = false;
  RequestParser parser_;
  std::vector<std::string> argv_;
  RdbInfo synced_;
};

}  // namespace expiring::redis
