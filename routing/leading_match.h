// The filter mongos targets an aggregate by: its leading $match after the optimiser reshaped the
// pipeline. Consecutive $match stages are combined, a $match moves ahead of $sort, and the filters
// of a $match that follows $project/$unset/$addFields/$set move ahead of those when they read no
// field the stage computes or removes (projections_passed.h). A leading $geoNear's `query` counts
// as the filter. Used for sharded collections and for time-series views alike.
#pragma once
#include <bson/bson.h>

namespace shardscope::routing {

struct LeadingMatch {
  int n_match = 0;                      // filters appended (whole $match stages or moved filters)
  bool geo = false;                     // the pipeline starts with $geoNear
  const char* first_stage = nullptr;    // the first stage's name (a view into the command)
};

// `stages` iterates the pipeline array; appends {$and: [...]} of the filters found to `out`. Only
// the first 64 filters are kept: a superset of the shards, and bounded work on a huge pipeline.
LeadingMatch collectLeadingMatch(const bson_iter_t& stages, bson_t* out);

}  // namespace shardscope::routing
