// tests/test_get_many.cpp: get_many() is MGET (semantics.md B §5 E, case 64: MGET is one GET per
// key). For every key it gives what get() would give at the same clock reading, counts the same
// hits and misses, reclaims the same stale keys and raises the same events; and every pointer it
// returns is still valid when it returns, although reclaiming the stale keys of the batch ran in
// between. Over the three key spellings, with batches longer than the store's prefetch window.
#include <expiring/expiring.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using namespace support;

TEMPLATE_TEST_CASE("get_many: MGET against get() over live, stale, missing and repeated keys", "[get_many][spec-E]",
                   U64Keys, StringKeys, CollidingKeys) {
  using K = typename TestType::key_type;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  StoreOf<TestType> twin{clock};
  std::vector<std::string> events;
  store.set_listener([&](const auto& ev) { events.push_back(std::to_string(static_cast<int>(ev.cause))); });
  std::vector<std::string> twin_events;
  twin.set_listener([&](const auto& ev) { twin_events.push_back(std::to_string(static_cast<int>(ev.cause))); });
  // 0..299: every third stale at the read, every fifth absent, the rest live.
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    if (i % 5 == 4) continue;
    const std::string v = "v" + std::to_string(i);
    for (auto* s : {&store, &twin}) {
      if (i % 3 == 0) {
        REQUIRE(s->psetex(TestType::make(i), 100, v).ok());
      } else {
        REQUIRE(s->set(TestType::make(i), v).ok());
      }
    }
  }
  clock.set(T0 + 101);
  events.clear();
  twin_events.clear();
  std::vector<K> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(TestType::make(i));
  for (int i = 0; i < 40; ++i) keys.push_back(TestType::make(i * 7 % kKeys));  // repeats, some already reclaimed
  std::vector<const std::string*> out(keys.size(), nullptr);
  const std::size_t hits = store.get_many(keys, out.data());

  std::size_t want_hits = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CAPTURE(i);
    const std::string* want = twin.get(keys[i]);
    want_hits += want != nullptr ? 1 : 0;
    if (want == nullptr) {
      CHECK(out[i] == nullptr);
    } else {
      REQUIRE(out[i] != nullptr);
      CHECK(*out[i] == *want);  // read after the whole batch ran: the pointer survived its reclaims
    }
  }
  CHECK(hits == want_hits);
  CHECK(store.stats().keyspace_hits == twin.stats().keyspace_hits);
  CHECK(store.stats().keyspace_misses == twin.stats().keyspace_misses);
  CHECK(store.stats().expired_keys == twin.stats().expired_keys);
  CHECK(store.stats().expired_keys == 80);  // 0, 3, ..., 297 minus the absent ones (15 mod 15)
  CHECK(store.size() == twin.size());
  CHECK(events == twin_events);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("get_many: an empty batch and an empty store", "[get_many]", U64Keys, StringKeys) {
  using K = typename TestType::key_type;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  std::vector<K> none;
  const typename StoreOf<TestType>::mapped_type** no_out = nullptr;  // the form without copies
  CHECK(store.get_many(none, no_out) == 0);
  std::vector<K> keys{TestType::make(1), TestType::make(2)};
  const std::string* out[2] = {reinterpret_cast<const std::string*>(&keys), nullptr};
  CHECK(store.get_many(keys, out) == 0);
  CHECK(out[0] == nullptr);
  CHECK(out[1] == nullptr);
  CHECK(store.stats().keyspace_misses == 2);
}
