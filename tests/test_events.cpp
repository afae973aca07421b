// tests/test_events.cpp: key events (docs/guide/events-and-stats.md; semantics.md B §4 keyspace
// notifications). Every cause with the right key and, for removals, the removed value; an immediate
// deletion by a deadline already past is `del`, not `expired` (D3, D4); events are dispatched after
// the store is consistent, so a listener may read and write the store and its own events follow in
// order; removing the listener stops them. Over three key spellings (tests/support.hpp).
#include <expiring/expiring.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "support.hpp"

using namespace support;

namespace {

using Cause = expiring::KeyEventCause;

// One event as recorded: the key and removed value are copied (the references a listener
// gets live only during the call).
template <class K>
struct Ev {
  Cause cause;
  K key;
  std::optional<std::string> value;

  friend bool operator==(const Ev& a, const Ev& b) {
    return a.cause == b.cause && a.key == b.key && a.value == b.value;
  }
  friend bool operator<(const Ev& a, const Ev& b) {
    return std::tie(a.cause, a.key, a.value) < std::tie(b.cause, b.key, b.value);
  }
  friend std::ostream& operator<<(std::ostream& os, const Ev& e) {
    os << expiring::to_string(e.cause) << "(" << e.key;
    if (e.value) os << ", \"" << *e.value << "\"";
    return os << ")";
  }
};

template <class KT>
struct Events {
  using K = typename KT::key_type;
  using Store = StoreOf<KT>;
  std::vector<Ev<K>> seen;

  void attach(Store& store) {
    store.set_listener([this](const typename Store::event_type& e) { record(e); });
  }
  void record(const typename Store::event_type& e) {
    seen.push_back(Ev<K>{e.cause, e.key, e.value != nullptr ? std::optional<std::string>(*e.value) : std::nullopt});
  }
  // The events since the last call.
  std::vector<Ev<K>> take() {
    std::vector<Ev<K>> out;
    out.swap(seen);
    return out;
  }
  static Ev<K> ev(Cause c, std::string_view name) { return Ev<K>{c, KT::key(name), std::nullopt}; }
  static Ev<K> ev(Cause c, std::string_view name, std::string value) { return Ev<K>{c, KT::key(name), std::move(value)}; }
};

template <class K>
using EvList = std::vector<Ev<K>>;

}  // namespace

TEMPLATE_TEST_CASE("events: set, and expire when a TTL is given", "[events]", U64Keys, StringKeys, CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  E events;
  events.attach(store);
  CHECK(store.set(k("a"), "1") == true);
  CHECK(events.take() == L{E::ev(Cause::set, "a")});
  CHECK(store.set(k("a"), "2", Ex{10}) == true);
  CHECK(events.take() == L{E::ev(Cause::set, "a"), E::ev(Cause::expire, "a")});
  CHECK(store.set(k("a"), "3", KeepTtl{}) == true);
  CHECK(events.take() == L{E::ev(Cause::set, "a")});
  CHECK(store.set(k("a"), "4", SetCond::NX) == false);  // refused: nothing
  CHECK(store.set(k("b"), "1", SetCond::XX) == false);
  CHECK(store.set(k("a"), "5", Ex{0}) == Errc::invalid_expire_time);
  CHECK(store.set(k("a"), "5", Px{kMax}) == Errc::invalid_expire_time);
  CHECK(store.setex(k("a"), -1, "5") == Errc::invalid_expire_time);
  CHECK(events.take().empty());
  CHECK(store.setex(k("c"), 5, "x").ok());
  CHECK(store.psetex(k("d"), 5, "x").ok());
  CHECK(events.take() == L{E::ev(Cause::set, "c"), E::ev(Cause::expire, "c"), E::ev(Cause::set, "d"),
                           E::ev(Cause::expire, "d")});
  CHECK(store.set_get(k("a"), "6").ok());
  CHECK(store.getset(k("a"), "7") == std::optional<std::string>("6"));
  CHECK(store.setnx(k("e"), "1") == true);
  CHECK(store.setnx(k("e"), "2") == false);
  CHECK(events.take() == L{E::ev(Cause::set, "a"), E::ev(Cause::set, "a"), E::ev(Cause::set, "e")});
  CHECK(store.set(k("a"), "8", ExAt{2000}, SetCond::XX) == true);
  CHECK(events.take() == L{E::ev(Cause::set, "a"), E::ev(Cause::expire, "a")});
}

