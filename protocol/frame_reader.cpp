#include "protocol/frame_reader.h"

namespace shardscope::protocol {

FrameResult FrameReader::next(std::span<const uint8_t> buffered) const {
  FrameResult r;
  if (buffered.size() < kHeaderSize) {
    r.result = {ParseStatus::NeedMore, {}};
    return r;
  }
  r.header = readHeader(buffered.data());
  if (r.header.messageLength < static_cast<int32_t>(kHeaderSize)) {
    r.result = ParseResult::malformed("message length is shorter than the header");
    return r;
  }
  if (static_cast<uint32_t>(r.header.messageLength) > max_message_size_) {
    r.result = {ParseStatus::TooLarge, "message length exceeds the maximum message size"};
    return r;
  }
  if (!isKnownOpCode(r.header.opCode)) {
    r.result = ParseResult::malformed("unknown opcode");
    return r;
  }
  r.frameSize = static_cast<size_t>(r.header.messageLength);
  r.result = buffered.size() >= r.frameSize ? ParseResult::success() : ParseResult{ParseStatus::NeedMore, {}};
  return r;
}

}  // namespace shardscope::protocol
