// tests/fuzz/fuzz_support.hpp: what the libFuzzer targets of tests/fuzz share.
//
//   FUZZ_CHECK(cond, what)     a property that must hold: prints and aborts, which libFuzzer
//                              reports as a crash (with the input saved as crash-<sha1>)
//   Snapshot state(store)      a store's content as sorted (key, value bytes, deadline), to
//                              compare two stores or one store before and after
//   corpus_dir(argc, argv)     the directory of -expiring_make_corpus=DIR, if given: each target
//                              then writes its seed inputs there (made by the library itself)
//                              and exits instead of fuzzing
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "expiring/codec.hpp"
#include "expiring/redis/commands.hpp"

#define FUZZ_CHECK(cond, what)                                                                        \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "%s:%d: property failed: %s (%s)\n", __FILE__, __LINE__, #cond, (what)); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (0)

namespace fuzz {

using ValueStore = expiring::redis::ValueStore<expiring::ManualClock&>;

// A store's content, independent of its storage order: every stored key with its value's
// codec bytes (a hash's fields in their own order, which save and load keep) and deadline.
using State = std::vector<std::tuple<std::string, std::string, std::optional<std::int64_t>>>;

template <class Store>
State state(const Store& s) {
  State out;
  out.reserve(s.size());
  s.visit_stored([&](const std::string& k, const typename Store::mapped_type& v, const std::optional<std::int64_t>& d) {
    std::string bytes;
    expiring::Codec<typename Store::mapped_type>::encode(v, bytes);
    out.emplace_back(k, std::move(bytes), d);
  });
  std::sort(out.begin(), out.end());
  return out;
}

// The value of -expiring_make_corpus=DIR among libFuzzer's arguments (libFuzzer itself only
// warns about a flag it does not know, so it is looked for before libFuzzer starts).
inline std::optional<std::string> corpus_dir(int argc, char** argv) {
  static const std::string flag = "-expiring_make_corpus=";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(flag, 0) == 0) return a.substr(flag.size());
  }
  return std::nullopt;
}

// Empties `dir` (creating it) and writes each seed as seed-<n>; exits the process. A seed run
// always starts from what this build of the library writes, not from a stale directory.
[[noreturn]] inline void write_corpus(const std::string& dir, const std::vector<std::string>& seeds) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(dir + "/seed-" + std::to_string(i), std::ios::binary);
    out.write(seeds[i].data(), static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "cannot write the corpus in %s\n", dir.c_str());
      std::exit(1);
    }
  }
  std::fprintf(stderr, "wrote %zu seed inputs to %s\n", seeds.size(), dir.c_str());
  std::exit(0);
}

// A small store with what a snapshot, a log and a stream carry: strings with and without a
// deadline, an empty key and value, deadlines at the ends of the range, hashes whose fields
// have deadlines of their own (one past, as a primary would still hold it).
inline void populate(ValueStore& s, std::int64_t now) {
  using expiring::PxAt;
  using expiring::redis::Value;
  (void)s.set("plain", Value(std::string("v")));
  (void)s.set("", Value(std::string()));
  (void)s.set("ttl", Value(std::string("soon")), PxAt{now + 5000});
  (void)s.set("far", Value(std::string(40, 'x')), PxAt{INT64_MAX});
  (void)s.hset("h", "f1", "a");
  (void)s.hset("h", "f2", "b");
  (void)s.hset("h", "f3", "c");
  const std::vector<std::string> f1{"f1"};
  (void)s.hpexpireat("h", now + 100, f1);
  (void)s.hset("ht", "only", "z");
  (void)s.pexpireat("ht", now + 60000);
}

}  // namespace fuzz
