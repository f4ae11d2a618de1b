#include "evaluation/key_facts_from_samples.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/command_fields.h"
#include "evaluation/key_samples.h"
#include "evaluation/sampled_filter.h"
#include "evaluation/simulated_cluster.h"
#include "evaluation/value_codec.h"
#include "routing/chunk_map.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

}  // namespace

namespace {

// The roles every branch of a $or gives a field: mongos targets a $or by the union of its
// branches' bounds, so a field pinned in every branch is pinned (to several points), one bounded
// in every branch (by points or ranges) is bounded; a field some branch leaves free is neither.
void collectOrRoles(bson_iter_t& branches, FieldRoles& roles, int depth) {
  std::vector<FieldRoles> each;
  while (bson_iter_next(&branches)) {
    bson_t sub;
    each.emplace_back();
    if (common::documentAt(branches, sub)) collectRoles(sub, each.back(), depth + 1);
  }
  if (each.empty()) return;
  auto in = [](const std::vector<std::string>& v, const std::string& f) {
    return std::find(v.begin(), v.end(), f) != v.end();
  };
  auto everyBranch = [&](const std::string& f, bool eq_only) {
    return std::all_of(each.begin(), each.end(),
                       [&](const FieldRoles& b) { return in(b.eq, f) || (!eq_only && in(b.range, f)); });
  };
  for (const auto* list : {&each[0].eq, &each[0].range})
    for (const auto& f : *list) {
      if (everyBranch(f, true)) addUnique(roles.eq, f);
      else if (everyBranch(f, false)) addUnique(roles.range, f);
    }
}

}  // namespace

// Fields a filter pins by equality ({f: v}, $eq, $in, the same field in every $or branch) and
// fields it bounds by a range.
void collectRoles(const bson_t& filter, FieldRoles& roles, int depth) {
  bson_iter_t it;
  if (depth > 8 || !bson_iter_init(&it, &filter)) return;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (key[0] == '$') {
      if (std::strcmp(key, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
        bson_iter_t arr;
        bson_iter_recurse(&it, &arr);
        while (bson_iter_next(&arr)) {
          bson_t sub;
          if (common::documentAt(arr, sub)) collectRoles(sub, roles, depth + 1);
        }
      } else if (std::strcmp(key, "$or") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
        bson_iter_t arr;
        bson_iter_recurse(&it, &arr);
        collectOrRoles(arr, roles, depth);
      }
      continue;
    }
    if (!common::isOperatorDocument(it)) {
      if (!BSON_ITER_HOLDS_ARRAY(&it) && !BSON_ITER_HOLDS_REGEX(&it)) addUnique(roles.eq, key);
      continue;
    }
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops)) {
      std::string_view op = bson_iter_key(&ops);
      if (op == "$eq" || op == "$in")
        addUnique(roles.eq, key);
      else if (op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte")
        addUnique(roles.range, key);
    }
  }
}

namespace {

bool staticDoc(std::string_view bytes, bson_t& out) {
  return bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// Whether a filter pins `_id` by equality (a single-document write may then go out without the
// shard key: broadcast, but accepted before 7.1).
bool pinsId(const bson_t& filter) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &filter, "_id")) return false;
  if (!common::isOperatorDocument(it)) return !BSON_ITER_HOLDS_REGEX(&it) && !BSON_ITER_HOLDS_ARRAY(&it);
  bson_iter_t ops;
  bson_iter_recurse(&it, &ops);
  return bson_iter_next(&ops) && std::strcmp(bson_iter_key(&ops), "$eq") == 0;
}

// The filter as the lookup rewrite would send it: when it pins the rule's lookup field by
// equality and lacks some of the fields the rule adds, they are added, pinned (to a stand-in
// value: the simulated cluster only needs to know they are pinned). False when the rule does not
// apply to this filter.
bool rewrittenFilter(const bson_t& filter, const rewrite::LookupRule& rule, bson_t* out) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &filter, rule.lookup_field.c_str())) return false;
  bson_iter_t value = it;
  if (common::isOperatorDocument(it)) {
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    if (!bson_iter_next(&ops) || std::strcmp(bson_iter_key(&ops), "$eq") != 0) return false;
    value = ops;
  } else if (BSON_ITER_HOLDS_REGEX(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
    return false;
  }
  bool added = false;
  bson_init(out);
  bson_concat(out, &filter);
  for (const auto& f : rule.add_fields) {
    bson_iter_t has;
    if (bson_iter_init_find(&has, &filter, f.c_str())) continue;
    bson_append_value(out, f.c_str(), -1, bson_iter_value(&value));
    added = true;
  }
  if (!added) bson_destroy(out);
  return added;
}

