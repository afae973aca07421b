// expiring/redis/cmd_server.hpp: the connection and server/admin commands: PING ECHO QUIT SHUTDOWN AUTH HELLO SELECT TIME DBSIZE
// FLUSHDB FLUSHALL DEBUG INFO CONFIG (GET/SET/RESETSTAT/HELP) COMMAND (COUNT/INFO/LIST/HELP) OBJECT
// FUNCTION (FLUSH/LIST/DELETE/KILL/STATS/DUMP/HELP, with no functions).
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table (name, arity, flags, key positions, handler) are in commands.hpp, which
// includes this file at its end. Include commands.hpp, not this file.
#pragma once

#include "commands.hpp"

namespace expiring::redis {

// ==== Connection and server =================================================================

template <class Clock>
Reply CommandExecutor<Clock>::cmd_ping(const Args& a, Session&) {
  if (a.size() > 2) return arity_error("ping");
  return a.size() == 1 ? Reply::status("PONG") : Reply::bulk(a[1]);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_echo(const Args& a, Session&) { return Reply::bulk(a[1]); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_quit(const Args&, Session& s) {
  s.action = Action::close;
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_shutdown(const Args& a, Session& s) {
  bool nosave = false, save = false, abort = false, other = false;
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (detail::is_opt(a[i], "nosave")) {
      nosave = true;
    } else if (detail::is_opt(a[i], "save")) {
      save = true;
    } else if (detail::is_opt(a[i], "now") || detail::is_opt(a[i], "force")) {
      other = true;
    } else if (detail::is_opt(a[i], "abort")) {
      abort = true;
    } else {
      return syntax_error();
    }
  }
  if ((abort && (nosave || save || other)) || (nosave && save)) return syntax_error();
  if (abort) return Reply::error("ERR No shutdown in progress.");
  s.action = Action::shutdown;
  return ok();  // not sent: the server stops
}

// AUTH [username] password, for the one user there is ("default"). Without requirepass the
// default user takes any password, but a bare AUTH <password> is an error, as in Redis.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_auth(const Args& a, Session& s) {
  if (a.size() > 3) return syntax_error();
  if (a.size() == 2 && options_.requirepass.empty()) {
    return Reply::error(
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your "
        "configuration is correct?");
  }
  const std::string& user = a.size() == 3 ? a[1] : std::string("default");
  if (!password_ok(user, a.back())) return wrongpass();
  s.authenticated = true;
  return ok();
}

template <class Clock>
bool CommandExecutor<Clock>::password_ok(const std::string& user, const std::string& password) const {
  if (user != "default") return false;
  if (options_.requirepass.empty()) return true;
  // Compared in time independent of where they differ (Redis's time_independent_strcmp).
  const std::string& want = options_.requirepass;
  unsigned char diff = password.size() == want.size() ? 0 : 1;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i] ^ (i < password.size() ? password[i] : '\0'));
  }
  return diff == 0;
}

