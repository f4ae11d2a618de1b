// What keeps the lookup rewrite from ever changing results: learning mappings from the traffic
// (inserts, updates that set an added field, documents in replies) and deciding from a rewritten
// command's reply whether the original must be run instead.
#pragma once
#include <bson/bson.h>

#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_view.h"
#include "routing/lookup_mapping.h"
#include "routing/lookup_rewrite.h"

namespace shardscope::routing {

// Inserted documents teach mappings; an update whose filter pins the lookup value and whose
// modifier sets an added field corrects the mapping (or forgets it when the new value is unknown).
void learnFromRequest(LookupIndex& index, const protocol::CommandView& view);

// Documents in cursor.firstBatch / cursor.nextBatch / findAndModify's value teach mappings.
// Returns how many documents taught one.
size_t learnFromReply(LookupIndex& index, const bson_t* reply);

// The reply of a rewritten command: is it safe to pass on, or must the original run instead?
// Error replies are passed on (the original would fail the same way, and re-running a write is
// never safe after an error).
FallbackCause fallbackNeeded(const RewritePlan& plan, std::string_view command, const LookupRule& rule,
                             const bson_t* reply);

}  // namespace shardscope::routing
