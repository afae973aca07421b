// expiring/api/hash_commands.hpp: the hash commands' overload sets, written once for every
// store of hashes.
//
// ExpiringStore<K, FieldMap<F, V>> and ConcurrentStore<K, FieldMap<F, V>> answer Redis 7.4's
// hash commands with per-field TTLs (hash_fields.hpp has the contract). Most of those commands
// come in families that differ only in how their arguments are spelled: HEXPIRE, HPEXPIRE,
// HEXPIREAT and HPEXPIREAT are one operation with a unit and a base; HTTL, HPTTL, HEXPIRETIME
// and HPEXPIRETIME one query; each takes a range of fields or a braced list and answers into
// a std::vector or into the caller's array. Each family is written here once, as thin
// overloads over a few primitives that each store implements its own way (a probe of its
// keyspace, a shard's lock). Code written against these members compiles against either store.
//
// The members (HashCommands<Store, F, V>, a base of each store of hashes):
//
//   hset(k, pairs)                              HSET k f v [f v ...]: a range of (field, value)
//   hdel(k, fields)                             HDEL k f [f ...]
//   hvisit(k, f, fn)                            HGET k f, as a visit: fn(const V&) if f is live
//   hexpire(k, seconds | duration, fields [, flags])          HEXPIRE   (a duration: in ms)
//   hpexpire(k, ms | duration, fields [, flags])              HPEXPIRE
//   hexpireat(k, unix_s | system_clock time point, fields [, flags])  HEXPIREAT
//   hpexpireat(k, unix_ms | system_clock time point, fields [, flags]) HPEXPIREAT
//       -> std::vector<int>, one FieldReply code per field; or, with (..., flags, int* out),
//          the codes written to out[0 .. size(fields)) and nothing allocated
//   httl / hpttl / hexpiretime / hpexpiretime(k, fields)      -> std::vector<std::int64_t>;
//       or (k, fields, std::int64_t* out)
//   hpersist(k, fields)                                        -> std::vector<int>; or (k, fields, int* out)
//   hgetex(k, fields [, FieldTtl])     HGETEX k [EX|PX|EXAT|PXAT t | PERSIST] FIELDS n f ...
//   hgetdel(k, fields)                 HGETDEL k FIELDS n f ...
//       -> std::vector<std::optional<V>>, the value of each field before the call (nullopt:
//          no such field); or, with (..., std::optional<V>* out), the values written to
//          out[0 .. size(fields)) and the number found returned
//   hsetex(k, pairs [, FieldTtl [, FieldCondition]])  HSETEX k [FNX|FXX] [EX|PX|EXAT|PXAT t |
//       KEEPTTL] FIELDS n f v ... -> bool: whether the fields were written (FNX, FXX)
//
// `fields` (and `pairs`) is any range, or a braced list: hdel(k, {"a", "b"}). std::chrono
// values become ms rounded up; one beyond the int64 range of ms is Errc::invalid_expire_time
// (after the flag errors). Errors and codes: hash_fields.hpp.
//
// The primitives a store provides (public: this base is nobody's friend):
//   Result<std::size_t> hset_range(const KK&, It first, End last);
//   Result<std::size_t> hdel_range(const KK&, It first, End last);
//   hget(const KK&, const FF&): a Result of a pointer to the value or of a std::optional
//   Result<void> expire_fields(const KK&, const FieldExpireRequest&, const Fields&, int* out);
//   Result<void> field_times(const KK&, const Fields&, FieldTimeQuery, std::int64_t* out);
//   Result<void> persist_fields(const KK&, const Fields&, int* out);
//   Result<std::size_t> getex_fields(const KK&, const Fields&, const FieldTtl&, std::optional<V>* out);
//   Result<std::size_t> getdel_fields(const KK&, const Fields&, std::optional<V>* out);
//   Result<bool> setex_range(const KK&, It first, End last, const FieldTtl&, FieldCondition);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "../detail/duration.hpp"
#include "../error.hpp"
#include "../options.hpp"

