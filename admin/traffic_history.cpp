#include "admin/traffic_history.h"

#include <algorithm>

#include "common/json_writer.h"

namespace shardscope::admin {
namespace {

// The difference of two cumulative counters; after a reset the counter restarted from zero.
uint64_t delta(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

}  // namespace

TrafficHistory::TrafficHistory(size_t capacity, size_t max_shards)
    : capacity_(capacity == 0 ? 1 : capacity), max_shards_(max_shards) {}

void TrafficHistory::add(int64_t now_ms, const stats::ConnectionTotals& totals, const std::vector<uint64_t>& shard_ops,
                         const std::vector<std::string>& shard_names, int64_t reset_ms) {
  std::lock_guard lock(mutex_);
  if (!shard_names.empty()) shard_names_ = shard_names;
  if (have_baseline_ && reset_ms != last_reset_ms_) {  // reset since the last call: every count is new
    last_totals_ = stats::ConnectionTotals{};
    std::fill(last_shards_.begin(), last_shards_.end(), 0);
  }
  last_reset_ms_ = reset_ms;
  if (have_baseline_ && now_ms > last_ms_) {
    Sample s;
    s.end_ms = now_ms;
    s.duration_ms = now_ms - last_ms_;
    for (size_t i = 0; i < s.targeting.size(); ++i)
      s.targeting[i] = delta(totals.byTargeting[i], last_totals_.byTargeting[i]);
    for (size_t i = 0; i < s.hosts.size(); ++i) s.hosts[i] = delta(totals.byHosts[i], last_totals_.byHosts[i]);
    size_t listed = std::min(shard_ops.size(), max_shards_);
    s.shards.assign(listed + (shard_ops.size() > max_shards_ ? 1 : 0), 0);
    for (size_t i = 0; i < shard_ops.size(); ++i) {
      uint64_t d = delta(shard_ops[i], i < last_shards_.size() ? last_shards_[i] : 0);
      s.shards[std::min(i, max_shards_)] += d;
    }
    samples_.push_back(std::move(s));
    while (samples_.size() > capacity_) samples_.pop_front();
  }
  have_baseline_ = true;
  last_ms_ = now_ms;
  last_totals_ = totals;
  last_shards_ = shard_ops;
}

size_t TrafficHistory::size() const {
  std::lock_guard lock(mutex_);
  return samples_.size();
}

std::string TrafficHistory::renderJson(const std::vector<std::string>& fallback_names, double interval_seconds) const {
  std::lock_guard lock(mutex_);
  // The counts' own names first: the table's list is in its order, which a reload may change.
  std::vector<std::string> shard_names = shard_names_;
  for (size_t i = shard_names.size(); i < fallback_names.size(); ++i) shard_names.push_back(fallback_names[i]);
  size_t widest = 0;
  for (const auto& s : samples_) widest = std::max(widest, s.shards.size());
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().field("intervalSeconds", interval_seconds).field("capacity", static_cast<uint64_t>(capacity_));
  w.key("shards").beginArray();
  for (size_t i = 0; i < widest; ++i) {
    if (i == max_shards_) w.value("other");
    else if (i < shard_names.size() && !shard_names[i].empty()) w.value(std::string_view(shard_names[i]));
    else w.value("shard" + std::to_string(i));
  }
  w.endArray().key("samples").beginArray();
  for (const auto& s : samples_) {
    w.beginObject().field("end", s.end_ms).field("seconds", static_cast<double>(s.duration_ms) / 1000.0);
    w.key("targeting").beginObject();
    for (size_t i = 0; i < s.targeting.size(); ++i)
      w.field(routing::targetingName(static_cast<routing::Targeting>(i)), s.targeting[i]);
    w.endObject().key("hostsTargeted").beginObject();
    for (size_t i = 0; i < s.hosts.size(); ++i) w.field(stats::kHostsTargetedNames[i], s.hosts[i]);
    w.endObject().key("shards").beginArray();
    for (uint64_t n : s.shards) w.value(n);
    w.endArray().endObject();
  }
  w.endArray();
  // Operations per second over the last interval and over the whole window kept; with no interval
  // yet, spans of 0 and rates of 0 (the page says "collecting").
  auto writeRates = [&](size_t first) {
    double seconds = 0, ops = 0;
    std::vector<double> shards(widest, 0);
    for (size_t i = first; i < samples_.size(); ++i) {
      const Sample& s = samples_[i];
      seconds += static_cast<double>(s.duration_ms) / 1000.0;
      for (uint64_t n : s.targeting) ops += static_cast<double>(n);
      for (size_t k = 0; k < s.shards.size(); ++k) shards[k] += static_cast<double>(s.shards[k]);
    }
    w.beginObject().field("seconds", seconds).field("ops", seconds > 0 ? ops / seconds : 0.0);
    w.key("shards").beginObject();
    for (size_t k = 0; k < widest; ++k) {
      std::string name = k == max_shards_ ? "other"
                         : k < shard_names.size() && !shard_names[k].empty() ? shard_names[k]
                                                                               : "shard" + std::to_string(k);
      w.field(name, seconds > 0 ? shards[k] / seconds : 0.0);
    }
    w.endObject().endObject();
  };
  w.key("rates").beginObject().key("last");
  writeRates(samples_.empty() ? 0 : samples_.size() - 1);
  w.key("window");
  writeRates(0);
  w.endObject().endObject();
  return out;
}

}  // namespace shardscope::admin
