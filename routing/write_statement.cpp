#include "routing/write_statement.h"

#include <cstring>

#include "routing/routing_table.h"

namespace shardscope::routing {
namespace {

bool documentAt(const bson_iter_t& it, bson_t& out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return bson_init_static(&out, data, len);
}

// A replacement document has no $-operators ({} replaces the document too).
bool isReplacementDocument(const bson_iter_t& it) {
  bson_iter_t child;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &child)) return false;
  if (!bson_iter_next(&child)) return true;
  return bson_iter_key(&child)[0] != '$';
}

}  // namespace

WriteStatement readWriteStatement(const bson_t& statement, const char* filter_key, const char* mods_key) {
  WriteStatement s;
  bool filter_seen = false, mods_seen = false, multi_seen = false, upsert_seen = false, collation_seen = false,
       limit_seen = false;
  bool filter_ok = false;
  bson_iter_t it;
  if (bson_iter_init(&it, &statement)) {
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (!filter_seen && std::strcmp(key, filter_key) == 0) {
        filter_seen = true;
        filter_ok = documentAt(it, s.filter);
      } else if (!mods_seen && std::strcmp(key, mods_key) == 0) {
        mods_seen = true;
        s.replacement = isReplacementDocument(it) && documentAt(it, s.mods);
      } else if (!multi_seen && std::strcmp(key, "multi") == 0) {
        multi_seen = true;
        s.multi = bson_iter_as_bool(&it);
      } else if (!upsert_seen && std::strcmp(key, "upsert") == 0) {
        upsert_seen = true;
        s.upsert = bson_iter_as_bool(&it);
      } else if (!collation_seen && std::strcmp(key, "collation") == 0) {
        collation_seen = true;
        bson_t collation;
        if (documentAt(it, collation)) {
          s.has_collation = true;
          s.simple_collation = isSimpleCollation(&collation);
        }
      } else if (!limit_seen && std::strcmp(key, "limit") == 0) {
        limit_seen = true;
        if (BSON_ITER_HOLDS_NUMBER(&it)) s.limit = bson_iter_as_int64(&it);
      }
    }
  }
  if (!filter_ok) bson_init(&s.filter);
  return s;
}

}  // namespace shardscope::routing
