#include "evaluation/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "evaluation/key_samples.h"
#include "evaluation/value_codec.h"
#include "common/bson_order.h"
#include "common/command_fields.h"
#include "rewrite/lookup_rule.h"
#include "routing/chunk_map.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

struct FieldRoles {
  std::vector<std::string> eq, range;
};

bool isOperatorDoc(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  bson_iter_t sub;
  bson_iter_recurse(&it, &sub);
  return bson_iter_next(&sub) && bson_iter_key(&sub)[0] == '$';
}

void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

// Fields a filter pins by equality ({f: v}, $eq, $in) and fields it bounds by a range.
void collectRoles(const bson_t& filter, FieldRoles& roles, int depth = 0) {
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
      }
      continue;
    }
    if (!isOperatorDoc(it)) {
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

bool staticDoc(std::string_view bytes, bson_t& out) {
  return bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string fixedText(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
}

std::string patternJson(const std::vector<std::pair<std::string, bool>>& fields) {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    s += "\"" + fields[i].first + "\": " + (fields[i].second ? "\"hashed\"" : "1");
  }
  return s + "}";
}

// The simulated cluster: one chunk per shard. `splits` are chunk bounds, each the leading values
// of a key (the fields after them at MinKey): quantiles of the leading field's distinct values for
// a single ranged field, quantiles of the full key's sampled values for a compound one, even
// slices of the hash space for a hashed prefix (when `splits` is empty).
bool buildCluster(const routing::ShardKeyPattern& pattern, const std::vector<std::vector<bson_value_t>>& splits,
                  uint32_t shards, routing::CollectionRouting& coll) {
  coll.key = pattern;
  coll.ns = "simulated";
  auto boundDoc = [&](int kind, const std::vector<bson_value_t>* values, int64_t hashed_split) {
    // kind: -1 all MinKey, +1 all MaxKey, 0 a split (hashed: on the leading field), then MinKey
    bson_t d = BSON_INITIALIZER;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char* name = pattern.field(i).path.c_str();
      if (kind < 0) {
        bson_append_minkey(&d, name, -1);
      } else if (kind > 0) {
        bson_append_maxkey(&d, name, -1);
      } else if (!values) {
        if (i == 0)
          bson_append_int64(&d, name, -1, hashed_split);
        else
          bson_append_minkey(&d, name, -1);
      } else if (i < values->size()) {
        bson_append_value(&d, name, -1, &(*values)[i]);
      } else {
        bson_append_minkey(&d, name, -1);
      }
    }
    std::vector<uint8_t> bytes(bson_get_data(&d), bson_get_data(&d) + d.len);
    bson_destroy(&d);
    return bytes;
  };
  std::vector<std::vector<uint8_t>> bounds;
  bounds.push_back(boundDoc(-1, nullptr, 0));
  if (pattern.field(0).hashed && splits.empty()) {
    for (uint32_t i = 1; i < shards; ++i) {
      double step = 18446744073709551616.0 / shards;
      int64_t split = static_cast<int64_t>(static_cast<double>(std::numeric_limits<int64_t>::min()) + step * i);
      bounds.push_back(boundDoc(0, nullptr, split));
    }
  } else {
    for (const auto& s : splits) bounds.push_back(boundDoc(0, &s, 0));
  }
  bounds.push_back(boundDoc(1, nullptr, 0));
  std::vector<routing::ChunkInput> chunks;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    chunks.push_back({bounds[i], bounds[i + 1], static_cast<uint16_t>(i % shards)});
  std::string error;
  return coll.chunks.build(pattern, std::move(chunks), error);
}

std::string typeName(const FieldState& f) {
  uint64_t n = f.count ? f.count : 1;
  if (f.type_oid * 10 >= n * 9) return "ObjectId";
  if (f.type_date * 10 >= n * 9) return "date";
  if (f.type_number * 10 >= n * 9) return "number";
  if (f.type_string * 10 >= n * 9) return "string";
  return "mixed";
}

