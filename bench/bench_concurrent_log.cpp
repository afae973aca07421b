// bench/bench_concurrent_log.cpp: issue 26's goal P3, the cost of an append-only log on a
// ConcurrentStore: bench_concurrent's harness, workload and method with one more contender,
// `logged` (the store with an AppendLog at appendfsync everysec), against `concurrent` (the
// same store without a log) by default. bench_concurrent.cpp documents the method, the
// contenders and the flags; this program is that file compiled with the log in.
//
// A program of its own because adding a contender to bench_concurrent changed how GCC 12
// compiled the others: `concurrent` measured 15-20% slower at one thread in that program.
#define EXPIRING_BENCH_WITH_LOG 1
#include "bench_concurrent.cpp"  // NOLINT(bugprone-suspicious-include): the same program, one contender more
