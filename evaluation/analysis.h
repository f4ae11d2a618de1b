// Evaluation of candidate shard keys for one namespace from its NamespaceState: candidates from
// the routing table, the config, and the traffic; per candidate the analyzeShardKey-style read and
// write distribution, cardinality, frequency, monotonicity, a simulated N-shard cluster and jumbo
// risk; then a ranking and the written defence.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evaluation/migration_plan.h"
#include "evaluation/namespace_state.h"
#include "evaluation/sampled_filter.h"
#include "rewrite/lookup_rule.h"
#include "routing/routing_load.h"
#include "routing/routing_table.h"
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
  double hot_shard_ratio = 1.5;             // seed 002: a shard at max/min above this is hot
  double max_key_update_share = 0.01;       // of writes: key updates / untargetable upserts fail at this
  bool allow_values = false;
  std::vector<rewrite::LookupRule> lookup_rules;  // lookup rewrites in force (per namespace)
  const rewrite::LookupRule* lookup_rule = nullptr;  // the one of the namespace being analysed
  // Default collations the sidecar saw (create, listCollections), by namespace; the routing table
  // tells those of the collections it lists. `default_collation`: the namespace being analysed's.
  std::map<std::string, DefaultCollation, std::less<>> default_collations;
  DefaultCollation default_collation = DefaultCollation::Unknown;
};

struct ShapeOutcome {
  uint64_t id = 0;  // common::shapeId: the same id as in /stats, /mirror, captures and /metrics
  std::string shape;
  OpKind kind = OpKind::Find;
  uint64_t count = 0;     // statements (ShapeState::count)
  uint64_t commands = 0;  // commands: /stats' count under the same id (ShapeState::commands)
  double single = 0, multi = 0, scatter = 0;  // fractions of this shape's sampled statements
  double shards = 0;                          // mean shards touched on the simulated cluster
  double targeted_shards = 0;                 // mean over the statements that are not scatter-gather
  bool sampled = false;
  bool without_key = false;  // a write that does not pin the full key
  bool key_update = false;   // an update that modifies a key field
  double key_update_share = 0;  // of the shape's statements, those that do
  bool upsert = false;
  bool refused_before_71 = false;      // single-document write reaching neither one shard nor an exact _id
                                       // (an upsert: not pinning the full key), as the rewrite sends it
  double scatter_after_rewrite = 0;    // with the lookup rewrite in force
  bool rescued = false;                // the rewrite turns it from scatter-gather into targeted
};

struct CandidateResult {
  std::string key_json;  // {"customerId": 1, "orderDate": 1}
  std::string label;     // {customerId: 1, orderDate: 1}
  std::vector<std::string> sources;  // current, configured, baseline, traffic
  routing::ShardKeyPattern pattern;
  bool hashed_prefix = false;
  // A hashed non-prefix field after a prefix with no more values than the simulated shards
  // ({region: 1, _id: "hashed"}, 3 regions on 4): in effect the hashed field. Each prefix value
  // averages at least a shard's fair share of the documents, so a query on the prefix alone reads
  // at least a shard's worth, in chunks the balancer spreads over the shards (nothing keeps them
  // together without zones): the ranking counts such multi-shard routes as broadcasts (rankScore).
  bool coarse_prefix = false;

