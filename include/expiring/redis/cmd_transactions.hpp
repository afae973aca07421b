// expiring/redis/cmd_transactions.hpp: the transaction commands: MULTI EXEC DISCARD WATCH UNWATCH.
//
// Design. As Redis 7.0's multi.c. After MULTI a session's commands are checked (name, arity,
// Redis's no-multi commands, the memory limit) and queued, each answered +QUEUED; one that fails
// a check is answered with its error and makes the EXEC that follows fail with EXECABORT. EXEC
// runs the queue in order, each command's reply an element of one array, with no other
// session's command between them. Time stands still inside it when the stores' clock does not
// move between commands: expiring-server sets its ManualClock once per command it reads from a
// client, so every command of a transaction sees one instant, as Redis 7 takes one time
// snapshot per command unit (semantics.md D37).
//
// WATCH key...: EXEC answers a nil array, and runs nothing, when a watched key was changed
// after the WATCH, by this session or another: a write, a TTL change, a deletion, an expiry
// (lazy or active), an eviction, a FLUSHDB or FLUSHALL of a database holding it, a SWAPDB that
// changes what its number holds. The changes come from the stores' key events (events.hpp):
// while any key is watched the executor is every store's listener; with none watched it sets
// no listener, and a write costs nothing more. Redis's rule for a key already expired when it
// was watched holds: its deletion (lazy, a DEL, a FLUSHDB) is no change, its re-creation is.
// EXEC also fails when a watched key that was live at the WATCH is expired by then, even if
// nothing reclaimed it.
//
// The implementations of CommandExecutor's members for this family; the class, its dispatch
// and the command table are in commands.hpp, which includes this file at its end. Include
// commands.hpp, not this file.
#pragma once

#include "commands.hpp"

