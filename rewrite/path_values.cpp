#include "rewrite/path_values.h"

#include <string_view>

namespace shardscope::rewrite {
namespace {

struct Appender {
  bson_t& out;
  uint32_t n = 0;
  PathValues result;
  void add(const bson_iter_t& v) {
    char buf[16];
    const char* key;
    bson_uint32_to_string(n++, &key, buf, sizeof buf);
    bson_append_iter(&out, key, -1, &v);
    result.found = true;
  }
};

bool descend(const bson_iter_t& it, bson_iter_t& child) { return bson_iter_recurse(&it, &child); }

// `rest` is the path still to walk from the value `it` holds.
void walk(const bson_iter_t& it, std::string_view rest, Appender& a) {
  bson_iter_t child;
  if (rest.empty()) {
    if (!BSON_ITER_HOLDS_ARRAY(&it)) return a.add(it);
    a.result.crossed_array = true;
    if (descend(it, child))
      while (bson_iter_next(&child)) a.add(child);  // nested arrays go in whole: never a scalar's match
    return;
  }
  const size_t dot = rest.find('.');
  const std::string_view head = rest.substr(0, dot), tail = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
  if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
    if (!descend(it, child)) return;
    while (bson_iter_next(&child))
      if (std::string_view(bson_iter_key(&child)) == head) return walk(child, tail, a);
    return;
  }
  if (!BSON_ITER_HOLDS_ARRAY(&it) || !descend(it, child)) return;
  a.result.crossed_array = true;
  // Each element document continues the path (the server does not cross an array nested in an
  // array, and recursing there would follow a client's nesting depth); a numeric head also
  // names one element.
  while (bson_iter_next(&child)) {
    if (std::string_view(bson_iter_key(&child)) == head) walk(child, tail, a);
    if (BSON_ITER_HOLDS_DOCUMENT(&child)) walk(child, rest, a);
  }
}

}  // namespace

PathValues appendPathValues(const bson_t& doc, const std::string& path, bson_t& out) {
  Appender a{out, 0, {}};
  bson_iter_t top;
  const size_t dot = path.find('.');
  const std::string head = path.substr(0, dot);
  if (bson_iter_init_find(&top, &doc, head.c_str()))
    walk(top, dot == std::string::npos ? std::string_view() : std::string_view(path).substr(dot + 1), a);
  return a.result;
}

}  // namespace shardscope::rewrite
