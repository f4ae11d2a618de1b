#include "proxy/document_sequences_check.h"

#include <algorithm>
#include <cstring>

#include "protocol/op_msg.h"
#include "protocol/wire.h"

namespace shardscope::proxy {

bool DocumentSequencesCheck::feed(std::span<const uint8_t> bytes) {
  if (failed_) return false;
  if (bytes.size() > left_) return fail();
  left_ -= bytes.size();
  while (!bytes.empty()) {
    switch (state_) {
      case State::Kind:
        // A second body, or an unknown kind; a sequence past the limit.
        if (bytes.front() != 1 || identifiers_.size() == protocol::kMaxDocumentSequences) return fail();
        bytes = bytes.subspan(1);
        state_ = State::Size, have_ = 0;
        break;
      case State::Size: {
        size_[have_++] = bytes.front();
        bytes = bytes.subspan(1);
        if (have_ < 4) break;
        const int32_t size = protocol::loadInt32(size_);
        if (size < 5 || static_cast<size_t>(size) - 4 > bytes.size() + left_) return fail();
        sequence_left_ = static_cast<size_t>(size) - 4;
        identifier_.clear();
        state_ = State::Identifier;
        break;
      }
      case State::Identifier: {
        const size_t n = std::min(bytes.size(), sequence_left_);
        const auto* nul = static_cast<const uint8_t*>(std::memchr(bytes.data(), 0, n));
        const size_t taken = nul ? static_cast<size_t>(nul - bytes.data()) : n;
        if (identifier_.size() + taken > protocol::kMaxSequenceIdentifierBytes) return fail();
        identifier_.append(reinterpret_cast<const char*>(bytes.data()), taken);
        bytes = bytes.subspan(nul ? taken + 1 : taken);
        sequence_left_ -= nul ? taken + 1 : taken;
        if (nul) {
          if (!endIdentifier()) return fail();
        } else if (sequence_left_ == 0) {
          return fail();  // the sequence ended inside its identifier
        }
        break;
      }
      case State::Documents: {
        const size_t n = std::min(bytes.size(), sequence_left_);
        if (!documents_.feed(bytes.first(n))) return fail();
        bytes = bytes.subspan(n);
        sequence_left_ -= n;
        if (sequence_left_ == 0) {
          if (!documents_.atDocumentBoundary()) return fail();
          documents_.reset();
          state_ = State::Kind;
        }
        break;
      }
    }
  }
  return true;
}

bool DocumentSequencesCheck::endIdentifier() {
  if (std::find(identifiers_.begin(), identifiers_.end(), identifier_) != identifiers_.end()) return false;
  identifiers_.push_back(identifier_);
  state_ = sequence_left_ == 0 ? State::Kind : State::Documents;
  return true;
}

}  // namespace shardscope::proxy
