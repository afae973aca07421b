// tests/backend/test_redis_cluster.cpp: RedisStore on a real three-master Redis Cluster.
//
// Routing (the client's slots agree with CLUSTER KEYSLOT, keys land on all three masters),
// multi-key calls across slots (split, or refused with crossslot before anything is sent),
// scripts on nodes that have not cached them, and a slot migration in redis-cli's order with
// the store used between the steps: ASK while the slot is migrating, TRYAGAIN for a
// multi-key command whose keys are split between the two nodes, MOVED once it has moved,
// after which the refreshed map sends the key straight to its new owner; and a master that is
// killed and restarted (a cluster of its own).
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backends.hpp"
#include "catch.hpp"

using expiring::Errc;
using expiring::RedisError;
using expiring::RedisOptions;
using backend_test::RedisCluster;
using Store = expiring::RedisStore<std::string, std::string>;

namespace {

#define NEED_CLUSTER()                                                     \
  std::string why_;                                                        \
  RedisCluster* cluster = backend_test::shared_cluster(why_);              \
  if (cluster == nullptr) EXPIRING_SKIP("no Redis Cluster: " << why_)

RedisOptions cluster_options(const RedisCluster& c, const std::string& prefix = backend_test::next_prefix()) {
  RedisOptions o;
  o.cluster = true;
  o.nodes = {{"127.0.0.1", c.ports()[1]}};  // any node will do as the seed
  o.key_prefix = prefix;
  return o;
}

template <class F>
Errc thrown(F&& fn) {
  try {
    fn();
  } catch (const RedisError& e) {
    return e.code();
  }
  FAIL("no RedisError was thrown");
  return Errc{};
}

std::int64_t count_in_slot(RedisCluster& c, std::size_t node, int slot) {
  return c.command(node, {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}).integer();
}

}  // namespace

TEST_CASE("redis cluster: the client's key slots are the server's", "[cluster]") {
  NEED_CLUSTER();
  Store s(cluster_options(*cluster, ""));
  const std::vector<std::string> keys{"foo", "bar", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{}",
                                      "a{b}c", "x{", "}{y}", std::string("nul\0key", 7)};
  for (const std::string& k : keys) CHECK(s.key_slot(k) == cluster->keyslot(k));
  for (int i = 0; i < 100; ++i) {
    const std::string k = "random-" + std::to_string(i * 7919) + (i % 3 == 0 ? "{tag" + std::to_string(i) + "}" : "");
    CHECK(s.key_slot(k) == cluster->keyslot(k));
  }
}

TEST_CASE("redis cluster: keys are routed to every master", "[cluster]") {
  NEED_CLUSTER();
  RedisOptions o = cluster_options(*cluster);
  Store s(o);
  std::vector<std::int64_t> per_node(3, 0);
  for (int i = 0; i < 300; ++i) {
    const std::string k = "k" + std::to_string(i);
    REQUIRE(s.set(k, std::to_string(i), expiring::Ex{600}) == true);
    ++per_node[cluster->owner_of_slot(s.key_slot(k))];
  }
  for (std::size_t n = 0; n < 3; ++n) CHECK(per_node[n] > 50);
  std::int64_t total = 0;
  for (std::size_t n = 0; n < 3; ++n) total += cluster->command(n, {"DBSIZE"}).integer();
  CHECK(total >= 300);
  // Each key is where its slot says, readable through the store.
  for (int i = 0; i < 300; i += 37) CHECK(s.get("k" + std::to_string(i)) == std::to_string(i));
  CHECK(s.client_stats().moved == 0);  // the map was loaded before the first command
}

