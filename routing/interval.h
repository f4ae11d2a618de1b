// Per-field interval lists in shard-key space (what an index scan on the shard key would read),
// kept sorted and disjoint, with the set operations the filter analysis needs. The lists are
// built and dropped on every targeting call, so their storage is recycled per thread.
#pragma once
#include "routing/key_bound.h"
#include "routing/recycling_allocator.h"

namespace shardscope::routing {

struct Interval {
  Bound lo, hi;
  bool lo_inclusive = true, hi_inclusive = true;
  static Interval point(const Bound& b) { return {b, b, true, true}; }
  static Interval full() { return {Bound::minKey(), Bound::maxKey(), true, true}; }
  bool isPoint() const;
};

// Sorted, disjoint, non-empty intervals.
using IntervalList = RecycledVector<Interval>;
// One interval list per shard-key field, in pattern order.
using FieldBounds = RecycledVector<IntervalList>;

IntervalList fullList();
bool isFull(const IntervalList& list);
// Sorts, drops empty intervals and merges overlapping or touching ones.
void normalize(IntervalList& list);
IntervalList intersect(const IntervalList& a, const IntervalList& b);
IntervalList unite(const IntervalList& a, const IntervalList& b);
// The complement within [MinKey, MaxKey].
IntervalList complement(const IntervalList& list);

}  // namespace shardscope::routing
