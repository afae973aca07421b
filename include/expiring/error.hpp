// expiring/error.hpp: typed errors and the Result<T> that carries them.
//
// The store never throws for an outcome a caller can expect. A missing key, a failed
// NX/XX/GT/LT condition or a refused rename are ordinary return values. What only a
// run-time value can make invalid (an expire time that overflows, a non-positive SET
// expiry, NX combined with GT in flags built at run time) comes back as an `Errc` inside a
// `Result`, and the keyspace is then exactly as it was before the call (a read that failed
// validation still counts its keyspace hit or miss, as Redis does).
#pragma once

#include <cstdint>
#include <optional>
#include <iosfwd>  // the stream operators are templates: <ostream> is the caller's
#include <stdexcept>
#include <utility>

#include "detail/attributes.hpp"

namespace expiring {

// Why a call was refused. Each maps to one Redis error reply (see redis/ for the strings).
enum class Errc : std::uint8_t {
  // An expire time that is not positive where Redis requires it (SET/GETEX EX/PX/EXAT/PXAT)
  // or whose conversion to absolute milliseconds overflows a signed 64-bit integer.
  // Redis: "ERR invalid expire time in '<command>' command".
  invalid_expire_time = 1,
  // ExpireFlags::NX together with XX, GT or LT.
  // Redis: "ERR NX and XX, GT or LT options at the same time are not compatible".
  nx_and_xx_gt_lt,
  // ExpireFlags::GT together with LT.
  // Redis: "ERR GT and LT options at the same time are not compatible".
  gt_and_lt,
  // rename()/renamenx() of a key that does not exist (or has expired). Redis: "ERR no such key".
  no_such_key,
  // copy() with the same key as source and destination.
  // Redis: "ERR source and destination objects are the same".
  same_key,
  // A setting outside its documented range (for example active-expire effort 0 or 11).
  out_of_range,
  // A write refused because used memory is above Options::maxmemory and the eviction policy
  // could not free enough (noeviction, or a volatile-* policy with no volatile keys).
  // Redis: "OOM command not allowed when used memory > 'maxmemory'.".
  out_of_memory,
  // incr_by() whose result does not fit the value type (a signed 64-bit integer at most).
  // Redis: "ERR increment or decrement would overflow".
  overflow,
  // A field TTL below zero (HEXPIRE family). Redis: "ERR invalid expire time, must be >= 0".
  // A field deadline beyond Redis 7.4's cap (2^46 - 1 ms) is invalid_expire_time, as Redis.
  negative_expire_time,
  // hincrby() of a field whose value is not a decimal 64-bit integer.
  // Redis: "ERR hash value is not an integer".
  not_an_integer,
  // hincrbyfloat() of a field whose value is not a number (Redis's string2ld).
  // Redis: "ERR hash value is not a float".
  not_a_float,

  // ---- RedisStore only (redis_store.hpp) ------------------------------------------------
  // The in-process stores never produce these. RedisStore reports them by throwing
  // expiring::RedisError, whose what() keeps hiredis's or Redis's own text; a Result of
  // RedisStore carries only the codes above, as ExpiringStore's does.
  //
  // The connection failed: refused, reset, closed by the server, or a failed write or read.
  // When the command had been sent, its outcome is unknown (it may have run).
  io_error,
  // Connecting, a command's reply, or a free pooled connection took longer than its timeout.
  timeout,
  // The server sent something that is not the reply the command has (a RESP3 type, an
  // unexpected reply type), or a stored value the codec cannot decode.
  protocol_error,
  // Redis: "WRONGTYPE Operation against a key holding the wrong kind of value". Also from an
  // in-process store whose values hold several kinds (redis::Value: a string or a hash), as
  // a Result of its hash members.
  wrong_type,
  // Redis Cluster: the keys of one multi-key call hash to different slots ("CROSSSLOT ...").
  crossslot,
  // Redis Cluster: "CLUSTERDOWN ..." outlasted the retries.
  cluster_down,
  // Redis Cluster: MOVED / ASK / TRYAGAIN redirections exceeded RedisOptions::max_redirects.
  too_many_redirects,
  // AUTH refused, or a command refused for lack of it or of an ACL permission
  // ("WRONGPASS ...", "NOAUTH ...", "NOPERM ...").
  auth_failed,
  // Any other error reply of the server (its text is in what()).
  server_error,

