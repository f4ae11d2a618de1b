// The counters kept per (namespace, command, query shape) and per connection: plain structs with
// += so per-session copies merge on read (no atomics on the hot path).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <vector>
#include <string_view>

#include "routing/target_result.h"
#include "stats/histogram.h"
#include "stats/hosts_targeted.h"

namespace shardscope::stats {

constexpr size_t kTargetingCount = static_cast<size_t>(routing::Targeting::Unclassified) + 1;

// Error codes seen for one shape: a few distinct codes exactly, the rest summed under `other`.
struct ErrorCodes {
  static constexpr size_t kSlots = 8;
  std::array<int32_t, kSlots> codes{};
  std::array<uint64_t, kSlots> counts{};
  uint64_t other = 0;

  void add(int32_t code, uint64_t n = 1) {
    for (size_t i = 0; i < kSlots; ++i) {
      if (counts[i] != 0 && codes[i] == code) {
        counts[i] += n;
        return;
      }
      if (counts[i] == 0) {
        codes[i] = code;
        counts[i] = n;
        return;
      }
    }
    other += n;
  }
  void mergeInto(std::map<int32_t, uint64_t>& out) const {
    for (size_t i = 0; i < kSlots && counts[i] != 0; ++i) out[codes[i]] += counts[i];
  }
  ErrorCodes& operator+=(const ErrorCodes& o) {
    for (size_t i = 0; i < kSlots && o.counts[i] != 0; ++i) add(o.codes[i], o.counts[i]);
    other += o.other;
    return *this;
  }
};

struct ShapeCounters {
  // Every request and reply writes the fields up to `reasons` (and one bucket of each histogram):
  // kept together, they share four cache lines where they were spread over seven (issue 29).
  uint64_t count = 0;
  uint64_t bytesIn = 0;
  uint64_t bytesOut = 0;
  uint64_t errors = 0;       // replies with ok:0, writeErrors or a writeConcernError
  int64_t firstSeenMs = 0;  // unix ms; 0 = never
  int64_t lastSeenMs = 0;
  // Upsert statements whose filter does not pin the full current shard key (TargetResult).
  uint64_t untargetableUpserts = 0;
  std::array<uint64_t, kTargetingCount> byTargeting{};
  std::array<uint64_t, kHostsTargetedCount> byHosts{};  // the same operations by MongoDB's count class
  // Why targeting chose each class, the latest reason seen: static text from routing/ (never a field
  // value, never freed), so the dashboard can say why a shape broadcasts.
  std::array<std::string_view, kTargetingCount> reasons{};
  FanoutHistogram fanout;
  LatencyHistogram latency;  // one entry per reply
  ErrorCodes errorCodes;     // ok:0 code, each writeError's code, writeConcernError's code
  // Lookup rewrites of this shape: how many, how they were targeted as the client wrote them
  // (byTargeting holds the class after the rewrite, plus the original's class for each fallback,
  // which ran both), and how many fell back to the original.
  uint64_t rewrites = 0;
  std::array<uint64_t, kTargetingCount> beforeRewrite{};
  uint64_t rewriteFallbacks = 0;
  // Retryable writes the rewrite held: the proxy's confirming read went first (one shard, counted
  // in byTargeting as the read it was), then the rewritten write or, unconfirmed, the original.
  uint64_t confirmingReads = 0;

  ShapeCounters& operator+=(const ShapeCounters& o) {
    count += o.count;
    untargetableUpserts += o.untargetableUpserts;
    for (size_t i = 0; i < kTargetingCount; ++i)
      if (!o.reasons[i].empty()) reasons[i] = o.reasons[i];
    rewrites += o.rewrites;
    for (size_t i = 0; i < kTargetingCount; ++i) beforeRewrite[i] += o.beforeRewrite[i];
    rewriteFallbacks += o.rewriteFallbacks;
    confirmingReads += o.confirmingReads;
    for (size_t i = 0; i < kTargetingCount; ++i) byTargeting[i] += o.byTargeting[i];
    for (size_t i = 0; i < kHostsTargetedCount; ++i) byHosts[i] += o.byHosts[i];
    fanout += o.fanout;
    latency += o.latency;
    errors += o.errors;
    errorCodes += o.errorCodes;
    bytesIn += o.bytesIn;
    bytesOut += o.bytesOut;
    if (o.firstSeenMs != 0 && (firstSeenMs == 0 || o.firstSeenMs < firstSeenMs)) firstSeenMs = o.firstSeenMs;
    if (o.lastSeenMs > lastSeenMs) lastSeenMs = o.lastSeenMs;
    return *this;
  }
};

// Operations of one namespace on one shard, by MongoDB's count class (oneShard: operations the shard
// key sent to this shard alone, the load hotness is judged on) and how many were writes.
struct NsShardCounts {
  std::array<uint64_t, kHostsTargetedCount> byHosts{};
  uint64_t writes = 0;

  uint64_t ops() const {
    uint64_t n = 0;
    for (uint64_t v : byHosts) n += v;
    return n;
  }
  NsShardCounts& operator+=(const NsShardCounts& o) {
    for (size_t i = 0; i < kHostsTargetedCount; ++i) byHosts[i] += o.byHosts[i];
    writes += o.writes;
    return *this;
  }
};

// [namespace index][stable shard id]; rows grow only when a namespace or shard is first touched.
using NsShardTable = std::vector<std::vector<NsShardCounts>>;

inline void addAll(NsShardTable& into, const NsShardTable& from) {
  if (into.size() < from.size()) into.resize(from.size());
  for (size_t n = 0; n < from.size(); ++n) {
    if (into[n].size() < from[n].size()) into[n].resize(from[n].size());
    for (size_t s = 0; s < from[n].size(); ++s) into[n][s] += from[n][s];
  }
}

// Totals of one connection (and, summed, of the process).
struct ConnectionTotals {
  uint64_t ops = 0;
  uint64_t replies = 0;
  uint64_t errors = 0;
  uint64_t unparsed = 0;
  uint64_t decodeErrors = 0;
  uint64_t bytesIn = 0;
  uint64_t bytesOut = 0;
  std::array<uint64_t, kTargetingCount> byTargeting{};
  std::array<uint64_t, kHostsTargetedCount> byHosts{};

  ConnectionTotals& operator+=(const ConnectionTotals& o) {
    ops += o.ops;
    replies += o.replies;
    errors += o.errors;
    unparsed += o.unparsed;
    decodeErrors += o.decodeErrors;
    bytesIn += o.bytesIn;
    bytesOut += o.bytesOut;
    for (size_t i = 0; i < kTargetingCount; ++i) byTargeting[i] += o.byTargeting[i];
    for (size_t i = 0; i < kHostsTargetedCount; ++i) byHosts[i] += o.byHosts[i];
    return *this;
  }
};

}  // namespace shardscope::stats
