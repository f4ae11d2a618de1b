// libFuzzer: framing, OP_MSG / OP_QUERY / OP_REPLY / OP_COMPRESSED decoding and the command view,
// exactly as the proxy's request path runs them on untrusted client bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/compression.h"
#include "protocol/frame_reader.h"
#include "protocol/hello.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"

using namespace shardscope::protocol;

static void inspect(std::span<const uint8_t> message) {
  OpMsg msg;
  CommandView view;
  auto op = static_cast<OpCode>(readHeader(message.data()).opCode);
  if (op == OpCode::Msg) {
    bool decoded = decodeOpMsg(message, msg).ok();
    // The section bounds hold for everything the proxy accepts (issue 14: section floods).
    if (decoded && msg.sequences.size() > kMaxDocumentSequences) __builtin_trap();
    for (const auto& s : msg.sequences)
      if (s.identifier.size() > kMaxSequenceIdentifierBytes) __builtin_trap();
    if (decoded && buildCommandView(msg, view).ok()) {
      if (view.traits.kind == CommandKind::Hello) {
        bson_t out = BSON_INITIALIZER;
        replaceCompressionList(&view.body, readCompressionList(&view.body), &out);
        bson_destroy(&out);
      }
      std::vector<uint8_t> again;
      encodeOpMsg(msg.header, msg.flags, msg.body, msg.sequences, again);
    }
    std::vector<uint8_t> copy(message.begin(), message.end());
    clearUnknownOptionalFlags(copy);
  } else if (op == OpCode::Query) {
    OpQuery q;
    if (decodeOpQuery(message, q).ok()) buildCommandViewFromQuery(q.fullCollectionName, q.query, view);
  } else if (op == OpCode::Reply) {
    OpReply r;
    decodeOpReply(message, r);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  FrameReader reader(1 << 20);
  while (!input.empty()) {
    auto r = reader.next(input);
    if (!r.result.ok()) break;
    auto frame = input.first(r.frameSize);
    if (static_cast<OpCode>(r.header.opCode) == OpCode::Compressed) {
      std::vector<uint8_t> plain;
      if (decompressMessage(frame, 1 << 20, plain).ok()) inspect(plain);
    } else {
      inspect(frame);
    }
    input = input.subspan(r.frameSize);
  }
  return 0;
}
