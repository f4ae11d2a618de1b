// Routing table lookup and construction.
#include "routing/routing_table.h"

#include <cstring>

namespace shardscope::routing {

const CollectionRouting* RoutingTable::collection(std::string_view ns) const {
  if (!scanned_.empty()) {
    for (const auto& [name, coll] : scanned_)
      if (name.size() == ns.size() && std::memcmp(name.data(), ns.data(), ns.size()) == 0) return coll;
    return nullptr;
  }
  auto it = collections_.find(ns);
  return it == collections_.end() ? nullptr : it->second.get();
}

const ShardKeyPattern* RoutingTable::shardKey(std::string_view ns) const {
  const CollectionRouting* c = collection(ns);
  return c ? &c->key : nullptr;
}

int RoutingTable::shardIndex(std::string_view name) const {
  for (size_t i = 0; i < shard_names_.size(); ++i)
    if (shard_names_[i] == name) return static_cast<int>(i);
  return -1;
}

bool isSimpleCollation(const bson_t* collation) {
  if (!collation || bson_empty(collation)) return true;
  bson_iter_t it;
  if (bson_iter_init_find(&it, collation, "locale") && BSON_ITER_HOLDS_UTF8(&it))
    return std::strcmp(bson_iter_utf8(&it, nullptr), "simple") == 0;
  return false;
}

bool isDefaultCollation(const CollectionRouting& coll, const bson_t* collation) {
  if (!collation || bson_empty(collation)) return true;  // {} means the default too
  if (isSimpleCollation(collation)) return coll.simple_default_collation;
  return collation->len == coll.default_collation.size() &&
         std::memcmp(bson_get_data(collation), coll.default_collation.data(), collation->len) == 0;
}

int RoutingTableBuilder::shardIndexFor(std::string_view name, std::string& error) {
  int i = table_->shardIndex(name);
  if (i >= 0) return i;
  if (shards_declared_) {
    error = "unknown shard '" + std::string(name) + "' (not in the shard list)";
    return -1;
  }
  return declareShard(name, error) ? static_cast<int>(table_->shard_names_.size() - 1) : -1;
}

bool RoutingTableBuilder::declareShard(std::string_view name, std::string& error) {
  if (name.empty()) {
    error = "empty shard name";
    return false;
  }
  if (table_->shardIndex(name) >= 0) return true;
  if (table_->shard_names_.size() >= kMaxShards) {
    error = "more than 1024 shards";
    return false;
  }
  table_->shard_names_.emplace_back(name);
  return true;
}

bool RoutingTableBuilder::addCollection(std::string_view ns, const bson_t& key, bool unique,
                                        const bson_t* default_collation, std::vector<ChunkDoc> chunks,
                                        std::string& error, const CollectionKind& kind) {
  auto fail = [&](const std::string& why) {
    error = "collection '" + std::string(ns) + "': " + why;
    return false;
  };
  size_t dot = ns.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == ns.size()) return fail("ns must be \"db.collection\"");
  if (table_->collections_.count(ns)) return fail("listed twice");
  std::string why;
  auto pattern = ShardKeyPattern::parse(key, why);
  if (!pattern) return fail(why);
  auto c = std::make_unique<CollectionRouting>();
  c->ns = std::string(ns);
  c->db = std::string(ns.substr(0, dot));
  c->coll = std::string(ns.substr(dot + 1));
  c->key = std::move(*pattern);
  c->unique = unique;
  c->simple_default_collation = isSimpleCollation(default_collation);
  if (!c->simple_default_collation)
    c->default_collation.assign(reinterpret_cast<const char*>(bson_get_data(default_collation)), default_collation->len);
  std::vector<ChunkInput> inputs;
  inputs.reserve(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    int shard = shardIndexFor(chunks[i].shard, why);
    if (shard < 0) return fail("chunk " + std::to_string(i) + ": " + why);
    inputs.push_back({std::move(chunks[i].min), std::move(chunks[i].max), static_cast<uint16_t>(shard)});
  }
  if (!c->chunks.build(c->key, std::move(inputs), why)) return fail(why);
  c->kind = kind;
  if (kind.timeseries) {
    constexpr std::string_view kBuckets = "system.buckets.";
    if (c->coll.rfind(kBuckets, 0) != 0 || c->coll.size() == kBuckets.size())
      return fail("timeseriesFields on a namespace that is not db.system.buckets.<name>");
    table_->timeseries_views_.emplace(c->db + "." + c->coll.substr(kBuckets.size()), c.get());
  }
  table_->collections_.emplace(c->ns, std::move(c));
  return true;
}

const CollectionRouting* RoutingTable::timeseriesView(std::string_view view_ns) const {
  if (timeseries_views_.empty()) return nullptr;
  auto it = timeseries_views_.find(view_ns);
  return it == timeseries_views_.end() ? nullptr : it->second;
}

bool readCollectionKind(const char* field, const bson_iter_t& it, CollectionKind& kind, std::string& error) {
  if (std::strcmp(field, "unsplittable") == 0) {
    kind.unsplittable = bson_iter_as_bool(&it);
    return true;
  }
  if (std::strcmp(field, "timeseriesFields") != 0) return true;
  bson_iter_t f;
  bson_iter_t copy = it;
  if (!BSON_ITER_HOLDS_DOCUMENT(&copy) || !bson_iter_recurse(&copy, &f)) {
    error = "timeseriesFields must be a document";
    return false;
  }
  std::string granularity = "seconds";
  while (bson_iter_next(&f)) {
    const char* k = bson_iter_key(&f);
    if (std::strcmp(k, "timeField") == 0 && BSON_ITER_HOLDS_UTF8(&f)) kind.time_field = bson_iter_utf8(&f, nullptr);
    else if (std::strcmp(k, "metaField") == 0 && BSON_ITER_HOLDS_UTF8(&f))
      kind.meta_field = bson_iter_utf8(&f, nullptr);
    else if (std::strcmp(k, "granularity") == 0 && BSON_ITER_HOLDS_UTF8(&f)) granularity = bson_iter_utf8(&f, nullptr);
    else if (std::strcmp(k, "bucketMaxSpanSeconds") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
      kind.bucket_max_span_s = bson_iter_as_int64(&f);
  }
  if (kind.time_field.empty()) {
    error = "timeseriesFields without a timeField";
    return false;
  }
  if (kind.bucket_max_span_s <= 0) {
    // The documented spans per granularity: seconds 1 hour, minutes 24 hours, hours 30 days.
    kind.bucket_max_span_s = granularity == "hours" ? 30LL * 86400 : granularity == "minutes" ? 86400 : 3600;
  }
  kind.timeseries = true;
  return true;
}

std::shared_ptr<const RoutingTable> RoutingTableBuilder::build() {
  if (table_->collections_.size() <= RoutingTable::kScannedCollections)
    for (const auto& [ns, coll] : table_->collections_) table_->scanned_.emplace_back(ns, coll.get());
  std::shared_ptr<const RoutingTable> out(std::move(table_));
  table_ = std::make_unique<RoutingTable>();
  return out;
}

}  // namespace shardscope::routing
