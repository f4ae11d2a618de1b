// The evaluation state of one namespace: per-field sketches of inserted documents, a reservoir of
// inserted documents (projected to small top-level fields), and per-query-shape counts with a few
// sampled filters. Everything merges, so sidecars' states combine into one fleet evaluation.
#pragma once
#include <bson/bson.h>

#include <atomic>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "evaluation/document_walk.h"
#include "evaluation/field_limits.h"
#include "evaluation/key_facts.h"
#include "evaluation/sketches.h"

#include <algorithm>

namespace shardscope::evaluation {

// Bytes the evaluator may hold in all its namespaces (evaluation.max_memory_bytes).
struct MemoryBudget {
  std::atomic<size_t> used{0};
  size_t limit = SIZE_MAX;
};

// What one namespace has charged against its own bound and the shared one. A copy (a render's
// snapshot, a merge's temporary) charges nothing and releases nothing.
class BudgetCharge {
 public:
  BudgetCharge() = default;
  BudgetCharge(const BudgetCharge&) noexcept {}
  BudgetCharge& operator=(const BudgetCharge&) noexcept { return *this; }
  ~BudgetCharge() {
    if (shared_) shared_->used.fetch_sub(charged_, std::memory_order_relaxed);
  }
  void attach(MemoryBudget* shared, size_t limit) {
    shared_ = shared;
    limit_ = limit;
  }
  // Whether `more` bytes fit both bounds; charges them when they do.
  bool take(size_t more) {
    if (charged_ + more > limit_) return false;
    if (shared_) {
      size_t used = shared_->used.load(std::memory_order_relaxed);
      do {
        if (used + more > shared_->limit) return false;
      } while (!shared_->used.compare_exchange_weak(used, used + more, std::memory_order_relaxed));
    }
    charged_ += more;
    return true;
  }
  void give(size_t less) {
    less = std::min(less, charged_);
    if (less == 0) return;
    charged_ -= less;
    if (shared_) shared_->used.fetch_sub(less, std::memory_order_relaxed);
  }
  // `charged_for` bytes were charged for something that turned out to hold `actual`.
  void settle(size_t charged_for, size_t actual) {
    if (actual == charged_for) return;  // the usual case once warm: no shared write
    if (actual > charged_for) {
      charged_ += actual - charged_for;
      if (shared_) shared_->used.fetch_add(actual - charged_for, std::memory_order_relaxed);
    } else {
      give(charged_for - actual);
    }
  }
  size_t charged() const { return charged_; }

 private:
  MemoryBudget* shared_ = nullptr;
  size_t limit_ = SIZE_MAX;
  size_t charged_ = 0;
};


struct StateLimits {
  uint32_t simulated_shards = 4;
  uint32_t sample_size = 4096;      // reservoir of inserted documents
  uint32_t max_fields = 32;         // tracked top-level fields
  // Fields the operator named for this namespace (its shard key's, its configured candidates',
  // its lookup rule's): tracked even past max_fields, so fields a client made up first cannot
  // leave them untracked.
  std::vector<std::string> kept_fields;
  uint32_t max_shapes = 256;        // query shapes; the rest count as "other"
  uint32_t samples_per_shape = 8;   // sampled filters per shape
  uint32_t distinct_sample = 256;   // bottom-k distinct values per field (split points)
  uint32_t heavy_hitters = 64;      // SpaceSaving counters per field
  uint32_t resplit_every = 512;     // inserts between re-computations of simulated split points
  bool allow_values = false;
  size_t max_bytes = SIZE_MAX;            // this namespace's bound (fields and samples)
  MemoryBudget* shared_budget = nullptr;  // the evaluator's, shared by its namespaces
};

enum class OpKind : uint8_t { Find, Aggregate, Count, Distinct, Update, Delete, FindAndModify };
// How an observed document came into being: an insert, an upsert that inserted (confirmed by the
// reply's `upserted`), a replacement of an existing document; UpsertMatched carries no document
// (an upsert that updated an existing one, counted only).
enum class DocOrigin : uint8_t { Insert, Upserted, Replaced, UpsertMatched };
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
  uint64_t arrays = 0;  // documents holding an array here (MongoDB refuses them under a key on this path)
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

constexpr size_t kMaxShapeModifiedNames = 128;

struct ShapeState;
// The index of `name` (cut to kMaxFieldNameBytes) in the shape's `modified`, its size when it is
// not there; `room`: whether a new one would fit (statements of one shape, a fleet's shapes: one
// union, one rule).
size_t modifiedIndex(const ShapeState& s, std::string_view name, bool& room);

struct ShapeState {
  std::string shape;
  OpKind kind = OpKind::Find;
  bool multi = false;
  bool upsert = false;
  uint64_t count = 0;     // statements of this shape (a batched write counts each of its statements)
  uint64_t commands = 0;  // commands it opened: /stats' count under the same id
  uint64_t offered = 0;
  std::vector<std::string> samples;   // filter BSON bytes
  // Update paths ($set etc.), or "" for a replacement (then "$name" per field it carries): the
  // union over the shape's statements (a later one may change a key field the first left alone),
  // at most kMaxShapeModifiedNames; `modified_counts[i]`: the statements whose list named
  // modified[i], so a key update is counted for the statements that make it, not the whole shape.
  std::vector<std::string> modified;
  std::vector<uint64_t> modified_counts;
  // The name lists already seen (the statements of a shape mostly repeat one list): its hash and
  // which of `modified` it names (bit i: modified[i]), so a repeat costs one hash and no walk.
  struct NameList {
    uint64_t hash = 0;
    std::array<uint64_t, 2> names{};
  };
  std::array<NameList, 8> modified_lists{};
  uint8_t modified_lists_kept = 0;
  std::vector<std::string> sort;      // sort fields (find, findAndModify)
  // Fields the shape's filters pin by equality / bound by a range, as exported by sidecars whose
  // sampled filters stayed with them (candidate keys are proposed from them).
  std::vector<std::string> eq_fields, range_fields;
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
  bool upsert = false;
  uint64_t shape_hash = 0;
  std::string_view shape;
  std::string_view filter;    // BSON; empty: not sampled
  std::string_view modified;  // field names, each followed by a NUL ("" for a replacement)
  std::string_view sort;      // sort fields, likewise
  uint32_t count = 1;         // operations it stands for (an unsampled one only may stand for more)
  uint32_t commands = 0;      // of them, commands it is the first statement of (ShapeState::commands)
};

struct DigestView;

class NamespaceState {
 public:
  NamespaceState(std::string ns, const StateLimits& limits);

