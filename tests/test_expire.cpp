// tests/test_expire.cpp: EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT and their NX / XX / GT / LT
// flags: semantics.md Part B §5.B (cases 12-36) and §5.C (cases 37-59), §2.1, decisions D3,
// D6, D13.
//
// Not expressible in the typed API (they belong to the Redis command layer, tested there):
//   case 25 (non-integer TTL strings: "", 1.5, +5, 010, -0, abc), the option parsing of case 32
//   (unknown option, options checked before the number), case 34 (arity), case 36's
//   case-insensitivity, and case 51 (unsupported options). Their typed equivalents are here:
//   invalid flag sets built at run time give an Errc before the number or the key is looked at,
//   and every error leaves the store exactly as it was.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using expiring::Errc;
using expiring::Ex;
using expiring::ExpireFlags;
using expiring::KeyEventCause;
using expiring::Px;
using ttltest::Fx;
using ttltest::kMax;
using ttltest::kMin;

namespace {
constexpr ExpireFlags NX = ExpireFlags::NX;
constexpr ExpireFlags XX = ExpireFlags::XX;
constexpr ExpireFlags GT = ExpireFlags::GT;
constexpr ExpireFlags LT = ExpireFlags::LT;
}  // namespace

// ==== B. EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT ==============================================

TEMPLATE_TEST_CASE("expire: a TTL can be set several times (case 12)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "foobar") == true);
  f.take_events();
  CHECK(f.store.expire(x, 5) == true);
  CHECK(f.store.ttl(x) == 5);
  CHECK(f.store.expire(x, 10) == true);
  CHECK(f.store.ttl(x) == 10);
  CHECK(f.store.pexpiretime(x) == t0 + 10'000);
  CHECK(f.store.size() == 1);
  CHECK(f.store.expires_size() == 1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expire, x}, {KeyEventCause::expire, x}}));
}

TEMPLATE_TEST_CASE("expire: the key is readable until its deadline and gone after (case 13)", "[expire][B]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "foobar") == true);
  CHECK(f.store.expire(x, 2) == true);
  f.at(2000);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "foobar");
  f.at(2100);
  CHECK(f.store.get(x) == nullptr);
  CHECK_FALSE(f.store.exists(x));
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("expire: an in-place update keeps the TTL (case 14)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "foo") == true);
  // 1000 s does not fit into the last minute: 10 s there.
  const std::int64_t secs = f.at_end() ? 10 : 1000;
  if (f.at_end()) {
    f.expect_error_unchanged(x, Errc::invalid_expire_time, [&] { return f.store.expire(x, 1000); });
  }
  CHECK(f.store.expire(x, secs) == true);
  f.take_events();
  CHECK(f.store.modify(x, [](std::string& v) { v += "bar"; }));
  CHECK(f.store.ttl(x) == secs);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "foobar");
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::update, x}}));
}

TEMPLATE_TEST_CASE("expireat: behaves like EXPIRE (case 15)", "[expireat][B]", TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "foo") == true);
  CHECK(f.store.expireat(x, 1015) == true);
  CHECK(f.store.ttl(x) == 15);
  CHECK(f.store.pexpiretime(x) == 1'015'000);
}

TEMPLATE_TEST_CASE("pexpire: sets a sub-second TTL (case 16)", "[pexpire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "v") == true);
  CHECK(f.store.pexpire(x, 100) == true);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "v");
  CHECK(f.store.pttl(x) == 100);
  f.at(100);
  CHECK(f.store.get(x) != nullptr);
  f.at(101);
  CHECK(f.store.get(x) == nullptr);
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("pexpireat: sets a sub-second deadline (case 17)", "[pexpireat][B]", TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kT0};
  const auto x = f.key(0);
  REQUIRE(f.store.set(x, "v") == true);
  CHECK(f.store.pexpireat(x, 1'000'200) == true);
  REQUIRE(f.store.get(x) != nullptr);
  CHECK(*f.store.get(x) == "v");
  f.at(200);
  CHECK(f.store.get(x) != nullptr);
  f.at(201);
  CHECK(f.store.get(x) == nullptr);
}

TEMPLATE_TEST_CASE("expire: 0 deletes the key at once, as a deletion (case 18, D3)", "[expire][B]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  f.take_events();
  CHECK(f.store.expire(k, 0) == true);
  CHECK(f.store.size() == 0);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.ttl(k) == -2);
  CHECK(f.store.stats().expired_keys == 0);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::del, k}}));
  // PEXPIRE 0 too, on a volatile key.
  REQUIRE(f.store.set(k, "v", Px{50}) == true);
  CHECK(f.store.pexpire(k, 0) == true);
  CHECK(f.store.size() == 0);
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("expire: a negative TTL deletes the key (case 19)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.expire(k, -10) == true);
  CHECK(f.store.ttl(k) == -2);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.pexpire(k, -1) == true);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("pexpireat: a deadline equal to now deletes (case 20)", "[pexpireat][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();  // case 20 uses T0: PEXPIREAT k 1000000
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  f.take_events();
  CHECK(f.store.pexpireat(k, t0) == true);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.size() == 0);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::del, k}}));
}

