#include "evaluation/sketch_redaction.h"

#include <bson/bson.h>

#include <cstring>

namespace shardscope::evaluation {
namespace {

// A key kept in the redacted export; `children` filters a sub-document or each document of an
// array (null: the value is copied as it is).
struct Keep {
  const char* key;
  const Keep* children;
};

constexpr Keep kFreq[] = {{"h", nullptr}, {"c", nullptr}, {"e", nullptr}, {nullptr, nullptr}};  // no "l" label
constexpr Keep kField[] = {{"path", nullptr},    {"count", nullptr},   {"hll", nullptr},     {"freqTotal", nullptr}, {"freqFloor", nullptr},
                           {"freq", kFreq},      {"newMax", nullptr},  {"newMin", nullptr},  {"compared", nullptr},
                           {"oid", nullptr},     {"date", nullptr},    {"number", nullptr},  {"string", nullptr},
                           {"other", nullptr},   {"missing", nullptr}, {"ranged", nullptr},  {"hashed", nullptr},
                           {"arrays", nullptr},  {nullptr, nullptr}};  // no "distinct", "max", "min"
constexpr Keep kShape[] = {{"h", nullptr},     {"shape", nullptr},   {"kind", nullptr},
                           {"multi", nullptr}, {"count", nullptr},   {"commands", nullptr}, {"offered", nullptr},
                           {"modified", nullptr}, {"modifiedCounts", nullptr}, {"sort", nullptr}, {"upsert", nullptr},
                           {"eq", nullptr},    {"range", nullptr},   {nullptr, nullptr}};  // no "samples"
constexpr Keep kNamespace[] = {{"ns", nullptr},           {"shards", nullptr},        {"inserts", nullptr},
                               {"insertBytes", nullptr},  {"reads", nullptr},         {"writes", nullptr},
                               {"otherShapeOps", nullptr}, {"fields", kField},        {"reservoirSeen", nullptr},
                               {"shapes", kShape},        {"currentKey", nullptr},    {"configuredKeys", nullptr},
                               {"upserted", nullptr},     {"upsertsMatched", nullptr}, {"replacements", nullptr},
                               {"sampleSpan", nullptr},   {"lookupRule", nullptr},   {"defaultCollation", nullptr},
                               // counts, value hashes and key patterns only (key_facts.h)
                               {"keyFacts", nullptr},     {nullptr, nullptr}};  // no "reservoir"
constexpr Keep kExport[] = {{"version", nullptr},
                            {"valueHashes", nullptr},
                            {"simulatedShards", nullptr},
                            {"sampleSize", nullptr},
                            {"observedSinceMs", nullptr},
                            {"namespaces", kNamespace},
                            {nullptr, nullptr}};

const Keep* find(const Keep* keep, const char* key) {
  for (; keep->key; ++keep)
    if (std::strcmp(keep->key, key) == 0) return keep;
  return nullptr;
}

void copyFiltered(const bson_t& in, const Keep* keep, bson_t* out);

// Each document of an array filtered by `keep`; anything else in it is dropped.
void copyArray(const bson_iter_t& arrayIt, const Keep* keep, bson_t* out) {
  bson_iter_t it;
  if (!bson_iter_recurse(&arrayIt, &it)) return;
  uint32_t i = 0;
  while (bson_iter_next(&it)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&it)) continue;
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(&it, &len, &data);
    bson_t element, filtered;
    if (!bson_init_static(&element, data, len)) continue;
    char idx[16];
    const char* k;
    bson_uint32_to_string(i++, &k, idx, sizeof idx);
    bson_append_document_begin(out, k, -1, &filtered);
    copyFiltered(element, keep, &filtered);
    bson_append_document_end(out, &filtered);
  }
}

void copyFiltered(const bson_t& in, const Keep* keep, bson_t* out) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &in)) return;
  while (bson_iter_next(&it)) {
    const Keep* k = find(keep, bson_iter_key(&it));
    if (!k) continue;
    if (!k->children) {
      bson_append_iter(out, bson_iter_key(&it), -1, &it);
    } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
      bson_t arr;
      bson_append_array_begin(out, bson_iter_key(&it), -1, &arr);
      copyArray(it, k->children, &arr);
      bson_append_array_end(out, &arr);
    }
  }
}

}  // namespace

std::string sketchesWithoutValues(const std::string& exportJson) {
  bson_error_t error;
  bson_t* in = bson_new_from_json(reinterpret_cast<const uint8_t*>(exportJson.data()),
                                  static_cast<ssize_t>(exportJson.size()), &error);
  if (!in) return "{}";
  bson_t out = BSON_INITIALIZER;
  copyFiltered(*in, kExport, &out);
  bson_append_bool(&out, "values", -1, false);
  char* json = bson_as_canonical_extended_json(&out, nullptr);
  std::string result = json ? json : "{}";
  bson_free(json);
  bson_destroy(&out);
  bson_destroy(in);
  return result;
}

}  // namespace shardscope::evaluation
