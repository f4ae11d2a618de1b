// flattenBounds: see key_ranges.h.
#include "routing/key_ranges.h"

namespace shardscope::routing {

bool KeyRanges::flatten(const std::vector<IntervalList>& fields, size_t cap) {
  width_ = fields.size();
  mins_.clear();
  maxs_.clear();
  // Built column by column: ranges[r] has the first `i` fields filled after step i.
  std::vector<std::vector<Bound>> lo(1), hi(1);
  bool equality_only = true;
  for (const auto& oil : fields) {
    if (oil.empty()) {  // no value satisfies this field: no ranges at all
      lo.clear();
      hi.clear();
      break;
    }
    if (equality_only && oil.size() == 1 && oil[0].isPoint()) {
      for (size_t r = 0; r < lo.size(); ++r) {
        lo[r].push_back(oil[0].lo);
        hi[r].push_back(oil[0].hi);
      }
    } else if (equality_only) {
      equality_only = false;
      if (lo.size() * oil.size() > cap) return false;
      std::vector<std::vector<Bound>> nlo, nhi;
      nlo.reserve(lo.size() * oil.size());
      nhi.reserve(lo.size() * oil.size());
      for (size_t r = 0; r < lo.size(); ++r) {
        for (const auto& iv : oil) {
          nlo.push_back(lo[r]);
          nlo.back().push_back(iv.lo);
          nhi.push_back(hi[r]);
          nhi.back().push_back(iv.hi);
        }
      }
      lo.swap(nlo);
      hi.swap(nhi);
    } else {
      for (size_t r = 0; r < lo.size(); ++r) {
        lo[r].push_back(oil.front().lo);
        hi[r].push_back(oil.back().hi);
      }
    }
  }
  mins_.reserve(lo.size() * width_);
  maxs_.reserve(lo.size() * width_);
  for (size_t r = 0; r < lo.size(); ++r) {
    mins_.insert(mins_.end(), lo[r].begin(), lo[r].end());
    maxs_.insert(maxs_.end(), hi[r].begin(), hi[r].end());
  }
  return true;
}

}  // namespace shardscope::routing
