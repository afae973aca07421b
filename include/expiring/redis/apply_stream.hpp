// expiring/redis/apply_stream.hpp: a Redis primary's command stream, applied to a store as a
// Redis replica applies it.
//
// Design. What a primary propagates is a write that took effect on it, in its vocabulary:
// Redis 7 sends every TTL absolute (SET ... PXAT, PEXPIREAT, RESTORE ... ABSTTL, HPEXPIREAT),
// every expiry and eviction as DEL or UNLINK, a script or MULTI as MULTI ... EXEC, and SELECT
// before the first command of a database. A replica runs those commands with one difference
// from a client's: a key its primary has not deleted exists, even past its deadline by the
// replica's own clock (Redis's expireIfNeeded() for the master client; docs/semantics.md D35).
// So StreamApplier does
// not judge time: each command becomes store records applied with Store::apply(), which takes
// every key as valid, computed from the stored entry as peek_stored() shows it, stale or not:
//   SET (any options: the primary ran the NX/XX test), SETNX, SETEX, PSETEX, GETSET, MSET,
//   MSETNX -> set; APPEND, INCR, DECR, INCRBY, DECRBY, SETRANGE -> set KEEPTTL of the result;
//   DEL, UNLINK, GETDEL -> del; EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (relative ones, which
//   only primaries before 7.0 send, against the local clock) -> pexpireat; PERSIST, GETEX
//   (PERSIST / PXAT ...); RENAME, RENAMENX; COPY; MOVE (out of the database: del; into
//   another the applier holds: set); RESTORE;
//   HSET, HMSET, HSETNX, HDEL, HINCRBY, and Redis 7.4's HPEXPIREAT / HEXPIREAT / HPEXPIRE /
//   HEXPIRE ... FIELDS, HPERSIST ... FIELDS and Redis 8's HSETEX -> the hash's new whole
//   value, KEEPTTL (a hash left without fields is deleted); FLUSHALL, FLUSHDB; SELECT; SWAPDB; MULTI ... EXEC as one
//   unit of the store's own feed.
// An applier follows one database (one store), or every database (a vector of stores, one per
// SELECT number, as an expiring-server replica holds them).
// A hash changes by copy: a field command costs O(fields) on the replica (a store record
// carries a whole value); the stream of small hashes (sessions) is what this is for.
//
// Everything else is counted, not applied: commands of the types a store does not hold
// (LPUSH, SADD, ZADD, XADD, ...) and commands of other databases (skipped()), and a command
// the store refuses, a wrong type or an argument it cannot parse (refused()), as a Redis
// replica discards the error replies of its primary's commands. The stream goes on after
// both: only a protocol breach, MULTI inside MULTI or EXEC without MULTI, stops it (fail()).
//
// PING (the primary's heartbeat, counted in the offset as everything is) does nothing;
// REPLCONF GETACK asks the link for an ACK (Outcome::getack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../change_feed.hpp"
#include "../rdb.hpp"
#include "commands.hpp"
#include "resp.hpp"

namespace expiring::redis {

// What one command of the stream did.
enum class StreamOutcome : std::uint8_t {
  applied,   // the store changed (or the command was part of a MULTI, applied at its EXEC)
  ignored,   // PING, SELECT, REPLCONF (not GETACK): nothing to apply
  getack,    // REPLCONF GETACK: the link sends REPLCONF ACK <offset>
  skipped,   // another database's command, or a type the store does not hold
  refused,   // the store refused it (a wrong type, an argument out of range)
  failed,    // the stream breaks the protocol: MULTI inside MULTI, EXEC without MULTI
};

// Applies a primary's command stream, one command at a time, to a store (one database) or to
// a vector of stores (every database), as a Redis replica does (the file's comment has the
// commands). Store is an ExpiringStore or a ConcurrentStore with std::string keys.
template <class Store>
class StreamApplier {
 public:
  // The store's key and value types; K must be std::string.
  using K = typename Store::key_type;
  using V = typename Store::mapped_type;
  static_assert(std::is_same_v<K, std::string>, "expiring::redis::StreamApplier: a Redis stream's keys are byte strings");
  // Which commands the store can follow: the hash commands when V may hold a hash, the
  // string commands when a std::string makes a V. The others are skipped.
  static constexpr bool kHashes = hash_value_traits<V>::enabled;
  static constexpr bool kStrings = std::is_constructible_v<V, std::string>;

