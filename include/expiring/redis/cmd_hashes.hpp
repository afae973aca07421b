// expiring/redis/cmd_hashes.hpp: the hash commands and Redis 7.4's hash field expiry: HSET HMSET HSETNX HGET HMGET HDEL
// HLEN HSTRLEN HEXISTS HGETALL HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT HTTL HPTTL
// HEXPIRETIME HPEXPIRETIME HPERSIST, and Redis 8's HGETEX HGETDEL HSETEX.
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table (name, arity, flags, key positions, handler) are in commands.hpp, which
// includes this file at its end. Include commands.hpp, not this file.
#pragma once

#include <cmath>
#include <limits>

#include "../detail/decimal.hpp"
#include "commands.hpp"

namespace expiring::redis {

// ==== Hashes ================================================================================

template <class Clock>
Reply CommandExecutor<Clock>::hash_error(Errc e, const char* cmd) {
  switch (e) {
    case Errc::wrong_type: return wrong_type();
    case Errc::out_of_memory: return oom_error();
    case Errc::not_an_integer: return Reply::error("ERR hash value is not an integer");
    case Errc::overflow: return Reply::error("ERR increment or decrement would overflow");
    case Errc::negative_expire_time: return Reply::error("ERR invalid expire time, must be >= 0");
    default: return invalid_expire(cmd);
  }
}

// The fields of a command, argv[from ..], as views (no copies).
template <class Clock>
std::vector<std::string_view> CommandExecutor<Clock>::fields_of(const Args& a, std::size_t from) {
  return std::vector<std::string_view>(a.begin() + static_cast<std::ptrdiff_t>(from), a.end());
}

template <class Clock>
Reply CommandExecutor<Clock>::integers(const std::vector<int>& v) {
  Reply r = Reply::array();
  for (int x : v) r.push(Reply::integer(x));
  return r;
}

template <class Clock>
Reply CommandExecutor<Clock>::integers(const std::vector<std::int64_t>& v) {
  Reply r = Reply::array();
  for (std::int64_t x : v) r.push(Reply::integer(x));
  return r;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hset(const Args& a, Session&) {
  if (a.size() % 2 != 0) return arity_error(detail::lowercase(a[0]));
  if (holds_string(a[1], false)) return wrong_type();
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  pairs.reserve((a.size() - 2) / 2);
  for (std::size_t i = 2; i + 1 < a.size(); i += 2) pairs.emplace_back(a[i], a[i + 1]);
  Result<std::size_t> r = store_->hset(a[1], pairs);
  if (!r.ok()) return hash_error(r.error(), "hset");
  return Reply::integer(static_cast<std::int64_t>(*r));
}

// HMSET: HSET's older form, which replies OK.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hmset(const Args& a, Session& s) {
  Reply r = cmd_hset(a, s);
  return r.is_error() ? r : ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hsetnx(const Args& a, Session&) {
  if (holds_string(a[1], false)) return wrong_type();
  Result<bool> r = store_->hsetnx(a[1], a[2], a[3]);
  if (!r.ok()) return hash_error(r.error(), "hsetnx");
  return Reply::integer(*r ? 1 : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hget(const Args& a, Session&) {
  Result<const std::string*> r = store_->hget(a[1], std::string_view(a[2]));
  if (!r.ok()) return hash_error(r.error(), "hget");
  return bulk_or_nil(*r);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hmget(const Args& a, Session&) {
  const std::vector<std::string_view> f = fields_of(a, 2);
  std::vector<const std::string*> out(f.size());
  Result<std::size_t> r = store_->hmget(a[1], f, out.data());
  if (!r.ok()) return hash_error(r.error(), "hmget");
  Reply list = Reply::array();
  for (const std::string* v : out) list.push(bulk_or_nil(v));
  return list;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hdel(const Args& a, Session&) {
  Result<std::size_t> r = store_->hdel(a[1], fields_of(a, 2));
  if (!r.ok()) return hash_error(r.error(), "hdel");
  return Reply::integer(static_cast<std::int64_t>(*r));
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hlen(const Args& a, Session&) {
  Result<std::size_t> r = store_->hlen(a[1]);
  if (!r.ok()) return hash_error(r.error(), "hlen");
  return Reply::integer(static_cast<std::int64_t>(*r));
}

// HSTRLEN: the length of the field's value, 0 when there is none.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hstrlen(const Args& a, Session&) {
  Result<const std::string*> r = store_->hget(a[1], std::string_view(a[2]));
  if (!r.ok()) return hash_error(r.error(), "hstrlen");
  return Reply::integer(*r != nullptr ? static_cast<std::int64_t>((*r)->size()) : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hexists(const Args& a, Session&) {
  Result<bool> r = store_->hexists(a[1], std::string_view(a[2]));
  if (!r.ok()) return hash_error(r.error(), "hexists");
  return Reply::integer(*r ? 1 : 0);
}

// HGETALL (names and values), HKEYS, HVALS: one visit.
template <class Clock>
Reply CommandExecutor<Clock>::hash_listing(const Args& a, bool names, bool values) {
  Reply list = names && values ? Reply::map() : Reply::array();  // HGETALL: a map in RESP3
  Result<std::size_t> r = store_->hvisit(a[1], [&](const std::string& f, const std::string& v) {
    if (names) list.push(Reply::bulk(f));
    if (values) list.push(Reply::bulk(v));
  });
  if (!r.ok()) return hash_error(r.error(), "hgetall");
  return list;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hgetall(const Args& a, Session&) { return hash_listing(a, true, true); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hkeys(const Args& a, Session&) { return hash_listing(a, true, false); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hvals(const Args& a, Session&) { return hash_listing(a, false, true); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hincrby(const Args& a, Session&) {
  std::int64_t delta = 0;
  if (!to_int(a[3], delta)) return not_integer();  // before the type, as Redis
  if (holds_string(a[1], false)) return wrong_type();
  Result<std::int64_t> r = store_->hincrby(a[1], std::string_view(a[2]), delta);
  if (!r.ok()) return hash_error(r.error(), "hincrby");
  return Reply::integer(*r);
}

// HINCRBYFLOAT key field increment: Redis 7.0's order of checks (the increment, the type,
// the stored value, the sum); the field's TTL kept.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hincrbyfloat(const Args& a, Session&) {
  long double delta = 0;
  if (!detail::parse_long_double(a[3], delta)) return Reply::error("ERR value is not a valid float");
  if (std::isnan(delta) || std::isinf(delta)) return Reply::error("ERR value is NaN or Infinity");
  if (holds_string(a[1], false)) return wrong_type();
  Result<std::string> r = store_->hincrbyfloat(a[1], std::string_view(a[2]), delta);
  if (!r.ok()) {
    if (r.error() == Errc::not_a_float) return Reply::error("ERR hash value is not a float");
    if (r.error() == Errc::overflow) return Reply::error("ERR increment would produce NaN or Infinity");
    return hash_error(r.error(), "hincrbyfloat");
  }
  return Reply::bulk(std::move(*r));
}

// HRANDFIELD key [count [WITHVALUES]] (Redis 7.0's checks and replies). The fields are written
// into a buffer of the client's output limit first, so that a count of -2^62 stops at that
// limit (the client is then closed, as Redis closes it) rather than run on.
template <class Clock>
void CommandExecutor<Clock>::write_hrandfield(const Args& a, Session& s, OutputBuffer& out) {
  const bool with_count = a.size() >= 3;
  std::int64_t count = 1;
  bool values = false;
  if (with_count) {
    if (!to_int(a[2], count)) return not_integer().write_resp(out);
    if (count == std::numeric_limits<std::int64_t>::min()) {
      return Reply::error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
          .write_resp(out);
    }
    if (a.size() > 4 || (a.size() == 4 && !detail::is_opt(a[3], "withvalues"))) return syntax_error().write_resp(out);
    values = a.size() == 4;
    constexpr std::int64_t kHalf = std::numeric_limits<std::int64_t>::max() / 2;
    if (values && (count < -kHalf || count > kHalf)) return Reply::error("ERR value is out of range").write_resp(out);
  }
  if (holds_string(a[1], false)) return wrong_type().write_resp(out);
  OutputBuffer body;
  body.set_limit(out.limit());
  const bool pairs = values && s.resp >= 3;  // RESP3: an array of [field, value] arrays
  const Result<std::size_t> n = store_->hrandfield(a[1], count, [&](const std::string& f, const std::string& v) {
    if (pairs) Reply::write_array_header(body, 2);
    Reply::write_bulk(body, f);
    if (values) Reply::write_bulk(body, v);
    return !body.over_limit();
  });
  const std::size_t calls = n.ok() ? *n : 0;
  if (!with_count) {
    if (calls == 0) return Reply::write_nil(out, s.resp);
  } else {
    Reply::write_array_header(out, values && !pairs ? calls * 2 : calls);
  }
  out.append(body);
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES] (NOVALUES: Redis 7.4).
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hscan(const Args& a, Session&) {
  std::uint64_t cursor = 0;
  if (!detail::parse_scan_cursor(a[2], cursor)) return Reply::error("ERR invalid cursor");
  if (holds_string(a[1], false)) return wrong_type();
  ScanOptions o;
  if (std::optional<Reply> bad = parse_scan_options(a, 3, /*scan=*/false, o)) return std::move(*bad);
  Reply list = Reply::array();
  const Result<std::uint64_t> next =
      store_->hscan(a[1], cursor, static_cast<std::size_t>(o.count), [&](const std::string& f, const std::string& v) {
        if (!o.matches(f)) return;
        list.push(Reply::bulk(f));
        if (!o.novalues) list.push(Reply::bulk(v));
      });
  return Reply::array({Reply::bulk(std::to_string(next.ok() ? *next : 0)), std::move(list)});
}

// numFields as Redis reads it: a long in [1, LONG_MAX].
template <class Clock>
bool CommandExecutor<Clock>::field_count(const std::string& s, std::int64_t& n) { return to_int(s, n) && n >= 1; }

template <class Clock>
Reply CommandExecutor<Clock>::fields_missing() {
  return Reply::error("ERR Mandatory argument FIELDS is missing or not at the right position");
}

template <class Clock>
Reply CommandExecutor<Clock>::fields_mismatch() {
  return Reply::error("ERR The `numfields` parameter must match the number of arguments");
}

// A field time argument (HEXPIRE's family, HGETEX, HSETEX) as Redis checks it: an integer,
// >= 0, and a deadline within the cap; the error to answer, or nothing.
template <class Clock>
std::optional<Reply> CommandExecutor<Clock>::field_time_arg(const std::string& arg, std::int64_t unit, bool absolute,
                                                            const char* name, std::int64_t& v) {
  if (!to_int(arg, v)) return not_integer();
  if (v < 0) return Reply::error("ERR invalid expire time, must be >= 0");
  constexpr std::int64_t kCap = expiring::detail::kMaxFieldDeadline;
  if (v > kCap / unit) return invalid_expire(name);
  const std::int64_t base = absolute ? 0 : store_->now_ms();
  if (v * unit > expiring::detail::saturating_sub(kCap, base)) return invalid_expire(name);
  return std::nullopt;
}

// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT] FIELDS numfields field...
// in Redis 7.4's order (research §1.2): type, time (integer, >= 0, the cap), the condition,
// FIELDS, numfields, the count, then the store.
template <class Clock>
Reply CommandExecutor<Clock>::hexpire_generic(const Args& a, const char* name, std::int64_t unit, bool absolute) {
  if (holds_string(a[1], false)) return wrong_type();
  std::int64_t v = 0;
  if (std::optional<Reply> bad = field_time_arg(a[2], unit, absolute, name, v)) return std::move(*bad);
  std::size_t at = 3;
  ExpireFlags flags = ExpireFlags::None;
  if (detail::is_opt(a[at], "nx")) {
    flags = ExpireFlags::NX;
  } else if (detail::is_opt(a[at], "xx")) {
    flags = ExpireFlags::XX;
  } else if (detail::is_opt(a[at], "gt")) {
    flags = ExpireFlags::GT;
  } else if (detail::is_opt(a[at], "lt")) {
    flags = ExpireFlags::LT;
  }
  if (flags != ExpireFlags::None) ++at;
  if (at >= a.size() || !detail::is_opt(a[at], "fields")) return fields_missing();
  std::int64_t n = 0;
  if (at + 1 >= a.size() || !field_count(a[at + 1], n)) {
    return Reply::error("ERR Parameter `numFields` should be greater than 0");
  }
  if (static_cast<std::uint64_t>(n) != a.size() - at - 2) return fields_mismatch();
  const std::vector<std::string_view> f = fields_of(a, at + 2);
  Result<std::vector<int>> r = std::vector<int>{};
  if (unit == 1000 && !absolute) r = store_->hexpire(a[1], v, f, flags);
  if (unit == 1 && !absolute) r = store_->hpexpire(a[1], v, f, flags);
  if (unit == 1000 && absolute) r = store_->hexpireat(a[1], v, f, flags);
  if (unit == 1 && absolute) r = store_->hpexpireat(a[1], v, f, flags);
  if (!r.ok()) return hash_error(r.error(), name);
  return integers(*r);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hexpire(const Args& a, Session&) { return hexpire_generic(a, "hexpire", 1000, false); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hpexpire(const Args& a, Session&) { return hexpire_generic(a, "hpexpire", 1, false); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hexpireat(const Args& a, Session&) { return hexpire_generic(a, "hexpireat", 1000, true); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hpexpireat(const Args& a, Session&) { return hexpire_generic(a, "hpexpireat", 1, true); }

template <class Clock>
Reply CommandExecutor<Clock>::field_query(const Args& a, FieldQuery q) {
  if (holds_string(a[1], q != FieldQuery::persist)) return wrong_type();
  if (!detail::is_opt(a[2], "fields")) return fields_missing();
  std::int64_t n = 0;
  if (!field_count(a[3], n)) return Reply::error("ERR Number of fields must be a positive integer");
  if (static_cast<std::uint64_t>(n) != a.size() - 4) return fields_mismatch();
  const std::vector<std::string_view> f = fields_of(a, 4);
  if (q == FieldQuery::persist) {
    Result<std::vector<int>> r = store_->hpersist(a[1], f);
    if (!r.ok()) return hash_error(r.error(), "hpersist");
    return integers(*r);
  }
  Result<std::vector<std::int64_t>> r = std::vector<std::int64_t>{};
  switch (q) {
    case FieldQuery::ttl: r = store_->httl(a[1], f); break;
    case FieldQuery::pttl: r = store_->hpttl(a[1], f); break;
    case FieldQuery::expiretime: r = store_->hexpiretime(a[1], f); break;
    default: r = store_->hpexpiretime(a[1], f); break;
  }
  if (!r.ok()) return hash_error(r.error(), "httl");
  return integers(*r);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_httl(const Args& a, Session&) { return field_query(a, FieldQuery::ttl); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hpttl(const Args& a, Session&) { return field_query(a, FieldQuery::pttl); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hexpiretime(const Args& a, Session&) { return field_query(a, FieldQuery::expiretime); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hpexpiretime(const Args& a, Session&) { return field_query(a, FieldQuery::pexpiretime); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hpersist(const Args& a, Session&) { return field_query(a, FieldQuery::persist); }

// ==== Redis 8: HGETEX, HGETDEL, HSETEX ======================================================

// HGETEX's and HSETEX's EX / PX / EXAT / PXAT `option` with its time `arg`: nullopt when
// `option` is none of them; else the time's error, or nothing with `ttl` set.
template <class Clock>
std::optional<std::optional<Reply>> CommandExecutor<Clock>::field_ttl_option(const std::string& option,
                                                                              const std::string& arg, const char* name,
                                                                              FieldTtl& ttl) {
  struct Form {
    const char* name;
    std::int64_t unit;
    bool absolute;
    FieldTtl (*make)(std::int64_t);
  };
  static constexpr Form kForms[] = {{"ex", 1000, false, &FieldTtl::ex},
                                    {"px", 1, false, &FieldTtl::px},
                                    {"exat", 1000, true, &FieldTtl::exat},
                                    {"pxat", 1, true, &FieldTtl::pxat}};
  for (const Form& f : kForms) {
    if (!detail::is_opt(option, f.name)) continue;
    std::int64_t v = 0;
    if (std::optional<Reply> bad = field_time_arg(arg, f.unit, f.absolute, name, v)) return bad;
    ttl = f.make(v);
    return std::optional<Reply>();
  }
  return std::nullopt;
}

template <class Clock>
Reply CommandExecutor<Clock>::field_values(const Result<std::vector<std::optional<std::string>>>& r, const char* name) {
  if (!r.ok()) return hash_error(r.error(), name);
  Reply list = Reply::array();
  for (const std::optional<std::string>& v : *r) list.push(bulk_or_nil(v));
  return list;
}

// HGETEX key [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | PERSIST] FIELDS numfields field...:
// the type, the option and its time, FIELDS, numfields, the count, then the store.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hgetex(const Args& a, Session&) {
  if (holds_string(a[1], false)) return wrong_type();
  FieldTtl ttl = FieldTtl::keep();
  std::size_t at = 2;  // FIELDS
  if (std::optional<std::optional<Reply>> timed = field_ttl_option(a[2], a[3], "hgetex", ttl)) {
    if (*timed) return std::move(**timed);
    at = 4;
  } else if (detail::is_opt(a[2], "persist")) {
    ttl = FieldTtl::persist();
    at = 3;
  }
  if (!detail::is_opt(a[at], "fields")) return fields_missing();  // (at < 5 <= a.size(): the arity)
  if (at + 1 >= a.size()) return arity_error("hgetex");           // EX t FIELDS, and nothing after
  std::int64_t n = 0;
  if (!field_count(a[at + 1], n)) return Reply::error("ERR Number of fields must be a positive integer");
  if (static_cast<std::uint64_t>(n) != a.size() - at - 2) return fields_mismatch();
  return field_values(store_->hgetex(a[1], fields_of(a, at + 2), ttl), "hgetex");
}

// HGETDEL key FIELDS numfields field...
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hgetdel(const Args& a, Session&) {
  if (holds_string(a[1], false)) return wrong_type();
  if (!detail::is_opt(a[2], "fields")) return fields_missing();
  std::int64_t n = 0;
  if (!field_count(a[3], n)) return Reply::error("ERR Number of fields must be a positive integer");
  if (static_cast<std::uint64_t>(n) != a.size() - 4) return fields_mismatch();
  return field_values(store_->hgetdel(a[1], fields_of(a, 4)), "hgetdel");
}

// HSETEX key [FNX | FXX] [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
// FIELDS numfields field value ...: the arguments first (as Redis, before the type), in the
// order given, up to FIELDS; then the type and the store. Replies 1 if the fields were
// written, 0 if FNX or FXX did not hold.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_hsetex(const Args& a, Session&) {
  const Reply one_ttl = Reply::error("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
  FieldCondition cond = FieldCondition::none;
  std::optional<FieldTtl> ttl;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (detail::is_opt(a[i], "fields")) {
      if (i + 3 >= a.size()) return arity_error("hsetex");
      std::int64_t n = 0;
      if (!to_int(a[i + 1], n) || n < 1 || n > std::numeric_limits<int>::max()) {
        return Reply::error("ERR invalid number of fields");
      }
      const std::size_t rest = a.size() - i - 2;
      if (rest % 2 != 0 || static_cast<std::uint64_t>(n) != rest / 2) return arity_error("hsetex");
      if (holds_string(a[1], false)) return wrong_type();
      std::vector<std::pair<std::string_view, std::string_view>> pairs;
      pairs.reserve(rest / 2);
      for (std::size_t j = i + 2; j + 1 < a.size(); j += 2) pairs.emplace_back(a[j], a[j + 1]);
      Result<bool> r = store_->hsetex(a[1], pairs, ttl.value_or(FieldTtl::persist()), cond);
      if (!r.ok()) return hash_error(r.error(), "hsetex");
      return Reply::integer(*r ? 1 : 0);
    }
    static const std::string kNone;
    FieldTtl t;
    if (std::optional<std::optional<Reply>> timed =
            field_ttl_option(a[i], i + 1 < a.size() ? a[i + 1] : kNone, "hsetex", t)) {
      if (ttl) return one_ttl;  // Redis's order: the conflict, the missing time, then the time
      if (i + 1 >= a.size()) return Reply::error("ERR missing expire time");
      if (*timed) return std::move(**timed);
      ttl = t;
      ++i;
    } else if (detail::is_opt(a[i], "keepttl")) {
      if (ttl) return one_ttl;
      ttl = FieldTtl::keep();
    } else if (detail::is_opt(a[i], "fxx") || detail::is_opt(a[i], "fnx")) {
      if (cond != FieldCondition::none) return Reply::error("ERR Only one of FXX or FNX arguments can be specified");
      cond = detail::is_opt(a[i], "fxx") ? FieldCondition::fxx : FieldCondition::fnx;
    } else {
      return Reply::error("ERR unknown argument: " + a[i]);
    }
  }
  return arity_error("hsetex");  // no FIELDS (Redis's syntax leaves none of these without an error above)
}

}  // namespace expiring::redis
