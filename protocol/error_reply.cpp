#include "protocol/error_reply.h"

#include <bson/bson.h>

#include "protocol/op_msg.h"
#include "protocol/op_query.h"

namespace shardscope::protocol {
namespace {

constexpr int32_t kQueryFailure = 1 << 1;  // OP_REPLY responseFlags bit 1

void appendCommandError(const ServerError& e, bson_t* doc) {
  BSON_APPEND_DOUBLE(doc, "ok", 0.0);
  bson_append_utf8(doc, "errmsg", -1, e.errmsg.data(), static_cast<int>(e.errmsg.size()));
  BSON_APPEND_INT32(doc, "code", e.code);
  bson_append_utf8(doc, "codeName", -1, e.codeName.data(), static_cast<int>(e.codeName.size()));
}

void encodeReply(const bson_t& doc, int32_t flags, int32_t requestId, int32_t responseTo, std::vector<uint8_t>& out) {
  OpReply r;
  r.header = {0, requestId, responseTo, static_cast<int32_t>(OpCode::Reply)};
  r.responseFlags = flags;
  r.numberReturned = 1;
  r.documents = {bson_get_data(&doc), doc.len};
  encodeOpReply(r, out);
}

}  // namespace

void encodeOpMsgError(const ServerError& error, int32_t requestId, int32_t responseTo, std::vector<uint8_t>& out) {
  bson_t doc = BSON_INITIALIZER;
  appendCommandError(error, &doc);
  encodeOpMsg({0, requestId, responseTo, static_cast<int32_t>(OpCode::Msg)}, 0, {bson_get_data(&doc), doc.len}, {},
              out);
  bson_destroy(&doc);
}

void encodeOpReplyCommandError(const ServerError& error, int32_t requestId, int32_t responseTo,
                               std::vector<uint8_t>& out) {
  bson_t doc = BSON_INITIALIZER;
  appendCommandError(error, &doc);
  encodeReply(doc, 0, requestId, responseTo, out);
  bson_destroy(&doc);
}

void encodeOpReplyQueryFailure(const ServerError& error, int32_t requestId, int32_t responseTo,
                               std::vector<uint8_t>& out) {
  bson_t doc = BSON_INITIALIZER;
  bson_append_utf8(&doc, "$err", -1, error.errmsg.data(), static_cast<int>(error.errmsg.size()));
  BSON_APPEND_INT32(&doc, "code", error.code);
  encodeReply(doc, kQueryFailure, requestId, responseTo, out);
  bson_destroy(&doc);
}

}  // namespace shardscope::protocol
