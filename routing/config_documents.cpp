// buildFromConfigDocuments: config.collections + config.chunks (+ config.shards) as read through
// mongos. Joins chunks on uuid when the collection document has `timestamp` (5.0+), else on ns.
#pragma GCC diagnostic ignored "-Wignored-attributes"  // std::vector<bson_t*>, see routing_file.h
#include <algorithm>
#include <cstring>
#include <map>

#include "common/bson_order.h"
#include "common/command_fields.h"
#include "routing/routing_file.h"

namespace shardscope::routing {
namespace {

std::vector<uint8_t> docBytes(const bson_iter_t& it) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return std::vector<uint8_t>(data, data + len);
}

// Orders chunk min documents as shard keys (field by field) for sorting.
bool minLess(const RoutingTableBuilder::ChunkDoc& a, const RoutingTableBuilder::ChunkDoc& b) {
  bson_t da, db;
  if (!bson_init_static(&da, a.min.data(), a.min.size()) || !bson_init_static(&db, b.min.data(), b.min.size()))
    return a.min.size() < b.min.size();
  bson_iter_t ia, ib;
  bson_iter_init(&ia, &da);
  bson_iter_init(&ib, &db);
  while (true) {
    bool ha = bson_iter_next(&ia), hb = bson_iter_next(&ib);
    if (!ha || !hb) return !ha && hb;
    int c = common::compareValues(*bson_iter_value(&ia), *bson_iter_value(&ib));
    if (c != 0) return c < 0;
  }
}

}  // namespace

std::shared_ptr<const RoutingTable> buildFromConfigDocuments(const std::vector<bson_t*>& collections,
                                                             const std::vector<bson_t*>& chunks, std::string& error,
                                                             const std::vector<bson_t*>* shards) {
  RoutingTableBuilder builder;
  if (shards) {
    for (const bson_t* s : *shards) {
      bson_iter_t it;
      if (s && bson_iter_init_find(&it, s, "_id") && BSON_ITER_HOLDS_UTF8(&it) &&
          !builder.declareShard(bson_iter_utf8(&it, nullptr), error))
        return nullptr;
    }
    builder.setShardListDeclared(!shards->empty());
  }
  // Chunks grouped by the join key: "ns:<ns>" or "uuid:<bytes>".
  std::map<std::string, std::vector<RoutingTableBuilder::ChunkDoc>> grouped;
  for (const bson_t* c : chunks) {
    bson_iter_t it;
    if (!c || !bson_iter_init(&it, c)) continue;
    RoutingTableBuilder::ChunkDoc doc;
    std::string ns, uuid;
    while (bson_iter_next(&it)) {
      const char* k = bson_iter_key(&it);
      if (std::strcmp(k, "min") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) doc.min = docBytes(it);
      else if (std::strcmp(k, "max") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) doc.max = docBytes(it);
      else if (std::strcmp(k, "shard") == 0 && BSON_ITER_HOLDS_UTF8(&it)) doc.shard = bson_iter_utf8(&it, nullptr);
      else if (std::strcmp(k, "ns") == 0 && BSON_ITER_HOLDS_UTF8(&it)) ns = bson_iter_utf8(&it, nullptr);
      else if (std::strcmp(k, "uuid") == 0) uuid = common::binaryBytes(it);
    }
    if (!ns.empty()) grouped["ns:" + ns].push_back(doc);
    if (!uuid.empty()) grouped["uuid:" + uuid].push_back(std::move(doc));
  }
  for (const bson_t* coll : collections) {
    bson_iter_t it;
    if (!coll || !bson_iter_init(&it, coll)) continue;
    std::string ns, uuid;
    bool has_timestamp = false, dropped = false, unique = false, has_key = false;
    CollectionKind kind;
    bool has_collation = false;
    std::vector<uint8_t> key, collation;
    while (bson_iter_next(&it)) {
      const char* k = bson_iter_key(&it);
      if (std::strcmp(k, "_id") == 0 && BSON_ITER_HOLDS_UTF8(&it)) ns = bson_iter_utf8(&it, nullptr);
      else if (std::strcmp(k, "uuid") == 0) uuid = common::binaryBytes(it);
      else if (std::strcmp(k, "timestamp") == 0) has_timestamp = true;
      else if (std::strcmp(k, "dropped") == 0) dropped = bson_iter_as_bool(&it);
      else if (!readCollectionKind(k, it, kind, error)) {
        error = "collection '" + ns + "': " + error;
        return nullptr;
      } else if (std::strcmp(k, "unique") == 0) unique = bson_iter_as_bool(&it);
      else if (std::strcmp(k, "key") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        key = docBytes(it);
        has_key = true;
      } else if (std::strcmp(k, "defaultCollation") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        collation = docBytes(it);
        has_collation = true;
      }
    }
    // Dropped (pre-5.0) collections are gone. Unsplittable (8.0) ones are kept: their one chunk
    // names the shard that owns them, which need not be the database's primary.
    if (ns.empty() || dropped || !has_key) continue;
    std::string join = has_timestamp ? "uuid:" + uuid : "ns:" + ns;
    auto found = grouped.find(join);
    if (found == grouped.end() || found->second.empty()) {
      if (kind.unsplittable) continue;  // no chunk to say where it lives: left to the db-primary
      error = "collection '" + ns + "': no chunks found (joined by " + (has_timestamp ? "uuid" : "ns") + ")";
      return nullptr;
    }
    auto& docs = found->second;
    std::sort(docs.begin(), docs.end(), minLess);
    bson_t key_doc, coll_doc;
    bson_init_static(&key_doc, key.data(), key.size());
    if (has_collation) bson_init_static(&coll_doc, collation.data(), collation.size());
    if (!builder.addCollection(ns, key_doc, unique, has_collation ? &coll_doc : nullptr, docs, error, kind))
      return nullptr;
  }
  return builder.build();
}

}  // namespace shardscope::routing
