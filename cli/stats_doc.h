// Reading a /stats document through libbson's JSON parser: no JSON library needed.
#pragma once
#include <bson/bson.h>

#include <string>

namespace shardscope::cli {

class Doc {
 public:
  explicit Doc(const bson_t* b) : b_(b) {}
  double num(const char* path) const {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found)) return 0;
    return BSON_ITER_HOLDS_NUMBER(&found) ? bson_iter_as_double(&found) : 0;
  }
  std::string str(const char* path) const {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_UTF8(&found))
      return {};
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&found, &len);
    return {s, len};
  }
  bool flag(const char* path) const {
    bson_iter_t it, found;
    return bson_iter_init(&it, b_) && bson_iter_find_descendant(&it, path, &found) && BSON_ITER_HOLDS_BOOL(&found) &&
           bson_iter_bool(&found);
  }
  bool isNull(const char* path) const {
    bson_iter_t it, found;
    return bson_iter_init(&it, b_) && bson_iter_find_descendant(&it, path, &found) && BSON_ITER_HOLDS_NULL(&found);
  }
  // Calls f(Doc) for each document in the array at `path`.
  template <typename F>
  void each(const char* path, F&& f) const {
    bson_iter_t it, found, child;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_ARRAY(&found) ||
        !bson_iter_recurse(&found, &child))
      return;
    while (bson_iter_next(&child)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&child)) continue;
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bson_iter_document(&child, &len, &data);
      bson_t item;
      if (bson_init_static(&item, data, len)) f(Doc(&item));
    }
  }

 private:
  const bson_t* b_;
};

}  // namespace shardscope::cli
