// quickstart: the store in thirty lines. Redis's TTL semantics on a fake clock, so the
// output is the same on every run.
#include <expiring/expiring.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main() {
  using namespace std::chrono_literals;
  expiring::ManualClock clock{1'000'000};  // Unix ms; copies share one time
  expiring::Store<std::string, std::string, expiring::ManualClock> store{clock};

  store.set("session:1", "alice", 30s).value();                                // SET session:1 alice PX 30000
  const bool locked = store.set("lock", "token", 5s, expiring::SetCond::NX).value();  // SET lock token PX 5000 NX
  std::printf("lock taken: %s, TTL session:1 = %lld s, PTTL lock = %lld ms\n", locked ? "yes" : "no",
              static_cast<long long>(store.ttl("session:1")), static_cast<long long>(store.pttl("lock")));

  (void)store.pexpireat("lock", 1'010'000, expiring::ExpireFlags::GT);  // extend the lease to an absolute time
  store.persist("session:1");                                           // PERSIST: keep it forever
  std::printf("after PEXPIREAT GT: PEXPIRETIME lock = %lld, TTL session:1 = %lld\n",
              static_cast<long long>(store.pexpiretime("lock")), static_cast<long long>(store.ttl("session:1")));

  clock.advance(10'001ms);  // the lease has passed: invisible at once...
  std::printf("lock after 10.001 s: %s (still stored until touched or ticked: size = %zu)\n",
              store.get("lock") ? "present" : "gone", store.size());

  // A sliding TTL in one probe: read the value and move its deadline to now + 30 min.
  (void)store.set("cart:7", "3 items", 30min);
  clock.advance(20min);
  const std::string* cart = store.getex_ptr("cart:7", 30min).value();
  std::printf("cart:7 = %s, TTL now %lld s\n", cart->c_str(), static_cast<long long>(store.ttl("cart:7")));

  (void)store.set("cache:a", "1", 100ms);
  clock.advance(200ms);
  const expiring::TickReport r = store.tick();  // ...and reclaimed in bulk by the active cycle
  const expiring::Stats s = store.stats();
  std::printf("tick: sampled %llu, expired %llu; expired_keys = %llu, keys = %llu\n",
              static_cast<unsigned long long>(r.sampled), static_cast<unsigned long long>(r.expired),
              static_cast<unsigned long long>(s.expired_keys), static_cast<unsigned long long>(s.keys));

  // A typed error, and the store is unchanged.
  const auto bad = store.set("session:1", "bob", 0s);
  std::printf("SET PX 0 -> %s; GET session:1 = %s\n", bad.ok() ? "ok" : expiring::to_string(bad.error()),
              store.get("session:1")->c_str());
  return 0;
}
