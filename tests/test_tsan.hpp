// tests/test_tsan.hpp: EXPIRING_TEST_TSAN is 1 when the test is built with ThreadSanitizer
// (GCC's __SANITIZE_THREAD__ or Clang's __has_feature), else 0, so that threaded tests can run
// fewer iterations under it (it is 5-15 times slower).
#pragma once

#if defined(__SANITIZE_THREAD__)
#define EXPIRING_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EXPIRING_TEST_TSAN 1
#endif
#endif
#if !defined(EXPIRING_TEST_TSAN)
#define EXPIRING_TEST_TSAN 0
#endif
