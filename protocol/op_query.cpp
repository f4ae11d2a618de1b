#include "protocol/op_query.h"

#include <bson/bson.h>

#include <cstring>

#include "protocol/op_msg.h"

namespace shardscope::protocol {
namespace {

size_t validDocumentAt(std::span<const uint8_t> bytes, size_t at) {
  if (at > bytes.size() || bytes.size() - at < 5) return 0;
  int32_t len = loadInt32(bytes.data() + at);
  if (len < 5 || static_cast<size_t>(len) > bytes.size() - at) return 0;
  if (!isValidBson(bytes.subspan(at, static_cast<size_t>(len)))) return 0;
  return static_cast<size_t>(len);
}

void append(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}
void appendInt32(std::vector<uint8_t>& out, int32_t v) { append(out, &v, 4); }

}  // namespace

ParseResult decodeOpQuery(std::span<const uint8_t> message, OpQuery& out) {
  if (message.size() < kHeaderSize + 4 + 1 + 8 + 5) return ParseResult::malformed("OP_QUERY is truncated");
  out.header = readHeader(message.data());
  if (static_cast<size_t>(out.header.messageLength) != message.size())
    return ParseResult::malformed("OP_QUERY length does not match its header");
  size_t at = kHeaderSize;
  out.flags = loadInt32(message.data() + at);
  at += 4;
  const void* nul = std::memchr(message.data() + at, 0, message.size() - at);
  if (!nul) return ParseResult::malformed("OP_QUERY collection name is not terminated");
  size_t nameLen = static_cast<const uint8_t*>(nul) - (message.data() + at);
  out.fullCollectionName = {reinterpret_cast<const char*>(message.data() + at), nameLen};
  at += nameLen + 1;
  if (message.size() - at < 8) return ParseResult::malformed("OP_QUERY is truncated");
  out.numberToSkip = loadInt32(message.data() + at);
  out.numberToReturn = loadInt32(message.data() + at + 4);
  at += 8;
  size_t qLen = validDocumentAt(message, at);
  if (qLen == 0) return ParseResult::malformed("OP_QUERY query is not valid BSON");
  out.query = message.subspan(at, qLen);
  at += qLen;
  out.returnFieldsSelector = {};
  if (at < message.size()) {
    size_t sLen = validDocumentAt(message, at);
    if (sLen == 0 || at + sLen != message.size()) return ParseResult::malformed("OP_QUERY selector is not valid BSON");
    out.returnFieldsSelector = message.subspan(at, sLen);
  }
  return ParseResult::success();
}

ParseResult decodeOpReply(std::span<const uint8_t> message, OpReply& out) {
  if (message.size() < kHeaderSize + 20) return ParseResult::malformed("OP_REPLY is truncated");
  out.header = readHeader(message.data());
  if (static_cast<size_t>(out.header.messageLength) != message.size())
    return ParseResult::malformed("OP_REPLY length does not match its header");
  const uint8_t* p = message.data() + kHeaderSize;
  out.responseFlags = loadInt32(p);
  out.cursorId = loadInt64(p + 4);
  out.startingFrom = loadInt32(p + 12);
  out.numberReturned = loadInt32(p + 16);
  out.documents = message.subspan(kHeaderSize + 20);
  size_t at = 0;
  int32_t count = 0;
  while (at < out.documents.size()) {
    size_t len = validDocumentAt(out.documents, at);
    if (len == 0) return ParseResult::malformed("OP_REPLY holds invalid BSON");
    at += len;
    ++count;
  }
  if (count != out.numberReturned) return ParseResult::malformed("OP_REPLY numberReturned does not match its documents");
  return ParseResult::success();
}

void encodeOpQuery(const OpQuery& q, std::vector<uint8_t>& out) {
  out.assign(kHeaderSize, 0);
  appendInt32(out, q.flags);
  append(out, q.fullCollectionName.data(), q.fullCollectionName.size());
  out.push_back(0);
  appendInt32(out, q.numberToSkip);
  appendInt32(out, q.numberToReturn);
  append(out, q.query.data(), q.query.size());
  append(out, q.returnFieldsSelector.data(), q.returnFieldsSelector.size());
  MsgHeader h = q.header;
  h.messageLength = static_cast<int32_t>(out.size());
  h.opCode = static_cast<int32_t>(OpCode::Query);
  writeHeader(out.data(), h);
}

void encodeOpReply(const OpReply& r, std::vector<uint8_t>& out) {
  out.assign(kHeaderSize, 0);
  appendInt32(out, r.responseFlags);
  append(out, &r.cursorId, 8);
  appendInt32(out, r.startingFrom);
  appendInt32(out, r.numberReturned);
  append(out, r.documents.data(), r.documents.size());
  MsgHeader h = r.header;
  h.messageLength = static_cast<int32_t>(out.size());
  h.opCode = static_cast<int32_t>(OpCode::Reply);
  writeHeader(out.data(), h);
}

}  // namespace shardscope::protocol
