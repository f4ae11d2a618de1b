#include "evaluation/key_facts.h"
#include "evaluation/export_bson.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "common/command_fields.h"

namespace shardscope::evaluation {

namespace {

const char* indexKey(uint32_t i, char (&buf)[16]) {
  const char* k;
  bson_uint32_to_string(i, &k, buf, sizeof buf);
  return k;
}

void appendInts(bson_t* doc, const char* key, const std::vector<int64_t>& v) {
  bson_t arr;
  char idx[16];
  bson_append_array_begin(doc, key, -1, &arr);
  for (size_t i = 0; i < v.size(); ++i) bson_append_int64(&arr, indexKey(static_cast<uint32_t>(i), idx), -1, v[i]);
  bson_append_array_end(doc, &arr);
}

std::vector<int64_t> getInts(const bson_iter_t& arrayIt) {
  std::vector<int64_t> out;
  bson_iter_t it;
  if (!BSON_ITER_HOLDS_ARRAY(&arrayIt) || !bson_iter_recurse(&arrayIt, &it)) return out;
  while (bson_iter_next(&it))
    if (BSON_ITER_HOLDS_NUMBER(&it)) out.push_back(bson_iter_as_int64(&it));
  return out;
}

void appendPairs(bson_t* doc, const char* key, const std::vector<std::pair<uint64_t, uint64_t>>& v) {
  std::vector<int64_t> flat;
  for (const auto& [h, c] : v) flat.push_back(static_cast<int64_t>(h)), flat.push_back(static_cast<int64_t>(c));
  appendInts(doc, key, flat);
}

std::vector<std::pair<uint64_t, uint64_t>> toPairs(const std::vector<int64_t>& flat) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    out.push_back({static_cast<uint64_t>(flat[i]), static_cast<uint64_t>(std::max<int64_t>(0, flat[i + 1]))});
  return out;
}

// Counts of the same hash add up; the largest kept (ties by hash, as the analysis orders them).
void mergeTop(std::vector<std::pair<uint64_t, uint64_t>>& into, const std::vector<std::pair<uint64_t, uint64_t>>& from) {
  std::unordered_map<uint64_t, uint64_t> sum;
  for (const auto& [h, c] : into) sum[h] += c;
  for (const auto& [h, c] : from) sum[h] += c;
  into.assign(sum.begin(), sum.end());
  std::sort(into.begin(), into.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (into.size() > kExportedTopKeys) into.resize(kExportedTopKeys);
}

// GEE's rare-value part adds up across sidecars (a value seen once is most likely seen by one
// sidecar only); the repeated part is the same values seen everywhere: the largest one stands.
void mergeEstimate(double& estimate, double& repeated, double o_estimate, double o_repeated) {
  estimate = (estimate - repeated) + (o_estimate - o_repeated) + std::max(repeated, o_repeated);
  repeated = std::max(repeated, o_repeated);
}

double getDouble(const bson_t& doc, const char* key) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, key) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_double(&it) : 0;
}

}  // namespace

void ShapeRouting::add(const ShapeRouting& o) {
  for (auto m : kShapeRoutingCounts) this->*m += o.*m;
  collation_assumed += o.collation_assumed;
  collation_broadcast += o.collation_broadcast;
  if (ranges.size() < o.ranges.size()) ranges.resize(o.ranges.size(), 0);
  for (size_t i = 0; i < o.ranges.size(); ++i) ranges[i] += o.ranges[i];
}

void KeyFacts::merge(const KeyFacts& o) {
  if (exports == 0) {
    *this = o;
    return;
  }
  exports += o.exports;
  for (const auto& [h, r] : o.shapes) shapes[h].add(r);
  // Trends are shares of the sampled documents: weighted by each side's sample.
  const double a = static_cast<double>(valid), b = static_cast<double>(o.valid);
  if (a == 0) {
    new_extreme_share = o.new_extreme_share, rank_correlation = o.rank_correlation;
  } else if (b > 0) {
    new_extreme_share = (new_extreme_share * a + o.new_extreme_share * b) / (a + b);
    rank_correlation = (rank_correlation * a + o.rank_correlation * b) / (a + b);
  }
  sampled += o.sampled, valid += o.valid, refused += o.refused, seen += o.seen;
  mergeEstimate(estimate, repeated, o.estimate, o.repeated);
  mergeEstimate(lead_estimate, lead_repeated, o.lead_estimate, o.lead_repeated);
  mergeTop(top_keys, o.top_keys);
  mergeTop(top_leads, o.top_leads);
  if (o.suffix_samples > suffix_samples) {
    suffix_distinct = o.suffix_distinct, suffix_samples = o.suffix_samples, suffix_monotonic = o.suffix_monotonic;
  }
  if (shard_inserts.size() < o.shard_inserts.size()) shard_inserts.resize(o.shard_inserts.size(), 0);
  for (size_t i = 0; i < o.shard_inserts.size(); ++i) shard_inserts[i] += o.shard_inserts[i];
  if (split_on.empty()) split_on = o.split_on;
}