TEMPLATE_TEST_CASE("pexpireat: a deadline 1 ms ahead keeps the key for 1 ms (case 21)", "[pexpireat][B]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();  // case 21 uses T0: PEXPIREAT k 1000001
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.pexpireat(k, t0 + 1) == true);
  CHECK(f.store.pttl(k) == 1);
  f.at(1);
  REQUIRE(f.store.get(k) != nullptr);
  CHECK(*f.store.get(k) == "v");
  f.at(2);
  CHECK(f.store.get(k) == nullptr);
  CHECK(f.store.stats().expired_keys == 1);
}

TEMPLATE_TEST_CASE("expireat: 0 deletes (case 22)", "[expireat][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();  // 0 is at or before every start
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.expireat(k, 0) == true);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("expire: a missing key replies 0 with any flag (case 23)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto none = f.key(0);
  if (f.at_end()) {
    // The overflow error wins over "missing key" (semantics.md §2.1 steps 3-4).
    for (ExpireFlags fl : {ExpireFlags::None, NX, XX, GT, LT}) {
      f.expect_error_unchanged(none, Errc::invalid_expire_time, [&] { return f.store.expire(none, 100, fl); });
    }
  }
  const std::int64_t s = f.sec(100);
  CHECK(f.store.expire(none, s) == false);
  CHECK(f.store.expire(none, s, NX) == false);
  CHECK(f.store.expire(none, s, XX) == false);
  CHECK(f.store.expire(none, s, GT) == false);
  CHECK(f.store.expire(none, s, LT) == false);
  CHECK(f.store.expire(none, -1) == false);
  CHECK(f.store.pexpire(none, 100) == false);
  CHECK(f.store.expireat(none, 1) == false);
  CHECK(f.store.pexpireat(none, kMax) == false);
  CHECK(f.store.size() == 0);
  CHECK(f.events.empty());
}

TEMPLATE_TEST_CASE("expire: does not resurrect a stale key (case 24)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.pexpire(foo, 500) == true);
  f.take_events();
  f.at(1000);
  CHECK(f.store.expire(foo, 10) == false);
  CHECK_FALSE(f.store.exists(foo));
  CHECK(f.store.size() == 0);
  // The write lookup reclaimed it as an expiry.
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expired, foo}}));
}

TEMPLATE_TEST_CASE("expire: seconds that overflow milliseconds are an error (case 26)", "[expire][B][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();  // the conversion overflows at any start
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  for (std::int64_t v : {std::int64_t{9'223'372'036'854'776}, std::int64_t{10'000'000'000'000'000},
                         std::int64_t{18'446'744'073'709'561}, kMax}) {
    CAPTURE(v);
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expire(foo, v); });
    // EXPIREAT converts the same way (base time 0).
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expireat(foo, v); });
  }
  CHECK(f.store.ttl(foo) == -1);
  REQUIRE(f.store.get(foo) != nullptr);
  CHECK(*f.store.get(foo) == "bar");
}