TEMPLATE_TEST_CASE("events: expire and persist, and nothing when nothing changes", "[events]", U64Keys, StringKeys,
                   CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1") == true);
  E events;
  events.attach(store);
  CHECK(store.expire(k("a"), 100) == true);
  CHECK(store.pexpire(k("a"), 5000, expiring::ExpireFlags::LT) == true);
  CHECK(events.take() == L{E::ev(Cause::expire, "a"), E::ev(Cause::expire, "a")});
  CHECK(store.expire(k("a"), 200, expiring::ExpireFlags::NX) == false);
  CHECK(store.pexpireat(k("a"), T0 + 10, expiring::ExpireFlags::GT) == false);
  CHECK(store.expire(k("missing"), 10) == false);
  CHECK(store.expire(k("a"), 10, expiring::ExpireFlags::NX | expiring::ExpireFlags::GT) == Errc::nx_and_xx_gt_lt);
  CHECK(store.expire(k("a"), kMax) == Errc::invalid_expire_time);
  CHECK(events.take().empty());
  CHECK(store.persist(k("a")) == true);
  CHECK(events.take() == L{E::ev(Cause::persist, "a")});
  CHECK(store.persist(k("a")) == false);
  CHECK(store.persist(k("missing")) == false);
  CHECK(events.take().empty());
}

TEMPLATE_TEST_CASE("events: getex reports expire, persist or del, a plain read nothing", "[events][getex]", U64Keys,
                   StringKeys, CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1") == true);
  E events;
  events.attach(store);
  CHECK(store.getex(k("a")).ok());
  CHECK(store.getex(k("a"), Persist{}).ok());  // no TTL to remove
  CHECK(store.getex(k("missing"), Ex{5}).ok());
  CHECK(store.getex(k("a"), Ex{0}) == Errc::invalid_expire_time);
  CHECK(store.get(k("a")) != nullptr);
  CHECK(store.exists(k("a")));
  CHECK(store.ttl(k("a")) == -1);
  CHECK(events.take().empty());
  CHECK(store.getex(k("a"), Ex{5}).ok());
  CHECK(events.take() == L{E::ev(Cause::expire, "a")});
  CHECK(store.getex(k("a"), Persist{}).ok());
  CHECK(events.take() == L{E::ev(Cause::persist, "a")});
  CHECK(store.getex(k("a"), PxAt{T0}).ok());
  CHECK(events.take() == L{E::ev(Cause::del, "a", "1")});
}

TEMPLATE_TEST_CASE("events: a deadline already past is del with the value, not expired (D3, D4)", "[events]", U64Keys,
                   StringKeys, CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) CHECK(store.set(k(name), std::string("v-") + name) == true);
  E events;
  events.attach(store);
  CHECK(store.expire(k("a"), 0) == true);
  CHECK(store.pexpireat(k("b"), T0) == true);
  CHECK(store.expireat(k("c"), 1) == true);
  CHECK(store.getex(k("d"), ExAt{999}).ok());
  CHECK(store.set(k("e"), "new", PxAt{999000}) == true);
  CHECK(store.set_get(k("f"), "new", PxAt{1}, SetCond::XX).ok());
  CHECK(events.take() == L{E::ev(Cause::del, "a", "v-a"), E::ev(Cause::del, "b", "v-b"), E::ev(Cause::del, "c", "v-c"),
                           E::ev(Cause::del, "d", "v-d"), E::ev(Cause::del, "e", "v-e"), E::ev(Cause::del, "f", "v-f")});
  CHECK(store.set(k("g"), "new", PxAt{999000}) == true);  // nothing existed: nothing to report
  CHECK(events.take().empty());
  CHECK(store.size() == 0);
  CHECK(store.stats().expired_keys == 0);
}

