// The chunks of one sharded collection: sorted, contiguous [min, max) ranges from all-MinKey to
// all-MaxKey, each owned by a shard; O(log n) lookup of a key or of a range's shards.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "routing/key_bound.h"
#include "routing/shard_key_pattern.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// One chunk as read from a routing file or config.chunks; bounds are BSON documents.
struct ChunkInput {
  std::vector<uint8_t> min, max;  // BSON bytes
  uint16_t shard = 0;
};

class ChunkMap {
 public:
  // Validates and takes the chunks. Errors name the chunk (index and bounds) and the problem:
  // bounds not matching the key pattern, unsorted, gap, overlap, empty chunk, missing MinKey/MaxKey.
  bool build(const ShardKeyPattern& pattern, std::vector<ChunkInput> chunks, std::string& error);

  size_t chunkCount() const { return shards_.size(); }
  std::span<const Bound> chunkMin(size_t i) const { return {bounds_.data() + i * width_, width_}; }
  std::span<const Bound> chunkMax(size_t i) const { return {bounds_.data() + (i + 1) * width_, width_}; }
  uint16_t chunkShard(size_t i) const { return shards_[i]; }

  // The chunk owning `key`: the first whose max exceeds it.
  size_t chunkForKey(std::span<const Bound> key) const;
  uint16_t shardForKey(std::span<const Bound> key) const { return shards_[chunkForKey(key)]; }
  // Adds the owners of every chunk intersecting the inclusive range [lo, hi]; stops early once
  // every chunk-owning shard is in `out`.
  void addShardsForRange(std::span<const Bound> lo, std::span<const Bound> hi, ShardSet& out) const;
  // addShardsForRange for a range whose ends share their first field's value (a pinned leading
  // field, lo <= hi): no ordering check, one first-field summary for both ends. True when every
  // chunk it touched has the same owner (for an empty `out`: exactly one shard, without scanning
  // the set for it). The plain-equality filters' path (issue 29).
  bool addShardsForPrefixRange(std::span<const Bound> lo, std::span<const Bound> hi, ShardSet& out) const;
  const ShardSet& owningShards() const { return owning_; }
  size_t owningShardCount() const { return owning_count_; }  // counted once, at load

 private:
  size_t width_ = 0;
  std::vector<std::vector<uint8_t>> docs_;  // owns the bytes the bounds view
  std::vector<Bound> bounds_;               // (chunks + 1) * width: min of each chunk, then the last max
  std::vector<uint64_t> first_prefix_;      // orderPrefix of each boundary's first field (bounds_ / width)
  // compareKeys(boundary j, key), deciding on the first field's summary when it can.
  int compareBoundary(size_t j, std::span<const Bound> key, uint64_t key_prefix) const;
  // chunkForKey with the key's first-field summary already known.
  size_t chunkForKey(std::span<const Bound> key, uint64_t key_prefix) const;
  // Adds the owners of chunk `first` and of the chunks after it that start at or before `hi`
  // (stopping once every chunk-owning shard is in `out`); true when they all had one owner.
  bool addOwnersFrom(size_t first, std::span<const Bound> hi, uint64_t hi_prefix, ShardSet& out) const;
  std::vector<uint16_t> shards_;
  ShardSet owning_;
  size_t owning_count_ = 0;
};

}  // namespace shardscope::routing
