// server/server.hpp: expiring-server's server object: one store, one command executor, one loop.
//
// Design. A single-threaded epoll event loop on 127.0.0.1 speaking RESP2 (multibulk and inline
// requests, pipelining) that runs expiring's Redis command layer (expiring/redis/commands.hpp)
// over a ValueStore on a clock of its own (clock.cpp), so that redis-cli, redis-benchmark and any Redis client
// library can drive the store. Like Redis, it runs the active-expire cycle from its loop:
// tick(Slow) `hz` times a second (epoll_wait's timeout is 1000/hz ms) and tick(Fast) before every
// wait; it stops cleanly on SIGINT, SIGTERM and SHUTDOWN.
//
// The class is one object whose members live in one file per subsystem, as Redis keeps one
// file per subsystem of its one server struct:
//   event_loop.cpp   the loop, accepting and refusing clients (descriptors, maxclients), reading,
//                    running and writing, the client buffer limits and memory accounting, INFO
//   persistence.cpp  loading at start, the change feed to the log, SAVE/BGSAVE/BGREWRITEAOF/
//                    LASTSAVE/DEBUG RELOAD and the SYNC / REPLICAOF commands
//   replication.cpp  the primary's stream to its replicas and the replica's link to its primary
//   clock.cpp        the keys' time: the system's, once per command, or --clock manual's
//   config.cpp       the settings (config file, command line)
//   self_test.cpp    --self-test's client
// docs/server.md describes the behaviour (resources, persistence, replication) in full.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <expiring/append_log.hpp>
#include <expiring/redis/replication.hpp>

#include "command_instances.hpp"
#include "config.hpp"

namespace expiring::server {

using Store = expiring::redis::ValueStore<expiring::ManualClock&>;
using Executor = expiring::redis::CommandExecutor<expiring::ManualClock&>;
using expiring::redis::OutputBuffer;
using expiring::redis::OutputBufferLimit;

using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = 16 * 1024;  // Redis PROTO_IOBUF_LEN
// Backpressure (not in Redis): a client whose unsent output is above this, or above the
// normal client-output-buffer-limit if that is larger, is not read until it drains.
constexpr std::size_t kOutputHighWater = 1024 * 1024;
constexpr int kReservedFds = 32;         // Redis CONFIG_MIN_RESERVED_FDS: listener, epoll, logs...
constexpr int kListenerPauseMs = 100;    // when even the spare descriptor cannot accept
constexpr std::size_t kMaxIov = 64;      // blocks per sendmsg()
constexpr std::size_t kKeepArgs = 1024;  // argument slots a client keeps between commands
// A replica reads at most this much from its primary per event, then serves its clients:
// a primary that floods the link cannot keep the loop to itself.
constexpr std::size_t kLinkReadBudget = 8 * kReadChunk;

inline std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now().time_since_epoch()).count();
}
inline std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One connection.
struct Client {
  int fd = -1;
  expiring::redis::RequestParser parser;
  expiring::redis::Session session;
  OutputBuffer out;
  std::vector<std::string> argv;   // the command being run
  std::size_t argv_bytes = 0;      // its arguments' bytes
  std::size_t counted = 0;         // this client's share of Server::client_bytes_
  std::int64_t soft_since_ms = -1; // when its output went over the soft limit; -1 below it
  bool close_after_write = false;  // QUIT or a protocol error
  bool closing = false;            // over a buffer limit: output dropped, closed before the next wait
  bool want_write = false;         // EPOLLOUT registered
  bool reading = true;             // EPOLLIN registered
  // A full sync's RDB is not counted against the replica's output limit (Redis sends it from
  // a file, outside the replica's output buffer; the limit is for the stream): its unsent
  // bytes, and what its blocks hold allocated until they are all sent.
  std::size_t sync_unsent = 0;
  std::size_t sync_allocated = 0;
  // CLIENT LIST: the peer's address, when it connected and last ran a command, that command.
  std::string addr = "?";
  std::int64_t created_ms = 0, last_ms = 0;
  std::string last_command;
  // A replica's REPLCONF listening-port, and its last REPLCONF ACK (offset, when).
  int replica_port = 0;
  std::int64_t ack_offset = 0;
  std::int64_t ack_ms = 0;
};