  // Applies the commands of database `db` (Redis's SELECT number) to `store`; the other
  // databases' are skipped.
  explicit StreamApplier(Store& store, std::int64_t db = 0) : one_(&store), db_(db) { retarget(); }
  // Applies every database's commands: dbs[n] takes database n's (those of a database past
  // the end, or whose entry is null, are skipped). The vector is the caller's, and SWAPDB in
  // the stream swaps two of its entries, as Redis swaps two databases for every client.
  // The stream starts in database `selected` (0 after a full sync).
  explicit StreamApplier(std::vector<Store*>& dbs, std::int64_t selected = 0) : dbs_(&dbs), selected_(selected) {
    retarget();
  }

  // Applies one command (argv, the name first). A command inside MULTI is held until EXEC.
  StreamOutcome apply(const std::vector<std::string>& argv) {
    if (argv.empty()) return refuse("an empty command");
    const std::string name = detail::uppercase(argv[0]);
    if (name == "MULTI") {
      if (in_multi_) return fail("MULTI inside MULTI");
      in_multi_ = true;
      return StreamOutcome::applied;
    }
    if (name == "EXEC") {
      if (!in_multi_) return fail("EXEC without MULTI");
      in_multi_ = false;
      std::vector<std::vector<std::string>> held;
      held.swap(multi_);
      multi_bytes_ = 0;
      // One unit for this store's own log and replicas too (a transaction that SELECTs
      // another database applies what it does there outside that unit).
      const auto all = [&] {
        for (const auto& a : held) (void)count(run(a, detail::uppercase(a[0])));
      };
      if (store_ != nullptr) {
        store_->as_one_unit(all);
      } else {
        all();
      }
      return StreamOutcome::applied;
    }
    if (name == "DISCARD") {
      in_multi_ = false;
      multi_.clear();
      multi_bytes_ = 0;
      return StreamOutcome::ignored;
    }
    if (name == "PING") return StreamOutcome::ignored;
    if (name == "REPLCONF") {
      if (argv.size() >= 2 && detail::iequals(argv[1], "getack")) return StreamOutcome::getack;
      return StreamOutcome::ignored;
    }
    if (in_multi_) {
      multi_bytes_ += args_cost(argv);
      multi_.push_back(argv);
      return StreamOutcome::applied;
    }
    if (name == "SELECT") return select(argv);
    return count(run(argv, name));
  }

  // What a MULTI not yet executed holds (its commands' bytes), for the link's memory bound.
  std::size_t held_bytes() const noexcept { return multi_bytes_; }
  // Whether a MULTI is open: its commands are held until EXEC.
  bool in_multi() const noexcept { return in_multi_; }
  // The database SELECT chose last (Redis's replica starts at 0 after a full sync).
  std::int64_t selected_db() const noexcept { return selected_; }
  // Back to database 0, as after a full sync (the link calls it once the RDB is loaded).
  void reset_selected_db() noexcept {
    selected_ = 0;
    retarget();
  }

  // PUBLISH in the stream (Redis propagates it so that a replica's subscribers get the
  // message too): the handler delivers it; without one it is ignored.
  using PublishHandler = std::function<void(const std::string& channel, const std::string& message)>;
  void set_publish_handler(PublishHandler h) { on_publish_ = std::move(h); }

  // Commands counted since the applier was made: applied to the store (a MULTI's, each at its
  // EXEC), skipped (another database's, a type the store does not hold), refused by the store.
  // What only steers the stream (PING, SELECT, REPLCONF, MULTI, EXEC, DISCARD, PUBLISH) is not
  // counted.
  std::uint64_t applied() const noexcept { return applied_; }
  std::uint64_t skipped() const noexcept { return skipped_; }
  std::uint64_t refused() const noexcept { return refused_; }
  // The last command skipped or refused, and why (for a log line or INFO).
  const std::string& last_problem() const noexcept { return problem_; }

