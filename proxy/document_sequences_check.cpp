#include "proxy/document_sequences_check.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

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
        size_t n = std::min(bytes.size(), sequence_left_);
        if (collecting_) {
          if (!collect(bytes.first(n), n)) return fail();
        } else if (!documents_.feed(bytes.first(n))) {
          return fail();
        }
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

bool DocumentSequencesCheck::collect(std::span<const uint8_t> bytes, size_t& taken) {
  if (document_have_ == 0 && bytes.size() >= 4) {
    // The whole document is here (a relay chunk holds several 16 KB documents' worth): no copy.
    const int32_t size = protocol::loadInt32(bytes.data());
    if (size >= 5 && static_cast<size_t>(size) <= bytes.size() && sink_->takesInPlace(static_cast<size_t>(size))) {
      taken = static_cast<size_t>(size);
      if (!documents_.feed(bytes.first(taken)) || !documents_.atDocumentBoundary()) return false;
      sink_->endDocument(bytes.first(taken));
      return true;
    }
  }
  if (document_have_ < 4) {  // its size field first
    taken = std::min(bytes.size(), static_cast<size_t>(4 - document_have_));
    std::memcpy(document_size_ + document_have_, bytes.data(), taken);
    document_have_ += static_cast<int>(taken);
    if (!documents_.feed(bytes.first(taken))) return false;
    if (document_have_ < 4) return true;
    const int32_t size = protocol::loadInt32(document_size_);
    if (size < 5 || static_cast<size_t>(size) - 4 > sequence_left_ - taken) return false;
    document_left_ = static_cast<size_t>(size) - 4;
    assembly_ = sink_->beginDocument(static_cast<size_t>(size));
    pieces_ = assembly_.empty();
    if (pieces_) {
      sink_->documentPiece(std::span<const uint8_t>(document_size_, 4));
      return true;
    }
    if (assembly_.size() != static_cast<size_t>(size)) throw std::logic_error("a document sink gave the wrong size");
    std::memcpy(assembly_.data(), document_size_, 4);
    return true;
  }
  taken = std::min(bytes.size(), document_left_);
  if (!documents_.feed(bytes.first(taken))) return false;
  if (pieces_) {
    sink_->documentPiece(bytes.first(taken));
  } else {
    uint8_t* place = assembly_.data() + (assembly_.size() - document_left_);
    if (bytes.data() != place) std::memcpy(place, bytes.data(), taken);  // read in place (assemblyLeft): there already
  }
  document_left_ -= taken;
  if (document_left_ == 0) {
    if (!documents_.atDocumentBoundary()) return false;
    document_have_ = 0;
    if (pieces_) sink_->endDocumentPieces();
    else sink_->endDocument(assembly_);
  }
  return true;
}

bool DocumentSequencesCheck::endIdentifier() {
  if (std::find(identifiers_.begin(), identifiers_.end(), identifier_) != identifiers_.end()) return false;
  identifiers_.push_back(identifier_);
  collecting_ = sink_ && identifier_ == collected_;
  document_have_ = 0;
  state_ = sequence_left_ == 0 ? State::Kind : State::Documents;
  return true;
}

}  // namespace shardscope::proxy
