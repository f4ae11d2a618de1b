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
  struct {
    const uint8_t* data = nullptr;
    uint32_t len = 0;
  } first_whole;                        // the first filter when it is a whole $match stage
};

// `stages` iterates the pipeline array; appends {$and: [...]} of the filters found to `out`. Only
// the first 64 filters are kept: a superset of the shards, and bounded work on a huge pipeline.
LeadingMatch collectLeadingMatch(const bson_iter_t& stages, bson_t* out);

// A per-thread document to collect into: reinitialised on each call, its buffer kept unless a huge
// pipeline grew it (so the hot path allocates only on a thread's first aggregate).
bson_t& reusedLeadingMatchDocument();

// The filter of an aggregate command `body` for a caller that reads or copies it at once (key
// evaluation): false when its pipeline has none. `filter` views the command's own $match when the
// pipeline leads with exactly one, else the per-thread {$and: [...]}, valid until the next call.
bool aggregateFilter(const bson_t& body, bson_t& filter);

}  // namespace shardscope::routing
