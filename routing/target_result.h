// What targeting decided for one operation: the class, the exact shard set and why.
// Shared by the proxy (inline, per message), statistics and `shardscope explain`.
#pragma once
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::routing {

// A cluster with more shards than this is refused when the routing table loads.
constexpr size_t kMaxShards = 1024;
// Indices into RoutingTable's shard list; fixed size so the hot path never allocates.
using ShardSet = std::bitset<kMaxShards>;

// The shards in a set, and whether it is exactly one, found by scanning for set bits (a ctz per
// 64-bit word). std::bitset::count() calls libgcc's software popcount once per word (16 per set)
// on the baseline x86-64 target: ~2.5 % of the proxy's instructions per operation (callgrind,
// bench/RESULTS.md).
inline size_t shardCount(const ShardSet& s) {
  size_t n = 0;
  for (size_t i = s._Find_first(); i < s.size(); i = s._Find_next(i)) ++n;
  return n;
}
inline bool isSingleShard(const ShardSet& s) {
  const size_t first = s._Find_first();
  return first < s.size() && s._Find_next(first) == s.size();
}

enum class Targeting : uint8_t {
  Single,        // exactly one shard
  Multi,         // several shards, chosen by shard-key bounds
  Broadcast,     // the shard key is not constrained: every shard owning chunks
  Unsharded,     // the namespace is not sharded (goes to its db-primary)
  NoCollection,  // the command names no collection (hello, ping, auth, ...)
  Unclassified,  // the engine could not parse it; forwarded unchanged
};

std::string_view targetingName(Targeting t);  // "single", "multi", "broadcast", ...

struct TargetResult {
  Targeting targeting = Targeting::Unclassified;
  ShardSet shards;
  // Static text on the hot path (no allocation); `detail` is filled only when explaining.
  std::string_view reason;
  std::string detail;
  // mongos would refuse the operation (e.g. an insert whose shard-key value is an array); the
  // message is still forwarded unchanged, `reason` says why.
  bool refused = false;
  // The per-request analysis budget ran out (a huge filter or batch): the answer is the
  // conservative one, and shardscope_analysis_over_budget_total counts it.
  bool over_budget = false;
  // How many shards own chunks of the targeted collection (the denominator of MongoDB's count-based
  // allShards class); 0 when unknown (unsharded, no collection, bulkWrite over several namespaces).
  uint16_t owning_shards = 0;
  // Upsert statements (update upsert:true, findAndModify upsert) whose filter does not pin the full
  // shard key: refused by mongos before 7.1, two-phase broadcast after. Counted per shape in /stats.
  uint32_t untargetable_upserts = 0;
  // Explain only: BSON of the full shard-key value pinned by equality ({field: value, ...}, hashed
  // fields as NumberLong); empty when the operation does not pin every key field.
  std::string shard_key;
};

}  // namespace shardscope::routing
