// Fixed-bucket histograms for latency and shard fan-out: plain arrays (no allocation, mergeable
// with +=), with bucket bounds chosen so the Prometheus buckets are an exact subset.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace shardscope::stats {

constexpr size_t kLatencyBuckets = 8 * 7 + 1;  // 1us .. 100s

constexpr std::array<uint64_t, kLatencyBuckets> makeLatencyBounds() {
  constexpr uint64_t steps[] = {10, 15, 20, 25, 35, 50, 75};  // tenths of a decade's start
  std::array<uint64_t, kLatencyBuckets> b{};
  uint64_t decade = 100;  // 1us = 1000ns = 10 * 100
  size_t i = 0;
  for (int d = 0; d < 8; ++d, decade *= 10)
    for (uint64_t s : steps) b[i++] = s * decade;
  b[i] = 10 * decade;  // 100 s
  return b;
}

// Latency bucket upper bounds in ns: 7 per decade (1, 1.5, 2, 2.5, 3.5, 5, 7.5) from 1 us to
// 100 s, so percentiles are within ~20% and {1, 2.5, 5} per decade export exactly to Prometheus.
struct LatencyBounds {
  static constexpr size_t kFinite = kLatencyBuckets;
  static constexpr std::array<uint64_t, kFinite> kNs = makeLatencyBounds();
};

// Shard fan-out bucket upper bounds (inclusive): exact up to 16 shards, then powers of two.
struct FanoutBounds {
  static constexpr std::array<uint32_t, 23> kShards = {0,  1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  11,
                                                       12, 13, 14, 15, 16, 32, 64, 128, 256, 512, 1024};
};

// Counts per bucket plus one overflow bucket; `sum` and `max` kept exactly.
template <typename Bounds, size_t N, typename Value>
struct Histogram {
  // The sum and max first: a record writes them and a low bucket in one cache line.
  uint64_t sum = 0;
  uint64_t max = 0;
  std::array<uint64_t, N + 1> counts{};

  static size_t bucketOf(Value v, std::span<const Value, N> bounds) {
    return static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  }
  uint64_t total() const {
    uint64_t t = 0;
    for (uint64_t c : counts) t += c;
    return t;
  }
  Histogram& operator+=(const Histogram& o) {
    for (size_t i = 0; i < counts.size(); ++i) counts[i] += o.counts[i];
    sum += o.sum;
    max = std::max(max, o.max);
    return *this;
  }
};

struct LatencyHistogram : Histogram<LatencyBounds, LatencyBounds::kFinite, uint64_t> {
  void record(uint64_t ns) {
    ++counts[bucketOf(ns, LatencyBounds::kNs)];
    sum += ns;
    if (ns > max) max = ns;
  }
  // Linear interpolation inside the bucket holding the q-th value, clamped to the observed max.
  uint64_t quantile(double q) const;
};

struct FanoutHistogram : Histogram<FanoutBounds, FanoutBounds::kShards.size(), uint32_t> {
  void record(uint32_t shards) {
    counts[shards <= 16 ? shards : bucketOf(shards, FanoutBounds::kShards)]++;
    sum += shards;
    if (shards > max) max = shards;
  }
};

}  // namespace shardscope::stats
