#include "shadow/command_prep.h"

#include <cstring>
#include <string>

#include "protocol/command_kind.h"
#include "common/query_shape.h"

namespace shardscope::shadow {
namespace {

bool equalsAny(std::string_view s, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (s == n) return true;
  return false;
}

bool pipelineWrites(const bson_t& body) {
  bson_iter_t it, stages;
  if (!bson_iter_init_find(&it, &body, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &stages))
    return false;
  while (bson_iter_next(&stages)) {
    bson_iter_t stage;
    if (BSON_ITER_HOLDS_DOCUMENT(&stages) && bson_iter_recurse(&stages, &stage) && bson_iter_next(&stage)) {
      std::string_view k = bson_iter_key(&stage);
      if (k == "$out" || k == "$merge") return true;
    }
  }
  return false;
}

bool isPerClusterCommandField(std::string_view k) {
  return equalsAny(k, {"$clusterTime", "$readPreference", "$audit", "$client", "$configTime", "$topologyTime",
                       "$configServerState", "mayBypassWriteBlocking"});
}
bool isSessionField(std::string_view k) {
  return equalsAny(k, {"lsid", "txnNumber", "autocommit", "startTransaction", "stmtId", "stmtIds"});
}

void appendReadConcern(const bson_iter_t& it, bson_t* out) {
  bson_iter_t rc;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &rc)) return;
  bson_t child;
  bson_append_document_begin(out, "readConcern", -1, &child);
  while (bson_iter_next(&rc)) {
    std::string_view k = bson_iter_key(&rc);
    if (k == "afterClusterTime" || k == "atClusterTime" || k == "afterOpTime") continue;
    bson_append_iter(&child, bson_iter_key(&rc), -1, &rc);
  }
  bson_append_document_end(out, &child);
}

void appendKilledCursors(const bson_iter_t& it, const std::function<int64_t(int64_t)>& map, bson_t* out) {
  bson_iter_t ids;
  bson_t arr;
  bson_append_array_begin(out, "cursors", -1, &arr);
  uint32_t i = 0;
  if (BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &ids)) {
    while (bson_iter_next(&ids)) {
      if (!BSON_ITER_HOLDS_INT64(&ids)) continue;
      int64_t mapped = map(bson_iter_int64(&ids));
      if (!mapped) continue;  // a cursor the other cluster never opened
      char key[16];
      const char* k;
      size_t kl = bson_uint32_to_string(i++, &k, key, sizeof key);
      bson_append_int64(&arr, k, static_cast<int>(kl), mapped);
    }
  }
  bson_append_array_end(out, &arr);
}

void foldSequences(const protocol::CommandView& view, bson_t* out) {
  for (const auto& seq : view.sequences) {
    bson_t arr;
    std::string id(seq.identifier);
    bson_append_array_begin(out, id.c_str(), static_cast<int>(id.size()), &arr);
    uint32_t i = 0;
    protocol::forEachDocument(seq.documents, [&](std::span<const uint8_t> doc) {
      bson_t d;
      if (!bson_init_static(&d, doc.data(), doc.size())) return;
      char key[16];
      const char* k;
      size_t kl = bson_uint32_to_string(i++, &k, key, sizeof key);
      bson_append_document(&arr, k, static_cast<int>(kl), &d);
    });
    bson_append_array_end(out, &arr);
  }
}

// ---- redaction ------------------------------------------------------------------------------

// The document or array at `it`, appended under `key` with each child written by
// each(child, childKey, childKeyLen, &sub): the one walk the redactions share.
template <typename Each>
void appendEachChild(const bson_iter_t& it, const char* key, int keyLen, bson_t* out, Each&& each) {
  bson_iter_t child;
  bson_t sub;
  const bool array = BSON_ITER_HOLDS_ARRAY(&it);
  if (array) bson_append_array_begin(out, key, keyLen, &sub);
  else bson_append_document_begin(out, key, keyLen, &sub);
  if (bson_iter_recurse(&it, &child))
    while (bson_iter_next(&child)) each(child, bson_iter_key(&child), static_cast<int>(bson_iter_key_len(&child)), &sub);
  if (array) bson_append_array_end(out, &sub);
  else bson_append_document_end(out, &sub);
}

class Redactor {
 public:
  explicit Redactor(uint64_t salt) : salt_(salt) {}

