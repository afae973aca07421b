// tests/test_build_smoke.cpp: a placeholder that builds before the library lands; checks that
// the version macros agree with EXPIRING_VERSION_STRING.
// expiring-test: one policy (version macros only)
#include <expiring/version.hpp>

#include <string>

#include "catch.hpp"

TEST_CASE("version: EXPIRING_VERSION_STRING matches the numeric macros") {
  const std::string expected = std::to_string(EXPIRING_VERSION_MAJOR) + "." +
                               std::to_string(EXPIRING_VERSION_MINOR) + "." +
                               std::to_string(EXPIRING_VERSION_PATCH);
  CHECK(std::string{EXPIRING_VERSION_STRING} == expected);
}
