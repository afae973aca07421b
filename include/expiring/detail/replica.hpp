// expiring/detail/replica.hpp: replica mode as a policy of the engine.
//
// Design
// ------
// A replica's keyspace changes only by what its primary sends (docs/semantics.md D31, as a
// Redis replica): it decides nothing about time or memory on its own. Options::replica
// (REPLICAOF, set_replica()) turns the policy on, and each rule below is one question the
// engine asks at the one place it applies:
//
//   reclaims_on_read()     a read that finds a stale key answers "missing" and leaves it in
//                          place (the primary's DEL removes it); a write still reclaims it
//   expires_actively()     tick() runs no active-expire cycle and no field cycle
//   evicts()               no eviction (Redis's replica-ignore-maxmemory): writes are never
//                          refused for memory
//   keeps_emptied_hashes() a hash whose last field expired stays until the primary's DEL
//
// scan() and random_key() skip stale keys instead of reclaiming them (reclaims_on_read()).
#pragma once

namespace expiring::detail {

class ReplicaPolicy {
 public:
  explicit constexpr ReplicaPolicy(bool replica) noexcept : replica_(replica) {}
  constexpr bool on() const noexcept { return replica_; }
  constexpr bool reclaims_on_read() const noexcept { return !replica_; }
  constexpr bool expires_actively() const noexcept { return !replica_; }
  constexpr bool evicts() const noexcept { return !replica_; }
  constexpr bool keeps_emptied_hashes() const noexcept { return replica_; }

 private:
  bool replica_;
};

}  // namespace expiring::detail
