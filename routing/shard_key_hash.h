// MongoDB's 64-bit hash for hashed shard keys (convertShardKeyToHashed / hashed index keys).
#pragma once
#include <bson/bson.h>

#include <cstdint>

namespace shardscope::routing {

// MD5 over seed 0, canonical type, (nested names) and value; first 8 digest bytes as LE int64.
// See reference/mongo-semantics.md D "Hashed-key hash".
int64_t hashShardKeyValue(const bson_value_t& value);

// A missing field hashes as null.
int64_t hashNull();

}  // namespace shardscope::routing
