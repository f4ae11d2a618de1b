// Incremental catalog reads (routing/catalog_cache.h).
#pragma GCC diagnostic ignored "-Wignored-attributes"  // std::vector<bson_t*>, see routing_file.h
#include "routing/catalog_cache.h"

#include <algorithm>
#include <cstring>

#include "common/bson_order.h"
#include "routing/routing_file.h"

namespace shardscope::routing {
namespace {

bool subDocument(const bson_t* doc, const char* key, const uint8_t*& data, uint32_t& len) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, key) || !BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  bson_iter_document(&it, &len, &data);
  return data != nullptr;
}

// Shard-key documents compared field by field (bounds of one collection share the pattern).
int compareKeys(const uint8_t* a_data, uint32_t a_len, const uint8_t* b_data, uint32_t b_len) {
  bson_iter_t ia, ib;
  if (!bson_iter_init_from_data(&ia, a_data, a_len) || !bson_iter_init_from_data(&ib, b_data, b_len)) return 0;
  while (true) {
    bool ha = bson_iter_next(&ia), hb = bson_iter_next(&ib);
    if (!ha || !hb) return ha == hb ? 0 : (ha ? 1 : -1);
    int c = common::compareValues(*bson_iter_value(&ia), *bson_iter_value(&ib));
    if (c != 0) return c;
  }
}

std::string rawField(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, key)) return {};
  const bson_value_t* v = bson_iter_value(&it);
  switch (v->value_type) {
    case BSON_TYPE_BINARY:
      return std::string(reinterpret_cast<const char*>(v->value.v_binary.data), v->value.v_binary.data_len);
    case BSON_TYPE_OID:
      return std::string(reinterpret_cast<const char*>(v->value.v_oid.bytes), 12);
    case BSON_TYPE_TIMESTAMP:
      return std::to_string(v->value.v_timestamp.timestamp) + "," + std::to_string(v->value.v_timestamp.increment);
    case BSON_TYPE_DOCUMENT: {
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bson_iter_document(&it, &len, &data);
      return std::string(reinterpret_cast<const char*>(data), len);
    }
    default:
      return {};
  }
}

std::string epochLabel(const bson_t* coll) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, coll, "timestamp") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
    uint32_t t = 0, i = 0;
    bson_iter_timestamp(&it, &t, &i);
    return "Timestamp(" + std::to_string(t) + ", " + std::to_string(i) + ")";
  }
  if (bson_iter_init_find(&it, coll, "lastmodEpoch") && BSON_ITER_HOLDS_OID(&it)) {
    char hex[25];
    bson_oid_to_string(bson_iter_oid(&it), hex);
    return hex;
  }
  return "";
}

}  // namespace

ChunkVersion chunkVersionOf(const bson_t* chunk) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, chunk, "lastmod") || !BSON_ITER_HOLDS_TIMESTAMP(&it)) return 0;
  uint32_t major = 0, minor = 0;
  bson_iter_timestamp(&it, &major, &minor);
  return (static_cast<ChunkVersion>(major) << 32) | minor;
}

