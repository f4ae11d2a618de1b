// Shared by the command-level fuzzers: wraps fuzzer bytes (OP_MSG sections: a kind-0 body and
// optional kind-1 document sequences) into a whole OP_MSG and decodes it as the proxy does, so the
// code under test only ever sees commands that passed the real request-path validation.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/wire.h"

namespace shardscope::fuzz {

// `sections` is everything after the OP_MSG flag word. Returns false when the proxy would refuse
// the message (so the command never reaches routing, stats or rewrites).
inline bool decodeSections(std::span<const uint8_t> sections, std::vector<uint8_t>& frame, protocol::OpMsg& msg,
                           protocol::CommandView& view) {
  frame.assign(20, 0);
  frame.insert(frame.end(), sections.begin(), sections.end());
  protocol::MsgHeader header;
  header.messageLength = static_cast<int32_t>(frame.size());
  header.requestId = 1;
  header.opCode = static_cast<int32_t>(protocol::OpCode::Msg);
  protocol::writeHeader(frame.data(), header);
  return protocol::decodeOpMsg(frame, msg).ok() && protocol::buildCommandView(msg, view).ok();
}

}  // namespace shardscope::fuzz
