// libFuzzer: arbitrary BSON as a filter, analysed against a few shard key patterns. Must never
// crash, hang or under-allocate; results are not checked here (the property test does that).
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "routing/equality_key.h"
#include "routing/filter_bounds.h"
#include "routing/key_ranges.h"

using namespace shardscope::routing;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* kPatterns[] = {R"({"a": 1})", R"({"a": 1, "b.c": 1})", R"({"a": "hashed"})",
                                    R"({"a": 1, "b": "hashed"})"};
  bson_t filter;
  if (size < 5 || !bson_init_static(&filter, data, size) || !bson_validate(&filter, BSON_VALIDATE_NONE, nullptr)) return 0;
  for (const char* p : kPatterns) {
    std::string error;
    auto pattern = ShardKeyPattern::fromJson(p, error);
    KeyPoint key;
    extractEqualityKey(*pattern, filter, size % 2 == 0, key);
    FilterOptions options;
    options.simple_collation = size % 3 != 0;
    // A small budget now and then, so the over-budget paths run too (issue 14).
    if (size % 5 == 0) options.budget = 64;
    FilterBounds bounds;
    computeFilterBounds(*pattern, filter, options, bounds);
    // Past the budget the analysis must stop: at most one more step than the budget is spent, and
    // that step is refused before its work is done.
    if (bounds.status == BoundsStatus::Ok && bounds.spent > options.budget) __builtin_trap();
    KeyRanges ranges;
    ranges.flatten(bounds.fields, 10000);
    KeyPoint doc_key;
    pattern->extractFromDocument(filter, doc_key);
  }
  return 0;
}