// Whether a filter pins `_id` by equality (a single-document write may then go out without the
// shard key: broadcast, but accepted before 7.1).
bool pinsId(const bson_t& filter) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &filter, "_id")) return false;
  if (!isOperatorDoc(it)) return !BSON_ITER_HOLDS_REGEX(&it) && !BSON_ITER_HOLDS_ARRAY(&it);
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
  if (isOperatorDoc(it)) {
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

void classify(const routing::CollectionRouting& coll, const bson_t& f, Classified& o, std::vector<double>* per_range) {
  routing::FilterTarget ft;
  routing::TargetOptions to;
  routing::targetFilter(coll, f, true, to, ft, nullptr);
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
}

void evaluateCandidate(const NamespaceState& st, const AnalysisOptions& opt, CandidateResult& c) {
  const uint32_t N = opt.simulated_shards;
  const auto& lead = c.pattern.field(0);
  c.hashed_prefix = lead.hashed;
  const FieldState* lf = st.field(lead.path);
  const double fair = 1.0 / N;

  // ---- the keyed reservoir ----
  std::vector<KeyedSample> samples;
  samples.reserve(st.reservoir.size());
  for (const auto& s : st.reservoir) {
    KeyedSample k{s.time_us, s.seq, 0, 0, s.doc, {}};
    samples.push_back(std::move(k));
  }
  std::unordered_map<uint64_t, uint64_t> counts, lead_counts;
  std::vector<size_t> valid;
  uint64_t refused = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    bson_t d;
    if (!staticDoc(samples[i].doc, d)) continue;
    auto status = c.pattern.extractFromDocument(d, samples[i].key);
    if (status == routing::KeyExtractStatus::ArrayValue) ++refused;
    if (status != routing::KeyExtractStatus::Ok) continue;
    uint64_t h = 0;
    for (size_t f = 0; f < samples[i].key.size; ++f) h = combineHash(h, valueHash(samples[i].key.fields[f].value));
    samples[i].hash = h;
    samples[i].lead_hash = valueHash(samples[i].key.fields[0].value);
    ++counts[h];
    ++lead_counts[samples[i].lead_hash];
    valid.push_back(i);
  }
  const double n = static_cast<double>(valid.size());

  // ---- arrays on a key path: MongoDB refuses such documents under this key ----
  {
    uint64_t arrays = 0, seen = 0;
    for (const auto& kf : c.pattern.fields()) {
      for (size_t dot = 0;; ++dot) {  // the path and each of its prefixes
        dot = kf.path.find('.', dot);
        const FieldState* f = st.field(dot == std::string::npos ? std::string_view(kf.path) : std::string_view(kf.path).substr(0, dot));
        if (f) arrays = std::max(arrays, f->arrays), seen = std::max(seen, f->count);
        if (dot == std::string::npos) break;
      }
    }
    if (seen > 0) c.array_share = static_cast<double>(arrays) / static_cast<double>(seen);
    else if (!samples.empty()) c.array_share = static_cast<double>(refused) / static_cast<double>(samples.size());
  }

  // ---- cardinality ----
  if (lf) c.prefix_cardinality = std::round(lf->hll.estimate());
  if (c.pattern.size() == 1 && lf) {
    c.cardinality = c.prefix_cardinality;
    c.cardinality_method = "HyperLogLog over every insert";
  } else if (n > 0) {
    double f1 = 0, rest = 0;
    for (const auto& [h, k] : counts) (k == 1 ? f1 : rest) += 1;
    double N_total = static_cast<double>(std::max<uint64_t>(st.reservoir_seen, valid.size()));
    c.cardinality = std::round(std::sqrt(N_total / n) * f1 + rest);  // GEE (Charikar et al.)
    // Every sampled key distinct: nothing says the unsampled ones repeat (GEE would report
    // sqrt(N/n)·n, far below one value per document).
    if (f1 >= 0.99 * n) c.cardinality = std::max(c.cardinality, std::round(N_total * f1 / n));
    c.cardinality = std::max(c.cardinality, c.prefix_cardinality);
    c.cardinality_method = "GEE estimate from " + std::to_string(valid.size()) + " sampled inserts";
    if (!lf) {  // the prefix from the same sample
      double g1 = 0, grest = 0;
      for (const auto& [h, k] : lead_counts) (k == 1 ? g1 : grest) += 1;
      c.prefix_cardinality = std::round(std::sqrt(N_total / n) * g1 + grest);
    }
  }

  // ---- frequency ----
  auto labelFor = [&](const SpaceSaving::Entry& e) { return opt.allow_values && !e.label.empty() ? e.label : hashLabel(e.hash); };
  uint64_t top_lead_hash = 0;
  if (lf && lf->freq.total() > 0) {
    auto top = lf->freq.top(5);
    double total = static_cast<double>(lf->freq.total());
    if (!top.empty()) {
      c.prefix_top_share = (top[0].count - top[0].error) / total;
      c.prefix_top_label = labelFor(top[0]);
      top_lead_hash = top[0].hash;
    }
    if (c.pattern.size() == 1) {
      double sum = 0;
      for (const auto& e : top) {
        sum += (e.count - e.error) / total;
        c.top_values.push_back({labelFor(e), (e.count - e.error) / total});
      }
      c.top_share = c.prefix_top_share;
      c.top5_share = sum;
    }
  } else if (n > 0) {  // the prefix from the sample
    uint64_t best = 0;
    for (const auto& [h, k] : lead_counts)
      if (k > best || (k == best && h < top_lead_hash)) best = k, top_lead_hash = h;
    c.prefix_top_share = best / n;
    c.prefix_top_label = hashLabel(top_lead_hash);
  }
  if ((c.pattern.size() > 1 || !lf) && n > 0) {
    std::vector<std::pair<uint64_t, uint64_t>> byCount(counts.begin(), counts.end());
    std::sort(byCount.begin(), byCount.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    double sum = 0;
    for (size_t i = 0; i < byCount.size() && i < 5; ++i) {
      sum += byCount[i].second / n;
      c.top_values.push_back({hashLabel(byCount[i].first), byCount[i].second / n});
    }
    c.top_share = byCount.empty() ? 0 : byCount[0].second / n;
    c.top5_share = sum;
  }

  // ---- monotonicity ----
  if (lf) c.leading_type = typeName(*lf);
  std::vector<size_t> order = valid;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return samples[a].time != samples[b].time ? samples[a].time < samples[b].time : samples[a].seq < samples[b].seq;
  });
  keyTrend(samples, order, 0, c.new_extreme_share, c.rank_correlation);
  if (c.pattern.size() == 1 && lf && lf->compared > 0)
    c.new_extreme_share = static_cast<double>(lf->new_max + lf->new_min) / lf->compared;
  c.monotonic = !lead.hashed && (std::fabs(c.rank_correlation) >= opt.monotonic_correlation || c.new_extreme_share >= 0.5);

  // ---- the largest prefix value's suffix: can its documents be split, and spread? ----
  if (c.pattern.size() > 1 && n > 0) {
    // The largest prefix value as the sample holds it (hashed: its hash).
    uint64_t top_sampled = 0, best = 0;
    for (const auto& [h, k] : lead_counts)
      if (k > best || (k == best && h < top_sampled)) best = k, top_sampled = h;
    std::vector<size_t> within;
    for (size_t i : order)
      if (samples[i].lead_hash == top_sampled) within.push_back(i);
    std::unordered_map<uint64_t, uint64_t> distinct;
    for (size_t i : within) ++distinct[samples[i].hash];
    c.suffix_distinct = static_cast<double>(distinct.size());
    c.suffix_samples = within.size();
    double extremes = 0, corr = 0;
    keyTrend(samples, within, 1, extremes, corr);
    c.suffix_monotonic = within.size() >= 8 && (std::fabs(corr) >= opt.monotonic_correlation || extremes >= 0.5);
  }

  // ---- simulated cluster: inserts per shard ----
  std::vector<double> per(N, 0);
  std::vector<std::vector<bson_value_t>> cluster_splits;
  std::vector<std::string> lead_splits;  // encoded, behind cluster_splits' views
  // Without sampled documents (a fleet merge of hash-only exports) a compound key falls back to its
  // leading field's counts over every insert.
  if (c.pattern.size() > 1 && valid.size() >= 4ull * N) {
    per = simulateFullKey(samples, order, N, cluster_splits);
    c.split_on = lead.hashed ? "full key (hashed " + lead.path + " first)" : "full key";
  } else if (lf) {
    const auto& src = lead.hashed ? lf->hashed_shard_inserts : lf->ranged_shard_inserts;
    for (size_t i = 0; i < src.size() && i < N; ++i) per[i] = src[i];
    if (!lead.hashed) {
      lead_splits = NamespaceState::computeSplits(lf->distinct, N);
      for (const auto& s : lead_splits) {
        bson_value_t v;
        if (decodeValue(s, v)) cluster_splits.push_back({v});
      }
    }
    c.split_on = lead.hashed ? "hashed " + lead.path : lead.path;
  } else {
    for (size_t i : valid) {
      const auto& b = samples[i].key.fields[0];
      if (lead.hashed)
        ++per[NamespaceState::hashedShard(static_cast<uint64_t>(b.value.value.v_int64), N)];
      else
        ++per[0];
    }
  }
  double sim_total = 0;
  for (double v : per) sim_total += v;
  c.simulated_inserts = static_cast<uint64_t>(std::llround(sim_total));
  if (sim_total > 0) {
    double mx = *std::max_element(per.begin(), per.end()), mn = *std::min_element(per.begin(), per.end());
    for (double v : per) c.shard_insert_share.push_back(v / sim_total);
    // A shard with under 0.1% of the inserts counts as none (max/min infinite).
    c.max_min_ratio = mn < 0.001 * sim_total ? 0 : mx / mn;
  }

  // ---- reads and writes, per shape, on the simulated cluster (and after the lookup rewrite) ----
  routing::CollectionRouting coll;
  bool cluster = buildCluster(c.pattern, cluster_splits, N, coll);
  c.range_reads.assign(N, 0);
  c.range_writes.assign(N, 0);
  double reads = 0, writes = 0, rs = 0, rm = 0, rsc = 0, ws = 0, wm = 0, wsc = 0, rshards = 0, tshards = 0, tcount = 0;
  double single_wo = 0, multi_wo = 0, key_upd = 0, upserts_wo = 0, refused71 = 0, upserts = 0, scatter_after = 0;
  for (const auto& [h, s] : st.shapes) {
    ShapeOutcome o;
    o.id = h;  // the shape id /stats and /metrics show (common::shapeId)
    o.shape = s.shape;
    o.kind = s.kind;
    o.count = s.count;
    Classified sent, after;
    std::vector<double> ranges(N, 0);
    size_t with_id = 0, rewritten = 0;
    for (const auto& fbytes : s.samples) {
      bson_t f;
      if (!cluster || !staticDoc(fbytes, f)) continue;
      classify(coll, f, sent, &ranges);
      if (pinsId(f)) ++with_id;
      bson_t rw;
      if (!opt.lookup_rule) continue;  // `after` is `sent` (below)
      if (rewrittenFilter(f, *opt.lookup_rule, &rw)) {
        classify(coll, rw, after, nullptr);
        bson_destroy(&rw);
        ++rewritten;
      } else {
        classify(coll, f, after, nullptr);
      }
    }
    if (!opt.lookup_rule) after = sent;
    if (sent.tn) o.targeted_shards = sent.tsum / sent.tn;
    if (sent.used == 0) {  // no sample: an unfiltered or unsampled op counts as scatter-gather
      o.scatter = 1;
      o.shards = N;
      after.scatter = 1, after.used = 1;
    } else {
      o.sampled = true;
      o.single = sent.single / sent.used, o.multi = sent.multi / sent.used, o.scatter = sent.scatter / sent.used;
      o.shards = sent.shards / sent.used;
    }
    o.scatter_after_rewrite = after.used ? after.scatter / after.used : o.scatter;
    o.rescued = rewritten > 0 && o.scatter_after_rewrite + 0.25 < o.scatter;
    o.upsert = s.upsert;
    o.without_key = !isRead(s.kind) && o.single < 0.5;
    // Refused before 7.1 (two-phase after): a single-document write that pins neither the full
    // key nor an exact _id; an upsert needs the full key whatever its _id.
    const bool single_doc = !isRead(s.kind) && !s.multi;
    o.refused_before_71 = single_doc && o.without_key && (s.upsert || with_id * 2 < std::max<size_t>(1, sent.used));
    for (const auto& m : s.modified) {
      for (const auto& kf : c.pattern.fields()) {
        // A replacement or pipeline ("") may set any field; one that pins the full key is taken to
        // keep its value (the replacement carries the key it was found by).
        if (m.empty() ? o.single < 0.5 : m == kf.path || kf.path.rfind(m + ".", 0) == 0 || m.rfind(kf.path + ".", 0) == 0)
          o.key_update = true;
      }
    }
    double w = static_cast<double>(s.count);
    for (size_t i = 0; i < N; ++i) {
      double share = sent.used ? ranges[i] / sent.used : 1.0;
      (isRead(s.kind) ? c.range_reads : c.range_writes)[i] += w * share;
    }
    scatter_after += w * o.scatter_after_rewrite;
    if (o.rescued) c.rescued_shapes.push_back(s.shape);
    if (isRead(s.kind)) {
      reads += w;
      rs += w * o.single, rm += w * o.multi, rsc += w * o.scatter, rshards += w * o.shards;
      if (o.scatter < 1) {
        tshards += w * (1 - o.scatter) * o.targeted_shards;
        tcount += w * (1 - o.scatter);
      }
    } else {
      writes += w;
      ws += w * o.single, wm += w * o.multi, wsc += w * o.scatter;
      if (o.without_key) (s.multi ? multi_wo : single_wo) += w;
      if (o.key_update) key_upd += w;
      if (s.upsert) upserts += w;
      if (s.upsert && o.without_key) upserts_wo += w;
      if (o.refused_before_71) refused71 += w;
    }
    c.shapes.push_back(std::move(o));
  }
  std::sort(c.shapes.begin(), c.shapes.end(), [](const ShapeOutcome& a, const ShapeOutcome& b) {
    return a.count != b.count ? a.count > b.count : a.shape < b.shape;
  });
  std::sort(c.rescued_shapes.begin(), c.rescued_shapes.end());
  if (reads > 0) {
    c.read_single = rs / reads, c.read_multi = rm / reads, c.read_scatter = rsc / reads;
    c.read_shards = rshards / reads;
  }
  if (tcount > 0) c.targeted_read_shards = tshards / tcount;
  c.reads_sampled = static_cast<uint64_t>(reads);
  c.writes_sampled = static_cast<uint64_t>(writes);
  if (writes > 0) {
    c.write_single = ws / writes, c.write_multi = wm / writes, c.write_scatter = wsc / writes;
    c.single_writes_without_key = single_wo / writes;
    c.multi_writes_without_key = multi_wo / writes;
    c.shard_key_updates = key_upd / writes;
    c.upserts_without_key = upserts_wo / writes;
    c.refused_before_71 = refused71 / writes;
  }
  if (upserts > 0) c.upserts_without_key_of_upserts = upserts_wo / upserts;
  double all = reads + writes + static_cast<double>(st.other_shape_ops);
  if (all > 0) {
    c.targeted = (reads + writes - rsc - wsc) / all;
    c.targeted_after_rewrite = (reads + writes - scatter_after) / all;
    c.single_overall = (rs + ws) / all;
    c.refused_share_of_all = refused71 / all;
  }
  c.rewrite_in_force = opt.lookup_rule != nullptr;

  // ---- the properties ----
  double min_card = static_cast<double>(opt.min_distinct_per_shard) * N;
  if (c.cardinality < min_card) {
    c.pass_cardinality = false;
    c.failures.push_back("cardinality");
  }
  // Frequency fails on what the cluster would do: a value holding a shard's fair share (its chunk
  // cannot be split), a large prefix value whose suffix cannot spread it (monotonic or too few
  // values), or a hot shard on the simulated cluster split on the full key.
  const bool enough = c.simulated_inserts >= 20ull * N;
  const bool full_key_cluster = c.split_on.rfind("full key", 0) == 0;
  const bool hot = full_key_cluster && !c.monotonic && enough &&
                   (c.max_min_ratio == 0 || c.max_min_ratio >= opt.hot_shard_ratio);
  if (c.top_share >= fair) {
    c.frequency_reason = "one key value holds " + percentText(c.top_share) +
                         " of inserts, at least a shard's fair share (" + percentText(fair) + "), in a chunk that cannot be split";
  } else if (c.pattern.size() > 1 && c.prefix_top_share >= fair && c.suffix_samples >= 8 &&
             (c.suffix_monotonic || c.suffix_distinct < 2.0 * N)) {
    c.frequency_reason = std::string("the largest ") + lead.path + " value holds " + percentText(c.prefix_top_share) +
                         " of inserts and its " +
                         c.pattern.field(1).path + " suffix " +
                         (c.suffix_monotonic ? "is monotonic, so its new documents keep landing in one chunk"
                                             : "has too few values to split it across shards");
  } else if (hot) {
    c.frequency_reason = "the simulated cluster split on the full key has a hot shard (" +
                         (c.max_min_ratio == 0 ? std::string("a shard gets no inserts") : "max/min " + fixedText(c.max_min_ratio) + "x") +
                         ", over seed 002's " + fixedText(opt.hot_shard_ratio) + "x)";
  }
  if (!c.frequency_reason.empty()) {
    c.pass_frequency = false;
    c.failures.push_back("frequency");
  }
  if (c.monotonic) {
    c.pass_monotonicity = false;
    c.failures.push_back("monotonicity");
  }
  if (c.shard_key_updates >= opt.max_key_update_share) {
    c.pass_mutability = false;
    c.failures.push_back("mutability");
  }
  if (c.upserts_without_key >= opt.max_key_update_share) {
    c.pass_upserts = false;
    c.failures.push_back("upsert targeting");
  }
  if (c.array_share > 0) {
    c.pass_arrays = false;
    c.failures.push_back("arrays");
  }
  if (c.top_share >= opt.jumbo_warn_share) {
    c.jumbo_risk = true;
    c.jumbo_at_bytes = opt.chunk_size_bytes / c.top_share;
    c.warnings.push_back("jumbo");
  }
  if (!c.monotonic && c.simulated_inserts > 0 && (c.max_min_ratio == 0 || c.max_min_ratio >= opt.imbalance_warn_ratio))
    c.warnings.push_back("imbalance");
}

}  // namespace

