// flattenBounds: see key_ranges.h. Written straight into the flat min/max arrays: the number of
// ranges is known once the fan-out field is found.
#include "routing/key_ranges.h"

namespace shardscope::routing {
namespace {

bool isSinglePoint(const IntervalList& list) { return list.size() == 1 && list[0].isPoint(); }

}  // namespace

bool KeyRanges::flatten(const FieldBounds& fields, size_t cap) {
  width_ = fields.size();
  mins_.clear();
  maxs_.clear();
  // The fan-out field is the first that is not a single point. Fields are checked in order: an
  // empty one (no value matches) means no ranges, a fan-out above the cap means failure,
  // whichever comes first.
  size_t fan_out = width_;
  for (size_t i = 0; i < width_; ++i) {
    if (fields[i].empty()) return true;
    if (fan_out == width_ && !isSinglePoint(fields[i])) {
      if (fields[i].size() > cap) return false;
      fan_out = i;
    }
  }
  size_t count = fan_out < width_ ? fields[fan_out].size() : 1;
  mins_.resize(count * width_);
  maxs_.resize(count * width_);
  for (size_t r = 0; r < count; ++r) {
    Bound* lo = mins_.data() + r * width_;
    Bound* hi = maxs_.data() + r * width_;
    for (size_t i = 0; i < width_; ++i) {
      const IntervalList& field = fields[i];
      if (i < fan_out) {  // a single point
        lo[i] = field[0].lo;
        hi[i] = field[0].hi;
      } else if (i == fan_out) {  // one range per interval
        lo[i] = field[r].lo;
        hi[i] = field[r].hi;
      } else {  // after the fan-out: the field's overall extent
        lo[i] = field.front().lo;
        hi[i] = field.back().hi;
      }
    }
  }
  return true;
}

}  // namespace shardscope::routing