TEST_CASE("redis cluster: multi-key calls across slots are split or refused", "[cluster]") {
  NEED_CLUSTER();
  Store s(cluster_options(*cluster));
  REQUIRE(s.key_slot("a") != s.key_slot("b"));
  REQUIRE(s.set("a", "1") == true);
  const auto before = s.client_stats().commands;
  CHECK(thrown([&] { (void)s.rename("a", "b"); }) == Errc::crossslot);
  CHECK(thrown([&] { (void)s.renamenx("a", "b"); }) == Errc::crossslot);
  CHECK(thrown([&] { (void)s.copy("a", "b"); }) == Errc::crossslot);
  CHECK(thrown([&] { (void)s.msetnx(std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}); }) ==
        Errc::crossslot);
  CHECK(s.client_stats().commands == before);  // refused before anything was sent
  CHECK(s.exists("a"));
  CHECK_FALSE(s.exists("b"));
  // Split by slot: not atomic across slots, each part is.
  CHECK(s.mset(std::vector<std::pair<std::string, std::string>>{{"a", "x"}, {"b", "y"}, {"c", "z"}}).ok());
  std::vector<std::optional<std::string>> out(4);
  CHECK(s.get_many(std::vector<std::string>{"a", "b", "c", "d"}, out.data()) == 3);
  CHECK(out[1] == std::string("y"));
  CHECK(s.del_many(std::vector<std::string>{"a", "b", "c", "d"}) == 3);
}

TEST_CASE("redis cluster: scripts run on nodes that have not cached them", "[cluster]") {
  NEED_CLUSTER();
  Store s(cluster_options(*cluster));
  for (std::size_t n = 0; n < 3; ++n) cluster->command(n, {"SCRIPT", "FLUSH"});
  int done = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string k = "lease" + std::to_string(i);
    REQUIRE(s.set(k, "me") == true);
    done += s.pexpireat_if_equal(k, "me", backend_test::kEpochMs * 2) == true ? 1 : 0;
    done += s.del_if_equal(k, "me") ? 1 : 0;
  }
  CHECK(done == 60);
}