  void value(const bson_iter_t& it, const char* key, int keyLen, bson_t* out) {
    switch (bson_iter_type(&it)) {
      case BSON_TYPE_DOCUMENT:
      case BSON_TYPE_ARRAY:
        return appendEachChild(it, key, keyLen, out, [this](const bson_iter_t& c, const char* k, int n, bson_t* sub) {
          value(c, k, n, sub);
        });
      case BSON_TYPE_BOOL:
      case BSON_TYPE_NULL:
      case BSON_TYPE_UNDEFINED:
      case BSON_TYPE_MINKEY:
      case BSON_TYPE_MAXKEY:
        bson_append_iter(out, key, keyLen, &it);  // carry no information worth hiding
        return;
      default: break;
    }
    const uint64_t h = hashOf(it);
    switch (bson_iter_type(&it)) {
      case BSON_TYPE_INT32: bson_append_int32(out, key, keyLen, static_cast<int32_t>(h)); break;
      case BSON_TYPE_INT64: bson_append_int64(out, key, keyLen, static_cast<int64_t>(h)); break;
      case BSON_TYPE_DOUBLE: bson_append_double(out, key, keyLen, static_cast<double>(h >> 11)); break;
      case BSON_TYPE_DATE_TIME: bson_append_date_time(out, key, keyLen, static_cast<int64_t>(h >> 22)); break;
      case BSON_TYPE_OID: {
        bson_oid_t oid;
        uint64_t h2 = mixSalt(h);
        std::memcpy(oid.bytes, &h, 8);
        std::memcpy(oid.bytes + 8, &h2, 4);
        bson_append_oid(out, key, keyLen, &oid);
        break;
      }
      case BSON_TYPE_BINARY: {
        bson_subtype_t sub;
        uint32_t len;
        const uint8_t* data;
        bson_iter_binary(&it, &sub, &len, &data);
        uint8_t bytes[16];
        uint64_t h2 = mixSalt(h);
        std::memcpy(bytes, &h, 8);
        std::memcpy(bytes + 8, &h2, 8);
        bson_append_binary(out, key, keyLen, sub, bytes, 16);
        break;
      }
      default: {  // strings, decimals, regexes, timestamps, ...: a pseudonym string
        char text[20];
        std::snprintf(text, sizeof text, "~%016llx", static_cast<unsigned long long>(h));
        bson_append_utf8(out, key, keyLen, text, -1);
      }
    }
  }

  // A document whose values are redacted but whose keys stay (filters, documents, updates).
  void document(const bson_iter_t& it, bson_t* out) { value(it, bson_iter_key(&it), -1, out); }

 private:
  uint64_t mixSalt(uint64_t h) const { return common::hashBytes({reinterpret_cast<const char*>(&h), 8}, salt_ ^ 0x5a5a); }
  uint64_t hashOf(const bson_iter_t& it) const {
    bson_iter_t copy = it;
    bson_t tmp = BSON_INITIALIZER;
    bson_append_value(&tmp, "", 0, bson_iter_value(&copy));
    uint64_t h = common::hashBytes({reinterpret_cast<const char*>(bson_get_data(&tmp)), tmp.len}, salt_);
    bson_destroy(&tmp);
    return h;
  }
  uint64_t salt_;
};

// Top-level fields whose every value is user data (a `comment` too: clients put anything there).
bool holdsValues(std::string_view key) {
  return equalsAny(key, {"filter", "query", "update", "let", "min", "max", "arrayFilters", "comment"});
}
// The fields of a write statement (update, delete, bulkWrite op, index spec) that hold user data;
// the others (multi, upsert, limit, hint, the op's nsInfo index, an index's key) are options.
bool statementHoldsValues(std::string_view key) {
  return equalsAny(key, {"q", "u", "c", "arrayFilters", "filter", "document", "updateMods",
                         "partialFilterExpression"});
}
// Top-level arrays of statements: each is redacted field by field as above.
bool holdsStatements(std::string_view key) {
  return equalsAny(key, {"updates", "deletes", "documents", "ops", "indexes"});
}
// In a stage or projection spec, keys whose string value names a collection, a field or an output,
// not a value: kept, as namespaces and field names are.
bool namesSomething(std::string_view key) {
  return equalsAny(key, {"from", "as", "coll", "db", "into", "on", "localField", "foreignField", "connectFromField",
                         "connectToField", "depthField", "includeArrayIndex", "path"});
}
// Stages whose argument is structure only (counts, sort directions, a name): kept whole.
bool structuralStage(std::string_view stage) {
  return equalsAny(stage, {"$limit", "$skip", "$sample", "$sort", "$count", "$out", "$unwind", "$sortByCount"});
}

}  // namespace

