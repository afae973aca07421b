// lock_lease: a lock whose holder extends its lease, never shortening it.
//
// SET NX PX takes the lock; the holder renews with PEXPIRE ... GT, which only ever moves the
// deadline later, so a delayed renewal carrying a shorter lease cannot cut the lock short.
// Another client gets the lock only after the lease runs out.
#include <expiring/expiring.hpp>

#include <cstdio>
#include <string>

namespace {

using Store = expiring::Store<std::string, std::string, expiring::ManualClock>;

bool acquire(Store& store, const std::string& owner, std::int64_t lease_ms) {
  return store.set("lock:report", owner, expiring::Px{lease_ms}, expiring::SetCond::NX).value();
}

// Extends the lease only if we still hold it, and only ever to a later deadline.
bool renew(Store& store, const std::string& owner, std::int64_t lease_ms) {
  const std::string* holder = store.get("lock:report");
  if (holder == nullptr || *holder != owner) return false;
  return store.pexpire("lock:report", lease_ms, expiring::ExpireFlags::GT).value();
}

}  // namespace

int main() {
  expiring::ManualClock clock{1'700'000'000'000};
  Store store{clock};

  std::printf("worker-a acquires: %d\n", acquire(store, "worker-a", 3000));
  std::printf("worker-b acquires: %d\n", acquire(store, "worker-b", 3000));
  clock.advance(2000);
  const bool renewed = renew(store, "worker-a", 3000);
  std::printf("worker-a renews for 3 s: %d (PTTL %lld)\n", renewed, static_cast<long long>(store.pttl("lock:report")));
  const bool shortened = renew(store, "worker-a", 500);
  std::printf("a late renewal for 500 ms is refused by GT: %d (PTTL %lld)\n", shortened,
              static_cast<long long>(store.pttl("lock:report")));
  clock.advance(3001);
  const bool b_acquired = acquire(store, "worker-b", 3000);
  std::printf("after the lease ran out, worker-b acquires: %d; holder = %s\n", b_acquired,
              store.get("lock:report")->c_str());
  std::printf("worker-a can no longer renew: %d\n", renew(store, "worker-a", 3000));
  return 0;
}
