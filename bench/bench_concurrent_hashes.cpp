// bench/bench_concurrent_hashes.cpp: hash-field operations on ConcurrentStore at one thread
// against ExpiringStore's (issue 26, P2: <= 1.3x per operation).
//
// Both stores hold the same hashes, FieldMap<std::string, std::string> of 100 fields named
// "field:<i>" with values of 1 byte, every field with a TTL an hour away; ConcurrentStore has
// its default shards, and each of its calls takes its shard's lock. Three operations, as in
// bench_hash_fields part 4: hget() of a live field (ExpiringStore returns a pointer,
// ConcurrentStore a copy; a fourth row, "hget+copy", has ExpiringStore's caller copy the value
// into a std::optional too, as a caller that keeps it does; a fifth, "hvisit", reads the value
// in place on both: ConcurrentStore's hvisit() of the field under the lock against
// ExpiringStore's hget() pointer), hpexpireat() of one field (a
// different deadline each time), hset() of an existing field (which clears its TTL; every
// field gets one again between rounds). At 1e4 x 100 and 100 x 100 (smoke: 100 x 100).
//
// A round draws 65,536 random (hash, field)s afresh and runs both contenders' turns of each
// operation over them back to back, the store first in even rounds and second in odd ones:
// a turn finds in the cache what the turn before it left there, which at 1e6 fields moved a
// ratio by 0.3 when the same contender always went first over the same fields. The figure is
// the median turn's ns per operation.
//
// A program of its own: in one translation unit with bench_hash_fields' part 4, GCC 12 stopped
// inlining ExpiringStore::hset() into either caller, which made part 4's store 25% slower at
// 1e4 x 100 and this comparison's baseline as slow (a ratio flattered by a slower baseline).
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <expiring/concurrent_store.hpp>
#include <expiring/expiring.hpp>
#include <expiring/hash_fields.hpp>

#include "bench_common.hpp"

