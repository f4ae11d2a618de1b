#include "protocol/wire.h"

namespace shardscope::protocol {

bool isKnownOpCode(int32_t op) {
  switch (static_cast<OpCode>(op)) {
    case OpCode::Reply:
    case OpCode::Update:
    case OpCode::Insert:
    case OpCode::Query:
    case OpCode::GetMore:
    case OpCode::Delete:
    case OpCode::KillCursors:
    case OpCode::Compressed:
    case OpCode::Msg:
      return true;
  }
  return false;
}

std::string_view opCodeName(int32_t op) {
  switch (static_cast<OpCode>(op)) {
    case OpCode::Reply: return "OP_REPLY";
    case OpCode::Update: return "OP_UPDATE";
    case OpCode::Insert: return "OP_INSERT";
    case OpCode::Query: return "OP_QUERY";
    case OpCode::GetMore: return "OP_GET_MORE";
    case OpCode::Delete: return "OP_DELETE";
    case OpCode::KillCursors: return "OP_KILL_CURSORS";
    case OpCode::Compressed: return "OP_COMPRESSED";
    case OpCode::Msg: return "OP_MSG";
  }
  return "unknown";
}

}  // namespace shardscope::protocol
