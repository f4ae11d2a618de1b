#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "common/bounded_name.h"
#include "common/json_writer.h"
#include "common/name_text.h"
#include "common/query_shape.h"
#include "stats/hotness.h"
#include "stats/render.h"
#include "stats/rescued_share.h"

namespace shardscope::stats {
namespace {

constexpr size_t kMaxConnectionsListed = 256;

// Indexed by routing::Targeting; the same spelling in /stats, /metrics and the dashboard.
constexpr std::string_view kTargetingNames[kTargetingCount] = {"single",    "multi",         "broadcast",
                                                               "unsharded", "no_collection", "unclassified"};

std::string camelCase(std::string_view snake) {
  std::string out;
  bool upper = false;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return out;
}

void writeTargeting(common::JsonWriter& w, const std::array<uint64_t, kTargetingCount>& counts) {
  w.beginObject();
  for (size_t i = 0; i < kTargetingCount; ++i) w.field(kTargetingNames[i], counts[i]);
  w.endObject();
}

// MongoDB's count-based classes (stats/hosts_targeted.h) and the one targeted share derived from them,
// for the totals and for each shape alike.
void writeHosts(common::JsonWriter& w, const std::array<uint64_t, kHostsTargetedCount>& counts) {
  w.key("hostsTargeted").beginObject();
  for (size_t i = 0; i < kHostsTargetedCount; ++i) w.field(kHostsTargetedNames[i], counts[i]);
  w.endObject();
  // Both shares have the same denominator, named here: operations on sharded collections.
  // Without an operation on a sharded collection a share is unknown: null, as the page and the CLI
  // show "-" and the recording rule's 0/0 has no value (0% would claim no operation was targeted).
  const bool known = shardedOps(counts) > 0;
  auto share = [&](std::string_view name, double v) { known ? w.field(name, v) : w.key(name).null(); };
  w.field("shardedOps", shardedOps(counts));
  share("targetedShare", targetedShare(counts));
  share("allShardsShare", allShardsShare(counts));
  w.key("hostsTargetedShare").beginObject();  // each count class of the sharded operations
  for (auto h : {HostsTargeted::OneShard, HostsTargeted::ManyShards, HostsTargeted::AllShards})
    share(kHostsTargetedNames[static_cast<size_t>(h)], shareOfSharded(counts, h));
  w.endObject();
}

void writeLatency(common::JsonWriter& w, const LatencyHistogram& h) {
  uint64_t n = h.total();
  w.beginObject();
  w.field("count", n);
  w.field("meanNs", n ? h.sum / n : uint64_t{0});
  w.field("p50Ns", h.quantile(0.50));
  w.field("p90Ns", h.quantile(0.90));
  w.field("p99Ns", h.quantile(0.99));
  w.field("maxNs", h.max);
  w.endObject();
}

void writeFanout(common::JsonWriter& w, const FanoutHistogram& h) {
  uint64_t n = h.total();
  w.beginObject();
  w.field("mean", n ? static_cast<double>(h.sum) / static_cast<double>(n) : 0.0);
  w.field("max", h.max);
  w.key("histogram").beginObject();  // upper bound (shards, inclusive) -> operations
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] == 0) continue;
    std::string le = i < FanoutBounds::kShards.size() ? std::to_string(FanoutBounds::kShards[i]) : "+Inf";
    w.field(le, h.counts[i]);
  }
  w.endObject();
  w.endObject();
}

