#include "protocol/compression.h"

#include <snappy.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_frameHeaderSize: walking a frame's blocks
#include <zstd.h>

#include <array>
#include <cstring>

#include "protocol/wire.h"

namespace shardscope::protocol {
namespace {

constexpr size_t kCompressedPrefix = kHeaderSize + 4 + 4 + 1;  // header, originalOpcode, size, id

}  // namespace

std::optional<Compressor> compressorFromName(std::string_view name) {
  if (name == "snappy") return Compressor::Snappy;
  if (name == "zlib") return Compressor::Zlib;
  if (name == "zstd") return Compressor::Zstd;
  if (name == "noop") return Compressor::Noop;
  return std::nullopt;
}

std::string_view compressorName(Compressor c) {
  switch (c) {
    case Compressor::Noop: return "noop";
    case Compressor::Snappy: return "snappy";
    case Compressor::Zlib: return "zlib";
    case Compressor::Zstd: return "zstd";
  }
  return "unknown";
}

size_t declaredMessageSize(std::span<const uint8_t> message) {
  if (message.size() < kCompressedPrefix) return 0;
  int32_t uncompressedSize = loadInt32(message.data() + kHeaderSize + 4);
  return uncompressedSize < 0 ? 0 : static_cast<size_t>(uncompressedSize) + kHeaderSize;
}

namespace {

// deflate cannot expand more than ~1032:1 (258-byte matches in ~2 bits); above that a size lies.
constexpr uint64_t kMaxZlibRatio = 1032;

// The most one zstd frame can expand to, from its block headers (O(blocks), no decoding): raw and
// RLE blocks state their size, a compressed block yields at most ZSTD_BLOCKSIZE_MAX. 0 when the
// frame is not whole. Refuses a frame whose content-size header lies about truncated data.
uint64_t zstdFrameBound(std::span<const uint8_t> frame) {
  size_t pos = ZSTD_frameHeaderSize(frame.data(), frame.size());
  if (ZSTD_isError(pos)) return 0;
  uint64_t bound = 0;
  for (;;) {
    if (pos + 3 > frame.size()) return 0;
    uint32_t header = frame[pos] | (frame[pos + 1] << 8) | (uint32_t{frame[pos + 2]} << 16);
    const bool last = header & 1;
    const uint32_t type = (header >> 1) & 3, size = header >> 3;
    pos += 3;
    if (type == 0) bound += size, pos += size;                     // raw
    else if (type == 1) bound += size, pos += 1;                   // RLE: one byte repeated
    else if (type == 2) bound += ZSTD_BLOCKSIZE_MAX, pos += size;  // compressed
    else return 0;
    if (pos > frame.size()) return 0;
    if (last) return bound;
  }
}

// What can be known of the payload before inflating it, in O(compressed bytes) and without
// allocating: a lie about the size is refused here.
ParseResult checkPayload(Compressor id, std::span<const uint8_t> payload, size_t size) {
  const char* src = reinterpret_cast<const char*>(payload.data());
  switch (id) {
    case Compressor::Noop:
      if (payload.size() != size) return ParseResult::malformed("OP_COMPRESSED noop size mismatch");
      return ParseResult::success();
    case Compressor::Snappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(src, payload.size(), &n) || n != size ||
          !snappy::IsValidCompressedBuffer(src, payload.size()))
        return ParseResult::malformed("OP_COMPRESSED snappy data is corrupt or has the wrong size");
      return ParseResult::success();
    }
    case Compressor::Zlib:
      if (size > kMaxZlibRatio * payload.size() + 64)
        return ParseResult::malformed("OP_COMPRESSED zlib data is corrupt or has the wrong size");
      return ParseResult::success();
    case Compressor::Zstd: {
      // One frame, exactly the payload; its content size, when the frame states it, must agree.
      unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
      if (content == ZSTD_CONTENTSIZE_ERROR || (content != ZSTD_CONTENTSIZE_UNKNOWN && content != size) ||
          ZSTD_findFrameCompressedSize(payload.data(), payload.size()) != payload.size() ||
          zstdFrameBound(payload) < size)
        return ParseResult::malformed("OP_COMPRESSED zstd data is corrupt or has the wrong size");
      return ParseResult::success();
    }
  }
  return ParseResult::malformed("OP_COMPRESSED uses an unknown compressor id");
}

}  // namespace