  const std::string& ns() const { return ns_; }
  const StateLimits& limits() const { return limits_; }
  // A document that came into being (inserted, upserted or replacing one): its fields at every
  // path (a.b as well as a, up to kMaxNestedDepth levels) feed the sketches.
  void applyInsert(const bson_t& doc, int64_t time_us, DocOrigin origin = DocOrigin::Insert);
  // The same from a large document's digest (document_digest.h), made where the document was seen.
  void applyDigest(const DigestView& digest, int64_t time_us, DocOrigin origin = DocOrigin::Insert);
  void applyOp(const OpRecord& op);

  void toBson(bson_t* out) const;
  bool mergeBson(const bson_t& doc, std::string& error);
  void merge(const NamespaceState& other);
  // The heap and object bytes this state holds, from its containers' capacities.
  size_t memoryBytes() const;
  size_t chargedBytes() const { return charge_.charged(); }
  uint64_t dropped_for_memory = 0;  // samples and fields left out because a byte bound was reached

  uint64_t inserts = 0, insert_bytes = 0, reads = 0, writes = 0, other_shape_ops = 0;
  // Of `inserts`, those made by upserts; upserts that updated an existing document instead; and
  // replacements of existing documents (observed as documents, not counted in `inserts`).
  uint64_t upserted = 0, upserts_matched = 0, replacements = 0;
  std::vector<FieldState> fields;
  std::vector<SampleDoc> reservoir;
  uint64_t reservoir_seen = 0;
  std::unordered_map<uint64_t, ShapeState> shapes;

  // Sidecar exports merged into this state (0: it holds this process' own observations), and the
  // candidate keys' facts they carried (key_facts.h), merged.
  uint32_t fact_exports = 0;
  std::vector<KeyFacts> imported_facts;
  const KeyFacts* importedFacts(std::string_view key_json) const;
  // Arrival times of the sampled inserts (first, last) and how many: from the reservoir and from
  // the exports merged.
  void sampleSpan(int64_t& first, int64_t& last, uint64_t& count) const;
  int64_t imported_first_us = INT64_MAX, imported_last_us = INT64_MIN;
  uint64_t imported_samples = 0;

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
  // `guess`: where the field probably is (documents tend to list fields in the same order); checked
  // inline, as it is right for nearly every field of every insert.
  size_t fieldIndex(std::string_view path, size_t guess) const {
    return guess < fields.size() && fields[guess].path == path ? guess : indexedField(path);
  }
  size_t indexedField(std::string_view path) const;
  FieldState* trackField(std::string_view path);  // null when the byte bound refuses a new field
  // Frees the least-counted shape's row for a new shape (its operations into other_shape_ops).
  void evictLeastCountedShape();
  // A new field gets tracked: below max_fields, or one the operator named (StateLimits::kept_fields).
  bool mayTrack(std::string_view path) const;
  // `hash` is the value's; `whole` false when `v` is a prefix of it (a digest's large value).
  void observeField(FieldState& f, const bson_value_t& v, uint64_t hash, bool whole = true);
  void observePath(std::string_view path, const bson_iter_t& it, size_t position, const uint64_t* hash = nullptr,
                   bool whole = true);
  void mergeModified(ShapeState& s, std::string_view names, uint64_t count);
  void countInsert(uint64_t bytes, DocOrigin origin);
  // An inserted document without _id gets an ObjectId from the server (mongod, or mongos to route
  // it): observed as one made at its arrival, unique and rising, so _id keys see what is stored.
  void observeServerId(bson_oid_t& oid);
  void finishInsert(int64_t time_us, const bson_t* doc, std::string_view projection);
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
  std::string projected_;      // the current insert, projected for the reservoir
  bool lacks_id_ = false;      // the current insert has no top-level _id (so far)
  uint64_t server_ids_ = 0;    // ObjectIds made for such inserts (their counter)
  DocumentWalk walk_;          // the current insert's fields
  BudgetCharge charge_;
};

}  // namespace shardscope::evaluation
