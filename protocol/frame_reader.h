// Incremental framing: finds where the next length-prefixed message ends in buffered bytes,
// enforcing the maximum message size before any body byte is read.
#pragma once
#include <cstdint>
#include <span>

#include "protocol/status.h"
#include "protocol/wire.h"

namespace shardscope::protocol {

struct FrameResult {
  ParseResult result;
  size_t frameSize = 0;  // bytes of the complete message when Ok; total needed when NeedMore
  MsgHeader header;      // valid once 16 bytes were seen and the length was acceptable
};

class FrameReader {
 public:
  explicit FrameReader(uint32_t maxMessageSize = kDefaultMaxMessageSize) : max_message_size_(maxMessageSize) {}

  // Inspects the start of `buffered`. NeedMore with frameSize 0 means the header is incomplete.
  FrameResult next(std::span<const uint8_t> buffered) const;
  uint32_t maxMessageSize() const { return max_message_size_; }

 private:
  uint32_t max_message_size_;
};

}  // namespace shardscope::protocol
