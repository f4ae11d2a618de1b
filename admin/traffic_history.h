// A bounded ring of per-interval traffic (operations per targeting class, per count class, per
// shard), so the dashboard can draw ops/s over the last minutes even when it is opened late.
// The admin server samples the registry's cumulative totals every interval; this keeps the deltas.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "stats/shape_counters.h"

namespace shardscope::admin {

class TrafficHistory {
 public:
  // Memory is bounded by capacity × (11 + max_shards + 1) counters: 120 × 76 × 8 B ≈ 73 KB by default.
  explicit TrafficHistory(size_t capacity = 120, size_t max_shards = 64);

  // Cumulative counters at `now_ms`. The first call only sets the baseline; each later call appends
  // the difference to the previous one. After POST /stats/reset every counter counts from zero:
  // `reset_ms` (Snapshot::resetMs) changed since the last call, or (without it) the counter went
  // down. A counter that restarted and passed its old value within the interval is not mistaken for
  // one that grew by the difference.
  // `shard_names`: the name of each position of `shard_ops` (the statistics' shard catalog,
  // Snapshot::shardNames, which keeps a shard's position when a reload reorders the table's list);
  // the latest given names the shards of /history.
  void add(int64_t now_ms, const stats::ConnectionTotals& totals, const std::vector<uint64_t>& shard_ops,
           const std::vector<std::string>& shard_names = {}, int64_t reset_ms = 0);

  // {"intervalSeconds": s, "capacity": n, "shards": [names], "samples": [{"end": unix ms,
  // "seconds": s, "targeting": {...}, "hostsTargeted": {...}, "shards": [ops by index, then "other"]}],
  // "rates": {"last": R, "window": R}} where R = {"seconds": the span it covers, "ops": ops/s,
  // "shards": {name: ops/s}}: the two ops/s figures every panel shows, computed here once (the
  // last interval, and the average over every interval kept), each with its span.
  // `fallback_names`: for positions add() was given no name for (the routing table's list).
  std::string renderJson(const std::vector<std::string>& fallback_names, double interval_seconds) const;

  size_t size() const;

 private:
  struct Sample {
    int64_t end_ms = 0;
    int64_t duration_ms = 0;
    std::array<uint64_t, stats::kTargetingCount> targeting{};
    std::array<uint64_t, stats::kHostsTargetedCount> hosts{};
    std::vector<uint64_t> shards;  // at most max_shards_ + 1 (the last one sums the shards past the limit)
  };

  const size_t capacity_;
  const size_t max_shards_;
  mutable std::mutex mutex_;  // written by the sampling thread, read by the render thread
  std::deque<Sample> samples_;
  bool have_baseline_ = false;
  int64_t last_ms_ = 0;
  int64_t last_reset_ms_ = 0;
  stats::ConnectionTotals last_totals_;
  std::vector<uint64_t> last_shards_;
  std::vector<std::string> shard_names_;  // of last_shards_' positions, as add() was told
};

}  // namespace shardscope::admin
