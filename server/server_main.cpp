// server/server_main.cpp: the program expiring-server, as a function of the library.
//
// What main() does, kept in the library so that a test can run it in-process and the binary's
// main.cpp stays one line: --help and --version; the config file and the flags (config.hpp);
// the settings applied (CONFIG SET's own checks) before anything starts; then the data loaded,
// the port bound, "expiring-server: listening on 127.0.0.1:<port>" printed on stdout (tests and
// scripts read the port from it when they ask for port 0), and the loop run until SHUTDOWN,
// SIGINT or SIGTERM. Exit status: 0 after a clean stop, --help or --version; 1 when the
// configuration is refused (a message naming the file and line, or the flag) or the server
// cannot start.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "server.hpp"

namespace expiring::server {

int server_main(int argc, char** argv) {
  Config cfg;
  const ParseResult parsed = parse_command_line(argc, argv, cfg);
  switch (parsed.action) {
    case CliAction::help:
      std::fputs(usage_text().c_str(), stdout);
      return 0;
    case CliAction::version:
      std::fputs(version_text().c_str(), stdout);
      return 0;
    case CliAction::error:
      std::fprintf(stderr, "expiring-server: %s\n(expiring-server --help lists the options)\n", parsed.error.c_str());
      return 1;
    case CliAction::run:
      break;
  }
  if (const std::string why = validate(cfg); !why.empty()) {
    std::fprintf(stderr, "expiring-server: %s\n", why.c_str());
    return 1;
  }
  if (cfg.self_test) cfg.port = 0;

  // SIGINT / SIGTERM: blocked by open() once the data is loaded, then read from a signalfd.
  ::signal(SIGPIPE, SIG_IGN);

  Server server(cfg);
  if (const std::string why = server.configure(); !why.empty()) {
    std::fprintf(stderr, "expiring-server: %s\n", why.c_str());
    return 1;
  }
  if (!server.open()) return 1;
  std::printf("expiring-server: listening on 127.0.0.1:%d\n", server.port());
  std::fflush(stdout);

  if (!cfg.self_test) {
    server.run();
    return 0;
  }
  std::atomic<int> failures{0};
  std::thread client([&] { failures = self_test_client(server.port()); });
  server.run();
  client.join();
  std::printf("expiring-server self-test: %s\n", failures == 0 ? "passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace expiring::server
