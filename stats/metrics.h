// Every metric shardscope exports, declared once: kind, name, help text and label names (Envoy's
// ALL_MONGO_PROXY_STATS). /metrics is written only through PrometheusWriter (stats/prometheus_writer.h),
// which takes HELP, TYPE and label names from these rows; /stats reads the process counters from the
// same rows. To add a metric: add a row here, then write its samples with PrometheusWriter where the
// data lives. tests/integration/test_process_counters.py checks every counter row is named by a test.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shardscope::stats {

// COUNTER / GAUGE / HISTOGRAM(id, help, label names...): exported as shardscope_<id>, so a counter's
// id ends in _total and a histogram's in its unit (_bucket/_sum/_count are added by the writer).
#define SHARDSCOPE_METRICS(COUNTER, GAUGE, HISTOGRAM)                                                           \
  /* Per namespace and command (stats/render_prometheus.cpp) */                                                 \
  COUNTER(ops_total, "Operations by namespace, command and targeting class.", "ns", "command", "targeting")     \
  COUNTER(hosts_targeted_ops_total,                                                                             \
          "Operations by namespace, command and MongoDB's count class (oneShard, manyShards, allShards, "      \
          "unsharded, none).",                                                                                  \
          "ns", "command", "hosts")                                                                             \
  COUNTER(op_errors_total,                                                                                      \
          "Error codes in replies (ok:0, writeErrors, writeConcernError) by namespace and command.", "ns",     \
          "command", "code")                                                                                    \
  COUNTER(received_bytes_total, "Request bytes from clients by namespace and command.", "ns", "command")        \
  COUNTER(sent_bytes_total, "Reply bytes to clients by namespace and command.", "ns", "command")                \
  HISTOGRAM(op_latency_seconds, "Time from request forwarded to reply received, by namespace and command.",     \
            "ns", "command")                                                                                    \
  HISTOGRAM(op_shards_touched, "Shards each operation was sent to, by namespace and command.", "ns", "command") \
  /* Per query shape */                                                                                         \
  COUNTER(shape_ops_total,                                                                                      \
          "Operations per query shape (top shapes by count; shape_id=\"rest\" sums the others).", "ns",        \
          "command", "shape_id", "targeting")                                                                   \
  GAUGE(shape_info, "The text of each exported query shape (value always 1).", "ns", "command", "shape_id",     \
        "shape")                                                                                                \
  COUNTER(untargetable_upserts_total,                                                                           \
          "Upsert statements (update upsert:true, findAndModify upsert) whose filter does not pin the full "   \
          "current shard key: refused by mongos before 7.1, two-phase broadcast after. Per query shape (top "  \
          "shapes; shape_id=\"rest\" sums the others).",                                                      \
          "ns", "command", "shape_id")                                                                          \
  /* Per shard, by shard name */                                                                                \
  COUNTER(shard_ops_total, "Operations sent to each shard.", "shard")                                           \
  COUNTER(namespace_shard_ops_total,                                                                            \
          "Operations of each namespace sent to each shard, by MongoDB's count class (hosts=\"oneShard\": sent "  \
          "there by the shard key alone, the load hotness is judged on); the busiest namespaces, the rest as "   \
          "ns=\"<other>\".",                                                                                     \
          "ns", "shard", "hosts")                                                                               \
  /* Whole process */                                                                                           \
  COUNTER(targeting_ops_total, "Operations by targeting class, all namespaces.", "targeting")                   \
  COUNTER(hosts_targeted_total, "Operations by MongoDB's count class, all namespaces.", "hosts")                \
  GAUGE(targeted_share,                                                                                         \
        "oneShard / (oneShard + manyShards + allShards) since the last reset: the share /stats, the dashboard " \
        "and the CLI show.")                                                                                    \
  GAUGE(all_shards_share,                                                                                       \
        "allShards / (oneShard + manyShards + allShards) since the last reset: the broadcast share /stats "    \
        "(allShardsShare), the dashboard and the CLI show.")                                                   \
  COUNTER(replies_total, "Replies received from the upstream.")                                                 \
  COUNTER(reply_errors_total, "Replies carrying an error (ok:0, writeErrors, writeConcernError).")              \
  GAUGE(stats_shapes_tracked, "Distinct query shapes in the catalog (incl. other buckets).")                    \
  GAUGE(stats_max_shapes_per_namespace, "The configured cap on shapes per namespace.")                          \
  GAUGE(stats_namespaces_at_cap, "Namespaces whose new shapes go to the other bucket.")                         \
  COUNTER(stats_other_ops_total, "Operations counted in other buckets (shape cap reached).")                    \
  COUNTER(stats_other_namespace_ops_total,                                                                      \
          "Operations counted under ns=\"<other>\": a namespace outside the routing table, met after "        \
          "max_namespaces such names were kept (included in stats_other_ops_total).")                          \
  GAUGE(start_time_seconds, "Unix time the proxy started.")                                                     \
  GAUGE(build_info, "The version shardscope was built from (value always 1).", "version")                       \
  /* The upstream mongos pool (proxy/proxy_setup.cpp) */                                                        \
  GAUGE(upstream_up, "Whether the proxy can connect to this mongos (1) or not (0).", "address")                 \
  GAUGE(upstreams_up, "mongos hosts the proxy can connect to; 0: every client operation fails.")                \
  GAUGE(healthy,                                                                                                \
        "1 when the component works, 0 when not: upstream (a mongos is reachable), discovery (the last "       \
        "routing refresh succeeded; only with routing.discovery), reload (the last live reload was applied; "   \
        "once one was tried). /stats \"health\" says why.",                                                     \
        "component")                                                                                            \
  /* Routing discovery (cluster/discovery_status.cpp) */                                                        \
  COUNTER(routing_refreshes_total, "Routing discovery reads of config.* (successful or not).")                 \
  COUNTER(routing_refresh_failures_total, "Routing discovery reads that failed.")                              \
  GAUGE(routing_last_refresh_success_timestamp_seconds,                                                         \
        "Unix time of the last successful routing read (0: never).")                                           \
  GAUGE(routing_chunks, "Chunks in the routing table discovery holds.")                                         \
  /* The routing table in force (admin/admin_setup.cpp, from proxy::RoutingState) */                            \
  GAUGE(routing_generation,                                                                                     \
        "Which load of the routing table is in force: 1 for the first, +1 per reload or discovery refresh "    \
        "that published one (0: none yet). /stats and /evaluate state it as routing.generation.")               \
  GAUGE(routing_loaded_timestamp_seconds, "Unix time the routing table in force was published (0: none yet).")   \
  /* Fleet publishing of evaluation sketches (cluster/sketch_publisher.cpp) */                                    \
  COUNTER(evaluation_publish_total, "Sketch publications to evaluation.publish.collection, by outcome.",       \
          "outcome")                                                                                            \
  /* Lookup rewrites (features/rewrite_feature.cpp) */                                                          \
  COUNTER(rewrites_total, "Lookup rewrites applied, by namespace and the targeting before the rewrite.", "ns", "before")  \
  COUNTER(rewrite_fallbacks_total, "Rewritten commands re-run as written, by cause.", "ns", "cause")            \
  GAUGE(rewrite_mappings, "Mappings held in memory.", "ns")                                                     \
  GAUGE(rewrite_ambiguous, "Lookup values seen with two different added values (never rewritten).", "ns")       \
  GAUGE(rewrite_mapping_bytes, "Bytes the mapping holds (bounded by the rule's max_bytes).", "ns")             \
  /* Mirror (shadow/mirror.cpp, shadow/divergence_stats.cpp) */                                                  \
  COUNTER(mirror_requests_total, "Requests seen by the mirror, by what happened to them.", "outcome")           \
  GAUGE(mirror_queue_depth, "Mirrored requests waiting for the shadow.")                                        \
  GAUGE(mirror_queue_capacity, "Size of the mirror queue (requests beyond it are dropped).")                    \
  COUNTER(mirror_comparisons_total, "Shadow replies compared with the primary's.")                              \
  COUNTER(mirror_divergent_total, "Comparisons where the shadow answered differently.")                         \
  COUNTER(mirror_divergences_total, "Divergences by kind (one comparison may have several).", "kind")           \
  COUNTER(mirror_shape_divergences_total,                                                                       \
          "Mirrored operations whose shadow reply differed, per query shape (top shapes; shape_id=\"rest\" "   \
          "sums the others).",                                                                                  \
          "ns", "command", "shape_id", "primary_targeting", "shadow_targeting")                                 \
  COUNTER(mirror_shape_compared_total,                                                                          \
          "Mirrored operations whose replies were compared, per query shape (top shapes).", "ns", "command",   \
          "shape_id", "primary_targeting", "shadow_targeting")                                                  \
  /* Fault injection and capture */                                                                             \
  COUNTER(faults_injected_total, "Operations delayed or failed by fault injection.", "kind")                    \
  COUNTER(capture_records_total, "Records written to the capture file.")                                        \
  COUNTER(capture_bytes_total, "Bytes written to the capture file(s).")                                         \
  COUNTER(capture_dropped_total, "Records not captured (queue full, size limit reached).", "reason")            \
  GAUGE(capture_segments, "Capture file segments written (rotation).")

