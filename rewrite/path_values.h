// The values an equality on a dotted path can match in one document, as MongoDB reads the path:
// an array met on the way is crossed (each element document continues the path), and an array
// at the end matches each of its elements. `{order: [{id: "X"}]}` is matched by
// `{"order.id": "X"}`, which bson_iter_find_descendant alone cannot see.
#pragma once
#include <bson/bson.h>

#include <string>

namespace shardscope::rewrite {

struct PathValues {
  bool found = false;         // the path reaches at least one value
  bool crossed_array = false;  // an array was met on the way or at the end
};

// Appends every value `path` reaches in `doc` to `out` (a BSON array being built, keys "0",
// "1"...), leaf arrays expanded into their elements. Linear in the document's size.
PathValues appendPathValues(const bson_t& doc, const std::string& path, bson_t& out);

}  // namespace shardscope::rewrite
