// expiring/hash_fields.hpp: Redis's hash commands with per-field TTLs (Redis 7.4), as members
// of ExpiringStore<K, FieldMap<F, V>>.
//
// Overview
// --------
// A store whose value type is a hash (FieldMap<F, V>, or a type that may hold one, such as
// redis::Value; see hash_value_traits in detail/hash_value.hpp) has these members, under
// Redis's names. Opt-in: this header (or field_map.hpp, which includes it) brings them;
// <expiring/expiring.hpp> does not. ConcurrentStore and RedisStore of FieldMap<F, V> have the
// same members with this contract (each its own way: a shard's lock, a round trip; values by
// copy), and the multi-field and time-argument forms of all three are api/hash_commands.hpp's.
//
//   hset hsetnx hget hmget hdel hlen hexists hgetall hvisit (a field or all) hkeys hvals hincrby hincrbyfloat hrandfield hscan
//   hexpire hpexpire hexpireat hpexpireat httl hpttl hexpiretime hpexpiretime hpersist
//   hgetex hgetdel hsetex (Redis 8)
//
// The contract (docs/semantics.md D20-D27), in one paragraph:
//
//   A field whose deadline has passed (`now > deadline`) is invisible at once. Any member
//   that opens a hash first reclaims its stale fields (lazy expiry, cause `hexpired`), and
//   tick() reclaims them in bulk, in deadline order, with a quota of its own (10000 / hz
//   fields a tick, growing while it keeps being used up) inside the tick's time budget.
//   When a hash's last field goes, by expiry, hdel() or a past field time, the key is
//   deleted (cause `del`), whatever the key's own TTL, which works as for any key.
//
// get() and peek() of a hash key give the FieldMap as stored: a field past its deadline that
// no member has reclaimed yet is still in it (FieldMap::deadline(pos) tells). The members
// below never show one.
//
// Arguments: a value may point into the hash it is written to (hset(k, "a", *hget(k, "b"))
// works: it is taken before the hash is opened); a field name must not, since opening a hash
// reclaims its stale fields, which moves others.
//
// Field TTL commands take several fields and answer one code per field, in order, exactly as
// Redis (FieldReply below). Each has two forms: one returns a std::vector, the other writes
// into a caller's array and allocates nothing. A missing key answers "no such field" for every
// field. Errors (a Result's Errc), checked before anything changes:
//   Errc::wrong_type            the key holds a value that is not a hash (redis::Value only)
//   Errc::negative_expire_time  a time below zero (Redis refuses it for fields)
//   Errc::invalid_expire_time   a deadline beyond 2^46 - 1 ms (Redis 7.4's cap, year 4199),
//                               or a relative time whose deadline overflows; also a future
//                               deadline below zero, which only a clock before 1970 can ask for
//   Errc::nx_and_xx_gt_lt, Errc::gt_and_lt   ExpireFlags that Redis's syntax cannot express
//
// Design
// ------
// The store keeps one time-ordered index of hashes (detail/keyspace.hpp: a second timer wheel,
// one entry per hash with volatile fields, by its earliest field deadline) and each hash
// orders its own fields (field_map.hpp: 6-byte deadlines and a due-list). After every change
// to a hash, hash_changed() re-indexes it by its new earliest deadline (an O(1) query) or
// deletes the key if it is empty. tick()'s field cycle drains the wheel's due buckets, whose
// next hashes it knows a few reclaims ahead: it prefetches each one's entry, then its
// deadlines, so that fetching the next overlaps reclaiming this one (an hdel() cannot: the
// caller's next key is unknown). HGET, HSET and one field's HEXPIRE each begin with an inline
// short path: for a live hash none of whose fields may be due (find_plain_hash()), when
// nothing asks for more (plain_field_write(): no memory limit, access data, feed or listener
// of the write's event; for HGET, no access data), it hashes the field, finds the hash and
// the field, makes the one change, re-indexes the hash only if its bound moved, and returns:
// it queues nothing, so it delivers nothing. Everything else (a missing or stale key, a due
// field, an error, several fields) goes to the general path, out of line (hget_general()
// and the like), so that the general path's frame and checks cost the short one nothing. The
// general paths hash their (first) field while the key is looked up, with open() inlined
// into each. The members live in this layer between the engine
// (detail/engine.hpp) and the store's face, chosen by the value type, so that stores of other
// values have none of them; it uses the engine's protected API by inheritance, and is no
// friend of anything.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/hash_commands.hpp"
#include "change_feed.hpp"
#include "detail/arith.hpp"
#include "detail/decimal.hpp"
#include "detail/keyspace.hpp"
#include "error.hpp"
#include "events.hpp"
#include "field_map.hpp"
#include "options.hpp"
#include "stats.hpp"

