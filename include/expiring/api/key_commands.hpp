// expiring/api/key_commands.hpp: the overload sets every store shares, written once.
//
// ExpiringStore, ConcurrentStore and RedisStore answer the same Redis commands, and Redis's
// commands come in families: EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT are one operation with a
// unit and a base; SETNX, SETEX, PSETEX and GETSET are SET with options. Each family is
// written here once, as thin overloads over a few primitives that each store implements its
// own way (a probe of its keyspace, a shard's lock, a round trip to Redis). Code written
// against these members compiles against any of the three stores.
//
// The members (KeyCommands<Store, V>, a base of each store):
//
//   expire(k, seconds | duration [, flags] [, jitter])     EXPIRE   (a duration: in ms)
//   pexpire(k, ms | duration [, flags] [, jitter])         PEXPIRE
//   expireat(k, unix_seconds | system_clock time point [, flags])    EXPIREAT
//   pexpireat(k, unix_ms | system_clock time point [, flags])        PEXPIREAT
//   pexpireat_if_equal(k, expected, unix_ms | time point [, flags])  the lock-lease renewal
//   set(k, v, cond)      SET NX|XX without expiry           setnx(k, v)     SETNX
//   setex(k, seconds | duration, v)                          SETEX
//   psetex(k, ms | duration, v)                              PSETEX
//   getset(k, v)                                             GETSET
//   get_many(keys, std::optional<V>* out)                    MGET, by copy (below)
//
// Their contract is each store's; what they share (docs/semantics.md B §2.1, D3, D6):
// * EXPIRE family: true when the TTL was set or the key deleted (a deadline at or before now
//   deletes it, cause `del`), false when the key is missing or a condition failed. Errors,
//   checked before the key is looked up, in Redis's order: Errc::nx_and_xx_gt_lt and
//   Errc::gt_and_lt for flag sets Redis's syntax cannot express, Errc::out_of_range for an
//   invalid per-call Jitter, Errc::invalid_expire_time when the deadline overflows. No TTL
//   counts as infinite for GT/LT. EXPIRE and PEXPIRE jitter a positive TTL (Options::ttl_jitter
//   or the `jitter` argument); GT/LT compare the jittered deadline.
// * std::chrono values become ms rounded up (1 us is 1 ms); one beyond the int64 range of ms
//   is Errc::invalid_expire_time, after the flag errors. expire() and pexpire() of a duration
//   are the same call.
// * setex/psetex: Errc::invalid_expire_time for a TTL <= 0 or one that overflows; then as set().
// * get_many's convention, for every store: `out` has room for size(keys) elements; out[i]
//   becomes a copy of keys[i]'s live value or nullopt; the return value is the number of
//   hits. A store may answer it faster than the loop below (ConcurrentStore groups keys by
//   shard, RedisStore pipelines MGET); ExpiringStore also has a form without copies,
//   get_many(keys, const V** out).
//
// The primitives a store provides (public: this base is nobody's friend):
//   Result<bool> set(KK&&, VV&&, SetExpiry, SetCond);
//   Result<std::optional<V>> set_get(KK&&, VV&&, SetExpiry, SetCond);
//   Result<bool> expire_request(const KK&, const ExpireRequest&);
//   Result<bool> expire_request_if_equal(const KK&, const VV& expected, const ExpireRequest&);
//   get(const KK&), returning a pointer or a std::optional: get_many's default.
// A store that declares a member of one of these names itself (set, get_many) brings the
// overloads here into scope with a using-declaration.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "../detail/duration.hpp"
#include "../error.hpp"
#include "../options.hpp"

namespace expiring {

// One call of the EXPIRE family, as every overload above reduces it: what a store's
// expire_request() primitive takes. A command layer that has parsed EXPIRE's arguments can
// build one directly.
struct ExpireRequest {
  std::int64_t amount = 0;  // a TTL (relative) or a Unix time (absolute), in `unit`
  detail::TimeUnit unit = detail::TimeUnit::seconds;  // seconds (EXPIRE, EXPIREAT) or ms
  detail::TimeBase base = detail::TimeBase::relative;  // relative (EXPIRE, PEXPIRE) or absolute
  ExpireFlags flags = ExpireFlags::None;               // NX, XX, GT, LT, XX|GT, XX|LT or None
  Jitter jitter{};          // relative TTLs only
  bool overflowed = false;  // a std::chrono value beyond the int64 range of ms

