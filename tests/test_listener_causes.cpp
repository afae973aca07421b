// tests/test_listener_causes.cpp: set_listener(fn, KeyEventCauses): only the subscribed causes
// are delivered, in order; the KeyEventCauses set itself (all(), removals(), |, contains,
// empty, ==); removal events carry the value; replacing the listener replaces the
// subscription; an empty function removes it.
#include <expiring/expiring.hpp>
#include <expiring/hash_fields.hpp>

#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support.hpp"
#include "test_policy.hpp"

using expiring::KeyEventCause;
using expiring::KeyEventCauses;
using expiring::ManualClock;
using expiring::Px;
using support::T0;

namespace {

using S = expiring::Store<std::string, std::string, ManualClock, TestPolicy>;

struct Ev {
  KeyEventCause cause;
  std::string key;
  std::optional<std::string> value;
  friend bool operator==(const Ev& a, const Ev& b) { return a.cause == b.cause && a.key == b.key && a.value == b.value; }
  // Readable in failure messages.
  friend std::ostream& operator<<(std::ostream& os, const Ev& e) {
    return os << expiring::to_string(e.cause) << "(" << e.key << (e.value ? ", " + *e.value : std::string()) << ")";
  }
};

constexpr KeyEventCause kAll[] = {KeyEventCause::set,         KeyEventCause::update,    KeyEventCause::expire,
                                  KeyEventCause::persist,     KeyEventCause::del,       KeyEventCause::expired,
                                  KeyEventCause::evicted,     KeyEventCause::rename_from, KeyEventCause::rename_to,
                                  KeyEventCause::copy_to,     KeyEventCause::hset,      KeyEventCause::hdel,
                                  KeyEventCause::hexpire,     KeyEventCause::hpersist,  KeyEventCause::hexpired};
// The first ten are the causes a store of strings raises (the hash causes are tested in
// test_hash_fields.cpp).
constexpr std::size_t kKeyCauseCount = 10;

expiring::Options opts() {
  expiring::Options o;
  o.seed = 0xE7E7;
  o.budget_clock_us = [] { return 0; };
  o.max_entries = 4;
  o.maxmemory_policy = expiring::EvictionPolicy::volatile_ttl;
  return o;
}

// One of each cause, in this order: set a, expire a, update a, persist a, copy_to b,
// rename_from b, rename_to c, del c, (set d, expire d), expired d, (set e/f/g/h, expire e),
// evicted e.
void every_cause(S& store, ManualClock& clock) {
  REQUIRE(store.set("a", "1", Px{1000}) == true);  // set, expire
  REQUIRE(store.modify("a", [](std::string& v) { v = "1u"; }));  // update
  REQUIRE(store.persist("a"));                     // persist
  REQUIRE(store.copy("a", "b") == true);           // copy_to
  REQUIRE(store.rename("b", "c").ok());            // rename_from, rename_to
  REQUIRE(store.del("c"));                         // del
  REQUIRE(store.set("d", "4", Px{10}) == true);    // set, expire
  clock.advance(11);
  REQUIRE(store.get("d") == nullptr);              // expired
  REQUIRE(store.set("e", "5", Px{50}) == true);    // set, expire
  REQUIRE(store.set("f", "6") == true);            // set
  REQUIRE(store.set("g", "7") == true);            // set
  REQUIRE(store.set("h", "8") == true);            // set: evicts e (the only volatile key)
}

const std::vector<Ev> kEveryCause = {
    {KeyEventCause::set, "a", std::nullopt},         {KeyEventCause::expire, "a", std::nullopt},
    {KeyEventCause::update, "a", std::nullopt},      {KeyEventCause::persist, "a", std::nullopt},
    {KeyEventCause::copy_to, "b", std::nullopt},     {KeyEventCause::rename_from, "b", std::nullopt},
    {KeyEventCause::rename_to, "c", std::nullopt},   {KeyEventCause::del, "c", std::string("1u")},
    {KeyEventCause::set, "d", std::nullopt},         {KeyEventCause::expire, "d", std::nullopt},
    {KeyEventCause::expired, "d", std::string("4")}, {KeyEventCause::set, "e", std::nullopt},
    {KeyEventCause::expire, "e", std::nullopt},      {KeyEventCause::set, "f", std::nullopt},
    {KeyEventCause::set, "g", std::nullopt},         {KeyEventCause::evicted, "e", std::string("5")},
    {KeyEventCause::set, "h", std::nullopt},
};

std::vector<Ev> only(const std::vector<Ev>& all, KeyEventCauses causes) {
  std::vector<Ev> out;
  for (const Ev& e : all) {
    if (causes.contains(e.cause)) out.push_back(e);
  }
  return out;
}

struct Sink {
  std::vector<Ev> seen;
  S::listener_type fn() {
    return [this](const S::event_type& e) {
      seen.push_back(Ev{e.cause, e.key, e.value ? std::optional<std::string>(*e.value) : std::nullopt});
    };
  }
};

}  // namespace

