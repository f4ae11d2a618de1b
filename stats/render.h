// Renders a Snapshot as the /stats JSON document (schema: docs/stats-schema.md) and as Prometheus
// text exposition format (/metrics).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stats/hotness.h"
#include "stats/snapshot.h"

namespace shardscope::stats {

// `top` limits the shapes listed (by count); the totals always cover everything. `owners` (the
// shards owning chunks per namespace) is the population the hot-shard ratio is judged over.
std::string renderJson(const Snapshot& snap, const std::vector<std::string>& shardNames, size_t top = SIZE_MAX,
                       const ChunkOwners* owners = nullptr);
std::string renderPrometheus(const Snapshot& snap, const std::vector<std::string>& shardNames);

std::string shardName(const std::vector<std::string>& names, size_t index);
// The name of shard id `id` of the snapshot: its own name when the registry was given names
// (Registry::setShardNames), else the routing table's name at that position (`tableNames`).
std::string shardLabel(const Snapshot& snap, const std::vector<std::string>& tableNames, size_t id);
// How many shard rows /stats and /metrics list.
size_t shardRows(const Snapshot& snap, const std::vector<std::string>& tableNames);
std::string shapeIdHex(uint64_t hash);
// The class most operations of a shape got (ties: the more expensive class).
std::string_view dominantTargeting(const ShapeCounters& c);
// The same for MongoDB's count-based class (oneShard / manyShards / allShards / unsharded / none).
std::string_view dominantHostsTargeted(const ShapeCounters& c);

}  // namespace shardscope::stats
