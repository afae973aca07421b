// expiring/redis/glob.hpp: Redis's glob-style pattern matching (KEYS, SCAN MATCH, CONFIG GET).
//
// The semantics of Redis's stringmatchlen(), re-implemented:
//   *        any run of bytes (also empty)         ?      exactly one byte
//   [abc]    one of a, b, c                        [^abc] any one byte but a, b, c
//   [a-z]    a range (ends in either order)        \x     the byte x literally (also in [])
// Matching is binary-safe over the whole key. Redis's edge cases are kept: an unterminated
// "[abc" behaves as if closed at the end of the pattern, a trailing lone "\" matches itself,
// range ends compare as signed chars, and the nesting of '*' is limited to 1000 levels (the
// patched 7.0.15 refuses deeper matches: no match), so no pattern can exhaust the stack.
// The skip-longer-matches rule keeps patterns like "*a*a*a*...b" linear per star instead of
// exponential.
#pragma once

#include <cstddef>
#include <string_view>

namespace expiring::redis {

namespace detail {

struct GlobMatcher {
  std::string_view pat;
  std::string_view str;
  bool nocase;
  bool skip_longer = false;

  // Reading one past the end gives '\0', as Redis reads its NUL-terminated strings.
  char p(std::size_t i) const noexcept { return i < pat.size() ? pat[i] : '\0'; }
  static int lower(int c) noexcept { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
  bool same(char a, char b) const noexcept {
    return nocase ? lower(static_cast<signed char>(a)) == lower(static_cast<signed char>(b)) : a == b;
  }

  // Matches pat[pi..] against str[si..]; `plen` and `slen` are the remaining lengths.
  bool match(std::size_t pi, std::size_t plen, std::size_t si, std::size_t slen, int nesting) {
    if (nesting > 1000) return false;
    while (plen > 0 && slen > 0) {
      switch (p(pi)) {
        case '*': {
          while (plen > 0 && p(pi + 1) == '*') {
            ++pi;
            --plen;
          }
          if (plen == 1) return true;
          while (slen > 0) {
            if (match(pi + 1, plen - 1, si, slen, nesting + 1)) return true;
            if (skip_longer) return false;
            ++si;
            --slen;
          }
          // Nothing after this star matches anywhere in the rest: no earlier star can help
          // by matching longer either.
          skip_longer = true;
          return false;
        }
        case '?':
          ++si;
          --slen;
          break;
        case '[': {
          ++pi;
          --plen;
          const bool negate = p(pi) == '^';
          if (negate) {
            ++pi;
            --plen;
          }
          bool matched = false;
          const char c = str[si];
          for (;;) {
            if (p(pi) == '\\' && plen >= 2) {
              ++pi;
              --plen;
              if (p(pi) == c) matched = true;
            } else if (p(pi) == ']') {
              break;
            } else if (plen == 0) {
              // Unterminated: step back so the outer advance lands on the end.
              --pi;
              ++plen;
              break;
            } else if (plen >= 3 && p(pi + 1) == '-') {
              int start = static_cast<signed char>(p(pi));
              int end = static_cast<signed char>(p(pi + 2));
              int ch = static_cast<signed char>(c);
              if (start > end) {
                const int t = start;
                start = end;
                end = t;
              }
              if (nocase) {
                start = lower(start);
                end = lower(end);
                ch = lower(ch);
              }
              pi += 2;
              plen -= 2;
              if (ch >= start && ch <= end) matched = true;
            } else if (same(p(pi), c)) {
              matched = true;
            }
            ++pi;
            --plen;
          }
          if (negate) matched = !matched;
          if (!matched) return false;
          ++si;
          --slen;
          break;
        }
        case '\\':
          if (plen >= 2) {
            ++pi;
            --plen;
          }
          if (!same(p(pi), str[si])) return false;
          ++si;
          --slen;
          break;
        default:
          if (!same(p(pi), str[si])) return false;
          ++si;
          --slen;
          break;
      }
      ++pi;
      --plen;
      if (slen == 0) {
        while (p(pi) == '*') {
          ++pi;
          --plen;
        }
        break;
      }
    }
    return plen == 0 && slen == 0;
  }
};

}  // namespace detail

// Whether `str` matches the glob `pattern` (case-insensitively with `nocase`).
inline bool glob_match(std::string_view pattern, std::string_view str, bool nocase = false) {
  detail::GlobMatcher m{pattern, str, nocase};
  return m.match(0, pattern.size(), 0, str.size(), 0);
}

}  // namespace expiring::redis