TEMPLATE_TEST_CASE("events: del, unlink and getdel carry the removed value", "[events]", U64Keys, StringKeys,
                   CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "va", Ex{5}) == true);
  CHECK(store.set(k("b"), "vb") == true);
  CHECK(store.set(k("c"), "vc") == true);
  E events;
  events.attach(store);
  CHECK(store.del(k("a")) == true);
  CHECK(store.unlink(k("b")) == true);
  CHECK(store.getdel(k("c")) == std::optional<std::string>("vc"));
  CHECK(store.del(k("a")) == false);
  CHECK(store.getdel(k("c")) == std::nullopt);
  CHECK(events.take() == L{E::ev(Cause::del, "a", "va"), E::ev(Cause::del, "b", "vb"), E::ev(Cause::del, "c", "vc")});
}

TEMPLATE_TEST_CASE("events: lazy expiry is expired with the value, on every path", "[events][lazy]", U64Keys,
                   StringKeys, CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    CHECK(store.set(k(name), std::string("old-") + name, Px{10}) == true);
  }
  E events;
  events.attach(store);
  clock.set(T0 + 10);
  CHECK(store.get(k("a")) != nullptr);  // at the deadline: alive, no event
  CHECK(events.take().empty());
  clock.set(T0 + 11);
  CHECK(store.get(k("a")) == nullptr);
  CHECK(events.take() == L{E::ev(Cause::expired, "a", "old-a")});
  CHECK(store.del(k("b")) == false);  // DEL of a stale key: an expiry, not a del
  CHECK(events.take() == L{E::ev(Cause::expired, "b", "old-b")});
  CHECK(store.set(k("c"), "new") == true);
  CHECK(events.take() == L{E::ev(Cause::expired, "c", "old-c"), E::ev(Cause::set, "c")});
  CHECK(store.set_get(k("d"), "new", Ex{3}).ok());
  CHECK(events.take() == L{E::ev(Cause::expired, "d", "old-d"), E::ev(Cause::set, "d"), E::ev(Cause::expire, "d")});
  CHECK(store.ttl(k("e")) == -2);
  CHECK(events.take() == L{E::ev(Cause::expired, "e", "old-e")});
  CHECK(store.rename(k("f"), k("x")) == Errc::no_such_key);
  CHECK(events.take() == L{E::ev(Cause::expired, "f", "old-f")});
  CHECK(store.peek(k("a")) == nullptr);  // peek is quiet
  CHECK(events.take().empty());
  CHECK(store.stats().expired_keys == 6);
}

TEMPLATE_TEST_CASE("events: tick() and random_key() report what they reclaim as expired", "[events][tick]", U64Keys,
                   StringKeys, CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  expiring::Options options;
  options.seed = 7;
  StoreOf<TestType> store{clock, options};
  const auto k = &TestType::key;
  for (const char* name : {"a", "b", "c"}) CHECK(store.set(k(name), std::string("v-") + name, Px{10}) == true);
  CHECK(store.set(k("p"), "persistent") == true);
  CHECK(store.set(k("later"), "v", Ex{100}) == true);
  E events;
  events.attach(store);
  clock.set(T0 + 11);
  const expiring::TickReport report = store.tick();
  CHECK(report.expired == 3);
  L got = events.take();
  std::sort(got.begin(), got.end());
  L want{E::ev(Cause::expired, "a", "v-a"), E::ev(Cause::expired, "b", "v-b"), E::ev(Cause::expired, "c", "v-c")};
  std::sort(want.begin(), want.end());
  CHECK(got == want);
  CHECK(store.size() == 2);

  for (const char* name : {"x", "y"}) CHECK(store.set(k(name), std::string("v-") + name, Px{10}) == true);
  CHECK(store.del(k("p")) == true);
  CHECK(store.del(k("later")) == true);
  events.take();
  clock.set(T0 + 30);
  CHECK_FALSE(store.random_key().has_value());
  got = events.take();
  std::sort(got.begin(), got.end());
  want = L{E::ev(Cause::expired, "x", "v-x"), E::ev(Cause::expired, "y", "v-y")};
  std::sort(want.begin(), want.end());
  CHECK(got == want);
}

