// A sampled filter as a shape keeps it (ShapeState::samples): the filter's BSON, then one byte
// when its statement carried a collation: kCollatedSample for a non-simple one,
// kSimpleCollationSample for {locale: "simple"}; none when it carried none, so that it runs under
// the collection's default collation (mongos applies it: mongo-semantics.md, "Collation"). mongos
// cannot use a string (collatable) predicate on the shard key under a non-simple collation, so the
// candidate keys judge the sample under the collation it ran with. The mark travels with the
// sample through exports and merges: a sample is copied whole.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string_view>

namespace shardscope::evaluation {

inline constexpr char kCollatedSample = '\x01';
inline constexpr char kSimpleCollationSample = '\x02';

// The collation a sampled statement carried.
enum class SampleCollation : uint8_t { Inherited, Simple, NonSimple };

// What the sidecar knows of a collection's default collation (create, listCollections, the
// routing table): statements that carry none run under it.
enum class DefaultCollation : uint8_t { Unknown, Simple, NonSimple };

// Whether a statement runs under a non-simple collation; an unknown default is taken as simple
// (the statements that depend on it are counted apart: ShapeRouting::collation_assumed).
inline bool runsNonSimple(SampleCollation sample, DefaultCollation collection) {
  return sample == SampleCollation::NonSimple ||
         (sample == SampleCollation::Inherited && collection == DefaultCollation::NonSimple);
}

// The filter in `bytes` (a view: valid while they are) and the collation its statement carried;
// false when the bytes hold no document.
inline bool readSampledFilter(std::string_view bytes, bson_t& filter, SampleCollation& collation) {
  collation = SampleCollation::Inherited;
  if (bytes.size() >= 6 && (bytes.back() == kCollatedSample || bytes.back() == kSimpleCollationSample)) {
    collation = bytes.back() == kCollatedSample ? SampleCollation::NonSimple : SampleCollation::Simple;
    bytes.remove_suffix(1);
  }
  return bson_init_static(&filter, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace shardscope::evaluation
