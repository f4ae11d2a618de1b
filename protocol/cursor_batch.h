// Where a cursor reply's batch lies, read from the reply's first bytes (issue 29): a large reply
// is nearly all batch, and what the statistics and the cursor registry read of it (ok, errors,
// cursor.id) lies around it. The proxy streams the batch and keeps the rest as a summary reply.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace shardscope::protocol {

struct CursorBatchSpan {
  size_t body_at = 0;    // the body document's length field (after the kind byte)
  size_t cursor_at = 0;  // the "cursor" document's length field
  size_t batch_at = 0;   // the firstBatch / nextBatch array's length field
  uint32_t batch_bytes = 0;  // the array's length
};

// For an uncompressed OP_MSG without checksum whose first bytes are `prefix` (at least the header
// and flags) and whose size is `messageSize`: the span of the batch of a body shaped
// {cursor: {<small fields>, firstBatch|nextBatch: [...], ...}, ...} with only that one section,
// when everything before the batch is in `prefix`. Nothing otherwise (then the reply is taken whole).
std::optional<CursorBatchSpan> locateCursorBatch(std::span<const uint8_t> prefix, size_t messageSize);

}  // namespace shardscope::protocol
