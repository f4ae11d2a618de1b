#include "stats/histogram.h"

namespace shardscope::stats {

uint64_t LatencyHistogram::quantile(double q) const {
  uint64_t n = total();
  if (n == 0) return 0;
  double rank = q * static_cast<double>(n);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    if (static_cast<double>(seen + counts[i]) >= rank) {
      double lower = i == 0 ? 0.0 : static_cast<double>(LatencyBounds::kNs[i - 1]);
      double upper = i < LatencyBounds::kFinite ? static_cast<double>(LatencyBounds::kNs[i]) : static_cast<double>(max);
      double within = (rank - static_cast<double>(seen)) / static_cast<double>(counts[i]);
      auto v = static_cast<uint64_t>(lower + (upper - lower) * within);
      return std::min(v, max);
    }
    seen += counts[i];
  }
  return max;
}

}  // namespace shardscope::stats
