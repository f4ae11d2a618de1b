// Process-wide counters and gauges of the proxy: one atomic per row of SHARDSCOPE_PROCESS_COUNTERS
// (declared with every other metric in stats/metrics.h). Bumped per connection or per fault.
#pragma once
#include <atomic>
#include <cstdint>

#include "stats/metrics.h"

namespace shardscope::stats {

struct ProcessCounters {
#define SHARDSCOPE_DECLARE_COUNTER(name, help) std::atomic<uint64_t> name{0};
#define SHARDSCOPE_DECLARE_GAUGE(name, help) std::atomic<int64_t> name{0};
  SHARDSCOPE_PROCESS_COUNTERS(SHARDSCOPE_DECLARE_COUNTER, SHARDSCOPE_DECLARE_GAUGE)
#undef SHARDSCOPE_DECLARE_COUNTER
#undef SHARDSCOPE_DECLARE_GAUGE

  // Counters are monotonic (Prometheus rate() relies on it), so reset() leaves them alone.
};

inline void bump(std::atomic<uint64_t>& counter, uint64_t by = 1) { counter.fetch_add(by, std::memory_order_relaxed); }

}  // namespace shardscope::stats