TEST_CASE("expire: adding the base time may overflow (case 27)", "[expire][B][D6]") {
  Fx<ttltest::StringKeys> f{ttltest::kT0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  f.expect_error_unchanged(foo, Errc::invalid_expire_time,
                           [&] { return f.store.expire(foo, 9'223'372'036'853'776); });
  CHECK(f.store.expire(foo, 9'223'372'036'853'775) == true);
  CHECK(f.store.pexpiretime(foo) == 9'223'372'036'854'775'000);
}

TEMPLATE_TEST_CASE("expire: the largest TTL that fits at any start (case 27 generalised)", "[expire][B][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  const std::int64_t max_s = (kMax - t0) / 1000;  // the largest whole second left
  CAPTURE(max_s);
  f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expire(foo, max_s + 1); });
  CHECK(f.store.ttl(foo) == -1);
  CHECK(f.store.expire(foo, max_s) == true);
  CHECK(f.store.pexpiretime(foo) == t0 + max_s * 1000);
  CHECK(f.store.ttl(foo) == max_s);
  // An error leaves the TTL just set alone too.
  f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expire(foo, max_s + 1); });
}

TEST_CASE("pexpire: adding the base time may overflow (case 28)", "[pexpire][B][D6]") {
  Fx<ttltest::StringKeys> f{ttltest::kT0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  f.expect_error_unchanged(foo, Errc::invalid_expire_time,
                           [&] { return f.store.pexpire(foo, 9'223'372'036'854'770'000); });
  CHECK(f.store.pexpire(foo, 9'223'372'036'853'775'807) == true);
  CHECK(f.store.pexpiretime(foo) == 9'223'372'036'854'775'807);
  CHECK(f.store.expiretime(foo) == 9'223'372'036'854'776);
}

TEMPLATE_TEST_CASE("pexpire: the largest TTL that fits at any start (case 28 generalised)", "[pexpire][B][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  if (t0 > 0) {  // at start 0 every non-negative number of milliseconds fits
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.pexpire(foo, kMax - t0 + 1); });
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.pexpire(foo, kMax); });
  }
  CHECK(f.store.ttl(foo) == -1);
  CHECK(f.store.pexpire(foo, kMax - t0) == true);
  CHECK(f.store.pexpiretime(foo) == kMax);
  CHECK(f.store.expiretime(foo) == 9'223'372'036'854'776);
  CHECK(f.store.pttl(foo) == kMax - t0);
}

TEMPLATE_TEST_CASE("expire: big negative TTLs (case 29)", "[expire][B][D6]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  for (std::int64_t v : {std::int64_t{-9'223'372'036'854'776}, std::int64_t{-9'999'999'999'999'999}, kMin}) {
    CAPTURE(v);
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expire(foo, v); });
    f.expect_error_unchanged(foo, Errc::invalid_expire_time, [&] { return f.store.expireat(foo, v); });
  }
  CHECK(f.store.ttl(foo) == -1);
  f.take_events();
  // INT64_MIN / 1000 (truncated) is the most negative second that converts.
  CHECK(f.store.expire(foo, -9'223'372'036'854'775) == true);
  CHECK_FALSE(f.store.exists(foo));
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::del, foo}}));
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.expireat(foo, -9'223'372'036'854'775) == true);
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("pexpireat: a big deadline works (case 30)", "[pexpireat][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();  // 9223372036854770000 is ahead of every start
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.pexpireat(foo, 9'223'372'036'854'770'000) == true);
  CHECK(f.store.pexpiretime(foo) == 9'223'372'036'854'770'000);
  CHECK(f.store.expiretime(foo) == 9'223'372'036'854'770);
  CHECK(f.store.pttl(foo) == 9'223'372'036'854'770'000 - t0);
}

TEMPLATE_TEST_CASE("pexpireat: a big negative deadline deletes (case 31)", "[pexpireat][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.pexpireat(foo, -9'223'372'036'854'770'000) == true);
  CHECK(f.store.ttl(foo) == -2);
  // The extremes: INT64_MIN as an absolute deadline, and as a relative one.
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.pexpireat(foo, kMin) == true);
  CHECK(f.store.size() == 0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.pexpire(foo, kMin) == true);
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("expire: flags are validated before the number (case 32, typed)", "[expire][B][D13]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  // `EXPIRE k abc NX XX` reports the options: a number that overflows still loses to them.
  f.expect_error_unchanged(k, Errc::nx_and_xx_gt_lt, [&] { return f.store.expire(k, kMax, NX | XX); });
  f.expect_error_unchanged(k, Errc::gt_and_lt, [&] { return f.store.expire(k, kMax, GT | LT); });
  f.expect_error_unchanged(k, Errc::nx_and_xx_gt_lt, [&] { return f.store.pexpire(k, kMax, NX | GT); });
  // A valid flag set, then the number is checked: `EXPIRE k abc NX` reports the number.
  f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.expire(k, kMax, NX); });
  CHECK(f.store.ttl(k) == -1);
}

TEMPLATE_TEST_CASE("expire: errors win over a missing key (case 33)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto missing = f.key(0);
  f.expect_error_unchanged(missing, Errc::nx_and_xx_gt_lt, [&] { return f.store.expire(missing, 10, NX | XX); });
  f.expect_error_unchanged(missing, Errc::invalid_expire_time,
                           [&] { return f.store.expire(missing, 9'223'372'036'854'776); });
  f.expect_error_unchanged(missing, Errc::gt_and_lt, [&] { return f.store.pexpireat(missing, 10, GT | LT); });
  CHECK(f.store.size() == 0);
}

namespace {
// SET k bar EX <secs> with the catalogue's number. At the end of time a number above 60 s must
// fail and change nothing; the case then continues with the number divided by 10.
template <class KT, class KK>
void set_ex(Fx<KT>& f, const KK& k, std::int64_t secs) {
  if (!f.fits(secs * 1000)) {
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.set(k, "bar", Ex{secs}); });
  }
  REQUIRE(f.store.set(k, "bar", Ex{f.sec(secs)}) == true);
}
// EXPIRE k <secs> <flags> with the catalogue's number, the same way.
template <class KT, class KK>
expiring::Result<bool> cat_expire(Fx<KT>& f, const KK& k, std::int64_t secs, ExpireFlags flags = ExpireFlags::None) {
  if (!f.fits(secs * 1000)) {
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.expire(k, secs, flags); });
  }
  return f.store.expire(k, secs > 0 ? f.sec(secs) : secs, flags);
}
}  // namespace

