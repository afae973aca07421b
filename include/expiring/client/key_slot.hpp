// expiring/client/key_slot.hpp: Redis Cluster's key slot of a key (no network, no hiredis).
//
// A cluster splits the keyspace into 16384 slots; a key's slot is CRC16(k) mod 16384, where
// the CRC is the XMODEM variant (polynomial 0x1021, initial value 0, no reflection; check
// value 0x31C3 for "123456789") and k is the key's hash tag when it has one: the bytes
// between the first '{' and the first '}' after it, if there is at least one byte between
// them. "{user1000}.following" and "{user1000}.followers" share a slot; "foo{}{bar}" hashes
// whole. Keys are bytes: embedded NULs are fine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace expiring::client {

// The number of slots in a Redis Cluster: slots are 0 .. kSlotCount - 1.
inline constexpr int kSlotCount = 16384;

namespace detail {
constexpr std::array<std::uint16_t, 256> make_crc16_table() noexcept {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int b = 0; b < 8; ++b) crc = (crc & 0x8000u) != 0 ? (crc << 1) ^ 0x1021u : crc << 1;
    t[i] = static_cast<std::uint16_t>(crc & 0xFFFFu);
  }
  return t;
}
inline constexpr std::array<std::uint16_t, 256> kCrc16Table = make_crc16_table();
}  // namespace detail

// CRC-16/XMODEM of `bytes`.
constexpr std::uint16_t crc16(std::string_view bytes) noexcept {
  unsigned crc = 0;
  for (const char ch : bytes) {
    const unsigned byte = static_cast<unsigned char>(ch);
    crc = ((crc << 8) ^ detail::kCrc16Table[((crc >> 8) ^ byte) & 0xFFu]) & 0xFFFFu;
  }
  return static_cast<std::uint16_t>(crc);
}

// The part of `key` that is hashed: its hash tag, or the whole key.
constexpr std::string_view hash_tag(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// The slot of `key`, 0..16383 (CLUSTER KEYSLOT).
constexpr int key_slot(std::string_view key) noexcept {
  return static_cast<int>(crc16(hash_tag(key)) & (kSlotCount - 1));
}

static_assert(crc16("123456789") == 0x31C3, "CRC-16/XMODEM check value");

}  // namespace expiring::client