namespace expiring::redis {

// In MULTI, every command but EXEC, DISCARD, MULTI, WATCH and QUIT is checked and queued
// (Redis's processCommand()); nullopt for those five, which run.
template <class Clock>
std::optional<Reply> CommandExecutor<Clock>::queue_in_multi(const Args& argv, Session& s) {
  const std::string name = detail::lowercase(argv[0]);
  if (name == "exec" || name == "discard" || name == "multi" || name == "watch" || name == "quit") return std::nullopt;
  const auto refuse = [&](Reply r) {
    s.multi_dirty = true;
    return r;
  };
  bool denyoom = false, write = false;
  if (auto sc = server_commands_.find(name); sc != server_commands_.end()) {
    if (!arity_ok(sc->second.arity, argv.size())) return refuse(arity_error(sc->first));
    write = sc->second.write;
    denyoom = sc->second.denyoom;
  } else {
    auto it = index_.find(name);
    if (it == index_.end()) return refuse(unknown_command(argv));
    if (!arity_ok(table()[it->second].arity, argv.size())) return refuse(arity_error(table()[it->second].name));
    denyoom = denyoom_[it->second];
    write = write_[it->second];
  }
  if (name == "save" || name == "shutdown" || name == "sync" || name == "psync") {
    return refuse(Reply::error("ERR Command not allowed inside a transaction"));
  }
  // Queuing takes memory: any command is refused over the limit (DISCARD and EXEC are not).
  if (store_->options().maxmemory != 0 && !memory_check()) return refuse(oom_error());
  if (write && options_.min_replicas_to_write > 0 && write_gate_) {
    if (std::optional<std::string> refused = write_gate_()) return refuse(Reply::error(std::move(*refused)));
  }
  s.queued_bytes += args_cost(argv);
  s.queued.push_back(argv);
  s.queued_denyoom = s.queued_denyoom || denyoom;
  s.queued_write = s.queued_write || write;
  return Reply::status("QUEUED");
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_multi(const Args&, Session& s) {
  if (s.in_multi) return Reply::error("ERR MULTI calls can not be nested");
  s.in_multi = true;
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_discard(const Args&, Session& s) {
  if (!s.in_multi) return Reply::error("ERR DISCARD without MULTI");
  end_transaction(s);
  return ok();
}

template <class Clock>
void CommandExecutor<Clock>::write_exec(const Args&, Session& s, OutputBuffer& out) {
  if (!s.in_multi) {
    Reply::error("ERR EXEC without MULTI").write_resp(out);
    return;
  }
  for (const Args& q : s.queued) {  // (a replica whose link went down since they were queued)
    if (refused_as_stale(q[0])) {
      end_transaction(s);
      Reply::error("EXECABORT Transaction discarded because of: " + masterdown_error().str()).write_resp(out);
      return;
    }
  }
  if (watched_key_expired(s)) s.watch_dirty = true;
  if (s.multi_dirty || s.watch_dirty) {
    if (s.multi_dirty) {
      Reply::error("EXECABORT Transaction discarded because of previous errors.").write_resp(out);
    } else {
      Reply::nil_array().write_resp(out, s.resp);
    }
    end_transaction(s);
    return;
  }
  // A transaction that may grow memory is refused whole over the limit.
  if (s.queued_denyoom && store_->options().maxmemory != 0 && !memory_check()) {
    end_transaction(s);
    Reply::error("EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.")
        .write_resp(out);
    return;
  }
  if (s.queued_write && options_.min_replicas_to_write > 0 && write_gate_) {
    if (std::optional<std::string> refused = write_gate_()) {
      end_transaction(s);
      Reply::error("EXECABORT Transaction discarded because of: " + *refused).write_resp(out);
      return;
    }
  }
  std::vector<Args> queued;
  queued.swap(s.queued);
  end_transaction(s);
  Reply::write_array_header(out, queued.size());
  if (transaction_hook_) transaction_hook_(true);
  in_exec_ = true;
  for (const Args& a : queued) execute_into(a, s, out);
  in_exec_ = false;
  if (transaction_hook_) transaction_hook_(false);
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_watch(const Args& a, Session& s) {
  if (s.in_multi) return Reply::error("ERR WATCH inside MULTI is not allowed");
  if (s.watch_dirty) return ok();  // no point: the next EXEC fails anyway
  for (std::size_t i = 1; i < a.size(); ++i) {
    bool known = false;
    for (const Session::Watched& w : s.watched) known = known || (w.db == s.db && w.key == a[i]);
    if (known) continue;
    const bool stale = store_->peek(a[i]) == nullptr && store_->peek_stored(a[i], [](const Value&, const auto&) {});
    s.watched.push_back(Session::Watched{s.db, a[i], stale});
    watchers_[WatchKey{s.db, a[i]}].push_back(&s);
  }
  s.registry = &registry_;
  update_listeners();
  return ok();
}

template <class Clock>
Reply CommandExecutor<Clock>::cmd_unwatch(const Args&, Session& s) {
  unwatch_all(s);
  s.watch_dirty = false;
  return ok();
}

// ---- The watch registry ----

template <class Clock>
void CommandExecutor<Clock>::end_transaction(Session& s) {
  s.queued.clear();
  s.queued_bytes = 0;
  s.queued_denyoom = false;
  s.queued_write = false;
  s.in_multi = false;
  s.multi_dirty = false;
  s.watch_dirty = false;
  unwatch_all(s);
}

template <class Clock>
void CommandExecutor<Clock>::unwatch_all(Session& s) {
  for (const Session::Watched& w : s.watched) {
    auto it = watchers_.find(WatchKey{w.db, w.key});
    if (it == watchers_.end()) continue;
    std::vector<Session*>& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), &s), v.end());
    if (v.empty()) watchers_.erase(it);
  }
  s.watched.clear();
  if (!s.subscribed()) s.registry = nullptr;
  update_listeners();
}

// Redis's isWatchedKeyExpired(): a key live at its WATCH and past its deadline now.
template <class Clock>
bool CommandExecutor<Clock>::watched_key_expired(const Session& s) const {
  for (const Session::Watched& w : s.watched) {
    if (w.stale || w.db >= dbs_.size()) continue;
    const store_type& d = *dbs_[w.db];
    if (d.peek(w.key) == nullptr && d.peek_stored(w.key, [](const Value&, const auto&) {})) return true;
  }
  return false;
}

// A change of `key` in database `db` (a key event), as Redis's touchWatchedKey(): the
// sessions watching it cannot EXEC, except that the deletion of a key already stale at its
// WATCH is no change (and from then on the key counts as missing, not stale).
template <class Clock>
void CommandExecutor<Clock>::touch(std::size_t db, const std::string& key, bool deletion) {
  auto it = watchers_.find(WatchKey{db, key});
  if (it == watchers_.end()) return;
  for (Session* s : it->second) {
    for (Session::Watched& w : s->watched) {
      if (w.db != db || w.key != key) continue;
      if (w.stale && deletion) {
        w.stale = false;
      } else {
        s->watch_dirty = true;
      }
    }
  }
}

// FLUSHDB of `db` (replaced_with null), or SWAPDB giving `db` the content of `replaced_with`,
// before it happens: Redis's touchAllWatchedKeysInDb().
template <class Clock>
void CommandExecutor<Clock>::touch_database(std::size_t db, const store_type* replaced_with) {
  if (watchers_.empty()) return;
  const store_type& emptied = *dbs_[db];
  const auto stored = [](const store_type& d, const std::string& k) { return d.peek_stored(k, [](const Value&, const auto&) {}); };
  const auto stale = [&](const store_type& d, const std::string& k) { return stored(d, k) && d.peek(k) == nullptr; };
  for (auto& [where, sessions] : watchers_) {
    if (where.db != db) continue;
    const std::string& key = where.key;
    const bool in_emptied = stored(emptied, key);
    const bool in_replacement = replaced_with != nullptr && stored(*replaced_with, key);
    if (!in_emptied && !in_replacement) continue;
    for (Session* s : sessions) {
      for (Session::Watched& w : s->watched) {
        if (w.db != db || w.key != key) continue;
        if (w.stale) {
          if (!in_replacement) {
            w.stale = false;  // a stale key deleted: no change
            continue;
          }
          if (stale(*replaced_with, key)) continue;  // stale replaced with stale
        } else if (!in_emptied && stale(*replaced_with, key)) {
          w.stale = true;  // nothing replaced with a stale key: no change yet
          continue;
        }
        s->watch_dirty = true;
      }
    }
  }
}

// The stores' listener is set while some key is watched or keyspace notifications are on,
// and removed otherwise.
template <class Clock>
void CommandExecutor<Clock>::update_listeners() {
  const bool want = !watchers_.empty() || (notify_flags_ & (kNotifyKeyspace | kNotifyKeyevent)) != 0;
  if (want == listening_) return;
  listening_ = want;
  for (store_type* d : dbs_) {
    if (!want) {
      d->set_listener({});
      continue;
    }
    d->set_listener([this, d](const typename store_type::event_type& e) {
      std::size_t db = 0;
      while (db < dbs_.size() && dbs_[db] != d) ++db;
      const bool deletion = e.cause == KeyEventCause::del || e.cause == KeyEventCause::expired ||
                            e.cause == KeyEventCause::evicted;
      if (!watchers_.empty()) touch(db, e.key, deletion);
      if (notify_flags_ != 0) notify(db, e);
    });
  }
}

// A session destroyed while it watches or subscribes (its connection closed).
template <class Clock>
void CommandExecutor<Clock>::forget(void* self, Session& s) noexcept {
  auto* e = static_cast<CommandExecutor*>(self);
  try {
    while (!s.channels.empty()) e->unsubscribe(s, std::string(s.channels.back()), false);
    while (!s.patterns.empty()) e->unsubscribe(s, std::string(s.patterns.back()), true);
    e->unwatch_all(s);
  } catch (...) {  // (removing entries and a listener allocates nothing)
  }
  s.registry = nullptr;
}

}  // namespace expiring::redis
