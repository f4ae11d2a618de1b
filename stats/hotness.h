// Which shard is hot, judged once for every surface (/stats "hotness", the dashboard's hot-shard
// card and flags, `shardscope stats`): per namespace, on the operations its shard key sent to one
// shard (MongoDB's oneShard), among the shards owning chunks of that namespace. Broadcasts land on
// every owner alike, so counting them would dilute the ratio; other namespaces' load is not this
// key's doing. Seed 002's threshold: the busiest owner above 1.5x the least busy one is hot.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "stats/snapshot.h"

namespace shardscope::stats {

constexpr double kHotRatio = 1.5;
// A ratio is judged only with at least this many targeted operations per owning shard: two
// operations on six shards say nothing about balance.
constexpr uint64_t kMinTargetedPerShard = 10;

// Sharded namespace -> names of the shards owning its chunks (from the routing table in force).
using ChunkOwners = std::map<std::string, std::vector<std::string>, std::less<>>;

struct ShardLoad {
  std::string shard;
  uint64_t targeted = 0;  // oneShard operations of this namespace on this shard
  uint64_t ops = 0;       // every operation of this namespace that reached this shard
  uint64_t writes = 0;
};

struct NamespaceHotness {
  std::string ns;
  std::vector<ShardLoad> shards;  // the owners (or, without a routing table, the shards reached)
  uint64_t targetedOps = 0;
  bool judged = false;            // enough targeted operations (kMinTargetedPerShard per owner)
  double ratio = 0;               // busiest / least busy owner; infinity when the least busy has none
  std::string hottest, coldest;
  bool hot = false;               // judged and ratio > kHotRatio
};

// Per namespace with traffic, most imbalanced judged namespace first. `owners` may be null.
std::vector<NamespaceHotness> hotness(const Snapshot& snap, const std::vector<std::string>& tableNames,
                                      const ChunkOwners* owners);

}  // namespace shardscope::stats
