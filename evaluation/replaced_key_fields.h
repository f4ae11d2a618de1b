// A replacement that pins a field by equality in its filter and writes another value for it
// changes that field: the field's name is recorded among the statement's modified paths, like a
// `$set` path, so that mutability (candidate_figures.cpp) counts it as a shard-key update when the
// field is in the key. Values are compared where they lie; none is kept.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string_view>

#include "evaluation/event_batch.h"

namespace shardscope::evaluation {

// `filter`: the statement's q (findAndModify's query); `replacement`: an iterator at its
// replacement document. Appends the name of each field the filter pins by equality ({f: v} or
// {f: {$eq: v}}, a dotted path as written) that the replacement holds with a different value (as
// MongoDB compares them: 1 and 1.0 are equal) or drops (missing, unless the filter pinned null,
// which a missing field matches). _id is left out (MongoDB refuses to change it, and a
// replacement without it keeps it). At most 32 filter fields are compared.
void appendReplacedPinnedFields(const bson_t& filter, const bson_iter_t& replacement, EventBatch& batch);

// Whether `$set: {path: v}` (`path` a field of the $set document `set_doc`, `set_len` bytes) writes
// the value the filter pins for the same path ({path: v} or {path: {$eq: v}}, compared as MongoDB
// compares values): it changes nothing, so it is no update of that field (an ORM setting every
// field, the key included, to the values it read). One walk over the filter's bytes; libbson only
// when the filter names the path.
bool setKeepsPinnedValue(const bson_t& filter, std::string_view path, const uint8_t* set_doc, uint32_t set_len);

}  // namespace shardscope::evaluation
