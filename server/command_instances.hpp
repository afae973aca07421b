// server/command_instances.hpp: the command layer's instances, compiled once.
//
// Design: CommandExecutor<Clock> is a class template of some 1,600 lines of command
// implementations (expiring/redis/commands.hpp and its cmd_*.hpp families). Every translation
// unit that used it compiled all of it again. Its instance for the clock in use is instead
// compiled once, in the expiring_server library (command_instances.cpp):
//   CommandExecutor<ManualClock&>    the server (its clock: clock.cpp) and the tests
//                                    (tests/redis, tests/robustness)
// and this header, which the server and those tests include in place of commands.hpp, tells
// every other translation unit not to instantiate them (`extern template`). A new clock that
// a test or the server uses goes into both lists. Header-only users of commands.hpp are not
// concerned: without this header they instantiate what they use, as before.
#pragma once

#include <expiring/redis/commands.hpp>

namespace expiring::redis {

extern template class CommandExecutor<expiring::ManualClock&>;

}  // namespace expiring::redis