  // ---- Files: snapshots and the append-only log (snapshot.hpp, append_log.hpp) -----------
  // A file that cannot be opened, written, synced or renamed is io_error (above), with the
  // system's errno in the error's message.
  // A file (or stream) whose bytes are not what its format says: a bad magic, a checksum
  // that does not match, a record that cannot be decoded. The error names the offset.
  corrupt_file,
  // A file that ends before its last record does (a torn write). The error names the offset.
  truncated_file,
  // A file written by a format version this build does not read.
  unsupported_version,
  // apply() of a record the store cannot replay (a missing key or value, a deadline out of
  // range).
  invalid_record,
  // A file holds a value of a type the store does not hold: an RDB's list, set, sorted set,
  // stream or module value, or a hash for a store of strings (rdb.hpp). The error names the
  // key and the type.
  unsupported_type,

  // ---- DUMP and RESTORE (rdb.hpp) ----------------------------------------------------------
  // A DUMP payload shorter than its footer, of an RDB version newer than this build reads,
  // or whose CRC-64 does not match. Redis: "ERR DUMP payload version or checksum are wrong".
  // (A payload whose footer is sound but whose value cannot be decoded is corrupt_file,
  // Redis's "ERR Bad data format".)
  bad_dump_payload,
  // restore() of a key that exists, without RestoreOptions::replace.
  // Redis: "BUSYKEY Target key name already exists.".
  busy_key,
};

// A short, stable description of the error (not Redis's reply text).
constexpr const char* to_string(Errc e) noexcept {
  switch (e) {
    case Errc::invalid_expire_time: return "invalid expire time";
    case Errc::nx_and_xx_gt_lt: return "NX and XX, GT or LT options at the same time are not compatible";
    case Errc::gt_and_lt: return "GT and LT options at the same time are not compatible";
    case Errc::no_such_key: return "no such key";
    case Errc::same_key: return "source and destination objects are the same";
    case Errc::out_of_range: return "value out of range";
    case Errc::out_of_memory: return "command not allowed when used memory > 'maxmemory'";
    case Errc::overflow: return "increment or decrement would overflow";
    case Errc::negative_expire_time: return "invalid expire time, must be >= 0";
    case Errc::not_an_integer: return "hash value is not an integer";
    case Errc::not_a_float: return "hash value is not a float";
    case Errc::io_error: return "I/O error";
    case Errc::timeout: return "timed out";
    case Errc::protocol_error: return "unexpected reply";
    case Errc::wrong_type: return "operation against a key holding the wrong kind of value";
    case Errc::crossslot: return "keys in request don't hash to the same slot";
    case Errc::cluster_down: return "the cluster is down";
    case Errc::too_many_redirects: return "too many cluster redirections";
    case Errc::auth_failed: return "authentication or permission refused";
    case Errc::server_error: return "error reply from the server";
    case Errc::corrupt_file: return "corrupt file";
    case Errc::truncated_file: return "truncated file";
    case Errc::unsupported_version: return "unsupported file format version";
    case Errc::invalid_record: return "invalid change record";
    case Errc::unsupported_type: return "a value of a type the store does not hold";
    case Errc::bad_dump_payload: return "DUMP payload version or checksum are wrong";
    case Errc::busy_key: return "target key name already exists";
  }
  return "unknown error";
}

// Writes to_string(e). The stream operators are templates: the caller includes `<ostream>`.
template <class Ch, class Tr>
std::basic_ostream<Ch, Tr>& operator<<(std::basic_ostream<Ch, Tr>& os, Errc e) {
  return os << to_string(e);
}

// Thrown by Result<T>::value() when the result holds an error: reading a value that is not
// there is a programming error, not an expected outcome. what() is to_string(error()).
class BadResultAccess : public std::logic_error {
 public:
  // For the error `e` the Result held.
  explicit BadResultAccess(Errc e) : std::logic_error(to_string(e)), error_(e) {}
  // The error the Result held.
  Errc error() const noexcept { return error_; }