  // The four commands.
  static ExpireRequest expire(std::int64_t seconds, ExpireFlags f = ExpireFlags::None, Jitter j = {}) {
    return {seconds, detail::TimeUnit::seconds, detail::TimeBase::relative, f, j, false};
  }
  static ExpireRequest pexpire(std::int64_t ms, ExpireFlags f = ExpireFlags::None, Jitter j = {}) {
    return {ms, detail::TimeUnit::ms, detail::TimeBase::relative, f, j, false};
  }
  static ExpireRequest expireat(std::int64_t unix_seconds, ExpireFlags f = ExpireFlags::None) {
    return {unix_seconds, detail::TimeUnit::seconds, detail::TimeBase::absolute, f, Jitter{}, false};
  }
  static ExpireRequest pexpireat(std::int64_t unix_ms, ExpireFlags f = ExpireFlags::None) {
    return {unix_ms, detail::TimeUnit::ms, detail::TimeBase::absolute, f, Jitter{}, false};
  }
  // A duration or a time point, in ms rounded up (overflowed when beyond the range).
  template <class Rep, class Period>
  static ExpireRequest after(std::chrono::duration<Rep, Period> ttl, ExpireFlags f, Jitter j) {
    const detail::CheckedMs ms = detail::to_ms(ttl);
    return {ms.ms, detail::TimeUnit::ms, detail::TimeBase::relative, f, j, !ms.ok};
  }
  // A system_clock time point: PEXPIREAT of its Unix time in ms, rounded up; never jittered.
  template <class D>
  static ExpireRequest at(std::chrono::time_point<std::chrono::system_clock, D> when, ExpireFlags f) {
    const detail::CheckedMs ms = detail::to_unix_ms(when);
    return {ms.ms, detail::TimeUnit::ms, detail::TimeBase::absolute, f, Jitter{}, !ms.ok};
  }
};

namespace api {

// The key commands every store shares (the list above), written once over the store's
// primitives: a base of ExpiringStore, ConcurrentStore and RedisStore, `Store` being the store
// itself and `V` its value type. Call them on the store: `store.expire(k, 30)`.
template <class Store, class V>
class KeyCommands {
 public:
  // ==== EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT ==========================================
  // EXPIRE key seconds [NX|XX|GT|LT]: a TTL in seconds, jittered if positive (`jitter`, by
  // default the store's ttl_jitter option). True when the TTL was set or the key deleted (a TTL <= 0),
  // false when the key is missing or a condition failed; errors as the list above says.
  template <class KK>
  Result<bool> expire(const KK& key, std::int64_t seconds, ExpireFlags flags = ExpireFlags::None,
                      Jitter jitter = {}) {
    return self().expire_request(key, ExpireRequest::expire(seconds, flags, jitter));
  }
  // EXPIRE without flags, with this call's jitter: `expire(k, 60, Jitter::percent(10))`.
  template <class KK>
  Result<bool> expire(const KK& key, std::int64_t seconds, Jitter jitter) {
    return self().expire_request(key, ExpireRequest::expire(seconds, ExpireFlags::None, jitter));
  }
  // PEXPIRE key ms [NX|XX|GT|LT]: expire() with a TTL in milliseconds.
  template <class KK>
  Result<bool> pexpire(const KK& key, std::int64_t ms, ExpireFlags flags = ExpireFlags::None, Jitter jitter = {}) {
    return self().expire_request(key, ExpireRequest::pexpire(ms, flags, jitter));
  }
  // PEXPIRE without flags, with this call's jitter.
  template <class KK>
  Result<bool> pexpire(const KK& key, std::int64_t ms, Jitter jitter) {
    return self().expire_request(key, ExpireRequest::pexpire(ms, ExpireFlags::None, jitter));
  }
  // EXPIREAT key unix-time-seconds [NX|XX|GT|LT]: the deadline as a Unix time in seconds,
  // never jittered; a time at or before now deletes the key. Replies as expire().
  template <class KK>
  Result<bool> expireat(const KK& key, std::int64_t unix_seconds, ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request(key, ExpireRequest::expireat(unix_seconds, flags));
  }
  // PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]: expireat() in ms since the Unix epoch.
  template <class KK>
  Result<bool> pexpireat(const KK& key, std::int64_t unix_ms, ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request(key, ExpireRequest::pexpireat(unix_ms, flags));
  }
  // The std::chrono forms: a duration for expire()/pexpire() (`expire(k, 30min)`), a
  // system_clock time point for expireat()/pexpireat().
  template <class KK, class Rep, class Period>
  Result<bool> expire(const KK& key, std::chrono::duration<Rep, Period> ttl, ExpireFlags flags = ExpireFlags::None,
                      Jitter jitter = {}) {
    return self().expire_request(key, ExpireRequest::after(ttl, flags, jitter));
  }
  // expire() of a duration without flags, with this call's jitter.
  template <class KK, class Rep, class Period>
  Result<bool> expire(const KK& key, std::chrono::duration<Rep, Period> ttl, Jitter jitter) {
    return self().expire_request(key, ExpireRequest::after(ttl, ExpireFlags::None, jitter));
  }
  // PEXPIRE of a duration: the same call as expire() of it (both in ms, rounded up).
  template <class KK, class Rep, class Period>
  Result<bool> pexpire(const KK& key, std::chrono::duration<Rep, Period> ttl, ExpireFlags flags = ExpireFlags::None,
                       Jitter jitter = {}) {
    return self().expire_request(key, ExpireRequest::after(ttl, flags, jitter));
  }
  // pexpire() of a duration without flags, with this call's jitter.
  template <class KK, class Rep, class Period>
  Result<bool> pexpire(const KK& key, std::chrono::duration<Rep, Period> ttl, Jitter jitter) {
    return self().expire_request(key, ExpireRequest::after(ttl, ExpireFlags::None, jitter));
  }
  // EXPIREAT at a system_clock time point, taken in Unix ms rounded up (PEXPIREAT's precision).
  template <class KK, class D>
  Result<bool> expireat(const KK& key, std::chrono::time_point<std::chrono::system_clock, D> when,
                        ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request(key, ExpireRequest::at(when, flags));
  }
  // PEXPIREAT at a system_clock time point: the same call as expireat() of it.
  template <class KK, class D>
  Result<bool> pexpireat(const KK& key, std::chrono::time_point<std::chrono::system_clock, D> when,
                         ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request(key, ExpireRequest::at(when, flags));
  }