  // Distribution (analyzeShardKey's classes), shares of reads / writes / both.
  double read_single = 0, read_multi = 0, read_scatter = 0;
  double write_single = 0, write_multi = 0, write_scatter = 0;
  double targeted = 0;  // share of reads + writes that are not scatter-gather
  double single_overall = 0;
  double multi_overall = 0;  // share of reads + writes routed to several shards, not all
  double read_shards = 0, targeted_read_shards = 0;  // mean shards touched
  double single_writes_without_key = 0, multi_writes_without_key = 0, shard_key_updates = 0;
  double upserts_without_key = 0;             // of writes: upserts whose filter does not pin the full key
  double upserts_without_key_of_upserts = 0;  // the same, of upserts
  double multi_upserts_without_key = 0;       // of writes: those of them that are updateMany upserts (refused
                                              // by every release: two-phase covers single-document writes)
  double refused_before_71 = 0;               // of writes (see ShapeOutcome)
  double refused_share_of_all = 0;            // the same, of reads and writes
  // Of reads and writes: those carrying no collation that target only if the collection's default
  // collation, which the sidecar did not see, is simple (as taken); a non-simple one broadcasts them.
  double collation_assumed = 0;
  // Of reads and writes: those carrying no collation that the collection's non-simple default
  // collation makes scatter-gather, and that `collation: {locale: "simple"}` would target.
  double collation_broadcast = 0;
  uint64_t reads_sampled = 0, writes_sampled = 0;
  std::vector<ShapeOutcome> shapes;
  // The lookup rewrite: targeted share as it would be after it, and the shapes it rescues.
  bool rewrite_in_force = false;
  double targeted_after_rewrite = 0;
  std::vector<std::string> rescued_shapes;
  // Reads and writes per simulated chunk (analyzeShardKey's numReadsByRange / numWritesByRange).
  std::vector<double> range_reads, range_writes;

  // Properties.
  double cardinality = 0, prefix_cardinality = 0;
  std::string cardinality_method;
  double top_share = 0, top5_share = 0, prefix_top_share = 0;
  std::vector<std::pair<std::string, double>> top_values;  // label, share
  std::string prefix_top_label;
  double lead_absent_share = 0;  // documents without the leading field: mongos keys each as null, one value
  double new_extreme_share = 0, rank_correlation = 0;
  // The largest prefix value's suffix (compound ranged keys): distinct full keys among its sampled
  // documents, and whether its suffix grows with arrival.
  double suffix_distinct = 0;
  size_t suffix_samples = 0;
  bool suffix_monotonic = false;
  double array_share = 0;  // documents with an array on a key path (refused by MongoDB)
  // Shares of reads and writes whose filters pin the leading key field by equality, or bound it
  // by a range only (a range on a hashed field broadcasts).
  double lead_eq_share = 0, lead_range_share = 0;
  std::string split_on;    // what the simulated cluster's chunks split on
  // A compound key shown with its prefix's inserts per shard: its largest prefix value's suffix
  // rises, so each prefix value's new documents land in one chunk (candidate_figures.cpp).
  bool inserts_follow_prefix = false;
  std::string frequency_reason;  // why frequency fails, from the numbers shown
  bool monotonic = false;
  std::string leading_type;  // "ObjectId", "date", "number", "string", "mixed"
  std::vector<double> shard_insert_share;
  uint64_t simulated_inserts = 0;
  double max_min_ratio = 0;  // 0 when a shard got nothing (infinite)
  bool jumbo_risk = false;
  double jumbo_at_bytes = 0;

  // False when the exports merged do not carry this key's facts: no figure of it is shown or
  // ranked, `not_evaluable` says why.
  bool evaluable = true;
  std::string not_evaluable;

  bool pass_cardinality = true, pass_frequency = true, pass_monotonicity = true;
  bool pass_mutability = true, pass_upserts = true, pass_arrays = true;
  std::vector<std::string> failures, warnings;
  bool passes() const {
    return pass_cardinality && pass_frequency && pass_monotonicity && pass_mutability && pass_upserts && pass_arrays;
  }
};

struct NamespaceReport {
  std::string ns;
  uint32_t shards = 4;
  uint64_t reads = 0, writes = 0, inserts = 0, other_shape_ops = 0;
  uint64_t upserted = 0, upserts_matched = 0, replacements = 0;
  bool rewrite_in_force = false;
  rewrite::LookupRule lookup_rule;
  DefaultCollation default_collation = DefaultCollation::Unknown;  // the collection's, as far as the sidecar saw it
  double avg_doc_bytes = 0;
  size_t memory_bytes = 0;
  std::vector<ShapeOutcome> shapes;  // by count, descending (no targeting)
  std::vector<CandidateResult> candidates;  // ranked
  int recommended = -1;                     // index into candidates, -1 when nothing was observed
  std::string no_recommendation;            // why nothing is recommended although traffic was observed
  uint32_t facts_from_exports = 0;          // sidecar exports merged (0: this process' own samples)
  bool recommended_passes = false;
  std::string defence;  // the seed-003-style text
  MigrationPlan migration;  // for the recommended key (evaluation/migration_plan.h)
  // The current key's real chunks (routing table): reads, writes and inserts per chunk, the
  // busiest first (analyzeShardKey's numReadsByRange / numWritesByRange on the current ranges).
  struct HotRange {
    size_t chunk = 0;
    uint16_t shard = 0;
    double reads = 0, writes = 0, inserts = 0;
  };
  size_t current_chunks = 0;
  std::vector<HotRange> hot_ranges;
};

