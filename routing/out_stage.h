// An aggregate's $out stage and the namespace it writes: {$out: "c"} (the command's database) or
// {$out: {db, coll}}. MongoDB refuses $out into a sharded collection ("You cannot specify a sharded
// collection as the output collection"; $merge writes to one), so mongos fails such an aggregate
// whatever its $match targets.
#pragma once
#include <bson/bson.h>

#include <string>
#include <string_view>

namespace shardscope::routing {

// The namespace the pipeline `pipeline` (an iterator at the command's `pipeline` array) writes with
// $out, joined into `buffer` (reused: no allocation for ordinary lengths); empty when it has no
// $out stage or the stage does not name a collection. Visits at most `max_stages` stages.
std::string_view outStageNamespace(const bson_iter_t& pipeline, std::string_view db, std::string& buffer,
                                   size_t max_stages = 1000);

}  // namespace shardscope::routing
