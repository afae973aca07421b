// tests/test_results.hpp: comparing two stores' Result replies in the differential tests.
#pragma once

#include <expiring/error.hpp>

// Whether a and b are the same reply: both values and equal, or both the same error.
template <class T>
bool same(const expiring::Result<T>& a, const expiring::Result<T>& b) {
  if (a.ok() != b.ok()) return false;
  return a.ok() ? a.value() == b.value() : a.error() == b.error();
}
inline bool same(const expiring::Result<void>& a, const expiring::Result<void>& b) {
  return a.ok() == b.ok() && (a.ok() || a.error() == b.error());
}