class Server {
 public:
  explicit Server(const Config& cfg);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Applies the CONFIG SET settings of the config file and the command line, in order;
  // "" on success, else "<origin>: '<name> <value>': <CONFIG SET's error>". Before open().
  std::string configure();
  // Loads the data (log or snapshot), fits maxclients to the open file limit, binds and
  // listens; false (with a message on stderr) on failure. SIGINT and SIGTERM keep their
  // default action (the process ends) while the data loads, so a long load can be stopped;
  // then they are blocked, to be read from a signalfd by the loop. The library's own threads
  // (the log's fsync thread) never take them (detail/quiet_thread.hpp).
  bool open();
  int port() const noexcept { return port_; }
  // The event loop; returns when SHUTDOWN, SIGINT or SIGTERM asks it to.
  void run();

  static expiring::redis::CommandOptions command_options(const Config& cfg);

 private:
  // ---- the databases ----
  Store& db(std::size_t n) { return exec_.store(n); }
  std::vector<Store*>& dbs() { return exec_.stores(); }
  // The database `s` is now (SWAPDB moves stores between numbers).
  std::size_t db_of(const Store* s);
  void tick_all(expiring::CycleKind kind);

  // ---- event_loop.cpp: the loop, descriptors, clients, limits, INFO ----
  bool fail(const char* what);
  void add_fd(int fd, std::uint32_t events);
  void update_events(Client& c);
  bool adjust_open_files_limit();
  void open_spare();
  void refuse(int fd);
  void pause_listener(int err);
  void resume_listener();
  void accept_clients();
  void close_client(int fd);
  void account(Client& c);
  expiring::redis::ParserLimits parser_limits(const Client& c) const;
  const OutputBufferLimit& output_limit(const Client& c) const;
  std::size_t pause_threshold() const;
  bool over_output_limit(Client& c);
  void close_async(Client& c);
  void output_limit_reached(Client& c);
  void client_cron();
  void on_push(Client& c);
  // CLIENT LIST, INFO and KILL (the rest of CLIENT is the command layer's).
  void add_client_command();
  std::string client_line(const Client& c) const;
  std::string client_type(const Client& c) const;
  expiring::redis::Reply client_kill(const std::vector<std::string>& a, Client* self);
  const OutputBufferLimit& normal_limit() const { return exec_.options().client_output_buffer_limit[0]; }
  void read_client(Client& c);
  void process(Client& c);
  bool write_client(Client& c);
  void flush_pending();
  void info(std::string_view section, std::string& out);

  // ---- clock.cpp ----
  // Under --clock system: the clock set to the system's time (before each command, tick and
  // read of the link); under --clock manual, nothing.
  void sync_clock();
  // DEBUG SET-TIME <unix-ms> and DEBUG ADVANCE-TIME <ms>: the reply, or nullopt for another
  // subcommand.
  std::optional<expiring::redis::Reply> clock_command(const std::vector<std::string>& a);

  // ---- persistence.cpp ----
  std::string snapshot_path() const { return cfg_.dir + "/" + cfg_.dbfilename; }
  static bool file_exists(const std::string& p);
  // Loads the snapshot file into the store (RDB, or the library's own format); the error.
  std::optional<std::string> load_snapshot(expiring::LoadAs as, std::uint64_t& keys, std::uint64_t& expired);
  // Writes the store to the snapshot file as RDB; the error.
  std::optional<std::string> save_snapshot();
  bool load_data();
  std::optional<std::string> open_log(bool start_over);
  void install_feeds(bool on);
  void on_change(const expiring::redis::ValueChange& c, std::size_t db);
  void propagate_publish(const std::string& channel, const std::string& message, std::int64_t db);
  void on_transaction(bool begin);
  void emit(std::int64_t db, const std::string& record);
  // A record of the stream to the replicas (a RESP command), after a SELECT of `db` if the
  // stream is in another database (-1: a record of no database).
  void to_replicas(std::int64_t db, const std::string& record);
  void persistence_before_sleep();
  void add_persistence_commands();

  // ---- migrate.cpp ----
  // A connection MIGRATE keeps to a target: the database it last selected, when it was last
  // used (steady ms), and bytes read past the last reply line.
  struct MigrateSocket {
    int fd = -1;
    std::int64_t last_db = -1;
    std::int64_t last_use_ms = 0;
    std::string in;
    bool read_line(std::string& line, std::int64_t timeout_ms, bool& timed_out);
  };
  void add_migrate_command();
  expiring::redis::Reply migrate(const std::vector<std::string>& a, expiring::redis::Session& session);
  MigrateSocket* migrate_socket(const std::string& host, const std::string& port, std::int64_t timeout_ms);
  void close_migrate_socket(const std::string& host, const std::string& port);
  void close_migrate_sockets();
  void migrate_cron();