CommandClass mirrorClass(const protocol::CommandView& view) {
  if (view.inTransaction) return CommandClass::Transaction;
  const auto& traits = view.traits;  // classified once, with the view
  if (traits.kind == protocol::CommandKind::Aggregate && pipelineWrites(view.body)) return CommandClass::Write;
  return traits.mirror;
}

void buildForeignCommand(const protocol::CommandView& view, const ForeignOptions& options, bson_t* out) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &view.body)) return;
  const auto kind = view.traits.kind;
  const bool getMore = kind == protocol::CommandKind::GetMore;
  const bool killCursors = kind == protocol::CommandKind::KillCursors;
  const bool hello = kind == protocol::CommandKind::Hello;
  bool first = true;
  while (bson_iter_next(&it)) {
    std::string_view k = bson_iter_key(&it);
    const bool isFirst = first;
    first = false;
    if (isPerClusterCommandField(k)) continue;
    if (options.strip_db && k == "$db") continue;
    if (options.strip_session && isSessionField(k)) continue;
    if (k == "readConcern") {
      appendReadConcern(it, out);
      continue;
    }
    if (isFirst && getMore && options.map_cursor && BSON_ITER_HOLDS_INT64(&it)) {
      int64_t mapped = options.map_cursor(bson_iter_int64(&it));
      bson_append_int64(out, bson_iter_key(&it), -1, mapped ? mapped : bson_iter_int64(&it));
      continue;
    }
    if (killCursors && k == "cursors" && options.map_cursor) {
      appendKilledCursors(it, options.map_cursor, out);
      continue;
    }
    if (hello && k == "compression") continue;
    bson_append_iter(out, bson_iter_key(&it), -1, &it);
  }
  if (options.fold_sequences) foldSequences(view, out);
}

namespace {

// A write statement: only the fields statementHoldsValues names hold values (`allValues`: an
// inserted document, every field of it).
void redactStatement(Redactor& r, const bson_t& doc, const char* key, int keyLen, bool allValues, bson_t* out) {
  bson_iter_t di;
  bson_t sub;
  bson_append_document_begin(out, key, keyLen, &sub);
  if (bson_iter_init(&di, &doc))
    while (bson_iter_next(&di)) {
      if (allValues || statementHoldsValues(bson_iter_key(&di))) r.value(di, bson_iter_key(&di), -1, &sub);
      else bson_append_iter(&sub, bson_iter_key(&di), -1, &di);
    }
  bson_append_document_end(out, &sub);
}

// The documents of an array field or of a document sequence, statement by statement.
template <typename ForEach>
void redactStatements(Redactor& r, std::string_view field, ForEach&& forEach, bson_t* out) {
  bson_t arr;
  std::string id(field);
  bson_append_array_begin(out, id.c_str(), static_cast<int>(id.size()), &arr);
  uint32_t i = 0;
  const bool allValues = field == "documents";
  forEach([&](const bson_t& doc) {
    char key[16];
    const char* k;
    size_t kl = bson_uint32_to_string(i++, &k, key, sizeof key);
    redactStatement(r, doc, k, static_cast<int>(kl), allValues, &arr);
  });
  bson_append_array_end(out, &arr);
}

template <typename F>
void forEachArrayDocument(const bson_iter_t& it, F&& f) {
  bson_iter_t child;
  if (!bson_iter_recurse(&it, &child)) return;
  while (bson_iter_next(&child)) {
    uint32_t len;
    const uint8_t* data;
    bson_t doc;
    if (!BSON_ITER_HOLDS_DOCUMENT(&child)) continue;
    bson_iter_document(&child, &len, &data);
    if (bson_init_static(&doc, data, len)) f(doc);
  }
}

void redactPipeline(Redactor& r, const bson_iter_t& it, bson_t* out);

// A stage's or a projection's spec: its structure is kept (keys, "$field" paths and "$$variables",
// booleans, null, the numbers -1, 0 and 1 of inclusion flags and directions, the names of
// namesSomething); every other value (a literal in $addFields, $set, $project, $group, a
// $lookup's `let`, ...) becomes a pseudonym. `$match` and nested pipelines are redacted as such.
void redactSpec(Redactor& r, const bson_iter_t& it, const char* key, int keyLen, bson_t* out) {
  const std::string_view k(key, keyLen < 0 ? std::strlen(key) : static_cast<size_t>(keyLen));
  if (structuralStage(k)) return (void)bson_append_iter(out, key, keyLen, &it);  // a stage of a $facet
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: {
      if (k == "$match" || k == "restrictSearchWithMatch") return r.value(it, key, keyLen, out);
      if (k == "pipeline" && BSON_ITER_HOLDS_ARRAY(&it)) return redactPipeline(r, it, out);
      return appendEachChild(it, key, keyLen, out, [&r](const bson_iter_t& c, const char* ck, int n, bson_t* sub) {
        redactSpec(r, c, ck, n, sub);
      });
    }
    case BSON_TYPE_UTF8: {
      uint32_t len = 0;
      const char* s = bson_iter_utf8(&it, &len);
      if ((len > 0 && s[0] == '$') || namesSomething(k)) return (void)bson_append_iter(out, key, keyLen, &it);
      break;
    }
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE: {
      const double v = bson_iter_as_double(&it);
      if (v == -1 || v == 0 || v == 1) return (void)bson_append_iter(out, key, keyLen, &it);
      break;
    }
    default: break;
  }
  r.value(it, key, keyLen, out);
}

