// libFuzzer: the lookup rewrite (rewrite/lookup_rewrite.h) and its guard (rewrite/lookup_guard.h)
// on arbitrary commands and replies, with the rule "test.orders: orderId -> customerId,region".
// Input: u32 n, then n bytes of OP_MSG sections (the request), then a BSON reply document.
// Invariants: no crash or hang, a planned rewrite always re-encodes to a message the proxy's own
// decoder accepts (the session treats anything else as a logic error), the exact capacity holds,
// and a lookup value that became ambiguous is never rewritten again.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_support.h"
#include "rewrite/lookup_guard.h"
#include "rewrite/lookup_learning.h"
#include "rewrite/lookup_rewrite.h"

using namespace shardscope;

static rewrite::LookupRule makeRule() {
  rewrite::LookupRule rule;
  std::string error;
  if (!rewrite::parseLookupRule("test.orders: orderId -> customerId,region capacity=64", rule, error)) __builtin_trap();
  return rule;
}

static void seedMappings(rewrite::LookupIndex& index) {
  const char* docs[] = {R"({"orderId": 1, "customerId": "C1", "region": "eu"})",
                        R"({"orderId": "A-7", "customerId": 2, "region": "us"})",
                        R"({"orderId": {"$numberLong": "3"}, "customerId": {"$oid": "000000000000000000000001"}, "region": null})"};
  for (const char* json : docs) {
    bson_t doc;
    bson_error_t error;
    if (bson_init_from_json(&doc, json, -1, &error)) {
      index.learnFromDocument(&doc);
      bson_destroy(&doc);
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t n;
  std::memcpy(&n, data, 4);
  data += 4;
  size -= 4;
  if (n > size) n = static_cast<uint32_t>(size);

  std::vector<uint8_t> frame;
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!fuzz::decodeSections({data, n}, frame, msg, view)) return 0;

  rewrite::LookupIndex index(makeRule());  // fresh per input: runs must not depend on each other
  seedMappings(index);
  auto plan = rewrite::planLookupRewrite(index, view);
  auto learning = rewrite::planReplyLearning(index, view);
  if (plan.kind != rewrite::RewriteKind::None) {
    std::vector<protocol::DocumentSequence> sequences(msg.sequences.begin(), msg.sequences.end());
    for (auto& seq : sequences)
      if (seq.identifier == plan.sequence_id) seq.documents = plan.sequence_docs;
    std::vector<uint8_t> rewritten;
    protocol::encodeOpMsg(msg.header, msg.flags, plan.body, sequences, rewritten);
    protocol::OpMsg again;
    protocol::CommandView againView;
    if (!protocol::decodeOpMsg(rewritten, again).ok() || !protocol::buildCommandView(again, againView).ok())
      __builtin_trap();
  }

  // The reply: navigated without full validation, exactly as the session's reply path does.
  bson_t reply;
  const uint8_t* rest = data + n;
  size_t restSize = size - n;
  const bson_t* replyPtr = nullptr;
  if (restSize >= 5) {
    int32_t len;
    std::memcpy(&len, rest, 4);
    if (len >= 5 && static_cast<size_t>(len) <= restSize && bson_init_static(&reply, rest, static_cast<size_t>(len)))
      replyPtr = &reply;
  }
  const protocol::ReplyFacts facts = protocol::readReplyFacts(replyPtr);  // read once, as the pipeline does
  if (replyPtr) rewrite::applyReplyLearning(index, learning, facts);
  if (plan.kind != rewrite::RewriteKind::None) {
    auto verdict = rewrite::verifyRewrite(plan, plan.command, index.rule(), facts);
    // The same bytes as the original's reply: whatever it contradicts becomes ambiguous for good.
    if (verdict.cause != rewrite::FallbackCause::None && replyPtr &&
        rewrite::learnFromRerun(index, plan, plan.command, verdict.suspects, facts)) {
      auto again = rewrite::planLookupRewrite(index, view);
      if (again.kind != rewrite::RewriteKind::None && !plan.in_list) __builtin_trap();
    }
  }
  auto counters = index.store().counters();
  if (counters.size + counters.ambiguous > counters.capacity) __builtin_trap();
  if (counters.bytes > counters.max_bytes) __builtin_trap();
  return 0;
}