TEMPLATE_TEST_CASE("expire: without flags an overwrite may shorten the TTL (case 35)", "[expire][B]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  set_ex(f, k, 100);
  CHECK(cat_expire(f, k, 10) == true);
  CHECK(f.store.ttl(k) == f.sec(10));
  CHECK(f.store.pexpiretime(k) == t0 + f.sec(10) * 1000);
}

TEMPLATE_TEST_CASE("expire: a repeated flag is the flag (case 36, typed)", "[expire][B]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0), j = f.key(1);
  set_ex(f, k, 100);
  CHECK(cat_expire(f, k, 200, GT | GT) == true);
  CHECK(f.store.ttl(k) == f.sec(200));
  REQUIRE(f.store.set(j, "v") == true);
  CHECK(f.store.expire(j, 5, NX | NX) == true);  // 5 s fits at every start
  CHECK(f.store.ttl(j) == 5);
}

// ==== C. NX / XX / GT / LT ====================================================================

TEMPLATE_TEST_CASE("expire: NX refuses a key with a TTL (case 37)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 100);
  f.take_events();
  CHECK(cat_expire(f, foo, 200, NX) == false);
  CHECK(f.store.ttl(foo) == f.sec(100));
  CHECK(f.events.empty());
}

TEMPLATE_TEST_CASE("expire: NX sets a TTL on a key without one (case 38)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(cat_expire(f, foo, 200, NX) == true);
  CHECK(f.store.ttl(foo) == f.sec(200));
}

TEMPLATE_TEST_CASE("expire: XX replaces an existing TTL (case 39)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 100);
  CHECK(cat_expire(f, foo, 200, XX) == true);
  CHECK(f.store.ttl(foo) == f.sec(200));
}

TEMPLATE_TEST_CASE("expire: XX refuses a key without TTL (case 40)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(cat_expire(f, foo, 200, XX) == false);
  CHECK(f.store.ttl(foo) == -1);
  CHECK(f.store.expires_size() == 0);
}

TEMPLATE_TEST_CASE("expire: GT raises a lower TTL (case 41)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 100);
  CHECK(cat_expire(f, foo, 200, GT) == true);
  CHECK(f.store.ttl(foo) == f.sec(200));
}

TEMPLATE_TEST_CASE("expire: GT refuses to lower a TTL (case 42)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 200);
  CHECK(cat_expire(f, foo, 100, GT) == false);
  CHECK(f.store.ttl(foo) == f.sec(200));
}

TEMPLATE_TEST_CASE("expire: GT refuses a key without TTL, which counts as infinite (case 43)", "[expire][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(cat_expire(f, foo, 200, GT) == false);
  CHECK(f.store.ttl(foo) == -1);
  // Nothing is greater than infinite, not even the largest deadline.
  CHECK(f.store.pexpireat(foo, kMax, GT) == false);
  CHECK(f.store.ttl(foo) == -1);
}

TEMPLATE_TEST_CASE("expire: LT refuses to raise a TTL (case 44)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 100);
  CHECK(cat_expire(f, foo, 200, LT) == false);
  CHECK(f.store.ttl(foo) == f.sec(100));
}

TEMPLATE_TEST_CASE("expire: LT lowers a higher TTL (case 45)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 200);
  CHECK(cat_expire(f, foo, 100, LT) == true);
  CHECK(f.store.ttl(foo) == f.sec(100));
}

TEMPLATE_TEST_CASE("expire: LT sets a TTL on a key without one (case 46)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(cat_expire(f, foo, 100, LT) == true);
  CHECK(f.store.ttl(foo) == f.sec(100));
  CHECK(f.store.expires_size() == 1);
}

TEMPLATE_TEST_CASE("expire: LT|XX lowers an existing TTL (case 47)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 200);
  CHECK(cat_expire(f, foo, 100, LT | XX) == true);
  CHECK(f.store.ttl(foo) == f.sec(100));
}

