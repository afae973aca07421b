// expiring/detail/memory.hpp: the memory governor room: accounting, admission and eviction.
//
// Design
// ------
// Redis's maxmemory in one room (its evict.c). While a limit is set (Options::maxmemory),
// the governor keeps `used`, the weigher's sum over the entries, in O(1) per change: the
// engine calls account() after an entry is written and unaccount() before it changes or
// goes. Admission is decided before a write, as Redis decides before a command: the weight
// the new entry will have (incoming_weight(), predicted without building it where the
// default weigher allows) plus used and external memory must fit the limit, after what
// eviction can free (evict_while(): the policy's best candidate, chosen by
// detail/eviction.hpp's sampling pool, until the condition holds). A write that could not fit
// even in an empty store is refused before anything is evicted.
//
// The governor knows nothing of the keyspace's layout: the engine passes the limit, the
// policy's candidates (an EvictionSource over its keyspace, for choose_victim) and what
// evicting one means (remove it, cause `evicted`). External memory (client buffers of a
// server) counts against the limit and is never evicted. Inside as_one_command()
// (`in_command`) the writes are neither checked nor refused: the command was admitted as a
// whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../options.hpp"
#include "eviction.hpp"
#include "keyspace.hpp"

namespace expiring::detail {

template <class K, class V>
class MemoryGovernor {
 public:
  using weigher_type = std::function<std::size_t(const K&, const V&)>;

  // ---- configuration ----
  // A memory limit (used memory is kept) and an entry bound (either makes the store bounded:
  // writes may evict). Turning tracking on recounts with `weigh_all()`.
  template <class WeighAll>
  void set_limits(std::size_t maxmemory, std::size_t max_entries, WeighAll&& weigh_all) {
    const bool was = tracking_;
    tracking_ = maxmemory != 0;
    bounded_ = tracking_ || max_entries != 0;
    if (tracking_ && !was) used_ = weigh_all();
    if (!bounded_) pool_.clear();
  }
  bool tracking() const noexcept { return tracking_; }
  bool bounded() const noexcept { return bounded_; }
  const weigher_type& weigher() const noexcept { return weigher_; }
  template <class WeighAll>
  void set_weigher(weigher_type w, WeighAll&& weigh_all) {
    weigher_ = std::move(w);
    if (tracking_) used_ = weigh_all();
  }
  std::size_t external() const noexcept { return external_; }
  void set_external(std::size_t bytes) noexcept { external_ = bytes; }
  // FLUSHALL: nothing is stored any more.
  void clear() noexcept {
    used_ = 0;
    pool_.clear();
  }

  // ---- accounting ----
  // The weight of an entry: the weigher's, or sizeof(K) + sizeof(V) + the heap bytes of
  // std::string keys and values. A weigher must not throw (the store cannot undo the update
  // it weighs in the middle of): a throw calls std::terminate.
  std::size_t weight(const K& key, const V& value) const noexcept {
    if (weigher_) return weigher_(key, value);
    return sizeof(K) + sizeof(V) + heap_bytes(key) + heap_bytes(value);
  }
  void account(const K& key, const V& value) noexcept {
    if (tracking_) used_ += weight(key, value);
  }
  void unaccount(const K& key, const V& value) noexcept {
    if (tracking_) used_ -= weight(key, value);
  }
  // An entry's value moved out before its erasure: its weight (measured before) leaves.
  void release(std::size_t bytes) noexcept {
    if (tracking_) used_ -= bytes;
  }
  // Used memory while tracking (0 otherwise: the engine then weighs every entry).
  std::size_t used() const noexcept { return used_; }
  // Memory freed by an eviction, for cache_stats().eviction_weight.
  std::uint64_t evicted_weight() const noexcept { return evicted_weight_; }
  void count_evicted(std::size_t weight) noexcept { evicted_weight_ += weight; }
  void reset_evicted_weight() noexcept { evicted_weight_ = 0; }

  // The weight of an entry about to be written from (key, value), before it exists: what
  // weight() will say of it. The default weigher's std::string heap bytes are predicted from
  // the length (a std::string built from n chars owns n + 1 bytes past its inline buffer); a
  // weigher of your own sees a K and a V built for it when the arguments are other types.
  template <class KK, class VV>
  std::size_t incoming_weight(const KK& key, const VV& value) const {
    if (!tracking_) return 0;
    if (weigher_) return weigh_noexcept(as_type<K>(key), as_type<V>(value));
    return sizeof(K) + sizeof(V) + predicted_heap_bytes<K>(key) + predicted_heap_bytes<V>(value);
  }
  // The heap bytes a T built from `u` will own, predicted without building it where possible.
  template <class T, class U>
  static std::size_t predicted_heap_bytes(const U& u) {
    if constexpr (std::is_same_v<std::decay_t<U>, T>) {
      return heap_bytes(u);
    } else if constexpr (has_heap_bytes<T>::value && std::is_convertible_v<const U&, std::string_view>) {
      const std::size_t n = std::string_view(u).size();
      static const std::size_t inline_capacity = std::string().capacity();  // T holds or is a std::string
      return n > inline_capacity ? n + 1 : 0;
    } else if constexpr (has_heap_bytes<T>::value) {
      return heap_bytes(T(u));
    } else {
      return 0;
    }
  }

  // ---- admission ----
  // Whether used plus external memory plus `incoming` bytes is above `max` (no overflow: each
  // term is compared against what is left of the limit).
  bool over_limit(std::size_t max, std::size_t incoming = 0) const noexcept {
    if (!tracking_) return false;
    return external_ > max || incoming > max - external_ || used_ > max - external_ - incoming;
  }
  // Whether `incoming` bytes could not fit even with nothing stored.
  bool over_limit_when_empty(std::size_t max, std::size_t incoming) const noexcept {
    return external_ > max || incoming > max - external_;
  }
  // Inside as_one_command(): the writes were admitted as a whole.
  bool& in_command() noexcept { return in_command_; }

  // ---- eviction ----
  // Evicts the policy's best candidate of `src` while `more()`; `evict(i)` removes entry i.
  // False when the policy's population runs out first (Redis's performEvictions failing).
  template <class More, class Evict>
  bool evict_while(EvictionSource& src, EvictionPolicy policy, int samples, More&& more, Evict&& evict) {
    while (more()) {
      const std::uint32_t victim = choose_victim(src, pool_, policy, samples);
      if (victim == kNoVictim) return false;  // nothing left in the policy's population
      evict(victim);
    }
    return true;
  }
  // The sampling pool's candidates (emptied when the policy changes).
  void forget_candidates() noexcept { pool_.clear(); }

 private:
  template <class T, class U>
  static decltype(auto) as_type(const U& u) {
    if constexpr (std::is_same_v<std::decay_t<U>, T>) {
      return (u);
    } else {
      return T(u);
    }
  }
  std::size_t weigh_noexcept(const K& k, const V& v) const noexcept { return weigher_(k, v); }

  bool tracking_ = false;       // a memory limit is set: used_ is kept
  bool bounded_ = false;        // a memory limit or an entry bound is set
  bool in_command_ = false;     // inside as_one_command(): memory was checked already
  std::size_t used_ = 0;        // the weigher's sum over the entries, while tracking_
  std::size_t external_ = 0;    // set_external_memory(): client buffers and the like
  std::uint64_t evicted_weight_ = 0;
  weigher_type weigher_;
  EvictionPool pool_;
};

}  // namespace expiring::detail