template <class Clock>
Reply CommandExecutor<Clock>::wrongpass() { return Reply::error("WRONGPASS invalid username-password pair or user is disabled."); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_hello(const Args& a, Session& s) {
  std::size_t next = 1;
  int proto = s.resp;
  if (a.size() >= 2) {
    std::int64_t ver = 0;
    if (!to_int(a[1], ver)) return Reply::error("ERR Protocol version is not an integer or out of range");
    if (ver != 2 && ver != 3) return Reply::error("NOPROTO unsupported protocol version");
    proto = static_cast<int>(ver);
    next = 2;
  }
  std::size_t auth = 0;  // the index of an AUTH option
  const std::string* name = nullptr;
  for (std::size_t j = next; j < a.size(); ++j) {
    const std::size_t more = a.size() - 1 - j;
    if (detail::is_opt(a[j], "auth") && more >= 2) {
      auth = j;
      j += 2;
    } else if (detail::is_opt(a[j], "setname") && more >= 1) {
      name = &a[++j];
    } else {
      return detail::error_format("Syntax error in HELLO option '" + std::string(detail::cstr(a[j])) + "'");
    }
  }
  if (auth != 0) {
    if (!password_ok(a[auth + 1], a[auth + 2])) return wrongpass();
    s.authenticated = true;
  }
  if (!s.authenticated) {
    return Reply::error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> "
        "<pass> option can be used to authenticate the client and select the RESP protocol version at the "
        "same time");
  }
  if (name != nullptr) {
    for (char c : *name) {
      if (c < '!' || c > '~') return Reply::error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    s.name = *name;
  }
  s.resp = proto;  // this reply already in it
  Reply r = Reply::map();
  r.push(Reply::bulk("server")).push(Reply::bulk("redis"));
  r.push(Reply::bulk("version")).push(Reply::bulk(options_.redis_version));
  r.push(Reply::bulk("proto")).push(Reply::integer(proto));
  r.push(Reply::bulk("id")).push(Reply::integer(static_cast<std::int64_t>(s.id)));
  r.push(Reply::bulk("mode")).push(Reply::bulk("standalone"));
  r.push(Reply::bulk("role")).push(Reply::bulk("master"));
  r.push(Reply::bulk("modules")).push(Reply::array());
  return r;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_select(const Args& a, Session& s) {
  std::int64_t id = 0;
  if (!to_int(a[1], id)) return not_integer();
  if (id < std::numeric_limits<int>::min() || id > std::numeric_limits<int>::max()) {
    return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
  }
  if (id < 0 || static_cast<std::uint64_t>(id) >= dbs_.size()) return Reply::error("ERR DB index is out of range");
  s.db = static_cast<std::size_t>(id);
  select(s);
  return ok();
}

// SWAPDB index1 index2: the two databases change places, for every connection (a client that
// SELECTed one now sees the other's keys), as Redis swaps them.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_swapdb(const Args& a, Session& s) {
  std::int64_t x = 0, y = 0;
  if (!to_int(a[1], x) || x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) {
    return Reply::error("ERR invalid first DB index");
  }
  if (!to_int(a[2], y) || y < std::numeric_limits<int>::min() || y > std::numeric_limits<int>::max()) {
    return Reply::error("ERR invalid second DB index");
  }
  const auto n = static_cast<std::int64_t>(dbs_.size());
  if (x < 0 || x >= n || y < 0 || y >= n) return Reply::error("ERR DB index is out of range");
  const auto ux = static_cast<std::size_t>(x), uy = static_cast<std::size_t>(y);
  if (ux != uy) {
    touch_database(ux, dbs_[uy]);
    touch_database(uy, dbs_[ux]);
  }
  std::swap(dbs_[ux], dbs_[uy]);
  select(s);
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_time(const Args&, Session&) {
  std::int64_t sec = 0, usec = 0;
  if constexpr (std::is_same_v<std::decay_t<Clock>, SystemClock> || std::is_same_v<std::decay_t<Clock>, TscClock>) {
    using namespace std::chrono;
    const auto us = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
    sec = us / 1000000;
    usec = us % 1000000;
  } else {
    const std::int64_t ms = store_->now_ms();
    sec = ms / 1000;
    std::int64_t rem = ms % 1000;
    if (rem < 0) {
      rem += 1000;
      --sec;
    }
    usec = rem * 1000;
  }
  std::string s1, s2;
  Reply::append_int(s1, sec);
  Reply::append_int(s2, usec);
  return Reply::array({Reply::bulk(std::move(s1)), Reply::bulk(std::move(s2))});
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_dbsize(const Args&, Session&) { return Reply::integer(static_cast<std::int64_t>(store_->size())); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_flush(const Args& a, Session& s) {
  if (a.size() > 2) return syntax_error();
  if (a.size() == 2 && !detail::is_opt(a[1], "sync") && !detail::is_opt(a[1], "async")) return syntax_error();
  if (detail::is_opt(a[0], "flushall")) {
    for (std::size_t i = 0; i < dbs_.size(); ++i) {
      touch_database(i, nullptr);
      dbs_[i]->clear();
    }
  } else {
    touch_database(s.db < dbs_.size() ? s.db : 0, nullptr);
    store_->clear();
  }
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_debug(const Args& a, Session& s) {
  if (a.size() == 3 && detail::is_opt(a[1], "set-active-expire")) {
    for (store_type* d : dbs_) d->set_active_expire_enabled(atoi_like(a[2]) != 0);
    return ok();
  }
  if (a.size() == 3 && detail::is_opt(a[1], "object")) return debug_object(a[2]);
  if (a.size() >= 2 && detail::is_opt(a[1], "digest-value")) {
    Reply r = Reply::array();
    for (std::size_t j = 2; j < a.size(); ++j) {
      const Value* v = store_->peek(a[j]);
      r.push(Reply::status(detail::hex(v == nullptr ? detail::Digest{} : detail::value_digest(*v))));
    }
    return r;
  }
  if (a.size() == 2 && detail::is_opt(a[1], "digest")) return Reply::status(detail::hex(dataset_digest()));
  if (a.size() == 3 && detail::is_opt(a[1], "protocol")) return debug_protocol(a[2], s);
  if (a.size() == 2 && detail::is_opt(a[1], "help")) {
    return Reply::array({Reply::status("DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("DIGEST"),
                         Reply::status("    Output a hex signature representing the current DB content."),
                         Reply::status("DIGEST-VALUE <key> [<key> ...]"),
                         Reply::status("    Output a hex signature of the values of all the specified keys."),
                         Reply::status("OBJECT <key>"),
                         Reply::status("    Show low level info about the value of the key: its address, the"),
                         Reply::status("    encoding Redis would give it (OBJECT ENCODING), its RDB length."),
                         Reply::status("PROTOCOL <type>"),
                         Reply::status("    Reply with a test value of the specified type (RESP3's types)."),
                         Reply::status("SET-ACTIVE-EXPIRE <0|1>"),
                         Reply::status("    Setting it to 0 disables expiring keys in background when they are not"),
                         Reply::status("    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the"),
                         Reply::status("    default."),
                         Reply::status("HELP"),
                         Reply::status("    Prints this help.")});
  }
  return detail::error_format("unknown subcommand or wrong number of arguments for '" +
                              std::string(detail::cstr(a[1])) + "'. Try DEBUG HELP.");
}

// DEBUG PROTOCOL type: one reply of each RESP3 type, Redis's samples (how a client tests its
// parser); to a RESP2 client each in its RESP2 form.
template <class Clock>
Reply CommandExecutor<Clock>::debug_protocol(const std::string& type, Session& s) {
  const std::string t = detail::lowercase(type);
  if (t == "string") return Reply::bulk("Hello World");
  if (t == "integer") return Reply::integer(12345);
  if (t == "double") return Reply::double_value(3.141);
  if (t == "bignum") return Reply::big_number("1234567999999999999999999999999999999");
  if (t == "null") return Reply::nil();
  if (t == "array" || t == "set") {
    std::vector<Reply> v;
    for (int j = 0; j < 3; ++j) v.push_back(Reply::integer(j));
    return t == "set" ? Reply::set(std::move(v)) : Reply::array(std::move(v));
  }
  if (t == "map") {
    Reply m = Reply::map();
    for (int j = 0; j < 3; ++j) m.push(Reply::integer(j)).push(Reply::boolean(j == 1));
    return m;
  }
  if (t == "attrib") {
    return Reply::with_attribute(
        Reply::map({Reply::bulk("key-popularity"), Reply::array({Reply::bulk("key:123"), Reply::integer(90)})}),
        Reply::bulk("Some real reply following the attribute"));
  }
  if (t == "push") {
    if (s.resp < 3) return Reply::error("ERR RESP2 is not supported by this command");
    if (s.push != nullptr) {  // out of band, before the reply
      Reply::push_message({Reply::bulk("server-cpu-usage"), Reply::integer(42)}).write_resp(*s.push, s.resp);
      if (push_hook_) push_hook_(s);
    }
    return Reply::bulk("Some real reply following the push reply");
  }
  if (t == "true" || t == "false") return Reply::boolean(t == "true");
  if (t == "verbatim") return Reply::verbatim("This is a verbatim\nstring");
  return Reply::error(
      "ERR Wrong protocol type name. Please use one of the following: "
      "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false");
}

// DEBUG OBJECT key, in Redis 7.0's form: the value's address in the store (it stays while the
// value is modified in place), OBJECT REFCOUNT and ENCODING's answers (semantics.md D38), the
// length of its RDB serialization (its DUMP payload less the type byte and the footer), and
// the LRU clock of its last access with the seconds since (0 while access is not tracked).
template <class Clock>
Reply CommandExecutor<Clock>::debug_object(const std::string& key) {
  if (!store_->exists(key)) return Reply::error("ERR no such key");
  const Value* v = store_->peek(key);
  if (v == nullptr) return Reply::error("ERR no such key");
  const std::string payload = expiring::dump_value(*v);
  const std::int64_t idle_ms = store_->object_idletime_ms(key).value_or(0);
  const std::int64_t now_s = store_->now_ms() / 1000;
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<const void*>(v));
  return Reply::status(std::string("Value at:") + address + " refcount:" + std::to_string(object_refcount(*v)) +
                       " encoding:" + object_encoding(*v) +
                       " serializedlength:" + std::to_string(payload.size() > 11 ? payload.size() - 11 : 0) +
                       " lru:" + std::to_string((now_s - idle_ms / 1000) & 0xFFFFFF) +
                       " lru_seconds_idle:" + std::to_string(idle_ms / 1000));
}

// DEBUG DIGEST: every database's keys, values and deadlines, in no order (a XOR of one
// digest per key), so that two servers holding the same data answer the same; 40 zeros for
// none, as Redis.
template <class Clock>
detail::Digest CommandExecutor<Clock>::dataset_digest() const {
  detail::Digest all;
  for (std::size_t db = 0; db < dbs_.size(); ++db) {
    for (const auto& e : *dbs_[db]) {
      const detail::Digest value = detail::value_digest(e.value);
      std::string bytes;
      detail::put_u64(bytes, db);
      detail::put_u64(bytes, e.key.size());
      bytes += e.key;
      bytes.append(reinterpret_cast<const char*>(value.b), sizeof value.b);
      detail::put_u64(bytes, static_cast<std::uint64_t>(e.pexpiretime));
      all ^= detail::digest_of(bytes);
    }
  }
  return all;
}

// C's atoi(): blanks, an optional sign, digits; anything else ends the number.
template <class Clock>
long long CommandExecutor<Clock>::atoi_like(std::string_view s) {
  s = detail::cstr(s);
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  long long v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v < std::numeric_limits<long long>::max() / 10) v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}
// ---- INFO ----

template <class Clock>
Reply CommandExecutor<Clock>::cmd_info(const Args& a, Session&) {
  // Redis's order; persistence and replication come from a server's hook only; commandstats
  // only when named, or with "all" or "everything".
  static constexpr const char* kSections[] = {"server", "clients", "memory",       "persistence", "stats",
                                              "replication", "cpu", "commandstats", "errorstats",  "keyspace"};
  constexpr int kCount = 10;
  constexpr int kCommandStats = 7;
  bool want[kCount] = {};
  for (int k = 0; k < kCount; ++k) want[k] = a.size() == 1 && k != kCommandStats;
  for (std::size_t i = 1; i < a.size(); ++i) {
    const std::string s = detail::lowercase(a[i]);
    if (s == "default" || s == "all" || s == "everything") {
      for (int k = 0; k < kCount; ++k) want[k] = want[k] || s != "default" || k != kCommandStats;
    }
    for (int k = 0; k < kCount; ++k) {
      if (s == kSections[k]) want[k] = true;
    }
  }
  std::string out;
  for (int k = 0; k < kCount; ++k) {
    if (!want[k]) continue;
    const bool server_only = k == 1 || k == 3 || k == 5;  // clients, persistence, replication
    if (server_only && !info_hook_) continue;
    if (!out.empty()) out += "\r\n";
    info_section(kSections[k], out);
  }
  return Reply::verbatim(std::move(out));  // (RESP2: a bulk)
}

template <class Clock>
void CommandExecutor<Clock>::info_section(std::string_view section, std::string& out) {
  auto line = [&](std::string_view k, const std::string& v) {
    out.append(k);
    out += ':';
    out += v;
    out += "\r\n";
  };
  auto num = [](std::int64_t v) {
    std::string s;
    Reply::append_int(s, v);
    return s;
  };
  const Stats st = stats();
  if (section == "server") {
    out += "# Server\r\n";
    line("redis_version", options_.redis_version);
    line("expiring_version", std::to_string(EXPIRING_VERSION_MAJOR) + "." + std::to_string(EXPIRING_VERSION_MINOR) +
                                 "." + std::to_string(EXPIRING_VERSION_PATCH));
    line("redis_mode", "standalone");
    line("arch_bits", std::to_string(sizeof(void*) * 8));
    if (info_hook_) info_hook_(section, out);
    // Saturated: a ManualClock may read anything in the int64 range.
    const std::int64_t now = store_->now_ms();
    namespace ed = ::expiring::detail;
    const std::int64_t usec = now > ed::kInt64Max / 1000 ? ed::kInt64Max : now < ed::kInt64Min / 1000 ? ed::kInt64Min : now * 1000;
    const std::int64_t up = ed::saturating_sub(now, start_ms_);
    line("server_time_usec", num(usec));
    line("uptime_in_seconds", num(up / 1000));
    line("uptime_in_days", num(up / 86400000));
    line("hz", num(store_->options().hz));
    line("configured_hz", num(store_->options().hz));
  } else if (section == "clients") {
    out += "# Clients\r\n";
    if (info_hook_) info_hook_(section, out);
  } else if (section == "persistence") {
    out += "# Persistence\r\n";
    if (info_hook_) info_hook_(section, out);
  } else if (section == "replication") {
    out += "# Replication\r\n";
    if (info_hook_) info_hook_(section, out);
  } else if (section == "memory") {
    out += "# Memory\r\n";
    if (info_hook_) info_hook_(section, out);
    // The figure the limit is enforced against: the store's used memory, which counts the
    // server's client buffers (set_external_memory) as Redis's used_memory does.
    const std::size_t used = used_memory();
    line("used_memory", num(static_cast<std::int64_t>(used)));
    line("used_memory_human", detail::bytes_to_human(used));
    const std::uint64_t limit = store_->options().maxmemory;
    line("maxmemory", detail::as_signed_decimal(limit));  // Redis prints it with %lld
    line("maxmemory_human", detail::bytes_to_human(limit));
    line("maxmemory_policy", to_string(store_->options().maxmemory_policy));
    line("lazyfree_pending_objects", std::to_string(st.lazyfree_pending_objects));
  } else if (section == "stats") {
    out += "# Stats\r\n";
    if (info_hook_) info_hook_(section, out);
    char perc[32];
    std::snprintf(perc, sizeof perc, "%.2f", st.expired_stale_perc);
    line("expired_keys", std::to_string(st.expired_keys));
    line("expired_subkeys", std::to_string(st.expired_subkeys));
    line("expired_stale_perc", perc);
    line("expired_time_cap_reached_count", std::to_string(st.expired_time_cap_reached_count));
    line("expire_cycle_cpu_milliseconds", std::to_string(st.expire_cycle_cpu_microseconds / 1000));
    line("evicted_keys", std::to_string(st.evicted_keys));
    line("keyspace_hits", std::to_string(st.keyspace_hits));
    line("keyspace_misses", std::to_string(st.keyspace_misses));
    line("total_error_replies", std::to_string(total_error_replies_));
    line("lazyfreed_objects", std::to_string(st.lazyfreed_objects));
    // Not in Redis: how late expired keys were reclaimed (Stats::expired_lateness), in the
    // style of Redis 7's latencystats lines; the bounds are the histogram's log2 buckets.
    auto lateness = [&](const char* name, const std::array<std::uint64_t, LatenessHistogram::kBuckets>& h) {
      std::uint64_t count = 0;
      for (std::uint64_t c : h) count += c;
      line(name, "count=" + std::to_string(count) +
                     ",p50=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.5)) +
                     ",p99=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.99)) +
                     ",p99.9=" + std::to_string(LatenessHistogram::quantile_ms(h, 0.999)));
    };
    lateness("expired_lateness_ms_active", st.expired_lateness.active);
    lateness("expired_lateness_ms_lazy", st.expired_lateness.lazy);
  } else if (section == "cpu") {
    out += "# CPU\r\n";
    const auto seconds = [](std::int64_t usec) {
      char b[48];
      std::snprintf(b, sizeof b, "%lld.%06lld", static_cast<long long>(usec / 1000000), static_cast<long long>(usec % 1000000));
      return std::string(b);
    };
    const detail::CpuTimes self = detail::cpu_times(false), thread = detail::cpu_times(true);
    line("used_cpu_sys", seconds(self.sys_us));
    line("used_cpu_user", seconds(self.user_us));
    line("used_cpu_sys_children", seconds(0));
    line("used_cpu_user_children", seconds(0));
    line("used_cpu_sys_main_thread", seconds(thread.sys_us));
    line("used_cpu_user_main_thread", seconds(thread.user_us));
  } else if (section == "commandstats") {
    out += "# Commandstats\r\n";
    std::vector<std::pair<std::string, CommandStat>> all;
    for (std::size_t i = 0; i < table().size(); ++i) all.emplace_back(table()[i].name, cmd_stats_[i]);
    for (const auto& [name, spec] : server_commands_) all.emplace_back(name, spec.stat);
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [name, c] : all) {
      if (c.calls == 0 && c.failed == 0 && c.rejected == 0) continue;
      char per[48];
      std::snprintf(per, sizeof per, "%.2f", c.calls == 0 ? 0.0 : static_cast<double>(c.usec) / static_cast<double>(c.calls));
      line("cmdstat_" + name, "calls=" + std::to_string(c.calls) + ",usec=" + std::to_string(c.usec) +
                                  ",usec_per_call=" + per + ",rejected_calls=" + std::to_string(c.rejected) +
                                  ",failed_calls=" + std::to_string(c.failed));
    }
  } else if (section == "errorstats") {
    out += "# Errorstats\r\n";
    for (const auto& [kind, count] : error_stats_) line("errorstat_" + kind, "count=" + std::to_string(count));
  } else if (section == "keyspace") {
    out += "# Keyspace\r\n";
    if (info_hook_) info_hook_(section, out);
    for (std::size_t i = 0; i < dbs_.size(); ++i) {
      const Stats d = dbs_[i]->stats();
      if (d.keys == 0) continue;
      line("db" + std::to_string(i), "keys=" + std::to_string(d.keys) + ",expires=" + std::to_string(d.expires) +
                                         ",avg_ttl=" + num(d.avg_ttl) + ",subexpiry=" + std::to_string(d.subexpiry));
    }
  }
}

// Every database's statistics, summed (the stale percentage and the mean TTL averaged), as a
// store of shards sums its shards'.
template <class Clock>
Stats CommandExecutor<Clock>::stats() const {
  Stats all;
  for (const store_type* d : dbs_) ::expiring::detail::add_part(all, d->stats(), dbs_.size());
  return all;
}
// ---- CONFIG ----

template <class Clock>
auto CommandExecutor<Clock>::config_entries() const -> std::vector<ConfigEntry> {
  std::vector<ConfigEntry> v;
  v.push_back({"hz", std::to_string(store_->options().hz)});
  v.push_back({"active-expire-effort", std::to_string(store_->options().active_expire_effort)});
  const Options& o = store_->options();
  v.push_back({"maxmemory", std::to_string(static_cast<std::uint64_t>(o.maxmemory))});
  v.push_back({"maxmemory-policy", to_string(o.maxmemory_policy)});
  v.push_back({"maxmemory-samples", std::to_string(shown_samples())});
  v.push_back({"lfu-log-factor", std::to_string(o.lfu_log_factor)});
  v.push_back({"lfu-decay-time", std::to_string(o.lfu_decay_time)});
  v.push_back({"databases", std::to_string(dbs_.size())});
  v.push_back({"proto-max-bulk-len", std::to_string(options_.proto_max_bulk_len)});
  v.push_back({"client-query-buffer-limit", std::to_string(options_.client_query_buffer_limit)});
  std::string obl;
  static constexpr const char* kClassNames[] = {"normal", "slave", "pubsub"};  // Redis prints "slave"
  for (int k = 0; k < 3; ++k) {
    const OutputBufferLimit& l = options_.client_output_buffer_limit[k];
    obl += (k ? " " : "") + std::string(kClassNames[k]) + " " + std::to_string(l.hard) + " " +
           std::to_string(l.soft) + " " + std::to_string(l.soft_seconds);
  }
  v.push_back({"client-output-buffer-limit", obl});
  v.push_back({"requirepass", options_.requirepass});
  v.push_back({"notify-keyspace-events", notify_flags_string(notify_flags_)});
  v.push_back({"repl-timeout", std::to_string(options_.repl_timeout)});
  v.push_back({"repl-ping-replica-period", std::to_string(options_.repl_ping_replica_period)});
  v.push_back({"repl-backlog-size", std::to_string(options_.repl_backlog_size)});
  v.push_back({"min-replicas-to-write", std::to_string(options_.min_replicas_to_write)});
  v.push_back({"min-replicas-max-lag", std::to_string(options_.min_replicas_max_lag)});
  for (const char* name : {"hash-max-listpack-entries", "hash-max-ziplist-entries"}) {
    v.push_back({name, std::to_string(options_.hash_max_listpack_entries)});
  }
  for (const char* name : {"hash-max-listpack-value", "hash-max-ziplist-value"}) {
    v.push_back({name, std::to_string(options_.hash_max_listpack_value)});
  }
  v.push_back({"sanitize-dump-payload", options_.sanitize_dump_payload});
  for (const char* name : {"replica-serve-stale-data", "slave-serve-stale-data"}) {
    v.push_back({name, options_.replica_serve_stale_data ? "yes" : "no"});
  }
  v.push_back({"save", ""});
  v.push_back({"appendonly", "no"});
  v.push_back({"databases", "1"});
  std::vector<std::pair<std::string, std::string>> server_values = extra_configs_;
  for (const ServerConfig& c : server_configs_) server_values.emplace_back(c.name, c.get());
  for (const auto& kv : server_values) {  // a server's value replaces a default of the same name
    auto same = std::find_if(v.begin(), v.end(), [&](const ConfigEntry& e) { return e.name == kv.first; });
    if (same != v.end()) {
      same->value = kv.second;
    } else {
      v.push_back({kv.first, kv.second});
    }
  }
  return v;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_config_get(const Args& a, Session&) {
  const std::vector<ConfigEntry> all = config_entries();
  std::vector<std::pair<std::string, const ConfigEntry*>> matches;
  auto matched = [&](std::string_view name) {
    for (const auto& m : matches) {
      if (detail::iequals(m.first, name)) return true;
    }
    return false;
  };
  for (std::size_t i = 2; i < a.size(); ++i) {
    const std::string_view pat = detail::cstr(a[i]);
    if (pat.find_first_of("[*?") == std::string_view::npos) {
      if (matched(pat)) continue;
      for (const ConfigEntry& e : all) {
        if (detail::iequals(e.name, pat)) {
          matches.emplace_back(std::string(pat), &e);
          break;
        }
      }
      continue;
    }
    for (const ConfigEntry& e : all) {
      if (!matched(e.name) && glob_match(pat, e.name, /*nocase=*/true)) matches.emplace_back(e.name, &e);
    }
  }
  Reply r = Reply::map();
  for (const auto& m : matches) r.push(Reply::bulk(m.first)).push(Reply::bulk(m.second->value));
  return r;
}

// CONFIG SET client-output-buffer-limit "<class> <hard> <soft> <soft seconds> ...", as
// Redis 7.0 reads it: the value split at single spaces (so two spaces make an empty word),
// groups of four; class normal, replica (or slave) or pubsub, case-insensitive; sizes are
// memory values; seconds a decimal in 0..INT_MAX (strtoll: a leading '+' or zeros are
// fine). An empty value changes nothing. "" on success, else the reason for the error.
template <class Clock>
std::string CommandExecutor<Clock>::parse_output_limits(std::string_view value, OutputBufferLimit (&limits)[3]) {
  value = detail::cstr(value);
  if (value.empty()) return "";
  std::vector<std::string_view> words;
  for (std::size_t from = 0;;) {
    const std::size_t sp = value.find(' ', from);
    words.push_back(value.substr(from, sp == std::string_view::npos ? std::string_view::npos : sp - from));
    if (sp == std::string_view::npos) break;
    from = sp + 1;
  }
  if (words.size() % 4 != 0) return "Wrong number of arguments in buffer limit configuration.";
  OutputBufferLimit next[3] = {limits[0], limits[1], limits[2]};
  for (std::size_t j = 0; j < words.size(); j += 4) {
    int k = -1;
    if (detail::iequals(words[j], "normal")) k = 0;
    if (detail::iequals(words[j], "replica") || detail::iequals(words[j], "slave")) k = 1;
    if (detail::iequals(words[j], "pubsub")) k = 2;
    if (k < 0) return "Invalid client class specified in buffer limit configuration.";
    std::uint64_t hard = 0, soft = 0;
    std::int64_t seconds = 0;
    std::string_view sec = words[j + 3];
    if (!sec.empty() && sec[0] == '+') sec.remove_prefix(1);
    while (sec.size() > 1 && sec[0] == '0') sec.remove_prefix(1);
    if (!detail::parse_memory(words[j + 1], hard) || !detail::parse_memory(words[j + 2], soft) ||
        !parse_int64(sec, seconds) || seconds < 0 || seconds > kIntMax) {
      return "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
    }
    next[k] = {hard, soft, seconds};
  }
  for (int k = 0; k < 3; ++k) limits[k] = next[k];
  return "";
}

template <class Clock>
bool CommandExecutor<Clock>::is_memory_param(Param p) noexcept {
  return p == Param::maxmemory || p == Param::proto_max_bulk_len || p == Param::query_buffer_limit ||
         p == Param::repl_backlog_size || p == Param::hash_max_listpack_value;
}

template <class Clock>
std::int64_t CommandExecutor<Clock>::shown_samples() const {
  const int actual = store_->options().maxmemory_samples;
  if (samples_config_ && std::min(*samples_config_, kStoreMaxSamples) == actual) return *samples_config_;
  return actual;
}

template <class Clock>
Reply CommandExecutor<Clock>::config_set_failed(const char* name, std::string_view why) {
  return Reply::error(std::string("ERR CONFIG SET failed (possibly related to argument '") + name + "') - " +
                      std::string(why));
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_config_set(const Args& a, Session&) {
  if (a.size() % 2 != 0) return syntax_error();
  struct Change {
    const ParamSpec* spec;
    const std::string* arg;
    std::int64_t number = 0;      // integer settings
    std::uint64_t bytes = 0;      // memory settings
    EvictionPolicy policy = EvictionPolicy::noeviction;
    OutputBufferLimit limits[3] = {};  // client-output-buffer-limit
  };
  std::vector<Change> changes;
  std::vector<std::pair<const ServerConfig*, const std::string*>> server_changes;  // the server's settings
  for (std::size_t i = 2; i < a.size(); i += 2) {
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& p : kParams) {
      if (detail::iequals(a[i], p.name)) spec = &p;
    }
    const ServerConfig* own = nullptr;
    for (const ServerConfig& c : server_configs_) {
      if (detail::iequals(a[i], c.name)) own = &c;
    }
    if (own != nullptr) {
      for (const auto& c : server_changes) {
        if (c.first == own) {
          return detail::error_format("CONFIG SET failed (possibly related to argument '" +
                                      std::string(detail::cstr(a[i])) + "') - duplicate parameter");
        }
      }
      server_changes.emplace_back(own, &a[i + 1]);
      continue;
    }
    if (spec == nullptr) {
      return detail::error_format("Unknown option or number of arguments for CONFIG SET - '" +
                                  std::string(detail::cstr(a[i])) + "'");
    }
    for (const Change& c : changes) {
      if (c.spec->param == spec->param) {  // (a name and its alias are one setting)
        return detail::error_format("CONFIG SET failed (possibly related to argument '" +
                                    std::string(detail::cstr(a[i])) + "') - duplicate parameter");
      }
    }
    changes.push_back({spec, &a[i + 1]});
  }
  // Validate every value, in argument order, before applying any (CONFIG SET is atomic).
  for (Change& c : changes) {
    const ParamSpec& p = *c.spec;
    if (is_memory_param(p.param)) {
      // Memory values as Redis's memtoull() (C string, units); overflow is an error here.
      if (!detail::parse_memory(*c.arg, c.bytes) || c.bytes > std::numeric_limits<std::size_t>::max()) {
        return config_set_failed(p.name, "argument must be a memory value");
      }
      if (p.hi != 0 && (c.bytes < static_cast<std::uint64_t>(p.lo) || c.bytes > static_cast<std::uint64_t>(p.hi))) {
        return config_set_failed(p.name, "argument must be between " + std::to_string(p.lo) + " and " +
                                             std::to_string(p.hi) + " inclusive");
      }
    } else if (p.param == Param::output_buffer_limit) {
      for (int k = 0; k < 3; ++k) c.limits[k] = options_.client_output_buffer_limit[k];
      const std::string why = parse_output_limits(*c.arg, c.limits);
      if (!why.empty()) return config_set_failed(p.name, why);
    } else if (p.param == Param::requirepass) {
      // Any string, as Redis's default user password (a NUL included).
    } else if (p.param == Param::replica_serve_stale_data) {
      if (!detail::iequals(*c.arg, "yes") && !detail::iequals(*c.arg, "no")) {
        return config_set_failed(p.name, "argument must be 'yes' or 'no'");
      }
    } else if (p.param == Param::sanitize_dump_payload) {
      if (!detail::iequals(*c.arg, "no") && !detail::iequals(*c.arg, "yes") && !detail::iequals(*c.arg, "clients")) {
        return config_set_failed(p.name, "argument(s) must be one of the following: no, yes, clients");
      }
    } else if (p.param == Param::notify_keyspace_events) {
      c.number = parse_notify_flags(*c.arg);
      if (c.number < 0) return config_set_failed(p.name, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
    } else if (p.param == Param::policy) {
      bool found = false;
      std::string names;
      for (EvictionPolicy e : detail::kPolicies) {
        if (!found && detail::iequals(detail::cstr(*c.arg), to_string(e))) {
          c.policy = e;
          found = true;
        }
        names += names.empty() ? "" : ", ";
        names += to_string(e);
      }
      if (!found) return config_set_failed(p.name, "argument(s) must be one of the following: " + names);
    } else {
      if (!to_int(*c.arg, c.number)) return config_set_failed(p.name, "argument couldn't be parsed into an integer");
      if (c.number < p.lo || c.number > p.hi) {
        return config_set_failed(p.name, "argument must be between " + std::to_string(p.lo) + " and " +
                                             std::to_string(p.hi) + " inclusive");
      }
    }
  }
  // The server's settings first: one may refuse (a file it cannot open) before anything of
  // this command is applied.
  for (const auto& c : server_changes) {
    const std::string why = c.first->set(*c.second);
    if (!why.empty()) return config_set_failed(c.first->name.c_str(), why);
  }
  // Apply; maxmemory last, so that the evictions it triggers (as Redis's updateMaxmemory)
  // use the policy and settings of the same command.
  const Change* maxmemory = nullptr;
  for (const Change& c : changes) {
    const int n = static_cast<int>(c.number);  // within int: checked above
    for (store_type* d : dbs_) {  // (the store settings: every database's)
      switch (c.spec->param) {
        case Param::hz: d->set_hz(n); break;
        case Param::effort: (void)d->set_active_expire_effort(n); break;
        case Param::policy: d->set_maxmemory_policy(c.policy); break;
        case Param::samples: (void)d->set_maxmemory_samples(static_cast<int>(std::min(c.number, kStoreMaxSamples))); break;
        case Param::lfu_log_factor: (void)d->set_lfu_log_factor(n); break;
        case Param::lfu_decay_time: (void)d->set_lfu_decay_time(n); break;
        default: break;
      }
    }
    switch (c.spec->param) {
      case Param::hz: case Param::effort: case Param::policy: case Param::lfu_log_factor: case Param::lfu_decay_time: break;
      case Param::samples: samples_config_ = c.number; break;
      case Param::maxmemory: maxmemory = &c; break;
      case Param::proto_max_bulk_len: options_.proto_max_bulk_len = static_cast<std::size_t>(c.bytes); break;
      case Param::query_buffer_limit: options_.client_query_buffer_limit = static_cast<std::size_t>(c.bytes); break;
      case Param::output_buffer_limit:
        for (int k = 0; k < 3; ++k) options_.client_output_buffer_limit[k] = c.limits[k];
        break;
      case Param::requirepass: options_.requirepass = *c.arg; break;
      case Param::notify_keyspace_events:
        notify_flags_ = static_cast<int>(c.number);
        update_listeners();
        break;
      case Param::repl_timeout: options_.repl_timeout = c.number; break;
      case Param::repl_ping_period: options_.repl_ping_replica_period = c.number; break;
      case Param::repl_backlog_size: options_.repl_backlog_size = static_cast<std::size_t>(c.bytes); break;
      case Param::min_replicas_to_write: options_.min_replicas_to_write = c.number; break;
      case Param::min_replicas_max_lag: options_.min_replicas_max_lag = c.number; break;
      case Param::hash_max_listpack_entries: options_.hash_max_listpack_entries = static_cast<std::size_t>(c.number); break;
      case Param::hash_max_listpack_value: options_.hash_max_listpack_value = static_cast<std::size_t>(c.bytes); break;
      case Param::sanitize_dump_payload: options_.sanitize_dump_payload = detail::lowercase(*c.arg); break;
      case Param::replica_serve_stale_data: options_.replica_serve_stale_data = detail::iequals(*c.arg, "yes"); break;
    }
  }
  if (maxmemory != nullptr) {
    for (store_type* d : dbs_) d->set_maxmemory(static_cast<std::size_t>(maxmemory->bytes));
    if (dbs_.size() > 1 && maxmemory->bytes != 0) (void)memory_check();  // (as Redis's updateMaxmemory)
  }
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_config_resetstat(const Args&, Session&) {
  for (store_type* d : dbs_) d->reset_stats();
  for (CommandStat& c : cmd_stats_) c = CommandStat{};
  for (auto& kv : server_commands_) kv.second.stat = CommandStat{};
  error_stats_.clear();
  total_error_replies_ = 0;
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_config_help(const Args&, Session&) {
  return Reply::array({Reply::status("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                       Reply::status("GET <pattern>"),
                       Reply::status("    Return parameters matching the glob-like <pattern> and their values."),
                       Reply::status("SET <directive> <value>"),
                       Reply::status("    Set the configuration <directive> to <value>."),
                       Reply::status("RESETSTAT"),
                       Reply::status("    Reset statistics reported by the INFO command."),
                       Reply::status("HELP"),
                       Reply::status("    Prints this help.")});
}
// ---- COMMAND ----

template <class Clock>
Reply CommandExecutor<Clock>::command_info(const Spec& s) const {
  Reply flags = Reply::array();
  std::string_view f = s.flags;
  while (!f.empty()) {
    const std::size_t sp = f.find(' ');
    flags.push(Reply::status(std::string(f.substr(0, sp))));
    if (sp == std::string_view::npos) break;
    f.remove_prefix(sp + 1);
  }
  return Reply::array({Reply::bulk(s.name), Reply::integer(s.arity), std::move(flags), Reply::integer(s.first_key),
                       Reply::integer(s.last_key), Reply::integer(s.step), Reply::array(), Reply::array(),
                       Reply::array(), Reply::array()});
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_command(const Args& a, Session& session) {
  if (a.size() == 1) {
    Reply r = Reply::array();
    for (const Spec& s : table()) r.push(command_info(s));
    return r;
  }
  const std::string sub = detail::lowercase(a[1]);
  struct Sub {
    const char* name;
    int arity;
    Reply (CommandExecutor::*fn)(const Args&, Session&);
  };
  static const Sub subs[] = {
      {"count", 2, &CommandExecutor::cmd_command_count}, {"info", -2, &CommandExecutor::cmd_command_info},
      {"list", -2, &CommandExecutor::cmd_command_list},   {"help", 2, &CommandExecutor::cmd_command_help},
  };
  // No COMMAND DOCS: redis-cli 7 asks for it at start-up and, on this error, falls back to
  // its built-in help (as with a Redis 6 server), so `help SET` and the typing hints work;
  // an empty reply would leave it with no help at all.
  for (const Sub& s : subs) {
    if (sub == s.name) {
      if (!arity_ok(s.arity, a.size())) return arity_error(std::string("command|") + s.name);
      return (this->*s.fn)(a, session);
    }
  }
  return unknown_subcommand(a);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_command_count(const Args&, Session&) { return Reply::integer(static_cast<std::int64_t>(table().size())); }

template <class Clock>
Reply CommandExecutor<Clock>::cmd_command_info(const Args& a, Session&) {
  Reply r = Reply::array();
  if (a.size() == 2) {
    for (const Spec& s : table()) r.push(command_info(s));
    return r;
  }
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it = index_.find(detail::lowercase(a[i]));
    r.push(it == index_.end() ? Reply::nil_array() : command_info(table()[it->second]));
  }
  return r;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_command_list(const Args& a, Session&) {
  if (a.size() != 2) return syntax_error();
  Reply r = Reply::array();
  for (const Spec& s : table()) r.push(Reply::bulk(s.name));
  return r;
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_command_help(const Args&, Session&) {
  return Reply::array({Reply::status("COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                       Reply::status("(no subcommand)"), Reply::status("    Return details about all commands."),
                       Reply::status("COUNT"), Reply::status("    Return the total number of commands."),
                       Reply::status("INFO [<command-name> ...]"),
                       Reply::status("    Return details about the named commands."), Reply::status("LIST"),
                       Reply::status("    Return the names of all commands."), Reply::status("HELP"),
                       Reply::status("    Prints this help.")});
}
// ---- OBJECT ----

// FREQ and IDLETIME read the key as Redis does (a hit or miss, not an access: nil when
// missing), then answer from the store's LFU / LRU data. ENCODING and REFCOUNT are not
// offered (one value type, no shared objects).
template <class Clock>
Reply CommandExecutor<Clock>::cmd_object(const Args& a, Session&) {
  const std::string sub = detail::lowercase(a[1]);
  if (sub == "help") {
    if (a.size() != 2) return arity_error("object|help");
    return Reply::array(
        {Reply::status("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
         Reply::status("ENCODING <key>"),
         Reply::status("    Return the kind of internal representation used in order to store the value"),
         Reply::status("    associated with a <key>."), Reply::status("FREQ <key>"),
         Reply::status("    Return the access frequency index of the <key>. The returned integer is"),
         Reply::status("    proportional to the logarithm of the recent access frequency of the key."),
         Reply::status("IDLETIME <key>"),
         Reply::status("    Return the idle time of the <key>, that is the approximated number of"),
         Reply::status("    seconds elapsed since the last access to the key."), Reply::status("REFCOUNT <key>"),
         Reply::status("    Return the number of references of the value associated with the specified"),
         Reply::status("    <key>."), Reply::status("HELP"), Reply::status("    Prints this help.")});
  }
  if (sub != "freq" && sub != "idletime" && sub != "encoding" && sub != "refcount") return unknown_subcommand(a);
  if (a.size() != 3) return arity_error("object|" + sub);
  if (sub == "encoding" || sub == "refcount") {
    if (!store_->exists(a[2])) return Reply::nil();  // (a hit or a miss, as the others)
    const Value* v = store_->peek(a[2]);
    if (v == nullptr) return Reply::nil();
    if (sub == "encoding") return Reply::bulk(object_encoding(*v));
    return Reply::integer(object_refcount(*v));
  }
  if (!store_->exists(a[2])) return Reply::nil();
  const EvictionPolicy policy = store_->options().maxmemory_policy;
  const bool lfu = policy == EvictionPolicy::allkeys_lfu || policy == EvictionPolicy::volatile_lfu;
  static constexpr const char* kAdjust =
      " Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
  if (sub == "freq") {
    if (!lfu) {
      return Reply::error(std::string("ERR An LFU maxmemory policy is not selected, access frequency not tracked.") +
                          kAdjust);
    }
    const std::optional<std::uint32_t> freq = store_->object_freq(a[2]);
    return freq ? Reply::integer(static_cast<std::int64_t>(*freq)) : Reply::nil();
  }
  if (lfu) return Reply::error(std::string("ERR An LFU maxmemory policy is selected, idle time not tracked.") + kAdjust);
  const std::optional<std::int64_t> idle_ms = store_->object_idletime_ms(a[2]);
  return idle_ms ? Reply::integer(*idle_ms / 1000) : Reply::nil();
}

// OBJECT ENCODING: the name of the encoding Redis would give the same value (semantics.md
// D38: the store has one representation per type, so the answer is derived from the value).
// A string is "int" when it is a 64-bit integer in its canonical form (Redis's string2ll,
// at most 20 characters), "embstr" up to 44 bytes, "raw" beyond. A hash is "hashtable" when
// it has more fields than hash-max-listpack-entries or a name or value longer than
// hash-max-listpack-value, else "listpackex" once a field has had a TTL (Redis 7.4) and
// "listpack" before.
template <class Clock>
std::string CommandExecutor<Clock>::object_encoding(const Value& v) const {
  if (const std::string* str = v.string()) {
    std::int64_t n = 0;
    if (str->size() <= 20 && to_int(*str, n) && std::to_string(n) == *str) return "int";
    return str->size() <= 44 ? "embstr" : "raw";
  }
  const Hash& h = *v.hash();
  bool compact = h.size() <= options_.hash_max_listpack_entries;
  for (std::uint32_t pos = 0; compact && pos < h.size(); ++pos) {
    const auto& f = h.at(pos);
    compact = f.name.size() <= options_.hash_max_listpack_value && f.value.size() <= options_.hash_max_listpack_value;
  }
  if (!compact) return "hashtable";
  return h.has_deadline_column() ? "listpackex" : "listpack";
}

// MEMORY USAGE key [SAMPLES count]: the bytes the key costs as maxmemory counts it (the key
// and its value, their heap buffers, the entry), and for a hash its fields' buffers, measured
// on `count` fields (5; 0: all) and scaled to the hash, as Redis samples. MEMORY HELP.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_memory(const Args& a, Session&) {
  const std::string sub = detail::lowercase(a[1]);
  if (sub == "help" && a.size() == 2) {
    return Reply::array({Reply::status("MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("USAGE <key> [SAMPLES <count>]"),
                         Reply::status("    Return memory in bytes used by <key> and its value. Nested values are"),
                         Reply::status("    sampled up to <count> times (default: 5, 0 means sample all)."),
                         Reply::status("HELP"), Reply::status("    Prints this help.")});
  }
  if (sub != "usage" || a.size() < 3) {
    return Reply::error("ERR unknown subcommand or wrong number of arguments for '" +
                        std::string(detail::cstr(a[1]).substr(0, 128)) + "'. Try MEMORY HELP.");
  }
  std::int64_t samples = 5;
  for (std::size_t j = 3; j < a.size(); j += 2) {
    if (!detail::is_opt(a[j], "samples") || j + 1 >= a.size()) return syntax_error();
    if (!to_int(a[j + 1], samples)) return not_integer();
    if (samples < 0) return syntax_error();
  }
  if (!store_->exists(a[2])) return Reply::nil();
  const Value* v = store_->peek(a[2]);
  if (v == nullptr) return Reply::nil();
  const auto heap = [](const std::string& str) { return expiring::detail::heap_bytes(str); };
  std::size_t bytes = sizeof(std::string) + sizeof(Value) + heap(a[2]) + v->heap_bytes();
  if (const Hash* h = v->hash(); h != nullptr && h->size() != 0) {
    const std::size_t n = samples == 0 ? h->size() : std::min<std::size_t>(h->size(), static_cast<std::size_t>(samples));
    std::size_t sampled = 0;
    for (std::uint32_t pos = 0; pos < n; ++pos) sampled += heap(h->at(pos).name) + heap(h->at(pos).value);
    bytes += sampled / n * h->size();
  }
  return Reply::integer(static_cast<std::int64_t>(bytes));
}

// OBJECT REFCOUNT: Redis shares the integers 0..9999 (OBJ_SHARED_REFCOUNT, INT_MAX) unless an
// LRU or LFU policy needs a clock in every object; any other value has one reference.
template <class Clock>
std::int64_t CommandExecutor<Clock>::object_refcount(const Value& v) const {
  if (v.string() == nullptr) return 1;  // (a hash: no shared object)
  const EvictionPolicy policy = store_->options().maxmemory_policy;
  const bool shares = store_->options().maxmemory == 0 || policy == EvictionPolicy::noeviction ||
                      policy == EvictionPolicy::volatile_ttl || policy == EvictionPolicy::volatile_random ||
                      policy == EvictionPolicy::allkeys_random;
  std::int64_t n = 0;
  const bool shared = shares && object_encoding(v) == "int" && to_int(*v.string(), n) && n >= 0 && n < 10000;
  return shared ? std::numeric_limits<int>::max() : 1;
}

// FUNCTION, answered as redis-server 7.0 answers with no library loaded: scripting is out of
// scope (no engine), so LOAD, RESTORE and FCALL are unknown, while the subcommands that
// manage libraries see none (FLUSH is OK, LIST is empty, DELETE finds nothing, KILL has
// nothing running, DUMP is the payload of no library). STATS lists no engine.
template <class Clock>
Reply CommandExecutor<Clock>::cmd_function(const Args& a, Session&) {
  const std::string sub = detail::lowercase(a[1]);
  const auto arity = [&](std::size_t lo, std::size_t hi) { return a.size() >= lo && a.size() <= hi; };
  if (sub == "flush") {
    if (!arity(2, 3)) {
      return Reply::error("ERR unknown subcommand or wrong number of arguments for '" +
                          std::string(detail::cstr(a[1]).substr(0, 128)) + "'. Try FUNCTION HELP.");
    }
    if (a.size() == 3 && !detail::is_opt(a[2], "sync") && !detail::is_opt(a[2], "async")) {
      return Reply::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    return ok();
  }
  if (sub == "list") {
    for (std::size_t i = 2; i < a.size(); ++i) {
      if (detail::is_opt(a[i], "withcode")) continue;
      if (detail::is_opt(a[i], "libraryname")) {
        if (++i == a.size()) return Reply::error("ERR library name argument was not given");
        continue;
      }
      return Reply::error("ERR Unknown argument " + std::string(detail::cstr(a[i])));
    }
    return Reply::array({});
  }
  if (sub == "delete") {
    if (a.size() != 3) return arity_error("function|delete");
    return Reply::error("ERR Library not found");
  }
  if (sub == "kill") {
    if (a.size() != 2) return arity_error("function|kill");
    return Reply::error("NOTBUSY No scripts in execution right now.");
  }
  if (sub == "stats") {
    if (a.size() != 2) return arity_error("function|stats");
    return Reply::array({Reply::bulk("running_script"), Reply::nil(), Reply::bulk("engines"), Reply::array({})});
  }
  if (sub == "dump") {
    if (a.size() != 2) return arity_error("function|dump");
    std::string payload("\x0a\x00", 2);  // no library, then RDB version 10 and the CRC-64, as DUMP's
    const std::uint64_t crc = ::expiring::detail::rdb::crc64(0, payload.data(), payload.size());
    for (int i = 0; i < 8; ++i) payload += static_cast<char>((crc >> (8 * i)) & 0xff);
    return Reply::bulk(std::move(payload));
  }
  if (sub == "help") {
    if (a.size() != 2) return arity_error("function|help");
    return Reply::array({Reply::status("FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("DELETE <LIBRARY NAME>"), Reply::status("    Delete the given library."),
                         Reply::status("LIST [LIBRARYNAME PATTERN] [WITHCODE]"),
                         Reply::status("    Return general information on all the libraries (none here)."),
                         Reply::status("STATS"), Reply::status("    Return information about the current function running."),
                         Reply::status("KILL"), Reply::status("    Kill the current running function."),
                         Reply::status("FLUSH [ASYNC|SYNC]"), Reply::status("    Delete all the libraries."),
                         Reply::status("DUMP"),
                         Reply::status("    Return a serialized payload representing the current libraries."),
                         Reply::status("HELP"), Reply::status("    Prints this help.")});
  }
  return unknown_subcommand(a);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_config(const Args& a, Session& session) {
  const std::string sub = detail::lowercase(a[1]);
  if (sub == "get") {
    if (a.size() < 3) return arity_error("config|get");
    return cmd_config_get(a, session);
  }
  if (sub == "set") {
    if (a.size() < 4) return arity_error("config|set");
    return cmd_config_set(a, session);
  }
  if (sub == "resetstat") {
    if (a.size() != 2) return arity_error("config|resetstat");
    return cmd_config_resetstat(a, session);
  }
  if (sub == "help") {
    if (a.size() != 2) return arity_error("config|help");
    return cmd_config_help(a, session);
  }
  return unknown_subcommand(a);
}

}  // namespace expiring::redis
