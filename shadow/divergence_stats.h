// Per query shape: how often the shadow cluster answered differently from the primary, in which
// way, the latency of both sides, the targeting class on each cluster, and the first few
// divergence examples (shapes only; the command with its values only when the user allows it).
// Bounded: past `max_shapes` shapes a new shape takes the row of the least useful one (no
// divergence, fewest mirrored, idle longest), whose counts go to one "<other>" row: shapes one
// client makes up cannot keep every later shape out, they push each other out.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "routing/target_result.h"
#include "shadow/reply_summary.h"
#include "stats/histogram.h"
#include "common/json_writer.h"

namespace shardscope::shadow {

struct DivergenceExample {
  int64_t unix_ms = 0;
  uint32_t kinds = 0;
  std::string detail;   // describeDivergence(): counts and codes, no values
  std::string command;  // relaxed JSON of the command, only with record_values
};

struct ShapeDivergence {
  std::string ns, command, shape;
  uint64_t hash = 0;
  routing::Targeting primary_targeting = routing::Targeting::Unclassified;
  routing::Targeting shadow_targeting = routing::Targeting::Unclassified;
  bool shadow_targeting_known = false;  // a shadow routing file is loaded
  uint64_t mirrored = 0;                // sent to the shadow
  uint64_t compared = 0;
  uint64_t divergent = 0;
  uint64_t shadow_errors = 0;           // the shadow could not be asked (network, timeout)
  uint64_t by_kind[kDivergenceKinds] = {};
  stats::LatencyHistogram primary_latency;
  stats::LatencyHistogram shadow_latency;
  std::vector<DivergenceExample> examples;
  uint64_t last_mirrored = 0;  // the table's sequence number when it was last mirrored
};

class DivergenceTable {
 public:
  explicit DivergenceTable(size_t maxShapes = 1000, size_t maxExamples = 3)
      : max_shapes_(maxShapes), max_examples_(maxExamples) {}

  // All calls are thread-safe (one mutex; callers are the mirror's worker threads, not sessions).
  void onMirrored(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape,
                  routing::Targeting primary, routing::Targeting shadow, bool shadowKnown);
  void onShadowError(uint64_t hash);
  // `command` is empty unless values may be recorded.
  void onCompared(uint64_t hash, const ReplySummary& primary, const ReplySummary& shadow, uint64_t primaryLatencyNs,
                  uint64_t shadowLatencyNs, std::string_view commandJson);

  std::vector<ShapeDivergence> snapshot() const;
  void reset();

 private:
  ShapeDivergence* findLocked(uint64_t hash);
  ShapeDivergence& otherRowLocked();
  // Frees the least useful row for a new shape (its counts into <other>); returns its index.
  size_t evictLocked();

  const size_t max_shapes_;
  const size_t max_examples_;
  mutable std::mutex mutex_;
  std::deque<ShapeDivergence> shapes_;
  std::unordered_map<uint64_t, size_t> index_;
  uint64_t sequence_ = 0;  // mirrored operations so far: the rows' idle order
};

// Renders the per-shape rows (sorted by divergences, then mirrored count; `top` rows at most).
void renderDivergenceJson(const std::vector<ShapeDivergence>& rows, size_t top, common::JsonWriter& w);
// Per-shape series for the `top` rows by divergences; the rest summed under shape_id="rest".
void renderDivergencePrometheus(const std::vector<ShapeDivergence>& rows, size_t top, std::string& out);

}  // namespace shardscope::shadow
