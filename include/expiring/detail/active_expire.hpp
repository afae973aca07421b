// expiring/detail/active_expire.hpp: Redis's active-expire cycle, the work of tick().
//
// Design
// ------
// One call of run() is one cycle of Redis's activeExpireCycle (semantics.md B §3.3, D2, D7, D8,
// D9): gating of the fast cycle, the time budget (checked every 16 rounds, as Redis), then one
// sweep of the store's expiry index, then the statistics Redis keeps (the stale-key moving
// average, avg_ttl, the cycle's CPU time and time-cap exits), then, after a mass expiry, the
// shrink of the table, within what is left of the budget. Two sweeps, one per index:
//
// * sweep_sampled (VolatileBitmap): Redis's rounds of keys_per_loop samples from a resumable
//   cursor, repeated while more than acceptable_stale% of a round was stale, plus the
//   guaranteed sweep of Options::full_pass_ticks (D9), which spreads what is left of the
//   current pass over the slow ticks left of its N.
// * sweep_wheel (TimerWheel): the wheel hands over exactly the due keys; a "round" is
//   keys_per_loop keys of work (reclaims and cascade moves).
//
// The cycle owns its state (cursor, pass progress, the averages, the fast cycle's gate) and
// nothing else: the store passes in its keyspace, its options, its statistics, its clocks and
// the one way it reclaims a key (reclaim(slot): erase as an expiry, raising the event).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../options.hpp"
#include "../stats.hpp"
#include "arith.hpp"
#include "expiry_index.hpp"

namespace expiring::detail {

class ActiveExpire {
 public:
  // One cycle. now() is read once, only if the cycle runs (D7); budget_now() is the budget's
  // microsecond clock; reclaim(slot) removes a stale key as an expiry.
  template <class Keyspace, class Now, class BudgetNow, class Reclaim>
  void run(TickReport& report, Keyspace& ks, const Options& options, const CycleParams& p, bool fast, Stats& stats,
           Now&& now_ms, BudgetNow&& budget_now, Reclaim&& reclaim) {
    const std::int64_t start = budget_now();
    if (fast) {
      // D8: Redis compares the stale *fraction* with a percentage (#15410), so in Redis a fast
      // cycle effectively runs only after a capped one. We compare percentages, as intended.
      if (!timelimit_exit_ && stale_fraction_ * 100.0 < static_cast<double>(p.acceptable_stale)) return;
      if (start < last_fast_cycle_us_ + 2 * p.fast_duration_us) return;
      last_fast_cycle_us_ = start;
    }
    report.ran = true;
    const std::int64_t timelimit = fast ? p.fast_duration_us : p.slow_time_limit_us;
    timelimit_exit_ = false;
    const std::int64_t now = now_ms();  // D7: one reading for the whole tick

    if constexpr (std::is_same_v<typename Keyspace::expiry_index_type, TimerWheel>) {
      sweep_wheel(report, ks, options, p, start, timelimit, now, budget_now, reclaim);
    } else {
      sweep_sampled(report, ks, options, p, fast, start, timelimit, now, budget_now, reclaim);
    }

    if (report.time_cap_hit) {
      timelimit_exit_ = true;
      ++stats.expired_time_cap_reached_count;
    } else {
      // After a mass expiry, shrink here rather than in a later write, and only if it fits in
      // what is left of this tick's budget (else a later tick, with its whole budget, does).
      ks.compact(timelimit - (budget_now() - start));
    }
    report.elapsed_us = budget_now() - start;
    if (report.elapsed_us > 0) stats.expire_cycle_cpu_microseconds += static_cast<std::uint64_t>(report.elapsed_us);
    const double current =
        report.sampled != 0 ? static_cast<double>(report.expired) / static_cast<double>(report.sampled) : 0.0;
    stale_fraction_ = current * 0.05 + stale_fraction_ * 0.95;
  }

  double stale_fraction() const noexcept { return stale_fraction_; }  // Redis stat_expired_stale_perc
  std::int64_t avg_ttl() const noexcept { return avg_ttl_; }          // Redis db->avg_ttl (ms)
  // FLUSHDB: the pass starts over and the keyspace has no TTLs to average.
  void on_clear() noexcept {
    cursor_ = 0;
    pass_ticks_ = 0;
    pass_left_ = 0;
    avg_ttl_ = 0;
  }
  // CONFIG RESETSTAT.
  void reset_stats() noexcept { stale_fraction_ = 0.0; }

