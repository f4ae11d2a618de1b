// Time-series collections (issue 17 item 4): commands name the view db.X, mongos targets the
// buckets collection db.system.buckets.X, whose shard key is on `meta` (the view's metaField) and
// `control.min.<timeField>`. The view's filter is rewritten into bucket space the way mongos's
// bucket predicates read it, then targeted like any filter.
#pragma once
#include <bson/bson.h>

#include "protocol/command_view.h"
#include "routing/query_targeting.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// `out` (initialised by the caller) receives the bucket-space filter: metaField paths renamed to
// meta, time-field comparisons on dates turned into bounds on control.min.<time> (a bucket holds
// times in [control.min, control.min + bucketMaxSpanSeconds)), everything else dropped (a superset
// of the shards, never fewer). At most `max_elements` elements are read; past that `out` stays {}.
void timeseriesBucketFilter(const CollectionKind& kind, const bson_t& view_filter, bson_t* out,
                            size_t max_elements);

// find, count, distinct, aggregate (leading $match), insert, update, delete on the view.
void targetTimeseries(const CollectionRouting& buckets, const protocol::CommandView& cmd, const TargetOptions& opts,
                      TargetResult& out);

}  // namespace shardscope::routing