namespace expiring {

// The per-field replies of the field TTL commands, as Redis 7.4.
struct FieldReply {
  // HEXPIRE family, HTTL family, HPERSIST: no such field, or no such key.
  static constexpr int no_field = -2;
  // HEXPIRE family: NX, XX, GT or LT was not met (a field without TTL counts as +infinity).
  static constexpr int condition_not_met = 0;
  // HEXPIRE family: the deadline is set.
  static constexpr int set = 1;
  // HEXPIRE family: the time was now or in the past, so the field was deleted.
  static constexpr int deleted = 2;
  // HPERSIST and the HTTL family: the field has no TTL.
  static constexpr int no_ttl = -1;
  // HPERSIST: the field's TTL was removed.
  static constexpr int persisted = 1;
};

// One call of the HEXPIRE family, as every overload below reduces it: what a store's
// expire_fields() primitive takes.
struct FieldExpireRequest {
  std::int64_t amount = 0;  // a TTL (relative) or a Unix time (absolute), in `unit`
  detail::TimeUnit unit = detail::TimeUnit::seconds;  // seconds (HEXPIRE, HEXPIREAT) or ms
  detail::TimeBase base = detail::TimeBase::relative;  // relative (HEXPIRE, HPEXPIRE) or absolute
  ExpireFlags flags = ExpireFlags::None;               // NX, XX, GT, LT, XX|GT, XX|LT or None
  bool overflowed = false;  // a std::chrono value beyond the int64 range of ms

  // The four commands: HEXPIRE (seconds), HPEXPIRE (ms), HEXPIREAT (a Unix time in seconds),
  // HPEXPIREAT (in ms).
  static FieldExpireRequest hexpire(std::int64_t seconds, ExpireFlags f = ExpireFlags::None) {
    return {seconds, detail::TimeUnit::seconds, detail::TimeBase::relative, f, false};
  }
  static FieldExpireRequest hpexpire(std::int64_t ms, ExpireFlags f = ExpireFlags::None) {
    return {ms, detail::TimeUnit::ms, detail::TimeBase::relative, f, false};
  }
  static FieldExpireRequest hexpireat(std::int64_t unix_seconds, ExpireFlags f = ExpireFlags::None) {
    return {unix_seconds, detail::TimeUnit::seconds, detail::TimeBase::absolute, f, false};
  }
  static FieldExpireRequest hpexpireat(std::int64_t unix_ms, ExpireFlags f = ExpireFlags::None) {
    return {unix_ms, detail::TimeUnit::ms, detail::TimeBase::absolute, f, false};
  }
  // A duration or a time point, in ms rounded up (overflowed when beyond the range).
  template <class Rep, class Period>
  static FieldExpireRequest after(std::chrono::duration<Rep, Period> ttl, ExpireFlags f) {
    const detail::CheckedMs ms = detail::to_ms(ttl);
    return {ms.ms, detail::TimeUnit::ms, detail::TimeBase::relative, f, !ms.ok};
  }
  // A system_clock time point: HPEXPIREAT of its Unix time in ms, rounded up.
  template <class D>
  static FieldExpireRequest at(std::chrono::time_point<std::chrono::system_clock, D> when, ExpireFlags f) {
    const detail::CheckedMs ms = detail::to_unix_ms(when);
    return {ms.ms, detail::TimeUnit::ms, detail::TimeBase::absolute, f, !ms.ok};
  }
};

// What HGETEX and HSETEX do to the TTLs of the fields they touch (Redis 8). keep(): HGETEX's
// default (and HSETEX KEEPTTL); persist(): HSETEX's default, as HSET clears an overwritten
// field's TTL (and HGETEX PERSIST); or a deadline, as the HEXPIRE family's time argument
// (its limits and errors; a time now or in the past deletes the fields, after they are read
// or written). Each command's default is its form without a TTL argument.
struct FieldTtl {
  // Keep the TTLs, remove them, or give the fields the deadline `time` says.
  enum class Kind : std::uint8_t { keep, persist, expire };
  Kind kind = Kind::keep;   // what is done to the fields' TTLs
  FieldExpireRequest time;  // Kind::expire: the time argument (flags unused)