namespace {

using Hash = expiring::FieldMap<std::string, std::string>;
using HStore = expiring::Store<std::string, Hash, expiring::ManualClock&>;
using CStore = expiring::ConcurrentStore<std::string, Hash, expiring::ManualClock>;
using clk = std::chrono::steady_clock;
constexpr std::int64_t kT0 = 1'700'000'000'000;  // 2023, in Unix ms
constexpr std::size_t kTurnOps = 65536;
constexpr double kGoal = 1.3;

std::vector<std::string> numbered(const char* prefix, std::size_t n) {
  std::vector<std::string> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

using bench::median;

struct Row {
  double conc_ns[5];   // hget, hpexpireat, hset, hget (the store's caller copies), hvisit
  double store_ns[5];
};

Row run(std::size_t hashes, std::size_t per, const std::vector<std::string>& keys, const std::vector<std::string>& fields,
        int turns) {
  expiring::Options o;
  o.seed = 42;
  expiring::ManualClock clock{kT0};
  HStore store{clock, o};
  CStore conc{clock, o};
  const std::int64_t hour = kT0 + 3'600'000;
  const auto give_ttls = [&] {
    for (std::size_t h = 0; h < hashes; ++h) {
      for (std::size_t f = 0; f < per; ++f) {
        (void)store.hpexpireat(keys[h], hour, std::array<std::string_view, 1>{fields[f]});
        (void)conc.hpexpireat(keys[h], hour, std::array<std::string_view, 1>{fields[f]});
      }
    }
  };
  for (std::size_t h = 0; h < hashes; ++h) {
    for (std::size_t f = 0; f < per; ++f) {
      (void)store.hset(keys[h], fields[f], std::string("v"));
      (void)conc.hset(keys[h], fields[f], std::string("v"));
    }
  }
  give_ttls();
  // The store's three, then the concurrent store's, then the store's hget+copy, then the
  // store's hget reading the value and the concurrent store's hvisit of it.
  std::vector<double> samples[9];
  std::uint64_t sink = 0;
  std::int64_t when = hour;
  std::vector<std::uint32_t> order;
  const auto turn = [&](auto&& op) {
    const auto t0 = clk::now();
    for (std::size_t j = 0; j < kTurnOps; ++j) {
      const std::uint32_t r = order[j];
      op(keys[r / per], fields[r % per]);
    }
    return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / kTurnOps;
  };
  // Both contenders' turns of one operation, back to back over the same (hash, field)s, the
  // store first on even rounds and second on odd ones: a turn finds in the cache what the
  // turn before it left there, so that neither contender always follows itself.
  int round = 0;
  const auto pair = [&](std::vector<double>& s_out, auto&& s_op, std::vector<double>& c_out, auto&& c_op) {
    if (round % 2 == 0) {
      s_out.push_back(turn(s_op));
      c_out.push_back(turn(c_op));
    } else {
      c_out.push_back(turn(c_op));
      s_out.push_back(turn(s_op));
    }
  };
  for (int t = 0; t < turns; ++t, ++round) {
    order = bench::random_order(hashes * per, kTurnOps, 7 + static_cast<std::uint64_t>(t));  // fresh fields each round
    const auto conc_hget = [&](const std::string& k, const std::string& f) {
      const auto v = conc.hget(k, f);
      sink += v.ok() && v->has_value();
    };
    pair(
        samples[0],
        [&](const std::string& k, const std::string& f) {
          const auto v = store.hget(k, f);
          sink += v.ok() && *v != nullptr;
        },
        samples[3], conc_hget);
    std::vector<double> again;  // (the concurrent store's second hget turn, for the pairing only)
    pair(
        samples[6],
        [&](const std::string& k, const std::string& f) {
          const auto v = store.hget(k, f);
          std::optional<std::string> copy;
          if (v.ok() && *v != nullptr) copy.emplace(**v);
          sink += copy.has_value();
        },
        again, conc_hget);
    pair(
        samples[7],
        [&](const std::string& k, const std::string& f) {
          const auto v = store.hget(k, f);
          if (v.ok() && *v != nullptr) sink += (**v).size();
        },
        samples[8],
        [&](const std::string& k, const std::string& f) {
          (void)conc.hvisit(k, f, [&](const std::string& v) { sink += v.size(); });
        });
    pair(
        samples[1],
        [&](const std::string& k, const std::string& f) {
          int code = 0;
          (void)store.hpexpireat(k, ++when, std::array<std::string_view, 1>{f}, expiring::ExpireFlags::None, &code);
          sink += static_cast<std::uint64_t>(code);
        },
        samples[4],
        [&](const std::string& k, const std::string& f) {
          int code = 0;
          (void)conc.hpexpireat(k, ++when, std::array<std::string_view, 1>{f}, expiring::ExpireFlags::None, &code);
          sink += static_cast<std::uint64_t>(code);
        });
    pair(
        samples[2], [&](const std::string& k, const std::string& f) { sink += store.hset(k, f, std::string_view("w")).value_or(0); },
        samples[5], [&](const std::string& k, const std::string& f) { sink += conc.hset(k, f, std::string_view("w")).value_or(0); });
    give_ttls();  // for the next turn's hset (outside the timed turns)
  }
  if (sink == 0) std::printf("bench_concurrent_hashes: nothing happened\n");
  Row row{};
  for (int i = 0; i < 3; ++i) {
    row.store_ns[i] = median(samples[i]);
    row.conc_ns[i] = median(samples[i + 3]);
  }
  row.store_ns[3] = median(samples[6]);
  row.conc_ns[3] = row.conc_ns[0];
  row.store_ns[4] = median(samples[7]);
  row.conc_ns[4] = median(samples[8]);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RunConfig cfg = bench::parse_args(argc, argv);
  const bool smoke = cfg.mode == bench::Mode::smoke;
  const std::size_t max_hashes = smoke ? 100 : 10'000;
  const std::vector<std::string> keys = numbered("hash:", max_hashes);
  const std::vector<std::string> fields = numbered("field:", 100);
  std::printf("bench_concurrent_hashes: ConcurrentStore<std::string, FieldMap<std::string, std::string>> at one thread\n"
              "against ExpiringStore (ns per operation, median turn; goal P2: <= %.1fx)\n\n", kGoal);
  std::printf("%-12s %-11s %9s %9s %8s %6s %s\n", "shape", "op", "conc", "store", "ratio", "goal", "");
  std::vector<std::size_t> shapes{100};
  if (!smoke) shapes.insert(shapes.begin(), max_hashes);
  for (const std::size_t hashes : shapes) {
    const Row r = run(hashes, 100, keys, fields, smoke ? 3 : 21);
    const char* names[5] = {"hget", "hpexpireat", "hset", "hget+copy", "hvisit"};
    char label[64];
    std::snprintf(label, sizeof label, "%zu x 100", hashes);
    for (int i = 0; i < 5; ++i) {
      const double ratio = r.conc_ns[i] / r.store_ns[i];
      std::printf("%-12s %-11s %9.1f %9.1f %7.2fx %5.1fx %s\n", label, names[i], r.conc_ns[i], r.store_ns[i], ratio, kGoal,
                  ratio <= kGoal ? "pass" : "MISS");
    }
  }
  return 0;
}
