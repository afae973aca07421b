// expiring/redis/cmd_keyspace.hpp: the keyspace commands: DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX
// COPY MOVE DUMP RESTORE KEYS SCAN RANDOMKEY.
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table (name, arity, flags, key positions, handler) are in commands.hpp, which
// includes this file at its end. Include commands.hpp, not this file.
#pragma once

#include "commands.hpp"

namespace expiring::redis {

// ==== Keyspace ==============================================================================

template <class Clock>
Reply CommandExecutor<Clock>::cmd_del(const Args& a, Session&) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += store_->del(a[i]) ? 1 : 0;
  return Reply::integer(n);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_unlink(const Args& a, Session&) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += store_->unlink(a[i]) ? 1 : 0;
  return Reply::integer(n);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_exists(const Args& a, Session&) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += store_->exists(a[i]) ? 1 : 0;
  return Reply::integer(n);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_touch(const Args& a, Session&) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += store_->touch(a[i]) ? 1 : 0;
  return Reply::integer(n);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_type(const Args& a, Session&) {
  if (!store_->exists(a[1])) return Reply::status("none");
  const Value* v = store_->peek(a[1]);
  return Reply::status(v == nullptr ? "none" : v->type_name());
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_rename(const Args& a, Session&) {
  Result<void> r = store_->rename(a[1], a[2]);
  return r.ok() ? ok() : Reply::error("ERR no such key");
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_renamenx(const Args& a, Session&) {
  Result<bool> r = store_->renamenx(a[1], a[2]);
  if (!r.ok()) return Reply::error("ERR no such key");
  return Reply::integer(*r ? 1 : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_copy(const Args& a, Session&) {
  bool replace = false;
  store_type* dst = store_;
  for (std::size_t j = 3; j < a.size(); ++j) {
    const std::size_t additional = a.size() - j - 1;
    if (detail::is_opt(a[j], "replace")) {
      replace = true;
    } else if (detail::is_opt(a[j], "db") && additional > 0) {
      std::int64_t db = 0;
      if (!to_int(a[j + 1], db)) return not_integer();
      if (db < std::numeric_limits<int>::min() || db > std::numeric_limits<int>::max()) {
        return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
      }
      if (db < 0 || static_cast<std::uint64_t>(db) >= dbs_.size()) return Reply::error("ERR DB index is out of range");
      dst = dbs_[static_cast<std::size_t>(db)];
      ++j;
    } else {
      return syntax_error();
    }
  }
  if (dst == store_ && a[1] == a[2]) return Reply::error("ERR source and destination objects are the same");
  if (dst != store_) {
    if (!store_->exists(a[1])) return Reply::integer(0);  // (a read: Redis's lookupKeyRead)
    const std::optional<Exported> key = export_key(*store_, a[1]);
    if (!key || (!replace && present_for_write(*dst, a[2]))) return Reply::integer(0);
    return import_key(*dst, a[2], *key);
  }
  Result<bool> r = store_->copy(a[1], a[2], replace);
  if (!r.ok()) {
    if (r.error() == Errc::out_of_memory) return oom_error();
    return Reply::error("ERR source and destination objects are the same");
  }
  return Reply::integer(*r ? 1 : 0);
}

// MOVE key db: to another database, unless the key exists there (Redis 7.0's checks, in order).
template <class Clock>
Reply CommandExecutor<Clock>::cmd_move(const Args& a, Session&) {
  std::int64_t db = 0;
  if (!to_int(a[2], db)) return not_integer();
  if (db < std::numeric_limits<int>::min() || db > std::numeric_limits<int>::max()) {
    return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
  }
  if (db < 0 || static_cast<std::uint64_t>(db) >= dbs_.size()) return Reply::error("ERR DB index is out of range");
  store_type& dst = *dbs_[static_cast<std::size_t>(db)];
  if (&dst == store_) return Reply::error("ERR source and destination objects are the same");
  std::optional<Exported> key = export_key(*store_, a[1]);
  if (!key || present_for_write(dst, a[1])) return Reply::integer(0);
  const Reply r = import_key(dst, a[1], *key);
  if (r.type() == Reply::Type::integer) (void)store_->del(a[1]);
  return r;
}

// A key's value as its DUMP payload (which carries the hash fields' deadlines, and is read
// into another store's own field maps) and its deadline, looked up as Redis's lookupKeyWrite
// does (a stale key is reclaimed; no hit or miss counted); nullopt when it does not exist.
template <class Clock>
auto CommandExecutor<Clock>::export_key(store_type& from, const std::string& key) -> std::optional<Exported> {
  std::optional<Exported> out;
  (void)from.compute(key, [&](const Value* v, std::int64_t pexpiretime) {
    if (v != nullptr) out = Exported{expiring::dump_value(*v), pexpiretime};
    return Computed<Value>::keep();
  });
  return out;
}

// Whether `key` exists in `in`, looked up as export_key() does (a stale key is reclaimed).
template <class Clock>
bool CommandExecutor<Clock>::present_for_write(store_type& in, const std::string& key) {
  bool present = false;
  (void)in.compute(key, [&](const Value* v, std::int64_t) {
    present = v != nullptr;
    return Computed<Value>::keep();
  });
  return present;
}

// Stores an exported key as `key` of `to`, replacing what is there: 1, or the store's error.
template <class Clock>
Reply CommandExecutor<Clock>::import_key(store_type& to, const std::string& key, const Exported& e) {
  RestoreOptions o;
  o.replace = true;
  o.absttl = true;
  o.ttl_ms = e.pexpiretime >= 0 ? e.pexpiretime : 0;
  const FileResult<bool> r = expiring::restore(to, key, e.payload, o);
  if (!r.ok()) return r.error().code == Errc::out_of_memory ? oom_error() : Reply::error("ERR " + r.error().message);
  return Reply::integer(1);
}

// DUMP and RESTORE: the payload is Redis 7.0's, byte for byte (rdb.hpp dump()/restore()).
template <class Clock>
Reply CommandExecutor<Clock>::cmd_dump(const Args& a, Session&) {
  std::optional<std::string> p = expiring::dump(*store_, a[1]);
  return p ? Reply::bulk(std::move(*p)) : Reply::nil();
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency], checked in
// Redis's order: the options, the existing key, the TTL, the payload's footer, its value.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_restore(const Args& a, Session&) {
  RestoreOptions o;
  for (std::size_t j = 4; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    std::int64_t n = 0;
    if (detail::iequals(a[j], "replace")) {
      o.replace = true;
    } else if (detail::iequals(a[j], "absttl")) {
      o.absttl = true;
    } else if (detail::iequals(a[j], "idletime") && more && !o.freq) {
      if (!parse_int64(a[++j], n)) return not_integer();
      if (n < 0) return Reply::error("ERR Invalid IDLETIME value, must be >= 0");
      o.idle_seconds = n;
    } else if (detail::iequals(a[j], "freq") && more && !o.idle_seconds) {
      if (!parse_int64(a[++j], n)) return not_integer();
      if (n < 0 || n > 255) return Reply::error("ERR Invalid FREQ value, must be >= 0 and <= 255");
      o.freq = static_cast<std::uint8_t>(n);
    } else {
      return syntax_error();
    }
  }
  if (!o.replace && store_->exists(a[1])) return Reply::error("BUSYKEY Target key name already exists.");
  if (!parse_int64(a[2], o.ttl_ms)) return not_integer();
  if (o.ttl_ms < 0) return Reply::error("ERR Invalid TTL value, must be >= 0");
  const FileResult<bool> r = expiring::restore(*store_, a[1], a[3], o);
  if (r.ok()) return ok();
  switch (r.error().code) {
    case Errc::bad_dump_payload: return Reply::error("ERR DUMP payload version or checksum are wrong");
    // (Redis's relative TTL cannot overflow in practice; ours refuses rather than wrap.)
    case Errc::invalid_expire_time: return invalid_expire("restore");
    case Errc::busy_key: return Reply::error("BUSYKEY Target key name already exists.");
    case Errc::unsupported_type: return Reply::error("ERR " + r.error().message);
    default: return Reply::error("ERR Bad data format");
  }
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_keys(const Args& a, Session&) {
  const std::string& pat = a[1];
  const bool all = pat.size() == 1 && pat[0] == '*';
  Reply r = Reply::array();
  for (std::string& k : store_->keys()) {
    if (all || glob_match(pat, k)) r.push(Reply::bulk(std::move(k)));
  }
  return r;
}

// SCAN's and HSCAN's options from a[from] on: COUNT n (>= 1), MATCH pattern, and TYPE t for
// SCAN, NOVALUES for HSCAN (Redis 7.4); an error reply, or nullopt.
template <class Clock>
std::optional<Reply> CommandExecutor<Clock>::parse_scan_options(const Args& a, std::size_t from, bool scan, ScanOptions& o) {
  for (std::size_t i = from; i < a.size();) {
    const std::size_t left = a.size() - i;
    if (detail::is_opt(a[i], "count") && left >= 2) {
      if (!to_int(a[i + 1], o.count)) return not_integer();
      if (o.count < 1) return syntax_error();
      i += 2;
    } else if (detail::is_opt(a[i], "match") && left >= 2) {
      o.pattern = &a[i + 1];
      i += 2;
    } else if (scan && detail::is_opt(a[i], "type") && left >= 2) {
      o.type = &a[i + 1];
      i += 2;
    } else if (!scan && detail::is_opt(a[i], "novalues")) {
      o.novalues = true;
      ++i;
    } else {
      return syntax_error();
    }
  }
  return std::nullopt;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_scan(const Args& a, Session&) {
  std::uint64_t cursor = 0;
  if (!detail::parse_scan_cursor(a[1], cursor)) return Reply::error("ERR invalid cursor");
  ScanOptions o;
  if (std::optional<Reply> bad = parse_scan_options(a, 2, /*scan=*/true, o)) return std::move(*bad);
  const std::string* type = o.type;
  std::vector<std::string> keys;
  const std::uint64_t next =
      store_->scan(cursor, static_cast<std::size_t>(o.count), [&](const std::string& k, const Value&) {
        if (o.matches(k)) keys.push_back(k);
      });
  Reply list = Reply::array();
  for (std::string& k : keys) {
    if (type != nullptr) {
      // Redis looks each key up to learn its type (a read: counts a hit).
      const Value* v = store_->exists(k) ? store_->peek(k) : nullptr;
      const char* t = v == nullptr ? "none" : v->type_name();
      if (!detail::iequals(detail::cstr(*type), t)) continue;
    }
    list.push(Reply::bulk(std::move(k)));
  }
  std::string c;
  c = std::to_string(next);
  return Reply::array({Reply::bulk(std::move(c)), std::move(list)});
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_randomkey(const Args&, Session&) { return bulk_or_nil(store_->random_key()); }

}  // namespace expiring::redis
