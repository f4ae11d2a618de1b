#include "protocol/op_msg.h"

#include <bson/bson.h>

#include <algorithm>
#include <cstring>

#include "protocol/crc32c.h"

namespace shardscope::protocol {
namespace {

constexpr size_t kFlagsOffset = kHeaderSize;
constexpr uint32_t kAllowedFlags = kRequiredFlagBits | kExhaustAllowed;

// libbson 1.23's bson_validate accepts an embedded document or array whose last byte is not 0, which
// bson_init_static then refuses: code that builds a bson_t over such a sub-document would read an
// uninitialised one (found by fuzz_lookup_rewrite). Checked first, with MongoDB's own nesting
// limit, so bson_validate's recursion never sees a deeper document either.
constexpr int kMaxBsonDepth = 200;

bool embeddedDocumentsTerminated(const bson_t* doc, int depth) {
  if (depth > kMaxBsonDepth) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  while (bson_iter_next(&it)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_document(&it, &len, &data);
    } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
      bson_iter_array(&it, &len, &data);
    } else if (BSON_ITER_HOLDS_CODEWSCOPE(&it)) {
      uint32_t codeLen;
      bson_iter_codewscope(&it, &codeLen, &len, &data);
    } else {
      continue;
    }
    bson_t child;
    if (!data || !bson_init_static(&child, data, len) || !embeddedDocumentsTerminated(&child, depth + 1)) return false;
  }
  return true;
}

}  // namespace

bool isValidBson(std::span<const uint8_t> doc) {
  bson_t b;
  if (!bson_init_static(&b, doc.data(), doc.size())) return false;
  if (!embeddedDocumentsTerminated(&b, 0)) return false;
  size_t offset = 0;
  return bson_validate(&b, BSON_VALIDATE_NONE, &offset);
}

namespace {

// Length of a BSON document starting at `at`, or 0 when it does not fit.
size_t documentLength(std::span<const uint8_t> bytes, size_t at) {
  if (bytes.size() - at < 5) return 0;
  int32_t len = loadInt32(bytes.data() + at);
  if (len < 5 || static_cast<size_t>(len) > bytes.size() - at) return 0;
  if (bytes[at + static_cast<size_t>(len) - 1] != 0) return 0;
  return static_cast<size_t>(len);
}

}  // namespace

const DocumentSequence* OpMsg::findSequence(std::string_view identifier) const {
  for (const auto& s : sequences)
    if (s.identifier == identifier) return &s;
  return nullptr;
}

ParseResult decodeOpMsg(std::span<const uint8_t> message, OpMsg& out, const OpMsgLimits& limits) {
  out.sequences.clear();
  out.body = {};
  if (message.size() < kHeaderSize + 4) return ParseResult::malformed("OP_MSG shorter than header and flags");
  out.header = readHeader(message.data());
  if (static_cast<size_t>(out.header.messageLength) != message.size())
    return ParseResult::malformed("OP_MSG length does not match its header");
  out.flags = loadUint32(message.data() + kFlagsOffset);
  if ((out.flags & kRequiredFlagBits) & ~kKnownFlagBits) return ParseResult::malformed("OP_MSG has an unknown required flag bit");

  size_t end = message.size();
  if (out.hasChecksum()) {
    if (end < kHeaderSize + 4 + 4) return ParseResult::malformed("OP_MSG checksum flag set but no room for it");
    end -= 4;
    if (limits.verifyChecksum) {
      uint32_t expected = loadUint32(message.data() + end);
      if (crc32c(message.first(end)) != expected) return ParseResult::malformed("OP_MSG checksum mismatch");
    }
  }

  size_t at = kFlagsOffset + 4;
  bool sawBody = false;
  const auto sections = message.first(end);
  while (at < end) {
    uint8_t kind = sections[at++];
    if (kind == 0) {
      if (sawBody) return ParseResult::malformed("OP_MSG has more than one kind-0 section");
      size_t len = documentLength(sections, at);
      if (len == 0) return ParseResult::malformed("OP_MSG body document is truncated or malformed");
      out.body = sections.subspan(at, len);
      if (limits.validateBson && !isValidBson(out.body)) return ParseResult::malformed("OP_MSG body is not valid BSON");
      sawBody = true;
      at += len;
    } else if (kind == 1) {
      if (end - at < 4) return ParseResult::malformed("OP_MSG document sequence size is truncated");
      int32_t size = loadInt32(sections.data() + at);
      if (size < 5 || static_cast<size_t>(size) > end - at)
        return ParseResult::malformed("OP_MSG document sequence size is out of bounds");
      auto seq = sections.subspan(at + 4, static_cast<size_t>(size) - 4);
      const void* nul = std::memchr(seq.data(), 0, std::min(seq.size(), kMaxSequenceIdentifierBytes + 1));
      if (!nul) {
        return seq.size() > kMaxSequenceIdentifierBytes
                   ? ParseResult::malformed("OP_MSG document sequence identifier is longer than 256 bytes")
                   : ParseResult::malformed("OP_MSG document sequence identifier is not terminated");
      }
      size_t idLen = static_cast<const uint8_t*>(nul) - seq.data();
      DocumentSequence ds{std::string_view(reinterpret_cast<const char*>(seq.data()), idLen), seq.subspan(idLen + 1)};
      if (out.sequences.size() == kMaxDocumentSequences)
        return ParseResult::malformed("OP_MSG has more than 64 document sequences");
      if (out.findSequence(ds.identifier)) return ParseResult::malformed("OP_MSG repeats a document sequence identifier");
      size_t docAt = 0;
      while (docAt < ds.documents.size()) {
        size_t len = documentLength(ds.documents, docAt);
        if (len == 0) return ParseResult::malformed("OP_MSG document sequence holds a malformed document");
        if (limits.validateBson && !isValidBson(ds.documents.subspan(docAt, len)))
          return ParseResult::malformed("OP_MSG document sequence holds invalid BSON");
        docAt += len;
      }
      out.sequences.push_back(ds);
      at += static_cast<size_t>(size);
    } else {
      return ParseResult::malformed("OP_MSG has an unknown section kind");
    }
  }
  if (!sawBody) return ParseResult::malformed("OP_MSG has no kind-0 section");
  return ParseResult::success();
}

