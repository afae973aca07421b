// expiring/detail/attributes.hpp: the compiler hints the library's hot and cold paths use.
//   EXPIRING_NOINLINE      a cold path kept out of its callers (and compiled once when it is
//                          not a template)
//   EXPIRING_INLINE        a hot path the optimiser must inline
//   EXPIRING_UNLIKELY(x)   a branch that is rarely taken
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define EXPIRING_NOINLINE __attribute__((noinline))
#define EXPIRING_INLINE inline __attribute__((always_inline))
#define EXPIRING_UNLIKELY(x) __builtin_expect(!!(x), 0)
#elif defined(_MSC_VER)
#define EXPIRING_NOINLINE __declspec(noinline)
#define EXPIRING_INLINE __forceinline
#define EXPIRING_UNLIKELY(x) (x)
#else
#define EXPIRING_NOINLINE
#define EXPIRING_INLINE inline
#define EXPIRING_UNLIKELY(x) (x)
#endif
