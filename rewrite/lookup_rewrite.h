// Plans the lookup rewrite of one command: where a filter pins the lookup field (equality or $in)
// and says nothing about the added fields, add them from the mapping. Pure: the proxy re-encodes
// the message and guards the result (verify-on-miss for reads, n:0 fallback for writes).
// Only shapes whose reply can show a miss before the client sees it are rewritten; the table of
// every shape and how it is verified is in docs/rewrite.md.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_view.h"
#include "rewrite/lookup_mapping.h"
#include "routing/query_targeting.h"

namespace shardscope::rewrite {

// Why a command is left as written when its filter already names an added field (customerId): it
// is targeted by that field already (or is no lookup at all), so it is no lookup the rewrite could
// rescue, and it stays out of the rule's "lookups" (the rescued share's denominator).
inline constexpr std::string_view kAlreadyConstrained = "the filter already constrains an added field";

enum class RewriteKind : uint8_t { None, Read, Write };

struct RewritePlan {
  RewriteKind kind = RewriteKind::None;
  protocol::CommandKind command = protocol::CommandKind::Other;  // the request's CommandView::traits.kind
  // Why the command was not rewritten although it names the rule's lookup field (static text);
  // empty when the command does not concern the rule.
  std::string_view skipped;
  bool in_list = false;                // the filter used $in: every value must come back
  std::vector<std::string> in_keys;    // canonical keys of the requested values (for that check)
  std::vector<uint8_t> lookup_values;  // the requested values, a BSON array in in_keys' order
  std::vector<uint8_t> body;           // the new kind-0 document
  std::string sequence_id;             // set when the rewritten statement lives in a kind-1 section
  std::vector<uint8_t> sequence_docs;  // that section's new documents
  // A retryable write (txnNumber): its result is recorded under that number, so it can never be
  // re-run with the original filter. It is sent only after a targeted read of `confirm_filter`
  // (the lookup value and the added fields it maps to) found a document; otherwise the original
  // is sent instead (docs/rewrite.md, "Retryable writes").
  bool confirm = false;
  std::vector<uint8_t> confirm_filter;  // {lookupField: value, addedField: value...}
  size_t spent = 0;                    // analysis work units the plan used (of the request's budget)
  bool over_budget = false;            // too many lookup values to map within the budget: not rewritten
};

// Work units charged per lookup value (its canonical key, a mapping lookup under a stripe lock,
// the copy of its added fields, a hash-set insert of their key), plus one per 64 bytes of value:
// on the scale of routing's units (an MD5 is 8), so a request's rewrite and its targeting share
// one budget (routing::TargetOptions::analysis_budget).
constexpr size_t kRewriteUnitsPerValue = 8;

// `analysisBudget`: the units this request may spend on the rewrite. Past it the command is not
// rewritten (`over_budget`, skipped with kRewriteOverBudget) and no further value is looked at.
// `collection`: the namespace's routing (null when the table does not list it); when its default
// collation is not simple, a command that does not name a collation is not rewritten.
RewritePlan planLookupRewrite(LookupIndex& index, const protocol::CommandView& view,
                              size_t analysisBudget = routing::TargetOptions{}.analysis_budget,
                              const routing::CollectionRouting* collection = nullptr);

constexpr std::string_view kRewriteOverBudget =
    "too many lookup values to map (over the per-request analysis budget): sent as written";

}  // namespace shardscope::rewrite