 private:
  template <class Keyspace, class BudgetNow, class Reclaim>
  void sweep_sampled(TickReport& report, Keyspace& ks, const Options& options, const CycleParams& p, bool fast,
                     std::int64_t start, std::int64_t timelimit, std::int64_t now, BudgetNow& budget_now,
                     Reclaim& reclaim);
  template <class Keyspace, class BudgetNow, class Reclaim>
  void sweep_wheel(TickReport& report, Keyspace& ks, const Options& options, const CycleParams& p,
                   std::int64_t start, std::int64_t timelimit, std::int64_t now, BudgetNow& budget_now,
                   Reclaim& reclaim);
  void fold_avg_ttl(std::int64_t ttl_sum, std::int64_t ttl_samples, std::uint32_t rounds);

  double stale_fraction_ = 0.0;   // moving average of each cycle's stale ratio
  std::int64_t avg_ttl_ = 0;
  std::size_t cursor_ = 0;        // the sampled cycle's slot position
  std::uint32_t pass_ticks_ = 0;  // slow ticks spent on the current pass (D9)
  std::uint64_t pass_left_ = 0;   // volatile keys the current pass has still to visit (D9)
  bool timelimit_exit_ = false;   // did the previous cycle stop on its budget?
  std::int64_t last_fast_cycle_us_ = kInt64Min / 2;
};

// SampledExpiry: Redis's rounds over a resumable cursor on the volatile-slot bitmap (Redis scans
// its expires dict bucket by bucket from a cursor; here the cursor is a slot position).
template <class Keyspace, class BudgetNow, class Reclaim>
void ActiveExpire::sweep_sampled(TickReport& report, Keyspace& ks, const Options& options, const CycleParams& p,
                                 bool fast, std::int64_t start, std::int64_t timelimit, std::int64_t now,
                                 BudgetNow& budget_now, Reclaim& reclaim) {
  const auto& index = ks.expiry();
  const std::size_t slots = ks.slot_count();
  // D9: the guaranteed sweep of a slow tick. The quota spreads what is left of the current
  // pass (the volatile keys after the cursor) over the slow ticks left of its N, so the pass
  // ends within N ticks even when keys are added.
  std::uint64_t min_visits = 0;
  if (!fast && options.full_pass_ticks != 0) {
    if (cursor_ == 0 || cursor_ >= slots) pass_ticks_ = 0;
    const std::uint64_t ticks_left =
        pass_ticks_ < options.full_pass_ticks ? options.full_pass_ticks - pass_ticks_ : 1;
    // What is left of the pass: counted exactly (O(slots / 64)) when a pass starts and on its
    // N-th tick; in between and after, the last count less the keys visited since (keys added
    // ahead of the cursor meanwhile are caught by the N-th tick's count).
    if (pass_ticks_ == 0 || pass_ticks_ + 1 == options.full_pass_ticks) {
      pass_left_ = cursor_ < slots ? index.count_from(static_cast<std::size_t>(cursor_)) : index.size();
    }
    min_visits = (pass_left_ + ticks_left - 1) / ticks_left;
    ++pass_ticks_;
  }
  std::int64_t ttl_sum = 0, ttl_samples = 0;
  std::uint32_t rounds_since_fold = 0;
  bool repeat = true;
  while (repeat) {
    ++report.rounds;
    ++rounds_since_fold;
    std::size_t num = index.size();
    if (num == 0) {
      avg_ttl_ = 0;
      break;
    }
    if (num > static_cast<std::size_t>(p.keys_per_loop)) num = static_cast<std::size_t>(p.keys_per_loop);
    if (cursor_ >= slots) cursor_ = 0;

    std::uint64_t sampled = 0, expired = 0;
    bool pass_done = false;
    std::size_t pos = index.next(static_cast<std::size_t>(cursor_));
    while (sampled < num) {
      if (pos >= slots) {  // npos: no volatile key after the cursor
        cursor_ = 0;
        pass_done = true;
        break;
      }
      const auto i = static_cast<std::uint32_t>(pos);
      const auto& e = ks.entry(i);
      ++sampled;
      if (e.is_stale(now)) {
        reclaim(ks.slot_of(i));  // moves no other entry
        ++expired;
      } else {
        const std::int64_t ttl = detail::saturating_sub(e.deadline, now);
        if (ttl > 0) {
          // Keep the sum from overflowing: deadlines near INT64_MAX would.
          const std::int64_t capped = ttl > (detail::kInt64Max >> 8) ? (detail::kInt64Max >> 8) : ttl;
          ttl_sum += capped;
          ++ttl_samples;
        }
      }
      cursor_ = pos + 1;
      // Reclaiming clears only the bit at pos: the next volatile slot is found once, here.
      pos = cursor_ < slots ? index.next(static_cast<std::size_t>(cursor_)) : slots;
      if (pos >= slots) {
        cursor_ = 0;
        pass_done = true;
        break;
      }
    }
    report.sampled += sampled;
    report.expired += expired;
    pass_left_ = pass_left_ > sampled ? pass_left_ - sampled : 0;
    report.pass_completed = report.pass_completed || pass_done;

    repeat = !pass_done && (sampled == 0 || expired * 100 / sampled > static_cast<std::uint64_t>(p.acceptable_stale));
    if (!pass_done && report.sampled < min_visits) repeat = true;

    if (report.rounds % 16 == 0 || !repeat) {
      fold_avg_ttl(ttl_sum, ttl_samples, rounds_since_fold);
      ttl_sum = ttl_samples = 0;
      rounds_since_fold = 0;
    }
    if (repeat && report.rounds % 16 == 0 && budget_now() - start > timelimit) {
      report.time_cap_hit = true;
      break;
    }
    if (repeat && options.max_rounds_per_tick != 0 && report.rounds >= options.max_rounds_per_tick) {
      report.time_cap_hit = true;
      break;
    }
  }
}

// TimeOrderedExpiry: the wheel hands over exactly the due keys. A "round" is keys_per_loop
// keys of work (reclaims and cascade moves); the budget is checked every 16 rounds, as in
// the sampled cycle.
template <class Keyspace, class BudgetNow, class Reclaim>
void ActiveExpire::sweep_wheel(TickReport& report, Keyspace& ks, const Options& options, const CycleParams& p,
                               std::int64_t start, std::int64_t timelimit, std::int64_t now, BudgetNow& budget_now,
                               Reclaim& reclaim) {
  const auto per_round = static_cast<std::uint64_t>(p.keys_per_loop);
  std::uint64_t work = 0;
  auto budget = [&]() {
    if (work % per_round == 0 && work != 0) {
      const auto rounds = work / per_round;
      if (options.max_rounds_per_tick != 0 && rounds >= options.max_rounds_per_tick) {
        report.time_cap_hit = true;
        return false;
      }
      if (rounds % 16 == 0 && budget_now() - start > timelimit) {
        report.time_cap_hit = true;
        return false;
      }
    }
    ++work;
    return true;
  };
  auto reclaim_index = [&](std::uint32_t i) {
    reclaim(ks.slot_of(i));
    ++report.expired;
  };
  // The keys reclaimed next: the wheel brings in their entries; their control bytes too.
  auto ahead = [&](std::uint32_t i, TimerWheel::Ahead a) {
    if (a == TimerWheel::Ahead::far) ks.prefetch_control(i);
  };
  ks.expiry().advance(ks.entries_mut(), now, reclaim_index, budget, ahead);
  report.sampled = work;
  report.rounds = static_cast<std::uint32_t>((work + per_round - 1) / per_round);
  if (ks.expires_size() == 0) avg_ttl_ = 0;
}

// avg_ttl as Redis 7.4: the first estimate is taken as is; later ones are blended in with
// weight 1 - 0.98^rounds (2% per sampling round).
inline void ActiveExpire::fold_avg_ttl(std::int64_t ttl_sum, std::int64_t ttl_samples, std::uint32_t rounds) {
  if (ttl_samples == 0) return;
  const std::int64_t sample = ttl_sum / ttl_samples;
  if (avg_ttl_ == 0) {
    avg_ttl_ = sample;
    return;
  }
  double keep = 1.0;
  for (std::uint32_t r = 0; r < rounds && keep > 1e-9; ++r) keep *= 0.98;
  avg_ttl_ =
      static_cast<std::int64_t>(static_cast<double>(avg_ttl_) * keep + static_cast<double>(sample) * (1.0 - keep));
}

}  // namespace expiring::detail