 private:
  using Ch = Change<K, V>;

  StreamOutcome fail(const char* why) {
    problem_ = why;
    return StreamOutcome::failed;
  }
  StreamOutcome refuse(std::string why) {
    problem_ = std::move(why);
    return StreamOutcome::refused;
  }
  StreamOutcome skip(std::string why) {
    problem_ = std::move(why);
    return StreamOutcome::skipped;
  }
  StreamOutcome count(StreamOutcome o) {
    if (o == StreamOutcome::applied) ++applied_;
    if (o == StreamOutcome::skipped) ++skipped_;
    if (o == StreamOutcome::refused) ++refused_;
    return o;
  }

  // ---- The store's records ----

  StreamOutcome put(const std::string& key, V&& value, ChangeTtl ttl, std::int64_t at = Store::kNoTtl) {
    const Ch c{ChangeOp::set, &key, &value, nullptr, at, ttl};
    return result(store_->apply(c));
  }
  StreamOutcome simple(ChangeOp op, const std::string& key, std::int64_t at = 0) {
    Ch c;
    c.op = op;
    c.key = &key;
    c.at_ms = at;
    return result(store_->apply(c));
  }
  StreamOutcome result(const Result<bool>& r) {
    if (!r.ok()) return refuse(std::string("the store refused a record: ") + to_string(r.error()));
    return StreamOutcome::applied;
  }

  // The stored entry of `key`, stale or not: a copy of its value and its deadline.
  struct Stored {
    std::optional<V> value;
    std::optional<std::int64_t> deadline;
  };
  Stored stored(const std::string& key) const {
    Stored out;
    (void)store_->peek_stored(key, [&](const V& v, const std::optional<std::int64_t>& d) {
      out.value.emplace(v);
      out.deadline = d;
    });
    return out;
  }
  // A value's string, nullptr for a hash.
  static const std::string* text(const V& v) {
    if constexpr (std::is_convertible_v<const V&, const std::string&>) {
      return &static_cast<const std::string&>(v);
    } else if constexpr (expiring::detail::rdb::has_string_member<V>::value) {
      return v.string();
    } else {
      (void)v;
      return nullptr;
    }
  }
  StreamOutcome put_string(const std::string& key, std::string s, ChangeTtl ttl, std::int64_t at = Store::kNoTtl) {
    if constexpr (kStrings) {
      return put(key, V(std::move(s)), ttl, at);
    } else {
      (void)key, (void)s, (void)ttl, (void)at;
      return skip("a string command, and the store holds hashes");
    }
  }

  // A deadline argument: absolute, or relative to this replica's clock (a primary before
  // Redis 7.0 sends EXPIRE / SETEX as given); `unit` 1 or 1000.
  bool deadline(const std::string& arg, bool relative, std::int64_t unit, std::int64_t& out) const {
    std::int64_t v = 0;
    if (!parse_int64(arg, v)) return false;
    if (unit != 1 && !expiring::detail::seconds_to_ms(v, v)) return false;
    if (relative && !expiring::detail::checked_add(store_->now_ms(), v, v)) return false;
    out = v;
    return true;
  }

  // ---- The commands ----

  // The store of database `db`, or null when this applier does not follow it.
  Store* store_of(std::int64_t db) const noexcept {
    if (dbs_ == nullptr) return db == db_ ? one_ : nullptr;
    return db >= 0 && static_cast<std::uint64_t>(db) < dbs_->size() ? (*dbs_)[static_cast<std::size_t>(db)] : nullptr;
  }
  void retarget() noexcept { store_ = store_of(selected_); }

  StreamOutcome select(const std::vector<std::string>& a) {
    std::int64_t db = 0;
    if (a.size() != 2 || !parse_int64(a[1], db)) return refuse("a SELECT without a database number");
    selected_ = db;
    retarget();
    return StreamOutcome::ignored;
  }

