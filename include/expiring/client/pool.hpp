// expiring/client/pool.hpp: the connections to one node, shared by every thread.
//
// A pool holds at most `size` connections to its node. acquire() hands out an idle one (after
// a poll() that drops one the server has closed), or opens a new one while fewer than `size`
// exist, or waits up to `wait` for one to come back (then Errc::timeout). A Lease gives the
// connection back when it goes out of scope; a broken one (any transport error) is destroyed
// instead, so a late reply can never be read by the next command.
//
// Reconnecting backs off: after a failed connect the node is not tried again for a delay
// that starts at backoff_min and doubles up to backoff_max (each drawn in [d/2, d], so that
// many clients do not retry in step); in that window acquire() fails at once with the last
// connect's error code (Errc::io_error, or Errc::timeout after a connect that timed out) and
// its message, rather than piling up connect timeouts. The first connect that succeeds resets
// the delay.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "connection.hpp"

namespace expiring::client {

// Counters of the client, summed over nodes; RedisStore::client_stats() returns a copy.
struct ClientStats {
  std::uint64_t connects = 0;           // connections opened and set up
  std::uint64_t connect_failures = 0;   // failed opens (connect, AUTH or SELECT)
  std::uint64_t backoff_refusals = 0;   // acquire() refused during a reconnect backoff
  std::uint64_t dropped_idle = 0;       // idle connections found closed by the server
  std::uint64_t transport_errors = 0;   // connections that broke mid-command
  std::uint64_t round_trips = 0;        // pipelines flushed (one command alone is one)
  std::uint64_t commands = 0;           // commands sent
  std::uint64_t retries = 0;            // idempotent commands sent again after a transport error
  std::uint64_t moved = 0;              // MOVED replies followed
  std::uint64_t ask = 0;                // ASK replies followed
  std::uint64_t tryagain = 0;           // TRYAGAIN replies waited out
  std::uint64_t clusterdown = 0;        // CLUSTERDOWN replies waited out
  std::uint64_t slot_map_refreshes = 0; // CLUSTER SLOTS reloaded
};

// The same counters, updated from many threads.
struct AtomicClientStats {
  // ClientStats's counters, one atomic each: bump() adds `n` to one, snapshot() copies them all
  // into a ClientStats. Relaxed: each counter is exact, but a snapshot taken while commands run
  // is not one instant's.
  std::atomic<std::uint64_t> connects{0}, connect_failures{0}, backoff_refusals{0}, dropped_idle{0},
      transport_errors{0}, round_trips{0}, commands{0}, retries{0}, moved{0}, ask{0}, tryagain{0}, clusterdown{0},
      slot_map_refreshes{0};
  static void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept { c.fetch_add(n, std::memory_order_relaxed); }
  ClientStats snapshot() const noexcept {
    auto g = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    return ClientStats{g(connects), g(connect_failures), g(backoff_refusals), g(dropped_idle), g(transport_errors),
                       g(round_trips), g(commands), g(retries), g(moved), g(ask), g(tryagain), g(clusterdown),
                       g(slot_map_refreshes)};
  }
};

// acquire() found no free connection within PoolSettings::wait (Errc::timeout). Nothing was
// sent, but the node is busy, not gone: the router does not retry elsewhere.
class PoolExhausted : public RedisError {
 public:
  // As RedisError's: the code (Errc::timeout) and the message.
  using RedisError::RedisError;
};

// A NodePool's size, wait and reconnect backoff (RedisOptions: pool_size, pool_wait,
// reconnect_backoff_min and _max).
struct PoolSettings {
  std::size_t size = 8;                         // connections at most: idle, leased or opening
  std::chrono::milliseconds wait{1000};         // for one to come back, then PoolExhausted
  std::chrono::milliseconds backoff_min{10};    // the first delay after a failed connect (1 ms at least)
  std::chrono::milliseconds backoff_max{1000};  // the delay's cap (backoff_min at least)
};

// The connections to one node, shared by every thread (see the top of this file). A Lease
// points to its pool: the pool must outlive its Leases (a Router keeps its pools to the end).
class NodePool {
 public:
  // The clock of acquire()'s wait and of the reconnect backoff.
  using clock = std::chrono::steady_clock;

  // A pool with no connection yet: acquire() opens them as they are needed. `stats`, shared
  // by every pool of a Router, must outlive it.
  NodePool(Endpoint at, ConnectionSettings conn, PoolSettings pool, AtomicClientStats& stats)
      : at_(std::move(at)), conn_(std::move(conn)), pool_(pool), stats_(stats),
        rng_(static_cast<std::uint64_t>(clock::now().time_since_epoch().count()) ^
             reinterpret_cast<std::uintptr_t>(this)) {}

  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  // The node this pool connects to.
  const Endpoint& endpoint() const noexcept { return at_; }

