#include "evaluation/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "evaluation/key_facts_from_samples.h"
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

void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
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

// Documents holding an array at the field, of the documents holding the field at all: an array is
// counted in `missing` and `arrays` but not in `count`, which also holds absent ones (as null).
double arrayShare(const FieldState& f) {
  const double absent = static_cast<double>(f.missing) - static_cast<double>(f.arrays);
  const double holding = static_cast<double>(f.count) - absent + static_cast<double>(f.arrays);
  return holding > 0 && f.arrays > 0 ? static_cast<double>(f.arrays) / holding : 0;
}

std::string typeName(const FieldState& f) {
  uint64_t n = f.count ? f.count : 1;
  if (f.type_oid * 10 >= n * 9) return "ObjectId";
  if (f.type_date * 10 >= n * 9) return "date";
  if (f.type_number * 10 >= n * 9) return "number";
  if (f.type_string * 10 >= n * 9) return "string";
  return "mixed";
}

// A candidate's figures from its facts (key_facts.h) and the namespace's per-field sketches: the
// same code whether the facts were computed here or merged from sidecars' exports.
void evaluateCandidate(const NamespaceState& st, const AnalysisOptions& opt, CandidateResult& c, const KeyFacts& k) {
  const uint32_t N = opt.simulated_shards;
  const auto& lead = c.pattern.field(0);
  c.hashed_prefix = lead.hashed;
  const FieldState* lf = st.field(lead.path);
  const double fair = 1.0 / N;
  const double n = static_cast<double>(k.valid);

  // ---- arrays on a key path: MongoDB refuses such documents under this key ----
  {
    bool tracked = false;
    for (const auto& kf : c.pattern.fields()) {
      for (size_t dot = 0;; ++dot) {  // the path and each of its prefixes
        dot = kf.path.find('.', dot);
        const FieldState* f = st.field(dot == std::string::npos ? std::string_view(kf.path) : std::string_view(kf.path).substr(0, dot));
        if (f && f->count + f->arrays > 0) {
          tracked = true;
          c.array_share = std::max(c.array_share, arrayShare(*f));
        }
        if (dot == std::string::npos) break;
      }
    }
    if (!tracked && k.sampled > 0) c.array_share = static_cast<double>(k.refused) / static_cast<double>(k.sampled);
  }

  // ---- cardinality ----
  if (lf) c.prefix_cardinality = std::round(lf->hll.estimate());
  if (c.pattern.size() == 1 && lf) {
    c.cardinality = c.prefix_cardinality;
    c.cardinality_method = "HyperLogLog over every insert";
  } else if (n > 0) {
    c.cardinality = std::max(std::round(k.estimate), c.prefix_cardinality);
    c.cardinality_method = "GEE estimate from " + std::to_string(k.valid) + " sampled inserts";
    if (!lf) c.prefix_cardinality = std::round(k.lead_estimate);  // the prefix from the same sample
  }

  // ---- frequency ----
  auto labelFor = [&](const SpaceSaving::Entry& e) { return opt.allow_values && !e.label.empty() ? e.label : hashLabel(e.hash); };
  if (lf && lf->freq.total() > 0) {
    auto top = lf->freq.top(5);
    double total = static_cast<double>(lf->freq.total());
    if (!top.empty()) {
      c.prefix_top_share = (top[0].count - top[0].error) / total;
      c.prefix_top_label = labelFor(top[0]);
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
  } else if (n > 0 && !k.top_leads.empty()) {  // the prefix from the sample
    c.prefix_top_share = k.top_leads.front().second / n;
    c.prefix_top_label = hashLabel(k.top_leads.front().first);
  }
  if ((c.pattern.size() > 1 || !lf) && n > 0) {
    double sum = 0;
    for (size_t i = 0; i < k.top_keys.size() && i < 5; ++i) {
      sum += k.top_keys[i].second / n;
      c.top_values.push_back({hashLabel(k.top_keys[i].first), k.top_keys[i].second / n});
    }
    c.top_share = k.top_keys.empty() ? 0 : k.top_keys[0].second / n;
    c.top5_share = sum;
  }

  // ---- monotonicity ----
  if (lf) c.leading_type = typeName(*lf);
  c.new_extreme_share = k.new_extreme_share;
  c.rank_correlation = k.rank_correlation;
  if (c.pattern.size() == 1 && lf && lf->compared > 0)
    c.new_extreme_share = static_cast<double>(lf->new_max + lf->new_min) / lf->compared;
  c.monotonic = !lead.hashed && (std::fabs(c.rank_correlation) >= opt.monotonic_correlation || c.new_extreme_share >= 0.5);
  c.suffix_distinct = k.suffix_distinct;
  c.suffix_samples = k.suffix_samples;
  c.suffix_monotonic = k.suffix_monotonic;

  // ---- simulated cluster: inserts per shard ----
  std::vector<double> per(N, 0);
  for (size_t i = 0; i < k.shard_inserts.size() && i < N; ++i) per[i] = k.shard_inserts[i];
  c.split_on = k.split_on;
  double sim_total = 0;
  for (double v : per) sim_total += v;
  c.simulated_inserts = static_cast<uint64_t>(std::llround(sim_total));
  if (sim_total > 0) {
    double mx = *std::max_element(per.begin(), per.end()), mn = *std::min_element(per.begin(), per.end());
    for (double v : per) c.shard_insert_share.push_back(v / sim_total);
    // A shard with under 0.1% of the inserts counts as none (max/min infinite).
    c.max_min_ratio = mn < 0.001 * sim_total ? 0 : mx / mn;
  }

  // ---- reads and writes, per shape, from its sampled statements' routing ----
  c.range_reads.assign(N, 0);
  c.range_writes.assign(N, 0);
  double reads = 0, writes = 0, rs = 0, rm = 0, rsc = 0, ws = 0, wm = 0, wsc = 0, rshards = 0, tshards = 0, tcount = 0;
  double single_wo = 0, multi_wo = 0, key_upd = 0, upserts_wo = 0, refused71 = 0, upserts = 0, scatter_after = 0;
  static const ShapeRouting kNone;
  for (const auto& [h, s] : st.shapes) {
    ShapeOutcome o;
    o.id = h;  // the shape id /stats and /metrics show (common::shapeId)
    o.shape = s.shape;
    o.kind = s.kind;
    o.count = s.count;
    auto found = k.shapes.find(h);
    const ShapeRouting& r = found == k.shapes.end() ? kNone : found->second;
    const double used = static_cast<double>(r.used);
    if (r.targeted) o.targeted_shards = static_cast<double>(r.targeted_shards) / static_cast<double>(r.targeted);
    if (r.used == 0) {  // no sample: an unfiltered or unsampled op counts as scatter-gather
      o.scatter = 1;
      o.shards = N;
    } else {
      o.sampled = true;
      o.single = r.single / used, o.multi = r.multi / used, o.scatter = r.scatter / used;
      o.shards = r.shards / used;
    }
    o.scatter_after_rewrite = opt.lookup_rule && r.after_used ? static_cast<double>(r.after_scatter) / r.after_used : o.scatter;
    o.rescued = r.rewritten > 0 && o.scatter_after_rewrite + 0.25 < o.scatter;
    o.upsert = s.upsert;
    o.without_key = !isRead(s.kind) && o.single < 0.5;
    // Refused before 7.1 (two-phase after): a single-document write that pins neither the full
    // key nor an exact _id; an upsert needs the full key whatever its _id.
    const bool single_doc = !isRead(s.kind) && !s.multi;
    // With the lookup rewrite in force these are judged as the rewrite sends them (as explain does).
    const double single_sent = o.single;
    const double single_as_run = opt.lookup_rule && r.after_used ? static_cast<double>(r.after_single) / r.after_used : single_sent;
    const bool without_key_as_run = !isRead(s.kind) && single_as_run < 0.5;
    // An upsert needs the full key; another single-document write one shard or an exact _id.
    const uint64_t no_target = opt.lookup_rule && r.after_used ? r.after_no_target : r.no_target;
    o.refused_before_71 = single_doc && (s.upsert ? without_key_as_run : r.used == 0 || no_target * 2 > r.used);
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
      double share = r.used ? (i < r.ranges.size() ? static_cast<double>(r.ranges[i]) : 0.0) / used : 1.0;
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
      if (s.upsert && without_key_as_run) upserts_wo += w;
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
    if (common::isOperatorDocument(it)) {
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

std::vector<std::pair<std::string, std::vector<std::string>>> candidateKeys(const NamespaceState& st,
                                                                           const routing::ShardKeyPattern* current_key,
                                                                           const std::vector<std::string>& configured_keys,
                                                                           size_t max_shapes, size_t max_candidates) {
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
  for (size_t i = 0; i < byCount.size() && i < max_shapes; ++i) {
    const ShapeState& s = *byCount[i];
    FieldRoles roles = shapeRoles(s);
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

  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::map<std::string, size_t> seen;
  for (const auto& [json, source] : wanted) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(json, error);
    if (!p) continue;
    std::string canon = p->toJson();
    auto it = seen.find(canon);
    if (it != seen.end()) {
      auto& srcs = out[it->second].second;
      if (std::find(srcs.begin(), srcs.end(), source) == srcs.end()) srcs.push_back(source);
      continue;
    }
    if (out.size() >= max_candidates) continue;
    seen.emplace(canon, out.size());
    out.push_back({canon, {source}});
  }
  return out;
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
  for (auto& [canon, sources] : candidateKeys(st, current_key, configured_keys, kRankedShapes, opt.max_candidates)) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(canon, error);
    if (!p) continue;
    CandidateResult c;
    c.pattern = *p;
    c.key_json = canon;
    c.label = keyLabel(*p);
    c.sources = std::move(sources);
    r.candidates.push_back(std::move(c));
  }
  AnalysisOptions nsopt = opt;
  nsopt.lookup_rule = nullptr;
  for (const auto& rule : opt.lookup_rules)
    if (rule.ns == st.ns()) nsopt.lookup_rule = &rule;
  r.rewrite_in_force = nsopt.lookup_rule != nullptr;
  if (nsopt.lookup_rule) r.lookup_rule = *nsopt.lookup_rule;
  r.facts_from_exports = st.fact_exports;
  // Which fields the observed filters name, and how (the defence says why a key targets nothing).
  std::vector<std::pair<FieldRoles, double>> roles_by_shape;
  const double all_ops = static_cast<double>(st.reads + st.writes + st.other_shape_ops);
  for (const auto& [h, s] : st.shapes) roles_by_shape.push_back({shapeRoles(s), all_ops > 0 ? s.count / all_ops : 0});
  for (auto& c : r.candidates) {
    const std::string& lead = c.pattern.field(0).path;
    for (const auto& [roles, share] : roles_by_shape) {
      if (std::find(roles.eq.begin(), roles.eq.end(), lead) != roles.eq.end())
        c.lead_eq_share += share;
      else if (std::find(roles.range.begin(), roles.range.end(), lead) != roles.range.end())
        c.lead_range_share += share;
    }
  }
  for (auto& c : r.candidates) {
    if (st.fact_exports == 0) {  // this process' own samples
      evaluateCandidate(st, nsopt, c, factsFromSamples(st, c.pattern, nsopt.lookup_rule, nsopt.simulated_shards,
                                                       nsopt.monotonic_correlation));
      continue;
    }
    const KeyFacts* k = st.importedFacts(c.key_json);
    if (k && k->exports == st.fact_exports) {
      evaluateCandidate(st, nsopt, c, *k);
      continue;
    }
    // Evidence missing: nothing is guessed, and the ranking puts it after every evaluable key.
    c.evaluable = false;
    c.not_evaluable = "its routing and sampled-document facts came from " + std::to_string(k ? k->exports : 0) + " of the " +
                      std::to_string(st.fact_exports) +
                      " exports merged (a sidecar evaluated other candidates, or runs a version that exports no facts)";
  }

  // Shapes, without targeting, by count.
  for (const auto& [h, s] : st.shapes) {
    ShapeOutcome o;
    o.shape = s.shape;
    o.kind = s.kind;
    o.count = s.count;
    r.shapes.push_back(std::move(o));
  }
  std::sort(r.shapes.begin(), r.shapes.end(), [](const ShapeOutcome& a, const ShapeOutcome& b) {
    return a.count != b.count ? a.count > b.count : a.shape < b.shape;
  });

  // ---- ranking: pass every property (the three, mutability, upsert targeting, arrays), then the
  // share of traffic targeted (after the lookup rewrite, when one is in force), less the writes
  // MongoDB refuses before 7.1 and runs as two-phase broadcasts after ----
  auto card = [](const CandidateResult& c) { return c.cardinality; };
  auto score = [](const CandidateResult& c) { return c.targeted_after_rewrite - c.refused_share_of_all; };
  std::stable_sort(r.candidates.begin(), r.candidates.end(), [&](const CandidateResult& a, const CandidateResult& b) {
    if (a.evaluable != b.evaluable) return a.evaluable;
    if (!a.evaluable) return false;
    if (a.passes() != b.passes()) return a.passes();
    if (!a.passes() && a.failures.size() != b.failures.size()) return a.failures.size() < b.failures.size();
    if (std::fabs(score(a) - score(b)) > 0.005) return score(a) > score(b);
    if (a.warnings.size() != b.warnings.size()) return a.warnings.size() < b.warnings.size();
    if (a.hashed_prefix != b.hashed_prefix) return !a.hashed_prefix;  // keep locality unless hashing buys something
    if (std::fabs(card(a) - card(b)) > 0.1 * std::max(card(a), card(b))) return card(a) > card(b);
    if (std::fabs(a.single_overall - b.single_overall) > 0.005) return a.single_overall > b.single_overall;
    return a.pattern.size() < b.pattern.size();
  });
  if (!r.candidates.empty() && !r.candidates[0].evaluable && (st.reads + st.writes + st.inserts) > 0) {
    r.no_recommendation = "no candidate key can be evaluated from the exports merged: " + r.candidates[0].not_evaluable;
  } else if (!r.candidates.empty() && (st.reads + st.writes + st.inserts) > 0) {
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
