#include "shadow/divergence_stats.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/bounded_name.h"
#include "common/coarse_clock.h"
#include "common/name_text.h"
#include "stats/prometheus_writer.h"
#include "common/query_shape.h"
#include "stats/registry.h"
#include "stats/render.h"

namespace shardscope::shadow {
namespace {

constexpr std::string_view kOther = common::kOtherName;
constexpr uint64_t kOtherHash = 0;

// The row past max_shapes: shapes of every namespace, command and targeting.
bool isOverflowRow(const ShapeDivergence& s) { return s.hash == kOtherHash && s.shape == kOther; }

// Its targeting labels name no one targeting (they would follow the last operation, and the series
// would change labels between scrapes).
std::string_view primaryTargetingLabel(const ShapeDivergence& s) {
  return isOverflowRow(s) ? kOther : routing::targetingName(s.primary_targeting);
}
std::string_view shadowTargetingLabel(const ShapeDivergence& s) {
  if (isOverflowRow(s)) return kOther;
  return s.shadow_targeting_known ? routing::targetingName(s.shadow_targeting) : std::string_view("unknown");
}

std::vector<const ShapeDivergence*> ranked(const std::vector<ShapeDivergence>& rows) {
  std::vector<const ShapeDivergence*> r;
  for (const auto& s : rows) r.push_back(&s);
  std::stable_sort(r.begin(), r.end(), [](const ShapeDivergence* a, const ShapeDivergence* b) {
    if (a->divergent != b->divergent) return a->divergent > b->divergent;
    return a->mirrored > b->mirrored;
  });
  return r;
}

void latencyJson(common::JsonWriter& w, std::string_view key, const stats::LatencyHistogram& h) {
  w.key(key).beginObject();
  uint64_t n = h.total();
  w.field("count", n);
  w.field("meanMicros", n ? static_cast<double>(h.sum) / n / 1000.0 : 0.0);
  w.field("p50Micros", static_cast<double>(h.quantile(0.5)) / 1000.0);
  w.field("p99Micros", static_cast<double>(h.quantile(0.99)) / 1000.0);
  w.field("maxMicros", static_cast<double>(h.max) / 1000.0);
  w.endObject();
}

}  // namespace

ShapeDivergence* DivergenceTable::findLocked(uint64_t hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) it = index_.find(kOtherHash);
  return it == index_.end() ? nullptr : &shapes_[it->second];
}

ShapeDivergence& DivergenceTable::otherRowLocked() {
  if (auto it = index_.find(kOtherHash); it != index_.end()) return shapes_[it->second];
  ShapeDivergence s;
  s.ns = kOther;
  s.command = kOther;
  s.shape = kOther;
  s.hash = kOtherHash;
  shapes_.push_back(std::move(s));
  index_.emplace(kOtherHash, shapes_.size() - 1);
  return shapes_.back();
}

size_t DivergenceTable::evictLocked() {
  // One pass over at most max_shapes rows, only when a new shape meets a full table.
  auto rank = [](const ShapeDivergence& s) { return std::tuple(s.divergent > 0, s.mirrored, s.last_mirrored); };
  size_t victim = SIZE_MAX;
  for (size_t i = 0; i < shapes_.size(); ++i)
    if (!isOverflowRow(shapes_[i]) && (victim == SIZE_MAX || rank(shapes_[i]) < rank(shapes_[victim]))) victim = i;
  if (victim == SIZE_MAX) return victim;
  ShapeDivergence& other = otherRowLocked();  // may grow the deque: indexes stay, references to rows too
  ShapeDivergence& gone = shapes_[victim];
  other.mirrored += gone.mirrored;
  other.compared += gone.compared;
  other.divergent += gone.divergent;
  other.shadow_errors += gone.shadow_errors;
  for (size_t b = 0; b < kDivergenceKinds; ++b) other.by_kind[b] += gone.by_kind[b];
  other.primary_latency += gone.primary_latency;
  other.shadow_latency += gone.shadow_latency;
  index_.erase(gone.hash);
  return victim;
}

void DivergenceTable::onMirrored(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape,
                                 routing::Targeting primary, routing::Targeting shadow, bool shadowKnown) {
  std::lock_guard lock(mutex_);
  ++sequence_;
  auto it = index_.find(hash);
  if (it == index_.end()) {
    ShapeDivergence s;
    s.ns = common::boundedName(ns);  // client-chosen: kept bounded in bytes
    s.command = common::boundedName(command);
    s.shape = shape;
    s.hash = hash;
    size_t at = shapes_.size();
    const size_t rows = shapes_.size() - (index_.contains(kOtherHash) ? 1 : 0);
    if (rows >= max_shapes_) at = evictLocked();
    if (at == SIZE_MAX) {  // no row to give (max_shapes 0): the overflow row counts it
      otherRowLocked();
      it = index_.find(kOtherHash);
    } else {
      if (at == shapes_.size()) shapes_.push_back(std::move(s));
      else shapes_[at] = std::move(s);
      it = index_.emplace(hash, at).first;
    }
  }
  auto& s = shapes_[it->second];
  ++s.mirrored;
  s.last_mirrored = sequence_;
  if (isOverflowRow(s)) return;  // many shapes' targetings: none of them is the row's
  s.primary_targeting = primary;
  s.shadow_targeting = shadow;
  s.shadow_targeting_known = shadowKnown;
}

