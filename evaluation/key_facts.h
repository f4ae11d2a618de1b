// What a candidate key's verdict needs from sampled values (sampled filters, sampled documents),
// reduced to counts and hashes that carry no value (issue 25): per query shape the routing
// outcomes of its sampled statements (as sent and after the lookup rewrite), and from the sampled
// documents the full key's cardinality and most frequent hashes, its trend with arrival order, the
// largest prefix value's suffix and the inserts per simulated shard. A sidecar computes them for
// every key a fleet evaluation could rank and exports them; a fleet merges them by addition, and
// the report is written from them in-process and in `shardscope evaluate` alike, so one sidecar's
// export evaluates exactly as its own /evaluate.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::evaluation {

// One shape's sampled statements under one key: how many of them the simulated cluster would
// route single-shard (the full key pinned), multi-shard or scatter-gather; shards touched (in all,
// and over the targeted ones); those pinning an exact _id; and the same after the lookup rewrite.
struct ShapeRouting {
  uint64_t used = 0, single = 0, multi = 0, scatter = 0;
  uint64_t shards = 0, targeted_shards = 0, targeted = 0;
  uint64_t with_id = 0, rewritten = 0, after_used = 0, after_scatter = 0, after_single = 0;
  uint64_t no_target = 0, after_no_target = 0;  // neither one shard nor an exact _id (refused before 7.1)
  // Statements carrying no collation, judged under a default collation the sidecar did not know
  // (taken as simple), that a non-simple default would make scatter-gather. Exported as "a", apart
  // from the "c" row, whose layout older exports share.
  uint64_t collation_assumed = 0;
  // Statements carrying no collation that a known non-simple default collation makes
  // scatter-gather, which the simple collation would target (exported as "d").
  uint64_t collation_broadcast = 0;
  std::vector<uint64_t> ranges;  // statements touching each simulated chunk
  void add(const ShapeRouting& o);
};

// ShapeRouting's counters in the export's order (a shape's "c" row, before the per-chunk counts):
// the export, its import and add() all walk this one list.
inline constexpr uint64_t ShapeRouting::*kShapeRoutingCounts[] = {
    &ShapeRouting::used,          &ShapeRouting::single,     &ShapeRouting::multi,     &ShapeRouting::scatter,
    &ShapeRouting::shards,        &ShapeRouting::targeted_shards, &ShapeRouting::targeted, &ShapeRouting::with_id,
    &ShapeRouting::rewritten,     &ShapeRouting::after_used, &ShapeRouting::after_scatter, &ShapeRouting::after_single,
    &ShapeRouting::no_target,     &ShapeRouting::after_no_target,
};

struct KeyFacts {
  std::string key_json;    // canonical pattern JSON
  uint32_t exports = 1;    // sidecar exports these facts come from (1 in-process)
  std::map<uint64_t, ShapeRouting> shapes;  // by shape hash
  // The sampled documents under this key: how many there were, how many hold the key (valid),
  // how many MongoDB would refuse (an array on a key path), the inserts they stand for.
  uint64_t sampled = 0, valid = 0, refused = 0, seen = 0;
  // Cardinality (GEE over the sample): the estimate and the part of it from values seen more than
  // once (a fleet adds the rest, the rare values, and keeps the largest repeated part).
  double estimate = 0, repeated = 0, lead_estimate = 0, lead_repeated = 0;
  std::vector<std::pair<uint64_t, uint64_t>> top_keys, top_leads;  // value hash, sampled count
  double new_extreme_share = 0, rank_correlation = 0;  // over `valid`
  double suffix_distinct = 0;
  uint64_t suffix_samples = 0;
  bool suffix_monotonic = false;
  std::vector<double> shard_inserts;  // simulated inserts per shard
  std::string split_on;               // what the simulated chunks split on

  void merge(const KeyFacts& o);
  void toBson(bson_t* out) const;
  bool fromBson(const bson_t& doc);
};

constexpr size_t kExportedTopKeys = 8;

}  // namespace shardscope::evaluation