struct Classified {
  double single = 0, multi = 0, scatter = 0, shards = 0, tsum = 0;
  size_t used = 0, tn = 0;
};

// Returns whether the statement resolves to one shard (mongos runs a single-document write so).
// `simple`: it ran under the simple collation (else its string key predicates cannot target).
bool classify(const routing::CollectionRouting& coll, const bson_t& f, bool simple, Classified& o,
              std::vector<double>* per_range) {
  routing::FilterTarget ft;
  routing::TargetOptions to;
  routing::targetFilter(coll, f, simple, to, ft, nullptr);
  ++o.used;
  if (ft.full_key)
    o.single += 1;
  else if (ft.targeting == routing::Targeting::Broadcast)
    o.scatter += 1;
  else
    o.multi += 1;
  o.shards += static_cast<double>(ft.shards.count());
  if (ft.targeting != routing::Targeting::Broadcast) o.tsum += static_cast<double>(ft.shards.count()), ++o.tn;
  if (per_range)
    for (size_t i = 0; i < per_range->size(); ++i)
      if (ft.shards.test(i)) (*per_range)[i] += 1;
  return ft.targeting == routing::Targeting::Single;
}

// Whether mongos broadcasts the filter under the simple collation (`simple`) or a non-simple one.
bool broadcastUnder(const routing::CollectionRouting& coll, const bson_t& f, bool simple) {
  routing::FilterTarget ft;
  routing::targetFilter(coll, f, simple, routing::TargetOptions{}, ft, nullptr);
  return ft.targeting == routing::Targeting::Broadcast;
}

