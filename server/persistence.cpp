// server/persistence.cpp: the server's persistence (server.hpp has the design).
//
// With Redis's names (docs/semantics.md §4, D28-D33):
//   * The snapshot, dbfilename in dir, is Redis's RDB (rdb.hpp): redis-server loads what SAVE
//     wrote here and this server loads redis-server's dump.rdb. (A file in the library's own
//     snapshot format, snapshot.hpp, which earlier versions wrote, still loads at start; it is
//     never written.) RDB values of other types than strings and hashes stop the start, naming
//     the key, unless rdb-skip-other-types is yes (then skipped and counted in the log).
//   * At start: with appendonly yes the append-only log in dir is replayed (the snapshot is
//     loaded first if there is no log yet, and becomes its base); else the snapshot is loaded
//     if it exists. Keys already expired in a snapshot are skipped.
//   * SAVE writes the snapshot; BGSAVE forks a child that writes it while the
//     loop goes on; LASTSAVE; DEBUG RELOAD saves, empties and loads it again. BGREWRITEAOF
//     starts the log's rewrite, which the loop advances one bounded step per iteration
//     (append_log.hpp). INFO persistence reports them.
//   * One change feed serves the log, the replicas' stream and the change counter.
//   * REPLICAOF is added here with the other commands that need files, processes or sockets;
//     replication.cpp carries it out, and answers SYNC, PSYNC and REPLCONF.
#include "server.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <expiring/rdb.hpp>
#include <expiring/snapshot.hpp>

namespace expiring::server {

using expiring::redis::Action;
using expiring::redis::Reply;
using expiring::redis::RequestParser;

// ---- Persistence (snapshot.hpp, append_log.hpp) ----

bool Server::file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The snapshot file: RDB, or (read only) the library's own format, told apart by the magic.
std::optional<std::string> Server::load_snapshot(expiring::LoadAs as, std::uint64_t& keys, std::uint64_t& expired) {
  // (Opened as the loaders open it: a regular file only, never blocking on a FIFO.)
  char magic[5] = {};
  std::uint64_t size = 0;
  int err = 0;
  std::string why;
  const int fd = expiring::detail::open_regular(snapshot_path().c_str(), O_RDONLY, size, err, why);
  if (fd >= 0) {
    const ssize_t n = ::read(fd, magic, sizeof magic);
    ::close(fd);
    if (n == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, "REDIS", 5) != 0) {
      // (The library's own format holds one database: it becomes database 0.)
      const auto r = expiring::load(db(0), snapshot_path(), as);
      if (!r.ok()) return r.error().message;
      for (std::size_t i = 1; i < dbs().size(); ++i) db(i).clear();
      keys = r->keys;
      expired = r->expired;
      return std::nullopt;
    }
  }
  expiring::RdbLoadOptions o;
  o.as = as;
  o.skip_other_types = cfg_.rdb_skip_other_types;
  const auto r = expiring::load_rdb_databases(dbs(), snapshot_path(), o);
  if (!r.ok()) return r.error().message;
  keys = r->keys;
  expired = r->expired;
  if (r->skipped != 0 || r->other_db != 0) {
    std::fprintf(stderr, "expiring-server: %s: %llu values of other types and %llu keys of other databases skipped\n",
                 snapshot_path().c_str(), static_cast<unsigned long long>(r->skipped),
                 static_cast<unsigned long long>(r->other_db));
  }
  return std::nullopt;
}

std::optional<std::string> Server::save_snapshot() {
  const auto r = expiring::save_rdb_databases(dbs(), snapshot_path());
  if (!r.ok()) return r.error().message;
  return std::nullopt;
}

// At start: the log (after the snapshot, if the log does not exist yet), or the snapshot.
bool Server::load_data() {
  const bool have_log = file_exists(cfg_.dir + "/" + cfg_.appendfilename + ".manifest");
  if ((!cfg_.appendonly || !have_log) && file_exists(snapshot_path())) {
    std::uint64_t keys = 0, expired = 0;
    if (const auto why = load_snapshot(expiring::LoadAs::primary, keys, expired)) {
      std::fprintf(stderr, "expiring-server: cannot load %s: %s\n", snapshot_path().c_str(), why->c_str());
      return false;
    }
    std::fprintf(stderr, "expiring-server: loaded %llu keys from %s (%llu already expired, skipped)\n",
                 static_cast<unsigned long long>(keys), snapshot_path().c_str(), static_cast<unsigned long long>(expired));
    lastsave_s_ = unix_seconds();
  }
  if (cfg_.appendonly) {
    if (const auto why = open_log(/*start_over=*/false)) {
      std::fprintf(stderr, "expiring-server: cannot open the append-only log in %s: %s\n", cfg_.dir.c_str(), why->c_str());
      return false;
    }
    std::fprintf(stderr, "expiring-server: append-only log: %llu records replayed, %llu bytes cut off a torn end\n",
                 static_cast<unsigned long long>(aof_->replayed().records),
                 static_cast<unsigned long long>(aof_->replayed().truncated_bytes));
  }
  install_feeds(true);
  exec_.set_transaction_hook([this](bool begin) { on_transaction(begin); });
  exec_.set_publish_hook([this](const std::string& channel, const std::string& message, std::size_t db) {
    propagate_publish(channel, message, static_cast<std::int64_t>(db));
  });
  return true;
}

