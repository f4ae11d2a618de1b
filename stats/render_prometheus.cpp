#include <cstdio>
#include <map>
#include <tuple>

#include "stats/render.h"

namespace shardscope::stats {
namespace {

constexpr std::string_view kTargetingNames[kTargetingCount] = {"single",    "multi",         "broadcast",
                                                               "unsharded", "no_collection", "unclassified"};

std::string escapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Exposition {
 public:
  explicit Exposition(std::string& out) : out_(out) {}
  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  // `labels` is already rendered: k="v",k2="v2" (may be empty).
  void sample(std::string_view name, std::string_view labels, uint64_t v) { sampleText(name, labels, std::to_string(v)); }
  void sample(std::string_view name, std::string_view labels, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    sampleText(name, labels, buf);
  }
  void sampleText(std::string_view name, std::string_view labels, std::string_view v) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(v).append("\n");
  }

 private:
  std::string& out_;
};

std::string label(std::string_view k, std::string_view v) { return std::string(k) + "=\"" + escapeLabel(v) + "\""; }

// Per (namespace, command): everything the shapes of that pair add up to.
struct CommandAggregate {
  ShapeCounters counters;
  std::map<int32_t, uint64_t> errorCodes;
};

// Exported latency bounds: 1, 2.5 and 5 per decade (an exact subset of the internal buckets).
bool exportedLatencyBound(size_t i) {
  uint64_t b = LatencyBounds::kNs[i];
  while (b >= 100 && b % 10 == 0) b /= 10;
  return b == 10 || b == 25 || b == 50 || b == 1;
}

std::string secondsText(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

std::string renderPrometheus(const Snapshot& snap, const std::vector<std::string>& shardNames) {
  std::string out;
  out.reserve(8192 + snap.shapes.size() * 300);
  Exposition e(out);

  std::map<std::pair<std::string, std::string>, CommandAggregate> byCommand;
  for (const auto& s : snap.shapes) {
    auto& agg = byCommand[{s.ns, s.command}];
    agg.counters += s.counters;
    for (const auto& [code, n] : s.errorCodes) agg.errorCodes[code] += n;
    if (s.otherErrorCodes) agg.errorCodes[-1] += s.otherErrorCodes;  // code="-1": codes past the per-shape slots
  }
  auto pairLabels = [](const std::pair<std::string, std::string>& k) {
    return label("ns", k.first) + "," + label("command", k.second);
  };

  e.header("shardscope_ops_total", "counter", "Operations by namespace, command and targeting class.");
  for (const auto& [k, agg] : byCommand)
    for (size_t t = 0; t < kTargetingCount; ++t)
      if (agg.counters.byTargeting[t])
        e.sample("shardscope_ops_total", pairLabels(k) + "," + label("targeting", kTargetingNames[t]),
                 agg.counters.byTargeting[t]);

  // MongoDB's count-based classes (serverStatus().shardingStatistics.numHostsTargeted): one label
  // with five fixed values, so the series stay as bounded as shardscope_ops_total's.
  e.header("shardscope_hosts_targeted_ops_total", "counter",
           "Operations by namespace, command and MongoDB's count class (oneShard, manyShards, allShards, unsharded, none).");
  for (const auto& [k, agg] : byCommand)
    for (size_t h = 0; h < kHostsTargetedCount; ++h)
      if (agg.counters.byHosts[h])
        e.sample("shardscope_hosts_targeted_ops_total", pairLabels(k) + "," + label("hosts", kHostsTargetedNames[h]),
                 agg.counters.byHosts[h]);

  e.header("shardscope_op_errors_total", "counter",
           "Error codes in replies (ok:0, writeErrors, writeConcernError) by namespace and command.");
  for (const auto& [k, agg] : byCommand)
    for (const auto& [code, n] : agg.errorCodes)
      e.sample("shardscope_op_errors_total", pairLabels(k) + "," + label("code", std::to_string(code)), n);

  e.header("shardscope_received_bytes_total", "counter", "Request bytes from clients by namespace and command.");
  for (const auto& [k, agg] : byCommand) e.sample("shardscope_received_bytes_total", pairLabels(k), agg.counters.bytesIn);
  e.header("shardscope_sent_bytes_total", "counter", "Reply bytes to clients by namespace and command.");
  for (const auto& [k, agg] : byCommand) e.sample("shardscope_sent_bytes_total", pairLabels(k), agg.counters.bytesOut);

  e.header("shardscope_op_latency_seconds", "histogram",
           "Time from request forwarded to reply received, by namespace and command.");
  for (const auto& [k, agg] : byCommand) {
    const LatencyHistogram& h = agg.counters.latency;
    std::string base = pairLabels(k);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < LatencyBounds::kFinite; ++i) {
      cumulative += h.counts[i];
      if (exportedLatencyBound(i))
        e.sample("shardscope_op_latency_seconds_bucket", base + ",le=\"" + secondsText(LatencyBounds::kNs[i]) + "\"",
                 cumulative);
    }
    uint64_t n = h.total();
    e.sample("shardscope_op_latency_seconds_bucket", base + ",le=\"+Inf\"", n);
    e.sample("shardscope_op_latency_seconds_sum", base, static_cast<double>(h.sum) / 1e9);
    e.sample("shardscope_op_latency_seconds_count", base, n);
  }

  e.header("shardscope_op_shards_touched", "histogram", "Shards each operation was sent to, by namespace and command.");
  for (const auto& [k, agg] : byCommand) {
    const FanoutHistogram& h = agg.counters.fanout;
    std::string base = pairLabels(k);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < FanoutBounds::kShards.size(); ++i) {
      cumulative += h.counts[i];
      uint32_t b = FanoutBounds::kShards[i];
      if (b <= 8 || b == 12 || b >= 16)
        e.sample("shardscope_op_shards_touched_bucket", base + ",le=\"" + std::to_string(b) + "\"", cumulative);
    }
    uint64_t n = h.total();
    e.sample("shardscope_op_shards_touched_bucket", base + ",le=\"+Inf\"", n);
    e.sample("shardscope_op_shards_touched_sum", base, h.sum);
    e.sample("shardscope_op_shards_touched_count", base, n);
  }

