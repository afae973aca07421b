// expiring/expiring.hpp: the umbrella header. Include this one.
#pragma once

#include "clock.hpp"
#include "error.hpp"
#include "events.hpp"
#include "expiring_store.hpp"
#include "hash.hpp"
#include "options.hpp"
#include "stats.hpp"
#include "version.hpp"