// One feed per database for the log, the replicas and the change counter (off while DEBUG
// LOADAOF replays the log: what it loads is not a change to send anywhere, as Redis's).
void Server::install_feeds(bool on) {
  for (const auto& s : stores_) {
    Store* const store = s.get();
    if (on) {
      store->set_change_feed([this, store](const expiring::redis::ValueChange& c) { on_change(c, db_of(store)); });
    } else {
      store->set_change_feed({});
    }
  }
}

// The append-only log in dir: replayed into the databases (at start, DEBUG LOADAOF), or
// started over from what they hold (CONFIG SET appendonly yes). Why it failed, or nothing.
std::optional<std::string> Server::open_log(bool start_over) {
  expiring::AppendLogOptions o;
  o.fsync = cfg_.appendfsync;
  o.name = cfg_.appendfilename;
  o.attach = false;  // the server's own feed (load_data()) calls it
  o.start_over = start_over;
  auto r = expiring::AppendLog<Store>::open(dbs(), cfg_.dir, o);
  if (!r.ok()) return r.error().message;
  aof_ = std::move(*r);
  return std::nullopt;
}

void Server::on_change(const expiring::redis::ValueChange& c, std::size_t db) {
  const bool unit_mark = c.op == expiring::ChangeOp::multi || c.op == expiring::ChangeOp::exec;
  if (!unit_mark) ++dirty_;
  if (in_transaction_ && unit_mark) return;  // a store's own unit inside EXEC: EXEC is the unit
  if (aof_) {
    if (in_transaction_ && !tx_logged_) {
      expiring::redis::ValueChange m;
      m.op = expiring::ChangeOp::multi;
      aof_->on_change(m, db);
      tx_logged_ = true;
    }
    aof_->on_change(c, db);
  }
  if (streaming_) {  // (also while no replica is connected: one may continue from the backlog)
    record_.clear();
    expiring::redis::write_change(c, record_);
    emit(static_cast<std::int64_t>(db), record_);
  }
}

// PUBLISH, to the replicas only (Redis's PROPAGATE_REPL: not to the log), in the publisher's
// database (-1: none to select).
void Server::propagate_publish(const std::string& channel, const std::string& message, std::int64_t db) {
  if (!streaming_) return;
  std::string record;
  expiring::redis::Reply::write_array_header(record, 3);
  expiring::redis::detail::put_bulk(record, "PUBLISH");
  expiring::redis::detail::put_bulk(record, channel);
  expiring::redis::detail::put_bulk(record, message);
  emit(db, record);
}

// EXEC's commands as one unit, as Redis 7 propagates a transaction: MULTI ... EXEC around
// them when they made more than one record, the record alone when one, nothing when none.
void Server::on_transaction(bool begin) {
  if (begin) {
    in_transaction_ = true;
    return;
  }
  in_transaction_ = false;
  if (tx_logged_) {
    expiring::redis::ValueChange e;
    e.op = expiring::ChangeOp::exec;
    aof_->on_change(e, 0);
    tx_logged_ = false;
  }
  std::vector<std::pair<std::int64_t, std::string>> held;
  held.swap(tx_records_);
  if (held.size() > 1) {
    static const std::string kMulti = "*1\r\n$5\r\nMULTI\r\n";
    to_replicas(held.front().first, kMulti);
  }
  for (const auto& [db, record] : held) to_replicas(db, record);
  if (held.size() > 1) {
    static const std::string kExec = "*1\r\n$4\r\nEXEC\r\n";
    to_replicas(-1, kExec);
  }
}

// A record for the stream: held while EXEC runs, else sent (`db` -1: of no database).
void Server::emit(std::int64_t db, const std::string& record) {
  if (in_transaction_) {
    tx_records_.emplace_back(db, record);
    return;
  }
  to_replicas(db, record);
}

