// /metrics for the routing statistics: every family is declared in stats/metrics.h and written
// through PrometheusWriter.
#include <cstdio>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/bounded_name.h"
#include "stats/prometheus_writer.h"
#include "stats/render.h"

namespace shardscope::stats {
namespace {

constexpr std::string_view kTargetingNames[kTargetingCount] = {"single",    "multi",         "broadcast",
                                                               "unsharded", "no_collection", "unclassified"};
constexpr std::string_view kOther = common::kOtherName;

using PairLabels = std::pair<std::string_view, std::string_view>;  // (ns, command)

// The (namespace, command) pairs with series of their own: the busiest snap.prometheusTopPairs;
// the others are summed under ns="<other>", command="<other>". Names are bounded in bytes where
// they are kept; this bounds how many pairs a page lists, so the page stays bounded whatever
// names and how many of them clients send.
class PairSeries {
 public:
  explicit PairSeries(const Snapshot& snap) {
    std::map<PairLabels, uint64_t> ops;
    for (const auto& s : snap.shapes) ops[{s.ns, s.command}] += s.counters.count;
    std::vector<std::pair<PairLabels, uint64_t>> ranked(ops.begin(), ops.end());
    if (ranked.size() > snap.prometheusTopPairs) {
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      ranked.resize(snap.prometheusTopPairs);
    }
    for (const auto& [pair, n] : ranked) listed_.insert(pair);
  }
  // The labels operations of (ns, command) are counted under.
  PairLabels labels(std::string_view ns, std::string_view command) const {
    return listed_.contains({ns, command}) ? PairLabels{ns, command} : PairLabels{kOther, kOther};
  }

