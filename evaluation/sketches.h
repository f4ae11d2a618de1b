// Mergeable streaming sketches for key evaluation: HyperLogLog (cardinality), SpaceSaving (heavy
// hitters), a bottom-k sample of distinct values (split points) and a seeded reservoir.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::evaluation {

// 64-bit finaliser (splitmix64); used to derive register/rank bits from value hashes.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class HyperLogLog {
 public:
  static constexpr int kPrecision = 12;  // 4096 registers, ~1.6% standard error
  HyperLogLog() : registers_(size_t{1} << kPrecision, 0) {}
  void add(uint64_t hash);
  double estimate() const;
  void merge(const HyperLogLog& other);
  const std::vector<uint8_t>& registers() const { return registers_; }
  bool load(const uint8_t* data, size_t len);  // false on a size mismatch

 private:
  std::vector<uint8_t> registers_;
};

// Metwally et al.'s SpaceSaving: at most `capacity` counters; a value's count is over-estimated
// by at most its `error`, so it occurred between count - error and count times, and a value
// without a counter occurred at most floor() times. `label` is kept only when the caller passes
// one (values allowed).
// Once full it allocates nothing: an open-addressing index over the fixed counter array, and the
// replaced counter's label memory is reused.
class SpaceSaving {
 public:
  struct Entry {
    uint64_t hash = 0;
    uint64_t count = 0;
    uint64_t error = 0;
    std::string label;
  };
  explicit SpaceSaving(size_t capacity = 64);
  void add(uint64_t hash, uint64_t weight = 1, const std::string* label = nullptr);
  bool contains(uint64_t hash) const { return find(hash) != kNone; }
  // Agarwal et al.'s mergeable summaries: both sides' bounds carry into the result (see .cpp).
  void merge(const SpaceSaving& other);
  // A summary rebuilt from exported counters with their error bounds (an export's "c", "e",
  // "freqTotal", "freqFloor"); counters beyond `capacity` are dropped into the floor.
  static SpaceSaving fromCounters(size_t capacity, std::vector<Entry> counters, uint64_t total, uint64_t floor);
  // The most a value without a counter can have occurred.
  uint64_t floor() const;
  std::vector<Entry> top(size_t n) const;  // by count, descending
  uint64_t total() const { return total_; }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t indexSlots() const { return slots_.capacity(); }
  size_t entryCapacity() const { return entries_.capacity(); }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t find(uint64_t hash) const;
  size_t home(uint64_t hash) const { return (hash * 0x9E3779B97F4A7C15ull) >> shift_; }
  void indexInsert(uint64_t hash, uint32_t entry);
  void indexErase(uint64_t hash);
  void rebuildIndex();
  size_t minEntry();

  void keepLargest(std::vector<Entry>& counters, uint64_t floor);

  size_t capacity_;
  uint64_t total_ = 0;
  // Occurrences a value without a counter may have had that the counters do not show (0 for a
  // summary that saw every value itself; set by a merge or an import).
  uint64_t floor_ = 0;
  std::vector<Entry> entries_;
  // Linear probing, at most half full: entry index + 1 per slot, 0 when empty.
  std::vector<uint32_t> slots_;
  int shift_ = 64;
  // The smallest count and a position at or before the first entry holding it (every entry
  // before it counts more). Counts only grow, so the next minimum is usually a short scan away.
  uint64_t min_count_ = 0;
  size_t min_from_ = SIZE_MAX;  // SIZE_MAX: unknown, rescan
};

// A uniform sample of distinct values: the k values with the smallest hashes (KMV). Independent of
// how often each value occurs, so its quantiles split the key's value range evenly, and it merges
// exactly (union, keep the k smallest).
// The hashes are kept sorted apart from the values (an index of 16-byte entries naming each value's
// slot), so a value entering the sample moves index entries, not strings (issue 29: moving strings
// cost ~1,200 instructions per insert that entered a 256-value sample).
class BottomK {
  struct Entry {
    uint64_t hash;
    uint32_t slot;  // in values_
  };

 public:
  explicit BottomK(size_t k = 256) : k_(k) {}
  // `value` is an encoded value (value_codec.h); copied only when it enters the sample, into the
  // memory of the value it evicts once the sample is full.
  void add(uint64_t hash, std::string_view value);
  // False when add(hash, ...) would surely leave the sample unchanged (saves encoding the value):
  // a hash above the sample's largest, or one it holds already (a repeated value, the usual case
  // once a field's values recur: issue 29).
  bool mayTake(uint64_t hash) const { return hasRoomFor(hash) && !holds(hash); }
  void merge(const BottomK& other);
  // Whether the sample holds a value of this hash.
  bool holds(uint64_t hash) const {
    auto pos = firstAtOrAbove(hash);
    return pos != order_.end() && pos->hash == hash;
  }

  // The sample ascending by hash, as (hash, value) pairs.
  class Values {
   public:
    class iterator {
     public:
      using value_type = std::pair<uint64_t, const std::string&>;
      iterator(const Entry* e, const std::vector<std::string>* v) : e_(e), v_(v) {}
      value_type operator*() const { return {e_->hash, (*v_)[e_->slot]}; }
      iterator& operator++() { return ++e_, *this; }
      bool operator==(const iterator& o) const { return e_ == o.e_; }

     private:
      const Entry* e_;
      const std::vector<std::string>* v_;
    };
    Values(const BottomK& b) : b_(b) {}
    iterator begin() const { return {b_.order_.data(), &b_.values_}; }
    iterator end() const { return {b_.order_.data() + b_.order_.size(), &b_.values_}; }
    size_t size() const { return b_.order_.size(); }
    bool empty() const { return b_.order_.empty(); }
    bool operator==(const Values& o) const;

   private:
    const BottomK& b_;
  };
  Values values() const { return Values(*this); }
  size_t k() const { return k_; }
  // The heap bytes of its two arrays (not of the values' own memory), with malloc's headers.
  size_t arrayBytes() const;
  // Changes with every change of the sample: results derived from it can be kept while it is equal.
  uint64_t version() const { return version_; }

 private:
  // The first kept entry whose hash is not below `hash` (order_ is ascending by hash).
  std::vector<Entry>::const_iterator firstAtOrAbove(uint64_t hash) const {
    return std::lower_bound(order_.begin(), order_.end(), hash, [](const Entry& e, uint64_t h) { return e.hash < h; });
  }
  // Not full, or `hash` below the largest kept.
  bool hasRoomFor(uint64_t hash) const { return order_.size() < k_ || (k_ > 0 && hash < order_.back().hash); }

  size_t k_;
  std::vector<Entry> order_;         // ascending by hash
  std::vector<std::string> values_;  // by slot
  uint64_t version_ = 0;
};

// Vitter's algorithm R with a fixed seed, so the same traffic gives the same evaluation.
class ReservoirIndex {
 public:
  explicit ReservoirIndex(size_t capacity, uint64_t seed = 0x5eed) : capacity_(capacity), state_(seed) {}
  // Returns the slot to write (== size for an append) or -1 to skip.
  int64_t offer();
  uint64_t seen() const { return seen_; }
  size_t capacity() const { return capacity_; }
  void setSeen(uint64_t s) { seen_ = s; }

 private:
  uint64_t next() { return mix64(state_++); }
  size_t capacity_;
  uint64_t state_;
  uint64_t seen_ = 0;
};

}  // namespace shardscope::evaluation
