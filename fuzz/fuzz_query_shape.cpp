// libFuzzer: query shapes (common/query_shape.h) of arbitrary commands that pass the proxy's request
// validation. Input: OP_MSG sections (kind-0 body, optional kind-1 sequences). Invariants checked:
// no crash or hang, the shape of a filter is valid JSON, equal inputs give equal shapes, the
// view's key index gives the shape a scan of the body gives, and ShapeCache (its memo) gives
// computeShape's shape and id.
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
  // Differential: the view's key index (the request path's fast lookup) must give the shape the
  // body scan gives, as a view built by hand has it.
  protocol::CommandView scanned = view;
  scanned.indexedKeys = protocol::CommandView::kNotIndexed;
  std::string slow;
  common::computeShape(scanned, slow);
  if (slow != shape) {
    fprintf(stderr, "indexed shape differs from the scanned one:\n%s\n%s\n", shape.c_str(), slow.c_str());
    __builtin_trap();
  }
  // Differential: ShapeCache's memo (kept across inputs, which libFuzzer makes from one another)
  // must give computeShape's text and id whether it answers or not.
  static common::ShapeCache cache;
  std::string nsBuffer;
  std::string_view ns = view.ns(nsBuffer);
  cache.reset();
  common::Shape cached = cache.get(view, ns);
  if (cached.text != shape || cached.id != common::shapeId(ns.empty() ? view.db : ns, view.name, shape)) {
    fprintf(stderr, "ShapeCache differs from computeShape:\n%.*s\n%s\n", static_cast<int>(cached.text.size()),
            cached.text.data(), shape.c_str());
    __builtin_trap();
  }
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
