// Filter targeting; classification: one shard = single, an unconstrained key prefix = broadcast,
// otherwise multi (shards chosen by bounds).
#include "routing/query_targeting.h"

#include "routing/equality_key.h"
#include "routing/filter_bounds.h"
#include "routing/key_ranges.h"
#include "routing/plain_equality_filter.h"
#include "routing/query_operators.h"

namespace shardscope::routing {
namespace {

void finish(FilterTarget& out, std::string_view single_reason, std::string_view multi_reason) {
  const bool single = isSingleShard(out.shards);
  out.targeting = single ? Targeting::Single : Targeting::Multi;
  out.reason = single ? single_reason : multi_reason;
}

// Unknown: the newest rules, as for writes. 8.3: see kAlwaysFalse (filter_bounds.h) for the source.
bool alwaysFalseToOneShard(const MongosVersion& v) { return !v.known() || v.atLeast(8, 3); }

const ShardKeyPattern& idPattern() {
  static const ShardKeyPattern pattern = [] {
    std::string error;
    return *ShardKeyPattern::fromJson("{\"_id\": 1}", error);
  }();
  return pattern;
}

}  // namespace

std::string keyToJson(const ShardKeyPattern& pattern, std::span<const Bound> key) {
  bson_t doc = BSON_INITIALIZER;
  for (size_t i = 0; i < pattern.size() && i < key.size(); ++i) appendBound(&doc, pattern.field(i).path.c_str(), key[i]);
  char* s = bson_as_relaxed_extended_json(&doc, nullptr);
  std::string out = s ? s : "{}";
  bson_free(s);
  bson_destroy(&doc);
  return out;
}

void targetAllChunkOwners(const CollectionRouting& coll, std::string_view reason, FilterTarget& out) {
  out.targeting = Targeting::Broadcast;
  out.shards = coll.chunks.owningShards();
  out.reason = reason;
}

bool hasExactId(const bson_t& filter, bool default_collation, size_t max_elements) {
  KeyPoint key;
  // A collatable _id under another collation comes back FullCollation: not exact.
  return extractEqualityKey(idPattern(), filter, default_collation, key, nullptr, max_elements) ==
         EqualityStatus::Full;
}

bool exactIdValue(const bson_t& filter, bson_value_t& out, size_t max_elements) {
  KeyPoint key;
  // Collation aside: mongos copies the value whatever the collation, and judges the key it completes.
  if (extractEqualityKey(idPattern(), filter, true, key, nullptr, max_elements) != EqualityStatus::Full) return false;
  out = key.fields[0].value;
  return true;
}

void targetFilter(const CollectionRouting& coll, const bson_t& filter, bool simple_collation,
                  const TargetOptions& options, FilterTarget& out, std::string* detail) {
  out.shards.reset();
  out.full_key = false;
  out.key_pinned = false;
  out.over_budget = false;
  out.refused = false;
  out.spent = 0;
  // The common case in one pass; an explanation (detail) comes from the general analysis.
  if (!detail && targetPlainEquality(coll, filter, simple_collation, options, out)) return;
  // mongos parses the filter before it targets: an operator it does not know is an error there,
  // whatever the shard key says ({a: 10, b: {$invalid: 1}} is not "single").
  size_t checked = 0;
  if (hasUnknownOperator(filter, options.analysis_budget, checked)) {
    out.targeting = Targeting::Unclassified;
    out.reason = kUnknownOperator;
    out.refused = true;
    out.spent = checked;
    return;
  }
  std::string_view why;
  size_t scanned = 0;
  const size_t budget = options.analysis_budget > checked ? options.analysis_budget - checked : 0;
  EqualityStatus eq = extractEqualityKey(coll.key, filter, simple_collation, out.key, &why, budget, &scanned);
  scanned += checked;
  out.spent = scanned;
  if (eq == EqualityStatus::TooLarge) {
    targetAllChunkOwners(coll, kOverBudget, out);
    out.over_budget = true;
    return;
  }
  if (eq == EqualityStatus::Full || eq == EqualityStatus::FullCollation) out.key_pinned = true;
  if (eq == EqualityStatus::Full) {
    out.full_key = true;
    out.shards.set(coll.chunks.shardForKey(out.key.span()));
    out.targeting = Targeting::Single;
    out.reason = "equality on the full shard key";
    if (detail) *detail = "key " + keyToJson(coll.key, out.key.span()) + " is in one chunk";
    return;
  }

  FilterOptions fo;
  fo.simple_collation = simple_collation;
  fo.budget = options.analysis_budget > scanned ? options.analysis_budget - scanned : 0;
  FilterBounds bounds;
  computeFilterBounds(coll.key, filter, fo, bounds);
  out.spent += bounds.spent;
  if (bounds.status == BoundsStatus::AlwaysFalse && alwaysFalseToOneShard(options.mongos_version)) {
    out.shards.set(coll.chunks.chunkShard(0));
    out.targeting = Targeting::Single;
    out.reason = kAlwaysFalseOneShard;
    return;
  }
  if (bounds.status != BoundsStatus::Ok) {
    targetAllChunkOwners(coll, bounds.why, out);
    out.over_budget = bounds.why == kOverBudget;
    return;
  }
  if (bounds.unconstrained()) {
    std::string_view r = "filter does not constrain the shard key prefix: broadcast";
    if (!simple_collation) {
      // Tell a collation-blocked key apart from a filter that never had one (off the hot path).
      FilterOptions simple = fo;
      simple.simple_collation = true;
      FilterBounds again;
      computeFilterBounds(coll.key, filter, simple, again);
      if (again.status == BoundsStatus::Ok && !again.unconstrained())
        r = "non-simple collation: string predicates on the shard key cannot be used, broadcast";
    }
    targetAllChunkOwners(coll, r, out);
    if (detail) *detail = "leading shard key field '" + coll.key.field(0).path + "' is unconstrained";
    return;
  }
  KeyRanges ranges;
  if (!ranges.flatten(bounds.fields, options.max_ranges)) {
    targetAllChunkOwners(coll, "too many shard-key ranges ($in fan-out above the cap): counted as broadcast", out);
    return;
  }
  if (ranges.size() == 0) {
    // No key can match; mongos still sends the query to one shard (SERVER-4914).
    out.shards.set(coll.chunks.chunkShard(0));
    out.targeting = Targeting::Single;
    out.reason = "contradictory shard-key bounds: no key can match, sent to one shard (SERVER-4914)";
    return;
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    coll.chunks.addShardsForRange(ranges.min(i), ranges.max(i), out.shards);
    if ((out.shards & coll.chunks.owningShards()) == coll.chunks.owningShards()) break;
  }
  if (eq == EqualityStatus::FullCollation) {
    finish(out, "non-simple collation: single-key path refused, bounds select one shard",
           "non-simple collation: single-key path refused, bounds select several shards");
  } else {
    finish(out, "shard key bounds select one shard", "shard key bounds select several shards");
  }
  if (detail) {
    *detail = std::to_string(ranges.size()) + " shard-key range(s)";
    for (size_t i = 0; i < ranges.size() && i < 5; ++i)
      *detail += (i ? ", " : ": ") + std::string("[") + keyToJson(coll.key, ranges.min(i)) + ", " +
                 keyToJson(coll.key, ranges.max(i)) + "]";
    if (ranges.size() > 5) *detail += ", ...";
  }
}

}  // namespace shardscope::routing