  // SWAPDB a b: two entries of the caller's vector change places. With one store, a swap that
  // involves its database is a change it cannot follow (it does not hold the other).
  StreamOutcome swapdb(const std::vector<std::string>& a) {
    std::int64_t x = 0, y = 0;
    if (a.size() != 3 || !parse_int64(a[1], x) || !parse_int64(a[2], y)) return refuse("a bad SWAPDB");
    if (dbs_ == nullptr) {
      if (x == db_ || y == db_) return refuse("a SWAPDB of database " + std::to_string(db_) + " with one it does not hold");
      return skip("a SWAPDB of other databases");
    }
    if (store_of(x) == nullptr || store_of(y) == nullptr) return skip("a SWAPDB of databases it does not hold");
    std::swap((*dbs_)[static_cast<std::size_t>(x)], (*dbs_)[static_cast<std::size_t>(y)]);
    retarget();
    return StreamOutcome::applied;
  }

  // FLUSHALL: every database this applier holds.
  StreamOutcome flush_all() {
    if (dbs_ == nullptr) return flush(*one_);
    StreamOutcome last = StreamOutcome::applied;
    for (Store* d : *dbs_) {
      if (d != nullptr && flush(*d) != StreamOutcome::applied) last = StreamOutcome::refused;
    }
    return last;
  }

