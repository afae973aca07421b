// user_fields: one hash per user whose fields expire on their own (Redis 7.4 HEXPIRE).
//
// A user's profile is a hash: `name` lives forever, a login `session` for 30 minutes (renewed
// on activity with GT, so a renewal never shortens it), a one-time `otp` for 5 minutes (set
// with NX, so a second request cannot extend it). The example runs a simulated hour on a
// fake clock at hz 10: users log in, some stay active, and tick() reclaims the fields whose
// time has come, in deadline order. It prints what happened to each kind of field, the
// hexpired events, and the store's expired_subkeys and subexpiry.
#include <expiring/expiring.hpp>
#include <expiring/hash_fields.hpp>

#include <cstdio>
#include <random>
#include <string>

namespace {

using Profiles = expiring::Store<std::string, expiring::FieldMap<std::string, std::string>, expiring::ManualClock&>;

constexpr int kUsers = 2'000;
constexpr std::int64_t kMinute = 60'000;

}  // namespace

int main() {
  expiring::ManualClock clock{1'700'000'000'000};
  const std::int64_t t0 = clock.now_ms();
  Profiles users{clock};
  std::uint64_t sessions_gone = 0, otps_gone = 0;
  users.set_listener(
      [&](const Profiles::event_type& ev) {
        for (const auto& f : *ev.value) (f.name == "session" ? sessions_gone : otps_gone) += 1;
      },
      {expiring::KeyEventCause::hexpired});

  for (int u = 0; u < kUsers; ++u) {
    const std::string key = "user:" + std::to_string(u);
    (void)users.hset(key, {{"name", "user " + std::to_string(u)}, {"session", "s-" + std::to_string(u)}, {"otp", "417"}});
    (void)users.hexpire(key, 30 * 60, {"session"}).value();
    (void)users.hexpire(key, 5 * 60, {"otp"}, expiring::ExpireFlags::NX).value();
  }
  // A second OTP request cannot extend the first (NX answers 0).
  const int again = users.hexpire("user:0", 5 * 60, {"otp"}, expiring::ExpireFlags::NX).value()[0];

  // An hour at hz 10. Every minute, a tenth of the users are active and renew their session.
  std::mt19937_64 rng{7};
  std::uniform_int_distribution<int> pick{0, 9};
  std::uint64_t renewed = 0;
  for (std::int64_t t = t0 + 100; t <= t0 + 60 * kMinute; t += 100) {
    clock.set(t);
    if ((t - t0) % kMinute == 0) {
      for (int u = 0; u < kUsers; ++u) {
        if (pick(rng) != 0) continue;
        const std::vector<int> r =
            users.hexpire("user:" + std::to_string(u), 30 * 60, {"session"}, expiring::ExpireFlags::GT).value();
        renewed += r[0] == expiring::FieldReply::set ? 1 : 0;
      }
    }
    (void)users.tick();
  }

  const expiring::Stats st = users.stats();
  std::size_t with_session = 0;
  for (int u = 0; u < kUsers; ++u) {
    if (users.hexists("user:" + std::to_string(u), "session").value()) ++with_session;
  }
  std::printf("user_fields: %d users, one hour at hz 10\n", kUsers);
  std::printf("  second OTP request with NX: %d (0 = condition not met)\n", again);
  std::printf("  OTPs reclaimed: %llu of %d\n", static_cast<unsigned long long>(otps_gone), kUsers);
  std::printf("  session renewals: %llu; sessions reclaimed: %llu; still logged in: %zu\n",
              static_cast<unsigned long long>(renewed), static_cast<unsigned long long>(sessions_gone), with_session);
  std::printf("  users left (each keeps its name): %zu; hashes with field TTLs: %llu\n", users.size(),
              static_cast<unsigned long long>(st.subexpiry));
  std::printf("  expired_subkeys: %llu, expired_keys: %llu\n", static_cast<unsigned long long>(st.expired_subkeys),
              static_cast<unsigned long long>(st.expired_keys));
  const bool ok = again == expiring::FieldReply::condition_not_met && otps_gone == kUsers &&
                  sessions_gone + with_session == kUsers && users.size() == kUsers &&
                  st.expired_subkeys == otps_gone + sessions_gone;
  std::printf("%s\n", ok ? "ok" : "UNEXPECTED");
  return ok ? 0 : 1;
}
