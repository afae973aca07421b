// expiring/detail/shard_store.hpp: the concurrent room's shard: a store plus what only
// ConcurrentStore needs of it.
//
// Design
// ------
// ConcurrentStore (concurrent_store.hpp) is made of shards, each a ShardStore: an
// ExpiringStore with two more abilities, both written against the engine's protected API
// (detail/engine.hpp), so that the public store carries neither:
//
//   transfers     the halves of RENAME and COPY when source and destination live in
//                 different shards: take the entry out of one, put it into the other, each
//                 half doing to its own key what the one-store command does, with its events
//                 (RENAME's also as apply() replays a primary's record)
//   racy reads    GET without writing, while writers may run: key, value and deadline read
//                 as bytes, validated afterwards by the caller's version (read_section.hpp)
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../expiring_store.hpp"
#include "attributes.hpp"
#include "read_section.hpp"

namespace expiring::detail {

// ---- The shard's hash ----------------------------------------------------------------------
// The store's own hash H, keyed as the store picks shards with it, plus a hint: ConcurrentStore
// hashes a call's key once, to pick its shard, and leaves that hash here for the shard's first
// lookup of the same key object (by address; one use; cleared when the call ends). Only a
// shard's keyspace pays for the hint's test, not ExpiringStore's (a branch in the shared
// Keyspace::hash_of() cost its get() hit 12 ns at 1e6 keys). It is not rekeyable: the engine
// keeps it as given. The hint is written and read under the shard's lock only; optimistic
// readers hash with the store's own H.
template <class H, class = void>
struct ShardHashTags {};
template <class H>
struct ShardHashTags<H, std::void_t<typename H::is_transparent>> {
  using is_transparent = void;
};
template <class H, class = void>
struct ShardHashAvalanche : ShardHashTags<H> {};
template <class H>
struct ShardHashAvalanche<H, std::void_t<typename H::is_avalanching>> : ShardHashTags<H> {
  using is_avalanching = void;
};

template <class H>
class ShardHash : public ShardHashAvalanche<H> {
 public:
  ShardHash() = default;
  explicit ShardHash(H h) : h_(std::move(h)) {}
  ShardHash(const ShardHash& o) : ShardHashAvalanche<H>(o), h_(o.h_) {}  // (a copy has no hint)
  ShardHash& operator=(const ShardHash& o) {
    h_ = o.h_;
    hint_ = nullptr;
    return *this;
  }

  template <class KK>
  auto operator()(const KK& key) const -> decltype(std::declval<const H&>()(key)) {
    using R = decltype(std::declval<const H&>()(key));
    if (EXPIRING_UNLIKELY(hint_ != nullptr)) {
      const bool mine = hint_ == static_cast<const void*>(&key);
      hint_ = nullptr;
      if (mine) return static_cast<R>(raw_);
    }
    return h_(key);
  }
  template <class KK>
  void hint(const KK& key, std::uint64_t raw) const noexcept {
    hint_ = static_cast<const void*>(&key);
    raw_ = raw;
  }
  void clear_hint() const noexcept { hint_ = nullptr; }
  const H& inner() const noexcept { return h_; }

 private:
  H h_;
  mutable const void* hint_ = nullptr;
  mutable std::uint64_t raw_ = 0;
};

template <class K, class V, class Hash, class KeyEqual, class Clock, class ExpiryPolicy>
class ShardStore : public ExpiringStore<K, V, Hash, KeyEqual, Clock, ExpiryPolicy> {
  using store_type = ExpiringStore<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>;
  using engine_type = Engine<K, V, Hash, KeyEqual, Clock, ExpiryPolicy>;
  using keyspace_type = typename engine_type::keyspace_type;
  using entry_type = typename engine_type::entry_type;

 public:
  using store_type::store_type;
  using store_type::kNoTtl;

  // ---- One hash per call (ShardHash) ----
  template <class KK>
  void hint_hash(const KK& key, std::uint64_t raw) const noexcept {
    ks_.hasher().hint(key, raw);
  }
  void clear_hash_hint() const noexcept { ks_.hasher().clear_hint(); }

  // ---- Moving entries between stores ----
  // The halves of RENAME and COPY when source and destination live in different stores
  // (ConcurrentStore's shards): take the entry out of one, put it into the other. Each half
  // is what the one-store command does to its own key, with the same events.

