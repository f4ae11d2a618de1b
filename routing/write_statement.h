// The fields of one update or delete statement that targeting reads ({q, u, multi, upsert,
// collation, limit}; bulkWrite's {filter, updateMods, ...}), found in one pass over the statement
// instead of one search per field: a statement is walked once, not six times (issue 29).
// As a search would, the first occurrence of a name decides, whatever comes after it.
#pragma once
#include <bson/bson.h>

#include <cstdint>

#include "protocol/delete_limit.h"

namespace shardscope::routing {

struct WriteStatement {
  bson_t filter;             // the filter document; {} when absent or not a document
  bson_t mods;               // the update document, when `replacement` (valid only then)
  bool replacement = false;  // the update is a replacement document (no $-operators, not a pipeline)
  bool multi = false;
  bool upsert = false;
  bool has_collation = false;  // a collation document: `simple_collation` says which
  bool simple_collation = true;
  bson_t collation;            // the collation document, when `has_collation` (valid only then)
  // A delete's limit as mongos reads it (protocol/delete_limit.h): the value as a double
  // (Decimal128 converted, any other type 0). Only 0 (multi) and 1 (single) parse, and a delete
  // statement without one fails too (a required field): FailedToParse.
  bool has_limit = false;
  double limit = 0;
  protocol::DeleteLimit deleteLimit() const {
    return has_limit ? protocol::deleteLimitOf(limit) : protocol::DeleteLimit::Invalid;
  }
};

// `filter_key` and `mods_key`: "q" and "u" in update/delete statements, "filter" and "updateMods"
// in bulkWrite ops.
WriteStatement readWriteStatement(const bson_t& statement, const char* filter_key, const char* mods_key);

}  // namespace shardscope::routing