 private:
  Errc error_;
};

namespace detail {
// The throw of Result's value() on an error, out of line and not a template: the check a
// caller inlines is one test and a call it never makes (a Result tested with ok() first
// compiles to no check at all), and the exception's message is built in one place.
[[noreturn]] EXPIRING_NOINLINE inline void throw_bad_result(Errc e) { throw BadResultAccess(e); }
}  // namespace detail

// Either a T or an Errc, [[nodiscard]]: a call that can fail says so in its type, and dropping
// its result is a warning. To turn an error into an exception write `.value()` (throws
// BadResultAccess); to ignore one on purpose, `(void)`. Deliberately has no `operator bool`: for Result<bool> it would be
// ambiguous whether it tests "no error" or the value. Use ok(), value(), error(), or compare:
// `store.expire(k, 10) == true`, `store.set(k, v, Ex{0}) == Errc::invalid_expire_time`.
template <class T>
class [[nodiscard]] Result {
 public:
  // The type of the value a successful Result holds.
  using value_type = T;

  // Success, implicitly from a value: a function returning a Result can `return value;`.
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // Failure, implicitly from an Errc: `return Errc::invalid_expire_time;`.
  Result(Errc error) : error_(error) {}          // NOLINT: implicit by design

  // Whether the result holds a value (no error).
  bool ok() const noexcept { return value_.has_value(); }
  // The error; unspecified (Errc{}) when ok().
  Errc error() const noexcept { return error_; }

  // The value; throws BadResultAccess when the result holds an error.
  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  // The value, moved out of a Result about to go (a call's `.value()`); throws as above.
  T&& value() && { check(); return std::move(*value_); }
  // `*r` and `r->`: value(), checked the same way (unlike std::optional's, never unchecked).
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // A copy of the value, or `fallback` converted to T when the result holds an error.
  template <class U>
  T value_or(U&& fallback) const& { return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback)); }

  // `r == v`: ok() and the value equals `v`; `r == e`: the result holds the error `e`. `!=` is
  // the negation of `==`.
  friend bool operator==(const Result& r, const T& v) { return r.ok() && *r.value_ == v; }
  friend bool operator!=(const Result& r, const T& v) { return !(r == v); }
  friend bool operator==(const Result& r, Errc e) { return !r.ok() && r.error_ == e; }
  friend bool operator!=(const Result& r, Errc e) { return !(r == e); }
  // Writes the value (the word `value` for a T without an `operator<<`), or `error(<text>)`
  // with to_string(error()) as the text.
  template <class Ch, class Tr>
  friend std::basic_ostream<Ch, Tr>& operator<<(std::basic_ostream<Ch, Tr>& os, const Result& r) {
    if (!r.ok()) return os << "error(" << r.error_ << ")";
    return print(os, *r.value_, 0);
  }

 private:
  void check() const {
    if (EXPIRING_UNLIKELY(!value_)) detail::throw_bad_result(error_);
  }
  template <class Os, class U>
  static auto print(Os& os, const U& v, int) -> decltype(os << v) { return os << v; }
  template <class Os, class U>
  static Os& print(Os& os, const U&, long) { return os << "value"; }

  std::optional<T> value_;
  Errc error_{};
};

// Result<bool> as one 16-bit word (the value or the error in the low byte, "ok" in the high
// one), built and copied whole: assembled byte by byte, as the generic layout is, a copy that
// follows at once reads it back through a failed store-to-load forward (~12 cycles; measured
// in ConcurrentStore::set(), where the shard's lock hands the result on).
template <>
class [[nodiscard]] Result<bool> {
 public:
  // The type of the value a successful Result holds: bool.
  using value_type = bool;

