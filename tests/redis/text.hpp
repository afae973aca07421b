// tests/redis/text.hpp: reading and showing Redis text in test messages, shared by the
// command-layer, differential and robustness tests.
#pragma once

#include <cstdio>
#include <string>

namespace redistext {

// "field:value" of an INFO payload, or "" when absent.
inline std::string info_field(const std::string& info, const std::string& name) {
  const std::string key = name + ":";
  std::size_t p = info.rfind(key, 0) == 0 ? 0 : info.find("\n" + key);
  if (p == std::string::npos) return "";
  if (p != 0) ++p;
  const std::size_t b = p + key.size();
  return info.substr(b, info.find("\r\n", b) - b);
}

// Bytes as printable ASCII with \xNN escapes, cut after `max` characters.
inline std::string printable(const std::string& s, std::size_t max = 300) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 32 && u < 127 && c != '\\') {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
    if (out.size() > max) return out + "...";
  }
  return out;
}

}  // namespace redistext
