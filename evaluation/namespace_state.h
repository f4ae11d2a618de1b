// The evaluation state of one namespace: per-field sketches of inserted documents, a reservoir of
// inserted documents (projected to small top-level fields), and per-query-shape counts with a few
// sampled filters. Everything merges, so sidecars' states combine into one fleet evaluation.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "evaluation/sketches.h"

namespace shardscope::evaluation {

struct StateLimits {
  uint32_t simulated_shards = 4;
  uint32_t sample_size = 4096;      // reservoir of inserted documents
  uint32_t max_fields = 32;         // tracked top-level fields
  uint32_t max_shapes = 256;        // query shapes; the rest count as "other"
  uint32_t samples_per_shape = 8;   // sampled filters per shape
  uint32_t distinct_sample = 256;   // bottom-k distinct values per field (split points)
  uint32_t heavy_hitters = 64;      // SpaceSaving counters per field
  uint32_t resplit_every = 512;     // inserts between re-computations of simulated split points
  bool allow_values = false;
};

enum class OpKind : uint8_t { Find, Aggregate, Count, Distinct, Update, Delete, FindAndModify };
const char* opKindName(OpKind k);
inline bool isRead(OpKind k) { return k <= OpKind::Distinct; }

// Decoded views of a field's max, min and split points (stored encoded), so that an insert compares
// against them without parsing them again. A copy or move starts invalid: its views would point
// into the strings of the field it came from.
struct DecodedBounds {
  bool valid = false;
  bson_value_t max{}, min{};
  std::vector<bson_value_t> splits;

  DecodedBounds() = default;
  DecodedBounds(const DecodedBounds&) noexcept {}
  DecodedBounds& operator=(const DecodedBounds&) noexcept {
    valid = false;
    return *this;
  }
};

struct FieldState {
  std::string path;
  uint64_t count = 0;  // inserts seen since this field was first tracked
  HyperLogLog hll;
  SpaceSaving freq;
  BottomK distinct;
  std::string max, min;  // encoded values
  uint64_t new_max = 0, new_min = 0, compared = 0;
  uint64_t type_oid = 0, type_date = 0, type_number = 0, type_string = 0, type_other = 0, missing = 0;
  // Simulated cluster: inserts per shard once the first split points existed (warm-up excluded).
  std::vector<std::string> splits;
  uint64_t splits_of = UINT64_MAX;  // the distinct sample's version they were computed from
  uint64_t since_split = 0;
  // Decayed at each re-split (x kDecay), so the distribution reflects recent inserts under recent
  // split points: warm-up fades, and a monotonic key's inserts show up on the top chunk's shard.
  std::vector<double> ranged_shard_inserts, hashed_shard_inserts;
  DecodedBounds decoded;  // of max, min and splits
};

constexpr double kShardCountDecay = 0.97;

struct ShapeState {
  std::string shape;
  OpKind kind = OpKind::Find;
  bool multi = false;
  uint64_t count = 0;
  uint64_t offered = 0;
  std::vector<std::string> samples;   // filter BSON bytes
  std::vector<std::string> modified;  // update paths ($set etc.), or "" for a replacement
  std::vector<std::string> sort;      // sort fields (find, findAndModify)
};

struct SampleDoc {
  int64_t time_us = 0;
  uint64_t seq = 0;
  std::string doc;  // projected BSON
};

// One observed operation: views into the observer's batch, copied only when they start a new
// shape or become a sampled filter.
struct OpRecord {
  OpKind kind = OpKind::Find;
  bool multi = false;
  uint64_t shape_hash = 0;
  std::string_view shape;
  std::string_view filter;    // BSON; empty: not sampled
  std::string_view modified;  // field names, each followed by a NUL ("" for a replacement)
  std::string_view sort;      // sort fields, likewise
};

class NamespaceState {
 public:
  NamespaceState(std::string ns, const StateLimits& limits);

  const std::string& ns() const { return ns_; }
  const StateLimits& limits() const { return limits_; }
  void applyInsert(const bson_t& doc, int64_t time_us);
  void applyOp(const OpRecord& op);

  void toBson(bson_t* out) const;
  bool mergeBson(const bson_t& doc, std::string& error);
  void merge(const NamespaceState& other);
  size_t memoryBytes() const;

  uint64_t inserts = 0, insert_bytes = 0, reads = 0, writes = 0, other_shape_ops = 0;
  std::vector<FieldState> fields;
  std::vector<SampleDoc> reservoir;
  uint64_t reservoir_seen = 0;
  std::unordered_map<uint64_t, ShapeState> shapes;

  const FieldState* field(std::string_view path) const;
  // Split points of a field's simulated ranged chunks: quantiles of its distinct-value sample.
  static std::vector<std::string> computeSplits(const BottomK& distinct, uint32_t shards);
  // The same into `splits`, reusing its strings' memory; `order` is scratch.
  using DecodedValues = std::vector<std::pair<bson_value_t, const std::string*>>;
  static void computeSplits(const BottomK& distinct, uint32_t shards, std::vector<std::string>& splits,
                            DecodedValues& order);
  // Shard of a value under (decoded) split points: the number of splits <= value.
  static uint32_t rangedShard(const std::vector<bson_value_t>& splits, const bson_value_t& v);
  static uint32_t hashedShard(uint64_t value_hash, uint32_t shards);

 private:
  static constexpr size_t kUntracked = SIZE_MAX;
  size_t fieldIndex(std::string_view path, size_t guess) const;
  FieldState& trackField(std::string_view path);
  void observeField(FieldState& f, const bson_value_t& v);
  uint64_t nextRandom() { return mix64(rng_++); }

  struct PathHash {
    using is_transparent = void;  // look paths up by string_view without building a std::string
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::string ns_;
  StateLimits limits_;
  std::unordered_map<std::string, size_t, PathHash, std::equal_to<>> field_index_;
  uint64_t rng_ = 0x5eed;
  // Scratch kept between inserts, so that applying one allocates nothing.
  std::vector<uint8_t> seen_;  // per tracked field: present in the current document
  std::string encoded_;        // the current value, encoded
  DecodedValues split_order_;  // computeSplits
};

}  // namespace shardscope::evaluation
