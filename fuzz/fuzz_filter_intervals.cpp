// libFuzzer: arbitrary BSON as a filter, analysed against a few shard key patterns. Must never
// crash, hang or under-allocate; results are not checked here (the property test does that),
// except one: wherever the plain-equality path answers, the general analysis answers the same.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "routing/equality_key.h"
#include "routing/filter_bounds.h"
#include "routing/key_ranges.h"
#include "routing/plain_equality_filter.h"
#include "routing/routing_file.h"

using namespace shardscope::routing;

namespace {

// Keys {a, b.c} and {a, b: hashed}, split on both fields.
const RoutingTable& table() {
  static const std::shared_ptr<const RoutingTable> t = [] {
    std::string error;
    auto parsed = parseRoutingText(R"({"shards": ["s0", "s1", "s2"], "collections": [
 {"ns": "t.range", "key": {"a": 1, "b.c": 1}, "chunks": [
  {"min": {"a": {"$minKey": 1}, "b.c": {"$minKey": 1}}, "max": {"a": 5, "b.c": 0}, "shard": "s0"},
  {"min": {"a": 5, "b.c": 0}, "max": {"a": 5, "b.c": "m"}, "shard": "s1"},
  {"min": {"a": 5, "b.c": "m"}, "max": {"a": {"$maxKey": 1}, "b.c": {"$maxKey": 1}}, "shard": "s2"}]},
 {"ns": "t.hashed", "key": {"a": 1, "b": "hashed"}, "chunks": [
  {"min": {"a": {"$minKey": 1}, "b": {"$minKey": 1}}, "max": {"a": 5, "b": 0}, "shard": "s0"},
  {"min": {"a": 5, "b": 0}, "max": {"a": {"$maxKey": 1}, "b": {"$maxKey": 1}}, "shard": "s1"}]}]})",
                                   false, "fuzz", error);
    if (!parsed) __builtin_trap();
    return parsed;
  }();
  return *t;
}

void checkPlainEquality(const bson_t& filter, bool simple_collation) {
  for (const auto& [ns, coll] : table().collections()) {
    FilterTarget plain, general;
    if (!targetPlainEquality(*coll, filter, simple_collation, TargetOptions{}, plain)) continue;
    std::string detail;  // asks targetFilter for the general analysis
    targetFilter(*coll, filter, simple_collation, TargetOptions{}, general, &detail);
    if (plain.targeting != general.targeting || plain.shards != general.shards || plain.reason != general.reason ||
        plain.full_key != general.full_key || plain.key_pinned != general.key_pinned || plain.spent < general.spent)
      __builtin_trap();
    if (plain.key_pinned && compareKeys(plain.key.span(), general.key.span()) != 0) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* kPatterns[] = {R"({"a": 1})", R"({"a": 1, "b.c": 1})", R"({"a": "hashed"})",
                                    R"({"a": 1, "b": "hashed"})"};
  bson_t filter;
  if (size < 5 || !bson_init_static(&filter, data, size) || !bson_validate(&filter, BSON_VALIDATE_NONE, nullptr)) return 0;
  checkPlainEquality(filter, size % 3 != 0);
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