namespace expiring {

namespace detail {

// Redis 7.4's largest field deadline, 2^46 - 1 ms.
inline constexpr std::int64_t kMaxFieldDeadline = (std::int64_t{1} << 46) - 1;

// A decimal 64-bit integer in Redis's strict form (string2ll: no spaces, no '+', no leading
// zeros, at most 20 characters).
inline bool parse_strict_i64(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s == "0") {
    out = 0;
    return true;
  }
  const char* b = s.data();
  const char* e = b + s.size();
  const bool neg = *b == '-';
  const char* digits = neg ? b + 1 : b;
  if (digits == e || *digits < '1' || *digits > '9') return false;
  const auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

// The layer between the engine and the store's face, for a store of hashes: the members
// below, written against the engine's protected API (detail/engine.hpp). Other values get
// the empty layer of detail/hash_value.hpp.
template <class Engine, class V>
class HashFieldOps<Engine, V, true>
    : public Engine,
      public api::HashCommands<HashFieldOps<Engine, V, true>, typename hash_value_traits<V>::map_type::field_type,
                               typename hash_value_traits<V>::map_type::mapped_type> {
  using traits = hash_value_traits<V>;
  using commands_type = api::HashCommands<HashFieldOps, typename traits::map_type::field_type,
                                          typename traits::map_type::mapped_type>;

 public:
  using hash_map_type = typename traits::map_type;
  using field_type = typename hash_map_type::field_type;
  using field_value_type = typename hash_map_type::mapped_type;
  using field_hasher = typename hash_map_type::hasher;

  // ==== Fields and values =================================================================

  // HSET key field value: writes the field; an existing field's TTL is removed (Redis: an
  // overwrite clears it). Returns 1 if the field is new, else 0. A missing key is created
  // (it may be refused with Errc::out_of_memory, as set() is). Cause `hset`.
  template <class KK, class FF, class VV>
  Result<std::size_t> hset(const KK& key, FF&& field, VV&& value) {
    if (plain_field_write(KeyEventCause::hset)) {  // the short path: inline (plain_field_write())
      const std::int64_t now = this->now_ms();
      const std::uint64_t fh = field_hash(field);
      const std::uint32_t i = find_plain_hash(key, now);
      if (i != kNoPos) {
        hash_map_type& m = map_at(i);
        const std::uint32_t pos = find_field(m, field, fh);
        if constexpr (std::is_assignable_v<field_value_type&, VV&&>) {
          if (pos != hash_map_type::npos) {
            // An overwrite moves no field, so a value pointing into this hash is still there.
            m.replace_value(pos, std::forward<VV>(value));
            if (m.clear_deadline(pos)) plain_hash_changed(i, m, now);
            return std::size_t{0};  // (queued nothing: no finish())
          }
        }
        field_value_type v(std::forward<VV>(value));  // before the hash changes (it may point into it)
        const bool added = assign_field(m, std::forward<FF>(field), std::move(v), fh).second;
        plain_hash_changed(i, m, now);
        return std::size_t{added ? 1u : 0u};
      }
    }
    return hset_general(key, std::forward<FF>(field), std::forward<VV>(value));
  }
  template <class KK, class FF, class VV>
  EXPIRING_NOINLINE Result<std::size_t> hset_general(const KK& key, FF&& field, VV&& value) {
    const std::int64_t now = this->now_ms();
    field_value_type v(std::forward<VV>(value));  // before opening the hash (it may point into it)
    const std::uint64_t fh = field_hash(field);
    Result<Opened> r = open_for_write(key, now, field, v);
    if (!r.ok()) return finish(r.error());
    bool added = false;
    FieldDelta touched(*this);
    change(*r, now, [&](hash_map_type& m) {
      const auto [pos, inserted] = assign_field(m, std::forward<FF>(field), std::move(v), fh);
      added = inserted;
      touched.add(m, pos);
    });
    emit_change(KeyEventCause::hset, r->i, FieldOp::hset, touched);
    hash_changed(r->i, now);
    return finish(std::size_t{added ? 1u : 0u});
  }
  // hset(key, pairs) of several fields: api/hash_commands.hpp.
  using commands_type::hset;

  // HSETNX: writes the field only if it is not there (a stale one is reclaimed first).
  // Returns whether it wrote.
  template <class KK, class FF, class VV>
  Result<bool> hsetnx(const KK& key, FF&& field, VV&& value) {
    const std::int64_t now = this->now_ms();
    field_value_type v(std::forward<VV>(value));
    Result<Opened> r = open_for_write(key, now, field, v);
    if (!r.ok()) return finish(r.error());
    if (map_at(r->i).find(field) != hash_map_type::npos) return finish(false);
    FieldDelta touched(*this);
    change(*r, now, [&](hash_map_type& m) { touched.add(m, m.assign(std::forward<FF>(field), std::move(v)).first); });
    emit_change(KeyEventCause::hset, r->i, FieldOp::hset, touched);
    hash_changed(r->i, now);
    return finish(true);
  }

  // HGET: the live field's value, or nullptr (no key, no field, or stale: then reclaimed).
  // The pointer is valid until the next call that writes this hash or may move entries
  // (see expiring_store.hpp, "Pointer validity"). Errc::wrong_type only for redis::Value.
  template <class KK, class FF>
  Result<const field_value_type*> hget(const KK& key, const FF& field) {
    HashFieldOps& s = *this;
    if (!s.access_.read_hook()) {  // the short path: a live hash with no field due, inline
      const std::int64_t now = s.now_ms();
      const std::uint64_t fh = field_hash(field);
      const std::uint32_t i = find_plain_hash(key, now);
      if (i != kNoPos) {
        ++s.stats_.keyspace_hits;
        const hash_map_type& m = map_at(i);
        const std::uint32_t pos = find_field(m, field, fh);
        return pos == hash_map_type::npos ? nullptr : &m.at(pos).value;  // (queued nothing: no finish())
      }
    }
    return hget_general(key, field);
  }
  template <class KK, class FF>
  EXPIRING_NOINLINE Result<const field_value_type*> hget_general(const KK& key, const FF& field) {
    const std::int64_t now = this->now_ms();
    const std::uint64_t fh = field_hash(field);
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok() || *r == kNoPos) return finish(r.ok() ? Result<const field_value_type*>(nullptr) : r.error());
    const hash_map_type& m = map_at(*r);
    const std::uint32_t pos = find_field(m, field, fh);
    return finish(pos == hash_map_type::npos || hidden(m, pos, now) ? nullptr : &m.at(pos).value);
  }