void Server::to_replicas(std::int64_t db, const std::string& record) {
  if (db >= 0 && stream_db_ != db) {  // (and after a full sync, as Redis)
    std::string select;
    expiring::redis::Reply::write_array_header(select, 2);
    expiring::redis::detail::put_bulk(select, "SELECT");
    expiring::redis::detail::put_bulk(select, std::to_string(db));
    add_to_stream(select.data(), select.size());
    stream_db_ = db;
  }
  add_to_stream(record.data(), record.size());
}

// beforeSleep: the stream to the replicas, a step of a log rewrite, a finished BGSAVE.
void Server::persistence_before_sleep() {
  propagate_to_replicas();
  if (aof_ && aof_->rewriting()) {
    if (aof_->rewrite_step()) {
      last_rewrite_ok_ = true;
      std::fprintf(stderr, "expiring-server: append-only log rewritten\n");
    } else if (!aof_->rewriting()) {
      last_rewrite_ok_ = false;  // abandoned: the log says why
    }
  }
  if (bgsave_pid_ > 0) {
    int status = 0;
    if (::waitpid(bgsave_pid_, &status, WNOHANG) == bgsave_pid_) {
      last_bgsave_ok_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (last_bgsave_ok_) {
        lastsave_s_ = unix_seconds();
        dirty_ -= std::min(dirty_, dirty_at_fork_);
      }
      std::fprintf(stderr, "expiring-server: background save %s\n", last_bgsave_ok_ ? "done" : "FAILED");
      bgsave_pid_ = -1;
    }
  }
}

