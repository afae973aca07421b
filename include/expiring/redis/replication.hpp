// expiring/redis/replication.hpp: a ValueStore's change feed as RESP commands, and back.
//
// The resp_server example streams these commands from a primary to its replicas after the
// full sync's snapshot (examples/resp_server.cpp, REPLICAOF), as Redis 7 does: every TTL
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
// as valid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../change_feed.hpp"
#include "../codec.hpp"
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

}  // namespace expiring::redis
