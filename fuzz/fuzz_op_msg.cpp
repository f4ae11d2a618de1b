// libFuzzer: framing, OP_MSG / OP_QUERY / OP_REPLY / OP_COMPRESSED decoding and the command view,
// exactly as the proxy's request path runs them on untrusted client bytes. The same bytes, read as
// a document sequence's contents, must get the same verdict from BsonStreamCheck as from decodeOpMsg;
// read as one document, the same elements from BsonElements as from bson_iter_next (replies are
// read with it), and readReplyFacts must not fail on them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/bson_elements.h"
#include "protocol/bson_stream_check.h"
#include "protocol/command_view.h"
#include "protocol/compression.h"
#include "protocol/frame_reader.h"
#include "protocol/hello.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"
#include "protocol/reply_facts.h"

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

// `run` as a kind-1 section's documents, fed in pieces whose sizes come from the bytes themselves.
static void checkStream(std::span<const uint8_t> run) {
  static const uint8_t kEmptyBody[] = {5, 0, 0, 0, 0};
  const DocumentSequence seq{"d", run};
  std::vector<uint8_t> message;
  encodeOpMsg(MsgHeader{}, 0, kEmptyBody, {&seq, 1}, message);
  OpMsg msg;
  const bool expected = decodeOpMsg(message, msg).ok();

  uint32_t state = 2166136261u;  // FNV-1a of the input seeds the cuts
  for (uint8_t b : run) state = (state ^ b) * 16777619u;
  BsonStreamCheck check;
  bool ok = true;
  for (size_t at = 0; at < run.size();) {
    state = state * 1103515245u + 12345u;
    const uint32_t r = state >> 16;
    const size_t n = std::min<size_t>(run.size() - at, (r & 7) ? r % 9 : r % 4096);  // empty pieces too
    const bool fed = check.feed(run.subspan(at, n));
    if (fed && !ok) __builtin_trap();  // a refusal is final
    ok = fed;
    at += n;
  }
  if ((ok && check.atDocumentBoundary()) != expected) __builtin_trap();
}

// `doc` walked by BsonElements and by bson_iter_next: the same elements, the same verdict.
static void checkElements(std::span<const uint8_t> doc) {
  bson_t b;
  bson_iter_t it;
  if (doc.size() < 5 || !bson_init_static(&b, doc.data(), doc.size()) || !bson_iter_init(&it, &b)) return;
  BsonElements elements(doc.data(), static_cast<uint32_t>(doc.size()));
  BsonElement e;
  for (;;) {
    const bool lib = bson_iter_next(&it);
    if (elements.next(e) != lib) __builtin_trap();
    if (!lib) break;
    if (e.offset != it.off || e.type != bson_iter_type(&it) || e.value != it.raw + it.d1 ||
        e.value + e.value_len != it.raw + it.next_off)
      __builtin_trap();
  }
  if (elements.failed() != (it.err_off != 0)) __builtin_trap();
  const ReplyFacts facts = readReplyFacts(&b);
  if (facts.parsed == elements.failed()) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  checkStream(input);
  checkElements(input);
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
