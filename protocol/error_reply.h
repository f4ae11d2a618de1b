// Replies the proxy writes itself, shaped as mongod/mongos write them, for requests that never go
// upstream (a command without $db, a removed legacy opcode). Pure encoding, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::protocol {

struct ServerError {
  int32_t code = 0;
  std::string_view codeName;  // "Location<code>" for codes without a name, as the server says
  std::string errmsg;
};

// OP_MSG reply {ok: 0.0, errmsg, code, codeName} answering request `responseTo`.
void encodeOpMsgError(const ServerError& error, int32_t requestId, int32_t responseTo, std::vector<uint8_t>& out);

// OP_REPLY answering a legacy OP_QUERY command: the same document, no response flags.
void encodeOpReplyCommandError(const ServerError& error, int32_t requestId, int32_t responseTo,
                               std::vector<uint8_t>& out);

// OP_REPLY with the QueryFailure flag and {$err, code}: what a legacy query or OP_GET_MORE gets.
void encodeOpReplyQueryFailure(const ServerError& error, int32_t requestId, int32_t responseTo,
                               std::vector<uint8_t>& out);

}  // namespace shardscope::protocol