  StreamOutcome run(const std::vector<std::string>& a, const std::string& name) {
    const std::size_t n = a.size();
    // The commands that are not of one database first.
    if (name == "PUBLISH" && n == 3) {
      if (on_publish_) on_publish_(a[1], a[2]);
      return StreamOutcome::ignored;
    }
    if (name == "SELECT") return select(a);
    if (name == "FLUSHALL") return flush_all();
    if (name == "SWAPDB") return swapdb(a);
    if (store_ == nullptr) return skip("a command of database " + std::to_string(selected_));
    if (name == "FLUSHDB") return flush(*store_);
    if (n < 2) return skip("'" + name + "' (not a write this store follows)");
    const std::string& key = a[1];
    if (name == "SET" && n >= 3) return set(a);
    if ((name == "SETNX" || name == "GETSET") && n == 3) return put_string(key, a[2], ChangeTtl::none);
    if ((name == "SETEX" || name == "PSETEX") && n == 4) {
      std::int64_t at = 0;
      if (!deadline(a[2], true, name == "SETEX" ? 1000 : 1, at)) return refuse("a bad " + name + " time");
      return put_string(key, a[3], ChangeTtl::at, at);
    }
    if ((name == "MSET" || name == "MSETNX") && n >= 3 && n % 2 == 1) {
      StreamOutcome last = StreamOutcome::applied;
      store_->as_one_unit([&] {
        for (std::size_t i = 1; i + 1 < n; i += 2) {
          if (put_string(a[i], a[i + 1], ChangeTtl::none) != StreamOutcome::applied) last = StreamOutcome::refused;
        }
      });
      return last;
    }
    if (name == "APPEND" && n == 3) return modify_string(key, [&](std::string& s) { s += a[2]; return true; });
    if ((name == "INCR" || name == "DECR") && n == 2) return add(key, name == "INCR" ? 1 : -1);
    if ((name == "INCRBY" || name == "DECRBY") && n == 3) {
      std::int64_t d = 0;
      if (!parse_int64(a[2], d) || (name == "DECRBY" && d == std::numeric_limits<std::int64_t>::min())) {
        return refuse("a bad increment");
      }
      return add(key, name == "INCRBY" ? d : -d);
    }
    if (name == "SETRANGE" && n == 4) {
      std::int64_t off = 0;
      if (!parse_int64(a[2], off) || off < 0 || off > 512 * 1024 * 1024) return refuse("a bad SETRANGE offset");
      return modify_string(key, [&](std::string& s) {
        const auto o = static_cast<std::size_t>(off);
        if (s.size() < o + a[3].size()) s.resize(o + a[3].size(), '\0');
        s.replace(o, a[3].size(), a[3]);
        return true;
      });
    }
    if ((name == "DEL" || name == "UNLINK") && n >= 2) {
      store_->as_one_unit([&] {
        for (std::size_t i = 1; i < n; ++i) (void)simple(name == "DEL" ? ChangeOp::del : ChangeOp::unlink, a[i]);
      });
      return StreamOutcome::applied;
    }
    if (name == "GETDEL" && n == 2) return simple(ChangeOp::del, key);
    if ((name == "EXPIRE" || name == "PEXPIRE" || name == "EXPIREAT" || name == "PEXPIREAT") && n >= 3) {
      std::int64_t at = 0;
      const bool relative = name == "EXPIRE" || name == "PEXPIRE";
      const bool seconds = name == "EXPIRE" || name == "EXPIREAT";
      if (!deadline(a[2], relative, seconds ? 1000 : 1, at)) return refuse("a bad " + name + " time");
      return simple(ChangeOp::pexpireat, key, at);
    }
    if (name == "PERSIST" && n == 2) return simple(ChangeOp::persist, key);
    if (name == "GETEX" && n >= 2) return getex(a);
    if ((name == "RENAME" || name == "RENAMENX") && n == 3) {
      Ch c;
      c.op = ChangeOp::rename;
      c.key = &key;
      c.to = &a[2];
      return result(store_->apply(c));
    }
    if (name == "COPY" && n >= 3) return copy(a);
    if (name == "MOVE" && n == 3) return move(a);
    if (name == "RESTORE" && n >= 4) return restore(a);
    if ((name == "HSET" || name == "HMSET") && n >= 4 && n % 2 == 0) {
      return modify_hash(key, true, [&](auto& m) {
        for (std::size_t i = 2; i + 1 < n; i += 2) assign(m, a[i], a[i + 1]);
        return true;
      });
    }
    if (name == "HSETNX" && n == 4) {
      return modify_hash(key, true, [&](auto& m) {
        if (m.find(a[2]) == m.npos) assign(m, a[2], a[3]);
        return true;
      });
    }
    if (name == "HDEL" && n >= 3) {
      return modify_hash(key, false, [&](auto& m) {
        for (std::size_t i = 2; i < n; ++i) {
          const auto pos = m.find(a[i]);
          if (pos != m.npos) m.erase(pos);
        }
        return true;
      });
    }
    if (name == "HINCRBY" && n == 4) {
      std::int64_t d = 0;
      if (!parse_int64(a[3], d)) return refuse("a bad HINCRBY increment");
      return modify_hash(key, true, [&](auto& m) {
        const auto pos = m.find(a[2]);
        std::int64_t v = 0;
        if (pos != m.npos && !parse_int64(m.at(pos).value, v)) return false;
        if (!expiring::detail::checked_add(v, d, v)) return false;
        if (pos != m.npos) {
          m.replace_value(pos, std::to_string(v));  // HINCRBY keeps the field's TTL
        } else {
          assign(m, a[2], std::to_string(v));
        }
        return true;
      });
    }
    if ((name == "HEXPIRE" || name == "HPEXPIRE" || name == "HEXPIREAT" || name == "HPEXPIREAT") && n >= 6) {
      std::int64_t at = 0;
      const bool relative = name == "HEXPIRE" || name == "HPEXPIRE";
      const bool seconds = name == "HEXPIRE" || name == "HEXPIREAT";
      if (!deadline(a[2], relative, seconds ? 1000 : 1, at)) return refuse("a bad " + name + " time");
      return field_command(a, 3, [&](auto& m, std::uint32_t pos) {
        using Map = std::remove_reference_t<decltype(m)>;
        if (at < 0 || at > Map::kMaxDeadline) return false;
        m.set_deadline(pos, at);
        return true;
      });
    }
    if (name == "HSETEX" && n >= 6) return hsetex(a);
    if (name == "HPERSIST" && n >= 5) {
      return field_command(a, 2, [](auto& m, std::uint32_t pos) {
        (void)m.clear_deadline(pos);
        return true;
      });
    }
    return skip("'" + name + "' (not a write this store follows)");
  }

