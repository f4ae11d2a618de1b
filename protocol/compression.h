// OP_COMPRESSED (opcode 2012): snappy, zlib and zstd, and which commands must never be compressed.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/status.h"

namespace shardscope::protocol {

enum class Compressor : uint8_t { Noop = 0, Snappy = 1, Zlib = 2, Zstd = 3 };

std::optional<Compressor> compressorFromName(std::string_view name);
std::string_view compressorName(Compressor c);

// A byte vector whose resize() leaves new bytes uninitialised: a decompression target is written
// by the decompressor, so zero-filling the declared size first would cost O(declared) for a frame
// that then turns out to lie (issue 14).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using MessageBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

// The size the original message will have (header included) as an OP_COMPRESSED frame declares
// it, or 0 when the frame is too short to say. Only the header is read: callers use it to check
// a memory budget before anything is inflated.
size_t declaredMessageSize(std::span<const uint8_t> message);

// Expands an OP_COMPRESSED message into the original message (header rewritten with the original
// opcode and length). Before anything is allocated the declared size is checked against
// `maxMessageSize` and against what the compressed data can hold (snappy's length header and a
// validation pass, zstd's frame content size, zlib's maximum ratio), and nothing is zero-filled:
// a lying size costs O(compressed bytes), not O(declared).
ParseResult decompressMessage(std::span<const uint8_t> message, uint32_t maxMessageSize, MessageBuffer& out,
                              Compressor* used = nullptr);
// The same into a std::vector (tests, tools).
ParseResult decompressMessage(std::span<const uint8_t> message, uint32_t maxMessageSize, std::vector<uint8_t>& out,
                              Compressor* used = nullptr);

// Wraps a complete message into OP_COMPRESSED with the same requestID and responseTo.
void compressMessage(std::span<const uint8_t> message, Compressor compressor, std::vector<uint8_t>& out);

}  // namespace shardscope::protocol