// Pipelines: $match stages hold filter values, structural stages ($limit, $sort, ...) are kept,
// every other stage is redacted as a spec (so values in nested pipelines, $facet, $lookup and
// $unionWith are hidden too).
void redactPipeline(Redactor& r, const bson_iter_t& it, bson_t* out) {
  bson_t arr;
  bson_append_array_begin(out, bson_iter_key(&it), -1, &arr);
  bson_iter_t stages;
  uint32_t i = 0;
  if (bson_iter_recurse(&it, &stages))
    while (bson_iter_next(&stages)) {
      char key[16];
      const char* k;
      size_t kl = bson_uint32_to_string(i++, &k, key, sizeof key);
      bson_iter_t stage;
      if (!BSON_ITER_HOLDS_DOCUMENT(&stages) || !bson_iter_recurse(&stages, &stage)) continue;
      bson_t sub;
      bson_append_document_begin(&arr, k, static_cast<int>(kl), &sub);
      while (bson_iter_next(&stage)) {
        const std::string_view name = bson_iter_key(&stage);
        if (name == "$match") r.value(stage, bson_iter_key(&stage), -1, &sub);
        else if (structuralStage(name)) bson_append_iter(&sub, bson_iter_key(&stage), -1, &stage);
        else redactSpec(r, stage, bson_iter_key(&stage), -1, &sub);
      }
      bson_append_document_end(&arr, &sub);
    }
  bson_append_array_end(out, &arr);
}

// A command body's fields (its name's value kept: a collection name or a flag); `explain`'s inner
// command is redacted as a command of its own.
void redactBody(Redactor& r, const bson_iter_t& body, bson_t* out) {
  bson_iter_t it = body;
  bool first = true;
  while (bson_iter_next(&it)) {
    std::string_view k = bson_iter_key(&it);
    if (first && k == "explain" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      first = false;
      bson_iter_t inner;
      bson_t sub;
      bson_append_document_begin(out, bson_iter_key(&it), -1, &sub);
      if (bson_iter_recurse(&it, &inner)) redactBody(r, inner, &sub);
      bson_append_document_end(out, &sub);
      continue;
    }
    if (first) {
      first = false;
      bson_append_iter(out, bson_iter_key(&it), -1, &it);
      continue;
    }
    if (isPerClusterCommandField(k) || isSessionField(k)) continue;
    if (holdsStatements(k) && BSON_ITER_HOLDS_ARRAY(&it)) {
      redactStatements(r, k, [&](auto&& f) { forEachArrayDocument(it, f); }, out);
    } else if (k == "pipeline" && BSON_ITER_HOLDS_ARRAY(&it)) {
      redactPipeline(r, it, out);
    } else if (holdsValues(k)) {
      r.value(it, bson_iter_key(&it), -1, out);
    } else if (k == "projection" || k == "fields") {
      redactSpec(r, it, bson_iter_key(&it), -1, out);
    } else {
      bson_append_iter(out, bson_iter_key(&it), -1, &it);
    }
  }
}

}  // namespace

void redactCommand(const protocol::CommandView& view, uint64_t salt, bson_t* out) {
  Redactor r(salt);
  bson_iter_t it;
  if (!bson_iter_init(&it, &view.body)) return;
  redactBody(r, it, out);
  for (const auto& seq : view.sequences) {
    redactStatements(r, seq.identifier, [&](auto&& f) {
      protocol::forEachDocument(seq.documents, [&](std::span<const uint8_t> bytes) {
        bson_t doc;
        if (bson_init_static(&doc, bytes.data(), bytes.size())) f(doc);
      });
    }, out);
  }
}

}  // namespace shardscope::shadow