  StreamOutcome flush(Store& s) {
    Ch c;
    c.op = ChangeOp::flushall;
    return result(s.apply(c));
  }

  // SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]: the primary ran the
  // conditions; the replica stores the value with the deadline the options give.
  StreamOutcome set(const std::vector<std::string>& a) {
    ChangeTtl ttl = ChangeTtl::none;
    std::int64_t at = Store::kNoTtl;
    for (std::size_t i = 3; i < a.size(); ++i) {
      const std::string o = detail::uppercase(a[i]);
      if (o == "NX" || o == "XX" || o == "GET") continue;
      if (o == "KEEPTTL") {
        ttl = ChangeTtl::keep;
        continue;
      }
      if ((o == "EX" || o == "PX" || o == "EXAT" || o == "PXAT") && i + 1 < a.size()) {
        if (!deadline(a[++i], o == "EX" || o == "PX", o == "EX" || o == "EXAT" ? 1000 : 1, at)) return refuse("a bad SET time");
        ttl = ChangeTtl::at;
        continue;
      }
      return refuse("a SET option it does not know: " + a[i]);
    }
    return put_string(a[1], a[2], ttl, at);
  }

  // HSETEX key [FNX|FXX] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] FIELDS n field value ...: what a
  // Redis 8 primary sends for HSETEX (its time as PXAT) and HINCRBYFLOAT (KEEPTTL). The
  // primary ran FNX / FXX; the replica writes the fields as the options say.
  StreamOutcome hsetex(const std::vector<std::string>& a) {
    bool keep = false;
    std::int64_t at = -1;
    std::size_t i = 2;
    for (; i < a.size() && !detail::iequals(a[i], "FIELDS"); ++i) {
      const std::string o = detail::uppercase(a[i]);
      if (o == "FNX" || o == "FXX") continue;
      if (o == "KEEPTTL") {
        keep = true;
        continue;
      }
      if ((o == "EX" || o == "PX" || o == "EXAT" || o == "PXAT") && i + 1 < a.size()) {
        if (!deadline(a[++i], o == "EX" || o == "PX", o == "EX" || o == "EXAT" ? 1000 : 1, at) || at < 0) {
          return refuse("a bad HSETEX time");
        }
        continue;
      }
      return refuse("an HSETEX option it does not know: " + a[i]);
    }
    std::int64_t count = 0;
    if (i + 1 >= a.size() || !parse_int64(a[i + 1], count) || count < 1 ||
        static_cast<std::uint64_t>(count) * 2 != a.size() - i - 2) {
      return refuse("an HSETEX FIELDS list it cannot read");
    }
    return modify_hash(a[1], true, [&](auto& m) {
      using Map = std::remove_reference_t<decltype(m)>;
      if (at > Map::kMaxDeadline) return false;
      for (std::size_t j = i + 2; j + 1 < a.size(); j += 2) {
        auto pos = m.find(a[j]);
        if (keep && pos != m.npos) {
          m.replace_value(pos, std::string(a[j + 1]));  // KEEPTTL: the field's TTL stays
        } else {
          assign(m, a[j], a[j + 1]);  // an overwrite clears it, as HSET
          pos = m.find(a[j]);
        }
        if (at >= 0) m.set_deadline(pos, at);
      }
      return true;
    });
  }

  // GETEX key [PERSIST | EX s | PX ms | EXAT s | PXAT ms] (Redis 7 sends PEXPIREAT/PERSIST).
  StreamOutcome getex(const std::vector<std::string>& a) {
    if (a.size() == 2) return StreamOutcome::ignored;
    const std::string o = detail::uppercase(a[2]);
    if (o == "PERSIST" && a.size() == 3) return simple(ChangeOp::persist, a[1]);
    std::int64_t at = 0;
    if (a.size() == 4 && (o == "EX" || o == "PX" || o == "EXAT" || o == "PXAT") &&
        deadline(a[3], o == "EX" || o == "PX", o == "EX" || o == "EXAT" ? 1000 : 1, at)) {
      return simple(ChangeOp::pexpireat, a[1], at);
    }
    return refuse("a GETEX it cannot read");
  }

