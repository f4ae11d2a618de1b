// Targeting one filter against one sharded collection: the equality fast path, else bounds ->
// ranges -> shards (mongo-semantics.md B "Read targeting"). Shared by reads and writes.
#pragma once
#include <bson/bson.h>

#include <string>

#include "routing/cursor_list.h"
#include "routing/key_bound.h"
#include "routing/mongos_version.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"

namespace shardscope::routing {

class InsertFold;

struct TargetOptions {
  bool explain = false;  // fill TargetResult::detail and shard_key
  // More ranges than this are not mapped one by one: the operation counts as broadcast. mongos
  // itself errors above kMongosMaxRanges (4,000,000); the hot path wants a much lower cap.
  size_t max_ranges = 100000;
  // Work units one request may spend on filter analysis before it is counted as broadcast (see
  // FilterOptions::budget); shared by all statements of a write.
  size_t analysis_budget = 50000;
  // The mongos release whose write rules apply; unknown = effectiveMongosVersion() (configured or
  // learned), and if that is unknown too, the newest rules (the reason says so).
  MongosVersion mongos_version;
  // Facts the request pipeline already derived (null/empty: targeting derives them itself): the
  // "db.collection" of the command, and killCursors' list read once (routing/cursor_list.h).
  std::string_view ns;
  const CursorList* cursor_list = nullptr;
  // A streamed insert's documents, folded as they passed (routing/write_targeting.h): targeting
  // finishes this fold instead of reading documents from the command.
  InsertFold* folded_insert = nullptr;
};

struct FilterTarget {
  Targeting targeting = Targeting::Broadcast;
  ShardSet shards;
  std::string_view reason;
  bool full_key = false;    // the single-key path applies (equality on the full key, collation ok)
  bool key_pinned = false;  // every key field pinned by equality (`key` holds it), collation aside
  KeyPoint key;
  size_t spent = 0;         // analysis work units used
  bool over_budget = false; // the analysis budget ran out: broadcast, conservatively
  bool refused = false;     // mongos fails to parse the filter (an unknown operator): Unclassified
};

// `detail` (may be null) receives a readable account of the bounds when explaining.
void targetFilter(const CollectionRouting& coll, const bson_t& filter, bool simple_collation,
                  const TargetOptions& options, FilterTarget& out, std::string* detail);

// Every shard owning chunks of the collection, as a broadcast.
void targetAllChunkOwners(const CollectionRouting& coll, std::string_view reason, FilterTarget& out);

// True when the filter has an exact (storable equality) match on _id; false past `max_elements`.
// `default_collation` false: the statement's collation is not the collection default, and mongos
// then does not count a collatable _id (string, symbol, document, array) as exact.
bool hasExactId(const bson_t& filter, bool default_collation = true, size_t max_elements = 50000);

// The value an exact _id equality of the filter pins ({_id: v}, {_id: {$eq: v}}, ...), as mongos'
// virtual {_id: 1} key extracts it, whatever the collation; false when there is none. A view into
// `filter`. mongos copies it into a replacement without an _id before targeting the replacement.
bool exactIdValue(const bson_t& filter, bson_value_t& out, size_t max_elements = 50000);

// JSON of a key span under the pattern's field names (explain detail).
std::string keyToJson(const ShardKeyPattern& pattern, std::span<const Bound> key);

}  // namespace shardscope::routing
