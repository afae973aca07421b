// expiring/client/router.hpp: which node runs a command, and what to do with its reply.
//
// Standalone: one node runs everything. Cluster: a map from each of the 16384 slots to the
// master that serves it, loaded from CLUSTER SLOTS (from any node that answers, the seeds
// last) on the first command, and reloaded after a MOVED, a CLUSTERDOWN or a node that cannot
// be reached, at most once per 100 ms (one thread reloads; the others go on with the old map).
// A node first named in a reply (MOVED, ASK) gets a pool on the spot. Pools are never
// removed while the router lives, so a pointer to one stays valid.
//
// execute() runs one command and follows the cluster's answers:
//   MOVED slot host:port   the slot lives elsewhere for good: patch that slot, schedule a
//                          map reload, send the command there;
//   ASK slot host:port     the slot is being migrated and this key is already at the target:
//                          send ASKING and the command to the target on one connection,
//                          leaving the map alone;
//   TRYAGAIN, CLUSTERDOWN  a multi-key command mid-migration, or a cluster without quorum:
//                          wait (1, 2, 4 ... 64 ms) and send it again;
// up to max_redirects times (then Errc::too_many_redirects, or cluster_down). A command
// that could not be sent (no connection) is always safe to retry; one that was sent and
// lost its connection is retried once only when `idempotent` (reads), since a write may
// already have run: then the caller gets Errc::io_error / timeout, "the command may have
// run".
//
// execute_many() pipelines: commands are grouped by node, each group is written at once
// and its replies read in order (chunks of pipeline_chunk commands), and any command whose
// reply is a redirection is then run again alone through execute(). Groups run one after
// another on the calling thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "connection.hpp"
#include "pool.hpp"

namespace expiring::client {

// What a Router is built with (RedisStore fills it from RedisOptions).
struct RouterSettings {
  bool cluster = false;               // Redis Cluster: route by slot, follow redirections
  std::vector<Endpoint> seeds;        // standalone: seeds[0] is the server
  ConnectionSettings connection;      // how every connection is opened
  PoolSettings pool;                  // each node's pool
  int max_redirects = 16;             // redirections and cluster retries per command, at most
  std::size_t pipeline_chunk = 1000;  // commands per round trip in execute_many() (>= 1)
};

// A redirection's target, parsed from "MOVED 3999 127.0.0.1:6381" (the address is split at
// its last ':', for IPv6).
struct Redirect {
  bool ask = false;  // ASK (this command only) rather than MOVED (the slot for good)
  int slot = -1;     // the slot, 0..16383
  Endpoint to;       // the node to send the command to
};
// Parses the text of a MOVED or ASK error reply into `out`. False for any other text and for
// a malformed one (a number with anything after it, a slot or a port out of range, no ':');
// `out` may then be partly written.
inline bool parse_redirect(std::string_view t, Redirect& out) {
  std::string_view rest;
  if (starts_with(t, "MOVED ")) {
    out.ask = false;
    rest = t.substr(6);
  } else if (starts_with(t, "ASK ")) {
    out.ask = true;
    rest = t.substr(4);
  } else {
    return false;
  }
  const std::size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return false;
  const std::string_view slot = rest.substr(0, sp);
  const std::string_view addr = rest.substr(sp + 1);
  const std::size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= addr.size()) return false;
  int s = 0;
  int port = 0;
  const std::from_chars_result a = std::from_chars(slot.data(), slot.data() + slot.size(), s);
  const std::from_chars_result b = std::from_chars(addr.data() + colon + 1, addr.data() + addr.size(), port);
  if (a.ec != std::errc() || b.ec != std::errc() || a.ptr != slot.data() + slot.size() ||
      b.ptr != addr.data() + addr.size() || s < 0 || s >= kSlotCount || port <= 0 || port > 65535) {
    return false;  // each number whole, in range
  }
  out.slot = s;
  out.to.host = std::string(addr.substr(0, colon));
  out.to.port = port;
  return true;
}

// Runs commands on the node that serves them, as the top of this file says. Every member may
// be called from any number of threads at once. It owns one NodePool per node and the
// client's counters.
class Router {
 public:
  // The clock of the slot map's reload interval.
  using clock = std::chrono::steady_clock;