  // The lock-lease renewal `if GET(k) == expected then PEXPIREAT(k, unix_ms, flags)`, as one
  // step: true when the TTL was set (or the key deleted by a deadline at or before now), false
  // when the key is missing, its value differs or a flag condition failed. Errors as
  // pexpireat(), checked first; nothing changes then.
  template <class KK, class VV>
  Result<bool> pexpireat_if_equal(const KK& key, const VV& expected, std::int64_t unix_ms,
                                  ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request_if_equal(key, expected, ExpireRequest::pexpireat(unix_ms, flags));
  }
  // The same with a system_clock time point, in Unix ms rounded up.
  template <class KK, class VV, class D>
  Result<bool> pexpireat_if_equal(const KK& key, const VV& expected,
                                  std::chrono::time_point<std::chrono::system_clock, D> when,
                                  ExpireFlags flags = ExpireFlags::None) {
    return self().expire_request_if_equal(key, expected, ExpireRequest::at(when, flags));
  }

  // ==== SET with options =================================================================
  // SET NX|XX without expiry.
  template <class KK, class VV>
  Result<bool> set(KK&& key, VV&& value, SetCond cond) {
    return self().set(std::forward<KK>(key), std::forward<VV>(value), SetExpiry{}, cond);
  }
  // SETNX: set only if absent; true if set (false also when refused for memory).
  template <class KK, class VV>
  [[nodiscard]] bool setnx(KK&& key, VV&& value) {
    return self().set(std::forward<KK>(key), std::forward<VV>(value), SetExpiry{}, SetCond::NX) == true;
  }
  // SETEX key seconds value.
  template <class KK, class VV>
  Result<void> setex(KK&& key, std::int64_t seconds, VV&& value) {
    return status_of(self().set(std::forward<KK>(key), std::forward<VV>(value), Ex{seconds}, SetCond::Always));
  }
  // PSETEX key ms value.
  template <class KK, class VV>
  Result<void> psetex(KK&& key, std::int64_t ms, VV&& value) {
    return status_of(self().set(std::forward<KK>(key), std::forward<VV>(value), Px{ms}, SetCond::Always));
  }
  // The same with a std::chrono duration (`setex(k, 30s, v)`), in ms rounded up.
  template <class KK, class Rep, class Period, class VV>
  Result<void> setex(KK&& key, std::chrono::duration<Rep, Period> ttl, VV&& value) {
    return status_of(self().set(std::forward<KK>(key), std::forward<VV>(value), Px{ttl}, SetCond::Always));
  }
  // psetex() of a duration: the same call as setex() of it.
  template <class KK, class Rep, class Period, class VV>
  Result<void> psetex(KK&& key, std::chrono::duration<Rep, Period> ttl, VV&& value) {
    return status_of(self().set(std::forward<KK>(key), std::forward<VV>(value), Px{ttl}, SetCond::Always));
  }
  // GETSET: stores the value without TTL and returns the previous live value (nullopt if
  // none). Errors as set(); then nothing changes.
  template <class KK, class VV>
  Result<std::optional<V>> getset(KK&& key, VV&& value) {
    return self().set_get(std::forward<KK>(key), std::forward<VV>(value), SetExpiry{}, SetCond::Always);
  }

  // ==== MGET, by copy ====================================================================
  // MGET: out[i] becomes a copy of keys[i]'s live value or nullopt (`out` has room for
  // size(keys) elements); returns the number of hits. One get() per key, unless the store
  // has a faster get_many of its own (the list above).
  template <class Keys>
  std::size_t get_many(const Keys& keys, std::optional<V>* out) {
    std::size_t hits = 0;
    for (const auto& k : keys) {
      auto v = self().get(k);
      hits += v ? std::size_t{1} : std::size_t{0};
      *out++ = v ? std::optional<V>(*v) : std::nullopt;
    }
    return hits;
  }

 protected:
  KeyCommands() = default;

 private:
  Store& self() noexcept { return static_cast<Store&>(*this); }
  static Result<void> status_of(const Result<bool>& r) {
    if (!r.ok()) return r.error();
    return {};
  }
};

}  // namespace api
}  // namespace expiring