TEST_CASE("redis cluster: a slot migration is followed through ASK, TRYAGAIN and MOVED", "[cluster]") {
  NEED_CLUSTER();
  RedisOptions o = cluster_options(*cluster);
  o.max_redirects = 5;  // TRYAGAIN below is given up on quickly
  Store s(o);
  const std::string tag = "{mig}";
  const int slot = s.key_slot(tag + "k1");
  const std::size_t from = cluster->owner_of_slot(slot);
  const std::size_t to = (from + 1) % 3;

  REQUIRE(s.set(tag + "k1", "v1", expiring::Ex{600}) == true);
  const std::int64_t deadline = s.pexpiretime(tag + "k1");
  cluster->begin_migration(slot, from, to);

  // A key still on the source is served there.
  auto st = s.client_stats();
  CHECK(s.get(tag + "k1") == std::string("v1"));
  CHECK(s.client_stats().ask == st.ask);
  // A new key: the source answers ASK, the target (with ASKING) takes it.
  CHECK(s.set(tag + "k2", "v2") == true);
  CHECK(s.client_stats().ask == st.ask + 1);
  CHECK(count_in_slot(*cluster, to, slot) == 1);
  CHECK(count_in_slot(*cluster, from, slot) == 1);
  CHECK(s.get(tag + "k2") == std::string("v2"));  // ASK again: the map is not changed by ASK
  CHECK(s.client_stats().ask == st.ask + 2);
  CHECK(s.client_stats().moved == st.moved);
  // k1 here, k3 missing: TRYAGAIN, retried max_redirects times, then reported.
  CHECK(thrown([&] { (void)s.rename(tag + "k1", tag + "k3"); }) == Errc::too_many_redirects);
  CHECK(s.client_stats().tryagain >= st.tryagain + 5);
  CHECK(s.get(tag + "k1") == std::string("v1"));

  // Move the keys: now k1 is asked for at the target too.
  CHECK(cluster->migrate_keys(slot, from, to) == 1);
  st = s.client_stats();
  CHECK(s.get(tag + "k1") == std::string("v1"));
  CHECK(s.client_stats().ask == st.ask + 1);
  CHECK(s.pexpiretime(tag + "k1") >= deadline - 100);  // MIGRATE carries the TTL (relative)
  CHECK(s.pexpiretime(tag + "k1") <= deadline + 100);
  // A script through ASK, on a target that may not have it cached.
  cluster->command(to, {"SCRIPT", "FLUSH"});
  CHECK(s.pexpireat_if_equal(tag + "k1", "v1", deadline + 5000) == true);
  CHECK(s.pexpiretime(tag + "k1") == deadline + 5000);
  // A batch that mixes the migrating slot with others.
  std::vector<std::string> batch{tag + "k1", "elsewhere1", tag + "k2", "elsewhere2", tag + "nothing"};
  REQUIRE(s.set("elsewhere1", "e1") == true);
  REQUIRE(s.set("elsewhere2", "e2") == true);
  std::vector<std::optional<std::string>> out(batch.size());
  CHECK(s.get_many(batch, out.data()) == 4);
  CHECK(out[0] == std::string("v1"));
  CHECK(out[2] == std::string("v2"));
  CHECK(out[4] == std::nullopt);

  // The slot is the target's: MOVED once, then the refreshed map goes straight there.
  cluster->finish_migration(slot, from, to);
  st = s.client_stats();
  CHECK(s.get(tag + "k2") == std::string("v2"));
  CHECK(s.client_stats().moved == st.moved + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past the reload's rate limit
  CHECK(s.get(tag + "k1") == std::string("v1"));
  st = s.client_stats();
  for (int i = 0; i < 5; ++i) CHECK(s.get(tag + "k1") == std::string("v1"));
  CHECK(s.rename(tag + "k1", tag + "k3").ok());  // no keys missing any more: it runs
  CHECK(s.client_stats().moved == st.moved);
  CHECK(s.client_stats().ask == st.ask);
  CHECK(s.client_stats().slot_map_refreshes >= 2);
  CHECK(count_in_slot(*cluster, to, slot) == 2);
  CHECK(count_in_slot(*cluster, from, slot) == 0);
  CHECK(s.del_many(std::vector<std::string>{tag + "k2", tag + "k3", "elsewhere1", "elsewhere2"}) == 4);
}

TEST_CASE("redis cluster: examples/rate_limiter_anywhere runs against the cluster", "[cluster][example]") {
#ifndef EXPIRING_RATE_LIMITER_EXAMPLE
  EXPIRING_SKIP("the examples are not built");
#else
  NEED_CLUSTER();
  const live::RunResult r = live::run_program({EXPIRING_RATE_LIMITER_EXAMPLE,
                                               "--redis=127.0.0.1:" + std::to_string(cluster->ports()[2]),
                                               "--cluster", "--seconds=0.05"},
                                              "", 60000);
  INFO(r.out);
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
  CHECK(r.out.find("behaviour: 5 of 6 requests allowed") != std::string::npos);
#endif
}

TEST_CASE("redis cluster: a master that dies and comes back", "[cluster]") {
  if (!backend_test::have_redis()) EXPIRING_SKIP("redis-server or redis-cli not installed");
  RedisCluster own;  // not the shared one: this test breaks it
  RedisOptions o = cluster_options(own);
  o.nodes = {{"127.0.0.1", own.ports()[0]}, {"127.0.0.1", own.ports()[2]}};
  o.reconnect_backoff_min = std::chrono::milliseconds(5);
  o.reconnect_backoff_max = std::chrono::milliseconds(50);
  o.connect_timeout = std::chrono::milliseconds(300);
  Store s(o);
  std::string on0;
  std::string on1;
  for (int i = 0; on0.empty() || on1.empty(); ++i) {
    REQUIRE(i < 1000);
    const std::string k = "node-key-" + std::to_string(i);
    const std::size_t owner = own.owner_of_slot(s.key_slot(k));
    if (owner == 0 && on0.empty()) on0 = k;
    if (owner == 1 && on1.empty()) on1 = k;
  }
  REQUIRE(s.set(on0, "zero") == true);
  REQUIRE(s.set(on1, "one") == true);

  own.stop_node(1);
  // Its keys cannot be reached: a transport error, after the map was reloaded and the
  // retries backed off (never sent, so safe to retry), or CLUSTERDOWN once the others notice.
  try {
    (void)s.get(on1);
    FAIL("a key of a dead master was read");
  } catch (const RedisError& e) {
    CHECK((e.code() == Errc::io_error || e.code() == Errc::timeout || e.code() == Errc::cluster_down));
  }
  CHECK(s.client_stats().connect_failures >= 1);

  own.restart_node(1);
  // Back within the backoff and the map reload; its keys were lost (no persistence).
  bool back = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!back && std::chrono::steady_clock::now() < deadline) {
    try {
      back = s.set(on1, "one again") == true;
    } catch (const RedisError&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  REQUIRE(back);
  CHECK(s.get(on1) == std::string("one again"));
  CHECK(s.get(on0) == std::string("zero"));
}