TEMPLATE_TEST_CASE("expire: LT|XX refuses a key without TTL (case 48)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(cat_expire(f, foo, 200, LT | XX) == false);
  CHECK(f.store.ttl(foo) == -1);
}

TEMPLATE_TEST_CASE("expire: GT with LT is an error that changes nothing (case 49)", "[expire][C][D13]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0), bar = f.key(1);
  // Missing key, key without TTL, key with TTL: the same error, nothing changes. At the end of
  // time 200 s would also overflow: the flags are checked first.
  f.expect_error_unchanged(foo, Errc::gt_and_lt, [&] { return f.store.expire(foo, 200, LT | GT); });
  REQUIRE(f.store.set(foo, "bar") == true);
  f.expect_error_unchanged(foo, Errc::gt_and_lt, [&] { return f.store.expire(foo, 200, LT | GT); });
  REQUIRE(f.store.set(bar, "v", Ex{5}) == true);
  f.expect_error_unchanged(bar, Errc::gt_and_lt, [&] { return f.store.expire(bar, 200, LT | GT); });
  f.expect_error_unchanged(bar, Errc::gt_and_lt, [&] { return f.store.expire(bar, 0, GT | LT); });
  f.expect_error_unchanged(bar, Errc::gt_and_lt, [&] { return f.store.pexpireat(bar, 0, GT | LT | XX); });
  CHECK(f.store.ttl(bar) == 5);
  CHECK(f.store.ttl(foo) == -1);
}

TEMPLATE_TEST_CASE("expire: NX with XX, GT or LT is an error that changes nothing (case 50)", "[expire][C][D13]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  for (ExpireFlags fl : {NX | GT, NX | LT, NX | XX, NX | GT | LT, NX | XX | GT | LT}) {
    CAPTURE(static_cast<int>(fl));
    f.expect_error_unchanged(foo, Errc::nx_and_xx_gt_lt, [&] { return f.store.expire(foo, 200, fl); });
  }
  REQUIRE(f.store.set(foo, "bar") == true);
  for (ExpireFlags fl : {NX | GT, NX | LT, NX | XX, NX | GT | LT}) {
    CAPTURE(static_cast<int>(fl));
    // 0 would delete the key if the flags were accepted.
    f.expect_error_unchanged(foo, Errc::nx_and_xx_gt_lt, [&] { return f.store.expire(foo, 0, fl); });
  }
  CHECK(f.store.ttl(foo) == -1);
  REQUIRE(f.store.get(foo) != nullptr);
  CHECK(*f.store.get(foo) == "bar");
}

TEMPLATE_TEST_CASE("expire: a negative TTL with LT deletes a volatile key (case 52)", "[expire][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  set_ex(f, foo, 100);
  f.take_events();
  CHECK(cat_expire(f, foo, -10, LT) == true);
  CHECK(f.store.ttl(foo) == -2);
  CHECK(f.store.size() == 0);
  CHECK(f.store.expires_size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::del, foo}}));
}

TEMPLATE_TEST_CASE("expire: a negative TTL with LT deletes a key without TTL (case 53)", "[expire][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto foo = f.key(0);
  REQUIRE(f.store.set(foo, "bar") == true);
  CHECK(f.store.expire(foo, -10, LT) == true);
  CHECK(f.store.ttl(foo) == -2);
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("pexpireat: an equal deadline fails both GT and LT (case 54)", "[pexpireat][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();  // at T0 the deadline is 1005000 as in the catalogue
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{5000}) == true);
  f.take_events();
  CHECK(f.store.pexpireat(k, t0 + 5000, GT) == false);
  CHECK(f.store.pexpireat(k, t0 + 5000, LT) == false);
  CHECK(f.events.empty());
  CHECK(f.store.pexpireat(k, t0 + 5000, XX) == true);
  CHECK(f.store.pexpiretime(k) == t0 + 5000);
  // 1 ms either way passes the matching flag.
  CHECK(f.store.pexpireat(k, t0 + 5001, GT) == true);
  CHECK(f.store.pexpireat(k, t0 + 5000, LT) == true);
  CHECK(f.store.pexpiretime(k) == t0 + 5000);
}

