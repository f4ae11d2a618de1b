#include "evaluation/simulated_cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "routing/key_bound.h"

namespace shardscope::evaluation {

namespace {

// A chunk's lower bound (its leading values, the fields after them at MinKey) and its shard.
struct SimulatedChunk {
  std::vector<bson_value_t> values;
  uint16_t shard = 0;
};

bson_value_t int64Value(int64_t v) {
  bson_value_t b{};
  b.value_type = BSON_TYPE_INT64;
  b.value.v_int64 = v;
  return b;
}

bson_value_t maxKeyValue() {
  bson_value_t b{};
  b.value_type = BSON_TYPE_MAXKEY;
  return b;
}

// Orders two lower bounds as the chunk map does (fields past a bound's values are MinKey).
int compareLowerBounds(const std::vector<bson_value_t>& a, const std::vector<bson_value_t>& b, size_t fields) {
  for (size_t i = 0; i < fields; ++i) {
    const routing::Bound x = i < a.size() ? routing::Bound::of(a[i]) : routing::Bound::minKey();
    const routing::Bound y = i < b.size() ? routing::Bound::of(b[i]) : routing::Bound::minKey();
    if (int c = routing::compareBound(x, y)) return c;
  }
  return 0;
}

// Even slices of the hash space: the i-th of `parts` bounds.
int64_t hashSlice(uint32_t i, uint32_t parts) {
  const double step = 18446744073709551616.0 / parts;
  return static_cast<int64_t>(static_cast<double>(std::numeric_limits<int64_t>::min()) + step * i);
}

// Replaces the chunks inside one busy prefix value's range by `parts` chunks split on the hashed
// field, on consecutive shards from the one holding the start of the range; the chunk after the
// range keeps the shard it had.
void spreadPrefix(const BusyPrefix& p, uint32_t parts, uint32_t shards, size_t fields,
                  std::vector<SimulatedChunk>& chunks) {
  std::vector<bson_value_t> lo = p.values, hi = p.values;
  hi.push_back(maxKeyValue());
  auto firstAtOrAfter = [&](const std::vector<bson_value_t>& bound) {
    return static_cast<size_t>(
        std::partition_point(chunks.begin(), chunks.end(),
                             [&](const SimulatedChunk& c) { return compareLowerBounds(c.values, bound, fields) < 0; }) -
        chunks.begin());
  };
  const size_t a = firstAtOrAfter(lo), b = firstAtOrAfter(hi);  // chunks [a, b) start inside the range
  // chunks[0] starts at MinKey, before any value: a and b are at least 1.
  const uint16_t first =
      chunks[a < chunks.size() && compareLowerBounds(chunks[a].values, lo, fields) == 0 ? a : a - 1].shard;
  const bool hi_exists = b < chunks.size() && compareLowerBounds(chunks[b].values, hi, fields) == 0;
  const uint16_t after = chunks[b - 1].shard;  // the chunk that held the range's end
  std::vector<SimulatedChunk> inside;
  inside.push_back({lo, first});
  for (uint32_t i = 1; i < parts; ++i) {
    std::vector<bson_value_t> v = p.values;
    v.push_back(int64Value(hashSlice(i, parts)));
    inside.push_back({std::move(v), static_cast<uint16_t>((first + i) % shards)});
  }
  if (!hi_exists) inside.push_back({hi, after});
  chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(a), chunks.begin() + static_cast<std::ptrdiff_t>(b));
  chunks.insert(chunks.begin() + static_cast<std::ptrdiff_t>(a), inside.begin(), inside.end());
}

std::vector<uint8_t> boundBytes(const routing::ShardKeyPattern& pattern, const std::vector<bson_value_t>* values,
                                int edge) {
  bson_t d = BSON_INITIALIZER;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char* name = pattern.field(i).path.c_str();
    if (edge > 0)
      bson_append_maxkey(&d, name, -1);
    else if (values && i < values->size())
      bson_append_value(&d, name, -1, &(*values)[i]);
    else
      bson_append_minkey(&d, name, -1);
  }
  std::vector<uint8_t> bytes(bson_get_data(&d), bson_get_data(&d) + d.len);
  bson_destroy(&d);
  return bytes;
}

}  // namespace

bool buildSimulatedCluster(const routing::ShardKeyPattern& pattern,
                           const std::vector<std::vector<bson_value_t>>& splits, const std::vector<BusyPrefix>& busy,
                           double chunk_share, uint32_t shards, routing::CollectionRouting& coll) {
  coll.key = pattern;
  coll.ns = "simulated";
  std::vector<SimulatedChunk> chunks;
  chunks.push_back({{}, 0});  // from MinKey
  if (pattern.field(0).hashed && splits.empty()) {
    for (uint32_t i = 1; i < shards; ++i)
      chunks.push_back({{int64Value(hashSlice(i, shards))}, static_cast<uint16_t>(i % shards)});
  } else {
    for (size_t i = 0; i < splits.size(); ++i) chunks.push_back({splits[i], static_cast<uint16_t>((i + 1) % shards)});
  }
  const int hashed = pattern.hashedField();
  if (hashed > 0 && chunk_share > 0 && shards > 1)
    for (const auto& p : busy) {
      const double fill = std::floor(p.share / chunk_share) + 1;  // the chunks its documents fill
      if (p.share >= chunk_share && p.values.size() == static_cast<size_t>(hashed))
        spreadPrefix(p, static_cast<uint32_t>(std::min<double>(shards, fill)), shards, pattern.size(), chunks);
    }
  std::vector<routing::ChunkInput> input;
  for (size_t i = 0; i < chunks.size(); ++i)
    input.push_back(
        {i == 0 ? boundBytes(pattern, nullptr, -1) : boundBytes(pattern, &chunks[i].values, 0),
         i + 1 < chunks.size() ? boundBytes(pattern, &chunks[i + 1].values, 0) : boundBytes(pattern, nullptr, 1),
         chunks[i].shard});
  std::string error;
  return coll.chunks.build(pattern, std::move(input), error);
}

}  // namespace shardscope::evaluation
