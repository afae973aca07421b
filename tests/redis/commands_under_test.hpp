// tests/redis/commands_under_test.hpp: the command layer as the tests include it.
//
// Where the server library is built (Linux, EXPIRING_BUILD_SERVER) the test targets link it and
// define EXPIRING_COMMAND_INSTANCES: its command_instances.hpp declares the instances of
// CommandExecutor (ManualClock&) `extern template`, so that they are compiled once,
// in the library, not again in every test file. Elsewhere the tests instantiate them
// themselves from commands.hpp, as any header-only user does.
#pragma once

#if defined(EXPIRING_COMMAND_INSTANCES)
#include "command_instances.hpp"
#else
#include "expiring/redis/commands.hpp"
#endif

#include <cstdint>
#include <memory>
#include <vector>

#include <expiring/clock.hpp>

namespace commands_under_test {

// `n` databases over one ManualClock, as a CommandExecutor over several takes them (the
// executor holds pointers; these own the stores).
struct Databases {
  using Store = expiring::redis::ValueStore<expiring::ManualClock&>;
  expiring::ManualClock clock;
  std::vector<std::unique_ptr<Store>> owned;
  std::vector<Store*> dbs;
  Databases(int n, std::int64_t t0) : clock(t0) {
    for (int i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<Store>(clock));
      dbs.push_back(owned.back().get());
    }
  }
};

}  // namespace commands_under_test
