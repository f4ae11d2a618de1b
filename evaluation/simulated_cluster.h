// The simulated cluster a candidate key's sampled statements are routed on: one chunk per shard
// at the given split points, and, for a compound key with a hashed field after a ranged prefix,
// each busy prefix value's documents in chunks of their own spread over the shards, as the
// balancer leaves a value that holds more documents than one chunk.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <vector>

#include "routing/routing_table.h"
#include "routing/shard_key_pattern.h"

namespace shardscope::evaluation {

// A prefix value (the fields before the key's hashed field) and its share of the sampled documents.
struct BusyPrefix {
  std::vector<bson_value_t> values;  // views, alive while the cluster is built
  double share = 0;
};

// Builds `coll`: MinKey, `splits` (each the leading values of a key, the fields after them at
// MinKey; or even slices of the hash space for a hashed prefix when empty), MaxKey, chunk i on
// shard i % shards. A value of `busy` holding `chunk_share` of the documents or more fills more
// than one chunk once the collection holds a chunk's worth of it (a jumbo risk on the prefix
// alone): the hashed field splits it into floor(share / chunk_share) + 1 chunks (at most
// `shards`), on consecutive shards from the one its range starts on, since nothing keeps a
// value's chunks together without zones. An equality on that prefix alone then reaches those
// shards, as the defence says of the busiest value.
bool buildSimulatedCluster(const routing::ShardKeyPattern& pattern,
                           const std::vector<std::vector<bson_value_t>>& splits, const std::vector<BusyPrefix>& busy,
                           double chunk_share, uint32_t shards, routing::CollectionRouting& coll);

}  // namespace shardscope::evaluation
