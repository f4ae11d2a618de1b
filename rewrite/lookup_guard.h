// What keeps the lookup rewrite from ever changing results: deciding from a rewritten command's
// reply whether the original must run instead, and, from the original's reply after such a
// fallback, which mappings it proved wrong (those lookup values become ambiguous for good).
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_facts.h"
#include "rewrite/lookup_mapping.h"
#include "rewrite/lookup_rewrite.h"

namespace shardscope::rewrite {

struct Verdict {
  FallbackCause cause = FallbackCause::None;
  std::vector<std::string> suspects;  // lookup keys the rewritten reply did not show
  int64_t live_cursor = 0;            // the rewritten command's open cursor, to close on a fallback
};

// The reply of a rewritten command: is it safe to pass on, or must the original run instead?
// A read passes only when its reply shows a document for every requested lookup value; an ok:1
// reply that cannot show it (no cursor, no n) re-runs too, and so does an error reply (ok:0 or
// unreadable: FailedRead, with no suspects), since nothing shows the original would fail the same
// way. A write's error is passed on: it may have run, and re-running it could apply it twice.
Verdict verifyRewrite(const RewritePlan& plan, protocol::CommandKind command, const LookupRule& rule, const protocol::ReplyFacts& reply);
inline FallbackCause fallbackNeeded(const RewritePlan& plan, protocol::CommandKind command, const LookupRule& rule,
                                    const protocol::ReplyFacts& reply) {
  return verifyRewrite(plan, command, rule, reply).cause;
}

// A confirming read's reply (RewritePlan::confirm): did it find a document of the mapping?
bool confirmsMapping(const protocol::ReplyFacts& reply);

// The original's reply after a fallback. When it found what the rewritten command missed, the
// mapping of those suspects was wrong (stale, or the value belongs to several customers): they
// are marked ambiguous. Returns true when it found something (the mapping was wrong), false when
// it found nothing either (the mapping may be right; the rewrite only cost a second run).
// `settled`: the reply held every document of the values and already taught them (complete_reply.h).
bool learnFromRerun(LookupIndex& index, const RewritePlan& plan, protocol::CommandKind command,
                    const std::vector<std::string>& suspects, const protocol::ReplyFacts& reply, bool settled = false);

}  // namespace shardscope::rewrite