 private:
  std::set<PairLabels> listed_;
};

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

// Per-shape families: the top N shapes by count get their own series; the rest of each (ns, command)
// is summed under shape_id="rest", so the series count stays bounded whatever the shape cap.
void writeShapeOps(PrometheusWriter& w, const Snapshot& snap, const PairSeries& pairs) {
  w.family(Metric::shape_ops_total);
  std::map<std::tuple<std::string_view, std::string_view, size_t>, uint64_t> rest;
  size_t listed = 0;
  for (const auto& s : snap.shapes) {
    if (listed >= snap.prometheusTopShapes) {
      auto [ns, command] = pairs.labels(s.ns, s.command);
      for (size_t t = 0; t < kTargetingCount; ++t)
        if (s.counters.byTargeting[t]) rest[{ns, command, t}] += s.counters.byTargeting[t];
      continue;
    }
    ++listed;
    std::string id = shapeIdHex(s.hash);
    for (size_t t = 0; t < kTargetingCount; ++t)
      if (s.counters.byTargeting[t])
        w.sample(Metric::shape_ops_total, {s.ns, s.command, id, kTargetingNames[t]}, s.counters.byTargeting[t]);
  }
  for (const auto& [k, n] : rest)
    w.sample(Metric::shape_ops_total, {std::get<0>(k), std::get<1>(k), "rest", kTargetingNames[std::get<2>(k)]}, n);

  w.family(Metric::shape_info);
  listed = 0;
  for (const auto& s : snap.shapes) {
    if (listed++ >= snap.prometheusTopShapes) break;
    w.sample(Metric::shape_info, {s.ns, s.command, shapeIdHex(s.hash), s.shape}, uint64_t{1});
  }

  // Only shapes that had such upserts; ranked by count like the shapes above.
  w.family(Metric::untargetable_upserts_total);
  std::map<PairLabels, uint64_t> restUpserts;
  listed = 0;
  for (const auto& s : snap.shapes) {
    if (!s.counters.untargetableUpserts) continue;
    if (listed++ >= snap.prometheusTopShapes) {
      restUpserts[pairs.labels(s.ns, s.command)] += s.counters.untargetableUpserts;
      continue;
    }
    w.sample(Metric::untargetable_upserts_total, {s.ns, s.command, shapeIdHex(s.hash)}, s.counters.untargetableUpserts);
  }
  for (const auto& [k, n] : restUpserts) w.sample(Metric::untargetable_upserts_total, {k.first, k.second, "rest"}, n);
}

// Per (namespace, shard, count class): the busiest snap.prometheusTopNamespaces namespaces by
// operations get series of their own, the rest are summed under ns="<other>", so the series stay
// bounded by top namespaces x shards x 4 whatever the namespaces clients use.
void writeNamespaceShardOps(PrometheusWriter& w, const Snapshot& snap, const std::vector<std::string>& shardNames) {
  std::vector<std::pair<uint64_t, size_t>> ranked;  // (ops, namespace index)
  for (size_t n = 0; n < snap.nsShards.size() && n < snap.namespaces.size(); ++n) {
    uint64_t ops = 0;
    for (const auto& c : snap.nsShards[n]) ops += c.ops();
    if (ops) ranked.emplace_back(ops, n);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::map<std::tuple<std::string_view, std::string, size_t>, uint64_t> series;
  for (size_t r = 0; r < ranked.size(); ++r) {
    size_t n = ranked[r].second;
    std::string_view ns = r < snap.prometheusTopNamespaces ? std::string_view(snap.namespaces[n].ns) : kOther;
    for (size_t id = 0; id < snap.nsShards[n].size(); ++id)
      for (size_t h = 0; h < kHostsTargetedCount; ++h)
        if (uint64_t v = snap.nsShards[n][id].byHosts[h]) series[{ns, shardLabel(snap, shardNames, id), h}] += v;
  }
  w.family(Metric::namespace_shard_ops_total);
  for (const auto& [k, v] : series)
    w.sample(Metric::namespace_shard_ops_total, {std::get<0>(k), std::get<1>(k), kHostsTargetedNames[std::get<2>(k)]}, v);
}

}  // namespace

std::string shardLabel(const Snapshot& snap, const std::vector<std::string>& tableNames, size_t id) {
  if (!snap.shardNames.empty()) return id < snap.shardNames.size() ? snap.shardNames[id] : shardName({}, id);
  return shardName(tableNames, id);
}

size_t shardRows(const Snapshot& snap, const std::vector<std::string>& tableNames) {
  size_t names = snap.shardNames.empty() ? tableNames.size() : snap.shardNames.size();
  return std::max(snap.shardOps.size(), names);
}

std::string renderPrometheus(const Snapshot& snap, const std::vector<std::string>& shardNames) {
  std::string out;
  out.reserve(8192 + snap.shapes.size() * 300);
  PrometheusWriter w(out);

  const PairSeries pairs(snap);
  std::map<PairLabels, CommandAggregate> byCommand;
  for (const auto& s : snap.shapes) {
    auto& agg = byCommand[pairs.labels(s.ns, s.command)];
    agg.counters += s.counters;
    for (const auto& [code, n] : s.errorCodes) agg.errorCodes[code] += n;
    if (s.otherErrorCodes) agg.errorCodes[-1] += s.otherErrorCodes;  // code="-1": codes past the per-shape slots
  }

  w.family(Metric::ops_total);
  for (const auto& [k, agg] : byCommand)
    for (size_t t = 0; t < kTargetingCount; ++t)
      if (agg.counters.byTargeting[t])
        w.sample(Metric::ops_total, {k.first, k.second, kTargetingNames[t]}, agg.counters.byTargeting[t]);

  // MongoDB's count-based classes (serverStatus().shardingStatistics.numHostsTargeted): one label
  // with five fixed values, so the series stay as bounded as shardscope_ops_total's.
  w.family(Metric::hosts_targeted_ops_total);
  for (const auto& [k, agg] : byCommand)
    for (size_t h = 0; h < kHostsTargetedCount; ++h)
      if (agg.counters.byHosts[h])
        w.sample(Metric::hosts_targeted_ops_total, {k.first, k.second, kHostsTargetedNames[h]}, agg.counters.byHosts[h]);

  w.family(Metric::op_errors_total);
  for (const auto& [k, agg] : byCommand)
    for (const auto& [code, n] : agg.errorCodes) w.sample(Metric::op_errors_total, {k.first, k.second, std::to_string(code)}, n);

  w.family(Metric::received_bytes_total);
  for (const auto& [k, agg] : byCommand) w.sample(Metric::received_bytes_total, {k.first, k.second}, agg.counters.bytesIn);
  w.family(Metric::sent_bytes_total);
  for (const auto& [k, agg] : byCommand) w.sample(Metric::sent_bytes_total, {k.first, k.second}, agg.counters.bytesOut);

  w.family(Metric::op_latency_seconds);
  for (const auto& [k, agg] : byCommand) {
    const LatencyHistogram& h = agg.counters.latency;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < LatencyBounds::kFinite; ++i) {
      cumulative += h.counts[i];
      if (exportedLatencyBound(i))
        w.bucket(Metric::op_latency_seconds, {k.first, k.second}, secondsText(LatencyBounds::kNs[i]), cumulative);
    }
    w.bucket(Metric::op_latency_seconds, {k.first, k.second}, "+Inf", h.total());
    w.sum(Metric::op_latency_seconds, {k.first, k.second}, static_cast<double>(h.sum) / 1e9);
    w.count(Metric::op_latency_seconds, {k.first, k.second}, h.total());
  }

