// tests/backend/conformance.hpp: what every conformance case starts with, and its check of a
// relative reading (tests/backend/test_conformance*.cpp).
#pragma once

#include <cstdint>

#include "backend/backends.hpp"
#include "catch.hpp"

// A case's backend `b` and its store `s`; skips the case (saying why) when the backend cannot
// run here.
#define BACKEND_SETUP()                                                   \
  TestType b;                                                             \
  if (!b.ready()) EXPIRING_SKIP(TestType::kName << ": " << b.why());      \
  auto& s = b.store()

// A relative reading taken just after a write of `expected`: equal in-process, within the
// slack on a server (which may also round a second up, hence +1 for TTL in seconds).
#define CHECK_NEAR_BELOW(value, expected, slack) \
  do {                                           \
    const std::int64_t v_ = (value);             \
    CHECK(v_ <= (expected));                     \
    CHECK(v_ >= (expected) - (slack));           \
  } while (0)