void writeShape(common::JsonWriter& w, const ShapeSnapshot& s, bool recordValues, uint64_t totalOps) {
  const ShapeCounters& c = s.counters;
  w.beginObject();
  w.field("id", shapeIdHex(s.hash));
  // A client's names as every surface shows them (common::utf8Name: distinct when not UTF-8).
  w.field("ns", common::utf8Name(s.ns));
  w.field("command", common::utf8Name(s.command));
  w.field("shape", s.shape);
  w.field("other", s.other);
  w.field("count", c.count);
  w.field("share", totalOps ? static_cast<double>(c.count) / static_cast<double>(totalOps) : 0.0);  // of totals.ops
  w.field("class", dominantTargeting(c));
  w.field("countClass", dominantHostsTargeted(c));
  // Why: the reason of the shape's class, and of every class it got (static text, no values).
  for (size_t i = 0; i < kTargetingCount; ++i)
    if (kTargetingNames[i] == dominantTargeting(c)) w.field("reason", c.reasons[i]);
  w.key("reasons").beginObject();
  for (size_t i = 0; i < kTargetingCount; ++i)
    if (c.byTargeting[i] && !c.reasons[i].empty()) w.field(kTargetingNames[i], c.reasons[i]);
  w.endObject();
  w.key("targeting");
  writeTargeting(w, c.byTargeting);
  // "Broadcast" means what mongos counts (allShards: every chunk owner reached), one number for
  // every surface; the reason class above says why, not how far the operation reached.
  // A shape with no operation on a sharded collection (hello, an unsharded namespace) has no such
  // share: null, shown "-" on the page and in the CLI, never "0.0% broadcast".
  if (shardedOps(c.byHosts) > 0) w.field("broadcastShare", allShardsShare(c.byHosts));
  else w.key("broadcastShare").null();
  writeHosts(w, c.byHosts);
  w.key("shardsTouched");
  writeFanout(w, c.fanout);
  if (c.rewrites) {
    w.key("rewrite").beginObject().field("applied", c.rewrites);
    w.key("targetingBefore");
    writeTargeting(w, c.beforeRewrite);
    w.field("fallbacks", c.rewriteFallbacks);
    // Retryable writes: the confirming read each sent first is one of the operations counted above.
    w.field("confirmingReads", c.confirmingReads);
    // Rescued, of every operation of the shape: the 'N% rescued' the page shows (lookups the
    // rewrite could not map stay in the denominator).
    writeRescued(w, rescuedShare(c.rewrites, c.rewriteFallbacks, c.count));
    w.endObject();
  }
  // Upsert statements whose filter does not pin the full current shard key (refused before 7.1,
  // two-phase broadcast after).
  w.field("untargetableUpserts", c.untargetableUpserts);
  w.key("latency");
  writeLatency(w, c.latency);
  w.key("errors").beginObject();
  w.field("total", c.errors);
  w.key("byCode").beginObject();
  for (const auto& [code, n] : s.errorCodes) w.field(std::to_string(code), n);
  w.endObject();
  w.field("otherCodes", s.otherErrorCodes);
  w.endObject();
  w.field("bytesIn", c.bytesIn);
  w.field("bytesOut", c.bytesOut);
  w.field("firstSeen", common::isoTime(c.firstSeenMs));
  w.field("lastSeen", common::isoTime(c.lastSeenMs));
  if (recordValues) w.field("sample", s.sample);
  w.endObject();
}

void writeTotals(common::JsonWriter& w, const ConnectionTotals& t) {
  w.field("ops", t.ops);
  w.field("replies", t.replies);
  w.field("errors", t.errors);
  w.field("unparsed", t.unparsed);
  w.field("decodeErrors", t.decodeErrors);
  w.field("bytesIn", t.bytesIn);
  w.field("bytesOut", t.bytesOut);
  w.key("targeting");
  writeTargeting(w, t.byTargeting);
  w.key("targetingShare").beginObject();  // each reason class of every operation (hello included)
  for (size_t i = 0; i < kTargetingCount; ++i)
    w.field(kTargetingNames[i], t.ops ? static_cast<double>(t.byTargeting[i]) / static_cast<double>(t.ops) : 0.0);
  w.endObject();
  writeHosts(w, t.byHosts);
}

}  // namespace

std::string shardName(const std::vector<std::string>& names, size_t index) {
  if (index < names.size() && !names[index].empty()) return names[index];
  return "shard" + std::to_string(index);
}

std::string shapeIdHex(uint64_t hash) { return common::shapeIdHex(hash); }

// The class holding most of a shape's operations. Ties go to the later (more expensive or less
// known) class: a shape that broadcasts half the time is reported as broadcast; with no operations,
// the last class.
template <size_t N, class Names>
std::string_view dominantClass(const std::array<uint64_t, N>& counts, const Names& names) {
  size_t best = N - 1;
  uint64_t bestCount = 0;
  for (size_t i = 0; i < N; ++i)
    if (counts[i] > 0 && counts[i] >= bestCount) {
      best = i;
      bestCount = counts[i];
    }
  return names[best];
}

std::string_view dominantTargeting(const ShapeCounters& c) { return dominantClass(c.byTargeting, kTargetingNames); }

std::string_view dominantHostsTargeted(const ShapeCounters& c) { return dominantClass(c.byHosts, kHostsTargetedNames); }

void writeHotness(common::JsonWriter& w, const Snapshot& snap, const std::vector<std::string>& shardNames,
                  const ChunkOwners* owners) {
  w.key("hotness").beginObject();
  w.field("threshold", kHotRatio);
  w.field("minTargetedPerShard", kMinTargetedPerShard);
  w.field("basis", "oneShard operations per chunk-owning shard, per namespace, since reset");
  w.key("namespaces").beginArray();
  for (const auto& h : hotness(snap, shardNames, owners)) {
    w.beginObject().field("ns", common::utf8Name(h.ns)).field("targetedOps", h.targetedOps).field("judged", h.judged);
    if (std::isinf(h.ratio)) w.key("ratio").null();  // the least busy owner took no targeted operation
    else w.field("ratio", h.ratio);
    w.field("hot", h.hot).field("hottest", h.hottest).field("coldest", h.coldest);
    w.key("shards").beginArray();
    for (const auto& l : h.shards)
      w.beginObject().field("name", l.shard).field("targetedOps", l.targeted).field("ops", l.ops).field("writes", l.writes).endObject();
    w.endArray().endObject();
  }
  w.endArray().endObject();
}

