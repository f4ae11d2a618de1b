// `shardscope explain` without the process around it: a command (JSON or mongosh syntax) or a
// key range in, the one JSON object of the DESIGN.md contract out. The CLI and tests share it.
#pragma once
#include <string>
#include <string_view>

#include "routing/mongos_version.h"
#include "routing/routing_table.h"

namespace shardscope::routing {

struct ExplainOutput {
  bool ok = false;   // false: `json` is {"error": "..."} and the process exits non-zero
  std::string json;  // one relaxed Extended JSON object
  // `"shape" : "...", "shapeId" : "..."` exactly as `json` holds it: the query shape and id /stats,
  // /metrics and /evaluate file the command under (common/query_shape.h).
  // Last in `json`, so the contract's fields keep their places.
  std::string shape_fields;
};

// {"ns", "targeting", "shards", "shardKey", "reason"} (+ "stage" where mongos's explain
// shows one, "detail" when verbose), then "shape", "shapeId". The command is typed
// as JSON, Extended JSON or mongosh syntax; one the proxy would refuse (no $db: 40571) is an error,
// as it is live. `version` picks the mongos release whose rules apply
// (unknown: the newest, said so in the reason); a write that release refuses is an error.
ExplainOutput explainCommand(const RoutingTable& table, std::string_view command_json, bool verbose = false,
                             MongosVersion version = {});

// Shards owning chunks that intersect the inclusive range {"min": {...}, "max": {...}}, given in
// shard-key space (hashed fields as hashes). `ns` may be empty when the table has one collection.
ExplainOutput explainRange(const RoutingTable& table, std::string_view range_json, std::string_view ns);

}  // namespace shardscope::routing
