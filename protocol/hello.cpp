#include "protocol/hello.h"

#include <algorithm>
#include <string>

namespace shardscope::protocol {
namespace {

void appendList(bson_t* out, std::span<const Compressor> compressors) {
  bson_t array;
  bson_append_array_begin(out, "compression", -1, &array);
  char key[16];
  for (size_t i = 0; i < compressors.size(); ++i) {
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
    auto name = compressorName(compressors[i]);
    bson_append_utf8(&array, k, -1, name.data(), static_cast<int>(name.size()));
  }
  bson_append_array_end(out, &array);
}

void copyReplacing(const bson_t* doc, std::span<const Compressor> compressors, bson_t* out, bool recurseQuery) {
  bson_iter_t it;
  bool replaced = false;
  if (bson_iter_init(&it, doc)) {
    while (bson_iter_next(&it)) {
      std::string_view key = bson_iter_key(&it);
      if (key == "compression") {
        if (!compressors.empty()) appendList(out, compressors);
        replaced = true;
      } else if (recurseQuery && key == "$query" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
        uint32_t len;
        const uint8_t* data;
        bson_iter_document(&it, &len, &data);
        bson_t inner, rewritten;
        if (!bson_init_static(&inner, data, len)) continue;  // unterminated: left out
        bson_append_document_begin(out, "$query", -1, &rewritten);
        copyReplacing(&inner, compressors, &rewritten, false);
        bson_append_document_end(out, &rewritten);
        replaced = true;  // the list lives inside $query
      } else {
        bson_append_iter(out, nullptr, 0, &it);
      }
    }
  }
  if (!replaced && !compressors.empty()) appendList(out, compressors);
}

}  // namespace

bool offersCompression(const bson_t* doc) {
  bson_iter_t it;
  return bson_iter_init_find(&it, doc, "compression");
}

std::vector<Compressor> readCompressionList(const bson_t* doc) {
  std::vector<Compressor> out;
  bson_iter_t it, child;
  if (!bson_iter_init_find(&it, doc, "compression") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &child))
    return out;
  while (bson_iter_next(&child)) {
    if (!BSON_ITER_HOLDS_UTF8(&child)) continue;
    uint32_t len;
    const char* s = bson_iter_utf8(&child, &len);
    auto c = compressorFromName({s, len});
    if (c && *c != Compressor::Noop && std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
  }
  return out;
}

void replaceCompressionList(const bson_t* doc, std::span<const Compressor> compressors, bson_t* out) {
  copyReplacing(doc, compressors, out, true);
}

std::vector<Compressor> intersectCompressors(std::span<const Compressor> offered, std::span<const Compressor> accepted) {
  std::vector<Compressor> out;
  for (auto c : offered)
    if (std::find(accepted.begin(), accepted.end(), c) != accepted.end()) out.push_back(c);
  return out;
}

}  // namespace shardscope::protocol
