// What targeting decided for one operation: the class, the exact shard set and why.
// Shared by the proxy (inline, per message), statistics and `shardscope explain`.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shardscope::routing {

// A cluster with more shards than this is refused when the routing table loads.
constexpr size_t kMaxShards = 1024;
// Indices into RoutingTable's shard list; fixed size so the hot path never allocates. Only the
// words up to the highest shard ever set hold bits (a set of shard 3 is one word of sixteen): made,
// copied, scanned and counted over those alone. As std::bitset<1024> it zeroed, copied and scanned
// 128 bytes each time, ~330 instructions per operation with everything on (issue 29).
class ShardSet {
 public:
  static constexpr size_t kWords = kMaxShards / 64;

  ShardSet() {}  // user-provided: ShardSet{} and TargetResult{} leave the words unwritten too
  ShardSet(const ShardSet& o) { copyFrom(o); }
  ShardSet& operator=(const ShardSet& o) {
    if (this != &o) copyFrom(o);
    return *this;
  }

  static constexpr size_t size() { return kMaxShards; }
  ShardSet& set(size_t i) {
    word(i / 64) |= uint64_t{1} << (i % 64);
    return *this;
  }
  bool test(size_t i) const { return i / 64 < used_ && (words_[i / 64] >> (i % 64)) & 1; }
  ShardSet& reset() {
    used_ = 0;
    return *this;
  }
  bool any() const {
    for (size_t w = 0; w < used_; ++w)
      if (words_[w]) return true;
    return false;
  }
  bool none() const { return !any(); }
  size_t count() const {
    size_t n = 0;
    for (size_t i = first(); i < size(); i = next(i)) ++n;  // a ctz per set bit: see below
    return n;
  }
  // The lowest set index, or size() when none; the next one after `i`, or size().
  size_t first() const { return from(0, ~uint64_t{0}); }
  size_t next(size_t i) const {
    ++i;
    if (i >= size()) return size();
    return from(i / 64, ~uint64_t{0} << (i % 64));
  }

  ShardSet& operator|=(const ShardSet& o) {
    for (size_t w = 0; w < o.used_; ++w) word(w) |= o.words_[w];
    return *this;
  }
  friend ShardSet operator&(const ShardSet& a, const ShardSet& b) {
    ShardSet r;
    r.used_ = std::min(a.used_, b.used_);
    for (size_t w = 0; w < r.used_; ++w) r.words_[w] = a.words_[w] & b.words_[w];
    return r;
  }
  friend bool operator==(const ShardSet& a, const ShardSet& b) {
    for (size_t w = 0; w < std::max(a.used_, b.used_); ++w)
      if (a.wordOr0(w) != b.wordOr0(w)) return false;
    return true;
  }

 private:
  void copyFrom(const ShardSet& o) {
    used_ = o.used_;
    if (used_ == 1) words_[0] = o.words_[0];  // the usual set: inline, where a memcpy of a variable size is a call
    else if (used_ > 1) std::memcpy(words_, o.words_, used_ * sizeof(uint64_t));
  }
  // Word w, made (zeroed) first when past the ones in use.
  uint64_t& word(size_t w) {
    for (; used_ <= w; ++used_) words_[used_] = 0;
    return words_[w];
  }
  uint64_t wordOr0(size_t w) const { return w < used_ ? words_[w] : 0; }
  size_t from(size_t w, uint64_t mask) const {
    for (; w < used_; ++w, mask = ~uint64_t{0})
      if (const uint64_t bits = words_[w] & mask) return w * 64 + static_cast<size_t>(std::countr_zero(bits));
    return size();
  }

  uint16_t used_ = 0;
  uint64_t words_[kWords];  // only [0, used_) are read
};

// The shards in a set, and whether it is exactly one, found by scanning for set bits (a ctz per set
// bit, as ShardSet::count does): std::bitset::count() called libgcc's software popcount once per
// word (16 per set) on the baseline x86-64 target, ~2.5 % of the proxy's instructions per operation
// (callgrind, bench/RESULTS.md).
inline size_t shardCount(const ShardSet& s) { return s.count(); }
inline bool isSingleShard(const ShardSet& s) {
  const size_t first = s.first();
  return first < s.size() && s.next(first) == s.size();
}

enum class Targeting : uint8_t {
  Single,        // exactly one shard
  Multi,         // several shards, chosen by shard-key bounds
  Broadcast,     // the shard key is not constrained: every shard owning chunks
  Unsharded,     // the namespace is not sharded (goes to its db-primary)
  NoCollection,  // the command names no collection (hello, ping, auth, ...)
  Unclassified,  // the engine could not parse it; forwarded unchanged
};

std::string_view targetingName(Targeting t);  // "single", "multi", "broadcast", ...

struct TargetResult {
  Targeting targeting = Targeting::Unclassified;
  ShardSet shards;
  // Static text on the hot path (no allocation); `detail` is filled only when explaining.
  std::string_view reason;
  std::string detail;
  // mongos would refuse the operation (e.g. an insert whose shard-key value is an array); the
  // message is still forwarded unchanged, `reason` says why.
  bool refused = false;
  // The per-request analysis budget ran out (a huge filter or batch): the answer is the
  // conservative one, and shardscope_analysis_over_budget_total counts it.
  bool over_budget = false;
  // How many shards own chunks of the targeted collection (the denominator of MongoDB's count-based
  // allShards class); 0 when unknown (unsharded, no collection, bulkWrite over several namespaces).
  uint16_t owning_shards = 0;
  // Upsert statements (update upsert:true, findAndModify upsert) whose filter does not pin the full
  // shard key: refused by mongos before 7.1, two-phase broadcast after. Counted per shape in /stats.
  uint32_t untargetable_upserts = 0;
  // Statements of a batched write that mongos refuses (or, in an ordered batch, never runs after
  // the first refused one) while the rest of the batch runs (routing/write_targeting.h WriteFold):
  // the class and shards are those of the statements that run.
  uint32_t refused_statements = 0;
  // Nonzero: `shards` are positions in the table of that routing load (RoutingLoad::generation), not
  // in the table targeting read: a getMore or killCursors continues a cursor opened before a reload.
  uint64_t shards_load = 0;
  // Explain only: BSON of the full shard-key value pinned by equality ({field: value, ...}, hashed
  // fields as NumberLong); empty when the operation does not pin every key field.
  std::string shard_key;
};

}  // namespace shardscope::routing