TEST_CASE("listener causes: the KeyEventCauses set", "[service-api][listener]") {
  constexpr KeyEventCauses none{};
  STATIC_REQUIRE(none.empty());
  STATIC_REQUIRE(KeyEventCauses{}.empty());
  STATIC_REQUIRE(!KeyEventCauses::all().empty());
  STATIC_REQUIRE(KeyEventCauses{KeyEventCause::set}.contains(KeyEventCause::set));
  for (KeyEventCause c : kAll) {
    INFO(expiring::to_string(c));
    CHECK(KeyEventCauses::all().contains(c));
    CHECK_FALSE(none.contains(c));
    const KeyEventCauses one{c};
    CHECK(one.contains(c));
    CHECK_FALSE(one.empty());
    for (KeyEventCause d : kAll) CHECK(one.contains(d) == (c == d));
    CHECK((one | none) == one);
    CHECK((one | KeyEventCauses::all()) == KeyEventCauses::all());
  }
  const KeyEventCauses removals = KeyEventCauses::removals();
  CHECK(removals == (KeyEventCauses{KeyEventCause::del} | KeyEventCauses{KeyEventCause::expired, KeyEventCause::evicted}));
  for (KeyEventCause c : kAll) {
    const bool removal = c == KeyEventCause::del || c == KeyEventCause::expired || c == KeyEventCause::evicted;
    CHECK(removals.contains(c) == removal);
  }
  CHECK(removals != KeyEventCauses::all());
  CHECK(KeyEventCauses{KeyEventCause::set, KeyEventCause::set} == KeyEventCauses{KeyEventCause::set});
  KeyEventCauses built;
  for (KeyEventCause c : kAll) built = built | KeyEventCauses{c};
  CHECK(built == KeyEventCauses::all());
}

TEST_CASE("listener causes: the default subscription is every cause, in order", "[service-api][listener]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Sink sink;
  store.set_listener(sink.fn());
  every_cause(store, clock);
  CHECK(sink.seen == kEveryCause);
  // Every cause occurs in the scenario, so the filtered tests below can all fail.
  for (std::size_t i = 0; i < kKeyCauseCount; ++i) CHECK(only(kEveryCause, KeyEventCauses{kAll[i]}).size() >= 1);
}

TEST_CASE("listener causes: only the subscribed causes are delivered", "[service-api][listener]") {
  const int which = GENERATE(range(0, 14));
  KeyEventCauses causes;
  if (which < 10) {
    causes = KeyEventCauses{kAll[which]};
  } else if (which == 10) {
    causes = KeyEventCauses::removals();
  } else if (which == 11) {
    causes = KeyEventCauses{KeyEventCause::expired, KeyEventCause::evicted};
  } else if (which == 12) {
    causes = KeyEventCauses{KeyEventCause::set, KeyEventCause::rename_to} | KeyEventCauses{KeyEventCause::copy_to};
  } else {
    causes = KeyEventCauses::all();
  }
  CAPTURE(which);
  ManualClock clock{T0};
  S store{clock, opts()};
  Sink sink;
  store.set_listener(sink.fn(), causes);
  every_cause(store, clock);
  CHECK(sink.seen == only(kEveryCause, causes));
}

TEST_CASE("listener causes: expired and evicted carry the value", "[service-api][listener]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Sink sink;
  store.set_listener(sink.fn(), KeyEventCauses{KeyEventCause::expired, KeyEventCause::evicted});
  every_cause(store, clock);
  CHECK(sink.seen == std::vector<Ev>{{KeyEventCause::expired, "d", std::string("4")},
                                     {KeyEventCause::evicted, "e", std::string("5")}});
  // Expiry by tick() too.
  REQUIRE(store.del("a"));  // room for one more key (del is not subscribed to)
  REQUIRE(store.set("t", "tv", Px{5}) == true);
  sink.seen.clear();
  clock.advance(6);
  for (int i = 0; i < 100 && store.size() > 3; ++i) (void)store.tick();
  CHECK(sink.seen == std::vector<Ev>{{KeyEventCause::expired, "t", std::string("tv")}});
}

TEST_CASE("listener causes: replacing the listener replaces the subscription, an empty one removes it",
          "[service-api][listener]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Sink first, second;
  store.set_listener(first.fn(), KeyEventCauses{KeyEventCause::set});
  REQUIRE(store.set("a", "1", Px{1000}) == true);
  REQUIRE(store.del("a"));
  CHECK(first.seen == std::vector<Ev>{{KeyEventCause::set, "a", std::nullopt}});

  store.set_listener(second.fn(), KeyEventCauses{KeyEventCause::del});
  REQUIRE(store.set("b", "2", Px{1000}) == true);
  REQUIRE(store.del("b"));
  CHECK(first.seen.size() == 1);  // the old listener hears nothing more
  CHECK(second.seen == std::vector<Ev>{{KeyEventCause::del, "b", std::string("2")}});

  // An empty function removes the listener, whatever causes are named.
  store.set_listener(S::listener_type{}, KeyEventCauses::all());
  REQUIRE(store.set("c", "3") == true);
  REQUIRE(store.del("c"));
  CHECK(first.seen.size() == 1);
  CHECK(second.seen.size() == 1);

  // A listener for no cause at all hears nothing.
  Sink third;
  store.set_listener(third.fn(), KeyEventCauses{});
  every_cause(store, clock);
  CHECK(third.seen.empty());

  // Subscribing again, with all causes, works on the same store.
  store.clear();
  Sink fourth;
  store.set_listener(fourth.fn());
  REQUIRE(store.set("x", "1") == true);
  CHECK(fourth.seen == std::vector<Ev>{{KeyEventCause::set, "x", std::nullopt}});
}

TEST_CASE("listener causes: getdel delivers del with its value only when subscribed", "[service-api][listener]") {
  ManualClock clock{T0};
  S store{clock, opts()};
  Sink sink;
  REQUIRE(store.set("a", "1") == true);
  REQUIRE(store.set("b", "2") == true);
  store.set_listener(sink.fn(), KeyEventCauses{KeyEventCause::set});
  CHECK(store.getdel("a") == std::optional<std::string>("1"));
  CHECK(sink.seen.empty());
  store.set_listener(sink.fn(), KeyEventCauses::removals());
  CHECK(store.getdel("b") == std::optional<std::string>("2"));
  CHECK(sink.seen == std::vector<Ev>{{KeyEventCause::del, "b", std::string("2")}});
}
