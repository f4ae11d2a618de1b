#include "protocol/op_msg.h"

#include <bson/bson.h>

#include <algorithm>
#include <cstring>

#include "protocol/bson_elements.h"
#include "protocol/crc32c.h"

namespace shardscope::protocol {
namespace {

constexpr size_t kFlagsOffset = kHeaderSize;
constexpr uint32_t kAllowedFlags = kRequiredFlagBits | kExhaustAllowed;

// A structural check of one document, written out rather than bson_validate: libbson 1.23's
// bson_validate also decodes every string value as UTF-8 (byte by byte: 60 % of the proxy's CPU for
// a 16 MB insert) and then ignores the result, stopping at the first invalid string without looking
// at the elements after it. What it does enforce is enforced here, on every element: framing
// (bson_iter_next), keys that are UTF-8, booleans 0 or 1, every embedded document and array (and
// code-with-scope's scope) terminated and at most 200 levels deep (what MongoDB accepts), and a
// document that ends exactly at its terminator. String values are not decoded: no reader of client
// documents in the proxy needs them to be UTF-8 (libbson's JSON writers answer NULL for invalid
// ones, and callers check). Work is linear in the document's bytes and independent of its strings.
// protocol/bson_stream_check.cpp holds the same rules for bytes that pass without being held.

bool wellFormed(const uint8_t* data, size_t size, int depth);

// Nothing to see: nested documents, and documents nobody reads while they are checked.
struct NoVisit {
  void operator()(const BsonElement&) const {}
};

// The elements with bson_iter_next's framing (BsonElements, booleans included), then isValidBson's
// own rules: keys that are UTF-8, every embedded document (and code-with-scope's scope) valid.
// `visit` sees each element of this level as it passes (a template, so the nested levels' loop
// has no call in it).
template <typename Visit>
bool elementsWellFormed(const uint8_t* d, uint32_t size, int depth, const Visit& visit) {
  BsonElements elements(d, size);
  BsonElement e;
  while (elements.next(e)) {
    visit(e);
    if (!e.ascii_key && !bson_utf8_validate(e.key.data(), e.key.size(), false)) return false;
    switch (e.type) {
      case 0x03: case 0x04:
        if (!wellFormed(e.value, e.value_len, depth + 1)) return false;
        break;
      case 0x0F: {  // the scope after the total length, the string's length and the string
        const uint32_t code = loadUint32(e.value + 4);
        if (!wellFormed(e.value + 8 + code, e.value_len - 8 - code, depth + 1)) return false;
        break;
      }
      default: break;
    }
  }
  return !elements.failed();
}

// bson_init_static's rules (at least 5 bytes, the length it states, a NUL at the end).
bool framed(const uint8_t* data, size_t size) {
  return size >= 5 && size <= INT32_MAX && loadUint32(data) == size && data[size - 1] == 0;
}

// Framed, then the elements, at most kMaxBsonDepth levels deep.
bool wellFormed(const uint8_t* data, size_t size, int depth) {
  return depth <= kMaxBsonDepth && framed(data, size) && elementsWellFormed(data, static_cast<uint32_t>(size), depth, NoVisit{});
}

// The body, its top-level elements shown to `visitor` as they pass (when there is one).
bool bodyWellFormed(std::span<const uint8_t> body, BodyElementVisitor* visitor) {
  if (!visitor) return wellFormed(body.data(), body.size(), 0);
  if (!framed(body.data(), body.size()) ||
      !elementsWellFormed(body.data(), static_cast<uint32_t>(body.size()), 0,
                          [visitor](const BsonElement& e) { visitor->element(e); }))
    return false;
  visitor->done();
  return true;
}

}  // namespace

bool isValidBson(std::span<const uint8_t> doc) { return wellFormed(doc.data(), doc.size(), 0); }

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

ParseResult decodeOpMsg(std::span<const uint8_t> message, OpMsg& out, const OpMsgLimits& limits,
                        BodyElementVisitor* body) {
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
      if (limits.validateBson && !bodyWellFormed(out.body, body)) return ParseResult::malformed("OP_MSG body is not valid BSON");
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