// Sampled counts of the k most frequent hashes, by count then hash (the analysis' order).
std::vector<std::pair<uint64_t, uint64_t>> topCounts(const std::unordered_map<uint64_t, uint64_t>& counts, size_t k) {
  std::vector<std::pair<uint64_t, uint64_t>> v(counts.begin(), counts.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (v.size() > k) v.resize(k);
  return v;
}

// GEE (Charikar et al.) over a sample of n of n_total, and its part from values seen more than once.
void geeEstimate(const std::unordered_map<uint64_t, uint64_t>& counts, double n, double n_total, double& estimate,
                 double& repeated) {
  double f1 = 0, rest = 0;
  for (const auto& [h, k] : counts) (k == 1 ? f1 : rest) += 1;
  estimate = std::round(std::sqrt(n_total / n) * f1 + rest);
  // Every sampled key distinct: nothing says the unsampled ones repeat (GEE would report
  // sqrt(N/n)·n, far below one value per document).
  if (f1 >= 0.99 * n) estimate = std::max(estimate, std::round(n_total * f1 / n));
  repeated = std::min(rest, estimate);
}

// The reservoir's documents with the candidate's key extracted and hashed: `valid` those that
// hold it, `order` the same by arrival.
struct KeyedReservoir {
  std::vector<KeyedSample> samples;
  std::vector<size_t> valid, order;
};

// Extracts the key from each sampled document (counting those MongoDB would refuse for an array)
// and estimates the key's and its leading field's cardinality and heaviest values.
KeyedReservoir keyTheReservoir(const NamespaceState& st, const routing::ShardKeyPattern& pattern, KeyFacts& k) {
  KeyedReservoir kr;
  auto& samples = kr.samples;
  samples.reserve(st.reservoir.size());
  for (const auto& s : st.reservoir) samples.push_back(KeyedSample{s.time_us, s.seq, 0, 0, s.doc, {}});
  std::unordered_map<uint64_t, uint64_t> counts, lead_counts;
  for (size_t i = 0; i < samples.size(); ++i) {
    bson_t d;
    if (!staticDoc(samples[i].doc, d)) continue;
    auto status = pattern.extractFromDocument(d, samples[i].key);
    if (status == routing::KeyExtractStatus::ArrayValue) ++k.refused;
    if (status != routing::KeyExtractStatus::Ok) continue;
    uint64_t h = 0;
    for (size_t f = 0; f < samples[i].key.size; ++f) h = combineHash(h, valueHash(samples[i].key.fields[f].value));
    samples[i].hash = h;
    samples[i].lead_hash = valueHash(samples[i].key.fields[0].value);
    ++counts[h];
    ++lead_counts[samples[i].lead_hash];
    kr.valid.push_back(i);
  }
  k.sampled = samples.size();
  k.valid = kr.valid.size();
  k.seen = std::max<uint64_t>(st.reservoir_seen, kr.valid.size());
  const double n = static_cast<double>(kr.valid.size());
  if (n > 0) {
    geeEstimate(counts, n, static_cast<double>(k.seen), k.estimate, k.repeated);
    geeEstimate(lead_counts, n, static_cast<double>(k.seen), k.lead_estimate, k.lead_repeated);
  }
  k.top_keys = topCounts(counts, kExportedTopKeys);
  k.top_leads = topCounts(lead_counts, kExportedTopKeys);
  kr.order = kr.valid;
  std::sort(kr.order.begin(), kr.order.end(), [&](size_t a, size_t b) {
    return samples[a].time != samples[b].time ? samples[a].time < samples[b].time : samples[a].seq < samples[b].seq;
  });
  return kr;
}

// The largest prefix value's suffix: can its documents be split, and spread?
void measureSuffix(const KeyedReservoir& kr, double monotonic_correlation, KeyFacts& k) {
  uint64_t top_sampled = k.top_leads.empty() ? 0 : k.top_leads.front().first;
  std::vector<size_t> within;
  for (size_t i : kr.order)
    if (kr.samples[i].lead_hash == top_sampled) within.push_back(i);
  std::unordered_map<uint64_t, uint64_t> distinct;
  for (size_t i : within) ++distinct[kr.samples[i].hash];
  k.suffix_distinct = static_cast<double>(distinct.size());
  k.suffix_samples = within.size();
  double extremes = 0, corr = 0;
  keyTrend(kr.samples, within, 1, extremes, corr);
  k.suffix_monotonic = within.size() >= 8 && (std::fabs(corr) >= monotonic_correlation || extremes >= 0.5);
}

// The simulated cluster's inserts per shard (into k.shard_inserts) and its chunk splits: the full
// key's sampled quantiles when there are enough samples, else the leading field's counts over
// every insert. `lead_splits` holds the encoded values the returned splits view.
std::vector<std::vector<bson_value_t>> simulateInserts(const NamespaceState& st, const routing::ShardKeyPattern& pattern,
                                                       uint32_t N, const KeyedReservoir& kr,
                                                       std::vector<std::string>& lead_splits, KeyFacts& k) {
  const auto& lead = pattern.field(0);
  const FieldState* lf = st.field(lead.path);
  std::vector<double> per(N, 0);
  std::vector<std::vector<bson_value_t>> cluster_splits;
  if (pattern.size() > 1 && kr.valid.size() >= 4ull * N) {
    per = simulateFullKey(kr.samples, kr.order, N, cluster_splits);
    k.split_on = lead.hashed ? "full key (hashed " + lead.path + " first)" : "full key";
  } else if (lf) {
    // Too few sampled documents for the full key: the leading field's counts over every insert.
    const auto& src = lead.hashed ? lf->hashed_shard_inserts : lf->ranged_shard_inserts;
    for (size_t i = 0; i < src.size() && i < N; ++i) per[i] = src[i];
    if (!lead.hashed) {
      lead_splits = NamespaceState::computeSplits(lf->distinct, N);
      for (const auto& s : lead_splits) {
        bson_value_t v;
        if (decodeValue(s, v)) cluster_splits.push_back({v});
      }
    }
    k.split_on = lead.hashed ? "hashed " + lead.path : lead.path;
  } else {
    for (size_t i : kr.valid) {
      const auto& b = kr.samples[i].key.fields[0];
      if (lead.hashed)
        ++per[NamespaceState::hashedShard(static_cast<uint64_t>(b.value.value.v_int64), N)];
      else
        ++per[0];
    }
  }
  k.shard_inserts = std::move(per);
  return cluster_splits;
}

// The prefix values (the fields before a hashed field that follows them) holding `chunk_share` of
// the sampled documents or more, with their shares: those the simulated cluster spreads.
std::vector<BusyPrefix> busyPrefixes(const KeyedReservoir& kr, const routing::ShardKeyPattern& pattern,
                                     double chunk_share) {
  std::vector<BusyPrefix> busy;
  const int hashed = pattern.hashedField();
  if (hashed <= 0 || kr.valid.empty()) return busy;
  std::unordered_map<uint64_t, std::pair<size_t, uint64_t>> counts;  // prefix hash: a sample holding it, count
  for (size_t i : kr.valid) {
    uint64_t h = 0;
    for (int f = 0; f < hashed; ++f) h = combineHash(h, valueHash(kr.samples[i].key.fields[f].value));
    auto& [sample, count] = counts.try_emplace(h, i, 0).first->second;
    ++count;
  }
  const double n = static_cast<double>(kr.valid.size());
  for (const auto& [h, at] : counts) {
    const double share = static_cast<double>(at.second) / n;
    if (share < chunk_share) continue;
    BusyPrefix p{{}, share};
    for (int f = 0; f < hashed; ++f) p.values.push_back(kr.samples[at.first].key.fields[f].value);
    busy.push_back(std::move(p));
  }
  return busy;
}

// One shape's sampled statements on the simulated cluster, as sent and as the lookup rewrite
// would send them; false when none could be read (the analysis counts it scatter-gather).
bool routeShape(const ShapeState& s, const routing::CollectionRouting& coll, const rewrite::LookupRule* rule,
                uint32_t N, DefaultCollation default_collation, ShapeRouting& r) {
  Classified sent, after;
  std::vector<double> ranges(N, 0);
  for (const auto& fbytes : s.samples) {
    bson_t f;
    SampleCollation carried;
    if (!readSampledFilter(fbytes, f, carried)) continue;
    const bool collated = runsNonSimple(carried, default_collation);
    // A single-document write that neither resolves to one shard nor pins an exact _id is what
    // mongos refuses before 7.1 (routing/write_targeting.cpp): counted as sent and as rewritten.
    const double broadcasts_before = sent.scatter;
    const bool one_shard = classify(coll, f, !collated, sent, &ranges);
    const bool broadcast = sent.scatter > broadcasts_before;
    // A statement without a collation of its own that a non-simple default broadcasts: under a
    // default nobody showed (taken as simple) it targets only on that assumption; under a known
    // non-simple one it is broadcast for that reason alone.
    // (String predicates on the key: one more targeting, under the other collation, where the
    // outcome could differ.)
    if (carried == SampleCollation::Inherited && default_collation == DefaultCollation::Unknown && !broadcast &&
        broadcastUnder(coll, f, false))
      ++r.collation_assumed;
    if (carried == SampleCollation::Inherited && default_collation == DefaultCollation::NonSimple && broadcast &&
        !broadcastUnder(coll, f, true))
      ++r.collation_broadcast;
    // Under a non-simple collation a string _id is no exact _id either (mongos' isExactIdQuery).
    const bool exact_id = pinsId(f) && (!collated || routing::hasExactId(f, false));
    if (exact_id) ++r.with_id;
    if (!one_shard && !exact_id) ++r.no_target;
    if (!rule) continue;
    bson_t rw;
    if (rewrittenFilter(f, *rule, &rw)) {
      if (!classify(coll, rw, !collated, after, nullptr) && !exact_id) ++r.after_no_target;
      bson_destroy(&rw);
      ++r.rewritten;
    } else {
      if (!classify(coll, f, !collated, after, nullptr) && !exact_id) ++r.after_no_target;
    }
  }
  if (sent.used == 0) return false;
  r.used = sent.used;
  r.single = static_cast<uint64_t>(sent.single), r.multi = static_cast<uint64_t>(sent.multi);
  r.scatter = static_cast<uint64_t>(sent.scatter), r.shards = static_cast<uint64_t>(sent.shards);
  r.targeted_shards = static_cast<uint64_t>(sent.tsum), r.targeted = sent.tn;
  if (rule) {
    r.after_used = after.used, r.after_scatter = static_cast<uint64_t>(after.scatter);
    r.after_single = static_cast<uint64_t>(after.single);
  }
  for (double x : ranges) r.ranges.push_back(static_cast<uint64_t>(x));
  return true;
}

}  // namespace

