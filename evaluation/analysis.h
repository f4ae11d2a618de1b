// Evaluation of candidate shard keys for one namespace from its NamespaceState: candidates from
// the routing table, the config, and the traffic; per candidate the analyzeShardKey-style read and
// write distribution, cardinality, frequency, monotonicity, a simulated N-shard cluster and jumbo
// risk; then a ranking and the written defence.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evaluation/migration_plan.h"
#include "evaluation/namespace_state.h"
#include "routing/shard_key_pattern.h"

namespace shardscope::evaluation {

struct AnalysisOptions {
  uint32_t simulated_shards = 4;
  uint32_t max_candidates = 16;
  uint32_t min_distinct_per_shard = 64;     // cardinality passes at >= this many values per shard
  double jumbo_warn_share = 0.01;           // a key value above this share of inserts: jumbo risk
  double imbalance_warn_ratio = 2.0;        // simulated insert max/min at or above: warning
  double monotonic_correlation = 0.7;       // analyzeShardKey's default threshold
  double chunk_size_bytes = 128.0 * 1024 * 1024;
  bool allow_values = false;
};

struct ShapeOutcome {
  std::string shape;
  OpKind kind = OpKind::Find;
  uint64_t count = 0;
  double single = 0, multi = 0, scatter = 0;  // fractions of this shape's sampled statements
  double shards = 0;                          // mean shards touched on the simulated cluster
  double targeted_shards = 0;                 // mean over the statements that are not scatter-gather
  bool sampled = false;
  bool without_key = false;  // a write that does not pin the full key
  bool key_update = false;   // an update that modifies a key field
};

struct CandidateResult {
  std::string key_json;  // {"customerId": 1, "orderDate": 1}
  std::string label;     // {customerId: 1, orderDate: 1}
  std::vector<std::string> sources;  // current, configured, baseline, traffic
  routing::ShardKeyPattern pattern;
  bool hashed_prefix = false;

  // Distribution (analyzeShardKey's classes), shares of reads / writes / both.
  double read_single = 0, read_multi = 0, read_scatter = 0;
  double write_single = 0, write_multi = 0, write_scatter = 0;
  double targeted = 0;  // share of reads + writes that are not scatter-gather
  double single_overall = 0;
  double read_shards = 0, targeted_read_shards = 0;  // mean shards touched
  double single_writes_without_key = 0, multi_writes_without_key = 0, shard_key_updates = 0;
  std::vector<ShapeOutcome> shapes;

  // Properties.
  double cardinality = 0, prefix_cardinality = 0;
  std::string cardinality_method;
  double top_share = 0, top5_share = 0, prefix_top_share = 0;
  std::vector<std::pair<std::string, double>> top_values;  // label, share
  std::string prefix_top_label;
  double new_extreme_share = 0, rank_correlation = 0;
  bool monotonic = false;
  std::string leading_type;  // "ObjectId", "date", "number", "string", "mixed"
  std::vector<double> shard_insert_share;
  uint64_t simulated_inserts = 0;
  double max_min_ratio = 0;  // 0 when a shard got nothing (infinite)
  bool jumbo_risk = false;
  double jumbo_at_bytes = 0;

  bool pass_cardinality = true, pass_frequency = true, pass_monotonicity = true;
  std::vector<std::string> failures, warnings;
  bool passes() const { return pass_cardinality && pass_frequency && pass_monotonicity; }
};

struct NamespaceReport {
  std::string ns;
  uint32_t shards = 4;
  uint64_t reads = 0, writes = 0, inserts = 0, other_shape_ops = 0;
  double avg_doc_bytes = 0;
  size_t memory_bytes = 0;
  std::vector<ShapeOutcome> shapes;  // by count, descending (no targeting)
  std::vector<CandidateResult> candidates;  // ranked
  int recommended = -1;                     // index into candidates, -1 when nothing was observed
  bool recommended_passes = false;
  std::string defence;  // the seed-003-style text
  MigrationPlan migration;  // for the recommended key (evaluation/migration_plan.h)
};

NamespaceReport analyzeNamespace(const NamespaceState& state, const AnalysisOptions& options,
                                 const routing::ShardKeyPattern* current_key,
                                 const std::vector<std::string>& configured_keys);

// {customerId: 1, orderDate: 1} from a pattern.
std::string keyLabel(const routing::ShardKeyPattern& p);

// Events the proxy saw but did not evaluate (rendered when given).
struct ObservationCounters {
  uint64_t dropped_events = 0;      // the worker's queue was full
  uint64_t truncated_requests = 0;  // statements past the per-request cap were not observed
};
std::string renderReportsJson(const std::vector<NamespaceReport>& reports, const ObservationCounters* counters = nullptr);
std::string renderReportsText(const std::vector<NamespaceReport>& reports);

}  // namespace shardscope::evaluation
