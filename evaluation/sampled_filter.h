// A sampled filter as a shape keeps it (ShapeState::samples): the filter's BSON, then one byte,
// kCollatedSample, when its statement ran under a non-simple collation. mongos cannot use a
// string (collatable) predicate on the shard key under such a collation (mongo-semantics.md,
// "Collation"), so the candidate keys judge the sample under the collation it ran with. The mark
// travels with the sample through exports and merges: a sample is copied whole.
#pragma once
#include <bson/bson.h>

#include <string_view>

namespace shardscope::evaluation {

inline constexpr char kCollatedSample = '\x01';

// The filter in `bytes` (a view: valid while they are) and whether it ran under a non-simple
// collation; false when the bytes hold no document.
inline bool readSampledFilter(std::string_view bytes, bson_t& filter, bool& collated) {
  collated = false;
  if (bytes.size() >= 6 && bytes.back() == kCollatedSample) {
    bytes.remove_suffix(1);
    collated = true;
  }
  return bson_init_static(&filter, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace shardscope::evaluation