// Process-wide counters and gauges kept as atomics in ProcessCounters (stats/process_counters.h) and
// shown in /stats "process" too. COUNTER(name, help) is exported as shardscope_<name>_total, GAUGE as
// shardscope_<name>. Bumped per connection or per fault, never per operation.
#define SHARDSCOPE_PROCESS_COUNTERS(COUNTER, GAUGE)                                                               \
  COUNTER(connections_opened, "Client connections accepted by the proxy.")                                        \
  COUNTER(connections_closed, "Client connections closed.")                                                       \
  COUNTER(connections_refused, "Client connections closed at once: max_connections or out of descriptors.")       \
  GAUGE(connections_active, "Client connections currently open.")                                                 \
  COUNTER(decode_errors, "Client messages that could not be framed or decoded.")                                  \
  COUNTER(unparsed_messages,                                                                                      \
          "Messages forwarded without targeting: none since legacy opcodes are refused (kept for the schema).")  \
  COUNTER(pending_limit_refusals,                                                                                 \
          "Client requests answered with an error: their connection already had 4,096 requests in flight.")       \
  COUNTER(analysis_over_budget,                                                                                   \
          "Operations too large to analyse within the per-request budget (counted as broadcast).")               \
  COUNTER(upstream_connect_failures, "Failed attempts to connect to the upstream.")                               \
  COUNTER(upstream_errors, "Upstream connections that failed after being established.")                           \
  COUNTER(evaluation_dropped_events,                                                                              \
          "Observed events not evaluated because the evaluation worker's queue was full.")                       \
  COUNTER(mirror_dropped, "Messages not mirrored because the mirror queue was full.")                             \
  COUNTER(admin_requests, "Requests served by the admin HTTP endpoint.")                                          \
  COUNTER(admin_rejected, "Admin requests rejected (401, 404, 405, 413, 414, 431), or connections refused.")      \
  COUNTER(admin_connections_replaced,                                                                             \
          "Admin connections still waiting for a request, closed for a new one at the cap.")