void encodeOpMsg(const MsgHeader& header, uint32_t flags, std::span<const uint8_t> body,
                 std::span<const DocumentSequence> sequences, std::vector<uint8_t>& out) {
  flags &= kAllowedFlags;
  size_t size = kHeaderSize + 4 + 1 + body.size();
  for (const auto& s : sequences) size += 1 + 4 + s.identifier.size() + 1 + s.documents.size();
  if (flags & kChecksumPresent) size += 4;
  out.resize(size);
  MsgHeader h = header;
  h.messageLength = static_cast<int32_t>(size);
  h.opCode = static_cast<int32_t>(OpCode::Msg);
  uint8_t* p = out.data();
  writeHeader(p, h);
  p += kHeaderSize;
  storeUint32(p, flags);
  p += 4;
  *p++ = 0;
  std::memcpy(p, body.data(), body.size());
  p += body.size();
  for (const auto& s : sequences) {
    *p++ = 1;
    storeInt32(p, static_cast<int32_t>(4 + s.identifier.size() + 1 + s.documents.size()));
    p += 4;
    std::memcpy(p, s.identifier.data(), s.identifier.size());
    p += s.identifier.size();
    *p++ = 0;
    if (!s.documents.empty()) std::memcpy(p, s.documents.data(), s.documents.size());
    p += s.documents.size();
  }
  if (flags & kChecksumPresent) storeUint32(p, crc32c({out.data(), size - 4}));
}

namespace {

void fixChecksum(std::span<uint8_t> message) {
  if (message.size() < kHeaderSize + 8 || readHeader(message.data()).opCode != static_cast<int32_t>(OpCode::Msg)) return;
  if (loadUint32(message.data() + kFlagsOffset) & kChecksumPresent)
    storeUint32(message.data() + message.size() - 4, crc32c(message.first(message.size() - 4)));
}

}  // namespace

void setRequestId(std::span<uint8_t> message, int32_t requestId) {
  storeInt32(message.data() + 4, requestId);
  fixChecksum(message);
}

void setResponseTo(std::span<uint8_t> message, int32_t responseTo) {
  storeInt32(message.data() + 8, responseTo);
  fixChecksum(message);
}

bool clearUnknownOptionalFlags(std::span<uint8_t> message) {
  if (message.size() < kHeaderSize + 4) return false;
  if (readHeader(message.data()).opCode != static_cast<int32_t>(OpCode::Msg)) return false;
  uint32_t flags = loadUint32(message.data() + kFlagsOffset);
  uint32_t cleared = flags & kAllowedFlags;
  if (cleared == flags) return false;
  storeUint32(message.data() + kFlagsOffset, cleared);
  fixChecksum(message);
  return true;
}

}  // namespace shardscope::protocol
