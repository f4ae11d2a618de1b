// Log-linear latency histogram in nanoseconds (HdrHistogram-like: 64 sub-buckets per power of two,
// < 1.6 % error), one per worker thread, merged at the end. Recording is two shifts and an add.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace bench {

class Histogram {
 public:
  static constexpr int kSub = 6;  // 2^6 sub-buckets per octave
  static constexpr int kMaxExp = 44;
  static constexpr size_t kBuckets = (1u << (kSub + 1)) + (kMaxExp - kSub) * (1u << kSub);

  Histogram() : counts_(kBuckets, 0) {}

  void record(uint64_t v) {
    ++counts_[index(v)];
    ++total_;
    sum_ += v;
    max_ = std::max(max_, v);
  }
  void merge(const Histogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
  }
  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }
  double mean() const { return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0; }

  // Value at quantile q (0..1): the midpoint of the bucket holding the q-th sample.
  uint64_t quantile(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(midpoint(i), max_);
    }
    return max_;
  }

 private:
  static size_t index(uint64_t v) {
    if (v < (1u << (kSub + 1))) return static_cast<size_t>(v);
    int msb = 63 - __builtin_clzll(v);
    if (msb > kMaxExp) return kBuckets - 1;
    int shift = msb - kSub;
    return (1u << (kSub + 1)) + static_cast<size_t>(msb - kSub - 1) * (1u << kSub) +
           static_cast<size_t>((v >> shift) - (1u << kSub));
  }
  static uint64_t midpoint(size_t i) {
    if (i < (1u << (kSub + 1))) return i;
    size_t j = i - (1u << (kSub + 1));
    int msb = static_cast<int>(j >> kSub) + kSub + 1;
    uint64_t sub = (j & ((1u << kSub) - 1)) + (1u << kSub);
    int shift = msb - kSub;
    return (sub << shift) + (uint64_t{1} << shift) / 2;
  }

  std::vector<uint64_t> counts_;
  uint64_t total_ = 0, sum_ = 0, max_ = 0;
};

}  // namespace bench
