#include "protocol/op_msg.h"

#include <bson/bson.h>

#include <algorithm>
#include <cstring>

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

// Keys are almost always ASCII: checked here byte by byte without a call, and handed to libbson's
// UTF-8 decoder only when one has a byte >= 0x80 (a key is a C string: it holds no NUL).
bool validKey(const uint8_t* key, size_t len) {
  for (size_t i = 0; i < len; ++i)
    if (key[i] >= 0x80) return bson_utf8_validate(reinterpret_cast<const char*>(key), len, false);
  return true;
}

uint32_t le32(const uint8_t* p) { return loadUint32(p); }

// The elements of one document, read from its bytes with bson_iter_next's framing rules (the
// same rules, byte by byte, as protocol/bson_stream_check.cpp): every part of an element lies
// before the document's terminator at `limit`. About a fifth of the instructions of walking it
// with bson_iter_next, which validates as it goes and is called once per element (issue 29).
bool elementsWellFormed(const uint8_t* d, uint32_t limit, int depth) {
  uint32_t pos = 4;
  while (pos < limit) {
    const uint8_t type = d[pos++];
    // The key: a C string ending before the terminator, UTF-8. ASCII bytes are passed over in one
    // loop; a key with another byte is looked at whole.
    const uint8_t* key = d + pos;
    const uint8_t* q = key;
    const uint8_t* const key_limit = d + limit;
    while (q < key_limit && static_cast<uint8_t>(*q - 1) < 0x7F) ++q;
    if (q < key_limit && *q != 0) {
      q = static_cast<const uint8_t*>(std::memchr(q, 0, static_cast<size_t>(key_limit - q)));
      if (!q || !validKey(key, static_cast<size_t>(q - key))) return false;
    }
    if (q == key_limit) return false;
    pos = static_cast<uint32_t>(q - d) + 1;
    const uint32_t left = limit - pos;  // bytes the value may use
    auto fixed = [&](uint32_t n) { return n <= limit - pos ? (pos += n, true) : false; };
    switch (type) {
      case 0x01: case 0x09: case 0x11: case 0x12: if (!fixed(8)) return false; break;  // double, date, timestamp, int64
      case 0x10: if (!fixed(4)) return false; break;                                  // int32
      case 0x13: if (!fixed(16)) return false; break;                                 // decimal128
      case 0x07: if (!fixed(12)) return false; break;                                 // ObjectId
      case 0x06: case 0x0A: case 0x7F: case 0xFF: break;                               // undefined, null, max/minKey
      case 0x08:                                                                       // bool: 0 or 1
        if (left < 1 || d[pos] > 1) return false;
        ++pos;
        break;
      case 0x0B: {  // regex: two C strings, not decoded
        for (int part = 0; part < 2; ++part) {
          const auto* end = static_cast<const uint8_t*>(std::memchr(d + pos, 0, limit - pos));
          if (!end) return false;
          pos = static_cast<uint32_t>(end - d) + 1;
        }
        break;
      }
      case 0x02: case 0x0D: case 0x0E: case 0x0C: {  // string, code, symbol, dbPointer: length counts the NUL
        if (left < 4) return false;
        const uint32_t n = le32(d + pos);
        if (n == 0 || n > left - 4 || d[pos + 4 + n - 1] != 0) return false;  // its NUL lies before the terminator
        pos += 4 + n;
        if (type == 0x0C && !fixed(12)) return false;  // dbPointer's ObjectId
        break;
      }
      case 0x05: {  // binary: length, subtype, bytes (subtype 2 repeats the length inside)
        if (left < 5) return false;
        const uint32_t n = le32(d + pos);
        if (uint64_t{n} + 5 > left) return false;
        const uint8_t subtype = d[pos + 4];
        if (subtype == 2 && (n < 4 || le32(d + pos + 5) != n - 4)) return false;
        pos += 5 + n;
        break;
      }
      case 0x03: case 0x04: {  // document, array
        if (left < 4) return false;
        const uint32_t n = le32(d + pos);
        if (n > left || !wellFormed(d + pos, n, depth + 1)) return false;
        pos += n;
        break;
      }
      case 0x0F: {  // code with scope: total length, string length, string, scope document
        if (left < 4) return false;
        const uint32_t total = le32(d + pos);
        if (total < 14 || total > left) return false;
        const uint32_t code = le32(d + pos + 4);
        if (code == 0 || uint64_t{code} + 12 >= total) return false;
        const uint32_t scope = le32(d + pos + 8 + code);
        if (scope != total - 8 - code || !wellFormed(d + pos + 8 + code, scope, depth + 1)) return false;
        pos += total;
        break;
      }
      default: return false;  // 0 before the terminator, or a type bson_iter_next does not know
    }
  }
  return pos == limit;
}

// bson_init_static's rules (at least 5 bytes, the length it states, a NUL at the end), then the
// elements, at most kMaxBsonDepth levels deep.
bool wellFormed(const uint8_t* data, size_t size, int depth) {
  if (depth > kMaxBsonDepth || size < 5 || size > INT32_MAX || le32(data) != size || data[size - 1] != 0) return false;
  return elementsWellFormed(data, static_cast<uint32_t>(size - 1), depth);
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
