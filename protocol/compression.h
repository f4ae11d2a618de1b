// OP_COMPRESSED (opcode 2012): snappy, zlib and zstd, and which commands must never be compressed.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/status.h"

namespace shardscope::protocol {

enum class Compressor : uint8_t { Noop = 0, Snappy = 1, Zlib = 2, Zstd = 3 };

std::optional<Compressor> compressorFromName(std::string_view name);
std::string_view compressorName(Compressor c);

// Expands an OP_COMPRESSED message into the original message (header rewritten with the original
// opcode and length). The uncompressed size is checked against `maxMessageSize` before inflating.
ParseResult decompressMessage(std::span<const uint8_t> message, uint32_t maxMessageSize, std::vector<uint8_t>& out,
                              Compressor* used = nullptr);

// Wraps a complete message into OP_COMPRESSED with the same requestID and responseTo.
void compressMessage(std::span<const uint8_t> message, Compressor compressor, std::vector<uint8_t>& out);

// hello, saslStart, ... are never compressed (OP_COMPRESSED spec).
bool isNeverCompressed(std::string_view commandName);

}  // namespace shardscope::protocol
