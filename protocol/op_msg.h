// OP_MSG (opcode 2013): decode into views over the caller's buffer, and encode.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/status.h"
#include "protocol/wire.h"

namespace shardscope::protocol {

constexpr uint32_t kChecksumPresent = 1u << 0;
constexpr uint32_t kMoreToCome = 1u << 1;
constexpr uint32_t kExhaustAllowed = 1u << 16;
constexpr uint32_t kRequiredFlagBits = 0x0000FFFFu;
constexpr uint32_t kKnownFlagBits = kChecksumPresent | kMoreToCome | kExhaustAllowed;

// A kind-1 section: `documents` is the raw concatenation of BSON documents.
struct DocumentSequence {
  std::string_view identifier;
  std::span<const uint8_t> documents;
};

// Views into the message buffer; valid while that buffer is.
struct OpMsg {
  MsgHeader header;
  uint32_t flags = 0;
  std::span<const uint8_t> body;  // the kind-0 BSON document
  std::vector<DocumentSequence> sequences;
  bool hasChecksum() const { return flags & kChecksumPresent; }
  bool moreToCome() const { return flags & kMoreToCome; }
  const DocumentSequence* findSequence(std::string_view identifier) const;
};

// Bounds on kind-1 sections. The OP_MSG specification allows any number of uniquely named document
// sequences, but each identifier names a field of the command (drivers send at most two: bulkWrite's
// `ops` and `nsInfo`), so more than this, or a longer name, is refused as malformed. The bounds
// keep the duplicate check cheap: at most 64 * 63 / 2 comparisons of at most 256 bytes.
constexpr size_t kMaxDocumentSequences = 64;
constexpr size_t kMaxSequenceIdentifierBytes = 256;

struct OpMsgLimits {
  bool verifyChecksum = true;
  bool validateBson = true;  // structurally validate every document (bson_validate)
};

// A structurally valid BSON document: every element framed, keys UTF-8, booleans 0/1, every embedded
// document terminated and at most 200 levels deep (what MongoDB accepts). String values are not
// decoded (see op_msg.cpp): the check costs the same for a 16 MB string as for an empty one. Every
// document read from a client passes this.
constexpr int kMaxBsonDepth = 200;
bool isValidBson(std::span<const uint8_t> doc);

struct BsonElement;

// Sees the body's top-level elements as decodeOpMsg validates them, so a reader of the body (the
// command view) needs no pass of its own over it (issue 29). `done` follows the last element when
// the whole body was validated; without validation (OpMsgLimits::validateBson false) nothing is seen.
class BodyElementVisitor {
 public:
  virtual void element(const BsonElement& e) = 0;
  virtual void done() = 0;

 protected:
  ~BodyElementVisitor() = default;
};

// `message` is the whole message including its header. `out` is reused (keeps capacity).
ParseResult decodeOpMsg(std::span<const uint8_t> message, OpMsg& out, const OpMsgLimits& limits = {},
                        BodyElementVisitor* body = nullptr);

// Builds a complete OP_MSG. Unknown optional flag bits are cleared and, when checksumPresent is
// set, the CRC-32C is recomputed. `out` is overwritten.
void encodeOpMsg(const MsgHeader& header, uint32_t flags, std::span<const uint8_t> body,
                 std::span<const DocumentSequence> sequences, std::vector<uint8_t>& out);

// Clears unknown optional flag bits (16-31) in place, as the spec requires of proxies; fixes the
// checksum when one is present. Returns true when the message changed.
bool clearUnknownOptionalFlags(std::span<uint8_t> message);

// Rewrites the header's requestID / responseTo in place; an OP_MSG checksum is recomputed.
void setRequestId(std::span<uint8_t> message, int32_t requestId);
void setResponseTo(std::span<uint8_t> message, int32_t responseTo);

// Iterates the documents of a document sequence; stops (returns false) at a malformed boundary.
template <typename F>
bool forEachDocument(std::span<const uint8_t> documents, F&& f) {
  size_t at = 0;
  while (at < documents.size()) {
    if (documents.size() - at < 5) return false;
    int32_t len = loadInt32(documents.data() + at);
    if (len < 5 || static_cast<size_t>(len) > documents.size() - at) return false;
    f(documents.subspan(at, static_cast<size_t>(len)));
    at += static_cast<size_t>(len);
  }
  return true;
}

}  // namespace shardscope::protocol
