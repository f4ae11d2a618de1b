// The sections after a streamed request's body, checked as their bytes pass (issue 29): what
// decodeOpMsg checks of document sequences, without holding any of them. Kind 1 only (the one body
// came first), each size within the message, an identifier of at most 256 bytes and met once, at
// most 64 sequences, and documents that are valid BSON and fill their sequence exactly. False at
// the first byte that breaks it; the session then closes the connection (as for a malformed whole
// request, which mongod would close too).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/bson_stream_check.h"

namespace shardscope::proxy {

class DocumentSequencesCheck {
 public:
  // `bytes`: what follows the body section, to the end of the message.
  explicit DocumentSequencesCheck(size_t bytes) : left_(bytes) {}

  bool feed(std::span<const uint8_t> bytes);
  // Every byte came and the last sequence ended with the message.
  bool complete() const { return !failed_ && left_ == 0 && state_ == State::Kind; }

 private:
  enum class State : uint8_t { Kind, Size, Identifier, Documents };
  bool fail() { return !(failed_ = true); }
  bool endIdentifier();

  State state_ = State::Kind;
  bool failed_ = false;
  size_t left_;              // of the message
  size_t sequence_left_ = 0;  // of the current sequence, after its size field
  uint8_t size_[4] = {};
  int have_ = 0;
  std::string identifier_;
  std::vector<std::string> identifiers_;  // met so far (at most kMaxDocumentSequences)
  protocol::BsonStreamCheck documents_;
};

}  // namespace shardscope::proxy