std::string keyLabel(const routing::ShardKeyPattern& p) {
  std::string s = "{";
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ", ";
    s += p.field(i).path + ": " + (p.field(i).hashed ? "\"hashed\"" : "1");
  }
  return s + "}";
}

// The key at which a filter's equality prefix starts (the rest at MinKey): where a targeted
// prefix query begins reading. False when the filter does not pin the leading field.
bool prefixProbe(const bson_t& filter, const routing::ShardKeyPattern& key, routing::KeyPoint& out) {
  out.size = key.size();
  size_t pinned = 0;
  for (size_t i = 0; i < key.size(); ++i) out.fields[i] = routing::Bound::minKey();
  for (size_t i = 0; i < key.size() && pinned == i; ++i) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, &filter, key.field(i).path.c_str())) break;
    if (isOperatorDoc(it)) {
      bson_iter_t ops;
      bson_iter_recurse(&it, &ops);
      if (!bson_iter_next(&ops) || std::strcmp(bson_iter_key(&ops), "$eq") != 0) break;
      it = ops;
    }
    if (BSON_ITER_HOLDS_ARRAY(&it) || BSON_ITER_HOLDS_REGEX(&it)) break;
    out.fields[i] = routing::Bound::of(*bson_iter_value(&it));
    ++pinned;
  }
  return pinned > 0;
}

