// The section structure of an OP_MSG checked as its bytes pass (issue 29): a streamed reply is
// never whole in memory, so what decodeOpMsg checks of the sections (kinds 0 and 1, one body, each
// length within the message, nothing left over) is followed byte by byte. False at the first byte
// that breaks it; the session then closes the connection (as for a malformed whole reply).
#pragma once
#include <cstdint>
#include <span>

#include "protocol/wire.h"

namespace shardscope::proxy {

class OpMsgSectionCheck {
 public:
  // `sectionBytes`: the message size less its header and flags (checksummed messages are not streamed).
  explicit OpMsgSectionCheck(size_t sectionBytes) : left_(sectionBytes) {}

  bool feed(std::span<const uint8_t> bytes) {
    if (bytes.size() > left_) return false;
    left_ -= bytes.size();
    while (!bytes.empty()) {
      if (state_ == State::Skip) {
        const size_t n = skip_ < bytes.size() ? skip_ : bytes.size();
        skip_ -= n;
        bytes = bytes.subspan(n);
        if (skip_ == 0) state_ = State::Kind;
        continue;
      }
      const uint8_t b = bytes.front();
      bytes = bytes.subspan(1);
      if (state_ == State::Kind) {
        if (b > 1 || (b == 0 && ++bodies_ > 1)) return false;
        state_ = State::Length, have_ = 0;
        continue;
      }
      length_[have_++] = b;
      if (have_ < 4) continue;
      // Kind 0: a document (at least 5 bytes); kind 1: its size, a C string and documents.
      const int32_t length = protocol::loadInt32(length_);
      if (length < 5) return false;
      skip_ = static_cast<size_t>(length) - 4;
      if (skip_ > bytes.size() + left_) return false;
      state_ = State::Skip;
    }
    return true;
  }
  // Every byte came and the last section ended with the message.
  bool complete() const { return left_ == 0 && state_ == State::Kind && bodies_ == 1; }

 private:
  enum class State : uint8_t { Kind, Length, Skip };
  State state_ = State::Kind;
  size_t left_;
  size_t skip_ = 0;
  uint8_t length_[4] = {};
  int have_ = 0;
  int bodies_ = 0;
};

}  // namespace shardscope::proxy
