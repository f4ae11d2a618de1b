// The sections after a streamed request's body, checked as their bytes pass (issue 29): what
// decodeOpMsg checks of document sequences, without holding any of them. Kind 1 only (the one body
// came first), each size within the message, an identifier of at most 256 bytes and met once, at
// most 64 sequences, and documents that are valid BSON and fill their sequence exactly. False at
// the first byte that breaks it; the session then closes the connection (as for a malformed whole
// request, which mongod would close too).
// With a sink, the documents of one sequence (a streamed insert's "documents") are also assembled
// one at a time and handed over complete and valid, so the observers see each document without the
// message held whole: memory is one document, never the message. A sink may also take a document
// in pieces as they pass (one 16 MB document can be the whole message): then nothing is held. A
// document that lies whole in the bytes of one feed can be taken from there, not copied.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/bson_stream_check.h"

namespace shardscope::proxy {

// Where a collected sequence's documents go.
class DocumentSink {
 public:
  virtual ~DocumentSink() = default;
  // The next document declares `bytes` (at least 5, within its sequence): where to assemble it
  // (exactly `bytes` long), or an empty span to take it in pieces instead. May throw to refuse it
  // (the memory budget) before any of it is kept.
  virtual std::span<uint8_t> beginDocument(size_t bytes) = 0;
  // The next document, of `bytes`, lies whole in the bytes being fed: true to have it checked and
  // handed to endDocument from there (a view valid during the call), with no beginDocument.
  virtual bool takesInPlace(size_t /*bytes*/) { return false; }
  // The document, complete and valid BSON (in the span beginDocument gave, or in place).
  virtual void endDocument(std::span<const uint8_t> doc) = 0;
  // A document taken in pieces: each in order (from its length field on; not yet checked beyond
  // what came before), then, once it proved complete and valid, endDocumentPieces.
  virtual void documentPiece(std::span<const uint8_t> /*piece*/) {}
  virtual void endDocumentPieces() {}
};

class DocumentSequencesCheck {
 public:
  // `bytes`: what follows the body section, to the end of the message. The documents of the
  // sequence named `collected` go to `sink` (none: nothing is collected).
  explicit DocumentSequencesCheck(size_t bytes, DocumentSink* sink = nullptr, std::string_view collected = {})
      : left_(bytes), sink_(sink), collected_(collected) {}

  bool feed(std::span<const uint8_t> bytes);
  // Every byte came and the last sequence ended with the message.
  bool complete() const { return !failed_ && left_ == 0 && state_ == State::Kind; }
  // Where the rest of the document being assembled goes (empty when none is): a reader may read
  // into it and feed that span, which is then not copied.
  std::span<uint8_t> assemblyLeft() const {
    if (failed_ || state_ != State::Documents || !collecting_ || document_have_ < 4 || document_left_ == 0 || pieces_)
      return {};
    return assembly_.last(document_left_);
  }

 private:
  enum class State : uint8_t { Kind, Size, Identifier, Documents };
  bool fail() { return !(failed_ = true); }
  bool endIdentifier();
  // A collected sequence's bytes, up to the end of the current document at most: `taken` of them.
  bool collect(std::span<const uint8_t> bytes, size_t& taken);

  State state_ = State::Kind;
  bool failed_ = false;
  size_t left_;              // of the message
  size_t sequence_left_ = 0;  // of the current sequence, after its size field
  uint8_t size_[4] = {};
  int have_ = 0;
  std::string identifier_;
  std::vector<std::string> identifiers_;  // met so far (at most kMaxDocumentSequences)
  protocol::BsonStreamCheck documents_;
  DocumentSink* sink_;
  std::string_view collected_;
  bool collecting_ = false;            // the current sequence is the collected one
  uint8_t document_size_[4] = {};      // the current document's size field, as it arrives
  int document_have_ = 0;              // of those 4 bytes
  size_t document_left_ = 0;           // of the current document
  std::span<uint8_t> assembly_;       // where the current document is assembled
  bool pieces_ = false;               // the sink takes the current document in pieces
};

}  // namespace shardscope::proxy
