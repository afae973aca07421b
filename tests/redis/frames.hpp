// tests/redis/frames.hpp: the catalogue of raw request frames (protocol errors, inline
// requests, pipelines, oversized lines and lengths) that the live tests send to expiring-server
// and to redis-server and compare byte for byte. Shared by the differential test and the
// server robustness tests.
#pragma once

#include <string>
#include <vector>

namespace frames {

inline const std::vector<std::string>& catalogue() {
  static const std::vector<std::string> inputs = {
      "PING\r\n", "*x\r\n", "*3000000000\r\n", "*1\r\nx3\r\n", "*1\r\n$-1\r\n", "*1\r\n$600000000\r\n",
      "*1\r\n$536870913\r\n", "SET a \"b\r\n", "SET a 'b'c\r\n", "*1\r\n\r\r\n", "*1\r\n$4\r\nPINGxyPING\r\n",
      "*0\r\nPING\r\n", "*-5\r\nPING\r\n", "\r\n\r\nPING\r\n", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n",
      "PING\r\n*1x\r\n", "ECHO \"a\\x41\\n\" x\r\n", "*1\r\n$\xff" "4\r\n", "*1\r\n\xff" "4\r\n",
      "*1\rX$4\rXPING\r\n", "*01\r\n$4\r\nPING\r\n", "*1\r\n$04\r\nPING\r\n", std::string("PING\0x\r\nPING\r\n", 14),
      "ECHO \x0bx\x0c\r\n", "ECHO \"\\xZZ\\q\"\r\n", "ECHO a\"b c\"\r\n", "ECHO 'a\\'b'\r\n",
      "SET k v EX 100\r\nTTL k\r\nGET k\r\nINCR k\r\nDEL k\r\nQUIT\r\nPING\r\n",
      "set  'sp ace'  \"v\\r\\n\"\r\nget 'sp ace'\r\nstrlen \"sp ace\"\r\n",
      std::string(70000, 'A'), "*" + std::string(70000, '1'), "*1\r\n$" + std::string(70000, '1'),
      "SET big " + std::string(60000, 'x') + "\r\nSTRLEN big\r\n",
      "*2\r\n$4\r\nECHO\r\n$100000\r\n" + std::string(100000, 'z') + "\r\nPING\r\n",
      "PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nQUIT\r\n",
  };
  return inputs;
}

}  // namespace frames
