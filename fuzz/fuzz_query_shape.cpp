// libFuzzer: query shapes (common/query_shape.h) of arbitrary commands that pass the proxy's request
// validation. Input: OP_MSG sections (kind-0 body, optional kind-1 sequences). Invariants checked:
// no crash or hang, the shape of a filter is valid JSON, and equal inputs give equal shapes.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "common/query_shape.h"

using namespace shardscope;

static void checkJson(const std::string& json) {
  // appendFilterShape promises valid JSON in valid UTF-8 (the admin endpoint embeds it).
  if (!fuzz::isJson(json) || !bson_utf8_validate(json.data(), json.size(), false)) {
    fprintf(stderr, "shape is not valid JSON:\n%s\n", json.c_str());
    __builtin_trap();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame;
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!fuzz::decodeSections({data, size}, frame, msg, view)) return 0;

  std::string shape, again;
  common::computeShape(view, shape);
  common::computeShape(view, again);
  if (shape != again) __builtin_trap();  // shape ids must be deterministic
  // Bounded whatever the input (4 KB limit, plus at most one cut entry per nesting level).
  if (shape.size() > 64 * 1024) __builtin_trap();
  common::hashBytes(shape);

  std::string filter;
  common::appendFilterShape(view.body, filter);
  checkJson(filter);
  if (filter.size() > 64 * 1024) __builtin_trap();

  bson_iter_t it;
  if (bson_iter_init_find(&it, &view.body, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it)) {
    uint32_t len;
    const uint8_t* buf;
    bson_iter_array(&it, &len, &buf);
    bson_t pipeline;
    if (bson_init_static(&pipeline, buf, len)) {
      std::string p;
      common::appendPipelineShape(pipeline, p);
    }
  }
  return 0;
}