void KeyFacts::toBson(bson_t* out) const {
  bson_append_utf8(out, "key", -1, key_json.c_str(), -1);
  bson_t arr;
  char idx[16];
  uint32_t i = 0;
  // One document per shape: {h: hash, c: [used, single, multi, scatter, shards, targetedShards,
  // targeted, withId, rewritten, afterUsed, afterScatter, afterSingle, noTarget, afterNoTarget,
  // statements per simulated chunk...]} (no nested arrays: FerretDB stores no such documents).
  bson_append_array_begin(out, "shapes", -1, &arr);
  for (const auto& [h, r] : shapes) {
    std::vector<int64_t> row;
    for (auto m : kShapeRoutingCounts) row.push_back(static_cast<int64_t>(r.*m));
    for (uint64_t x : r.ranges) row.push_back(static_cast<int64_t>(x));
    bson_t shape;
    bson_append_document_begin(&arr, indexKey(i++, idx), -1, &shape);
    bson_append_int64(&shape, "h", -1, static_cast<int64_t>(h));
    appendInts(&shape, "c", row);
    if (r.collation_assumed) bson_append_int64(&shape, "a", -1, static_cast<int64_t>(r.collation_assumed));
    if (r.collation_broadcast) bson_append_int64(&shape, "d", -1, static_cast<int64_t>(r.collation_broadcast));
    bson_append_document_end(&arr, &shape);
  }
  bson_append_array_end(out, &arr);
  appendInts(out, "docs", {static_cast<int64_t>(sampled), static_cast<int64_t>(valid), static_cast<int64_t>(refused),
                           static_cast<int64_t>(seen)});
  bson_append_double(out, "estimate", -1, estimate);
  bson_append_double(out, "repeated", -1, repeated);
  bson_append_double(out, "leadEstimate", -1, lead_estimate);
  bson_append_double(out, "leadRepeated", -1, lead_repeated);
  appendPairs(out, "topKeys", top_keys);
  appendPairs(out, "topLeads", top_leads);
  bson_append_double(out, "newExtremeShare", -1, new_extreme_share);
  bson_append_double(out, "rankCorrelation", -1, rank_correlation);
  bson_append_double(out, "suffixDistinct", -1, suffix_distinct);
  bson_append_int64(out, "suffixSamples", -1, static_cast<int64_t>(suffix_samples));
  bson_append_bool(out, "suffixMonotonic", -1, suffix_monotonic);
  bson_append_array_begin(out, "shardInserts", -1, &arr);
  for (size_t s = 0; s < shard_inserts.size(); ++s) bson_append_double(&arr, indexKey(static_cast<uint32_t>(s), idx), -1, shard_inserts[s]);
  bson_append_array_end(out, &arr);
  appendName(out, "splitOn", split_on);
}

bool KeyFacts::fromBson(const bson_t& doc) {
  constexpr size_t kFixed = std::size(kShapeRoutingCounts);  // the counts before the per-chunk ones
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, "key") || !BSON_ITER_HOLDS_UTF8(&it)) return false;
  key_json = bson_iter_utf8(&it, nullptr);
  exports = 1;
  shapes.clear();
  if (bson_iter_init_find(&it, &doc, "shapes") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr)) {
    while (bson_iter_next(&arr)) {
      bson_t shape;
      bson_iter_t c;
      if (!common::documentAt(arr, shape) || !bson_iter_init_find(&c, &shape, "c")) return false;
      auto row = getInts(c);
      if (row.size() < kFixed) return false;
      for (int64_t x : row)
        if (x < 0) return false;
      ShapeRouting r;
      for (size_t i = 0; i < kFixed; ++i) r.*kShapeRoutingCounts[i] = static_cast<uint64_t>(row[i]);
      for (size_t i = kFixed; i < row.size(); ++i) r.ranges.push_back(static_cast<uint64_t>(row[i]));
      if (bson_iter_init_find(&c, &shape, "a") && BSON_ITER_HOLDS_INT64(&c) && bson_iter_int64(&c) > 0)
        r.collation_assumed = std::min(static_cast<uint64_t>(bson_iter_int64(&c)), r.used);
      if (bson_iter_init_find(&c, &shape, "d") && BSON_ITER_HOLDS_INT64(&c) && bson_iter_int64(&c) > 0)
        r.collation_broadcast = std::min(static_cast<uint64_t>(bson_iter_int64(&c)), r.used);
      shapes[static_cast<uint64_t>(getInt(shape, "h"))].add(r);
    }
  }
  if (bson_iter_init_find(&it, &doc, "docs")) {
    auto d = getInts(it);
    if (d.size() != 4) return false;
    sampled = d[0], valid = d[1], refused = d[2], seen = d[3];
  }
  estimate = getDouble(doc, "estimate");
  repeated = getDouble(doc, "repeated");
  lead_estimate = getDouble(doc, "leadEstimate");
  lead_repeated = getDouble(doc, "leadRepeated");
  if (bson_iter_init_find(&it, &doc, "topKeys")) top_keys = toPairs(getInts(it));
  if (bson_iter_init_find(&it, &doc, "topLeads")) top_leads = toPairs(getInts(it));
  new_extreme_share = getDouble(doc, "newExtremeShare");
  rank_correlation = getDouble(doc, "rankCorrelation");
  suffix_distinct = getDouble(doc, "suffixDistinct");
  suffix_samples = static_cast<uint64_t>(std::max<int64_t>(0, getInt(doc, "suffixSamples")));
  suffix_monotonic = bson_iter_init_find(&it, &doc, "suffixMonotonic") && bson_iter_as_bool(&it);
  shard_inserts.clear();
  if (bson_iter_init_find(&it, &doc, "shardInserts") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr))
    while (bson_iter_next(&arr)) shard_inserts.push_back(bson_iter_as_double(&arr));
  if (bson_iter_init_find(&it, &doc, "splitOn") && BSON_ITER_HOLDS_UTF8(&it)) split_on = bson_iter_utf8(&it, nullptr);
  return true;
}

}  // namespace shardscope::evaluation