  // An entry in transit: its value and absolute deadline (kNoTtl: none).
  struct Transfer {
    V value;
    std::int64_t pexpiretime;
  };
  // RENAME's first half: removes the live key `key` and returns its value and TTL (cause
  // `rename_from`); nullopt if it is missing. A write lookup: no hit or miss is counted.
  // `all_valid` (apply() replaying a primary's RENAME, as ExpiringStore::apply()): every
  // stored key counts as live, stale or not.
  template <class KK>
  std::optional<Transfer> rename_out(const KK& key, bool all_valid = false) {
    const auto& lk = lookup_key(key);
    const std::uint64_t h = ks_.hash_of(lk);
    auto it = all_valid ? ks_.find(lk, h) : this->lookup(lk, h, this->now_ms(), detail::Access::write);
    std::optional<Transfer> out;
    if (it != ks_.end()) {
      entry_type& e = ks_.entry(it);
      out.emplace(Transfer{std::move(e.value), ks_.is_volatile(e) ? e.deadline : kNoTtl});
      emit(KeyEventCause::rename_from, e);
      ks_.erase(it, [&](entry_type& gone) { unaccount_moved(gone, out->value); });
    }
    flush();
    return out;
  }
  // RENAME's second half: stores t under `key`, replacing a live key and its TTL (cause
  // `rename_to`). Never refused, as RENAME is not (it moves memory, it does not add it). With
  // `nx` (RENAMENX) a live key is kept and false returned. `all_valid` (apply()): a stored key
  // is replaced whether stale or not, and a deadline already past is stored as given (a
  // replica keeps such a key until the primary's DEL).
  template <class KK>
  bool rename_in(const KK& key, Transfer t, bool nx = false, bool all_valid = false) {
    const std::int64_t now = this->now_ms();
    const bool stored =
        put_transfer(key, std::move(t), nx ? SetCond::NX : SetCond::Always, now, KeyEventCause::rename_to, all_valid);
    flush();
    return stored;
  }
  // COPY's first half: the live value and TTL of `key` (nullopt if missing), counted as a
  // keyspace hit or miss as COPY's source lookup is.
  template <class KK>
  std::optional<Transfer> copy_out(const KK& key) {
    const std::int64_t now = this->now_ms();
    const auto& lk = lookup_key(key);
    auto it = this->lookup(lk, ks_.hash_of(lk), now, detail::Access::read);
    ++(it != ks_.end() ? probe_hits_ : probe_misses_);
    std::optional<Transfer> out;
    if (it != ks_.end()) {
      const entry_type& e = ks_.entry(it);
      out.emplace(Transfer{e.value, ks_.is_volatile(e) ? e.deadline : kNoTtl});
    }
    flush();
    return out;
  }
  // COPY's second half: stores t under `key` (cause `copy_to`); false when a live key is there
  // and `replace` is false. Errc::out_of_memory as copy().
  template <class KK>
  Result<bool> copy_in(const KK& key, Transfer t, bool replace) {
    const std::int64_t now = this->now_ms();
    if (!make_room(now, incoming_weight(key, t.value))) return Errc::out_of_memory;
    const auto& lk = lookup_key(key);
    if (EXPIRING_UNLIKELY(options_.max_entries != 0) && ks_.size() >= options_.max_entries &&
        !room_for_key(lk, ks_.hash_of(lk), now)) {
      flush();
      return Errc::out_of_memory;
    }
    const bool stored = put_transfer(key, std::move(t), replace ? SetCond::Always : SetCond::NX, now, KeyEventCause::copy_to);
    flush();
    return stored;
  }

  // ---- Reading without writing (the optimistic get) ----
  // A lookup that writes nothing, made while writers may be changing the store: it reads
  // the key, value and deadline as bytes, so the value must be trivially copyable, and the
  // key compared bytewise (integers, enums, pointers, with std::equal_to) or a std::string
  // whose characters are inside it (libstdc++'s short-string buffer, up to 15 bytes: a key's
  // heap bytes may be freed by a writer, so a key held there is read under the lock). What it
  // reads may be torn; the caller rejects that by validating a version (see
  // concurrent_store.hpp and detail/read_section.hpp) and frees nothing a reader may be in
  // (set_free_hook()).