// The shapes whose filters propose candidate keys: the most frequent ones.
constexpr size_t kRankedShapes = 12;
// Candidate keys whose facts a sidecar exports (its own candidates first).
constexpr size_t kExportedCandidates = 48;

// Candidate keys (canonical JSON, with their sources: current, configured, baseline, traffic),
// proposed from the `max_shapes` most frequent shapes, at most `max_candidates`.
std::vector<std::pair<std::string, std::vector<std::string>>> candidateKeys(const NamespaceState& state,
                                                                           const routing::ShardKeyPattern* current_key,
                                                                           const std::vector<std::string>& configured_keys,
                                                                           size_t max_shapes, size_t max_candidates);

// `current_routing`: the current key's chunks, when the routing table has them (hot ranges).
NamespaceReport analyzeNamespace(const NamespaceState& state, const AnalysisOptions& options,
                                 const routing::ShardKeyPattern* current_key,
                                 const std::vector<std::string>& configured_keys,
                                 const routing::CollectionRouting* current_routing = nullptr);

// A collection's default collation: the routing table's for a collection it lists (from
// config.collections), else what a create or listCollections reply showed (opt.default_collations),
// else unknown.
DefaultCollation defaultCollationOf(std::string_view ns, const AnalysisOptions& opt,
                                    const routing::CollectionRouting* current_routing);

// {customerId: 1, orderDate: 1} from a pattern.
std::string keyLabel(const routing::ShardKeyPattern& p);

// What the ranking compares after the properties: the share targeted (after the lookup rewrite),
// less the single-document writes refused before 7.1, less the multi-shard routes of a coarse
// prefix (CandidateResult::coarse_prefix).
double rankScore(const CandidateResult& c);

// The ranking's steps, in order: the step at which `a` ranks before `b`, or None when it does not
// (the sort and the defence's "loses on" read the same rule).
enum class RankStep { None, Evaluable, Passes, Failures, Score, Current, Warnings, Locality, Cardinality, SingleShard, KeyLength };
RankStep rankedBefore(const CandidateResult& a, const CandidateResult& b);

// A share as the reports print it: "12.3%", two decimals below 0.1% so a small share does not read 0.0%.
std::string percentText(double share);

// Events the proxy saw but did not evaluate (rendered when given).
struct ObservationCounters {
  uint64_t dropped_events = 0;      // the worker's queue was full
  uint64_t truncated_requests = 0;  // statements past the per-request cap were not observed
  uint64_t refused_inserts = 0;     // inserted documents the reply said were not created
  uint64_t unproven_inserts = 0;    // counted as sent: no reply proved them (w:0, closed, over the bound)
  uint64_t retried_inserts = 0;     // a retried retryable insert's documents, counted by an earlier attempt
  uint64_t transaction_writes_pending = 0;  // written in transactions whose commit is not answered yet
  uint64_t transaction_writes_outcome_unknown = 0;  // written in transactions whose commit's answer never came
};
// `since_ms`: unix ms the observation began (the sidecar's start or POST /evaluate/reset; a fleet
// merge: the earliest sidecar's), stated as "observedSince" / the text's first line; 0: not known.
// `load`: the load of the routing table the current keys came from (stated as "routing" when one is
// in force; a fleet merge has none of its own).
std::string renderReportsJson(const std::vector<NamespaceReport>& reports, const ObservationCounters* counters = nullptr,
                              int64_t since_ms = 0, const routing::RoutingLoad* load = nullptr);
std::string renderReportsText(const std::vector<NamespaceReport>& reports, int64_t since_ms = 0);

}  // namespace shardscope::evaluation