  StreamOutcome add(const std::string& key, std::int64_t delta) {
    return modify_string(key, [&](std::string& s) {
      std::int64_t v = 0;  // a missing key counts from 0
      if (!s.empty() && !parse_int64(s, v)) return false;
      if (!expiring::detail::checked_add(v, delta, v)) return false;
      s = std::to_string(v);
      return true;
    });
  }

  // The stored string (empty when missing) changed by fn, stored with the key's deadline.
  template <class Fn>
  StreamOutcome modify_string(const std::string& key, Fn&& fn) {
    Stored st = stored(key);
    std::string s;
    if (st.value) {
      const std::string* t = text(*st.value);
      if (t == nullptr) return refuse("a string command on a hash");
      s = *t;
    }
    if (!fn(s)) return refuse("a value that is not an integer, or an overflow");
    return put_string(key, std::move(s), ChangeTtl::keep);
  }

  StreamOutcome copy(const std::vector<std::string>& a) {
    Store* to = store_;
    for (std::size_t i = 3; i < a.size(); ++i) {
      if (detail::iequals(a[i], "DB") && i + 1 < a.size()) {
        std::int64_t db = 0;
        if (!parse_int64(a[++i], db)) return refuse("a bad COPY database");
        if (store_of(db) == nullptr) return skip("a COPY into database " + std::to_string(db));
        to = store_of(db);
      }
    }
    if (to != store_) return transfer(a[1], *to, a[2], false);
    Stored st = stored(a[1]);
    if (!st.value) return refuse("a COPY of a key it does not hold");
    return put(a[2], std::move(*st.value), st.deadline ? ChangeTtl::at : ChangeTtl::none,
               st.deadline ? *st.deadline : Store::kNoTtl);
  }

  // MOVE key db: out of this database and, when the applier holds the other, into it.
  StreamOutcome move(const std::vector<std::string>& a) {
    std::int64_t db = 0;
    if (!parse_int64(a[2], db)) return refuse("a bad MOVE database");
    Store* to = store_of(db);
    if (to == nullptr || to == store_) return simple(ChangeOp::del, a[1]);
    return transfer(a[1], *to, a[1], true);
  }

  // `key` of this database stored as `newkey` in `to`, with its TTL and its fields' TTLs
  // (through its DUMP payload, read into `to`'s own field maps); deleted here for a move.
  StreamOutcome transfer(const std::string& key, Store& to, const std::string& newkey, bool move) {
    std::string payload;
    std::optional<std::int64_t> deadline;
    if (!store_->peek_stored(key, [&](const V& v, const std::optional<std::int64_t>& d) {
          payload = dump_value(v);
          deadline = d;
        })) {
      return refuse("a " + std::string(move ? "MOVE" : "COPY") + " of a key it does not hold");
    }
    expiring::detail::rdb::Value read;
    if (const auto bad = expiring::detail::rdb::decode_dump(payload, read)) return refuse(bad->message);
    V value = expiring::detail::value_prototype<V>(to);
    if (const auto bad = expiring::detail::rdb::to_store_value(to, read, value)) return refuse(bad->second);
    const Ch c{ChangeOp::set, &newkey, &value, nullptr, deadline ? *deadline : Store::kNoTtl,
               deadline ? ChangeTtl::at : ChangeTtl::none};
    const StreamOutcome stored_there = result(to.apply(c));
    if (stored_there != StreamOutcome::applied || !move) return stored_there;
    return simple(ChangeOp::del, key);
  }

  // RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f].
  StreamOutcome restore(const std::vector<std::string>& a) {
    bool absttl = false;
    for (std::size_t i = 4; i < a.size(); ++i) {
      if (detail::iequals(a[i], "ABSTTL")) absttl = true;
      if (detail::iequals(a[i], "IDLETIME") || detail::iequals(a[i], "FREQ")) ++i;
    }
    std::int64_t ttl = 0;
    if (!parse_int64(a[2], ttl) || ttl < 0) return refuse("a bad RESTORE TTL");
    if (ttl != 0 && !absttl && !expiring::detail::checked_add(store_->now_ms(), ttl, ttl)) return refuse("a bad RESTORE TTL");
    expiring::detail::rdb::Value read;
    if (const auto bad = expiring::detail::rdb::decode_dump(a[3], read)) {
      if (bad->code == Errc::unsupported_type) return skip("a RESTORE of a type the store does not hold");
      return refuse("a RESTORE payload that does not decode: " + bad->message);
    }
    V value = expiring::detail::value_prototype<V>(*store_);
    if (const auto bad = expiring::detail::rdb::to_store_value(*store_, read, value)) {
      if (bad->first == Errc::unsupported_type) return skip("a RESTORE of a type the store does not hold");
      return refuse(bad->second);
    }
    return put(a[1], std::move(value), ttl != 0 ? ChangeTtl::at : ChangeTtl::none, ttl != 0 ? ttl : Store::kNoTtl);
  }

  // HSET of one field: an overwrite drops the field's TTL, as in Redis 7.4.
  template <class Map>
  static void assign(Map& m, const std::string& f, const std::string& v) {
    (void)m.assign(std::string(f), std::string(v));
  }

  // The stored hash (a new one when missing and `create`) changed by fn(map), stored whole
  // with the key's deadline; a hash left empty is deleted.
  template <class Fn>
  StreamOutcome modify_hash(const std::string& key, bool create, Fn&& fn) {
    if constexpr (kHashes) {
      Stored st = stored(key);
      V value = st.value ? std::move(*st.value) : expiring::detail::value_prototype<V>(*store_);
      auto* m = hash_value_traits<V>::map(value);
      if (m == nullptr) {
        if (st.value && text(*st.value) != nullptr) return refuse("a hash command on a string");
        if (!create) return StreamOutcome::ignored;
        value = V(typename hash_value_traits<V>::map_type(store_->field_hash_function()));
        m = hash_value_traits<V>::map(value);
      }
      if (!fn(*m)) return refuse("a hash value that is not an integer, an overflow or a deadline out of range");
      if (m->empty()) return st.value ? simple(ChangeOp::del, key) : StreamOutcome::ignored;
      return put(key, std::move(value), ChangeTtl::keep);
    } else {
      (void)key, (void)create, (void)fn;
      return skip("a hash command, and the store holds strings");
    }
  }

  // <CMD> key ... FIELDS numfields field...: fn(map, pos) for each field present; `from` is
  // where FIELDS may start (after the time and its NX/XX/GT/LT option).
  template <class Fn>
  StreamOutcome field_command(const std::vector<std::string>& a, std::size_t from, Fn&& fn) {
    std::size_t at = from;
    while (at < a.size() && !detail::iequals(a[at], "FIELDS")) ++at;
    std::int64_t count = 0;
    if (at + 1 >= a.size() || !parse_int64(a[at + 1], count) || count < 1 ||
        static_cast<std::uint64_t>(count) != a.size() - at - 2) {
      return refuse("a FIELDS list it cannot read");
    }
    return modify_hash(a[1], false, [&](auto& m) {
      for (std::size_t i = at + 2; i < a.size(); ++i) {
        const auto pos = m.find(a[i]);
        if (pos != m.npos && !fn(m, pos)) return false;
      }
      return true;
    });
  }

  Store* one_ = nullptr;                 // the one store (StreamApplier(store, db))
  std::int64_t db_ = 0;                  // ... and its database
  std::vector<Store*>* dbs_ = nullptr;   // or every database's (StreamApplier(dbs))
  std::int64_t selected_ = 0;            // the stream's SELECT
  Store* store_ = nullptr;               // its store; null: not followed
  bool in_multi_ = false;
  std::vector<std::vector<std::string>> multi_;
  std::size_t multi_bytes_ = 0;
  PublishHandler on_publish_;
  std::uint64_t applied_ = 0, skipped_ = 0, refused_ = 0;
  std::string problem_;
};

}  // namespace expiring::redis