// The standard process_* metrics of Prometheus client libraries (stats/process_metrics.cpp): exported
// under these exact names, without the shardscope_ prefix.
#define SHARDSCOPE_STANDARD_PROCESS_METRICS(COUNTER, GAUGE)                                \
  COUNTER(process_cpu_seconds_total, "Total user and system CPU time spent in seconds.")   \
  GAUGE(process_open_fds, "Number of open file descriptors.")                              \
  GAUGE(process_max_fds, "Maximum number of open file descriptors.")                       \
  GAUGE(process_virtual_memory_bytes, "Virtual memory size in bytes.")                     \
  GAUGE(process_resident_memory_bytes, "Resident memory size in bytes.")                   \
  GAUGE(process_start_time_seconds, "Start time of the process since unix epoch in seconds.")

// Generated from the rows above: Metric::ops_total, Metric::connections_opened_total,
// Metric::process_open_fds, ...
enum class Metric : uint16_t {
#define SHARDSCOPE_METRIC_ID(id, ...) id,
#define SHARDSCOPE_PROCESS_COUNTER_ID(name, help) name##_total,
#define SHARDSCOPE_PROCESS_GAUGE_ID(name, help) name,
  SHARDSCOPE_METRICS(SHARDSCOPE_METRIC_ID, SHARDSCOPE_METRIC_ID, SHARDSCOPE_METRIC_ID)
  SHARDSCOPE_PROCESS_COUNTERS(SHARDSCOPE_PROCESS_COUNTER_ID, SHARDSCOPE_PROCESS_GAUGE_ID)
  SHARDSCOPE_STANDARD_PROCESS_METRICS(SHARDSCOPE_METRIC_ID, SHARDSCOPE_METRIC_ID)
#undef SHARDSCOPE_METRIC_ID
#undef SHARDSCOPE_PROCESS_COUNTER_ID
#undef SHARDSCOPE_PROCESS_GAUGE_ID
  kCount
};

