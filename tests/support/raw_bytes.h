// Test helpers for messages spelled out byte by byte: little-endian int32s, and hex for failure output.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace shardscope::testing {

inline void appendInt32(std::vector<uint8_t>& out, int32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * i)));
}

inline std::string hex(std::span<const uint8_t> bytes) {
  std::string h;
  char buf[4];
  for (uint8_t c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    h += buf;
  }
  return h;
}

}  // namespace shardscope::testing