  // A connection checked out of the pool; returned (or destroyed if broken) on destruction.
  class Lease {
   public:
    // Holds `c` for `pool`, which gets it back at destruction (acquire() makes Leases).
    Lease(NodePool* pool, std::unique_ptr<Connection> c) noexcept : pool_(pool), c_(std::move(c)) {}
    // Takes o's connection: `o` then gives nothing back and must not be dereferenced.
    Lease(Lease&& o) noexcept : pool_(o.pool_), c_(std::move(o.c_)) {}

    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (c_) pool_->give_back(std::move(c_));
    }
    // The leased connection (none on a moved-from Lease).
    Connection& operator*() const noexcept { return *c_; }
    Connection* operator->() const noexcept { return c_.get(); }

   private:
    NodePool* pool_;
    std::unique_ptr<Connection> c_;
  };

  // Throws RedisError: io_error (connect failed), timeout (connect timed out), either of them
  // again at once while in backoff, auth_failed, server_error (SELECT); PoolExhausted
  // (timeout) when no connection came back within `wait`.
  Lease acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    const clock::time_point deadline = clock::now() + pool_.wait;
    for (;;) {
      while (!idle_.empty()) {
        std::unique_ptr<Connection> c = std::move(idle_.back());
        idle_.pop_back();
        if (!c->looks_closed()) return Lease(this, std::move(c));
        --open_;
        AtomicClientStats::bump(stats_.dropped_idle);
        lock.unlock();
        c.reset();  // close outside the lock
        lock.lock();
      }
      if (open_ < pool_.size) break;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= pool_.size) {
        throw PoolExhausted(Errc::timeout, at_.str() + ": no free connection within " +
                                            std::to_string(pool_.wait.count()) + " ms (pool of " +
                                            std::to_string(pool_.size) + ")");
      }
    }
    if (clock::now() < retry_at_) {
      AtomicClientStats::bump(stats_.backoff_refusals);
      throw RedisError(last_error_code_, last_error_ + " (reconnect backoff)");
    }
    ++open_;  // reserve the slot, connect outside the lock
    lock.unlock();
    try {
      std::unique_ptr<Connection> c = Connection::open(at_, conn_);
      AtomicClientStats::bump(stats_.connects);
      lock.lock();
      failures_ = 0;
      retry_at_ = clock::time_point{};
      return Lease(this, std::move(c));
    } catch (const RedisError& e) {
      AtomicClientStats::bump(stats_.connect_failures);
      lock.lock();
      --open_;
      last_error_ = e.what();
      last_error_code_ = e.code();
      // Back off only for transport failures: a refused AUTH is not cured by waiting.
      if (e.code() == Errc::io_error || e.code() == Errc::timeout) {
        const long long base = std::max<long long>(1, pool_.backoff_min.count());
        const long long cap = std::max<long long>(base, pool_.backoff_max.count());
        long long d = base;
        for (unsigned i = 0; i < failures_ && d < cap; ++i) d *= 2;
        d = std::min(d, cap);
        std::uniform_int_distribution<long long> half(d / 2, d);
        retry_at_ = clock::now() + std::chrono::milliseconds(half(rng_));
        ++failures_;
      }
      cv_.notify_one();
      throw;
    } catch (...) {  // std::bad_alloc: give the reserved slot back
      lock.lock();
      --open_;
      cv_.notify_one();
      throw;
    }
  }

 private:
  // A connection that is not clean (broken, or with a reply still owed or unread: an
  // exception between a command and its reply) is destroyed, never reused.
  void give_back(std::unique_ptr<Connection> c) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!c->clean()) {
      --open_;
      if (c->broken()) AtomicClientStats::bump(stats_.transport_errors);
      lock.unlock();
      c.reset();
    } else {
      idle_.push_back(std::move(c));
      lock.unlock();
    }
    cv_.notify_one();
  }

  const Endpoint at_;
  const ConnectionSettings conn_;
  const PoolSettings pool_;
  AtomicClientStats& stats_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;  // idle + leased + being opened
  unsigned failures_ = 0;
  clock::time_point retry_at_{};
  std::string last_error_;
  Errc last_error_code_ = Errc::io_error;
  std::mt19937_64 rng_;
};

}  // namespace expiring::client
