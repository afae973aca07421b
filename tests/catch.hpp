// tests/catch.hpp: include Catch2 v3 where it is installed, else Catch2 v2 (Debian 12: 2.13.10).
// Test files write `#include "catch.hpp"` and use the macros common to both versions.
#pragma once

#if defined(__has_include)
#  if __has_include(<catch2/catch_all.hpp>)
#    include <catch2/catch_all.hpp>
#    define EXPIRING_CATCH2_V3 1
#  else
#    include <catch2/catch.hpp>
#    define EXPIRING_CATCH2_V2 1
#  endif
#else
#  include <catch2/catch.hpp>
#  define EXPIRING_CATCH2_V2 1
#endif