std::string renderJson(const Snapshot& snap, const std::vector<std::string>& shardNames, size_t top,
                       const ChunkOwners* owners) {
  std::string out;
  out.reserve(4096 + snap.shapes.size() * 700);
  common::JsonWriter w(out);
  w.beginObject();
  w.field("schemaVersion", uint64_t{1});
  w.field("now", common::isoTime(snap.nowMs));
  w.field("startedAt", common::isoTime(snap.startedMs));
  w.field("resetAt", common::isoTime(snap.resetMs));
  w.field("uptimeSeconds", static_cast<double>(snap.nowMs - snap.startedMs) / 1000.0);
  w.field("windowSeconds", static_cast<double>(snap.nowMs - snap.resetMs) / 1000.0);

  w.key("options").beginObject();
  w.field("recordValues", snap.recordValues);
  w.field("maxShapesPerNamespace", snap.maxShapesPerNamespace);
  w.field("maxNamespaces", snap.maxNamespaces);
  w.field("maxShapesTotal", snap.maxShapesTotal);
  w.endObject();

  uint64_t otherOps = 0;
  uint64_t otherNamespaceOps = 0;
  for (const auto& s : snap.shapes) {
    if (s.other) otherOps += s.counters.count;
    if (s.ns == common::kOtherName) otherNamespaceOps += s.counters.count;
  }
  w.key("shapeCap").beginObject();
  w.field("maxShapesPerNamespace", snap.maxShapesPerNamespace);
  w.field("shapesTracked", static_cast<uint64_t>(snap.shapesTracked));
  w.field("opsInOther", otherOps);
  w.field("overflowLookups", snap.overflowLookups);
  // Operations whose namespace got no row of its own (outside the routing table, past max_namespaces).
  w.field("opsInOtherNamespace", otherNamespaceOps);
  w.field("namespaceLookupsRefused", snap.namespaceLookupsRefused);
  w.key("namespacesAtCap").beginArray();
  for (const auto& ns : snap.namespaces)
    if (ns.atCap) w.value(common::utf8Name(ns.ns));
  w.endArray();
  w.endObject();

  w.key("totals").beginObject();
  writeTotals(w, snap.totals);
  w.endObject();

  w.key("process").beginObject();
  for (const auto& p : snap.process) w.field(camelCase(p.name), p.value);
  w.endObject();

  uint64_t shardOpsTotal = 0;
  for (uint64_t n : snap.shardOps) shardOpsTotal += n;
  size_t shardCount = shardRows(snap, shardNames);
  w.key("shards").beginArray();
  for (size_t i = 0; i < shardCount; ++i) {
    uint64_t n = i < snap.shardOps.size() ? snap.shardOps[i] : 0;
    w.beginObject();
    w.field("index", static_cast<uint64_t>(i));
    w.field("name", shardLabel(snap, shardNames, i));
    w.field("ops", n);
    w.field("share", shardOpsTotal ? static_cast<double>(n) / static_cast<double>(shardOpsTotal) : 0.0);
    w.endObject();
  }
  w.endArray();

  std::unordered_map<std::string_view, uint64_t> nsOps;
  for (const auto& s : snap.shapes) nsOps[s.ns] += s.counters.count;
  w.key("namespaces").beginArray();
  for (size_t n = 0; n < snap.namespaces.size(); ++n) {
    const auto& ns = snap.namespaces[n];
    uint64_t ops = nsOps.contains(ns.ns) ? nsOps[ns.ns] : 0;
    w.beginObject();
    w.field("ns", common::utf8Name(ns.ns));
    w.field("shapes", ns.shapes);
    w.field("atCap", ns.atCap);
    w.field("ops", ops);
    // This namespace's operations per shard reached (exact counts since reset, writes included).
    w.key("shards").beginArray();
    if (n < snap.nsShards.size())
      for (size_t id = 0; id < snap.nsShards[n].size(); ++id) {
        const NsShardCounts& c = snap.nsShards[n][id];
        if (c.ops() == 0) continue;
        w.beginObject().field("name", shardLabel(snap, shardNames, id)).field("ops", c.ops());
        w.field("targetedOps", c.byHosts[static_cast<size_t>(HostsTargeted::OneShard)]).field("writes", c.writes);
        w.endObject();
      }
    w.endArray();
    w.endObject();
  }
  w.endArray();
  writeHotness(w, snap, shardNames, owners);

  // Open connections, oldest first; the list is capped, the totals above cover every connection.
  w.field("connectionsOpen", static_cast<uint64_t>(snap.connections.size()));
  w.key("connections").beginArray();
  size_t connectionsListed = 0;
  for (const auto& c : snap.connections) {
    if (connectionsListed++ >= kMaxConnectionsListed) break;
    w.beginObject();
    w.field("id", c.id);
    w.field("openedAt", common::isoTime(c.openedMs));
    writeTotals(w, c.totals);
    w.endObject();
  }
  w.endArray();

  w.field("shapesTotal", static_cast<uint64_t>(snap.shapes.size()));
  w.key("shapes").beginArray();
  size_t listed = 0;
  for (const auto& s : snap.shapes) {
    if (listed++ >= top) break;
    writeShape(w, s, snap.recordValues, snap.totals.ops);
  }
  w.endArray();
  w.endObject();
  out.push_back('\n');
  return out;
}

}  // namespace shardscope::stats
