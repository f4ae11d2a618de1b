// collectLeadingMatch: see leading_match.h.
#include "routing/leading_match.h"

#include <cstring>

#include "routing/projections_passed.h"

namespace shardscope::routing {

// A per-thread document for combining the leading $match stages: bson_reinit keeps the buffer a
// long $match made it grow to, so only the first such pipeline on a thread allocates. A buffer
// grown by an unusually large pipeline is given back rather than kept for the thread's life.
bson_t& reusedLeadingMatchDocument() {
  constexpr uint32_t kLargestKept = 64 * 1024;
  struct Reused {
    bson_t doc = BSON_INITIALIZER;
    ~Reused() { bson_destroy(&doc); }
  };
  thread_local Reused reused;
  if (reused.doc.len > kLargestKept) {
    bson_destroy(&reused.doc);
    bson_init(&reused.doc);
  } else {
    bson_reinit(&reused.doc);
  }
  return reused.doc;
}

LeadingMatch collectLeadingMatch(const bson_iter_t& pipeline, bson_t* out) {
  LeadingMatch lead;
  bson_iter_t stages = pipeline;
  bson_t and_array;
  bson_append_array_begin(out, "$and", 4, &and_array);
  // The leading $match stages are ANDed: analysing only the first few gives a superset of the
  // shards (correct, conservative) and keeps a pipeline of 600,000 stages from being copied whole.
  constexpr int kMaxCombinedMatches = 64;
  ProjectionsPassed passed;  // projection stages a later $match's filters may move before
  constexpr int kMaxExaminedFilters = 256;
  int examined = 0;
  while (bson_iter_next(&stages)) {
    bson_iter_t stage;
    if (!BSON_ITER_HOLDS_DOCUMENT(&stages) || !bson_iter_recurse(&stages, &stage) || !bson_iter_next(&stage)) break;
    const char* name = bson_iter_key(&stage);
    if (!lead.first_stage) lead.first_stage = name;
    if (std::strcmp(name, "$match") == 0 && BSON_ITER_HOLDS_DOCUMENT(&stage)) {
      if (lead.n_match == kMaxCombinedMatches) break;
      uint32_t len;
      const uint8_t* data;
      bson_iter_document(&stage, &len, &data);
      char key[16];
      const char* k;
      bson_t sub;
      if (!bson_init_static(&sub, data, len)) break;  // unterminated sub-document: stop at the last good stage
      if (passed.empty()) {
        if (lead.n_match == 0) lead.first_whole = {data, len};
        bson_uint32_to_string(lead.n_match++, &k, key, sizeof key);
        bson_append_document(&and_array, k, -1, &sub);
        continue;
      }
      // After projection stages only the filters on paths they pass through move ahead, each
      // alone; an operator ($or, $expr, ...) may read any field and stays behind.
      bson_iter_t filter;
      if (!bson_iter_init(&filter, &sub)) break;
      while (lead.n_match < kMaxCombinedMatches && bson_iter_next(&filter)) {
        // Each filter is checked against every projection passed: a bounded number of them is read.
        if (++examined > kMaxExaminedFilters) break;
        const char* path = bson_iter_key(&filter);
        if (path[0] == '$' || !passed.preserves(path)) continue;
        bson_uint32_to_string(lead.n_match++, &k, key, sizeof key);
        bson_t one;
        bson_append_document_begin(&and_array, k, -1, &one);
        bson_append_iter(&one, path, -1, &filter);
        bson_append_document_end(&and_array, &one);
      }
      continue;
    }
    if (std::strcmp(name, "$sort") == 0) continue;
    if (ProjectionsPassed::isProjectionStage(name)) {
      if (passed.add(name, stage)) continue;
      break;
    }
    if (lead.n_match == 0 && passed.empty() && std::strcmp(name, "$geoNear") == 0 && BSON_ITER_HOLDS_DOCUMENT(&stage)) {
      bson_iter_t q;
      if (bson_iter_recurse(&stage, &q) && bson_iter_find(&q, "query") && BSON_ITER_HOLDS_DOCUMENT(&q)) {
        uint32_t len;
        const uint8_t* data;
        bson_iter_document(&q, &len, &data);
        bson_t sub;
        if (bson_init_static(&sub, data, len)) {
          bson_append_document(&and_array, "0", 1, &sub);
          lead.n_match = 1;
        }
      }
      lead.geo = true;
    }
    break;
  }
  bson_append_array_end(out, &and_array);
  return lead;
}

}  // namespace shardscope::routing

namespace shardscope::routing {

bool aggregateFilter(const bson_t& body, bson_t& filter) {
  bson_iter_t it, stages;
  if (!bson_iter_init_find(&it, &body, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &stages))
    return false;
  bson_t& combined = reusedLeadingMatchDocument();
  const LeadingMatch lead = collectLeadingMatch(stages, &combined);
  if (lead.n_match == 0) return false;
  // One whole $match: the command's own document, as written.
  if (lead.n_match == 1 && lead.first_whole.data && !lead.geo)
    return bson_init_static(&filter, lead.first_whole.data, lead.first_whole.len);
  return bson_init_static(&filter, bson_get_data(&combined), combined.len);
}

}  // namespace shardscope::routing
