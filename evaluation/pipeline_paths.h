// The paths an update pipeline ({u: [stages]}) may change, for mutability (candidate_figures.cpp):
// MongoDB's update pipelines take $set/$addFields (the fields they name), $unset (the fields it
// lists), and $project/$replaceRoot/$replaceWith (which may change any field). A pipeline of
// $set/$unset stages that never names a key field does not change the key, as the same update
// written with operators would not.
#pragma once
#include <bson/bson.h>

#include "evaluation/event_batch.h"

namespace shardscope::evaluation {

// Appends each path the pipeline at `pipeline` (an array element) sets or removes, at most
// `max_names` of them, or "" (may change any field) for any other stage, a stage that does not
// read as one, or more names than that.
void appendPipelinePaths(const bson_iter_t& pipeline, EventBatch& batch, int max_names = 32);

}  // namespace shardscope::evaluation