enum class MetricType : uint8_t { Counter, Gauge, Histogram };

constexpr size_t kMaxMetricLabels = 6;

struct MetricDef {
  std::string_view name;  // as exported
  MetricType type;
  std::string_view help;
  std::array<std::string_view, kMaxMetricLabels> labels;  // declared order; unused slots empty
  size_t labelCount() const {
    size_t n = 0;
    while (n < labels.size() && !labels[n].empty()) ++n;
    return n;
  }
  std::string_view typeName() const {
    return type == MetricType::Counter ? "counter" : type == MetricType::Gauge ? "gauge" : "histogram";
  }
};

// The one table, indexed by Metric.
inline constexpr MetricDef kMetricDefs[] = {
#define SHARDSCOPE_DEF_COUNTER(id, help, ...) {"shardscope_" #id, MetricType::Counter, help, {__VA_ARGS__}},
#define SHARDSCOPE_DEF_GAUGE(id, help, ...) {"shardscope_" #id, MetricType::Gauge, help, {__VA_ARGS__}},
#define SHARDSCOPE_DEF_HISTOGRAM(id, help, ...) {"shardscope_" #id, MetricType::Histogram, help, {__VA_ARGS__}},
#define SHARDSCOPE_DEF_PROCESS_COUNTER(name, help) {"shardscope_" #name "_total", MetricType::Counter, help, {}},
#define SHARDSCOPE_DEF_PROCESS_GAUGE(name, help) {"shardscope_" #name, MetricType::Gauge, help, {}},
#define SHARDSCOPE_DEF_STANDARD_COUNTER(id, help) {#id, MetricType::Counter, help, {}},
#define SHARDSCOPE_DEF_STANDARD_GAUGE(id, help) {#id, MetricType::Gauge, help, {}},
    SHARDSCOPE_METRICS(SHARDSCOPE_DEF_COUNTER, SHARDSCOPE_DEF_GAUGE, SHARDSCOPE_DEF_HISTOGRAM)
    SHARDSCOPE_PROCESS_COUNTERS(SHARDSCOPE_DEF_PROCESS_COUNTER, SHARDSCOPE_DEF_PROCESS_GAUGE)
    SHARDSCOPE_STANDARD_PROCESS_METRICS(SHARDSCOPE_DEF_STANDARD_COUNTER, SHARDSCOPE_DEF_STANDARD_GAUGE)
#undef SHARDSCOPE_DEF_COUNTER
#undef SHARDSCOPE_DEF_GAUGE
#undef SHARDSCOPE_DEF_HISTOGRAM
#undef SHARDSCOPE_DEF_PROCESS_COUNTER
#undef SHARDSCOPE_DEF_PROCESS_GAUGE
#undef SHARDSCOPE_DEF_STANDARD_COUNTER
#undef SHARDSCOPE_DEF_STANDARD_GAUGE
};
static_assert(std::size(kMetricDefs) == static_cast<size_t>(Metric::kCount));

constexpr const MetricDef& metricDef(Metric m) { return kMetricDefs[static_cast<size_t>(m)]; }

}  // namespace shardscope::stats
