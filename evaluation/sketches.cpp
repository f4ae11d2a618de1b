#include "evaluation/sketches.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_map>

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

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(capacity) {
  size_t slots = 2;
  while (slots < 2 * capacity) slots *= 2;
  slots_.assign(slots, 0);
  shift_ = 64 - std::countr_zero(slots);
}

uint32_t SpaceSaving::find(uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(hash);; i = (i + 1) & mask) {
    uint32_t s = slots_[i];
    if (s == 0) return kNone;
    if (entries_[s - 1].hash == hash) return s - 1;
  }
}

void SpaceSaving::indexInsert(uint64_t hash, uint32_t entry) {
  const size_t mask = slots_.size() - 1;
  size_t i = home(hash);
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = entry + 1;
}

void SpaceSaving::indexErase(uint64_t hash) {
  const size_t mask = slots_.size() - 1;
  size_t hole = home(hash);
  while (entries_[slots_[hole] - 1].hash != hash) hole = (hole + 1) & mask;
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // slot allows it, so lookups never need tombstones.
  for (size_t j = (hole + 1) & mask; slots_[j] != 0; j = (j + 1) & mask) {
    size_t h = home(entries_[slots_[j] - 1].hash);
    bool stays = hole < j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = 0;
}

void SpaceSaving::rebuildIndex() {
  std::fill(slots_.begin(), slots_.end(), 0);
  for (size_t i = 0; i < entries_.size(); ++i) indexInsert(entries_[i].hash, static_cast<uint32_t>(i));
  min_from_ = SIZE_MAX;
}

// The first entry with the smallest count: the one SpaceSaving replaces.
size_t SpaceSaving::minEntry() {
  if (min_from_ != SIZE_MAX)
    for (size_t i = min_from_; i < entries_.size(); ++i)
      if (entries_[i].count == min_count_) return min_from_ = i;
  size_t m = 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].count < entries_[m].count) m = i;
  min_count_ = entries_[m].count;
  return min_from_ = m;
}

void SpaceSaving::add(uint64_t hash, uint64_t weight, const std::string* label) {
  total_ += weight;
  if (uint32_t i = find(hash); i != kNone) {
    entries_[i].count += weight;
    return;
  }
  if (entries_.size() < capacity_) {
    indexInsert(hash, static_cast<uint32_t>(entries_.size()));
    entries_.push_back({hash, floor_ + weight, floor_, label ? *label : std::string()});
    min_from_ = SIZE_MAX;  // the new count may be the smallest
    return;
  }
  if (entries_.empty()) return;  // capacity 0
  Entry& e = entries_[minEntry()];
  indexErase(e.hash);
  uint64_t floor = e.count;
  e.hash = hash;
  e.count = floor + weight;
  e.error = floor;
  if (label)
    e.label.assign(*label);
  else
    e.label.clear();
  indexInsert(hash, static_cast<uint32_t>(&e - entries_.data()));
}

uint64_t SpaceSaving::floor() const {
  // Once every counter is taken, a value may have been counted and replaced: it occurred at most
  // as often as the smallest counter (conservative when no counter was replaced yet).
  if (entries_.empty() || entries_.size() < capacity_) return floor_;
  uint64_t smallest = entries_[0].count;
  for (const auto& e : entries_) smallest = std::min(smallest, e.count);
  return std::max(floor_, smallest);
}

// Keeps the `capacity_` largest counts; a dropped value may have occurred up to its count, so the
// floor rises to the largest dropped count.
void SpaceSaving::keepLargest(std::vector<Entry>& counters, uint64_t floor) {
  std::sort(counters.begin(), counters.end(), [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.hash < b.hash;
  });
  if (counters.size() > capacity_) {
    floor = std::max(floor, counters[capacity_].count);
    counters.resize(capacity_);
  }
  entries_ = std::move(counters);
  floor_ = floor;
  rebuildIndex();
}

void SpaceSaving::merge(const SpaceSaving& other) {
  // Agarwal et al. (mergeable summaries): a value counted on one side only may still have occurred
  // up to the other side's floor there, so that floor joins both its count (an upper bound) and
  // its error (count - error stays a lower bound). Ignoring the bounds (adding counts alone)
  // turns each side's replaced counters into false heavy hitters.
  const uint64_t mine = floor(), theirs = other.floor();
  std::unordered_map<uint64_t, Entry> all;
  for (const auto& e : entries_) all[e.hash] = {e.hash, e.count + theirs, e.error + theirs, e.label};
  for (const auto& e : other.entries_) {
    auto [it, fresh] = all.try_emplace(e.hash, Entry{e.hash, e.count + mine, e.error + mine, e.label});
    if (!fresh) {
      Entry& m = it->second;  // counted on both sides: the other's floor was a guess, use its counter
      m.count = m.count - theirs + e.count;
      m.error = m.error - theirs + e.error;
      if (m.label.empty()) m.label = e.label;
    }
  }
  std::vector<Entry> merged;
  merged.reserve(all.size());
  for (auto& [h, e] : all) merged.push_back(std::move(e));
  total_ += other.total_;
  keepLargest(merged, mine + theirs);
}

SpaceSaving SpaceSaving::fromCounters(size_t capacity, std::vector<Entry> counters, uint64_t total, uint64_t floor) {
  SpaceSaving s(capacity);
  std::sort(counters.begin(), counters.end(), [](const Entry& a, const Entry& b) { return a.hash < b.hash; });
  counters.erase(std::unique(counters.begin(), counters.end(), [](const Entry& a, const Entry& b) { return a.hash == b.hash; }),
                 counters.end());
  for (auto& e : counters) e.error = std::min(e.error, e.count);  // a lower bound below 0 is not a bound
  s.keepLargest(counters, floor);
  s.total_ = total;
  return s;
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
  if (!hasRoomFor(hash)) return;  // one search below finds a held hash too
  auto pos = firstAtOrAbove(hash);
  if (pos != order_.end() && pos->hash == hash) return;
  ++version_;
  const auto at = pos - order_.begin();
  if (order_.size() < k_) {
    order_.insert(pos, {hash, static_cast<uint32_t>(values_.size())});
    values_.emplace_back(value);
    return;
  }
  // Full: the largest hash leaves, and its value's memory takes the new value.
  const uint32_t slot = order_.back().slot;
  order_.pop_back();
  order_.insert(order_.begin() + at, {hash, slot});
  values_[slot].assign(value);
}

void BottomK::merge(const BottomK& other) {
  for (const auto& [h, v] : other.values()) add(h, v);
}

bool BottomK::Values::operator==(const Values& o) const {
  if (size() != o.size()) return false;
  for (auto a = begin(), b = o.begin(); a != end(); ++a, ++b)
    if ((*a).first != (*b).first || (*a).second != (*b).second) return false;
  return true;
}

size_t BottomK::arrayBytes() const {
  auto bytes = [](size_t capacity, size_t size) { return capacity ? capacity * size + 16 : 0; };
  return bytes(order_.capacity(), sizeof(Entry)) + bytes(values_.capacity(), sizeof(std::string));
}

int64_t ReservoirIndex::offer() {
  ++seen_;
  if (seen_ <= capacity_) return static_cast<int64_t>(seen_ - 1);
  uint64_t j = next() % seen_;
  return j < capacity_ ? static_cast<int64_t>(j) : -1;
}

}  // namespace shardscope::evaluation
