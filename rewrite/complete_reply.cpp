#include "rewrite/complete_reply.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/command_fields.h"
#include "rewrite/lookup_refusals.h"

namespace shardscope::rewrite {
namespace {

bool child(const bson_t* doc, const char* path, bson_iter_t& out) {
  bson_iter_t it;
  return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &out);
}

bool zeroOrAbsent(const bson_t& body, const char* field) {
  bson_iter_t it;
  return !bson_iter_init_find(&it, &body, field) || (BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) == 0);
}

// Options that never drop a document or a field from the answer; anything else is not trusted.
bool onlyHarmlessOptions(const bson_t& body, std::initializer_list<std::string_view> own) {
  static constexpr std::string_view kHarmless[] = {"$db", "lsid", "$clusterTime", "$readPreference", "comment", "maxTimeMS",
                                                   "apiVersion", "apiStrict", "apiDeprecationErrors", "noCursorTimeout",
                                                   "batchSize", "sort", "readConcern", "let", "$audit", "limit", "skip"};
  bson_iter_t it;
  if (!bson_iter_init(&it, &body)) return false;
  bool first = true;
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (first) {  // the command name
      first = false;
      continue;
    }
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    if (std::find(std::begin(kHarmless), std::end(kHarmless), key) == std::end(kHarmless)) return false;
  }
  bson_iter_t rc;
  if (child(&body, "readConcern.atClusterTime", rc) || child(&body, "readConcern.afterClusterTime", rc)) return false;
  // Only the primary's latest data: a secondary, or a majority-committed snapshot, may not show yet
  // a write the sidecar has already seen answered (a line moved), and would settle the order as it
  // was before it.
  if (!readsPrimaryLatest(body)) return false;
  return zeroOrAbsent(body, "limit") && zeroOrAbsent(body, "skip");
}

// The values of a filter that is the lookup field alone: v, {$eq: v} or {$in: [...]}.
bool filterValues(const bson_t& filter, const std::string& field, bson_t& values) {
  bson_iter_t it;
  if (bson_count_keys(&filter) != 1 || !bson_iter_init_find(&it, &filter, field.c_str())) return false;
  uint32_t n = 0;
  auto add = [&](const bson_iter_t& v) {
    if (canonicalValueKey(v).empty()) return false;
    char buf[16];
    const char* idx;
    bson_uint32_to_string(n++, &idx, buf, sizeof buf);
    return bson_append_iter(&values, idx, -1, &v);
  };
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return add(it);
  bson_t ops, list;
  bson_iter_t op, e;
  if (!common::documentOrArray(it, ops) || bson_count_keys(&ops) != 1 || !bson_iter_init(&op, &ops) || !bson_iter_next(&op))
    return false;
  if (std::string_view(bson_iter_key(&op)) == "$eq") return add(op);
  if (std::string_view(bson_iter_key(&op)) != "$in" || !common::documentOrArray(op, list) || !bson_iter_init(&e, &list))
    return false;
  while (bson_iter_next(&e))
    if (!add(e)) return false;
  return n > 0;
}

}  // namespace

std::string completeReplyValues(const protocol::CommandView& view, const LookupRule& rule) {
  if (view.hasTxnNumber) return {};  // a transaction's reads see its own writes
  const protocol::CommandKind kind = view.traits.kind;
  bson_iter_t it;
  bson_t filter;
  if (kind == protocol::CommandKind::Find) {
    if (!onlyHarmlessOptions(view.body, {"find", "filter", "projection"}) || !child(&view.body, "filter", it) ||
        !common::documentOrArray(it, filter))
      return {};
  } else if (kind == protocol::CommandKind::Aggregate) {
    bson_t pipeline, stage;
    bson_iter_t s, m;
    if (!onlyHarmlessOptions(view.body, {"aggregate", "pipeline", "cursor"}) || !child(&view.body, "pipeline", it) ||
        !common::documentOrArray(it, pipeline) || bson_count_keys(&pipeline) != 1 || !bson_iter_init(&s, &pipeline) ||
        !bson_iter_next(&s) || !common::documentOrArray(s, stage) || bson_count_keys(&stage) != 1 ||
        !bson_iter_init_find(&m, &stage, "$match") || !common::documentOrArray(m, filter))
      return {};
  } else {
    return {};
  }
  bson_t values = BSON_INITIALIZER;
  std::string out;
  if (filterValues(filter, rule.lookup_field, values)) out.assign(reinterpret_cast<const char*>(bson_get_data(&values)), values.len);
  bson_destroy(&values);
  return out;
}

bool learnFromCompleteReply(LookupIndex& index, const std::string& values, const protocol::ReplyFacts& reply) {
  bson_t batch, requested;
  if (values.empty() || !reply.exhausted() || !reply.first_batch || !reply.batch.asDocument(batch) ||
      !bson_init_static(&requested, reinterpret_cast<const uint8_t*>(values.data()), values.size()))
    return false;
  // Per requested key: the added fields of its documents (first seen), and whether they all agree.
  struct Seen {
    std::string key, value, canon;
    bool any = false, agree = true;
  };
  std::vector<Seen> seen;
  bson_iter_t r;
  if (!bson_iter_init(&r, &requested)) return false;
  while (bson_iter_next(&r)) seen.push_back({.key = canonicalValueKey(r), .value = {}, .canon = {}});
  bson_iter_t d;
  if (!bson_iter_init(&d, &batch)) return false;
  while (bson_iter_next(&d)) {
    bson_t doc, added;
    if (!common::documentOrArray(d, doc)) return false;
    auto compact = index.extract(&doc);
    const bson_t* c = compact.get();
    bson_iter_t l, v;
    if (!c || !bson_iter_init_find(&l, c, "l")) return false;  // a document without its lookup value: not ours to judge
    std::string value, canon;
    if (bson_iter_init_find(&v, c, "v") && common::documentOrArray(v, added)) {
      canon = canonicalValues(&added);
      value.assign(reinterpret_cast<const char*>(bson_get_data(&added)), added.len);
    }
    std::vector<std::string> keys;
    bson_iter_t e;
    if (BSON_ITER_HOLDS_ARRAY(&l) && bson_iter_recurse(&l, &e)) {
      while (bson_iter_next(&e)) keys.push_back(canonicalValueKey(e));
    } else {
      keys.push_back(canonicalValueKey(l));
    }
    // A document the filter matched under none of the requested keys (a decimal equal to one of
    // them): its added fields cannot be attributed, so the reply proves nothing.
    if (std::none_of(seen.begin(), seen.end(),
                     [&](const Seen& s) { return std::find(keys.begin(), keys.end(), s.key) != keys.end(); }))
      return false;
    for (auto& s : seen) {
      if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) continue;
      if (canon.empty()) s.agree = false;
      else if (!s.any) s.value = value, s.canon = canon;
      else if (s.canon != canon) s.agree = false;
      s.any = true;
    }
  }
  size_t i = 0;
  bson_iter_init(&r, &requested);
  while (bson_iter_next(&r)) {
    const auto& s = seen[i++];
    if (!s.any) continue;  // no such order (now): nothing to learn
    bson_t added;
    if (s.agree && bson_init_static(&added, reinterpret_cast<const uint8_t*>(s.value.data()), s.value.size()))
      index.learnComplete(r, &added);
    else
      index.learnComplete(r, nullptr);
  }
  return true;
}

}  // namespace shardscope::rewrite
