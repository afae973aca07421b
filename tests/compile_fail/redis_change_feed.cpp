// Must not compile: a change feed on RedisStore (a Redis server replicates itself).
#include <expiring/redis_store.hpp>

#include <string>

int main() {
  expiring::RedisStore<std::string, std::string> store(expiring::RedisOptions{});
  store.set_change_feed([](const auto&) {});
  return 0;
}
