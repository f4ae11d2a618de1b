#include "protocol/cursor_batch.h"

#include <cstring>
#include <string_view>

#include "protocol/wire.h"

namespace shardscope::protocol {

namespace {

// The size of an element's value of BSON type `type` at `p` (with `avail` bytes readable there),
// for the types a cursor document carries before its batch; nothing for others or when cut.
std::optional<size_t> valueSize(uint8_t type, const uint8_t* p, size_t avail) {
  auto fixed = [&](size_t n) -> std::optional<size_t> { return n <= avail ? std::optional(n) : std::nullopt; };
  auto prefixed = [&](size_t extra) -> std::optional<size_t> {
    if (avail < 4) return std::nullopt;
    int32_t n = loadInt32(p);
    if (n < 0) return std::nullopt;
    return fixed(size_t{4} + extra + static_cast<size_t>(n));
  };
  switch (type) {
    case 0x01: case 0x09: case 0x11: case 0x12: return fixed(8);
    case 0x02: return prefixed(0);
    case 0x03: case 0x04: {
      if (avail < 4 || loadInt32(p) < 5) return std::nullopt;
      return fixed(static_cast<size_t>(loadInt32(p)));
    }
    case 0x05: return prefixed(1);
    case 0x07: return fixed(12);
    case 0x08: return fixed(1);
    case 0x0A: case 0x7F: case 0xFF: return fixed(0);
    case 0x10: return fixed(4);
    case 0x13: return fixed(16);
    default: return std::nullopt;
  }
}

// An element's key at `at`: its end (past the NUL) within `end`, or nothing.
std::optional<size_t> keyEnd(std::span<const uint8_t> b, size_t at, size_t end) {
  const void* nul = std::memchr(b.data() + at, 0, end - at);
  if (!nul) return std::nullopt;
  return static_cast<size_t>(static_cast<const uint8_t*>(nul) - b.data()) + 1;
}

}  // namespace

std::optional<CursorBatchSpan> locateCursorBatch(std::span<const uint8_t> prefix, size_t messageSize) {
  constexpr size_t kSections = 20;  // header and flags
  if (prefix.size() < kSections + 1 + 4 + 1 || prefix[kSections] != 0) return std::nullopt;
  CursorBatchSpan span;
  span.body_at = kSections + 1;
  const int32_t bodyLength = loadInt32(prefix.data() + span.body_at);
  if (bodyLength < 5 || span.body_at + static_cast<size_t>(bodyLength) != messageSize) return std::nullopt;
  // The body's first element: "cursor", a document.
  size_t at = span.body_at + 4;
  if (prefix[at] != 0x03) return std::nullopt;
  auto key = keyEnd(prefix, at + 1, prefix.size());
  if (!key || std::string_view(reinterpret_cast<const char*>(prefix.data() + at + 1)) != "cursor") return std::nullopt;
  span.cursor_at = *key;
  if (span.cursor_at + 4 > prefix.size()) return std::nullopt;
  const int32_t cursorLength = loadInt32(prefix.data() + span.cursor_at);
  if (cursorLength < 5 || span.cursor_at + static_cast<size_t>(cursorLength) > messageSize - 1) return std::nullopt;
  const size_t cursorEnd = span.cursor_at + static_cast<size_t>(cursorLength);
  // Its small fields, up to the batch.
  at = span.cursor_at + 4;
  while (at < prefix.size()) {
    const uint8_t type = prefix[at];
    if (type == 0) return std::nullopt;  // the cursor document ended without a batch
    key = keyEnd(prefix, at + 1, prefix.size());
    if (!key) return std::nullopt;
    const std::string_view name(reinterpret_cast<const char*>(prefix.data() + at + 1));
    if (type == 0x04 && (name == "firstBatch" || name == "nextBatch")) {
      if (*key + 4 > prefix.size()) return std::nullopt;
      const int32_t batchLength = loadInt32(prefix.data() + *key);
      if (batchLength < 5 || *key + static_cast<size_t>(batchLength) > cursorEnd - 1) return std::nullopt;
      span.batch_at = *key;
      span.batch_bytes = static_cast<uint32_t>(batchLength);
      return span;
    }
    auto size = valueSize(type, prefix.data() + *key, prefix.size() - *key);
    if (!size) return std::nullopt;
    at = *key + *size;
  }
  return std::nullopt;
}

}  // namespace shardscope::protocol