  // ---- replication.cpp ----
  // SYNC, PSYNC and REPLCONF, which write raw replies (an RDB) or none (a replica's ACK):
  // true when `c.argv` was one of them and is done.
  bool replication_command(Client& c);
  void attach_replica(Client& c, std::int64_t from);
  void add_to_stream(const char* data, std::size_t n);
  void new_replid();
  void propagate_to_replicas();
  void start_replication(const std::string& host, int port);
  void stop_replication();
  void stop_link();
  void account_link();
  expiring::redis::LinkLimits link_limits() const;
  void link_failed(const std::string& why);
  void connect_link();
  void replication_cron();
  void link_event(std::uint32_t ev);
  void flush_link();

  Config cfg_;
  expiring::ManualClock clock_;  // the keys' time (clock.cpp); before the stores, which read it
  // The databases' stores (Redis's `databases`), owned here; the executor's vector (db(n),
  // dbs()) says which is database n, and SWAPDB reorders it.
  std::vector<std::unique_ptr<Store>> stores_;
  Executor exec_;
  std::unique_ptr<expiring::AppendLog<Store>> aof_;  // after the stores: destroyed first
  int listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1, spare_fd_ = -1;
  int port_ = 0;
  bool stop_ = false;
  std::int64_t listener_paused_until_ms_ = -1;
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  std::unordered_set<int> soft_watch_;  // clients over the soft output limit
  std::vector<int> pending_;
  std::size_t client_bytes_ = 0;        // every client's query and output buffer bytes
  std::uint64_t next_client_id_ = 0, total_connections_ = 0, rejected_connections_ = 0;
  std::uint64_t query_limit_disconnections_ = 0, output_limit_disconnections_ = 0, fd_shortage_logged_ = 0;
  std::uint64_t net_in_ = 0, net_out_ = 0;
  std::unordered_map<std::string, MigrateSocket> migrate_sockets_;  // by "host:port"

  // Persistence.
  std::uint64_t dirty_ = 0;          // changes since the last save
  std::uint64_t dirty_at_fork_ = 0;  // ... when the running BGSAVE started
  std::int64_t lastsave_s_ = 0;
  bool last_bgsave_ok_ = true, last_rewrite_ok_ = true;
  pid_t bgsave_pid_ = -1;
  // Replication, primary side: connections that sent SYNC or PSYNC, and the stream not yet
  // copied to them; the stream's offset (Redis's master_repl_offset: every byte ever
  // streamed) under this replication ID, and the backlog, its last repl-backlog-size bytes.
  std::unordered_set<int> replicas_;
  std::string repl_buf_;
  std::string record_;  // one record of the stream, being encoded
  std::string replid_;
  std::int64_t master_offset_ = 0;
  std::string backlog_;
  std::int64_t backlog_first_ = 1;  // the offset of backlog_[0]
  // The stream is kept (and the backlog fed) from the first replica on, as Redis keeps its
  // backlog once created: a replica cut off and reconnecting continues from it.
  bool streaming_ = false;
  // EXEC running: its records held for the stream (database, bytes), and whether the log has
  // been sent its MULTI.
  bool in_transaction_ = false;
  bool tx_logged_ = false;
  std::vector<std::pair<std::int64_t, std::string>> tx_records_;
  std::int64_t stream_db_ = -1;     // the database the stream last SELECTed; -1: none since a full sync
  std::uint64_t sync_full_ = 0, sync_partial_ok_ = 0, sync_partial_err_ = 0;
  // Replica side.
  bool replica_ = false;
  struct Link {
    enum State { idle, connecting, connected };
    State state = idle;
    int fd = -1;
    std::string host;
    int port = 0;
    std::unique_ptr<expiring::redis::ReplicaLink<Store>> reader;  // while connected
    std::size_t counted = 0;          // its share of client_bytes_
    std::int64_t last_io_ms = 0;      // the last bytes from the primary (or the connect)
    std::int64_t retry_at_ms = 0;
    std::uint64_t syncs = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t partial_syncs = 0;
    std::string out;                  // the link's commands not yet sent
    std::string replid = "?";         // what the last link reached, for PSYNC
    std::int64_t offset = -1;
    std::int64_t db = 0;              // ... and the database its stream stood in
    std::int64_t last_ack_ms = 0;
    std::int64_t synced_offset = -2;  // the offset the last sync left (-2: none yet)
  } link_;
  std::int64_t last_replica_ping_ms_ = 0;  // (run() starts it at its start)
};

// The whole program: parses the command line, reads the config file, runs the server (or
// --self-test); the exit status. main.cpp calls it.
int server_main(int argc, char** argv);

// --self-test's client (self_test.cpp): drives a server on `port` from another thread and
// returns the number of failed checks; the last one sends SHUTDOWN.
int self_test_client(int port);

}  // namespace expiring::server
