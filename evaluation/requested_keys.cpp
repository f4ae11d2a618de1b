#include "evaluation/requested_keys.h"

#include <bson/bson.h>

#include "common/json_writer.h"

namespace shardscope::evaluation {

std::string encodeRequestedKeys(const RequestedKeys& keys) {
  std::string json;
  common::JsonWriter w(json);
  w.beginObject();
  for (const auto& [ns, list] : keys) {
    w.key(ns).beginArray();
    for (const auto& k : list) w.value(k);
    w.endArray();
  }
  w.endObject();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * json.size());
  for (unsigned char c : json) hex += {kHex[c >> 4], kHex[c & 15]};
  return hex;
}

namespace {
int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool decodeRequestedKeys(std::string_view hex, RequestedKeys& out) {
  if (hex.size() % 2) return false;
  std::string json;
  json.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    json += static_cast<char>(hi << 4 | lo);
  }
  if (json.empty() || json.front() != '{') return false;  // libbson would take a top-level array too
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
  if (!doc) return false;
  bool ok = true;
  bson_iter_t it, arr;
  if (bson_iter_init(&it, doc)) {
    while (ok && bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) {
        ok = false;
        break;
      }
      auto& list = out[bson_iter_key(&it)];
      while (bson_iter_next(&arr)) {
        if (!BSON_ITER_HOLDS_UTF8(&arr)) {
          ok = false;
          break;
        }
        list.emplace_back(bson_iter_utf8(&arr, nullptr));
      }
    }
  }
  bson_destroy(doc);
  return ok;
}

}  // namespace shardscope::evaluation
