// CRC-32C (Castagnoli), the OP_MSG checksum.
#pragma once
#include <cstdint>
#include <span>

namespace shardscope::protocol {

uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc = 0);

}  // namespace shardscope::protocol