ParseResult decompressMessage(std::span<const uint8_t> message, uint32_t maxMessageSize, MessageBuffer& out,
                              Compressor* used) {
  if (message.size() < kCompressedPrefix) return ParseResult::malformed("OP_COMPRESSED is truncated");
  MsgHeader h = readHeader(message.data());
  if (static_cast<size_t>(h.messageLength) != message.size())
    return ParseResult::malformed("OP_COMPRESSED length does not match its header");
  int32_t originalOpcode = loadInt32(message.data() + kHeaderSize);
  int32_t uncompressedSize = loadInt32(message.data() + kHeaderSize + 4);
  uint8_t id = message[kHeaderSize + 8];
  if (originalOpcode == static_cast<int32_t>(OpCode::Compressed) || !isKnownOpCode(originalOpcode))
    return ParseResult::malformed("OP_COMPRESSED wraps an invalid opcode");
  if (uncompressedSize < 0 || static_cast<uint64_t>(uncompressedSize) + kHeaderSize > maxMessageSize)
    return {ParseStatus::TooLarge, "OP_COMPRESSED uncompressed size exceeds the maximum message size"};
  auto payload = message.subspan(kCompressedPrefix);
  size_t size = static_cast<size_t>(uncompressedSize);
  const auto compressor = static_cast<Compressor>(id);
  if (auto r = checkPayload(compressor, payload, size); !r.ok()) return r;
  out.clear();  // so that growing copies nothing of the previous message
  out.resize(kHeaderSize + size);  // uninitialised: the decompressor writes every byte it reports
  uint8_t* dst = out.data() + kHeaderSize;
  const char* src = reinterpret_cast<const char*>(payload.data());
  switch (compressor) {
    case Compressor::Noop:
      if (size) std::memcpy(dst, payload.data(), size);
      break;
    case Compressor::Snappy:
      if (!snappy::RawUncompress(src, payload.size(), reinterpret_cast<char*>(dst)))
        return ParseResult::malformed("OP_COMPRESSED snappy data is corrupt or has the wrong size");
      break;
    case Compressor::Zlib: {
      uLongf n = size;
      if (uncompress(dst, &n, payload.data(), payload.size()) != Z_OK || n != size)
        return ParseResult::malformed("OP_COMPRESSED zlib data is corrupt or has the wrong size");
      break;
    }
    case Compressor::Zstd: {
      size_t n = ZSTD_decompress(dst, size, payload.data(), payload.size());
      if (ZSTD_isError(n) || n != size) return ParseResult::malformed("OP_COMPRESSED zstd data is corrupt or has the wrong size");
      break;
    }
  }
  writeHeader(out.data(), {static_cast<int32_t>(out.size()), h.requestId, h.responseTo, originalOpcode});
  if (used) *used = compressor;
  return ParseResult::success();
}

ParseResult decompressMessage(std::span<const uint8_t> message, uint32_t maxMessageSize, std::vector<uint8_t>& out,
                              Compressor* used) {
  MessageBuffer buffer;
  auto r = decompressMessage(message, maxMessageSize, buffer, used);
  if (r.ok()) out.assign(buffer.begin(), buffer.end());
  return r;
}

void compressMessage(std::span<const uint8_t> message, Compressor compressor, std::vector<uint8_t>& out) {
  MsgHeader h = readHeader(message.data());
  auto body = message.subspan(kHeaderSize);
  size_t bound = body.size();
  switch (compressor) {
    case Compressor::Snappy: bound = snappy::MaxCompressedLength(body.size()); break;
    case Compressor::Zlib: bound = compressBound(body.size()); break;
    case Compressor::Zstd: bound = ZSTD_compressBound(body.size()); break;
    case Compressor::Noop: break;
  }
  out.resize(kCompressedPrefix + bound);
  uint8_t* dst = out.data() + kCompressedPrefix;
  size_t n = body.size();
  switch (compressor) {
    case Compressor::Noop:
      if (n) std::memcpy(dst, body.data(), n);
      break;
    case Compressor::Snappy:
      snappy::RawCompress(reinterpret_cast<const char*>(body.data()), body.size(), reinterpret_cast<char*>(dst), &n);
      break;
    case Compressor::Zlib: {
      uLongf z = bound;
      compress2(dst, &z, body.data(), body.size(), Z_DEFAULT_COMPRESSION);
      n = z;
      break;
    }
    case Compressor::Zstd:
      n = ZSTD_compress(dst, bound, body.data(), body.size(), 1);
      break;
  }
  out.resize(kCompressedPrefix + n);
  writeHeader(out.data(), {static_cast<int32_t>(out.size()), h.requestId, h.responseTo,
                           static_cast<int32_t>(OpCode::Compressed)});
  storeInt32(out.data() + kHeaderSize, h.opCode);
  storeInt32(out.data() + kHeaderSize + 4, static_cast<int32_t>(body.size()));
  out[kHeaderSize + 8] = static_cast<uint8_t>(compressor);
}

}  // namespace shardscope::protocol
