// expiring/redis/cmd_pubsub.hpp: publish/subscribe and keyspace notifications: SUBSCRIBE UNSUBSCRIBE
// PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, and the connection commands CLIENT (REPLY ID SETNAME
// GETNAME NO-EVICT HELP; a server adds LIST INFO KILL).
//
// Design. As Redis 7.0's pubsub.c and notify.c, over RESP2. A session receives messages in the
// buffer its server gave it (Session::push: the connection's output buffer), and the server is
// told (set_push_hook()) so that it sends them; a session with no push buffer receives none.
// The registry is two maps, channel -> sessions and pattern -> sessions; a PUBLISH costs a map
// lookup plus a glob match per pattern, as Redis's. A subscribed session may run only
// (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING (answered as a message: "pong" and its argument), QUIT and
// RESET, as a RESP2 client in Redis's subscribed mode.
//
// Keyspace notifications (notify-keyspace-events, Redis's flags K E g $ l s h z x e t m d n A):
// the stores' key events (events.hpp) are published as `__keyspace@<db>__:<key>` <event> and
// `__keyevent@<db>__:<event>` <key>, with Redis's event names: the command that caused a write
// names it (INCR "incrby", APPEND "append", HINCRBY "hincrby", MOVE "move_from"/"move_to",
// RESTORE "restore", ...), and a key reclaimed because its deadline passed is "expired" whether
// a read found it (lazy) or tick() did (active: the server's cron), so a subscriber learns that
// a TTL ran out within a tick of it. While no flag is set and no key is watched the executor
// sets no listener, and a write costs nothing more. "new" (n) is raised for a key argument
// that did not exist before the command (looked up only while n is on); key-miss (m) events
// are not raised.
#pragma once

#include "commands.hpp"

namespace expiring::redis {

// ---- Subscribing ----

template <class Clock>
void CommandExecutor<Clock>::write_subscribe(const Args& a, Session& s, OutputBuffer& out) {
  const bool pattern = detail::is_opt(a[0], "psubscribe");
  auto& registry = pattern ? patterns_ : channels_;
  std::vector<std::string>& mine = pattern ? s.patterns : s.channels;
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (std::find(mine.begin(), mine.end(), a[i]) == mine.end()) {
      mine.push_back(a[i]);
      registry[a[i]].push_back(&s);
    }
    Reply::write_push_header(out, 3, s.resp);
    Reply::write_bulk(out, pattern ? "psubscribe" : "subscribe");
    Reply::write_bulk(out, a[i]);
    Reply::integer(static_cast<std::int64_t>(s.channels.size() + s.patterns.size())).write_resp(out);
  }
  s.registry = &registry_;
}

template <class Clock>
void CommandExecutor<Clock>::write_unsubscribe(const Args& a, Session& s, OutputBuffer& out) {
  const bool pattern = detail::is_opt(a[0], "punsubscribe");
  const char* kind = pattern ? "punsubscribe" : "unsubscribe";
  std::vector<std::string>& mine = pattern ? s.patterns : s.channels;
  std::vector<std::string> names(a.begin() + 1, a.end());
  if (names.empty()) names = mine;  // all of them
  if (names.empty()) {              // none: one reply, with a null name
    Reply::write_push_header(out, 3, s.resp);
    Reply::write_bulk(out, kind);
    Reply::write_nil(out, s.resp);
    Reply::integer(static_cast<std::int64_t>(s.channels.size() + s.patterns.size())).write_resp(out);
    return;
  }
  for (const std::string& name : names) {
    unsubscribe(s, name, pattern);
    Reply::write_push_header(out, 3, s.resp);
    Reply::write_bulk(out, kind);
    Reply::write_bulk(out, name);
    Reply::integer(static_cast<std::int64_t>(s.channels.size() + s.patterns.size())).write_resp(out);
  }
}

template <class Clock>
void CommandExecutor<Clock>::unsubscribe(Session& s, const std::string& name, bool pattern) {
  std::vector<std::string>& mine = pattern ? s.patterns : s.channels;
  auto it = std::find(mine.begin(), mine.end(), name);
  if (it == mine.end()) return;
  mine.erase(it);
  auto& registry = pattern ? patterns_ : channels_;
  auto r = registry.find(name);
  if (r == registry.end()) return;
  r->second.erase(std::remove(r->second.begin(), r->second.end(), &s), r->second.end());
  if (r->second.empty()) registry.erase(r);
}

// ---- Publishing ----