// Reads, writes (sampled filters that pin the full key or its leading fields, weighted by their
// shape's count) and
// inserts (the sampled documents, scaled to every insert) per chunk of the current key.
void hotRanges(const NamespaceState& st, const routing::CollectionRouting& coll, NamespaceReport& r) {
  const size_t chunks = coll.chunks.chunkCount();
  r.current_chunks = chunks;
  if (chunks == 0) return;
  std::vector<NamespaceReport::HotRange> per(chunks);
  for (size_t i = 0; i < chunks; ++i) per[i].chunk = i, per[i].shard = coll.chunks.chunkShard(i);
  for (const auto& [h, s] : st.shapes) {
    if (s.samples.empty()) continue;
    const double w = static_cast<double>(s.count) / static_cast<double>(s.samples.size());
    for (const auto& fbytes : s.samples) {
      bson_t f;
      if (!staticDoc(fbytes, f)) continue;
      routing::FilterTarget ft;
      routing::targetFilter(coll, f, true, routing::TargetOptions{}, ft, nullptr);
      routing::KeyPoint probe;
      if (ft.key_pinned) {
        probe = ft.key;
      } else if (ft.targeting == routing::Targeting::Broadcast || coll.key.field(0).hashed ||
                 !prefixProbe(f, coll.key, probe)) {
        continue;  // scatter-gather: no one range
      }
      auto& range = per[coll.chunks.chunkForKey(probe.span())];
      (isRead(s.kind) ? range.reads : range.writes) += w;
    }
  }
  const double scale = st.reservoir.empty() ? 0 : static_cast<double>(st.inserts) / static_cast<double>(st.reservoir.size());
  for (const auto& sample : st.reservoir) {
    bson_t d;
    routing::KeyPoint key;
    if (!staticDoc(sample.doc, d) || coll.key.extractFromDocument(d, key) != routing::KeyExtractStatus::Ok) continue;
    per[coll.chunks.chunkForKey(key.span())].inserts += scale;
  }
  std::stable_sort(per.begin(), per.end(), [](const auto& a, const auto& b) {
    return a.reads + a.writes + a.inserts > b.reads + b.writes + b.inserts;
  });
  for (size_t i = 0; i < per.size() && i < 10 && per[i].reads + per[i].writes + per[i].inserts > 0; ++i)
    r.hot_ranges.push_back(per[i]);
}