  // A router with no connection open yet. Standalone: a pool for seeds[0] (127.0.0.1:6379
  // when `seeds` is empty). Cluster: the first command loads the slot map.
  explicit Router(RouterSettings s) : s_(std::move(s)) {
    if (s_.seeds.empty()) s_.seeds.push_back(Endpoint{});
    slots_.fill(kNoNode);
    if (!s_.cluster) pool_for(s_.seeds.front());
  }

  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // A copy of the client's counters, summed over every node.
  ClientStats stats() const noexcept { return stats_.snapshot(); }

  // ---- One command ----------------------------------------------------------------------

  // Runs `cmd` on the node that serves its slot (standalone: the server) and returns its
  // reply, following redirections as the top of this file says. An error reply is returned,
  // not thrown; so is the last MOVED, ASK, TRYAGAIN or CLUSTERDOWN once max_redirects are
  // used up. `idempotent`: a command that was sent and lost its connection may be sent once
  // more. Throws RedisError: io_error, timeout or protocol_error from the connection (with
  // "(the command may have run)" when it was sent and not idempotent), what acquire() throws
  // (PoolExhausted at once), and what loading the slot map throws.
  Reply execute(const Cmd& cmd, bool idempotent) {
    NodePool* ask_to = nullptr;
    bool resent = false;
    int redirects = 0;
    for (;;) {
      NodePool* node = ask_to != nullptr ? ask_to : node_for(cmd.slot());
      const bool asking = ask_to != nullptr;
      ask_to = nullptr;
      Reply r;
      bool sent = false;
      try {
        NodePool::Lease c = node->acquire();
        if (asking) c->append(Cmd("ASKING"));
        c->append(cmd);
        sent = true;
        AtomicClientStats::bump(stats_.round_trips);
        AtomicClientStats::bump(stats_.commands, asking ? 2 : 1);
        if (asking) (void)c->read();  // +OK
        r = c->read();
      } catch (const PoolExhausted&) {
        throw;  // the node is busy, not gone
      } catch (const RedisError& e) {
        if (e.code() != Errc::io_error && e.code() != Errc::timeout && e.code() != Errc::protocol_error) throw;
        if (s_.cluster) request_refresh();
        if (sent) {
          if (!idempotent || resent) {
            throw RedisError(e.code(), std::string(e.what()) + (idempotent ? "" : " (the command may have run)"));
          }
          resent = true;
          AtomicClientStats::bump(stats_.retries);
          continue;
        }
        // Never sent: in a cluster another node may own the slot by now (after a failover).
        if (!s_.cluster || ++redirects > s_.max_redirects) throw;
        pause(redirects);
        refresh_if_due();
        continue;
      }
      if (!is_error(*r) || !s_.cluster) return r;
      const std::string_view t = text(*r);
      Redirect to;
      if (parse_redirect(t, to)) {
        if (++redirects > s_.max_redirects) return r;
        if (to.ask) {
          AtomicClientStats::bump(stats_.ask);
          ask_to = pool_for(to.to);
        } else {
          AtomicClientStats::bump(stats_.moved);
          set_slot(to.slot, pool_for(to.to));
          request_refresh();
        }
        continue;
      }
      if (starts_with(t, "TRYAGAIN") || starts_with(t, "CLUSTERDOWN")) {
        if (++redirects > s_.max_redirects) return r;
        AtomicClientStats::bump(starts_with(t, "TRYAGAIN") ? stats_.tryagain : stats_.clusterdown);
        if (starts_with(t, "CLUSTERDOWN")) request_refresh();
        pause(redirects);
        refresh_if_due();
        continue;
      }
      return r;
    }
  }

  // ---- A pipeline --------------------------------------------------------------------------

