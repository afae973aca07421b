// tests/test_policy.hpp: the expiry index policy the unit suite runs over.
//
// tests/CMakeLists.txt builds the suite twice: as expiring_tests over SampledExpiry (the
// library's default) and as expiring_tests_wheel over TimeOrderedExpiry, with
// EXPIRING_TEST_TIME_ORDERED defined. Every store type in the suite names TestPolicy, so the
// choice is the test's, made in one place, and never changes a library default (two
// translation units of one program can then never disagree about what ExpiringStore<K, V> is).
#pragma once

#include <expiring/expiring.hpp>

#if defined(EXPIRING_TEST_TIME_ORDERED)
using TestPolicy = ::expiring::TimeOrderedExpiry;
#else
using TestPolicy = ::expiring::SampledExpiry;
#endif
