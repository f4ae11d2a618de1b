#include "routing/write_statement.h"

#include <cstring>
#include <string_view>

#include "protocol/bson_elements.h"

#include "routing/routing_table.h"

namespace shardscope::routing {
namespace {

using protocol::BsonElement;

// A static view of a document element's value (bson_iter_document + bson_init_static).
bool documentAt(const BsonElement& e, bson_t& out) {
  return e.type == BSON_TYPE_DOCUMENT && bson_init_static(&out, e.value, e.value_len);
}

// A replacement document has no $-operators ({} replaces the document too). As bson_iter_recurse
// and one bson_iter_next read it: a sub-document that does not frame is not one; a first element
// that does not walk leaves it empty.
bool isReplacementDocument(const BsonElement& e) {
  if (e.type != BSON_TYPE_DOCUMENT || e.value_len < 5 || e.value[e.value_len - 1] != 0) return false;
  protocol::BsonElements children(e.value, e.value_len);
  BsonElement first;
  if (!children.next(first)) return true;
  return first.key.empty() || first.key[0] != '$';
}

}  // namespace

// One walk with BsonElements (bson_iter_next's framing, issue 29: a library call per element
// cost ~900 instructions per update statement); values read as libbson's accessors read them.
WriteStatement readWriteStatement(const bson_t& statement, const char* filter_key, const char* mods_key) {
  WriteStatement s;
  bool filter_seen = false, mods_seen = false, multi_seen = false, upsert_seen = false, collation_seen = false,
       limit_seen = false;
  bool filter_ok = false;
  const std::string_view filter_name(filter_key), mods_name(mods_key);
  protocol::BsonElements elements(bson_get_data(&statement), statement.len);
  BsonElement e;
  while (elements.next(e)) {
    const std::string_view key = e.key;
    if (!filter_seen && key == filter_name) {
      filter_seen = true;
      filter_ok = documentAt(e, s.filter);
    } else if (!mods_seen && key == mods_name) {
      mods_seen = true;
      s.replacement = isReplacementDocument(e) && documentAt(e, s.mods);
    } else if (!multi_seen && key == "multi") {
      multi_seen = true;
      s.multi = protocol::asBool(e.type, e.value);
    } else if (!upsert_seen && key == "upsert") {
      upsert_seen = true;
      s.upsert = protocol::asBool(e.type, e.value);
    } else if (!collation_seen && key == "collation") {
      collation_seen = true;
      if (documentAt(e, s.collation)) {
        s.has_collation = true;
        s.simple_collation = isSimpleCollation(&s.collation);
      }
    } else if (!limit_seen && key == "limit") {
      limit_seen = true;
      s.has_limit = true;
      s.limit = protocol::deleteLimitValue(e.type, e.value);
    }
  }
  if (!filter_ok) bson_init(&s.filter);
  return s;
}

}  // namespace shardscope::routing