TEMPLATE_TEST_CASE("events: modify is update, clear() reports nothing", "[events]", U64Keys, StringKeys,
                   CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1", Ex{5}) == true);
  E events;
  events.attach(store);
  CHECK(store.modify(k("a"), [](std::string& v) { v += "2"; }) == true);
  CHECK(store.modify(k("missing"), [](std::string& v) { v += "2"; }) == false);
  CHECK(events.take() == L{E::ev(Cause::update, "a")});
  store.clear();
  CHECK(store.size() == 0);
  CHECK(events.take().empty());
}

TEMPLATE_TEST_CASE("events: rename reports rename_from then rename_to", "[events][rename]", U64Keys, StringKeys,
                   CollidingKeys) {
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  StoreOf<TestType> store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("a"), "1", Ex{5}) == true);
  CHECK(store.set(k("b"), "2") == true);
  CHECK(store.set(k("s"), "stale", Px{10}) == true);
  E events;
  events.attach(store);
  CHECK(store.rename(k("a"), k("c")).ok());
  CHECK(events.take() == L{E::ev(Cause::rename_from, "a"), E::ev(Cause::rename_to, "c")});
  CHECK(store.rename(k("c"), k("b")).ok());  // over an existing key: no del for it (as Redis)
  CHECK(events.take() == L{E::ev(Cause::rename_from, "c"), E::ev(Cause::rename_to, "b")});
  CHECK(store.rename(k("b"), k("b")).ok());  // same key: nothing happens
  CHECK(store.renamenx(k("b"), k("b")) == false);
  CHECK(store.rename(k("missing"), k("b")) == Errc::no_such_key);
  CHECK(events.take().empty());
  CHECK(store.set(k("x"), "3") == true);
  events.take();
  CHECK(store.renamenx(k("x"), k("b")) == false);
  CHECK(events.take().empty());
  clock.set(T0 + 11);
  CHECK(store.renamenx(k("x"), k("s")) == true);  // a stale destination: reclaimed first
  CHECK(events.take() == L{E::ev(Cause::expired, "s", "stale"), E::ev(Cause::rename_from, "x"),
                           E::ev(Cause::rename_to, "s")});
}

// ---- Dispatch: after the store is consistent; re-entrancy; removal ------------------------

