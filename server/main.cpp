// server/main.cpp: expiring-server. Everything it does is in the expiring_server library
// (server_main.cpp), which the tests link too.
#include "server.hpp"

int main(int argc, char** argv) { return expiring::server::server_main(argc, argv); }