template <class Clock>
Reply CommandExecutor<Clock>::cmd_publish(const Args& a, Session& s) {
  const std::size_t n = publish(a[1], a[2]);
  if (publish_hook_) publish_hook_(a[1], a[2], s.db);
  return Reply::integer(static_cast<std::int64_t>(n));
}

// Delivers `message` to the subscribers of `channel` and of every pattern that matches it;
// how many received it.
template <class Clock>
std::size_t CommandExecutor<Clock>::publish(const std::string& channel, const std::string& message) {
  std::size_t n = 0;
  if (auto it = channels_.find(channel); it != channels_.end()) {
    for (Session* s : it->second) {
      if (s->push == nullptr) continue;
      Reply::write_push_header(*s->push, 3, s->resp);
      Reply::write_bulk(*s->push, "message");
      Reply::write_bulk(*s->push, channel);
      Reply::write_bulk(*s->push, message);
      ++n;
      if (push_hook_) push_hook_(*s);
    }
  }
  for (const auto& [pattern, sessions] : patterns_) {
    if (!glob_match(pattern, channel)) continue;
    for (Session* s : sessions) {
      if (s->push == nullptr) continue;
      Reply::write_push_header(*s->push, 4, s->resp);
      Reply::write_bulk(*s->push, "pmessage");
      Reply::write_bulk(*s->push, pattern);
      Reply::write_bulk(*s->push, channel);
      Reply::write_bulk(*s->push, message);
      ++n;
      if (push_hook_) push_hook_(*s);
    }
  }
  return n;
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP
template <class Clock>
Reply CommandExecutor<Clock>::cmd_pubsub(const Args& a, Session&) {
  if (a.size() == 2 && detail::is_opt(a[1], "help")) {
    return Reply::array({Reply::status("PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("CHANNELS [<pattern>]"),
                         Reply::status("    Return the currently active channels matching a <pattern> (default: '*')."),
                         Reply::status("NUMPAT"),
                         Reply::status("    Return number of subscriptions to patterns."),
                         Reply::status("NUMSUB [<channel> ...]"),
                         Reply::status("    Return the number of subscribers for the specified channels, excluding"),
                         Reply::status("    pattern subscriptions(default: no channels)."),
                         Reply::status("SHARDCHANNELS [<pattern>]"),
                         Reply::status("    Return the currently active shard level channels matching a <pattern> (default: '*')."),
                         Reply::status("SHARDNUMSUB [<shardchannel> ...]"),
                         Reply::status("    Return the number of subscribers for the specified shard level channel(s)"),
                         Reply::status("HELP"),
                         Reply::status("    Prints this help.")});
  }
  const bool channels = detail::is_opt(a[1], "channels"), shard_channels = detail::is_opt(a[1], "shardchannels");
  if ((channels || shard_channels) && a.size() <= 3) {
    std::vector<Reply> v;
    if (channels) {
      for (const auto& kv : channels_) {
        if (a.size() == 2 || glob_match(a[2], kv.first)) v.push_back(Reply::bulk(kv.first));
      }
    }
    return Reply::array(std::move(v));
  }
  if (detail::is_opt(a[1], "numsub") || detail::is_opt(a[1], "shardnumsub")) {
    const bool shard = detail::is_opt(a[1], "shardnumsub");
    std::vector<Reply> v;
    for (std::size_t i = 2; i < a.size(); ++i) {
      v.push_back(Reply::bulk(a[i]));
      const auto it = channels_.find(a[i]);
      v.push_back(Reply::integer(shard || it == channels_.end() ? 0 : static_cast<std::int64_t>(it->second.size())));
    }
    return Reply::array(std::move(v));
  }
  if (detail::is_opt(a[1], "numpat") && a.size() == 2) return Reply::integer(static_cast<std::int64_t>(patterns_.size()));
  return detail::error_format("unknown subcommand or wrong number of arguments for '" + std::string(detail::cstr(a[1])) +
                              "'. Try PUBSUB HELP.");
}

// In subscribed mode (RESP2) only these run; PING answers as a message.
template <class Clock>
std::optional<Reply> CommandExecutor<Clock>::subscribed_mode(const Args& argv, Session& s) {
  const std::string name = detail::lowercase(argv[0]);
  if (name == "subscribe" || name == "psubscribe" || name == "unsubscribe" || name == "punsubscribe" || name == "quit" ||
      name == "reset" || name == "ssubscribe" || name == "sunsubscribe") {
    return std::nullopt;
  }
  if (name == "ping") {
    if (argv.size() > 2) return arity_error("ping");
    return Reply::array({Reply::bulk("pong"), Reply::bulk(argv.size() == 2 ? argv[1] : std::string())});
  }
  (void)s;
  return Reply::error("ERR Can't execute '" + name +
                      "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
}

// ---- Keyspace notifications ----

// notify-keyspace-events: Redis's flags from their letters; -1 for another letter.
template <class Clock>
int CommandExecutor<Clock>::parse_notify_flags(std::string_view s) {
  int flags = 0;
  for (const char c : detail::cstr(s)) {
    switch (c) {
      case 'A': flags |= kNotifyAll; break;
      case 'g': flags |= kNotifyGeneric; break;
      case '$': flags |= kNotifyString; break;
      case 'l': flags |= kNotifyList; break;
      case 's': flags |= kNotifySet; break;
      case 'h': flags |= kNotifyHash; break;
      case 'z': flags |= kNotifyZset; break;
      case 'x': flags |= kNotifyExpired; break;
      case 'e': flags |= kNotifyEvicted; break;
      case 'K': flags |= kNotifyKeyspace; break;
      case 'E': flags |= kNotifyKeyevent; break;
      case 't': flags |= kNotifyStream; break;
      case 'm': flags |= kNotifyKeyMiss; break;
      case 'd': flags |= kNotifyModule; break;
      case 'n': flags |= kNotifyNew; break;
      default: return -1;
    }
  }
  return flags;
}

template <class Clock>
std::string CommandExecutor<Clock>::notify_flags_string(int flags) {
  std::string r;
  if ((flags & kNotifyAll) == kNotifyAll) {
    r += 'A';
  } else {
    const std::pair<int, char> order[] = {{kNotifyGeneric, 'g'}, {kNotifyString, '$'}, {kNotifyList, 'l'},
                                          {kNotifySet, 's'},     {kNotifyHash, 'h'},   {kNotifyZset, 'z'},
                                          {kNotifyExpired, 'x'}, {kNotifyEvicted, 'e'}, {kNotifyStream, 't'},
                                          {kNotifyModule, 'd'},  {kNotifyNew, 'n'}};
    for (const auto& [bit, c] : order) {
      if (flags & bit) r += c;
    }
  }
  if (flags & kNotifyKeyspace) r += 'K';
  if (flags & kNotifyKeyevent) r += 'E';
  if (flags & kNotifyKeyMiss) r += 'm';
  return r;
}

// A key event of database `db`, as Redis's notifyKeyspaceEvent() with the command's event name.
template <class Clock>
void CommandExecutor<Clock>::notify(std::size_t db, const typename store_type::event_type& e) {
  const bool is_hash = e.value != nullptr && e.value->hash() != nullptr;
  const std::string_view cmd = command_;
  int type = kNotifyGeneric;
  const char* name = nullptr;
  switch (e.cause) {
    case KeyEventCause::set:
    case KeyEventCause::update:
      type = is_hash ? kNotifyHash : kNotifyString;
      if (cmd == "incr" || cmd == "decr" || cmd == "incrby" || cmd == "decrby") {
        name = "incrby";
      } else if (cmd == "incrbyfloat" || cmd == "append" || cmd == "setrange") {
        name = cmd == "append" ? "append" : cmd == "setrange" ? "setrange" : "incrbyfloat";
      } else if (cmd == "restore") {
        type = kNotifyGeneric;
        name = "restore";
      } else if (cmd == "move") {
        type = kNotifyGeneric;
        name = "move_to";
      } else if (cmd == "copy") {
        type = kNotifyGeneric;
        name = "copy_to";
      } else {
        name = "set";
      }
      break;
    case KeyEventCause::expire: name = "expire"; break;
    case KeyEventCause::persist: name = "persist"; break;
    case KeyEventCause::del: name = cmd == "move" ? "move_from" : "del"; break;
    case KeyEventCause::expired: type = kNotifyExpired; name = "expired"; break;
    case KeyEventCause::evicted: type = kNotifyEvicted; name = "evicted"; break;
    case KeyEventCause::rename_from: name = "rename_from"; break;
    case KeyEventCause::rename_to: name = "rename_to"; break;
    case KeyEventCause::copy_to: name = "copy_to"; break;
    case KeyEventCause::hset:
      type = kNotifyHash;
      name = cmd == "hincrby" ? "hincrby" : cmd == "hincrbyfloat" ? "hincrbyfloat" : "hset";
      break;
    case KeyEventCause::hdel: type = kNotifyHash; name = "hdel"; break;
    case KeyEventCause::hexpire: type = kNotifyHash; name = "hexpire"; break;
    case KeyEventCause::hpersist: type = kNotifyHash; name = "hpersist"; break;
    case KeyEventCause::hexpired: type = kNotifyHash; name = "hexpired"; break;
  }
  const std::string db_text = std::to_string(db);
  // A key the command created: "new" first, as Redis's dbAdd() raises it.
  const bool creates = e.cause == KeyEventCause::set || e.cause == KeyEventCause::hset ||
                       e.cause == KeyEventCause::copy_to || e.cause == KeyEventCause::rename_to;
  if (creates && (notify_flags_ & kNotifyNew) != 0) {
    auto it = std::find(absent_.begin(), absent_.end(), e.key);
    if (it != absent_.end()) {
      absent_.erase(it);
      if (notify_flags_ & kNotifyKeyspace) publish("__keyspace@" + db_text + "__:" + e.key, "new");
      if (notify_flags_ & kNotifyKeyevent) publish("__keyevent@" + db_text + "__:new", e.key);
    }
  }
  if (name == nullptr || (notify_flags_ & type) == 0) return;
  if (notify_flags_ & kNotifyKeyspace) publish("__keyspace@" + db_text + "__:" + e.key, name);
  if (notify_flags_ & kNotifyKeyevent) publish("__keyevent@" + db_text + "__:" + name, e.key);
}

// The key arguments of a command about to run that do not exist (for "new" events).
template <class Clock>
void CommandExecutor<Clock>::note_absent_keys(const Spec& spec, const Args& argv) {
  absent_.clear();
  if (spec.first_key <= 0 || spec.step <= 0) return;
  const auto n = static_cast<std::int64_t>(argv.size());
  const std::int64_t last = spec.last_key < 0 ? n + spec.last_key : spec.last_key;
  for (std::int64_t i = spec.first_key; i <= last && i < n; i += spec.step) {
    const std::string& k = argv[static_cast<std::size_t>(i)];
    if (store_->peek(k) == nullptr) absent_.push_back(k);
  }
}

// ---- CLIENT (the session's part) ----

template <class Clock>
Reply CommandExecutor<Clock>::cmd_client(const Args& a, Session& s) {
  const auto sub = [&](const char* name) { return detail::is_opt(a[1], name); };
  if (sub("id") && a.size() == 2) return Reply::integer(static_cast<std::int64_t>(s.id));
  if (sub("getname") && a.size() == 2) return s.name.empty() ? Reply::nil() : Reply::bulk(s.name);
  if (sub("setname") && a.size() == 3) {
    for (const char c : a[2]) {
      if (c < '!' || c > '~') return Reply::error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    s.name = a[2];
    return ok();
  }
  if (sub("reply") && a.size() == 3) {
    if (detail::is_opt(a[2], "on")) {
      s.reply_off = false;
      s.reply_skip = false;
      return ok();
    }
    if (detail::is_opt(a[2], "off")) {
      s.reply_off = true;
      return ok();  // (not sent: execute_into() drops it)
    }
    if (detail::is_opt(a[2], "skip")) {
      if (!s.reply_off) s.reply_skip = true;
      return ok();
    }
    return syntax_error();
  }
  if (sub("no-evict") && a.size() == 3) {
    if (detail::is_opt(a[2], "on") || detail::is_opt(a[2], "off")) return ok();  // (no client eviction here)
    return syntax_error();
  }
  if (sub("help") && a.size() == 2) {
    return Reply::array({Reply::status("CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
                         Reply::status("GETNAME"), Reply::status("    Return the name of the current connection."),
                         Reply::status("ID"), Reply::status("    Return the ID of the current connection."),
                         Reply::status("INFO"), Reply::status("    Return information about the current client connection."),
                         Reply::status("KILL <ip:port>"), Reply::status("    Kill connection made from <ip:port>."),
                         Reply::status("KILL <option> <value> [<option> <value> [...]]"),
                         Reply::status("    Kill connections. Options are: ID, TYPE, ADDR, SKIPME."),
                         Reply::status("LIST [TYPE normal|master|replica|pubsub]"),
                         Reply::status("    Return information about client connections."),
                         Reply::status("NO-EVICT (ON|OFF)"), Reply::status("    Accepted; clients are not evicted here."),
                         Reply::status("REPLY (ON|OFF|SKIP)"), Reply::status("    Control the replies sent to the current connection."),
                         Reply::status("SETNAME <name>"), Reply::status("    Assign the name <name> to the current connection."),
                         Reply::status("HELP"), Reply::status("    Prints this help.")});
  }
  return detail::error_format("unknown subcommand or wrong number of arguments for '" + std::string(detail::cstr(a[1])) +
                              "'. Try CLIENT HELP.");
}

}  // namespace expiring::redis