void DivergenceTable::onShadowError(uint64_t hash) {
  std::lock_guard lock(mutex_);
  if (auto* s = findLocked(hash)) ++s->shadow_errors;
}

void DivergenceTable::onCompared(uint64_t hash, const ReplySummary& primary, const ReplySummary& shadow,
                                 uint64_t primaryLatencyNs, uint64_t shadowLatencyNs, std::string_view commandJson) {
  const uint32_t kinds = compareSummaries(primary, shadow);
  std::string detail = kinds ? describeDivergence(kinds, primary, shadow) : std::string();
  std::lock_guard lock(mutex_);
  auto* s = findLocked(hash);
  if (!s) return;
  ++s->compared;
  if (primaryLatencyNs) s->primary_latency.record(primaryLatencyNs);
  if (shadowLatencyNs) s->shadow_latency.record(shadowLatencyNs);
  if (!kinds) return;
  ++s->divergent;
  for (size_t b = 0; b < kDivergenceKinds; ++b)
    if (kinds & (1u << b)) ++s->by_kind[b];
  if (s->examples.size() < max_examples_)
    s->examples.push_back({common::coarseRealtimeMs(), kinds, std::move(detail), std::string(commandJson)});
}

std::vector<ShapeDivergence> DivergenceTable::snapshot() const {
  std::lock_guard lock(mutex_);
  return {shapes_.begin(), shapes_.end()};
}

void DivergenceTable::reset() {
  std::lock_guard lock(mutex_);
  shapes_.clear();
  index_.clear();
  sequence_ = 0;
}

void renderDivergenceJson(const std::vector<ShapeDivergence>& rows, size_t top, common::JsonWriter& w) {
  w.beginArray();
  size_t n = 0;
  for (const ShapeDivergence* s : ranked(rows)) {
    if (n++ >= top) break;
    w.beginObject();
    // A client's names as every surface shows them (common::utf8Name: distinct when not UTF-8).
    w.field("ns", common::utf8Name(s->ns)).field("command", common::utf8Name(s->command)).key("shape").value(s->shape);
    w.field("shapeId", stats::shapeIdHex(s->hash));
    w.key("targeting").beginObject();
    w.field("primary", primaryTargetingLabel(*s));
    if (s->shadow_targeting_known || isOverflowRow(*s)) w.field("shadow", shadowTargetingLabel(*s));
    else w.key("shadow").null();
    w.endObject();
    w.field("mirrored", s->mirrored).field("compared", s->compared).field("divergent", s->divergent);
    w.field("shadowErrors", s->shadow_errors);
    w.key("divergences").beginObject();
    for (size_t b = 0; b < kDivergenceKinds; ++b) w.field(divergenceKindName(b), s->by_kind[b]);
    w.endObject();
    latencyJson(w, "primaryLatency", s->primary_latency);
    latencyJson(w, "shadowLatency", s->shadow_latency);
    w.key("examples").beginArray();
    for (const auto& e : s->examples) {
      w.beginObject();
      w.field("time", common::isoTime(e.unix_ms));
      w.key("kinds").beginArray();
      for (size_t b = 0; b < kDivergenceKinds; ++b)
        if (e.kinds & (1u << b)) w.value(divergenceKindName(b));
      w.endArray();
      w.field("detail", e.detail);
      if (!e.command.empty()) w.key("command").raw(e.command);
      w.endObject();
    }
    w.endArray();
    w.endObject();
  }
  w.endArray();
}

void renderDivergencePrometheus(const std::vector<ShapeDivergence>& rows, size_t top, std::string& out) {
  using stats::Metric;
  struct Listed {
    const ShapeDivergence* shape;
    std::string id;
  };
  std::vector<Listed> listed;
  // The rest is summed per (ns, command) only for pairs a listed shape names, the others under one
  // <other> pair: at most 2 * top + 1 series however many namespaces the table holds.
  using Pair = std::pair<std::string_view, std::string_view>;
  std::set<Pair> listedPairs;
  std::map<Pair, uint64_t> rest;
  for (const ShapeDivergence* s : ranked(rows)) {
    if (listed.size() < top) {
      listed.push_back({s, stats::shapeIdHex(s->hash)});
      listedPairs.insert({s->ns, s->command});
      continue;
    }
    const Pair pair{s->ns, s->command};
    rest[listedPairs.count(pair) ? pair : Pair{kOther, kOther}] += s->divergent;
  }
  stats::PrometheusWriter w(out);
  w.family(Metric::mirror_shape_divergences_total);
  for (const auto& [s, id] : listed)
    w.sample(Metric::mirror_shape_divergences_total,
             {s->ns, s->command, id, primaryTargetingLabel(*s), shadowTargetingLabel(*s)},
             static_cast<uint64_t>(s->divergent));
  // The rest rows carry only the leading labels (ns, command, shape_id="rest").
  for (const auto& [k, v] : rest) w.sample(Metric::mirror_shape_divergences_total, {k.first, k.second, "rest"}, v);
  w.family(Metric::mirror_shape_compared_total);
  for (const auto& [s, id] : listed)
    w.sample(Metric::mirror_shape_compared_total,
             {s->ns, s->command, id, primaryTargetingLabel(*s), shadowTargetingLabel(*s)},
             static_cast<uint64_t>(s->compared));
}

}  // namespace shardscope::shadow
