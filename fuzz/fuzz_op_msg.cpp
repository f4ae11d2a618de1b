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

// Two views of the same bytes, each from its own decode of the message: the same facts.
static bool sameView(const CommandView& a, bool a_ok, const CommandView& b, bool b_ok) {
  if (a_ok != b_ok) return false;
  if (!a_ok) return true;
  if (a.name != b.name || a.db != b.db || a.collection != b.collection || a.cursorId != b.cursorId ||
      a.hasLsid != b.hasLsid || a.hasTxnNumber != b.hasTxnNumber || a.inTransaction != b.inTransaction ||
      a.hasCollation != b.hasCollation || a.bodyScanned != b.bodyScanned || a.indexedKeys != b.indexedKeys ||
      a.moreToCome != b.moreToCome || a.exhaustAllowed != b.exhaustAllowed || a.traits.kind != b.traits.kind)
    return false;
  const size_t n = a.indexedKeys == CommandView::kNotIndexed ? 0 : a.indexedKeys;
  for (size_t i = 0; i < n; ++i)
    if (a.keyOffsets[i] != b.keyOffsets[i] || a.keyLengths[i] != b.keyLengths[i]) return false;
  return true;
}

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
    // The view read while decoding (the request path's one pass) is the view read after it.
    OpMsg scanned_msg;
    CommandView scanned;
    CommandViewScan scan(scanned);
    const bool scanned_decoded = decodeOpMsg(message, scanned_msg, {}, &scan).ok();
    if (scanned_decoded != decoded || (decoded && !scan.complete())) __builtin_trap();
    if (decoded && !sameView(view, buildCommandView(msg, view).ok(), scanned,
                             buildCommandView(scanned_msg, scanned, &scan).ok()))
      __builtin_trap();
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
