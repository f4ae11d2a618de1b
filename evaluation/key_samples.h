// The keyed reservoir: sampled inserted documents with a candidate key extracted, and what the
// evaluation derives from them in arrival order — the key's trend (monotonicity) and the
// simulated cluster split on the full key.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "routing/key_bound.h"

namespace shardscope::evaluation {

struct KeyedSample {
  int64_t time;
  uint64_t seq;
  uint64_t hash;
  uint64_t lead_hash;
  std::string_view doc;  // the sampled document's bytes, where the reservoir holds them
  routing::KeyPoint key;  // views into doc
};

// Pearson's r.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// Monotonicity of keys in arrival order: the share that set a new maximum or minimum, and the
// rank correlation (analyzeShardKey's Pearson r) between arrival and key order. `order`: sample
// indices in arrival order; `from` the first key field compared.
void keyTrend(const std::vector<KeyedSample>& samples, const std::vector<size_t>& order, size_t from,
              double& new_extreme_share, double& correlation);

// The simulated cluster on the full key, from the sampled inserts in arrival order: a balancer
// that keeps N chunks at equal shares of the documents seen so far (quantiles of the sorted keys;
// equal keys cannot be split, so a value holding more than a chunk leaves fewer chunks), each on
// its own shard, re-split every 1/32 of the sample. Inserts of the sample's second half are
// counted on the shard of the chunk they land in, under the chunks of the moment (not decayed:
// decay would favour whatever arrives last in a burst, such as the top of the key range when
// buckets open in key order). A large prefix value with a splittable, non-monotonic suffix spreads
// over several chunks; with a monotonic suffix its new documents keep landing in the chunk at the
// top of its range. `final_splits`: the last chunk bounds (views into the samples' documents).
std::vector<double> simulateFullKey(const std::vector<KeyedSample>& samples, const std::vector<size_t>& order,
                                    uint32_t shards, std::vector<std::vector<bson_value_t>>& final_splits);

}  // namespace shardscope::evaluation
