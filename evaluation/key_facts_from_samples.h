// Computes a candidate key's KeyFacts (key_facts.h) from what one namespace sampled: its sampled
// filters routed on a simulated cluster of the key (as sent and after the lookup rewrite), and
// its sampled documents. The only place the evaluation reads sampled values for a candidate.
#pragma once
#include <bson/bson.h>

#include <string>
#include <vector>

#include "evaluation/key_facts.h"
#include "evaluation/namespace_state.h"
#include "evaluation/sampled_filter.h"
#include "rewrite/lookup_rule.h"
#include "routing/shard_key_pattern.h"

namespace shardscope::evaluation {

// Fields a filter pins by equality ({f: v}, $eq, $in) and fields it bounds by a range, in filter order.
struct FieldRoles {
  std::vector<std::string> eq, range;
};
void collectRoles(const bson_t& filter, FieldRoles& roles, int depth = 0);
// A shape's roles: from its sampled filters, and those exported with it by other sidecars.
FieldRoles shapeRoles(const ShapeState& shape);

// `default_collation`: the collection's, which statements carrying no collation run under.
// `chunk_share`: the share of the documents at which a key value is a jumbo risk alone (it fills
// a chunk once the collection holds a chunk's worth of it); a busier prefix of a compound hashed
// key spreads over several simulated shards (simulated_cluster.h).
KeyFacts factsFromSamples(const NamespaceState& state, const routing::ShardKeyPattern& pattern,
                          const rewrite::LookupRule* rule, uint32_t shards, double monotonic_correlation,
                          double chunk_share, DefaultCollation default_collation);

}  // namespace shardscope::evaluation
