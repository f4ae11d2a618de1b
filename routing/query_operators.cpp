#include "routing/query_operators.h"

#include <cstring>

namespace shardscope::routing {

const std::string_view kUnknownOperator =
    "unknown query operator: mongos fails to parse the filter (BadValue 'unknown operator'), nothing is targeted";

namespace {

bool internal(std::string_view op) { return op.size() > 2 && op[1] == '_'; }

}  // namespace

bool isKnownFieldOperator(std::string_view op) {
  static constexpr std::string_view kOps[] = {
      "$eq",          "$ne",          "$gt",           "$gte",         "$lt",           "$lte",       "$in",
      "$nin",         "$not",         "$exists",       "$type",        "$regex",        "$options",   "$all",
      "$elemMatch",   "$size",        "$mod",          "$bitsAllSet",  "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear",
      "$geoWithin",   "$geoIntersects", "$near",       "$nearSphere",  "$within",       "$maxDistance", "$minDistance",
      "$uniqueDocs",  "$comment"};
  for (auto k : kOps)
    if (op == k) return true;
  return internal(op);
}

bool isKnownTopLevelOperator(std::string_view op) {
  static constexpr std::string_view kOps[] = {"$and",  "$or",         "$nor",        "$expr",        "$text",
                                              "$where", "$comment",   "$jsonSchema", "$alwaysTrue",  "$alwaysFalse",
                                              "$sampleRate"};
  for (auto k : kOps)
    if (op == k) return true;
  return internal(op);
}

bool hasUnknownFieldOperator(const bson_iter_t& value, size_t& visited) {
  if (bson_iter_type(&value) != BSON_TYPE_DOCUMENT) return false;
  bson_iter_t copy = value, ops;
  if (!bson_iter_recurse(&copy, &ops) || !bson_iter_next(&ops)) return false;
  const char* first = bson_iter_key(&ops);
  if (first[0] != '$') return false;  // a literal document
  if (std::strcmp(first, "$ref") == 0 || std::strcmp(first, "$id") == 0 || std::strcmp(first, "$db") == 0)
    return false;  // a DBRef literal
  do {
    ++visited;
    const char* op = bson_iter_key(&ops);
    if (!isKnownFieldOperator(op)) return true;
    if (std::strcmp(op, "$not") == 0 && hasUnknownFieldOperator(ops, visited)) return true;
  } while (bson_iter_next(&ops));
  return false;
}

namespace {

constexpr int kMaxDepth = 100;

// bson_iter_t by reference: it is declared 128-byte aligned (a by-value copy would be misaligned).
bool walk(const bson_iter_t& start, size_t budget, size_t& visited, int depth) {
  if (depth > kMaxDepth) return false;
  bson_iter_t it = start;
  while (bson_iter_next(&it)) {
    if (++visited > budget) return false;
    const char* key = bson_iter_key(&it);
    if (key[0] == '$') {
      if (!isKnownTopLevelOperator(key)) return true;
      bool branches = std::strcmp(key, "$and") == 0 || std::strcmp(key, "$or") == 0 || std::strcmp(key, "$nor") == 0;
      bson_iter_t arr;
      if (!branches || bson_iter_type(&it) != BSON_TYPE_ARRAY || !bson_iter_recurse(&it, &arr)) continue;
      while (visited <= budget && bson_iter_next(&arr)) {  // past the budget, stop reading the array too
        bson_iter_t sub;
        if (bson_iter_type(&arr) == BSON_TYPE_DOCUMENT && bson_iter_recurse(&arr, &sub) &&
            walk(sub, budget, visited, depth + 1))
          return true;
      }
      continue;
    }
    if (hasUnknownFieldOperator(it, visited)) return true;
  }
  return false;
}

}  // namespace

bool hasUnknownOperator(const bson_t& filter, size_t budget, size_t& visited) {
  bson_iter_t it;
  return bson_iter_init(&it, &filter) && walk(it, budget, visited, 0);
}

}  // namespace shardscope::routing
