// The routing engine's entry point: classify one command the way mongos targets it.
#pragma once
#include "protocol/command_view.h"
#include "routing/cursor_shards.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// Never throws; unparseable commands come back Unclassified. `cursors` may be null (getMore and
// killCursors are then Unclassified). `explain` fills TargetResult::detail and shard_key.
TargetResult target(const RoutingTable& table, const protocol::CommandView& command, const CursorShards* cursors,
                    bool explain);
TargetResult target(const RoutingTable& table, const protocol::CommandView& command, const CursorShards* cursors,
                    const TargetOptions& options);

}  // namespace shardscope::routing