std::vector<CatalogCache::Read> CatalogCache::plan(const std::vector<bson_t*>& collections, bool complete,
                                                   const std::set<std::string>& requested) {
  std::vector<Read> reads;
  std::set<std::string> listed;
  for (const bson_t* doc : collections) {
    bson_iter_t it;
    if (!doc || !bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
    std::string ns = bson_iter_utf8(&it, nullptr);
    if ((bson_iter_init_find(&it, doc, "dropped") && bson_iter_as_bool(&it)) || !bson_has_field(doc, "key"))
      continue;  // pre-5.0 dropped entries; no key: not sharded
    listed.insert(ns);
    std::string identity = rawField(doc, "uuid") + '|' + rawField(doc, "lastmodEpoch") + '|' +
                           rawField(doc, "timestamp") + '|' + rawField(doc, "key");
    Collection& c = collections_[ns];
    bool recreated = c.identity != identity;
    if (recreated || !c.doc || c.doc->len != doc->len || std::memcmp(bson_get_data(c.doc.get()), bson_get_data(doc), doc->len) != 0)
      changed_ = true;
    c.doc.reset(bson_copy(doc));
    c.epoch_label = epochLabel(doc);
    std::string epoch = rawField(doc, "lastmodEpoch");
    c.epoch.assign(epoch.begin(), epoch.end());
    if (recreated) {  // new, dropped and re-created, resharded or key refined: start over
      c.identity = std::move(identity);
      c.chunks.clear();
      c.max_version = 0;
      c.loaded = false;
    }
    Read r;
    r.ns = ns;
    r.by_uuid = bson_has_field(doc, "timestamp");
    r.uuid = rawField(doc, "uuid");
    r.full = !c.loaded;
    r.since = c.max_version;
    reads.push_back(std::move(r));
  }
  for (auto it = collections_.begin(); it != collections_.end();) {
    bool gone = !listed.count(it->first) && (complete || requested.count(it->first));
    if (gone) changed_ = true;
    it = gone ? collections_.erase(it) : std::next(it);
  }
  return reads;
}

bool CatalogCache::consistent(const Collection& c, std::string& why) const {
  // One version of the collection: its chunks tile the key space. The builder checks bounds,
  // MinKey/MaxKey ends and shard names; a single-collection build is that check.
  std::vector<bson_t*> colls{c.doc.get()}, docs;
  docs.reserve(c.chunks.size());
  for (const auto& ch : c.chunks) docs.push_back(ch.doc.get());
  return buildFromConfigDocuments(colls, docs, why) != nullptr;
}

bool CatalogCache::apply(const Read& read, std::vector<OwnedBson> chunks, std::string& why) {
  auto found = collections_.find(read.ns);
  if (found == collections_.end()) return true;
  Collection& c = found->second;
  if (!read.full && chunks.empty()) return true;  // unchanged since `since`
  changed_ = true;
  std::vector<Chunk> incoming;
  incoming.reserve(chunks.size());
  for (auto& doc : chunks) {
    Chunk ch;
    if (!subDocument(doc.get(), "min", ch.min, ch.min_len) || !subDocument(doc.get(), "max", ch.max, ch.max_len)) {
      why = "collection '" + read.ns + "': a chunk without min/max";
      if (!read.full) return false;
      continue;  // the full build below names the problem
    }
    if (!read.full && !c.epoch.empty()) {  // 4.4 chunks say which incarnation they belong to
      std::string epoch = rawField(doc.get(), "lastmodEpoch");
      if (!epoch.empty() && epoch != std::string(c.epoch.begin(), c.epoch.end())) {
        why = "collection '" + read.ns + "': chunks of another epoch";
        return false;
      }
    }
    ch.version = chunkVersionOf(doc.get());
    ch.doc = std::move(doc);
    incoming.push_back(std::move(ch));
  }
  auto byMin = [](const Chunk& a, const Chunk& b) { return compareKeys(a.min, a.min_len, b.min, b.min_len) < 0; };
  if (read.full) {
    c.chunks = std::move(incoming);
    std::sort(c.chunks.begin(), c.chunks.end(), byMin);
  } else {
    // Oldest change first, as they were committed; each replaces the chunks its range overlaps.
    std::sort(incoming.begin(), incoming.end(), [](const Chunk& a, const Chunk& b) { return a.version < b.version; });
    for (auto& ch : incoming) {
      auto first = std::upper_bound(c.chunks.begin(), c.chunks.end(), ch, byMin);
      if (first != c.chunks.begin()) --first;  // the chunk holding ch.min starts at or before it
      auto last = first;
      while (last != c.chunks.end() && compareKeys(last->min, last->min_len, ch.max, ch.max_len) < 0) ++last;
      // [first, last) starts before ch.max; drop those that end after ch.min (they overlap).
      std::vector<Chunk> kept;
      for (auto it = first; it != last; ++it)
        if (compareKeys(it->max, it->max_len, ch.min, ch.min_len) <= 0) kept.push_back(std::move(*it));
      auto pos = c.chunks.erase(first, last);
      for (auto& k : kept) pos = std::next(c.chunks.insert(pos, std::move(k)));
      c.chunks.insert(pos, std::move(ch));
    }
  }
  c.max_version = 0;
  for (const auto& ch : c.chunks) c.max_version = std::max(c.max_version, ch.version);
  if (!consistent(c, why)) {
    c.loaded = false;  // the next read of this collection is a full one
    return false;
  }
  c.loaded = true;
  return true;
}

std::shared_ptr<const RoutingTable> CatalogCache::build(const std::vector<bson_t*>* shards, std::string& error) const {
  std::vector<bson_t*> colls, docs;
  for (const auto& [ns, c] : collections_) {
    if (!c.loaded) continue;
    colls.push_back(c.doc.get());
    for (const auto& ch : c.chunks) docs.push_back(ch.doc.get());
  }
  return buildFromConfigDocuments(colls, docs, error, shards);
}

size_t CatalogCache::chunkCount() const {
  size_t n = 0;
  for (const auto& [ns, c] : collections_) n += c.chunks.size();
  return n;
}

std::map<std::string, std::string> CatalogCache::versions() const {
  std::map<std::string, std::string> out;
  for (const auto& [ns, c] : collections_)
    out[ns] = std::to_string(c.max_version >> 32) + "|" + std::to_string(c.max_version & 0xffffffffu) + "||" +
              c.epoch_label;
  return out;
}

}  // namespace shardscope::routing
