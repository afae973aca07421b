// expiring/redis/cmd_strings.hpp: the string commands: GET SET SETEX PSETEX SETNX GETSET GETDEL GETEX MGET MSET MSETNX
// STRLEN APPEND GETRANGE SUBSTR SETRANGE SETBIT GETBIT LCS INCR DECR INCRBY DECRBY INCRBYFLOAT.
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table (name, arity, flags, key positions, handler) are in commands.hpp, which
// includes this file at its end. Include commands.hpp, not this file.
#pragma once

#include <cmath>
#include <new>

#include "../detail/decimal.hpp"
#include "commands.hpp"

namespace expiring::redis {

namespace detail {

using expiring::detail::format_long_double;
using expiring::detail::parse_long_double;

}  // namespace detail

// ==== Strings ===============================================================================

template <class Clock>
void CommandExecutor<Clock>::write_bulk_or_nil(OutputBuffer& out, const std::string* v, int proto) {
  if (v != nullptr) {
    Reply::write_bulk(out, *v);
  } else {
    Reply::write_nil(out, proto);
  }
}

template <class Clock>
void CommandExecutor<Clock>::write_get(const Args& a, Session& s, OutputBuffer& out) {
  const Value* v = store_->get(a[1]);
  if (v != nullptr && v->is_hash()) {
    wrong_type().write_resp(out);
    return;
  }
  write_bulk_or_nil(out, v == nullptr ? nullptr : v->string(), s.resp);
}

template <class Clock>
bool CommandExecutor<Clock>::parse_string_opts(const Args& a, std::size_t from, bool get_mode, StrOpts& o) {
  using K = ExpKind;
  for (std::size_t j = from; j < a.size(); ++j) {
    const std::string& opt = a[j];
    const bool has_next = j + 1 < a.size();
    const bool any_expire = o.kind != K::none;
    if (!get_mode && detail::is_opt(opt, "nx") && !o.xx) {
      o.nx = true;
    } else if (!get_mode && detail::is_opt(opt, "xx") && !o.nx) {
      o.xx = true;
    } else if (!get_mode && detail::is_opt(opt, "get")) {
      o.get = true;
    } else if (!get_mode && detail::is_opt(opt, "keepttl") && !o.persist && !any_expire) {
      o.keepttl = true;
    } else if (get_mode && detail::is_opt(opt, "persist") && !any_expire && !o.keepttl) {
      o.persist = true;
    } else if (has_next && !o.keepttl && !o.persist &&
               ((detail::is_opt(opt, "ex") && (o.kind == K::none || o.kind == K::ex)) ||
                (detail::is_opt(opt, "px") && (o.kind == K::none || o.kind == K::px)) ||
                (detail::is_opt(opt, "exat") && (o.kind == K::none || o.kind == K::exat)) ||
                (detail::is_opt(opt, "pxat") && (o.kind == K::none || o.kind == K::pxat)))) {
      const std::string_view t = detail::cstr(opt);
      o.kind = detail::iequals(t, "ex") ? K::ex : detail::iequals(t, "px") ? K::px : detail::iequals(t, "exat") ? K::exat : K::pxat;
      o.value = &a[++j];
    } else {
      return false;
    }
  }
  return true;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_set(const Args& a, Session&) {
  StrOpts o;
  if (!parse_string_opts(a, 3, false, o)) return syntax_error();
  SetExpiry expiry;
  std::int64_t v = 0;
  if (o.kind != ExpKind::none) {
    if (!to_int(*o.value, v)) return not_integer();
    expiry = *make_expiry<SetExpiry>(o.kind, v);
  } else if (o.keepttl) {
    expiry = KeepTtl{};
  }
  const SetCond cond = o.nx ? SetCond::NX : o.xx ? SetCond::XX : SetCond::Always;
  if (o.get) {
    // The expire argument is refused before GET meets a hash (semantics.md B §2.4).
    if (o.kind != ExpKind::none && !set_expiry_valid(o.kind, v)) return invalid_expire("set");
    if (holds_hash(a[1], true)) return wrong_type();
    Result<std::optional<Value>> r = store_->set_get(a[1], a[2], expiry, cond);
    if (!r.ok()) return write_error(r.error(), "set");
    return bulk_or_nil(*r);
  }
  Result<bool> r = store_->set(a[1], a[2], expiry, cond);
  if (!r.ok()) return write_error(r.error(), "set");
  return *r ? ok() : Reply::nil();
}

// SET's expire argument as the store validates it (B §2.4 step 1): positive, and its
// conversion to absolute ms does not overflow.
template <class Clock>
bool CommandExecutor<Clock>::set_expiry_valid(ExpKind kind, std::int64_t v) const {
  if (v <= 0) return false;
  std::int64_t ms = v;
  if ((kind == ExpKind::ex || kind == ExpKind::exat) && !expiring::detail::seconds_to_ms(v, ms)) return false;
  std::int64_t when = 0;
  return !(kind == ExpKind::ex || kind == ExpKind::px) || expiring::detail::checked_add(ms, store_->now_ms(), when);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_setex_generic(const Args& a, bool ms) {
  std::int64_t v = 0;
  if (!to_int(a[2], v)) return not_integer();
  Result<void> r = ms ? store_->psetex(a[1], v, a[3]) : store_->setex(a[1], v, a[3]);
  if (!r.ok()) return write_error(r.error(), ms ? "psetex" : "setex");
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_setex(const Args& a, Session&) { return cmd_setex_generic(a, false); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_psetex(const Args& a, Session&) { return cmd_setex_generic(a, true); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_setnx(const Args& a, Session&) {
  Result<bool> r = store_->set(a[1], a[2], SetCond::NX);  // setnx() would hide a refusal
  if (!r.ok()) return oom_error();
  return Reply::integer(*r ? 1 : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_getset(const Args& a, Session&) {
  if (holds_hash(a[1], true)) return wrong_type();
  auto r = store_->getset(a[1], a[2]);
  if (!r.ok()) return oom_error();
  return bulk_or_nil(std::move(r).value());
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_getdel(const Args& a, Session&) {
  if (holds_hash(a[1], true)) return wrong_type();
  return bulk_or_nil(store_->getdel(a[1]));
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_getex(const Args& a, Session&) {
  StrOpts o;
  if (!parse_string_opts(a, 2, true, o)) return syntax_error();
  if (holds_hash(a[1], true)) return wrong_type();  // after the options, before their numbers (B §2.6)
  GetExExpiry option;
  if (o.kind != ExpKind::none) {
    std::int64_t v = 0;
    if (!to_int(*o.value, v)) {
      // Redis looks the key up before it reads the number: a missing key answers nil.
      Result<std::optional<Value>> cur = store_->getex(a[1]);
      return cur.ok() && *cur ? not_integer() : Reply::nil();
    }
    option = *make_expiry<GetExExpiry>(o.kind, v);
  } else if (o.persist) {
    option = Persist{};
  }
  Result<std::optional<Value>> r = store_->getex(a[1], option);
  if (!r.ok()) return invalid_expire("getex");
  return bulk_or_nil(*r);
}

// Each value is copied once, from the store into the output buffer (a pointer from get()
// is not kept past the next read).
template <class Clock>
void CommandExecutor<Clock>::write_mget(const Args& a, Session& s, OutputBuffer& out) {
  Reply::write_array_header(out, a.size() - 1);
  for (std::size_t i = 1; i < a.size(); ++i) {
    const Value* v = store_->get(a[i]);
    write_bulk_or_nil(out, v == nullptr ? nullptr : v->string(), s.resp);  // a hash answers nil
  }
}

// MSET / MSETNX's writes: one memory check for the whole command, as Redis, so every pair
// is written or none (Errc::out_of_memory).
template <class Clock>
Result<void> CommandExecutor<Clock>::set_pairs(const Args& a) {
  return store_->as_one_command([&] {
    for (std::size_t i = 1; i < a.size(); i += 2) (void)store_->set(a[i], a[i + 1]);
  });
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_mset(const Args& a, Session&) {
  if (a.size() % 2 == 0) return arity_error("mset");
  return set_pairs(a).ok() ? ok() : oom_error();
}

// A write lookup (Redis lookupKeyWrite): whether the key is live, reclaiming it if stale,
// without counting a hit or miss and without an event. The store has no such member;
// renamenx(k, k) is exactly that: no_such_key for a missing or stale key, false otherwise.
template <class Clock>
bool CommandExecutor<Clock>::exists_for_write(const std::string& key) { return store_->renamenx(key, key).ok(); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_msetnx(const Args& a, Session&) {
  if (a.size() % 2 == 0) return arity_error("msetnx");
  for (std::size_t i = 1; i < a.size(); i += 2) {
    if (exists_for_write(a[i])) return Reply::integer(0);
  }
  return set_pairs(a).ok() ? Reply::integer(1) : oom_error();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_strlen(const Args& a, Session&) {
  const Value* v = store_->get(a[1]);
  if (v != nullptr && v->is_hash()) return wrong_type();
  return Reply::integer(v ? static_cast<std::int64_t>(v->string()->size()) : 0);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_append(const Args& a, Session&) {
  std::size_t len = 0;
  bool too_big = false;
  const std::string& add = a[2];
  if (holds_hash(a[1], false)) return wrong_type();
  const bool found = store_->modify(a[1], [&](Value& value) {
    std::string& v = *value.string();
    if (v.size() + add.size() > options_.proto_max_bulk_len) {
      too_big = true;
      return;
    }
    v += add;
    len = v.size();
  });
  if (too_big) return Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  if (!found) {
    if (!store_->set(a[1], add).ok()) return oom_error();
    len = add.size();
  }
  return Reply::integer(static_cast<std::int64_t>(len));
}

// GETRANGE key start end (SUBSTR, its old name): Redis's index rules. The indexes are checked
// before the key is read; negative ones count from the end; the range is clipped to the
// string; an empty result is an empty bulk, a missing key too.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_getrange(const Args& a, Session&) {
  std::int64_t start = 0, end = 0;
  if (!parse_int64(a[2], start) || !parse_int64(a[3], end)) return not_integer();
  const Value* v = store_->get(a[1]);
  if (v == nullptr) return Reply::bulk(std::string());
  if (v->is_hash()) return wrong_type();
  const std::string& s = *v->string();
  const auto len = static_cast<std::int64_t>(s.size());
  if (start < 0 && end < 0 && start > end) return Reply::bulk(std::string());
  if (start < 0) start += len;  // (len >= 0: no overflow)
  if (end < 0) end += len;
  start = std::max<std::int64_t>(start, 0);
  end = std::min<std::int64_t>(std::max<std::int64_t>(end, 0), len - 1);
  if (len == 0 || start > end) return Reply::bulk(std::string());
  return Reply::bulk(s.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start + 1)));
}

// SETRANGE key offset value: overwrites from `offset`, padding with zero bytes; replies the new
// length. The TTL stays. An empty value writes nothing (a missing key is not created) and
// replies the length; a result longer than proto-max-bulk-len is refused.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_setrange(const Args& a, Session&) {
  std::int64_t offset = 0;
  if (!parse_int64(a[2], offset)) return not_integer();
  if (offset < 0) return Reply::error("ERR offset is out of range");
  const std::string& add = a[3];
  if (add.empty()) {  // a write lookup (a stale key goes), nothing written
    bool hash = false;
    std::int64_t len = 0;
    (void)store_->compute(a[1], [&](const Value* v, std::int64_t) {
      hash = v != nullptr && v->is_hash();
      len = v != nullptr && !hash ? static_cast<std::int64_t>(v->string()->size()) : 0;
      return Computed<Value>::keep();
    });
    return hash ? wrong_type() : Reply::integer(len);
  }
  if (holds_hash(a[1], false)) return wrong_type();
  const std::uint64_t limit = options_.proto_max_bulk_len;
  if (static_cast<std::uint64_t>(offset) > limit || add.size() > limit - static_cast<std::uint64_t>(offset)) {
    return Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  }
  const auto at = static_cast<std::size_t>(offset);
  std::size_t len = 0;
  const auto write = [&](std::string& v) {
    if (v.size() < at + add.size()) v.resize(at + add.size(), '\0');
    v.replace(at, add.size(), add);
    len = v.size();
  };
  const bool found = store_->modify(a[1], [&](Value& value) { write(*value.string()); });
  if (!found) {
    std::string v;
    write(v);
    if (!store_->set(a[1], std::move(v)).ok()) return oom_error();
  }
  return Reply::integer(static_cast<std::int64_t>(len));
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest common subsequence of
// two strings (a missing key is ""), by the dynamic-programming table of prefix lengths, which
// Redis bounds by proto-max-bulk-len. IDX lists the matched ranges from the end of the strings
// backwards, each as [[a_from, a_to], [b_from, b_to]] (and its length), as Redis walks them.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_lcs(const Args& a, Session&) {
  const Value* va = store_->get(a[1]);
  const bool a_string = va == nullptr || va->is_string();
  const std::string x = va != nullptr && a_string ? *va->string() : std::string();
  const Value* vb = store_->get(a[2]);
  if (!a_string || (vb != nullptr && !vb->is_string())) {
    return Reply::error("ERR The specified keys must contain string values");
  }
  const std::string y = vb != nullptr ? *vb->string() : std::string();
  bool want_len = false, want_idx = false, with_len = false;
  std::int64_t min_len = 0;
  for (std::size_t j = 3; j < a.size(); ++j) {
    if (detail::is_opt(a[j], "idx")) {
      want_idx = true;
    } else if (detail::is_opt(a[j], "len")) {
      want_len = true;
    } else if (detail::is_opt(a[j], "withmatchlen")) {
      with_len = true;
    } else if (detail::is_opt(a[j], "minmatchlen") && j + 1 < a.size()) {
      if (!to_int(a[++j], min_len)) return not_integer();
      if (min_len < 0) min_len = 0;
    } else {
      return syntax_error();
    }
  }
  if (want_len && want_idx) return Reply::error("ERR If you want both the length and indexes, please just use IDX.");
  constexpr std::size_t kMaxLen = std::numeric_limits<std::uint32_t>::max() - 1;
  if (x.size() >= kMaxLen || y.size() >= kMaxLen) return Reply::error("ERR String too long for LCS");
  const std::size_t rows = x.size() + 1, cols = y.size() + 1;
  const std::uint64_t cells = static_cast<std::uint64_t>(rows) * cols;
  if (cells * sizeof(std::uint32_t) > options_.proto_max_bulk_len) {
    return Reply::error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  }
  std::vector<std::uint32_t> table;
  try {
    table.assign(static_cast<std::size_t>(cells), 0);
  } catch (const std::bad_alloc&) {
    return Reply::error("ERR Insufficient memory, failed allocating transient memory for LCS");
  }
  // table[i * cols + j]: the LCS length of x[0, i) and y[0, j).
  const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return table[i * cols + j]; };
  for (std::size_t i = 1; i < rows; ++i) {
    for (std::size_t j = 1; j < cols; ++j) {
      at(i, j) = x[i - 1] == y[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  const std::uint32_t total = at(rows - 1, cols - 1);
  if (want_len) return Reply::integer(total);
  // Walk back from the ends: a match extends the open range backwards; a step over an
  // unmatched byte (towards the longer prefix LCS, y's on a tie) closes it, as does reaching
  // the first byte of either string.
  std::string common(total, '\0');
  std::size_t k = total;
  Reply matches = Reply::array();
  bool open = false;
  std::size_t a_from = 0, a_to = 0, b_from = 0, b_to = 0;
  const auto close = [&] {
    const std::size_t n = a_to - a_from + 1;
    if (want_idx && (min_len == 0 || n >= static_cast<std::uint64_t>(min_len))) {
      Reply m = Reply::array({Reply::array({Reply::integer(static_cast<std::int64_t>(a_from)),
                                            Reply::integer(static_cast<std::int64_t>(a_to))}),
                              Reply::array({Reply::integer(static_cast<std::int64_t>(b_from)),
                                            Reply::integer(static_cast<std::int64_t>(b_to))})});
      if (with_len) m.push(Reply::integer(static_cast<std::int64_t>(n)));
      matches.push(std::move(m));
    }
    open = false;
  };
  std::size_t i = rows - 1, j = cols - 1;
  while (i > 0 && j > 0) {
    if (x[i - 1] == y[j - 1]) {
      common[--k] = x[i - 1];
      if (!open) {
        open = true;
        a_from = a_to = i - 1;
        b_from = b_to = j - 1;
      } else {
        a_from = i - 1;
        b_from = j - 1;
      }
      --i;
      --j;
      if (a_from == 0 || b_from == 0) close();
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (open) close();
    }
  }
  if (!want_idx) return Reply::bulk(std::move(common));
  return Reply::map({Reply::bulk("matches"), std::move(matches), Reply::bulk("len"), Reply::integer(total)});
}

// A bit offset as Redis's getBitOffsetFromArgument(): a non-negative integer whose byte is
// below proto-max-bulk-len.
template <class Clock>
bool CommandExecutor<Clock>::bit_offset(const std::string& arg, std::uint64_t& offset) const {
  std::int64_t v = 0;
  if (!parse_int64(arg, v) || v < 0 || static_cast<std::uint64_t>(v >> 3) >= options_.proto_max_bulk_len) return false;
  offset = static_cast<std::uint64_t>(v);
  return true;
}

// SETBIT key offset 0|1: the bit's old value; the string grows with zero bytes to reach it.
// Nothing is written (no event, no notification) when the bit already has the value and the
// string need not grow, as in Redis.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_setbit(const Args& a, Session&) {
  std::uint64_t offset = 0;
  if (!bit_offset(a[2], offset)) return Reply::error("ERR bit offset is not an integer or out of range");
  std::int64_t on = 0;
  if (!to_int(a[3], on) || (on & ~std::int64_t{1}) != 0) return Reply::error("ERR bit is not an integer or out of range");
  const auto byte = static_cast<std::size_t>(offset >> 3);
  const int shift = 7 - static_cast<int>(offset & 7);
  bool hash = false, exists = false;
  std::size_t len = 0;
  int old = 0;
  (void)store_->compute(a[1], [&](const Value* v, std::int64_t) {  // a write lookup: a stale key goes
    hash = v != nullptr && v->is_hash();
    if (v != nullptr && !hash) {
      exists = true;
      len = v->string()->size();
      if (byte < len) old = (static_cast<unsigned char>((*v->string())[byte]) >> shift) & 1;
    }
    return Computed<Value>::keep();
  });
  if (hash) return wrong_type();
  if (!exists || len <= byte || old != on) {
    const auto write = [&](std::string& v) {
      if (v.size() <= byte) v.resize(byte + 1, '\0');
      auto c = static_cast<unsigned char>(v[byte]);
      c = static_cast<unsigned char>((c & ~(1u << shift)) | (static_cast<unsigned>(on) << shift));
      v[byte] = static_cast<char>(c);
    };
    if (!store_->modify(a[1], [&](Value& value) { write(*value.string()); })) {
      std::string v;
      write(v);
      if (!store_->set(a[1], std::move(v)).ok()) return oom_error();
    }
  }
  return Reply::integer(old);
}

// GETBIT key offset: 0 past the end or for a missing key.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_getbit(const Args& a, Session&) {
  std::uint64_t offset = 0;
  if (!bit_offset(a[2], offset)) return Reply::error("ERR bit offset is not an integer or out of range");
  const Value* v = store_->get(a[1]);
  if (v == nullptr) return Reply::integer(0);
  if (v->is_hash()) return wrong_type();
  const auto byte = static_cast<std::size_t>(offset >> 3);
  const std::string& str = *v->string();
  if (byte >= str.size()) return Reply::integer(0);
  return Reply::integer((static_cast<unsigned char>(str[byte]) >> (7 - static_cast<int>(offset & 7))) & 1);
}

template <class Clock>
Reply CommandExecutor<Clock>::incr_by(const std::string& key, std::int64_t incr) {
  enum { kOk, kNotInt, kOverflow } status = kOk;
  std::int64_t result = 0;
  if (holds_hash(key, false)) return wrong_type();
  const bool found = store_->modify(key, [&](Value& value) {
    std::string& v = *value.string();
    std::int64_t cur = 0;
    if (!parse_int64(v, cur)) {
      status = kNotInt;
      return;
    }
    if ((incr < 0 && cur < 0 && incr < std::numeric_limits<std::int64_t>::min() - cur) ||
        (incr > 0 && cur > 0 && incr > std::numeric_limits<std::int64_t>::max() - cur)) {
      status = kOverflow;
      return;
    }
    result = cur + incr;
    v.clear();
    Reply::append_int(v, result);
  });
  if (status == kNotInt) return not_integer();
  if (status == kOverflow) return Reply::error("ERR increment or decrement would overflow");
  if (!found) {
    result = incr;
    std::string v;
    Reply::append_int(v, result);
    if (!store_->set(key, std::move(v)).ok()) return oom_error();
  }
  return Reply::integer(result);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_incr(const Args& a, Session&) { return incr_by(a[1], 1); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_decr(const Args& a, Session&) { return incr_by(a[1], -1); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_incrby(const Args& a, Session&) {
  std::int64_t v = 0;
  if (!to_int(a[2], v)) return not_integer();
  return incr_by(a[1], v);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_decrby(const Args& a, Session&) {
  std::int64_t v = 0;
  if (!to_int(a[2], v)) return not_integer();
  if (v == std::numeric_limits<std::int64_t>::min()) return Reply::error("ERR decrement would overflow");
  return incr_by(a[1], -v);
}

// INCRBYFLOAT key increment: Redis 7.0's order of checks (the type, the stored value, the
// increment, the sum); the result as Redis formats it, its TTL kept (the feed's SET ...
// KEEPTTL of it, which is how Redis propagates INCRBYFLOAT too).
template <class Clock>
Reply CommandExecutor<Clock>::cmd_incrbyfloat(const Args& a, Session&) {
  if (holds_hash(a[1], false)) return wrong_type();
  const Reply not_float = Reply::error("ERR value is not a valid float");
  long double cur = 0, incr = 0;
  const Value* stored = store_->peek(a[1]);
  if (stored != nullptr && !detail::parse_long_double(*stored->string(), cur)) return not_float;
  if (!detail::parse_long_double(a[2], incr)) return not_float;
  const long double sum = cur + incr;
  if (std::isnan(sum) || std::isinf(sum)) return Reply::error("ERR increment would produce NaN or Infinity");
  std::string result = detail::format_long_double(sum);
  bool found = false;
  if (stored != nullptr) found = store_->modify(a[1], [&](Value& value) { *value.string() = result; });
  if (!found && !store_->set(a[1], Value(std::string(result))).ok()) return oom_error();
  return Reply::bulk(std::move(result));
}

}  // namespace expiring::redis