TEMPLATE_TEST_CASE("expire: GT and LT compare absolute deadlines across units (case 55)", "[expire][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_ANY_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  set_ex(f, k, 100);
  const std::int64_t later_ms = f.sec(100) * 1000 + 1;  // 100001
  if (f.at_end()) {
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.pexpire(k, 100'001, GT); });
  }
  CHECK(f.store.pexpire(k, later_ms, GT) == true);
  CHECK(cat_expire(f, k, 100, GT) == false);
  CHECK(f.store.pexpiretime(k) == t0 + later_ms);
  if (t0 == ttltest::kT0) {
    CHECK(f.store.pexpiretime(k) == 1'100'001);
  }
  // EXPIREAT (seconds) against the same millisecond deadline.
  const std::int64_t deadline_s = (t0 + later_ms) / 1000;  // at or before the deadline
  CHECK(f.store.expireat(k, deadline_s, GT) == false);
  CHECK(f.store.expireat(k, deadline_s + 1, LT) == false);
  CHECK(f.store.pexpiretime(k) == t0 + later_ms);
}

TEMPLATE_TEST_CASE("expire: GT with a past time fails on a volatile key and deletes nothing (case 56)",
                   "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  set_ex(f, k, 100);
  f.take_events();
  CHECK(f.store.expire(k, -1, GT) == false);
  CHECK(f.store.ttl(k) == f.sec(100));
  CHECK(f.store.size() == 1);
  CHECK(f.events.empty());
}

TEMPLATE_TEST_CASE("expire: NX with 0 deletes a key without TTL (case 57)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v") == true);
  CHECK(f.store.expire(k, 0, NX) == true);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.size() == 0);
}

TEMPLATE_TEST_CASE("expire: XX|GT raises an existing TTL (case 58)", "[expire][C]", TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  set_ex(f, k, 100);
  CHECK(cat_expire(f, k, 200, XX | GT) == true);
  CHECK(f.store.ttl(k) == f.sec(200));
}

TEMPLATE_TEST_CASE("expire: flags on a stale key reply 0 and reclaim it (case 59)", "[expire][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto k = f.key(0);
  REQUIRE(f.store.set(k, "v", Px{10}) == true);
  f.take_events();
  f.at(11);
  // At the end of time EXPIRE k 100 overflows: the error comes before the lookup, so the stale
  // key is not even reclaimed (redis-server 7.0.15 leaves DBSIZE at 1 too).
  CHECK(cat_expire(f, k, 100, XX) == false);
  CHECK_FALSE(f.store.exists(k));
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 1);
  CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expired, k}}));
}

// ==== Typed equivalents and the whole flag table ==============================================

