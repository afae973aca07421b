// server/command_instances.cpp: the explicit instantiations that command_instances.hpp declares.
#include "command_instances.hpp"

namespace expiring::redis {

template class CommandExecutor<expiring::ManualClock&>;

}  // namespace expiring::redis
