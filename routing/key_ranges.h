// Flattening per-field bounds into shard-key ranges, as mongos's flattenBounds does: leading
// single points go into every range, the first wider field fans out one range per interval, later
// fields only contribute their overall first start and last end.
#pragma once
#include <span>

#include "routing/interval.h"

namespace shardscope::routing {

// mongos refuses more than this many ranges (error 17439, "combinatorial limit of $in partitioning").
constexpr size_t kMongosMaxRanges = 4'000'000;

class KeyRanges {
 public:
  size_t size() const { return width_ ? mins_.size() / width_ : 0; }
  size_t width() const { return width_; }
  std::span<const Bound> min(size_t i) const { return {mins_.data() + i * width_, width_}; }
  std::span<const Bound> max(size_t i) const { return {maxs_.data() + i * width_, width_}; }

  // Returns false (and leaves no ranges) when more than `cap` ranges would result.
  // Range ends are inclusive, as mongos treats them (interval inclusivity is not carried).
  bool flatten(const FieldBounds& fields, size_t cap);

 private:
  size_t width_ = 0;
  RecycledVector<Bound> mins_, maxs_;  // range r is [r * width_, (r + 1) * width_)
};

}  // namespace shardscope::routing