FieldRoles shapeRoles(const ShapeState& s) {
  FieldRoles roles;
  for (const auto& f : s.samples) {
    bson_t d;
    SampleCollation carried;
    if (readSampledFilter(f, d, carried)) collectRoles(d, roles);
  }
  for (const auto& e : s.eq_fields) addUnique(roles.eq, e);
  for (const auto& r : s.range_fields) addUnique(roles.range, r);
  return roles;
}

KeyFacts factsFromSamples(const NamespaceState& st, const routing::ShardKeyPattern& pattern,
                          const rewrite::LookupRule* rule, uint32_t N, double monotonic_correlation, double chunk_share,
                          DefaultCollation default_collation) {
  KeyFacts k;
  k.key_json = pattern.toJson();
  const KeyedReservoir kr = keyTheReservoir(st, pattern, k);
  keyTrend(kr.samples, kr.order, 0, k.new_extreme_share, k.rank_correlation);  // trend with arrival order
  if (pattern.size() > 1 && !kr.valid.empty()) measureSuffix(kr, monotonic_correlation, k);
  std::vector<std::string> lead_splits;  // encoded, behind cluster_splits' views
  const auto cluster_splits = simulateInserts(st, pattern, N, kr, lead_splits, k);
  routing::CollectionRouting coll;
  if (!buildSimulatedCluster(pattern, cluster_splits, busyPrefixes(kr, pattern, chunk_share), chunk_share, N, coll))
    return k;
  for (const auto& [h, s] : st.shapes) {
    ShapeRouting r;
    if (routeShape(s, coll, rule, N, default_collation, r)) k.shapes.emplace(h, std::move(r));
  }
  return k;
}

}  // namespace shardscope::evaluation
