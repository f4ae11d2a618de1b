// Filter -> per-shard-key-field interval lists: the bounds mongos gets from planning a query
// against a virtual index shaped like the shard key (mongo-semantics.md B step 3).
#pragma once
#include <bson/bson.h>

#include <memory>
#include <string_view>
#include <vector>

#include "routing/interval.h"
#include "routing/shard_key_pattern.h"

namespace shardscope::routing {

// Reasons given when the per-request analysis budget runs out (a correct, conservative answer:
// every shard owning chunks).
constexpr std::string_view kOverBudget =
    "too many filter elements to analyse (over the per-request budget): counted as broadcast";
constexpr std::string_view kStatementsOverBudget =
    "too many statements to analyse (over the per-request budget): counted as broadcast";

// A filter that matches nothing ($alwaysFalse, $in: [], $all: [], or a conjunction holding one).
// Its plan is EOF. mongos releases before 8.3 read an EOF plan as "no bounds" and send it to all
// shards (SERVER-84547); newer ones see that no key can match and send it to one shard, the owner
// of the first chunk, as for contradictory bounds (MongoDB's own test: an AlwaysFalse match
// expression targets one shard and one chunk). The boundary is 8.3, not 8.1 as first guessed:
// mongodb/mongo jstests/core_sharding/query/trivially_empty_queries.js ("only one shard is targeted
// for trivially empty queries": {$match: {$expr: false}}, find {a: {$in: []}} -> SINGLE_SHARD) is
// tagged requires_fcv_83, so releases before 8.3 do not pass it.
constexpr std::string_view kAlwaysFalse =
    "trivially false filter ($alwaysFalse, empty $in or $all): the plan is EOF, no shard-key bounds, so mongos "
    "before 8.3 sends it to all shards (SERVER-84547)";
constexpr std::string_view kAlwaysFalseOneShard =
    "trivially false filter ($alwaysFalse, empty $in or $all): no key can match, so mongos sends it to one shard, "
    "the owner of the first chunk (releases before 8.3: all shards, SERVER-84547)";

// Work units charged for hashing one value: an MD5 costs about as much as eight interval steps.
constexpr size_t kHashedValueUnits = 8;

struct FilterOptions {
  bool simple_collation = true;
  // Work units (elements visited, intervals read or written, 8 per hashed value) the analysis may
  // spend before it gives up and the query is counted as broadcast: ~2 ms of CPU at most.
  size_t budget = 50000;
};

enum class BoundsStatus {
  Ok,          // `fields` holds the bounds (a field may be full)
  AllShards,   // the planner would have no usable plan: [MinKey, MaxKey] ($text, $near outside AND)
  AlwaysFalse, // trivially false filter (EOF plan): mongos sends it everywhere (SERVER-84547)
  TooComplex,  // over the budget: broadcast rather than spend time on the hot path
  Malformed,
};

struct FilterBounds {
  BoundsStatus status = BoundsStatus::Ok;
  std::string_view why;              // static text, for AllShards/AlwaysFalse/TooComplex/Malformed
  FieldBounds fields;                // one per shard-key field, in pattern order
  // Storage for bound values that are not in the filter (regex upper bounds); keeps views valid.
  std::vector<std::unique_ptr<char[]>> arena;
  size_t spent = 0;  // work units used (at most the budget plus one step)

  // True when the leading field is unconstrained: no index plan, so every chunk-owning shard.
  bool unconstrained() const { return fields.empty() || isFull(fields[0]); }
};

void computeFilterBounds(const ShardKeyPattern& pattern, const bson_t& filter, const FilterOptions& options,
                         FilterBounds& out);

}  // namespace shardscope::routing
