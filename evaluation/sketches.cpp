#include "evaluation/sketches.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace shardscope::evaluation {

void HyperLogLog::add(uint64_t hash) {
  uint64_t h = mix64(hash);
  size_t idx = h >> (64 - kPrecision);
  uint64_t rest = (h << kPrecision) | (uint64_t{1} << (kPrecision - 1));
  uint8_t rank = static_cast<uint8_t>(std::countl_zero(rest) + 1);
  if (rank > registers_[idx]) registers_[idx] = rank;
}

double HyperLogLog::estimate() const {
  const double m = static_cast<double>(registers_.size());
  double sum = 0;
  size_t zeros = 0;
  for (uint8_t r : registers_) {
    sum += std::ldexp(1.0, -r);
    if (r == 0) ++zeros;
  }
  double alpha = 0.7213 / (1 + 1.079 / m);
  double e = alpha * m * m / sum;
  if (e <= 2.5 * m && zeros > 0) e = m * std::log(m / static_cast<double>(zeros));  // linear counting
  return e;
}

void HyperLogLog::merge(const HyperLogLog& other) {
  for (size_t i = 0; i < registers_.size(); ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
}

bool HyperLogLog::load(const uint8_t* data, size_t len) {
  if (len != registers_.size()) return false;
  std::copy(data, data + len, registers_.begin());
  return true;
}

void SpaceSaving::add(uint64_t hash, uint64_t weight, const std::string* label) {
  total_ += weight;
  auto it = index_.find(hash);
  if (it != index_.end()) {
    entries_[it->second].count += weight;
    return;
  }
  if (entries_.size() < capacity_) {
    index_.emplace(hash, entries_.size());
    entries_.push_back({hash, weight, 0, label ? *label : std::string()});
    return;
  }
  size_t min_i = 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].count < entries_[min_i].count) min_i = i;
  Entry& e = entries_[min_i];
  index_.erase(e.hash);
  uint64_t floor = e.count;
  e = {hash, floor + weight, floor, label ? *label : std::string()};
  index_.emplace(hash, min_i);
}

void SpaceSaving::merge(const SpaceSaving& other) {
  // Agarwal et al.: add counts of common values, take the union, keep the largest `capacity`.
  uint64_t total = total_ + other.total_;
  std::unordered_map<uint64_t, Entry> all;
  for (const auto& e : entries_) all[e.hash] = e;
  for (const auto& e : other.entries_) {
    auto [it, fresh] = all.try_emplace(e.hash, e);
    if (!fresh) {
      it->second.count += e.count;
      it->second.error += e.error;
      if (it->second.label.empty()) it->second.label = e.label;
    }
  }
  std::vector<Entry> merged;
  merged.reserve(all.size());
  for (auto& [h, e] : all) merged.push_back(std::move(e));
  std::sort(merged.begin(), merged.end(), [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.hash < b.hash;
  });
  if (merged.size() > capacity_) merged.resize(capacity_);
  entries_ = std::move(merged);
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].hash, i);
  total_ = total;
}

std::vector<SpaceSaving::Entry> SpaceSaving::top(size_t n) const {
  // Ranked by the guaranteed count (count - error): SpaceSaving over-counts values that took over
  // an evicted counter, and a long tail would otherwise look heavy.
  std::vector<Entry> out = entries_;
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    uint64_t ga = a.count - a.error, gb = b.count - b.error;
    return ga != gb ? ga > gb : a.hash < b.hash;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

void BottomK::add(uint64_t hash, std::string_view value) {
  if (values_.size() >= k_ && hash >= values_.rbegin()->first) return;
  if (values_.count(hash)) return;
  values_.emplace(hash, std::string(value));
  if (values_.size() > k_) values_.erase(std::prev(values_.end()));
}

void BottomK::merge(const BottomK& other) {
  for (const auto& [h, v] : other.values_) add(h, v);
}

int64_t ReservoirIndex::offer() {
  ++seen_;
  if (seen_ <= capacity_) return static_cast<int64_t>(seen_ - 1);
  uint64_t j = next() % seen_;
  return j < capacity_ ? static_cast<int64_t>(j) : -1;
}

}  // namespace shardscope::evaluation