  // Replies in the order of `cmds`. A redirected command is run again alone; on a transport
  // error the group's unanswered commands are run again alone when `idempotent`, else the
  // error is thrown.
  std::vector<Reply> execute_many(const std::vector<Cmd>& cmds, bool idempotent) {
    std::vector<Reply> out(cmds.size());
    if (cmds.empty()) return out;
    // Group by node, keeping each group in input order.
    std::vector<std::pair<NodePool*, std::vector<std::size_t>>> groups;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      NodePool* n = node_for(cmds[i].slot());
      auto g = groups.begin();
      while (g != groups.end() && g->first != n) ++g;
      if (g == groups.end()) {
        groups.emplace_back(n, std::vector<std::size_t>{});
        g = groups.end() - 1;
      }
      g->second.push_back(i);
    }
    std::vector<std::size_t> again;
    for (auto& [node, ix] : groups) {
      for (std::size_t from = 0; from < ix.size(); from += s_.pipeline_chunk) {
        const std::size_t to = std::min(ix.size(), from + s_.pipeline_chunk);
        std::size_t answered = from;
        bool sent = false;
        try {
          NodePool::Lease c = node->acquire();
          for (std::size_t j = from; j < to; ++j) c->append(cmds[ix[j]]);
          sent = true;
          AtomicClientStats::bump(stats_.round_trips);
          AtomicClientStats::bump(stats_.commands, to - from);
          for (; answered < to; ++answered) out[ix[answered]] = c->read();
        } catch (const PoolExhausted&) {
          throw;
        } catch (const RedisError& e) {
          if (e.code() != Errc::io_error && e.code() != Errc::timeout && e.code() != Errc::protocol_error) throw;
          if (s_.cluster) request_refresh();
          // Written and unanswered: a write may have run, so only reads go again. Never
          // written (no connection): every command goes again alone, through execute()'s
          // retries (in a cluster, to whichever node owns its slot by then).
          if (sent && !idempotent) {
            throw RedisError(e.code(), std::string(e.what()) + " (a pipelined write may have run)");
          }
          for (std::size_t j = answered; j < to; ++j) again.push_back(ix[j]);
        }
      }
    }
    if (s_.cluster) {
      for (std::size_t i = 0; i < cmds.size(); ++i) {
        if (out[i] && is_error(*out[i]) && is_redirection(text(*out[i]))) again.push_back(i);
      }
    }
    for (const std::size_t i : again) out[i] = execute(cmds[i], idempotent);
    return out;
  }

  // Every master (cluster) or the server: for commands that go to all, such as FLUSHDB.
  std::vector<NodePool*> masters() {
    if (!s_.cluster) return {pool_for(s_.seeds.front())};
    ensure_map();
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<NodePool*> out;
    for (const std::uint16_t n : slots_) {
      if (n == kNoNode) continue;
      NodePool* p = nodes_[n].get();
      bool seen = false;
      for (NodePool* q : out) seen = seen || q == p;
      if (!seen) out.push_back(p);
    }
    return out;
  }

 private:
  static constexpr std::uint16_t kNoNode = 0xFFFF;

  // The wait before retry number n (1, 2, 4 ... 64 ms).
  static void pause(int n) { std::this_thread::sleep_for(std::chrono::milliseconds(1 << std::min(std::max(n - 1, 0), 6))); }

  static bool is_redirection(std::string_view t) {
    return starts_with(t, "MOVED ") || starts_with(t, "ASK ") || starts_with(t, "TRYAGAIN") || starts_with(t, "CLUSTERDOWN");
  }

  NodePool* node_for(int slot) {
    if (!s_.cluster) return nodes_.front().get();
    ensure_map();
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      const std::uint16_t n = slots_[static_cast<std::size_t>(slot < 0 ? 0 : slot)];
      if (n != kNoNode) return nodes_[n].get();
    }
    if (slot < 0) return pool_for(s_.seeds.front());
    // A slot nobody serves: ask any node; it answers MOVED or CLUSTERDOWN.
    std::shared_lock<std::shared_mutex> lock(mu_);
    return nodes_.empty() ? nullptr : nodes_.front().get();
  }

  NodePool* pool_for(const Endpoint& at) {
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      for (const auto& n : nodes_) {
        if (n->endpoint() == at) return n.get();
      }
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (const auto& n : nodes_) {
      if (n->endpoint() == at) return n.get();
    }
    if (nodes_.size() >= kNoNode) throw RedisError(Errc::protocol_error, "too many cluster nodes");
    nodes_.push_back(std::make_unique<NodePool>(at, s_.connection, s_.pool, stats_));
    return nodes_.back().get();
  }

  std::uint16_t index_of(NodePool* p) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].get() == p) return static_cast<std::uint16_t>(i);
    }
    return kNoNode;
  }

  void set_slot(int slot, NodePool* p) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    slots_[static_cast<std::size_t>(slot)] = index_of(p);
  }

  void request_refresh() noexcept { refresh_wanted_.store(true, std::memory_order_relaxed); }

  void ensure_map() {
    if (!loaded_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> one(refresh_mu_);
      if (!loaded_.load(std::memory_order_relaxed)) load_map();
    } else {
      refresh_if_due();
    }
  }

  // Reloads the map if a reload was asked for and the last one is 100 ms old; a thread that
  // finds another reloading goes on with the current map.
  void refresh_if_due() {
    if (!refresh_wanted_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> one(refresh_mu_, std::try_to_lock);
    if (!one.owns_lock()) return;
    if (clock::now() - last_refresh_ < std::chrono::milliseconds(100)) return;
    try {
      load_map();
    } catch (const RedisError&) {
      // Keep the old map; the command's own retries report what is wrong.
    }
  }

  // CLUSTER SLOTS from the known nodes, then the seeds; refresh_mu_ held.
  void load_map() {
    last_refresh_ = clock::now();
    refresh_wanted_.store(false, std::memory_order_relaxed);
    std::vector<Endpoint> tries;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      for (const auto& n : nodes_) tries.push_back(n->endpoint());
    }
    for (const Endpoint& e : s_.seeds) {
      bool seen = false;
      for (const Endpoint& t : tries) seen = seen || t == e;
      if (!seen) tries.push_back(e);
    }
    std::string errors;
    Errc code = Errc::io_error;
    for (const Endpoint& at : tries) {
      try {
        NodePool::Lease c = pool_for(at)->acquire();
        AtomicClientStats::bump(stats_.round_trips);
        AtomicClientStats::bump(stats_.commands);
        Reply r = c->call(Cmd("CLUSTER").arg("SLOTS"));
        if (is_error(*r)) {
          code = classify_error_reply(text(*r));
          errors += at.str() + ": CLUSTER SLOTS: " + std::string(text(*r)) + "; ";
          continue;
        }
        apply_slots(*r, at);
        AtomicClientStats::bump(stats_.slot_map_refreshes);
        loaded_.store(true, std::memory_order_release);
        return;
      } catch (const RedisError& e) {
        code = e.code();
        errors += std::string(e.what()) + "; ";
      }
    }
    throw RedisError(code, "cannot load the cluster's slot map: " + errors);
  }

  // [[start, end, [host, port, id, ...], replicas...], ...]
  void apply_slots(const redisReply& r, const Endpoint& asked) {
    if (r.type != REDIS_REPLY_ARRAY) throw RedisError(Errc::protocol_error, "CLUSTER SLOTS: not an array");
    std::vector<std::pair<std::pair<long long, long long>, Endpoint>> ranges;
    for (std::size_t i = 0; i < r.elements; ++i) {
      const redisReply& e = *r.element[i];
      if (e.type != REDIS_REPLY_ARRAY || e.elements < 3 || e.element[0]->type != REDIS_REPLY_INTEGER ||
          e.element[1]->type != REDIS_REPLY_INTEGER || e.element[2]->type != REDIS_REPLY_ARRAY ||
          e.element[2]->elements < 2 || e.element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
        throw RedisError(Errc::protocol_error, "CLUSTER SLOTS: unexpected entry");
      }
      const long long lo = e.element[0]->integer;
      const long long hi = e.element[1]->integer;
      if (lo < 0 || hi >= kSlotCount || lo > hi) throw RedisError(Errc::protocol_error, "CLUSTER SLOTS: bad range");
      const redisReply& node = *e.element[2];
      Endpoint at;
      // An unknown (NULL) or empty endpoint means the node we asked.
      at.host = node.element[0]->type == REDIS_REPLY_STRING && node.element[0]->len > 0 &&
                        text(*node.element[0]) != "?"
                    ? std::string(text(*node.element[0]))
                    : asked.host;
      const long long port = node.element[1]->integer;
      if (port <= 0 || port > 65535) throw RedisError(Errc::protocol_error, "CLUSTER SLOTS: bad port");
      at.port = static_cast<int>(port);
      ranges.push_back({{lo, hi}, at});
    }
    std::vector<NodePool*> pools;
    for (const auto& rg : ranges) pools.push_back(pool_for(rg.second));
    std::unique_lock<std::shared_mutex> lock(mu_);
    std::array<std::uint16_t, kSlotCount> next;
    next.fill(kNoNode);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const std::uint16_t n = index_of(pools[i]);
      for (long long s = ranges[i].first.first; s <= ranges[i].first.second; ++s) next[static_cast<std::size_t>(s)] = n;
    }
    slots_ = next;
  }

  RouterSettings s_;
  AtomicClientStats stats_;

  std::shared_mutex mu_;  // nodes_ and slots_
  std::vector<std::unique_ptr<NodePool>> nodes_;
  std::array<std::uint16_t, kSlotCount> slots_{};

  std::mutex refresh_mu_;  // one reload at a time; last_refresh_
  std::atomic<bool> loaded_{false};
  std::atomic<bool> refresh_wanted_{false};
  clock::time_point last_refresh_{};
};

}  // namespace expiring::client
