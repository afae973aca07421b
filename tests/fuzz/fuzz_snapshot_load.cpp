// tests/fuzz/fuzz_snapshot_load.cpp: libFuzzer target for expiring::load() (snapshot.hpp), over
// a store of redis::Value (strings, and hashes with field deadlines). Clang only.
//
// Each input is loaded as a snapshot twice: as it is, and with its last 4 bytes replaced by
// the CRC-32C of the rest (else almost every mutation would stop at the checksum, and the
// part after it, which replaces the store's content, would never run). Each load goes into a
// store that already holds keys, as a primary and as a replica. Properties:
//   * a refused load answers corrupt_file, truncated_file or unsupported_version, with an
//     offset inside the input and a message, and leaves the store exactly as it was;
//   * a load that succeeds leaves a store whose invariants hold (no hash without a field),
//     with as many keys as it reports (two records of one key would count twice); as a
//     primary no key or field is past its deadline; and save() of it loads again into a fresh store to
//     the same content (a loaded store is always one that can be saved and loaded).
//
// Run by ctest for a few seconds (label fuzz, tests/fuzz/CMakeLists.txt). By hand, longer:
//   build/fuzz/tests/fuzz/fuzz_snapshot_load -expiring_make_corpus=/tmp/snap-seeds
//   build/fuzz/tests/fuzz/fuzz_snapshot_load -max_total_time=600 -max_len=4096 /tmp/snap-seeds
// (a crash leaves crash-<sha1> in the working directory; run the target on that file alone
// to replay it).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "expiring/snapshot.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;

void load_one(const std::string& bytes, expiring::LoadAs as) {
  expiring::ManualClock clock{kNow};
  expiring::Options o;
  o.replica = as == expiring::LoadAs::replica;
  fuzz::ValueStore s{clock, o};
  fuzz::populate(s, kNow);
  const fuzz::State before = fuzz::state(s);

  std::istringstream in(bytes);
  const auto r = expiring::load(s, in, as);
  if (!r.ok()) {
    const expiring::Errc c = r.code();
    FUZZ_CHECK(c == expiring::Errc::corrupt_file || c == expiring::Errc::truncated_file ||
                   c == expiring::Errc::unsupported_version,
               r.error().message.c_str());
    FUZZ_CHECK(r.error().offset <= bytes.size(), r.error().message.c_str());
    FUZZ_CHECK(r.error().message.rfind("snapshot: ", 0) == 0, r.error().message.c_str());
    FUZZ_CHECK(fuzz::state(s) == before, "a refused load changed the store");
    return;
  }
  FUZZ_CHECK(s.check_invariants(), "invariants after a load");
  FUZZ_CHECK(r->keys == s.size(), "the keys a load reports are the keys the store holds");
  FUZZ_CHECK(r->bytes <= bytes.size(), "a load read past its input");
  const fuzz::State loaded = fuzz::state(s);
  if (as == expiring::LoadAs::primary) {
    for (const auto& [key, value, deadline] : loaded) {
      FUZZ_CHECK(!deadline || !(kNow > *deadline), "a primary kept a key past its deadline");
    }
    s.visit_stored([&](const std::string&, const expiring::redis::Value& v, const std::optional<std::int64_t>&) {
      if (const expiring::redis::Hash* h = v.hash()) {
        for (std::uint32_t pos = 0; pos < h->size(); ++pos) {
          const std::int64_t d = h->deadline(pos);
          FUZZ_CHECK(d == expiring::redis::Hash::kNoDeadline || !(kNow > d), "a primary kept a field past its deadline");
        }
      }
    });
  }
  std::stringstream io;
  const auto saved = expiring::save(s, io);
  FUZZ_CHECK(saved.ok(), saved.error().message.c_str());
  FUZZ_CHECK(saved->keys == s.size(), "save() wrote every key");
  fuzz::ValueStore t{clock, o};
  const auto again = expiring::load(t, io, expiring::LoadAs::replica);
  FUZZ_CHECK(again.ok(), again.error().message.c_str());
  FUZZ_CHECK(fuzz::state(t) == loaded, "save() and load() of a loaded store changed it");
}

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  expiring::ManualClock clock{kNow};
  {
    fuzz::ValueStore empty{clock};
    std::ostringstream o;
    (void)expiring::save(empty, o);
    out.push_back(o.str());
  }
  fuzz::ValueStore s{clock};
  fuzz::populate(s, kNow);
  std::ostringstream o;
  (void)expiring::save(s, o);
  out.push_back(o.str());
  // The same store later: a primary's load skips the key and the field that expired.
  clock.advance(std::chrono::milliseconds(10'000));
  std::ostringstream later;
  (void)expiring::save(s, later);
  out.push_back(later.str());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const auto dir = fuzz::corpus_dir(*argc, *argv)) fuzz::write_corpus(*dir, seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  for (const expiring::LoadAs as : {expiring::LoadAs::primary, expiring::LoadAs::replica}) {
    load_one(raw, as);
    if (size >= 4) {
      // With a checksum that matches: the records, the end marker and the apply step.
      std::string sealed = raw;
      const std::uint32_t crc = expiring::detail::crc32c(sealed.data(), sealed.size() - 4);
      for (int i = 0; i < 4; ++i) sealed[sealed.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
      if (sealed != raw) load_one(sealed, as);
    }
  }
  return 0;
}