  static constexpr bool kRacyValue =
      std::is_trivially_copyable_v<V> && std::is_default_constructible_v<V>;
  static constexpr bool kStdEqual =
      std::is_same_v<KeyEqual, std::equal_to<>> || std::is_same_v<KeyEqual, std::equal_to<K>>;
  static constexpr bool kRacyByteKeys =
      std::is_trivially_copyable_v<K> &&
      ((std::is_integral_v<K> && !std::is_same_v<K, bool>) || std::is_enum_v<K> || std::is_pointer_v<K>) &&
      std::has_unique_object_representations_v<K> && kStdEqual;
  static constexpr bool kRacyStringKeys = std::is_same_v<K, std::string> && kInlineStrings && kStdEqual;
  static constexpr bool kRacyReads = kRacyValue && (kRacyByteKeys || kRacyStringKeys);
  // The type a racy read looks a key up as: K, or a view of a string key.
  using racy_key_type = std::conditional_t<kRacyStringKeys, std::string_view, K>;
  enum class RacyRead { hit, hit_unrecorded, miss, torn, locked };
  // GET of `key` (hash h = hash_from(hash_function()(key))) without writing: `hit` with the
  // value copied into `out` (bytewise: meaningful only once validated), `hit_unrecorded` the same under an LRU limit (the
  // access is not recorded: the caller redoes some of these under the lock, so that LRU data
  // is sampled), `miss` for an absent key, `torn` when valid() said the table's addresses
  // were read while a writer ran (valid() is called once, after those addresses are read and
  // before anything is read through them), `locked` when the read must be done under the lock
  // (the key is stale and must be reclaimed, an LFU counter or an idle TTL is kept, a string
  // key that may match is held outside its slot). Counts nothing (the caller counts hits and
  // misses). Only when kRacyReads.
  template <class Valid>
  EXPIRING_INLINE RacyRead read_racy(const racy_key_type& key, std::uint64_t h, V& out, Valid&& valid) const {
    static_assert(kRacyReads, "read_racy() needs trivially copyable values and byte or short-string keys");
    if (EXPIRING_UNLIKELY(access_.read_hook())) return read_racy_hooked(key, h, out, valid);
    return read_racy_plain(key, h, out, valid);
  }
  // get_many()'s prefetch stages for read_racy(): the control group of h (an address from a
  // possibly torn read: a prefetch cannot fault), then its likely slot, which reads the control
  // bytes, so only if valid() says the table's addresses were read with no writer running.
  void prefetch_racy_group(std::uint64_t h) const noexcept { keyspace_type::table_type::prefetch_group_in(ks_.view(), h); }
  template <class Valid>
  void prefetch_racy_slot(std::uint64_t h, Valid&& valid) const noexcept {
    const auto view = ks_.view();
    if (valid()) keyspace_type::table_type::prefetch_slot_in(view, h);
  }
  // The bytes of the table's block as a racy read sees it (a torn read gives a wrong number,
  // which only decides whether to prefetch).
  std::size_t racy_table_bytes() const noexcept { return keyspace_type::table_type::bytes_in(ks_.view()); }
  // The 64-bit hash read_racy() takes, from hash_function()(key).
  std::uint64_t hash_from(std::uint64_t raw) const noexcept { return ks_.template hash_from<K>(raw); }
  // fn(ctx) is called before the table frees a block of entries.
  void set_free_hook(void (*fn)(void*), void* ctx) noexcept { ks_.entries_mut().set_free_hook(fn, ctx); }

