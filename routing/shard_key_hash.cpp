// Hashed shard-key hash: same inputs and order as MongoDB's hashed index (facts, not code, from
// mongo-semantics.md D). Numbers are squashed to int64 so 2, 2.0 and 2.3 collide, as on a server.
#include "routing/shard_key_hash.h"

#include <cstring>

#include "common/bson_order.h"
#include "routing/md5.h"

namespace shardscope::routing {
namespace {

void addInt32(Md5& h, int32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = uint8_t(uint32_t(v) >> (8 * i));
  h.update(b, 4);
}
void addInt64(Md5& h, int64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = uint8_t(uint64_t(v) >> (8 * i));
  h.update(b, 8);
}
// A BSON string value as it sits on the wire: int32 length (with NUL), bytes, NUL.
void addBsonString(Md5& h, const char* s, uint32_t len) {
  addInt32(h, int32_t(len + 1));
  h.update(s, len);
  uint8_t nul = 0;
  h.update(&nul, 1);
}

void hashValue(Md5& h, const bson_value_t& v, const char* name, size_t name_len, bool include_name);

void hashEmbedded(Md5& h, const uint8_t* data, uint32_t len) {
  bson_t doc;
  if (!bson_init_static(&doc, data, len)) return;
  bson_iter_t it;
  bson_iter_init(&it, &doc);
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    hashValue(h, *bson_iter_value(&it), key, std::strlen(key), true);
  }
  // The terminating EOO element takes part too, as its canonical type (0) alone: checked
  // against the {} and [] test vectors.
  addInt32(h, 0);
}

void hashValue(Md5& h, const bson_value_t& v, const char* name, size_t name_len, bool include_name) {
  addInt32(h, common::canonicalType(v.value_type));
  if (include_name) h.update(name, name_len + 1);  // with its NUL
  switch (v.value_type) {
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: addInt64(h, common::safeNumberLongForHash(v)); return;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: hashEmbedded(h, v.value.v_doc.data, v.value.v_doc.data_len); return;
    case BSON_TYPE_UTF8: addBsonString(h, v.value.v_utf8.str, v.value.v_utf8.len); return;
    case BSON_TYPE_SYMBOL: addBsonString(h, v.value.v_symbol.symbol, v.value.v_symbol.len); return;
    case BSON_TYPE_CODE: addBsonString(h, v.value.v_code.code, v.value.v_code.code_len); return;
    case BSON_TYPE_OID: h.update(v.value.v_oid.bytes, 12); return;
    case BSON_TYPE_BOOL: {
      uint8_t b = v.value.v_bool ? 1 : 0;
      h.update(&b, 1);
      return;
    }
    case BSON_TYPE_DATE_TIME: addInt64(h, v.value.v_datetime); return;
    case BSON_TYPE_TIMESTAMP:
      addInt32(h, int32_t(v.value.v_timestamp.increment));
      addInt32(h, int32_t(v.value.v_timestamp.timestamp));
      return;
    case BSON_TYPE_BINARY: {
      addInt32(h, int32_t(v.value.v_binary.data_len));
      uint8_t st = uint8_t(v.value.v_binary.subtype);
      h.update(&st, 1);
      h.update(v.value.v_binary.data, v.value.v_binary.data_len);
      return;
    }
    case BSON_TYPE_REGEX:
      h.update(v.value.v_regex.regex, std::strlen(v.value.v_regex.regex) + 1);
      h.update(v.value.v_regex.options, std::strlen(v.value.v_regex.options) + 1);
      return;
    case BSON_TYPE_DBPOINTER:
      addBsonString(h, v.value.v_dbpointer.collection, v.value.v_dbpointer.collection_len);
      h.update(v.value.v_dbpointer.oid.bytes, 12);
      return;
    case BSON_TYPE_CODEWSCOPE: {
      uint32_t total = 4 + 4 + v.value.v_codewscope.code_len + 1 + v.value.v_codewscope.scope_len;
      addInt32(h, int32_t(total));
      addBsonString(h, v.value.v_codewscope.code, v.value.v_codewscope.code_len);
      h.update(v.value.v_codewscope.scope_data, v.value.v_codewscope.scope_len);
      return;
    }
    default: return;  // null, undefined, MinKey, MaxKey have no value bytes
  }
}

int64_t digestToInt64(const uint8_t d[16]) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | d[i];
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t hashShardKeyValue(const bson_value_t& value) {
  Md5 h;
  addInt32(h, 0);  // the hash seed, always 0 for hashed indexes
  hashValue(h, value, "", 0, false);
  uint8_t d[16];
  h.finish(d);
  return digestToInt64(d);
}

int64_t hashNull() {
  bson_value_t v;
  v.value_type = BSON_TYPE_NULL;
  return hashShardKeyValue(v);
}

}  // namespace shardscope::routing
