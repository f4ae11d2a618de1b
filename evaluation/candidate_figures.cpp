#include "evaluation/candidate_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "evaluation/value_codec.h"

namespace shardscope::evaluation {

namespace {

std::string fixedText(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
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

// Arrays on a key path: MongoDB refuses such documents under this key. Judged from the field
// sketches of the path and each of its prefixes, else from the sampled documents refused.
void measureArrays(const NamespaceState& st, const KeyFacts& k, CandidateResult& c) {
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

// Cardinality: a single-field key's HyperLogLog over every insert, else the sample's estimate.
void measureCardinality(const FieldState* lf, const KeyFacts& k, CandidateResult& c) {
  const double n = static_cast<double>(k.valid);
  if (lf) c.prefix_cardinality = std::round(lf->hll.estimate());
  if (c.pattern.size() == 1 && lf) {
    c.cardinality = c.prefix_cardinality;
    c.cardinality_method = "HyperLogLog over every insert";
  } else if (n > 0) {
    c.cardinality = std::max(std::round(k.estimate), c.prefix_cardinality);
    c.cardinality_method = "GEE estimate from " + std::to_string(k.valid) + " sampled inserts";
    if (!lf) c.prefix_cardinality = std::round(k.lead_estimate);  // the prefix from the same sample
  }
}

// The most frequent of d values holds at least 1/d of the inserts, the five most frequent 5/d: a
// floor under SpaceSaving's guaranteed counts (count - error), which prove only a sliver of a value's
// share when no value stands out (400 even rooms: 0.25% each, 0.01% proven). d is taken at the
// HyperLogLog's estimate plus three standard errors (4.8%), and at most the values counted, so the
// floor stays below the truth (a unique field: one document). SpaceSaving's counts are exact below
// 64 values, so the floor only matters above them.
void floorBySpread(const FieldState& lf, CandidateResult& c) {
  const double total = static_cast<double>(lf.freq.total());
  const double distinct = std::min(total, std::ceil(lf.hll.estimate() * 1.048));
  if (distinct < 1 || total == 0) return;
  c.prefix_top_share = std::max(c.prefix_top_share, 1.0 / distinct);
  if (c.pattern.size() > 1) return;
  c.top_share = std::max(c.top_share, 1.0 / distinct);
  c.top5_share = std::max(c.top5_share, std::min(1.0, 5.0 / distinct));
}

// Frequency: the leading field's heavy hitters (labels only with allow_values), the full key's
// from the sample when the key is compound or its field is not sketched.
void measureFrequency(const AnalysisOptions& opt, const FieldState* lf, const KeyFacts& k, CandidateResult& c) {
  const double n = static_cast<double>(k.valid);
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
  if (lf) floorBySpread(*lf, c);
  if (lf && lf->missing > lf->arrays) {  // `missing` counts arrays too; `count` holds the absent as null
    const double absent = static_cast<double>(lf->missing - lf->arrays);
    c.lead_absent_share = absent / static_cast<double>(lf->count + lf->arrays);
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
}

// Monotonicity: new extremes of the leading field (every insert) or the sample's rank
// correlation with arrival order; a hashed leading field is never monotonic.
void measureMonotonicity(const AnalysisOptions& opt, const FieldState* lf, const KeyFacts& k, CandidateResult& c) {
  if (lf) c.leading_type = typeName(*lf);
  c.new_extreme_share = k.new_extreme_share;
  c.rank_correlation = k.rank_correlation;
  if (c.pattern.size() == 1 && lf && lf->compared > 0)
    c.new_extreme_share = static_cast<double>(lf->new_max + lf->new_min) / lf->compared;
  c.monotonic = !c.pattern.field(0).hashed &&
                (std::fabs(c.rank_correlation) >= opt.monotonic_correlation || c.new_extreme_share >= 0.5);
  c.suffix_distinct = k.suffix_distinct;
  c.suffix_samples = k.suffix_samples;
  c.suffix_monotonic = k.suffix_monotonic;
}

// A compound key whose largest prefix value would be a jumbo risk alone and whose suffix rises
// within that value (a time after an entity id): each prefix value's new documents land in one
// chunk, at the top of its range, on the shard where its prefix alone puts them; the suffix makes
// the value's chunk splittable, it does not spread the value's inserts. Its inserts per shard are
// then the prefix's (over every insert) and judged as the prefix's are, so a key that only adds
// splittability never ranks below its prefix on inserts. The full key's balancer view would
// instead turn on where a chunk bound happens to fall inside that value's range. Not for a prefix
// with too few values to pass cardinality alone: its few insertion points stay judged on the full
// key (a hot shard there fails frequency).
bool insertsFollowPrefix(const AnalysisOptions& opt, uint32_t N, const FieldState* lf, const CandidateResult& c) {
  return c.pattern.size() > 1 && lf && c.suffix_monotonic && c.prefix_top_share >= opt.jumbo_warn_share &&
         c.prefix_cardinality >= static_cast<double>(opt.min_distinct_per_shard) * N;
}

// The simulated cluster: inserts per shard, and the busiest over the quietest.
void simulateInserts(const AnalysisOptions& opt, uint32_t N, const FieldState* lf, const KeyFacts& k, CandidateResult& c) {
  std::vector<double> per(N, 0);
  c.split_on = k.split_on;
  c.inserts_follow_prefix = insertsFollowPrefix(opt, N, lf, c);
  if (c.inserts_follow_prefix) {
    const auto& lead = c.pattern.field(0);
    const auto& src = lead.hashed ? lf->hashed_shard_inserts : lf->ranged_shard_inserts;
    for (size_t i = 0; i < src.size() && i < N; ++i) per[i] = src[i];
    c.split_on = (lead.hashed ? "hashed " : "") + lead.path + ", as " + c.pattern.field(1).path +
                 " rises within each " + lead.path + " value: its new documents land in one chunk";
  } else {
    for (size_t i = 0; i < k.shard_inserts.size() && i < N; ++i) per[i] = k.shard_inserts[i];
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
}

// One shape's routing under the candidate, from its sampled statements (as the lookup rewrite
// sends them when one is in force, as explain does).
struct ShapeJudgement {
  ShapeOutcome o;
  bool without_key_as_run = false;  // a write that, as run, does not target one shard
};

// The share of a write shape's statements whose update may change a key field's value.
// `s.modified`: the paths its statements set, or "" for a replacement or pipeline, which may set
// any field; a replacement then lists the top-level fields it carries as "$name", and a field its
// filter pins but it writes with another value by name, like a path it sets (observer); each with
// the statements that named it. MongoDB counts a shard-key update only when the value changes
// (analyzeShardKey's percentageOfShardKeyUpdates, from the sampled pre/post-image diffs); the proxy
// sees no pre-image, so a replacement carrying every key field (a whole-document save) is taken to
// keep the value, as is one pinned by the full key (a pinned field it drops or rewrites is named by the
// observer); one that drops a key field changes it.
double keyUpdateShare(const ShapeState& s, const routing::ShardKeyPattern& key, bool pins_full_key) {
  if (s.count == 0) return 0;
  auto counted = [&](size_t i) { return i < s.modified_counts.size() ? static_cast<double>(s.modified_counts[i]) : 0.0; };
  double replaced = 0;  // statements that replace the document (or run a pipeline)
  for (size_t i = 0; i < s.modified.size(); ++i)
    if (s.modified[i].empty()) replaced += counted(i);
  double share = 0;
  for (const auto& kf : key.fields()) {
    const std::string_view top = std::string_view(kf.path).substr(0, kf.path.find('.'));
    double carried = 0, changed = 0;
    for (size_t i = 0; i < s.modified.size(); ++i) {
      const std::string& m = s.modified[i];
      if (!m.empty() && m[0] == '$') {
        if (std::string_view(m).substr(1) == top) carried += counted(i);
      } else if (!m.empty() && (m == kf.path || kf.path.rfind(m + ".", 0) == 0 || m.rfind(kf.path + ".", 0) == 0)) {
        changed = std::max(changed, counted(i));
      }
    }
    if (!pins_full_key) changed = std::max(changed, replaced - carried);  // replacements that drop the field
    share = std::max(share, changed / static_cast<double>(s.count));
  }
  return std::min(1.0, share);
}

ShapeJudgement judgeShape(uint64_t h, const ShapeState& s, const ShapeRouting& r, const AnalysisOptions& opt,
                          uint32_t N, const CandidateResult& c) {
  ShapeJudgement j;
  ShapeOutcome& o = j.o;
  o.id = h;  // the shape id /stats and /metrics show (common::shapeId)
  o.shape = s.shape;
  o.kind = s.kind;
  o.count = s.count;
  o.commands = s.commands;
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
  j.without_key_as_run = !isRead(s.kind) && single_as_run < 0.5;
  // An upsert needs the full key; another single-document write one shard or an exact _id.
  const uint64_t no_target = opt.lookup_rule && r.after_used ? r.after_no_target : r.no_target;
  o.refused_before_71 = single_doc && (s.upsert ? j.without_key_as_run : r.used == 0 || no_target * 2 > r.used);
  o.key_update_share = keyUpdateShare(s, c.pattern, o.single >= 0.5);
  o.key_update = o.key_update_share > 0;
  return j;
}

// The shapes' outcomes weighted by their counts, summed into the candidate's shares.
struct TrafficTotals {
  double reads = 0, writes = 0, rs = 0, rm = 0, rsc = 0, ws = 0, wm = 0, wsc = 0, rshards = 0, tshards = 0, tcount = 0;
  double single_wo = 0, multi_wo = 0, key_upd = 0, upserts_wo = 0, refused71 = 0, upserts = 0, scatter_after = 0;
  double multi_upserts_wo = 0, collation_assumed = 0, collation_broadcast = 0;

  void add(const ShapeState& s, const ShapeJudgement& j, const ShapeRouting& r, uint32_t N, CandidateResult& c) {
    const ShapeOutcome& o = j.o;
    const double used = static_cast<double>(r.used);
    double w = static_cast<double>(s.count);
    for (size_t i = 0; i < N; ++i) {
      double share = r.used ? (i < r.ranges.size() ? static_cast<double>(r.ranges[i]) : 0.0) / used : 1.0;
      (isRead(s.kind) ? c.range_reads : c.range_writes)[i] += w * share;
    }
    scatter_after += w * o.scatter_after_rewrite;
    if (r.used) collation_assumed += w * static_cast<double>(r.collation_assumed) / used;
    if (r.used) collation_broadcast += w * static_cast<double>(r.collation_broadcast) / used;
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
      key_upd += w * o.key_update_share;
      if (s.upsert) upserts += w;
      if (s.upsert && j.without_key_as_run) upserts_wo += w;
      if (s.upsert && s.multi && j.without_key_as_run) multi_upserts_wo += w;
      if (o.refused_before_71) refused71 += w;
    }
  }

  void writeShares(uint64_t other_shape_ops, CandidateResult& c) const {
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
      c.multi_upserts_without_key = multi_upserts_wo / writes;
      c.refused_before_71 = refused71 / writes;
    }
    if (upserts > 0) c.upserts_without_key_of_upserts = upserts_wo / upserts;
    double all = reads + writes + static_cast<double>(other_shape_ops);
    if (all > 0) {
      c.targeted = (reads + writes - rsc - wsc) / all;
      c.targeted_after_rewrite = (reads + writes - scatter_after) / all;
      c.single_overall = (rs + ws) / all;
      c.multi_overall = (rm + wm) / all;
      c.refused_share_of_all = refused71 / all;
      c.collation_assumed = collation_assumed / all;
      c.collation_broadcast = collation_broadcast / all;
    }
  }
};

// Reads and writes, per shape, from its sampled statements' routing; the shapes by count.
void routeShapes(const NamespaceState& st, const AnalysisOptions& opt, uint32_t N, const KeyFacts& k, CandidateResult& c) {
  c.range_reads.assign(N, 0);
  c.range_writes.assign(N, 0);
  TrafficTotals totals;
  static const ShapeRouting kNone;
  for (const auto& [h, s] : st.shapes) {
    auto found = k.shapes.find(h);
    const ShapeRouting& r = found == k.shapes.end() ? kNone : found->second;
    ShapeJudgement j = judgeShape(h, s, r, opt, N, c);
    totals.add(s, j, r, N, c);
    c.shapes.push_back(std::move(j.o));
  }
  std::sort(c.shapes.begin(), c.shapes.end(), [](const ShapeOutcome& a, const ShapeOutcome& b) {
    return a.count != b.count ? a.count > b.count : a.shape < b.shape;
  });
  std::sort(c.rescued_shapes.begin(), c.rescued_shapes.end());
  totals.writeShares(st.other_shape_ops, c);
  c.rewrite_in_force = opt.lookup_rule != nullptr;
}

// Why frequency fails, on what the cluster would do: a value holding a shard's fair share (its
// chunk cannot be split), a large prefix value whose suffix cannot spread it (monotonic or too
// few values), or a hot shard on the simulated cluster split on the full key. "" when it passes.
std::string frequencyReason(const AnalysisOptions& opt, uint32_t N, const CandidateResult& c) {
  const double fair = 1.0 / N;
  const bool enough = c.simulated_inserts >= 20ull * N;
  const bool full_key_cluster = c.split_on.rfind("full key", 0) == 0;
  const bool hot = full_key_cluster && !c.monotonic && enough &&
                   (c.max_min_ratio == 0 || c.max_min_ratio >= opt.hot_shard_ratio);
  if (c.top_share >= fair)
    return "one key value holds " + percentText(c.top_share) + " of inserts, at least a shard's fair share (" +
           percentText(fair) + "), in a chunk that cannot be split";
  if (c.pattern.size() > 1 && c.prefix_top_share >= fair && c.suffix_samples >= 8 &&
      (c.suffix_monotonic || c.suffix_distinct < 2.0 * N))
    return std::string("the largest ") + c.pattern.field(0).path + " value holds " + percentText(c.prefix_top_share) +
           " of inserts and its " + c.pattern.field(1).path + " suffix " +
           (c.suffix_monotonic ? "is monotonic, so its new documents keep landing in one chunk"
                               : "has too few values to split it across shards");
  if (hot)
    return "the simulated cluster split on the full key has a hot shard (" +
           (c.max_min_ratio == 0 ? std::string("a shard gets no inserts") : "max/min " + fixedText(c.max_min_ratio) + "x") +
           ", over seed 002's " + fixedText(opt.hot_shard_ratio) + "x)";
  return "";
}

// The properties' pass/fail from the figures above, and the warnings.
void judgeProperties(const AnalysisOptions& opt, uint32_t N, CandidateResult& c) {
  double min_card = static_cast<double>(opt.min_distinct_per_shard) * N;
  c.coarse_prefix = c.pattern.hasHashedField() && !c.hashed_prefix && c.prefix_cardinality <= static_cast<double>(N);
  if (c.cardinality < min_card) {
    c.pass_cardinality = false;
    c.failures.push_back("cardinality");
  }
  c.frequency_reason = frequencyReason(opt, N, c);
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

void evaluateCandidate(const NamespaceState& st, const AnalysisOptions& opt, CandidateResult& c, const KeyFacts& k) {
  const uint32_t N = opt.simulated_shards;
  c.hashed_prefix = c.pattern.field(0).hashed;
  const FieldState* lf = st.field(c.pattern.field(0).path);
  measureArrays(st, k, c);
  measureCardinality(lf, k, c);
  measureFrequency(opt, lf, k, c);
  measureMonotonicity(opt, lf, k, c);
  simulateInserts(opt, N, lf, k, c);
  routeShapes(st, opt, N, k, c);
  judgeProperties(opt, N, c);
}

}  // namespace shardscope::evaluation
