#include "routing/out_stage.h"

#include "common/command_fields.h"

namespace shardscope::routing {

namespace {

std::string_view utf8Of(const bson_iter_t& it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

}  // namespace

std::string_view outStageNamespace(const bson_iter_t& pipeline, std::string_view db, std::string& buffer,
                                   size_t max_stages) {
  bson_iter_t stages;
  if (!BSON_ITER_HOLDS_ARRAY(&pipeline) || !bson_iter_recurse(&pipeline, &stages)) return {};
  for (size_t n = 0; n < max_stages && bson_iter_next(&stages); ++n) {
    bson_iter_t stage, spec;
    if (!BSON_ITER_HOLDS_DOCUMENT(&stages) || !bson_iter_recurse(&stages, &stage) || !bson_iter_next(&stage) ||
        std::string_view(bson_iter_key(&stage)) != "$out")
      continue;
    if (BSON_ITER_HOLDS_UTF8(&stage)) return common::joinNamespace(db, utf8Of(stage), buffer);
    if (!BSON_ITER_HOLDS_DOCUMENT(&stage) || !bson_iter_recurse(&stage, &spec)) return {};
    std::string_view out_db = db, out_coll;
    while (bson_iter_next(&spec)) {
      const std::string_view key = bson_iter_key(&spec);
      if (key == "db" && BSON_ITER_HOLDS_UTF8(&spec)) out_db = utf8Of(spec);
      if (key == "coll" && BSON_ITER_HOLDS_UTF8(&spec)) out_coll = utf8Of(spec);
    }
    return out_coll.empty() ? std::string_view() : common::joinNamespace(out_db, out_coll, buffer);
  }
  return {};
}

}  // namespace shardscope::routing