  // Keep each field's TTL, or its lack of one (HGETEX without a TTL argument; HSETEX KEEPTTL).
  static FieldTtl keep() { return {}; }
  // Remove the fields' TTLs (HGETEX PERSIST; HSETEX without a TTL argument).
  static FieldTtl persist() { return {Kind::persist, {}}; }
  // EX seconds: a TTL in seconds.
  static FieldTtl ex(std::int64_t seconds) { return {Kind::expire, FieldExpireRequest::hexpire(seconds)}; }
  // PX milliseconds: a TTL in ms.
  static FieldTtl px(std::int64_t ms) { return {Kind::expire, FieldExpireRequest::hpexpire(ms)}; }
  // EXAT unix-time-seconds: a deadline as a Unix time in seconds.
  static FieldTtl exat(std::int64_t unix_seconds) { return {Kind::expire, FieldExpireRequest::hexpireat(unix_seconds)}; }
  // PXAT unix-time-milliseconds: a deadline in ms since the Unix epoch.
  static FieldTtl pxat(std::int64_t unix_ms) { return {Kind::expire, FieldExpireRequest::hpexpireat(unix_ms)}; }
  // A duration, or a system_clock time point (in ms rounded up, as the HEXPIRE family's).
  template <class Rep, class Period>
  static FieldTtl after(std::chrono::duration<Rep, Period> ttl) {
    return {Kind::expire, FieldExpireRequest::after(ttl, ExpireFlags::None)};
  }
  // PXAT at a system_clock time point, in Unix ms rounded up.
  template <class D>
  static FieldTtl at(std::chrono::time_point<std::chrono::system_clock, D> when) {
    return {Kind::expire, FieldExpireRequest::at(when, ExpireFlags::None)};
  }
};

// HSETEX's condition on the fields as they are (a stale field counts as missing): none, FNX
// (write only if none of them exists) or FXX (only if all of them exist; never creates the
// key).
enum class FieldCondition : std::uint8_t { none, fnx, fxx };

// What the HTTL family asks of each field: the remaining time or the deadline, in s or ms.
enum class FieldTimeQuery : std::uint8_t { ttl_s, ttl_ms, at_s, at_ms };

namespace detail {
// The number of fields of a call: any range, or a braced list.
template <class Fields>
std::size_t field_count(const Fields& fields) {
  return static_cast<std::size_t>(std::distance(std::begin(fields), std::end(fields)));
}
}  // namespace detail

namespace api {

// The hash commands' overload sets (the list above), written once over the primitives of a
// store of hashes, of which this is a base: `Store` implements them (ExpiringStore's hash
// layer, ConcurrentStore, RedisStore), `F` is the field type and `V` the fields' value type.
// Call them on the store: `store.hdel(k, {"a", "b"})`.
template <class Store, class F, class V>
class HashCommands {
  using Names = std::initializer_list<F>;  // what a braced list of fields becomes
  using Pairs = std::initializer_list<std::pair<F, V>>;

 public:
  // ==== HSET with several fields, HDEL =================================================
  // HSET: returns the number of fields added (an overwritten field loses its TTL).
  template <class KK, class Range = Pairs>
  Result<std::size_t> hset(const KK& key, const Range& pairs) {
    return self().hset_range(key, std::begin(pairs), std::end(pairs));
  }
  // HDEL: returns the number of fields that were there.
  template <class KK, class Fields = Names>
  Result<std::size_t> hdel(const KK& key, const Fields& fields) {
    return self().hdel_range(key, std::begin(fields), std::end(fields));
  }
  // HGET, as a visit: fn(const V&) with what the store's hget() gives (ExpiringStore: the
  // stored value in place; RedisStore: a copy) if the field is live; whether it was. fn must
  // not call the store. ConcurrentStore has its own, which runs fn under the shard's lock.
  template <class KK, class FF, class Fn>
  Result<bool> hvisit(const KK& key, const FF& field, Fn&& fn) {
    auto v = self().hget(key, field);  // a Result of a pointer, or of an optional
    if (!v.ok()) return v.error();
    if (!*v) return false;
    fn(**v);
    return true;
  }

