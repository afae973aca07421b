// tests/fuzz/fuzz_rdb_load.cpp: libFuzzer target for expiring::load_rdb_bytes() (rdb.hpp), Redis's
// RDB format, and for restore() of a DUMP payload (the same value encodings), over a store of
// redis::Value (strings, and hashes with field deadlines). Clang only.
//
// Each input is loaded twice: as it is, and with its last 8 bytes replaced by the CRC-64 of the
// rest (else almost every mutation would stop at the checksum, and the part after it, which
// replaces the store's content, would never run). Each load goes into a store that already
// holds keys, as a primary and as a replica, skipping other types. Properties:
//   * a refused load answers corrupt_file, truncated_file, unsupported_version or
//     unsupported_type, with an offset inside the input and a message, and leaves the store
//     exactly as it was (nothing else escapes: no exception, no crash);
//   * a load that succeeds leaves a store whose invariants hold, with as many keys as it
//     reports; as a primary no key or field is past its deadline; and save_rdb() of it loads
//     again into a fresh store to the same content.
// Each input is also restored as a DUMP payload: as it is, and as the body of a payload with a
// sound footer (version 10, its CRC-64). A refused restore answers bad_dump_payload,
// corrupt_file, truncated_file or unsupported_type and leaves the store as it was; one that
// succeeds leaves the invariants whole, and dump() of the restored key restores again to the
// same value.
//
// Run by ctest for a few seconds (label fuzz). By hand, longer:
//   build/fuzz/tests/fuzz/fuzz_rdb_load -expiring_make_corpus=/tmp/rdb-seeds
//   build/fuzz/tests/fuzz/fuzz_rdb_load -max_total_time=600 -max_len=4096 /tmp/rdb-seeds
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "expiring/rdb.hpp"
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
  expiring::RdbLoadOptions lo;
  lo.as = as;
  lo.skip_other_types = true;
  const auto r = expiring::load_rdb_bytes(s, bytes, lo);
  if (!r.ok()) {
    const expiring::Errc c = r.code();
    FUZZ_CHECK(c == expiring::Errc::corrupt_file || c == expiring::Errc::truncated_file ||
                   c == expiring::Errc::unsupported_version || c == expiring::Errc::unsupported_type,
               r.error().message.c_str());
    FUZZ_CHECK(r.error().offset <= bytes.size(), r.error().message.c_str());
    FUZZ_CHECK(!r.error().message.empty(), "an error without a message");
    FUZZ_CHECK(fuzz::state(s) == before, "a refused load changed the store");
    return;
  }
  FUZZ_CHECK(s.check_invariants(), "invariants after a load");
  FUZZ_CHECK(r->keys == s.size(), "the keys a load reports are the keys the store holds");
  const fuzz::State loaded = fuzz::state(s);
  if (as == expiring::LoadAs::primary) {
    for (const auto& [key, value, deadline] : loaded) {
      FUZZ_CHECK(!deadline || !(kNow > *deadline), "a primary kept a key past its deadline");
    }
  }
  std::string again_bytes;
  const auto saved = expiring::save_rdb(s, again_bytes);
  FUZZ_CHECK(saved.ok(), saved.error().message.c_str());
  fuzz::ValueStore t{clock, o};
  expiring::RdbLoadOptions replica;
  replica.as = expiring::LoadAs::replica;
  const auto again = expiring::load_rdb_bytes(t, again_bytes, replica);
  FUZZ_CHECK(again.ok(), again.error().message.c_str());
  FUZZ_CHECK(fuzz::state(t) == loaded, "save_rdb() and load_rdb() of a loaded store changed it");
}

void restore_one(const std::string& payload, bool replica) {
  expiring::ManualClock clock{kNow};
  expiring::Options o;
  o.replica = replica;
  fuzz::ValueStore s{clock, o};
  fuzz::populate(s, kNow);
  const fuzz::State before = fuzz::state(s);
  expiring::RestoreOptions ro;
  ro.replace = true;
  const auto r = expiring::restore(s, "restored", payload, ro);
  if (!r.ok()) {
    const expiring::Errc c = r.code();
    FUZZ_CHECK(c == expiring::Errc::bad_dump_payload || c == expiring::Errc::corrupt_file ||
                   c == expiring::Errc::truncated_file || c == expiring::Errc::unsupported_type,
               r.error().message.c_str());
    FUZZ_CHECK(!r.error().message.empty(), "an error without a message");
    FUZZ_CHECK(fuzz::state(s) == before, "a refused restore changed the store");
    return;
  }
  FUZZ_CHECK(s.check_invariants(), "invariants after a restore");
  const auto again = expiring::dump(s, "restored");
  if (!again) return;  // a hash whose fields were all past their deadlines: gone on first read
  fuzz::ValueStore t{clock, o};
  const auto back = expiring::restore(t, "restored", *again, ro);
  FUZZ_CHECK(back.ok(), back.error().message.c_str());
  FUZZ_CHECK(expiring::dump(t, "restored") == again, "dump() and restore() of a restored value changed it");
}

// `body` with a DUMP footer: RDB version 10 and the CRC-64.
std::string with_footer(const std::string& body) {
  std::string p = body;
  p += '\x0a';
  p += '\x00';
  const std::uint64_t crc = expiring::detail::rdb::crc64(0, p.data(), p.size());
  for (int i = 0; i < 8; ++i) p.push_back(static_cast<char>((crc >> (8 * i)) & 0xFFu));
  return p;
}

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  expiring::ManualClock clock{kNow};
  fuzz::ValueStore s{clock};
  fuzz::populate(s, kNow);
  for (const bool compress : {true, false}) {
    expiring::RdbSaveOptions o;
    o.compress = compress;
    std::string b;
    (void)expiring::save_rdb(s, b, o);
    out.push_back(b);
  }
  (void)s.set("long", expiring::redis::Value(std::string(300, 'a') + "b" + std::string(300, 'c')));
  for (int i = 0; i < 40; ++i) (void)s.hset("many", "f" + std::to_string(i), std::to_string(i * 1000));
  std::string b;
  (void)expiring::save_rdb(s, b);
  out.push_back(b);
  // DUMP payloads' bodies (the footer is added by the target).
  for (const char* k : {"long", "many"}) {
    const std::string p = expiring::dump_value(*s.peek(std::string(k)));
    out.push_back(p.substr(0, p.size() - 10));
  }
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
    if (size >= 8) {
      std::string sealed = raw;
      const std::uint64_t crc = expiring::detail::rdb::crc64(0, sealed.data(), sealed.size() - 8);
      for (int i = 0; i < 8; ++i) sealed[sealed.size() - 8 + i] = static_cast<char>((crc >> (8 * i)) & 0xFFu);
      if (sealed != raw) load_one(sealed, as);
    }
  }
  for (const bool replica : {false, true}) {
    restore_one(raw, replica);
    restore_one(with_footer(raw), replica);
  }
  return 0;
}
