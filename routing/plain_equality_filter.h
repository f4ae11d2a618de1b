// The common filter, targeted without the general analysis: top-level `field: scalar` pairs only
// ({customerId: "C1"}, {customerId: "C1", orderDate: d, status: "new"}). For such a filter each
// shard-key field is either pinned to one value or unconstrained, so the answer follows from one
// pass over its elements: the single-key path when every field is pinned, one key range when a
// prefix is, every chunk owner when the first field is free. That is exactly what the equality
// scan, the bounds analysis and the range flattening decide for these filters (checked against
// them, filter by filter, in tests/routing/plain_equality_filter_test.cpp and a fuzz target), at a
// fraction of the work: the per-operation cost of targeting (issue 29).
#pragma once
#include <bson/bson.h>

#include "routing/query_targeting.h"

namespace shardscope::routing {

// True when `filter` is a plain equality filter and `out` holds its targeting (as targetFilter
// would give it, `spent` aside: charged as the general analysis would at most). False: not such a
// filter (an operator, a nested document or array, a regex, null or undefined on a key field, a
// key field given twice, a path overlapping a key field, a non-simple collation, or a filter
// larger than the budget), and `out` is untouched: the general analysis decides. `out.shards`
// starts empty (targetFilter resets it; a fresh FilterTarget is).
bool targetPlainEquality(const CollectionRouting& coll, const bson_t& filter, bool simple_collation,
                         const TargetOptions& options, FilterTarget& out);

}  // namespace shardscope::routing