  w.family(Metric::op_shards_touched);
  for (const auto& [k, agg] : byCommand) {
    const FanoutHistogram& h = agg.counters.fanout;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < FanoutBounds::kShards.size(); ++i) {
      cumulative += h.counts[i];
      uint32_t b = FanoutBounds::kShards[i];
      if (b <= 8 || b == 12 || b >= 16)
        w.bucket(Metric::op_shards_touched, {k.first, k.second}, std::to_string(b), cumulative);
    }
    w.bucket(Metric::op_shards_touched, {k.first, k.second}, "+Inf", h.total());
    w.sum(Metric::op_shards_touched, {k.first, k.second}, static_cast<uint64_t>(h.sum));
    w.count(Metric::op_shards_touched, {k.first, k.second}, h.total());
  }

  writeShapeOps(w, snap, pairs);

  w.family(Metric::shard_ops_total);
  for (size_t i = 0; i < shardRows(snap, shardNames); ++i)
    w.sample(Metric::shard_ops_total, {shardLabel(snap, shardNames, i)},
             i < snap.shardOps.size() ? snap.shardOps[i] : uint64_t{0});

  writeNamespaceShardOps(w, snap, shardNames);

  w.family(Metric::targeting_ops_total);
  for (size_t t = 0; t < kTargetingCount; ++t)
    w.sample(Metric::targeting_ops_total, {kTargetingNames[t]}, snap.totals.byTargeting[t]);

  w.family(Metric::hosts_targeted_total);
  for (size_t h = 0; h < kHostsTargetedCount; ++h)
    w.sample(Metric::hosts_targeted_total, {kHostsTargetedNames[h]}, snap.totals.byHosts[h]);
  // No operation on a sharded collection yet: the shares are unknown and have no sample (as the
  // recording rule's 0/0 has none), never a 0 an alert on "targeted share below X" would fire on.
  w.family(Metric::targeted_share);
  if (shardedOps(snap.totals.byHosts) > 0) w.sample(Metric::targeted_share, {}, targetedShare(snap.totals.byHosts));
  w.family(Metric::all_shards_share);
  if (shardedOps(snap.totals.byHosts) > 0) w.sample(Metric::all_shards_share, {}, allShardsShare(snap.totals.byHosts));

  w.single(Metric::replies_total, snap.totals.replies);
  w.single(Metric::reply_errors_total, snap.totals.errors);

  uint64_t otherOps = 0;
  uint64_t otherNamespaceOps = 0;
  uint64_t atCap = 0;
  for (const auto& s : snap.shapes) {
    if (s.other) otherOps += s.counters.count;
    if (s.ns == common::kOtherName) otherNamespaceOps += s.counters.count;
  }
  for (const auto& ns : snap.namespaces) atCap += ns.atCap ? 1 : 0;
  w.single(Metric::stats_shapes_tracked, static_cast<uint64_t>(snap.shapesTracked));
  w.single(Metric::stats_max_shapes_per_namespace, snap.maxShapesPerNamespace);
  w.single(Metric::stats_namespaces_at_cap, atCap);
  w.single(Metric::stats_other_ops_total, otherOps);
  w.single(Metric::stats_other_namespace_ops_total, otherNamespaceOps);

  for (const auto& p : snap.process) w.single(p.metric, p.value);
  w.single(Metric::start_time_seconds, static_cast<double>(snap.startedMs) / 1000.0);
  return out;
}

}  // namespace shardscope::stats
