// expiring/detail/decimal.hpp: Redis's conversions between text and long double, for
// INCRBYFLOAT and HINCRBYFLOAT (the store's hincrbyfloat() and the command layer's).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <string>
#include <string_view>

namespace expiring::detail {

// Redis's string2ld(): strtold() over the whole argument (a C string of it: bytes after a NUL
// make it invalid), no leading blank, no range error to an infinity or to zero, not NaN, at
// most 5 KB. Hexadecimal floats and "inf" are accepted, as strtold() accepts them.
inline bool parse_long_double(std::string_view s, long double& out) {
  if (s.empty() || s.size() >= 5 * 1024) return false;
  const std::string buf(s);
  errno = 0;
  char* end = nullptr;
  const long double v = std::strtold(buf.c_str(), &end);
  if (std::isspace(static_cast<unsigned char>(buf[0])) != 0 || *end != '\0' ||
      static_cast<std::size_t>(end - buf.c_str()) != s.size() ||
      (errno == ERANGE && (std::isinf(v) || std::fpclassify(v) == FP_ZERO)) || errno == EINVAL || std::isnan(v)) {
    return false;
  }
  out = v;
  return true;
}

// Redis's ld2string(LD_STR_HUMAN): "%.17Lf" without the trailing zeros of its fraction (nor a
// trailing dot), and "-0" as "0". (A finite long double takes at most 4,951 characters so.)
inline std::string format_long_double(long double v) {
  char buf[5 * 1024];
  const int n = std::snprintf(buf, sizeof buf, "%.17Lf", v);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf) return "0";
  std::size_t l = static_cast<std::size_t>(n);
  if (std::string_view(buf, l).find('.') != std::string_view::npos) {
    while (buf[l - 1] == '0') --l;
    if (buf[l - 1] == '.') --l;
  }
  if (l == 2 && buf[0] == '-' && buf[1] == '0') return "0";
  return std::string(buf, l);
}

}  // namespace expiring::detail
