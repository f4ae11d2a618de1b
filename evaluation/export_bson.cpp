#include "evaluation/export_bson.h"

#include "common/name_text.h"

namespace shardscope::evaluation {

void appendBin(bson_t* doc, const char* key, std::string_view bytes) {
  bson_append_binary(doc, key, -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(bytes.data()),
                     static_cast<uint32_t>(bytes.size()));
}

void appendName(bson_t* doc, const char* key, std::string_view name) {
  std::string storage;
  const std::string_view shown = common::utf8Name(name, storage);
  bson_append_utf8(doc, key, -1, shown.data(), static_cast<int>(shown.size()));
}

namespace {

// Appends doc[key] as an array of v's elements, each written by append(array, index key, element).
template <typename T, typename Append>
void appendArray(bson_t* doc, const char* key, const std::vector<T>& v, Append append) {
  bson_t arr;
  bson_append_array_begin(doc, key, -1, &arr);
  char idx[16];
  for (size_t i = 0; i < v.size(); ++i) {
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    append(&arr, k, v[i]);
  }
  bson_append_array_end(doc, &arr);
}

}  // namespace

void appendCounts(bson_t* doc, const char* key, const std::vector<double>& v) {
  appendArray(doc, key, v, [](bson_t* arr, const char* k, double x) { bson_append_double(arr, k, -1, x); });
}

void appendStrings(bson_t* doc, const char* key, const std::vector<std::string>& v) {
  appendArray(doc, key, v, [](bson_t* arr, const char* k, const std::string& s) { appendName(arr, k, s); });
}

int64_t getInt(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
  return 0;
}

std::string getString(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key) && BSON_ITER_HOLDS_UTF8(&it)) {
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    return std::string(s, len);
  }
  return {};
}

std::string getBin(const bson_iter_t& it) { return common::binaryBytes(it); }

std::string getBin(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key)) return getBin(it);
  return {};
}

std::vector<double> getCounts(const bson_t& doc, const char* key) {
  std::vector<double> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) out.push_back(bson_iter_as_double(&arr));
  return out;
}

std::vector<std::string> getStrings(const bson_t& doc, const char* key) {
  std::vector<std::string> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) {
    if (BSON_ITER_HOLDS_UTF8(&arr)) {
      uint32_t len = 0;
      const char* s = bson_iter_utf8(&arr, &len);
      out.emplace_back(s, len);
    } else if (BSON_ITER_HOLDS_BINARY(&arr)) {
      out.push_back(getBin(arr));
    }
  }
  return out;
}

}  // namespace shardscope::evaluation
