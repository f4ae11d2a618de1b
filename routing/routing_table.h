// The routing table: sharded collections by namespace (key pattern, chunk map, default collation)
// and the cluster's shard names. Immutable once built; shared as shared_ptr<const RoutingTable>.
#pragma once
#include <bson/bson.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "routing/chunk_map.h"
#include "routing/shard_key_pattern.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// What kind of tracked collection (config.collections fields beyond the key).
struct CollectionKind {
  // 8.0 `unsplittable: true`: tracked but not sharded, one chunk, possibly moved off the
  // database's primary shard: everything goes to the shard owning that chunk.
  bool unsplittable = false;
  // `timeseriesFields`: a time-series buckets collection (db.system.buckets.X); queries name the
  // view db.X and its fields (metaField -> meta, timeField -> control.min.<timeField>).
  bool timeseries = false;
  std::string time_field, meta_field;
  int64_t bucket_max_span_s = 0;  // bucketMaxSpanSeconds, else from granularity (3600 for seconds)
};

// Reads config.collections' `unsplittable` and `timeseriesFields` ({timeField, metaField,
// granularity, bucketMaxSpanSeconds}). False (with `error`) on a malformed timeseriesFields.
bool readCollectionKind(const char* field, const bson_iter_t& it, CollectionKind& kind, std::string& error);

struct CollectionRouting {
  std::string ns, db, coll;
  ShardKeyPattern key;
  ChunkMap chunks;
  bool unique = false;
  bool simple_default_collation = true;  // absent, null, {} or {locale: "simple"}
  std::string default_collation;         // BSON bytes of a non-simple default (else empty)
  CollectionKind kind;
};

class RoutingTable {
 public:
  const CollectionRouting* collection(std::string_view ns) const;
  bool isSharded(std::string_view ns) const { return collection(ns) != nullptr; }
  const ShardKeyPattern* shardKey(std::string_view ns) const;
  // The buckets collection behind a time-series view namespace ("db.X" -> db.system.buckets.X).
  const CollectionRouting* timeseriesView(std::string_view view_ns) const;

  size_t shardCount() const { return shard_names_.size(); }
  std::string_view shardName(size_t i) const { return i < shard_names_.size() ? shard_names_[i] : std::string_view(); }
  int shardIndex(std::string_view name) const;
  const std::map<std::string, std::unique_ptr<CollectionRouting>, std::less<>>& collections() const {
    return collections_;
  }

 private:
  friend class RoutingTableBuilder;
  std::vector<std::string> shard_names_;
  std::map<std::string, std::unique_ptr<CollectionRouting>, std::less<>> collections_;
  // The same collections, for a table holding a few (the usual case): collection() compares the
  // name's length, then its bytes, instead of walking the map with full string comparisons (a
  // lookup per targeted operation, issue 29). Empty when the table holds more; filled by build().
  static constexpr size_t kScannedCollections = 8;
  std::vector<std::pair<std::string_view, const CollectionRouting*>> scanned_;
  std::map<std::string, const CollectionRouting*, std::less<>> timeseries_views_;
};

// Collects shards and collections, validating each; then build() freezes the table.
class RoutingTableBuilder {
 public:
  // With a declared shard list, chunks naming any other shard are an error; without one, shards
  // are added as chunks name them.
  bool declareShard(std::string_view name, std::string& error);
  void setShardListDeclared(bool declared) { shards_declared_ = declared; }

  // `key` is the pattern document; `default_collation` may be null. Errors name ns and problem.
  struct ChunkDoc {
    std::vector<uint8_t> min, max;
    std::string shard;
  };
  bool addCollection(std::string_view ns, const bson_t& key, bool unique, const bson_t* default_collation,
                     std::vector<ChunkDoc> chunks, std::string& error, const CollectionKind& kind = {});

  std::shared_ptr<const RoutingTable> build();

 private:
  int shardIndexFor(std::string_view name, std::string& error);
  std::unique_ptr<RoutingTable> table_ = std::make_unique<RoutingTable>();
  bool shards_declared_ = false;
};

// True when a collation document means the simple (binary) collation.
bool isSimpleCollation(const bson_t* collation);
// True when a statement's collation (null: none) is the collection's default. Documents are
// compared as given: a non-simple default spelled differently counts as another collation.
bool isDefaultCollation(const CollectionRouting& coll, const bson_t* collation);

}  // namespace shardscope::routing

// The loaders live in routing_file.h; included here so users of the table find them too.
#include "routing/routing_file.h"
