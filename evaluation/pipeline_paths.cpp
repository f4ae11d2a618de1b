#include "evaluation/pipeline_paths.h"

#include <string_view>

namespace shardscope::evaluation {

namespace {

// One stage: appends what it changes, or returns false when it may change anything.
bool appendStagePaths(const bson_iter_t& stage, EventBatch& batch, int& names, int max_names) {
  bson_iter_t s, spec;
  if (!BSON_ITER_HOLDS_DOCUMENT(&stage) || !bson_iter_recurse(&stage, &s) || !bson_iter_next(&s)) return false;
  const std::string_view name(bson_iter_key(&s), bson_iter_key_len(&s));
  auto add = [&](std::string_view path) {
    if (path.empty() || ++names > max_names) return false;
    batch.appendName(path);
    return true;
  };
  if (name == "$set" || name == "$addFields") {
    if (!BSON_ITER_HOLDS_DOCUMENT(&s) || !bson_iter_recurse(&s, &spec)) return false;
    while (bson_iter_next(&spec))
      if (!add({bson_iter_key(&spec), bson_iter_key_len(&spec)})) return false;
  } else if (name == "$unset") {
    if (BSON_ITER_HOLDS_UTF8(&s)) {
      uint32_t len = 0;
      const char* path = bson_iter_utf8(&s, &len);
      return add({path, len}) && !bson_iter_next(&s);
    }
    if (!BSON_ITER_HOLDS_ARRAY(&s) || !bson_iter_recurse(&s, &spec)) return false;
    while (bson_iter_next(&spec)) {
      if (!BSON_ITER_HOLDS_UTF8(&spec)) return false;
      uint32_t len = 0;
      const char* path = bson_iter_utf8(&spec, &len);
      if (!add({path, len})) return false;
    }
  } else {
    return false;  // $project, $replaceRoot, $replaceWith: any field
  }
  return !bson_iter_next(&s);  // a stage document holds one stage
}

}  // namespace

void appendPipelinePaths(const bson_iter_t& pipeline, EventBatch& batch, int max_names) {
  const size_t mark = batch.mark();
  bson_iter_t stages;
  int names = 0;
  bool known = BSON_ITER_HOLDS_ARRAY(&pipeline) && bson_iter_recurse(&pipeline, &stages);
  while (known && bson_iter_next(&stages)) known = appendStagePaths(stages, batch, names, max_names);
  if (known) return;
  batch.truncate(mark);
  batch.appendName("");
}

}  // namespace shardscope::evaluation