TEMPLATE_TEST_CASE("events: the listener sees the store already consistent", "[events][dispatch]", U64Keys, StringKeys,
                   CollidingKeys) {
  using Store = StoreOf<TestType>;
  ManualClock clock{T0};
  Store store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("b"), "B") == true);
  CHECK(store.set(k("s"), "S", Px{10}) == true);
  struct Seen {
    Cause cause;
    std::string peek;          // the value under the event's key, as the store shows it now
    std::int64_t pexpiretime;  // from a quiet iteration; -2 when absent
    std::size_t size;
  };
  std::vector<Seen> seen;
  store.set_listener([&](const typename Store::event_type& e) {
    std::int64_t when = -2;
    for (const auto& entry : store) {
      if (entry.key == e.key) when = entry.pexpiretime;
    }
    seen.push_back(Seen{e.cause, show(store.peek(e.key)), when, store.size()});
  });
  CHECK(store.set(k("a"), "1", Ex{10}) == true);
  REQUIRE(seen.size() == 2);
  // Both events are dispatched after the whole SET: value and TTL are already in place.
  CHECK(seen[0].cause == Cause::set);
  CHECK(seen[0].peek == "1");
  CHECK(seen[0].pexpiretime == T0 + 10000);
  CHECK(seen[0].size == 3);
  CHECK(seen[1].cause == Cause::expire);
  CHECK(seen[1].pexpiretime == T0 + 10000);
  seen.clear();
  CHECK(store.del(k("b")) == true);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].cause == Cause::del);
  CHECK(seen[0].peek == "(nil)");
  CHECK(seen[0].size == 2);
  seen.clear();
  clock.set(T0 + 11);
  CHECK(store.get(k("s")) == nullptr);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].cause == Cause::expired);
  CHECK(seen[0].peek == "(nil)");
  CHECK(seen[0].pexpiretime == -2);
  CHECK(seen[0].size == 1);
  seen.clear();
  CHECK(store.rename(k("a"), k("r")).ok());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].cause == Cause::rename_from);
  CHECK(seen[0].peek == "(nil)");  // the source is already gone
  CHECK(seen[1].cause == Cause::rename_to);
  CHECK(seen[1].peek == "1");
  CHECK(seen[1].pexpiretime == T0 + 10000);
  CHECK(seen[1].size == 1);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("events: a listener may re-set an expired key, its events follow", "[events][dispatch]", U64Keys,
                   StringKeys, CollidingKeys) {
  using Store = StoreOf<TestType>;
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  Store store{clock};
  const auto k = &TestType::key;
  E events;
  store.set_listener([&](const typename Store::event_type& e) {
    events.record(e);
    if (e.cause == Cause::expired) {
      const typename TestType::key_type key = e.key;  // copy: the reference dies with the call
      CHECK(store.set(key, "reborn") == true);
    }
  });
  CHECK(store.set(k("k"), "v", Px{10}) == true);
  events.take();
  clock.set(T0 + 11);
  CHECK(store.get(k("k")) == nullptr);  // the read itself saw the key expired
  CHECK(events.take() == L{E::ev(Cause::expired, "k", "v"), E::ev(Cause::set, "k")});
  CHECK(show(store.get(k("k"))) == "reborn");
  CHECK(store.ttl(k("k")) == -1);
  CHECK(store.size() == 1);
  CHECK(store.stats().expired_keys == 1);

  // The same from tick(): every expired key comes back, after all the expired events.
  CHECK(store.set(k("x"), "vx", Px{10}) == true);
  CHECK(store.set(k("y"), "vy", Px{10}) == true);
  events.take();
  clock.set(T0 + 30);
  CHECK(store.tick().expired == 2);
  const L got = events.take();
  REQUIRE(got.size() == 4);
  CHECK(got[0].cause == Cause::expired);
  CHECK(got[1].cause == Cause::expired);
  CHECK(got[2].cause == Cause::set);
  CHECK(got[3].cause == Cause::set);
  CHECK(got[2].key == got[0].key);  // in the order the expiries were dispatched
  CHECK(got[3].key == got[1].key);
  CHECK(show(store.get(k("x"))) == "reborn");
  CHECK(show(store.get(k("y"))) == "reborn");
  CHECK(store.expires_size() == 0);
  CHECK(store.size() == 3);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("events: events a listener causes are delivered after the pending ones, in order",
                   "[events][dispatch]", U64Keys, StringKeys, CollidingKeys) {
  using Store = StoreOf<TestType>;
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  Store store{clock};
  const auto k = &TestType::key;
  CHECK(store.set(k("b"), "B") == true);
  E events;
  store.set_listener([&](const typename Store::event_type& e) {
    events.record(e);
    if (e.cause == Cause::set && e.key == k("a")) CHECK(store.del(k("b")) == true);
    if (e.cause == Cause::del && e.key == k("b")) CHECK(store.set(k("c"), "C", Ex{1}) == true);
  });
  CHECK(store.set(k("a"), "A", Ex{10}) == true);
  // set a and expire a were queued together; del b (from the first callback) comes after
  // them, and set c / expire c (from the del b callback) after that.
  CHECK(events.take() == L{E::ev(Cause::set, "a"), E::ev(Cause::expire, "a"), E::ev(Cause::del, "b", "B"),
                           E::ev(Cause::set, "c"), E::ev(Cause::expire, "c")});
  CHECK(store.exists(k("b")) == false);
  CHECK(store.ttl(k("c")) == 1);
  CHECK(store.size() == 2);
  CHECK(store.check_invariants());
}

TEMPLATE_TEST_CASE("events: removing the listener stops events", "[events][dispatch]", U64Keys, StringKeys,
                   CollidingKeys) {
  using Store = StoreOf<TestType>;
  using E = Events<TestType>;
  using L = EvList<typename TestType::key_type>;
  ManualClock clock{T0};
  Store store{clock};
  const auto k = &TestType::key;
  E events;
  events.attach(store);
  CHECK(store.set(k("a"), "1", Px{10}) == true);
  CHECK(events.take().size() == 2);
  store.set_listener({});
  CHECK(store.set(k("b"), "1", Ex{10}) == true);
  CHECK(store.del(k("b")) == true);
  CHECK(store.expire(k("a"), 50) == true);
  CHECK(store.persist(k("a")) == true);
  CHECK(store.rename(k("a"), k("c")).ok());
  CHECK(store.set(k("s"), "1", Px{10}) == true);
  clock.set(T0 + 11);
  CHECK(store.get(k("s")) == nullptr);
  CHECK(events.take().empty());
  // A new listener sees only what happens from then on.
  events.attach(store);
  CHECK(store.del(k("c")) == true);
  CHECK(events.take() == L{E::ev(Cause::del, "c", "1")});

  // A listener that removes itself: the events still queued are dropped, later ones too.
  std::vector<Cause> causes;
  store.set_listener([&causes, &store](const typename Store::event_type& e) {
    causes.push_back(e.cause);
    store.set_listener({});  // destroys this closure: touch nothing captured after it
  });
  CHECK(store.set(k("d"), "1", Ex{10}) == true);  // queues set and expire
  CHECK(causes == std::vector<Cause>{Cause::set});
  CHECK(store.del(k("d")) == true);
  CHECK(causes.size() == 1);
  CHECK(events.take().empty());
  CHECK(store.size() == 0);
}

TEST_CASE("events: a copy of a store keeps the listener and the change feed, and the first listener creates the queue",
          "[events][feed]") {
  // The event queue and the feed's framing are created by the first listener and feed
  // (detail/event_queue.hpp, change_feed.hpp): a copy carries its own, with the same functions.
  expiring::ManualClock clock{1'000'000};
  expiring::Store<std::string, std::string, expiring::ManualClock&> store(clock);
  store.set_listener(nullptr);  // no listener yet: nothing to clear
  (void)store.set("quiet", "v");
  std::vector<std::pair<Cause, std::string>> seen;
  std::vector<std::string> records;
  store.set_listener([&](const expiring::KeyEvent<std::string, std::string>& e) { seen.emplace_back(e.cause, e.key); });
  store.set_change_feed([&](const expiring::Change<std::string, std::string>& c) {
    records.push_back(std::string(expiring::to_string(c.op)) + " " + (c.key ? *c.key : std::string()));
  });
  (void)store.set("a", "1");
  auto copy = store;
  (void)copy.set("b", "2");
  CHECK(copy.del("a"));
  CHECK(seen == std::vector<std::pair<Cause, std::string>>{{Cause::set, "a"}, {Cause::set, "b"}, {Cause::del, "a"}});
  CHECK(records == std::vector<std::string>{"SET a", "SET b", "DEL a"});
  CHECK(store.exists("a"));  // the original is its own store
  // Removing both from the original leaves the copy's.
  store.set_listener(nullptr);
  store.set_change_feed({});
  (void)store.set("c", "3");
  (void)copy.set("d", "4");
  CHECK(seen.back() == std::pair<Cause, std::string>{Cause::set, "d"});
  CHECK(records.back() == "SET d");
  CHECK(seen.size() == 4);
  CHECK(records.size() == 4);
}