  // Success, implicitly from a bool, as Result<T>'s.
  Result(bool value) : bits_(static_cast<std::uint16_t>(kOk | (value ? 1u : 0u))) {}  // NOLINT: implicit by design
  // Failure, implicitly from an Errc, as Result<T>'s.
  Result(Errc error) : bits_(static_cast<std::uint8_t>(error)) {}  // NOLINT: implicit by design

  // Whether the result holds a value (no error).
  bool ok() const noexcept { return (bits_ & kOk) != 0; }
  // The error; Errc{} when ok().
  Errc error() const noexcept { return ok() ? Errc{} : static_cast<Errc>(bits_ & 0xFFu); }

  // The value; throws BadResultAccess when the result holds an error.
  bool value() const {
    if (EXPIRING_UNLIKELY(!ok())) detail::throw_bad_result(error());
    return (bits_ & 1u) != 0;
  }
  // `*r`: value(), checked the same way.
  bool operator*() const { return value(); }
  // The value, or `fallback` converted to bool when the result holds an error.
  template <class U>
  bool value_or(U&& fallback) const { return ok() ? (bits_ & 1u) != 0 : static_cast<bool>(std::forward<U>(fallback)); }

  // `r == v`: ok() and the value is `v` (`store.expire(k, 10) == true`); `r == e`: the result
  // holds the error `e`. `!=` is the negation of `==`.
  friend bool operator==(const Result& r, bool v) { return r.bits_ == (kOk | (v ? 1u : 0u)); }
  friend bool operator!=(const Result& r, bool v) { return !(r == v); }
  friend bool operator==(const Result& r, Errc e) { return !r.ok() && r.error() == e; }
  friend bool operator!=(const Result& r, Errc e) { return !(r == e); }
  // Writes the value as the stream writes a bool (`1`/`0`, or `true`/`false` under
  // std::boolalpha), or `error(<text>)` with to_string(error()) as the text.
  template <class Ch, class Tr>
  friend std::basic_ostream<Ch, Tr>& operator<<(std::basic_ostream<Ch, Tr>& os, const Result& r) {
    if (!r.ok()) return os << "error(" << r.error() << ")";
    return os << ((r.bits_ & 1u) != 0);
  }

 private:
  static constexpr unsigned kOk = 0x100u;
  std::uint16_t bits_;
};

// Success or an Errc, for calls with nothing else to return (Redis replies "OK").
template <>
class [[nodiscard]] Result<void> {
 public:
  // Success by default (`return {};`), or failure from an Errc (implicit: `return Errc::...;`).
  Result() = default;
  Result(Errc error) : error_(error), ok_(false) {}  // NOLINT: implicit by design

  // Whether the call succeeded.
  bool ok() const noexcept { return ok_; }
  // The error; Errc{} when ok().
  Errc error() const noexcept { return error_; }
  // Throws BadResultAccess when the result holds an error, and does nothing otherwise: `.value()`
  // turns a call's error into an exception.
  void value() const {
    if (EXPIRING_UNLIKELY(!ok_)) detail::throw_bad_result(error_);
  }

  // `r == e`: the result holds the error `e`. `!=` is the negation of `==`.
  friend bool operator==(const Result& r, Errc e) { return !r.ok_ && r.error_ == e; }
  friend bool operator!=(const Result& r, Errc e) { return !(r == e); }
  // Writes `ok`, or `error(<text>)` with to_string(error()) as the text.
  template <class Ch, class Tr>
  friend std::basic_ostream<Ch, Tr>& operator<<(std::basic_ostream<Ch, Tr>& os, const Result& r) {
    return r.ok_ ? os << "ok" : os << "error(" << r.error_ << ")";
  }

 private:
  Errc error_{};
  bool ok_ = true;
};

}  // namespace expiring