void Server::add_persistence_commands() {
  using Args = Executor::Args;
  using Session = expiring::redis::Session;
  exec_.add_command("save", 1, "admin", [this](const Args&, Session&) {
    if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
    if (const auto why = save_snapshot()) return Reply::error("ERR " + *why);
    dirty_ = 0;
    lastsave_s_ = unix_seconds();
    return Reply::ok();
  });
  // A forked child writes the snapshot from its copy-on-write view of the store.
  exec_.add_command("bgsave", -1, "admin", [this](const Args&, Session&) {
    if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
    const pid_t pid = ::fork();
    if (pid < 0) return Reply::error(std::string("ERR fork failed: ") + std::strerror(errno));
    if (pid == 0) ::_exit(save_snapshot() ? 1 : 0);
    bgsave_pid_ = pid;
    dirty_at_fork_ = dirty_;
    return Reply::status("Background saving started");
  });
  exec_.add_command("lastsave", 1, "fast", [this](const Args&, Session&) { return Reply::integer(lastsave_s_); });
  // CONFIG SET appendonly yes starts a log whose base is what the databases hold now (written
  // before the reply: Redis forks a rewrite instead), replacing a log left in dir; no closes
  // it (written and synced). appendfsync applies to the open log at once.
  exec_.add_config(
      "appendonly", [this] { return std::string(aof_ ? "yes" : "no"); },
      [this](const std::string& v) -> std::string {
        const bool on = expiring::redis::detail::iequals(v, "yes");
        if (!on && !expiring::redis::detail::iequals(v, "no")) return "argument must be 'yes' or 'no'";
        if (on == (aof_ != nullptr)) return "";
        if (in_transaction_) return "not inside a transaction";
        if (!on) {
          aof_.reset();
          return "";
        }
        if (const auto why = open_log(/*start_over=*/true)) return *why;
        return "";
      });
  exec_.add_config(
      "appendfsync", [this] { return std::string(expiring::to_string(cfg_.appendfsync)); },
      [this](const std::string& v) -> std::string {
        const std::string f = expiring::redis::detail::lowercase(v);
        expiring::Fsync fsync = expiring::Fsync::everysec;
        if (f == "always") {
          fsync = expiring::Fsync::always;
        } else if (f == "no") {
          fsync = expiring::Fsync::no;
        } else if (f != "everysec") {
          return "argument(s) must be one of the following: always, everysec, no";
        }
        cfg_.appendfsync = fsync;
        if (aof_) aof_->set_fsync(fsync);
        return "";
      });
  exec_.add_command("bgrewriteaof", 1, "admin", [this](const Args&, Session&) {
    if (!aof_) return Reply::error("ERR the append-only log is off (start with --appendonly yes)");
    if (aof_->rewriting()) return Reply::error("ERR Background append only file rewriting already in progress");
    if (!aof_->start_rewrite()) return Reply::error("ERR the rewrite could not start");
    return Reply::status("Background append only file rewriting started");
  });
  // DEBUG: RELOAD (below), SET-TIME and ADVANCE-TIME (clock.cpp), the rest the command
  // layer's; HELP lists them all.
  exec_.add_command("debug", -2, "admin", [this](const Args& a, Session& s) {
    if (std::optional<Reply> r = clock_command(a)) return *r;
    if (a.size() == 2 && expiring::redis::detail::iequals(a[1], "help")) {
      // The command layer's lines, with the server's before its closing HELP entry.
      Reply help = exec_.run_builtin(a, s);
      std::vector<Reply>& lines = help.elements();
      const std::vector<Reply> ours = {
          Reply::status("RELOAD"), Reply::status("    Save the RDB on disk and reload it back to memory."),
          Reply::status("LOADAOF"), Reply::status("    Flush the AOF buffers on disk and reload the AOF in memory."),
          Reply::status("SET-TIME <unix-time-ms>"),
          Reply::status("    Set the keys' clock (--clock manual only; not in Redis). Replies the time."),
          Reply::status("ADVANCE-TIME <milliseconds>"),
          Reply::status("    Move the keys' clock (--clock manual only; not in Redis). Replies the time.")};
      lines.insert(lines.end() - std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(lines.size())), ours.begin(),
                   ours.end());
      return help;
    }
    // LOADAOF: the log written and synced, the databases emptied and the log replayed into
    // them, as Redis's.
    if (a.size() == 2 && expiring::redis::detail::iequals(a[1], "loadaof")) {
      if (!aof_) return Reply::error("ERR the append-only log is off (CONFIG SET appendonly yes)");
      if (in_transaction_) return Reply::error("ERR DEBUG LOADAOF is not allowed inside a transaction");
      if (!aof_->flush()) return Reply::error("ERR the append-only log failed: it cannot be read back");
      aof_.reset();
      install_feeds(false);
      const auto why = open_log(/*start_over=*/false);
      install_feeds(true);
      if (why) {
        // The databases are as they were (a replay that fails changes nothing): logged again
        // from them, as a log that cannot be read must not stay the one in dir.
        const auto again = open_log(/*start_over=*/true);
        return Reply::error("ERR Error trying to load the append-only log: " + *why +
                            (again ? " (and the log is off: " + *again + ")" : ""));
      }
      dirty_ = 0;
      return Reply::ok();
    }
    if (a.size() == 2 && expiring::redis::detail::iequals(a[1], "reload")) {
      if (bgsave_pid_ > 0) return Reply::error("ERR Background save already in progress");
      if (const auto why = save_snapshot()) return Reply::error("ERR " + *why);
      // A replica keeps its stale keys: only the primary's DEL removes them.
      std::uint64_t keys = 0, expired = 0;
      if (const auto why = load_snapshot(replica_ ? expiring::LoadAs::replica : expiring::LoadAs::primary, keys, expired)) {
        return Reply::error("ERR Error trying to load the RDB dump: " + *why);
      }
      dirty_ = 0;
      lastsave_s_ = unix_seconds();
      return Reply::ok();
    }
    return exec_.run_builtin(a, s);
  });
  auto replicaof = [this](const Args& a, Session&) {
    if (expiring::redis::detail::iequals(a[1], "no") && expiring::redis::detail::iequals(a[2], "one")) {
      stop_replication();
      return Reply::ok();
    }
    std::int64_t port = 0;
    if (!expiring::redis::parse_int64(a[2], port) || port < 0 || port > 65535) {  // (Redis takes 0 too)
      return Reply::error("ERR Invalid master port");
    }
    start_replication(a[1], static_cast<int>(port));
    return Reply::ok();
  };
  // SWAPDB changes no store (each keeps its keys and its feed) but which database each is:
  // the replicas are sent the command itself, as Redis propagates it, and the log records it.
  exec_.add_command("swapdb", 3, "write fast", [this](const Args& a, Session& s) {
    Reply r = exec_.run_builtin(a, s);
    if (r.type() == Reply::Type::status && streaming_) {
      std::string record;
      Reply::write_array_header(record, 3);
      for (const std::string& x : a) expiring::redis::detail::put_bulk(record, x);
      emit(-1, record);
    }
    if (r.type() == Reply::Type::status) {
      ++dirty_;
      if (aof_) {
        std::int64_t x = 0, y = 0;
        (void)expiring::redis::parse_int64(a[1], x);
        (void)expiring::redis::parse_int64(a[2], y);
        aof_->swapdb(static_cast<std::size_t>(x), static_cast<std::size_t>(y));
      }
    }
    return r;
  });
  exec_.add_command("replicaof", 3, "admin", replicaof);
  exec_.add_command("slaveof", 3, "admin", replicaof);
  // SYNC, PSYNC and REPLCONF: replication.cpp (Server::replication_command).
}


}  // namespace expiring::server