 private:
  // read_racy() with access data kept: only an LRU limit's reads may go unrecorded (the
  // caller redoes a sample of them under the lock); idle TTLs and LFU counters are kept
  // under the lock. Out of line: the plain read stays short.
  template <class Valid>
  EXPIRING_NOINLINE RacyRead read_racy_hooked(const racy_key_type& key, std::uint64_t h, V& out, Valid& valid) const {
    if (access_.idle_ms() != 0 || is_lfu(options_.maxmemory_policy)) return RacyRead::locked;
    const RacyRead r = read_racy_plain(key, h, out, valid);
    return r == RacyRead::hit ? RacyRead::hit_unrecorded : r;
  }
  // read_racy() with nothing recorded on a hit.
  template <class Valid>
  EXPIRING_INLINE RacyRead read_racy_plain(const racy_key_type& key, std::uint64_t h, V& out, Valid& valid) const {
    const auto view = ks_.view();
    if (!valid()) return RacyRead::torn;
    const entry_type* slots = view.slots;
    std::uint32_t i = detail::kNoSlot;
    if constexpr (kRacyStringKeys) {
      if (key.size() > kInlineCapacity) return RacyRead::locked;  // held on the heap if present
      bool undecided = false;
      i = keyspace_type::table_type::find_in(view, h, [&](std::uint32_t j) {
        const InlineString seen(&slots[j].key);
        if (seen.equals(key)) return true;
        // A short key kept in a heap block (a moved-in string) may be this one: ask the lock.
        if (seen.size() == key.size() && !seen.inline_chars()) undecided = true;
        return false;
      });
      if (i == detail::kNoSlot && undecided) return RacyRead::locked;
    } else {
      // Keys compared as bytes (a torn or never-written slot is never loaded as a K).
      i = keyspace_type::table_type::find_in(view, h, [&](std::uint32_t j) {
        return std::memcmp(static_cast<const void*>(&slots[j].key), static_cast<const void*>(&key), sizeof(K)) == 0;
      });
    }
    if (i == detail::kNoSlot) return RacyRead::miss;
    std::int64_t deadline;
    std::memcpy(&deadline, &slots[i].deadline, sizeof deadline);
    if (deadline != detail::kNoDeadline && this->now_ms() > deadline) return RacyRead::locked;
    std::memcpy(static_cast<void*>(&out), static_cast<const void*>(&slots[i].value), sizeof(V));
    return RacyRead::hit;
  }

  // Stores a transferred entry under `key` (a write lookup; a live key is replaced unless
  // cond is NX), with its TTL exactly; raises `cause`.
  // `all_valid` (apply()): a stored key is replaced whether stale or not, and a deadline
  // already past is stored as given.
  template <class KK>
  bool put_transfer(const KK& key, Transfer t, SetCond cond, std::int64_t now, KeyEventCause cause,
                    bool all_valid = false) {
    const auto& lk = lookup_key(key);
    const std::uint64_t h = ks_.hash_of(lk);
    auto it = all_valid ? ks_.find(lk, h) : this->lookup(lk, h, now, detail::Access::write);
    if (it != ks_.end() && cond == SetCond::NX) return false;
    if (t.pexpiretime != kNoTtl) {
      if (!all_valid && t.pexpiretime < now) {  // it expired in transit: the key is gone, as a lazy expiry
        if (it != ks_.end()) remove(it, KeyEventCause::del, false, past_deadline_verb());
        return true;
      }
      ks_.prepare_deadline(t.pexpiretime);
    }
    std::uint32_t i = 0;
    if (it != ks_.end()) {
      i = it->index;
      unaccount(ks_.entry(i));
      replace_value(ks_.entry(i).value, std::move(t.value));
      account(ks_.entry(i));
    } else {
      i = ks_.try_emplace(lk, h, key, std::move(t.value)).first;
      account(ks_.entry(i));
      init_access(i, now);
    }
    if (t.pexpiretime != kNoTtl) {
      ks_.set_deadline(i, t.pexpiretime);
    } else {
      ks_.clear_deadline(i);
    }
    placed(i, now);
    emit(cause, ks_.entry(i));
    return true;
  }

  using engine_type::lookup_key;
  using engine_type::ks_;
  using engine_type::emit;
  using engine_type::flush;
  using engine_type::unaccount_moved;
  using engine_type::probe_hits_;
  using engine_type::probe_misses_;
  using engine_type::make_room;
  using engine_type::incoming_weight;
  using engine_type::options_;
  using engine_type::access_;
  using engine_type::room_for_key;
  using engine_type::is_lfu;
  using engine_type::remove;
  using engine_type::past_deadline_verb;
  using engine_type::unaccount;
  using engine_type::replace_value;
  using engine_type::account;
  using engine_type::init_access;
  using store_type::placed;
};

}  // namespace expiring::detail