  // ==== HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT =====================================
  // HEXPIRE key seconds [NX|XX|GT|LT] FIELDS n field...: a TTL in seconds for each field. One
  // FieldReply code per field, in order: no_field (-2, also for every field of a missing key),
  // condition_not_met (0), set (1) or deleted (2: a TTL of 0). Errors (hash_fields.hpp) come
  // before any change.
  template <class KK, class Fields = Names>
  Result<std::vector<int>> hexpire(const KK& key, std::int64_t seconds, const Fields& fields,
                                   ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::hexpire(seconds, flags), fields);
  }
  // HPEXPIRE: hexpire() with a TTL in milliseconds.
  template <class KK, class Fields = Names>
  Result<std::vector<int>> hpexpire(const KK& key, std::int64_t ms, const Fields& fields,
                                    ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::hpexpire(ms, flags), fields);
  }
  // HEXPIREAT: the deadline as a Unix time in seconds; a time at or before now deletes the
  // fields (code 2). Replies as hexpire().
  template <class KK, class Fields = Names>
  Result<std::vector<int>> hexpireat(const KK& key, std::int64_t unix_seconds, const Fields& fields,
                                     ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::hexpireat(unix_seconds, flags), fields);
  }
  // HPEXPIREAT: hexpireat() in ms since the Unix epoch.
  template <class KK, class Fields = Names>
  Result<std::vector<int>> hpexpireat(const KK& key, std::int64_t unix_ms, const Fields& fields,
                                      ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::hpexpireat(unix_ms, flags), fields);
  }
  // The std::chrono forms: a duration for hexpire()/hpexpire(), a system_clock time point for
  // hexpireat()/hpexpireat().
  template <class KK, class Rep, class Period, class Fields = Names>
  Result<std::vector<int>> hexpire(const KK& key, std::chrono::duration<Rep, Period> ttl, const Fields& fields,
                                   ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::after(ttl, flags), fields);
  }
  // HPEXPIRE of a duration: the same call as hexpire() of it (both in ms, rounded up).
  template <class KK, class Rep, class Period, class Fields = Names>
  Result<std::vector<int>> hpexpire(const KK& key, std::chrono::duration<Rep, Period> ttl, const Fields& fields,
                                    ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::after(ttl, flags), fields);
  }
  // HEXPIREAT at a system_clock time point, taken in Unix ms rounded up.
  template <class KK, class D, class Fields = Names>
  Result<std::vector<int>> hexpireat(const KK& key, std::chrono::time_point<std::chrono::system_clock, D> when,
                                     const Fields& fields, ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::at(when, flags), fields);
  }
  // HPEXPIREAT at a system_clock time point: the same call as hexpireat() of it.
  template <class KK, class D, class Fields = Names>
  Result<std::vector<int>> hpexpireat(const KK& key, std::chrono::time_point<std::chrono::system_clock, D> when,
                                      const Fields& fields, ExpireFlags flags = ExpireFlags::None) {
    return codes(key, FieldExpireRequest::at(when, flags), fields);
  }
  // The same into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> hexpire(const KK& key, std::int64_t seconds, const Fields& fields, ExpireFlags flags, int* out) {
    return self().expire_fields(key, FieldExpireRequest::hexpire(seconds, flags), fields, out);
  }
  // hpexpire() into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> hpexpire(const KK& key, std::int64_t ms, const Fields& fields, ExpireFlags flags, int* out) {
    return self().expire_fields(key, FieldExpireRequest::hpexpire(ms, flags), fields, out);
  }
  // hexpireat() into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> hexpireat(const KK& key, std::int64_t unix_seconds, const Fields& fields, ExpireFlags flags, int* out) {
    return self().expire_fields(key, FieldExpireRequest::hexpireat(unix_seconds, flags), fields, out);
  }
  // hpexpireat() into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> hpexpireat(const KK& key, std::int64_t unix_ms, const Fields& fields, ExpireFlags flags, int* out) {
    return self().expire_fields(key, FieldExpireRequest::hpexpireat(unix_ms, flags), fields, out);
  }

  // ==== HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME =======================================
  // HTTL / HPTTL key FIELDS n field...: each field's remaining time, in seconds (rounded up) or
  // ms; HEXPIRETIME / HPEXPIRETIME: its deadline as a Unix time, in seconds (rounded up) or ms.
  // Per field, -1 (FieldReply::no_ttl) without a TTL and -2 (no_field) for no such field.
  template <class KK, class Fields = Names>
  Result<std::vector<std::int64_t>> httl(const KK& key, const Fields& fields) {
    return times(key, fields, FieldTimeQuery::ttl_s);
  }
  template <class KK, class Fields = Names>
  Result<std::vector<std::int64_t>> hpttl(const KK& key, const Fields& fields) {
    return times(key, fields, FieldTimeQuery::ttl_ms);
  }
  template <class KK, class Fields = Names>
  Result<std::vector<std::int64_t>> hexpiretime(const KK& key, const Fields& fields) {
    return times(key, fields, FieldTimeQuery::at_s);
  }
  template <class KK, class Fields = Names>
  Result<std::vector<std::int64_t>> hpexpiretime(const KK& key, const Fields& fields) {
    return times(key, fields, FieldTimeQuery::at_ms);
  }
  // The same into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> httl(const KK& key, const Fields& fields, std::int64_t* out) {
    return self().field_times(key, fields, FieldTimeQuery::ttl_s, out);
  }
  template <class KK, class Fields = Names>
  Result<void> hpttl(const KK& key, const Fields& fields, std::int64_t* out) {
    return self().field_times(key, fields, FieldTimeQuery::ttl_ms, out);
  }
  template <class KK, class Fields = Names>
  Result<void> hexpiretime(const KK& key, const Fields& fields, std::int64_t* out) {
    return self().field_times(key, fields, FieldTimeQuery::at_s, out);
  }
  template <class KK, class Fields = Names>
  Result<void> hpexpiretime(const KK& key, const Fields& fields, std::int64_t* out) {
    return self().field_times(key, fields, FieldTimeQuery::at_ms, out);
  }

  // ==== HGETEX / HGETDEL / HSETEX (Redis 8) ==============================================
  // HGETEX: the fields' values, then their TTLs changed as `ttl` says (only fields that were
  // there). Cause `hexpire`, `hpersist`, or `hdel` for a past time.
  template <class KK, class Fields = Names>
  Result<std::vector<std::optional<V>>> hgetex(const KK& key, const Fields& fields, const FieldTtl& ttl = FieldTtl::keep()) {
    std::vector<std::optional<V>> out(detail::field_count(fields));
    Result<std::size_t> r = self().getex_fields(key, fields, ttl, out.data());
    if (!r.ok()) return r.error();
    return out;
  }
  // The same into out[0 .. size(fields)), allocating nothing; returns the number found.
  template <class KK, class Fields = Names>
  Result<std::size_t> hgetex(const KK& key, const Fields& fields, const FieldTtl& ttl, std::optional<V>* out) {
    return self().getex_fields(key, fields, ttl, out);
  }
  // HGETDEL: the fields' values, then the fields deleted (cause `hdel`; the key with its last).
  template <class KK, class Fields = Names>
  Result<std::vector<std::optional<V>>> hgetdel(const KK& key, const Fields& fields) {
    std::vector<std::optional<V>> out(detail::field_count(fields));
    Result<std::size_t> r = self().getdel_fields(key, fields, out.data());
    if (!r.ok()) return r.error();
    return out;
  }
  // The same into out[0 .. size(fields)), allocating nothing; returns the number found.
  template <class KK, class Fields = Names>
  Result<std::size_t> hgetdel(const KK& key, const Fields& fields, std::optional<V>* out) {
    return self().getdel_fields(key, fields, out);
  }
  // HSETEX: writes every (field, value) pair with `ttl`, if `cond` holds (then true; false
  // when it does not, and nothing changes). Causes `hset`, then `hexpire` (a future time) or
  // `hdel` (a past one: the fields are written, then deleted).
  template <class KK, class Range = Pairs>
  Result<bool> hsetex(const KK& key, const Range& pairs, const FieldTtl& ttl = FieldTtl::persist(),
                      FieldCondition cond = FieldCondition::none) {
    return self().setex_range(key, std::begin(pairs), std::end(pairs), ttl, cond);
  }

  // ==== HPERSIST ========================================================================
  // HPERSIST key FIELDS n field...: removes the fields' TTLs. Per field: 1 removed (persisted),
  // -1 no TTL (no_ttl), -2 no such field (no_field). Cause `hpersist` if any was removed.
  template <class KK, class Fields = Names>
  Result<std::vector<int>> hpersist(const KK& key, const Fields& fields) {
    std::vector<int> out(detail::field_count(fields));
    Result<void> r = self().persist_fields(key, fields, out.data());
    if (!r.ok()) return r.error();
    return out;
  }
  // The same into out[0 .. size(fields)), allocating nothing.
  template <class KK, class Fields = Names>
  Result<void> hpersist(const KK& key, const Fields& fields, int* out) {
    return self().persist_fields(key, fields, out);
  }

 private:
  Store& self() noexcept { return static_cast<Store&>(*this); }

  template <class KK, class Fields>
  Result<std::vector<int>> codes(const KK& key, const FieldExpireRequest& req, const Fields& fields) {
    std::vector<int> out(detail::field_count(fields));
    Result<void> r = self().expire_fields(key, req, fields, out.data());
    if (!r.ok()) return r.error();
    return out;
  }
  template <class KK, class Fields>
  Result<std::vector<std::int64_t>> times(const KK& key, const Fields& fields, FieldTimeQuery q) {
    std::vector<std::int64_t> out(detail::field_count(fields));
    Result<void> r = self().field_times(key, fields, q, out.data());
    if (!r.ok()) return r.error();
    return out;
  }
};

}  // namespace api
}  // namespace expiring
