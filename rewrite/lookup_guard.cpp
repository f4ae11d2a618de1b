#include "rewrite/lookup_guard.h"

#include <algorithm>
#include <unordered_set>

#include "common/command_fields.h"

namespace shardscope::rewrite {
namespace {

using protocol::CommandKind;
using protocol::ReplyFacts;  // the reply, read once by the pipeline: never re-parsed here

// The lookup keys of the documents in cursor.firstBatch (and whether there is one at all).
bool batchKeys(const ReplyFacts& reply, const LookupRule& rule, size_t& count, std::vector<std::string>& keys) {
  bson_iter_t d;
  count = 0;
  if (!reply.first_batch || !reply.batch.children(d)) return false;
  while (bson_iter_next(&d)) {
    ++count;
    bson_t doc;
    bson_iter_t v;
    if (!common::documentOrArray(d, doc) || !bson_iter_init(&v, &doc) || !bson_iter_find_descendant(&v, rule.lookup_field.c_str(), &v))
      continue;
    if (BSON_ITER_HOLDS_ARRAY(&v)) {  // {orderId: [a, b]} was found by a and by b
      bson_iter_t e;
      if (bson_iter_recurse(&v, &e))
        while (bson_iter_next(&e)) keys.push_back(canonicalValueKey(e));
    } else {
      keys.push_back(canonicalValueKey(v));
    }
  }
  return true;
}

// Did the reply find anything? Unknown (no way to tell) counts as "did not".
bool foundAnything(CommandKind command, const ReplyFacts& reply) {
  bson_iter_t it;
  bson_t docs;
  if (command == CommandKind::Count) return reply.has_n && reply.n > 0;
  if (command == CommandKind::Distinct) {
    const auto* values = reply.other("values");
    return values && values->asDocument(docs) && !bson_empty(&docs);
  }
  if (command == CommandKind::Update || command == CommandKind::Delete) return reply.has_n && reply.n > 0;
  if (command == CommandKind::FindAndModify) {
    if (reply.lastError("n", it)) return bson_iter_as_int64(&it) > 0;
    const auto* value = reply.other("value");
    return value && value->type() == BSON_TYPE_DOCUMENT;
  }
  return reply.first_batch && reply.batch.asDocument(docs) && !bson_empty(&docs);
}

bool ok(const ReplyFacts& reply) { return reply.has_ok && reply.ok; }

}  // namespace

std::string_view fallbackCauseName(FallbackCause c) {
  switch (c) {
    case FallbackCause::None: return "none";
    case FallbackCause::EmptyRead: return "empty_read";
    case FallbackCause::MissingInValue: return "missing_in_value";
    case FallbackCause::NoMatchWrite: return "no_match_write";
    case FallbackCause::Unverifiable: return "unverifiable";
    case FallbackCause::Unconfirmed: return "unconfirmed_retryable_write";
    case FallbackCause::FailedRead: return "failed_read";
  }
  return "unknown";
}

Verdict verifyRewrite(const RewritePlan& plan, CommandKind command, const LookupRule& rule, const ReplyFacts& reply) {
  Verdict v;
  bson_iter_t it;
  if (!ok(reply)) {
    // Whether the original would fail the same way is not known (an error the added field caused,
    // a shard the targeted read reached and the broadcast would not have needed...): a read runs
    // again as written and the client gets the original's reply. A write is passed on: it may have
    // run, and running it again could apply it twice. The error says nothing of the mapping.
    if (plan.kind == RewriteKind::Read) v.cause = FallbackCause::FailedRead;
    return v;
  }
  if (plan.kind == RewriteKind::Write) {
    if (reply.write_errors.present) return v;  // something ran: never repeat
    const bool known = command == CommandKind::FindAndModify ? reply.lastError("n", it) || reply.other("value")
                                                             : reply.has_n;
    if (!known) return v;  // cannot tell whether it matched: re-running could apply it twice
    if (!foundAnything(command, reply)) {
      v.cause = FallbackCause::NoMatchWrite;
      v.suspects = plan.in_keys;
    }
    return v;
  }
  if (command == CommandKind::Count || command == CommandKind::Distinct) {
    if (!(command == CommandKind::Count ? reply.has_n : reply.other("values") != nullptr)) v.cause = FallbackCause::Unverifiable;
    else if (!foundAnything(command, reply)) v.cause = FallbackCause::EmptyRead;
    if (v.cause != FallbackCause::None) v.suspects = plan.in_keys;
    return v;
  }
  // find / aggregate: the first batch must show every requested value (an empty batch shows none,
  // whether or not the cursor is still open).
  size_t count = 0;
  std::vector<std::string> seen;
  if (reply.has_cursor) v.live_cursor = reply.cursor_id;
  if (!batchKeys(reply, rule, count, seen)) {
    v.cause = FallbackCause::Unverifiable;
    v.suspects = plan.in_keys;
  } else if (count == 0) {
    v.cause = FallbackCause::EmptyRead;
    v.suspects = plan.in_keys;
  } else if (plan.in_list) {
    // A hash set: linear in the requested values plus the batch (both can be large).
    const std::unordered_set<std::string_view> shown(seen.begin(), seen.end());
    for (const auto& k : plan.in_keys)
      if (!shown.count(k)) v.suspects.push_back(k);
    if (!v.suspects.empty()) v.cause = FallbackCause::MissingInValue;
  }
  if (v.cause == FallbackCause::None) v.live_cursor = 0;
  return v;
}

bool confirmsMapping(const ReplyFacts& reply) {
  bson_t docs;
  return ok(reply) && reply.first_batch && reply.batch.asDocument(docs) && !bson_empty(&docs);
}

bool learnFromRerun(LookupIndex& index, const RewritePlan& plan, CommandKind command,
                    const std::vector<std::string>& suspects, const ReplyFacts& reply, bool settled) {
  if (!ok(reply) || !foundAnything(command, reply)) return false;
  if (settled) return true;  // a moved order, learned again from the documents themselves
  std::vector<std::string> contradicted = suspects;
  if (plan.in_list) {
    // Only the values the original found were wrong; the others may simply not exist.
    size_t count = 0;
    std::vector<std::string> seen;
    batchKeys(reply, index.rule(), count, seen);
    const std::unordered_set<std::string_view> shown(seen.begin(), seen.end());
    std::erase_if(contradicted, [&](const std::string& k) { return !shown.count(k); });
  }
  bson_t values;
  bson_iter_t v;
  if (plan.lookup_values.empty() ||
      !bson_init_static(&values, plan.lookup_values.data(), plan.lookup_values.size()) || !bson_iter_init(&v, &values))
    return true;
  const std::unordered_set<std::string_view> wrong(contradicted.begin(), contradicted.end());
  while (bson_iter_next(&v))
    if (wrong.count(canonicalValueKey(v))) index.markAmbiguous(v);
  return true;
}

}  // namespace shardscope::rewrite
