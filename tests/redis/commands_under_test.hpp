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