NamespaceReport analyzeNamespace(const NamespaceState& st, const AnalysisOptions& opt,
                                 const routing::ShardKeyPattern* current_key,
                                 const std::vector<std::string>& configured_keys,
                                 const routing::CollectionRouting* current_routing) {
  NamespaceReport r;
  r.ns = st.ns();
  r.shards = opt.simulated_shards;
  r.reads = st.reads;
  r.writes = st.writes;
  r.inserts = st.inserts;
  r.other_shape_ops = st.other_shape_ops;
  r.upserted = st.upserted;
  r.upserts_matched = st.upserts_matched;
  r.replacements = st.replacements;
  r.avg_doc_bytes = st.inserts ? static_cast<double>(st.insert_bytes) / st.inserts : 0;
  r.memory_bytes = st.memoryBytes();
  if (current_routing) hotRanges(st, *current_routing, r);

  // ---- candidates ----
  std::vector<std::pair<std::string, std::string>> wanted;  // json, source
  if (current_key) wanted.push_back({current_key->toJson(), "current"});
  for (const auto& k : configured_keys) wanted.push_back({k, "configured"});
  wanted.push_back({"{\"_id\": 1}", "baseline"});
  wanted.push_back({"{\"_id\": \"hashed\"}", "baseline"});
  std::vector<const ShapeState*> byCount;
  for (const auto& [h, s] : st.shapes) byCount.push_back(&s);
  std::sort(byCount.begin(), byCount.end(), [](const ShapeState* a, const ShapeState* b) {
    return a->count != b->count ? a->count > b->count : a->shape < b->shape;
  });
  std::vector<std::pair<std::string, std::string>> singles, hashes, compounds, hcompounds, ranges;
  for (size_t i = 0; i < byCount.size() && i < 12; ++i) {
    const ShapeState& s = *byCount[i];
    FieldRoles roles;
    for (const auto& f : s.samples) {
      bson_t d;
      if (staticDoc(f, d)) collectRoles(d, roles);
    }
    std::vector<std::string> rangeish = roles.range;
    for (const auto& sf : s.sort) addUnique(rangeish, sf);
    // Equality pairs in filter order: an upsert (seed 000's bucket) or a point lookup pinning an
    // entity and a second field names its own compound key.
    for (size_t a = 0; a + 1 < roles.eq.size() && a < 3; ++a) {
      compounds.push_back({patternJson({{roles.eq[a], false}, {roles.eq[a + 1], false}}), "traffic"});
      hcompounds.push_back({patternJson({{roles.eq[a], true}, {roles.eq[a + 1], false}}), "traffic"});
    }
    for (const auto& e : roles.eq) {
      singles.push_back({patternJson({{e, false}}), "traffic"});
      hashes.push_back({patternJson({{e, true}}), "traffic"});
      for (const auto& rf : rangeish) {
        if (rf == e) continue;
        compounds.push_back({patternJson({{e, false}, {rf, false}}), "traffic"});
        hcompounds.push_back({patternJson({{e, true}, {rf, false}}), "traffic"});
      }
    }
    for (const auto& rf : roles.range) ranges.push_back({patternJson({{rf, false}}), "traffic"});
  }
  // Interleave so the cap keeps the dominant shapes' variants first.
  for (auto* group : {&singles, &compounds, &hashes, &hcompounds, &ranges})
    for (auto& w : *group) wanted.push_back(w);

  std::map<std::string, size_t> seen;
  for (const auto& [json, source] : wanted) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(json, error);
    if (!p) continue;
    std::string canon = p->toJson();
    auto it = seen.find(canon);
    if (it != seen.end()) {
      auto& srcs = r.candidates[it->second].sources;
      if (std::find(srcs.begin(), srcs.end(), source) == srcs.end()) srcs.push_back(source);
      continue;
    }
    if (r.candidates.size() >= opt.max_candidates) continue;
    CandidateResult c;
    c.pattern = *p;
    c.key_json = canon;
    c.label = keyLabel(*p);
    c.sources.push_back(source);
    seen.emplace(canon, r.candidates.size());
    r.candidates.push_back(std::move(c));
  }
  AnalysisOptions nsopt = opt;
  nsopt.lookup_rule = nullptr;
  for (const auto& rule : opt.lookup_rules)
    if (rule.ns == st.ns()) nsopt.lookup_rule = &rule;
  r.rewrite_in_force = nsopt.lookup_rule != nullptr;
  if (nsopt.lookup_rule) r.lookup_rule = *nsopt.lookup_rule;
  for (auto& c : r.candidates) evaluateCandidate(st, nsopt, c);

  // Shapes, without targeting (from the first candidate's outcome list, which has all shapes).
  if (!r.candidates.empty()) r.shapes = r.candidates.front().shapes;

  // ---- ranking: pass every property (the three, mutability, upsert targeting, arrays), then the
  // share of traffic targeted (after the lookup rewrite, when one is in force), less the writes
  // MongoDB refuses before 7.1 and runs as two-phase broadcasts after ----
  auto card = [](const CandidateResult& c) { return c.cardinality; };
  auto score = [](const CandidateResult& c) { return c.targeted_after_rewrite - c.refused_share_of_all; };
  std::stable_sort(r.candidates.begin(), r.candidates.end(), [&](const CandidateResult& a, const CandidateResult& b) {
    if (a.passes() != b.passes()) return a.passes();
    if (!a.passes() && a.failures.size() != b.failures.size()) return a.failures.size() < b.failures.size();
    if (std::fabs(score(a) - score(b)) > 0.005) return score(a) > score(b);
    if (a.warnings.size() != b.warnings.size()) return a.warnings.size() < b.warnings.size();
    if (a.hashed_prefix != b.hashed_prefix) return !a.hashed_prefix;  // keep locality unless hashing buys something
    if (std::fabs(card(a) - card(b)) > 0.1 * std::max(card(a), card(b))) return card(a) > card(b);
    if (std::fabs(a.single_overall - b.single_overall) > 0.005) return a.single_overall > b.single_overall;
    return a.pattern.size() < b.pattern.size();
  });
  if (!r.candidates.empty() && (st.reads + st.writes + st.inserts) > 0) {
    r.recommended = 0;
    r.recommended_passes = r.candidates[0].passes();
  }
  return r;
}

// Shared with render.cpp, so a reason quotes the number the text shows.
std::string percentText(double x) {
  char b[32];
  std::snprintf(b, sizeof b, x > 0 && x < 0.001 ? "%.2f%%" : "%.1f%%", 100.0 * x);
  return b;
}

}  // namespace shardscope::evaluation