  // HMGET: out[j] = hget(key, fields[j]) for each field, against one clock reading; returns
  // the number found. `out` must have room for every field.
  template <class KK, class Fields>
  Result<std::size_t> hmget(const KK& key, const Fields& fields, const field_value_type** out) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok()) return finish(r.error());
    std::size_t found = 0, j = 0;
    for (const auto& f : fields) {
      out[j] = nullptr;
      if (*r != kNoPos) {
        const hash_map_type& m = map_at(*r);
        const std::uint32_t pos = m.find(f);
        if (pos != hash_map_type::npos && !hidden(m, pos, now)) {
          out[j] = &m.at(pos).value;
          ++found;
        }
      }
      ++j;
    }
    return finish(found);
  }

  // HDEL (api/hash_commands.hpp, over hdel_range() below): removes the fields (with their
  // TTLs); returns how many were there. Cause `hdel`; if the hash is left empty the key is
  // deleted too (cause `del`).

  // HLEN: the number of live fields (stale ones are reclaimed first, so the count is exact;
  // Redis 7.4 counts stale fields it has not reclaimed yet, semantics.md D20). 0 when missing.
  template <class KK>
  Result<std::size_t> hlen(const KK& key) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok()) return finish(r.error());
    if (*r == kNoPos) return finish(std::size_t{0});
    hash_map_type& m = map_at(*r);
    if (EXPIRING_UNLIKELY(!this->replica().reclaims_on_read()) && m.volatile_count() != 0 && m.earliest_bound() < now) {
      std::size_t live = 0;  // a replica's stale fields are in place, hidden
      for (std::uint32_t pos = 0; pos < m.size(); ++pos) live += hidden(m, pos, now) ? 0 : 1;
      return finish(live);
    }
    return finish(m.size());
  }

  // HEXISTS.
  template <class KK, class FF>
  Result<bool> hexists(const KK& key, const FF& field) {
    Result<const field_value_type*> v = hget(key, field);
    if (!v.ok()) return v.error();
    return *v != nullptr;
  }

  // hvisit(key, field, fn), HGET as a visit: api/hash_commands.hpp, over hget().
  using commands_type::hvisit;
  // HGETALL, as a visit: fn(const F& name, const V& value) for each live field, in no
  // particular order. Returns the number of fields. fn must not call the store.
  template <class KK, class Fn>
  Result<std::size_t> hvisit(const KK& key, Fn&& fn) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok() || *r == kNoPos) return finish(r.ok() ? Result<std::size_t>(std::size_t{0}) : r.error());
    const hash_map_type& m = map_at(*r);
    if (EXPIRING_UNLIKELY(!this->replica().reclaims_on_read())) {
      std::size_t n = 0;  // a replica's stale fields are in place, hidden
      for (std::uint32_t pos = 0; pos < m.size(); ++pos) {
        if (hidden(m, pos, now)) continue;
        fn(m.at(pos).name, m.at(pos).value);
        ++n;
      }
      return finish(n);
    }
    for (const auto& f : m) fn(f.name, f.value);
    return finish(m.size());
  }
  // HGETALL: the live fields and their values, in no particular order.
  template <class KK>
  Result<std::vector<std::pair<field_type, field_value_type>>> hgetall(const KK& key) {
    std::vector<std::pair<field_type, field_value_type>> out;
    Result<std::size_t> r =
        hvisit(key, [&](const field_type& f, const field_value_type& v) { out.emplace_back(f, v); });
    if (!r.ok()) return r.error();
    return out;
  }
  // HKEYS, HVALS.
  template <class KK>
  Result<std::vector<field_type>> hkeys(const KK& key) {
    std::vector<field_type> out;
    Result<std::size_t> r = hvisit(key, [&](const field_type& f, const field_value_type&) { out.push_back(f); });
    if (!r.ok()) return r.error();
    return out;
  }
  template <class KK>
  Result<std::vector<field_value_type>> hvals(const KK& key) {
    std::vector<field_value_type> out;
    Result<std::size_t> r = hvisit(key, [&](const field_type&, const field_value_type& v) { out.push_back(v); });
    if (!r.ok()) return r.error();
    return out;
  }

  // HINCRBY: adds delta to the field's integer value and returns the sum; a missing (or
  // stale) field counts as 0 and is created without TTL; a live field keeps its TTL (Redis).
  // Values are integers, or strings holding a decimal integer (Errc::not_an_integer
  // otherwise). Errc::overflow when the sum leaves int64 (or the value type). Cause `hset`.
  template <class KK, class FF>
  Result<std::int64_t> hincrby(const KK& key, const FF& field, std::int64_t delta) {
    const std::int64_t now = this->now_ms();
    // Room first (eviction may take this very key, as Redis evicts before a command runs),
    // then the checks on the hash as it is: an error creates nothing.
    const field_value_type probe = from_integer(std::numeric_limits<std::int64_t>::min());  // the longest
    if (!room_for(now, field, probe)) return finish(Errc::out_of_memory);
    Result<std::uint32_t> found = open(key, now, Access::write);
    if (!found.ok()) return finish(found.error());
    std::int64_t base = 0;
    if (*found != kNoPos) {
      const hash_map_type& m = map_at(*found);
      const std::uint32_t pos = m.find(field);
      if (pos != hash_map_type::npos && !as_integer(m.at(pos).value, base)) return finish(Errc::not_an_integer);
    }
    std::int64_t sum = 0;
    if (!detail::checked_add(base, delta, sum) || !fits_value(sum)) return finish(Errc::overflow);
    const Result<void> written = write_keeping_ttl(key, field, from_integer(sum), now);
    if (!written.ok()) return finish(written.error());
    return finish(sum);
  }

  // HINCRBYFLOAT: adds delta to the field's numeric value and returns the new value as
  // stored, in Redis's form (detail/decimal.hpp: "%.17Lf" without trailing zeros; "10.5",
  // "3"); a missing (or stale) field counts as 0 and is created without TTL; a live field
  // keeps its TTL (Redis). For field values of std::string. Errc::not_a_float when the value
  // is not a number (Redis's strtold() rules); Errc::overflow when the sum is not finite
  // (Redis: "ERR increment would produce NaN or Infinity"). Cause `hset`.
  template <class KK, class FF>
  Result<field_value_type> hincrbyfloat(const KK& key, const FF& field, long double delta) {
    static_assert(std::is_same_v<field_value_type, std::string>, "hincrbyfloat() needs std::string field values");
    const std::int64_t now = this->now_ms();
    if (!std::isfinite(delta)) return finish(Errc::overflow);
    const field_value_type probe(64, '0');  // room as for a typical result; the sum is weighed when written
    if (!room_for(now, field, probe)) return finish(Errc::out_of_memory);
    Result<std::uint32_t> found = open(key, now, Access::write);
    if (!found.ok()) return finish(found.error());
    long double base = 0;
    if (*found != kNoPos) {
      const hash_map_type& m = map_at(*found);
      const std::uint32_t pos = m.find(field);
      if (pos != hash_map_type::npos && !detail::parse_long_double(m.at(pos).value, base)) {
        return finish(Errc::not_a_float);
      }
    }
    const long double sum = base + delta;
    if (!std::isfinite(sum)) return finish(Errc::overflow);
    field_value_type text = detail::format_long_double(sum);
    const Result<void> written = write_keeping_ttl(key, field, text, now);
    if (!written.ok()) return finish(written.error());
    return finish(std::move(text));
  }

  // HRANDFIELD: fn(const F& name, const FV& value) for random live fields: min(count, HLEN)
  // distinct ones for count >= 0 (all of them, in no particular order, when count >= HLEN),
  // |count| ones that may repeat for count < 0. fn may return bool: false stops the visit
  // (a server whose client's output limit was reached). Returns the number of calls; 0 for
  // a missing key. fn must not call the store. O(|count|), and O(HLEN) when count > HLEN / 2.
  template <class KK, class Fn>
  Result<std::size_t> hrandfield(const KK& key, std::int64_t count, Fn&& fn) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok() || *r == kNoPos || count == 0) return finish(r.ok() ? Result<std::size_t>(std::size_t{0}) : r.error());
    const hash_map_type& m = map_at(*r);
    // The live positions: all of them on a primary (open() reclaimed the stale), the
    // unhidden ones on a replica.
    std::vector<std::uint32_t> live;
    const bool hides = EXPIRING_UNLIKELY(!this->replica().reclaims_on_read()) && m.volatile_count() != 0;
    if (hides) {
      for (std::uint32_t pos = 0; pos < m.size(); ++pos) {
        if (!hidden(m, pos, now)) live.push_back(pos);
      }
    }
    const std::size_t n = hides ? live.size() : m.size();
    const auto at = [&](std::size_t j) { return hides ? live[j] : static_cast<std::uint32_t>(j); };
    const auto visit = [&](std::uint32_t pos) -> bool {
      if constexpr (std::is_same_v<decltype(fn(m.at(pos).name, m.at(pos).value)), bool>) {
        return fn(m.at(pos).name, m.at(pos).value);
      } else {
        fn(m.at(pos).name, m.at(pos).value);
        return true;
      }
    };
    std::size_t calls = 0;
    if (n == 0) return finish(calls);
    if (count < 0) {  // with repetition (a count of INT64_MIN is 2^63 draws: negated unsigned)
      const std::uint64_t draws = 0 - static_cast<std::uint64_t>(count);
      for (std::uint64_t d = 0; d < draws; ++d) {
        ++calls;
        if (!visit(at(static_cast<std::size_t>(this->next_random() % n)))) break;
      }
      return finish(calls);
    }
    const std::size_t want = static_cast<std::uint64_t>(count) >= n ? n : static_cast<std::size_t>(count);
    if (want == n || want > n / 2) {
      // A partial shuffle of all the positions: the first `want` of them.
      std::vector<std::uint32_t> order(n);
      for (std::size_t j = 0; j < n; ++j) order[j] = at(j);
      for (std::size_t j = 0; j < want; ++j) {
        const std::size_t k = j + static_cast<std::size_t>(this->next_random() % (n - j));
        std::swap(order[j], order[k]);
        ++calls;
        if (!visit(order[j])) break;
      }
      return finish(calls);
    }
    // Floyd's sampling: `want` distinct indexes in O(want).
    std::vector<std::size_t> chosen;
    chosen.reserve(want);
    std::unordered_set<std::size_t> picked;
    picked.reserve(want);
    for (std::size_t j = n - want; j < n; ++j) {
      const std::size_t t = static_cast<std::size_t>(this->next_random() % (j + 1));
      const std::size_t pick = picked.insert(t).second ? t : j;
      if (pick == j) picked.insert(j);
      chosen.push_back(pick);
    }
    for (std::size_t j : chosen) {
      ++calls;
      if (!visit(at(j))) break;
    }
    return finish(calls);
  }

  // HSCAN: fn(const F& name, const FV& value) for about `count` live fields from `cursor`
  // (0 starts a scan), and the cursor to continue with (0 when the scan is complete). As
  // SCAN's guarantee: a field present for the whole scan is reported at least once (it may be
  // reported twice); one added or removed during it may or may not be. The cursor counts
  // down the map's positions: erasing moves only the last field, into the hole, so no field
  // moves from the part not yet visited into the part visited. A hash of at most 128 fields
  // is answered whole (as Redis answers a listpack-encoded one). Stale fields are reclaimed
  // first, as by every read of the hash. fn must not call the store.
  template <class KK, class Fn>
  Result<std::uint64_t> hscan(const KK& key, std::uint64_t cursor, std::size_t count, Fn&& fn) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok() || *r == kNoPos) return finish(r.ok() ? Result<std::uint64_t>(std::uint64_t{0}) : r.error());
    const hash_map_type& m = map_at(*r);
    const std::uint64_t size = m.size();
    std::uint64_t below = cursor == 0 || cursor > size ? size : cursor;  // positions [0, below) remain
    if (size <= 128) {
      below = size;
      count = m.size();
    }
    if (count == 0) count = 1;
    for (std::size_t visited = 0; below > 0 && visited < count; ++visited) {
      const auto pos = static_cast<std::uint32_t>(--below);
      if (!hidden(m, pos, now)) fn(m.at(pos).name, m.at(pos).value);
    }
    return finish(below);
  }

  // ==== Field TTLs ========================================================================
  // hexpire, hpexpire, hexpireat, hpexpireat, httl, hpttl, hexpiretime, hpexpiretime and
  // hpersist, every overload: api/hash_commands.hpp, over the primitives below.
  //
  // HEXPIRE / HPEXPIRE key time [NX|XX|GT|LT] FIELDS n field...: a relative time in seconds
  // or milliseconds. HEXPIREAT / HPEXPIREAT: an absolute Unix time. One code per field:
  //   FieldReply::no_field (-2), condition_not_met (0), set (1), deleted (2).
  // Conditions compare deadlines, a field without TTL counting as +infinity, and are checked
  // before the "time already past" rule (so GT with a past time on a field without TTL is 0).
  // A time of now or earlier deletes the field (2; cause `hdel`, counted in expired_subkeys
  // as Redis 7.4 counts it). Causes: `hexpire` if any field was set, `hdel` if any was deleted,
  // then `del` if that emptied the hash. Duplicated fields are answered each time, seeing the
  // earlier occurrence's effect.
  //
  // HTTL / HPTTL: the remaining time per field, -1 without TTL, -2 no such field. HTTL rounds
  // up (ceil((deadline - now) / 1000)), as Redis 7.4 does for fields; a field at its deadline
  // answers 0. HEXPIRETIME / HPEXPIRETIME: the absolute deadline (seconds rounded up).
  //
  // HPERSIST: removes the fields' TTLs. Per field: -2 no such field, -1 no TTL, 1 removed.
  // Cause `hpersist` if any was removed.

  // ==== The primitives of api/hash_commands.hpp ==========================================

  template <class KK, class It, class End>
  Result<std::size_t> hset_range(const KK& key, It first, End last) {
    const std::int64_t now = this->now_ms();
    if (first == last) return finish(std::size_t{0});
    Result<Opened> r = open_for_write(key, now, first->first, first->second);
    if (!r.ok()) return finish(r.error());
    std::size_t added = 0;
    FieldDelta touched(*this);
    change(*r, now, [&](hash_map_type& m) {
      for (; first != last; ++first) {
        const auto [pos, inserted] = m.assign(first->first, first->second);
        if (inserted) ++added;
        touched.add(m, pos);
      }
    });
    emit_change(KeyEventCause::hset, r->i, FieldOp::hset, touched);
    hash_changed(r->i, now);
    return finish(added);
  }

  template <class KK, class It, class End>
  Result<std::size_t> hdel_range(const KK& key, It first, End last) {
    HashFieldOps& s = *this;
    const std::int64_t now = s.now_ms();
    Result<std::uint32_t> r = open(key, now, Access::write);
    if (!r.ok() || *r == kNoPos) return finish(r.ok() ? Result<std::size_t>(std::size_t{0}) : r.error());
    const std::uint32_t i = *r;
    std::size_t removed = 0;
    FieldDelta touched(*this);
    change(i, now, [&](hash_map_type& m) {
      for (; first != last && !m.empty(); ++first) {
        const std::uint32_t pos = m.find(*first);
        if (pos == hash_map_type::npos) continue;
        touched.add_name(m, pos);
        m.erase(pos);
        ++removed;
      }
    });
    if (removed != 0) {
      emit_change(KeyEventCause::hdel, i, FieldOp::hdel, touched);
      hash_changed(i, now);
    }
    return finish(removed);
  }

  // The short path of one field's new deadline (see plain_field_write()): inline, with the
  // general path out of line, so that its frame and its checks cost the common case nothing.
  template <class KK, class Fields>
  Result<void> expire_fields(const KK& key, const FieldExpireRequest& req, const Fields& fields, int* out) {
    if (req.flags == ExpireFlags::None && field_count(fields) == 1 && plain_field_write(KeyEventCause::hexpire)) {
      const std::int64_t now = this->now_ms();
      const std::int64_t when = plain_field_deadline(req, now);
      if (when > now) {
        const auto& f = *std::begin(fields);
        const std::uint64_t fh = field_hash(f);
        const std::uint32_t i = find_plain_hash(key, now);
        if (i != kNoPos) {
          hash_map_type& m = map_at(i);
          const std::uint32_t pos = find_field(m, f, fh);
          if (pos == hash_map_type::npos) {
            *out = FieldReply::no_field;
          } else {
            m.set_deadline(pos, when);
            *out = FieldReply::set;
            plain_hash_changed(i, m, now);
          }
          return Result<void>();  // (queued nothing: no finish())
        }
      }
    }
    return expire_fields_general(key, req, fields, out);
  }
  template <class KK, class Fields>
  EXPIRING_NOINLINE Result<void> expire_fields_general(const KK& key, const FieldExpireRequest& req, const Fields& fields,
                                                       int* out) {
    HashFieldOps& s = *this;
    const ExpireFlags flags = req.flags;
    if (has(flags, ExpireFlags::NX) &&
        (has(flags, ExpireFlags::XX) || has(flags, ExpireFlags::GT) || has(flags, ExpireFlags::LT))) {
      return Errc::nx_and_xx_gt_lt;
    }
    if (has(flags, ExpireFlags::GT) && has(flags, ExpireFlags::LT)) return Errc::gt_and_lt;
    const std::int64_t now = s.now_ms();
    const Result<std::int64_t> w = field_deadline(req, now);
    if (!w.ok()) return w.error();
    const std::int64_t when = *w;
    const bool past = when <= now;
    // The first field (usually the only one) is hashed while the hash is looked up.
    const std::uint64_t fh0 = std::begin(fields) != std::end(fields) ? field_hash(*std::begin(fields)) : 0;
    const std::size_t n = field_count(fields);
    Result<std::uint32_t> r = open(key, now, Access::write);
    if (!r.ok()) return finish(Result<void>(r.error()));
    if (*r == kNoPos) {
      std::fill(out, out + n, FieldReply::no_field);
      return finish(Result<void>());
    }
    const std::uint32_t i = *r;
    std::size_t set = 0, deleted = 0, j = 0;
    FieldDelta touched(*this);  // the fields set, or the fields deleted (one time: never both)
    change(i, now, [&](hash_map_type& m) {  // a first deadline allocates the deadline array
      for (const auto& f : fields) {
        const std::uint32_t pos = j == 0 ? find_field(m, f, fh0) : m.find(f);
        int code = FieldReply::no_field;
        if (pos != hash_map_type::npos) {
          if (!condition_met(flags, m.deadline(pos), when)) {
            code = FieldReply::condition_not_met;
          } else if (past) {
            touched.add_name(m, pos);
            m.erase(pos);
            ++deleted;
            code = FieldReply::deleted;
          } else {
            m.set_deadline(pos, when);
            touched.add(m, pos);
            ++set;
            code = FieldReply::set;
          }
        }
        out[j++] = code;
      }
    });
    s.stats_.expired_subkeys += deleted;  // as Redis 7.4 counts a past field time (D24)
    if (set != 0) emit_change(KeyEventCause::hexpire, i, FieldOp::hpexpireat, touched);
    if (deleted != 0) emit_change(KeyEventCause::hdel, i, FieldOp::hdel, touched);
    if (set != 0 || deleted != 0) hash_changed(i, now);
    return finish(Result<void>());
  }

  template <class KK, class Fields>
  Result<void> field_times(const KK& key, const Fields& fields, FieldTimeQuery q, std::int64_t* out) {
    const std::int64_t now = this->now_ms();
    Result<std::uint32_t> r = open(key, now, Access::read);
    if (!r.ok()) return finish(Result<void>(r.error()));
    std::size_t j = 0;
    for (const auto& f : fields) {
      std::int64_t t = FieldReply::no_field;
      if (*r != kNoPos) {
        const hash_map_type& m = map_at(*r);
        const std::uint32_t pos = m.find(f);
        if (pos != hash_map_type::npos && !hidden(m, pos, now)) t = time_of(m.deadline(pos), now, q);
      }
      out[j++] = t;
    }
    return finish(Result<void>());
  }
  template <class KK, class Fields>
  Result<void> persist_fields(const KK& key, const Fields& fields, int* out) {
    HashFieldOps& s = *this;
    const std::int64_t now = s.now_ms();
    Result<std::uint32_t> r = open(key, now, Access::write);
    if (!r.ok()) return finish(Result<void>(r.error()));
    std::size_t j = 0, persisted = 0;
    FieldDelta touched(*this);
    for (const auto& f : fields) {
      int code = FieldReply::no_field;
      if (*r != kNoPos) {
        hash_map_type& m = map_at(*r);
        const std::uint32_t pos = m.find(f);
        if (pos != hash_map_type::npos) {
          code = m.clear_deadline(pos) ? FieldReply::persisted : FieldReply::no_ttl;
          if (code == FieldReply::persisted) {
            ++persisted;
            touched.add_name(m, pos);
          }
        }
      }
      out[j++] = code;
    }
    if (persisted != 0) {
      emit_change(KeyEventCause::hpersist, *r, FieldOp::hpersist, touched);
      hash_changed(*r, now);
    }
    return finish(Result<void>());
  }

  template <class KK, class Fields>
  Result<std::size_t> getex_fields(const KK& key, const Fields& fields, const FieldTtl& ttl,
                                   std::optional<field_value_type>* out) {
    const std::int64_t now = this->now_ms();
    if (ttl.kind == FieldTtl::Kind::keep) return take_fields(key, fields, Take::read, kNoDeadline, now, out);
    if (ttl.kind == FieldTtl::Kind::persist) return take_fields(key, fields, Take::persist, kNoDeadline, now, out);
    const Result<std::int64_t> when = field_deadline(ttl.time, now);
    if (!when.ok()) return when.error();
    return take_fields(key, fields, *when <= now ? Take::expire_past : Take::expire, *when, now, out);
  }
  template <class KK, class Fields>
  Result<std::size_t> getdel_fields(const KK& key, const Fields& fields, std::optional<field_value_type>* out) {
    return take_fields(key, fields, Take::del, kNoDeadline, this->now_ms(), out);
  }
  // HSETEX (`first`, `last`: a forward range of pairs, read twice under FNX and FXX).
  template <class KK, class It, class End>
  Result<bool> setex_range(const KK& key, It first, End last, const FieldTtl& ttl, FieldCondition cond) {
    HashFieldOps& s = *this;
    const std::int64_t now = s.now_ms();
    std::int64_t when = kNoDeadline;
    if (ttl.kind == FieldTtl::Kind::expire) {
      const Result<std::int64_t> w = field_deadline(ttl.time, now);
      if (!w.ok()) return w.error();
      when = *w;
    }
    if (first == last) return true;
    if (cond != FieldCondition::none) {  // on the hash as it is: a stale field counts as missing
      Result<std::uint32_t> r = open(key, now, Access::write);
      if (!r.ok()) return finish(Result<bool>(r.error()));
      std::size_t n = 0, present = 0;
      for (It it = first; it != last; ++it, ++n) {
        if (*r != kNoPos && map_at(*r).find(it->first) != hash_map_type::npos) ++present;
      }
      if (cond == FieldCondition::fxx ? present != n : present != 0) return finish(false);
    }
    Result<Opened> r = open_for_write(key, now, first->first, first->second);
    if (!r.ok()) return finish(Result<bool>(r.error()));
    const std::uint32_t i = r->i;
    const bool timed = ttl.kind == FieldTtl::Kind::expire;
    const bool past = timed && when <= now;
    FieldDelta touched(*this);
    change(*r, now, [&](hash_map_type& m) {
      for (It it = first; it != last; ++it) {
        std::uint32_t pos = m.find(it->first);
        if (ttl.kind == FieldTtl::Kind::keep && pos != hash_map_type::npos) {
          m.replace_value(pos, it->second);  // the TTL stays
        } else {
          pos = m.assign(it->first, it->second).first;  // an overwrite clears the TTL
        }
        if (timed && !past) m.set_deadline(pos, when);
        touched.add(m, pos);
      }
    });
    // In the feed: HSET, then in the same unit the deadlines (set, or kept: HSET cleared them
    // on a replica), or, for a past time, HDEL (Redis writes the fields, then deletes them).
    std::optional<typename ChangeFeed<typename Engine::key_type, V>::Group> unit;
    if (timed || (ttl.kind == FieldTtl::Kind::keep && touched.timed())) unit.emplace(s.notify_.feed());
    emit_change(KeyEventCause::hset, i, FieldOp::hset, touched);
    if (timed && !past) {
      emit_change(KeyEventCause::hexpire, i, FieldOp::hpexpireat, touched);
    } else if (ttl.kind == FieldTtl::Kind::keep && touched.timed()) {
      s.feed_change(KeyEventCause::hset, s.ks_.entry(i), FieldOp::hpexpireat, touched.get());
    }
    if (past) {
      std::size_t deleted = 0;
      change(i, now, [&](hash_map_type& m) {
        for (It it = first; it != last; ++it) {
          const std::uint32_t pos = m.find(it->first);
          if (pos == hash_map_type::npos) continue;  // a name given twice
          m.erase(pos);
          ++deleted;
        }
      });
      s.stats_.expired_subkeys += deleted;  // as Redis counts a past field time (D24)
      emit_change(KeyEventCause::hdel, i, FieldOp::hdel, touched);
    }
    hash_changed(i, now);
    return finish(true);
  }

  // The hasher every hash this store creates uses (keyed from Options::seed when given).
  const std::shared_ptr<const field_hasher>& field_hash_function() const noexcept { return field_hash_; }

 protected:
  using Engine::Engine;

  // ==== For the store ========================================================================

  void init_field_hash(const std::optional<std::uint64_t>& seed) {
    field_hasher h;
    if constexpr (detail::is_rekeyable<field_hasher>::value) {
      if (seed) h.rekey(HashKey::from_seed(*seed ^ 0x6A09E667F3BCC908ull));  // not the key hash's key
    }
    field_hash_ = std::make_shared<const field_hasher>(std::move(h));
  }

  // A value was placed in entry i by a generic member (set, rename, copy, modify, ...): index
  // its hash by its earliest field deadline. Nothing else changes: a hash placed with stale
  // fields has them reclaimed lazily or by tick().
  void hash_placed(std::uint32_t i, std::int64_t now) {
    HashFieldOps& s = *this;
    hash_map_type* m = traits::map(s.ks_.entry(i).value);
    s.ks_.index_hash(i, m == nullptr ? kNoDeadline : m->earliest_bound(), now);
  }

  // tick()'s field cycle: pops due hashes in deadline order and reclaims their due fields,
  // at most the quota, while `time_left()` (checked every 16 hashes). Redis's quota: 10000
  // fields a second spread over hz (at least 1 a tick), multiplied in slow ticks by
  // min(32, used / 1e6) once the quota has been used up on consecutive ticks for more than a
  // million fields (expire.c's activeExpirySequence), so that a backlog drains faster.
  template <class TimeLeft>
  void field_cycle(TickReport& report, std::int64_t now, bool fast, TimeLeft&& time_left) {
    HashFieldOps& s = *this;
    std::uint64_t quota = std::max<std::uint64_t>(1, 10000 / static_cast<std::uint64_t>(s.options_.hz));
    if (!fast && field_sequence_ > 1000000) quota *= std::min<std::uint64_t>(32, field_sequence_ / 1000000);
    report.field_quota = quota;
    if (s.ks_.hashes_indexed() == 0) {
      field_sequence_ = 0;
      return;
    }
    std::uint64_t left = quota;
    std::uint32_t visits = 0;
    s.ks_.advance_hashes(
        now,
        [&](std::uint32_t i) {
          // A key whose own deadline has passed expires whole (D27), even if the key cycle
          // has not sampled it yet: no field of it is reclaimed one by one.
          if (s.ks_.entry(i).is_stale(now)) {
            s.expire_entry(s.ks_.slot_of(i), now, /*active=*/true);
            return;
          }
          left -= reclaim_fields(i, now, static_cast<std::size_t>(left));
        },
        [&] { return left != 0 && ((++visits & 15) != 0 || time_left()); },
        [&](std::uint32_t j, detail::TimerWheel::Ahead a) {
          // The hashes reclaimed next: their entries first, then (once those are in) the
          // deadlines each reclaim scans.
          if (a == detail::TimerWheel::Ahead::far) {
            s.ks_.prefetch_entry(j);
          } else if (const hash_map_type* m = traits::map(s.ks_.entry(j).value); m != nullptr) {
            m->prefetch_for_reclaim();
          }
        });
    report.fields_expired = quota - left;
    field_sequence_ = left == 0 ? field_sequence_ + quota : 0;
  }


 private:
  hash_map_type& map_at(std::uint32_t i) noexcept { return *traits::map(this->ks_.entry(i).value); }

  // HINCRBY and HINCRBYFLOAT's write: `value` into the field, a live field keeping its TTL
  // (then HSET and HPEXPIREAT, one unit, in the feed), a new one created without; a missing key
  // created (or refused as set() is). Cause `hset`.
  template <class KK, class FF>
  Result<void> write_keeping_ttl(const KK& key, const FF& field, const field_value_type& value, std::int64_t now) {
    Result<Opened> r = create_or_open(key, now);
    if (!r.ok()) return r.error();
    FieldDelta touched(*this);
    change(*r, now, [&](hash_map_type& m) {
      std::uint32_t pos = m.find(field);
      if (pos != hash_map_type::npos) {
        m.replace_value(pos, value);  // the TTL stays
      } else {
        pos = m.assign(field_type(field), value).first;
      }
      touched.add(m, pos);
    });
    if (touched.timed()) {
      const typename ChangeFeed<typename Engine::key_type, V>::Group unit(this->notify_.feed());
      emit_change(KeyEventCause::hset, r->i, FieldOp::hset, touched);
      this->feed_change(KeyEventCause::hset, this->ks_.entry(r->i), FieldOp::hpexpireat, touched.get());
    } else {
      emit_change(KeyEventCause::hset, r->i, FieldOp::hset, touched);
    }
    hash_changed(r->i, now);
    return {};
  }

  // HGETEX and HGETDEL: out[j] = the value of fields[j] (nullopt if absent), then what `take`
  // says done to each field found. Returns the number found.
  enum class Take : std::uint8_t {
    read,         // HGETEX with no TTL argument
    persist,      // HGETEX PERSIST
    expire,       // HGETEX EX ... (a future deadline, `when`)
    expire_past,  // HGETEX EX ... (a past one: the fields are deleted, and counted as expired)
    del,          // HGETDEL
  };
  template <class KK, class Fields>
  Result<std::size_t> take_fields(const KK& key, const Fields& fields, Take take, std::int64_t when, std::int64_t now,
                                  std::optional<field_value_type>* out) {
    HashFieldOps& s = *this;
    std::fill(out, out + field_count(fields), std::nullopt);
    Result<std::uint32_t> r = open(key, now, Access::write);
    if (!r.ok() || *r == kNoPos) return finish(r.ok() ? Result<std::size_t>(std::size_t{0}) : r.error());
    const std::uint32_t i = *r;
    std::size_t found = 0, changed = 0, j = 0;
    FieldDelta touched(*this);
    change(i, now, [&](hash_map_type& m) {
      for (const auto& f : fields) {
        const std::uint32_t pos = m.find(f);
        if (pos == hash_map_type::npos) {
          ++j;
          continue;
        }
        out[j++] = m.at(pos).value;
        ++found;
        switch (take) {
          case Take::read: break;
          case Take::persist:
            if (m.clear_deadline(pos)) {
              touched.add_name(m, pos);
              ++changed;
            }
            break;
          case Take::expire:
            m.set_deadline(pos, when);
            touched.add(m, pos);
            ++changed;
            break;
          case Take::expire_past:
          case Take::del:
            touched.add_name(m, pos);
            m.erase(pos);
            ++changed;
            break;
        }
      }
    });
    if (changed == 0) return finish(found);
    switch (take) {
      case Take::read: break;
      case Take::persist: emit_change(KeyEventCause::hpersist, i, FieldOp::hpersist, touched); break;
      case Take::expire: emit_change(KeyEventCause::hexpire, i, FieldOp::hpexpireat, touched); break;
      case Take::expire_past:
        s.stats_.expired_subkeys += changed;  // as Redis counts a past field time (D24)
        emit_change(KeyEventCause::hdel, i, FieldOp::hdel, touched);
        break;
      case Take::del: emit_change(KeyEventCause::hdel, i, FieldOp::hdel, touched); break;
    }
    hash_changed(i, now);
    return finish(found);
  }

  // A field's hash by the store's field hasher, taken before the hash is opened, so that
  // hashing overlaps the key's lookup instead of waiting for the map (and its hasher) to be
  // loaded; find_field() uses it when the map hashes with that hasher (every map the store
  // made does; one a caller stored whole may not).
  template <class FF>
  std::uint64_t field_hash(const FF& field) const {
    return field_hash_ ? static_cast<std::uint64_t>((*field_hash_)(field)) : 0;  // (none: a moved-from store)
  }
  template <class FF>
  std::uint32_t find_field(const hash_map_type& m, const FF& field, std::uint64_t fh) const {
    return m.hash_function() == field_hash_ ? m.find(field, fh) : m.find(field);
  }
  // HSET of one field into m: {its position, whether it was added}.
  template <class FF, class VV>
  std::pair<std::uint32_t, bool> assign_field(hash_map_type& m, FF&& field, VV&& v, std::uint64_t fh) {
    return m.hash_function() == field_hash_ ? m.assign(std::forward<FF>(field), std::forward<VV>(v), fh)
                                            : m.assign(std::forward<FF>(field), std::forward<VV>(v));
  }

  // The fields a change concerns, for its change-feed record (Change::fields, D32): made only
  // while a feed is set; otherwise every member does nothing.
  class FieldDelta {
   public:
    explicit FieldDelta(const HashFieldOps& s) {
      if (EXPIRING_UNLIKELY(s.notify_.recording())) v_.emplace(traits::make(s.field_hash_));
    }
    // The field at pos as it now is: name, value and deadline (HSET, HPEXPIREAT).
    void add(const hash_map_type& m, std::uint32_t pos) {
      if (!v_) return;
      hash_map_type& d = *traits::map(*v_);
      const std::uint32_t at = d.assign(m.at(pos).name, m.at(pos).value).first;
      if (m.deadline(pos) != kNoDeadline) d.set_deadline(at, m.deadline(pos));
    }
    // Its name only (HDEL, HPERSIST): the value is not sent, so it is not copied when it
    // need not be.
    void add_name(const hash_map_type& m, std::uint32_t pos) {
      if (!v_) return;
      if constexpr (std::is_default_constructible_v<field_value_type>) {
        traits::map(*v_)->assign(m.at(pos).name, field_value_type{});
      } else {
        traits::map(*v_)->assign(m.at(pos).name, m.at(pos).value);
      }
    }
    const V* get() const noexcept { return v_ ? &*v_ : nullptr; }
    bool timed() const noexcept { return v_ && traits::map(*v_)->volatile_count() != 0; }

   private:
    std::optional<V> v_;
  };
  // A field change of entry i's hash: its event and its record.
  void emit_change(KeyEventCause cause, std::uint32_t i, FieldOp op, const FieldDelta& delta) {
    this->emit_fields(cause, this->ks_.entry(i), op, delta.get());
  }

  // The short path of the field writes, as plain_writes() is for keys (engine.hpp): with no
  // memory limit to weigh the hash, no access data to keep, no change feed and no listener
  // of `cause`, a write to a live hash that has no field due (find_plain_hash()) changes the
  // field and re-indexes the hash, and nothing else happens on the general path either.
  bool plain_field_write(KeyEventCause cause) const noexcept {
    const HashFieldOps& s = *this;
    return !s.gov_.tracking() && !s.access_.read_hook() && !s.notify_.recording() && !s.notify_.events().wants(cause);
  }
  // The entry of a live hash at `key` none of whose fields may be due (earliest_bound()), or
  // kNoPos: the general path then opens it (reclaiming, creating or refusing).
  template <class KK>
  EXPIRING_INLINE std::uint32_t find_plain_hash(const KK& key, std::int64_t now) {
    HashFieldOps& s = *this;
    const auto& lk = Engine::lookup_key(key);
    const std::uint32_t i = s.ks_.find_index(lk, s.ks_.hash_of(lk));
    if (i == kNoPos || s.ks_.entry(i).is_stale(now)) return kNoPos;
    hash_map_type* m = traits::map(s.ks_.entry(i).value);
    if (m == nullptr || (m->volatile_count() != 0 && m->earliest_bound() < now)) return kNoPos;
    return i;
  }

  // Every member ends here: the events queued by the call are delivered (listeners may use
  // the store), then its result is returned.
  template <class R>
  R finish(R r) {
    this->flush();
    return r;
  }

  // The live hash at `key`, for a command: kNoPos when there is none (a stale key is
  // reclaimed on the way), Errc::wrong_type when the value is not a hash. Its stale fields are
  // reclaimed first (lazy expiry, D20); a hash that this empties is deleted (kNoPos). A
  // replica's read leaves them in place (D31: only the primary's HDEL removes a field), and
  // the readers skip them (hidden()).
  template <class KK>
  EXPIRING_INLINE Result<std::uint32_t> open(const KK& key, std::int64_t now, Access access) {
    HashFieldOps& s = *this;
    const auto& lk = Engine::lookup_key(key);
    const auto it = s.lookup(lk, s.ks_.hash_of(lk), now, access);
    if (it == s.ks_.end()) return kNoPos;
    const std::uint32_t i = it->index;
    hash_map_type* m = traits::map(s.ks_.entry(i).value);
    if (m == nullptr) return Errc::wrong_type;
    if (EXPIRING_UNLIKELY(!s.replica().reclaims_on_read()) && access == Access::read) return i;
    // The bound first: a scan only when some field may be due.
    if (m->volatile_count() != 0 && m->earliest_bound() < now && m->earliest_deadline() < now) {
      reclaim_fields(i, now, std::numeric_limits<std::size_t>::max());
      if (!s.ks_.occupied(i)) return kNoPos;  // it emptied, and the key went
    }
    return i;
  }

  // Whether the field at pos is stale, which only a replica's read finds (open() reclaims
  // them on a primary).
  bool hidden(const hash_map_type& m, std::uint32_t pos, std::int64_t now) const noexcept {
    return EXPIRING_UNLIKELY(!this->replica().reclaims_on_read()) && m.deadline(pos) < now;
  }

  // A write that may add a field: the memory limit's check (with Options::maxmemory; `field`
  // and `value` size it), then the hash, a missing key created empty (refused with
  // Errc::out_of_memory as set() refuses a new key).
  struct Opened {
    std::uint32_t i;
    bool created;  // the key was created for this call
  };
  template <class FF, class VV>
  bool room_for(std::int64_t now, const FF& field, const VV& value) {
    HashFieldOps& s = *this;
    return !s.gov_.tracking() || s.make_room(now, Engine::template predicted_heap_bytes<field_type>(field) +
                                                Engine::template predicted_heap_bytes<field_value_type>(value) +
                                                sizeof(field_type) + sizeof(field_value_type));
  }
  template <class KK, class FF, class VV>
  Result<Opened> open_for_write(const KK& key, std::int64_t now, const FF& field, const VV& value) {
    if (!room_for(now, field, value)) return Errc::out_of_memory;
    return create_or_open(key, now);
  }
  template <class KK>
  Result<Opened> create_or_open(const KK& key, std::int64_t now) {
    HashFieldOps& s = *this;
    Result<std::uint32_t> r = open(key, now, Access::write);
    if (!r.ok()) return r.error();
    if (*r != kNoPos) return Opened{*r, false};
    const auto& lk = Engine::lookup_key(key);
    const std::uint64_t h = s.ks_.hash_of(lk);
    if (s.options_.max_entries != 0 && s.ks_.size() >= s.options_.max_entries && !s.room_for_key(lk, h, now)) {
      return Errc::out_of_memory;
    }
    if (s.access_.idle_ms() != 0) s.ks_.prepare_deadline(s.prepared_idle_deadline(now));
    const std::uint32_t i = s.ks_.try_emplace(lk, h, key, traits::make(field_hash_)).first;
    s.account(s.ks_.entry(i));
    s.init_access(i, now);
    if (s.access_.idle_ms() != 0) s.ks_.set_deadline(i, s.prepared_idle_deadline(now));
    return Opened{i, true};
  }

  // Runs fn(map) on entry i's hash between unaccount() and account(), so that the memory
  // limit's weight follows the change. If fn throws (an allocation), the weight is restored,
  // a key created empty for this call is removed without an event, the hash is re-indexed
  // for what fn did change, and the exception propagates: the store stays consistent.
  template <class Fn>
  void change(Opened o, std::int64_t now, Fn&& fn) {
    HashFieldOps& s = *this;
    s.unaccount(s.ks_.entry(o.i));
    try {
      fn(map_at(o.i));
    } catch (...) {
      s.account(s.ks_.entry(o.i));
      if (o.created && map_at(o.i).empty()) {
        s.ks_.erase(s.ks_.slot_of(o.i), [&](typename Engine::entry_type& e) { s.unaccount(e); });
      } else {
        try {
          hash_changed(o.i, now);
        } catch (...) {  // the index's own allocation failed too: the hash is re-indexed by the
        }                // next change, or found by a read (lazy expiry needs no index)
      }
      throw;
    }
    s.account(s.ks_.entry(o.i));
  }
  template <class Fn>
  void change(std::uint32_t i, std::int64_t now, Fn&& fn) {
    change(Opened{i, false}, now, std::forward<Fn>(fn));
  }

  // After a change to entry i's hash: an empty hash is deleted (cause `del`), else it is
  // re-indexed by its earliest field deadline, or a bound at or before it (FieldMap::
  // earliest_bound(): tick() reaching the hash early finds nothing due, and re-indexes it by
  // the exact one its scan found). Unchanged, the index is not touched.
  void hash_changed(std::uint32_t i, std::int64_t now) {
    hash_map_type& m = map_at(i);
    if (EXPIRING_UNLIKELY(m.empty())) {
      remove_empty_hash(i);
      return;
    }
    plain_hash_changed(i, m, now);
  }
  // hash_changed() of hash m (entry i's), which is not empty: inline in the short paths, with
  // the rare re-indexing out of line.
  EXPIRING_INLINE void plain_hash_changed(std::uint32_t i, hash_map_type& m, std::int64_t now) {
    const std::int64_t bound = m.earliest_bound();
    if (bound != this->ks_.hash_deadline(i)) reindex_hash(i, bound, now);
  }
  EXPIRING_NOINLINE void remove_empty_hash(std::uint32_t i) { this->remove(this->ks_.slot_of(i), KeyEventCause::del); }
  EXPIRING_NOINLINE void reindex_hash(std::uint32_t i, std::int64_t bound, std::int64_t now) {
    this->ks_.index_hash(i, bound, now);
  }

  // Reclaims up to `max` stale fields of entry i's hash in deadline order (lazily, or by
  // tick()): one `hexpired` event carrying them, one HDEL record of them, expired_subkeys,
  // then hash_changed(). Returns the number reclaimed.
  std::size_t reclaim_fields(std::uint32_t i, std::int64_t now, std::size_t max) {
    HashFieldOps& s = *this;
    std::optional<V> gone;
    hash_map_type* g = nullptr;
    const bool event = s.notify_.events().wants(KeyEventCause::hexpired);
    if (event || s.notify_.recording()) {
      gone.emplace(traits::make(map_at(i).hash_function()));
      g = traits::map(*gone);
    }
    const std::size_t before = map_at(i).size();
    struct Count {  // the fields that went are counted even if an event's copy throws
      HashFieldOps& ops;
      std::uint32_t i;
      std::size_t before;
      std::size_t n() const { return before - ops.map_at(i).size(); }
      ~Count() {
        ops.stats_.expired_subkeys += n();
      }
    };
    std::size_t n = 0;
    {
      const Count count{*this, i, before};  // records before the hash can go, below
      change(i, now, [&](hash_map_type& m) {
        m.reclaim_due(now, max, [&](const auto& f, std::int64_t) {
          if (g != nullptr) g->assign(f.name, f.value);
        });
      });
      n = count.n();
    }
    const bool emptied_kept = map_at(i).empty() && s.replica().keeps_emptied_hashes();
    // The change feed: HDEL of the fields, with the hash as it now is (an emptied one goes as
    // a DEL, by hash_changed()); a replica's emptied key stays (below) and sends nothing.
    if (n != 0 && !emptied_kept && !map_at(i).empty() && s.notify_.recording()) {
      s.feed_change(KeyEventCause::hexpired, s.ks_.entry(i), FieldOp::hdel, &*gone);
    }
    if (n != 0 && event) {
      s.notify_.events().push_removed(KeyEventCause::hexpired, typename Engine::key_type(s.ks_.entry(i).key), std::move(gone),
                             false);
    }
    if (emptied_kept) {
      // A replica keeps the emptied key (D31): only the primary's DEL removes a key. Its
      // members answer an empty hash as they answer a missing one.
      s.ks_.unindex_hash(i);
      return n;
    }
    hash_changed(i, now);
    return n;
  }

  // field_deadline() for the short path: the deadline, or kMinDeadline for anything the
  // general path must answer (an error). HPEXPIREAT's time is its deadline.
  static std::int64_t plain_field_deadline(const FieldExpireRequest& req, std::int64_t now) {
    if (req.base == TimeBase::absolute && req.unit == TimeUnit::ms && !req.overflowed) {
      return req.amount >= 0 && req.amount <= kMaxFieldDeadline ? req.amount : kMinDeadline;
    }
    const Result<std::int64_t> w = field_deadline(req, now);
    return w.ok() ? *w : kMinDeadline;
  }
  static constexpr std::int64_t kMinDeadline = std::numeric_limits<std::int64_t>::min();
  // The deadline of HEXPIRE's family from its time argument (research §1.2, D25).
  static Result<std::int64_t> field_deadline(const FieldExpireRequest& req, std::int64_t now) {
    if (req.amount < 0) return Errc::negative_expire_time;
    if (req.overflowed) return Errc::invalid_expire_time;
    const std::int64_t unit = req.unit == TimeUnit::seconds ? 1000 : 1;
    if (req.amount > kMaxFieldDeadline / unit) return Errc::invalid_expire_time;
    const std::int64_t ms = req.amount * unit;
    std::int64_t when = ms;
    if (req.base == TimeBase::relative && !detail::checked_add(ms, now, when)) return Errc::invalid_expire_time;
    if (when > kMaxFieldDeadline) return Errc::invalid_expire_time;
    if (when < 0 && when > now) return Errc::invalid_expire_time;  // a clock before 1970
    return when;
  }

  static bool condition_met(ExpireFlags flags, std::int64_t old, std::int64_t when) {
    // Every condition asked for must hold (XX with GT or LT: both), as for keys.
    const bool timed = old != kNoDeadline;
    if (has(flags, ExpireFlags::NX) && timed) return false;
    if (has(flags, ExpireFlags::XX) && !timed) return false;
    if (has(flags, ExpireFlags::GT) && !(timed && when > old)) return false;
    if (has(flags, ExpireFlags::LT) && !(!timed || when < old)) return false;
    return true;
  }

  // One field's answer; `deadline` is live (now <= deadline) and within [0, 2^46). A clock
  // far before 1970 saturates the remaining time at INT64_MAX instead of overflowing.
  static std::int64_t time_of(std::int64_t deadline, std::int64_t now, FieldTimeQuery q) {
    if (deadline == kNoDeadline) return FieldReply::no_ttl;
    switch (q) {
      case FieldTimeQuery::ttl_ms: return detail::saturating_sub(deadline, now);
      case FieldTimeQuery::ttl_s: return ceil_div_1000(detail::saturating_sub(deadline, now));
      case FieldTimeQuery::at_ms: return deadline;
      case FieldTimeQuery::at_s: return ceil_div_1000(deadline);
    }
    return FieldReply::no_ttl;
  }
  static std::int64_t ceil_div_1000(std::int64_t ms) { return ms / 1000 + (ms % 1000 > 0 ? 1 : 0); }

  // HINCRBY's view of a value: an integer, or a string holding one.
  static bool as_integer(const field_value_type& v, std::int64_t& out) {
    if constexpr (std::is_integral_v<field_value_type>) {
      out = static_cast<std::int64_t>(v);
      return true;
    } else {
      return parse_strict_i64(v, out);
    }
  }
  static bool fits_value(std::int64_t x) {
    if constexpr (std::is_integral_v<field_value_type>) {
      return x >= static_cast<std::int64_t>(std::numeric_limits<field_value_type>::min()) &&
             static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(std::numeric_limits<field_value_type>::max());
    } else {
      return true;
    }
  }
  static field_value_type from_integer(std::int64_t x) {
    if constexpr (std::is_integral_v<field_value_type>) {
      return static_cast<field_value_type>(x);
    } else {
      return field_value_type(std::to_string(x));
    }
  }

  std::shared_ptr<const field_hasher> field_hash_;
  std::uint64_t field_sequence_ = 0;  // fields reclaimed by consecutive ticks that used their whole quota
};

}  // namespace detail
}  // namespace expiring
