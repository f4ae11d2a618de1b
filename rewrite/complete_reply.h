// A reply that provably holds every document of the lookup values it asked for teaches their
// mapping outright, even for a value that was stale, unsettled or ambiguous: one added value
// across all of them is learned, two stay ambiguous (issue 27 item 4: a moved order is learned
// again from the original command a fallback ran).
// Provably complete: a find or a single-$match aggregate, as the client wrote it, whose filter is
// the lookup field alone (equality, $eq or $in of mappable values), with nothing that drops
// documents or fields (no limit, skip, singleBatch, hint, min/max, collation, partial results,
// a projection that drops a field the mapping needs, transactions or a historical read) and
// whose cursor is exhausted in the first batch.
#pragma once
#include <bson/bson.h>

#include <string>

#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "rewrite/lookup_mapping.h"

namespace shardscope::rewrite {

// The requested lookup values (a BSON array) when the command's reply can be complete; empty otherwise.
std::string completeReplyValues(const protocol::CommandView& view, const LookupRule& rule);

// Learns from a complete reply. False when the reply is not complete (an open cursor, not ok).
// `reply`: its facts, read once by the pipeline (protocol/reply_facts.h).
bool learnFromCompleteReply(LookupIndex& index, const std::string& values, const protocol::ReplyFacts& reply);

}  // namespace shardscope::rewrite
