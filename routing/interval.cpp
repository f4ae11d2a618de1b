// Interval arithmetic with inclusivity, so {$gt: 5, $lt: 5} is empty and $ne complements exactly.
#include "routing/interval.h"

#include <algorithm>

namespace shardscope::routing {
namespace {

bool isEmpty(const Interval& i) {
  int c = compareBound(i.lo, i.hi);
  return c > 0 || (c == 0 && !(i.lo_inclusive && i.hi_inclusive));
}

// Orders lower bounds: at equal values an inclusive lower bound starts earlier.
bool loLess(const Interval& a, const Interval& b) {
  int c = compareBound(a.lo, b.lo);
  if (c != 0) return c < 0;
  return a.lo_inclusive && !b.lo_inclusive;
}

}  // namespace

bool Interval::isPoint() const { return lo_inclusive && hi_inclusive && compareBound(lo, hi) == 0; }

IntervalList fullList() { return {Interval::full()}; }

bool isFull(const IntervalList& list) {
  return list.size() == 1 && list[0].lo.isMinKey() && list[0].hi.isMaxKey() && list[0].lo_inclusive &&
         list[0].hi_inclusive;
}

void normalize(IntervalList& list) {
  list.erase(std::remove_if(list.begin(), list.end(), isEmpty), list.end());
  std::sort(list.begin(), list.end(), loLess);
  IntervalList out;
  for (const auto& i : list) {
    if (!out.empty()) {
      Interval& last = out.back();
      int c = compareBound(last.hi, i.lo);
      if (c > 0 || (c == 0 && (last.hi_inclusive || i.lo_inclusive))) {
        int h = compareBound(i.hi, last.hi);
        if (h > 0 || (h == 0 && i.hi_inclusive)) {
          last.hi = i.hi;
          last.hi_inclusive = h > 0 ? i.hi_inclusive : true;
        }
        continue;
      }
    }
    out.push_back(i);
  }
  list.swap(out);
}

IntervalList intersect(const IntervalList& a, const IntervalList& b) {
  IntervalList out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Interval r;
    int lo = compareBound(a[i].lo, b[j].lo);
    if (lo > 0 || (lo == 0 && !a[i].lo_inclusive)) {
      r.lo = a[i].lo;
      r.lo_inclusive = a[i].lo_inclusive;
    } else {
      r.lo = b[j].lo;
      r.lo_inclusive = b[j].lo_inclusive;
    }
    int hi = compareBound(a[i].hi, b[j].hi);
    bool a_ends_first = hi < 0 || (hi == 0 && !a[i].hi_inclusive);
    if (a_ends_first) {
      r.hi = a[i].hi;
      r.hi_inclusive = a[i].hi_inclusive;
    } else {
      r.hi = b[j].hi;
      r.hi_inclusive = b[j].hi_inclusive;
    }
    if (!isEmpty(r)) out.push_back(r);
    if (a_ends_first) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalList unite(const IntervalList& a, const IntervalList& b) {
  IntervalList out = a;
  out.insert(out.end(), b.begin(), b.end());
  normalize(out);
  return out;
}

IntervalList complement(const IntervalList& list) {
  IntervalList out;
  Bound cursor = Bound::minKey();
  bool cursor_inclusive = true;
  for (const auto& i : list) {
    out.push_back({cursor, i.lo, cursor_inclusive, !i.lo_inclusive});
    cursor = i.hi;
    cursor_inclusive = !i.hi_inclusive;
  }
  out.push_back({cursor, Bound::maxKey(), cursor_inclusive, true});
  normalize(out);
  return out;
}

}  // namespace shardscope::routing