TEMPLATE_TEST_CASE("expire: invalid flag sets built at run time are errors in every command", "[expire][C][D13]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  Fx<TestType> f{t0};
  const auto persistent = f.key(0), volatile_ = f.key(1), stale = f.key(2), missing = f.key(3);
  REQUIRE(f.store.set(persistent, "p") == true);
  REQUIRE(f.store.set(volatile_, "v", Px{30'000}) == true);
  REQUIRE(f.store.set(stale, "s", Px{10}) == true);
  f.at(100);
  for (unsigned bits = 0; bits < 16; ++bits) {
    const auto fl = static_cast<ExpireFlags>(bits);
    const bool nx = has(fl, NX), xx = has(fl, XX), gt = has(fl, GT), lt = has(fl, LT);
    std::optional<Errc> err;
    if (nx && (xx || gt || lt)) {
      err = Errc::nx_and_xx_gt_lt;
    } else if (gt && lt) {
      err = Errc::gt_and_lt;
    }
    if (!err) continue;
    CAPTURE(bits);
    for (const auto& k : {persistent, volatile_, stale, missing}) {
      CAPTURE(k);
      // Numbers that would delete the key, set a TTL, or overflow.
      for (std::int64_t v : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{5}, kMax}) {
        CAPTURE(v);
        f.expect_error_unchanged(k, *err, [&] { return f.store.expire(k, v, fl); });
        f.expect_error_unchanged(k, *err, [&] { return f.store.pexpire(k, v, fl); });
        f.expect_error_unchanged(k, *err, [&] { return f.store.expireat(k, v, fl); });
        f.expect_error_unchanged(k, *err, [&] { return f.store.pexpireat(k, v, fl); });
      }
    }
  }
  // The stale key is still stored: no error path looked it up.
  CHECK(f.store.size() == 3);
  CHECK(f.store.stats().expired_keys == 0);
}

namespace {
enum class KeyState { missing, persistent, volatile_, stale };

const char* name(KeyState s) {
  switch (s) {
    case KeyState::missing: return "missing";
    case KeyState::persistent: return "persistent";
    case KeyState::volatile_: return "volatile";
    case KeyState::stale: return "stale";
  }
  return "?";
}

// semantics.md B §2.1 steps 1, 5 and 6, written out independently of the library.
struct Expected {
  std::optional<Errc> error;
  bool reply = false;
  enum Effect { unchanged, reclaimed, deleted, deadline_set } effect = unchanged;
};
Expected reference(KeyState state, ExpireFlags fl, std::int64_t when, std::int64_t cur, std::int64_t now) {
  const bool nx = has(fl, NX), xx = has(fl, XX), gt = has(fl, GT), lt = has(fl, LT);
  Expected e;
  if (nx && (xx || gt || lt)) {
    e.error = Errc::nx_and_xx_gt_lt;
    return e;
  }
  if (gt && lt) {
    e.error = Errc::gt_and_lt;
    return e;
  }
  if (state == KeyState::missing) return e;
  if (state == KeyState::stale) {
    e.effect = Expected::reclaimed;
    return e;
  }
  const bool has_ttl = state == KeyState::volatile_;
  if (nx && has_ttl) return e;
  if (xx && !has_ttl) return e;
  if (gt && (!has_ttl || when <= cur)) return e;
  if (lt && has_ttl && when >= cur) return e;
  e.reply = true;
  e.effect = when <= now ? Expected::deleted : Expected::deadline_set;
  return e;
}
}  // namespace

TEMPLATE_TEST_CASE("pexpireat: every flag set against every key state follows semantics.md §2.1", "[pexpireat][C]",
                   TTLTEST_KEY_FLAVOURS) {
  const std::int64_t t0 = TTLTEST_RELATIVE_START();
  CAPTURE(t0);
  const std::int64_t now = t0 + 100;
  const std::int64_t cur = t0 + 30'000;  // the volatile key's deadline
  for (KeyState state : {KeyState::missing, KeyState::persistent, KeyState::volatile_, KeyState::stale}) {
    for (unsigned bits = 0; bits < 16; ++bits) {
      for (std::int64_t when : {now - 20'000, now - 1, now, now + 1, cur - 1, cur, cur + 1, kMax}) {
        for (bool relative : {false, true}) {
          CAPTURE(name(state), bits, when, relative);
          const auto fl = static_cast<ExpireFlags>(bits);
          Fx<TestType> f{t0};
          const auto k = f.key(7), other = f.key(8);
          REQUIRE(f.store.set(other, "o", Px{20'000}) == true);  // a neighbour that must not move
          if (state == KeyState::persistent) REQUIRE(f.store.set(k, "v") == true);
          if (state == KeyState::volatile_) REQUIRE(f.store.set(k, "v", expiring::PxAt{cur}) == true);
          if (state == KeyState::stale) REQUIRE(f.store.set(k, "v", Px{10}) == true);
          f.at(100);
          f.take_events();
          const ttltest::Snapshot before = f.snapshot(k);

          const Expected want = reference(state, fl, when, cur, now);
          const auto got = relative ? f.store.pexpire(k, when - now, fl) : f.store.pexpireat(k, when, fl);
          if (want.error) {
            CHECK(got == *want.error);
          } else {
            CHECK(got == want.reply);
          }
          const ttltest::Snapshot after = f.snapshot(k);
          switch (want.effect) {
            case Expected::unchanged:
              CHECK(after == before);
              break;
            case Expected::reclaimed:
              CHECK(after.size == before.size - 1);
              CHECK(after.expired == before.expired + 1);
              CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expired, k}}));
              break;
            case Expected::deleted:
              CHECK(after.size == before.size - 1);
              CHECK_FALSE(after.value.has_value());
              CHECK(after.expired == before.expired);
              CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::del, k}}));
              break;
            case Expected::deadline_set:
              CHECK(after.size == before.size);
              CHECK(after.value == before.value);
              CHECK(after.pexpiretime == when);
              CHECK(after.expires == (state == KeyState::volatile_ ? before.expires : before.expires + 1));
              CHECK(f.take_events() == ttltest::evs<TestType>({{KeyEventCause::expire, k}}));
              break;
          }
          // Hits and misses: EXPIRE is a write, it never counts.
          CHECK(after.hits == before.hits);
          CHECK(after.misses == before.misses);
          // The neighbour is untouched.
          REQUIRE(f.store.peek(other) != nullptr);
          CHECK(*f.store.peek(other) == "o");
          CHECK(f.store.check_invariants());
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("expire: relative TTLs beyond the last minute overflow at the end of time", "[expire][D6]",
                   TTLTEST_KEY_FLAVOURS) {
  Fx<TestType> f{ttltest::kStartEnd};
  const auto k = f.key(0), missing = f.key(1);
  REQUIRE(f.store.set(k, "v", Px{30'000}) == true);
  // One millisecond or one second too many: an error, even for a missing key or with flags
  // that would refuse anyway.
  for (ExpireFlags fl : {ExpireFlags::None, XX, GT, LT, NX, XX | LT}) {
    CAPTURE(static_cast<int>(fl));
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.pexpire(k, 60'001, fl); });
    f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.expire(k, 61, fl); });
    f.expect_error_unchanged(missing, Errc::invalid_expire_time, [&] { return f.store.pexpire(missing, 60'001, fl); });
  }
  CHECK(f.store.pttl(k) == 30'000);
  // Exactly the last minute fits and lands on INT64_MAX.
  CHECK(f.store.expire(k, 60, GT) == true);
  CHECK(f.store.pexpiretime(k) == kMax);
  CHECK(f.store.expiretime(k) == 9'223'372'036'854'776);
  CHECK(f.store.ttl(k) == 60);
  CHECK(f.store.pexpire(k, 59'999, LT) == true);
  CHECK(f.store.pexpiretime(k) == kMax - 1);
  CHECK(f.store.pexpire(k, 60'000, GT) == true);
  CHECK(f.store.pexpiretime(k) == kMax);
  // Later the room left shrinks: at INT64_MAX itself nothing positive fits, and 0 deletes.
  f.clock.set(kMax);
  f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.pexpire(k, 1); });
  f.expect_error_unchanged(k, Errc::invalid_expire_time, [&] { return f.store.expire(k, 1); });
  CHECK(f.store.pttl(k) == 0);
  CHECK(f.store.pexpire(k, 0) == true);
  CHECK(f.store.size() == 0);
  CHECK(f.store.stats().expired_keys == 0);
}

// pexpire() of a live key that has a TTL, with no flag and nothing optional on, takes a short
// path: the deadline must still move in the expiry index (the time-ordered one moves it
// between buckets), earlier or later, so that tick() reclaims each key at its new time.
TEMPLATE_TEST_CASE("expire: re-timing live keys moves them in the expiry index earlier and later", "[expire][B]",
                   support::U64Keys, support::StringKeys, support::CollidingKeys) {
  support::ManualClock clock{support::T0};
  support::StoreOf<TestType> store{clock};
  const auto k = &TestType::make;
  constexpr int kKeys = 40;
  for (int i = 0; i < kKeys; ++i) REQUIRE(store.set(k(i), "a", Px{10'000}) == true);
  // Even keys move earlier (to 1 s), odd keys later (to 100 s).
  for (int i = 0; i < kKeys; ++i) REQUIRE(store.pexpire(k(i), i % 2 == 0 ? 1'000 : 100'000) == true);
  CHECK(store.check_invariants());
  for (int i = 0; i < kKeys; ++i) CHECK(store.pexpiretime(k(i)) == support::T0 + (i % 2 == 0 ? 1'000 : 100'000));
  // Past 1 s, before the old 10 s deadline: ticks reclaim the even keys.
  clock.set(support::T0 + 2'000);
  for (int n = 0; n < 200 && store.size() > kKeys / 2; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == kKeys / 2);
  CHECK(store.stats().expired_keys == kKeys / 2);
  // Past the old 10 s deadline: nothing more goes.
  clock.set(support::T0 + 20'000);
  for (int n = 0; n < 50; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == kKeys / 2);
  for (int i = 1; i < kKeys; i += 2) CHECK(store.pexpiretime(k(i)) == support::T0 + 100'000);
  CHECK(store.check_invariants());
  // With a listener the same call raises `expire`.
  std::vector<KeyEventCause> causes;
  store.set_listener([&](const auto& ev) { causes.push_back(ev.cause); });
  REQUIRE(store.pexpire(k(1), 50'000) == true);
  CHECK(causes == std::vector<KeyEventCause>{KeyEventCause::expire});
  clock.set(support::T0 + 100'001);
  for (int n = 0; n < 200 && store.size() > 0; ++n) store.tick(expiring::CycleKind::Slow);
  CHECK(store.size() == 0);
}

TEST_CASE("checked_add agrees with range tests at the int64 edges", "[expire][D6]") {
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  const std::int64_t edges[] = {lo, lo + 1, lo / 2, -1'000'000, -1, 0, 1, 1'000'000, hi / 2, hi - 1, hi};
  std::size_t overflows = 0;
  for (const std::int64_t a : edges) {
    for (const std::int64_t b : edges) {
      const bool fits = !((b > 0 && a > hi - b) || (b < 0 && a < lo - b));  // the plain reference
      std::int64_t out = 42;
      CAPTURE(a, b);
      CHECK(expiring::detail::checked_add(a, b, out) == fits);
      CHECK(out == (fits ? a + b : 42));  // untouched on overflow
      overflows += fits ? 0 : 1;
    }
  }
  CHECK(overflows == 28);  // of the 121 pairs, 28 leave the range (so both outcomes are tested)
}
