// mongos's equality fast path: when a filter pins every shard-key field by equality, the full key
// value (hashed where the pattern says so). Allocation-free; the common find/update hits this.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string_view>

#include "routing/key_bound.h"
#include "routing/shard_key_pattern.h"

namespace shardscope::routing {

enum class EqualityStatus {
  Full,           // every field pinned by a storable equality: target one chunk
  FullCollation,  // pinned, but a non-simple collation touches a string or hashed field: mongos
                  // refuses the single-key path ("Cannot target single shard due to collation")
  Partial,        // some field has no equality, or two equalities conflict
  Unstorable,     // an equality value is an array, regex or $-prefixed object
  TooLarge,       // more than `max_elements` elements would have to be scanned
};

// `out` is filled for Full and FullCollation. `why` (static text) explains the other outcomes.
// The scan visits each element of the filter (and of nested $and) once per key field; it stops
// after `max_elements` in all, so a huge filter costs a bounded amount. `spent` (may be null)
// receives the number visited.
EqualityStatus extractEqualityKey(const ShardKeyPattern& pattern, const bson_t& filter, bool simple_collation,
                                  KeyPoint& out, std::string_view* why = nullptr, size_t max_elements = SIZE_MAX,
                                  size_t* spent = nullptr);

}  // namespace shardscope::routing
