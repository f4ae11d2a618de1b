// Process-wide counters and gauges of the proxy, declared once (name, help) and rendered into
// /stats and /metrics by the same table. Bumped per connection or per fault, never per operation.
#pragma once
#include <atomic>
#include <cstdint>

namespace shardscope::stats {

// COUNTER(name, help) renders as shardscope_<name>_total; GAUGE(name, help) as shardscope_<name>.
#define SHARDSCOPE_PROCESS_COUNTERS(COUNTER, GAUGE)                                               \
  COUNTER(connections_opened, "Client connections accepted by the proxy.")                        \
  COUNTER(connections_closed, "Client connections closed.")                                       \
  COUNTER(connections_refused, "Client connections closed at once: max_connections or out of descriptors.") \
  GAUGE(connections_active, "Client connections currently open.")                                 \
  COUNTER(decode_errors, "Client messages that could not be framed or decoded.")                  \
  COUNTER(unparsed_messages, "Messages forwarded without targeting: none since legacy opcodes are refused (kept for the schema).") \
  COUNTER(analysis_over_budget, "Operations too large to analyse within the per-request budget (counted as broadcast).") \
  COUNTER(upstream_connect_failures, "Failed attempts to connect to the upstream.")                \
  COUNTER(upstream_errors, "Upstream connections that failed after being established.")           \
  COUNTER(evaluation_dropped_events, "Observed events not evaluated because the evaluation worker's queue was full.") \
  COUNTER(mirror_dropped, "Messages not mirrored because the mirror queue was full.")             \
  COUNTER(admin_requests, "Requests served by the admin HTTP endpoint.")                          \
  COUNTER(admin_rejected, "Admin requests rejected (401, 404, 405, 413), or connections refused.") \
  COUNTER(admin_connections_replaced, "Admin connections still waiting for a request, closed for a new one at the cap.")

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