  // Per shape: only the top N by count get their own series; the rest of each (ns, command) is
  // summed under shape_id="rest", so the series count stays bounded whatever the cap.
  e.header("shardscope_shape_ops_total", "counter",
           "Operations per query shape (top shapes by count; shape_id=\"rest\" sums the others).");
  std::map<std::tuple<std::string, std::string, size_t>, uint64_t> rest;
  size_t listed = 0;
  for (const auto& s : snap.shapes) {
    if (listed >= snap.prometheusTopShapes) {
      for (size_t t = 0; t < kTargetingCount; ++t)
        if (s.counters.byTargeting[t]) rest[{s.ns, s.command, t}] += s.counters.byTargeting[t];
      continue;
    }
    ++listed;
    std::string base = label("ns", s.ns) + "," + label("command", s.command) + "," + label("shape_id", shapeIdHex(s.hash));
    for (size_t t = 0; t < kTargetingCount; ++t)
      if (s.counters.byTargeting[t])
        e.sample("shardscope_shape_ops_total", base + "," + label("targeting", kTargetingNames[t]), s.counters.byTargeting[t]);
  }
  for (const auto& [k, n] : rest)
    e.sample("shardscope_shape_ops_total",
             label("ns", std::get<0>(k)) + "," + label("command", std::get<1>(k)) + ",shape_id=\"rest\"," +
                 label("targeting", kTargetingNames[std::get<2>(k)]),
             n);

  e.header("shardscope_shape_info", "gauge", "The text of each exported query shape (value always 1).");
  listed = 0;
  for (const auto& s : snap.shapes) {
    if (listed++ >= snap.prometheusTopShapes) break;
    e.sample("shardscope_shape_info",
             label("ns", s.ns) + "," + label("command", s.command) + "," + label("shape_id", shapeIdHex(s.hash)) + "," +
                 label("shape", s.shape),
             uint64_t{1});
  }

  e.header("shardscope_shard_ops_total", "counter", "Operations sent to each shard.");
  for (size_t i = 0; i < std::max(snap.shardOps.size(), shardNames.size()); ++i)
    e.sample("shardscope_shard_ops_total", label("shard", shardName(shardNames, i)),
             i < snap.shardOps.size() ? snap.shardOps[i] : uint64_t{0});

  e.header("shardscope_targeting_ops_total", "counter", "Operations by targeting class, all namespaces.");
  for (size_t t = 0; t < kTargetingCount; ++t)
    e.sample("shardscope_targeting_ops_total", label("targeting", kTargetingNames[t]), snap.totals.byTargeting[t]);

  e.header("shardscope_hosts_targeted_total", "counter", "Operations by MongoDB's count class, all namespaces.");
  for (size_t h = 0; h < kHostsTargetedCount; ++h)
    e.sample("shardscope_hosts_targeted_total", label("hosts", kHostsTargetedNames[h]), snap.totals.byHosts[h]);
  e.header("shardscope_targeted_share", "gauge",
           "oneShard / (oneShard + manyShards + allShards) since the last reset: the share /stats, the dashboard and the CLI show.");
  e.sample("shardscope_targeted_share", "", targetedShare(snap.totals.byHosts));

  e.header("shardscope_replies_total", "counter", "Replies received from the upstream.");
  e.sample("shardscope_replies_total", "", snap.totals.replies);
  e.header("shardscope_reply_errors_total", "counter", "Replies carrying an error (ok:0, writeErrors, writeConcernError).");
  e.sample("shardscope_reply_errors_total", "", snap.totals.errors);

  uint64_t otherOps = 0;
  size_t atCap = 0;
  for (const auto& s : snap.shapes)
    if (s.other) otherOps += s.counters.count;
  for (const auto& ns : snap.namespaces) atCap += ns.atCap ? 1 : 0;
  e.header("shardscope_stats_shapes_tracked", "gauge", "Distinct query shapes in the catalog (incl. other buckets).");
  e.sample("shardscope_stats_shapes_tracked", "", static_cast<uint64_t>(snap.shapesTracked));
  e.header("shardscope_stats_max_shapes_per_namespace", "gauge", "The configured cap on shapes per namespace.");
  e.sample("shardscope_stats_max_shapes_per_namespace", "", static_cast<uint64_t>(snap.maxShapesPerNamespace));
  e.header("shardscope_stats_namespaces_at_cap", "gauge", "Namespaces whose new shapes go to the other bucket.");
  e.sample("shardscope_stats_namespaces_at_cap", "", static_cast<uint64_t>(atCap));
  e.header("shardscope_stats_other_ops_total", "counter", "Operations counted in other buckets (shape cap reached).");
  e.sample("shardscope_stats_other_ops_total", "", otherOps);

  for (const auto& p : snap.process) {
    std::string name = std::string("shardscope_") + p.name + (p.counter ? "_total" : "");
    e.header(name, p.counter ? "counter" : "gauge", p.help);
    e.sampleText(name, "", std::to_string(p.value));
  }
  e.header("shardscope_start_time_seconds", "gauge", "Unix time the proxy started.");
  e.sample("shardscope_start_time_seconds", "", static_cast<double>(snap.startedMs) / 1000.0);
  return out;
}

}  // namespace shardscope::stats
